/*
 * client.c — `tir run --remote` and the REPL's .remote: one realization is
 * one batch (batch.c) POSTed to a session of `tir serve`; the server says
 * what it lacks (the text, some blobs), the client PUTs just that and
 * asks again.  docs/protocol.md is the contract.
 *
 * One libcurl easy handle per remote, reused for every request, so every
 * request of a client goes over one keep-alive connection; a thread of
 * the remote's own renews its session's lease on another, so that an idle
 * client keeps its session while a vanished one's is reclaimed soon.  Every failure
 * of the network or of the protocol is -TIR_ENET with a message naming
 * the remote; an error of the program the server ran is mapped back to
 * the op of the user's source, so that it reads as a local run's.
 */
#include "batch.h"
#include "net.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define ATTEMPTS 4               /* run requests per batch (the server may evict between them) */
#define CONNECT_TIMEOUT_MS 5000L
#define CLOSE_TIMEOUT_MS 2000L   /* deleting the session at exit: never hold the user long */
#define SEND_AGAIN 3             /* a request whose body met a closed connection: tries again */

/* The session's lease (docs/protocol.md, POST /v1/sessions): the server
 * reclaims a leased session whose client has given no sign of life for
 * the lease, and a thread of the remote's renews it every third of that,
 * on a connection of its own, whatever the client is doing (an idle REPL
 * waiting for a line, an upload, a batch): a client that is there keeps
 * its session, however long it idles, and one frozen or cut off loses it
 * within the lease, not the TTL. */
struct heartbeat {
	pthread_t th;
	bool on;                     /* the thread runs */
	pthread_mutex_t mu;          /* what follows */
	pthread_cond_t cv;
	bool stop;
	char session[64];            /* to renew ("": none) */
	long period_ms;
};

struct tir_remote {
	char *name;                  /* "HOST:PORT" as given */
	char *base;                  /* "http://HOST:PORT" or "https://HOST:PORT" */
	bool tls;                    /* https */
	CURL *curl;
	struct curl_slist *hjson, *hbin;
	long timeout_ms;
	char session[64];            /* "" until made */
	bool hung;                   /* a request timed out: do not wait on it again at close */
	struct tir_remote_stats stats;
	struct tir_str body;         /* the last reply's body (but results, which dec reads) */
	bool too_long;               /* it was over BODY_MAX: the transfer was stopped */
	struct results *dec;         /* the run request's: results decoded as they arrive */
	int proto;                   /* its Tir-Protocol: -1 none, -2 not a number */
	int retry_after;             /* its Retry-After in seconds, -1 none */
	CURLcode failed;             /* how the last transfer failed, CURLE_OK if it did not */
	char errbuf[CURL_ERROR_SIZE];
	volatile sig_atomic_t *intr; /* the running exec's interrupt flag */
	struct tir_exec *x;          /* the exec whose run is under way: its progress and trace */
	struct tir_progress step;    /* the request under way's, as last told */
	bool uploading;              /* it is a blob's PUT (or several blobs' POST) */
	bool no_bundle;              /* the server has no POST /v1/blobs: one PUT a blob */
	double req_ms, first_ms;     /* it began; its reply began (0: not yet) */
	double fb_ms;                /* the last request's reply began (curl's count; 0: none) */
	double sent_ms;              /* the blob under way was all sent (0: not yet) */
	const char *blob;            /* the blob it sends */
	const struct tir_batch_input *const *bundle; /* or the blobs of a POST /v1/blobs */
	size_t nbundle;
	/* the REPL's values the session holds, by node id; keys to drop */
	bool *held;
	size_t nheld;
	uint32_t *drops;
	size_t ndrops, capdrops;
	char (*inblob)[TIR_SHA_HEX + 1]; /* by input node id: its value's blob when they were made */
	size_t ninblob;
	uint64_t gen;                /* tir_exec_input_gen then */
	bool synced;                 /* held_sync ran for the run tir_exec_run_seq says */
	uint64_t synced_seq;
	struct tir_batch_memo memo;  /* inputs' blob names, hashed once per value */
	const struct tir_program *prog; /* the program they belong to */
	struct heartbeat hb;
	char group[33];              /* the group it is a rank of (tir_remote_group_open), "" none */
	bool group_coll;             /* its ranks make collectives (/v1/info's group.collectives) */
	int rank;
};

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static int nremotes; /* curl_global_init once while any remote is open */

/* ---- results, decoded as they arrive ----
 *
 * A 200 to a run is a results body (docs/protocol.md): its frames go
 * straight into the tensors they become, checked as they come (the
 * count, each frame's header against the value asked for, padding,
 * bools), so that no copy of the whole body is made first.  A fault is
 * kept and the rest of the body read and dropped; read_results says it. */
enum { D_HEAD, D_META, D_FHEAD, D_DATA, D_PAD, D_DONE, D_FAULT };
#define BIG_VALUE ((uint64_t)4 << 20) /* a value this big gets a toucher, and streaming stores */
/* What the client reads of a reply whatever the server says: results'
 * metadata (plan numbers, and --explain and --profile text) and any body
 * that is not results (JSON: a session, an error, the blobs missing).
 * The frames are bounded by the values asked for. */
#define META_MAX ((size_t)64 << 20)
#define BODY_MAX ((size_t)16 << 20)

struct results {
	struct tir_node *const *targets;
	size_t ntargets;
	struct tir_tensor *values;   /* ntargets, filled */
	int state;
	unsigned char buf[TIR_FRAME_HEAD_MAX > TIR_RESULTS_HEAD ? TIR_FRAME_HEAD_MAX : TIR_RESULTS_HEAD];
	size_t nbuf;
	char *meta;                  /* the metadata, padding included */
	size_t mlen, mpad, nmeta;
	size_t i;                    /* the frame being read */
	struct tir_frame_info fi;
	size_t got, npad;
	uint64_t off;                /* bytes of the body seen */
	uint64_t extra;              /* past the last frame */
	struct tir_toucher touch;    /* a big value's pages faulted in ahead of the copy */
	int code;                    /* of the fault: TIR_ENET or TIR_ENOMEM */
	bool decided, active;        /* whether the body is results: they go here */
	char why[400];
};

static void results_fault(struct results *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void results_fault(struct results *d, int code, const char *fmt, ...)
{
	if (d->state == D_FAULT)
		return;
	tir_touch_stop(&d->touch);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof d->why, fmt, ap);
	va_end(ap);
	d->code = code;
	d->state = D_FAULT;
}

/* The next frame's header, or the end. */
static void results_next(struct results *d)
{
	tir_touch_stop(&d->touch);
	d->nbuf = 0;
	d->got = d->npad = 0;
	d->state = d->i < d->ntargets ? D_FHEAD : D_DONE;
}

static void results_absorb(struct results *d, const unsigned char *p, size_t n)
{
	while (n) {
		size_t take = n;
		switch (d->state) {
		case D_HEAD:
			take = TIR_RESULTS_HEAD - d->nbuf < n ? TIR_RESULTS_HEAD - d->nbuf : n;
			memcpy(d->buf + d->nbuf, p, take);
			d->nbuf += take;
			if (d->nbuf < TIR_RESULTS_HEAD)
				break;
			if (memcmp(d->buf, TIR_RESULTS_MAGIC, 4)) {
				results_fault(d, TIR_ENET, "the reply is not a results body");
			} else if (tir_get_u32(d->buf + 4) != TIR_PROTOCOL) {
				results_fault(d, TIR_ENET, "results of protocol %u; this tir speaks %d",
					      tir_get_u32(d->buf + 4), TIR_PROTOCOL);
			} else if (tir_get_u32(d->buf + 8) != d->ntargets) {
				results_fault(d, TIR_ENET, "%u results for %zu values asked", tir_get_u32(d->buf + 8),
					      d->ntargets);
			} else {
				d->mlen = tir_get_u32(d->buf + 12);
				d->mpad = (d->mlen + 7) & ~(size_t)7;
				d->meta = d->mlen > META_MAX ? NULL : malloc(d->mpad + 1);
				if (d->mlen > META_MAX)
					results_fault(d, TIR_ENET, "results: %zu bytes of metadata, more than the %zu MiB a client reads",
						      d->mlen, META_MAX >> 20);
				else if (!d->meta)
					results_fault(d, TIR_ENOMEM, "out of memory reading the results");
				else
					d->state = D_META;
			}
			break;
		case D_META:
			take = d->mpad - d->nmeta < n ? d->mpad - d->nmeta : n;
			memcpy(d->meta + d->nmeta, p, take);
			d->nmeta += take;
			if (d->nmeta == d->mpad) {
				d->meta[d->mpad] = 0;
				for (size_t i = d->mlen; i < d->mpad; i++)
					if (d->meta[i])
						results_fault(d, TIR_ENET, "results: the metadata's padding is not zero");
				if (d->state == D_META)
					results_next(d);
			}
			break;
		case D_FHEAD: {
			size_t want = d->nbuf < 16 ? 16 : d->fi.headlen;
			take = want - d->nbuf < n ? want - d->nbuf : n;
			memcpy(d->buf + d->nbuf, p, take);
			d->nbuf += take;
			if (d->nbuf < want)
				break;
			struct tir_err e = {0};
			int rc = tir_frame_head_parse(d->buf, d->nbuf, &d->fi, &e);
			if (rc > 0)
				break; /* the shape is next */
			if (rc) {
				results_fault(d, TIR_ENET, "result %zu: %s", d->i + 1, e.msg);
				break;
			}
			const struct tir_ntype *want_t = &d->targets[d->i]->type;
			bool ok = d->fi.dtype == want_t->dtype && d->fi.rank == want_t->rank;
			for (int k = 0; ok && k < d->fi.rank; k++)
				ok = d->fi.shape[k] == want_t->shape[k];
			if (!ok) {
				char a[TIR_TYPE_STRLEN];
				results_fault(d, TIR_ENET, "result %zu is not the %s asked for", d->i + 1,
					      tir_type_str(want_t, a, sizeof a));
				break;
			}
			if (tir_tensor_alloc(&d->values[d->i], d->fi.dtype, d->fi.rank, d->fi.shape, false, &e)) {
				results_fault(d, TIR_ENOMEM, "%s", e.msg);
				break;
			}
			if (d->fi.nbytes >= BIG_VALUE)
				tir_touch_start(&d->touch, tir_tensor_data(&d->values[d->i]), (size_t)d->fi.nbytes);
			d->state = d->fi.nbytes ? D_DATA : D_PAD;
			if (d->state == D_PAD && !d->fi.padlen) {
				d->i++;
				results_next(d);
			}
			break;
		}
		case D_DATA: {
			take = d->fi.nbytes - d->got < n ? (size_t)(d->fi.nbytes - d->got) : n;
			unsigned char *dst = (unsigned char *)tir_tensor_data(&d->values[d->i]) + d->got;
			if (d->fi.nbytes >= BIG_VALUE) { /* not read again before the run ends */
				tir_copy_stream(dst, p, take);
				atomic_store_explicit(&d->touch.done, d->got + take, memory_order_relaxed);
			} else {
				memcpy(dst, p, take);
			}
			if (d->fi.dtype == TIR_DTYPE_BOOL)
				for (size_t k = 0; k < take; k++)
					if (p[k] > 1) {
						results_fault(d, TIR_ENET, "result %zu: tensor frame: byte %zu: a bool is 0 or 1, not %u",
							      d->i + 1, d->fi.headlen + d->got + k, p[k]);
						break;
					}
			d->got += take;
			if (d->state == D_DATA && d->got == d->fi.nbytes) {
				d->state = D_PAD;
				if (!d->fi.padlen) {
					d->i++;
					results_next(d);
				}
			}
			break;
		}
		case D_PAD:
			take = d->fi.padlen - d->npad < n ? d->fi.padlen - d->npad : n;
			for (size_t k = 0; k < take; k++)
				if (p[k])
					results_fault(d, TIR_ENET, "result %zu: tensor frame: byte %zu: padding must be zero",
						      d->i + 1, d->fi.headlen + (size_t)d->fi.nbytes + d->npad + k);
			d->npad += take;
			if (d->state == D_PAD && d->npad == d->fi.padlen) {
				d->i++;
				results_next(d);
			}
			break;
		case D_DONE:
			d->extra += n;
			results_fault(d, TIR_ENET, "the reply goes on after the last result (%zu asked for); stopped reading it",
				      d->ntargets);
			break;
		default: /* D_FAULT: the rest is dropped */
			break;
		}
		d->off += take;
		p += take;
		n -= take;
	}
}

/* Ready for a reply (a request sent again starts over). */
static void results_reset(struct results *d)
{
	tir_touch_stop(&d->touch);
	for (size_t i = 0; i < d->ntargets; i++)
		tir_tensor_release(&d->values[i]);
	free(d->meta);
	struct results z = {.targets = d->targets, .ntargets = d->ntargets, .values = d->values};
	*d = z;
}

/* ---- curl callbacks ---- */

static size_t on_body(char *d, size_t size, size_t n, void *ud)
{
	struct tir_remote *r = ud;
	size_t len = size * n;
	struct results *dec = r->dec;
	if (dec && dec->active) {
		results_absorb(dec, (const unsigned char *)d, len);
		return dec->state == D_FAULT ? 0 : len; /* a fault stops the transfer */
	}
	if (r->body.n + len > BODY_MAX) {
		r->too_long = true;
		return 0;
	}
	tir_str_add(&r->body, d, len);
	if (r->body.oom)
		return 0;
	/* a results body starts "TIRR"; any other (an error's JSON) is kept */
	if (dec && !dec->decided && r->body.n >= 4) {
		dec->decided = true;
		if (!memcmp(r->body.s, TIR_RESULTS_MAGIC, 4)) {
			dec->active = true;
			results_absorb(dec, (const unsigned char *)r->body.s, r->body.n);
			r->body.n = 0;
		}
	}
	return len;
}

static size_t on_header(char *d, size_t size, size_t n, void *ud)
{
	struct tir_remote *r = ud;
	size_t len = size * n;
	static const char name[] = TIR_PROTOCOL_HEADER ":";
	if (len > sizeof name - 1 && !strncasecmp(d, name, sizeof name - 1)) {
		size_t i = sizeof name - 1;
		while (i < len && (d[i] == ' ' || d[i] == '\t'))
			i++;
		int v = 0, digits = 0;
		while (i < len && isdigit((unsigned char)d[i]) && digits < 6)
			v = v * 10 + (d[i++] - '0'), digits++;
		while (i < len && isspace((unsigned char)d[i]))
			i++;
		r->proto = digits && i == len ? v : -2;
	}
	static const char retry[] = "Retry-After:";
	if (len > sizeof retry - 1 && !strncasecmp(d, retry, sizeof retry - 1)) {
		size_t i = sizeof retry - 1;
		while (i < len && (d[i] == ' ' || d[i] == '\t'))
			i++;
		int v = 0, digits = 0;
		while (i < len && isdigit((unsigned char)d[i]) && digits < 4)
			v = v * 10 + (d[i++] - '0'), digits++;
		r->retry_after = digits ? v : -1;
	}
	return len;
}

/* A blob as it goes up, read from where its parts are: the chunk list,
 * the frame's header, the data (from the tensor), the padding (no 256 MiB
 * frame made first). */
struct upload {
	const unsigned char *const *part;
	const size_t *len;
	size_t n;                    /* parts */
	size_t at;
	size_t off;
};

static size_t on_read(char *d, size_t size, size_t n, void *ud)
{
	struct upload *u = ud;
	size_t room = size * n, done = 0;
	while (done < room && u->at < u->n) {
		size_t k = u->len[u->at] - u->off;
		if (k > room - done)
			k = room - done;
		memcpy(d + done, u->part[u->at] + u->off, k);
		done += k;
		u->off += k;
		if (u->off == u->len[u->at]) {
			u->at++;
			u->off = 0;
		}
	}
	return done;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct tir_remote *r = ud;
	if (r->x) {
		struct tir_progress *p = &r->step;
		if (dn > 0 && !r->first_ms)
			r->first_ms = tir_now_ms();
		if (r->uploading && ut > 0 && un == ut && !r->sent_ms)
			r->sent_ms = tir_now_ms();
		if (r->uploading && (un < ut || !dn)) {
			p->step = TIR_STEP_UPLOAD;
			p->bytes = (uint64_t)un;
			p->total = (uint64_t)ut;
		} else if (dn > 0) {
			*p = (struct tir_progress){TIR_STEP_RESULTS, 0, 0, (uint64_t)dn, dt > 0 ? (uint64_t)dt : 0,
						   r->first_ms};
		} else {
			*p = (struct tir_progress){.step = TIR_STEP_WAIT, .step_ms = r->req_ms};
		}
		tir_exec_progress(r->x, p);
	}
	return r->intr && *r->intr; /* non-zero aborts the transfer */
}

/* A connection's socket, as curl would make it, tuned when the server is
 * on this machine (tir_sock_local). */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	curl_socket_t fd = socket(a->family, a->socktype, a->protocol);
	if (fd != CURL_SOCKET_BAD && purpose == CURLSOCKTYPE_IPCXN && a->socktype == SOCK_STREAM)
		tir_sock_local(fd, &a->addr);
	return fd;
}

void tir_curl_setup(CURL *h, const struct tir_curl_opts *o)
{
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->connect_ms);
	if (o->timeout_ms)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* the one request asked for, of http or https, and no other: a tir
	 * server is reached directly, no redirect is followed */
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, o->agent);
	const char *ca = getenv("TIR_CA_FILE");
	if (ca && *ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	/* by default 64 KiB up and 16 KiB down: a system call and a callback each */
	if (o->big_pieces) {
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 1L << 20);
	}
	if (o->errbuf)
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, o->errbuf);
	if (o->on_head) {
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, o->on_head);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, o->ud);
	}
	if (o->on_body) {
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, o->on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, o->ud);
	}
	if (o->on_progress) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, o->on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, o->ud);
	}
}

/* ---- the lease's heartbeat ---- */

static size_t drop_body(char *d, size_t size, size_t n, void *ud)
{
	return size * n;
}

static int beat_stop(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct heartbeat *hb = ud;
	pthread_mutex_lock(&hb->mu);
	bool stop = hb->stop;
	pthread_mutex_unlock(&hb->mu);
	return stop; /* a renewal under way ends at once when the remote closes */
}

static void *beat(void *arg)
{
	struct tir_remote *r = arg;
	struct heartbeat *hb = &r->hb;
	CURL *c = curl_easy_init();
	if (c) {
		tir_curl_setup(c, &(struct tir_curl_opts){.agent = "tir/" TIR_VERSION,
							.connect_ms = CONNECT_TIMEOUT_MS,
							.on_body = drop_body,
							.on_progress = beat_stop,
							.ud = hb});
		curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L); /* the server closes idle ones anyway */
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->hjson);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
	}
	pthread_mutex_lock(&hb->mu);
	while (!hb->stop && c) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += hb->period_ms / 1000;
		until.tv_nsec += hb->period_ms % 1000 * 1000000;
		if (until.tv_nsec >= 1000000000)
			until.tv_sec++, until.tv_nsec -= 1000000000;
		while (!hb->stop && pthread_cond_timedwait(&hb->cv, &hb->mu, &until) != ETIMEDOUT)
			;
		if (hb->stop || !hb->session[0])
			continue;
		char sid[sizeof hb->session], url[512];
		snprintf(sid, sizeof sid, "%s", hb->session);
		snprintf(url, sizeof url, "%s/v1/sessions/%s/renew", r->base, sid);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, hb->period_ms);
		pthread_mutex_unlock(&hb->mu);
		long st = 0;
		if (curl_easy_perform(c) == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
		pthread_mutex_lock(&hb->mu);
		/* reclaimed (the client was frozen longer than the lease): nothing
		 * to renew; the next run finds it gone and makes a new one */
		if (st == 404 && !strcmp(sid, hb->session))
			hb->session[0] = 0;
	}
	pthread_mutex_unlock(&hb->mu);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* Renew session sid (of lease seconds; 0: not leased) from now on. */
static void heartbeat_set(struct tir_remote *r, const char *sid, int lease)
{
	struct heartbeat *hb = &r->hb;
	pthread_mutex_lock(&hb->mu);
	snprintf(hb->session, sizeof hb->session, "%s", lease > 0 ? sid : "");
	hb->period_ms = lease > 0 ? lease * 1000L / 3 : 1000;
	if (hb->period_ms < 100)
		hb->period_ms = 100;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	if (lease > 0 && !hb->on) {
		/* the thread takes no signal: SIGINT and the like are the main thread's */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		hb->on = pthread_create(&hb->th, NULL, beat, r) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
}

static void heartbeat_stop(struct tir_remote *r)
{
	struct heartbeat *hb = &r->hb;
	if (!hb->on)
		return;
	pthread_mutex_lock(&hb->mu);
	hb->stop = true;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	pthread_join(hb->th, NULL);
	hb->on = false;
}

/* ---- open, close ---- */

/* HOST:PORT, [V6]:PORT; port 1..65535.  false when malformed. */
static bool split_hostport(const char *s, char *host, size_t nhost, int *port)
{
	const char *colon;
	size_t hl;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || e[1] != ':')
			return false;
		colon = e + 1;
		hl = (size_t)(colon - s);
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return false;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= nhost)
		return false;
	for (const char *c = s; c < s + hl; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".-_[]:%", *c))
			return false;
	long v = 0;
	const char *d = colon + 1;
	if (!*d)
		return false;
	for (; *d; d++) {
		if (!isdigit((unsigned char)*d) || (v = v * 10 + (*d - '0')) > 65535)
			return false;
	}
	if (v < 1)
		return false;
	memcpy(host, s, hl);
	host[hl] = 0;
	*port = (int)v;
	return true;
}

#define DEFAULT_PORT 6667 /* tir serve's --port when none is given (cli/serve.c) */
#define INFO_TIMEOUT_MS 5000L /* the /v1/info asked at open */

/* TIR_TIMEOUT seconds (default 600) for one request, in ms. */
static long timeout_ms(void)
{
	const char *e = getenv("TIR_TIMEOUT");
	char *end;
	double v = e && *e ? strtod(e, &end) : 600;
	if (e && *e && (*end || !(v > 0) || v > 86400))
		v = 600;
	return (long)(v * 1000);
}

struct tir_remote *tir_remote_open(const char *hostport, const char *token, struct tir_err *err)
{
	char host[256];
	int port;
	/* http:// (the default) or https:// before HOST:PORT */
	const char *scheme = "http", *hp = hostport;
	if (!strncmp(hostport, "https://", 8)) {
		scheme = "https";
		hp += 8;
	} else if (!strncmp(hostport, "http://", 7)) {
		hp += 7;
	}
	if (strchr(hostport, ',')) {
		tir_errf(err, TIR_EUNSUPPORTED, NULL, "several remotes at once (%s) are not supported yet",
			 hostport);
		return NULL;
	}
	/* a trailing '/' (a URL's) is no part of the address; a HOST alone
	 * ("localhost", "[::1]") is at tir serve's default port */
	char addr[300];
	size_t al = strlen(hp);
	while (al && hp[al - 1] == '/')
		al--;
	snprintf(addr, sizeof addr, "%.*s", (int)(al < sizeof addr ? al : sizeof addr - 1), hp);
	bool bare = al < sizeof addr - 8 && (addr[0] == '[' ? addr[al - 1] == ']' : !strchr(addr, ':'));
	if (bare && al)
		snprintf(addr + al, sizeof addr - al, ":%d", DEFAULT_PORT);
	if (!split_hostport(addr, host, sizeof host, &port)) {
		tir_errf(err, TIR_EDATA, NULL, "remote '%s': expected HOST, HOST:PORT, [IPV6]:PORT or "
			 "https://HOST:PORT (e.g. 127.0.0.1:6667)", hostport);
		return NULL;
	}
	if (token && (!*token || strpbrk(token, "\r\n"))) {
		tir_errf(err, TIR_ENET, NULL, "TIR_TOKEN: a token is one line of text, not empty");
		return NULL;
	}
	struct tir_remote *r = calloc(1, sizeof *r);
	if (!r) {
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&global_lock);
	if (nremotes++ == 0)
		curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_mutex_unlock(&global_lock);
	pthread_mutex_init(&r->hb.mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->hb.cv, &ca);
	pthread_condattr_destroy(&ca);
	r->name = strdup(hostport);
	r->tls = scheme[4] == 's';
	size_t nb = strlen(host) + 32;
	r->base = malloc(nb);
	if (r->base)
		snprintf(r->base, nb, "%s://%s:%d", scheme, host, port);
	r->curl = curl_easy_init();
	r->timeout_ms = timeout_ms();
	r->proto = -1;
	/* no "Expect: 100-continue": a body goes with its request, no extra wait */
	r->hjson = curl_slist_append(NULL, "Expect:");
	r->hjson = curl_slist_append(r->hjson, TIR_PROTOCOL_HEADER ": " TIR_PROTOCOL_STR);
	r->hjson = curl_slist_append(r->hjson, "Content-Type: application/json");
	r->hbin = curl_slist_append(NULL, "Expect:");
	r->hbin = curl_slist_append(r->hbin, TIR_PROTOCOL_HEADER ": " TIR_PROTOCOL_STR);
	r->hbin = curl_slist_append(r->hbin, "Content-Type: application/octet-stream");
	if (token) {
		size_t na = strlen(token) + 32;
		char *auth = malloc(na);
		if (auth) {
			snprintf(auth, na, "Authorization: Bearer %s", token);
			r->hjson = curl_slist_append(r->hjson, auth);
			r->hbin = curl_slist_append(r->hbin, auth);
			free(auth);
		} else {
			curl_slist_free_all(r->hjson);
			r->hjson = NULL;
		}
	}
	if (!r->name || !r->base || !r->curl || !r->hjson || !r->hbin) {
		tir_remote_close(r);
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	tir_curl_setup(r->curl, &(struct tir_curl_opts){.agent = "tir/" TIR_VERSION,
							  .connect_ms = CONNECT_TIMEOUT_MS,
							  .timeout_ms = r->timeout_ms,
							  .errbuf = r->errbuf,
							  .on_head = on_header,
							  .on_body = on_body,
							  .on_progress = on_progress,
							  .ud = r,
							  .big_pieces = true});
	return r;
}

static int request(struct tir_remote *r, const char *method, const char *path, const void *body,
		   size_t len, struct curl_slist *hdr, long *status, struct tir_err *err);

void tir_remote_close(struct tir_remote *r)
{
	if (!r)
		return;
	heartbeat_stop(r);
	if (r->curl && r->session[0] && !r->hung) {
		/* the session goes with the client; a server that does not answer
		 * soon expires it later */
		char path[128];
		snprintf(path, sizeof path, "/v1/sessions/%s", r->session);
		struct tir_err e = {0};
		long st;
		curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS,
				 r->timeout_ms < CLOSE_TIMEOUT_MS ? r->timeout_ms : CLOSE_TIMEOUT_MS);
		r->intr = NULL;
		request(r, "DELETE", path, NULL, 0, r->hjson, &st, &e);
	}
	if (r->curl)
		curl_easy_cleanup(r->curl);
	curl_slist_free_all(r->hjson);
	curl_slist_free_all(r->hbin);
	tir_str_free(&r->body);
	free(r->held);
	free(r->inblob);
	tir_batch_memo_free(&r->memo);
	free(r->drops);
	free(r->name);
	free(r->base);
	pthread_mutex_destroy(&r->hb.mu);
	pthread_cond_destroy(&r->hb.cv);
	free(r);
	pthread_mutex_lock(&global_lock);
	if (--nremotes == 0)
		curl_global_cleanup();
	pthread_mutex_unlock(&global_lock);
}

const char *tir_remote_name(const struct tir_remote *r)
{
	return r->name;
}

const struct tir_remote_stats *tir_remote_stats(const struct tir_remote *r)
{
	return &r->stats;
}

/* ---- one request ---- */

static int net_err(struct tir_remote *r, struct tir_err *err, const char *what)
{
	return tir_errf(err, TIR_ENET, NULL, "remote %s: %s", r->name, what);
}

/* What a failed transfer means, for a person. */
static int curl_failed(struct tir_remote *r, CURLcode rc, struct tir_err *err)
{
	if (rc == CURLE_ABORTED_BY_CALLBACK && r->intr && *r->intr)
		return tir_errf(err, TIR_EINTERRUPT, NULL, "interrupted");
	if (rc == CURLE_WRITE_ERROR && r->body.oom)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory reading the reply of remote %s", r->name);
	if (rc == CURLE_WRITE_ERROR && r->too_long)
		return tir_errf(err, TIR_ENET, NULL, "remote %s: a reply of more than %zu MiB that is not results; "
				"stopped reading it", r->name, BODY_MAX >> 20);
	if (rc == CURLE_WRITE_ERROR && r->dec && r->dec->state == D_FAULT) /* stopped at the fault */
		return r->dec->code == TIR_ENOMEM ? tir_errf(err, TIR_ENOMEM, NULL, "%s", r->dec->why)
						  : tir_errf(err, TIR_ENET, NULL, "remote %s: %s", r->name, r->dec->why);
	const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
	long connected = 0;
	curl_easy_getinfo(r->curl, CURLINFO_NUM_CONNECTS, &connected);
	switch (rc) {
	case CURLE_COULDNT_CONNECT: {
		long os = 0;
		curl_easy_getinfo(r->curl, CURLINFO_OS_ERRNO, &os);
		/* with a session, the server was there a moment ago (curl tries a
		 * fresh connection when a kept one dies) */
		return tir_errf(err, TIR_ENET, NULL, "remote %s: %s (%s)", r->name,
				r->session[0] ? "the connection broke and cannot be made again" : "cannot connect",
				os ? strerror((int)os) : detail);
	}
	case CURLE_COULDNT_RESOLVE_HOST:
		return tir_errf(err, TIR_ENET, NULL, "remote %s: cannot connect (no such host)", r->name);
	case CURLE_OPERATION_TIMEDOUT: {
		r->hung = true;
		/* the request went out (on a fresh connection or a kept one,
		 * whose connect time curl reports as 0) when it has a
		 * pre-transfer time; a connect that never ended has none */
		curl_off_t pre = 0;
		curl_easy_getinfo(r->curl, CURLINFO_PRETRANSFER_TIME_T, &pre);
		if (pre <= 0 && connected == 0)
			return tir_errf(err, TIR_ENET, NULL, "remote %s: cannot connect within %ld s", r->name,
					CONNECT_TIMEOUT_MS / 1000);
		return tir_errf(err, TIR_ENET, NULL, "remote %s: no answer within %.3g s (TIR_TIMEOUT)", r->name,
				r->timeout_ms / 1000.0);
	}
	case CURLE_GOT_NOTHING:
		if (!r->tls && !r->session[0]) /* a TLS server drops plain HTTP so */
			return net_err(r, err, "the server closed the connection without a reply "
					       "(if it serves TLS, use https://HOST:PORT)");
		return net_err(r, err, "the server closed the connection without a reply");
	case CURLE_PEER_FAILED_VERIFICATION:
		return tir_errf(err, TIR_ENET, NULL, "remote %s: its certificate is not trusted (%s); "
				"TIR_CA_FILE names a CA certificate to trust", r->name, detail);
	case CURLE_SSL_CACERT_BADFILE: {
		const char *ca = getenv("TIR_CA_FILE");
		return tir_errf(err, TIR_ENET, NULL, "remote %s: TIR_CA_FILE '%s' cannot be read as CA certificates (%s)",
				r->name, ca ? ca : "", detail);
	}
	case CURLE_SSL_CONNECT_ERROR:
		return tir_errf(err, TIR_ENET, NULL, "remote %s: the TLS handshake failed (%s)%s", r->name, detail,
				r->session[0] ? "" : "; is it a tir serve with --tls-cert?");
	case CURLE_PARTIAL_FILE:
		return net_err(r, err, "the reply was cut short (the server went away?)");
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		return tir_errf(err, TIR_ENET, NULL, "remote %s: the connection broke (%s)", r->name, detail);
	default:
		return tir_errf(err, TIR_ENET, NULL, "remote %s: %s", r->name, detail);
	}
}

/* --trace: one request's span, and within it an upload's or the fetch
 * of results (from its first byte, fb_ms, to its end), on the network
 * track; a session's id in the path cut to 8 digits, as the server logs it. */
static void trace_request(struct tir_remote *r, const char *method, const char *path, double t0, double t1,
			  double fb_ms, long status, uint64_t up, uint64_t down, uint64_t body)
{
	struct tir_net_span s = {.track = TIR_TRACK_NET, .who = r, .cat = "request", .t0_ms = t0, .t1_ms = t1,
				 .status = status, .up = up, .down = down};
	const char *sid = strstr(path, "/sessions/");
	if (sid && strlen(sid) > 10 + 8)
		snprintf(s.name, sizeof s.name, "%s %.*s\u2026%s", method, (int)(sid - path + 10 + 8), path,
			 strchr(sid + 10, '/') ? strchr(sid + 10, '/') : "");
	else if (r->uploading && r->nbundle)
		snprintf(s.name, sizeof s.name, "%s %s (%zu blobs)", method, path, r->nbundle);
	else if (r->uploading)
		snprintf(s.name, sizeof s.name, "%s /v1/blobs/%.8s\u2026", method, r->blob ? r->blob : "");
	else
		snprintf(s.name, sizeof s.name, "%s %s", method, path);
	tir_exec_trace_span(r->x, &s);
	/* a POST /v1/blobs: an upload of each blob, the whole request's span */
	for (size_t i = 0; r->uploading && r->nbundle && status == 200 && i < r->nbundle; i++) {
		const struct tir_batch_input *in = r->bundle[i];
		struct tir_net_span u = {.track = TIR_TRACK_NET, .who = r, .cat = "upload", .t0_ms = t0,
					 .t1_ms = r->sent_ms ? r->sent_ms : t1,
					 .up = in->len + tir_frame_size(&in->value)};
		snprintf(u.name, sizeof u.name, "upload %.8s\u2026", in->blob);
		snprintf(u.blob, sizeof u.blob, "%s", in->blob);
		tir_exec_trace_span(r->x, &u);
	}
	if (r->uploading && !r->nbundle && status / 100 == 2) {
		struct tir_net_span u = {.track = TIR_TRACK_NET, .who = r, .cat = "upload", .t0_ms = t0,
					 .t1_ms = r->sent_ms ? r->sent_ms : t1, .up = body};
		snprintf(u.name, sizeof u.name, "upload %.8s\u2026", r->blob ? r->blob : "");
		snprintf(u.blob, sizeof u.blob, "%s", r->blob ? r->blob : "");
		tir_exec_trace_span(r->x, &u);
	} else if (r->dec && status == 200 && fb_ms) {
		struct tir_net_span f = {.track = TIR_TRACK_NET, .who = r, .cat = "fetch", .t0_ms = fb_ms, .t1_ms = t1,
					 .down = down};
		snprintf(f.name, sizeof f.name, "fetch results");
		tir_exec_trace_span(r->x, &f);
	}
}

/* One HTTP request; the reply's body in r->body, its status in *status.
 * The body is body[0..len) (NULL: none), or with up, a PUT of what it
 * reads.  A transfer that fails or a reply without this protocol's header
 * is an error; any status is not. */
static int request_once(struct tir_remote *r, const char *method, const char *path,
			const void *body, size_t len, struct upload *up, struct curl_slist *hdr,
			long *status, struct tir_err *err)
{
	CURL *c = r->curl;
	size_t nurl = strlen(r->base) + strlen(path) + 1;
	char *url = malloc(nurl);
	if (!url)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	snprintf(url, nurl, "%s%s", r->base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_UPLOAD, up ? 1L : 0L);
	if (up) {
		up->at = 0;
		up->off = 0;
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, up);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
	} else if (body) {
		/* the bytes are sent from where they are: no copy */
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST,
			 up ? (strcmp(method, "PUT") ? method : NULL)
			    : !strcmp(method, "GET") || !strcmp(method, "POST") ? NULL : method);
	r->body.n = 0;
	r->body.oom = false;
	r->too_long = false;
	if (r->dec)
		results_reset(r->dec);
	r->proto = -1;
	r->retry_after = -1;
	r->errbuf[0] = 0;
	double t0 = tir_now_ms();
	r->req_ms = t0;
	r->first_ms = r->sent_ms = 0;
	r->uploading = up != NULL;
	if (r->x) {
		if (!up)
			r->step = (struct tir_progress){.step = TIR_STEP_WAIT, .step_ms = t0};
		r->step.step_ms = t0;
		tir_exec_progress(r->x, &r->step);
	}
	CURLcode rc = curl_easy_perform(c);
	double t1 = tir_now_ms();
	r->stats.net_ms += t1 - t0;
	r->stats.round_trips++;
	curl_off_t sent = 0, got = 0, fb = 0;
	long reqh = 0, resh = 0;
	curl_easy_getinfo(c, CURLINFO_SIZE_UPLOAD_T, &sent);
	curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &got);
	curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &reqh);
	curl_easy_getinfo(c, CURLINFO_HEADER_SIZE, &resh);
	curl_easy_getinfo(c, CURLINFO_STARTTRANSFER_TIME_T, &fb);
	r->stats.bytes_up += (uint64_t)sent + (uint64_t)reqh;
	r->stats.bytes_down += (uint64_t)got + (uint64_t)resh;
	r->failed = rc;
	if (r->x && tir_exec_tracing(r->x)) {
		long code = 0;
		if (rc == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		trace_request(r, method, path, t0, t1, fb > 0 ? t0 + (double)fb / 1e3 : 0, code,
			      (uint64_t)sent + (uint64_t)reqh, (uint64_t)got + (uint64_t)resh, (uint64_t)sent);
	}
	r->fb_ms = fb > 0 ? t0 + (double)fb / 1e3 : 0;
	free(url);
	if (rc != CURLE_OK)
		return curl_failed(r, rc, err);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	if (r->proto == -1)
		return tir_errf(err, TIR_ENET, NULL,
				"remote %s does not speak the tir protocol (its reply has no %s header); "
				"this tir speaks %d", r->name, TIR_PROTOCOL_HEADER, TIR_PROTOCOL);
	if (r->proto != TIR_PROTOCOL) {
		if (r->proto < 0)
			return tir_errf(err, TIR_ENET, NULL, "remote %s: a malformed %s header", r->name,
					TIR_PROTOCOL_HEADER);
		return tir_errf(err, TIR_ENET, NULL, "remote %s speaks tir protocol %d; this tir speaks %d",
				r->name, r->proto, TIR_PROTOCOL);
	}
	return 0;
}

/* request_once, again while the server answers 503 with a Retry-After
 * (the bodies it is receiving fill its --max-inflight), for at most
 * TIR_TIMEOUT seconds in all.  A server answers a body it cannot take
 * (503, 413) before reading it and closes the connection: curl, still
 * sending, may meet the closed connection before it reads the answer, so
 * a body that could not be sent is sent again, a few times, to read it. */
static int request_up(struct tir_remote *r, const char *method, const char *path, const void *body,
		      size_t len, struct upload *up, struct curl_slist *hdr, long *status,
		      struct tir_err *err)
{
	double t0 = tir_now_ms();
	int again = 0;
	for (;;) {
		int rc = request_once(r, method, path, body, len, up, hdr, status, err);
		if (rc && (body || up) && r->failed == CURLE_SEND_ERROR && again++ < SEND_AGAIN)
			continue;
		if (rc || *status != 503 || r->retry_after < 0)
			return rc;
		double wait = (r->retry_after ? r->retry_after : 1) * 1e3;
		if (tir_now_ms() + wait - t0 > r->timeout_ms)
			return 0; /* the 503 is the answer */
		for (double end = tir_now_ms() + wait; tir_now_ms() < end;) {
			if (r->intr && *r->intr)
				return tir_errf(err, TIR_EINTERRUPT, NULL, "interrupted");
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
}

static int request(struct tir_remote *r, const char *method, const char *path, const void *body,
		   size_t len, struct curl_slist *hdr, long *status, struct tir_err *err)
{
	return request_up(r, method, path, body, len, NULL, hdr, status, err);
}

/* The reply's {"error": {...}} object, or NULL.  *root: free with json_decref. */
static json_t *reply_error(struct tir_remote *r, json_t **root)
{
	*root = json_loadb(r->body.s ? r->body.s : "", r->body.n, 0, NULL);
	json_t *e = json_object_get(*root, "error");
	return json_is_object(e) ? e : NULL;
}

/* A reply that is not what was asked for: say what the server said. */
static int http_failed(struct tir_remote *r, long status, struct tir_err *err)
{
	json_t *root;
	json_t *e = reply_error(r, &root);
	const char *code = e ? json_string_value(json_object_get(e, "code")) : NULL;
	const char *msg = e ? json_string_value(json_object_get(e, "message")) : NULL;
	int rc;
	if (status == 401)
		rc = tir_errf(err, TIR_ENET, NULL, "remote %s refused the token: set TIR_TOKEN to the server's "
				"--token", r->name);
	else if (status == 503)
		rc = tir_errf(err, TIR_ENET, NULL, "remote %s is busy: %s", r->name, msg ? msg : "try again later");
	else if (msg)
		rc = tir_errf(err, TIR_ENET, NULL, "remote %s: %ld %s: %s", r->name, status, code ? code : "error",
			      msg);
	else
		rc = tir_errf(err, TIR_ENET, NULL, "remote %s: HTTP status %ld and no tir error in the reply",
			      r->name, status);
	json_decref(root);
	return rc;
}

/* ---- the session ---- */

static int session_make(struct tir_remote *r, struct tir_err *err)
{
	long st = 0;
	/* once: sessions full (503, even with a Retry-After) frees up only
	 * as others end, so it is said now rather than waited for */
	static const char ask[] = "{\"lease\":true}";
	int rc = request_once(r, "POST", "/v1/sessions", ask, sizeof ask - 1, NULL, r->hjson, &st, err);
	if (rc)
		return rc;
	if (st != 201 && st != 200)
		return http_failed(r, st, err);
	json_t *root = json_loadb(r->body.s ? r->body.s : "", r->body.n, 0, NULL);
	const char *id = json_string_value(json_object_get(root, "session"));
	bool ok = id && strlen(id) >= 16 && strlen(id) < sizeof r->session;
	for (const char *c = id; ok && *c; c++)
		ok = isxdigit((unsigned char)*c);
	if (ok)
		snprintf(r->session, sizeof r->session, "%s", id);
	json_t *lease = json_object_get(root, "lease");
	if (ok)
		heartbeat_set(r, r->session, json_is_integer(lease) && json_integer_value(lease) > 0 &&
						json_integer_value(lease) < 1000000 ? (int)json_integer_value(lease) : 0);
	json_decref(root);
	return ok ? 0 : net_err(r, err, "the reply to POST /v1/sessions names no session");
}

int tir_remote_connect(struct tir_remote *r, struct tir_err *err)
{
	memset(&r->stats, 0, sizeof r->stats);
	return r->session[0] ? 0 : session_make(r, err);
}

/* Node id's value is no longer held: the next run drops it. */
static int held_drop(struct tir_remote *r, size_t id)
{
	r->held[id] = false;
	if (tir_grow((void **)&r->drops, &r->capdrops, r->ndrops + 1, sizeof *r->drops))
		return -1;
	r->drops[r->ndrops++] = (uint32_t)id;
	return 0;
}

/* Forget every held value. */
static void held_forget(struct tir_remote *r)
{
	for (size_t i = 0; i < r->nheld; i++)
		if (r->held[i])
			held_drop(r, i); /* out of memory: the key stays on the server, unused */
	for (size_t i = 0; i < r->ninblob; i++)
		r->inblob[i][0] = 0;
}

void tir_remote_forget(struct tir_remote *r)
{
	held_forget(r);
	tir_batch_memo_free(&r->memo); /* no value of the old program held on to */
	r->prog = NULL;
}

bool tir_remote_holds(const struct tir_remote *r, const struct tir_exec *x, uint32_t id)
{
	return r->prog == tir_exec_program(x) && id < r->nheld && r->held[id];
}

/* Inputs were given since the values were made: those computed from an
 * input whose value changed go (as lib/engine/run.c's kept_forget). */
static int held_stale(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err)
{
	const struct tir_program *p = tir_exec_program(x);
	size_t nn = p->nnodes < r->nheld ? p->nnodes : r->nheld;
	bool *dep = calloc(nn + 1, sizeof *dep);
	if (!dep)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < nn; i++) {
		const struct tir_node *n = p->nodes[i];
		if (n->op == TIR_OP_INPUT) {
			if (i >= r->ninblob || !r->inblob[i][0])
				continue;
			const struct tir_tensor *v = tir_exec_input_value(x, n->id);
			char h[TIR_SHA_HEX + 1] = "";
			if (v && tir_batch_memo_name(&r->memo, n, v, h, err)) {
				free(dep);
				return -err->code;
			}
			dep[i] = strcmp(h, r->inblob[i]) != 0;
			if (dep[i])
				r->inblob[i][0] = 0;
			continue;
		}
		for (int k = 0; !dep[i] && k < n->nin; k++)
			dep[i] = n->in[k] && dep[n->in[k]->id];
		if (dep[i] && r->held[i] && held_drop(r, i)) {
			free(dep);
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		}
	}
	free(dep);
	return 0;
}

/* Before a run: what is held still stands for the program as it is now
 * (as lib/engine/run.c's kept_sync: a rebound name's value goes; so do
 * values computed from an input given again). */
static int held_sync(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err)
{
	const struct tir_program *p = tir_exec_program(x);
	if (r->prog != p || !tir_exec_keeping(x))
		held_forget(r);
	if (r->prog != p)
		tir_batch_memo_free(&r->memo); /* node ids of another program */
	r->prog = p;
	for (size_t i = 0; i < r->nheld; i++)
		if (r->held[i] && (i >= p->nnodes || !tir_batch_keepable(p, p->nodes[i])) && held_drop(r, i))
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	size_t old = r->nheld, oldin = r->ninblob;
	if (tir_grow((void **)&r->held, &r->nheld, p->nnodes + 1, sizeof *r->held) ||
	    tir_grow((void **)&r->inblob, &r->ninblob, p->nnodes + 1, sizeof *r->inblob))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	memset(r->held + old, 0, (r->nheld - old) * sizeof *r->held);
	memset(r->inblob + oldin, 0, (r->ninblob - oldin) * sizeof *r->inblob);
	if (r->gen != tir_exec_input_gen(x)) {
		int rc = held_stale(r, x, err);
		if (rc)
			return rc;
		r->gen = tir_exec_input_gen(x);
	}
	return 0;
}

/* held_sync once a run (tir_exec_run_seq): the later batches of a run
 * over several devices, its exports and imports, read what its earlier
 * batches kept, even values no name holds (dropped at the next run's). */
static int run_sync(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err)
{
	if (r->synced && r->synced_seq == tir_exec_run_seq(x) && r->prog == tir_exec_program(x))
		return 0;
	int rc = held_sync(r, x, err);
	r->synced = !rc;
	r->synced_seq = tir_exec_run_seq(x);
	return rc;
}

/* What r holds brought up to date with x's program and inputs now (its
 * holds is right for them): before a run plans which device computes
 * what.  The statistics start from zero there: a run's are of all its
 * batches, exports and imports on r (none: r had no part in it). */
int tir_remote_sync(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err)
{
	memset(&r->stats, 0, sizeof r->stats);
	int rc = held_sync(r, x, err);
	r->synced = !rc;
	r->synced_seq = tir_exec_run_seq(x);
	return rc;
}

/* ---- a run ---- */

static char *run_body(const struct tir_remote *r, const struct tir_exec *x, const struct tir_batch *b,
		      bool text)
{
	json_t *o = json_object(), *in = json_object();
	char k[24], key[24];
	json_object_set_new(o, "graph", json_string(b->graph));
	if (text)
		json_object_set_new(o, "text", json_stringn(b->text, b->len));
	for (size_t i = 0; i < b->ninputs; i++) {
		const struct tir_batch_input *bi = &b->inputs[i];
		snprintf(k, sizeof k, "t%u", bi->t);
		json_object_set_new(in, k, bi->key[0] ? json_pack("{ss}", "value", bi->key)
						      : json_pack("{ss}", "blob", bi->blob));
	}
	json_object_set_new(o, "inputs", in);
	if (b->nkeep) {
		json_t *keep = json_object();
		for (size_t i = 0; i < b->nkeep; i++) {
			snprintf(k, sizeof k, "t%u", b->keep[i].t);
			tir_batch_key(b->keep[i].node, key);
			json_object_set_new(keep, k, json_string(key));
		}
		json_object_set_new(o, "keep", keep);
	}
	if (r->ndrops) {
		json_t *drop = json_array();
		for (size_t i = 0; i < r->ndrops; i++) {
			tir_batch_key(r->drops[i], key);
			json_array_append_new(drop, json_string(key));
		}
		json_object_set_new(o, "drop", drop);
	}
	json_object_set_new(o, "fuse", json_boolean(tir_exec_fusing(x)));
	/* the plan is small: always asked for, so that .explain can show it later */
	json_object_set_new(o, "explain", json_true());
	json_object_set_new(o, "profile", json_boolean(tir_exec_profiling(x)));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static int put_blob(struct tir_remote *r, const struct tir_batch_input *in, struct tir_err *err)
{
	struct tir_tensor c = {0};
	const struct tir_tensor *t = &in->value;
	if (!tir_tensor_is_contiguous(t)) {
		if (tir_tensor_convert(t, t->dtype, &c, err))
			return -TIR_ENOMEM;
		t = &c;
	}
	unsigned char head[TIR_FRAME_HEAD_MAX];
	static const unsigned char zero[8];
	size_t n = tir_frame_size(t), data = (size_t)tir_tensor_numel(t) * tir_dtype_size(t->dtype);
	size_t nhead = tir_frame_head(t, head);
	const unsigned char *part[4] = {in->list, head, tir_tensor_data(t), zero};
	size_t len[4] = {in->len, nhead, data, n - nhead - data};
	struct upload up = {.part = part, .len = len, .n = 4};
	char path[TIR_SHA_HEX + 16];
	snprintf(path, sizeof path, "/v1/blobs/%s", in->blob);
	long st = 0;
	r->blob = in->blob;
	int rc = request_up(r, "PUT", path, NULL, in->len + n, &up, r->hbin, &st, err);
	r->blob = NULL;
	tir_tensor_release(&c);
	if (rc)
		return rc;
	if (st != 200 && st != 201)
		return http_failed(r, st, err);
	r->stats.blobs_sent++;
	r->stats.blob_bytes_sent += in->len + n;
	return 0;
}

/* Blobs up to BUNDLE_ITEM bytes go up together, in requests of up to
 * BUNDLE_BYTES (POST /v1/blobs), so that a batch of many small blobs
 * costs one round trip, not one each; bigger ones go by PUT, where a
 * round trip is little beside their bytes. */
#define BUNDLE_ITEM ((size_t)4 << 20)
#define BUNDLE_BYTES ((size_t)64 << 20)

/* The blobs ins[0..n) in one POST /v1/blobs.  *refused: 1 the server
 * has no such endpoint (one of before it), 2 the body is over its limits
 * (413: a --max-body smaller than the bundle); they are to go by PUT. */
static int put_bundle(struct tir_remote *r, const struct tir_batch_input *const *ins, size_t n, int *refused,
		      struct tir_err *err)
{
	static const unsigned char zero[8];
	*refused = 0;
	struct tir_tensor *c = calloc(n, sizeof *c);
	unsigned char (*heads)[TIR_BUNDLE_HEAD + TIR_FRAME_HEAD_MAX] = malloc(n * sizeof *heads);
	const unsigned char **part = malloc(5 * n * sizeof *part);
	size_t *len = malloc(5 * n * sizeof *len);
	int rc = 0;
	uint64_t total = 0;
	if (!c || !heads || !part || !len) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tir_batch_input *in = ins[i];
		const struct tir_tensor *t = &in->value;
		if (!tir_tensor_is_contiguous(t)) {
			if (tir_tensor_convert(t, t->dtype, &c[i], err)) {
				rc = -TIR_ENOMEM;
				goto out;
			}
			t = &c[i];
		}
		unsigned char *h = heads[i];
		size_t fbytes = tir_frame_size(t), data = (size_t)tir_tensor_numel(t) * tir_dtype_size(t->dtype);
		size_t nhead = tir_frame_head(t, h + TIR_BUNDLE_HEAD);
		memcpy(h, TIR_BUNDLE_MAGIC, 4);
		memset(h + 4, 0, 4);
		uint64_t l = in->len + fbytes;
		for (int k = 0; k < 8; k++)
			h[8 + k] = (unsigned char)(l >> (8 * k));
		for (int k = 0; k < 32; k++) {
			unsigned v;
			sscanf(in->blob + 2 * k, "%2x", &v);
			h[16 + k] = (unsigned char)v;
		}
		const unsigned char *p5[5] = {h, in->list, h + TIR_BUNDLE_HEAD, tir_tensor_data(t), zero};
		size_t l5[5] = {TIR_BUNDLE_HEAD, in->len, nhead, data, fbytes - nhead - data};
		memcpy(part + 5 * i, p5, sizeof p5);
		memcpy(len + 5 * i, l5, sizeof l5);
		total += TIR_BUNDLE_HEAD + l;
	}
	struct upload up = {.part = part, .len = len, .n = 5 * n};
	long st = 0;
	r->bundle = ins;
	r->nbundle = n;
	rc = request_up(r, "POST", "/v1/blobs", NULL, total, &up, r->hbin, &st, err);
	r->bundle = NULL;
	r->nbundle = 0;
	if (rc)
		goto out;
	if (st == 404 || st == 405 || st == 413) {
		*refused = st == 413 ? 2 : 1;
		goto out;
	}
	if (st != 200) {
		rc = http_failed(r, st, err);
		goto out;
	}
	r->stats.blobs_sent += (int)n;
	r->stats.blob_bytes_sent += total - n * TIR_BUNDLE_HEAD;
out:
	for (size_t i = 0; c && i < n; i++)
		tir_tensor_release(&c[i]);
	free(c);
	free(heads);
	free(part);
	free(len);
	return rc;
}

static size_t blob_bytes(const struct tir_batch_input *in)
{
	return in->len + tir_frame_size(&in->value);
}

/* A 409: send what the server lacks.  *text: it wants the batch text. */
static int send_missing(struct tir_remote *r, const struct tir_batch *b, bool *text, struct tir_err *err)
{
	json_t *root;
	json_t *e = reply_error(r, &root);
	json_t *blobs = e ? json_object_get(e, "blobs") : NULL;
	int rc = 0;
	if (!e || (blobs && !json_is_array(blobs))) {
		json_decref(root);
		return net_err(r, err, "a 409 reply that does not say what is missing");
	}
	*text = json_is_true(json_object_get(e, "graph"));
	size_t nb = json_array_size(blobs);
	if (!*text && nb == 0)
		rc = net_err(r, err, "a 409 reply that asks for nothing");
	const struct tir_batch_input **want = calloc(nb ? nb : 1, sizeof *want);
	if (!want)
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	size_t nwant = 0;
	for (size_t i = 0; !rc && i < nb; i++) {
		const char *h = json_string_value(json_array_get(blobs, i));
		size_t k = 0;
		while (h && k < b->ninputs && strcmp(b->inputs[k].blob, h))
			k++;
		if (!h || k == b->ninputs) {
			rc = net_err(r, err, "the server asks for a blob this batch does not have");
			break;
		}
		bool twice = false;
		for (size_t j = 0; j < nwant; j++)
			twice = twice || want[j] == &b->inputs[k];
		if (!twice)
			want[nwant++] = &b->inputs[k];
	}
	/* the small ones together, in requests of BUNDLE_BYTES at most */
	size_t done = 0;
	for (size_t i = 0; !rc && !r->no_bundle && i < nwant;) {
		size_t j = i, bytes = 0;
		while (j < nwant && blob_bytes(want[j]) <= BUNDLE_ITEM &&
		       (j == i || bytes + blob_bytes(want[j]) <= BUNDLE_BYTES))
			bytes += blob_bytes(want[j++]);
		if (j - i < 2) { /* one (or a big one): a PUT */
			i++;
			continue;
		}
		r->step = (struct tir_progress){TIR_STEP_UPLOAD, (int)j, (int)nwant, 0, 0, 0};
		int refused = 0;
		rc = put_bundle(r, want + i, j - i, &refused, err);
		if (refused == 1)
			r->no_bundle = true;
		if (refused == 1)
			break;
		if (refused == 2) {
			i = j;
			continue;
		}
		for (size_t k = i; k < j; k++)
			want[k] = NULL;
		done += j - i;
		i = j;
	}
	for (size_t i = 0; !rc && i < nwant; i++) {
		if (!want[i])
			continue;
		r->step = (struct tir_progress){TIR_STEP_UPLOAD, (int)++done, (int)nwant, 0, 0, 0};
		rc = put_blob(r, want[i], err);
	}
	free(want);
	json_decref(root);
	return rc;
}

/* An error of the batch's program: at the user's op that line came from. */
static int program_failed(struct tir_remote *r, const struct tir_batch *b, long status,
			  struct tir_err *err)
{
	json_t *root;
	json_t *e = reply_error(r, &root);
	const char *msg = e ? json_string_value(json_object_get(e, "message")) : NULL;
	json_t *line = e ? json_object_get(e, "line") : NULL;
	if (!msg) {
		json_decref(root);
		return http_failed(r, status, err);
	}
	const struct tir_node *n = json_is_integer(line) ? tir_batch_line_node(b, (long)json_integer_value(line)) : NULL;
	/* a batch over the server's memory budget or time limit is the
	 * remote's refusal (exit 3), said at the op whose value would have
	 * passed it, or that was running when time ran out */
	int code = status == 413 ? TIR_ENET : status == 422 ? TIR_ERUNTIME : TIR_ETYPE;
	int rc;
	if (n && status != 413) /* a program's error reads as a local run's */
		rc = tir_errf(err, code, &n->loc, "%s", msg);
	else
		rc = tir_errf(err, code, n ? &n->loc : NULL, "remote %s: %s", r->name, msg);
	json_decref(root);
	return rc;
}

/* The server's explain names values tK; the user knows them by their names. */
static char *rename_vars(const char *s, const struct tir_batch *b, const struct tir_program *p)
{
	struct tir_str out = {0};
	for (size_t i = 0; s[i];) {
		bool start = s[i] == 't' && isdigit((unsigned char)s[i + 1]) &&
			     (i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_'));
		size_t j = i + 1;
		unsigned long k = 0;
		while (start && isdigit((unsigned char)s[j]) && k < 0x7fffffff)
			k = k * 10 + (unsigned long)(s[j++] - '0');
		if (start && !isalnum((unsigned char)s[j]) && s[j] != '_' && k < b->nvars) {
			const char *name = tir_node_current_name(p, b->var_node[k]);
			tir_str_addf(&out, "%s", name ? name : "_");
			i = j;
			continue;
		}
		tir_str_add(&out, s + i, 1);
		i++;
	}
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s ? out.s : strdup("");
}

/* A 200: the results body, decoded as it came (d), read strictly. */
static int read_results(struct tir_remote *r, const struct tir_exec *x, const struct tir_batch *b,
			struct results *d, struct tir_remote_result *res, struct tir_err *err)
{
	if (!d->active)
		return net_err(r, err, "the reply is not a results body");
	if (d->state == D_FAULT)
		return d->code == TIR_ENOMEM ? tir_errf(err, TIR_ENOMEM, NULL, "%s", d->why)
					     : tir_errf(err, TIR_ENET, NULL, "remote %s: %s", r->name, d->why);
	if (d->state == D_DONE && d->extra)
		return tir_errf(err, TIR_ENET, NULL, "remote %s: %llu bytes after the last result", r->name,
				(unsigned long long)d->extra);
	if (d->state != D_DONE)
		return tir_errf(err, TIR_ENET, NULL, "remote %s: the results end after %llu bytes, in %s", r->name,
				(unsigned long long)d->off,
				d->state == D_HEAD || d->state == D_META ? "their head" : "a frame");
	json_t *meta = json_loadb(d->meta, d->mlen, 0, NULL);
	if (!json_is_object(meta)) {
		json_decref(meta);
		return net_err(r, err, "results: the metadata is not a JSON object");
	}
	res->stats.plan_ms = json_number_value(json_object_get(meta, "plan_ms"));
	res->stats.run_ms = json_number_value(json_object_get(meta, "run_ms"));
	res->stats.peak_bytes = (size_t)json_integer_value(json_object_get(meta, "peak_bytes"));
	res->stats.nops = (int)json_integer_value(json_object_get(meta, "nops"));
	res->stats.nkernels = (int)json_integer_value(json_object_get(meta, "nkernels"));
	res->stats.plan_cached = json_is_true(json_object_get(meta, "plan_cached"));
	const char *ex = json_string_value(json_object_get(meta, "explain"));
	const char *pr = json_string_value(json_object_get(meta, "profile"));
	free(res->explain);
	free(res->profile);
	res->explain = ex ? rename_vars(ex, b, tir_exec_program(x)) : NULL;
	res->profile = pr ? strdup(pr) : NULL;
	json_decref(meta);
	for (size_t i = 0; i < d->ntargets; i++) { /* the values are the caller's now */
		res->values[i] = d->values[i];
		memset(&d->values[i], 0, sizeof d->values[i]);
	}
	return 0;
}

/* --trace: the batch made (its text, its blobs named), on the client's track. */
static void trace_batch(const struct tir_remote *r, struct tir_exec *x, const struct tir_batch *b, double t0)
{
	struct tir_net_span s = {.track = TIR_TRACK_CLIENT, .who = r, .cat = "batch", .t0_ms = t0, .t1_ms = tir_now_ms()};
	snprintf(s.name, sizeof s.name, "batch");
	for (size_t i = 0; i < b->ninputs; i++)
		s.count += b->inputs[i].blob[0] != 0;
	tir_exec_trace_span(x, &s);
}

/* --trace: the server's plan and run, as long as it says they took,
 * ending where its reply began (the run's end is the reply's start, give
 * or take the network's latency). */
static void trace_server(struct tir_remote *r, struct tir_exec *x, const struct tir_remote_result *res)
{
	double end = r->fb_ms ? r->fb_ms : tir_now_ms(), run = res->stats.run_ms, plan = res->stats.plan_ms;
	struct tir_net_span p = {.track = TIR_TRACK_SERVER, .who = r, .cat = "server", .t0_ms = end - run - plan,
				 .t1_ms = end - run, .count = res->stats.nkernels};
	snprintf(p.name, sizeof p.name, "plan%s", res->stats.plan_cached ? " (cached)" : "");
	p.text = strdup(res->explain ? res->explain : "");
	tir_exec_trace_span(x, &p);
	struct tir_net_span k = {.track = TIR_TRACK_SERVER, .who = r, .cat = "server", .t0_ms = end - run, .t1_ms = end};
	snprintf(k.name, sizeof k.name, "run (%d kernels)", res->stats.nkernels);
	tir_exec_trace_span(x, &k);
}

int tir_remote_run(struct tir_remote *r, struct tir_exec *x, struct tir_node *const *targets,
		   size_t ntargets, struct tir_remote_result *res, struct tir_err *err)
{
	/* the statistics add up over the run's batches (zeroed by tir_remote_sync) */
	int sent0 = r->stats.blobs_sent;
	if (ntargets == 0)
		return 0; /* nothing to compute: nothing to send */
	r->intr = tir_exec_interrupt_flag(x);
	r->x = x;
	struct tir_batch b = {0};
	struct tir_tensor *vals = calloc(ntargets, sizeof *vals); /* the results as they come */
	if (!vals)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	/* the printed targets, in order: what comes back */
	struct tir_node **printed = malloc((ntargets + 1) * sizeof *printed);
	size_t nprint = 0;
	if (!printed) {
		free(vals);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	for (size_t i = 0; i < ntargets; i++)
		if (!res->stay || !res->stay[i])
			printed[nprint++] = targets[i];
	double tb = tir_now_ms();
	int rc = 0;
	rc = run_sync(r, x, err);
	if (!rc)
		rc = tir_batch_build_on(&b, x, targets, ntargets, res->stay, r->held, r->nheld, res->given,
					res->ngiven, &r->memo, err);
	if (!rc && tir_exec_tracing(x))
		trace_batch(r, x, &b, tb);
	if (!rc && !r->session[0])
		rc = session_make(r, err);
	bool text = false, renewed = false;
	int attempt = 0;
	while (!rc) {
		if (++attempt > ATTEMPTS) {
			rc = net_err(r, err, "the server keeps asking for blobs it was sent (is its --blob-cache "
					     "smaller than this batch's data?)");
			break;
		}
		char *body = run_body(r, x, &b, text);
		if (!body) {
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			break;
		}
		char path[128];
		snprintf(path, sizeof path, "/v1/sessions/%s/run", r->session);
		long st = 0;
		struct results dec = {.targets = printed, .ntargets = nprint, .values = vals};
		r->dec = &dec;
		rc = request(r, "POST", path, body, strlen(body), r->hjson, &st, err);
		r->dec = NULL;
		free(body);
		if (text && !rc)
			r->stats.graph_sent = true;
		if (!rc && st == 200)
			rc = read_results(r, x, &b, &dec, res, err);
		/* the printed values to their targets' places (from the back: k <= i) */
		for (size_t i = ntargets, k = nprint; !rc && st == 200 && nprint < ntargets && i-- > 0;)
			if (!res->stay[i] && --k != i) {
				res->values[i] = res->values[k];
				memset(&res->values[k], 0, sizeof res->values[k]);
			}
		if (!rc && st == 200 && tir_exec_tracing(x))
			trace_server(r, x, res);
		results_reset(&dec);
		if (rc)
			break;
		if (st == 200) {
			if (!rc) {
				r->ndrops = 0;
				for (size_t i = 0; i < b.nkeep; i++)
					r->held[b.keep[i].node] = true;
				/* the inputs the kept values were made from */
				for (size_t i = 0; b.nkeep && i < b.ninputs; i++)
					if (b.inputs[i].node->op == TIR_OP_INPUT)
						memcpy(r->inblob[b.inputs[i].node->id], b.inputs[i].blob, TIR_SHA_HEX + 1);
			}
			break;
		}
		if (st == 409) {
			bool want_text = false;
			rc = send_missing(r, &b, &want_text, err);
			text = text || want_text;
			continue;
		}
		if (st == 404 && !renewed) {
			/* the session expired (and its values with it): a new one */
			renewed = true;
			r->session[0] = 0;
			held_forget(r);
			r->ndrops = 0;
			tir_batch_free(&b);
			rc = tir_batch_build_on(&b, x, targets, ntargets, res->stay, r->held, r->nheld, res->given,
						res->ngiven, &r->memo, err);
			if (!rc)
				rc = session_make(r, err);
			continue;
		}
		if (st == 400 || st == 422 || st == 413) {
			json_t *root;
			json_t *e = reply_error(r, &root);
			const char *code = e ? json_string_value(json_object_get(e, "code")) : NULL;
			bool prog = code && (!strcmp(code, "program") || !strcmp(code, "runtime") || !strcmp(code, "memory") ||
					     !strcmp(code, "time"));
			json_decref(root);
			rc = prog ? program_failed(r, &b, st, err) : http_failed(r, st, err);
			break;
		}
		rc = http_failed(r, st, err);
	}
	/* every distinct blob the batch names was either held or sent */
	int nblobs = 0;
	for (size_t i = 0; i < b.ninputs; i++) {
		bool seen = !b.inputs[i].blob[0];
		for (size_t j = 0; !seen && j < i; j++)
			seen = !strcmp(b.inputs[i].blob, b.inputs[j].blob);
		nblobs += !seen;
	}
	int sent = r->stats.blobs_sent - sent0;
	r->stats.blobs_cached += nblobs > sent ? nblobs - sent : 0;
	tir_batch_free(&b);
	free(vals);
	free(printed);
	r->intr = NULL;
	r->x = NULL;
	return rc;
}

/* ---- server to server (docs/protocol.md, "Server to server") ----
 *
 * A value one remote's session holds goes to another's directly: the
 * source issues a capability for it (export), the receiver is told to
 * fetch it from the source with that capability (import), and the
 * receiver's held table then says it holds the node, as if a batch there
 * had kept it.  The value's bytes never come through this client. */

const char *tir_remote_base_url(const struct tir_remote *r)
{
	return r->base;
}

/* The token r sends (its Authorization header's), or NULL: borrowed. */
static const char *remote_token(const struct tir_remote *r)
{
	static const char auth[] = "Authorization: Bearer ";
	for (const struct curl_slist *h = r->hjson; h; h = h->next)
		if (!strncmp(h->data, auth, sizeof auth - 1))
			return h->data + sizeof auth - 1;
	return NULL;
}

/* A 404 that says the session is gone (not a key): its values went with it. */
static bool session_gone_reply(struct tir_remote *r)
{
	json_t *root;
	json_t *e = reply_error(r, &root);
	const char *msg = e ? json_string_value(json_object_get(e, "message")) : NULL;
	bool gone = msg && !strncmp(msg, "no such session", 15);
	json_decref(root);
	return gone;
}

/* r's held values brought up to date with x (run_sync), and node id's
 * among them: 0, or -code (-TIR_EDATA when r holds no such value). */
static int sync_holding(struct tir_remote *r, const struct tir_exec *x, uint32_t id, struct tir_err *err)
{
	int rc = run_sync(r, x, err);
	if (rc)
		return rc;
	if (!tir_remote_holds(r, x, id) || !r->session[0])
		return tir_errf(err, TIR_EDATA, NULL, "remote %s holds no value of node %u", r->name, (unsigned)id);
	return 0;
}

int tir_remote_export(struct tir_remote *r, const struct tir_exec *x, uint32_t id, char cap[65], char blob[65],
		      struct tir_err *err)
{
	int rc = sync_holding(r, x, id, err);
	if (rc)
		return rc;
	char key[24], path[128];
	tir_batch_key(id, key);
	json_t *o = json_pack("{ss}", "key", key);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!body)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	snprintf(path, sizeof path, "/v1/sessions/%s/export", r->session);
	long st = 0;
	r->intr = tir_exec_interrupt_flag(x);
	rc = request(r, "POST", path, body, strlen(body), r->hjson, &st, err);
	r->intr = NULL;
	free(body);
	if (rc)
		return rc;
	if (st == 404) {
		/* the session is gone and its values with it, or this one is:
		 * the client holds no more than the server */
		if (session_gone_reply(r)) {
			r->session[0] = 0;
			heartbeat_set(r, "", 0);
			held_forget(r);
			r->ndrops = 0;
		} else if (held_drop(r, id)) {
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		}
		return http_failed(r, st, err);
	}
	if (st != 200)
		return http_failed(r, st, err);
	json_t *root = json_loadb(r->body.s ? r->body.s : "", r->body.n, 0, NULL);
	const char *c = json_string_value(json_object_get(root, "cap"));
	const char *b = json_string_value(json_object_get(root, "blob"));
	bool ok = c && b && tir_sha_valid(c) && tir_sha_valid(b);
	if (ok) {
		memcpy(cap, c, TIR_SHA_HEX + 1);
		memcpy(blob, b, TIR_SHA_HEX + 1);
	}
	json_decref(root);
	return ok ? 0 : net_err(r, err, "the reply to an export names no capability and blob");
}

/* Node id's value came to r from elsewhere: the inputs it was computed
 * from are noted as its batch's would be (r->inblob), so that giving one
 * of them again makes it stale here too (held_stale).  Their blob names
 * are from's when it was synced to the same inputs (the export just did),
 * else hashed here. */
static int held_inputs(struct tir_remote *r, const struct tir_exec *x, uint32_t id,
		       const struct tir_remote *from, struct tir_err *err)
{
	const struct tir_program *p = tir_exec_program(x);
	bool *dep = calloc((size_t)id + 1, sizeof *dep);
	if (!dep)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	dep[id] = true;
	bool same = from->prog == p && from->gen == tir_exec_input_gen(x);
	int rc = 0;
	for (size_t i = (size_t)id + 1; i-- > 0 && !rc;) {
		const struct tir_node *n = p->nodes[i];
		if (!dep[i])
			continue;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && n->in[k]->id < i)
				dep[n->in[k]->id] = true;
		if (n->op != TIR_OP_INPUT || i >= r->ninblob || r->inblob[i][0])
			continue;
		if (same && i < from->ninblob && from->inblob[i][0]) {
			memcpy(r->inblob[i], from->inblob[i], TIR_SHA_HEX + 1);
			continue;
		}
		const struct tir_tensor *v = tir_exec_input_value(x, n->id);
		if (v)
			rc = tir_batch_memo_name(&r->memo, n, v, r->inblob[i], err);
	}
	free(dep);
	return rc;
}

/* Node id's value is held by r's session from now on, as a batch's keep:
 * no drop of its key still to come (what came replaced what the key
 * held), and stale once an input it was computed from is given again. */
static int held_now(struct tir_remote *r, const struct tir_exec *x, uint32_t id, const struct tir_remote *from,
		    struct tir_err *err)
{
	r->held[id] = true;
	for (size_t i = 0; i < r->ndrops;)
		if (r->drops[i] == id)
			r->drops[i] = r->drops[--r->ndrops];
		else
			i++;
	return held_inputs(r, x, id, from, err);
}

int tir_remote_import(struct tir_remote *r, const struct tir_exec *x, uint32_t id, const struct tir_remote *from,
		      const char *cap, const char *blob, struct tir_err *err)
{
	const struct tir_program *p = tir_exec_program(x);
	if (!cap || !blob || !tir_sha_valid(cap) || !tir_sha_valid(blob))
		return tir_errf(err, TIR_EDATA, NULL, "an import needs a capability and a blob name (64 hex digits each)");
	/* any value a batch computes (one no name holds: for the rest of
	 * this run); an input's is the client's, a scalar literal written inline */
	const struct tir_node *n = id < p->nnodes ? p->nodes[id] : NULL;
	if (!n || n->op == TIR_OP_INPUT || (n->op == TIR_OP_CONST && n->type.weak))
		return tir_errf(err, TIR_EDATA, NULL, "node %u's value is not one a session keeps", (unsigned)id);
	int rc = run_sync(r, x, err);
	if (!rc && !r->session[0])
		rc = session_make(r, err);
	if (rc)
		return rc;
	char key[24], path[128];
	tir_batch_key(id, key);
	const char *token = remote_token(from);
	json_t *o = json_pack("{ss ss ss ss}", "key", key, "from", from->base, "cap", cap, "blob", blob);
	if (o && token)
		json_object_set_new(o, "token", json_string(token));
	/* two ranks of one group: the receiver asks the source over MPI */
	if (o && r->group[0] && !strcmp(r->group, from->group)) {
		json_object_set_new(o, "group", json_string(from->group));
		json_object_set_new(o, "rank", json_integer(from->rank));
	}
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!body)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	long st = 0;
	r->intr = tir_exec_interrupt_flag(x);
	for (int attempt = 0;; attempt++) {
		snprintf(path, sizeof path, "/v1/sessions/%s/import", r->session);
		/* once: a 503 may come after the source was asked, and the
		 * capability is then used */
		rc = request_once(r, "POST", path, body, strlen(body), NULL, r->hjson, &st, err);
		if (rc || st != 404 || attempt || !session_gone_reply(r))
			break;
		/* the session expired (and its values with it): a new one; the
		 * source was not asked, so the capability is still good */
		r->session[0] = 0;
		held_forget(r);
		r->ndrops = 0;
		if ((rc = session_make(r, err)))
			break;
	}
	r->intr = NULL;
	explicit_bzero(body, strlen(body)); /* the capability and the token */
	free(body);
	if (rc)
		return rc;
	if (st != 200)
		return http_failed(r, st, err);
	json_t *root = json_loadb(r->body.s ? r->body.s : "", r->body.n, 0, NULL);
	const char *k = json_string_value(json_object_get(root, "key"));
	const char *b = json_string_value(json_object_get(root, "blob"));
	bool ok = k && b && !strcmp(k, key) && !strcmp(b, blob);
	json_decref(root);
	if (!ok)
		return net_err(r, err, "the reply to an import is not of the value asked for");
	return held_now(r, x, id, from, err);
}

const char *tir_remote_group(const struct tir_remote *r, int *rank)
{
	*rank = r->rank;
	return r->group[0] && r->group_coll ? r->group : NULL;
}

int tir_remote_all_reduce(struct tir_remote *r, struct tir_exec *x, const char *key, const char *op,
			  const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err)
{
	const struct tir_program *p = tir_exec_program(x);
	if (dst_id >= p->nnodes || !r->group[0])
		return tir_errf(err, TIR_EDATA, NULL, "remote %s: no collective of a group here", r->name);
	int rc = sync_holding(r, x, src_id, err);
	if (rc)
		return rc;
	char src[24], dst[24], path[128];
	tir_batch_key(src_id, src);
	tir_batch_key(dst_id, dst);
	json_t *rk = json_array();
	for (int i = 0; rk && i < n; i++)
		json_array_append_new(rk, json_integer(ranks[i]));
	json_t *o = rk ? json_pack("{ss ss ss ss ss so}", "key", src, "as", dst, "op", op, "coll", key, "group", r->group,
				   "ranks", rk) : NULL;
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!body)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	snprintf(path, sizeof path, "/v1/sessions/%s/allreduce", r->session);
	long st = 0;
	r->intr = tir_exec_interrupt_flag(x);
	r->x = x; /* its span in --trace */
	/* once: the other ranks are in it with this key */
	rc = request_once(r, "POST", path, body, strlen(body), NULL, r->hjson, &st, err);
	r->x = NULL;
	r->intr = NULL;
	free(body);
	if (rc)
		return rc;
	if (st == 404 && session_gone_reply(r)) {
		r->session[0] = 0;
		heartbeat_set(r, "", 0);
		held_forget(r);
		r->ndrops = 0;
	}
	if (st != 200)
		return http_failed(r, st, err);
	json_t *root = json_loadb(r->body.s ? r->body.s : "", r->body.n, 0, NULL);
	const char *k = json_string_value(json_object_get(root, "key"));
	bool ok = k && !strcmp(k, dst);
	json_decref(root);
	if (!ok)
		return net_err(r, err, "the reply to an all_reduce is not of the value asked for");
	return held_now(r, x, dst_id, r, err);
}

/* ---- server groups (docs/groups.md): one address of a group opens
 * every rank ---- */

/* r's /v1/info, asked once within a few seconds: 1 with its "group" in
 * *g, 0 when it answers as a lone server, -1 when it cannot be reached
 * at all (nothing listens: taken as a lone server, whose first use says
 * so), -2 with err filled when it was reached and did not answer 200 in
 * time (a rank of a group answers nothing until its group is formed: it
 * is no lone server to run on).  *root: free with json_decref. */
static int group_of(struct tir_remote *r, json_t **root, json_t **g, struct tir_err *err)
{
	long st = 0;
	struct tir_err e = {0};
	*root = *g = NULL;
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, r->timeout_ms < INFO_TIMEOUT_MS ? r->timeout_ms : INFO_TIMEOUT_MS);
	int rc = request_once(r, "GET", "/v1/info", NULL, 0, NULL, r->hjson, &st, &e);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	long connected = 0;
	curl_easy_getinfo(r->curl, CURLINFO_NUM_CONNECTS, &connected);
	memset(&r->stats, 0, sizeof r->stats);
	if (rc && e.code == TIR_EINTERRUPT) {
		*err = e;
		return -2;
	}
	/* nothing there, or something that is no tir server: its first use
	 * says what */
	if ((rc && !r->hung) || (!rc && st != 200 && st != 503))
		return -1;
	long wait_s = (r->timeout_ms < INFO_TIMEOUT_MS ? r->timeout_ms : INFO_TIMEOUT_MS) / 1000;
	if (rc && !connected) { /* no connection in time: the next request would wait as long again */
		tir_errf(err, TIR_ENET, NULL, "remote %s: cannot connect within %ld s", r->name, wait_s);
		return -2;
	}
	if (rc) { /* connected, and no answer in time */
		tir_errf(err, TIR_ENET, NULL, "remote %s: no answer to /v1/info within %ld s (a rank of a group still "
			 "forming, or a server stopped); it is not used as a lone server", r->name, wait_s);
		return -2;
	}
	if (st != 200) {
		tir_errf(err, TIR_ENET, NULL, "remote %s: /v1/info answered 503 (busy, or a rank of a group still "
			 "forming); it is not used as a lone server", r->name);
		return -2;
	}
	*root = json_loadb(r->body.s ? r->body.s : "", r->body.n, 0, NULL);
	*g = json_object_get(*root, "group");
	return json_is_object(*g) ? 1 : 0;
}

/* Member m of group id (rank n): whether it answers as that member;
 * false with err naming it. */
static bool member_here(struct tir_remote *m, const char *id, int n, int size, const char *via,
			struct tir_err *err)
{
	json_t *root, *g;
	int rc = group_of(m, &root, &g, err);
	const char *mid = rc == 1 ? json_string_value(json_object_get(g, "id")) : NULL;
	bool ok = mid && !strcmp(mid, id) && json_integer_value(json_object_get(g, "rank")) == n &&
		  json_integer_value(json_object_get(g, "size")) == size;
	json_decref(root);
	if (!ok)
		tir_errf(err, TIR_ENET, NULL, "remote %s is rank 0..%d of a group, but its member %d (%s) %s; "
			 "a group is not used with members missing", via, size - 1, n, m->name,
			 rc == -1   ? "cannot be reached"
			 : rc == -2 ? "does not answer /v1/info"
			 : rc == 0  ? "answers as a lone server"
				    : "answers as a member of another group, or at another rank");
	return ok;
}

int tir_remote_group_open(const char *hostport, const char *token, struct tir_remote **out, int max,
			  struct tir_err *err)
{
	struct tir_remote *r = tir_remote_open(hostport, token, err);
	if (!r)
		return -err->code;
	json_t *root, *g;
	int found = group_of(r, &root, &g, err);
	if (found == -2) {
		tir_remote_close(r);
		return 0; /* reached, and unusable: the network's fault, not the address's */
	}
	if (found <= 0) {
		json_decref(root);
		if (max < 1) {
			tir_remote_close(r);
			return tir_errf(err, TIR_EUNSUPPORTED, NULL, "too many servers");
		}
		out[0] = r;
		return 1;
	}
	const char *id = json_string_value(json_object_get(g, "id"));
	/* a group whose ranks make all_reduce as one collective (a server of
	 * before them has moves only) */
	bool coll = false;
	json_t *cv;
	size_t ci;
	json_array_foreach(json_object_get(g, "collectives"), ci, cv)
		coll = coll || (json_is_string(cv) && !strcmp(json_string_value(cv), "all_reduce"));
	json_t *members = json_object_get(g, "members");
	json_int_t size = json_integer_value(json_object_get(g, "size"));
	json_int_t rank = json_integer_value(json_object_get(g, "rank"));
	if (!id || strlen(id) != 32 || !json_is_array(members) || size < 1 ||
	    (json_int_t)json_array_size(members) != size || rank < 0 || rank >= size) {
		json_decref(root);
		tir_remote_close(r);
		return tir_errf(err, TIR_ENET, NULL, "remote %s: its /v1/info says of its group what no tir server says",
				hostport);
	}
	if (size > max) {
		json_decref(root);
		tir_remote_close(r);
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "remote %s is a rank of a group of %d servers: too many "
				"(at most %d remotes at once)", hostport, (int)size, max);
	}
	/* the members at their addresses, in rank order, by the scheme this
	 * one was given; the one given is the one opened */
	const char *scheme = !strncmp(hostport, "https://", 8) ? "https://" : "";
	int n = 0, rc = 0;
	bool missing = false;
	for (; n < size && !rc; n++) {
		const char *m = json_string_value(json_array_get(members, (size_t)n));
		char name[512];
		if (n == rank) {
			out[n] = r;
		} else if (!m || snprintf(name, sizeof name, "%s%s", scheme, m) >= (int)sizeof name ||
			   !(out[n] = tir_remote_open(name, token, err))) {
			if (!m || !err->code)
				tir_errf(err, TIR_ENET, NULL, "remote %s: member %d of its group is no address", hostport, n);
			rc = -err->code;
			break;
		}
		if (n != rank && !member_here(out[n], id, n, (int)size, hostport, err)) {
			tir_remote_close(out[n]);
			rc = -err->code;
			missing = true;
			break;
		}
		snprintf(out[n]->group, sizeof out[n]->group, "%s", id);
		out[n]->rank = n;
		out[n]->group_coll = coll;
	}
	json_decref(root);
	if (rc) {
		for (int i = 0; i < n; i++) /* the members opened before n (r, at rank, too) */
			if (i != rank)
				tir_remote_close(out[i]);
		tir_remote_close(r);
		return missing ? 0 : rc;
	}
	return n;
}
