/*
 * cpu.c — the CPU of this process as a device: runs a batch by computing
 * exactly the nodes its targets need, in graph order (a topological
 * order), each kernel of the plan the fuser made (or one reference kernel
 * per op, --no-fuse), freeing each intermediate after its last use; plans
 * are cached by the structure of what a run needs.  Times each kernel for
 * --profile and --trace.  No printing here: values are handed back.
 */
#include "device.h"
#include "../exec/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Plans kept by the structure of what a run needs: a graph run again is
 * not planned again (the REPL, a server receiving the same batch). */
#define PCACHE 8

struct cpu {
	struct tir_device dev;
	struct tir_program *prog;      /* the program of the run under way (or the last) */
	char *explain;                 /* the last run's plan as text */
	struct plan_entry {
		uint8_t *sig;          /* see plan_signature */
		size_t nsig;           /* its bytes */
		int32_t *groups;       /* the plan by dense index: per group n, nin, head (-1: none), then indices */
		size_t ngroups_words;
		const char **closed;
		int32_t *alone_at;     /* nodes (dense) the fuser left alone, and why */
		const char **alone_why;
		size_t nalone;
		struct tir_group_info *info; /* by group: the groups analyzed */
		/* what tir_plan_finish made: by dense index, interior (1) and
		 * dup (2); the few nodes with a score or reads beyond the
		 * graph's edges, by dense index (a byte a node, not 24) */
		uint8_t *fin_flags;
		struct plan_fin {
			int32_t at, extra_uses;
			int64_t keep, copy;
		} *fin;
		size_t nfin;
		uint64_t used;
	} pcache[PCACHE];
	struct tir_plan plan;          /* this run's plan, made or instantiated */
	/* the view of the graph the run under way planned with (NULL: none),
	 * from which its small kernels are prepared (tir_fused_prepare_view) */
	const struct tir_fview *run_view;
	/* by group of x->plan: its kernel as prepared by a run of it, kept
	 * for the next runs of the same plan (tir_fused_keep), or NULL;
	 * freed when the plan changes */
	struct tir_fused **fused;
	size_t nfused;
	/* the entry x->plan instantiates (or NULL), for which run: the
	 * program's nodes then (they never change once made), and what the
	 * run needed (with x->plan.need).  The same again is x->plan as it is,
	 * with no signature to make. */
	struct plan_entry *plan_src;
	bool rerun;                    /* this run is that one again */
	struct tir_node **plan_nodes;
	int32_t *plan_uses;
	bool *plan_target;
	size_t capplan;
	/* by node id, kept empty between runs: a run's values; lent[i]: vals[i]
	 * is a cached constant's value lent, no reference of its own (a
	 * program of scalars reads thousands: no count taken and given back,
	 * by atomics, for each at each run) */
	struct tir_tensor *vals;
	uint8_t *lent;                 /* LENT, or LENT_FILLED: written into vals (lent_fill) */
	size_t capvals, caplent;
	/* by node id, kept all false between runs (caplent of them): vals[i]
	 * holds a value this run (its own or lent).  A literal only kernels
	 * read has none (the kernel reads its node): its vals[i] is never
	 * touched, nor its page */
	bool *held;
	/* by node id: values put here for this run (cpu_put) */
	struct tir_tensor *given;
	size_t ngiven;
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
	double plan_t0, plan_t1, run_t1; /* the last run's plan's start and end, its end (tir_now_ms) */
	struct tir_pool_span *spans;   /* the pool's, of the last traced run */
	size_t nspans;
	struct tir_kprof {
		char what[112];
		double start_ms;          /* when it started (tir_now_ms) */
		double ms, bytes, flops;
		int64_t tasks;            /* offered to the pool (1: ran on the caller alone) */
	} *prof;
	size_t nprof, capprof;
};

static int epilogue_range(void *ctx, int64_t i0, int64_t n)
{
	return tir_fused_range(ctx, i0, n);
}

/* matmul node n, whose group g finishes each block of the result as it
 * is made; out is the group root's value.  gin: the group's inputs, the
 * head's slot to be filled here. */
static int eval_matmul_epi(const struct tir_node *n, struct tir_tensor *a0, struct tir_tensor *b0,
			   struct tir_tensor *out, const struct tir_group *g, struct tir_tensor *gin,
			   struct tir_err *err)
{
	struct tir_tensor av = {0}, bv = {0}, o = {0};
	int rank;
	int64_t oshape[TIR_MAX_RANK];
	tir_matmul_views(a0, b0, &av, &bv, &rank, oshape);
	int rc = tir_tensor_alloc(&o, tir_dtype_wide((enum tir_dtype)n->type.dtype), rank, oshape, false, err);
	struct tir_fused *f = NULL;
	if (!rc) {
		for (int k = 0; k < g->nin; k++)
			if (g->inputs[k] == n)
				gin[k] = o; /* borrowed: the epilogue works in place */
		f = tir_fused_prepare(g, gin, &o, err);
		if (!f)
			rc = -err->code;
	}
	if (!rc)
		rc = tir_k_matmul_epi(&av, &bv, &o, epilogue_range, f, err);
	tir_fused_free(f);
	if (!rc)
		rc = tir_tensor_reshape(&o, g->root->type.rank, g->root->type.shape, out, err);
	tir_tensor_release(&av);
	tir_tensor_release(&bv);
	tir_tensor_release(&o);
	return rc;
}

/* ---- a run ---- */

/* Operands of n that nobody reads any more are freed; an interior one has
 * no value to free. */
static void drop_operands(const struct tir_node *n, const bool *interior, const uint8_t *lent, const bool *held,
			  struct tir_tensor *vals, int32_t *uses)
{
	for (int k = 0; k < n->nin; k++) {
		if (!n->in[k] || (interior && interior[n->in[k]->id]))
			continue;
		uint32_t id = n->in[k]->id;
		if (--uses[id] == 0 && held[id] && !lent[id]) /* (a lent one is emptied after the run) */
			tir_tensor_release(&vals[id]);
	}
}

/* A literal the plan's kernels read from its node (deferred by cpu_run):
 * none of this run's values is made of it until something else reads it
 * (literal_value).  A weak scalar, not a target nor kept. */
static bool deferred_literal(const struct tir_node *n, const bool *held)
{
	return n->op == TIR_OP_CONST && n->type.weak && !held[n->id];
}

/* x->lent[id]: a cached constant's value lent to the run, written into
 * x->vals or not. */
enum { LENT = 1, LENT_FILLED = 2 };

/* Constants of at most this many bytes are made once per exec. */
#define CCONST_BYTES 64

static bool cacheable_const(const struct tir_node *n)
{
	return n->op == TIR_OP_CONST &&
	       (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype) <= CCONST_BYTES;
}

/* Constant node n's value made before, lent (no reference: x->lent says
 * so); false when there is none.  Written into x->vals now when fill (a
 * target, a value kept), else when something other than a kernel reads
 * it (lent_fill): a kernel reads the cache's (group_input), and a program
 * of scalars lends thousands at each run. */
static bool const_hit(struct cpu *x, const struct tir_node *n, bool fill)
{
	int32_t s = n->id < x->ncslot ? x->cslot[n->id] - 1 : -1;
	if (s < 0 || x->cconst[s].n != n)
		return false;
	if (fill)
		x->vals[n->id] = x->cconst[s].v;
	x->lent[n->id] = fill ? LENT_FILLED : LENT;
	x->held[n->id] = true;
	return true;
}

/* The cache's value of lent constant id. */
static const struct tir_tensor *lent_value(const struct cpu *x, uint32_t id)
{
	return &x->cconst[x->cslot[id] - 1].v;
}

/* x->vals[id] holding its value, for a reader of values: a lent constant's
 * written there now. */
static void lent_fill(struct cpu *x, uint32_t id)
{
	if (x->lent[id] == LENT) {
		x->vals[id] = *lent_value(x, id);
		x->lent[id] = LENT_FILLED;
	}
}

/* Keep constant node n's value v for the next runs (unless out of memory). */
static void const_keep(struct cpu *x, const struct tir_node *n, const struct tir_tensor *v)
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
static const struct tir_tensor *const_as(struct cpu *x, const struct tir_node *n, enum tir_dtype dt)
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

/* The edges from g's members into each of its inputs (edges[k] for
 * g->inputs[k], which are in graph order, as the members are: a group
 * of any length costs n log n at most): in few when there are at most 64,
 * else new (free it); NULL when out of memory. */
static int64_t *input_edges(const struct tir_group *g, int64_t *few)
{
	int64_t *e = g->nin <= 64 ? few : malloc(sizeof *e * (size_t)g->nin);
	if (!e)
		return NULL;
	memset(e, 0, sizeof *e * (size_t)g->nin);
	/* below: the inputs made before member j (its operands are among
	 * them), searched from there down */
	for (int j = 0, below = 0; j < g->n; j++) {
		while (below < g->nin && g->inputs[below]->id < g->nodes[j]->id)
			below++;
		for (int q = 0; q < g->nodes[j]->nin; q++) {
			int k = tir_node_find(g->inputs, below, g->nodes[j]->in[q]);
			if (k >= 0)
				e[k]++;
		}
	}
	return e;
}

/* An input of g whose memory g's root may take: its last reader is g,
 * its buffer is held by this value alone and is no file's mapping, it is contiguous and of the
 * root's type, and g reads it only where it writes (tir_fused_can_overwrite);
 * -1 when none. */
static int inplace_input(const struct tir_group *g, const struct tir_tensor *const *in,
			 const struct tir_tensor *vals, const uint8_t *lent, const int32_t *uses)
{
	int64_t few[64], *edges = NULL;
	int found = -1;
	for (int k = 0; k < g->nin && found < 0; k++) {
		/* (a file's mapping is never written: tir_buf_writable; nor a
		 * cached constant lent, held by the cache alone; a literal
		 * with no value (in[k] NULL) has no memory) */
		if (!in[k])
			continue;
		const struct tir_node *x = g->inputs[k];
		const struct tir_tensor *v = &vals[x->id];
		if (lent[x->id] || v->dtype != (enum tir_dtype)x->type.dtype || !tir_type_equal(&x->type, &g->root->type) ||
		    !tir_buf_writable(v->buf))
			continue;
		/* the edges counted once some input may be taken (a group of
		 * scalars reads thousands of literals, none of them) */
		if (!edges && !(edges = input_edges(g, few)))
			break;
		if (uses[x->id] == edges[k] && tir_tensor_is_contiguous(v) && tir_fused_can_overwrite(g, k))
			found = k;
	}
	if (edges != few)
		free(edges);
	return found;
}

/* The kernels kept for x->plan's groups, freed (the plan is changing). */
static void fused_forget(struct cpu *x)
{
	for (size_t g = 0; g < x->nfused; g++)
		tir_fused_free(x->fused[g]);
	free(x->fused);
	x->fused = NULL;
	x->nfused = 0;
}

/* Literal o, deferred (deferred_literal), made now for a reader that
 * reads values (not a kernel of the plan): as tir_node_eval makes it. */
static int literal_value(struct cpu *x, const struct tir_node *o, uint32_t *made, size_t *nmade,
			 struct tir_err *err)
{
	x->held[o->id] = true;
	made[(*nmade)++] = o->id;
	return tir_node_eval(o, NULL, NULL, &x->vals[o->id], err);
}

/* The reads of g's inputs by its members done (f's counts, by input:
 * reads[k] of node ids[k]): the values nobody reads any more freed, as
 * drop_operands over each member would. */
static void drop_inputs(struct cpu *x, const struct tir_group *g, const int32_t *reads, const int32_t *ids,
			const bool *interior, int32_t *uses)
{
	for (int k = 0; k < g->nin; k++) {
		uint32_t id = (uint32_t)ids[k];
		if (interior[id] || !reads[k])
			continue;
		uses[id] -= reads[k];
		if (uses[id] == 0 && x->held[id] && !x->lent[id])
			tir_tensor_release(&x->vals[id]);
	}
}

/* Group gi of the plan (g) over inputs *in[] (NULL: none made, a literal
 * or a generator the kernel makes) into out: its kernel kept from an
 * earlier run of the plan when it still fits them, else prepared (and
 * kept when it can be).  *dropped: the inputs' reads were counted off
 * (drop_inputs; else the caller does it member by member). */
static int run_fused(struct cpu *x, int gi, const struct tir_group *g, const struct tir_tensor *const *in,
		     struct tir_tensor *out, const bool *interior, int32_t *uses, bool *dropped, struct tir_err *err)
{
	struct tir_fused **slot = (size_t)gi < x->nfused ? &x->fused[gi] : NULL;
	if (slot && *slot && !tir_fused_rebind_at(*slot, in, out)) {
		tir_fused_free(*slot);
		*slot = NULL;
	}
	struct tir_fused *f = slot && *slot ? *slot : tir_fused_prepare_view(g, x->run_view, &x->plan, in, out, err);
	if (!f)
		return -err->code;
	int rc = tir_fused_run(f, err);
	const int32_t *ids, *reads = rc ? NULL : tir_fused_input_reads(f, &ids);
	if (reads) {
		drop_inputs(x, g, reads, ids, interior, uses);
		*dropped = true;
	}
	if (slot && !*slot && !rc && tir_fused_keep(f))
		*slot = f;
	else if (!slot || *slot != f)
		tir_fused_free(f);
	return rc;
}

/* The node id of member j of g, of its input k (from the plan, else the node). */
static inline uint32_t member_id(const struct tir_group *g, int j)
{
	return g->ids ? g->ids[j] : g->nodes[j]->id;
}

static inline uint32_t input_id(const struct tir_group *g, int k)
{
	return g->input_ids ? g->input_ids[k] : g->inputs[k]->id;
}

/* The value of g's input k, o, for its kernel: o's own, or (for a cached
 * constant of another dtype) its converted value, borrowed from the
 * cache, which holds it past the kernel; NULL when o has none (a literal
 * the kernel reads from its node, a generator it computes).  (By the
 * plan's ids: o itself is read only when it has a value; a program of
 * scalars has tens of thousands of literal inputs, each a node apart.) */
static const struct tir_tensor *group_input(struct cpu *x, const struct tir_group *g, int k, const bool *interior,
					     int *gens)
{
	uint32_t id = input_id(g, k);
	if (interior[id])
		*gens += tir_gen_is_op(g->inputs[k]->op); /* a generator it computes */
	if (!x->held[id])
		return NULL;
	const struct tir_node *o = g->inputs[k];
	const struct tir_tensor *v = x->lent[id] ? lent_value(x, id) : &x->vals[id], *c;
	if (g->info && v->dtype != g->info->dt && o->op == TIR_OP_CONST && (c = const_as(x, o, g->info->dt)))
		return c;
	return v;
}

/* One fused kernel (group gi of the plan): read its inputs, write its
 * root; *gens: the generators it computed (its inputs never stored). */
static int run_group(struct cpu *x, int gi, const struct tir_group *g, const bool *interior,
		     struct tir_tensor *vals, int32_t *uses, uint32_t *made, size_t *nmade, int *gens,
		     struct tir_err *err)
{
	const struct tir_node *r = g->root;
	struct tir_tensor *out = &vals[r->id];
	int rc = 0;
	bool dropped = false;
	if (g->head) {
		/* the matmul makes the root's buffer, the group finishes it;
		 * the values it reads: a kernel reads as many as its group does */
		const struct tir_node *h = g->head;
		struct tir_tensor few[64], *in = few, a = {0}, b = {0};
		if (g->nin > 64 && !(in = malloc(sizeof *in * (size_t)g->nin)))
			return tir_errf(err, TIR_ENOMEM, &r->loc, "out of memory");
		for (int k = 0; k < 2 && !rc; k++)
			if (deferred_literal(h->in[k], x->held))
				rc = literal_value(x, h->in[k], made, nmade, err);
			else
				lent_fill(x, h->in[k]->id);
		for (int k = 0; k < g->nin; k++) {
			const struct tir_tensor *v = group_input(x, g, k, interior, gens);
			in[k] = v ? *v : (struct tir_tensor){0};
		}
		if (!rc)
			rc = tir_matmul_operand(&vals[h->in[0]->id], (enum tir_dtype)h->type.dtype, &a, err);
		if (!rc)
			rc = tir_matmul_operand(&vals[h->in[1]->id], (enum tir_dtype)h->type.dtype, &b, err);
		if (!rc)
			rc = eval_matmul_epi(h, &a, &b, out, g, in, err);
		tir_tensor_release(&a);
		tir_tensor_release(&b);
		if (!rc)
			drop_operands(h, interior, x->lent, x->held, vals, uses);
		if (in != few)
			free(in);
	} else {
		/* the values it reads, by pointer (a kernel reads as many as its
		 * group does: a program of scalars, tens of thousands) */
		const struct tir_tensor *few[64], **in = few;
		if (g->nin > 64 && !(in = malloc(sizeof *in * (size_t)g->nin)))
			return tir_errf(err, TIR_ENOMEM, &r->loc, "out of memory");
		for (int k = 0; k < g->nin; k++)
			in[k] = group_input(x, g, k, interior, gens);
		/* the memory planner's cheap win: an input nobody reads after
		 * this kernel, held by nothing else, takes the root */
		int k = inplace_input(g, in, vals, x->lent, uses);
		if (k >= 0)
			tir_tensor_ref(out, &vals[g->inputs[k]->id]);
		else
			rc = tir_tensor_alloc(out, (enum tir_dtype)r->type.dtype, r->type.rank, r->type.shape, false, err);
		if (!rc)
			rc = run_fused(x, gi, g, in, out, interior, uses, &dropped, err);
		if (in != few)
			free(in);
	}
	if (rc) {
		tir_tensor_release(out);
		if (!err->loc.src)
			err->loc = r->loc;
		return rc;
	}
	for (int j = 0; j < g->n && !dropped; j++)
		drop_operands(g->nodes[j], interior, x->lent, x->held, vals, uses);
	return 0;
}

/* Signature bytes: a growing buffer of varints (7 bits a byte, the high
 * bit set on all but the last). */
struct sigbuf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

/* Room for n more bytes in b, at least: false when out of memory (b is
 * then empty for good). */
static bool sig_room(struct sigbuf *b, size_t n)
{
	if (b->oom)
		return false;
	size_t cap = b->cap < 4096 ? 4096 : b->cap * 2;
	cap = cap < b->n + n ? b->n + n : cap;
	uint8_t *p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		b->n = 0;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static inline void sig_put(struct sigbuf *b, uint64_t v)
{
	if (b->n + 10 > b->cap && !sig_room(b, 10))
		return;
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

/* The structure the fuser decides on, with nodes numbered densely in
 * graph order (so the same computation made again, at other node ids, has
 * the same signature): every node's op, dtype, shape, operands, readers
 * and whether it is needed or a target, read from v (p's view), and the
 * attributes of the ops that have some, from the node.  dense[] lists the
 * node ids, rank_of[] (by node id) the dense index of each node listed
 * (-1 for the others; plan_remember reads it too).  As varints, an operand by how far back it is: a few bytes a
 * node, not a few words (a program of 100,000 statements: 0.8 MiB, not 8,
 * made and kept with its plan).  The fields each node has follow from
 * those before it (rank, operands, the op's attributes), so equal bytes
 * are an equal structure (its first two words pack fields the sizes of
 * which are bounded, the last one unbounded: a scalar op is 6 bytes or so).
 * returns: new (*nsig bytes), NULL when out of memory. */
static uint8_t *plan_signature(const struct tir_program *p, const struct tir_fview *v, const bool *need,
			       const int32_t *uses, const bool *target, size_t *nsig, uint32_t *dense, int32_t *rank_of,
			       int64_t *ndense)
{
	struct sigbuf b = {0};
	int64_t nd = 0;
	const struct tir_opdef *defs[TIR_OP_COUNT] = {0}; /* each op's row, looked up once */
	_Static_assert(TIR_OP_COUNT <= 256 && TIR_MAX_RANK < 16, "the signature's packed fields");
	/* (room for the common case: 8 bytes a node, trimmed after) */
	if (!sig_room(&b, 8 * p->nnodes + 64))
		return NULL;
	for (size_t i = 0; i < p->nnodes && !b.oom; i++) {
		rank_of[i] = -1;
		if (!need[i] && !target[i])
			continue;
		const struct tir_fnode *f = &v->n[i];
		const struct tir_type *ty = &v->types[f->type].t;
		if (!defs[f->op])
			defs[f->op] = tir_op((enum tir_op)f->op);
		const struct tir_opdef *def = defs[f->op];
		rank_of[i] = (int32_t)nd;
		dense[nd++] = (uint32_t)i;
		sig_put(&b, (uint64_t)f->op | (uint64_t)ty->weak << 8 | (uint64_t)need[i] << 9 |
				    (uint64_t)target[i] << 10 | (uint64_t)ty->dtype << 11);
		sig_put(&b, (uint64_t)uses[i]);
		sig_put(&b, (uint64_t)ty->rank | (uint64_t)f->nin << 4);
		for (int d = 0; d < ty->rank; d++)
			sig_put(&b, (uint64_t)ty->shape[d]);
		/* (0: none; rank_of -1, a node not in it, nd + 1 back) */
		for (int k = 0; k < f->nin; k++) {
			uint32_t o = v->edges[f->in + (uint32_t)k];
			sig_put(&b, o != TIR_FN_NONE ? (uint64_t)(nd - 1 - rank_of[o]) + 1 : 0);
		}
		/* attributes (axes, perms, slices) decide fusion too */
		const struct tir_node *t = def->nattr ? p->nodes[i] : NULL;
		for (int a = 0; a < def->nattr; a++) {
			const struct tir_attr *at = &t->attr[a];
			uint64_t fb;
			memcpy(&fb, &at->f, sizeof fb);
			sig_put(&b, (uint64_t)at->set | (uint64_t)at->is_int << 1 | (uint64_t)at->n << 2);
			sig_put(&b, (uint64_t)at->i);
			sig_put(&b, fb);
			for (int k = 0; at->v && k < at->n; k++)
				sig_put(&b, (uint64_t)at->v[k]);
			uint64_t h = 1469598103934665603u; /* a string's FNV-1a */
			for (const char *c = at->s; c && *c; c++)
				h = (h ^ (unsigned char)*c) * 1099511628211u;
			sig_put(&b, h);
		}
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*nsig = b.n;
	*ndense = nd;
	uint8_t *t = realloc(b.p, b.n ? b.n : 1); /* (kept with the plan: trimmed) */
	return t ? t : b.p;
}

/* Remember that x->plan instantiates entry e for this run. */
static void plan_bind(struct cpu *x, struct plan_entry *e, const int32_t *uses, const bool *target)
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
		memcpy(x->plan_uses, uses, sizeof *uses * nn);
		memcpy(x->plan_nodes, x->prog->nodes, sizeof *x->plan_nodes * nn);
		memcpy(x->plan_target, target, nn);
	}
	x->plan_src = e;
}

/* Whether uses is what plan_bind kept of it. */
static bool same_uses(const int32_t *kept, const int32_t *uses, size_t nn)
{
	int32_t diff = 0;
	for (size_t i = 0; i < nn; i++)
		diff |= kept[i] ^ uses[i];
	return !diff;
}

/* Whether this run is the one x->plan was made or instantiated for. */
static bool plan_bound(const struct cpu *x, const bool *need, const int32_t *uses, const bool *target)
{
	size_t nn = x->prog->nnodes;
	return x->plan_src && x->plan.need && x->plan.nnodes == nn && nn && !memcmp(x->plan.need, need, nn) &&
	       !memcmp(x->plan_target, target, nn) && same_uses(x->plan_uses, uses, nn) &&
	       !memcmp(x->plan_nodes, x->prog->nodes, sizeof *x->plan_nodes * nn);
}

/* Entry e's plan on this run's nodes (dense: by dense index) into x->plan. */
static int plan_instantiate(struct cpu *x, struct plan_entry *e, const bool *need, const uint32_t *dense,
			    int64_t nd)
{
	struct tir_program *p = x->prog;
	struct tir_plan *pl = &x->plan;
	size_t nn = p->nnodes;
	pl->nnodes = nn;
	pl->group_at = tir_node_sparse(sizeof *pl->group_at * (nn + 1));
	pl->interior = calloc(nn + 1, sizeof *pl->interior);
	pl->need = malloc(nn + 1);
	pl->extra_uses = tir_node_sparse(sizeof *pl->extra_uses * (nn + 1));
	pl->keep = tir_node_sparse(sizeof *pl->keep * (nn + 1));
	pl->copy = tir_node_sparse(sizeof *pl->copy * (nn + 1));
	pl->dup = calloc(nn + 1, sizeof *pl->dup);
	size_t ng = 0;
	for (size_t w = 0; w < e->ngroups_words; w += 3 + (size_t)e->groups[w] + (size_t)e->groups[w + 1])
		ng++;
	pl->groups = calloc(ng + 1, sizeof *pl->groups);
	if (!pl->group_at || !pl->interior || !pl->need || !pl->extra_uses || !pl->keep || !pl->copy || !pl->dup ||
	    !pl->groups)
		return -TIR_ENOMEM;
	memcpy(pl->need, need, nn);
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
		uint32_t *ids = tir_arena_alloc(&pl->arena, sizeof *ids * (size_t)(gr->n + gr->nin + 1));
		if (!gr->nodes || !gr->inputs || !ids)
			return -TIR_ENOMEM;
		w += 3;
		for (int j = 0; j < gr->n + gr->nin; j++) {
			ids[j] = dense[e->groups[w++]];
			if (j < gr->n)
				gr->nodes[j] = p->nodes[ids[j]];
			else
				gr->inputs[j - gr->n] = p->nodes[ids[j]];
		}
		gr->ids = ids;
		gr->input_ids = ids + gr->n;
		gr->root = gr->nodes[gr->n - 1];
		pl->group_at[gr->root->id] = (int32_t)g + 1;
	}
	pl->ngroups = (int)ng;
	/* tir_plan_finish's result, as it was for this structure */
	for (int64_t k = 0; k < nd; k++) {
		pl->interior[dense[k]] = e->fin_flags[k] & 1;
		pl->dup[dense[k]] = e->fin_flags[k] >> 1;
	}
	pl->scored = e->nfin > 0; /* (at worst: keep and copy are read for nothing) */
	for (size_t k = 0; k < e->nfin; k++) {
		const struct plan_fin *f = &e->fin[k];
		uint32_t id = dense[f->at];
		pl->extra_uses[id] = f->extra_uses;
		pl->extra |= f->extra_uses != 0;
		pl->keep[id] = f->keep;
		pl->copy[id] = f->copy;
	}
	if (e->nalone && !(pl->alone = calloc(nn + 1, sizeof *pl->alone)))
		return -TIR_ENOMEM;
	for (size_t k = 0; k < e->nalone; k++)
		pl->alone[dense[e->alone_at[k]]] = e->alone_why[k];
	return 0;
}

/* x->plan, just made, into entry victim (by dense index: dense and
 * rank_of as plan_signature made them); false when there is no memory for
 * it (the plan is fine, it is just not cached). */
static bool plan_remember(struct cpu *x, struct plan_entry *victim, uint8_t *sig, size_t nsig,
			  const uint32_t *dense, const int32_t *rank_of, int64_t nd)
{
	const struct tir_program *p = x->prog;
	const struct tir_plan *pl = &x->plan;
	size_t words = 0, nalone = 0;
	size_t ibytes = 0; /* the groups' by-member arrays, after their infos */
	for (int g = 0; g < pl->ngroups; g++) {
		words += 3 + (size_t)pl->groups[g].n + (size_t)pl->groups[g].nin;
		ibytes += (tir_group_info_bytes(pl->groups[g].n) + 7) / 8 * 8;
	}
	for (size_t i = 0; pl->alone && i < p->nnodes; i++)
		nalone += pl->alone[i] != NULL;
	size_t nfin = 0;
	for (int64_t k = 0; k < nd; k++)
		nfin += (pl->scored && (pl->keep[dense[k]] || pl->copy[dense[k]])) || pl->extra_uses[dense[k]];
	int32_t *gw = malloc(sizeof *gw * (words + 1));
	const char **closed = malloc(sizeof *closed * ((size_t)pl->ngroups + 1));
	struct tir_group_info *info = malloc(sizeof *info * ((size_t)pl->ngroups + 1) + ibytes);
	char *imem = info ? (char *)(info + pl->ngroups + 1) : NULL;
	uint8_t *fin_flags = malloc((size_t)nd + 1);
	struct plan_fin *fin = malloc(sizeof *fin * (nfin + 1));
	int32_t *alone_at = malloc(sizeof *alone_at * (nalone + 1));
	const char **alone_why = malloc(sizeof *alone_why * (nalone + 1));
	if (!gw || !closed || !info || !fin || !fin_flags || !alone_at || !alone_why) {
		free(fin_flags);
		free(gw);
		free(closed);
		free(info);
		free(fin);
		free(alone_at);
		free(alone_why);
		return false;
	}
	for (int64_t k = 0, f = 0; k < nd; k++) {
		uint32_t id = dense[k];
		fin_flags[k] = (uint8_t)(pl->interior[id] | pl->dup[id] << 1);
		if ((pl->scored && (pl->keep[id] || pl->copy[id])) || pl->extra_uses[id])
			fin[f++] = (struct plan_fin){.at = (int32_t)k, .extra_uses = pl->extra_uses[id],
						   .keep = pl->keep[id], .copy = pl->copy[id]};
	}
	size_t w = 0;
	for (int g = 0; g < pl->ngroups; g++) {
		const struct tir_group *gr = &pl->groups[g];
		gw[w++] = gr->n;
		gw[w++] = gr->nin;
		gw[w++] = gr->head ? rank_of[gr->head->id] : -1;
		for (int j = 0; j < gr->n; j++)
			gw[w++] = rank_of[member_id(gr, j)];
		for (int j = 0; j < gr->nin; j++)
			gw[w++] = rank_of[input_id(gr, j)];
		closed[g] = gr->closed;
		const struct tir_node *culprit;
		if (gr->info)
			info[g] = *gr->info;
		tir_group_info_place(&info[g], imem, gr->n);
		imem += (tir_group_info_bytes(gr->n) + 7) / 8 * 8;
		if (gr->info) {
			memcpy(info[g].via, gr->info->via, sizeof *info[g].via * (size_t)gr->n);
			memcpy(info[g].cls, gr->info->cls, (size_t)gr->n);
		} else {
			TIR_ASSERT(!tir_group_analyze(gr, &info[g], &culprit));
		}
	}
	for (size_t i = 0, k = 0; pl->alone && i < p->nnodes; i++)
		if (pl->alone[i]) {
			alone_at[k] = rank_of[i];
			alone_why[k++] = pl->alone[i];
		}
	free(victim->sig);
	free(victim->groups);
	free(victim->closed);
	free(victim->alone_at);
	free(victim->alone_why);
	free(victim->info);
	free(victim->fin);
	free(victim->fin_flags);
	*victim = (struct plan_entry){.sig = sig, .nsig = nsig, .groups = gw, .ngroups_words = words,
				      .closed = closed, .alone_at = alone_at, .alone_why = alone_why,
				      .nalone = nalone, .info = info, .fin = fin, .nfin = nfin, .fin_flags = fin_flags,
				      .used = ++x->pclock};
	return true;
}

/* This run's plan (x->plan): from the cache when the structure was seen
 * (as it is when the same nodes are run again), else from the fuser (and
 * then cached, unless once: tir_exec_set_once). */
static int plan_for(struct cpu *x, const struct tir_fview *view, const bool *need, const int32_t *uses,
		    const bool *target, bool once, bool *cached)
{
	struct tir_program *p = x->prog;
	if (plan_bound(x, need, uses, target)) {
		*cached = x->rerun = true;
		x->plan_src->used = ++x->pclock;
		return 0;
	}
	fused_forget(x);
	size_t nsig = 0;
	int64_t nd = 0;
	struct tir_fview own = {0};
	/* once, no later run finds the plan: it is neither signed nor kept */
	uint32_t *dense = once ? NULL : malloc(sizeof *dense * (p->nnodes + 1));
	int32_t *rank_of = once ? NULL : malloc(sizeof *rank_of * (p->nnodes + 1));
	uint8_t *sig = NULL;
	int rc = -TIR_ENOMEM;
	if (!view && !tir_fview_make(p, &own))
		view = &own;
	if (dense && rank_of && view)
		sig = plan_signature(p, view, need, uses, target, &nsig, dense, rank_of, &nd);
	if (!view || (!once && !sig))
		goto out;
	struct plan_entry *e = NULL, *victim = &x->pcache[0];
	for (int i = 0; sig && i < PCACHE && !e; i++) {
		struct plan_entry *c = &x->pcache[i];
		if (c->sig && c->nsig == nsig && !memcmp(c->sig, sig, nsig))
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
	if ((rc = tir_fuse_view(p, view, need, uses, target, &x->plan)))
		goto out;
	if (sig && plan_remember(x, victim, sig, nsig, dense, rank_of, nd)) {
		sig = NULL;
		plan_bind(x, victim, uses, target);
	}
out:
	free(sig);
	free(dense);
	free(rank_of);
	tir_fview_free(&own);
	if (rc) {
		tir_plan_free(&x->plan);
		x->plan_src = NULL;
	} else if (x->plan.ngroups && (x->fused = calloc((size_t)x->plan.ngroups, sizeof *x->fused))) {
		x->nfused = (size_t)x->plan.ngroups; /* (none: nothing is kept) */
	}
	return rc;
}

/* One row of --profile: what ran, how long, bytes moved, flops done, in
 * how many tasks. */
/* A linalg op's flops, by LAPACK's leading terms per matrix (m x k,
 * n = min(m, k)), times the batch: an estimate for --profile's GFLOP/s. */
static double linalg_flops(const struct tir_node *n)
{
	const struct tir_ntype *a = &n->in[0]->type;
	double m = (double)a->shape[a->rank - 2], k = (double)a->shape[a->rank - 1], mn = m < k ? m : k;
	double batch = 1, rhs = 0;
	for (int i = 0; i + 2 < a->rank; i++)
		batch *= (double)a->shape[i];
	if (n->op == TIR_OP_SOLVE || n->op == TIR_OP_LSTSQ) {
		const struct tir_ntype *b = &n->in[1]->type;
		rhs = b->rank == a->rank - 1 ? 1 : (double)b->shape[b->rank - 1];
		batch = (double)tir_type_numel(&n->type) / (k * rhs > 0 ? k * rhs : 1);
	}
	double f;
	switch (n->op) {
	case TIR_OP_SOLVE: f = 2.0 / 3 * m * m * m + 2 * m * m * rhs; break;
	case TIR_OP_INV: f = 8.0 / 3 * m * m * m; break;
	case TIR_OP_DET: case TIR_OP_SLOGDET: f = 2.0 / 3 * m * m * m; break;
	case TIR_OP_CHOLESKY: f = 1.0 / 3 * m * m * m; break;
	case TIR_OP_QR: f = 4 * m * k * mn - 4.0 / 3 * mn * mn * mn; break;
	case TIR_OP_EIGH: f = 9 * m * m * m; break;
	default: f = 4 * m * k * mn + 8 * mn * mn * mn + 2 * m * k * (rhs > 0 ? rhs : mn); break; /* svd, lstsq, pinv */
	}
	return batch * f;
}

static void profile_kernel(struct cpu *x, const struct tir_group *g, const struct tir_node *n,
			   double ms, int64_t tasks)
{
	if (tir_grow((void **)&x->prof, &x->capprof, x->nprof + 1, sizeof *x->prof))
		return;
	struct tir_kprof *k = &x->prof[x->nprof++];
	memset(k, 0, sizeof *k);
	k->ms = ms;
	k->start_ms = tir_now_ms() - ms;
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
		 * element it folds); from the run's view when there is one (a
		 * kernel of 100,000 scalar statements: their nodes not walked
		 * again) */
		const struct tir_fview *v = g->ids ? x->run_view : NULL;
		for (int j = 0; j < g->n; j++) {
			const struct tir_fnode *f = v ? &v->n[g->ids[j]] : NULL;
			uint32_t o = f && f->kind == TIR_KIND_REDUCE && f->nin ? v->edges[f->in] : TIR_FN_NONE;
			if (f && (f->kind != TIR_KIND_REDUCE || o != TIR_FN_NONE)) {
				k->flops += (double)v->types[o != TIR_FN_NONE ? v->n[o].type : f->type].numel;
				continue;
			}
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
			const struct tir_ntype *a = &n->in[0]->type;
			k->flops = 2.0 * numel * (double)a->shape[a->rank - 1];
		} else if (n->op == TIR_OP_CONV2D) {
			/* a multiply-add per output element and filter tap */
			const struct tir_ntype *w = &n->in[1]->type;
			k->flops = 2.0 * numel * (double)w->shape[1] * (double)w->shape[2] *
				   (double)w->shape[3];
		} else if (n->op == TIR_OP_ATTENTION) {
			/* its two products: q k^T, and the scores @ v */
			const struct tir_ntype *q = &n->in[0]->type, *kk = &n->in[1]->type;
			double dv = (double)n->type.shape[n->type.rank - 1];
			double lk = (double)kk->shape[kk->rank - 2], d = (double)q->shape[q->rank - 1];
			k->flops = dv > 0 ? 2.0 * numel / dv * lk * (d + dv) : 0;
		} else if (tir_op(n->op)->kind == TIR_KIND_LINALG) {
			k->flops = linalg_flops(n);
		} else if (tir_op(n->op)->kind == TIR_KIND_REDUCE || tir_op(n->op)->kind == TIR_KIND_NN) {
			k->flops = (double)tir_type_numel(&n->in[0]->type);
		} else if (tir_op(n->op)->kind != TIR_KIND_MOVEMENT && tir_op(n->op)->kind != TIR_KIND_CREATE) {
			k->flops = numel;
		}
	}
}

/* A run's array of n bytes, zeroed: from 512 KiB (the read counts of a
 * program of some 130,000 nodes, 4 bytes each) huge pages of its own, kept for the next
 * run when freed (tir_node_pages), a few faults where it took one a page.
 * Freed with run_array_free(p, n). */
static void *run_array(size_t n)
{
	return tir_node_pages(n);
}

static void run_array_free(void *p, size_t n)
{
	tir_node_pages_free(p, n);
}

/* ---- the plan's memory, simulated before a run under a budget ---- */

struct sim {
	const struct tir_fview *v;     /* the graph's view: the nodes are not read */
	size_t *live;                  /* by node id: the bytes its value holds */
	int32_t *uses;                 /* a copy of the run's */
	int32_t *kof;                  /* by node id: its index among the inputs of the
					* group being run, or -1 (made when first needed:
					* a group of scalars never needs it) */
	bool oom;                      /* kof could not be made */
	size_t total, peak;
	size_t peak_step;              /* the position (node id) where the peak was reached */
	size_t peak_scratch;           /* of the peak, a kernel's scratch (sim_scratch) */
	uint32_t peak_kernel;          /* and that kernel's node */
};

static size_t value_bytes(const struct tir_node *n)
{
	return (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
}

/* value_bytes of node id, from the view */
static size_t view_bytes(const struct tir_fview *v, uint32_t id)
{
	return (size_t)v->types[v->n[id].type].numel * tir_dtype_size((enum tir_dtype)v->n[id].dt);
}

static void sim_hold(struct sim *m, uint32_t id, size_t bytes, size_t step)
{
	m->live[id] += bytes;
	m->total += bytes;
	if (m->total > m->peak) {
		m->peak = m->total;
		m->peak_step = step;
		m->peak_scratch = 0;
	}
}

/* The scratch node id's kernel needs at least while it runs (packing
 * buffers: tir_matmul_least, tir_conv2d_least, tir_attention_least),
 * counted at its step and let go after it. */
static void sim_scratch(struct sim *m, uint32_t id, size_t step)
{
	const struct tir_fview *v = m->v;
	const struct tir_fnode *f = &v->n[id];
	bool attn = f->op == TIR_OP_ATTENTION;
	if ((f->op != TIR_OP_MATMUL && f->op != TIR_OP_CONV2D && !attn) || f->nin < 2 + attn)
		return;
	uint32_t a = v->edges[f->in], b = v->edges[f->in + 1], c = attn ? v->edges[f->in + 2] : a;
	if (a == TIR_FN_NONE || b == TIR_FN_NONE || c == TIR_FN_NONE)
		return;
	const struct tir_type *ta = &v->types[v->n[a].type].t, *tb = &v->types[v->n[b].type].t,
			      *to = &v->types[f->type].t;
	size_t s = attn ? tir_attention_least(ta, tb, &v->types[v->n[c].type].t)
		   : f->op == TIR_OP_MATMUL ? tir_matmul_least(ta, tb, to) : tir_conv2d_least(ta, tb, to);
	if (s && m->total + s > m->peak) {
		m->peak = m->total + s;
		m->peak_step = step;
		m->peak_scratch = s;
		m->peak_kernel = id;
	}
}

static void sim_drop(struct sim *m, uint32_t id, const bool *interior)
{
	const uint32_t *e = m->v->edges + m->v->n[id].in;
	for (int k = 0; k < m->v->n[id].nin; k++) {
		uint32_t o = e[k];
		if (o == TIR_FN_NONE || (interior && interior[o]))
			continue;
		if (--m->uses[o] == 0) {
			m->total -= m->live[o];
			m->live[o] = 0;
		}
	}
}

/* input_edges, from the view: for each input k of g, the edges from its
 * members (e[k]), and whether a member reads it where g's root could not
 * be written over it (e[g->nin + k] 1: a member that is no reduction and
 * not computed over the whole domain from memory, tir_fused_can_overwrite's
 * test of the readers, made here in the same pass over the view; left 0
 * when g has no analysis).  In few when g has at most 32 inputs, else
 * new; NULL when out of memory. */
static int64_t *sim_input_edges(struct sim *m, const struct tir_group *g, int64_t *few)
{
	if (!m->kof) {
		size_t nn = m->v->nnodes;
		if (!(m->kof = malloc(sizeof *m->kof * (nn + 1)))) {
			m->oom = true;
			return NULL;
		}
		memset(m->kof, 0xff, sizeof *m->kof * (nn + 1));
	}
	int64_t *e = g->nin <= 32 ? few : malloc(sizeof *e * 2 * (size_t)g->nin);
	if (!e)
		return NULL;
	memset(e, 0, sizeof *e * 2 * (size_t)g->nin);
	const struct tir_group_info *info = g->info;
	for (int k = 0; k < g->nin; k++)
		m->kof[input_id(g, k)] = k;
	for (int j = 0; j < g->n; j++) {
		uint32_t id = member_id(g, j);
		const uint32_t *oe = m->v->edges + m->v->n[id].in;
		bool blocks = info && m->v->n[id].kind != TIR_KIND_REDUCE &&
			      !(info->cls[j] == TIR_FC_FULL && info->via[j] == -1);
		for (int q = 0; q < m->v->n[id].nin; q++)
			if (oe[q] != TIR_FN_NONE && m->kof[oe[q]] >= 0) {
				e[m->kof[oe[q]]]++;
				e[g->nin + m->kof[oe[q]]] |= blocks;
			}
	}
	for (int k = 0; k < g->nin; k++)
		m->kof[input_id(g, k)] = -1;
	return e;
}

/* tir_fused_can_overwrite(g, k), from the view and the edges
 * sim_input_edges counted (root the node i): one pass over g's members for
 * all its inputs, not one a candidate. */
static bool sim_overwrites(const struct sim *m, const struct tir_group *g, int k, uint32_t i, const int64_t *edges)
{
	if (!g->info)
		return tir_fused_can_overwrite(g, k);
	const struct tir_type *x = &m->v->types[m->v->n[input_id(g, k)].type].t;
	const struct tir_type *r = &m->v->types[m->v->n[i].type].t;
	return !g->head && g->info->cls[g->n - 1] == TIR_FC_FULL && x->dtype == r->dtype && x->rank == r->rank &&
	       !memcmp(x->shape, r->shape, sizeof *r->shape * (size_t)r->rank) && !edges[g->nin + k];
}

/* Run the plan's schedule on sizes alone, as tir_exec_run runs it, up to
 * and including the step `until` (SIZE_MAX: all of it). */
static void sim_run(struct sim *m, const bool *need, const int32_t *uses, const struct tir_plan *plan,
		    size_t until)
{
	const struct tir_fview *v = m->v;
	size_t nn = v->nnodes;
	memset(m->live, 0, nn * sizeof *m->live);
	memcpy(m->uses, uses, nn * sizeof *m->uses);
	m->total = m->peak = m->peak_scratch = 0;
	m->peak_step = 0;
	for (uint32_t i = 0; i < nn && i <= until; i++) {
		if (!need[i] || (plan && plan->interior[i]))
			continue;
		if (plan && plan->group_at[i]) {
			const struct tir_group *g = &plan->groups[plan->group_at[i] - 1];
			size_t bytes = view_bytes(v, i);
			/* an input it may write over (inplace_input) holds the root
			 * (its edges counted once some input could) */
			int64_t few[64], *edges = NULL;
			bool any = false; /* an input holds bytes */
			for (int k = 0; k < g->nin; k++) {
				uint32_t o = input_id(g, k);
				any |= m->live[o] > 0;
				if (g->head || !bytes || m->live[o] < bytes || v->n[o].dt != v->n[i].dt)
					continue;
				if (!edges && !(edges = sim_input_edges(m, g, few)))
					break;
				if (m->uses[o] == edges[k] && sim_overwrites(m, g, k, i, edges))
					bytes = 0;
			}
			if (edges != few)
				free(edges);
			sim_hold(m, i, bytes, i);
			if (g->head)
				sim_scratch(m, g->head->id, i);
			if (g->head)
				sim_drop(m, g->head->id, plan->interior);
			/* its members' reads of its inputs: none held bytes (literals
			 * read from their nodes), none will (each input's bytes are
			 * held at its own step, before): their reads change nothing
			 * the simulation looks at, so a group of scalar statements is
			 * not walked again member by member */
			for (int j = 0; j < g->n && any; j++)
				sim_drop(m, member_id(g, j), plan->interior);
			continue;
		}
		size_t bytes = view_bytes(v, i);
		const struct tir_fnode *f = &v->n[i];
		uint32_t x = f->nin ? v->edges[f->in] : TIR_FN_NONE;
		if (f->op == TIR_OP_INPUT)      /* held already */
			bytes = 0;
		else if (plan && f->op == TIR_OP_CONST && v->types[f->type].t.weak) /* read from its node (cpu_run) */
			bytes = 0;
		else if (f->flags & TIR_FN_VIEW) /* views (a reshape may copy: counted low) */
			bytes = 0;
		else if (f->op == TIR_OP_CAST && x != TIR_FN_NONE && v->n[x].dt == f->dt)
			bytes = 0;
		sim_hold(m, i, bytes, i);
		sim_scratch(m, i, i);
		sim_drop(m, i, NULL);
	}
}

/* The most memory the run would hold at once, and, when that is more
 * than left, in *at the node of the largest value held then (else NULL):
 * its tensors, and at a matmul's or a conv2d's step the least scratch
 * its kernel needs (sim_scratch).  It errs low, never high: views, a
 * kernel that may write over an input it is the last reader of, and
 * scratch beyond the least count nothing, so a run it says would pass the
 * budget would have passed it. */
static int plan_peak(const struct tir_program *p, const struct tir_fview *v, const bool *need,
		     const int32_t *uses, const struct tir_plan *plan, size_t left, size_t *peak,
		     const struct tir_node **at, size_t *scratch)
{
	size_t nn = p->nnodes;
	/* both arrays in one block: at 100,000 nodes 1.6 MB, one huge page
	 * where two arrays of their own took one each */
	size_t nl = sizeof(size_t) * (nn + 1), nu = sizeof(int32_t) * (nn + 1);
	/* (or in the pages of the plan's block its passes wrote and gave back) */
	void *lent = plan ? tir_plan_scratch(plan, nl + nu) : NULL;
	void *mem = lent ? lent : run_array(nl + nu);
	if (!mem)
		return -1;
	struct sim m = {.v = v, .live = mem, .uses = (int32_t *)((char *)mem + nl)};
	sim_run(&m, need, uses, plan, SIZE_MAX);
	*peak = m.peak;
	*at = NULL;
	/* at the kernel whose scratch passes what is left, where the values
	 * alone would not */
	*scratch = m.peak > left && m.peak - m.peak_scratch <= left ? m.peak_scratch : 0;
	if (*scratch) {
		*at = p->nodes[m.peak_kernel];
	} else if (m.peak > left) { /* again, to the peak: the largest value then */
		sim_run(&m, need, uses, plan, m.peak_step);
		size_t best = 0;
		for (size_t i = 0; i <= m.peak_step && i < nn; i++)
			if (m.live[i] && m.live[i] >= best) {
				best = m.live[i];
				*at = p->nodes[i];
			}
	}
	if (!lent)
		run_array_free(mem, nl + nu);
	free(m.kof);
	return m.oom ? -1 : 0;
}

/* ---- the device ---- */

static struct cpu *cpu_of(const struct tir_device *d)
{
	return (struct cpu *)d;
}

static const char *cpu_name(const struct tir_device *d)
{
	(void)d;
	return "cpu";
}

static int cpu_upload(struct tir_device *d, struct tir_exec *x, uint32_t id, struct tir_err *err)
{
	(void)d, (void)x, (void)id, (void)err;
	return 0; /* read where x holds it */
}

static bool cpu_holds(const struct tir_device *d, const struct tir_exec *x, uint32_t id)
{
	(void)d;
	return id < x->nkept && x->kept[id].buf;
}

static int cpu_put(struct tir_device *d, struct tir_exec *x, uint32_t id, const struct tir_tensor *v,
		   struct tir_err *err)
{
	struct cpu *c = cpu_of(d);
	return tir_values_put(&c->given, &c->ngiven, x, id, v, err);
}

static void cpu_clear(struct tir_device *d)
{
	tir_values_clear(cpu_of(d)->given, cpu_of(d)->ngiven);
}

static int cpu_fetch(struct tir_device *d, struct tir_exec *x, uint32_t id, struct tir_tensor *out,
		     struct tir_err *err)
{
	if (!cpu_holds(d, x, id))
		return tir_errf(err, TIR_EDATA, NULL, "cpu holds no value of node %u", (unsigned)id);
	tir_tensor_ref(out, &x->kept[id]);
	return 0;
}

/* The value of node i a batch here reads, not runs: computed before (a
 * name's, kept), or moved here (put); NULL: none. */
static const struct tir_tensor *cpu_have(const struct cpu *c, const struct tir_exec *x, size_t i)
{
	return x->keep && x->kept[i].buf ? &x->kept[i] : i < c->ngiven && c->given[i].buf ? &c->given[i] : NULL;
}

struct cpu_run_ctx {
	const struct cpu *c;
	const struct tir_exec *x;
};

/* The needs-walk's held: a value cpu_have finds. */
static bool cpu_held(const void *ctx, uint32_t id)
{
	const struct cpu_run_ctx *h = ctx;
	return cpu_have(h->c, h->x, id) != NULL;
}

/* tir_need_walk, each needed node added to v (tir_fview_init'ed) as the
 * walk meets it: the one pass over the nodes a run makes, and over those
 * it reads alone.  0 or -TIR_ENOMEM. */
static int need_walk_view(const struct tir_program *p, struct tir_fview *v, bool *need, int32_t *uses,
			  const struct cpu_run_ctx *h)
{
	bool may_have = h->x->keep || h->c->ngiven; /* (else cpu_held is false at every node) */
	for (size_t i = p->nnodes; i-- > 0;) {
		if (i >= 8) { /* (nodes are a few lines each, apart: asked for ahead) */
			const char *a = (const char *)p->nodes[i - 8];
			for (int l = 0; l < 4; l++)
				__builtin_prefetch(a + 64 * l);
		}
		if (!need[i])
			continue;
		if (tir_fview_add(v, p->nodes[i]))
			return -TIR_ENOMEM;
		if (may_have && cpu_held(h, (uint32_t)i))
			continue;
		/* (its count read once: a store to need, a bool, might be to
		 * the view for all the compiler knows, and it would read it
		 * again each operand) */
		const uint32_t *e = v->edges + v->n[i].in;
		int nin = v->n[i].nin;
		for (int k = 0; k < nin; k++)
			if (e[k] != TIR_FN_NONE) {
				need[e[k]] = true;
				uses[e[k]]++;
			}
	}
	return 0;
}

static int cpu_run(struct tir_device *d, struct tir_exec *x, struct tir_node *const *targets, size_t ntargets,
		   struct tir_tensor *out, struct tir_err *err)
{
	struct cpu *c = cpu_of(d);
	struct tir_program *p = x->prog;
	double t0 = x->run_t0;
	c->plan_t0 = t0;
	c->prog = p;
	c->rerun = false;
	size_t nn = p->nnodes;
	int32_t *uses = run_array(sizeof *uses * (nn + 1));
	/* c->vals, kept between runs (empty): what is set is listed in made
	 * and released after, not all nn of them */
	struct tir_tensor *vals = NULL;
	uint32_t *made = malloc(sizeof *made * (nn + 1));
	size_t nmade = 0;
	int rc = 0;
	/* the graph as the planner's passes and the budget's simulation read
	 * it (fusion.h), made once */
	struct tir_fview view = {0};
	/* (empty between runs, so a larger one is made anew, zeroed by
	 * calloc: the values of a fused kernel's interior are never touched,
	 * nor their pages written) */
	if (c->capvals < nn + 1) {
		free(c->vals);
		c->capvals = nn + 1 > 2 * c->capvals ? nn + 1 : 2 * c->capvals;
		if (!(c->vals = calloc(c->capvals, sizeof *c->vals)))
			c->capvals = 0;
	}
	if (c->caplent < nn + 1) {
		free(c->lent);
		free(c->held);
		c->caplent = nn + 1 > 2 * c->caplent ? nn + 1 : 2 * c->caplent;
		c->lent = calloc(c->caplent, sizeof *c->lent);
		c->held = calloc(c->caplent, sizeof *c->held);
		if (!c->lent || !c->held)
			c->caplent = 0;
	}
	if (c->vals && c->lent && c->held)
		vals = c->vals;
	/* what the targets need, and how often each value is read */
	bool *need = calloc(nn + 1, sizeof *need);
	bool *target = calloc(nn + 1, sizeof *target);
	struct tir_plan plan = {0};
	bool planned = false;
	if (!uses || !vals || !made || !need || !target) {
		free(need);
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ntargets; i++) {
		need[targets[i]->id] = true;
		target[targets[i]->id] = true;
		uses[targets[i]->id]++;
	}
	struct cpu_run_ctx hctx = {c, x};
	/* a plan to make or look up, or a budget to keep: the view of the
	 * nodes the run reads, made as the needs-walk meets them */
	size_t limit = tir_mem_limit();
	bool viewed = limit || !x->no_fuse;
	if (viewed && (tir_fview_init(&view, nn) || need_walk_view(p, &view, need, uses, &hctx))) {
		free(need);
		free(target);
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	if (!viewed)
		tir_need_walk(p, need, uses, cpu_held, &hctx);
	/* (nothing kept and nothing given: cpu_have finds nothing, and the
	 * loop below does nothing at any node; tir run's case, so not asked
	 * at each of its nodes) */
	bool may_have = x->keep || c->ngiven;
	for (size_t i = 0; may_have && i < nn; i++) {
		if (!need[i])
			continue;
		const struct tir_tensor *have = cpu_have(c, x, i);
		if (have) {
			/* computed before, or moved here: a value to read, not a node to run */
			tir_tensor_ref(&vals[i], have);
			made[nmade++] = (uint32_t)i;
			c->held[i] = true;
			need[i] = false;
			target[i] = true;
		} else if (x->keep && tir_exec_keepable(p, p->nodes[i])) {
			target[i] = true; /* materialized, so that it can be kept */
		}
		/* a call of several results that runs: its other results with
		 * names are made too (views of it, no work), so that asking for
		 * one later does not run the call again (ir.h) */
		int nres = x->keep ? tir_node_nres(p->nodes[i]) : 1;
		for (int r = 1; need[i] && x->keep && nres > 1 && r <= nres; r++) {
			size_t j = i + (size_t)r;
			if (j < nn && !need[j] && !cpu_have(c, x, j) && tir_exec_keepable(p, p->nodes[j])) {
				need[j] = true;
				uses[i]++;
				if (viewed && tir_fview_add(&view, p->nodes[j])) {
					free(need);
					free(target);
					rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
					goto done;
				}
			}
		}
	}
	if (!x->no_fuse) {
		if (plan_for(c, viewed ? &view : NULL, need, uses, target, x->once, &x->stats.plan_cached)) {
			free(need);
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			goto done;
		}
		planned = true;
		plan = c->plan;
		/* a value recomputed in several kernels: its operands are read
		 * by each */
		for (size_t i = 0; plan.extra && i < nn; i++)
			uses[i] += plan.extra_uses[i];
		free(c->explain); /* made when asked for: cpu_explain */
		c->explain = NULL;
	}
	/* under a budget (tir serve --max-memory): a run whose plan would
	 * pass what is left is refused before it allocates anything */
	if (limit) {
		const struct tir_node *at = NULL;
		size_t peak = 0, scratch = 0, held = tir_mem_current(), left = limit > held ? limit - held : 0;
		if (plan_peak(p, &view, need, uses, planned ? &plan : NULL, left, &peak, &at, &scratch)) {
			free(need);
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			goto done;
		}
		x->stats.plan_peak_bytes = peak;
		if (peak > left && scratch) {
			char a[32], b[32], cc[32], dd[32];
			free(need);
			rc = tir_errf(err, TIR_EBUDGET, &at->loc,
				      "%s: the batch would hold %s at its peak (%s of it the least scratch this "
				      "kernel needs: packing buffers); the memory budget has %s left of %s (--max-memory)",
				      tir_op(at->op)->name, tir_bytes_str(peak, a), tir_bytes_str(scratch, b),
				      tir_bytes_str(left, cc), tir_bytes_str(limit, dd));
			goto done;
		}
		if (peak > left) {
			char a[32], b[32], cc[32], dd[32];
			free(need);
			rc = tir_errf(err, TIR_EBUDGET, at ? &at->loc : NULL,
				      "%s%sthe batch would hold %s at its peak (%s of it this value, the largest "
				      "then); the memory budget has %s left of %s (--max-memory)",
				      at ? tir_op(at->op)->name : "", at ? ": " : "", tir_bytes_str(peak, a),
				      tir_bytes_str(at ? value_bytes(at) : 0, b), tir_bytes_str(left, cc),
				      tir_bytes_str(limit, dd));
			goto done;
		}
	}
	/* (the view is kept through the run: the kernels are prepared from it) */
	c->run_view = viewed ? &view : NULL;
	c->nprof = 0;
	tir_mem_reset_peak();
	size_t base = tir_mem_current();
	/* the kernels stop inside too (the pool's tasks), and a kernel that
	 * stopped is no result: the flag is looked at after each node */
	volatile sig_atomic_t *outer_stop = tir_pool_set_stop(x->intr);
	double t1 = tir_now_ms();
	x->stats.plan_ms = t1 - t0;
	c->plan_t1 = t1;
	if (x->trace)
		tir_pool_trace(true);
	struct tir_progress prog = {.step = TIR_STEP_KERNEL};
	for (size_t i = 0; x->progress && i < nn; i++) /* the kernels as the loop below counts them */
		prog.n += need[i] && !(planned && plan.interior[i]) &&
			  ((planned && plan.group_at[i]) ||
			   (p->nodes[i]->op != TIR_OP_CONST && p->nodes[i]->op != TIR_OP_INPUT));
	for (size_t i = 0; i < nn && !rc; i++) {
		if (!need[i] || (planned && plan.interior[i]))
			continue;
		const struct tir_node *n = p->nodes[i];
		if (x->intr && *x->intr) { /* at the op it would run next */
			rc = tir_errf(err, TIR_EINTERRUPT, &n->loc, "interrupted");
			break;
		}
		if (x->progress && ((planned && plan.group_at[i]) ||
				    (n->op != TIR_OP_CONST && n->op != TIR_OP_INPUT))) {
			prog.k++;
			prog.step_ms = tir_now_ms();
			tir_exec_progress(x, &prog);
		}
		/* a literal: made when something other than a kernel of the
		 * plan reads it (a kernel reads its node), so not at all in a
		 * program of scalar statements; a target or a value kept is
		 * made here.  (Run again, the plan's cached constants are lent.) */
		if (planned && !c->rerun && n->op == TIR_OP_CONST && n->type.weak && !target[i])
			continue;
		double tk = x->profile || x->trace ? tir_now_ms() : 0;
		int64_t t0k = tir_pool_offered();
		made[nmade++] = (uint32_t)i;
		c->held[i] = true;
		if (planned && plan.group_at[i]) {
			int gens = 0, gi = tir_plan_group(&plan, i);
			rc = run_group(c, gi, &plan.groups[gi], plan.interior, vals, uses, made, &nmade, &gens, err);
			if (!rc && x->intr && *x->intr) /* cut short: not a value */
				rc = tir_errf(err, TIR_EINTERRUPT, &n->loc, "interrupted");
			if (rc && err->code == TIR_EBUDGET && !err->loc.src) /* said at the op that made the value */
				err->loc = n->loc;
			if ((x->profile || x->trace) && !rc)
				profile_kernel(c, &plan.groups[gi], n, tir_now_ms() - tk, tir_pool_offered() - t0k);
			const struct tir_group *gr = &plan.groups[gi];
			x->stats.nops += gr->n + (gr->head != NULL) + gens;
			x->stats.nkernels++;
			if (!rc && x->keep && tir_exec_keepable(p, n))
				tir_tensor_ref(&x->kept[i], &vals[i]);
			continue;
		}
		bool small_const = c->rerun && cacheable_const(n);
		if (small_const && const_hit(c, n, target[i])) {
			if (x->keep && tir_exec_keepable(p, n))
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
		struct tir_err e = {0};
		for (int k = 0; k < n->nin && !rc; k++)
			if (n->in[k] && deferred_literal(n->in[k], c->held))
				rc = literal_value(c, n->in[k], made, &nmade, &e);
			else if (n->in[k])
				lent_fill(c, n->in[k]->id);
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				inp[k] = vals[n->in[k]->id];
		if (!rc)
			rc = tir_node_eval(n, inp, n->op == TIR_OP_INPUT ? tir_exec_input_value(x, n->id) : NULL, &vals[i], &e);
		if (!rc && x->intr && *x->intr) /* cut short: not a value */
			rc = tir_errf(&e, TIR_EINTERRUPT, &n->loc, "interrupted");
		if (rc && e.code == TIR_EBUDGET && !e.loc.src)
			e.loc = n->loc;
		if (rc)
			*err = e;
		else if (small_const)
			const_keep(c, n, &vals[i]);
		else if ((x->profile || x->trace) && n->op != TIR_OP_CONST && n->op != TIR_OP_INPUT)
			profile_kernel(c, NULL, n, tir_now_ms() - tk, tir_pool_offered() - t0k);
		if (!rc && x->keep && tir_exec_keepable(p, n))
			tir_tensor_ref(&x->kept[i], &vals[i]);
		bool op = n->op != TIR_OP_CONST && n->op != TIR_OP_INPUT;
		x->stats.nops += op;
		x->stats.nkernels += op;
		drop_operands(n, NULL, c->lent, c->held, vals, uses);
		if (inp != in)
			free(inp);
	}
	tir_pool_set_stop(outer_stop);
	if (x->trace) {
		tir_pool_trace(false);
		free(c->spans);
		c->spans = tir_pool_trace_take(&c->nspans);
		c->run_t1 = tir_now_ms();
	}
	free(need);
	x->stats.run_ms = tir_now_ms() - t1;
	x->stats.peak_bytes = tir_mem_peak() > base ? tir_mem_peak() - base : 0;
	x->stats.mapped_bytes = tir_mem_mapped_peak();
	/* hand the targets over (in their node's dtype) */
	for (size_t i = 0; i < ntargets && !rc; i++) {
		const struct tir_node *n = targets[i];
		rc = tir_tensor_as_dtype(&vals[n->id], (enum tir_dtype)n->type.dtype, &out[i], err);
	}
done:
	c->run_view = NULL;
	tir_fview_free(&view);
	for (size_t k = 0; vals && k < nmade; k++) {
		uint32_t id = made[k];
		c->held[id] = false;
		if (c->lent[id]) {
			if (c->lent[id] == LENT_FILLED)
				memset(&vals[id], 0, sizeof vals[id]);
			c->lent[id] = 0;
		} else {
			tir_tensor_release(&vals[id]);
		}
	}
	free(made);
	run_array_free(uses, sizeof *uses * (nn + 1));
	free(target);
	return rc;
}

static const char *cpu_explain(struct tir_device *d, struct tir_exec *x)
{
	struct cpu *c = cpu_of(d);
	if (x->no_fuse)
		return "--no-fuse: one reference kernel per op\n";
	if (!c->explain && c->plan.need)
		c->explain = tir_plan_explain(c->prog, &c->plan);
	return c->explain ? c->explain : "";
}

static char *cpu_profile(const struct tir_device *d, const struct tir_exec *x)
{
	const struct cpu *c = cpu_of(d);
	struct tir_str out = {0};
	tir_str_addf(&out, "%-4s %-44s %10s %10s %9s %7s\n", "#", "kernel", "ms", "MiB", "GFLOP/s",
		     "tasks");
	double tot = 0;
	for (size_t i = 0; i < c->nprof; i++) {
		const struct tir_kprof *k = &c->prof[i];
		tot += k->ms;
		char gf[32] = "-";
		if (k->flops > 0 && k->ms > 0)
			snprintf(gf, sizeof gf, "%.2f", k->flops / (k->ms * 1e6));
		tir_str_addf(&out, "%-4zu %-44.44s %10.3f %10.2f %9s %7lld\n", i + 1, k->what, k->ms,
			     k->bytes / (1024.0 * 1024.0), gf, (long long)k->tasks);
	}
	tir_str_addf(&out, "%zu kernels, %.3f ms; plan %s; vector path: %s; gemm: %s; blas: %s; threads: %d\n",
		     c->nprof, tot,
		     x->no_fuse ? "none (--no-fuse)" : x->stats.plan_cached ? "from the cache" : "made",
		     tir_vector_path(), tir_gemm_info(), tir_blas_info(), tir_pool_threads());
	return out.oom ? (tir_str_free(&out), NULL) : out.s;
}

/* The plan, each kernel (args: MiB moved, GFLOP, tasks) on thread 0,
 * pool slot k's spans on thread 1 + k (slot 0: the thread that ran the
 * kernels, helping). */
static void cpu_trace(const struct tir_device *d, const struct tir_exec *x, json_t *ev, double origin)
{
	const struct cpu *c = cpu_of(d);
#define US(ms) json_real((ms) * 1e3)
	json_array_append_new(ev, json_pack("{s:s, s:s, s:o, s:o, s:i, s:i, s:{s:b}}", "name", "plan", "ph", "X",
					    "ts", US(c->plan_t0 - origin), "dur", US(c->plan_t1 - c->plan_t0), "pid", 1,
					    "tid", 0, "args", "cached", x->stats.plan_cached));
	for (size_t i = 0; i < c->nprof; i++) {
		const struct tir_kprof *k = &c->prof[i];
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:{s:f, s:f, s:I}}",
						    "name", k->what, "cat", "kernel", "ph", "X", "ts",
						    US(k->start_ms - origin), "dur", US(k->ms), "pid", 1, "tid", 0,
						    "args", "mib", k->bytes / 1048576.0, "gflop", k->flops / 1e9,
						    "tasks", (json_int_t)k->tasks));
	}
	bool named[TIR_POOL_MAX + 1] = {false};
	/* the pool's threads after the remotes' (two each: remote.c's
	 * remote_trace) when a remote ran a batch of the run too: one name a
	 * thread */
	int tid0 = x->ran_mask & ~1ull ? 1 + 2 * (x->ndev - 1) : 1;
	for (size_t i = 0; i < c->nspans; i++) {
		const struct tir_pool_span *sp = &c->spans[i];
		if (!named[sp->slot]) {
			char nm[32];
			snprintf(nm, sizeof nm, sp->slot ? "pool worker %d" : "pool: the running thread", sp->slot);
			json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph",
							    "M", "pid", 1, "tid", tid0 + sp->slot, "args", "name", nm));
			named[sp->slot] = true;
		}
		double t0 = (double)sp->t0_ns / 1e6, t1 = (double)sp->t1_ns / 1e6;
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:{s:I}}", "name",
						    sp->packing ? "packing" : "tasks",
						    "cat", "pool", "ph", "X", "ts", US(t0 - origin), "dur",
						    US(t1 - t0), "pid", 1, "tid", tid0 + sp->slot, "args", "tasks",
						    (json_int_t)sp->tasks));
	}
#undef US
}

static void cpu_free(struct tir_device *d)
{
	struct cpu *c = cpu_of(d);
	if (!c)
		return;
	free(c->explain);
	free(c->spans);
	for (int i = 0; i < PCACHE; i++) {
		free(c->pcache[i].sig);
		free(c->pcache[i].groups);
		free(c->pcache[i].closed);
		free(c->pcache[i].alone_at);
		free(c->pcache[i].alone_why);
		free(c->pcache[i].info);
		free(c->pcache[i].fin);
		free(c->pcache[i].fin_flags);
	}
	fused_forget(c);
	tir_plan_free(&c->plan);
	free(c->plan_nodes);
	free(c->plan_uses);
	free(c->plan_target);
	free(c->vals);
	free(c->lent);
	free(c->held);
	cpu_clear(d);
	free(c->given);
	for (size_t i = 0; i < c->ncconst; i++) {
		tir_tensor_release(&c->cconst[i].v);
		tir_tensor_release(&c->cconst[i].as);
	}
	free(c->cconst);
	free(c->cslot);
	free(c->prof);
	free(c);
}

/* Every value comes back: what is to stay here the executor puts back. */
static int cpu_run_on(struct tir_device *d, struct tir_exec *x, struct tir_node *const *targets, size_t n,
		      const bool *stay, struct tir_tensor *vals, struct tir_exec_stats *st, struct tir_err *err)
{
	(void)stay;
	struct tir_exec_stats keep = x->stats; /* the caller's thread: no batch beside it writes x->stats */
	memset(&x->stats, 0, sizeof x->stats);
	/* its plan's time from its own start, not the run's (a later step) */
	double t0 = x->run_t0;
	x->run_t0 = tir_now_ms();
	int rc = cpu_run(d, x, targets, n, vals, err);
	x->run_t0 = t0;
	*st = x->stats;
	x->stats = keep;
	return rc;
}

static const struct tir_device_ops cpu_ops = {
	.kind = "cpu",
	.name = cpu_name,
	.upload = cpu_upload,
	.run_on = cpu_run_on,
	.put = cpu_put,
	.clear = cpu_clear,
	.holds = cpu_holds,
	.fetch = cpu_fetch,
	.explain = cpu_explain,
	.profile = cpu_profile,
	.trace = cpu_trace,
	.free = cpu_free,
};

struct tir_device *tir_cpu_device(void)
{
	struct cpu *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->dev.ops = &cpu_ops;
	return &c->dev;
}
