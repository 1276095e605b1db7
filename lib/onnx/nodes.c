/*
 * nodes.c — one emitter per ONNX op of the default domain (opsets 1-17,
 * a node of opset 1-6 rewritten first in the form of 7 by nodes_misc.c): each writes the node as tir statements over today's ops, or folds it
 * when its inputs are known (shape arithmetic), or says why it cannot.
 * The table at the end is the list docs/onnx.md gives.
 */
#include "onnx.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the node's attributes and operands ---- */

#define EMIT(...) ox_emit(c->m, ox_out_name(c, 0), __VA_ARGS__)
#define FAIL(...) ox_fail(c->m, TIR_EUNSUPPORTED, __VA_ARGS__)

static int norm_axis(struct ox_node_ctx *c, int64_t a, int rank, int *out)
{
	*out = 0;
	if (a < -rank || a >= rank)
		return ox_fail(c->m, TIR_ETYPE, "axis %" PRId64 " is out of range for rank %d", a, rank);
	*out = (int)(a < 0 ? a + rank : a);
	return 0;
}

/* input 0, its type and its "axis" attribute (def when absent) made
 * non-negative: NULL (the error set) when any of them fails */
static const char *in_axis(struct ox_node_ctx *c, int64_t def, struct tir_type *t, int *a)
{
	const char *x = ox_in_typed(c, 0, t);
	return x && !norm_axis(c, ox_attr_i(c, "axis", def), t->rank, a) ? x : NULL;
}

/* x cast to dt when its dtype is another (ONNX keeps the input's dtype
 * where tir computes in a float) */
static const char *as_dtype(struct ox_node_ctx *c, const char *x, enum tir_dtype dt)
{
	const struct tir_ntype *t = x ? ox_type(c->m, x) : NULL;
	if (!t || t->dtype == dt)
		return x;
	return EMIT("cast(%s, dtype=%s)", x, tir_dtype_name(dt));
}

/* the final value of output 0: cast back to dt when needed, then bound */
static int bind_as(struct ox_node_ctx *c, const char *x, enum tir_dtype dt)
{
	return ox_bind_out(c, 0, as_dtype(c, x, dt));
}

/* ---- elementwise ---- */

static const char *unary_of(const char *op)
{
	static const char *const map[][2] = {
		{"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"}, {"Log", "log"},
		{"Sqrt", "sqrt"}, {"Abs", "abs"}, {"Neg", "neg"}, {"Erf", "erf"}, {"Floor", "floor"},
		{"Ceil", "ceil"}, {"Round", "round"}, {"Sign", "sign"}, {"Reciprocal", "recip"}, {"Not", "not"},
		{"Sin", "sin"}, {"Cos", "cos"}, {NULL, NULL}};
	for (int k = 0; map[k][0]; k++)
		if (!strcmp(map[k][0], op))
			return map[k][1];
	return NULL;
}

static int op_unary(struct ox_node_ctx *c)
{
	struct ox_const *k = ox_cin(c, 0);
	const char *op = c->n->op_type;
	if (k && !tir_dtype_is_float(k->dtype) && k->dtype != TIR_DTYPE_BOOL && k->n <= OX_FOLD_MAX &&
	    (!strcmp(op, "Neg") || !strcmp(op, "Abs"))) {
		struct ox_const *r = ox_const_new(k->dtype, k->rank, k->shape);
		for (int64_t e = 0; r && e < k->n; e++) {
			r->i[e] = !strcmp(op, "Neg") ? -k->i[e] : k->i[e] < 0 ? -k->i[e] : k->i[e];
			r->d[e] = (double)r->i[e];
		}
		return ox_bind_const(c, 0, r);
	}
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	const char *r = EMIT("%s(%s)", unary_of(c->n->op_type), x);
	return bind_as(c, r, t.dtype);
}

static const char *binary_of(const char *op)
{
	static const char *const map[][2] = {
		{"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
		{"Equal", "eq"}, {"Less", "lt"}, {"Greater", "gt"}, {"LessOrEqual", "le"},
		{"GreaterOrEqual", "ge"}, {"And", "and"}, {"Or", "or"}, {"Xor", "ne"}, {"Mod", "mod"},
		{NULL, NULL}};
	for (int k = 0; map[k][0]; k++)
		if (!strcmp(map[k][0], op))
			return map[k][1];
	return NULL;
}

/* where floor division and truncation differ: a remainder, and a and b
 * of different signs */
static const char *trunc_fix(struct ox_node_ctx *c, const char *a, const char *b, const char *r)
{
	const char *nz = EMIT("ne(%s, 0)", r);
	const char *na = nz ? EMIT("lt(%s, 0)", a) : NULL;
	const char *nb = na ? EMIT("lt(%s, 0)", b) : NULL;
	const char *df = nb ? EMIT("ne(%s, %s)", na, nb) : NULL;
	return df ? EMIT("and(%s, %s)", nz, df) : NULL;
}

/* Add, Sub, Mul, Div of two known f32 or f64 scalars (a Range's bounds
 * computed from a size given): in double, rounded once to the dtype, so
 * the same as the op at run time */
static int fold_float(struct ox_node_ctx *c, struct ox_const *a, struct ox_const *b)
{
	const char *op = c->n->op_type;
	if (a->n != 1 || b->n != 1 || (a->dtype != TIR_DTYPE_F32 && a->dtype != TIR_DTYPE_F64))
		return 1;
	double x = a->d[0], y = b->d[0], v;
	if (!strcmp(op, "Add")) v = x + y;
	else if (!strcmp(op, "Sub")) v = x - y;
	else if (!strcmp(op, "Mul")) v = x * y;
	else if (!strcmp(op, "Div")) v = x / y;
	else return 1;
	if (a->dtype == TIR_DTYPE_F32)
		v = (float)v;
	const struct ox_const *big = a->rank >= b->rank ? a : b;
	struct ox_const *r = ox_const_new(a->dtype, big->rank, big->shape);
	if (r)
		ox_const_set(r, 0, v, isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0);
	return ox_bind_const(c, 0, r);
}

/* elementwise on two known integer values (shape arithmetic) */
static int fold_binary(struct ox_node_ctx *c, struct ox_const *a, struct ox_const *b)
{
	const char *op = c->n->op_type;
	if (a->dtype != b->dtype || a->n > OX_FOLD_MAX || b->n > OX_FOLD_MAX)
		return 1;
	if (tir_dtype_is_float(a->dtype))
		return fold_float(c, a, b);
	/* only the same shapes or a scalar side */
	const struct ox_const *big = a->n >= b->n ? a : b;
	if (!(a->n == b->n && a->rank == b->rank) && !(a->n == 1 && a->rank <= big->rank) &&
	    !(b->n == 1 && b->rank <= big->rank))
		return 1;
	bool cmp = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater");
	struct ox_const *r = ox_const_new(cmp ? TIR_DTYPE_BOOL : a->dtype, big->rank, big->shape);
	if (!r)
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	for (int64_t k = 0; k < r->n; k++) {
		int64_t x = a->i[a->n == 1 ? 0 : k], y = b->i[b->n == 1 ? 0 : k], v = 0;
		if (!strcmp(op, "Add")) v = x + y;
		else if (!strcmp(op, "Sub")) v = x - y;
		else if (!strcmp(op, "Mul")) v = x * y;
		else if (!strcmp(op, "Div")) {
			if (!y) { ox_const_free(r); return 1; }
			v = x / y;
		} else if (!strcmp(op, "Equal")) v = x == y;
		else if (!strcmp(op, "Less")) v = x < y;
		else if (!strcmp(op, "Greater")) v = x > y;
		else { ox_const_free(r); return 1; }
		r->i[k] = v;
		r->d[k] = (double)v;
	}
	return ox_bind_const(c, 0, r);
}

static int op_binary(struct ox_node_ctx *c)
{
	const char *op = c->n->op_type;
	struct ox_const *ca = ox_cin(c, 0), *cb = ox_cin(c, 1);
	if (ca && cb) {
		int rc = fold_binary(c, ca, cb);
		if (rc <= 0)
			return rc;
	}
	struct tir_type ta, tb;
	const char *a = ox_in(c, 0), *b = ox_in(c, 1);
	if (!a || !b || !ox_in_type(c, 0, &ta) || !ox_in_type(c, 1, &tb))
		return -c->m->err->code;
	if (!strcmp(op, "Mod") && ox_attr_i(c, "fmod", 0)) {
		/* C's fmod takes the dividend's sign, tir's (NumPy's) mod the
		 * divisor's: they differ by b where a remainder is left and a
		 * and b have different signs (exact, floats and integers) */
		const char *r = EMIT("mod(%s, %s)", a, b);
		const char *fix = r ? trunc_fix(c, a, b, r) : NULL;
		const char *rb = fix ? EMIT("sub(%s, %s)", r, b) : NULL;
		return bind_as(c, rb ? EMIT("where(%s, %s, %s)", fix, rb, r) : NULL, ta.dtype);
	}
	bool keep = !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
		    !strcmp(op, "Pow") || !strcmp(op, "Mod");
	if (!strcmp(op, "Div") && !tir_dtype_is_float(ta.dtype)) {
		/* integer division truncates toward zero (tir's floors) */
		const char *q = EMIT("div(%s, %s)", a, b);
		const char *r = q ? EMIT("mod(%s, %s)", a, b) : NULL;
		const char *fix = r ? trunc_fix(c, a, b, r) : NULL;
		const char *q1 = fix ? EMIT("add(%s, 1)", q) : NULL;
		return bind_as(c, q1 ? EMIT("where(%s, %s, %s)", fix, q1, q) : NULL, ta.dtype);
	}
	const char *r = EMIT("%s(%s, %s)", binary_of(op), a, b);
	return keep ? bind_as(c, r, ta.dtype) : ox_bind_out(c, 0, r);
}

/* Min, Max, Sum, Mean: a chain */
static int op_variadic(struct ox_node_ctx *c)
{
	const char *op = c->n->op_type;
	const char *f = !strcmp(op, "Min") ? "minimum" : !strcmp(op, "Max") ? "maximum" : "add";
	struct tir_type t;
	const char *acc = ox_in_typed(c, 0, &t);
	if (!acc)
		return -c->m->err->code;
	size_t n = c->n->n_input;
	for (size_t k = 1; k < n && acc; k++) {
		const char *x = ox_in(c, k);
		acc = x ? EMIT("%s(%s, %s)", f, acc, x) : NULL;
	}
	if (acc && n == 1 && strcmp(op, "Mean"))
		return ox_bind_out(c, 0, acc);
	if (acc && !strcmp(op, "Mean") && n > 1)
		acc = EMIT("div(%s, %zu)", acc, n);
	if (acc && n == 1)
		acc = EMIT("mul(%s, 1)", acc);
	return bind_as(c, acc, t.dtype);
}

static int op_identity(struct ox_node_ctx *c)
{
	struct ox_const *k = ox_cin(c, 0);
	if (k) {
		struct ox_const *r = ox_const_new(k->dtype, k->rank, k->shape);
		if (r) {
			memcpy(r->i, k->i, (size_t)k->n * sizeof *r->i);
			memcpy(r->d, k->d, (size_t)k->n * sizeof *r->d);
		}
		return ox_bind_const(c, 0, r);
	}
	const char *x = ox_in(c, 0);
	if (!x)
		return -c->m->err->code;
	int rc = ox_bind_out(c, 0, x);
	/* Dropout's mask: all true */
	if (!rc && c->n->n_output > 1 && *ox_out_name(c, 1)) {
		struct tir_type t;
		char b[300];
		ox_in_type(c, 0, &t);
		rc = ox_bind_out(c, 1,
				 ox_emit(c->m, ox_out_name(c, 1), "ones(%s, dtype=bool)",
					 ox_shape_str(b, sizeof b, t.rank, t.shape)));
	}
	return rc;
}

static int op_dropout(struct ox_node_ctx *c)
{
	struct ox_const *tm = ox_cin(c, 2), *ratio = ox_cin(c, 1);
	/* training mode drops at random; with ratio 0 it is the identity */
	if (ox_has_in(c, 2) && (!tm || tm->d[0] != 0) && !(ratio && ratio->d[0] == 0))
		return FAIL("Dropout in training mode is not supported");
	return op_identity(c);
}

static int op_where(struct ox_node_ctx *c)
{
	const char *k = ox_in(c, 0), *a = ox_in(c, 1), *b = ox_in(c, 2);
	if (!k || !a || !b)
		return -c->m->err->code;
	return ox_bind_out(c, 0, EMIT("where(%s, %s, %s)", k, a, b));
}

static int op_clip(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	const char *r = x;
	if (c->opset < 11) {
		double lo = ox_attr_f(c, "min", -INFINITY), hi = ox_attr_f(c, "max", INFINITY);
		if (lo > -INFINITY)
			r = EMIT("maximum(%s, %.9g)", r, lo);
		if (r && hi < INFINITY)
			r = EMIT("minimum(%s, %.9g)", r, hi);
	} else {
		if (ox_has_in(c, 1)) {
			const char *lo = ox_in(c, 1);
			r = lo ? EMIT("maximum(%s, %s)", r, lo) : NULL;
		}
		if (r && ox_has_in(c, 2)) {
			const char *hi = ox_in(c, 2);
			r = hi ? EMIT("minimum(%s, %s)", r, hi) : NULL;
		}
	}
	if (r == x)
		r = EMIT("mul(%s, 1)", x);
	return bind_as(c, r, t.dtype);
}

/* the activations: tir's op of the same meaning where it has one (with
 * ONNX's attributes given), else written with where, mul, ... */
static int op_activation(struct ox_node_ctx *c)
{
	const char *op = c->n->op_type;
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	static const char *const direct[][2] = {
		{"Tan", "tan"}, {"Asin", "asin"}, {"Acos", "acos"}, {"Atan", "atan"}, {"Sinh", "sinh"},
		{"Cosh", "cosh"}, {"Asinh", "asinh"}, {"Acosh", "acosh"}, {"Atanh", "atanh"},
		{"Softplus", "softplus"}, {"Softsign", "softsign"}, {"HardSwish", "hardswish"}, {NULL, NULL}};
	const char *r = NULL;
	for (int k = 0; direct[k][0]; k++)
		if (!strcmp(op, direct[k][0]))
			return bind_as(c, EMIT("%s(%s)", direct[k][1], x), t.dtype);
	if (!strcmp(op, "LeakyRelu")) {
		r = EMIT("leaky_relu(%s, negative_slope=%.9g)", x, ox_attr_f(c, "alpha", 0.01));
	} else if (!strcmp(op, "PRelu")) {
		/* the slope broadcasts to x as NumPy's (unidirectional), as tir's */
		const char *s = ox_in(c, 1);
		r = s ? EMIT("prelu(%s, %s)", x, s) : NULL;
	} else if (!strcmp(op, "Elu") || !strcmp(op, "Celu")) {
		double a = ox_attr_f(c, "alpha", 1.0);
		if (!strcmp(op, "Celu") && a == 0)
			return ox_fail(c->m, TIR_ETYPE, "Celu with alpha 0");
		r = EMIT("%s(%s, alpha=%.9g)", !strcmp(op, "Elu") ? "elu" : "celu", x, a);
	} else if (!strcmp(op, "Selu")) {
		/* tir's selu has ONNX's default constants (float32 values) */
		float a = (float)ox_attr_f(c, "alpha", 1.67326319217681884765625);
		float g = (float)ox_attr_f(c, "gamma", 1.05070102214813232421875);
		if (a == 1.67326319217681884765625f && g == 1.05070102214813232421875f) {
			r = EMIT("selu(%s)", x);
		} else {
			const char *e = EMIT("elu(%s, alpha=%.9g)", x, (double)a);
			r = e ? EMIT("mul(%s, %.9g)", e, (double)g) : NULL;
		}
	} else if (!strcmp(op, "HardSigmoid")) {
		r = EMIT("hardsigmoid(%s, alpha=%.9g, beta=%.9g)", x, ox_attr_f(c, "alpha", 0.2),
			 ox_attr_f(c, "beta", 0.5));
	} else if (!strcmp(op, "ThresholdedRelu")) {
		double a = ox_attr_f(c, "alpha", 1.0);
		const char *g = EMIT("gt(%s, %.9g)", x, a);
		r = g ? EMIT("where(%s, %s, 0)", g, x) : NULL;
	} else if (!strcmp(op, "IsNaN")) {
		return ox_bind_out(c, 0, EMIT("isnan(%s)", x));
	} else if (!strcmp(op, "IsInf")) {
		bool p = ox_attr_i(c, "detect_positive", 1), n = ox_attr_i(c, "detect_negative", 1);
		if (p && n)
			return ox_bind_out(c, 0, EMIT("isinf(%s)", x));
		if (!p && !n) {
			char b[300];
			return ox_bind_out(c, 0,
					   EMIT("zeros(%s, dtype=bool)", ox_shape_str(b, sizeof b, t.rank, t.shape)));
		}
		const char *i = EMIT("isinf(%s)", x);
		const char *s = i ? EMIT("%s(%s, 0)", p ? "gt" : "lt", x) : NULL;
		return ox_bind_out(c, 0, s ? EMIT("and(%s, %s)", i, s) : NULL);
	} else if (!strcmp(op, "Gelu")) {
		if (!ox_attr_str_is(c, "approximate", "none", "none"))
			return FAIL("Gelu with approximate=tanh is not supported");
		r = EMIT("gelu(%s)", x);
	} else if (!strcmp(op, "Shrink")) {
		double l = ox_attr_f(c, "lambd", 0.5), b = ox_attr_f(c, "bias", 0.0);
		const char *lo = EMIT("lt(%s, %.9g)", x, -l);
		const char *hi = lo ? EMIT("gt(%s, %.9g)", x, l) : NULL;
		const char *xp = hi ? EMIT("add(%s, %.9g)", x, b) : NULL;
		const char *xm = xp ? EMIT("sub(%s, %.9g)", x, b) : NULL;
		const char *w1 = xm ? EMIT("where(%s, %s, 0)", hi, xm) : NULL;
		r = w1 ? EMIT("where(%s, %s, %s)", lo, xp, w1) : NULL;
	}
	return bind_as(c, r, t.dtype);
}

/* ---- shapes, folded ---- */

static int op_constant(struct ox_node_ctx *c)
{
	const Onnx__AttributeProto *a = NULL;
	for (size_t k = 0; k < c->n->n_attribute; k++)
		a = c->n->attribute[k];
	if (!a || !a->name)
		return ox_fail(c->m, TIR_EDATA, "Constant without a value");
	struct ox_const *r = NULL;
	int64_t one = 1;
	if (!strcmp(a->name, "value") && a->t) {
		int rc = ox_tensor_decode(c->m, a->t, &r, c->m->err);
		if (rc)
			return rc;
	} else if (!strcmp(a->name, "value_float") || !strcmp(a->name, "value_int")) {
		bool f = a->name[6] == 'f';
		r = ox_const_new(f ? TIR_DTYPE_F32 : TIR_DTYPE_I64, 0, NULL);
		if (r) {
			r->d[0] = f ? a->f : (double)a->i;
			r->i[0] = f ? (int64_t)a->f : a->i;
		}
	} else if (!strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints")) {
		bool f = a->name[6] == 'f';
		int64_t n = f ? (int64_t)a->n_floats : (int64_t)a->n_ints;
		r = ox_const_new(f ? TIR_DTYPE_F32 : TIR_DTYPE_I64, 1, &n);
		for (int64_t k = 0; r && k < n; k++)
			ox_const_set(r, k, f ? a->floats[k] : (double)a->ints[k], f ? (int64_t)a->floats[k] : a->ints[k]);
	} else {
		(void)one;
		return FAIL("Constant's '%s' is not supported", a->name);
	}
	return ox_bind_const(c, 0, r);
}

static int op_shape(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int64_t s = ox_attr_i(c, "start", 0), e = ox_attr_i(c, "end", t.rank);
	if (s < 0)
		s += t.rank;
	if (e < 0)
		e += t.rank;
	s = s < 0 ? 0 : s > t.rank ? t.rank : s;
	e = e < 0 ? 0 : e > t.rank ? t.rank : e;
	int64_t n = e > s ? e - s : 0;
	struct ox_const *r = ox_const_new(TIR_DTYPE_I64, 1, &n);
	for (int64_t k = 0; r && k < n; k++) {
		r->i[k] = t.shape[s + k];
		r->d[k] = (double)r->i[k];
	}
	return ox_bind_const(c, 0, r);
}

static int op_size(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	struct ox_const *r = ox_const_new(TIR_DTYPE_I64, 0, NULL);
	if (r) {
		r->i[0] = tir_type_numel(&t);
		r->d[0] = (double)r->i[0];
	}
	return ox_bind_const(c, 0, r);
}

static int op_constant_of_shape(struct ox_node_ctx *c)
{
	struct ox_const *s = ox_need_const(c, 0, "shape");
	if (!s)
		return -c->m->err->code;
	if (s->n > TIR_MAX_RANK)
		return FAIL("a shape of %" PRId64 " dimensions", s->n);
	const Onnx__AttributeProto *a = ox_attr(c, "value");
	struct ox_const *v = NULL;
	if (a && a->t) {
		int rc = ox_tensor_decode(c->m, a->t, &v, c->m->err);
		if (rc)
			return rc;
		if (v->n != 1) {
			ox_const_free(v);
			return ox_fail(c->m, TIR_EDATA, "value must have one element");
		}
	}
	enum tir_dtype dt = v ? v->dtype : TIR_DTYPE_F32;
	double val = v ? v->d[0] : 0;
	int64_t iv = v ? v->i[0] : 0;
	ox_const_free(v);
	for (int64_t k = 0; k < s->n; k++)
		if (s->i[k] < 0 || s->i[k] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_EDATA, "dimension %" PRId64 " of the shape is %" PRId64, k, s->i[k]);
	struct tir_type t = {.dtype = (uint8_t)dt, .rank = (uint8_t)s->n};
	memcpy(t.shape, s->i, (size_t)s->n * sizeof *t.shape);
	if (!tir_type_bounded(&t))
		return ox_fail(c->m, TIR_EDATA, "the shape has more than 2^32 elements");
	if (tir_type_numel(&t) <= OX_FOLD_MAX) {
		struct ox_const *r = ox_const_new(dt, (int)s->n, s->i);
		for (int64_t k = 0; r && k < r->n; k++) {
			r->d[k] = val;
			r->i[k] = iv;
		}
		return ox_bind_const(c, 0, r);
	}
	char b[300], num[64];
	if (tir_dtype_is_float(dt))
		snprintf(num, sizeof num, "%.17g", val);
	else
		snprintf(num, sizeof num, "%" PRId64, iv);
	if (!strcmp(num, "inf") || !strcmp(num, "-inf") || !strcmp(num, "nan") || !strcmp(num, "-nan"))
		snprintf(num, sizeof num, "%s", isnan(val) ? "nan" : val < 0 ? "-inf" : "inf");
	return ox_bind_out(c, 0,
			   EMIT("full(%s, %s, dtype=%s)", ox_shape_str(b, sizeof b, (int)s->n, s->i), num,
				tir_dtype_name(dt)));
}

static int op_range(struct ox_node_ctx *c)
{
	struct ox_const *s = ox_need_const(c, 0, "start"), *l = s ? ox_need_const(c, 1, "limit") : NULL,
			*d = l ? ox_need_const(c, 2, "delta") : NULL;
	if (!d)
		return -c->m->err->code;
	double st = s->d[0], li = l->d[0], de = d->d[0];
	if (de == 0 || !isfinite(st) || !isfinite(li) || !isfinite(de))
		return ox_fail(c->m, TIR_EDATA, "Range with delta 0 or a bound not finite");
	double cnt = ceil((li - st) / de);
	int64_t n = cnt > 0 ? (int64_t)cnt : 0;
	if (n > OX_FOLD_MAX)
		return FAIL("Range of %" PRId64 " elements (folded at import: at most %d)", n, OX_FOLD_MAX);
	struct ox_const *r = ox_const_new(s->dtype, 1, &n);
	for (int64_t k = 0; r && k < n; k++) {
		if (tir_dtype_is_float(s->dtype)) {
			r->d[k] = st + (double)k * de;
			if (s->dtype == TIR_DTYPE_F32)
				r->d[k] = (float)((float)st + (float)k * (float)de);
			r->i[k] = (int64_t)r->d[k];
		} else {
			r->i[k] = s->i[0] + k * d->i[0];
			r->d[k] = (double)r->i[k];
		}
	}
	return ox_bind_const(c, 0, r);
}

/* the input's shape with axes removed or added, as a reshape */
static int reshape_to(struct ox_node_ctx *c, int rank, const int64_t *shape)
{
	char b[300];
	struct ox_const *k = ox_cin(c, 0);
	if (k && k->n <= OX_FOLD_MAX) {
		struct ox_const *r = ox_const_new(k->dtype, rank, shape);
		if (r && r->n == k->n) {
			memcpy(r->i, k->i, (size_t)k->n * sizeof *r->i);
			memcpy(r->d, k->d, (size_t)k->n * sizeof *r->d);
			return ox_bind_const(c, 0, r);
		}
		ox_const_free(r);
	}
	const char *x = ox_in(c, 0);
	return x ? ox_bind_out(c, 0,
			       EMIT("reshape(%s, shape=%s)", x,
				    ox_shape_str(b, sizeof b, rank, shape))) : -c->m->err->code;
}

static int op_reshape(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int64_t sh[TIR_MAX_RANK];
	size_t n;
	const int64_t *src;
	if (c->opset < 5) {
		src = ox_attr_ints(c, "shape", &n);
	} else {
		struct ox_const *s = ox_need_const(c, 1, "shape");
		if (!s)
			return -c->m->err->code;
		src = s->i;
		n = (size_t)s->n;
	}
	if (n > TIR_MAX_RANK)
		return FAIL("a shape of %zu dimensions (tir has at most %d)", n, TIR_MAX_RANK);
	bool allowzero = ox_attr_i(c, "allowzero", 0);
	int infer = -1;
	int64_t known = 1;
	for (size_t k = 0; k < n; k++) {
		sh[k] = src[k];
		if (sh[k] == 0 && !allowzero) {
			if ((int)k >= t.rank)
				return ox_fail(c->m, TIR_ETYPE, "shape entry %zu is 0 (copy) past the input's rank", k);
			sh[k] = t.shape[k];
		}
		if (sh[k] == -1) {
			if (infer >= 0)
				return ox_fail(c->m, TIR_ETYPE, "two -1 entries in the shape");
			infer = (int)k;
		} else if (sh[k] < 0) {
			return ox_fail(c->m, TIR_ETYPE, "shape entry %" PRId64, sh[k]);
		} else {
			known *= sh[k];
		}
	}
	int64_t total = tir_type_numel(&t);
	if (infer >= 0) {
		if (!known || total % known)
			return ox_fail(c->m, TIR_ETYPE, "cannot infer -1: %" PRId64 " elements into parts of %" PRId64,
				       total, known);
		sh[infer] = total / known;
	}
	return reshape_to(c, (int)n, sh);
}

static int op_flatten(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int64_t a = ox_attr_i(c, "axis", 1);
	if (a < 0)
		a += t.rank;
	if (a < 0 || a > t.rank)
		return ox_fail(c->m, TIR_ETYPE, "axis %" PRId64 " out of range", ox_attr_i(c, "axis", 1));
	int64_t sh[2] = {1, 1};
	for (int k = 0; k < t.rank; k++)
		sh[k < a ? 0 : 1] *= t.shape[k];
	return reshape_to(c, 2, sh);
}

/* Squeeze/Unsqueeze: axes from the attribute (opset < 13) or input 1 */
static int get_axes(struct ox_node_ctx *c, size_t input, int64_t *axes, size_t *n, bool *given)
{
	const int64_t *src;
	size_t cnt;
	if (c->opset < 13) {
		src = ox_attr_ints(c, "axes", &cnt);
		*given = ox_attr(c, "axes") != NULL;
	} else if (ox_has_in(c, input)) {
		struct ox_const *a = ox_need_const(c, input, "axes");
		if (!a)
			return -c->m->err->code;
		src = a->i;
		cnt = (size_t)a->n;
		*given = true;
	} else {
		src = NULL;
		cnt = 0;
		*given = false;
	}
	if (cnt > TIR_MAX_RANK)
		return ox_fail(c->m, TIR_ETYPE, "%zu axes", cnt);
	if (cnt)
		memcpy(axes, src, cnt * sizeof *axes);
	*n = cnt;
	return 0;
}

static int op_squeeze(struct ox_node_ctx *c)
{
	struct tir_type t;
	int64_t axes[TIR_MAX_RANK];
	size_t n;
	bool given;
	if (!ox_in_type(c, 0, &t) || get_axes(c, 1, axes, &n, &given))
		return -c->m->err->code;
	bool drop[TIR_MAX_RANK] = {0};
	for (size_t k = 0; k < n; k++) {
		int a;
		if (norm_axis(c, axes[k], t.rank, &a))
			return -c->m->err->code;
		if (t.shape[a] != 1)
			return ox_fail(c->m, TIR_ETYPE, "axis %d has size %" PRId64 ", not 1", a, t.shape[a]);
		drop[a] = true;
	}
	int64_t sh[TIR_MAX_RANK];
	int r = 0;
	for (int k = 0; k < t.rank; k++)
		if (!(given ? drop[k] : t.shape[k] == 1))
			sh[r++] = t.shape[k];
	return reshape_to(c, r, sh);
}

static int op_unsqueeze(struct ox_node_ctx *c)
{
	struct tir_type t;
	int64_t axes[TIR_MAX_RANK];
	size_t n;
	bool given;
	if (!ox_in_type(c, 0, &t) || get_axes(c, 1, axes, &n, &given))
		return -c->m->err->code;
	int rank = t.rank + (int)n;
	if (rank > TIR_MAX_RANK)
		return FAIL("a result of %d dimensions (tir has at most %d)", rank, TIR_MAX_RANK);
	bool add[TIR_MAX_RANK] = {0};
	for (size_t k = 0; k < n; k++) {
		int a;
		if (norm_axis(c, axes[k], rank, &a))
			return -c->m->err->code;
		if (add[a])
			return ox_fail(c->m, TIR_ETYPE, "axis %d given twice", a);
		add[a] = true;
	}
	int64_t sh[TIR_MAX_RANK];
	for (int k = 0, j = 0; k < rank; k++)
		sh[k] = add[k] ? 1 : t.shape[j++];
	return reshape_to(c, rank, sh);
}

static int op_transpose(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	size_t n;
	const int64_t *p = ox_attr_ints(c, "perm", &n);
	int64_t perm[TIR_MAX_RANK];
	if (!p) {
		n = (size_t)t.rank;
		for (int k = 0; k < t.rank; k++)
			perm[k] = t.rank - 1 - k;
		p = perm;
	}
	char b[300];
	return ox_bind_out(c, 0, EMIT("transpose(%s, perm=%s)", x, ox_shape_str(b, sizeof b, (int)n, p)));
}

/* Concat: folded for small known integer inputs (shapes), else concat() */
static int op_concat(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int a;
	if (norm_axis(c, ox_attr_i(c, "axis", 0), t.rank ? t.rank : 1, &a))
		return -c->m->err->code;
	bool all = t.rank == 1;
	int64_t total = 0;
	for (size_t k = 0; k < c->n->n_input && all; k++) {
		struct ox_const *v = ox_cin(c, k);
		all = v && v->rank == 1 && !tir_dtype_is_float(v->dtype) && v->dtype == (enum tir_dtype)t.dtype;
		total += all ? v->n : 0;
	}
	if (all && total <= OX_FOLD_MAX) {
		struct ox_const *r = ox_const_new(t.dtype, 1, &total);
		int64_t at = 0;
		for (size_t k = 0; r && k < c->n->n_input; k++) {
			struct ox_const *v = ox_cin(c, k);
			memcpy(r->i + at, v->i, (size_t)v->n * sizeof *r->i);
			memcpy(r->d + at, v->d, (size_t)v->n * sizeof *r->d);
			at += v->n;
		}
		return ox_bind_const(c, 0, r);
	}
	struct tir_str s = {0};
	int used = 0;
	for (size_t k = 0; k < c->n->n_input; k++) {
		struct tir_type tk;
		if (!ox_has_in(c, k))
			continue;
		if (!ox_in_type(c, k, &tk))
			return tir_str_free(&s), -c->m->err->code;
		if (tk.rank > a && tk.shape[a] == 0)
			continue; /* an empty part */
		const char *x = ox_in(c, k);
		if (!x)
			return tir_str_free(&s), -c->m->err->code;
		tir_str_addf(&s, "%s%s", used++ ? ", " : "", x);
	}
	if (!used) {
		tir_str_free(&s);
		return FAIL("every part is empty");
	}
	const char *r = EMIT("concat([%s], axis=%d)", s.s, a);
	tir_str_free(&s);
	return ox_bind_out(c, 0, r);
}

/* ONNX's slice bounds for one axis, normalized: start in [0, dim] (or
 * [0, dim-1] going back), stop likewise or -1 (past the front) */
static void slice_bounds(int64_t dim, int64_t step, int64_t *start, int64_t *end)
{
	int64_t s = *start, e = *end;
	if (s < 0)
		s += dim;
	if (e < 0)
		e += dim;
	if (step > 0) {
		s = s < 0 ? 0 : s > dim ? dim : s;
		e = e < 0 ? 0 : e > dim ? dim : e;
	} else {
		s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
		e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
	}
	*start = s;
	*end = e;
}

static int op_slice(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int64_t st[TIR_MAX_RANK], en[TIR_MAX_RANK], ax[TIR_MAX_RANK], sp[TIR_MAX_RANK];
	size_t n;
	if (c->opset < 10) {
		size_t ns, ne, na;
		const int64_t *s = ox_attr_ints(c, "starts", &ns), *e = ox_attr_ints(c, "ends", &ne),
			      *a = ox_attr_ints(c, "axes", &na);
		if (ns != ne || ns > TIR_MAX_RANK || (a && na != ns))
			return ox_fail(c->m, TIR_ETYPE, "starts, ends and axes differ in length");
		n = ns;
		for (size_t k = 0; k < n; k++) {
			st[k] = s[k];
			en[k] = e[k];
			ax[k] = a ? a[k] : (int64_t)k;
			sp[k] = 1;
		}
	} else {
		struct ox_const *s = ox_need_const(c, 1, "starts"), *e = s ? ox_need_const(c, 2, "ends") : NULL;
		if (!e)
			return -c->m->err->code;
		struct ox_const *a = ox_has_in(c, 3) ? ox_need_const(c, 3, "axes") : NULL;
		struct ox_const *p = ox_has_in(c, 4) ? ox_need_const(c, 4, "steps") : NULL;
		if (c->m->err->code)
			return -c->m->err->code;
		n = (size_t)s->n;
		if (e->n != s->n || n > TIR_MAX_RANK || (a && a->n != s->n) || (p && p->n != s->n))
			return ox_fail(c->m, TIR_ETYPE, "starts, ends, axes and steps differ in length");
		for (size_t k = 0; k < n; k++) {
			st[k] = s->i[k];
			en[k] = e->i[k];
			ax[k] = a ? a->i[k] : (int64_t)k;
			sp[k] = p ? p->i[k] : 1;
		}
	}
	/* folded: a small known 1-D input (shape arithmetic) */
	struct ox_const *kv = ox_cin(c, 0);
	if (kv && kv->rank == 1 && n == 1 && kv->n <= OX_FOLD_MAX && sp[0] != 0) {
		int64_t s = st[0], e = en[0];
		slice_bounds(kv->n, sp[0], &s, &e);
		int64_t cnt = 0;
		for (int64_t j = s; sp[0] > 0 ? j < e : j > e; j += sp[0])
			cnt++;
		struct ox_const *r = ox_const_new(kv->dtype, 1, &cnt);
		int64_t o = 0;
		for (int64_t j = s; r && (sp[0] > 0 ? j < e : j > e); j += sp[0], o++) {
			r->i[o] = kv->i[j];
			r->d[o] = kv->d[j];
		}
		return ox_bind_const(c, 0, r);
	}
	const char *x = ox_in(c, 0);
	if (!x)
		return -c->m->err->code;
	for (size_t k = 0; k < n && x; k++) {
		int a;
		if (norm_axis(c, ax[k], t.rank, &a))
			return -c->m->err->code;
		if (sp[k] == 0)
			return ox_fail(c->m, TIR_ETYPE, "step 0");
		int64_t s = st[k], e = en[k];
		slice_bounds(t.shape[a], sp[k], &s, &e);
		if (sp[k] < 0 && e < 0)
			x = EMIT("slice(%s, axis=%d, start=%" PRId64 ", step=%" PRId64 ")", x, a, s, sp[k]);
		else if (sp[k] < 0 && s < 0)
			x = EMIT("slice(%s, axis=%d, start=0, stop=0)", x, a);
		else
			x = EMIT("slice(%s, axis=%d, start=%" PRId64 ", stop=%" PRId64 ", step=%" PRId64 ")", x, a, s, e,
				 sp[k]);
	}
	if (x && n == 0)
		x = EMIT("reshape(%s, shape=%s)", x, ox_shape_str((char[300]){0}, 300, t.rank, t.shape));
	return ox_bind_out(c, 0, x);
}

static int op_gather(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int a;
	if (norm_axis(c, ox_attr_i(c, "axis", 0), t.rank, &a))
		return -c->m->err->code;
	struct ox_const *kv = ox_cin(c, 0), *ki = ox_cin(c, 1);
	if (kv && ki && kv->rank == 1 && ki->n <= OX_FOLD_MAX) {
		struct ox_const *r = ox_const_new(kv->dtype, ki->rank, ki->shape);
		for (int64_t k = 0; r && k < ki->n; k++) {
			int64_t j = ki->i[k] < 0 ? ki->i[k] + kv->n : ki->i[k];
			if (j < 0 || j >= kv->n) {
				ox_const_free(r);
				return ox_fail(c->m, TIR_EDATA, "index %" PRId64 " out of range", ki->i[k]);
			}
			r->i[k] = kv->i[j];
			r->d[k] = kv->d[j];
		}
		return ox_bind_const(c, 0, r);
	}
	const char *x = ox_in(c, 0), *i = ox_in(c, 1);
	if (!x || !i)
		return -c->m->err->code;
	return ox_bind_out(c, 0, EMIT("gather(%s, %s, axis=%d)", x, i, a));
}

static int op_cast(struct ox_node_ctx *c)
{
	enum tir_dtype dt;
	int64_t to = ox_attr_i(c, "to", 0);
	if (!ox_dtype((int32_t)to, &dt))
		return FAIL("Cast to %s, which tir has not", ox_onnx_type_name((int32_t)to));
	struct ox_const *k = ox_cin(c, 0);
	if (k && k->n <= OX_FOLD_MAX && !tir_dtype_is_float(k->dtype) && !tir_dtype_is_float(dt) && dt != TIR_DTYPE_BOOL) {
		struct ox_const *r = ox_const_new(dt, k->rank, k->shape);
		for (int64_t e = 0; r && e < k->n; e++) {
			r->i[e] = k->i[e];
			if (dt == TIR_DTYPE_I32) r->i[e] = (int32_t)r->i[e];
			if (dt == TIR_DTYPE_I16) r->i[e] = (int16_t)r->i[e];
			if (dt == TIR_DTYPE_I8) r->i[e] = (int8_t)r->i[e];
			if (dt == TIR_DTYPE_U8) r->i[e] = (uint8_t)r->i[e];
			r->d[e] = (double)r->i[e];
		}
		return ox_bind_const(c, 0, r);
	}
	if (k && k->n == 1 && !tir_dtype_is_float(k->dtype) && (dt == TIR_DTYPE_F32 || dt == TIR_DTYPE_F64)) {
		/* a known integer scalar as a float (a size given, for a Range) */
		struct ox_const *r = ox_const_new(dt, k->rank, k->shape);
		if (r)
			ox_const_set(r, 0, dt == TIR_DTYPE_F32 ? (float)k->i[0] : (double)k->i[0], k->i[0]);
		return ox_bind_const(c, 0, r);
	}
	const char *x = ox_in(c, 0);
	return x ? ox_bind_out(c, 0, EMIT("cast(%s, dtype=%s)", x, tir_dtype_name(dt))) : -c->m->err->code;
}

static int op_castlike(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in(c, 0);
	if (!x || !ox_in_type(c, 1, &t))
		return -c->m->err->code;
	return ox_bind_out(c, 0, EMIT("cast(%s, dtype=%s)", x, tir_dtype_name(t.dtype)));
}

/* NumPy's take_along_axis (ONNX's GatherElements) of x by indices ix of
 * the same rank on axis a: each element's flat position in x (the index
 * on a, wrapped when negative, the element's own coordinate on the
 * others, times the strides), then a gather from x flattened */
static const char *take_along(struct ox_node_ctx *c, const char *x, const struct tir_type *t, const char *ix,
			      const struct tir_type *ti, int a)
{
	char b[300];
	int64_t n = 1;
	for (int k = 0; k < t->rank; k++)
		n *= t->shape[k];
	if (!n)
		return EMIT("zeros(%s, dtype=%s)", ox_shape_str(b, sizeof b, ti->rank, ti->shape),
			    tir_dtype_name(t->dtype));
	const char *i = EMIT("cast(%s, dtype=i64)", ix);
	const char *neg = i ? EMIT("lt(%s, 0)", i) : NULL;
	const char *wrap = neg ? EMIT("add(%s, %" PRId64 ")", i, t->shape[a]) : NULL;
	const char *pos = wrap ? EMIT("where(%s, %s, %s)", neg, wrap, i) : NULL;
	int64_t stride = 1;
	const char *acc = NULL;
	bool ok = pos;
	for (int k = t->rank - 1; k >= 0 && ok; k--) {
		const char *co = k == a ? pos : ox_iota(c, ox_out_name(c, 0), ti->shape[k], k, t->rank);
		co = co && stride != 1 ? EMIT("mul(%s, %" PRId64 ")", co, stride) : co;
		acc = co && acc ? EMIT("add(%s, %s)", acc, co) : co;
		ok = acc;
		stride *= t->shape[k];
	}
	const char *flat = ok ? EMIT("reshape(%s, shape=[%" PRId64 "])", x, n) : NULL;
	return flat ? EMIT("gather(%s, %s, axis=0)", flat, acc) : NULL;
}

static int op_gather_elements(struct ox_node_ctx *c)
{
	struct tir_type t, ti;
	const char *x = ox_in(c, 0), *ix = x ? ox_in(c, 1) : NULL;
	if (!ix || !ox_in_type(c, 0, &t) || !ox_in_type(c, 1, &ti))
		return -c->m->err->code;
	int a;
	if (ti.rank != t.rank || !t.rank)
		return ox_fail(c->m, TIR_ETYPE, "indices of rank %d for data of rank %d", ti.rank, t.rank);
	if (norm_axis(c, ox_attr_i(c, "axis", 0), t.rank, &a))
		return -c->m->err->code;
	return ox_bind_out(c, 0, take_along(c, x, &t, ix, &ti, a));
}

/* TopK: a stable argsort (of -x for the largest: ties keep the lower
 * index first, as ONNX asks), its first K, and the values taken along */
static int op_topk(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	int64_t k;
	if (c->opset < 10) {
		k = ox_attr_i(c, "k", -1);
	} else {
		struct ox_const *kc = ox_need_const(c, 1, "k");
		if (!kc)
			return -c->m->err->code;
		k = kc->n == 1 ? kc->i[0] : -1;
	}
	int a;
	if (!t.rank)
		return ox_fail(c->m, TIR_ETYPE, "input of rank 0");
	if (norm_axis(c, ox_attr_i(c, "axis", -1), t.rank, &a))
		return -c->m->err->code;
	if (k < 0 || k > t.shape[a])
		return ox_fail(c->m, TIR_ETYPE, "k %" PRId64 " for an axis of %" PRId64, k, t.shape[a]);
	const char *key = x;
	if (ox_attr_i(c, "largest", 1)) {
		key = tir_dtype_is_float(t.dtype) ? x : EMIT("cast(%s, dtype=i64)", x);
		key = key ? EMIT("neg(%s)", key) : NULL;
	}
	const char *o = key ? EMIT("argsort(%s, axis=%d)", key, a) : NULL;
	const char *ix = o ? EMIT("slice(%s, axis=%d, start=0, stop=%" PRId64 ")", o, a, k) : NULL;
	struct tir_type ti = t;
	ti.shape[a] = k;
	ti.dtype = TIR_DTYPE_I64;
	const char *v = ix ? take_along(c, x, &t, ix, &ti, a) : NULL;
	int rc = ox_bind_out(c, 0, v);
	if (!rc && c->n->n_output > 1 && *ox_out_name(c, 1))
		rc = ox_bind_out(c, 1, ix);
	return rc;
}

/* NegativeLogLikelihoodLoss of log-probabilities lp [N, C, d...] and the
 * node's target [N, d...] (input 1) and weight [C] (input 2): each
 * element's -lp at its class, times its class's weight (0 where the
 * target is ignore_index), then none, sum or mean (the sum divided by
 * the weights' sum) */
static int nll(struct ox_node_ctx *c, const char *lp, const struct tir_type *t)
{
	struct tir_type tt;
	const char *tg = ox_in(c, 1);
	if (!tg || !ox_in_type(c, 1, &tt))
		return -c->m->err->code;
	if (t->rank < 2 || tt.rank != t->rank - 1 || tt.shape[0] != t->shape[0])
		return ox_fail(c->m, TIR_ETYPE, "target of rank %d for input of rank %d", tt.rank, t->rank);
	bool none = ox_attr_str_is(c, "reduction", "none", "mean"), sum = ox_attr_str_is(c, "reduction", "sum", "mean");
	if (!none && !sum && !ox_attr_str_is(c, "reduction", "mean", "mean"))
		return ox_fail(c->m, TIR_ETYPE, "reduction not none, sum or mean");
	const Onnx__AttributeProto *ii = ox_attr(c, "ignore_index");
	const char *tl = EMIT("cast(%s, dtype=i64)", tg), *mask = NULL;
	if (tl && ii) {
		mask = EMIT("ne(%s, %" PRId64 ")", tl, ii->i);
		tl = mask ? EMIT("where(%s, %s, 0)", mask, tl) : NULL;
	}
	struct tir_type ti = tt;
	ti.rank = (uint8_t)t->rank;
	ti.shape[1] = 1;
	for (int k = 2; k < t->rank; k++)
		ti.shape[k] = tt.shape[k - 1];
	char b[300];
	const char *ix = tl ? EMIT("reshape(%s, shape=%s)", tl, ox_shape_str(b, sizeof b, ti.rank, ti.shape)) : NULL;
	const char *pk = ix ? take_along(c, lp, t, ix, &ti, 1) : NULL;
	pk = pk ? EMIT("reshape(%s, shape=%s)", pk, ox_shape_str(b, sizeof b, tt.rank, tt.shape)) : NULL;
	const char *loss = pk ? EMIT("neg(%s)", pk) : NULL, *w = NULL;
	if (loss && ox_has_in(c, 2)) {
		const char *wt = ox_in(c, 2);
		w = wt ? EMIT("gather(%s, %s, axis=0)", wt, tl) : NULL;
		if (w && mask) {
			const char *mf = EMIT("cast(%s, dtype=%s)", mask, tir_dtype_name(t->dtype));
			w = mf ? EMIT("mul(%s, %s)", w, mf) : NULL;
		}
	} else if (loss && mask) {
		w = EMIT("cast(%s, dtype=%s)", mask, tir_dtype_name(t->dtype));
	}
	if (!loss || ((ox_has_in(c, 2) || mask) && !w))
		return -c->m->err->code;
	loss = w ? EMIT("mul(%s, %s)", loss, w) : loss;
	const char *r = loss;
	if (loss && sum)
		r = EMIT("sum(%s)", loss);
	else if (loss && !none && w) {
		const char *s = EMIT("sum(%s)", loss), *sw = s ? EMIT("sum(%s)", w) : NULL;
		r = sw ? EMIT("div(%s, %s)", s, sw) : NULL;
	} else if (loss && !none)
		r = EMIT("mean(%s)", loss);
	return bind_as(c, r, t->dtype);
}

static int op_nllloss(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	return nll(c, x, &t);
}

/* SoftmaxCrossEntropyLoss: the loss of log_softmax over the classes; its
 * second output those log-probabilities */
static int op_sceloss(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank < 2)
		return ox_fail(c->m, TIR_ETYPE, "scores of rank %d", t.rank);
	const char *lp = EMIT("log_softmax(%s, axis=1)", x);
	int rc = lp ? nll(c, lp, &t) : -c->m->err->code;
	if (!rc && c->n->n_output > 1 && *ox_out_name(c, 1))
		rc = ox_bind_out(c, 1, lp);
	return rc;
}

static int op_trilu(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank < 2)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	int64_t k = 0;
	if (ox_has_in(c, 1)) {
		struct ox_const *kc = ox_need_const(c, 1, "k");
		if (!kc)
			return -c->m->err->code;
		if (kc->n != 1)
			return ox_fail(c->m, TIR_ETYPE, "k of %" PRId64 " elements", kc->n);
		k = kc->i[0];
	}
	/* beyond the matrix, all kept or all zero: the same with k clamped */
	int64_t lim = t.shape[t.rank - 2] + t.shape[t.rank - 1];
	k = k > lim ? lim : k < -lim ? -lim : k;
	return ox_bind_out(c, 0, EMIT("%s(%s, k=%" PRId64 ")", ox_attr_i(c, "upper", 1) ? "triu" : "tril", x, k));
}

static int op_eyelike(struct ox_node_ctx *c)
{
	struct tir_type t;
	if (!ox_in_type(c, 0, &t))
		return -c->m->err->code;
	if (t.rank != 2)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	enum tir_dtype dt = (enum tir_dtype)t.dtype;
	if (ox_attr(c, "dtype") && !ox_dtype((int32_t)ox_attr_i(c, "dtype", 1), &dt))
		return FAIL("dtype %s, which tir has not", ox_onnx_type_name((int32_t)ox_attr_i(c, "dtype", 1)));
	int64_t k = ox_attr_i(c, "k", 0), n = t.shape[0], m = t.shape[1];
	if (!n || !m) {
		char b[300];
		return ox_bind_out(c, 0,
				   EMIT("zeros(%s, dtype=%s)", ox_shape_str(b, sizeof b, 2, t.shape),
					tir_dtype_name(dt)));
	}
	const char *rows = ox_iota(c, ox_out_name(c, 0), n, 0, 2),
			*cols = rows ? ox_iota(c, ox_out_name(c, 0), m, 1, 2) : NULL;
	const char *d = cols ? EMIT("sub(%s, %s)", cols, rows) : NULL;
	const char *mask = d ? EMIT("eq(%s, %" PRId64 ")", d, k) : NULL;
	return ox_bind_out(c, 0, mask ? EMIT("cast(%s, dtype=%s)", mask, tir_dtype_name(dt)) : NULL);
}

static int op_hardmax(struct ox_node_ctx *c)
{
	struct tir_type t;
	int a;
	const char *x = in_axis(c, c->opset < 13 ? 1 : -1, &t, &a);
	if (!x)
		return -c->m->err->code;
	const char *y = x;
	int r = t.rank;
	int64_t sh[2] = {1, 1};
	if (c->opset < 13 && a != t.rank - 1) {
		for (int k = 0; k < t.rank; k++)
			sh[k < a ? 0 : 1] *= t.shape[k];
		char b[300];
		y = EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b, sizeof b, 2, sh));
		a = 1;
		r = 2;
	}
	const struct tir_ntype *ty = y ? ox_type(c->m, y) : NULL;
	if (!ty)
		return -c->m->err->code;
	const char *i = EMIT("argmax(%s, axis=%d, keepdims=true)", y, a);
	const char *io = i ? ox_iota(c, ox_out_name(c, 0), ty->shape[a], a, r) : NULL;
	const char *mask = io ? EMIT("eq(%s, %s)", io, i) : NULL;
	const char *h = mask ? EMIT("cast(%s, dtype=%s)", mask, tir_dtype_name(t.dtype)) : NULL;
	if (h && y != x) {
		char b[300];
		h = EMIT("reshape(%s, shape=%s)", h, ox_shape_str(b, sizeof b, t.rank, t.shape));
	}
	return ox_bind_out(c, 0, h);
}

static int op_onehot(struct ox_node_ctx *c)
{
	struct tir_type ti, tv;
	const char *idx = ox_in(c, 0), *vals = ox_in(c, 2);
	struct ox_const *dc = ox_need_const(c, 1, "depth");
	if (!idx || !vals || !dc || !ox_in_type(c, 0, &ti) || !ox_in_type(c, 2, &tv))
		return -c->m->err->code;
	int64_t depth = (int64_t)dc->d[0];
	if (depth < 1 || depth > TIR_MAX_DIM || ti.rank + 1 > TIR_MAX_RANK)
		return ox_fail(c->m, TIR_ETYPE, "depth %" PRId64, depth);
	int a;
	if (norm_axis(c, ox_attr_i(c, "axis", -1), ti.rank + 1, &a))
		return -c->m->err->code;
	int64_t sh[TIR_MAX_RANK];
	for (int k = 0, j = 0; k <= ti.rank; k++)
		sh[k] = k == a ? 1 : ti.shape[j++];
	char b[300];
	const char *i64 = EMIT("cast(%s, dtype=i64)", idx);
	const char *neg = i64 ? EMIT("lt(%s, 0)", i64) : NULL;
	const char *wrap = neg ? EMIT("add(%s, %" PRId64 ")", i64, depth) : NULL;
	const char *fix = wrap ? EMIT("where(%s, %s, %s)", neg, wrap, i64) : NULL;
	const char *u = fix ? EMIT("reshape(%s, shape=%s)", fix, ox_shape_str(b, sizeof b, ti.rank + 1, sh)) : NULL;
	const char *io = u ? ox_iota(c, ox_out_name(c, 0), depth, a, ti.rank + 1) : NULL;
	const char *mask = io ? EMIT("eq(%s, %s)", u, io) : NULL;
	const char *v0 = mask ? EMIT("slice(%s, axis=0, start=0, stop=1)", vals) : NULL;
	const char *v1 = v0 ? EMIT("slice(%s, axis=0, start=1, stop=2)", vals) : NULL;
	const char *s0 = v1 ? EMIT("reshape(%s, shape=[])", v0) : NULL;
	const char *s1 = s0 ? EMIT("reshape(%s, shape=[])", v1) : NULL;
	return ox_bind_out(c, 0, s1 ? EMIT("where(%s, %s, %s)", mask, s1, s0) : NULL);
}

static int op_expand(struct ox_node_ctx *c)
{
	struct tir_type t;
	struct ox_const *s = ox_need_const(c, 1, "shape");
	if (!s || !ox_in_type(c, 0, &t))
		return -c->m->err->code;
	int rank = t.rank > s->n ? t.rank : (int)s->n;
	if (rank > TIR_MAX_RANK)
		return FAIL("a result of %d dimensions", rank);
	int64_t sh[TIR_MAX_RANK];
	for (int k = 0; k < rank; k++) {
		int ia = k - (rank - t.rank), ib = k - (rank - (int)s->n);
		int64_t a = ia >= 0 ? t.shape[ia] : 1, b = ib >= 0 ? s->i[ib] : 1;
		if (a != b && a != 1 && b != 1)
			return ox_fail(c->m, TIR_ETYPE, "shape %" PRId64 " does not broadcast with %" PRId64, a, b);
		sh[k] = a == 1 ? b : a;
		if (sh[k] < 0 || sh[k] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_EDATA, "dimension %" PRId64, sh[k]);
	}
	const char *x = ox_in(c, 0);
	char b[300];
	return x ? ox_bind_out(c, 0,
			       EMIT("expand(%s, shape=%s)", x, ox_shape_str(b, sizeof b, rank, sh))) : -c->m->err->code;
}

static int op_tile(struct ox_node_ctx *c)
{
	struct tir_type t;
	struct ox_const *r = ox_need_const(c, 1, "repeats");
	if (!r || !ox_in_type(c, 0, &t))
		return -c->m->err->code;
	if (r->n != t.rank)
		return ox_fail(c->m, TIR_ETYPE, "%" PRId64 " repeats for an input of rank %d", r->n, t.rank);
	for (int k = 0; k < t.rank; k++)
		if (r->i[k] < 0 || (t.shape[k] && r->i[k] > TIR_MAX_DIM / t.shape[k]))
			return ox_fail(c->m, TIR_EDATA, "repeat %" PRId64 " of axis %d", r->i[k], k);
	char b[300];
	const char *x = ox_in(c, 0);
	return ox_bind_out(c, 0, x ? EMIT("tile(%s, reps=%s)", x, ox_shape_str(b, sizeof b, t.rank, r->i)) : NULL);
}

/* CumSum: tir's cumsum; reverse as the axis flipped before and after,
 * exclusive as the input shifted by one (a zero in front, the last cut) */
static int op_cumsum(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in(c, 0);
	struct ox_const *ac = x ? ox_need_const(c, 1, "axis") : NULL;
	if (!ac || !ox_in_type(c, 0, &t))
		return -c->m->err->code;
	if (ac->n != 1)
		return ox_fail(c->m, TIR_ETYPE, "axis of %" PRId64 " elements", ac->n);
	int a;
	if (t.rank < 1)
		return ox_fail(c->m, TIR_ETYPE, "input of rank 0");
	if (norm_axis(c, ac->i[0], t.rank, &a))
		return -c->m->err->code;
	bool rev = ox_attr_i(c, "reverse", 0), excl = ox_attr_i(c, "exclusive", 0);
	if (rev)
		x = EMIT("slice(%s, axis=%d, step=-1)", x, a);
	if (x && excl) {
		struct tir_str p = {0};
		tir_str_addf(&p, "[");
		for (int k = 0; k < t.rank; k++)
			tir_str_addf(&p, "%s[%d, 0]", k ? ", " : "", k == a);
		tir_str_addf(&p, "]");
		x = EMIT("pad(%s, pads=%s)", x, p.s);
		tir_str_free(&p);
		x = x ? EMIT("slice(%s, axis=%d, start=0, stop=%" PRId64 ")", x, a, t.shape[a]) : NULL;
	}
	x = x ? EMIT("cumsum(%s, axis=%d)", x, a) : NULL;
	if (x && rev)
		x = EMIT("slice(%s, axis=%d, step=-1)", x, a);
	return bind_as(c, x, t.dtype);
}

/* Einsum: tir's einsum, the equation without spaces; '...' spelled out
 * as letters the equation does not use (the broadcast axes of each
 * operand, aligned at the right); the implicit form (no "->") given its
 * output: the ellipsis' letters, then the letters used once, in order */
static int op_einsum(struct ox_node_ctx *c)
{
	const Onnx__AttributeProto *eq = ox_attr(c, "equation");
	if (!eq || !eq->has_s || eq->s.len > 200)
		return ox_fail(c->m, TIR_EDATA, "Einsum without an equation");
	char e[400];
	size_t n = 0;
	int count[128] = {0};
	bool arrow = false, used[128] = {false};
	for (size_t k = 0; k < eq->s.len; k++) {
		char ch = (char)eq->s.data[k];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
			used[(int)ch] = true;
	}
	char ell[TIR_MAX_RANK + 1];
	int nell = 0, maxell = 0;
	for (int ch = 'A'; ch <= 'z' && nell < TIR_MAX_RANK; ch++)
		if (((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) && !used[ch])
			ell[nell++] = (char)ch;
	size_t op = 0;       /* the operand being read */
	int letters = 0;     /* its letters so far */
	bool dots = false;   /* its '...' seen, to be spelled at its end */
	size_t dots_at = 0;
	for (size_t k = 0; k <= eq->s.len; k++) {
		char ch = k < eq->s.len ? (char)eq->s.data[k] : 0;
		if (ch == ' ')
			continue;
		if (ch == '.') {
			if (dots || k + 2 >= eq->s.len || eq->s.data[k + 1] != '.' || eq->s.data[k + 2] != '.')
				return ox_fail(c->m, TIR_EDATA, "Einsum equation with a stray '.'");
			dots = true;
			dots_at = n;
			k += 2;
			continue;
		}
		if (ch == ',' || ch == '-' || !ch) {
			/* an operand ends: its '...' is as many axes as its rank leaves */
			if (dots && !arrow) {
				struct tir_type t;
				if (op >= c->n->n_input || !ox_in_type(c, op, &t))
					return ox_fail(c->m, TIR_EDATA, "Einsum equation with more operands than inputs");
				int ne = t.rank - letters;
				if (ne < 0 || ne > nell)
					return ox_fail(c->m, TIR_ETYPE, "'...' of operand %zu stands for %d axes", op, ne);
				if (ne > maxell)
					maxell = ne;
				if (n + (size_t)ne + 80 > sizeof e)
					return ox_fail(c->m, TIR_EDATA, "Einsum equation too long");
				memmove(e + dots_at + ne, e + dots_at, n - dots_at);
				memcpy(e + dots_at, ell + nell - ne, (size_t)ne);
				n += (size_t)ne;
			} else if (dots) { /* the output's: the widest operand's */
				memmove(e + dots_at + maxell, e + dots_at, n - dots_at);
				memcpy(e + dots_at, ell + nell - maxell, (size_t)maxell);
				n += (size_t)maxell;
			}
			dots = false;
			letters = 0;
			op += ch == ',';
		}
		if (!ch)
			break;
		if (ch == '-')
			arrow = true;
		else if (!arrow && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
			count[(int)ch]++, letters++;
		else if (!(ch == ',' || ch == '>' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
			return ox_fail(c->m, TIR_EDATA, "Einsum equation with '%c'", ch);
		e[n++] = ch;
	}
	if (!arrow) {
		e[n++] = '-';
		e[n++] = '>';
		for (int k = nell - maxell; k < nell; k++)
			e[n++] = ell[k];
		for (int ch = 'A'; ch <= 'z'; ch++)
			if (count[ch] == 1)
				e[n++] = (char)ch;
	}
	e[n] = 0;
	struct tir_type t;
	if (!c->n->n_input || !ox_in_type(c, 0, &t))
		return ox_fail(c->m, TIR_EDATA, "Einsum without inputs");
	struct tir_str s = {0};
	tir_str_addf(&s, "einsum(\"%s\"", e);
	for (size_t k = 0; k < c->n->n_input; k++) {
		const char *x = ox_in(c, k);
		if (!x)
			return tir_str_free(&s), -c->m->err->code;
		tir_str_addf(&s, ", %s", x);
	}
	tir_str_addf(&s, ")");
	const char *r = EMIT("%s", s.s);
	tir_str_free(&s);
	return bind_as(c, r, t.dtype);
}

static int op_split(struct ox_node_ctx *c)
{
	struct tir_type t;
	int a;
	const char *x = in_axis(c, 0, &t, &a);
	if (!x)
		return -c->m->err->code;
	size_t no = c->n->n_output;
	int64_t parts[64];
	if (no > 64)
		return FAIL("%zu outputs", no);
	size_t ns = 0;
	const int64_t *sp = NULL;
	if (c->opset < 13) {
		sp = ox_attr_ints(c, "split", &ns);
	} else if (ox_has_in(c, 1)) {
		struct ox_const *s = ox_need_const(c, 1, "split");
		if (!s)
			return -c->m->err->code;
		sp = s->i;
		ns = (size_t)s->n;
	}
	if (sp) {
		if (ns != no)
			return ox_fail(c->m, TIR_ETYPE, "split has %zu parts for %zu outputs", ns, no);
		memcpy(parts, sp, ns * sizeof *parts);
	} else {
		int64_t each = (t.shape[a] + (int64_t)no - 1) / (int64_t)no;
		for (size_t k = 0; k < no; k++) {
			int64_t left = t.shape[a] - each * (int64_t)k;
			parts[k] = left < each ? (left < 0 ? 0 : left) : each;
		}
	}
	int64_t at = 0;
	for (size_t k = 0; k < no; k++) {
		if (!*ox_out_name(c, k)) {
			at += parts[k];
			continue;
		}
		const char *r = ox_emit(c->m, ox_out_name(c, k),
					"slice(%s, axis=%d, start=%" PRId64 ", stop=%" PRId64 ")",
					x, a, at, at + parts[k]);
		at += parts[k];
		if (ox_bind_out(c, k, r))
			return -c->m->err->code;
	}
	return 0;
}

static int op_pad(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	bool edge = ox_attr_str_is(c, "mode", "edge", "constant"),
			reflect = ox_attr_str_is(c, "mode", "reflect", "constant");
	if (!edge && !reflect && !ox_attr_str_is(c, "mode", "constant", "constant"))
		return FAIL("Pad mode other than constant, edge and reflect is not supported");
	const int64_t *p;
	size_t n;
	double value = 0;
	const char *vname = NULL;
	if (c->opset < 11) {
		p = ox_attr_ints(c, "pads", &n);
		value = ox_attr_f(c, "value", 0);
	} else {
		struct ox_const *pc = ox_need_const(c, 1, "pads");
		if (!pc)
			return -c->m->err->code;
		p = pc->i;
		n = (size_t)pc->n;
		if (ox_has_in(c, 2)) {
			struct ox_const *v = ox_cin(c, 2);
			if (v)
				value = v->d[0];
			else
				vname = "";
		}
	}
	if (vname)
		return FAIL("a constant_value computed at run time is not supported");
	int64_t ax[TIR_MAX_RANK];
	size_t na = 0;
	if (c->opset >= 11 && ox_has_in(c, 3)) {
		struct ox_const *a = ox_need_const(c, 3, "axes");
		if (!a)
			return -c->m->err->code;
		na = (size_t)a->n;
		for (size_t k = 0; k < na && k < TIR_MAX_RANK; k++)
			ax[k] = a->i[k];
	} else {
		na = (size_t)t.rank;
		for (int k = 0; k < t.rank; k++)
			ax[k] = k;
	}
	if (n != 2 * na || na > TIR_MAX_RANK)
		return ox_fail(c->m, TIR_ETYPE, "%zu pads for %zu axes", n, na);
	int64_t before[TIR_MAX_RANK] = {0}, after[TIR_MAX_RANK] = {0};
	for (size_t k = 0; k < na; k++) {
		int a;
		if (norm_axis(c, ax[k], t.rank, &a))
			return -c->m->err->code;
		before[a] = p[k];
		after[a] = p[k + na];
		if (before[a] < 0 || after[a] < 0)
			return FAIL("negative pads are not supported");
	}
	if (edge || reflect) {
		/* a gather on each padded axis of the positions it reads:
		 * arange(-before, n + after) clamped (edge) or mirrored at
		 * both ends (reflect: n - 1 - |n - 1 - |i||) */
		const char *r = x;
		for (int a = 0; a < t.rank && r; a++) {
			int64_t d = t.shape[a];
			if (!before[a] && !after[a])
				continue;
			if (!d || (reflect && (before[a] > d - 1 || after[a] > d - 1)))
				return FAIL("Pad mode %s of %" PRId64 " and %" PRId64 " on an axis of %" PRId64 " is not supported",
					    edge ? "edge" : "reflect", before[a], after[a], d);
			const char *i = EMIT("arange(%" PRId64 ", %" PRId64 ", dtype=i64)", -before[a], d + after[a]);
			if (i && edge) {
				i = EMIT("clip(%s, 0, %" PRId64 ")", i, d - 1);
			} else if (i) {
				i = EMIT("abs(%s)", i);
				i = i ? EMIT("sub(%" PRId64 ", %s)", d - 1, i) : NULL;
				i = i ? EMIT("abs(%s)", i) : NULL;
				i = i ? EMIT("sub(%" PRId64 ", %s)", d - 1, i) : NULL;
			}
			r = i ? EMIT("gather(%s, %s, axis=%d)", r, i, a) : NULL;
		}
		if (r == x)
			r = EMIT("mul(%s, 1)", x);
		return bind_as(c, r, t.dtype);
	}
	struct tir_str s = {0};
	tir_str_addf(&s, "[");
	for (int k = 0; k < t.rank; k++)
		tir_str_addf(&s, "%s[%" PRId64 ", %" PRId64 "]", k ? ", " : "", before[k], after[k]);
	tir_str_addf(&s, "]");
	char num[64];
	if (isnan(value))
		snprintf(num, sizeof num, "nan");
	else if (isinf(value))
		snprintf(num, sizeof num, value < 0 ? "-inf" : "inf");
	else
		snprintf(num, sizeof num, "%.17g", value);
	const char *r = EMIT("pad(%s, pads=%s, value=%s)", x, s.s, num);
	tir_str_free(&s);
	return ox_bind_out(c, 0, r);
}

/* ---- reductions ---- */

static int op_reduce(struct ox_node_ctx *c)
{
	const char *op = c->n->op_type;
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	int64_t axes[TIR_MAX_RANK];
	size_t n = 0;
	bool from_input = !strcmp(op, "ReduceSum") ? c->opset >= 13 : false; /* the others: opset 18 */
	if (from_input) {
		if (ox_has_in(c, 1)) {
			struct ox_const *a = ox_need_const(c, 1, "axes");
			if (!a)
				return -c->m->err->code;
			n = (size_t)a->n;
			if (n > TIR_MAX_RANK)
				return ox_fail(c->m, TIR_ETYPE, "%zu axes", n);
			memcpy(axes, a->i, n * sizeof *axes);
		}
	} else {
		const int64_t *a = ox_attr_ints(c, "axes", &n);
		if (n > TIR_MAX_RANK)
			return ox_fail(c->m, TIR_ETYPE, "%zu axes", n);
		if (n)
			memcpy(axes, a, n * sizeof *axes);
	}
	bool keep = ox_attr_i(c, "keepdims", 1);
	if (!n && ox_attr_i(c, "noop_with_empty_axes", 0))
		return ox_bind_out(c, 0, EMIT("mul(%s, 1)", x));
	struct tir_str ax = {0};
	if (n) {
		tir_str_addf(&ax, ", axis=[");
		for (size_t k = 0; k < n; k++) {
			int a;
			if (norm_axis(c, axes[k], t.rank, &a))
				return tir_str_free(&ax), -c->m->err->code;
			tir_str_addf(&ax, "%s%d", k ? ", " : "", a);
		}
		tir_str_addf(&ax, "]");
	} else if (t.rank) {
		tir_str_addf(&ax, ", axis=[");
		for (int k = 0; k < t.rank; k++)
			tir_str_addf(&ax, "%s%d", k ? ", " : "", k);
		tir_str_addf(&ax, "]");
	}
	const char *A = ax.s ? ax.s : "";
	const char *K = keep ? "true" : "false";
	const char *r = NULL;
	if (!strcmp(op, "ReduceSum")) r = EMIT("sum(%s%s, keepdims=%s)", x, A, K);
	else if (!strcmp(op, "ReduceMean")) r = EMIT("mean(%s%s, keepdims=%s)", x, A, K);
	else if (!strcmp(op, "ReduceMax")) r = EMIT("max(%s%s, keepdims=%s)", x, A, K);
	else if (!strcmp(op, "ReduceMin")) r = EMIT("min(%s%s, keepdims=%s)", x, A, K);
	else if (!strcmp(op, "ReduceProd")) r = EMIT("prod(%s%s, keepdims=%s)", x, A, K);
	else if (!strcmp(op, "ReduceL1")) {
		const char *a = EMIT("abs(%s)", x);
		r = a ? EMIT("sum(%s%s, keepdims=%s)", a, A, K) : NULL;
	} else if (!strcmp(op, "ReduceL2") || !strcmp(op, "ReduceSumSquare")) {
		const char *sq = EMIT("mul(%s, %s)", x, x);
		r = sq ? EMIT("sum(%s%s, keepdims=%s)", sq, A, K) : NULL;
		if (r && !strcmp(op, "ReduceL2"))
			r = EMIT("sqrt(%s)", r);
	} else if (!strcmp(op, "ReduceLogSum")) {
		const char *s = EMIT("sum(%s%s, keepdims=%s)", x, A, K);
		r = s ? EMIT("log(%s)", s) : NULL;
	} else if (!strcmp(op, "ReduceLogSumExp")) {
		r = EMIT("logsumexp(%s%s, keepdims=%s)", x, A, K);
	}
	tir_str_free(&ax);
	return bind_as(c, r, t.dtype);
}

static int op_argmax(struct ox_node_ctx *c)
{
	struct tir_type t;
	int a;
	const char *x = in_axis(c, 0, &t, &a);
	if (!x)
		return -c->m->err->code;
	bool keep = ox_attr_i(c, "keepdims", 1);
	const char *f = !strcmp(c->n->op_type, "ArgMax") ? "argmax" : "argmin";
	if (ox_attr_i(c, "select_last_index", 0)) {
		/* the first of the reversed axis, counted from the end */
		const char *rv = EMIT("slice(%s, axis=%d, step=-1)", x, a);
		const char *i = rv ? EMIT("%s(%s, axis=%d, keepdims=%s)", f, rv, a, keep ? "true" : "false") : NULL;
		return ox_bind_out(c, 0, i ? EMIT("sub(%" PRId64 ", %s)", t.shape[a] - 1, i) : NULL);
	}
	return ox_bind_out(c, 0, EMIT("%s(%s, axis=%d, keepdims=%s)", f, x, a, keep ? "true" : "false"));
}

/* ---- linear algebra and networks ---- */

/* Det: tir's det, of [..., n, n] */
static int op_det(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank < 2 || t.shape[t.rank - 1] != t.shape[t.rank - 2])
		return ox_fail(c->m, TIR_ETYPE, "Det of a %d-D input, not [..., n, n]", t.rank);
	return bind_as(c, EMIT("det(%s)", x), t.dtype);
}

static int op_matmul(struct ox_node_ctx *c)
{
	const char *a = ox_in(c, 0), *b = ox_in(c, 1);
	if (!a || !b)
		return -c->m->err->code;
	return ox_bind_out(c, 0, EMIT("matmul(%s, %s)", a, b));
}

static int op_gemm(struct ox_node_ctx *c)
{
	const char *a = ox_in(c, 0), *b = ox_in(c, 1);
	if (!a || !b)
		return -c->m->err->code;
	double alpha = ox_attr_f(c, "alpha", 1), beta = ox_attr_f(c, "beta", 1);
	if (ox_attr_i(c, "transA", 0))
		a = EMIT("transpose(%s, perm=[1, 0])", a);
	if (a && ox_attr_i(c, "transB", 0))
		b = EMIT("transpose(%s, perm=[1, 0])", b);
	const char *y = a && b ? EMIT("matmul(%s, %s)", a, b) : NULL;
	if (y && alpha != 1)
		y = EMIT("mul(%s, %.9g)", y, alpha);
	if (y && ox_has_in(c, 2) && beta != 0) {
		const char *cc = ox_in(c, 2);
		if (cc && beta != 1)
			cc = EMIT("mul(%s, %.9g)", cc, beta);
		y = cc ? EMIT("add(%s, %s)", y, cc) : NULL;
	}
	return ox_bind_out(c, 0, y);
}

/* Softmax and LogSoftmax: before opset 13 the input is seen as 2-D,
 * [prod(shape[:axis]), prod(shape[axis:])], and normalized per row */
static int op_softmax(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	const char *f = !strcmp(c->n->op_type, "Softmax") ? "softmax" : "log_softmax";
	int a;
	if (norm_axis(c, ox_attr_i(c, "axis", c->opset < 13 ? 1 : -1), t.rank, &a))
		return -c->m->err->code;
	if (c->opset >= 13 || a == t.rank - 1)
		return ox_bind_out(c, 0, EMIT("%s(%s, axis=%d)", f, x, a));
	int64_t sh[2] = {1, 1};
	for (int k = 0; k < t.rank; k++)
		sh[k < a ? 0 : 1] *= t.shape[k];
	char b1[300], b2[300];
	const char *r = EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b1, sizeof b1, 2, sh));
	r = r ? EMIT("%s(%s, axis=1)", f, r) : NULL;
	return ox_bind_out(c, 0,
			   r ? EMIT("reshape(%s, shape=%s)", r, ox_shape_str(b2, sizeof b2, t.rank, t.shape)) : NULL);
}

/* [C] -> [C, 1, ..., 1] for an NC... input of rank r */
static const char *per_channel(struct ox_node_ctx *c, size_t k, int rank)
{
	struct tir_type t;
	const char *p = ox_in(c, k);
	if (!p || !ox_in_type(c, k, &t))
		return NULL;
	if (t.rank != 1)
		return ox_fail(c->m, TIR_ETYPE, "input %zu is not 1-D", k), NULL;
	int64_t sh[TIR_MAX_RANK];
	sh[0] = t.shape[0];
	for (int j = 1; j < rank - 1; j++)
		sh[j] = 1;
	char b[300];
	return ox_emit(c->m, c->n->input[k], "reshape(%s, shape=%s)", p, ox_shape_str(b, sizeof b, rank - 1, sh));
}

static int op_batchnorm(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (ox_attr_i(c, "training_mode", 0))
		return ox_op_batchnorm_training(c);
	for (size_t k = 1; k < c->n->n_output; k++)
		if (*ox_out_name(c, k))
			return FAIL("BatchNormalization in training mode (more than one output) is not supported");
	if (t.rank < 2)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	double eps = ox_attr_f(c, "epsilon", 1e-5);
	const char *sc = per_channel(c, 1, t.rank), *b = sc ? per_channel(c, 2, t.rank) : NULL,
		   *mu = b ? per_channel(c, 3, t.rank) : NULL, *var = mu ? per_channel(c, 4, t.rank) : NULL;
	const char *ve = var ? EMIT("add(%s, %.9g)", var, eps) : NULL;
	const char *rs = ve ? EMIT("rsqrt(%s)", ve) : NULL;
	const char *d = rs ? EMIT("sub(%s, %s)", x, mu) : NULL;
	const char *n = d ? EMIT("mul(%s, %s)", d, rs) : NULL;
	const char *s = n ? EMIT("mul(%s, %s)", n, sc) : NULL;
	return bind_as(c, s ? EMIT("add(%s, %s)", s, b) : NULL, t.dtype);
}

static int op_instancenorm(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank < 3)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	double eps = ox_attr_f(c, "epsilon", 1e-5);
	struct tir_str ax = {0};
	for (int k = 2; k < t.rank; k++)
		tir_str_addf(&ax, "%s%d", k > 2 ? ", " : "", k);
	const char *sc = per_channel(c, 1, t.rank), *b = sc ? per_channel(c, 2, t.rank) : NULL;
	const char *mu = b ? EMIT("mean(%s, axis=[%s], keepdims=true)", x, ax.s) : NULL;
	const char *var = mu ? EMIT("var(%s, axis=[%s], keepdims=true)", x, ax.s) : NULL;
	tir_str_free(&ax);
	const char *ve = var ? EMIT("add(%s, %.9g)", var, eps) : NULL;
	const char *rs = ve ? EMIT("rsqrt(%s)", ve) : NULL;
	const char *d = rs ? EMIT("sub(%s, %s)", x, mu) : NULL;
	const char *n = d ? EMIT("mul(%s, %s)", d, rs) : NULL;
	const char *s = n ? EMIT("mul(%s, %s)", n, sc) : NULL;
	return bind_as(c, s ? EMIT("add(%s, %s)", s, b) : NULL, t.dtype);
}

static int op_layernorm(struct ox_node_ctx *c)
{
	struct tir_type t, ts;
	const char *x = ox_in(c, 0);
	if (!x || !ox_in_type(c, 0, &t) || !ox_in_type(c, 1, &ts))
		return -c->m->err->code;
	bool extra = false;
	for (size_t k = 1; k < c->n->n_output; k++)
		extra |= *ox_out_name(c, k) != 0;
	int a;
	if (norm_axis(c, ox_attr_i(c, "axis", -1), t.rank, &a))
		return -c->m->err->code;
	double eps = ox_attr_f(c, "epsilon", 1e-5);
	const char *sc = ox_in(c, 1);
	const char *b = ox_has_in(c, 2) ? ox_in(c, 2) : NULL;
	if (!sc || (ox_has_in(c, 2) && !b))
		return -c->m->err->code;
	if (!extra && a == t.rank - 1 && ts.rank == 1 && b && t.dtype == TIR_DTYPE_F32) {
		struct tir_type tb;
		if (ox_in_type(c, 2, &tb) && tb.rank == 1)
			return ox_bind_out(c, 0, EMIT("layernorm(%s, %s, %s, eps=%.9g)", x, sc, b, eps));
	}
	struct tir_str ax = {0};
	for (int k = a; k < t.rank; k++)
		tir_str_addf(&ax, "%s%d", k > a ? ", " : "", k);
	const char *mu = EMIT("mean(%s, axis=[%s], keepdims=true)", x, ax.s);
	const char *var = mu ? EMIT("var(%s, axis=[%s], keepdims=true)", x, ax.s) : NULL;
	tir_str_free(&ax);
	const char *ve = var ? EMIT("add(%s, %.9g)", var, eps) : NULL;
	const char *rs = ve ? EMIT("rsqrt(%s)", ve) : NULL;
	const char *d = rs ? EMIT("sub(%s, %s)", x, mu) : NULL;
	const char *n = d ? EMIT("mul(%s, %s)", d, rs) : NULL;
	const char *s = n ? EMIT("mul(%s, %s)", n, sc) : NULL;
	if (s && b)
		s = EMIT("add(%s, %s)", s, b);
	int rc = bind_as(c, s, t.dtype);
	if (!rc && c->n->n_output > 1 && *ox_out_name(c, 1))
		rc = ox_bind_out(c, 1, mu);
	if (!rc && c->n->n_output > 2 && *ox_out_name(c, 2))
		rc = ox_bind_out(c, 2, rs);
	return rc;
}

/* a window op's attributes (Conv, MaxPool, AveragePool) over 1 or 2
 * spatial axes, as tir's 2-D ones: a 1-D op's on the second axis, the
 * first of size 1.  kw: the kernel (from the weight, or kernel_shape);
 * pads [top, left, bottom, right] explicit or from auto_pad (with the
 * dilated kernel's extent). */
struct window {
	int64_t k[2], s[2], d[2], p[4];
};

static int window_attrs(struct ox_node_ctx *c, const struct tir_type *t, const int64_t *kw, struct window *w)
{
	int nsp = t->rank - 2;
	if (nsp != 1 && nsp != 2)
		return FAIL("%s of a %d-D input (tir has 1-D and 2-D)", c->n->op_type, nsp);
	size_t n;
	const int64_t *ks = ox_attr_ints(c, "kernel_shape", &n);
	if (ks && n != (size_t)nsp)
		return ox_fail(c->m, TIR_ETYPE, "kernel_shape of %zu axes for %d spatial axes", n, nsp);
	const int64_t *st = ox_attr_ints(c, "strides", &n);
	if (st && n != (size_t)nsp)
		return ox_fail(c->m, TIR_ETYPE, "%zu strides for %d spatial axes", n, nsp);
	const int64_t *dl = ox_attr_ints(c, "dilations", &n);
	if (dl && n != (size_t)nsp)
		return ox_fail(c->m, TIR_ETYPE, "%zu dilations for %d spatial axes", n, nsp);
	const int64_t *pd = ox_attr_ints(c, "pads", &n);
	if (pd && n != (size_t)(2 * nsp))
		return ox_fail(c->m, TIR_ETYPE, "%zu pads for %d spatial axes", n, nsp);
	int64_t in[2] = {1, 1};
	for (int a = 0; a < 2; a++) {
		int o = a - (2 - nsp); /* the ONNX axis, or -1 for the unit one */
		in[a] = o < 0 ? 1 : t->shape[2 + o];
		w->k[a] = o < 0 ? 1 : ks ? ks[o] : kw[o];
		w->s[a] = o < 0 || !st ? 1 : st[o];
		w->d[a] = o < 0 || !dl ? 1 : dl[o];
		w->p[a] = o < 0 || !pd ? 0 : pd[o];
		w->p[a + 2] = o < 0 || !pd ? 0 : pd[o + nsp];
		if (kw && w->k[a] != (o < 0 ? 1 : kw[o]))
			return ox_fail(c->m, TIR_ETYPE, "kernel_shape does not match the weight");
		if (w->k[a] < 1 || w->s[a] < 1 || w->d[a] < 1 || w->k[a] > TIR_MAX_DIM || w->s[a] > TIR_MAX_DIM ||
		    w->d[a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "kernel, strides or dilations below 1 or too large");
		if ((double)(w->k[a] - 1) * (double)w->d[a] + 1 > (double)TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "a dilated kernel of %" PRId64 " x %" PRId64 " taps", w->k[a], w->d[a]);
	}
	bool upper = ox_attr_str_is(c, "auto_pad", "SAME_UPPER", "NOTSET");
	if (upper || ox_attr_str_is(c, "auto_pad", "SAME_LOWER", "NOTSET")) {
		for (int a = 0; a < 2; a++) {
			int64_t out = (in[a] + w->s[a] - 1) / w->s[a], ext = (w->k[a] - 1) * w->d[a] + 1;
			int64_t tot = (out - 1) * w->s[a] + ext - in[a];
			if (tot < 0)
				tot = 0;
			w->p[a] = upper ? tot / 2 : tot - tot / 2;
			w->p[a + 2] = tot - w->p[a];
		}
	} else if (ox_attr_str_is(c, "auto_pad", "VALID", "NOTSET")) {
		memset(w->p, 0, sizeof w->p);
	} else if (!ox_attr_str_is(c, "auto_pad", "NOTSET", "NOTSET")) {
		return ox_fail(c->m, TIR_ETYPE, "auto_pad not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	}
	for (int a = 0; a < 4; a++)
		if (w->p[a] < 0 || w->p[a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "pads %" PRId64, w->p[a]);
	return 0;
}

/* [N, C, L] as [N, C, 1, L] (a 1-D window op as tir's 2-D) */
static const char *unit_axis(struct ox_node_ctx *c, const char *x, const struct tir_type *t)
{
	if (t->rank != 3)
		return x;
	int64_t s[4] = {t->shape[0], t->shape[1], 1, t->shape[2]};
	char b[300];
	return EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b, sizeof b, 4, s));
}

/* the 2-D result back to 1-D */
static const char *drop_unit_axis(struct ox_node_ctx *c, const char *y, int rank)
{
	if (!y || rank != 3)
		return y;
	const struct tir_ntype *ty = ox_type(c->m, y);
	int64_t s[3] = {ty->shape[0], ty->shape[1], ty->shape[3]};
	char b[300];
	return EMIT("reshape(%s, shape=%s)", y, ox_shape_str(b, sizeof b, 3, s));
}

static const char *pad_hw(struct ox_node_ctx *c, const char *x, const int64_t *p, const int64_t *extra,
			  const char *value)
{
	return EMIT("pad(%s, pads=[[0, 0], [0, 0], [%" PRId64 ", %" PRId64 "], [%" PRId64 ", %" PRId64 "]], value=%s)", x,
		    p[0], p[2] + extra[0], p[1], p[3] + extra[1], value);
}

/* Whether b is a known float vector of m elements, each +0.0. */
static bool zero_bias(const struct ox_const *b, int64_t m)
{
	if (!b || !b->d || !tir_dtype_is_float(b->dtype) || b->rank != 1 || b->shape[0] != m)
		return false;
	for (int64_t k = 0; k < b->n; k++)
		if (b->d[k] != 0 || signbit(b->d[k]))
			return false;
	return true;
}

/* Conv: tir's conv2d with its groups and dilation; 1-D on a unit axis;
 * pads uneven (SAME of an even kernel) through pad */
static int op_conv(struct ox_node_ctx *c)
{
	struct tir_type t, tw;
	const char *x = ox_in(c, 0), *w = x ? ox_in(c, 1) : NULL;
	if (!w || !ox_in_type(c, 0, &t) || !ox_in_type(c, 1, &tw))
		return -c->m->err->code;
	if (t.rank == 5)
		return ox_op_conv3d(c); /* nodes_spatial.c */
	if (tw.rank != t.rank)
		return ox_fail(c->m, TIR_ETYPE, "a weight of rank %d for an input of rank %d", tw.rank, t.rank);
	struct window win;
	if (window_attrs(c, &t, tw.shape + 2, &win))
		return -c->m->err->code;
	int64_t g = ox_attr_i(c, "group", 1);
	if (g < 1 || t.shape[1] % g || tw.shape[0] % g || tw.shape[1] * g != t.shape[1])
		return ox_fail(c->m, TIR_ETYPE, "group %" PRId64 " does not fit %" PRId64 " channels and a weight of %" PRId64
			       " x %" PRId64, g, t.shape[1], tw.shape[0], tw.shape[1]);
	int rank = t.rank;
	x = unit_axis(c, x, &t);
	w = x ? unit_axis(c, w, &tw) : NULL;
	if (!w)
		return -c->m->err->code;
	int64_t *p = win.p, none[2] = {0, 0};
	if (p[0] != p[2] || p[1] != p[3]) {
		x = pad_hw(c, x, p, none, "0");
		memset(p, 0, sizeof win.p);
		if (!x)
			return -c->m->err->code;
	}
	/* a bias of +0.0s (PyTorch's export of a batch norm folded from its
	 * initial state) is left out: each output's chain starts from +0.0
	 * either way (lib/exec/nn.c), so the same bits, with no fill of the
	 * output and no full() */
	bool has_b = ox_has_in(c, 2) && !zero_bias(ox_cin(c, 2), tw.shape[0]);
	const char *b = has_b ? ox_in(c, 2) : NULL;
	if (has_b && !b)
		return -c->m->err->code;
	char bias[300];
	snprintf(bias, sizeof bias, "%s%s", b ? ", " : "", b ? b : "");
	const char *y = EMIT("conv2d(%s, %s%s, stride=[%" PRId64 ", %" PRId64 "], padding=[%" PRId64 ", %" PRId64
			     "], dilation=[%" PRId64 ", %" PRId64 "], groups=%" PRId64 ")",
			     x, w, bias, win.s[0], win.s[1], p[0], p[1], win.d[0], win.d[1], g);
	return ox_bind_out(c, 0, drop_unit_axis(c, y, rank));
}

/* ConvTranspose as a convolution: x with s - 1 zeros between its
 * elements, padded by the dilated kernel's extent - 1 less the pads (cut
 * where that is negative; output_padding more at the end), convolved
 * with the weight flipped and its in and out channels swapped per group.
 * Pads from output_shape or auto_pad as ONNX's spec states them. */
static int op_convtranspose(struct ox_node_ctx *c)
{
	struct tir_type t, tw;
	const char *x = ox_in(c, 0), *w = x ? ox_in(c, 1) : NULL;
	if (!w || !ox_in_type(c, 0, &t) || !ox_in_type(c, 1, &tw))
		return -c->m->err->code;
	if (t.rank == 5)
		return ox_op_convtranspose3d(c); /* nodes_spatial.c */
	if (tw.rank != t.rank)
		return ox_fail(c->m, TIR_ETYPE, "a weight of rank %d for an input of rank %d", tw.rank, t.rank);
	int nsp = t.rank - 2;
	bool same = !ox_attr_str_is(c, "auto_pad", "NOTSET", "NOTSET") &&
		    !ox_attr_str_is(c, "auto_pad", "VALID", "NOTSET");
	bool upper = ox_attr_str_is(c, "auto_pad", "SAME_UPPER", "NOTSET");
	size_t nos, nop;
	const int64_t *os = ox_attr_ints(c, "output_shape", &nos), *opd = ox_attr_ints(c, "output_padding", &nop);
	struct window win;
	if (window_attrs(c, &t, tw.shape + 2, &win))
		return -c->m->err->code;
	if ((os && nos != (size_t)nsp) || (opd && nop != (size_t)nsp))
		return ox_fail(c->m, TIR_ETYPE, "output_shape or output_padding not of %d axes", nsp);
	int64_t g = ox_attr_i(c, "group", 1), C = t.shape[1], Og = tw.shape[1];
	if (g < 1 || C % g || tw.shape[0] != C)
		return ox_fail(c->m, TIR_ETYPE, "group %" PRId64 " does not fit %" PRId64 " channels and a weight of %" PRId64,
			       g, C, tw.shape[0]);
	int rank = t.rank;
	x = unit_axis(c, x, &t);
	w = x ? unit_axis(c, w, &tw) : NULL;
	if (!w)
		return -c->m->err->code;
	int64_t len[2], op[2], ext[2], front[2], back[2];
	for (int a = 0; a < 2; a++) {
		int o = a - (2 - nsp);
		len[a] = o < 0 ? 1 : t.shape[2 + o];
		op[a] = o < 0 || !opd ? 0 : opd[o];
		ext[a] = (win.k[a] - 1) * win.d[a] + 1;
		if (op[a] < 0 || op[a] > TIR_MAX_DIM ||
		    (double)(len[a] - 1) * (double)win.s[a] + (double)ext[a] + (double)op[a] > (double)TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "a result of %" PRId64 " x %" PRId64 " strides", len[a], win.s[a]);
		if (os || same) {
			int64_t out = o < 0 ? 1 : os ? os[o] : len[a] * win.s[a];
			int64_t tot = win.s[a] * (len[a] - 1) + op[a] + ext[a] - out;
			if (o < 0)
				tot = 0;
			if (tot < 0) {
				/* an output_shape past the full result: zeros after it,
				 * as output_padding gives (ONNX's reference) */
				op[a] -= tot;
				tot = 0;
			}
			win.p[a] = upper || !same ? tot / 2 : tot - tot / 2;
			win.p[a + 2] = tot - win.p[a];
		}
		if (op[a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "output_shape past %" PRId64, TIR_MAX_DIM);
		front[a] = ext[a] - 1 - win.p[a];
		back[a] = ext[a] - 1 - win.p[a + 2] + op[a];
	}
	char b1[300], b2[300];
	if (win.s[0] > 1 || win.s[1] > 1) {
		int64_t s6[6] = {t.shape[0], C, len[0], 1, len[1], 1};
		int64_t s4[4] = {t.shape[0], C, len[0] * win.s[0], len[1] * win.s[1]};
		x = EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b1, sizeof b1, 6, s6));
		x = x ? EMIT("pad(%s, pads=[[0, 0], [0, 0], [0, 0], [0, %" PRId64 "], [0, 0], [0, %" PRId64 "]])", x,
			     win.s[0] - 1, win.s[1] - 1) : NULL;
		x = x ? EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b2, sizeof b2, 4, s4)) : NULL;
		x = x ? EMIT("slice(%s, axis=2, start=0, stop=%" PRId64 ")", x, (len[0] - 1) * win.s[0] + 1) : NULL;
		x = x ? EMIT("slice(%s, axis=3, start=0, stop=%" PRId64 ")", x, (len[1] - 1) * win.s[1] + 1) : NULL;
	}
	int64_t pz[4] = {front[0] > 0 ? front[0] : 0, front[1] > 0 ? front[1] : 0, back[0] > 0 ? back[0] : 0,
			 back[1] > 0 ? back[1] : 0}, none[2] = {0, 0};
	if (x && (pz[0] || pz[1] || pz[2] || pz[3]))
		x = pad_hw(c, x, pz, none, "0");
	for (int a = 0; a < 2 && x; a++) {
		if (front[a] >= 0 && back[a] >= 0)
			continue;
		const struct tir_ntype *tx = ox_type(c->m, x);
		int64_t n = tx->shape[2 + a], st = front[a] < 0 ? -front[a] : 0, sp = n - (back[a] < 0 ? -back[a] : 0);
		if (sp <= st)
			return ox_fail(c->m, TIR_ETYPE, "pads larger than the result");
		x = EMIT("slice(%s, axis=%d, start=%" PRId64 ", stop=%" PRId64 ")", x, 2 + a, st, sp);
	}
	/* [C, O/g, kh, kw] flipped -> [g, C/g, O/g, kh, kw] -> [g, O/g, C/g, kh, kw] -> [O, C/g, kh, kw] */
	int64_t w5[5] = {g, C / g, Og, tw.shape[2], tw.shape[3]}, w4[4] = {g * Og, C / g, tw.shape[2], tw.shape[3]};
	const char *wf = x ? EMIT("slice(%s, axis=2, step=-1)", w) : NULL;
	wf = wf ? EMIT("slice(%s, axis=3, step=-1)", wf) : NULL;
	if (wf && g > 1) {
		wf = EMIT("reshape(%s, shape=%s)", wf, ox_shape_str(b1, sizeof b1, 5, w5));
		wf = wf ? EMIT("transpose(%s, perm=[0, 2, 1, 3, 4])", wf) : NULL;
		wf = wf ? EMIT("reshape(%s, shape=%s)", wf, ox_shape_str(b2, sizeof b2, 4, w4)) : NULL;
	} else if (wf) {
		wf = EMIT("transpose(%s, perm=[1, 0, 2, 3])", wf);
	}
	if (!wf)
		return -c->m->err->code;
	const char *b = ox_has_in(c, 2) ? ox_in(c, 2) : NULL;
	if (ox_has_in(c, 2) && !b)
		return -c->m->err->code;
	char bias[300];
	snprintf(bias, sizeof bias, "%s%s", b ? ", " : "", b ? b : "");
	const char *y = EMIT("conv2d(%s, %s%s, dilation=[%" PRId64 ", %" PRId64 "], groups=%" PRId64 ")", x, wf, bias,
			     win.d[0], win.d[1], g);
	return ox_bind_out(c, 0, drop_unit_axis(c, y, rank));
}

/* MaxPool, AveragePool: tir's maxpool2d and avgpool2d with padding and
 * count_include_pad when the pads are even and at most half the kernel;
 * otherwise (uneven, larger, or ceil_mode's last window) the input padded
 * first, and for the average a pool of ones counting */
static int op_pool(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank == 5)
		return ox_op_pool_nd(c); /* nodes_spatial.c */
	bool max = !strcmp(c->n->op_type, "MaxPool");
	if (c->n->n_output > 1 && *ox_out_name(c, 1))
		return ox_op_pool_nd(c); /* nodes_spatial.c: its Indices output */
	if (!ox_attr(c, "kernel_shape"))
		return ox_fail(c->m, TIR_EDATA, "no kernel_shape");
	struct window win;
	if (window_attrs(c, &t, NULL, &win))
		return -c->m->err->code;
	if (win.d[0] != 1 || win.d[1] != 1)
		return ox_op_pool_nd(c); /* nodes_spatial.c: tir's pools have no dilation */
	const int64_t *k = win.k, *s = win.s;
	int64_t *p = win.p;
	int rank = t.rank;
	x = unit_axis(c, x, &t);
	if (!x)
		return -c->m->err->code;
	if (rank == 3) {
		int64_t s4[4] = {t.shape[0], t.shape[1], 1, t.shape[2]};
		t.rank = 4;
		memcpy(t.shape, s4, sizeof s4);
	}
	int64_t extra[2] = {0, 0};
	if (ox_attr_i(c, "ceil_mode", 0)) {
		/* the last window, partly past the end, is kept: pad for it (a
		 * window must start inside the input or its front pad) */
		for (int d = 0; d < 2; d++) {
			int64_t span = t.shape[2 + d] + p[d] + p[d + 2] - k[d];
			int64_t out = (span + s[d] - 1) / s[d] + 1;
			if ((out - 1) * s[d] >= t.shape[2 + d] + p[d])
				out--;
			int64_t need = (out - 1) * s[d] + k[d] - (t.shape[2 + d] + p[d] + p[d + 2]);
			extra[d] = need > 0 ? need : 0;
		}
	}
	bool count_pad = !max && ox_attr_i(c, "count_include_pad", 0);
	const char *pool = max ? "maxpool2d" : "avgpool2d";
	const char *y;
	if (!extra[0] && !extra[1] && p[0] == p[2] && p[1] == p[3] && 2 * p[0] <= k[0] && 2 * p[1] <= k[1]) {
		y = EMIT("%s(%s, kernel=[%" PRId64 ", %" PRId64 "], stride=[%" PRId64 ", %" PRId64 "], padding=[%" PRId64
			 ", %" PRId64 "]%s)", pool, x, k[0], k[1], s[0], s[1], p[0], p[1],
			 max ? "" : count_pad ? ", count_include_pad=true" : ", count_include_pad=false");
		return bind_as(c, drop_unit_axis(c, y, rank), t.dtype);
	}
	const char *xp = pad_hw(c, x, p, extra, max ? "-inf" : "0");
	y = xp ? EMIT("%s(%s, kernel=[%" PRId64 ", %" PRId64 "], stride=[%" PRId64 ", %" PRId64 "])", pool, xp, k[0],
		      k[1], s[0], s[1]) : NULL;
	if (y && !max) {
		/* the mean of the window's cells inside the input (or inside
		 * input and pads, count_include_pad): a pool of ones divides */
		int64_t one[4] = {1, 1, t.shape[2], t.shape[3]}, none[2] = {0, 0};
		char b[300];
		const char *o = EMIT("ones(%s, dtype=%s)", ox_shape_str(b, sizeof b, 4, one), tir_dtype_name(t.dtype));
		const char *op = o ? pad_hw(c, o, p, extra, count_pad ? "1" : "0") : NULL;
		if (op && count_pad && (extra[0] || extra[1])) {
			/* pads count, the ceil_mode's extra does not */
			int64_t zero[4] = {0, 0, 0, 0};
			op = pad_hw(c, o, p, none, "1");
			op = op ? pad_hw(c, op, zero, extra, "0") : NULL;
		}
		const char *cnt = op ? EMIT("avgpool2d(%s, kernel=[%" PRId64 ", %" PRId64 "], stride=[%" PRId64 ", %" PRId64 "])",
					    op, k[0], k[1], s[0], s[1]) : NULL;
		y = cnt ? EMIT("div(%s, %s)", y, cnt) : NULL;
	}
	return bind_as(c, drop_unit_axis(c, y, rank), t.dtype);
}

static int op_global_pool(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank < 3)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	struct tir_str ax = {0};
	for (int k = 2; k < t.rank; k++)
		tir_str_addf(&ax, "%s%d", k > 2 ? ", " : "", k);
	const char *r = EMIT("%s(%s, axis=[%s], keepdims=true)",
			     !strcmp(c->n->op_type, "GlobalMaxPool") ? "max" : "mean", x, ax.s);
	tir_str_free(&ax);
	return bind_as(c, r, t.dtype);
}

static int op_depth_space(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank != 4)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	int64_t b = ox_attr_i(c, "blocksize", 0), N = t.shape[0], C = t.shape[1], H = t.shape[2], W = t.shape[3];
	if (b < 1)
		return ox_fail(c->m, TIR_ETYPE, "blocksize %" PRId64, b);
	char b1[300], b2[300];
	const char *r;
	if (!strcmp(c->n->op_type, "DepthToSpace")) {
		if (C % (b * b))
			return ox_fail(c->m, TIR_ETYPE, "channels %" PRId64 " not a multiple of blocksize²", C);
		bool crd = ox_attr_str_is(c, "mode", "CRD", "DCR");
		int64_t s1[6] = {N, b, b, C / (b * b), H, W}, s1c[6] = {N, C / (b * b), b, b, H, W};
		int64_t out[4] = {N, C / (b * b), H * b, W * b};
		r = EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b1, sizeof b1, 6, crd ? s1c : s1));
		r = r ? EMIT("transpose(%s, perm=%s)", r, crd ? "[0, 1, 4, 2, 5, 3]" : "[0, 3, 4, 1, 5, 2]") : NULL;
		r = r ? EMIT("reshape(%s, shape=%s)", r, ox_shape_str(b2, sizeof b2, 4, out)) : NULL;
	} else {
		if (H % b || W % b)
			return ox_fail(c->m, TIR_ETYPE, "spatial sizes not multiples of blocksize");
		int64_t s1[6] = {N, C, H / b, b, W / b, b}, out[4] = {N, C * b * b, H / b, W / b};
		r = EMIT("reshape(%s, shape=%s)", x, ox_shape_str(b1, sizeof b1, 6, s1));
		r = r ? EMIT("transpose(%s, perm=[0, 3, 5, 1, 2, 4])", r) : NULL;
		r = r ? EMIT("reshape(%s, shape=%s)", r, ox_shape_str(b2, sizeof b2, 4, out)) : NULL;
	}
	return ox_bind_out(c, 0, r);
}

/* MeanVarianceNormalization: (x - mean) / (std + 1e-9) over axes
 * (default [0, 2, 3]), as ONNX's function body */
static int op_mvn(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	size_t n;
	const int64_t *ax = ox_attr_ints(c, "axes", &n), def[3] = {0, 2, 3};
	if (!ax) {
		ax = def;
		n = 3;
	}
	if (n > TIR_MAX_RANK)
		return ox_fail(c->m, TIR_ETYPE, "%zu axes", n);
	struct tir_str s = {0};
	for (size_t k = 0; k < n; k++) {
		int a;
		if (norm_axis(c, ax[k], t.rank, &a))
			return tir_str_free(&s), -c->m->err->code;
		tir_str_addf(&s, "%s%d", k ? ", " : "", a);
	}
	const char *mu = EMIT("mean(%s, axis=[%s], keepdims=true)", x, s.s ? s.s : "");
	const char *d = mu ? EMIT("sub(%s, %s)", x, mu) : NULL;
	const char *sq = d ? EMIT("mul(%s, %s)", d, d) : NULL;
	const char *var = sq ? EMIT("mean(%s, axis=[%s], keepdims=true)", sq, s.s ? s.s : "") : NULL;
	tir_str_free(&s);
	const char *sd = var ? EMIT("sqrt(%s)", var) : NULL;
	const char *se = sd ? EMIT("add(%s, 1e-9)", sd) : NULL;
	return bind_as(c, se ? EMIT("div(%s, %s)", d, se) : NULL, t.dtype);
}

/* LRN: x / (bias + alpha / size * the sum of x² over the size channels
 * around)^beta; the sum as size slices of x² padded on the channels */
static int op_lrn(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	int64_t size = ox_attr_i(c, "size", 0);
	double alpha = ox_attr_f(c, "alpha", 1e-4), beta = ox_attr_f(c, "beta", 0.75), bias = ox_attr_f(c, "bias", 1.0);
	if (t.rank < 3)
		return ox_fail(c->m, TIR_ETYPE, "input of rank %d", t.rank);
	if (size < 1 || size > 64)
		return FAIL("LRN of size %" PRId64 " is not supported (1 to 64)", size);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo, C = t.shape[1];
	struct tir_str p = {0};
	tir_str_addf(&p, "[");
	for (int k = 0; k < t.rank; k++)
		tir_str_addf(&p, k == 1 ? "%s[%" PRId64 ", %" PRId64 "]" : "%s[0, 0]", k ? ", " : "", lo, hi);
	tir_str_addf(&p, "]");
	const char *sq = EMIT("mul(%s, %s)", x, x);
	const char *sp = sq ? EMIT("pad(%s, pads=%s)", sq, p.s) : NULL;
	tir_str_free(&p);
	const char *ss = NULL;
	for (int64_t i = 0; i < size && sp; i++) {
		const char *sl = EMIT("slice(%s, axis=1, start=%" PRId64 ", stop=%" PRId64 ")", sp, i, i + C);
		ss = sl && ss ? EMIT("add(%s, %s)", ss, sl) : sl;
		if (!ss)
			return -c->m->err->code;
	}
	const char *sc = ss ? EMIT("mul(%s, %.9g)", ss, alpha / (double)size) : NULL;
	const char *b = sc ? EMIT("add(%s, %.9g)", sc, bias) : NULL;
	const char *pw = b ? EMIT("pow(%s, %.9g)", b, beta) : NULL;
	return bind_as(c, pw ? EMIT("div(%s, %s)", x, pw) : NULL, t.dtype);
}

/* ---- the table ---- */

static const struct ox_opdef ops[] = {
	{"Abs", op_unary}, {"Neg", op_unary}, {"Relu", op_unary}, {"Sigmoid", op_unary}, {"Tanh", op_unary},
	{"Exp", op_unary}, {"Log", op_unary}, {"Sqrt", op_unary}, {"Erf", op_unary}, {"Floor", op_unary},
	{"Ceil", op_unary}, {"Round", op_unary}, {"Sign", op_unary}, {"Reciprocal", op_unary}, {"Not", op_unary},
	{"Sin", op_unary}, {"Cos", op_unary},
	{"Add", op_binary}, {"Sub", op_binary}, {"Mul", op_binary}, {"Div", op_binary}, {"Pow", op_binary},
	{"Mod", op_binary}, {"Equal", op_binary}, {"Less", op_binary}, {"Greater", op_binary},
	{"LessOrEqual", op_binary}, {"GreaterOrEqual", op_binary}, {"And", op_binary}, {"Or", op_binary},
	{"Xor", op_binary},
	{"Min", op_variadic}, {"Max", op_variadic}, {"Sum", op_variadic}, {"Mean", op_variadic},
	{"Identity", op_identity}, {"Dropout", op_dropout}, {"Where", op_where}, {"Clip", op_clip},
	{"LeakyRelu", op_activation}, {"PRelu", op_activation}, {"Elu", op_activation}, {"Selu", op_activation},
	{"Celu", op_activation}, {"HardSigmoid", op_activation}, {"HardSwish", op_activation},
	{"Softplus", op_activation}, {"Softsign", op_activation}, {"ThresholdedRelu", op_activation},
	{"Tan", op_activation}, {"IsNaN", op_activation}, {"IsInf", op_activation}, {"Gelu", op_activation},
	{"Shrink", op_activation}, {"Sinh", op_activation}, {"Cosh", op_activation}, {"Asinh", op_activation},
	{"Acosh", op_activation}, {"Atanh", op_activation}, {"Asin", op_activation}, {"Acos", op_activation},
	{"Atan", op_activation},
	{"CastLike", op_castlike}, {"Trilu", op_trilu}, {"EyeLike", op_eyelike}, {"Hardmax", op_hardmax},
	{"OneHot", op_onehot},
	{"Constant", op_constant}, {"Shape", op_shape}, {"Size", op_size}, {"ConstantOfShape", op_constant_of_shape},
	{"Range", op_range}, {"Reshape", op_reshape}, {"Flatten", op_flatten}, {"Squeeze", op_squeeze},
	{"Unsqueeze", op_unsqueeze}, {"Transpose", op_transpose}, {"Concat", op_concat}, {"Slice", op_slice},
	{"Gather", op_gather}, {"GatherElements", op_gather_elements}, {"TopK", op_topk},
	{"NegativeLogLikelihoodLoss", op_nllloss}, {"SoftmaxCrossEntropyLoss", op_sceloss}, {"Cast", op_cast}, {"Expand", op_expand}, {"Tile", op_tile}, {"Split", op_split},
	{"Pad", op_pad}, {"CumSum", op_cumsum}, {"Einsum", op_einsum},
	{"ReduceSum", op_reduce}, {"ReduceMean", op_reduce}, {"ReduceMax", op_reduce}, {"ReduceMin", op_reduce},
	{"ReduceProd", op_reduce}, {"ReduceL1", op_reduce}, {"ReduceL2", op_reduce}, {"ReduceSumSquare", op_reduce},
	{"ReduceLogSum", op_reduce}, {"ReduceLogSumExp", op_reduce},
	{"ArgMax", op_argmax}, {"ArgMin", op_argmax},
	{"MatMul", op_matmul}, {"Det", op_det}, {"Gemm", op_gemm}, {"Softmax", op_softmax}, {"LogSoftmax", op_softmax},
	{"BatchNormalization", op_batchnorm}, {"InstanceNormalization", op_instancenorm},
	{"LayerNormalization", op_layernorm}, {"Conv", op_conv}, {"ConvTranspose", op_convtranspose}, {"MaxPool", op_pool}, {"AveragePool", op_pool},
	{"GlobalAveragePool", op_global_pool}, {"GlobalMaxPool", op_global_pool},
	{"MeanVarianceNormalization", op_mvn}, {"LRN", op_lrn},
	{"DepthToSpace", op_depth_space}, {"SpaceToDepth", op_depth_space},
	/* nodes_spatial.c */
	{"Resize", ox_op_resize}, {"Upsample", ox_op_resize}, {"GridSample", ox_op_gridsample},
	{"RoiAlign", ox_op_roialign}, {"MaxUnpool", ox_op_maxunpool},
	/* nodes_seq.c */
	{"RNN", ox_op_rnn}, {"GRU", ox_op_gru}, {"LSTM", ox_op_lstm},
	{"GatherND", ox_op_gathernd}, {"ReverseSequence", ox_op_reversesequence},
	{"ScatterND", ox_op_scatternd}, {"ScatterElements", ox_op_scatterelements}, {"Scatter", ox_op_scatterelements},
	{NULL, NULL}};

const struct ox_opdef *ox_op_lookup(const char *op_type)
{
	for (int k = 0; op_type && ops[k].name; k++)
		if (!strcmp(ops[k].name, op_type))
			return &ops[k];
	return ox_misc_lookup(op_type);
}

const char *ox_op_refused(const char *op_type)
{
	static const char *const data_dep[] = {"NonZero", "Unique", "NonMaxSuppression", "Compress", NULL};
	static const char *const flow[] = {"If", "Loop", "Scan", NULL};
	for (int k = 0; op_type && data_dep[k]; k++)
		if (!strcmp(op_type, data_dep[k]))
			return "its result's shape depends on the data (tir's shapes are static)";
	for (int k = 0; op_type && flow[k]; k++)
		if (!strcmp(op_type, flow[k]))
			return "control flow is not supported";
	return NULL;
}
