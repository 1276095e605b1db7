/*
 * check.c — shape and dtype inference, one rule per family of ops (ops.def
 * names the rule of each op).  NumPy broadcasting; promotion by
 * tir_dtype_promote's table (PyTorch's) with weak scalar literals.  Annotations are
 * compared in parse.c.  Errors point at the operand at fault and name both
 * shapes.  Nothing here allocates tensor memory or runs anything.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TSTR(t, buf) tir_type_str((t), (buf), sizeof(buf))

static int kind_of(int dt)
{
	return dt == TIR_DTYPE_BOOL ? 0 : tir_dtype_is_int((enum tir_dtype)dt) ? 1 : 2;
}

/* The dtype and weakness of a combined with b into *t (whose shape is not
 * touched: t may be a). */
#define promote_into(a, b, t) promote_dtypes((a)->dtype, (a)->weak, (b)->dtype, (b)->weak, (t))
static void promote_dtypes(int dta, bool weaka, int dtb, bool weakb, struct tir_type *t)
{
	const struct {
		uint8_t dtype;
		bool weak;
	} a0 = {(uint8_t)dta, weaka}, b0 = {(uint8_t)dtb, weakb}, *a = &a0, *b = &b0;
	uint8_t dtype = a->dtype;
	bool weak;
	if (a->weak && !b->weak) {
		dtype = b->dtype;
		if (kind_of(a->dtype) > kind_of(b->dtype))
			dtype = a->dtype == TIR_DTYPE_I64 ? TIR_DTYPE_I64 : a->dtype;
		weak = false;
	} else if (b->weak && !a->weak) {
		if (kind_of(b->dtype) > kind_of(a->dtype))
			dtype = b->dtype;
		weak = false;
	} else {
		dtype = (uint8_t)tir_dtype_promote((enum tir_dtype)a->dtype, (enum tir_dtype)b->dtype);
		weak = a->weak && b->weak;
	}
	t->dtype = dtype;
	t->weak = weak;
}

struct tir_type tir_promote_dtypes(int dta, bool weaka, int dtb, bool weakb)
{
	struct tir_type t = {0};
	promote_dtypes(dta, weaka, dtb, weakb, &t);
	return t;
}

bool tir_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, struct tir_type *out)
{
	int rank = ra > rb ? ra : rb;
	/* first whether they broadcast (out stays untouched if not), then the
	 * shape from the last axis back, so that out may be a or b */
	for (int i = 1; i <= rank; i++) {
		int64_t da = i <= ra ? a[ra - i] : 1, db = i <= rb ? b[rb - i] : 1;
		if (da != db && da != 1 && db != 1)
			return false;
	}
	for (int i = 1; i <= rank; i++) {
		int64_t da = i <= ra ? a[ra - i] : 1, db = i <= rb ? b[rb - i] : 1;
		out->shape[rank - i] = da == 1 ? db : da;
	}
	out->rank = (uint8_t)rank;
	return true;
}

int tir_axis(int64_t a, int rank)
{
	if (a < -(int64_t)rank || a >= rank)
		return -1;
	return (int)(a < 0 ? a + rank : a);
}

/* ---- rule helpers ---- */

static const struct tir_opdef *def(const struct tir_node *n)
{
	return tir_op(n->op);
}

static struct tir_attr *attr(struct tir_node *n, const char *name)
{
	int i = tir_op_attr_index(n->op, name);
	TIR_ASSERT(i >= 0);
	return &n->attr[i];
}

static int fail_at(struct tir_node *n, int operand, struct tir_err *err, int code,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail_at(struct tir_node *n, int operand, struct tir_err *err, int code,
		   const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct tir_loc loc = operand >= 0 && operand < n->nin ? tir_node_inloc(n, operand) : n->loc;
	return tir_errf(err, code, &loc, "%s: %s", def(n)->name, msg);
}

/* Shapes from an attribute: non-negative, bounded, no overflow. */
static int shape_from(struct tir_node *n, const struct tir_attr *a, struct tir_type *t,
		      struct tir_err *err)
{
	if (a->n > TIR_MAX_RANK)
		return fail_at(n, -1, err, TIR_ETYPE, "more than %d dimensions", TIR_MAX_RANK);
	int64_t numel = 1;
	for (int i = 0; i < a->n; i++) {
		int64_t d = a->v[i];
		if (d < 0)
			return fail_at(n, -1, err, TIR_ETYPE, "dimension %d is %lld; dimensions are >= 0",
				       i, (long long)d);
		int64_t d1 = d ? d : 1; /* see tir_type_bounded */
		if (d > TIR_MAX_DIM || numel > TIR_MAX_ELEMS / d1)
			return fail_at(n, -1, err, TIR_ETYPE, "shape has more than %lld elements",
				       (long long)TIR_MAX_ELEMS);
		numel *= d1;
		t->shape[i] = d;
	}
	t->rank = (uint8_t)a->n;
	return 0;
}

static int check_numel(struct tir_node *n, const struct tir_type *t, struct tir_err *err)
{
	int64_t numel = 1;
	for (int i = 0; i < t->rank; i++) {
		if (t->shape[i] && numel > TIR_MAX_ELEMS / t->shape[i])
			return fail_at(n, -1, err, TIR_ETYPE, "result has more than %lld elements",
				       (long long)TIR_MAX_ELEMS);
		numel *= t->shape[i];
	}
	return 0;
}

static const struct tir_ntype *in(const struct tir_node *n, int i)
{
	return &n->in[i]->type;
}

/* ---- rules ---- */

static int rule_none(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	return 0;
}

static int rule_same(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	*ty = tir_ntype_value(in(n, 0));
	return 0;
}

static int rule_all_reduce(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	static const char *const ops[] = {"sum", "mean", "max", "min", "prod"};
	const char *w = attr(n, "op")->s;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (!strcmp(w, ops[i]))
			return rule_same(n, ty, err);
	return fail_at(n, -1, err, TIR_ETYPE, "op must be sum, mean, max, min or prod, got '%s'", w);
}

static int rule_shard(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *t = in(n, 0);
	int64_t a = attr(n, "axis")->i;
	if (a < -(int64_t)t->rank || a >= (int64_t)t->rank) {
		char s[TIR_TYPE_STRLEN];
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s", (long long)a, TSTR(t, s));
	}
	return rule_same(n, ty, err);
}

static int rule_fill(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	ty->dtype = (uint8_t)attr(n, "dtype")->i;
	return shape_from(n, attr(n, "shape"), ty, err);
}

void tir_arange_params(const struct tir_node *n, double *start, double *stop, double *step)
{
	const struct tir_attr *a = &n->attr[0], *b = &n->attr[1], *s = &n->attr[2];
	*start = a->f;
	*stop = b->f;
	*step = s->f;
	if (!b->set) {
		*stop = a->f;
		*start = 0;
	}
}

static int rule_arange(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	double start, stop, step;
	tir_arange_params(n, &start, &stop, &step);
	const struct tir_attr *dt = attr(n, "dtype");
	bool ints = n->attr[0].is_int && (!n->attr[1].set || n->attr[1].is_int) && n->attr[2].is_int;
	ty->dtype = dt->set ? (uint8_t)dt->i : ints ? TIR_DTYPE_I64 : TIR_DTYPE_F32;
	if (step == 0 || isnan(step))
		return fail_at(n, -1, err, TIR_ETYPE, "step must not be zero");
	if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
		return fail_at(n, -1, err, TIR_ETYPE, "start, stop and step must be finite");
	double len = ceil((stop - start) / step);
	if (len < 0)
		len = 0;
	if (len > (double)TIR_MAX_ELEMS)
		return fail_at(n, -1, err, TIR_ETYPE, "more than %lld elements", (long long)TIR_MAX_ELEMS);
	if (ty->dtype == TIR_DTYPE_BOOL)
		return fail_at(n, -1, err, TIR_ETYPE, "a bool range makes no sense; use i32 or i64");
	ty->rank = 1;
	ty->shape[0] = (int64_t)len;
	return 0;
}

void tir_linspace_params(const struct tir_node *n, double *start, double *stop, int64_t *num, bool *endpoint,
			 double *step, double *delta, double *div)
{
	const struct tir_attr *a = &n->attr[0], *b = &n->attr[1];
	*start = a->is_int ? (double)a->i : a->f;
	*stop = b->is_int ? (double)b->i : b->f;
	*num = n->attr[2].i;
	*endpoint = n->attr[3].i && *num > 1;
	int64_t dv = n->attr[3].i ? *num - 1 : *num;
	*delta = *stop - *start;
	*div = dv > 0 ? (double)dv : 1;
	*step = dv > 0 ? *delta / *div : 0;
}

static int rule_linspace(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	double start, stop, step, delta, div;
	int64_t num;
	bool endpoint;
	tir_linspace_params(n, &start, &stop, &num, &endpoint, &step, &delta, &div);
	ty->dtype = (uint8_t)attr(n, "dtype")->i;
	if (num < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "num must be >= 0, got %lld", (long long)num);
	if (num > TIR_MAX_ELEMS)
		return fail_at(n, -1, err, TIR_ETYPE, "more than %lld elements", (long long)TIR_MAX_ELEMS);
	if (!isfinite(start) || !isfinite(stop) || !isfinite(delta))
		return fail_at(n, -1, err, TIR_ETYPE, "start and stop must be finite");
	if (!tir_dtype_is_float(ty->dtype))
		return fail_at(n, -1, err, TIR_ETYPE, "dtype must be a float type");
	ty->rank = 1;
	ty->shape[0] = num;
	return 0;
}

static int rule_eye(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	int64_t k = attr(n, "n")->i;
	if (k < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "n must be >= 0, got %lld", (long long)k);
	if (k > 0 && k > TIR_MAX_ELEMS / k)
		return fail_at(n, -1, err, TIR_ETYPE, "eye(%lld) has more than %lld elements",
			       (long long)k, (long long)TIR_MAX_ELEMS);
	ty->dtype = (uint8_t)attr(n, "dtype")->i;
	ty->rank = 2;
	ty->shape[0] = ty->shape[1] = k;
	return 0;
}

static int rule_random(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	ty->dtype = (uint8_t)attr(n, "dtype")->i;
	if (!tir_dtype_is_float(ty->dtype))
		return fail_at(n, -1, err, TIR_ETYPE, "dtype must be a float type (f16, bf16, f32, f64), got %s",
			       tir_dtype_name(ty->dtype));
	return shape_from(n, attr(n, "shape"), ty, err);
}

static int rule_load(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	return 0; /* the parser asked the loader for the type */
}

static int rule_unary_num(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	*ty = tir_ntype_value(in(n, 0));
	if (ty->dtype == TIR_DTYPE_BOOL)
		return fail_at(n, 0, err, TIR_ETYPE, "not defined for bool; cast first");
	return 0;
}

static int rule_unary_float(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	*ty = tir_ntype_value(in(n, 0));
	if (!tir_dtype_is_float(ty->dtype))
		ty->dtype = TIR_DTYPE_F32;
	return 0;
}

static int rule_unary_logic(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	*ty = tir_ntype_value(in(n, 0));
	ty->dtype = TIR_DTYPE_BOOL;
	return 0;
}

/* Broadcast all operands; the dtype of them all promoted. */
static int broadcast_all(struct tir_node *n, struct tir_type *out, struct tir_err *err)
{
	tir_ntype_get(in(n, 0), out);
	/* Two scalars of one dtype (t2 = t1 * 0.5, most nodes of a long
	 * scalar program): that dtype, weak only if both are, as the loop
	 * below gives them (a dtype promoted with itself is itself; a weak
	 * scalar beside a strong one of its dtype takes the strong one's),
	 * without broadcasting shapes or asking the dtypes' kinds.
	 * test_check's test_scalar_fast holds the two ways together. */
	if (n->nin == 2) {
		const struct tir_ntype *b = in(n, 1);
		if (out->rank == 0 && b->rank == 0 && out->dtype == b->dtype) {
			out->weak = out->weak && b->weak;
			return 0;
		}
	}
	for (int i = 1; i < n->nin; i++) {
		/* in place: tir_broadcast leaves out as it was when they do not */
		if (!tir_broadcast(out, in(n, i), out)) {
			char sa[TIR_TYPE_STRLEN], sb[TIR_TYPE_STRLEN];
			return fail_at(n, i, err, TIR_ETYPE, "shapes %s and %s do not broadcast",
				       TSTR(out, sa), TSTR(in(n, i), sb));
		}
		promote_into(out, in(n, i), out);
	}
	return 0;
}

static int rule_arith(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	int rc = broadcast_all(n, ty, err);
	if (rc)
		return rc;
	if (ty->dtype == TIR_DTYPE_BOOL && n->op != TIR_OP_MAXIMUM && n->op != TIR_OP_MINIMUM)
		return fail_at(n, 0, err, TIR_ETYPE, "both operands are bool; cast them first");
	return check_numel(n, ty, err);
}

/* left_shift, right_shift: integers only (NumPy's), the promoted dtype */
static int rule_shift(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	int rc = broadcast_all(n, ty, err);
	if (rc)
		return rc;
	enum tir_dtype dt = (enum tir_dtype)ty->dtype;
	if (dt == TIR_DTYPE_BOOL || tir_dtype_is_float(dt))
		return fail_at(n, 0, err, TIR_ETYPE, "integer operands only, not %s", tir_dtype_name(dt));
	return check_numel(n, ty, err);
}

static int rule_compare(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	int rc = broadcast_all(n, ty, err);
	ty->dtype = TIR_DTYPE_BOOL;
	return rc ? rc : check_numel(n, ty, err);
}

static int rule_logic(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	return rule_compare(n, ty, err);
}

static int rule_where(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	int rc = broadcast_all(n, ty, err);
	if (rc)
		return rc;
	struct tir_type p = tir_promote(in(n, 1), in(n, 2));
	ty->dtype = p.dtype;
	ty->weak = p.weak && in(n, 0)->weak;
	return check_numel(n, ty, err);
}

static int rule_clip(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	int rc = broadcast_all(n, ty, err);
	if (!rc && ty->dtype == TIR_DTYPE_BOOL)
		return fail_at(n, 0, err, TIR_ETYPE, "not defined for bool");
	return rc ? rc : check_numel(n, ty, err);
}

void tir_reduce_mask(const struct tir_node *n, int rank, bool mask[TIR_MAX_RANK])
{
	const struct tir_attr *a = &n->attr[0];
	for (int i = 0; i < TIR_MAX_RANK; i++)
		mask[i] = !a->set;
	if (a->set)
		for (int i = 0; i < a->n; i++)
			mask[tir_axis(a->v ? a->v[i] : a->i, rank)] = true;
}

static int rule_reduce(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	struct tir_attr *ax = attr(n, "axis");
	if (ax->set && !ax->v) { /* an int attribute (argmax): one axis */
		ax->v = &ax->i;
		ax->n = 1;
	}
	bool mask[TIR_MAX_RANK] = {0};
	if (ax->set) {
		for (int i = 0; i < ax->n; i++) {
			int a = tir_axis(ax->v[i], x->rank);
			char s[TIR_TYPE_STRLEN];
			if (a < 0)
				return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s (rank %d)",
					       (long long)ax->v[i], TSTR(x, s), x->rank);
			if (mask[a])
				return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is given twice", (long long)ax->v[i]);
			mask[a] = true;
		}
	}
	tir_reduce_mask(n, x->rank, mask);
	bool keep = attr(n, "keepdims")->i;
	struct tir_type t = {.dtype = x->dtype};
	for (int i = 0; i < x->rank; i++) {
		if (!mask[i])
			t.shape[t.rank++] = x->shape[i];
		else if (keep)
			t.shape[t.rank++] = 1;
	}
	switch (n->op) {
	case TIR_OP_SUM:
	case TIR_OP_PROD:
		if (x->dtype == TIR_DTYPE_BOOL || tir_dtype_is_int((enum tir_dtype)x->dtype))
			t.dtype = TIR_DTYPE_I64;
		break;
	case TIR_OP_MEAN:
	case TIR_OP_VAR:
	case TIR_OP_STD:
	case TIR_OP_LOGSUMEXP:
		if (!tir_dtype_is_float(x->dtype))
			t.dtype = TIR_DTYPE_F32;
		break;
	case TIR_OP_ANY:
	case TIR_OP_ALL:
		t.dtype = TIR_DTYPE_BOOL;
		break;
	case TIR_OP_ARGMAX:
	case TIR_OP_ARGMIN:
		t.dtype = TIR_DTYPE_I64;
		break;
	default:
		break;
	}
	*ty = t;
	return 0;
}

static int rule_reshape(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	const struct tir_attr *s = attr(n, "shape");
	char sx[TIR_TYPE_STRLEN];
	if (s->n > TIR_MAX_RANK)
		return fail_at(n, -1, err, TIR_ETYPE, "more than %d dimensions", TIR_MAX_RANK);
	int infer = -1;
	int64_t known = 1;
	struct tir_type t = {.dtype = x->dtype, .rank = (uint8_t)s->n};
	for (int i = 0; i < s->n; i++) {
		int64_t d = s->v[i];
		if (d == -1) {
			if (infer >= 0)
				return fail_at(n, -1, err, TIR_ETYPE, "only one dimension may be -1");
			infer = i;
			continue;
		}
		if (d < 0)
			return fail_at(n, -1, err, TIR_ETYPE, "dimension %lld is negative", (long long)d);
		if (d > TIR_MAX_DIM || (d && known > TIR_MAX_ELEMS / d))
			return fail_at(n, -1, err, TIR_ETYPE, "shape has more than %lld elements",
				       (long long)TIR_MAX_ELEMS);
		known *= d;
		t.shape[i] = d;
	}
	int64_t numel = tir_type_numel(x);
	if (infer >= 0) {
		if (known == 0 || numel % known)
			return fail_at(n, -1, err, TIR_ETYPE, "cannot reshape %s (%lld elements) into a shape with -1",
				       TSTR(x, sx), (long long)numel);
		t.shape[infer] = numel / known;
		known = numel;
	}
	if (known != numel) {
		char st[TIR_TYPE_STRLEN];
		return fail_at(n, -1, err, TIR_ETYPE, "cannot reshape %s (%lld elements) into %s (%lld elements)",
			       TSTR(x, sx), (long long)numel, TSTR(&t, st), (long long)known);
	}
	*ty = t;
	return 0;
}

static int rule_transpose(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	struct tir_attr *p = attr(n, "perm");
	struct tir_type t = {.dtype = x->dtype, .rank = x->rank};
	char sx[TIR_TYPE_STRLEN];
	if (!p->set) {
		for (int i = 0; i < x->rank; i++)
			t.shape[i] = x->shape[x->rank - 1 - i];
		*ty = t;
		return 0;
	}
	if (p->n != x->rank)
		return fail_at(n, -1, err, TIR_ETYPE, "perm has %d entries for %s (rank %d)", p->n,
			       TSTR(x, sx), x->rank);
	bool seen[TIR_MAX_RANK] = {0};
	for (int i = 0; i < p->n; i++) {
		int a = tir_axis(p->v[i], x->rank);
		if (a < 0 || seen[a])
			return fail_at(n, -1, err, TIR_ETYPE, "perm is not a permutation of the %d axes of %s",
				       x->rank, TSTR(x, sx));
		seen[a] = true;
		t.shape[i] = x->shape[a];
	}
	*ty = t;
	return 0;
}

static int rule_expand(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	struct tir_type t = {.dtype = x->dtype};
	int rc = shape_from(n, attr(n, "shape"), &t, err);
	if (rc)
		return rc;
	struct tir_type b;
	char sx[TIR_TYPE_STRLEN], st[TIR_TYPE_STRLEN];
	bool ok = t.rank >= x->rank && tir_broadcast(x, &t, &b);
	for (int i = 0; ok && i < t.rank; i++)
		ok = b.shape[i] == t.shape[i];
	if (!ok)
		return fail_at(n, -1, err, TIR_ETYPE, "cannot expand %s to %s", TSTR(x, sx), TSTR(&t, st));
	*ty = t;
	return 0;
}

static int rule_squeeze(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	struct tir_attr *ax = attr(n, "axis");
	bool mask[TIR_MAX_RANK] = {0};
	char sx[TIR_TYPE_STRLEN];
	for (int i = 0; i < x->rank; i++)
		mask[i] = !ax->set && x->shape[i] == 1;
	for (int i = 0; ax->set && i < ax->n; i++) {
		int a = tir_axis(ax->v[i], x->rank);
		if (a < 0)
			return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s",
				       (long long)ax->v[i], TSTR(x, sx));
		if (x->shape[a] != 1)
			return fail_at(n, -1, err, TIR_ETYPE, "axis %lld of %s has size %lld, not 1",
				       (long long)ax->v[i], TSTR(x, sx), (long long)x->shape[a]);
		if (mask[a])
			return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is given twice", (long long)ax->v[i]);
		mask[a] = true;
	}
	struct tir_type t = {.dtype = x->dtype, .weak = x->weak};
	for (int i = 0; i < x->rank; i++)
		if (!mask[i])
			t.shape[t.rank++] = x->shape[i];
	*ty = t;
	return 0;
}

static int rule_unsqueeze(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	if (x->rank >= TIR_MAX_RANK)
		return fail_at(n, -1, err, TIR_ETYPE, "more than %d dimensions (%s has %d already)", TIR_MAX_RANK,
			       TSTR(x, sx), x->rank);
	int a = tir_axis(attr(n, "axis")->i, x->rank + 1);
	if (a < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s",
			       (long long)attr(n, "axis")->i, TSTR(x, sx));
	struct tir_type t = {.dtype = x->dtype, .rank = (uint8_t)(x->rank + 1)};
	for (int i = 0, j = 0; i < t.rank; i++)
		t.shape[i] = i == a ? 1 : x->shape[j++];
	*ty = t;
	return 0;
}

static int rule_concat(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	if (n->nin == 0)
		return fail_at(n, -1, err, TIR_ETYPE, "needs at least one tensor");
	const struct tir_ntype *x = in(n, 0);
	char sa[TIR_TYPE_STRLEN], sb[TIR_TYPE_STRLEN];
	if (x->rank == 0)
		return fail_at(n, 0, err, TIR_ETYPE, "cannot concatenate scalars");
	int a = tir_axis(attr(n, "axis")->i, x->rank);
	if (a < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s",
			       (long long)attr(n, "axis")->i, TSTR(x, sa));
	struct tir_type t = tir_ntype_value(x);
	t.weak = false;
	for (int i = 1; i < n->nin; i++) {
		const struct tir_ntype *y = in(n, i);
		bool ok = y->rank == x->rank;
		for (int k = 0; ok && k < x->rank; k++)
			ok = k == a || y->shape[k] == x->shape[k];
		if (!ok)
			return fail_at(n, i, err, TIR_ETYPE, "%s and %s differ outside axis %d",
				       TSTR(x, sa), TSTR(y, sb), a);
		t.shape[a] += y->shape[a];
		if (t.shape[a] > TIR_MAX_DIM)
			return fail_at(n, i, err, TIR_ETYPE, "result too large");
		t.dtype = (uint8_t)tir_dtype_promote((enum tir_dtype)t.dtype, (enum tir_dtype)y->dtype);
	}
	*ty = t;
	return check_numel(n, &t, err);
}

/* Python's slice.indices: (start, stop, step) clamped for a length. */
void tir_slice_params(const struct tir_node *n, int64_t dim, int64_t *start, int64_t *step,
		      int64_t *len)
{
	const struct tir_attr *s0 = &n->attr[1], *s1 = &n->attr[2], *st = &n->attr[3];
	int64_t step_ = st->i;
	int64_t lo = step_ < 0 ? -1 : 0, hi = step_ < 0 ? dim - 1 : dim;
	int64_t b, e;
	if (!s0->set) {
		b = step_ < 0 ? hi : lo;
	} else {
		b = s0->i;
		if (b < 0)
			b = b + dim < lo ? lo : b + dim;
		else if (b > hi)
			b = hi;
	}
	if (!s1->set) {
		e = step_ < 0 ? lo : hi;
	} else {
		e = s1->i;
		if (e < 0)
			e = e + dim < lo ? lo : e + dim;
		else if (e > hi)
			e = hi;
	}
	int64_t l = 0;
	if (step_ > 0 && e > b)
		l = (e - b - 1) / step_ + 1;
	else if (step_ < 0 && b > e)
		l = (b - e - 1) / -step_ + 1;
	*start = b;
	*step = step_;
	*len = l;
}

static int rule_slice(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	if (x->rank == 0)
		return fail_at(n, 0, err, TIR_ETYPE, "cannot slice a scalar");
	int a = tir_axis(attr(n, "axis")->i, x->rank);
	if (a < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s",
			       (long long)attr(n, "axis")->i, TSTR(x, sx));
	if (attr(n, "step")->i == 0)
		return fail_at(n, -1, err, TIR_ETYPE, "step must not be zero");
	if (attr(n, "step")->i == INT64_MIN)
		return fail_at(n, -1, err, TIR_ETYPE, "step out of range");
	int64_t start, step, len;
	tir_slice_params(n, x->shape[a], &start, &step, &len);
	*ty = tir_ntype_value(x);
	ty->shape[a] = len;
	return 0;
}

static int rule_pad(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	const struct tir_attr *p = attr(n, "pads");
	char sx[TIR_TYPE_STRLEN];
	if (p->n != 2 * x->rank)
		return fail_at(n, -1, err, TIR_ETYPE, "%d pair%s for %s: give one [before, after] per axis",
			       p->n / 2, p->n == 2 ? "" : "s", TSTR(x, sx));
	struct tir_type t = tir_ntype_value(x);
	t.weak = false;
	for (int i = 0; i < x->rank; i++) {
		if (p->v[2 * i] < 0 || p->v[2 * i + 1] < 0)
			return fail_at(n, -1, err, TIR_ETYPE, "pads must be >= 0");
		if (p->v[2 * i] > TIR_MAX_DIM || p->v[2 * i + 1] > TIR_MAX_DIM)
			return fail_at(n, -1, err, TIR_ETYPE, "pad too large");
		t.shape[i] += p->v[2 * i] + p->v[2 * i + 1];
		if (t.shape[i] > TIR_MAX_DIM)
			return fail_at(n, -1, err, TIR_ETYPE, "result too large");
	}
	*ty = t;
	return check_numel(n, &t, err);
}

static int rule_gather(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0), *ix = in(n, 1);
	char sx[TIR_TYPE_STRLEN];
	if (ix->dtype != TIR_DTYPE_I32 && ix->dtype != TIR_DTYPE_I64)
		return fail_at(n, 1, err, TIR_ETYPE, "indices must be i32 or i64, got %s",
			       tir_dtype_name(ix->dtype));
	if (x->rank == 0)
		return fail_at(n, 0, err, TIR_ETYPE, "cannot gather from a scalar");
	int a = tir_axis(attr(n, "axis")->i, x->rank);
	if (a < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s",
			       (long long)attr(n, "axis")->i, TSTR(x, sx));
	if (x->rank - 1 + ix->rank > TIR_MAX_RANK)
		return fail_at(n, 1, err, TIR_ETYPE, "result would have more than %d dimensions", TIR_MAX_RANK);
	struct tir_type t = {.dtype = x->dtype};
	for (int i = 0; i < a; i++)
		t.shape[t.rank++] = x->shape[i];
	for (int i = 0; i < ix->rank; i++)
		t.shape[t.rank++] = ix->shape[i];
	for (int i = a + 1; i < x->rank; i++)
		t.shape[t.rank++] = x->shape[i];
	*ty = t;
	return check_numel(n, &t, err);
}

static int rule_flatten(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	int s = tir_axis(attr(n, "start")->i, x->rank);
	if (s < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "start %lld is out of range for %s",
			       (long long)attr(n, "start")->i, TSTR(x, sx));
	struct tir_type t = {.dtype = x->dtype, .rank = (uint8_t)(s + 1)};
	int64_t m = 1;
	for (int i = 0; i < x->rank; i++) {
		if (i < s)
			t.shape[i] = x->shape[i];
		else
			m *= x->shape[i];
	}
	t.shape[s] = m;
	*ty = t;
	return 0;
}

static int rule_cast(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	*ty = tir_ntype_value(in(n, 0));
	ty->dtype = (uint8_t)attr(n, "dtype")->i;
	ty->weak = false;
	return 0;
}

static int rule_matmul(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *a = in(n, 0), *b = in(n, 1);
	char sa[TIR_TYPE_STRLEN], sb[TIR_TYPE_STRLEN];
	if (a->rank == 0 || b->rank == 0)
		return fail_at(n, a->rank == 0 ? 0 : 1, err, TIR_ETYPE,
			       "operands need at least one dimension: %s @ %s", TSTR(a, sa), TSTR(b, sb));
	struct tir_type p = tir_promote(a, b);
	if (p.dtype == TIR_DTYPE_BOOL)
		return fail_at(n, 0, err, TIR_ETYPE, "not defined for bool");
	int64_t k1 = a->shape[a->rank - 1];
	int64_t k2 = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2];
	if (k1 != k2)
		return fail_at(n, 1, err, TIR_ETYPE, "inner dimensions differ: %s @ %s", TSTR(a, sa),
			       TSTR(b, sb));
	/* batch axes broadcast */
	struct tir_type ba = {.rank = (uint8_t)(a->rank > 2 ? a->rank - 2 : 0)};
	struct tir_type bb = {.rank = (uint8_t)(b->rank > 2 ? b->rank - 2 : 0)};
	memcpy(ba.shape, a->shape, sizeof(int64_t) * ba.rank);
	memcpy(bb.shape, b->shape, sizeof(int64_t) * bb.rank);
	struct tir_type t;
	if (!tir_broadcast(&ba, &bb, &t))
		return fail_at(n, 1, err, TIR_ETYPE, "batch dimensions do not broadcast: %s @ %s",
			       TSTR(a, sa), TSTR(b, sb));
	if (a->rank >= 2)
		t.shape[t.rank++] = a->shape[a->rank - 2];
	if (b->rank >= 2)
		t.shape[t.rank++] = b->shape[b->rank - 1];
	t.dtype = p.dtype;
	t.weak = false;
	*ty = t;
	return check_numel(n, &t, err);
}

static int float_of(struct tir_node *n, struct tir_type *t)
{
	if (!tir_dtype_is_float(t->dtype))
		t->dtype = TIR_DTYPE_F32;
	t->weak = false;
	return 0;
}

static int rule_softmax(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	if (tir_axis(attr(n, "axis")->i, x->rank) < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s",
			       (long long)attr(n, "axis")->i, TSTR(x, sx));
	*ty = tir_ntype_value(x);
	return float_of(n, ty);
}

static int rule_norm(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN], sw[TIR_TYPE_STRLEN];
	if (x->rank == 0)
		return fail_at(n, 0, err, TIR_ETYPE, "needs at least one dimension, got %s", TSTR(x, sx));
	int64_t d = x->shape[x->rank - 1];
	struct tir_type t = tir_ntype_value(x);
	for (int i = 1; i < n->nin; i++) {
		const struct tir_ntype *w = in(n, i);
		if (w->rank != 1 || w->shape[0] != d)
			return fail_at(n, i, err, TIR_ETYPE, "%s must be [%lld] to match the last axis of %s, got %s",
				       def(n)->params[i].name, (long long)d, TSTR(x, sx), TSTR(w, sw));
		t = tir_promote(&t, w);
	}
	*ty = tir_ntype_value(x);
	ty->dtype = t.dtype;
	return float_of(n, ty);
}

static int rule_conv2d(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0), *w = in(n, 1);
	char sx[TIR_TYPE_STRLEN], sw[TIR_TYPE_STRLEN];
	if (x->rank != 4)
		return fail_at(n, 0, err, TIR_ETYPE, "x must be [N, C, H, W], got %s", TSTR(x, sx));
	if (w->rank != 4)
		return fail_at(n, 1, err, TIR_ETYPE, "w must be [O, C, kh, kw], got %s", TSTR(w, sw));
	int64_t groups = attr(n, "groups")->i;
	if (groups < 1 || groups > TIR_MAX_DIM)
		return fail_at(n, -1, err, TIR_ETYPE, "groups must be >= 1, got %lld", (long long)groups);
	if (groups == 1 && w->shape[1] != x->shape[1])
		return fail_at(n, 1, err, TIR_ETYPE, "channels differ: x %s has %lld, w %s has %lld",
			       TSTR(x, sx), (long long)x->shape[1], TSTR(w, sw), (long long)w->shape[1]);
	if (groups > 1 && (x->shape[1] % groups || w->shape[0] % groups || w->shape[1] != x->shape[1] / groups))
		return fail_at(n, 1, err, TIR_ETYPE,
			       "groups=%lld: x %s needs channels divisible by %lld, and w %s [O, C/groups, kh, kw] "
			       "with O divisible by %lld",
			       (long long)groups, TSTR(x, sx), (long long)groups, TSTR(w, sw), (long long)groups);
	struct tir_type t = tir_promote(x, w);
	if (n->in[2]) {
		const struct tir_ntype *b = in(n, 2);
		if (b->rank != 1 || b->shape[0] != w->shape[0])
			return fail_at(n, 2, err, TIR_ETYPE, "bias must be [%lld], got %s",
				       (long long)w->shape[0], TSTR(b, sw));
		t = tir_promote(&t, b);
	}
	const int64_t *st = attr(n, "stride")->v, *pd = attr(n, "padding")->v, *dl = attr(n, "dilation")->v;
	for (int i = 0; i < 2; i++) {
		if (st[i] < 1 || pd[i] < 0 || dl[i] < 1)
			return fail_at(n, -1, err, TIR_ETYPE, "%s must be >= %d",
				       st[i] < 1 ? "stride" : dl[i] < 1 ? "dilation" : "padding", pd[i] >= 0);
		if (st[i] > TIR_MAX_DIM || pd[i] > TIR_MAX_DIM || dl[i] > TIR_MAX_DIM)
			return fail_at(n, -1, err, TIR_ETYPE, "%s must be at most %lld",
				       st[i] > TIR_MAX_DIM ? "stride" : dl[i] > TIR_MAX_DIM ? "dilation" : "padding",
				       (long long)TIR_MAX_DIM);
	}
	/* the kernel's reach, dilated: dilation * (k - 1) + 1 */
	int64_t oh = x->shape[2] + 2 * pd[0] - (dl[0] * (w->shape[2] - 1) + 1);
	int64_t ow = x->shape[3] + 2 * pd[1] - (dl[1] * (w->shape[3] - 1) + 1);
	if (w->shape[2] == 0 || w->shape[3] == 0)
		oh = ow = -1;
	if ((oh < 0 || ow < 0) && (dl[0] != 1 || dl[1] != 1))
		return fail_at(n, 1, err, TIR_ETYPE, "kernel %s dilated by [%lld, %lld] spans %lldx%lld, more than the padded input %s",
			       TSTR(w, sw), (long long)dl[0], (long long)dl[1], (long long)(dl[0] * (w->shape[2] - 1) + 1),
			       (long long)(dl[1] * (w->shape[3] - 1) + 1), TSTR(x, sx));
	if (oh < 0 || ow < 0)
		return fail_at(n, 1, err, TIR_ETYPE, "kernel %s is larger than the padded input %s",
			       TSTR(w, sw), TSTR(x, sx));
	*ty = (struct tir_type){.dtype = t.dtype, .rank = 4,
				    .shape = {x->shape[0], w->shape[0], oh / st[0] + 1, ow / st[1] + 1}};
	float_of(n, ty);
	return check_numel(n, ty, err);
}

static int rule_pool2d(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	if (x->rank != 4)
		return fail_at(n, 0, err, TIR_ETYPE, "x must be [N, C, H, W], got %s", TSTR(x, sx));
	const struct tir_attr *k = attr(n, "kernel"), *s = attr(n, "stride");
	const int64_t *st = s->set ? s->v : k->v, *pd = attr(n, "padding")->v;
	for (int i = 0; i < 2; i++) {
		if (k->v[i] < 1 || st[i] < 1)
			return fail_at(n, -1, err, TIR_ETYPE, "%s must be >= 1", k->v[i] < 1 ? "kernel" : "stride");
		if (st[i] > TIR_MAX_DIM || k->v[i] > TIR_MAX_DIM)
			return fail_at(n, -1, err, TIR_ETYPE, "%s must be at most %lld",
				       st[i] > TIR_MAX_DIM ? "stride" : "kernel", (long long)TIR_MAX_DIM);
		/* PyTorch's rule: a window never lies wholly in the padding */
		if (pd[i] < 0 || pd[i] > k->v[i] / 2)
			return fail_at(n, -1, err, TIR_ETYPE,
				       "padding %lld must be >= 0 and at most half the kernel (%lld)",
				       (long long)pd[i], (long long)k->v[i]);
		if (k->v[i] > x->shape[2 + i] + 2 * pd[i])
			return fail_at(n, -1, err, TIR_ETYPE, "kernel %lldx%lld is larger than the %sinput %s",
				       (long long)k->v[0], (long long)k->v[1], pd[0] || pd[1] ? "padded " : "",
				       TSTR(x, sx));
	}
	*ty = (struct tir_type){.dtype = x->dtype, .rank = 4,
				    .shape = {x->shape[0], x->shape[1], (x->shape[2] + 2 * pd[0] - k->v[0]) / st[0] + 1,
					      (x->shape[3] + 2 * pd[1] - k->v[1]) / st[1] + 1}};
	if (n->op == TIR_OP_AVGPOOL2D)
		float_of(n, ty);
	else if (ty->dtype == TIR_DTYPE_BOOL)
		return fail_at(n, 0, err, TIR_ETYPE, "not defined for bool");
	return 0;
}

static int rule_attention(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *q = in(n, 0), *k = in(n, 1), *v = in(n, 2);
	char sq[TIR_TYPE_STRLEN], sk[TIR_TYPE_STRLEN];
	for (int i = 0; i < 3; i++)
		if (in(n, i)->rank < 2)
			return fail_at(n, i, err, TIR_ETYPE, "operands need [..., L, d], got %s",
				       TSTR(in(n, i), sq));
	if (k->rank != q->rank || v->rank != q->rank)
		return fail_at(n, k->rank != q->rank ? 1 : 2, err, TIR_ETYPE, "q, k and v must have the same rank");
	int r = q->rank;
	if (k->shape[r - 1] != q->shape[r - 1])
		return fail_at(n, 1, err, TIR_ETYPE, "q %s and k %s differ in the last axis",
			       TSTR(q, sq), TSTR(k, sk));
	if (v->shape[r - 2] != k->shape[r - 2])
		return fail_at(n, 2, err, TIR_ETYPE, "k %s and v %s differ in length",
			       TSTR(k, sq), TSTR(v, sk));
	struct tir_type bq = tir_ntype_value(q), bk = tir_ntype_value(k), bv = tir_ntype_value(v), t1, t;
	bq.rank = bk.rank = bv.rank = (uint8_t)(r - 2);
	if (!tir_broadcast(&bq, &bk, &t1) || !tir_broadcast(&t1, &bv, &t))
		return fail_at(n, 1, err, TIR_ETYPE, "batch dimensions of q, k and v do not broadcast");
	t.shape[r - 2] = q->shape[r - 2];
	t.shape[r - 1] = v->shape[r - 1];
	t.rank = (uint8_t)r;
	struct tir_type p = tir_promote(q, k);
	p = tir_promote(&p, v);
	t.dtype = p.dtype;
	*ty = t;
	float_of(n, ty);
	return check_numel(n, ty, err);
}

/* ---- linear algebra and several results ---- */

/* A matrix operand of a linalg op: [..., m, n], square if asked; its
 * batch axes into b. */
static int linalg_matrix(struct tir_node *n, int i, bool square, struct tir_type *b, struct tir_err *err)
{
	const struct tir_ntype *a = in(n, i);
	char sa[TIR_TYPE_STRLEN];
	if (a->dtype == TIR_DTYPE_BOOL)
		return fail_at(n, i, err, TIR_ETYPE, "not defined for bool");
	if (a->rank < 2)
		return fail_at(n, i, err, TIR_ETYPE, "needs a matrix (at least 2 dimensions), got %s", TSTR(a, sa));
	if (square && a->shape[a->rank - 1] != a->shape[a->rank - 2])
		return fail_at(n, i, err, TIR_ETYPE, "needs square matrices (..., n, n), got %s", TSTR(a, sa));
	*b = (struct tir_type){.rank = (uint8_t)(a->rank - 2)};
	memcpy(b->shape, a->shape, sizeof(int64_t) * b->rank);
	return 0;
}

/* The types of a linalg op's results into t: their number, or -code.
 * f64 stays f64; every other dtype computes in, and gives, f32. */
static int linalg_types(struct tir_node *n, struct tir_type *t, struct tir_err *err)
{
	const struct tir_ntype *a = in(n, 0);
	bool square = n->op != TIR_OP_QR && n->op != TIR_OP_SVD && n->op != TIR_OP_LSTSQ && n->op != TIR_OP_PINV;
	struct tir_type batch = {0};
	int rc = linalg_matrix(n, 0, square, &batch, err);
	if (rc)
		return rc;
	uint8_t dt = a->dtype == TIR_DTYPE_F64 ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
	int64_t m = a->shape[a->rank - 2], k = a->shape[a->rank - 1], mn = m < k ? m : k;
	/* each result: the batch axes, then up to two of its own */
#define RESULT(i, r, d0, d1)                                                  \
	do {                                                                  \
		t[i] = batch;                                                 \
		t[i].dtype = dt;                                              \
		if ((r) > 0)                                                  \
			t[i].shape[t[i].rank++] = (d0);                      \
		if ((r) > 1)                                                  \
			t[i].shape[t[i].rank++] = (d1);                      \
	} while (0)
	switch (n->op) {
	case TIR_OP_SOLVE:
	case TIR_OP_LSTSQ: {
		/* b is a vector when it has one axis fewer than a (NumPy 1.x) */
		const struct tir_ntype *b = in(n, 1);
		char sa[TIR_TYPE_STRLEN], sb[TIR_TYPE_STRLEN];
		if (b->dtype == TIR_DTYPE_BOOL)
			return fail_at(n, 1, err, TIR_ETYPE, "not defined for bool");
		bool vec = b->rank == a->rank - 1;
		if (b->rank < 1 || (!vec && b->rank < 2) || b->shape[b->rank - (vec ? 1 : 2)] != m)
			return fail_at(n, 1, err, TIR_ETYPE, "b must be (..., %lld) or (..., %lld, k) for a %s, got %s",
				       (long long)m, (long long)m, TSTR(a, sa), TSTR(b, sb));
		struct tir_type bb = {.rank = (uint8_t)(b->rank - (vec ? 1 : 2))};
		memcpy(bb.shape, b->shape, sizeof(int64_t) * bb.rank);
		if (!tir_broadcast(&batch, &bb, &batch))
			return fail_at(n, 1, err, TIR_ETYPE, "batch dimensions do not broadcast: %s and %s",
				       TSTR(a, sa), TSTR(b, sb));
		if (b->dtype == TIR_DTYPE_F64)
			dt = TIR_DTYPE_F64;
		if (vec)
			RESULT(0, 1, k, 0);
		else
			RESULT(0, 2, k, b->shape[b->rank - 1]);
		return 1;
	}
	case TIR_OP_INV:
	case TIR_OP_CHOLESKY:
		RESULT(0, 2, m, m);
		return 1;
	case TIR_OP_DET:
		RESULT(0, 0, 0, 0);
		return 1;
	case TIR_OP_SLOGDET:
		RESULT(0, 0, 0, 0);
		RESULT(1, 0, 0, 0);
		return 2;
	case TIR_OP_QR:
		RESULT(0, 2, m, mn);
		RESULT(1, 2, mn, k);
		return 2;
	case TIR_OP_EIGH:
		RESULT(0, 1, m, 0);
		RESULT(1, 2, m, m);
		return 2;
	case TIR_OP_SVD: {
		bool full = attr(n, "full_matrices")->i;
		RESULT(0, 2, m, full ? m : mn);
		RESULT(1, 1, mn, 0);
		RESULT(2, 2, full ? k : mn, k);
		return 3;
	}
	case TIR_OP_PINV:
		RESULT(0, 2, k, m);
		return 1;
	default:
		TIR_ASSERT(!"linalg op");
	}
#undef RESULT
}

/* ---- split and topk: movements of several results (issue 25) ---- */

/* A slice bound as Python reads it: negative from the end, clamped. */
static int64_t slice_bound(int64_t v, int64_t len)
{
	if (v < 0)
		v += len;
	return v < 0 ? 0 : v > len ? len : v;
}

/* split's number of sections, from its attributes alone: a count, or the
 * indices between them (NumPy's np.split).  Clamped to what fits an int. */
static int split_count(const struct tir_node *n)
{
	const struct tir_attr *s = &n->attr[0];
	if (s->is_list)
		return s->n + 1;
	return s->i < 0 ? 0 : s->i > TIR_MAX_RESULTS + 1 ? TIR_MAX_RESULTS + 1 : (int)s->i;
}

int tir_split_sections(const struct tir_node *n, int64_t *start, int64_t *len)
{
	const struct tir_attr *s = &n->attr[0];
	int k = split_count(n);
	int ax = tir_axis(n->attr[1].i, in(n, 0)->rank);
	int64_t all = in(n, 0)->shape[ax];
	for (int i = 0; i < k; i++) {
		if (s->is_list) { /* x[d[i-1]:d[i]] as slices read them */
			int64_t a = i ? slice_bound(s->v[i - 1], all) : 0;
			int64_t b = i < s->n ? slice_bound(s->v[i], all) : all;
			start[i] = a;
			len[i] = b > a ? b - a : 0;
		} else {
			start[i] = all / k * i;
			len[i] = all / k;
		}
	}
	return k;
}

static int split_types(struct tir_node *n, struct tir_type *t, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	const struct tir_attr *s = &n->attr[0];
	char sx[TIR_TYPE_STRLEN];
	int ax = tir_axis(n->attr[1].i, x->rank);
	if (x->rank == 0)
		return fail_at(n, 0, err, TIR_ETYPE, "a scalar has no axis to split");
	if (ax < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s (rank %d)",
			       (long long)n->attr[1].i, TSTR(x, sx), x->rank);
	if (!s->is_list && s->i <= 0)
		return fail_at(n, -1, err, TIR_ETYPE, "the number of sections must be positive, got %lld",
			       (long long)s->i);
	int k = split_count(n);
	if (k < 2)
		return fail_at(n, -1, err, TIR_ETYPE, "one section is x itself: give 2 sections or more");
	if (k > TIR_MAX_RESULTS)
		return fail_at(n, -1, err, TIR_ETYPE, "at most %d sections, got %lld", TIR_MAX_RESULTS,
			       s->is_list ? (long long)k : (long long)s->i);
	if (!s->is_list && x->shape[ax] % k)
		return fail_at(n, -1, err, TIR_ETYPE,
			       "array split does not result in an equal division: axis %d of %s has %lld, "
			       "not a multiple of %d (give the indices to split at for unequal parts)",
			       ax, TSTR(x, sx), (long long)x->shape[ax], k);
	int64_t start[TIR_MAX_RESULTS], len[TIR_MAX_RESULTS];
	tir_split_sections(n, start, len);
	for (int i = 0; i < k; i++) {
		t[i] = tir_ntype_value(x);
		t[i].weak = false;
		t[i].shape[ax] = len[i];
	}
	return k;
}

/* topk: the k largest (or smallest) along an axis, and their int64
 * indices (PyTorch's and ONNX's TopK) */
static int topk_types(struct tir_node *n, struct tir_type *t, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	int64_t k = n->attr[0].i;
	int ax = tir_axis(n->attr[1].i, x->rank);
	if (x->rank == 0)
		return fail_at(n, 0, err, TIR_ETYPE, "a scalar has no axis to take the top k along");
	if (ax < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s (rank %d)",
			       (long long)n->attr[1].i, TSTR(x, sx), x->rank);
	if (k < 0 || k > x->shape[ax])
		return fail_at(n, -1, err, TIR_ETYPE, "k = %lld is out of range: axis %d of %s has %lld elements",
			       (long long)k, ax, TSTR(x, sx), (long long)x->shape[ax]);
	t[0] = tir_ntype_value(x);
	t[0].weak = false;
	t[0].shape[ax] = k;
	t[1] = t[0];
	t[1].dtype = TIR_DTYPE_I64;
	return 2;
}

/* ---- several results: one function per op family says their types ---- */

typedef int (*results_fn)(struct tir_node *n, struct tir_type *t, struct tir_err *err);

/* n's results typed by f; one result is n's own type, several are packed */
static int pack_results(struct tir_node *n, struct tir_type *ty, results_fn f, struct tir_err *err)
{
	struct tir_type t[TIR_MAX_RESULTS];
	int k = f(n, t, err);
	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		int rc = check_numel(n, &t[i], err);
		if (rc)
			return rc;
	}
	if (k == 1) {
		*ty = t[0];
		return 0;
	}
	/* several: the node holds them packed (ir.h) */
	*ty = (struct tir_type){.dtype = TIR_DTYPE_U8, .rank = 1};
	ty->shape[0] = (int64_t)tir_result_offset(n, k);
	return 0;
}

static int rule_linalg(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	return pack_results(n, ty, linalg_types, err);
}

static int rule_split(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	return pack_results(n, ty, split_types, err);
}

static int rule_topk(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	return pack_results(n, ty, topk_types, err);
}

typedef int (*rule_fn)(struct tir_node *, struct tir_type *, struct tir_err *);
static const rule_fn rules[TIR_OP_COUNT];

/* the families of ops with several results: by the rule their rows name
 * (ops.def), the types of the results, and their number when the call
 * says it (res_var) */
static const struct several {
	rule_fn rule;
	results_fn types;
	int (*count)(const struct tir_node *n);
} several[] = {
	{rule_linalg, linalg_types, NULL},
	{rule_split, split_types, split_count},
	{rule_topk, topk_types, NULL},
};

static const struct several *several_of(const struct tir_node *n)
{
	for (size_t i = 0; i < sizeof several / sizeof several[0]; i++)
		if (rules[n->op] == several[i].rule)
			return &several[i];
	TIR_ASSERT(!"an op of several results has a family in several[]");
	return NULL;
}

int tir_node_nres(const struct tir_node *n)
{
	const struct tir_opdef *d = tir_op(n->op);
	if (d->nres < 2)
		return 1;
	return d->res_var ? several_of(n)->count(n) : d->nres;
}

int tir_node_results(const struct tir_node *n, struct tir_type *t)
{
	if (tir_op(n->op)->nres < 2)
		return 0;
	struct tir_err e;
	int k = several_of(n)->types((struct tir_node *)n, t, &e);
	TIR_ASSERT(k == tir_node_nres(n)); /* n was checked */
	return k;
}

size_t tir_result_offset(const struct tir_node *n, int i)
{
	struct tir_type t[TIR_MAX_RESULTS];
	int k = tir_node_results(n, t);
	size_t off = 0;
	for (int j = 0; j < i && j < k; j++) {
		off += (size_t)tir_type_numel(&t[j]) * tir_dtype_size((enum tir_dtype)t[j].dtype);
		off = (off + 63) & ~(size_t)63;
	}
	return off;
}

int tir_result_index(const struct tir_node *n)
{
	return (int)n->attr[0].i;
}

/* RESULT: result `index` of its operand, a node with several results. */
static int rule_result(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	struct tir_type t[TIR_MAX_RESULTS];
	int k = tir_node_results(n->in[0], t);
	if (n->attr[0].i < 0 || n->attr[0].i >= k)
		return fail_at(n, 0, err, TIR_ETYPE, "%s has no result %lld", tir_op(n->in[0]->op)->name,
			       (long long)n->attr[0].i);
	*ty = t[n->attr[0].i];
	return 0;
}

/* ---- NumPy's common ops (issue 25) ---- */

/* isnan, isinf, isfinite: bool, of any dtype (an integer is finite) */
static int rule_isfloat_test(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	*ty = tir_ntype_value(in(n, 0));
	ty->dtype = TIR_DTYPE_BOOL;
	ty->weak = false;
	return 0;
}

/* cumsum, cumprod: one axis, or none (the flattened elements, as NumPy);
 * integers and bool accumulate in i64, as NumPy's sum does */
static int rule_scan(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	const struct tir_attr *ax = attr(n, "axis");
	char sx[TIR_TYPE_STRLEN];
	struct tir_type t = tir_ntype_value(x);
	t.weak = false;
	if (ax->set) {
		if (tir_axis(ax->i, x->rank) < 0)
			return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s (rank %d)",
				       (long long)ax->i, TSTR(x, sx), x->rank);
	} else {
		t.rank = 1;
		t.shape[0] = tir_type_numel(x);
	}
	if (!tir_dtype_is_float(x->dtype))
		t.dtype = TIR_DTYPE_I64;
	*ty = t;
	return 0;
}

/* sort, argsort: along one axis (-1 the last); argsort's indices are i64 */
static int rule_sort(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	if (tir_axis(attr(n, "axis")->i, x->rank) < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for %s (rank %d)",
			       (long long)attr(n, "axis")->i, TSTR(x, sx), x->rank);
	*ty = tir_ntype_value(x);
	ty->weak = false;
	if (n->op == TIR_OP_ARGSORT)
		ty->dtype = TIR_DTYPE_I64;
	return 0;
}

/* stack: operands of one shape, joined along a new axis */
static int rule_stack(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	if (n->nin == 0)
		return fail_at(n, -1, err, TIR_ETYPE, "needs at least one tensor");
	const struct tir_ntype *x = in(n, 0);
	char sa[TIR_TYPE_STRLEN], sb[TIR_TYPE_STRLEN];
	if (x->rank >= TIR_MAX_RANK)
		return fail_at(n, 0, err, TIR_ETYPE, "more than %d dimensions (%s has %d already)", TIR_MAX_RANK,
			       TSTR(x, sa), x->rank);
	int a = tir_axis(attr(n, "axis")->i, x->rank + 1);
	if (a < 0)
		return fail_at(n, -1, err, TIR_ETYPE, "axis %lld is out of range for stacking %s (rank %d)",
			       (long long)attr(n, "axis")->i, TSTR(x, sa), x->rank + 1);
	struct tir_type p = tir_ntype_value(x);
	for (int i = 1; i < n->nin; i++) {
		const struct tir_ntype *y = in(n, i);
		bool ok = y->rank == x->rank;
		for (int k = 0; ok && k < x->rank; k++)
			ok = y->shape[k] == x->shape[k];
		if (!ok)
			return fail_at(n, i, err, TIR_ETYPE, "all operands need one shape: %s and %s",
				       TSTR(x, sa), TSTR(y, sb));
		promote_into(&p, y, &p);
	}
	struct tir_type t = {.dtype = p.dtype, .rank = (uint8_t)(x->rank + 1)};
	for (int i = 0, j = 0; i < t.rank; i++)
		t.shape[i] = i == a ? n->nin : x->shape[j++];
	*ty = t;
	return check_numel(n, &t, err);
}

/* einsum's subscripts: "ij,jk->ik", one term of letters per operand, the
 * explicit output after "->".  Each letter one size; an output letter
 * once, and found in an operand.  Fills the letters' sizes (by letter). */
int tir_einsum_parse(const char *spec, int nops, const struct tir_type *const *ops, struct tir_einsum *e,
		     char *why, size_t cap)
{
	memset(e, 0, sizeof *e);
	for (int c = 0; c < 128; c++)
		e->size[c] = -1;
	const char *p = spec;
	for (int k = 0; k < nops || *p == ','; k++) {
		if (k >= nops) {
			snprintf(why, cap, "subscripts \"%s\" have more terms than the %d operand%s", spec, nops,
				 nops == 1 ? "" : "s");
			return -1;
		}
		if (k > 0) {
			if (*p != ',') {
				snprintf(why, cap, "subscripts \"%s\" have %d term%s for %d operands", spec, k,
					 k == 1 ? "" : "s", nops);
				return -1;
			}
			p++;
		}
		int len = 0;
		for (; (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'); p++) {
			if (len >= TIR_MAX_RANK) {
				snprintf(why, cap, "term %d of \"%s\" has more than %d letters", k + 1, spec,
					 TIR_MAX_RANK);
				return -1;
			}
			e->term[k][len++] = *p;
		}
		e->len[k] = len;
		if (*p == '.') {
			snprintf(why, cap, "'...' in \"%s\" is not supported; name every axis", spec);
			return -1;
		}
		if (*p && *p != ',' && *p != '-') {
			snprintf(why, cap, "'%c' in \"%s\" is not a subscript letter (a-z, A-Z)", *p, spec);
			return -1;
		}
		if (len != ops[k]->rank) {
			char s[TIR_TYPE_STRLEN];
			snprintf(why, cap, "term \"%.*s\" has %d letter%s for operand %d, %s (rank %d)", len,
				 e->term[k], len, len == 1 ? "" : "s", k + 1, TSTR(ops[k], s), ops[k]->rank);
			return -(k + 2);
		}
		for (int i = 0; i < len; i++) {
			int c = e->term[k][i];
			if (e->size[c] >= 0 && e->size[c] != ops[k]->shape[i]) {
				snprintf(why, cap, "'%c' is %lld in one place and %lld in operand %d", c,
					 (long long)e->size[c], (long long)ops[k]->shape[i], k + 1);
				return -(k + 2);
			}
			e->size[c] = ops[k]->shape[i];
		}
	}
	if (p[0] != '-' || p[1] != '>') {
		snprintf(why, cap, "subscripts \"%s\" need the explicit output form \"...->out\"", spec);
		return -1;
	}
	p += 2;
	int len = 0;
	for (; *p; p++) {
		int c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			snprintf(why, cap, "'%c' in the output of \"%s\" is not a subscript letter", c, spec);
			return -1;
		}
		if (e->size[c] < 0) {
			snprintf(why, cap, "output letter '%c' of \"%s\" is in no operand", c, spec);
			return -1;
		}
		for (int i = 0; i < len; i++)
			if (e->out[i] == c) {
				snprintf(why, cap, "output letter '%c' of \"%s\" is given twice", c, spec);
				return -1;
			}
		if (len >= TIR_MAX_RANK) {
			snprintf(why, cap, "the output of \"%s\" has more than %d letters", spec, TIR_MAX_RANK);
			return -1;
		}
		e->out[len++] = (char)c;
	}
	e->nout = len;
	e->nops = nops;
	return 0;
}

static int rule_einsum(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	if (n->nin == 0)
		return fail_at(n, -1, err, TIR_ETYPE, "needs at least one operand");
	if (n->nin > TIR_EINSUM_MAX_OPS)
		return fail_at(n, -1, err, TIR_ETYPE, "at most %d operands", TIR_EINSUM_MAX_OPS);
	const struct tir_type *ops[TIR_EINSUM_MAX_OPS];
	struct tir_type opv[TIR_EINSUM_MAX_OPS];
	struct tir_type p = tir_ntype_value(in(n, 0));
	for (int i = 0; i < n->nin; i++) {
		opv[i] = tir_ntype_value(in(n, i));
		ops[i] = &opv[i];
		promote_into(&p, ops[i], &p);
	}
	struct tir_einsum e;
	char why[300];
	int rc = tir_einsum_parse(attr(n, "subscripts")->s, n->nin, ops, &e, why, sizeof why);
	if (rc)
		return fail_at(n, rc <= -2 ? -rc - 2 : -1, err, TIR_ETYPE, "%s", why);
	if (p.dtype == TIR_DTYPE_BOOL)
		return fail_at(n, 0, err, TIR_ETYPE, "not defined for bool");
	struct tir_type t = {.dtype = p.dtype, .rank = (uint8_t)e.nout};
	for (int i = 0; i < e.nout; i++)
		t.shape[i] = e.size[(int)e.out[i]];
	*ty = t;
	return check_numel(n, &t, err);
}

/* tile: NumPy's, reps of any length (the shorter of x's axes and reps
 * padded with 1s in front) */
static int rule_tile(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	const struct tir_attr *r = attr(n, "reps");
	char sx[TIR_TYPE_STRLEN];
	int rank = r->n > x->rank ? r->n : x->rank;
	if (rank > TIR_MAX_RANK)
		return fail_at(n, -1, err, TIR_ETYPE, "more than %d dimensions", TIR_MAX_RANK);
	struct tir_type t = {.dtype = x->dtype, .rank = (uint8_t)rank};
	for (int i = 0; i < rank; i++) {
		int xi = i - (rank - x->rank), ri = i - (rank - r->n);
		int64_t d = xi >= 0 ? x->shape[xi] : 1, k = ri >= 0 ? r->v[ri] : 1;
		if (k < 0)
			return fail_at(n, -1, err, TIR_ETYPE, "reps must be >= 0, got %lld", (long long)k);
		if (k > TIR_MAX_DIM || (k && d > TIR_MAX_DIM / k))
			return fail_at(n, -1, err, TIR_ETYPE, "tiling %s is too large", TSTR(x, sx));
		t.shape[i] = d * k;
	}
	*ty = t;
	return check_numel(n, &t, err);
}

/* triu, tril: the last two axes a matrix (NumPy's), k the diagonal */
static int rule_trilu(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	char sx[TIR_TYPE_STRLEN];
	if (x->rank < 2)
		return fail_at(n, 0, err, TIR_ETYPE, "needs at least two dimensions, got %s", TSTR(x, sx));
	*ty = tir_ntype_value(x);
	ty->weak = false;
	return 0;
}

/* the activations with parameters: a float result; prelu's slope
 * broadcasts to x (it never changes x's shape) */
static int rule_act(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	const struct tir_ntype *x = in(n, 0);
	struct tir_type t = tir_ntype_value(x);
	if (n->op == TIR_OP_PRELU) {
		struct tir_type b;
		char sx[TIR_TYPE_STRLEN], ss[TIR_TYPE_STRLEN];
		bool ok = tir_broadcast(x, in(n, 1), &b) && b.rank == x->rank;
		for (int i = 0; ok && i < x->rank; i++)
			ok = b.shape[i] == x->shape[i];
		if (!ok)
			return fail_at(n, 1, err, TIR_ETYPE, "slope %s does not broadcast to x %s", TSTR(in(n, 1), ss),
				       TSTR(x, sx));
		t = tir_promote(x, in(n, 1));
		t.rank = x->rank;
		memcpy(t.shape, x->shape, sizeof *t.shape * x->rank);
	}
	if (n->op == TIR_OP_CELU && attr(n, "alpha")->f == 0)
		return fail_at(n, -1, err, TIR_ETYPE, "alpha must not be 0");
	*ty = t;
	return float_of(n, ty);
}

/* scatter_nd(x, indices, updates): indices [..., k] of integers, 1 <= k <=
 * rank(x), each tuple naming a block x[i0, ..., ik-1]; updates has the
 * indices' leading shape then the block's, and x's dtype */
static int rule_scatter_nd(struct tir_node *n, struct tir_type *ty, struct tir_err *err)
{
	static const char *const reds[] = {"none", "add", "mul", "max", "min"};
	const struct tir_ntype *x = in(n, 0), *ix = in(n, 1), *u = in(n, 2);
	char sx[TIR_TYPE_STRLEN], si[TIR_TYPE_STRLEN], su[TIR_TYPE_STRLEN];
	const char *w = attr(n, "reduction")->s;
	size_t r = 0;
	while (r < sizeof reds / sizeof reds[0] && strcmp(w, reds[r]))
		r++;
	if (r == sizeof reds / sizeof reds[0])
		return fail_at(n, -1, err, TIR_ETYPE, "reduction must be none, add, mul, max or min, got '%s'", w);
	if (ix->dtype != TIR_DTYPE_I32 && ix->dtype != TIR_DTYPE_I64)
		return fail_at(n, 1, err, TIR_ETYPE, "indices must be i32 or i64, got %s", tir_dtype_name(ix->dtype));
	int64_t k = ix->rank ? ix->shape[ix->rank - 1] : 0;
	if (k < 1 || k > x->rank)
		return fail_at(n, 1, err, TIR_ETYPE, "indices %s: the last axis (the tuples' length) must be 1 to %d for %s",
			       TSTR(ix, si), x->rank, TSTR(x, sx));
	bool ok = u->rank == ix->rank - 1 + x->rank - k;
	for (int i = 0; ok && i < u->rank; i++)
		ok = u->shape[i] == (i < ix->rank - 1 ? ix->shape[i] : x->shape[k + i - (ix->rank - 1)]);
	if (!ok)
		return fail_at(n, 2, err, TIR_ETYPE, "updates %s: must be indices' leading shape then x's axes after the first %lld (x %s, indices %s)",
			       TSTR(u, su), (long long)k, TSTR(x, sx), TSTR(ix, si));
	if (u->dtype != x->dtype && !u->weak) /* a literal takes x's dtype */
		return fail_at(n, 2, err, TIR_ETYPE, "updates %s must have x's dtype %s", TSTR(u, su),
			       tir_dtype_name(x->dtype));
	*ty = tir_ntype_value(x);
	ty->weak = false;
	return 0;
}

static const rule_fn rules[TIR_OP_COUNT] = {
#define X(e, name, kind, sig, rule, ...) [TIR_OP_##e] = rule,
#include "ops.def"
#undef X
};

bool tir_shape_bounded(int rank, const int64_t *shape)
{
	/* the product of the axes, a 0 counting as 1, so that no reshuffle of
	 * a zero-size tensor's axes overflows either */
	uint64_t m = 1;
	for (int i = 0; i < rank; i++) {
		int64_t d = shape[i] ? shape[i] : 1;
		/* m and d are at most 2^32 here: their product overflows only at
		 * 2^64 (asked of every node: a multiplication, not a division) */
		if (d < 0 || d > TIR_MAX_DIM || __builtin_mul_overflow(m, (uint64_t)d, &m) ||
		    m > (uint64_t)TIR_MAX_ELEMS)
			return false;
	}
	return true;
}

/* tir_node_set_type of a type of rank 1 up */
int tir_node_set_shape(struct tir_node *n, const struct tir_type *t, struct tir_arena *shapes)
{
	const int64_t *shape = NULL;
	size_t bytes = sizeof *t->shape * t->rank;
	/* its own as it was (a type the parser gave), or one of the first
	 * operands' (an elementwise op's result has one's shape) */
	if (n->type.rank == t->rank && !memcmp(n->type.shape, t->shape, bytes))
		shape = n->type.shape;
	for (int i = 0; !shape && i < n->nin && i < 4; i++) {
		const struct tir_ntype *o = n->in[i] ? &n->in[i]->type : NULL; /* (optional: absent) */
		if (o && o->rank == t->rank && !memcmp(o->shape, t->shape, bytes))
			shape = o->shape;
	}
	if (!shape) {
		int64_t *s = tir_arena_alloc8(shapes, bytes);
		if (!s)
			return -TIR_ENOMEM;
		shape = memcpy(s, t->shape, bytes);
	}
	n->type = (struct tir_ntype){.dtype = t->dtype, .rank = t->rank, .weak = t->weak, .shape = shape};
	return 0;
}

int tir_check_node(struct tir_node *n, struct tir_arena *shapes, struct tir_err *err)
{
	/* a call of several results is read only by its RESULT nodes (ir.h) */
	for (int i = 0; n->op != TIR_OP_RESULT && i < n->nin; i++)
		if (n->in[i] && n->in[i]->type.dtype == TIR_DTYPE_U8 && tir_op(n->in[i]->op)->nres > 1) {
			const struct tir_opdef *d = tir_op(n->in[i]->op);
			struct tir_loc at = tir_node_inloc(n, i);
			return tir_errf(err, TIR_ETYPE, &at,
					"%s gives %d results; bind each to a name first (%s, ... = %s(...))", d->name,
					d->nres, d->res[0], d->name);
		}
	struct tir_type t;
	tir_ntype_get(&n->type, &t); /* what the parser gave (an input's) */
	int rc = rules[n->op](n, &t, err);
	if (rc)
		return rc;
	if (!tir_type_bounded(&t)) {
		char s[TIR_TYPE_STRLEN];
		return fail_at(n, -1, err, TIR_ETYPE, "result %s has more than %lld elements", TSTR(&t, s),
			       (long long)TIR_MAX_ELEMS);
	}
	if (tir_node_set_type(n, &t, shapes))
		return fail_at(n, -1, err, TIR_ENOMEM, "out of memory");
	return 0;
}

enum tir_dtype tir_compute_dtype(const struct tir_node *n)
{
	/* the comparisons and logic ops by their rows' rules (ops.def) */
	if (rules[n->op] == rule_compare)
		return tir_dtype_wide((enum tir_dtype)tir_promote(in(n, 0), in(n, 1)).dtype);
	if (rules[n->op] == rule_logic || rules[n->op] == rule_unary_logic)
		return TIR_DTYPE_BOOL;
	if (rules[n->op] == rule_isfloat_test) /* tests its operand as it is */
		return tir_dtype_wide((enum tir_dtype)in(n, 0)->dtype);
	switch (n->op) {
	case TIR_OP_ARGMAX: case TIR_OP_ARGMIN:
	case TIR_OP_ARGSORT: case TIR_OP_ANY: case TIR_OP_ALL:
		return tir_dtype_wide((enum tir_dtype)in(n, 0)->dtype);
	case TIR_OP_CAST:
		return (enum tir_dtype)n->type.dtype; /* converts, computes nothing */
	default:
		return tir_dtype_wide((enum tir_dtype)n->type.dtype);
	}
}
