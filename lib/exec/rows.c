/*
 * rows.c — softmax, log_softmax, layernorm and rmsnorm over the last axis
 * of contiguous rows, in three or two passes per row: softmax's max, then
 * exp with its sum (vmath's expsum), then the scale; the norms' moments
 * in one pass (vmath's moments), then the normalization (vmath's norm).
 * Sums, moments and the centring in double; rows split over the pool in
 * chunks sized by the shape and the caches (tir_task_items), never by the
 * thread count: each row is computed alone, so results never depend on it.
 * nn.c calls these for the common case and keeps its general (any axis,
 * any layout) loops for the rest.
 */
#include "exec.h"
#include "vmath.h"

#include <math.h>
#include <string.h>

/* vectorize the lane loops at -O2 (as elementwise.c) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif

/* One build per ISA (TIR_ISA_BUILDS), picked per task for the vector
 * path.  The lanes of every sum are fixed in the code and C11 forbids
 * contracting to FMA here, so all builds give the same bits (vmath's exp
 * and moments are its paths'). */
/* inlined into each build, so that they are built for its ISA too */
#define ROWS_INLINE __attribute__((always_inline)) inline

struct rows_job {
	enum tir_op op;
	enum tir_dtype dt;
	const void *x, *w, *b;
	void *out;
	int64_t rows, len;
	int64_t per;                 /* rows per task */
	double eps;
	/* each row asks memory for a row ahead (softmax the next, the
	 * norms the one after) while it is computed, when a row is at most a
	 * quarter of L1d: the first pass over a row of a few KiB (the norms'
	 * moments, bound by their sums' latency) leaves memory idle, and the
	 * prefetchers have no time to learn a run of a few lines; a longer
	 * row keeps them going (bench/layernorm.tir, 1 thread: 1.2 -> 0.8
	 * ms; the same bits) */
	bool pf;
};

#define DEFINE_ROWS(T, SFX)                                                         \
/* the max of x[0..n) in 16 lanes (a NaN is caught by the sum after it), 0 \
 * when every element is -inf (exp then gives 0s, the sum 0, as NumPy) */    \
ROWS_INLINE static T row_max_##SFX(const T *x, int64_t n)                          \
{                                                                                  \
	T mm[16];                                                                  \
	for (int k = 0; k < 16; k++)                                               \
		mm[k] = x[0];                                                      \
	int64_t j0 = 0;                                                            \
	for (; j0 + 16 <= n; j0 += 16)                                             \
		for (int k = 0; k < 16; k++)                                       \
			mm[k] = x[j0 + k] > mm[k] ? x[j0 + k] : mm[k];             \
	for (; j0 < n; j0++)                                                       \
		mm[0] = x[j0] > mm[0] ? x[j0] : mm[0];                             \
	T m = mm[0];                                                               \
	for (int k = 1; k < 16; k++)                                               \
		m = mm[k] > m ? mm[k] : m;                                         \
	return isinf(m) && m < 0 ? 0 : m;                                          \
}                                                                                  \
ROWS_INLINE static void softmax_row_##SFX(const T *restrict x, T *restrict o, int64_t n, bool lg) \
{                                                                                  \
	T m = row_max_##SFX(x, n);                                                 \
	/* o = exp(x - m) and its sum, in one pass */                             \
	double s = tir_vmath_expsum_##SFX(o, x, m, n);                             \
	if (s != s) { /* a NaN (or inf - inf) in the row: all of it is NaN */     \
		for (int64_t j = 0; j < n; j++)                                    \
			o[j] = (T)NAN;                                             \
		return;                                                            \
	}                                                                          \
	if (lg) {                                                                  \
		T ls = (T)log(s);                                                  \
		for (int64_t j = 0; j < n; j++)                                    \
			o[j] = (x[j] - m) - ls;                                    \
		return;                                                            \
	}                                                                          \
	T inv = (T)(1.0 / s);                                                      \
	for (int64_t j = 0; j < n; j++)                                            \
		o[j] *= inv;                                                       \
}                                                                                  \
/* attention's scores, a row in place: s[j] * scale for j < lim (rounded \
 * to T, as the product of two T values), the softmax of those as          \
 * softmax_row's, and zeros past lim (causal masking) */                    \
ROWS_INLINE static void scores_row_##SFX(T *s, int64_t n, int64_t lim, T scale)  \
{                                                                                  \
	for (int64_t j = 0; j < lim; j++)                                          \
		s[j] *= scale;                                                     \
	T m = row_max_##SFX(s, lim);                                               \
	double sum = tir_vmath_expsum_##SFX(s, s, m, lim);                         \
	T inv = (T)(1.0 / sum);                                                    \
	for (int64_t j = 0; j < lim; j++)                                          \
		s[j] = sum != sum ? (T)NAN : s[j] * inv;                           \
	for (int64_t j = lim; j < n; j++)                                          \
		s[j] = 0;                                                          \
}                                                                                  \
ROWS_INLINE static void scores_##SFX(T *s, int64_t rows, int64_t lk, int64_t r0,  \
				     bool causal, T scale)                         \
{                                                                                  \
	for (int64_t i = 0; i < rows; i++, s += lk)                                \
		scores_row_##SFX(s, lk, causal && r0 + i + 1 < lk ? r0 + i + 1 : lk, scale); \
}                                                                                  \
/* rmsnorm: the mean square; layernorm: mean and variance from the        \
 * moments s1, s2 of a row about c, one of its elements, made in one pass:   \
 * (c - mean)^2 <= n var, so s2/n - (s1/n)^2 loses at most log2(n) of     \
 * double's 53 bits to cancellation */                                     \
ROWS_INLINE static void norm_stats_##SFX(double c, double s1, double s2, int64_t n, double eps, \
					 bool rms, double *mean, double *r)                \
{                                                                                  \
	double m1 = rms ? 0 : s1 / (double)n;                                      \
	*mean = c + m1;                                                            \
	double var = s2 / (double)n - m1 * m1;                                     \
	*r = 1.0 / sqrt((var < 0 ? 0 : var) + eps);  /* NaN stays NaN */           \
}                                                                                  \
/* rows [r0, r1) of a layernorm or an rmsnorm (rms: no bias): the moments \
 * of a row, then its normalization (vmath's), the centring in double      \
 * (rows far from 0 keep their digits); pf: bytes of a row to prefetch */  \
ROWS_INLINE static void norm_rows_##SFX(const struct rows_job *jb, bool rms, int64_t r0,     \
					int64_t r1, int64_t pf)                            \
{                                                                                  \
	int64_t n = jb->len;                                                       \
	const T *x = (const T *)jb->x + r0 * n, *w = jb->w, *b = rms ? NULL : jb->b; \
	T *o = (T *)jb->out + r0 * n;                                              \
	double c = 0, s1 = 0, s2 = 0, mean, r;                                     \
	if (r0 < r1) {                                                             \
		c = rms ? 0 : (double)x[0];                                        \
		tir_vmath_moments_##SFX(x, n, c, &s1, &s2);                        \
	}                                                                          \
	for (int64_t i = r0; i < r1; i++, x += n, o += n) {                        \
		/* the row after next asked of memory: its moments come after \
		 * this row's normalization and the next row's moments */          \
		for (int64_t q = 0; i + 2 < r1 && q < pf; q += 64)                 \
			__builtin_prefetch((const char *)(x + 2 * n) + q);         \
		norm_stats_##SFX(c, s1, s2, n, jb->eps, rms, &mean, &r);           \
		tir_vmath_norm_##SFX(o, x, w, b, mean, r, n);                      \
		if (i + 1 < r1) {                                                  \
			c = rms ? 0 : (double)x[n];                                \
			tir_vmath_moments_##SFX(x + n, n, c, &s1, &s2);            \
		}                                                                  \
	}                                                                          \
}                                                                                  \
ROWS_INLINE static void rows_##SFX(const struct rows_job *jb, int64_t r0, int64_t r1) \
{                                                                                  \
	const T *x = jb->x;                                                        \
	T *o = jb->out;                                                            \
	int64_t pf = jb->pf ? jb->len * (int64_t)sizeof(T) : 0;                    \
	if (jb->op != TIR_OP_SOFTMAX && jb->op != TIR_OP_LOG_SOFTMAX) {            \
		norm_rows_##SFX(jb, jb->op != TIR_OP_LAYERNORM, r0, r1, pf);       \
		return;                                                            \
	}                                                                          \
	for (int64_t r = r0; r < r1; r++) {                                        \
		const T *xr = x + r * jb->len;                                     \
		T *or_ = o + r * jb->len;                                          \
		/* the next row asked of memory while this one is computed */     \
		for (int64_t q = 0; r + 1 < r1 && q < pf; q += 64)                 \
			__builtin_prefetch((const char *)(xr + jb->len) + q);      \
		softmax_row_##SFX(xr, or_, jb->len, jb->op == TIR_OP_LOG_SOFTMAX); \
	}                                                                          \
}

DEFINE_ROWS(float, f32)
DEFINE_ROWS(double, f64)

#define DEF_ROWS_BUILD(B, TGT)                                                      \
	TGT static void rows_f32_##B(const struct rows_job *jb, int64_t r0, int64_t r1) \
	{                                                                          \
		rows_f32(jb, r0, r1);                                              \
	}                                                                          \
	TGT static void rows_f64_##B(const struct rows_job *jb, int64_t r0, int64_t r1) \
	{                                                                          \
		rows_f64(jb, r0, r1);                                              \
	}                                                                          \
	TGT static void scores_f32_##B(float *s, int64_t rows, int64_t lk, int64_t r0, \
				       bool causal, float scale)                   \
	{                                                                          \
		scores_f32(s, rows, lk, r0, causal, scale);                        \
	}                                                                          \
	TGT static void scores_f64_##B(double *s, int64_t rows, int64_t lk, int64_t r0, \
				       bool causal, double scale)                  \
	{                                                                          \
		scores_f64(s, rows, lk, r0, causal, scale);                        \
	}                                                                          \
	static const char *rows_build_##B(void) { return #B; }

TIR_ISA_BUILDS(DEF_ROWS_BUILD)

const char *tir_rows_build(void)
{
	return TIR_ISA_PICK(rows_build)();
}

void tir_rows_scores(enum tir_dtype dt, void *s, int64_t rows, int64_t lk, int64_t r0,
		     bool causal, double scale)
{
	if (dt == TIR_DTYPE_F32)
		TIR_ISA_PICK(scores_f32)(s, rows, lk, r0, causal, (float)scale);
	else
		TIR_ISA_PICK(scores_f64)(s, rows, lk, r0, causal, scale);
}

static void rows_task(void *ctx, int64_t t)
{
	const struct rows_job *jb = ctx;
	int64_t r0 = t * jb->per, r1 = r0 + jb->per < jb->rows ? r0 + jb->per : jb->rows;
	if (jb->dt == TIR_DTYPE_F32)
		TIR_ISA_PICK(rows_f32)(jb, r0, r1);
	else
		TIR_ISA_PICK(rows_f64)(jb, r0, r1);
}

static bool rows_ok(const struct tir_tensor *t, enum tir_dtype dt)
{
	return t->dtype == dt && tir_tensor_is_contiguous(t);
}

bool tir_rows_apply(enum tir_op op, const struct tir_tensor *x, const struct tir_tensor *w,
		    const struct tir_tensor *b, double eps, struct tir_tensor *out)
{
	enum tir_dtype dt = out->dtype;
	if ((dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64) || x->rank < 1 || !rows_ok(x, dt) ||
	    !rows_ok(out, dt) || (w && !rows_ok(w, dt)) || (b && !rows_ok(b, dt)))
		return false;
	int64_t len = x->shape[x->rank - 1];
	if (len == 0 || (w && (w->rank != 1 || w->shape[0] != len)) ||
	    (b && (b->rank != 1 || b->shape[0] != len)))
		return false;
	struct rows_job jb = {.op = op, .dt = dt, .x = tir_tensor_data(x), .out = tir_tensor_data(out),
			      .w = w ? tir_tensor_data(w) : NULL, .b = b ? tir_tensor_data(b) : NULL,
			      .rows = tir_tensor_numel(x) / len, .len = len, .eps = eps,
			      .pf = len * (int64_t)tir_dtype_size(dt) <= tir_machine_caches()->l1d / 4};
	if (jb.rows > 0) {
		jb.per = tir_task_items(jb.rows, len * (int64_t)tir_dtype_size(dt));
		tir_pool_run_shares((jb.rows + jb.per - 1) / jb.per, rows_task, &jb);
	}
	return true;
}
