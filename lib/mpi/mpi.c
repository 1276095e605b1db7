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
 */
#include "group.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
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

static int serve(const struct tir_mpi_hooks *h, int seconds, char *why, size_t n)
{
	g.h = *h;
	g.seconds = seconds;
	if (pthread_create(&g.thread, NULL, service, NULL)) {
		snprintf(why, n, "cannot start the MPI service thread");
		return -1;
	}
	g.serving = true;
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
	.finish = finish,
};

__attribute__((visibility("default"))) const struct tir_mpi_api *tir_mpi_api(void)
{
	return &api;
}
