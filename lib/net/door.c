/*
 * door.c — the way into lib/net.  libcurl and libmicrohttpd (and the dozen
 * libraries they bring) would add their loading and relocation to every
 * start of tir if it were linked with them, so lib/net is a shared object, libtir-net.so,
 * loaded from next to the tir binary the first time a remote or the server
 * is used.  It exports one function, which returns one table (tir.h's
 * struct tir_net_api); this file loads it, checks the table's version and
 * size against this build's, and hands it out.  It names none of lib/net's
 * functions: the object calls libtir through libtir.so, as tir does, so
 * that the process holds one copy of libtir and its state.
 */
#include "../exec/exec.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>

#define NET_SO "libtir-net.so"

static struct {
	pthread_once_t once;
	const struct tir_net_api *given;     /* tir_net_use's, or NULL */
	const struct tir_net_api *api;       /* once loaded and checked */
	char why[PATH_MAX + 256];
} net = {.once = PTHREAD_ONCE_INIT};

/* api is the table this build was compiled against, else why says how it
 * differs; from: the file it came from, for the message. */
static bool check(const struct tir_net_api *api, const char *from)
{
	if (!api) {
		snprintf(net.why, sizeof net.why, "%s gave no table (%s returned NULL)", from, TIR_NET_API_ENTRY);
	} else if (api->version != TIR_NET_API_VERSION) {
		snprintf(net.why, sizeof net.why,
			 "%s is version %u of tir's network table, this tir needs version %u (it is of another "
			 "build of tir: use the libtir-net.so built with this tir)",
			 from, (unsigned)api->version, (unsigned)TIR_NET_API_VERSION);
	} else if (api->size != sizeof *api) {
		snprintf(net.why, sizeof net.why,
			 "%s has version %u of tir's network table, but its table is %u bytes where this tir's "
			 "is %zu (built from other sources: rebuild both)",
			 from, (unsigned)api->version, (unsigned)api->size, sizeof *api);
	} else {
		return true;
	}
	return false;
}

/* TIR_NET_LIB names the object; else it sits next to the binary. */
static void open_net(void)
{
	if (net.given) {
		if (check(net.given, "the lib/net linked in"))
			net.api = net.given;
		return;
	}
	char path[PATH_MAX];
	if (!tir_machine_lib_path("TIR_NET_LIB", NET_SO, path, sizeof path)) {
		snprintf(net.why, sizeof net.why, "cannot find the tir binary to load %s", NET_SO);
		return;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(net.why, sizeof net.why, "the network part of tir will not load: %s", dlerror());
		return;
	}
	const struct tir_net_api *(*entry)(void);
	*(void **)&entry = dlsym(h, TIR_NET_API_ENTRY);
	if (!entry) {
		snprintf(net.why, sizeof net.why, "%s is not tir's network part (it has no %s)", path,
			 TIR_NET_API_ENTRY);
		dlclose(h);
		return;
	}
	if (check(entry(), path))
		net.api = entry();
	else
		dlclose(h);
}

const struct tir_net_api *tir_net(struct tir_err *err)
{
	pthread_once(&net.once, open_net);
	if (!net.api)
		tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s", net.why);
	return net.api;
}

int tir_net_use(const struct tir_net_api *api, struct tir_err *err)
{
	if (net.api || net.why[0])
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "tir_net_use: tir_net has answered already");
	net.given = api;
	return tir_net(err) ? 0 : -TIR_EUNSUPPORTED;
}
