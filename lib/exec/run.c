/*
 * run.c — the reference executor: computes exactly the nodes that a print
 * or a save needs, in graph order (a topological order), one reference
 * kernel per op, freeing each intermediate after its last use.  It is the
 * oracle that every faster path is checked against (`--no-fuse`).  No
 * printing here: results are handed back as tensors.
 */
#include "exec.h"
#include "half.h"
#include "../fusion/fusion.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tir_exec {
	struct tir_program *prog;
	struct tir_tensor *inputs;     /* by node id: values given for INPUT nodes */
	size_t ninputs_cap;
	struct tir_tensor *results;    /* printed values of the last run, in order */
	const char **headers;
	size_t nresults;
	struct tir_tensor *named;      /* the values asked for by name */
	size_t nnamed;
	struct tir_exec_stats stats;
	bool no_fuse;                  /* --no-fuse: one reference kernel per node */
	char *explain;                 /* the last run's plan as text */
	/* plans by the structure of what a run needs: a graph run again is not
	 * planned again (the REPL, a server receiving the same batch) */
	struct plan_entry {
		int64_t *sig;          /* see plan_signature */
		size_t nsig;
		int32_t *groups;       /* the plan by dense index: per group n, nin, head (-1: none), then indices */
		size_t ngroups_words;
		const char **closed;
		int32_t *alone_at;     /* nodes (dense) the fuser left alone, and why */
		const char **alone_why;
		size_t nalone;
		struct tir_group_info *info; /* by group: the groups analyzed */
		struct plan_fin {      /* by dense index: what tir_plan_finish made */
			int64_t keep, copy;
			int32_t extra_uses;
			bool interior, dup;
		} *fin;
		uint64_t used;
	} pcache[8];
	struct tir_plan plan;          /* this run's plan, made or instantiated */
	/* the entry x->plan instantiates (or NULL), for which run: the
	 * program's nodes then (they never change once made), and what the
	 * run needed (with x->plan.need).  The same again is x->plan as it is,
	 * with no signature to make. */
	struct plan_entry *plan_src;
	bool rerun;                    /* this run is that one again */
	struct tir_node **plan_nodes;
	int64_t *plan_uses;
	bool *plan_target;
	size_t capplan;
	/* by node id, kept empty between runs: a run's values */
	struct tir_tensor *vals;
	size_t capvals;
	/* small constants' values, made once for the runs of a plan run
	 * again (a graph of scalar ops has about as many as ops; a single
	 * run holds and counts its memory as before): by node id the
	 * slot + 1, or 0 */
	int32_t *cslot;
	size_t ncslot;
	struct cconst {
		const struct tir_node *n; /* (ids are reused when a failed statement is undone) */
		struct tir_tensor v;
		struct tir_tensor as;     /* v converted, for the fused kernels reading it (or empty) */
	} *cconst;
	size_t ncconst, capcconst;
	uint64_t pclock;
	bool profile;                  /* time every kernel */
	bool trace;                    /* and note the pool's spans (--trace) */
	double run_t0, plan_t1, run_t1; /* the last run's start, its plan's end, its end (now_ms) */
	struct tir_pool_span *spans;   /* the pool's, of the last traced run */
	size_t nspans;
	struct tir_net_span *net;      /* a traced remote run's (tir_exec_trace_span) */
	size_t nnet, capnet;
	tir_progress_fn progress;      /* tir_exec_set_progress */
	void *progress_ctx;
	struct tir_kprof {
		char what[112];
		double start_ms;          /* when it started (now_ms) */
		double ms, bytes, flops;
		int64_t tasks;            /* offered to the pool (1: ran on the caller alone) */
	} *prof;
	size_t nprof, capprof;
	volatile sig_atomic_t *intr;   /* stop between nodes once it is set */
	bool keep;                     /* keep values of named nodes (the REPL) */
	uint64_t input_gen;            /* inputs given so far */
	struct tir_remote *remote;     /* runs go there (tir_exec_set_remote), or NULL */
	char *remote_profile;          /* the remote's profile table of the last run */
	struct tir_tensor *kept;       /* by node id: a value computed before */
	size_t nkept;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct tir_exec *tir_exec_new(struct tir_program *p)
{
	struct tir_exec *x = calloc(1, sizeof *x);
	if (x)
		x->prog = p;
	return x;
}

static void clear_results(struct tir_exec *x)
{
	for (size_t i = 0; i < x->nresults; i++)
		tir_tensor_release(&x->results[i]);
	for (size_t i = 0; i < x->nnamed; i++)
		tir_tensor_release(&x->named[i]);
	free(x->results);
	free(x->headers);
	free(x->named);
	x->results = x->named = NULL;
	x->headers = NULL;
	x->nresults = x->nnamed = 0;
}

static void net_spans_clear(struct tir_exec *x)
{
	for (size_t i = 0; i < x->nnet; i++)
		free(x->net[i].text);
	x->nnet = 0;
}

void tir_exec_free(struct tir_exec *x)
{
	if (!x)
		return;
	clear_results(x);
	free(x->explain);
	free(x->spans);
	net_spans_clear(x);
	free(x->net);
	free(x->remote_profile);
	for (int i = 0; i < 8; i++) {
		free(x->pcache[i].sig);
		free(x->pcache[i].groups);
		free(x->pcache[i].closed);
		free(x->pcache[i].alone_at);
		free(x->pcache[i].alone_why);
		free(x->pcache[i].info);
		free(x->pcache[i].fin);
	}
	tir_plan_free(&x->plan);
	free(x->plan_nodes);
	free(x->plan_uses);
	free(x->plan_target);
	free(x->vals);
	for (size_t i = 0; i < x->ncconst; i++) {
		tir_tensor_release(&x->cconst[i].v);
		tir_tensor_release(&x->cconst[i].as);
	}
	free(x->cconst);
	free(x->cslot);
	free(x->prof);
	tir_exec_keep_named(x, false);
	for (size_t i = 0; i < x->ninputs_cap; i++)
		tir_tensor_release(&x->inputs[i]);
	free(x->inputs);
	free(x);
}

/* ---- values kept between runs (tir_exec_keep_named) ---- */

/* A node bound to a name now: its value is worth keeping.  An input's
 * value is kept anyway, in x->inputs. */
static bool keepable(const struct tir_program *p, const struct tir_node *n)
{
	return n->op != TIR_OP_INPUT && tir_node_current_name(p, n);
}

/* Size the cache to the grown graph; drop values whose name was rebound. */
static int kept_sync(struct tir_exec *x)
{
	size_t nn = x->prog->nnodes, old = x->nkept;
	if (tir_grow((void **)&x->kept, &x->nkept, nn, sizeof *x->kept))
		return -TIR_ENOMEM;
	if (x->nkept > old)
		memset(x->kept + old, 0, (x->nkept - old) * sizeof *x->kept);
	for (size_t i = 0; i < old; i++)
		if (x->kept[i].buf && (i >= nn || !keepable(x->prog, x->prog->nodes[i])))
			tir_tensor_release(&x->kept[i]);
	return 0;
}

/* Input node id has a new value: drop the kept values computed from it. */
static void kept_forget(struct tir_exec *x, uint32_t id)
{
	size_t nn = x->prog->nnodes < x->nkept ? x->prog->nnodes : x->nkept;
	if (id >= nn)
		return;
	bool *dep = calloc(nn, sizeof *dep); /* NULL: forget everything after id */
	for (size_t i = id; i < nn; i++) {
		const struct tir_node *n = x->prog->nodes[i];
		bool d = i == id || !dep;
		for (int k = 0; !d && k < n->nin; k++)
			d = n->in[k] && dep[n->in[k]->id];
		if (dep)
			dep[i] = d;
		if (d)
			tir_tensor_release(&x->kept[i]);
	}
	free(dep);
}

void tir_exec_keep_named(struct tir_exec *x, bool on)
{
	x->keep = on;
	if (on)
		return;
	for (size_t i = 0; i < x->nkept; i++)
		tir_tensor_release(&x->kept[i]);
	free(x->kept);
	x->kept = NULL;
	x->nkept = 0;
}

bool tir_exec_has_value(const struct tir_exec *x, const char *name)
{
	const struct tir_binding *b = tir_program_lookup(x->prog, name, strlen(name));
	if (!b || !b->node)
		return false;
	uint32_t id = b->node->id;
	if (b->node->op == TIR_OP_INPUT)
		return id < x->ninputs_cap && x->inputs[id].buf;
	return id < x->nkept && x->kept[id].buf;
}

void tir_exec_set_interrupt(struct tir_exec *x, volatile sig_atomic_t *flag)
{
	x->intr = flag;
}

static const struct tir_stmt *find_input(const struct tir_program *p, const char *name)
{
	for (size_t i = p->nstmts; i-- > 0;)
		if (p->stmts[i].kind == TIR_STMT_INPUT && !strcmp(p->stmts[i].name, name))
			return &p->stmts[i];
	return NULL;
}

int tir_exec_set_input(struct tir_exec *x, const char *name, struct tir_tensor *t,
		       const char *what, struct tir_err *err)
{
	const struct tir_stmt *s = find_input(x->prog, name);
	if (!s)
		return tir_errf(err, TIR_EDATA, NULL, "%s: the program has no 'input %s'", what, name);
	const struct tir_node *n = s->node;
	bool ok = t->dtype == n->type.dtype && t->rank == n->type.rank;
	for (int i = 0; ok && i < t->rank; i++)
		ok = t->shape[i] == n->type.shape[i];
	if (!ok) {
		struct tir_type have = {.dtype = (uint8_t)t->dtype, .rank = (uint8_t)t->rank};
		memcpy(have.shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
		char a[TIR_TYPE_STRLEN], b[TIR_TYPE_STRLEN];
		return tir_errf(err, TIR_EDATA, &n->loc, "%s holds %s but input %s is declared %s", what,
				tir_type_str(&have, a, sizeof a), name, tir_type_str(&n->type, b, sizeof b));
	}
	size_t old = x->ninputs_cap;
	if (tir_grow((void **)&x->inputs, &x->ninputs_cap, x->prog->nnodes, sizeof *x->inputs))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	/* tir_grow leaves new slots uninitialised */
	memset(x->inputs + old, 0, (x->ninputs_cap - old) * sizeof *x->inputs);
	tir_tensor_release(&x->inputs[n->id]);
	x->inputs[n->id] = *t;
	memset(t, 0, sizeof *t);
	x->input_gen++;
	kept_forget(x, n->id);
	return 0;
}

int tir_exec_input_file(struct tir_exec *x, const char *name, const char *path, struct tir_err *err)
{
	struct tir_tensor t = {0};
	if (!find_input(x->prog, name))
		return tir_errf(err, TIR_EDATA, NULL, "--input %s=%s: the program has no 'input %s'", name,
				path, name);
	/* the file's only tensor, or in a .safetensors file of several the one
	 * named like the input */
	int rc = tir_file_load(path, NULL, &t, err);
	if (rc) {
		struct tir_err e2 = {0};
		if (tir_file_load(path, name, &t, &e2))
			return rc;
		rc = 0;
	}
	rc = tir_exec_set_input(x, name, &t, path, err);
	tir_tensor_release(&t);
	return rc;
}

/* ---- one node ---- */

/* v converted to dt (a new reference either way; release it). */
static int as_dtype(const struct tir_tensor *v, enum tir_dtype dt, struct tir_tensor *out,
		    struct tir_err *err)
{
	memset(out, 0, sizeof *out);
	if (v->dtype == dt) {
		tir_tensor_ref(out, v);
		return 0;
	}
	return tir_tensor_convert(v, dt, out, err);
}

static bool is_narrow(enum tir_dtype dt);

/* A matmul's operand: a storage type as it is (gemm.c widens it as it
 * packs), else converted to the product's dtype. */
static int as_head_operand(const struct tir_tensor *v, enum tir_dtype dt, struct tir_tensor *out,
			   struct tir_err *err)
{
	if (is_narrow(v->dtype)) {
		tir_tensor_ref(out, v);
		return 0;
	}
	return as_dtype(v, dt, out, err);
}

/* n's result in the type it computes in (f32 for f16 and bf16, i32 for
 * i8, u8 and i16: eval_node narrows it after) */
static int alloc_out(const struct tir_node *n, struct tir_tensor *out, struct tir_err *err)
{
	enum tir_dtype dt = (enum tir_dtype)n->type.dtype, w = tir_dtype_wide(dt);
	/* an f16 or bf16 creation op is made in f64 and rounded once */
	if (w == TIR_DTYPE_F32 && dt != w && tir_op(n->op)->kind == TIR_KIND_CREATE)
		w = TIR_DTYPE_F64;
	return tir_tensor_alloc(out, w, n->type.rank, n->type.shape, false, err);
}

static bool is_narrow(enum tir_dtype dt)
{
	return tir_dtype_wide(dt) != dt;
}

/* A view (or a copy of one): no arithmetic, any dtype as it is. */
static bool moves_only(enum tir_op op)
{
	switch (op) {
	case TIR_OP_RESHAPE: case TIR_OP_FLATTEN: case TIR_OP_SQUEEZE: case TIR_OP_UNSQUEEZE:
	case TIR_OP_TRANSPOSE: case TIR_OP_EXPAND: case TIR_OP_SLICE: case TIR_OP_CAST:
		return true;
	default:
		return false;
	}
}

/* rand's [0, 1) values narrowed toward zero (to nearest, one just under 1
 * would round up to 1) */
static int narrow_rand(struct tir_tensor *t, enum tir_dtype dt, struct tir_tensor *out, struct tir_err *err)
{
	int rc = tir_tensor_convert(t, dt, out, err);
	if (rc)
		return rc;
	const double *s = tir_tensor_data(t); /* made in f64: alloc_out */
	uint16_t *d = tir_tensor_data(out);
	int64_t n = tir_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		double back = dt == TIR_DTYPE_F16 ? tir_h2f(d[i]) : tir_b2f(d[i]);
		if (back > s[i])
			d[i]--; /* positive: the next value down */
	}
	return 0;
}

/* A view with size-1 axes in front, up to rank r. */
static void lift_rank(const struct tir_tensor *src, int r, struct tir_tensor *dst)
{
	tir_tensor_ref(dst, src);
	int k = r - src->rank;
	if (k <= 0)
		return;
	memmove(dst->shape + k, src->shape, sizeof(int64_t) * (size_t)src->rank);
	memmove(dst->strides + k, src->strides, sizeof(int64_t) * (size_t)src->rank);
	for (int i = 0; i < k; i++) {
		dst->shape[i] = 1;
		dst->strides[i] = 0;
	}
	dst->rank = r;
}

/* Broadcast the batch axes (all but the last two) of t to batch[nb]. */
static void batch_view(const struct tir_tensor *t, int nb, const int64_t *batch, struct tir_tensor *dst)
{
	struct tir_tensor l = {0};
	lift_rank(t, nb + 2, &l);
	int64_t shape[TIR_MAX_RANK];
	memcpy(shape, batch, sizeof(int64_t) * (size_t)nb);
	shape[nb] = l.shape[nb];
	shape[nb + 1] = l.shape[nb + 1];
	tir_view_broadcast(&l, nb + 2, shape, dst);
	tir_tensor_release(&l);
}

static int epilogue_range(void *ctx, int64_t i0, int64_t n)
{
	return tir_fused_range(ctx, i0, n);
}

/* matmul; with g, the group g (headed by n) finishes each block of the
 * result as it is made, and out is the group root's value.  gin: the
 * group's inputs, the head's slot to be filled here. */
static int eval_matmul_epi(const struct tir_node *n, struct tir_tensor *a0, struct tir_tensor *b0,
			   struct tir_tensor *out, const struct tir_group *g, struct tir_tensor *gin,
			   struct tir_err *err)
{
	struct tir_tensor a = {0}, b = {0}, av = {0}, bv = {0}, o = {0};
	tir_tensor_ref(&a, a0);
	tir_tensor_ref(&b, b0);
	if (a.rank == 1) { /* [k] -> [1, k] */
		a.shape[1] = a.shape[0];
		a.strides[1] = a.strides[0];
		a.shape[0] = 1;
		a.strides[0] = 0;
		a.rank = 2;
	}
	if (b.rank == 1) { /* [k] -> [k, 1] */
		b.shape[1] = 1;
		b.strides[1] = 0;
		b.rank = 2;
	}
	int nb = (a.rank > b.rank ? a.rank : b.rank) - 2;
	int64_t batch[TIR_MAX_RANK];
	for (int i = 0; i < nb; i++) {
		int ia = i - (nb - (a.rank - 2)), ib = i - (nb - (b.rank - 2));
		int64_t da = ia >= 0 ? a.shape[ia] : 1, db = ib >= 0 ? b.shape[ib] : 1;
		batch[i] = da == 1 ? db : da;
	}
	batch_view(&a, nb, batch, &av);
	batch_view(&b, nb, batch, &bv);
	int64_t oshape[TIR_MAX_RANK];
	memcpy(oshape, batch, sizeof(int64_t) * (size_t)nb);
	oshape[nb] = av.shape[nb];
	oshape[nb + 1] = bv.shape[nb + 1];
	int rc = tir_tensor_alloc(&o, tir_dtype_wide((enum tir_dtype)n->type.dtype), nb + 2, oshape, false, err);
	struct tir_fused *f = NULL;
	if (!rc && g) {
		for (int k = 0; k < g->nin; k++)
			if (g->inputs[k] == n)
				gin[k] = o; /* borrowed: the epilogue works in place */
		f = tir_fused_prepare(g, gin, &o, err);
		if (!f)
			rc = -err->code;
	}
	if (!rc)
		rc = tir_k_matmul_epi(&av, &bv, &o, f ? epilogue_range : NULL, f, err);
	tir_fused_free(f);
	if (!rc)
		rc = tir_tensor_reshape(&o, (g ? g->root : n)->type.rank, (g ? g->root : n)->type.shape, out, err);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	tir_tensor_release(&av);
	tir_tensor_release(&bv);
	tir_tensor_release(&o);
	return rc;
}

static int eval_matmul(const struct tir_node *n, struct tir_tensor *a0, struct tir_tensor *b0,
		       struct tir_tensor *out, struct tir_err *err)
{
	return eval_matmul_epi(n, a0, b0, out, NULL, NULL, err);
}

static int eval_attention(const struct tir_node *n, struct tir_tensor *in, struct tir_tensor *out,
			  struct tir_err *err)
{
	int nb = n->type.rank - 2;
	struct tir_tensor v[3] = {{0}};
	for (int i = 0; i < 3; i++)
		batch_view(&in[i], nb, n->type.shape, &v[i]);
	int rc = alloc_out(n, out, err);
	if (!rc)
		rc = tir_k_attention(&v[0], &v[1], &v[2], n->attr[0].i, out, err);
	for (int i = 0; i < 3; i++)
		tir_tensor_release(&v[i]);
	return rc;
}

static int eval_const(const struct tir_node *n, struct tir_tensor *out, struct tir_err *err)
{
	if (n->type.weak) {
		/* a literal keeps its exact value until an op gives it a dtype */
		enum tir_dtype dt = n->type.dtype == TIR_DTYPE_BOOL ? TIR_DTYPE_BOOL
				    : n->type.dtype == TIR_DTYPE_F32 || n->type.dtype == TIR_DTYPE_F64
					? TIR_DTYPE_F64
					: TIR_DTYPE_I64;
		int rc = tir_tensor_alloc(out, dt, 0, NULL, false, err);
		if (rc)
			return rc;
		void *d = tir_tensor_data(out);
		if (dt == TIR_DTYPE_F64)
			*(double *)d = n->fval;
		else if (dt == TIR_DTYPE_I64)
			*(int64_t *)d = n->ival;
		else
			*(uint8_t *)d = n->ival != 0;
		return 0;
	}
	int rc = alloc_out(n, out, err);
	if (rc)
		return rc;
	size_t bytes = (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
	if (bytes)
		memcpy(tir_tensor_data(out), n->data, bytes);
	return 0;
}

static int eval_load(const struct tir_node *n, struct tir_tensor *out, struct tir_err *err)
{
	int rc = tir_file_load(n->attr[0].s, n->attr[1].set ? n->attr[1].s : NULL, out, err);
	if (rc)
		return rc;
	bool ok = out->dtype == n->type.dtype && out->rank == n->type.rank;
	for (int i = 0; ok && i < out->rank; i++)
		ok = out->shape[i] == n->type.shape[i];
	if (!ok) {
		tir_tensor_release(out);
		return tir_errf(err, TIR_EDATA, NULL, "%s changed since the program was checked", n->attr[0].s);
	}
	return 0;
}

/* Compute node n from its operands' values in[]. */
static int eval_node(struct tir_exec *x, const struct tir_node *n, struct tir_tensor *in,
		     struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_attr *at = n->attr;
	enum tir_dtype ot = (enum tir_dtype)n->type.dtype;
	enum tir_dtype cd = tir_compute_dtype(n);
	const struct tir_opdef *d = tir_op(n->op);
	int rc = 0;
	/* operands converted to the dtype the op computes in, and for
	 * elementwise ops broadcast to the result's shape */
	struct tir_tensor cv[TIR_MAX_PARAMS] = {{0}};
	struct tir_tensor *c = cv;
	bool convert = d->kind == TIR_KIND_ELEMWISE || d->kind == TIR_KIND_MATMUL ||
		       d->kind == TIR_KIND_NN || n->op == TIR_OP_CONCAT || n->op == TIR_OP_PAD;
	/* the storage types compute in their wide type */
	for (int i = 0; i < n->nin && !moves_only(n->op); i++)
		if (n->in[i] && is_narrow((enum tir_dtype)n->in[i]->type.dtype))
			convert = true;
	if (n->op == TIR_OP_CONCAT) {
		c = calloc(n->nin, sizeof *c);
		if (!c)
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	if (n->op == TIR_OP_SUM || n->op == TIR_OP_PROD || n->op == TIR_OP_MEAN || n->op == TIR_OP_VAR ||
	    n->op == TIR_OP_MAX || n->op == TIR_OP_MIN)
		convert = true;
	for (int i = 0; i < n->nin && !rc; i++) {
		if (!n->in[i])
			continue;
		enum tir_dtype want = cd;
		if (n->op == TIR_OP_WHERE && i == 0)
			want = TIR_DTYPE_BOOL;
		if (n->op == TIR_OP_GATHER && i == 1 && is_narrow(in[i].dtype))
			want = TIR_DTYPE_I64; /* an index */
		if (n->op == TIR_OP_MATMUL && is_narrow(in[i].dtype) && tir_dtype_is_float(cd))
			tir_tensor_ref(&c[i], &in[i]); /* widened as gemm.c packs it */
		else if (convert && !(n->op == TIR_OP_GATHER && i == 1 && !is_narrow(in[i].dtype)))
			rc = as_dtype(&in[i], want, &c[i], err);
		else
			tir_tensor_ref(&c[i], &in[i]);
		if (!rc && d->kind == TIR_KIND_ELEMWISE) {
			struct tir_tensor b = {0};
			tir_view_broadcast(&c[i], n->type.rank, n->type.shape, &b);
			tir_tensor_release(&c[i]);
			c[i] = b;
		}
	}
	if (rc)
		goto out;

	switch (d->kind) {
	case TIR_KIND_CREATE:
		switch (n->op) {
		case TIR_OP_CONST:
			rc = eval_const(n, out, err);
			break;
		case TIR_OP_INPUT:
			if (n->id >= x->ninputs_cap || !x->inputs[n->id].buf) {
				rc = tir_errf(err, TIR_EDATA, &n->loc,
					      "input '%s' has no value; give it with --input %s=FILE.npy",
					      n->input_name, n->input_name);
				break;
			}
			tir_tensor_ref(out, &x->inputs[n->id]);
			break;
		case TIR_OP_LOAD:
			rc = eval_load(n, out, err);
			break;
		default: {
			struct tir_gen gen;
			if ((rc = alloc_out(n, out, err)))
				break;
			if (tir_gen_init(&gen, n))
				rc = tir_k_gen(out, &gen); /* float: gen.c's vector paths */
			else if (n->op == TIR_OP_ZEROS || n->op == TIR_OP_ONES)
				rc = tir_k_fill(out, n->op == TIR_OP_ONES, n->op == TIR_OP_ONES, true);
			else if (n->op == TIR_OP_FULL)
				rc = tir_k_fill(out, at[1].is_int ? (double)at[1].i : at[1].f, at[1].i, at[1].is_int);
			else if (n->op == TIR_OP_EYE)
				rc = tir_k_eye(out);
			else if (n->op == TIR_OP_RAND || n->op == TIR_OP_RANDN)
				rc = tir_k_rand(out, (uint64_t)at[1].i, n->op == TIR_OP_RANDN);
			else if (n->op == TIR_OP_ARANGE) {
				double start, stop, step;
				tir_arange_params(n, &start, &stop, &step);
				rc = tir_k_arange(out, start, step, (int64_t)start, (int64_t)step);
			} else {
				TIR_ASSERT(!"creation op");
			}
			break;
		}
		}
		break;
	case TIR_KIND_ELEMWISE:
		if ((rc = alloc_out(n, out, err)))
			break;
		if (n->nin == 1)
			rc = tir_k_unary(n->op, &c[0], out, err);
		else if (n->nin == 2)
			rc = tir_k_binary(n->op, &c[0], &c[1], out, err);
		else
			rc = tir_k_ternary(n->op, &c[0], &c[1], &c[2], out, err);
		break;
	case TIR_KIND_REDUCE: {
		bool mask[TIR_MAX_RANK];
		tir_reduce_mask(n, in[0].rank, mask);
		if (!(rc = alloc_out(n, out, err)))
			rc = tir_k_reduce(n->op, convert ? &c[0] : &in[0], mask, out, err);
		break;
	}
	case TIR_KIND_MOVEMENT:
		switch (n->op) {
		case TIR_OP_RESHAPE:
		case TIR_OP_FLATTEN:
		case TIR_OP_SQUEEZE:
		case TIR_OP_UNSQUEEZE:
			rc = tir_tensor_reshape(&in[0], n->type.rank, n->type.shape, out, err);
			break;
		case TIR_OP_TRANSPOSE: {
			int perm[TIR_MAX_RANK];
			for (int i = 0; i < in[0].rank; i++)
				perm[i] = at[0].set ? tir_axis(at[0].v[i], in[0].rank) : in[0].rank - 1 - i;
			tir_view_transpose(&in[0], perm, out);
			break;
		}
		case TIR_OP_EXPAND:
			tir_view_broadcast(&in[0], n->type.rank, n->type.shape, out);
			break;
		case TIR_OP_SLICE: {
			int axis = tir_axis(at[0].i, in[0].rank);
			int64_t start, step, len;
			tir_slice_params(n, in[0].shape[axis], &start, &step, &len);
			tir_view_slice(&in[0], axis, start, step, len, out);
			break;
		}
		case TIR_OP_CAST:
			rc = tir_tensor_convert(&in[0], ot, out, err);
			break;
		case TIR_OP_CONCAT: {
			const struct tir_tensor **xs = calloc(n->nin, sizeof *xs);
			if (!xs) {
				rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
				break;
			}
			for (int i = 0; i < n->nin; i++)
				xs[i] = &c[i];
			if (!(rc = alloc_out(n, out, err)))
				rc = tir_k_concat(xs, n->nin, tir_axis(at[0].i, n->type.rank), out, err);
			free(xs);
			break;
		}
		case TIR_OP_PAD:
			if (!(rc = alloc_out(n, out, err)))
				rc = tir_k_pad(&c[0], at[0].v, at[1].is_int ? (double)at[1].i : at[1].f, out, err);
			break;
		case TIR_OP_GATHER:
			if (!(rc = alloc_out(n, out, err)))
				rc = tir_k_gather(convert ? &c[0] : &in[0], &c[1], tir_axis(at[0].i, in[0].rank), out,
						  err);
			break;
		default:
			TIR_ASSERT(!"movement op");
		}
		break;
	case TIR_KIND_MATMUL:
		rc = eval_matmul(n, &c[0], &c[1], out, err);
		break;
	case TIR_KIND_NN:
		if (n->op == TIR_OP_ATTENTION) {
			rc = eval_attention(n, c, out, err);
			break;
		}
		if ((rc = alloc_out(n, out, err)))
			break;
		switch (n->op) {
		case TIR_OP_SOFTMAX:
		case TIR_OP_LOG_SOFTMAX:
			rc = tir_k_softmax(&c[0], tir_axis(at[0].i, n->type.rank), n->op == TIR_OP_LOG_SOFTMAX,
					   out, err);
			break;
		case TIR_OP_LAYERNORM:
			rc = tir_k_layernorm(&c[0], &c[1], &c[2], at[0].f, out, err);
			break;
		case TIR_OP_RMSNORM:
			rc = tir_k_rmsnorm(&c[0], &c[1], at[0].f, out, err);
			break;
		case TIR_OP_CONV2D:
			rc = tir_k_conv2d(&c[0], &c[1], n->in[2] ? &c[2] : NULL, at[0].v, at[1].v, out, err);
			break;
		case TIR_OP_MAXPOOL2D:
		case TIR_OP_AVGPOOL2D:
			rc = tir_k_pool2d(n->op == TIR_OP_MAXPOOL2D, &c[0], at[0].v, at[1].set ? at[1].v : at[0].v,
					  out, err);
			break;
		default:
			TIR_ASSERT(!"nn op");
		}
		break;
	case TIR_KIND_DEVICE:
		rc = tir_errf(err, TIR_EUNSUPPORTED, &n->loc,
			      "%s: several devices are not supported yet", d->name);
		break;
	default:
		TIR_ASSERT(!"op kind");
	}
	if (!rc && is_narrow(ot) && out->dtype != ot && !moves_only(n->op) && n->op != TIR_OP_CONST &&
	    n->op != TIR_OP_INPUT && n->op != TIR_OP_LOAD) {
		/* a storage type: computed wide, rounded or wrapped on store */
		struct tir_tensor t;
		rc = n->op == TIR_OP_RAND ? narrow_rand(out, ot, &t, err) : tir_tensor_convert(out, ot, &t, err);
		tir_tensor_release(out);
		if (!rc)
			*out = t;
	}
out:
	for (int i = 0; i < n->nin; i++)
		tir_tensor_release(&c[i]);
	if (c != cv)
		free(c);
	if (rc) {
		tir_tensor_release(out);
		if (!err->loc.src)
			err->loc = n->loc;
		/* kernels say what went wrong; the op's name says where */
		if (strncmp(err->msg, d->name, strlen(d->name)) != 0) {
			char msg[sizeof err->msg];
			size_t k = strlen(d->name);
			memcpy(msg, d->name, k);
			memcpy(msg + k, ": ", 2);
			size_t room = sizeof msg - k - 3;
			size_t m = strnlen(err->msg, room);
			memcpy(msg + k + 2, err->msg, m);
			msg[k + 2 + m] = 0;
			memcpy(err->msg, msg, sizeof msg);
		}
	}
	return rc;
}

/* ---- a run ---- */

/* Operands of n that nobody reads any more are freed; an interior one has
 * no value to free. */
static void drop_operands(const struct tir_node *n, const bool *interior, struct tir_tensor *vals,
			  int64_t *uses)
{
	for (int k = 0; k < n->nin; k++) {
		if (!n->in[k] || (interior && interior[n->in[k]->id]))
			continue;
		uint32_t id = n->in[k]->id;
		if (--uses[id] == 0)
			tir_tensor_release(&vals[id]);
	}
}

/* Constants of at most this many bytes are made once per exec. */
#define CCONST_BYTES 64

static bool cacheable_const(const struct tir_node *n)
{
	return n->op == TIR_OP_CONST &&
	       (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype) <= CCONST_BYTES;
}

/* Constant node n's value made before, into out; false when there is none. */
static bool const_hit(const struct tir_exec *x, const struct tir_node *n, struct tir_tensor *out)
{
	int32_t s = n->id < x->ncslot ? x->cslot[n->id] - 1 : -1;
	if (s < 0 || x->cconst[s].n != n)
		return false;
	tir_tensor_ref(out, &x->cconst[s].v);
	return true;
}

/* Keep constant node n's value v for the next runs (unless out of memory). */
static void const_keep(struct tir_exec *x, const struct tir_node *n, const struct tir_tensor *v)
{
	size_t old = x->ncslot;
	if (tir_grow((void **)&x->cslot, &x->ncslot, (size_t)n->id + 1, sizeof *x->cslot))
		return;
	memset(x->cslot + old, 0, (x->ncslot - old) * sizeof *x->cslot);
	int32_t s = x->cslot[n->id] - 1;
	if (s < 0) {
		if (tir_grow((void **)&x->cconst, &x->capcconst, x->ncconst + 1, sizeof *x->cconst))
			return;
		s = (int32_t)x->ncconst++;
		x->cslot[n->id] = s + 1;
		memset(&x->cconst[s], 0, sizeof x->cconst[s]);
	} else {
		tir_tensor_release(&x->cconst[s].v); /* another node's, at a reused id */
		tir_tensor_release(&x->cconst[s].as);
	}
	x->cconst[s].n = n;
	tir_tensor_ref(&x->cconst[s].v, v);
}

/* A fused kernel converts a constant of another dtype (a literal is held
 * in f64) on every call: the converted value of cached constant n, made
 * once, or NULL. */
static const struct tir_tensor *const_as(struct tir_exec *x, const struct tir_node *n, enum tir_dtype dt)
{
	int32_t s = n->id < x->ncslot ? x->cslot[n->id] - 1 : -1;
	if (s < 0 || x->cconst[s].n != n)
		return NULL;
	struct cconst *c = &x->cconst[s];
	if (c->as.buf && c->as.dtype == dt)
		return &c->as;
	struct tir_err e = {0};
	tir_tensor_release(&c->as);
	return tir_tensor_convert(&c->v, dt, &c->as, &e) ? NULL : &c->as;
}

/* An input of g whose memory g's root may take: its last reader is g,
 * its buffer is held by this value alone and is no file's mapping, it is contiguous and of the
 * root's type, and g reads it only where it writes (tir_fused_can_overwrite);
 * -1 when none. */
static int inplace_input(const struct tir_group *g, const struct tir_tensor *vals, const int64_t *uses)
{
	for (int k = 0; k < g->nin; k++) {
		const struct tir_node *x = g->inputs[k];
		const struct tir_tensor *v = &vals[x->id];
		/* (a file's mapping is never written: tir_buf_writable) */
		if (!tir_buf_writable(v->buf) || v->dtype != (enum tir_dtype)x->type.dtype)
			continue;
		int64_t edges = 0;
		for (int j = 0; j < g->n; j++)
			for (int q = 0; q < g->nodes[j]->nin; q++)
				edges += g->nodes[j]->in[q] == x;
		if (uses[x->id] == edges && tir_tensor_is_contiguous(v) && tir_fused_can_overwrite(g, k))
			return k;
	}
	return -1;
}

/* One fused kernel: read its inputs, write its root. */
static int run_group(struct tir_exec *x, const struct tir_group *g, const bool *interior,
		     struct tir_tensor *vals, int64_t *uses, struct tir_err *err)
{
	struct tir_tensor in[64];
	const struct tir_node *r = g->root;
	if (g->nin > 64)
		return tir_errf(err, TIR_EUNSUPPORTED, &r->loc, "a fused kernel reads at most 64 values");
	for (int k = 0; k < g->nin; k++) {
		const struct tir_node *o = g->inputs[k];
		const struct tir_tensor *c = NULL;
		in[k] = vals[o->id];
		/* (borrowed from the cache, which holds it past the kernel) */
		if (g->info && in[k].dtype != g->info->dt && o->op == TIR_OP_CONST && (c = const_as(x, o, g->info->dt)))
			in[k] = *c;
	}
	struct tir_tensor *out = &vals[r->id];
	int rc = 0;
	if (g->head) {
		/* the matmul makes the root's buffer, the group finishes it */
		const struct tir_node *h = g->head;
		struct tir_tensor a = {0}, b = {0};
		rc = as_head_operand(&vals[h->in[0]->id], (enum tir_dtype)h->type.dtype, &a, err);
		if (!rc)
			rc = as_head_operand(&vals[h->in[1]->id], (enum tir_dtype)h->type.dtype, &b, err);
		if (!rc)
			rc = eval_matmul_epi(h, &a, &b, out, g, in, err);
		tir_tensor_release(&a);
		tir_tensor_release(&b);
		if (!rc)
			drop_operands(h, interior, vals, uses);
	} else {
		/* the memory planner's cheap win: an input nobody reads after
		 * this kernel, held by nothing else, takes the root */
		int k = inplace_input(g, vals, uses);
		if (k >= 0)
			tir_tensor_ref(out, &vals[g->inputs[k]->id]);
		else
			rc = tir_tensor_alloc(out, (enum tir_dtype)r->type.dtype, r->type.rank, r->type.shape, false, err);
		if (!rc)
			rc = tir_fused_eval(g, in, out, err);
	}
	if (rc) {
		tir_tensor_release(out);
		if (!err->loc.src)
			err->loc = r->loc;
		return rc;
	}
	for (int j = 0; j < g->n; j++)
		drop_operands(g->nodes[j], interior, vals, uses);
	return 0;
}

/* The structure the fuser decides on, with nodes numbered densely in
 * graph order (so the same computation made again, at other node ids, has
 * the same signature): every node's op, dtype, shape, operands, readers
 * and whether it is needed or a target.  dense[] lists the node ids. */
static int64_t *plan_signature(const struct tir_program *p, const bool *need, const int64_t *uses,
			       const bool *target, size_t *nsig, int64_t *dense, int64_t *ndense)
{
	size_t cap = 0, n = 0;
	int64_t *sig = NULL, nd = 0;
	int64_t *rank_of = malloc(sizeof *rank_of * (p->nnodes + 1));
	if (!rank_of)
		return NULL;
	for (size_t i = 0; i < p->nnodes; i++) {
		rank_of[i] = -1;
		if (!need[i] && !target[i])
			continue;
		const struct tir_node *t = p->nodes[i];
		if (tir_grow((void **)&sig, &cap, n + 8 + t->type.rank + t->nin, sizeof *sig)) {
			free(sig);
			free(rank_of);
			return NULL;
		}
		rank_of[i] = nd;
		dense[nd++] = (int64_t)i;
		sig[n++] = t->op | (int64_t)t->type.dtype << 16 | (int64_t)t->type.weak << 24 |
			   (int64_t)need[i] << 25 | (int64_t)target[i] << 26;
		sig[n++] = uses[i];
		sig[n++] = t->type.rank | (int64_t)t->nin << 8;
		for (int d = 0; d < t->type.rank; d++)
			sig[n++] = t->type.shape[d];
		for (int k = 0; k < t->nin; k++)
			sig[n++] = t->in[k] ? rank_of[t->in[k]->id] : -2;
		/* attributes (axes, perms, slices) decide fusion too */
		for (int a = 0; a < tir_op(t->op)->nattr; a++) {
			const struct tir_attr *at = &t->attr[a];
			if (tir_grow((void **)&sig, &cap, n + 4 + (size_t)(at->v ? at->n : 0), sizeof *sig)) {
				free(sig);
				free(rank_of);
				return NULL;
			}
			int64_t fb;
			memcpy(&fb, &at->f, sizeof fb);
			sig[n++] = at->set | (int64_t)at->is_int << 1 | (int64_t)at->n << 2;
			sig[n++] = at->i;
			sig[n++] = fb;
			for (int k = 0; at->v && k < at->n; k++)
				sig[n++] = at->v[k];
			uint64_t h = 1469598103934665603u; /* a string's FNV-1a */
			for (const char *c = at->s; c && *c; c++)
				h = (h ^ (unsigned char)*c) * 1099511628211u;
			sig[n++] = (int64_t)h;
		}
	}
	free(rank_of);
	*nsig = n;
	*ndense = nd;
	return sig ? sig : calloc(1, sizeof *sig);
}

/* Remember that x->plan instantiates entry e for this run. */
static void plan_bind(struct tir_exec *x, struct plan_entry *e, const int64_t *uses, const bool *target)
{
	size_t nn = x->prog->nnodes, cap = x->capplan;
	x->plan_src = NULL;
	if (tir_grow((void **)&x->plan_nodes, &cap, nn + 1, sizeof *x->plan_nodes))
		return; /* then it is found by its signature next time */
	cap = x->capplan;
	if (tir_grow((void **)&x->plan_uses, &cap, nn + 1, sizeof *x->plan_uses))
		return;
	cap = x->capplan;
	if (tir_grow((void **)&x->plan_target, &cap, nn + 1, sizeof *x->plan_target))
		return;
	x->capplan = cap;
	if (nn) { /* (an empty program has no nodes array) */
		memcpy(x->plan_nodes, x->prog->nodes, sizeof *x->plan_nodes * nn);
		memcpy(x->plan_uses, uses, sizeof *x->plan_uses * nn);
		memcpy(x->plan_target, target, nn);
	}
	x->plan_src = e;
}

/* Whether this run is the one x->plan was made or instantiated for. */
static bool plan_bound(const struct tir_exec *x, const bool *need, const int64_t *uses, const bool *target)
{
	size_t nn = x->prog->nnodes;
	return x->plan_src && x->plan.need && x->plan.nnodes == nn && nn && !memcmp(x->plan.need, need, nn) &&
	       !memcmp(x->plan_target, target, nn) && !memcmp(x->plan_uses, uses, sizeof *uses * nn) &&
	       !memcmp(x->plan_nodes, x->prog->nodes, sizeof *x->plan_nodes * nn);
}

/* Entry e's plan on this run's nodes (dense: by dense index) into x->plan. */
static int plan_instantiate(struct tir_exec *x, struct plan_entry *e, const bool *need, const int64_t *dense,
			    int64_t nd)
{
	struct tir_program *p = x->prog;
	struct tir_plan *pl = &x->plan;
	size_t nn = p->nnodes;
	pl->nnodes = nn;
	pl->group_of = malloc(sizeof *pl->group_of * (nn + 1));
	pl->interior = calloc(nn + 1, sizeof *pl->interior);
	pl->need = malloc(nn + 1);
	pl->extra_uses = calloc(nn + 1, sizeof *pl->extra_uses);
	pl->keep = calloc(nn + 1, sizeof *pl->keep);
	pl->copy = calloc(nn + 1, sizeof *pl->copy);
	pl->dup = calloc(nn + 1, sizeof *pl->dup);
	size_t ng = 0;
	for (size_t w = 0; w < e->ngroups_words; w += 3 + (size_t)e->groups[w] + (size_t)e->groups[w + 1])
		ng++;
	pl->groups = calloc(ng + 1, sizeof *pl->groups);
	if (!pl->group_of || !pl->interior || !pl->need || !pl->extra_uses || !pl->keep || !pl->copy || !pl->dup ||
	    !pl->groups)
		return -TIR_ENOMEM;
	memcpy(pl->need, need, nn);
	for (size_t i = 0; i < nn; i++)
		pl->group_of[i] = -1;
	size_t w = 0;
	for (size_t g = 0; g < ng; g++) {
		struct tir_group *gr = &pl->groups[g];
		gr->n = e->groups[w];
		gr->nin = e->groups[w + 1];
		gr->head = e->groups[w + 2] >= 0 ? p->nodes[dense[e->groups[w + 2]]] : NULL;
		gr->closed = e->closed[g];
		gr->info = &e->info[g]; /* (e outlives x->plan: it is only replaced when a plan is made) */
		gr->nodes = tir_arena_alloc(&pl->arena, sizeof *gr->nodes * (size_t)gr->n);
		gr->inputs = tir_arena_alloc(&pl->arena, sizeof *gr->inputs * (size_t)(gr->nin + 1));
		if (!gr->nodes || !gr->inputs)
			return -TIR_ENOMEM;
		w += 3;
		for (int j = 0; j < gr->n; j++)
			gr->nodes[j] = p->nodes[dense[e->groups[w++]]];
		for (int j = 0; j < gr->nin; j++)
			gr->inputs[j] = p->nodes[dense[e->groups[w++]]];
		gr->root = gr->nodes[gr->n - 1];
		pl->group_of[gr->root->id] = (int32_t)g;
	}
	pl->ngroups = (int)ng;
	/* tir_plan_finish's result, as it was for this structure */
	for (int64_t k = 0; k < nd; k++) {
		const struct plan_fin *f = &e->fin[k];
		int64_t id = dense[k];
		pl->interior[id] = f->interior;
		pl->dup[id] = f->dup;
		pl->extra_uses[id] = f->extra_uses;
		pl->keep[id] = f->keep;
		pl->copy[id] = f->copy;
	}
	if (e->nalone && !(pl->alone = calloc(nn + 1, sizeof *pl->alone)))
		return -TIR_ENOMEM;
	for (size_t k = 0; k < e->nalone; k++)
		pl->alone[dense[e->alone_at[k]]] = e->alone_why[k];
	return 0;
}

/* x->plan, just made, into entry victim (by dense index); false when
 * there is no memory for it (the plan is fine, it is just not cached). */
static bool plan_remember(struct tir_exec *x, struct plan_entry *victim, int64_t *sig, size_t nsig,
			  const int64_t *dense, int64_t nd)
{
	const struct tir_program *p = x->prog;
	const struct tir_plan *pl = &x->plan;
	size_t words = 0, nalone = 0;
	for (int g = 0; g < pl->ngroups; g++)
		words += 3 + (size_t)pl->groups[g].n + (size_t)pl->groups[g].nin;
	for (size_t i = 0; pl->alone && i < p->nnodes; i++)
		nalone += pl->alone[i] != NULL;
	int64_t *rank_of = malloc(sizeof *rank_of * (p->nnodes + 1));
	int32_t *gw = malloc(sizeof *gw * (words + 1));
	const char **closed = malloc(sizeof *closed * ((size_t)pl->ngroups + 1));
	struct tir_group_info *info = malloc(sizeof *info * ((size_t)pl->ngroups + 1));
	struct plan_fin *fin = malloc(sizeof *fin * ((size_t)nd + 1));
	int32_t *alone_at = malloc(sizeof *alone_at * (nalone + 1));
	const char **alone_why = malloc(sizeof *alone_why * (nalone + 1));
	if (!rank_of || !gw || !closed || !info || !fin || !alone_at || !alone_why) {
		free(rank_of);
		free(gw);
		free(closed);
		free(info);
		free(fin);
		free(alone_at);
		free(alone_why);
		return false;
	}
	for (int64_t k = 0; k < nd; k++) {
		int64_t id = dense[k];
		rank_of[id] = k;
		fin[k] = (struct plan_fin){.keep = pl->keep[id], .copy = pl->copy[id],
					   .extra_uses = pl->extra_uses[id], .interior = pl->interior[id],
					   .dup = pl->dup[id]};
	}
	size_t w = 0;
	for (int g = 0; g < pl->ngroups; g++) {
		const struct tir_group *gr = &pl->groups[g];
		gw[w++] = gr->n;
		gw[w++] = gr->nin;
		gw[w++] = gr->head ? (int32_t)rank_of[gr->head->id] : -1;
		for (int j = 0; j < gr->n; j++)
			gw[w++] = (int32_t)rank_of[gr->nodes[j]->id];
		for (int j = 0; j < gr->nin; j++)
			gw[w++] = (int32_t)rank_of[gr->inputs[j]->id];
		closed[g] = gr->closed;
		const struct tir_node *culprit;
		if (gr->info)
			info[g] = *gr->info;
		else
			TIR_ASSERT(!tir_group_analyze(gr, &info[g], &culprit));
	}
	for (size_t i = 0, k = 0; pl->alone && i < p->nnodes; i++)
		if (pl->alone[i]) {
			alone_at[k] = (int32_t)rank_of[i];
			alone_why[k++] = pl->alone[i];
		}
	free(rank_of);
	free(victim->sig);
	free(victim->groups);
	free(victim->closed);
	free(victim->alone_at);
	free(victim->alone_why);
	free(victim->info);
	free(victim->fin);
	*victim = (struct plan_entry){.sig = sig, .nsig = nsig, .groups = gw, .ngroups_words = words,
				      .closed = closed, .alone_at = alone_at, .alone_why = alone_why,
				      .nalone = nalone, .info = info, .fin = fin, .used = ++x->pclock};
	return true;
}

/* This run's plan (x->plan): from the cache when the structure was seen
 * (as it is when the same nodes are run again), else from the fuser (and
 * then cached). */
static int plan_for(struct tir_exec *x, const bool *need, const int64_t *uses, const bool *target,
		    bool *cached)
{
	struct tir_program *p = x->prog;
	if (plan_bound(x, need, uses, target)) {
		*cached = x->rerun = true;
		x->plan_src->used = ++x->pclock;
		return 0;
	}
	size_t nsig;
	int64_t nd = 0;
	int64_t *dense = malloc(sizeof *dense * (p->nnodes + 1));
	int64_t *sig = dense ? plan_signature(p, need, uses, target, &nsig, dense, &nd) : NULL;
	int rc = -TIR_ENOMEM;
	if (!sig)
		goto out;
	struct plan_entry *e = NULL, *victim = &x->pcache[0];
	for (int i = 0; i < 8 && !e; i++) {
		struct plan_entry *c = &x->pcache[i];
		if (c->sig && c->nsig == nsig && !memcmp(c->sig, sig, nsig * sizeof *sig))
			e = c;
		else if (!c->sig || c->used < victim->used)
			victim = c;
	}
	*cached = e != NULL;
	tir_plan_free(&x->plan);
	x->plan_src = NULL;
	if (e) {
		e->used = ++x->pclock;
		if (!(rc = plan_instantiate(x, e, need, dense, nd)))
			plan_bind(x, e, uses, target);
		goto out;
	}
	if ((rc = tir_fuse(p, need, uses, target, &x->plan)))
		goto out;
	if (plan_remember(x, victim, sig, nsig, dense, nd)) {
		sig = NULL;
		plan_bind(x, victim, uses, target);
	}
out:
	free(sig);
	free(dense);
	if (rc) {
		tir_plan_free(&x->plan);
		x->plan_src = NULL;
	}
	return rc;
}

/* One row of --profile: what ran, how long, bytes moved, flops done, in
 * how many tasks. */
static void profile_kernel(struct tir_exec *x, const struct tir_group *g, const struct tir_node *n,
			   double ms, int64_t tasks)
{
	if (tir_grow((void **)&x->prof, &x->capprof, x->nprof + 1, sizeof *x->prof))
		return;
	struct tir_kprof *k = &x->prof[x->nprof++];
	memset(k, 0, sizeof *k);
	k->ms = ms;
	k->start_ms = now_ms() - ms;
	k->tasks = tasks > 1 ? tasks : 1;
	double numel = (double)tir_type_numel(&n->type);
	k->bytes = numel * (double)tir_dtype_size((enum tir_dtype)n->type.dtype);
	int nin = g ? g->nin : n->nin;
	const bool *inner = x->plan.interior;
	for (int j = 0; j < nin; j++) {
		const struct tir_node *in = g ? g->inputs[j] : n->in[j];
		if (in && !(g && inner && inner[in->id])) /* (a generator it computes) */
			k->bytes += (double)tir_type_numel(&in->type) * (double)tir_dtype_size((enum tir_dtype)in->type.dtype);
	}
	size_t len = 0;
	if (g) {
		/* one flop per element each member makes (a reduction: per
		 * element it folds) */
		for (int j = 0; j < g->n; j++) {
			const struct tir_node *m = g->nodes[j];
			k->flops += (double)tir_type_numel(tir_op(m->op)->kind == TIR_KIND_REDUCE ? &m->in[0]->type : &m->type);
		}
		len += (size_t)snprintf(k->what, sizeof k->what, "fused[");
		for (int j = 0; j < g->nin && len < sizeof k->what; j++)
			if (inner && inner[g->inputs[j]->id] && tir_gen_is_op(g->inputs[j]->op))
				len += (size_t)snprintf(k->what + len, sizeof k->what - len, "%s ",
							tir_op(g->inputs[j]->op)->name);
		for (int j = 0; j < g->n && len < sizeof k->what; j++)
			len += (size_t)snprintf(k->what + len, sizeof k->what - len, "%s%s", j ? " " : "",
						tir_op(g->nodes[j]->op)->name);
		if (len < sizeof k->what)
			snprintf(k->what + len, sizeof k->what - len, "]");
	} else {
		snprintf(k->what, sizeof k->what, "%s", tir_op(n->op)->name);
		if (n->op == TIR_OP_MATMUL) {
			const struct tir_type *a = &n->in[0]->type;
			k->flops = 2.0 * numel * (double)a->shape[a->rank - 1];
		} else if (tir_op(n->op)->kind == TIR_KIND_REDUCE || tir_op(n->op)->kind == TIR_KIND_NN) {
			k->flops = (double)tir_type_numel(&n->in[0]->type);
		} else if (tir_op(n->op)->kind != TIR_KIND_MOVEMENT && tir_op(n->op)->kind != TIR_KIND_CREATE) {
			k->flops = numel;
		}
	}
}

/* The run of tir_exec_run when another tir computes: the targets' values
 * come back into results and named as from a local run. */
static int run_remote(struct tir_exec *x, struct tir_node **targets, size_t ntargets, size_t nprint,
		      struct tir_err *err)
{
	struct tir_remote_result res = {0};
	x->results = calloc(nprint + 1, sizeof *x->results);
	x->named = calloc(ntargets - nprint + 1, sizeof *x->named);
	res.values = calloc(ntargets + 1, sizeof *res.values);
	if (!x->results || !x->named || !res.values) {
		free(res.values);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	free(x->explain);
	free(x->remote_profile);
	x->explain = x->remote_profile = NULL;
	int rc = tir_remote_run(x->remote, x, targets, ntargets, &res, err);
	if (!rc) {
		x->stats = res.stats;
		x->explain = res.explain;
		x->remote_profile = res.profile;
		res.explain = res.profile = NULL;
	}
	for (size_t i = 0; i < ntargets; i++) {
		if (!rc) {
			struct tir_tensor *dst = i < nprint ? &x->results[i] : &x->named[i - nprint];
			rc = as_dtype(&res.values[i], (enum tir_dtype)targets[i]->type.dtype, dst, err);
		}
		tir_tensor_release(&res.values[i]);
	}
	free(res.values);
	free(res.explain);
	free(res.profile);
	if (!rc) {
		x->nresults = nprint;
		x->nnamed = ntargets - nprint;
	}
	return rc;
}

/* ---- the plan's memory, simulated before a run under a budget ---- */

struct sim {
	size_t *live;                  /* by node id: the bytes its value holds */
	int64_t *uses;                 /* a copy of the run's */
	size_t total, peak;
	size_t peak_step;              /* the position (node id) where the peak was reached */
};

static size_t value_bytes(const struct tir_node *n)
{
	return (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
}

static void sim_hold(struct sim *m, const struct tir_node *n, size_t bytes, size_t step)
{
	m->live[n->id] += bytes;
	m->total += bytes;
	if (m->total > m->peak) {
		m->peak = m->total;
		m->peak_step = step;
	}
}

static void sim_drop(struct sim *m, const struct tir_node *n, const bool *interior)
{
	for (int k = 0; k < n->nin; k++) {
		const struct tir_node *o = n->in[k];
		if (!o || (interior && interior[o->id]))
			continue;
		if (--m->uses[o->id] == 0) {
			m->total -= m->live[o->id];
			m->live[o->id] = 0;
		}
	}
}

/* Run the plan's schedule on sizes alone, as tir_exec_run runs it, up to
 * and including the step `until` (SIZE_MAX: all of it). */
static void sim_run(struct sim *m, const struct tir_program *p, const bool *need, const int64_t *uses,
		    const struct tir_plan *plan, size_t until)
{
	size_t nn = p->nnodes;
	memset(m->live, 0, nn * sizeof *m->live);
	memcpy(m->uses, uses, nn * sizeof *m->uses);
	m->total = m->peak = 0;
	m->peak_step = 0;
	for (size_t i = 0; i < nn && i <= until; i++) {
		if (!need[i] || (plan && plan->interior[i]))
			continue;
		const struct tir_node *n = p->nodes[i];
		if (plan && plan->group_of[i] >= 0) {
			const struct tir_group *g = &plan->groups[plan->group_of[i]];
			const struct tir_node *r = g->root;
			size_t bytes = value_bytes(r);
			/* an input it may write over (inplace_input) holds the root */
			for (int k = 0; !g->head && k < g->nin && bytes; k++) {
				const struct tir_node *o = g->inputs[k];
				int64_t edges = 0;
				for (int j = 0; j < g->n; j++)
					for (int q = 0; q < g->nodes[j]->nin; q++)
						edges += g->nodes[j]->in[q] == o;
				if (m->live[o->id] >= bytes && o->type.dtype == r->type.dtype &&
				    m->uses[o->id] == edges && tir_fused_can_overwrite(g, k))
					bytes = 0;
			}
			sim_hold(m, r, bytes, i);
			if (g->head)
				sim_drop(m, g->head, plan->interior);
			for (int j = 0; j < g->n; j++)
				sim_drop(m, g->nodes[j], plan->interior);
			continue;
		}
		size_t bytes = value_bytes(n);
		switch (n->op) {
		case TIR_OP_INPUT:      /* held already */
		case TIR_OP_RESHAPE:    /* views (a reshape may copy: counted low) */
		case TIR_OP_FLATTEN:
		case TIR_OP_SQUEEZE:
		case TIR_OP_UNSQUEEZE:
		case TIR_OP_TRANSPOSE:
		case TIR_OP_EXPAND:
		case TIR_OP_SLICE:
			bytes = 0;
			break;
		case TIR_OP_CAST:
			bytes = n->in[0] && n->in[0]->type.dtype == n->type.dtype ? 0 : bytes;
			break;
		default:
			break;
		}
		sim_hold(m, n, bytes, i);
		sim_drop(m, n, NULL);
	}
}

/* The most tensor memory the run would hold at once, and in *at the node
 * of the largest value held then.  It errs low, never high: views, a
 * kernel that may write over an input it is the last reader of, and what
 * kernels use inside them (packing buffers) count nothing, so a run it
 * says would pass the budget would have passed it. */
static int plan_peak(const struct tir_program *p, const bool *need, const int64_t *uses,
		     const struct tir_plan *plan, size_t *peak, const struct tir_node **at)
{
	size_t nn = p->nnodes;
	struct sim m = {.live = calloc(nn + 1, sizeof *m.live), .uses = calloc(nn + 1, sizeof *m.uses)};
	if (!m.live || !m.uses) {
		free(m.live);
		free(m.uses);
		return -1;
	}
	sim_run(&m, p, need, uses, plan, SIZE_MAX);
	*peak = m.peak;
	*at = NULL;
	if (m.peak) { /* again, to the peak: the largest value then */
		sim_run(&m, p, need, uses, plan, m.peak_step);
		size_t best = 0;
		for (size_t i = 0; i <= m.peak_step && i < nn; i++)
			if (m.live[i] && m.live[i] >= best) {
				best = m.live[i];
				*at = p->nodes[i];
			}
	}
	free(m.live);
	free(m.uses);
	return 0;
}

char *tir_exec_dot(struct tir_exec *x, const char *name, struct tir_err *err)
{
	struct tir_program *p = x->prog;
	size_t nn = p->nnodes;
	int64_t *uses = calloc(nn + 1, sizeof *uses);
	bool *need = calloc(nn + 1, sizeof *need), *target = calloc(nn + 1, sizeof *target);
	char *dot = NULL;
	struct tir_plan plan = {0};
	if (!uses || !need || !target) {
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	/* the targets as a run would have them: every print, or the name */
	if (name) {
		struct tir_binding *b = tir_program_lookup(p, name, strlen(name));
		if (!b || !b->node) {
			const char *sug = tir_program_suggest(p, name, strlen(name));
			tir_errf(err, TIR_EDATA, NULL, "no value named '%s' in the program%s%s%s", name,
				 sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
			goto out;
		}
		need[b->node->id] = target[b->node->id] = true;
		uses[b->node->id]++;
	}
	for (size_t s = 0; !name && s < p->nstmts; s++) {
		const struct tir_stmt *st = &p->stmts[s];
		for (int i = 0; st->kind == TIR_STMT_PRINT && i < st->nitems; i++) {
			need[st->items[i].node->id] = target[st->items[i].node->id] = true;
			uses[st->items[i].node->id]++;
		}
	}
	for (size_t i = nn; i-- > 0;) {
		if (!need[i])
			continue;
		const struct tir_node *n = p->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			if (!n->in[k])
				continue;
			need[n->in[k]->id] = true;
			uses[n->in[k]->id]++;
		}
	}
	if (tir_fuse(p, need, uses, target, &plan) || !(dot = tir_plan_dot(p, &plan)))
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
out:
	tir_plan_free(&plan);
	free(uses);
	free(need);
	free(target);
	return dot;
}

int tir_exec_run(struct tir_exec *x, size_t from_stmt, const char *const *names, int nnames,
		 struct tir_err *err)
{
	struct tir_program *p = x->prog;
	double t0 = now_ms();
	clear_results(x);
	memset(&x->stats, 0, sizeof x->stats);
	x->run_t0 = t0;
	net_spans_clear(x);
	x->rerun = false;
	size_t nn = p->nnodes;
	int64_t *uses = calloc(nn + 1, sizeof *uses);
	/* x->vals, kept between runs (empty): what is set is listed in made
	 * and released after, not all nn of them */
	struct tir_tensor *vals = NULL;
	uint32_t *made = malloc(sizeof *made * (nn + 1));
	size_t nmade = 0, oldvals = x->capvals;
	struct tir_node **targets = NULL;
	size_t ntargets = 0, captargets = 0, capheaders = 0;
	int rc = 0;
	if (!tir_grow((void **)&x->vals, &x->capvals, nn + 1, sizeof *x->vals)) {
		memset(x->vals + oldvals, 0, (x->capvals - oldvals) * sizeof *x->vals);
		vals = x->vals;
	}
	if (!uses || !vals || !made || (x->keep && kept_sync(x))) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	/* the targets: every print from from_stmt on, then the names */
	for (size_t s = from_stmt; s < p->nstmts; s++) {
		const struct tir_stmt *st = &p->stmts[s];
		for (int i = 0; st->kind == TIR_STMT_PRINT && i < st->nitems; i++) {
			if (tir_grow((void **)&targets, &captargets, ntargets + 1, sizeof *targets) ||
			    tir_grow((void **)&x->headers, &capheaders, ntargets + 1, sizeof *x->headers)) {
				rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
				goto done;
			}
			x->headers[ntargets] = st->items[i].header;
			targets[ntargets++] = st->items[i].node;
		}
	}
	size_t nprint = ntargets;
	x->nresults = 0;
	for (int i = 0; i < nnames; i++) {
		struct tir_binding *b = tir_program_lookup(p, names[i], strlen(names[i]));
		if (!b || !b->node) {
			const char *sug = tir_program_suggest(p, names[i], strlen(names[i]));
			rc = tir_errf(err, TIR_EDATA, NULL, "no value named '%s' in the program%s%s%s", names[i],
				      sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
			goto done;
		}
		if (tir_grow((void **)&targets, &captargets, ntargets + 1, sizeof *targets)) {
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			goto done;
		}
		targets[ntargets++] = b->node;
	}
	if (x->remote) {
		rc = run_remote(x, targets, ntargets, nprint, err);
		goto done;
	}
	/* what the targets need, and how often each value is read */
	bool *need = calloc(nn + 1, sizeof *need);
	bool *target = calloc(nn + 1, sizeof *target);
	struct tir_plan plan = {0};
	bool planned = false;
	if (!need || !target) {
		free(need);
		free(target);
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ntargets; i++) {
		need[targets[i]->id] = true;
		target[targets[i]->id] = true;
		uses[targets[i]->id]++;
	}
	for (size_t i = nn; i-- > 0;) {
		if (!need[i])
			continue;
		const struct tir_node *n = p->nodes[i];
		if (x->keep && x->kept[i].buf) {
			/* computed before: a value to read, not a node to run */
			tir_tensor_ref(&vals[i], &x->kept[i]);
			made[nmade++] = (uint32_t)i;
			need[i] = false;
			target[i] = true;
			continue;
		}
		if (x->keep && keepable(p, n))
			target[i] = true; /* materialized, so that it can be kept */
		for (int k = 0; k < n->nin; k++) {
			if (!n->in[k])
				continue;
			need[n->in[k]->id] = true;
			uses[n->in[k]->id]++;
		}
	}
	if (!x->no_fuse) {
		if (plan_for(x, need, uses, target, &x->stats.plan_cached)) {
			free(need);
			free(target);
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			goto done;
		}
		planned = true;
		plan = x->plan;
		/* a value recomputed in several kernels: its operands are read
		 * by each */
		for (size_t i = 0; i < nn; i++)
			uses[i] += plan.extra_uses[i];
		free(x->explain); /* made when asked for: tir_exec_explain */
		x->explain = NULL;
	}
	free(target);
	/* under a budget (tir serve --max-memory): a run whose plan would
	 * pass what is left is refused before it allocates anything */
	size_t limit = tir_mem_limit();
	if (limit) {
		const struct tir_node *at = NULL;
		size_t peak = 0, held = tir_mem_current(), left = limit > held ? limit - held : 0;
		if (plan_peak(p, need, uses, planned ? &plan : NULL, &peak, &at)) {
			free(need);
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			goto done;
		}
		x->stats.plan_peak_bytes = peak;
		if (peak > left) {
			char a[32], b[32], c[32], d[32];
			free(need);
			rc = tir_errf(err, TIR_EBUDGET, at ? &at->loc : NULL,
				      "%s%sthe batch would hold %s at its peak (%s of it this value, the largest "
				      "then); the memory budget has %s left of %s (--max-memory)",
				      at ? tir_op(at->op)->name : "", at ? ": " : "", tir_bytes_str(peak, a),
				      tir_bytes_str(at ? value_bytes(at) : 0, b), tir_bytes_str(left, c),
				      tir_bytes_str(limit, d));
			goto done;
		}
	}
	x->nprof = 0;
	tir_mem_reset_peak();
	size_t base = tir_mem_current();
	/* the kernels stop inside too (the pool's tasks), and a kernel that
	 * stopped is no result: the flag is looked at after each node */
	volatile sig_atomic_t *outer_stop = tir_pool_set_stop(x->intr);
	double t1 = now_ms();
	x->stats.plan_ms = t1 - t0;
	x->run_t0 = t0;
	x->plan_t1 = t1;
	if (x->trace)
		tir_pool_trace(true);
	struct tir_progress prog = {.step = TIR_STEP_KERNEL};
	for (size_t i = 0; x->progress && i < nn; i++) /* the kernels as the loop below counts them */
		prog.n += need[i] && !(planned && plan.interior[i]) &&
			  ((planned && plan.group_of[i] >= 0) ||
			   (p->nodes[i]->op != TIR_OP_CONST && p->nodes[i]->op != TIR_OP_INPUT));
	for (size_t i = 0; i < nn && !rc; i++) {
		if (!need[i] || (planned && plan.interior[i]))
			continue;
		const struct tir_node *n = p->nodes[i];
		if (x->intr && *x->intr) { /* at the op it would run next */
			rc = tir_errf(err, TIR_EINTERRUPT, &n->loc, "interrupted");
			break;
		}
		if (x->progress && ((planned && plan.group_of[i] >= 0) ||
				    (n->op != TIR_OP_CONST && n->op != TIR_OP_INPUT))) {
			prog.k++;
			prog.step_ms = now_ms();
			x->progress(x->progress_ctx, &prog);
		}
		double tk = x->profile || x->trace ? now_ms() : 0;
		int64_t t0k = tir_pool_offered();
		made[nmade++] = (uint32_t)i;
		if (planned && plan.group_of[i] >= 0) {
			rc = run_group(x, &plan.groups[plan.group_of[i]], plan.interior, vals, uses, err);
			if (!rc && x->intr && *x->intr) /* cut short: not a value */
				rc = tir_errf(err, TIR_EINTERRUPT, &n->loc, "interrupted");
			if (rc && err->code == TIR_EBUDGET && !err->loc.src) /* said at the op that made the value */
				err->loc = n->loc;
			if ((x->profile || x->trace) && !rc)
				profile_kernel(x, &plan.groups[plan.group_of[i]], n, now_ms() - tk,
					       tir_pool_offered() - t0k);
			const struct tir_group *gr = &plan.groups[plan.group_of[i]];
			x->stats.nops += gr->n + (gr->head != NULL);
			for (int k = 0; k < gr->nin; k++) /* generators it computed */
				x->stats.nops += plan.interior[gr->inputs[k]->id] && tir_gen_is_op(gr->inputs[k]->op);
			x->stats.nkernels++;
			if (!rc && x->keep && keepable(p, n))
				tir_tensor_ref(&x->kept[i], &vals[i]);
			continue;
		}
		bool small_const = x->rerun && cacheable_const(n);
		if (small_const && const_hit(x, n, &vals[i])) {
			if (x->keep && keepable(p, n))
				tir_tensor_ref(&x->kept[i], &vals[i]);
			continue;
		}
		struct tir_tensor in[TIR_MAX_PARAMS];
		struct tir_tensor *inp = in;
		if (n->nin > TIR_MAX_PARAMS) {
			inp = calloc(n->nin, sizeof *inp);
			if (!inp) {
				rc = tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
				break;
			}
		}
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				inp[k] = vals[n->in[k]->id];
		struct tir_err e = {0};
		rc = eval_node(x, n, inp, &vals[i], &e);
		if (!rc && x->intr && *x->intr) /* cut short: not a value */
			rc = tir_errf(&e, TIR_EINTERRUPT, &n->loc, "interrupted");
		if (rc && e.code == TIR_EBUDGET && !e.loc.src)
			e.loc = n->loc;
		if (rc)
			*err = e;
		else if (small_const)
			const_keep(x, n, &vals[i]);
		else if ((x->profile || x->trace) && n->op != TIR_OP_CONST && n->op != TIR_OP_INPUT)
			profile_kernel(x, NULL, n, now_ms() - tk, tir_pool_offered() - t0k);
		if (!rc && x->keep && keepable(p, n))
			tir_tensor_ref(&x->kept[i], &vals[i]);
		bool op = n->op != TIR_OP_CONST && n->op != TIR_OP_INPUT;
		x->stats.nops += op;
		x->stats.nkernels += op;
		drop_operands(n, NULL, vals, uses);
		if (inp != in)
			free(inp);
	}
	tir_pool_set_stop(outer_stop);
	if (x->trace) {
		tir_pool_trace(false);
		free(x->spans);
		x->spans = tir_pool_trace_take(&x->nspans);
		x->run_t1 = now_ms();
	}
	free(need);
	x->stats.run_ms = now_ms() - t1;
	x->stats.peak_bytes = tir_mem_peak() > base ? tir_mem_peak() - base : 0;
	x->stats.mapped_bytes = tir_mem_mapped_peak();
	if (rc)
		goto done;
	/* hand the targets over (printed values in their node's dtype) */
	x->results = calloc(nprint + 1, sizeof *x->results);
	x->named = calloc((size_t)nnames + 1, sizeof *x->named);
	if (!x->results || !x->named) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ntargets && !rc; i++) {
		const struct tir_node *n = targets[i];
		struct tir_tensor *dst = i < nprint ? &x->results[i] : &x->named[i - nprint];
		rc = as_dtype(&vals[n->id], (enum tir_dtype)n->type.dtype, dst, err);
		if (i < nprint)
			x->nresults = i + 1;
		else
			x->nnamed = i - nprint + 1;
	}
	x->nresults = nprint;
	x->nnamed = (size_t)nnames;
done:
	for (size_t k = 0; k < nmade; k++)
		tir_tensor_release(&vals[made[k]]);
	free(made);
	free(uses);
	free(targets);
	if (rc)
		clear_results(x);
	return rc;
}

size_t tir_exec_nresults(const struct tir_exec *x)
{
	return x->nresults;
}

const char *tir_exec_header(const struct tir_exec *x, size_t i)
{
	return i < x->nresults ? x->headers[i] : NULL;
}

const struct tir_tensor *tir_exec_result(const struct tir_exec *x, size_t i)
{
	return i < x->nresults ? &x->results[i] : NULL;
}

const struct tir_tensor *tir_exec_named(const struct tir_exec *x, size_t i)
{
	return i < x->nnamed ? &x->named[i] : NULL;
}

const struct tir_exec_stats *tir_exec_stats(const struct tir_exec *x)
{
	return &x->stats;
}

void tir_exec_set_fuse(struct tir_exec *x, bool fuse)
{
	x->no_fuse = !fuse;
}

void tir_exec_set_trace(struct tir_exec *x, bool on)
{
	x->trace = on;
}

void tir_exec_set_progress(struct tir_exec *x, tir_progress_fn fn, void *ctx)
{
	x->progress = fn;
	x->progress_ctx = ctx;
}

void tir_exec_progress(struct tir_exec *x, const struct tir_progress *p)
{
	if (x->progress)
		x->progress(x->progress_ctx, p);
}

bool tir_exec_tracing(const struct tir_exec *x)
{
	return x->trace;
}

/* s is copied; its text taken over (freed if it cannot be kept). */
void tir_exec_trace_span(struct tir_exec *x, struct tir_net_span *s)
{
	if (tir_grow((void **)&x->net, &x->capnet, x->nnet + 1, sizeof *x->net)) {
		free(s->text);
		return;
	}
	x->net[x->nnet++] = *s;
	s->text = NULL;
}

/* A remote run's trace (tir_exec_trace_json): the client's spans as lib/net noted them. */
static void trace_remote(const struct tir_exec *x, json_t *ev, double origin)
{
	static const char *const track[] = {"tir run", "network: requests to the server",
					    "server (its own timings)"};
	for (int t = 1; t < 3; t++)
		json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
						    "pid", 1, "tid", t, "args", "name", track[t]));
	for (size_t i = 0; i < x->nnet; i++) {
		const struct tir_net_span *s = &x->net[i];
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
						    (s->t1_ms - s->t0_ms) * 1e3, "pid", 1, "tid", s->track, "args", args));
	}
}

char *tir_exec_trace_json(const struct tir_exec *x, double parse_ms)
{
	/* Chrome's trace event format: complete events ("X", microseconds
	 * from the start of the parse), thread names as metadata ("M"):
	 * tid 0 the run (parse, plan, each kernel), tid 1 + k pool slot k's
	 * spans (slot 0: the thread that ran the kernels, helping) */
	json_t *ev = json_array();
	double origin = x->run_t0 - parse_ms;
#define US(ms) json_real((ms) * 1e3)
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M", "pid", 1,
					    "tid", 0, "args", "name", "tir run"));
	json_array_append_new(ev, json_pack("{s:s, s:s, s:o, s:o, s:i, s:i}", "name", "parse", "ph", "X", "ts",
					    US(0), "dur", US(parse_ms), "pid", 1, "tid", 0));
	if (x->remote) {
		trace_remote(x, ev, origin);
		goto out;
	}
	json_array_append_new(ev, json_pack("{s:s, s:s, s:o, s:o, s:i, s:i, s:{s:b}}", "name", "plan", "ph", "X",
					    "ts", US(x->run_t0 - origin), "dur", US(x->plan_t1 - x->run_t0), "pid", 1,
					    "tid", 0, "args", "cached", x->stats.plan_cached));
	for (size_t i = 0; i < x->nprof; i++) {
		const struct tir_kprof *k = &x->prof[i];
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:{s:f, s:f, s:I}}",
						    "name", k->what, "cat", "kernel", "ph", "X", "ts",
						    US(k->start_ms - origin), "dur", US(k->ms), "pid", 1, "tid", 0,
						    "args", "mib", k->bytes / 1048576.0, "gflop", k->flops / 1e9,
						    "tasks", (json_int_t)k->tasks));
	}
	bool named[TIR_POOL_MAX + 1] = {false};
	for (size_t i = 0; i < x->nspans; i++) {
		const struct tir_pool_span *sp = &x->spans[i];
		if (!named[sp->slot]) {
			char nm[32];
			snprintf(nm, sizeof nm, sp->slot ? "pool worker %d" : "pool: the running thread", sp->slot);
			json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph",
							    "M", "pid", 1, "tid", 1 + sp->slot, "args", "name", nm));
			named[sp->slot] = true;
		}
		double t0 = (double)sp->t0_ns / 1e6, t1 = (double)sp->t1_ns / 1e6;
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:{s:I}}", "name", "tasks",
						    "cat", "pool", "ph", "X", "ts", US(t0 - origin), "dur",
						    US(t1 - t0), "pid", 1, "tid", 1 + sp->slot, "args", "tasks",
						    (json_int_t)sp->tasks));
	}
out:
#undef US
	json_t *root = json_pack("{s:o, s:s}", "traceEvents", ev, "displayTimeUnit", "ms");
	char *s = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	json_decref(root);
	return s;
}

void tir_exec_set_profile(struct tir_exec *x, bool on)
{
	x->profile = on;
}

char *tir_exec_profile(const struct tir_exec *x)
{
	if (x->remote)
		return x->remote_profile ? strdup(x->remote_profile) : NULL;
	struct tir_str out = {0};
	tir_str_addf(&out, "%-4s %-44s %10s %10s %9s %7s\n", "#", "kernel", "ms", "MiB", "GFLOP/s",
		     "tasks");
	double tot = 0;
	for (size_t i = 0; i < x->nprof; i++) {
		const struct tir_kprof *k = &x->prof[i];
		tot += k->ms;
		char gf[32] = "-";
		if (k->flops > 0 && k->ms > 0)
			snprintf(gf, sizeof gf, "%.2f", k->flops / (k->ms * 1e6));
		tir_str_addf(&out, "%-4zu %-44.44s %10.3f %10.2f %9s %7lld\n", i + 1, k->what, k->ms,
			     k->bytes / (1024.0 * 1024.0), gf, (long long)k->tasks);
	}
	tir_str_addf(&out, "%zu kernels, %.3f ms; plan %s; vector path: %s; gemm: %s; blas: %s; threads: %d\n",
		     x->nprof, tot,
		     x->no_fuse ? "none (--no-fuse)" : x->stats.plan_cached ? "from the cache" : "made",
		     tir_vector_path(), tir_gemm_info(), tir_blas_info(), tir_pool_threads());
	return out.oom ? (tir_str_free(&out), NULL) : out.s;
}

const char *tir_exec_explain(struct tir_exec *x)
{
	if (x->remote)
		return x->explain ? x->explain : "";
	if (x->no_fuse)
		return "--no-fuse: one reference kernel per op\n";
	if (!x->explain && x->plan.need)
		x->explain = tir_plan_explain(x->prog, &x->plan);
	return x->explain ? x->explain : "";
}

/* ---- for lib/net ---- */

void tir_exec_clear_inputs(struct tir_exec *x)
{
	clear_results(x);
	for (size_t i = 0; i < x->ninputs_cap; i++)
		tir_tensor_release(&x->inputs[i]);
}

void tir_exec_set_remote(struct tir_exec *x, struct tir_remote *r)
{
	x->remote = r;
}

const struct tir_tensor *tir_exec_input_value(const struct tir_exec *x, uint32_t id)
{
	return id < x->ninputs_cap && x->inputs[id].buf ? &x->inputs[id] : NULL;
}

struct tir_program *tir_exec_program(const struct tir_exec *x)
{
	return x->prog;
}

bool tir_exec_keeping(const struct tir_exec *x)
{
	return x->keep;
}

uint64_t tir_exec_input_gen(const struct tir_exec *x)
{
	return x->input_gen;
}

bool tir_exec_fusing(const struct tir_exec *x)
{
	return !x->no_fuse;
}

bool tir_exec_profiling(const struct tir_exec *x)
{
	return x->profile;
}

volatile sig_atomic_t *tir_exec_interrupt_flag(const struct tir_exec *x)
{
	return x->intr;
}
