/*
 * xfer.c — server to server (docs/protocol.md, "Server to server"): a
 * value that one server's session holds goes to another server's session
 * directly, never through the client.  The client asks the source for a
 * capability naming the value (POST /v1/sessions/ID/export), and hands it
 * to the receiver (POST /v1/sessions/ID/import), which fetches the value
 * itself (GET /v1/exports/CAP on the source, with libcurl) and checks it
 * as it checks an upload (upload.c: the chunk list must hash to the blob
 * name the client expects, each chunk to its entry) before its session
 * keeps it.
 *
 * The capabilities are the session store's (store.c).  An export hashes
 * the value and an import waits on the network, so both run on a compute
 * thread (runq.c's tasks, in their session's order) with the connection
 * suspended: a slow source holds one compute thread, never libmicrohttpd's.
 * A GET of a capability is answered at once, its body sent from the
 * tensor itself.
 */
#include "batch.h"
#include "serve.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONNECT_MS 5000L                /* to connect to a source, at most */
#define ERR_BODY_MAX (16 << 10)         /* of a source's error reply, what is read */
#define FROM_MAX 300                    /* the length of a source's address */
#define TOKEN_MAX 4096

static const unsigned char zero8[8];

/* The JSON object of an export's or an import's body, or NULL with the
 * 400 answered in *ok. */
static json_t *body_object(struct MHD_Connection *c, struct req *r, enum MHD_Result *ok)
{
	json_error_t jerr;
	json_t *doc = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(doc)) {
		*ok = doc ? reply_error(c, r, 400, "bad_request", NULL, "body: not a JSON object")
			  : reply_error(c, r, 400, "bad_request", NULL, "body: not JSON: %s (byte %d)", jerr.text,
					jerr.position);
		json_decref(doc);
		return NULL;
	}
	return doc;
}

static void count(struct server *s, uint64_t *counter, uint64_t n)
{
	pthread_mutex_lock(&s->mmu);
	*counter += n;
	pthread_mutex_unlock(&s->mmu);
}

/* ---- POST /v1/sessions/ID/export ---- */

struct export_job {
	struct session *ss;            /* borrowed: the job's reference */
	char key[SESSION_KEY_MAX + 1];
	struct tir_tensor t;           /* the value (a reference) */
	unsigned char *list;           /* its chunk list, when an export before hashed it, or NULL */
	size_t listlen;
	char blob[TIR_SHA_HEX + 1];
};

static void export_done(void *arg)
{
	struct export_job *e = arg;
	tir_tensor_release(&e->t);
	free(e->list);
	free(e);
}

/* On a compute thread: the value's chunk list (its blob name: hashed
 * once per value kept, noted with it), then the capability. */
static enum MHD_Result export_task(struct server *s, struct MHD_Connection *c, struct req *r, void *arg,
				   volatile sig_atomic_t *cancel)
{
	struct export_job *e = arg;
	if (runq_stopping(s))
		return reply_error(c, r, 503, "busy", NULL, "the server is stopping");
	struct cap_value v = {0};
	struct tir_err err = {0};
	const struct tir_tensor *t = &e->t;
	if (!tir_tensor_is_contiguous(t)) { /* the GET sends the data from one piece */
		if (tir_tensor_convert(t, t->dtype, &v.t, &err))
			return reply_error(c, r, 503, "busy", NULL, "no memory to export the value now: %s", err.msg);
	} else {
		tir_tensor_ref(&v.t, t);
	}
	if (e->list) {
		v.list = e->list;
		v.listlen = e->listlen;
		memcpy(v.blob, e->blob, sizeof v.blob);
		e->list = NULL;
	} else if (tir_blob_chunks(&v.t, v.blob, &v.list, &v.listlen, &err)) {
		cap_value_release(&v);
		return reply_error(c, r, 503, "busy", NULL, "no memory to export the value now");
	} else {
		session_value_note(s->sessions, e->ss, e->key, t, v.list, v.listlen, v.blob);
	}
	v.frame_bytes = tir_frame_size(&v.t);
	json_int_t bytes = (json_int_t)v.frame_bytes;
	char blob[TIR_SHA_HEX + 1], cap[TIR_SHA_HEX + 1];
	memcpy(blob, v.blob, sizeof blob);
	int rc = session_cap_issue(s->sessions, e->ss, &v, cap);
	if (rc == -1)
		return reply_error(c, r, 429, "too_many", NULL,
				   "this session has %d capabilities not yet used, the most it may have "
				   "(max_exports_per_session); one goes when it is used or the session ends",
				   SESSION_MAX_CAPS);
	if (rc == -3)
		return reply_error(c, r, 404, "not_found", NULL, "no such session (expired or deleted?)");
	if (rc)
		return reply_error(c, r, 503, "busy", NULL,
				   "no memory for a capability now (--max-memory); try again shortly");
	count(s, &s->exports_issued, 1);
	enum MHD_Result ok = reply_json(c, r, 200, json_pack("{ss ss sI}", "cap", cap, "blob", blob, "bytes", bytes));
	explicit_bzero(cap, sizeof cap);
	return ok;
}

enum MHD_Result xfer_export(struct server *s, struct MHD_Connection *c, struct req *r)
{
	enum MHD_Result ok;
	json_t *doc = body_object(c, r, &ok);
	if (!doc)
		return ok;
	const char *k, *why = NULL;
	char key[SESSION_KEY_MAX + 1] = "", unknown[65] = "";
	json_t *v;
	json_object_foreach(doc, k, v) {
		const char *str = json_string_value(v);
		if (strcmp(k, "key"))
			snprintf(unknown, sizeof unknown, "%s", k);
		else if (!str || !session_key_valid(str))
			why = "key: not a key (1-64 of A-Z a-z 0-9 _ . -)";
		else
			snprintf(key, sizeof key, "%s", str);
	}
	json_decref(doc);
	if (unknown[0])
		return reply_error(c, r, 400, "bad_request", NULL,
				   "body: an unknown field '%s' (an export takes \"key\")", unknown);
	if (why || !key[0])
		return reply_error(c, r, 400, "bad_request", NULL, "%s",
				   why ? why : "key: missing (the key of a value the session keeps)");
	struct session *ss = r->id_ok ? session_get(s->sessions, r->id, r->tenant) : NULL;
	if (!ss)
		return reply_error(c, r, 404, "not_found", NULL, "no such session (expired or deleted?)");
	struct export_job *e = calloc(1, sizeof *e);
	if (!e || !session_value_chunks(s->sessions, ss, key, &e->t, &e->list, &e->listlen, e->blob)) {
		ok = e ? reply_error(c, r, 404, "not_found", NULL, "key: this session has no value '%s'", key)
		       : reply_error(c, r, 500, "internal", NULL, "out of memory");
		free(e);
		session_unref(s->sessions, ss);
		return ok;
	}
	snprintf(e->key, sizeof e->key, "%s", key);
	e->ss = ss;
	return runq_post_task(s, c, r, ss, export_task, export_done, e);
}

/* ---- GET /v1/exports/CAP ---- */

struct export_out {
	struct cap_value v;
	unsigned char head[TIR_FRAME_HEAD_MAX];
};

static void export_out_free(void *cls)
{
	struct export_out *o = cls;
	cap_value_release(&o->v);
	free(o);
}

enum MHD_Result xfer_serve(struct server *s, struct MHD_Connection *c, struct req *r)
{
	/* a capability of another form is not looked up: none such can be */
	struct export_out *o = calloc(1, sizeof *o);
	if (!o)
		return reply_error(c, r, 503, "busy", NULL, "no memory now");
	if (!r->id_ok || !session_cap_take(s->sessions, r->id, r->tenant, &o->v)) {
		free(o);
		return reply_error(c, r, 404, "not_found", NULL, "no such capability (used, expired or never issued)");
	}
	/* the body a PUT of the blob carries: its chunk list, then the frame,
	 * the data from the tensor (held until the answer is done with) */
	size_t data = (size_t)tir_tensor_numel(&o->v.t) * tir_dtype_size(o->v.t.dtype);
	size_t hl = tir_frame_head(&o->v.t, o->head);
	size_t pad = (size_t)o->v.frame_bytes - hl - data;
	struct MHD_IoVec iov[4];
	unsigned n = 0;
	iov[n++] = (struct MHD_IoVec){o->v.list, o->v.listlen};
	iov[n++] = (struct MHD_IoVec){o->head, hl};
	if (data)
		iov[n++] = (struct MHD_IoVec){tir_tensor_data(&o->v.t), data};
	if (pad)
		iov[n++] = (struct MHD_IoVec){zero8, pad};
	size_t total = o->v.listlen + (size_t)o->v.frame_bytes;
	struct MHD_Response *resp = MHD_create_response_from_iovec(iov, n, export_out_free, o);
	if (!resp) {
		export_out_free(o);
		return reply_error(c, r, 503, "busy", NULL, "no memory now (the capability is used)");
	}
	count(s, &s->exports_served, 1);
	return reply_with(c, r, 200, "application/octet-stream", resp, total);
}

/* ---- POST /v1/sessions/ID/import ---- */

struct import_job {
	struct session *ss;            /* borrowed: the job's reference */
	char key[SESSION_KEY_MAX + 1];
	char from[FROM_MAX + 16];      /* scheme://host:port, as the messages say it */
	char cap[TIR_SHA_HEX + 1];
	char blob[TIR_SHA_HEX + 1];
	char *token;                   /* for the source, or NULL */
	int rank;                      /* the source's rank in this server's group (over MPI), or -1 */
	char group[33];                /* the group the client says both are of */
};

static void import_done(void *arg)
{
	struct import_job *im = arg;
	if (im->token) {
		explicit_bzero(im->token, strlen(im->token));
		free(im->token);
	}
	explicit_bzero(im->cap, sizeof im->cap);
	free(im);
}

/* `from`: http://HOST:PORT or https://HOST:PORT, and a / at most after
 * it; HOST a name or an IPv4 address (letters, digits, '.', '-'), or an
 * IPv6 address in brackets.  No user, path, query or anything else: the
 * receiver asks one path of it, /v1/exports/CAP.  out: the address
 * without the /. */
static bool parse_from(const char *from, char *out, size_t n)
{
	size_t len = strlen(from);
	const char *p;
	if (len > FROM_MAX)
		return false;
	if (!strncmp(from, "http://", 7))
		p = from + 7;
	else if (!strncmp(from, "https://", 8))
		p = from + 8;
	else
		return false;
	const char *h = p;
	if (*p == '[') {
		for (p++; isxdigit((unsigned char)*p) || *p == ':' || *p == '.'; p++)
			;
		if (*p != ']' || p == h + 1)
			return false;
		p++;
	} else {
		while (isalnum((unsigned char)*p) || *p == '.' || *p == '-')
			p++;
		if (p == h)
			return false;
	}
	if (*p++ != ':')
		return false;
	long port = 0;
	const char *d = p;
	while (isdigit((unsigned char)*p) && p - d < 6)
		port = port * 10 + (*p++ - '0');
	if (p == d || port < 1 || port > 65535)
		return false;
	if (*p == '/')
		p++;
	if (*p)
		return false;
	snprintf(out, n, "%.*s", (int)(p - from - (p[-1] == '/')), from);
	return true;
}

/* One fetch of GET {from}/v1/exports/CAP, decoded as it comes (upload.c). */
struct fetch {
	struct server *s;
	struct req *r;
	const struct import_job *im;
	CURL *h;
	volatile sig_atomic_t *cancel;
	int proto;                     /* the reply's Tir-Protocol: -1 none, -2 not a number */
	bool have_len;
	uint64_t len;                  /* its Content-Length */
	long status;                   /* 0 until its head is whole */
	struct upload *up;             /* a 200's body, checked as it comes */
	uint64_t got;
	struct tir_str errbody;        /* another status's body, its first ERR_BODY_MAX bytes */
	/* this server's own reason to stop the transfer (0: none) */
	int fault;
	const char *fault_code;
	char why[400];
};

static size_t fetch_fault(struct fetch *f, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t fetch_fault(struct fetch *f, int status, const char *code, const char *fmt, ...)
{
	if (!f->fault) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(f->why, sizeof f->why, fmt, ap);
		va_end(ap);
		f->fault = status;
		f->fault_code = code;
	}
	return 0; /* returned by a callback: the transfer stops */
}

/* A decimal header value d[0..len) (after the name), or -1. */
static long long header_num(const char *d, size_t len)
{
	size_t i = 0;
	while (i < len && (d[i] == ' ' || d[i] == '\t'))
		i++;
	long long v = 0;
	size_t digits = 0;
	while (i < len && isdigit((unsigned char)d[i]) && digits < 18)
		v = v * 10 + (d[i++] - '0'), digits++;
	while (i < len && isspace((unsigned char)d[i]))
		i++;
	return digits && i == len ? v : -1;
}

static bool fetch_begin(struct fetch *f);

static size_t on_head(char *d, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;
	size_t len = size * n;
	static const char proto[] = TIR_PROTOCOL_HEADER ":", clen[] = "Content-Length:";
	if (len >= 5 && !strncmp(d, "HTTP/", 5)) { /* a response begins */
		f->proto = -1;
		f->have_len = false;
		return len;
	}
	if (len > sizeof proto - 1 && !strncasecmp(d, proto, sizeof proto - 1)) {
		long long v = header_num(d + sizeof proto - 1, len - (sizeof proto - 1));
		f->proto = v >= 0 && v < 1000000 ? (int)v : -2;
	}
	if (len > sizeof clen - 1 && !strncasecmp(d, clen, sizeof clen - 1)) {
		long long v = header_num(d + sizeof clen - 1, len - (sizeof clen - 1));
		f->have_len = v >= 0;
		f->len = v >= 0 ? (uint64_t)v : 0;
	}
	if (len > 2 || (d[0] != '\r' && d[0] != '\n'))
		return len;
	/* the head is whole */
	long st = 0;
	curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &st);
	if (st / 100 == 1)
		return len;
	f->status = st;
	if (st != 200 || f->proto != TIR_PROTOCOL)
		return len; /* said once the transfer ends */
	if (!f->have_len)
		return fetch_fault(f, 502, "upstream", "source %s answered without a Content-Length", f->im->from);
	return fetch_begin(f) ? len : 0;
}

/* The value is f->len bytes: within the limits, its share of the budget
 * taken, and its upload ready; false with the fault noted. */
static bool fetch_begin(struct fetch *f)
{
	struct server *s = f->s;
	if (f->len > s->o.max_body)
		return fetch_fault(f, 413, "too_large",
				   "the value from %s is %llu bytes (its chunk list and frame), over this server's "
				   "limit of %llu (--max-body); nothing was read",
				   f->im->from, (unsigned long long)f->len, (unsigned long long)s->o.max_body);
	const struct tenant *t = &s->tenants[f->r->tenant];
	uint64_t most = t->max_inflight < s->o.max_inflight ? t->max_inflight : s->o.max_inflight;
	if (f->len > most)
		return fetch_fault(f, 413, "too_large",
				   "the value from %s is %llu bytes, over the %llu %s may receive at once (%s)",
				   f->im->from, (unsigned long long)f->len, (unsigned long long)most,
				   most == s->o.max_inflight ? "this server" : t->name,
				   most == s->o.max_inflight ? "--max-inflight" : "--tokens");
	if (!req_reserve(s, f->r, f->len))
		return fetch_fault(f, 503, "busy",
				   "bodies being received hold so much of --max-inflight that the %llu bytes of "
				   "the value do not fit now: try again shortly (the capability is used)",
				   (unsigned long long)f->len);
	if (!(f->up = upload_new(f->im->blob, f->len, false)))
		return fetch_fault(f, 503, "busy", "no memory to receive the value now");
	return true;
}

static size_t on_data(char *d, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;
	size_t len = size * n;
	if (f->fault)
		return 0;
	if (!f->up) { /* an error's body: its start is enough */
		if (f->errbody.n < ERR_BODY_MAX)
			tir_str_add(&f->errbody, d, len < ERR_BODY_MAX - f->errbody.n ? len : ERR_BODY_MAX - f->errbody.n);
		return len;
	}
	if (len > f->len - f->got)
		return fetch_fault(f, 502, "upstream", "source %s sent more than its Content-Length", f->im->from);
	upload_absorb(f->up, d, len);
	f->got += len;
	/* a list that hashes wrong, a chunk, a bad frame: no need for the rest */
	return upload_failed(f->up) ? 0 : len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct fetch *f = ud;
	return *f->cancel || runq_stopping(f->s);
}

/* What a failed transfer was, for the message: the source named. */
static enum MHD_Result upstream_failed(struct fetch *f, struct MHD_Connection *c, CURLcode rc,
				       const char *errbuf)
{
	const struct import_job *im = f->im;
	const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
	json_t *extra = json_pack("{ss}", "source", im->from);
	long os = 0;
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(f->h, CURLINFO_OS_ERRNO, &os);
		return reply_error(c, f->r, 502, "upstream", extra, "cannot connect to the source %s (%s)", im->from,
				   os ? strerror((int)os) : detail);
	case CURLE_COULDNT_RESOLVE_HOST:
		return reply_error(c, f->r, 502, "upstream", extra, "cannot connect to the source %s (no such host)",
				   im->from);
	case CURLE_OPERATION_TIMEDOUT:
		if (!f->status)
			return reply_error(c, f->r, 502, "upstream", extra,
					   "the source %s did not answer within %d s (--transfer-seconds)", im->from,
					   f->s->o.transfer_seconds);
		return reply_error(c, f->r, 502, "upstream", extra,
				   "the value from the source %s did not come within %d s (--transfer-seconds): "
				   "%llu of %llu bytes", im->from, f->s->o.transfer_seconds,
				   (unsigned long long)f->got, (unsigned long long)f->len);
	case CURLE_PEER_FAILED_VERIFICATION:
		return reply_error(c, f->r, 502, "upstream", extra,
				   "the source %s: its certificate is not trusted (%s); TIR_CA_FILE in this "
				   "server's environment names a CA certificate to trust", im->from, detail);
	default:
		return reply_error(c, f->r, 502, "upstream", extra, "the source %s: %s", im->from, detail);
	}
}

/* What a source's status means, in this server's words. */
static const char *source_phrase(long status)
{
	switch (status) {
	case 401: return "no token, or a wrong one, for the source (the import's \"token\")";
	case 404: return "no such capability there (used, expired or never issued)";
	case 409: return "the capability is not for that blob";
	case 413: return "the value is over a limit of the source";
	case 503: return "the source is busy or stopping";
	default: return "the source refused the export";
	}
}

/* The source answered something else than its value: what it said. */
static enum MHD_Result upstream_refused(struct fetch *f, struct MHD_Connection *c)
{
	const struct import_job *im = f->im;
	json_t *extra = json_pack("{ss sI}", "source", im->from, "source_status", (json_int_t)f->status);
	if (f->proto == -1)
		return reply_error(c, f->r, 502, "upstream", extra,
				   "the source %s answered HTTP %ld and is no tir server (no %s header)", im->from,
				   f->status, TIR_PROTOCOL_HEADER);
	if (f->proto != TIR_PROTOCOL)
		return reply_error(c, f->r, 502, "upstream", extra,
				   "the source %s speaks tir protocol %d; this server speaks %d", im->from, f->proto,
				   TIR_PROTOCOL);
	/* a tir server's error: its status and a phrase of this server's for
	 * it; nothing the source wrote is quoted back */
	return reply_error(c, f->r, 502, "upstream", extra, "the source %s answered %ld: %s", im->from, f->status,
			   source_phrase(f->status));
}

/* The upload's verdict, as the importer's: a blob that does not hash to
 * its name is the source's fault (502 bad_hash), so is a malformed one
 * (502 upstream); over a limit here, 413; no memory now, 503. */
static enum MHD_Result upload_refused(struct fetch *f, struct MHD_Connection *c, int st, const char *code,
				      const char *msg)
{
	const struct import_job *im = f->im;
	json_t *extra = json_pack("{ss}", "source", im->from);
	if (st == 400 && !strcmp(code, "bad_hash"))
		return reply_error(c, f->r, 502, "bad_hash", extra, "from the source %s: %s", im->from, msg);
	if (st == 400)
		return reply_error(c, f->r, 502, "upstream", extra, "the source %s sent a malformed blob: %s",
				   im->from, msg);
	return reply_error(c, f->r, st, code, extra, "%s", msg);
}

/* The value came whole: checked, and kept in the session. */
static enum MHD_Result fetched(struct fetch *f, struct MHD_Connection *c)
{
	struct server *s = f->s;
	struct req *r = f->r;
	const struct import_job *im = f->im;
	struct tir_tensor t = {0};
	enum MHD_Result ok;
	char msg[600];
	const char *code = "bad_request";
	bool held;
	int st = upload_finish(f->up, &held, &t, &code, msg, sizeof msg);
	if (st) {
		ok = upload_refused(f, c, st, code, msg);
	} else {
		/* kept as a batch's keep is: it counts toward the session's
		 * values and the memory budget */
		const char *keys[1] = {im->key};
		int kept = session_update(s->sessions, im->ss, NULL, 0, keys, &t, 1);
		uint64_t fbytes = upload_frame_bytes(f->up);
		if (kept == -1)
			ok = reply_error(c, r, 413, "too_large", NULL, "key: a session keeps at most %d values",
					 SESSION_MAX_VALUES);
		else if (kept)
			ok = reply_error(c, r, 503, "busy", NULL,
					 "no memory to keep the value now (--max-memory); try again shortly");
		else if (session_dead(s->sessions, im->ss))
			ok = reply_error(c, r, 404, "not_found", NULL,
					 "the session ended while the value came; nothing was kept");
		else
			ok = reply_json(c, r, 200, json_pack("{ss ss sI}", "key", im->key, "blob", im->blob,
							     "bytes", (json_int_t)fbytes));
		if (r->status == 200)
			count(s, &s->import_bytes, fbytes);
	}
	tir_tensor_release(&t);
	return ok;
}

/* ---- the same, from a rank of this server's group, over MPI ---- */

static int sink_begin(void *ud, uint64_t total)
{
	struct fetch *f = ud;
	f->have_len = true;
	f->len = total;
	f->status = 200;
	f->proto = TIR_PROTOCOL;
	return fetch_begin(f) ? 0 : f->fault;
}

static bool sink_absorb(void *ud, const void *p, size_t n)
{
	struct fetch *f = ud;
	if (n > f->len - f->got) {
		fetch_fault(f, 502, "upstream", "source %s sent more than it said", f->im->from);
		return false;
	}
	upload_absorb(f->up, p, n);
	f->got += n;
	return !upload_failed(f->up);
}

static json_t *mpi_extra(const struct import_job *im)
{
	return json_pack("{ss si}", "source", im->from, "source_rank", im->rank);
}

static enum MHD_Result import_mpi(struct server *s, struct MHD_Connection *c, struct req *r, struct import_job *im,
				  volatile sig_atomic_t *cancel)
{
	struct fetch f = {.s = s, .r = r, .im = im, .cancel = cancel, .proto = -1};
	struct tir_mpi_sink sink = {.ud = &f, .begin = sink_begin, .absorb = sink_absorb};
	char why[TIR_MPI_WHY] = "";
	uint64_t got = 0;
	double t0 = tir_now_ms();
	int secs = s->o.transfer_seconds;
	int rc = s->group.api->fetch(im->rank, im->cap, im->token ? im->token : "", &sink, secs, cancel, &got, why,
				     sizeof why);
	enum MHD_Result ok;
	if (f.fault) {
		ok = reply_error(c, r, f.fault, f.fault_code, mpi_extra(im), "%s", f.why);
	} else if (f.up && upload_failed(f.up)) {
		char msg[600];
		const char *code = "bad_request";
		bool held;
		struct tir_tensor t = {0};
		int st = upload_finish(f.up, &held, &t, &code, msg, sizeof msg);
		tir_tensor_release(&t);
		ok = upload_refused(&f, c, st, code, msg);
	} else if (rc == TIR_MPI_CANCELLED) {
		r->gone = STOPPED;
		ok = reply(c, r, 499, NULL, NULL, 0);
	} else if (rc == TIR_MPI_NO_ANSWER) {
		ok = reply_error(c, r, 502, "upstream", mpi_extra(im),
				 "the source %s (rank %d of the group) did not answer over MPI within %d s "
				 "(--transfer-seconds)", im->from, im->rank, secs);
	} else if (rc == TIR_MPI_SLOW) {
		ok = reply_error(c, r, 502, "upstream", mpi_extra(im),
				 "the value from the source %s (rank %d of the group) did not come over MPI within %d s "
				 "(--transfer-seconds): %llu of %llu bytes", im->from, im->rank, secs,
				 (unsigned long long)got, (unsigned long long)f.len);
	} else if (rc < 0) {
		ok = reply_error(c, r, 502, "upstream", mpi_extra(im), "the source %s (rank %d of the group): MPI: %s",
				 im->from, im->rank, why);
	} else if (rc > 0) {
		json_t *extra = mpi_extra(im);
		json_object_set_new(extra, "source_status", json_integer(rc));
		ok = reply_error(c, r, 502, "upstream", extra, "the source %s (rank %d of the group) answered %d: %s",
				 im->from, im->rank, rc, source_phrase(rc));
	} else if (!f.up || f.got != f.len) {
		ok = reply_error(c, r, 502, "upstream", mpi_extra(im), "the source %s sent %llu of %llu bytes",
				 im->from, (unsigned long long)f.got, (unsigned long long)f.len);
	} else {
		ok = fetched(&f, c);
		if (r->status == 200) {
			double ms = tir_now_ms() - t0;
			pthread_mutex_lock(&s->mmu);
			s->group.imports++;
			s->group.import_bytes += f.got;
			pthread_mutex_unlock(&s->mmu);
			if (s->o.log) {
				char line[GROUP_ADDR + 200];
				snprintf(line, sizeof line, "tir serve: import over MPI from rank %d (%s): %llu bytes in %.2f ms",
					 im->rank, im->from, (unsigned long long)f.got, ms);
				s->o.log(s->o.log_ud, line);
			}
		}
	}
	upload_free(f.up);
	return ok;
}

/* On a compute thread: fetch, check, keep. */
static enum MHD_Result import_fetch(struct server *s, struct MHD_Connection *c, struct req *r,
				    struct import_job *im, volatile sig_atomic_t *cancel)
{
	if (runq_stopping(s))
		return reply_error(c, r, 503, "busy", NULL, "the server is stopping");
	/* the source is checked before anything is sent to it: one that is no
	 * peer gets the same answer, at once, whatever listens there */
	char resolve[FROM_HOST_MAX + 256];
	int peer = peers_check(s, im->from, resolve, sizeof resolve);
	if (peer == -2)
		return reply_error(c, r, 400, "bad_request", NULL,
				   "from: %s: an IPv4 address is four decimal numbers of 0-255 (no other spelling: "
				   "2130706433, 0x7f.1, 017700000001, 127.1), an IPv6 one in brackets", im->from);
	if (peer)
		return reply_error(c, r, 403, "forbidden", NULL,
				   "from: %s is not among this server's peers (--peers; by default the members of "
				   "its group and loopback): an import fetches only from them", im->from);
	if (im->rank >= 0)
		return import_mpi(s, c, r, im, cancel);
	struct fetch f = {.s = s, .r = r, .im = im, .cancel = cancel, .proto = -1};
	char url[FROM_MAX + 100], errbuf[CURL_ERROR_SIZE] = "";
	snprintf(url, sizeof url, "%s/v1/exports/%s", im->from, im->cap);
	struct curl_slist *hdr = curl_slist_append(NULL, TIR_PROTOCOL_HEADER ": " TIR_PROTOCOL_STR);
	char *auth = NULL;
	if (im->token) {
		size_t na = strlen(im->token) + 32;
		if ((auth = malloc(na))) {
			snprintf(auth, na, "Authorization: Bearer %s", im->token);
			struct curl_slist *h2 = curl_slist_append(hdr, auth);
			hdr = h2 ? h2 : hdr;
			if (!h2)
				auth[0] = 0;
		}
	}
	f.h = curl_easy_init();
	if (!f.h || !hdr || (im->token && (!auth || !auth[0]))) {
		curl_easy_cleanup(f.h);
		curl_slist_free_all(hdr);
		if (auth)
			explicit_bzero(auth, strlen(auth));
		free(auth);
		return reply_error(c, r, 503, "busy", NULL, "no memory for a transfer now");
	}
	long limit_ms = 1000L * s->o.transfer_seconds;
	CURL *h = f.h;
	tir_curl_setup(h, &(struct tir_curl_opts){.agent = "tir/" TIR_VERSION " (import)",
						  .connect_ms = limit_ms < CONNECT_MS ? limit_ms : CONNECT_MS,
						  .timeout_ms = limit_ms,
						  .errbuf = errbuf,
						  .on_head = on_head,
						  .on_body = on_data,
						  .on_progress = on_progress,
						  .ud = &f,
						  .big_pieces = true});
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	/* a name goes to the address checked, not to another lookup's */
	struct curl_slist *pin = resolve[0] ? curl_slist_append(NULL, resolve) : NULL;
	if (pin)
		curl_easy_setopt(h, CURLOPT_RESOLVE, pin);
	CURLcode rc = resolve[0] && !pin ? CURLE_OUT_OF_MEMORY : curl_easy_perform(h);
	curl_slist_free_all(pin);
	curl_slist_free_all(hdr);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	enum MHD_Result ok;
	struct tir_tensor t = {0};
	if (f.fault) {
		json_t *extra = json_pack("{ss}", "source", im->from);
		ok = reply_error(c, r, f.fault, f.fault_code, extra, "%s", f.why);
	} else if (f.up && upload_failed(f.up)) {
		char msg[600];
		const char *code = "bad_request";
		bool held;
		int st = upload_finish(f.up, &held, &t, &code, msg, sizeof msg);
		ok = upload_refused(&f, c, st, code, msg);
	} else if (rc == CURLE_ABORTED_BY_CALLBACK && *cancel) {
		r->gone = STOPPED;
		ok = reply(c, r, 499, NULL, NULL, 0);
	} else if (rc == CURLE_ABORTED_BY_CALLBACK) {
		ok = reply_error(c, r, 503, "busy", NULL, "the server is stopping (the capability is used)");
	} else if (rc != CURLE_OK) {
		ok = upstream_failed(&f, c, rc, errbuf);
	} else if (f.status != 200 || f.proto != TIR_PROTOCOL || !f.up) {
		ok = upstream_refused(&f, c);
	} else {
		ok = fetched(&f, c);
	}
	tir_tensor_release(&t);
	upload_free(f.up);
	tir_str_free(&f.errbody);
	curl_easy_cleanup(h);
	return ok;
}

static enum MHD_Result import_task(struct server *s, struct MHD_Connection *c, struct req *r, void *arg,
				   volatile sig_atomic_t *cancel)
{
	enum MHD_Result ok = import_fetch(s, c, r, arg, cancel);
	count(s, r->status == 200 ? &s->imports_ok : &s->imports_failed, 1);
	return ok;
}

enum MHD_Result xfer_import(struct server *s, struct MHD_Connection *c, struct req *r)
{
	enum MHD_Result ok;
	json_t *doc = body_object(c, r, &ok);
	if (!doc)
		return ok;
	struct import_job *im = calloc(1, sizeof *im);
	if (!im) {
		json_decref(doc);
		return reply_error(c, r, 500, "internal", NULL, "out of memory");
	}
	const char *k, *why = NULL;
	json_t *v;
	im->rank = -1;
	json_object_foreach(doc, k, v) {
		const char *str = json_string_value(v);
		if (!strcmp(k, "key")) {
			if (!str || !session_key_valid(str))
				why = "key: not a key (1-64 of A-Z a-z 0-9 _ . -)";
			else
				snprintf(im->key, sizeof im->key, "%s", str);
		} else if (!strcmp(k, "from")) {
			if (!str || !parse_from(str, im->from, sizeof im->from))
				why = "from: not http://HOST:PORT or https://HOST:PORT (the server the value is "
				      "on, as this one reaches it)";
		} else if (!strcmp(k, "cap")) {
			if (!str || !tir_sha_valid(str))
				why = "cap: not 64 lowercase hex digits (a capability from POST /v1/sessions/ID/export)";
			else
				snprintf(im->cap, sizeof im->cap, "%s", str);
		} else if (!strcmp(k, "blob")) {
			if (!str || !tir_sha_valid(str))
				why = "blob: not 64 lowercase hex digits (the blob name the export gave)";
			else
				snprintf(im->blob, sizeof im->blob, "%s", str);
		} else if (!strcmp(k, "token")) {
			if (!str || !*str || strlen(str) > TOKEN_MAX || strpbrk(str, "\r\n"))
				why = "token: not a token (one line of text, for the source server)";
			else if (!im->token && !(im->token = strdup(str)))
				why = "out of memory";
		} else if (!strcmp(k, "group")) {
			if (!str || strlen(str) != 32)
				why = "group: not a group's id (32 hex digits, as /v1/info says)";
			else
				snprintf(im->group, sizeof im->group, "%s", str);
		} else if (!strcmp(k, "rank")) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1 << 20)
				why = "rank: not a rank (0, 1, ... of the source in its group)";
			else
				im->rank = (int)json_integer_value(v);
		} else {
			why = "body: an unknown field (an import takes \"key\", \"from\", \"cap\", \"blob\", "
			      "\"token\", \"group\" and \"rank\")";
		}
		if (why)
			break;
	}
	json_decref(doc);
	if (!why && !im->key[0])
		why = "key: missing (the key the value is to be kept under)";
	else if (!why && !im->from[0])
		why = "from: missing (http://HOST:PORT of the server the value is on)";
	else if (!why && !im->cap[0])
		why = "cap: missing (a capability from POST /v1/sessions/ID/export on the source)";
	else if (!why && !im->blob[0])
		why = "blob: missing (the blob name the export gave)";
	/* over MPI only from another rank of this very group; else HTTP */
	if (!s->group.api || !s->group.members || strcmp(im->group, s->group.id) || im->rank >= s->group.size ||
	    im->rank == s->group.rank)
		im->rank = -1;
	if (why) {
		import_done(im);
		count(s, &s->imports_failed, 1);
		return reply_error(c, r, 400, "bad_request", NULL, "%s", why);
	}
	struct session *ss = r->id_ok ? session_get(s->sessions, r->id, r->tenant) : NULL;
	const char *keys[1] = {im->key};
	if (!ss || !session_fits(s->sessions, ss, NULL, 0, keys, 1)) {
		ok = !ss ? reply_error(c, r, 404, "not_found", NULL, "no such session (expired or deleted?)")
			 : reply_error(c, r, 413, "too_large", NULL, "key: a session keeps at most %d values",
				       SESSION_MAX_VALUES);
		session_unref(s->sessions, ss);
		import_done(im);
		count(s, &s->imports_failed, 1);
		return ok;
	}
	im->ss = ss;
	ok = runq_post_task(s, c, r, ss, import_task, import_done, im);
	if (!r->queued) /* refused now (the server is stopping) */
		count(s, &s->imports_failed, 1);
	return ok;
}
