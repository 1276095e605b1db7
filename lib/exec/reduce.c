/*
 * reduce.c — the reference reduction kernel: sum mean max min prod var
 * argmax argmin over any set of axes of a strided tensor.  Axis
 * normalisation, keepdims and dtype promotion are the checker's and the
 * executor's business; this file only computes.
 *
 * x is walked once in (nearly) memory order; every element is folded into
 * the accumulator of the output it belongs to, so reducing the inner axis
 * and reducing outer axes are both plain 1-D loops over contiguous memory.
 */
#include "exec.h"
#include "iter.h"
#include "vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if TIR_ISA_X86
#include <immintrin.h>
#endif

/* One run of x handed to a fold function: n elements starting at x, x[j]
 * at x + j * xs.  They go to output o + j * os (os == 0: all to o) and,
 * for argmax/argmin, have positions idx + j * is along the reduced axes. */
struct run {
	const void *x;
	int64_t xs, n;
	int64_t o, os;
	int64_t idx, is;
};

typedef void (*fold_fn)(const struct run *r, void *acc, void *aux);

/* ---- contiguous float runs, 8 lanes at a time ----
 * The same lanes, in the same order, as the scalar loops below (each lane
 * is one element of a vector), so the same bits; built once per ISA
 * (TIR_ISA_BUILDS: suffixes _gen, _a2, _a5) and picked per call for the
 * vector path (TIR_ISA_PICK). */

typedef float v8f __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int64_t v8l __attribute__((vector_size(64)));

/* DEF_PAIRWISE's 8 <= n <= 128 case over contiguous x */
#define DEF_PW8(NAME, TGT, T, VT)                                            \
TGT static double NAME(const T *x, int64_t n)                               \
{                                                                            \
	VT f;                                                                \
	memcpy(&f, x, sizeof f);                                             \
	v8d p = __builtin_convertvector(f, v8d);                             \
	int64_t i = 8;                                                       \
	for (; i + 8 <= n; i += 8) {                                         \
		memcpy(&f, x + i, sizeof f);                                 \
		p += __builtin_convertvector(f, v8d);                        \
	}                                                                    \
	double t = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7])); \
	for (; i < n; i++)                                                   \
		t += (double)x[i];                                           \
	return t;                                                            \
}

/* DEF_PW8 of x[0, h) plus DEF_PW8 of y = x + h over [0, m) (h, m in
 * [8, 128], DEF_PAIRWISE's two halves of a run both of which are leaves): the two
 * side by side, each with its own lanes and the same adds in the same
 * order, so the same bits; one alone waits on each add. */
#define PW8_TREE(p) (((p)[0] + (p)[1]) + ((p)[2] + (p)[3])) + (((p)[4] + (p)[5]) + ((p)[6] + (p)[7]))
#define DEF_PW8X2(NAME, TGT, T, VT, LOAD)                                    \
TGT static double NAME(const T *x, int64_t h, int64_t m)                    \
{                                                                            \
	const T *y = x + h;                                                  \
	v8d p = LOAD(x), q = LOAD(y);                                        \
	int64_t i = 8, j;                                                    \
	for (; i + 8 <= h && i + 8 <= m; i += 8) {                           \
		p += LOAD(x + i);                                            \
		q += LOAD(y + i);                                            \
	}                                                                    \
	for (j = i; i + 8 <= h; i += 8)                                      \
		p += LOAD(x + i);                                            \
	for (; j + 8 <= m; j += 8)                                           \
		q += LOAD(y + j);                                            \
	double t = PW8_TREE(p), u = PW8_TREE(q);                             \
	for (; i < h; i++)                                                   \
		t += (double)x[i];                                           \
	for (; j < m; j++)                                                   \
		u += (double)y[j];                                           \
	return t + u;                                                        \
}

/* 8 elements at x as doubles */
#define LOAD8(VT, x) ({ VT f_; memcpy(&f_, (x), sizeof f_); __builtin_convertvector(f_, v8d); })
#define LOAD8F(x) LOAD8(v8f, x)
#define LOAD8D(x) LOAD8(v8d, x)

DEF_PW8(pw8_f32_gen, , float, v8f)
DEF_PW8X2(pw8x2_f32_gen, , float, v8f, LOAD8F)
#if TIR_ISA_X86
DEF_PW8(pw8_f32_a2, TIR_ISA_A2, float, v8f)
DEF_PW8X2(pw8x2_f32_a2, TIR_ISA_A2, float, v8f, LOAD8F)
/* (AVX-512's one conversion of 8 floats, as pw8_f32_a5) */
#define LOAD8F_A5(x) ((v8d)_mm512_cvtps_pd(_mm256_loadu_ps(x)))
DEF_PW8X2(pw8x2_f32_a5, TIR_ISA_A5, float, v8f, LOAD8F_A5)
/* DEF_PW8 with AVX-512's one conversion of 8 floats (GCC makes the
 * generic one two half conversions and a shuffle per group): the same
 * lanes, the same adds, the same bits, in fewer cycles a row */
TIR_ISA_A5 static double pw8_f32_a5(const float *x, int64_t n)
{
	__m512d p = _mm512_cvtps_pd(_mm256_loadu_ps(x));
	int64_t i = 8;
	for (; i + 8 <= n; i += 8)
		p = _mm512_add_pd(p, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
	v8d q = (v8d)p;
	double t = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
	for (; i < n; i++)
		t += (double)x[i];
	return t;
}
#endif

/* DEF_EXTREMUM's n >= 16 case over contiguous x (TAKE_FMAX / TAKE_FMIN
 * lane by lane: the greater (smaller) value or a NaN replaces the lane).
 * A lane's value is the first greatest (smallest) of its elements, or its
 * last NaN: so from 48 elements on, its groups of 8 are split over four
 * accumulators (no chain of compares one long) and the four joined, which
 * gives the one value unless the order would decide it: a NaN, or equal
 * values of other bits (0 and -0); then the lanes are redone in order. */
/* lanes of a where mask t is set, else of b */
#define EXT_SEL(VT, VI, t, a, b) ((VT)(((VI)(a) & (t)) | ((VI)(b) & ~(t))))
/* m takes v's lanes that are greater (smaller) or NaN */
#define EXT_TAKE(VT, VI, CMP, m, v) ((m) = EXT_SEL(VT, VI, ((v) CMP (m)) | ((v) != (v)), v, m))
/* joining m1 into m: a NaN or a tie of other bits is marked in bad */
#define EXT_JOIN(VT, VI, CMP, m, m1, bad)                                    \
	do {                                                                 \
		(bad) |= ((m1) == (m)) & ((VI)(m1) != (VI)(m));              \
		(m) = EXT_SEL(VT, VI, (m1) CMP (m), m1, m);                  \
	} while (0)

#define DEF_EXT8(NAME, TGT, T, VT, VI, CMP)                                  \
TGT static T NAME(const T *x, int64_t n, T a)                               \
{                                                                            \
	VT m, v;                                                             \
	memcpy(&m, x, sizeof m);                                             \
	int64_t j = 8;                                                       \
	if (n >= 48) {                                                       \
		VT m1, m2, m3, w;                                            \
		memcpy(&m1, x + 8, sizeof m1);                               \
		memcpy(&m2, x + 16, sizeof m2);                              \
		memcpy(&m3, x + 24, sizeof m3);                              \
		for (j = 32; j + 32 <= n; j += 32) {                         \
			memcpy(&v, x + j, sizeof v);                         \
			memcpy(&w, x + j + 8, sizeof w);                     \
			EXT_TAKE(VT, VI, CMP, m, v);                         \
			EXT_TAKE(VT, VI, CMP, m1, w);                        \
			memcpy(&v, x + j + 16, sizeof v);                    \
			memcpy(&w, x + j + 24, sizeof w);                    \
			EXT_TAKE(VT, VI, CMP, m2, v);                        \
			EXT_TAKE(VT, VI, CMP, m3, w);                        \
		}                                                            \
		for (; j + 8 <= n; j += 8) {                                 \
			memcpy(&v, x + j, sizeof v);                         \
			EXT_TAKE(VT, VI, CMP, m, v);                         \
		}                                                            \
		/* join: any NaN, or a tie of other bits, and order decides */ \
		VI bad = (m != m) | (m1 != m1) | (m2 != m2) | (m3 != m3);    \
		EXT_JOIN(VT, VI, CMP, m, m1, bad);                           \
		EXT_JOIN(VT, VI, CMP, m, m2, bad);                           \
		EXT_JOIN(VT, VI, CMP, m, m3, bad);                           \
		bool redo = false;                                           \
		for (int k = 0; k < 8; k++)                                  \
			redo |= bad[k] != 0;                                 \
		if (redo) {                                                  \
			memcpy(&m, x, sizeof m);                             \
			j = 8;                                               \
		}                                                            \
	}                                                                    \
	for (; j + 8 <= n; j += 8) {                                         \
		memcpy(&v, x + j, sizeof v);                                 \
		EXT_TAKE(VT, VI, CMP, m, v);                                 \
	}                                                                    \
	for (int k = 0; k < 8; k++)                                          \
		a = (m[k] CMP a || m[k] != m[k]) ? m[k] : a;                 \
	for (; j < n; j++)                                                   \
		a = (x[j] CMP a || x[j] != x[j]) ? x[j] : a;                 \
	return a;                                                            \
}

/* acc[j] += x[j] for contiguous acc and x (a reduction over outer axes:
 * each element to its own accumulator) */
#define DEF_ADDV(NAME, TGT, T, VT)                                           \
TGT static void NAME(double *acc, const T *x, int64_t n)                    \
{                                                                            \
	int64_t j = 0;                                                       \
	for (; j + 8 <= n; j += 8) {                                         \
		VT f;                                                        \
		v8d a;                                                       \
		memcpy(&f, x + j, sizeof f);                                 \
		memcpy(&a, acc + j, sizeof a);                               \
		a += __builtin_convertvector(f, v8d);                        \
		memcpy(acc + j, &a, sizeof a);                               \
	}                                                                    \
	for (; j < n; j++)                                                   \
		acc[j] += (double)x[j];                                      \
}

/* Each ISA's build of the functions above, and the test hook's name */
#define DEF_RED_BUILD(SFX, TGT)                                              \
	DEF_PW8(pw8_f64_##SFX, TGT, double, v8d)                              \
	DEF_PW8X2(pw8x2_f64_##SFX, TGT, double, v8d, LOAD8D)                  \
	DEF_EXT8(max8_f32_##SFX, TGT, float, v8f, v8i, >)                     \
	DEF_EXT8(max8_f64_##SFX, TGT, double, v8d, v8l, >)                    \
	DEF_EXT8(min8_f32_##SFX, TGT, float, v8f, v8i, <)                     \
	DEF_EXT8(min8_f64_##SFX, TGT, double, v8d, v8l, <)                    \
	DEF_ADDV(addv_f32_##SFX, TGT, float, v8f)                             \
	DEF_ADDV(addv_f64_##SFX, TGT, double, v8d)                            \
	static const char *red_build_##SFX(void) { return #SFX; }

TIR_ISA_BUILDS(DEF_RED_BUILD)

const char *tir_reduce_build(void)
{
	return TIR_ISA_PICK(red_build)();
}

/* ---- pairwise sums in double (the inner-axis case of sum, mean, var) ---- */

#define DEF_PAIRWISE(NAME, T, HAS8, PW8, PW8X2)                              \
static double NAME(const T *x, int64_t n, int64_t s)                        \
{                                                                            \
	if (n < 8) {                                                         \
		double t = 0;                                                \
		for (int64_t i = 0; i < n; i++)                              \
			t += (double)x[i * s];                               \
		return t;                                                    \
	}                                                                    \
	if (HAS8 && n <= 128 && s == 1)                                      \
		return PW8(x, n);                                            \
	if (n <= 128) {                                                      \
		double p[8];                                                 \
		for (int k = 0; k < 8; k++)                                  \
			p[k] = (double)x[k * s];                             \
		int64_t i = 8;                                               \
		for (; i + 8 <= n; i += 8)                                   \
			for (int k = 0; k < 8; k++)                          \
				p[k] += (double)x[(i + k) * s];              \
		double t = ((p[0] + p[1]) + (p[2] + p[3])) +                 \
			   ((p[4] + p[5]) + (p[6] + p[7]));                  \
		for (; i < n; i++)                                           \
			t += (double)x[i * s];                               \
		return t;                                                    \
	}                                                                    \
	int64_t h = n / 2;                                                   \
	h -= h % 8;                                                          \
	if (HAS8 && n - h <= 128 && s == 1) /* (h <= n - h: both leaves) */ \
		return PW8X2(x, h, n - h);                                   \
	return NAME(x, h, s) + NAME(x + h * s, n - h, s);                    \
}

/* var's second pass over one run: the squared deviations from m summed by
 * DEF_PAIRWISE's tree (the same splits, 8 lanes below 129 elements), so
 * that a long run's parts go to several threads as a sum's do.  One build
 * (no ISA variants: nothing here may contract into an FMA). */
#define DEF_PAIRWISE_DEV(NAME, T)                                            \
static double NAME(const T *x, int64_t n, int64_t s, double m)              \
{                                                                            \
	if (n < 8) {                                                         \
		double t = 0;                                                \
		for (int64_t i = 0; i < n; i++) {                            \
			double d = (double)x[i * s] - m;                     \
			t += d * d;                                          \
		}                                                            \
		return t;                                                    \
	}                                                                    \
	if (n <= 128) {                                                      \
		double p[8];                                                 \
		for (int k = 0; k < 8; k++) {                                \
			double d = (double)x[k * s] - m;                     \
			p[k] = d * d;                                        \
		}                                                            \
		int64_t i = 8;                                               \
		for (; i + 8 <= n; i += 8)                                   \
			for (int k = 0; k < 8; k++) {                        \
				double d = (double)x[(i + k) * s] - m;       \
				p[k] += d * d;                               \
			}                                                    \
		double t = ((p[0] + p[1]) + (p[2] + p[3])) +                 \
			   ((p[4] + p[5]) + (p[6] + p[7]));                  \
		for (; i < n; i++) {                                         \
			double d = (double)x[i * s] - m;                     \
			t += d * d;                                          \
		}                                                            \
		return t;                                                    \
	}                                                                    \
	int64_t h = n / 2;                                                   \
	h -= h % 8;                                                          \
	return NAME(x, h, s, m) + NAME(x + h * s, n - h, s, m);              \
}

DEF_PAIRWISE_DEV(pwd_f32, float)
DEF_PAIRWISE_DEV(pwd_f64, double)
DEF_PAIRWISE_DEV(pwd_i32, int32_t)
DEF_PAIRWISE_DEV(pwd_i64, int64_t)

#define NO_PW8(x, n) 0.0
#define NO_PW8X2(x, h, m) 0.0
DEF_PAIRWISE(pw_f32, float, 1, TIR_ISA_PICK(pw8_f32), TIR_ISA_PICK(pw8x2_f32))
DEF_PAIRWISE(pw_f64, double, 1, TIR_ISA_PICK(pw8_f64), TIR_ISA_PICK(pw8x2_f64))
DEF_PAIRWISE(pw_i32, int32_t, 0, NO_PW8, NO_PW8X2)
DEF_PAIRWISE(pw_i64, int64_t, 0, NO_PW8, NO_PW8X2)

/* ---- fold functions, one per (op, element type) ---- */

/* sum into a double accumulator (float sums, and mean/var of anything) */
#define NO_ADDV(acc, x, n) ((void)0)

#define DEF_SUMD(NAME, T, PW, HASV, ADDV)                                    \
static void NAME(const struct run *r, void *accv, void *aux)                \
{                                                                            \
	const T *x = r->x;                                                   \
	double *acc = accv;                                                  \
	if (r->os == 0) {                                                    \
		acc[r->o] += PW(x, r->n, r->xs);                             \
		return;                                                      \
	}                                                                    \
	if (HASV && r->os == 1 && r->xs == 1) {                              \
		ADDV(acc + r->o, x, r->n);                                   \
		return;                                                      \
	}                                                                    \
	for (int64_t j = 0; j < r->n; j++)                                   \
		acc[r->o + j * r->os] += (double)x[j * r->xs];               \
}

DEF_SUMD(sumd_f32, float, pw_f32, 1, TIR_ISA_PICK(addv_f32))
DEF_SUMD(sumd_f64, double, pw_f64, 1, TIR_ISA_PICK(addv_f64))
DEF_SUMD(sumd_i32, int32_t, pw_i32, 0, NO_ADDV)
DEF_SUMD(sumd_i64, int64_t, pw_i64, 0, NO_ADDV)

/* product into a double accumulator (floats) */
#define DEF_PRODD(NAME, T)                                                   \
static void NAME(const struct run *r, void *accv, void *aux)                \
{                                                                            \
	const T *x = r->x;                                                   \
	double *acc = accv;                                                  \
	if (r->os == 0) {                                                    \
		double t = acc[r->o];                                        \
		for (int64_t j = 0; j < r->n; j++)                           \
			t *= (double)x[j * r->xs];                           \
		acc[r->o] = t;                                               \
		return;                                                      \
	}                                                                    \
	for (int64_t j = 0; j < r->n; j++)                                   \
		acc[r->o + j * r->os] *= (double)x[j * r->xs];               \
}

DEF_PRODD(prodd_f32, float)
DEF_PRODD(prodd_f64, double)

/* integer sum and product, wrapping: the accumulator is out itself seen
 * as unsigned, so overflow is defined and gives NumPy's wrapped result */
#define DEF_WRAP(NAME, T, U, OP)                                             \
static void NAME(const struct run *r, void *accv, void *aux)                \
{                                                                            \
	const T *x = r->x;                                                   \
	U *acc = accv;                                                       \
	if (r->os == 0) {                                                    \
		U t = acc[r->o];                                             \
		for (int64_t j = 0; j < r->n; j++)                           \
			t = t OP (U)x[j * r->xs];                            \
		acc[r->o] = t;                                               \
		return;                                                      \
	}                                                                    \
	for (int64_t j = 0; j < r->n; j++) {                                 \
		U *a = &acc[r->o + j * r->os];                               \
		*a = *a OP (U)x[j * r->xs];                                  \
	}                                                                    \
}

DEF_WRAP(sumw_i32, int32_t, uint32_t, +)
DEF_WRAP(sumw_i64, int64_t, uint64_t, +)
DEF_WRAP(prodw_i32, int32_t, uint32_t, *)
DEF_WRAP(prodw_i64, int64_t, uint64_t, *)

/* max/min straight into out, which starts at the identity (-inf, +inf,
 * INT_MIN, ...).  TAKE(v, a): v replaces a; for floats a NaN always does,
 * and nothing replaces a NaN. */
#define TAKE_MAX(v, a) ((v) > (a))
#define TAKE_MIN(v, a) ((v) < (a))
#define TAKE_FMAX(v, a) ((v) > (a) || (v) != (v))
#define TAKE_FMIN(v, a) ((v) < (a) || (v) != (v))

#define DEF_EXTREMUM(NAME, T, TAKE, HAS8, EXT8)                                \
static void NAME(const struct run *r, void *accv, void *aux)                \
{                                                                            \
	const T *x = r->x;                                                   \
	T *acc = accv;                                                       \
	if (HAS8 && r->os == 0 && r->xs == 1 && r->n >= 16) {                \
		acc[r->o] = EXT8(x, r->n, acc[r->o]);                        \
		return;                                                      \
	}                                                                    \
	if (r->os == 0) {                                                    \
		T a = acc[r->o];                                             \
		int64_t j = 0;                                               \
		if (r->n >= 16) {   /* 8 lanes: no loop-carried dependency */ \
			T m[8];                                              \
			for (int k = 0; k < 8; k++)                          \
				m[k] = x[k * r->xs];                         \
			for (j = 8; j + 8 <= r->n; j += 8)                   \
				for (int k = 0; k < 8; k++) {                \
					T v = x[(j + k) * r->xs];            \
					m[k] = TAKE(v, m[k]) ? v : m[k];     \
				}                                            \
			for (int k = 0; k < 8; k++)                          \
				a = TAKE(m[k], a) ? m[k] : a;                \
		}                                                            \
		for (; j < r->n; j++) {                                      \
			T v = x[j * r->xs];                                  \
			a = TAKE(v, a) ? v : a;                              \
		}                                                            \
		acc[r->o] = a;                                               \
		return;                                                      \
	}                                                                    \
	for (int64_t j = 0; j < r->n; j++) {                                 \
		T v = x[j * r->xs];                                          \
		T *a = &acc[r->o + j * r->os];                               \
		if (TAKE(v, *a))                                             \
			*a = v;                                              \
	}                                                                    \
}

#define NO_EXT8(x, n, a) (a)
DEF_EXTREMUM(max_f32, float, TAKE_FMAX, 1, TIR_ISA_PICK(max8_f32))
DEF_EXTREMUM(max_f64, double, TAKE_FMAX, 1, TIR_ISA_PICK(max8_f64))
DEF_EXTREMUM(max_i32, int32_t, TAKE_MAX, 0, NO_EXT8)
DEF_EXTREMUM(max_i64, int64_t, TAKE_MAX, 0, NO_EXT8)
DEF_EXTREMUM(max_b, uint8_t, TAKE_MAX, 0, NO_EXT8)
DEF_EXTREMUM(min_f32, float, TAKE_FMIN, 1, TIR_ISA_PICK(min8_f32))
DEF_EXTREMUM(min_f64, double, TAKE_FMIN, 1, TIR_ISA_PICK(min8_f64))
DEF_EXTREMUM(min_i32, int32_t, TAKE_MIN, 0, NO_EXT8)
DEF_EXTREMUM(min_i64, int64_t, TAKE_MIN, 0, NO_EXT8)
DEF_EXTREMUM(min_b, uint8_t, TAKE_MIN, 0, NO_EXT8)

/* var's second pass: squared deviations from the mean (aux) into acc;
 * a run of one output pairwise (as sums are), else one by one */
#define DEF_DEV2(NAME, T, PWD)                                               \
static void NAME(const struct run *r, void *accv, void *aux)                \
{                                                                            \
	const T *x = r->x;                                                   \
	double *acc = accv;                                                  \
	const double *mean = aux;                                            \
	if (r->os == 0) {                                                    \
		acc[r->o] += PWD(x, r->n, r->xs, mean[r->o]);                \
		return;                                                      \
	}                                                                    \
	for (int64_t j = 0; j < r->n; j++) {                                 \
		int64_t o = r->o + j * r->os;                                \
		double d = (double)x[j * r->xs] - mean[o];                   \
		acc[o] += d * d;                                             \
	}                                                                    \
}

DEF_DEV2(dev2_f32, float, pwd_f32)
DEF_DEV2(dev2_f64, double, pwd_f64)
DEF_DEV2(dev2_i32, int32_t, pwd_i32)
DEF_DEV2(dev2_i64, int64_t, pwd_i64)

/* argmax/argmin: acc is out (i64, -1 until the first element), aux the
 * best value so far (double for floats, int64 otherwise: both exact).
 * The walk may visit x in any order, so BEAT(v, i, b, bi) says whether
 * value v at index i displaces b at bi: a greater (smaller) value, or an
 * equal one at a smaller index; any NaN beats a number, and among NaNs
 * the smallest index wins. */
#define BEAT_MAX(v, i, b, bi) ((v) > (b) || ((v) == (b) && (i) < (bi)))
#define BEAT_MIN(v, i, b, bi) ((v) < (b) || ((v) == (b) && (i) < (bi)))
#define BEAT_FMAX(v, i, b, bi) \
	((b) != (b) ? (v) != (v) && (i) < (bi) : (v) != (v) || BEAT_MAX(v, i, b, bi))
#define BEAT_FMIN(v, i, b, bi) \
	((b) != (b) ? (v) != (v) && (i) < (bi) : (v) != (v) || BEAT_MIN(v, i, b, bi))

#define DEF_ARG(NAME, T, B, BEAT)                                            \
static void NAME(const struct run *r, void *accv, void *aux)                \
{                                                                            \
	const T *x = r->x;                                                   \
	int64_t *out = accv;                                                 \
	B *best = aux;                                                       \
	if (r->os == 0) {                                                    \
		int64_t bi = out[r->o];                                      \
		B b = best[r->o];                                            \
		for (int64_t j = 0; j < r->n; j++) {                         \
			B v = (B)x[j * r->xs];                               \
			int64_t i = r->idx + j * r->is;                      \
			if (bi < 0 || BEAT(v, i, b, bi)) {                   \
				b = v;                                       \
				bi = i;                                      \
			}                                                    \
		}                                                            \
		out[r->o] = bi;                                              \
		best[r->o] = b;                                              \
		return;                                                      \
	}                                                                    \
	for (int64_t j = 0; j < r->n; j++) {                                 \
		int64_t o = r->o + j * r->os, i = r->idx + j * r->is;        \
		B v = (B)x[j * r->xs];                                       \
		if (out[o] < 0 || BEAT(v, i, best[o], out[o])) {            \
			best[o] = v;                                         \
			out[o] = i;                                          \
		}                                                            \
	}                                                                    \
}

DEF_ARG(argmax_f32, float, double, BEAT_FMAX)
DEF_ARG(argmax_f64, double, double, BEAT_FMAX)
DEF_ARG(argmax_i32, int32_t, int64_t, BEAT_MAX)
DEF_ARG(argmax_i64, int64_t, int64_t, BEAT_MAX)
DEF_ARG(argmax_b, uint8_t, int64_t, BEAT_MAX)
DEF_ARG(argmin_f32, float, double, BEAT_FMIN)
DEF_ARG(argmin_f64, double, double, BEAT_FMIN)
DEF_ARG(argmin_i32, int32_t, int64_t, BEAT_MIN)
DEF_ARG(argmin_i64, int64_t, int64_t, BEAT_MIN)
DEF_ARG(argmin_b, uint8_t, int64_t, BEAT_MIN)

/* ---- the walk ---- */

struct plan {
	int rank;
	int64_t shape[TIR_MAX_RANK];
	int64_t xs[TIR_MAX_RANK], os[TIR_MAX_RANK], is[TIR_MAX_RANK];
	int64_t count;    /* elements folded into each output */
	int64_t onumel;   /* outputs */
};

/* a * b for sizes >= 0, saturating: a shape with a 0 axis may have
 * others whose product overflows, and then nothing is visited anyway */
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

/* Output strides: out is contiguous over the kept axes (0 on reduced
 * ones).  Index strides: row-major over the reduced axes (0 on kept ones),
 * the flat position argmax reports.  The axes are then sorted
 * outermost-first by |x stride| so the walk follows memory (a transposed
 * view reduces as fast as a contiguous one). */
static void plan_init(struct plan *p, const struct tir_tensor *x, const bool *mask)
{
	int r = x->rank;
	int64_t os = 1, is = 1;
	p->rank = r;
	p->count = 1;
	p->onumel = 1;
	for (int d = r - 1; d >= 0; d--) {
		p->shape[d] = x->shape[d];
		p->xs[d] = x->strides[d];
		p->os[d] = mask[d] ? 0 : os;
		p->is[d] = mask[d] ? is : 0;
		if (mask[d]) {
			is = mul_sat(is, x->shape[d]);
			p->count = mul_sat(p->count, x->shape[d]);
		} else {
			os = mul_sat(os, x->shape[d]);
			p->onumel = mul_sat(p->onumel, x->shape[d]);
		}
	}
	for (int i = 1; i < r; i++) {            /* stable insertion sort */
		int64_t n = p->shape[i], a = p->xs[i], b = p->os[i], c = p->is[i];
		int j = i;
		for (; j > 0 && llabs(p->xs[j - 1]) < llabs(a); j--) {
			p->shape[j] = p->shape[j - 1];
			p->xs[j] = p->xs[j - 1];
			p->os[j] = p->os[j - 1];
			p->is[j] = p->is[j - 1];
		}
		p->shape[j] = n;
		p->xs[j] = a;
		p->os[j] = b;
		p->is[j] = c;
	}
}

/* Fold indices [lo, hi) of plan axis ax (all of it: ax < 0). */
static void walk_part(const struct plan *p, const struct tir_tensor *x, fold_fn fold,
		      void *acc, void *aux, int ax, int64_t lo, int64_t hi)
{
	const int64_t *st[3] = {p->xs, p->os, p->is};
	int64_t shape[TIR_MAX_RANK];
	memcpy(shape, p->shape, sizeof shape);
	if (ax >= 0)
		shape[ax] = hi - lo;
	else
		lo = 0;
	struct tir_iter it;
	if (!tir_iter_init(&it, p->rank, shape, 3, st))
		return;
	int64_t esz = (int64_t)tir_dtype_size(x->dtype);
	int64_t x0 = ax >= 0 ? lo * p->xs[ax] : 0, o0 = ax >= 0 ? lo * p->os[ax] : 0;
	int64_t i0 = ax >= 0 ? lo * p->is[ax] : 0;
	const char *base = (const char *)tir_tensor_data(x) + x0 * esz;
	struct run r = {
		.xs = it.istride[0], .n = it.inner, .os = it.istride[1], .is = it.istride[2],
	};
	do {
		r.x = base + it.off[0] * esz;
		r.o = o0 + it.off[1];
		r.idx = i0 + it.off[2];
		fold(&r, acc, aux);
	} while (tir_iter_next(&it));
}

static void walk(const struct plan *p, const struct tir_tensor *x, fold_fn fold,
		 void *acc, void *aux)
{
	walk_part(p, x, fold, acc, aux, -1, 0, 0);
}

/* A walk cut into tasks along one kept axis: every output is folded by
 * one task, from the same runs in the same order as by walk (a kept axis
 * never joins a run of reduced elements, and along a kept run each output
 * takes its one element), so the result is walk's, bit for bit, for any
 * cut and thread count.  The axis is the outermost kept one (in the plan's
 * memory order) of length >= 4; its pieces, of 2 or more indices each,
 * hold about tir_task_items elements of x.  A reduction to one output
 * has no kept axis and runs as one task. */
struct walk_job {
	const struct plan *p;
	const struct tir_tensor *x;
	fold_fn fold;
	void *acc, *aux;
	int ax;
	int64_t len, ntasks;
};

static void walk_task(void *ctx, int64_t t)
{
	const struct walk_job *j = ctx;
	int64_t lo = t * j->len / j->ntasks, hi = (t + 1) * j->len / j->ntasks;
	walk_part(j->p, j->x, j->fold, j->acc, j->aux, j->ax, lo, hi);
}

#define MIN_RUN 128

static void walk_pool(const struct plan *p, const struct tir_tensor *x, fold_fn fold,
		      void *acc, void *aux)
{
	int ax = -1;
	for (int d = 0; d < p->rank && ax < 0; d++)
		if (p->os[d] != 0 && p->shape[d] >= 4)
			ax = d;
	int64_t total = mul_sat(p->onumel, p->count);
	if (ax < 0 || total == INT64_MAX) {
		walk(p, x, fold, acc, aux);
		return;
	}
	int64_t len = p->shape[ax], per = total / len;     /* elements per index */
	int64_t items = tir_task_items(total, (int64_t)tir_dtype_size(x->dtype));
	int64_t ntasks = per >= items ? len : (len * per + items - 1) / items;
	if (ntasks > len / 2)
		ntasks = len / 2;
	/* along the axis x is contiguous in (a reduction down columns), a
	 * task's runs are its piece of the axis: pieces of at least
	 * MIN_RUN elements, as fused column reductions keep theirs, or
	 * the cost of each run and reads of a line or two a row dominate */
	if (p->xs[ax] == 1 && ntasks > len / MIN_RUN)
		ntasks = len / MIN_RUN;
	if (ntasks <= 1) {
		walk(p, x, fold, acc, aux);
		return;
	}
	struct walk_job j = {p, x, fold, acc, aux, ax, len, ntasks};
	tir_pool_run_shares(ntasks, walk_task, &j);
}

/* ---- the kernel ---- */

static const char *op_name(enum tir_op op)
{
	switch (op) {
	case TIR_OP_SUM: return "sum";
	case TIR_OP_MEAN: return "mean";
	case TIR_OP_MAX: return "max";
	case TIR_OP_MIN: return "min";
	case TIR_OP_PROD: return "prod";
	case TIR_OP_VAR: return "var";
	case TIR_OP_ARGMAX: return "argmax";
	case TIR_OP_ARGMIN: return "argmin";
	default: return "reduce";
	}
}

/* The fold for op over dtype dt (SUM/PROD on the accumulation type they
 * use; MEAN/VAR's first pass is sumd).  NULL when unsupported. */
static fold_fn pick(enum tir_op op, enum tir_dtype dt)
{
	static const fold_fn sumd[] = {NULL, sumd_i32, sumd_i64, sumd_f32, sumd_f64};
	static const fold_fn sumw[] = {NULL, sumw_i32, sumw_i64, sumd_f32, sumd_f64};
	static const fold_fn prod[] = {NULL, prodw_i32, prodw_i64, prodd_f32, prodd_f64};
	static const fold_fn dev2[] = {NULL, dev2_i32, dev2_i64, dev2_f32, dev2_f64};
	static const fold_fn mx[] = {max_b, max_i32, max_i64, max_f32, max_f64};
	static const fold_fn mn[] = {min_b, min_i32, min_i64, min_f32, min_f64};
	static const fold_fn amx[] = {argmax_b, argmax_i32, argmax_i64, argmax_f32, argmax_f64};
	static const fold_fn amn[] = {argmin_b, argmin_i32, argmin_i64, argmin_f32, argmin_f64};
	if ((unsigned)dt >= TIR_DTYPE_COUNT)
		return NULL;
	switch (op) {
	case TIR_OP_SUM: return sumw[dt];
	case TIR_OP_MEAN: return sumd[dt];
	case TIR_OP_VAR: return dev2[dt];
	case TIR_OP_PROD: return prod[dt];
	case TIR_OP_MAX: return mx[dt];
	case TIR_OP_MIN: return mn[dt];
	case TIR_OP_ARGMAX: return amx[dt];
	case TIR_OP_ARGMIN: return amn[dt];
	default: return NULL;
	}
}

/* out[i] = v[i] in out's dtype (float to int by tir's rule) */
static void store_f64(struct tir_tensor *out, const double *v, int64_t n)
{
	void *d = tir_tensor_data(out);
	switch (out->dtype) {
	case TIR_DTYPE_F32:
		for (int64_t i = 0; i < n; i++)
			((float *)d)[i] = (float)v[i];
		break;
	case TIR_DTYPE_F64:
		if (d != (const void *)v)
			memcpy(d, v, (size_t)n * sizeof(double));
		break;
	case TIR_DTYPE_I32:
		for (int64_t i = 0; i < n; i++)
			((int32_t *)d)[i] = tir_f2i32(v[i]);
		break;
	case TIR_DTYPE_I64:
		for (int64_t i = 0; i < n; i++)
			((int64_t *)d)[i] = tir_f2i64(v[i]);
		break;
	default:
		TIR_ASSERT(!"store_f64: bad dtype");
	}
}

/* Fill out's n elements with the constant f (floats) or i (integers, bool). */
static void fill(struct tir_tensor *out, int64_t n, double f, int64_t i)
{
	void *d = tir_tensor_data(out);
	for (int64_t k = 0; k < n; k++) {
		switch (out->dtype) {
		case TIR_DTYPE_BOOL: ((uint8_t *)d)[k] = (uint8_t)i; break;
		case TIR_DTYPE_I32: ((int32_t *)d)[k] = (int32_t)i; break;
		case TIR_DTYPE_I64: ((int64_t *)d)[k] = i; break;
		case TIR_DTYPE_F32: ((float *)d)[k] = (float)f; break;
		case TIR_DTYPE_F64: ((double *)d)[k] = f; break;
		default: TIR_ASSERT(!"fill: bad dtype");
		}
	}
}

/* An n-double scratch array: out's own memory when out is f64 and may
 * serve (*owned false), else malloc'd. */
static double *scratch(struct tir_tensor *out, int64_t n, bool use_out, bool *owned)
{
	if (use_out && out->dtype == TIR_DTYPE_F64) {
		*owned = false;
		return tir_tensor_data(out);
	}
	*owned = true;
	return malloc((size_t)(n ? n : 1) * sizeof(double));
}

static int reduce_empty(enum tir_op op, struct tir_tensor *out, int64_t onumel,
			struct tir_err *err)
{
	switch (op) {
	case TIR_OP_SUM:
		fill(out, onumel, 0.0, 0);
		return 0;
	case TIR_OP_PROD:
		fill(out, onumel, 1.0, 1);
		return 0;
	case TIR_OP_MEAN:
	case TIR_OP_VAR:   /* NaN as NumPy; an integer out gets NaN's cast */
		fill(out, onumel, NAN, out->dtype == TIR_DTYPE_I32 ? INT32_MIN : INT64_MIN);
		return 0;
	default:
		return tir_errf(err, TIR_ERUNTIME, NULL, "%s: reduction over an empty axis",
				op_name(op));
	}
}

/* ---- one output of a long contiguous run, in pieces on the pool ----
 * A reduction to one value would be one task of the walk (it has no kept
 * axis to cut); a pairwise sum's tree splits instead: the pieces of
 * tir_reduce_pw_split, each summed on its own, joined in the tree's
 * order, give the run's pairwise sum bit for bit whatever the threads. */
struct pool_job {
	tir_piece_fn part;
	void *ctx;
	bool dev;
	double m;
	int64_t lo[TIR_TASKS_WANT], len[TIR_TASKS_WANT];
	double sum[TIR_TASKS_WANT];
};

static void pool_piece(void *ctx, int64_t t)
{
	struct pool_job *j = ctx;
	j->sum[t] = j->part(j->ctx, j->lo[t], j->len[t], j->dev, j->m);
}

bool tir_reduce_pool(enum tir_op op, int64_t n, int64_t chunk, int64_t item_bytes, tir_piece_fn part, void *ctx,
		     double *out)
{
	/* about as many pieces as a stream of the run would make tasks */
	int64_t want = n / tir_task_items(n, item_bytes);
	int depth = 0;
	while ((2 << depth) <= TIR_TASKS_WANT && (2 << depth) <= want)
		depth++;
	struct pool_job *j = depth ? calloc(1, sizeof *j) : NULL;
	int cnt = j ? tir_reduce_pw_split(n, chunk, depth, j->lo, j->len) : 0;
	if (!cnt) {
		free(j);
		return false;
	}
	j->part = part;
	j->ctx = ctx;
	/* as tir_reduce_run: the sum added to 0.0; VAR, its mean, then the
	 * squared deviations from it the same way */
	tir_pool_run_shares(cnt, pool_piece, j);
	double acc = 0.0;
	acc += tir_reduce_pw_join(j->sum, cnt);
	if (op != TIR_OP_SUM)
		acc /= (double)n;
	if (op == TIR_OP_VAR) {
		j->dev = true;
		j->m = acc;
		tir_pool_run_shares(cnt, pool_piece, j);
		acc = 0.0;
		acc += tir_reduce_pw_join(j->sum, cnt);
		acc /= (double)n;
	}
	free(j);
	*out = acc;
	return true;
}

/* a piece of a contiguous f32 or f64 run in memory */
struct mem_run {
	const void *x;
	bool f32;
};

static double mem_piece(void *ctx, int64_t lo, int64_t n, bool dev, double m)
{
	const struct mem_run *r = ctx;
	if (r->f32) {
		const float *x = (const float *)r->x + lo;
		return dev ? pwd_f32(x, n, 1, m) : pw_f32(x, n, 1);
	}
	const double *x = (const double *)r->x + lo;
	return dev ? pwd_f64(x, n, 1, m) : pw_f64(x, n, 1);
}

/* op over the axes of x set in mask, into out (the contract is in exec.h). */
int tir_k_reduce(enum tir_op op, const struct tir_tensor *x, const bool *mask,
		 struct tir_tensor *out, struct tir_err *err)
{
	const char *name = op_name(op);
	bool arg = op == TIR_OP_ARGMAX || op == TIR_OP_ARGMIN;
	enum tir_dtype want = arg ? TIR_DTYPE_I64 : x->dtype;
	fold_fn fold = pick(op, x->dtype);
	if (!fold)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: %s input is not supported",
				name, tir_dtype_name(x->dtype));
	if (out->dtype != want)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: output is %s, expected %s", name,
				tir_dtype_name(out->dtype), tir_dtype_name(want));

	struct plan p;
	plan_init(&p, x, mask);
	if (numel(out) != p.onumel)
		return tir_errf(err, TIR_ETYPE, NULL,
				"%s: output has %lld elements, expected %lld", name,
				(long long)numel(out), (long long)p.onumel);
	if (p.onumel == 0)
		return 0;
	if (p.count == 0)
		return reduce_empty(op, out, p.onumel, err);

	enum tir_dtype dt = x->dtype;
	int64_t n = p.onumel;
	if (n == 1 && (op == TIR_OP_SUM || op == TIR_OP_MEAN || op == TIR_OP_VAR) &&
	    tir_dtype_is_wide_float(dt) && tir_tensor_is_contiguous(x) &&
	    tir_reduce_by_runs(x, mask)) {
		struct mem_run r = {tir_tensor_data(x), dt == TIR_DTYPE_F32};
		double v;
		if (tir_reduce_pool(op, p.count, 128, (int64_t)tir_dtype_size(dt), mem_piece, &r, &v)) {
			store_f64(out, &v, 1);
			return 0;
		}
	}
	bool owned = false, owned2 = false;
	double *acc = NULL, *acc2 = NULL;
	void *best = NULL;
	if ((op == TIR_OP_SUM || op == TIR_OP_PROD) && !tir_dtype_is_wide_float(dt)) {
		/* wrapping, in out itself */
		fill(out, n, 0, op == TIR_OP_SUM ? 0 : 1);
		walk_pool(&p, x, fold, tir_tensor_data(out), NULL);
		return 0;
	}
	switch (op) {
	case TIR_OP_SUM:
	case TIR_OP_PROD:
	case TIR_OP_MEAN:   /* floats, and mean of anything: in double */
		acc = scratch(out, n, true, &owned);
		if (!acc)
			goto oom;
		for (int64_t i = 0; i < n; i++)
			acc[i] = op == TIR_OP_PROD ? 1.0 : 0.0;
		walk_pool(&p, x, fold, acc, NULL);
		if (op == TIR_OP_MEAN)
			for (int64_t i = 0; i < n; i++)
				acc[i] /= (double)p.count;
		store_f64(out, acc, n);
		break;
	case TIR_OP_VAR:   /* two passes: the mean, then squared deviations */
		acc = scratch(out, n, false, &owned);
		acc2 = scratch(out, n, true, &owned2);
		if (!acc || !acc2)
			goto oom;
		for (int64_t i = 0; i < n; i++)
			acc[i] = acc2[i] = 0.0;
		walk_pool(&p, x, pick(TIR_OP_MEAN, dt), acc, NULL);
		for (int64_t i = 0; i < n; i++)
			acc[i] /= (double)p.count;
		walk_pool(&p, x, fold, acc2, acc);
		for (int64_t i = 0; i < n; i++)
			acc2[i] /= (double)p.count;
		store_f64(out, acc2, n);
		break;
	case TIR_OP_MAX:
	case TIR_OP_MIN: {
		bool mx = op == TIR_OP_MAX;
		int64_t lo = dt == TIR_DTYPE_BOOL ? 0 : dt == TIR_DTYPE_I32 ? INT32_MIN : INT64_MIN;
		int64_t hi = dt == TIR_DTYPE_BOOL ? 1 : dt == TIR_DTYPE_I32 ? INT32_MAX : INT64_MAX;
		fill(out, n, mx ? -INFINITY : INFINITY, mx ? lo : hi);
		walk_pool(&p, x, fold, tir_tensor_data(out), NULL);
		break;
	}
	case TIR_OP_ARGMAX:
	case TIR_OP_ARGMIN:
		best = calloc((size_t)n, 8);
		if (!best)
			goto oom;
		fill(out, n, 0, -1);
		walk_pool(&p, x, fold, tir_tensor_data(out), best);
		break;
	default:
		TIR_ASSERT(!"tir_k_reduce: not a reduction");
	}
	if (owned)
		free(acc);
	if (owned2)
		free(acc2);
	free(best);
	return 0;
oom:
	if (owned)
		free(acc);
	if (owned2)
		free(acc2);
	return tir_errf(err, TIR_ENOMEM, NULL, "%s: out of memory for %lld accumulators",
			name, (long long)n);
}

/* ---- one output as one run (lib/fusion's fused reductions) ----
 * A fused kernel makes the elements it reduces piece by piece and never
 * holds a whole tensor; these give the value tir_k_reduce stores for an
 * output whose elements it folds as one run, bit for bit: one piece goes
 * through the very fold functions above; longer runs follow the same
 * pairwise splits, lanes and sequential sums piece by piece. */

bool tir_reduce_by_runs(const struct tir_tensor *x, const bool *mask)
{
	struct plan p;
	plan_init(&p, x, mask);
	if (p.onumel == 0 || p.count == 0)
		return false;
	const int64_t *st[3] = {p.xs, p.os, p.is};
	struct tir_iter it;
	if (!tir_iter_init(&it, p.rank, p.shape, 3, st))
		return false;
	/* one run per output, all its elements, in their logical order */
	return it.inner == p.count && it.istride[1] == 0 && (p.count == 1 || it.istride[2] == 1);
}

/* pairwise over elements [lo, lo + n) handed out by get: the splits of
 * DEF_PAIRWISE down to pieces of at most chunk (>= 128) elements, which
 * DEF_PAIRWISE then sums exactly as it would inside the whole run */
#define DEF_PW_GET(NAME, T, PW)                                              \
static double NAME(tir_run_get get, void *ctx, int64_t lo, int64_t n, int64_t chunk) \
{                                                                            \
	if (n <= chunk)                                                      \
		return PW((const T *)get(ctx, lo, n), n, 1);                 \
	int64_t h = n / 2;                                                   \
	h -= h % 8;                                                          \
	return NAME(get, ctx, lo, h, chunk) + NAME(get, ctx, lo + h, n - h, chunk); \
}

DEF_PW_GET(pwg_f32, float, pw_f32)
DEF_PW_GET(pwg_f64, double, pw_f64)

/* the same for var's squared deviations from m */
#define DEF_PWD_GET(NAME, T, PWD)                                            \
static double NAME(tir_run_get get, void *ctx, int64_t lo, int64_t n, int64_t chunk, double m) \
{                                                                            \
	if (n <= chunk)                                                      \
		return PWD((const T *)get(ctx, lo, n), n, 1, m);             \
	int64_t h = n / 2;                                                   \
	h -= h % 8;                                                          \
	return NAME(get, ctx, lo, h, chunk, m) + NAME(get, ctx, lo + h, n - h, chunk, m); \
}

DEF_PWD_GET(pwdg_f32, float, pwd_f32)
DEF_PWD_GET(pwdg_f64, double, pwd_f64)

/* max/min of a long run piece by piece: DEF_EXTREMUM's 8 lanes (elements
 * 0..7 start them, whole groups of 8 up to e fold into them, then the lanes
 * and the rest fold into a in order).  Pieces are multiples of 8 but the last. */
#define DEF_EXT_GET(NAME, T, TAKE)                                           \
static T NAME(tir_run_get get, void *ctx, int64_t n, int64_t chunk, T a)    \
{                                                                            \
	T m[8];                                                              \
	int64_t e = n >= 16 ? 8 + (n - 8) / 8 * 8 : 0; /* end of the lanes' part */ \
	bool folded = e == 0;                                                \
	for (int64_t lo = 0; lo < n; lo += chunk) {                          \
		int64_t len = n - lo < chunk ? n - lo : chunk;               \
		const T *x = get(ctx, lo, len);                              \
		int64_t j = 0;                                               \
		if (lo == 0 && e) {                                          \
			for (int k = 0; k < 8; k++)                          \
				m[k] = x[k];                                 \
			j = 8;                                               \
		}                                                            \
		for (; j + 8 <= len && lo + j < e; j += 8)                   \
			for (int k = 0; k < 8; k++) {                        \
				T v = x[j + k];                              \
				m[k] = TAKE(v, m[k]) ? v : m[k];             \
			}                                                    \
		if (!folded && lo + j == e) {                                \
			for (int k = 0; k < 8; k++)                          \
				a = TAKE(m[k], a) ? m[k] : a;                \
			folded = true;                                       \
		}                                                            \
		for (; j < len; j++) {                                       \
			T v = x[j];                                          \
			a = TAKE(v, a) ? v : a;                              \
		}                                                            \
	}                                                                    \
	return a;                                                            \
}

DEF_EXT_GET(maxg_f32, float, TAKE_FMAX)
DEF_EXT_GET(maxg_f64, double, TAKE_FMAX)
DEF_EXT_GET(ming_f32, float, TAKE_FMIN)
DEF_EXT_GET(ming_f64, double, TAKE_FMIN)

/* product (double) of x, sequential, piece by piece */
#define DEF_SEQ_GET(NAME, T)                                                 \
static double NAME(tir_run_get get, void *ctx, int64_t n, int64_t chunk, double t) \
{                                                                            \
	for (int64_t lo = 0; lo < n; lo += chunk) {                          \
		int64_t len = n - lo < chunk ? n - lo : chunk;               \
		const T *x = get(ctx, lo, len);                              \
		for (int64_t j = 0; j < len; j++)                            \
			t *= (double)x[j];                                   \
	}                                                                    \
	return t;                                                            \
}

DEF_SEQ_GET(seqg_f32, float)
DEF_SEQ_GET(seqg_f64, double)

/* One contiguous run of n elements at x, folded at once with
 * tir_k_reduce's own folds (fold: pick(op), first: pick(MEAN) for VAR's
 * means) into out. */
static void reduce_one(enum tir_op op, bool f32, fold_fn fold, fold_fn first, const void *x, int64_t n,
		       void *out)
{
	struct run r = {.x = x, .xs = 1, .n = n};
	double acc, acc2;
	switch (op) {
	case TIR_OP_MAX:
	case TIR_OP_MIN:
		if (f32)
			*(float *)out = op == TIR_OP_MAX ? -INFINITY : INFINITY;
		else
			*(double *)out = op == TIR_OP_MAX ? -INFINITY : INFINITY;
		fold(&r, out, NULL);
		return;
	case TIR_OP_VAR:
		acc = acc2 = 0.0;
		first(&r, &acc, NULL);
		acc /= (double)n;
		fold(&r, &acc2, &acc);
		acc = acc2 / (double)n;
		break;
	default:
		acc = op == TIR_OP_PROD ? 1.0 : 0.0;
		fold(&r, &acc, NULL);
		if (op == TIR_OP_MEAN)
			acc /= (double)n;
	}
	if (f32)
		*(float *)out = (float)acc;
	else
		*(double *)out = acc;
}

void tir_reduce_rows(enum tir_op op, enum tir_dtype dt, const void *x, int64_t stride, int64_t n, int64_t k,
		     void *out)
{
	TIR_ASSERT(n >= 1 && tir_dtype_is_wide_float(dt));
	bool f32 = dt == TIR_DTYPE_F32;
	size_t es = f32 ? 4 : 8;
	fold_fn fold = pick(op, dt), first = pick(TIR_OP_MEAN, dt);
	for (int64_t i = 0; i < k; i++)
		reduce_one(op, f32, fold, first, (const char *)x + (size_t)(i * stride) * es, n,
			   (char *)out + (size_t)i * es);
}

void tir_reduce_run(enum tir_op op, enum tir_dtype dt, int64_t n, int64_t chunk, tir_run_get get,
		    void *ctx, void *out)
{
	TIR_ASSERT(n >= 1 && chunk >= 128 && chunk % 8 == 0 && tir_dtype_is_wide_float(dt));
	bool f32 = dt == TIR_DTYPE_F32;
	double acc, acc2;
	if (n <= chunk) {
		/* the run at once: tir_k_reduce's own folds */
		reduce_one(op, f32, pick(op, dt), pick(TIR_OP_MEAN, dt), get(ctx, 0, n), n, out);
		return;
	} else {
		switch (op) {
		case TIR_OP_MAX:
		case TIR_OP_MIN:
			if (f32)
				*(float *)out = op == TIR_OP_MAX ? maxg_f32(get, ctx, n, chunk, -INFINITY)
								 : ming_f32(get, ctx, n, chunk, INFINITY);
			else
				*(double *)out = op == TIR_OP_MAX ? maxg_f64(get, ctx, n, chunk, -INFINITY)
								  : ming_f64(get, ctx, n, chunk, INFINITY);
			return;
		case TIR_OP_PROD:
			acc = f32 ? seqg_f32(get, ctx, n, chunk, 1.0) : seqg_f64(get, ctx, n, chunk, 1.0);
			break;
		default:
			acc = 0.0;
			acc += f32 ? pwg_f32(get, ctx, 0, n, chunk) : pwg_f64(get, ctx, 0, n, chunk);
			if (op == TIR_OP_MEAN || op == TIR_OP_VAR)
				acc /= (double)n;
			if (op == TIR_OP_VAR) {
				acc2 = 0.0;
				acc2 += f32 ? pwdg_f32(get, ctx, 0, n, chunk, acc)
					    : pwdg_f64(get, ctx, 0, n, chunk, acc);
				acc = acc2 / (double)n;
			}
		}
	}
	if (f32)
		*(float *)out = (float)acc;
	else
		*(double *)out = acc;
}

/* ---- a long run's pairwise sum in pieces (several threads) ---- */

int tir_reduce_pw_split(int64_t n, int64_t chunk, int depth, int64_t *lo, int64_t *len)
{
	/* DEF_PAIRWISE's splits, breadth first: only while every node still
	 * splits (is longer than chunk) is the tree complete */
	int cnt = 1;
	lo[0] = 0;
	len[0] = n;
	for (int d = 0; d < depth; d++) {
		for (int i = 0; i < cnt; i++)
			if (len[i] <= chunk)
				return 0;
		for (int i = cnt - 1; i >= 0; i--) {
			int64_t h = len[i] / 2;
			h -= h % 8;
			int64_t l = lo[i], m = len[i];
			lo[2 * i] = l;
			len[2 * i] = h;
			lo[2 * i + 1] = l + h;
			len[2 * i + 1] = m - h;
		}
		cnt *= 2;
	}
	return cnt;
}

double tir_reduce_pw_part(enum tir_dtype dt, int64_t lo, int64_t n, int64_t chunk, tir_run_get get,
			  void *ctx)
{
	TIR_ASSERT(chunk >= 128 && chunk % 8 == 0 && tir_dtype_is_wide_float(dt));
	return dt == TIR_DTYPE_F32 ? pwg_f32(get, ctx, lo, n, chunk) : pwg_f64(get, ctx, lo, n, chunk);
}

double tir_reduce_pwdev_part(enum tir_dtype dt, int64_t lo, int64_t n, int64_t chunk, tir_run_get get,
			     void *ctx, double m)
{
	TIR_ASSERT(chunk >= 128 && chunk % 8 == 0 && tir_dtype_is_wide_float(dt));
	return dt == TIR_DTYPE_F32 ? pwdg_f32(get, ctx, lo, n, chunk, m) : pwdg_f64(get, ctx, lo, n, chunk, m);
}

double tir_reduce_pw_join(double *part, int cnt)
{
	for (; cnt > 1; cnt /= 2)
		for (int i = 0; i < cnt / 2; i++)
			part[i] = part[2 * i] + part[2 * i + 1];
	return part[0];
}

/* ---- leading axes folded row by row (fused reductions down columns) ---- */

void tir_reduce_acc_init(enum tir_op op, enum tir_dtype dt, void *acc, int64_t n)
{
	TIR_ASSERT(tir_dtype_is_wide_float(dt));
	for (int64_t i = 0; i < n; i++) {
		if (op == TIR_OP_MAX || op == TIR_OP_MIN) {
			double v = op == TIR_OP_MAX ? -INFINITY : INFINITY;
			if (dt == TIR_DTYPE_F32)
				((float *)acc)[i] = (float)v;
			else
				((double *)acc)[i] = v;
		} else {
			((double *)acc)[i] = op == TIR_OP_PROD ? 1.0 : 0.0;
		}
	}
}

void tir_reduce_acc_fold(enum tir_op op, enum tir_dtype dt, const void *x, int64_t n, void *acc,
			 const void *aux)
{
	struct run r = {.x = x, .xs = 1, .n = n, .os = 1};
	pick(op, dt)(&r, acc, (void *)aux);
}

void tir_reduce_acc_div(double *acc, int64_t count, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		acc[i] /= (double)count;
}

void tir_reduce_acc_store(enum tir_op op, enum tir_dtype dt, const void *acc, void *out, int64_t n)
{
	if (op == TIR_OP_MAX || op == TIR_OP_MIN) {
		memcpy(out, acc, (size_t)n * tir_dtype_size(dt));
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		if (dt == TIR_DTYPE_F32)
			((float *)out)[i] = (float)((const double *)acc)[i];
		else
			((double *)out)[i] = ((const double *)acc)[i];
	}
}
