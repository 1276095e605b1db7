/*
 * test_ops.c — ops.def's columns against what reads them: the fuser's
 * answer for every op equals the table's (tir_fusable, tir_fuse_dtype on a
 * node of f32 operands), every op with a vector kernel in the table
 * resolves to one in vmath on every path this CPU has and for f32 and f64
 * (and no other op does), the columns agree with each other (kind, operand
 * count, cost), and the costs and classes the fuser used before they were
 * columns (its switches, pinned here) are the table's; tir_node_find, the
 * search a group of any length is indexed by, finds each member from any
 * end.
 */
#include "exec/vmath.h"
#include "fusion/fusion.h"

#include "check.h"

#include <stdlib.h>
#include <string.h>

static bool elementwise_class(enum tir_fuse f)
{
	return f == TIR_FUSE_FLOAT || f == TIR_FUSE_MASK || f == TIR_FUSE_SELECT;
}

/* ---- the columns agree with each other ---- */

static void test_columns(void)
{
	for (int op = 0; op < TIR_OP_COUNT; op++) {
		const struct tir_opdef *d = tir_op((enum tir_op)op);
		bool ok = true;
		if (elementwise_class(d->fuse))
			ok &= d->kind == TIR_KIND_ELEMWISE;
		if (d->fuse == TIR_FUSE_REDUCE)
			ok &= d->kind == TIR_KIND_REDUCE;
		if (d->fuse == TIR_FUSE_VIEW || d->fuse == TIR_FUSE_RESHAPE || d->fuse == TIR_FUSE_CAST)
			ok &= d->kind == TIR_KIND_MOVEMENT && d->ntensor == 1;
		/* a cost exactly where the fuser may recompute the op */
		ok &= (d->cost > 0) == (elementwise_class(d->fuse) || d->fuse == TIR_FUSE_CAST);
		ok &= d->cost <= 64;
		/* a vector kernel only for a float elementwise op of as many operands */
		if (d->vec == TIR_VEC_UNARY)
			ok &= d->fuse == TIR_FUSE_FLOAT && d->ntensor == 1 && d->nparams == 1;
		if (d->vec == TIR_VEC_BINARY || d->vec == TIR_VEC_BINARY_SV)
			ok &= d->fuse == TIR_FUSE_FLOAT && d->ntensor == 2 && d->nparams == 2;
		ok &= (unsigned)d->fuse < TIR_FUSE_COUNT && (unsigned)d->vec < TIR_VEC_COUNT;
		if (!ok)
			fprintf(stderr, "ops.def: the row of %s has columns that disagree\n", d->name);
		CHECK(ok);
	}
}

/* ---- vmath resolves exactly the table's vector kernels ---- */

static void test_vmath_kernels(void)
{
	static const enum tir_dtype dts[2] = {TIR_DTYPE_F32, TIR_DTYPE_F64};
	for (int op = 0; op < TIR_OP_COUNT; op++) {
		const struct tir_opdef *d = tir_op((enum tir_op)op);
		bool u = d->vec == TIR_VEC_UNARY;
		bool b = d->vec == TIR_VEC_BINARY || d->vec == TIR_VEC_BINARY_SV;
		bool sv = d->vec == TIR_VEC_BINARY_SV;
		bool ok = tir_vmath_unary_op((enum tir_op)op) == u && tir_vmath_binary_op((enum tir_op)op) == b;
		for (int t = 0; t < 2; t++) {
			ok &= (tir_vmath_unary_fn((enum tir_op)op, dts[t]) != NULL) == u;
			ok &= (tir_vmath_binary_fn((enum tir_op)op, dts[t]) != NULL) == b;
			for (int k = 0; k < 2; k++)
				ok &= (tir_vmath_binary_scalar_fn((enum tir_op)op, dts[t], k) != NULL) == sv;
		}
		/* never for the other dtypes */
		ok &= !tir_vmath_unary_fn((enum tir_op)op, TIR_DTYPE_I32) &&
		      !tir_vmath_binary_fn((enum tir_op)op, TIR_DTYPE_F16);
		if (!ok)
			fprintf(stderr, "vmath: %s resolves otherwise than ops.def's vec column says\n", d->name);
		CHECK(ok);
		if (!u && !b)
			continue;
		/* on every path this CPU has, a function that computes what the
		 * path in use computes (within the transcendentals' bounds) */
		float x[5] = {0.5f, 1.25f, 2.0f, 3.5f, 0.75f}, y[5] = {1.5f, 0.25f, 3.0f, 2.0f, 1.0f};
		double xd[5], yd[5];
		for (int i = 0; i < 5; i++)
			xd[i] = x[i], yd[i] = y[i];
		float want[5];
		double wantd[5];
		if (u) {
			tir_vmath_f32((enum tir_op)op, want, x, 5);
			tir_vmath_f64((enum tir_op)op, wantd, xd, 5);
		} else {
			tir_vmath2_f32((enum tir_op)op, want, x, y, 5);
			tir_vmath2_f64((enum tir_op)op, wantd, xd, yd, 5);
		}
		for (int p = 0; p < TIR_VMATH_PATH_COUNT; p++) {
			if (!tir_vmath_path_ok((enum tir_vmath_path)p))
				continue;
			float got[5];
			double gotd[5];
			if (u) {
				tir_vmath_f32_on((enum tir_vmath_path)p, (enum tir_op)op, got, x, 5);
				tir_vmath_f64_on((enum tir_vmath_path)p, (enum tir_op)op, gotd, xd, 5);
			} else {
				tir_vmath2_f32_on((enum tir_vmath_path)p, (enum tir_op)op, got, x, y, 5);
				tir_vmath2_f64_on((enum tir_vmath_path)p, (enum tir_op)op, gotd, xd, yd, 5);
			}
			for (int i = 0; i < 5; i++) {
				CHECK_NEAR(got[i], want[i], 1e-5);
				CHECK_NEAR(gotd[i], wantd[i], 1e-12);
			}
		}
	}
}

/* ---- the fuser's answer is the table's ---- */

static int loader(void *ud, const char *path, const char *name, enum tir_dtype *dtype, int *rank,
		  int64_t *shape, struct tir_err *err)
{
	return -1;
}

/* The node of `y = OP(x, x, ...)` (as many x as the op has operands) with
 * x of dtype dt, or NULL when the checker refuses it. */
static const struct tir_node *call_on(enum tir_op op, const char *dt, struct tir_program **pp)
{
	const struct tir_opdef *d = tir_op(op);
	char src[256];
	int len = snprintf(src, sizeof src, "input x: %s[4]\ny = %s(", dt, d->name);
	for (int k = 0; k < d->ntensor; k++)
		len += snprintf(src + len, sizeof src - (size_t)len, "%sx", k ? ", " : "");
	snprintf(src + len, sizeof src - (size_t)len, ")\n");
	struct tir_program *p = tir_program_new();
	tir_program_set_loader(p, loader, NULL);
	*pp = p;
	if (tir_program_parse(p, "t.tir", src, strlen(src), 0) != 0 || p->nstmts < 2)
		return NULL;
	return p->stmts[p->nstmts - 1].node;
}

static void test_fuser(void)
{
	int seen = 0;
	for (int op = 0; op < TIR_OP_COUNT; op++) {
		const struct tir_opdef *d = tir_op((enum tir_op)op);
		if (d->kind != TIR_KIND_ELEMWISE)
			continue;
		struct tir_program *p;
		const struct tir_node *n = call_on((enum tir_op)op, "f32", &p);
		if (!n) {
			/* logic ops take bool operands, the shifts integers */
			tir_program_free(p);
			n = call_on((enum tir_op)op, "bool", &p);
			if (!n) {
				tir_program_free(p);
				n = call_on((enum tir_op)op, "i32", &p);
			}
			CHECK(n != NULL && d->fuse == TIR_FUSE_NO);
			if (n)
				CHECK(!tir_fusable(n));
			tir_program_free(p);
			continue;
		}
		seen++;
		bool want = d->fuse != TIR_FUSE_NO;
		if (tir_fusable(n) != want)
			fprintf(stderr, "fuser: %s on f32 %sfusable, ops.def says %s\n", d->name,
				tir_fusable(n) ? "" : "not ", want ? "fusable" : "not");
		CHECK(tir_fusable(n) == want);
		/* a comparison computes a mask of the compared dtype */
		CHECK(tir_fuse_dtype(n) == (d->fuse == TIR_FUSE_MASK ? TIR_DTYPE_F32 : (enum tir_dtype)n->type.dtype));
		tir_program_free(p);
		/* no elementwise op fuses on integers */
		n = call_on((enum tir_op)op, "i32", &p);
		if (n && n->type.dtype == TIR_DTYPE_I32)
			CHECK(!tir_fusable(n));
		tir_program_free(p);
	}
	CHECK(seen >= 30);
}

/* ---- the classes and costs the fuser had as switches ----
 * fuse.c's op_cost, tir_fusable, is_cmp, is_view_op and is_red_op as they
 * were at 5fe7068: the table must give the same plans. */

static const struct {
	enum tir_op op;
	enum tir_fuse fuse;
	int cost;
} before[] = {
	{TIR_OP_NEG, TIR_FUSE_FLOAT, 1}, {TIR_OP_ABS, TIR_FUSE_FLOAT, 1},
	{TIR_OP_EXP, TIR_FUSE_FLOAT, 8}, {TIR_OP_LOG, TIR_FUSE_FLOAT, 8},
	{TIR_OP_SQRT, TIR_FUSE_FLOAT, 2}, {TIR_OP_RSQRT, TIR_FUSE_FLOAT, 2},
	{TIR_OP_RECIP, TIR_FUSE_FLOAT, 2}, {TIR_OP_SIN, TIR_FUSE_FLOAT, 8},
	{TIR_OP_COS, TIR_FUSE_FLOAT, 8}, {TIR_OP_TANH, TIR_FUSE_FLOAT, 8},
	{TIR_OP_SIGMOID, TIR_FUSE_FLOAT, 8}, {TIR_OP_RELU, TIR_FUSE_FLOAT, 1},
	{TIR_OP_GELU, TIR_FUSE_FLOAT, 8}, {TIR_OP_SILU, TIR_FUSE_FLOAT, 8},
	{TIR_OP_ERF, TIR_FUSE_FLOAT, 8}, {TIR_OP_FLOOR, TIR_FUSE_FLOAT, 1},
	{TIR_OP_CEIL, TIR_FUSE_FLOAT, 1}, {TIR_OP_ROUND, TIR_FUSE_FLOAT, 1},
	{TIR_OP_SIGN, TIR_FUSE_FLOAT, 1}, {TIR_OP_NOT, TIR_FUSE_NO, 0},
	{TIR_OP_ADD, TIR_FUSE_FLOAT, 1}, {TIR_OP_SUB, TIR_FUSE_FLOAT, 1},
	{TIR_OP_MUL, TIR_FUSE_FLOAT, 1}, {TIR_OP_DIV, TIR_FUSE_FLOAT, 2},
	{TIR_OP_POW, TIR_FUSE_FLOAT, 8}, {TIR_OP_MAXIMUM, TIR_FUSE_FLOAT, 1},
	{TIR_OP_MINIMUM, TIR_FUSE_FLOAT, 1}, {TIR_OP_MOD, TIR_FUSE_FLOAT, 2},
	{TIR_OP_EQ, TIR_FUSE_MASK, 1}, {TIR_OP_NE, TIR_FUSE_MASK, 1},
	{TIR_OP_LT, TIR_FUSE_MASK, 1}, {TIR_OP_LE, TIR_FUSE_MASK, 1},
	{TIR_OP_GT, TIR_FUSE_MASK, 1}, {TIR_OP_GE, TIR_FUSE_MASK, 1},
	{TIR_OP_AND, TIR_FUSE_NO, 0}, {TIR_OP_OR, TIR_FUSE_NO, 0},
	{TIR_OP_WHERE, TIR_FUSE_SELECT, 1}, {TIR_OP_CLIP, TIR_FUSE_FLOAT, 1},
	{TIR_OP_CAST, TIR_FUSE_CAST, 1},
	{TIR_OP_SUM, TIR_FUSE_REDUCE, 0}, {TIR_OP_MEAN, TIR_FUSE_REDUCE, 0},
	{TIR_OP_MAX, TIR_FUSE_REDUCE, 0}, {TIR_OP_MIN, TIR_FUSE_REDUCE, 0},
	{TIR_OP_PROD, TIR_FUSE_REDUCE, 0}, {TIR_OP_VAR, TIR_FUSE_REDUCE, 0},
	{TIR_OP_ARGMAX, TIR_FUSE_NO, 0}, {TIR_OP_ARGMIN, TIR_FUSE_NO, 0},
	{TIR_OP_TRANSPOSE, TIR_FUSE_VIEW, 0}, {TIR_OP_SLICE, TIR_FUSE_VIEW, 0},
	{TIR_OP_EXPAND, TIR_FUSE_VIEW, 0}, {TIR_OP_RESHAPE, TIR_FUSE_RESHAPE, 0},
	{TIR_OP_FLATTEN, TIR_FUSE_RESHAPE, 0}, {TIR_OP_SQUEEZE, TIR_FUSE_RESHAPE, 0},
	{TIR_OP_UNSQUEEZE, TIR_FUSE_RESHAPE, 0}, {TIR_OP_CONCAT, TIR_FUSE_NO, 0},
	{TIR_OP_MATMUL, TIR_FUSE_NO, 0}, {TIR_OP_SOFTMAX, TIR_FUSE_NO, 0},
};

static void test_before(void)
{
	for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
		const struct tir_opdef *d = tir_op(before[i].op);
		if (d->fuse != before[i].fuse || d->cost != before[i].cost)
			fprintf(stderr, "ops.def: %s is fuse %d cost %d, the fuser had %d, %d\n", d->name,
				(int)d->fuse, d->cost, (int)before[i].fuse, before[i].cost);
		CHECK(d->fuse == before[i].fuse && d->cost == before[i].cost);
	}
	/* vmath's lists as they were: 19 unary ops, 8 binary, 5 of them with
	 * one-value forms */
	static const enum tir_op unary[] = {
		TIR_OP_NEG, TIR_OP_ABS, TIR_OP_EXP, TIR_OP_LOG, TIR_OP_SQRT, TIR_OP_RSQRT,
		TIR_OP_RECIP, TIR_OP_SIN, TIR_OP_COS, TIR_OP_TANH, TIR_OP_SIGMOID, TIR_OP_RELU,
		TIR_OP_GELU, TIR_OP_SILU, TIR_OP_ERF, TIR_OP_FLOOR, TIR_OP_CEIL, TIR_OP_ROUND,
		TIR_OP_SIGN,
	};
	static const enum tir_op binary[] = {
		TIR_OP_ADD, TIR_OP_SUB, TIR_OP_MUL, TIR_OP_DIV, TIR_OP_POW,   /* with one-value forms */
		TIR_OP_MAXIMUM, TIR_OP_MINIMUM, TIR_OP_MOD,
	};
	for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
		CHECK(tir_op(unary[i])->vec == TIR_VEC_UNARY);
	for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
		CHECK(tir_op(binary[i])->vec == (i < 5 ? TIR_VEC_BINARY_SV : TIR_VEC_BINARY));
	CHECK(tir_op(TIR_OP_CLIP)->vec == TIR_VEC_NONE && tir_op(TIR_OP_NOT)->vec == TIR_VEC_NONE);
}

/* ---- tir_node_find, tir_id_find: a group's members and inputs searched by id ---- */

static void test_node_find(void)
{
	/* nodes with ids 0, 3, 6, ...: every one is found at its index from
	 * any n past it, none below n, and ids between them never */
	enum { N = 300 };
	static struct tir_node pool[3 * N];
	struct tir_node *nodes[N];
	for (int i = 0; i < 3 * N; i++)
		pool[i].id = (uint32_t)i;
	for (int i = 0; i < N; i++)
		nodes[i] = &pool[3 * i];
	int wrong = 0;
	for (int n = 0; n <= N; n++)
		for (int i = 0; i < 3 * N; i++) {
			int want = i % 3 == 0 && i / 3 < n ? i / 3 : -1;
			wrong += tir_node_find(nodes, n, &pool[i]) != want;
		}
	CHECK(wrong == 0);
	/* another node of the same id is not the one looked for */
	struct tir_node other = {.id = 3};
	CHECK(tir_node_find(nodes, N, &other) == -1);
	CHECK(tir_node_find(nodes, 0, &pool[0]) == -1);
	/* tir_id_find: the same search over the ids themselves (a plan's) */
	uint32_t ids[N];
	for (int i = 0; i < N; i++)
		ids[i] = 3 * (uint32_t)i;
	wrong = 0;
	for (int n = 0; n <= N; n++)
		for (int i = 0; i < 3 * N + 3; i++)
			wrong += tir_id_find(ids, n, (uint32_t)i) != (i % 3 == 0 && i / 3 < n ? i / 3 : -1);
	CHECK(wrong == 0);
}

int main(void)
{
	test_node_find();
	test_columns();
	test_vmath_kernels();
	test_fuser();
	test_before();
	return check_report("test_ops");
}
