/*
 * place.c — the placement pass: each checked node's device, from a `to`
 * or from its placed operands, and what the program's devices are
 * (tir_program_set_remotes).  Sharded values are shard.c's.  The pass runs
 * over each node as the parser checks it, in graph order: all_reduce's
 * type is one piece's, so what follows it is checked against placement's
 * answer.  Not here: running anything (lib/engine), types (lib/ir).
 */
#include "place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- devices ---- */

int tir_dev_parse(const char *s)
{
	if (!strcmp(s, "cpu"))
		return TIR_DEV_CPU;
	if (strncmp(s, "remote:", 7) || s[7] < '0' || s[7] > '9' || (s[7] == '0' && s[8]))
		return -1;
	long k = 0;
	for (const char *c = s + 7; *c; c++) {
		if (*c < '0' || *c > '9' || k >= TIR_DEV_MAX_REMOTES)
			return -1;
		k = k * 10 + (*c - '0');
	}
	return k < TIR_DEV_MAX_REMOTES ? TIR_DEV_REMOTE((int)k) : -1;
}

const char *tir_dev_str(int dev, char buf[24])
{
	if (dev == TIR_DEV_ANY)
		snprintf(buf, 24, "any");
	else if (dev == TIR_DEV_SHARDED)
		snprintf(buf, 24, "sharded");
	else if (dev == TIR_DEV_CPU)
		snprintf(buf, 24, "cpu");
	else
		snprintf(buf, 24, "remote:%d", dev - 1);
	return buf;
}

/* ---- the arrays ---- */

int tir_place_cover(struct tir_placed *pl, const struct tir_node *n)
{
	size_t want = (size_t)n->id + 1;
	if (want <= pl->n)
		return 0;
	if (tir_grow((void **)&pl->dev, &pl->cap, want, sizeof *pl->dev) ||
	    (pl->ext && tir_grow((void **)&pl->ext, &pl->capext, want, sizeof *pl->ext)))
		return -TIR_ENOMEM;
	for (size_t i = pl->n; i < want; i++) {
		pl->dev[i] = TIR_DEV_ANY;
		if (pl->ext)
			pl->ext[i] = NULL;
	}
	pl->n = want;
	return 0;
}

struct tir_place_ext *tir_place_ext_make(struct tir_placed *pl, const struct tir_node *n)
{
	TIR_ASSERT(n->id < pl->n);
	if (!pl->ext) { /* the first: ids [0, n) have none */
		if (!(pl->ext = calloc(pl->cap, sizeof *pl->ext)))
			return NULL;
		pl->capext = pl->cap;
	}
	if (!pl->ext[n->id])
		pl->ext[n->id] = tir_arena_alloc(&pl->p->arena, sizeof **pl->ext);
	return pl->ext[n->id];
}

/* ---- one node ---- */

static int fail(struct tir_node *n, struct tir_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct tir_node *n, struct tir_err *err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tir_errf(err, TIR_ETYPE, &n->loc, "%s: %s", tir_op(n->op)->name, msg);
}

static int place(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	char a[24], b[24];
	bool sharded = n->op == TIR_OP_SHARD || n->op == TIR_OP_ALL_REDUCE;
	for (int k = 0; k < n->nin && !sharded && pl->sharding; k++)
		sharded = n->in[k] && (tir_place_alias(pl, n->in[k]) || tir_place_dev(pl, n->in[k]) == TIR_DEV_SHARDED);
	if (sharded) /* made on the devices by shard.c */
		return tir_shard_node(pl, n, err);
	if (n->op == TIR_OP_TO) {
		const char *s = n->attr[tir_op_attr_index(n->op, "device")].s;
		int d = tir_dev_parse(s);
		if (d < 0)
			return fail(n, err,
				    "no device '%s': devices are \"cpu\" and \"remote:N\" (the N-th of --remote, "
				    "from 0)", s);
		int nr = pl->nremotes;
		if (d != TIR_DEV_CPU && pl->remotes_known && d - 1 >= nr) {
			if (!nr)
				return fail(n, err, "no device %s: no --remote is given", s);
			return fail(n, err, "no device %s: --remote names %d server%s (remote:0%s%s)", s, nr,
				    nr == 1 ? "" : "s", nr > 1 ? " .. " : "",
				    nr > 1 ? tir_dev_str(TIR_DEV_REMOTE(nr - 1), b) : "");
		}
		pl->dev[n->id] = (int16_t)d;
		return 0;
	}
	/* where the placed operands are (the common case, nothing placed: a
	 * read of each operand's device) */
	int first = -1, dev = TIR_DEV_ANY;
	for (int k = 0; k < n->nin; k++) {
		const struct tir_node *o = n->in[k];
		int od = o && o->id < pl->n ? pl->dev[o->id] : TIR_DEV_ANY;
		if (od == TIR_DEV_ANY)
			continue;
		if (first < 0) {
			first = k;
			dev = od;
		} else if (od != dev) {
			const struct tir_node *f = n->in[first];
			const char *fname = f->ref_name ? f->ref_name : "one operand";
			const char *oname = o->ref_name ? o->ref_name : "another";
			return fail(n, err,
				    "operands on different devices: %s is on %s, %s on %s; move one with "
				    "to(%s, \"%s\")", fname, tir_dev_str(dev, a), oname, tir_dev_str(od, b),
				    o->ref_name ? o->ref_name : "x", a);
		}
	}
	pl->dev[n->id] = (int16_t)dev;
	return 0;
}

/* tir_place_node past its first test, apart (not inlined): the test, at
 * every node of a program that places nothing, then saves and restores
 * no registers for the rest. */
static __attribute__((noinline)) int place_node(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	if (n->id == pl->n && n->id < pl->cap && (!pl->ext || n->id < pl->capext)) {
		/* the next node: the common case */
		if (pl->ext)
			pl->ext[n->id] = NULL;
		pl->n++;
	} else if (n->id >= pl->n && tir_place_cover(pl, n))
		return tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
	pl->dev[n->id] = TIR_DEV_ANY;
	int rc = place(pl, n, err);
	pl->nset += pl->dev[n->id] != TIR_DEV_ANY;
	return rc;
}

int tir_place_node(struct tir_placed *pl, struct tir_node *n, struct tir_err *err)
{
	/* nothing placed yet, and n places nothing itself: it is on no device,
	 * as every id past pl->n reads (a program without `to` or shard writes
	 * no word a node; the first that places covers the ids before it) */
	if (!pl->nset && !pl->sharding && n->op != TIR_OP_TO && n->op != TIR_OP_SHARD &&
	    n->op != TIR_OP_ALL_REDUCE && n->id >= pl->n)
		return 0;
	return place_node(pl, n, err);
}

const char *tir_place_kept_name(const struct tir_program *p, const struct tir_node *n)
{
	const char *name = tir_node_current_name(p, n);
	const struct tir_node *o = name ? NULL : tir_place_owner(tir_placed(p), n);
	return o ? tir_node_current_name(p, o) : name;
}

/* ---- the pass's hooks (struct tir_pass) ---- */

static int hook_node(void *ud, struct tir_program *p, struct tir_node *n, struct tir_err *err)
{
	(void)p;
	return tir_place_node(ud, n, err);
}

static void hook_cut(void *ud, size_t nnodes)
{
	struct tir_placed *pl = ud;
	for (size_t i = nnodes; i < pl->n; i++)
		pl->nset -= pl->dev[i] != TIR_DEV_ANY;
	if (nnodes < pl->n)
		pl->n = nnodes;
}

static bool hook_made(const void *ud, const struct tir_node *n)
{
	return tir_place_hidden(ud, n);
}

/* "  # on remote:1" after a placed value's line, when any value is placed
 * (a comment: the text parses back the same). */
static void hook_note(const void *ud, const struct tir_node *n, struct tir_str *out)
{
	const struct tir_placed *pl = ud;
	int dev = tir_place_dev(pl, n);
	char d[24];
	if (!pl->nset || dev == TIR_DEV_ANY)
		return;
	if (dev != TIR_DEV_SHARDED) {
		tir_str_addf(out, "  # on %s", tir_dev_str(dev, d));
		return;
	}
	const struct tir_shard *s = tir_place_shard(pl, n);
	if (!s) {
		tir_str_addf(out, "  # sharded");
		return;
	}
	tir_str_addf(out, "  # %s ", s->axis >= 0 ? "sharded over" : s->partial ? "terms of a sum on" : "a copy on each of");
	for (int i = 0; i < s->n; i++)
		tir_str_addf(out, "%s%s", i ? ", " : "", tir_dev_str(s->dev[i], d));
	if (s->axis >= 0)
		tir_str_addf(out, " along axis %d", s->axis);
}

static void hook_where(const void *ud, const struct tir_node *n, char buf[24])
{
	tir_dev_str(tir_place_dev(ud, n), buf);
}

static void hook_free(void *ud)
{
	struct tir_placed *pl = ud;
	free(pl->dev);
	free(pl->ext);
	free(pl);
}

struct tir_placed *tir_placed(const struct tir_program *p)
{
	return p->pass.node == hook_node ? p->pass.ud : NULL;
}

int tir_place_attach(struct tir_program *p)
{
	struct tir_placed *pl = calloc(1, sizeof *pl);
	if (!pl)
		return -TIR_ENOMEM;
	pl->p = p;
	if (p->pass.free)
		p->pass.free(p->pass.ud);
	p->pass = (struct tir_pass){.ud = pl, .node = hook_node, .cut = hook_cut, .made = hook_made,
				    .note = hook_note, .where = hook_where, .free = hook_free};
	return 0;
}

/* ---- the public half (tir.h) ---- */

struct tir_program *tir_program_new(void)
{
	struct tir_program *p = tir_program_alloc();
	if (p && tir_place_attach(p)) {
		tir_program_free(p);
		return NULL;
	}
	return p;
}

void tir_program_set_remotes(struct tir_program *p, int n)
{
	struct tir_placed *pl = tir_placed(p);
	if (!pl)
		return;
	pl->nremotes = n;
	pl->remotes_known = true;
}
