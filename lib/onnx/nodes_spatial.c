/*
 * nodes_spatial.c — the ONNX emitters of the spatial ops: Resize and
 * Upsample (each resized axis a gather of its taps from x, weighted by
 * constants the importer computes, as ONNX's reference does).  Not the
 * window ops of 1 and 2 axes (nodes.c); the small helpers below are this
 * file's own so that nodes.c's stay private to it.
 */
#include "onnx.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the node's attributes and operands ---- */

static const Onnx__AttributeProto *sp_attr(struct ox_node_ctx *c, const char *name)
{
	for (size_t k = 0; k < c->n->n_attribute; k++)
		if (c->n->attribute[k]->name && !strcmp(c->n->attribute[k]->name, name))
			return c->n->attribute[k];
	return NULL;
}

/* the string attribute name, or def; at most cap - 1 bytes */
static const char *sp_str(struct ox_node_ctx *c, const char *name, const char *def, char *buf, size_t cap)
{
	const Onnx__AttributeProto *a = sp_attr(c, name);
	if (!a || !a->has_s)
		return def;
	size_t n = a->s.len < cap - 1 ? a->s.len : cap - 1;
	memcpy(buf, a->s.data, n);
	buf[n] = 0;
	return buf;
}

static bool sp_has(struct ox_node_ctx *c, size_t k)
{
	return k < c->n->n_input && c->n->input[k] && *c->n->input[k];
}

/* input k's value known at import: a constant, or a small float vector
 * read from its input file; NULL when absent or computed at run time */
static const struct ox_const *sp_known(struct ox_node_ctx *c, size_t k)
{
	struct ox_val *v = sp_has(c, k) ? ox_find(c->m, c->n->input[k]) : NULL;
	if (!v)
		return NULL;
	if (v->c && v->c->d)
		return v->c;
	return v->given;
}

static const char *sp_out(struct ox_node_ctx *c)
{
	return c->n->n_output && c->n->output[0] ? c->n->output[0] : "";
}

static const char *sp_dtype(enum tir_dtype dt)
{
	static const char *const n[] = {"bool", "i32", "i64", "f32", "f64", "f16", "bf16", "i8", "u8", "i16"};
	return dt < sizeof n / sizeof *n ? n[dt] : "?";
}

#define SP_EMIT(...) ox_emit(c->m, sp_out(c), __VA_ARGS__)

/* A constant of n values shaped [n, 1, ...] (rank - a axes: it broadcasts
 * on axis a of a rank-rank tensor), of dtype dt (i64 or a float): a
 * literal when short, else a tensor of the weights file. */
static const char *sp_const(struct ox_node_ctx *c, const char *base, enum tir_dtype dt, int64_t n, const double *v,
			    int a, int rank)
{
	int64_t shape[TIR_MAX_RANK];
	int r = rank - a;
	for (int k = 0; k < r; k++)
		shape[k] = k ? 1 : n;
	bool isint = dt == TIR_DTYPE_I64;
	const char *x;
	if (n <= 64) {
		struct tir_str s = {0};
		tir_str_addf(&s, "[");
		for (int64_t k = 0; k < n; k++) {
			char b[40];
			if (isint) {
				snprintf(b, sizeof b, "%" PRId64, (int64_t)v[k]);
			} else {
				snprintf(b, sizeof b, dt == TIR_DTYPE_F64 ? "%.17g" : "%.9g", v[k]);
				if (!strpbrk(b, ".en"))
					strcat(b, ".0");
			}
			tir_str_addf(&s, "%s%s", k ? ", " : "", b);
		}
		tir_str_addf(&s, "]");
		if (s.oom) {
			tir_str_free(&s);
			ox_fail(c->m, TIR_ENOMEM, "out of memory");
			return NULL;
		}
		x = ox_emit(c->m, base, "%s", s.s);
		tir_str_free(&s);
		if (x && dt != TIR_DTYPE_I64 && dt != TIR_DTYPE_F32)
			x = ox_emit(c->m, base, "cast(%s, dtype=%s)", x, sp_dtype(dt));
	} else {
		/* a value of the importer's own (its key no ONNX name takes) */
		char key[300];
		struct ox_val *val = NULL;
		for (int k = 1; k < 100000; k++) {
			snprintf(key, sizeof key, "\x01%s_%d", base, k);
			if (!ox_find(c->m, key)) {
				val = ox_val(c->m, key);
				break;
			}
		}
		struct ox_const *cv = val ? ox_const_new(dt, 1, &n) : NULL;
		if (!cv) {
			ox_fail(c->m, TIR_ENOMEM, "out of memory");
			return NULL;
		}
		for (int64_t k = 0; k < n; k++)
			ox_const_set(cv, k, v[k], (int64_t)v[k]);
		val->c = cv;
		val->defined = true;
		x = ox_use(c->m, key);
	}
	if (x && r > 1) {
		struct tir_str s = {0};
		for (int k = 0; k < r; k++)
			tir_str_addf(&s, "%s%" PRId64, k ? ", " : "", shape[k]);
		x = s.oom ? NULL : ox_emit(c->m, base, "reshape(%s, shape=[%s])", x, s.s);
		tir_str_free(&s);
	}
	return x;
}

/* ---- Resize, Upsample ---- */

enum rs_coord { RS_HALF_PIXEL, RS_PYTORCH_HALF_PIXEL, RS_ALIGN_CORNERS, RS_ASYMMETRIC, RS_TF_HALF_PIXEL_FOR_NN,
		RS_TF_CROP_AND_RESIZE };
enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum rs_round { RS_ROUND_PREFER_FLOOR, RS_ROUND_PREFER_CEIL, RS_FLOOR, RS_CEIL };

struct rs_opts {
	enum rs_coord coord;
	enum rs_mode mode;
	enum rs_round round;
	double a;             /* cubic_coeff_a */
	bool exclude_outside;
	double extrapolation;
};

/* output position x of an axis of in elements resized by scale (its
 * output width scale * in, as ONNX's reference has it) in input
 * coordinates; *outside when tf_crop_and_resize lands past the input */
static double rs_coord(const struct rs_opts *o, int64_t x, int64_t in, double scale, double roi0, double roi1,
		       bool *outside)
{
	double w = scale * (double)in, xo;
	*outside = false;
	switch (o->coord) {
	case RS_ALIGN_CORNERS:
		return w == 1 ? 0 : (double)x * (double)(in - 1) / (w - 1);
	case RS_ASYMMETRIC:
		return (double)x / scale;
	case RS_TF_HALF_PIXEL_FOR_NN:
		return ((double)x + 0.5) / scale;
	case RS_TF_CROP_AND_RESIZE:
		xo = w == 1 ? (roi1 - roi0) * (double)(in - 1) / 2 : (double)x * (roi1 - roi0) * (double)(in - 1) / (w - 1);
		xo += roi0 * (double)(in - 1);
		*outside = xo < 0 || xo > (double)(in - 1);
		return xo;
	case RS_PYTORCH_HALF_PIXEL:
		return w == 1 ? -0.5 : ((double)x + 0.5) / scale - 0.5;
	case RS_HALF_PIXEL:
		break;
	}
	return ((double)x + 0.5) / scale - 0.5;
}

/* the taps of output position x: ntaps indices into the input (clamped,
 * as the reference pads its edges) and their weights.  ONNX's reference:
 * the nearest ntaps positions, the ratio 1 at an integer position */
static void rs_taps(const struct rs_opts *o, double xo, int64_t in, int ntaps, int64_t *idx, double *w)
{
	double f = floor(xo), r = xo - f;
	int64_t x0 = (int64_t)f;
	if (r == 0) {
		r = 1;
		x0--;
	}
	int64_t first = x0 - (ntaps / 2 - 1);
	if (o->mode == RS_NEAREST) {
		bool hi = r == 1;
		if (r != 1)
			switch (o->round) {
			case RS_ROUND_PREFER_FLOOR: hi = r > 0.5; break;
			case RS_ROUND_PREFER_CEIL: hi = r >= 0.5; break;
			case RS_FLOOR: hi = false; break;
			case RS_CEIL: hi = true; break;
			}
		w[0] = !hi;
		w[1] = hi;
	} else if (o->mode == RS_LINEAR) {
		w[0] = 1 - r;
		w[1] = r;
	} else {
		double A = o->a, s = 1 - r;
		w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
		w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
		w[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
		w[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
	}
	double sum = 0;
	for (int t = 0; t < ntaps; t++) {
		int64_t i = first + t;
		if (o->exclude_outside && (i < 0 || i >= in))
			w[t] = 0;
		sum += w[t];
		idx[t] = i < 0 ? 0 : i >= in ? in - 1 : i;
	}
	if (o->exclude_outside && sum != 0)
		for (int t = 0; t < ntaps; t++)
			w[t] /= sum;
}

/* axis a of x (of type *t) resized to out: x itself when every output
 * position reads its own input one with weight 1 */
static const char *rs_axis(struct ox_node_ctx *c, const char *xv, const struct tir_type *t, int a, int64_t out,
			   double scale, double roi0, double roi1, const struct rs_opts *o)
{
	int64_t in = t->shape[a];
	int ntaps = o->mode == RS_CUBIC ? 4 : 2;
	size_t n = (size_t)out;
	int64_t *idx = malloc(n * 4 * sizeof *idx);
	double *w = malloc(n * 4 * sizeof *w), *col = malloc(n * sizeof *col), *ext = malloc(n * sizeof *ext);
	const char *r = NULL;
	if (!idx || !w || !col || !ext) {
		ox_fail(c->m, TIR_ENOMEM, "out of memory");
		goto out;
	}
	bool same = out == in, any_outside = false;
	for (int64_t x = 0; x < out; x++) {
		bool outside;
		double xo = rs_coord(o, x, in, scale, roi0, roi1, &outside);
		rs_taps(o, xo, in, ntaps, idx + x * ntaps, w + x * ntaps);
		ext[x] = outside ? o->extrapolation : 0;
		for (int k = 0; outside && k < ntaps; k++)
			w[x * ntaps + k] = 0;
		any_outside |= outside;
		for (int k = 0; k < ntaps; k++)
			if (w[x * ntaps + k] != 0 && (w[x * ntaps + k] != 1 || idx[x * ntaps + k] != x))
				same = false;
		same &= !outside;
	}
	if (same) {
		r = xv;
		goto out;
	}
	const char *acc = NULL;
	for (int k = 0; k < ntaps; k++) {
		bool used = false, ones = true;
		for (int64_t x = 0; x < out; x++) {
			col[x] = (double)idx[x * ntaps + k];
			used |= w[x * ntaps + k] != 0;
			ones &= w[x * ntaps + k] == 1;
		}
		if (!used)
			continue;
		const char *ix = sp_const(c, "resize_index", TIR_DTYPE_I64, out, col, 0, 1);
		const char *g = ix ? SP_EMIT("gather(%s, %s, axis=%d)", xv, ix, a) : NULL;
		if (g && !ones) {
			for (int64_t x = 0; x < out; x++)
				col[x] = w[x * ntaps + k];
			const char *wc = sp_const(c, "resize_weight", (enum tir_dtype)t->dtype, out, col, a, t->rank);
			g = wc ? SP_EMIT("mul(%s, %s)", g, wc) : NULL;
		}
		acc = g && acc ? SP_EMIT("add(%s, %s)", acc, g) : g;
		if (!acc)
			goto out;
	}
	if (!acc) { /* every position outside: the extrapolation value alone */
		int64_t shape[TIR_MAX_RANK];
		memcpy(shape, t->shape, sizeof shape);
		shape[a] = out;
		struct tir_str s = {0};
		for (int k = 0; k < t->rank; k++)
			tir_str_addf(&s, "%s%" PRId64, k ? ", " : "", shape[k]);
		acc = SP_EMIT("full([%s], %.9g, dtype=%s)", s.s ? s.s : "", o->extrapolation, sp_dtype(t->dtype));
		tir_str_free(&s);
		r = acc;
		goto out;
	}
	if (any_outside && o->extrapolation != 0) {
		const char *e = sp_const(c, "resize_outside", (enum tir_dtype)t->dtype, out, ext, a, t->rank);
		acc = e ? SP_EMIT("add(%s, %s)", acc, e) : NULL;
	}
	r = acc;
out:
	free(idx);
	free(w);
	free(col);
	free(ext);
	return r;
}

static int rs_parse(struct ox_node_ctx *c, struct rs_opts *o)
{
	char b[64];
	const Onnx__AttributeProto *a;
	memset(o, 0, sizeof *o);
	o->a = (a = sp_attr(c, "cubic_coeff_a")) ? a->f : -0.75;
	o->exclude_outside = (a = sp_attr(c, "exclude_outside")) && a->i;
	o->extrapolation = (a = sp_attr(c, "extrapolation_value")) ? a->f : 0;
	const char *m = sp_str(c, "mode", "nearest", b, sizeof b);
	if (!strcmp(m, "nearest"))
		o->mode = RS_NEAREST;
	else if (!strcmp(m, "linear") || !strcmp(m, "bilinear"))
		o->mode = RS_LINEAR;
	else if (!strcmp(m, "cubic"))
		o->mode = RS_CUBIC;
	else
		return ox_fail(c->m, TIR_ETYPE, "mode '%s' (nearest, linear or cubic)", m);
	/* opset 10's Resize and Upsample: asymmetric, the floor of nearest */
	if (c->opset < 11 || !strcmp(c->n->op_type, "Upsample")) {
		o->coord = RS_ASYMMETRIC;
		o->round = RS_FLOOR;
		return 0;
	}
	static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
					     "tf_half_pixel_for_nn", "tf_crop_and_resize"};
	static const char *const rounds[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
	const char *cm = sp_str(c, "coordinate_transformation_mode", "half_pixel", b, sizeof b);
	int k = 0;
	while (k < 6 && strcmp(cm, coords[k]))
		k++;
	if (k == 6)
		return ox_fail(c->m, TIR_ETYPE, "coordinate_transformation_mode '%s'", cm);
	o->coord = (enum rs_coord)k;
	const char *nm = sp_str(c, "nearest_mode", "round_prefer_floor", b, sizeof b);
	for (k = 0; k < 4 && strcmp(nm, rounds[k]); k++)
		;
	if (k == 4)
		return ox_fail(c->m, TIR_ETYPE, "nearest_mode '%s'", nm);
	o->round = (enum rs_round)k;
	return 0;
}

/* Resize (opsets 10-17) and Upsample (7-9): the output's size from scales
 * (its floor) or sizes, then each resized axis in turn */
int ox_op_resize(struct ox_node_ctx *c)
{
	struct rs_opts o;
	if (rs_parse(c, &o))
		return -c->m->err->code;
	if (!sp_has(c, 0))
		return ox_fail(c->m, TIR_EDATA, "input 0 is missing");
	const char *x = ox_use(c->m, c->n->input[0]);
	const struct tir_type *tx = x ? ox_type(c->m, x) : NULL;
	if (!tx)
		return -c->m->err->code;
	struct tir_type t = *tx;
	bool upsample7 = !strcmp(c->n->op_type, "Upsample") && c->opset < 9;
	size_t ks = c->opset < 11 ? 1 : 2, kz = 3, kr = 1;
	double scales[TIR_MAX_RANK], roi[2 * TIR_MAX_RANK];
	int64_t out[TIR_MAX_RANK];
	const struct ox_const *sc = upsample7 ? NULL : sp_known(c, ks);
	const struct ox_const *sz = c->opset < 11 ? NULL : sp_known(c, kz);
	if (upsample7) {
		const Onnx__AttributeProto *a = sp_attr(c, "scales");
		if (!a || a->n_floats != (size_t)t.rank)
			return ox_fail(c->m, TIR_ETYPE, "scales of %zu values for rank %d", a ? a->n_floats : 0, t.rank);
		for (int k = 0; k < t.rank; k++)
			scales[k] = a->floats[k];
	} else if (sc && sc->n) {
		if (sc->n != t.rank)
			return ox_fail(c->m, TIR_ETYPE, "scales of %" PRId64 " values for rank %d", sc->n, t.rank);
		for (int k = 0; k < t.rank; k++)
			scales[k] = (double)(float)sc->d[k];
	} else if (!(sz && sz->n)) {
		const char *what = sp_has(c, kz) ? c->n->input[kz] : sp_has(c, ks) ? c->n->input[ks] : "";
		if (sp_has(c, kz) || sp_has(c, ks))
			return ox_fail(c->m, TIR_EUNSUPPORTED, "its scales or sizes ('%s') are computed at run time; tir "
				       "needs it known at import (a static shape)", what);
		return ox_fail(c->m, TIR_EDATA, "neither scales nor sizes given");
	}
	if (sz && sz->n && !(sc && sc->n)) {
		if (sz->n != t.rank)
			return ox_fail(c->m, TIR_ETYPE, "sizes of %" PRId64 " values for rank %d", sz->n, t.rank);
		for (int k = 0; k < t.rank; k++) {
			out[k] = sz->i[k];
			if (out[k] < 1 || out[k] > TIR_MAX_DIM)
				return ox_fail(c->m, TIR_ETYPE, "sizes[%d] is %" PRId64, k, out[k]);
			if (!t.shape[k])
				return ox_fail(c->m, TIR_ETYPE, "axis %d is empty", k);
			scales[k] = (double)out[k] / (double)t.shape[k];
		}
	} else {
		for (int k = 0; k < t.rank; k++) {
			double n = scales[k] * (double)t.shape[k];
			if (!(scales[k] > 0) || !(n < (double)TIR_MAX_DIM))
				return ox_fail(c->m, TIR_ETYPE, "scales[%d] is %g", k, scales[k]);
			out[k] = (int64_t)n;
			if (out[k] < 1)
				return ox_fail(c->m, TIR_ETYPE, "scales[%d] = %g leaves no element of %" PRId64, k, scales[k],
					       t.shape[k]);
		}
	}
	for (int k = 0; k < t.rank; k++) {
		roi[k] = 0;
		roi[t.rank + k] = 1;
	}
	if (o.coord == RS_TF_CROP_AND_RESIZE) {
		const struct ox_const *r = sp_known(c, kr);
		if (!r)
			return ox_fail(c->m, TIR_EUNSUPPORTED, "its roi is %s; tir needs it known at import",
				       sp_has(c, kr) ? "computed at run time" : "missing");
		if (r->n != 2 * t.rank)
			return ox_fail(c->m, TIR_ETYPE, "roi of %" PRId64 " values for rank %d", r->n, t.rank);
		for (int k = 0; k < 2 * t.rank; k++)
			roi[k] = (double)(float)r->d[k];
	}
	enum tir_dtype dt = (enum tir_dtype)t.dtype;
	bool fl = dt == TIR_DTYPE_F32 || dt == TIR_DTYPE_F64;
	if (!fl && o.mode != RS_NEAREST) {
		x = SP_EMIT("cast(%s, dtype=f32)", x);
		t.dtype = TIR_DTYPE_F32;
	}
	for (int a = 0; a < t.rank && x; a++) {
		x = rs_axis(c, x, &t, a, out[a], scales[a], roi[a], roi[t.rank + a], &o);
		t.shape[a] = out[a];
	}
	if (x && t.dtype != dt)
		x = SP_EMIT("cast(%s, dtype=%s)", x, sp_dtype(dt));
	if (!x)
		return -c->m->err->code;
	return ox_bind(c->m, sp_out(c), x);
}
