/*
 * door.c — the way into lib/net.  libcurl and libmicrohttpd (and the dozen
 * libraries they bring) would add about 3.5 ms to every start of tir if it
 * were linked with them, so lib/net is a shared object, libtir-net.so,
 * loaded from next to the tir binary the first time a remote or the server
 * is used.  These functions have the names lib/net's do; tir exports its
 * own symbols (-rdynamic) for the shared object to call back into, and the
 * object binds its own names to itself (-Bsymbolic).  Programs that link
 * lib/net in directly (the tests, the benchmarks) never pull this file in.
 */
#include "../engine/engine.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NET_SO "libtir-net.so"

static struct {
	pthread_once_t once;
	void *h;
	char why[PATH_MAX + 256];
	struct tir_remote *(*remote_open)(const char *, const char *, struct tir_err *);
	void (*remote_close)(struct tir_remote *);
	const char *(*remote_name)(const struct tir_remote *);
	const struct tir_remote_stats *(*remote_stats)(const struct tir_remote *);
	int (*remote_run)(struct tir_remote *, struct tir_exec *, struct tir_node *const *, size_t,
			  struct tir_remote_result *, struct tir_err *);
	int (*serve)(const struct tir_serve_opts *, volatile sig_atomic_t *, struct tir_err *);
	int (*remote_connect)(struct tir_remote *, struct tir_err *);
	void (*remote_forget)(struct tir_remote *);
	bool (*remote_holds)(const struct tir_remote *, const struct tir_exec *, uint32_t);
	int (*remote_sync)(struct tir_remote *, const struct tir_exec *, struct tir_err *);
	const char *(*remote_base_url)(const struct tir_remote *);
	int (*remote_export)(struct tir_remote *, const struct tir_exec *, uint32_t, char *, char *, struct tir_err *);
	int (*remote_import)(struct tir_remote *, const struct tir_exec *, uint32_t, const struct tir_remote *,
			     const char *, const char *, struct tir_err *);
	int (*remote_group_open)(const char *, const char *, struct tir_remote **, int, struct tir_err *);
	const char *(*remote_group)(const struct tir_remote *, int *);
	int (*remote_all_reduce)(struct tir_remote *, struct tir_exec *, const char *, const char *, const int *,
				 int, uint32_t, uint32_t, struct tir_err *);
} net = {.once = PTHREAD_ONCE_INIT};

/* TIR_NET_LIB names the object; else it sits next to the binary. */
static void open_net(void)
{
	char path[PATH_MAX];
	if (!tir_machine_lib_path("TIR_NET_LIB", NET_SO, path, sizeof path)) {
		snprintf(net.why, sizeof net.why, "cannot find the tir binary to load %s", NET_SO);
		return;
	}
	net.h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!net.h) {
		snprintf(net.why, sizeof net.why, "the network part of tir will not load: %s", dlerror());
		return;
	}
	*(void **)&net.remote_open = dlsym(net.h, "tir_remote_open");
	*(void **)&net.remote_close = dlsym(net.h, "tir_remote_close");
	*(void **)&net.remote_name = dlsym(net.h, "tir_remote_name");
	*(void **)&net.remote_stats = dlsym(net.h, "tir_remote_stats");
	*(void **)&net.remote_run = dlsym(net.h, "tir_remote_run");
	*(void **)&net.serve = dlsym(net.h, "tir_serve");
	*(void **)&net.remote_connect = dlsym(net.h, "tir_remote_connect");
	*(void **)&net.remote_forget = dlsym(net.h, "tir_remote_forget");
	*(void **)&net.remote_holds = dlsym(net.h, "tir_remote_holds");
	*(void **)&net.remote_sync = dlsym(net.h, "tir_remote_sync");
	*(void **)&net.remote_base_url = dlsym(net.h, "tir_remote_base_url");
	*(void **)&net.remote_export = dlsym(net.h, "tir_remote_export");
	*(void **)&net.remote_import = dlsym(net.h, "tir_remote_import");
	*(void **)&net.remote_group_open = dlsym(net.h, "tir_remote_group_open");
	*(void **)&net.remote_group = dlsym(net.h, "tir_remote_group");
	*(void **)&net.remote_all_reduce = dlsym(net.h, "tir_remote_all_reduce");
	if (!net.remote_open || !net.remote_close || !net.remote_name || !net.remote_stats ||
	    !net.remote_run || !net.serve || !net.remote_connect || !net.remote_forget ||
	    !net.remote_holds || !net.remote_sync || !net.remote_base_url || !net.remote_export ||
	    !net.remote_import || !net.remote_group_open || !net.remote_group || !net.remote_all_reduce) {
		snprintf(net.why, sizeof net.why, "%s is not the one this tir was built with", path);
		net.remote_open = NULL;
		net.serve = NULL;
	}
}

static bool loaded(struct tir_err *err)
{
	pthread_once(&net.once, open_net);
	if (net.remote_open)
		return true;
	tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s", net.why);
	return false;
}

struct tir_remote *tir_remote_open(const char *hostport, const char *token, struct tir_err *err)
{
	return loaded(err) ? net.remote_open(hostport, token, err) : NULL;
}

/* A remote exists only once the object is loaded. */
void tir_remote_close(struct tir_remote *r)
{
	if (r)
		net.remote_close(r);
}

const char *tir_remote_name(const struct tir_remote *r)
{
	return net.remote_name(r);
}

const struct tir_remote_stats *tir_remote_stats(const struct tir_remote *r)
{
	return net.remote_stats(r);
}

int tir_remote_run(struct tir_remote *r, struct tir_exec *x, struct tir_node *const *targets,
		   size_t ntargets, struct tir_remote_result *res, struct tir_err *err)
{
	return net.remote_run(r, x, targets, ntargets, res, err);
}

int tir_remote_connect(struct tir_remote *r, struct tir_err *err)
{
	return net.remote_connect(r, err);
}

void tir_remote_forget(struct tir_remote *r)
{
	net.remote_forget(r);
}

bool tir_remote_holds(const struct tir_remote *r, const struct tir_exec *x, uint32_t id)
{
	return net.remote_holds(r, x, id);
}

int tir_remote_sync(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err)
{
	return net.remote_sync(r, x, err);
}

const char *tir_remote_base_url(const struct tir_remote *r)
{
	return net.remote_base_url(r);
}

int tir_remote_export(struct tir_remote *r, const struct tir_exec *x, uint32_t id, char cap[65], char blob[65],
		      struct tir_err *err)
{
	return net.remote_export(r, x, id, cap, blob, err);
}

int tir_remote_import(struct tir_remote *r, const struct tir_exec *x, uint32_t id, const struct tir_remote *from,
		      const char *cap, const char *blob, struct tir_err *err)
{
	return net.remote_import(r, x, id, from, cap, blob, err);
}

const char *tir_remote_group(const struct tir_remote *r, int *rank)
{
	return net.remote_group(r, rank);
}

int tir_remote_all_reduce(struct tir_remote *r, struct tir_exec *x, const char *key, const char *op,
			  const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err)
{
	return net.remote_all_reduce(r, x, key, op, ranks, n, src_id, dst_id, err);
}

int tir_serve(const struct tir_serve_opts *o, volatile sig_atomic_t *stop, struct tir_err *err)
{
	return loaded(err) ? net.serve(o, stop, err) : -err->code;
}

int tir_remote_group_open(const char *hostport, const char *token, struct tir_remote **out, int max,
			  struct tir_err *err)
{
	return loaded(err) ? net.remote_group_open(hostport, token, out, max, err) : -err->code;
}
