/*
 * remote.c — a `tir serve` as a device: a batch goes to the server through
 * lib/net's client (loaded at run time by lib/net/door.c, so that tir
 * starts without libcurl, and called through its table, tir_net()), which sends the batch text and whatever blobs
 * the server lacks, and brings the values back; its plan, profile and
 * spans come back with them.  The connection is its opener's (the CLI's).
 */
#include "device.h"
#include "../exec/json.h"

#include <stdlib.h>
#include <string.h>

struct remote {
	struct tir_device dev;
	struct tir_remote *r;          /* borrowed */
	const struct tir_net_api *net; /* r's opener had it: tir_net() */
	char *explain, *profile;       /* the server's, of the last run */
	struct tir_tensor *given;      /* by node id: values put here for this run */
	size_t ngiven;
};

static struct remote *remote_of(const struct tir_device *d)
{
	return (struct remote *)d;
}

static const char *remote_name(const struct tir_device *d)
{
	return remote_of(d)->net->remote_name(remote_of(d)->r);
}

static int remote_upload(struct tir_device *d, struct tir_exec *x, uint32_t id, struct tir_err *err)
{
	(void)d, (void)x, (void)id, (void)err;
	return 0; /* sent by hash in the next batch that reads it, if the server lacks it */
}

static int remote_run_on(struct tir_device *d, struct tir_exec *x, struct tir_node *const *targets,
			 size_t ntargets, const bool *stay, struct tir_tensor *out, struct tir_exec_stats *st,
			 struct tir_err *err)
{
	struct remote *m = remote_of(d);
	struct tir_remote_result res = {.stay = stay, .given = m->given, .ngiven = m->ngiven};
	res.values = calloc(ntargets + 1, sizeof *res.values);
	if (!res.values)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	free(m->explain);
	free(m->profile);
	m->explain = m->profile = NULL;
	int rc = m->net->remote_run(m->r, x, targets, ntargets, &res, err);
	if (!rc) {
		*st = res.stats;
		m->explain = res.explain;
		m->profile = res.profile;
		res.explain = res.profile = NULL;
	}
	for (size_t i = 0; i < ntargets; i++) {
		if (!rc && res.values[i].buf)
			rc = tir_tensor_as_dtype(&res.values[i], (enum tir_dtype)targets[i]->type.dtype, &out[i], err);
		tir_tensor_release(&res.values[i]);
	}
	free(res.values);
	free(res.explain);
	free(res.profile);
	return rc;
}

static int remote_put(struct tir_device *d, struct tir_exec *x, uint32_t id, const struct tir_tensor *v,
		      struct tir_err *err)
{
	/* sent by its hash in the next batch, if the server lacks it */
	struct remote *m = remote_of(d);
	return tir_values_put(&m->given, &m->ngiven, x, id, v, err);
}

static void remote_clear(struct tir_device *d)
{
	tir_values_clear(remote_of(d)->given, remote_of(d)->ngiven);
}

/* Server to server (docs/protocol.md, "Server to server"): `from` issues
 * a single-use capability for the value, d fetches it with that and
 * checks its hash.  The value the source holds under src_id's key is kept
 * on d under dst_id's. */
static int remote_take(struct tir_device *d, struct tir_device *from, struct tir_exec *x, uint32_t src_id,
		       uint32_t dst_id, struct tir_err *err)
{
	if (strcmp(from->ops->kind, "remote"))
		return -TIR_EUNSUPPORTED;
	struct tir_remote *src = remote_of(from)->r, *dst = remote_of(d)->r;
	const struct tir_net_api *net = remote_of(d)->net;
	char cap[65], blob[65]; /* 64 hex digits each */
	int rc = net->remote_export(src, x, src_id, cap, blob, err);
	if (!rc)
		rc = net->remote_import(dst, x, dst_id, src, cap, blob, err);
	explicit_bzero(cap, sizeof cap);
	return rc;
}

static const char *remote_group(const struct tir_device *d, int *rank)
{
	return remote_of(d)->net->remote_group(remote_of(d)->r, rank);
}

static int remote_all_reduce(struct tir_device *d, struct tir_exec *x, const char *key, const char *op,
			     const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err)
{
	return remote_of(d)->net->remote_all_reduce(remote_of(d)->r, x, key, op, ranks, n, src_id, dst_id, err);
}

static int remote_sync(struct tir_device *d, struct tir_exec *x, struct tir_err *err)
{
	return remote_of(d)->net->remote_sync(remote_of(d)->r, x, err);
}

static bool remote_holds(const struct tir_device *d, const struct tir_exec *x, uint32_t id)
{
	return remote_of(d)->net->remote_holds(remote_of(d)->r, x, id);
}

/* A batch of the one value: the session holds it, so nothing is computed. */
static int remote_fetch(struct tir_device *d, struct tir_exec *x, uint32_t id, struct tir_tensor *out,
			struct tir_err *err)
{
	if (!remote_holds(d, x, id))
		return tir_errf(err, TIR_EDATA, NULL, "remote %s holds no value of node %u", remote_name(d),
				(unsigned)id);
	struct tir_node *n = x->prog->nodes[id];
	struct tir_exec_stats st; /* a fetch is no part of the run's figures */
	return remote_run_on(d, x, &n, 1, NULL, out, &st, err);
}

static const char *remote_explain(struct tir_device *d, struct tir_exec *x)
{
	(void)x;
	return remote_of(d)->explain ? remote_of(d)->explain : "";
}

static char *remote_profile(const struct tir_device *d, const struct tir_exec *x)
{
	(void)x;
	return remote_of(d)->profile ? strdup(remote_of(d)->profile) : NULL;
}

/* The client's spans of d as lib/net noted them (tir_exec_trace_span):
 * on thread 1 the requests, on thread 2 the server's own timings.  In a
 * run where several devices ran batches (at once), remote:k's are on
 * threads 1 + 2k and 2 + 2k, its batches made on the first of them. */
static void remote_trace(const struct tir_device *d, const struct tir_exec *x, json_t *ev, double origin)
{
	int k = 0;
	while (k + 1 < x->ndev && x->dev[k + 1] != d)
		k++;
	bool several = (x->ran_mask & (x->ran_mask - 1)) != 0;
	char names[2][160];
	if (several) {
		snprintf(names[0], sizeof names[0], "remote:%d %s: requests", k, remote_name(d));
		snprintf(names[1], sizeof names[1], "remote:%d %s: the server (its own timings)", k, remote_name(d));
	} else {
		snprintf(names[0], sizeof names[0], "network: requests to the server");
		snprintf(names[1], sizeof names[1], "server (its own timings)");
	}
	for (int t = 0; t < 2; t++)
		json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
						    "pid", 1, "tid", 1 + 2 * k + t, "args", "name", names[t]));
	for (size_t i = 0; i < x->nnet; i++) {
		const struct tir_net_span *s = &x->net[i];
		if (s->who && s->who != remote_of(d)->r)
			continue;
		int tid = s->track == TIR_TRACK_CLIENT ? (several ? 1 + 2 * k : 0) : s->track + 2 * k;
		json_t *args = json_object();
		if (!strcmp(s->cat, "request")) {
			json_object_set_new(args, "status", json_integer(s->status));
			json_object_set_new(args, "bytes_up", json_integer((json_int_t)s->up));
			json_object_set_new(args, "bytes_down", json_integer((json_int_t)s->down));
		} else if (!strcmp(s->cat, "upload") || !strcmp(s->cat, "fetch")) {
			double sec = (s->t1_ms - s->t0_ms) / 1e3;
			uint64_t b = !strcmp(s->cat, "upload") ? s->up : s->down;
			if (s->blob[0])
				json_object_set_new(args, "blob", json_string(s->blob));
			json_object_set_new(args, "bytes", json_integer((json_int_t)b));
			json_object_set_new(args, "mib_per_s", json_real(sec > 0 ? b / 1048576.0 / sec : 0));
		} else if (!strcmp(s->cat, "batch")) {
			json_object_set_new(args, "blobs", json_integer(s->count));
		} else if (s->text) {
			json_object_set_new(args, "kernels", json_integer(s->count));
			json_object_set_new(args, "explain", json_string(s->text));
		}
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", s->name, "cat",
						    s->cat, "ph", "X", "ts", (s->t0_ms - origin) * 1e3, "dur",
						    (s->t1_ms - s->t0_ms) * 1e3, "pid", 1, "tid", tid, "args", args));
	}
}

static void remote_free(struct tir_device *d)
{
	struct remote *m = remote_of(d);
	if (!m)
		return;
	free(m->explain);
	free(m->profile);
	remote_clear(d);
	free(m->given);
	free(m);
}

static const struct tir_device_ops remote_ops = {
	.kind = "remote",
	.name = remote_name,
	.upload = remote_upload,
	.run_on = remote_run_on,
	.put = remote_put,
	.clear = remote_clear,
	.take = remote_take,
	.group = remote_group,
	.all_reduce = remote_all_reduce,
	.sync = remote_sync,
	.holds = remote_holds,
	.fetch = remote_fetch,
	.explain = remote_explain,
	.profile = remote_profile,
	.trace = remote_trace,
	.free = remote_free,
};

struct tir_device *tir_remote_device(struct tir_remote *r)
{
	struct remote *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->dev.ops = &remote_ops;
	m->r = r;
	/* loaded already: r was opened through it */
	if (!(m->net = tir_net(NULL))) {
		free(m);
		return NULL;
	}
	return &m->dev;
}
