/*
 * test_blocks.c — the blocks' vm (vm.c) on the operands a chain reads:
 *   - every program computes what --no-fuse computes, bit for bit, under
 *     the vector path in use (make test-kernels runs this under each):
 *     a scalar on either side of each op that has a one-value function
 *     (add sub mul div pow), NaN, inf and -0 among them, ops without one
 *     (maximum, minimum, mod: the scalar spread), masks, where and clip,
 *     strided and reversed views (the reference kernels' fallback), a
 *     value widened from f16, f64, a value per row read by a reducing
 *     group and by an elementwise one, lengths that end in a part block,
 *     a view of a computed value read broadcast over more axes;
 *   - a scalar or a value per row that the blocks read is taken as one
 *     value, never copied block by block, and a contiguous input is read
 *     where it lies (tir_fused_sources).
 */
#include "engine/engine.h"
#include "fusion/fusion.h"
#include "check.h"
#include "unit_plan.h"
#include "unit_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Input t of type ty (f32 or f64), its values from a formula, some
 * special. */
static void make_input(const struct tir_ntype *ty, struct tir_tensor *t)
{
	struct tir_err err = {0};
	CHECK(tir_tensor_alloc(t, ty->dtype, ty->rank, ty->shape, false, &err) == 0);
	int64_t n = tir_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		double v = 2.5 * sin(0.37 * (double)i + 0.1) + 0.001 * (double)(i % 17);
		if (i % 97 == 5)
			v = i % 2 ? -0.0 : 0.0;
		else if (i % 101 == 7)
			v = NAN;
		else if (i % 103 == 11)
			v = i % 2 ? INFINITY : -INFINITY;
		if (ty->dtype == TIR_DTYPE_F64)
			((double *)tir_tensor_data(t))[i] = v;
		else
			((float *)tir_tensor_data(t))[i] = (float)v;
	}
}

/* Bind every input of p's program to make_input's values. */
static void bind_inputs(struct tir_program *p, struct tir_exec *x)
{
	for (size_t s = 0; s < p->nstmts; s++) {
		const struct tir_node *n = p->stmts[s].node;
		if (p->stmts[s].kind != TIR_STMT_INPUT)
			continue;
		struct tir_tensor t = {0};
		struct tir_err err = {0};
		make_input(&n->type, &t);
		CHECK(tir_exec_set_input(x, p->stmts[s].name, &t, p->stmts[s].name, &err) == 0);
		tir_tensor_release(&t);
	}
}

static void same(const char *text)
{
	struct tir_tensor a = {0}, b = {0};
	CHECK(unit_run_named("blocks", text, "y", true, bind_inputs, &a) == 0);
	CHECK(unit_run_named("blocks", text, "y", false, bind_inputs, &b) == 0);
	bool ok = unit_same_bits(&a, &b);
	if (!ok)
		fprintf(stderr, "differs fused:\n%s", text);
	CHECK(ok);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
}

static void programs(void)
{
	static const char *const progs[] = {
		/* bench/chain.tir's chain */
		"input x: f32[5003]\ny = sqrt(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)\n",
		"input x: f64[5003]\ny = sqrt(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)\n",
		"input x: f32[4099]\ny = tanh((x + 0.75) * (1.5 + x)) - (x - 0.75) / (2 - x)\n",
		"input x: f32[4099]\ny = (x * 0.75 + 1.5 / x) + (x / 3 - 1.5 * x) + 2 ** x + x ** 2\n",
		"input x: f32[4099]\ny = (x * nan + (nan - x)) + ((x + -0.0) * (-0.0 + x)) + (inf * x - x / -0.0)\n",
		"input x: f32[4099]\ny = (-0.0 - x) * (x - -0.0) + x ** -0.0 + nan ** x\n",
		"input x: f32[4099]\ny = maximum(x, 0.5) + minimum(-0.25, x) + x % 0.75 + maximum(x * 0.5, x)\n",
		"input x: f32[4099]\ny = where(x > 0.5, x * 2, 0.25) + clip(x, -1, 1) + (x >= 0.1) + where(x < 0, 1.5, x)\n",
		"input x: f32[8200]\ny = tanh(x[::2] * 0.5) + x[1::2] * x[::-2]\n",
		"input x: f32[4099]\nh = cast(x * 3, f16)\nprint h[0]\ny = exp(cast(h, f32) * 0.125) + 0.5\n",
		"input m: f32[37, 129]\ninput c: f32[37, 1]\ny = m * c + 0.5 - c / 3 + maximum(c, m)\n",
		"input m: f32[37, 129]\ninput c: f32[37, 1]\n"
		"e = exp(m * c - max(m * c, axis=1, keepdims=True))\ny = e / sum(e, axis=1, keepdims=True) + c * 0.5\n",
		"input m: f32[37, 600]\ninput c: f32[37, 1]\ny = sum(tanh(m * c + 0.25) * c, axis=1)\n",
		"input m: f32[5, 3000]\ninput r: f32[3000]\ny = m * r + r * 0.5 - (m - 0.5)\n",
		/* a view of a computed value read broadcast over more axes:
		 * the member below is computed in the domain's layout through
		 * the view and the broadcast */
		"input x: f32[12, 9]\ninput z: f32[2, 5, 9]\ny = slice(ceil(x), axis=0, start=9, step=-2) + z\n",
		"input x: f32[12, 9]\ninput z: f32[2, 5, 9]\ny = slice(ceil(x), axis=0, start=1, stop=11, step=2) * z\n",
		"input x: f32[12, 9]\ninput z: f32[2, 5, 9]\ny = sum(slice(ceil(x), axis=0, start=9, step=-2) + z, axis=2)\n",
		"input x: f32[12, 9]\ninput z: f32[3, 9, 12]\ny = transpose(tanh(x) * 0.5, [1, 0]) + z\n",
		"input x: f64[12, 9]\ninput z: f32[1, 2, 5, 9]\nt = slice(ceil(ceil(x)), axis=0, start=9, step=-2)\n"
		"y = transpose(relu(where(t, t, z)), [3, 0, 1, 2])\n",
	};
	for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
		same(progs[i]);
}

/* The group computing text's last node y, prepared over make_input's
 * values: its sources counted (tir_fused_sources). */
static void sources(const char *text, int direct, int one, int copied)
{
	struct unit_plan u;
	const struct tir_group *g = unit_plan_last(&u, "sources", text);
	CHECK(g != NULL);
	if (g) {
		const struct tir_node *root = u.root;
		const struct tir_tensor **in = u.in;
		struct tir_tensor *vals = u.vals, *out = &u.out;
		struct tir_err err = {0};
		for (int k = 0; k < g->nin; k++)
			if (g->inputs[k]->op == TIR_OP_INPUT) {
				make_input(&g->inputs[k]->type, &vals[k]);
				in[k] = &vals[k];
			}
		CHECK(tir_tensor_alloc(out, root->type.dtype, root->type.rank, root->type.shape, false, &err) == 0);
		struct tir_fused *f = tir_fused_prepare_at(g, in, out, &err);
		CHECK(f != NULL);
		if (f) {
			int d, o, c;
			tir_fused_sources(f, &d, &o, &c);
			if (d != direct || o != one || c != copied)
				fprintf(stderr, "sources: %d direct, %d one value, %d copied; expected %d %d %d\n%s",
					d, o, c, direct, one, copied, text);
			CHECK(d == direct && o == one && c == copied);
			CHECK(tir_fused_run(f, &err) == 0);
			tir_fused_free(f);
		}
	}
	unit_plan_free(&u);
}

int main(void)
{
	programs();
	/* x in place, 0.5 and 0.25 one value each */
	sources("input x: f32[5003]\ny = tanh(x * 0.5) + 0.25\n", 1, 2, 0);
	/* maximum has no one-value function: 0.5 spread once per shape of block */
	sources("input x: f32[5003]\ny = maximum(x * 0.5, 0.5)\n", 1, 1, 0);
	/* a value per row, read by a reducing group */
	sources("input m: f32[37, 129]\ninput c: f32[37, 1]\ny = sum(exp(m * c) * 0.5, axis=1)\n", 1, 2, 0);
	/* a strided view is read in place, a value of f16 widened */
	sources("input x: f32[8200]\ny = tanh(x[::2] * 0.5)\n", 1, 1, 0);
	return check_report("test_blocks");
}
