/*
 * test_blas.c — OpenBLAS loaded at its first use (blas.c): the loader puts
 * the environment back as it found it, tir_blas_sym resolves LAPACK's
 * names and says why it cannot; which gemm runs what (tir_set_gemm,
 * tir_gemm_blas); how cblas reads a strided matrix (tir_blas_layout); and
 * products on OpenBLAS (tir_blas_gemm) against tir's gemm on the same
 * operands, within f32/f64 rounding: contiguous, transposed, broadcast and
 * odd-strided operands (copied), batches (on OpenBLAS's threads, or many
 * small entries as tasks of the pool), accumulation, k = 0, and an
 * epilogue that runs once on each element, on its final value; the same
 * products rounded to bf16 (tir_gemm's out), each element as tir_f2b;
 * two bf16 operands, widened a k-block at a time.  And OpenBLAS's threads
 * stay awake between the BLAS calls of one LAPACK routine (blas.c's
 * OPENBLAS_THREAD_TIMEOUT).
 */
#define _GNU_SOURCE /* gettid */
#include "exec/exec.h"
#include "exec/half.h"
#include "check.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng = 4242;

static double frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) / (double)(1ull << 53) * 2 - 1;
}

static void *fill(enum tir_dtype dt, int64_t n)
{
	size_t es = dt == TIR_DTYPE_F32 ? 4 : 8;
	char *p = malloc((size_t)n * es + 8);
	for (int64_t i = 0; i < n; i++) {
		if (dt == TIR_DTYPE_F32)
			((float *)p)[i] = (float)frand();
		else
			((double *)p)[i] = frand();
	}
	return p;
}

static double get(enum tir_dtype dt, const void *c, int64_t i)
{
	return dt == TIR_DTYPE_F32 ? ((const float *)c)[i] : ((const double *)c)[i];
}

/* the epilogue: each element once, seeing its final value */
struct seen {
	enum tir_dtype dt;
	const void *c;
	_Atomic int *hits;
	double *val;
};

static int epi(void *ctx, int64_t i0, int64_t n)
{
	struct seen *s = ctx;
	for (int64_t i = i0; i < i0 + n; i++) {
		atomic_fetch_add(&s->hits[i], 1);
		s->val[i] = get(s->dt, s->c, i);
	}
	return 0;
}

/* g on OpenBLAS and on tir's gemm, from the same c (acc), compared */
static void compare(struct tir_gemm g, int64_t total, bool with_epi)
{
	size_t es = g.dt == TIR_DTYPE_F32 ? 4 : 8;
	void *c0 = fill(g.dt, total), *c1 = malloc((size_t)total * es + 8);
	memcpy(c1, c0, (size_t)total * es);
	struct seen s = { g.dt, c0, calloc((size_t)total, sizeof(int)), calloc((size_t)total, sizeof(double)) };
	struct tir_err err = { 0 };
	g.c = c0;
	if (with_epi) {
		g.epi = epi;
		g.epi_ctx = &s;
	}
	CHECK(tir_blas_gemm(&g, &err) == 0);
	if (g.dt == TIR_DTYPE_F32 && !g.acc) {
		/* rounded to bf16 (out): tir_f2b of each element of the same
		 * product, c a scratch */
		float *c2 = malloc((size_t)total * 4 + 8);
		uint16_t *o = malloc((size_t)total * 2 + 8);
		struct tir_gemm r = g;
		r.c = c2;
		r.out = o;
		r.epi = NULL;
		CHECK(tir_blas_gemm(&r, &err) == 0);
		int off = 0;
		for (int64_t i = 0; i < total; i++)
			off += o[i] != tir_f2b(((const float *)c0)[i]);
		CHECK(off == 0);
		free(c2);
		free(o);
	}
	g.c = c1;
	g.epi = NULL;
	CHECK(tir_gemm_run(&g, &err) == 0);
	double tol = g.dt == TIR_DTYPE_F32 ? 2e-5 * (double)(g.k + 1) : 1e-13 * (double)(g.k + 1);
	int bad = 0, once = 0;
	for (int64_t i = 0; i < total; i++) {
		double x = get(g.dt, c0, i), y = get(g.dt, c1, i);
		bad += !(fabs(x - y) <= tol);
		once += with_epi && (s.hits[i] != 1 || s.val[i] != x);
	}
	CHECK(bad == 0);
	CHECK(once == 0);
	if (bad)
		fprintf(stderr, "  m %lld n %lld k %lld nb %d: %d elements differ\n", (long long)g.m, (long long)g.n,
			(long long)g.k, g.nb, bad);
	free(c0);
	free(c1);
	free(s.hits);
	free(s.val);
}

/* Two bf16 operands on OpenBLAS: widened a k-block at a time (the test's
 * budget makes blocks of 8 to 48 steps), every block's product added to
 * c; against tir's gemm on the same operands, within f32 rounding:
 * row-major, transposed a, odd k, accumulation, rounded to bf16 (out),
 * transposed b (widened as runs along its columns, given to sgemm
 * transposed), both transposed, and operands read every other element
 * (gathered). */
static void bf16_products(int threads)
{
	tir_set_threads(threads);
	int64_t m = 37, n = 45, k = 203;
	uint16_t *a = malloc((size_t)(m * k) * 4), *b = malloc((size_t)(k * n) * 4);
	float *ref = malloc((size_t)(m * n) * 4), *c = malloc((size_t)(m * n) * 4), *c2 = malloc((size_t)(m * n) * 4);
	uint16_t *o = malloc((size_t)(m * n) * 2);
	for (int64_t i = 0; i < 2 * m * k; i++)
		a[i] = tir_f2b((float)((i * 37 % 101) - 50) / 16);
	for (int64_t i = 0; i < 2 * k * n; i++)
		b[i] = tir_f2b((float)((i * 53 % 97) - 48) / 32);
	struct tir_err err = { 0 };
	for (int v = 0; v < 7; v++) {
		struct tir_gemm g = { .dt = TIR_DTYPE_F32, .a_dt = TIR_DTYPE_BF16, .b_dt = TIR_DTYPE_BF16, .m = m,
				      .n = n, .k = k, .a = a, .b = b, .a_rs = k, .a_cs = 1, .b_rs = n, .b_cs = 1,
				      .ldc = n, .c_batch = m * n, .slab_bytes = (v + 1) * 8 * (m + n) * 4 };
		if (v == 1 || v == 5)   /* a read transposed: [m, k] with its columns along memory */
			g.a_rs = 1, g.a_cs = m;
		if (v == 4 || v == 5)   /* b read transposed: [k, n] with its columns along memory */
			g.b_rs = 1, g.b_cs = k;
		if (v == 6)             /* every other element of a's rows and b's columns */
			g.a_rs = 2 * k, g.a_cs = 2, g.b_rs = 2 * n, g.b_cs = 2;
		for (int64_t i = 0; i < m * n; i++)
			ref[i] = c[i] = v == 2 ? (float)(i % 7) : 0;
		g.acc = v == 2;
		g.c = ref;
		CHECK(tir_gemm_run(&g, &err) == 0);
		g.c = c;
		CHECK(tir_blas_gemm(&g, &err) == 0);
		int bad = 0;
		for (int64_t i = 0; i < m * n; i++)
			bad += !(fabs((double)c[i] - ref[i]) <= 1e-5 * (double)k * 4);
		if (v == 3) {        /* rounded to bf16 */
			g.c = c2;
			g.out = o;
			CHECK(tir_blas_gemm(&g, &err) == 0);
			for (int64_t i = 0; i < m * n; i++)
				bad += o[i] != tir_f2b(c[i]);
		}
		CHECK(bad == 0);
	}
	/* without the test's budget the whole depth is one sgemm call: bit
	 * for bit the f32 product of the widened operands on OpenBLAS; and
	 * rounded to bf16 with no c given (tir_gemm keeps its own sums) */
	float *af = malloc((size_t)(m * k) * 4), *bf = malloc((size_t)(k * n) * 4);
	tir_cvt_run(TIR_DTYPE_F32, af, TIR_DTYPE_BF16, a, 1, m * k);
	tir_cvt_run(TIR_DTYPE_F32, bf, TIR_DTYPE_BF16, b, 1, k * n);
	struct tir_gemm f = { .dt = TIR_DTYPE_F32, .m = m, .n = n, .k = k, .a = af, .b = bf, .a_rs = k,
			      .a_cs = 1, .b_rs = n, .b_cs = 1, .c = ref, .ldc = n, .c_batch = m * n };
	CHECK(tir_blas_gemm(&f, &err) == 0);
	f.a = a, f.b = b, f.a_dt = f.b_dt = TIR_DTYPE_BF16, f.c = c;
	CHECK(tir_blas_gemm(&f, &err) == 0);
	CHECK(memcmp(ref, c, (size_t)(m * n) * 4) == 0);
	f.c = NULL, f.out = o;
	CHECK(tir_gemm(&f, &err) == 0);
	f.c = c2, f.out = NULL;
	CHECK(tir_gemm(&f, &err) == 0);
	int off = 0;
	for (int64_t i = 0; i < m * n; i++)
		off += o[i] != tir_f2b(c2[i]);
	CHECK(off == 0);
	free(af);
	free(bf);
	free(a);
	free(b);
	free(ref);
	free(c);
	free(c2);
	free(o);
}

static void products(enum tir_dtype dt, int threads)
{
	tir_set_threads(threads);
	int64_t m = 37, n = 45, k = 29;
	void *a = fill(dt, 64 * 64 * 8), *b = fill(dt, 64 * 64 * 8);
	struct tir_gemm g = { .dt = dt, .m = m, .n = n, .k = k, .a = a, .b = b, .ldc = n, .c_batch = m * n };
	/* row-major */
	g.a_rs = k, g.a_cs = 1, g.b_rs = n, g.b_cs = 1;
	compare(g, m * n, true);
	/* transposed a, transposed b */
	g.a_rs = 1, g.a_cs = m;
	compare(g, m * n, false);
	g.b_rs = 1, g.b_cs = k;
	compare(g, m * n, true);
	/* a broadcast down its rows, b every other column: copied */
	g.a_rs = 0, g.a_cs = 1, g.b_rs = 2 * n, g.b_cs = 2;
	compare(g, m * n, true);
	/* accumulating, and k = 0 (zeros, then the epilogue) */
	g.a_rs = k, g.b_rs = n, g.b_cs = 1, g.acc = true;
	compare(g, m * n, false);
	g.acc = false, g.k = 0;
	compare(g, m * n, true);
	/* a batch: b shared (bs 0), then both broadcast on different axes */
	struct tir_gemm bt = { .dt = dt, .m = 20, .n = 24, .k = 16, .a = a, .b = b, .a_rs = 16, .a_cs = 1,
			       .b_rs = 24, .b_cs = 1, .nb = 1, .shape = { 6 }, .as = { 20 * 16 }, .bs = { 0 },
			       .ldc = 24, .c_batch = 20 * 24 };
	compare(bt, 6 * 20 * 24, true);
	bt.nb = 2;
	bt.shape[0] = 3, bt.shape[1] = 4;
	bt.as[0] = 20 * 16, bt.as[1] = 0, bt.bs[0] = 0, bt.bs[1] = 16 * 24;
	compare(bt, 12 * 20 * 24, true);
	/* many small entries (tasks of the pool at 2+ threads) */
	struct tir_gemm sm = { .dt = dt, .m = 8, .n = 8, .k = 8, .a = a, .b = b, .a_rs = 8, .a_cs = 1,
			       .b_rs = 8, .b_cs = 1, .nb = 1, .shape = { 40 }, .as = { 64 }, .bs = { 64 },
			       .ldc = 8, .c_batch = 64 };
	compare(sm, 40 * 64, true);
	free(a);
	free(b);
	/* one large product: OpenBLAS's threads, then the epilogue on the pool */
	int64_t big = 300;
	a = fill(dt, big * big);
	b = fill(dt, big * big);
	struct tir_gemm lg = { .dt = dt, .m = big, .n = big, .k = big, .a = a, .b = b, .a_rs = big, .a_cs = 1,
			       .b_rs = big, .b_cs = 1, .ldc = big, .c_batch = big * big };
	compare(lg, big * big, true);
	free(a);
	free(b);
}

/* The times the process's other threads went to sleep so far (their
 * voluntary context switches: a wait on a lock or a condition, not a
 * sched_yield), or -1 when /proc does not say. */
static long others_slept(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	long total = 0, me = (long)gettid();
	struct dirent *e;
	while ((e = readdir(d))) {
		long tid = atol(e->d_name);
		if (tid <= 0 || tid == me)
			continue;
		char path[96], line[128];
		snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
		FILE *f = fopen(path, "r");
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				total += atol(line + 24);
		if (f)
			fclose(f);
	}
	closedir(d);
	return total;
}

typedef void (*syevd_fn)(const char *, const char *, const int *, double *, const int *, double *, double *,
			 const int *, int *, const int *, int *, size_t, size_t);

/* A 512 x 512 dsyevd on OpenBLAS's 2 threads: with its idle threads sent
 * to sleep at once (a timeout of 2^4 cycles) the second thread slept and
 * was woken some 720 times, once for every threaded BLAS call; now it
 * stays awake through the routine and sleeps only when this thread is off
 * its core for longer than the timeout (on a loaded machine, a few times).
 * (The old timeout only shows on a machine idle enough that sched_yield
 * returns at once: on a loaded one the yield itself outlasts the gap.) */
static void stays_awake(void)
{
	char *why = NULL;
	syevd_fn syevd = (syevd_fn)tir_blas_sym("dsyevd_", &why);
	CHECK(syevd != NULL);
	if (!syevd)
		return;
	int n = 512, lw = 1 + 6 * n + 2 * n * n, liw = 3 + 5 * n, info = 0;
	double *a = malloc(sizeof(double) * (size_t)n * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
	double *work = malloc(sizeof(double) * (size_t)lw);
	int *iwork = malloc(sizeof(int) * (size_t)liw);
	long slept = 0;
	for (int round = 0; round < 2; round++) { /* the first starts OpenBLAS's thread */
		rng = 4242;
		for (int64_t i = 0; i < (int64_t)n * n; i++)
			a[i] = frand();
		tir_blas_lock(2);
		long before = others_slept();
		syevd("V", "L", &n, a, &n, w, work, &lw, iwork, &liw, &info, 1, 1);
		slept = others_slept() - before;
		tir_blas_unlock();
		CHECK(info == 0);
	}
	CHECK(slept >= 0 && slept <= 64);
	if (slept > 64)
		fprintf(stderr, "  dsyevd 512 at 2 threads: the other threads slept %ld times\n", slept);
	free(a);
	free(w);
	free(work);
	free(iwork);
}

int main(void)
{
	/* the loader: first use, the environment as it was */
	setenv("OPENBLAS_NUM_THREADS", "7", 1);
	unsetenv("OPENBLAS_THREAD_TIMEOUT");
	unsetenv("GOTO_THREAD_TIMEOUT");
	CHECK(!tir_blas_is_loaded());
	char *why = NULL;
	CHECK(tir_blas_sym("cblas_sgemm", &why) != NULL);
	CHECK(tir_blas_is_loaded());
	const char *v = getenv("OPENBLAS_NUM_THREADS");
	CHECK(v && !strcmp(v, "7"));
	CHECK(getenv("OPENBLAS_THREAD_TIMEOUT") == NULL);
	CHECK(tir_blas_sym("dgesv_", &why) != NULL);    /* OpenBLAS's LAPACK */
	why = NULL;
	CHECK(tir_blas_sym("tir_no_such_function", &why) == NULL);
	CHECK(why && strstr(why, "tir_no_such_function"));
	CHECK(strstr(tir_blas_info(), "OpenBLAS") != NULL);

	/* which gemm */
	struct tir_err err = { 0 };
	CHECK(tir_set_gemm("bogus", &err) == -TIR_EUNSUPPORTED);
	CHECK(tir_set_gemm("tir", &err) == 0);
	CHECK(tir_gemm_kind() == TIR_GEMM_TIR && !tir_gemm_default());
	CHECK(tir_gemm_blas(TIR_DTYPE_F32, &err) == 0);
	CHECK(strncmp(tir_gemm_info(), "tir ", 4) == 0);
	CHECK(tir_set_gemm("openblas", &err) == 0);
	CHECK(tir_gemm_blas(TIR_DTYPE_F32, &err) == 1);
	CHECK(tir_gemm_blas(TIR_DTYPE_F64, &err) == 1);
	CHECK(tir_gemm_blas(TIR_DTYPE_BF16, &err) == 0);
	CHECK(tir_gemm_blas(TIR_DTYPE_I32, &err) == 0);
	CHECK(strncmp(tir_gemm_info(), "openblas (OpenBLAS ", 19) == 0);
	CHECK(tir_set_gemm("auto", &err) == 0 && tir_gemm_default());

	/* how cblas reads a matrix */
	bool t;
	int64_t ld;
	CHECK(tir_blas_layout(3, 4, 4, 1, &t, &ld) && !t && ld == 4);
	CHECK(tir_blas_layout(3, 4, 6, 1, &t, &ld) && !t && ld == 6);
	CHECK(tir_blas_layout(3, 4, 1, 3, &t, &ld) && t && ld == 3);
	CHECK(tir_blas_layout(1, 4, 0, 1, &t, &ld) && !t && ld == 4);
	CHECK(tir_blas_layout(3, 1, 1, 0, &t, &ld) && ld >= 1);
	CHECK(!tir_blas_layout(3, 4, 0, 1, &t, &ld));
	CHECK(!tir_blas_layout(3, 4, 8, 2, &t, &ld));
	CHECK(!tir_blas_layout(3, 4, 2, 1, &t, &ld));
	CHECK(!tir_blas_layout(3, 4, -4, 1, &t, &ld));

	stays_awake();
	for (int th = 1; th <= 3; th += 2) {
		products(TIR_DTYPE_F32, th);
		products(TIR_DTYPE_F64, th);
		bf16_products(th);
	}
	tir_pool_shutdown();
	return check_report("test_blas");
}
