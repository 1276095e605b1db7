/*
 * mpi.c — libtir-mpi.so: the MPI part of a server group (group.h,
 * docs/groups.md).  A value moving between two ranks of one group goes
 * over MPI point to point: the receiver sends the source an ask (tag
 * TAG_ASK: the capability, a token, and the tag to answer on), the
 * source's service thread answers a head (a status, the value's pieces'
 * lengths) and then the pieces, each in slices of at most SLICE bytes (a
 * count of bytes MPI takes as an int).  Every wait is a loop of MPI_Test
 * against a deadline: a peer that died or hangs is an error after
 * --transfer-seconds, never a wait forever.  Errors are returned
 * (MPI_ERRORS_RETURN on the communicator), never fatal.
 *
 * An all_reduce is MPI_Allreduce, on a communicator of its own (cl.cc),
 * run by one collective thread per rank.  Every rank must run the group's
 * collectives in one order, though its clients' requests come in any:
 * rank 0 orders them.  Its thread takes the oldest request rank 0 has and
 * broadcasts it (MPI_Ibcast: the key and what is reduced); every rank's
 * thread waits for that broadcast, then for its own request of that key
 * (at most --transfer-seconds), and the collective's ranks agree that
 * each has it (a small MPI_Iallreduce) before the data's.  So a rank whose
 * client never asked, or asked for another size, fails the collective on
 * every rank rather than leaving the others in it, and every wait has a
 * deadline.  A collective whose data do not all move within the deadline
 * leaves MPI in a state nothing mends: the group takes no collective again
 * (mpirun must start it anew), and what MPI may still touch is kept.
 */
#include "group.h"

#include <mpi.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_ASK 1
#define TAG_FIRST 16                   /* answers' tags: TAG_FIRST .. TAG_FIRST + TAGS - 1 */
#define TAGS 30000                     /* MPI_TAG_UB is at least 32767 */
#define SLICE ((uint64_t)8 << 20)      /* one message's bytes, at most */
#define ASK_MAGIC 0x4b534154u          /* "TASK" */

struct ask {
	uint32_t magic;
	int32_t tag;                   /* answer on this tag */
	char cap[65];
	char token[TIR_MPI_TOKEN_MAX + 1];
};

struct head {
	int32_t status;                /* 0: the pieces follow; else an HTTP status */
	int32_t npieces;
	uint64_t n[TIR_MPI_PIECES];
	char why[TIR_MPI_WHY];
};

/* One answer being sent. */
struct send {
	struct send *next;
	int peer;
	double deadline;
	struct head head;
	MPI_Request *rq;
	int nrq;
	void *hold;                    /* the server's, released once sent */
};

static struct {
	MPI_Comm comm;
	int rank, size;
	struct tir_mpi_hooks h;
	int seconds;
	pthread_t thread;
	bool serving;
	atomic_bool stop;
	atomic_uint next_tag;
	/* a collective's data are moving: the service thread leaves MPI's
	 * progress to it (its MPI_Test would take MPI's lock beside them) */
	atomic_bool in_data;
} g = {.comm = MPI_COMM_NULL};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A pause between polls: none while work comes, growing to 1 ms idle. */
static void pause_for(int *idle)
{
	if (*idle < 64) {
		(*idle)++;
		return;
	}
	long us = *idle < 200 ? 20 : *idle < 1000 ? 200 : 1000;
	(*idle)++;
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static void mpi_why(int rc, const char *what, char *why, size_t n)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
		snprintf(s, sizeof s, "error %d", rc);
	snprintf(why, n, "%s: %s", what, s);
}

/* ---- the collectives' state (their thread is further down) ---- */

/* Float max and min as tir's maximum and minimum (a NaN wins), made
 * commutative to the bit (of two NaNs the larger pattern; +0 over -0 for
 * max, -0 for min): every rank's result is the same bits whatever order
 * MPI reduces in. */
#define FMAXMIN(T, U, MAX, MIN)                                                   \
	static inline T MAX(T a, T b)                                            \
	{                                                                        \
		if (a != a || b != b) {                                          \
			U ua, ub;                                                \
			memcpy(&ua, &a, sizeof a);                               \
			memcpy(&ub, &b, sizeof b);                               \
			return a != a && b != b ? (ua > ub ? a : b) : a != a ? a : b; \
		}                                                                \
		if (a == b)                                                      \
			return signbit(a) ? b : a;                               \
		return a > b ? a : b;                                            \
	}                                                                        \
	static inline T MIN(T a, T b)                                            \
	{                                                                        \
		if (a != a || b != b)                                            \
			return MAX(a, b);                                        \
		if (a == b)                                                      \
			return signbit(a) ? a : b;                               \
		return a < b ? a : b;                                            \
	}
FMAXMIN(float, uint32_t, max_f32, min_f32)
FMAXMIN(double, uint64_t, max_f64, min_f64)

static void fmax_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	if (*dt == MPI_FLOAT)
		for (int i = 0; i < *len; i++)
			((float *)inout)[i] = max_f32(((const float *)in)[i], ((float *)inout)[i]);
	else
		for (int i = 0; i < *len; i++)
			((double *)inout)[i] = max_f64(((const double *)in)[i], ((double *)inout)[i]);
}

static void fmin_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	if (*dt == MPI_FLOAT)
		for (int i = 0; i < *len; i++)
			((float *)inout)[i] = min_f32(((const float *)in)[i], ((float *)inout)[i]);
	else
		for (int i = 0; i < *len; i++)
			((double *)inout)[i] = min_f64(((const double *)in)[i], ((double *)inout)[i]);
}

#define SUBS 16                        /* communicators of part of the group, kept */

static struct {
	MPI_Comm cc;                   /* the collectives' */
	MPI_Op fmax, fmin;
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;            /* the queue, broken */
	pthread_cond_t cv;
	struct tir_mpi_coll *head;     /* posted and not begun, oldest first */
	bool broken;
	char broken_why[TIR_MPI_WHY];
	struct {
		uint64_t mask;         /* its ranks */
		MPI_Comm comm;         /* MPI_COMM_NULL on a rank not of it */
	} sub[SUBS];
	int nsub, next_sub;
} cl = {.cc = MPI_COMM_NULL, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int init(int *rank, int *size, char *why, size_t n)
{
	int provided = 0;
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
	if (rc != MPI_SUCCESS) {
		mpi_why(rc, "MPI_Init_thread", why, n);
		return -1;
	}
	if (provided < MPI_THREAD_MULTIPLE) {
		snprintf(why, n, "this MPI library does not support MPI_THREAD_MULTIPLE (it gives level %d); "
			 "a group needs it (Debian's Open MPI has it)", provided);
		MPI_Finalize();
		return -1;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &g.comm)) != MPI_SUCCESS) {
		mpi_why(rc, "MPI_Comm_dup", why, n);
		MPI_Finalize();
		return -1;
	}
	MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &cl.cc)) != MPI_SUCCESS ||
	    (rc = MPI_Op_create(fmax_fn, 1, &cl.fmax)) != MPI_SUCCESS ||
	    (rc = MPI_Op_create(fmin_fn, 1, &cl.fmin)) != MPI_SUCCESS) {
		mpi_why(rc, "the collectives' communicator", why, n);
		MPI_Finalize();
		return -1;
	}
	MPI_Comm_set_errhandler(cl.cc, MPI_ERRORS_RETURN);
	MPI_Comm_rank(g.comm, &g.rank);
	MPI_Comm_size(g.comm, &g.size);
	*rank = g.rank;
	*size = g.size;
	return 0;
}

/* Wait for rq until deadline (or *cancel): 0, 1 past the deadline, 2
 * cancelled, or an MPI error code (negative of it). */
static int wait_until(MPI_Request *rq, int nrq, double deadline, volatile sig_atomic_t *cancel, int *mpirc)
{
	int idle = 0;
	for (;;) {
		int done = 0;
		int rc = MPI_Testall(nrq, rq, &done, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS) {
			*mpirc = rc;
			return -1;
		}
		if (done)
			return 0;
		if (cancel && *cancel)
			return 2;
		if (now_s() > deadline)
			return 1;
		pause_for(&idle);
	}
}

/* Give up on requests still pending: receives are cancelled; a send
 * that will not finish is let go.  returns true when none is left that
 * MPI may still touch (else their buffers are the caller's to keep). */
static bool abandon(MPI_Request *rq, int nrq)
{
	bool clean = true;
	for (int i = 0; i < nrq; i++) {
		if (rq[i] == MPI_REQUEST_NULL)
			continue;
		int done = 0;
		MPI_Test(&rq[i], &done, MPI_STATUS_IGNORE);
		if (done || rq[i] == MPI_REQUEST_NULL)
			continue;
		MPI_Cancel(&rq[i]);
		for (int k = 0; k < 1000 && rq[i] != MPI_REQUEST_NULL; k++) {
			MPI_Test(&rq[i], &done, MPI_STATUS_IGNORE);
			if (done)
				break;
			struct timespec ts = {0, 100 * 1000};
			nanosleep(&ts, NULL);
		}
		if (rq[i] != MPI_REQUEST_NULL) {
			MPI_Request_free(&rq[i]);
			clean = false;
		}
	}
	return clean;
}

static int allgather(const void *mine, void *all, size_t each, int seconds, char *why, size_t n)
{
	MPI_Request rq;
	int rc = MPI_Iallgather(mine, (int)each, MPI_BYTE, all, (int)each, MPI_BYTE, g.comm, &rq);
	if (rc != MPI_SUCCESS) {
		mpi_why(rc, "MPI_Iallgather", why, n);
		return -1;
	}
	int st = wait_until(&rq, 1, now_s() + seconds, NULL, &rc);
	if (st == 0)
		return 0;
	if (st < 0)
		mpi_why(rc, "MPI_Iallgather", why, n);
	else
		snprintf(why, n, "the group's ranks did not all start within %d s", seconds);
	return -1;
}

/* ---- the source: answering asks ---- */

static void send_free(struct send *s)
{
	if (s->hold)
		g.h.release(g.h.ud, s->hold);
	free(s->rq);
	free(s);
}

/* Post the answer to an ask from peer: its head, then its pieces. */
static struct send *answer(int peer, const struct ask *a)
{
	struct send *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->peer = peer;
	s->deadline = now_s() + g.seconds;
	struct tir_mpi_out out = {0};
	int st = g.h.take(g.h.ud, peer, a->cap, a->token, &out, s->head.why, sizeof s->head.why);
	s->head.status = st;
	int nrq = 1;
	if (!st) {
		s->hold = out.hold;
		s->head.npieces = out.npieces;
		for (int i = 0; i < out.npieces; i++) {
			s->head.n[i] = out.n[i];
			nrq += (int)((out.n[i] + SLICE - 1) / SLICE);
		}
	}
	if (!(s->rq = calloc((size_t)nrq, sizeof *s->rq))) {
		send_free(s);
		return NULL;
	}
	s->nrq = nrq;
	for (int i = 0; i < nrq; i++)
		s->rq[i] = MPI_REQUEST_NULL;
	int k = 0, rc = MPI_Isend(&s->head, sizeof s->head, MPI_BYTE, peer, a->tag, g.comm, &s->rq[k++]);
	for (int i = 0; !st && rc == MPI_SUCCESS && i < out.npieces; i++)
		for (uint64_t off = 0; off < out.n[i] && rc == MPI_SUCCESS; off += SLICE) {
			uint64_t len = out.n[i] - off < SLICE ? out.n[i] - off : SLICE;
			rc = MPI_Isend((const char *)out.p[i] + off, (int)len, MPI_BYTE, peer, a->tag, g.comm,
				       &s->rq[k++]);
		}
	if (rc != MPI_SUCCESS) {
		char why[TIR_MPI_WHY + 64], line[TIR_MPI_WHY + 128];
		mpi_why(rc, "MPI_Isend", why, sizeof why);
		snprintf(line, sizeof line, "tir serve: mpi: answering rank %d: %s", peer, why);
		g.h.log(g.h.ud, line);
		if (!abandon(s->rq, s->nrq))
			s->hold = NULL; /* what MPI may still read is never freed */
		send_free(s);
		return NULL;
	}
	return s;
}

static void *service(void *arg)
{
	struct ask *a = malloc(sizeof *a);
	struct send *sends = NULL;
	MPI_Request rq = MPI_REQUEST_NULL;
	MPI_Status st;
	int idle = 0;
	if (!a)
		return NULL;
	while (!atomic_load(&g.stop)) {
		bool work = false;
		if (atomic_load(&g.in_data)) { /* asks wait a moment; MPI keeps them */
			struct timespec ts = {0, 200 * 1000};
			nanosleep(&ts, NULL);
			continue;
		}
		if (rq == MPI_REQUEST_NULL &&
		    MPI_Irecv(a, sizeof *a, MPI_BYTE, MPI_ANY_SOURCE, TAG_ASK, g.comm, &rq) != MPI_SUCCESS)
			rq = MPI_REQUEST_NULL;
		int done = 0;
		if (rq != MPI_REQUEST_NULL && MPI_Test(&rq, &done, &st) == MPI_SUCCESS && done) {
			int count = 0;
			MPI_Get_count(&st, MPI_BYTE, &count);
			a->cap[64] = 0;
			a->token[TIR_MPI_TOKEN_MAX] = 0;
			if (count == (int)sizeof *a && a->magic == ASK_MAGIC && a->tag >= TAG_FIRST &&
			    a->tag < TAG_FIRST + TAGS) {
				struct send *s = answer(st.MPI_SOURCE, a);
				if (s) {
					s->next = sends;
					sends = s;
				}
			}
			explicit_bzero(a, sizeof *a);
			rq = MPI_REQUEST_NULL;
			work = true;
		}
		for (struct send **p = &sends; *p;) {
			struct send *s = *p;
			int rc = MPI_Testall(s->nrq, s->rq, &done, MPI_STATUSES_IGNORE);
			if (rc == MPI_SUCCESS && !done && now_s() <= s->deadline) {
				p = &s->next;
				continue;
			}
			if (rc != MPI_SUCCESS || !done) {
				char line[200];
				snprintf(line, sizeof line,
					 "tir serve: mpi: rank %d did not take its value within %d s "
					 "(--transfer-seconds); the send is given up", s->peer, g.seconds);
				g.h.log(g.h.ud, line);
				if (!abandon(s->rq, s->nrq))
					s->hold = NULL; /* MPI may still read it: kept */
			}
			*p = s->next;
			send_free(s);
			work = true;
		}
		if (work)
			idle = 0;
		else
			pause_for(&idle);
	}
	if (rq != MPI_REQUEST_NULL)
		abandon(&rq, 1);
	/* the answers under way get until their deadline */
	while (sends) {
		struct send *s = sends;
		int rc = 0;
		if (wait_until(s->rq, s->nrq, s->deadline, NULL, &rc) && !abandon(s->rq, s->nrq))
			s->hold = NULL;
		sends = s->next;
		send_free(s);
	}
	free(a);
	return NULL;
}

static void *collectives(void *arg);

static int serve(const struct tir_mpi_hooks *h, int seconds, char *why, size_t n)
{
	g.h = *h;
	g.seconds = seconds;
	if (pthread_create(&g.thread, NULL, service, NULL)) {
		snprintf(why, n, "cannot start the MPI service thread");
		return -1;
	}
	g.serving = true;
	if (pthread_create(&cl.thread, NULL, collectives, NULL) == 0)
		cl.running = true; /* (else every all_reduce is refused, saying so) */
	return 0;
}

/* ---- the receiver: fetching ---- */

struct slices {
	const struct head *h;
	int piece;
	uint64_t off;
};

/* The next slice's length (0: none left). */
static uint64_t slice_next(struct slices *s)
{
	while (s->piece < s->h->npieces && s->off >= s->h->n[s->piece]) {
		s->piece++;
		s->off = 0;
	}
	if (s->piece >= s->h->npieces)
		return 0;
	uint64_t left = s->h->n[s->piece] - s->off;
	uint64_t len = left < SLICE ? left : SLICE;
	s->off += len;
	return len;
}

static int fetch(int src, const char *cap, const char *token, const struct tir_mpi_sink *sink, int seconds,
		 volatile sig_atomic_t *cancel, uint64_t *got, char *why, size_t n)
{
	*got = 0;
	double deadline = now_s() + seconds;
	struct ask *a = calloc(1, sizeof *a);
	struct head *h = calloc(1, sizeof *h);
	unsigned char *buf[2] = {NULL, NULL};
	MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	int ret = 0, rc = 0;
	if (!a || !h) {
		snprintf(why, n, "out of memory");
		free(a);
		free(h);
		return TIR_MPI_ERROR;
	}
	a->magic = ASK_MAGIC;
	a->tag = TAG_FIRST + (int)(atomic_fetch_add(&g.next_tag, 1) % TAGS);
	snprintf(a->cap, sizeof a->cap, "%s", cap);
	snprintf(a->token, sizeof a->token, "%s", token ? token : "");
	if ((rc = MPI_Irecv(h, sizeof *h, MPI_BYTE, src, a->tag, g.comm, &rq[1])) != MPI_SUCCESS ||
	    (rc = MPI_Isend(a, sizeof *a, MPI_BYTE, src, TAG_ASK, g.comm, &rq[0])) != MPI_SUCCESS) {
		mpi_why(rc, "asking", why, n);
		abandon(rq, 2);
		free(a);
		free(h);
		return TIR_MPI_ERROR;
	}
	int st = wait_until(rq, 2, deadline, cancel, &rc);
	if (st) {
		if (st < 0)
			mpi_why(rc, "asking", why, n);
		if (abandon(rq, 2)) { /* else MPI may still read a or write h: kept */
			free(a);
			free(h);
		}
		return st < 0 ? TIR_MPI_ERROR : st == 2 ? TIR_MPI_CANCELLED : TIR_MPI_NO_ANSWER;
	}
	int tag = a->tag;
	explicit_bzero(a, sizeof *a);
	free(a);
	if (h->status) {
		h->why[sizeof h->why - 1] = 0;
		snprintf(why, n, "%s", h->why);
		ret = h->status;
		free(h);
		return ret;
	}
	if (h->npieces < 0 || h->npieces > TIR_MPI_PIECES) {
		snprintf(why, n, "a malformed answer (%d pieces)", h->npieces);
		free(h);
		return TIR_MPI_ERROR;
	}
	uint64_t total = 0;
	for (int i = 0; i < h->npieces; i++)
		total += h->n[i];
	int refused = sink->begin(sink->ud, total);
	bool want = !refused;
	/* two slices in flight: one comes while the other is absorbed */
	struct slices sl = {.h = h};
	uint64_t len[2] = {0, 0};
	buf[0] = malloc(SLICE);
	buf[1] = malloc(SLICE);
	if (!buf[0] || !buf[1]) {
		/* the source is left to give up at its deadline */
		snprintf(why, n, "out of memory");
		free(buf[0]);
		free(buf[1]);
		free(h);
		return TIR_MPI_ERROR;
	}
	rq[0] = rq[1] = MPI_REQUEST_NULL;
	for (int i = 0; i < 2; i++)
		if ((len[i] = slice_next(&sl)) &&
		    (rc = MPI_Irecv(buf[i], (int)len[i], MPI_BYTE, src, tag, g.comm, &rq[i])))
			break;
	for (int cur = 0; len[cur] && !ret;) {
		if (rc != MPI_SUCCESS) {
			mpi_why(rc, "receiving", why, n);
			ret = TIR_MPI_ERROR;
			break;
		}
		st = wait_until(&rq[cur], 1, deadline, cancel, &rc);
		if (st) {
			if (st < 0)
				mpi_why(rc, "receiving", why, n);
			ret = st < 0 ? TIR_MPI_ERROR : st == 2 ? TIR_MPI_CANCELLED : TIR_MPI_SLOW;
			break;
		}
		*got += len[cur];
		if (want && !sink->absorb(sink->ud, buf[cur], (size_t)len[cur]))
			want = false;
		if ((len[cur] = slice_next(&sl)))
			rc = MPI_Irecv(buf[cur], (int)len[cur], MPI_BYTE, src, tag, g.comm, &rq[cur]);
		cur ^= 1;
	}
	if (abandon(rq, 2)) { /* else what MPI may still write into is never freed */
		free(buf[0]);
		free(buf[1]);
	}
	free(h);
	if (!ret && refused)
		return TIR_MPI_REFUSED;
	return ret;
}

/* ---- collectives (the header says how they are ordered) ---- */

#define ORDER_MAGIC 0x44524f54u        /* "TORD" */

/* What rank 0 broadcasts: the next collective every rank runs. */
struct order {
	uint32_t magic;
	int32_t n, type, op;
	uint64_t count;
	int32_t ranks[TIR_MPI_MAX_RANKS];
	char key[33];
};

static void coll_end(struct tir_mpi_coll *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void coll_end(struct tir_mpi_coll *c, int status, const char *fmt, ...)
{
	c->status = status;
	c->why[0] = 0;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->why, sizeof c->why, fmt, ap);
		va_end(ap);
	}
	c->done(c);
}

/* The group takes no collective again: the queue fails with why. */
static void coll_break(const char *why)
{
	pthread_mutex_lock(&cl.mu);
	cl.broken = true;
	snprintf(cl.broken_why, sizeof cl.broken_why, "%s", why);
	struct tir_mpi_coll *c = cl.head;
	cl.head = NULL;
	pthread_mutex_unlock(&cl.mu);
	char line[TIR_MPI_WHY + 64];
	snprintf(line, sizeof line, "tir serve: mpi: %s; this group takes no collective again", why);
	g.h.log(g.h.ud, line);
	while (c) {
		struct tir_mpi_coll *next = c->next;
		coll_end(c, TIR_MPI_ERROR, "%s; this group takes no collective again (restart it with mpirun)", why);
		c = next;
	}
}

/* With cl.mu held: until a request is posted, or 20 ms. */
static void wait_a_little(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 20 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&cl.cv, &cl.mu, &ts);
}

/* Fail what waited past its deadline to be begun. */
static void coll_expire(void)
{
	double t = now_s();
	struct tir_mpi_coll *gone = NULL;
	pthread_mutex_lock(&cl.mu);
	for (struct tir_mpi_coll **p = &cl.head; *p;) {
		struct tir_mpi_coll *c = *p;
		if (c->deadline >= t) {
			p = &c->next;
			continue;
		}
		*p = c->next;
		c->next = gone;
		gone = c;
	}
	pthread_mutex_unlock(&cl.mu);
	while (gone) {
		struct tir_mpi_coll *next = gone->next;
		coll_end(gone, TIR_MPI_NO_ANSWER,
			 g.rank ? "rank 0 of the group did not begin this all_reduce within %d s (--transfer-seconds): "
				  "it was not asked for it, or not in time"
				: "this all_reduce was not begun within %d s (--transfer-seconds)",
			 g.seconds);
		gone = next;
	}
}

/* Take the request of key off the queue, waiting for it until deadline
 * (its client may ask this rank later than rank 0); NULL when none came. */
static struct tir_mpi_coll *coll_take(const char *key, double deadline)
{
	pthread_mutex_lock(&cl.mu);
	for (;;) {
		for (struct tir_mpi_coll **p = &cl.head; *p; p = &(*p)->next)
			if (!strcmp((*p)->key, key)) {
				struct tir_mpi_coll *c = *p;
				*p = c->next;
				pthread_mutex_unlock(&cl.mu);
				return c;
			}
		if (now_s() > deadline || atomic_load(&g.stop))
			break;
		wait_a_little();
	}
	pthread_mutex_unlock(&cl.mu);
	return NULL;
}

/* The communicator of o's ranks: cc for the whole group, else one made by
 * every rank (MPI_Comm_split over cc: each rank is here for o), kept; on
 * a rank not of it MPI_COMM_NULL.  -1 on an MPI error (why). */
static int coll_comm(const struct order *o, MPI_Comm *comm, char *why, size_t n)
{
	uint64_t mask = 0;
	int pos = -1;
	for (int i = 0; i < o->n; i++) {
		mask |= 1ull << o->ranks[i];
		pos = o->ranks[i] == g.rank ? i : pos;
	}
	if (o->n == g.size) {
		*comm = cl.cc;
		return 0;
	}
	for (int i = 0; i < cl.nsub; i++)
		if (cl.sub[i].mask == mask) {
			*comm = cl.sub[i].comm;
			return 0;
		}
	/* the oldest kept goes: the same on every rank, which sees the same orders */
	int slot = cl.nsub < SUBS ? cl.nsub++ : cl.next_sub++ % SUBS;
	if (cl.sub[slot].comm != MPI_COMM_NULL && cl.sub[slot].mask)
		MPI_Comm_free(&cl.sub[slot].comm);
	cl.sub[slot].mask = 0;
	cl.sub[slot].comm = MPI_COMM_NULL;
	int rc = MPI_Comm_split(cl.cc, pos >= 0 ? 0 : MPI_UNDEFINED, pos, &cl.sub[slot].comm);
	if (rc != MPI_SUCCESS) {
		mpi_why(rc, "MPI_Comm_split", why, n);
		return -1;
	}
	if (cl.sub[slot].comm != MPI_COMM_NULL)
		MPI_Comm_set_errhandler(cl.sub[slot].comm, MPI_ERRORS_RETURN);
	cl.sub[slot].mask = mask;
	*comm = cl.sub[slot].comm;
	return 0;
}

/* Wait for rq until deadline, yielding between tests: MPI makes progress
 * only when asked, and a collective's data want it all the time. */
static int wait_hard(MPI_Request *rq, double deadline, int *mpirc)
{
	for (;;) {
		int done = 0;
		int rc = MPI_Test(rq, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			*mpirc = rc;
			return -1;
		}
		if (done)
			return 0;
		if (now_s() > deadline)
			return 1;
		sched_yield();
	}
}

static MPI_Datatype mpi_type(int t)
{
	switch (t) {
	case TIR_MPI_F32: return MPI_FLOAT;
	case TIR_MPI_F64: return MPI_DOUBLE;
	case TIR_MPI_I32: return MPI_INT32_T;
	case TIR_MPI_I64: return MPI_INT64_T;
	case TIR_MPI_I8: return MPI_INT8_T;
	case TIR_MPI_U8: return MPI_UINT8_T;
	default: return MPI_INT16_T;
	}
}

static size_t type_size(int t)
{
	static const size_t size[] = {4, 8, 4, 8, 1, 1, 2};
	return size[t];
}

static MPI_Op mpi_op(int op, int t)
{
	bool fl = t == TIR_MPI_F32 || t == TIR_MPI_F64;
	switch (op) {
	case TIR_MPI_MAX: return fl ? cl.fmax : MPI_MAX;
	case TIR_MPI_MIN: return fl ? cl.fmin : MPI_MIN;
	case TIR_MPI_PROD: return MPI_PROD;
	default: return MPI_SUM;
	}
}

#define COLL_PIECE ((uint64_t)1 << 28)  /* elements of one MPI_Iallreduce, at most (an int) */

/* Run order o here: c is this rank's request of it, if it had one yet. */
static void coll_run(const struct order *o, struct tir_mpi_coll *c)
{
	char why[TIR_MPI_WHY];
	MPI_Comm comm;
	if (coll_comm(o, &comm, why, sizeof why)) {
		if (c)
			coll_end(c, TIR_MPI_ERROR, "%s", why);
		coll_break(why);
		return;
	}
	bool part = false;
	for (int i = 0; i < o->n; i++)
		part = part || o->ranks[i] == g.rank;
	if (!part)
		return;
	if (!c)
		c = coll_take(o->key, now_s() + g.seconds);
	/* every rank of it has it, and the same of it */
	int ready = c && c->n == o->n && c->type == o->type && c->op == o->op && c->count == o->count &&
		    !memcmp(c->ranks, o->ranks, sizeof *c->ranks * (size_t)o->n);
	int all = 0, rc = 0;
	MPI_Request rq;
	if ((rc = MPI_Iallreduce(&ready, &all, 1, MPI_INT, MPI_MIN, comm, &rq)) != MPI_SUCCESS ||
	    wait_until(&rq, 1, now_s() + 2.0 * g.seconds + 1, NULL, &rc)) {
		if (rc)
			mpi_why(rc, "agreeing on an all_reduce", why, sizeof why);
		else
			snprintf(why, sizeof why, "the ranks of an all_reduce did not all answer within %d s", 2 * g.seconds + 1);
		if (c)
			coll_end(c, TIR_MPI_ERROR, "%s", why);
		coll_break(why);
		return;
	}
	if (!c)
		return; /* the others were told */
	if (!all) {
		coll_end(c, TIR_MPI_NO_ANSWER,
			 !ready ? "rank 0 of the group began this all_reduce with another size, dtype or op"
				: "a rank of this all_reduce was not asked for it within %d s (--transfer-seconds), or was "
				  "asked for another size, dtype or op: none of them ran it", g.seconds);
		return;
	}
	/* the data, in pieces MPI counts with an int */
	MPI_Datatype t = mpi_type(c->type);
	MPI_Op op = mpi_op(c->op, c->type);
	size_t es = type_size(c->type);
	double t0 = now_s(), deadline = t0 + g.seconds;
	atomic_store(&g.in_data, true);
	for (uint64_t off = 0; off < c->count; off += COLL_PIECE) {
		uint64_t cnt = c->count - off < COLL_PIECE ? c->count - off : COLL_PIECE;
		rc = MPI_Iallreduce((const char *)c->send + off * es, (char *)c->recv + off * es, (int)cnt, t, op, comm,
				    &rq);
		bool posted = rc == MPI_SUCCESS;
		int st = posted ? wait_hard(&rq, deadline, &rc) : -1;
		if (st) {
			if (st < 0)
				mpi_why(rc, "MPI_Iallreduce", why, sizeof why);
			else
				snprintf(why, sizeof why, "an all_reduce's data did not all move within %d s "
					 "(--transfer-seconds)", g.seconds);
			/* what an earlier piece's MPI_Iallreduce or this one's may still touch */
			atomic_store(&g.in_data, false);
			coll_end(c, posted || off ? TIR_MPI_KEPT : TIR_MPI_ERROR, "%s", why);
			coll_break(why);
			return;
		}
	}
	atomic_store(&g.in_data, false);
	c->data_s = now_s() - t0;
	coll_end(c, 0, NULL);
}

static void *collectives(void *arg)
{
	(void)arg;
	struct order *o = calloc(1, sizeof *o);
	MPI_Request rq = MPI_REQUEST_NULL;
	int idle = 0, rc = 0;
	char why[TIR_MPI_WHY];
	if (!o)
		return NULL;
	while (!atomic_load(&g.stop) && !cl.broken) {
		coll_expire();
		struct tir_mpi_coll *c = NULL;
		if (g.rank == 0) {
			/* the oldest request here is the group's next */
			pthread_mutex_lock(&cl.mu);
			if (!cl.head) {
				wait_a_little();
			}
			if ((c = cl.head))
				cl.head = c->next;
			pthread_mutex_unlock(&cl.mu);
			if (!c)
				continue;
			memset(o, 0, sizeof *o);
			o->magic = ORDER_MAGIC;
			o->n = c->n;
			o->type = c->type;
			o->op = c->op;
			o->count = c->count;
			memcpy(o->ranks, c->ranks, sizeof *o->ranks * (size_t)c->n);
			memcpy(o->key, c->key, sizeof o->key);
			if ((rc = MPI_Ibcast(o, sizeof *o, MPI_BYTE, 0, cl.cc, &rq)) != MPI_SUCCESS ||
			    wait_until(&rq, 1, now_s() + g.seconds, NULL, &rc)) {
				if (rc)
					mpi_why(rc, "MPI_Ibcast", why, sizeof why);
				else
					snprintf(why, sizeof why, "the group's ranks did not all take the next "
						 "collective within %d s", g.seconds);
				coll_end(c, TIR_MPI_ERROR, "%s", why);
				coll_break(why);
				break;
			}
			rq = MPI_REQUEST_NULL;
		} else {
			/* rank 0's next order, waited for between other things */
			int done = 0;
			if (rq == MPI_REQUEST_NULL && (rc = MPI_Ibcast(o, sizeof *o, MPI_BYTE, 0, cl.cc, &rq)) != MPI_SUCCESS) {
				mpi_why(rc, "MPI_Ibcast", why, sizeof why);
				coll_break(why);
				break;
			}
			if ((rc = MPI_Test(&rq, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
				mpi_why(rc, "MPI_Ibcast", why, sizeof why);
				coll_break(why);
				break;
			}
			if (!done) {
				pause_for(&idle);
				continue;
			}
			idle = 0;
			rq = MPI_REQUEST_NULL;
		}
		o->key[32] = 0;
		bool good = o->magic == ORDER_MAGIC && o->n >= 1 && o->n <= g.size && o->n <= TIR_MPI_MAX_RANKS &&
			    o->type >= TIR_MPI_F32 && o->type <= TIR_MPI_I16 && o->op >= TIR_MPI_SUM &&
			    o->op <= TIR_MPI_PROD;
		uint64_t seen = 0;
		for (int i = 0; good && i < o->n; i++) {
			good = o->ranks[i] >= 0 && o->ranks[i] < g.size && !(seen >> o->ranks[i] & 1);
			seen |= good ? 1ull << o->ranks[i] : 0;
		}
		if (!good) { /* no rank 0 of ours sends this */
			if (c)
				coll_end(c, TIR_MPI_ERROR, "a malformed order");
			coll_break("rank 0 broadcast a malformed order");
			break;
		}
		coll_run(o, c);
	}
	/* a broadcast still posted is let go (MPI_Finalize is given a second) */
	if (rq != MPI_REQUEST_NULL)
		MPI_Request_free(&rq);
	else
		free(o);
	/* what is queued fails */
	pthread_mutex_lock(&cl.mu);
	struct tir_mpi_coll *c = cl.head;
	cl.head = NULL;
	cl.broken = true;
	if (!cl.broken_why[0])
		snprintf(cl.broken_why, sizeof cl.broken_why, "the server is stopping");
	pthread_mutex_unlock(&cl.mu);
	while (c) {
		struct tir_mpi_coll *next = c->next;
		coll_end(c, TIR_MPI_ERROR, "%s", cl.broken_why);
		c = next;
	}
	return NULL;
}

static void all_reduce(struct tir_mpi_coll *c, int seconds)
{
	pthread_mutex_lock(&cl.mu);
	if (cl.broken || !cl.running) {
		char why[TIR_MPI_WHY];
		snprintf(why, sizeof why, "%s", cl.broken ? cl.broken_why : "the group is not serving");
		pthread_mutex_unlock(&cl.mu);
		coll_end(c, TIR_MPI_ERROR, "%s%s", why, cl.broken ? "; this group takes no collective again" : "");
		return;
	}
	c->deadline = now_s() + seconds;
	c->next = NULL;
	struct tir_mpi_coll **p = &cl.head;
	while (*p)
		p = &(*p)->next;
	*p = c;
	pthread_cond_broadcast(&cl.cv);
	pthread_mutex_unlock(&cl.mu);
}

static pthread_mutex_t fin_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fin_cv = PTHREAD_COND_INITIALIZER;
static bool fin_done;

static void *finalize(void *arg)
{
	MPI_Finalize();
	pthread_mutex_lock(&fin_mu);
	fin_done = true;
	pthread_cond_signal(&fin_cv);
	pthread_mutex_unlock(&fin_mu);
	return NULL;
}

/* MPI_Finalize waits for mpirun, which, when it is the one stopping the
 * job (a SIGINT or SIGTERM to it), may no longer answer: it then gets
 * FINALIZE_SECONDS, and the process goes without it. */
#define FINALIZE_SECONDS 1

static int finish(int seconds)
{
	if (g.serving) {
		atomic_store(&g.stop, true);
		pthread_join(g.thread, NULL);
		g.serving = false;
	}
	if (cl.running) {
		pthread_join(cl.thread, NULL);
		cl.running = false;
	}
	if (g.comm != MPI_COMM_NULL)
		MPI_Comm_free(&g.comm);
	pthread_t t;
	if (pthread_create(&t, NULL, finalize, NULL)) {
		MPI_Finalize();
		return 0;
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FINALIZE_SECONDS;
	pthread_mutex_lock(&fin_mu);
	while (!fin_done && pthread_cond_timedwait(&fin_cv, &fin_mu, &until) == 0)
		;
	bool done = fin_done;
	pthread_mutex_unlock(&fin_mu);
	if (done)
		pthread_join(t, NULL);
	else
		pthread_detach(t);
	return done ? 0 : -1;
}

static const struct tir_mpi_api api = {
	.version = TIR_MPI_API_VERSION,
	.init = init,
	.allgather = allgather,
	.serve = serve,
	.fetch = fetch,
	.all_reduce = all_reduce,
	.finish = finish,
};

__attribute__((visibility("default"))) const struct tir_mpi_api *tir_mpi_api(void)
{
	return &api;
}
