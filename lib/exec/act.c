/*
 * act.c — the activations with parameters (PyTorch's names and defaults:
 * elu, celu, leaky_relu, hardsigmoid, prelu) and two movements of ONNX's
 * list (tile, triu/tril).  Each makes out (empty on entry) as a contiguous
 * copy of x in out's dtype and works on it in place; element by element,
 * one thread.
 */
#include "exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ACT_LOOP(T, EXPM1)                                                   \
	do {                                                                 \
		T *o = tir_tensor_data(out);                                 \
		const T *s = sl ? tir_tensor_data(&sc) : NULL;               \
		T al = (T)a, be = (T)b;                                      \
		for (int64_t i = 0; i < n; i++) {                            \
			T v = o[i];                                          \
			switch (op) {                                        \
			case TIR_OP_ELU: o[i] = v > 0 ? v : al * EXPM1(v); break; \
			case TIR_OP_CELU:                                    \
				o[i] = v > 0 ? v : al * EXPM1(v / al);       \
				break;                                       \
			case TIR_OP_LEAKY_RELU: o[i] = v >= 0 ? v : v * al; break; \
			case TIR_OP_HARDSIGMOID: {                           \
				T h = al * v + be;                           \
				o[i] = h != h ? h : h < 0 ? 0 : h > 1 ? 1 : h; \
				break;                                       \
			}                                                    \
			case TIR_OP_PRELU: o[i] = v >= 0 ? v : v * s[i]; break; \
			default: break;                                      \
			}                                                    \
		}                                                            \
	} while (0)

int tir_k_act(enum tir_op op, const struct tir_tensor *x, const struct tir_tensor *sl, double a, double b,
	      enum tir_dtype dt, struct tir_tensor *out, struct tir_err *err)
{
	if (dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "no kernel for %s", tir_dtype_name(dt));
	struct tir_tensor sc = {0};
	int rc = tir_tensor_convert(x, dt, out, err);
	if (!rc && sl) {
		struct tir_tensor v = {0};
		tir_view_broadcast(sl, out->rank, out->shape, &v);
		rc = tir_tensor_convert(&v, dt, &sc, err);
		tir_tensor_release(&v);
	}
	int64_t n = tir_tensor_numel(out);
	if (!rc && n) {
		if (dt == TIR_DTYPE_F32)
			ACT_LOOP(float, expm1f);
		else
			ACT_LOOP(double, expm1);
	}
	tir_tensor_release(&sc);
	return rc;
}

int tir_k_tile(const struct tir_tensor *x, int rank, const int64_t *shape, struct tir_tensor *out,
	       struct tir_err *err)
{
	/* x with 1s in front up to rank, then each axis repeated by concat */
	struct tir_tensor cur = {0};
	int64_t s[TIR_MAX_RANK] = {0};
	int k = rank - x->rank;
	for (int i = 0; i < rank; i++)
		s[i] = i < k ? 1 : x->shape[i - k];
	int rc = tir_tensor_reshape(x, rank, s, &cur, err);
	for (int i = 0; !rc && i < rank; i++) {
		if (shape[i] == s[i] || s[i] == 0)
			continue;
		int64_t reps = shape[i] / s[i];
		struct tir_tensor next = {0};
		if (reps == 0) {
			int64_t z[TIR_MAX_RANK];
			memcpy(z, shape, sizeof z[0] * (size_t)rank);
			rc = tir_tensor_alloc(&next, x->dtype, rank, z, true, err);
		} else {
			const struct tir_tensor **xs = calloc((size_t)reps, sizeof *xs);
			int64_t ns[TIR_MAX_RANK];
			memcpy(ns, cur.shape, sizeof ns[0] * (size_t)rank);
			ns[i] = shape[i];
			if (!xs)
				rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			for (int64_t r = 0; xs && r < reps; r++)
				xs[r] = &cur;
			if (!rc)
				rc = tir_tensor_alloc(&next, x->dtype, rank, ns, false, err);
			if (!rc)
				rc = tir_k_concat(xs, (int)reps, i, &next, err);
			free(xs);
		}
		tir_tensor_release(&cur);
		cur = next;
		for (int j = 0; j < rank; j++)
			s[j] = cur.shape[j];
	}
	if (!rc)
		rc = tir_tensor_convert(&cur, x->dtype, out, err);
	tir_tensor_release(&cur);
	return rc;
}

int tir_k_trilu(bool upper, const struct tir_tensor *x, int64_t k, struct tir_tensor *out, struct tir_err *err)
{
	int rc = tir_tensor_convert(x, x->dtype, out, err);
	if (rc)
		return rc;
	int64_t rows = out->shape[out->rank - 2], cols = out->shape[out->rank - 1];
	int64_t mats = rows && cols ? tir_tensor_numel(out) / (rows * cols) : 0;
	size_t es = tir_dtype_size(out->dtype);
	char *p = tir_tensor_data(out);
	for (int64_t m = 0; m < mats; m++)
		for (int64_t i = 0; i < rows; i++) {
			/* triu keeps j - i >= k, tril j - i <= k: zero the rest */
			int64_t lo = upper ? 0 : i + k + 1, hi = upper ? i + k : cols;
			lo = lo < 0 ? 0 : lo > cols ? cols : lo;
			hi = hi < 0 ? 0 : hi > cols ? cols : hi;
			if (hi > lo)
				memset(p + ((m * rows + i) * cols + lo) * (int64_t)es, 0, (size_t)(hi - lo) * es);
		}
	return 0;
}
