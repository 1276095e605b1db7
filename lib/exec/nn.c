/*
 * nn.c — the reference kernels of the nn ops: softmax and log_softmax,
 * layernorm and rmsnorm, conv2d (im2col into gemm's panels) and attention
 * (pooling: window.c).  Float dtypes only; the statistics are kept in double
 * (attention's softmax is rows.c's, as the softmax op's fast path).
 * conv2d and attention split their work into tasks sized by the shapes and
 * the caches run on the pool, each task's products through tir's gemm
 * (gemm.c), so results are bitwise the same with any thread count.
 * Not here: plain matmul (matmul.c) or any fused variant (lib/fusion).
 */
#include "exec.h"
#include "iter.h"
#include "vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* conv2d: output positions per task at most; attention: query rows per
 * task at most.  Each task repacks the operand all tasks share (the
 * weights; k and v), and each element it packs then feeds 256
 * multiply-adds; 256 is a multiple of every gemm kernel's tile.  Tasks
 * are made smaller (conv_pos, tir_k_attention) toward TIR_TASKS_WANT,
 * from the shapes and the caches, never from the thread count. */
#define CONV_POS 256
#define ATTN_ROWS 256

static bool same_shape(const struct tir_tensor *a, const struct tir_tensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

/* Common checks: out is a contiguous float tensor and x has its dtype. */
static int check_io(const char *op, const struct tir_tensor *x, const struct tir_tensor *out,
		    struct tir_err *err)
{
	if (!tir_dtype_is_wide_float(out->dtype))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: no kernel for %s", op,
				tir_dtype_name(out->dtype));
	if (x->dtype != out->dtype)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: input is %s, out is %s", op,
				tir_dtype_name(x->dtype), tir_dtype_name(out->dtype));
	if (!tir_tensor_is_contiguous(out))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: out must be contiguous", op);
	return 0;
}

/* Copy x (any strides) into out (contiguous, same dtype and shape). */
static void copy_into(struct tir_tensor *out, const struct tir_tensor *x)
{
	struct tir_iter it;
	const int64_t *st[2] = { out->strides, x->strides };
	int64_t es = (int64_t)tir_dtype_size(x->dtype);
	char *d = tir_tensor_data(out);
	const char *s = tir_tensor_data(x);

	if (!tir_iter_init(&it, x->rank, x->shape, 2, st))
		return;
	do {
		char *dp = d + it.off[0] * es;
		const char *sp = s + it.off[1] * es;
		int64_t ds = it.istride[0] * es, ss = it.istride[1] * es;
		if (es == 4) {
			for (int64_t i = 0; i < it.inner; i++)
				memcpy(dp + i * ds, sp + i * ss, 4);
		} else {
			for (int64_t i = 0; i < it.inner; i++)
				memcpy(dp + i * ds, sp + i * ss, 8);
		}
	} while (tir_iter_next(&it));
}

/* A [D] operand (weight, bias): rank >= 1, last axis D, every other axis of
 * length 1 or broadcast.  Sets *stride to its step along the last axis. */
static int vec_stride(const char *op, const char *what, const struct tir_tensor *v, int64_t len,
		      enum tir_dtype dt, int64_t *stride, struct tir_err *err)
{
	if (v->dtype != dt)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: %s is %s, expected %s", op, what,
				tir_dtype_name(v->dtype), tir_dtype_name(dt));
	bool ok = v->rank >= 1 && v->shape[v->rank - 1] == len;
	for (int i = 0; ok && i < v->rank - 1; i++)
		ok = v->shape[i] == 1 || v->strides[i] == 0;
	if (!ok)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: %s must have shape [%lld]", op, what,
				(long long)len);
	*stride = v->strides[v->rank - 1];
	return 0;
}

/* ---- softmax ---- */

/* In place over p viewed as [outer, len, inner], the axis in the middle;
 * columns are taken blk at a time so the axis is walked with unit inner
 * steps.  The max propagates NaN, so a row with a NaN is all NaN. */
#define DEFINE_SOFTMAX(T, SFX)                                                     \
static void softmax_##SFX(T *p, int64_t outer, int64_t len, int64_t inner, bool lg, \
			  double *mx, double *sum, int64_t blk)                     \
{                                                                                  \
	for (int64_t o = 0; o < outer; o++)                                        \
	for (int64_t i0 = 0; i0 < inner; i0 += blk) {                              \
		int64_t w = inner - i0 < blk ? inner - i0 : blk;                   \
		T *base = p + o * len * inner + i0;                                \
		for (int64_t i = 0; i < w; i++) {                                  \
			mx[i] = base[i];                                           \
			sum[i] = 0;                                                \
		}                                                                  \
		for (int64_t j = 1; j < len; j++) {                                \
			const T *row = base + j * inner;                           \
			for (int64_t i = 0; i < w; i++)                            \
				if (row[i] > mx[i] || isnan(row[i]))               \
					mx[i] = row[i];                            \
		}                                                                  \
		for (int64_t j = 0; j < len; j++) {                                \
			T *row = base + j * inner;                                 \
			for (int64_t i = 0; i < w; i++) {                          \
				double e = exp((double)row[i] - mx[i]);            \
				sum[i] += e;                                       \
				if (!lg)                                           \
					row[i] = (T)e;                             \
			}                                                          \
		}                                                                  \
		for (int64_t i = 0; i < w; i++)                                    \
			sum[i] = lg ? log(sum[i]) : 1.0 / sum[i];                  \
		for (int64_t j = 0; j < len; j++) {                                \
			T *row = base + j * inner;                                 \
			for (int64_t i = 0; i < w; i++)                            \
				row[i] = lg ? (T)(((double)row[i] - mx[i]) - sum[i]) \
					    : (T)((double)row[i] * sum[i]);        \
		}                                                                  \
	}                                                                          \
}
DEFINE_SOFTMAX(float, f32)
DEFINE_SOFTMAX(double, f64)

/* softmax (or log_softmax when lg) of x along axis into out. */
int tir_k_softmax(const struct tir_tensor *x, int axis, bool lg, struct tir_tensor *out,
		  struct tir_err *err)
{
	const char *op = lg ? "log_softmax" : "softmax";
	int rc = check_io(op, x, out, err);
	if (rc)
		return rc;
	if (!same_shape(x, out))
		return tir_errf(err, TIR_ETYPE, NULL, "%s: out's shape differs from the input's", op);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis >= x->rank)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: axis out of range for rank %d", op,
				x->rank);
	if (tir_tensor_numel(x) == 0)
		return 0;
	if (axis == x->rank - 1 &&
	    tir_rows_apply(lg ? TIR_OP_LOG_SOFTMAX : TIR_OP_SOFTMAX, x, NULL, NULL, 0, out))
		return 0;

	int64_t outer = 1, inner = 1, len = x->shape[axis];
	for (int i = 0; i < axis; i++)
		outer *= x->shape[i];
	for (int i = axis + 1; i < x->rank; i++)
		inner *= x->shape[i];
	/* columns at once: their max and sum (16 bytes each) take L2 / 32,
	 * leaving L2 to the rows of the block being walked */
	int64_t blk = tir_machine_caches()->l2 / 32 / 16;
	int64_t w = inner < blk ? inner : blk;
	double *mx = malloc(2 * (size_t)w * sizeof *mx);
	if (!mx)
		return tir_errf(err, TIR_ENOMEM, NULL, "%s: out of memory", op);
	double *sum = mx + w;

	copy_into(out, x);
	if (out->dtype == TIR_DTYPE_F32)
		softmax_f32(tir_tensor_data(out), outer, len, inner, lg, mx, sum, w);
	else
		softmax_f64(tir_tensor_data(out), outer, len, inner, lg, mx, sum, w);
	free(mx);
	return 0;
}

/* ---- layernorm, rmsnorm ---- */

/* Each row of p[rows, d] in place; wp, bp step by ws, bs.  Without bp the
 * mean is taken as 0, which makes it rmsnorm. */
#define DEFINE_NORM(T, SFX)                                                        \
static void norm_##SFX(T *p, int64_t rows, int64_t d, const T *wp, int64_t ws,     \
		       const T *bp, int64_t bs, double eps)                        \
{                                                                                  \
	for (int64_t r = 0; r < rows; r++, p += d) {                               \
		double mean = 0, ss = 0;                                           \
		if (bp) {                                                          \
			for (int64_t j = 0; j < d; j++)                            \
				mean += p[j];                                      \
			mean /= (double)d;                                         \
		}                                                                  \
		for (int64_t j = 0; j < d; j++) {                                  \
			double c = (double)p[j] - mean;                            \
			ss += c * c;                                               \
		}                                                                  \
		double inv = 1.0 / sqrt(ss / (double)d + eps);                     \
		for (int64_t j = 0; j < d; j++) {                                  \
			double y = ((double)p[j] - mean) * inv * (double)wp[j * ws]; \
			if (bp)                                                    \
				y += (double)bp[j * bs];                           \
			p[j] = (T)y;                                               \
		}                                                                  \
	}                                                                          \
}
DEFINE_NORM(float, f32)
DEFINE_NORM(double, f64)

/* layernorm when b is given, rmsnorm (mean taken as 0) when it is NULL. */
static int norm(const char *op, const struct tir_tensor *x, const struct tir_tensor *w,
		const struct tir_tensor *b, double eps, struct tir_tensor *out,
		struct tir_err *err)
{
	int64_t ws = 0, bs = 0;
	int rc = check_io(op, x, out, err);
	if (rc)
		return rc;
	if (x->rank < 1 || !same_shape(x, out))
		return tir_errf(err, TIR_ETYPE, NULL, "%s: input must have rank >= 1 and out's shape",
				op);
	int64_t d = x->shape[x->rank - 1];
	if ((rc = vec_stride(op, "weight", w, d, out->dtype, &ws, err)))
		return rc;
	if (b && (rc = vec_stride(op, "bias", b, d, out->dtype, &bs, err)))
		return rc;
	int64_t n = tir_tensor_numel(x);
	if (n == 0)
		return 0;
	int64_t rows = n / d;
	if (tir_rows_apply(b ? TIR_OP_LAYERNORM : TIR_OP_RMSNORM, x, w, b, eps, out))
		return 0;

	copy_into(out, x);
	const void *wp = tir_tensor_data(w), *bp = b ? tir_tensor_data(b) : NULL;
	if (out->dtype == TIR_DTYPE_F32)
		norm_f32(tir_tensor_data(out), rows, d, wp, ws, bp, bs, eps);
	else
		norm_f64(tir_tensor_data(out), rows, d, wp, ws, bp, bs, eps);
	return 0;
}

/* (x - mean) / sqrt(var + eps) * w + b over the last axis. */
int tir_k_layernorm(const struct tir_tensor *x, const struct tir_tensor *w,
		    const struct tir_tensor *b, double eps, struct tir_tensor *out,
		    struct tir_err *err)
{
	if (!b)
		return tir_errf(err, TIR_ETYPE, NULL, "layernorm: bias is required");
	return norm("layernorm", x, w, b, eps, out, err);
}

/* x / sqrt(mean(x^2) + eps) * w over the last axis. */
int tir_k_rmsnorm(const struct tir_tensor *x, const struct tir_tensor *w, double eps,
		  struct tir_tensor *out, struct tir_err *err)
{
	return norm("rmsnorm", x, w, NULL, eps, out, err);
}

/* ---- conv2d ---- */

/* The geometry of one conv2d or pool2d. */
struct conv {
	int64_t n, c, h, w;          /* input */
	int64_t o, kh, kw;           /* filters (o == c for pooling) */
	int64_t sh, sw, ph, pw;
	int64_t oh, ow;              /* output */
	int64_t xs[4];               /* input strides */
};

/* Output extent of one spatial axis; -1 when the window does not fit. */
static int64_t conv_extent(int64_t in, int64_t k, int64_t s, int64_t pad)
{
	int64_t span = in + 2 * pad;
	if (k < 1 || span < k)
		return -1;
	return (span - k) / s + 1;
}

int tir_nchw_window_check(const char *op, const struct tir_tensor *x, const struct tir_tensor *out,
			  const int64_t stride[2], const int64_t pad[2], struct tir_err *err)
{
	if (x->rank != 4 || out->rank != 4)
		return tir_errf(err, TIR_ETYPE, NULL, "%s: input and out must be [N, C, H, W]", op);
	for (int i = 0; i < 2; i++) {
		if (stride[i] < 1 || stride[i] > TIR_MAX_DIM)
			return tir_errf(err, TIR_ETYPE, NULL, "%s: stride %lld out of range", op,
					(long long)stride[i]);
		if (pad[i] < 0 || pad[i] > TIR_MAX_DIM)
			return tir_errf(err, TIR_ETYPE, NULL, "%s: padding %lld out of range", op,
					(long long)pad[i]);
	}
	return 0;
}

static int conv_geometry(const char *op, const struct tir_tensor *x, int64_t o, int64_t kh,
			 int64_t kw, const int64_t stride[2], const int64_t pad[2],
			 const struct tir_tensor *out, struct conv *g, struct tir_err *err)
{
	int rc = tir_nchw_window_check(op, x, out, stride, pad, err);
	if (rc)
		return rc;
	*g = (struct conv){
		.n = x->shape[0], .c = x->shape[1], .h = x->shape[2], .w = x->shape[3],
		.o = o, .kh = kh, .kw = kw,
		.sh = stride[0], .sw = stride[1], .ph = pad[0], .pw = pad[1],
	};
	memcpy(g->xs, x->strides, sizeof g->xs);
	g->oh = conv_extent(g->h, kh, g->sh, g->ph);
	g->ow = conv_extent(g->w, kw, g->sw, g->pw);
	if (g->oh < 0 || g->ow < 0)
		return tir_errf(err, TIR_ETYPE, NULL,
				"%s: kernel %lldx%lld does not fit the padded %lldx%lld input", op,
				(long long)kh, (long long)kw, (long long)(g->h + 2 * g->ph),
				(long long)(g->w + 2 * g->pw));
	if (out->shape[0] != g->n || out->shape[1] != o || out->shape[2] != g->oh ||
	    out->shape[3] != g->ow)
		return tir_errf(err, TIR_ETYPE, NULL,
				"%s: out is [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld, %lld]",
				op, (long long)out->shape[0], (long long)out->shape[1],
				(long long)out->shape[2], (long long)out->shape[3], (long long)g->n,
				(long long)o, (long long)g->oh, (long long)g->ow);
	return 0;
}

/* Row r (filter tap kk = (c, i, j)) of a k-block of the column matrix of
 * one image xp, output positions p0 .. p0 + pc, written straight into the
 * gemm's packed panels of b (nr columns each, kcb rows: position q at
 * pb[(q / nr * kcb + r) * nr + q % nr]); zero where the tap reads
 * padding, and from pc to the last panel's end (npad).  The row goes by
 * pieces of positions on one output row (oh) and in one panel, cut once
 * per task (conv_pieces): a piece reads one input row, zeros where it
 * leaves it at either side, and is copied inline (a library call a piece
 * cost as much as the copy: a 3x3 conv2d's pieces are a few dozen
 * elements, and its padding one). */
/* A piece of a task's positions: positions [q, q + n), from column at of
 * panel pan (q = pan nr + at), are columns [ow0, ow0 + n) of output row
 * oh, whose tap (c, i, j) reads input row ih0 + i of channel c's plane
 * from its element src + i * xs[2] + (j - pw) * xs[3] on (where the tap
 * reads no padding). */
struct conv_seg {
	int64_t pan, at, n, ow0, ih0, src;
};

/* Where position q of row r lies in the panels of 2^nrs columns */
static inline int64_t conv_at(int64_t kcb, int nrs, int64_t r, int64_t q)
{
	return (((q >> nrs) * kcb + r) << nrs) + (q & (((int64_t)1 << nrs) - 1));
}

/* The pieces of positions [0, pc) from (oh, ow0) on, cut at the output
 * rows' and the panels' edges, into seg (at most pc of them, and at most
 * the rows plus the panels): how many. */
static int64_t conv_pieces(const struct conv *g, int64_t pc, int64_t oh, int64_t ow0, int nrs,
			   struct conv_seg *seg)
{
	int64_t nseg = 0, nr = (int64_t)1 << nrs;
	for (int64_t q = 0; q < pc; nseg++) {
		int64_t n = g->ow - ow0 < pc - q ? g->ow - ow0 : pc - q;
		n = nr - (q & (nr - 1)) < n ? nr - (q & (nr - 1)) : n;
		int64_t ih0 = oh * g->sh - g->ph;
		seg[nseg] = (struct conv_seg){ q >> nrs, q & (nr - 1), n, ow0, ih0,
					       ih0 * g->xs[2] + ow0 * g->sw * g->xs[3] };
		q += n;
		if ((ow0 += n) == g->ow) {
			oh++;
			ow0 = 0;
		}
	}
	return nseg;
}

/* The copies' units, any alignment: 8 to 64 bytes; a build's widest
 * (conv_vec_ISA) is its vector path's (SSE2's 16 bytes for gen). */
#define CONV_VEC(B) typedef char conv_v##B __attribute__((vector_size(B), aligned(1), may_alias));
CONV_VEC(8)
CONV_VEC(16)
CONV_VEC(32)
CONV_VEC(64)
typedef conv_v16 conv_vec_gen;
typedef conv_v32 conv_vec_a2;
typedef conv_v64 conv_vec_a5;
/* A zero vector GCC cannot see through: it made the zeros' loop a
 * memset call, for pieces as short as one float (a 3x3 conv2d's padding). */
#if TIR_ISA_X86
#define CONV_OPAQUE(z) __asm__("" : "+x"(z))
#else
#define CONV_OPAQUE(z) ((void)0)
#endif
/* The unit VT from s (NULL: zeros) at element t to d at t */
#define CONV_MOVE(VT, d, s, t) (*(VT *)((d) + (t)) = (s) ? *(const VT *)((s) + (t)) : (VT){ 0 })

/* im2col: rows r0 .. r1 of the k-block of taps k0 .. k0 + kcb of image xp
 * (es bytes an element), by ROW */
#define CONV_ROWS(NAME, ROW, TGT)                                                 \
static TGT void NAME(const struct conv *g, const char *xp, int64_t es, char *pb, int64_t k0, \
		     int64_t kcb, int64_t r0, int64_t r1, int nrs, const struct conv_seg *seg, \
		     int64_t nseg, int64_t pc, int64_t npad)                       \
{                                                                                  \
	/* tap k0 + r is (c, i, j), counted along without dividing */              \
	int64_t k = k0 + r0, c = k / (g->kh * g->kw), i = k / g->kw % g->kh, j = k % g->kw; \
	for (int64_t r = r0; r < r1; r++) {                                        \
		ROW(g, xp + c * g->xs[1] * es, pb, kcb, nrs, r, i, j, seg, nseg, pc, npad); \
		if (++j == g->kw) {                                                \
			j = 0;                                                     \
			if (++i == g->kh) {                                        \
				i = 0;                                             \
				c++;                                               \
			}                                                          \
		}                                                                  \
	}                                                                          \
}

/* im2col_row (NAME): row r of a k-block (tap (c, i, j); xcb: channel c's
 * plane) over the task's pieces, then zeros from pc to npad, each piece
 * by PUT(d, s, st, n); SW is the stride along rows (g->sw, or a
 * constant, which spares a row its divisions).  A piece the tap reads
 * inside the plane (most of a 3x3 conv2d's) is one copy from where
 * conv_pieces found it, shifted to the tap. */
#define CONV_ROW(NAME, T, PUT, SW, TGT)                                           \
static TGT inline __attribute__((always_inline)) void                             \
NAME(const struct conv *g, const char *xcb, char *pbb, int64_t kcb, int nrs,      \
	     int64_t r, int64_t i, int64_t j, const struct conv_seg *seg, int64_t nseg, \
	     int64_t pc, int64_t npad)                                            \
{                                                                                 \
	const T *xc = (const T *)xcb;                                             \
	T *pb = (T *)pbb;                                                         \
	int64_t off = j - g->pw, st = (SW) * g->xs[3];                            \
	/* ow with iw = ow * sw - pw + j in [0, w): [lo0, hi0) on every row */    \
	int64_t lo0 = off >= 0 ? 0 : (SW) == 1 ? -off : (-off + (SW) - 1) / (SW); \
	int64_t hi0 = g->w - off <= 0 ? 0                                         \
		      : (SW) == 1 ? g->w - off : (g->w - off + (SW) - 1) / (SW);  \
	const T *xt = xc + i * g->xs[2] + off * g->xs[3];                         \
	T *pr = pb + (r << nrs);                                                  \
	int64_t ks = kcb << nrs;                                                  \
	for (int64_t x = 0; x < nseg; x++) {                                      \
		int64_t ow0 = seg[x].ow0, ow1 = ow0 + seg[x].n;                   \
		int64_t ih = seg[x].ih0 + i;                                      \
		T *d = pr + seg[x].pan * ks + seg[x].at;                          \
		if ((uint64_t)ih >= (uint64_t)g->h) {                             \
			PUT(d, NULL, 0, seg[x].n);                                \
			continue;                                                 \
		}                                                                 \
		if (lo0 <= ow0 && ow1 <= hi0) {                                   \
			PUT(d, xt + seg[x].src, st, seg[x].n);                    \
			continue;                                                 \
		}                                                                 \
		const T *xr = xc + ih * g->xs[2];                                 \
		int64_t lo = lo0 < ow0 ? ow0 : lo0 > ow1 ? ow1 : lo0;             \
		int64_t hi = hi0 > ow1 ? ow1 : hi0 < lo ? lo : hi0;               \
		PUT(d, NULL, 0, lo - ow0);                                        \
		PUT(d + lo - ow0, xr + (lo * (SW) + off) * g->xs[3], st, hi - lo); \
		PUT(d + hi - ow0, NULL, 0, ow1 - hi);                             \
	}                                                                         \
	if (npad > pc)                                                            \
		PUT(pb + conv_at(kcb, nrs, r, pc), NULL, 0, npad - pc);           \
}

/* put: n elements from s by stride st, or zeros (s NULL), to d.  Along
 * memory, by the build's vectors and the last one again where they
 * overlap (no element loop left over); fewer than a vector, by a half (a
 * quarter, ..., 8 bytes) at either end, overlapping; a float alone. */
#define DEFINE_CONV(T, SFX, ISA, TGT)                                             \
static TGT inline void put_##SFX##_##ISA(T *d, const T *s, int64_t st, int64_t n) \
{                                                                                  \
	enum { V = (int)(sizeof(conv_vec_##ISA) / sizeof(T)) };                    \
	if (s && st != 1) {                                                        \
		for (int64_t t = 0; t < n; t++)                                    \
			d[t] = s[t * st];                                          \
	} else if (n >= V) {                                                       \
		conv_vec_##ISA z = { 0 };                                          \
		CONV_OPAQUE(z);                                                    \
		for (int64_t t = 0; t + V < n; t += V)                             \
			*(conv_vec_##ISA *)(d + t) = s ? *(const conv_vec_##ISA *)(s + t) : z; \
		*(conv_vec_##ISA *)(d + n - V) = s ? *(const conv_vec_##ISA *)(s + n - V) : z; \
	} else if (V * sizeof(T) > 32 && n * sizeof(T) >= 32) {                   \
		CONV_MOVE(conv_v32, d, s, 0);                                      \
		CONV_MOVE(conv_v32, d, s, n - 32 / (int64_t)sizeof(T));            \
	} else if (V * sizeof(T) > 16 && n * sizeof(T) >= 16) {                   \
		CONV_MOVE(conv_v16, d, s, 0);                                      \
		CONV_MOVE(conv_v16, d, s, n - 16 / (int64_t)sizeof(T));            \
	} else if (n * sizeof(T) >= 8) {                                           \
		CONV_MOVE(conv_v8, d, s, 0);                                       \
		CONV_MOVE(conv_v8, d, s, n - 8 / (int64_t)sizeof(T));              \
	} else if (n > 0) {                                                        \
		*d = s ? *s : 0;                                                   \
	}                                                                          \
}                                                                                  \
CONV_ROW(im2col_row_##SFX##_##ISA, T, put_##SFX##_##ISA, g->sw, TGT)               \
CONV_ROWS(im2col_##SFX##_##ISA, im2col_row_##SFX##_##ISA, TGT)

#define DEFINE_CONVS(ISA, TGT) DEFINE_CONV(float, f32, ISA, TGT) DEFINE_CONV(double, f64, ISA, TGT)
TIR_ISA_BUILDS(DEFINE_CONVS)

/* im2col's signature: one build's, for one dtype */
typedef void conv_cols_fn(const struct conv *g, const char *xp, int64_t es, char *pb, int64_t k0, int64_t kcb,
			  int64_t r0, int64_t r1, int nrs, const struct conv_seg *seg, int64_t nseg, int64_t pc,
			  int64_t npad);

#if TIR_ISA_X86
#include <immintrin.h>
/* put_f32_a5 for a row read by stride 2 (s NULL: zeros), 16 positions at a
 * time: the even elements of two vectors loaded, masked at a piece's end
 * (a masked-off element is never read) and stored whole, or masked at
 * the end.  A stem's 7x7/2 conv2d spent half its time in put_f32's
 * element-by-element strided copies. */
static TIR_ISA_A5 inline void put_s2(float *d, const float *s, int64_t st, int64_t n)
{
	(void)st; /* 2 */
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	for (int64_t t = 0; t < n; t += 16) {
		int m = n - t < 16 ? (int)(n - t) : 16;
		__m512 v = _mm512_setzero_ps();
		if (s) {        /* s[2 t + 2 u], u < m: 2 m - 1 elements */
			int e = 2 * m - 1;
			__mmask16 m0 = (__mmask16)(e >= 16 ? 0xffff : (1u << e) - 1);
			__mmask16 m1 = (__mmask16)(e > 16 ? (1u << (e - 16)) - 1 : 0);
			v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0, s + 2 * t), even,
						   _mm512_maskz_loadu_ps(m1, s + 2 * t + 16));
		}
		if (m == 16)
			_mm512_storeu_ps(d + t, v);
		else
			_mm512_mask_storeu_ps(d + t, (__mmask16)((1u << m) - 1), v);
	}
}

/* im2col_row over put_s2 (f32, stride 2 along memory: conv_cols_pick) */
CONV_ROW(im2col_row_s2, float, put_s2, 2, TIR_ISA_A5)
CONV_ROWS(im2col_s2, im2col_row_s2, TIR_ISA_A5)
#endif

/* The im2col of a conv2d's columns: the vector path's build, or im2col_s2
 * for f32 on the AVX-512 path with stride 2 along rows that lie along
 * memory (not on OpenBLAS's columns).  (Stride 1 goes by unmasked moves,
 * the last one overlapping: masked moves made ResNet-18's 56x56 layers
 * slower.) */
static conv_cols_fn *conv_cols_pick(const struct conv *g, bool f32, bool blas)
{
#if TIR_ISA_X86
	if (f32 && !blas && g->sw == 2 && g->xs[3] == 1 && tir_vmath_path() == TIR_VMATH_AVX512)
		return im2col_s2;
#endif
	(void)g, (void)blas;
	return f32 ? TIR_ISA_PICK(im2col_f32) : TIR_ISA_PICK(im2col_f64);
}

/* One conv2d cut into tasks: task t = (image, block of pos output
 * positions); each fills its block of every output plane with the bias,
 * then, k-block by k-block of the filter taps, writes the block's
 * column matrix straight into the gemm's packed panels (im2col a row at a
 * time, each row cut into the panels) and multiplies the weights, packed
 * once for all tasks (tir_gemm_panels) or read where they lie
 * (tir_gemm_direct_part), into it. */
struct conv_job {
	const struct conv *g;
	bool f32;
	int64_t es;
	const char *x, *bias;
	const void *pw;                      /* the weights, packed */
	struct tir_gemm_form form;
	const void *w;                       /* on OpenBLAS: the weights [O, kdim] */
	const void *wd;                      /* or on tir's, read where they lie (direct) */
	int blas_nrs;                        /* and the columns' row: 2^blas_nrs */
	int64_t bstride;
	char *out;
	int64_t plane, kdim, pos, pblocks;
	atomic_bool failed;                  /* a column buffer was not had */
	void *cols[TIR_POOL_MAX];            /* per worker: kc x pos packed, then a row */
	size_t col_bytes;                    /* each (conv_col_bytes), charged while held */
};

/* The bytes of a conv_task's column buffer: the longest k-block's panels
 * of any task, then the task's pieces (conv_pieces: at most pos of them). */
static size_t conv_col_bytes(const struct conv_job *j)
{
	bool blas = j->w != NULL;
	int64_t kc = blas ? j->kdim : j->form.kc;
	int64_t kc1 = j->kdim < kc ? j->kdim : kc;
	int64_t most = blas ? (int64_t)1 << j->blas_nrs : (j->pos + j->form.nr - 1) / j->form.nr * j->form.nr;
	return (size_t)(kc1 * most * j->es) + (size_t)(j->pos + 1) * sizeof(struct conv_seg);
}

static void conv_task(void *arg, int64_t t)
{
	struct conv_job *j = arg;
	const struct conv *g = j->g;
	const struct tir_gemm_form *f = &j->form;
	int64_t es = j->es, img = t / j->pblocks, p0 = t % j->pblocks * j->pos;
	int64_t pc = j->plane - p0 < j->pos ? j->plane - p0 : j->pos;
	int64_t np = (pc + f->nr - 1) / f->nr, npad = np * f->nr;
	char *oimg = j->out + img * g->o * j->plane * es;

	/* with a bias, each chain starts from it: the block is filled first;
	 * without, the first k-block starts from zero in the kernel */
	for (int64_t fi = 0; j->bias && fi < g->o; fi++) {
		char *dst = oimg + (fi * j->plane + p0) * es;
		const char *bv = j->bias + fi * j->bstride * es;
		if (j->f32) {
			float v = *(const float *)bv, *d = (float *)dst;
			for (int64_t q = 0; q < pc; q++)
				d[q] = v;
		} else {
			double v = *(const double *)bv, *d = (double *)dst;
			for (int64_t q = 0; q < pc; q++)
				d[q] = v;
		}
	}
	void **slot = &j->cols[tir_pool_worker()];
	/* on OpenBLAS, the column matrix [kdim, pc] whole, row-major, its rows
	 * 2^blas_nrs long: im2col's panels of one panel of that width */
	bool blas = j->w != NULL;
	int64_t kc = blas ? j->kdim : f->kc;
	/* the longest k-block's panels of any task */
	int64_t kc1 = j->kdim < kc ? j->kdim : kc;
	int64_t most = blas ? (int64_t)1 << j->blas_nrs : (j->pos + f->nr - 1) / f->nr * f->nr;
	bool kept;
	if (!*slot && !(*slot = tir_scratch_get(NULL, j->col_bytes, &kept))) {
		atomic_store(&j->failed, true);
		return;
	}
	char *pb = *slot;
	int nrs = blas ? j->blas_nrs : __builtin_ctzll((unsigned long long)f->nr);
	struct conv_seg *seg = (struct conv_seg *)(pb + kc1 * most * es);
	int64_t nseg = conv_pieces(g, pc, p0 / g->ow, p0 % g->ow, nrs, seg);
	const char *xp = j->x + img * g->xs[0] * es;
	conv_cols_fn *im2col = conv_cols_pick(g, j->f32, blas);
	for (int64_t k0 = 0; k0 < j->kdim; k0 += kc) {
		int64_t kcb = j->kdim - k0 < kc ? j->kdim - k0 : kc;
		/* OpenBLAS's rows are pc long: no padding after them */
		im2col(g, xp, es, pb, k0, kcb, 0, kcb, nrs, seg, nseg, pc, blas ? pc : npad);
		if (blas) {         /* out[:, block] (+)= w [O, kdim] @ cols [kdim, pc] */
			tir_blas_call(j->f32 ? TIR_DTYPE_F32 : TIR_DTYPE_F64, g->o, pc, kcb, j->w, false,
				      j->kdim, pb, false, most, j->bias != NULL, oimg + p0 * es, j->plane);
			continue;
		}
		/* out[f, p0 + q] += w[f, k0 ..] @ cols: each output element goes on
		 * as one chain from its bias over the taps in order (gemm.c) */
		bool load = k0 > 0 || j->bias;
		if (j->wd ? !tir_gemm_direct_part(f, j->wd, j->kdim, k0, kcb, g->o, 0, (g->o + f->mr - 1) / f->mr,
						  pb, pc, 0, np, oimg + p0 * es, j->plane, load)
			  : !tir_gemm_panels(f, j->pw, k0, kcb, g->o, pb, pc, oimg + p0 * es, j->plane, load))
			return;
	}
}

/* ---- conv2d over column panels shared by its tasks ----
 * A convolution whose output positions are too few to make
 * TIR_TASKS_WANT tasks of their own (a CNN's late layers at batch 1: 7 x
 * 7 positions of 512 filters made one task, run by one thread while the
 * others waited) packs the column matrix of every image once, in
 * parallel (cols_task: a run of filter taps of one k-block each), into
 * the gemm's panels, and then cuts the product into tiles of filters x
 * positions (cols_tile), each going over all the k-blocks in order: the
 * filters are then split between tasks as well as the positions, and no
 * task packs columns another one packs too.  Where the gemm has kernels
 * over an unpacked a (AVX-512 f32), the weights are read where they lie:
 * ResNet-18's 7 x 7 layers spent more in packing 9 MiB of weights (read
 * and written once more) than in their products, and its 28 x 28 and
 * 14 x 14 layers, whose weights each tile reads from L2, ran a tenth
 * faster on one thread without packing them. */
struct conv_cols {
	const struct conv *g;
	const struct tir_gemm_form *f;
	bool f32;
	int64_t es;
	const char *x, *bias;
	int64_t bstride;
	const void *pw;                      /* the weights, packed */
	const void *w;                       /* or as they lie, [O, kdim] (direct) */
	char *out;
	char *cols;                          /* per image: kdim x npad, k-block by k-block */
	const struct conv_seg *seg;          /* the plane's pieces */
	int64_t nseg;
	int64_t plane, kdim, npad;
	int64_t rows, upk, kblocks;          /* taps per packing unit, units per k-block */
	int64_t mp, np, tm, tn, ti, tj;      /* tiles: tm x tn panels, ti x tj an image */
};

static void cols_task(void *arg, int64_t u)
{
	const struct conv_cols *j = arg;
	const struct conv *g = j->g;
	int64_t img = u / (j->kblocks * j->upk), rest = u % (j->kblocks * j->upk);
	int64_t k0 = rest / j->upk * j->f->kc, r0 = rest % j->upk * j->rows;
	int64_t kcb = j->kdim - k0 < j->f->kc ? j->kdim - k0 : j->f->kc;
	int64_t r1 = r0 + j->rows < kcb ? r0 + j->rows : kcb;
	int nrs = __builtin_ctzll((unsigned long long)j->f->nr);
	char *pb = j->cols + (img * j->kdim + k0) * j->npad * j->es;
	const char *xp = j->x + img * g->xs[0] * j->es;
	conv_cols_fn *im2col = conv_cols_pick(g, j->f32, false);
	im2col(g, xp, j->es, pb, k0, kcb, r0, r1, nrs, j->seg, j->nseg, j->plane, j->npad);
}

static void cols_tile(void *arg, int64_t t)
{
	const struct conv_cols *j = arg;
	const struct conv *g = j->g;
	const struct tir_gemm_form *f = j->f;
	int64_t es = j->es, img = t / (j->ti * j->tj), rest = t % (j->ti * j->tj);
	int64_t q0 = rest / j->tj * j->tm, r0 = rest % j->tj * j->tn;
	int64_t q1 = q0 + j->tm < j->mp ? q0 + j->tm : j->mp;
	int64_t r1 = r0 + j->tn < j->np ? r0 + j->tn : j->np;
	char *oimg = j->out + img * g->o * j->plane * es;
	/* with a bias, each chain starts from it (as conv_task's) */
	int64_t f1 = q1 * f->mr < g->o ? q1 * f->mr : g->o;
	int64_t p0 = r0 * f->nr, p1 = r1 * f->nr < j->plane ? r1 * f->nr : j->plane;
	for (int64_t fi = q0 * f->mr; j->bias && fi < f1; fi++) {
		const char *bv = j->bias + fi * j->bstride * es;
		char *dst = oimg + (fi * j->plane + p0) * es;
		for (int64_t q = 0; q < p1 - p0; q++) {
			if (j->f32)
				((float *)dst)[q] = *(const float *)bv;
			else
				((double *)dst)[q] = *(const double *)bv;
		}
	}
	const char *cimg = j->cols + img * j->kdim * j->npad * es;
	for (int64_t k0 = 0; k0 < j->kdim; k0 += f->kc) {
		int64_t kcb = j->kdim - k0 < f->kc ? j->kdim - k0 : f->kc;
		const char *pb = cimg + k0 * j->npad * es;
		bool load = k0 > 0 || j->bias;
		if (!(j->w ? tir_gemm_direct_part(f, j->w, j->kdim, k0, kcb, g->o, q0, q1, pb, j->plane, r0,
						  r1, oimg, j->plane, load)
			   : tir_gemm_panels_part(f, j->pw, k0, kcb, g->o, q0, q1, pb, j->plane, r0, r1, oimg,
						  j->plane, load)))
			return;
	}
}

/* The tiles of a conv_cols, as the gemm's (gemm.c's choose_tiles): the
 * whole product, a tile's rows of the weights (tm panels x KC) within
 * half of L2, then the longer side (in elements) halved until the
 * product makes TIR_TASKS_WANT tasks, never below 2 panels of rows and 1
 * of columns.  With the weights read where they lie (j->w), the rows
 * are halved first, down to one panel, and only then the columns (a
 * tile over all the columns reads its weights from memory once).  From
 * the shapes and the caches only. */
static void cols_tiles(struct conv_cols *j, int64_t images)
{
	const struct tir_gemm_form *f = j->f;
	int64_t tm = j->mp, tn = j->np, least = j->w ? 1 : 2;
	int64_t max_tm = tir_machine_caches()->l2 / 2 / (f->kc * f->mr * f->es);
	max_tm = max_tm < 2 ? 2 : max_tm;
	if (tm > max_tm)
		tm = (j->mp + (j->mp + max_tm - 1) / max_tm - 1) / ((j->mp + max_tm - 1) / max_tm);
	while (images * ((j->mp + tm - 1) / tm) * ((j->np + tn - 1) / tn) < TIR_TASKS_WANT) {
		bool rows = j->w || (tm * f->mr >= tn * f->nr ? tm > 2 : tn <= 1);
		if (rows && tm > least)
			tm = (tm + 1) / 2 < least ? least : (tm + 1) / 2;
		else if (tn > 1)
			tn = (tn + 1) / 2;
		else
			break;
	}
	j->tm = tm;
	j->tn = tn;
	j->ti = (j->mp + tm - 1) / tm;
	j->tj = (j->np + tn - 1) / tn;
}

/* The convolution by conv_cols, the weights packed in f's form (pw): 0,
 * or 1 when its buffers were not had (nothing done). */
static int conv_shared(const struct conv *g, const struct tir_gemm_form *f, const void *pw,
		       const void *w, const char *x, const char *bias, int64_t bstride, char *out, void *cols, int64_t npad)
{
	struct conv_cols j = {
		.g = g, .f = f, .f32 = f->es == 4, .es = f->es, .x = x, .bias = bias, .bstride = bstride,
		.pw = pw, .w = w, .out = out, .cols = cols, .plane = g->oh * g->ow, .kdim = g->c * g->kh * g->kw,
		.npad = npad, .mp = (g->o + f->mr - 1) / f->mr, .np = npad / f->nr,
	};
	struct conv_seg *seg = malloc((size_t)(g->oh + j.np) * sizeof *seg);
	if (!seg)
		return 1;
	j.seg = seg;
	j.nseg = conv_pieces(g, j.plane, 0, 0, __builtin_ctzll((unsigned long long)f->nr), seg);
	/* packing units: the taps whose columns fill about L1d, at least 8 */
	j.rows = tir_machine_caches()->l1d / (npad * f->es);
	j.rows = j.rows < 8 ? 8 : j.rows > f->kc ? f->kc : j.rows;
	j.upk = (f->kc + j.rows - 1) / j.rows;
	j.kblocks = (j.kdim + f->kc - 1) / f->kc;
	cols_tiles(&j, g->n);
	tir_pool_run_packing(g->n * j.kblocks * j.upk, cols_task, &j);
	tir_pool_run(g->n * j.ti * j.tj, cols_tile, &j);
	free(seg);
	return 0;
}

/* Output positions per conv2d task: CONV_POS at most, halved (to whole
 * panels of the gemm's nr columns) toward TIR_TASKS_WANT tasks, down to
 * two panels (the weights are packed once for all tasks, so a small
 * task repacks nothing: [8, 64, 56, 56] makes 392 tasks of 64). */
static int64_t conv_pos(int64_t images, int64_t plane, int64_t nr)
{
	int64_t pos = plane < CONV_POS ? plane : CONV_POS;
	while (images * ((plane + pos - 1) / pos) < TIR_TASKS_WANT) {
		int64_t half = ((pos + 1) / 2 + nr - 1) / nr * nr;
		if (half >= pos || half < 2 * nr)
			break;
		pos = half;
	}
	return pos;
}

/* Buffers kept between convolutions (the packed weights, 0; the shared
 * columns, 1): a fresh one costs its page faults, as much as packing 9
 * MiB of weights.  One of each is kept, up to CONV_KEEP bytes; a
 * convolution that finds it in use (on another thread) allocates its
 * own.  Kept or not, charged to the memory budget while held. */
#define CONV_KEEP ((size_t)64 << 20)

static struct tir_keep conv_keep[2];

/* The most bytes of shared columns (conv_shared): 4 L2s, so that the
 * tiles read them back from the caches near (in a ResNet-18 at batch 1,
 * the layers of 28 x 28 positions and less: 3.7 MiB at most; packed
 * whole, the 7.4 MiB of the 112 x 112 stem made it a fifth slower than
 * its blocks of positions on one thread). */
static int64_t conv_cols_most(void)
{
	return 4 * tir_machine_caches()->l2;
}

/* TIR_CONV=own, shared or direct: every conv2d packs its columns per
 * task (conv_task: 1) or shared (conv_shared: 2), its weights packed, or
 * shared with the weights read where they lie (3, where the gemm has
 * such kernels, else 2), whatever its shape (tests, bench: every way
 * gives the same bits); else 0, by the shape, the weights read where
 * they lie where the gemm can. */
static int conv_way(void)
{
	static int way = -1; /* asked once; threads may ask together (same answer) */
	int v = __atomic_load_n(&way, __ATOMIC_RELAXED);
	if (v < 0) {
		const char *e = getenv("TIR_CONV");
		v = !e ? 0 : !strcmp(e, "own") ? 1 : !strcmp(e, "shared") ? 2 : !strcmp(e, "direct") ? 3 : 0;
		__atomic_store_n(&way, v, __ATOMIC_RELAXED);
	}
	return v;
}

size_t tir_conv2d_least(const struct tir_type *x, const struct tir_type *w, const struct tir_type *out)
{
	enum tir_dtype dt = (enum tir_dtype)out->dtype;
	if (!tir_dtype_is_wide_float(dt) || x->rank != 4 || w->rank != 4 || out->rank != 4 || !w->shape[1] ||
	    tir_gemm_kind() != TIR_GEMM_TIR)
		return 0;
	struct tir_gemm_form f;
	tir_gemm_form(dt, &f);
	int way = conv_way();
	if (tir_gemm_has_direct(&f) && (way == 0 || way == 3))
		return 0;
	/* the weights packed, a group's (groups: x's channels over w's) */
	int64_t groups = x->shape[1] / w->shape[1], o = groups > 0 ? w->shape[0] / groups : w->shape[0];
	double b = (double)((o + f.mr - 1) / f.mr * f.mr) * (double)(w->shape[1] * w->shape[2] * w->shape[3]) *
		   (double)f.es;
	return b > (double)(SIZE_MAX / 2) ? SIZE_MAX / 2 : (size_t)b;
}

/* NCHW convolution by im2col + gemm in blocks of output positions sized
 * by the shapes and the caches (conv_pos). */
int tir_k_conv2d(const struct tir_tensor *x, const struct tir_tensor *w,
		 const struct tir_tensor *bias, const int64_t stride[2],
		 const int64_t padding[2], struct tir_tensor *out, struct tir_err *err)
{
	struct conv geo, *g = &geo;
	struct tir_tensor wc = { 0 };
	int64_t bstride = 0;
	int rc = check_io("conv2d", x, out, err);
	if (rc)
		return rc;
	if (w->dtype != out->dtype || w->rank != 4)
		return tir_errf(err, TIR_ETYPE, NULL, "conv2d: weight must be %s[O, C, kh, kw]",
				tir_dtype_name(out->dtype));
	if ((rc = conv_geometry("conv2d", x, w->shape[0], w->shape[2], w->shape[3], stride,
				padding, out, g, err)))
		return rc;
	if (w->shape[1] != g->c)
		return tir_errf(err, TIR_ETYPE, NULL,
				"conv2d: input has %lld channels, weight expects %lld",
				(long long)g->c, (long long)w->shape[1]);
	if (bias && (rc = vec_stride("conv2d", "bias", bias, g->o, out->dtype, &bstride, err)))
		return rc;
	if (tir_tensor_numel(out) == 0)
		return 0;

	bool f32 = out->dtype == TIR_DTYPE_F32;
	int64_t es = (int64_t)tir_dtype_size(out->dtype);
	char *odata = tir_tensor_data(out);
	const char *bdata = bias ? tir_tensor_data(bias) : NULL;
	int64_t plane = g->oh * g->ow;
	int64_t kdim = g->c * g->kh * g->kw;
	if (tir_tensor_is_contiguous(w))
		tir_tensor_ref(&wc, w);
	else if ((rc = tir_tensor_convert(w, w->dtype, &wc, err)))
		return rc;
	const char *wdata = tir_tensor_data(&wc);
	const char *xdata = tir_tensor_data(x);

	if (kdim == 0) {        /* no taps: the bias alone */
		for (int64_t img = 0; img < g->n; img++)
			for (int64_t f = 0; f < g->o; f++) {
				char *dst = odata + (img * g->o + f) * plane * es;
				const char *bv = bdata ? bdata + f * bstride * es : NULL;
				for (int64_t q = 0; q < plane; q++) {
					if (f32)
						((float *)dst)[q] = bv ? *(const float *)bv : 0.0f;
					else
						((double *)dst)[q] = bv ? *(const double *)bv : 0.0;
				}
			}
		goto done;
	}

	struct conv_job *j = calloc(1, sizeof *j);
	if (!j) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "conv2d: out of memory");
		goto done;
	}
	/* filter taps per k-block: the packed column block im2col writes and
	 * the gemm reads right after holds at most half an L2, so it is still
	 * there beside the weights' panels */
	struct tir_gemm_form form;
	tir_gemm_form(out->dtype, &form);
	int64_t pos = conv_pos(g->n, plane, form.nr);
	*j = (struct conv_job){
		.g = g, .f32 = f32, .es = es, .x = xdata, .bias = bdata,
		.bstride = bstride, .out = odata, .plane = plane, .kdim = kdim, .pos = pos,
		.pblocks = (plane + pos - 1) / pos,
	};
	struct tir_gemm_form *f = &j->form;
	*f = form;
	int use = tir_gemm_blas(out->dtype, err);
	if (use > 0) {
		/* on OpenBLAS: a column matrix [kdim, pos] on each thread; past
		 * what the memory budget leaves, on tir's gemm (in k-blocks) */
		j->w = wdata;
		while (((int64_t)1 << j->blas_nrs) < pos)
			j->blas_nrs++;
		j->col_bytes = conv_col_bytes(j);
		int64_t tasks = g->n * j->pblocks, nthreads = tir_pool_threads();
		if (j->col_bytes * (size_t)(tasks < nthreads ? tasks : nthreads) > tir_scratch_room()) {
			use = 0;
			j->w = NULL;
			j->blas_nrs = 0;
		}
	}
	if (use) {
		/* on OpenBLAS: each task a call on one of its threads, with the
		 * weights as they lie (tir_gemm_blas loaded it) */
		rc = use < 0 ? use : 0;
		if (!rc) {
			tir_blas_lock(1);
			tir_pool_run(g->n * j->pblocks, conv_task, j);
			tir_blas_unlock();
		}
		goto freed;
	}
	/* too few blocks of positions for the threads: columns shared by all tasks,
	 * when they are not too big to be packed whole */
	int64_t cnpad = (plane + f->nr - 1) / f->nr * f->nr;
	int64_t cbytes;
	bool huge = __builtin_mul_overflow(g->n, kdim, &cbytes) | __builtin_mul_overflow(cbytes, cnpad * es, &cbytes);
	int way = conv_way();
	bool shared = !huge && (way ? way >= 2 : g->n * j->pblocks < TIR_TASKS_WANT && cbytes <= conv_cols_most());
	/* the weights read where they lie, where the gemm has kernels for it
	 * (see conv_shared), by tasks of their own columns too: as fast on
	 * ResNet-18's 56x56 layers (1.52 ms at 1 thread either way), and
	 * then no run of a program packs its weights again (TIR_CONV=own and
	 * shared pack them, for the tests) */
	bool direct = tir_gemm_has_direct(f) && (way == 0 || way == 3);
	if (!shared) {
		int64_t npad = (pos + f->nr - 1) / f->nr * f->nr;
		int64_t kc = tir_machine_caches()->l2 / 2 / (npad * es) / 8 * 8;
		f->kc = kc < 8 ? 8 : kc < f->kc ? kc : f->kc;
	}
	int64_t wbytes = direct ? 64 : tir_gemm_a_bytes(f, g->o, kdim);
	bool wkept = false, ckept = false;
	void *pw = tir_scratch_get(&conv_keep[0], (size_t)wbytes, &wkept);
	void *cols = pw && shared ? tir_scratch_get(&conv_keep[1], (size_t)cbytes, &ckept) : NULL;
	if (pw && shared && !cols) {
		/* the shared columns past the memory budget: columns per task */
		shared = false;
		f->kc = form.kc;
		int64_t npad = (pos + f->nr - 1) / f->nr * f->nr;
		int64_t kc = tir_machine_caches()->l2 / 2 / (npad * es) / 8 * 8;
		f->kc = kc < 8 ? 8 : kc < f->kc ? kc : f->kc;
	}
	/* per task, a buffer on each thread: k-blocks as deep as fit what the
	 * budget leaves (each element is one chain in any k-blocks: the same
	 * bits) */
	int nthreads = tir_pool_threads();
	int64_t tasks = g->n * j->pblocks, users = tasks < nthreads ? tasks : nthreads;
	j->col_bytes = conv_col_bytes(j);
	while (pw && !shared && f->kc > 8 && j->col_bytes * (size_t)users > tir_scratch_room()) {
		f->kc = f->kc / 2 / 8 * 8 < 8 ? 8 : f->kc / 2 / 8 * 8;
		j->col_bytes = conv_col_bytes(j);
	}
	if (!pw || (!shared && j->col_bytes * (size_t)users > tir_scratch_room())) {
		size_t need = !pw ? (size_t)wbytes : j->col_bytes * (size_t)users;
		tir_scratch_put(&conv_keep[0], pw, (size_t)wbytes, wkept, CONV_KEEP);
		free(j);
		rc = tir_scratch_err(err, "conv2d", !pw ? "its packed weights" : "its column buffers", need);
		goto done;
	}
	if (!direct)
		tir_gemm_pack_a(f, pw, wdata, kdim, 1, g->o, kdim);
	j->pw = pw;
	j->wd = direct && !shared ? wdata : NULL;
	if (!shared)
		tir_pool_run(g->n * j->pblocks, conv_task, j);
	else if (conv_shared(g, f, pw, direct ? wdata : NULL, xdata, bdata, bstride, odata, cols, cnpad))
		atomic_store(&j->failed, true);
	tir_scratch_put(&conv_keep[0], pw, (size_t)wbytes, wkept, CONV_KEEP);
	if (cols)
		tir_scratch_put(&conv_keep[1], cols, (size_t)cbytes, ckept, CONV_KEEP);
freed:
	if (atomic_load(&j->failed))
		rc = tir_scratch_err(err, "conv2d", "its column buffers", j->col_bytes);
	for (int i = 0; i < TIR_POOL_MAX; i++)
		if (j->cols[i])
			tir_scratch_put(NULL, j->cols[i], j->col_bytes, false, 0);
	free(j);
done:
	tir_tensor_release(&wc);
	return rc;
}

/* ---- attention ---- */

/* the test hook's batch entries a group (0: from the cache) */
static _Atomic int64_t attn_group_test;

void tir_attention_test_group(int64_t n)
{
	atomic_store(&attn_group_test, n > 0 ? n : 0);
}

/* One attention cut into tasks: task t = (batch entry, chunk of query
 * rows), each through its worker's scores buffer.  The batch entries go
 * in groups whose k^T and v are packed first, once (pack_task: each
 * entry's, in gemm's form), for every chunk of the entry to read. */
struct attn_job {
	const struct tir_tensor *q, *k, *v;
	struct tir_tensor *out;
	bool causal;
	double scale;
	int nb;
	int64_t lq, lk, d, dv, chunk, chunks;
	int64_t e0;                          /* the group's first batch entry */
	const int64_t *qs, *ks, *vs;
	struct tir_gemm_form f;
	int64_t kbytes, vbytes;              /* an entry's packed k^T, v */
	char *packed;                        /* the group's, entry by entry */
	atomic_bool failed;
	void *buf[TIR_POOL_MAX];             /* per worker: scores, then packed q, s */
	size_t buf_bytes;                    /* each (attn_buf_bytes), charged while held */
	size_t packed_bytes;
	bool blas;                           /* the products on OpenBLAS (attn_blas_task) */
};

/* Batch entry e's element offsets into q, k and v (broadcast axes: 0). */
static void attn_offsets(const struct attn_job *j, int64_t e, int64_t *qo, int64_t *ko,
			 int64_t *vo)
{
	*qo = *ko = *vo = 0;
	for (int i = j->nb - 1; i >= 0; i--) {
		int64_t ix = e % j->out->shape[i];
		e /= j->out->shape[i];
		*qo += ix * j->qs[i];
		*ko += ix * j->ks[i];
		*vo += ix * j->vs[i];
	}
}

/* task t: k^T (t even) or v of the group's entry t / 2 */
static void attn_pack_task(void *arg, int64_t t)
{
	struct attn_job *j = arg;
	int64_t qo, ko, vo, r = j->k->rank, es = j->f.es;
	attn_offsets(j, j->e0 + t / 2, &qo, &ko, &vo);
	char *dst = j->packed + t / 2 * (j->kbytes + j->vbytes);
	if (t % 2 == 0) {       /* k^T [d, lk]: element (p, i) is k[i, p] */
		const char *k = (const char *)tir_tensor_data(j->k) + ko * es;
		tir_gemm_pack_b(&j->f, dst, k, j->k->strides[r - 1], j->k->strides[r - 2], j->d,
				j->lk);
	} else {
		const char *v = (const char *)tir_tensor_data(j->v) + vo * es;
		tir_gemm_pack_b(&j->f, dst + j->kbytes, v, j->v->strides[r - 2],
				j->v->strides[r - 1], j->lk, j->dv);
	}
}

/* The product c[m, n] (row stride ldc) = a [m, k] packed as pa (packed
 * into by this call) @ pb packed, k-block by k-block. */
static bool attn_product(const struct tir_gemm_form *f, void *pa, const void *a, int64_t rs,
			 int64_t cs, int64_t m, int64_t k, const char *pb, int64_t n, void *c,
			 int64_t ldc)
{
	int64_t npad = (n + f->nr - 1) / f->nr * f->nr;
	tir_gemm_pack_a(f, pa, a, rs, cs, m, k);
	for (int64_t k0 = 0; k0 < k; k0 += f->kc) {
		int64_t kcb = k - k0 < f->kc ? k - k0 : f->kc;
		if (!tir_gemm_panels(f, pa, k0, kcb, m, pb + k0 * npad * f->es, n, c, ldc, k0 > 0))
			return false;
	}
	return true;
}

static void attn_task(void *arg, int64_t t)
{
	struct attn_job *j = arg;
	const struct tir_gemm_form *f = &j->f;
	int64_t e = j->e0 + t / j->chunks, r0 = t % j->chunks * j->chunk;
	int64_t rows = j->lq - r0 < j->chunk ? j->lq - r0 : j->chunk, es = f->es;
	int64_t r = j->q->rank;

	if (atomic_load(&j->failed))
		return;
	/* the scores [chunk, lk], then q's rows packed, then the scores packed */
	int64_t sbytes = j->chunk * j->lk * es;
	int64_t qbytes = tir_gemm_a_bytes(f, j->chunk, j->d);
	void **slot = &j->buf[tir_pool_worker()];
	bool kept;
	if (!*slot && !(*slot = tir_scratch_get(NULL, j->buf_bytes, &kept))) {
		atomic_store(&j->failed, true);
		return;
	}
	char *sc = *slot, *pq = sc + (sbytes + 63) / 64 * 64, *ps = pq + (qbytes + 63) / 64 * 64;
	int64_t qo, ko, vo;
	attn_offsets(j, e, &qo, &ko, &vo);
	const char *q = (const char *)tir_tensor_data(j->q) +
			(qo + r0 * j->q->strides[r - 2]) * es;
	const char *pk = j->packed + (t / j->chunks) * (j->kbytes + j->vbytes);
	char *o = (char *)tir_tensor_data(j->out) + ((e * j->lq + r0) * j->dv) * es;
	if (!attn_product(f, pq, q, j->q->strides[r - 2], j->q->strides[r - 1], rows, j->d, pk,
			  j->lk, sc, j->lk))
		return;
	tir_rows_scores(j->out->dtype, sc, rows, j->lk, r0, j->causal, j->scale);
	attn_product(f, ps, sc, j->lk, 1, rows, j->lk, pk + j->kbytes, j->dv, o, j->dv);
}

/* Task t of attention on OpenBLAS: the chunk's scores [rows, lk] = q's
 * rows @ k^T, their softmax, and out's rows = scores @ v, each product one
 * call on one of OpenBLAS's threads (q, k and v readable as they lie:
 * tir_k_attention copied them otherwise). */
static void attn_blas_task(void *arg, int64_t t)
{
	struct attn_job *j = arg;
	int64_t e = t / j->chunks, r0 = t % j->chunks * j->chunk;
	int64_t rows = j->lq - r0 < j->chunk ? j->lq - r0 : j->chunk;
	int64_t r = j->q->rank, es = (int64_t)tir_dtype_size(j->out->dtype);
	enum tir_dtype dt = j->out->dtype;
	void **slot = &j->buf[tir_pool_worker()];
	bool kept;
	if (atomic_load(&j->failed) || (!*slot && !(*slot = tir_scratch_get(NULL, j->buf_bytes, &kept)))) {
		atomic_store(&j->failed, true);
		return;
	}
	int64_t qo, ko, vo, lda, ldb, ldv;
	bool ta, tb, tv;
	attn_offsets(j, e, &qo, &ko, &vo);
	const int64_t *qs = j->q->strides, *ks = j->k->strides, *vs = j->v->strides;
	const char *q = (const char *)tir_tensor_data(j->q) + (qo + r0 * qs[r - 2]) * es;
	const char *k = (const char *)tir_tensor_data(j->k) + ko * es;
	const char *v = (const char *)tir_tensor_data(j->v) + vo * es;
	char *o = (char *)tir_tensor_data(j->out) + ((e * j->lq + r0) * j->dv) * es;
	tir_blas_layout(rows, j->d, qs[r - 2], qs[r - 1], &ta, &lda);
	tir_blas_layout(j->d, j->lk, ks[r - 1], ks[r - 2], &tb, &ldb);
	tir_blas_layout(j->lk, j->dv, vs[r - 2], vs[r - 1], &tv, &ldv);
	tir_blas_call(dt, rows, j->lk, j->d, q, ta, lda, k, tb, ldb, false, *slot, j->lk);
	tir_rows_scores(dt, *slot, rows, j->lk, r0, j->causal, j->scale);
	tir_blas_call(dt, rows, j->dv, j->lk, *slot, false, j->lk, v, tv, ldv, false, o, j->dv);
}

/* Whether every matrix of x (its last two axes, r x c) is one cblas reads
 * as it lies (transposed when t). */
static bool blas_readable(const struct tir_tensor *x, bool t)
{
	int r = x->rank;
	bool tr;
	int64_t ld;
	return t ? tir_blas_layout(x->shape[r - 1], x->shape[r - 2], x->strides[r - 1], x->strides[r - 2], &tr, &ld)
		 : tir_blas_layout(x->shape[r - 2], x->shape[r - 1], x->strides[r - 2], x->strides[r - 1], &tr, &ld);
}

static int attention(const struct tir_tensor *q, const struct tir_tensor *k, const struct tir_tensor *v,
		     bool causal, bool blas, struct tir_tensor *out, struct tir_err *err);

/* A task's buffer: the scores of a chunk of rows [chunk, lk], and on
 * tir's gemm q's rows packed and the scores packed after them. */
static size_t attn_buf_bytes(const struct tir_gemm_form *f, bool blas, int64_t chunk, int64_t lk, int64_t d)
{
	int64_t sbytes = chunk * lk * f->es;
	if (blas)
		return (size_t)sbytes;
	return (size_t)(sbytes + tir_gemm_a_bytes(f, chunk, d) + tir_gemm_a_bytes(f, chunk, lk) + 255) / 64 * 64;
}

size_t tir_attention_least(const struct tir_type *q, const struct tir_type *k, const struct tir_type *v)
{
	enum tir_dtype dt = (enum tir_dtype)q->dtype;
	int r = q->rank;
	if (!tir_dtype_is_wide_float(dt) || r < 2 || k->rank != r || v->rank != r || tir_gemm_kind() != TIR_GEMM_TIR)
		return 0;
	/* one entry's k^T and v packed, and a buffer of one row on each
	 * thread that runs its tasks (one a query row at the least) */
	struct tir_gemm_form f;
	tir_gemm_form(dt, &f);
	int64_t d = q->shape[r - 1], lk = k->shape[r - 2], dv = v->shape[r - 1], rows = 1;
	for (int i = 0; i < r - 1; i++)
		rows *= q->shape[i] > k->shape[i] ? q->shape[i] : k->shape[i];
	if (!lk || !d || !rows)
		return 0;
	int64_t users = rows < tir_pool_threads() ? rows : tir_pool_threads();
	double b = (double)tir_gemm_b_bytes(&f, d, lk) + (double)tir_gemm_b_bytes(&f, lk, dv) +
		   (double)attn_buf_bytes(&f, false, 1, lk, d) * (double)users;
	return b > (double)(SIZE_MAX / 2) ? SIZE_MAX / 2 : (size_t)b;
}

/* softmax(q @ k^T / sqrt(d)) @ v per batch, query rows in bounded chunks;
 * on OpenBLAS (tir_gemm_blas) with q, k and v copied contiguous first when
 * cblas cannot read them as they lie. */
int tir_k_attention(const struct tir_tensor *q, const struct tir_tensor *k,
		    const struct tir_tensor *v, bool causal, struct tir_tensor *out,
		    struct tir_err *err)
{
	int use = q->rank >= 2 && q->dtype == out->dtype && k->dtype == out->dtype && v->dtype == out->dtype
			  ? tir_gemm_blas(out->dtype, err) : 0;
	if (use <= 0)
		return use < 0 ? use : attention(q, k, v, causal, false, out, err);
	struct tir_tensor c[3] = { 0 };
	const struct tir_tensor *in[3] = { q, k, v };
	int rc = 0;
	for (int i = 0; i < 3 && !rc; i++)
		if (in[i]->rank == q->rank && !blas_readable(in[i], i == 1) &&
		    !(rc = tir_tensor_convert(in[i], in[i]->dtype, &c[i], err)))
			in[i] = &c[i];
	if (!rc)
		rc = attention(in[0], in[1], in[2], causal, true, out, err);
	for (int i = 0; i < 3; i++)
		tir_tensor_release(&c[i]);
	return rc;
}

static int attention(const struct tir_tensor *q, const struct tir_tensor *k, const struct tir_tensor *v,
		     bool causal, bool blas, struct tir_tensor *out, struct tir_err *err)
{
	int rc = check_io("attention", q, out, err);
	if (rc)
		return rc;
	int r = out->rank, nb = r - 2;
	if (r < 2 || q->rank != r || k->rank != r || v->rank != r)
		return tir_errf(err, TIR_ETYPE, NULL,
				"attention: q, k, v and out must have the same rank >= 2");
	if (k->dtype != out->dtype || v->dtype != out->dtype)
		return tir_errf(err, TIR_ETYPE, NULL, "attention: q, k and v must all be %s",
				tir_dtype_name(out->dtype));
	int64_t lq = q->shape[r - 2], d = q->shape[r - 1];
	int64_t lk = k->shape[r - 2], dv = v->shape[r - 1];
	if (k->shape[r - 1] != d || v->shape[r - 2] != lk || out->shape[r - 2] != lq ||
	    out->shape[r - 1] != dv)
		return tir_errf(err, TIR_ETYPE, NULL,
				"attention: need q [..., Lq, d], k [..., Lk, d], v [..., Lk, dv] "
				"and out [..., Lq, dv]");
	int64_t qs[TIR_MAX_RANK], ks[TIR_MAX_RANK], vs[TIR_MAX_RANK];
	for (int i = 0; i < nb; i++) {
		int64_t dim = out->shape[i];
		if ((q->shape[i] != dim && q->shape[i] != 1) ||
		    (k->shape[i] != dim && k->shape[i] != 1) ||
		    (v->shape[i] != dim && v->shape[i] != 1))
			return tir_errf(err, TIR_ETYPE, NULL,
					"attention: batch axis %d does not broadcast to %lld", i,
					(long long)dim);
		qs[i] = q->shape[i] == 1 ? 0 : q->strides[i];
		ks[i] = k->shape[i] == 1 ? 0 : k->strides[i];
		vs[i] = v->shape[i] == 1 ? 0 : v->strides[i];
	}
	int64_t total = tir_tensor_numel(out);
	if (total == 0)
		return 0;
	int64_t es = (int64_t)tir_dtype_size(out->dtype);
	if (lk == 0) {
		memset(tir_tensor_data(out), 0, (size_t)(total * es));
		return 0;
	}

	/* the scores of at most `chunk` query rows per task: ATTN_ROWS, and
	 * scores of at most an L2 (made by one product, then read by the
	 * softmax and by the next product: still in L2); then halved toward
	 * TIR_TASKS_WANT tasks, down to two panels of the gemm's mr rows (k
	 * and v are packed once for all of a head's tasks) */
	struct tir_gemm_form form;
	tir_gemm_form(out->dtype, &form);
	const struct tir_caches *mc = tir_machine_caches();
	int64_t batches = total / (lq * dv);
	int64_t chunk = mc->l2 / es / lk;
	if (chunk > ATTN_ROWS)
		chunk = ATTN_ROWS;
	if (chunk > lq)
		chunk = lq;
	if (chunk < 1)
		chunk = 1;
	while (batches * ((lq + chunk - 1) / chunk) < TIR_TASKS_WANT && (chunk + 1) / 2 >= 2 * form.mr)
		chunk = (chunk + 1) / 2;
	struct attn_job *j = calloc(1, sizeof *j);
	if (!j)
		return tir_errf(err, TIR_ENOMEM, NULL, "attention: out of memory");
	*j = (struct attn_job){
		.q = q, .k = k, .v = v, .out = out, .causal = causal,
		.scale = 1.0 / sqrt((double)d), .nb = nb, .lq = lq, .lk = lk, .d = d, .dv = dv,
		.chunk = chunk, .chunks = (lq + chunk - 1) / chunk, .qs = qs, .ks = ks, .vs = vs,
	};
	j->f = form;
	/* a buffer on each thread that runs tasks: chunks of fewer rows
	 * when they do not fit what the memory budget leaves (each row's
	 * scores and products are its own: the same bits) */
	int64_t users = batches * j->chunks < tir_pool_threads() ? batches * j->chunks : tir_pool_threads();
	/* (beside one entry's k^T and v packed, on tir's gemm) */
	size_t room = tir_scratch_room(), each = 0;
	if (!blas) {
		j->kbytes = (tir_gemm_b_bytes(&j->f, d, lk) + 63) / 64 * 64;
		j->vbytes = (tir_gemm_b_bytes(&j->f, lk, dv) + 63) / 64 * 64;
		each = (size_t)(j->kbytes + j->vbytes);
	}
	j->buf_bytes = attn_buf_bytes(&j->f, blas, j->chunk, lk, d);
	while (j->chunk > 1 && j->buf_bytes * (size_t)users + each > room) {
		j->chunk = (j->chunk + 1) / 2;
		j->chunks = (lq + j->chunk - 1) / j->chunk;
		j->buf_bytes = attn_buf_bytes(&j->f, blas, j->chunk, lk, d);
	}
	if (j->buf_bytes * (size_t)users + each > room) {
		size_t need = j->buf_bytes * (size_t)users + each;
		free(j);
		return tir_scratch_err(err, "attention", blas ? "its scores" : "its scores and packed k and v", need);
	}
	if (blas) {
		j->blas = true;
		tir_blas_lock(1);
		tir_pool_run(batches * j->chunks, attn_blas_task, j);
		tir_blas_unlock();
		goto done;
	}
	/* entries a group: their packed k^T and v within half the last-level
	 * cache (8 MiB when it is not known), at least one */
	int64_t llc = mc->l3 > 0 ? mc->l3 : (int64_t)8 << 20;
	int64_t group = atomic_load(&attn_group_test);
	if (group <= 0)
		group = llc / 2 / (j->kbytes + j->vbytes);
	group = group < 1 ? 1 : group > batches ? batches : group;
	/* fewer entries a group where the budget leaves less */
	size_t most = room > j->buf_bytes * (size_t)users ? (room - j->buf_bytes * (size_t)users) / each : 0;
	group = most < 1 ? 1 : (size_t)group > most ? (int64_t)most : group;
	bool kept;
	j->packed_bytes = (size_t)group * each;
	j->packed = tir_scratch_get(NULL, j->packed_bytes, &kept);
	if (!j->packed) {
		free(j);
		return tir_scratch_err(err, "attention", "its packed k and v", (size_t)group * each);
	}
	for (j->e0 = 0; j->e0 < batches && !atomic_load(&j->failed); j->e0 += group) {
		int64_t n = batches - j->e0 < group ? batches - j->e0 : group;
		tir_pool_run_packing(2 * n, attn_pack_task, j);
		tir_pool_run(n * j->chunks, attn_task, j);
	}
done:
	rc = atomic_load(&j->failed) ? tir_scratch_err(err, "attention", "its scores", j->buf_bytes) : 0;
	for (int i = 0; i < TIR_POOL_MAX; i++)
		if (j->buf[i])
			tir_scratch_put(NULL, j->buf[i], j->buf_bytes, false, 0);
	if (j->packed)
		tir_scratch_put(NULL, j->packed, j->packed_bytes, false, 0);
	free(j);
	return rc;
}
