/*
 * vmath.c — the float elementwise functions over contiguous arrays
 * (vmath.h): SLEEF's deterministic vector functions for the
 * transcendentals, plain C that the compiler vectorizes for the rest, and
 * four dispatch paths (AVX-512F, AVX2, SSE2, portable C) that agree bit
 * for bit.  Not here: strides, tensors, integer ops (elementwise.c).
 *
 * Why the paths agree:
 *  - every transcendental is a SLEEF "cinz" function (consistent, no FMA):
 *    its purec, SSE2, AVX and AVX-512F ("nofma") builds do the same
 *    operations in the same order, so they return the same bits; test_vmath
 *    checks each.  (SLEEF 3.5 has no cinz build for AVX2+FMA; the AVX2 path
 *    calls the AVX one.)
 *  - everything else is IEEE basic operations (+ - * / sqrt, compares,
 *    floor, ...), correctly rounded at any vector width; fp-contract is off,
 *    so no path fuses a multiply-add the others do not.
 *  - each composite op (sigmoid, silu, gelu, rsqrt, mod) is written once,
 *    below, and all paths compile that one text.
 *  - a NaN result is always the default quiet NaN (+, payload 0): SLEEF's
 *    builds, libm and the vector units disagree on NaN signs and payloads
 *    (log(-1), floor of a signalling NaN, a NaN op a NaN).
 */
#include "vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* "cheap": GCC's -O2 model vectorizes no loop with a remainder. */
#pragma GCC optimize("vect-cost-model=cheap", "fp-contract=off")
#endif

/* The vector paths need GCC's target attribute and x86-64; elsewhere only
 * the portable C path (SLEEF's purec builds) exists.  sleef.h declares its
 * x86 functions only when the ISA's macros are on, which the target pragma
 * does for the include. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VM_X86 1
#include <immintrin.h>      /* first: each intrinsic keeps its own ISA */
#pragma GCC push_options
#pragma GCC target("avx512f")
#include <sleef.h>
#pragma GCC pop_options
#define VM_AVX2 __attribute__((target("avx2")))
#define VM_AVX512 __attribute__((target("avx512f")))
#else
#define VM_X86 0
#include <sleef.h>
#endif

#define VM_INLINE static inline __attribute__((always_inline))
#define VM_NO_TARGET

/* An elementwise loop: dst may equal a source, which is no loop-carried
 * dependence (element i is read before it is written), so vectorize. */
#define EACH(n) _Pragma("GCC ivdep") for (int64_t i = 0; i < (n); i++)

/* out[i] = EXPR (of i) for i < n, a NaN made the default one. */
#define MAP(T, n, out, EXPR)                                                 \
	do {                                                                 \
		EACH(n) {                                                    \
			T v_ = (EXPR);                                       \
			(out)[i] = v_ != v_ ? (T)NAN : v_;                   \
		}                                                            \
	} while (0)

/* ---- primitives: one function over an array, per path ----
 * The transcendentals and sqrt, plus pow for the binary ops; NaN results
 * made the default NaN.  A vector path runs whole vectors, then the tail in
 * a zero-padded vector, so every element goes through the same vector
 * function. */

enum { P_EXP, P_LOG, P_SIN, P_COS, P_EXPM1, P_ERF, P_ERFC, P_SQRT, P_COUNT };

struct vm_prims_f32 {
	void (*u[P_COUNT])(float *d, const float *s, int64_t n);
	void (*pow)(float *d, const float *a, const float *b, int64_t n);
};

struct vm_prims_f64 {
	void (*u[P_COUNT])(double *d, const double *s, int64_t n);
	void (*pow)(double *d, const double *a, const double *b, int64_t n);
};

#define PRIMS(P, S)                                                          \
	{                                                                    \
		.u = {                                                       \
			[P_EXP] = P##_exp_##S, [P_LOG] = P##_log_##S,        \
			[P_SIN] = P##_sin_##S, [P_COS] = P##_cos_##S,        \
			[P_EXPM1] = P##_expm1_##S, [P_ERF] = P##_erf_##S,      \
			[P_ERFC] = P##_erfc_##S, [P_SQRT] = P##_sqrt_##S,    \
		},                                                           \
		.pow = P##_pow_##S,                                          \
	}

#define SCALAR_U(NAME, T, FN)                                                \
	static void NAME(T *d, const T *s, int64_t n)                        \
	{                                                                    \
		MAP(T, n, d, FN(s[i]));                                      \
	}

#define SCALAR_B(NAME, T, FN)                                                \
	static void NAME(T *d, const T *a, const T *b, int64_t n)            \
	{                                                                    \
		MAP(T, n, d, FN(a[i], b[i]));                                \
	}

SCALAR_U(sc_exp_f32, float, Sleef_cinz_expf1_u10purec)
SCALAR_U(sc_log_f32, float, Sleef_cinz_logf1_u10purec)
SCALAR_U(sc_sin_f32, float, Sleef_cinz_sinf1_u10purec)
SCALAR_U(sc_cos_f32, float, Sleef_cinz_cosf1_u10purec)
SCALAR_U(sc_expm1_f32, float, Sleef_cinz_expm1f1_u10purec)
SCALAR_U(sc_erf_f32, float, Sleef_cinz_erff1_u10purec)
SCALAR_U(sc_erfc_f32, float, Sleef_cinz_erfcf1_u15purec)
SCALAR_U(sc_sqrt_f32, float, sqrtf)
SCALAR_B(sc_pow_f32, float, Sleef_cinz_powf1_u10purec)

SCALAR_U(sc_exp_f64, double, Sleef_cinz_expd1_u10purec)
SCALAR_U(sc_log_f64, double, Sleef_cinz_logd1_u10purec)
SCALAR_U(sc_sin_f64, double, Sleef_cinz_sind1_u10purec)
SCALAR_U(sc_cos_f64, double, Sleef_cinz_cosd1_u10purec)
SCALAR_U(sc_expm1_f64, double, Sleef_cinz_expm1d1_u10purec)
SCALAR_U(sc_erf_f64, double, Sleef_cinz_erfd1_u10purec)
SCALAR_U(sc_erfc_f64, double, Sleef_cinz_erfcd1_u15purec)
SCALAR_U(sc_sqrt_f64, double, sqrt)
SCALAR_B(sc_pow_f64, double, Sleef_cinz_powd1_u10purec)

static const struct vm_prims_f32 sc_prims_f32 = PRIMS(sc, f32);
static const struct vm_prims_f64 sc_prims_f64 = PRIMS(sc, f64);

#if VM_X86

/* The default NaN where a vector has NaNs, per ISA and type. */
static inline __m128 s2_canon_f32(__m128 v)
{
	__m128 m = _mm_cmpunord_ps(v, v);
	return _mm_or_ps(_mm_and_ps(m, _mm_set1_ps(NAN)), _mm_andnot_ps(m, v));
}

static inline __m128d s2_canon_f64(__m128d v)
{
	__m128d m = _mm_cmpunord_pd(v, v);
	return _mm_or_pd(_mm_and_pd(m, _mm_set1_pd(NAN)), _mm_andnot_pd(m, v));
}

static inline VM_AVX2 __m256 a2_canon_f32(__m256 v)
{
	return _mm256_blendv_ps(v, _mm256_set1_ps(NAN), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

static inline VM_AVX2 __m256d a2_canon_f64(__m256d v)
{
	return _mm256_blendv_pd(v, _mm256_set1_pd(NAN), _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
}

static inline VM_AVX512 __m512 a5_canon_f32(__m512 v)
{
	return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_ps(NAN));
}

static inline VM_AVX512 __m512d a5_canon_f64(__m512d v)
{
	return _mm512_mask_mov_pd(v, _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), _mm512_set1_pd(NAN));
}

#define VEC_U(NAME, TGT, T, L, LOAD, STORE, FIX, FN)                         \
	static TGT void NAME(T *d, const T *s, int64_t n)                    \
	{                                                                    \
		int64_t i = 0;                                               \
		for (; i + L <= n; i += L)                                   \
			STORE(d + i, FIX(FN(LOAD(s + i))));                  \
		if (i < n) {                                                 \
			T t[L] = {0};                                        \
			memcpy(t, s + i, (size_t)(n - i) * sizeof(T));       \
			STORE(t, FIX(FN(LOAD(t))));                          \
			memcpy(d + i, t, (size_t)(n - i) * sizeof(T));       \
		}                                                            \
	}

#define VEC_B(NAME, TGT, T, L, LOAD, STORE, FIX, FN)                         \
	static TGT void NAME(T *d, const T *a, const T *b, int64_t n)        \
	{                                                                    \
		int64_t i = 0;                                               \
		for (; i + L <= n; i += L)                                   \
			STORE(d + i, FIX(FN(LOAD(a + i), LOAD(b + i))));     \
		if (i < n) {                                                 \
			T s[L] = {0}, t[L] = {0};                            \
			memcpy(s, a + i, (size_t)(n - i) * sizeof(T));       \
			memcpy(t, b + i, (size_t)(n - i) * sizeof(T));       \
			STORE(t, FIX(FN(LOAD(s), LOAD(t))));                 \
			memcpy(d + i, t, (size_t)(n - i) * sizeof(T));       \
		}                                                            \
	}

/* SSE2 path (every x86-64): SLEEF's SSE2 builds, 4 floats or 2 doubles. */
#define S2_U32(N, FN) \
	VEC_U(s2_##N##_f32, VM_NO_TARGET, float, 4, _mm_loadu_ps, _mm_storeu_ps, s2_canon_f32, FN)
#define S2_B32(N, FN) \
	VEC_B(s2_##N##_f32, VM_NO_TARGET, float, 4, _mm_loadu_ps, _mm_storeu_ps, s2_canon_f32, FN)
#define S2_U64(N, FN) \
	VEC_U(s2_##N##_f64, VM_NO_TARGET, double, 2, _mm_loadu_pd, _mm_storeu_pd, s2_canon_f64, FN)
#define S2_B64(N, FN) \
	VEC_B(s2_##N##_f64, VM_NO_TARGET, double, 2, _mm_loadu_pd, _mm_storeu_pd, s2_canon_f64, FN)

S2_U32(exp, Sleef_cinz_expf4_u10sse2)
S2_U32(log, Sleef_cinz_logf4_u10sse2)
S2_U32(sin, Sleef_cinz_sinf4_u10sse2)
S2_U32(cos, Sleef_cinz_cosf4_u10sse2)
S2_U32(expm1, Sleef_cinz_expm1f4_u10sse2)
S2_U32(erf, Sleef_cinz_erff4_u10sse2)
S2_U32(erfc, Sleef_cinz_erfcf4_u15sse2)
S2_U32(sqrt, _mm_sqrt_ps)
S2_B32(pow, Sleef_cinz_powf4_u10sse2)

S2_U64(exp, Sleef_cinz_expd2_u10sse2)
S2_U64(log, Sleef_cinz_logd2_u10sse2)
S2_U64(sin, Sleef_cinz_sind2_u10sse2)
S2_U64(cos, Sleef_cinz_cosd2_u10sse2)
S2_U64(expm1, Sleef_cinz_expm1d2_u10sse2)
S2_U64(erf, Sleef_cinz_erfd2_u10sse2)
S2_U64(erfc, Sleef_cinz_erfcd2_u15sse2)
S2_U64(sqrt, _mm_sqrt_pd)
S2_B64(pow, Sleef_cinz_powd2_u10sse2)

/* AVX2 path: SLEEF's AVX builds, 8 floats or 4 doubles a vector. */
#define A2_U32(N, FN) \
	VEC_U(a2_##N##_f32, VM_AVX2, float, 8, _mm256_loadu_ps, _mm256_storeu_ps, a2_canon_f32, FN)
#define A2_B32(N, FN) \
	VEC_B(a2_##N##_f32, VM_AVX2, float, 8, _mm256_loadu_ps, _mm256_storeu_ps, a2_canon_f32, FN)
#define A2_U64(N, FN) \
	VEC_U(a2_##N##_f64, VM_AVX2, double, 4, _mm256_loadu_pd, _mm256_storeu_pd, a2_canon_f64, FN)
#define A2_B64(N, FN) \
	VEC_B(a2_##N##_f64, VM_AVX2, double, 4, _mm256_loadu_pd, _mm256_storeu_pd, a2_canon_f64, FN)

A2_U32(exp, Sleef_cinz_expf8_u10avx)
A2_U32(log, Sleef_cinz_logf8_u10avx)
A2_U32(sin, Sleef_cinz_sinf8_u10avx)
A2_U32(cos, Sleef_cinz_cosf8_u10avx)
A2_U32(expm1, Sleef_cinz_expm1f8_u10avx)
A2_U32(erf, Sleef_cinz_erff8_u10avx)
A2_U32(erfc, Sleef_cinz_erfcf8_u15avx)
A2_U32(sqrt, _mm256_sqrt_ps)
A2_B32(pow, Sleef_cinz_powf8_u10avx)

A2_U64(exp, Sleef_cinz_expd4_u10avx)
A2_U64(log, Sleef_cinz_logd4_u10avx)
A2_U64(sin, Sleef_cinz_sind4_u10avx)
A2_U64(cos, Sleef_cinz_cosd4_u10avx)
A2_U64(expm1, Sleef_cinz_expm1d4_u10avx)
A2_U64(erf, Sleef_cinz_erfd4_u10avx)
A2_U64(erfc, Sleef_cinz_erfcd4_u15avx)
A2_U64(sqrt, _mm256_sqrt_pd)
A2_B64(pow, Sleef_cinz_powd4_u10avx)

/* AVX-512 path: SLEEF's AVX-512F no-FMA builds, 16 floats or 8 doubles. */
#define A5_U32(N, FN) \
	VEC_U(a5_##N##_f32, VM_AVX512, float, 16, _mm512_loadu_ps, _mm512_storeu_ps, a5_canon_f32, FN)
#define A5_B32(N, FN) \
	VEC_B(a5_##N##_f32, VM_AVX512, float, 16, _mm512_loadu_ps, _mm512_storeu_ps, a5_canon_f32, FN)
#define A5_U64(N, FN) \
	VEC_U(a5_##N##_f64, VM_AVX512, double, 8, _mm512_loadu_pd, _mm512_storeu_pd, a5_canon_f64, FN)
#define A5_B64(N, FN) \
	VEC_B(a5_##N##_f64, VM_AVX512, double, 8, _mm512_loadu_pd, _mm512_storeu_pd, a5_canon_f64, FN)

A5_U32(exp, Sleef_cinz_expf16_u10avx512fnofma)
A5_U32(log, Sleef_cinz_logf16_u10avx512fnofma)
A5_U32(sin, Sleef_cinz_sinf16_u10avx512fnofma)
A5_U32(cos, Sleef_cinz_cosf16_u10avx512fnofma)
A5_U32(expm1, Sleef_cinz_expm1f16_u10avx512fnofma)
A5_U32(erf, Sleef_cinz_erff16_u10avx512fnofma)
A5_U32(erfc, Sleef_cinz_erfcf16_u15avx512fnofma)
A5_U32(sqrt, _mm512_sqrt_ps)
A5_B32(pow, Sleef_cinz_powf16_u10avx512fnofma)

A5_U64(exp, Sleef_cinz_expd8_u10avx512fnofma)
A5_U64(log, Sleef_cinz_logd8_u10avx512fnofma)
A5_U64(sin, Sleef_cinz_sind8_u10avx512fnofma)
A5_U64(cos, Sleef_cinz_cosd8_u10avx512fnofma)
A5_U64(expm1, Sleef_cinz_expm1d8_u10avx512fnofma)
A5_U64(erf, Sleef_cinz_erfd8_u10avx512fnofma)
A5_U64(erfc, Sleef_cinz_erfcd8_u15avx512fnofma)
A5_U64(sqrt, _mm512_sqrt_pd)
A5_B64(pow, Sleef_cinz_powd8_u10avx512fnofma)

static const struct vm_prims_f32 s2_prims_f32 = PRIMS(s2, f32);
static const struct vm_prims_f64 s2_prims_f64 = PRIMS(s2, f64);
static const struct vm_prims_f32 a2_prims_f32 = PRIMS(a2, f32);
static const struct vm_prims_f64 a2_prims_f64 = PRIMS(a2, f64);
static const struct vm_prims_f32 a5_prims_f32 = PRIMS(a5, f32);
static const struct vm_prims_f64 a5_prims_f64 = PRIMS(a5, f64);

#endif /* VM_X86 */

/* ---- the ops, written once over a path's primitives ----
 * Semantics as NumPy (SPEC.md section 2): relu and maximum/minimum keep
 * NaN, round is half to even, sign(-0) = +0, mod takes the divisor's sign.
 * Composites run in blocks of VM_BLK through a stack temporary. */

#define VM_BLK 256

#define VM_GENERIC(S, T, FABS, FLOOR, CEIL, RINT, FMOD, COPYSIGN)            \
	VM_INLINE void unary_##S(const struct vm_prims_##S *pr, enum tir_op op, \
				 T *d, const T *s, int64_t n)                \
	{                                                                    \
		switch (op) {                                                \
		case TIR_OP_EXP: pr->u[P_EXP](d, s, n); return;              \
		case TIR_OP_LOG: pr->u[P_LOG](d, s, n); return;              \
		case TIR_OP_SIN: pr->u[P_SIN](d, s, n); return;              \
		case TIR_OP_COS: pr->u[P_COS](d, s, n); return;              \
		case TIR_OP_ERF: pr->u[P_ERF](d, s, n); return;              \
		case TIR_OP_SQRT: pr->u[P_SQRT](d, s, n); return;            \
		case TIR_OP_NEG: MAP(T, n, d, -s[i]); return;                \
		case TIR_OP_ABS: MAP(T, n, d, FABS(s[i])); return;           \
		case TIR_OP_RECIP: MAP(T, n, d, 1 / s[i]); return;           \
		case TIR_OP_FLOOR: MAP(T, n, d, FLOOR(s[i])); return;        \
		case TIR_OP_CEIL: MAP(T, n, d, CEIL(s[i])); return;          \
		case TIR_OP_ROUND: MAP(T, n, d, RINT(s[i])); return;         \
		case TIR_OP_RELU:   /* maximum(x, 0): -0 gives +0 */         \
			MAP(T, n, d, s[i] > 0 ? s[i] : s[i] != s[i] ? s[i] : 0); \
			return;                                              \
		case TIR_OP_SIGN:                                            \
			MAP(T, n, d, s[i] > 0 ? 1 : s[i] < 0 ? -1 : s[i] == 0 ? 0 : s[i]); \
			return;                                              \
		case TIR_OP_TANH:                                            \
		case TIR_OP_RSQRT:                                           \
		case TIR_OP_SIGMOID:                                         \
		case TIR_OP_SILU:                                            \
		case TIR_OP_GELU:                                            \
			break;                                               \
		default:                                                     \
			TIR_ASSERT(!"not a vmath unary op");                 \
		}                                                            \
		T t[VM_BLK];                                                 \
		for (int64_t j = 0; j < n; j += VM_BLK) {                    \
			int64_t m = n - j < VM_BLK ? n - j : VM_BLK;         \
			const T *x = s + j;                                  \
			T *y = d + j;                                        \
			switch (op) {                                        \
			case TIR_OP_TANH:   /* t = expm1(-2|x|) in (-1, 0]:  \
				     * tanh|x| = -t / (2 + t), then the sign; \
				     * within 3 ULP, and 5x faster than the  \
				     * deterministic SLEEF tanh */           \
				EACH(m) t[i] = -2 * FABS(x[i]);              \
				pr->u[P_EXPM1](t, t, m);                     \
				MAP(T, m, y, COPYSIGN(-t[i] / (2 + t[i]), x[i])); \
				break;                                       \
			case TIR_OP_RSQRT:  /* 1 / sqrt: both exact IEEE */  \
				pr->u[P_SQRT](t, x, m);                      \
				MAP(T, m, y, 1 / t[i]);                      \
				break;                                       \
			case TIR_OP_SIGMOID:                                 \
			case TIR_OP_SILU:                                    \
				/* e = exp(-|x|) never overflows: x >= 0     \
				 * gives 1 / (1 + e), x < 0 e / (1 + e) */   \
				EACH(m) t[i] = -FABS(x[i]);                  \
				pr->u[P_EXP](t, t, m);                       \
				if (op == TIR_OP_SIGMOID)                    \
					MAP(T, m, y, (x[i] >= 0 ? 1 : t[i]) / (1 + t[i])); \
				else                                         \
					MAP(T, m, y, x[i] * ((x[i] >= 0 ? 1 : t[i]) / (1 + t[i]))); \
				break;                                       \
			default:    /* GELU: 0.5 x erfc(-x / sqrt 2), which  \
				     * keeps the tiny left tail that         \
				     * 1 + erf(x / sqrt 2) cancels to 0 */   \
				EACH(m) t[i] = -x[i] / (T)1.41421356237309504880; \
				pr->u[P_ERFC](t, t, m);                      \
				MAP(T, m, y, (T)0.5 * x[i] * t[i]);          \
				break;                                       \
			}                                                    \
		}                                                            \
	}                                                                    \
                                                                             \
	VM_INLINE void binary_##S(const struct vm_prims_##S *pr, enum tir_op op, \
				  T *d, const T *a, const T *b, int64_t n)   \
	{                                                                    \
		switch (op) {                                                \
		case TIR_OP_ADD: MAP(T, n, d, a[i] + b[i]); return;          \
		case TIR_OP_SUB: MAP(T, n, d, a[i] - b[i]); return;          \
		case TIR_OP_MUL: MAP(T, n, d, a[i] * b[i]); return;          \
		case TIR_OP_DIV: MAP(T, n, d, a[i] / b[i]); return;          \
		case TIR_OP_POW: pr->pow(d, a, b, n); return;                \
		case TIR_OP_MAXIMUM:   /* NaN in either wins; a tie gives b */ \
			MAP(T, n, d, a[i] != a[i] ? a[i] : a[i] > b[i] ? a[i] : b[i]); \
			return;                                              \
		case TIR_OP_MINIMUM:                                         \
			MAP(T, n, d, a[i] != a[i] ? a[i] : a[i] < b[i] ? a[i] : b[i]); \
			return;                                              \
		case TIR_OP_MOD:                                             \
			/* np.mod: libm's fmod (exact, so any correct one    \
			 * agrees; SLEEF's is not exact for huge a / b),     \
			 * moved to the divisor's sign; a zero takes the     \
			 * divisor's sign; b == 0 gives NaN */               \
			EACH(n) {                                            \
				T p = a[i], q = b[i], r = FMOD(p, q);        \
				r = r != 0 ? ((q < 0) != (r < 0) ? r + q : r) : COPYSIGN((T)0, q); \
				d[i] = r != r ? (T)NAN : r;                  \
			}                                                    \
			return;                                              \
		default:                                                     \
			TIR_ASSERT(!"not a vmath binary op");                \
		}                                                            \
	}

VM_GENERIC(f32, float, fabsf, floorf, ceilf, nearbyintf, fmodf, copysignf)
VM_GENERIC(f64, double, fabs, floor, ceil, nearbyint, fmod, copysign)

/* ---- the paths ---- */

struct vm_path {
	const char *name;
	void (*f32)(enum tir_op op, float *d, const float *s, int64_t n);
	void (*f64)(enum tir_op op, double *d, const double *s, int64_t n);
	void (*f32_2)(enum tir_op op, float *d, const float *a, const float *b, int64_t n);
	void (*f64_2)(enum tir_op op, double *d, const double *a, const double *b, int64_t n);
};

/* The entry points of path P, compiled for its ISA (TGT). */
#define VM_PATH(P, TGT)                                                      \
	static TGT void P##_f32(enum tir_op op, float *d, const float *s, int64_t n) \
	{                                                                    \
		unary_f32(&P##_prims_f32, op, d, s, n);                      \
	}                                                                    \
	static TGT void P##_f64(enum tir_op op, double *d, const double *s, int64_t n) \
	{                                                                    \
		unary_f64(&P##_prims_f64, op, d, s, n);                      \
	}                                                                    \
	static TGT void P##_f32_2(enum tir_op op, float *d, const float *a,  \
				  const float *b, int64_t n)                 \
	{                                                                    \
		binary_f32(&P##_prims_f32, op, d, a, b, n);                  \
	}                                                                    \
	static TGT void P##_f64_2(enum tir_op op, double *d, const double *a, \
				  const double *b, int64_t n)                \
	{                                                                    \
		binary_f64(&P##_prims_f64, op, d, a, b, n);                  \
	}

VM_PATH(sc, VM_NO_TARGET)
#if VM_X86
VM_PATH(s2, VM_NO_TARGET)
VM_PATH(a2, VM_AVX2)
VM_PATH(a5, VM_AVX512)
#endif

static const struct vm_path vm_paths[TIR_VMATH_PATH_COUNT] = {
	[TIR_VMATH_SCALAR] = {"scalar", sc_f32, sc_f64, sc_f32_2, sc_f64_2},
#if VM_X86
	[TIR_VMATH_SSE2] = {"sse2", s2_f32, s2_f64, s2_f32_2, s2_f64_2},
	[TIR_VMATH_AVX2] = {"avx2", a2_f32, a2_f64, a2_f32_2, a2_f64_2},
	[TIR_VMATH_AVX512] = {"avx512", a5_f32, a5_f64, a5_f32_2, a5_f64_2},
#else
	[TIR_VMATH_SSE2] = {"sse2", NULL, NULL, NULL, NULL},
	[TIR_VMATH_AVX2] = {"avx2", NULL, NULL, NULL, NULL},
	[TIR_VMATH_AVX512] = {"avx512", NULL, NULL, NULL, NULL},
#endif
};

static pthread_once_t vm_once = PTHREAD_ONCE_INIT;
static const struct vm_path *vm_chosen;

bool tir_vmath_path_ok(enum tir_vmath_path p)
{
#if VM_X86
	/* libgcc's checks include the OS saving the vector registers */
	__builtin_cpu_init();
	switch (p) {
	case TIR_VMATH_SCALAR: return true;
	case TIR_VMATH_SSE2: return true;       /* x86-64's baseline */
	case TIR_VMATH_AVX2: return __builtin_cpu_supports("avx2");
	case TIR_VMATH_AVX512: return __builtin_cpu_supports("avx512f");
	default: return false;
	}
#else
	return p == TIR_VMATH_SCALAR;
#endif
}

/* The best path the CPU has, or at most the one TIR_VMATH names. */
static void vm_choose(void)
{
	int p = TIR_VMATH_PATH_COUNT - 1;
	const char *want = getenv("TIR_VMATH");
	for (int k = 0; want && k < TIR_VMATH_PATH_COUNT; k++)
		if (strcmp(want, vm_paths[k].name) == 0)
			p = k;
	while (p > TIR_VMATH_SCALAR && !tir_vmath_path_ok((enum tir_vmath_path)p))
		p--;
	vm_chosen = &vm_paths[p];
}

static const struct vm_path *vm_path(void)
{
	pthread_once(&vm_once, vm_choose);
	return vm_chosen;
}

const char *tir_vmath_isa(void)
{
	return vm_path()->name;
}

bool tir_vmath_unary_op(enum tir_op op)
{
	switch (op) {
	case TIR_OP_NEG: case TIR_OP_ABS: case TIR_OP_EXP: case TIR_OP_LOG:
	case TIR_OP_SQRT: case TIR_OP_RSQRT: case TIR_OP_RECIP: case TIR_OP_SIN:
	case TIR_OP_COS: case TIR_OP_TANH: case TIR_OP_SIGMOID: case TIR_OP_RELU:
	case TIR_OP_GELU: case TIR_OP_SILU: case TIR_OP_ERF: case TIR_OP_FLOOR:
	case TIR_OP_CEIL: case TIR_OP_ROUND: case TIR_OP_SIGN:
		return true;
	default:
		return false;
	}
}

bool tir_vmath_binary_op(enum tir_op op)
{
	switch (op) {
	case TIR_OP_ADD: case TIR_OP_SUB: case TIR_OP_MUL: case TIR_OP_DIV:
	case TIR_OP_POW: case TIR_OP_MAXIMUM: case TIR_OP_MINIMUM: case TIR_OP_MOD:
		return true;
	default:
		return false;
	}
}

void tir_vmath_f32(enum tir_op op, float *dst, const float *src, int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_path()->f32(op, dst, src, n);
}

void tir_vmath_f64(enum tir_op op, double *dst, const double *src, int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_path()->f64(op, dst, src, n);
}

void tir_vmath2_f32(enum tir_op op, float *dst, const float *a, const float *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_path()->f32_2(op, dst, a, b, n);
}

void tir_vmath2_f64(enum tir_op op, double *dst, const double *a, const double *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_path()->f64_2(op, dst, a, b, n);
}

/* ---- the test hook ---- */

static const struct vm_path *vm_path_on(enum tir_vmath_path p)
{
	TIR_ASSERT(p >= 0 && p < TIR_VMATH_PATH_COUNT && tir_vmath_path_ok(p));
	return &vm_paths[p];
}

void tir_vmath_f32_on(enum tir_vmath_path p, enum tir_op op, float *dst, const float *src,
		      int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_path_on(p)->f32(op, dst, src, n);
}

void tir_vmath_f64_on(enum tir_vmath_path p, enum tir_op op, double *dst, const double *src,
		      int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_path_on(p)->f64(op, dst, src, n);
}

void tir_vmath2_f32_on(enum tir_vmath_path p, enum tir_op op, float *dst, const float *a,
		       const float *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_path_on(p)->f32_2(op, dst, a, b, n);
}

void tir_vmath2_f64_on(enum tir_vmath_path p, enum tir_op op, double *dst, const double *a,
		       const double *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_path_on(p)->f64_2(op, dst, a, b, n);
}
