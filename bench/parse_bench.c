/*
 * parse_bench.c — how fast the front end reads a big program.  Builds a
 * valid program of N statements (default 100,000) in memory — inputs, then
 * chains of bindings mixing calls with attributes, infix expressions, list
 * literals, annotations and prints — and times tir_program_parse (which
 * lexes, parses and type-checks) over several fresh programs, then
 * tir_program_format once.  Prints "key value" lines for bench/run.sh.
 * Not a test: it checks only that the program parses.
 *
 *     parse_bench [STATEMENTS [RUNS]]
 */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The program text: every value keeps the shape [64, 128] so each line
 * type-checks against the one before. */
static char *make_program(long nstmt, size_t *len, long *nprints)
{
	struct tir_str s = {0};
	long n = 0, prints = 0;
	tir_str_addf(&s, "# parse_bench: %ld statements\n", nstmt);
	tir_str_addf(&s, "input x: f32[64, 128]\n");
	tir_str_addf(&s, "input w0: f32[128, 128]\n");
	n += 2;
	for (int i = 0; i < 4 && n < nstmt; i++, n++)
		tir_str_addf(&s, "b%d = randn([128], seed=%d) * 0.05\n", i, i);
	tir_str_addf(&s, "v0 = x\n");
	n++;
	long v = 0;
	while (n < nstmt) {
		long p = v++;
		switch (v % 10) {
		case 0:
			tir_str_addf(&s, "v%ld = relu(v%ld * 0.5 + b%ld)\n", v, p, v % 4);
			break;
		case 1:
			tir_str_addf(&s, "v%ld = softmax(v%ld, axis=-1)\n", v, p);
			break;
		case 2:
			tir_str_addf(&s, "v%ld = v%ld @ w0 / 11.3137 - b%ld\n", v, p, v % 4);
			break;
		case 3:
			tir_str_addf(&s, "v%ld = sum(v%ld, axis=1, keepdims=true) + v%ld\n", v, p, p);
			break;
		case 4:
			tir_str_addf(&s, "c%ld = [[0.5, 1.5, -2.0, 3.25], [4.0, 5.5, 6.0, -7.75]]\n", v);
			tir_str_addf(&s, "v%ld = v%ld + mean(c%ld)\n", v, p, v);
			n++;
			break;
		case 5:
			tir_str_addf(&s, "v%ld: f32[64, 128] = maximum(v%ld, 0.0)\n", v, p);
			break;
		case 6:
			tir_str_addf(&s, "v%ld = reshape(transpose(v%ld, [1, 0]), [64, 128])\n", v, p);
			break;
		case 7:
			tir_str_addf(&s, "v%ld = layernorm(v%ld, ones([128]), zeros([128]), eps=1e-5)\n", v, p);
			break;
		case 8:
			tir_str_addf(&s, "v%ld = where(gt(v%ld, 0), v%ld, -v%ld * 0.01)\n", v, p, p, p);
			break;
		default:
			tir_str_addf(&s, "v%ld = cast(clip(v%ld, -1, 1), f32)\n", v, p);
			break;
		}
		n++;
		if (v % 50 == 0 && n < nstmt) {
			tir_str_addf(&s, "print v%ld, sum(v%ld, axis=0)\n", v, v);
			n++;
			prints++;
		}
	}
	if (s.oom) {
		tir_str_free(&s);
		return NULL;
	}
	*len = s.n;
	*nprints = prints;
	return s.s;
}

int main(int argc, char **argv)
{
	long nstmt = argc > 1 ? atol(argv[1]) : 100000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (nstmt < 10 || runs < 1 || runs > 100) {
		fprintf(stderr, "usage: parse_bench [STATEMENTS>=10 [RUNS 1..100]]\n");
		return 2;
	}
	size_t len;
	long nprints;
	char *src = make_program(nstmt, &len, &nprints);
	if (!src) {
		fprintf(stderr, "parse_bench: out of memory\n");
		return 1;
	}
	double t[100];
	size_t arena = 0, nnodes = 0, nstmts = 0;
	for (int r = 0; r < runs; r++) {
		struct tir_program *p = tir_program_new();
		double t0 = now_s();
		int rc = p ? tir_program_parse(p, "bench.tir", src, len, 0) : -TIR_ENOMEM;
		t[r] = now_s() - t0;
		if (rc) {
			fprintf(stderr, "parse_bench: the generated program does not parse:\n");
			for (int i = 0; p && i < tir_program_ndiags(p); i++) {
				char *m = tir_err_render(tir_program_diag(p, i));
				fputs(m ? m : "?\n", stderr);
				free(m);
			}
			tir_program_free(p);
			free(src);
			return 1;
		}
		arena = p->arena.used_total + p->node_arena.used_total;
		nnodes = p->nnodes;
		nstmts = p->nstmts;
		tir_program_free(p);
	}
	qsort(t, (size_t)runs, sizeof t[0], cmp_double);
	double med = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;

	/* the canonical printer over the same program, once */
	struct tir_program *p = tir_program_new();
	double tf = 0;
	size_t fmt_len = 0;
	if (p && tir_program_parse(p, "bench.tir", src, len, 0) == 0) {
		double t0 = now_s();
		char *f = tir_program_format(p);
		tf = now_s() - t0;
		fmt_len = f ? strlen(f) : 0;
		free(f);
	}
	tir_program_free(p);

	printf("statements %zu\n", nstmts);
	printf("prints %ld\n", nprints);
	printf("nodes %zu\n", nnodes);
	printf("source_bytes %zu\n", len);
	printf("runs %d\n", runs);
	printf("parse_ms_median %.2f\n", med * 1e3);
	printf("parse_ms_min %.2f\n", t[0] * 1e3);
	printf("parse_ms_max %.2f\n", t[runs - 1] * 1e3);
	printf("statements_per_s %.0f\n", (double)nstmts / med);
	printf("mb_per_s %.1f\n", (double)len / med / 1e6);
	printf("arena_bytes %zu\n", arena);
	printf("arena_bytes_per_statement %.1f\n", (double)arena / (double)nstmts);
	printf("fmt_ms %.2f\n", tf * 1e3);
	printf("fmt_bytes %zu\n", fmt_len);
	free(src);
	return 0;
}
