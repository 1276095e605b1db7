/*
 * mlp_bench.c — the engine's MLP target: the forward pass of a
 * 1024-1024-1024-10 MLP at batch 256 through tir, against the same three
 * cblas_sgemm calls made directly from C, in one process and one run.
 * tir runs its own blocked, thread-count-independent gemms on its pool
 * with OpenBLAS at one thread; the direct calls use OpenBLAS's own
 * threading at the same thread count.  Prints medians of REPS runs and
 * the ratio.  Not a test: it asserts nothing about time.
 */
#include "engine/engine.h"
#include "bench.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 21
#define ROUND 7      /* REPS is a multiple */

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	tir_set_threads(threads);
	struct tir_program *p = tir_program_new();
	if (tir_program_parse(p, "mlp", bench_mlp_program, strlen(bench_mlp_program), 0)) {
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
		bench_fill(&t[i], ranks[i], shapes[i], (unsigned)i + 1, 0.06f);
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
			double t0 = bench_ms(CLOCK_MONOTONIC);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 1024, 1024, 1,
				    raw[0], 1024, raw[1], 1024, 0, h1, 1024);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 1024, 1024, 1,
				    h1, 1024, raw[2], 1024, 0, h2, 1024);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 10, 1024, 1,
				    h2, 1024, raw[3], 10, 0, y, 10);
			tc[r] = bench_ms(CLOCK_MONOTONIC) - t0;
		}
		openblas_set_num_threads(1);
		nanosleep(&(struct timespec){ .tv_nsec = 300000000 }, NULL);
		for (int r = r0; r < r0 + ROUND; r++) {
			double t0 = bench_ms(CLOCK_MONOTONIC);
			struct tir_err err = {0};
			if (tir_exec_run(x, 0, want, 1, &err)) {
				fprintf(stderr, "run: %s\n", err.msg);
				return 1;
			}
			tt[r] = bench_ms(CLOCK_MONOTONIC) - t0;
		}
	}
	double mt = bench_median(tt, REPS), mc = bench_median(tc, REPS);
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
