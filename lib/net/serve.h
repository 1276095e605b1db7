/*
 * serve.h — the inside of `tir serve`, shared by its two halves:
 *
 *   server.c  HTTP on libmicrohttpd: routes, the token, bodies and their
 *             budget, uploads, sessions, /metrics, the log, start and stop
 *   runq.c    POST /v1/sessions/ID/run: the batch read and checked, queued,
 *             run on the one compute thread, answered; a batch whose
 *             client went away dropped or stopped
 *
 * The state kept between requests (blobs, graphs, sessions) is store.h's.
 * None of this leaves libtir-net.so (hidden).
 */
#ifndef TIR_NET_SERVE_H
#define TIR_NET_SERVE_H

#include "store.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#pragma GCC visibility push(hidden)

enum route { R_NONE, R_HEALTHZ, R_INFO, R_METRICS, R_SESSIONS, R_SESSION, R_RUN, R_BLOB };

/* The batches: one at a time on the compute thread (the engine's pool is
 * global), in the order they came; their connections wait suspended. */
struct runq {
	pthread_t computer;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, **tail;
	bool stop;                     /* no more jobs; the thread ends once the queue is empty */
	bool ended;                    /* the thread is done with the queue */
	atomic_int running;            /* batches queued or running */
	/* /metrics' gauges, under mu: the batches waiting for the thread, and
	 * whether one runs (from its turn until just before its connection
	 * resumes: a client that has its answer sees 0) */
	int waiting;
	bool busy;
	/* the batch running: its client's socket, watched by the main thread,
	 * which sets `cancel` (the exec's interrupt flag) once it hangs up */
	pthread_mutex_t wmu;
	int watch_fd;                  /* -1: none */
	volatile sig_atomic_t cancel;
};

/* A tenant (--tokens; one, 0, without): the token's hash, its limits,
 * and its share of the bodies in flight. */
struct tenant {
	char name[65];
	char token_sha[TIR_SHA_HEX + 1];
	int max_sessions;
	uint64_t max_inflight;
	atomic_uint_fast64_t reserved;
};

struct server {
	struct tir_serve_opts o;       /* with the defaults filled in */
	struct tenant *tenants;        /* ntenants: with --tokens, or the one of --token (or none) */
	int ntenants;
	bool open;                     /* no token at all: every request is tenant 0's */
	struct blob_store *blobs;
	struct graph_store *graphs;
	struct session_store *sessions;
	char *info;                    /* the /v1/info document, made once */
	char *tls_cert, *tls_key;      /* PEM text with --tls-cert/--tls-key, else NULL */
	struct runq q;
	atomic_int inflight;           /* requests begun and not done */
	atomic_uint_fast64_t activity; /* requests finished: the idle trim looks for a change */
	atomic_uint_fast64_t trims;    /* idle trims done (/metrics), for tests to wait for */
	/* bytes reserved by request bodies being received and held (up to
	 * their Content-Length), at most o.max_inflight */
	atomic_uint_fast64_t reserved;
	pthread_mutex_t mmu;           /* the metrics below */
	uint64_t by_status[600], aborted, cancelled;
	uint64_t bytes_in, bytes_out;
	double kernel_s;
};

/* One request, from its headers to done(). */
struct req {
	double t0;
	char method[16];
	char path[96];                 /* for the log: ids shortened */
	enum route route;
	char id[TIR_SHA_HEX + 1];      /* a session id or a blob name from the path */
	bool id_ok;                    /* id is well formed for its route */
	int tenant;                    /* whose token it carries (0 on an open server) */
	int status;                    /* of the response queued, 0 before */
	uint64_t in, out;
	const char *allow;             /* the Allow header of a 405 */
	const char *retry_after;       /* the Retry-After header of a 503 */
	bool keep_body;                /* a body this route reads */
	bool has_len;
	bool over;                     /* the body passed --max-body (or memory ran out) */
	bool busy;                     /* a chunked body outgrew what --max-inflight had left */
	uint64_t reserved;             /* of the server's budget for bodies */
	unsigned char *body;
	size_t len, cap;
	struct upload *up;             /* PUT /v1/blobs/SHA256 (upload.c) */
	bool queued;                   /* a run handed to the compute thread */
	enum { KEPT, DROPPED, STOPPED } gone; /* its client went away: the batch not run, or stopped */
	double ran_ms;                 /* how long a stopped batch ran */
};

/* ---- server.c: answers ---- */

/* Answer with resp (taken), whose body is len bytes. */
enum MHD_Result reply_with(struct MHD_Connection *c, struct req *r, int status, const char *ctype,
			   struct MHD_Response *resp, size_t len);
/* Queue body[0..len) (malloc'd, taken; NULL with len 0 for none). */
enum MHD_Result reply(struct MHD_Connection *c, struct req *r, int status, const char *ctype,
		      void *body, size_t len);
/* doc (taken) as one line of JSON. */
enum MHD_Result reply_json(struct MHD_Connection *c, struct req *r, int status, json_t *doc);
/* {"error": {"status", "code", "message", ...extra}}; extra (an object,
 * or NULL) is taken. */
enum MHD_Result reply_error(struct MHD_Connection *c, struct req *r, int status, const char *code,
			    json_t *extra, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ---- runq.c: the batches ---- */

void runq_init(struct server *s);
/* Start the compute thread; false when it cannot be. */
bool runq_start(struct server *s);
/* Run what is queued, answer it, and end the compute thread. */
void runq_stop(struct server *s);
void runq_destroy(struct server *s);
/* POST /v1/sessions/ID/run, its body whole: answered now (an error, a
 * 409), or queued with the connection suspended, answered and resumed
 * by the compute thread. */
enum MHD_Result runq_post(struct server *s, struct MHD_Connection *c, struct req *r);
/* The main thread's tick: when the client of the batch running has hung
 * up, stop the batch. */
void runq_watch(struct server *s);
/* Batches queued or running. */
int runq_pending(struct server *s);

/* tls.c: --tls-cert and --tls-key read and checked (PEM; the key not
 * encrypted, and the certificate's; the certificate valid now) into two
 * new strings for libmicrohttpd.  0, or -code with err naming the file. */
int tir_tls_load(const char *cert_path, const char *key_path, char **cert_pem, char **key_pem,
		 struct tir_err *err);
/* Batches waiting in the queue, and running (0 or 1), at one instant. */
void runq_counts(struct server *s, int *queued, int *running);

#pragma GCC visibility pop

#endif
