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

#define TIR_MPI_API_VERSION 1
#define TIR_MPI_PIECES 4               /* of one value: chunk list, frame head, data, padding */
#define TIR_MPI_TOKEN_MAX 4096
#define TIR_MPI_WHY 400

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
	/* Stop the service thread (sends under way get `seconds`), then
	 * MPI_Finalize: 0, or -1 when it did not return within a second
	 * (mpirun stopping the job does not wait for it). */
	int (*finish)(int seconds);
};

/* libtir-mpi.so's one entry point. */
const struct tir_mpi_api *tir_mpi_api(void);

#endif
