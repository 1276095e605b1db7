/*
 * shard.c — sharded values (docs/language.md, "Devices"): `shard(x,
 * axis=0)` splits x along an axis over the remotes, one piece on each; an
 * op on sharded values is made again for each piece, on its device, as an
 * ordinary node (hidden: tir fmt shows the op as written).  What the op
 * means for the whole value is its alias: the pieces gathered on the first
 * device (a concat of them moved there), or, for a reduction over the
 * sharded axis or a product contracting it, the pieces' partial results
 * combined there.  A run computes aliases and pieces, never the user's
 * node itself; the executor and the batches see only ordinary ops, `to`
 * among them, so moves go server to server and a step's pieces run at once.
 *
 * An op this file does not split runs on the first device on the gathered
 * operands (correct, not parallel): movement across the split axis,
 * gather, conv, pooling, argmax and the rest.
 *
 * Part of the placement pass (place.h): what it says of a node goes into
 * struct tir_placed, not into the node; the nodes it makes are the
 * program's, marked hidden there.  The one thing it writes into a user's
 * node is all_reduce's type, one piece's (docs/language.md), which the
 * nodes after it are checked against.
 */
#include "place.h"

#include <stdio.h>
#include <string.h>

/* ---- making nodes ---- */

static struct tir_node *node(struct tir_placed *pl, const struct tir_node *like, enum tir_op op, int nin,
			     struct tir_err *err)
{
	struct tir_node *n = tir_node_new(pl->p, op, nin, &like->loc, like->stmt);
	struct tir_place_ext *e = n && !tir_place_cover(pl, n) ? tir_place_ext_make(pl, n) : NULL;
	if (!e) {
		tir_errf(err, TIR_ENOMEM, &like->loc, "out of memory");
		return NULL;
	}
	e->hidden = true;
	n->in_print = like->in_print;
	for (int k = 0; k < nin; k++)
		tir_node_set_inloc(n, k, &like->loc);
	return n;
}

/* Check and place a node made here: NULL (err at like) when it fails. */
static struct tir_node *done(struct tir_placed *pl, struct tir_node *n, const struct tir_node *like,
			     struct tir_err *err)
{
	if (!n)
		return NULL;
	for (int k = 0; k < n->nin; k++) /* operands first: a batch walks ids down */
		TIR_ASSERT(!n->in[k] || n->in[k]->id < n->id);
	if (tir_check_node(n, &pl->p->node_arena, err) || tir_place_node(pl, n, err)) {
		if (!err->loc.src)
			err->loc = like->loc;
		return NULL;
	}
	return n;
}

static struct tir_attr *attr_of(struct tir_node *n, const char *name)
{
	int i = tir_op_attr_index(n->op, name);
	return i >= 0 ? &n->attr[i] : NULL;
}

static struct tir_node *to_dev(struct tir_placed *pl, const struct tir_node *like, struct tir_node *x, int dev,
			       struct tir_err *err)
{
	if (tir_place_dev(pl, x) == dev)
		return x;
	struct tir_node *n = node(pl, like, TIR_OP_TO, 1, err);
	if (!n)
		return NULL;
	char d[24];
	struct tir_attr *a = attr_of(n, "device");
	tir_dev_str(dev, d);
	a->s = tir_arena_strndup(&pl->p->arena, d, strlen(d));
	a->set = true;
	n->in[0] = x;
	return a->s ? done(pl, n, like, err) : (tir_errf(err, TIR_ENOMEM, &like->loc, "out of memory"), NULL);
}

static struct tir_node *slice_of(struct tir_placed *pl, const struct tir_node *like, struct tir_node *x, int axis,
				 int64_t start, int64_t stop, struct tir_err *err)
{
	struct tir_node *n = node(pl, like, TIR_OP_SLICE, 1, err);
	if (!n)
		return NULL;
	struct tir_attr *a = attr_of(n, "axis"), *b = attr_of(n, "start"), *c = attr_of(n, "stop");
	a->i = axis;
	a->set = b->set = c->set = true;
	b->i = start;
	c->i = stop;
	n->in[0] = x;
	return done(pl, n, like, err);
}

static struct tir_node *binary(struct tir_placed *pl, const struct tir_node *like, enum tir_op op,
			       struct tir_node *a, struct tir_node *b, struct tir_err *err)
{
	struct tir_node *n = node(pl, like, op, 2, err);
	if (!n)
		return NULL;
	n->in[0] = a;
	n->in[1] = b;
	return done(pl, n, like, err);
}

/* A weak scalar (a literal's kind: it takes the other operand's dtype). */
static struct tir_node *scalar(struct tir_placed *pl, const struct tir_node *like, double v, struct tir_err *err)
{
	struct tir_node *n = node(pl, like, TIR_OP_CONST, 0, err);
	if (!n)
		return NULL;
	n->type.dtype = TIR_DTYPE_F32;
	n->type.weak = true;
	n->fval = v;
	return n;
}

static struct tir_node *cast_to(struct tir_placed *pl, const struct tir_node *like, struct tir_node *x,
			       enum tir_dtype dt, struct tir_err *err)
{
	if (x->type.dtype == dt)
		return x;
	struct tir_node *n = node(pl, like, TIR_OP_CAST, 1, err);
	if (!n)
		return NULL;
	attr_of(n, "dtype")->i = dt;
	attr_of(n, "dtype")->set = true;
	n->in[0] = x;
	return done(pl, n, like, err);
}

/* like's op again on operands ins (its attributes as they are). */
static struct tir_node *again(struct tir_placed *pl, const struct tir_node *like, struct tir_node *const *ins,
			      struct tir_err *err)
{
	struct tir_node *n = node(pl, like, like->op, like->nin, err);
	if (!n)
		return NULL;
	if (tir_op(like->op)->nattr)
		memcpy(n->attr, like->attr, sizeof *n->attr * (size_t)tir_op(like->op)->nattr);
	memcpy(n->inloc, like->inloc, sizeof *n->inloc * like->nin);
	for (int k = 0; k < like->nin; k++)
		n->in[k] = ins[k];
	if (!like->nin) { /* a literal's value, where an op's operands are (ir.h) */
		n->ival = like->ival;
		n->fval = like->fval;
	}
	return done(pl, n, like, err);
}

/* ---- sharded values ---- */

static struct tir_shard *new_shard(struct tir_placed *pl, int n, int axis, bool partial, const int16_t *dev)
{
	struct tir_shard *s = tir_arena_alloc(&pl->p->arena, sizeof *s);
	if (!s)
		return NULL;
	s->dev = tir_arena_alloc(&pl->p->arena, sizeof *s->dev * (size_t)n);
	s->piece = tir_arena_alloc(&pl->p->arena, sizeof *s->piece * (size_t)n);
	if (!s->dev || !s->piece)
		return NULL;
	s->n = n;
	s->axis = axis;
	s->partial = partial;
	memcpy(s->dev, dev, sizeof *s->dev * (size_t)n);
	return s;
}

static bool same_devices(const struct tir_shard *a, const struct tir_shard *b)
{
	return a->n == b->n && !memcmp(a->dev, b->dev, sizeof *a->dev * (size_t)a->n);
}

/* "remote:0, remote:1" */
static const char *devices_str(const struct tir_shard *s, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < s->n && o + 24 < cap; i++) {
		char d[24];
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", tir_dev_str(s->dev[i], d));
	}
	return buf;
}

/* The whole of sharded n on device d0 (its first: n's alias; or this
 * process: what printing it reads). */
static struct tir_node *gather(struct tir_placed *pl, struct tir_node *n, int d0, struct tir_err *err)
{
	const struct tir_shard *s = tir_place_shard(pl, n);
	if (s->axis < 0 && !s->partial)
		return to_dev(pl, n, s->piece[0], d0, err); /* every device holds all of it */
	struct tir_node *moved[TIR_MAX_STRS] = {0};
	for (int i = 0; i < s->n; i++)
		if (!(moved[i] = to_dev(pl, n, s->piece[i], d0, err)))
			return NULL;
	if (s->partial) { /* the sum of the terms */
		struct tir_node *acc = moved[0];
		for (int i = 1; i < s->n && acc; i++)
			acc = binary(pl, n, TIR_OP_ADD, acc, moved[i], err);
		return acc;
	}
	struct tir_node *c = node(pl, n, TIR_OP_CONCAT, s->n, err);
	if (!c)
		return NULL;
	attr_of(c, "axis")->i = s->axis;
	attr_of(c, "axis")->set = true;
	for (int i = 0; i < s->n; i++)
		c->in[i] = moved[i];
	return done(pl, c, n, err);
}

/* n is sharded as s: its pieces are made, its alias is their gather. */
static int sharded(struct tir_placed *pl, struct tir_node *n, struct tir_shard *s, struct tir_err *err)
{
	struct tir_place_ext *e = s ? tir_place_ext_make(pl, n) : NULL;
	if (!e)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	e->shard = s;
	pl->dev[n->id] = TIR_DEV_SHARDED;
	for (int i = 0; i < s->n; i++) /* kept between REPL lines under n's name */
		if (!tir_place_owner(pl, s->piece[i]) && tir_place_hidden(pl, s->piece[i]))
			tir_place_ext_make(pl, s->piece[i])->owner = n; /* (hidden: it has one) */
	e->alias = gather(pl, n, s->dev[0], err);
	/* printed here: each piece comes back with its own batch, a step
	 * sooner than through the first device */
	e->shown = e->alias ? gather(pl, n, TIR_DEV_CPU, err) : NULL;
	return e->shown ? 0 : -err->code;
}

/* n is computed by a on one device: n's alias. */
static int aliased(struct tir_placed *pl, struct tir_node *n, struct tir_node *a, struct tir_err *err)
{
	if (!a)
		return -err->code;
	struct tir_place_ext *e = tir_place_ext_make(pl, n);
	if (!e)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	e->alias = a;
	pl->dev[n->id] = (int16_t)tir_place_dev(pl, a);
	e->shard = NULL;
	e->shown = NULL;
	return 0;
}

/* The op on the operands' whole values, on one device (gathered on the
 * first device of a sharded one). */
static int whole(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	struct tir_node *ins[64];
	if (n->nin > 64)
		return tir_errf(err, TIR_EUNSUPPORTED, &n->loc, "%s: more than 64 operands of sharded values",
				tir_op(n->op)->name);
	for (int k = 0; k < n->nin; k++)
		ins[k] = tir_place_exe(pl, n->in[k]);
	return aliased(pl, n, again(pl, n, ins, err), err);
}

/* ---- the ops ---- */

/* Whether x, placed nowhere, is made from data this process holds (an
 * input, a loaded file, a tensor literal): such a value is split here and
 * each piece sent where it goes, rather than sent whole to every device.
 * A value made from creation ops alone is made on each device instead. */
static bool from_data(const struct tir_node *x, int depth)
{
	if (x->op == TIR_OP_INPUT || x->op == TIR_OP_LOAD || (x->op == TIR_OP_CONST && !x->type.weak))
		return true;
	if (depth > 64)
		return true; /* deep: split here (either way is right) */
	for (int k = 0; k < x->nin; k++)
		if (x->in[k] && from_data(x->in[k], depth + 1))
			return true;
	return false;
}

/* shard(x, axis, devices?) */
static int make_shard(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	struct tir_node *x = n->in[0];
	if (tir_place_dev(pl, x) == TIR_DEV_SHARDED)
		return tir_errf(err, TIR_ETYPE, &n->loc, "shard: %s is sharded already", x->ref_name ? x->ref_name : "its operand");
	const struct tir_attr *ad = attr_of(n, "devices");
	int16_t dev[TIR_MAX_STRS];
	int nd = 0;
	if (ad->set) {
		for (int i = 0; i < ad->n; i++) {
			int d = tir_dev_parse(ad->ss[i]);
			if (d < 0)
				return tir_errf(err, TIR_ETYPE, &n->loc,
						"shard: no device '%s': devices are \"cpu\" and \"remote:N\"", ad->ss[i]);
			if (d != TIR_DEV_CPU && pl->remotes_known && d - 1 >= pl->nremotes)
				return tir_errf(err, TIR_ETYPE, &n->loc, "shard: no device %s: %s", ad->ss[i],
						pl->nremotes ? "past --remote's list" : "no --remote is given");
			for (int j = 0; j < nd; j++)
				if (dev[j] == d)
					return tir_errf(err, TIR_ETYPE, &n->loc, "shard: %s is named twice", ad->ss[i]);
			dev[nd++] = (int16_t)d;
		}
		if (nd < 1)
			return tir_errf(err, TIR_ETYPE, &n->loc, "shard: devices is empty");
	} else if (pl->remotes_known) {
		if (!pl->nremotes)
			return tir_errf(err, TIR_ETYPE, &n->loc,
					"shard: no devices to shard over: no --remote is given (or name them: "
					"devices=[\"remote:0\", ...])");
		if (pl->nremotes > TIR_MAX_STRS)
			return tir_errf(err, TIR_EUNSUPPORTED, &n->loc, "shard: over more than %d devices",
					TIR_MAX_STRS);
		for (int i = 0; i < pl->nremotes; i++)
			dev[nd++] = (int16_t)TIR_DEV_REMOTE(i);
	}
	pl->dev[n->id] = TIR_DEV_SHARDED;
	if (!nd) /* the remotes are not known (tir check, tir fmt): typed only */
		return 0;
	int axis = (int)attr_of(n, "axis")->i;
	if (axis < 0)
		axis += n->type.rank;
	int64_t len = n->type.shape[axis];
	if (len % nd) {
		char t[TIR_TYPE_STRLEN];
		return tir_errf(err, TIR_ETYPE, &n->loc,
				"shard: an uneven split: axis %d of %s has %lld, not a multiple of the %d devices", axis,
				tir_type_str(&n->type, t, sizeof t), (long long)len, nd);
	}
	struct tir_shard *s = new_shard(pl, nd, axis, false, dev);
	if (!s)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	struct tir_node *whole_x = tir_place_exe(pl, x);
	if (tir_place_dev(pl, whole_x) == TIR_DEV_ANY && from_data(whole_x, 0) && !(whole_x = to_dev(pl, n, whole_x, TIR_DEV_CPU, err)))
		return -err->code;
	for (int i = 0; i < nd; i++) {
		struct tir_node *sl = slice_of(pl, n, whole_x, axis, len / nd * i, len / nd * (i + 1), err);
		if (!sl || !(s->piece[i] = to_dev(pl, n, sl, dev[i], err)))
			return -err->code;
	}
	return sharded(pl, n, s, err);
}

/* Operand o of n as the piece on device i of shard s (s->axis: the
 * result's sharded axis, or < 0): its piece when sharded like s, else the
 * whole of it, sliced along the result's axis when it has that axis. */
static struct tir_node *operand_piece(struct tir_placed *pl, struct tir_node *n, struct tir_node *o,
				      const struct tir_shard *s, int i, struct tir_err *err)
{
	struct tir_node *w = tir_place_exe(pl, o);
	if (tir_place_dev(pl, o) == TIR_DEV_SHARDED) {
		if (tir_place_shard(pl, o)->axis >= 0 || s->axis < 0)
			return tir_place_shard(pl, o)->piece[i];
		w = tir_place_shard(pl, o)->piece[i]; /* a copy of the whole on device i: sliced there */
	}
	if (s->axis < 0 || (o->op == TIR_OP_CONST && o->type.weak))
		return w;
	int oa = s->axis - (n->type.rank - o->type.rank);
	if (oa < 0 || o->type.shape[oa] == 1)
		return w;
	int64_t len = o->type.shape[oa];
	return slice_of(pl, n, w, oa, len / s->n * i, len / s->n * (i + 1), err);
}

/* pieces[i] = n's op on each operand's piece i */
static int per_piece(struct tir_placed *pl, struct tir_node *n, struct tir_shard *s, struct tir_err *err)
{
	if (!s)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	struct tir_node *ins[64];
	if (n->nin > 64)
		return whole(pl, n, err);
	for (int i = 0; i < s->n; i++) {
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && !(ins[k] = operand_piece(pl, n, n->in[k], s, i, err)))
				return -err->code;
			else if (!n->in[k])
				ins[k] = NULL;
		if (!(s->piece[i] = again(pl, n, ins, err)))
			return -err->code;
	}
	return sharded(pl, n, s, err);
}

/* The sharded operands of n agree (the same devices, the same axis of the
 * result, none partial); *first: the first of them.  A placed operand
 * beside them is an error. */
static int agree(struct tir_placed *pl, struct tir_node *n, const struct tir_node **first, int *axis, struct tir_err *err)
{
	*first = NULL;
	*axis = -1;
	char a[24], b[300];
	for (int k = 0; k < n->nin; k++) {
		const struct tir_node *o = n->in[k];
		if (!o || tir_place_dev(pl, o) != TIR_DEV_SHARDED)
			continue;
		if (!tir_place_shard(pl, o) || tir_place_shard(pl, o)->partial)
			return 0; /* not known, or terms: gathered */
		int ra = tir_place_shard(pl, o)->axis < 0 ? -1 : tir_place_shard(pl, o)->axis + (n->type.rank - o->type.rank);
		if (!*first) {
			*first = o;
		} else if (!same_devices(tir_place_shard(pl, o), tir_place_shard(pl, (*first)))) {
			return tir_errf(err, TIR_ETYPE, &n->loc,
					"%s: operands sharded over different devices: %s over %s; reshard one", tir_op(n->op)->name,
					o->ref_name ? o->ref_name : "one", devices_str(tir_place_shard(pl, o), b, sizeof b));
		}
		if (ra >= 0 && *axis >= 0 && ra != *axis)
			return 1; /* along different axes: gathered */
		if (ra >= 0)
			*axis = ra;
	}
	for (int k = 0; *first && k < n->nin; k++) {
		const struct tir_node *o = n->in[k];
		if (o && tir_place_dev(pl, o) != TIR_DEV_SHARDED && tir_place_dev(pl, tir_place_exe(pl, (struct tir_node *)o)) >= 0)
			return tir_errf(err, TIR_ETYPE, &n->loc,
					"%s: operands on different devices: %s is sharded over %s, %s on %s; a value "
					"beside a sharded one is placed nowhere (made on each device)",
					tir_op(n->op)->name, (*first)->ref_name ? (*first)->ref_name : "one",
					devices_str(tir_place_shard(pl, (*first)), b, sizeof b), o->ref_name ? o->ref_name : "another",
					tir_dev_str(tir_place_dev(pl, tir_place_exe(pl, (struct tir_node *)o)), a));
	}
	return 0;
}

static int elementwise(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	const struct tir_node *f;
	int axis, rc = agree(pl, n, &f, &axis, err);
	if (rc < 0)
		return rc;
	if (rc > 0 || !f)
		return whole(pl, n, err);
	return per_piece(pl, n, new_shard(pl, tir_place_shard(pl, f)->n, axis, false, tir_place_shard(pl, f)->dev), err);
}

/* sum, mean, max, min, prod */
static int reduction(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	struct tir_node *x = n->in[0];
	const struct tir_shard *s = tir_place_shard(pl, x);
	if (!s || s->partial)
		return whole(pl, n, err);
	bool mask[TIR_MAX_RANK];
	tir_reduce_mask(n, x->type.rank, mask);
	bool keep = attr_of(n, "keepdims")->i;
	if (s->axis < 0 || !mask[s->axis]) { /* along another axis: each piece alone */
		int axis = s->axis;
		for (int a = 0; axis >= 0 && !keep && a < s->axis; a++)
			axis -= mask[a];
		return per_piece(pl, n, new_shard(pl, s->n, axis, false, s->dev), err);
	}
	/* over the sharded axis: each piece's, combined on the first device
	 * (a variance is no sum of the pieces' variances: gathered) */
	if (n->op == TIR_OP_VAR)
		return whole(pl, n, err);
	enum tir_op part = n->op == TIR_OP_MEAN ? TIR_OP_SUM : n->op;
	enum tir_op comb = n->op == TIR_OP_MAX ? TIR_OP_MAXIMUM : n->op == TIR_OP_MIN ? TIR_OP_MINIMUM
			 : n->op == TIR_OP_PROD ? TIR_OP_MUL : TIR_OP_ADD;
	if (n->op == TIR_OP_MEAN && !tir_dtype_is_float((enum tir_dtype)x->type.dtype))
		return whole(pl, n, err); /* an integer mean: summed whole, then divided (no wrap) */
	/* a sum or product of f16 or bf16 is made in f32 and rounded once, as
	 * a local one is: so are the pieces' terms and their combination */
	enum tir_dtype dt = (enum tir_dtype)x->type.dtype;
	bool widen = (dt == TIR_DTYPE_F16 || dt == TIR_DTYPE_BF16) && comb != TIR_OP_MAXIMUM && comb != TIR_OP_MINIMUM;
	struct tir_node *acc = NULL;
	for (int i = 0; i < s->n; i++) {
		/* (an operand is made before the node reading it: ids go up) */
		struct tir_node *v = widen ? cast_to(pl, n, s->piece[i], TIR_DTYPE_F32, err) : s->piece[i];
		struct tir_node *r = v ? node(pl, n, part, 1, err) : NULL;
		if (!r)
			return -err->code;
		memcpy(r->attr, n->attr, sizeof *r->attr * (size_t)tir_op(n->op)->nattr);
		r->in[0] = v;
		if (!(r = done(pl, r, n, err)) || !(r = to_dev(pl, n, r, s->dev[0], err)))
			return -err->code;
		acc = acc ? binary(pl, n, comb, acc, r, err) : r;
		if (!acc)
			return -err->code;
	}
	if (n->op == TIR_OP_MEAN) {
		double count = 1;
		for (int a = 0; a < x->type.rank; a++)
			count *= mask[a] ? (double)x->type.shape[a] : 1;
		struct tir_node *c = scalar(pl, n, count, err);
		if (!c || !(acc = binary(pl, n, TIR_OP_DIV, acc, c, err)))
			return -err->code;
	}
	if (widen && !(acc = cast_to(pl, n, acc, (enum tir_dtype)n->type.dtype, err)))
		return -err->code;
	return aliased(pl, n, acc, err);
}

/* a @ b: rows (or a batch axis) of a, columns of b, or the contracted axis
 * of both (each device a term of the product: partial) */
static int product(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	struct tir_node *a = n->in[0], *b = n->in[1];
	const struct tir_shard *sa = tir_place_dev(pl, a) == TIR_DEV_SHARDED ? tir_place_shard(pl, a) : NULL;
	const struct tir_shard *sb = tir_place_dev(pl, b) == TIR_DEV_SHARDED ? tir_place_shard(pl, b) : NULL;
	int ra = a->type.rank, rb = b->type.rank, rn = n->type.rank;
	if ((tir_place_dev(pl, a) == TIR_DEV_SHARDED && !sa) || (tir_place_dev(pl, b) == TIR_DEV_SHARDED && !sb) || ra < 2 || rb < 2 ||
	    (sa && sa->partial) || (sb && sb->partial) || (sa && sb && !same_devices(sa, sb)))
		return whole(pl, n, err);
	if ((!sa && tir_place_dev(pl, tir_place_exe(pl, a)) >= 0) || (!sb && tir_place_dev(pl, tir_place_exe(pl, b)) >= 0))
		return whole(pl, n, err); /* beside a placed value: gathered there (or the placement error) */
	const struct tir_shard *s = sa ? sa : sb;
	int axis = -1;
	bool partial = false;
	if (sa && sb && sa->axis == ra - 1 && sb->axis == rb - 2) {
		partial = true; /* k split on both sides */
	} else if (sa && sa->axis >= 0 && sa->axis != ra - 1 && (!sb || sb->axis < 0)) {
		axis = sa->axis == ra - 2 ? rn - 2 : sa->axis + (rn - ra); /* rows, or a batch axis */
		if (sa->axis < ra - 2 && rb > 2)
			return whole(pl, n, err); /* a batch axis broadcast against b's: not split */
	} else if (sb && sb->axis == rb - 1 && (!sa || sa->axis < 0)) {
		axis = rn - 1; /* columns */
	} else if (!(sa && sa->axis < 0) && !(sb && sb->axis < 0)) {
		return whole(pl, n, err);
	}
	struct tir_shard *r = new_shard(pl, s->n, axis, partial, s->dev);
	if (!r)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	for (int i = 0; i < s->n; i++) {
		struct tir_node *ins[2] = {sa ? sa->piece[i] : tir_place_exe(pl, a), sb ? sb->piece[i] : tir_place_exe(pl, b)};
		if (!(r->piece[i] = again(pl, n, ins, err)))
			return -err->code;
	}
	return sharded(pl, n, r, err);
}

/* all_reduce(x, op): the op of x's pieces, on every device */
static int all_reduce(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	struct tir_node *x = n->in[0];
	const char *w = attr_of(n, "op")->s;
	if (tir_place_dev(pl, x) != TIR_DEV_SHARDED)
		return tir_errf(err, TIR_ETYPE, &n->loc,
				"all_reduce: %s is not sharded: there is nothing to reduce across devices (shard it: "
				"shard(x, axis=0))", x->ref_name ? x->ref_name : "its operand");
	const struct tir_shard *s = tir_place_shard(pl, x);
	pl->dev[n->id] = TIR_DEV_SHARDED;
	/* an integer mean is f32, as mean's is */
	bool fmean = !strcmp(w, "mean") && !tir_dtype_is_float((enum tir_dtype)x->type.dtype);
	if (!s) { /* the devices are not known: typed as x */
		n->type.dtype = fmean ? TIR_DTYPE_F32 : n->type.dtype;
		return 0;
	}
	if (s->partial && strcmp(w, "sum") && strcmp(w, "mean"))
		return tir_errf(err, TIR_ETYPE, &n->loc,
				"all_reduce: %s holds the terms of a sum (a product contracting the sharded axis): "
				"op=%s of them is no reduction of the value; use sum or mean", x->ref_name ? x->ref_name : "its operand", w);
	/* the result: one piece's type (the whole value's when replicated or partial) */
	n->type = s->piece[0]->type;
	n->type.weak = false;
	n->type.dtype = fmean ? TIR_DTYPE_F32 : n->type.dtype;
	enum tir_op comb = !strcmp(w, "max") ? TIR_OP_MAXIMUM : !strcmp(w, "min") ? TIR_OP_MINIMUM
			 : !strcmp(w, "prod") ? TIR_OP_MUL : TIR_OP_ADD;
	struct tir_node *acc = NULL;
	for (int i = 0; i < s->n; i++) {
		struct tir_node *m = to_dev(pl, n, s->piece[i], s->dev[0], err);
		if (!m || !(acc = acc ? binary(pl, n, comb, acc, m, err) : m))
			return -err->code;
	}
	if (!strcmp(w, "mean")) {
		struct tir_node *c = scalar(pl, n, s->n, err);
		if (!c || !(acc = binary(pl, n, TIR_OP_DIV, acc, c, err)))
			return -err->code;
	}
	struct tir_shard *r = new_shard(pl, s->n, -1, false, s->dev);
	if (!r)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	for (int i = 0; i < s->n; i++) /* a copy on each device, from the first */
		if (!(r->piece[i] = to_dev(pl, n, acc, s->dev[i], err)))
			return -err->code;
	/* or, on a group's ranks, one collective of theirs */
	struct tir_coll *c = s->n > 1 ? tir_arena_alloc(&pl->p->arena, sizeof *c) : NULL;
	if (s->n > 1) {
		if (!c)
			return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
		c->n = s->n;
		c->op = w;
		c->dev = s->dev;
		c->in = s->piece;
		c->out = r->piece;
		for (int i = 0; i < s->n; i++) {
			struct tir_place_ext *e = tir_place_ext_make(pl, r->piece[i]);
			if (!e)
				return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
			e->coll = c;
		}
	}
	return sharded(pl, n, r, err);
}

/* conv2d(x, w, bias), maxpool2d(x), avgpool2d(x) of an x split along
 * its batch axis (the pools: or its channels): each piece, the weights
 * and bias whole on each device (placed nowhere; sharded ones: gathered) */
static int batch_split(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	const struct tir_node *f;
	int axis, rc = agree(pl, n, &f, &axis, err);
	if (rc < 0)
		return rc;
	struct tir_node *x = n->in[0];
	bool ok = !rc && f == x && (axis == 0 || (axis == 1 && n->op != TIR_OP_CONV2D));
	for (int k = 1; ok && k < n->nin; k++)
		ok = !n->in[k] || tir_place_dev(pl, n->in[k]) != TIR_DEV_SHARDED;
	if (!ok)
		return whole(pl, n, err);
	struct tir_shard *r = new_shard(pl, tir_place_shard(pl, x)->n, axis, false, tir_place_shard(pl, x)->dev);
	if (!r)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	struct tir_node *ins[3] = {NULL, NULL, NULL};
	for (int k = 1; k < n->nin && k < 3; k++)
		ins[k] = n->in[k] ? tir_place_exe(pl, n->in[k]) : NULL;
	for (int i = 0; i < r->n; i++) {
		ins[0] = tir_place_shard(pl, x)->piece[i];
		if (!(r->piece[i] = again(pl, n, ins, err)))
			return -err->code;
	}
	return sharded(pl, n, r, err);
}

/* The result's axis that x's split axis a becomes under n (transpose,
 * reshape, slice), or -1 when the pieces do not stay whole along it. */
static int moved_axis(struct tir_node *n, int a)
{
	const struct tir_ntype *in = &n->in[0]->type, *out = &n->type;
	if (n->op == TIR_OP_TRANSPOSE) {
		const struct tir_attr *perm = attr_of(n, "perm");
		if (!perm->set)
			return in->rank - 1 - a;
		for (int j = 0; j < perm->n; j++)
			if ((perm->v[j] < 0 ? perm->v[j] + in->rank : perm->v[j]) == a)
				return j;
		return -1;
	}
	if (n->op == TIR_OP_SLICE) {
		int64_t ax = attr_of(n, "axis")->i;
		return (ax < 0 ? ax + in->rank : ax) == a ? -1 : a;
	}
	/* reshape: an axis of the same length whose leading axes hold as many
	 * elements (row-major: a piece's elements stay one piece) */
	int64_t before = 1;
	for (int i = 0; i < a; i++)
		before *= in->shape[i];
	int64_t acc = 1;
	for (int j = 0; j < out->rank; j++) {
		if (acc == before && out->shape[j] == in->shape[a])
			return j;
		acc *= out->shape[j];
	}
	return -1;
}

static int movement(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	const struct tir_shard *s = tir_place_dev(pl, n->in[0]) == TIR_DEV_SHARDED ? tir_place_shard(pl, n->in[0]) : NULL;
	int j = s && !s->partial && s->axis >= 0 ? moved_axis(n, s->axis) : -1;
	if (j < 0)
		return whole(pl, n, err);
	struct tir_shard *r = new_shard(pl, s->n, j, false, s->dev);
	if (!r)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	if (n->op != TIR_OP_RESHAPE)
		return per_piece(pl, n, r, err);
	/* each piece to its own shape: the result's, the split axis's length
	 * shared out */
	int64_t *shape = tir_arena_alloc(&pl->p->arena, sizeof *shape * (size_t)(n->type.rank + 1));
	if (!shape)
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	memcpy(shape, n->type.shape, sizeof *shape * (size_t)n->type.rank);
	shape[j] /= s->n;
	for (int i = 0; i < s->n; i++) {
		struct tir_node *m = node(pl, n, TIR_OP_RESHAPE, 1, err);
		if (!m)
			return -err->code;
		struct tir_attr *a = attr_of(m, "shape");
		a->set = a->is_list = true;
		a->n = n->type.rank;
		a->v = shape;
		m->in[0] = s->piece[i];
		if (!(r->piece[i] = done(pl, m, n, err)))
			return -err->code;
	}
	return sharded(pl, n, r, err);
}

int tir_shard_node(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	pl->sharding = true; /* (place.c looks for sharded operands from now on) */
	if (n->op == TIR_OP_SHARD)
		return make_shard(pl, n, err);
	if (n->op == TIR_OP_ALL_REDUCE)
		return all_reduce(pl, n, err);
	/* an operand whose devices are not known (tir check, tir fmt without
	 * --remote): typed only */
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && tir_place_dev(pl, n->in[k]) == TIR_DEV_SHARDED && !tir_place_shard(pl, n->in[k])) {
			pl->dev[n->id] = TIR_DEV_SHARDED;
			return 0;
		}
	bool any = false;
	for (int k = 0; k < n->nin; k++)
		any = any || (n->in[k] && tir_place_dev(pl, n->in[k]) == TIR_DEV_SHARDED);
	if (!any) /* only aliases (a combined reduction, ...): the op again on them */
		return whole(pl, n, err);
	if (n->op == TIR_OP_CAST) /* elementwise too */
		return elementwise(pl, n, err);
	switch (tir_op(n->op)->kind) {
	case TIR_KIND_ELEMWISE:
		return elementwise(pl, n, err);
	case TIR_KIND_REDUCE:
		/* the scans, any, all, std, logsumexp (their own kernels): whole */
		if (tir_op(n->op)->fuse != TIR_FUSE_REDUCE && n->op != TIR_OP_ARGMAX && n->op != TIR_OP_ARGMIN)
			return whole(pl, n, err);
		if (n->op == TIR_OP_ARGMAX || n->op == TIR_OP_ARGMIN) {
			/* along another axis each piece's index is the value's; over
			 * the split axis (or all of it) the whole value's */
			const struct tir_shard *s = tir_place_shard(pl, n->in[0]);
			bool mask[TIR_MAX_RANK];
			tir_reduce_mask(n, n->in[0]->type.rank, mask);
			if (!s || s->partial || s->axis < 0 || mask[s->axis])
				return whole(pl, n, err);
		}
		return reduction(pl, n, err);
	case TIR_KIND_MATMUL:
		return product(pl, n, err);
	default:
		break;
	}
	/* the norms along the last axis, attention over the last two, of a
	 * value split along another: each piece (the weights whole on each) */
	if (n->op == TIR_OP_LAYERNORM || n->op == TIR_OP_RMSNORM || n->op == TIR_OP_ATTENTION) {
		const struct tir_node *f;
		int axis, rc = agree(pl, n, &f, &axis, err);
		if (rc < 0)
			return rc;
		int last = n->op == TIR_OP_ATTENTION ? n->type.rank - 2 : n->type.rank - 1;
		bool x_split = tir_place_dev(pl, n->in[0]) == TIR_DEV_SHARDED; /* q for attention */
		for (int k = 1; n->op != TIR_OP_ATTENTION && k < n->nin; k++)
			x_split = x_split && !(n->in[k] && tir_place_dev(pl, n->in[k]) == TIR_DEV_SHARDED);
		if (!rc && f && x_split && axis >= 0 && axis < last)
			return per_piece(pl, n, new_shard(pl, tir_place_shard(pl, f)->n, axis, false, tir_place_shard(pl, f)->dev), err);
		return whole(pl, n, err);
	}
	/* conv2d and the pools of a value split along its batch axis (the
	 * pools: or its channels), the weights whole on each device: each piece */
	if (n->op == TIR_OP_CONV2D || n->op == TIR_OP_MAXPOOL2D || n->op == TIR_OP_AVGPOOL2D)
		return batch_split(pl, n, err);
	/* concat along an axis that is not split: each piece (a value not
	 * sharded beside it sliced as the split) */
	if (n->op == TIR_OP_CONCAT) {
		const struct tir_node *f;
		int axis, rc = agree(pl, n, &f, &axis, err);
		if (rc < 0)
			return rc;
		int c = (int)attr_of(n, "axis")->i;
		c = c < 0 ? c + n->type.rank : c;
		if (!rc && f && axis >= 0 && axis != c)
			return per_piece(pl, n, new_shard(pl, tir_place_shard(pl, f)->n, axis, false, tir_place_shard(pl, f)->dev), err);
		return whole(pl, n, err);
	}
	/* moving values along the split axis, not across it: each piece */
	if (n->op == TIR_OP_TRANSPOSE || n->op == TIR_OP_RESHAPE || n->op == TIR_OP_SLICE)
		return movement(pl, n, err);
	/* softmax along an axis that is not split: each piece */
	if (n->op == TIR_OP_SOFTMAX || n->op == TIR_OP_LOG_SOFTMAX) {
		const struct tir_shard *s = tir_place_shard(pl, n->in[0]);
		int a = (int)attr_of(n, "axis")->i;
		a = a < 0 ? a + n->type.rank : a;
		if (s && !s->partial && s->axis != a)
			return per_piece(pl, n, new_shard(pl, s->n, s->axis, false, s->dev), err);
	}
	return whole(pl, n, err);
}
