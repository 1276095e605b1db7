/*
 * sched.h — inside lib/engine: the scheduler.  It turns a placed graph and
 * a run's targets into steps: in each step one batch per device with work
 * (the nodes it computes, which of them stay there), then the moves and
 * the collectives that bring values into the next step.  Pure bookkeeping
 * (ggml's backend scheduler): no I/O, no thread, no device is called; what
 * it knows of the devices is a struct tir_sched_dev each and the holds
 * callback.  run.c carries a schedule out; tests/unit/test_sched.c checks
 * schedules with made-up devices.
 */
#ifndef TIR_SCHED_H
#define TIR_SCHED_H

#include "engine.h"

#include <stddef.h>
#include <stdint.h>

/* The most devices a schedule spans: dev[0] is the CPU, dev[1 + k]
 * remote:k (--remote's k-th server).  A node's TIR_DEV_* is its index. */
#define TIR_MAX_DEVICES 64

/* What the scheduler knows of a device. */
struct tir_sched_dev {
	const char *group;     /* the MPI group it is a rank of and that makes
				* collectives (32 hex digits), or NULL; borrowed */
	int rank;              /* its rank in group */
	bool all_reduce;       /* it can make its part of a collective */
};

/* An all_reduce made as one collective of its devices' group: the rank of
 * each of its pieces' devices. */
struct tir_sched_coll {
	const struct tir_coll *c;
	int ranks[TIR_MAX_DEVICES];
};

/* A value moved between two devices after a step: node src's value, on
 * device from, becomes node dst's (a `to`) on device to. */
struct tir_sched_move {
	uint32_t src, dst;
	int from, to;
	size_t src_item;       /* the item of this step that made src, or
				* TIR_SCHED_NONE (held there before) */
};

/* One device's batch: items [item, item + nitems) of the schedule. */
struct tir_sched_batch {
	int dev;
	size_t item, nitems;
};

/* A step: its batches run at once; then its moves, then its collectives,
 * bring what the next step reads.  Each a range of the schedule's arrays. */
struct tir_sched_step {
	size_t batch, nbatches;  /* in device order */
	size_t move, nmoves;     /* in node order */
	size_t coll, ncolls;     /* in node order */
};

#define TIR_SCHED_NONE SIZE_MAX

struct tir_sched {
	/* in (the caller's; borrowed until tir_sched_free): */
	const struct tir_program *p;
	const struct tir_placed *pl;   /* where p's nodes are placed (lib/place) */
	struct tir_node *const *targets;
	size_t nt;
	int ndev;                  /* devices 0 .. ndev-1 */
	int home;                  /* where a target placed nowhere is made */
	struct tir_sched_dev dev[TIR_MAX_DEVICES];
	/* whether device d holds node id's value now (kept by an earlier run):
	 * it is read there, not made again.  NULL: nothing is held. */
	bool (*holds)(const void *ctx, int d, uint32_t id);
	const void *ctx;

	/* out (tir_sched_plan; freed by tir_sched_free): */
	struct tir_sched_step *steps;
	int nsteps;
	struct tir_sched_batch *batches;
	size_t nbatches;
	/* by item: the node a batch makes; whether its device keeps it for a
	 * later step or another device (a remote's run_on stay); whether it is
	 * put back on its device (the CPU's: a later step there reads it) */
	struct tir_node **item_node;
	bool *item_stay, *item_put;
	size_t nitems;
	struct tir_sched_move *moves;
	size_t nmoves;
	struct tir_sched_coll *colls;
	size_t ncolls;
	/* by target: the item that makes it (every target is one's), and the
	 * device it is made on: where a value its batch did not hand back is
	 * fetched from after the steps */
	size_t *target_item;
	int *target_dev;

	/* by node, each with one meaning (the steps above are made of them): */
	bool *reach;               /* a target reads it, through any device */
	int *coll_of;              /* made by colls[coll_of - 1], or 0 */
	uint64_t *need;            /* the devices it is needed on */
	bool *moved;               /* brought to its device after a step (a `to`
				    * from another device, a collective's piece) */
	bool *moves_out;           /* read by another device after a step */
	uint8_t *sent_to;          /* where moves out of it go: TIR_SCHED_TO_* */
	bool *stays;               /* read by a later step on its own device */
	int *level;                /* the step it is made in */
};

enum { TIR_SCHED_TO_CPU = 1, TIR_SCHED_TO_REMOTE = 2 };

/* s's in filled: mark what the targets reach and check that every `to`
 * among it names a device that is there (a REPL's program may hold others,
 * placed before .remote changed: they stop no line that does not read
 * them).  returns 0, -TIR_ENOMEM, or -TIR_EDATA at the `to`. */
int tir_sched_reach(struct tir_sched *s, struct tir_err *err);
/* After tir_sched_reach (and after what holds answers is up to date): the
 * schedule.  returns 0 or -TIR_ENOMEM. */
int tir_sched_plan(struct tir_sched *s, struct tir_err *err);
/* Free what tir_sched_reach and tir_sched_plan made (not the in). */
void tir_sched_free(struct tir_sched *s);

#endif
