/*
 * vmath.c — the float elementwise functions over contiguous arrays
 * (vmath.h): SLEEF's vector functions for the transcendentals, the
 * composites (tanh, sigmoid, silu, gelu, rsqrt) written once over GCC's
 * vector types so that each runs as one pass of whole vectors, plain C that
 * the compiler vectorizes for the rest, and four dispatch paths (AVX-512F,
 * AVX2+FMA, SSE2, portable C) chosen once per process.  Which ops have
 * functions here, and of what form, is ops.def's vec column; each op's are
 * named by its row (vm_kern).  Not here: strides, tensors, integer ops
 * (elementwise.c).
 *
 * What is the same everywhere, and what is not:
 *  - on one machine, one path is used for the whole process, so a value is
 *    the same whatever the thread count or the blocking (an element's
 *    result depends only on its inputs: the tail of an array runs through
 *    the same vector function, zero-padded), and fused equals unfused.
 *  - the exact ops (+ - * / sqrt, compares, floor, ...) are correctly
 *    rounded IEEE operations and agree bit for bit on every path (NaNs
 *    aside, below).
 *  - the transcendentals use SLEEF's fastest accurate builds per path (FMA
 *    on AVX-512 and AVX2, SLEEF's "finz"; no FMA on SSE2 and in portable
 *    C), f32 exp SLEEF's algorithm inline (VM_EXPF), so they may differ
 *    between paths by their (documented) error, never by more: test_vmath
 *    checks every path against libm in higher precision.
 *  - a NaN result is a quiet NaN, with the sign and payload that the
 *    vector unit or SLEEF gives (deterministic, so the above holds; not
 *    canonicalized: that would cost time on every fused chain).  Of two
 *    NaNs, + and * give the first operand's on every path: their
 *    instructions are pinned with a as the first source (VM_PIN_VEX).
 */
#include "vmath.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__)
/* "cheap": GCC's -O2 model vectorizes no loop with a remainder.
 * fp-contract: the composites' polynomials may use FMA where the path has
 * it; no exact op has a multiply feeding an add.  align-loops: every loop
 * starts a 64-byte line, wherever the link puts this file (a loop 32 bytes
 * into one ran AVX-512 exp over 16M floats 1.2-2x slower on an EPYC). */
#pragma GCC optimize("vect-cost-model=cheap", "fp-contract=fast", "align-loops=64")
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
#define VM_AVX2 __attribute__((target("avx2,fma")))
#define VM_AVX512 __attribute__((target("avx512f")))
#else
#define VM_X86 0
#include <sleef.h>
#endif

/* ---- SLEEF, loaded at its first use ----
 * Not linked: as it loads, libsleef binds some 900 of its own symbols,
 * each looked up through every object of the process, which was the
 * largest part of a one-line program's start-up (a program with no
 * transcendental never needs it).  Each function of it used here is a
 * pointer, SL(name), filled by vm_sleef_load with dlsym; every array
 * function that may call one first makes sure it is loaded
 * (vm_sleef_ready: after the first time, one load of a flag).  A missing
 * SLEEF is an install's fault that no caller here can report, so it stops
 * the process with what dlopen said. */
#ifndef TIR_SLEEF_SONAME
#define TIR_SLEEF_SONAME "libsleef.so.3"
#endif

#define VM_SLEEF_C(X) \
	X(cinz_cosd1_u10purec) \
	X(cinz_cosf1_u10purec) \
	X(cinz_erfcd1_u15purec) \
	X(cinz_erfcf1_u15purec) \
	X(cinz_erfd1_u10purec) \
	X(cinz_erff1_u10purec) \
	X(cinz_expd1_u10purec) \
	X(cinz_expm1d1_u10purec) \
	X(cinz_expm1f1_u10purec) \
	X(cinz_logd1_u10purec) \
	X(cinz_logf1_u10purec) \
	X(cinz_powd1_u10purec) \
	X(cinz_powf1_u10purec) \
	X(cinz_sind1_u10purec) \
	X(cinz_sinf1_u10purec)
#if VM_X86
#define VM_SLEEF_X86(X) \
	X(cinz_cosd2_u10sse2) \
	X(cinz_cosf4_u10sse2) \
	X(cinz_erfcd2_u15sse2) \
	X(cinz_erfcf4_u15sse2) \
	X(cinz_erfd2_u10sse2) \
	X(cinz_erff4_u10sse2) \
	X(cinz_expd2_u10sse2) \
	X(cinz_expm1d2_u10sse2) \
	X(cinz_expm1f4_u10sse2) \
	X(cinz_logd2_u10sse2) \
	X(cinz_logf4_u10sse2) \
	X(cinz_powd2_u10sse2) \
	X(cinz_powf4_u10sse2) \
	X(cinz_sind2_u10sse2) \
	X(cinz_sinf4_u10sse2) \
	X(finz_cosd4_u10avx2) \
	X(finz_cosd8_u10avx512f) \
	X(finz_cosf16_u10avx512f) \
	X(finz_cosf8_u10avx2) \
	X(finz_erfcd4_u15avx2) \
	X(finz_erfcd8_u15avx512f) \
	X(finz_erfcf16_u15avx512f) \
	X(finz_erfcf8_u15avx2) \
	X(finz_erfd4_u10avx2) \
	X(finz_erfd8_u10avx512f) \
	X(finz_erff16_u10avx512f) \
	X(finz_erff8_u10avx2) \
	X(finz_expd4_u10avx2) \
	X(finz_expd8_u10avx512f) \
	X(finz_expm1d4_u10avx2) \
	X(finz_expm1d8_u10avx512f) \
	X(finz_expm1f16_u10avx512f) \
	X(finz_expm1f8_u10avx2) \
	X(finz_logd4_u10avx2) \
	X(finz_logd8_u10avx512f) \
	X(finz_logf16_u10avx512f) \
	X(finz_logf8_u10avx2) \
	X(finz_powd4_u10avx2) \
	X(finz_powd8_u10avx512f) \
	X(finz_powf16_u10avx512f) \
	X(finz_powf8_u10avx2) \
	X(finz_sind4_u10avx2) \
	X(finz_sind8_u10avx512f) \
	X(finz_sinf16_u10avx512f) \
	X(finz_sinf8_u10avx2)
#else
#define VM_SLEEF_X86(X)
#endif

static struct {
#define X(f) __typeof__(Sleef_##f) *f;
	VM_SLEEF_C(X)
	VM_SLEEF_X86(X)
#undef X
} vm_sleef;
static pthread_once_t vm_sleef_once = PTHREAD_ONCE_INIT;
static bool vm_sleef_loaded;          /* set (release) once vm_sleef is filled */
static char vm_sleef_err[512];

#define SL(f) (*vm_sleef.f)

static void vm_sleef_load(void)
{
	void *h = dlopen(TIR_SLEEF_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(vm_sleef_err, sizeof vm_sleef_err, "SLEEF is not installed: %s", dlerror());
		return;
	}
#define X(f)                                                                 \
	if (!(*(void **)&vm_sleef.f = dlsym(h, "Sleef_" #f))) {              \
		snprintf(vm_sleef_err, sizeof vm_sleef_err, "%s has no function Sleef_%s", \
			 TIR_SLEEF_SONAME, #f);                              \
		return;                                                      \
	}
	VM_SLEEF_C(X)
	VM_SLEEF_X86(X)
#undef X
	__atomic_store_n(&vm_sleef_loaded, true, __ATOMIC_RELEASE);
}

static void vm_sleef_need(void)
{
	pthread_once(&vm_sleef_once, vm_sleef_load);
	if (!vm_sleef_loaded) {
		/* An array kernel has no way to return an error: as the loader
		 * refused to start a tir whose linked SLEEF was missing, stop
		 * with the reason, exit 1 (an error, not a crash). */
		fprintf(stderr, "tir: %s (Debian's libsleef3: make deps)\n", vm_sleef_err);
		_exit(1);
	}
}

static inline void vm_sleef_ready(void)
{
	if (!__atomic_load_n(&vm_sleef_loaded, __ATOMIC_ACQUIRE))
		vm_sleef_need();
}

#define VM_INLINE static inline __attribute__((always_inline))
#define VM_NO_TARGET
/* The binary array functions are never inlined (VM_LOOP_BS's NaN case
 * calls one): each stays one copy of its loops.  The order of + and *'s
 * operands, which decides NaN op NaN, is pinned by VM_PIN_VEX and
 * VM_PIN_SSE, whatever the compiler inlines or commutes. */
#define VM_NOINLINE __attribute__((noinline))

/* An elementwise loop: dst may equal a source, which is no loop-carried
 * dependence (element i is read before it is written), so vectorize. */
#define EACH(n) _Pragma("GCC ivdep") for (int64_t i = 0; i < (n); i++)

/* out[i] = EXPR (of i) for i < n. */
#define MAP(T, n, out, EXPR)                                                 \
	do {                                                                 \
		EACH(n)                                                      \
			(out)[i] = (EXPR);                                   \
	} while (0)

/* ---- vector functions, written once over GCC vector types ----
 * VF is a vector of floats or doubles, VI the integer vector of the same
 * lanes (what a comparison gives: all ones or zero per lane).  The
 * portable path uses one-lane vectors, so it compiles the same text. */

#define V_SPLAT(VF, c) ((VF){0} + (c))
#define V_SEL(VF, VI, m, a, b) ((VF)(((m) & (VI)(a)) | (~(m) & (VI)(b))))
#define V_ABS(VF, VI, MAG, v) ((VF)((VI)(v) & (MAG)))
#define V_COPYSIGN(VF, VI, MAG, mag, sgn) ((VF)(((VI)(mag) & (MAG)) | ((VI)(sgn) & ~(MAG))))

/* tanh for f32: x + x^3 P(x^2) below 0.75 (minimax for the relative
 * error, 0.06 ULP of its own), above it 1 - 2 / (exp(2|x|) + 1) (no
 * cancellation there: the result is above 0.63); one exp, no expm1, within
 * 1.1 ULP (test_vmath).  exp overflows to inf past |x| = 44, giving 1. */
#define TANH_F32_CUT 0.75f
#define TANH_F32_P(r) \
	(((((0.0017369345f * (r) - 0.007657253f) * (r) + 0.021452034f) * (r) - 0.053892724f) * \
	  (r) + 0.13332695f) * (r) - 0.33333316f)

/* exp for f32, inline (no call, so the composites keep their constants in
 * registers): SLEEF 3.5's expf_u10 algorithm and coefficients (Boost
 * licence), q = rint(x / ln 2) by the 1.5 * 2^23 trick, x - q ln 2 in two
 * parts (q ln2_hi exact), a degree-6 polynomial, then times 2^q: LDEXP is
 * the path's (AVX-512's vscalefps, else two exact power-of-two factors so
 * that subnormal results round once).  Within 0.99 ULP over every float
 * (checked exhaustively on the development machine; test_vmath samples).
 * 0 below -104, inf above 100, NaN stays NaN.  vexpf_raw is the same
 * without those two selects, for arguments known to be in [-104, 100] (or
 * NaN, which stays NaN). */
#define EXPF_MAGIC 0x1.8p23f
#define VM_EXPF(P, TGT, VF, VI, LDEXP)                                        \
	VM_INLINE TGT VF P##_vexpf_raw(VF d)                                  \
	{                                                                    \
		VF t = d * 1.442695040888963407359924681001892137426645954152985934135449406931f + \
		       EXPF_MAGIC;                                           \
		VF q = t - EXPF_MAGIC;                                       \
		VF s = d - q * 0.693145751953125f;                           \
		s = s - q * 1.428606765330187045e-06f;                       \
		VF u = V_SPLAT(VF, 0.000198527617612853646278381f);          \
		u = u * s + 0.00139304355252534151077271f;                   \
		u = u * s + 0.00833336077630519866943359f;                   \
		u = u * s + 0.0416664853692054748535156f;                    \
		u = u * s + 0.166666671633720397949219f;                     \
		u = u * s + 0.5f;                                            \
		u = 1 + (s * s * u + s);                                     \
		return LDEXP(VF, VI, u, q);                                  \
	}                                                                    \
	VM_INLINE TGT VF P##_vexpf(VF d)                                      \
	{                                                                    \
		VF u = P##_vexpf_raw(d);                                     \
		u = V_SEL(VF, VI, d < -104.0f, V_SPLAT(VF, 0.0f), u);        \
		return V_SEL(VF, VI, d > 100.0f, V_SPLAT(VF, (float)INFINITY), u); \
	}

/* u * 2^q for integral q: q clamped to [-150, 150] (beyond, the caller's
 * selects decide), split in two halves that are normal powers of two. The
 * integer work is unsigned (a NaN's q is garbage, never undefined). */
#define LDEXPF_2MUL(VF, VI, u, q)                                            \
	({                                                                   \
		typedef unsigned VU_ __attribute__((vector_size(sizeof(VF))));  \
		VF qc_ = V_SEL(VF, VI, (q) < -150.0f, V_SPLAT(VF, -150.0f), q); \
		qc_ = V_SEL(VF, VI, qc_ > 150.0f, V_SPLAT(VF, 150.0f), qc_);   \
		VU_ qi_ = (VU_)(qc_ + EXPF_MAGIC) - (VU_)V_SPLAT(VF, EXPF_MAGIC); \
		VU_ q1_ = ((qi_ + 256) >> 1) - 128, q2_ = qi_ - q1_;         \
		(u) * (VF)((q1_ + 127) << 23) * (VF)((q2_ + 127) << 23);     \
	})

/* exp's argument in sigmoid: below this, exp is 0 (f32: vexpf_raw's
 * range) */
#define SIG_LO_f32 -104.0f
#define SIG_LO_f64 -746.0

/* The functions of path P for element type S (VF, VI; MAG: all bits but
 * the sign).  EXP ... are the path's functions on one VF: EXPRAW an exp
 * for arguments in [SIG_LO_S, 100]. */
#define VM_VFUNCS(P, S, TGT, T, VF, VI, MAG, EXP, EXPRAW, EXPM1, ERFC, SQRT)   \
	/* e = exp(-|x|) never overflows: x >= 0 gives 1 / (1 + e), x < 0   \
	 * e / (1 + e) */                                                    \
	VM_INLINE TGT VF P##_vsigmoid_##S(VF x)                                \
	{                                                                    \
		VF d = -V_ABS(VF, VI, MAG, x);                               \
		VF e = EXPRAW(V_SEL(VF, VI, d < SIG_LO_##S, V_SPLAT(VF, SIG_LO_##S), d)); \
		return V_SEL(VF, VI, x >= 0, V_SPLAT(VF, (T)1), e) / (1 + e); \
	}                                                                    \
	VM_INLINE TGT VF P##_vsilu_##S(VF x)                                   \
	{                                                                    \
		return x * P##_vsigmoid_##S(x);                               \
	}                                                                    \
	/* 0.5 x erfc(-x / sqrt 2), which keeps the tiny left tail that      \
	 * 1 + erf(x / sqrt 2) cancels to 0 */                               \
	VM_INLINE TGT VF P##_vgelu_##S(VF x)                                   \
	{                                                                    \
		return (T)0.5 * x * ERFC(-x / (T)1.41421356237309504880);    \
	}                                                                    \
	VM_INLINE TGT VF P##_vrsqrt_##S(VF x)   /* both steps exact IEEE */   \
	{                                                                    \
		return 1 / SQRT(x);                                          \
	}                                                                    \
	/* tanh for f64 (and the f32 formula below): t = expm1(-2|x|) in     \
	 * (-1, 0], tanh|x| = -t / (2 + t), then the sign; within 3 ULP */   \
	VM_INLINE TGT VF P##_vtanhm1_##S(VF x)                                 \
	{                                                                    \
		VF t = EXPM1(-2 * V_ABS(VF, VI, MAG, x));                    \
		return V_COPYSIGN(VF, VI, MAG, -t / (2 + t), x);             \
	}                                                                    \
	VM_INLINE TGT VF P##_vtanhe_##S(VF x)                                  \
	{                                                                    \
		VF a = V_ABS(VF, VI, MAG, x), r = a * a;                     \
		VF small = a * r * TANH_F32_P(r) + a;                        \
		VF big = 1 - 2 / (EXP(a + a) + 1);                           \
		return V_COPYSIGN(VF, VI, MAG,                               \
				  V_SEL(VF, VI, a < TANH_F32_CUT, small, big), x); \
	}

/* One function over arrays: whole vectors, then the tail in a zero-padded
 * vector, so every element goes through the same vector function.  The
 * arrays are void * so that every op has one function type (the tables
 * below). */
#define VM_LOOP_U(NAME, TGT, T, VF, FN, LOAD)                         \
	static TGT void NAME(void *dv, const void *sv, int64_t n)            \
	{                                                                    \
		if (LOAD)                                                    \
			vm_sleef_ready();                                    \
		enum { L = sizeof(VF) / sizeof(T) };                         \
		T *d = dv;                                                   \
		const T *s = sv;                                             \
		int64_t i = 0;                                               \
		VF v;                                                        \
		_Pragma("GCC unroll 2")                                      \
		for (; i + L <= n; i += L) {                                 \
			memcpy(&v, s + i, sizeof v);                         \
			v = FN(v);                                          \
			memcpy(d + i, &v, sizeof v);                         \
		}                                                            \
		if (i < n) {                                                 \
			v = (VF){0};                                         \
			memcpy(&v, s + i, (size_t)(n - i) * sizeof(T));      \
			v = FN(v);                                          \
			memcpy(d + i, &v, (size_t)(n - i) * sizeof(T));      \
		}                                                            \
	}

#define VM_LOOP_B(NAME, TGT, T, VF, FN, LOAD)                         \
	static TGT VM_NOINLINE void NAME(void *dv, const void *av, const void *bv, int64_t n) \
	{                                                                    \
		if (LOAD)                                                    \
			vm_sleef_ready();                                    \
		enum { L = sizeof(VF) / sizeof(T) };                         \
		T *d = dv;                                                   \
		const T *a = av, *b = bv;                                    \
		int64_t i = 0;                                               \
		VF u, v;                                                     \
		_Pragma("GCC unroll 4")   /* one op per vector: amortize the loop */ \
		for (; i + L <= n; i += L) {                                 \
			memcpy(&u, a + i, sizeof u);                         \
			memcpy(&v, b + i, sizeof v);                         \
			v = FN(u, v);                                       \
			memcpy(d + i, &v, sizeof v);                         \
		}                                                            \
		if (i < n) {                                                 \
			u = v = (VF){0};                                     \
			memcpy(&u, a + i, (size_t)(n - i) * sizeof(T));      \
			memcpy(&v, b + i, (size_t)(n - i) * sizeof(T));      \
			v = FN(u, v);                                       \
			memcpy(d + i, &v, (size_t)(n - i) * sizeof(T));      \
		}                                                            \
	}

/* The same with one operand one value (K 0: a, 1: b), put in every lane:
 * each element gets exactly what it would from an array of copies of it
 * (AF, the array function).  A NaN value goes through AF itself: with
 * two NaN operands the result is the first operand's (FN keeps the
 * order, VM_PIN_VEX), with one NaN (x) it is x's.  (A lane loop, not
 * V_SPLAT: 0 + -0 would be +0.) */
#define VM_LOOP_BS(NAME, TGT, T, VF, FN, K, AF, LOAD)                 \
	static TGT void NAME(void *dv, const void *av, const void *bv, int64_t n) \
	{                                                                    \
		if (LOAD)                                                    \
			vm_sleef_ready();                                    \
		enum { L = sizeof(VF) / sizeof(T) };                         \
		T *d = dv;                                                   \
		const T *x = K ? av : bv, c = *(const T *)(K ? bv : av);     \
		int64_t i = 0;                                               \
		VF u, w;                                                     \
		if (c != c) {                                                \
			T cs[64];                                            \
			for (int l = 0; l < 64; l++)                         \
				cs[l] = c;                                   \
			for (; i < n; i += 64) {                             \
				int64_t m = n - i < 64 ? n - i : 64;         \
				AF(d + i, K ? x + i : cs, K ? cs : x + i, m); \
			}                                                    \
			return;                                              \
		}                                                            \
		for (int l = 0; l < L; l++)                                  \
			w[l] = c;                                            \
		for (; i + L <= n; i += L) {                                 \
			memcpy(&u, x + i, sizeof u);                         \
			u = K ? FN(u, w) : FN(w, u);                         \
			memcpy(d + i, &u, sizeof u);                         \
		}                                                            \
		if (i < n) {                                                 \
			u = (VF){0};                                         \
			memcpy(&u, x + i, (size_t)(n - i) * sizeof(T));      \
			u = K ? FN(u, w) : FN(w, u);                         \
			memcpy(d + i, &u, (size_t)(n - i) * sizeof(T));      \
		}                                                            \
	}

/* The same with a per-element C expression of s[i] (or a[i], b[i]), for
 * the ops that have no vector form here; the compiler vectorizes them. */
#define VM_MAP_U(NAME, TGT, T, EXPR)                                         \
	static TGT void NAME(void *dv, const void *sv, int64_t n)            \
	{                                                                    \
		T *d = dv;                                                   \
		const T *s = sv;                                             \
		MAP(T, n, d, EXPR);                                          \
	}

#define VM_MAP_B(NAME, TGT, T, EXPR)                                         \
	static TGT VM_NOINLINE void NAME(void *dv, const void *av, const void *bv, int64_t n) \
	{                                                                    \
		T *d = dv;                                                   \
		const T *a = av, *b = bv;                                    \
		MAP(T, n, d, EXPR);                                          \
	}

#define V_SUB(u, v) ((u) - (v))
#define V_DIV(u, v) ((u) / (v))
/* The C operator each of those applies, by op (vm_kern's arith): a caller
 * may apply it to one element itself, with the same bits (POW: none) */
#define VM_ARITH_ADD '+'
#define VM_ARITH_SUB '-'
#define VM_ARITH_MUL '*'
#define VM_ARITH_DIV '/'
#define VM_ARITH_POW 0

/* libm by element type */
#define M_FABS_f32 fabsf
#define M_FLOOR_f32 floorf
#define M_CEIL_f32 ceilf
#define M_RINT_f32 nearbyintf
#define M_FMOD_f32 fmodf
#define M_COPYSIGN_f32 copysignf
#define M_LOG1P_f32 log1pf
#define M_EXPM1_f32 expm1f
#define M_LOG1P_f64 log1p
#define M_EXPM1_f64 expm1
#define M_TAN_f32 tanf
#define M_ASIN_f32 asinf
#define M_ACOS_f32 acosf
#define M_ATAN_f32 atanf
#define M_SINH_f32 sinhf
#define M_COSH_f32 coshf
#define M_ASINH_f32 asinhf
#define M_ACOSH_f32 acoshf
#define M_ATANH_f32 atanhf
#define M_EXP_f32 expf
#define M_TAN_f64 tan
#define M_ASIN_f64 asin
#define M_ACOS_f64 acos
#define M_ATAN_f64 atan
#define M_SINH_f64 sinh
#define M_COSH_f64 cosh
#define M_ASINH_f64 asinh
#define M_ACOSH_f64 acosh
#define M_ATANH_f64 atanh
#define M_EXP_f64 exp
/* selu's constants (Klambauer et al.: PyTorch's and ONNX's) */
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946
#define M_FABS_f64 fabs
#define M_FLOOR_f64 floor
#define M_CEIL_f64 ceil
#define M_RINT_f64 nearbyint
#define M_FMOD_f64 fmod
#define M_COPYSIGN_f64 copysign

/* ---- every op of a path as one function over arrays ----
 * An op's functions are named by its row in ops.def: P_ENUM_S (P the path,
 * S the element type), and vm_kern (below) is made from the rows' vec
 * column.  The path's other functions are in a table per path. */

struct vm_ops {
	double (*expsum)(void *d, const void *x, double m, int64_t n);
	void (*moments)(const void *x, int64_t n, double c, double *s1, double *s2);
	void (*norm)(void *o, const void *x, const void *w, const void *b, double mean,
		     double r, int64_t n);
};

/* Eight elements as eight doubles (the lanes of a softmax sum). */
typedef float vm_vf8 __attribute__((vector_size(32)));
typedef double vm_vd8 __attribute__((vector_size(64)));

#define widen8_f32(p)                                                        \
	({                                                                   \
		vm_vf8 g_;                                                   \
		memcpy(&g_, p, sizeof g_);                                   \
		__builtin_convertvector(g_, vm_vd8);                         \
	})
#define widen8_f64(p)                                                        \
	({                                                                   \
		vm_vd8 g_;                                                   \
		memcpy(&g_, p, sizeof g_);                                   \
		g_;                                                          \
	})
/* per path (GCC 12 widens a vector of 8 floats in four steps; AVX-512
 * has one instruction) */
#define widen8_sc_f32 widen8_f32
#define widen8_s2_f32 widen8_f32
#define widen8_a2_f32 widen8_f32
#define widen8_a5_f32(p) ((vm_vd8)_mm512_cvtps_pd(_mm256_loadu_ps(p)))
#define widen8_sc_f64 widen8_f64
#define widen8_s2_f64 widen8_f64
#define widen8_a2_f64 widen8_f64
#define widen8_a5_f64 widen8_f64

/* Path P's + and * on vectors of S with a as the first source
 * (vmath.h's tir_vm_addf says why): VEX forms on the AVX paths (no
 * alignment asked of a memory operand), SSE forms on SSE2's. */
#define VM_PIN_VEX(P, S, TGT, VF, ADD, MUL)                                   \
	VM_PIN_VEX1(P##_add_##S, TGT, VF, ADD)                               \
	VM_PIN_VEX1(P##_mul_##S, TGT, VF, MUL)
#define VM_PIN_VEX1(NAME, TGT, VF, INS)                                       \
	VM_INLINE TGT VF NAME(VF a, VF b)                                    \
	{                                                                    \
		VF r;                                                        \
		__asm__(INS " %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));       \
		return r;                                                    \
	}
#define VM_PIN_SSE(P, S, VF, ADD, MUL)                                        \
	VM_PIN_SSE1(P##_add_##S, VF, ADD)                                    \
	VM_PIN_SSE1(P##_mul_##S, VF, MUL)
#define VM_PIN_SSE1(NAME, VF, INS)                                            \
	VM_INLINE VF NAME(VF a, VF b)                                        \
	{                                                                    \
		__asm__(INS " %1, %0" : "+x"(a) : "x"(b));                   \
		return a;                                                    \
	}

/* Path P's functions for S (each op's as its ops.def row names it, see
 * vm_kern), and its table P_ops_S of the others: EXP ... are its vector
 * functions on one VF, TANH tanhe (f32) or tanhm1 (f64).
 * Semantics as NumPy (docs/language.md, "Types"): relu and maximum/minimum keep
 * NaN, round is half to even, sign(-0) = +0, mod takes the divisor's
 * sign. */
#define VM_ARRAYS(P, S, TGT, T, VF, EXP, LOG, SIN, COS, ERF, SQRT, POW, TANH)   \
	VM_LOOP_U(P##_EXP_##S, TGT, T, VF, EXP, 1)           \
	VM_LOOP_U(P##_LOG_##S, TGT, T, VF, LOG, 1)           \
	VM_LOOP_U(P##_SIN_##S, TGT, T, VF, SIN, 1)           \
	VM_LOOP_U(P##_COS_##S, TGT, T, VF, COS, 1)           \
	VM_LOOP_U(P##_ERF_##S, TGT, T, VF, ERF, 1)           \
	VM_LOOP_U(P##_SQRT_##S, TGT, T, VF, SQRT, 0)         \
	VM_LOOP_U(P##_TANH_##S, TGT, T, VF, P##_v##TANH##_##S, 1) \
	VM_LOOP_U(P##_SIGMOID_##S, TGT, T, VF, P##_vsigmoid_##S, 1) \
	VM_LOOP_U(P##_SILU_##S, TGT, T, VF, P##_vsilu_##S, 1) \
	VM_LOOP_U(P##_GELU_##S, TGT, T, VF, P##_vgelu_##S, 1) \
	VM_LOOP_U(P##_RSQRT_##S, TGT, T, VF, P##_vrsqrt_##S, 0) \
	VM_MAP_U(P##_NEG_##S, TGT, T, -s[i])                                 \
	VM_MAP_U(P##_ABS_##S, TGT, T, M_FABS_##S(s[i]))                      \
	VM_MAP_U(P##_RECIP_##S, TGT, T, 1 / s[i])                            \
	VM_MAP_U(P##_LOG1P_##S, TGT, T, M_LOG1P_##S(s[i]))                   \
	VM_MAP_U(P##_EXPM1_##S, TGT, T, M_EXPM1_##S(s[i]))                   \
	VM_MAP_U(P##_TAN_##S, TGT, T, M_TAN_##S(s[i]))                       \
	VM_MAP_U(P##_ASIN_##S, TGT, T, M_ASIN_##S(s[i]))                     \
	VM_MAP_U(P##_ACOS_##S, TGT, T, M_ACOS_##S(s[i]))                     \
	VM_MAP_U(P##_ATAN_##S, TGT, T, M_ATAN_##S(s[i]))                     \
	VM_MAP_U(P##_SINH_##S, TGT, T, M_SINH_##S(s[i]))                     \
	VM_MAP_U(P##_COSH_##S, TGT, T, M_COSH_##S(s[i]))                     \
	VM_MAP_U(P##_ASINH_##S, TGT, T, M_ASINH_##S(s[i]))                   \
	VM_MAP_U(P##_ACOSH_##S, TGT, T, M_ACOSH_##S(s[i]))                   \
	VM_MAP_U(P##_ATANH_##S, TGT, T, M_ATANH_##S(s[i]))                   \
	VM_MAP_U(P##_SELU_##S, TGT, T, (T)SELU_SCALE * (s[i] > 0 ? s[i]      \
				: (T)SELU_ALPHA * M_EXPM1_##S(s[i])))        \
	VM_MAP_U(P##_HARDSWISH_##S, TGT, T, s[i] * (s[i] <= -3 ? 0 : s[i] >= 3 ? 1 \
				: (s[i] + 3) / 6))                           \
	VM_MAP_U(P##_SOFTPLUS_##S, TGT, T, s[i] > 0 ? s[i] + M_LOG1P_##S(M_EXP_##S(-s[i])) \
				: M_LOG1P_##S(M_EXP_##S(s[i])))              \
	VM_MAP_U(P##_SOFTSIGN_##S, TGT, T, s[i] / (1 + M_FABS_##S(s[i])))    \
	VM_MAP_U(P##_FLOOR_##S, TGT, T, M_FLOOR_##S(s[i]))                   \
	VM_MAP_U(P##_CEIL_##S, TGT, T, M_CEIL_##S(s[i]))                     \
	VM_MAP_U(P##_ROUND_##S, TGT, T, M_RINT_##S(s[i]))                    \
	/* maximum(x, 0): -0 gives +0 */                                     \
	VM_MAP_U(P##_RELU_##S, TGT, T, s[i] > 0 ? s[i] : s[i] != s[i] ? s[i] : 0) \
	VM_MAP_U(P##_SIGN_##S, TGT, T,                                       \
		 s[i] > 0 ? 1 : s[i] < 0 ? -1 : s[i] == 0 ? 0 : s[i])        \
	VM_LOOP_B(P##_ADD_##S, TGT, T, VF, P##_add_##S, 0)       \
	VM_LOOP_B(P##_SUB_##S, TGT, T, VF, V_SUB, 0)         \
	VM_LOOP_B(P##_MUL_##S, TGT, T, VF, P##_mul_##S, 0)       \
	VM_LOOP_B(P##_DIV_##S, TGT, T, VF, V_DIV, 0)         \
	VM_LOOP_B(P##_POW_##S, TGT, T, VF, POW, 1)           \
	VM_LOOP_BS(P##_ADD_vs_##S, TGT, T, VF, P##_add_##S, 1, P##_ADD_##S, 0)  \
	VM_LOOP_BS(P##_SUB_vs_##S, TGT, T, VF, V_SUB, 1, P##_SUB_##S, 0)  \
	VM_LOOP_BS(P##_MUL_vs_##S, TGT, T, VF, P##_mul_##S, 1, P##_MUL_##S, 0)  \
	VM_LOOP_BS(P##_DIV_vs_##S, TGT, T, VF, V_DIV, 1, P##_DIV_##S, 0)  \
	VM_LOOP_BS(P##_POW_vs_##S, TGT, T, VF, POW, 1, P##_POW_##S, 1)    \
	VM_LOOP_BS(P##_ADD_sv_##S, TGT, T, VF, P##_add_##S, 0, P##_ADD_##S, 0)  \
	VM_LOOP_BS(P##_SUB_sv_##S, TGT, T, VF, V_SUB, 0, P##_SUB_##S, 0)  \
	VM_LOOP_BS(P##_MUL_sv_##S, TGT, T, VF, P##_mul_##S, 0, P##_MUL_##S, 0)  \
	VM_LOOP_BS(P##_DIV_sv_##S, TGT, T, VF, V_DIV, 0, P##_DIV_##S, 0)  \
	VM_LOOP_BS(P##_POW_sv_##S, TGT, T, VF, POW, 0, P##_POW_##S, 1)    \
	/* NaN in either wins; a tie gives b */                              \
	VM_MAP_B(P##_MAXIMUM_##S, TGT, T, a[i] != a[i] ? a[i] : a[i] > b[i] ? a[i] : b[i]) \
	VM_MAP_B(P##_MINIMUM_##S, TGT, T, a[i] != a[i] ? a[i] : a[i] < b[i] ? a[i] : b[i]) \
	/* np.mod: libm's fmod (exact, so any correct one agrees; SLEEF's    \
	 * is not exact for huge a / b), moved to the divisor's sign; a zero \
	 * takes the divisor's sign; b == 0 gives NaN */                     \
	static TGT void P##_MOD_##S(void *dv, const void *av, const void *bv, int64_t n) \
	{                                                                    \
		T *d = dv;                                                   \
		const T *a = av, *b = bv;                                    \
		EACH(n) {                                                    \
			T p = a[i], q = b[i], r = M_FMOD_##S(p, q);          \
			r = r != 0 ? ((q < 0) != (r < 0) ? r + q : r) : M_COPYSIGN_##S((T)0, q); \
			d[i] = r != r ? (T)NAN : r;                          \
		}                                                            \
	}                                                                    \
	/* softmax's middle pass (see tir_vmath_expsum_f32) */               \
	static TGT double P##_expsum_##S(void *dv, const void *xv, double md, int64_t n) \
	{                                                                    \
		vm_sleef_ready();                                            \
		enum { L = sizeof(VF) / sizeof(T) };                         \
		T *d = dv, m = (T)md;                                        \
		const T *x = xv;                                             \
		vm_vd8 acc = {0};                                            \
		int64_t i = 0;                                               \
		for (; i + 16 <= n; i += 16) {                               \
			for (int k = 0; k < 16; k += L) {                    \
				VF v;                                        \
				memcpy(&v, x + i + k, sizeof v);             \
				v = EXP(v - m);                               \
				memcpy(d + i + k, &v, sizeof v);             \
			}                                                    \
			acc += widen8_##P##_##S(d + i);                      \
			acc += widen8_##P##_##S(d + i + 8);                  \
		}                                                            \
		if (i < n) {                                                 \
			for (int64_t j = i; j < n; j++)                      \
				d[j] = x[j] - m;                             \
			P##_EXP_##S(d + i, d + i, n - i);                    \
		}                                                            \
		for (; i + 8 <= n; i += 8)                                   \
			acc += widen8_##P##_##S(d + i);                      \
		for (; i < n; i++)                                           \
			acc[0] += d[i];                                      \
		return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +             \
		       ((acc[4] + acc[5]) + (acc[6] + acc[7]));              \
	}                                                                    \
	/* layernorm's moments (see tir_vmath_moments_f32) */                \
	static TGT void P##_moments_##S(const void *xv, int64_t n, double c, \
					double *s1, double *s2)              \
	{                                                                    \
		const T *x = xv;                                             \
		vm_vd8 a0 = {0}, a1 = {0}, q0 = {0}, q1 = {0}, d;            \
		int64_t j = 0;                                               \
		for (; j + 16 <= n; j += 16) {                               \
			d = widen8_##P##_##S(x + j) - c;                     \
			a0 += d;                                             \
			q0 += d * d;                                         \
			d = widen8_##P##_##S(x + j + 8) - c;                 \
			a1 += d;                                             \
			q1 += d * d;                                         \
		}                                                            \
		for (; j + 8 <= n; j += 8) {                                 \
			d = widen8_##P##_##S(x + j) - c;                     \
			a0 += d;                                             \
			q0 += d * d;                                         \
		}                                                            \
		for (; j < n; j++) {                                         \
			double e = (double)x[j] - c;                         \
			a0[0] += e;                                          \
			q0[0] += e * e;                                      \
		}                                                            \
		a0 += a1;                                                    \
		q0 += q1;                                                    \
		*s1 = ((a0[0] + a0[1]) + (a0[2] + a0[3])) + ((a0[4] + a0[5]) + (a0[6] + a0[7])); \
		*s2 = ((q0[0] + q0[1]) + (q0[2] + q0[3])) + ((q0[4] + q0[5]) + (q0[6] + q0[7])); \
	}                                                                    \
	static const struct vm_ops P##_ops_##S = {                           \
		.expsum = P##_expsum_##S,                                    \
		.moments = P##_moments_##S,                                  \
		.norm = P##_norm_##S,                                        \
	};

/* ---- layernorm's last pass (see tir_vmath_norm_f32) ----
 * o = (T)(((double)x - mean) * r) * w + b, b NULL: (T)((double)x * r) * w.
 * Compiled without contraction: the float steps round twice, as the
 * reference kernels' do.  AVX-512 does the double part as one FMA,
 * x * r - mean * r, and the widening with one instruction per 8. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

#define VM_NORM_GENERIC(P, S, TGT, T)                                          \
	static TGT void P##_norm_##S(void *ov, const void *xv, const void *wv,    \
				     const void *bv, double mean, double r,       \
				     int64_t n)                                   \
	{                                                                    \
		T *o = ov;                                                   \
		const T *x = xv, *w = wv, *b = bv;                           \
		if (b)                                                       \
			EACH(n) o[i] = (T)(((double)x[i] - mean) * r) * w[i] + b[i]; \
		else                                                         \
			EACH(n) o[i] = (T)((double)x[i] * r) * w[i];         \
	}

VM_NORM_GENERIC(sc, f32, VM_NO_TARGET, float)
VM_NORM_GENERIC(sc, f64, VM_NO_TARGET, double)
#if VM_X86
VM_NORM_GENERIC(s2, f32, VM_NO_TARGET, float)
VM_NORM_GENERIC(s2, f64, VM_NO_TARGET, double)
VM_NORM_GENERIC(a2, f32, VM_AVX2, float)
VM_NORM_GENERIC(a2, f64, VM_AVX2, double)
VM_NORM_GENERIC(a5, f64, VM_AVX512, double)

static VM_AVX512 void a5_norm_f32(void *ov, const void *xv, const void *wv, const void *bv,
				   double mean, double r, int64_t n)
{
	float *o = ov;
	const float *x = xv, *w = wv, *b = bv;
	__m512d rv = _mm512_set1_pd(r), nm = _mm512_set1_pd(-(b ? mean : 0) * r);
	int64_t j = 0;
	for (; j + 16 <= n; j += 16) {
		__m256 lo = _mm512_cvtpd_ps(_mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + j)), rv, nm));
		__m256 hi = _mm512_cvtpd_ps(_mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + j + 8)), rv, nm));
		__m512 z = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)),
							       _mm256_castps_pd(hi), 1));
		z = _mm512_mul_ps(z, _mm512_loadu_ps(w + j));
		if (b)
			z = _mm512_add_ps(z, _mm512_loadu_ps(b + j));
		_mm512_storeu_ps(o + j, z);
	}
	for (; j < n; j++) {
		float z = (float)fma((double)x[j], r, -(b ? mean : 0) * r) * w[j];
		o[j] = b ? z + b[j] : z;
	}
}
#endif

#pragma GCC pop_options

/* Portable C: one-lane vectors over SLEEF's purec builds (no FMA). */
typedef float vm_vf1 __attribute__((vector_size(4)));
typedef int32_t vm_vi1 __attribute__((vector_size(4)));
typedef double vm_vd1 __attribute__((vector_size(8)));
typedef int64_t vm_vl1 __attribute__((vector_size(8)));

#define SC_WRAP32(NAME, FN) \
	VM_INLINE vm_vf1 NAME(vm_vf1 v_) { return (vm_vf1){FN(v_[0])}; }
#define SC_WRAP64(NAME, FN) \
	VM_INLINE vm_vd1 NAME(vm_vd1 v_) { return (vm_vd1){FN(v_[0])}; }

SC_WRAP32(sc_logf, SL(cinz_logf1_u10purec))
SC_WRAP32(sc_sinf, SL(cinz_sinf1_u10purec))
SC_WRAP32(sc_cosf, SL(cinz_cosf1_u10purec))
SC_WRAP32(sc_expm1f, SL(cinz_expm1f1_u10purec))
SC_WRAP32(sc_erff, SL(cinz_erff1_u10purec))
SC_WRAP32(sc_erfcf, SL(cinz_erfcf1_u15purec))
SC_WRAP32(sc_sqrtf, sqrtf)
VM_INLINE vm_vf1 sc_powf(vm_vf1 a, vm_vf1 b) { return (vm_vf1){SL(cinz_powf1_u10purec)(a[0], b[0])}; }
SC_WRAP64(sc_exp, SL(cinz_expd1_u10purec))
SC_WRAP64(sc_log, SL(cinz_logd1_u10purec))
SC_WRAP64(sc_sin, SL(cinz_sind1_u10purec))
SC_WRAP64(sc_cos, SL(cinz_cosd1_u10purec))
SC_WRAP64(sc_expm1, SL(cinz_expm1d1_u10purec))
SC_WRAP64(sc_erf, SL(cinz_erfd1_u10purec))
SC_WRAP64(sc_erfc, SL(cinz_erfcd1_u15purec))
SC_WRAP64(sc_sqrt, sqrt)
VM_INLINE vm_vd1 sc_pow(vm_vd1 a, vm_vd1 b) { return (vm_vd1){SL(cinz_powd1_u10purec)(a[0], b[0])}; }

#define MAG32 0x7fffffff
#define MAG64 0x7fffffffffffffffLL

VM_EXPF(sc, VM_NO_TARGET, vm_vf1, vm_vi1, LDEXPF_2MUL)
VM_VFUNCS(sc, f32, VM_NO_TARGET, float, vm_vf1, vm_vi1, MAG32, sc_vexpf, sc_vexpf_raw,
	  sc_expm1f, sc_erfcf, sc_sqrtf)
VM_VFUNCS(sc, f64, VM_NO_TARGET, double, vm_vd1, vm_vl1, MAG64, sc_exp, sc_exp,
	  sc_expm1, sc_erfc, sc_sqrt)
/* + and * with a as the first source: vmath.h's, on the one lane */
VM_INLINE vm_vf1 sc_add_f32(vm_vf1 a, vm_vf1 b) { return (vm_vf1){tir_vm_addf(a[0], b[0])}; }
VM_INLINE vm_vf1 sc_mul_f32(vm_vf1 a, vm_vf1 b) { return (vm_vf1){tir_vm_mulf(a[0], b[0])}; }
VM_INLINE vm_vd1 sc_add_f64(vm_vd1 a, vm_vd1 b) { return (vm_vd1){tir_vm_adds(a[0], b[0])}; }
VM_INLINE vm_vd1 sc_mul_f64(vm_vd1 a, vm_vd1 b) { return (vm_vd1){tir_vm_muls(a[0], b[0])}; }
VM_ARRAYS(sc, f32, VM_NO_TARGET, float, vm_vf1, sc_vexpf, sc_logf, sc_sinf, sc_cosf, sc_erff,
	  sc_sqrtf, sc_powf, tanhe)
VM_ARRAYS(sc, f64, VM_NO_TARGET, double, vm_vd1, sc_exp, sc_log, sc_sin, sc_cos, sc_erf,
	  sc_sqrt, sc_pow, tanhm1)

#if VM_X86

typedef int32_t vm_vi4 __attribute__((vector_size(16)));
typedef int64_t vm_vl2 __attribute__((vector_size(16)));
typedef int32_t vm_vi8 __attribute__((vector_size(32)));
typedef int64_t vm_vl4 __attribute__((vector_size(32)));
typedef int32_t vm_vi16 __attribute__((vector_size(64)));
typedef int64_t vm_vl8 __attribute__((vector_size(64)));

/* SSE2 path (every x86-64): SLEEF's SSE2 builds (no FMA), 4 floats or 2
 * doubles. */
VM_EXPF(s2, VM_NO_TARGET, __m128, vm_vi4, LDEXPF_2MUL)
VM_VFUNCS(s2, f32, VM_NO_TARGET, float, __m128, vm_vi4, MAG32, s2_vexpf, s2_vexpf_raw,
	  SL(cinz_expm1f4_u10sse2), SL(cinz_erfcf4_u15sse2), _mm_sqrt_ps)
VM_VFUNCS(s2, f64, VM_NO_TARGET, double, __m128d, vm_vl2, MAG64, SL(cinz_expd2_u10sse2),
	  SL(cinz_expd2_u10sse2), SL(cinz_expm1d2_u10sse2), SL(cinz_erfcd2_u15sse2), _mm_sqrt_pd)
VM_PIN_SSE(s2, f32, __m128, "addps", "mulps")
VM_PIN_SSE(s2, f64, __m128d, "addpd", "mulpd")
VM_ARRAYS(s2, f32, VM_NO_TARGET, float, __m128, s2_vexpf,
	  SL(cinz_logf4_u10sse2), SL(cinz_sinf4_u10sse2), SL(cinz_cosf4_u10sse2),
	  SL(cinz_erff4_u10sse2), _mm_sqrt_ps, SL(cinz_powf4_u10sse2), tanhe)
VM_ARRAYS(s2, f64, VM_NO_TARGET, double, __m128d, SL(cinz_expd2_u10sse2),
	  SL(cinz_logd2_u10sse2), SL(cinz_sind2_u10sse2), SL(cinz_cosd2_u10sse2),
	  SL(cinz_erfd2_u10sse2), _mm_sqrt_pd, SL(cinz_powd2_u10sse2), tanhm1)

/* AVX2 path: SLEEF's AVX2+FMA builds, 8 floats or 4 doubles. */
VM_EXPF(a2, VM_AVX2, __m256, vm_vi8, LDEXPF_2MUL)
VM_VFUNCS(a2, f32, VM_AVX2, float, __m256, vm_vi8, MAG32, a2_vexpf, a2_vexpf_raw,
	  SL(finz_expm1f8_u10avx2), SL(finz_erfcf8_u15avx2), _mm256_sqrt_ps)
VM_VFUNCS(a2, f64, VM_AVX2, double, __m256d, vm_vl4, MAG64, SL(finz_expd4_u10avx2),
	  SL(finz_expd4_u10avx2), SL(finz_expm1d4_u10avx2), SL(finz_erfcd4_u15avx2), _mm256_sqrt_pd)
VM_PIN_VEX(a2, f32, VM_AVX2, __m256, "vaddps", "vmulps")
VM_PIN_VEX(a2, f64, VM_AVX2, __m256d, "vaddpd", "vmulpd")
VM_ARRAYS(a2, f32, VM_AVX2, float, __m256, a2_vexpf,
	  SL(finz_logf8_u10avx2), SL(finz_sinf8_u10avx2), SL(finz_cosf8_u10avx2),
	  SL(finz_erff8_u10avx2), _mm256_sqrt_ps, SL(finz_powf8_u10avx2), tanhe)
VM_ARRAYS(a2, f64, VM_AVX2, double, __m256d, SL(finz_expd4_u10avx2),
	  SL(finz_logd4_u10avx2), SL(finz_sind4_u10avx2), SL(finz_cosd4_u10avx2),
	  SL(finz_erfd4_u10avx2), _mm256_sqrt_pd, SL(finz_powd4_u10avx2), tanhm1)

/* AVX-512 path: SLEEF's AVX-512F builds (with FMA), 16 floats or 8
 * doubles. */
#define A5_LDEXPF(VF, VI, u, q) _mm512_scalef_ps(u, q)
VM_EXPF(a5, VM_AVX512, __m512, vm_vi16, A5_LDEXPF)
VM_VFUNCS(a5, f32, VM_AVX512, float, __m512, vm_vi16, MAG32, a5_vexpf, a5_vexpf_raw,
	  SL(finz_expm1f16_u10avx512f), SL(finz_erfcf16_u15avx512f), _mm512_sqrt_ps)
VM_VFUNCS(a5, f64, VM_AVX512, double, __m512d, vm_vl8, MAG64, SL(finz_expd8_u10avx512f),
	  SL(finz_expd8_u10avx512f), SL(finz_expm1d8_u10avx512f), SL(finz_erfcd8_u15avx512f), _mm512_sqrt_pd)
VM_PIN_VEX(a5, f32, VM_AVX512, __m512, "vaddps", "vmulps")
VM_PIN_VEX(a5, f64, VM_AVX512, __m512d, "vaddpd", "vmulpd")
VM_ARRAYS(a5, f32, VM_AVX512, float, __m512, a5_vexpf,
	  SL(finz_logf16_u10avx512f), SL(finz_sinf16_u10avx512f),
	  SL(finz_cosf16_u10avx512f), SL(finz_erff16_u10avx512f), _mm512_sqrt_ps,
	  SL(finz_powf16_u10avx512f), tanhe)
VM_ARRAYS(a5, f64, VM_AVX512, double, __m512d, SL(finz_expd8_u10avx512f),
	  SL(finz_logd8_u10avx512f), SL(finz_sind8_u10avx512f),
	  SL(finz_cosd8_u10avx512f), SL(finz_erfd8_u10avx512f), _mm512_sqrt_pd,
	  SL(finz_powd8_u10avx512f), tanhm1)

#endif /* VM_X86 */

/* ---- each op's functions, made from ops.def's vec column ----
 * By op: [path][0 f32, 1 f64], and for the one-value forms [k] first
 * (operand k one value).  NULL where ops.def gives the op no such
 * function (and for the paths this machine's build has not). */
struct vm_kern {
	tir_vmath1_fn u[TIR_VMATH_PATH_COUNT][2];
	tir_vmath2_fn b[TIR_VMATH_PATH_COUNT][2];
	tir_vmath2_fn s[2][TIR_VMATH_PATH_COUNT][2];
	char arith; /* VM_ARITH_* (BINARY_SV ops), else 0 */
};

/* Op E's functions of form M (_ or _sv_ or _vs_) on every path. */
#define VM_PER_PATH(E, M) VM_PER_PATH_(E, M)
#if VM_X86
#define VM_PER_PATH_(E, M)                                                   \
	{                                                                    \
		[TIR_VMATH_SCALAR] = {sc_##E##M##f32, sc_##E##M##f64},       \
		[TIR_VMATH_SSE2] = {s2_##E##M##f32, s2_##E##M##f64},         \
		[TIR_VMATH_AVX2] = {a2_##E##M##f32, a2_##E##M##f64},         \
		[TIR_VMATH_AVX512] = {a5_##E##M##f32, a5_##E##M##f64},       \
	}
#else
#define VM_PER_PATH_(E, M) {[TIR_VMATH_SCALAR] = {sc_##E##M##f32, sc_##E##M##f64}}
#endif

#define VM_KERN_NONE(E) {.u = {{0}}}
#define VM_KERN_UNARY(E) {.u = VM_PER_PATH(E, _)}
#define VM_KERN_BINARY(E) {.b = VM_PER_PATH(E, _)}
#define VM_KERN_BINARY_SV(E)                                                                \
	{.b = VM_PER_PATH(E, _), .s = {VM_PER_PATH(E, _sv_), VM_PER_PATH(E, _vs_)}, .arith = VM_ARITH_##E}

static const struct vm_kern vm_kern[TIR_OP_COUNT] = {
#define X(e, name, kind, sig, rule, fuse, cost, vec) [TIR_OP_##e] = VM_KERN_##vec(e),
#include "../ir/ops.def"
#undef X
};

/* ---- the paths ---- */

struct vm_path {
	const char *name;
	const struct vm_ops *o32, *o64;
};

static const struct vm_path vm_paths[TIR_VMATH_PATH_COUNT] = {
	[TIR_VMATH_SCALAR] = {"scalar", &sc_ops_f32, &sc_ops_f64},
#if VM_X86
	[TIR_VMATH_SSE2] = {"sse2", &s2_ops_f32, &s2_ops_f64},
	[TIR_VMATH_AVX2] = {"avx2", &a2_ops_f32, &a2_ops_f64},
	[TIR_VMATH_AVX512] = {"avx512", &a5_ops_f32, &a5_ops_f64},
#else
	[TIR_VMATH_SSE2] = {"sse2", NULL, NULL},
	[TIR_VMATH_AVX2] = {"avx2", NULL, NULL},
	[TIR_VMATH_AVX512] = {"avx512", NULL, NULL},
#endif
};

static pthread_once_t vm_once = PTHREAD_ONCE_INIT;
int tir_vmath_chosen = -1;

bool tir_vmath_path_ok(enum tir_vmath_path p)
{
#if VM_X86
	/* (the checks include the OS saving the vector registers) */
	switch (p) {
	case TIR_VMATH_SCALAR: return true;
	case TIR_VMATH_SSE2: return true;       /* x86-64's baseline */
	case TIR_VMATH_AVX2: return TIR_CPU_HAS(AVX2, "avx2") && TIR_CPU_HAS(FMA, "fma");
	case TIR_VMATH_AVX512: return TIR_CPU_HAS(AVX512F, "avx512f");
	default: return false;
	}
#else
	return p == TIR_VMATH_SCALAR;
#endif
}

/* TIR_VMATH's path: the best for unset, empty or "auto", -1 for a name
 * that is no path's. */
static int vm_env_path(void)
{
	const char *want = getenv("TIR_VMATH");
	if (!want || !*want || strcmp(want, "auto") == 0)
		return TIR_VMATH_PATH_COUNT - 1;
	for (int k = 0; k < TIR_VMATH_PATH_COUNT; k++)
		if (strcmp(want, vm_paths[k].name) == 0)
			return k;
	return -1;
}

/* The best path the CPU has, or at most the one TIR_VMATH names. */
static void vm_choose(void)
{
	int p = vm_env_path();
	if (p < 0)
		p = TIR_VMATH_PATH_COUNT - 1;
	while (p > TIR_VMATH_SCALAR && !tir_vmath_path_ok((enum tir_vmath_path)p))
		p--;
	__atomic_store_n(&tir_vmath_chosen, p, __ATOMIC_RELAXED);
}

int tir_vmath_choose(void)
{
	pthread_once(&vm_once, vm_choose);
	return __atomic_load_n(&tir_vmath_chosen, __ATOMIC_RELAXED);
}

/* Called per block by fused kernels: after the first choice, one load. */
static inline const struct vm_path *vm_path(void)
{
	return &vm_paths[tir_vmath_path()];
}

const char *tir_vector_path(void)
{
	return vm_path()->name;
}

int tir_vector_path_check(struct tir_err *err)
{
	if (vm_env_path() >= 0)
		return 0;
	return tir_errf(err, TIR_EUNSUPPORTED, NULL,
			"TIR_VMATH=%s: unknown vector path (scalar, sse2, avx2, avx512)",
			getenv("TIR_VMATH"));
}

bool tir_vmath_unary_op(enum tir_op op)
{
	return (unsigned)op < TIR_OP_COUNT && vm_kern[op].u[TIR_VMATH_SCALAR][0];
}

bool tir_vmath_binary_op(enum tir_op op)
{
	return (unsigned)op < TIR_OP_COUNT && vm_kern[op].b[TIR_VMATH_SCALAR][0];
}

void tir_vmath_f32(enum tir_op op, float *dst, const float *src, int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_kern[op].u[tir_vmath_path()][0](dst, src, n);
}

void tir_vmath_f64(enum tir_op op, double *dst, const double *src, int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_kern[op].u[tir_vmath_path()][1](dst, src, n);
}

void tir_vmath2_f32(enum tir_op op, float *dst, const float *a, const float *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_kern[op].b[tir_vmath_path()][0](dst, a, b, n);
}

void tir_vmath2_f64(enum tir_op op, double *dst, const double *a, const double *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_kern[op].b[tir_vmath_path()][1](dst, a, b, n);
}

double tir_vmath_expsum_f32(float *dst, const float *src, float m, int64_t n)
{
	return n > 0 ? vm_path()->o32->expsum(dst, src, m, n) : 0;
}

double tir_vmath_expsum_f64(double *dst, const double *src, double m, int64_t n)
{
	return n > 0 ? vm_path()->o64->expsum(dst, src, m, n) : 0;
}

tir_vmath1_fn tir_vmath_unary_fn(enum tir_op op, enum tir_dtype dt)
{
	if (!tir_vmath_unary_op(op) || (dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64))
		return NULL;
	return vm_kern[op].u[tir_vmath_path()][dt == TIR_DTYPE_F64];
}

tir_vmath2_fn tir_vmath_binary_fn(enum tir_op op, enum tir_dtype dt)
{
	if (!tir_vmath_binary_op(op) || (dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64))
		return NULL;
	return vm_kern[op].b[tir_vmath_path()][dt == TIR_DTYPE_F64];
}

char tir_vmath_binary_arith(enum tir_op op)
{
	return (unsigned)op < TIR_OP_COUNT ? vm_kern[op].arith : 0;
}

tir_vmath2_fn tir_vmath_binary_scalar_fn(enum tir_op op, enum tir_dtype dt, int k)
{
	if (!tir_vmath_binary_op(op) || (dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64) || (k != 0 && k != 1))
		return NULL;
	return vm_kern[op].s[k][tir_vmath_path()][dt == TIR_DTYPE_F64];
}

void tir_vmath_moments_f32(const float *x, int64_t n, double c, double *s1, double *s2)
{
	vm_path()->o32->moments(x, n, c, s1, s2);
}

void tir_vmath_moments_f64(const double *x, int64_t n, double c, double *s1, double *s2)
{
	vm_path()->o64->moments(x, n, c, s1, s2);
}

void tir_vmath_norm_f32(float *o, const float *x, const float *w, const float *b, double mean,
			double r, int64_t n)
{
	vm_path()->o32->norm(o, x, w, b, mean, r, n);
}

void tir_vmath_norm_f64(double *o, const double *x, const double *w, const double *b,
			double mean, double r, int64_t n)
{
	vm_path()->o64->norm(o, x, w, b, mean, r, n);
}

/* ---- the test hook ---- */

static enum tir_vmath_path vm_path_index(enum tir_vmath_path p)
{
	TIR_ASSERT(p >= 0 && p < TIR_VMATH_PATH_COUNT && tir_vmath_path_ok(p));
	return p;
}

static const struct vm_path *vm_path_on(enum tir_vmath_path p)
{
	return &vm_paths[vm_path_index(p)];
}

void tir_vmath_f32_on(enum tir_vmath_path p, enum tir_op op, float *dst, const float *src,
		      int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_kern[op].u[vm_path_index(p)][0](dst, src, n);
}

void tir_vmath_f64_on(enum tir_vmath_path p, enum tir_op op, double *dst, const double *src,
		      int64_t n)
{
	TIR_ASSERT(tir_vmath_unary_op(op));
	if (n > 0)
		vm_kern[op].u[vm_path_index(p)][1](dst, src, n);
}

void tir_vmath2_f32_on(enum tir_vmath_path p, enum tir_op op, float *dst, const float *a,
		       const float *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_kern[op].b[vm_path_index(p)][0](dst, a, b, n);
}

void tir_vmath2_f64_on(enum tir_vmath_path p, enum tir_op op, double *dst, const double *a,
		       const double *b, int64_t n)
{
	TIR_ASSERT(tir_vmath_binary_op(op));
	if (n > 0)
		vm_kern[op].b[vm_path_index(p)][1](dst, a, b, n);
}

double tir_vmath_expsum_f32_on(enum tir_vmath_path p, float *dst, const float *src, float m,
			       int64_t n)
{
	return n > 0 ? vm_path_on(p)->o32->expsum(dst, src, m, n) : 0;
}
