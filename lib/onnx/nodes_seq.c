/*
 * nodes_seq.c — the ONNX ops over sequences and indices: RNN, GRU and
 * LSTM (each time step written out as tir statements: the sequence length
 * is static), GatherND, ScatterND, ScatterElements and Scatter, Reverse-
 * Sequence, and BatchNormalization in training mode.  Registered in
 * nodes.c's table; the helpers every emitter shares are emit.c's.
 */
#include "onnx.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The emitters below chain statements without testing each: ox_emit
 * does nothing once an error is set, so a failed step's NULL only
 * reaches statements that are never made, and the end tests once. */
#define E(base, ...) ox_emit(c->m, base, __VA_ARGS__)

/* ---- RNN, GRU, LSTM ---- */

enum cell { CELL_RNN, CELL_GRU, CELL_LSTM };

/* One activation of the node's list (activations, activation_alpha,
 * activation_beta): its name and parameters; the parameters are taken in
 * order by the activations that have them, as onnxruntime reads them. */
struct act {
	char name[24];
	double alpha, beta;
};

static int rnn_acts(struct ox_node_ctx *c, int per_dir, int dirs, const char *const *def, struct act *out)
{
	const Onnx__AttributeProto *a = ox_attr(c, "activations"), *al = ox_attr(c, "activation_alpha"),
				   *be = ox_attr(c, "activation_beta");
	int n = per_dir * dirs;
	if (a && (int)a->n_strings != n && (int)a->n_strings != per_dir)
		return ox_fail(c->m, TIR_ETYPE, "%zu activations, expected %d", a->n_strings, n);
	size_t ka = 0, kb = 0;
	for (int k = 0; k < n; k++) {
		struct act *f = &out[k];
		memset(f, 0, sizeof *f);
		if (a) {
			const ProtobufCBinaryData *s = &a->strings[(size_t)k % a->n_strings];
			if (s->len >= sizeof f->name)
				return ox_fail(c->m, TIR_EUNSUPPORTED, "activation '%.*s' is not supported",
					       (int)(s->len > 40 ? 40 : s->len), (const char *)s->data);
			memcpy(f->name, s->data, s->len);
		} else {
			snprintf(f->name, sizeof f->name, "%s", def[k % per_dir]);
		}
		/* onnxruntime's defaults for the parameters not given */
		static const struct {
			const char *name;
			int nparam;
			double alpha, beta;
		} known[] = {
			{"Relu", 0, 0, 0},	    {"Tanh", 0, 0, 0},		 {"Sigmoid", 0, 0, 0},
			{"Softsign", 0, 0, 0},	    {"Softplus", 0, 0, 0},	 {"Affine", 2, 1, 0},
			{"LeakyRelu", 1, 0.01, 0},  {"ThresholdedRelu", 1, 1, 0}, {"ScaledTanh", 2, 1, 1},
			{"HardSigmoid", 2, 0.2, 0.5}, {"Elu", 1, 1, 0},
		};
		int j = 0, nk = (int)(sizeof known / sizeof known[0]);
		while (j < nk && strcmp(known[j].name, f->name))
			j++;
		if (j == nk)
			return ox_fail(c->m, TIR_EUNSUPPORTED, "activation '%s' is not supported", f->name);
		f->alpha = known[j].alpha;
		f->beta = known[j].beta;
		if (known[j].nparam >= 1 && al && ka < al->n_floats)
			f->alpha = al->floats[ka++];
		if (known[j].nparam >= 2 && be && kb < be->n_floats)
			f->beta = be->floats[kb++];
	}
	return 0;
}

/* f(x), clipped to [-clip, clip] first when clip > 0 */
static const char *rnn_act(struct ox_node_ctx *c, const char *base, const struct act *f, double clip,
			   const char *x)
{
	if (clip > 0)
		x = E(base, "clip(%s, %.9g, %.9g)", x, -clip, clip);
	const char *n = f->name;
	if (!strcmp(n, "Relu") || !strcmp(n, "Tanh") || !strcmp(n, "Sigmoid") || !strcmp(n, "Softsign") ||
	    !strcmp(n, "Softplus")) {
		char lower[24];
		size_t k = 0;
		for (; n[k]; k++)
			lower[k] = (char)(n[k] >= 'A' && n[k] <= 'Z' ? n[k] - 'A' + 'a' : n[k]);
		lower[k] = 0;
		return E(base, "%s(%s)", lower, x);
	}
	if (!strcmp(n, "Affine"))
		return E(base, "add(mul(%s, %.9g), %.9g)", x, f->alpha, f->beta);
	if (!strcmp(n, "LeakyRelu"))
		return E(base, "leaky_relu(%s, %.9g)", x, f->alpha);
	if (!strcmp(n, "ThresholdedRelu"))
		return E(base, "where(gt(%s, %.9g), %s, 0.0)", x, f->alpha, x);
	if (!strcmp(n, "ScaledTanh"))
		return E(base, "mul(tanh(mul(%s, %.9g)), %.9g)", x, f->beta, f->alpha);
	if (!strcmp(n, "HardSigmoid"))
		return E(base, "hardsigmoid(%s, %.9g, %.9g)", x, f->alpha, f->beta);
	return E(base, "elu(%s, %.9g)", x, f->alpha);
}

/* columns [k*h, (k+1)*h) of a [B, G*H] value */
static const char *gate(struct ox_node_ctx *c, const char *base, const char *x, int64_t k, int64_t h)
{
	return E(base, "slice(%s, axis=1, start=%" PRId64 ", stop=%" PRId64 ")", x, k * h, (k + 1) * h);
}

/* entry d of a [D, ...] value, the leading axis dropped */
static const char *dir_of(struct ox_node_ctx *c, const char *base, const char *x, const struct tir_type *t, int d)
{
	char b[300];
	const char *s = E(base, "slice(%s, axis=0, start=%d, stop=%d)", x, d, d + 1);
	return E(base, "reshape(%s, shape=%s)", s, ox_shape_str(b, sizeof b, t->rank - 1, t->shape + 1));
}

/* RNN, GRU and LSTM, opsets 7-14: per direction, the input projection of
 * every step by one matmul, then each step's recurrent matmul and gates
 * as statements.  sequence_lens masks the steps past a batch entry's
 * length (its state kept, its output 0); reverse then starts at the
 * entry's own last step, as ONNX asks. */
static int op_recurrent(struct ox_node_ctx *c, enum cell cell)
{
	static const int ngates[] = {1, 3, 4};
	static const char *const defs[][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
	static const int nacts[] = {1, 2, 3};
	static const char *const pre[] = {"rnn", "gru", "lstm"};
	struct tir_type tx, tw, tr, tt;
	const char *x = ox_in_typed(c, 0, &tx), *w = x ? ox_in_typed(c, 1, &tw) : NULL,
			*r = w ? ox_in_typed(c, 2, &tr) : NULL;
	if (!r)
		return -c->m->err->code;
	int g = ngates[cell];
	int64_t h = ox_attr_i(c, "hidden_size", tr.rank == 3 ? tr.shape[2] : 0);
	int layout = (int)ox_attr_i(c, "layout", 0);
	const Onnx__AttributeProto *da = ox_attr(c, "direction");
	char dir[24] = "forward";
	if (da && da->has_s) {
		size_t n = da->s.len < sizeof dir - 1 ? da->s.len : sizeof dir - 1; /* a longer one is no direction */
		memcpy(dir, da->s.data, n);
		dir[n] = 0;
	}
	if (layout != 0 && layout != 1)
		return ox_fail(c->m, TIR_ETYPE, "layout %d is not 0 or 1", layout);
	int dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	if (strcmp(dir, "forward") && strcmp(dir, "reverse") && dirs != 2)
		return ox_fail(c->m, TIR_ETYPE, "direction '%s' is not forward, reverse or bidirectional", dir);
	if (tx.rank != 3 || tw.rank != 3 || tr.rank != 3 || !tir_dtype_is_float((enum tir_dtype)tx.dtype))
		return ox_fail(c->m, TIR_ETYPE, "X, W and R must be float tensors of rank 3");
	int64_t seq = tx.shape[layout ? 1 : 0], batch = tx.shape[layout ? 0 : 1], isz = tx.shape[2];
	if (h <= 0 || tr.shape[2] != h || tw.shape[0] != dirs || tw.shape[1] != g * h || tw.shape[2] != isz ||
	    tr.shape[0] != dirs || tr.shape[1] != g * h) /* h is R's, so g * h is small */
		return ox_fail(c->m, TIR_ETYPE, "W, R or hidden_size %" PRId64 " do not fit X", h);
	if (seq > 4096)
		return ox_fail(c->m, TIR_EUNSUPPORTED, "%" PRId64 " time steps (tir writes out up to 4096)", seq);
	double clip = 0;
	const Onnx__AttributeProto *ca = ox_attr(c, "clip");
	if (ca)
		clip = ca->f;
	bool lbr = cell == CELL_GRU && ox_attr_i(c, "linear_before_reset", 0);
	bool couple = cell == CELL_LSTM && ox_attr_i(c, "input_forget", 0);
	struct act acts[6];
	if (rnn_acts(c, nacts[cell], dirs, defs[cell], acts))
		return -c->m->err->code;
	const char *p = pre[cell];
	char b1[300], b2[300];

	/* the inputs in the time-major layout: X [S, B, I], states [D, B, H] */
	const char *xs = layout ? E(p, "transpose(%s, perm=[1, 0, 2])", x) : x;
	const char *lens = NULL, *h0 = NULL, *c0 = NULL, *bias = NULL, *peep = NULL;
	struct tir_type tl, tb;
	if (ox_has_in(c, 3))
		bias = ox_in_typed(c, 3, &tb);
	if (ox_has_in(c, 4)) {
		lens = ox_in_typed(c, 4, &tl);
		if (lens && (tl.rank != 1 || tl.shape[0] != batch))
			return ox_fail(c->m, TIR_ETYPE, "sequence_lens must be [%" PRId64 "]", batch);
		lens = E(p, "reshape(%s, shape=[%" PRId64 ", 1])", lens, batch);
	}
	const char *const sname[] = {"initial_h", "initial_c", "P"};
	/* initial_h, initial_c [D, B, H] ([B, D, H] with layout 1), P [D, 3H] */
	const char **sv[] = {&h0, &c0, &peep};
	for (int k = 0; k < (cell == CELL_LSTM ? 3 : 1) && !c->m->err->code; k++) {
		if (!ox_has_in(c, 5 + (size_t)k) || !(*sv[k] = ox_in_typed(c, 5 + (size_t)k, &tt)))
			continue;
		int64_t want[3] = {layout && k < 2 ? batch : dirs, layout && k < 2 ? dirs : batch, h};
		if (k == 2)
			want[1] = 3 * h;
		int wr = k == 2 ? 2 : 3;
		if (tt.rank != wr || memcmp(tt.shape, want, (size_t)wr * sizeof *want))
			return ox_fail(c->m, TIR_ETYPE, "%s must be %s", sname[k],
				       ox_shape_str(b1, sizeof b1, wr, want));
		if (k < 2 && layout)
			*sv[k] = E(p, "transpose(%s, perm=[1, 0, 2])", *sv[k]);
	}
	if (bias && (tb.rank != 2 || tb.shape[0] != dirs || tb.shape[1] != 2 * g * h))
		return ox_fail(c->m, TIR_ETYPE, "B must be [%d, %" PRId64 "]", dirs, 2 * g * h);
	if (c->m->err->code)
		return -c->m->err->code;

	const char **ys = calloc((size_t)(seq ? seq : 1) * 2, sizeof *ys);
	if (!ys)
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	const char *hl[2] = {0}, *cl[2] = {0}, *yd[2] = {0};
	enum tir_dtype dt = (enum tir_dtype)tx.dtype;
	int64_t bh[2] = {batch, h};
	struct tir_type ts = {.rank = 3, .shape = {dirs, batch, h}}, tp = {.rank = 2, .shape = {dirs, 3 * h}};
	for (int d = 0; d < dirs && !c->m->err->code; d++) {
		const struct act *f = &acts[d * nacts[cell]], *ga = f + 1, *ha = f + 2;
		bool back = d == 1 || !strcmp(dir, "reverse");
		const char *wd = dir_of(c, "w", w, &tw, d), *rt = E("r", "transpose(%s)", dir_of(c, "r", r, &tr, d));
		/* every step's input projection, its biases added */
		const char *xw = E(p, "matmul(%s, transpose(%s))", xs, wd), *rbh = NULL;
		if (bias) {
			const char *bd = dir_of(c, "b", bias, &tb, d);
			const char *wb = E("b", "slice(%s, axis=0, start=0, stop=%" PRId64 ")", bd, g * h);
			const char *rb = E("b", "slice(%s, axis=0, start=%" PRId64 ")", bd, g * h);
			if (lbr) { /* the candidate's recurrent bias goes inside the reset gate's product */
				rbh = E("b", "slice(%s, axis=0, start=%" PRId64 ")", rb, 2 * h);
				rb = E("b", "concat([slice(%s, axis=0, start=0, stop=%" PRId64 "), zeros([%" PRId64
				       "], dtype=%s)])", rb, 2 * h, h, tir_dtype_name(dt));
			}
			xw = E(p, "add(%s, add(%s, %s))", xw, wb, rb);
		}
		const char *hs = h0 ? dir_of(c, "h", h0, &ts, d)
				    : E("h", "zeros(%s, dtype=%s)", ox_shape_str(b1, sizeof b1, 2, bh),
					tir_dtype_name(dt));
		const char *cs = NULL, *pi = NULL, *po = NULL, *pf = NULL;
		if (cell == CELL_LSTM) {
			cs = c0 ? dir_of(c, "c", c0, &ts, d)
				: E("c", "zeros(%s, dtype=%s)", ox_shape_str(b1, sizeof b1, 2, bh), tir_dtype_name(dt));
			if (peep) {
				const char *pd = dir_of(c, "p", peep, &tp, d);
				pi = E("p", "slice(%s, axis=0, start=0, stop=%" PRId64 ")", pd, h);
				po = E("p", "slice(%s, axis=0, start=%" PRId64 ", stop=%" PRId64 ")", pd, h, 2 * h);
				pf = E("p", "slice(%s, axis=0, start=%" PRId64 ")", pd, 2 * h);
			}
		}
		for (int64_t k = 0; k < seq && !c->m->err->code; k++) {
			int64_t t = back ? seq - 1 - k : k;
			/* step t's names: the gate or state, then t (i_t3, h_t3) */
			char bi[40], bo[40], bf[40], bg[40], bc[40], bh2[40];
			snprintf(b2, sizeof b2, "%s_t%" PRId64, p, t);
			snprintf(bi, sizeof bi, "i_t%" PRId64, t);
			snprintf(bo, sizeof bo, "o_t%" PRId64, t);
			snprintf(bf, sizeof bf, "%s_t%" PRId64, cell == CELL_GRU ? "zr" : "f", t);
			snprintf(bg, sizeof bg, "g_t%" PRId64, t);
			snprintf(bc, sizeof bc, "c_t%" PRId64, t);
			snprintf(bh2, sizeof bh2, "h_t%" PRId64, t);
			const char *xt = E(b2, "reshape(slice(%s, axis=0, start=%" PRId64 ", stop=%" PRId64 "), shape=[%"
				       PRId64 ", %" PRId64 "])", xw, t, t + 1, batch, g * h);
			const char *hn = NULL, *cn = NULL;
			if (cell == CELL_RNN) {
				hn = rnn_act(c, bh2, f, clip, E(b2, "add(%s, matmul(%s, %s))", xt, hs, rt));
			} else if (cell == CELL_LSTM) {
				const char *gs = E(b2, "add(%s, matmul(%s, %s))", xt, hs, rt);
				const char *i = gate(c, bi, gs, 0, h), *o = gate(c, bo, gs, 1, h),
					   *fg = gate(c, bf, gs, 2, h), *cc = gate(c, bg, gs, 3, h);
				if (peep) {
					i = E(bi, "add(%s, mul(%s, %s))", i, cs, pi);
					fg = E(bf, "add(%s, mul(%s, %s))", fg, cs, pf);
				}
				i = rnn_act(c, bi, f, clip, i);
				fg = couple ? E(bf, "sub(1.0, %s)", i) : rnn_act(c, bf, f, clip, fg);
				cc = rnn_act(c, bg, ga, clip, cc);
				cn = E(bc, "add(mul(%s, %s), mul(%s, %s))", fg, cs, i, cc);
				if (peep)
					o = E(bo, "add(%s, mul(%s, %s))", o, cn, po);
				o = rnn_act(c, bo, f, clip, o);
				hn = E(bh2, "mul(%s, %s)", o, rnn_act(c, bc, ha, 0, cn));
			} else {
				/* GRU: z and r from the first 2H columns, the candidate from the last H */
				const char *zr, *cand;
				if (lbr) {
					const char *hr = E(b2, "matmul(%s, %s)", hs, rt);
					zr = E(b2, "add(%s, %s)", gate(c, b2, xt, 0, 2 * h), gate(c, b2, hr, 0, 2 * h));
					zr = rnn_act(c, bf, f, clip, zr);
					const char *rh = gate(c, b2, hr, 2, h);
					rh = rbh ? E(b2, "add(%s, %s)", rh, rbh) : rh;
					cand = E(b2, "add(%s, mul(%s, %s))", gate(c, b2, xt, 2, h), gate(c, b2, zr, 1, h), rh);
				} else {
					const char *rzr = E(b2, "slice(%s, axis=1, start=0, stop=%" PRId64 ")", rt, 2 * h),
						   *rh = E(b2, "slice(%s, axis=1, start=%" PRId64 ")", rt, 2 * h);
					zr = E(b2, "add(%s, matmul(%s, %s))", gate(c, b2, xt, 0, 2 * h), hs, rzr);
					zr = rnn_act(c, bf, f, clip, zr);
					cand = E(b2, "add(%s, matmul(mul(%s, %s), %s))", gate(c, b2, xt, 2, h),
						 gate(c, b2, zr, 1, h), hs, rh);
				}
				cand = rnn_act(c, bg, ga, clip, cand);
				/* (1 - z) * cand + z * h */
				hn = E(bh2, "add(%s, mul(%s, sub(%s, %s)))", cand, gate(c, b2, zr, 0, h), hs, cand);
			}
			if (lens) { /* past the entry's length: the state kept, the output 0 */
				snprintf(b2, sizeof b2, "live_t%" PRId64, t);
				const char *live = E(b2, "lt(%" PRId64 ", %s)", t, lens);
				snprintf(b2, sizeof b2, "y_t%" PRId64, t);
				ys[d * seq + t] = E(b2, "where(%s, %s, 0.0)", live, hn);
				hn = E(bh2, "where(%s, %s, %s)", live, hn, hs);
				cn = cn ? E(bc, "where(%s, %s, %s)", live, cn, cs) : NULL;
			} else {
				ys[d * seq + t] = hn;
			}
			hs = hn;
			cs = cn;
		}
		hl[d] = hs;
		cl[d] = cs;
		if (*ox_out_name(c, 0)) {
			struct tir_str l = {0};
			for (int64_t t = 0; t < seq; t++)
				tir_str_addf(&l, "%s%s", t ? ", " : "", ys[d * seq + t]);
			yd[d] = l.oom ? NULL : E(p, "stack([%s], axis=0)", l.s ? l.s : "");
			tir_str_free(&l);
			if (!yd[d] && !c->m->err->code)
				ox_fail(c->m, TIR_ENOMEM, "out of memory");
		}
	}
	free(ys);
	/* the outputs: Y [S, D, B, H], Y_h and Y_c [D, B, H] (batch first with layout 1) */
	if (*ox_out_name(c, 0)) {
		const char *y = dirs == 2 ? E(p, "stack([%s, %s], axis=1)", yd[0], yd[1])
					  : E(p, "unsqueeze(%s, axis=1)", yd[0]);
		y = layout ? E(p, "transpose(%s, perm=[2, 0, 1, 3])", y) : y;
		if (ox_bind_out(c, 0, y))
			return -c->m->err->code;
	}
	for (int k = 1; k <= (cell == CELL_LSTM ? 2 : 1); k++) {
		if (!*ox_out_name(c, (size_t)k))
			continue;
		const char **last = k == 1 ? hl : cl;
		const char *s = dirs == 2 ? E(p, "stack([%s, %s], axis=0)", last[0], last[1])
					  : E(p, "unsqueeze(%s, axis=0)", last[0]);
		s = layout ? E(p, "transpose(%s, perm=[1, 0, 2])", s) : s;
		if (ox_bind_out(c, (size_t)k, s))
			return -c->m->err->code;
	}
	return -c->m->err->code;
}

int ox_op_rnn(struct ox_node_ctx *c)
{
	return op_recurrent(c, CELL_RNN);
}

int ox_op_gru(struct ox_node_ctx *c)
{
	return op_recurrent(c, CELL_GRU);
}

int ox_op_lstm(struct ox_node_ctx *c)
{
	return op_recurrent(c, CELL_LSTM);
}

/* ---- GatherND, ReverseSequence ---- */

/* GatherND (opsets 11-13, batch_dims at 12): data's first batch_dims + K
 * axes flattened into one, each index tuple made a flat position there
 * (negative coordinates wrapped), then one gather.  A coordinate out of
 * range makes its position out of range too, so the gather's run-time
 * check reports it. */
int ox_op_gathernd(struct ox_node_ctx *c)
{
	struct tir_type t, ti;
	const char *x = ox_in_typed(c, 0, &t), *ix = x ? ox_in_typed(c, 1, &ti) : NULL;
	if (!ix)
		return -c->m->err->code;
	int64_t bd = ox_attr_i(c, "batch_dims", 0);
	if (ti.rank < 1 || bd < 0 || bd >= ti.rank || bd >= t.rank)
		return ox_fail(c->m, TIR_ETYPE, "batch_dims %" PRId64 " for indices of rank %d", bd, ti.rank);
	int q = ti.rank, b = (int)bd;
	int64_t k = ti.shape[q - 1];
	if (k < 1 || b + k > t.rank || ti.dtype == TIR_DTYPE_BOOL || tir_dtype_is_float((enum tir_dtype)ti.dtype))
		return ox_fail(c->m, TIR_ETYPE, "indices' last axis %" PRId64 " for data of rank %d", k, t.rank);
	for (int a = 0; a < b; a++)
		if (ti.shape[a] != t.shape[a])
			return ox_fail(c->m, TIR_ETYPE, "batch axis %d: %" PRId64 " indices for %" PRId64, a,
				       ti.shape[a], t.shape[a]);
	int lead = b + (int)k;
	int64_t n = 1, rest[TIR_MAX_RANK + 1];
	for (int a = 0; a < lead; a++)
		n *= t.shape[a];
	rest[0] = n;
	for (int a = lead; a < t.rank; a++)
		rest[1 + a - lead] = t.shape[a];
	char b1[300];
	const char *i = E("ix", "cast(%s, dtype=i64)", ix), *pos = NULL, *bad = NULL;
	int64_t stride = 1;
	for (int a = lead - 1; a >= 0; a--) {
		const char *co;
		if (a >= b) { /* coordinate a - b of each tuple */
			int64_t dim = t.shape[a];
			co = E("ix", "reshape(slice(%s, axis=%d, start=%d, stop=%d), shape=%s)", i, q - 1, a - b,
			       a - b + 1, ox_shape_str(b1, sizeof b1, q - 1, ti.shape));
			const char *out = E("ix", "or(lt(%s, %" PRId64 "), ge(%s, %" PRId64 "))", co, -dim, co, dim);
			bad = bad ? E("ix", "or(%s, %s)", bad, out) : out;
			co = E("ix", "where(lt(%s, 0), add(%s, %" PRId64 "), %s)", co, co, dim, co);
		} else { /* the batch position itself */
			co = ox_iota(c, "pos", t.shape[a], a, q - 1);
		}
		co = stride != 1 ? E("ix", "mul(%s, %" PRId64 ")", co, stride) : co;
		pos = pos ? E("ix", "add(%s, %s)", pos, co) : co;
		stride *= t.shape[a];
	}
	pos = E("ix", "where(%s, %" PRId64 ", %s)", bad, n, pos);
	const char *flat = E("gnd", "reshape(%s, shape=%s)", x, ox_shape_str(b1, sizeof b1, 1 + t.rank - lead, rest));
	return ox_bind_out(c, 0, E(ox_out_name(c, 0), "gather(%s, %s, axis=0)", flat, pos));
}

/* ReverseSequence (opset 10): along time_axis, the first len[b] entries
 * of batch entry b reversed, the rest kept: a gather along the time axis
 * by the index len - 1 - t where t < len, else t */
int ox_op_reversesequence(struct ox_node_ctx *c)
{
	struct tir_type t, tl;
	const char *x = ox_in_typed(c, 0, &t), *lens = x ? ox_in_typed(c, 1, &tl) : NULL;
	if (!lens)
		return -c->m->err->code;
	int64_t ta = ox_attr_i(c, "time_axis", 0), ba = ox_attr_i(c, "batch_axis", 1);
	if (t.rank < 2 || (ta != 0 && ta != 1) || (ba != 0 && ba != 1) || ta == ba)
		return ox_fail(c->m, TIR_ETYPE, "time_axis %" PRId64 " and batch_axis %" PRId64 " for rank %d", ta,
			       ba, t.rank);
	if (tl.rank != 1 || tl.shape[0] != t.shape[ba])
		return ox_fail(c->m, TIR_ETYPE, "sequence_lens must be [%" PRId64 "]", t.shape[ba]);
	int64_t steps = t.shape[ta];
	/* [T, B] or [B, T] indices of the time axis, then broadcast to x */
	int64_t sh[2];
	sh[ba] = t.shape[ba];
	sh[ta] = 1;
	char b1[300], b2[300];
	const char *len = E("len", "reshape(cast(%s, dtype=i64), shape=%s)", lens, ox_shape_str(b1, sizeof b1, 2, sh));
	const char *tpos = ox_iota(c, "pos", steps, (int)ta, 2);
	const char *rev = E("rev", "where(lt(%s, %s), sub(sub(%s, 1), %s), %s)", tpos, len, len, tpos, tpos);
	int64_t e[TIR_MAX_RANK];
	for (int a = 0; a < t.rank; a++)
		e[a] = a < 2 ? t.shape[a] : 1;
	rev = t.rank > 2 ? E("rev", "reshape(%s, shape=%s)", rev, ox_shape_str(b1, sizeof b1, t.rank, e)) : rev;
	rev = t.rank > 2 ? E("rev", "expand(%s, shape=%s)", rev, ox_shape_str(b2, sizeof b2, t.rank, t.shape)) : rev;
	/* gather along time: flatten to positions (time index, others kept) */
	int64_t n = 1, stride = 1;
	for (int a = 0; a < t.rank; a++)
		n *= t.shape[a];
	const char *pos = NULL;
	for (int a = t.rank - 1; a >= 0; a--) {
		const char *co = a == ta ? rev : ox_iota(c, "pos", t.shape[a], a, t.rank);
		co = stride != 1 ? E("rev", "mul(%s, %" PRId64 ")", co, stride) : co;
		pos = pos ? E("rev", "add(%s, %s)", pos, co) : co;
		stride *= t.shape[a];
	}
	const char *flat = E("rev", "reshape(%s, shape=[%" PRId64 "])", x, n);
	return ox_bind_out(c, 0, E(ox_out_name(c, 0), "gather(%s, %s, axis=0)", flat, pos));
}

/* ---- BatchNormalization, training_mode 1 (opsets 14-15) ---- */

/* Normalized by the batch's own mean and (population) variance over every
 * axis but the channel's; the running statistics out are
 * input * momentum + batch's * (1 - momentum), as ONNX defines them. */
int ox_op_batchnorm_training(struct ox_node_ctx *c)
{
	struct tir_type t, tp;
	const char *x = ox_in_typed(c, 0, &t);
	if (!x)
		return -c->m->err->code;
	if (t.rank < 2 || !tir_dtype_is_float((enum tir_dtype)t.dtype))
		return ox_fail(c->m, TIR_ETYPE, "input must be a float tensor of rank 2 or more");
	const char *p[4];
	int64_t ch = t.shape[1], sh[TIR_MAX_RANK];
	char axes[200], b1[300];
	size_t na = 0;
	axes[na++] = '[';
	for (int a = 0; a < t.rank; a++) {
		sh[a] = a == 1 ? ch : 1;
		if (a != 1)
			na += (size_t)snprintf(axes + na, 16, "%s%d", na > 1 ? ", " : "", a);
	}
	snprintf(axes + na, 4, "]");
	for (int k = 0; k < 4; k++) {
		p[k] = ox_in_typed(c, 1 + (size_t)k, &tp);
		if (p[k] && (tp.rank != 1 || tp.shape[0] != ch))
			return ox_fail(c->m, TIR_ETYPE, "input %d must be [%" PRId64 "]", 1 + k, ch);
		p[k] = E("bn", "reshape(%s, shape=%s)", p[k], ox_shape_str(b1, sizeof b1, t.rank, sh));
	}
	double eps = 1e-5, mom = 0.9;
	const Onnx__AttributeProto *a = ox_attr(c, "epsilon");
	eps = a ? a->f : eps;
	a = ox_attr(c, "momentum");
	mom = a ? a->f : mom;
	const char *mu = E("bn_mean", "mean(%s, axis=%s, keepdims=true)", x, axes);
	const char *var = E("bn_var", "var(%s, axis=%s, keepdims=true)", x, axes);
	const char *n = E("bn", "mul(sub(%s, %s), rsqrt(add(%s, %.9g)))", x, mu, var, eps);
	if (ox_bind_out(c, 0, E(ox_out_name(c, 0), "add(mul(%s, %s), %s)", n, p[0], p[1])))
		return -c->m->err->code;
	const char *batch[2] = {mu, var};
	for (int k = 0; k < 2; k++) {
		if (!*ox_out_name(c, 1 + (size_t)k))
			continue;
		const char *r = E(ox_out_name(c, 1 + (size_t)k),
				  "reshape(add(mul(%s, %.9g), mul(%s, %.9g)), shape=[%" PRId64 "])",
				  p[2 + k], mom, batch[k], 1 - mom, ch);
		if (ox_bind_out(c, 1 + (size_t)k, r))
			return -c->m->err->code;
	}
	return 0;
}

/* ---- ScatterND, ScatterElements, Scatter ---- */

/* the reduction attribute (opset 16; max and min are 18's, taken too) */
static const char *reduction(struct ox_node_ctx *c)
{
	static const char *const names[] = {"none", "add", "mul", "max", "min"};
	const Onnx__AttributeProto *a = ox_attr(c, "reduction");
	if (!a || !a->has_s)
		return "none";
	for (int k = 0; k < 5; k++)
		if (a->s.len == strlen(names[k]) && !memcmp(a->s.data, names[k], a->s.len))
			return names[k];
	ox_fail(c->m, TIR_EUNSUPPORTED, "reduction '%.*s' is not supported", (int)(a->s.len > 20 ? 20 : a->s.len),
		(const char *)a->s.data);
	return NULL;
}

/* ScatterND (opsets 11-16): tir's scatter_nd */
int ox_op_scatternd(struct ox_node_ctx *c)
{
	struct tir_type t, ti, tu;
	const char *x = ox_in_typed(c, 0, &t), *ix = x ? ox_in_typed(c, 1, &ti) : NULL,
			*u = ix ? ox_in_typed(c, 2, &tu) : NULL;
	const char *red = u ? reduction(c) : NULL;
	if (!red)
		return -c->m->err->code;
	return ox_bind_out(c, 0, E(ox_out_name(c, 0), "scatter_nd(%s, %s, %s, reduction=%s)", x, ix, u, red));
}

/* ScatterElements (opsets 11-16) and Scatter (9-10, the same op): each
 * element of indices is the coordinate on axis of its update, its own
 * position on the other axes, so one tuple per element for scatter_nd
 * (which wraps negative coordinates and checks them) */
int ox_op_scatterelements(struct ox_node_ctx *c)
{
	struct tir_type t, ti, tu;
	const char *x = ox_in_typed(c, 0, &t), *ix = x ? ox_in_typed(c, 1, &ti) : NULL,
			*u = ix ? ox_in_typed(c, 2, &tu) : NULL;
	const char *red = u ? reduction(c) : NULL;
	if (!red)
		return -c->m->err->code;
	int64_t ax = ox_attr_i(c, "axis", 0);
	if (ax < -t.rank || ax >= t.rank || !t.rank)
		return ox_fail(c->m, TIR_ETYPE, "axis %" PRId64 " is out of range for rank %d", ax, t.rank);
	int a = (int)(ax < 0 ? ax + t.rank : ax);
	if (ti.rank != t.rank || tu.rank != t.rank || memcmp(ti.shape, tu.shape, (size_t)t.rank * sizeof *t.shape))
		return ox_fail(c->m, TIR_ETYPE, "indices and updates must have one shape, of data's rank %d", t.rank);
	char b1[300];
	struct tir_str l = {0};
	for (int k = 0; k < t.rank; k++) {
		const char *co = k == a ? E("ix", "cast(%s, dtype=i64)", ix)
					: E("ix", "expand(%s, shape=%s)", ox_iota(c, "pos", ti.shape[k], k, t.rank),
					    ox_shape_str(b1, sizeof b1, ti.rank, ti.shape));
		tir_str_addf(&l, "%s%s", k ? ", " : "", co ? co : "");
	}
	const char *tuples = l.oom ? NULL : E("ix", "stack([%s], axis=-1)", l.s);
	tir_str_free(&l);
	if (!tuples && !c->m->err->code)
		return ox_fail(c->m, TIR_ENOMEM, "out of memory");
	return ox_bind_out(c, 0, E(ox_out_name(c, 0), "scatter_nd(%s, %s, %s, reduction=%s)", x, tuples, u, red));
}
