/*
 * test_plan_peak.c — the plan's memory, simulated before a run under a
 * budget (tir serve --max-memory), errs low, never high: for every sample
 * and every golden program that runs, fused and not, the simulated peak is
 * at most the peak the run then measures.  (A batch the simulation refuses
 * would have passed the budget.)  And it is not nothing: it is the
 * measured peak for a program whose values are all plain allocations.
 */
#include "exec/exec.h"
#include "check.h"
#include "unit_util.h"

#include <stdlib.h>
#include <string.h>

static int nruns;

/* Run the program text (dir/name, run from dir), fused and not; where it
 * runs, the simulated peak is at most the measured one. */
static void one(const char *dir, const char *name, const char *text, size_t len)
{
	for (int fuse = 0; fuse < 2; fuse++) {
		struct tir_program *p = tir_program_new();
		if (tir_program_parse(p, name, text, len, 0)) {
			tir_program_free(p);
			break;
		}
		struct tir_exec *x = tir_exec_new(p);
		struct tir_err err = {0};
		tir_exec_set_fuse(x, fuse);
		if (!tir_exec_run(x, 0, NULL, 0, &err)) {
			const struct tir_exec_stats *st = tir_exec_stats(x);
			nruns++;
			if (st->plan_peak_bytes > st->peak_bytes)
				fprintf(stderr, "%s/%s (fuse %d): planned %zu > measured %zu\n", dir, name, fuse,
					st->plan_peak_bytes, st->peak_bytes);
			CHECK(st->plan_peak_bytes <= st->peak_bytes);
		}
		tir_exec_free(x);
		tir_program_free(p);
	}
}

static void every(const char *dir)
{
	CHECK(unit_each_program(dir, one));
}

/* Plain allocations (no views, nothing in place): the simulation is the
 * measured peak, to the 64-byte rounding of each value and the packing
 * buffers of the products beyond the least the simulation counts (the
 * measured peak counts the scratch the kernels held: under 2 MiB here). */
static void exact(void)
{
	static const char text[] = "a = rand([1000, 300], seed=1)\n"
				   "b = rand([300, 200], seed=2)\n"
				   "c = a @ b\n"
				   "d = c @ transpose(b)\n"
				   "print sum(d, axis=0)\n";
	struct tir_program *p = tir_program_new();
	CHECK(tir_program_parse(p, "exact", text, strlen(text), 0) == 0);
	struct tir_exec *x = tir_exec_new(p);
	struct tir_err err = {0};
	CHECK(tir_exec_run(x, 0, NULL, 0, &err) == 0);
	const struct tir_exec_stats *st = tir_exec_stats(x);
	CHECK(st->plan_peak_bytes > 0 && st->plan_peak_bytes <= st->peak_bytes &&
	      st->peak_bytes - st->plan_peak_bytes <= 64 * 8 + ((size_t)2 << 20));
	tir_exec_free(x);
	tir_program_free(p);
}

int main(void)
{
	tir_mem_set_limit((size_t)1 << 60); /* a budget: the simulation runs */
	exact();
	every("samples");
	every("tests/golden");
	CHECK(nruns > 40);
	tir_mem_set_limit(0);
	return check_report("test_plan_peak");
}
