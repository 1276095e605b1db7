/*
 * runq.c — POST /v1/sessions/ID/run: the request read and checked (the
 * batch text parsed once per graph, the inputs found in the session and
 * the blob store, a 409 for what is missing), then queued and run by a
 * compute thread, which answers it and resumes its connection (suspended
 * meanwhile, so that MHD's threads go on with everything else).
 *
 * The schedule (serve.h's struct runq): each session's batches in the
 * order they came, one at a time; batches of different sessions at once,
 * each on its own compute thread, so that nobody waits behind another's
 * long batch for more than the share of the CPU the long one takes.  A
 * graph (its exec) serves one batch at a time.  A batch starts beside
 * others only when the bound of what it can hold fits in half of what
 * --max-memory has left; one that does not waits until it can run alone.
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
#include <time.h>

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
	bool beside;                   /* started beside others, its bound counted in q.beside */
	bool overlapped;               /* another batch ran during it */
	double deadline;               /* tir_now_ms() past which it is stopped (0: none) */
	/* set by the main thread's watch (under q.mu), read by the exec */
	volatile sig_atomic_t cancel;
	enum { GO_ON, CLIENT_GONE, TIME_UP } why;
};

/* The most a batch's values can hold at once: every node's value, as if
 * none were freed, fused or a view (inputs are held already).  A bound,
 * not the peak: it is only used to let small batches start beside others. */
static uint64_t batch_bound(const struct tir_program *p)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < p->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (n->op == TIR_OP_INPUT)
			continue;
		uint64_t b = (uint64_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
		sum = b > UINT64_MAX - sum ? UINT64_MAX : sum + b;
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
	for (size_t j = 0; body && j < b->nkeep; j++)
		tir_tensor_ref(&u->kept[j], tir_exec_named(x, j));
	tir_exec_clear_inputs(x); /* the memory a run used goes back now */
	if (!body)
		return reply_error(c, r, 500, "internal", NULL, "out of memory making the results");
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
		    enum MHD_Result *ok);

bool runq_stopping(struct server *s)
{
	pthread_mutex_lock(&s->q.mu);
	bool stop = s->q.stop;
	pthread_mutex_unlock(&s->q.mu);
	return stop;
}

enum MHD_Result runq_post(struct server *s, struct MHD_Connection *c, struct req *r)
{
	struct run u = {0};
	char msg[600];
	enum MHD_Result ok;
	json_error_t jerr;
	u.doc = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	free(r->body); /* its share of the budget stays: the document holds as much */
	r->body = NULL;
	if (!u.doc)
		return reply_error(c, r, 400, "bad_request", NULL, "body: not JSON: %s (byte %d)", jerr.text,
				   jerr.position);
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
		if (!p) {
			ok = reply_error(c, r, 500, "internal", NULL, "out of memory");
			goto out;
		}
		tir_program_set_loader(p, refuse_load, NULL);
		if (tir_program_parse(p, "batch", u.b.text, u.b.text_len, 0)) {
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
			goto out;
		}
		u.g = graph_put(s->graphs, u.b.graph, r->tenant, p);
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
	j->bound = batch_bound(u.g->prog);
	if (enqueue(s, c, r, j, &ok))
		return MHD_YES;
	free(j);
out:
	run_free(s, &u);
	return ok;
}

/* Queue job j of request r (its connection suspended) for a compute
 * thread: true; or false with *ok the answer given (j left to the caller). */
static bool enqueue(struct server *s, struct MHD_Connection *c, struct req *r, struct job *j,
		    enum MHD_Result *ok)
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
		if (enqueue(s, c, r, j, &ok))
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

/* The next batch a compute thread may start (q.mu held), taken out of the
 * queue, or NULL: the first in the order they came whose session and
 * graph are free, that no earlier waiting batch of its session precedes,
 * and that fits (alone, or its bound in half of what --max-memory has
 * left beside those running). */
static struct job *pick(struct server *s)
{
	uint64_t limit = tir_mem_limit(), held = tir_mem_current();
	uint64_t left = limit > held ? limit - held : 0;
	for (struct job **pp = &s->q.head; *pp; pp = &(*pp)->next) {
		struct job *j = *pp;
		bool free_ = true;
		for (const struct job *o = s->q.head; o != j && free_; o = o->next)
			free_ = o->u.ss != j->u.ss; /* its session's earlier batch first */
		for (const struct job *o = s->q.running; o && free_; o = o->next)
			free_ = !conflict(o, j);
		if (!free_)
			continue;
		bool alone = !s->q.running;
		if (!alone && limit && (j->bound > left / 2 || s->q.beside > left / 2 - j->bound))
			continue;
		*pp = j->next;
		if (s->q.tail == &j->next)
			s->q.tail = pp;
		j->next = NULL;
		j->beside = !alone;
		if (j->beside)
			s->q.beside += j->bound;
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
		if (j->beside)
			s->q.beside -= j->bound;
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
	s->q.tail = &s->q.head;
}

bool runq_start(struct server *s)
{
	/* one thread per session at most: more could only wait */
	s->q.cap = s->o.max_sessions > 0 ? s->o.max_sessions : 1;
	s->q.threads = calloc((size_t)s->q.cap, sizeof *s->q.threads);
	return s->q.threads != NULL;
}

void runq_stop(struct server *s)
{
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
