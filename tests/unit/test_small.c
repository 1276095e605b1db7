/*
 * test_small.c — groups over a handful of elements (vm.c's run_small: a
 * program of scalar statements, short vectors) and the literals a run
 * makes no value of (cpu.c: a kernel reads them from their nodes):
 *   - every program computes what --no-fuse computes, bit for bit: each
 *     kind of member (vmath's functions, casts, masks and where/clip, the
 *     reference kernels' fallback), inputs broadcast over the domain,
 *     literals of each kind, f64, a domain of exactly 64 bytes and one
 *     just past it (the blocks' vm), a literal read by an unfused op too;
 *   - a few values against their formulas computed here in double;
 *   - a kept kernel of a 10,000-statement program holds a bounded number
 *     of bytes a member (tir_fused_bytes, counted), and run again with its
 *     literals given as values (as a plan run again gives them) or not,
 *     it computes the same;
 *   - prepared from the graph's view (as a run prepares it), the same
 *     again, and the view is what it reads; the plan's block lent past
 *     what the plan holds (tir_plan_scratch), and to a long group's kernel
 *     (tir_plan_lend), one at a time.
 */
#include "engine/engine.h"
#include "fusion/fusion.h"
#include "check.h"
#include "unit_plan.h"
#include "unit_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* name in text: fused as unfused, bit for bit; the fused value in out
 * when out is given. */
static void same(const char *text, const char *name, struct tir_tensor *out)
{
	struct tir_tensor a = {0}, b = {0};
	CHECK(unit_run_named("small", text, name, true, NULL, &a) == 0);
	CHECK(unit_run_named("small", text, name, false, NULL, &b) == 0);
	bool ok = unit_same_bits(&a, &b);
	if (!ok)
		fprintf(stderr, "differs fused: %s in\n%s", name, text);
	CHECK(ok);
	if (out)
		*out = a;
	else
		tir_tensor_release(&a);
	tir_tensor_release(&b);
}

static double elem(const struct tir_tensor *t, int64_t i)
{
	struct tir_tensor c = {0};
	struct tir_err err = {0};
	double v = 0;
	if (!tir_tensor_convert(t, TIR_DTYPE_F64, &c, &err))
		v = ((const double *)tir_tensor_data(&c))[i];
	tir_tensor_release(&c);
	return v;
}

static const char *progs[][2] = {
	/* vmath's functions, masks, where and clip, literals spread over 3 */
	{"x = [0.1, -0.2, 0.3]\ny = tanh(x * 0.5 + 0.25) * x - 0.125\nz = where(y > 0.0, y, -y)\n"
	 "w = clip(z, 0.01, 0.2) + (x >= 0.1) * 2\n",
	 "w"},
	/* an input broadcast over the domain (gathered), an integer literal */
	{"a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]\nb = [0.5, 0.25, 0.125]\nc = (a * b + 1) / (b - 2)\n", "c"},
	/* a transposed input (a view gathered across its strides) */
	{"a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]\nt = transpose(a, [1, 0])\nc = exp(t * 0.25) - t\n", "c"},
	/* f64, and ops with no vmath function of their own */
	{"x = cast([0.1, 0.7, -2.5], f64)\ny = sign(erf(x * 3)) * floor(x * 7.5) + round(x * 2.5) + abs(x)\n", "y"},
	{"x = [0.5, -1.5, 2.25]\ny = pow(x * 1.5, 2.0) + maximum(x, 0.25) - minimum(x, -0.5) + relu(x)\n", "y"},
	/* bool and integer literals, a cast member */
	{"x = [1.5, -2.5]\nb = x > 0.0\ny = cast(b, f32) * 3 + x * True\n", "y"},
	/* a domain of exactly 64 bytes (16 f32), and one past it */
	{"x = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6]\n"
	 "y = sigmoid(x * 0.5 - 0.25) * x + 0.125\n",
	 "y"},
	{"x = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]\n"
	 "y = sigmoid(x * 0.5 - 0.25) * x + 0.125\n",
	 "y"},
	/* a literal of a big kernel (the blocks' vm reads it from its node) */
	{"x = cast(arange(4096), f32)\ny = sum(tanh(x * 0.001 - 0.5) * 0.25 + 1.5)\n", "y"},
	/* literals an unfused op reads (integers: made as values when read) */
	{"n = cast(7, i32) * 3 + 2\ny = cast(n, f32) * 0.5 + 0.25\n", "y"},
	/* scalars: + - * / inline, f64 and f32 */
	{"x = cast(0.7, f64)\ny = (x / 3 - 0.1) * x + x / 7\nz = y * y - y / x\n", "z"},
	{"x = cast(0.7, f32)\ny = (x / 3 - 0.1) * x + x / 7\nz = y * y - y / x + 1e-30 / x\n", "z"},
	/* one element each (vm.c runs + - * / of one element inline): a
	 * product rounded before the sum that reads it (x * x - 1 is 2^-22,
	 * not the 2^-22 + 2^-46 of a fused multiply-add), a quotient, f32
	 * and f64, infinities and a NaN */
	{"x = cast(1.00000012, f32)\ny = x * x - 1.0\nz = y / 3.0 + (x - 1.0) * 0.5\n", "z"},
	{"x = cast(1.0000000000000002, f64)\ny = x * x - 1.0\nz = y / 3.0 + (x - 1.0) * 0.5\n", "z"},
	{"x = cast(0.0, f32)\ny = 1.0 / x\nz = y - y\nw = (z * 2.0 + y) / -x\n", "w"},
	/* a scalar chain, as bench/statements.py writes it */
	{"x = cast(0.3, f32)\nt1 = x * 0.5\nt2 = t1 + 0.25\nt3 = tanh(t2)\nt4 = t3 * x\nt5 = t4 - 0.125\n"
	 "t6 = t5 * 0.5\nt7 = t6 + 0.25\nt8 = tanh(t7)\nt9 = t8 * t5\ny = t9 - 0.125\n",
	 "y"},
};

static void programs(void)
{
	for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
		same(progs[i][0], progs[i][1], NULL);
	/* values against their formulas */
	struct tir_tensor t = {0};
	same(progs[1][0], "c", &t);
	double a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5, 0.25, 0.125};
	for (int i = 0; i < 6; i++)
		CHECK_NEAR(elem(&t, i), (a[i] * b[i % 3] + 1) / (b[i % 3] - 2), 1e-6);
	tir_tensor_release(&t);
	same(progs[9][0], "y", &t);
	CHECK(elem(&t, 0) == 23 * 0.5 + 0.25);
	tir_tensor_release(&t);
	/* x * x rounded to f32 before - 1: exactly 2^-22, a third of it, plus 2^-24 */
	for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
		if (!strncmp(progs[i][0], "x = cast(1.00000012, f32)", 25)) {
			same(progs[i][0], "z", &t);
			float y = 0x1p-22f, z = y / 3.0f + 0x1p-23f * 0.5f;
			CHECK(elem(&t, 0) == (double)z);
			tir_tensor_release(&t);
		}
	same(progs[0][0], "w", &t);
	double x[3] = {0.1, -0.2, 0.3};
	for (int i = 0; i < 3; i++) {
		double y = tanh(x[i] * 0.5 + 0.25) * x[i] - 0.125, z = fabs(y);
		z = z < 0.01 ? 0.01 : z > 0.2 ? 0.2 : z;
		CHECK_NEAR(elem(&t, i), z + ((float)x[i] >= (float)0.1) * 2, 1e-6);
	}
	tir_tensor_release(&t);
}

/* bench/statements.py's program of n statements (the last named y). */
static char *statements(int n)
{
	struct tir_str s = {0};
	unit_statements(&s, n);
	return s.s;
}

/* The kept kernel of a 10,000-statement program: a few dozen bytes a
 * member; its result the unfused run's, prepared with its literals read
 * from their nodes (NULL) and run again with them given as values. */
static void kept_bytes(void)
{
	enum { N = 10000 };
	char *text = statements(N);
	struct tir_tensor want = {0};
	CHECK(unit_run_named("small", text, "y", false, NULL, &want) == 0);
	struct unit_plan u;
	const struct tir_group *g = unit_plan_last(&u, "kept", text);
	CHECK(g != NULL);
	if (g) {
		CHECK(g->n == N + 1);
		const struct tir_tensor **in = u.in;
		struct tir_tensor *vals = u.vals, *out = &u.out;
		struct tir_err err = {0};
		CHECK(tir_tensor_alloc(out, TIR_DTYPE_F32, 0, NULL, false, &err) == 0);
		struct tir_fused *f = tir_fused_prepare_at(g, in, out, &err);
		CHECK(f != NULL);
		if (f) {
			CHECK(tir_fused_run(f, &err) == 0);
			CHECK(unit_same_bits(out, &want));
			CHECK(tir_fused_keep(f));
			size_t bytes = tir_fused_bytes(f);
			if (bytes > (size_t)40 * N + 16 * (size_t)g->nin + 4096)
				fprintf(stderr, "a kept kernel of %d members holds %zu bytes\n", N + 1, bytes);
			CHECK(bytes <= (size_t)40 * N + 16 * (size_t)g->nin + 4096);
			/* again, each literal given as a value of its own (f64, as
			 * a run makes it; f32 for every other one) */
			memset(out->buf->data, 0, 4);
			for (int k = 0; k < g->nin; k++) {
				const struct tir_node *o = g->inputs[k];
				CHECK(o->op == TIR_OP_CONST);
				enum tir_dtype dt = k % 2 ? TIR_DTYPE_F32 : TIR_DTYPE_F64;
				CHECK(tir_tensor_alloc(&vals[k], dt, 0, NULL, false, &err) == 0);
				if (dt == TIR_DTYPE_F32)
					*(float *)tir_tensor_data(&vals[k]) = (float)o->fval;
				else
					*(double *)tir_tensor_data(&vals[k]) = o->fval;
				in[k] = &vals[k];
			}
			CHECK(tir_fused_rebind_at(f, in, out));
			CHECK(tir_fused_run(f, &err) == 0);
			CHECK(unit_same_bits(out, &want));
			/* the last statement's literal given another value: the
			 * kernel reads it (the first ones' the chain forgets) */
			struct tir_tensor *lv = &vals[g->nin - 1];
			if (lv->dtype == TIR_DTYPE_F32)
				*(float *)tir_tensor_data(lv) = 0.7f;
			else
				*(double *)tir_tensor_data(lv) = 0.7;
			CHECK(tir_fused_rebind_at(f, in, out));
			CHECK(tir_fused_run(f, &err) == 0);
			CHECK(!unit_same_bits(out, &want));
			tir_fused_free(f);
		}
	}
	unit_plan_free(&u);
	tir_tensor_release(&want);
	free(text);
}

/* A kernel prepared from the graph's view (tir_fused_prepare_view, as a
 * run prepares it) computes what one prepared from the nodes does, and
 * counts the same reads of its inputs; what it reads is the view (a
 * member's op changed there changes the result); a group without ids is
 * read from its nodes.  The plan lends the pages of its block past what
 * it holds (tir_plan_scratch), and none past the block or without one
 * (20,000 statements: a plan's arrays by node id of 512 KiB or more are
 * its block). */
static void from_view(void)
{
	enum { N = 20000 }; /* (a plan of 10,000 takes its arrays by node id, 420 KB, from malloc) */
	char *text = statements(N);
	struct tir_tensor want = {0};
	CHECK(unit_run_named("small", text, "y", false, NULL, &want) == 0);
	struct unit_plan u;
	const struct tir_group *g = unit_plan_last(&u, "view", text);
	struct tir_fview v = {0};
	CHECK(g != NULL);
	CHECK(tir_fview_make(u.p, &v) == 0);
	if (g && v.n) {
		struct tir_err err = {0};
		struct tir_tensor *out = &u.out;
		CHECK(tir_tensor_alloc(out, TIR_DTYPE_F32, 0, NULL, false, &err) == 0);
		struct tir_fused *a = tir_fused_prepare_at(g, u.in, out, &err);
		struct tir_fused *f = tir_fused_prepare_view(g, &v, NULL, u.in, out, &err);
		CHECK(a != NULL && f != NULL);
		if (a && f) {
			CHECK(tir_fused_run(f, &err) == 0);
			CHECK(unit_same_bits(out, &want));
			const int32_t *ia, *iv, *ra = tir_fused_input_reads(a, &ia), *rv = tir_fused_input_reads(f, &iv);
			CHECK(ra && rv && !memcmp(ra, rv, sizeof *ra * (size_t)g->nin) &&
			      !memcmp(ia, iv, sizeof *ia * (size_t)g->nin));
		}
		tir_fused_free(a);
		tir_fused_free(f);
		/* the view is what is read: the last add made a sub there */
		int j = g->n - 1;
		while (j > 0 && v.n[g->ids[j]].op != TIR_OP_ADD)
			j--;
		CHECK(j > 0);
		v.n[g->ids[j]].op = TIR_OP_SUB;
		if ((f = tir_fused_prepare_view(g, &v, NULL, u.in, out, &err))) {
			CHECK(tir_fused_run(f, &err) == 0);
			CHECK(!unit_same_bits(out, &want));
			tir_fused_free(f);
		}
		/* without ids, the nodes */
		struct tir_group bare = *g;
		bare.ids = bare.input_ids = NULL;
		CHECK((f = tir_fused_prepare_view(&bare, &v, NULL, u.in, out, &err)) != NULL);
		if (f) {
			CHECK(tir_fused_run(f, &err) == 0);
			CHECK(unit_same_bits(out, &want));
			tir_fused_free(f);
		}
		/* the plan's block, lent past what the plan holds */
		const struct tir_plan *pl = &u.plan;
		CHECK(pl->mem != NULL);
		unsigned char *s = tir_plan_scratch(pl, 64), *base = pl->mem;
		CHECK(s && s == base + pl->memtop && pl->memtop >= sizeof(int32_t) * u.p->nnodes &&
		      pl->memtop < pl->memsize);
		CHECK(tir_plan_scratch(pl, pl->memsize - pl->memtop) != NULL);
		CHECK(tir_plan_scratch(pl, pl->memsize - pl->memtop + 1) == NULL);
	}
	tir_fview_free(&v);
	unit_plan_free(&u);
	tir_tensor_release(&want);
	free(text);
	/* a short program's plan has no block */
	g = unit_plan_last(&u, "short", "x = cast(0.5, f32)\ny = tanh(x * 2.0) + x\n");
	CHECK(g != NULL && u.plan.mem == NULL && tir_plan_scratch(&u.plan, 1) == NULL);
	unit_plan_free(&u);
}

/* A kernel of 80,000 scalar statements prepared from the view with its
 * plan takes its memory from the plan's block (tir_plan_lend: some 1.3
 * MB, past what the plan holds), one kernel at a time: while it holds
 * it, neither another kernel nor tir_plan_scratch is lent it; freed, it
 * gives it back.  Both compute what the run does. */
static void lent_block(void)
{
	enum { N = 80000 };
	char *text = statements(N);
	struct tir_tensor want = {0};
	CHECK(unit_run_named("small", text, "y", false, NULL, &want) == 0);
	struct unit_plan u;
	const struct tir_group *g = unit_plan_last(&u, "lent", text);
	struct tir_fview v = {0};
	CHECK(g != NULL && u.plan.mem != NULL);
	CHECK(tir_fview_make(u.p, &v) == 0);
	if (g && v.n && u.plan.mem) {
		struct tir_err err = {0};
		struct tir_tensor *out = &u.out, again = {0};
		CHECK(tir_tensor_alloc(out, TIR_DTYPE_F32, 0, NULL, false, &err) == 0);
		CHECK(tir_tensor_alloc(&again, TIR_DTYPE_F32, 0, NULL, false, &err) == 0);
		struct tir_fused *f = tir_fused_prepare_view(g, &v, &u.plan, u.in, out, &err);
		CHECK(f != NULL && u.plan.lent && tir_plan_scratch(&u.plan, 64) == NULL);
		struct tir_fused *f2 = tir_fused_prepare_view(g, &v, &u.plan, u.in, &again, &err);
		CHECK(f2 != NULL && u.plan.lent);
		if (f && f2) {
			CHECK(tir_fused_run(f, &err) == 0 && tir_fused_run(f2, &err) == 0);
			CHECK(unit_same_bits(out, &want) && unit_same_bits(&again, &want));
		}
		tir_fused_free(f2);
		CHECK(u.plan.lent); /* (f2's memory was its own) */
		tir_fused_free(f);
		CHECK(!u.plan.lent && tir_plan_scratch(&u.plan, 64) != NULL);
		tir_tensor_release(&again);
	}
	tir_fview_free(&v);
	unit_plan_free(&u);
	tir_tensor_release(&want);
	free(text);
}

int main(void)
{
	programs();
	kept_bytes();
	from_view();
	lent_block();
	return check_report("test_small");
}
