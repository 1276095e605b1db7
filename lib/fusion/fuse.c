/*
 * fuse.c — the fuser: partitions the nodes a run needs into kernels.
 *
 * A group grows backwards from its root (the last node of a chain or DAG)
 * through the operands it can absorb, visiting candidates from the highest
 * node id down, so that when one is considered every reader it has inside
 * the group has been seen.  Taking an operand is a small local predicate,
 * in the spirit of ggml's ggml_can_fuse: a float elementwise op (where
 * and clip among them, a comparison as a mask of the kernel's dtype), a
 * reduction over trailing axes or a view of the group's dtype, all of
 * whose readers are in the group (or which is recomputed by each of its
 * readers' kernels, the scored choice below), and which is not printed or
 * saved.  Then the whole group is checked (tir_group_analyze: one domain,
 * each member computed per element, per row, once per call or as a view);
 * a member that cannot be in it is left out and the group grows again
 * without it.  Everything else is an input the group reads from memory.
 *
 * Scored choices (bytes moved, computing counted as bytes):
 *   - a value several kernels read is kept or recomputed by each
 *     (dup_scores);
 *   - a chain after a matmul stays the matmul's epilogue rather than go to
 *     the reduction that reads it (epilogue_first: the same bytes, in
 *     cache).
 */
#include "fusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Node i + 12 of p read soon, by a pass over the graph in order: its
 * lines asked for now (the nodes are a few lines each, too far apart for
 * the hardware to see a stream; a program of 100,000 statements holds
 * more of them than the caches do). */
static inline void ahead(struct tir_node *const *nodes, size_t i, size_t n)
{
	if (i + 12 < n) {
		const char *a = (const char *)nodes[i + 12];
		__builtin_prefetch(a);
		__builtin_prefetch(a + 64);
		__builtin_prefetch(a + 128);
		__builtin_prefetch(a + 192);
	}
}

/* A comparison: inside a kernel, a mask of the kernel's dtype. */
static bool is_cmp(enum tir_op op)
{
	return tir_op(op)->fuse == TIR_FUSE_MASK;
}

/* The dtype n is computed in inside a kernel: its result's, but for a
 * comparison the dtype it compares in (its bool result is held as 0 or 1
 * of that dtype, which is what a float reader converts a bool to). */
enum tir_dtype tir_fuse_dtype(const struct tir_node *n)
{
	return is_cmp(n->op) ? tir_compute_dtype(n) : (enum tir_dtype)n->type.dtype;
}

/* What each class of ops.def's fuse column asks of the node itself. */
bool tir_fusable(const struct tir_node *n)
{
	switch (tir_op(n->op)->fuse) {
	case TIR_FUSE_FLOAT:
		break;
	case TIR_FUSE_MASK:
		/* a mask inside a float kernel, never its result (can_root) */
		return tir_dtype_is_wide_float(tir_compute_dtype(n));
	case TIR_FUSE_CAST:
		/* to the kernel's float dtype: its operand is read from memory
		 * (members all have the kernel's dtype) and widened as it is
		 * read (vm.c: gather), so the cast itself copies */
		return tir_dtype_is_wide_float(n->type.dtype) && !n->type.weak;
	case TIR_FUSE_SELECT:
		/* the condition is converted to the kernel's dtype and tested
		 * against 0: exact for bool, integers and floats but for an f64
		 * one in an f32 kernel (1e-50 would become 0) */
		if (n->in[0]->type.dtype == TIR_DTYPE_F64 && n->type.dtype == TIR_DTYPE_F32)
			return false;
		break;
	default:
		return false;
	}
	/* float in, float out: the dtype it computes in is its result's */
	return tir_dtype_is_wide_float(n->type.dtype) && tir_compute_dtype(n) == n->type.dtype && !n->type.weak;
}

/* (these read a type's rank and shape by name: a struct tir_type or a
 * node's struct tir_ntype) */
#define same_shape(a, b) shape_same((a)->rank, (a)->shape, (b)->rank, (b)->shape)
static bool shape_same(int ra, const int64_t *a, int rb, const int64_t *b)
{
	if (ra != rb)
		return false;
	for (int i = 0; i < ra; i++)
		if (a[i] != b[i])
			return false;
	return true;
}


/* Movement ops that are views: a fused kernel reads through them. */
static bool is_view_op(enum tir_op op)
{
	enum tir_fuse f = tir_op(op)->fuse;
	return f == TIR_FUSE_VIEW || f == TIR_FUSE_RESHAPE;
}

static bool is_red_op(enum tir_op op)
{
	return tir_op(op)->fuse == TIR_FUSE_REDUCE;
}

/* Reduction n's input as rows x cols, the reduced axes (cols) trailing;
 * false when a kept axis follows a reduced one.  Axes of size 1 go
 * either way. */
static bool red_split(const struct tir_node *n, int *split, int64_t *rows, int64_t *cols)
{
	const struct tir_ntype *x = &n->in[0]->type;
	bool mask[TIR_MAX_RANK];
	tir_reduce_mask(n, x->rank, mask);
	*split = 0;
	*rows = *cols = 1;
	bool red = false;
	for (int d = 0; d < x->rank; d++) {
		if (x->shape[d] == 1)
			continue;
		if (mask[d]) {
			*cols *= x->shape[d];
			red = true;
		} else {
			if (red)
				return false;
			*rows *= x->shape[d];
			*split = d + 1;
		}
	}
	return true;
}

/* Reduction n's input as rows x cols with the reduced axes (rows)
 * leading, the kept ones (cols) trailing, both there. */
static bool red_lead(const struct tir_node *n, int *split, int64_t *rows, int64_t *cols)
{
	const struct tir_ntype *x = &n->in[0]->type;
	bool mask[TIR_MAX_RANK];
	tir_reduce_mask(n, x->rank, mask);
	*split = 0;
	*rows = *cols = 1;
	bool kept = false;
	for (int d = 0; d < x->rank; d++) {
		if (x->shape[d] == 1)
			continue;
		if (!mask[d]) {
			*cols *= x->shape[d];
			kept = true;
		} else {
			if (kept)
				return false;
			*rows *= x->shape[d];
			*split = d + 1;
		}
	}
	return kept && *rows > 1 && *cols > 0;
}

/* Why reduction o cannot be in a kernel, or NULL. */
static const char *why_not_reduce(const struct tir_node *o)
{
	if (!is_red_op(o->op))
		return "an operand's reduction does not fuse";
	int ddof = tir_op_attr_index(o->op, "ddof");
	if (ddof >= 0 && o->attr[ddof].i != 0) /* the kernels divide by the count */
		return "an operand's reduction has a ddof";
	if (!tir_dtype_is_wide_float(o->type.dtype) || o->type.weak || o->in[0]->type.dtype != o->type.dtype ||
	    tir_compute_dtype(o) != o->type.dtype)
		return "an operand's dtype does not fuse";
	int split;
	int64_t rows, cols;
	if (!red_split(o, &split, &rows, &cols))
		return "an operand reduces leading axes";
	if (rows == 0 || cols == 0)
		return "an operand reduces an empty axis";
	return NULL;
}

/* Whether reduction o folds a long run computed by elementwise ops to
 * one value in a way the pool can split (a pairwise sum: SUM, MEAN, VAR).
 * Below an elementwise root (t + sum(y)) it would make the whole kernel
 * one row, so one task; as a kernel's root its pieces go to the pool
 * (vm.c's run_pieces), and the root that reads it is a kernel of scalars.
 * A reduction of a value read from memory (a leaf) is pooled inside the
 * kernel already (tir_k_reduce), so it stays.  The bound is a count, not
 * the caches, so that a plan is the same on any machine. */
static bool long_to_one(const struct tir_node *o)
{
	const struct tir_node *x = o->in[0];
	if ((o->op != TIR_OP_SUM && o->op != TIR_OP_MEAN && o->op != TIR_OP_VAR) || tir_type_numel(&o->type) != 1)
		return false;
	if (x->op == TIR_OP_CONST || x->op == TIR_OP_INPUT || tir_gen_is_op(x->op))
		return false;
	return tir_type_numel(&x->type) >= TIR_FUSE_PIECES_MIN;
}

/* Why operand o cannot join a group rooted at r, or NULL if it can (v: p's
 * view; the node itself is read for a reduction alone). */
static const char *why_not(const struct tir_program *p, const struct tir_fview *v, uint32_t r, uint32_t o,
			   int64_t seen, const int32_t *uses, const bool *target, const bool *taken, const bool *dup)
{
	const struct tir_fnode *f = &v->n[o];
	if (f->flags & TIR_FN_LEAF)
		return "a leaf";
	if (f->kind == TIR_KIND_REDUCE) {
		const char *why = why_not_reduce(p->nodes[o]);
		if (why)
			return why;
		if (long_to_one(p->nodes[o]))
			return "an operand sums a long run to one value (its own kernel, in pieces on the pool)";
	} else if (f->kind == TIR_KIND_MOVEMENT && (f->flags & TIR_FN_VIEW)) {
		if (!tir_dtype_is_wide_float(f->dt))
			return "an operand's dtype does not fuse";
	} else if (!(f->flags & TIR_FN_FUSABLE)) {
		return f->kind == TIR_KIND_ELEMWISE ? "an operand's dtype does not fuse" : "an operand is not elementwise";
	}
	if (f->fdt != v->n[r].dt)
		return "an operand has another dtype";
	if (target[o])
		return "an operand is printed or saved";
	if (dup && dup[o])
		return NULL; /* recomputed in each kernel that reads it */
	if (seen != uses[o])
		return "an operand is read by another kernel too";
	if (taken[o])
		return "an operand is in another kernel";
	return NULL;
}

/* Whether matmul o can be the head of the group rooted at r: read by the
 * group alone, of the root's float dtype and shape, operands of rank 2 up. */
static bool can_head(const struct tir_node *r, const struct tir_node *o, int64_t seen,
		     const int32_t *uses, const bool *target, const bool *taken)
{
	return o->op == TIR_OP_MATMUL && seen == uses[o->id] && !target[o->id] && !taken[o->id] &&
	       o->type.dtype == r->type.dtype && same_shape(&o->type, &r->type) &&
	       o->in[0]->type.rank >= 2 && o->in[1]->type.rank >= 2;
}

static void reverse(struct tir_node **v, int n)
{
	for (int a = 0, b = n - 1; a < b; a++, b--) {
		struct tir_node *t = v[a];
		v[a] = v[b];
		v[b] = t;
	}
}

static void reverse_ids(uint32_t *v, int n)
{
	for (int a = 0, b = n - 1; a < b; a++, b--) {
		uint32_t t = v[a];
		v[a] = v[b];
		v[b] = t;
	}
}

/* ---- movement views ---- */

int tir_move_view(const struct tir_node *m, const struct tir_tensor *src, bool layout_only,
		  struct tir_tensor *dst, struct tir_err *err)
{
	const struct tir_attr *at = m->attr;
	memset(dst, 0, sizeof *dst);
	switch (m->op) {
	case TIR_OP_RESHAPE:
	case TIR_OP_FLATTEN:
	case TIR_OP_SQUEEZE:
	case TIR_OP_UNSQUEEZE:
		if (!layout_only)
			return tir_tensor_reshape(src, m->type.rank, m->type.shape, dst, err);
		/* a view of a contiguous value, else a contiguous copy */
		*dst = *src;
		dst->rank = m->type.rank;
		memcpy(dst->shape, m->type.shape, sizeof(int64_t) * (size_t)m->type.rank);
		tir_tensor_set_contiguous_strides(dst);
		return 0;
	case TIR_OP_TRANSPOSE: {
		int perm[TIR_MAX_RANK];
		for (int i = 0; i < src->rank; i++)
			perm[i] = at[0].set ? tir_axis(at[0].v[i], src->rank) : src->rank - 1 - i;
		tir_view_transpose(src, perm, dst);
		return 0;
	}
	case TIR_OP_EXPAND:
		tir_view_broadcast(src, m->type.rank, m->type.shape, dst);
		return 0;
	case TIR_OP_SLICE: {
		int axis = tir_axis(at[0].i, src->rank);
		int64_t start, step, len;
		tir_slice_params(m, src->shape[axis], &start, &step, &len);
		tir_view_slice(src, axis, start, step, len, dst);
		return 0;
	}
	default:
		TIR_ASSERT(!"tir_move_view: not a view op");
		return 0;
	}
}

/* ---- what a group computes ---- */

/* The first index of [0, n) whose id (id_at(a, i), rising) is not below
 * id: from the end down, the step doubling until one is not past id, then
 * halving.  Inlined into each caller with its id_at. */
static inline __attribute__((always_inline)) int rising_find(const void *a, int n, uint32_t id,
							     uint32_t (*id_at)(const void *, int))
{
	/* id_at(hi) (or the end) is past id; step down until id_at(lo) is not */
	int hi = n, lo = 0;
	for (int step = 1; hi > 0; step *= 2) {
		lo = hi - step > 0 ? hi - step : 0;
		if (lo == 0 || id_at(a, lo) <= id)
			break;
		hi = lo;
	}
	/* the first of [lo, hi) not below id */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (id_at(a, mid) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static inline uint32_t node_id_at(const void *a, int i)
{
	return ((struct tir_node *const *)a)[i]->id;
}

static inline uint32_t id_at(const void *a, int i)
{
	return ((const uint32_t *)a)[i];
}

int tir_node_find(struct tir_node *const *nodes, int n, const struct tir_node *o)
{
	int i = rising_find(nodes, n, o->id, node_id_at);
	return i < n && nodes[i] == o ? i : -1;
}

int tir_id_find(const uint32_t *ids, int n, uint32_t id)
{
	int i = rising_find(ids, n, id, id_at);
	return i < n && ids[i] == id ? i : -1;
}

/* The index of operand o of member j among g's members, or -1: an
 * operand is made before its reader, so it is below j. */
static int member_index(const struct tir_group *g, int j, const struct tir_node *o)
{
	return tir_node_find(g->nodes, o->id < g->nodes[j]->id ? j : g->n, o);
}

/* t's shape with leading 1s up to rank equals shape[rank] */
#define pad_equal(t, r, s) pad_eq((t)->rank, (t)->shape, (r), (s))
static bool pad_eq(int trank, const int64_t *tshape, int rank, const int64_t *shape)
{
	if (trank > rank)
		return false;
	int lead = rank - trank;
	for (int d = 0; d < rank; d++)
		if ((d < lead ? 1 : tshape[d - lead]) != shape[d])
			return false;
	return true;
}

/* Whether t indexes the domain's rows: its axes other than 1s are the
 * rows' axes other than 1s, in order (so its flat index is the row's). */
#define row_shape(t, in) row_shape_of((t)->rank, (t)->shape, (in))
static bool row_shape_of(int rank, const int64_t *shape, const struct tir_group_info *in)
{
	int d = 0;
	for (int e = 0; e < in->split; e++) {
		if (in->shape[e] == 1)
			continue;
		while (d < rank && shape[d] == 1)
			d++;
		if (d == rank || shape[d] != in->shape[e])
			return false;
		d++;
	}
	while (d < rank && shape[d] == 1)
		d++;
	return d == rank;
}

/* The layout an unfused run gives member j's value: a FULL member is
 * contiguous, an ALIAS a view of the member below (strides only). */
static void unfused_layout(const struct tir_group *g, const struct tir_group_info *in, int j,
			   struct tir_tensor *t)
{
	const struct tir_node *m = g->nodes[j];
	if (in->cls[j] != TIR_FC_ALIAS) {
		memset(t, 0, sizeof *t);
		t->dtype = (enum tir_dtype)m->type.dtype;
		t->rank = m->type.rank;
		memcpy(t->shape, m->type.shape, sizeof(int64_t) * (size_t)m->type.rank);
		tir_tensor_set_contiguous_strides(t);
		return;
	}
	struct tir_tensor below;
	struct tir_err e = {0};
	unfused_layout(g, in, member_index(g, j, m->in[0]), &below);
	tir_move_view(m, &below, true, t, &e);
}

size_t tir_group_info_bytes(int n)
{
	return (size_t)(n > 0 ? n : 1) * (sizeof(int32_t) + 1);
}

void tir_group_info_place(struct tir_group_info *info, void *mem, int n)
{
	info->via = mem;
	info->cls = (uint8_t *)((int32_t *)mem + (n > 0 ? n : 1));
}

/* What analyze reads of a group's members, from the view of the graph
 * (tir_fuse: read in place) or gathered from the nodes
 * (tir_group_analyze): by member, its op, kind, type and operands; by
 * operand edge (e, e + nin), the operand's index among the members (-1:
 * an input).  The nodes themselves are read for the rare members whose
 * attributes or operands' types matter (reductions, views, per-row
 * values) and to name a culprit. */
struct gmember {
	struct tir_ntype type;    /* a node's, or the view's type's (its shape there) */
	uint32_t e;
	uint16_t op, nin;
	uint8_t kind;
};
struct gtable {
	struct gmember *m;
	int32_t *eidx;
	/* or, when v is set, the members ids[] in v, and by node id
	 * midx[id] - 1 the index of a member (0: not one) */
	const struct tir_fview *v;
	const uint32_t *ids;
	const int32_t *midx;
};

/* Member j of t (its e: where its operands are, for gm_in). */
static inline struct gmember gm(const struct gtable *t, int j)
{
	if (!t->v)
		return t->m[j];
	const struct tir_fnode *f = &t->v->n[t->ids[j]];
	const struct tir_type *ty = &t->v->types[f->type].t;
	return (struct gmember){.type = {.dtype = ty->dtype, .rank = ty->rank, .weak = ty->weak, .shape = ty->shape},
				.e = f->in, .op = f->op, .nin = f->nin,
				.kind = f->kind};
}

/* The member index of operand k of member m of t, or -1 (an input). */
static inline int gm_in(const struct gtable *t, const struct gmember *m, int k)
{
	if (!t->v)
		return t->eidx[m->e + (uint32_t)k];
	uint32_t o = t->v->edges[m->e + (uint32_t)k];
	return o == TIR_FN_NONE ? -1 : t->midx[o] - 1;
}

/* Room for a group of n members reading ne operands: 0, or -TIR_ENOMEM. */
static int gtable_alloc(struct gtable *t, size_t n, size_t ne)
{
	t->m = malloc(sizeof *t->m * (n + 1));
	t->eidx = malloc(sizeof *t->eidx * (ne + 1));
	return t->m && t->eidx ? 0 : -TIR_ENOMEM;
}

static void gtable_free(struct gtable *t)
{
	free(t->m);
	free(t->eidx);
}

/* g's table from its nodes (t sized by gtable_alloc for g). */
static void gtable_of_nodes(const struct tir_group *g, struct gtable *t)
{
	uint32_t e = 0;
	for (int j = 0; j < g->n; j++) {
		const struct tir_node *m = g->nodes[j];
		t->m[j] = (struct gmember){.type = m->type, .e = e, .op = (uint16_t)m->op, .nin = m->nin,
					   .kind = (uint8_t)tir_op(m->op)->kind};
		for (int k = 0; k < m->nin; k++, e++)
			t->eidx[e] = m->in[k] ? member_index(g, j, m->in[k]) : -1;
	}
}

/* Whether g is elementwise over the domain dom (numel elements) all
 * through: no reduction, no move but cast, every member dom's elements in
 * its shape (leading 1s aside), and every member but the root read by a
 * later one.  Then the passes of analyze find every member FULL, computed
 * in the domain's layout, and no fault: said here in one pass where they
 * take four.  mark: g->n bytes of scratch. */
static bool all_full(const struct tir_group *g, const struct gtable *t, const struct tir_ntype *dom,
		     int64_t numel, uint8_t *mark)
{
	memset(mark, 0, (size_t)g->n);
	if (t->v) {
		/* The same tests read from the view in place: its types are
		 * each distinct type once, so a member of the type the member
		 * before passed passes the shape's tests too (a program of
		 * scalars: one type), and they are asked once a type met. */
		const struct tir_fview *v = t->v;
		uint32_t passed = TIR_FN_NONE;
		for (int j = 0; j < g->n; j++) {
			const struct tir_fnode *f = &v->n[t->ids[j]];
			if (f->kind == TIR_KIND_REDUCE || (f->kind == TIR_KIND_MOVEMENT && f->op != TIR_OP_CAST))
				return false;
			if (f->type != passed) {
				const struct tir_ftype *ty = &v->types[f->type];
				if (ty->numel < numel || !pad_equal(&ty->t, dom->rank, dom->shape))
					return false;
				passed = f->type;
			}
			const uint32_t *e = v->edges + f->in;
			for (int k = 0; k < f->nin; k++)
				if (e[k] != TIR_FN_NONE && t->midx[e[k]])
					mark[t->midx[e[k]] - 1] = 1;
		}
		goto marked;
	}
	for (int j = 0; j < g->n; j++) {
		const struct gmember mj = gm(t, j), *m = &mj;
		if (m->kind == TIR_KIND_REDUCE || (m->kind == TIR_KIND_MOVEMENT && m->op != TIR_OP_CAST) ||
		    tir_type_numel(&m->type) < numel || !pad_equal(&m->type, dom->rank, dom->shape))
			return false;
		for (int k = 0; k < m->nin; k++) {
			int o = gm_in(t, m, k);
			if (o >= 0)
				mark[o] = 1;
		}
	}
marked:
	for (int j = 0; j < g->n - 1; j++)
		if (!mark[j])
			return false;
	return true;
}

static bool passes_only; /* tir_group_analyze_passes_only */

void tir_group_analyze_passes_only(bool on)
{
	passes_only = on;
}

/* tir_group_analyze over g's table t. */
static const char *analyze(const struct tir_group *g, const struct gtable *t, struct tir_group_info *in,
			   const struct tir_node **culprit)
{
	uint8_t *cls = in->cls;
	int32_t *via = in->via;
	memset(in, 0, sizeof *in);
	in->cls = cls;
	in->via = via;
	const struct tir_node *root = g->root;
	in->dt = (enum tir_dtype)root->type.dtype;
	*culprit = root;
	if (g->n < 1)
		return "the kernel is empty";
	/* the domain: the reductions' input, all the same, or the root */
	const struct tir_ntype *dom = &root->type;
	const struct tir_node *dom_of = NULL; /* the reduction that set it */
	if (!passes_only && all_full(g, t, dom, tir_type_numel(dom), cls)) {
		/* (what the passes below find of such a group) */
		in->rank = dom->rank;
		memcpy(in->shape, dom->shape, sizeof(int64_t) * (size_t)dom->rank);
		in->split = dom->rank;
		in->rows = tir_type_numel(dom);
		in->cols = 1;
		memcpy(in->kshape, in->shape, sizeof(int64_t) * (size_t)dom->rank);
		memset(cls, TIR_FC_FULL, (size_t)g->n);
		memset(in->via, 0xff, sizeof *in->via * (size_t)g->n); /* (-1 each) */
		in->plain = true;
		goto head;
	}
	memset(cls, 0, (size_t)g->n);
	for (int j = g->n - 1; j >= 0; j--) {
		if (gm(t, j).kind != TIR_KIND_REDUCE)
			continue;
		const struct tir_node *m = g->nodes[j];
		int split;
		int64_t rows, cols;
		if (!red_split(m, &split, &rows, &cols)) {
			/* down the cols: the root alone, over elementwise ops */
			if (j != g->n - 1 || in->reduces || !red_lead(m, &split, &rows, &cols)) {
				*culprit = m;
				return "an operand reduces leading axes";
			}
			in->leading = true;
		}
		if (!in->reduces) {
			in->reduces = true;
			dom_of = m;
			dom = &m->in[0]->type;
			in->split = split;
			in->rows = rows;
			in->cols = cols;
		} else if (in->leading || g->nodes[g->n - 1] == dom_of) {
			/* a kernel that ends in its reduction leaves another
			 * reduction, and what reads it, to a kernel of their
			 * own rows: what they make is read once here */
			for (int q = g->n - 1; q > j; q--)
				for (int k = 0; k < g->nodes[q]->nin; k++)
					if (g->nodes[q]->in[k] == m)
						*culprit = g->nodes[q];
			return "an operand reads a reduction over other axes";
		} else if (!same_shape(&m->in[0]->type, dom) || rows != in->rows || cols != in->cols) {
			*culprit = m;
			return "an operand reduces other axes than the kernel's rows";
		}
	}
	in->rank = dom->rank;
	memcpy(in->shape, dom->shape, sizeof(int64_t) * (size_t)dom->rank);
	if (!in->reduces) {
		in->split = dom->rank;
		in->rows = tir_type_numel(dom);
		in->cols = 1;
	}
	for (int d = 0; d < in->rank; d++)
		in->kshape[d] = d < in->split ? in->shape[d] : 1;
	int64_t numel = tir_type_numel(dom);

	/* classes, operands first */
	for (int j = 0; j < g->n; j++) {
		const struct gmember mj = gm(t, j), *m = &mj;
		bool full = false, row = false;
		for (int k = 0; k < m->nin; k++) {
			int o = gm_in(t, m, k);
			if (o < 0)
				continue;
			full |= in->cls[o] == TIR_FC_FULL || in->cls[o] == TIR_FC_ALIAS;
			row |= in->cls[o] == TIR_FC_ROW;
		}
		if (m->kind == TIR_KIND_REDUCE) {
			in->cls[j] = TIR_FC_ROW;
			if (row) {
				*culprit = g->nodes[j]->in[0];
				return "a reduction reads a per-row value";
			}
		} else if (m->kind == TIR_KIND_MOVEMENT && m->op != TIR_OP_CAST) {
			if (row) {
				*culprit = g->nodes[j];
				return "an operand moves a per-row value";
			}
			in->cls[j] = full ? TIR_FC_ALIAS : TIR_FC_ONCE;
		} else {
			int64_t mn = tir_type_numel(&m->type);
			/* of inputs alone and smaller than the domain: once per
			 * call, or per row when that is too large */
			in->cls[j] = full || mn >= numel ? TIR_FC_FULL
				     : row ? TIR_FC_ROW
				     : mn <= TIR_FUSE_HOIST_MAX ? TIR_FC_ONCE
				     : in->reduces && pad_equal(&m->type, in->rank, in->kshape) ? TIR_FC_ROW
				     : TIR_FC_ONCE;
			if (in->cls[j] == TIR_FC_ONCE && mn > TIR_FUSE_HOIST_MAX) {
				*culprit = g->nodes[j];
				return "an operand is broadcast and too large to compute once";
			}
		}
	}
	if (in->cls[g->n - 1] != TIR_FC_FULL && in->cls[g->n - 1] != TIR_FC_ROW)
		return "the root does not cover the kernel";
	for (int j = 0; in->leading && j < g->n - 1; j++)
		if (in->cls[j] != TIR_FC_FULL && in->cls[j] != TIR_FC_ONCE) {
			*culprit = g->nodes[j];
			return "a reduction over leading axes takes elementwise ops only";
		}

	/* layouts, readers first: a member is computed in the layout its
	 * readers read it in, one only */
	for (int j = 0; j < g->n; j++)
		in->via[j] = in->cls[j] == TIR_FC_ONCE ? -2 : -3;
	int last = g->n - 1;
	in->via[last] = -1;
	for (int j = g->n - 1; j >= 0; j--) {
		if (in->cls[j] == TIR_FC_ONCE)
			continue;
		const struct gmember mj = gm(t, j), *m = &mj;
		TIR_ASSERT(in->via[j] != -3);
		int sp = in->cls[j] == TIR_FC_ALIAS ? j : in->via[j];
		for (int k = 0; k < m->nin; k++) {
			int o = gm_in(t, m, k);
			if (o < 0 || in->cls[o] == TIR_FC_ONCE)
				continue;
			if (in->via[o] == -3) {
				in->via[o] = sp;
			} else if (in->via[o] != sp) {
				*culprit = g->nodes[o];
				return "an operand is read in two layouts";
			}
		}
	}

	/* shapes and edges */
	for (int j = 0; j < g->n; j++) {
		const struct gmember mj = gm(t, j), *m = &mj;
		int c = in->cls[j];
		if (c == TIR_FC_ONCE)
			continue;
		if (c == TIR_FC_FULL) {
			/* the same elements, maybe with fewer leading 1s */
			const struct tir_ntype *sp = in->via[j] < 0 ? dom : &g->nodes[in->via[j]]->in[0]->type;
			if (!pad_equal(&m->type, sp->rank, sp->shape)) {
				*culprit = g->nodes[j];
				return "an operand has another shape than the kernel";
			}
		}
		if (c == TIR_FC_ROW && in->via[j] != -1) {
			*culprit = g->nodes[j];
			return "a per-row value is read in another layout";
		}
		if (c == TIR_FC_ROW && m->kind == TIR_KIND_REDUCE) {
			int o = gm_in(t, m, 0);
			if (o >= 0 && in->cls[o] == TIR_FC_ALIAS) {
				/* unfused, the reduction walks the view in memory order */
				struct tir_tensor tt;
				bool mask[TIR_MAX_RANK];
				unfused_layout(g, in, o, &tt);
				tir_reduce_mask(g->nodes[j], tt.rank, mask);
				if (!tir_reduce_by_runs(&tt, mask)) {
					*culprit = g->nodes[o];
					return "a reduction reads a moved value";
				}
			}
			continue;
		}
		if (c == TIR_FC_ROW && !row_shape(&m->type, in)) {
			for (int k = 0; k < m->nin; k++)
				if (gm_in(t, m, k) >= 0)
					*culprit = g->nodes[j]->in[k];
			return "an operand mixes per-row values of other shapes";
		}
		for (int k = 0; k < m->nin; k++) {
			int o = gm_in(t, m, k);
			if (o < 0 || in->cls[o] != TIR_FC_ROW)
				continue;
			const struct tir_ntype *ot = &g->nodes[j]->in[k]->type;
			if (c == TIR_FC_FULL ? !pad_equal(ot, in->rank, in->kshape)
					     : !pad_equal(ot, m->type.rank, m->type.shape)) {
				*culprit = g->nodes[j]->in[k];
				return "a per-row value is broadcast another way";
			}
		}
	}
head:
	if (g->head) {
		bool ok = !in->reduces;
		for (int j = 0; ok && j < g->n; j++)
			for (int k = 0; k < g->nodes[j]->nin; k++)
				if (g->nodes[j]->in[k] == g->head && (in->cls[j] != TIR_FC_FULL || in->via[j] != -1))
					ok = false;
		if (!ok) {
			*culprit = g->head;
			return "a matmul cannot lead a kernel of rows or views";
		}
	}
	*culprit = NULL;
	return NULL;
}

const char *tir_group_analyze(const struct tir_group *g, struct tir_group_info *in,
			      const struct tir_node **culprit)
{
	size_t ne = 0;
	for (int j = 0; j < g->n; j++)
		ne += g->nodes[j]->nin;
	struct gtable t = {0};
	if (gtable_alloc(&t, (size_t)(g->n > 0 ? g->n : 0), ne)) {
		gtable_free(&t);
		*culprit = g->root;
		return "out of memory";
	}
	gtable_of_nodes(g, &t);
	const char *why = analyze(g, &t, in, culprit);
	gtable_free(&t);
	return why;
}

/* ---- the planner's view of the graph (fusion.h) ---- */

static bool gen_float(const struct tir_node *o);
static bool can_root(const struct tir_node *r);

static uint32_t type_hash(const struct tir_type *t)
{
	uint64_t h = (1469598103934665603u ^ (t->dtype | (uint64_t)t->rank << 8 | (uint64_t)t->weak << 16)) *
		     1099511628211u;
	for (int d = 0; d < t->rank; d++)
		h = (h ^ (uint64_t)t->shape[d]) * 1099511628211u;
	return (uint32_t)(h ^ h >> 32);
}

#define type_same(a, b) ((a)->dtype == (b)->dtype && (a)->weak == (b)->weak && same_shape(a, b))

/* The index of type t among v's types, added when new: 0, or -TIR_ENOMEM. */
static int view_type(struct tir_fview *v, const struct tir_type *t, uint32_t *at)
{
	if (2 * ((size_t)v->ntypes + 1) > v->nslots) {
		size_t ns = v->nslots ? 2 * v->nslots : 64;
		uint32_t *slot = malloc(sizeof *slot * ns);
		if (!slot)
			return -TIR_ENOMEM;
		memset(slot, 0xff, sizeof *slot * ns);
		for (uint32_t k = 0; k < v->ntypes; k++) {
			size_t q = type_hash(&v->types[k].t) & (ns - 1);
			while (slot[q] != TIR_FN_NONE)
				q = (q + 1) & (ns - 1);
			slot[q] = k;
		}
		free(v->slot);
		v->slot = slot;
		v->nslots = ns;
	}
	size_t q = type_hash(t) & (v->nslots - 1);
	for (; v->slot[q] != TIR_FN_NONE; q = (q + 1) & (v->nslots - 1))
		if (type_same(&v->types[v->slot[q]].t, t)) {
			*at = v->slot[q];
			return 0;
		}
	if (tir_grow((void **)&v->types, &v->captypes, (size_t)v->ntypes + 1, sizeof *v->types))
		return -TIR_ENOMEM;
	struct tir_ftype *nt = &v->types[v->ntypes];
	memset(nt, 0, sizeof *nt);
	nt->t.dtype = t->dtype;
	nt->t.rank = t->rank;
	nt->t.weak = t->weak;
	memcpy(nt->t.shape, t->shape, sizeof(int64_t) * t->rank);
	nt->numel = tir_type_numel(t);
	v->slot[q] = v->ntypes;
	*at = v->ntypes++;
	return 0;
}

/* What the passes ask of node x, as TIR_FN_* flags. */
static uint8_t node_flags(const struct tir_node *x)
{
	const struct tir_opdef *d = tir_op(x->op);
	bool fusable = tir_fusable(x);
	uint8_t f = 0;
	if (x->op == TIR_OP_CONST || x->op == TIR_OP_INPUT || tir_gen_is_op(x->op))
		f |= TIR_FN_LEAF;
	if (fusable)
		f |= TIR_FN_FUSABLE;
	if (d->kind == TIR_KIND_REDUCE ? !why_not_reduce(x) : fusable)
		f |= TIR_FN_TAKES;
	if (can_root(x))
		f |= TIR_FN_ROOT;
	if (gen_float(x))
		f |= TIR_FN_GEN;
	if (x->op == TIR_OP_CONST || x->op == TIR_OP_INPUT || d->kind == TIR_KIND_CREATE)
		f |= TIR_FN_SLEAF;
	if (is_view_op(x->op))
		f |= TIR_FN_VIEW;
	return f;
}

/* The flags of nodes alike, asked once (direct-mapped by their key: tir_fview_add). */
struct tir_fmemo {
	uint64_t key;
	uint8_t flags, kind, fdt;
};
#define FMEMO 256

static size_t view_n_bytes(size_t nnodes)
{
	return sizeof(struct tir_fnode) * (nnodes + 1);
}

int tir_fview_init(struct tir_fview *v, size_t nnodes)
{
	memset(v, 0, sizeof *v);
	v->nnodes = nnodes;
	/* two operands a node, as most have (a program of binary statements
	 * fills it without growing: a copy into new pages) */
	v->capedges = 2 * nnodes + 64;
	size_t nb = view_n_bytes(nnodes);
	/* (huge pages of its own when large, kept for the next view: a
	 * program of 100,000 statements writes 1.6 MB of it, a few faults,
	 * not one a page) */
	v->n = tir_node_pages(nb);
	v->edges = tir_pages_alloc(sizeof *v->edges * v->capedges); /* (huge pages when large) */
	v->memo = malloc(sizeof *v->memo * FMEMO);
	if (!v->n || !v->edges || !v->memo) {
		tir_fview_free(v);
		return -TIR_ENOMEM;
	}
	for (int q = 0; q < FMEMO; q++)
		v->memo[q].key = UINT64_MAX;
	v->last = TIR_FN_NONE;
	return 0;
}

/* tir_fview_add's rare cases, apart (not inlined), so that its common
 * one (the flags remembered, the type the node before's) saves and
 * restores few registers: node x's flags asked of the op table, into
 * f and, but for a reduction (whose depend on more than its key), the
 * memo's slot m; and x's type found or added as v->last (0, or
 * -TIR_ENOMEM). */
static __attribute__((noinline)) void fview_flags(struct tir_fview *v, const struct tir_node *x,
						 struct tir_fnode *f, struct tir_fmemo *m, uint64_t key)
{
	f->flags = node_flags(x);
	/* (a hit in the memo is a node alike one asked here before: said) */
	v->gens |= (f->flags & TIR_FN_GEN) != 0;
	f->kind = (uint8_t)tir_op(x->op)->kind;
	f->fdt = (uint8_t)tir_fuse_dtype(x);
	if (f->kind != TIR_KIND_REDUCE)
		*m = (struct tir_fmemo){.key = key, .flags = f->flags, .kind = f->kind, .fdt = f->fdt};
}

static __attribute__((noinline)) int fview_type(struct tir_fview *v, const struct tir_node *x)
{
	struct tir_type xt = tir_ntype_value(&x->type);
	return view_type(v, &xt, &v->last);
}

int tir_fview_add(struct tir_fview *v, const struct tir_node *x)
{
	struct tir_fnode *f = &v->n[x->id];
	if (v->nedges + x->nin > v->capedges &&
	    tir_grow_pages((void **)&v->edges, &v->capedges, v->nedges + x->nin, sizeof *v->edges))
		return -TIR_ENOMEM;
	f->op = (uint16_t)x->op;
	f->nin = x->nin;
	f->dt = x->type.dtype;
	/* The key of what its flags, kind and fuse dtype depend on (but for
	 * a reduction, whose attributes and shapes matter too): its op,
	 * dtype and weakness, and its first two operands' (the dtype it
	 * computes in, where a comparison or a where reads them); made in
	 * the one pass over its operands that lists their ids.  A
	 * reduction's key is never remembered, so it never matches: the op
	 * is in the key, and the op table is not asked for a hit. */
	uint64_t key = (uint64_t)x->op | (uint64_t)x->type.dtype << 16 | (uint64_t)x->type.weak << 24;
	f->in = (uint32_t)v->nedges;
	for (int k = 0; k < x->nin; k++) {
		const struct tir_node *o = x->in[k];
		uint32_t id = TIR_FN_NONE;
		if (o) {
			id = o->id;
			if (k < 2)
				key |= (1 | (uint64_t)o->type.dtype << 1 | (uint64_t)o->type.weak << 9) << (25 + 10 * k);
		}
		v->edges[v->nedges++] = id;
	}
	struct tir_fmemo *m = &v->memo[(key * 0x9e3779b97f4a7c15u) >> 56];
	if (m->key == key) {
		f->flags = m->flags;
		f->kind = m->kind;
		f->fdt = m->fdt;
	} else {
		fview_flags(v, x, f, m, key);
	}
	/* (the type of the node added before: most often this one's too) */
	if (v->last == TIR_FN_NONE || !type_same(&v->types[v->last].t, &x->type)) {
		if (fview_type(v, x))
			return -TIR_ENOMEM;
	}
	f->type = v->last;
	return 0;
}

int tir_fview_make(const struct tir_program *p, struct tir_fview *v)
{
	size_t nn = p->nnodes;
	if (tir_fview_init(v, nn))
		return -TIR_ENOMEM;
	for (size_t i = 0; i < nn; i++) {
		ahead(p->nodes, i, nn);
		if (tir_fview_add(v, p->nodes[i])) {
			tir_fview_free(v);
			return -TIR_ENOMEM;
		}
	}
	return 0;
}

void tir_fview_free(struct tir_fview *v)
{
	tir_node_pages_free(v->n, view_n_bytes(v->nnodes));
	tir_pages_free(v->edges, sizeof *v->edges * v->capedges);
	free(v->types);
	free(v->slot);
	free(v->memo);
	memset(v, 0, sizeof *v);
}

/* Operand k of node i in v, or TIR_FN_NONE. */
static inline uint32_t operand(const struct tir_fview *v, uint32_t i, int k)
{
	return v->edges[v->n[i].in + (uint32_t)k];
}

/* Whether operand k of node i is one of its operands before k too. */
static inline bool again(const struct tir_fview *v, uint32_t i, int k)
{
	const uint32_t *e = v->edges + v->n[i].in;
	for (int q = 0; q < k; q++)
		if (e[q] == e[k])
			return true;
	return false;
}

static inline int64_t numel_of(const struct tir_fview *v, uint32_t i)
{
	return v->types[v->n[i].type].numel;
}

/* The table of the group of members ids[0, n) of v, read in place: midx
 * (by node id, 0 but between gtable_of_view and gtable_view_end: the
 * fuser's grow lends its seen, all 0 between groups) set to each member's
 * index + 1. */
static void gtable_of_view(const struct tir_fview *v, const uint32_t *ids, int n, int32_t *midx, struct gtable *t)
{
	for (int j = 0; j < n; j++)
		midx[ids[j]] = j + 1;
	*t = (struct gtable){.v = v, .ids = ids, .midx = midx};
}

/* midx as it was before gtable_of_view(.., ids, n, midx, t). */
static void gtable_view_end(const uint32_t *ids, int n, int32_t *midx)
{
	for (int j = 0; j < n; j++)
		midx[ids[j]] = 0;
}

/* ---- pages for arrays by node id, kept for the next plan or run ----
 * From TIR_PAGES_MIN bytes an array by node id (a plan's block, the view's
 * nodes, a run's counts: cpu.c) is whole huge pages: one fault where
 * small pages take one a page.  A REPL's lines and a server's runs plan
 * and run a long program again and again, each time making arrays of the
 * same sizes: given back, they are kept for the next ask of the same size
 * (lib/ir's tir_pages_take and tir_pages_give: a few, 32 MiB in all, freed
 * by tir_mem_trim), whose pages are faulted in already (a memset, where
 * fresh ones cost the kernel's zeroing and a fault each). */
void *tir_node_pages(size_t n)
{
	if (n < TIR_PAGES_MIN)
		return calloc(1, n ? n : 1);
	bool dirty;
	void *p = tir_pages_take(n, &dirty);
	if (p && dirty)
		memset(p, 0, n);
	return p;
}

void tir_node_pages_free(void *p, size_t n)
{
	if (!p || n < TIR_PAGES_MIN) {
		free(p);
		return;
	}
	tir_pages_give(p, n);
}

/* From this many bytes an array tir_node_sparse makes is a mapping of
 * its own (below, calloc's). */
#define SPARSE_MAP ((size_t)128 * 1024)

/* ---- arrays by node id written at a few ids ----
 * The scores, the reads beyond the edges, the groups' roots: arrays by
 * node id a program mostly leaves 0.  In huge pages (tir_node_pages, the
 * plan's block) every page counts as soon as one byte of it is written,
 * and a plan's block held them between arrays written all through; these
 * are mappings of small pages of their own, zero till written, so that
 * only the pages written count (calloc would not do: it clears what the
 * allocator had freed, a long program's arrays of the pass before).  A
 * page never written but read is the kernel's zero page, a fault each:
 * what reads them at every node asks first whether any was written
 * (tir_plan.extra, dup_scores's list of the values it scored).  At
 * 100,000 nodes they were 36 bytes of the 70 a node the plan's block
 * took. */
void *tir_node_sparse(size_t n)
{
	if (n < SPARSE_MAP)
		return calloc(1, n ? n : 1);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_NOHUGEPAGE
	(void)madvise(p, n, MADV_NOHUGEPAGE); /* (a hint: where huge pages are the default) */
#endif
	return p;
}

void tir_node_sparse_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < SPARSE_MAP)
		free(p);
	else
		munmap(p, n);
}

/* ---- the plan's arrays by node id: one block for a long program ----
 * Planning a program of n nodes takes some twenty arrays of n entries
 * (the plan's own and the passes' scratch): at 100,000 nodes 100 to 800
 * KB each, each on fresh small pages from malloc, a page fault a page
 * (some 1,150 of them, with the run's arrays a quarter of the plan's
 * time).  From TIR_PAGES_MIN bytes in all they come from one block of whole
 * huge pages (tir_pages_take: kept for the next plan when the plan is
 * freed), sized once for the most that is held at a time: a few faults,
 * or none.  Scratch is taken and given back as a stack (an array
 * given back in any order is reused once those above it are), so that
 * the passes after the groups are made reuse the pages the groups grew
 * in.  The block goes with the plan (tir_plan->mem).  Below that (a
 * REPL line, a short program), or when the block is full, an array is
 * malloc'd on its own as before. */
#define PMEM_ARRAYS 32 /* the most taken from the block at a time (tir_fuse_view holds 18) */

struct pmem {
	unsigned char *base;        /* NULL: no block, every array malloc'd */
	size_t cap;                 /* its bytes */
	size_t top;                 /* the first byte not taken */
	size_t fresh;               /* the first byte never taken (zero still) */
	int n;
	struct {
		size_t at;
		bool live;
	} taken[PMEM_ARRAYS];
};

static size_t pm_round(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* whether p lies in the block of bytes at base (NULL: none) */
static bool in_block(const void *base, size_t bytes, const void *p)
{
	const unsigned char *c = p, *b = base;
	return b && c >= b && c < b + bytes;
}

static bool pm_has(const struct pmem *m, const void *p)
{
	return m && in_block(m->base, m->cap, p);
}

/* n bytes (zeroed when zero), from m's block when it has room, else
 * malloc'd; given back with pm_put.  NULL when out of memory. */
static void *pm_get(struct pmem *m, size_t n, bool zero)
{
	size_t sz = pm_round(n ? n : 1);
	if (!m || !m->base || m->n == PMEM_ARRAYS || sz > m->cap - m->top)
		return zero ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
	unsigned char *p = m->base + m->top;
	if (zero && m->top < m->fresh) /* (what was taken before) */
		memset(p, 0, m->fresh - m->top < sz ? m->fresh - m->top : sz);
	m->taken[m->n].at = m->top;
	m->taken[m->n++].live = true;
	m->top += sz;
	m->fresh = m->top > m->fresh ? m->top : m->fresh;
	return p;
}

/* p (from pm_get, or NULL) given back: freed, or in the block, reused
 * once nothing taken after it is held any more */
static void pm_put(struct pmem *m, void *p)
{
	if (!pm_has(m, p)) {
		free(p);
		return;
	}
	size_t at = (size_t)((unsigned char *)p - m->base);
	for (int k = m->n; k-- > 0;)
		if (m->taken[k].at == at) {
			m->taken[k].live = false;
			break;
		}
	while (m->n && !m->taken[m->n - 1].live)
		m->top = m->taken[--m->n].at;
}

/* m's block for plan, of nn nodes (plan->mem: the plan gives it back):
 * the most tir_fuse_view holds at a time, taken in its order (the plan's
 * arrays, the arrays a group grows in, the scratch of one pass), of the
 * arrays written all through (those written at a few ids are pm_sparse's).
 * A size off the mark costs nothing but malloc'd arrays past the end. */
static void pm_init(struct pmem *m, struct tir_plan *plan, size_t nn)
{
	memset(m, 0, sizeof *m);
	size_t e = nn + 1;
	size_t kept = pm_round(e); /* need */
	size_t grow = pm_round(8 * e) + pm_round(4 * e) + pm_round(tir_group_info_bytes((int)e));
	/* taken seen dup cand, then dup_scores's or gen_candidates's */
	size_t scored = 3 * pm_round(e) + pm_round(4 * e) +
			(pm_round(4 * e) + pm_round(e) > pm_round(8 * e) + pm_round(e) ? pm_round(4 * e) + pm_round(e)
											 : pm_round(8 * e) + pm_round(e));
	/* plan_finish: interior dup copies absorbed stamp, gen_decide's gok grd member */
	size_t finish = 2 * pm_round(e) + 3 * pm_round(4 * e) + pm_round(e) + pm_round(4 * e) + pm_round(e);
	/* then, lent past what the plan holds (tir_plan_lend), a kernel of a
	 * group of scalars: vm.c's small_prepare, 12 bytes a member and 4 for
	 * its value (the map by node id over those), some room to spare */
	size_t lend = 24 * e;
	size_t total = kept + grow + (scored > finish ? scored : finish > lend ? finish : lend);
	bool dirty;
	if (nn > (size_t)INT32_MAX / 8 || total < TIR_PAGES_MIN || !(m->base = tir_pages_take(total, &dirty)))
		return;
	m->cap = tir_pages_round(total); /* (all of it: what is past total is room past the guess) */
	m->fresh = dirty ? m->cap : 0;
	plan->mem = m->base;
	plan->memsize = m->cap;
}

void *tir_plan_scratch(const struct tir_plan *plan, size_t n)
{
	if (!plan->mem || plan->memtop > plan->memsize || n > plan->memsize - plan->memtop ||
	    __atomic_load_n(&plan->lent, __ATOMIC_ACQUIRE))
		return NULL;
	return (unsigned char *)plan->mem + plan->memtop;
}

void *tir_plan_lend(struct tir_plan *plan, size_t n)
{
	if (!plan || !plan->mem || plan->memtop > plan->memsize || n > plan->memsize - plan->memtop ||
	    __atomic_exchange_n(&plan->lent, true, __ATOMIC_ACQ_REL))
		return NULL;
	return (unsigned char *)plan->mem + plan->memtop;
}

void tir_plan_unlend(struct tir_plan *plan)
{
	__atomic_store_n(&plan->lent, false, __ATOMIC_RELEASE);
}

/* p, an array of plan's, freed unless it is in plan's block */
static void plan_put(const struct tir_plan *plan, void *p)
{
	if (!in_block(plan->mem, plan->memsize, p))
		free(p);
}

/* plan's arrays written at a few ids (tir_node_sparse's, of its nnodes),
 * freed and NULL */
static void plan_sparse_free(struct tir_plan *plan)
{
	size_t e = plan->nnodes + 1;
	tir_node_sparse_free(plan->keep, sizeof *plan->keep * e);
	tir_node_sparse_free(plan->copy, sizeof *plan->copy * e);
	tir_node_sparse_free(plan->extra_uses, sizeof *plan->extra_uses * e);
	plan->keep = plan->copy = NULL;
	plan->extra_uses = NULL;
}

/* plan's group_at (tir_node_sparse's), freed */
static void plan_groups_free(struct tir_plan *plan)
{
	tir_node_sparse_free(plan->group_at, sizeof *plan->group_at * (plan->nnodes + 1));
	plan->group_at = NULL;
}

/* ---- keep or recompute: the scored choice ---- */

/* What computing op costs per element, counted as bytes moved (ops.def's
 * cost column). */
static int64_t op_cost(enum tir_op op)
{
	return tir_op(op)->cost;
}

static int64_t bytes_of(const struct tir_fview *v, uint32_t i)
{
	return numel_of(v, i) * (int64_t)tir_dtype_size((enum tir_dtype)v->n[i].dt);
}

/* Whether reader r may take a value of dtype dt into its kernel. */
static bool takes(const struct tir_fview *v, uint32_t r, enum tir_dtype dt)
{
	return v->n[r].fdt == dt && (v->n[r].flags & TIR_FN_TAKES);
}

/* A value with its private subtree: elementwise ops read by nothing else,
 * down to values no kernel computes (leaves, rand, ...), at most 8 ops.
 * cost: computing it all, as bytes; leaves[nleaves]: what it reads.
 * false when o is not such a value. */
static bool subtree(const struct tir_fview *v, uint32_t o, const int32_t *readers, const bool *target, int depth,
		    int64_t *cost, uint32_t *leaves, int *nleaves, int *nops)
{
	const struct tir_fnode *f = &v->n[o];
	if (!(f->flags & TIR_FN_FUSABLE) || target[o] || ++*nops > 8 || depth > 8)
		return false;
	/* Each operand's own tests first, before any is walked: a chain that
	 * meets a shared value (a program of statements: t4 = t3 * x) fails
	 * at once, not after walking down its other operands.  The answer is
	 * the same (false is false, whatever was added to cost and leaves on
	 * the way: the caller drops them); only the walk is shorter. */
	for (int k = 0; k < f->nin; k++) {
		uint32_t x = operand(v, o, k);
		if (x == TIR_FN_NONE)
			return false;
		const struct tir_fnode *fx = &v->n[x];
		if (!(fx->flags & TIR_FN_SLEAF) &&
		    (readers[x] != 1 || fx->fdt != f->fdt || !(fx->flags & TIR_FN_FUSABLE) || target[x]))
			return false;
	}
	for (int k = 0; k < f->nin; k++) {
		uint32_t x = operand(v, o, k);
		if (v->n[x].flags & TIR_FN_SLEAF) {
			bool seen = v->n[x].op == TIR_OP_CONST;
			for (int q = 0; q < *nleaves; q++)
				seen |= leaves[q] == x;
			if (!seen && *nleaves < 16)
				leaves[(*nleaves)++] = x;
			else if (!seen)
				return false;
			continue;
		}
		if (!subtree(v, x, readers, target, depth + 1, cost, leaves, nleaves, nops))
			return false;
	}
	/* (added last: a sum, in any order the same, and not asked of the
	 * op table for a subtree that fails) */
	*cost += numel_of(v, o) * op_cost(f->op);
	return true;
}

/* For each elementwise value read by several kernels, made by a private
 * subtree (see subtree), the bytes moved when it is kept (written once,
 * read by each reader; what it reads, read once) and when each reader's
 * kernel recomputes it (what it reads, read by each reader that does not
 * read it anyway, plus computing it again, as bytes).  A value chosen for
 * recomputing takes its subtree along: dup marks them all.  keep and copy
 * come zeroed (by node id), and stay 0 for values that are not chosen
 * among; *any: some value was (else keep and copy are all 0 still). */
static int dup_scores(const struct tir_fview *v, const bool *need, const bool *target, int64_t *keep,
		      int64_t *copy, bool *dup, bool *any, struct pmem *m)
{
	*any = false;
	size_t nn = v->nnodes;
	int32_t *readers = pm_get(m, sizeof *readers * (nn + 1), true);
	bool *bad = pm_get(m, sizeof *bad * (nn + 1), true);
	/* the candidates (values that pass subtree): by node id, 1 + its
	 * index into their leaves (16 each), else 0 */
	int32_t *slot = NULL;
	struct cand_leaves {
		uint32_t leaf[16];
		int n;
	} *cl = NULL;
	size_t ncand = 0, capcand = 0;
	/* the values scored, from the highest id down (keep and copy are
	 * read at those only: their pages elsewhere are never touched) */
	uint32_t *scored = NULL;
	size_t nscored = 0, capscored = 0;
	int rc = -TIR_ENOMEM;
	if (!readers || !bad)
		goto out;
	/* (the view's arrays and the node's fields in locals: a store to
	 * bad, a bool, might be to them for all the compiler knows, and it
	 * would read them again each operand) */
	const struct tir_fnode *vn = v->n;
	const uint32_t *edges = v->edges;
	for (uint32_t i = 0; i < nn; i++) {
		if (!need[i])
			continue;
		/* takes(r, dt), asked of r once: whether it takes a value
		 * into its kernel, of which dtype */
		int nin = vn[i].nin;
		uint8_t fdt = vn[i].fdt;
		bool rtakes = nin && (vn[i].flags & TIR_FN_TAKES);
		const uint32_t *e = edges + vn[i].in;
		for (int k = 0; k < nin; k++) {
			uint32_t o = e[k];
			bool seen = o == TIR_FN_NONE; /* (or again: as again(v, i, k)) */
			for (int q = 0; q < k; q++)
				seen |= e[q] == o;
			if (seen)
				continue;
			readers[o]++;
			bad[o] |= !rtakes || fdt != vn[o].fdt;
		}
		bad[i] |= target[i];
	}
	if (!(slot = tir_node_sparse(sizeof *slot * (nn + 1))))
		goto out;
	for (uint32_t i = (uint32_t)nn; i-- > 0;) {
		if (!need[i] || bad[i] || readers[i] < 2)
			continue;
		struct cand_leaves c = {.n = 0};
		int nops = 0;
		int64_t cost = 0, in_bytes = 0;
		if (!subtree(v, i, readers, target, 0, &cost, c.leaf, &c.n, &nops))
			continue;
		for (int q = 0; q < c.n; q++)
			in_bytes += bytes_of(v, c.leaf[q]);
		keep[i] = bytes_of(v, i) * (readers[i] + 1) + in_bytes;
		copy[i] = cost * (readers[i] - 1);
		*any = true;
		if (dup && tir_grow((void **)&scored, &capscored, nscored + 1, sizeof *scored))
			goto out;
		if (dup)
			scored[nscored++] = i;
		if (!c.n)
			continue;
		if (tir_grow((void **)&cl, &capcand, ncand + 1, sizeof *cl))
			goto out;
		cl[ncand++] = c;
		slot[i] = (int32_t)ncand;
	}
	/* the leaves each reader would read again */
	for (uint32_t r = 0; ncand && r < nn; r++) {
		for (int k = 0; need[r] && k < v->n[r].nin; k++) {
			uint32_t o = operand(v, r, k);
			if (o == TIR_FN_NONE || !slot[o] || again(v, r, k))
				continue;
			const struct cand_leaves *c = &cl[slot[o] - 1];
			for (int q = 0; q < c->n; q++) {
				bool has = false;
				for (int j = 0; j < v->n[r].nin; j++)
					has |= operand(v, r, j) == c->leaf[q];
				if (!has)
					copy[o] += bytes_of(v, c->leaf[q]);
			}
		}
	}
	for (size_t q = 0; q < nscored; q++) {
		uint32_t i = scored[q];
		if (!keep[i] || copy[i] >= keep[i])
			continue;
		/* o and its private subtree */
		uint32_t stack[16];
		int sp = 0;
		stack[sp++] = i;
		while (sp) {
			uint32_t x = stack[--sp];
			dup[x] = true;
			for (int k = 0; k < v->n[x].nin; k++) {
				uint32_t o = operand(v, x, k);
				if (o != TIR_FN_NONE && (v->n[o].flags & TIR_FN_FUSABLE) && sp < 16)
					stack[sp++] = o;
			}
		}
	}
	rc = 0;
out:
	free(cl);
	free(scored);
	tir_node_sparse_free(slot, sizeof *slot * (nn + 1));
	pm_put(m, bad);
	pm_put(m, readers);
	return rc;
}

/* ---- generators: computed in the kernels that read them ----
 * A float creation op (gen.c: zeros ... randn) is a function of the
 * element's index, so a kernel that reads it can compute it where it
 * would load it (vm.c) and it is never stored.  Read by several kernels,
 * it is the scored choice again: stored (written once, read by each) or
 * computed in each, computing counted as bytes (tir_gen_cost). */

static bool gen_float(const struct tir_node *o)
{
	return tir_gen_is_op(o->op) && tir_dtype_is_wide_float(o->type.dtype) && !o->type.weak;
}

/* Whether reader r may take generator o into its kernel. */
static bool gen_taken_by(const struct tir_fview *v, uint32_t r, uint32_t o)
{
	if (v->n[r].flags & TIR_FN_VIEW)
		return v->n[r].dt == v->n[o].dt;
	return takes(v, r, (enum tir_dtype)v->n[o].dt);
}

/* The bytes a generator read by ng kernels moves when kept, and when
 * computed in each (beyond the one computing it either way). */
static void gen_score(const struct tir_fview *v, uint32_t o, int64_t ng, int64_t *keep, int64_t *copy)
{
	*keep = bytes_of(v, o) * (ng + 1);
	*copy = tir_gen_cost((enum tir_op)v->n[o].op) * numel_of(v, o) * (ng - 1);
}

/* Whether some needed node, not a target, is a float generator. */
static bool any_gen(const struct tir_fview *v, const bool *need, const bool *target)
{
	if (!v->gens) /* (no generator in the view: not a node to look at) */
		return false;
	for (size_t i = 0; i < v->nnodes; i++)
		if ((v->n[i].flags & TIR_FN_GEN) && need[i] && !target[i])
			return true;
	return false;
}

/* By node id: generators whose readers could all take them (each reader
 * counted as a kernel), where computing them in each moves fewer bytes. */
static int gen_candidates(const struct tir_fview *v, const bool *need, const bool *target, bool *cand,
			  struct pmem *m)
{
	size_t nn = v->nnodes;
	if (!any_gen(v, need, target)) /* (cand came zeroed) */
		return 0;
	int64_t *readers = pm_get(m, sizeof *readers * (nn + 1), true);
	bool *bad = pm_get(m, sizeof *bad * (nn + 1), true);
	if (!readers || !bad) {
		pm_put(m, bad);
		pm_put(m, readers);
		return -TIR_ENOMEM;
	}
	for (uint32_t i = 0; i < nn; i++) {
		for (int k = 0; need[i] && k < v->n[i].nin; k++) {
			uint32_t o = operand(v, i, k);
			if (o == TIR_FN_NONE || again(v, i, k) || !(v->n[o].flags & TIR_FN_GEN))
				continue;
			readers[o]++;
			bad[o] |= !gen_taken_by(v, i, o);
		}
	}
	for (uint32_t i = 0; i < nn; i++) {
		int64_t keep, copy;
		cand[i] = false;
		if (!need[i] || target[i] || bad[i] || !readers[i] || !(v->n[i].flags & TIR_FN_GEN))
			continue;
		gen_score(v, i, readers[i], &keep, &copy);
		cand[i] = copy < keep;
	}
	pm_put(m, bad);
	pm_put(m, readers);
	return 0;
}

/* After the groups are made: each generator whose readers are all members
 * of kernels of its dtype (never a matmul they finish) is computed by
 * those kernels when that moves fewer bytes (plan->interior; dup when
 * more than one does), with both figures in keep and copy. */
static void gen_decide(const struct tir_fview *v, const bool *need, const bool *target, struct tir_plan *plan,
		       int32_t *ngroups, int32_t *readers, bool *ok, struct pmem *m)
{
	size_t nn = v->nnodes;
	for (size_t i = 0; i < nn; i++) {
		ngroups[i] = readers[i] = 0;
		ok[i] = need[i] && !target[i] && (v->n[i].flags & TIR_FN_GEN);
	}
	for (int g = 0; g < plan->ngroups; g++) {
		const struct tir_group *gr = &plan->groups[g];
		enum tir_dtype dt = gr->info ? gr->info->dt : (enum tir_dtype)gr->root->type.dtype;
		for (int k = 0; k < gr->nin; k++) {
			const struct tir_node *o = gr->inputs[k];
			if (!ok[o->id])
				continue;
			ngroups[o->id]++;
			if ((int)dt != o->type.dtype || o == gr->head)
				ok[o->id] = false;
		}
		/* a matmul the group finishes reads its operands from memory */
		for (int k = 0; gr->head && k < gr->head->nin; k++)
			ok[gr->head->in[k]->id] = false;
	}
	/* every reader a member of some group, and run nowhere else (a value
	 * recomputed by some of its readers' kernels may have a kernel of
	 * its own too); who is a member, marked once (NULL, out of memory:
	 * looked for in every group, as many times as asked) */
	bool *member = pm_get(m, sizeof *member * (nn + 1), true);
	for (int g = 0; member && g < plan->ngroups; g++)
		for (int j = 0; j < plan->groups[g].n; j++)
			member[plan->groups[g].nodes[j]->id] = true;
	for (uint32_t i = 0; i < nn; i++) {
		if (!need[i])
			continue;
		bool alone = !plan->interior[i] && !plan->group_at[i];
		for (int k = 0; k < v->n[i].nin; k++) {
			uint32_t o = operand(v, i, k);
			if (o == TIR_FN_NONE || !ok[o])
				continue;
			bool in_group = member && member[i];
			for (int g = 0; !member && g < plan->ngroups && !in_group; g++)
				for (int j = 0; j < plan->groups[g].n && !in_group; j++)
					in_group = plan->groups[g].nodes[j]->id == i;
			if (!in_group || alone)
				ok[o] = false;
		}
	}
	pm_put(m, member);
	/* kept because the score said so (its readers each a kernel): both
	 * figures, for --explain */
	for (uint32_t i = 0; i < nn; i++) {
		for (int k = 0; need[i] && k < v->n[i].nin; k++) {
			uint32_t o = operand(v, i, k);
			if (o != TIR_FN_NONE && !again(v, i, k) && (v->n[o].flags & TIR_FN_GEN) && need[o] && !target[o])
				readers[o] = !gen_taken_by(v, i, o) ? INT32_MIN : readers[o] + (readers[o] >= 0);
		}
	}
	for (uint32_t i = 0; i < nn; i++) {
		int64_t keep, copy;
		if (readers[i] >= 2 && !ok[i]) {
			gen_score(v, i, readers[i], &keep, &copy);
			if (copy >= keep) {
				plan->keep[i] = keep;
				plan->copy[i] = copy;
			}
		}
		if (!ok[i] || !ngroups[i])
			continue;
		gen_score(v, i, ngroups[i], &keep, &copy);
		plan->interior[i] = ngroups[i] == 1 || copy < keep;
		plan->dup[i] = plan->interior[i] && ngroups[i] > 1;
		plan->keep[i] = ngroups[i] > 1 ? keep : 0;
		plan->copy[i] = ngroups[i] > 1 ? copy : 0;
	}
}

/* tir_plan_finish, with the scores dup_scores made for these arguments
 * when *keep and *copy are given (tir_fuse's own: the plan takes them,
 * and they are NULL after), else made here; ids: the groups' members'
 * node ids, one after the other, or NULL: each group's own (g->ids). */
static int plan_finish(const struct tir_fview *v, const bool *need, const int32_t *uses, const bool *target,
		       struct tir_plan *plan, int64_t **keep, int64_t **copy, const uint32_t *ids, struct pmem *m)
{
	size_t nn = v->nnodes;
	bool scored = keep && *keep && copy && *copy;
	plan_put(plan, plan->interior);
	plan_put(plan, plan->dup);
	plan_sparse_free(plan);
	plan->interior = pm_get(m, sizeof *plan->interior * (nn + 1), true);
	plan->extra_uses = tir_node_sparse(sizeof *plan->extra_uses * (nn + 1));
	plan->extra = false;
	plan->keep = scored ? *keep : tir_node_sparse(sizeof *plan->keep * (nn + 1));
	plan->copy = scored ? *copy : tir_node_sparse(sizeof *plan->copy * (nn + 1));
	if (scored)
		*keep = *copy = NULL;
	plan->dup = pm_get(m, sizeof *plan->dup * (nn + 1), true);
	int32_t *copies = pm_get(m, sizeof *copies * (nn + 1), true);
	int32_t *absorbed = pm_get(m, sizeof *absorbed * (nn + 1), true);
	/* by node id: 1 + the last group it is a member of */
	int32_t *stamp = pm_get(m, sizeof *stamp * (nn + 1), true);
	int rc = -TIR_ENOMEM;
	if (!plan->interior || !plan->extra_uses || !plan->keep || !plan->copy || !plan->dup || !copies ||
	    !absorbed || !stamp)
		goto out;
	if (!scored && dup_scores(v, need, target, plan->keep, plan->copy, NULL, &plan->scored, m))
		goto out;
	for (int g = 0; g < plan->ngroups; g++) {
		const struct tir_group *gr = &plan->groups[g];
		const uint32_t *gid = ids ? ids : gr->ids;
		if (gr->head)
			plan->interior[gr->head->id] = true;
		/* (the view's fields in locals: a store to absorbed, an
		 * int32_t, might be to its edges for all the compiler knows) */
		const struct tir_fnode *vn = v->n;
		const uint32_t *edges = v->edges;
		int n = gr->n;
		for (int j = 0; j < n; j++) {
			uint32_t id = gid[j];
			if (j < n - 1)
				copies[id]++;
			/* an operand is made before its reader: a member, it is
			 * one of those before j, stamped already (so one pass
			 * stamps and counts) */
			const uint32_t *e = edges + vn[id].in;
			int nin = vn[id].nin;
			for (int k = 0; k < nin; k++)
				absorbed[e[k]] += stamp[e[k]] == g + 1;
			stamp[id] = g + 1;
		}
		if (ids)
			ids += gr->n;
	}
	for (uint32_t i = (uint32_t)nn; i-- > 0;) {
		if (!copies[i])
			continue;
		/* a value every reader recomputes is never stored; its operands
		 * are read once per copy (and once more when it is stored);
		 * readers first, so that reads made by copies count */
		bool inner = absorbed[i] == uses[i] + (plan->extra ? plan->extra_uses[i] : 0);
		plan->interior[i] = inner;
		plan->dup[i] = copies[i] > 1 || !inner;
		for (int k = 0; plan->dup[i] && k < v->n[i].nin; k++) {
			plan->extra_uses[operand(v, i, k)] += copies[i] - (inner ? 1 : 0);
			plan->extra = true;
		}
	}
	if (any_gen(v, need, target)) { /* (not in a program of scalars) */
		plan->scored = true; /* (gen_decide may score) */
		bool *gok = pm_get(m, sizeof *gok * (nn + 1), true);
		int32_t *grd = pm_get(m, sizeof *grd * (nn + 1), true);
		bool have = gok && grd;
		if (have)
			gen_decide(v, need, target, plan, copies, grd, gok, m);
		pm_put(m, grd);
		pm_put(m, gok);
		if (!have)
			goto out;
	}
	rc = 0;
out:
	pm_put(m, stamp);
	pm_put(m, absorbed);
	pm_put(m, copies);
	return rc;
}

int tir_plan_finish(const struct tir_program *p, const bool *need, const int32_t *uses,
		    const bool *target, struct tir_plan *plan)
{
	struct tir_fview v;
	size_t nids = 0;
	for (int g = 0; g < plan->ngroups; g++)
		nids += (size_t)plan->groups[g].n;
	uint32_t *ids = malloc(sizeof *ids * (nids + 1));
	if (!ids || tir_fview_make(p, &v)) {
		free(ids);
		return -TIR_ENOMEM;
	}
	for (int g = 0, w = 0; g < plan->ngroups; g++)
		for (int j = 0; j < plan->groups[g].n; j++)
			ids[w++] = plan->groups[g].nodes[j]->id;
	int rc = plan_finish(&v, need, uses, target, plan, NULL, NULL, ids, NULL);
	tir_fview_free(&v);
	free(ids);
	return rc;
}

/* ---- the fuser ---- */

struct grow {
	int32_t *seen;              /* edges from the group's members, by node id */
	struct tir_node **members, **ins;
	uint32_t *ids, *in_ids;     /* the members' and the inputs' node ids */
	/* the nodes that may not join this root's group (at most 8), and why */
	uint32_t forbid[8];
	const char *forbid_why[8];
	int nforbid;
	const bool *dup;            /* by node id: recomputed by each kernel that reads it */
	int nm, ni;
	struct tir_node *head;
	const char *closed;
};

/* Why node id may not join the group s grows, or NULL. */
static const char *forbidden(const struct grow *s, uint32_t id)
{
	for (int k = 0; k < s->nforbid; k++)
		if (s->forbid[k] == id)
			return s->forbid_why[k];
	return NULL;
}

/* Grow the group rooted at node i backwards through the operands it can
 * take, visiting candidates from the highest id down. */
static void grow(const struct tir_program *p, const struct tir_fview *v, uint32_t i, const int32_t *uses,
		 const bool *target, const bool *taken, struct grow *s)
{
	int32_t *seen = s->seen;
	s->nm = s->ni = 0;
	s->head = NULL;
	s->closed = "its operands are all leaves";
	bool stopped = false;
	uint32_t lo = i;
	s->ids[s->nm] = i;
	s->members[s->nm++] = p->nodes[i];
	for (int k = 0; k < v->n[i].nin; k++) {
		uint32_t o = operand(v, i, k);
		seen[o]++;
		lo = o < lo ? o : lo;
	}
	for (uint32_t id = i; id-- > lo;) {
		if (!seen[id])
			continue;
		struct tir_node *o = p->nodes[id];
		const char *forbid = forbidden(s, id);
		if (!s->head && !forbid && v->n[id].op == TIR_OP_MATMUL &&
		    can_head(p->nodes[i], o, seen[id], uses, target, taken)) {
			/* the matmul makes the group's output; the group
			 * finishes each block of it (its epilogue) */
			s->head = o;
			s->in_ids[s->ni] = id;
			s->ins[s->ni++] = o;
			continue;
		}
		const char *why = forbid ? forbid : why_not(p, v, i, id, seen[id], uses, target, taken, s->dup);
		if (!why) {
			/* no bound on the ops or the values a kernel reads:
			 * it grows with its group (vm.c sizes what it keeps
			 * by the group, and its blocks by the caches) */
			s->ids[s->nm] = id;
			s->members[s->nm++] = o;
			/* (in locals: a store to seen might be to the view's
			 * edges for all the compiler knows) */
			const uint32_t *e = v->edges + v->n[id].in;
			int nin = v->n[id].nin;
			for (int k = 0; k < nin; k++) {
				uint32_t x = e[k];
				seen[x]++;
				lo = x < lo ? x : lo;
			}
			continue;
		}
		if (strcmp(why, "a leaf") != 0 && !stopped) {
			s->closed = why; /* the reason nearest the root */
			stopped = true;
		}
		s->in_ids[s->ni] = id;
		s->ins[s->ni++] = o;
	}
	for (uint32_t id = lo; id < i; id++)
		seen[id] = 0;
	/* both were listed from the highest id down: into graph order */
	reverse(s->members, s->nm);
	reverse(s->ins, s->ni);
	reverse_ids(s->ids, s->nm);
	reverse_ids(s->in_ids, s->ni);
}

/* A reducing group that would read a matmul through its elementwise
 * members: the part of it that does not depend on a reduction can instead
 * be the matmul's epilogue, made while each block of the product is in
 * cache.  The same bytes move either way (the product, or that part's
 * value, written once and read once), so the epilogue wins: the member
 * where that part ends (the latest one a reduction or a per-row op reads)
 * is left out, to lead its own kernel with the matmul. */
static const char *epilogue_first(const struct tir_group *g, const struct tir_group_info *in,
				  const int32_t *uses, const bool *target, const bool *taken,
				  bool *scratch, const struct tir_node **culprit)
{
	/* (scratch: 2 * g->n) */
	bool *plain = scratch, *mm = scratch + g->n;
	bool any = false;
	for (int j = 0; j < g->n; j++) {
		const struct tir_node *m = g->nodes[j];
		/* plain: elementwise over the domain, no reduction below */
		plain[j] = in->cls[j] == TIR_FC_FULL && in->via[j] == -1 && tir_fusable(m);
		mm[j] = false;
		for (int k = 0; k < m->nin; k++) {
			int o = member_index(g, j, m->in[k]);
			if (o >= 0) {
				plain[j] &= in->cls[o] != TIR_FC_ROW && (in->cls[o] != TIR_FC_FULL || plain[o]) &&
					    in->cls[o] != TIR_FC_ALIAS;
				mm[j] |= mm[o];
				continue;
			}
			int64_t seen = 0;
			for (int q = 0; q < m->nin; q++)
				seen += m->in[q] == m->in[k];
			if (can_head(m, m->in[k], seen, uses, target, taken))
				mm[j] = true;
		}
		mm[j] &= plain[j];
		any |= mm[j];
	}
	if (!any)
		return NULL;
	for (int j = g->n - 1; j >= 0; j--) {
		if (!mm[j])
			continue;
		for (int q = j + 1; q < g->n; q++)
			for (int k = 0; k < g->nodes[q]->nin; k++)
				if (g->nodes[q]->in[k] == g->nodes[j] && !plain[q]) {
					*culprit = g->nodes[j];
					return "an operand finishes a matmul (its epilogue; the same bytes move)";
				}
	}
	return NULL;
}

/* Whether node r may root a group (a reduction over leading axes too). */
static bool can_root(const struct tir_node *r)
{
	if (tir_op(r->op)->kind == TIR_KIND_REDUCE) {
		const char *why = why_not_reduce(r);
		int split;
		int64_t rows, cols;
		return !why || (!strcmp(why, "an operand reduces leading axes") && red_lead(r, &split, &rows, &cols));
	}
	return tir_fusable(r) && !is_cmp(r->op);
}

int tir_fuse(const struct tir_program *p, const bool *need, const int32_t *uses,
	     const bool *target, struct tir_plan *plan)
{
	struct tir_fview v;
	if (tir_fview_make(p, &v)) {
		memset(plan, 0, sizeof *plan);
		return -TIR_ENOMEM;
	}
	int rc = tir_fuse_view(p, &v, need, uses, target, plan);
	tir_fview_free(&v);
	return rc;
}

/* A group of at least this many members and inputs takes the arrays the
 * fuser grew it in (its members, inputs, their ids and its analysis's
 * arrays), trimmed to their length, rather than a copy of them: a program
 * of 100,000 statements, one group, copies no 2 MB of them. */
#define TAKE_MIN 1024

/* p (of n bytes or more) trimmed to n bytes, or p as it was (in m's
 * block, it stays) */
static void *trimmed(const struct pmem *m, void *p, size_t n)
{
	if (pm_has(m, p))
		return p;
	void *t = realloc(p, n ? n : 1);
	return t ? t : p;
}

/* The arrays a group grows in, for nn nodes: made when missing (the first
 * group, and the next after a group took them).  0, or -TIR_ENOMEM. */
static int grow_arrays(struct grow *s, void **infomem, size_t nn, struct pmem *m)
{
	if (!s->members)
		s->members = pm_get(m, sizeof *s->members * (nn + 1), false);
	if (!s->ins)
		s->ins = malloc(sizeof *s->ins * (nn + 1)); /* (few are written: not in the block) */
	if (!s->ids)
		s->ids = pm_get(m, sizeof *s->ids * (nn + 1), false);
	if (!s->in_ids)
		s->in_ids = malloc(sizeof *s->in_ids * (nn + 1));
	if (!*infomem)
		*infomem = pm_get(m, tir_group_info_bytes((int)nn + 1), false);
	return s->members && s->ins && s->ids && s->in_ids && *infomem ? 0 : -TIR_ENOMEM;
}

/* The group just grown in s, pg, takes the arrays it grew in (see
 * TAKE_MIN), trimmed, and its analysis gi the info's arrays in *infomem:
 * owned by plan from now on, s is left without them.  0, or -TIR_ENOMEM
 * (then s keeps them all). */
static int take_arrays(struct tir_plan *plan, struct tir_group *pg, struct grow *s, void **infomem,
		       struct tir_group_info *gi, const struct pmem *m)
{
	size_t n = (size_t)pg->n, nin = (size_t)pg->nin;
	if (tir_grow((void **)&plan->owned, &plan->capowned, plan->nowned + 5, sizeof *plan->owned))
		return -TIR_ENOMEM;
	pg->nodes = trimmed(m, s->members, sizeof *pg->nodes * n);
	pg->inputs = trimmed(m, s->ins, sizeof *pg->inputs * nin);
	uint32_t *ids = trimmed(m, s->ids, sizeof *ids * n), *in_ids = trimmed(m, s->in_ids, sizeof *in_ids * nin);
	pg->ids = ids;
	pg->input_ids = in_ids;
	pg->info = gi; /* (cls and via placed in *infomem: not trimmed, they would move) */
	plan->owned[plan->nowned++] = pg->nodes;
	plan->owned[plan->nowned++] = pg->inputs;
	plan->owned[plan->nowned++] = ids;
	plan->owned[plan->nowned++] = in_ids;
	plan->owned[plan->nowned++] = *infomem;
	s->members = s->ins = NULL;
	s->ids = s->in_ids = NULL;
	*infomem = NULL;
	return 0;
}

/* tir_fuse_view's scratch, freed (and NULL: freeing it again is a no-op) */
static void free_grow(struct grow *s, void **infomem, bool **scratch, bool **taken, bool **dup, bool **cand,
		      struct pmem *m)
{
	pm_put(m, s->ids);
	pm_put(m, s->in_ids);
	pm_put(m, s->seen);
	pm_put(m, s->members);
	pm_put(m, s->ins);
	pm_put(m, *infomem);
	pm_put(m, *scratch);
	pm_put(m, *taken);
	pm_put(m, *dup);
	pm_put(m, *cand);
	s->ids = s->in_ids = NULL;
	s->seen = NULL;
	s->dup = NULL;
	s->members = s->ins = NULL;
	*infomem = NULL;
	*scratch = *taken = *dup = *cand = NULL;
}

int tir_fuse_view(const struct tir_program *p, const struct tir_fview *v, const bool *need, const int32_t *uses,
		  const bool *target, struct tir_plan *plan)
{
	memset(plan, 0, sizeof *plan);
	size_t nn = p->nnodes;
	plan->nnodes = nn;
	/* the arrays by node id, taken in pm_init's order: what the plan
	 * keeps first, then what a group grows in, then the scratch */
	struct pmem m;
	pm_init(&m, plan, nn);
	plan->group_at = tir_node_sparse(sizeof *plan->group_at * (nn + 1));
	plan->need = pm_get(&m, nn + 1, false);
	if (plan->need)
		memcpy(plan->need, need, nn);
	int64_t *keep = tir_node_sparse(sizeof *keep * (nn + 1)), *copy = tir_node_sparse(sizeof *copy * (nn + 1));
	/* (its arrays made by grow_arrays, as groups take them; with a
	 * block, the first now, below the scratch) */
	struct grow s = {0};
	/* what a group being checked is analyzed into: its members are
	 * at most the nodes (grow_arrays) */
	void *infomem = NULL;
	int rc = m.base ? grow_arrays(&s, &infomem, nn, &m) : 0;
	bool *taken = pm_get(&m, sizeof *taken * (nn + 1), true);
	s.seen = pm_get(&m, sizeof *s.seen * (nn + 1), true);
	/* a group being checked, as analyze reads it */
	struct gtable gt = {0};
	/* (read at every node: in the block, whose pages are written anyway) */
	bool *dup = pm_get(&m, sizeof *dup * (nn + 1), true), *cand = pm_get(&m, sizeof *cand * (nn + 1), true);
	bool *scratch = malloc(2 * (nn + 1)); /* (a reducing group's: few are written) */
	size_t capg = 0;
	if (rc || !plan->group_at || !plan->need || !taken || !s.seen || !keep || !copy || !dup || !cand || !scratch ||
	    dup_scores(v, need, target, keep, copy, dup, &plan->scored, &m) ||
	    gen_candidates(v, need, target, cand, &m)) {
		rc = -TIR_ENOMEM;
		goto out;
	}
	/* a value several kernels read is recomputed by each when that moves
	 * fewer bytes (computing counted as bytes) than keeping it */
	s.dup = dup;
	/* roots from the last node back, so a chain's end heads its group */
	for (uint32_t i = (uint32_t)nn; i-- > 0;) {
		if (!need[i] || taken[i] || dup[i] || !(v->n[i].flags & TIR_FN_ROOT))
			continue; /* (a recomputed value is its readers') */
		struct tir_node *r = p->nodes[i];
		/* grow, then check the whole: a member that cannot be in the
		 * kernel is left out (its reason is the group's), up to 8 times */
		struct tir_group g = {0};
		struct tir_group_info info; /* the last attempt's, kept with the group */
		s.nforbid = 0;
		bool ok = false;
		const char *first_why = NULL;
		for (int attempt = 0; attempt < 9; attempt++) {
			if (grow_arrays(&s, &infomem, nn, &m)) {
				rc = -TIR_ENOMEM;
				goto out;
			}
			grow(p, v, i, uses, target, taken, &s);
			bool gen = false; /* a kernel of one op computing a generator it reads */
			for (int k = 0; k < v->n[i].nin; k++)
				gen |= operand(v, i, k) != TIR_FN_NONE && cand[operand(v, i, k)];
			if (s.nm == 1 && !s.head && !gen)
				break;
			g = (struct tir_group){.root = r, .n = s.nm, .nodes = s.members, .nin = s.ni,
					       .inputs = s.ins, .closed = s.closed, .head = s.head};
			const struct tir_node *culprit;
			tir_group_info_place(&info, infomem, s.nm);
			gtable_of_view(v, s.ids, s.nm, s.seen, &gt); /* (grow left seen all 0) */
			const char *why = analyze(&g, &gt, &info, &culprit);
			gtable_view_end(s.ids, s.nm, s.seen);
			if (!why && info.reduces)
				why = epilogue_first(&g, &info, uses, target, taken, scratch, &culprit);
			if (!why) {
				ok = true;
				break;
			}
			first_why = first_why ? first_why : why;
			if (culprit == r || attempt == 8)
				break;
			s.forbid[s.nforbid] = culprit->id;
			s.forbid_why[s.nforbid++] = why;
		}
		if (!ok) {
			/* nothing joined: the reference kernel runs it (why: by
			 * node id, made for the first such) */
			if (first_why && !plan->alone && !(plan->alone = calloc(nn + 1, sizeof *plan->alone))) {
				rc = -TIR_ENOMEM;
				goto out;
			}
			if (first_why)
				plan->alone[i] = first_why;
			continue;
		}
		if (tir_grow((void **)&plan->groups, &capg, (size_t)plan->ngroups + 1, sizeof *plan->groups)) {
			rc = -TIR_ENOMEM;
			goto out;
		}
		struct tir_group *pg = &plan->groups[plan->ngroups];
		*pg = g;
		for (int j = 0; j < g.n; j++)
			taken[s.ids[j]] = !dup[s.ids[j]] || j == g.n - 1;
		if (g.head)
			taken[g.head->id] = true;
		if (g.n + g.nin >= TAKE_MIN) {
			struct tir_group_info *gi = tir_arena_alloc(&plan->arena, sizeof *gi);
			if (!gi) {
				rc = -TIR_ENOMEM;
				goto out;
			}
			*gi = info; /* (its cls and via in infomem, which pg takes) */
			if (take_arrays(plan, pg, &s, &infomem, gi, &m)) {
				rc = -TIR_ENOMEM;
				goto out;
			}
			plan->group_at[i] = ++plan->ngroups;
			continue;
		}
		pg->nodes = tir_arena_alloc(&plan->arena, sizeof *pg->nodes * (size_t)g.n);
		pg->inputs = tir_arena_alloc(&plan->arena, sizeof *pg->inputs * (size_t)(g.nin ? g.nin : 1));
		if (!pg->nodes || !pg->inputs) {
			rc = -TIR_ENOMEM;
			goto out;
		}
		memcpy(pg->nodes, g.nodes, sizeof *g.nodes * (size_t)g.n);
		memcpy(pg->inputs, g.inputs, sizeof *g.inputs * (size_t)g.nin);
		uint32_t *ids = tir_arena_alloc(&plan->arena, sizeof *ids * ((size_t)g.n + (size_t)g.nin + 1));
		if (!ids) {
			rc = -TIR_ENOMEM;
			goto out;
		}
		memcpy(ids, s.ids, sizeof *ids * (size_t)g.n);
		memcpy(ids + g.n, s.in_ids, sizeof *ids * (size_t)g.nin);
		pg->ids = ids;
		pg->input_ids = ids + g.n;
		struct tir_group_info *gi = tir_arena_alloc(&plan->arena, sizeof *gi);
		void *gm = tir_arena_alloc(&plan->arena, tir_group_info_bytes(g.n));
		if (!gi || !gm) {
			rc = -TIR_ENOMEM;
			goto out;
		}
		/* the analysis just checked, moved into the plan's storage
		 * (analyzing pg again gives the same: its nodes are g's) */
		*gi = info;
		tir_group_info_place(gi, gm, g.n);
		memcpy(gi->cls, info.cls, (size_t)g.n);
		memcpy(gi->via, info.via, sizeof *gi->via * (size_t)g.n);
		pg->info = gi;
		plan->group_at[i] = ++plan->ngroups;
	}
	/* (what grew the groups, freed first: plan_finish's arrays take
	 * its memory, not fresh pages) */
	free_grow(&s, &infomem, &scratch, &taken, &dup, &cand, &m);
	rc = plan_finish(v, need, uses, target, plan, &keep, &copy, NULL, &m);
out:
	free_grow(&s, &infomem, &scratch, &taken, &dup, &cand, &m);
	tir_node_sparse_free(copy, sizeof *copy * (nn + 1));
	tir_node_sparse_free(keep, sizeof *keep * (nn + 1));
	if (rc)
		tir_plan_free(plan);
	else if (plan->mem)
		plan->memtop = m.top; /* (what is past it: the passes' scratch, given back) */
	return rc;
}

void tir_plan_free(struct tir_plan *plan)
{
	TIR_ASSERT(!plan->lent); /* (the kernel lent its block is freed first) */
	free(plan->groups);
	plan_put(plan, plan->interior);
	plan_put(plan, plan->need);
	plan_put(plan, plan->dup);
	plan_sparse_free(plan);
	plan_groups_free(plan);
	plan_put(plan, plan->alone);
	tir_arena_free(&plan->arena);
	for (size_t k = 0; k < plan->nowned; k++)
		plan_put(plan, plan->owned[k]);
	free(plan->owned);
	tir_node_pages_free(plan->mem, plan->memsize);
	memset(plan, 0, sizeof *plan);
}

/* b bytes as "48 B", "12.0 KiB", "3.5 MiB" */
static void add_bytes(struct tir_str *out, int64_t b)
{
	if (b < 1024)
		tir_str_addf(out, "%lld B", (long long)b);
	else if (b < 1024 * 1024)
		tir_str_addf(out, "%.1f KiB", (double)b / 1024);
	else
		tir_str_addf(out, "%.1f MiB", (double)b / (1024 * 1024));
}

/* The scored choice about value n, if there was one. */
static void add_choice(struct tir_str *out, const struct tir_program *p, const struct tir_plan *plan,
		       const struct tir_node *n, bool recomputed)
{
	int64_t keep = plan->keep[n->id], copy = plan->copy[n->id];
	/* (readers that share one kernel recompute nothing) */
	if (!keep || recomputed != (copy < keep) || (recomputed && !plan->dup[n->id]))
		return;
	const char *name = tir_node_current_name(p, n);
	tir_str_addf(out, recomputed ? ", recomputes %s (moves " : ", kept for its readers (moves ",
		     name ? name : tir_op(n->op)->name);
	add_bytes(out, recomputed ? copy : keep);
	tir_str_addf(out, "%s", recomputed ? ", keeping it " : ", recomputing it ");
	add_bytes(out, recomputed ? keep : copy);
	tir_str_add(out, ")", 1);
}

char *tir_plan_explain(const struct tir_program *p, const struct tir_plan *plan)
{
	struct tir_str out = {0};
	char tb[TIR_TYPE_STRLEN];
	int k = 0;
	for (size_t i = 0; i < plan->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (!plan->need[i] || plan->interior[i] || n->op == TIR_OP_CONST || n->op == TIR_OP_INPUT)
			continue;
		const char *name = tir_node_current_name(p, n);
		int g = tir_plan_group(plan, i);
		tir_str_addf(&out, "kernel %d: ", ++k);
		if (g >= 0) {
			const struct tir_group *gr = &plan->groups[g];
			struct tir_group_info info = {0};
			const struct tir_node *culprit;
			void *im = NULL;
			if (gr->info) {
				info = *gr->info;
			} else if ((im = malloc(tir_group_info_bytes(gr->n)))) {
				tir_group_info_place(&info, im, gr->n);
				tir_group_analyze(gr, &info, &culprit);
			}
			/* generators it computes (never stored) come first */
			int ngen = 0;
			for (int q = 0; q < gr->nin; q++)
				ngen += tir_gen_is_op(gr->inputs[q]->op) && plan->interior[gr->inputs[q]->id];
			tir_str_addf(&out, "%sfused %d ops [", gr->head ? "matmul + " : "", gr->n + ngen);
			for (int q = 0, first = 1; q < gr->nin; q++)
				if (tir_gen_is_op(gr->inputs[q]->op) && plan->interior[gr->inputs[q]->id]) {
					tir_str_addf(&out, "%s%s", first ? "" : " ", tir_op(gr->inputs[q]->op)->name);
					first = 0;
				}
			for (int j = 0; j < gr->n; j++)
				tir_str_addf(&out, "%s%s", j || ngen ? " " : "", tir_op(gr->nodes[j]->op)->name);
			tir_str_addf(&out, "] -> %s %s", name ? name : "_", tir_type_str(&n->type, tb, sizeof tb));
			if (info.leading)
				tir_str_addf(&out, " down columns of %lld", (long long)info.rows);
			else if (info.reduces)
				tir_str_addf(&out, " in rows of %lld", (long long)info.cols);
			tir_str_addf(&out, ", reads %d", gr->nin - ngen);
			/* what is computed once per call, not per element */
			for (int j = 0, first = 1; info.cls && j < gr->n; j++)
				if (info.cls[j] == TIR_FC_ONCE) {
					tir_str_addf(&out, "%s%s", first ? ", once: " : " ", tir_op(gr->nodes[j]->op)->name);
					first = 0;
				}
			free(im);
			for (int q = 0; q < gr->nin; q++)
				if (tir_gen_is_op(gr->inputs[q]->op) && plan->interior[gr->inputs[q]->id])
					add_choice(&out, p, plan, gr->inputs[q], true);
			for (int j = 0; j < gr->n; j++)
				add_choice(&out, p, plan, gr->nodes[j], true);
			add_choice(&out, p, plan, n, false);
			tir_str_addf(&out, "; closed: %s\n", gr->closed);
		} else if (tir_op(n->op)->nres > 1) { /* several results, packed: named by its RESULT nodes */
			tir_str_addf(&out, "%s -> (", tir_op(n->op)->name);
			for (int r = 1; r <= tir_node_nres(n) && i + (size_t)r < p->nnodes; r++) {
				const char *rn = tir_node_current_name(p, p->nodes[i + (size_t)r]);
				tir_str_addf(&out, "%s%s %s", r > 1 ? ", " : "", rn ? rn : "_",
					     tir_type_str(&p->nodes[i + (size_t)r]->type, tb, sizeof tb));
			}
			tir_str_add(&out, ")\n", 2);
		} else if (n->op == TIR_OP_RESULT) {
			tir_str_addf(&out, "result %d of %s -> %s %s, a view\n", tir_result_index(n) + 1,
				     tir_op(n->in[0]->op)->name, name ? name : "_", tir_type_str(&n->type, tb, sizeof tb));
		} else {
			tir_str_addf(&out, "%s -> %s %s", tir_op(n->op)->name, name ? name : "_",
				     tir_type_str(&n->type, tb, sizeof tb));
			add_choice(&out, p, plan, n, false);
			if (plan->alone && plan->alone[i])
				tir_str_addf(&out, "; alone: %s", plan->alone[i]);
			tir_str_add(&out, "\n", 1);
		}
	}
	return out.oom ? (tir_str_free(&out), NULL) : out.s;
}

/* ---- the plan as a Graphviz graph (tir fmt --dot, .graph NAME --dot) ---- */

/* s with the characters a DOT string cannot hold as they are escaped */
static void dot_str(struct tir_str *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			tir_str_add(out, "\\", 1);
		if (*s == '\n')
			tir_str_add(out, "\\n", 2);
		else
			tir_str_add(out, s, 1);
	}
}

/* One node's box: "name = op" (or "op"), then its type. */
static void dot_node(struct tir_str *out, const struct tir_program *p, const struct tir_plan *plan,
		     const struct tir_node *n, const char *indent)
{
	char tb[TIR_TYPE_STRLEN], label[512];
	const char *name = tir_node_current_name(p, n);
	const char *op = tir_op(n->op)->name;
	if (n->op == TIR_OP_INPUT)
		snprintf(label, sizeof label, "input %s\n%s", n->input_name ? n->input_name : "?",
			 tir_type_str(&n->type, tb, sizeof tb));
	else if (n->op == TIR_OP_CONST && n->type.rank == 0 && !n->data)
		snprintf(label, sizeof label, "%.6g",
			 n->type.dtype == TIR_DTYPE_F32 || n->type.dtype == TIR_DTYPE_F64 ? n->fval
											  : (double)n->ival);
	else if (n->op == TIR_OP_CONST)
		snprintf(label, sizeof label, "%s%sliteral\n%s", name ? name : "", name ? " = " : "",
			 tir_type_str(&n->type, tb, sizeof tb));
	else
		snprintf(label, sizeof label, "%s%s%s\n%s", name ? name : "", name ? " = " : "", op,
			 tir_type_str(&n->type, tb, sizeof tb));
	tir_str_addf(out, "%sn%u [label=\"", indent, n->id);
	dot_str(out, label);
	/* leaves plain, values stored bold, values never stored dashed */
	const char *style = n->op == TIR_OP_INPUT || n->op == TIR_OP_CONST ? "shape=plaintext"
			    : plan->interior[n->id]			 ? "style=dashed"
									 : "style=bold";
	tir_str_addf(out, "\", %s];\n", style);
}

char *tir_plan_dot(const struct tir_program *p, const struct tir_plan *plan)
{
	struct tir_str out = {0};
	tir_str_addf(&out, "digraph tir {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
	bool *drawn = calloc(plan->nnodes + 1, sizeof *drawn);
	if (!drawn)
		return NULL;
	/* each kernel a cluster: a group's nodes (and the generators it
	 * computes inside), or one node run alone */
	int k = 0;
	for (size_t i = 0; i < plan->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (!plan->need[i] || plan->interior[i] || n->op == TIR_OP_CONST || n->op == TIR_OP_INPUT)
			continue;
		int g = tir_plan_group(plan, i);
		k++;
		tir_str_addf(&out, "  subgraph cluster_%d {\n    label=\"kernel %d%s\";\n", k, k,
			     g >= 0 ? (plan->groups[g].head ? ": matmul + fused" : ": fused") : "");
		if (g >= 0) {
			const struct tir_group *gr = &plan->groups[g];
			for (int q = 0; q < gr->nin; q++)
				if (plan->interior[gr->inputs[q]->id] && !drawn[gr->inputs[q]->id]) {
					dot_node(&out, p, plan, gr->inputs[q], "    ");
					drawn[gr->inputs[q]->id] = true;
				}
			for (int j = 0; j < gr->n; j++)
				if (!drawn[gr->nodes[j]->id]) {
					dot_node(&out, p, plan, gr->nodes[j], "    ");
					drawn[gr->nodes[j]->id] = true;
				}
		} else {
			dot_node(&out, p, plan, n, "    ");
			drawn[i] = true;
		}
		tir_str_add(&out, "  }\n", 4);
	}
	/* what the kernels read from outside any: inputs, literals, values
	 * kept from an earlier run */
	for (size_t i = 0; i < plan->nnodes; i++)
		if (plan->need[i] && !drawn[i]) {
			dot_node(&out, p, plan, p->nodes[i], "  ");
			drawn[i] = true;
		}
	for (size_t i = 0; i < plan->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (!plan->need[i])
			continue;
		for (int q = 0; q < n->nin; q++)
			if (n->in[q] && drawn[n->in[q]->id])
				tir_str_addf(&out, "  n%u -> n%u;\n", n->in[q]->id, n->id);
	}
	tir_str_add(&out, "}\n", 2);
	free(drawn);
	return out.oom ? (tir_str_free(&out), NULL) : out.s;
}

