/*
 * format.c — a computed tensor as the text block of docs/language.md ("Printed results"):
 * a header line "NAME: f32[2, 3]", then nested lists, NumPy's layout
 * (one row a line, blank lines between blocks of rank 3 and up, "..."
 * past 1000 elements with the first and last 3 along each long axis).
 * Returns text; printing is the caller's.
 */
#include "exec.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUMMARY_THRESHOLD 1000
#define EDGE 3

struct fmt {
	const struct tir_tensor *t;
	int precision;
	bool summarize;
	struct tir_str *out;
};

/* Digits printed: the precision asked, but no more than tell every two
 * values of a 16-bit type apart (f16 5, bf16 4; more show only the
 * binary's noise). */
static int prec_of(const struct fmt *f)
{
	int cap = f->t->dtype == TIR_DTYPE_F16 ? 5 : f->t->dtype == TIR_DTYPE_BF16 ? 4 : 17;
	return f->precision < cap ? f->precision : cap;
}

static void elem(const struct fmt *f, int64_t off)
{
	const char *base = tir_tensor_data(f->t);
	size_t sz = tir_dtype_size(f->t->dtype);
	const void *p = base + off * (int64_t)sz;
	double v;
	switch (f->t->dtype) {
	case TIR_DTYPE_BOOL:
		tir_str_addf(f->out, "%s", *(const uint8_t *)p ? "true" : "false");
		return;
	case TIR_DTYPE_I32:
		tir_str_addf(f->out, "%d", *(const int32_t *)p);
		return;
	case TIR_DTYPE_I64:
		tir_str_addf(f->out, "%lld", (long long)*(const int64_t *)p);
		return;
	case TIR_DTYPE_I8:
		tir_str_addf(f->out, "%d", *(const int8_t *)p);
		return;
	case TIR_DTYPE_U8:
		tir_str_addf(f->out, "%d", *(const uint8_t *)p);
		return;
	case TIR_DTYPE_I16:
		tir_str_addf(f->out, "%d", *(const int16_t *)p);
		return;
	case TIR_DTYPE_F32:
		v = *(const float *)p;
		break;
	case TIR_DTYPE_F16:
	case TIR_DTYPE_BF16:
		v = f->t->dtype == TIR_DTYPE_F16 ? tir_h2f(*(const uint16_t *)p) : tir_b2f(*(const uint16_t *)p);
		break;
	default:
		v = *(const double *)p;
		break;
	}
	if (isnan(v))
		tir_str_add(f->out, "nan", 3);
	else if (isinf(v))
		tir_str_addf(f->out, "%s", v < 0 ? "-inf" : "inf");
	else
		tir_str_addf(f->out, "%.*g", prec_of(f), v);
}

/* Axis `d` of the tensor from element offset `off` (in elements). */
static void block(const struct fmt *f, int d, int64_t off)
{
	const struct tir_tensor *t = f->t;
	int64_t n = t->shape[d];
	bool cut = f->summarize && n > 2 * EDGE;
	tir_str_add(f->out, "[", 1);
	for (int64_t i = 0; i < n; i++) {
		if (cut && i == EDGE) {
			if (d == t->rank - 1) {
				tir_str_add(f->out, "..., ", 5);
			} else {
				tir_str_add(f->out, "...,", 4);
				for (int k = 0; k < t->rank - d - 1; k++)
					tir_str_add(f->out, "\n", 1);
				for (int k = 0; k <= d; k++)
					tir_str_add(f->out, " ", 1);
			}
			i = n - EDGE;
		}
		int64_t o = off + i * t->strides[d];
		if (d == t->rank - 1)
			elem(f, o);
		else
			block(f, d + 1, o);
		if (i + 1 < n) {
			if (d == t->rank - 1) {
				tir_str_add(f->out, ", ", 2);
			} else {
				tir_str_add(f->out, ",", 1);
				for (int k = 0; k < t->rank - d - 1; k++)
					tir_str_add(f->out, "\n", 1);
				for (int k = 0; k <= d; k++)
					tir_str_add(f->out, " ", 1);
			}
		}
	}
	tir_str_add(f->out, "]", 1);
}

char *tir_tensor_format(const struct tir_tensor *t, const char *header, int precision, bool full)
{
	struct tir_str out = {0};
	struct tir_type ty = {.dtype = (uint8_t)t->dtype, .rank = (uint8_t)t->rank};
	memcpy(ty.shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
	char ts[TIR_TYPE_STRLEN];
	tir_str_addf(&out, "%s: %s\n", header, tir_type_str(&ty, ts, sizeof ts));
	struct fmt f = {.t = t, .precision = precision < 1 ? 1 : precision > 17 ? 17 : precision,
			.summarize = !full && tir_tensor_numel(t) > SUMMARY_THRESHOLD, .out = &out};
	if (t->rank == 0)
		elem(&f, 0);
	else
		block(&f, 0, 0);
	tir_str_add(&out, "\n", 1);
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s;
}

int tir_tensor_save(const char *path, const struct tir_tensor *t, struct tir_err *err)
{
	return tir_npy_save(path, t, err);
}

bool tir_path_is_safetensors(const char *path)
{
	size_t n = strlen(path), k = strlen(".safetensors");
	return n > k && !strcmp(path + n - k, ".safetensors");
}

int tir_tensors_save(const char *path, const char *const *names, const struct tir_tensor *const *ts, int n,
		     struct tir_err *err)
{
	if (tir_path_is_safetensors(path))
		return tir_safetensors_save(path, names, ts, n, err);
	if (n != 1)
		return tir_errf(err, TIR_EDATA, NULL, "%s: a .npy file holds one tensor, not %d (save to a "
				"name ending in .safetensors for several)", path, n);
	return tir_npy_save(path, ts[0], err);
}

void tir_release_caches(void)
{
	tir_mem_trim();
}
