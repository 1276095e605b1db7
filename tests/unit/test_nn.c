/*
 * test_nn.c — matmul (matmul.c) and the nn kernels (nn.c) against plain
 * double-precision loops written here, on contiguous and strided views,
 * broadcast batch axes and edge sizes.  Not a speed test.
 */
#include "exec/exec.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static struct tir_err err;
static uint64_t rng = 12345;

/* Deterministic values in [-1, 1). */
static double frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) / (double)(1ull << 53) * 2 - 1;
}

static void set(struct tir_tensor *t, int64_t i, double v)
{
	char *p = tir_tensor_data(t);
	switch (t->dtype) {
	case TIR_DTYPE_F32: ((float *)p)[i] = (float)v; break;
	case TIR_DTYPE_F64: ((double *)p)[i] = v; break;
	case TIR_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
	case TIR_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)v; break;
	default: break;
	}
}

/* A contiguous tensor of random values (scaled). */
static void rnd(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape,
		double scale)
{
	CHECK(tir_tensor_alloc(t, dt, rank, shape, false, &err) == 0);
	for (int64_t i = 0; i < tir_tensor_numel(t); i++)
		set(t, i, frand() * scale);
}

static void alloc(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape)
{
	CHECK(tir_tensor_alloc(t, dt, rank, shape, false, &err) == 0);
	/* garbage, so a kernel that forgets an element is caught */
	memset(tir_tensor_data(t), 0x7f, (size_t)tir_tensor_numel(t) * tir_dtype_size(dt));
}

/* Element at multi-index ix of a view (any strides). */
static double get(const struct tir_tensor *t, const int64_t *ix)
{
	int64_t flat = 0;
	for (int d = 0; d < t->rank; d++)
		flat = flat * t->shape[d] + ix[d];
	return tir_tensor_get_f64(t, flat);
}

/* ---- matmul ---- */

/* out (contiguous, rank r) against a double loop over views a, b broadcast to
 * out's batch shape. */
static void check_matmul(const struct tir_tensor *a, const struct tir_tensor *b, double tol)
{
	int r = a->rank;
	int64_t oshape[TIR_MAX_RANK];
	for (int d = 0; d < r - 2; d++)
		oshape[d] = a->shape[d] > b->shape[d] ? a->shape[d] : b->shape[d];
	oshape[r - 2] = a->shape[r - 2];
	oshape[r - 1] = b->shape[r - 1];
	int64_t k = a->shape[r - 1];
	struct tir_tensor out, ab = { 0 }, bb = { 0 };
	alloc(&out, a->dtype, r, oshape);
	int64_t ash[TIR_MAX_RANK], bsh[TIR_MAX_RANK];
	memcpy(ash, oshape, sizeof ash);
	memcpy(bsh, oshape, sizeof bsh);
	ash[r - 1] = k;
	bsh[r - 2] = k;
	tir_view_broadcast(a, r, ash, &ab);
	tir_view_broadcast(b, r, bsh, &bb);
	CHECK(tir_k_matmul(a, b, &out, &err) == 0);

	int64_t n = tir_tensor_numel(&out), bad = 0;
	int64_t ix[TIR_MAX_RANK], ia[TIR_MAX_RANK], ib[TIR_MAX_RANK];
	for (int64_t f = 0; f < n; f++) {
		int64_t rem = f;
		for (int d = r - 1; d >= 0; d--) {
			ix[d] = rem % oshape[d];
			rem /= oshape[d];
		}
		memcpy(ia, ix, sizeof ia);
		memcpy(ib, ix, sizeof ib);
		double ref = 0, mag = 0;
		for (int64_t p = 0; p < k; p++) {
			ia[r - 1] = p;
			ib[r - 2] = p;
			double t = get(&ab, ia) * get(&bb, ib);
			ref += t;
			mag += fabs(t);
		}
		double got = tir_tensor_get_f64(&out, f);
		if (fabs(got - ref) > tol * (1 + mag))
			bad++;
	}
	CHECK(bad == 0);
	tir_tensor_release(&ab);
	tir_tensor_release(&bb);
	tir_tensor_release(&out);
}

static void test_matmul_float(enum tir_dtype dt)
{
	double tol = dt == TIR_DTYPE_F32 ? 1e-5 : 1e-12;
	struct tir_tensor a, b, at, bt, v1 = { 0 }, v2 = { 0 };

	/* plain 2-D, odd sizes */
	rnd(&a, dt, 2, (int64_t[]){ 3, 5 }, 1);
	rnd(&b, dt, 2, (int64_t[]){ 5, 7 }, 1);
	check_matmul(&a, &b, tol);
	tir_tensor_release(&a);
	tir_tensor_release(&b);

	/* transposed views: both operands through CblasTrans */
	rnd(&at, dt, 2, (int64_t[]){ 5, 3 }, 1);
	rnd(&bt, dt, 2, (int64_t[]){ 7, 5 }, 1);
	tir_view_transpose(&at, (int[]){ 1, 0 }, &v1);
	tir_view_transpose(&bt, (int[]){ 1, 0 }, &v2);
	CHECK(v1.strides[0] == 1 && v2.strides[0] == 1);
	check_matmul(&v1, &v2, tol);
	tir_tensor_release(&v1);
	tir_tensor_release(&v2);

	/* a strided (every other column) and a negative-step view: copied */
	tir_view_slice(&bt, 1, 0, 2, 3, &v1);          /* [7, 3] stride (5, 2) */
	tir_view_slice(&at, 0, 4, -1, 3, &v2);         /* [3, 3] rows 4, 3, 2 */
	check_matmul(&v1, &v2, tol);
	tir_tensor_release(&v1);
	tir_tensor_release(&v2);
	tir_tensor_release(&at);
	tir_tensor_release(&bt);

	/* batched: b [1, 1, 5, 7] broadcast to [2, 3, 5, 7] (stride 0): one folded gemm */
	rnd(&a, dt, 4, (int64_t[]){ 2, 3, 4, 5 }, 1);
	rnd(&b, dt, 4, (int64_t[]){ 1, 1, 5, 7 }, 1);
	tir_view_broadcast(&b, 4, (int64_t[]){ 2, 3, 5, 7 }, &v1);
	CHECK(v1.strides[0] == 0 && v1.strides[1] == 0);
	check_matmul(&a, &v1, tol);
	check_matmul(&a, &b, tol);             /* batch axes of size 1 */
	tir_tensor_release(&v1);
	tir_tensor_release(&b);

	/* a broadcast over batches, b varying */
	rnd(&b, dt, 4, (int64_t[]){ 2, 3, 5, 7 }, 1);
	struct tir_tensor a1;
	rnd(&a1, dt, 4, (int64_t[]){ 2, 1, 4, 5 }, 1);
	tir_view_broadcast(&a1, 4, (int64_t[]){ 2, 3, 4, 5 }, &v1);
	check_matmul(&v1, &b, tol);
	tir_tensor_release(&v1);
	tir_tensor_release(&a1);

	/* a transposed in every batch (not foldable), b broadcast */
	struct tir_tensor b1;
	rnd(&b1, dt, 3, (int64_t[]){ 1, 5, 7 }, 1);
	rnd(&a1, dt, 3, (int64_t[]){ 4, 5, 3 }, 1);
	tir_view_transpose(&a1, (int[]){ 0, 2, 1 }, &v1);     /* [4, 3, 5] */
	tir_view_broadcast(&b1, 3, (int64_t[]){ 4, 5, 7 }, &v2);
	check_matmul(&v1, &v2, tol);
	tir_tensor_release(&v1);
	tir_tensor_release(&v2);
	tir_tensor_release(&a1);
	tir_tensor_release(&b1);

	/* every batch's a needs a copy (column stride 2), a different one each */
	rnd(&a1, dt, 3, (int64_t[]){ 3, 4, 10 }, 1);
	tir_view_slice(&a1, 2, 1, 2, 5, &v1);                 /* [3, 4, 5] */
	rnd(&b1, dt, 3, (int64_t[]){ 3, 5, 2 }, 1);
	check_matmul(&v1, &b1, tol);
	tir_tensor_release(&v1);
	tir_tensor_release(&b1);
	tir_tensor_release(&a1);
	rnd(&b1, dt, 3, (int64_t[]){ 1, 5, 7 }, 1);

	/* m == 1 in every batch: rows of the fold are the batches */
	rnd(&a1, dt, 3, (int64_t[]){ 6, 1, 5 }, 1);
	tir_view_broadcast(&b1, 3, (int64_t[]){ 6, 5, 7 }, &v2);
	check_matmul(&a1, &v2, tol);
	tir_tensor_release(&v2);
	tir_tensor_release(&a1);
	tir_tensor_release(&b1);
	tir_tensor_release(&a);
	tir_tensor_release(&b);

	/* k == 0: zeros; m == 0: nothing */
	struct tir_tensor out;
	rnd(&a, dt, 2, (int64_t[]){ 3, 0 }, 1);
	rnd(&b, dt, 2, (int64_t[]){ 0, 4 }, 1);
	alloc(&out, dt, 2, (int64_t[]){ 3, 4 });
	CHECK(tir_k_matmul(&a, &b, &out, &err) == 0);
	bool zero = true;
	for (int64_t i = 0; i < 12; i++)
		zero = zero && tir_tensor_get_f64(&out, i) == 0;
	CHECK(zero);
	tir_tensor_release(&out);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	rnd(&a, dt, 2, (int64_t[]){ 0, 3 }, 1);
	rnd(&b, dt, 2, (int64_t[]){ 3, 4 }, 1);
	alloc(&out, dt, 2, (int64_t[]){ 0, 4 });
	CHECK(tir_k_matmul(&a, &b, &out, &err) == 0);
	tir_tensor_release(&out);

	/* errors: inner mismatch, rank mismatch */
	alloc(&out, dt, 2, (int64_t[]){ 0, 4 });
	CHECK(tir_k_matmul(&b, &b, &out, &err) == -TIR_ETYPE);
	CHECK(strstr(err.msg, "inner") != NULL);
	tir_tensor_release(&out);
	tir_tensor_release(&a);
	tir_tensor_release(&b);

	/* a larger one, so OpenBLAS's blocked kernels run */
	rnd(&a, dt, 2, (int64_t[]){ 67, 129 }, 1);
	rnd(&b, dt, 2, (int64_t[]){ 129, 71 }, 1);
	check_matmul(&a, &b, tol);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
}

static void test_matmul_int(void)
{
	struct tir_tensor a, b, out, v = { 0 };

	/* i32 wraps like uint32 arithmetic */
	CHECK(tir_tensor_alloc(&a, TIR_DTYPE_I32, 2, (int64_t[]){ 2, 3 }, false, &err) == 0);
	CHECK(tir_tensor_alloc(&b, TIR_DTYPE_I32, 2, (int64_t[]){ 3, 2 }, false, &err) == 0);
	int32_t av[] = { 1, -2, 3, 65536, 65536, 7 };
	int32_t bv[] = { 131072, 5, -6, 7, 65536, 2 };
	memcpy(tir_tensor_data(&a), av, sizeof av);
	memcpy(tir_tensor_data(&b), bv, sizeof bv);
	alloc(&out, TIR_DTYPE_I32, 2, (int64_t[]){ 2, 2 });
	CHECK(tir_k_matmul(&a, &b, &out, &err) == 0);
	const int32_t *o = tir_tensor_data(&out);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			uint32_t ref = 0;
			for (int p = 0; p < 3; p++)
				ref += (uint32_t)av[i * 3 + p] * (uint32_t)bv[p * 2 + j];
			CHECK((uint32_t)o[i * 2 + j] == ref);
		}
	CHECK(o[0] == 131072 + -2 * -6 + 3 * 65536);
	/* 65536 * 131072 wraps to 0: 0 + 65536 * -6 + 7 * 65536 */
	CHECK(o[2] == 65536);
	CHECK(o[3] == (int32_t)(65536u * 12u + 14u));
	tir_tensor_release(&out);

	/* transposed view of a, broadcast batch */
	struct tir_tensor a3, bb = { 0 };
	rnd(&a3, TIR_DTYPE_I64, 3, (int64_t[]){ 2, 4, 3 }, 1000);
	tir_view_transpose(&a3, (int[]){ 0, 2, 1 }, &v);    /* [2, 3, 4] */
	struct tir_tensor b3;
	rnd(&b3, TIR_DTYPE_I64, 3, (int64_t[]){ 1, 4, 5 }, 1000);
	tir_view_broadcast(&b3, 3, (int64_t[]){ 2, 4, 5 }, &bb);
	check_matmul(&v, &bb, 0);
	tir_tensor_release(&v);
	tir_tensor_release(&bb);
	tir_tensor_release(&a3);
	tir_tensor_release(&b3);

	/* i64 overflow wraps (no UB under -fsanitize=undefined) */
	struct tir_tensor x, y;
	CHECK(tir_tensor_alloc(&x, TIR_DTYPE_I64, 2, (int64_t[]){ 1, 2 }, false, &err) == 0);
	CHECK(tir_tensor_alloc(&y, TIR_DTYPE_I64, 2, (int64_t[]){ 2, 1 }, false, &err) == 0);
	int64_t *xp = tir_tensor_data(&x), *yp = tir_tensor_data(&y);
	xp[0] = INT64_MAX;
	xp[1] = INT64_MAX;
	yp[0] = 2;
	yp[1] = 1;
	alloc(&out, TIR_DTYPE_I64, 2, (int64_t[]){ 1, 1 });
	CHECK(tir_k_matmul(&x, &y, &out, &err) == 0);
	CHECK(*(int64_t *)tir_tensor_data(&out) == (int64_t)((uint64_t)INT64_MAX * 3u));
	tir_tensor_release(&out);
	tir_tensor_release(&x);
	tir_tensor_release(&y);

	/* bool is refused */
	CHECK(tir_tensor_alloc(&x, TIR_DTYPE_BOOL, 2, (int64_t[]){ 1, 1 }, true, &err) == 0);
	CHECK(tir_tensor_alloc(&out, TIR_DTYPE_BOOL, 2, (int64_t[]){ 1, 1 }, true, &err) == 0);
	CHECK(tir_k_matmul(&x, &x, &out, &err) == -TIR_EUNSUPPORTED);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
}

/* ---- softmax ---- */

/* softmax of x along axis vs a double loop (max-shifted, so big values are fine) */
static void check_softmax(const struct tir_tensor *x, int axis, bool lg, double tol)
{
	struct tir_tensor out;
	alloc(&out, x->dtype, x->rank, x->shape);
	CHECK(tir_k_softmax(x, axis, lg, &out, &err) == 0);
	int ax = axis < 0 ? axis + x->rank : axis;
	int64_t n = tir_tensor_numel(x), ix[TIR_MAX_RANK], bad = 0;
	for (int64_t f = 0; f < n; f++) {
		int64_t rem = f;
		for (int d = x->rank - 1; d >= 0; d--) {
			ix[d] = rem % x->shape[d];
			rem /= x->shape[d];
		}
		double self = get(x, ix), mx = -INFINITY, sum = 0;
		int64_t keep = ix[ax];
		for (ix[ax] = 0; ix[ax] < x->shape[ax]; ix[ax]++)
			mx = fmax(mx, get(x, ix));
		for (ix[ax] = 0; ix[ax] < x->shape[ax]; ix[ax]++)
			sum += exp(get(x, ix) - mx);
		ix[ax] = keep;
		double ref = lg ? self - mx - log(sum) : exp(self - mx) / sum;
		double got = tir_tensor_get_f64(&out, f);
		if (!(fabs(got - ref) <= tol * (1 + fabs(ref))))
			bad++;
	}
	CHECK(bad == 0);
	tir_tensor_release(&out);
}

static void test_softmax(enum tir_dtype dt)
{
	double tol = dt == TIR_DTYPE_F32 ? 1e-6 : 1e-13;
	struct tir_tensor x, out, v = { 0 };

	/* 1000, 1001, 1002: exp overflows unless the max is subtracted.
	 * Expected from numpy: scipy-free softmax of [0, 1, 2],
	 *   e = np.exp([0, 1, 2]); e / e.sum(); np.log(e / e.sum()) */
	static const double sm[3] = { 0.09003057317038046, 0.24472847105479764,
				      0.6652409557748219 };
	static const double lsm[3] = { -2.4076059644443806, -1.4076059644443804,
				       -0.4076059644443803 };
	CHECK(tir_tensor_alloc(&x, dt, 2, (int64_t[]){ 2, 3 }, false, &err) == 0);
	for (int i = 0; i < 3; i++) {
		set(&x, i, 1000 + i);
		set(&x, 3 + i, -1000 - i);
	}
	alloc(&out, dt, 2, (int64_t[]){ 2, 3 });
	CHECK(tir_k_softmax(&x, -1, false, &out, &err) == 0);
	for (int i = 0; i < 3; i++) {
		CHECK_NEAR(tir_tensor_get_f64(&out, i), sm[i], tol);
		CHECK_NEAR(tir_tensor_get_f64(&out, 5 - i), sm[i], tol);
	}
	CHECK(tir_k_softmax(&x, 1, true, &out, &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(tir_tensor_get_f64(&out, i), lsm[i], tol);
	/* along axis 0: 1000 vs -1000 */
	CHECK(tir_k_softmax(&x, 0, false, &out, &err) == 0);
	CHECK_NEAR(tir_tensor_get_f64(&out, 0), 1, tol);
	CHECK_NEAR(tir_tensor_get_f64(&out, 3), 0, tol);
	CHECK(tir_k_softmax(&x, 0, true, &out, &err) == 0);
	CHECK_NEAR(tir_tensor_get_f64(&out, 3), -2000, tol);
	CHECK_NEAR(tir_tensor_get_f64(&out, 5), -2004, tol);
	CHECK(tir_k_softmax(&x, 2, false, &out, &err) == -TIR_ETYPE);
	/* a NaN poisons its row only */
	set(&x, 1, NAN);
	CHECK(tir_k_softmax(&x, -1, false, &out, &err) == 0);
	CHECK(isnan(tir_tensor_get_f64(&out, 0)) && isnan(tir_tensor_get_f64(&out, 2)));
	CHECK(!isnan(tir_tensor_get_f64(&out, 3)));
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	/* random 3-D, every axis, contiguous and transposed */
	rnd(&x, dt, 3, (int64_t[]){ 4, 5, 6 }, 10);
	for (int ax = -1; ax < 3; ax++) {
		check_softmax(&x, ax, false, tol);
		check_softmax(&x, ax, true, tol);
	}
	tir_view_transpose(&x, (int[]){ 2, 0, 1 }, &v);
	for (int ax = 0; ax < 3; ax++) {
		check_softmax(&v, ax, false, tol);
		check_softmax(&v, ax, true, tol);
	}
	tir_tensor_release(&v);
	tir_tensor_release(&x);

	/* a middle axis wider than one column block */
	rnd(&x, dt, 3, (int64_t[]){ 2, 3, 5000 }, 5);
	check_softmax(&x, 1, false, tol);
	check_softmax(&x, 0, true, tol);
	tir_tensor_release(&x);
}

/* ---- layernorm, rmsnorm ---- */

static void check_norm(const struct tir_tensor *x, const struct tir_tensor *w,
		       const struct tir_tensor *b, double eps, double tol)
{
	struct tir_tensor out;
	alloc(&out, x->dtype, x->rank, x->shape);
	if (b)
		CHECK(tir_k_layernorm(x, w, b, eps, &out, &err) == 0);
	else
		CHECK(tir_k_rmsnorm(x, w, eps, &out, &err) == 0);
	int r = x->rank;
	int64_t d = x->shape[r - 1], rows = tir_tensor_numel(x) / d, bad = 0;
	int64_t ix[TIR_MAX_RANK];
	for (int64_t row = 0; row < rows; row++) {
		int64_t rem = row;
		for (int a = r - 2; a >= 0; a--) {
			ix[a] = rem % x->shape[a];
			rem /= x->shape[a];
		}
		double mean = 0, var = 0;
		for (ix[r - 1] = 0; ix[r - 1] < d; ix[r - 1]++)
			mean += get(x, ix) / d;
		for (ix[r - 1] = 0; ix[r - 1] < d; ix[r - 1]++) {
			double c = get(x, ix) - (b ? mean : 0);
			var += c * c / d;
		}
		for (int64_t j = 0; j < d; j++) {
			ix[r - 1] = j;
			double ref = (get(x, ix) - (b ? mean : 0)) / sqrt(var + eps) *
				     tir_tensor_get_f64(w, j) + (b ? tir_tensor_get_f64(b, j) : 0);
			double got = tir_tensor_get_f64(&out, row * d + j);
			if (!(fabs(got - ref) <= tol * (1 + fabs(ref))))
				bad++;
		}
	}
	CHECK(bad == 0);
	tir_tensor_release(&out);
}

static void test_norm(enum tir_dtype dt)
{
	double tol = dt == TIR_DTYPE_F32 ? 1e-5 : 1e-12;
	struct tir_tensor x, w, b, v = { 0 };
	rnd(&x, dt, 3, (int64_t[]){ 2, 3, 7 }, 3);
	rnd(&w, dt, 1, (int64_t[]){ 7 }, 1);
	rnd(&b, dt, 1, (int64_t[]){ 7 }, 1);
	/* shift the rows so the mean matters */
	for (int64_t i = 0; i < 42; i++)
		set(&x, i, tir_tensor_get_f64(&x, i) + 100);
	check_norm(&x, &w, &b, 1e-5, tol);
	check_norm(&x, &w, NULL, 1e-6, tol);
	tir_view_transpose(&x, (int[]){ 1, 0, 2 }, &v);
	check_norm(&v, &w, &b, 1e-5, tol);
	check_norm(&v, &w, NULL, 1e-6, tol);
	tir_tensor_release(&v);
	/* normalising over a strided axis, and a weight broadcast to x's shape */
	struct tir_tensor wb = { 0 };
	tir_view_transpose(&x, (int[]){ 2, 0, 1 }, &v);      /* [7, 2, 3] */
	struct tir_tensor w3;
	rnd(&w3, dt, 1, (int64_t[]){ 3 }, 1);
	tir_view_broadcast(&w3, 3, (int64_t[]){ 7, 2, 3 }, &wb);
	check_norm(&v, &w3, NULL, 1e-6, tol);
	struct tir_tensor out;
	alloc(&out, dt, 3, (int64_t[]){ 7, 2, 3 });
	CHECK(tir_k_rmsnorm(&v, &wb, 1e-6, &out, &err) == 0);
	CHECK(tir_k_rmsnorm(&v, &w, 1e-6, &out, &err) == -TIR_ETYPE);   /* [7] vs D = 3 */
	tir_tensor_release(&out);
	tir_tensor_release(&wb);
	tir_tensor_release(&w3);
	tir_tensor_release(&v);
	/* a constant row: variance 0, result is the bias */
	for (int64_t i = 0; i < 7; i++)
		set(&x, i, 5);
	check_norm(&x, &w, &b, 1e-5, tol);
	tir_tensor_release(&x);
	tir_tensor_release(&w);
	tir_tensor_release(&b);
}

/* ---- conv2d, pooling ---- */

static void check_conv(const struct tir_tensor *x, const struct tir_tensor *w,
		       const struct tir_tensor *bias, int64_t sh, int64_t sw, int64_t ph,
		       int64_t pw, double tol)
{
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
	int64_t o = w->shape[0], kh = w->shape[2], kw = w->shape[3];
	int64_t oh = (h + 2 * ph - kh) / sh + 1, ow = (wd + 2 * pw - kw) / sw + 1;
	struct tir_tensor out;
	alloc(&out, x->dtype, 4, (int64_t[]){ n, o, oh, ow });
	CHECK(tir_k_conv2d(x, w, bias, (int64_t[]){ sh, sw }, (int64_t[]){ ph, pw }, &out,
			   &err) == 0);
	int64_t bad = 0;
	for (int64_t i0 = 0; i0 < n; i0++)
	for (int64_t f = 0; f < o; f++)
	for (int64_t y = 0; y < oh; y++)
	for (int64_t xx = 0; xx < ow; xx++) {
		double ref = bias ? tir_tensor_get_f64(bias, f) : 0, mag = fabs(ref);
		for (int64_t ch = 0; ch < c; ch++)
		for (int64_t i = 0; i < kh; i++)
		for (int64_t j = 0; j < kw; j++) {
			int64_t iy = y * sh - ph + i, ix = xx * sw - pw + j;
			if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
				continue;
			double t = get(x, (int64_t[]){ i0, ch, iy, ix }) *
				   get(w, (int64_t[]){ f, ch, i, j });
			ref += t;
			mag += fabs(t);
		}
		double got = get(&out, (int64_t[]){ i0, f, y, xx });
		if (!(fabs(got - ref) <= tol * (1 + mag)))
			bad++;
	}
	CHECK(bad == 0);
	tir_tensor_release(&out);
}

static void test_conv(enum tir_dtype dt)
{
	double tol = dt == TIR_DTYPE_F32 ? 1e-5 : 1e-12;
	struct tir_tensor x, w, b, v = { 0 }, out;
	rnd(&x, dt, 4, (int64_t[]){ 2, 3, 7, 6 }, 1);
	rnd(&w, dt, 4, (int64_t[]){ 4, 3, 3, 3 }, 1);
	rnd(&b, dt, 1, (int64_t[]){ 4 }, 1);
	check_conv(&x, &w, &b, 2, 2, 1, 1, tol);
	check_conv(&x, &w, NULL, 1, 2, 0, 1, tol);
	check_conv(&x, &w, &b, 3, 1, 2, 0, tol);
	/* a strided input (H and W swapped) and a strided weight */
	tir_view_transpose(&x, (int[]){ 0, 1, 3, 2 }, &v);
	check_conv(&v, &w, &b, 2, 2, 1, 1, tol);
	tir_tensor_release(&v);
	tir_view_transpose(&w, (int[]){ 0, 1, 3, 2 }, &v);
	check_conv(&x, &v, &b, 1, 1, 1, 1, tol);
	tir_tensor_release(&v);
	/* errors: channel mismatch, kernel larger than the padded input */
	struct tir_tensor w2;
	rnd(&w2, dt, 4, (int64_t[]){ 4, 2, 3, 3 }, 1);
	alloc(&out, dt, 4, (int64_t[]){ 2, 4, 4, 3 });
	CHECK(tir_k_conv2d(&x, &w2, NULL, (int64_t[]){ 2, 2 }, (int64_t[]){ 1, 1 }, &out,
			   &err) == -TIR_ETYPE);
	tir_tensor_release(&w2);
	rnd(&w2, dt, 4, (int64_t[]){ 4, 3, 9, 3 }, 1);
	CHECK(tir_k_conv2d(&x, &w2, NULL, (int64_t[]){ 2, 2 }, (int64_t[]){ 0, 0 }, &out,
			   &err) == -TIR_ETYPE);
	CHECK(tir_k_conv2d(&x, &w, NULL, (int64_t[]){ 0, 2 }, (int64_t[]){ 1, 1 }, &out,
			   &err) == -TIR_ETYPE);
	CHECK(tir_k_conv2d(&x, &w, NULL, (int64_t[]){ 2, 2 }, (int64_t[]){ 0, 0 }, &out,
			   &err) == -TIR_ETYPE);          /* out is the padded shape */
	tir_tensor_release(&w2);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
	tir_tensor_release(&w);
	tir_tensor_release(&b);

	/* columns past the 64 MiB scratch bound (576 taps x 65536 positions in
	 * f32, 37.7M elements): the kernel works in blocks of positions */
	if (dt == TIR_DTYPE_F32) {
		rnd(&x, dt, 4, (int64_t[]){ 1, 64, 256, 256 }, 1);
		rnd(&w, dt, 4, (int64_t[]){ 1, 64, 3, 3 }, 1);
		check_conv(&x, &w, NULL, 1, 1, 1, 1, tol);
		tir_tensor_release(&x);
		tir_tensor_release(&w);
	}
}

static void check_pool(bool max, const struct tir_tensor *x, int64_t kh, int64_t kw,
		       int64_t sh, int64_t sw, double tol)
{
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
	int64_t oh = (h - kh) / sh + 1, ow = (wd - kw) / sw + 1, bad = 0;
	struct tir_tensor out;
	alloc(&out, x->dtype, 4, (int64_t[]){ n, c, oh, ow });
	CHECK(tir_k_pool2d(max, x, (int64_t[]){ kh, kw }, (int64_t[]){ sh, sw }, &out,
			   &err) == 0);
	for (int64_t i0 = 0; i0 < n; i0++)
	for (int64_t ch = 0; ch < c; ch++)
	for (int64_t y = 0; y < oh; y++)
	for (int64_t xx = 0; xx < ow; xx++) {
		double m = -INFINITY, s = 0;
		for (int64_t i = 0; i < kh; i++)
		for (int64_t j = 0; j < kw; j++) {
			double e = get(x, (int64_t[]){ i0, ch, y * sh + i, xx * sw + j });
			m = isnan(e) || isnan(m) ? NAN : fmax(m, e);
			s += e;
		}
		double ref = max ? m : s / (double)(kh * kw);
		double got = get(&out, (int64_t[]){ i0, ch, y, xx });
		if (!(fabs(got - ref) <= tol * (1 + fabs(ref)) || (isnan(got) && isnan(ref))))
			bad++;
	}
	CHECK(bad == 0);
	tir_tensor_release(&out);
}

static void test_pool(enum tir_dtype dt)
{
	double tol = dt == TIR_DTYPE_F32 ? 1e-6 : 1e-13;
	struct tir_tensor x, v = { 0 }, out;
	rnd(&x, dt, 4, (int64_t[]){ 2, 3, 5, 7 }, 1);
	for (int max = 0; max < 2; max++) {
		check_pool(max, &x, 2, 3, 2, 2, tol);
		check_pool(max, &x, 2, 2, 2, 2, tol);
		check_pool(max, &x, 3, 1, 1, 3, tol);
		check_pool(max, &x, 5, 7, 5, 7, tol);
	}
	tir_view_transpose(&x, (int[]){ 1, 0, 3, 2 }, &v);   /* [3, 2, 7, 5] */
	check_pool(true, &v, 3, 2, 2, 1, tol);
	check_pool(false, &v, 3, 2, 2, 1, tol);
	tir_tensor_release(&v);
	/* NaN propagates through max, wherever it sits in the window */
	set(&x, 8, NAN);                                     /* [0, 0, 1, 1] */
	check_pool(true, &x, 2, 2, 2, 2, tol);
	alloc(&out, dt, 4, (int64_t[]){ 2, 3, 2, 3 });
	CHECK(tir_k_pool2d(true, &x, (int64_t[]){ 2, 2 }, (int64_t[]){ 2, 2 }, &out, &err) == 0);
	CHECK(isnan(tir_tensor_get_f64(&out, 0)));
	CHECK(!isnan(tir_tensor_get_f64(&out, 1)));
	set(&x, 0, NAN);                                     /* first in its window */
	check_pool(true, &x, 2, 2, 2, 2, tol);
	/* errors: kernel larger than the input, zero kernel */
	CHECK(tir_k_pool2d(true, &x, (int64_t[]){ 6, 2 }, (int64_t[]){ 2, 2 }, &out, &err) ==
	      -TIR_ETYPE);
	CHECK(tir_k_pool2d(false, &x, (int64_t[]){ 0, 2 }, (int64_t[]){ 2, 2 }, &out, &err) ==
	      -TIR_ETYPE);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
}

/* ---- attention ---- */

static void check_attention(const struct tir_tensor *q, const struct tir_tensor *k,
			    const struct tir_tensor *v, bool causal, double tol)
{
	int r = q->rank;
	int64_t lq = q->shape[r - 2], d = q->shape[r - 1], lk = k->shape[r - 2];
	int64_t dv = v->shape[r - 1];
	int64_t oshape[TIR_MAX_RANK];
	for (int i = 0; i < r - 2; i++) {
		oshape[i] = q->shape[i];
		if (k->shape[i] > oshape[i])
			oshape[i] = k->shape[i];
		if (v->shape[i] > oshape[i])
			oshape[i] = v->shape[i];
	}
	oshape[r - 2] = lq;
	oshape[r - 1] = dv;
	struct tir_tensor out, qb = { 0 }, kb = { 0 }, vb = { 0 };
	alloc(&out, q->dtype, r, oshape);
	CHECK(tir_k_attention(q, k, v, causal, &out, &err) == 0);
	int64_t sh[TIR_MAX_RANK];
	memcpy(sh, oshape, sizeof sh);
	sh[r - 1] = d;
	tir_view_broadcast(q, r, sh, &qb);
	sh[r - 2] = lk;
	tir_view_broadcast(k, r, sh, &kb);
	sh[r - 1] = dv;
	tir_view_broadcast(v, r, sh, &vb);

	int64_t batches = tir_tensor_numel(&out) / (lq * dv), bad = 0;
	int64_t ix[TIR_MAX_RANK], iy[TIR_MAX_RANK];
	double *p = malloc((size_t)lk * sizeof *p);
	for (int64_t t = 0; t < batches; t++) {
		int64_t rem = t;
		for (int i = r - 3; i >= 0; i--) {
			ix[i] = rem % oshape[i];
			rem /= oshape[i];
		}
		memcpy(iy, ix, sizeof iy);
		for (int64_t i = 0; i < lq; i++) {
			double mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < lk; j++) {
				double s = 0;
				for (int64_t e = 0; e < d; e++) {
					ix[r - 2] = i, ix[r - 1] = e;
					iy[r - 2] = j, iy[r - 1] = e;
					s += get(&qb, ix) * get(&kb, iy);
				}
				p[j] = causal && j > i ? -INFINITY : s / sqrt((double)d);
				mx = fmax(mx, p[j]);
			}
			for (int64_t j = 0; j < lk; j++)
				sum += p[j] = exp(p[j] - mx);
			for (int64_t e = 0; e < dv; e++) {
				double ref = 0;
				for (int64_t j = 0; j < lk; j++) {
					iy[r - 2] = j, iy[r - 1] = e;
					ref += p[j] / sum * get(&vb, iy);
				}
				double got = tir_tensor_get_f64(&out, (t * lq + i) * dv + e);
				if (!(fabs(got - ref) <= tol * (1 + fabs(ref))))
					bad++;
			}
		}
	}
	CHECK(bad == 0);
	free(p);
	tir_tensor_release(&qb);
	tir_tensor_release(&kb);
	tir_tensor_release(&vb);
	tir_tensor_release(&out);
}

static void test_attention(enum tir_dtype dt)
{
	double tol = dt == TIR_DTYPE_F32 ? 1e-5 : 1e-12;
	struct tir_tensor q, k, v, kb = { 0 }, vt = { 0 }, out;
	rnd(&q, dt, 4, (int64_t[]){ 2, 3, 5, 4 }, 2);
	rnd(&k, dt, 4, (int64_t[]){ 2, 1, 6, 4 }, 2);
	rnd(&v, dt, 4, (int64_t[]){ 2, 3, 6, 3 }, 1);
	for (int causal = 0; causal < 2; causal++) {
		check_attention(&q, &k, &v, causal, tol);
		/* k's head axis broadcast by a stride-0 view, as the executor does */
		tir_view_broadcast(&k, 4, (int64_t[]){ 2, 3, 6, 4 }, &kb);
		check_attention(&q, &kb, &v, causal, tol);
		tir_tensor_release(&kb);
	}
	/* k and v packed in groups of 1, 2 and 5 of the 6 entries (as a head
	 * too large for the cache is): the bytes of one group, every thread
	 * count */
	alloc(&out, dt, 4, (int64_t[]){ 2, 3, 5, 3 });
	struct tir_tensor again;
	alloc(&again, dt, 4, (int64_t[]){ 2, 3, 5, 3 });
	size_t obytes = (size_t)tir_tensor_numel(&out) * tir_dtype_size(dt);
	int threads0 = tir_pool_threads();
	CHECK(tir_k_attention(&q, &k, &v, false, &out, &err) == 0);
	for (int64_t grp = 1; grp <= 5; grp += grp == 1 ? 1 : 3)
		for (int th = 1; th <= 3; th += 2) {
			tir_attention_test_group(grp);
			tir_set_threads(th);
			memset(tir_tensor_data(&again), 0, obytes);
			CHECK(tir_k_attention(&q, &k, &v, false, &again, &err) == 0);
			CHECK(memcmp(tir_tensor_data(&out), tir_tensor_data(&again), obytes) == 0);
		}
	tir_attention_test_group(0);
	tir_set_threads(threads0);
	tir_tensor_release(&again);
	tir_tensor_release(&out);
	/* a transposed v and self-attention sizes */
	struct tir_tensor v2, q2;
	rnd(&v2, dt, 3, (int64_t[]){ 2, 8, 7 }, 1);
	rnd(&q2, dt, 3, (int64_t[]){ 2, 7, 5 }, 1);
	tir_view_transpose(&v2, (int[]){ 0, 2, 1 }, &vt);    /* [2, 7, 8] */
	check_attention(&q2, &q2, &vt, true, tol);
	check_attention(&q2, &q2, &vt, false, tol);
	/* causal: the first query sees only the first key */
	alloc(&out, dt, 3, (int64_t[]){ 2, 7, 8 });
	CHECK(tir_k_attention(&q2, &q2, &vt, true, &out, &err) == 0);
	CHECK_NEAR(tir_tensor_get_f64(&out, 3), get(&vt, (int64_t[]){ 0, 0, 3 }), tol);
	CHECK(tir_k_attention(&q2, &v2, &vt, true, &out, &err) == -TIR_ETYPE);
	tir_tensor_release(&out);
	tir_tensor_release(&vt);
	tir_tensor_release(&v2);
	tir_tensor_release(&q2);
	/* large scores stay finite */
	for (int64_t i = 0; i < tir_tensor_numel(&q); i++)
		set(&q, i, tir_tensor_get_f64(&q, i) * 1000);
	check_attention(&q, &k, &v, false, tol);
	tir_tensor_release(&q);
	tir_tensor_release(&k);
	tir_tensor_release(&v);
}

int main(void)
{
	tir_set_threads(2);
	CHECK(strlen(tir_blas_info()) > 0);
	size_t before = tir_mem_current();

	test_matmul_float(TIR_DTYPE_F32);
	test_matmul_float(TIR_DTYPE_F64);
	test_matmul_int();
	test_softmax(TIR_DTYPE_F32);
	test_softmax(TIR_DTYPE_F64);
	test_norm(TIR_DTYPE_F32);
	test_norm(TIR_DTYPE_F64);
	test_conv(TIR_DTYPE_F32);
	test_conv(TIR_DTYPE_F64);
	test_pool(TIR_DTYPE_F32);
	test_pool(TIR_DTYPE_F64);
	test_attention(TIR_DTYPE_F32);
	test_attention(TIR_DTYPE_F64);

	CHECK(tir_mem_current() == before);   /* every tensor released */
	return check_report("test_nn");
}
