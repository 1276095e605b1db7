/*
 * tir_time.c — time one .tir program inside the process, start-up and
 * parse excluded: parse FILE once, give every `input` the benchmark's
 * deterministic data (below), then call tir_exec_run WARMUP times and then
 * at least RUNS times, and for at least MIN_MS ms in all (so that a short
 * run samples the machine's load over a fair stretch), for the value named
 * by --out, and report the median (and the median CPU time of the
 * process, all threads, which a busy machine disturbs less).  The
 * Python peers (bench/peers.py) are timed the same way, so both sides
 * leave out process start-up, imports and parsing.  Prints "key value"
 * lines for bench/run.sh.  Not a test: it checks nothing about time.
 *
 *     tir_time [--threads N] [--runs N] [--min-ms MS] [--warmup N]
 *              [--range LO HI] [--out NAME] [--no-fuse] [--files] FILE.tir
 *
 * --files lets the program read files (load(), as `tir run` does: an
 * imported ONNX model's weights).
 *
 * The data: element i (row-major) of the k-th input declared (k from 0) is
 *     h = (i * 2654435761 + k * 40503) mod 2^32
 *     v = LO + (HI - LO) * (h / 2^32)        computed in double, then cast
 * bench/hand_fused.c and bench/peers.py make the very same numbers, so the
 * output sums printed by all three can be compared.
 */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RUNS 10000

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the whole process (all threads), for comparing builds on a
 * busy machine: a descheduled thread does not count. */
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

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct tir_str s = {0};
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		tir_str_add(&s, buf, n);
	bool bad = ferror(f) || s.oom;
	fclose(f);
	if (bad) {
		tir_str_free(&s);
		return NULL;
	}
	*len = s.n;
	return s.s ? s.s : calloc(1, 1);
}

/* The k-th input's data (see the file head). */
static int fill_input(struct tir_exec *x, const struct tir_stmt *st, int k, double lo, double hi)
{
	const struct tir_ntype *ty = &st->node->type;
	struct tir_err err = {0};
	struct tir_tensor t = {0};
	if (!tir_dtype_is_float((enum tir_dtype)ty->dtype)) {
		fprintf(stderr, "tir_time: input %s: only float inputs are filled\n", st->name);
		return -1;
	}
	/* f16 and bf16: the f32 values, rounded */
	enum tir_dtype make = ty->dtype == TIR_DTYPE_F64 ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
	if (tir_tensor_alloc(&t, make, ty->rank, ty->shape, false, &err)) {
		fprintf(stderr, "tir_time: input %s: %s\n", st->name, err.msg);
		return -1;
	}
	int64_t n = tir_tensor_numel(&t);
	float *pf = tir_tensor_data(&t);
	double *pd = tir_tensor_data(&t);
	for (int64_t i = 0; i < n; i++) {
		uint64_t h = ((uint64_t)i * UINT64_C(2654435761) + (uint64_t)k * 40503u) & 0xffffffffu;
		double v = lo + (hi - lo) * ((double)h / 4294967296.0);
		if (make == TIR_DTYPE_F32)
			pf[i] = (float)v;
		else
			pd[i] = v;
	}
	if (make != ty->dtype) {
		struct tir_tensor h = {0};
		int rc = tir_tensor_convert(&t, (enum tir_dtype)ty->dtype, &h, &err);
		tir_tensor_release(&t);
		if (rc) {
			fprintf(stderr, "tir_time: input %s: %s\n", st->name, err.msg);
			return -1;
		}
		t = h;
	}
	if (tir_exec_set_input(x, st->name, &t, st->name, &err)) {
		fprintf(stderr, "tir_time: input %s: %s\n", st->name, err.msg);
		tir_tensor_release(&t);
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: tir_time [--threads N] [--runs N] [--min-ms MS] [--warmup N] [--range LO HI] "
			"[--out NAME] [--no-fuse] [--files] FILE.tir\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int threads = 2, runs = 11, warmup = 2;
	double lo = -2, hi = 2, min_ms = 1000;
	const char *out = "y", *path = NULL;
	bool fuse = true, files = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min-ms") && i + 1 < argc)
			min_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--range") && i + 2 < argc) {
			lo = atof(argv[++i]);
			hi = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--no-fuse"))
			fuse = false;
		else if (!strcmp(argv[i], "--files"))
			files = true;
		else if (argv[i][0] == '-' || path)
			usage();
		else
			path = argv[i];
	}
	if (!path || threads < 1 || runs < 1 || runs > MAX_RUNS || warmup < 0)
		usage();

	size_t len = 0;
	char *src = read_file(path, &len);
	if (!src) {
		fprintf(stderr, "tir_time: cannot read %s\n", path);
		return 1;
	}
	struct tir_program *p = tir_program_new();
	if (p && files)
		tir_program_set_loader(p, tir_load_type_from_file, NULL);
	if (!p || tir_program_parse(p, path, src, len, 0)) {
		for (int i = 0; p && i < tir_program_ndiags(p); i++) {
			char *m = tir_err_render(tir_program_diag(p, i));
			fputs(m ? m : "?\n", stderr);
			free(m);
		}
		tir_program_free(p);
		free(src);
		return 1;
	}
	free(src);

	tir_set_threads(threads);
	struct tir_exec *x = tir_exec_new(p);
	int rc = x ? 0 : 1, k = 0;
	if (x)
		tir_exec_set_fuse(x, fuse);
	for (size_t s = 0; s < p->nstmts && !rc; s++)
		if (p->stmts[s].kind == TIR_STMT_INPUT)
			rc = fill_input(x, &p->stmts[s], k++, lo, hi);

	const char *want[] = {out};
	static double t[MAX_RUNS], c[MAX_RUNS];
	double spent = 0;
	int nt = 0;
	for (int r = 0; !rc && nt < MAX_RUNS && (nt < runs || spent < min_ms); r++) {
		struct tir_err err = {0};
		double t0 = now_ms(), c0 = cpu_ms();
		rc = tir_exec_run(x, p->nstmts, want, 1, &err);
		double dt = now_ms() - t0, dc = cpu_ms() - c0;
		if (rc)
			fprintf(stderr, "tir_time: run: %s\n", err.msg);
		else if (r >= warmup) {
			c[nt] = dc;
			t[nt++] = dt;
			spent += dt;
		}
	}
	runs = nt;
	if (!rc) {
		const struct tir_exec_stats *st = tir_exec_stats(x);
		const struct tir_tensor *y = tir_exec_named(x, 0);
		double sum = 0;
		int64_t n = tir_tensor_numel(y);
		for (int64_t i = 0; i < n; i++)
			sum += tir_tensor_get_f64(y, i);
		qsort(t, (size_t)runs, sizeof t[0], cmp_double);
		qsort(c, (size_t)runs, sizeof c[0], cmp_double);
		double med = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
		double cmed = runs % 2 ? c[runs / 2] : (c[runs / 2 - 1] + c[runs / 2]) / 2;
		printf("threads %d\n", threads);
		printf("runs %d\n", runs);
		printf("ms_median %.4f\n", med);
		printf("ms_min %.4f\n", t[0]);
		printf("ms_max %.4f\n", t[runs - 1]);
		printf("cpu_ms_median %.4f\n", cmed);
		printf("nops %d\n", st->nops);
		printf("nkernels %d\n", st->nkernels);
		printf("peak_bytes %zu\n", st->peak_bytes);
		printf("numel %lld\n", (long long)n);
		printf("sum %.9g\n", sum);
	}
	tir_exec_free(x);
	tir_program_free(p);
	return rc ? 1 : 0;
}
