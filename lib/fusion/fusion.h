/*
 * fusion.h — lib/fusion's one internal header: the plan (which needed
 * nodes run together as one kernel), the fuser that makes it, and the
 * blocked evaluator of fused elementwise groups.  The executor (lib/exec)
 * runs the plan; without a plan (--no-fuse) it runs one reference kernel
 * per node.  A fused kernel computes every element with the same per-op
 * functions (lib/exec/vmath.h) as the reference kernels, so results are
 * bitwise the same fused or not.
 */
#ifndef TIR_FUSION_H
#define TIR_FUSION_H

#include "../exec/exec.h"

/* Bounds of one fused kernel: its registers fit in L2 and it reads a
 * bounded number of values; a longer chain continues in a next kernel. */
#define TIR_FUSE_MAX_OPS 32
#define TIR_FUSE_MAX_INPUTS 32
#define TIR_STR_(x) #x
#define TIR_STR(x) TIR_STR_(x)

/* A kernel of the plan: one node run by its reference kernel, or a group of
 * elementwise nodes run as one pass over memory. */
struct tir_group {
	struct tir_node *root;      /* the value the kernel produces */
	int n;                      /* nodes, in graph order, root last */
	struct tir_node **nodes;
	int nin;                    /* values read from memory, each once */
	struct tir_node **inputs;
	const char *closed;         /* why the group stopped growing */
	struct tir_node *head;      /* a matmul whose blocks the group finishes as they are
				     * made (its epilogue), or NULL; also among inputs */
};

struct tir_plan {
	int ngroups;
	struct tir_group *groups;   /* in graph order */
	int32_t *group_of;          /* by node id: the group a root heads, or -1 */
	bool *interior;             /* by node id: computed inside a group, never stored */
	bool *need;                 /* by node id: the run needs it */
	size_t nnodes;
	struct tir_arena arena;
};

/* Partition the needed nodes (need[id]) into kernels.  uses[id] counts the
 * edges into id from needed nodes plus one per target; target[id] marks
 * values that are printed or saved (always materialized).
 * returns 0 or -TIR_ENOMEM; plan is filled (free with tir_plan_free). */
int tir_fuse(const struct tir_program *p, const bool *need, const int64_t *uses,
	     const bool *target, struct tir_plan *plan);
void tir_plan_free(struct tir_plan *plan);

/* Whether op may be inside a fused elementwise group (f32/f64 only). */
bool tir_fusable(const struct tir_node *n);

/* Run a group: in[k] is the value of g->inputs[k] (any dtype, any layout;
 * converted and broadcast here); out is allocated contiguous for root. */
int tir_fused_eval(const struct tir_group *g, const struct tir_tensor *in, struct tir_tensor *out,
		   struct tir_err *err);

/* A group prepared once, then run over ranges of the root's elements
 * (a matmul epilogue runs it block by block).  Ranges must not overlap
 * between concurrent calls. */
struct tir_fused;
struct tir_fused *tir_fused_prepare(const struct tir_group *g, const struct tir_tensor *in,
				    struct tir_tensor *out, struct tir_err *err);
int tir_fused_range(struct tir_fused *f, int64_t i0, int64_t n);
void tir_fused_free(struct tir_fused *f);

/* The plan as text for --explain: one kernel a line, its ops, its result
 * and why it closed.  returns: new, free(). */
char *tir_plan_explain(const struct tir_program *p, const struct tir_plan *plan);

#endif
