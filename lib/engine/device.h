/*
 * device.h — inside lib/engine: the device interface and the executor's
 * state.  A device is a place that holds values and runs batches; the
 * executor (run.c, carrying out sched.c's steps) holds a list of them and
 * reaches each only through its ops table, never by its kind.  Today
 * there are two kinds: the CPU of this process (cpu.c: the plan cache,
 * the fused and reference kernels)
 * and a `tir serve` (remote.c: lib/net's client, loaded at run time by
 * lib/net/door.c).  Not for the rest of the library: lib/net sees the
 * executor through engine.h.
 */
#ifndef TIR_DEVICE_H
#define TIR_DEVICE_H

#include "engine.h"
#include "sched.h"
#include "../fusion/fusion.h"

#include <pthread.h>

struct json_t; /* jansson's (the trace) */

/* The most devices an executor holds: TIR_MAX_DEVICES (sched.h). */

struct tir_device;

/* What every kind of device implements.  Values are named by the node of
 * x's program they are the value of; ownership as said by each.
 *
 * A rank of an MPI group is a remote that says its group (group): moves
 * between two ranks go over MPI (take), and an all_reduce whose pieces are
 * on ranks of one group is their collective (all_reduce). */
struct tir_device_ops {
	const char *kind;                       /* "cpu", "remote" */
	/* For messages: "cpu", "HOST:PORT".  borrowed. */
	const char *(*name)(const struct tir_device *d);
	/* Place the value given for input node id (x holds it: tir_exec_set_input)
	 * where d's batches read it.  The CPU reads it in place; a remote sends
	 * it by its hash in the next batch that reads it, only if the server
	 * lacks it, so neither copies anything here.  returns 0 or -code. */
	int (*upload)(struct tir_device *d, struct tir_exec *x, uint32_t id, struct tir_err *err);
	/* Run a batch, one of a run's (run.c's steps): compute targets[0..n)
	 * of x's program on d (what they need of it; values d holds or was
	 * put are read, not computed again), into vals[0..n) (empty on entry)
	 * in each target node's dtype and shape, its statistics into *st (not
	 * x->stats: the batches of a step run at once, each remote's on a
	 * thread of its own, the CPU's on the caller's).  A runtime error is
	 * at the op's source position.  stay[i] (NULL: none) asks that
	 * targets[i] stay on d for a later batch (or another device) to read;
	 * its vals[i] may come back empty, and then d holds it (holds says
	 * so) until the run ends. */
	int (*run_on)(struct tir_device *d, struct tir_exec *x, struct tir_node *const *targets, size_t n,
		      const bool *stay, struct tir_tensor *vals, struct tir_exec_stats *st, struct tir_err *err);
	/* Give d node id's value v for the rest of this run: its batches read
	 * it (a leaf), never compute it.  A value moved here from another
	 * device, or one an earlier batch here handed back.  0 or -code. */
	int (*put)(struct tir_device *d, struct tir_exec *x, uint32_t id, const struct tir_tensor *v,
		   struct tir_err *err);
	/* Forget what put gave (a run's start and end). */
	void (*clear)(struct tir_device *d);
	/* Have d fetch the value of node src_id that device `from` holds
	 * (a stay of an earlier batch) straight from it, as node dst_id's
	 * for the rest of the run: two servers move it between them, never
	 * through this process.  NULL, or -TIR_EUNSUPPORTED, when d cannot
	 * (the CPU; two kinds that do not meet): the executor fetches and puts. */
	int (*take)(struct tir_device *d, struct tir_device *from, struct tir_exec *x, uint32_t src_id,
		    uint32_t dst_id, struct tir_err *err);
	/* The MPI group d is a rank of (docs/groups.md): its id (32 hex
	 * digits), d's rank in *rank; NULL for a device in none.  NULL op: in none. */
	const char *(*group)(const struct tir_device *d, int *rank);
	/* d's part of one collective of a group's ranks (coll, below): op of
	 * node src_id's value on every rank, kept on d as node dst_id's for
	 * the rest of the run.  The executor calls it for every rank of the
	 * collective at once, each on a thread of its own; key names it, the
	 * same on every rank and never again.  NULL: d cannot. 0 or -code. */
	int (*all_reduce)(struct tir_device *d, struct tir_exec *x, const char *key, const char *op,
			  const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err);
	/* Bring what d holds up to date with x's program and inputs now, so
	 * that holds is right for the run about to be planned (a remote learns
	 * of a rebound name or an input given again only here).  NULL: what
	 * d holds is always up to date (the CPU: x->kept).  0 or -code. */
	int (*sync)(struct tir_device *d, struct tir_exec *x, struct tir_err *err);
	/* Whether d holds the value of node id (kept from an earlier run). */
	bool (*holds)(const struct tir_device *d, const struct tir_exec *x, uint32_t id);
	/* The value of node id that d holds, into out (empty): here it is a
	 * reference, from a remote a batch of that one value. */
	int (*fetch)(struct tir_device *d, struct tir_exec *x, uint32_t id, struct tir_tensor *out,
		     struct tir_err *err);
	/* The last run's plan (--explain): one kernel a line.  borrowed, valid
	 * until the next run. */
	const char *(*explain)(struct tir_device *d, struct tir_exec *x);
	/* The last run's kernel table (--profile).  returns: new, free(), or NULL. */
	char *(*profile)(const struct tir_device *d, const struct tir_exec *x);
	/* The last run's trace events after the parse (origin: the trace's 0,
	 * ms), appended to the JSON array ev. */
	void (*trace)(const struct tir_device *d, const struct tir_exec *x, struct json_t *ev, double origin);
	/* Free d and what it holds (the remote's connection is its opener's). */
	void (*free)(struct tir_device *d);
};

struct tir_device {
	const struct tir_device_ops *ops;
};

/* cpu.c: this process's CPU.  returns: new, or NULL (out of memory). */
struct tir_device *tir_cpu_device(void);
/* remote.c: a tir serve through r (borrowed: r must outlive the device).
 * returns: new, or NULL (out of memory). */
struct tir_device *tir_remote_device(struct tir_remote *r);

struct tir_exec {
	struct tir_program *prog;
	const struct tir_placed *pl;   /* prog's placement (lib/place): where each node runs */
	struct tir_tensor *inputs;     /* by node id: values given for INPUT nodes */
	size_t ninputs_cap;
	struct tir_tensor *results;    /* printed values of the last run, in order, then the named ones */
	const char **headers;
	size_t nresults;
	struct tir_tensor *named;      /* results + nresults: the values asked for by name */
	size_t nnamed;
	struct tir_exec_stats stats;
	bool no_fuse;                  /* --no-fuse: one reference kernel per node */
	bool once;                     /* run once (tir run): plans are not cached */
	bool profile;                  /* time every kernel */
	bool trace;                    /* and note the pool's spans (--trace) */
	double run_t0;                 /* the last run's start (tir_now_ms) */
	pthread_mutex_t mu;            /* the spans and progress of batches running at once */
	struct tir_net_span *net;      /* a traced remote run's (tir_exec_trace_span) */
	size_t nnet, capnet;
	tir_progress_fn progress;      /* tir_exec_set_progress */
	void *progress_ctx;
	volatile sig_atomic_t *intr;   /* stop between nodes once it is set */
	volatile sig_atomic_t step_stop; /* a step's batches stop (run.c's run_at_once) */
	bool keep;                     /* keep values of named nodes (the REPL) */
	uint64_t input_gen;            /* inputs given so far */
	struct tir_tensor *kept;       /* by node id: a value computed here before */
	size_t nkept;
	/* where values live and batches run: dev[0] the CPU, dev[1 + k]
	 * remote:k; a value placed nowhere is computed on the home device,
	 * remote:0 when there are remotes, else the CPU */
	struct tir_device *dev[TIR_MAX_DEVICES];
	int ndev;
	uint64_t run_seq;              /* tir_exec_run's calls */
	char *explain;                 /* a run of several batches: each one's plan, or NULL */
	int nbatches;                  /* the last run's batches */
	int explain_dev;               /* the device of its last batch */
	uint64_t ran_mask;             /* the devices that ran its batches */
};

/* A device's values put for a run (its put and clear): by node id, grown
 * to the program's nodes; v referenced at id (over what was there). */
int tir_values_put(struct tir_tensor **vals, size_t *n, const struct tir_exec *x, uint32_t id,
		   const struct tir_tensor *v, struct tir_err *err);
void tir_values_clear(struct tir_tensor *vals, size_t n);

/* Whether node n's value is worth keeping between runs (bound to a name
 * now; an input's is held anyway). */
bool tir_exec_keepable(const struct tir_program *p, const struct tir_node *n);

#endif
