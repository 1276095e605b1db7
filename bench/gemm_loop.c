/*
 * gemm_loop.c — one product, or the MLP, many times back to back, for A/B
 * comparisons of builds on a busy machine: after 300 ms of untimed runs
 * (pool threads awake, OpenBLAS's start-up spin over, buffers kept), REPS
 * timed runs; prints the median and fastest wall time and the process's
 * CPU time per run (which a loaded machine disturbs less).  Usage:
 *   gemm_loop THREADS REPS M K N        tir_k_matmul, f32 [M, K] @ [K, N]
 *   gemm_loop THREADS REPS M K N blas   cblas_sgemm on OpenBLAS's threads
 *   gemm_loop THREADS REPS mlp          bench/mlp_bench's MLP, tir_exec_run
 * Alternate the binaries of the two builds several times and compare the
 * medians of runs made while the machine was otherwise idle.  Not a test.
 */
#include "engine/engine.h"
#include "bench.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job {
	int kind;                    /* 0 tir matmul, 1 cblas_sgemm, 2 mlp */
	int64_t m, k, n;
	struct tir_tensor a, b, c;
	struct tir_exec *x;
};

static void run_once(struct job *j)
{
	struct tir_err err = {0};
	int rc = 0;
	if (j->kind == 0) {
		rc = tir_k_matmul(&j->a, &j->b, &j->c, &err);
	} else if (j->kind == 1) {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)j->m, (blasint)j->n,
			    (blasint)j->k, 1, tir_tensor_data(&j->a), (blasint)j->k,
			    tir_tensor_data(&j->b), (blasint)j->n, 0, tir_tensor_data(&j->c),
			    (blasint)j->n);
	} else {
		const char *want[] = {"y"};
		rc = tir_exec_run(j->x, 0, want, 1, &err);
	}
	if (rc) {
		fprintf(stderr, "run: %s\n", err.msg);
		exit(1);
	}
}

static struct tir_exec *mlp_exec(struct tir_program **pp)
{
	struct tir_program *p = tir_program_new();
	if (tir_program_parse(p, "mlp", bench_mlp_program, strlen(bench_mlp_program), 0)) {
		fprintf(stderr, "parse failed\n");
		exit(1);
	}
	struct tir_exec *x = tir_exec_new(p);
	const char *names[] = {"x", "w1", "w2", "w3", "b1", "b2", "b3"};
	int64_t shapes[][2] = {{256, 1024}, {1024, 1024}, {1024, 1024}, {1024, 10}, {1024}, {1024}, {10}};
	int ranks[] = {2, 2, 2, 2, 1, 1, 1};
	for (int i = 0; i < 7; i++) {
		struct tir_tensor t = {0};
		struct tir_err err = {0};
		bench_fill(&t, ranks[i], shapes[i], (unsigned)i + 1, 0.06f);
		if (tir_exec_set_input(x, names[i], &t, names[i], &err)) {
			fprintf(stderr, "input: %s\n", err.msg);
			exit(1);
		}
	}
	*pp = p;
	return x;
}

int main(int argc, char **argv)
{
	struct job j = {0};
	struct tir_program *p = NULL;
	int threads = argc > 2 ? atoi(argv[1]) : 0, reps = argc > 2 ? atoi(argv[2]) : 0;
	if (argc == 4 && !strcmp(argv[3], "mlp")) {
		j.kind = 2;
	} else if (argc == 6 || (argc == 7 && !strcmp(argv[6], "blas"))) {
		j.kind = argc == 7;
		j.m = atoll(argv[3]);
		j.k = atoll(argv[4]);
		j.n = atoll(argv[5]);
	} else {
		threads = 0;
	}
	if (threads < 1 || reps < 1 || (j.kind < 2 && (j.m < 1 || j.k < 1 || j.n < 1))) {
		fprintf(stderr, "usage: gemm_loop THREADS REPS M K N [blas] | gemm_loop THREADS REPS mlp\n");
		return 2;
	}
	tir_set_threads(threads);
	if (j.kind == 1)
		openblas_set_num_threads(threads);
	if (j.kind == 2) {
		j.x = mlp_exec(&p);
	} else {
		bench_fill(&j.a, 2, (int64_t[]){ j.m, j.k }, 1, 0.06f);
		bench_fill(&j.b, 2, (int64_t[]){ j.k, j.n }, 2, 0.06f);
		bench_fill(&j.c, 2, (int64_t[]){ j.m, j.n }, 3, 0.06f);
	}
	for (double t0 = bench_ms(CLOCK_MONOTONIC); bench_ms(CLOCK_MONOTONIC) - t0 < 300;)
		run_once(&j);
	double *wall = calloc((size_t)reps, sizeof *wall);
	double c0 = bench_ms(CLOCK_PROCESS_CPUTIME_ID);
	for (int r = 0; r < reps; r++) {
		double t0 = bench_ms(CLOCK_MONOTONIC);
		run_once(&j);
		wall[r] = bench_ms(CLOCK_MONOTONIC) - t0;
	}
	double cpu = (bench_ms(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps;
	qsort(wall, (size_t)reps, sizeof *wall, bench_cmp);
	if (j.kind == 2)
		printf("mlp 1024-1024-1024-10 batch 256 (tir)");
	else
		printf("[%lld,%lld]@[%lld,%lld] (%s)", (long long)j.m, (long long)j.k, (long long)j.k,
		       (long long)j.n, j.kind ? "openblas" : "tir");
	printf(" %d threads: wall med %.3f min %.3f ms, cpu/run %.3f ms\n", threads, wall[reps / 2],
	       wall[0], cpu);
	free(wall);
	if (j.kind == 2) {
		tir_exec_free(j.x);
		tir_program_free(p);
	} else {
		tir_tensor_release(&j.a);
		tir_tensor_release(&j.b);
		tir_tensor_release(&j.c);
	}
	return 0;
}
