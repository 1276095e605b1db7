/*
 * place.h — lib/place's one header: where each value of a checked graph
 * runs.  Placement is a pass of its own over lib/ir's graph (which knows
 * no devices): `to` places a value, an op lives where its placed operands
 * are, `shard` splits a value over devices and an op on sharded values is
 * made again for each piece (shard.c), all_reduce is lowered to moves and
 * elementwise ops (or run as one collective, decided by lib/engine/sched.c).  Its
 * answer, struct tir_placed, is what the executor runs; only the executor
 * (lib/engine), the batches (lib/net) and tir fmt's notes read it.
 */
#ifndef TIR_PLACE_H
#define TIR_PLACE_H

#include "../ir/ir.h"

/* Where a node lives.  A value placed nowhere (an input, a literal, a
 * load, a creation op, and what is computed from such values alone) is
 * computed on each device that uses it; `to` places a value, and an op
 * lives where its placed operands are. */
#define TIR_DEV_ANY (-1)
#define TIR_DEV_SHARDED (-2)
#define TIR_DEV_CPU 0
#define TIR_DEV_REMOTE(k) ((k) + 1)
#define TIR_DEV_MAX_REMOTES 4096

/* A sharded value: a piece on each of n devices.  axis >= 0: each piece
 * is a slice along axis; axis < 0: each is the whole value (replicated) or,
 * partial, a term of it (the value is their sum). */
struct tir_shard {
	int n;
	int axis;
	bool partial;
	int16_t *dev;                /* n TIR_DEV_* */
	struct tir_node **piece;     /* n */
};

/* all_reduce(x, op) of a sharded x (shard.c): out[i], on dev[i], is the
 * op of in[0..n) elementwise.  Placement lowers it to moves and
 * elementwise ops through dev[0], which any devices can run; when the
 * devices are ranks of one MPI group an executor may make out[0..n) as
 * one collective of theirs instead (lib/engine/sched.c), and never run the
 * lowering. */
struct tir_coll {
	int n;
	const char *op;              /* sum mean max min prod */
	int16_t *dev;                /* n TIR_DEV_* */
	struct tir_node **in, **out; /* n each */
};

/* What placement says of a node beyond its device: set only for the
 * nodes sharding touches (a few of a program), NULL for the rest. */
struct tir_place_ext {
	/* A node a run never computes itself: its value is alias's (a node
	 * on the devices; its operands are the user's, for fmt and errors).
	 * Set when an operand is sharded or has an alias. */
	struct tir_node *alias;
	struct tir_node *shown;   /* a sharded value printed or saved: gathered
				   * here (pieces come back with their batches) */
	struct tir_node *owner;   /* a piece: the sharded node it is a piece of */
	struct tir_shard *shard;  /* TIR_DEV_SHARDED: its pieces (NULL: not
				   * known, the remotes not being known) */
	struct tir_coll *coll;    /* a piece of an all_reduce's result: the
				   * collective it may be made by (shard.c) */
	bool hidden;              /* made by placement (a shard's pieces, their
				   * gather): tir fmt does not show it */
};

/* The placement of one program: per-node arrays indexed by node id, for
 * ids [0, n); an id past n (a node made after the last one placed, a
 * literal never placed) is placed nowhere.  The nodes placement adds
 * (pieces, gathers) are ordinary nodes of the program, after their
 * operands; its structs (ext, shard, coll) live in the program's arena. */
struct tir_placed {
	struct tir_program *p;       /* borrowed: the program it places */
	int16_t *dev;                /* by id: TIR_DEV_* */
	/* by id: NULL for most nodes; the array itself NULL until a node
	 * has one (a program that shards nothing writes no word a node) */
	struct tir_place_ext **ext;
	size_t n, cap, capext;
	size_t nset;                 /* of ids [0, n), those placed somewhere */
	int nremotes;                /* remote:0 .. remote:nremotes-1 exist ... */
	bool remotes_known;          /* ... when this is set (tir_program_set_remotes) */
	bool sharding;               /* shard.c has run: an operand may be sharded or
				      * have an alias (until then no node has either) */
};

/* The placement of p (tir_program_new attaches one); NULL for a program
 * made by tir_program_alloc.  borrowed, valid until tir_program_free. */
struct tir_placed *tir_placed(const struct tir_program *p);
/* Attach a placement to p, run over each node as it is checked from now
 * on.  0 or -TIR_ENOMEM. */
int tir_place_attach(struct tir_program *p);

/* ---- reading it (cheap: inline, an array read) ---- */

static inline int tir_place_dev(const struct tir_placed *pl, const struct tir_node *n)
{
	return pl && n->id < pl->n ? pl->dev[n->id] : TIR_DEV_ANY;
}
static inline const struct tir_place_ext *tir_place_ext_of(const struct tir_placed *pl, const struct tir_node *n)
{
	return pl && pl->ext && n->id < pl->n ? pl->ext[n->id] : NULL;
}
static inline struct tir_node *tir_place_alias(const struct tir_placed *pl, const struct tir_node *n)
{
	const struct tir_place_ext *e = tir_place_ext_of(pl, n);
	return e ? e->alias : NULL;
}
static inline struct tir_shard *tir_place_shard(const struct tir_placed *pl, const struct tir_node *n)
{
	const struct tir_place_ext *e = tir_place_ext_of(pl, n);
	return e ? e->shard : NULL;
}
static inline const struct tir_coll *tir_place_coll(const struct tir_placed *pl, const struct tir_node *n)
{
	const struct tir_place_ext *e = tir_place_ext_of(pl, n);
	return e ? e->coll : NULL;
}
static inline struct tir_node *tir_place_owner(const struct tir_placed *pl, const struct tir_node *n)
{
	const struct tir_place_ext *e = tir_place_ext_of(pl, n);
	return e ? e->owner : NULL;
}
static inline bool tir_place_hidden(const struct tir_placed *pl, const struct tir_node *n)
{
	const struct tir_place_ext *e = tir_place_ext_of(pl, n);
	return e && e->hidden;
}
/* The node a run computes for n: n, or its alias. */
static inline struct tir_node *tir_place_exe(const struct tir_placed *pl, struct tir_node *n)
{
	struct tir_node *a = n ? tir_place_alias(pl, n) : NULL;
	return a ? a : n;
}
/* The node a run computes to print or save n: a sharded value is gathered
 * by this process. */
static inline struct tir_node *tir_place_shown(const struct tir_placed *pl, struct tir_node *n)
{
	const struct tir_place_ext *e = n ? tir_place_ext_of(pl, n) : NULL;
	return e && e->shown ? e->shown : tir_place_exe(pl, n);
}
/* The name a value is kept under between runs (the REPL): the name bound
 * to n now, or for a piece of a sharded value its value's; NULL: none. */
const char *tir_place_kept_name(const struct tir_program *p, const struct tir_node *n);

/* ---- devices ---- */

/* The device `to`'s string names (TIR_DEV_*), or -1 when it names none. */
int tir_dev_parse(const char *s);
/* "cpu", "remote:3", "sharded", or "any" for TIR_DEV_ANY, into buf. */
const char *tir_dev_str(int dev, char buf[24]);

/* ---- the pass (place.c, shard.c) ---- */

/* Place n (checked, its operands placed): its device from its operands (a
 * `to` from its device); operands placed on two devices are an error at
 * n, as is `to` a device that is not there when the remotes are known.
 * 0 or -code. */
int tir_place_node(struct tir_placed *pl, struct tir_node *n, struct tir_err *err);
/* The ext of n, made when n has none (in the program's arena); NULL: out
 * of memory.  n's id must be placed or being placed (tir_place_cover). */
struct tir_place_ext *tir_place_ext_make(struct tir_placed *pl, const struct tir_node *n);
/* Room for ids up to n->id, the new ones placed nowhere.  0 or -TIR_ENOMEM. */
int tir_place_cover(struct tir_placed *pl, const struct tir_node *n);
/* shard.c: when an operand of n (checked, its type known) is sharded or
 * has an alias, or n is a shard: make the nodes that compute it on the
 * devices (n's alias; its pieces if sharded).  0 when nothing is to be
 * done or it is done, else -code with err at n. */
int tir_shard_node(struct tir_placed *pl, struct tir_node *n, struct tir_err *err);

#endif
