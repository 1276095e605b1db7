/*
 * nodes_misc.c — the importer's older opsets (1 to 6): which ops tir
 * imports at them, and each old node rewritten into the form of opset 7
 * before its emitter in nodes.c sees it (as ONNX's version converter does);
 * then the emitters of the signal ops (windows and MelWeightMatrix folded,
 * DFT and STFT as products with a folded matrix).
 */
#include "onnx.h"

#include <inttypes.h>
#include <math.h>
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
	const Onnx__AttributeProto *bc = ox_node_attr(n, "broadcast"), *ax = ox_node_attr(n, "axis");
	/* PRelu's slope of C elements is per channel (axis 1) */
	Onnx__AttributeProto prelu = ONNX__ATTRIBUTE_PROTO__INIT;
	prelu.i = 1;
	if (!strcmp(n->op_type, "PRelu"))
		bc = ax = &prelu;
	if (n->n_input < 2)
		return 0;
	const char *a = ox_use(m, n->input[0]), *b = a ? ox_use(m, n->input[1]) : NULL;
	const struct tir_ntype *ta = a ? ox_type(m, a) : NULL, *tb = b ? ox_type(m, b) : NULL;
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
	int64_t sh[TIR_MAX_RANK];
	for (int k = 0; k < rank; k++)
		sh[k] = k < tb->rank ? tb->shape[k] : 1;
	const char *r = ox_emit(m, n->n_output ? n->output[0] : "b", "reshape(%s, shape=%s)", b,
				ox_shape_str(s, sizeof s, rank, sh));
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
	if (!strcmp(n->op_type, "Concat") && !ox_node_attr(n, "axis")) {
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
		if (!(a = ox_node_attr(n, "is_test")) || !a->i)
			return ox_fail(m, TIR_EUNSUPPORTED, "BatchNormalization in training mode (is_test=0) is not supported");
		if ((a = ox_node_attr(n, "spatial")) && !a->i)
			return ox_fail(m, TIR_EUNSUPPORTED, "BatchNormalization with spatial=0 is not supported");
		return 0;
	}
	if (!strcmp(n->op_type, "Dropout")) {
		if (!(a = ox_node_attr(n, "is_test")) || !a->i)
			return ox_fail(m, TIR_EUNSUPPORTED, "Dropout in training mode (is_test=0) is not supported");
		return 0;
	}
	return 0;
}

/* ---- emitters: windows, MelWeightMatrix, DFT, STFT, BitShift ---- */

#define OX_PI 3.14159265358979323846
/* entries of the matrix a DFT or STFT is written with (f32: 16 MiB) */
#define OX_DFT_MAX (INT64_C(1) << 22)

/* the known value r (taken) as a tir name: a literal, or a weight (its
 * ONNX name made up, "\x01" and base: never one of the model's) */
static const char *use_known(struct ox_node_ctx *c, struct ox_const *r, const char *base)
{
	char name[64];
	for (int serial = 0;; serial++) {
		snprintf(name, sizeof name, "\x01%s%d", base, serial);
		if (!ox_find(c->m, name))
			break;
	}
	struct ox_val *v = r ? ox_val(c->m, name) : NULL;
	if (!v) {
		ox_const_free(r);
		ox_fail(c->m, TIR_ENOMEM, "out of memory");
		return NULL;
	}
	v->c = r;
	v->defined = true;
	return ox_use(c->m, name);
}

/* the output_datatype attribute (float by default) */
static int out_dtype(struct ox_node_ctx *c, enum tir_dtype *dt)
{
	int64_t o = ox_attr_i(c, "output_datatype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	if (!ox_dtype((int32_t)o, dt))
		return ox_fail(c->m, TIR_EUNSUPPORTED, "output_datatype %s, which tir has not",
			       ox_onnx_type_name((int32_t)o));
	return 0;
}

static void set_value(struct ox_const *r, int64_t k, double v)
{
	if (r->dtype == TIR_DTYPE_F32)
		v = (float)v;
	ox_const_set(r, k, v, isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0);
}

/* HannWindow, HammingWindow, BlackmanWindow: folded (the size is known) */
static int op_window(struct ox_node_ctx *c)
{
	struct ox_const *s = ox_need_const(c, 0, "size");
	enum tir_dtype dt;
	if (!s || out_dtype(c, &dt))
		return -c->m->err->code;
	int64_t n = s->i[0];
	if (s->n != 1 || n < 0 || n > OX_FOLD_MAX)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "a window of %" PRId64 " (folded at import: at most %d)", n,
			       OX_FOLD_MAX);
	/* periodic: the period is the size; symmetric: one less */
	double N = (double)(ox_attr_i(c, "periodic", 1) ? n : n - 1);
	const char *op = c->n->op_type;
	double a0 = 0.5, a1 = 0.5, a2 = 0;
	if (!strcmp(op, "HammingWindow"))
		a0 = 25.0 / 46, a1 = 1 - a0;
	else if (!strcmp(op, "BlackmanWindow"))
		a0 = 0.42, a1 = 0.5, a2 = 0.08;
	struct ox_const *r = ox_const_new(dt, 1, &n);
	for (int64_t k = 0; r && k < n; k++) {
		double x = 2 * OX_PI * (double)k / N;
		set_value(r, k, a0 - a1 * cos(x) + a2 * cos(2 * x));
	}
	return ox_bind_const(c, 0, r);
}

/* MelWeightMatrix: folded, as ONNX's own test computes it (the mel
 * points evenly spaced in num_mel_bins + 2 steps, each rounded down to a
 * spectrogram bin; triangles between them) */
static int op_mel(struct ox_node_ctx *c)
{
	struct ox_const *nb = ox_need_const(c, 0, "num_mel_bins"), *dl = nb ? ox_need_const(c, 1, "dft_length") : NULL,
			*sr = dl ? ox_need_const(c, 2, "sample_rate") : NULL,
			*lo = sr ? ox_need_const(c, 3, "lower_edge_hertz") : NULL,
			*hi = lo ? ox_need_const(c, 4, "upper_edge_hertz") : NULL;
	enum tir_dtype dt;
	if (!hi || out_dtype(c, &dt))
		return -c->m->err->code;
	int64_t bins = nb->i[0], len = dl->i[0], rate = sr->i[0];
	if (bins < 1 || len < 1 || rate < 1 || bins > 4096 || len > 65536)
		return ox_fail(c->m, TIR_EDATA, "num_mel_bins %" PRId64 ", dft_length %" PRId64 ", sample_rate %" PRId64
			       " (each at least 1; at most 4096 bins and a length of 65536)", bins, len, rate);
	int64_t spec = len / 2 + 1, shape[2] = {spec, bins};
	if (spec * bins > OX_FOLD_MAX * 16)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "a matrix of %" PRId64 " x %" PRId64, spec, bins);
	int64_t *pt = malloc((size_t)(bins + 2) * sizeof *pt);
	struct ox_const *r = pt ? ox_const_new(dt, 2, shape) : NULL;
	if (!r) {
		free(pt);
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	}
	float lo_mel = 2595 * log10f(1 + (float)lo->d[0] / 700), hi_mel = 2595 * log10f(1 + (float)hi->d[0] / 700);
	float step = (hi_mel - lo_mel) / (float)(bins + 2);
	for (int64_t k = 0; k < bins + 2; k++) {
		double f = 700 * (pow(10, ((double)k * step + lo_mel) / 2595) - 1);
		double b = floor((double)(len + 1) * f / (double)rate);
		pt[k] = b < 0 ? 0 : b > (double)(spec - 1) ? spec - 1 : (int64_t)b;
	}
	for (int64_t k = 0; k < r->n; k++)
		set_value(r, k, 0);
	for (int64_t i = 0; i < bins; i++) {
		int64_t left = pt[i], mid = pt[i + 1], right = pt[i + 2];
		if (mid == left)
			set_value(r, mid * bins + i, 1);
		for (int64_t j = left; mid > left && j <= mid; j++)
			set_value(r, j * bins + i, (double)(j - left) / (double)(mid - left));
		for (int64_t j = mid; right > mid && j < right; j++)
			set_value(r, j * bins + i, (double)(right - j) / (double)(right - mid));
	}
	free(pt);
	return ox_bind_const(c, 0, r);
}

/* The real matrix of a DFT over rows = len * parts inputs (parts 1: real,
 * 2: real and imaginary interleaved) to 2 * bins outputs (each bin's real
 * and imaginary part): n past length are cut, length past len are zeros. */
static struct ox_const *dft_matrix(enum tir_dtype dt, int64_t len, int parts, int64_t length, int64_t bins,
				   bool inverse)
{
	int64_t shape[2] = {len * parts, 2 * bins};
	struct ox_const *w = ox_const_new(dt, 2, shape);
	double sc = inverse ? 1.0 / (double)length : 1, s = inverse ? -1 : 1;
	for (int64_t k = 0; w && k < w->n; k++)
		set_value(w, k, 0);
	for (int64_t n = 0; w && n < len && n < length; n++)
		for (int64_t k = 0; k < bins; k++) {
			double th = 2 * OX_PI * (double)((n * k) % length) / (double)length, cs = cos(th) * sc,
			       sn = sin(th) * sc;
			int64_t re = n * parts * 2 * bins, im = re + 2 * bins;
			set_value(w, re + 2 * k, cs);          /* re -> re */
			set_value(w, re + 2 * k + 1, -s * sn); /* re -> im */
			if (parts == 2) {
				set_value(w, im + 2 * k, s * sn); /* im -> re */
				set_value(w, im + 2 * k + 1, cs); /* im -> im */
			}
		}
	return w;
}

/* DFT: the signal's axis moved last but one, flattened with its real and
 * imaginary parts, times the folded matrix, and moved back */
static int op_dft(struct ox_node_ctx *c)
{
	struct tir_type t;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	int r = t.rank;
	if (r < 2 || (t.shape[r - 1] != 1 && t.shape[r - 1] != 2))
		return ox_fail(c->m, TIR_ETYPE, "the input's last axis must be 1 (real) or 2 (complex); it is %s",
			       ox_shape_str((char[200]){0}, 200, r, t.shape));
	if (t.dtype != TIR_DTYPE_F32 && t.dtype != TIR_DTYPE_F64)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "DFT of %s", tir_dtype_name(t.dtype));
	int64_t a = ox_attr_i(c, "axis", 1);
	if (a < 0)
		a += r;
	if (a < 0 || a >= r - 1)
		return ox_fail(c->m, TIR_ETYPE, "axis %" PRId64 " is not a signal axis of rank %d",
			       ox_attr_i(c, "axis", 1), r);
	int parts = (int)t.shape[r - 1];
	int64_t len = t.shape[a], length = len;
	if (ox_has_in(c, 1)) {
		struct ox_const *d = ox_need_const(c, 1, "dft_length");
		if (!d)
			return -c->m->err->code;
		length = d->i[0];
	}
	bool inverse = ox_attr_i(c, "inverse", 0), onesided = ox_attr_i(c, "onesided", 0);
	if (length < 1 || length > TIR_MAX_DIM)
		return ox_fail(c->m, TIR_EDATA, "dft_length %" PRId64, length);
	if (onesided && (inverse || parts == 2))
		return ox_fail(c->m, TIR_EUNSUPPORTED, "onesided with a complex input or inverse is not supported");
	int64_t bins = onesided ? length / 2 + 1 : length;
	if (len * parts * 2 * bins > OX_DFT_MAX)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "a DFT of %" PRId64 " points: tir writes it as a product with a "
			       "%" PRId64 " x %" PRId64 " matrix, at most %" PRId64 " entries (about 1024 points)",
			       length, len * parts, 2 * bins, OX_DFT_MAX);
	/* [rest..., len, parts] with the signal axis last but one */
	int64_t perm[TIR_MAX_RANK], inv[TIR_MAX_RANK], rest = 1, sh[TIR_MAX_RANK];
	int j = 0;
	for (int k = 0; k < r - 1; k++)
		if (k != a) {
			perm[j] = k;
			sh[j++] = t.shape[k];
			rest *= t.shape[k];
		}
	perm[j] = a;
	perm[j + 1] = r - 1;
	bool moved = a != r - 2;
	for (int k = 0; k < r; k++)
		inv[perm[k]] = k;
	char b[200];
	struct ox_const *w = dft_matrix(t.dtype, len, parts, length, bins, inverse);
	const char *wm = w ? use_known(c, w, "dft_matrix") : (ox_fail(c->m, TIR_ENOMEM, "out of memory"), NULL);
	const char *base = ox_out_name(c, 0);
	const char *y = wm && moved ? ox_emit(c->m, base, "transpose(%s, perm=%s)", x,
					      ox_shape_str(b, sizeof b, r, perm)) : wm ? x : NULL;
	int64_t flat[2] = {rest, len * parts};
	y = y ? ox_emit(c->m, base, "reshape(%s, shape=%s)", y, ox_shape_str(b, sizeof b, 2, flat)) : NULL;
	y = y ? ox_emit(c->m, base, "matmul(%s, %s)", y, wm) : NULL;
	sh[j] = bins;
	sh[j + 1] = 2;
	y = y ? ox_emit(c->m, base, "reshape(%s, shape=%s)", y, ox_shape_str(b, sizeof b, r, sh)) : NULL;
	if (y && moved)
		y = ox_emit(c->m, base, "transpose(%s, perm=%s)", y, ox_shape_str(b, sizeof b, r, inv));
	return y ? ox_bind(c->m, base, y) : -c->m->err->code;
}

/* STFT: the frames gathered ([batch, frames, length, parts]), times the
 * window, then each frame's DFT as one product with the folded matrix */
static int op_stft(struct ox_node_ctx *c)
{
	struct tir_type t, tw;
	const char *x = ox_in_typed(c, 0, &t);
	struct ox_const *st = x ? ox_need_const(c, 1, "frame_step") : NULL;
	if (!st)
		return -c->m->err->code;
	if (t.rank != 3 || (t.shape[2] != 1 && t.shape[2] != 2))
		return ox_fail(c->m, TIR_ETYPE, "the signal must be [batch, length, 1 or 2]; it is %s",
			       ox_shape_str((char[200]){0}, 200, t.rank, t.shape));
	if (t.dtype != TIR_DTYPE_F32 && t.dtype != TIR_DTYPE_F64)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "STFT of %s", tir_dtype_name(t.dtype));
	const char *win = ox_has_in(c, 2) ? ox_in_typed(c, 2, &tw) : NULL;
	if (ox_has_in(c, 2) && !win)
		return -c->m->err->code;
	int64_t flen;
	if (ox_has_in(c, 3)) {
		struct ox_const *fl = ox_need_const(c, 3, "frame_length");
		if (!fl)
			return -c->m->err->code;
		flen = fl->i[0];
	} else if (win) {
		flen = tw.rank == 1 ? tw.shape[0] : -1;
	} else {
		return ox_fail(c->m, TIR_EDATA, "neither a window nor a frame_length");
	}
	if (win && (tw.rank != 1 || tw.shape[0] != flen))
		return ox_fail(c->m, TIR_ETYPE, "the window must be [%" PRId64 "]", flen);
	int64_t step = st->i[0], len = t.shape[1], parts = t.shape[2];
	if (step < 1 || flen < 1 || flen > len)
		return ox_fail(c->m, TIR_EDATA, "frame_step %" PRId64 " and frame_length %" PRId64 " for a signal of %"
			       PRId64, step, flen, len);
	bool onesided = ox_attr_i(c, "onesided", 1);
	if (onesided && parts == 2)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "onesided with a complex signal is not supported");
	int64_t frames = (len - flen) / step + 1, bins = onesided ? flen / 2 + 1 : flen;
	if (flen * parts * 2 * bins > OX_DFT_MAX || frames * flen > OX_DFT_MAX)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "frames of %" PRId64 " points: tir writes each DFT as a product "
			       "with a %" PRId64 " x %" PRId64 " matrix, at most %" PRId64 " entries (about 1024 points)",
			       flen, flen * parts, 2 * bins, OX_DFT_MAX);
	int64_t ish[2] = {frames, flen};
	struct ox_const *ix = ox_const_new(TIR_DTYPE_I64, 2, ish);
	for (int64_t f = 0; ix && f < frames; f++)
		for (int64_t k = 0; k < flen; k++)
			ox_const_set(ix, f * flen + k, (double)(f * step + k), f * step + k);
	const char *im = ix ? use_known(c, ix, "frame_index") : (ox_fail(c->m, TIR_ENOMEM, "out of memory"), NULL);
	const char *base = ox_out_name(c, 0);
	char b[200];
	const char *y = im ? ox_emit(c->m, base, "gather(%s, %s, axis=1)", x, im) : NULL;
	if (y && win) {
		int64_t wsh[2] = {flen, 1};
		const char *wr = ox_emit(c->m, base, "reshape(%s, shape=%s)", win, ox_shape_str(b, sizeof b, 2, wsh));
		y = wr ? ox_emit(c->m, base, "mul(%s, %s)", y, wr) : NULL;
	}
	struct ox_const *w = y ? dft_matrix(t.dtype, flen, (int)parts, flen, bins, false) : NULL;
	const char *wm = w ? use_known(c, w, "dft_matrix") : y ? (ox_fail(c->m, TIR_ENOMEM, "out of memory"), NULL) : NULL;
	int64_t flat[2] = {t.shape[0] * frames, flen * parts}, osh[4] = {t.shape[0], frames, bins, 2};
	y = wm ? ox_emit(c->m, base, "reshape(%s, shape=%s)", y, ox_shape_str(b, sizeof b, 2, flat)) : NULL;
	y = y ? ox_emit(c->m, base, "matmul(%s, %s)", y, wm) : NULL;
	y = y ? ox_emit(c->m, base, "reshape(%s, shape=%s)", y, ox_shape_str(b, sizeof b, 4, osh)) : NULL;
	return y ? ox_bind(c->m, base, y) : -c->m->err->code;
}

/* BitShift: left_shift or right_shift (of the unsigned dtypes tir has: u8) */
static int op_bitshift(struct ox_node_ctx *c)
{
	const Onnx__AttributeProto *d = ox_node_attr(c->n, "direction");
	bool left = d && d->has_s && d->s.len == 4 && !memcmp(d->s.data, "LEFT", 4);
	if (!left && !(d && d->has_s && d->s.len == 5 && !memcmp(d->s.data, "RIGHT", 5)))
		return ox_fail(c->m, TIR_EDATA, "direction must be LEFT or RIGHT");
	struct tir_type ta, tb;
	const char *a = ox_in_typed(c, 0, &ta), *b = a ? ox_in_typed(c, 1, &tb) : NULL;
	if (!b)
		return -c->m->err->code;
	const char *y = ox_emit(c->m, ox_out_name(c, 0), "%s(%s, %s)", left ? "left_shift" : "right_shift", a, b);
	return y ? ox_bind(c->m, ox_out_name(c, 0), y) : -c->m->err->code;
}

static const struct ox_opdef misc_ops[] = {
	{"HannWindow", op_window}, {"HammingWindow", op_window}, {"BlackmanWindow", op_window},
	{"MelWeightMatrix", op_mel}, {"DFT", op_dft}, {"STFT", op_stft}, {"BitShift", op_bitshift},
	{NULL, NULL}};

const struct ox_opdef *ox_misc_lookup(const char *op_type)
{
	for (int k = 0; op_type && misc_ops[k].name; k++)
		if (!strcmp(misc_ops[k].name, op_type))
			return &misc_ops[k];
	return NULL;
}
