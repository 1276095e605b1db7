/*
 * fusion.h — lib/fusion's one internal header: the plan (which needed
 * nodes run together as one kernel), the fuser that makes it, and the
 * blocked evaluator of fused groups.  The executor (lib/engine) runs the
 * plan; without a plan (--no-fuse) it runs one reference kernel per node.
 * A fused kernel computes every element with the same per-op functions
 * (lib/exec/vmath.h, the reduction folds of reduce.c) as the reference
 * kernels, so results are bitwise the same fused or not.
 */
#ifndef TIR_FUSION_H
#define TIR_FUSION_H

#include "../exec/exec.h"

/* A broadcast operand computed once per kernel call (before its blocks,
 * on one thread) has at most this many elements; a larger one is a
 * kernel of its own. */
#define TIR_FUSE_HOIST_MAX 65536
/* A reduction to one value of at least this many computed elements is
 * the root of its own kernel, whose pieces run on the pool, never a
 * member under an elementwise root (which would run as one task). */
#define TIR_FUSE_PIECES_MIN 65536
#define TIR_STR_(x) #x
#define TIR_STR(x) TIR_STR_(x)

/* A kernel of the plan: one node run by its reference kernel, or a group of
 * nodes run as one pass over memory (per block of elements, or per block
 * of rows when it reduces). */
struct tir_group {
	struct tir_node *root;      /* the value the kernel produces */
	int n;                      /* nodes, in graph order, root last */
	struct tir_node **nodes;
	int nin;                    /* values read from memory, each once */
	struct tir_node **inputs;
	const char *closed;         /* why the group stopped growing */
	struct tir_node *head;      /* a matmul whose blocks the group finishes as they are
				     * made (its epilogue), or NULL; also among inputs */
	/* tir_group_analyze's result, made once with the plan (a group of a
	 * plan runs on every run of it), or NULL: analyzed when needed */
	const struct tir_group_info *info;
	/* nodes[j]->id and inputs[k]->id, so that a pass over the plan need
	 * not read the nodes (NULL: not known; read the nodes) */
	const uint32_t *ids, *input_ids;
};

/* How a member of a group is computed (tir_group_analyze). */
enum tir_fclass {
	TIR_FC_FULL,   /* one value per element of the kernel's domain, block by block */
	TIR_FC_ROW,    /* one value per row (a reduction, or ops on reductions), row by row */
	TIR_FC_ONCE,   /* a smaller operand (broadcast, scalar, a view of an input): once per call */
	TIR_FC_ALIAS,  /* a movement (transpose, slice, reshape...) of a FULL member: no work,
			* the member below is computed in this one's layout */
};

/* What a group computes, derived from its nodes alone (so a cached plan
 * needs nothing more).  The domain is the shape its blocks cover: the
 * reductions' input, or the root's.  Seen as rows x cols, the reduced
 * axes (trailing) are the cols; without reductions cols is 1. */
struct tir_group_info {
	enum tir_dtype dt;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	int split;                          /* axes [0, split) are the rows' */
	int64_t rows, cols;
	bool reduces;
	bool leading;                       /* the root reduces the leading axes (rows) down
					     * the cols instead: cols its outputs */
	int64_t kshape[TIR_MAX_RANK];       /* the domain with the reduced axes at 1 */
	/* every member TIR_FC_FULL and via -1 (elementwise over the domain
	 * all through, as analyze's one pass finds); false: read cls and via */
	bool plain;
	/* by member, g->n of each, in storage the info's maker owns (a
	 * group of any length: a kernel grows with its group, no cap) */
	uint8_t *cls;                       /* enum tir_fclass */
	int32_t *via;                       /* the ALIAS member whose layout it is computed in,
					     * -1 the domain's (-2 for ONCE) */
};

/* Bytes of storage for the by-member arrays of a group of n members, and
 * info's arrays pointed into mem (that many bytes, 4-byte aligned). */
size_t tir_group_info_bytes(int n);
void tir_group_info_place(struct tir_group_info *info, void *mem, int n);

/* Classify g's members; NULL when g can run as one kernel, else why not,
 * with *culprit the member to leave out of it.  info->cls and info->via
 * must point at g->n entries each (tir_group_info_place); they are kept. */
const char *tir_group_analyze(const struct tir_group *g, struct tir_group_info *info,
			      const struct tir_node **culprit);
/* Test hook: on, tir_group_analyze takes its passes for every group, a
 * group elementwise all through too (which one pass classes otherwise):
 * test_fview checks that both say the same. */
void tir_group_analyze_passes_only(bool on);

/* View op m (transpose, slice, expand, reshape, flatten, squeeze,
 * unsqueeze) applied to src.  layout_only: src has no data, only the
 * strides matter (a reshape that would copy gives contiguous strides). */
int tir_move_view(const struct tir_node *m, const struct tir_tensor *src, bool layout_only,
		  struct tir_tensor *dst, struct tir_err *err);

struct tir_plan {
	int ngroups;
	struct tir_group *groups;   /* in graph order */
	/* by node id: 1 + the group a root heads, else 0 (tir_node_sparse's,
	 * of nnodes + 1: written at the roots only); read with tir_plan_group */
	int32_t *group_at;
	bool *interior;             /* by node id: computed inside a group, never stored */
	bool *need;                 /* by node id: the run needs it */
	/* The scored choice for a value several kernels read (by node id):
	 * keep it (one kernel writes it, each reader reads it) or recompute
	 * it in each reader's kernel.  keep, copy: the bytes each choice
	 * moves (computing counted as bytes: see dup_scores), 0 when it was
	 * not a candidate; dup: recomputed.  (keep, copy and extra_uses
	 * are tir_node_sparse's, of nnodes + 1 entries.) */
	int64_t *keep, *copy;
	bool scored;                /* some keep or copy is not 0 (else none is: not read) */
	bool *dup;
	/* by node id: reads of it beyond the graph's edges (a value computed
	 * in several kernels reads its operands once in each) */
	int32_t *extra_uses;
	bool extra;                 /* some extra_uses may not be 0 (else none is: not read) */
	const char **alone;         /* by node id: why a node that could lead a kernel
				     * runs alone (or NULL) */
	size_t nnodes;
	struct tir_arena arena;
	/* blocks the plan owns besides its arena (a big group's arrays, as
	 * the fuser grew them: not copied), freed with it */
	void **owned;
	size_t nowned, capowned;
	/* the block a long program's plan takes its arrays by node id from
	 * (those above, and the group's it took), whole huge pages (see
	 * tir_fuse_view), or NULL: each array is malloc'd on its own.  An
	 * array inside it is not freed by itself. */
	void *mem;
	size_t memsize;
	/* the bytes of mem the plan holds from its start: what is past them
	 * is free (its pages mostly written already, by the passes that made
	 * the plan), lent by tir_plan_scratch */
	size_t memtop;
	/* what is past memtop is lent to a kernel (tir_plan_lend) */
	bool lent;
};

/* The group node id heads in plan, or -1. */
static inline int tir_plan_group(const struct tir_plan *plan, size_t id)
{
	return plan->group_at[id] - 1;
}

/* n bytes (not zeroed) of plan's block past what the plan holds, for a
 * pass over the plan while it lives, one at a time (a run's simulation of
 * its memory: pages the fuser faulted in, not fresh ones); NULL when the
 * plan has no block or no room.  Not freed: the next borrower takes it. */
void *tir_plan_scratch(const struct tir_plan *plan, size_t n);
/* n bytes (not zeroed, 64-byte aligned) of plan's block past what the plan
 * holds, lent to one kernel at a time (a small group's, tir_fused_prepare_view:
 * pages the fuser wrote, not fresh ones) till tir_plan_unlend; NULL when
 * plan (may be NULL) has no block, no room, or lent it already.  While
 * lent, tir_plan_scratch lends nothing; the kernel is freed before the
 * plan is. */
void *tir_plan_lend(struct tir_plan *plan, size_t n);
void tir_plan_unlend(struct tir_plan *plan);

/* The index of o among nodes[0, n) (in graph order: ids rising, as a
 * group's members and inputs are), or -1.  Searched from the end down,
 * the step doubling: o among the last few (an operand of member n, most
 * often) takes a few looks, anywhere else 2 log n. */
int tir_node_find(struct tir_node *const *nodes, int n, const struct tir_node *o);
/* The same among node ids ids[0, n) (rising: a plan's group's ids and
 * input_ids). */
int tir_id_find(const uint32_t *ids, int n, uint32_t id);

/* What the planner's passes read of the graph, gathered in one pass over
 * its nodes: 16 bytes a node and 4 an operand, by node id.  A node is a
 * few hundred bytes with its operands and attributes, apart from the
 * next, so that a program of 100,000 statements holds tens of MB of them:
 * a dozen passes over those read memory, a dozen over this the caches.
 * Nodes never change once made, so a view made of p serves every pass of
 * one run over p's first nnodes nodes. */
struct tir_fnode {
	uint16_t op;            /* enum tir_op */
	uint16_t nin;
	uint8_t flags;          /* TIR_FN_* */
	uint8_t kind;           /* enum tir_kind of op */
	uint8_t dt;             /* type.dtype */
	uint8_t fdt;            /* tir_fuse_dtype */
	uint32_t type;          /* its type: types[type] */
	uint32_t in;            /* its operands' ids: edges[in, in + nin) */
};
#define TIR_FN_NONE UINT32_MAX /* an absent operand */
enum {
	TIR_FN_LEAF = 1,        /* CONST, INPUT or a generator: no group computes it as a member */
	TIR_FN_FUSABLE = 2,     /* tir_fusable */
	TIR_FN_TAKES = 4,       /* may take values into its kernel: fusable, or a reduction that fuses */
	TIR_FN_ROOT = 8,        /* may root a group */
	TIR_FN_GEN = 16,        /* a float generator, computed where it is read when that pays */
	TIR_FN_SLEAF = 32,      /* CONST, INPUT or a creation op: what a private subtree reads */
	TIR_FN_VIEW = 64,       /* a movement that is a view */
};
struct tir_ftype {
	struct tir_type t;
	int64_t numel;
};
struct tir_fview {
	size_t nnodes;
	struct tir_fnode *n;    /* by node id (all 0 for a node not added) */
	uint32_t *edges;
	size_t nedges, capedges;
	struct tir_ftype *types; /* each distinct type once */
	uint32_t ntypes, last;
	size_t captypes, nslots;
	uint32_t *slot;         /* types by hash (open addressing) */
	struct tir_fmemo *memo; /* flags of nodes alike, asked once */
	bool gens;              /* some node added is TIR_FN_GEN (else none is) */
};
/* An array by node id of n bytes, zeroed, that plans and runs make again
 * and again (the view's nodes, a plan's arrays, a run's counts): from 512
 * KiB whole huge pages, and pages given back are kept for the next ask of
 * the same size (a few, 32 MiB in all: a REPL's lines, a server's runs);
 * below, calloc.  NULL when out of memory; give back with
 * tir_node_pages_free(p, n), n as asked. */
void *tir_node_pages(size_t n);
void tir_node_pages_free(void *p, size_t n);
/* An array by node id of n bytes, zeroed, that is written at a few ids
 * (a plan's scores and extra_uses): small pages of its own from 128 KiB,
 * zero till written, so that only the pages written count; below, calloc.
 * NULL when out of memory; give back with tir_node_sparse_free(p, n). */
void *tir_node_sparse(size_t n);
void tir_node_sparse_free(void *p, size_t n);
/* The view of p's nodes into v.  returns 0 or -TIR_ENOMEM (v is then
 * empty); free with tir_fview_free. */
int tir_fview_make(const struct tir_program *p, struct tir_fview *v);
/* The same made node by node, for the nodes a run reads alone: an empty
 * view of nnodes nodes, then node x added (in any order; each once).  A
 * pass reads the view of the nodes added only.  0 or -TIR_ENOMEM (init:
 * v is then empty; add: free v). */
int tir_fview_init(struct tir_fview *v, size_t nnodes);
int tir_fview_add(struct tir_fview *v, const struct tir_node *x);
void tir_fview_free(struct tir_fview *v);

/* Partition the needed nodes (need[id]) into kernels.  uses[id] counts the
 * edges into id from needed nodes plus one per target; target[id] marks
 * values that are printed or saved (always materialized).
 * returns 0 or -TIR_ENOMEM; plan is filled (free with tir_plan_free). */
int tir_fuse(const struct tir_program *p, const bool *need, const int32_t *uses,
	     const bool *target, struct tir_plan *plan);
/* tir_fuse with v, the view of p's nodes (tir_fview_make) a caller has
 * made already (borrowed). */
int tir_fuse_view(const struct tir_program *p, const struct tir_fview *v, const bool *need, const int32_t *uses,
		  const bool *target, struct tir_plan *plan);
void tir_plan_free(struct tir_plan *plan);
/* Given plan's groups (from tir_fuse or the plan cache): which members are
 * never stored, the reads beyond the graph's edges, the scores.
 * returns 0 or -TIR_ENOMEM. */
int tir_plan_finish(const struct tir_program *p, const bool *need, const int32_t *uses,
		    const bool *target, struct tir_plan *plan);

/* Whether op may be inside a fused elementwise group (f32/f64 only;
 * comparisons as masks, never a group's root). */
bool tir_fusable(const struct tir_node *n);
/* The dtype n is computed in inside a group: its result's, but a
 * comparison's compare dtype (its mask holds 0 or 1 of it). */
enum tir_dtype tir_fuse_dtype(const struct tir_node *n);

/* Run a group: in[k] is the value of g->inputs[k] (any dtype, any layout;
 * converted and broadcast here; borrowed, not referenced: the caller
 * holds it through the call, or until tir_fused_free after
 * tir_fused_prepare), or empty for a generator the group computes or a
 * weak scalar literal (read from its node); out is allocated contiguous
 * for root.  A group over at most 64 bytes, elementwise throughout, reads
 * its inputs when they are bound (prepared, rebound), not when it runs. */
int tir_fused_eval(const struct tir_group *g, const struct tir_tensor *in, struct tir_tensor *out,
		   struct tir_err *err);

/* Whether the group may write its root over input k's memory (when
 * nothing else will read that value): the root covers the domain, and the
 * input, of the root's type, is read only where the root is written, at
 * the same element, before it is written (by members over the domain in
 * its layout, or reductions of its rows). */
bool tir_fused_can_overwrite(const struct tir_group *g, int k);

/* A group prepared once, then run over ranges of the root's elements
 * (a matmul epilogue runs it block by block; groups without reductions
 * only).  Ranges must not overlap between concurrent calls. */
struct tir_fused;
struct tir_fused *tir_fused_prepare(const struct tir_group *g, const struct tir_tensor *in,
				    struct tir_tensor *out, struct tir_err *err);
int tir_fused_range(struct tir_fused *f, int64_t i0, int64_t n);
void tir_fused_free(struct tir_fused *f);
/* Run prepared group f over all its domain (what tir_fused_eval does
 * after preparing it). */
int tir_fused_run(struct tir_fused *f, struct tir_err *err);
/* Keep prepared group f for later runs of the same plan (a REPL line, a
 * server's replay: the kernel is not built again): true when f depends on
 * its inputs' layouts alone (each read as given, in place; nothing made
 * before the blocks), and then its views of them hold no references
 * from now on, so in[] must be held by the caller through each run.
 * Before each later run, tir_fused_rebind gives it that run's inputs and
 * output: false when an input's dtype, shape, strides or offset is not
 * what it was prepared for (then free it and prepare again). */
bool tir_fused_keep(struct tir_fused *f);
bool tir_fused_rebind(struct tir_fused *f, const struct tir_tensor *in, struct tir_tensor *out);
/* As tir_fused_prepare and tir_fused_rebind, input k's value *in[k]; NULL
 * for an input the caller made no value of: a weak scalar literal (read
 * from its node) or a generator (computed here), as an empty in[k] is.
 * (A program of scalars reads tens of thousands of literals: no array of
 * their tensors copied.) */
struct tir_fused *tir_fused_prepare_at(const struct tir_group *g, const struct tir_tensor *const *in,
				       struct tir_tensor *out, struct tir_err *err);
bool tir_fused_rebind_at(struct tir_fused *f, const struct tir_tensor *const *in, struct tir_tensor *out);
/* tir_fused_prepare_at, reading g's members from v (a view of the graph
 * holding them, by the node ids g->ids and g->input_ids; NULL, or g
 * without ids: from the nodes) where it can: a group of scalars is
 * prepared from compact arrays, not its members' nodes.  plan (g's, or
 * NULL): a group of scalars takes its memory from the plan's block when
 * the plan lends it (tir_plan_lend), and then must be freed before plan
 * is. */
struct tir_fused *tir_fused_prepare_view(const struct tir_group *g, const struct tir_fview *v,
					 struct tir_plan *plan, const struct tir_tensor *const *in,
					 struct tir_tensor *out, struct tir_err *err);
/* The bytes prepared group f holds (a kept one, as long as its plan
 * lives): a group over a handful of elements (a program of scalar
 * statements) about 16 a member. */
size_t tir_fused_bytes(const struct tir_fused *f);
/* By input of f's group: how many of its members' operands read it, and
 * (*ids) its node's id, as f found them preparing (so that the caller
 * need not look at each member again); NULL when f kept no such count. */
const int32_t *tir_fused_input_reads(const struct tir_fused *f, const int32_t **ids);
/* Test hook: of prepared group f's sources (the values its blocks read
 * from memory, each in one layout), how many the blocks read where they
 * lie (*direct), take as one value (*one: a scalar, or a value per row,
 * read unspread by the ops that have a one-value function, spread once
 * per shape of block for the others), and copy, widen or compute into a
 * register block by block (*copied).  All 0 for a group over a handful
 * of elements (no blocks). */
void tir_fused_sources(const struct tir_fused *f, int *direct, int *one, int *copied);
/* Test hook: the build of vm.c's per-ISA loops that the vector path
 * picks, "gen", "a2" or "a5" (exec/vmath.h's TIR_ISA_BUILDS). */
const char *tir_fused_build(void);

/* The plan as text for --explain: one kernel a line, its ops, its result
 * and why it closed.  returns: new, free(). */
char *tir_plan_explain(const struct tir_program *p, const struct tir_plan *plan);
/* The plan as a Graphviz digraph: each kernel a cluster of the ops it
 * runs (values it never stores dashed, those it stores bold), inputs and
 * literals outside, an edge per operand.  returns: new, free(). */
char *tir_plan_dot(const struct tir_program *p, const struct tir_plan *plan);

#endif
