/*
 * bundle.c — POST /v1/blobs: several blobs in one body (docs/protocol.md),
 * so that a run whose server lacks many blobs sends them in one round
 * trip, not one each.  Each item is what a PUT /v1/blobs/NAME's body would
 * be, behind a head of 48 bytes (magic, the item's length, the blob's
 * name); items are checked and stored one after the other by upload.c and
 * blob_keep, exactly as PUTs are.  The whole body is a PUT's for the
 * limits (Content-Length, --max-body, --max-inflight and the tenant's
 * inflight=, reserved before it is read); each item is a PUT's too
 * (--blob-cache, --max-memory); nothing the body says is trusted: an
 * item's length past the body's end, a body ending inside an item, a
 * head that is not one, or more than BUNDLE_MAX_BLOBS items is refused,
 * and the items after a fault are read and dropped.
 */
#include "serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bundle {
	struct server *s;
	int tenant;
	uint64_t len, in;              /* the body's Content-Length; bytes in */
	unsigned char head[TIR_BUNDLE_HEAD];
	size_t nhead;
	uint64_t ilen, iin;            /* the item under way: its length, its bytes in */
	char name[TIR_SHA_HEX + 1];
	struct upload *up;             /* the item under way, NULL between items */
	size_t n;                      /* items begun */
	json_t *done;                  /* [{"blob", "status", "bytes"}], one per item stored or held */
	int status;                    /* the first fault, 0 none */
	const char *code;
	bool retry;
	char msg[700];
};

static void bundle_fault(struct bundle *b, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void bundle_fault(struct bundle *b, int status, const char *code, const char *fmt, ...)
{
	if (b->status)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->msg, sizeof b->msg, fmt, ap);
	va_end(ap);
	b->status = status;
	b->code = code;
	upload_free(b->up);
	b->up = NULL;
}

struct bundle *bundle_new(struct server *s, int tenant, uint64_t len)
{
	struct bundle *b = calloc(1, sizeof *b);
	if (!b || !(b->done = json_array())) {
		free(b);
		return NULL;
	}
	b->s = s;
	b->tenant = tenant;
	b->len = len;
	return b;
}

void bundle_free(struct bundle *b)
{
	if (!b)
		return;
	upload_free(b->up);
	json_decref(b->done);
	free(b);
}

/* The item's head is in: begin its upload, as a PUT's would begin. */
static void item_begin(struct bundle *b)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = b->head;
	size_t i = b->n;
	if (memcmp(p, TIR_BUNDLE_MAGIC, 4) || tir_get_u32(p + 4))
		return bundle_fault(b, 400, "bad_request",
				    "blob %zu: its head (body byte %llu) does not start with \"TIRB\" and a zero word",
				    i, (unsigned long long)(b->in - TIR_BUNDLE_HEAD));
	if (i >= TIR_BUNDLE_MAX_BLOBS)
		return bundle_fault(b, 413, "too_large", "more than %d blobs in one request",
				    TIR_BUNDLE_MAX_BLOBS);
	b->ilen = tir_get_u64(p + 8);
	b->iin = 0;
	if (b->ilen > b->len - b->in)
		return bundle_fault(b, 400, "bad_request",
				    "blob %zu: its head says %llu bytes, but the body has %llu left", i,
				    (unsigned long long)b->ilen, (unsigned long long)(b->len - b->in));
	for (int k = 0; k < 32; k++) {
		b->name[2 * k] = digits[p[16 + k] >> 4];
		b->name[2 * k + 1] = digits[p[16 + k] & 15];
	}
	b->name[TIR_SHA_HEX] = 0;
	b->n++;
	bool mine = blob_touch(b->s->blobs, b->name, b->tenant);
	if (!mine && b->ilen > b->s->o.blob_cache)
		return bundle_fault(b, 413, "too_large",
				    "blob %zu (%s): %llu bytes is over the blob cache of %llu bytes (--blob-cache)", i,
				    b->name, (unsigned long long)b->ilen, (unsigned long long)b->s->o.blob_cache);
	if (!(b->up = upload_new(b->name, b->ilen, mine)))
		return bundle_fault(b, 503, "busy", "no memory for an upload now");
}

/* The item's bytes are all in: stored (or held), or the request's fault. */
static void item_end(struct bundle *b)
{
	char msg[600];
	const char *code;
	uint64_t bytes = 0;
	bool retry;
	int st = blob_keep(b->s, b->up, b->name, b->tenant, &code, msg, sizeof msg, &bytes, &retry);
	upload_free(b->up);
	b->up = NULL;
	b->nhead = 0;
	if (st / 100 != 2) {
		b->retry = retry;
		return bundle_fault(b, st, code, "blob %zu (%s): %s", b->n - 1, b->name, msg);
	}
	json_array_append_new(b->done, json_pack("{ss si sI}", "blob", b->name, "status", st, "bytes",
						 (json_int_t)bytes));
}

void bundle_absorb(struct bundle *b, const void *piece, size_t n)
{
	const unsigned char *d = piece;
	while (n && !b->status) {
		size_t take;
		if (!b->up) {
			take = TIR_BUNDLE_HEAD - b->nhead < n ? TIR_BUNDLE_HEAD - b->nhead : n;
			memcpy(b->head + b->nhead, d, take);
			b->nhead += take;
			b->in += take;
			if (b->nhead == TIR_BUNDLE_HEAD)
				item_begin(b);
			if (b->up && !b->ilen) /* an empty item: upload_finish says what is wrong */
				item_end(b);
		} else {
			take = b->ilen - b->iin < n ? (size_t)(b->ilen - b->iin) : n;
			upload_absorb(b->up, d, take);
			b->iin += take;
			b->in += take;
			if (upload_failed(b->up) || b->iin == b->ilen)
				item_end(b);
		}
		d += take;
		n -= take;
	}
	if (b->status)
		b->in += n;
}

enum MHD_Result bundle_finish(struct server *s, struct MHD_Connection *c, struct req *r)
{
	struct bundle *b = r->bundle;
	(void)s;
	if (!b->status && (b->nhead || b->up))
		bundle_fault(b, 400, "bad_request", "blob %zu: the body ended inside it (%llu of its %llu bytes)",
			     b->up ? b->n - 1 : b->n, (unsigned long long)(b->up ? b->iin : b->nhead),
			     (unsigned long long)(b->up ? b->ilen : TIR_BUNDLE_HEAD));
	if (!b->status && !b->n)
		bundle_fault(b, 400, "bad_request", "no blobs: the body is empty");
	if (b->status) {
		if (b->retry)
			r->retry_after = "1";
		/* what was stored before the fault stays: the client sends the rest */
		return reply_error(c, r, b->status, b->code, json_pack("{sO}", "stored", b->done), "%s", b->msg);
	}
	return reply_json(c, r, 200, json_pack("{sO}", "blobs", b->done));
}
