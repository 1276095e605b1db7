/*
 * hand_fused.c — the hand-written C the fusion targets are measured
 * against: the 10-op elementwise chain of bench/chain.tir in one pass, row
 * softmax (bench/softmax.tir) and row layernorm (bench/layernorm.tir) over
 * f32, each vectorized with SLEEF's AVX-512 functions and split over
 * THREADS threads (the caller and THREADS-1 workers that persist across
 * runs, so thread start-up is not timed).  Buffers are allocated and
 * touched before timing.  Each result is also checked once against a plain
 * scalar loop (libm); the largest absolute difference is printed.  Without
 * AVX-512 the scalar loops are what is timed, and "isa scalar" says so.
 * Prints "key value" lines for bench/run.sh.  Not a test.
 *
 *     hand_fused [--threads N] [--runs N] [--min-ms MS] [--warmup N]
 *                [--chain-n N] [chain|softmax|layernorm]...
 *
 * Each is timed WARMUP times, then at least RUNS times and for at least
 * MIN_MS ms in all, as bench/tir_time.c does; the median is printed.
 *
 * Inputs are made exactly as bench/tir_time.c makes them (see there): x is
 * input 0 with values in [-2, 2); layernorm's weight and bias are inputs 1
 * and 2, in [-2, 2) too.  Not here: tir itself, or the MLP (mlp_bench.c).
 */
#pragma GCC push_options
#pragma GCC target("avx512f")
#include <immintrin.h>
#include <sleef.h>
#pragma GCC pop_options

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#define MAX_THREADS 64
#define MAX_RUNS 10000
#define SPIN_NS 50000        /* a waiting thread spins this long, then sleeps */

#define CHAIN_N (INT64_C(1) << 24)
#define ROWS 4096
#define COLS 1024
#define LN_EPS 1e-5f

static bool use_avx512;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the whole process (all threads), as bench/tir_time.c. */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ---- a minimal persistent pool: the caller runs part 0, worker w part w ----
 * Waiting threads spin for SPIN_NS, then sleep on a condition variable, so
 * a busy machine (another process on the other core) costs a wake-up, not
 * a core spinning for milliseconds. */

struct pool {
	int n;
	pthread_t th[MAX_THREADS];
	int ids[MAX_THREADS];
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	atomic_uint gen;        /* bumped once per job */
	atomic_int pending;     /* workers still on the job */
	atomic_bool quit;
	void (*fn)(void *ctx, int part, int nparts);
	void *ctx;
};

static struct pool pool = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.go = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

/* Spin until ready(arg) or SPIN_NS have passed; returns ready(arg). */
static bool spin_until(bool (*ready)(void *), void *arg)
{
	double t0 = now_ms();
	for (int i = 0; !ready(arg); i++) {
		if ((i & 63) == 63 && (now_ms() - t0) * 1e6 > SPIN_NS)
			return false;
		cpu_relax();
	}
	return true;
}

static bool new_job(void *seen)
{
	return atomic_load_explicit(&pool.gen, memory_order_acquire) != *(unsigned *)seen;
}

static bool all_done(void *unused)
{
	return atomic_load_explicit(&pool.pending, memory_order_acquire) == 0;
}

static void *worker(void *arg)
{
	int id = *(const int *)arg;
	unsigned seen = 0;
	for (;;) {
		if (!spin_until(new_job, &seen)) {
			pthread_mutex_lock(&pool.mu);
			while (!new_job(&seen))
				pthread_cond_wait(&pool.go, &pool.mu);
			pthread_mutex_unlock(&pool.mu);
		}
		seen = atomic_load_explicit(&pool.gen, memory_order_acquire);
		if (atomic_load(&pool.quit))
			return NULL;
		pool.fn(pool.ctx, id, pool.n);
		if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&pool.mu);
			pthread_cond_signal(&pool.done);
			pthread_mutex_unlock(&pool.mu);
		}
	}
}

static int pool_start(int n)
{
	pool.n = 1;
	for (int i = 1; i < n; i++) {
		pool.ids[i] = i;
		if (pthread_create(&pool.th[i], NULL, worker, &pool.ids[i]))
			return -1;
		pool.n = i + 1;
	}
	return 0;
}

static void pool_job(void (*fn)(void *, int, int), void *ctx)
{
	pool.fn = fn;
	pool.ctx = ctx;
	atomic_store(&pool.pending, pool.n - 1);
	pthread_mutex_lock(&pool.mu);
	atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
	pthread_cond_broadcast(&pool.go);
	pthread_mutex_unlock(&pool.mu);
	fn(ctx, 0, pool.n);
	if (!spin_until(all_done, NULL)) {
		pthread_mutex_lock(&pool.mu);
		while (!all_done(NULL))
			pthread_cond_wait(&pool.done, &pool.mu);
		pthread_mutex_unlock(&pool.mu);
	}
}

static void pool_stop(void)
{
	atomic_store(&pool.quit, true);
	pthread_mutex_lock(&pool.mu);
	atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
	pthread_cond_broadcast(&pool.go);
	pthread_mutex_unlock(&pool.mu);
	for (int i = 1; i < pool.n; i++)
		pthread_join(pool.th[i], NULL);
}

/* ---- the data (as bench/tir_time.c makes it) ---- */

static void fill(float *p, int64_t n, int k, double lo, double hi)
{
	for (int64_t i = 0; i < n; i++) {
		uint64_t h = ((uint64_t)i * UINT64_C(2654435761) + (uint64_t)k * 40503u) & 0xffffffffu;
		p[i] = (float)(lo + (hi - lo) * ((double)h / 4294967296.0));
	}
}

/* [begin, end) of part `part` of n items cut into nparts, in multiples of align */
static void split(int64_t n, int part, int nparts, int64_t align, int64_t *begin, int64_t *end)
{
	int64_t per = (n + nparts - 1) / nparts;
	per = (per + align - 1) / align * align;
	*begin = per * part < n ? per * part : n;
	*end = per * (part + 1) < n ? per * (part + 1) : n;
}

/* ---- scalar loops: the check, and the fallback without AVX-512 ---- */

static float chain1(float x)
{
	float a = tanhf(x * 0.5f);
	float e = expf(x * x * -0.5f);
	float s = 1.0f / (1.0f + expf(-x));
	return sqrtf(a * e + s + 0.5f);
}

static void chain_scalar(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = chain1(x[i]);
}

static void softmax_scalar(const float *x, float *y, int64_t rows, int64_t cols)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols;
		float *yr = y + r * cols, m = -INFINITY, s = 0;
		for (int64_t j = 0; j < cols; j++)
			m = xr[j] > m ? xr[j] : m;
		for (int64_t j = 0; j < cols; j++)
			s += yr[j] = expf(xr[j] - m);
		for (int64_t j = 0; j < cols; j++)
			yr[j] /= s;
	}
}

static void layernorm_scalar(const float *x, const float *w, const float *b, float *y,
			     int64_t rows, int64_t cols)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols;
		float *yr = y + r * cols, s = 0, v = 0;
		for (int64_t j = 0; j < cols; j++)
			s += xr[j];
		float mean = s / (float)cols;
		for (int64_t j = 0; j < cols; j++)
			v += (xr[j] - mean) * (xr[j] - mean);
		float rstd = 1.0f / sqrtf(v / (float)cols + LN_EPS);
		for (int64_t j = 0; j < cols; j++)
			yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
	}
}

/* ---- the AVX-512 loops ---- */

#pragma GCC push_options
#pragma GCC target("avx512f")

static __mmask16 tail_mask(int64_t left)
{
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* tanh(x) on 16 lanes as tir's vmath computes it (lib/exec/vmath.c):
 * x + x^3 P(x^2) below |x| = 0.75, else 1 - 2 / (exp(2|x|) + 1), with
 * x's sign; one SLEEF expf16, within 1.1 ULP like tir's. */
static inline __attribute__((always_inline)) __m512 tanh16(__m512 x)
{
	const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
	__m512 a = _mm512_abs_ps(x), r = _mm512_mul_ps(a, a);
	__m512 p = _mm512_set1_ps(0.0017369345f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-0.007657253f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.021452034f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-0.053892724f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.13332695f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-0.33333316f));
	__m512 small = _mm512_fmadd_ps(_mm512_mul_ps(a, r), p, a);
	__m512 e = Sleef_expf16_u10avx512f(_mm512_add_ps(a, a));
	__m512 big = _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(e, one)));
	__m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.75f), _CMP_LT_OQ),
					big, small);
	/* t is >= 0: put x's sign on it */
	return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),
			_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
}

/* the 10 ops of bench/chain.tir on 16 lanes, given a tanh */
static inline __attribute__((always_inline)) __m512 chain16_with(__m512 x, __m512 (*th)(__m512))
{
	const __m512 half = _mm512_set1_ps(0.5f), mhalf = _mm512_set1_ps(-0.5f);
	const __m512 one = _mm512_set1_ps(1.0f);
	__m512 t = th(_mm512_mul_ps(x, half));
	__m512 e = Sleef_expf16_u10avx512f(_mm512_mul_ps(_mm512_mul_ps(x, x), mhalf));
	__m512 en = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), x));
	__m512 s = _mm512_div_ps(one, _mm512_add_ps(one, en));
	__m512 r = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(t, e), s), half);
	return _mm512_sqrt_ps(r);
}

/* The reference: tanh as tir computes it (accurate to 1.1 ULP). */
static inline __attribute__((always_inline)) __m512 chain16(__m512 x)
{
	return chain16_with(x, tanh16);
}

/* SLEEF's own tanhf16 (1 ULP), which costs about five expf16 here. */
static inline __attribute__((always_inline)) __m512 chain16_sleef(__m512 x)
{
	return chain16_with(x, Sleef_tanhf16_u10avx512f);
}

/* The cheapest: tanh(a) = 1 - 2 / (exp(2a) + 1) everywhere, one expf16
 * and no polynomial; absolute error ~1e-7, but near 0 that is a large
 * relative error (tanh(1e-5) is off by ~1%), so it is not a reference. */
static inline __attribute__((always_inline)) __m512 tanh16_exp(__m512 a)
{
	const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
	__m512 ea = Sleef_expf16_u10avx512f(_mm512_add_ps(a, a));
	return _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(ea, one)));
}

static inline __attribute__((always_inline)) __m512 chain16_exp(__m512 x)
{
	return chain16_with(x, tanh16_exp);
}

/* The loop over n elements with chain function F, inlined. */
#define CHAIN_LOOP(F)                                                          \
	do {                                                                   \
		int64_t i = 0;                                                 \
		for (; i + 16 <= n; i += 16)                                   \
			_mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i)));    \
		if (i < n) {                                                   \
			__mmask16 m = tail_mask(n - i);                        \
			_mm512_mask_storeu_ps(y + i, m, F(_mm512_maskz_loadu_ps(m, x + i))); \
		}                                                              \
	} while (0)

static void chain_avx512(const float *x, float *y, int64_t n, int variant)
{
	switch (variant) {
	case 1: CHAIN_LOOP(chain16_sleef); break;
	case 2: CHAIN_LOOP(chain16_exp); break;
	default: CHAIN_LOOP(chain16); break;
	}
}

/* The row loops run whole vectors, then one masked vector for a tail
 * (none for the benchmark's 1024 columns). */
static void softmax_avx512(const float *x, float *y, int64_t rows, int64_t cols)
{
	const __m512 ninf = _mm512_set1_ps(-INFINITY);
	int64_t full = cols / 16 * 16;
	__mmask16 tk = tail_mask(cols - full);
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols;
		float *yr = y + r * cols;
		__m512 mv = ninf;
		for (int64_t j = 0; j < full; j += 16)
			mv = _mm512_max_ps(mv, _mm512_loadu_ps(xr + j));
		if (full < cols)
			mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(ninf, tk, xr + full));
		__m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
		__m512 sv = _mm512_setzero_ps();
		for (int64_t j = 0; j < full; j += 16) {
			__m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_loadu_ps(xr + j), m));
			_mm512_storeu_ps(yr + j, e);
			sv = _mm512_add_ps(sv, e);
		}
		if (full < cols) {
			__m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_maskz_loadu_ps(tk, xr + full), m));
			_mm512_mask_storeu_ps(yr + full, tk, e);
			sv = _mm512_mask_add_ps(sv, tk, sv, e);
		}
		__m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sv));
		for (int64_t j = 0; j < full; j += 16)
			_mm512_storeu_ps(yr + j, _mm512_mul_ps(_mm512_loadu_ps(yr + j), inv));
		if (full < cols)
			_mm512_mask_storeu_ps(yr + full, tk, _mm512_mul_ps(_mm512_maskz_loadu_ps(tk, yr + full), inv));
	}
}

static void layernorm_avx512(const float *x, const float *w, const float *b, float *y,
			     int64_t rows, int64_t cols)
{
	int64_t full = cols / 16 * 16;
	__mmask16 tk = tail_mask(cols - full);
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols;
		float *yr = y + r * cols;
		__m512 sv = _mm512_setzero_ps();
		for (int64_t j = 0; j < full; j += 16)
			sv = _mm512_add_ps(sv, _mm512_loadu_ps(xr + j));
		if (full < cols)
			sv = _mm512_add_ps(sv, _mm512_maskz_loadu_ps(tk, xr + full));
		__m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(sv) / (float)cols);
		__m512 vv = _mm512_setzero_ps();
		for (int64_t j = 0; j < full; j += 16) {
			__m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), mean);
			vv = _mm512_fmadd_ps(d, d, vv);
		}
		if (full < cols) {
			__m512 d = _mm512_maskz_sub_ps(tk, _mm512_maskz_loadu_ps(tk, xr + full), mean);
			vv = _mm512_fmadd_ps(d, d, vv);
		}
		float var = _mm512_reduce_add_ps(vv) / (float)cols;
		__m512 rstd = _mm512_set1_ps(1.0f / sqrtf(var + LN_EPS));
		for (int64_t j = 0; j < full; j += 16) {
			__m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), mean);
			__m512 o = _mm512_fmadd_ps(_mm512_mul_ps(d, rstd), _mm512_loadu_ps(w + j),
						   _mm512_loadu_ps(b + j));
			_mm512_storeu_ps(yr + j, o);
		}
		if (full < cols) {
			__m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(tk, xr + full), mean);
			__m512 o = _mm512_fmadd_ps(_mm512_mul_ps(d, rstd), _mm512_maskz_loadu_ps(tk, w + full),
						   _mm512_maskz_loadu_ps(tk, b + full));
			_mm512_mask_storeu_ps(yr + full, tk, o);
		}
	}
}

#pragma GCC pop_options

/* ---- the jobs: one part each ---- */

struct job {
	const float *x, *w, *b;
	float *y;
	int64_t n, rows, cols;
	int variant;            /* chain: 0 chain16, 1 chain16_sleef, 2 chain16_exp */
};

static void chain_part(void *ctx, int part, int nparts)
{
	const struct job *j = ctx;
	int64_t i0, i1;
	split(j->n, part, nparts, 16, &i0, &i1);
	if (use_avx512)
		chain_avx512(j->x + i0, j->y + i0, i1 - i0, j->variant);
	else
		chain_scalar(j->x + i0, j->y + i0, i1 - i0);
}

static void softmax_part(void *ctx, int part, int nparts)
{
	const struct job *j = ctx;
	int64_t r0, r1;
	split(j->rows, part, nparts, 1, &r0, &r1);
	if (use_avx512)
		softmax_avx512(j->x + r0 * j->cols, j->y + r0 * j->cols, r1 - r0, j->cols);
	else
		softmax_scalar(j->x + r0 * j->cols, j->y + r0 * j->cols, r1 - r0, j->cols);
}

static void layernorm_part(void *ctx, int part, int nparts)
{
	const struct job *j = ctx;
	int64_t r0, r1;
	split(j->rows, part, nparts, 1, &r0, &r1);
	const float *x = j->x + r0 * j->cols;
	float *y = j->y + r0 * j->cols;
	if (use_avx512)
		layernorm_avx512(x, j->w, j->b, y, r1 - r0, j->cols);
	else
		layernorm_scalar(x, j->w, j->b, y, r1 - r0, j->cols);
}

/* Buffers as tir's tensor.c makes large ones: on 2 MiB boundaries with
 * transparent huge pages asked for (fewer TLB misses when streaming). */
static float *alloc_floats(int64_t n)
{
	size_t huge = (size_t)2 << 20;
	size_t bytes = ((size_t)n * sizeof(float) + huge - 1) / huge * huge;
	float *p = aligned_alloc(huge, bytes);
	if (p)
		madvise(p, bytes, MADV_HUGEPAGE);
	if (!p) {
		fprintf(stderr, "hand_fused: out of memory\n");
		exit(1);
	}
	memset(p, 0, bytes);   /* touch every page before timing */
	return p;
}

/* Time one section: warm-up, then runs; print its lines. */
static void bench(const char *name, void (*fn)(void *, int, int), struct job *j, int64_t numel,
		  int runs, double min_ms, int warmup, const float *ref)
{
	static double t[MAX_RUNS], c[MAX_RUNS];
	double spent = 0;
	int nt = 0;
	for (int r = 0; nt < MAX_RUNS && (nt < runs || spent < min_ms); r++) {
		double t0 = now_ms(), c0 = cpu_ms();
		pool_job(fn, j);
		double dt = now_ms() - t0, dc = cpu_ms() - c0;
		if (r >= warmup) {
			c[nt] = dc;
			t[nt++] = dt;
			spent += dt;
		}
	}
	runs = nt;
	qsort(t, (size_t)runs, sizeof t[0], cmp_double);
	qsort(c, (size_t)runs, sizeof c[0], cmp_double);
	double med = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
	double cmed = runs % 2 ? c[runs / 2] : (c[runs / 2 - 1] + c[runs / 2]) / 2;
	double sum = 0, maxdiff = 0;
	for (int64_t i = 0; i < numel; i++) {
		double d = fabs((double)j->y[i] - (double)ref[i]);
		sum += j->y[i];
		maxdiff = d > maxdiff || d != d ? d : maxdiff;
	}
	printf("%s_ms_median %.4f\n", name, med);
	printf("%s_ms_min %.4f\n", name, t[0]);
	printf("%s_cpu_ms_median %.4f\n", name, cmed);
	printf("%s_runs %d\n", name, runs);
	printf("%s_sum %.9g\n", name, sum);
	printf("%s_maxdiff_vs_scalar %.3g\n", name, maxdiff);
}

static void usage(void)
{
	fprintf(stderr, "usage: hand_fused [--threads N] [--runs N] [--min-ms MS] [--warmup N] "
			"[--chain-n N] [chain|softmax|layernorm]...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int threads = 2, runs = 11, warmup = 3;
	int64_t chain_n = CHAIN_N;
	double min_ms = 1000;
	bool want[3] = {false, false, false}, any = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min-ms") && i + 1 < argc)
			min_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--chain-n") && i + 1 < argc)
			chain_n = atoll(argv[++i]);
		else if (!strcmp(argv[i], "chain"))
			any = want[0] = true;
		else if (!strcmp(argv[i], "softmax"))
			any = want[1] = true;
		else if (!strcmp(argv[i], "layernorm"))
			any = want[2] = true;
		else
			usage();
	}
	if (threads < 1 || threads > MAX_THREADS || runs < 1 || runs > MAX_RUNS || warmup < 0 ||
	    chain_n < 1)
		usage();
	if (!any)
		want[0] = want[1] = want[2] = true;
	use_avx512 = __builtin_cpu_supports("avx512f");
	printf("isa %s\n", use_avx512 ? "avx512f" : "scalar");
	printf("threads %d\n", threads);
	if (pool_start(threads)) {
		fprintf(stderr, "hand_fused: cannot start %d threads\n", threads);
		pool_stop();
		return 1;
	}

	if (want[0]) {
		struct job j = {.n = chain_n};
		float *x = alloc_floats(chain_n), *y = alloc_floats(chain_n), *ref = alloc_floats(chain_n);
		fill(x, chain_n, 0, -2, 2);
		chain_scalar(x, ref, chain_n);
		j.x = x;
		j.y = y;
		bench("chain", chain_part, &j, chain_n, runs, min_ms, warmup, ref);
		if (use_avx512) {
			j.variant = 1;
			bench("chain_sleef_tanh", chain_part, &j, chain_n, runs, min_ms, warmup, ref);
			j.variant = 2;
			bench("chain_tanh_exp", chain_part, &j, chain_n, runs, min_ms, warmup, ref);
		}
		free(x);
		free(y);
		free(ref);
	}
	if (want[1] || want[2]) {
		int64_t n = (int64_t)ROWS * COLS;
		float *x = alloc_floats(n), *y = alloc_floats(n), *ref = alloc_floats(n);
		float *w = alloc_floats(COLS), *b = alloc_floats(COLS);
		fill(x, n, 0, -2, 2);
		fill(w, COLS, 1, -2, 2);
		fill(b, COLS, 2, -2, 2);
		struct job j = {.x = x, .w = w, .b = b, .y = y, .rows = ROWS, .cols = COLS};
		if (want[1]) {
			softmax_scalar(x, ref, ROWS, COLS);
			bench("softmax", softmax_part, &j, n, runs, min_ms, warmup, ref);
		}
		if (want[2]) {
			layernorm_scalar(x, w, b, ref, ROWS, COLS);
			bench("layernorm", layernorm_part, &j, n, runs, min_ms, warmup, ref);
		}
		free(x);
		free(y);
		free(ref);
		free(w);
		free(b);
	}
	pool_stop();
	return 0;
}
