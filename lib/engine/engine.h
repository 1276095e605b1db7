/*
 * engine.h — lib/engine's one header for the rest of the library: the
 * executor (struct tir_exec, whose public half is in tir.h) above the
 * kernels (lib/exec) and the fuser (lib/fusion), as lib/net sees it: the
 * server runs its batches through it, the client reads a run's inputs and
 * reports its progress and spans into it.  How the executor reaches the
 * places that compute (the CPU, a tir serve) is device.h's, inside the engine.
 */
#ifndef TIR_ENGINE_H
#define TIR_ENGINE_H

#include "../exec/exec.h"
#include "../place/place.h"

/* Give `input NAME` the value t (takes ownership of t's reference; t is
 * left empty).  `what` names where it came from, for messages. */
int tir_exec_set_input(struct tir_exec *x, const char *name, struct tir_tensor *t,
		       const char *what, struct tir_err *err);

/* The needs-walk (sched.c), the one place that says which nodes of p a
 * run's targets need: need[0 .. p->nnodes) holds the targets on entry and
 * every node they read on return, walked from the last node back.  A node
 * held(ctx, id) says is held (a value there already; NULL: none is) is
 * needed, but not what it reads.  uses (NULL: not counted) gets one read
 * of each operand of every node walked through. */
typedef bool tir_held_fn(const void *ctx, uint32_t id);
void tir_need_walk(const struct tir_program *p, bool *need, int32_t *uses, tir_held_fn *held, const void *ctx);

/* ---- for lib/net: a run whose graph another tir computes ---- */

/* The value given for INPUT node id, or NULL. */
const struct tir_tensor *tir_exec_input_value(const struct tir_exec *x, uint32_t id);
struct tir_program *tir_exec_program(const struct tir_exec *x);
/* Whether the values of named nodes are kept between runs (the REPL). */
bool tir_exec_keeping(const struct tir_exec *x);
/* Counts the inputs given so far: when it moves, values computed before
 * may be stale. */
uint64_t tir_exec_input_gen(const struct tir_exec *x);
bool tir_exec_fusing(const struct tir_exec *x);
bool tir_exec_profiling(const struct tir_exec *x);
/* The interrupt flag (tir_exec_set_interrupt), or NULL. */
volatile sig_atomic_t *tir_exec_interrupt_flag(const struct tir_exec *x);

/* What a remote run reports of itself (lib/net/client.c): its progress
 * (to tir_exec_set_progress's fn, if any), and, while tracing, its spans
 * (tir_exec_trace_json writes them).  t0_ms, t1_ms: CLOCK_MONOTONIC ms. */
enum { TIR_TRACK_CLIENT, TIR_TRACK_NET, TIR_TRACK_SERVER };
struct tir_net_span {
	int track;
	const struct tir_remote *who; /* the remote it is of: each its own tracks in a run over several */
	char name[64];
	const char *cat;         /* static: "batch", "request", "upload", "fetch", "server" */
	double t0_ms, t1_ms;
	long status;             /* request: the HTTP status (0: none, the transfer failed) */
	uint64_t up, down;       /* bytes: request (head and body), upload, fetch */
	char blob[65];           /* upload: the blob's name */
	int count;               /* batch: the blobs it names; server plan: kernels */
	char *text;              /* server plan: its explain text (taken over), or NULL */
};
void tir_exec_progress(struct tir_exec *x, const struct tir_progress *p);
bool tir_exec_tracing(const struct tir_exec *x);
void tir_exec_trace_span(struct tir_exec *x, struct tir_net_span *s);

/* Counts tir_exec_run's calls: the batches of one run (one per device and
 * step) see the same number. */
uint64_t tir_exec_run_seq(const struct tir_exec *x);

/* Release the inputs given and the last run's results: `tir serve` keeps
 * an exec for its plan cache, not for its data. */
void tir_exec_clear_inputs(struct tir_exec *x);

/* What a remote run hands back. */
struct tir_remote_result {
	/* in, for one batch of a run over several devices (zeroed: none): */
	const bool *stay;              /* by target: kept in the session, not sent back */
	const struct tir_tensor *given; /* by node id: values moved here, sent as blobs */
	size_t ngiven;
	/* out: */
	struct tir_tensor *values;     /* ntargets of them, zeroed by the caller; filled (not a stay's) */
	struct tir_exec_stats stats;
	char *explain, *profile;       /* new (malloc), or NULL */
};

#endif
