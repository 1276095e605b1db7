/*
 * runq.c — POST /v1/sessions/ID/run: the request read and checked on a
 * parse thread (its JSON; the batch text parsed once per graph, at most
 * --max-ops ops, each charged to --max-memory as it is made; the inputs
 * found in the session and the blob store, a 409 for what is missing),
 * then queued and run by a compute thread, which answers it and resumes
 * its connection (suspended from the moment its body is in, so that MHD's
 * threads go on with everything else: /healthz answers while texts of
 * hundreds of thousands of ops are parsed).
 *
 * The schedule (serve.h's struct runq): each session's batches in the
 * order they came, one at a time; batches of different sessions at once,
 * each on its own compute thread, so that nobody waits behind another's
 * long batch for more than the share of the CPU the long one takes.  A
 * graph (its exec) serves one batch at a time.  A small batch (its bound
 * within an eighth of --max-memory) starts beside others while the small
 * ones beside hold no more than that eighth and its bound is free; another
 * starts beside others only when its bound fits in half of what
 * --max-memory has left, that eighth set aside; one that does not waits
 * until it can run alone.  So no batch's planned bound, however crafted,
 * keeps a small batch waiting.  A tenant runs at most `batches=` at once,
 * and with several tenants the bounds of its batches running, beside what
 * it holds, within its `memory=` share (a bound over it counting as all
 * of it): a value over the share is refused before anything runs, a bound
 * that does not fit beside the tenant's others waits for them.
 *
 * MHD does not watch a suspended connection, so this does: a batch whose
 * client has gone (its socket hung up) is not run when its turn comes,
 * and a running one is stopped, inside its kernel if need be (the exec's
 * interrupt flag reaches the pool's tasks), when its client hangs up or
 * when it passes --max-batch-seconds.
 */
#include "serve.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef POLLRDHUP
#define POLLRDHUP 0x2000                /* Linux's, outside _GNU_SOURCE */
#endif

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static int refuse_load(void *ud, const char *path, const char *name, enum tir_dtype *dtype,
		       int *rank, int64_t *shape, struct tir_err *err)
{
	return tir_errf(err, TIR_EUNSUPPORTED, NULL,
			"load: a server reads no files; the client sends the data");
}

/* The error of a program's text: line, col and the rendering of tir run. */
static json_t *err_json(const struct tir_err *e, const char *rendered)
{
	json_t *x = json_object();
	if (e->loc.src) {
		json_object_set_new(x, "line", json_integer(e->loc.line));
		json_object_set_new(x, "col", json_integer(e->loc.col));
	}
	if (rendered)
		json_object_set_new(x, "rendered", json_string(rendered));
	return x;
}

/* ---- what a tenant holds of --max-memory ---- */

/* What a parsed node costs, its plan included (a text of 100,000 adds,
 * parsed, planned and run, held 110 MB), and a literal's data 1.5 times:
 * charged as the parse makes the nodes, CHARGE_NODES at a time. */
#define NODE_COST 1536
#define CHARGE_NODES 256

uint64_t tenant_held(struct server *s, int t)
{
	return atomic_load(&s->tenants[t].mem) + graph_store_tenant_bytes(s->graphs, t) +
	       session_store_tenant_bytes(s->sessions, t);
}

/* Take `more` of --max-memory for tenant t, within its share; false when
 * either has not that much left (nothing taken). */
static bool charge_once(struct server *s, int t, uint64_t more)
{
	struct tenant *tn = &s->tenants[t];
	if (tn->max_memory && (more > tn->max_memory || tenant_held(s, t) > tn->max_memory - more))
		return false;
	if (!tir_mem_charge(more))
		return false;
	atomic_fetch_add(&tn->mem, more);
	return true;
}

/* (the cached graphs no batch uses are let go first, the tenant's for its
 * share, anyone's for the budget) */
static bool charge_tenant(struct server *s, int t, uint64_t more)
{
	return charge_once(s, t, more) || (graph_store_trim(s->graphs, t) && charge_once(s, t, more)) ||
	       (graph_store_trim(s->graphs, -1) && charge_once(s, t, more));
}

/* Whether tenant t holds at most `room` of its share: the cached graphs
 * of t's that no batch uses are dropped first when it does not (they are
 * a cache, never a reason to refuse t: kept, they held t's crafted batch
 * at 503 for as long as t's idle 30,000-add graph stayed cached). */
static bool tenant_within(struct server *s, int t, uint64_t room)
{
	return tenant_held(s, t) <= room || (graph_store_trim(s->graphs, t) && tenant_held(s, t) <= room);
}

static void uncharge_tenant(struct server *s, int t, uint64_t n)
{
	atomic_fetch_sub(&s->tenants[t].mem, n);
	tir_mem_uncharge(n);
}

bool req_charge(struct server *s, struct req *r, uint64_t bytes)
{
	if (bytes <= r->charged)
		return true;
	if (!charge_tenant(s, r->tenant, bytes - r->charged))
		return false;
	r->charged = bytes;
	return true;
}

void req_uncharge(struct server *s, struct req *r)
{
	uncharge_tenant(s, r->tenant, r->charged);
	r->charged = 0;
}

enum MHD_Result reply_no_memory(struct server *s, struct MHD_Connection *c, struct req *r,
				uint64_t bytes, const char *what)
{
	const struct tenant *tn = &s->tenants[r->tenant];
	uint64_t share = tn->max_memory, held = tenant_held(s, r->tenant);
	char a[32], b[32], d[32];
	const char *whose = s->ntenants > 1 ? "your share" : "this server's budget";
	const char *flag = s->ntenants > 1 ? "memory= in --tokens" : "--max-memory";
	json_t *extra = json_pack("{sI sI sI}", "needs", (json_int_t)bytes, "share", (json_int_t)share, "held",
				  (json_int_t)held);
	if (share && bytes > share)
		return reply_error(c, r, 413, "memory", extra, "%s needs %s, over %s of %s (%s)", what,
				   tir_bytes_str(bytes, a), whose, tir_bytes_str(share, d), flag);
	r->retry_after = "1";
	if (s->ntenants > 1)
		return reply_error(c, r, 503, "busy", extra,
				   "%s needs %s; you hold %s of your share of %s (%s), and the server has no "
				   "room for it now: try again shortly", what, tir_bytes_str(bytes, a),
				   tir_bytes_str(held, b), tir_bytes_str(share, d), flag);
	return reply_error(c, r, 503, "busy", extra,
			   "%s needs %s, and the memory budget (--max-memory) has no room for it now: try "
			   "again shortly", what, tir_bytes_str(bytes, a));
}

/* The parser's pass over each node, wrapped (struct tir_pass): each node
 * counted against --max-ops and charged to --max-memory and its tenant's
 * share as it is made, before the placement pass sees it. */
struct counter {
	struct tir_pass inner;
	struct server *s;
	int tenant;
	uint64_t nodes, max, charged, data;
	uint64_t cap;                  /* the graph cache's size: no graph is kept past it */
	enum { COUNT_OK, COUNT_OPS, COUNT_MEMORY, COUNT_CACHE } over;
};

static int count_node(void *ud, struct tir_program *p, struct tir_node *n, struct tir_err *err)
{
	struct counter *k = ud;
	if (k->over) /* one error: the rest of the text is not worth reading */
		return tir_errf(err, TIR_EBUDGET, &n->loc, "the batch was refused");
	if (++k->nodes > k->max) {
		k->over = COUNT_OPS;
		return tir_errf(err, TIR_EBUDGET, &n->loc,
				"the batch makes more than %llu ops (its loops and calls expanded), this server's "
				"limit (--max-ops)", (unsigned long long)k->max);
	}
	if (n->op == TIR_OP_CONST && n->data) /* (a literal, checked: its type is its data's) */
		k->data += (uint64_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype) * 3 / 2;
	if (k->nodes * NODE_COST + k->data > k->charged) {
		/* node by node at first (a small text under a small budget),
		 * then CHARGE_NODES at a time */
		uint64_t step = (k->nodes < CHARGE_NODES ? k->nodes : CHARGE_NODES) * NODE_COST;
		if (step < k->nodes * NODE_COST + k->data - k->charged)
			step = k->nodes * NODE_COST + k->data - k->charged;
		if (k->charged + step > k->cap) {
			k->over = COUNT_CACHE;
			return tir_errf(err, TIR_EBUDGET, &n->loc, "the batch's graph is over the graph cache");
		}
		if (!charge_tenant(k->s, k->tenant, step)) {
			k->over = COUNT_MEMORY;
			return tir_errf(err, TIR_EBUDGET, &n->loc, "no memory for the batch's graph");
		}
		k->charged += step;
	}
	return k->inner.node ? k->inner.node(k->inner.ud, p, n, err) : 0;
}

static void count_cut(void *ud, size_t nnodes)
{
	struct counter *k = ud;
	if (k->inner.cut)
		k->inner.cut(k->inner.ud, nnodes);
}

static bool count_made(const void *ud, const struct tir_node *n)
{
	const struct counter *k = ud;
	return k->inner.made && k->inner.made(k->inner.ud, n);
}

static void count_note(const void *ud, const struct tir_node *n, struct tir_str *out)
{
	const struct counter *k = ud;
	if (k->inner.note)
		k->inner.note(k->inner.ud, n, out);
}

static void count_where(const void *ud, const struct tir_node *n, char buf[24])
{
	const struct counter *k = ud;
	if (k->inner.where)
		k->inner.where(k->inner.ud, n, buf);
	else
		buf[0] = 0;
}

static void count_free(void *ud)
{
	struct counter *k = ud;
	if (k->inner.free)
		k->inner.free(k->inner.ud);
	free(k);
}

/* Wrap p's pass in a counter (owned by p); NULL when out of memory. */
static struct counter *count_wrap(struct server *s, int tenant, struct tir_program *p)
{
	struct counter *k = calloc(1, sizeof *k);
	if (!k)
		return NULL;
	k->inner = p->pass;
	k->s = s;
	k->tenant = tenant;
	k->max = (uint64_t)s->o.max_ops;
	k->cap = graph_store_cap(s->graphs);
	p->pass = (struct tir_pass){k,
				    count_node,
				    k->inner.cut ? count_cut : NULL,
				    k->inner.made ? count_made : NULL,
				    k->inner.note ? count_note : NULL,
				    k->inner.where ? count_where : NULL,
				    count_free};
	return k;
}

/* What one run request asks, read from its JSON. */
struct batch {
	const char *graph;
	const char *text;
	size_t text_len;
	size_t nin;
	json_t *inputs;                /* the request's object (borrowed), for lookups by name */
	const char **in_name;          /* the batch's input names */
	const char **in_blob;          /* a blob SHA, or NULL */
	const char **in_key;           /* or a session value key */
	size_t nkeep;
	const char **keep_name, **keep_key;
	size_t ndrop;
	const char **drop;
	bool fuse, explain, profile;
};

static void batch_free(struct batch *b)
{
	free(b->in_name);
	free(b->in_blob);
	free(b->in_key);
	free(b->keep_name);
	free(b->keep_key);
	free(b->drop);
}

/* Read the request into b (strings borrowed from doc); 0, or an error
 * message in msg and the status to answer. */
static int read_batch(json_t *doc, struct batch *b, char *msg, size_t n)
{
	const char *k;
	json_t *v;
	if (!json_is_object(doc))
		return snprintf(msg, n, "body: not a JSON object"), 400;
	b->fuse = true;
	json_object_foreach(doc, k, v) {
		bool isbool = json_is_boolean(v);
		if (!strcmp(k, "graph")) {
			if (!json_is_string(v) || !tir_sha_valid(json_string_value(v)))
				return snprintf(msg, n, "graph: not 64 lowercase hex digits (a SHA-256)"), 400;
			b->graph = json_string_value(v);
		} else if (!strcmp(k, "text")) {
			if (!json_is_string(v))
				return snprintf(msg, n, "text: not a string"), 400;
			b->text = json_string_value(v);
			b->text_len = json_string_length(v);
			if (b->text_len > (size_t)TIR_MAX_SOURCE)
				return snprintf(msg, n, "text: %zu bytes is over the limit of %lld", b->text_len,
						(long long)TIR_MAX_SOURCE), 413;
		} else if (!strcmp(k, "inputs")) {
			if (!json_is_object(v))
				return snprintf(msg, n, "inputs: not an object"), 400;
			size_t m = json_object_size(v);
			b->inputs = v;
			b->in_name = calloc(m + 1, sizeof *b->in_name);
			b->in_blob = calloc(m + 1, sizeof *b->in_blob);
			b->in_key = calloc(m + 1, sizeof *b->in_key);
			if (!b->in_name || !b->in_blob || !b->in_key)
				return snprintf(msg, n, "out of memory"), 500;
			const char *name;
			json_t *bind;
			json_object_foreach(v, name, bind) {
				json_t *blob = json_object_get(bind, "blob"), *val = json_object_get(bind, "value");
				if (!json_is_object(bind) || json_object_size(bind) != 1 || (!blob && !val))
					return snprintf(msg, n, "inputs.%.64s: not {\"blob\": SHA256} or {\"value\": KEY}",
							name), 400;
				if (blob && (!json_is_string(blob) || !tir_sha_valid(json_string_value(blob))))
					return snprintf(msg, n, "inputs.%.64s.blob: not 64 lowercase hex digits", name), 400;
				if (val && (!json_is_string(val) || !session_key_valid(json_string_value(val))))
					return snprintf(msg, n, "inputs.%.64s.value: not a key (1-64 of A-Z a-z 0-9 _ . -)",
							name), 400;
				b->in_name[b->nin] = name;
				b->in_blob[b->nin] = blob ? json_string_value(blob) : NULL;
				b->in_key[b->nin++] = val ? json_string_value(val) : NULL;
			}
		} else if (!strcmp(k, "keep")) {
			if (!json_is_object(v))
				return snprintf(msg, n, "keep: not an object"), 400;
			size_t m = json_object_size(v);
			b->keep_name = calloc(m + 1, sizeof *b->keep_name);
			b->keep_key = calloc(m + 1, sizeof *b->keep_key);
			if (!b->keep_name || !b->keep_key)
				return snprintf(msg, n, "out of memory"), 500;
			const char *name;
			json_t *key;
			json_object_foreach(v, name, key) {
				if (!json_is_string(key) || !session_key_valid(json_string_value(key)))
					return snprintf(msg, n, "keep.%.64s: not a key (1-64 of A-Z a-z 0-9 _ . -)", name), 400;
				b->keep_name[b->nkeep] = name;
				b->keep_key[b->nkeep++] = json_string_value(key);
			}
		} else if (!strcmp(k, "drop")) {
			if (!json_is_array(v))
				return snprintf(msg, n, "drop: not an array"), 400;
			b->drop = calloc(json_array_size(v) + 1, sizeof *b->drop);
			if (!b->drop)
				return snprintf(msg, n, "out of memory"), 500;
			size_t i;
			json_t *key;
			json_array_foreach(v, i, key) {
				if (!json_is_string(key) || !session_key_valid(json_string_value(key)))
					return snprintf(msg, n, "drop[%zu]: not a key (1-64 of A-Z a-z 0-9 _ . -)", i), 400;
				b->drop[b->ndrop++] = json_string_value(key);
			}
		} else if (!strcmp(k, "fuse") || !strcmp(k, "explain") || !strcmp(k, "profile")) {
			if (!isbool)
				return snprintf(msg, n, "%s: not true or false", k), 400;
			bool on = json_is_true(v);
			*(k[0] == 'f' ? &b->fuse : k[0] == 'e' ? &b->explain : &b->profile) = on;
		} else {
			return snprintf(msg, n, "body: unknown field '%.64s'", k), 400;
		}
	}
	if (!b->graph)
		return snprintf(msg, n, "graph: missing (the SHA-256 of the batch text)"), 400;
	return 0;
}

/* The results body (header, metadata, one frame per value) as an
 * answer that MHD sends from where the bytes are: the values' data
 * straight from their tensors (references held until the answer is done
 * with), the rest from one small buffer.  No copy of the body is made. */
struct results_out {
	unsigned char *small;          /* the header, the metadata, the frames' headers */
	struct tir_tensor *vals;
	size_t n;
};

static void results_out_free(void *cls)
{
	struct results_out *o = cls;
	for (size_t i = 0; i < o->n; i++)
		tir_tensor_release(&o->vals[i]);
	free(o->vals);
	free(o->small);
	free(o);
}

static struct MHD_Response *results_response(const struct tir_exec *x, const char *meta, size_t *len)
{
	static const unsigned char zero[8];
	size_t nres = tir_exec_nresults(x), mlen = strlen(meta);
	size_t nsmall = TIR_RESULTS_HEAD + pad8(mlen) + nres * TIR_FRAME_HEAD_MAX;
	struct results_out *o = calloc(1, sizeof *o);
	struct MHD_IoVec *iov = calloc(1 + 3 * nres, sizeof *iov);
	if (o) {
		o->small = malloc(nsmall);
		o->vals = calloc(nres + 1, sizeof *o->vals);
	}
	if (!o || !iov || !o->small || !o->vals) {
		free(iov);
		if (o)
			results_out_free(o);
		return NULL;
	}
	unsigned char *p = o->small;
	memcpy(p, TIR_RESULTS_MAGIC, 4);
	tir_put_u32(p + 4, TIR_PROTOCOL);
	tir_put_u32(p + 8, (uint32_t)nres);
	tir_put_u32(p + 12, (uint32_t)mlen);
	memcpy(p + TIR_RESULTS_HEAD, meta, mlen);
	memset(p + TIR_RESULTS_HEAD + mlen, 0, pad8(mlen) - mlen);
	size_t used = TIR_RESULTS_HEAD + pad8(mlen), niov = 0, total = used;
	iov[niov++] = (struct MHD_IoVec){p, used};
	bool ok = true;
	for (size_t i = 0; i < nres && ok; i++) {
		const struct tir_tensor *t = tir_exec_result(x, i);
		struct tir_err e = {0};
		if (tir_tensor_is_contiguous(t))
			tir_tensor_ref(&o->vals[i], t);
		else
			ok = !tir_tensor_convert(t, t->dtype, &o->vals[i], &e);
		o->n = i + 1;
		if (!ok)
			break;
		const struct tir_tensor *v = &o->vals[i];
		size_t data = (size_t)tir_tensor_numel(v) * tir_dtype_size(v->dtype);
		unsigned char *h = p + used;
		memcpy(h, TIR_FRAME_MAGIC, 4);
		h[4] = (unsigned char)v->dtype;
		h[5] = (unsigned char)v->rank;
		h[6] = h[7] = 0;
		tir_put_u64(h + 8, data);
		for (int d = 0; d < v->rank; d++)
			tir_put_u64(h + 16 + 8 * d, (uint64_t)v->shape[d]);
		size_t hl = 16 + 8 * (size_t)v->rank;
		used += hl;
		iov[niov++] = (struct MHD_IoVec){h, hl};
		if (data)
			iov[niov++] = (struct MHD_IoVec){tir_tensor_data(v), data};
		if (pad8(data) > data)
			iov[niov++] = (struct MHD_IoVec){zero, pad8(data) - data};
		total += hl + pad8(data);
	}
	struct MHD_Response *resp =
		ok ? MHD_create_response_from_iovec(iov, (unsigned int)niov, results_out_free, o) : NULL;
	free(iov); /* MHD keeps a copy of the array */
	if (!resp)
		results_out_free(o);
	*len = total;
	return resp;
}

/* Everything a run holds until it answers. */
struct run {
	struct batch b;
	json_t *doc;
	struct session *ss;
	struct graph *g;
	struct tir_tensor *vals;       /* by input binding */
	struct tir_tensor *kept;       /* by keep entry */
};

/* A batch, from its queueing to its answer. */
struct job {
	struct job *next;              /* in the queue, then among the running */
	struct MHD_Connection *c;
	struct req *r;
	struct run u;                  /* a task's: only u.ss */
	runq_task_fn task;             /* a task (an export, an import), or NULL: a batch */
	void (*task_done)(void *);
	void *task_arg;
	bool graph_cached;
	int fd;                        /* the client's socket (MHD's; only polled) */
	uint64_t bound;                /* the most its values can hold (batch_bound) */
	uint64_t largest;              /* its largest value (batch_bound's) */
	uint64_t share_bound;          /* what it holds of its tenant's bound: its own, at most the share */
	bool beside;                   /* started beside others, its bound counted in q.beside */
	bool small;                    /* ... in q.small instead: a small batch */
	bool overlapped;               /* another batch ran during it */
	double deadline;               /* tir_now_ms() past which it is stopped (0: none) */
	/* set by the main thread's watch (under q.mu), read by the exec */
	volatile sig_atomic_t cancel;
	enum { GO_ON, CLIENT_GONE, TIME_UP } why;
};

/* The most a batch's values can hold at once: every node's value, as if
 * none were freed, fused or a view (inputs are held already), and the
 * largest of them.  A bound, not the peak: it only decides which batches
 * start beside others, the server's and (several tenants) its tenant's. */
static uint64_t batch_bound(const struct tir_program *p, uint64_t *largest, const struct tir_node **at)
{
	uint64_t sum = 0;
	*largest = 0;
	*at = NULL;
	for (size_t i = 0; i < p->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (n->op == TIR_OP_INPUT)
			continue;
		uint64_t b = (uint64_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
		sum = b > UINT64_MAX - sum ? UINT64_MAX : sum + b;
		if (b >= *largest) { /* (a tie: the later, where a peak is reached) */
			*largest = b;
			*at = n;
		}
	}
	return sum;
}

/* Whether the client at the other end of fd has hung up (or shut down its
 * sending side: an HTTP client waiting for its answer does not). */
static bool hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void run_free(struct server *s, struct run *u)
{
	for (size_t i = 0; u->vals && i < u->b.nin; i++)
		tir_tensor_release(&u->vals[i]);
	for (size_t i = 0; u->kept && i < u->b.nkeep; i++)
		tir_tensor_release(&u->kept[i]);
	free(u->vals);
	free(u->kept);
	graph_unref(s->graphs, u->g);
	session_unref(s->sessions, u->ss);
	batch_free(&u->b);
	json_decref(u->doc);
}

/* The answer to a client that went away, for MHD to close the connection
 * with (a handler that answers nothing makes MHD log an "internal error"):
 * 499, nginx's "client closed request", with no body. */
static enum MHD_Result reply_gone(struct MHD_Connection *c, struct req *r)
{
	return reply(c, r, 499, NULL, NULL, 0);
}

/* A batch over the budget on a server of several tenants: the tenant's
 * own figures (its share, what it holds, the batch's planned peak), never
 * what others hold nor what the server has left.  413 when the peak is
 * over its share (it never runs), else 503: later. */
static enum MHD_Result tenant_budget_error(struct server *s, struct MHD_Connection *c, struct req *r,
					   struct tir_exec *x, struct tir_err *err)
{
	const struct tenant *tn = &s->tenants[r->tenant];
	uint64_t peak = tir_exec_stats(x)->plan_peak_bytes, held = tenant_held(s, r->tenant);
	char a[32], b[32], d[32];
	bool never = peak && tn->max_memory && peak > tn->max_memory;
	if (never)
		snprintf(err->msg, sizeof err->msg,
			 "the batch would hold %s at its peak, over your share of %s of this server's memory "
			 "(memory= in --tokens)", tir_bytes_str(peak, a), tir_bytes_str(tn->max_memory, d));
	else
		snprintf(err->msg, sizeof err->msg,
			 "the batch would hold %s at its peak; you hold %s of your share of %s (memory= in "
			 "--tokens), and the server has no room for it now: try again shortly",
			 tir_bytes_str(peak, a), tir_bytes_str(held, b), tir_bytes_str(tn->max_memory, d));
	char *rend = tir_err_render(err);
	json_t *extra = err_json(err, rend);
	free(rend);
	json_object_set_new(extra, "peak", json_integer((json_int_t)peak));
	json_object_set_new(extra, "share", json_integer((json_int_t)tn->max_memory));
	json_object_set_new(extra, "budget", json_integer((json_int_t)tn->max_memory)); /* its own */
	json_object_set_new(extra, "held", json_integer((json_int_t)held));
	if (never)
		return reply_error(c, r, 413, "memory", extra, "%s", err->msg);
	r->retry_after = "1";
	return reply_error(c, r, 503, "busy", extra, "%s", err->msg);
}

/* A batch whose planned bound does not fit its tenant's share beside what
 * the tenant holds (its bodies, graphs and kept values, and the bounds of
 * its other batches running): 503, later, with the tenant's own figures
 * only. */
static enum MHD_Result reply_over_share(struct server *s, struct MHD_Connection *c, struct req *r,
					uint64_t bound, uint64_t held)
{
	uint64_t share = s->tenants[r->tenant].max_memory;
	char a[32], b[32], d[32];
	json_t *extra = json_pack("{sI sI sI sI}", "needs", (json_int_t)bound, "share", (json_int_t)share, "held",
				  (json_int_t)held, "budget", (json_int_t)share); /* its own */
	r->retry_after = "1";
	return reply_error(c, r, 503, "busy", extra,
			   "the batch could hold %s (its planned bound); you hold %s of your share of %s "
			   "(memory= in --tokens: your requests, batch texts, kept values and batches "
			   "running): try again shortly, or keep less",
			   tir_bytes_str(bound, a), tir_bytes_str(held, b), tir_bytes_str(share, d));
}

/* A batch making a value (`bytes`, made by node `at`) over its tenant's
 * share: 413 memory at that op, with the tenant's own figures only. */
static enum MHD_Result reply_value_over_share(struct server *s, struct MHD_Connection *c, struct req *r,
					      uint64_t bytes, const struct tir_node *at)
{
	uint64_t share = s->tenants[r->tenant].max_memory, held = tenant_held(s, r->tenant);
	char a[32], d[32];
	struct tir_err e = {0};
	tir_errf(&e, TIR_EBUDGET, at ? &at->loc : NULL,
		 "%s%sthe batch makes a value of %s, over your share of %s of this server's memory (memory= in "
		 "--tokens)", at ? tir_op(at->op)->name : "", at ? ": " : "", tir_bytes_str(bytes, a),
		 tir_bytes_str(share, d));
	char *rend = tir_err_render(&e);
	json_t *extra = err_json(&e, rend);
	free(rend);
	json_object_set_new(extra, "needs", json_integer((json_int_t)bytes));
	json_object_set_new(extra, "share", json_integer((json_int_t)share));
	json_object_set_new(extra, "budget", json_integer((json_int_t)share)); /* its own */
	json_object_set_new(extra, "held", json_integer((json_int_t)held));
	return reply_error(c, r, 413, "memory", extra, "%s", e.msg);
}

/* On a compute thread: bind, run, answer.  u->vals are handed to the exec. */
static enum MHD_Result compute(struct server *s, struct job *job)
{
	struct MHD_Connection *c = job->c;
	struct req *r = job->r;
	struct run *u = &job->u;
	bool graph_cached = job->graph_cached;
	struct tir_program *p = u->g->prog;
	struct tir_exec *x = u->g->x;
	struct batch *b = &u->b;
	char msg[600];
	struct tir_err err = {0};
	/* its bound within its tenant's share beside what the tenant holds
	 * (pick let it start as its tenant's only batch: its other batches
	 * running are counted there); a bound over the share is no true
	 * figure (every value it makes, as if none were freed): such a batch
	 * runs as its tenant's only one, judged by its plan's peak */
	if (job->share_bound && job->bound <= s->tenants[r->tenant].max_memory) {
		pthread_mutex_lock(&s->q.mu);
		uint64_t others = s->tenants[r->tenant].bound - job->share_bound;
		pthread_mutex_unlock(&s->q.mu);
		uint64_t room = s->tenants[r->tenant].max_memory - job->share_bound;
		if (others > room || !tenant_within(s, r->tenant, room - others))
			return reply_over_share(s, c, r, job->bound, tenant_held(s, r->tenant) + others);
	}
	/* every input of the text bound, every binding an input */
	for (size_t i = 0; i < p->nstmts; i++) {
		const struct tir_stmt *st = &p->stmts[i];
		if (st->kind == TIR_STMT_INPUT && !json_object_get(b->inputs, st->name))
			return reply_error(c, r, 400, "bad_request", NULL,
					   "inputs: 'input %s' of the batch has no binding", st->name);
	}
	for (size_t j = 0; j < b->nin; j++) {
		snprintf(msg, sizeof msg, "inputs.%.64s (%s %.64s)", b->in_name[j],
			 b->in_blob[j] ? "blob" : "value", b->in_blob[j] ? b->in_blob[j] : b->in_key[j]);
		if (tir_exec_set_input(x, b->in_name[j], &u->vals[j], msg, &err)) {
			tir_exec_clear_inputs(x);
			return reply_error(c, r, 400, "bad_request", NULL, "%s", err.msg);
		}
	}
	for (size_t j = 0; j < b->nkeep; j++) {
		const struct tir_binding *bd = tir_program_lookup(p, b->keep_name[j], strlen(b->keep_name[j]));
		if (!bd || !bd->node) {
			tir_exec_clear_inputs(x);
			return reply_error(c, r, 400, "bad_request", NULL, "keep.%.64s: the batch has no such value",
					   b->keep_name[j]);
		}
	}
	tir_exec_set_fuse(x, b->fuse);
	tir_exec_set_profile(x, b->profile);
	tir_exec_set_interrupt(x, &job->cancel);
	double t0 = tir_now_ms();
	int rc = tir_exec_run(x, 0, b->keep_name, (int)b->nkeep, &err);
	/* over the budget: the cached graphs no batch uses go, and once more */
	if (rc && err.code == TIR_EBUDGET && !job->cancel && graph_store_trim(s->graphs, -1)) {
		memset(&err, 0, sizeof err);
		rc = tir_exec_run(x, 0, b->keep_name, (int)b->nkeep, &err);
	}
	tir_exec_set_interrupt(x, NULL);
	pthread_mutex_lock(&s->q.mu);
	int why = job->why;
	bool overlapped = job->overlapped;
	pthread_mutex_unlock(&s->q.mu);
	if (rc && err.code == TIR_EINTERRUPT && why == TIME_UP) {
		tir_exec_clear_inputs(x);
		snprintf(err.msg, sizeof err.msg,
			 "the batch ran past this server's limit of %d s (--max-batch-seconds) and was stopped at this op",
			 s->o.max_batch_seconds);
		char *rend = tir_err_render(&err);
		json_t *extra = err_json(&err, rend);
		json_object_set_new(extra, "limit_s", json_integer(s->o.max_batch_seconds));
		free(rend);
		return reply_error(c, r, 413, "time", extra, "%s", err.msg);
	}
	if (rc && err.code == TIR_EINTERRUPT) {
		tir_exec_clear_inputs(x);
		r->gone = STOPPED;
		r->ran_ms = tir_now_ms() - t0;
		return reply_gone(c, r);
	}
	if (rc) {
		tir_exec_clear_inputs(x);
		if (err.code == TIR_ENOMEM)
			return reply_error(c, r, 500, "internal", NULL, "%s", err.msg);
		if (err.code == TIR_EBUDGET && s->ntenants > 1) /* the tenant's own figures only */
			return tenant_budget_error(s, c, r, x, &err);
		if (err.code == TIR_EBUDGET && overlapped) { /* it may fit alone: later */
			r->retry_after = "1";
			return reply_error(c, r, 503, "busy", NULL,
					   "%s, with other batches running beside it; try again shortly", err.msg);
		}
		char *rend = tir_err_render(&err);
		if (err.code == TIR_EBUDGET) { /* what the batch asks for is more than the server allows */
			json_t *extra = err_json(&err, rend);
			if (extra) {
				json_object_set_new(extra, "budget", json_integer((json_int_t)tir_mem_limit()));
				json_object_set_new(extra, "held", json_integer((json_int_t)tir_mem_current()));
				/* the plan's peak, simulated before anything was made */
				json_object_set_new(extra, "peak",
						    json_integer((json_int_t)tir_exec_stats(x)->plan_peak_bytes));
			}
			enum MHD_Result ok = reply_error(c, r, 413, "memory", extra, "%s", err.msg);
			free(rend);
			return ok;
		}
		enum MHD_Result ok = reply_error(c, r, 422, "runtime", err_json(&err, rend), "%s", err.msg);
		free(rend);
		return ok;
	}
	const struct tir_exec_stats *st = tir_exec_stats(x);
	pthread_mutex_lock(&s->mmu);
	s->kernel_s += st->run_ms / 1e3;
	pthread_mutex_unlock(&s->mmu);
	json_t *meta = json_pack("{sf sf sI si si sb sb}", "plan_ms", st->plan_ms, "run_ms", st->run_ms,
				 "peak_bytes", (json_int_t)st->peak_bytes, "nops", st->nops, "nkernels",
				 st->nkernels, "plan_cached", st->plan_cached, "graph_cached", graph_cached);
	if (meta && b->explain)
		json_object_set_new(meta, "explain", json_string(tir_exec_explain(x)));
	if (meta && b->profile) {
		char *prof = tir_exec_profile(x);
		json_object_set_new(meta, "profile", json_string(prof ? prof : ""));
		free(prof);
	}
	char *mtext = meta ? json_dumps(meta, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(meta);
	size_t len = 0;
	struct MHD_Response *body = mtext ? results_response(x, mtext, &len) : NULL;
	free(mtext);
	uint64_t keeping = 0;
	for (size_t j = 0; body && j < b->nkeep; j++) {
		tir_tensor_ref(&u->kept[j], tir_exec_named(x, j));
		keeping += (uint64_t)tir_tensor_numel(&u->kept[j]) * tir_dtype_size(u->kept[j].dtype);
	}
	tir_exec_clear_inputs(x); /* the memory a run used goes back now */
	if (!body)
		return reply_error(c, r, 500, "internal", NULL, "out of memory making the results");
	/* what a tenant keeps stays within its share (values kept before under
	 * the same keys counted too: the safe side) */
	const struct tenant *tn = &s->tenants[r->tenant];
	if (keeping && tn->max_memory &&
	    (keeping > tn->max_memory || !tenant_within(s, r->tenant, tn->max_memory - keeping))) {
		MHD_destroy_response(body);
		return reply_no_memory(s, c, r, keeping, "keep: the values kept");
	}
	int kept = session_update(s->sessions, u->ss, b->drop, b->ndrop, b->keep_key, u->kept, b->nkeep);
	if (kept == -1) {
		MHD_destroy_response(body);
		return reply_error(c, r, 413, "too_large", NULL,
				   "keep: a session keeps at most %d values", SESSION_MAX_VALUES);
	}
	if (kept) {
		MHD_destroy_response(body);
		return reply_error(c, r, 503, "busy", NULL,
				   "keep: no memory for the values kept now (--max-memory); try again shortly");
	}
	return reply_with(c, r, 200, "application/x-tir-results", body, len);
}

static void *computer(void *arg);
static bool enqueue(struct server *s, struct MHD_Connection *c, struct req *r, struct job *j,
		    enum MHD_Result *ok, bool suspended);

bool runq_stopping(struct server *s)
{
	pthread_mutex_lock(&s->q.mu);
	bool stop = s->q.stop;
	pthread_mutex_unlock(&s->q.mu);
	return stop;
}

/* On a parse thread, the connection suspended: read the run request r
 * whose body is whole, parse its text, find its values, and queue it for
 * a compute thread: true; or false, answered (the caller lets go of r and
 * resumes c). */
static bool post_body(struct server *s, struct MHD_Connection *c, struct req *r)
{
	struct run u = {0};
	char msg[600];
	enum MHD_Result ok;
	json_error_t jerr;
	u.doc = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	free(r->body); /* its share of the budget stays: the document holds as much */
	r->body = NULL;
	if (!u.doc) {
		reply_error(c, r, 400, "bad_request", NULL, "body: not JSON: %s (byte %d)", jerr.text,
			    jerr.position);
		return false;
	}
	int st = read_batch(u.doc, &u.b, msg, sizeof msg);
	if (st) {
		ok = reply_error(c, r, st, st == 400 ? "bad_request" : st == 413 ? "too_large" : "internal",
				 NULL, "%s", msg);
		goto out;
	}
	if (u.b.text) {
		char h[TIR_SHA_HEX + 1];
		tir_sha256_hex(u.b.text, u.b.text_len, h);
		if (strcmp(h, u.b.graph)) {
			ok = reply_error(c, r, 400, "bad_hash", NULL,
					 "text: hashes to %s, not to graph %s", h, u.b.graph);
			goto out;
		}
	}
	if (!r->id_ok || !(u.ss = session_get(s->sessions, r->id, r->tenant))) {
		ok = reply_error(c, r, 404, "not_found", NULL, "no such session (expired or deleted?)");
		goto out;
	}
	/* a stopping server takes no new batch: 503 before anything is listed
	 * as missing (a 409 would have the client send blobs it cannot use,
	 * whose storing evicts what other clients just sent) */
	if (runq_stopping(s)) {
		ok = reply_error(c, r, 503, "busy", NULL, "the server is stopping");
		goto out;
	}
	bool graph_cached = true;
	u.g = graph_get(s->graphs, u.b.graph, r->tenant);
	if (!u.g && u.b.text) {
		graph_cached = false;
		struct tir_program *p = tir_program_new();
		struct counter *k = p ? count_wrap(s, r->tenant, p) : NULL;
		if (!k) {
			tir_program_free(p);
			ok = reply_error(c, r, 500, "internal", NULL, "out of memory");
			goto out;
		}
		tir_program_set_loader(p, refuse_load, NULL);
		int prc = tir_program_parse(p, "batch", u.b.text, u.b.text_len, 0);
		uint64_t cost = k->charged; /* the graph's from here (k goes with p) */
		atomic_fetch_sub(&s->tenants[r->tenant].mem, cost);
		if (prc && k->over == COUNT_OPS) {
			const struct tir_err *e = tir_program_diag(p, 0);
			for (int i = 1; e->code != TIR_EBUDGET && i < tir_program_ndiags(p); i++)
				e = tir_program_diag(p, i); /* the limit's, not an error before it */
			char *rend = tir_err_render(e);
			json_t *extra = err_json(e, rend);
			json_object_set_new(extra, "limit", json_integer(s->o.max_ops));
			ok = reply_error(c, r, 413, "too_many_ops", extra, "%s", e->msg);
			free(rend);
			tir_program_free(p);
			tir_mem_uncharge(cost);
			goto out;
		}
		if (prc && k->over == COUNT_MEMORY) {
			uint64_t nodes = k->nodes;
			tir_program_free(p);
			tir_mem_uncharge(cost);
			ok = reply_no_memory(s, c, r, (nodes + CHARGE_NODES) * NODE_COST, "the batch's graph");
			goto out;
		}
		int why = 0;
		if (prc && k->over == COUNT_CACHE) { /* refused as graph_put would */
			tir_program_free(p);
			tir_mem_uncharge(cost);
			cost += (uint64_t)CHARGE_NODES * NODE_COST; /* what it would have held, at least */
			why = 413;
		} else if (prc) {
			struct tir_str all = {0};
			for (int i = 0; i < tir_program_ndiags(p); i++) {
				char *one = tir_err_render(tir_program_diag(p, i));
				if (one)
					tir_str_add(&all, one, strlen(one));
				free(one);
			}
			const struct tir_err *e = tir_program_diag(p, 0);
			ok = reply_error(c, r, 400, "program", err_json(e, all.s ? all.s : ""), "%s", e->msg);
			tir_str_free(&all);
			tir_program_free(p);
			tir_mem_uncharge(cost);
			goto out;
		}
		u.g = why ? NULL : graph_put(s->graphs, u.b.graph, r->tenant, p, cost, &why);
		if (!u.g && why == 413) {
			char a[32], b[32];
			ok = reply_error(c, r, 413, "too_large",
					 json_pack("{sI sI}", "graph_bytes", (json_int_t)cost, "cache_bytes",
						   (json_int_t)graph_store_cap(s->graphs)),
					 "text: its parsed graph would hold %s or more, over this server's cache of batch graphs "
					 "(%s: --graph-cache)",
					 tir_bytes_str(cost, a), tir_bytes_str(graph_store_cap(s->graphs), b));
			goto out;
		}
		if (!u.g && why == 503) {
			char b[32];
			r->retry_after = "1";
			ok = reply_error(c, r, 503, "busy", NULL,
					 "text: the cache of batch graphs (%s) is full of the graphs of batches queued "
					 "and running: try again shortly", tir_bytes_str(graph_store_cap(s->graphs), b));
			goto out;
		}
		if (!u.g) {
			ok = reply_error(c, r, 500, "internal", NULL, "out of memory");
			goto out;
		}
	}
	/* the values: what is missing is listed, an unknown key is an error */
	u.vals = calloc(u.b.nin + 1, sizeof *u.vals);
	u.kept = calloc(u.b.nkeep + 1, sizeof *u.kept);
	json_t *missing = json_array(), *seen = json_object(); /* in order, and as a set */
	if (!u.vals || !u.kept || !missing || !seen) {
		json_decref(missing);
		json_decref(seen);
		ok = reply_error(c, r, 500, "internal", NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < u.b.nin; i++) {
		if (u.b.in_key[i] && !session_value(s->sessions, u.ss, u.b.in_key[i], &u.vals[i])) {
			json_decref(missing);
			json_decref(seen);
			ok = reply_error(c, r, 404, "not_found", NULL, "inputs.%.64s: this session has no value '%s'",
					 u.b.in_name[i], u.b.in_key[i]);
			goto out;
		}
		if (u.b.in_blob[i] && !blob_get(s->blobs, u.b.in_blob[i], r->tenant, &u.vals[i])) {
			if (!json_object_get(seen, u.b.in_blob[i])) {
				json_object_set_new(seen, u.b.in_blob[i], json_true());
				json_array_append_new(missing, json_string(u.b.in_blob[i]));
			}
		}
	}
	json_decref(seen);
	if (!u.g || json_array_size(missing)) {
		size_t nb = json_array_size(missing);
		ok = reply_error(c, r, 409, "missing", json_pack("{sb so}", "graph", !u.g, "blobs", missing),
				 "the server lacks %s%s%zu blob%s; send %s and ask again",
				 u.g ? "" : "the batch text", u.g ? "" : " and ", nb, nb == 1 ? "" : "s",
				 u.g && nb == 1 ? "it" : "them");
		goto out;
	}
	json_decref(missing);
	if (!session_fits(s->sessions, u.ss, u.b.drop, u.b.ndrop, u.b.keep_key, u.b.nkeep)) {
		ok = reply_error(c, r, 413, "too_large", NULL, "keep: a session keeps at most %d values",
				 SESSION_MAX_VALUES);
		goto out;
	}
	/* to a compute thread, which answers and resumes the connection */
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		ok = reply_error(c, r, 500, "internal", NULL, "out of memory");
		goto out;
	}
	j->u = u;
	j->graph_cached = graph_cached;
	const struct tir_node *at;
	j->bound = batch_bound(u.g->prog, &j->largest, &at);
	/* with several tenants, a value over the tenant's share never fits:
	 * said at the op that makes it */
	uint64_t share = s->tenants[r->tenant].max_memory;
	if (s->ntenants > 1 && share && j->largest > share) {
		uint64_t largest = j->largest;
		free(j);
		ok = reply_value_over_share(s, c, r, largest, at);
		goto out;
	}
	if (enqueue(s, c, r, j, &ok, true))
		return true;
	free(j);
out:
	(void)ok; /* answered: MHD sends it once the caller resumes the connection */
	run_free(s, &u);
	return false;
}

enum MHD_Result runq_post(struct server *s, struct MHD_Connection *c, struct req *r)
{
	struct job *j = calloc(1, sizeof *j);
	if (!j)
		return reply_error(c, r, 503, "busy", NULL, "no memory for a batch now");
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	j->c = c;
	j->r = r;
	j->fd = ci ? (int)ci->connect_fd : -1;
	pthread_mutex_lock(&s->q.mu);
	if (s->q.stop || s->q.pstop || !s->q.nparsers) {
		pthread_mutex_unlock(&s->q.mu);
		free(j);
		return reply_error(c, r, 503, "busy", NULL, "the server is stopping");
	}
	MHD_suspend_connection(c);
	r->queued = true;
	atomic_fetch_add(&s->q.pending, 1);
	*s->q.ptail = j;
	s->q.ptail = &j->next;
	pthread_cond_signal(&s->q.pcv);
	pthread_mutex_unlock(&s->q.mu);
	return MHD_YES;
}

/* A parse thread: the run requests whose bodies are in, in the order
 * they came.  It runs below the HTTP threads' priority. */
static void *parser(void *arg)
{
	struct server *s = arg;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 5);
	pthread_mutex_lock(&s->q.mu);
	for (;;) {
		struct job *j = s->q.phead;
		if (!j) {
			if (s->q.pstop)
				break;
			pthread_cond_wait(&s->q.pcv, &s->q.mu);
			continue;
		}
		if (!(s->q.phead = j->next))
			s->q.ptail = &s->q.phead;
		pthread_mutex_unlock(&s->q.mu);
		struct MHD_Connection *c = j->c;
		struct req *r = j->r;
		bool queued = false;
		if (hung_up(j->fd)) {
			r->gone = DROPPED; /* nobody to answer: not read */
			reply_gone(c, r);
		} else {
			queued = post_body(s, c, r); /* r is a compute thread's once queued */
		}
		free(j);
		if (!queued)
			req_let_go(s, r);
		atomic_fetch_sub(&s->q.pending, 1);
		if (!queued)
			MHD_resume_connection(c);
		pthread_mutex_lock(&s->q.mu);
	}
	pthread_mutex_unlock(&s->q.mu);
	return NULL;
}



/* Queue job j of request r for a compute thread, its connection
 * suspended (now, or by the caller: suspended): true; or false with *ok
 * the answer given (j left to the caller). */
static bool enqueue(struct server *s, struct MHD_Connection *c, struct req *r, struct job *j,
		    enum MHD_Result *ok, bool suspended)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	j->c = c;
	j->r = r;
	j->fd = ci ? (int)ci->connect_fd : -1;
	pthread_mutex_lock(&s->q.mu);
	if (s->q.stop) {
		pthread_mutex_unlock(&s->q.mu);
		*ok = reply_error(c, r, 503, "busy", NULL, "the server is stopping");
		return false;
	}
	/* a thread for it when none waits for work (none is started past
	 * the cap: the batch then waits for one to be free) */
	if (!s->q.idle && s->q.nthreads < s->q.cap &&
	    !pthread_create(&s->q.threads[s->q.nthreads], NULL, computer, s))
		s->q.nthreads++;
	if (!s->q.nthreads) {
		pthread_mutex_unlock(&s->q.mu);
		*ok = reply_error(c, r, 503, "busy", NULL, "cannot start a compute thread now");
		return false;
	}
	if (!suspended)
		MHD_suspend_connection(c);
	r->queued = true;
	atomic_fetch_add(&s->q.pending, 1);
	s->q.waiting++;
	*s->q.tail = j;
	s->q.tail = &j->next;
	pthread_cond_broadcast(&s->q.cv);
	pthread_mutex_unlock(&s->q.mu);
	return true;
}

enum MHD_Result runq_post_task(struct server *s, struct MHD_Connection *c, struct req *r,
			       struct session *ss, runq_task_fn fn, void (*done)(void *), void *arg)
{
	enum MHD_Result ok;
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		ok = reply_error(c, r, 500, "internal", NULL, "out of memory");
	} else {
		j->u.ss = ss;
		j->task = fn;
		j->task_done = done;
		j->task_arg = arg;
		if (enqueue(s, c, r, j, &ok, false))
			return MHD_YES;
		free(j);
	}
	if (done)
		done(arg);
	session_unref(s->sessions, ss);
	return ok;
}

/* Whether two batches use one session or one graph (an exec runs one
 * batch at a time). */
static bool conflict(const struct job *a, const struct job *b)
{
	return a->u.ss == b->u.ss || (a->u.g && a->u.g == b->u.g);
}

/* A batch is small when its bound is within an eighth of --max-memory:
 * the small ones beside others share that eighth, set aside for them. */
#define SMALL_SHARE 8

/* The next batch a compute thread may start (q.mu held), taken out of the
 * queue, or NULL: the first in the order they came whose session and
 * graph are free, that no earlier waiting batch of its session precedes,
 * whose tenant runs fewer than its batches=, and that fits: alone; small,
 * beside the small ones in the share set aside for them and in what is
 * free; or its bound in half of what --max-memory has left beside those
 * running, that share set aside.  The bounds of the big ones running
 * never keep a small one waiting. */
static struct job *pick(struct server *s)
{
	uint64_t limit = tir_mem_limit(), held = tir_mem_current();
	uint64_t left = limit > held ? limit - held : 0, share = limit / SMALL_SHARE;
	uint64_t room = left > share ? left - share : 0;
	for (struct job **pp = &s->q.head; *pp; pp = &(*pp)->next) {
		struct job *j = *pp;
		bool free_ = true;
		for (const struct job *o = s->q.head; o != j && free_; o = o->next)
			free_ = o->u.ss != j->u.ss; /* its session's earlier batch first */
		for (const struct job *o = s->q.running; o && free_; o = o->next)
			free_ = !conflict(o, j);
		if (!free_)
			continue;
		const struct tenant *tn = &s->tenants[j->r->tenant];
		if (!j->task && tn->max_batches && tn->running >= tn->max_batches)
			continue;
		/* with several tenants, its bound (at most the whole share)
		 * beside its tenant's other batches running and what the
		 * tenant holds, within its share (its first starts anyway:
		 * compute answers what cannot fit) */
		bool shared = !j->task && s->ntenants > 1 && tn->max_memory;
		uint64_t need = shared && j->bound < tn->max_memory ? j->bound : tn->max_memory;
		if (shared && tn->running &&
		    (need > tn->max_memory - tn->bound ||
		     tenant_held(s, j->r->tenant) > tn->max_memory - tn->bound - need))
			continue;
		bool alone = !s->q.running, small = limit && j->bound <= share;
		if (!alone && limit && small && (j->bound > left || s->q.small > share - j->bound))
			continue;
		if (!alone && limit && !small && (j->bound > room / 2 || s->q.beside > room / 2 - j->bound))
			continue;
		*pp = j->next;
		if (s->q.tail == &j->next)
			s->q.tail = pp;
		j->next = NULL;
		j->beside = !alone;
		j->small = j->beside && small;
		if (j->small)
			s->q.small += j->bound;
		else if (j->beside)
			s->q.beside += j->bound;
		if (!j->task)
			s->tenants[j->r->tenant].running++;
		if (shared) {
			j->share_bound = need;
			s->tenants[j->r->tenant].bound += need;
		}
		return j;
	}
	return NULL;
}

static void *computer(void *arg)
{
	struct server *s = arg;
	pthread_mutex_lock(&s->q.mu);
	for (;;) {
		struct job *j = pick(s);
		if (!j) {
			if (s->q.stop && !s->q.head)
				break;
			s->q.idle++;
			pthread_cond_wait(&s->q.cv, &s->q.mu);
			s->q.idle--;
			continue;
		}
		s->q.waiting--;
		for (struct job *o = s->q.running; o; o = o->next)
			o->overlapped = j->overlapped = true;
		j->next = s->q.running;
		s->q.running = j;
		s->q.busy++;
		/* (a task keeps its own time: --transfer-seconds) */
		j->deadline = s->o.max_batch_seconds > 0 && !j->task ? tir_now_ms() + 1e3 * s->o.max_batch_seconds : 0;
		pthread_mutex_unlock(&s->q.mu);
		if (hung_up(j->fd)) {
			j->r->gone = DROPPED; /* nobody to answer: not run */
			reply_gone(j->c, j->r);
		} else if (j->task) {
			j->task(s, j->c, j->r, j->task_arg, &j->cancel);
		} else {
			/* a suspended connection may be answered from any thread */
			compute(s, j);
		}
		if (j->task_done)
			j->task_done(j->task_arg);
		int tenant = j->r->tenant;
		run_free(s, &j->u);
		req_let_go(s, j->r); /* the parse it was charged for is gone */
		/* out of the running before the resume: MHD may close the
		 * socket from then on, and a client that has its answer sees
		 * it no longer running */
		pthread_mutex_lock(&s->q.mu);
		for (struct job **pp = &s->q.running; *pp; pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				break;
			}
		s->q.busy--;
		if (j->small)
			s->q.small -= j->bound;
		else if (j->beside)
			s->q.beside -= j->bound;
		if (!j->task)
			s->tenants[tenant].running--;
		s->tenants[tenant].bound -= j->share_bound; /* on every way out */
		pthread_cond_broadcast(&s->q.cv); /* what waited on it may start */
		pthread_mutex_unlock(&s->q.mu);
		atomic_fetch_sub(&s->q.pending, 1);
		MHD_resume_connection(j->c); /* j->r is MHD's again from here */
		free(j);
		pthread_mutex_lock(&s->q.mu);
	}
	s->q.exited++;
	pthread_mutex_unlock(&s->q.mu);
	return NULL;
}

void runq_init(struct server *s)
{
	pthread_mutex_init(&s->q.mu, NULL);
	pthread_cond_init(&s->q.cv, NULL);
	pthread_cond_init(&s->q.pcv, NULL);
	s->q.tail = &s->q.head;
	s->q.ptail = &s->q.phead;
}

bool runq_start(struct server *s)
{
	/* one thread per session at most: more could only wait */
	s->q.cap = s->o.max_sessions > 0 ? s->o.max_sessions : 1;
	s->q.threads = calloc((size_t)s->q.cap, sizeof *s->q.threads);
	if (!s->q.threads)
		return false;
	int want = (int)(sizeof s->q.parsers / sizeof *s->q.parsers);
	pthread_mutex_lock(&s->q.mu);
	while (s->q.nparsers < want && !pthread_create(&s->q.parsers[s->q.nparsers], NULL, parser, s))
		s->q.nparsers++;
	pthread_mutex_unlock(&s->q.mu);
	return s->q.nparsers > 0;
}

void runq_stop(struct server *s)
{
	/* the parse threads first: what they hold is answered, or queued */
	pthread_mutex_lock(&s->q.mu);
	s->q.pstop = true;
	pthread_cond_broadcast(&s->q.pcv);
	pthread_mutex_unlock(&s->q.mu);
	for (int i = 0; i < s->q.nparsers; i++)
		pthread_join(s->q.parsers[i], NULL);
	s->q.nparsers = 0;
	pthread_mutex_lock(&s->q.mu);
	s->q.stop = true;
	pthread_cond_broadcast(&s->q.cv);
	/* the clients are still watched: one that goes away meanwhile has
	 * its batch stopped, and the stop is not held up by it */
	while (s->q.exited < s->q.nthreads) {
		pthread_mutex_unlock(&s->q.mu);
		runq_watch(s);
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&s->q.mu);
	}
	pthread_mutex_unlock(&s->q.mu);
	for (int i = 0; i < s->q.nthreads; i++)
		pthread_join(s->q.threads[i], NULL);
	s->q.nthreads = s->q.exited = 0;
}

void runq_destroy(struct server *s)
{
	free(s->q.threads);
	pthread_mutex_destroy(&s->q.mu);
	pthread_cond_destroy(&s->q.cv);
	pthread_cond_destroy(&s->q.pcv);
}

void runq_watch(struct server *s)
{
	double now = tir_now_ms();
	pthread_mutex_lock(&s->q.mu);
	for (struct job *j = s->q.running; j; j = j->next) {
		if (j->cancel)
			continue;
		if (j->deadline && now > j->deadline)
			j->why = TIME_UP;
		else if (hung_up(j->fd))
			j->why = CLIENT_GONE;
		j->cancel = j->why != GO_ON;
	}
	pthread_mutex_unlock(&s->q.mu);
}

int runq_pending(struct server *s)
{
	return atomic_load(&s->q.pending);
}

void runq_counts(struct server *s, int *queued, int *running)
{
	pthread_mutex_lock(&s->q.mu);
	*queued = s->q.waiting;
	*running = s->q.busy;
	pthread_mutex_unlock(&s->q.mu);
}
