/*
 * test_elementwise.c — tensors (alloc, views, convert, reshape), the
 * elementwise kernels (unary, binary, where, clip), creation kernels and the
 * Philox RNG.  Oracles: libm through scalar reference loops here, and
 * constants from NumPy 1.24 (/usr/bin/python3) where NumPy's rule is the spec.
 */
#include "exec/exec.h"
#include "exec/iter.h"

#include "check.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct tir_err err;

/* A contiguous tensor of shape[rank] holding data (numel elements of dt). */
static struct tir_tensor mk(enum tir_dtype dt, int rank, const int64_t *shape, const void *data)
{
	struct tir_tensor t;
	int rc = tir_tensor_alloc(&t, dt, rank, shape, true, &err);
	if (rc) {
		fprintf(stderr, "alloc failed: %s\n", err.msg);
		exit(1);
	}
	if (data)
		memcpy(tir_tensor_data(&t), data, (size_t)tir_tensor_numel(&t) * tir_dtype_size(dt));
	return t;
}

static struct tir_tensor mk1(enum tir_dtype dt, int64_t n, const void *data)
{
	return mk(dt, 1, &n, data);
}

static struct tir_tensor like(enum tir_dtype dt, const struct tir_tensor *t)
{
	return mk(dt, t->rank, t->shape, NULL);
}

static bool same_bits_f64(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- tensors ---- */

static void test_alloc(void)
{
	size_t before = tir_mem_current();
	int64_t shape[3] = {2, 3, 5};
	struct tir_tensor t;
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 3, shape, true, &err) == 0);
	CHECK(t.buf && t.buf->refs == 1);
	CHECK(((uintptr_t)t.buf->data & 63) == 0);
	CHECK(t.buf->bytes >= 30 * 4 && t.buf->bytes % 64 == 0);
	CHECK(tir_tensor_numel(&t) == 30);
	CHECK(t.strides[0] == 15 && t.strides[1] == 5 && t.strides[2] == 1);
	CHECK(tir_tensor_is_contiguous(&t));
	CHECK(tir_mem_current() == before + t.buf->bytes);
	CHECK(tir_mem_peak() >= tir_mem_current());
	float *d = tir_tensor_data(&t);
	bool zero = true;
	for (int i = 0; i < 30; i++)
		zero = zero && d[i] == 0;
	CHECK(zero);

	struct tir_tensor r;
	tir_tensor_ref(&r, &t);
	CHECK(t.buf->refs == 2 && r.buf == t.buf);
	tir_tensor_release(&r);
	CHECK(r.buf == NULL && t.buf->refs == 1);
	tir_tensor_release(&t);
	CHECK(t.buf == NULL);
	CHECK(tir_mem_current() == before);

	/* a scalar, and an empty tensor: both allocated, buf non-NULL */
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_I64, 0, NULL, true, &err) == 0);
	CHECK(tir_tensor_numel(&t) == 1 && t.buf);
	tir_tensor_release(&t);
	int64_t zshape[2] = {0, 7};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 2, zshape, false, &err) == 0);
	CHECK(tir_tensor_numel(&t) == 0 && t.buf && tir_tensor_is_contiguous(&t));
	tir_tensor_release(&t);
	/* zero with a huge other axis is still empty */
	int64_t zbig[2] = {0, INT64_C(1) << 40};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 2, zbig, false, &err) == 0);
	tir_tensor_release(&t);

	/* too large, overflowing, negative */
	int64_t big[2] = {INT64_C(1) << 32, 2};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 2, big, false, &err) == -TIR_ENOMEM);
	CHECK(t.buf == NULL);
	int64_t ovf[3] = {INT64_C(1) << 31, INT64_C(1) << 31, INT64_C(1) << 31};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 3, ovf, false, &err) == -TIR_ENOMEM);
	int64_t neg[1] = {-1};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, neg, false, &err) == -TIR_ETYPE);

	/* peak follows the high-water mark and resets to current */
	tir_mem_reset_peak();
	size_t base = tir_mem_current();
	int64_t n = 1000;
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 1, &n, false, &err) == 0);
	size_t held = t.buf->bytes;
	tir_tensor_release(&t);
	CHECK(tir_mem_peak() == base + held);
	tir_mem_reset_peak();
	CHECK(tir_mem_peak() == base);

	/* small buffers (up to 256 bytes) share their header's block, larger
	 * ones do not: each aligned, writable to its last byte, counted and
	 * given back the same; a small one outliving a reference to it */
	for (int64_t k = 1; k <= 80; k += 7) {
		struct tir_tensor s, s2;
		CHECK(tir_tensor_alloc(&s, TIR_DTYPE_F32, 1, &k, true, &err) == 0);
		CHECK(((uintptr_t)s.buf->data & 63) == 0);
		CHECK(tir_mem_current() == base + s.buf->bytes);
		float *v = tir_tensor_data(&s);
		for (int64_t i = 0; i < k; i++)
			v[i] = (float)i;
		memset((char *)s.buf->data + k * 4, 0x5a, s.buf->bytes - (size_t)k * 4);
		tir_tensor_ref(&s2, &s);
		tir_tensor_release(&s);
		CHECK(s2.buf->refs == 1 && ((float *)tir_tensor_data(&s2))[k - 1] == (float)(k - 1));
		tir_tensor_release(&s2);
		CHECK(tir_mem_current() == base);
	}
}

/* The buffers kept for reuse hold no more than the budget leaves: under
 * --max-memory 64 MiB, a released 40 MiB buffer is kept while nothing is
 * held, lets go when a 30 MiB value needs the room (not refused because of
 * it), is never kept past the budget, and is reused by a value of its size
 * at the budget's edge. */
static void test_reuse_cache_budget(void)
{
	const size_t MiB = (size_t)1 << 20;
	tir_mem_trim();
	CHECK(tir_mem_cached() == 0);
	size_t base = tir_mem_current();
	tir_mem_set_limit(base + 64 * MiB);
	int64_t n40 = 40 * (int64_t)MiB / 4, n30 = 30 * (int64_t)MiB / 4, n24 = 24 * (int64_t)MiB / 4;
	struct tir_tensor a, b, c;
	CHECK(tir_tensor_alloc(&a, TIR_DTYPE_F32, 1, &n40, false, &err) == 0);
	tir_tensor_release(&a);
	CHECK(tir_mem_cached() == 40 * MiB);
	CHECK(tir_tensor_alloc(&b, TIR_DTYPE_F32, 1, &n30, false, &err) == 0);
	CHECK(tir_mem_current() + tir_mem_cached() <= base + 64 * MiB);
	CHECK(tir_mem_cached() == 0);
	/* 30 held, a released 24 kept beside it (54); a new 20 MiB value lets
	 * it go rather than being refused (30 + 24 + 20 > 64) */
	int64_t n20 = 20 * (int64_t)MiB / 4;
	struct tir_tensor d;
	CHECK(tir_tensor_alloc(&c, TIR_DTYPE_F32, 1, &n24, false, &err) == 0);
	tir_tensor_release(&c);
	CHECK(tir_mem_cached() == 24 * MiB);
	CHECK(tir_tensor_alloc(&d, TIR_DTYPE_F32, 1, &n20, false, &err) == 0);
	CHECK(tir_mem_cached() == 0);
	CHECK(tir_mem_current() + tir_mem_cached() <= base + 64 * MiB);
	tir_tensor_release(&d);
	void *kept = b.buf->data;
	tir_tensor_release(&b);
	CHECK(tir_mem_cached() == 50 * MiB);
	/* a value of a kept buffer's size takes that buffer back, and a value
	 * that needs the room lets the other go: 30 reused + 20 cached + 24 > 64 */
	CHECK(tir_tensor_alloc(&b, TIR_DTYPE_F32, 1, &n30, false, &err) == 0);
	CHECK(b.buf->data == kept);
	CHECK(tir_mem_cached() == 20 * MiB);
	CHECK(tir_tensor_alloc(&c, TIR_DTYPE_F32, 1, &n24, false, &err) == 0);
	CHECK(tir_mem_cached() == 0);
	CHECK(tir_mem_current() + tir_mem_cached() <= base + 64 * MiB);
	tir_tensor_release(&b);
	tir_tensor_release(&c);
	CHECK(tir_mem_current() == base);
	CHECK(tir_mem_current() + tir_mem_cached() <= base + 64 * MiB);
	tir_mem_set_limit(0);
	tir_mem_trim();
}

static void test_views(void)
{
	int64_t shape[2] = {3, 4};
	float v[12];
	for (int i = 0; i < 12; i++)
		v[i] = (float)i;
	struct tir_tensor t = mk(TIR_DTYPE_F32, 2, shape, v);

	/* transpose: [4, 3], element (i, j) = t(j, i) */
	struct tir_tensor tt;
	int perm[2] = {1, 0};
	tir_view_transpose(&t, perm, &tt);
	CHECK(tt.shape[0] == 4 && tt.shape[1] == 3 && tt.buf == t.buf && t.buf->refs == 2);
	CHECK(!tir_tensor_is_contiguous(&tt));
	CHECK(tir_tensor_get_f64(&tt, 1) == 4);    /* (0, 1) -> t(1, 0) */
	CHECK(tir_tensor_get_f64(&tt, 5) == 9);    /* (1, 2) -> t(2, 1) */

	/* slice rows 2, 0 (step -2) of t */
	struct tir_tensor s;
	tir_view_slice(&t, 0, 2, -2, 2, &s);
	CHECK(s.shape[0] == 2 && s.shape[1] == 4);
	CHECK(tir_tensor_get_f64(&s, 0) == 8 && tir_tensor_get_f64(&s, 4) == 0);
	CHECK(tir_tensor_get_i64(&s, 7) == 3);
	struct tir_tensor s2;
	tir_view_slice(&t, 1, 1, 2, 2, &s2);       /* columns 1, 3 */
	CHECK(tir_tensor_get_f64(&s2, 0) == 1 && tir_tensor_get_f64(&s2, 1) == 3 &&
	      tir_tensor_get_f64(&s2, 5) == 11);

	/* broadcast [3, 4] <- [4] row and [3, 1] column */
	struct tir_tensor row = mk1(TIR_DTYPE_F32, 4, v), b;
	int64_t bshape[2] = {3, 4};
	tir_view_broadcast(&row, 2, bshape, &b);
	CHECK(b.strides[0] == 0 && b.strides[1] == 1);
	CHECK(tir_tensor_get_f64(&b, 9) == 1);
	tir_tensor_release(&b);
	int64_t cshape[2] = {3, 1};
	struct tir_tensor col = mk(TIR_DTYPE_F32, 2, cshape, v);
	tir_view_broadcast(&col, 2, bshape, &b);
	CHECK(b.strides[1] == 0 && tir_tensor_get_f64(&b, 7) == 1);
	tir_tensor_release(&b);

	/* reshape: contiguous -> view; transposed -> copy in logical order */
	struct tir_tensor r;
	int64_t rs[3] = {2, 2, 3};
	CHECK(tir_tensor_reshape(&t, 3, rs, &r, &err) == 0);
	CHECK(r.buf == t.buf && tir_tensor_get_f64(&r, 7) == 7);
	tir_tensor_release(&r);
	int64_t flat = 12;
	CHECK(tir_tensor_reshape(&tt, 1, &flat, &r, &err) == 0);
	CHECK(r.buf != t.buf && tir_tensor_is_contiguous(&r));
	float want[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
	CHECK(memcmp(tir_tensor_data(&r), want, sizeof want) == 0);
	tir_tensor_release(&r);
	int64_t bad = 13;
	CHECK(tir_tensor_reshape(&t, 1, &bad, &r, &err) == -TIR_ETYPE);

	/* a sliced contiguous block keeps its offset through reshape */
	struct tir_tensor s3;
	tir_view_slice(&t, 0, 1, 1, 2, &s3);      /* rows 1..2: contiguous */
	CHECK(tir_tensor_is_contiguous(&s3));
	int64_t eight = 8;
	CHECK(tir_tensor_reshape(&s3, 1, &eight, &r, &err) == 0);
	CHECK(r.buf == t.buf && tir_tensor_get_f64(&r, 0) == 4 && tir_tensor_get_f64(&r, 7) == 11);
	tir_tensor_release(&r);

	/* a view or reshape may replace its source in place */
	struct tir_tensor u;
	tir_tensor_ref(&u, &t);
	tir_view_transpose(&u, perm, &u);
	CHECK(u.shape[0] == 4 && t.buf->refs == 6);
	CHECK(tir_tensor_reshape(&u, 1, &flat, &u, &err) == 0);   /* copies */
	CHECK(u.buf != t.buf && t.buf->refs == 5 && u.buf->refs == 1);
	CHECK(memcmp(tir_tensor_data(&u), want, sizeof want) == 0);
	CHECK(tir_tensor_reshape(&u, 2, shape, &u, &err) == 0);    /* a view */
	CHECK(u.buf->refs == 1 && u.rank == 2);
	tir_tensor_release(&u);

	tir_tensor_release(&s3);
	tir_tensor_release(&col);
	tir_tensor_release(&row);
	tir_tensor_release(&s2);
	tir_tensor_release(&s);
	tir_tensor_release(&tt);
	CHECK(t.buf->refs == 1);
	tir_tensor_release(&t);
}

static void test_convert(void)
{
	/* expected ints: NumPy 1.24 on x86, np.array(x).astype(np.int32 / np.int64) */
	double x[10] = {NAN, INFINITY, -INFINITY, 3e9, -3e9, 1e20, -2147483648.9,
			2147483647.9, -2.7, 2.7};
	int32_t w32[10] = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
			   INT32_MIN, 2147483647, -2, 2};
	int64_t w64[10] = {INT64_MIN, INT64_MIN, INT64_MIN, 3000000000, -3000000000,
			   INT64_MIN, -2147483648, 2147483647, -2, 2};
	struct tir_tensor t = mk1(TIR_DTYPE_F64, 10, x), c;
	CHECK(tir_tensor_convert(&t, TIR_DTYPE_I32, &c, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&c), w32, sizeof w32) == 0);
	tir_tensor_release(&c);
	CHECK(tir_tensor_convert(&t, TIR_DTYPE_I64, &c, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&c), w64, sizeof w64) == 0);
	tir_tensor_release(&c);
	CHECK(tir_tensor_get_i64(&t, 0) == INT64_MIN && tir_tensor_get_i64(&t, 8) == -2);
	/* f32 source: 2147483647.9f rounds to 2^31, out of i32 range */
	struct tir_tensor f;
	CHECK(tir_tensor_convert(&t, TIR_DTYPE_F32, &f, &err) == 0);
	CHECK(tir_tensor_convert(&f, TIR_DTYPE_I32, &c, &err) == 0);
	CHECK(((int32_t *)tir_tensor_data(&c))[7] == INT32_MIN);
	tir_tensor_release(&c);
	tir_tensor_release(&f);
	tir_tensor_release(&t);

	/* to bool: != 0, NaN and negatives are true, -0 false */
	double y[5] = {-1.5, 0.0, -0.0, NAN, 1e-300};
	uint8_t wb[5] = {1, 0, 0, 1, 1};
	t = mk1(TIR_DTYPE_F64, 5, y);
	CHECK(tir_tensor_convert(&t, TIR_DTYPE_BOOL, &c, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&c), wb, 5) == 0);
	tir_tensor_release(&c);
	tir_tensor_release(&t);
	int32_t yi[3] = {-7, 0, 2};
	t = mk1(TIR_DTYPE_I32, 3, yi);
	CHECK(tir_tensor_convert(&t, TIR_DTYPE_BOOL, &c, &err) == 0);
	CHECK(tir_tensor_get_i64(&c, 0) == 1 && tir_tensor_get_i64(&c, 1) == 0);
	tir_tensor_release(&c);
	tir_tensor_release(&t);

	/* i64 -> i32 wraps (NumPy: [0, -1, -2147483648]) */
	int64_t z[3] = {INT64_C(1) << 40, -1, INT64_C(1) << 31};
	t = mk1(TIR_DTYPE_I64, 3, z);
	CHECK(tir_tensor_convert(&t, TIR_DTYPE_I32, &c, &err) == 0);
	CHECK(tir_tensor_get_i64(&c, 0) == 0 && tir_tensor_get_i64(&c, 1) == -1 &&
	      tir_tensor_get_i64(&c, 2) == INT32_MIN);
	tir_tensor_release(&c);
	tir_tensor_release(&t);

	/* bool -> f32, strided (transposed) source -> contiguous */
	uint8_t bb[6] = {1, 0, 0, 1, 1, 0};
	int64_t shape[2] = {2, 3};
	t = mk(TIR_DTYPE_BOOL, 2, shape, bb);
	struct tir_tensor tt;
	int perm[2] = {1, 0};
	tir_view_transpose(&t, perm, &tt);
	CHECK(tir_tensor_convert(&tt, TIR_DTYPE_F32, &c, &err) == 0);
	float wf[6] = {1, 1, 0, 1, 0, 0};
	CHECK(c.shape[0] == 3 && c.shape[1] == 2 &&
	      memcmp(tir_tensor_data(&c), wf, sizeof wf) == 0);
	tir_tensor_release(&c);
	tir_tensor_release(&tt);
	tir_tensor_release(&t);
}

/* The iterator on awkward layouts: rank 0, size-1 axes, negative strides. */
static void test_iter(void)
{
	struct tir_iter it;
	int64_t shape[4] = {2, 1, 3, 4};
	int64_t s0[4] = {12, 12, 4, 1}, s1[4] = {0, 0, 1, 0};
	const int64_t *st[2] = {s0, s1};
	CHECK(tir_iter_init(&it, 4, shape, 2, st));
	int64_t count = 0, runs = 0;
	bool ok = true;
	do {
		for (int64_t i = 0; i < it.inner; i++) {
			int64_t o0 = it.off[0] + i * it.istride[0];
			int64_t o1 = it.off[1] + i * it.istride[1];
			ok = ok && o0 == count && o1 == (count / 4) % 3;
			count++;
		}
		runs++;
	} while (tir_iter_next(&it));
	CHECK(ok && count == 24 && runs == it.runs);
	const int64_t *st0[1] = {NULL};
	CHECK(tir_iter_init(&it, 0, NULL, 1, st0) && it.inner == 1 && !tir_iter_next(&it));
	int64_t zshape[2] = {3, 0};
	CHECK(!tir_iter_init(&it, 2, zshape, 2, st));
	/* seek agrees with stepping */
	int64_t s2[4] = {1, 1, 2, 6};
	const int64_t *st2[2] = {s0, s2};
	CHECK(tir_iter_init(&it, 4, shape, 2, st2));
	struct tir_iter it2 = it;
	for (int r = 0; r < 5; r++)
		tir_iter_next(&it2);
	tir_iter_seek(&it, 5);
	CHECK(it.off[0] == it2.off[0] && it.off[1] == it2.off[1]);
}

/* ---- unary ---- */

/* Reference for float op at double precision. */
static double ref_unary(enum tir_op op, double x)
{
	switch (op) {
	case TIR_OP_NEG: return -x;
	case TIR_OP_ABS: return fabs(x);
	case TIR_OP_EXP: return exp(x);
	case TIR_OP_LOG: return log(x);
	case TIR_OP_SQRT: return sqrt(x);
	case TIR_OP_RSQRT: return 1 / sqrt(x);
	case TIR_OP_RECIP: return 1 / x;
	case TIR_OP_SIN: return sin(x);
	case TIR_OP_COS: return cos(x);
	case TIR_OP_TANH: return tanh(x);
	case TIR_OP_SIGMOID: return 1 / (1 + exp(-x));
	case TIR_OP_RELU: return x > 0 ? x : 0;
	case TIR_OP_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));   /* = 1 + erf(x/sqrt2) */
	case TIR_OP_SILU: return x / (1 + exp(-x));
	case TIR_OP_ERF: return erf(x);
	case TIR_OP_FLOOR: return floor(x);
	case TIR_OP_CEIL: return ceil(x);
	case TIR_OP_ROUND: return nearbyint(x);
	case TIR_OP_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
	default: return NAN;
	}
}

static void test_unary_float(void)
{
	static const enum tir_op ops[] = {
		TIR_OP_NEG, TIR_OP_ABS, TIR_OP_EXP, TIR_OP_LOG, TIR_OP_SQRT, TIR_OP_RSQRT,
		TIR_OP_RECIP, TIR_OP_SIN, TIR_OP_COS, TIR_OP_TANH, TIR_OP_SIGMOID,
		TIR_OP_RELU, TIR_OP_GELU, TIR_OP_SILU, TIR_OP_ERF, TIR_OP_FLOOR,
		TIR_OP_CEIL, TIR_OP_ROUND, TIR_OP_SIGN,
	};
	enum { N = 203 };
	double xs[N];
	for (int i = 0; i < N; i++)
		xs[i] = -10 + 20.0 * i / (N - 1) + 0.001 * (i % 7);
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		enum tir_op op = ops[k];
		bool pos = op == TIR_OP_LOG || op == TIR_OP_SQRT || op == TIR_OP_RSQRT;
		double in[N];
		float inf32[N];
		for (int i = 0; i < N; i++) {
			in[i] = pos ? fabs(xs[i]) + 0.01 : xs[i];
			inf32[i] = (float)in[i];
		}
		struct tir_tensor x64 = mk1(TIR_DTYPE_F64, N, in), o64 = like(TIR_DTYPE_F64, &x64);
		struct tir_tensor x32 = mk1(TIR_DTYPE_F32, N, inf32), o32 = like(TIR_DTYPE_F32, &x32);
		CHECK(tir_k_unary(op, &x64, &o64, &err) == 0);
		CHECK(tir_k_unary(op, &x32, &o32, &err) == 0);
		const double *r64 = tir_tensor_data(&o64);
		const float *r32 = tir_tensor_data(&o32);
		int bad64 = 0, bad32 = 0;
		for (int i = 0; i < N; i++) {
			double w = ref_unary(op, in[i]);
			double w32 = ref_unary(op, (double)inf32[i]);
			double scale = fabs(w) > 1e-300 ? fabs(w) : 1e-300;
			double scale32 = fabs(w32) > 1e-30 ? fabs(w32) : 1e-30;
			if (fabs(r64[i] - w) > 4 * DBL_EPSILON * scale)
				bad64++;
			/* f32 within a few ULP; sin/cos near a zero get an absolute bound */
			if (fabs(r32[i] - w32) > 4 * FLT_EPSILON * scale32 &&
			    fabs(r32[i] - w32) > 4 * FLT_EPSILON)
				bad32++;
		}
		if (bad64 || bad32)
			fprintf(stderr, "unary op %d: %d f64 and %d f32 mismatches\n", (int)op,
				bad64, bad32);
		CHECK(bad64 == 0);
		CHECK(bad32 == 0);
		tir_tensor_release(&x64);
		tir_tensor_release(&o64);
		tir_tensor_release(&x32);
		tir_tensor_release(&o32);
	}

	/* special values */
	double sp[8] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, NAN, -0.0};
	struct tir_tensor x = mk1(TIR_DTYPE_F64, 8, sp), o = like(TIR_DTYPE_F64, &x);
	CHECK(tir_k_unary(TIR_OP_ROUND, &x, &o, &err) == 0);
	double rw[8] = {0, 2, 2, -0.0, -2, -2, NAN, -0.0};   /* np.round */
	const double *r = tir_tensor_data(&o);
	for (int i = 0; i < 6; i++)
		CHECK(same_bits_f64(r[i], rw[i]));
	CHECK(isnan(r[6]) && same_bits_f64(r[7], -0.0));
	CHECK(tir_k_unary(TIR_OP_SIGN, &x, &o, &err) == 0);
	CHECK(r[0] == 1 && r[3] == -1 && isnan(r[6]) && same_bits_f64(r[7], 0.0));
	CHECK(tir_k_unary(TIR_OP_RELU, &x, &o, &err) == 0);
	CHECK(r[0] == 0.5 && same_bits_f64(r[3], 0.0) && isnan(r[6]) && same_bits_f64(r[7], 0.0));
	tir_tensor_release(&o);
	tir_tensor_release(&x);

	float spf[4] = {0.5f, 1.5f, 2.5f, -0.5f};
	x = mk1(TIR_DTYPE_F32, 4, spf);
	o = like(TIR_DTYPE_F32, &x);
	CHECK(tir_k_unary(TIR_OP_ROUND, &x, &o, &err) == 0);
	const float *rf = tir_tensor_data(&o);
	CHECK(rf[0] == 0 && rf[1] == 2 && rf[2] == 2 && rf[3] == 0 && signbit(rf[3]));
	tir_tensor_release(&o);
	tir_tensor_release(&x);

	/* sigmoid and silu stay finite and exact at the extremes */
	double ext[4] = {-800, 800, -INFINITY, INFINITY};
	x = mk1(TIR_DTYPE_F64, 4, ext);
	o = like(TIR_DTYPE_F64, &x);
	CHECK(tir_k_unary(TIR_OP_SIGMOID, &x, &o, &err) == 0);
	r = tir_tensor_data(&o);
	CHECK(r[0] == 0 && r[1] == 1 && r[2] == 0 && r[3] == 1);
	CHECK(tir_k_unary(TIR_OP_SILU, &x, &o, &err) == 0);
	CHECK(r[0] == 0 && r[1] == 800);
	CHECK(tir_k_unary(TIR_OP_GELU, &x, &o, &err) == 0);
	CHECK(r[0] == 0 && r[1] == 800);
	tir_tensor_release(&o);
	tir_tensor_release(&x);
	float extf[2] = {-100, 100};
	x = mk1(TIR_DTYPE_F32, 2, extf);
	o = like(TIR_DTYPE_F32, &x);
	CHECK(tir_k_unary(TIR_OP_SIGMOID, &x, &o, &err) == 0);
	rf = tir_tensor_data(&o);
	CHECK(rf[0] >= 0 && rf[0] < 1e-40 && rf[1] == 1);
	tir_tensor_release(&o);
	tir_tensor_release(&x);

	/* a float-only op on an integer tensor is refused, not run */
	int32_t one = 1;
	x = mk1(TIR_DTYPE_I32, 1, &one);
	o = like(TIR_DTYPE_I32, &x);
	CHECK(tir_k_unary(TIR_OP_EXP, &x, &o, &err) == -TIR_EUNSUPPORTED);
	tir_tensor_release(&o);
	tir_tensor_release(&x);
}

static void test_unary_int(void)
{
	int32_t v[6] = {-5, 0, 7, INT32_MIN, INT32_MAX, -1};
	struct tir_tensor x = mk1(TIR_DTYPE_I32, 6, v), o = like(TIR_DTYPE_I32, &x);
	const int32_t *r = tir_tensor_data(&o);
	CHECK(tir_k_unary(TIR_OP_NEG, &x, &o, &err) == 0);
	CHECK(r[0] == 5 && r[1] == 0 && r[2] == -7 && r[3] == INT32_MIN && r[4] == -INT32_MAX);
	CHECK(tir_k_unary(TIR_OP_ABS, &x, &o, &err) == 0);
	CHECK(r[0] == 5 && r[3] == INT32_MIN && r[5] == 1);   /* NumPy: abs(INT_MIN) wraps */
	CHECK(tir_k_unary(TIR_OP_RELU, &x, &o, &err) == 0);
	CHECK(r[0] == 0 && r[2] == 7 && r[3] == 0);
	CHECK(tir_k_unary(TIR_OP_SIGN, &x, &o, &err) == 0);
	CHECK(r[0] == -1 && r[1] == 0 && r[2] == 1 && r[3] == -1);
	CHECK(tir_k_unary(TIR_OP_FLOOR, &x, &o, &err) == 0);
	CHECK(memcmp(r, v, sizeof v) == 0);
	CHECK(tir_k_unary(TIR_OP_ROUND, &x, &o, &err) == 0);
	CHECK(memcmp(r, v, sizeof v) == 0);
	tir_tensor_release(&o);
	tir_tensor_release(&x);

	int64_t w[3] = {INT64_MIN, -3, 4};
	x = mk1(TIR_DTYPE_I64, 3, w);
	o = like(TIR_DTYPE_I64, &x);
	const int64_t *r64 = tir_tensor_data(&o);
	CHECK(tir_k_unary(TIR_OP_NEG, &x, &o, &err) == 0);
	CHECK(r64[0] == INT64_MIN && r64[1] == 3 && r64[2] == -4);
	CHECK(tir_k_unary(TIR_OP_CEIL, &x, &o, &err) == 0);
	CHECK(r64[1] == -3);
	tir_tensor_release(&o);
	tir_tensor_release(&x);

	uint8_t b[3] = {1, 0, 1};
	x = mk1(TIR_DTYPE_BOOL, 3, b);
	o = like(TIR_DTYPE_BOOL, &x);
	CHECK(tir_k_unary(TIR_OP_NOT, &x, &o, &err) == 0);
	const uint8_t *rb = tir_tensor_data(&o);
	CHECK(rb[0] == 0 && rb[1] == 1 && rb[2] == 0);
	tir_tensor_release(&o);
	tir_tensor_release(&x);
}

/* ---- binary ---- */

/* Run op on two 1-D arrays of n elements, result in a new tensor. */
static int bin1(enum tir_op op, enum tir_dtype dt, enum tir_dtype odt, int64_t n,
		const void *a, const void *b, struct tir_tensor *out)
{
	struct tir_tensor ta = mk1(dt, n, a), tb = mk1(dt, n, b);
	*out = like(odt, &ta);
	int rc = tir_k_binary(op, &ta, &tb, out, &err);
	tir_tensor_release(&ta);
	tir_tensor_release(&tb);
	return rc;
}

static void test_int_divmod(void)
{
	/* NumPy 1.24: a // b and a % b */
	int32_t a[8] = {-7, 7, -7, 7, -8, 8, 0, -1};
	int32_t b[8] = {2, 2, -2, -2, 3, -3, 5, 4};
	int32_t wd[8] = {-4, 3, 3, -4, -3, -3, 0, -1};
	int32_t wm[8] = {1, 1, -1, -1, 1, -1, 0, 3};
	struct tir_tensor o;
	CHECK(bin1(TIR_OP_DIV, TIR_DTYPE_I32, TIR_DTYPE_I32, 8, a, b, &o) == 0);
	CHECK(memcmp(tir_tensor_data(&o), wd, sizeof wd) == 0);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_I32, TIR_DTYPE_I32, 8, a, b, &o) == 0);
	CHECK(memcmp(tir_tensor_data(&o), wm, sizeof wm) == 0);
	tir_tensor_release(&o);

	/* i64, every pair in [-9, 9] x [-4, 4] \ 0: floor and a == q*b + r */
	int64_t A[9 * 19 * 8], B[9 * 19 * 8];
	int n = 0;
	for (int i = -9; i <= 9; i++)
		for (int j = -4; j <= 4; j++)
			if (j)
				A[n] = i, B[n] = j, n++;
	struct tir_tensor q, r;
	CHECK(bin1(TIR_OP_DIV, TIR_DTYPE_I64, TIR_DTYPE_I64, n, A, B, &q) == 0);
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_I64, TIR_DTYPE_I64, n, A, B, &r) == 0);
	const int64_t *qq = tir_tensor_data(&q), *rr = tir_tensor_data(&r);
	bool ok = true;
	for (int i = 0; i < n; i++) {
		ok = ok && qq[i] == (int64_t)floor((double)A[i] / (double)B[i]);
		ok = ok && A[i] == qq[i] * B[i] + rr[i];
		ok = ok && (rr[i] == 0 || (rr[i] < 0) == (B[i] < 0));
	}
	CHECK(ok);
	tir_tensor_release(&q);
	tir_tensor_release(&r);

	/* INT_MIN / -1 wraps to INT_MIN (NumPy), % -1 is 0 */
	int32_t m[2] = {INT32_MIN, INT32_MIN}, m1[2] = {-1, 1};
	CHECK(bin1(TIR_OP_DIV, TIR_DTYPE_I32, TIR_DTYPE_I32, 2, m, m1, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == INT32_MIN && tir_tensor_get_i64(&o, 1) == INT32_MIN);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_I32, TIR_DTYPE_I32, 2, m, m1, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == 0);
	tir_tensor_release(&o);
	int64_t m64[1] = {INT64_MIN}, n64[1] = {-1};
	CHECK(bin1(TIR_OP_DIV, TIR_DTYPE_I64, TIR_DTYPE_I64, 1, m64, n64, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == INT64_MIN);
	tir_tensor_release(&o);

	/* division by zero is an error, for div and mod */
	int32_t z[3] = {1, 0, 2};
	memset(&err, 0, sizeof err);
	CHECK(bin1(TIR_OP_DIV, TIR_DTYPE_I32, TIR_DTYPE_I32, 3, a, z, &o) == -TIR_ERUNTIME);
	CHECK(err.code == TIR_ERUNTIME && strcmp(err.msg, "integer division by zero") == 0);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_I64, TIR_DTYPE_I64, 1, A, (int64_t[]){0}, &o) ==
	      -TIR_ERUNTIME);
	tir_tensor_release(&o);
	/* float division by zero is IEEE */
	double fa[2] = {1, -1}, fz[2] = {0, 0};
	CHECK(bin1(TIR_OP_DIV, TIR_DTYPE_F64, TIR_DTYPE_F64, 2, fa, fz, &o) == 0);
	CHECK(tir_tensor_get_f64(&o, 0) == INFINITY && tir_tensor_get_f64(&o, 1) == -INFINITY);
	tir_tensor_release(&o);
}

static void test_int_arith(void)
{
	struct tir_tensor o;
	/* wrap like NumPy */
	int32_t a[3] = {INT32_MAX, INT32_MIN, 65536}, b[3] = {1, 1, 65536};
	CHECK(bin1(TIR_OP_ADD, TIR_DTYPE_I32, TIR_DTYPE_I32, 3, a, b, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == INT32_MIN);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_SUB, TIR_DTYPE_I32, TIR_DTYPE_I32, 3, a, b, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 1) == INT32_MAX);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_MUL, TIR_DTYPE_I32, TIR_DTYPE_I32, 3, a, b, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 2) == 0);
	tir_tensor_release(&o);

	/* pow: NumPy 1.24 gives 3**40 = 689956897 (i32), (-2)**31 = INT32_MIN,
	 * (-3)**3 = -27, and 3**50 = 6048575297968530377 (i64) */
	int32_t pa[4] = {3, -2, -3, 5}, pb[4] = {40, 31, 3, 0};
	CHECK(bin1(TIR_OP_POW, TIR_DTYPE_I32, TIR_DTYPE_I32, 4, pa, pb, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == 689956897 && tir_tensor_get_i64(&o, 1) == INT32_MIN &&
	      tir_tensor_get_i64(&o, 2) == -27 && tir_tensor_get_i64(&o, 3) == 1);
	tir_tensor_release(&o);
	int64_t qa[1] = {3}, qb[1] = {50};
	CHECK(bin1(TIR_OP_POW, TIR_DTYPE_I64, TIR_DTYPE_I64, 1, qa, qb, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == INT64_C(6048575297968530377));
	tir_tensor_release(&o);
	int32_t na[1] = {2}, nb[1] = {-1};
	CHECK(bin1(TIR_OP_POW, TIR_DTYPE_I32, TIR_DTYPE_I32, 1, na, nb, &o) == -TIR_ERUNTIME);
	CHECK(strcmp(err.msg, "integers to negative integer powers are not allowed") == 0);
	tir_tensor_release(&o);

	int64_t ma[3] = {-5, 3, 9}, mb[3] = {2, 3, -9};
	CHECK(bin1(TIR_OP_MAXIMUM, TIR_DTYPE_I64, TIR_DTYPE_I64, 3, ma, mb, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == 2 && tir_tensor_get_i64(&o, 1) == 3 &&
	      tir_tensor_get_i64(&o, 2) == 9);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_MINIMUM, TIR_DTYPE_I64, TIR_DTYPE_I64, 3, ma, mb, &o) == 0);
	CHECK(tir_tensor_get_i64(&o, 0) == -5 && tir_tensor_get_i64(&o, 2) == -9);
	tir_tensor_release(&o);

	/* bool arithmetic as NumPy: add = or, mul = and */
	uint8_t ba[4] = {0, 0, 1, 1}, bb[4] = {0, 1, 0, 1};
	CHECK(bin1(TIR_OP_ADD, TIR_DTYPE_BOOL, TIR_DTYPE_BOOL, 4, ba, bb, &o) == 0);
	CHECK(memcmp(tir_tensor_data(&o), (uint8_t[]){0, 1, 1, 1}, 4) == 0);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_AND, TIR_DTYPE_BOOL, TIR_DTYPE_BOOL, 4, ba, bb, &o) == 0);
	CHECK(memcmp(tir_tensor_data(&o), (uint8_t[]){0, 0, 0, 1}, 4) == 0);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_OR, TIR_DTYPE_BOOL, TIR_DTYPE_BOOL, 4, ba, bb, &o) == 0);
	CHECK(memcmp(tir_tensor_data(&o), (uint8_t[]){0, 1, 1, 1}, 4) == 0);
	tir_tensor_release(&o);
	CHECK(bin1(TIR_OP_SUB, TIR_DTYPE_BOOL, TIR_DTYPE_BOOL, 4, ba, bb, &o) ==
	      -TIR_EUNSUPPORTED);
	tir_tensor_release(&o);
}

static void test_float_binary(void)
{
	struct tir_tensor o;
	/* np.mod: NumPy 1.24 gives [1.5, 0.5, -0.5, -1.5, inf, -inf, 0., -0.] */
	double x[8] = {5.5, -5.5, 5.5, -5.5, -1.0, 1.0, -0.0, 0.0};
	double y[8] = {2, 2, -2, -2, INFINITY, -INFINITY, 3, -3};
	double w[8] = {1.5, 0.5, -0.5, -1.5, INFINITY, -INFINITY, 0.0, -0.0};
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_F64, TIR_DTYPE_F64, 8, x, y, &o) == 0);
	bool ok = true;
	for (int i = 0; i < 8; i++)
		ok = ok && same_bits_f64(tir_tensor_get_f64(&o, i), w[i]);
	CHECK(ok);
	tir_tensor_release(&o);
	float xf[8], yf[8];
	for (int i = 0; i < 8; i++)
		xf[i] = (float)x[i], yf[i] = (float)y[i];
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_F32, TIR_DTYPE_F32, 8, xf, yf, &o) == 0);
	ok = true;
	for (int i = 0; i < 8; i++)
		ok = ok && same_bits_f64(tir_tensor_get_f64(&o, i), w[i]);
	CHECK(ok);
	tir_tensor_release(&o);
	double z[1] = {0};
	CHECK(bin1(TIR_OP_MOD, TIR_DTYPE_F64, TIR_DTYPE_F64, 1, x, z, &o) == 0);
	CHECK(isnan(tir_tensor_get_f64(&o, 0)));
	tir_tensor_release(&o);

	/* maximum/minimum propagate NaN from either side (np.maximum) */
	double p[4] = {NAN, 1, 2, NAN}, q[4] = {1, NAN, 3, NAN};
	CHECK(bin1(TIR_OP_MAXIMUM, TIR_DTYPE_F64, TIR_DTYPE_F64, 4, p, q, &o) == 0);
	CHECK(isnan(tir_tensor_get_f64(&o, 0)) && isnan(tir_tensor_get_f64(&o, 1)) &&
	      tir_tensor_get_f64(&o, 2) == 3 && isnan(tir_tensor_get_f64(&o, 3)));
	tir_tensor_release(&o);
	float pf[4] = {NAN, 1, 2, NAN}, qf[4] = {1, NAN, 3, NAN};
	CHECK(bin1(TIR_OP_MINIMUM, TIR_DTYPE_F32, TIR_DTYPE_F32, 4, pf, qf, &o) == 0);
	CHECK(isnan(tir_tensor_get_f64(&o, 0)) && isnan(tir_tensor_get_f64(&o, 1)) &&
	      tir_tensor_get_f64(&o, 2) == 2 && isnan(tir_tensor_get_f64(&o, 3)));
	tir_tensor_release(&o);

	/* every arithmetic op, f32 and f64, against the scalar formula */
	static const enum tir_op ops[] = {TIR_OP_ADD, TIR_OP_SUB, TIR_OP_MUL, TIR_OP_DIV,
					  TIR_OP_POW};
	enum { N = 50 };
	double a[N], b[N];
	float a32[N], b32[N];
	for (int i = 0; i < N; i++) {
		a[i] = 0.1 + i * 0.37;
		b[i] = -3 + i * 0.13;
		a32[i] = (float)a[i];
		b32[i] = (float)b[i];
	}
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct tir_tensor o32;
		CHECK(bin1(ops[k], TIR_DTYPE_F64, TIR_DTYPE_F64, N, a, b, &o) == 0);
		CHECK(bin1(ops[k], TIR_DTYPE_F32, TIR_DTYPE_F32, N, a32, b32, &o32) == 0);
		bool ok64 = true, ok32 = true;
		for (int i = 0; i < N; i++) {
			double w64, w32;
			switch (ops[k]) {
			case TIR_OP_ADD: w64 = a[i] + b[i]; w32 = a32[i] + b32[i]; break;
			case TIR_OP_SUB: w64 = a[i] - b[i]; w32 = a32[i] - b32[i]; break;
			case TIR_OP_MUL: w64 = a[i] * b[i]; w32 = a32[i] * b32[i]; break;
			case TIR_OP_DIV: w64 = a[i] / b[i]; w32 = a32[i] / b32[i]; break;
			default: w64 = pow(a[i], b[i]); w32 = pow(a32[i], b32[i]); break;
			}
			ok64 = ok64 && tir_tensor_get_f64(&o, i) == w64;
			ok32 = ok32 && fabs(tir_tensor_get_f64(&o32, i) - w32) <=
					       2 * FLT_EPSILON * fabs(w32);
		}
		CHECK(ok64);
		CHECK(ok32);
		tir_tensor_release(&o);
		tir_tensor_release(&o32);
	}
}

static void test_compare(void)
{
	double a[5] = {1, 2, NAN, 3, -0.0}, b[5] = {2, 2, NAN, 1, 0.0};
	static const enum tir_op ops[6] = {TIR_OP_EQ, TIR_OP_NE, TIR_OP_LT, TIR_OP_LE,
					   TIR_OP_GT, TIR_OP_GE};
	static const uint8_t want[6][5] = {
		{0, 1, 0, 0, 1}, {1, 0, 1, 1, 0}, {1, 0, 0, 0, 0},
		{1, 1, 0, 0, 1}, {0, 0, 0, 1, 0}, {0, 1, 0, 1, 1},
	};
	for (int k = 0; k < 6; k++) {
		struct tir_tensor o;
		CHECK(bin1(ops[k], TIR_DTYPE_F64, TIR_DTYPE_BOOL, 5, a, b, &o) == 0);
		CHECK(o.dtype == TIR_DTYPE_BOOL && memcmp(tir_tensor_data(&o), want[k], 5) == 0);
		tir_tensor_release(&o);
	}
	int32_t ia[3] = {-1, 5, 5}, ib[3] = {1, 5, 4};
	struct tir_tensor o;
	CHECK(bin1(TIR_OP_LT, TIR_DTYPE_I32, TIR_DTYPE_BOOL, 3, ia, ib, &o) == 0);
	CHECK(memcmp(tir_tensor_data(&o), (uint8_t[]){1, 0, 0}, 3) == 0);
	tir_tensor_release(&o);
	/* out must be bool for a comparison */
	CHECK(bin1(TIR_OP_LT, TIR_DTYPE_I32, TIR_DTYPE_I32, 3, ia, ib, &o) == -TIR_EUNSUPPORTED);
	tir_tensor_release(&o);
}

/* Check out == a OP b element by element through get_f64 (logical order). */
static bool agrees(const struct tir_tensor *out, const struct tir_tensor *a,
		   const struct tir_tensor *b, char op)
{
	int64_t n = tir_tensor_numel(out);
	for (int64_t i = 0; i < n; i++) {
		double x = tir_tensor_get_f64(a, i), y = tir_tensor_get_f64(b, i);
		double w = op == '+' ? x + y : x * y;
		if (tir_tensor_get_f64(out, i) != w)
			return false;
	}
	return true;
}

static void test_layouts(void)
{
	/* a [3, 1] + b [1, 4] by broadcast views -> [3, 4] */
	float av[3] = {1, 2, 3}, bv[4] = {10, 20, 30, 40};
	int64_t as[2] = {3, 1}, bs[2] = {1, 4}, os[2] = {3, 4};
	struct tir_tensor a = mk(TIR_DTYPE_F32, 2, as, av), b = mk(TIR_DTYPE_F32, 2, bs, bv);
	struct tir_tensor ab, bb, o = mk(TIR_DTYPE_F32, 2, os, NULL);
	tir_view_broadcast(&a, 2, os, &ab);
	tir_view_broadcast(&b, 2, os, &bb);
	CHECK(tir_k_binary(TIR_OP_ADD, &ab, &bb, &o, &err) == 0);
	float w[12] = {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43};
	CHECK(memcmp(tir_tensor_data(&o), w, sizeof w) == 0);
	tir_tensor_release(&ab);
	tir_tensor_release(&bb);

	/* scalar broadcast (rank 0 -> [3, 4], stride 0 everywhere) on either side */
	float sv = 2;
	struct tir_tensor s = mk(TIR_DTYPE_F32, 0, NULL, &sv), sb;
	tir_view_broadcast(&s, 2, os, &sb);
	struct tir_tensor full = mk(TIR_DTYPE_F32, 2, os, w);
	CHECK(tir_k_binary(TIR_OP_MUL, &full, &sb, &o, &err) == 0);
	CHECK(agrees(&o, &full, &sb, '*'));
	CHECK(tir_k_binary(TIR_OP_MUL, &sb, &full, &o, &err) == 0);
	CHECK(agrees(&o, &full, &sb, '*'));
	tir_tensor_release(&sb);
	tir_tensor_release(&s);

	/* strided: a transposed [4, 3] view + a contiguous [4, 3] */
	int64_t ts[2] = {4, 3};
	int perm[2] = {1, 0};
	struct tir_tensor tv, c, o2 = mk(TIR_DTYPE_F32, 2, ts, NULL);
	tir_view_transpose(&full, perm, &tv);
	float cv[12];
	for (int i = 0; i < 12; i++)
		cv[i] = (float)(i * i);
	c = mk(TIR_DTYPE_F32, 2, ts, cv);
	CHECK(tir_k_binary(TIR_OP_ADD, &tv, &c, &o2, &err) == 0);
	CHECK(agrees(&o2, &tv, &c, '+'));
	CHECK(tir_k_binary(TIR_OP_ADD, &c, &tv, &o2, &err) == 0);
	CHECK(agrees(&o2, &c, &tv, '+'));
	CHECK(tir_k_binary(TIR_OP_ADD, &tv, &tv, &o2, &err) == 0);
	CHECK(agrees(&o2, &tv, &tv, '+'));

	/* a reversed slice (negative stride) of a 3-D tensor, f64 */
	int64_t s3[3] = {2, 3, 4};
	double dv[24];
	for (int i = 0; i < 24; i++)
		dv[i] = i * 1.5;
	struct tir_tensor d = mk(TIR_DTYPE_F64, 3, s3, dv), rv, rv2;
	tir_view_slice(&d, 2, 3, -1, 4, &rv);
	tir_view_slice(&rv, 0, 1, -1, 2, &rv2);
	struct tir_tensor o3 = mk(TIR_DTYPE_F64, 3, s3, NULL);
	CHECK(tir_k_binary(TIR_OP_MUL, &rv2, &d, &o3, &err) == 0);
	CHECK(agrees(&o3, &rv2, &d, '*'));
	CHECK(tir_tensor_get_f64(&o3, 0) == dv[15] * dv[0]);

	/* unary through a strided view */
	struct tir_tensor o4 = mk(TIR_DTYPE_F64, 3, s3, NULL);
	CHECK(tir_k_unary(TIR_OP_NEG, &rv2, &o4, &err) == 0);
	bool ok = true;
	for (int i = 0; i < 24; i++)
		ok = ok && tir_tensor_get_f64(&o4, i) == -tir_tensor_get_f64(&rv2, i);
	CHECK(ok);

	/* shape mismatch is refused */
	CHECK(tir_k_binary(TIR_OP_ADD, &a, &b, &o, &err) == -TIR_EUNSUPPORTED);

	tir_tensor_release(&o4);
	tir_tensor_release(&o3);
	tir_tensor_release(&rv2);
	tir_tensor_release(&rv);
	tir_tensor_release(&d);
	tir_tensor_release(&c);
	tir_tensor_release(&tv);
	tir_tensor_release(&o2);
	tir_tensor_release(&full);
	tir_tensor_release(&o);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
}

/* ---- ternary ---- */

static void test_ternary(void)
{
	/* where(cond [3, 1], a [1, 2], b scalar) */
	uint8_t cv[3] = {1, 0, 1};
	double av[2] = {5, 6}, bv = -1;
	int64_t cs[2] = {3, 1}, as[2] = {1, 2}, os[2] = {3, 2};
	struct tir_tensor c = mk(TIR_DTYPE_BOOL, 2, cs, cv), a = mk(TIR_DTYPE_F64, 2, as, av);
	struct tir_tensor b = mk(TIR_DTYPE_F64, 0, NULL, &bv), cb, ab, bb;
	tir_view_broadcast(&c, 2, os, &cb);
	tir_view_broadcast(&a, 2, os, &ab);
	tir_view_broadcast(&b, 2, os, &bb);
	struct tir_tensor o = mk(TIR_DTYPE_F64, 2, os, NULL);
	CHECK(tir_k_ternary(TIR_OP_WHERE, &cb, &ab, &bb, &o, &err) == 0);
	double w[6] = {5, 6, -1, -1, 5, 6};
	CHECK(memcmp(tir_tensor_data(&o), w, sizeof w) == 0);
	tir_tensor_release(&o);

	/* where on i32 and bool payloads */
	int32_t ia[3] = {1, 2, 3}, ib[3] = {-1, -2, -3};
	struct tir_tensor c1 = mk1(TIR_DTYPE_BOOL, 3, cv), ta = mk1(TIR_DTYPE_I32, 3, ia);
	struct tir_tensor tb = mk1(TIR_DTYPE_I32, 3, ib);
	o = like(TIR_DTYPE_I32, &ta);
	CHECK(tir_k_ternary(TIR_OP_WHERE, &c1, &ta, &tb, &o, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&o), (int32_t[]){1, -2, 3}, 12) == 0);
	tir_tensor_release(&o);

	/* clip: NumPy 1.24 np.clip([nan, 5, -5, 0.5], [0, nan, 0, 0], 1) = [nan, nan, 0, 0.5] */
	double xv[4] = {NAN, 5, -5, 0.5}, lo[4] = {0, NAN, 0, 0}, hi = 1;
	struct tir_tensor x = mk1(TIR_DTYPE_F64, 4, xv), l = mk1(TIR_DTYPE_F64, 4, lo);
	struct tir_tensor h = mk(TIR_DTYPE_F64, 0, NULL, &hi), hb;
	int64_t four = 4;
	tir_view_broadcast(&h, 1, &four, &hb);
	o = like(TIR_DTYPE_F64, &x);
	CHECK(tir_k_ternary(TIR_OP_CLIP, &x, &l, &hb, &o, &err) == 0);
	CHECK(isnan(tir_tensor_get_f64(&o, 0)) && isnan(tir_tensor_get_f64(&o, 1)) &&
	      tir_tensor_get_f64(&o, 2) == 0 && tir_tensor_get_f64(&o, 3) == 0.5);
	tir_tensor_release(&o);
	int32_t xi[3] = {-10, 3, 10}, loi[3] = {0, 0, 0}, hii[3] = {5, 5, 5};
	struct tir_tensor xi_ = mk1(TIR_DTYPE_I32, 3, xi), li_ = mk1(TIR_DTYPE_I32, 3, loi);
	struct tir_tensor hi_ = mk1(TIR_DTYPE_I32, 3, hii);
	o = like(TIR_DTYPE_I32, &xi_);
	CHECK(tir_k_ternary(TIR_OP_CLIP, &xi_, &li_, &hi_, &o, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&o), (int32_t[]){0, 3, 5}, 12) == 0);
	tir_tensor_release(&o);
	/* where's cond must be bool */
	o = like(TIR_DTYPE_I32, &xi_);
	CHECK(tir_k_ternary(TIR_OP_WHERE, &xi_, &li_, &hi_, &o, &err) == -TIR_EUNSUPPORTED);
	tir_tensor_release(&o);

	struct tir_tensor *all[] = {&c, &a, &b, &cb, &ab, &bb, &c1, &ta, &tb, &x, &l,
				    &h, &hb, &xi_, &li_, &hi_};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		tir_tensor_release(all[i]);
}

/* ---- creation ---- */

static void test_creation(void)
{
	int64_t n = 5;
	struct tir_tensor t;
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_I64, 1, &n, false, &err) == 0);
	CHECK(tir_k_fill(&t, 0, INT64_C(1) << 40, true) == 0);
	CHECK(tir_tensor_get_i64(&t, 4) == INT64_C(1) << 40);
	CHECK(tir_k_fill(&t, -2.7, 0, false) == 0);
	CHECK(tir_tensor_get_i64(&t, 0) == -2);
	CHECK(tir_k_arange(&t, 0, 0, 10, -3) == 0);
	CHECK(tir_tensor_get_i64(&t, 0) == 10 && tir_tensor_get_i64(&t, 4) == -2);
	tir_tensor_release(&t);

	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, &n, false, &err) == 0);
	CHECK(tir_k_fill(&t, 0.25, 0, false) == 0);
	CHECK(tir_tensor_get_f64(&t, 3) == 0.25);
	CHECK(tir_k_fill(&t, 0, 7, true) == 0);
	CHECK(tir_tensor_get_f64(&t, 3) == 7);
	CHECK(tir_k_arange(&t, 1, 0.5, 0, 0) == 0);
	CHECK(tir_tensor_get_f64(&t, 0) == 1 && tir_tensor_get_f64(&t, 4) == 3);
	tir_tensor_release(&t);

	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_BOOL, 1, &n, false, &err) == 0);
	CHECK(tir_k_fill(&t, 0.5, 0, false) == 0);
	CHECK(tir_tensor_get_i64(&t, 2) == 1);
	CHECK(tir_k_fill(&t, 0, 0, true) == 0);
	CHECK(tir_tensor_get_i64(&t, 2) == 0);
	tir_tensor_release(&t);

	int64_t sq[2] = {3, 3};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 2, sq, false, &err) == 0);
	CHECK(tir_k_eye(&t) == 0);
	bool ok = true;
	for (int i = 0; i < 9; i++)
		ok = ok && tir_tensor_get_f64(&t, i) == (i % 4 == 0);
	CHECK(ok);
	tir_tensor_release(&t);
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_I32, 2, sq, false, &err) == 0);
	CHECK(tir_k_eye(&t) == 0);
	CHECK(tir_tensor_get_i64(&t, 4) == 1 && tir_tensor_get_i64(&t, 5) == 0);
	tir_tensor_release(&t);
}

/* ---- rng ---- */

static void test_rng(void)
{
	/* Random123's known answers for Philox4x32-10 */
	uint32_t c[4] = {0, 0, 0, 0}, k[2] = {0, 0};
	tir_philox4x32_10(c, k);
	CHECK(c[0] == 0x6627e8d5 && c[1] == 0xe169c58d && c[2] == 0xbc57ac4c &&
	      c[3] == 0x9b00dbd8);
	uint32_t c2[4] = {~0u, ~0u, ~0u, ~0u}, k2[2] = {~0u, ~0u};
	tir_philox4x32_10(c2, k2);
	CHECK(c2[0] == 0x408f276d && c2[1] == 0x41c83b0e && c2[2] == 0xa20bc7c6 &&
	      c2[3] == 0x6d5451fd);
	uint32_t c3[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
	uint32_t k3[2] = {0xa4093822, 0x299f31d0};
	tir_philox4x32_10(c3, k3);
	CHECK(c3[0] == 0xd16cfe09 && c3[1] == 0x94fdcceb && c3[2] == 0x5001e420 &&
	      c3[3] == 0x24126ea1);

	/* element 0 of seed 0 is the first known answer, through the definition */
	int64_t one = 1;
	struct tir_tensor t;
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 1, &one, false, &err) == 0);
	CHECK(tir_k_rand(&t, 0, false) == 0);
	uint64_t w01 = ((uint64_t)0x6627e8d5 << 32) | 0xe169c58d;
	CHECK(tir_tensor_get_f64(&t, 0) == (double)(w01 >> 11) * 0x1p-53);
	CHECK(tir_k_rand(&t, 0, true) == 0);
	uint64_t w23 = ((uint64_t)0xbc57ac4c << 32) | 0x9b00dbd8;
	double u1 = (double)((w01 >> 11) + 1) * 0x1p-53, u2 = (double)(w23 >> 11) * 0x1p-53;
	CHECK_NEAR(tir_tensor_get_f64(&t, 0), sqrt(-2 * log(u1)) * cos(2 * M_PI * u2), 1e-15);
	tir_tensor_release(&t);
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, &one, false, &err) == 0);
	CHECK(tir_k_rand(&t, 0, false) == 0);
	CHECK(tir_tensor_get_f64(&t, 0) == (double)(0x6627e8d5u >> 8) * 0x1p-24);
	tir_tensor_release(&t);

	/* statistics over 1e6 values, both dtypes */
	int64_t n = 1000000;
	for (int dt = TIR_DTYPE_F32; dt <= TIR_DTYPE_F64; dt++) {
		CHECK(tir_tensor_alloc(&t, (enum tir_dtype)dt, 1, &n, false, &err) == 0);
		CHECK(tir_k_rand(&t, 42, true) == 0);
		double s = 0, ss = 0;
		for (int64_t i = 0; i < n; i++) {
			double v = tir_tensor_get_f64(&t, i);
			s += v;
			ss += v * v;
		}
		double mean = s / n, sd = sqrt(ss / n - mean * mean);
		CHECK(fabs(mean) < 0.005);
		CHECK(fabs(sd - 1) < 0.005);
		CHECK(tir_k_rand(&t, 42, false) == 0);
		double lo = 1, hi = 0;
		s = 0;
		for (int64_t i = 0; i < n; i++) {
			double v = tir_tensor_get_f64(&t, i);
			s += v;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		CHECK(lo >= 0 && hi < 1 && lo < 1e-4 && hi > 1 - 1e-4);
		CHECK(fabs(s / n - 0.5) < 0.002);

		/* a sub-range, and a different shape, give the same values */
		size_t sz = tir_dtype_size((enum tir_dtype)dt);
		char *part = malloc(1000 * sz);
		tir_rand_range(part, (enum tir_dtype)dt, 123456, 1000, 42, false);
		CHECK(memcmp(part, (char *)tir_tensor_data(&t) + 123456 * sz, 1000 * sz) == 0);
		free(part);
		int64_t shape2[3] = {10, 100, 1000};
		struct tir_tensor t2;
		CHECK(tir_tensor_alloc(&t2, (enum tir_dtype)dt, 3, shape2, false, &err) == 0);
		CHECK(tir_k_rand(&t2, 42, false) == 0);
		CHECK(memcmp(tir_tensor_data(&t2), tir_tensor_data(&t), (size_t)n * sz) == 0);
		CHECK(tir_k_rand(&t2, 43, false) == 0);
		CHECK(memcmp(tir_tensor_data(&t2), tir_tensor_data(&t), (size_t)n * sz) != 0);
		tir_tensor_release(&t2);
		tir_tensor_release(&t);
	}
}

int main(void)
{
	test_alloc();
	test_reuse_cache_budget();
	test_views();
	test_convert();
	test_iter();
	test_unary_float();
	test_unary_int();
	test_int_divmod();
	test_int_arith();
	test_float_binary();
	test_compare();
	test_layouts();
	test_ternary();
	test_creation();
	test_rng();
	CHECK(tir_mem_current() == 0);
	return check_report("test_elementwise");
}
