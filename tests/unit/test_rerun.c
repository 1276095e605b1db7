/*
 * test_rerun.c — a plan run again (a REPL line, a server's replay) runs its
 * fused kernels as the last run prepared them (tir_fused_keep), given that
 * run's inputs (tir_fused_rebind): every run computes what an unfused run
 * computes, bit for bit, when the input's values change (new buffers), when
 * its layout changes (a transposed view: the kernel is prepared again) and
 * back; and the plan comes from the cache from the second run on.  An exec
 * set to run once (tir run: tir_exec_set_once) makes its plan every time,
 * never from the cache, and computes the same bits.
 */
#include "engine/engine.h"
#include "check.h"
#include "unit_util.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A program of one input x, ops fused into kernels reading it and literals. */
static const char *progs[] = {
	"input x: f32[2, 3]\ny = tanh(x * 0.5 + 0.25) * x - 0.125\nz = sum(exp(y) * x, axis=1)\n",
	/* a chain of scalars, as bench/statements.py writes them */
	"input x: f32[]\nt1 = x * 0.5\nt2 = t1 + 0.25\nt3 = tanh(t2)\nt4 = t3 * x\nt5 = t4 - 0.125\n"
	"t6 = t5 * 0.5\nt7 = t6 + 0.25\nt8 = tanh(t7)\nt9 = t8 * t5\ny = t9 - 0.125\nz = y * y\n",
};

/* x's value for round r: contiguous, or (transposed) a view across a
 * buffer of the transposed shape. */
static void make_x(const struct tir_ntype *ty, int r, bool transposed, struct tir_tensor *t)
{
	struct tir_err err = {0};
	int64_t shape[TIR_MAX_RANK];
	int rank = ty->rank;
	for (int d = 0; d < rank; d++)
		shape[d] = transposed && rank == 2 ? ty->shape[1 - d] : ty->shape[d];
	struct tir_tensor a = {0};
	CHECK(tir_tensor_alloc(&a, TIR_DTYPE_F32, rank, shape, false, &err) == 0);
	float *v = tir_tensor_data(&a);
	for (int64_t i = 0; i < tir_tensor_numel(&a); i++)
		v[i] = (float)(0.3 + 0.17 * (double)(i + 1) * (r + 1) - 0.05 * (double)r);
	if (transposed && rank == 2) {
		int perm[2] = {1, 0};
		tir_view_transpose(&a, perm, t);
		tir_tensor_release(&a);
	} else {
		*t = a;
	}
}

static void one(const char *text)
{
	enum { NX = 3 }; /* unfused, fused, fused once */
	struct tir_program *p[NX];
	struct tir_exec *x[NX];
	for (int f = 0; f < NX; f++) {
		p[f] = tir_program_new();
		CHECK(tir_program_parse(p[f], "rerun", text, strlen(text), 0) == 0);
		x[f] = tir_exec_new(p[f]);
		tir_exec_set_fuse(x[f], f >= 1);
		tir_exec_set_once(x[f], f == 2);
	}
	const struct tir_ntype *ty = &p[0]->stmts[0].node->type;
	const char *names[] = {"y", "z"};
	/* new values, then transposed (another layout), then back */
	bool transposed[] = {false, false, false, true, true, false, false};
	for (int r = 0; r < (int)(sizeof transposed / sizeof *transposed); r++) {
		for (int f = 0; f < NX; f++) {
			struct tir_tensor t = {0};
			struct tir_err err = {0};
			make_x(ty, r, transposed[r], &t);
			CHECK(tir_exec_set_input(x[f], "x", &t, "x", &err) == 0);
			tir_tensor_release(&t);
			CHECK(tir_exec_run(x[f], 0, names, 2, &err) == 0);
		}
		if (r > 0)
			CHECK(tir_exec_stats(x[1])->plan_cached);
		CHECK(!tir_exec_stats(x[2])->plan_cached);
		for (int f = 1; f < NX; f++)
			for (int k = 0; k < 2; k++) {
				bool ok = unit_same_bits(tir_exec_named(x[0], (size_t)k),
							 tir_exec_named(x[f], (size_t)k));
				if (!ok)
					fprintf(stderr, "round %d: %s differs fused%s\n", r, names[k],
						f == 2 ? " (once)" : "");
				CHECK(ok);
			}
	}
	for (int f = 0; f < NX; f++) {
		tir_exec_free(x[f]);
		tir_program_free(p[f]);
	}
}

/* A plan's kept kernels hold what they need, not the block a larger kernel
 * left behind: after a kernel of 30,000 members (some 30 MiB of working
 * memory, given back to the thread's spare when its plan goes), 16 plans
 * of a few members over an input, each kept alive with its kernel, hold
 * well under a MiB each (a server keeps such plans in its graph cache;
 * the first of them held the big block before). */
/* Bytes malloc holds for the program: in its heaps and mapped alone. */
static size_t held(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

static void kept_small(void)
{
	struct tir_err err = {0};
	const char *big = "input x: f32[4]\nfor i in range(30000) { x = x + 0.5 }\ny = sum(x)\n";
	const char *small = "input x: f32[4]\ny = sum(tanh(x * 0.5) + 0.25)\n";
	const char *names[] = {"y"};
	enum { N = 16 };
	struct tir_program *ps[N + 1];
	struct tir_exec *xs[N + 1];
	size_t before = held();
	for (int i = 0; i <= N; i++) {
		const char *text = i == 0 ? big : small;
		ps[i] = tir_program_new();
		CHECK(tir_program_parse(ps[i], "kept", text, strlen(text), 0) == 0);
		xs[i] = tir_exec_new(ps[i]);
		struct tir_tensor t = {0};
		make_x(&ps[i]->stmts[0].node->type, i, false, &t);
		CHECK(tir_exec_set_input(xs[i], "x", &t, "x", &err) == 0);
		tir_tensor_release(&t);
		CHECK(tir_exec_run(xs[i], 0, names, 1, &err) == 0);
		if (i == 0) { /* its kernel to the thread's spare */
			tir_exec_free(xs[0]);
			tir_program_free(ps[0]);
		}
	}
	size_t grew = held() - before;
	if (grew > (size_t)N << 20)
		fprintf(stderr, "16 small plans hold %zu bytes\n", grew);
	CHECK(grew <= (size_t)N << 20);
	for (int i = 1; i <= N; i++) {
		tir_exec_free(xs[i]);
		tir_program_free(ps[i]);
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
		one(progs[i]);
	kept_small();
	return check_report("test_rerun");
}
