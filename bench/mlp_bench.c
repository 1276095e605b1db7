/*
 * mlp_bench.c — the engine's MLP target: the forward pass of a
 * 1024-1024-1024-10 MLP at batch 256 through tir, against the same three
 * cblas_sgemm calls made directly from C, in one process and one run.
 * tir runs its own blocked, thread-count-independent gemms on its pool
 * with OpenBLAS at one thread; the direct calls use OpenBLAS's own
 * threading at the same thread count.  Prints medians of REPS runs and
 * the ratio.  Not a test: it asserts nothing about time.
 */
#include "exec/exec.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 21
#define ROUND 7      /* REPS is a multiple */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[n / 2];
}

static const char *program =
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

static void fill(struct tir_tensor *t, int rank, const int64_t *shape, unsigned seed)
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
		p[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * 0.06f;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	tir_blas_set_threads(threads);
	struct tir_program *p = tir_program_new();
	if (tir_program_parse(p, "mlp", program, strlen(program), 0)) {
		fprintf(stderr, "parse failed\n");
		return 1;
	}
	struct tir_exec *x = tir_exec_new(p);
	const char *names[] = {"x", "w1", "w2", "w3", "b1", "b2", "b3"};
	int64_t shapes[][2] = {{256, 1024}, {1024, 1024}, {1024, 1024}, {1024, 10}, {1024}, {1024}, {10}};
	int ranks[] = {2, 2, 2, 2, 1, 1, 1};
	struct tir_tensor t[7];
	const float *raw[7];
	for (int i = 0; i < 7; i++) {
		memset(&t[i], 0, sizeof t[i]);
		fill(&t[i], ranks[i], shapes[i], (unsigned)i + 1);
		struct tir_tensor keep = {0};
		tir_tensor_ref(&keep, &t[i]);
		raw[i] = tir_tensor_data(&keep);
		struct tir_err err = {0};
		if (tir_exec_set_input(x, names[i], &keep, names[i], &err)) {
			fprintf(stderr, "input: %s\n", err.msg);
			return 1;
		}
	}
	const char *want[] = {"y"};
	double tt[REPS], tc[REPS];
	float *h1 = aligned_alloc(64, 256 * 1024 * 4), *h2 = aligned_alloc(64, 256 * 1024 * 4);
	float *y = aligned_alloc(64, 256 * 16 * 4);
	/* Rounds of direct calls, then tir, so drift in the machine's load
	 * hits both.  After its threaded calls OpenBLAS's idle threads poll
	 * for a while (~0.1 s) before they sleep; tir's own pool would share
	 * the cores with them, so each round waits that out first. */
	for (int r0 = 0; r0 < REPS; r0 += ROUND) {
		openblas_set_num_threads(threads);
		for (int r = r0; r < r0 + ROUND; r++) {
			double t0 = now_ms();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 1024, 1024, 1,
				    raw[0], 1024, raw[1], 1024, 0, h1, 1024);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 1024, 1024, 1,
				    h1, 1024, raw[2], 1024, 0, h2, 1024);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 10, 1024, 1,
				    h2, 1024, raw[3], 10, 0, y, 10);
			tc[r] = now_ms() - t0;
		}
		openblas_set_num_threads(1);
		nanosleep(&(struct timespec){ .tv_nsec = 300000000 }, NULL);
		for (int r = r0; r < r0 + ROUND; r++) {
			double t0 = now_ms();
			struct tir_err err = {0};
			if (tir_exec_run(x, 0, want, 1, &err)) {
				fprintf(stderr, "run: %s\n", err.msg);
				return 1;
			}
			tt[r] = now_ms() - t0;
		}
	}
	double mt = median(tt, REPS), mc = median(tc, REPS);
	printf("mlp 1024-1024-1024-10 batch 256, %d threads: tir %.3f ms, direct sgemm %.3f ms, ratio %.3f\n",
	       threads, mt, mc, mt / mc);
	free(h1);
	free(h2);
	free(y);
	for (int i = 0; i < 7; i++)
		tir_tensor_release(&t[i]);
	tir_exec_free(x);
	tir_program_free(p);
	return 0;
}
