/*
 * gate.c — the way into `tir serve`.  libmicrohttpd runs without a
 * listening socket: the gate's thread accepts every connection and hands
 * it over (MHD_add_connection) only after it has
 *
 *   - counted it against --max-connections-per-address (an IPv4 address,
 *     an IPv6 /64) and the server's connection limit: past either, it is
 *     answered 503 busy (closed at once on TLS, which cannot be spoken
 *     before the handshake), and
 *   - on plain HTTP, waited for its first request's head, at most
 *     --header-timeout seconds, and checked it: the head is read with
 *     MSG_PEEK, so it stays in the socket for libmicrohttpd to read, and
 *     one that libmicrohttpd would refuse (with an HTML page, twice the
 *     headers, or no answer at all) is answered here with the protocol's
 *     JSON error.  A connection that says nothing, or trickles, waits in
 *     the gate's epoll and costs an fd, nothing of libmicrohttpd's.
 *
 * libmicrohttpd 0.9.75 has no deadline for a request's head: its one
 * timeout is an idle one, which each byte resets.  So the gate also keeps
 * a record of each connection libmicrohttpd holds (MHD_OPTION_NOTIFY_
 * CONNECTION: its socket, and when it began to wait for a head: when it
 * was handed over, or when its last request ended), and the server's main
 * thread, every tick, shuts down (shutdown(2), SHUT_RDWR) those that have
 * waited --header-timeout without a request begun.  libmicrohttpd then
 * reads the end of the stream and closes the connection in its own
 * thread, as if the client had gone: no state of its is touched from
 * outside.  The fd cannot be another connection's by then: a record is
 * dropped, under the gate's mutex, when libmicrohttpd says the connection
 * is closed, which it does before it closes the socket.  Kept-alive
 * connections and TLS ones (whose heads the gate cannot read) are held to
 * the deadline this way; on plain HTTP, a connection's first head is the
 * gate's to wait for.
 */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX (16 * 1024)     /* a request's head: its line and headers */
#define HEAD_FIELDS_MAX 100      /* header lines in a head */
#define LINGER_MS 1000           /* an answered connection read and dropped, for its answer to arrive */
#define LINGER_MAX 64            /* connections lingering at once; past that, closed at once */
#define ACCEPT_BATCH 64          /* accepts per wake-up */
#define HANDED_STALE_MS 5000     /* handed over and never started: libmicrohttpd closed it */

/* Whom a connection is counted against: an IPv4 address, or the /64 of an
 * IPv6 one (a client has a /64 to itself); a mapped IPv4 address is an
 * IPv4 one. */
struct who {
	unsigned char b[9];          /* family byte, then 4 or 8 bytes */
};

static struct who who_of(const struct sockaddr *sa)
{
	struct who w = {{0}};
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (sa->sa_family == AF_INET) {
		w.b[0] = 4;
		memcpy(w.b + 1, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const unsigned char *a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
		w.b[0] = memcmp(a, mapped, 12) ? 6 : 4;
		memcpy(w.b + 1, w.b[0] == 4 ? a + 12 : a, w.b[0] == 4 ? 4 : 8);
	}
	return w;
}

static void who_str(const struct who *w, char *out, size_t n)
{
	const unsigned char *b = w->b + 1;
	if (w->b[0] == 4)
		snprintf(out, n, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	else if (w->b[0] == 6)
		snprintf(out, n, "%x:%x:%x:%x::/64", b[0] << 8 | b[1], b[2] << 8 | b[3], b[4] << 8 | b[5],
			 b[6] << 8 | b[7]);
	else
		snprintf(out, n, "an unknown address");
}

/* A connection libmicrohttpd holds (or is about to). */
struct conn {
	struct who who;
	int fd;
	enum { HANDED, HELD } state; /* given to MHD_add_connection / MHD says it has it */
	bool busy;                   /* a request's head is in and it is not done */
	bool head_in;                /* handed over with its first head in its socket (plain HTTP):
				      * not in its head phase, though libmicrohttpd has not begun it yet */
	bool token;                  /* that request presented a valid token (gate_admit) */
	bool shut;                   /* shut down past the deadline */
	double since;                /* ms: handed over (or held, if never handed), or its last request done */
	struct gate *g;
};

/* ---- the first request's head ---- */

/* The check of a request head, a byte at a time, so that it goes on where
 * it stopped when more of the head comes (the socket is peeked at again
 * from its start, but no byte is looked at twice). */
enum hstate {
	H_LEAD, H_LEAD_CR,          /* empty lines before the request line (skipped, as libmicrohttpd does) */
	H_METHOD, H_TARGET, H_VERSION, H_RL_CR,
	H_LINE, H_NAME, H_VALUE, H_CR, H_END_CR,
	H_DONE
};

struct head {
	enum hstate st;
	size_t pos;                  /* bytes looked at */
	size_t len;                  /* of the method, the target, the version, a name */
	int line;                    /* the line looked at: 0 the request line */
	int fields;
	int major;
	char version[9];
	size_t name, vstart;         /* offsets: the header line's name, its value */
	bool vseen;                  /* a value byte that is not a blank */
	int which;                   /* the header: 1 Content-Length, 2 Transfer-Encoding, 0 another */
	size_t val[3], vlen[3];      /* by which: the value's offset and length */
	int count[3];
	/* the finding: 0 fine (the head is pos bytes), 1 not all in yet, else
	 * the status to answer, with code and msg */
	int status;
	const char *code;
	char msg[200];
};

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void head_bad(struct head *h, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void head_bad(struct head *h, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->msg, sizeof h->msg, fmt, ap);
	va_end(ap);
	h->status = status;
	h->code = code;
	h->st = H_DONE;
}

/* The framing of the body, which libmicrohttpd reads before the server's
 * code sees the request (p: the head). */
static void body_framing(const unsigned char *p, struct head *h)
{
	const unsigned char *cl = p + h->val[1], *te = p + h->val[2];
	size_t cllen = h->vlen[1], telen = h->vlen[2];
	if (h->count[1] > 1 || h->count[2] > 1)
		return head_bad(h, 400, "bad_request", "%s given twice",
				h->count[1] > 1 ? "Content-Length" : "Transfer-Encoding");
	if (h->count[1] && h->count[2])
		return head_bad(h, 400, "bad_request", "both Content-Length and Transfer-Encoding");
	if (h->count[2] && (telen != 7 || strncasecmp((const char *)te, "chunked", 7)))
		return head_bad(h, 501, "not_implemented", "Transfer-Encoding: %.*s: only chunked is understood",
				(int)(telen < 40 ? telen : 40), (const char *)te);
	if (h->count[1]) {
		uint64_t v = 0;
		bool over = false;
		size_t k = 0;
		for (; k < cllen && cl[k] >= '0' && cl[k] <= '9'; k++) {
			over = over || v > (UINT64_MAX - (uint64_t)(cl[k] - '0')) / 10;
			v = v * 10 + (uint64_t)(cl[k] - '0');
		}
		if (!cllen || k != cllen)
			return head_bad(h, 400, "bad_request", "Content-Length: not a number");
		if (over)
			return head_bad(h, 413, "too_large", "Content-Length: past 2^64 bytes");
	}
	h->status = 0;
}

/* A header line's value ends at p[end]: trailing blanks off, kept if it is
 * one the framing needs. */
static void value_end(const unsigned char *p, size_t end, struct head *h)
{
	while (end > h->vstart && (p[end - 1] == ' ' || p[end - 1] == '\t'))
		end--;
	h->val[h->which] = h->vstart;
	h->vlen[h->which] = end - h->vstart;
	h->count[h->which]++;
}

/* Go on checking the head at the start of p[0..n) (all the socket holds
 * so far: n > HEAD_MAX, more than a head may have): h->status says what
 * it is.  Lines end with LF or CRLF.  Stricter than libmicrohttpd (no
 * obsolete line folding, no space in a target or before a colon, no
 * control characters, nor a CR alone): a client of this protocol sends
 * none of these. */
static void head_check(const unsigned char *p, size_t n, struct head *h)
{
	static const char v[] = "HTTP/0.0";
	size_t end = n < HEAD_MAX ? n : HEAD_MAX;
	h->status = 1;
	for (; h->pos < end && h->st != H_DONE; h->pos++) {
		unsigned char c = p[h->pos];
		bool ctl = (c < ' ' && c != '\t') || c == 0x7f;
		switch (h->st) {
		case H_LEAD:
			if (c == '\r' || c == '\n') {
				h->st = c == '\r' ? H_LEAD_CR : H_LEAD;
				break;
			}
			h->st = H_METHOD;
			h->len = 0;
			/* fall through */
		case H_METHOD:
			if (is_tchar(c))
				h->len++;
			else if (c == ' ' && h->len)
				h->st = H_TARGET, h->len = 0;
			else
				return head_bad(h, 400, "bad_request",
						"request line: not METHOD TARGET HTTP/1.1 (one space between)");
			break;
		case H_LEAD_CR:
		case H_RL_CR:
		case H_CR:
		case H_END_CR:
			if (c != '\n')
				return head_bad(h, 400, "bad_request", "%s %d: a CR not followed by LF",
						h->line ? "header line" : "request line", h->line);
			if (h->st == H_END_CR) {
				h->pos++;
				return body_framing(p, h);
			}
			h->st = h->st == H_LEAD_CR ? H_LEAD : H_LINE;
			h->line += h->st == H_LINE;
			break;
		case H_TARGET:
			if (c > ' ' && c < 0x7f)
				h->len++;
			else if (c == ' ' && h->len)
				h->st = H_VERSION, h->len = 0;
			else
				return head_bad(h, 400, "bad_request",
						"request line: not METHOD TARGET HTTP/1.1 (one space between)");
			break;
		case H_VERSION:
			if (h->len == 8 && (c == '\r' || c == '\n')) {
				h->version[8] = 0;
				if (h->major != 1)
					return head_bad(h, 505, "http_version", "%s: this server speaks HTTP/1.1",
							h->version);
				h->st = c == '\r' ? H_RL_CR : H_LINE;
				h->line += c == '\n';
			} else if (h->len < 8 && (v[h->len] == '0' ? c >= '0' && c <= '9' : c == (unsigned char)v[h->len])) {
				if (h->len == 5)
					h->major = c - '0';
				h->version[h->len++] = (char)c;
			} else {
				return head_bad(h, 400, "bad_request",
						"request line: not METHOD TARGET HTTP/1.1 (one space between)");
			}
			break;
		case H_LINE:
			if (c == '\r' || c == '\n') { /* the empty line: the end of the head */
				if (c == '\r') {
					h->st = H_END_CR;
					break;
				}
				h->pos++;
				return body_framing(p, h);
			}
			if (c == ' ' || c == '\t')
				return head_bad(h, 400, "bad_request",
						"header line %d: begins with a blank (obsolete line folding)", h->line);
			if (!is_tchar(c))
				return head_bad(h, 400, "bad_request", "header line %d: not NAME: VALUE", h->line);
			if (++h->fields > HEAD_FIELDS_MAX)
				return head_bad(h, 431, "too_large", "request head: more than %d header lines",
						HEAD_FIELDS_MAX);
			h->st = H_NAME;
			h->name = h->pos;
			h->len = 1;
			break;
		case H_NAME:
			if (is_tchar(c)) {
				h->len++;
			} else if (c == ':') {
				const char *nm = (const char *)p + h->name;
				h->which = h->len == 14 && !strncasecmp(nm, "Content-Length", 14)      ? 1
					   : h->len == 17 && !strncasecmp(nm, "Transfer-Encoding", 17) ? 2
												       : 0;
				h->st = H_VALUE;
				h->vstart = h->pos + 1;
				h->vseen = false;
			} else {
				return head_bad(h, 400, "bad_request", "header line %d: not NAME: VALUE", h->line);
			}
			break;
		case H_VALUE:
			if (c == '\r' || c == '\n') {
				value_end(p, h->pos, h);
				h->st = c == '\r' ? H_CR : H_LINE;
				h->line += c == '\n';
			} else if (ctl) {
				return head_bad(h, 400, "bad_request", "header line %d: a control character (byte 0x%02x)",
						h->line, c);
			} else if (!h->vseen && (c == ' ' || c == '\t')) {
				h->vstart++;
			} else {
				h->vseen = true;
			}
			break;
		case H_DONE:
			break;
		}
	}
	if (h->st != H_DONE && n > HEAD_MAX && h->pos >= HEAD_MAX)
		head_bad(h, 431, "too_large", "request head: more than %d bytes", HEAD_MAX);
}

/* ---- what the gate holds ---- */

/* A connection the gate holds: waiting for its first head, or answered
 * and read until it closes (lingering). */
struct wait {
	int fd;
	struct who who;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool linger;
	bool counted;                /* counted against its address and the server */
	bool dead;                   /* closed to make room: freed after the epoll batch that may name it */
	double deadline;
	struct head head;            /* its first request's head, as far as it is checked */
	struct wait *prev, *next;
};

struct wlist {
	struct wait *head, *tail;    /* deadlines in order: each list's are set alike */
	int n;
};

struct gate {
	struct server *s;
	struct MHD_Daemon *d;
	int lfd, ep, wake;           /* listening socket, epoll, eventfd to stop */
	bool tls;
	int per_address, max_open;
	double timeout_ms;
	pthread_t th;
	bool started;
	atomic_bool stop;
	atomic_bool trim;            /* head-phase connections may be past HEAD_CAP: the gate thread looks */
	double paused_until;         /* accept paused (out of fds) until then */
	struct wlist waiting, lingering; /* the gate thread's alone */
	struct wait *dead;           /* closed, to be freed (their next links them) */
	pthread_mutex_t mu;          /* what follows */
	struct tally {
		struct who who;
		int n;
	} *tally;                    /* connections held by address (n > 0) */
	int ntally, captally;
	int open;                    /* all connections held: waiting here, or libmicrohttpd's */
	struct conn **byfd;          /* libmicrohttpd's, by socket */
	int nbyfd;
	int busy;                    /* libmicrohttpd's connections with a request under way */
	uint64_t refused_address, refused_full, refused_reserved, timed_out, evicted;
};

/* ---- counts (g->mu held) ---- */

static struct tally *tally_of(struct gate *g, const struct who *w)
{
	for (int i = 0; i < g->ntally; i++)
		if (!memcmp(&g->tally[i].who, w, sizeof *w))
			return &g->tally[i];
	return NULL;
}

/* Count one more for w; false (nothing counted) when w holds per_address
 * already (*full false) or the server max_open (*full true); force: count
 * it whatever (libmicrohttpd has it). */
static bool count_in(struct gate *g, const struct who *w, bool force, bool *full)
{
	struct tally *t = tally_of(g, w);
	*full = g->open >= g->max_open;
	if (!force && (*full || (t && t->n >= g->per_address)))
		return false;
	if (!t) {
		if (g->ntally == g->captally) {
			int cap = g->captally ? 2 * g->captally : 64;
			struct tally *m = realloc(g->tally, (size_t)cap * sizeof *m);
			if (!m)
				return false;
			g->tally = m;
			g->captally = cap;
		}
		t = &g->tally[g->ntally++];
		t->who = *w;
		t->n = 0;
	}
	t->n++;
	g->open++;
	return true;
}

static void count_out(struct gate *g, const struct who *w)
{
	struct tally *t = tally_of(g, w);
	if (t && --t->n == 0)
		*t = g->tally[--g->ntally];
	g->open--;
}

/* ---- the gate's thread ---- */

static void list_add(struct wlist *l, struct wait *w)
{
	w->prev = l->tail;
	w->next = NULL;
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
	l->n++;
}

static void list_del(struct wlist *l, struct wait *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		l->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		l->tail = w->prev;
	l->n--;
}

static void uncount(struct gate *g, struct wait *w)
{
	if (!w->counted)
		return;
	pthread_mutex_lock(&g->mu);
	count_out(g, &w->who);
	pthread_mutex_unlock(&g->mu);
	w->counted = false;
}

/* w is done with: freed once the epoll batch being handled, whose events
 * may name it, is over (gate_main), its socket closed or handed over. */
static void bury(struct gate *g, struct wait *w)
{
	w->dead = true;
	w->next = g->dead;
	g->dead = w;
}

static void drop(struct gate *g, struct wait *w)
{
	list_del(w->linger ? &g->lingering : &g->waiting, w);
	uncount(g, w);
	close(w->fd);
	bury(g, w);
}

static void say(struct gate *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct gate *g, const char *fmt, ...)
{
	if (!g->s->o.log)
		return;
	char line[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	g->s->o.log(g->s->o.log_ud, line);
}

static const char *reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

static void look(struct gate *g, struct wait *w, uint32_t ev);

/* Answer w with the protocol's JSON error and let it linger: what it
 * sends is read and dropped until it closes or LINGER_MS pass, so that
 * the answer is not lost to a reset (a socket closed with bytes unread in
 * it is reset).  Past LINGER_MAX lingering, it is closed at once. */
static void answer(struct gate *g, struct wait *w, int status, const char *code, const char *msg)
{
	json_t *doc = json_pack("{s{si ss ss}}", "error", "status", status, "code", code, "message", msg);
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	char out[1024];
	int n = snprintf(out, sizeof out,
			 "HTTP/1.1 %d %s\r\n" TIR_PROTOCOL_HEADER ": " TIR_PROTOCOL_STR "\r\n"
			 "Content-Type: application/json\r\nConnection: close\r\n%sContent-Length: %zu\r\n\r\n%s\n",
			 status, reason(status), status == 503 ? "Retry-After: 1\r\n" : "",
			 body ? strlen(body) + 1 : 1, body ? body : "");
	free(body);
	if (n > 0 && (size_t)n < sizeof out)
		(void)!send(w->fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	pthread_mutex_lock(&g->s->mmu);
	g->s->by_status[status]++;
	pthread_mutex_unlock(&g->s->mmu);
	shutdown(w->fd, SHUT_WR);
	uncount(g, w);
	if (g->lingering.n >= LINGER_MAX) {
		list_del(w->linger ? &g->lingering : &g->waiting, w);
		close(w->fd);
		bury(g, w);
		return;
	}
	if (!w->linger)
		list_del(&g->waiting, w);
	else
		list_del(&g->lingering, w);
	w->linger = true;
	w->deadline = tir_now_ms() + LINGER_MS;
	list_add(&g->lingering, w);
	look(g, w, 0); /* what is there already (edge-triggered: it raises no new event) */
}

/* TCP keepalive: a peer that is gone without a word (powered off, its
 * network cut) is found within about a minute, even while it waits for a
 * batch, and its connection closed. */
static void keepalive(int fd)
{
	int one = 1, idle = 30, intvl = 10, cnt = 3;
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* Give w to libmicrohttpd (w is freed). */
static void hand_over(struct gate *g, struct wait *w)
{
	epoll_ctl(g->ep, EPOLL_CTL_DEL, w->fd, NULL);
	if (!w->linger)
		list_del(&g->waiting, w);
	struct conn *k = calloc(1, sizeof *k);
	bool fits = k && w->fd < g->nbyfd;
	if (!fits && k) {
		int nb = g->nbyfd ? g->nbyfd : 256;
		while (nb <= w->fd)
			nb *= 2;
		pthread_mutex_lock(&g->mu);
		struct conn **m = realloc(g->byfd, (size_t)nb * sizeof *m);
		if (m) {
			memset(m + g->nbyfd, 0, (size_t)(nb - g->nbyfd) * sizeof *m);
			g->byfd = m;
			g->nbyfd = nb;
		}
		pthread_mutex_unlock(&g->mu);
		fits = m != NULL;
	}
	if (!fits) {
		free(k);
		uncount(g, w);
		close(w->fd);
		bury(g, w);
		return;
	}
	*k = (struct conn){.who = w->who, .fd = w->fd, .state = HANDED, .head_in = !g->tls, .since = tir_now_ms(),
			   .g = g};
	pthread_mutex_lock(&g->mu);
	struct conn *stale = g->byfd[w->fd]; /* the fd was closed by libmicrohttpd, unannounced */
	if (stale)
		count_out(g, &stale->who);
	free(stale);
	g->byfd[w->fd] = k;
	pthread_mutex_unlock(&g->mu);
	w->counted = false; /* the record has the count now */
	/* it may be started (gate_notify) before this returns */
	if (MHD_add_connection(g->d, w->fd, (const struct sockaddr *)&w->addr, w->addrlen) != MHD_YES) {
		/* refused, and the socket closed */
		pthread_mutex_lock(&g->mu);
		if (g->byfd[w->fd] == k) {
			g->byfd[w->fd] = NULL;
			count_out(g, &k->who);
			free(k);
		}
		pthread_mutex_unlock(&g->mu);
	}
	bury(g, w);
}

/* w's socket has news: its head, all of it or more of it, or its end. */
static void look(struct gate *g, struct wait *w, uint32_t ev)
{
	static unsigned char buf[HEAD_MAX + 1];
	if (w->linger) { /* read and dropped, a bounded amount at a time (the deadline ends it) */
		ssize_t r = 0;
		for (int i = 0; i < 64 && (r = recv(w->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0; i++)
			;
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			drop(g, w);
		return;
	}
	ssize_t n = recv(w->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) { /* gone before a word, or an error */
		drop(g, w);
		return;
	}
	struct head *h = &w->head;
	head_check(buf, (size_t)n, h);
	if (h->status == 0) {
		hand_over(g, w);
	} else if (h->status > 1) {
		char a[64];
		who_str(&w->who, a, sizeof a);
		say(g, "tir serve: %s: %d %s: %s", a, h->status, h->code, h->msg);
		answer(g, w, h->status, h->code, h->msg);
	} else if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		drop(g, w); /* half a head, and the client stopped sending */
	}
}

static void refuse(struct gate *g, int fd, const struct who *w, bool full)
{
	char a[64], msg[200];
	who_str(w, a, sizeof a);
	pthread_mutex_lock(&g->mu);
	if (full)
		g->refused_full++;
	else
		g->refused_address++;
	pthread_mutex_unlock(&g->mu);
	if (full)
		snprintf(msg, sizeof msg, "%d connections are open, the most this server holds: try again shortly",
			 g->max_open);
	else
		snprintf(msg, sizeof msg, "%s has %d connections open, the most one address may "
			 "(--max-connections-per-address): try again shortly", a, g->per_address);
	say(g, "tir serve: %s: connection refused: %s", a, msg);
	struct wait *x = calloc(1, sizeof *x);
	struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = x};
	if (g->tls || !x || epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &e)) {
		free(x);
		close(fd);
		return;
	}
	x->fd = fd;
	x->who = *w;
	list_add(&g->waiting, x);
	answer(g, x, 503, "busy", msg);
}

/* ---- room for a newcomer: connections still in their head phase ----
 *
 * A connection is in its head phase from when it is accepted, or its last
 * request ended, until its next request's head is in: waiting here for a
 * first head, or libmicrohttpd's and idle (a kept-alive connection, or a
 * TLS one whose handshake or head is not done).  A plain one handed over
 * has its head in, checked here: it is not in its head phase even before
 * libmicrohttpd, late under load, begins its request.  Such a connection holds a
 * slot and has given the server nothing; HEAD_CAP of them at most are
 * held at once, all addresses together, and when a newcomer needs a slot
 * (its address at --max-connections-per-address, the server at
 * MAX_CONNECTIONS, or HEAD_CAP reached) the oldest head-phase connection
 * of the address that holds the most connections (of the newcomer's own,
 * for its address's limit) is closed to make it.  Slow heads, from however
 * many addresses, then hold at most HEAD_CAP slots and are the ones that
 * give way: a client that sends its head at once is always let in. */
#define HEAD_CAP (MAX_CONNECTIONS / 2)

struct pick {
	int heads;                   /* connections in their head phase */
	struct wait *w;              /* the one to close: the gate's, */
	struct conn *k;              /* or libmicrohttpd's */
	int n;                       /* connections its address holds */
	double since;                /* when its head phase began */
};

static void consider(struct gate *g, const struct who *who, double since, struct wait *w, struct conn *k,
		     const struct who *only, struct pick *p)
{
	p->heads++;
	if (only && memcmp(who, only, sizeof *who))
		return;
	const struct tally *t = tally_of(g, who);
	int n = t ? t->n : 0;
	if ((!p->w && !p->k) || n > p->n || (n == p->n && since < p->since))
		*p = (struct pick){.heads = p->heads, .w = w, .k = k, .n = n, .since = since};
}

/* Count the head-phase connections, and pick the one to close: of address
 * only, or (NULL) of the address holding the most (g->mu held). */
static void heads_scan(struct gate *g, const struct who *only, struct pick *p)
{
	*p = (struct pick){0};
	for (struct wait *w = g->waiting.head; w; w = w->next)
		consider(g, &w->who, w->deadline - g->timeout_ms, w, NULL, only, p);
	for (int fd = 0; fd < g->nbyfd; fd++) {
		struct conn *k = g->byfd[fd];
		if (k && !k->busy && !k->head_in && !k->shut)
			consider(g, &k->who, k->since, NULL, k, only, p);
	}
}

/* Close p's pick (g->mu held; a connection of the gate's is returned to
 * be dropped once it is let go).  libmicrohttpd's is shut down as the
 * sweep does: it reads the end and closes the connection itself. */
static struct wait *evict(struct gate *g, struct pick *p, char idle[64])
{
	g->evicted++;
	if (p->k) {
		shutdown(p->k->fd, SHUT_RDWR);
		p->k->shut = true;
		who_str(&p->k->who, idle, 64); /* logged once g->mu is let go */
		return NULL;
	}
	return p->w;
}

/* The log line of a kept-alive connection evict closed (idle[0]: none). */
static void say_idle(struct gate *g, const char *idle)
{
	if (idle[0])
		say(g, "tir serve: %s: connection closed: idle between requests, and its slot was needed", idle);
}

/* Count newcomer w in, making room by closing a head-phase connection when
 * it needs one; false (nothing counted) when there is none to close, with
 * *full saying whether the server's limit or the address's was hit. */
static void look(struct gate *g, struct wait *w, uint32_t ev);

static bool let_in(struct gate *g, const struct who *w, bool *full)
{
	struct pick p;
	struct wait *gone = NULL;
	bool in = false;
	char idle[64] = "";
	/* a connection of the gate's picked may have its head in its socket
	 * already, not yet looked at (a burst of accepts): it is looked at
	 * first, and the pick made again if it is no longer in its head phase.
	 * Every pick looked at that way leaves the waiting list (handed over,
	 * answered or closed), so this ends within as many rounds as the gate
	 * holds connections, each of which it would look at anyway; none is
	 * closed unread (one that was had its request lost without a byte) */
	for (;;) {
		pthread_mutex_lock(&g->mu);
		in = count_in(g, w, false, full);
		bool need = !in;
		heads_scan(g, need ? (*full ? NULL : w) : NULL, &p);
		need = need || p.heads >= HEAD_CAP;
		struct wait *cand = need ? p.w : NULL;
		if (!cand) { /* libmicrohttpd's idle one, if any */
			if (need && p.k) {
				gone = evict(g, &p, idle);
				if (!in)
					in = count_in(g, w, true, full);
			}
			pthread_mutex_unlock(&g->mu);
			break;
		}
		if (in) /* counted: undone while the candidate is looked at */
			count_out(g, w);
		pthread_mutex_unlock(&g->mu);
		look(g, cand, 0);
		if (!cand->dead && !cand->linger) { /* still waiting for its head: it goes */
			pthread_mutex_lock(&g->mu);
			in = count_in(g, w, true, full);
			g->evicted++;
			pthread_mutex_unlock(&g->mu);
			gone = cand;
			break;
		}
		in = false;
	}
	say_idle(g, idle);
	if (gone) {
		char a[64];
		who_str(&gone->who, a, sizeof a);
		say(g, "tir serve: %s: connection closed: no request head yet, and its slot was needed", a);
		epoll_ctl(g->ep, EPOLL_CTL_DEL, gone->fd, NULL);
		drop(g, gone);
	}
	return in;
}

/* A request that ended put its connection back in its head phase, which
 * may make more than HEAD_CAP such (the cap is kept as connections come,
 * and this one was not in its head phase then): the oldest of the busiest
 * address are closed until HEAD_CAP are left (the gate's thread, woken by
 * gate_request). */
static void trim(struct gate *g)
{
	for (;;) {
		struct pick p;
		pthread_mutex_lock(&g->mu);
		heads_scan(g, NULL, &p);
		bool over = p.heads > HEAD_CAP && (p.w || p.k);
		char idle[64] = "";
		if (over && p.k)
			evict(g, &p, idle);
		pthread_mutex_unlock(&g->mu);
		say_idle(g, idle);
		if (!over)
			return;
		if (p.k)
			continue;
		look(g, p.w, 0); /* its head may be in its socket already, not yet looked at */
		if (p.w->dead || p.w->linger)
			continue;
		pthread_mutex_lock(&g->mu);
		g->evicted++;
		pthread_mutex_unlock(&g->mu);
		char a[64];
		who_str(&p.w->who, a, sizeof a);
		say(g, "tir serve: %s: connection closed: no request head yet, and its slot was needed", a);
		epoll_ctl(g->ep, EPOLL_CTL_DEL, p.w->fd, NULL);
		drop(g, p.w);
	}
}

static void accept_some(struct gate *g)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int fd = accept(g->lfd, (struct sockaddr *)&ss, &sl);
		if (fd >= 0 && (fcntl(fd, F_SETFL, O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC))) {
			close(fd);
			continue;
		}
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* no fd for it: leave the rest in the backlog a while */
				epoll_ctl(g->ep, EPOLL_CTL_DEL, g->lfd, NULL);
				g->paused_until = tir_now_ms() + 100;
			}
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		struct who w = who_of((struct sockaddr *)&ss);
		bool full;
		if (!let_in(g, &w, &full)) {
			refuse(g, fd, &w, full);
			continue;
		}
		keepalive(fd);
		tir_sock_local(fd, (struct sockaddr *)&ss);
		struct wait *x = calloc(1, sizeof *x);
		if (!x) {
			pthread_mutex_lock(&g->mu);
			count_out(g, &w);
			pthread_mutex_unlock(&g->mu);
			close(fd);
			continue;
		}
		*x = (struct wait){.fd = fd, .who = w, .addrlen = sl, .counted = true,
				   .deadline = tir_now_ms() + g->timeout_ms};
		memcpy(&x->addr, &ss, sl);
		list_add(&g->waiting, x);
		struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = x};
		if (g->tls) /* the handshake is libmicrohttpd's; the deadline is the sweep's */
			hand_over(g, x);
		else if (epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &e))
			drop(g, x);
	}
}

/* Connections waiting past their deadline: closed. */
static void expire(struct gate *g, double now)
{
	while (g->waiting.head && g->waiting.head->deadline <= now) {
		struct wait *w = g->waiting.head;
		char a[64];
		who_str(&w->who, a, sizeof a);
		pthread_mutex_lock(&g->mu);
		g->timed_out++;
		pthread_mutex_unlock(&g->mu);
		say(g, "tir serve: %s: connection closed: no request head within %g s (--header-timeout)", a,
		      g->timeout_ms / 1000);
		drop(g, w);
	}
	while (g->lingering.head && g->lingering.head->deadline <= now)
		drop(g, g->lingering.head);
}

static void *gate_main(void *arg)
{
	struct gate *g = arg;
	struct epoll_event ev[64];
	while (!g->stop) {
		double now = tir_now_ms(), next = now + 1000;
		if (g->waiting.head && g->waiting.head->deadline < next)
			next = g->waiting.head->deadline;
		if (g->lingering.head && g->lingering.head->deadline < next)
			next = g->lingering.head->deadline;
		if (g->paused_until && g->paused_until < next)
			next = g->paused_until;
		int n = epoll_wait(g->ep, ev, 64, next > now ? (int)(next - now) + 1 : 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &g->lfd) {
				accept_some(g);
			} else if (ev[i].data.ptr == &g->wake) { /* a trim asked for (gate_request), or the stop */
				uint64_t v;
				(void)!read(g->wake, &v, sizeof v);
			} else if (!((struct wait *)ev[i].data.ptr)->dead) {
				look(g, ev[i].data.ptr, ev[i].events);
			}
		}
		if (atomic_exchange(&g->trim, false))
			trim(g);
		while (g->dead) {
			struct wait *w = g->dead;
			g->dead = w->next;
			free(w);
		}
		now = tir_now_ms();
		if (g->paused_until && now >= g->paused_until) {
			struct epoll_event e = {.events = EPOLLIN, .data.ptr = &g->lfd};
			epoll_ctl(g->ep, EPOLL_CTL_ADD, g->lfd, &e);
			g->paused_until = 0;
		}
		expire(g, now);
	}
	return NULL;
}

/* ---- the interface (serve.h) ---- */

struct gate *gate_new(struct server *s, int lfd)
{
	struct gate *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->s = s;
	g->lfd = lfd;
	g->tls = s->tls_cert != NULL;
	g->per_address = s->o.max_connections_per_address;
	g->max_open = MAX_CONNECTIONS;
	g->timeout_ms = s->o.header_timeout * 1e3;
	pthread_mutex_init(&g->mu, NULL);
	g->ep = epoll_create1(EPOLL_CLOEXEC);
	g->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event a = {.events = EPOLLIN, .data.ptr = &g->lfd};
	struct epoll_event b = {.events = EPOLLIN, .data.ptr = &g->wake};
	if (g->ep < 0 || g->wake < 0 || epoll_ctl(g->ep, EPOLL_CTL_ADD, lfd, &a) ||
	    epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake, &b)) {
		g->lfd = -1; /* the caller closes it */
		gate_free(g);
		return NULL;
	}
	return g;
}

bool gate_start(struct gate *g, struct MHD_Daemon *d)
{
	g->d = d;
	g->started = pthread_create(&g->th, NULL, gate_main, g) == 0;
	return g->started;
}

void gate_stop(struct gate *g)
{
	if (!g || !g->started)
		return;
	g->stop = true;
	uint64_t one = 1;
	(void)!write(g->wake, &one, sizeof one);
	pthread_join(g->th, NULL);
	g->started = false;
	while (g->waiting.head)
		drop(g, g->waiting.head);
	while (g->lingering.head)
		drop(g, g->lingering.head);
	while (g->dead) {
		struct wait *w = g->dead;
		g->dead = w->next;
		free(w);
	}
	if (g->lfd >= 0)
		close(g->lfd);
	g->lfd = -1;
}

void gate_free(struct gate *g)
{
	if (!g)
		return;
	gate_stop(g);
	if (g->lfd >= 0)
		close(g->lfd);
	for (int i = 0; i < g->nbyfd; i++)
		free(g->byfd[i]);
	free(g->byfd);
	free(g->tally);
	if (g->ep >= 0)
		close(g->ep);
	if (g->wake >= 0)
		close(g->wake);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

void gate_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		 enum MHD_ConnectionNotificationCode code)
{
	struct gate *g = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		int fd = fi ? (int)fi->connect_fd : -1;
		pthread_mutex_lock(&g->mu);
		struct conn *k = fd >= 0 && fd < g->nbyfd ? g->byfd[fd] : NULL;
		if (!k) { /* dropped as stale by the sweep: counted again */
			const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
			k = fd >= 0 && fd < g->nbyfd ? calloc(1, sizeof *k) : NULL;
			if (k) {
				bool full;
				*k = (struct conn){.fd = fd, .g = g, .since = tir_now_ms()};
				if (ai && ai->client_addr)
					k->who = who_of(ai->client_addr);
				if (count_in(g, &k->who, true, &full)) {
					g->byfd[fd] = k;
				} else { /* out of memory: not counted, nor held to the deadline */
					free(k);
					k = NULL;
				}
			}
		}
		if (k) {
			/* a connection handed over keeps its hand-over time: it began
			 * its head phase then, and libmicrohttpd's threads may start
			 * connections in another order than they were accepted (the
			 * oldest must stay the oldest for let_in's pick) */
			k->state = HELD;
		}
		pthread_mutex_unlock(&g->mu);
		*socket_context = k;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		struct conn *k = *socket_context;
		if (!k)
			return;
		pthread_mutex_lock(&g->mu);
		if (k->fd < g->nbyfd && g->byfd[k->fd] == k)
			g->byfd[k->fd] = NULL;
		g->busy -= k->busy;
		count_out(g, &k->who);
		pthread_mutex_unlock(&g->mu);
		free(k);
		*socket_context = NULL;
	}
}

void gate_request(struct MHD_Connection *c, bool begins)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = i ? i->socket_context : NULL;
	if (!k)
		return;
	pthread_mutex_lock(&k->g->mu);
	k->g->busy += (int)begins - (int)k->busy;
	k->busy = begins;
	k->head_in = false;
	k->token = false;
	k->since = tir_now_ms();
	struct pick p;
	if (!begins)
		heads_scan(k->g, NULL, &p);
	bool over = !begins && p.heads > HEAD_CAP;
	pthread_mutex_unlock(&k->g->mu);
	if (over && !atomic_exchange(&k->g->trim, true)) {
		uint64_t one = 1;
		(void)!write(k->g->wake, &one, sizeof one);
	}
}

/* RESERVED of the server's slots are for requests that present a valid
 * token: one without is refused once MAX_CONNECTIONS - RESERVED requests
 * are under way.  (On an open server every request is let in.) */
#define RESERVED (MAX_CONNECTIONS / 8)

bool gate_admit(struct MHD_Connection *c, bool token)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = i ? i->socket_context : NULL;
	if (!k)
		return true;
	struct gate *g = k->g;
	pthread_mutex_lock(&g->mu);
	k->token = token;
	bool ok = token || g->s->open || g->busy <= g->max_open - RESERVED;
	if (!ok)
		g->refused_reserved++;
	pthread_mutex_unlock(&g->mu);
	return ok;
}

void gate_sweep(struct gate *g)
{
	double now = tir_now_ms();
	struct who shut[16];         /* said in the log, after the mutex */
	int nshut = 0;
	pthread_mutex_lock(&g->mu);
	for (int fd = 0; fd < g->nbyfd; fd++) {
		struct conn *k = g->byfd[fd];
		if (!k)
			continue;
		if (k->state == HANDED && now - k->since > HANDED_STALE_MS) {
			/* never started: libmicrohttpd closed it (out of memory) */
			count_out(g, &k->who);
			g->byfd[fd] = NULL;
			free(k);
		} else if (k->state == HELD && !k->busy && !k->shut && now - k->since > g->timeout_ms) {
			shutdown(fd, SHUT_RDWR);
			k->shut = true;
			g->timed_out++;
			if (nshut < (int)(sizeof shut / sizeof *shut))
				shut[nshut++] = k->who;
		}
	}
	pthread_mutex_unlock(&g->mu);
	for (int i = 0; i < nshut; i++) {
		char a[64];
		who_str(&shut[i], a, sizeof a);
		say(g, "tir serve: %s: connection closed: no request head within %g s (--header-timeout)", a,
		    g->timeout_ms / 1000);
	}
}

void gate_stats(struct gate *g, struct gate_stats *st)
{
	pthread_mutex_lock(&g->mu);
	st->open = g->open;
	st->refused_address = g->refused_address;
	st->refused_full = g->refused_full;
	st->timed_out = g->timed_out;
	st->refused_reserved = g->refused_reserved;
	st->evicted = g->evicted;
	st->busy = g->busy;
	pthread_mutex_unlock(&g->mu);
}
