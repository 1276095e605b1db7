/*
 * test_vmath.c — lib/exec/vmath: every dispatch path this CPU has (portable
 * C, SSE2, AVX2, AVX-512) within its ULP bound against libm in double (f32)
 * and long double (f64) over about half a million inputs per function
 * (random bit patterns, the ranges that matter, edge cases); the exact ops
 * (+ - * / sqrt, floor, relu, ...) bit for bit the same on every path (NaN
 * where NaN, whatever its sign and payload); special values; tails, n = 0,
 * unaligned pointers, dst == src (an element's result never depends on its
 * position); the TIR_VMATH choice, which reduce.c's, rows.c's and vm.c's
 * per-ISA builds follow (fused runs equal to --no-fuse on each path,
 * reductions the same bits on all); and the reference kernels computing
 * through vmath on strided and broadcast runs.  Set TIR_TEST_VERBOSE=1 for
 * the ULP table.
 *
 * The transcendentals may differ between paths (SLEEF with FMA on AVX2 and
 * AVX-512, without on SSE2 and in C), each within its bound; one process
 * uses one path, so results never depend on the thread count.
 */
#include "exec/exec.h"
#include "exec/vmath.h"
#include "fusion/fusion.h"

#include "check.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static bool verbose;
static struct tir_err err;

static const enum tir_op unary_ops[] = {
	TIR_OP_NEG, TIR_OP_ABS, TIR_OP_EXP, TIR_OP_LOG, TIR_OP_SQRT, TIR_OP_RSQRT,
	TIR_OP_RECIP, TIR_OP_SIN, TIR_OP_COS, TIR_OP_TANH, TIR_OP_SIGMOID, TIR_OP_RELU,
	TIR_OP_GELU, TIR_OP_SILU, TIR_OP_ERF, TIR_OP_FLOOR, TIR_OP_CEIL, TIR_OP_ROUND,
	TIR_OP_SIGN, TIR_OP_LOG1P, TIR_OP_EXPM1, TIR_OP_SELU, TIR_OP_HARDSWISH, TIR_OP_SOFTPLUS,
	TIR_OP_SOFTSIGN, TIR_OP_TAN, TIR_OP_ASIN, TIR_OP_ACOS, TIR_OP_ATAN, TIR_OP_SINH, TIR_OP_COSH,
	TIR_OP_ASINH, TIR_OP_ACOSH, TIR_OP_ATANH,
};
static const enum tir_op binary_ops[] = {
	TIR_OP_ADD, TIR_OP_SUB, TIR_OP_MUL, TIR_OP_DIV, TIR_OP_POW, TIR_OP_MAXIMUM,
	TIR_OP_MINIMUM, TIR_OP_MOD,
};
#define NUNARY (int)(sizeof unary_ops / sizeof unary_ops[0])
#define NBINARY (int)(sizeof binary_ops / sizeof binary_ops[0])

static const char *const path_name[TIR_VMATH_PATH_COUNT] = {"scalar", "sse2", "avx2", "avx512"};

/* ---- inputs ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)   /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static double unif(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd() >> 11) * 0x1p-53;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static double bits_f64(uint64_t u)
{
	double f;
	memcpy(&f, &u, 8);
	return f;
}

static const float edge32[] = {
	0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f,
	-2.5f, 3.5f, FLT_MIN, -FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 0x1.fffffcp-127f,
	FLT_MAX, -FLT_MAX, 88.72283f, 88.7228394f, 88.72284f, -87.33654f, -103.972f,
	-104.0f, -150.0f, 1e-8f, 0.1f, 3.14159265f, 1.5707964f, 6.2831855f, 1e4f, 1e7f,
	12345678.9f, 1e10f, 1e20f, 1e30f, 1e38f, 0x1p23f, 0x1p24f, 0x1.fffffep22f, 9.0f,
	-9.0f, 10.0f, -10.0f, 15.0f, -15.0f, 20.0f, -20.0f, 40.0f, -40.0f, 100.0f,
	-100.0f, 0.8813736f, 1e-30f, 1e-40f, -1e-40f,
};
static const double edge64[] = {
	0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5,
	3.5, DBL_MIN, -DBL_MIN, 0x1p-1074, -0x1p-1074, 0x1.fffffffffffffp-1023, DBL_MAX,
	-DBL_MAX, 709.782712893384, 709.7827128933841, -708.3964185322641, -745.1332191019411,
	-745.2, -800, 1e-16, 0.1, 3.141592653589793, 1.5707963267948966, 1e7, 1e15, 1e22,
	1e100, 1e300, 0x1p52, 0x1p53, 0x1.fffffffffffffp51, 9.0, -9.0, 20.0, -20.0, 27.0,
	-27.0, 40.0, -40.0, 800.0, -800.0, 1e-300, 1e-310, -1e-310,
};
#define NEDGE32 (int)(sizeof edge32 / sizeof edge32[0])
#define NEDGE64 (int)(sizeof edge64 / sizeof edge64[0])

/* Fill x[n]: edge cases, then a quarter each of random bit patterns,
 * [-20, 20], [-1e4, 1e4], and log-uniform magnitudes 1e-40 .. 1e40 (the f64
 * version: 1e-320 .. 1e300). */
static void gen_f32(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		if (i < NEDGE32) {
			x[i] = edge32[i];
			continue;
		}
		switch (i % 4) {
		case 0: x[i] = bits_f32((uint32_t)rnd()); break;
		case 1: x[i] = (float)unif(-20, 20); break;
		case 2: x[i] = (float)unif(-1e4, 1e4); break;
		default: x[i] = (float)((rnd() & 1 ? -1 : 1) * pow(10, unif(-40, 40))); break;
		}
	}
}

static void gen_f64(double *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		if (i < NEDGE64) {
			x[i] = edge64[i];
			continue;
		}
		switch (i % 4) {
		case 0: x[i] = bits_f64(rnd()); break;
		case 1: x[i] = unif(-40, 40); break;
		case 2: x[i] = unif(-1e4, 1e4); break;
		default: x[i] = (rnd() & 1 ? -1 : 1) * pow(10, unif(-320, 300)); break;
		}
	}
}

/* Exponents for pow: small integers and halves, [-10, 10], random bits. */
static void gen_pow_f32(float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		switch (i % 4) {
		case 0: b[i] = (float)((int64_t)(rnd() % 41) - 20) / 2; break;
		case 1: b[i] = (float)unif(-10, 10); break;
		case 2: b[i] = bits_f32((uint32_t)rnd()); break;
		default: b[i] = i < NEDGE32 ? edge32[i] : (float)unif(-3, 3); break;
		}
	}
}

static void gen_pow_f64(double *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		switch (i % 4) {
		case 0: b[i] = (double)((int64_t)(rnd() % 41) - 20) / 2; break;
		case 1: b[i] = unif(-10, 10); break;
		case 2: b[i] = bits_f64(rnd()); break;
		default: b[i] = i < NEDGE64 ? edge64[i] : unif(-3, 3); break;
		}
	}
}

/* ---- references ---- */

/* sigmoid, the stable form, in T (double or long double) */
static double sig_d(double x)
{
	return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

static long double sig_l(long double x)
{
	return x >= 0 ? 1 / (1 + expl(-x)) : expl(x) / (1 + expl(x));
}

/* The exact-rule ops (no rounding beyond one IEEE op) as formulas in T. */
#define EXACT_UNARY(NAME, T, FLOOR, CEIL, RINT)                              \
	static bool NAME(enum tir_op op, T x, T *r)                          \
	{                                                                    \
		switch (op) {                                                \
		case TIR_OP_NEG: *r = -x; return true;                       \
		case TIR_OP_ABS: *r = x < 0 || (x == 0 && signbit(x)) ? -x : x; return true; \
		case TIR_OP_SQRT: *r = sqrt(x); return true;                 \
		case TIR_OP_RECIP: *r = 1 / x; return true;                  \
		case TIR_OP_FLOOR: *r = FLOOR(x); return true;               \
		case TIR_OP_CEIL: *r = CEIL(x); return true;                 \
		case TIR_OP_ROUND: *r = RINT(x); return true;                \
		case TIR_OP_RELU: *r = isnan(x) ? x : x > 0 ? x : 0; return true; \
		case TIR_OP_SIGN: *r = x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x; return true; \
		default: return false;                                       \
		}                                                            \
	}

EXACT_UNARY(exact_f32, float, floorf, ceilf, nearbyintf)
EXACT_UNARY(exact_f64, double, floor, ceil, nearbyint)

static double ref_f32(enum tir_op op, float xf)
{
	double x = xf;
	switch (op) {
	case TIR_OP_EXP: return exp(x);
	case TIR_OP_LOG: return log(x);
	case TIR_OP_RSQRT: return 1 / sqrt(x);
	case TIR_OP_SIN: return sin(x);
	case TIR_OP_COS: return cos(x);
	case TIR_OP_TANH: return tanh(x);
	case TIR_OP_SIGMOID: return sig_d(x);
	case TIR_OP_SILU: return x * sig_d(x);
	case TIR_OP_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
	case TIR_OP_ERF: return erf(x);
	case TIR_OP_LOG1P: return log1p(x);
	case TIR_OP_EXPM1: return expm1(x);
	case TIR_OP_SELU: return 1.0507009873554804934 * (x > 0 ? x : 1.6732632423543772848 * expm1(x));
	case TIR_OP_HARDSWISH: return x <= -3 ? 0 * x : x >= 3 ? x : x * (x + 3) / 6;
	case TIR_OP_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
	case TIR_OP_SOFTSIGN: return x / (1 + fabs(x));
	case TIR_OP_TAN: return tan(x);
	case TIR_OP_ASIN: return asin(x);
	case TIR_OP_ACOS: return acos(x);
	case TIR_OP_ATAN: return atan(x);
	case TIR_OP_SINH: return sinh(x);
	case TIR_OP_COSH: return cosh(x);
	case TIR_OP_ASINH: return asinh(x);
	case TIR_OP_ACOSH: return acosh(x);
	case TIR_OP_ATANH: return atanh(x);
	default: return NAN;
	}
}

static long double ref_f64(enum tir_op op, double xd)
{
	long double x = xd;
	switch (op) {
	case TIR_OP_EXP: return expl(x);
	case TIR_OP_LOG: return logl(x);
	case TIR_OP_RSQRT: return 1 / sqrtl(x);
	case TIR_OP_SIN: return sinl(x);
	case TIR_OP_COS: return cosl(x);
	case TIR_OP_TANH: return tanhl(x);
	case TIR_OP_SIGMOID: return sig_l(x);
	case TIR_OP_SILU: return x * sig_l(x);
	case TIR_OP_GELU: return 0.5L * x * erfcl(-x / sqrtl(2.0L));
	case TIR_OP_ERF: return erfl(x);
	case TIR_OP_LOG1P: return log1pl(x);
	case TIR_OP_EXPM1: return expm1l(x);
	case TIR_OP_SELU: return 1.0507009873554804934193349852946L * (x > 0 ? x : 1.6732632423543772848170429916717L * expm1l(x));
	case TIR_OP_HARDSWISH: return x <= -3 ? 0 * x : x >= 3 ? x : x * (x + 3) / 6;
	case TIR_OP_SOFTPLUS: return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x));
	case TIR_OP_SOFTSIGN: return x / (1 + fabsl(x));
	case TIR_OP_TAN: return tanl(x);
	case TIR_OP_ASIN: return asinl(x);
	case TIR_OP_ACOS: return acosl(x);
	case TIR_OP_ATAN: return atanl(x);
	case TIR_OP_SINH: return sinhl(x);
	case TIR_OP_COSH: return coshl(x);
	case TIR_OP_ASINH: return asinhl(x);
	case TIR_OP_ACOSH: return acoshl(x);
	case TIR_OP_ATANH: return atanhl(x);
	default: return NAN;
	}
}

/* np.mod's rule over libm's fmod (exact), as elementwise.c had it. */
#define REF_MOD(NAME, T, FMOD, COPYSIGN)                                     \
	static T NAME(T a, T b)                                              \
	{                                                                    \
		T m = FMOD(a, b);                                            \
		if (b == 0)                                                  \
			return m;                                            \
		if (m != 0) {                                                \
			if ((b < 0) != (m < 0))                              \
				m += b;                                      \
		} else {                                                     \
			m = COPYSIGN(0, b);                                  \
		}                                                            \
		return m;                                                    \
	}

REF_MOD(mod_f32, float, fmodf, copysignf)
REF_MOD(mod_f64, double, fmod, copysign)

#define EXACT_BINARY(NAME, T, MOD)                                           \
	static bool NAME(enum tir_op op, T a, T b, T *r)                     \
	{                                                                    \
		switch (op) {                                                \
		case TIR_OP_ADD: *r = a + b; return true;                    \
		case TIR_OP_SUB: *r = a - b; return true;                    \
		case TIR_OP_MUL: *r = a * b; return true;                    \
		case TIR_OP_DIV: *r = a / b; return true;                    \
		case TIR_OP_MAXIMUM: *r = isnan(a) ? a : a > b ? a : b; return true; \
		case TIR_OP_MINIMUM: *r = isnan(a) ? a : a < b ? a : b; return true; \
		case TIR_OP_MOD: *r = MOD(a, b); return true;                \
		default: return false;                                       \
		}                                                            \
	}

EXACT_BINARY(exactb_f32, float, mod_f32)
EXACT_BINARY(exactb_f64, double, mod_f64)

/* Error of r in units in the last place of the exact w (a float's ULP;
 * below FLT_MIN the subnormal spacing).  Beyond the largest float both
 * count as 2^128 (so FLT_MAX for an overflowing w is 1 ULP off); an
 * infinite w must be met exactly. */
static double ulps_f32(float r, double w)
{
	if (isnan(w))
		return isnan(r) ? 0 : INFINITY;
	if (isinf(w))
		return r == w ? 0 : INFINITY;
	if (isnan(r))
		return INFINITY;
	double rr = isinf(r) ? copysign(0x1p128, r) : r;
	if (fabs(w) > 0x1p128)
		w = copysign(0x1p128, w);
	int e = w == 0 ? -126 : ilogb(w);
	return fabs(rr - w) / ldexp(1.0, (e < -126 ? -126 : e > 127 ? 127 : e) - 23);
}

static double ulps_f64(double r, long double w)
{
	if (isnan(w))
		return isnan(r) ? 0 : INFINITY;
	if (isinf(w))
		return r == w ? 0 : INFINITY;
	if (isnan(r))
		return INFINITY;
	long double rr = isinf(r) ? copysignl(0x1p1024L, r) : r;
	if (fabsl(w) > 0x1p1024L)
		w = copysignl(0x1p1024L, w);
	int e = w == 0 ? -1022 : ilogbl(w);
	return (double)(fabsl(rr - w) / ldexpl(1.0L, (e < -1022 ? -1022 : e > 1023 ? 1023 : e) - 52));
}

static bool same_f32(float a, float b)
{
	return memcmp(&a, &b, 4) == 0;
}

static bool same_f64(double a, double b)
{
	return memcmp(&a, &b, 8) == 0;
}

/* Same bits, or both NaN (payloads are not part of any rule here). */
static bool same_or_nan_f32(float a, float b)
{
	return same_f32(a, b) || (isnan(a) && isnan(b));
}

static bool same_or_nan_f64(double a, double b)
{
	return same_f64(a, b) || (isnan(a) && isnan(b));
}

/* ---- 1. the paths agree bit for bit on the exact ops ---- */

/* Whether op is correctly rounded IEEE arithmetic (or moves bits), so that
 * every path must give the same bits. */
static bool exact_op(enum tir_op op, bool bin)
{
	float r;
	return bin ? exactb_f32(op, 1, 1, &r) : exact_f32(op, 1, &r);
}

enum { NBIG = 1 << 20 };

static int paths[TIR_VMATH_PATH_COUNT], npaths;

static void test_agree(void)
{
	float *x = malloc(NBIG * sizeof *x), *b = malloc(NBIG * sizeof *b);
	float *r0 = malloc(NBIG * sizeof *r0), *r = malloc(NBIG * sizeof *r);
	double *xd = malloc(NBIG * sizeof *xd), *bd = malloc(NBIG * sizeof *bd);
	double *d0 = malloc(NBIG * sizeof *d0), *d = malloc(NBIG * sizeof *d);
	if (!x || !b || !r0 || !r || !xd || !bd || !d0 || !d)
		abort();
	gen_f32(x, NBIG);
	gen_f64(xd, NBIG);
	for (int k = 0; k < NUNARY + NBINARY; k++) {
		bool bin = k >= NUNARY;
		enum tir_op op = bin ? binary_ops[k - NUNARY] : unary_ops[k];
		if (bin && op == TIR_OP_POW) {
			gen_pow_f32(b, NBIG);
			gen_pow_f64(bd, NBIG);
		} else if (bin) {
			gen_f32(b, NBIG);
			gen_f64(bd, NBIG);
			for (int64_t i = 0; i < NBIG; i += 2) {   /* shuffle the pairs */
				int64_t j = (int64_t)(rnd() % NBIG);
				float t = b[i];
				double td = bd[i];
				b[i] = b[j];
				b[j] = t;
				bd[i] = bd[j];
				bd[j] = td;
			}
		}
		for (int pi = 0; pi < npaths; pi++) {
			enum tir_vmath_path p = (enum tir_vmath_path)paths[pi];
			float *o = pi == 0 ? r0 : r;
			double *od = pi == 0 ? d0 : d;
			if (bin) {
				tir_vmath2_f32_on(p, op, o, x, b, NBIG);
				tir_vmath2_f64_on(p, op, od, xd, bd, NBIG);
			} else {
				tir_vmath_f32_on(p, op, o, x, NBIG);
				tir_vmath_f64_on(p, op, od, xd, NBIG);
			}
			/* the exact ops: the same bits as the first path's (a NaN
			 * is a NaN: which one is the vector unit's) */
			if (pi == 0 || !exact_op(op, bin))
				continue;
			int64_t bad = 0, badd = 0, first = -1, firstd = -1;
			for (int64_t i = 0; i < NBIG; i++) {
				if (!same_or_nan_f32(o[i], r0[i]) && bad++ == 0)
					first = i;
				if (!same_or_nan_f64(od[i], d0[i]) && badd++ == 0)
					firstd = i;
			}
			if (bad)
				fprintf(stderr, "%s f32 op %d: %lld differ from scalar, first x=%a "
					"(b=%a): %a vs %a\n", path_name[p], (int)op, (long long)bad,
					x[first], bin ? b[first] : 0.0f, o[first], r0[first]);
			if (badd)
				fprintf(stderr, "%s f64 op %d: %lld differ from scalar, first x=%a "
					"(b=%a): %a vs %a\n", path_name[p], (int)op, (long long)badd,
					xd[firstd], bin ? bd[firstd] : 0.0, od[firstd], d0[firstd]);
			CHECK(bad == 0);
			CHECK(badd == 0);
		}
		if (verbose && npaths > 1 && exact_op(op, bin))
			fprintf(stderr, "op %2d: %d paths agree on %d f32 and f64 inputs\n",
				(int)op, npaths, NBIG);
	}
	free(x);
	free(b);
	free(r0);
	free(r);
	free(xd);
	free(bd);
	free(d0);
	free(d);
}

/* ---- 2. accuracy, on every path ---- */

enum { NACC = 1 << 19 };

/* The bound checked on normal results, in ULP: SLEEF's documented 1.0 for
 * its u10 functions (tanhf: 1.0001), plus 0.001 for the reference's own
 * error (long double for f64); the composites add the rounding of their
 * few IEEE steps and of the SLEEF function inside (erfc: 1.5). */
static double bound(enum tir_op op)
{
	switch (op) {
	case TIR_OP_RSQRT: return 1.5;
	case TIR_OP_TANH: return 3; /* f64 from expm1 (2.5 seen); f32 from exp (1.1 seen) */
	case TIR_OP_SIGMOID: return 3;
	case TIR_OP_SILU: return 3.5;
	case TIR_OP_GELU: return 4;
	case TIR_OP_LOG1P: /* libm's, on every path: glibc documents at most 1 */
	case TIR_OP_EXPM1: return 2;
	/* libm's (glibc documents at most 2 for the hyperbolic ones), and the
	 * composites: their few IEEE steps around libm's function */
	case TIR_OP_TAN: case TIR_OP_ASIN: case TIR_OP_ACOS: case TIR_OP_ATAN: case TIR_OP_SINH:
	case TIR_OP_COSH: case TIR_OP_ASINH: case TIR_OP_ACOSH: case TIR_OP_ATANH:
	case TIR_OP_HARDSWISH: case TIR_OP_SOFTSIGN: case TIR_OP_SOFTPLUS: return 3;
	case TIR_OP_SELU: return 4;
	default: return 1.001;
	}
}

/* gelu's erfc magnifies the rounding of its argument -x/sqrt 2 by about
 * x^2 (the function's condition number there), whatever erfc's accuracy,
 * so below x = -1 gelu is checked at the bound times x^2. */
static double slack(enum tir_op op, double x)
{
	return op == TIR_OP_GELU && x < -1 ? x * x : 1;
}

/* An error of at most TINY_STEPS subnormal steps (2^-149 or 2^-1074, so
 * 2^-10 of the smallest normal number) passes whatever its ULP: SLEEF
 * documents max(bound, FLT_MIN / DBL_MIN), and a composite can scale a
 * subnormal intermediate (silu: x * sigmoid(x)). */
#define TINY_STEPS 8192.0

/* f64 exp overflows early: inf for x in [709.7827111495576,
 * log(DBL_MAX) = 709.782712893384], where the result is within 1e-6 of
 * DBL_MAX (SLEEF 3.5's threshold); not checked there, but pinned in
 * test_special. */
#define EXP64_INF_FROM 709.7827111495576

static void test_accuracy(enum tir_vmath_path p)
{
	float *x = malloc(NACC * sizeof *x), *r = malloc(NACC * sizeof *r);
	double *xd = malloc(NACC * sizeof *xd), *rd = malloc(NACC * sizeof *rd);
	float *b = malloc(NACC * sizeof *b);
	double *bd = malloc(NACC * sizeof *bd);
	if (!x || !r || !xd || !rd || !b || !bd)
		abort();
	gen_f32(x, NACC);
	gen_f64(xd, NACC);
	for (int k = 0; k < NUNARY; k++) {
		enum tir_op op = unary_ops[k];
		tir_vmath_f32_on(p, op, r, x, NACC);
		tir_vmath_f64_on(p, op, rd, xd, NACC);
		double worst = 0, worstd = 0;
		float wx = 0;
		double wxd = 0;
		int64_t bad = 0, badd = 0;
		for (int64_t i = 0; i < NACC; i++) {
			float e;
			double ed;
			if (exact_f32(op, x[i], &e)) {
				bad += !same_or_nan_f32(r[i], e);
			} else {
				double w = ref_f32(op, x[i]), off = fabs(r[i] - w) * 0x1p149;
				if (off > TINY_STEPS) {
					double u = ulps_f32(r[i], w) / slack(op, x[i]);
					if (u > worst) {
						worst = u;
						wx = x[i];
					}
				}
			}
			if (exact_f64(op, xd[i], &ed)) {
				badd += !same_or_nan_f64(rd[i], ed);
			} else if (op != TIR_OP_EXP || !(xd[i] >= EXP64_INF_FROM) ||
				   xd[i] > 709.8) {
				long double w = ref_f64(op, xd[i]);
				double off = (double)(fabsl(rd[i] - w) * 0x1p1074L);
				if (off > TINY_STEPS) {
					double u = ulps_f64(rd[i], w) / slack(op, xd[i]);
					if (u > worstd) {
						worstd = u;
						wxd = xd[i];
					}
				}
			}
		}
		if (verbose || worst > bound(op) || worstd > bound(op) || bad || badd)
			fprintf(stderr, "%s unary op %2d: f32 max %.4f ULP (x=%a), f64 max %.4f ULP "
				"(x=%a); %lld, %lld exact-rule mismatches\n", path_name[p], (int)op, worst,
				(double)wx, worstd, wxd, (long long)bad, (long long)badd);
		CHECK(worst <= bound(op));
		CHECK(worstd <= bound(op));
		CHECK(bad == 0);
		CHECK(badd == 0);
	}

	/* pow against libm (double / long double), the rest exactly */
	for (int k = 0; k < NBINARY; k++) {
		enum tir_op op = binary_ops[k];
		if (op == TIR_OP_POW) {
			gen_pow_f32(b, NACC);
			gen_pow_f64(bd, NACC);
		} else {
			gen_f32(b, NACC);
			gen_f64(bd, NACC);
			for (int64_t i = 0; i < NACC; i++) {
				int64_t j = (int64_t)(rnd() % NACC);
				float t = b[i];
				double td = bd[i];
				b[i] = b[j];
				b[j] = t;
				bd[i] = bd[j];
				bd[j] = td;
			}
		}
		tir_vmath2_f32_on(p, op, r, x, b, NACC);
		tir_vmath2_f64_on(p, op, rd, xd, bd, NACC);
		double worst = 0, worstd = 0;
		int64_t bad = 0, badd = 0;
		for (int64_t i = 0; i < NACC; i++) {
			float e;
			double ed;
			if (exactb_f32(op, x[i], b[i], &e)) {
				bad += !same_or_nan_f32(r[i], e);
			} else {
				double w = pow(x[i], b[i]), off = fabs(r[i] - w) * 0x1p149;
				if (off > TINY_STEPS)
					worst = fmax(worst, ulps_f32(r[i], w));
			}
			if (exactb_f64(op, xd[i], bd[i], &ed)) {
				badd += !same_or_nan_f64(rd[i], ed);
			} else {
				long double w = powl(xd[i], bd[i]);
				double off = (double)(fabsl(rd[i] - w) * 0x1p1074L);
				if (off > TINY_STEPS)
					worstd = fmax(worstd, ulps_f64(rd[i], w));
			}
		}
		if (verbose || worst > 1.001 || worstd > 1.001 || bad || badd)
			fprintf(stderr, "%s binary op %2d: f32 max %.4f ULP, f64 max %.4f ULP; %lld, "
				"%lld exact-rule mismatches\n", path_name[p], (int)op, worst, worstd,
				(long long)bad, (long long)badd);
		CHECK(worst <= 1.001);
		CHECK(worstd <= 1.001);
		CHECK(bad == 0);
		CHECK(badd == 0);
	}
	free(x);
	free(r);
	free(xd);
	free(rd);
	free(b);
	free(bd);
}

/* ---- 3. special values ---- */

/* The path test_special checks. */
static enum tir_vmath_path cur_path;

static float u32(enum tir_op op, float x)
{
	float r;
	tir_vmath_f32_on(cur_path, op, &r, &x, 1);
	return r;
}

static double u64(enum tir_op op, double x)
{
	double r;
	tir_vmath_f64_on(cur_path, op, &r, &x, 1);
	return r;
}

static float b32(enum tir_op op, float a, float b)
{
	float r;
	tir_vmath2_f32_on(cur_path, op, &r, &a, &b, 1);
	return r;
}

static double b64(enum tir_op op, double a, double b)
{
	double r;
	tir_vmath2_f64_on(cur_path, op, &r, &a, &b, 1);
	return r;
}

static void test_special(void)
{
	/* exp, log */
	CHECK(u32(TIR_OP_EXP, -INFINITY) == 0 && u32(TIR_OP_EXP, INFINITY) == INFINITY);
	CHECK(u32(TIR_OP_EXP, 0) == 1 && u32(TIR_OP_EXP, -0.0f) == 1);
	CHECK(u32(TIR_OP_EXP, 89) == INFINITY && u32(TIR_OP_EXP, -104) == 0);
	CHECK(u32(TIR_OP_EXP, -100) > 0 && u32(TIR_OP_EXP, -100) < FLT_MIN);  /* subnormal */
	CHECK(isnan(u32(TIR_OP_EXP, NAN)) && isnan(u64(TIR_OP_EXP, NAN)));
	CHECK(u64(TIR_OP_EXP, 710) == INFINITY && u64(TIR_OP_EXP, -746) == 0);
	/* SLEEF's early f64 overflow (see EXP64_INF_FROM) */
	CHECK(u64(TIR_OP_EXP, 709.78271114955749) == 1.7976900000001013e+308);
	CHECK(u64(TIR_OP_EXP, EXP64_INF_FROM) == INFINITY);
	CHECK(u64(TIR_OP_EXP, -740) > 0 && u64(TIR_OP_EXP, -740) < DBL_MIN);
	CHECK(u32(TIR_OP_LOG, 0) == -INFINITY && u32(TIR_OP_LOG, -0.0f) == -INFINITY);
	CHECK(isnan(u32(TIR_OP_LOG, -1)) && u32(TIR_OP_LOG, INFINITY) == INFINITY);
	CHECK(u32(TIR_OP_LOG, 1) == 0 && !signbit(u32(TIR_OP_LOG, 1)));
	CHECK(fabsf(u32(TIR_OP_LOG, FLT_TRUE_MIN) - logf(FLT_TRUE_MIN)) <= 1e-5f);
	CHECK(u64(TIR_OP_LOG, 0) == -INFINITY && isnan(u64(TIR_OP_LOG, -1e-300)));
	CHECK(fabs(u64(TIR_OP_LOG, 0x1p-1074) - log(0x1p-1074)) <= 1e-12);
	/* sqrt, rsqrt, recip */
	CHECK(same_f32(u32(TIR_OP_SQRT, -0.0f), -0.0f) && isnan(u32(TIR_OP_SQRT, -1)));
	CHECK(u32(TIR_OP_RSQRT, 0) == INFINITY && u32(TIR_OP_RSQRT, -0.0f) == -INFINITY);
	CHECK(same_f32(u32(TIR_OP_RSQRT, INFINITY), 0.0f) && isnan(u32(TIR_OP_RSQRT, -4)));
	CHECK(u32(TIR_OP_RSQRT, 4) == 0.5f && u64(TIR_OP_RSQRT, 0.25) == 2);
	CHECK(u32(TIR_OP_RECIP, -0.0f) == -INFINITY && same_f64(u64(TIR_OP_RECIP, -INFINITY), -0.0));
	/* sin, cos: signed zeros, infinities, huge arguments */
	CHECK(same_f32(u32(TIR_OP_SIN, -0.0f), -0.0f) && same_f64(u64(TIR_OP_SIN, -0.0), -0.0));
	CHECK(isnan(u32(TIR_OP_SIN, INFINITY)) && isnan(u32(TIR_OP_COS, -INFINITY)));
	CHECK(isnan(u64(TIR_OP_SIN, INFINITY)) && isnan(u64(TIR_OP_COS, -INFINITY)));
	CHECK(u32(TIR_OP_COS, 0) == 1 && u64(TIR_OP_COS, -0.0) == 1);
	CHECK(ulps_f32(u32(TIR_OP_SIN, 1e38f), sin(1e38f)) <= 1);
	CHECK(ulps_f32(u32(TIR_OP_COS, FLT_MAX), cos(FLT_MAX)) <= 1);
	CHECK(ulps_f64(u64(TIR_OP_SIN, 1e300), sinl((long double)1e300)) <= 1);
	CHECK(ulps_f64(u64(TIR_OP_COS, DBL_MAX), cosl((long double)DBL_MAX)) <= 1);
	/* tanh, erf */
	CHECK(u32(TIR_OP_TANH, INFINITY) == 1 && u32(TIR_OP_TANH, -INFINITY) == -1);
	CHECK(same_f32(u32(TIR_OP_TANH, -0.0f), -0.0f) && u32(TIR_OP_TANH, 20) == 1);
	CHECK(u64(TIR_OP_TANH, -INFINITY) == -1 && same_f64(u64(TIR_OP_TANH, -0.0), -0.0));
	CHECK(u32(TIR_OP_ERF, INFINITY) == 1 && u32(TIR_OP_ERF, -INFINITY) == -1);
	CHECK(same_f32(u32(TIR_OP_ERF, -0.0f), -0.0f) && u64(TIR_OP_ERF, -30) == -1);
	/* sigmoid, silu, gelu: finite and exact at the extremes */
	CHECK(u32(TIR_OP_SIGMOID, INFINITY) == 1 && same_f32(u32(TIR_OP_SIGMOID, -INFINITY), 0.0f));
	CHECK(u32(TIR_OP_SIGMOID, 0) == 0.5f && u32(TIR_OP_SIGMOID, -0.0f) == 0.5f);
	CHECK(u32(TIR_OP_SIGMOID, 100) == 1 && u32(TIR_OP_SIGMOID, -100) > 0);
	CHECK(u32(TIR_OP_SIGMOID, -200) == 0 && isnan(u32(TIR_OP_SIGMOID, NAN)));
	CHECK(u64(TIR_OP_SIGMOID, -800) == 0 && u64(TIR_OP_SIGMOID, 800) == 1);
	CHECK(u32(TIR_OP_SILU, 100) == 100 && u32(TIR_OP_SILU, -200) == 0);
	CHECK(u64(TIR_OP_SILU, 800) == 800 && u64(TIR_OP_SILU, -800) == 0);
	CHECK(u32(TIR_OP_SILU, INFINITY) == INFINITY && isnan(u32(TIR_OP_SILU, NAN)));
	CHECK(u32(TIR_OP_GELU, 100) == 100 && u32(TIR_OP_GELU, -100) == 0);
	/* log1p and expm1: exact near 0 where log(1 + x) and exp(x) - 1 lose x */
	CHECK(u32(TIR_OP_LOG1P, -1) == -INFINITY && isnan(u32(TIR_OP_LOG1P, -2)) && u64(TIR_OP_LOG1P, INFINITY) == INFINITY);
	CHECK(u32(TIR_OP_LOG1P, 1e-30f) == 1e-30f && u64(TIR_OP_LOG1P, 1e-300) == 1e-300);
	CHECK(u32(TIR_OP_EXPM1, -INFINITY) == -1 && u64(TIR_OP_EXPM1, 1e-300) == 1e-300);
	CHECK(same_f32(u32(TIR_OP_EXPM1, -0.0f), -0.0f) && u64(TIR_OP_EXPM1, 1000) == INFINITY);
	CHECK(u64(TIR_OP_GELU, 800) == 800 && u64(TIR_OP_GELU, -800) == 0);
	CHECK(u32(TIR_OP_GELU, INFINITY) == INFINITY && same_f32(u32(TIR_OP_GELU, 0), 0.0f));
	/* the tail that 1 + erf would lose: gelu(-10) = -7.6e-23 */
	CHECK(fabs(u32(TIR_OP_GELU, -10) / -7.6198530241604696e-23 - 1) < 1e-4);
	/* relu, sign, round, floor, ceil, abs: NaN and signed zeros */
	CHECK(same_f32(u32(TIR_OP_RELU, -0.0f), 0.0f) && isnan(u32(TIR_OP_RELU, NAN)));
	CHECK(same_f64(u64(TIR_OP_RELU, -5), 0.0) && u64(TIR_OP_RELU, INFINITY) == INFINITY);
	CHECK(same_f32(u32(TIR_OP_SIGN, -0.0f), 0.0f) && isnan(u32(TIR_OP_SIGN, NAN)));
	CHECK(u32(TIR_OP_SIGN, -FLT_TRUE_MIN) == -1 && u64(TIR_OP_SIGN, INFINITY) == 1);
	CHECK(u32(TIR_OP_ROUND, 2.5f) == 2 && u32(TIR_OP_ROUND, 3.5f) == 4);
	CHECK(same_f32(u32(TIR_OP_ROUND, -0.5f), -0.0f) && u64(TIR_OP_ROUND, -2.5) == -2);
	CHECK(u64(TIR_OP_ROUND, 0x1.fffffffffffffp51) == 0x1p52);
	CHECK(same_f32(u32(TIR_OP_FLOOR, -0.0f), -0.0f) && u32(TIR_OP_FLOOR, -0.5f) == -1);
	CHECK(same_f64(u64(TIR_OP_CEIL, -0.5), -0.0) && u64(TIR_OP_CEIL, 0.5) == 1);
	CHECK(same_f32(u32(TIR_OP_ABS, -0.0f), 0.0f) && u32(TIR_OP_ABS, -INFINITY) == INFINITY);
	CHECK(same_f32(u32(TIR_OP_NEG, 0.0f), -0.0f));

	/* maximum/minimum: NaN from either side; a tie gives b */
	CHECK(isnan(b32(TIR_OP_MAXIMUM, NAN, 1)) && isnan(b32(TIR_OP_MAXIMUM, 1, NAN)));
	CHECK(isnan(b64(TIR_OP_MINIMUM, NAN, 1)) && isnan(b64(TIR_OP_MINIMUM, 1, NAN)));
	CHECK(same_f32(b32(TIR_OP_MAXIMUM, -0.0f, 0.0f), 0.0f));
	CHECK(same_f32(b32(TIR_OP_MAXIMUM, 0.0f, -0.0f), -0.0f));
	CHECK(b64(TIR_OP_MINIMUM, -INFINITY, 3) == -INFINITY);
	/* mod: the divisor's sign, np.mod (NumPy 1.24: np.mod(-5.5, 2) = 0.5,
	 * np.mod(5.5, -2) = -0.5, np.mod(-4, 2) = 0.0, np.mod(4, -2) = -0.0,
	 * np.mod(1, 0) = nan, np.mod(inf, 2) = nan, np.mod(-1, inf) = inf) */
	CHECK(b32(TIR_OP_MOD, -5.5f, 2) == 0.5f && b32(TIR_OP_MOD, 5.5f, -2) == -0.5f);
	CHECK(same_f32(b32(TIR_OP_MOD, -4, 2), 0.0f) && same_f32(b32(TIR_OP_MOD, 4, -2), -0.0f));
	CHECK(isnan(b32(TIR_OP_MOD, 1, 0)) && isnan(b64(TIR_OP_MOD, INFINITY, 2)));
	CHECK(b64(TIR_OP_MOD, -1, INFINITY) == INFINITY);
	CHECK(b64(TIR_OP_MOD, 1e300, 3) == fmod(1e300, 3));
	CHECK(b32(TIR_OP_MOD, 1e38f, 1e-38f) == mod_f32(1e38f, 1e-38f));
	/* pow: C99 Annex F's special cases */
	CHECK(b32(TIR_OP_POW, NAN, 0) == 1 && b32(TIR_OP_POW, 1, NAN) == 1);
	CHECK(b32(TIR_OP_POW, -1, INFINITY) == 1 && isnan(b32(TIR_OP_POW, -8, 1.0f / 3)));
	CHECK(same_f32(b32(TIR_OP_POW, -0.0f, 3), -0.0f) && b32(TIR_OP_POW, -0.0f, -3) == -INFINITY);
	CHECK(b32(TIR_OP_POW, 0, -2) == INFINITY && b32(TIR_OP_POW, -2, 3) == -8);
	CHECK(b32(TIR_OP_POW, 0.5f, INFINITY) == 0 && b32(TIR_OP_POW, 2, -INFINITY) == 0);
	CHECK(same_f32(b32(TIR_OP_POW, -INFINITY, -3), -0.0f));
	CHECK(b32(TIR_OP_POW, -INFINITY, 2) == INFINITY);
	CHECK(b64(TIR_OP_POW, 2, 0.5) == sqrt(2.0) && b64(TIR_OP_POW, 10, 2) == 100);
	CHECK(b64(TIR_OP_POW, 2, 1024) == INFINITY && b64(TIR_OP_POW, 2, -1074) == 0x1p-1074);
	CHECK(b64(TIR_OP_POW, 3, 40) == 12157665459056928801.0);
}

/* ---- 4. tails, n = 0, unaligned pointers, dst == src ---- */

enum { NT = 300 };

static void test_tails(void)
{
	static const int lens[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65,
				   255, 256, 257, 290};
	float x[NT], full[NT], buf[NT + 8], b[NT], fb[NT];
	double xd[NT], fulld[NT], bufd[NT + 8], bd[NT], fbd[NT];
	gen_f32(x, NT);
	gen_f64(xd, NT);
	for (int i = 0; i < NT; i++) {
		b[i] = (float)unif(-3, 3);
		bd[i] = unif(-3, 3);
	}
	for (int pi = 0; pi < npaths; pi++) {
		enum tir_vmath_path p = (enum tir_vmath_path)paths[pi];
		int bad = 0;
		for (int k = 0; k < NUNARY + NBINARY; k++) {
			bool bin = k >= NUNARY;
			enum tir_op op = bin ? binary_ops[k - NUNARY] : unary_ops[k];
			if (bin) {
				tir_vmath2_f32_on(p, op, full, x, b, NT);
				tir_vmath2_f64_on(p, op, fulld, xd, bd, NT);
			} else {
				tir_vmath_f32_on(p, op, full, x, NT);
				tir_vmath_f64_on(p, op, fulld, xd, NT);
			}
			for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
				for (int off = 0; off < 4; off++) {
					int n = lens[li];
					/* dst at another misalignment; guards around it */
					float *o = buf + 1 + (off + 1) % 4;
					double *od = bufd + 1 + (off + 1) % 4;
					for (int i = 0; i < NT + 8; i++) {
						buf[i] = 12345;
						bufd[i] = 12345;
					}
					if (bin) {
						tir_vmath2_f32_on(p, op, o, x + off, b + off, n);
						tir_vmath2_f64_on(p, op, od, xd + off, bd + off, n);
					} else {
						tir_vmath_f32_on(p, op, o, x + off, n);
						tir_vmath_f64_on(p, op, od, xd + off, n);
					}
					for (int i = 0; i < n; i++)
						bad += !same_f32(o[i], full[off + i]) +
						       !same_f64(od[i], fulld[off + i]);
					bad += o[-1] != 12345 || o[n] != 12345;
					bad += od[-1] != 12345 || od[n] != 12345;
					/* in place: dst == src (dst == a, dst == b) */
					memcpy(o, x + off, (size_t)n * sizeof *o);
					memcpy(od, xd + off, (size_t)n * sizeof *od);
					if (bin) {
						tir_vmath2_f32_on(p, op, o, o, b + off, n);
						tir_vmath2_f64_on(p, op, od, od, bd + off, n);
					} else {
						tir_vmath_f32_on(p, op, o, o, n);
						tir_vmath_f64_on(p, op, od, od, n);
					}
					for (int i = 0; i < n; i++)
						bad += !same_f32(o[i], full[off + i]) +
						       !same_f64(od[i], fulld[off + i]);
					if (!bin)
						continue;
					memcpy(fb, b + off, (size_t)n * sizeof *fb);
					memcpy(fbd, bd + off, (size_t)n * sizeof *fbd);
					tir_vmath2_f32_on(p, op, fb, x + off, fb, n);
					tir_vmath2_f64_on(p, op, fbd, xd + off, fbd, n);
					for (int i = 0; i < n; i++)
						bad += !same_f32(fb[i], full[off + i]) +
						       !same_f64(fbd[i], fulld[off + i]);
				}
			}
			/* a * a: both operands the same array, in place */
			if (bin) {
				float sq[NT];
				memcpy(sq, x, sizeof sq);
				tir_vmath2_f32_on(p, op, sq, sq, sq, NT);
				for (int i = 0; i < NT; i++) {
					float w;
					tir_vmath2_f32_on(p, op, &w, &x[i], &x[i], 1);
					bad += !same_f32(sq[i], w);
				}
			}
		}
		if (bad)
			fprintf(stderr, "%s: %d tail/alignment/in-place mismatches\n",
				path_name[p], bad);
		CHECK(bad == 0);
	}
}

/* ---- 4b. softmax's exp-and-sum pass ---- */

/* The sum as tir_vmath_expsum_f32 promises it: 8 lanes, lane 0 the tail. */
static double lanes8_sum(const float *e, int64_t n)
{
	double a[8] = {0};
	int64_t j = 0;
	for (; j + 8 <= n; j += 8)
		for (int k = 0; k < 8; k++)
			a[k] += e[j + k];
	for (; j < n; j++)
		a[0] += e[j];
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static void test_expsum(void)
{
	enum { NX = 1100 };
	static const int lens[] = {0, 1, 5, 8, 15, 16, 17, 31, 33, 100, 1024, 1100};
	float x[NX], want[NX], got[NX];
	for (int i = 0; i < NX; i++)
		x[i] = (float)unif(-30, 30);
	x[7] = -INFINITY;
	for (int pi = 0; pi < npaths; pi++) {
		enum tir_vmath_path p = (enum tir_vmath_path)paths[pi];
		int bad = 0;
		for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
			int n = lens[li];
			float m = 3.25f, d[NX];
			for (int i = 0; i < n; i++)
				d[i] = x[i] - m;
			tir_vmath_f32_on(p, TIR_OP_EXP, want, d, n);
			double s = tir_vmath_expsum_f32_on(p, got, x, m, n);
			bad += memcmp(got, want, (size_t)n * sizeof *got) != 0;
			bad += s != lanes8_sum(want, n);
			memcpy(got, x, sizeof got);   /* in place */
			s = tir_vmath_expsum_f32_on(p, got, got, m, n);
			bad += memcmp(got, want, (size_t)n * sizeof *got) != 0;
			bad += s != lanes8_sum(want, n);
		}
		if (bad)
			fprintf(stderr, "%s: expsum: %d mismatches\n", path_name[p], bad);
		CHECK(bad == 0);
	}
	/* the chosen path, and f64 through it */
	double xd[64], dd[64], wd[64], md = -1.5;
	float y[64];
	for (int i = 0; i < 64; i++) {
		xd[i] = unif(-30, 30);
		dd[i] = xd[i] - md;
	}
	tir_vmath_f64(TIR_OP_EXP, wd, dd, 61);
	double sd = tir_vmath_expsum_f64(dd, xd, md, 61), w = 0, a[8] = {0};
	for (int i = 0; i < 56; i++)
		a[i % 8] += wd[i];
	for (int i = 56; i < 61; i++)
		a[0] += wd[i];
	w = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
	CHECK(sd == w && memcmp(dd, wd, 61 * sizeof *dd) == 0);
	CHECK(tir_vmath_expsum_f32(y, x, 0, 0) == 0);
}

/* ---- 4c. layernorm's moments ---- */

static void test_moments(void)
{
	enum { NX = 1100 };
	static const int lens[] = {0, 1, 7, 8, 9, 16, 17, 24, 100, 1024, 1100};
	float x[NX];
	double xd[NX];
	for (int i = 0; i < NX; i++) {
		x[i] = (float)unif(-3, 5);
		xd[i] = unif(-3, 5);
	}
	int bad = 0;
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		int n = lens[li];
		double c = n ? x[0] : 0, s1, s2, t1, t2;
		/* s1 has only adds: the lane order exactly */
		double a[16] = {0};
		long double q = 0;
		int j = 0;
		for (; j + 16 <= n; j += 16)
			for (int k = 0; k < 16; k++)
				a[k] += (double)x[j + k] - c;
		for (; j + 8 <= n; j += 8)
			for (int k = 0; k < 8; k++)
				a[k] += (double)x[j + k] - c;
		for (; j < n; j++)
			a[0] += (double)x[j] - c;
		for (int k = 0; k < 8; k++)
			a[k] += a[k + 8];
		double w1 = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
		for (int i = 0; i < n; i++)
			q += ((long double)x[i] - c) * ((long double)x[i] - c);
		tir_vmath_moments_f32(x, n, c, &s1, &s2);
		bad += s1 != w1 || fabsl(s2 - q) > 1e-13L * q;
		tir_vmath_moments_f64(xd, n, 0.5, &t1, &t2);
		long double w2 = 0, w3 = 0;
		for (int i = 0; i < n; i++) {
			w2 += (long double)xd[i] - 0.5L;
			w3 += ((long double)xd[i] - 0.5L) * ((long double)xd[i] - 0.5L);
		}
		bad += fabsl(t1 - w2) > 1e-12L * (fabsl(w2) + n) || fabsl(t2 - w3) > 1e-13L * w3;
	}
	if (bad)
		fprintf(stderr, "moments: %d mismatches\n", bad);
	CHECK(bad == 0);

	/* the normalization: within a float rounding of the double formula */
	float w[NX], b[NX], o[NX];
	for (int i = 0; i < NX; i++) {
		w[i] = (float)unif(-2, 2);
		b[i] = (float)unif(-2, 2);
	}
	int far = 0;
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		int n = lens[li];
		for (int withb = 0; withb < 2; withb++) {
			double mean = withb ? 0.7 : 0, r = 1.3;
			tir_vmath_norm_f32(o, x, w, withb ? b : NULL, mean, r, n);
			for (int i = 0; i < n; i++) {
				float z = (float)(((double)x[i] - mean) * r) * w[i];
				float want = withb ? z + b[i] : z;
				far += fabsf(o[i] - want) > 2 * fabsf(want) * FLT_EPSILON + FLT_MIN;
			}
		}
	}
	double od[64], wd[64];
	for (int i = 0; i < 64; i++)
		wd[i] = 1.5;
	tir_vmath_norm_f64(od, xd, wd, NULL, 0, 2, 64);
	for (int i = 0; i < 64; i++)
		far += od[i] != xd[i] * 2 * 1.5;
	if (far)
		fprintf(stderr, "norm: %d values off\n", far);
	CHECK(far == 0);
}

/* ---- 4d. the one-value binary functions (tir_vmath_binary_scalar_fn):
 * bitwise the array function over copies, signed zeros and NaN payloads
 * included, either side, over tails and in place ---- */

/* tir_vmath_binary_arith: for every op that names a C operator, that
 * operator on each element gives what each path's binary function does
 * (the same bits; a NaN a NaN), f32 and f64; the others name none. */
static void test_arith(void)
{
	enum { N = 64 };
	int named = 0;
	CHECK(tir_vmath_binary_arith(TIR_OP_ADD) == '+' && tir_vmath_binary_arith(TIR_OP_DIV) == '/');
	CHECK(!tir_vmath_binary_arith(TIR_OP_POW) && !tir_vmath_binary_arith(TIR_OP_MAXIMUM) &&
	      !tir_vmath_binary_arith(TIR_OP_TANH) && !tir_vmath_binary_arith(TIR_OP_COUNT));
	for (int op = 0; op < TIR_OP_COUNT; op++) {
		char c = tir_vmath_binary_arith((enum tir_op)op);
		if (!c)
			continue;
		named++;
		CHECK(c == '+' || c == '-' || c == '*' || c == '/');
		float a[N], b[N], r[N];
		double ad[N], bd[N], rd[N];
		for (int i = 0; i < N; i++) {
			double u = i % 9 == 0 ? 0.0 : i % 10 == 0 ? INFINITY : i % 17 == 0 ? NAN : unif(-4, 4);
			double v = i % 5 == 0 ? -0.0 : i % 12 == 0 ? -INFINITY : unif(-1e-3, 1e3);
			a[i] = (float)u, b[i] = (float)v, ad[i] = u * 1.0000001, bd[i] = v / 3;
		}
		for (int pi = 0; pi < npaths; pi++) {
			enum tir_vmath_path p = (enum tir_vmath_path)paths[pi];
			tir_vmath2_f32_on(p, (enum tir_op)op, r, a, b, N);
			tir_vmath2_f64_on(p, (enum tir_op)op, rd, ad, bd, N);
			for (int i = 0; i < N; i++) {
				float x = a[i], y = b[i];
				double xd = ad[i], yd = bd[i];
				float w = c == '+' ? x + y : c == '-' ? x - y : c == '*' ? x * y : x / y;
				double wd = c == '+' ? xd + yd : c == '-' ? xd - yd : c == '*' ? xd * yd : xd / yd;
				CHECK(same_or_nan_f32(r[i], w));
				CHECK(same_or_nan_f64(rd[i], wd));
			}
		}
	}
	CHECK(named == 4);
}

/* ---- 7. of two NaNs, + and * return the first operand's ----
 * On every path, at every position of a call (the unrolled loop, the one
 * after it, the tail), with one operand one value (either side), and in
 * vmath.h's one-element tir_vm_add ... that vm.c applies itself: the
 * result is a's NaN, sign and payload, never b's.  The compiler may
 * commute a C + or *, and did so in one loop of a function and not in
 * the other (GCC -O1 with ASan): a fused run then gave an element
 * another NaN than the unfused run, whose calls cut the array elsewhere. */
static uint32_t nan_f32(uint32_t sign, uint32_t pay)
{
	return sign << 31 | 0x7fc00000u | (pay & 0x3fffffu);
}

static uint64_t nan_f64(uint64_t sign, uint64_t pay)
{
	return sign << 63 | 0x7ff8000000000000ull | (pay & 0x7ffffffffffffull);
}

static void test_nan_order(void)
{
	enum { N = 300 };
	static const enum tir_op ops[] = {TIR_OP_ADD, TIR_OP_MUL};
	uint32_t a[N], b[N], r[N];
	uint64_t ad[N], bd[N], rd[N];
	for (int i = 0; i < N; i++) {
		a[i] = nan_f32((uint32_t)i & 1, 0x1000u + (uint32_t)i);
		b[i] = nan_f32(~(uint32_t)i & 1, 0x2000u + (uint32_t)i);
		ad[i] = nan_f64((uint64_t)i & 1, 0x1000u + (uint64_t)i);
		bd[i] = nan_f64(~(uint64_t)i & 1, 0x2000u + (uint64_t)i);
	}
	int bad = 0;
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		for (int pi = 0; pi < npaths; pi++) {
			enum tir_vmath_path p = (enum tir_vmath_path)paths[pi];
			for (int n = 1; n <= N; n += n < 70 ? 1 : 23) {
				for (int off = 0; off < 2 && off + n <= N; off++) {
					tir_vmath2_f32_on(p, ops[k], (float *)r, (const float *)(a + off),
							  (const float *)(b + off), n);
					tir_vmath2_f64_on(p, ops[k], (double *)rd, (const double *)(ad + off),
							  (const double *)(bd + off), n);
					for (int i = 0; i < n; i++) {
						bad += r[i] != a[off + i];
						bad += rd[i] != ad[off + i];
					}
				}
			}
			if (bad)
				fprintf(stderr, "nan order: %s op %d: %d elements took b's NaN\n",
					path_name[p], (int)ops[k], bad);
			CHECK(bad == 0);
			bad = 0;
		}
		/* one operand one value, on the process's path */
		for (int kk = 0; kk < 2; kk++) {
			tir_vmath2_fn f = tir_vmath_binary_scalar_fn(ops[k], TIR_DTYPE_F32, kk);
			tir_vmath2_fn fd = tir_vmath_binary_scalar_fn(ops[k], TIR_DTYPE_F64, kk);
			CHECK(f && fd);
			if (!f || !fd)
				continue;
			uint32_t c = kk ? b[7] : a[7];
			uint64_t cd = kk ? bd[7] : ad[7];
			f(r, kk ? (const void *)a : &c, kk ? (const void *)&c : b, N);
			fd(rd, kk ? (const void *)ad : &cd, kk ? (const void *)&cd : bd, N);
			for (int i = 0; i < N; i++) {
				bad += r[i] != (kk ? a[i] : c);
				bad += rd[i] != (kk ? ad[i] : cd);
			}
			CHECK(bad == 0);
			bad = 0;
		}
		/* one element, as vm.c computes a scalar statement */
		for (int i = 0; i < N; i++) {
			float x, y, z;
			double xd, yd, zd;
			memcpy(&x, &a[i], 4), memcpy(&y, &b[i], 4);
			memcpy(&xd, &ad[i], 8), memcpy(&yd, &bd[i], 8);
			z = ops[k] == TIR_OP_ADD ? tir_vm_addf(x, y) : tir_vm_mulf(x, y);
			zd = ops[k] == TIR_OP_ADD ? tir_vm_adds(xd, yd) : tir_vm_muls(xd, yd);
			bad += memcmp(&z, &a[i], 4) != 0;
			bad += memcmp(&zd, &ad[i], 8) != 0;
		}
		CHECK(bad == 0);
	}
}

static void test_scalar_fn(void)
{
	static const enum tir_op ops[] = {TIR_OP_ADD, TIR_OP_SUB, TIR_OP_MUL, TIR_OP_DIV, TIR_OP_POW};
	static const double cs[] = {0.0, -0.0, 1.5, -2.0, 3e-39, INFINITY, -INFINITY, NAN, -NAN};
	enum { N = 77 };
	for (int t = 0; t < 2; t++) {
		enum tir_dtype dt = t ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
		size_t sz = t ? 8 : 4;
		unsigned char x[N * 8], c[8], cc[N * 8], want[N * 8], got[N * 8];
		for (int i = 0; i < N; i++) {
			double v = i % 7 == 0 ? NAN : i % 11 == 0 ? -INFINITY : i % 13 == 0 ? -0.0 : unif(-4, 4);
			if (t) {
				uint64_t u;
				memcpy(&u, &v, 8);
				if (i % 7 == 0)
					u |= (uint64_t)i;   /* NaNs with payloads */
				memcpy(x + i * 8, &u, 8);
			} else {
				float f = (float)v;
				uint32_t u;
				memcpy(&u, &f, 4);
				if (i % 7 == 0)
					u |= (uint32_t)i;
				memcpy(x + i * 4, &u, 4);
			}
		}
		CHECK(!tir_vmath_binary_scalar_fn(TIR_OP_MAXIMUM, dt, 1));
		CHECK(!tir_vmath_binary_scalar_fn(TIR_OP_ADD, TIR_DTYPE_I32, 1));
		CHECK(!tir_vmath_binary_scalar_fn(TIR_OP_ADD, dt, 2));
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			tir_vmath2_fn arr = tir_vmath_binary_fn(ops[o], dt);
			for (int k = 0; k < 2; k++) {
				tir_vmath2_fn one = tir_vmath_binary_scalar_fn(ops[o], dt, k);
				CHECK(one != NULL);
				if (!one)
					continue;
				for (size_t q = 0; q < sizeof cs / sizeof cs[0]; q++) {
					if (t) {
						uint64_t u;
						memcpy(&u, &cs[q], 8);
						if (q == 8)
							u |= 0x123u;   /* a payload */
						memcpy(c, &u, 8);
					} else {
						float f = (float)cs[q];
						uint32_t u;
						memcpy(&u, &f, 4);
						if (q == 8)
							u |= 0x123u;
						memcpy(c, &u, 4);
					}
					for (int i = 0; i < N; i++)
						memcpy(cc + i * sz, c, sz);
					for (int n = 0; n <= N; n += n < 20 ? 1 : 19) {
						arr(want, k ? x : cc, k ? cc : x, n);
						one(got, k ? x : c, k ? c : x, n);
						CHECK(memcmp(want, got, (size_t)n * sz) == 0);
					}
					arr(want, k ? x : cc, k ? cc : x, N);
					memcpy(got, x, N * sz);   /* in place */
					one(got, k ? got : c, k ? c : got, N);
					CHECK(memcmp(want, got, N * sz) == 0);
				}
			}
		}
	}
}

/* ---- 5. the choice: TIR_VMATH, in child processes (it is made once) ----
 * Every per-ISA build follows it: reduce.c's, rows.c's and vm.c's builds
 * are the path's, fused runs print what --no-fuse runs print on it, and
 * reductions (the same lanes in every build) give the same bits on every
 * path. */

/* reduce.c's vector loops, inner and outer axes, f32 and f64 */
static const char prog_reduce[] =
	"x = randn([67, 1003], seed=1)\n"
	"d = randn([67, 1003], seed=2, dtype=f64)\n"
	"print sum(x, axis=1), max(x, axis=1), min(x, axis=1), sum(x, axis=0), mean(x)\n"
	"print sum(d, axis=1), max(d, axis=1), min(d, axis=1), sum(d, axis=0), mean(d)\n";
/* rows.c (softmax, layernorm); a root of >= 8 MiB read by three kernels
 * (vm.c's non-temporal stores, nt_copy); values per row spread over short
 * rows for an op without a one-value function (vm.c's spread) */
static const char prog_fused[] =
	"x = randn([2048, 1200], seed=11)\n"
	"w = rand([1200], seed=12) + 0.5\n"
	"b = rand([1200], seed=13)\n"
	"mu = mean(x, axis=-1, keepdims=true)\n"
	"d = x - mu\n"
	"v = mean(d * d, axis=-1, keepdims=true)\n"
	"y = d * rsqrt(v + 1e-5) * w + b\n"
	"print sum(y, axis=0), max(y, axis=-1), sum(y)\n"
	"print sum(softmax(slice(x, stop=7), axis=-1), axis=-1)\n"
	"print layernorm(slice(x, stop=5) * 3 + 1, w, b)\n"
	"z = randn([300, 50], seed=3)\n"
	"print maximum(z, mean(z, axis=-1, keepdims=true)) * 2, exp(z) * rand([300, 1], seed=4)\n";

/* FNV-1a over the bytes of every result of src, run fused or not; 0 when
 * it does not run */
static uint64_t run_hash(const char *src, bool fuse)
{
	struct tir_program *p = tir_program_new();
	uint64_t h = 0;
	if (!p || tir_program_parse(p, "t.tir", src, strlen(src), 0) != 0)
		goto out;
	struct tir_exec *x = tir_exec_new(p);
	struct tir_err e = {0};
	tir_exec_set_fuse(x, fuse);
	if (x && tir_exec_run(x, 0, NULL, 0, &e) == 0) {
		h = 0xcbf29ce484222325u;
		for (size_t i = 0; i < tir_exec_nresults(x); i++) {
			const struct tir_tensor *t = tir_exec_result(x, i);
			struct tir_tensor c;
			/* contiguous, to see the elements alone */
			if (tir_tensor_alloc(&c, t->dtype, t->rank, t->shape, false, &e) ||
			    tir_k_copy(t, &c)) {
				h = 0;
				break;
			}
			const unsigned char *q = tir_tensor_data(&c);
			for (int64_t k = 0; k < tir_tensor_numel(&c) * (int64_t)tir_dtype_size(c.dtype); k++)
				h = (h ^ q[k]) * 0x100000001b3u;
			tir_tensor_release(&c);
		}
	}
	tir_exec_free(x);
out:
	tir_program_free(p);
	return h;
}

/* The child for TIR_VMATH=want (NULL: unset) expecting path expect: 0, or
 * what went wrong (the parent says it); the reductions' hash to fd. */
static int choice_child(const char *want, int expect, int fd)
{
	if (want)
		setenv("TIR_VMATH", want, 1);
	else
		unsetenv("TIR_VMATH");
	struct tir_err e = {0};
	int rc = tir_vector_path_check(&e);
	bool known = !want || !strcmp(want, "") || !strcmp(want, "auto");
	for (int k = 0; k < TIR_VMATH_PATH_COUNT; k++)
		known |= want && !strcmp(want, path_name[k]);
	if (known ? rc != 0
		  : rc != -TIR_EUNSUPPORTED ||
			    strcmp(e.msg, "TIR_VMATH=bogus: unknown vector path (scalar, sse2, avx2, avx512)"))
		return 1;
	if (strcmp(tir_vector_path(), path_name[expect]) || (int)tir_vmath_path() != expect)
		return 2;
	const char *build = !TIR_ISA_X86 || expect < TIR_VMATH_AVX2 ? "gen"
			    : expect == TIR_VMATH_AVX2 ? "a2" : "a5";
	if (strcmp(tir_reduce_build(), build) || strcmp(tir_rows_build(), build) ||
	    strcmp(tir_fused_build(), build))
		return 3;
	uint64_t h = run_hash(prog_reduce, true);
	if (h == 0 || h != run_hash(prog_reduce, false))
		return 4;
	uint64_t f = run_hash(prog_fused, true);
	if (f == 0 || f != run_hash(prog_fused, false))
		return 5;
	if (write(fd, &h, sizeof h) != (ssize_t)sizeof h)
		return 6;
	return 0;
}

static void test_choice(void)
{
	int best = TIR_VMATH_PATH_COUNT - 1;
	while (best > 0 && !tir_vmath_path_ok((enum tir_vmath_path)best))
		best--;
	static const char *const want[] = {"scalar", "sse2", "avx2", "avx512", "auto", "", "bogus", NULL};
	static const char *const what[] = {
		"", "tir_vector_path_check", "the path", "a build (reduce, rows or vm) not the path's",
		"reductions: fused differ from --no-fuse", "fused differ from --no-fuse", "pipe",
	};
	uint64_t h0 = 0;
	for (int k = 0; k < (int)(sizeof want / sizeof want[0]); k++) {
		int expect = k < TIR_VMATH_PATH_COUNT ? k : best;
		while (expect > 0 && !tir_vmath_path_ok((enum tir_vmath_path)expect))
			expect--;
		int fd[2];
		CHECK(pipe(fd) == 0);
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			close(fd[0]);
			_exit(choice_child(want[k], expect, fd[1]));
		}
		close(fd[1]);
		uint64_t h = 0;
		CHECK(read(fd[0], &h, sizeof h) == (ssize_t)sizeof h);
		close(fd[0]);
		int st = -1;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) > 0 && WEXITSTATUS(st) < 7)
			fprintf(stderr, "TIR_VMATH=%s: %s\n", want[k] ? want[k] : "(unset)",
				what[WEXITSTATUS(st)]);
		/* the same bits on every path */
		if (k == 0)
			h0 = h;
		CHECK(h == h0);
	}
	CHECK(tir_vmath_path_ok(TIR_VMATH_SCALAR));
	CHECK(tir_vmath_unary_op(TIR_OP_GELU) && !tir_vmath_unary_op(TIR_OP_NOT));
	CHECK(tir_vmath_binary_op(TIR_OP_MOD) && !tir_vmath_binary_op(TIR_OP_LT));
}

/* ---- 6. the reference kernels compute through vmath ---- */

static struct tir_tensor mk(enum tir_dtype dt, int rank, const int64_t *shape)
{
	struct tir_tensor t;
	if (tir_tensor_alloc(&t, dt, rank, shape, true, &err)) {
		fprintf(stderr, "alloc failed: %s\n", err.msg);
		exit(1);
	}
	return t;
}

static void test_kernels(void)
{
	enum { R = 37, C = 1100 };   /* C > TIR_VMATH_BLOCK: gathers in blocks */
	int64_t shape[2] = {R, C}, tshape[2] = {C, R}, col[2] = {R, 1};
	for (int dti = 0; dti < 2; dti++) {
		enum tir_dtype dt = dti ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
		size_t sz = tir_dtype_size(dt);
		struct tir_tensor x = mk(dt, 2, shape), y = mk(dt, 2, col);
		if (dt == TIR_DTYPE_F32) {
			gen_f32(tir_tensor_data(&x), R * C);
			gen_f32(tir_tensor_data(&y), R);
		} else {
			gen_f64(tir_tensor_data(&x), R * C);
			gen_f64(tir_tensor_data(&y), R);
		}
		/* xt: the transpose (runs of stride C), copied contiguous as xc */
		struct tir_tensor xt, xc = mk(dt, 2, tshape), out = mk(dt, 2, tshape);
		int perm[2] = {1, 0};
		tir_view_transpose(&x, perm, &xt);
		CHECK(tir_k_copy(&xt, &xc) == 0);
		void *want = malloc((size_t)R * C * sz);
		if (!want)
			abort();
		int bad = 0;
		for (int k = 0; k < NUNARY; k++) {
			CHECK(tir_k_unary(unary_ops[k], &xt, &out, &err) == 0);
			if (dt == TIR_DTYPE_F32)
				tir_vmath_f32(unary_ops[k], want, tir_tensor_data(&xc), R * C);
			else
				tir_vmath_f64(unary_ops[k], want, tir_tensor_data(&xc), R * C);
			bad += memcmp(want, tir_tensor_data(&out), (size_t)R * C * sz) != 0;
		}
		/* binary: x (contiguous) with y broadcast along rows (stride 0),
		 * and y broadcast with the transpose */
		struct tir_tensor yb, yc = mk(dt, 2, shape), o2 = mk(dt, 2, shape);
		tir_view_broadcast(&y, 2, shape, &yb);
		CHECK(tir_k_copy(&yb, &yc) == 0);
		struct tir_tensor xtt, xtc = mk(dt, 2, shape);
		tir_view_transpose(&xc, perm, &xtt);   /* = x, strided */
		CHECK(tir_k_copy(&xtt, &xtc) == 0);
		for (int k = 0; k < NBINARY; k++) {
			enum tir_op op = binary_ops[k];
			for (int v = 0; v < 3; v++) {
				/* v 0: x op yb; 1: yb op x; 2: x^T^T (strided) op yb */
				const struct tir_tensor *a = v == 1 ? &yb : v == 2 ? &xtt : &x;
				const struct tir_tensor *b = v == 1 ? &x : &yb;
				const void *ac = v == 1 ? tir_tensor_data(&yc)
					       : v == 2 ? tir_tensor_data(&xtc) : tir_tensor_data(&x);
				const void *bc = v == 1 ? tir_tensor_data(&x) : tir_tensor_data(&yc);
				CHECK(tir_k_binary(op, a, b, &o2, &err) == 0);
				if (dt == TIR_DTYPE_F32)
					tir_vmath2_f32(op, want, ac, bc, R * C);
				else
					tir_vmath2_f64(op, want, ac, bc, R * C);
				bad += memcmp(want, tir_tensor_data(&o2), (size_t)R * C * sz) != 0;
			}
		}
		if (bad)
			fprintf(stderr, "%s kernels: %d ops differ from vmath\n", tir_dtype_name(dt),
				bad);
		CHECK(bad == 0);
		free(want);
		struct tir_tensor *ts[] = {&x, &y, &xt, &xc, &out, &yb, &yc, &o2, &xtt, &xtc};
		for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
			tir_tensor_release(ts[i]);
	}
}

int main(void)
{
	const char *v = getenv("TIR_TEST_VERBOSE");
	verbose = v && *v && strcmp(v, "0") != 0;
	test_choice();   /* first: the children choose before the parent does */
	for (int p = 0; p < TIR_VMATH_PATH_COUNT; p++)
		if (tir_vmath_path_ok((enum tir_vmath_path)p))
			paths[npaths++] = p;
	if (verbose)
		fprintf(stderr, "vmath: path %s; %d paths compared\n", tir_vector_path(), npaths);
	test_agree();
	for (int pi = 0; pi < npaths; pi++) {
		cur_path = (enum tir_vmath_path)paths[pi];
		test_accuracy(cur_path);
		test_special();
	}
	test_tails();
	test_expsum();
	test_moments();
	test_kernels();
	test_scalar_fn();
	test_arith();
	test_nan_order();
	return check_report("test_vmath");
}
