/*
 * bench.h — what the gemm and MLP benchmarks (gemm_bench, gemm_loop,
 * mlp_bench) share: clocks, medians, inputs filled from rand() with a
 * seed, and the MLP they time.  Static functions: each benchmark is a
 * program of its own.  Include after exec/exec.h.
 */
#ifndef TIR_BENCH_H
#define TIR_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The time of clock (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID) in ms. */
static inline double bench_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (v is sorted). */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp);
	return v[n / 2];
}

/* A new f32 tensor of shape, its elements (rand() / RAND_MAX - 0.5) *
 * scale after srand(seed); exits on failure. */
static inline void bench_fill(struct tir_tensor *t, int rank, const int64_t *shape, unsigned seed, float scale)
{
	struct tir_err err = {0};
	if (tir_tensor_alloc(t, TIR_DTYPE_F32, rank, shape, false, &err)) {
		fprintf(stderr, "alloc: %s\n", err.msg);
		exit(1);
	}
	float *p = tir_tensor_data(t);
	int64_t n = tir_tensor_numel(t);
	srand(seed);
	for (int64_t i = 0; i < n; i++)
		p[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * scale;
}

/* The engine issue's MLP, 1024-1024-1024-10 at batch 256, as inputs. */
static const char *const bench_mlp_program =
	"input x: f32[256, 1024]\n"
	"input w1: f32[1024, 1024]\n"
	"input w2: f32[1024, 1024]\n"
	"input w3: f32[1024, 10]\n"
	"input b1: f32[1024]\n"
	"input b2: f32[1024]\n"
	"input b3: f32[10]\n"
	"h1 = relu(x @ w1 + b1)\n"
	"h2 = relu(h1 @ w2 + b2)\n"
	"y = h2 @ w3 + b3\n";

#endif
