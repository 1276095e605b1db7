/*
 * nodes_misc.c — the importer's older opsets (1 to 6): which ops tir
 * imports at them, and each old node rewritten into the form of opset 7
 * before its emitter in nodes.c sees it (as ONNX's version converter does).
 * Not an emitter of its own: the ops' semantics stay in nodes.c.
 */
#include "onnx.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- opsets 1 to 6 ---- */

/* The ops tir imports before opset 7, each from the first opset whose
 * version of it tir implements (an older version is refused). */
static const struct {
	const char *op;
	int since;
} old_ops[] = {
	{"Abs", 1}, {"Neg", 1}, {"Relu", 1}, {"Sigmoid", 1}, {"Tanh", 1}, {"Exp", 1}, {"Log", 1},
	{"Sqrt", 1}, {"Floor", 1}, {"Ceil", 1}, {"Reciprocal", 1}, {"Not", 1},
	{"Add", 1}, {"Sub", 1}, {"Mul", 1}, {"Div", 1}, {"Pow", 1}, {"And", 1}, {"Or", 1}, {"Xor", 1},
	{"Equal", 1}, {"Less", 1}, {"Greater", 1},
	{"Min", 1}, {"Max", 1}, {"Sum", 1}, {"Mean", 1},
	{"Identity", 1}, {"Dropout", 1}, {"Clip", 1},
	{"LeakyRelu", 1}, {"PRelu", 1}, {"Elu", 1}, {"Selu", 1}, {"HardSigmoid", 1}, {"Softplus", 1},
	{"Softsign", 1},
	{"Constant", 1}, {"Shape", 1}, {"Size", 1}, {"Reshape", 1}, {"Flatten", 1}, {"Squeeze", 1},
	{"Unsqueeze", 1}, {"Transpose", 1}, {"Concat", 1}, {"Slice", 1}, {"Gather", 1}, {"Split", 2},
	{"Pad", 2}, {"Tile", 6}, {"Cast", 6}, {"TopK", 1},
	{"ReduceSum", 1}, {"ReduceMean", 1}, {"ReduceMax", 1}, {"ReduceMin", 1}, {"ReduceProd", 1},
	{"ReduceL1", 1}, {"ReduceL2", 1}, {"ReduceSumSquare", 1}, {"ReduceLogSum", 1}, {"ReduceLogSumExp", 1},
	{"ArgMax", 1}, {"ArgMin", 1},
	{"MatMul", 1}, {"Gemm", 1}, {"Softmax", 1}, {"LogSoftmax", 1}, {"Hardmax", 1},
	{"BatchNormalization", 1}, {"InstanceNormalization", 1}, {"LRN", 1},
	{"Conv", 1}, {"ConvTranspose", 1}, {"MaxPool", 1}, {"AveragePool", 1},
	{"GlobalAveragePool", 1}, {"GlobalMaxPool", 1}, {"DepthToSpace", 1}, {"SpaceToDepth", 1},
};

const char *ox_op_old(const char *op_type, int64_t opset, char *buf, size_t len)
{
	if (opset >= 7)
		return NULL;
	for (size_t k = 0; k < sizeof old_ops / sizeof *old_ops; k++) {
		if (strcmp(old_ops[k].op, op_type))
			continue;
		if (opset >= old_ops[k].since)
			return NULL;
		snprintf(buf, len, "its version of opset %" PRId64 " is not supported (tir imports %s from opset %d)",
			 opset, op_type, old_ops[k].since);
		return buf;
	}
	snprintf(buf, len, "its version before opset 7 is not supported (tir imports %s from opset 7)", op_type);
	return buf;
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t k = 0; k < n->n_attribute; k++)
		if (n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
			return n->attribute[k];
	return NULL;
}

static bool is_op(const Onnx__NodeProto *n, const char *const *list)
{
	for (int k = 0; list[k]; k++)
		if (!strcmp(n->op_type, list[k]))
			return true;
	return false;
}

void ox_upgrade_free(struct ox_upgrade *u)
{
	free(u->input);
	free(u->attribute);
	free(u->name);
	memset(u, 0, sizeof *u);
}

/* u->node's input k is the value of tir name tir (a fresh ONNX name) */
static int replace_input(struct ox_imp *m, struct ox_upgrade *u, size_t k, const char *tir)
{
	char name[64];
	for (int serial = 0;; serial++) {
		snprintf(name, sizeof name, "\x01upgrade.%d", serial);
		if (!ox_find(m, name))
			break;
	}
	free(u->name);
	u->name = strdup(name);
	if (!u->name || ox_bind(m, name, tir))
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	u->input[k] = u->name;
	return 0;
}

/* Old binary ops (before opset 7): with broadcast=1, B's shape is a
 * contiguous run of A's starting at axis (the end when absent); without,
 * the shapes are equal.  B is reshaped so that NumPy's rule says the same. */
static int upgrade_broadcast(struct ox_imp *m, struct ox_upgrade *u, const Onnx__NodeProto *n)
{
	const Onnx__AttributeProto *bc = find_attr(n, "broadcast"), *ax = find_attr(n, "axis");
	/* PRelu's slope of C elements is per channel (axis 1) */
	Onnx__AttributeProto prelu = ONNX__ATTRIBUTE_PROTO__INIT;
	prelu.i = 1;
	if (!strcmp(n->op_type, "PRelu"))
		bc = ax = &prelu;
	if (n->n_input < 2)
		return 0;
	const char *a = ox_use(m, n->input[0]), *b = a ? ox_use(m, n->input[1]) : NULL;
	const struct tir_type *ta = a ? ox_type(m, a) : NULL, *tb = b ? ox_type(m, b) : NULL;
	if (!ta || !tb)
		return m->err->code ? -m->err->code : ox_fail(m, TIR_EDATA, "an operand has no type");
	if (!bc || !bc->i) {
		if (ta->rank != tb->rank || memcmp(ta->shape, tb->shape, ta->rank * sizeof *ta->shape))
			return ox_fail(m, TIR_ETYPE, "the operands' shapes differ and broadcast is 0");
		return 0;
	}
	if (!ax || tb->rank > ta->rank || (ax == &prelu && (tb->rank != 1 || ta->rank < 2 || tb->shape[0] == 1)))
		return 0;
	int64_t axis = ax->i < 0 ? ax->i + ta->rank : ax->i;
	if (axis < 0 || axis + tb->rank > ta->rank)
		return ox_fail(m, TIR_ETYPE, "axis %" PRId64 " does not place B's %d axes within A's %d", ax->i, tb->rank,
			       ta->rank);
	for (int k = 0; k < tb->rank; k++)
		if (tb->shape[k] != ta->shape[axis + k] && tb->shape[k] != 1)
			return ox_fail(m, TIR_ETYPE, "B's axis %d (%" PRId64 ") differs from A's axis %" PRId64
				       " (%" PRId64 ")", k, tb->shape[k], axis + k, ta->shape[axis + k]);
	int rank = (int)(ta->rank - axis);
	if (rank == tb->rank)
		return 0;
	char s[300];
	size_t at = 0;
	s[at++] = '[';
	for (int k = 0; k < rank; k++)
		at += (size_t)snprintf(s + at, 32, "%s%" PRId64, k ? ", " : "", k < tb->rank ? tb->shape[k] : 1);
	snprintf(s + at, 2, "]");
	const char *r = ox_emit(m, n->n_output ? n->output[0] : "b", "reshape(%s, shape=%s)", b, s);
	return r ? replace_input(m, u, 1, r) : -m->err->code;
}

int ox_node_upgrade(struct ox_node_ctx *c, struct ox_upgrade *u)
{
	static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Less",
					     "Greater", "PRelu", NULL};
	const Onnx__NodeProto *n = c->n;
	struct ox_imp *m = c->m;
	if (c->opset >= 7)
		return 0;
	u->node = *n;
	u->input = malloc((n->n_input + 1) * sizeof *u->input);
	u->attribute = malloc((n->n_attribute + 1) * sizeof *u->attribute);
	if (!u->input || !u->attribute)
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	if (n->n_input)
		memcpy(u->input, n->input, n->n_input * sizeof *u->input);
	if (n->n_attribute)
		memcpy(u->attribute, n->attribute, n->n_attribute * sizeof *u->attribute);
	u->node.input = u->input;
	u->node.attribute = u->attribute;
	c->n = &u->node;
	const Onnx__AttributeProto *a;
	if (is_op(n, binary))
		return upgrade_broadcast(m, u, n);
	if (!strcmp(n->op_type, "Concat") && !find_attr(n, "axis")) {
		/* before opset 4 the axis is optional, 1 by default */
		Onnx__AttributeProto def = ONNX__ATTRIBUTE_PROTO__INIT;
		u->extra = def;
		u->extra.name = (char *)"axis";
		u->extra.has_type = 1;
		u->extra.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		u->extra.has_i = 1;
		u->extra.i = 1;
		u->attribute[u->node.n_attribute++] = &u->extra;
		return 0;
	}
	if (!strcmp(n->op_type, "BatchNormalization")) {
		/* is_test=0 (the default) computes with the batch's statistics */
		if (!(a = find_attr(n, "is_test")) || !a->i)
			return ox_fail(m, TIR_EUNSUPPORTED, "BatchNormalization in training mode (is_test=0) is not supported");
		if ((a = find_attr(n, "spatial")) && !a->i)
			return ox_fail(m, TIR_EUNSUPPORTED, "BatchNormalization with spatial=0 is not supported");
		return 0;
	}
	if (!strcmp(n->op_type, "Dropout")) {
		if (!(a = find_attr(n, "is_test")) || !a->i)
			return ox_fail(m, TIR_EUNSUPPORTED, "Dropout in training mode (is_test=0) is not supported");
		return 0;
	}
	return 0;
}
