/*
 * scatter.c — scatter_nd: a copy of x with the slices that index tuples
 * name replaced by (or combined with) the updates, in the updates' order
 * (TensorFlow's tensor_scatter_nd_update, ONNX's ScatterND; with
 * reduction add, NumPy's np.add.at).  Every tuple is checked before
 * anything is written.
 */
#include "exec.h"

#include <stdlib.h>
#include <string.h>

enum red { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

#define COMBINE(T)                                                                                           \
	static void combine_##T(T *d, const T *s, int64_t n, enum red r)                                     \
	{                                                                                                    \
		for (int64_t i = 0; i < n; i++)                                                              \
			switch (r) {                                                                         \
			case RED_NONE: d[i] = s[i]; break;                                                  \
			case RED_ADD: d[i] = (T)(d[i] + s[i]); break;                                       \
			case RED_MUL: d[i] = (T)(d[i] * s[i]); break;                                       \
			case RED_MAX: d[i] = s[i] > d[i] || s[i] != s[i] ? s[i] : d[i]; break;              \
			case RED_MIN: d[i] = s[i] < d[i] || s[i] != s[i] ? s[i] : d[i]; break;              \
			}                                                                                    \
	}
COMBINE(float)
COMBINE(double)
COMBINE(int32_t)
COMBINE(int64_t)

static void combine_bool(unsigned char *d, const unsigned char *s, int64_t n, enum red r)
{
	for (int64_t i = 0; i < n; i++)
		d[i] = r == RED_NONE ? s[i] : r == RED_ADD || r == RED_MAX ? (d[i] | s[i]) : (d[i] & s[i]);
}

static enum red red_of(const char *w)
{
	static const char *const names[] = {"none", "add", "mul", "max", "min"};
	for (int k = 0; k < 5; k++)
		if (!strcmp(w, names[k]))
			return (enum red)k;
	return RED_NONE; /* the checker allows no other */
}

int tir_k_scatter_nd(const struct tir_node *n, const struct tir_tensor *in, struct tir_tensor *out,
		     struct tir_err *err)
{
	const struct tir_tensor *x = &in[0], *ind = &in[1], *up = &in[2];
	enum tir_dtype ot = (enum tir_dtype)n->type.dtype, wd = tir_dtype_wide(ot);
	enum red r = red_of(n->attr[0].s);
	struct tir_tensor ix = {0}, u = {0}, acc = {0};
	int rc = tir_tensor_convert(x, wd, &acc, err);
	if (!rc)
		rc = tir_tensor_convert(ind, TIR_DTYPE_I64, &ix, err);
	if (!rc)
		rc = tir_tensor_convert(up, wd, &u, err);
	if (rc)
		goto out;
	/* indices [..., k]: m tuples, each naming a block of x's last axes */
	int k = (int)ind->shape[ind->rank - 1];
	int64_t m = tir_tensor_numel(ind) / k, block = 1; /* k >= 1: the checker's */
	for (int a = k; a < x->rank; a++)
		block *= x->shape[a];
	int64_t *at = malloc((size_t)(m ? m : 1) * sizeof *at);
	if (!at) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "scatter_nd: out of memory for %lld indices", (long long)m);
		goto out;
	}
	const int64_t *iv = tir_tensor_data(&ix);
	for (int64_t j = 0; j < m; j++) {
		int64_t off = 0;
		for (int a = 0; a < k; a++) {
			int64_t i = iv[j * k + a], w = i < 0 ? i + x->shape[a] : i;
			if (w < 0 || w >= x->shape[a]) {
				free(at);
				rc = tir_errf(err, TIR_ERUNTIME, NULL,
					      "scatter_nd: index %lld is out of range for axis %d of size %lld (tuple %lld)",
					      (long long)i, a, (long long)x->shape[a], (long long)j);
				goto out;
			}
			off = off * x->shape[a] + w;
		}
		at[j] = off * block;
	}
	char *d = tir_tensor_data(&acc);
	const char *s = tir_tensor_data(&u);
	size_t esz = tir_dtype_size(wd);
	for (int64_t j = 0; j < m; j++) {
		char *dj = d + (size_t)at[j] * esz;
		const char *sj = s + (size_t)(j * block) * esz;
		switch (wd) {
		case TIR_DTYPE_F32: combine_float((float *)dj, (const float *)sj, block, r); break;
		case TIR_DTYPE_F64: combine_double((double *)dj, (const double *)sj, block, r); break;
		case TIR_DTYPE_I32: combine_int32_t((int32_t *)dj, (const int32_t *)sj, block, r); break;
		case TIR_DTYPE_I64: combine_int64_t((int64_t *)dj, (const int64_t *)sj, block, r); break;
		default: combine_bool((unsigned char *)dj, (const unsigned char *)sj, block, r); break;
		}
	}
	free(at);
	if (wd != ot) { /* a storage dtype: rounded once, on store */
		rc = tir_tensor_convert(&acc, ot, out, err);
		goto out;
	}
	*out = acc;
	acc = (struct tir_tensor){0};
out:
	tir_tensor_release(&acc);
	tir_tensor_release(&ix);
	tir_tensor_release(&u);
	return rc;
}
