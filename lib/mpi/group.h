/*
 * group.h — between `tir serve` (lib/net) and its MPI part (lib/mpi,
 * libtir-mpi.so).  A server started under mpirun is one rank of a group
 * (docs/groups.md); lib/net/group.c loads libtir-mpi.so then, and only
 * then, and reaches it through the one table tir_mpi_api() returns.  The
 * MPI part knows nothing of sessions or HTTP: it moves bytes between two
 * ranks, and calls back into the server (tir_mpi_hooks) for what a peer
 * asks of it.  Built only where pkg-config finds MPI; nothing here needs
 * <mpi.h>.
 */
#ifndef TIR_MPI_GROUP_H
#define TIR_MPI_GROUP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIR_MPI_API_VERSION 2
#define TIR_MPI_PIECES 4               /* of one value: chunk list, frame head, data, padding */
#define TIR_MPI_TOKEN_MAX 4096
#define TIR_MPI_WHY 400
#define TIR_MPI_MAX_RANKS 64          /* of one collective */

/* What a source sends for one request: its pieces in order, held until
 * sent (then hooks.release(hold)). */
struct tir_mpi_out {
	const void *p[TIR_MPI_PIECES];
	uint64_t n[TIR_MPI_PIECES];
	int npieces;
	void *hold;
};

/* The server's side, called on the MPI service thread. */
struct tir_mpi_hooks {
	void *ud;
	/* Rank `peer` asks for capability cap (64 hex digits) with token (""
	 * for none): 0 with *out filled (the capability used), or an HTTP
	 * status with why (404 for a capability it does not know). */
	int (*take)(void *ud, int peer, const char *cap, const char *token, struct tir_mpi_out *out, char *why,
		    size_t n);
	void (*release)(void *ud, void *hold);
	/* one line for the server's log */
	void (*log)(void *ud, const char *line);
};

/* The receiver's side of one fetch, called on the fetching thread. */
struct tir_mpi_sink {
	void *ud;
	/* The source's value is `total` bytes: 0 to take it, else an HTTP
	 * status (the bytes are then read and dropped, so that the source is
	 * not left sending). */
	int (*begin)(void *ud, uint64_t total);
	/* The next bytes, in order; false: the rest is not wanted (dropped). */
	bool (*absorb)(void *ud, const void *p, size_t n);
};

/* How a fetch ended (besides 0 and a source's HTTP status). */
enum tir_mpi_fail {
	TIR_MPI_NO_ANSWER = -1,        /* the source did not answer within the deadline */
	TIR_MPI_SLOW = -2,             /* its value did not all come within it */
	TIR_MPI_CANCELLED = -3,        /* *cancel became non-zero */
	TIR_MPI_ERROR = -4,            /* MPI returned an error (why says it) */
	TIR_MPI_REFUSED = -5,          /* sink.begin refused it (its status in *status) */
};

/* One rank's part of an all_reduce over ranks[0..n) of the group (0
 * among them: it orders every collective of the group, so that each rank
 * runs them in one order, whatever order its clients' requests came in).
 * The server fills it in and posts it; the MPI part calls done(c) once,
 * on its collective thread, within about 3 x `seconds` of the post. */
enum tir_mpi_type { TIR_MPI_F32, TIR_MPI_F64, TIR_MPI_I32, TIR_MPI_I64, TIR_MPI_I8, TIR_MPI_U8, TIR_MPI_I16 };
enum tir_mpi_op { TIR_MPI_SUM, TIR_MPI_MAX, TIR_MPI_MIN, TIR_MPI_PROD };
struct tir_mpi_coll {
	char key[33];                  /* names it: the same on each of its ranks */
	int n;
	int ranks[TIR_MPI_MAX_RANKS];
	int type, op;                  /* tir_mpi_type, tir_mpi_op */
	uint64_t count;                /* elements of send and of recv */
	const void *send;
	void *recv;
	void (*done)(struct tir_mpi_coll *c);
	/* for done: 0, a tir_mpi_fail, or TIR_MPI_KEPT (failed, and MPI may
	 * still touch send and recv: they must never be freed) */
	int status;
	char why[TIR_MPI_WHY];
	double data_s;                 /* how long its data took (MPI_Iallreduce) */
	/* the MPI part's */
	struct tir_mpi_coll *next;
	double deadline;               /* to be begun by */
};
#define TIR_MPI_KEPT (-6)

struct tir_mpi_api {
	int version;                   /* TIR_MPI_API_VERSION */
	/* MPI_Init_thread (MPI_THREAD_MULTIPLE), errors returned: 0 with
	 * this process's rank and the group's size; -1 with why. */
	int (*init)(int *rank, int *size, char *why, size_t n);
	/* Every rank's `each` bytes at mine into all (size x each, by rank),
	 * within `seconds`: 0, or -1 with why. */
	int (*allgather)(const void *mine, void *all, size_t each, int seconds, char *why, size_t n);
	/* Start answering peers' requests (a thread of its own): 0, or -1. */
	int (*serve)(const struct tir_mpi_hooks *h, int seconds, char *why, size_t n);
	/* Fetch capability cap from rank src into sink, within `seconds`:
	 * 0; a positive HTTP status the source answered (why: its message);
	 * or a tir_mpi_fail (why says more).  *got: bytes that came. */
	int (*fetch)(int src, const char *cap, const char *token, const struct tir_mpi_sink *sink, int seconds,
		     volatile sig_atomic_t *cancel, uint64_t *got, char *why, size_t n);
	/* Post c (its done called once, always, maybe before this returns):
	 * begun by `seconds` from now (else "not begun"), its ranks each given
	 * `seconds` to be asked for it, and its data moved within `seconds`. */
	void (*all_reduce)(struct tir_mpi_coll *c, int seconds);
	/* Stop the service thread (sends under way get `seconds`), then
	 * MPI_Finalize: 0, or -1 when it did not return within a second
	 * (mpirun stopping the job does not wait for it). */
	int (*finish)(int seconds);
};

/* libtir-mpi.so's one entry point. */
const struct tir_mpi_api *tir_mpi_api(void);

#endif
