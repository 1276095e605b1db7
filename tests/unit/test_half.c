/*
 * test_half.c — half.h's f16 and bf16 bits and cvt.c's runs: every value
 * widens and narrows back to itself; every rounding boundary (the exact
 * midpoint of two neighbours, and the floats next to it) goes where round
 * to nearest even says, from f32 and from f64; overflow, NaN and signed
 * zero; and the run converter (F16C on the AVX2 and AVX-512 paths) gives
 * the scalar bits.  make test-kernels runs it on every vector path.
 */
#include "check.h"
#include "../../lib/exec/exec.h"
#include "../../lib/exec/half.h"

#include <math.h>
#include <stdlib.h>

typedef float (*widen_fn)(uint16_t);

/* h is finite and positive below the format's infinity inf */
static void boundaries(const char *what, widen_fn widen, uint16_t (*from_f)(float),
		       uint16_t (*from_d)(double), uint16_t inf)
{
	int bad = 0;
	for (uint32_t h = 0; h + 1 < inf; h++) {
		float a = widen((uint16_t)h), b = widen((uint16_t)(h + 1));
		double mid = ((double)a + (double)b) / 2; /* exact */
		uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
		bad += from_d(mid) != even;
		bad += from_d(nextafter(mid, 0)) != h;
		bad += from_d(nextafter(mid, INFINITY)) != h + 1;
		bad += from_d(-mid) != (even | 0x8000);
		float fm = (float)mid;
		if ((double)fm == mid) { /* representable in f32 (always for f16) */
			bad += from_f(fm) != even;
			bad += from_f(nextafterf(fm, 0)) != h;
			bad += from_f(nextafterf(fm, INFINITY)) != h + 1;
		}
		bad += from_f(a) != h;
	}
	if (bad)
		fprintf(stderr, "%s: %d boundary errors\n", what, bad);
	CHECK(bad == 0);
}

static uint16_t f2h(float f) { return tir_f2h(f); }
static uint16_t f2b(float f) { return tir_f2b(f); }

static void test_specials(void)
{
	CHECK(tir_d2h(65504.0) == 0x7bff && tir_d2h(65519.99) == 0x7bff && tir_d2h(65520.0) == 0x7c00);
	CHECK(tir_d2h(1e10) == 0x7c00 && tir_d2h(-1e10) == 0xfc00 && tir_d2h(INFINITY) == 0x7c00);
	CHECK(tir_d2h(-0.0) == 0x8000 && tir_d2h(0x1p-24) == 1 && tir_d2h(0x1p-25) == 0 &&
	      tir_d2h(0x1.0000001p-25) == 1);
	CHECK((tir_d2h(NAN) & 0x7c00) == 0x7c00 && (tir_d2h(NAN) & 0x3ff) != 0);
	CHECK(tir_f2b(3.0e38f) == 0x7f62 && tir_f2b(INFINITY) == 0x7f80 && tir_f2b(-0.0f) == 0x8000);
	CHECK(tir_f2b(0x1.fffffep127f) == 0x7f80); /* rounds up past the largest bf16 */
	CHECK((tir_f2b(NAN) & 0x7f80) == 0x7f80 && (tir_f2b(NAN) & 0x7f) != 0);
	CHECK(tir_d2b(0x1.fffffep127) == 0x7f80 && tir_d2b(1e300) == 0x7f80);
	CHECK(tir_h2f(0x3c00) == 1.0f && tir_h2f(0xc000) == -2.0f && tir_h2f(1) == 0x1p-24f &&
	      isinf(tir_h2f(0x7c00)) && isnan(tir_h2f(0x7e00)));
	CHECK(tir_b2f(0x3f80) == 1.0f && tir_b2f(0x0001) == 0x1p-133f);
}

static void test_every_value(void)
{
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = tir_h2f((uint16_t)h), g = tir_b2f((uint16_t)h);
		if (!isnan(f))
			bad += tir_f2h(f) != h || tir_d2h(f) != h;
		if (!isnan(g))
			bad += tir_f2b(g) != h || tir_d2b(g) != h;
	}
	CHECK(bad == 0);
}

/* cvt.c's runs (contiguous and strided) against the scalar conversions */
static void test_runs(void)
{
	enum { N = 70000 };
	float *f = malloc(N * sizeof *f), *back = malloc(N * sizeof *back);
	uint16_t *h = malloc(N * 2 * sizeof *h), *b = malloc(N * sizeof *b);
	srand(7);
	for (int i = 0; i < N; i++) {
		uint32_t u = (uint32_t)rand() << 16 ^ (uint32_t)rand();
		memcpy(&f[i], &u, 4);
		if (i < 65536) /* every f16, widened, and the midpoints above them */
			f[i] = i % 2 ? tir_h2f((uint16_t)(i / 2)) : (tir_h2f((uint16_t)(i / 2)) + tir_h2f((uint16_t)(i / 2 + 1))) / 2;
	}
	int bad = 0;
	tir_cvt_run(TIR_DTYPE_F16, h, TIR_DTYPE_F32, f, 1, N);
	for (int i = 0; i < N; i++)
		bad += !isnan(f[i]) && h[i] != tir_f2h(f[i]);
	tir_cvt_run(TIR_DTYPE_F32, back, TIR_DTYPE_F16, h, 1, N);
	for (int i = 0; i < N; i++)
		bad += memcmp(&back[i], &(float){tir_h2f(h[i])}, 4) != 0;
	tir_cvt_run(TIR_DTYPE_BF16, b, TIR_DTYPE_F32, f, 1, N);
	for (int i = 0; i < N; i++)
		bad += b[i] != tir_f2b(f[i]);
	/* strided: every second element */
	tir_cvt_run(TIR_DTYPE_F16, h, TIR_DTYPE_F32, f, 2, N / 2);
	for (int i = 0; i < N / 2; i++)
		bad += !isnan(f[2 * i]) && h[i] != tir_f2h(f[2 * i]);
	/* equal dtypes copy bits: a NaN's payload survives */
	uint16_t nan_in[3] = {0x7e01, 0xfd55, 0x3c00}, nan_out[3];
	tir_cvt_run(TIR_DTYPE_F16, nan_out, TIR_DTYPE_F16, nan_in, 1, 3);
	bad += memcmp(nan_in, nan_out, sizeof nan_in) != 0;
	/* narrow integers wrap; floats truncate to i32, then wrap */
	float fv[5] = {300.7f, -129.5f, 255.9f, -1.0f, NAN};
	int8_t i8[5];
	uint8_t u8[5];
	tir_cvt_run(TIR_DTYPE_I8, i8, TIR_DTYPE_F32, fv, 1, 5);
	tir_cvt_run(TIR_DTYPE_U8, u8, TIR_DTYPE_F32, fv, 1, 5);
	bad += i8[0] != 44 || i8[1] != 127 || i8[2] != -1 || i8[3] != -1 || i8[4] != 0;
	bad += u8[0] != 44 || u8[1] != 127 || u8[2] != 255 || u8[3] != 255 || u8[4] != 0;
	CHECK(bad == 0);
	free(f);
	free(back);
	free(h);
	free(b);
}

int main(void)
{
	test_specials();
	test_every_value();
	boundaries("f16", tir_h2f, f2h, tir_d2h, 0x7c00);
	boundaries("bf16", tir_b2f, f2b, tir_d2b, 0x7f80);
	test_runs();
	return check_report("test_half");
}
