/*
 * axis.c — the ops along axes that have no fused or threaded path (issue
 * 25's NumPy ops): any, all, std and var with ddof, logsumexp, and the
 * shared layout the scans and sorts use (scan.c, sort.c): the axes an op
 * works along moved last into a contiguous copy, so that a kernel sees
 * rows x cols; its result is moved back the same way.  One thread, in
 * element order: the same bytes at any thread count.
 */
#include "exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* perm: the axes not in mask (in order), then those in mask (in order) */
static void mask_last(int rank, const bool *mask, int *perm, int64_t *nmask)
{
	int k = 0;
	for (int i = 0; i < rank; i++)
		if (!mask[i])
			perm[k++] = i;
	*nmask = k;
	for (int i = 0; i < rank; i++)
		if (mask[i])
			perm[k++] = i;
}

int tir_axes_last(const struct tir_tensor *x, const bool *mask, enum tir_dtype dt, struct tir_tensor *rows,
		  int64_t *nrows, int64_t *ncols, struct tir_err *err)
{
	int perm[TIR_MAX_RANK];
	int64_t nkeep;
	mask_last(x->rank, mask, perm, &nkeep);
	struct tir_tensor v = {0};
	tir_view_transpose(x, perm, &v);
	*nrows = 1;
	*ncols = 1;
	for (int i = 0; i < x->rank; i++)
		*(i < nkeep ? nrows : ncols) *= v.shape[i];
	int rc = tir_tensor_convert(&v, dt, rows, err);
	tir_tensor_release(&v);
	return rc;
}

int tir_axis_back(const struct tir_tensor *res, int rank, int axis, enum tir_dtype dt, struct tir_tensor *out,
		  struct tir_err *err)
{
	/* res has axis last; its axes i < axis are x's, then x's past axis */
	int perm[TIR_MAX_RANK];
	for (int i = 0, k = 0; i < rank; i++)
		perm[i] = i == axis ? rank - 1 : k++;
	struct tir_tensor v = {0};
	tir_view_transpose(res, perm, &v);
	int rc = tir_tensor_convert(&v, dt, out, err);
	tir_tensor_release(&v);
	return rc;
}

/* ---- reductions of rows ---- */

static void any_all(bool all, enum tir_dtype dt, const void *x, int64_t rows, int64_t cols, uint8_t *o)
{
	for (int64_t r = 0; r < rows; r++) {
		/* all: true until a zero; any: false until a nonzero (NaN is one) */
		bool v = all;
		for (int64_t c = 0; c < cols; c++) {
			int64_t i = r * cols + c;
			bool nz = dt == TIR_DTYPE_F64   ? ((const double *)x)[i] != 0
				  : dt == TIR_DTYPE_I64 ? ((const int64_t *)x)[i] != 0
							: ((const uint8_t *)x)[i] != 0;
			if (nz != all) {
				v = !all;
				break;
			}
		}
		o[r] = v;
	}
}

/* ddof as NumPy: divided by max(count - ddof, 0) (0 gives inf or nan) */
static void moments(const double *x, int64_t rows, int64_t cols, int64_t ddof, bool root, double *o)
{
	double div = cols - ddof > 0 ? (double)(cols - ddof) : 0.0;
	for (int64_t r = 0; r < rows; r++) {
		const double *p = x + r * cols;
		double s = 0;
		for (int64_t c = 0; c < cols; c++)
			s += p[c];
		double m = s / (double)cols, d = 0;
		for (int64_t c = 0; c < cols; c++)
			d += (p[c] - m) * (p[c] - m);
		double v = cols ? d / div : NAN;
		o[r] = root ? sqrt(v) : v;
	}
}

/* log(sum(exp(x))) from the row's maximum: exact for huge values; a row
 * with NaN gives NaN, one with +inf gives inf, an empty one -inf (SciPy's). */
static void logsumexp(const double *x, int64_t rows, int64_t cols, double *o)
{
	for (int64_t r = 0; r < rows; r++) {
		const double *p = x + r * cols;
		double m = -INFINITY;
		bool nan = false;
		for (int64_t c = 0; c < cols; c++) {
			nan |= isnan(p[c]);
			if (p[c] > m)
				m = p[c];
		}
		if (nan || !isfinite(m)) {
			o[r] = nan ? NAN : m;
			continue;
		}
		double s = 0;
		for (int64_t c = 0; c < cols; c++)
			s += exp(p[c] - m);
		o[r] = m + log(s);
	}
}

int tir_k_axes(enum tir_op op, const struct tir_tensor *x, const bool *mask, int64_t ddof, int rank,
	       const int64_t *shape, enum tir_dtype dt, struct tir_tensor *out, struct tir_err *err)
{
	bool logical = op == TIR_OP_ANY || op == TIR_OP_ALL;
	enum tir_dtype wd = TIR_DTYPE_F64;
	if (logical)
		wd = tir_dtype_is_float(x->dtype) ? TIR_DTYPE_F64 : x->dtype == TIR_DTYPE_BOOL ? TIR_DTYPE_BOOL
										   : TIR_DTYPE_I64;
	struct tir_tensor rows = {0}, res = {0};
	int64_t nr, nc;
	int rc = tir_axes_last(x, mask, wd, &rows, &nr, &nc, err);
	if (!rc)
		rc = tir_tensor_alloc(&res, logical ? TIR_DTYPE_BOOL : TIR_DTYPE_F64, 1, &nr, false, err);
	if (!rc) {
		const void *p = tir_tensor_data(&rows);
		void *o = tir_tensor_data(&res);
		if (logical)
			any_all(op == TIR_OP_ALL, wd, p, nr, nc, o);
		else if (op == TIR_OP_LOGSUMEXP)
			logsumexp(p, nr, nc, o);
		else
			moments(p, nr, nc, ddof, op == TIR_OP_STD, o);
		struct tir_tensor v = {0};
		rc = tir_tensor_reshape(&res, rank, shape, &v, err);
		if (!rc)
			rc = tir_tensor_convert(&v, dt, out, err);
		tir_tensor_release(&v);
	}
	tir_tensor_release(&rows);
	tir_tensor_release(&res);
	return rc;
}

/* ---- stack ---- */

int tir_k_stack(const struct tir_tensor *const *xs, int n, int axis, struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_tensor **vs = calloc((size_t)n, sizeof *vs);
	struct tir_tensor *v = calloc((size_t)n, sizeof *v);
	int rc = 0;
	if (!vs || !v) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	/* each operand a view with a new axis of size 1 at axis */
	for (int k = 0; k < n; k++) {
		tir_tensor_ref(&v[k], xs[k]);
		int r = xs[k]->rank;
		memmove(v[k].shape + axis + 1, v[k].shape + axis, sizeof(int64_t) * (size_t)(r - axis));
		memmove(v[k].strides + axis + 1, v[k].strides + axis, sizeof(int64_t) * (size_t)(r - axis));
		v[k].shape[axis] = 1;
		v[k].strides[axis] = 0;
		v[k].rank = r + 1;
		vs[k] = &v[k];
	}
	rc = tir_k_concat(vs, n, axis, out, err);
out:
	for (int k = 0; v && k < n; k++)
		tir_tensor_release(&v[k]);
	free(v);
	free(vs);
	return rc;
}
