/*
 * emit.c — the small helpers every ONNX emitter shares (nodes.c and the
 * nodes_*.c files): a node's attributes, its inputs as known values or tir
 * names, binding its outputs, a shape written as tir text, positions
 * along an axis.  No op's rule is here.
 */
#include "onnx.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const Onnx__AttributeProto *ox_node_attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t k = 0; k < n->n_attribute; k++)
		if (n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
			return n->attribute[k];
	return NULL;
}

const Onnx__AttributeProto *ox_attr(struct ox_node_ctx *c, const char *name)
{
	return ox_node_attr(c->n, name);
}

int64_t ox_attr_i(struct ox_node_ctx *c, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = ox_attr(c, name);
	return a ? a->i : def;
}

double ox_attr_f(struct ox_node_ctx *c, const char *name, double def)
{
	const Onnx__AttributeProto *a = ox_attr(c, name);
	return a ? a->f : def;
}

const int64_t *ox_attr_ints(struct ox_node_ctx *c, const char *name, size_t *n)
{
	const Onnx__AttributeProto *a = ox_attr(c, name);
	*n = a ? a->n_ints : 0;
	return a ? a->ints : NULL;
}

bool ox_attr_str_is(struct ox_node_ctx *c, const char *name, const char *v, const char *def)
{
	const Onnx__AttributeProto *a = ox_attr(c, name);
	if (!a || !a->has_s)
		return !strcmp(v, def);
	return a->s.len == strlen(v) && !memcmp(a->s.data, v, a->s.len);
}

const char *ox_attr_str(struct ox_node_ctx *c, const char *name, const char *def, char *buf, size_t cap)
{
	const Onnx__AttributeProto *a = ox_attr(c, name);
	if (!a || !a->has_s)
		return def;
	size_t n = a->s.len < cap - 1 ? a->s.len : cap - 1;
	memcpy(buf, a->s.data, n);
	buf[n] = 0;
	return buf;
}

bool ox_has_in(struct ox_node_ctx *c, size_t k)
{
	return k < c->n->n_input && c->n->input[k] && *c->n->input[k];
}

struct ox_val *ox_in_val(struct ox_node_ctx *c, size_t k)
{
	return ox_has_in(c, k) ? ox_find(c->m, c->n->input[k]) : NULL;
}

struct ox_const *ox_cin(struct ox_node_ctx *c, size_t k)
{
	struct ox_val *v = ox_in_val(c, k);
	return v && v->c && v->c->i ? v->c : NULL;
}

struct ox_const *ox_need_const(struct ox_node_ctx *c, size_t k, const char *what)
{
	struct ox_const *v = ox_cin(c, k);
	if (!v)
		ox_fail(c->m, TIR_EUNSUPPORTED, "its %s (input %zu, '%s') is computed at run time; tir needs it known "
			"at import (a static shape)", what, k, ox_has_in(c, k) ? c->n->input[k] : "");
	return v;
}

const char *ox_in(struct ox_node_ctx *c, size_t k)
{
	if (!ox_has_in(c, k)) {
		ox_fail(c->m, TIR_EDATA, "input %zu is missing", k);
		return NULL;
	}
	return ox_use(c->m, c->n->input[k]);
}

bool ox_in_type(struct ox_node_ctx *c, size_t k, struct tir_type *t)
{
	struct ox_val *v = ox_in_val(c, k);
	if (!v)
		return false;
	if (v->c && !v->tir) {
		memset(t, 0, sizeof *t);
		t->dtype = (uint8_t)v->c->dtype;
		t->rank = (uint8_t)v->c->rank;
		memcpy(t->shape, v->c->shape, sizeof t->shape);
		return true;
	}
	const char *n = ox_in(c, k);
	const struct tir_ntype *ty = n ? ox_type(c->m, n) : NULL;
	if (!ty)
		return false;
	*t = tir_ntype_value(ty);
	return true;
}

const char *ox_in_typed(struct ox_node_ctx *c, size_t k, struct tir_type *t)
{
	const char *x = ox_in(c, k);
	return x && ox_in_type(c, k, t) ? x : NULL;
}

const char *ox_out_name(struct ox_node_ctx *c, size_t k)
{
	return k < c->n->n_output && c->n->output[k] ? c->n->output[k] : "";
}

int ox_bind_out(struct ox_node_ctx *c, size_t k, const char *tir)
{
	if (!tir || c->m->err->code)
		return -c->m->err->code;
	return ox_bind(c->m, ox_out_name(c, k), tir);
}

int ox_bind_const(struct ox_node_ctx *c, size_t k, struct ox_const *cv)
{
	if (!cv)
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	struct ox_val *v = ox_val(c->m, ox_out_name(c, k));
	if (!v) {
		ox_const_free(cv);
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	}
	ox_const_free(v->c);
	v->c = cv;
	v->defined = true;
	return 0;
}

const char *ox_shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (int k = 0; k < rank && n < cap; k++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, k ? ", " : "", shape[k]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
	return buf;
}

const char *ox_iota(struct ox_node_ctx *c, const char *base, int64_t n, int a, int r)
{
	int64_t sh[TIR_MAX_RANK];
	for (int k = 0; k < r; k++)
		sh[k] = k == a ? n : 1;
	char b[300];
	const char *i = ox_emit(c->m, base, "arange(0, %" PRId64 ", dtype=i64)", n);
	return i && r > 1 ? ox_emit(c->m, base, "reshape(%s, shape=%s)", i, ox_shape_str(b, sizeof b, r, sh)) : i;
}
