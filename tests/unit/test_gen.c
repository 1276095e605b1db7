/*
 * test_gen.c — lib/exec/gen.c: randn's own ln and cos(2 pi u) measured
 * against long double over 2^22 arguments of each form randn uses (f32's
 * k 2^-24, f64's k 2^-53, and the ends); every generator (fills, arange,
 * linspace, eye, rand, randn; f32 and f64) the same bits on every vector
 * path this CPU has, for runs of any length, offset and stride (0,
 * negative, long), and rand/randn equal to rng.c's scalar definition;
 * tir_k_gen the same bits at 1, 2, 3 and 7 threads.  TIR_TEST_VERBOSE=1
 * prints the measured bounds.
 */
#include "exec/exec.h"
#include "exec/iter.h"
#include "exec/vmath.h"

#include "check.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool verbose;

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t next64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* |got - want| in ULPs of want (a double) */
static double ulps(double got, long double want)
{
	int e;
	frexpl(want, &e);
	long double ulp = ldexpl(1.0L, e - 53);
	if (want == 0)
		return got == 0 ? 0 : INFINITY;
	return (double)(fabsl((long double)got - want) / ulp);
}

static void test_ln(void)
{
	double worst24 = 0, worst53 = 0;
	for (int i = 0; i < (1 << 22) + 64; i++) {
		uint64_t k24 = i < 32 ? (uint64_t)i + 1 : i < 64 ? (UINT64_C(1) << 24) - (uint64_t)(i - 32)
				  : (next64() >> 40) + 1;
		double u = (double)k24 * 0x1p-24;
		double w = ulps(tir_gen_ln(u), logl((long double)u));
		worst24 = w > worst24 ? w : worst24;
		uint64_t k53 = i < 32 ? (uint64_t)i + 1 : i < 64 ? (UINT64_C(1) << 53) - (uint64_t)(i - 32)
				  : (next64() >> 11) + 1;
		u = (double)k53 * 0x1p-53;
		w = ulps(tir_gen_ln(u), logl((long double)u));
		worst53 = w > worst53 ? w : worst53;
	}
	if (verbose)
		fprintf(stderr, "ln: %.3f ULP (k 2^-24), %.3f ULP (k 2^-53)\n", worst24, worst53);
	CHECK(worst24 <= 2.0);
	CHECK(worst53 <= 2.0);
	CHECK(tir_gen_ln(1.0) == 0 && !signbit(tir_gen_ln(1.0)));
}

static void test_cos_sin(void)
{
	const long double twopi = 6.283185307179586476925286766559005768L;
	double worst24 = 0, worst53 = 0;
	for (int i = 0; i < (1 << 22); i++) {
		double u = (double)(next64() >> 40) * 0x1p-24;
		if (i < 4096) /* the quadrant boundaries and their neighbours */
			u = (double)((uint64_t)(i / 16) * (UINT64_C(1) << 16) + (uint64_t)(i % 16) - 8 + (UINT64_C(1) << 24)) *
			    0x1p-24 - 1.0;
		if (u < 0 || u >= 1)
			continue;
		double e = fabs((double)((long double)tir_gen_cos2pi(u) - cosl(twopi * (long double)u)));
		double f = fabs((double)((long double)tir_gen_sin2pi(u) - sinl(twopi * (long double)u)));
		worst24 = e > worst24 ? e : worst24;
		worst24 = f > worst24 ? f : worst24;
		u = (double)(next64() >> 11) * 0x1p-53;
		e = fabs((double)((long double)tir_gen_cos2pi(u) - cosl(twopi * (long double)u)));
		f = fabs((double)((long double)tir_gen_sin2pi(u) - sinl(twopi * (long double)u)));
		worst53 = e > worst53 ? e : worst53;
		worst53 = f > worst53 ? f : worst53;
	}
	if (verbose)
		fprintf(stderr, "cos and sin of 2 pi u: %.3g absolute (k 2^-24), %.3g (k 2^-53)\n", worst24, worst53);
	CHECK(worst24 <= 2.5e-16);
	CHECK(worst53 <= 2.5e-16);
	CHECK(tir_gen_cos2pi(0) == 1 && tir_gen_cos2pi(0.5) == -1);
	CHECK(tir_gen_cos2pi(0.25) == 0 && tir_gen_cos2pi(0.75) == 0);
	CHECK(tir_gen_sin2pi(0) == 0 && tir_gen_sin2pi(0.5) == 0);
	CHECK(tir_gen_sin2pi(0.25) == 1 && tir_gen_sin2pi(0.75) == -1);
}

/* |got - want| in ULPs of want as a float (2^-149 at least) */
static double ulpsf(float got, long double want)
{
	int e;
	frexpl(want, &e);
	long double ulp = ldexpl(1.0L, e - 24 < -149 ? -149 : e - 24);
	if (want == 0)
		return got == 0 ? 0 : INFINITY;
	return (double)(fabsl((long double)got - want) / ulp);
}

/* cos(2 pi u) and sin(2 pi u) in long double, from u = n/4 + r (exact),
 * so that the zeros are exact */
static void cossin_ref(float u, long double *c, long double *s)
{
	const long double twopi = 6.283185307179586476925286766559005768L;
	long double n = roundl(4.0L * u), r = (long double)u - n / 4;
	long double cr = cosl(twopi * r), sr = sinl(twopi * r);
	switch ((int)n & 3) {
	case 0: *c = cr, *s = sr; break;
	case 1: *c = -sr, *s = cr; break;
	case 2: *c = -cr, *s = -sr; break;
	default: *c = sr, *s = -cr; break;
	}
}

/* randn f32's ln and cos/sin in f32, over every argument it takes (2^24
 * of each), and its values z = sqrt(-2 ln u1) cos(2 pi u2) (and sin) over
 * 2^22 random pairs and the ends, against long double */
static void test_f32(void)
{
	double wln = 0, wcs = 0, wcsa = 0, wz = 0;
	for (uint32_t k = 1; k <= (UINT32_C(1) << 24); k++) {
		float u = (float)k * 0x1p-24f;
		double w = ulpsf(tir_gen_lnf(u), logl((long double)u));
		wln = w > wln ? w : wln;
		u = (float)(k - 1) * 0x1p-24f;
		long double c, s;
		cossin_ref(u, &c, &s);
		float gc = tir_gen_cos2pif(u), gs = tir_gen_sin2pif(u);
		w = ulpsf(gc, c);
		wcs = w > wcs ? w : wcs;
		w = ulpsf(gs, s);
		wcs = w > wcs ? w : wcs;
		w = (double)fabsl((long double)gc - c);
		wcsa = w > wcsa ? w : wcsa;
		w = (double)fabsl((long double)gs - s);
		wcsa = w > wcsa ? w : wcsa;
	}
	for (int i = 0; i < (1 << 22) + 64; i++) {
		uint64_t r = next64();
		uint32_t k1 = (uint32_t)(r >> 40) + 1, k2 = (uint32_t)r >> 8;
		if (i >= 1 << 22) /* u1 at its ends, u2 at quadrant boundaries */
			k1 = i % 2 ? (uint32_t)(i % 32) + 1 : (UINT32_C(1) << 24) - (uint32_t)(i % 32),
			k2 = (uint32_t)(i % 4) << 22 | ((uint32_t)i >> 2 & 1);
		float u1 = (float)k1 * 0x1p-24f, u2 = (float)k2 * 0x1p-24f;
		float rad = sqrtf(-2.0f * tir_gen_lnf(u1));
		long double rw = sqrtl(-2.0L * logl((long double)u1)), c, s;
		cossin_ref(u2, &c, &s);
		double w = ulpsf(rad * tir_gen_cos2pif(u2), rw * c);
		wz = w > wz ? w : wz;
		w = ulpsf(rad * tir_gen_sin2pif(u2), rw * s);
		wz = w > wz ? w : wz;
	}
	if (verbose)
		fprintf(stderr, "f32: ln %.3f ULP, cos and sin of 2 pi u %.3f ULP (%.3g absolute), z %.3f ULP\n", wln,
			wcs, wcsa, wz);
	CHECK(wln <= 2.0);
	CHECK(wcs <= 2.0);
	CHECK(wz <= 4.0);
	CHECK(tir_gen_lnf(1.0f) == 0 && !signbit(tir_gen_lnf(1.0f)));
	CHECK(tir_gen_cos2pif(0) == 1 && tir_gen_cos2pif(0.5f) == -1);
	CHECK(tir_gen_cos2pif(0.25f) == 0 && tir_gen_cos2pif(0.75f) == 0);
	CHECK(tir_gen_sin2pif(0) == 0 && tir_gen_sin2pif(0.5f) == 0);
	CHECK(tir_gen_sin2pif(0.25f) == 1 && tir_gen_sin2pif(0.75f) == -1);
}

static struct tir_node *node_of(struct tir_program **pp, const char *src)
{
	int rc = 0;
	struct tir_program *p = tir_program_new();
	rc = tir_program_parse(p, "t.tir", src, strlen(src), 0);
	CHECK(rc == 0);
	*pp = p;
	return p->stmts[p->nstmts - 1].node;
}

static const char *const progs[] = {
	"x = zeros([5000])", "x = ones([5000], dtype=f64)", "x = full([5000], -2.7)", "x = full([5000], 1e300, dtype=f64)",
	"x = arange(0.1, 1000.3, 0.37)", "x = arange(-5, 7, 0.0013, dtype=f64)",
	"x = linspace(0, 1, 5001)", "x = linspace(-1.5, 2.25, 4999, endpoint=false, dtype=f64)",
	/* f32 arange of integers in 32-bit lanes (past 2^24: rounded, as
	 * from f64), linspace of step 0 (its other formula) */
	"x = arange(5001, dtype=f32)", "x = arange(-2500, 7502, 2, dtype=f32)",
	"x = arange(2147478647, 2147483647, dtype=f32)", "x = arange(-2147483647, -2147473646, 2, dtype=f32)",
	"x = arange(-0.0, 5001, dtype=f32)", "x = linspace(2, 2, 5001)", "x = linspace(-16777216, 16777217, 5001)",
	"x = eye(71)", "x = eye(70, dtype=f64)",
	"x = rand([5003], seed=1)", "x = rand([5003], seed=-7, dtype=f64)",
	"x = randn([5003], seed=42)", "x = randn([5003], seed=4294967301, dtype=f64)",
};

/* every path gives the scalar path's bits, for any run */
static void test_paths(void)
{
	int npaths = 0;
	enum tir_vmath_path paths[TIR_VMATH_PATH_COUNT];
	for (int p = 0; p < TIR_VMATH_PATH_COUNT; p++)
		if (tir_vmath_path_ok((enum tir_vmath_path)p))
			paths[npaths++] = (enum tir_vmath_path)p;
	static const int64_t runs[][3] = {{0, 1, 5000}, {3, 1, 997}, {4999, 1, 1}, {17, 0, 33}, {11, 7, 700},
					  {4990, -3, 1600}, {1, 1, 0}, {(int64_t)1 << 32, 1, 19}};
	double *a = malloc(8 * 5001), *b = malloc(8 * 5001), *ref = malloc(8 * 5001);
	for (size_t q = 0; q < sizeof progs / sizeof progs[0]; q++) {
		struct tir_program *p;
		struct tir_node *n = node_of(&p, progs[q]);
		struct tir_gen g;
		CHECK(tir_gen_init(&g, n));
		size_t es = tir_dtype_size(g.dt);
		for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
			int64_t i0 = runs[r][0], st = runs[r][1], len = runs[r][2];
			tir_gen_run_on(TIR_VMATH_SCALAR, &g, a, i0, st, len);
			for (int k = 1; k < npaths; k++) {
				memset(b, 0x5a, 8 * 5001);
				tir_gen_run_on(paths[k], &g, b, i0, st, len);
				CHECK(memcmp(a, b, (size_t)len * es) == 0);
				/* nothing past the run */
				CHECK(((unsigned char *)b)[(size_t)len * es] == 0x5a);
			}
			/* element by element, as a broadcast or gather computes it */
			bool same = true;
			for (int64_t e = 0; e < len; e++) {
				tir_gen_run(&g, b, i0 + e * st, 1, 1);
				same &= memcmp(b, (char *)a + (size_t)e * es, es) == 0;
			}
			CHECK(same);
			/* rand and randn: rng.c's definition */
			if ((n->op == TIR_OP_RAND || n->op == TIR_OP_RANDN) && st == 1) {
				tir_rand_range(ref, g.dt, i0, len, (uint64_t)n->attr[1].i, n->op == TIR_OP_RANDN);
				CHECK(memcmp(a, ref, (size_t)len * es) == 0);
			}
		}
		tir_program_free(p);
	}
	free(a);
	free(b);
	free(ref);
}

/* tir_k_gen: the same bytes at any thread count (tasks never depend on
 * it), and rng.c's values; n past 4 x L2 bytes, so that the tensor is
 * streamed out (gen.c's threshold, read from the machine) */
static void test_threads(void)
{
	int64_t n = tir_machine_caches()->l2 + 12347;
	if (n < 1000003)
		n = 1000003;
	char src[64];
	snprintf(src, sizeof src, "x = randn([%lld], seed=5)", (long long)n);
	struct tir_program *p;
	struct tir_node *nd = node_of(&p, src);
	struct tir_gen g;
	struct tir_err err = {0};
	CHECK(tir_gen_init(&g, nd));
	struct tir_tensor t[4];
	static const int threads[] = {1, 2, 3, 7};
	for (int k = 0; k < 4; k++) {
		tir_pool_set_threads(threads[k]);
		CHECK(tir_tensor_alloc(&t[k], TIR_DTYPE_F32, nd->type.rank, nd->type.shape, false, &err) == 0);
		CHECK(tir_k_gen(&t[k], &g) == 0);
		if (k)
			CHECK(memcmp(tir_tensor_data(&t[0]), tir_tensor_data(&t[k]), (size_t)n * 4) == 0);
	}
	tir_pool_set_threads(0);
	float *ref = malloc((size_t)n * 4);
	tir_rand_range(ref, TIR_DTYPE_F32, 0, n, 5, true);
	CHECK(memcmp(ref, tir_tensor_data(&t[0]), (size_t)n * 4) == 0);
	free(ref);
	for (int k = 0; k < 4; k++)
		tir_tensor_release(&t[k]);
	tir_program_free(p);
}

int main(void)
{
	const char *v = getenv("TIR_TEST_VERBOSE");
	verbose = v && *v && strcmp(v, "0") != 0;
	test_ln();
	test_cos_sin();
	test_f32();
	test_paths();
	test_threads();
	return check_report("test_gen");
}
