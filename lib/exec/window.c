/*
 * window.c — maxpool2d and avgpool2d of NCHW tensors, padding included
 * (no padded copy of the input).
 *
 * Each output row is built in a block of accumulators, one per output
 * column: for each tap (i, j) of the window, in row-major order, a run of
 * the input row oh * sh - ph + i is folded into the accumulators of the
 * output columns whose tap (i, j) lands inside the input; a tap that lands
 * in the padding is left out.  Every output thus folds its window's real
 * elements in the window's own order, as the plain loop over a padded copy
 * does, and gets the same bits:
 *  - max: m = (v > m || v != v) ? v : m from -inf (the type's least
 *    integer): the last NaN of the window, else its first largest value
 *    (so -0 or +0, whichever comes first); a tap in the -inf padding never
 *    changes m, so leaving it out changes nothing;
 *  - avg: a double sum from +0 in window order (a zero of the padding
 *    added to it changes nothing), divided by kh * kw and rounded to the
 *    type; without count_include_pad that mean is divided, in the type,
 *    by the count of real elements over kh * kw (rounded to the type):
 *    what a pool of padded ones gives.
 * The runs are vector loops over the output columns (one load per tap for
 * stride 1; two loads and their even lanes for stride 2; a plain loop
 * otherwise), built once per ISA (TIR_ISA_BUILDS) and picked per call for
 * the vector path (TIR_ISA_PICK); every build computes each output by the
 * same operations in the same order, so every path gives the same bits
 * (but for which NaN an average of several NaNs gives: the payload, as
 * vmath.h says, is whatever the vector unit makes of them).
 * Tasks on the pool: blocks of output rows of one (image, channel) plane.
 */
#include "exec.h"
#include "vmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8l __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

/* output columns of an average's block of double sums */
#define BLOCK 256

/* the even or odd lanes of two vectors of L lanes (the first's first) */
#define EVEN16 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define EVEN8 0, 2, 4, 6, 8, 10, 12, 14
#define ODD16 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#define ODD8 1, 3, 5, 7, 9, 11, 13, 15

/* The folds, m the accumulator and v the next tap, of a vector (VI: the
 * integer lanes of the same width) and of one element.  max: m = v where
 * v > m or v is a NaN; integers, where v > m.  sum: m += v in double. */
#define FOLD_NAN(VT, VI, m, v)                                                    \
	do {                                                                      \
		VI k_ = ((v) > (m)) | ((v) != (v));                               \
		(m) = (VT)(((VI)(v) & k_) | ((VI)(m) & ~k_));                     \
	} while (0)
#define FOLD_INT(VT, VI, m, v)                                                    \
	do {                                                                      \
		VI k_ = (v) > (m);                                                \
		(m) = (VT)(((VI)(v) & k_) | ((VI)(m) & ~k_));                     \
	} while (0)
#define FOLD_SUM(VT, VI, m, v) ((m) += (v))
#define FOLD1_NAN(m, v) ((m) = ((v) > (m) || (v) != (v)) ? (v) : (m))
#define FOLD1_INT(m, v) ((m) = (v) > (m) ? (v) : (m))
#define FOLD1_SUM(m, v) ((m) += (double)(v))

/* v = the L elements p[k * S], k < L (S 1 or 2) as the accumulator's
 * vector VT; SEL: EVEN or ODD, which of two vectors' lanes (S = 2).
 * LD_SAME: input and accumulator of one type; LD_F32D: floats into
 * doubles (L = 8). */
#define LD_SAME(VT, VI, L, S, SEL, v, p)                                          \
	do {                                                                      \
		if ((S) == 1) {                                                   \
			memcpy(&(v), p, sizeof(v));                               \
		} else {                                                          \
			VT a_, b_;                                                \
			memcpy(&a_, p, sizeof a_);                                \
			memcpy(&b_, (p) + (L), sizeof b_);                        \
			(v) = __builtin_shufflevector(a_, b_, SEL##L);           \
		}                                                                 \
	} while (0)
#define LD_F32D(VT, VI, L, S, SEL, v, p)                                          \
	do {                                                                      \
		v8f f_;                                                           \
		if ((S) == 1) {                                                   \
			memcpy(&f_, p, sizeof f_);                                \
		} else {                                                          \
			v16f h_;                                                  \
			memcpy(&h_, p, sizeof h_);                                \
			f_ = __builtin_shufflevector(h_, h_, SEL##8);             \
		}                                                                 \
		(v) = __builtin_convertvector(f_, v8d);                           \
	} while (0)

/* One chunk of L outputs at o (in registers) of a window run, its column
 * step S a constant: the last tap of each row of the last chunk (S = 2)
 * reads the odd lanes from one element earlier, so that no read passes
 * that tap's element of output n - 1 (the even lanes from the tap itself
 * would read one element past it). */
#define WIN_CHUNK(T, VT, VI, L, FOLD, LD, S)                                      \
	do {                                                                      \
		VT m_ = init, v_;                                                 \
		for (int64_t i = 0; i < nr; i++) {                                \
			const T *xr = x + i * rs + o * (S);                       \
			for (int64_t j = 0; j < j1 - 1; j++) {                    \
				LD(VT, VI, L, S, EVEN, v_, xr + j);               \
				FOLD(VT, VI, m_, v_);                             \
			}                                                         \
			if ((S) == 2 && last)                                     \
				LD(VT, VI, L, S, ODD, v_, xr + j1 - 2);           \
			else                                                      \
				LD(VT, VI, L, S, EVEN, v_, xr + j1 - 1);          \
			FOLD(VT, VI, m_, v_);                                     \
		}                                                                 \
		memcpy(acc + o, &m_, sizeof m_);                                  \
	} while (0)

/* acc[o] = the fold, from INIT, of x[i * rs + o * s + j * cs] over the
 * rows i < nr and then the taps j0 <= j < j1 of each, in that order, for
 * each o < n.  The vector chunks (cs 1, s 1 or 2, every tap) go L outputs
 * at a time, the last one overlapping its neighbour when n is not a
 * multiple of L (an output computed twice is the same both times); the
 * rest one output at a time. */
#define DEF_WIN(NAME, TGT, T, A, VT, VI, L, FOLD, FOLD1, LD, INIT)                \
TGT static void NAME(void *accv, const void *xv, int64_t rs, int64_t nr, int64_t cs, \
		     int64_t j0, int64_t j1, int64_t n, int64_t s)                 \
{                                                                                 \
	A *acc = accv;                                                            \
	const T *x = xv;                                                          \
	const VT init = (VT){0} + (INIT);                                         \
	int64_t o = 0;                                                            \
	/* S = 2 with one tap: the odd lanes from one element before the   \
	 * last chunk's first output, which must not be output 0 */          \
	if (cs == 1 && (s == 1 || s == 2) && j0 == 0 && j1 > 0 && n >= L + (s == 2 && j1 == 1)) { \
		for (;; o += L) {                                                 \
			bool last = o + L >= n;                                   \
			if (last)                                                 \
				o = n - L;                                        \
			if (s == 1)                                               \
				WIN_CHUNK(T, VT, VI, L, FOLD, LD, 1);             \
			else                                                      \
				WIN_CHUNK(T, VT, VI, L, FOLD, LD, 2);             \
			if (last)                                                 \
				return;                                           \
		}                                                                 \
	}                                                                         \
	for (; o < n; o++) {                                                      \
		A m = (INIT);                                                     \
		for (int64_t i = 0; i < nr; i++)                                  \
			for (int64_t j = j0; j < j1; j++)                         \
				FOLD1(m, x[i * rs + o * s + j * cs]);             \
		acc[o] = m;                                                       \
	}                                                                         \
}

/* dst[o] = sums[o] / area rounded to T, then (divide) divided in T by
 * cnt rounded to T, for o < n: 8 outputs a vector, the same operations
 * as one at a time */
#define DEF_MEAN(NAME, TGT, T, VT)                                                \
TGT static void NAME(void *dstv, const double *sums, int64_t n, double area, bool divide, double cnt) \
{                                                                                 \
	T *dst = dstv;                                                            \
	const v8d va = (v8d){0} + area;                                           \
	const VT vc = (VT){0} + (T)cnt;                                           \
	int64_t o = 0;                                                            \
	for (; o + 8 <= n; o += 8) {                                              \
		v8d s;                                                            \
		memcpy(&s, sums + o, sizeof s);                                   \
		VT m = __builtin_convertvector(s / va, VT);                       \
		if (divide)                                                       \
			m = m / vc;                                               \
		memcpy(dst + o, &m, sizeof m);                                    \
	}                                                                         \
	for (; o < n; o++) {                                                      \
		T m = (T)(sums[o] / area);                                        \
		dst[o] = divide ? m / (T)cnt : m;                                 \
	}                                                                         \
}

typedef void (*mean_fn)(void *dst, const double *sums, int64_t n, double area, bool divide, double cnt);

typedef void (*win_fn)(void *acc, const void *x, int64_t rs, int64_t nr, int64_t cs, int64_t j0, int64_t j1,
		       int64_t n, int64_t s);

/* Each ISA's build of the runs, and the test hook's name */
#define DEF_WIN_BUILD(SFX, TGT)                                                                        \
	DEF_WIN(max_f32_##SFX, TGT, float, float, v16f, v16i, 16, FOLD_NAN, FOLD1_NAN, LD_SAME, -INFINITY) \
	DEF_WIN(max_f64_##SFX, TGT, double, double, v8d, v8l, 8, FOLD_NAN, FOLD1_NAN, LD_SAME, -INFINITY)  \
	DEF_WIN(max_i32_##SFX, TGT, int32_t, int32_t, v16i, v16i, 16, FOLD_INT, FOLD1_INT, LD_SAME, INT32_MIN) \
	DEF_WIN(max_i64_##SFX, TGT, int64_t, int64_t, v8l, v8l, 8, FOLD_INT, FOLD1_INT, LD_SAME, INT64_MIN) \
	DEF_WIN(sum_f32_##SFX, TGT, float, double, v8d, v8l, 8, FOLD_SUM, FOLD1_SUM, LD_F32D, 0.0)         \
	DEF_WIN(sum_f64_##SFX, TGT, double, double, v8d, v8l, 8, FOLD_SUM, FOLD1_SUM, LD_SAME, 0.0)        \
	DEF_MEAN(mean_f32_##SFX, TGT, float, v8f)                                                       \
	DEF_MEAN(mean_f64_##SFX, TGT, double, v8d)                                                      \
	static const char *win_build_##SFX(void) { return #SFX; }

TIR_ISA_BUILDS(DEF_WIN_BUILD)

const char *tir_window_build(void)
{
	return TIR_ISA_PICK(win_build)();
}

/* One pooling: the geometry, and the job the tasks share. */
struct win {
	bool max, count_pad;
	enum tir_dtype dt;
	size_t esz;
	int64_t c, h, w;             /* input channels, rows, columns */
	int64_t kh, kw, sh, sw, ph, pw;
	int64_t oh, ow;
	int64_t xs[4];               /* input strides (elements) */
	int64_t rows, blocks;        /* output rows a task, tasks a plane */
	const char *x;
	char *out;
	win_fn run;
	mean_fn mean;                /* avg */
};

/* Output columns [o0, o1) of output row oh of one plane (xc) into dst:
 * the outputs whose every tap column is inside the input in one run, the
 * others (at the sides) one at a time with their taps inside.  A max
 * folds straight into dst; an average into a block of double sums. */
static void win_row(const struct win *g, const char *xc, int64_t oh, int64_t o0, int64_t o1, char *dst)
{
	double sums[BLOCK];
	int64_t r0 = oh * g->sh - g->ph;
	int64_t i0 = r0 < 0 ? -r0 : 0, i1 = g->h - r0 < g->kh ? g->h - r0 : g->kh;
	int64_t nr = i1 > i0 ? i1 - i0 : 0;
	size_t esz = g->esz, asz = g->max ? esz : sizeof(double);
	char *acc = g->max ? dst : (char *)sums;
	const char *xr = xc + (size_t)((r0 + i0) * g->xs[2]) * esz;
	/* the inner outputs: from the first whose tap 0 is inside to the
	 * last whose tap kw - 1 is */
	int64_t a = (g->pw + g->sw - 1) / g->sw, span = g->w - g->kw + g->pw;
	int64_t b = span < 0 ? 0 : span / g->sw + 1;
	a = a > o0 ? a : o0;
	b = b < o1 ? b : o1;
	if (a >= b)
		a = b = o1;
	else
		g->run(acc + (size_t)(a - o0) * asz, xr + (size_t)((a * g->sw - g->pw) * g->xs[3]) * esz,
		       g->xs[2], nr, g->xs[3], 0, g->kw, b - a, g->sw * g->xs[3]);
	for (int64_t o = o0; o < o1; o++) {
		if (o == a)
			o = b;
		if (o >= o1)
			break;
		int64_t c0 = o * g->sw - g->pw;
		int64_t j0 = c0 < 0 ? -c0 : 0, j1 = g->w - c0 < g->kw ? g->w - c0 : g->kw;
		g->run(acc + (size_t)(o - o0) * asz, xr + (size_t)(c0 * g->xs[3]) * esz, g->xs[2], nr, g->xs[3],
		       j0, j1 > j0 ? j1 : j0, 1, 0);
	}
	if (g->max)
		return;
	/* the means: the inner outputs' count of real elements is nr * kw */
	double area = (double)(g->kh * g->kw);
	for (int64_t o = o0; o < o1; o++) {
		if (o == a) {
			g->mean(dst + (size_t)(a - o0) * esz, sums + (a - o0), b - a, area, !g->count_pad,
				(double)(nr * g->kw) / area);
			if ((o = b) >= o1)
				break;
		}
		int64_t c0 = o * g->sw - g->pw;
		int64_t j0 = c0 < 0 ? -c0 : 0, j1 = g->w - c0 < g->kw ? g->w - c0 : g->kw;
		g->mean(dst + (size_t)(o - o0) * esz, sums + (o - o0), 1, area, !g->count_pad,
			(double)(nr * (j1 > j0 ? j1 - j0 : 0)) / area);
	}
}

static void win_task(void *ctx, int64_t t)
{
	const struct win *g = ctx;
	int64_t p = t / g->blocks, r0 = t % g->blocks * g->rows;
	int64_t r1 = r0 + g->rows < g->oh ? r0 + g->rows : g->oh;
	int64_t img = p / g->c, ch = p % g->c, block = g->max ? g->ow : BLOCK;
	const char *xc = g->x + (size_t)(img * g->xs[0] + ch * g->xs[1]) * g->esz;
	char *dst = g->out + (size_t)(p * g->oh * g->ow) * g->esz;
	for (int64_t oh = r0; oh < r1; oh++)
		for (int64_t o0 = 0; o0 < g->ow; o0 += block)
			win_row(g, xc, oh, o0, o0 + block < g->ow ? o0 + block : g->ow,
				dst + (size_t)(oh * g->ow + o0) * g->esz);
}

static win_fn run_of(bool max, enum tir_dtype dt)
{
	switch (dt) {
	case TIR_DTYPE_F32: return max ? TIR_ISA_PICK(max_f32) : TIR_ISA_PICK(sum_f32);
	case TIR_DTYPE_F64: return max ? TIR_ISA_PICK(max_f64) : TIR_ISA_PICK(sum_f64);
	case TIR_DTYPE_I32: return TIR_ISA_PICK(max_i32);
	default: return TIR_ISA_PICK(max_i64);
	}
}

/* Output extent of one spatial axis; -1 when the window does not fit. */
static int64_t extent(int64_t in, int64_t k, int64_t s, int64_t pad)
{
	int64_t span = in + 2 * pad;
	if (k < 1 || span < k)
		return -1;
	return (span - k) / s + 1;
}

/* about this many element reads a task (a plane's rows cut to it) */
#define TASK_READS (1 << 15)

int tir_k_pool2d_ex(bool max, const struct tir_tensor *x, const int64_t kernel[2], const int64_t stride[2],
		    const int64_t padding[2], bool count_pad, struct tir_tensor *out, struct tir_err *err)
{
	const char *op = max ? "maxpool2d" : "avgpool2d";
	enum tir_dtype dt = out->dtype;
	bool ints = max && (dt == TIR_DTYPE_I32 || dt == TIR_DTYPE_I64);
	if (!ints && !tir_dtype_is_wide_float(dt))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: no kernel for %s", op, tir_dtype_name(dt));
	if (x->dtype != dt)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: input is %s, out is %s", op, tir_dtype_name(x->dtype),
				tir_dtype_name(dt));
	if (!tir_tensor_is_contiguous(out))
		return tir_errf(err, ints ? TIR_ETYPE : TIR_EUNSUPPORTED, NULL, "%s: out must be contiguous", op);
	if (kernel[0] < 1 || kernel[1] < 1)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: kernel %lldx%lld must be positive", op,
				(long long)kernel[0], (long long)kernel[1]);
	int rc = tir_nchw_window_check(op, x, out, stride, padding, err);
	if (rc)
		return rc;
	struct win g = {
		.max = max, .count_pad = count_pad, .dt = dt, .esz = tir_dtype_size(dt),
		.c = x->shape[1], .h = x->shape[2], .w = x->shape[3],
		.kh = kernel[0], .kw = kernel[1], .sh = stride[0], .sw = stride[1],
		.ph = padding[0], .pw = padding[1],
		.x = tir_tensor_data(x), .out = tir_tensor_data(out), .run = run_of(max, dt),
		.mean = dt == TIR_DTYPE_F32 ? TIR_ISA_PICK(mean_f32) : TIR_ISA_PICK(mean_f64),
	};
	memcpy(g.xs, x->strides, sizeof g.xs);
	g.oh = extent(g.h, g.kh, g.sh, g.ph);
	g.ow = extent(g.w, g.kw, g.sw, g.pw);
	if (g.oh < 0 || g.ow < 0)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: kernel %lldx%lld does not fit the padded %lldx%lld input",
				op, (long long)g.kh, (long long)g.kw, (long long)(g.h + 2 * g.ph),
				(long long)(g.w + 2 * g.pw));
	if (out->shape[0] != x->shape[0] || out->shape[1] != g.c || out->shape[2] != g.oh || out->shape[3] != g.ow)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: out is [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld, %lld]",
				op, (long long)out->shape[0], (long long)out->shape[1], (long long)out->shape[2],
				(long long)out->shape[3], (long long)x->shape[0], (long long)g.c, (long long)g.oh,
				(long long)g.ow);
	if (tir_tensor_numel(out) == 0)
		return 0;
	/* a task: rows enough for TASK_READS reads (taps are at most
	 * TIR_MAX_DIM^2, so the product is done in double) */
	double reads = (double)g.ow * (double)g.kh * (double)g.kw;
	g.rows = reads >= TASK_READS ? 1 : (int64_t)(TASK_READS / reads);
	if (g.rows > g.oh)
		g.rows = g.oh;
	g.blocks = (g.oh + g.rows - 1) / g.rows;
	tir_pool_run(x->shape[0] * g.c * g.blocks, win_task, &g);
	return 0;
}

int tir_k_pool2d(bool max, const struct tir_tensor *x, const int64_t kernel[2], const int64_t stride[2],
		 struct tir_tensor *out, struct tir_err *err)
{
	const int64_t none[2] = {0, 0};
	return tir_k_pool2d_ex(max, x, kernel, stride, none, true, out, err);
}
