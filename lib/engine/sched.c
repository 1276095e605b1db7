/*
 * sched.c — the scheduler (sched.h): a placed graph and a run's targets
 * into steps, batches, moves and collectives, one small function a
 * concern; and the needs-walk every batch builder shares (engine.h).
 * Pure: nothing here does I/O or calls a device; run.c carries it out.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

/* Where placement is read: these accessors alone (placement is a pass of
 * its own, and where it keeps its answer may move). */
static inline int node_dev(const struct tir_sched *s, const struct tir_node *n)
{
	return tir_place_dev(s->pl, n);
}

static inline const struct tir_coll *node_coll(const struct tir_sched *s, const struct tir_node *n)
{
	return tir_place_coll(s->pl, n);
}

/* ---- the needs-walk ---- */

void tir_need_walk(const struct tir_program *p, bool *need, int32_t *uses, tir_held_fn *held, const void *ctx)
{
	for (size_t i = p->nnodes; i-- > 0;) {
		if (!need[i] || (held && held(ctx, (uint32_t)i)))
			continue;
		const struct tir_node *n = p->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			if (!n->in[k])
				continue;
			need[n->in[k]->id] = true;
			if (uses)
				uses[n->in[k]->id]++;
		}
	}
}

/* ---- the scheduler ---- */

/* The device index node n lives on, -1 placed nowhere. */
static int dev_of(const struct tir_sched *s, const struct tir_node *n)
{
	int d = node_dev(s, n);
	return d == TIR_DEV_ANY ? -1 : d;
}

/* The device a target is made on: its own, or the home device. */
static int made_on(const struct tir_sched *s, const struct tir_node *t)
{
	int d = dev_of(s, t);
	return d < 0 ? s->home : d;
}

static bool holds(const struct tir_sched *s, int d, uint32_t id)
{
	return s->holds && s->holds(s->ctx, d, id);
}

/* Whether p holds a `to` naming a device that is not there (reached or
 * not): a run on the CPU alone reads reach for nothing else. */
static bool to_missing(const struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	if (!s->pl || !s->pl->nset) /* nothing placed anywhere: no `to` either */
		return false;
	for (size_t i = p->nnodes; i-- > 0;)
		if (p->nodes[i]->op == TIR_OP_TO && dev_of(s, p->nodes[i]) >= s->ndev)
			return true;
	return false;
}

int tir_sched_reach(struct tir_sched *s, struct tir_err *err)
{
	const struct tir_program *p = s->p;
	size_t nn = p->nnodes;
	if (s->ndev == 1 && !to_missing(s))
		return 0;
	if (!(s->reach = calloc(nn + 1, sizeof *s->reach)))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < s->nt; i++)
		s->reach[s->targets[i]->id] = true;
	tir_need_walk(p, s->reach, NULL, NULL, NULL);
	/* the last `to` first, as the walk back meets them */
	for (size_t i = nn; i-- > 0;) {
		const struct tir_node *n = p->nodes[i];
		if (s->reach[i] && n->op == TIR_OP_TO && dev_of(s, n) >= s->ndev) {
			char dn[24];
			return tir_errf(err, TIR_EDATA, &n->loc, "to: no device %s: %s", tir_dev_str(node_dev(s, n), dn),
					s->ndev == 1 ? "no --remote is given" : "--remote names fewer servers");
		}
	}
	return 0;
}

/* Whether c runs as one collective of its devices (into ranks): every
 * piece on a rank of one MPI group, no rank twice and rank 0 among them
 * (it orders the group's collectives: docs/groups.md), of a dtype and an
 * op MPI reduces as tir does (an integer mean, f16, bf16 and bool are
 * lowered: the checker's moves and elementwise ops run instead). */
static bool coll_at_once(const struct tir_sched *s, const struct tir_coll *c, int *ranks)
{
	enum tir_dtype dt = (enum tir_dtype)c->out[0]->type.dtype;
	bool fl = dt == TIR_DTYPE_F32 || dt == TIR_DTYPE_F64;
	bool in = dt == TIR_DTYPE_I32 || dt == TIR_DTYPE_I64 || dt == TIR_DTYPE_I8 || dt == TIR_DTYPE_U8 ||
		  dt == TIR_DTYPE_I16;
	if ((!fl && !(in && strcmp(c->op, "mean"))) || c->in[0]->type.dtype != dt)
		return false;
	const char *gid = NULL;
	uint64_t seen = 0;
	for (int i = 0; i < c->n; i++) {
		int d = c->dev[i];
		if (d <= 0 || d >= s->ndev || c->out[i] == c->in[i])
			return false;
		const struct tir_sched_dev *dv = &s->dev[d];
		const char *g = dv->all_reduce ? dv->group : NULL;
		int rk = dv->rank;
		if (!g || (gid && strcmp(g, gid)) || rk < 0 || rk >= 64 || (seen >> rk & 1))
			return false;
		gid = g;
		seen |= 1ull << rk;
		ranks[i] = rk;
	}
	return seen & 1;
}

/* The all_reduces the targets reach that a group's ranks make as one
 * collective each (colls, coll_of); the others run as lowered. */
static int sched_collectives(struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	for (size_t i = 0; i < p->nnodes; i++) {
		const struct tir_coll *c = node_coll(s, p->nodes[i]);
		if (!c || c->out[0] != p->nodes[i] || !s->reach[i])
			continue;
		struct tir_sched_coll *g = realloc(s->colls, sizeof *g * (s->ncolls + 1));
		if (!g)
			return -TIR_ENOMEM;
		s->colls = g;
		g[s->ncolls].c = c;
		if (!coll_at_once(s, c, g[s->ncolls].ranks))
			continue;
		for (int j = 0; j < c->n; j++)
			s->coll_of[c->out[j]->id] = (int)s->ncolls + 1;
		s->ncolls++;
	}
	return 0;
}

/* What each device needs, from the last node back: a target where it is
 * made; an op's operands where it runs; a `to` from another device its
 * operand there (a move); a collective's piece every piece's operand on
 * its device (the collective).  A value a device holds is read there. */
static void sched_needs(struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	for (size_t i = 0; i < s->nt; i++)
		s->need[s->targets[i]->id] |= 1ull << made_on(s, s->targets[i]);
	for (size_t i = p->nnodes; i-- > 0;) {
		if (!s->need[i])
			continue;
		const struct tir_node *n = p->nodes[i];
		for (int d = 0; d < s->ndev; d++) {
			if (!(s->need[i] >> d & 1) || holds(s, d, (uint32_t)i))
				continue;
			if (s->coll_of[i]) {
				const struct tir_coll *c = s->colls[s->coll_of[i] - 1].c;
				for (int j = 0; j < c->n; j++) {
					s->moved[c->out[j]->id] = true;
					s->need[c->out[j]->id] |= 1ull << c->dev[j];
					s->moves_out[c->in[j]->id] = true;
					s->need[c->in[j]->id] |= 1ull << c->dev[j];
				}
				continue;
			}
			int from = n->op == TIR_OP_TO ? dev_of(s, n->in[0]) : -1;
			if (from >= 0 && from != d) {
				s->moved[i] = true;
				s->moves_out[n->in[0]->id] = true;
				s->need[n->in[0]->id] |= 1ull << from;
				continue;
			}
			for (int k = 0; k < n->nin; k++)
				if (n->in[k])
					s->need[n->in[k]->id] |= 1ull << d;
		}
	}
}

/* The step each needed node is made in: a moved value one step after its
 * operand, a collective's pieces one after the last of its operands; and
 * which values a later step on their own device reads (stays). */
static void sched_levels(struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	int *lvl = s->level;
	s->nsteps = 0;
	for (size_t i = 0; i < p->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (!s->need[i])
			continue;
		if (s->coll_of[i]) {
			const struct tir_coll *c = s->colls[s->coll_of[i] - 1].c;
			for (int j = 0; j < c->n; j++)
				lvl[i] = lvl[c->in[j]->id] + 1 > lvl[i] ? lvl[c->in[j]->id] + 1 : lvl[i];
		} else {
			for (int k = 0; k < n->nin; k++) {
				const struct tir_node *o = n->in[k];
				int l = o ? lvl[o->id] + (s->moved[i] ? 1 : 0) : 0;
				lvl[i] = l > lvl[i] ? l : lvl[i];
			}
			for (int k = 0; k < n->nin; k++) {
				const struct tir_node *o = n->in[k];
				if (o && !s->moved[i] && dev_of(s, o) >= 0 && lvl[o->id] < lvl[i])
					s->stays[o->id] = true;
			}
		}
		s->nsteps = lvl[i] + 1 > s->nsteps ? lvl[i] + 1 : s->nsteps;
	}
}

/* Where the moves out of each value go (a moved node's first operand is
 * what moves to it). */
static void sched_sent_to(struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	for (size_t j = 0; j < p->nnodes; j++) {
		const struct tir_node *n = p->nodes[j];
		if (!s->moved[j] || n->nin < 1 || !n->in[0] || !s->moves_out[n->in[0]->id])
			continue;
		s->sent_to[n->in[0]->id] |= dev_of(s, n) == 0 ? TIR_SCHED_TO_CPU
					  : dev_of(s, n) > 0 ? TIR_SCHED_TO_REMOTE : 0;
	}
}

/* An entry to sort into its place: batch items by step, device, then the
 * run's targets before the rest, each in order; moves and collectives by
 * step, then in order. */
struct sched_key {
	size_t major, minor;
	size_t what;  /* a node id, a target's index, a collective's index */
};

static int key_cmp(const void *a, const void *b)
{
	const struct sched_key *x = a, *y = b;
	if (x->major != y->major)
		return x->major < y->major ? -1 : 1;
	return x->minor < y->minor ? -1 : x->minor > y->minor;
}

/* Room in *k for entry n (doubling); 0, or 1 out of memory. */
static int grow_keys(struct sched_key **k, size_t *cap, size_t n)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	struct sched_key *g = realloc(*k, sizeof *g * c);
	if (!g)
		return 1;
	*k = g;
	*cap = c;
	return 0;
}

/* Whether a remote keeps node i, a value of its batch it stays or sends
 * on: for a later step there, or for another server to fetch; what only
 * the CPU reads comes back (else it is fetched from where it stays after
 * the step: not made again there, and servers move it between them). */
static bool item_stays(const struct tir_sched *s, size_t i, int d)
{
	uint8_t to = s->moves_out[i] ? s->sent_to[i] : 0;
	return d > 0 && (!(to & TIR_SCHED_TO_CPU) || s->stays[i] || (to & TIR_SCHED_TO_REMOTE));
}

/* The batches: per step, one per device with work: the run's targets made
 * there in that step, then what stays for a later step or moves out. */
static int sched_batches(struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	size_t nn = p->nnodes, nk = 0, cap = 0, nd = (size_t)s->ndev;
	struct sched_key *k = NULL;
	bool *listed = calloc(nn + 1, sizeof *listed); /* in a batch already */
	int rc = -TIR_ENOMEM;
	if (!listed)
		goto out;
	for (size_t i = 0; i < s->nt; i++) {
		const struct tir_node *t = s->targets[i];
		if (listed[t->id])
			continue;
		listed[t->id] = true;
		if (grow_keys(&k, &cap, nk))
			goto out;
		k[nk++] = (struct sched_key){(size_t)s->level[t->id] * nd + (size_t)made_on(s, t), i, t->id};
	}
	for (size_t i = 0; i < nn; i++) {
		int d = dev_of(s, p->nodes[i]);
		if (listed[i] || d < 0 || d >= s->ndev || !(s->stays[i] || s->moves_out[i]) || !(s->need[i] >> d & 1))
			continue;
		listed[i] = true;
		if (grow_keys(&k, &cap, nk))
			goto out;
		k[nk++] = (struct sched_key){(size_t)s->level[i] * nd + (size_t)d, s->nt + i, i};
	}
	if (nk)
		qsort(k, nk, sizeof *k, key_cmp);
	s->item_node = malloc(sizeof *s->item_node * (nk + 1));
	s->item_stay = malloc(sizeof *s->item_stay * (nk + 1));
	s->item_put = malloc(sizeof *s->item_put * (nk + 1));
	s->batches = malloc(sizeof *s->batches * (nk + 1));
	if (!s->item_node || !s->item_stay || !s->item_put || !s->batches)
		goto out;
	for (size_t j = 0; j < nk; j++) {
		size_t id = k[j].what;
		int d = (int)(k[j].major % nd), L = (int)(k[j].major / nd);
		bool target = k[j].minor < s->nt;
		s->item_node[j] = p->nodes[id];
		s->item_stay[j] = !target && item_stays(s, id, d);
		s->item_put[j] = d == 0 && s->stays[id];
		if (!j || k[j].major != k[j - 1].major) {
			s->batches[s->nbatches] = (struct tir_sched_batch){.dev = d, .item = j};
			if (!s->steps[L].nbatches)
				s->steps[L].batch = s->nbatches;
			s->steps[L].nbatches++;
			s->nbatches++;
		}
		s->batches[s->nbatches - 1].nitems++;
	}
	s->nitems = nk;
	rc = 0;
out:
	free(k);
	free(listed);
	return rc;
}

/* Which item makes each target (a node is listed once), and the device it
 * is made on. */
static int sched_targets(struct tir_sched *s)
{
	size_t nn = s->p->nnodes;
	size_t *item_of = malloc(sizeof *item_of * (nn + 1));
	s->target_item = malloc(sizeof *s->target_item * (s->nt + 1));
	s->target_dev = malloc(sizeof *s->target_dev * (s->nt + 1));
	if (!item_of || !s->target_item || !s->target_dev) {
		free(item_of);
		return -TIR_ENOMEM;
	}
	for (size_t i = 0; i < s->nt; i++)
		item_of[s->targets[i]->id] = TIR_SCHED_NONE;
	for (size_t j = 0; j < s->nitems; j++)
		item_of[s->item_node[j]->id] = j;
	for (size_t i = 0; i < s->nt; i++) {
		s->target_item[i] = item_of[s->targets[i]->id];
		s->target_dev[i] = made_on(s, s->targets[i]);
	}
	free(item_of);
	return 0;
}

/* The item of the step before node dst's that made src, or none. */
static size_t item_in_step(const struct tir_sched *s, int step, uint32_t src)
{
	const struct tir_sched_step *st = &s->steps[step];
	for (size_t b = st->batch; b < st->batch + st->nbatches; b++)
		for (size_t j = s->batches[b].item; j < s->batches[b].item + s->batches[b].nitems; j++)
			if (s->item_node[j]->id == src)
				return j;
	return TIR_SCHED_NONE;
}

/* The moves after each step: every `to` from another device made in the
 * next (a collective's pieces are made by the collective). */
static int sched_moves(struct tir_sched *s)
{
	const struct tir_program *p = s->p;
	size_t nk = 0, cap = 0;
	struct sched_key *k = NULL;
	for (size_t i = 0; i < p->nnodes; i++) {
		if (!s->moved[i] || s->coll_of[i] || s->level[i] < 1)
			continue;
		if (grow_keys(&k, &cap, nk)) {
			free(k);
			return -TIR_ENOMEM;
		}
		k[nk++] = (struct sched_key){(size_t)s->level[i] - 1, i, i};
	}
	if (nk)
		qsort(k, nk, sizeof *k, key_cmp);
	if (!(s->moves = malloc(sizeof *s->moves * (nk + 1)))) {
		free(k);
		return -TIR_ENOMEM;
	}
	for (size_t j = 0; j < nk; j++) {
		const struct tir_node *n = p->nodes[k[j].what], *o = n->in[0];
		int L = (int)k[j].major;
		s->moves[j] = (struct tir_sched_move){.src = o->id, .dst = n->id, .from = dev_of(s, o), .to = dev_of(s, n),
						      .src_item = item_in_step(s, L, o->id)};
		if (!s->steps[L].nmoves)
			s->steps[L].move = j;
		s->steps[L].nmoves++;
	}
	s->nmoves = nk;
	free(k);
	return 0;
}

/* The collectives after each step: one whose pieces the next step needs.
 * Those needed by none are dropped from colls. */
static int sched_coll_steps(struct tir_sched *s)
{
	size_t nk = 0;
	struct sched_key *k = malloc(sizeof *k * (s->ncolls + 1));
	if (!k)
		return -TIR_ENOMEM;
	for (size_t c = 0; c < s->ncolls; c++) {
		uint32_t o0 = s->colls[c].c->out[0]->id;
		if (s->moved[o0] && s->level[o0] >= 1)
			k[nk++] = (struct sched_key){(size_t)s->level[o0] - 1, c, c};
	}
	qsort(k, nk, sizeof *k, key_cmp);
	struct tir_sched_coll *all = s->colls;
	s->colls = malloc(sizeof *s->colls * (nk + 1));
	if (!s->colls) {
		s->colls = all;
		free(k);
		return -TIR_ENOMEM;
	}
	for (size_t j = 0; j < nk; j++) {
		int L = (int)k[j].major;
		s->colls[j] = all[k[j].what];
		if (!s->steps[L].ncolls)
			s->steps[L].coll = j;
		s->steps[L].ncolls++;
	}
	s->ncolls = nk;
	free(all);
	free(k);
	return 0;
}

/* One device (the CPU alone): nothing moves, nothing is a collective
 * (coll_at_once wants remotes), every node is made in step 0; so the
 * schedule is one batch of the distinct targets in their order, what the
 * general path below makes, without its walks over every node (a cached
 * re-run of a long program pays for nothing else here). */
static int sched_one_device(struct tir_sched *s)
{
	size_t nn = s->p->nnodes, nt = s->nt, nk = 0;
	bool *listed = calloc(nn + 1, sizeof *listed);
	s->item_node = malloc(sizeof *s->item_node * (nt + 1));
	s->item_stay = calloc(nt + 1, sizeof *s->item_stay);
	s->item_put = calloc(nt + 1, sizeof *s->item_put);
	s->target_item = malloc(sizeof *s->target_item * (nt + 1));
	s->target_dev = malloc(sizeof *s->target_dev * (nt + 1));
	s->steps = calloc(2, sizeof *s->steps);
	s->batches = calloc(2, sizeof *s->batches);
	size_t *item_of = malloc(sizeof *item_of * (nn + 1));
	if (!listed || !s->item_node || !s->item_stay || !s->item_put || !s->target_item || !s->target_dev ||
	    !s->steps || !s->batches || !item_of) {
		free(listed);
		free(item_of);
		return -TIR_ENOMEM;
	}
	for (size_t i = 0; i < nt; i++) {
		const struct tir_node *t = s->targets[i];
		if (!listed[t->id]) {
			listed[t->id] = true;
			item_of[t->id] = nk;
			s->item_node[nk++] = s->targets[i];
		}
		s->target_item[i] = item_of[t->id];
		s->target_dev[i] = made_on(s, t);
	}
	free(listed);
	free(item_of);
	s->nitems = nk;
	if (nk) {
		s->nsteps = 1;
		s->steps[0].nbatches = 1;
		s->batches[0] = (struct tir_sched_batch){.dev = made_on(s, s->targets[0]), .item = 0, .nitems = nk};
		s->nbatches = 1;
	}
	return 0;
}

int tir_sched_plan(struct tir_sched *s, struct tir_err *err)
{
	size_t nn = s->p->nnodes;
	if (s->ndev == 1 && !s->reach)
		return sched_one_device(s) ? tir_errf(err, TIR_ENOMEM, NULL, "out of memory") : 0;
	s->coll_of = calloc(nn + 1, sizeof *s->coll_of);
	s->need = calloc(nn + 1, sizeof *s->need);
	s->moved = calloc(nn + 1, sizeof *s->moved);
	s->moves_out = calloc(nn + 1, sizeof *s->moves_out);
	s->sent_to = calloc(nn + 1, sizeof *s->sent_to);
	s->stays = calloc(nn + 1, sizeof *s->stays);
	s->level = calloc(nn + 1, sizeof *s->level);
	if (!s->coll_of || !s->need || !s->moved || !s->moves_out || !s->sent_to || !s->stays || !s->level ||
	    sched_collectives(s))
		goto oom;
	sched_needs(s);
	sched_levels(s);
	sched_sent_to(s);
	if (!(s->steps = calloc((size_t)s->nsteps + 1, sizeof *s->steps)) || sched_batches(s) ||
	    sched_targets(s) || sched_moves(s) || sched_coll_steps(s))
		goto oom;
	return 0;
oom:
	return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
}

void tir_sched_free(struct tir_sched *s)
{
	free(s->steps);
	free(s->batches);
	free(s->item_node);
	free(s->item_stay);
	free(s->item_put);
	free(s->moves);
	free(s->colls);
	free(s->target_item);
	free(s->target_dev);
	free(s->reach);
	free(s->coll_of);
	free(s->need);
	free(s->moved);
	free(s->moves_out);
	free(s->sent_to);
	free(s->stays);
	free(s->level);
}
