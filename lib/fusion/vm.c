/*
 * vm.c — runs a fused elementwise group as one pass over memory: the output
 * is cut into tasks of a fixed size (independent of the thread count, so
 * results never depend on it), each task into blocks that fit in L1, and
 * every node of the group computes its block into a register with the
 * same vmath functions the reference kernels use.  Interior values live
 * only in these registers.  Inputs are read in place when contiguous,
 * broadcast once when scalar, gathered per block otherwise.
 *
 * Each block is computed by the reference kernels themselves (on 1-D views
 * of the registers), so a fused result is bitwise the unfused one.
 */
#include "fusion.h"
#include "exec/vmath.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BLK 256                /* elements per register */
#define TASK ((int64_t)BLK * 64) /* elements per task */

enum { IN_CONTIG, IN_SCALAR, IN_STRIDED };

struct vm {
	const struct tir_group *g;
	int64_t blk;                /* register length: BLK, or less for a small result */
	enum tir_dtype dt;
	size_t esz;
	int rank;
	const int64_t *shape;
	struct tir_tensor *in;      /* converted, broadcast to the root's shape */
	int *in_kind;
	int (*src)[3];              /* per node, per operand: >= 0 a node, < 0 ~input */
	struct vm_fn {              /* per node: vmath's function for it, if any */
		tir_vmath1_fn f1;
		tir_vmath2_fn f2;
	} *fn;
	char *out;
	int64_t numel;
	int oom;                    /* a task could not get its registers */
};

/* Elements [i0, i0 + n) (row-major over vm->shape) of view v: a pointer
 * into v itself when they are one contiguous run, else copied to dst run
 * by run along the last axis (memcpy, fill or strided loop). */
static const char *gather(const struct vm *vm, const struct tir_tensor *v, int64_t i0, int64_t n,
			  char *dst)
{
	int64_t idx[TIR_MAX_RANK];
	int64_t rem = i0, off = v->offset;
	int last = vm->rank - 1;
	for (int d = last; d >= 0; d--) {
		idx[d] = rem % vm->shape[d];
		rem /= vm->shape[d];
		off += idx[d] * v->strides[d];
	}
	const char *base = v->buf->data;
	size_t es = vm->esz;
	int64_t sl = v->strides[last];
	if (sl == 1 && idx[last] + n <= vm->shape[last])
		return base + off * (int64_t)es;
	int64_t k = 0;
	while (k < n) {
		int64_t run = vm->shape[last] - idx[last];
		if (run > n - k)
			run = n - k;
		char *d = dst + (size_t)k * es;
		const char *src = base + off * (int64_t)es;
		if (sl == 1) {
			memcpy(d, src, (size_t)run * es);
		} else if (sl == 0) {
			for (int64_t e = 0; e < run; e++)
				memcpy(d + (size_t)e * es, src, es);
		} else {
			for (int64_t e = 0; e < run; e++)
				memcpy(d + (size_t)e * es, src + e * sl * (int64_t)es, es);
		}
		k += run;
		/* to the start of the next row, carrying into outer axes */
		off += run * sl;
		idx[last] += run;
		for (int dd = last; dd > 0 && idx[dd] == vm->shape[dd]; dd--) {
			off -= v->strides[dd] * vm->shape[dd];
			idx[dd] = 0;
			off += v->strides[dd - 1];
			idx[dd - 1]++;
		}
	}
	return dst;
}

/* This thread's registers, kept between calls (an epilogue calls once per
 * row of a block); grown as needed, freed when the thread ends. */
struct regs {
	char *p;
	size_t cap;
};

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
		return r->p;
	char *p = aligned_alloc(64, bytes);
	if (!p)
		return NULL;
	free(r->p);
	r->p = p;
	r->cap = bytes;
	return p;
}

/* Elements [lo, hi) of the root. */
static void run_range(struct vm *vm, int64_t lo, int64_t hi)
{
	const struct tir_group *g = vm->g;
	size_t regbytes = (size_t)vm->blk * vm->esz;
	size_t total = (regbytes * (size_t)(g->n + g->nin) + 63) & ~(size_t)63;
	char *regs = thread_regs(total);
	if (!regs) {
		__atomic_store_n(&vm->oom, 1, __ATOMIC_RELAXED);
		return;
	}
	char *node_reg = regs, *in_reg = regs + regbytes * (size_t)g->n;
	/* scalars are broadcast into their register once per task */
	for (int k = 0; k < g->nin; k++) {
		if (vm->in_kind[k] != IN_SCALAR)
			continue;
		const char *v = (const char *)vm->in[k].buf->data + vm->in[k].offset * (int64_t)vm->esz;
		char *r = in_reg + regbytes * (size_t)k;
		/* one element, then the filled part doubled */
		memcpy(r, v, vm->esz);
		for (size_t f = vm->esz; f < regbytes; f *= 2)
			memcpy(r + f, r, f < regbytes - f ? f : regbytes - f);
	}
	for (int64_t b0 = lo; b0 < hi; b0 += vm->blk) {
		int64_t len = hi - b0 < vm->blk ? hi - b0 : vm->blk;
		const char *inp[64];
		for (int k = 0; k < g->nin; k++) {
			char *r = in_reg + regbytes * (size_t)k;
			if (vm->in_kind[k] == IN_CONTIG)
				inp[k] = (const char *)vm->in[k].buf->data + (vm->in[k].offset + b0) * (int64_t)vm->esz;
			else if (vm->in_kind[k] == IN_SCALAR)
				inp[k] = r;
			else
				inp[k] = gather(vm, &vm->in[k], b0, len, r);
		}
		for (int j = 0; j < g->n; j++) {
			const struct tir_node *n = g->nodes[j];
			char *dst = j == g->n - 1 ? vm->out + b0 * (int64_t)vm->esz : node_reg + regbytes * (size_t)j;
			const void *a[3] = {NULL, NULL, NULL};
			for (int k = 0; k < n->nin; k++) {
				int s = vm->src[j][k];
				a[k] = s >= 0 ? node_reg + regbytes * (size_t)s : inp[~s];
			}
			struct tir_err e;   /* written only on failure */
			/* float ops on floats cannot fail */
			if (vm->fn[j].f1)
				vm->fn[j].f1(dst, a[0], len);
			else if (vm->fn[j].f2)
				vm->fn[j].f2(dst, a[0], a[1], len);
			else if (n->nin == 1)
				TIR_ASSERT(tir_k_unary_run(n->op, vm->dt, dst, a[0], len, &e) == 0);
			else
				TIR_ASSERT(tir_k_binary_run(n->op, vm->dt, dst, a[0], a[1], len, &e) == 0);
		}
	}
}

static void run_task(void *ctx, int64_t t)
{
	struct vm *vm = ctx;
	int64_t lo = t * TASK, hi = lo + TASK < vm->numel ? lo + TASK : vm->numel;
	run_range(vm, lo, hi);
}

static void vm_free(struct vm *vm)
{
	if (!vm)
		return;
	for (int k = 0; vm->in && k < vm->g->nin; k++)
		tir_tensor_release(&vm->in[k]);
	free(vm->in);
	free(vm->in_kind);
	free(vm->src);
	free(vm->fn);
	free(vm);
}

struct tir_fused *tir_fused_prepare(const struct tir_group *g, const struct tir_tensor *in,
				    struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_node *root = g->root;
	struct vm *vm = calloc(1, sizeof *vm);
	if (!vm) {
		tir_errf(err, TIR_ENOMEM, &root->loc, "out of memory");
		return NULL;
	}
	*vm = (struct vm){.g = g, .dt = (enum tir_dtype)root->type.dtype, .rank = root->type.rank,
			  .shape = root->type.shape};
	vm->esz = tir_dtype_size(vm->dt);
	vm->numel = tir_type_numel(&root->type);
	TIR_ASSERT(g->nin <= 64); /* the fuser keeps kernels within TIR_FUSE_MAX_INPUTS */
	vm->blk = vm->numel < BLK ? (vm->numel ? vm->numel : 1) : BLK;
	int rc = 0;
	vm->in = calloc((size_t)g->nin + 1, sizeof *vm->in);
	vm->in_kind = calloc((size_t)g->nin + 1, sizeof *vm->in_kind);
	vm->src = calloc((size_t)g->n, sizeof *vm->src);
	vm->fn = calloc((size_t)g->n, sizeof *vm->fn);
	if (!vm->in || !vm->in_kind || !vm->src || !vm->fn) {
		rc = tir_errf(err, TIR_ENOMEM, &root->loc, "out of memory");
		goto out;
	}
	for (int k = 0; k < g->nin && !rc; k++) {
		struct tir_tensor c = {0};
		if (in[k].dtype == vm->dt)
			tir_tensor_ref(&c, &in[k]);
		else
			rc = tir_tensor_convert(&in[k], vm->dt, &c, err);
		if (rc)
			break;
		tir_view_broadcast(&c, vm->rank, vm->shape, &vm->in[k]);
		tir_tensor_release(&c);
		bool scalar = true;
		for (int d = 0; d < vm->rank; d++)
			if (vm->in[k].strides[d] != 0 && vm->shape[d] != 1)
				scalar = false;
		vm->in_kind[k] = scalar ? IN_SCALAR : tir_tensor_is_contiguous(&vm->in[k]) ? IN_CONTIG : IN_STRIDED;
	}
	if (rc)
		goto out;
	/* operands by position: earlier nodes of the group, else inputs */
	for (int j = 0; j < g->n; j++) {
		const struct tir_node *n = g->nodes[j];
		for (int k = 0; k < n->nin; k++) {
			int s = 0;
			bool found = false;
			for (int m = 0; m < j && !found; m++)
				if (g->nodes[m] == n->in[k])
					s = m, found = true;
			for (int m = 0; m < g->nin && !found; m++)
				if (g->inputs[m] == n->in[k])
					s = ~m, found = true;
			TIR_ASSERT(found);
			vm->src[j][k] = s;
		}
		/* looked up once: the blocks then call it directly */
		if (n->nin == 1)
			vm->fn[j].f1 = tir_vmath_unary_fn(n->op, vm->dt);
		else if (n->nin == 2)
			vm->fn[j].f2 = tir_vmath_binary_fn(n->op, vm->dt);
	}
	vm->out = tir_tensor_data(out);
out:
	if (rc) {
		vm_free(vm);
		return NULL;
	}
	return (struct tir_fused *)vm;
}

int tir_fused_range(struct tir_fused *f, int64_t i0, int64_t n)
{
	struct vm *vm = (struct vm *)f;
	run_range(vm, i0, i0 + n);
	return __atomic_load_n(&vm->oom, __ATOMIC_RELAXED) ? -TIR_ENOMEM : 0;
}

void tir_fused_free(struct tir_fused *f)
{
	vm_free((struct vm *)f);
}

int tir_fused_eval(const struct tir_group *g, const struct tir_tensor *in, struct tir_tensor *out,
		   struct tir_err *err)
{
	struct vm *vm = (struct vm *)tir_fused_prepare(g, in, out, err);
	if (!vm)
		return -err->code;
	if (vm->numel > TASK)
		tir_pool_run((vm->numel + TASK - 1) / TASK, run_task, vm);
	else if (vm->numel > 0)
		run_task(vm, 0); /* one task: no hand-over to the pool */
	int rc = 0;
	if (vm->oom)
		rc = tir_errf(err, TIR_ENOMEM, &g->root->loc, "out of memory for a fused kernel's registers");
	vm_free(vm);
	return rc;
}
