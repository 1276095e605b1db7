/*
 * gemm_bench.c — tir's matmul (gemm.c) against OpenBLAS's own threaded
 * cblas_sgemm on the same shapes, at one thread count: [256, 1024] @
 * [1024, 1024], 1024^3, 2048^3, a batched matmul ([32, 256, 64] @
 * [32, 64, 256]; OpenBLAS: one cblas_sgemm per batch entry) and a conv2d
 * (x [8, 64, 56, 56], w [64, 64, 3, 3], stride 1, padding 1; OpenBLAS: the
 * gemm of the same im2col product, [64, 576] @ [576, 3136] per image, each
 * image's column matrix made beforehand and not timed, each into its own
 * output: until Nov 27 one column matrix and one output served all eight,
 * so OpenBLAS's read the same 7 MiB and wrote the same 0.8 MiB eight
 * times, from the caches, where a conv2d reads and writes 8 images).
 * After the runs, the largest difference of tir's conv2d from
 * OpenBLAS's products is printed, relative to the largest |value|.  And
 * attention (q, k, v [4, 8, 512, 64]) against OpenBLAS's two products
 * per head, q k^T and the scores @ v, the products alone (the ratio, and
 * GFLOP/s counting them alone), and with tir's own softmax of the scaled
 * scores between them, on tir's pool at the same thread count (the
 * function tir's attention calls; timed apart and printed, with that
 * ratio).  Prints, per case, the median ms of each
 * (rounds of 5 interleaved, each after a pause and 50 ms of untimed
 * runs), GFLOP/s and the
 * ratio tir / OpenBLAS, of the medians and the median of the paired
 * runs' ratios (the r-th of each in a round).  Usage:
 * gemm_bench [THREADS [REPS [CASE]]].  Not a test: it asserts nothing.
 */
#include "exec/exec.h"
#include "bench.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bcase {
	const char *name;
	int kind;                    /* 0 matmul, 1 batched, 2 conv2d, 3 attention */
	int64_t batch, m, n, k;      /* conv: images, O, H*W, C*kh*kw;
				      * attention: batch x heads, Lq, Lk, d (= dv) */
};

static const struct bcase cases[] = {
	{ "[256,1024]@[1024,1024]", 0, 1, 256, 1024, 1024 },
	{ "1024^3", 0, 1, 1024, 1024, 1024 },
	{ "2048^3", 0, 1, 2048, 2048, 2048 },
	{ "[32,256,64]@[32,64,256]", 1, 32, 256, 256, 64 },
	{ "conv2d [8,64,56,56] 3x3x64", 2, 8, 64, 56 * 56, 64 * 9 },
	{ "attention [4,8,512,64]", 3, 32, 512, 512, 64 },
};

/* OpenBLAS's side of attention: the softmax of 16 rows of the scores a
 * task, on tir's pool (as many threads as OpenBLAS's) */
struct soft {
	float *s;
	int64_t rows, lk;
	double scale;
};

static void soft_task(void *arg, int64_t t)
{
	const struct soft *sf = arg;
	int64_t r0 = t * 16, n = sf->rows - r0 < 16 ? sf->rows - r0 : 16;
	tir_rows_scores(TIR_DTYPE_F32, sf->s + r0 * sf->lk, n, sf->lk, 0, false, sf->scale);
}

/* untimed runs of each side before its round, for this long at least */
#define WARM_MS 50.0

static void run_case(const struct bcase *c, int threads, int reps)
{
	struct tir_err err = {0};
	struct tir_tensor a = {0}, b = {0}, o = {0}, bias = {0};
	double *tt = calloc((size_t)reps, sizeof *tt), *tc = calloc((size_t)reps, sizeof *tc);
	double *ts = calloc((size_t)reps, sizeof *ts);     /* attention: the softmax's part */
	float *cols = NULL, *oc = NULL;
	int64_t cs[4];
	if (c->kind == 2) {
		int64_t xs[4] = { c->batch, 64, 56, 56 }, ws[4] = { 64, 64, 3, 3 };
		bench_fill(&a, 4, xs, 1, 1.0f);
		bench_fill(&b, 4, ws, 2, 1.0f);
		cs[0] = c->batch, cs[1] = 64, cs[2] = 56, cs[3] = 56;
		bench_fill(&o, 4, cs, 3, 1.0f);
		cols = malloc((size_t)(c->batch * c->k * c->n) * 4);
		oc = malloc((size_t)(c->batch * c->m * c->n) * 4);
		/* each image's column matrix: row (ch, i, j), column (oh, ow) */
		const float *x = tir_tensor_data(&a);
		for (int64_t e = 0; e < c->batch; e++)
			for (int64_t r = 0; r < c->k; r++)
				for (int64_t p = 0; p < c->n; p++) {
					int64_t ch = r / 9, ih = p / 56 + r / 3 % 3 - 1, iw = p % 56 + r % 3 - 1;
					cols[(e * c->k + r) * c->n + p] =
						ih < 0 || ih >= 56 || iw < 0 || iw >= 56
							? 0.0f
							: x[((e * 64 + ch) * 56 + ih) * 56 + iw];
				}
	} else if (c->kind == 3) {
		int64_t qs[4] = { 4, c->batch / 4, c->m, c->k }, os[4] = { 4, c->batch / 4, c->m, c->k };
		bench_fill(&a, 4, qs, 1, 1.0f);
		bench_fill(&b, 4, qs, 2, 1.0f);
		bench_fill(&bias, 4, qs, 4, 1.0f);     /* v */
		bench_fill(&o, 4, os, 3, 1.0f);
		memcpy(cs, os, sizeof cs);
		cols = malloc((size_t)(c->m * c->n) * 4);      /* the scores, reused */
	} else if (c->kind == 1) {
		int64_t as[3] = { c->batch, c->m, c->k }, bs[3] = { c->batch, c->k, c->n };
		bench_fill(&a, 3, as, 1, 1.0f);
		bench_fill(&b, 3, bs, 2, 1.0f);
		cs[0] = c->batch, cs[1] = c->m, cs[2] = c->n;
		bench_fill(&o, 3, cs, 3, 1.0f);
	} else {
		int64_t as[2] = { c->m, c->k }, bs[2] = { c->k, c->n };
		bench_fill(&a, 2, as, 1, 1.0f);
		bench_fill(&b, 2, bs, 2, 1.0f);
		cs[0] = c->m, cs[1] = c->n;
		bench_fill(&o, 2, cs, 3, 1.0f);
	}
	const float *pa = tir_tensor_data(&a), *pb = tir_tensor_data(&b);
	float *po = tir_tensor_data(&o);
	int round = reps < 5 ? reps : 5;
	for (int r0 = 0; r0 < reps; r0 += round) {
		int r1 = r0 + round < reps ? r0 + round : reps;
		/* each side's round starts after the other's threads have gone
		 * to sleep (OpenBLAS's poll a while first), with untimed runs
		 * for WARM_MS at least (caches, threads and the clock back up
		 * to speed: one run of a 2 ms product after the pause ran some
		 * 10% slow) */
		nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
		openblas_set_num_threads(threads);
		double w0 = bench_ms(CLOCK_MONOTONIC);
		for (int r = r0 - 1; r < r1; r++) {
			double t0 = bench_ms(CLOCK_MONOTONIC), soft = 0;
			for (int64_t e = 0; e < c->batch; e++) {
				if (c->kind == 3) {
					/* q k^T, then tir's own softmax of the
					 * scaled scores (the function tir's
					 * attention calls, on tir's pool; timed
					 * apart), then @ v */
					int64_t qo = e * c->m * c->k, ko = e * c->n * c->k;
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)c->m,
						    (blasint)c->n, (blasint)c->k, 1, pa + qo, (blasint)c->k,
						    pb + ko, (blasint)c->k, 0, cols, (blasint)c->n);
					double s0 = bench_ms(CLOCK_MONOTONIC);
					struct soft sf = { cols, c->m, c->n, 1 / sqrt((double)c->k) };
					tir_pool_run((c->m + 15) / 16, soft_task, &sf);
					soft += bench_ms(CLOCK_MONOTONIC) - s0;
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)c->m,
						    (blasint)c->k, (blasint)c->n, 1, cols, (blasint)c->n,
						    (const float *)tir_tensor_data(&bias) + ko, (blasint)c->k, 0,
						    po + qo, (blasint)c->k);
				} else if (c->kind == 2)
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)c->m,
						    (blasint)c->n, (blasint)c->k, 1, pb, (blasint)c->k,
						    cols + e * c->k * c->n, (blasint)c->n, 0,
						    oc + e * c->m * c->n, (blasint)c->n);
				else
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)c->m,
						    (blasint)c->n, (blasint)c->k, 1, pa + e * c->m * c->k,
						    (blasint)c->k, pb + e * c->k * c->n, (blasint)c->n, 0,
						    po + e * c->m * c->n, (blasint)c->n);
			}
			if (r < r0 && bench_ms(CLOCK_MONOTONIC) - w0 < WARM_MS)
				r--;            /* warming up still */
			else if (r >= r0)
				tc[r] = bench_ms(CLOCK_MONOTONIC) - t0 - soft, ts[r] = soft;
		}
		openblas_set_num_threads(1);
		nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
		w0 = bench_ms(CLOCK_MONOTONIC);
		for (int r = r0 - 1; r < r1; r++) {
			double t0 = bench_ms(CLOCK_MONOTONIC);
			int rc = c->kind == 3 ? tir_k_attention(&a, &b, &bias, false, &o, &err)
				 : c->kind == 2
				 ? tir_k_conv2d(&a, &b, NULL, (int64_t[2]){ 1, 1 }, (int64_t[2]){ 1, 1 }, &o, &err)
				 : tir_k_matmul(&a, &b, &o, &err);
			double ms = bench_ms(CLOCK_MONOTONIC) - t0;
			if (rc) {
				fprintf(stderr, "%s: %s\n", c->name, err.msg);
				exit(1);
			}
			if (r < r0 && bench_ms(CLOCK_MONOTONIC) - w0 < WARM_MS)
				r--;
			else if (r >= r0)
				tt[r] = ms;
		}
	}
	/* the r-th runs of a round, one of each, a second or so apart: their
	 * ratio holds better than the medians' when the machine's speed
	 * wanders (a VM whose host is busy) */
	double *tr = calloc((size_t)reps, sizeof *tr);
	for (int r = 0; r < reps; r++)
		tr[r] = tt[r] / tc[r];
	double mr = bench_median(tr, reps);
	/* attention: against the products and the softmax together too */
	for (int r = 0; r < reps; r++)
		tr[r] = tt[r] / (tc[r] + ts[r]);
	double mrs = bench_median(tr, reps), msoft = bench_median(ts, reps);
	free(tr);
	double mt = bench_median(tt, reps), mc = bench_median(tc, reps);
	double gflop = (c->kind == 3 ? 4.0 : 2.0) * (double)c->batch * (double)c->m *
		       (double)c->n * (double)c->k / 1e9;
	printf("%-28s %2d threads: tir %9.3f ms %7.1f GFLOP/s, openblas %9.3f ms %7.1f GFLOP/s, ratio %.3f (paired %.3f)\n",
	       c->name, threads, mt, gflop / mt * 1e3, mc, gflop / mc * 1e3, mt / mc, mr);
	if (c->kind == 3)
		printf("%-28s with the softmax (%.3f ms on OpenBLAS's side): paired ratio %.3f\n", "",
		       msoft, mrs);
	if (c->kind == 2) {
		double most = 0, diff = 0;
		for (int64_t i = 0; i < c->batch * c->m * c->n; i++) {
			double d = fabs((double)po[i] - (double)oc[i]);
			most = fabs((double)oc[i]) > most ? fabs((double)oc[i]) : most;
			diff = d > diff ? d : diff;
		}
		printf("%-28s conv2d against the products: largest difference %.2g of %.3g\n", "",
		       diff, most);
	}
	fflush(stdout);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	tir_tensor_release(&o);
	tir_tensor_release(&bias);
	free(cols);
	free(oc);
	free(tt);
	free(tc);
	free(ts);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	int reps = argc > 2 ? atoi(argv[2]) : 15;
	const char *only = argc > 3 ? argv[3] : NULL;
	if (threads < 1 || reps < 1) {
		fprintf(stderr, "usage: gemm_bench [THREADS [REPS [CASE]]]\n");
		return 2;
	}
	tir_set_threads(threads);
	printf("gemm: %s; blas: %s\n", tir_gemm_info(), tir_blas_info());
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (!only || strstr(cases[i].name, only))
			run_case(&cases[i], threads, reps);
	return 0;
}
