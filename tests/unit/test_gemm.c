/*
 * test_gemm.c — tir's gemm (gemm.c), through tir_gemm_run and the matmul
 * and conv2d kernels built on it, on the vector path this process uses
 * (tests/kernels.sh runs it under each TIR_VMATH).  Each result is
 * checked three ways:
 *  - against a long double reference within the bound of a sequential
 *    sum, (k + 2) * u * sum |a b| (u = 2^-24 f32, 2^-53 f64; the rounding
 *    of the reference itself is far below it);
 *  - on x86-64, bit for bit against the chain gemm.c documents, computed
 *    here one element at a time: c = c + a * b over k in order, with
 *    fmaf/fma on the AVX2 and AVX-512 paths and two roundings on SSE2 and
 *    scalar;
 *  - bit for bit across thread counts (1, 2, 3, 4, 7, 16, 64) and across
 *    tile sizes (the test hook), which must not change a bit.
 * An epilogue runs once on each element, on its final value, whatever
 * the threads, tiles and epilogue groups.  A product cut in slabs (the
 * test's small kept buffer) is the same, bit for bit.
 * Shapes: 1x1x1, k = 0, m = 1, n = 1, k = 1, tails in every dimension,
 * k several KC long; row-major, transposed and odd-strided operands,
 * accumulation into c; broadcast batch axes (a batch of a against one b,
 * folded, and both broadcast); a conv2d whose position blocks cut rows,
 * and one of a late layer's shape (columns shared, weights unpacked).
 */
#include "exec/exec.h"
#include "exec/half.h"
#include "exec/vmath.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 777;

static double frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) / (double)(1ull << 53) * 2 - 1;
}

static const int threads[] = { 1, 2, 3, 4, 7, 16, 64 };
#define NTHREADS ((int)(sizeof threads / sizeof threads[0]))

static bool fma_path(void)
{
	enum tir_vmath_path p = tir_vmath_path();
	return p == TIR_VMATH_AVX2 || p == TIR_VMATH_AVX512;
}

/* Element (i, j) of an operand at (rs, cs). */
static double at(enum tir_dtype dt, const void *p, int64_t rs, int64_t cs, int64_t i, int64_t j)
{
	int64_t o = i * rs + j * cs;
	return dt == TIR_DTYPE_F32 ? ((const float *)p)[o] : ((const double *)p)[o];
}

/* What gemm.c promises for one element, from c0: the chain, exactly. */
static double chain(enum tir_dtype dt, const struct tir_gemm *g, const void *a, const void *b,
		    int64_t i, int64_t j, double c0)
{
	bool f = fma_path();
	if (dt == TIR_DTYPE_F32) {
		float c = (float)c0;
		for (int64_t p = 0; p < g->k; p++) {
			float x = (float)at(dt, a, g->a_rs, g->a_cs, i, p);
			float y = (float)at(dt, b, g->b_rs, g->b_cs, p, j);
			if (f) {
				c = fmaf(x, y, c);
			} else {
				float t = x * y;
				c = c + t;
			}
		}
		return c;
	}
	double c = c0;
	for (int64_t p = 0; p < g->k; p++) {
		double x = at(dt, a, g->a_rs, g->a_cs, i, p), y = at(dt, b, g->b_rs, g->b_cs, p, j);
		if (f) {
			c = fma(x, y, c);
		} else {
			double t = x * y;
			c = c + t;
		}
	}
	return c;
}

/* An operand of rows x cols in a buffer of its own, laid out as asked:
 * 0 row-major, 1 transposed, 2 odd strides (rows 3 cols + 1 apart,
 * columns 2 apart... a spread-out view). */
static void *operand(enum tir_dtype dt, int64_t rows, int64_t cols, int layout, int64_t *rs,
		     int64_t *cs)
{
	int64_t es = (int64_t)tir_dtype_size(dt), span;
	switch (layout) {
	case 0: *rs = cols; *cs = 1; break;
	case 1: *rs = 1; *cs = rows; break;
	default: *cs = 2; *rs = 2 * cols + 3; break;
	}
	span = (rows - 1) * *rs + (cols - 1) * *cs + 1;
	if (rows == 0 || cols == 0)
		span = 1;
	char *p = malloc((size_t)(span * es));
	for (int64_t e = 0; e < span; e++) {
		double v = frand();
		if (dt == TIR_DTYPE_F32)
			((float *)p)[e] = (float)v;
		else
			((double *)p)[e] = v;
	}
	return p;
}

/* Runs g (c: m x n, ldc = n), checks against the reference and the
 * chain; c0, when not NULL, is c's starting value (g->acc). */
static void check_one(struct tir_gemm *g, const void *c0)
{
	enum tir_dtype dt = g->dt;
	int64_t es = (int64_t)tir_dtype_size(dt), m = g->m, n = g->n, k = g->k;
	size_t bytes = (size_t)(m * n * es);
	char *c = malloc(bytes ? bytes : 1);
	if (c0)
		memcpy(c, c0, bytes);
	else
		memset(c, 0x7f, bytes);             /* garbage a missed element keeps */
	g->c = c;
	g->ldc = n;
	struct tir_err err = { 0 };
	CHECK(tir_gemm_run(g, &err) == 0);
	double u = dt == TIR_DTYPE_F32 ? 0x1p-24 : 0x1p-53;
	int64_t bad_ref = 0, bad_chain = 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double start = c0 ? at(dt, c0, n, 1, i, j) : 0;
			long double ref = start, mag = fabs(start);
			for (int64_t p = 0; p < k; p++) {
				long double t = (long double)at(dt, g->a, g->a_rs, g->a_cs, i, p) *
						at(dt, g->b, g->b_rs, g->b_cs, p, j);
				ref += t;
				mag += fabsl(t);
			}
			double got = at(dt, c, n, 1, i, j);
			if (!(fabsl(got - ref) <= (long double)(k + 2) * u * mag))
				bad_ref++;
#if defined(__x86_64__)
			double want = chain(dt, g, g->a, g->b, i, j, start);
			if (memcmp(&got, &want, sizeof got) != 0)
				bad_chain++;
#endif
		}
	if (bad_ref || bad_chain)
		fprintf(stderr, "gemm %s %lldx%lldx%lld (a %lld,%lld b %lld,%lld%s): %lld off the reference, %lld off the chain\n",
			tir_dtype_name(dt), (long long)m, (long long)n, (long long)k,
			(long long)g->a_rs, (long long)g->a_cs, (long long)g->b_rs,
			(long long)g->b_cs, g->acc ? ", acc" : "", (long long)bad_ref,
			(long long)bad_chain);
	CHECK(bad_ref == 0);
	CHECK(bad_chain == 0);
	free(c);
}

/* a [m, k] in layout la @ b [k, n] in lb, into c; when both are
 * row-major also added to a c that holds values (c += a @ b) */
static void check_product(enum tir_dtype dt, int64_t m, int64_t n, int64_t k, int la, int lb)
{
	struct tir_gemm g = { .dt = dt, .m = m, .n = n, .k = k };
	void *a = operand(dt, m, k, la, &g.a_rs, &g.a_cs);
	void *b = operand(dt, k, n, lb, &g.b_rs, &g.b_cs);
	g.a = a;
	g.b = b;
	check_one(&g, NULL);
	if (la == 0 && lb == 0) {
		int64_t rs, cs;
		void *c0 = operand(dt, m, n, 0, &rs, &cs);
		g.acc = true;
		check_one(&g, c0);
		free(c0);
	}
	free(a);
	free(b);
}

static void test_shapes(enum tir_dtype dt)
{
	static const int64_t shapes[][3] = {
		{ 1, 1, 1 }, { 1, 1, 0 }, { 3, 5, 0 }, { 1, 100, 50 }, { 100, 1, 50 },
		{ 37, 41, 1 }, { 12, 32, 192 }, { 13, 33, 7 }, { 25, 65, 193 },
		{ 5, 7, 1000 }, { 6, 16, 64 }, { 61, 97, 385 }, { 2, 3, 2100 },
	};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int la = 0; la < 3; la++)
			for (int lb = 0; lb < 3; lb++) {
				int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
				/* every layout pair on the small shapes, fewer on the large */
				if (m * n * k > 100000 && la != lb && la + lb != 1)
					continue;
				check_product(dt, m, n, k, la, lb);
			}
}

/* Every bottom edge: m from 1 to 25 covers each R-row edge kernel of
 * every path (MR 4, 6, 12), in place (n a multiple of every NR) and on
 * a copy (n not), with k across a k-block, into c and added to it. */
static void test_edges(enum tir_dtype dt)
{
	for (int64_t m = 1; m <= 25; m++)
		for (int64_t n = 32; n <= 33; n++)
			check_product(dt, m, n, m == 25 ? 1601 : 70, 0, 0);
}

/* The same product at every thread count and with several tile sizes:
 * one result, bit for bit. */
static void test_invariance(enum tir_dtype dt, int la, int lb)
{
	int64_t m = 103, n = 150, k = 301;
	int64_t es = (int64_t)tir_dtype_size(dt);
	struct tir_gemm g = { .dt = dt, .m = m, .n = n, .k = k, .ldc = n };
	void *a = operand(dt, m, k, la, &g.a_rs, &g.a_cs);
	void *b = operand(dt, k, n, lb, &g.b_rs, &g.b_cs);
	g.a = a;
	g.b = b;
	size_t bytes = (size_t)(m * n * es);
	char *first = malloc(bytes), *c = malloc(bytes);
	/* tile rows, columns, and the kept buffer's size (0: the real one;
	 * 1: slabs of one panel of each operand) */
	static const int64_t tiles[][3] = { { 0, 0, 0 }, { 1, 1, 0 }, { 12, 32, 0 }, { 13, 5, 0 },
					    { 64, 1000, 0 }, { 1000, 64, 0 }, { 1000, 1000, 0 },
					    { 0, 0, 1 }, { 0, 0, 60000 }, { 13, 5, 150000 } };
	int differ = 0, runs = 0;
	for (int t = 0; t < NTHREADS; t++) {
		tir_set_threads(threads[t]);
		for (size_t s = 0; s < sizeof tiles / sizeof tiles[0]; s++) {
			struct tir_err err = { 0 };
			g.c = runs ? c : first;
			g.tile_m = tiles[s][0];
			g.tile_n = tiles[s][1];
			g.slab_bytes = tiles[s][2];
			memset(g.c, 0x55, bytes);
			CHECK(tir_gemm_run(&g, &err) == 0);
			if (runs++ && memcmp(first, c, bytes))
				differ++;
		}
	}
	tir_set_threads(1);
	if (differ)
		fprintf(stderr, "gemm %s layouts %d %d: %d of %d runs differ from the first\n",
			tir_dtype_name(dt), la, lb, differ, runs);
	CHECK(differ == 0);
	g.c = NULL;
	g.tile_m = g.tile_n = g.slab_bytes = 0;
	check_one(&g, NULL);
	free(first);
	free(c);
	free(a);
	free(b);
}

/* An epilogue as a matmul passes it: elements [i0, i0 + n) of the
 * contiguous output, c = c * 2 + 1 (exact in binary), and a count of the
 * calls on each element. */
struct epi_ctx {
	enum tir_dtype dt;
	void *c;
	int *seen;
};

static int epi_twice(void *ctx, int64_t i0, int64_t n)
{
	struct epi_ctx *x = ctx;
	for (int64_t i = i0; i < i0 + n; i++) {
		__atomic_add_fetch(&x->seen[i], 1, __ATOMIC_RELAXED);
		if (x->dt == TIR_DTYPE_F32)
			((float *)x->c)[i] = ((float *)x->c)[i] * 2 + 1;
		else
			((double *)x->c)[i] = ((double *)x->c)[i] * 2 + 1;
	}
	return 0;
}

/* The epilogue runs once on every element, after its last k-block: the
 * result is the product's, then the epilogue's, bit for bit, at every
 * thread count, tile size (tiles spanning whole rows or not) and size of
 * epilogue group (a tile, several, the last one short, whole rows) and
 * slabs (rows, columns, both), also with batch entries (each its own c). */
static void test_epilogue(enum tir_dtype dt, int64_t batches)
{
	int64_t m = 103, n = 150, k = 301;
	int64_t es = (int64_t)tir_dtype_size(dt), total = batches * m * n;
	struct tir_gemm g = { .dt = dt, .m = m, .n = n, .k = k, .ldc = n, .c_batch = m * n };
	void *a = operand(dt, batches * m, k, 0, &g.a_rs, &g.a_cs);
	void *b = operand(dt, k, n, 0, &g.b_rs, &g.b_cs);
	g.a = a;
	g.b = b;
	if (batches > 1) {
		g.nb = 1;
		g.shape[0] = batches;
		g.as[0] = m * k;
		g.bs[0] = 0;
	}
	size_t bytes = (size_t)(total * es);
	char *want = malloc(bytes), *c = malloc(bytes);
	int *seen = malloc((size_t)total * sizeof *seen);
	struct tir_err err = { 0 };
	g.c = want;
	CHECK(tir_gemm_run(&g, &err) == 0);
	for (int64_t i = 0; i < total; i++)
		if (dt == TIR_DTYPE_F32)
			((float *)want)[i] = ((float *)want)[i] * 2 + 1;
		else
			((double *)want)[i] = ((double *)want)[i] * 2 + 1;
	struct epi_ctx x = { .dt = dt, .c = c, .seen = seen };
	g.c = c;
	g.epi = epi_twice;
	g.epi_ctx = &x;
	/* tile rows, columns, tiles per epilogue group (0: chosen) and the
	 * kept buffer's size (0: the real one; else slabs) */
	static const int64_t tiles[][4] = { { 0, 0, 0, 0 }, { 12, 32, 0, 0 }, { 12, 32, 1, 0 },
					    { 12, 32, 2, 0 }, { 13, 5, 3, 0 }, { 13, 5, 1000, 0 },
					    { 24, 1000, 0, 0 }, { 1000, 64, 1, 0 }, { 0, 0, 0, 1 },
					    { 0, 0, 0, 60000 }, { 12, 32, 2, 150000 } };
	int differ = 0, miscount = 0, runs = 0;
	for (int t = 0; t < NTHREADS; t++) {
		tir_set_threads(threads[t]);
		for (size_t s = 0; s < sizeof tiles / sizeof tiles[0]; s++) {
			g.tile_m = tiles[s][0];
			g.tile_n = tiles[s][1];
			g.epi_group = tiles[s][2];
			g.slab_bytes = tiles[s][3];
			memset(c, 0x55, bytes);
			memset(seen, 0, (size_t)total * sizeof *seen);
			CHECK(tir_gemm_run(&g, &err) == 0);
			runs++;
			if (memcmp(want, c, bytes))
				differ++;
			for (int64_t i = 0; i < total; i++)
				if (seen[i] != 1) {
					miscount++;
					break;
				}
		}
	}
	tir_set_threads(1);
	if (differ || miscount)
		fprintf(stderr, "gemm %s epilogue, %lld batches: %d of %d runs differ, %d miscount\n",
			tir_dtype_name(dt), (long long)batches, differ, runs, miscount);
	CHECK(differ == 0);
	CHECK(miscount == 0);
	free(want);
	free(c);
	free(seen);
	free(a);
	free(b);
}

static void fill_tensor(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape)
{
	struct tir_err err = { 0 };
	CHECK(tir_tensor_alloc(t, dt, rank, shape, false, &err) == 0);
	for (int64_t i = 0; i < tir_tensor_numel(t); i++) {
		if (dt == TIR_DTYPE_F32)
			((float *)tir_tensor_data(t))[i] = (float)frand();
		else
			((double *)tir_tensor_data(t))[i] = frand();
	}
}

/* Batched matmul with broadcast batch axes through tir_k_matmul: each
 * batch entry is the chain of its own a and b, and the whole is the same
 * at every thread count; where the machine's default puts float products
 * on OpenBLAS (a vector path below AVX2, TIR_GEMM unset: tests/run.sh sets
 * it, a hand run may not), each entry within the bound of the reference
 * only: OpenBLAS sums in its own order. */
static void test_batched(enum tir_dtype dt, const int64_t *as, const int64_t *bs, int rank)
{
	struct tir_tensor a, b, out, first;
	struct tir_err err = { 0 };
	int64_t os[4];
	fill_tensor(&a, dt, rank, as);
	fill_tensor(&b, dt, rank, bs);
	for (int d = 0; d < rank - 2; d++)
		os[d] = as[d] > bs[d] ? as[d] : bs[d];
	int64_t m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
	os[rank - 2] = m;
	os[rank - 1] = n;
	CHECK(tir_tensor_alloc(&out, dt, rank, os, false, &err) == 0);
	CHECK(tir_tensor_alloc(&first, dt, rank, os, false, &err) == 0);
	size_t bytes = (size_t)tir_tensor_numel(&out) * tir_dtype_size(dt);
	int differ = 0;
	for (int t = 0; t < NTHREADS; t++) {
		tir_set_threads(threads[t]);
		struct tir_tensor *o = t ? &out : &first;
		memset(tir_tensor_data(o), 0x55, bytes);
		CHECK(tir_k_matmul(&a, &b, o, &err) == 0);
		if (t && memcmp(tir_tensor_data(&first), tir_tensor_data(&out), bytes))
			differ++;
	}
	tir_set_threads(1);
	bool own = tir_gemm_kind() == TIR_GEMM_TIR;
	CHECK(differ == 0 || !own);
	/* each entry against check_one's reference and chain */
	int64_t batches = tir_tensor_numel(&out) / (m * n), es = (int64_t)tir_dtype_size(dt);
	int64_t bad = 0;
	for (int64_t e = 0; e < batches; e++) {
		int64_t ao = 0, bo = 0, r = e, amul = 1, bmul = 1;
		for (int d = rank - 3; d >= 0; d--) {
			int64_t x = r % os[d];
			r /= os[d];
			ao += (as[d] == 1 ? 0 : x) * amul;
			bo += (bs[d] == 1 ? 0 : x) * bmul;
			amul *= as[d];
			bmul *= bs[d];
		}
		struct tir_gemm g = {
			.dt = dt, .m = m, .n = n, .k = k,
			.a = (char *)tir_tensor_data(&a) + ao * m * k * es, .a_rs = k, .a_cs = 1,
			.b = (char *)tir_tensor_data(&b) + bo * k * n * es, .b_rs = n, .b_cs = 1,
		};
		const char *got = (const char *)tir_tensor_data(&first) + e * m * n * es;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double want = chain(dt, &g, g.a, g.b, i, j, 0);
				double v = at(dt, got, n, 1, i, j);
				long double ref = 0;
				for (int64_t p = 0; p < k; p++)
					ref += (long double)at(dt, g.a, k, 1, i, p) * at(dt, g.b, n, 1, p, j);
				if (fabsl(v - ref) > (long double)(k + 2) * (dt == TIR_DTYPE_F32 ? 0x1p-24 : 0x1p-53) * (long double)k)
					bad++;
#if defined(__x86_64__)
				if (own && memcmp(&v, &want, sizeof v))
					bad++;
#endif
			}
	}
	CHECK(bad == 0);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	tir_tensor_release(&out);
	tir_tensor_release(&first);
}

/* conv2d on a plane its position blocks cut mid-row, with a bias; and
 * with 130 channels (1170 taps: more than one k-block of them) and none;
 * and a late layer's shape, o filters (130: an edge panel of them) over a
 * 7 x 7 plane (its columns shared by tiles, the weights read where they
 * lie on AVX-512): the same bits at every thread count, and near a
 * double reference. */
static void test_conv(enum tir_dtype dt, int64_t c, int64_t h, int64_t wd, bool with_bias, int64_t o)
{
	struct tir_tensor x, w, bias, out, first;
	struct tir_err err = { 0 };
	int64_t n = 2;
	fill_tensor(&x, dt, 4, (int64_t[]){ n, c, h, wd });
	fill_tensor(&w, dt, 4, (int64_t[]){ o, c, 3, 3 });
	fill_tensor(&bias, dt, 1, (int64_t[]){ o });
	int64_t os[4] = { n, o, h, wd };
	CHECK(tir_tensor_alloc(&out, dt, 4, os, false, &err) == 0);
	CHECK(tir_tensor_alloc(&first, dt, 4, os, false, &err) == 0);
	size_t bytes = (size_t)tir_tensor_numel(&out) * tir_dtype_size(dt);
	int differ = 0;
	for (int t = 0; t < NTHREADS; t++) {
		tir_set_threads(threads[t]);
		struct tir_tensor *dst = t ? &out : &first;
		CHECK(tir_k_conv2d(&x, &w, with_bias ? &bias : NULL, (int64_t[]){ 1, 1 },
				   (int64_t[]){ 1, 1 }, dst, &err) == 0);
		if (t && memcmp(tir_tensor_data(&first), tir_tensor_data(&out), bytes))
			differ++;
	}
	tir_set_threads(1);
	CHECK(differ == 0);
	int64_t bad = 0;
	double u = dt == TIR_DTYPE_F32 ? 0x1p-24 : 0x1p-53;
	for (int64_t i0 = 0; i0 < n; i0++)
		for (int64_t f = 0; f < o; f++)
			for (int64_t y = 0; y < h; y++)
				for (int64_t xx = 0; xx < wd; xx++) {
					double ref = with_bias ? tir_tensor_get_f64(&bias, f) : 0;
					double mag = fabs(ref);
					for (int64_t ch = 0; ch < c; ch++)
						for (int64_t i = 0; i < 3; i++)
							for (int64_t j = 0; j < 3; j++) {
								int64_t iy = y - 1 + i, ix = xx - 1 + j;
								if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
									continue;
								double t = tir_tensor_get_f64(&x, ((i0 * c + ch) * h + iy) * wd + ix) *
									   tir_tensor_get_f64(&w, ((f * c + ch) * 3 + i) * 3 + j);
								ref += t;
								mag += fabs(t);
							}
					double got = tir_tensor_get_f64(&first, ((i0 * o + f) * h + y) * wd + xx);
					if (!(fabs(got - ref) <= (c * 9 + 2) * u * mag))
						bad++;
				}
	CHECK(bad == 0);
	tir_tensor_release(&x);
	tir_tensor_release(&w);
	tir_tensor_release(&bias);
	tir_tensor_release(&out);
	tir_tensor_release(&first);
}

/* Operands stored as bf16 or f16 (or one of each with f32): each element
 * against a long double reference of the widened values, within the
 * bound of a sequential sum (k + 2) * 2^-24 * sum |a b| (the bf16 pair
 * kernel sums a pair's two exact products, then adds: inside it); bit
 * for bit across thread counts, tile sizes and a product cut in slabs;
 * odd k (a pair's second half past the end), transposed and strided
 * operands, tails in m and n.  And the same rounded to bf16 as the gemm
 * stores it (tir_gemm's out): tir_f2b of each f32 element, bit for bit. */
static void test_narrow(enum tir_dtype adt, enum tir_dtype bdt, int la, int lb)
{
	int64_t m = 77, n = 70, k = 801; /* 401 pairs: several k-blocks */
	struct tir_err err = { 0 };
	int64_t ars, acs, brs, bcs;
	float *af = operand(TIR_DTYPE_F32, m, k, la, &ars, &acs);
	float *bf = operand(TIR_DTYPE_F32, k, n, lb, &brs, &bcs);
	/* the same layouts in the narrow types (element offsets as the f32's) */
	int64_t aspan = (m - 1) * ars + (k - 1) * acs + 1, bspan = (k - 1) * brs + (n - 1) * bcs + 1;
	void *an = malloc((size_t)aspan * 4), *bn = malloc((size_t)bspan * 4);
	tir_cvt_run(adt, an, TIR_DTYPE_F32, af, 1, aspan);
	tir_cvt_run(bdt, bn, TIR_DTYPE_F32, bf, 1, bspan);
	tir_cvt_run(TIR_DTYPE_F32, af, adt, an, 1, aspan); /* the values the product reads */
	tir_cvt_run(TIR_DTYPE_F32, bf, bdt, bn, 1, bspan);
	float *c = calloc((size_t)(m * n), 4), *first = calloc((size_t)(m * n), 4);
	float *c2 = calloc((size_t)(m * n), 4);
	uint16_t *o = calloc((size_t)(m * n), 2);
	int bad = 0;
	for (int ti = 0; ti < NTHREADS; ti++) {
		tir_set_threads(threads[ti]);
		for (int slab = 0; slab < 2; slab++) {
			struct tir_gemm g = {
				.dt = TIR_DTYPE_F32, .a_dt = adt, .b_dt = bdt, .m = m, .n = n, .k = k,
				.a = adt == TIR_DTYPE_F32 ? (void *)af : an, .b = bdt == TIR_DTYPE_F32 ? (void *)bf : bn,
				.a_rs = ars, .a_cs = acs, .b_rs = brs, .b_cs = bcs, .c = c, .ldc = n,
				.slab_bytes = slab ? 4096 : 0, .tile_m = slab ? 1 : 0,
			};
			CHECK(tir_gemm_run(&g, &err) == 0);
			/* rounded to bf16 in the gemm's store (out): each element
			 * as tir_f2b rounds the f32 one, c a scratch */
			g.c = c2;
			g.out = o;
			CHECK(tir_gemm_run(&g, &err) == 0);
			for (int64_t i = 0; i < m * n; i++)
				bad += o[i] != tir_f2b(c[i]);
			if (ti == 0 && slab == 0) {
				memcpy(first, c, (size_t)(m * n) * 4);
				for (int64_t i = 0; i < m; i++)
					for (int64_t j = 0; j < n; j++) {
						long double r = 0, mag = 0;
						for (int64_t p = 0; p < k; p++) {
							long double t = (long double)af[i * ars + p * acs] * bf[p * brs + j * bcs];
							r += t;
							mag += fabsl(t);
						}
						bad += fabsl(c[i * n + j] - r) > (k + 2) * 0x1p-24L * mag;
					}
			} else {
				bad += memcmp(first, c, (size_t)(m * n) * 4) != 0;
			}
		}
	}
	tir_set_threads(1);
	if (bad)
		fprintf(stderr, "narrow %s @ %s (layouts %d %d): %d bad\n", tir_dtype_name(adt), tir_dtype_name(bdt),
			la, lb, bad);
	CHECK(bad == 0);
	free(af);
	free(bf);
	free(an);
	free(bn);
	free(c);
	free(c2);
	free(o);
	free(first);
}

/* The bf16 store on values that test its rounding: 1 @ b is b exactly
 * (one FMA or product of 1 and b, plus 0), so out must be tir_f2b(b):
 * ties to even both ways, the largest f32 (up to inf), NaNs (kept
 * quiet, sign and high payload), infinities, subnormals (not -0: 0 +
 * -0 is 0); 2 x 16 + 9 columns (the vector tails). */
static void test_round(void)
{
	static const uint32_t bits[] = {
		0x3f808000, 0x3f818000, 0x3f80ffff, 0x3f817fff, 0x7f7fffff, 0xff7fffff, 0x7f7f7fff,
		0x7fc00001, 0xff800001, 0x7f800001, 0x7f800000, 0xff800000, 0x00000001, 0x80008000,
		0x00018000, 0x00007fff, 0x80008001, 0x3f800000, 0xbf7fffff, 0x4049fdb0,
	};
	enum { N = 41 };
	float one = 1, b[N], c[N];
	uint16_t o[N];
	for (int j = 0; j < N; j++) {
		uint32_t u = bits[j % (sizeof bits / sizeof bits[0])] ^ (j >= 20 ? 0x80000000u : 0);
		memcpy(&b[j], &u, 4);
	}
	struct tir_gemm g = { .dt = TIR_DTYPE_F32, .m = 1, .n = N, .k = 1, .a = &one, .b = b, .a_rs = 1,
			      .a_cs = 1, .b_rs = N, .b_cs = 1, .c = c, .ldc = N, .out = o };
	struct tir_err err = { 0 };
	CHECK(tir_gemm_run(&g, &err) == 0);
	int bad = 0;
	for (int j = 0; j < N; j++)
		if (o[j] != tir_f2b(b[j]) && bad++ < 5)
			fprintf(stderr, "round: column %d: %#x is %#x, not %#x\n", j, (unsigned)bits[j % 20], o[j], tir_f2b(b[j]));
	CHECK(bad == 0);
}

/* bf16 operands rounded to bf16 (out) at depths of one k-block and of
 * several, edges in m and n: out is tir_f2b of the f32 product, bit for
 * bit, whether c is given or not (NULL: the gemm keeps its own sums where
 * it needs them); a product of one k-block on tir's gemm leaves c alone
 * (its tiles are rounded from registers or L1) and needs none (tir_gemm_needs_c). */
static void test_round_depths(void)
{
	static const int64_t shapes[][3] = { { 77, 70, 7 }, { 13, 5, 300 }, { 77, 70, 300 },
					     { 50, 37, 2500 }, { 1, 33, 2500 } };
	struct tir_err err = { 0 };
	int bad = 0;
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		int64_t ars, acs, brs, bcs;
		float *af = operand(TIR_DTYPE_F32, m, k, (int)s % 3, &ars, &acs);
		float *bf = operand(TIR_DTYPE_F32, k, n, 0, &brs, &bcs);
		int64_t aspan = (m - 1) * ars + (k - 1) * acs + 1, bspan = (k - 1) * brs + (n - 1) * bcs + 1;
		uint16_t *an = malloc((size_t)aspan * 2), *bn = malloc((size_t)bspan * 2);
		tir_cvt_run(TIR_DTYPE_BF16, an, TIR_DTYPE_F32, af, 1, aspan);
		tir_cvt_run(TIR_DTYPE_BF16, bn, TIR_DTYPE_F32, bf, 1, bspan);
		float *c = calloc((size_t)(m * n), 4), *c2 = malloc((size_t)(m * n) * 4);
		uint16_t *o = malloc((size_t)(m * n) * 2);
		for (int ti = 0; ti < NTHREADS; ti++) {
			tir_set_threads(threads[ti]);
			struct tir_gemm g = {
				.dt = TIR_DTYPE_F32, .a_dt = TIR_DTYPE_BF16, .b_dt = TIR_DTYPE_BF16, .m = m, .n = n,
				.k = k, .a = an, .b = bn, .a_rs = ars, .a_cs = acs, .b_rs = brs, .b_cs = bcs,
				.c = c, .ldc = n,
			};
			CHECK(tir_gemm_run(&g, &err) == 0);
			for (int with = 0; with < 2; with++) {
				memset(c2, 0xff, (size_t)(m * n) * 4);      /* NaNs, if read */
				memset(o, 0, (size_t)(m * n) * 2);
				g.c = with ? c2 : NULL;
				g.out = o;
				CHECK(tir_gemm_run(&g, &err) == 0);
				for (int64_t i = 0; i < m * n; i++)
					bad += o[i] != tir_f2b(c[i]);
				g.c = NULL;
				int need = tir_gemm_needs_c(&g, &err);
				CHECK(need >= 0);
				if (k <= 300 && with) {
					/* one k-block: c neither written nor needed */
					for (int64_t i = 0; i < m * n; i++)
						bad += ((uint32_t *)c2)[i] != 0xffffffffu;
					CHECK(tir_gemm_kind() != TIR_GEMM_TIR || need == 0);
				}
				if (k == 2500)
					CHECK(need == 1);
			}
		}
		tir_set_threads(1);
		if (bad)
			fprintf(stderr, "round depths [%lld, %lld] @ [%lld, %lld]: %d bad\n", (long long)m,
				(long long)k, (long long)k, (long long)n, bad);
		free(af);
		free(bf);
		free(an);
		free(bn);
		free(c);
		free(c2);
		free(o);
	}
	CHECK(bad == 0);
}

/* Operands widened as packed (bf16 to f32, gemm.c's pack_bf16 and
 * widen_rows) give the very bits of the f32 product on the widened
 * values: c, and out rounded to bf16 in the gemm's store (its full
 * tiles rounded from the kernel's registers, its edges from an L1
 * tile), by threads and by layouts that take each widening routine (a
 * row-major a: 4 x 8 blocks transposed, with 1, 2 or 3 rows past a
 * multiple of 4 at the bottom edge; a column-major one and a row-major
 * b: rows, several panels at a time; strided: by elements), shapes one
 * past and one short of panels (MR 4, 6, 12; NR 4, 8, 16, 32) and
 * depths past a k-block (KC 512 or 1024: 1025 and 1100 steps).  A
 * bf16 operand with an f32 one is always widened; two bf16 ones only
 * where no vdpbf16ps runs (widened: TIR_BF16=widen, another path, or a
 * CPU without AVX-512 BF16). */
static void test_widen_bits(void)
{
	static const int64_t shapes[][3] = { { 13, 33, 7 }, { 25, 65, 513 }, { 35, 31, 100 },
					     { 41, 97, 1025 }, { 11, 15, 1100 }, { 1, 40, 64 } };
	const char *e = getenv("TIR_BF16");
	bool pairs = strcmp(tir_vector_path(), "avx512") == 0 && !(e && !strcmp(e, "widen"));
#if defined(__x86_64__)
	pairs = pairs && TIR_CPU_HAS(AVX512_BF16, "avx512bf16");
#endif
	struct tir_err err = { 0 };
	int bad = 0, runs = 0;
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int lay = 0; lay < 9; lay++)
			for (int which = 0; which < 3; which++) {
				if (which == 2 && pairs)
					continue;
				int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
				int64_t ars, acs, brs, bcs;
				float *af = operand(TIR_DTYPE_F32, m, k, lay / 3, &ars, &acs);
				float *bf = operand(TIR_DTYPE_F32, k, n, lay % 3, &brs, &bcs);
				int64_t aspan = (m - 1) * ars + (k - 1) * acs + 1;
				int64_t bspan = (k - 1) * brs + (n - 1) * bcs + 1;
				uint16_t *an = malloc((size_t)aspan * 2), *bn = malloc((size_t)bspan * 2);
				tir_cvt_run(TIR_DTYPE_BF16, an, TIR_DTYPE_F32, af, 1, aspan);
				tir_cvt_run(TIR_DTYPE_BF16, bn, TIR_DTYPE_F32, bf, 1, bspan);
				tir_cvt_run(TIR_DTYPE_F32, af, TIR_DTYPE_BF16, an, 1, aspan);
				tir_cvt_run(TIR_DTYPE_F32, bf, TIR_DTYPE_BF16, bn, 1, bspan);
				bool wa = which != 1, wb = which != 0;  /* which operands are bf16 */
				float *c = malloc((size_t)(m * n) * 4), *c2 = malloc((size_t)(m * n) * 4);
				float *c3 = malloc((size_t)(m * n) * 4);
				uint16_t *o = malloc((size_t)(m * n) * 2), *o2 = malloc((size_t)(m * n) * 2);
				for (int ti = 0; ti < 3; ti++) {
					tir_set_threads(threads[ti]);
					struct tir_gemm f = {
						.dt = TIR_DTYPE_F32, .m = m, .n = n, .k = k, .a = af, .b = bf,
						.a_rs = ars, .a_cs = acs, .b_rs = brs, .b_cs = bcs, .c = c, .ldc = n,
					};
					struct tir_gemm w = f;
					w.a_dt = wa ? TIR_DTYPE_BF16 : TIR_DTYPE_F32;
					w.b_dt = wb ? TIR_DTYPE_BF16 : TIR_DTYPE_F32;
					w.a = wa ? (void *)an : af;
					w.b = wb ? (void *)bn : bf;
					w.c = c2;
					CHECK(tir_gemm_run(&f, &err) == 0);
					memset(c2, 0xff, (size_t)(m * n) * 4);
					CHECK(tir_gemm_run(&w, &err) == 0);
					bad += memcmp(c, c2, (size_t)(m * n) * 4) != 0;
					/* rounded in the store, with and without c (a
					 * scratch then: c keeps the f32 product) */
					f.out = o;
					f.c = c3;
					w.out = o2;
					w.c = ti == 1 ? NULL : c2;
					CHECK(tir_gemm_run(&f, &err) == 0);
					memset(o2, 0xff, (size_t)(m * n) * 2);
					CHECK(tir_gemm_run(&w, &err) == 0);
					bad += memcmp(o, o2, (size_t)(m * n) * 2) != 0;
					for (int64_t i = 0; i < m * n; i++)
						bad += o[i] != tir_f2b(c[i]);
					runs++;
				}
				if (bad)
					fprintf(stderr, "widen bits [%lld, %lld] @ [%lld, %lld] layouts %d %d, bf16 %d %d: %d bad\n",
						(long long)m, (long long)k, (long long)k, (long long)n, lay / 3, lay % 3, wa, wb, bad);
				free(af);
				free(bf);
				free(an);
				free(bn);
				free(c);
				free(c2);
				free(c3);
				free(o);
				free(o2);
				if (bad)
					goto out;
			}
out:
	tir_set_threads(1);
	CHECK(runs > 0 && bad == 0);
}

/* The form conv2d packs its columns in: conv2d's im2col (lib/exec/nn.c,
 * put_*) places a column in the panels of b by a shift and a mask, so
 * every kernel's NR must be a power of two (a 4 x 12 SSE2 kernel, tried,
 * gave wrong convolutions) */
static void test_form(enum tir_dtype dt)
{
	struct tir_gemm_form f;
	tir_gemm_form(dt, &f);
	CHECK(f.mr > 0 && f.nr > 0 && (f.nr & (f.nr - 1)) == 0);
	CHECK(f.kc >= 8 && f.kc % 8 == 0);
}

int main(void)
{
	fprintf(stderr, "test_gemm: path %s, %s\n", tir_vector_path(), tir_gemm_info());
	tir_set_threads(1);
	for (int f = 0; f < 2; f++) {
		enum tir_dtype dt = f ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
		test_form(dt);
		test_shapes(dt);
		test_edges(dt);
		test_invariance(dt, 0, 0);
		test_invariance(dt, 1, 2);
		test_epilogue(dt, 1);
		test_epilogue(dt, 3);
		/* a batch of a against one b (folded into one tall matrix) */
		test_batched(dt, (int64_t[]){ 3, 4, 29, 70 }, (int64_t[]){ 1, 1, 70, 45 }, 4);
		/* both broadcast, on different axes */
		test_batched(dt, (int64_t[]){ 3, 1, 17, 130 }, (int64_t[]){ 1, 4, 130, 33 }, 4);
		/* one b per entry, a shared */
		test_batched(dt, (int64_t[]){ 1, 25, 300 }, (int64_t[]){ 6, 300, 40 }, 3);
		/* every entry an a and a b of its own: packed a group of
		 * entries at a time, the next group into the other slot while
		 * this one's tiles run; many small entries to a group, and
		 * entries of two k-blocks each (k past KC's 1024 at most) */
		test_batched(dt, (int64_t[]){ 32, 24, 64 }, (int64_t[]){ 32, 64, 40 }, 3);
		test_batched(dt, (int64_t[]){ 6, 40, 1100 }, (int64_t[]){ 6, 1100, 36 }, 3);
		test_conv(dt, 5, 40, 37, true, 7);
		test_conv(dt, 130, 12, 11, false, 7);
		test_conv(dt, 96, 7, 7, true, 130);
	}
	test_narrow(TIR_DTYPE_BF16, TIR_DTYPE_BF16, 0, 0);  /* the pair kernel, where there is one */
	test_narrow(TIR_DTYPE_BF16, TIR_DTYPE_BF16, 1, 2);
	test_narrow(TIR_DTYPE_F16, TIR_DTYPE_F16, 0, 1);
	test_narrow(TIR_DTYPE_F32, TIR_DTYPE_BF16, 2, 0);
	test_narrow(TIR_DTYPE_F16, TIR_DTYPE_F32, 0, 0);
	test_round();
	test_round_depths();
	test_widen_bits();
	tir_pool_shutdown();
	return check_report("test_gemm");
}
