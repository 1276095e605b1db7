/*
 * server.c — `tir serve`: the HTTP side of docs/protocol.md on
 * libmicrohttpd (a pool of threads, each with its own epoll).  A batch
 * (POST /v1/sessions/ID/run) is runq.c's once its body is in; the state
 * kept between requests (blobs, graphs, sessions) is store.c's.
 *
 * A request goes through handle() several times: once when its headers
 * are in (route, token, method and Content-Length are checked there, and
 * the body's share of --max-inflight reserved, so that a body over a limit
 * is refused before it is read), once per piece of body (kept; a blob
 * decoded and hashed as it arrives, in upload.c), and once at the end,
 * where the response is made.  done() runs when the connection is finished
 * with the request, answered or not (a client that went away mid-upload):
 * it logs the request's line and frees what it held.
 */
#include "serve.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY ((uint64_t)1 << 30)
#define DEFAULT_MAX_SESSIONS 64
#define DEFAULT_TTL 600
#define DEFAULT_LEASE 30
#define SESSION_BODY_MAX 1024           /* POST /v1/sessions: {"lease": true} */
#define DEFAULT_BLOB_CACHE ((uint64_t)1 << 30)
#define DEFAULT_UPLOAD_RESERVE ((uint64_t)256 << 20)
#define DEFAULT_PER_ADDRESS 32
#define DEFAULT_HEADER_TIMEOUT 10
#define MAX_GRAPHS 256
/* The cache of parsed batch texts (store.c): --graph-cache's default, the
 * graphs in use counted.  A parsed op costs NODE_COST (runq.c), so the
 * default --max-ops fits in it. */
#define DEFAULT_GRAPH_CACHE ((uint64_t)64 << 20)
#define DEFAULT_MAX_OPS 40000           /* ops of one batch text, its loops expanded */
#define DEFAULT_MAX_BATCH_SECONDS 300
#define POOL_THREADS 4
#define CONNECTION_TIMEOUT 30
#define CONNECTION_MEMORY (128 * 1024)  /* MHD's buffer per connection: the size of a body piece */
/* A body this small is not counted against --max-inflight: like MHD's own
 * buffer, what such bodies hold is bounded by the connection limit, and a
 * batch request or a small blob gets through while big uploads fill the
 * budget. */
#define SMALL_BODY (64 * 1024)
#define RETRY_AFTER "1"                 /* seconds, on a 503 for the budget */
#define TICK_MS 20                      /* the main thread's: the sweep, the trim, the watch */
/* What the process may hold beyond --max-memory before it lets go of the
 * buffers it keeps for reuse: code and libraries (13 MiB), thread stacks,
 * MHD's connection buffers, the allocator's arenas (55 MiB were seen at a
 * soak's peak).  Past it, the released tensors the library keeps for
 * reuse (up to 512 MiB, charged to nothing: 140 MiB of a soak's peak of
 * 305 MiB under --max-memory 192M) are freed at once. */
#define OWN_MAX ((uint64_t)64 << 20)
#define PRESSURE_TRIM_MS 1000           /* malloc_trim under load, at most this often */

/* The process's resident bytes (/proc/self/statm, read through fd), or 0. */
static uint64_t resident_bytes(int fd)
{
	char buf[128];
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	unsigned long long size, rss;
	if (sscanf(buf, "%llu %llu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- responses ---- */

enum MHD_Result reply(struct MHD_Connection *c, struct req *r, int status, const char *ctype,
			     void *body, size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, len ? body : (void *)"", len ? MHD_RESPMEM_MUST_FREE
										: MHD_RESPMEM_PERSISTENT);
	if (!len)
		free(body);
	if (!resp) {
		if (len)
			free(body);
		return MHD_NO;
	}
	return reply_with(c, r, status, ctype, resp, len);
}

enum MHD_Result reply_with(struct MHD_Connection *c, struct req *r, int status, const char *ctype,
			   struct MHD_Response *resp, size_t len)
{
	MHD_add_response_header(resp, TIR_PROTOCOL_HEADER, TIR_PROTOCOL_STR);
	if (ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (r->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
	if (status == 503 && !r->retry_after) /* every 503 says when to try again */
		r->retry_after = RETRY_AFTER;
	if (r->retry_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
	enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	if (ok == MHD_YES) {
		r->status = status;
		r->out = len;
	}
	return ok;
}

enum MHD_Result reply_json(struct MHD_Connection *c, struct req *r, int status, json_t *doc)
{
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!s)
		return MHD_NO;
	size_t n = strlen(s);
	/* a newline, for curl at a terminal */
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return MHD_NO;
	}
	t[n] = '\n';
	t[n + 1] = 0;
	return reply(c, r, status, "application/json", t, n + 1);
}

enum MHD_Result reply_error(struct MHD_Connection *c, struct req *r, int status, const char *code,
			    json_t *extra, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *e = json_object();
	json_object_set_new(e, "status", json_integer(status));
	json_object_set_new(e, "code", json_string(code));
	json_object_set_new(e, "message", json_string(msg));
	if (extra)
		json_object_update(e, extra);
	json_decref(extra);
	json_t *doc = json_object();
	json_object_set_new(doc, "error", e);
	return reply_json(c, r, status, doc);
}

/* ---- routing and the token ---- */

/* Where url goes; r->id and r->path filled. */
static enum route route_of(const char *url, struct req *r)
{
	static const char sess[] = "/v1/sessions/", blobs[] = "/v1/blobs/", exports[] = "/v1/exports/";
	const char *rest = NULL;
	enum route rt = R_NONE;
	size_t idlen = 0;
	if (!strcmp(url, "/healthz"))
		rt = R_HEALTHZ;
	else if (!strcmp(url, "/v1/info"))
		rt = R_INFO;
	else if (!strcmp(url, "/metrics"))
		rt = R_METRICS;
	else if (!strcmp(url, "/v1/sessions"))
		rt = R_SESSIONS;
	else if (!strcmp(url, "/v1/blobs"))
		rt = R_BLOBS;
	else if (!strncmp(url, sess, sizeof sess - 1)) {
		rest = url + sizeof sess - 1;
		const char *slash = strchr(rest, '/');
		idlen = slash ? (size_t)(slash - rest) : strlen(rest);
		rt = !slash			  ? R_SESSION
		     : !strcmp(slash, "/run")	  ? R_RUN
		     : !strcmp(slash, "/renew")	  ? R_RENEW
		     : !strcmp(slash, "/export") ? R_EXPORT
		     : !strcmp(slash, "/import") ? R_IMPORT
		     : !strcmp(slash, "/allreduce") ? R_ALLREDUCE
						  : R_NONE;
		r->id_ok = idlen == SESSION_ID_HEX;
	} else if (!strncmp(url, blobs, sizeof blobs - 1) && !strchr(url + sizeof blobs - 1, '/')) {
		rest = url + sizeof blobs - 1;
		idlen = strlen(rest);
		rt = R_BLOB;
		r->id_ok = idlen == TIR_SHA_HEX;
	} else if (!strncmp(url, exports, sizeof exports - 1) && !strchr(url + sizeof exports - 1, '/')) {
		rest = url + sizeof exports - 1;
		idlen = strlen(rest);
		rt = R_EXPORTS;
		r->id_ok = idlen == TIR_SHA_HEX;
	}
	if (rest && idlen <= TIR_SHA_HEX) {
		memcpy(r->id, rest, idlen);
		r->id[idlen] = 0;
		for (size_t i = 0; i < idlen; i++)
			if (!((r->id[i] >= '0' && r->id[i] <= '9') || (r->id[i] >= 'a' && r->id[i] <= 'f')))
				r->id_ok = false;
	} else {
		r->id_ok = false;
	}
	/* the log line names an id by its first 8 digits: a session id is
	 * the session's only key, a capability the value's, and neither
	 * belongs in a log */
	if (rest && r->id_ok)
		snprintf(r->path, sizeof r->path, "%.*s%.8s\xe2\x80\xa6%s", (int)(rest - url), url, r->id,
			 rt == R_RUN ? "/run" : rt == R_RENEW ? "/renew" : rt == R_EXPORT ? "/export"
									 : rt == R_IMPORT ? "/import"
									 : rt == R_ALLREDUCE ? "/allreduce" : "");
	else if (rt == R_EXPORTS) /* a capability that is none: not a word of it */
		snprintf(r->path, sizeof r->path, "%s\xe2\x80\xa6", exports);
	else
		snprintf(r->path, sizeof r->path, "%.80s%s", url, strlen(url) > 80 ? "\xe2\x80\xa6" : "");
	return rt;
}

static const char *allowed(enum route rt)
{
	switch (rt) {
	case R_HEALTHZ:
	case R_INFO:
	case R_METRICS:
		return "GET, HEAD";
	case R_SESSIONS:
	case R_RUN:
	case R_RENEW:
	case R_EXPORT:
	case R_IMPORT:
	case R_ALLREDUCE:
	case R_BLOBS:
		return "POST";
	case R_EXPORTS: /* not HEAD: a capability is used up by its first request */
		return "GET";
	case R_SESSION:
		return "DELETE";
	case R_BLOB:
		return "PUT";
	default:
		return "";
	}
}

static bool method_ok(enum route rt, const char *m)
{
	const char *a = allowed(rt);
	size_t n = strlen(m);
	for (const char *p = strstr(a, m); p; p = strstr(p + 1, m))
		if ((p == a || p[-1] == ' ') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

/* The tenant whose token the request carries, or -1.  Both sides are
 * hashed first, so that each comparison is over 64 bytes whatever was
 * sent, in time that does not depend on where they differ; every tenant's
 * is compared, so the time does not say which one matched either. */
int server_tenant(const struct server *s, const char *token)
{
	if (s->open)
		return 0;
	if (!token)
		return -1;
	char got[TIR_SHA_HEX + 1];
	tir_sha256_hex(token, strlen(token), got);
	int who = -1;
	for (int i = 0; i < s->ntenants; i++) {
		bool eq = tir_const_eq(got, s->tenants[i].token_sha, TIR_SHA_HEX);
		who = eq ? i : who;
	}
	return who;
}

static int tenant_of(const struct server *s, struct MHD_Connection *c)
{
	if (s->open)
		return 0;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7))
		return -1;
	h += 7;
	while (*h == ' ')
		h++;
	return server_tenant(s, h);
}

/* ---- the budget for bodies in flight (--max-inflight) ---- */

/* Grow r's share of the budget to cover a body held in `bytes` (none for
 * a small one); false when the budget has not that much left. */
/* Take `more` of a budget of `cap` whose use is *used; false when it has
 * not that much left. */
static bool take(atomic_uint_fast64_t *used, uint64_t cap, uint64_t more)
{
	uint_fast64_t cur = atomic_load(used);
	do {
		if (more > cap - cur) /* cur never passes cap */
			return false;
	} while (!atomic_compare_exchange_weak(used, &cur, cur + more));
	return true;
}

bool req_reserve(struct server *s, struct req *r, uint64_t bytes)
{
	uint64_t want = bytes > SMALL_BODY ? bytes : 0;
	if (want <= r->reserved)
		return true;
	uint64_t more = want - r->reserved;
	struct tenant *t = &s->tenants[r->tenant];
	if (!take(&t->reserved, t->max_inflight, more))
		return false;
	if (!take(&s->reserved, s->o.max_inflight, more)) {
		atomic_fetch_sub(&t->reserved, more);
		return false;
	}
	r->reserved = want;
	return true;
}

static void unreserve(struct server *s, struct req *r)
{
	atomic_fetch_sub(&s->reserved, r->reserved);
	atomic_fetch_sub(&s->tenants[r->tenant].reserved, r->reserved);
	r->reserved = 0;
}

/* What a request holds of its body (the bytes, an upload's buffer) and
 * its share of the budget, let go of once it is answered and before the
 * answer can reach the client: a client that has its answer may send the
 * next body at once, and the budget must not still count this one. */
void req_let_go(struct server *s, struct req *r)
{
	free(r->body);
	r->body = NULL;
	upload_free(r->up);
	r->up = NULL;
	bundle_free(r->bundle);
	r->bundle = NULL;
	unreserve(s, r);
	req_uncharge(s, r);
}

/* The 503 of a body the budget cannot hold now: nothing of it is read. */
static enum MHD_Result reply_busy(struct server *s, struct MHD_Connection *c, struct req *r,
				  uint64_t len)
{
	r->retry_after = RETRY_AFTER;
	const struct tenant *t = &s->tenants[r->tenant];
	if (s->ntenants > 1 && atomic_load(&t->reserved) + len > t->max_inflight)
		return reply_error(c, r, 503, "busy", NULL,
				   "request bodies of tenant %s being received hold %llu of the %llu bytes it may "
				   "send at once (--tokens); %llu more do not fit now: try again shortly",
				   t->name, (unsigned long long)atomic_load(&t->reserved),
				   (unsigned long long)t->max_inflight, (unsigned long long)len);
	return reply_error(c, r, 503, "busy", NULL,
			   "request bodies being received hold %llu of the %llu bytes this server allows "
			   "at once (--max-inflight); %llu more do not fit now: try again shortly",
			   (unsigned long long)atomic_load(&s->reserved),
			   (unsigned long long)s->o.max_inflight, (unsigned long long)len);
}

/* ---- the first call: headers are in, the body is not ---- */

static enum MHD_Result begin(struct server *s, struct MHD_Connection *c, struct req *r,
			     const char *url, const char *method)
{
	r->route = route_of(url, r);
	/* /metrics is a tenant's like any other route: what it shows a
	 * tenant is its own figures (get_metrics) */
	bool public = r->route == R_HEALTHZ || r->route == R_INFO;
	r->tenant = tenant_of(s, c);
	/* a request with a valid token may take a slot kept for such (gate.c) */
	if (!gate_admit(c, !s->open && r->tenant >= 0)) {
		r->tenant = 0;
		return reply_error(c, r, 503, "busy", NULL,
				   "%d requests are under way; the slots left are kept for requests with a token: "
				   "try again shortly", MAX_CONNECTIONS - MAX_CONNECTIONS / 8);
	}
	if (public)
		r->tenant = 0;
	if (r->tenant < 0) {
		r->tenant = 0;
		return reply_error(c, r, 401, "unauthorized", NULL, "%s",
				   MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)
					   ? "wrong token"
					   : "this server needs a token: Authorization: Bearer TOKEN");
	}
	r->authed = !public;
	if (r->route == R_NONE)
		return reply_error(c, r, 404, "not_found", NULL, "no such path: %s", url);
	/* a client says which protocol it speaks (curl need not) */
	const char *pv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, TIR_PROTOCOL_HEADER);
	if (pv && strcmp(pv, TIR_PROTOCOL_STR))
		return reply_error(c, r, 400, "protocol", NULL,
				   "the request is of tir protocol %.16s; this server speaks %d (docs/protocol.md)", pv,
				   TIR_PROTOCOL);
	if (!method_ok(r->route, method)) {
		r->allow = allowed(r->route);
		enum MHD_Result ok = reply_error(c, r, 405, "method", NULL, "%s takes %s, not %s",
						 r->route == R_SESSION ? "/v1/sessions/ID"
						 : r->route == R_RUN   ? "/v1/sessions/ID/run"
						 : r->route == R_RENEW ? "/v1/sessions/ID/renew"
						 : r->route == R_BLOB  ? "/v1/blobs/SHA256"
						 : r->route == R_BLOBS ? "/v1/blobs"
						 : r->route == R_EXPORT ? "/v1/sessions/ID/export"
						 : r->route == R_IMPORT ? "/v1/sessions/ID/import"
						 : r->route == R_ALLREDUCE ? "/v1/sessions/ID/allreduce"
						 : r->route == R_EXPORTS ? "/v1/exports/CAP"
								       : url,
						 allowed(r->route), method);
		return ok;
	}
	if (r->route == R_BLOB && !r->id_ok)
		return reply_error(c, r, 400, "bad_request", NULL,
				   "blob name: not 64 lowercase hex digits (a SHA-256)");

	/* the gate checks a connection's first head; these are for the later
	 * ones of a kept-alive connection, and TLS's: a body framed otherwise
	 * than by a length or chunks would be read until the client closes */
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	if (te && cl)
		return reply_error(c, r, 400, "bad_request", NULL, "both Content-Length and Transfer-Encoding");
	if (te && strcasecmp(te, "chunked"))
		return reply_error(c, r, 501, "not_implemented",
				   NULL, "Transfer-Encoding: %.40s: only chunked is understood", te);
	uint64_t len = 0;
	if (cl) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(cl, &end, 10);
		if (errno || end == cl || *end || *cl == '-')
			return reply_error(c, r, 400, "bad_request", NULL, "Content-Length: not a number");
		len = v;
		r->has_len = true;
	}
	if (r->has_len && len > s->o.max_body)
		return reply_error(c, r, 413, "too_large", NULL,
				   "body: %llu bytes is over the limit of %llu (--max-body)",
				   (unsigned long long)len, (unsigned long long)s->o.max_body);
	/* what the body will hold (a blob the server has is only hashed) is
	 * reserved before any of it is read */
	if (r->has_len && len > SMALL_BODY && len > s->o.max_inflight)
		return reply_error(c, r, 413, "too_large", NULL,
				   "body: %llu bytes is over the %llu bytes this server receives at once "
				   "(--max-inflight)",
				   (unsigned long long)len, (unsigned long long)s->o.max_inflight);
	const struct tenant *tn = &s->tenants[r->tenant];
	if (r->has_len && len > SMALL_BODY && len > tn->max_inflight)
		return reply_error(c, r, 413, "too_large", NULL,
				   "body: %llu bytes is over the %llu bytes tenant %s may send at once (--tokens)",
				   (unsigned long long)len, (unsigned long long)tn->max_inflight, tn->name);
	if (r->route == R_BLOB) {
		if (!r->has_len)
			return reply_error(c, r, 411, "length_required", NULL,
					   "PUT /v1/blobs/SHA256 needs a Content-Length");
		/* held by this tenant: the bytes are only checked.  Held by
		 * another or by none, it is one case: the budget and the limits
		 * are a new blob's, and the body is decoded, checked and stored as
		 * the tenant's own copy (store.h), so that neither an answer, nor
		 * a figure of the tenant's, nor the time says another tenant has
		 * it */
		bool mine = blob_touch(s->blobs, r->id, r->tenant);
		if (!mine && len > s->o.blob_cache)
			return reply_error(c, r, 413, "too_large", NULL,
					   "a blob of %llu bytes is over the blob cache of %llu bytes (--blob-cache)",
					   (unsigned long long)len, (unsigned long long)s->o.blob_cache);
		if (!mine && !req_reserve(s, r, len))
			return reply_busy(s, c, r, len);
		if (!(r->up = upload_new(r->id, len, mine)))
			return reply_error(c, r, 503, "busy", NULL, "no memory for an upload now");
	} else if (r->route == R_BLOBS) {
		/* each item is checked as a PUT's body is; the whole body is
		 * reserved as one */
		if (!r->has_len)
			return reply_error(c, r, 411, "length_required", NULL, "POST /v1/blobs needs a Content-Length");
		if (!req_reserve(s, r, len))
			return reply_busy(s, c, r, len);
		if (!(r->bundle = bundle_new(s, r->tenant, len)))
			return reply_error(c, r, 503, "busy", NULL, "no memory for an upload now");
	} else if (r->route == R_SESSIONS && (te || len)) {
		/* {"lease": true}, or nothing */
		if (te)
			return reply_error(c, r, 411, "length_required", NULL,
					   "POST /v1/sessions with a body needs a Content-Length");
		if (len > SESSION_BODY_MAX)
			return reply_error(c, r, 413, "too_large", NULL,
					   "body: %llu bytes; a session's request has at most %d",
					   (unsigned long long)len, SESSION_BODY_MAX);
		r->cap = len;
		if (!(r->body = malloc(r->cap)))
			return reply_error(c, r, 503, "busy", NULL, "no memory for a body now");
		r->keep_body = true;
	} else if (r->route == R_EXPORT || r->route == R_IMPORT || r->route == R_ALLREDUCE) {
		/* a small JSON object, with a Content-Length */
		const char *what = r->route == R_EXPORT ? "export" : r->route == R_IMPORT ? "import" : "allreduce";
		if (te)
			return reply_error(c, r, 411, "length_required", NULL,
					   "POST /v1/sessions/ID/%s needs a Content-Length", what);
		if (len > XFER_BODY_MAX)
			return reply_error(c, r, 413, "too_large", NULL,
					   "body: %llu bytes; an %s request has at most %d",
					   (unsigned long long)len, what, XFER_BODY_MAX);
		r->cap = len;
		if (!(r->body = malloc(r->cap ? r->cap : 1)))
			return reply_error(c, r, 503, "busy", NULL, "no memory for a body now");
		r->keep_body = true;
	} else if (r->route == R_RUN) {
		/* allocated once when the length is known; a chunked body grows by doubling */
		r->cap = r->has_len ? len : SMALL_BODY;
		if (r->cap > s->o.max_body)
			r->cap = s->o.max_body;
		if (!req_reserve(s, r, r->cap))
			return reply_busy(s, c, r, r->cap);
		/* and to --max-memory (its tenant's share), however small */
		if (!req_charge(s, r, r->cap))
			return reply_no_memory(s, c, r, r->cap, "the request's body");
		r->body = malloc(r->cap ? r->cap : 1);
		if (!r->body)
			return reply_error(c, r, 503, "busy", NULL, "no memory for a body of %llu bytes now",
					   (unsigned long long)len);
		r->keep_body = true;
	}
	return MHD_YES;
}

/* A piece of body. */
static void absorb(struct server *s, struct req *r, const char *d, size_t n)
{
	r->in += n;
	if (r->in > s->o.max_body && !r->over) {
		r->over = true;
		free(r->body);
		r->body = NULL;
		if (!r->up && !r->bundle)
			unreserve(s, r);
	}
	if (r->up && !r->over)
		upload_absorb(r->up, d, n);
	if (r->bundle && !r->over)
		bundle_absorb(r->bundle, d, n);
	if (!r->keep_body || r->over || r->busy)
		return;
	if (n > r->cap - r->len) {
		size_t cap = r->cap * 2 > r->len + n ? r->cap * 2 : r->len + n;
		if (cap > s->o.max_body)
			cap = s->o.max_body;
		if (!r->has_len && (!req_reserve(s, r, cap) || !req_charge(s, r, cap))) {
			r->busy = true; /* the rest is read and dropped; the answer is a 503 */
			free(r->body);
			r->body = NULL;
			unreserve(s, r);
			return;
		}
		unsigned char *b = r->has_len ? NULL : realloc(r->body, cap);
		if (!b) { /* more than Content-Length said, or no memory */
			r->over = true;
			free(r->body);
			r->body = NULL;
			unreserve(s, r);
			return;
		}
		r->body = b;
		r->cap = cap;
	}
	memcpy(r->body + r->len, d, n);
	r->len += n;
}

/* ---- a run's JSON, charged before it is parsed ---- */

/* The most values (tir_json_values) a run request needs: inputs, keep and
 * drop of up to a session's worth of values each (an input is two: its
 * object and the name in it), and the few fields around them. */
#define RUN_MAX_VALUES (4 * SESSION_MAX_VALUES + 64)
/* What jansson 2.14 holds for one value at most, allocator included: an
 * object member whose value is an empty object, 325 bytes (an integer in
 * an array is 43, a one-letter string 91) */
#define JSON_VALUE_BYTES 384

/* A run body is parsed whole (json_loadb), and the parse can hold far more
 * than the body (a 50 MiB `[0,0,...]` is a gigabyte of values), so the
 * body is judged first: a count of its values (no parse: a scan) is
 * refused past RUN_MAX_VALUES (413), and what the parse may hold, the
 * values at JSON_VALUE_BYTES and its strings copied (the body's bytes
 * again), is charged to --max-inflight with the body: 503 when it does
 * not fit now, 413 when it never could.  false with *answer queued when
 * the body is refused. */
static bool run_body_fits(struct server *s, struct MHD_Connection *c, struct req *r,
			  enum MHD_Result *answer)
{
	size_t n = tir_json_values(r->body, r->len);
	if (n > RUN_MAX_VALUES) {
		*answer = reply_error(c, r, 413, "too_large", NULL,
				      "body: %zu JSON values, over the %d a run request may have (inputs, keep "
				      "and drop of up to %d each)", n, RUN_MAX_VALUES, SESSION_MAX_VALUES);
		return false;
	}
	uint64_t cost = 2 * (uint64_t)r->len + (uint64_t)n * JSON_VALUE_BYTES;
	const struct tenant *t = &s->tenants[r->tenant];
	uint64_t most = t->max_inflight < s->o.max_inflight ? t->max_inflight : s->o.max_inflight;
	if (cost > SMALL_BODY && cost > most) {
		*answer = reply_error(c, r, 413, "too_large", NULL,
				      "body: parsing its %zu bytes and %zu JSON values would hold %llu bytes, over "
				      "the %llu %s may receive at once (%s)", r->len, n, (unsigned long long)cost,
				      (unsigned long long)most, most == s->o.max_inflight ? "this server" : t->name,
				      most == s->o.max_inflight ? "--max-inflight" : "--tokens");
		return false;
	}
	if (!req_reserve(s, r, cost)) {
		*answer = reply_busy(s, c, r, cost - r->reserved);
		return false;
	}
	if (!req_charge(s, r, cost)) {
		*answer = reply_no_memory(s, c, r, cost, "the request's JSON");
		return false;
	}
	return true;
}

/* ---- GET /healthz, /v1/info, /metrics; sessions ---- */

static char *make_info(const struct server *s)
{
	json_t *ops = json_array();
	const char *names[TIR_OP_COUNT];
	int n = 0;
	for (int op = 0; op < TIR_OP_COUNT; op++)
		if (op != TIR_OP_CONST && op != TIR_OP_INPUT && op != TIR_OP_LOAD) /* load: the client's */
			names[n++] = tir_op((enum tir_op)op)->name;
	for (int i = 1; i < n; i++) /* sorted, by insertion: a few dozen names */
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		json_array_append_new(ops, json_string(names[i]));
	json_t *dtypes = json_array();
	for (int d = 0; d < TIR_DTYPE_COUNT; d++)
		json_array_append_new(dtypes, json_string(tir_dtype_name((enum tir_dtype)d)));
	json_t *limits = json_pack("{sI sI sI sI sI sI sI sI sI sI sI sI sI sI sI sI sI sI}", "max_body", (json_int_t)s->o.max_body,
				   "max_batch_seconds", (json_int_t)s->o.max_batch_seconds,
				   "max_memory", (json_int_t)s->o.max_memory,
				   "max_inflight", (json_int_t)s->o.max_inflight,
				   "max_sessions", (json_int_t)s->o.max_sessions, "session_ttl",
				   (json_int_t)s->o.session_ttl, "blob_cache", (json_int_t)s->o.blob_cache,
				   "max_rank", (json_int_t)TIR_MAX_RANK, "max_elems", (json_int_t)TIR_MAX_ELEMS,
				   "max_text", (json_int_t)TIR_MAX_SOURCE, "max_values",
				   (json_int_t)SESSION_MAX_VALUES, "max_run_values", (json_int_t)RUN_MAX_VALUES,
				   "max_connections", (json_int_t)MAX_CONNECTIONS, "max_connections_per_address",
				   (json_int_t)s->o.max_connections_per_address, "header_timeout",
				   (json_int_t)s->o.header_timeout, "session_lease", (json_int_t)s->o.session_lease,
				   "max_exports_per_session", (json_int_t)SESSION_MAX_CAPS, "transfer_seconds",
				   (json_int_t)s->o.transfer_seconds);
	if (limits) { /* what a batch text may make, and the cache its graphs share */
		json_object_set_new(limits, "max_ops", json_integer(s->o.max_ops));
		json_object_set_new(limits, "graph_cache", json_integer((json_int_t)(s->graphs ? graph_store_cap(s->graphs) : 0)));
	}
	json_t *doc = json_pack("{ss ss si so so so si ss}", "name", "tir", "version", TIR_VERSION,
				"protocol", TIR_PROTOCOL, "ops", ops, "dtypes", dtypes, "limits", limits,
				"threads", tir_pool_threads(), "blas", tir_blas_info());
	if (doc && s->group.members)
		json_object_set_new(doc, "group", group_info(s));
	char *t = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return t;
}

/* The figures of tenant t alone (its name as the label). */
static void tenant_metrics(struct server *s, struct tir_str *out, int t, bool types)
{
	const struct tenant *tn = &s->tenants[t];
	uint64_t nb, bb;
	blob_store_tenant(s->blobs, t, &nb, &bb);
	static const char *const kinds[] = {"counter", "counter", "counter", "gauge", "gauge", "gauge", "gauge"};
	static const char *const names[] = {"tir_tenant_requests_total", "tir_tenant_bytes_in_total",
					    "tir_tenant_bytes_out_total", "tir_tenant_sessions", "tir_tenant_blobs",
					    "tir_tenant_blob_bytes", "tir_tenant_inflight_body_bytes"};
	uint64_t v[] = {atomic_load(&tn->requests), atomic_load(&tn->bytes_in), atomic_load(&tn->bytes_out),
			(uint64_t)session_store_tenant(s->sessions, t), nb, bb, atomic_load(&tn->reserved)};
	for (int i = 0; i < 7; i++) {
		if (types)
			tir_str_addf(out, "# TYPE %s %s\n", names[i], kinds[i]);
		tir_str_addf(out, "%s{tenant=\"%s\"} %llu\n", names[i], tn->name, (unsigned long long)v[i]);
	}
}

static enum MHD_Result get_metrics(struct server *s, struct MHD_Connection *c, struct req *r)
{
	struct tir_str out = {0};
	if (!s->open && !s->tenants[r->tenant].admin) {
		/* a tenant's own figures, nothing of the server's or the others':
		 * no count that another tenant's requests move */
		tenant_metrics(s, &out, r->tenant, true);
		if (out.oom) {
			tir_str_free(&out);
			return MHD_NO;
		}
		return reply(c, r, 200, "text/plain; version=0.0.4", out.s, out.n);
	}
	struct blob_stats bs;
	blob_store_stats(s->blobs, &bs);
	int queued, running;
	runq_counts(s, &queued, &running);
	struct gate_stats gs;
	gate_stats(s->gate, &gs);
	uint64_t exp_ttl, exp_lease;
	session_store_expired(s->sessions, &exp_ttl, &exp_lease);
	tir_str_addf(&out, "# TYPE tir_requests_total counter\n");
	pthread_mutex_lock(&s->mmu);
	for (int i = 0; i < 600; i++)
		if (s->by_status[i])
			tir_str_addf(&out, "tir_requests_total{status=\"%d\"} %llu\n", i,
				     (unsigned long long)s->by_status[i]);
	tir_str_addf(&out,
		     "# TYPE tir_requests_aborted_total counter\ntir_requests_aborted_total %llu\n"
		     "# TYPE tir_batches_cancelled_total counter\ntir_batches_cancelled_total %llu\n"
		     "# TYPE tir_bytes_in_total counter\ntir_bytes_in_total %llu\n"
		     "# TYPE tir_bytes_out_total counter\ntir_bytes_out_total %llu\n"
		     "# TYPE tir_kernel_seconds_total counter\ntir_kernel_seconds_total %.6f\n",
		     (unsigned long long)s->aborted, (unsigned long long)s->cancelled,
		     (unsigned long long)s->bytes_in,
		     (unsigned long long)s->bytes_out, s->kernel_s);
	pthread_mutex_unlock(&s->mmu);
	size_t kept_n, kept_b;
	session_store_kept(s->sessions, &kept_n, &kept_b);
	tir_str_addf(&out,
		     "# TYPE tir_sessions gauge\ntir_sessions %zu\n"
		     "# TYPE tir_sessions_created_total counter\ntir_sessions_created_total %llu\n"
		     "# TYPE tir_sessions_expired_total counter\n"
		     "tir_sessions_expired_total{reason=\"ttl\"} %llu\ntir_sessions_expired_total{reason=\"lease\"} %llu\n"
		     "# TYPE tir_blob_cache_hits_total counter\ntir_blob_cache_hits_total %llu\n"
		     "# TYPE tir_blob_cache_misses_total counter\ntir_blob_cache_misses_total %llu\n"
		     "# TYPE tir_blob_cache_bytes gauge\ntir_blob_cache_bytes %llu\n"
		     "# TYPE tir_blob_cache_blobs gauge\ntir_blob_cache_blobs %llu\n"
		     "# TYPE tir_blob_cache_evictions_total counter\ntir_blob_cache_evictions_total %llu\n"
		     "# TYPE tir_graph_cache_hits_total counter\ntir_graph_cache_hits_total %llu\n"
		     "# TYPE tir_graphs gauge\ntir_graphs %zu\n"
		     "# TYPE tir_graph_cache_bytes gauge\ntir_graph_cache_bytes %llu\n"
		     "# TYPE tir_session_values gauge\ntir_session_values %zu\n"
		     "# TYPE tir_session_value_bytes gauge\ntir_session_value_bytes %zu\n"
		     "# TYPE tir_tensor_bytes gauge\ntir_tensor_bytes %zu\n"
		     "# TYPE tir_memory_budget_bytes gauge\ntir_memory_budget_bytes %llu\n"
		     "# TYPE tir_inflight_body_bytes gauge\ntir_inflight_body_bytes %llu\n"
		     "# TYPE tir_batches_queued gauge\ntir_batches_queued %d\n"
		     "# TYPE tir_batches_running gauge\ntir_batches_running %d\n"
		     "# TYPE tir_connections gauge\ntir_connections %d\n"
		     "# TYPE tir_connections_refused_total counter\n"
		     "tir_connections_refused_total{reason=\"address\"} %llu\n"
		     "tir_connections_refused_total{reason=\"full\"} %llu\n"
		     "tir_connections_refused_total{reason=\"reserved\"} %llu\n"
		     "# TYPE tir_connections_timed_out_total counter\ntir_connections_timed_out_total %llu\n"
		     "# TYPE tir_connections_evicted_total counter\ntir_connections_evicted_total %llu\n"
		     "# TYPE tir_connections_busy gauge\ntir_connections_busy %d\n",
		     session_store_count(s->sessions),
		     (unsigned long long)session_store_created(s->sessions), (unsigned long long)exp_ttl,
		     (unsigned long long)exp_lease, (unsigned long long)bs.hits,
		     (unsigned long long)bs.misses, (unsigned long long)bs.bytes,
		     (unsigned long long)bs.count, (unsigned long long)bs.evictions,
		     (unsigned long long)graph_store_hits(s->graphs), graph_store_count(s->graphs),
		     (unsigned long long)graph_store_bytes(s->graphs), kept_n, kept_b, tir_mem_current(), (unsigned long long)s->o.max_memory,
		     (unsigned long long)atomic_load(&s->reserved), queued, running, gs.open,
		     (unsigned long long)gs.refused_address, (unsigned long long)gs.refused_full,
		     (unsigned long long)gs.refused_reserved, (unsigned long long)gs.timed_out,
		     (unsigned long long)gs.evicted, gs.busy);
	tir_str_addf(&out,
		     "# TYPE tir_idle_trims_total counter\ntir_idle_trims_total %llu\n"
		     "# TYPE tir_pressure_trims_total counter\ntir_pressure_trims_total %llu\n",
		     (unsigned long long)atomic_load(&s->trims),
		     (unsigned long long)atomic_load(&s->pressure_trims));
	size_t rv_target, rv_held, rv_taken;
	tir_mem_ready_stats(&rv_target, &rv_held, &rv_taken);
	tir_str_addf(&out,
		     "# TYPE tir_upload_reserve_bytes gauge\ntir_upload_reserve_bytes %zu\n"
		     "# TYPE tir_upload_reserve_ready_bytes gauge\ntir_upload_reserve_ready_bytes %zu\n"
		     "# TYPE tir_upload_reserve_taken_bytes_total counter\ntir_upload_reserve_taken_bytes_total %zu\n",
		     rv_target, rv_held, rv_taken);
	size_t caps_n;
	uint64_t caps_b;
	session_store_caps(s->sessions, &caps_n, &caps_b);
	pthread_mutex_lock(&s->mmu);
	tir_str_addf(&out,
		     "# TYPE tir_exports_issued_total counter\ntir_exports_issued_total %llu\n"
		     "# TYPE tir_exports_served_total counter\ntir_exports_served_total %llu\n"
		     "# TYPE tir_exports_open gauge\ntir_exports_open %zu\n"
		     "# TYPE tir_export_bytes gauge\ntir_export_bytes %llu\n"
		     "# TYPE tir_imports_total counter\n"
		     "tir_imports_total{result=\"ok\"} %llu\ntir_imports_total{result=\"failed\"} %llu\n"
		     "# TYPE tir_import_bytes_total counter\ntir_import_bytes_total %llu\n",
		     (unsigned long long)s->exports_issued, (unsigned long long)s->exports_served, caps_n,
		     (unsigned long long)caps_b, (unsigned long long)s->imports_ok,
		     (unsigned long long)s->imports_failed, (unsigned long long)s->import_bytes);
	if (s->group.api)
		tir_str_addf(&out,
			     "# TYPE tir_group_imports_total counter\ntir_group_imports_total{via=\"mpi\"} %llu\n"
			     "# TYPE tir_group_import_bytes_total counter\ntir_group_import_bytes_total{via=\"mpi\"} %llu\n"
			     "# TYPE tir_group_exports_served_total counter\n"
			     "tir_group_exports_served_total{via=\"mpi\"} %llu\n"
			     "# TYPE tir_group_export_bytes_total counter\n"
			     "tir_group_export_bytes_total{via=\"mpi\"} %llu\n",
			     (unsigned long long)s->group.imports, (unsigned long long)s->group.import_bytes,
			     (unsigned long long)s->group.served, (unsigned long long)s->group.served_bytes);
	if (s->group.api)
		tir_str_addf(&out,
			     "# TYPE tir_group_allreduce_total counter\n"
			     "tir_group_allreduce_total{result=\"ok\"} %llu\n"
			     "tir_group_allreduce_total{result=\"failed\"} %llu\n"
			     "# TYPE tir_group_allreduce_bytes_total counter\ntir_group_allreduce_bytes_total %llu\n"
			     "# TYPE tir_group_allreduce_data_seconds_total counter\n"
			     "tir_group_allreduce_data_seconds_total %.6f\n"
			     "# TYPE tir_group_allreduce_waiting gauge\ntir_group_allreduce_waiting %d\n",
			     (unsigned long long)s->group.colls, (unsigned long long)s->group.colls_failed,
			     (unsigned long long)s->group.coll_bytes, s->group.coll_data_s,
			     atomic_load(&s->group.coll_waiting));
	pthread_mutex_unlock(&s->mmu);
	for (int t = 0; t < s->ntenants && s->o.tenants; t++)
		tenant_metrics(s, &out, t, t == 0);
	if (out.oom) {
		tir_str_free(&out);
		return MHD_NO;
	}
	return reply(c, r, 200, "text/plain; version=0.0.4", out.s, out.n);
}

/* The body of POST /v1/sessions: nothing, or {"lease": true|false}.
 * 0 with *lease, or -1 with msg filled. */
static int session_body(const struct req *r, bool *lease, char *msg, size_t n)
{
	*lease = false;
	if (!r->len)
		return 0;
	json_error_t jerr;
	json_t *doc = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	const char *k;
	json_t *v;
	int rc = 0;
	if (!json_is_object(doc))
		rc = -1, snprintf(msg, n, "body: %s", doc ? "not a JSON object" : jerr.text);
	json_object_foreach(doc, k, v) {
		if (!rc && strcmp(k, "lease"))
			rc = -1, snprintf(msg, n, "body: an unknown field '%.64s' (a session takes \"lease\")", k);
		else if (!rc && !json_is_boolean(v))
			rc = -1, snprintf(msg, n, "lease: not true or false");
		else if (!rc)
			*lease = json_is_true(v);
	}
	json_decref(doc);
	return rc;
}

static enum MHD_Result post_session(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char id[SESSION_ID_HEX + 1], msg[200];
	const struct tenant *t = &s->tenants[r->tenant];
	bool lease;
	if (session_body(r, &lease, msg, sizeof msg))
		return reply_error(c, r, 400, "bad_request", NULL, "%s", msg);
	int rc = session_create(s->sessions, r->tenant, t->max_sessions, lease ? s->o.session_lease : 0, id);
	if (rc == -1 || rc == -3)
		r->retry_after = RETRY_AFTER;
	if (rc == -1)
		return reply_error(c, r, 503, "busy", NULL,
				   "%d sessions are open, the most this server keeps (--max-sessions)",
				   s->o.max_sessions);
	if (rc == -3)
		return reply_error(c, r, 503, "busy", NULL,
				   "tenant %s has %d sessions open, the most it may (--tokens)", t->name,
				   t->max_sessions);
	if (rc)
		return reply_error(c, r, 500, "internal", NULL, "cannot make a session (out of memory)");
	json_t *doc = json_pack("{ss si}", "session", id, "ttl", s->o.session_ttl);
	if (lease)
		json_object_set_new(doc, "lease", json_integer(s->o.session_lease));
	return reply_json(c, r, 201, doc);
}

/* POST /v1/sessions/ID/renew: its client is there (the lease, not the TTL). */
static enum MHD_Result renew_session(struct server *s, struct MHD_Connection *c, struct req *r)
{
	int lease = 0;
	if (!r->id_ok || !session_renew(s->sessions, r->id, r->tenant, &lease))
		return reply_error(c, r, 404, "not_found", NULL, "no such session (expired or deleted?)");
	json_t *doc = json_pack("{ss}", "session", r->id);
	if (lease)
		json_object_set_new(doc, "lease", json_integer(lease));
	return reply_json(c, r, 200, doc);
}

static enum MHD_Result delete_session(struct server *s, struct MHD_Connection *c, struct req *r)
{
	if (!r->id_ok || !session_delete(s->sessions, r->id, r->tenant))
		return reply_error(c, r, 404, "not_found", NULL, "no such session");
	return reply(c, r, 204, NULL, NULL, 0);
}

/* ---- PUT /v1/blobs/SHA256 ---- */

int blob_keep(struct server *s, struct upload *up, const char *name, int tenant, const char **code,
	      char *msg, size_t n, uint64_t *bytes, bool *retry)
{
	struct tir_tensor t = {0};
	bool held = false;
	*retry = false;
	*code = "bad_request";
	int st = upload_finish(up, &held, &t, code, msg, n);
	if (st)
		return st;
	*code = "busy";
	if (runq_stopping(s)) {
		/* nothing will run here any more: storing it would only evict
		 * blobs that batches already under way were sent */
		tir_tensor_release(&t);
		snprintf(msg, n, "the server is stopping");
		return 503;
	}
	/* "bytes": the frame's, as the blob cache counts them */
	*bytes = upload_frame_bytes(up);
	/* the bytes are checked: the tenant holds the blob (stored now, or
	 * there already); 200 only when it held it before it sent them */
	int rc = held ? blob_grant(s->blobs, name, tenant) : blob_put(s->blobs, name, tenant, &t, *bytes);
	tir_tensor_release(&t);
	if (rc < 0 && held) { /* checked, but evicted meanwhile: it is to be sent again */
		*retry = true;
		snprintf(msg, n, "the blob was evicted while it was checked; send it again");
		return 503;
	}
	if (rc < 0) {
		snprintf(msg, n, "no memory to keep the blob now");
		return 503;
	}
	return rc ? 201 : 200;
}

static enum MHD_Result put_blob(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char msg[600];
	const char *code;
	uint64_t bytes = 0;
	bool retry;
	int st = blob_keep(s, r->up, r->id, r->tenant, &code, msg, sizeof msg, &bytes, &retry);
	if (st / 100 != 2) {
		if (retry)
			r->retry_after = RETRY_AFTER;
		return reply_error(c, r, st, code, NULL, "%s", msg);
	}
	return reply_json(c, r, st, json_pack("{ss sI}", "blob", r->id, "bytes", (json_int_t)bytes));
}

/* ---- the callbacks ---- */

static enum MHD_Result finish(struct server *s, struct MHD_Connection *c, struct req *r)
{
	if (r->over)
		return reply_error(c, r, 413, "too_large", NULL, "body: over the limit of %llu bytes (--max-body)",
				   (unsigned long long)s->o.max_body);
	if (r->busy)
		return reply_busy(s, c, r, r->in);
	switch (r->route) {
	case R_HEALTHZ: {
		char *ok = strdup("ok");
		return ok ? reply(c, r, 200, "text/plain", ok, 2) : MHD_NO;
	}
	case R_INFO: {
		char *t = strdup(s->info);
		return t ? reply(c, r, 200, "application/json", t, strlen(t)) : MHD_NO;
	}
	case R_METRICS:
		return get_metrics(s, c, r);
	case R_SESSIONS:
		return post_session(s, c, r);
	case R_SESSION:
		return delete_session(s, c, r);
	case R_RENEW:
		return renew_session(s, c, r);
	case R_BLOB:
		return put_blob(s, c, r);
	case R_BLOBS:
		return bundle_finish(s, c, r);
	case R_EXPORT:
		return xfer_export(s, c, r);
	case R_IMPORT:
		return xfer_import(s, c, r);
	case R_ALLREDUCE:
		return coll_all_reduce(s, c, r);
	case R_EXPORTS:
		return xfer_serve(s, c, r);
	case R_RUN: {
		enum MHD_Result answer;
		return run_body_fits(s, c, r, &answer) ? runq_post(s, c, r) : answer;
	}
	default:
		return MHD_NO;
	}
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct req *r = *con_cls;
	if (!r) {
		r = calloc(1, sizeof *r);
		if (!r)
			return MHD_NO;
		atomic_fetch_add(&s->inflight, 1);
		*con_cls = r;
		gate_request(c, true);
		r->t0 = tir_now_ms();
		snprintf(r->method, sizeof r->method, "%s", method);
		return begin(s, c, r, url, method);
	}
	if (*upload_size) {
		if (!r->status)
			absorb(s, r, upload, *upload_size);
		else
			r->in += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->queued) /* resumed: answered by a compute thread, or not at all */
		return r->status ? MHD_YES : MHD_NO;
	if (r->status) /* answered when the headers came */
		return MHD_YES;
	enum MHD_Result ok = finish(s, c, r);
	if (!r->queued) /* answered here: sent once this returns */
		req_let_go(s, r);
	return ok;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
		 enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct req *r = *con_cls;
	if (!r)
		return;
	*con_cls = NULL;
	bool sent = r->status && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && r->gone == KEPT;
	pthread_mutex_lock(&s->mmu);
	if (sent && r->status < 600)
		s->by_status[r->status]++;
	else
		s->aborted++;
	s->cancelled += r->gone != KEPT;
	s->bytes_in += r->in;
	s->bytes_out += sent ? r->out : 0;
	pthread_mutex_unlock(&s->mmu);
	if (r->authed) {
		struct tenant *tn = &s->tenants[r->tenant];
		atomic_fetch_add(&tn->requests, 1);
		atomic_fetch_add(&tn->bytes_in, r->in);
		atomic_fetch_add(&tn->bytes_out, sent ? r->out : 0);
	}
	atomic_fetch_add(&s->activity, 1);
	if (s->o.log) {
		static const char *const why[] = {
			[MHD_REQUEST_TERMINATED_WITH_ERROR] = "an error",
			[MHD_REQUEST_TERMINATED_TIMEOUT_REACHED] = "a timeout",
			[MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN] = "the server stopping",
			[MHD_REQUEST_TERMINATED_READ_ERROR] = "a read error",
			[MHD_REQUEST_TERMINATED_CLIENT_ABORT] = "the client going away",
		};
		char line[320], st[8];
		/* 499: nginx's "client closed request", for a batch dropped or stopped */
		snprintf(st, sizeof st, "%d", r->gone != KEPT ? 499 : r->status);
		int n = snprintf(line, sizeof line, "%s %s %s %llu %llu %.2fms", r->method, r->path,
				 r->status ? st : "-", (unsigned long long)r->in,
				 (unsigned long long)(sent ? r->out : 0), tir_now_ms() - r->t0);
		if (n < 0 || (size_t)n >= sizeof line)
			n = 0;
		if (r->gone == DROPPED)
			snprintf(line + n, sizeof line - (size_t)n,
				 " (the client went away: its batch was dropped before it ran)");
		else if (r->gone == STOPPED)
			snprintf(line + n, sizeof line - (size_t)n,
				 " (the client went away: its batch was stopped after %.0f ms)", r->ran_ms);
		else if (!sent && (unsigned)toe < sizeof why / sizeof *why && why[toe])
			snprintf(line + n, sizeof line - (size_t)n, " (cut short by %s)", why[toe]);
		s->o.log(s->o.log_ud, line);
	}
	req_let_go(s, r);
	free(r);
	gate_request(c, false);
	atomic_fetch_sub(&s->inflight, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct server *s = cls;
	char line[512];
	int n = snprintf(line, sizeof line, "microhttpd: ");
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	size_t len = strlen(line);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = 0;
	if (s->o.log)
		s->o.log(s->o.log_ud, line);
}

/* ---- starting and stopping ---- */

/* A listening socket on host:port; its port in *bound. */
static int listen_on(const char *host, int port, int *family, int *bound, struct tir_err *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int gai = getaddrinfo(host, ps, &hints, &res);
	if (gai)
		return tir_errf(err, TIR_ENET, NULL, "cannot listen on %s: %s", host, gai_strerror(gai));
	int fd = -1, e = 0;
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 511)) {
			e = errno;
			close(fd);
			fd = -1;
			continue;
		}
		*family = a->ai_family;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return tir_errf(err, TIR_ENET, NULL, "cannot listen on %s port %d: %s", host, port,
				strerror(e));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						: ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* Three quarters of the memory this process may use when it starts: what
 * the machine has available (/proc/meminfo's MemAvailable: free, and the
 * caches the kernel can drop; not its total, much of which other
 * processes may hold), or its cgroup's limit (v2 memory.max, v1
 * memory.limit_in_bytes) when lower. */
static uint64_t default_max_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
	uint64_t mem = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : (uint64_t)8 << 30;
	FILE *mi = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb;
	while (mi && fgets(line, sizeof line, mi))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1 && kb > 0 && kb * 1024 < mem)
			mem = kb * 1024;
	if (mi)
		fclose(mi);
	static const char *const limits[] = {"/sys/fs/cgroup/memory.max",
					     "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(limits[i], "r");
		unsigned long long v;
		if (f && fscanf(f, "%llu", &v) == 1 && v > 0 && v < mem)
			mem = v;
		if (f)
			fclose(f);
	}
	return mem / 4 * 3;
}

/* A tenant's shares: of sessions, of --max-memory, of the compute
 * threads (running batches).  Its tokens line sets them; without, one
 * tenant has all, and each of several half of the memory and of the
 * running batches and an equal part of the sessions (at least 1 each), so
 * that no tenant alone fills the server. */
static void tenant_shares(struct server *s, struct tenant *t, const struct tir_serve_tenant *in, int n)
{
	int sessions = n > 1 ? s->o.max_sessions / n : s->o.max_sessions;
	t->max_sessions = in && in->max_sessions > 0 ? in->max_sessions : sessions > 0 ? sessions : 1;
	uint64_t mem = n > 1 ? s->o.max_memory / 2 : s->o.max_memory;
	t->max_memory = !in || !in->max_memory ? mem : in->max_memory < s->o.max_memory ? in->max_memory
										      : s->o.max_memory;
	int batches = n > 1 ? s->o.max_sessions / 2 : 0;
	t->max_batches = in && in->max_batches > 0 ? in->max_batches : n > 1 && batches < 1 ? 1 : batches;
	atomic_init(&t->mem, 0);
}

/* The tenants: --tokens's, or one of --token, or one open to all. */
static int tenants_make(struct server *s, struct tir_err *err)
{
	const struct tir_serve_tenant *in = s->o.tenants;
	int n = in ? s->o.ntenants : 1;
	if (n < 1 || n > TIR_MAX_TENANTS)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "--tokens: %d tenants; a server has 1 to %d", n,
				TIR_MAX_TENANTS);
	s->tenants = calloc((size_t)n, sizeof *s->tenants);
	if (!s->tenants)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	s->ntenants = n;
	s->open = !in && !s->o.token;
	for (int i = 0; i < n; i++) {
		struct tenant *t = &s->tenants[i];
		const char *name = in ? in[i].name : s->open ? "anyone" : "token";
		const char *tok = in ? in[i].token : s->o.token;
		snprintf(t->name, sizeof t->name, "%s", name);
		if (tok)
			tir_sha256_hex(tok, strlen(tok), t->token_sha);
		t->max_inflight = in && in[i].max_inflight > 0 ? in[i].max_inflight : s->o.max_inflight;
		tenant_shares(s, t, in ? &in[i] : NULL, n);
		atomic_init(&t->reserved, 0);
		/* --token's one tenant is the server's only one: all it sees is its own */
		t->admin = in ? in[i].admin : true;
		for (int j = 0; j < i; j++)
			if (!strcmp(s->tenants[j].token_sha, t->token_sha)) {
				tir_errf(err, TIR_EUNSUPPORTED, NULL, "--tokens: tenants %s and %s have the same token",
					 s->tenants[j].name, t->name);
				free(s->tenants);
				s->tenants = NULL;
				return -err->code;
			}
	}
	return 0;
}

static void server_free(struct server *s)
{
	tir_mem_ready_stop();
	group_finish(s);
	gate_free(s->gate);
	blob_store_free(s->blobs);
	graph_store_free(s->graphs);
	session_store_free(s->sessions);
	free(s->info);
	free(s->tenants);
	peers_free(s);
	free(s->tls_cert);
	if (s->tls_key) /* the key does not outlive the server in freed memory */
		explicit_bzero(s->tls_key, strlen(s->tls_key));
	free(s->tls_key);
	runq_destroy(s);
	pthread_mutex_destroy(&s->mmu);
	free(s);
	curl_global_cleanup(); /* (counted: once per init) */
}

int tir_serve(const struct tir_serve_opts *o, volatile sig_atomic_t *stop, struct tir_err *err)
{
	struct server *s = calloc(1, sizeof *s);
	if (!s)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	s->o = *o;
	if (!s->o.host)
		s->o.host = "127.0.0.1";
	if (!s->o.max_body)
		s->o.max_body = DEFAULT_MAX_BODY;
	if (s->o.max_sessions <= 0)
		s->o.max_sessions = DEFAULT_MAX_SESSIONS;
	if (s->o.session_ttl <= 0)
		s->o.session_ttl = DEFAULT_TTL;
	if (s->o.session_lease <= 0)
		s->o.session_lease = DEFAULT_LEASE;
	if (s->o.max_connections_per_address <= 0)
		s->o.max_connections_per_address = DEFAULT_PER_ADDRESS;
	if (s->o.header_timeout <= 0)
		s->o.header_timeout = DEFAULT_HEADER_TIMEOUT;
	if (!s->o.blob_cache)
		s->o.blob_cache = DEFAULT_BLOB_CACHE;
	if (!s->o.max_inflight) {
		uint64_t twice = s->o.max_body > UINT64_MAX / 2 ? UINT64_MAX : 2 * s->o.max_body;
		s->o.max_inflight = twice > s->o.blob_cache ? twice : s->o.blob_cache;
	}
	if (!s->o.max_memory)
		s->o.max_memory = default_max_memory();
	if (s->o.max_ops <= 0)
		s->o.max_ops = DEFAULT_MAX_OPS;
	if (!s->o.max_batch_seconds)
		s->o.max_batch_seconds = DEFAULT_MAX_BATCH_SECONDS;
	else if (s->o.max_batch_seconds < 0)
		s->o.max_batch_seconds = 0; /* no limit */
	if (s->o.transfer_seconds <= 0)
		s->o.transfer_seconds = TRANSFER_SECONDS;
	if (tenants_make(s, err)) {
		free(s);
		return -err->code;
	}
	if (s->o.tls_cert || s->o.tls_key) {
		int rc = !s->o.tls_cert || !s->o.tls_key
				 ? tir_errf(err, TIR_EUNSUPPORTED, NULL, "--tls-cert and --tls-key go together")
				 : tir_tls_load(s->o.tls_cert, s->o.tls_key, &s->tls_cert, &s->tls_key, err);
		if (rc) {
			free(s->tenants);
			free(s);
			return rc;
		}
	}
	/* tensors of 4 MiB or more always from mmap, so that what is freed
	 * goes back: past glibc's default threshold, which climbs to 32 MiB
	 * once it frees such a buffer, they came from the threads' arenas,
	 * whose free tops malloc_trim keeps (the idle trim gave back little,
	 * and an idle server held 2 to 5 times its tensors: tests/net/soak.py) */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	/* imports fetch with libcurl from the compute threads: its global
	 * state is made now, before any thread (server_free undoes it) */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	runq_init(s);
	pthread_mutex_init(&s->mmu, NULL);
	tir_set_threads(s->o.threads);
	s->blobs = blob_store_new(s->o.blob_cache);
	s->graphs = graph_store_new(MAX_GRAPHS, s->o.graph_cache ? s->o.graph_cache : DEFAULT_GRAPH_CACHE);
	s->sessions = session_store_new(s->o.max_sessions, s->o.session_ttl);
	if (s->sessions) /* a lease-less session idle a lease's time gives its slot to its tenant's next */
		session_store_set_reclaim(s->sessions, s->o.session_lease);
	s->info = make_info(s);
	if (!s->blobs || !s->graphs || !s->sessions || !s->info) {
		server_free(s);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	/* under mpirun: one rank of a group, on --port + its rank */
	int want_port = s->o.port;
	if (group_wanted()) {
		int rc = group_init(s, err);
		if (rc) {
			server_free(s);
			return rc;
		}
		if (s->o.port == 0 || s->o.port + s->group.rank > 65535) {
			group_join(s, NULL, err);
			group_finish(s);
			server_free(s);
			return tir_errf(err, TIR_EUNSUPPORTED, NULL,
					"rank %d of a group of %d (mpirun): %s", s->group.rank, s->group.size,
					s->o.port ? "--port + rank passes 65535"
						  : "--port 0 is not allowed in a group: rank r listens on --port + r");
		}
		want_port = s->o.port + s->group.rank;
	}
	int family = AF_INET, port = 0;
	int fd = listen_on(s->o.host, want_port, &family, &port, err);
	if (s->group.api) {
		char addr[GROUP_ADDR], host[256];
		const char *h = s->o.host;
		/* a wildcard address is no address for the others to reach */
		if ((!strcmp(h, "0.0.0.0") || !strcmp(h, "::")) && !gethostname(host, sizeof host)) {
			host[sizeof host - 1] = 0;
			h = host;
		}
		snprintf(addr, sizeof addr, "%s%s%s:%d", strchr(h, ':') ? "[" : "", h, strchr(h, ':') ? "]" : "", port);
		struct tir_err jerr = {0};
		int rc = group_join(s, fd < 0 ? NULL : addr, fd < 0 ? &jerr : err);
		if (fd >= 0 && rc) {
			close(fd);
			fd = rc;
		}
		if (fd < 0)
			group_finish(s);
		free(s->info);
		s->info = NULL;
		if (fd >= 0 && !(s->info = make_info(s))) {
			close(fd);
			group_finish(s);
			server_free(s);
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		}
	}
	if (fd < 0) {
		server_free(s);
		return fd;
	}
	int prc = peers_init(s, err); /* (after the group: its members are peers) */
	if (prc) {
		close(fd);
		server_free(s);
		return prc;
	}
	if (!(s->gate = gate_new(s, fd))) {
		close(fd);
		server_free(s);
		return tir_errf(err, TIR_ENOMEM, NULL, "cannot watch the listening socket (out of resources)");
	}
	if (!runq_start(s)) {
		server_free(s);
		return tir_errf(err, TIR_ENOMEM, NULL, "cannot ready the compute threads (out of memory)");
	}
	/* the gate (gate.c) accepts the connections and hands them over; the
	 * connection limit is the gate's (libmicrohttpd's, per thread of its
	 * pool, is set past it: a connection it refused after it was handed
	 * over would be closed without a word) */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | (s->tls_cert ? MHD_USE_TLS : 0);
	struct MHD_OptionItem tls[] = {
		{MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
		{MHD_OPTION_END, 0, NULL},
	};
	struct MHD_Daemon *d = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)POOL_THREADS, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)(MAX_CONNECTIONS * POOL_THREADS), MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
		MHD_OPTION_NOTIFY_COMPLETED, done, s, MHD_OPTION_NOTIFY_CONNECTION, gate_notify, s->gate,
		MHD_OPTION_ARRAY, s->tls_cert ? tls : tls + 2, MHD_OPTION_END);
	if (!d || !gate_start(s->gate, d)) {
		if (d)
			MHD_stop_daemon(d);
		runq_stop(s);
		server_free(s);
		return tir_errf(err, TIR_ENET, NULL, "cannot start the HTTP%s server (libmicrohttpd%s)",
				o->tls_cert ? "S" : "",
				o->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES
					? " was built without TLS" : "");
	}
	tir_mem_set_limit((size_t)s->o.max_memory); /* every tensor of this process, from now on */
	/* pages kept faulted in for uploads (tensor.c): the first upload into
	 * a fresh server is as fast as later ones; held against the budget */
	if (s->o.upload_reserve >= 0) {
		uint64_t want = s->o.upload_reserve ? (uint64_t)s->o.upload_reserve : DEFAULT_UPLOAD_RESERVE;
		if (!s->o.upload_reserve && want > s->o.max_memory / 4)
			want = s->o.max_memory / 4;
		if (want > s->o.max_memory)
			want = s->o.max_memory;
		tir_mem_ready_start((size_t)want);
	}
	if (o->bound_port)
		*o->bound_port = port;
	if (s->group.api && o->group_rank)
		*o->group_rank = s->group.rank;
	if (s->group.api && o->group_size)
		*o->group_size = s->group.size;
	if (o->listening)
		o->listening(o->log_ud, port);
	/* until told to stop: expire idle sessions, and once the server is
	 * idle give back the memory the last requests used */
	uint64_t seen = 0, trimmed = 0;
	double idle_since = tir_now_ms(), swept = tir_now_ms(), squeezed = 0;
	int statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	while (!*stop) {
		struct timespec ts = {0, TICK_MS * 1000 * 1000};
		nanosleep(&ts, NULL);
		runq_watch(s);
		gate_sweep(s->gate);
		double now = tir_now_ms();
		uint64_t act = atomic_load(&s->activity);
		if (act != seen) {
			seen = act;
			idle_since = now;
		}
		if (now - swept > 1000) {
			session_sweep(s->sessions);
			swept = now;
		}
		if (seen != trimmed && now - idle_since > 500 && !runq_pending(s)) {
			tir_release_caches();
			malloc_trim(0);
			trimmed = seen;
			atomic_fetch_add(&s->trims, 1);
		}
		/* under load, past --max-memory and the server's own: the
		 * buffers kept for reuse go (they are within the budget, but
		 * the allocator's free memory is not), and (once a second at
		 * most) what the allocator keeps of freed memory */
		if (s->o.max_memory && resident_bytes(statm) > s->o.max_memory + OWN_MAX) {
			tir_release_caches();
			if (now - squeezed > PRESSURE_TRIM_MS && resident_bytes(statm) > s->o.max_memory + OWN_MAX) {
				malloc_trim(0);
				squeezed = now;
			}
			atomic_fetch_add(&s->pressure_trims, 1);
		}
	}
	if (statm >= 0)
		close(statm);
	/* the batches queued run and are answered (the log says so at once:
	 * one may run for long); then the requests under way get a few
	 * seconds to finish (no connection may be suspended when the daemon
	 * stops) */
	if (s->o.log) {
		int queued, running;
		runq_counts(s, &queued, &running);
		char line[120];
		snprintf(line, sizeof line, "tir serve: stopping once %d batch%s received %s answered",
			 queued + running, queued + running == 1 ? "" : "es",
			 queued + running == 1 ? "is" : "are");
		s->o.log(s->o.log_ud, line);
	}
	runq_stop(s);
	for (int i = 0; i < 100 && atomic_load(&s->inflight); i++) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	gate_stop(s->gate);
	MHD_stop_daemon(d);
	group_finish(s);
	server_free(s);
	tir_mem_set_limit(0);
	return 0;
}
