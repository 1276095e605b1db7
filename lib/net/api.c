/*
 * api.c — libtir-net.so's one exported function: the table of lib/net's
 * entry points (tir.h's struct tir_net_api), stamped with the version and
 * size this build was compiled with, which tir_net() (door.c) checks
 * before it calls anything.
 */
#include "api.h"

static const struct tir_net_api table = {
	.version = TIR_NET_API_VERSION,
	.size = sizeof(struct tir_net_api),
	.remote_open = tir_remote_open,
	.remote_close = tir_remote_close,
	.remote_name = tir_remote_name,
	.remote_connect = tir_remote_connect,
	.remote_forget = tir_remote_forget,
	.remote_stats = tir_remote_stats,
	.remote_group_open = tir_remote_group_open,
	.serve = tir_serve,
	.remote_run = tir_remote_run,
	.remote_holds = tir_remote_holds,
	.remote_sync = tir_remote_sync,
	.remote_base_url = tir_remote_base_url,
	.remote_export = tir_remote_export,
	.remote_import = tir_remote_import,
	.remote_group = tir_remote_group,
	.remote_all_reduce = tir_remote_all_reduce,
};

const struct tir_net_api *tir_net_api(void)
{
	return &table;
}
