/*
 * iter.h — kernel internals shared by lib/exec files (not for other
 * subsystems): the N-d strided iterator, the float-to-integer rule, and the
 * counter-based RNG's primitives (so a fused or threaded kernel can make
 * rand/randn values for any index range).
 *
 * The iterator walks a shape in row-major order for up to TIR_ITER_MAX
 * operands at once and hands out "runs" along the innermost axis, so a
 * kernel's inner loop is a plain 1-D loop.  Axes of length 1 are dropped and
 * axes contiguous for every operand are merged, so all-contiguous operands
 * (or stride-0 scalars) come out as one flat run.
 *
 * Use:
 *     struct tir_iter it;
 *     const int64_t *st[2] = {out->strides, x->strides};
 *     if (tir_iter_init(&it, out->rank, out->shape, 2, st))
 *             do {
 *                     ... it.inner elements: operand k at it.off[k],
 *                         stepping by it.istride[k] ...
 *             } while (tir_iter_next(&it));
 */
#ifndef TIR_EXEC_ITER_H
#define TIR_EXEC_ITER_H

#include "exec.h"

#define TIR_ITER_MAX 4

/* Float to integer as tir defines it everywhere (cast, fill, rand to int):
 * truncate toward zero; NaN, infinities and out-of-range values give the
 * type's minimum, as x86's cvtt* instructions (so NumPy on x86) do.  Decided
 * before the C conversion, which would otherwise be undefined. */
static inline int32_t tir_f2i32(double v)
{
	if (v > -2147483649.0 && v < 2147483648.0)
		return (int32_t)v;
	return INT32_MIN;
}

static inline int64_t tir_f2i64(double v)
{
	if (v >= -0x1p63 && v < 0x1p63)
		return (int64_t)v;
	return INT64_MIN;
}

struct tir_iter {
	int n;                                   /* operands */
	int rank;                                /* after dropping/merging; >= 1 */
	int64_t shape[TIR_MAX_RANK];
	int64_t strides[TIR_ITER_MAX][TIR_MAX_RANK];
	int64_t idx[TIR_MAX_RANK];               /* position of the outer axes */
	int64_t off[TIR_ITER_MAX];               /* elements, start of the current run */
	int64_t inner;                           /* length of every run */
	int64_t istride[TIR_ITER_MAX];           /* step of each operand within a run */
	int64_t runs;                            /* how many runs in all */
};

/* rng.c: raw Philox4x32-10 (ctr is replaced by the output block), and
 * the rand (normal false) / randn values of flat elements start ..
 * start + n - 1 written contiguously to p in dtype dt: the same values
 * tir_k_rand gives those elements, whatever the split. */
void tir_philox4x32_10(uint32_t ctr[4], const uint32_t key[2]);
void tir_rand_range(void *p, enum tir_dtype dt, int64_t start, int64_t n, uint64_t seed,
		    bool normal);

/* Set up over shape[rank] with n operands' element strides (each of length
 * rank).  Returns false when there is nothing to visit (an axis is 0). */
static inline bool tir_iter_init(struct tir_iter *it, int rank, const int64_t *shape,
				 int n, const int64_t *const *strides)
{
	TIR_ASSERT(n >= 1 && n <= TIR_ITER_MAX && rank >= 0 && rank <= TIR_MAX_RANK);
	it->n = n;
	it->rank = 0;
	for (int d = 0; d < rank; d++) {
		if (shape[d] == 0)
			return false;
		if (shape[d] == 1)
			continue;
		int r = it->rank;
		bool merge = r > 0;
		for (int k = 0; k < n && merge; k++)
			merge = strides[k][d] * shape[d] == it->strides[k][r - 1];
		if (merge) {
			it->shape[r - 1] *= shape[d];
			for (int k = 0; k < n; k++)
				it->strides[k][r - 1] = strides[k][d];
			continue;
		}
		it->shape[r] = shape[d];
		for (int k = 0; k < n; k++)
			it->strides[k][r] = strides[k][d];
		it->rank++;
	}
	if (it->rank == 0) {        /* a single element */
		it->rank = 1;
		it->shape[0] = 1;
		for (int k = 0; k < n; k++)
			it->strides[k][0] = 0;
	}
	int last = it->rank - 1;
	it->inner = it->shape[last];
	it->runs = 1;
	for (int d = 0; d < last; d++) {
		it->idx[d] = 0;
		it->runs *= it->shape[d];
	}
	for (int k = 0; k < n; k++) {
		it->off[k] = 0;
		it->istride[k] = it->strides[k][last];
	}
	return true;
}

/* Advance to the next run; false after the last one. */
static inline bool tir_iter_next(struct tir_iter *it)
{
	for (int d = it->rank - 2; d >= 0; d--) {
		if (++it->idx[d] < it->shape[d]) {
			for (int k = 0; k < it->n; k++)
				it->off[k] += it->strides[k][d];
			return true;
		}
		it->idx[d] = 0;
		for (int k = 0; k < it->n; k++)
			it->off[k] -= it->strides[k][d] * (it->shape[d] - 1);
	}
	return false;
}

/* Jump to run number r (0 <= r < it->runs), e.g. to split work by runs. */
static inline void tir_iter_seek(struct tir_iter *it, int64_t r)
{
	for (int k = 0; k < it->n; k++)
		it->off[k] = 0;
	for (int d = it->rank - 2; d >= 0; d--) {
		it->idx[d] = r % it->shape[d];
		r /= it->shape[d];
		for (int k = 0; k < it->n; k++)
			it->off[k] += it->idx[d] * it->strides[k][d];
	}
}

#endif
