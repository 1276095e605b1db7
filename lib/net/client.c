/* client.c — placeholder until the client lands (issue 6). */
#include "net.h"
#include <stdlib.h>

struct tir_remote {
	int unused;
};

struct tir_remote *tir_remote_open(const char *hostport, const char *token, struct tir_err *err)
{
	tir_errf(err, TIR_EUNSUPPORTED, NULL, "--remote is not supported yet");
	return NULL;
}

void tir_remote_close(struct tir_remote *r)
{
	free(r);
}

const char *tir_remote_name(const struct tir_remote *r)
{
	return "";
}

const struct tir_remote_stats *tir_remote_stats(const struct tir_remote *r)
{
	static const struct tir_remote_stats none;
	return &none;
}

int tir_remote_run(struct tir_remote *r, struct tir_exec *x, struct tir_node *const *targets,
		   size_t ntargets, struct tir_remote_result *res, struct tir_err *err)
{
	return tir_errf(err, TIR_EUNSUPPORTED, NULL, "--remote is not supported yet");
}
