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
void tir_need_walk(const struct tir_program *p, bool *need, int64_t *uses, tir_held_fn *held, const void *ctx);

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
/* Whether r's session holds the value of node id of x's program (the
 * remote device's holds; lib/net/client.c, through door.c). */
bool tir_remote_holds(const struct tir_remote *r, const struct tir_exec *x, uint32_t id);
/* Bring what r's session holds up to date with x's program and inputs as
 * they are now (a rebound name's value, one computed from an input given
 * again, go), so that tir_remote_holds is right for the run about to be
 * planned; r's statistics (tir_remote_stats) start from zero, to add up
 * over that run's batches.  returns 0 or -TIR_ENOMEM. */
int tir_remote_sync(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err);
/* lib/net/client.c: compute targets[0..ntargets) of x's program on r.
 * The values come back in each target node's dtype and shape.  A program
 * or data error is reported at its source position, as a local run would. */
int tir_remote_run(struct tir_remote *r, struct tir_exec *x, struct tir_node *const *targets,
		   size_t ntargets, struct tir_remote_result *res, struct tir_err *err);

/* ---- server to server (lib/net/client.c, through door.c; docs/protocol.md,
 * "Server to server"): a value one remote's session holds goes to
 * another's directly, never through this client ---- */

/* "http://HOST:PORT" or "https://HOST:PORT": r's server as this client
 * reaches it.  borrowed, valid until tir_remote_close. */
const char *tir_remote_base_url(const struct tir_remote *r);
/* A capability for the value of node id of x's program that r's session
 * holds (tir_remote_holds, after the held values are brought up to date
 * with x's inputs): one use, by a server holding a token of the tenant
 * r's token is of, while r's session lives.  cap: its 64 hex digits;
 * blob: the value's blob name (net.h), which the receiver checks.
 * returns 0; -TIR_EDATA when r holds no such value; -TIR_ENET when the
 * server cannot be reached or refuses (the message says what it said). */
int tir_remote_export(struct tir_remote *r, const struct tir_exec *x, uint32_t id, char cap[65], char blob[65],
		      struct tir_err *err);
/* Have r's server fetch node id's value from from's server with cap and
 * blob (from tir_remote_export on from), check it, and keep it in r's
 * session (made now if need be) under node id's key: then
 * tir_remote_holds(r, x, id) is true and r's next batches read it as a
 * leaf.  from's address is sent as this client reaches it, with from's
 * token.  The value is stale on r, as one r computed, once an input it
 * was computed from is given again.  x must keep values (the REPL's,
 * tir_exec_keep_named).  A capability is used up by the attempt, whatever
 * its outcome.  returns 0; -TIR_EDATA for a node no session keeps;
 * -TIR_ENET when r cannot be reached or the transfer fails (r's message:
 * the source unreachable, its answer, a blob that does not hash to its
 * name). */
int tir_remote_import(struct tir_remote *r, const struct tir_exec *x, uint32_t id, const struct tir_remote *from,
		      const char *cap, const char *blob, struct tir_err *err);
/* The MPI group r's server is a rank of (docs/groups.md): its id (32 hex
 * digits), with r's rank in *rank; NULL for a lone server. */
const char *tir_remote_group(const struct tir_remote *r, int *rank);
/* r's rank's part of one all_reduce of its group's ranks[0..n) (each a
 * rank of r's group, 0 among them): op (sum mean max min prod) of node
 * src_id's value, which every one of those ranks' sessions holds, kept in
 * r's session under node dst_id's key, as an import's is.  The group's
 * ranks run it as one MPI_Allreduce once each of them was asked with the
 * same key (32 hex digits, new for each), within the servers'
 * --transfer-seconds.  The caller asks every rank at once.  returns 0;
 * -TIR_EDATA when r holds no such value; -TIR_ENET when r cannot be
 * reached or the collective fails (r's message says why: a rank that was
 * not asked in time, values of other sizes, the deadline). */
int tir_remote_all_reduce(struct tir_remote *r, struct tir_exec *x, const char *key, const char *op,
			  const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err);

#endif
