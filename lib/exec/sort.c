/*
 * sort.c — sort and argsort along one axis: a stable merge sort of each
 * row's indices (NumPy's kind="stable"), NaN after every number as NumPy
 * places it; -0.0 and 0.0 are equal and keep their order.  Floats compare
 * in f64, integers and bool in i64 (exact).
 */
#include "exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* whether a goes before b: NaN last */
static inline bool before_f(double a, double b)
{
	return a < b || (isnan(b) && !isnan(a));
}

/* indices idx[0..n) sorted stably by key, tmp as scratch */
#define MERGE_SORT(NAME, T, LESS)                                            \
	static void NAME(const T *key, int64_t *idx, int64_t *tmp, int64_t n) \
	{                                                                    \
		for (int64_t w = 1; w < n; w *= 2) {                         \
			for (int64_t lo = 0; lo < n; lo += 2 * w) {          \
				int64_t mid = lo + w < n ? lo + w : n;       \
				int64_t hi = lo + 2 * w < n ? lo + 2 * w : n; \
				int64_t i = lo, j = mid, k = lo;             \
				while (i < mid && j < hi)                    \
					tmp[k++] = LESS(key[idx[j]], key[idx[i]]) ? idx[j++] : idx[i++]; \
				while (i < mid)                              \
					tmp[k++] = idx[i++];                 \
				while (j < hi)                               \
					tmp[k++] = idx[j++];                 \
			}                                                    \
			memcpy(idx, tmp, sizeof *idx * (size_t)n);           \
		}                                                            \
	}

#define LESS_I(a, b) ((a) < (b))
MERGE_SORT(sort_f64, double, before_f)
MERGE_SORT(sort_i64, int64_t, LESS_I)

int tir_k_sort(bool arg, const struct tir_tensor *x, int axis, enum tir_dtype dt, struct tir_tensor *out,
	       struct tir_err *err)
{
	bool fl = tir_dtype_is_float(x->dtype);
	enum tir_dtype wd = fl ? TIR_DTYPE_F64 : TIR_DTYPE_I64;
	bool mask[TIR_MAX_RANK] = {0};
	mask[axis] = true;
	struct tir_tensor rows = {0}, res = {0};
	int64_t nr, nc;
	int64_t *idx = NULL, *tmp = NULL;
	int rc = tir_axes_last(x, mask, wd, &rows, &nr, &nc, err);
	if (!rc)
		rc = tir_tensor_alloc(&res, arg ? TIR_DTYPE_I64 : wd, rows.rank, rows.shape, false, err);
	if (!rc && nr && nc) {
		idx = malloc(sizeof *idx * (size_t)nc);
		tmp = malloc(sizeof *tmp * (size_t)nc);
		if (!idx || !tmp)
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory for %lld indices", (long long)nc);
	}
	for (int64_t r = 0; !rc && nc && r < nr; r++) {
		for (int64_t c = 0; c < nc; c++)
			idx[c] = c;
		const char *row = (const char *)tir_tensor_data(&rows) + r * nc * 8;
		if (fl)
			sort_f64((const double *)row, idx, tmp, nc);
		else
			sort_i64((const int64_t *)row, idx, tmp, nc);
		char *o = (char *)tir_tensor_data(&res) + r * nc * 8;
		for (int64_t c = 0; c < nc; c++) {
			if (arg)
				((int64_t *)o)[c] = idx[c];
			else
				memcpy(o + c * 8, row + idx[c] * 8, 8);
		}
	}
	if (!rc)
		rc = tir_axis_back(&res, x->rank, axis, dt, out, err);
	free(idx);
	free(tmp);
	tir_tensor_release(&rows);
	tir_tensor_release(&res);
	return rc;
}

/* topk: whether a goes before b when the largest come first: NaN first,
 * as larger than every number (PyTorch's topk) */
static inline bool after_f(double a, double b)
{
	return a > b || (isnan(a) && !isnan(b));
}
#define MORE_I(a, b) ((a) > (b))
MERGE_SORT(sort_f64_desc, double, after_f)
MERGE_SORT(sort_i64_desc, int64_t, MORE_I)

int tir_k_topk(const struct tir_tensor *x, int axis, int64_t k, bool largest, struct tir_tensor *values,
	       struct tir_tensor *indices, struct tir_err *err)
{
	bool fl = tir_dtype_is_float(x->dtype);
	enum tir_dtype wd = fl ? TIR_DTYPE_F64 : TIR_DTYPE_I64;
	bool mask[TIR_MAX_RANK] = {0};
	mask[axis] = true;
	struct tir_tensor rows = {0}, rv = {0}, ri = {0}, bv = {0}, bi = {0};
	int64_t nr, nc;
	int64_t *idx = NULL, *tmp = NULL;
	int rc = tir_axes_last(x, mask, wd, &rows, &nr, &nc, err);
	int64_t shape[TIR_MAX_RANK];
	memcpy(shape, rows.shape, sizeof shape);
	shape[x->rank - 1] = k;
	if (!rc)
		rc = tir_tensor_alloc(&rv, wd, x->rank, shape, false, err);
	if (!rc)
		rc = tir_tensor_alloc(&ri, TIR_DTYPE_I64, x->rank, shape, false, err);
	if (!rc && nr && nc) {
		idx = malloc(sizeof *idx * (size_t)nc);
		tmp = malloc(sizeof *tmp * (size_t)nc);
		if (!idx || !tmp)
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory for %lld indices", (long long)nc);
	}
	/* a stable sort of each row: ties keep the lower index first (ONNX) */
	for (int64_t r = 0; !rc && k && r < nr; r++) {
		for (int64_t c = 0; c < nc; c++)
			idx[c] = c;
		const char *row = (const char *)tir_tensor_data(&rows) + r * nc * 8;
		if (fl)
			(largest ? sort_f64_desc : sort_f64)((const double *)row, idx, tmp, nc);
		else
			(largest ? sort_i64_desc : sort_i64)((const int64_t *)row, idx, tmp, nc);
		char *ov = (char *)tir_tensor_data(&rv) + r * k * 8;
		int64_t *oi = (int64_t *)tir_tensor_data(&ri) + r * k;
		for (int64_t c = 0; c < k; c++) {
			oi[c] = idx[c];
			memcpy(ov + c * 8, row + idx[c] * 8, 8);
		}
	}
	if (!rc)
		rc = tir_axis_back(&rv, x->rank, axis, values->dtype, &bv, err);
	if (!rc)
		rc = tir_axis_back(&ri, x->rank, axis, TIR_DTYPE_I64, &bi, err);
	if (!rc)
		rc = tir_k_copy(&bv, values);
	if (!rc)
		rc = tir_k_copy(&bi, indices);
	free(idx);
	free(tmp);
	tir_tensor_release(&rows);
	tir_tensor_release(&rv);
	tir_tensor_release(&ri);
	tir_tensor_release(&bv);
	tir_tensor_release(&bi);
	return rc;
}
