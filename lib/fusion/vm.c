/*
 * vm.c — runs a fused group as one pass over memory.
 *
 * The group's domain (tir_group_analyze) is seen as rows x cols: cols are
 * the reduced elements of a row when the group reduces, else 1 (so rows
 * are plain elements).  Rows are cut into tasks sized by the shape and the
 * caches (tir_task_items; never by the thread count, so results never
 * depend on it), tasks into blocks of rows whose registers fit in cache;
 * every member of the group computes its block into a register with the
 * reference kernels themselves (on 2-D views of the registers), so a
 * fused result is bitwise the unfused one:
 *   - FULL members: one value per element of the block ([rows, cols]);
 *   - ROW members: one value per row (reductions fold each row with
 *     reduce.c's own functions, tir_reduce_run, in the same order);
 *   - ONCE members (broadcast operands, views of inputs): computed once
 *     per call before the blocks, then read like inputs;
 *   - ALIAS members (views of FULL members): no work, the member below is
 *     computed in their layout.
 * A row too long for its block's registers to stay in L2 is done one
 * piece of cols at a time, each reduction pulling the pieces it folds (the
 * members it reads are recomputed for each pass over the row); one such
 * row summed by the root is summed in pieces of its pairwise tree, on the
 * pool (each piece's operand made by the members' calls planned as for a
 * group of elements: run_steps).  A group whose root reduces leading axes runs down the cols
 * instead: tasks over cols fold the rows in order.  A group reading a
 * value across its last axis (a transpose) runs over 32x32 tiles.
 * Values read from memory are read in place when the block is a 2-D
 * strided view of them, else gathered per block.  Contiguous blocks go
 * straight to vmath (each member's function looked up once), as the
 * reference kernels' contiguous runs do; a scalar or a value per row goes
 * unspread to vmath's one-value functions.  A group of plain elements runs
 * its members in order per block of EBLK (run_elems), with none of the
 * bookkeeping that rows need (each member's call and its operands'
 * addresses planned once per task: elems_plan); so does a group whose
 * blocks hold whole rows (run_rows: reductions fold them in place with
 * tir_reduce_rows, and a register is reused once its last reader has
 * run).  Interior values live only in registers.
 */
#include "fusion.h"
#include "../exec/vmath.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* GCC's -O2 cost model vectorizes no loop that needs a remainder (the
 * broadcast fills below); ask for "cheap", as elementwise.c does.
 * align-loops: every loop starts a 64-byte line, so that the speed of the
 * block loops (gather, ensure) does not hang on where the linker happens
 * to put this file (as vmath.c's; a change elsewhere in lib/ moved them
 * and a fused chain ran slower with the same instructions). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap", "align-loops=64")
#endif

#define RAW_MIN 64               /* cols of a block from which a value per row is not spread */
/* rows and cols of a tile (groups reading across rows): 32 of them read
 * across a row touch 32 lines, a few KiB, in L1 on any machine; it is
 * about lines and pages, not cache size, so it stays fixed */
#define TILE 32

/* Block sizes, from the caches (machine.c) once per process (sizes()).
 * None changes a result: blocks and tasks only decide which rows or
 * elements are computed together, and each is computed the same way in
 * any of them (a reduction follows reduce.c's pairwise tree whatever the
 * pieces it is fetched in). */
static struct {
	/* elements per register, groups of elements (run_elems): the
	 * registers in L1 while the calls stay long; L1d / 64 (16 arrays of
	 * f32; bench/chain.tir, 16M f32, 1 thread, L1d 48 KiB, ms: 128 32.1,
	 * 256 28.6, 512 27.7, 1024 28.0) */
	int64_t eblk;
	/* elements per register of a piece of a long row, or of cols down:
	 * one row a block, so twice eblk (L1d / 32) */
	int64_t blk;
	/* bytes per register, whole rows of a reducing group: L2 / 32, so a
	 * block's registers (a handful to a dozen) stay in half of L2 */
	int64_t rowbytes;
	/* bytes of registers holding whole long rows: 3/8 of L2, the rest for
	 * the rows they read and write */
	int64_t rowfit;
	/* bytes a block of whole rows may stream and stay in L1: half of L1d */
	int64_t l1fit;
	/* bytes of a root (rows of a reducing group) from which it goes out
	 * with stores that bypass the caches (nt_copy), when its blocks are
	 * larger than L1: 4 x L2, more than the caches near a core hold, so
	 * not read back from them soon anyway.  (Blocks in L1 lose by it, as
	 * bench/softmax_hand.tir's of 1 row do; layernorm_hand's of 16 rows
	 * gain.) */
	int64_t ntmin;
	/* registers start this far past a page boundary: half of an L1d way
	 * (see thread_regs) */
	size_t skew;
} sz;
static pthread_once_t sz_once = PTHREAD_ONCE_INIT;

/* The largest power of two <= n (n >= 1). */
static int64_t pow2_floor(int64_t n)
{
	int64_t p = 1;
	while (p <= n / 2)
		p *= 2;
	return p;
}

static void sizes_init(void)
{
	const struct tir_caches *c = tir_machine_caches();
	sz.eblk = pow2_floor(c->l1d / 64);
	sz.blk = pow2_floor(c->l1d / 32);
	if (sz.blk < 128)           /* reductions take pieces of >= 128 */
		sz.blk = 128;
	sz.rowbytes = c->l2 / 32;
	sz.rowfit = c->l2 / 8 * 3;
	sz.l1fit = c->l1d / 2;
	sz.ntmin = c->l2 * 4;
	int64_t way = c->l1d / c->l1d_ways;
	sz.skew = (size_t)(way / 2 < 64 ? 64 : way / 2 > 2048 ? 2048 : way / 2) / 64 * 64;
}

static void sizes(void)
{
	pthread_once(&sz_once, sizes_init);
}

/* A value read from memory, as one kind of reader sees it. */
struct src {
	int val;                 /* index into vm->vals */
	int next;                /* the next source of the same value, or -1 (vm->src_of) */
	bool row;                /* by row (read by per-row members), else over the domain */
	int sp;                  /* domain: the layout it is read in (tir_group_info.via) */
	struct tir_tensor v;     /* the view: the domain's shape, or the row reader's */
	bool direct;             /* a block is a 2-D view of v (strides so, si): no copy */
	bool bcast;              /* v is constant along cols (si 0): the block is filled from
				  * one value per row (so 0: one value), into reg */
	int64_t so, si;
	bool for_red;            /* a reduction reads it: cols must be contiguous */
	int reg;                 /* else its register */
	const struct tir_gen *gen; /* v views a generator: computed, never read */
};

struct vnode {
	const struct tir_node *n;
	int cls;
	bool red;                /* a reduction */
	bool pre;                /* computed before the blocks (vals[val]) */
	int val;
	int base;                /* FULL, ALIAS: the member whose register holds it */
	int reg;                 /* its register; -1 the output */
	int breg;                /* ROW read by FULL members: its values spread over cols */
	int steal;               /* FULL computed over this member's register, or -1 */
	int op[3];               /* >= 0 a member, < 0 ~source */
	/* vmath's functions for its op, looked up once (NULL: none): over
	 * arrays, and with operand k one value (taken unspread) */
	tir_vmath1_fn f1;
	tir_vmath2_fn f2, sfn[2];
	bool sel;                /* a mask or three operands (where, clip): tir_k_select_run */
	bool mask;               /* a comparison (1 or 0), or where reading a mask */
};

/* A member of a small group (run_small): its op's function, its
 * operands (>= 0 a member, < 0 ~input). */
union sfn {
	tir_vmath1_fn f1;
	tir_vmath2_fn f2;
};

/* (12 bytes: a program of 100,000 scalar statements holds 100,000) */
struct snode {
	int32_t op[2];           /* its operands: member j' >= 0, or ~k input k; a third
				  * one (where, clip) in vm->op3, in the members' order */
	uint8_t kind;            /* enum skind */
	uint8_t nin;
	uint8_t fn;              /* SK_F1, SK_F2: its function, vm->sfn[fn] */
	char arith;              /* SK_F2 of + - * /: the operator (sarith_one), else 0 */
};
/* The most functions a small group's members call (more: not small).  A
 * group calls at most one a vector-function op of ops.def (its dtype is
 * the group's), and there are fewer such ops than SMALL_FNS: no group of
 * scalars falls back for want of room (a new kind of vec column must be
 * counted here, or this does not build). */
#define SMALL_FNS 64
#define SMALL_VEC_NONE 0
#define SMALL_VEC_UNARY 1
#define SMALL_VEC_BINARY 1
#define SMALL_VEC_BINARY_SV 1
enum {
	SMALL_VEC_OPS = 0
#define X(e, name, kind, sig, rule, fuse, cost, vec) +SMALL_VEC_##vec
#include "ir/ops.def"
#undef X
};
_Static_assert(SMALL_VEC_OPS <= SMALL_FNS, "a group of scalars can call more functions than SMALL_FNS");

struct vm {
	const struct tir_group *g;
	struct tir_group_info info;
	enum tir_dtype dt;
	size_t esz;
	int64_t rows, cols;
	int64_t k;               /* rows per block */
	int64_t chunk;           /* cols per block: all, or (one row at a time) fewer */
	int64_t red_chunk;       /* pieces reductions ask for (>= 128, a multiple of 8) */
	int64_t task_rows;
	int n;
	/* What the vm keeps is sized by its group (any length: vm_new), in
	 * one block kept for the thread's next kernel (struct vm_spare):
	 * nd[n], src[3 n] (a source per operand at most), gens[nin] and
	 * vbuf[nin] (filled whole when used: not cleared), vals, borrowed
	 * and vg by value (nin + n + 1), the info's by-member arrays. */
	struct vnode *nd;
	int nsrc;
	struct src *src;
	struct tir_gen *gens;
	struct tir_buf *vbuf;    /* the generators' buffers: no data, never freed */
	int nvals;
	struct tir_tensor *vals; /* the inputs in the group's dtype, then values made before */
	int *src_of;             /* by value: its first source, or -1 (then src[].next) */
	void *mem;               /* the block all of these are in */
	size_t memcap;
	int nbig, nsmall;        /* registers: a block's elements, a block's rows */
	int tile_reg;            /* the root's tile, when blocks are tiles */
	size_t bigsz, smallsz;
	char *out;
	bool done;               /* the root was made before the blocks */
	bool elems;              /* elements only (cols 1, all FULL): run_elems */
	/* one long row summed by the root (run_pieces), the rest all FULL:
	 * the sum's operand is computed per piece as a group of elements
	 * (run_steps over cols, from red_piece), not member by member
	 * through ensure's memo */
	bool pelems;
	bool lean;               /* whole rows a block, members FULL, ROW or ALIAS: run_rows */
	bool nt;                 /* lean, or elements reading no memory: the root made in a
				  * register, copied out by nt_copy */
	int oom;                 /* a task could not get its registers */
	bool *borrowed;          /* by value: vals[k] is the caller's in[k], not a reference */
	/* generators the group computes (inputs without a value): by vals
	 * index, 1 + the generator a value views (0: a value in memory) */
	int ngen;
	int32_t *vg;
	/* by input: one element of another dtype (a literal, held in f64)
	 * converted into the vm's own storage, with no tensor made */
	struct tir_buf *cbuf;
	double *cval;
	int below;               /* inputs_below's cursor: g->inputs[0, below) are made
				  * before the member last asked about */
	bool kept;               /* kept by its caller for the next runs (tir_fused_keep):
				  * the sources' views hold no references, their buffers
				  * are the inputs' of the run under way (tir_fused_rebind) */
	/* a group over a handful of elements (run_small): none of the above
	 * but g, n, dt, esz, rows, cols, out, mem, memcap and the info's
	 * shape; its members (sn), their values and its inputs' (slots of
	 * vsz bytes: sval, sin) */
	bool small;
	int64_t numel;
	size_t vsz;
	struct snode *sn;
	char *sval, *sin;
	int32_t *iedge, *iid;    /* by input: the members' operands reading it, its node's id */
	size_t sbytes;           /* the vm and its block (mem) */
	union sfn *sfn;          /* the functions its members call (snode.fn): one a member at most */
	int32_t *op3;            /* the third operands of the members that have one, malloc'd */
	size_t n3, cap3;
	struct tir_plan *lender; /* mem is this plan's block, lent (tir_plan_lend), or NULL */
};

/* ---- views ---- */

/* t: a 2-D view [k, n] with element strides so, si over memory p. */
static void mkview(struct tir_tensor *t, struct tir_buf *b, enum tir_dtype dt, const void *p, int64_t k,
		   int64_t n, int64_t so, int64_t si)
{
	*b = (struct tir_buf){.refs = 1, .data = (void *)p};
	*t = (struct tir_tensor){.dtype = dt, .rank = 2, .shape = {k, n}, .strides = {so, si}, .buf = b};
}

/* Axes [d0, d1) of v as one axis: its stride, when they merge. */
static bool collapse(const struct tir_tensor *v, int d0, int d1, int64_t *stride)
{
	int64_t want = 0;
	bool any = false;
	*stride = 0;
	for (int d = d1 - 1; d >= d0; d--) {
		if (v->shape[d] == 1)
			continue;
		if (!any)
			*stride = v->strides[d];
		else if (v->strides[d] != want)
			return false;
		any = true;
		want = v->strides[d] * v->shape[d];
	}
	return true;
}

/* d[e] = s[e * sl] for e < n (sl 0: one value spread) */
static void copy_strided4(uint32_t *d, const uint32_t *s, int64_t sl, int64_t n)
{
	if (sl == 0) {
		uint32_t v = s[0];
		for (int64_t e = 0; e < n; e++)
			d[e] = v;
		return;
	}
	for (int64_t e = 0; e < n; e++)
		d[e] = s[e * sl];
}

static void copy_strided8(uint64_t *d, const uint64_t *s, int64_t sl, int64_t n)
{
	if (sl == 0) {
		uint64_t v = s[0];
		for (int64_t e = 0; e < n; e++)
			d[e] = v;
		return;
	}
	for (int64_t e = 0; e < n; e++)
		d[e] = s[e * sl];
}

/* Elements [i0, i0 + n) (row-major over v's own shape) of view v: a
 * pointer into v itself when they are one contiguous run, else copied to
 * dst run by run along the last axis (memcpy, fill or strided loop).
 * With gen, v views a generator (no data): the elements are computed
 * into dst, run by run, from their flat indices in it (v's offsets). */
static const char *gather(const struct tir_gen *gen, const struct tir_tensor *v, size_t es, int64_t i0,
			  int64_t n, char *dst)
{
	const char *base = v->buf->data;
	int last = v->rank - 1;
	/* a value stored in another dtype (f16 weights, i8 codes, a mask):
	 * widened run by run into dst, never read in place */
	enum tir_dtype dt = es == 4 ? TIR_DTYPE_F32 : TIR_DTYPE_F64;
	bool cvt = !gen && v->dtype != dt;
	size_t ses = tir_dtype_size(v->dtype);
	if (cvt && last < 0) {
		tir_cvt_run(dt, dst, v->dtype, base + v->offset * (int64_t)ses, 1, 1);
		return dst;
	}
	if (last < 0 && gen) {
		tir_gen_run(gen, dst, v->offset, 0, 1);
		return dst;
	}
	if (last < 0)
		return base + v->offset * (int64_t)es;
	int64_t idx[TIR_MAX_RANK];
	int64_t rem = i0, off = v->offset;
	for (int d = last; d >= 0; d--) {
		idx[d] = rem % v->shape[d];
		rem /= v->shape[d];
		off += idx[d] * v->strides[d];
	}
	int64_t sl = v->strides[last];
	if (sl == 1 && idx[last] + n <= v->shape[last] && gen) {
		tir_gen_run(gen, dst, off, 1, n);
		return dst;
	}
	if (sl == 1 && idx[last] + n <= v->shape[last] && !cvt)
		return base + off * (int64_t)es;
	int64_t k = 0;
	while (k < n) {
		int64_t run = v->shape[last] - idx[last];
		if (run > n - k)
			run = n - k;
		char *d = dst + (size_t)k * es;
		const char *src = base + off * (int64_t)(cvt ? ses : es);
		if (cvt) {
			tir_cvt_run(dt, d, v->dtype, src, sl, run);
		} else if (gen && sl == 0) {
			tir_gen_run(gen, d, off, 0, 1);
			if (es == 4)
				copy_strided4((uint32_t *)d, (const uint32_t *)d, 0, run);
			else
				copy_strided8((uint64_t *)d, (const uint64_t *)d, 0, run);
		} else if (gen)
			tir_gen_run(gen, d, off, sl, run);
		else if (sl == 1)
			memcpy(d, src, (size_t)run * es);
		else if (es == 4)
			copy_strided4((uint32_t *)d, (const uint32_t *)src, sl, run);
		else
			copy_strided8((uint64_t *)d, (const uint64_t *)src, sl, run);
		k += run;
		/* to the start of the next row, carrying into outer axes */
		off += run * sl;
		idx[last] += run;
		for (int dd = last; dd > 0 && idx[dd] == v->shape[dd]; dd--) {
			off -= v->strides[dd] * v->shape[dd];
			idx[dd] = 0;
			off += v->strides[dd - 1];
			idx[dd - 1]++;
		}
	}
	return dst;
}

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* ---- registers, per thread ---- */

/* This thread's registers, kept between calls (an epilogue calls once per
 * row of a block); grown as needed, freed when the thread ends. */
struct regs {
	char *p;
	size_t cap;
};

/* Registers start half an L1d way (sz.skew, 2 KiB at 48 KiB 12-way) off
 * the page-aligned tensors (and each other's pages): a block streams one
 * into the other, and addresses a way apart fall in the same L1 set; on
 * x86, where a way is the 4 KiB page, a load 4 KiB apart from a store
 * still in flight also waits for it (4K aliasing).  At most 2 KiB, half
 * the smallest page. */
static pthread_key_t regs_key;
static pthread_once_t regs_once = PTHREAD_ONCE_INIT;

static void regs_free(void *v)
{
	struct regs *r = v;
	free(r->p);
	free(r);
}

static void regs_init(void)
{
	sizes();
	TIR_ASSERT(pthread_key_create(&regs_key, regs_free) == 0);
}

static char *thread_regs(size_t bytes)
{
	pthread_once(&regs_once, regs_init);
	struct regs *r = pthread_getspecific(regs_key);
	if (!r) {
		r = calloc(1, sizeof *r);
		if (!r || pthread_setspecific(regs_key, r)) {
			free(r);
			return NULL;
		}
	}
	if (bytes <= r->cap)
		return r->p + sz.skew;
	char *p = aligned_alloc(4096, (bytes + sz.skew + 4095) / 4096 * 4096);
	if (!p)
		return NULL;
	free(r->p);
	r->p = p;
	r->cap = bytes;
	return p + sz.skew;
}

/* ---- one block ---- */

/* A block being computed: rows [r0, r0 + k), and what its registers hold
 * (cols [lo, lo + n) of the block, for stamp r0 == the block's). */
struct blk {
	struct vm *vm;
	char *big, *small;
	int64_t r0, k;
	/* the memo, by member and by source (vm->n and vm->nsrc of each:
	 * after the registers in the thread's block, blk_init) */
	int64_t *m_r0, *m_lo, *m_n;
	int64_t *s_r0, *s_lo, *s_n;
	const char **s_p;
	int64_t *b_r0, *b_n;
	int red, row;            /* the reduction pulling, and its row in the block */
	struct estep *steps;     /* a group of elements: its calls (elems_plan) */
	int nsteps;
	bool anyref;             /* a step is EK_REF (run_member: elements only) */
};

/* A call of a group of elements (run_elems), planned once per task
 * (elems_plan) for the thread's registers: member j's function over the
 * block's k elements, each address the block's first element's, p + r0 *
 * adv (adv 0: a register, or one value read unspread).  An operand with
 * src >= 0 is a source src_block makes per block (gathered, computed,
 * widened, spread), contiguous. */
enum ekind {
	EK_F1,                   /* f1(d, a0, k) */
	EK_F2,                   /* fn(d, a0, a1, k): f2, or sfn[0] / sfn[1] with that operand one value */
	EK_REF                   /* anything else: run_member */
};

struct eaddr {
	const char *p;
	int64_t adv;
	int src;
};

struct estep {
	union sfn fn;
	struct eaddr d, a[2];
	int j;
	int kind;
};

static char *big_reg(const struct blk *b, int r)
{
	return b->big + b->vm->bigsz * (size_t)r;
}

static char *small_reg(const struct blk *b, int r)
{
	return b->small + b->vm->smallsz * (size_t)r;
}

/* dst[i * n + c] = src[i * so] for i < k, c < n: one value per row
 * spread over the row (stride-0 operands would make the reference
 * kernels copy them element by element).  Inlined into a build per ISA
 * (TIR_ISA_BUILDS), picked per call for the vector path. */
__attribute__((always_inline)) static inline void spread_body(char *dst, const char *src, int64_t so,
							      size_t es, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < k; i++) {
		if (es == 4) {
			float v, *d = (float *)dst + i * n;
			memcpy(&v, src + i * so * 4, 4);
			for (int64_t c = 0; c < n; c++)
				d[c] = v;
		} else {
			double v, *d = (double *)dst + i * n;
			memcpy(&v, src + i * so * 8, 8);
			for (int64_t c = 0; c < n; c++)
				d[c] = v;
		}
	}
}

#define DEF_VM_BUILD(B, TGT)                                                 \
	TGT static void spread_##B(char *dst, const char *src, int64_t so, size_t es, int64_t k, \
				   int64_t n)                                  \
	{                                                                    \
		spread_body(dst, src, so, es, k, n);                         \
	}                                                                    \
	static const char *vm_build_##B(void) { return #B; }

TIR_ISA_BUILDS(DEF_VM_BUILD)

const char *tir_fused_build(void)
{
	return TIR_ISA_PICK(vm_build)();
}

/* A [k, n] block of a value (k, n: the block's, known to the caller):
 * element (i, c) at p + (i * so + c * si) elements.  The hot path passes
 * these; tensors are made only for the reference kernels' fallback. */
struct bv {
	char *p;
	int64_t so, si;
};

static struct bv bview(const void *p, int64_t so, int64_t si)
{
	return (struct bv){(char *)p, so, si};
}

/* Source s over cols [lo, lo + n) of the block (the domain's), or over
 * the block's rows (a row source): a [k, n] (or [k, 1]) view.  raw: a
 * source constant along cols may come as it is (si 0), unspread. */
static struct bv src_block(struct blk *b, int si_, int64_t lo, int64_t n, bool raw)
{
	struct vm *vm = b->vm;
	struct src *s = &vm->src[si_];
	size_t es = vm->esz;
	if (s->row) {
		n = 1;
		lo = 0;
	}
	if (s->direct || (s->bcast && raw)) {
		const char *p = (const char *)s->v.buf->data +
				(s->v.offset + b->r0 * s->so + lo * s->si) * (int64_t)es;
		return bview(p, s->so, s->si);
	}
	if (s->bcast) {
		/* a scalar is spread once per shape of block, a row value per block */
		int64_t stamp = s->so ? b->r0 : -2;
		if (b->s_r0[si_] != stamp || b->s_lo[si_] != b->k || b->s_n[si_] != n) {
			const char *p = (const char *)s->v.buf->data + (s->v.offset + b->r0 * s->so) * (int64_t)es;
			TIR_ISA_PICK(spread)(big_reg(b, s->reg), p, s->so, es, b->k, n);
			b->s_r0[si_] = stamp;
			b->s_lo[si_] = b->k;
			b->s_n[si_] = n;
		}
		return bview(big_reg(b, s->reg), n, 1);
	}
	if (b->s_r0[si_] != b->r0 || b->s_lo[si_] != lo || b->s_n[si_] != n) {
		char *r = s->row ? small_reg(b, s->reg) : big_reg(b, s->reg);
		if (s->row)
			b->s_p[si_] = gather(s->gen, &s->v, es, b->r0, b->k, r);
		else if (n == vm->cols || b->k == 1)
			b->s_p[si_] = gather(s->gen, &s->v, es, b->r0 * vm->cols + lo, b->k * n, r);
		else {
			/* a tile: its rows one by one */
			for (int64_t i = 0; i < b->k; i++) {
				const char *p = gather(s->gen, &s->v, es, (b->r0 + i) * vm->cols + lo, n,
						       r + (size_t)(i * n) * es);
				if (p != r + (size_t)(i * n) * es)
					memcpy(r + (size_t)(i * n) * es, p, (size_t)n * es);
			}
			b->s_p[si_] = r;
		}
		b->s_r0[si_] = b->r0;
		b->s_lo[si_] = lo;
		b->s_n[si_] = n;
	}
	return bview(b->s_p[si_], n, 1);
}

static void ensure(struct blk *b, int j, int64_t lo, int64_t n);
static void run_steps(struct blk *b, int64_t at, int64_t k);
static void nt_copy(char *dst, const char *src, size_t n);

/* Operand slot k of member j as a [k, n] view over cols [lo, lo + n): a
 * value constant along cols comes unspread when j's op takes it as one
 * value per row (vnode.sfn). */
static struct bv operand(struct blk *b, int j, int k, int64_t lo, int64_t n)
{
	struct vm *vm = b->vm;
	int o = vm->nd[j].op[k];
	/* (rows too short for a call each are spread) */
	bool raw = k < 2 && vm->nd[j].sfn[k] && (n == 1 || n >= RAW_MIN);
	if (o < 0)
		return src_block(b, ~o, lo, n, raw);
	if (vm->nd[o].cls == TIR_FC_ROW) {
		struct vnode *v = &vm->nd[o];
		if (n == 1 || v->breg < 0 || raw)
			return bview(small_reg(b, v->reg), 1, 0);
		if (b->b_r0[o] != b->r0 || b->b_n[o] != n) {
			TIR_ISA_PICK(spread)(big_reg(b, v->breg), small_reg(b, v->reg), 1, vm->esz, b->k, n);
			b->b_r0[o] = b->r0;
			b->b_n[o] = n;
		}
		return bview(big_reg(b, v->breg), n, 1);
	}
	if (!vm->lean)
		ensure(b, o, lo, n);
	return bview(big_reg(b, vm->nd[vm->nd[o].base].reg), n, 1);
}

/* Whether [k, n] view v is one contiguous run, its rows each one, or the
 * same value all over the block, or along each row. */
static bool flat(struct bv v, int64_t k, int64_t n)
{
	return (n == 1 || v.si == 1) && (k == 1 || v.so == n);
}

static bool rows_flat(struct bv v, int64_t n)
{
	return n == 1 || v.si == 1;
}

static bool uniform(struct bv v, int64_t k, int64_t n)
{
	return (n == 1 || v.si == 0) && (k == 1 || v.so == 0);
}

static bool row_uniform(struct bv v, int64_t n)
{
	return n == 1 || v.si == 0;
}

/* Member n's reference kernel over a[] (broadcast to d's shape) into d,
 * all of the group's dtype.  A comparison's result is a mask, 1 or 0 of
 * that dtype (what a float reader converts a bool to), and where tests its
 * condition against 0 (as the conversion to bool does). */
static int member_kernel(const struct tir_node *n, const struct tir_tensor *a, struct tir_tensor *d,
			 struct tir_err *err)
{
	if (n->op == TIR_OP_CAST) /* of the kernel's dtype already (see apply) */
		return tir_k_copy(&a[0], d);
	if (tir_op(n->op)->fuse == TIR_FUSE_SELECT || n->type.dtype == TIR_DTYPE_BOOL)
		return tir_k_mask(n->op, a, d, err);
	if (n->nin == 1)
		return tir_k_unary(n->op, &a[0], d, err);
	if (n->nin == 2)
		return tir_k_binary(n->op, &a[0], &a[1], d, err);
	return tir_k_ternary(n->op, &a[0], &a[1], &a[2], d, err);
}

/* Apply member j's op to [k, n] views a[] into dst (floats: cannot fail).
 * Contiguous operands go straight to vmath's function for the op, and an
 * operand constant over the block (or each row) to its function taking one
 * value (vmath.h: the same bits as over a spread copy); anything else
 * through the reference kernels. */
static void apply(const struct vm *vm, int j, const struct bv *a, struct bv dst, int64_t k, int64_t n)
{
	const struct vnode *v = &vm->nd[j];
	int64_t len = k * n;
	if (v->n->op == TIR_OP_CAST) {
		/* its operand comes widened to the kernel's dtype: a copy */
		size_t es = vm->esz;
		for (int64_t i = 0; i < k; i++) {
			char *d = dst.p + (size_t)(i * dst.so) * es;
			const char *s = a[0].p + (size_t)(i * a[0].so) * es;
			if (dst.si == 1)
				tir_cvt_run(vm->dt, d, vm->dt, s, a[0].si, n);
			else
				for (int64_t e = 0; e < n; e++)
					memcpy(d + (size_t)(e * dst.si) * es, s + (size_t)(e * a[0].si) * es, es);
		}
		return;
	}
	if (v->f1 && flat(a[0], k, n) && flat(dst, k, n)) {
		v->f1(dst.p, a[0].p, len);
		return;
	}
	if (v->f2 && flat(dst, k, n)) {
		if (flat(a[0], k, n) && flat(a[1], k, n)) {
			v->f2(dst.p, a[0].p, a[1].p, len);
			return;
		}
		for (int s = 0; s < 2; s++)
			if (v->sfn[s] && uniform(a[s], k, n) && flat(a[!s], k, n)) {
				v->sfn[s](dst.p, s ? a[!s].p : a[s].p, s ? a[s].p : a[!s].p, len);
				return;
			}
		if (n > 1 && rows_flat(a[0], n) && rows_flat(a[1], n)) {
			/* a row broadcast down the rows (so 0): row by row */
			size_t es = vm->esz;
			for (int64_t i = 0; i < k; i++)
				v->f2(dst.p + (size_t)(i * n) * es, a[0].p + (size_t)(i * a[0].so) * es,
				      a[1].p + (size_t)(i * a[1].so) * es, n);
			return;
		}
		for (int s = 0; s < 2 && n > 1; s++) {
			const struct bv *one = &a[s], *many = &a[!s];
			if (v->sfn[s] && row_uniform(*one, n) && rows_flat(*many, n)) {
				size_t es = vm->esz;
				for (int64_t i = 0; i < k; i++) {
					const char *po = one->p + (size_t)(i * one->so) * es,
						   *pm = many->p + (size_t)(i * many->so) * es;
					v->sfn[s](dst.p + (size_t)(i * n) * es, s ? pm : po, s ? po : pm, n);
				}
				return;
			}
		}
	}
	if (v->sel && flat(dst, k, n)) {
		/* operands contiguous or one value: one run */
		const void *p[3];
		int64_t st[3];
		bool ok = true;
		for (int q = 0; q < v->n->nin && ok; q++) {
			p[q] = a[q].p;
			st[q] = flat(a[q], k, n) ? 1 : 0;
			ok = st[q] || uniform(a[q], k, n);
		}
		if (ok && !tir_k_select_run(v->n->op, v->mask, vm->dt, dst.p, p, st, len))
			return;
	}
	struct tir_tensor t[3], d;
	struct tir_buf tb[3], db;
	struct tir_err e = {0};
	for (int q = 0; q < v->n->nin; q++)
		mkview(&t[q], &tb[q], vm->dt, a[q].p, k, n, a[q].so, a[q].si);
	mkview(&d, &db, vm->dt, dst.p, k, n, dst.so, dst.si);
	TIR_ASSERT(member_kernel(v->n, t, &d, &e) == 0);
}

/* Make FULL (or ALIAS) member j's cols [lo, lo + n) of the block. */
static void ensure(struct blk *b, int j, int64_t lo, int64_t n)
{
	struct vm *vm = b->vm;
	j = vm->nd[j].base;
	if (b->m_r0[j] == b->r0 && b->m_lo[j] == lo && b->m_n[j] == n)
		return;
	struct bv a[3], dst;
	for (int k = 0; k < vm->nd[j].n->nin; k++)
		a[k] = operand(b, j, k, lo, n);
	char *o = vm->out + (b->r0 * vm->cols + lo) * (int64_t)vm->esz;
	bool tile = vm->nd[j].reg < 0 && n < vm->cols && b->k > 1;
	if (vm->nd[j].reg < 0 && !tile)
		dst = bview(o, vm->cols, 1);
	else
		dst = bview(big_reg(b, tile ? vm->tile_reg : vm->nd[j].reg), n, 1);
	apply(vm, j, a, dst, b->k, n);
	if (vm->nd[j].steal >= 0)
		b->m_r0[vm->nd[j].steal] = -1; /* its register holds j now */
	/* kernels write contiguous memory: a tile of the root goes out by rows */
	for (int64_t i = 0; tile && i < b->k; i++)
		memcpy(o + (size_t)(i * vm->cols) * vm->esz, big_reg(b, vm->tile_reg) + (size_t)(i * n) * vm->esz,
		       (size_t)n * vm->esz);
	b->m_r0[j] = b->r0;
	b->m_lo[j] = lo;
	b->m_n[j] = n;
}

/* tir_reduce_run's pieces: cols [lo, lo + n) of row b->row of the
 * reduction's operand. */
static const void *red_piece(void *ctx, int64_t lo, int64_t n)
{
	struct blk *b = ctx;
	struct vm *vm = b->vm;
	int o = vm->nd[b->red].op[0];
	if (vm->pelems && b->nsteps && !b->anyref) {
		/* row_piece's block (one row): the piece's members as elements */
		run_steps(b, lo, n);
		return big_reg(b, vm->nd[vm->nd[o].base].reg);
	}
	bool whole = vm->chunk == vm->cols; /* the block holds whole rows */
	int64_t blo = whole ? 0 : lo, bn = whole ? vm->cols : n;
	const char *p;
	int64_t stride;
	if (o >= 0) {
		ensure(b, o, blo, bn);
		p = big_reg(b, vm->nd[vm->nd[o].base].reg);
		stride = bn;
	} else {
		struct bv t = src_block(b, ~o, blo, bn, false);
		TIR_ASSERT(t.si == 1 || bn == 1);
		p = t.p;
		stride = t.so;
	}
	return p + (b->row * stride + (lo - blo)) * (int64_t)vm->esz;
}

/* Member j of a group of elements over the block, as any operands come
 * (a strided view, a select, a cast): through apply. */
static void run_member(struct blk *b, int j)
{
	struct vm *vm = b->vm;
	const struct vnode *v = &vm->nd[j];
	int64_t k = b->k;
	size_t es = vm->esz;
	struct bv a[3];
	for (int q = 0; q < v->n->nin; q++) {
		int o = v->op[q];
		a[q] = o >= 0 ? bview(big_reg(b, vm->nd[vm->nd[o].base].reg), 1, 1)
			      : src_block(b, ~o, 0, 1, v->sel || v->sfn[q] != NULL);
	}
	char *d = v->reg < 0 ? vm->out + b->r0 * (int64_t)es : big_reg(b, v->reg);
	apply(vm, j, a, bview(d, 1, 0), k, 1);
}

/* The steps of a group of elements over this thread's registers (b's):
 * what run_elems would decide per block from its operands' strides (one
 * element per row: flat is so 1, the same value so 0), decided once.
 * Of a long row summed (vm->pelems): the members under the root, along
 * the row's cols (flat is si 1). */
static void elems_plan(struct blk *b)
{
	struct vm *vm = b->vm;
	int64_t es = (int64_t)vm->esz;
	b->nsteps = 0;
	b->anyref = false;
	for (int j = 0; j < vm->n - vm->pelems; j++) {
		const struct vnode *v = &vm->nd[j];
		if (v->pre || v->base != j)
			continue;
		struct estep *st = &b->steps[b->nsteps++];
		int64_t so[2] = {1, 1};
		st->j = j;
		st->d = v->reg < 0 ? (struct eaddr){vm->out, es, -1} : (struct eaddr){big_reg(b, v->reg), 0, -1};
		for (int q = 0; q < v->n->nin && q < 2; q++) {
			int o = v->op[q];
			const struct src *c = o < 0 ? &vm->src[~o] : NULL;
			if (o >= 0) {
				st->a[q] = (struct eaddr){big_reg(b, vm->nd[vm->nd[o].base].reg), 0, -1};
			} else if (c->direct || (c->bcast && (v->sel || v->sfn[q]))) {
				/* read in place (src_block's address, at r0 0) */
				int64_t adv = vm->pelems ? c->si : c->so;
				st->a[q] = (struct eaddr){(const char *)c->v.buf->data + c->v.offset * es, adv * es, -1};
				so[q] = adv;
			} else {
				st->a[q] = (struct eaddr){NULL, 0, ~o};
			}
		}
		if (v->f1 && so[0] == 1) {
			st->kind = EK_F1;
			st->fn.f1 = v->f1;
		} else if (v->f2 && so[0] == 1 && so[1] == 1) {
			st->kind = EK_F2;
			st->fn.f2 = v->f2;
		} else if (v->sfn[1] && so[1] == 0 && so[0] == 1) {
			st->kind = EK_F2;
			st->fn.f2 = v->sfn[1];
		} else if (v->sfn[0] && so[0] == 0 && so[1] == 1) {
			st->kind = EK_F2;
			st->fn.f2 = v->sfn[0];
		} else {
			st->kind = EK_REF;
			b->anyref = true;
		}
	}
}

/* e's address at element at: a block's first element (elements), or
 * the first col of a piece [at, at + k) of the row (vm->pelems) */
static const char *eaddr_at(struct blk *b, const struct eaddr *e, int64_t at, int64_t k)
{
	if (e->src >= 0)
		return b->vm->pelems ? src_block(b, e->src, at, k, false).p : src_block(b, e->src, 0, 1, false).p;
	return e->p + at * e->adv;
}

/* The planned steps (elems_plan) over k elements from at: each member a
 * call, in order, straight, without ensure's memo (every member is
 * needed once per block): what a block of a few hundred elements spends
 * outside vmath is what limits a chain. */
static void run_steps(struct blk *b, int64_t at, int64_t k)
{
	for (const struct estep *st = b->steps, *end = st + b->nsteps; st < end; st++) {
		char *d = (char *)st->d.p + at * st->d.adv;
		if (st->kind == EK_F1)
			st->fn.f1(d, eaddr_at(b, &st->a[0], at, k), k);
		else if (st->kind == EK_F2)
			st->fn.f2(d, eaddr_at(b, &st->a[0], at, k), eaddr_at(b, &st->a[1], at, k), k);
		else
			run_member(b, st->j);
	}
}

/* Elements [r0, r0 + k) of a group of elements (vm->elems); the root
 * made in its register copied out (vm->nt). */
static void run_elems(struct blk *b)
{
	struct vm *vm = b->vm;
	run_steps(b, b->r0, b->k);
	if (vm->nt)
		nt_copy(vm->out + b->r0 * (int64_t)vm->esz, big_reg(b, vm->nd[vm->n - 1].reg), (size_t)b->k * vm->esz);
}

/* dst = src, n bytes.  A store to a line not in the cache first reads it
 * from memory (to own it): a root written to a buffer new to the caches
 * moves its bytes twice (bench/layernorm_hand.tir's last add, 16 MiB: ~1.1
 * ms).  Non-temporal stores write whole lines without reading them: the
 * root is made in a register (in cache) and copied out so (an sfence ends
 * each task, run_range). */
#if TIR_ISA_X86
/* nt_copy with one store of a whole line (dst 64-byte aligned) */
TIR_ISA_A5 static size_t nt_lines_avx512(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	for (; i + 64 <= n; i += 64)
		_mm512_stream_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
	return i;
}
#endif

/* By the vector path: AVX-512's stores of whole lines, SSE2's (from sse2
 * on), or on scalar memcpy (as where there is no x86-64). */
static void nt_copy(char *dst, const char *src, size_t n)
{
#if defined(__x86_64__)
	enum tir_vmath_path p = tir_vmath_path();
	if (p == TIR_VMATH_SCALAR) {
		memcpy(dst, src, n);
		return;
	}
#if TIR_ISA_X86
	size_t h = (64 - ((uintptr_t)dst & 63)) & 63;
	if (p == TIR_VMATH_AVX512 && h < n) {
		memcpy(dst, src, h);
		h += nt_lines_avx512(dst + h, src + h, n - h);
		dst += h;
		src += h;
		n -= h;
	}
#endif
	size_t i = (16 - ((uintptr_t)dst & 15)) & 15;
	if (i > n)
		i = n;
	memcpy(dst, src, i);
	for (; i + 64 <= n; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(src + i)),
			b = _mm_loadu_si128((const __m128i *)(src + i + 16)),
			c = _mm_loadu_si128((const __m128i *)(src + i + 32)),
			d = _mm_loadu_si128((const __m128i *)(src + i + 48));
		_mm_stream_si128((__m128i *)(dst + i), a);
		_mm_stream_si128((__m128i *)(dst + i + 16), b);
		_mm_stream_si128((__m128i *)(dst + i + 32), c);
		_mm_stream_si128((__m128i *)(dst + i + 48), d);
	}
	for (; i + 16 <= n; i += 16)
		_mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
	memcpy(dst + i, src + i, n - i);
#else
	memcpy(dst, src, n);
#endif
}

/* Rows [r0, r0 + k) of a group of whole rows (vm->lean): its members in
 * order, each once per block, as run_elems does: FULL members over the
 * block's contiguous rows (a member's operands made before it, in their
 * registers), reductions folding each row in place with tir_reduce_rows,
 * ROW members over the block's values.  None of ensure's memo, none of
 * tir_reduce_run's calls back per row. */
static void run_rows(struct blk *b)
{
	struct vm *vm = b->vm;
	int64_t k = b->k, cols = vm->cols;
	size_t es = vm->esz;
	for (int j = 0; j < vm->n; j++) {
		const struct vnode *v = &vm->nd[j];
		if (v->pre || v->base != j)
			continue;
		struct bv a[3];
		if (v->cls == TIR_FC_ROW) {
			char *dst = v->reg < 0 ? vm->out + b->r0 * (int64_t)es : small_reg(b, v->reg);
			if (v->red) {
				int o = v->op[0];
				if (o >= 0) {
					a[0] = bview(big_reg(b, vm->nd[vm->nd[o].base].reg), cols, 1);
				} else {
					a[0] = src_block(b, ~o, 0, cols, false);
					TIR_ASSERT(a[0].si == 1 || cols == 1);
				}
				tir_reduce_rows(v->n->op, vm->dt, a[0].p, a[0].so, cols, k, dst);
				continue;
			}
			for (int q = 0; q < v->n->nin; q++)
				a[q] = operand(b, j, q, 0, 1);
			apply(vm, j, a, bview(dst, 1, 0), k, 1);
			continue;
		}
		for (int q = 0; q < v->n->nin; q++)
			a[q] = operand(b, j, q, 0, cols);
		char *d = v->reg < 0 ? vm->out + b->r0 * cols * (int64_t)es : big_reg(b, v->reg);
		apply(vm, j, a, bview(d, cols, 1), k, cols);
		if (vm->nt && j == vm->n - 1)
			nt_copy(vm->out + b->r0 * cols * (int64_t)es, d, (size_t)(k * cols) * es);
	}
}

/* Rows of a reducing group (whole rows a block): the next block's rows of
 * the values read in place, asked of memory now, while this block is
 * computed (a block of a few rows is over before the prefetchers warm up). */
static void prefetch_next(const struct blk *b)
{
	const struct vm *vm = b->vm;
	if (!vm->info.reduces || vm->chunk != vm->cols)
		return;
	for (int s = 0; s < vm->nsrc; s++) {
		const struct src *c = &vm->src[s];
		if (!c->direct || c->row || c->si != 1 || c->so != vm->cols)
			continue;
		int64_t r = b->r0 + b->k, k = vm->rows - r < b->k ? vm->rows - r : b->k;
		const char *p = (const char *)c->v.buf->data + (c->v.offset + r * c->so) * (int64_t)vm->esz;
		for (int64_t off = 0; off < k * vm->cols * (int64_t)vm->esz; off += 64)
			__builtin_prefetch(p + off);
	}
}

/* Rows [r0, r0 + k): per-row members in order, then the root's cols. */
static void run_block(struct blk *b, int64_t r0, int64_t k)
{
	struct vm *vm = b->vm;
	b->r0 = r0;
	b->k = k;
	if (vm->elems) {
		run_elems(b);
		return;
	}
	prefetch_next(b);
	if (vm->lean) {
		run_rows(b);
		return;
	}
	for (int j = 0; j < vm->n; j++) {
		struct vnode *v = &vm->nd[j];
		if (v->pre || v->cls != TIR_FC_ROW)
			continue;
		char *dst = v->reg < 0 ? vm->out + r0 * (int64_t)vm->esz : small_reg(b, v->reg);
		if (v->red) {
			b->red = j;
			for (b->row = 0; b->row < k; b->row++)
				tir_reduce_run(v->n->op, vm->dt, vm->cols, vm->red_chunk, red_piece, b,
					       dst + (size_t)b->row * vm->esz);
			continue;
		}
		struct bv a[3];
		for (int s = 0; s < v->n->nin; s++)
			a[s] = operand(b, j, s, 0, 1);
		apply(vm, j, a, bview(dst, 1, 0), k, 1);
	}
	int root = vm->n - 1;
	if (vm->nd[root].cls == TIR_FC_FULL)
		for (int64_t lo = 0; lo < vm->cols; lo += vm->chunk)
			ensure(b, root, lo, vm->cols - lo < vm->chunk ? vm->cols - lo : vm->chunk);
}

/* A block state over this thread's registers, holding nothing yet: the
 * stamps of the group's members and sources say so, and the rest of the
 * memo is read only under a matching stamp, so it is not cleared (this
 * runs once per task, and per row of a matmul's block in an epilogue). */
static bool blk_init(struct blk *b, struct vm *vm)
{
	b->vm = vm;
	b->r0 = b->k = 0;
	b->red = b->row = 0;
	size_t rb = round64(vm->bigsz * (size_t)vm->nbig + vm->smallsz * (size_t)vm->nsmall + 64);
	size_t nm = (size_t)vm->n, ns = (size_t)vm->nsrc;
	size_t mb = round64(sizeof(int64_t) * (5 * nm + 4 * ns));
	char *regs = thread_regs(rb + mb + (vm->elems || vm->pelems ? sizeof(struct estep) * nm : 0));
	if (!regs) {
		__atomic_store_n(&vm->oom, 1, __ATOMIC_RELAXED);
		return false;
	}
	b->big = regs;
	b->small = regs + vm->bigsz * (size_t)vm->nbig;
	int64_t *memo = (int64_t *)(regs + rb);
	b->m_r0 = memo;
	b->m_lo = memo + nm;
	b->m_n = memo + 2 * nm;
	b->b_r0 = memo + 3 * nm;
	b->b_n = memo + 4 * nm;
	b->s_r0 = memo + 5 * nm;
	b->s_lo = b->s_r0 + ns;
	b->s_n = b->s_lo + ns;
	b->s_p = (const char **)(b->s_n + ns);
	b->steps = (struct estep *)(regs + rb + mb);
	b->nsteps = 0;
	for (int j = 0; j < vm->n; j++)
		b->m_r0[j] = b->b_r0[j] = -1;
	for (int s = 0; s < vm->nsrc; s++)
		b->s_r0[s] = -3;
	return true;
}

/* Rows [lo, hi) of the domain. */
static void run_range(struct vm *vm, int64_t lo, int64_t hi)
{
	struct blk b;
	if (!blk_init(&b, vm))
		return;
	if (vm->elems)
		elems_plan(&b);
	for (int64_t r0 = lo; r0 < hi; r0 += vm->k)
		run_block(&b, r0, hi - r0 < vm->k ? hi - r0 : vm->k);
#if defined(__x86_64__)
	if (vm->nt)
		_mm_sfence(); /* nt_copy's stores seen before the task is done */
#endif
}

/* A piece of one long row summed by its root (tir_reduce_pool's part):
 * computed in a block of its own, on whichever thread runs it. */
static double row_piece(void *ctx, int64_t lo, int64_t n, bool dev, double m)
{
	struct vm *vm = ctx;
	struct blk b;
	if (!blk_init(&b, vm)) {
		__atomic_store_n(&vm->oom, 1, __ATOMIC_RELAXED);
		return 0;
	}
	b.k = 1;
	b.red = vm->n - 1;
	if (vm->pelems)
		elems_plan(&b);
	return dev ? tir_reduce_pwdev_part(vm->dt, lo, n, vm->red_chunk, red_piece, &b, m)
		   : tir_reduce_pw_part(vm->dt, lo, n, vm->red_chunk, red_piece, &b);
}

/* Task t of a reduction down the cols (over leading axes): cols
 * [lo, lo + n) folded row by row, in order, as tir_k_reduce walks them. */
static void run_cols(void *ctx, int64_t t)
{
	struct vm *vm = ctx;
	const struct vnode *r = &vm->nd[vm->n - 1];
	enum tir_op op = r->n->op;
	int64_t lo = t * vm->chunk, n = vm->cols - lo < vm->chunk ? vm->cols - lo : vm->chunk;
	struct blk b;
	double *acc = malloc(sizeof *acc * (size_t)n * 2);
	if (!acc || !blk_init(&b, vm)) {
		__atomic_store_n(&vm->oom, 1, __ATOMIC_RELAXED);
		free(acc);
		return;
	}
	int src = vm->nd[r->op[0]].base;
	for (int pass = 0; pass < (op == TIR_OP_VAR ? 2 : 1); pass++) {
		/* VAR: the means, then the squared deviations from them */
		enum tir_op fop = op == TIR_OP_VAR && pass == 0 ? TIR_OP_MEAN : op;
		double *a = acc + pass * n;
		tir_reduce_acc_init(fop, vm->dt, a, n);
		for (int64_t r0 = 0; r0 < vm->rows; r0 += vm->k) {
			b.r0 = r0;
			b.k = vm->rows - r0 < vm->k ? vm->rows - r0 : vm->k;
			ensure(&b, r->op[0], lo, n);
			for (int64_t i = 0; i < b.k; i++)
				tir_reduce_acc_fold(fop, vm->dt, big_reg(&b, vm->nd[src].reg) + (size_t)(i * n) * vm->esz, n,
						    a, pass ? acc : NULL);
		}
		if (fop == TIR_OP_MEAN || fop == TIR_OP_VAR)
			tir_reduce_acc_div(a, vm->rows, n);
	}
	tir_reduce_acc_store(op, vm->dt, acc + (op == TIR_OP_VAR ? n : 0), vm->out + lo * (int64_t)vm->esz, n);
	free(acc);
}

/* Whether the group is such a sum, and if so, do it. */
static bool run_pieces(struct vm *vm)
{
	int root = vm->n - 1;
	const struct vnode *r = &vm->nd[root];
	if (vm->rows != 1 || vm->chunk == vm->cols || !r->red || r->pre ||
	    (r->n->op != TIR_OP_SUM && r->n->op != TIR_OP_MEAN && r->n->op != TIR_OP_VAR))
		return false;
	for (int j = 0; j < root; j++)
		if (vm->nd[j].cls == TIR_FC_ROW && !vm->nd[j].pre)
			return false;
	/* the pieces of its pairwise tree on the pool (SUM, MEAN; VAR in
	 * two passes) */
	double acc;
	if (!tir_reduce_pool(r->n->op, vm->cols, vm->red_chunk, (int64_t)vm->esz, row_piece, vm, &acc))
		return false;
	if (vm->dt == TIR_DTYPE_F32) {
		float f = (float)acc;
		memcpy(vm->out, &f, 4);
	} else {
		memcpy(vm->out, &acc, 8);
	}
	return true;
}

static void run_task(void *ctx, int64_t t)
{
	struct vm *vm = ctx;
	int64_t lo = t * vm->task_rows, hi = lo + vm->task_rows < vm->rows ? lo + vm->task_rows : vm->rows;
	run_range(vm, lo, hi);
}

/* ---- preparing a group ---- */

/* A small group's block of at least this many bytes (a group of some
 * 40,000 members) has huge pages of its own (tir_pages_alloc): a few
 * faults, not one a page; a smaller one the allocator's. */
#define SMALL_PAGES ((size_t)1 << 20)

static void *small_mem(size_t n)
{
	return n >= SMALL_PAGES ? tir_pages_alloc(n) : malloc(n);
}

static void small_mem_free(void *m, size_t n)
{
	if (n >= SMALL_PAGES)
		tir_pages_free(m, n);
	else
		free(m);
}

/* A small group runs in microseconds: each thread keeps the last vm it
 * freed, with its block (vm->mem, as large as the largest group's yet),
 * for its next kernel, which clears only what it uses. */
struct vm_spare {
	struct vm *vm;
};

static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_free(void *v)
{
	struct vm_spare *s = v;
	if (s->vm)
		free(s->vm->mem);
	free(s->vm);
	free(s);
}

static void spare_init(void)
{
	TIR_ASSERT(pthread_key_create(&spare_key, spare_free) == 0);
}

static struct vm_spare *thread_spare(void)
{
	pthread_once(&spare_once, spare_init);
	struct vm_spare *s = pthread_getspecific(spare_key);
	if (!s && (s = calloc(1, sizeof *s)) && pthread_setspecific(spare_key, s)) {
		free(s);
		s = NULL;
	}
	return s;
}

static size_t nvals_of(const struct tir_group *g)
{
	return (size_t)(g->nin + g->n) + 1;
}

/* Where each of a vm's arrays starts in its block, for group g; returns
 * the block's bytes. */
struct vm_layout {
	size_t nd, src, gens, vbuf, vals, borrowed, vg, src_of, info, cbuf, cval, end;
};

static size_t vm_layout(const struct tir_group *g, struct vm_layout *l)
{
	size_t n = (size_t)g->n, nin = (size_t)g->nin, nv = nvals_of(g), at = 0;
#define VM_PLACE(f, bytes) (l->f = at, at = round64(at + (bytes)))
	VM_PLACE(nd, sizeof(struct vnode) * n);
	VM_PLACE(src, sizeof(struct src) * 3 * n);
	VM_PLACE(gens, sizeof(struct tir_gen) * (nin + 1));
	VM_PLACE(vbuf, sizeof(struct tir_buf) * (nin + 1));
	VM_PLACE(vals, sizeof(struct tir_tensor) * nv);
	VM_PLACE(borrowed, sizeof(bool) * nv);
	VM_PLACE(vg, sizeof(int32_t) * nv);
	VM_PLACE(src_of, sizeof(int) * nv);
	VM_PLACE(info, tir_group_info_bytes(g->n));
	VM_PLACE(cbuf, sizeof(struct tir_buf) * (nin + 1));
	VM_PLACE(cval, sizeof(double) * (nin + 1));
#undef VM_PLACE
	l->end = at;
	return at;
}

/* A spare block this much larger than twice what a vm needs is not reused. */
#define SPARE_SLACK ((size_t)64 << 10)

/* A vm for group g, zeroed but for src[] (which add_source fills whole)
 * and gens[], vbuf[] (filled when used), with nd[], vals, borrowed and vg
 * zeroed; NULL when out of memory. */
static struct vm *vm_new(const struct tir_group *g)
{
	struct vm_spare *sp = thread_spare();
	struct vm *vm = sp ? sp->vm : NULL;
	struct vm_layout l;
	size_t bytes = vm_layout(g, &l), nv = nvals_of(g);
	void *mem = NULL;
	size_t cap = 0;
	if (vm) {
		sp->vm = NULL;
		mem = vm->mem;
		cap = vm->memcap;
	} else if (!(vm = malloc(sizeof *vm))) {
		return NULL;
	}
	/* the spare's block fits, and is not many times what g needs: a vm
	 * kept with its plan (tir_fused_keep) holds its block as long as the
	 * plan lives, so a small kernel must not keep the block of the
	 * 30,000-member one before it (a server's cached graphs held tens of
	 * MiB each so) */
	if (cap < bytes || cap - bytes > bytes + SPARE_SLACK) {
		free(mem);
		cap = bytes;
		if (!(mem = aligned_alloc(64, cap))) {
			free(vm);
			return NULL;
		}
	}
	memset(vm, 0, sizeof *vm);
	vm->mem = mem;
	vm->memcap = cap;
	char *m = mem;
	vm->nd = (struct vnode *)(m + l.nd);
	vm->src = (struct src *)(m + l.src);
	vm->gens = (struct tir_gen *)(m + l.gens);
	vm->vbuf = (struct tir_buf *)(m + l.vbuf);
	vm->vals = (struct tir_tensor *)(m + l.vals);
	vm->borrowed = (bool *)(m + l.borrowed);
	vm->vg = (int32_t *)(m + l.vg);
	vm->src_of = (int *)(m + l.src_of);
	vm->cbuf = (struct tir_buf *)(m + l.cbuf);
	vm->cval = (double *)(m + l.cval);
	for (size_t k = 0; k < nv; k++)
		vm->src_of[k] = -1;
	memset(vm->nd, 0, sizeof *vm->nd * (size_t)g->n);
	/* (vals: each cleared as it is made, up to nvals: a long group of
	 * scalars makes few of its n + nin) */
	memset(vm->borrowed, 0, sizeof *vm->borrowed * nv);
	memset(vm->vg, 0, sizeof *vm->vg * nv);
	tir_group_info_place(&vm->info, m + l.info, g->n);
	return vm;
}

static void vm_free(struct vm *vm)
{
	if (!vm)
		return;
	if (vm->small) {
		if (vm->lender)
			tir_plan_unlend(vm->lender);
		else
			small_mem_free(vm->mem, vm->memcap);
		free(vm->op3);
		free(vm);
		return;
	}
	for (int k = 0; k < vm->nvals; k++)
		if (!vm->borrowed[k])
			tir_tensor_release(&vm->vals[k]);
	for (int s = 0; !vm->kept && s < vm->nsrc; s++)
		tir_tensor_release(&vm->src[s].v);
	struct vm_spare *sp = thread_spare();
	if (sp && !sp->vm) {
		sp->vm = vm;
	} else {
		free(vm->mem);
		free(vm);
	}
}

/* The value read for operand k of member j: a member's pre-made value or
 * an input's (vals index), or -1 for a member computed in the blocks. */
/* How many of g's inputs are made before member j (its operands among
 * them): a cursor moved from the last j asked, members being asked in
 * order (so a group of any length costs n in all). */
static int inputs_below(struct vm *vm, int j)
{
	const struct tir_group *g = vm->g;
	uint32_t id = g->nodes[j]->id;
	while (vm->below < g->nin && g->inputs[vm->below]->id < id)
		vm->below++;
	while (vm->below > 0 && g->inputs[vm->below - 1]->id >= id)
		vm->below--;
	return vm->below;
}

static int value_of(struct vm *vm, int j, int k)
{
	const struct tir_group *g = vm->g;
	const struct tir_node *o = vm->nd[j].n->in[k];
	int m = tir_node_find(g->nodes, j, o);
	if (m >= 0)
		return vm->nd[m].pre ? vm->nd[m].val : -1;
	m = tir_node_find(g->inputs, inputs_below(vm, j), o);
	TIR_ASSERT(m >= 0); /* a fused operand is a member or an input */
	return m;
}

/* Value val, a view of a generator, computed into memory (for what reads
 * a value whole: a member made before the blocks, a copying reshape, an
 * operand broadcast over the domain, whose elements would be computed
 * again for each reader). */
static int realize(struct vm *vm, int val, struct tir_err *err)
{
	struct tir_tensor *v = &vm->vals[val], t;
	int rc = tir_tensor_alloc(&t, vm->dt, v->rank, v->shape, false, err);
	if (rc)
		return rc;
	int64_t n = tir_tensor_numel(&t);
	if (n)
		gather(&vm->gens[vm->vg[val] - 1], v, vm->esz, 0, n, tir_tensor_data(&t));
	if (vm->borrowed[val])
		vm->borrowed[val] = false;
	else
		tir_tensor_release(v);
	*v = t;
	vm->vg[val] = 0;
	return 0;
}

static bool reshape_op(enum tir_op op)
{
	return tir_op(op)->fuse == TIR_FUSE_RESHAPE;
}

/* Member j (ONCE), or reduction j that the blocks cannot fold as runs,
 * computed now into a new value. */
static int premake(struct vm *vm, int j, struct tir_err *err)
{
	const struct tir_node *n = vm->nd[j].n;
	struct tir_tensor *v = &vm->vals[vm->nvals];
	int rc = 0;
	memset(v, 0, sizeof *v);
	for (int k = 0; k < n->nin && !rc; k++) {
		int x = value_of(vm, j, k);
		/* a view of a generator stays one, unless it would copy */
		if (vm->vg[x] && (tir_op(n->op)->kind != TIR_KIND_MOVEMENT ||
				  (reshape_op(n->op) && !tir_tensor_is_contiguous(&vm->vals[x]))))
			rc = realize(vm, x, err);
	}
	if (rc)
		return rc;
	if (tir_op(n->op)->kind == TIR_KIND_MOVEMENT && n->op != TIR_OP_CAST) {
		rc = tir_move_view(n, &vm->vals[value_of(vm, j, 0)], false, v, err);
		vm->vg[vm->nvals] = vm->vg[value_of(vm, j, 0)];
	} else if (tir_op(n->op)->kind == TIR_KIND_REDUCE) {
		bool mask[TIR_MAX_RANK];
		const struct tir_tensor *x = &vm->vals[value_of(vm, j, 0)];
		tir_reduce_mask(n, x->rank, mask);
		rc = tir_tensor_alloc(v, vm->dt, n->type.rank, n->type.shape, false, err);
		if (!rc)
			rc = tir_k_reduce(n->op, x, mask, v, err);
	} else {
		struct tir_tensor a[3] = {{0}};
		for (int k = 0; k < n->nin; k++)
			tir_view_broadcast(&vm->vals[value_of(vm, j, k)], n->type.rank, n->type.shape, &a[k]);
		rc = tir_tensor_alloc(v, vm->dt, n->type.rank, n->type.shape, false, err);
		if (!rc)
			rc = member_kernel(n, a, v, err);
		for (int k = 0; k < n->nin; k++)
			tir_tensor_release(&a[k]);
	}
	if (rc)
		return rc;
	vm->nd[j].pre = true;
	vm->nd[j].val = vm->nvals++;
	return 0;
}

/* The source for operand k of member j (a value read from memory):
 * *out its index. */
static int add_source(struct vm *vm, int j, int k, int *out, struct tir_err *err)
{
	const struct tir_group_info *in = &vm->info;
	const struct vnode *v = &vm->nd[j];
	int val = value_of(vm, j, k);
	bool row = v->cls == TIR_FC_ROW && !v->red;
	int sp = row ? -1 : in->via[j];
	for (int s = vm->src_of[val]; s >= 0; s = vm->src[s].next) {
		struct src *c = &vm->src[s];
		if (c->row == row &&
		    (row ? c->v.rank == v->n->type.rank &&
				   !memcmp(c->v.shape, v->n->type.shape, sizeof(int64_t) * (size_t)c->v.rank)
			 : c->sp == sp)) {
			c->for_red |= v->red;
			*out = s;
			return 0;
		}
	}
	/* a generator read through a copying reshape: computed into memory */
	for (int a = row ? -1 : sp, rc = 0; a >= 0 && vm->vg[val]; a = in->via[a]) {
		if (reshape_op(vm->g->nodes[a]->op) && (rc = realize(vm, val, err)))
			return rc;
	}
	TIR_ASSERT(vm->nsrc < 3 * vm->n);
	struct src *s = &vm->src[vm->nsrc];
	*s = (struct src){.val = val, .next = vm->src_of[val], .row = row, .sp = sp, .for_red = v->red, .reg = -1};
	vm->src_of[val] = vm->nsrc;
	const struct tir_tensor *x = &vm->vals[val];
	int rc = 0;
	if (row) {
		tir_view_broadcast(x, v->n->type.rank, v->n->type.shape, &s->v);
	} else {
		/* broadcast in the layout it is read in, then moved up to the
		 * domain's through the views; a view's value is broadcast in
		 * its turn to the layout its reader is computed in (the next
		 * view's operand, or the domain: slice(ceil(x), ...) + y of
		 * more axes) */
		const struct tir_ntype *st = sp < 0 ? NULL : &vm->g->nodes[sp]->in[0]->type;
		struct tir_tensor cur;
		tir_view_broadcast(x, st ? st->rank : in->rank, st ? st->shape : in->shape, &cur);
		for (int a = sp; a >= 0 && !rc; a = in->via[a]) {
			struct tir_tensor next;
			rc = tir_move_view(vm->g->nodes[a], &cur, false, &next, err);
			tir_tensor_release(&cur);
			cur = next;
			st = in->via[a] < 0 ? NULL : &vm->g->nodes[in->via[a]]->in[0]->type;
			if (!rc) {
				tir_view_broadcast(&next, st ? st->rank : in->rank, st ? st->shape : in->shape, &cur);
				tir_tensor_release(&next);
			}
		}
		s->v = cur;
	}
	if (vm->vg[val])
		s->gen = &vm->gens[vm->vg[val] - 1];
	*out = vm->nsrc++;
	return rc;
}

/* Whether a group of whole rows a block can run in order (run_rows), and
 * if so its registers anew: with every member made once per block, in
 * order, a FULL member's register is free once its last reader has run
 * (that reader may write over it: vmath computes in place), so fewer
 * registers than ensure's memo needs.  (Blocks keep their size: blocks
 * of a row made bench/layernorm_hand.tir slower, its rows coming from
 * memory and going back to it while the row is computed.) */
static void lean_plan(struct vm *vm, bool tiled)
{
	const struct tir_group_info *info = &vm->info;
	int n = vm->n, root = n - 1;
	if (!info->reduces || info->leading || tiled || vm->chunk != vm->cols || vm->cols < 1 ||
	    (vm->nd[root].cls != TIR_FC_FULL && vm->nd[root].cls != TIR_FC_ROW))
		return;
	for (int j = 0; j < n; j++) {
		const struct vnode *v = &vm->nd[j];
		if (v->pre)
			continue;
		if (v->cls != TIR_FC_FULL && v->cls != TIR_FC_ROW && (v->cls != TIR_FC_ALIAS || j == root))
			return;
		if (v->red && tir_op(v->n->op)->fuse != TIR_FUSE_REDUCE)
			return;
	}
	/* by member (without the memory, the blocks run as ensure's memo
	 * would: lean is a speed-up only) */
	int *last = malloc(sizeof *last * 3 * (size_t)n), *holder = last + n, *reg = last + 2 * n, nreg = 0;
	if (!last)
		return;
	for (int j = 0; j < n; j++)
		last[j] = -1;
	/* the last member to read each FULL member's register (an ALIAS
	 * reads nothing: its readers read the member below) */
	for (int j = 0; j < n; j++) {
		const struct vnode *v = &vm->nd[j];
		for (int q = 0; !v->pre && v->cls != TIR_FC_ALIAS && q < v->n->nin; q++)
			if (v->op[q] >= 0 && vm->nd[v->op[q]].cls != TIR_FC_ROW)
				last[vm->nd[v->op[q]].base] = j;
	}
	/* member registers are vm's first big ones: as many as before, any
	 * more are added after all the others */
	int old = 0;
	for (int j = 0; j < root; j++)
		if (!vm->nd[j].pre && vm->nd[j].cls == TIR_FC_FULL && vm->nd[j].reg + 1 > old)
			old = vm->nd[j].reg + 1;
#if defined(__x86_64__)
	vm->nt = vm->nd[root].cls == TIR_FC_FULL && vm->cols * (int64_t)vm->esz >= 256 &&
		 vm->rows * vm->cols * (int64_t)vm->esz >= sz.ntmin &&
		 vm->k * vm->cols * (int64_t)vm->esz > sz.l1fit;
#endif
	for (int j = 0; j < (vm->nt ? n : root); j++) {
		const struct vnode *v = &vm->nd[j];
		reg[j] = -1;
		if (v->pre || v->cls != TIR_FC_FULL)
			continue;
		int r = -1;
		for (int q = 0; q < nreg && r < 0; q++)
			if (last[holder[q]] <= j)
				r = q;
		if (r < 0)
			r = nreg++;
		holder[r] = j;
		reg[j] = r;
	}
	for (int j = 0; j < (vm->nt ? n : root); j++)
		if (reg[j] >= 0)
			vm->nd[j].reg = reg[j] < old ? reg[j] : vm->nbig + reg[j] - old;
	if (nreg > old)
		vm->nbig += nreg - old;
	vm->lean = true;
	free(last);
}

/* Whether input k (v) of another dtype is widened as the blocks read it
 * (no pass of its own over memory): a big value of a storage type that
 * only members computed block by block read, never a reduction folding
 * it in place or a member made before the blocks, which take values of
 * the group's dtype. */
static bool widens(const struct vm *vm, const struct tir_group *g, int k, const struct tir_tensor *v)
{
	const struct tir_group_info *info = &vm->info;
	/* a storage type (f16, bf16, i8, u8, i16) big enough that a pass
	 * would cost: a scalar or a small operand (a literal held in f64, a
	 * bias) is converted once and then read in place or spread */
	if (tir_dtype_wide(v->dtype) == v->dtype || tir_tensor_numel(v) < 4096)
		return false;
	for (int j = 0; j < g->n; j++) {
		const struct tir_node *n = g->nodes[j];
		bool reads = false;
		for (int i = 0; i < n->nin; i++)
			reads |= n->in[i] == g->inputs[k];
		if (reads && (info->cls[j] == TIR_FC_ONCE || tir_op(n->op)->kind == TIR_KIND_REDUCE))
			return false;
	}
	return true;
}

/* ---- groups over a handful of elements ---- */

/* A group whose domain holds at most SMALL_BYTES (a scalar statement, a
 * short vector) and whose members are all elementwise over it, in its
 * layout (FULL), with no generator to compute and no matmul before it
 * (small_prepare): its members computed whole, one after the other, each
 * into a slot of the domain's size, by the functions run_elems would call
 * on the same values (so the same bits), with none of the blocks,
 * registers and sources.  Its inputs are read into slots when bound
 * (tir_fused_prepare, tir_fused_rebind): gathered and widened to the
 * group's dtype, a literal the plan left without a value read from its
 * node.  It keeps a snode and a slot a member, a slot an input. */
#define SMALL_BYTES 64

enum skind { SK_CAST, SK_F1, SK_F2, SK_SEL, SK_REF };

/* d = a op b, one element of es bytes (4: f32, 8: f64), op the C
 * operator a member's vmath function applies in each lane
 * (tir_vmath_binary_arith): the same bits without the call and its
 * vector's tail (a program of scalar statements); each operation a
 * statement of its own (nothing to contract) */
static void sarith_one(char op, size_t es, char *d, const char *a, const char *b)
{
	if (es == 4) {
		float x, y, r;
		memcpy(&x, a, 4);
		memcpy(&y, b, 4);
		r = op == '+' ? tir_vm_addf(x, y) : op == '-' ? x - y : op == '*' ? tir_vm_mulf(x, y) : x / y;
		memcpy(d, &r, 4);
	} else {
		double x, y, r;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		r = op == '+' ? tir_vm_adds(x, y) : op == '-' ? x - y : op == '*' ? tir_vm_muls(x, y) : x / y;
		memcpy(d, &r, 8);
	}
}

static const struct tir_tensor no_value;

/* Input k: of in (an array), or of inp (pointers; NULL: no value). */
static const struct tir_tensor *in_at(const struct tir_tensor *in, const struct tir_tensor *const *inp, int k)
{
	if (!inp)
		return &in[k];
	return inp[k] ? inp[k] : &no_value;
}

/* A literal input the plan made no value of (a weak scalar: its node
 * holds it). */
static bool node_literal(const struct tir_node *o)
{
	return o->op == TIR_OP_CONST && o->type.weak;
}

/* Input k of small group vm, x, read into its slot (broadcast over the
 * domain, in the group's dtype); false when it cannot be (a value that is
 * no literal's, or of a shape that does not broadcast to the domain). */
static bool small_bind(struct vm *vm, int k, const struct tir_tensor *x)
{
	const struct tir_group_info *info = &vm->info;
	size_t es = vm->esz;
	char *slot = vm->sin + (size_t)k * vm->vsz;
	if (!x->buf || tir_tensor_numel(x) == 1) {
		if (x->buf && x->dtype == vm->dt) {
			const char *p = (const char *)x->buf->data + x->offset * (int64_t)es;
			if (es == 4)
				memcpy(slot, p, 4);
			else
				memcpy(slot, p, 8);
		} else if (x->buf) {
			tir_cvt_run(vm->dt, slot, x->dtype,
				    (const char *)x->buf->data + x->offset * (int64_t)tir_dtype_size(x->dtype), 1, 1);
		} else {
			uint64_t v;
			if (!node_literal(vm->g->inputs[k]))
				return false;
			enum tir_dtype dt = tir_const_weak_value(vm->g->inputs[k], &v);
			tir_cvt_run(vm->dt, slot, dt, &v, 1, 1);
		}
		for (int64_t e = 1; e < vm->numel; e++)
			memcpy(slot + (size_t)e * es, slot, es);
		return true;
	}
	/* a value of several elements: viewed over the domain (no reference:
	 * the caller holds it through the call), gathered */
	int lead = info->rank - x->rank;
	if (lead < 0)
		return false;
	struct tir_tensor v = *x;
	v.rank = info->rank;
	for (int i = info->rank - 1; i >= 0; i--) {
		int j = i - lead;
		int64_t n = j >= 0 ? x->shape[j] : 1, st = j >= 0 ? x->strides[j] : 0;
		if (n != info->shape[i] && n != 1)
			return false;
		v.shape[i] = info->shape[i];
		v.strides[i] = n == info->shape[i] ? st : 0;
	}
	const char *p = gather(NULL, &v, es, 0, vm->numel, slot);
	if (p != slot)
		memcpy(slot, p, (size_t)vm->numel * es);
	return true;
}

/* Node ids of g's member j and input k: the plan's, else the nodes'. */
static inline uint32_t small_mid(const struct tir_group *g, int j)
{
	return g->ids ? g->ids[j] : g->nodes[j]->id;
}

static inline uint32_t small_iid(const struct tir_group *g, int k)
{
	return g->input_ids ? g->input_ids[k] : g->inputs[k]->id;
}

/* Operand id (node o, or NULL when g has ids) of member j of small group
 * vm: j' >= 0 a member, or ~k input k; looked up in map (by node id -
 * base, entries not set are garbage: checked) when there is one, else
 * searched. */
static int small_operand(const struct vm *vm, const int32_t *map, uint32_t base, uint32_t top, int j,
			 const struct tir_node *o, uint32_t id)
{
	const struct tir_group *g = vm->g;
	if (map && id - base <= top - base) { /* (base <= id <= top: unsigned) */
		int32_t v = map[id - base];
		if (v >= 0 ? v < j && small_mid(g, v) == id : ~v < g->nin && small_iid(g, ~v) == id)
			return v;
	}
	int m = g->ids ? tir_id_find(g->ids, j, id) : tir_node_find(g->nodes, j, o);
	if (m >= 0)
		return m;
	m = g->input_ids ? tir_id_find(g->input_ids, g->nin, id) : tir_node_find(g->inputs, g->nin, o);
	TIR_ASSERT(m >= 0); /* a fused operand is a member or an input */
	return ~m;
}

/* What small_prepare asks of member j of g: from v, the view of the
 * graph g's ids are node ids of (a pass over compact arrays: a program
 * of 100,000 statements has some 18 MB of nodes), else from its node. */
struct smember {
	enum tir_op op;
	int nin;
	bool bool_dt;
	int64_t numel;
	/* its operands' ids (the view's edges in place, or own), and nodes
	 * (the node's, or NULL: read from the view) */
	const uint32_t *in;
	struct tir_node *const *inn;
	uint32_t own[3];
};

static bool small_member(const struct tir_group *g, const struct tir_fview *v, int j, struct smember *m)
{
	if (v) {
		const struct tir_fnode *f = &v->n[g->ids[j]];
		m->op = (enum tir_op)f->op;
		m->nin = f->nin;
		m->bool_dt = f->dt == TIR_DTYPE_BOOL;
		m->numel = v->types[f->type].numel;
		m->in = v->edges + f->in;
		m->inn = NULL;
		for (int q = 0; q < m->nin && q < 3; q++)
			if (m->in[q] == TIR_FN_NONE)
				return false;
		return true;
	}
	const struct tir_node *nd = g->nodes[j];
	m->op = nd->op;
	m->nin = nd->nin;
	m->bool_dt = nd->type.dtype == TIR_DTYPE_BOOL;
	m->numel = tir_type_numel(&nd->type);
	m->in = m->own;
	m->inn = nd->in;
	for (int q = 0; q < m->nin && q < 3; q++) {
		if (!nd->in[q])
			return false;
		m->own[q] = nd->in[q]->id;
	}
	return true;
}

/* How a small group runs an op, as apply picks for operands that are
 * contiguous runs: looked up once per op and count of operands. */
struct skind_of {
	bool set, select; /* select: the op's fuse class is TIR_FUSE_SELECT */
	uint8_t kind, nin, fn;
	char arith;
};

/* Member sn of small group vm: op of nin operands ops[] (as small_operand
 * says them), bool_dt its dtype's; kinds and *nfn (of nfns) the group's
 * so far.  0, -1 when the group is not small after all, -TIR_ENOMEM. */
static inline __attribute__((always_inline)) int small_node(struct vm *vm, struct skind_of *kinds, int *nfn, size_t nfns, struct snode *sn,
			     enum tir_op op, int nin, bool bool_dt, const int32_t *ops)
{
	size_t es = vm->esz;
	sn->nin = (uint8_t)nin;
	sn->op[0] = ops[0];
	sn->op[1] = ops[1];
	if (nin == 3) {
		if (tir_grow((void **)&vm->op3, &vm->cap3, vm->n3 + 1, sizeof *vm->op3))
			return -TIR_ENOMEM;
		vm->op3[vm->n3++] = ops[2];
	}
	struct skind_of *ko = &kinds[op];
	if (!ko->set || ko->nin != nin) {
		tir_vmath1_fn f1 = nin == 1 ? tir_vmath_unary_fn(op, vm->dt) : NULL;
		tir_vmath2_fn f2 = nin == 2 ? tir_vmath_binary_fn(op, vm->dt) : NULL;
		ko->set = true;
		ko->nin = (uint8_t)nin;
		ko->kind = op == TIR_OP_CAST ? SK_CAST : f1 ? SK_F1 : f2 ? SK_F2 : SK_REF;
		if (f1 || f2) { /* (a function of its own: an op read with another count of operands) */
			if ((size_t)*nfn == nfns)
				return -1; /* (the blocks' vm computes the same) */
			ko->fn = (uint8_t)*nfn;
			if (f1)
				vm->sfn[(*nfn)++].f1 = f1;
			else
				vm->sfn[(*nfn)++].f2 = f2;
		}
		ko->arith = f2 && (es == 4 || es == 8) ? tir_vmath_binary_arith(op) : 0;
		ko->select = tir_op(op)->fuse == TIR_FUSE_SELECT;
	}
	/* (the op table asked once an op, not once a member) */
	bool mask = ko->select || bool_dt;
	sn->fn = ko->fn;
	sn->kind = ko->kind == SK_REF && (mask || nin == 3) ? SK_SEL : ko->kind;
	sn->arith = sn->kind == SK_F2 ? ko->arith : 0;
	return 0;
}

/* Group g over inputs in/inp into out as a small group, when it is one:
 * NULL when it is not (or one of its inputs does not bind), or, with
 * *oom, out of memory.  Each member and input is looked at once (a
 * program of 100,000 statements: their nodes are far more than the
 * caches hold). */
static struct vm *small_prepare(const struct tir_group *g, const struct tir_group_info *info,
				const struct tir_fview *v, struct tir_plan *lender, const struct tir_tensor *in,
				const struct tir_tensor *const *inp, struct tir_tensor *out, bool *oom)
{
	size_t es = tir_dtype_size(info->dt), n = (size_t)g->n, nin = (size_t)g->nin;
	int64_t numel = info->rows * info->cols;
	*oom = false;
	if (g->head || info->reduces || info->leading || info->cols != 1 || numel < 1 ||
	    numel * (int64_t)es > SMALL_BYTES)
		return NULL;
	/* (the kinds first, from the info's arrays: a small group of another
	 * kind costs no more than this) */
	for (int j = 0; !info->plain && j < g->n; j++) /* (plain: all are) */
		if (info->cls[j] != TIR_FC_FULL || info->via[j] != -1)
			return NULL;
	size_t vsz = (size_t)numel * es;
	struct skind_of kinds[TIR_OP_COUNT] = {{0}};
	int nfn = 0;
	size_t nfns = n < SMALL_FNS ? n : SMALL_FNS;
	/* (its inputs' slots, then its members': sval last) */
	size_t head = round64(sizeof(struct snode) * n) + round64(sizeof(union sfn) * nfns) +
		      round64(sizeof(int32_t) * 2 * nin) + vsz * nin;
	size_t bytes = head + vsz * n;
	/* operands found by node id: members and inputs are in graph order,
	 * their ids dense unless the inputs reach far back */
	if (!g->ids || !g->input_ids)
		v = NULL; /* (the view is read by node id) */
	uint32_t base = small_mid(g, 0), top = small_mid(g, g->n - 1);
	if (nin && small_iid(g, 0) < base)
		base = small_iid(g, 0);
	size_t span = (size_t)(top - base) + 1, mapb = sizeof(int32_t) * span;
	bool dense = span <= 4 * (n + nin) + 64;
	/* the block: lent by the plan (pages its passes wrote), with the map
	 * over the members' slots (not written till the kernel runs, the map
	 * not read after this) and past them; else the block's own, with the
	 * map in its huge pages past its end when it fits there, else
	 * malloc'd */
	size_t lendb = head + (vsz * n > mapb ? vsz * n : mapb);
	char *m = dense && bytes >= SMALL_PAGES ? tir_plan_lend(lender, lendb) : NULL;
	bool lent = m != NULL;
	bool inblock = dense && (lent || (bytes >= SMALL_PAGES && tir_pages_round(bytes) - round64(bytes) >= mapb));
	struct vm *vm = calloc(1, sizeof *vm);
	if (!lent)
		m = small_mem(bytes);
	int32_t *map = !dense ? NULL
		       : inblock ? (m ? (int32_t *)(m + (lent ? head : round64(bytes))) : NULL)
				 : malloc(mapb);
	if (!vm || !m) {
		*oom = true;
		goto fail;
	}
	vm->lender = lent ? lender : NULL;
	vm->small = true;
	vm->g = g;
	vm->info = *info;
	vm->info.cls = NULL; /* (not needed past here: the caller's may go) */
	vm->info.via = NULL;
	vm->n = g->n;
	vm->dt = info->dt;
	vm->esz = es;
	vm->rows = vm->numel = numel;
	vm->cols = 1;
	vm->vsz = vsz;
	vm->mem = m;
	vm->memcap = bytes;
	vm->sbytes = sizeof *vm + bytes;
	vm->sn = (struct snode *)m;
	vm->sfn = (union sfn *)(m + round64(sizeof(struct snode) * n));
	vm->iedge = (int32_t *)((char *)vm->sfn + round64(sizeof(union sfn) * nfns));
	vm->iid = vm->iedge + nin;
	vm->sin = (char *)vm->iedge + round64(sizeof(int32_t) * 2 * nin);
	vm->sval = vm->sin + vsz * nin;
	vm->out = tir_tensor_data(out);
	for (size_t k = 0; k < nin; k++) {
		uint32_t id = small_iid(g, (int)k);
		const struct tir_tensor *x = in_at(in, inp, (int)k);
		if ((x->buf && x->rank > info->rank) || !small_bind(vm, (int)k, x))
			goto fail;
		vm->iid[k] = id;
		vm->iedge[k] = 0;
		if (map)
			map[id - base] = ~(int32_t)k;
	}
	if (v && map) {
		/* A long program's kernel (the view's, the map dense: its
		 * members and their operands read in place from compact
		 * arrays, by node id, each operand found by the map): the loop
		 * below with its questions of which kind of group this is
		 * asked once, here.  test_small's from_view holds it to the
		 * nodes' loop. */
		const uint32_t *mids = g->ids, *iids = g->input_ids;
		uint32_t span1 = top - base;
		int gnin = g->nin;
		for (int j = 0; j < g->n; j++) {
			const struct tir_fnode *f = &v->n[mids[j]];
			int mn = f->nin;
			if (mn > 3 || v->types[f->type].numel != numel)
				goto fail;
			const uint32_t *e = v->edges + f->in;
			int32_t ops[3] = {0, 0, 0};
			for (int q = 0; q < mn; q++) {
				uint32_t id = e[q];
				int32_t w;
				if (id == TIR_FN_NONE)
					goto fail;
				/* (small_operand's map, inline; anything else its search) */
				if (id - base > span1 ||
				    !((w = map[id - base]) >= 0 ? w < j && mids[w] == id : ~w < gnin && iids[~w] == id))
					w = small_operand(vm, map, base, top, j, NULL, id);
				if (w < 0)
					vm->iedge[~w]++;
				ops[q] = w;
			}
			map[mids[j] - base] = j;
			int rc = small_node(vm, kinds, &nfn, nfns, &vm->sn[j], (enum tir_op)f->op, mn,
					    f->dt == TIR_DTYPE_BOOL, ops);
			if (rc) {
				*oom = rc == -TIR_ENOMEM;
				goto fail;
			}
		}
	}
	for (int j = 0; !(v && map) && j < g->n; j++) {
		struct smember nd;
		/* every member elementwise over the whole domain, in its layout */
		if (!small_member(g, v, j, &nd) || nd.numel != numel || nd.nin > 3)
			goto fail;
		int32_t ops[3] = {0, 0, 0};
		for (int q = 0; q < nd.nin; q++) {
			int o = small_operand(vm, map, base, top, j, nd.inn ? nd.inn[q] : NULL, nd.in[q]);
			if (o < 0)
				vm->iedge[~o]++;
			ops[q] = o;
		}
		if (map)
			map[small_mid(g, j) - base] = j;
		int rc = small_node(vm, kinds, &nfn, nfns, &vm->sn[j], nd.op, nd.nin, nd.bool_dt, ops);
		if (rc) {
			*oom = rc == -TIR_ENOMEM;
			goto fail;
		}
	}
	if (!inblock)
		free(map);
	vm->sbytes += sizeof *vm->op3 * vm->cap3;
	return vm;
fail:
	if (!inblock)
		free(map);
	if (vm)
		free(vm->op3);
	if (lent)
		tir_plan_unlend(lender);
	else
		small_mem_free(m, bytes);
	free(vm);
	return NULL;
}

/* Elements [i0, i0 + cnt) of small group vm: its members in order. */
static void run_small(const struct vm *vm, int64_t i0, int64_t cnt)
{
#define SLOT(o) (((o) >= 0 ? vm->sval + (size_t)(o) * vsz : vm->sin + (size_t)~(o) * vsz) + at)
	size_t es = vm->esz, vsz = vm->vsz, at = (size_t)i0 * es;
	int root = vm->n - 1;
	size_t t3 = 0; /* (vm->op3's next) */
	for (int j = 0; j < vm->n; j++) {
		const struct snode *s = &vm->sn[j];
		int32_t o3 = s->nin > 2 ? vm->op3[t3++] : 0;
		const char *a0 = SLOT(s->op[0]);
		char *d = (j == root ? vm->out : vm->sval + (size_t)j * vsz) + at;
		/* (each kind asks the slots it reads: a unary member's second
		 * operand is 0, a third is a where's or a clip's) */
		if (s->kind == SK_F2) {
			const char *a1 = SLOT(s->op[1]);
			if (cnt == 1 && s->arith)
				sarith_one(s->arith, es, d, a0, a1);
			else
				vm->sfn[s->fn].f2(d, a0, a1, cnt);
			continue;
		}
		if (s->kind == SK_F1) {
			vm->sfn[s->fn].f1(d, a0, cnt);
			continue;
		}
		if (s->kind == SK_CAST) { /* its operand widened already: a copy */
			memcpy(d, a0, (size_t)cnt * es);
			continue;
		}
		const char *a[3] = {a0, SLOT(s->op[1]), SLOT(o3)};
		int64_t st[3] = {1, 1, 1};
		const struct tir_node *nd = vm->g->nodes[j];
		bool mask = tir_op(nd->op)->fuse == TIR_FUSE_SELECT || nd->type.dtype == TIR_DTYPE_BOOL;
		if (s->kind == SK_SEL && !tir_k_select_run(nd->op, mask, vm->dt, d, (const void *const *)a, st, cnt))
			continue;
		/* the reference kernel, as apply falls back to */
		struct tir_tensor t[3], dt;
		struct tir_buf tb[3], db;
		struct tir_err e = {0};
		for (int q = 0; q < s->nin; q++)
			mkview(&t[q], &tb[q], vm->dt, a[q], cnt, 1, 1, 0);
		mkview(&dt, &db, vm->dt, d, cnt, 1, 1, 0);
		TIR_ASSERT(member_kernel(nd, t, &dt, &e) == 0);
	}
#undef SLOT
}

/* The blocks' vm for g (not small). */
static struct tir_fused *prepare_blocks(const struct tir_group *g, const struct tir_tensor *in,
					const struct tir_tensor *const *inp, struct tir_tensor *out,
					struct tir_err *err)
{
	const struct tir_node *root = g->root;
	struct vm *vm = vm_new(g);
	int rc = 0;
	sizes();
	if (!vm) {
		tir_errf(err, TIR_ENOMEM, &root->loc, "out of memory");
		return NULL;
	}
	vm->g = g;
	if (g->info) {
		vm->info = *g->info; /* (its arrays the plan's, which outlives the kernel) */
	} else {
		const struct tir_node *culprit;
		const char *why = tir_group_analyze(g, &vm->info, &culprit);
		TIR_ASSERT(!why); /* the fuser checked it */
	}
	const struct tir_group_info *info = &vm->info;
	vm->n = g->n;
	vm->dt = info->dt;
	vm->esz = tir_dtype_size(vm->dt);
	vm->rows = info->rows;
	vm->cols = info->cols;
	vm->out = tir_tensor_data(out);
	for (int k = 0; k < g->nin && !rc; k++) {
		const struct tir_tensor *xk = in_at(in, inp, k);
		if (!xk->buf && node_literal(g->inputs[k])) {
			/* a literal the plan made no value of: its node's, in
			 * the vm's own storage (as one element of another dtype
			 * below) */
			uint64_t lv;
			enum tir_dtype ldt = tir_const_weak_value(g->inputs[k], &lv);
			vm->cbuf[k] = (struct tir_buf){.refs = 1, .bytes = vm->esz, .data = &vm->cval[k]};
			vm->vals[k] = (struct tir_tensor){.dtype = vm->dt, .buf = &vm->cbuf[k]};
			tir_cvt_run(vm->dt, &vm->cval[k], ldt, &lv, 1, 1);
			vm->borrowed[k] = true;
			vm->nvals++;
			continue;
		}
		if (!xk->buf && tir_gen_is_op(g->inputs[k]->op)) {
			/* a generator computed here (the plan did not store it) */
			const struct tir_node *x = g->inputs[k];
			struct tir_gen *gn = &vm->gens[vm->ngen];
			TIR_ASSERT(tir_gen_init(gn, x) && gn->dt == vm->dt && vm->ngen < g->nin);
			vm->vbuf[vm->ngen] = (struct tir_buf){.refs = 1};
			struct tir_tensor *v = &vm->vals[k];
			*v = (struct tir_tensor){.dtype = vm->dt, .rank = x->type.rank, .buf = &vm->vbuf[vm->ngen]};
			memcpy(v->shape, x->type.shape, sizeof(int64_t) * (size_t)x->type.rank);
			tir_tensor_set_contiguous_strides(v);
			vm->borrowed[k] = true;
			vm->vg[k] = ++vm->ngen;
			vm->nvals++;
			/* read broadcast (each element more than once): computed once */
			int64_t dn = 1;
			for (int d = 0; d < info->rank; d++)
				dn *= info->shape[d];
			if (tir_type_numel(&x->type) < dn)
				rc = realize(vm, k, err);
			continue;
		}
		if (xk->dtype == vm->dt || widens(vm, g, k, xk)) {
			/* the caller holds it through the call */
			vm->vals[k] = *xk;
			vm->borrowed[k] = true;
		} else if (xk->dtype == vm->dt) {
			memset(&vm->vals[k], 0, sizeof vm->vals[k]);
			tir_tensor_ref(&vm->vals[k], xk);
		} else if (xk->buf && tir_tensor_numel(xk) == 1) {
			/* one element (a literal is held in f64): converted into
			 * the vm's own storage, as tir_tensor_convert would */
			struct tir_tensor *v = &vm->vals[k];
			vm->cbuf[k] = (struct tir_buf){.refs = 1, .bytes = vm->esz, .data = &vm->cval[k]};
			*v = (struct tir_tensor){.dtype = vm->dt, .rank = xk->rank, .buf = &vm->cbuf[k]};
			memcpy(v->shape, xk->shape, sizeof(int64_t) * (size_t)xk->rank);
			tir_tensor_set_contiguous_strides(v);
			tir_cvt_run(vm->dt, &vm->cval[k], xk->dtype, tir_tensor_data(xk), 1, 1);
			vm->borrowed[k] = true;
		} else {
			memset(&vm->vals[k], 0, sizeof vm->vals[k]);
			rc = tir_tensor_convert(xk, vm->dt, &vm->vals[k], err);
		}
		vm->nvals++;
	}
	/* members; what is made before the blocks */
	for (int j = 0; j < g->n && !rc; j++) {
		struct vnode *v = &vm->nd[j];
		v->n = g->nodes[j];
		v->cls = info->cls[j];
		v->red = tir_op(v->n->op)->kind == TIR_KIND_REDUCE;
		v->reg = -1;
		v->steal = -1;
		v->base = j;
		v->f1 = v->n->nin == 1 ? tir_vmath_unary_fn(v->n->op, vm->dt) : NULL;
		v->f2 = v->n->nin == 2 ? tir_vmath_binary_fn(v->n->op, vm->dt) : NULL;
		for (int k = 0; k < 2; k++)
			v->sfn[k] = v->n->nin == 2 ? tir_vmath_binary_scalar_fn(v->n->op, vm->dt, k) : NULL;
		v->mask = tir_op(v->n->op)->fuse == TIR_FUSE_SELECT || v->n->type.dtype == TIR_DTYPE_BOOL;
		v->sel = v->mask || v->n->nin == 3;
		if (v->cls == TIR_FC_ONCE) {
			rc = premake(vm, j, err);
		} else if (v->red && value_of(vm, j, 0) >= 0) {
			/* a value read from memory: the blocks fold its rows as
			 * tir_k_reduce does only if it walks them as runs; a
			 * reduction of it to one value is tir_k_reduce's too,
			 * which gives a long run to the pool in pieces (in the
			 * blocks it would be one task whenever it is not the
			 * root: e.g. sum(max(x, axis=1)) + var(x)) */
			bool mask[TIR_MAX_RANK];
			const struct tir_tensor *x = &vm->vals[value_of(vm, j, 0)];
			tir_reduce_mask(v->n, x->rank, mask);
			int64_t on = 1;
			for (int d = 0; d < v->n->type.rank; d++)
				on *= v->n->type.shape[d];
			/* a generator is no memory: the blocks compute its
			 * elements as they fold them along rows, whatever the
			 * layout, so sum(randn(...)) is never stored, as
			 * sum(randn(...) * 2) is not; but to one value only as
			 * the root, which the blocks split over the pool (a
			 * reduction of leading axes reads it whole: the fuser
			 * gives it none) */
			bool gen = vm->vg[value_of(vm, j, 0)] != 0 && !info->leading &&
				   (on > 1 || v->n == g->root);
			if (!gen && (info->leading || !tir_reduce_by_runs(x, mask) || on == 1))
				rc = premake(vm, j, err);
		}
	}
	if (rc)
		goto out;
	if (vm->nd[g->n - 1].pre) {
		/* all done before the blocks */
		const struct tir_tensor *v = &vm->vals[vm->nd[g->n - 1].val];
		memcpy(vm->out, tir_tensor_data(v), (size_t)tir_tensor_numel(v) * vm->esz);
		vm->done = true;
		goto out;
	}
	/* operands: members computed in the blocks, else sources */
	for (int j = 0; j < g->n && !rc; j++) {
		struct vnode *v = &vm->nd[j];
		for (int k = 0; !v->pre && k < v->n->nin && !rc; k++) {
			int m = tir_node_find(g->nodes, j, v->n->in[k]), s = 0;
			if (m >= 0 && !vm->nd[m].pre)
				v->op[k] = m;
			else if (!(rc = add_source(vm, j, k, &s, err)))
				v->op[k] = ~s;
		}
	}
	if (rc)
		goto out;
	/* registers: one per member computed in the blocks (an ALIAS shares
	 * the one below), one per value gathered.  What reads a member's
	 * register, counted once (a group of any length): fb[m], the member
	 * whose register m is in (m's base, as set below); rd[m], the operands
	 * reading m; cnt[o], those reading o or an alias of it set so far. */
	int *fb = malloc(sizeof *fb * 3 * (size_t)g->n), *rd = fb + g->n, *cnt = fb + 2 * g->n;
	if (!fb) {
		rc = tir_errf(err, TIR_ENOMEM, &root->loc, "out of memory");
		goto out;
	}
	for (int m = 0; m < g->n; m++) {
		const struct vnode *v = &vm->nd[m];
		fb[m] = !v->pre && v->cls == TIR_FC_ALIAS && v->op[0] >= 0 ? fb[v->op[0]] : m;
		rd[m] = cnt[m] = 0;
	}
	for (int q = 0; q < g->n; q++)
		for (int k = 0; !vm->nd[q].pre && k < vm->nd[q].n->nin; k++)
			if (vm->nd[q].op[k] >= 0)
				rd[vm->nd[q].op[k]]++;
	for (int j = 0; j < g->n - 1; j++) {
		struct vnode *v = &vm->nd[j];
		v->steal = -1;
		cnt[fb[j]] += rd[j];
		if (v->pre)
			continue;
		if (v->cls == TIR_FC_ALIAS) {
			v->base = vm->nd[v->op[0]].base;
		} else if (v->cls == TIR_FC_FULL) {
			/* over the one member it reads that nothing else reads
			 * (vmath computes in place), else a register of its own */
			int o = -1, readers = 0;
			for (int k = 0; k < v->n->nin; k++)
				if (v->op[k] >= 0 && vm->nd[v->op[k]].cls == TIR_FC_FULL && vm->nd[v->op[k]].reg >= 0)
					o = v->op[k];
			/* (what reads o, or an alias of it set so far, but j) */
			if (o >= 0) {
				readers = cnt[o];
				for (int k = 0; k < v->n->nin; k++)
					readers -= v->op[k] >= 0 && fb[v->op[k]] == o;
			}
			if (o >= 0 && !readers) {
				v->reg = vm->nd[o].reg;
				v->steal = o;
			} else {
				v->reg = vm->nbig++;
			}
		} else {
			v->reg = vm->nsmall++;
		}
	}
	free(fb);
	for (int j = 0; j < g->n; j++) {
		struct vnode *v = &vm->nd[j];
		v->breg = -1;
		for (int k = 0; !v->pre && v->cls == TIR_FC_FULL && k < v->n->nin; k++) {
			struct vnode *o = v->op[k] >= 0 ? &vm->nd[v->op[k]] : NULL;
			if (o && o->cls == TIR_FC_ROW && o->breg < 0 && vm->cols > 1)
				o->breg = vm->nbig++;
		}
	}
	/* a group of elements reading a value across its last axis (a
	 * transpose) runs over square tiles of the domain's last two axes, so
	 * that what a tile reads stays in L1 */
	int split = info->split;
	bool tiled = false;
	for (int s = 0; s < vm->nsrc && !info->reduces && !g->head && info->rank >= 2; s++) {
		const struct src *c = &vm->src[s];
		int64_t st = c->v.strides[info->rank - 1];
		if (!c->row && info->shape[info->rank - 1] >= TILE && (st >= 16 || st <= -16))
			tiled = true;
	}
	if (tiled) {
		split = info->rank - 1;
		vm->cols = info->shape[split];
		vm->rows = vm->cols ? tir_type_numel(&root->type) / vm->cols : 0;
	}
	for (int s = 0; s < vm->nsrc; s++) {
		struct src *c = &vm->src[s];
		if (c->row)
			c->direct = collapse(&c->v, 0, c->v.rank, &c->so);
		else
			c->direct = collapse(&c->v, 0, split, &c->so) &&
				    collapse(&c->v, split, info->rank, &c->si) &&
				    (!c->for_red || c->si == 1 || vm->cols == 1);
		/* constant along cols (and not a row read as such) */
		c->bcast = c->direct && !c->row && !c->for_red && c->si == 0 &&
			   (vm->cols > 1 || c->so == 0);
		/* a generator is computed into its register, a value of
		 * another dtype widened into it; a broadcast one of the
		 * group's dtype is read unspread by the ops that take one
		 * value (src_block's raw), else spread into its register
		 * once per shape of block (a scalar) or per block (a value
		 * per row) */
		if (c->gen || c->v.dtype != vm->dt)
			c->bcast = false;
		if (c->bcast || c->gen || c->v.dtype != vm->dt)
			c->direct = false;
		if (!c->direct)
			c->reg = c->row ? vm->nsmall++ : vm->nbig++;
	}
	/* blocks: whole rows while their registers stay in L2, else one row
	 * a piece of cols at a time */
	int64_t rows = vm->rows, cols = vm->cols;
	int64_t es = (int64_t)vm->esz;
	if (info->leading) {
		/* tasks down cols [lo, lo + chunk), blocks of k rows of them;
		 * narrower strips (down to 128 cols) while that makes more
		 * tasks toward TIR_TASKS_WANT and each still folds an L1d */
		vm->chunk = cols < sz.blk ? cols : sz.blk;
		while (vm->chunk >= 256 && (cols + vm->chunk - 1) / vm->chunk < TIR_TASKS_WANT &&
		       rows * (vm->chunk / 2) * es >= tir_machine_caches()->l1d)
			vm->chunk = (vm->chunk / 2 + 7) / 8 * 8;
		vm->k = sz.rowbytes / es / vm->chunk;
	} else if (tiled) {
		vm->k = TILE;
		vm->chunk = TILE;
		vm->tile_reg = vm->nbig++;
	} else if (cols <= (info->reduces ? sz.rowbytes / es : sz.eblk)) {
		/* rows of a reducing group: several together (in L2), so
		 * that the per-call costs of its ops are spread over more
		 * elements; plain elements: L1-sized blocks */
		vm->k = (info->reduces ? sz.rowbytes / es : sz.eblk) / cols;
		vm->chunk = cols;
		/* unless all that a block streams (its registers, the values
		 * it reads in place, the root's rows) fits in L1 for a row
		 * or more: then the fewest rows that fill it (bench/softmax_hand.tir,
		 * 1 thread, ms: 64 KiB blocks 3.61, L1 blocks 3.01) */
		int64_t arrays = vm->nbig + (vm->nd[g->n - 1].cls == TIR_FC_FULL);
		for (int s = 0; s < vm->nsrc; s++)
			arrays += vm->src[s].direct && !vm->src[s].row;
		int64_t row_bytes = arrays * cols * es;
		/* (none: a reduction of generators streams nothing) */
		if (info->reduces && row_bytes > 0 && row_bytes <= sz.l1fit)
			vm->k = sz.l1fit / row_bytes;
	} else {
		vm->k = 1;
		vm->chunk = vm->nbig * cols * es <= sz.rowfit ? cols : sz.blk;
	}
	lean_plan(vm, tiled);
	/* a long group with many values live at once (a kernel has no bound
	 * on its ops): blocks of elements shrink, down to 128, so that its
	 * registers stay in half of L2 */
	while (vm->cols == 1 && !info->reduces && !info->leading && !tiled && vm->k > 128 &&
	       (int64_t)vm->nbig * vm->k * es > tir_machine_caches()->l2 / 2)
		vm->k /= 2;
	/* and a group of some ten values live at once (a chain), blocks of
	 * half the size, down to 256 elements, while all that a block
	 * streams (its registers, the values read in place, the root) passes
	 * a quarter of L1d: its calls are cheap enough now (elems_plan) that
	 * the smaller footprint wins; a few arrays keep L1d / 64 elements,
	 * the longer calls that a generator computed per block wants
	 * (bench/chain.tir, 9 arrays, L1d 48 KiB: 256 elements, ms at 1 and 2
	 * threads 13.5 and 7.1 against 14.1 and 7.6 at 512; relu(randn(...) *
	 * 0.1), 4 arrays: 512, where 256 takes 13.2 ms against 11.6) */
	if (vm->cols == 1 && !info->reduces && !info->leading && !tiled) {
		int64_t arrays = vm->nbig + (vm->nd[g->n - 1].cls == TIR_FC_FULL);
		for (int s = 0; s < vm->nsrc; s++)
			arrays += vm->src[s].direct && !vm->src[s].row;
		while (vm->k > 256 && arrays * vm->k * es > tir_machine_caches()->l1d / 4)
			vm->k /= 2;
	}
	if (vm->k > rows)
		vm->k = rows > 0 ? rows : 1;
	vm->red_chunk = vm->chunk < cols ? vm->chunk : ((cols + 7) / 8 * 8 < 128 ? 128 : (cols + 7) / 8 * 8);
	/* tasks of whole blocks, about tir_task_items elements each */
	int64_t per = tir_task_items(rows * cols, es) / (vm->k * cols);
	vm->task_rows = vm->chunk < cols && !tiled ? 1 : vm->k * (per > 1 ? per : 1);
	vm->elems = vm->cols == 1 && !info->reduces && !tiled && !info->leading;
	for (int j = 0; j < g->n; j++)
		vm->elems &= vm->nd[j].pre || vm->nd[j].cls == TIR_FC_FULL ||
			     (vm->nd[j].cls == TIR_FC_ALIAS && j < g->n - 1);
#if defined(__x86_64__)
	/* a group of elements that reads no memory (its sources generators
	 * and single values) and writes a root past the caches near a core
	 * (ntmin) makes the root in a register and copies it out with stores
	 * that bypass the caches, as lean_plan's: a store to a line not in
	 * the cache first reads it, which doubles such a kernel's traffic
	 * (relu(randn(...) * 0.1)).  One that reads as much as it writes
	 * (bench/chain.tir) lost by the copy (docs/decisions.md).  Not an
	 * epilogue (g->head), whose blocks are in cache, read back soon. */
	bool reads = g->head != NULL;
	for (int s = 0; s < vm->nsrc; s++)
		reads |= !vm->src[s].gen && !vm->src[s].bcast;
	if (vm->elems && !reads && vm->rows * es >= sz.ntmin) {
		vm->nt = true;
		vm->nd[g->n - 1].reg = vm->nbig++;
	}
#endif
	{
		/* (run_pieces' case: one row, longer than a block, its root
		 * a sum of a member, every other member FULL) */
		const struct vnode *r = &vm->nd[g->n - 1];
		vm->pelems = vm->rows == 1 && vm->chunk < vm->cols && r->red && !r->pre && r->op[0] >= 0 &&
			     (r->n->op == TIR_OP_SUM || r->n->op == TIR_OP_MEAN || r->n->op == TIR_OP_VAR);
		for (int j = 0; j < g->n - 1; j++)
			vm->pelems &= vm->nd[j].pre || vm->nd[j].cls == TIR_FC_FULL || vm->nd[j].cls == TIR_FC_ALIAS;
	}
	vm->bigsz = round64((size_t)(vm->k * vm->chunk) * vm->esz);
	vm->smallsz = round64((size_t)vm->k * vm->esz);
out:
	if (rc) {
		vm_free(vm);
		return NULL;
	}
	return (struct tir_fused *)vm;
}

/* g over in[] or *inp[]: its small vm when it is one (small_prepare), else
 * the blocks'. */
static struct tir_fused *prepare_any(const struct tir_group *g, const struct tir_fview *v, struct tir_plan *lender,
				     const struct tir_tensor *in, const struct tir_tensor *const *inp,
				     struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_group_info *info = g->info;
	struct tir_group_info own;
	void *om = NULL;
	if (!info && (om = malloc(tir_group_info_bytes(g->n)))) {
		const struct tir_node *culprit;
		tir_group_info_place(&own, om, g->n);
		if (!tir_group_analyze(g, &own, &culprit))
			info = &own;
	}
	if (info) {
		bool oom;
		struct vm *vm = small_prepare(g, info, v, lender, in, inp, out, &oom);
		free(om);
		if (vm)
			return (struct tir_fused *)vm;
		if (oom) {
			tir_errf(err, TIR_ENOMEM, &g->root->loc, "out of memory");
			return NULL;
		}
	} else {
		free(om);
	}
	return prepare_blocks(g, in, inp, out, err);
}

struct tir_fused *tir_fused_prepare(const struct tir_group *g, const struct tir_tensor *in,
				    struct tir_tensor *out, struct tir_err *err)
{
	return prepare_any(g, NULL, NULL, in, NULL, out, err);
}

struct tir_fused *tir_fused_prepare_at(const struct tir_group *g, const struct tir_tensor *const *in,
				       struct tir_tensor *out, struct tir_err *err)
{
	return prepare_any(g, NULL, NULL, NULL, in, out, err);
}

struct tir_fused *tir_fused_prepare_view(const struct tir_group *g, const struct tir_fview *v,
					 struct tir_plan *plan, const struct tir_tensor *const *in,
					 struct tir_tensor *out, struct tir_err *err)
{
	return prepare_any(g, v, plan, NULL, in, out, err);
}

const int32_t *tir_fused_input_reads(const struct tir_fused *f, const int32_t **ids)
{
	const struct vm *vm = (const struct vm *)f;
	*ids = vm->small ? vm->iid : NULL;
	return vm->small ? vm->iedge : NULL;
}

size_t tir_fused_bytes(const struct tir_fused *f)
{
	const struct vm *vm = (const struct vm *)f;
	return vm->small ? vm->sbytes : sizeof *vm + vm->memcap;
}

int tir_fused_range(struct tir_fused *f, int64_t i0, int64_t n)
{
	struct vm *vm = (struct vm *)f;
	if (vm->small) {
		run_small(vm, i0, n);
		return 0;
	}
	TIR_ASSERT(vm->cols == 1 && !vm->done);
	run_range(vm, i0, i0 + n);
	return __atomic_load_n(&vm->oom, __ATOMIC_RELAXED) ? -TIR_ENOMEM : 0;
}

void tir_fused_sources(const struct tir_fused *f, int *direct, int *one, int *copied)
{
	const struct vm *vm = (const struct vm *)f;
	*direct = *one = *copied = 0;
	for (int s = 0; !vm->small && s < vm->nsrc; s++) {
		const struct src *c = &vm->src[s];
		if (c->direct)
			++*direct;
		else if (c->bcast)
			++*one;
		else
			++*copied;
	}
}

void tir_fused_free(struct tir_fused *f)
{
	vm_free((struct vm *)f);
}

bool tir_fused_keep(struct tir_fused *f)
{
	struct vm *vm = (struct vm *)f;
	const struct tir_group *g = vm->g;
	/* made of its inputs' layouts alone: each read in place, as given
	 * (no conversion, no value made before the blocks, no generator), and
	 * every source a view of an input's own buffer */
	if (vm->kept)
		return true;
	if (vm->small) /* (its inputs are read as they are bound) */
		return vm->kept = true;
	if (vm->done || vm->ngen || g->head || vm->nvals != g->nin)
		return false;
	for (int k = 0; k < g->nin; k++)
		if (!vm->borrowed[k] || vm->vals[k].buf == &vm->cbuf[k])
			return false;
	for (int s = 0; s < vm->nsrc; s++)
		if (vm->src[s].v.buf != vm->vals[vm->src[s].val].buf || vm->src[s].gen)
			return false;
	/* the views give back the references they took: the caller holds the
	 * inputs through each run */
	for (int s = 0; s < vm->nsrc; s++)
		__atomic_sub_fetch(&vm->src[s].v.buf->refs, 1, __ATOMIC_ACQ_REL);
	vm->kept = true;
	return true;
}

static bool rebind_any(struct tir_fused *f, const struct tir_tensor *in, const struct tir_tensor *const *inp,
		       struct tir_tensor *out)
{
	struct vm *vm = (struct vm *)f;
	const struct tir_group *g = vm->g;
	TIR_ASSERT(vm->kept);
	if (vm->small) {
		for (int k = 0; k < g->nin; k++)
			if (!small_bind(vm, k, in_at(in, inp, k)))
				return false;
		vm->out = tir_tensor_data(out);
		return true;
	}
	for (int k = 0; k < g->nin; k++) {
		const struct tir_tensor *a = in_at(in, inp, k), *b = &vm->vals[k];
		if (!a->buf || a->dtype != b->dtype || a->rank != b->rank || a->offset != b->offset ||
		    memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) ||
		    memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->rank))
			return false;
	}
	for (int k = 0; k < g->nin; k++)
		vm->vals[k].buf = in_at(in, inp, k)->buf;
	for (int s = 0; s < vm->nsrc; s++)
		vm->src[s].v.buf = vm->vals[vm->src[s].val].buf;
	vm->out = tir_tensor_data(out);
	vm->oom = 0;
	return true;
}

bool tir_fused_rebind(struct tir_fused *f, const struct tir_tensor *in, struct tir_tensor *out)
{
	return rebind_any(f, in, NULL, out);
}

bool tir_fused_rebind_at(struct tir_fused *f, const struct tir_tensor *const *in, struct tir_tensor *out)
{
	return rebind_any(f, NULL, in, out);
}

int tir_fused_run(struct tir_fused *f, struct tir_err *err)
{
	struct vm *vm = (struct vm *)f;
	if (vm->small) {
		run_small(vm, 0, vm->numel);
		return 0;
	}
	int64_t nt = vm->done || vm->rows == 0 || run_pieces(vm) ? 0 : (vm->rows + vm->task_rows - 1) / vm->task_rows;
	if (!vm->done && vm->info.leading) {
		nt = 0;
		tir_pool_run_shares((vm->cols + vm->chunk - 1) / vm->chunk, run_cols, vm);
	}
	if (nt > 1)
		tir_pool_run_shares(nt, run_task, vm);
	else if (nt == 1)
		run_task(vm, 0); /* one task: no hand-over to the pool */
	if (vm->oom)
		return tir_errf(err, TIR_ENOMEM, &vm->g->root->loc, "out of memory for a fused kernel's registers");
	return 0;
}

int tir_fused_eval(const struct tir_group *g, const struct tir_tensor *in, struct tir_tensor *out,
		   struct tir_err *err)
{
	struct tir_fused *f = tir_fused_prepare(g, in, out, err);
	if (!f)
		return -err->code;
	int rc = tir_fused_run(f, err);
	tir_fused_free(f);
	return rc;
}

static bool overwrites(const struct tir_group *g, const struct tir_group_info *info, const struct tir_node *x,
		       const struct tir_node *r);

bool tir_fused_can_overwrite(const struct tir_group *g, int k)
{
	struct tir_group_info own;
	const struct tir_node *culprit, *x = g->inputs[k], *r = g->root;
	if (g->head)
		return false;
	void *om = NULL;
	if (!g->info) {
		if (!(om = malloc(tir_group_info_bytes(g->n))))
			return false;
		tir_group_info_place(&own, om, g->n);
		if (tir_group_analyze(g, &own, &culprit)) {
			free(om);
			return false;
		}
	}
	bool ok = overwrites(g, g->info ? g->info : &own, x, r);
	free(om);
	return ok;
}

/* tir_fused_can_overwrite's check, g analyzed into info. */
static bool overwrites(const struct tir_group *g, const struct tir_group_info *info, const struct tir_node *x,
		       const struct tir_node *r)
{
	if (info->cls[g->n - 1] != TIR_FC_FULL ||
	    x->type.dtype != r->type.dtype || x->type.rank != r->type.rank ||
	    memcmp(x->type.shape, r->type.shape, sizeof(int64_t) * (size_t)r->type.rank))
		return false;
	for (int j = 0; j < g->n; j++) {
		const struct tir_node *m = g->nodes[j];
		bool reads = false;
		for (int q = 0; q < m->nin; q++)
			reads |= m->in[q] == x;
		/* (a view made once reads it during the blocks, anywhere) */
		if (reads && tir_op(m->op)->kind != TIR_KIND_REDUCE && !(info->cls[j] == TIR_FC_FULL && info->via[j] == -1))
			return false;
	}
	return true;
}
