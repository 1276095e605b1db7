/*
 * coll.c — POST /v1/sessions/ID/allreduce (docs/protocol.md, "Groups"):
 * this rank's part of one all_reduce over ranks of its group, run as one
 * MPI_Allreduce by the MPI part (lib/mpi/mpi.c orders the group's
 * collectives, so that concurrent clients cannot leave two ranks in two
 * collectives).  The client asks every rank of it at once, each with the
 * same key; each rank reduces the value its session keeps under "key" and
 * keeps the result under "as", as an import keeps what it fetched.
 *
 * The request is handed to the MPI part as it comes (on libmicrohttpd's
 * thread): the collective may begin before a compute thread is free, and
 * a rank whose compute threads all wait on collectives still takes the
 * next.  A compute task then waits for its end, which the MPI part gives
 * within its deadlines, and answers.
 */
#include "serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct coll_job {
	struct tir_mpi_coll c;         /* first: done's argument is the job */
	struct server *s;
	struct session *ss;            /* borrowed: the task's reference */
	char as[SESSION_KEY_MAX + 1];
	struct tir_tensor in, out;
	bool mean;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ended;
};

/* The MPI part's end of it (on its thread). */
static void coll_ended(struct tir_mpi_coll *c)
{
	struct coll_job *j = (struct coll_job *)c;
	atomic_fetch_sub(&j->s->group.coll_waiting, 1);
	pthread_mutex_lock(&j->mu);
	j->ended = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* Until the MPI part ends it: within its deadlines, 3 x --transfer-seconds. */
static void coll_wait(struct coll_job *j)
{
	pthread_mutex_lock(&j->mu);
	while (!j->ended)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
}

static void coll_free(void *arg)
{
	struct coll_job *j = arg;
	coll_wait(j);
	/* a collective given up with MPI still at its buffers: they are kept
	 * for ever (the group takes no collective again, so once) */
	if (j->c.status != TIR_MPI_KEPT) {
		tir_tensor_release(&j->in);
		tir_tensor_release(&j->out);
	}
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void count(struct server *s, bool ok, uint64_t bytes, double data_s)
{
	pthread_mutex_lock(&s->mmu);
	if (ok) {
		s->group.colls++;
		s->group.coll_bytes += bytes;
		s->group.coll_data_s += data_s;
	} else {
		s->group.colls_failed++;
	}
	pthread_mutex_unlock(&s->mmu);
}

/* mean: the sum over n ranks, divided as the lowering divides (x / n in
 * the value's dtype). */
static void divide(struct tir_tensor *t, int n)
{
	int64_t m = tir_tensor_numel(t);
	if (t->dtype == TIR_DTYPE_F32) {
		float *v = tir_tensor_data(t), d = (float)n;
		for (int64_t i = 0; i < m; i++)
			v[i] = v[i] / d;
	} else {
		double *v = tir_tensor_data(t), d = n;
		for (int64_t i = 0; i < m; i++)
			v[i] = v[i] / d;
	}
}

static enum MHD_Result coll_task(struct server *s, struct MHD_Connection *c, struct req *r, void *arg,
				 volatile sig_atomic_t *cancel)
{
	(void)cancel; /* the collective's other ranks are in it: it ends within its deadlines */
	struct coll_job *j = arg;
	coll_wait(j);
	uint64_t bytes = (uint64_t)tir_tensor_numel(&j->out) * tir_dtype_size(j->out.dtype);
	if (j->c.status) {
		count(s, false, 0, 0);
		return reply_error(c, r, j->c.status == TIR_MPI_NO_ANSWER ? 504 : 502,
				   j->c.status == TIR_MPI_NO_ANSWER ? "collective_timeout" : "collective", NULL,
				   "all_reduce over the group (rank %d): %s", s->group.rank, j->c.why);
	}
	if (j->mean)
		divide(&j->out, j->c.n);
	const char *keys[1] = {j->as};
	int kept = session_update(s->sessions, j->ss, NULL, 0, keys, &j->out, 1);
	count(s, !kept, bytes, j->c.data_s);
	if (kept == -1)
		return reply_error(c, r, 413, "too_large", NULL, "as: a session keeps at most %d values",
				   SESSION_MAX_VALUES);
	if (kept)
		return reply_error(c, r, 503, "busy", NULL,
				   "no memory to keep the result now (--max-memory); try again shortly");
	if (session_dead(s->sessions, j->ss))
		return reply_error(c, r, 404, "not_found", NULL, "the session ended during the all_reduce; nothing was kept");
	return reply_json(c, r, 200, json_pack("{ss sI si sf}", "key", j->as, "bytes", (json_int_t)bytes, "ranks",
					       j->c.n, "data_seconds", j->c.data_s));
}

/* The MPI type of a dtype an all_reduce takes, or -1. */
static int mpi_type_of(enum tir_dtype dt)
{
	switch (dt) {
	case TIR_DTYPE_F32: return TIR_MPI_F32;
	case TIR_DTYPE_F64: return TIR_MPI_F64;
	case TIR_DTYPE_I32: return TIR_MPI_I32;
	case TIR_DTYPE_I64: return TIR_MPI_I64;
	case TIR_DTYPE_I8: return TIR_MPI_I8;
	case TIR_DTYPE_U8: return TIR_MPI_U8;
	case TIR_DTYPE_I16: return TIR_MPI_I16;
	default: return -1;
	}
}

/* The body's fields into j (key into key): NULL, or what is wrong. */
static const char *parse(struct server *s, json_t *doc, struct coll_job *j, char *key, char *group, bool *mean)
{
	const char *k;
	json_t *v;
	int op = -1;
	json_object_foreach(doc, k, v) {
		const char *str = json_string_value(v);
		if (!strcmp(k, "key") || !strcmp(k, "as")) {
			if (!str || !session_key_valid(str))
				return !strcmp(k, "key") ? "key: not a key (1-64 of A-Z a-z 0-9 _ . -)"
							 : "as: not a key (1-64 of A-Z a-z 0-9 _ . -)";
			snprintf(!strcmp(k, "key") ? key : j->as, SESSION_KEY_MAX + 1, "%s", str);
		} else if (!strcmp(k, "op")) {
			op = !str ? -1 : !strcmp(str, "sum") || !strcmp(str, "mean") ? TIR_MPI_SUM
			     : !strcmp(str, "max") ? TIR_MPI_MAX : !strcmp(str, "min") ? TIR_MPI_MIN
			     : !strcmp(str, "prod") ? TIR_MPI_PROD : -1;
			if (op < 0)
				return "op: not one of sum, mean, max, min, prod";
			*mean = !strcmp(str, "mean");
		} else if (!strcmp(k, "coll")) {
			if (!str || strlen(str) != 32 || strspn(str, "0123456789abcdef") != 32)
				return "coll: not a collective's key (32 lowercase hex digits, new for each)";
			memcpy(j->c.key, str, 33);
		} else if (!strcmp(k, "group")) {
			if (!str || strlen(str) != 32)
				return "group: not a group's id (32 hex digits, as /v1/info says)";
			memcpy(group, str, 33);
		} else if (!strcmp(k, "ranks")) {
			size_t n = json_array_size(v);
			if (!json_is_array(v) || n < 2 || n > TIR_MPI_MAX_RANKS || (int)n > s->group.size)
				return "ranks: not a list of 2 or more ranks of the group";
			uint64_t seen = 0;
			for (size_t i = 0; i < n; i++) {
				json_t *e = json_array_get(v, i);
				json_int_t rk = json_is_integer(e) ? json_integer_value(e) : -1;
				if (rk < 0 || rk >= s->group.size || (seen >> rk & 1))
					return "ranks: not a list of distinct ranks of the group";
				seen |= 1ull << rk;
				j->c.ranks[i] = (int)rk;
			}
			if (!(seen & 1))
				return "ranks: rank 0 must be among them (it orders the group's collectives)";
			if (!(seen >> s->group.rank & 1))
				return "ranks: this server's rank is not among them";
			j->c.n = (int)n;
		} else {
			return "body: an unknown field (an allreduce takes \"key\", \"as\", \"op\", \"coll\", \"group\" "
			       "and \"ranks\")";
		}
	}
	if (!key[0] || !j->as[0] || op < 0 || !j->c.key[0] || !group[0] || !j->c.n)
		return "body: \"key\", \"as\", \"op\", \"coll\", \"group\" and \"ranks\" are each needed";
	j->c.op = op;
	return NULL;
}

enum MHD_Result coll_all_reduce(struct server *s, struct MHD_Connection *c, struct req *r)
{
	json_error_t jerr;
	json_t *doc = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return reply_error(c, r, 400, "bad_request", NULL, "body: not a JSON object");
	}
	if (!s->group.api || !s->group.members) {
		json_decref(doc);
		return reply_error(c, r, 409, "not_in_group", NULL,
				   "this server is no rank of a group (mpirun -n N tir serve): an all_reduce over "
				   "servers named one by one is made of moves between them, not of this request");
	}
	struct coll_job *j = calloc(1, sizeof *j);
	if (!j) {
		json_decref(doc);
		return reply_error(c, r, 500, "internal", NULL, "out of memory");
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->c.done = coll_ended;
	char key[SESSION_KEY_MAX + 1] = "", group[33] = "";
	const char *why = parse(s, doc, j, key, group, &j->mean);
	json_decref(doc);
	enum MHD_Result ok;
	struct session *ss = NULL;
	struct tir_err err = {0};
	if (why) {
		ok = reply_error(c, r, 400, "bad_request", NULL, "%s", why);
		goto refused;
	}
	if (strcmp(group, s->group.id)) {
		ok = reply_error(c, r, 409, "other_group", NULL, "group: this server is a rank of group %s, not of %s",
				 s->group.id, group);
		goto refused;
	}
	const char *keys[1] = {j->as};
	if (!(ss = r->id_ok ? session_get(s->sessions, r->id, r->tenant) : NULL)) {
		ok = reply_error(c, r, 404, "not_found", NULL, "no such session (expired or deleted?)");
		goto refused;
	}
	if (!session_value(s->sessions, ss, key, &j->in)) {
		ok = reply_error(c, r, 404, "not_found", NULL, "key: this session has no value '%s'", key);
		goto refused;
	}
	int t = mpi_type_of(j->in.dtype);
	if (t < 0 || (j->mean && t != TIR_MPI_F32 && t != TIR_MPI_F64)) {
		ok = reply_error(c, r, 400, "bad_request", NULL, "key: an all_reduce%s of %s is not one MPI makes as tir "
				 "does (f32, f64%s)", j->mean ? " mean" : "", tir_dtype_name(j->in.dtype),
				 j->mean ? "" : ", i8, u8, i16, i32, i64");
		goto refused;
	}
	if (!session_fits(s->sessions, ss, NULL, 0, keys, 1)) {
		ok = reply_error(c, r, 413, "too_large", NULL, "as: a session keeps at most %d values", SESSION_MAX_VALUES);
		goto refused;
	}
	if (!tir_tensor_is_contiguous(&j->in)) { /* MPI reads one run */
		struct tir_tensor v = {0};
		if (tir_tensor_convert(&j->in, j->in.dtype, &v, &err)) {
			ok = reply_error(c, r, 503, "busy", NULL, "no memory for the all_reduce now: %s", err.msg);
			goto refused;
		}
		tir_tensor_release(&j->in);
		j->in = v;
	}
	if (tir_tensor_alloc(&j->out, j->in.dtype, j->in.rank, j->in.shape, false, &err)) {
		ok = reply_error(c, r, 503, "busy", NULL, "no memory for the all_reduce's result now (--max-memory): %s",
				 err.msg);
		goto refused;
	}
	j->c.type = t;
	j->c.count = (uint64_t)tir_tensor_numel(&j->in);
	j->c.send = tir_tensor_data(&j->in);
	j->c.recv = tir_tensor_data(&j->out);
	j->ss = ss;
	j->s = s;
	atomic_fetch_add(&s->group.coll_waiting, 1);
	s->group.api->all_reduce(&j->c, s->o.transfer_seconds);
	return runq_post_task(s, c, r, ss, coll_task, coll_free, j);
refused:
	count(s, false, 0, 0);
	session_unref(s->sessions, ss);
	j->ended = true;
	coll_free(j);
	return ok;
}
