/*
 * serve.h — the inside of `tir serve`, shared by its two halves:
 *
 *   server.c  HTTP on libmicrohttpd: routes, the token, bodies and their
 *             budget, uploads, sessions, /metrics, the log, start and stop
 *   runq.c    POST /v1/sessions/ID/run: the batch read and checked, queued,
 *             run on a compute thread (sessions at once, each one's in
 *             order), answered; a batch whose client went away, or
 *             past --max-batch-seconds, dropped or stopped
 *
 * The state kept between requests (blobs, graphs, sessions) is store.h's.
 * None of this leaves libtir-net.so (hidden).
 */
#ifndef TIR_NET_SERVE_H
#define TIR_NET_SERVE_H

#include "../mpi/group.h"
#include "store.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#pragma GCC visibility push(hidden)

enum route { R_NONE, R_HEALTHZ, R_INFO, R_METRICS, R_SESSIONS, R_SESSION, R_RUN, R_BLOB, R_RENEW,
	     R_EXPORT, R_IMPORT, R_EXPORTS, R_ALLREDUCE, R_BLOBS };

/* The batches.  A run request's body is read (JSON), its text parsed and
 * its values found on a parse thread (PARSE_THREADS of them), never on an
 * HTTP thread; then it is queued.
 * Each session's run in the order they came, one at a time;
 * those of different sessions at once, each on a compute thread of its
 * own (started as needed, at most one per session the server keeps), so
 * that a small batch never waits behind a long one of somebody else.
 * The first of them to reach the engine's pool has its threads; the others
 * run on their own thread beside it.  A small batch (what it could hold
 * at most, every value of its program, within SMALL_SHARE of --max-memory)
 * starts beside others while the small ones running beside hold no more
 * than that share together and what it could hold is free: no batch's
 * planned bound keeps it waiting.  Any other starts beside others only
 * when its bound fits in half of what --max-memory has left, the small
 * share set aside; else it waits until it can run alone.  A tenant runs at
 * most its `batches=` at once, and (several tenants) the bounds of its
 * batches running within its `memory=` beside what it holds.  Waiting
 * connections are suspended. */
struct runq {
	pthread_mutex_t mu;
	pthread_cond_t cv;             /* the compute threads: a batch may be startable */
	struct job *head, **tail;      /* waiting, in the order they came */
	struct job *running;           /* started and not yet answered */
	pthread_t *threads;            /* compute threads started (nthreads of cap) */
	int nthreads, cap, idle, exited;
	bool stop;                     /* no more jobs; the threads end once none waits */
	atomic_int pending;            /* batches queued or running */
	int waiting, busy;             /* /metrics' gauges: queued, and running */
	uint64_t beside;               /* the bound of the batches started beside others */
	uint64_t small;                /* the bound of the small batches started beside others */
	/* the parse threads: run requests whose bodies are in */
	pthread_cond_t pcv;
	struct job *phead, **ptail;
	pthread_t parsers[2];
	int nparsers;
	bool pstop;
};

/* A tenant (--tokens; one, 0, without): the token's hash, its limits,
 * and its share of the bodies in flight. */
struct tenant {
	char name[65];
	char token_sha[TIR_SHA_HEX + 1];
	int max_sessions;
	uint64_t max_inflight;
	atomic_uint_fast64_t reserved;
	/* its share of --max-memory (memory=), and of the compute threads
	 * (batches=); what it holds of the budget besides its graphs and kept
	 * values (store.c counts those): its run bodies, their JSON and texts
	 * being parsed; its batches running and their planned bounds (under
	 * q.mu: with several tenants, counted against memory= beside what it
	 * holds, runq.c's pick) */
	uint64_t max_memory;
	int max_batches;
	atomic_uint_fast64_t mem;
	int running;
	uint64_t bound;
	/* /metrics: an admin's shows every figure, another's only these of
	 * its own (and its sessions and blobs) */
	bool admin;
	atomic_uint_fast64_t requests, bytes_in, bytes_out;
};

/* This server as a rank of a group (group.c; api NULL outside one). */
#define GROUP_ADDR 300                  /* a member's HOST:PORT, at most */
struct group {
	const struct tir_mpi_api *api;
	int rank, size;
	char id[33];                   /* rank 0's random id: the same on every rank */
	char (*members)[GROUP_ADDR];   /* by rank: HOST:PORT */
	/* under the server's mmu: values received and sent over MPI, and
	 * all_reduces (coll.c): done and failed, their bytes, and the
	 * seconds their data took (MPI_Iallreduce alone) */
	uint64_t imports, import_bytes, served, served_bytes;
	uint64_t colls, colls_failed, coll_bytes;
	double coll_data_s;
	atomic_int coll_waiting;       /* posted to the MPI part, not yet ended */
};

#define MAX_CONNECTIONS 256             /* open at once, all clients together */

struct server {
	struct tir_serve_opts o;       /* with the defaults filled in */
	struct gate *gate;             /* accepts the connections (gate.c) */
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
	atomic_uint_fast64_t pressure_trims; /* ticks past --max-memory and OWN_MAX (server.c) */
	/* bytes reserved by request bodies being received and held (up to
	 * their Content-Length), at most o.max_inflight */
	atomic_uint_fast64_t reserved;
	pthread_mutex_t mmu;           /* the metrics below */
	uint64_t by_status[600], aborted, cancelled;
	uint64_t bytes_in, bytes_out;
	double kernel_s;
	/* server to server (xfer.c) */
	uint64_t exports_issued, exports_served, imports_ok, imports_failed, import_bytes;
	struct group group;
	struct peer *peers;            /* an import's sources may be these alone (peers.c) */
	int npeers;
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
	bool authed;                   /* tenant is the token's (not a 401's, nor a public route's) */
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
	struct bundle *bundle;         /* POST /v1/blobs (bundle.c) */
	bool queued;                   /* a run handed to the parse or compute threads */
	uint64_t charged;              /* of --max-memory (and its tenant's share): its body, its JSON */
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

/* An upload's body is whole (upload.c): the blob kept for tenant: 201
 * stored, 200 held already (bytes: its frame's); else the status of what
 * is wrong with *code and msg (*retry: a 503 to be sent again). */
int blob_keep(struct server *s, struct upload *up, const char *name, int tenant, const char **code,
	      char *msg, size_t n, uint64_t *bytes, bool *retry);

/* ---- bundle.c: POST /v1/blobs, several blobs in one body ---- */

/* A body of len bytes (its Content-Length) of tenant's; NULL when out of
 * memory.  Free with bundle_free at any point. */
struct bundle *bundle_new(struct server *s, int tenant, uint64_t len);
void bundle_absorb(struct bundle *b, const void *d, size_t n);
/* The body is whole: the answer (200 and each blob's status, or the
 * first fault's). */
enum MHD_Result bundle_finish(struct server *s, struct MHD_Connection *c, struct req *r);
void bundle_free(struct bundle *b);

/* ---- runq.c: the batches ---- */

void runq_init(struct server *s);
/* Ready the compute threads (started as batches come, up to one per
 * session the server keeps); false when it cannot be. */
bool runq_start(struct server *s);
/* Run what is queued, answer it, and end the compute threads. */
void runq_stop(struct server *s);
void runq_destroy(struct server *s);
/* POST /v1/sessions/ID/run, its body whole: answered now (an error, a
 * 409), or queued with the connection suspended, answered and resumed
 * by a compute thread. */
enum MHD_Result runq_post(struct server *s, struct MHD_Connection *c, struct req *r);
/* A task that is not a batch (an export, an import: xfer.c), queued as a
 * batch is, in its session's order (ss: a reference, taken), and run on
 * a compute thread with the connection suspended; fn answers (cancel
 * becomes non-zero when the client hangs up), then done(arg) frees what
 * it had.  On an answer now (the server is stopping) done(arg) is called
 * too. */
typedef enum MHD_Result (*runq_task_fn)(struct server *s, struct MHD_Connection *c, struct req *r,
					void *arg, volatile sig_atomic_t *cancel);
enum MHD_Result runq_post_task(struct server *s, struct MHD_Connection *c, struct req *r,
			       struct session *ss, runq_task_fn fn, void (*done)(void *), void *arg);
/* Whether the server is stopping (no new batch is taken, nor a blob stored) */
bool runq_stopping(struct server *s);
void req_let_go(struct server *s, struct req *r);
/* The main thread's tick: stop each running batch whose client has hung
 * up, or that has run past --max-batch-seconds. */
void runq_watch(struct server *s);
/* Batches queued or running. */
int runq_pending(struct server *s);

/* ---- xfer.c: server to server ---- */

#define TRANSFER_SECONDS 60             /* --transfer-seconds' default */
#define XFER_BODY_MAX 8192              /* an export's or an import's JSON body */

/* POST /v1/sessions/ID/export and /import, their bodies whole; GET
 * /v1/exports/CAP. */
enum MHD_Result xfer_export(struct server *s, struct MHD_Connection *c, struct req *r);
enum MHD_Result xfer_import(struct server *s, struct MHD_Connection *c, struct req *r);
enum MHD_Result xfer_serve(struct server *s, struct MHD_Connection *c, struct req *r);
/* Grow r's share of the budget for bodies in flight (--max-inflight, and
 * its tenant's) to `bytes`; false when it has not that much left
 * (server.c). */
bool req_reserve(struct server *s, struct req *r, uint64_t bytes);

/* ---- peers.c: the sources an import may fetch from (--peers) ---- */

#define FROM_HOST_MAX 300               /* an import source's host, at most */
struct peer;
/* --peers, or the default (loopback and the group's members, once the
 * group is formed), into s->peers.  0, or -code with err. */
int peers_init(struct server *s, struct tir_err *err);
void peers_free(struct server *s);
/* Whether an import may fetch from `from` (http(s)://HOST:PORT): 0 with
 * resolve set to curl's HOST:PORT:ADDRESS to pin a name to the address
 * checked ("" for an address), -1 when it is no peer (or a name that does
 * not resolve), -2 when its host is a spelling of an address not taken
 * (2130706433, 0x7f.1, 017700000001, 127.1).  No connection is made. */
int peers_check(const struct server *s, const char *from, char *resolve, size_t n);

/* ---- coll.c: POST /v1/sessions/ID/allreduce, its body whole ---- */

enum MHD_Result coll_all_reduce(struct server *s, struct MHD_Connection *c, struct req *r);

/* ---- group.c: a rank of a group under mpirun (docs/groups.md) ---- */

/* Whether this process was started by mpirun (its environment says). */
bool group_wanted(void);
/* Load libtir-mpi.so and MPI_Init: s->group's api, rank and size. */
int group_init(struct server *s, struct tir_err *err);
/* Share each rank's address (addr; NULL: this rank could not listen) and
 * start answering peers' asks.  0, or -code (then group_finish). */
int group_join(struct server *s, const char *addr, struct tir_err *err);
void group_finish(struct server *s);
/* /v1/info's "group": new. */
json_t *group_info(const struct server *s);
/* The tenant of a token (NULL: none), or -1 (server.c). */
int server_tenant(const struct server *s, const char *token);

/* ---- gate.c: the connections ---- */

struct gate;
struct gate_stats {
	int open;                      /* connections held: waiting for a first head, or libmicrohttpd's */
	uint64_t refused_address;      /* past --max-connections-per-address */
	uint64_t refused_full;         /* past MAX_CONNECTIONS */
	uint64_t timed_out;            /* closed for want of a head within --header-timeout */
	uint64_t refused_reserved;     /* requests without a token past the unreserved slots */
	uint64_t evicted;              /* closed in their head phase to make room for a newcomer */
	int busy;                      /* with a request under way */
};
/* A gate on listening socket lfd (taken); NULL when out of resources
 * (lfd left to the caller). */
struct gate *gate_new(struct server *s, int lfd);
/* Start accepting, for daemon d (started with MHD_USE_NO_LISTEN_SOCKET and
 * gate_notify); false when no thread can be made. */
bool gate_start(struct gate *g, struct MHD_Daemon *d);
/* Accept no more: the thread ends, the connections not yet handed over
 * are closed, and so is the listening socket.  Before MHD_stop_daemon. */
void gate_stop(struct gate *g);
/* After MHD_stop_daemon (its connections' notifications come here). */
void gate_free(struct gate *g);
/* MHD_OPTION_NOTIFY_CONNECTION's callback, cls the gate. */
void gate_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		 enum MHD_ConnectionNotificationCode code);
/* A request of c has its head in (begins) or is done: between the two the
 * connection is not held to the header deadline. */
void gate_request(struct MHD_Connection *c, bool begins);
/* Whether c's request, its head in, may take a slot: one that presents a
 * valid token (token) always may; one without, only while the slots kept
 * for tokens are not needed. */
bool gate_admit(struct MHD_Connection *c, bool token);
/* The main thread's tick: libmicrohttpd's connections that have waited
 * --header-timeout for a head are shut down. */
void gate_sweep(struct gate *g);
void gate_stats(struct gate *g, struct gate_stats *st);

/* tls.c: --tls-cert and --tls-key read and checked (PEM; the key not
 * encrypted, and the certificate's; the certificate valid now) into two
 * new strings for libmicrohttpd.  0, or -code with err naming the file. */
int tir_tls_load(const char *cert_path, const char *key_path, char **cert_pem, char **key_pem,
		 struct tir_err *err);
/* Grow r's charge to --max-memory and its tenant's share to `bytes`
 * (runq.c); false, nothing taken, when either has not that much left. */
bool req_charge(struct server *s, struct req *r, uint64_t bytes);
void req_uncharge(struct server *s, struct req *r);
/* What tenant t holds of --max-memory, by what it is charged: its
 * requests', its graphs', its kept values'. */
uint64_t tenant_held(struct server *s, int t);
/* A 503 for a request that --max-memory (or its tenant's share) cannot
 * hold now: the tenant's own figures only. */
enum MHD_Result reply_no_memory(struct server *s, struct MHD_Connection *c, struct req *r,
				uint64_t bytes, const char *what);
/* Batches waiting in the queue, and running, at one instant. */
void runq_counts(struct server *s, int *queued, int *running);

#pragma GCC visibility pop

#endif
