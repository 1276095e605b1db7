/*
 * nodes_spatial.c — the ONNX emitters of the spatial ops: Resize and
 * Upsample (each resized axis a gather of its taps from x, weighted by
 * constants the importer computes, as ONNX's reference does).  Not the
 * window ops of 1 and 2 axes (nodes.c); the helpers every emitter shares
 * are emit.c's.
 */
#include "onnx.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* input k's value known at import: a constant, or a small float vector
 * read from its input file; NULL when absent or computed at run time */
static const struct ox_const *sp_known(struct ox_node_ctx *c, size_t k)
{
	struct ox_val *v = ox_in_val(c, k);
	if (!v)
		return NULL;
	if (v->c && v->c->d)
		return v->c;
	return v->given;
}

#define SP_EMIT(...) ox_emit(c->m, ox_out_name(c, 0), __VA_ARGS__)

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
			x = ox_emit(c->m, base, "cast(%s, dtype=%s)", x, tir_dtype_name(dt));
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
		if (o->mode == RS_NEAREST) { /* one tap: the one chosen */
			int64_t *ix = idx + x * ntaps;
			double *wx = w + x * ntaps;
			ix[0] = wx[1] != 0 ? ix[1] : ix[0];
			wx[0] = wx[0] + wx[1];
			wx[1] = 0;
		}
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
		acc = SP_EMIT("full([%s], %.9g, dtype=%s)", s.s ? s.s : "", o->extrapolation, tir_dtype_name(t->dtype));
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
	o->a = (a = ox_attr(c, "cubic_coeff_a")) ? a->f : -0.75;
	o->exclude_outside = (a = ox_attr(c, "exclude_outside")) && a->i;
	o->extrapolation = (a = ox_attr(c, "extrapolation_value")) ? a->f : 0;
	const char *m = ox_attr_str(c, "mode", "nearest", b, sizeof b);
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
	const char *cm = ox_attr_str(c, "coordinate_transformation_mode", "half_pixel", b, sizeof b);
	int k = 0;
	while (k < 6 && strcmp(cm, coords[k]))
		k++;
	if (k == 6)
		return ox_fail(c->m, TIR_ETYPE, "coordinate_transformation_mode '%s'", cm);
	o->coord = (enum rs_coord)k;
	const char *nm = ox_attr_str(c, "nearest_mode", "round_prefer_floor", b, sizeof b);
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
	if (!ox_has_in(c, 0))
		return ox_fail(c->m, TIR_EDATA, "input 0 is missing");
	const char *x = ox_use(c->m, c->n->input[0]);
	const struct tir_ntype *tx = x ? ox_type(c->m, x) : NULL;
	if (!tx)
		return -c->m->err->code;
	struct tir_type t = tir_ntype_value(tx);
	bool upsample7 = !strcmp(c->n->op_type, "Upsample") && c->opset < 9;
	size_t ks = c->opset < 11 ? 1 : 2, kz = 3, kr = 1;
	double scales[TIR_MAX_RANK], roi[2 * TIR_MAX_RANK];
	int64_t out[TIR_MAX_RANK];
	const struct ox_const *sc = upsample7 ? NULL : sp_known(c, ks);
	const struct ox_const *sz = c->opset < 11 ? NULL : sp_known(c, kz);
	if (upsample7) {
		const Onnx__AttributeProto *a = ox_attr(c, "scales");
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
		const char *what = ox_has_in(c, kz) ? c->n->input[kz] : ox_has_in(c, ks) ? c->n->input[ks] : "";
		if (ox_has_in(c, kz) || ox_has_in(c, ks))
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
				       ox_has_in(c, kr) ? "computed at run time" : "missing");
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
		x = SP_EMIT("cast(%s, dtype=%s)", x, tir_dtype_name(dt));
	if (!x)
		return -c->m->err->code;
	return ox_bind(c->m, ox_out_name(c, 0), x);
}

/* ---- 3-D Conv, ConvTranspose, MaxPool, AveragePool ---- */

/* a window op's attributes over n spatial axes: the kernel (from the
 * weight's shape kw, or kernel_shape), strides, dilations, the pads
 * before and after each axis (explicit, or from auto_pad) */
struct sp_win {
	int n;
	int64_t in[3], k[3], s[3], d[3], p0[3], p1[3];
};

static int sp_window(struct ox_node_ctx *c, const struct tir_ntype *t, const int64_t *kw, struct sp_win *w)
{
	int n = t->rank - 2;
	if (n < 1 || n > 3)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "%s of a %d-D input is not supported (1 to 3)", c->n->op_type, n);
	w->n = n;
	const Onnx__AttributeProto *ks = ox_attr(c, "kernel_shape"), *st = ox_attr(c, "strides"),
				   *dl = ox_attr(c, "dilations"), *pd = ox_attr(c, "pads");
	if ((ks && ks->n_ints != (size_t)n) || (st && st->n_ints != (size_t)n) || (dl && dl->n_ints != (size_t)n) ||
	    (pd && pd->n_ints != (size_t)(2 * n)))
		return ox_fail(c->m, TIR_ETYPE, "kernel_shape, strides, dilations or pads not of %d spatial axes", n);
	if (!ks && !kw)
		return ox_fail(c->m, TIR_EDATA, "no kernel_shape");
	char b[32];
	const char *ap = ox_attr_str(c, "auto_pad", "NOTSET", b, sizeof b);
	bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
		return ox_fail(c->m, TIR_ETYPE, "auto_pad not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	for (int a = 0; a < n; a++) {
		w->in[a] = t->shape[2 + a];
		w->k[a] = ks ? ks->ints[a] : kw[a];
		w->s[a] = st ? st->ints[a] : 1;
		w->d[a] = dl ? dl->ints[a] : 1;
		w->p0[a] = pd && !same && strcmp(ap, "VALID") ? pd->ints[a] : 0;
		w->p1[a] = pd && !same && strcmp(ap, "VALID") ? pd->ints[a + n] : 0;
		if (kw && w->k[a] != kw[a])
			return ox_fail(c->m, TIR_ETYPE, "kernel_shape does not match the weight");
		if (w->k[a] < 1 || w->s[a] < 1 || w->d[a] < 1 || w->k[a] > 4096 || w->s[a] > TIR_MAX_DIM ||
		    w->d[a] > TIR_MAX_DIM || (double)(w->k[a] - 1) * (double)w->d[a] + 1 > (double)TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "kernel, strides or dilations below 1 or too large");
		if (same) {
			int64_t out = (w->in[a] + w->s[a] - 1) / w->s[a], ext = (w->k[a] - 1) * w->d[a] + 1;
			int64_t tot = (out - 1) * w->s[a] + ext - w->in[a];
			if (tot < 0)
				tot = 0;
			w->p0[a] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
			w->p1[a] = tot - w->p0[a];
		}
		if (w->p0[a] < 0 || w->p1[a] < 0 || w->p0[a] > TIR_MAX_DIM || w->p1[a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "pads below 0 or too large");
	}
	return 0;
}

/* "[[0, 0], [0, 0], [a, b], ...]": pads of a rank-(2 + n) tensor */
static void sp_pads(struct tir_str *s, int n, const int64_t *p0, const int64_t *p1)
{
	tir_str_addf(s, "[[0, 0], [0, 0]");
	for (int a = 0; a < n; a++)
		tir_str_addf(s, ", [%" PRId64 ", %" PRId64 "]", p0[a], p1[a]);
	tir_str_addf(s, "]");
}

/* a 3-D convolution of x [N, C, D, H, W] (padded already) by w [O, C/g,
 * kD, kH, kW]: for each of the kD depth taps, the strided depth slices of
 * x as a batch of N * Dout images, convolved in 2-D with the tap's
 * weights; the sum of the taps, back to [N, O, Dout, Ho, Wo] */
static const char *sp_conv3d(struct ox_node_ctx *c, const char *x, const char *w, const struct sp_win *win,
			     int64_t g)
{
	const struct tir_ntype *tx = ox_type(c->m, x), *tw = ox_type(c->m, w);
	if (!tx || !tw)
		return NULL;
	int64_t N = tx->shape[0], C = tx->shape[1], D = tx->shape[2], H = tx->shape[3], W = tx->shape[4];
	int64_t O = tw->shape[0], kD = tw->shape[2], ext = (kD - 1) * win->d[0] + 1;
	if (D < ext) {
		ox_fail(c->m, TIR_ETYPE, "a kernel of extent %" PRId64 " past a depth of %" PRId64, ext, D);
		return NULL;
	}
	int64_t Do = (D - ext) / win->s[0] + 1;
	char b[300];
	const char *xt = SP_EMIT("transpose(%s, perm=[0, 2, 1, 3, 4])", x), *acc = NULL;
	int64_t s4[4] = {N * Do, C, H, W}, w4[4] = {O, tw->shape[1], tw->shape[3], tw->shape[4]};
	for (int64_t k = 0; k < kD && xt; k++) {
		int64_t st = k * win->d[0];
		const char *xs = SP_EMIT("slice(%s, axis=1, start=%" PRId64 ", stop=%" PRId64 ", step=%" PRId64 ")", xt, st,
					 st + (Do - 1) * win->s[0] + 1, win->s[0]);
		xs = xs ? SP_EMIT("reshape(%s, shape=%s)", xs, ox_shape_str(b, sizeof b, 4, s4)) : NULL;
		const char *wk = xs ? SP_EMIT("slice(%s, axis=2, start=%" PRId64 ", stop=%" PRId64 ")", w, k, k + 1) : NULL;
		wk = wk ? SP_EMIT("reshape(%s, shape=%s)", wk, ox_shape_str(b, sizeof b, 4, w4)) : NULL;
		const char *y = wk ? SP_EMIT("conv2d(%s, %s, stride=[%" PRId64 ", %" PRId64 "], dilation=[%" PRId64
					     ", %" PRId64 "], groups=%" PRId64 ")", xs, wk, win->s[1], win->s[2],
					     win->d[1], win->d[2], g) : NULL;
		acc = y && acc ? SP_EMIT("add(%s, %s)", acc, y) : y;
		if (!acc)
			return NULL;
	}
	const struct tir_ntype *ty = acc ? ox_type(c->m, acc) : NULL;
	if (!ty)
		return NULL;
	int64_t s5[5] = {N, Do, O, ty->shape[2], ty->shape[3]};
	const char *y = SP_EMIT("reshape(%s, shape=%s)", acc, ox_shape_str(b, sizeof b, 5, s5));
	return y ? SP_EMIT("transpose(%s, perm=[0, 2, 1, 3, 4])", y) : NULL;
}

static const char *sp_bias(struct ox_node_ctx *c, const char *y, int64_t O)
{
	if (!y || !ox_has_in(c, 2))
		return y;
	const char *b = ox_in(c, 2);
	b = b ? SP_EMIT("reshape(%s, shape=[%" PRId64 ", 1, 1, 1])", b, O) : NULL;
	return b ? SP_EMIT("add(%s, %s)", y, b) : NULL;
}

/* Conv of a 3-D input */
int ox_op_conv3d(struct ox_node_ctx *c)
{
	const char *x = ox_in(c, 0), *w = x ? ox_in(c, 1) : NULL;
	const struct tir_ntype *tx = w ? ox_type(c->m, x) : NULL, *tw = tx ? ox_type(c->m, w) : NULL;
	if (!tw)
		return -c->m->err->code;
	if (tw->rank != 5)
		return ox_fail(c->m, TIR_ETYPE, "a weight of rank %d for an input of rank 5", tw->rank);
	struct sp_win win;
	if (sp_window(c, tx, tw->shape + 2, &win))
		return -c->m->err->code;
	const Onnx__AttributeProto *ga = ox_attr(c, "group");
	int64_t g = ga ? ga->i : 1, C = tx->shape[1];
	if (g < 1 || C % g || tw->shape[0] % g || tw->shape[1] * g != C)
		return ox_fail(c->m, TIR_ETYPE, "group %" PRId64 " does not fit %" PRId64 " channels and a weight of %" PRId64
			       " x %" PRId64, g, C, tw->shape[0], tw->shape[1]);
	int64_t O = tw->shape[0];
	if (win.p0[0] || win.p0[1] || win.p0[2] || win.p1[0] || win.p1[1] || win.p1[2]) {
		struct tir_str s = {0};
		sp_pads(&s, 3, win.p0, win.p1);
		x = s.oom ? NULL : SP_EMIT("pad(%s, pads=%s)", x, s.s);
		tir_str_free(&s);
	}
	const char *y = x ? sp_conv3d(c, x, w, &win, g) : NULL;
	y = sp_bias(c, y, O);
	return y ? ox_bind(c->m, ox_out_name(c, 0), y) : -c->m->err->code;
}

/* each element's flat position in x of type *t (row-major, or with the
 * spatial axes column-major: storage_order 1), the Indices MaxPool gives */
static const char *sp_indices(struct ox_node_ctx *c, const struct tir_type *t, bool colmajor)
{
	int64_t n = 1, sh[TIR_MAX_RANK];
	for (int k = 0; k < t->rank; k++) {
		n *= t->shape[k];
		sh[k] = k < 2 || !colmajor ? t->shape[k] : t->shape[t->rank + 1 - k];
	}
	char b[300];
	const char *i = SP_EMIT("arange(0, %" PRId64 ", dtype=i64)", n);
	i = i ? SP_EMIT("reshape(%s, shape=%s)", i, ox_shape_str(b, sizeof b, t->rank, sh)) : NULL;
	if (i && colmajor && t->rank > 3) {
		struct tir_str p = {0};
		tir_str_addf(&p, "[0, 1");
		for (int k = t->rank - 1; k >= 2; k--)
			tir_str_addf(&p, ", %d", k);
		tir_str_addf(&p, "]");
		i = p.oom ? NULL : SP_EMIT("transpose(%s, perm=%s)", i, p.s);
		tir_str_free(&p);
	}
	return i;
}

/* MaxPool (and its Indices) and AveragePool of 1 to 3 spatial axes
 * (nodes.c's take the undilated ones of 1 and 2 without Indices to tir's
 * pools), axis by axis (a box's maximum
 * or sum is its axes' in turn): each axis padded (-inf or 0, ceil_mode's
 * last window too), the kernel's taps as strided slices; the average
 * divides by each axis' count of the cells it takes (the pads counted
 * with count_include_pad, ceil_mode's extra never) */
int ox_op_pool_nd(struct ox_node_ctx *c)
{
	const char *x = ox_in(c, 0);
	const struct tir_ntype *tx = x ? ox_type(c->m, x) : NULL;
	if (!tx)
		return -c->m->err->code;
	struct tir_type t = tir_ntype_value(tx);
	bool max = !strcmp(c->n->op_type, "MaxPool");
	bool want_ix = max && c->n->n_output > 1 && c->n->output[1] && *c->n->output[1];
	struct sp_win win;
	if (sp_window(c, tx, NULL, &win))
		return -c->m->err->code;
	const Onnx__AttributeProto *a;
	const char *xi = want_ix ? sp_indices(c, &t, (a = ox_attr(c, "storage_order")) && a->i) : NULL;
	if (want_ix && !xi)
		return -c->m->err->code;
	bool ceil_mode = (a = ox_attr(c, "ceil_mode")) && a->i;
	bool count_pad = !max && (a = ox_attr(c, "count_include_pad")) && a->i;
	enum tir_dtype dt = (enum tir_dtype)t.dtype;
	if (!max && dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64) {
		x = SP_EMIT("cast(%s, dtype=f32)", x);
		t.dtype = TIR_DTYPE_F32;
	}
	/* the last axis first: the Indices' ties go to the first position
	 * in row-major order, as ONNX's reference scans the window */
	for (int ax = win.n - 1; ax >= 0 && x; ax--) {
		int64_t in = win.in[ax], k = win.k[ax], s = win.s[ax], d = win.d[ax], p0 = win.p0[ax], p1 = win.p1[ax];
		int64_t ext = (k - 1) * d + 1, span = in + p0 + p1 - ext;
		if (span < 0)
			return ox_fail(c->m, TIR_ETYPE, "a window of %" PRId64 " past an axis of %" PRId64, ext, in + p0 + p1);
		int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
		if (ceil_mode && out > 1 && (out - 1) * s >= in + p0)
			out--;
		int64_t need = (out - 1) * s + ext - (in + p0 + p1), extra = need > 0 ? need : 0;
		if (k == 1 && s == 1 && !p0 && !p1 && !extra)
			continue;
		int A = 2 + ax;
		const char *xp = x, *xip = xi;
		if (p0 || p1 || extra) {
			struct tir_str ps = {0};
			tir_str_addf(&ps, "[");
			for (int r = 0; r < t.rank; r++)
				tir_str_addf(&ps, "%s[%" PRId64 ", %" PRId64 "]", r ? ", " : "", r == A ? p0 : 0,
					     r == A ? p1 + extra : 0);
			tir_str_addf(&ps, "]");
			xp = ps.oom ? NULL : SP_EMIT("pad(%s, pads=%s, value=%s)", x, ps.s, max ? "-inf" : "0");
			xip = xi && xp ? SP_EMIT("pad(%s, pads=%s, value=-1)", xi, ps.s) : xi;
			tir_str_free(&ps);
		}
		const char *acc = NULL, *acci = NULL;
		for (int64_t j = 0; j < k && xp; j++) {
			char sl_args[160];
			snprintf(sl_args, sizeof sl_args, "axis=%d, start=%" PRId64 ", stop=%" PRId64 ", step=%" PRId64, A, j * d,
				 j * d + (out - 1) * s + 1, s);
			const char *sl = SP_EMIT("slice(%s, %s)", xp, sl_args);
			if (xi && sl) {
				/* the index of the first maximum: a later tap's only where strictly greater */
				const char *si = SP_EMIT("slice(%s, %s)", xip, sl_args);
				const char *gt = si && acc ? SP_EMIT("gt(%s, %s)", sl, acc) : NULL;
				acci = !acc ? si : gt ? SP_EMIT("where(%s, %s, %s)", gt, si, acci) : NULL;
				if (!acci)
					return -c->m->err->code;
			}
			acc = sl && acc ? SP_EMIT("%s(%s, %s)", max ? "maximum" : "add", acc, sl) : sl;
			if (!acc)
				return -c->m->err->code;
		}
		xi = acci;
		if (acc && !max) {
			double *cnt = malloc((size_t)out * sizeof *cnt);
			if (!cnt)
				return ox_fail(c->m, TIR_ENOMEM, "out of memory");
			int64_t lo = count_pad ? -p0 : 0, hi = count_pad ? in + p1 : in;
			bool ones = true;
			for (int64_t o = 0; o < out; o++) {
				cnt[o] = 0;
				for (int64_t j = 0; j < k; j++) {
					int64_t pos = o * s - p0 + j * d;
					cnt[o] += pos >= lo && pos < hi;
				}
				ones &= cnt[o] == 1;
			}
			const char *cc = ones ? NULL : sp_const(c, "pool_count", (enum tir_dtype)t.dtype, out, cnt, A, t.rank);
			free(cnt);
			if (!ones)
				acc = cc ? SP_EMIT("div(%s, %s)", acc, cc) : NULL;
		}
		x = acc;
		t.shape[A] = out;
	}
	if (x && t.dtype != dt)
		x = SP_EMIT("cast(%s, dtype=%s)", x, tir_dtype_name(dt));
	if (!x || ox_bind(c->m, ox_out_name(c, 0), x))
		return -c->m->err->code;
	return xi ? ox_bind(c->m, c->n->output[1], xi) : 0;
}

/* ---- GridSample ---- */

struct gs_ctx {
	struct ox_node_ctx *c;
	const char *xf;          /* x as [N * H * W, C] */
	const char *base;        /* n * H * W, shaped [N, 1, 1] (i64) */
	int64_t H, W;
	bool align, border, reflect;
	const char *acc;
};

/* coordinate v (a name) of an axis of size n reflected into its range
 * and clipped, as PyTorch's grid_sample does for padding_mode reflection */
static const char *gs_reflect(struct gs_ctx *g, const char *v, int64_t n)
{
	struct ox_node_ctx *c = g->c;
	double lo = g->align ? 0 : -0.5, span = g->align ? (double)(n - 1) : (double)n;
	if (span <= 0)
		return SP_EMIT("mul(%s, 0.0)", v);
	const char *a = SP_EMIT("sub(%s, %.17g)", v, lo);
	a = a ? SP_EMIT("abs(%s)", a) : NULL;
	const char *ex = a ? SP_EMIT("mod(%s, %.17g)", a, span) : NULL;
	const char *fl = ex ? SP_EMIT("div(%s, %.17g)", a, span) : NULL;
	fl = fl ? SP_EMIT("floor(%s)", fl) : NULL;
	const char *odd = fl ? SP_EMIT("mod(%s, 2.0)", fl) : NULL;
	odd = odd ? SP_EMIT("gt(%s, 0.5)", odd) : NULL;
	const char *back = odd ? SP_EMIT("sub(%.17g, %s)", span + lo, ex) : NULL;
	const char *fwd = back ? SP_EMIT("add(%s, %.17g)", ex, lo) : NULL;
	const char *r = fwd ? SP_EMIT("where(%s, %s, %s)", odd, back, fwd) : NULL;
	return r ? SP_EMIT("clip(%s, 0.0, %" PRId64 ".0)", r, n - 1) : NULL;
}

/* the padding mode applied to a source coordinate */
static const char *gs_pad(struct gs_ctx *g, const char *v, int64_t n)
{
	struct ox_node_ctx *c = g->c;
	if (g->border)
		return SP_EMIT("clip(%s, 0.0, %" PRId64 ".0)", v, n - 1);
	return g->reflect ? gs_reflect(g, v, n) : v;
}

/* acc += x at integer coordinates (cx, cy) times weight w (NULL: 1);
 * positions outside x read 0 */
static int gs_tap(struct gs_ctx *g, const char *cx, const char *cy, const char *w)
{
	struct ox_node_ctx *c = g->c;
	const char *vx = SP_EMIT("ge(%s, 0.0)", cx), *m;
	m = vx ? SP_EMIT("le(%s, %" PRId64 ".0)", cx, g->W - 1) : NULL;
	m = m ? SP_EMIT("and(%s, %s)", vx, m) : NULL;
	const char *vy = m ? SP_EMIT("ge(%s, 0.0)", cy) : NULL;
	m = vy ? SP_EMIT("and(%s, %s)", m, vy) : NULL;
	vy = m ? SP_EMIT("le(%s, %" PRId64 ".0)", cy, g->H - 1) : NULL;
	m = vy ? SP_EMIT("and(%s, %s)", m, vy) : NULL;
	const char *ix = m ? SP_EMIT("clip(%s, 0.0, %" PRId64 ".0)", cx, g->W - 1) : NULL;
	const char *iy = ix ? SP_EMIT("clip(%s, 0.0, %" PRId64 ".0)", cy, g->H - 1) : NULL;
	ix = iy ? SP_EMIT("cast(%s, dtype=i64)", ix) : NULL;
	iy = ix ? SP_EMIT("cast(%s, dtype=i64)", iy) : NULL;
	const char *f = iy ? SP_EMIT("mul(%s, %" PRId64 ")", iy, g->W) : NULL;
	f = f ? SP_EMIT("add(%s, %s)", f, ix) : NULL;
	f = f ? SP_EMIT("add(%s, %s)", f, g->base) : NULL;
	const char *v = f ? SP_EMIT("gather(%s, %s, axis=0)", g->xf, f) : NULL;
	const char *mw = v ? SP_EMIT("cast(%s, dtype=%s)", m, tir_dtype_name((enum tir_dtype)ox_type(c->m, cx)->dtype)) : NULL;
	if (mw && w)
		mw = SP_EMIT("mul(%s, %s)", mw, w);
	mw = mw ? SP_EMIT("unsqueeze(%s, axis=3)", mw) : NULL;
	v = mw ? SP_EMIT("mul(%s, %s)", v, mw) : NULL;
	g->acc = v && g->acc ? SP_EMIT("add(%s, %s)", g->acc, v) : v;
	return g->acc ? 0 : -c->m->err->code;
}

/* cubic convolution weights (A = -0.75) of the 4 taps at fraction t */
static int gs_cubic(struct gs_ctx *g, const char *t, const char **w)
{
	struct ox_node_ctx *c = g->c;
	const double A = -0.75;
	for (int k = 0; k < 4; k++) {
		/* the distance of tap k from the point: t + 1, t, 1 - t, 2 - t */
		const char *d = k == 0 ? SP_EMIT("add(%s, 1.0)", t) : k == 1 ? t : SP_EMIT("sub(%d.0, %s)", k - 1, t);
		if (!d)
			return -c->m->err->code;
		if (k == 1 || k == 2) { /* ((A + 2) d - (A + 3)) d d + 1 */
			const char *p = SP_EMIT("mul(%s, %.17g)", d, A + 2);
			p = p ? SP_EMIT("sub(%s, %.17g)", p, A + 3) : NULL;
			p = p ? SP_EMIT("mul(%s, %s)", p, d) : NULL;
			p = p ? SP_EMIT("mul(%s, %s)", p, d) : NULL;
			w[k] = p ? SP_EMIT("add(%s, 1.0)", p) : NULL;
		} else { /* ((A d - 5A) d + 8A) d - 4A */
			const char *p = SP_EMIT("mul(%s, %.17g)", d, A);
			p = p ? SP_EMIT("sub(%s, %.17g)", p, 5 * A) : NULL;
			p = p ? SP_EMIT("mul(%s, %s)", p, d) : NULL;
			p = p ? SP_EMIT("add(%s, %.17g)", p, 8 * A) : NULL;
			p = p ? SP_EMIT("mul(%s, %s)", p, d) : NULL;
			w[k] = p ? SP_EMIT("sub(%s, %.17g)", p, 4 * A) : NULL;
		}
		if (!w[k])
			return -c->m->err->code;
	}
	return 0;
}

/* GridSample (opset 16, 2-D): the grid's coordinates unnormalized, the
 * padding mode applied (to each tap of bicubic), each tap's value a
 * gather from x with its channels last, weighted and summed; PyTorch's
 * grid_sample, which ONNX's tests were made with */
int ox_op_gridsample(struct ox_node_ctx *c)
{
	const char *x = ox_in(c, 0), *gr = x ? ox_in(c, 1) : NULL;
	const struct tir_ntype *tx = gr ? ox_type(c->m, x) : NULL, *tg = tx ? ox_type(c->m, gr) : NULL;
	if (!tg)
		return -c->m->err->code;
	if (tx->rank != 4 || tg->rank != 4 || tg->shape[3] != 2 || tg->shape[0] != tx->shape[0])
		return ox_fail(c->m, TIR_ETYPE, "GridSample of x of rank %d and a grid of rank %d (x [N, C, H, W] and "
			       "grid [N, H_out, W_out, 2])", tx->rank, tg->rank);
	char b[64], b2[64], sh[300];
	const char *mode = ox_attr_str(c, "mode", "bilinear", b, sizeof b);
	const char *pm = ox_attr_str(c, "padding_mode", "zeros", b2, sizeof b2);
	const Onnx__AttributeProto *al = ox_attr(c, "align_corners");
	int m = !strcmp(mode, "bilinear") ? 0 : !strcmp(mode, "nearest") ? 1 : !strcmp(mode, "bicubic") ? 2 : -1;
	if (m < 0)
		return ox_fail(c->m, TIR_ETYPE, "mode '%s' (bilinear, nearest or bicubic)", mode);
	if (strcmp(pm, "zeros") && strcmp(pm, "border") && strcmp(pm, "reflection"))
		return ox_fail(c->m, TIR_ETYPE, "padding_mode '%s' (zeros, border or reflection)", pm);
	int64_t N = tx->shape[0], C = tx->shape[1], H = tx->shape[2], W = tx->shape[3];
	int64_t Ho = tg->shape[1], Wo = tg->shape[2];
	if (!H || !W)
		return ox_fail(c->m, TIR_ETYPE, "x has no element to sample");
	enum tir_dtype dt = (enum tir_dtype)tx->dtype;
	struct gs_ctx g = {c, NULL, NULL, H, W, al && al->i, !strcmp(pm, "border"), !strcmp(pm, "reflection"), NULL};
	int64_t s2[2] = {N * H * W, C}, s3[3] = {N, Ho, Wo}, s1[3] = {N, 1, 1};
	const char *xt = SP_EMIT("transpose(%s, perm=[0, 2, 3, 1])", x);
	g.xf = xt ? SP_EMIT("reshape(%s, shape=%s)", xt, ox_shape_str(sh, sizeof sh, 2, s2)) : NULL;
	const char *bn = g.xf ? SP_EMIT("arange(0, %" PRId64 ", %" PRId64 ", dtype=i64)", N * H * W, H * W) : NULL;
	g.base = bn ? SP_EMIT("reshape(%s, shape=%s)", bn, ox_shape_str(sh, sizeof sh, 3, s1)) : NULL;
	/* the grid's x and y, unnormalized */
	const char *co[2] = {NULL, NULL};
	for (int k = 0; k < 2 && g.base; k++) {
		int64_t n = k ? H : W;
		const char *v = SP_EMIT("slice(%s, axis=3, start=%d, stop=%d)", gr, k, k + 1);
		v = v ? SP_EMIT("reshape(%s, shape=%s)", v, ox_shape_str(sh, sizeof sh, 3, s3)) : NULL;
		v = v ? SP_EMIT("add(%s, 1.0)", v) : NULL;
		if (g.align)
			v = v ? SP_EMIT("mul(%s, %.17g)", v, (double)(n - 1) / 2) : NULL;
		else {
			v = v ? SP_EMIT("mul(%s, %" PRId64 ".0)", v, n) : NULL;
			v = v ? SP_EMIT("sub(%s, 1.0)", v) : NULL;
			v = v ? SP_EMIT("div(%s, 2.0)", v) : NULL;
		}
		co[k] = v && m != 2 ? gs_pad(&g, v, n) : v;
		if (!co[k])
			return -c->m->err->code;
	}
	if (!co[1])
		return -c->m->err->code;
	if (m == 1) {
		const char *rx = SP_EMIT("round(%s)", co[0]), *ry = rx ? SP_EMIT("round(%s)", co[1]) : NULL;
		if (!ry || gs_tap(&g, rx, ry, NULL))
			return -c->m->err->code;
	} else {
		const char *f[2], *t[2];
		for (int k = 0; k < 2; k++) {
			f[k] = SP_EMIT("floor(%s)", co[k]);
			t[k] = f[k] ? SP_EMIT("sub(%s, %s)", co[k], f[k]) : NULL;
			if (!t[k])
				return -c->m->err->code;
		}
		int ntap = m == 2 ? 4 : 2;
		const char *w[2][4], *p[2][4];
		for (int k = 0; k < 2; k++) {
			if (m == 2 && gs_cubic(&g, t[k], w[k]))
				return -c->m->err->code;
			if (m == 0) {
				w[k][0] = SP_EMIT("sub(1.0, %s)", t[k]);
				w[k][1] = t[k];
			}
			for (int j = 0; j < ntap; j++) {
				int off = m == 2 ? j - 1 : j;
				p[k][j] = off ? SP_EMIT("add(%s, %d.0)", f[k], off) : f[k];
				if (p[k][j] && m == 2)
					p[k][j] = gs_pad(&g, p[k][j], k ? H : W);
				if (!p[k][j] || !w[k][0])
					return -c->m->err->code;
			}
		}
		for (int i = 0; i < ntap; i++)
			for (int j = 0; j < ntap; j++) {
				const char *ww = SP_EMIT("mul(%s, %s)", w[1][i], w[0][j]);
				if (!ww || gs_tap(&g, p[0][j], p[1][i], ww))
					return -c->m->err->code;
			}
	}
	const char *y = SP_EMIT("transpose(%s, perm=[0, 3, 1, 2])", g.acc);
	if (y && ox_type(c->m, y)->dtype != dt)
		y = SP_EMIT("cast(%s, dtype=%s)", y, tir_dtype_name(dt));
	return y ? ox_bind(c->m, ox_out_name(c, 0), y) : -c->m->err->code;
}

/* ---- RoiAlign ---- */

/* one axis of RoiAlign's sampling points: for every roi, its start and
 * bin size from the roi's two coordinates (columns k and k + 2 of rois),
 * the points at start + bin * u (u: each bin's sample offsets, a
 * constant), then the bilinear rule of ONNX's RoiAlign: a point past
 * [-1, n] reads 0 (*valid), one below 0 reads 0's, one at or past n - 1
 * the last.  Gives the low and high integer positions and their weights,
 * shaped to broadcast on axis a of [R, Sh, Sw] */
static int ra_axis(struct ox_node_ctx *c, const char *rois, int k, int64_t n, int64_t bins, int64_t sr,
		   double scale, bool half_pixel, int a, const char **lo, const char **hi, const char **wlo,
		   const char **whi, const char **valid)
{
	double *u = malloc((size_t)(bins * sr) * sizeof *u);
	if (!u)
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	for (int64_t p = 0; p < bins; p++)
		for (int64_t i = 0; i < sr; i++)
			u[p * sr + i] = (double)p + ((double)i + 0.5) / (double)sr;
	const char *uc = sp_const(c, "roi_offsets", TIR_DTYPE_F32, bins * sr, u, a, 3);
	free(u);
	const char *s0 = uc ? SP_EMIT("slice(%s, axis=1, start=%d, stop=%d)", rois, k, k + 1) : NULL;
	const char *s1 = s0 ? SP_EMIT("slice(%s, axis=1, start=%d, stop=%d)", rois, k + 2, k + 3) : NULL;
	s0 = s1 ? SP_EMIT("sub(mul(%s, %.9g), %g)", s0, scale, half_pixel ? 0.5 : 0.0) : NULL;
	s1 = s0 ? SP_EMIT("sub(mul(%s, %.9g), %g)", s1, scale, half_pixel ? 0.5 : 0.0) : NULL;
	const char *len = s1 ? SP_EMIT("sub(%s, %s)", s1, s0) : NULL;
	if (len && !half_pixel)
		len = SP_EMIT("maximum(%s, 1.0)", len);
	const char *bin = len ? SP_EMIT("div(%s, %" PRId64 ".0)", len, bins) : NULL;
	s0 = bin ? SP_EMIT("unsqueeze(%s, axis=2)", s0) : NULL;
	bin = s0 ? SP_EMIT("unsqueeze(%s, axis=2)", bin) : NULL;
	const char *v = bin ? SP_EMIT("add(%s, mul(%s, %s))", s0, bin, uc) : NULL;
	const char *ok = v ? SP_EMIT("and(ge(%s, -1.0), le(%s, %" PRId64 ".0))", v, v, n) : NULL;
	*valid = ok;
	v = ok ? SP_EMIT("maximum(%s, 0.0)", v) : NULL;
	const char *f = v ? SP_EMIT("floor(%s)", v) : NULL;
	const char *last = f ? SP_EMIT("ge(%s, %" PRId64 ".0)", f, n - 1) : NULL;
	*lo = last ? SP_EMIT("where(%s, %" PRId64 ".0, %s)", last, n - 1, f) : NULL;
	*hi = *lo ? SP_EMIT("where(%s, %" PRId64 ".0, add(%s, 1.0))", last, n - 1, f) : NULL;
	v = *hi ? SP_EMIT("where(%s, %" PRId64 ".0, %s)", last, n - 1, v) : NULL;
	*whi = v ? SP_EMIT("sub(%s, %s)", v, *lo) : NULL;
	*wlo = *whi ? SP_EMIT("sub(1.0, %s)", *whi) : NULL;
	return *wlo ? 0 : -c->m->err->code;
}

/* RoiAlign (opsets 10-17), mode avg with a fixed sampling_ratio: each
 * roi's sampling points on a grid of output_height x output_width bins
 * of sampling_ratio² points, each point's bilinear value a sum of 4
 * gathers from X with its channels last, the mean of each bin's */
int ox_op_roialign(struct ox_node_ctx *c)
{
	const char *x = ox_in(c, 0), *rois = x ? ox_in(c, 1) : NULL, *bi = rois ? ox_in(c, 2) : NULL;
	const struct tir_ntype *tx = bi ? ox_type(c->m, x) : NULL, *tr = tx ? ox_type(c->m, rois) : NULL;
	const struct tir_ntype *tb = tr ? ox_type(c->m, bi) : NULL;
	if (!tb)
		return -c->m->err->code;
	if (tx->rank != 4 || tr->rank != 2 || tr->shape[1] != 4 || tb->rank != 1 || tb->shape[0] != tr->shape[0])
		return ox_fail(c->m, TIR_ETYPE, "RoiAlign of X of rank %d, rois of rank %d and batch_indices of rank %d "
			       "(X [N, C, H, W], rois [R, 4], batch_indices [R])", tx->rank, tr->rank, tb->rank);
	char b[64], b2[64], sh[300];
	const char *mode = ox_attr_str(c, "mode", "avg", b, sizeof b);
	const char *ctm = ox_attr_str(c, "coordinate_transformation_mode", c->opset < 16 ? "output_half_pixel" : "half_pixel",
				 b2, sizeof b2);
	if (strcmp(mode, "avg"))
		return ox_fail(c->m, TIR_EUNSUPPORTED, "RoiAlign's mode '%s' is not supported (avg only)", mode);
	if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
		return ox_fail(c->m, TIR_ETYPE, "coordinate_transformation_mode '%s'", ctm);
	const Onnx__AttributeProto *a;
	int64_t oh = (a = ox_attr(c, "output_height")) ? a->i : 1, ow = (a = ox_attr(c, "output_width")) ? a->i : 1;
	int64_t sr = (a = ox_attr(c, "sampling_ratio")) ? a->i : 0;
	double scale = (a = ox_attr(c, "spatial_scale")) ? a->f : 1.0;
	if (sr == 0)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "RoiAlign's sampling_ratio 0 (as many points as each roi's size "
			       "gives, known only at run time) is not supported");
	if (oh < 1 || ow < 1 || sr < 0 || oh > 4096 || ow > 4096 || sr > 64)
		return ox_fail(c->m, TIR_ETYPE, "output_height %" PRId64 ", output_width %" PRId64 " or sampling_ratio %"
			       PRId64 " out of range", oh, ow, sr);
	int64_t N = tx->shape[0], C = tx->shape[1], H = tx->shape[2], W = tx->shape[3], R = tr->shape[0];
	if (!H || !W)
		return ox_fail(c->m, TIR_ETYPE, "X has no element to sample");
	bool hp = !strcmp(ctm, "half_pixel");
	enum tir_dtype dt = (enum tir_dtype)tx->dtype;
	const char *r = SP_EMIT("cast(%s, dtype=f32)", rois);
	const char *ylo, *yhi, *wylo, *wyhi, *vy, *xlo, *xhi, *wxlo, *wxhi, *vx;
	if (!r || ra_axis(c, r, 1, H, oh, sr, scale, hp, 1, &ylo, &yhi, &wylo, &wyhi, &vy) ||
	    ra_axis(c, r, 0, W, ow, sr, scale, hp, 2, &xlo, &xhi, &wxlo, &wxhi, &vx))
		return -c->m->err->code;
	int64_t s2[2] = {N * H * W, C}, s3[3] = {R, 1, 1};
	const char *xt = SP_EMIT("transpose(%s, perm=[0, 2, 3, 1])", x);
	const char *xf = xt ? SP_EMIT("reshape(%s, shape=%s)", xt, ox_shape_str(sh, sizeof sh, 2, s2)) : NULL;
	const char *base = xf ? SP_EMIT("mul(cast(%s, dtype=i64), %" PRId64 ")", bi, H * W) : NULL;
	base = base ? SP_EMIT("reshape(%s, shape=%s)", base, ox_shape_str(sh, sizeof sh, 3, s3)) : NULL;
	const char *ok = base ? SP_EMIT("cast(and(%s, %s), dtype=f32)", vy, vx) : NULL;
	const char *acc = NULL;
	const char *ys[2] = {ylo, yhi}, *xs[2] = {xlo, xhi}, *wy[2] = {wylo, wyhi}, *wx[2] = {wxlo, wxhi};
	for (int i = 0; i < 2 && ok; i++)
		for (int j = 0; j < 2; j++) {
			const char *f = SP_EMIT("add(add(mul(cast(%s, dtype=i64), %" PRId64 "), cast(%s, dtype=i64)), %s)", ys[i],
						W, xs[j], base);
			const char *v = f ? SP_EMIT("gather(%s, %s, axis=0)", xf, f) : NULL;
			const char *w = v ? SP_EMIT("unsqueeze(mul(mul(%s, %s), %s), axis=3)", wy[i], wx[j], ok) : NULL;
			v = w ? SP_EMIT("mul(%s, cast(%s, dtype=f32))", w, v) : NULL;
			acc = v && acc ? SP_EMIT("add(%s, %s)", acc, v) : v;
			if (!acc)
				return -c->m->err->code;
		}
	int64_t s6[6] = {R, oh, sr, ow, sr, C};
	const char *y = acc ? SP_EMIT("reshape(%s, shape=%s)", acc, ox_shape_str(sh, sizeof sh, 6, s6)) : NULL;
	y = y ? SP_EMIT("mean(%s, axis=[2, 4])", y) : NULL;
	y = y ? SP_EMIT("transpose(%s, perm=[0, 3, 1, 2])", y) : NULL;
	if (y && dt != TIR_DTYPE_F32)
		y = SP_EMIT("cast(%s, dtype=%s)", y, tir_dtype_name(dt));
	return y ? ox_bind(c->m, ox_out_name(c, 0), y) : -c->m->err->code;
}

/* ---- MaxUnpool ---- */

/* MaxUnpool: each output position the value whose index (MaxPool's flat
 * Indices) is that position, 0 where none is: per plane, X's values as a
 * row times the comparison of every index with every position of the
 * plane (a matmul), divided by how many indices chose the position.  Quadratic in the plane's size, so
 * limited to 2^28 comparisons. */
int ox_op_maxunpool(struct ox_node_ctx *c)
{
	const char *x = ox_in(c, 0), *ix = x ? ox_in(c, 1) : NULL;
	const struct tir_ntype *tx = ix ? ox_type(c->m, x) : NULL, *ti = tx ? ox_type(c->m, ix) : NULL;
	if (!ti)
		return -c->m->err->code;
	if (ti->rank != tx->rank || memcmp(ti->shape, tx->shape, sizeof(int64_t) * (size_t)tx->rank))
		return ox_fail(c->m, TIR_ETYPE, "indices not of X's shape");
	struct sp_win win;
	if (sp_window(c, tx, NULL, &win))
		return -c->m->err->code;
	int64_t out[TIR_MAX_RANK], want[TIR_MAX_RANK];
	out[0] = tx->shape[0];
	out[1] = tx->shape[1];
	for (int a = 0; a < win.n; a++)
		out[2 + a] = (win.in[a] - 1) * win.s[a] - win.p0[a] - win.p1[a] + win.k[a];
	memcpy(want, out, sizeof out);
	if (ox_has_in(c, 2)) {
		const struct ox_const *os = sp_known(c, 2);
		if (!os)
			return ox_fail(c->m, TIR_EUNSUPPORTED, "its output_shape is computed at run time; tir needs it known "
				       "at import (a static shape)");
		if (os->n != tx->rank)
			return ox_fail(c->m, TIR_ETYPE, "output_shape of %" PRId64 " values for rank %d", os->n, tx->rank);
		/* the indices are of the default shape's positions; the result
		 * is then padded or cut at the end of each axis to this one */
		for (int a = 0; a < tx->rank; a++)
			want[a] = os->i[a];
	}
	double P = 1, J = 1, NC = (double)out[0] * (double)out[1];
	for (int a = 0; a < win.n; a++) {
		if (out[2 + a] < 1 || out[2 + a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "an output of %" PRId64 " on spatial axis %d", out[2 + a], a);
		P *= (double)out[2 + a];
		J *= (double)win.in[a];
	}
	if (want[0] != tx->shape[0] || want[1] != tx->shape[1])
		return ox_fail(c->m, TIR_ETYPE, "output_shape changes the batch or channels");
	for (int a = 2; a < tx->rank; a++)
		if (want[a] < 1 || want[a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "output_shape[%d] is %" PRId64, a, want[a]);
	if (NC * J * P > (double)(INT64_C(1) << 28))
		return ox_fail(c->m, TIR_EUNSUPPORTED, "MaxUnpool of %.0f x %.0f positions per plane is not supported "
			       "(each index compared with each position: at most 2^28 comparisons)", J, P);
	char sh[300];
	int64_t N = out[0], C = out[1], s4[4] = {N, C, (int64_t)J, 1}, p4[4] = {N, C, 1, (int64_t)P}, r4[4] = {N, C, 1, (int64_t)J};
	const char *pos = SP_EMIT("arange(0, %" PRId64 ", dtype=i64)", N * C * (int64_t)P);
	pos = pos ? SP_EMIT("reshape(%s, shape=%s)", pos, ox_shape_str(sh, sizeof sh, 4, p4)) : NULL;
	const char *i = pos ? SP_EMIT("reshape(cast(%s, dtype=i64), shape=%s)", ix, ox_shape_str(sh, sizeof sh, 4, s4)) : NULL;
	enum tir_dtype dt = (enum tir_dtype)tx->dtype;
	const char *ft = dt == TIR_DTYPE_F64 ? "f64" : "f32";
	const char *m = i ? SP_EMIT("cast(eq(%s, %s), dtype=%s)", i, pos, ft) : NULL;
	const char *row = m ? SP_EMIT("reshape(cast(%s, dtype=%s), shape=%s)", x, ft, ox_shape_str(sh, sizeof sh, 4, r4)) : NULL;
	const char *y = row ? SP_EMIT("matmul(%s, %s)", row, m) : NULL;
	/* a position two windows chose (overlapping ones) took its value twice */
	const char *cnt = y ? SP_EMIT("sum(%s, axis=2, keepdims=true)", m) : NULL;
	y = cnt ? SP_EMIT("div(%s, maximum(%s, 1.0))", y, cnt) : NULL;
	y = y ? SP_EMIT("reshape(%s, shape=%s)", y, ox_shape_str(sh, sizeof sh, tx->rank, out)) : NULL;
	for (int a = 2; a < tx->rank && y; a++) {
		if (want[a] > out[a])
			y = SP_EMIT("pad(%s, pads=[%s[0, %" PRId64 "]%s])", y, a == 2 ? "[0, 0], [0, 0], " : a == 3 ?
				    "[0, 0], [0, 0], [0, 0], " : "[0, 0], [0, 0], [0, 0], [0, 0], ", want[a] - out[a],
				    a + 1 == tx->rank ? "" : a + 2 == tx->rank ? ", [0, 0]" : ", [0, 0], [0, 0]");
		else if (want[a] < out[a])
			y = SP_EMIT("slice(%s, axis=%d, start=0, stop=%" PRId64 ")", y, a, want[a]);
	}
	if (y && strcmp(ft, tir_dtype_name(dt)))
		y = SP_EMIT("cast(%s, dtype=%s)", y, tir_dtype_name(dt));
	return y ? ox_bind(c->m, ox_out_name(c, 0), y) : -c->m->err->code;
}

/* ConvTranspose of a 3-D input, as nodes.c's of 2-D: a convolution of x
 * with s - 1 zeros between its elements (a reshape to unit axes, pad,
 * reshape), padded by the dilated kernel's extent - 1 less the pads (cut
 * where negative; output_padding more at the end), by the weight flipped
 * and its in and out channels swapped per group */
int ox_op_convtranspose3d(struct ox_node_ctx *c)
{
	const char *x = ox_in(c, 0), *w = x ? ox_in(c, 1) : NULL;
	const struct tir_ntype *tx = w ? ox_type(c->m, x) : NULL, *tw = tx ? ox_type(c->m, w) : NULL;
	if (!tw)
		return -c->m->err->code;
	if (tw->rank != 5)
		return ox_fail(c->m, TIR_ETYPE, "a weight of rank %d for an input of rank 5", tw->rank);
	struct sp_win win;
	if (sp_window(c, tx, tw->shape + 2, &win))
		return -c->m->err->code;
	const Onnx__AttributeProto *ga = ox_attr(c, "group"), *os = ox_attr(c, "output_shape"),
				   *opd = ox_attr(c, "output_padding");
	int64_t g = ga ? ga->i : 1, N = tx->shape[0], C = tx->shape[1], Og = tw->shape[1];
	if (g < 1 || C % g || tw->shape[0] != C)
		return ox_fail(c->m, TIR_ETYPE, "group %" PRId64 " does not fit %" PRId64 " channels and a weight of %" PRId64,
			       g, C, tw->shape[0]);
	if ((os && os->n_ints != 3) || (opd && opd->n_ints != 3))
		return ox_fail(c->m, TIR_ETYPE, "output_shape or output_padding not of 3 axes");
	char b[32], sh[300];
	const char *ap = ox_attr_str(c, "auto_pad", "NOTSET", b, sizeof b);
	bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"), upper = !strcmp(ap, "SAME_UPPER");
	int64_t op[3], ext[3], front[3], back[3];
	for (int a = 0; a < 3; a++) {
		int64_t len = win.in[a], s = win.s[a];
		op[a] = opd ? opd->ints[a] : 0;
		ext[a] = (win.k[a] - 1) * win.d[a] + 1;
		if (op[a] < 0 || op[a] > TIR_MAX_DIM ||
		    (double)(len - 1) * (double)s + (double)ext[a] + (double)op[a] > (double)TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "a result of %" PRId64 " x %" PRId64 " strides", len, s);
		if (os || same) {
			int64_t out = os ? os->ints[a] : len * s;
			int64_t tot = s * (len - 1) + op[a] + ext[a] - out;
			if (tot < 0) { /* zeros after the full result, as output_padding gives */
				op[a] -= tot;
				tot = 0;
			}
			win.p0[a] = upper || !same ? tot / 2 : tot - tot / 2;
			win.p1[a] = tot - win.p0[a];
		}
		if (op[a] > TIR_MAX_DIM)
			return ox_fail(c->m, TIR_ETYPE, "output_shape past %" PRId64, TIR_MAX_DIM);
		front[a] = ext[a] - 1 - win.p0[a];
		back[a] = ext[a] - 1 - win.p1[a] + op[a];
	}
	if (win.s[0] > 1 || win.s[1] > 1 || win.s[2] > 1) {
		int64_t s8[8] = {N, C, win.in[0], 1, win.in[1], 1, win.in[2], 1};
		int64_t s5[5] = {N, C, win.in[0] * win.s[0], win.in[1] * win.s[1], win.in[2] * win.s[2]};
		x = SP_EMIT("reshape(%s, shape=%s)", x, ox_shape_str(sh, sizeof sh, 8, s8));
		x = x ? SP_EMIT("pad(%s, pads=[[0, 0], [0, 0], [0, 0], [0, %" PRId64 "], [0, 0], [0, %" PRId64 "], [0, 0], [0, %"
				PRId64 "]])", x, win.s[0] - 1, win.s[1] - 1, win.s[2] - 1) : NULL;
		x = x ? SP_EMIT("reshape(%s, shape=%s)", x, ox_shape_str(sh, sizeof sh, 5, s5)) : NULL;
		for (int a = 0; a < 3 && x; a++)
			if (win.s[a] > 1)
				x = SP_EMIT("slice(%s, axis=%d, start=0, stop=%" PRId64 ")", x, 2 + a,
					    (win.in[a] - 1) * win.s[a] + 1);
	}
	int64_t z0[3], z1[3];
	for (int a = 0; a < 3; a++) {
		z0[a] = front[a] > 0 ? front[a] : 0;
		z1[a] = back[a] > 0 ? back[a] : 0;
	}
	if (x && (z0[0] || z0[1] || z0[2] || z1[0] || z1[1] || z1[2])) {
		struct tir_str s = {0};
		sp_pads(&s, 3, z0, z1);
		x = s.oom ? NULL : SP_EMIT("pad(%s, pads=%s)", x, s.s);
		tir_str_free(&s);
	}
	for (int a = 0; a < 3 && x; a++) {
		if (front[a] >= 0 && back[a] >= 0)
			continue;
		int64_t n = ox_type(c->m, x)->shape[2 + a], st = front[a] < 0 ? -front[a] : 0;
		int64_t sp = n - (back[a] < 0 ? -back[a] : 0);
		if (sp <= st)
			return ox_fail(c->m, TIR_ETYPE, "pads larger than the result");
		x = SP_EMIT("slice(%s, axis=%d, start=%" PRId64 ", stop=%" PRId64 ")", x, 2 + a, st, sp);
	}
	/* [C, O/g, k...] flipped -> [g, C/g, O/g, k...] -> [g, O/g, C/g, k...] -> [O, C/g, k...] */
	const char *wf = x ? w : NULL;
	for (int a = 2; a < 5 && wf; a++)
		wf = SP_EMIT("slice(%s, axis=%d, step=-1)", wf, a);
	int64_t w6[6] = {g, C / g, Og, tw->shape[2], tw->shape[3], tw->shape[4]};
	int64_t w5[5] = {g * Og, C / g, tw->shape[2], tw->shape[3], tw->shape[4]};
	if (wf && g > 1) {
		wf = SP_EMIT("reshape(%s, shape=%s)", wf, ox_shape_str(sh, sizeof sh, 6, w6));
		wf = wf ? SP_EMIT("transpose(%s, perm=[0, 2, 1, 3, 4, 5])", wf) : NULL;
		wf = wf ? SP_EMIT("reshape(%s, shape=%s)", wf, ox_shape_str(sh, sizeof sh, 5, w5)) : NULL;
	} else if (wf) {
		wf = SP_EMIT("transpose(%s, perm=[1, 0, 2, 3, 4])", wf);
	}
	if (!wf)
		return -c->m->err->code;
	struct sp_win unit = win;
	for (int a = 0; a < 3; a++)
		unit.s[a] = 1;
	const char *y = sp_conv3d(c, x, wf, &unit, g);
	y = sp_bias(c, y, g * Og);
	return y ? ox_bind(c->m, ox_out_name(c, 0), y) : -c->m->err->code;
}
