/*
 * movement.c — the movement kernels that copy: concat, pad, gather and the
 * plain strided-to-contiguous copy.  The movement ops that are views
 * (transpose, slice, expand, reshape of contiguous data) live in tensor.c.
 * Every copy goes through copy_view, which memcpys contiguous inner runs.
 */
#include "exec.h"
#include "iter.h"

#include <stdlib.h>
#include <string.h>

/* n elements of esz bytes from s (step ss) to d (step ds), in elements. */
static void copy_run(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, size_t esz)
{
	if (ds == 1 && ss == 1) {
		memcpy(d, s, (size_t)n * esz);
		return;
	}
	int64_t e = (int64_t)esz;
	switch (esz) {   /* fixed sizes so the memcpy becomes one move */
	case 1:
		for (int64_t j = 0; j < n; j++)
			d[j * ds] = s[j * ss];
		break;
	case 4:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * 4, s + j * ss * 4, 4);
		break;
	case 8:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * 8, s + j * ss * 8, 8);
		break;
	default:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * e, s + j * ss * e, esz);
	}
}

/* Copy shape[rank] elements from src (strides ss) to dst (strides ds). */
static void copy_view(void *dst, const int64_t *ds, const void *src, const int64_t *ss,
		      int rank, const int64_t *shape, size_t esz)
{
	const int64_t *st[2] = {ds, ss};
	struct tir_iter it;
	if (!tir_iter_init(&it, rank, shape, 2, st))
		return;
	int64_t e = (int64_t)esz;
	do {
		copy_run((char *)dst + it.off[0] * e, it.istride[0],
			 (const char *)src + it.off[1] * e, it.istride[1], it.inner, esz);
	} while (tir_iter_next(&it));
}

/* a * b for sizes >= 0, saturating: a shape with a 0 axis may have
 * others whose product overflows, and then nothing is copied anyway */
static int64_t mul_sat(int64_t a, int64_t b)
{
	if (a == 0 || b == 0)
		return 0;
	return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int64_t numel(const struct tir_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n = mul_sat(n, t->shape[d]);
	return n;
}

/* Row-major strides of shape[rank] into st; returns the element count. */
static int64_t row_major(int rank, const int64_t *shape, int64_t *st)
{
	int64_t n = 1;
	for (int i = rank - 1; i >= 0; i--) {
		st[i] = n;
		n = mul_sat(n, shape[i]);
	}
	return n;
}

/* x (any view) into contiguous out of the same dtype and size; -TIR_ETYPE
 * (no message: a caller bug) when they differ. */
int tir_k_copy(const struct tir_tensor *x, struct tir_tensor *out)
{
	if (x->dtype != out->dtype || numel(x) != numel(out))
		return -TIR_ETYPE;
	int64_t st[TIR_MAX_RANK];
	if (row_major(x->rank, x->shape, st) == 0)
		return 0;
	copy_view(tir_tensor_data(out), st, tir_tensor_data(x), x->strides, x->rank,
		  x->shape, tir_dtype_size(x->dtype));
	return 0;
}

/* xs[0..n) one after another along axis into out; types checked. */
int tir_k_concat(const struct tir_tensor *const *xs, int n, int axis, struct tir_tensor *out,
		 struct tir_err *err)
{
	int r = out->rank;
	if (n < 1 || axis < 0 || axis >= r)
		return tir_errf(err, TIR_ETYPE, NULL,
				"concat: bad arguments (%d inputs, axis %d, rank %d)", n, axis, r);
	int64_t total = 0;
	for (int k = 0; k < n; k++) {
		const struct tir_tensor *x = xs[k];
		bool ok = x->dtype == out->dtype && x->rank == r;
		for (int i = 0; ok && i < r; i++)
			ok = i == axis || x->shape[i] == out->shape[i];
		if (!ok)
			return tir_errf(err, TIR_ETYPE, NULL,
					"concat: input %d does not match the output's type", k);
		total += x->shape[axis];
	}
	if (total != out->shape[axis])
		return tir_errf(err, TIR_ETYPE, NULL,
				"concat: inputs sum to %lld along axis %d, output has %lld",
				(long long)total, axis, (long long)out->shape[axis]);

	int64_t st[TIR_MAX_RANK];
	if (row_major(r, out->shape, st) == 0)
		return 0;
	size_t esz = tir_dtype_size(out->dtype);
	char *dst = tir_tensor_data(out);
	int64_t at = 0;   /* position along axis where input k starts */
	for (int k = 0; k < n; k++) {
		const struct tir_tensor *x = xs[k];
		if (numel(x) > 0)
			copy_view(dst + at * st[axis] * (int64_t)esz, st, tir_tensor_data(x),
				  x->strides, r, x->shape, esz);
		at += x->shape[axis];
	}
	return 0;
}

/* Fill n elements at d with v converted to dt (float to int by tir's rule). */
static void fill_value(void *d, enum tir_dtype dt, int64_t n, double v)
{
	unsigned char pat[8];
	size_t esz = tir_dtype_size(dt);
	switch (dt) {
	case TIR_DTYPE_BOOL: pat[0] = v != 0; break;
	case TIR_DTYPE_I32: { int32_t t = tir_f2i32(v); memcpy(pat, &t, 4); break; }
	case TIR_DTYPE_I64: { int64_t t = tir_f2i64(v); memcpy(pat, &t, 8); break; }
	case TIR_DTYPE_F32: { float t = (float)v; memcpy(pat, &t, 4); break; }
	case TIR_DTYPE_F64: memcpy(pat, &v, 8); break;
	default: TIR_ASSERT(!"fill_value: bad dtype");
	}
	bool zero = true;
	for (size_t i = 0; i < esz; i++)
		zero = zero && pat[i] == 0;
	if (zero) {
		memset(d, 0, (size_t)n * esz);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)d + i * (int64_t)esz, pat, esz);
}

/* out = value everywhere, then x placed pads[2i] in along each axis i. */
int tir_k_pad(const struct tir_tensor *x, const int64_t *pads, double value,
	      struct tir_tensor *out, struct tir_err *err)
{
	int r = x->rank;
	if (x->dtype != out->dtype || out->rank != r)
		return tir_errf(err, TIR_ETYPE, NULL, "pad: output type does not match the input");
	for (int i = 0; i < r; i++) {
		int64_t b = pads[2 * i], a = pads[2 * i + 1], o = out->shape[i];
		if (b < 0 || a < 0 || b > o || a > o - b || x->shape[i] != o - b - a)
			return tir_errf(err, TIR_ETYPE, NULL,
					"pad: axis %d: %lld + [%lld, %lld] does not give %lld", i,
					(long long)x->shape[i], (long long)b, (long long)a,
					(long long)o);
	}
	int64_t st[TIR_MAX_RANK];
	int64_t n = row_major(r, out->shape, st);
	if (n == 0)
		return 0;
	size_t esz = tir_dtype_size(out->dtype);
	char *dst = tir_tensor_data(out);
	fill_value(dst, out->dtype, n, value);
	int64_t at = 0;   /* where x's first element goes */
	for (int i = 0; i < r; i++)
		at += pads[2 * i] * st[i];
	if (numel(x) > 0)
		copy_view(dst + at * (int64_t)esz, st, tir_tensor_data(x), x->strides, r,
			  x->shape, esz);
	return 0;
}

/* The indices as a contiguous int64 array, made non-negative; an index out
 * of [-size, size) is an error naming it.  *out: new, free(). */
static int read_indices(const struct tir_tensor *ind, int axis, int64_t size, int64_t **out,
			struct tir_err *err)
{
	int64_t n = numel(ind);
	int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
	if (!v)
		return tir_errf(err, TIR_ENOMEM, NULL, "gather: out of memory for %lld indices",
				(long long)n);
	*out = v;
	const int64_t *st[1] = {ind->strides};
	struct tir_iter it;
	if (!tir_iter_init(&it, ind->rank, ind->shape, 1, st))
		return 0;
	const char *base = tir_tensor_data(ind);
	bool wide = ind->dtype == TIR_DTYPE_I64;
	int64_t k = 0;
	do {
		for (int64_t j = 0; j < it.inner; j++) {
			int64_t e = it.off[0] + j * it.istride[0];
			int64_t i;
			if (wide) {
				memcpy(&i, base + e * 8, 8);
			} else {
				int32_t t;
				memcpy(&t, base + e * 4, 4);
				i = t;
			}
			int64_t w = i < 0 ? i + size : i;
			if (w < 0 || w >= size) {
				free(v);
				*out = NULL;
				return tir_errf(err, TIR_ERUNTIME, NULL,
						"gather: index %lld is out of range for axis %d of size %lld",
						(long long)i, axis, (long long)size);
			}
			v[k++] = w;
		}
	} while (tir_iter_next(&it));
	return 0;
}

/* numpy.take(x, indices, axis) into out; every index is checked before
 * anything is copied. */
int tir_k_gather(const struct tir_tensor *x, const struct tir_tensor *indices, int axis,
		 struct tir_tensor *out, struct tir_err *err)
{
	int r = x->rank, ir = indices->rank;
	if (axis < 0 || axis >= r)
		return tir_errf(err, TIR_ETYPE, NULL, "gather: axis %d is out of range for rank %d",
				axis, r);
	if (indices->dtype != TIR_DTYPE_I32 && indices->dtype != TIR_DTYPE_I64)
		return tir_errf(err, TIR_ETYPE, NULL, "gather: indices must be i32 or i64, not %s",
				tir_dtype_name(indices->dtype));
	/* out = x.shape[:axis] + indices.shape + x.shape[axis+1:] */
	bool ok = out->dtype == x->dtype && out->rank == r - 1 + ir;
	for (int i = 0; ok && i < out->rank; i++) {
		int64_t want = i < axis ? x->shape[i] : i < axis + ir ? indices->shape[i - axis]
			     : x->shape[i - ir + 1];
		ok = out->shape[i] == want;
	}
	if (!ok)
		return tir_errf(err, TIR_ETYPE, NULL, "gather: output type does not match");

	int64_t *ix = NULL;
	int rc = read_indices(indices, axis, x->shape[axis], &ix, err);
	if (rc)
		return rc;
	int64_t ni = numel(indices);
	int64_t ost[TIR_MAX_RANK];
	if (row_major(out->rank, out->shape, ost) == 0) {
		free(ix);
		return 0;
	}

	/* out[o, k, :] = x[o, ix[k], :] for each position o of the outer axes
	 * and k of the indices; the block ':' is x's axes after axis. */
	int brank = r - axis - 1;
	const int64_t *bshape = x->shape + axis + 1, *bxs = x->strides + axis + 1;
	int64_t bst[TIR_MAX_RANK];
	int64_t inner = row_major(brank, bshape, bst);
	bool bcontig = true;
	for (int i = 0; i < brank; i++)
		bcontig = bcontig && (bshape[i] == 1 || bxs[i] == bst[i]);
	size_t esz = tir_dtype_size(x->dtype);
	int64_t e = (int64_t)esz, step = x->strides[axis];
	const char *src = tir_tensor_data(x);
	char *dst = tir_tensor_data(out);

	const int64_t *st[1] = {x->strides};
	struct tir_iter it;
	int64_t o = 0;
	if (tir_iter_init(&it, axis, x->shape, 1, st)) {
		do {
			for (int64_t j = 0; j < it.inner; j++, o++) {
				const char *row = src + (it.off[0] + j * it.istride[0]) * e;
				char *drow = dst + o * ni * inner * e;
				for (int64_t k = 0; k < ni; k++) {
					const char *s = row + ix[k] * step * e;
					char *d = drow + k * inner * e;
					if (bcontig)
						memcpy(d, s, (size_t)inner * esz);
					else
						copy_view(d, bst, s, bxs, brank, bshape, esz);
				}
			}
		} while (tir_iter_next(&it));
	}
	free(ix);
	return 0;
}
