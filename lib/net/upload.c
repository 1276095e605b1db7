/*
 * upload.c — PUT /v1/blobs/NAME as the body arrives (protocol 2, net.h):
 * first the blob's chunk list, whose SHA-256 must be NAME, then the
 * tensor frame, each chunk of it checked against its entry of the list as
 * soon as it is in.  Nothing the client says is trusted: a list that does
 * not hash to the name is refused before any of the frame is read, and a
 * chunk that does not hash to its entry stops the upload there (the rest
 * of the body is read and dropped), with an answer naming the chunk.
 *
 * The frame's header goes into head[]; once it is whole and checked, the
 * tensor to keep is allocated and the data is copied straight into it:
 * one allocation (2 MiB pages past 4 MiB, taken from the pages the server
 * keeps faulted in, --upload-reserve) and no other copy of the body.
 * Past 4 MiB threads help: one per compute thread (--threads, up to 8)
 * checks the chunks in the
 * tensor behind the copy (sixteen at a time each, on the AVX-512 path
 * sixteen to a register, chunks.c), one faults in the tensor's fresh pages
 * ahead of it.  Smaller blobs are checked as the bytes pass, a chunk at
 * a time.  A blob the server holds already goes the same way (and is
 * dropped at the end): a PUT does not tell by its time whether another
 * tenant holds the blob.
 */
#include "store.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HASH_THREAD_MIN ((size_t)4 << 20)
/* Checking threads for one upload: one per compute thread (--threads),
 * at most this many. */
#define CHECKERS_MAX 8

struct upload {
	uint64_t len;                  /* Content-Length */
	uint64_t in;                   /* body bytes received */
	char name[TIR_SHA_HEX + 1];    /* the blob's name (the URL's) */
	bool held;                     /* the server holds it: check, keep nothing */
	int status;                    /* the first fault: 400, 413 or 503 */
	const char *code;
	char msg[480];
	/* the chunk list */
	unsigned char *list;           /* listlen bytes once its head is in */
	unsigned char lhead[TIR_CHUNKS_HEAD];
	size_t nlist, listlen;
	uint64_t flen;                 /* the frame's bytes, as the list says */
	size_t k;                      /* its chunks */
	/* the frame */
	unsigned char head[TIR_FRAME_HEAD_MAX];
	size_t nhead;
	struct tir_frame_info fi;
	bool headok;
	struct tir_tensor t;
	size_t nbytes, got, npad;
	uint64_t fin;                  /* frame bytes in (and checked, for the padding) */
	/* chunks checked as the bytes pass */
	EVP_MD_CTX *ctx;
	size_t ci;                     /* the chunk being hashed */
	uint64_t cfill;                /* its bytes hashed */
	/* the checking threads: hash the chunks in t up to `avail`, each
	 * taking the next sixteen (or what is left at the end) */
	bool threaded;
	int nth;
	pthread_t th[CHECKERS_MAX];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t avail;                /* frame bytes the threads may read */
	size_t next;                   /* the first chunk no thread has taken */
	bool end, stop;
	int waiting;
	size_t bad;                    /* 1 + the first chunk that hashed wrong; 0 none (under mu) */
	unsigned char badhash[32];
	struct tir_toucher touch;      /* faults in t's pages ahead of the copy */
	bool busy;                     /* counted in tir_mem_ready_busy */
};

static void hexof(const unsigned char *d, char out[TIR_SHA_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[TIR_SHA_HEX] = 0;
}

static const unsigned char *entry(const struct upload *u, size_t i)
{
	return u->list + TIR_CHUNKS_HEAD + 32 * i;
}

/* Chunks whose bytes are all among the first `avail` of the frame. */
static size_t chunks_in(const struct upload *u, uint64_t avail)
{
	return avail >= u->flen ? u->k : (size_t)(avail / TIR_CHUNK);
}

/* A checking thread: the chunks in t, as the copy goes, sixteen at a
 * time while more are coming; the first wrong one stops them all. */
static void *check_thread(void *arg)
{
	struct upload *u = arg;
	struct tir_frame_src f = {u->head, u->fi.headlen, tir_tensor_data(&u->t), u->nbytes, u->fi.padlen};
	unsigned char got[16][32];
	pthread_mutex_lock(&u->mu);
	for (;;) {
		size_t ready = chunks_in(u, u->avail);
		if (u->stop || u->bad || u->next == u->k)
			break;
		if (ready - u->next < 16 && !u->end && ready < u->k) {
			u->waiting++;
			pthread_cond_wait(&u->cv, &u->mu);
			u->waiting--;
			continue;
		}
		if (ready == u->next) /* the end, and no more will come */
			break;
		size_t first = u->next, n = ready - first < 16 ? ready - first : 16;
		u->next += n;
		pthread_mutex_unlock(&u->mu);
		tir_chunk_hash(&f, first, first + n, got);
		size_t badi = 0;
		for (size_t i = 0; i < n && !badi; i++)
			if (memcmp(got[i], entry(u, first + i), 32))
				badi = first + i + 1;
		pthread_mutex_lock(&u->mu);
		if (badi && (!u->bad || badi < u->bad)) {
			u->bad = badi;
			memcpy(u->badhash, got[badi - 1 - first], 32);
			pthread_cond_broadcast(&u->cv);
		}
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

/* Stop the touching thread, and the checking threads: once they have
 * checked all that was copied, or (stop) at once. */
static void check_join(struct upload *u, bool stop)
{
	tir_touch_stop(&u->touch);
	if (!u->threaded)
		return;
	pthread_mutex_lock(&u->mu);
	u->end = true;
	u->stop = stop;
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
	for (int i = 0; i < u->nth; i++)
		pthread_join(u->th[i], NULL);
	pthread_mutex_destroy(&u->mu);
	pthread_cond_destroy(&u->cv);
	u->threaded = false;
}

void upload_free(struct upload *u)
{
	if (!u)
		return;
	check_join(u, true);
	if (u->busy)
		tir_mem_ready_busy(false);
	EVP_MD_CTX_free(u->ctx);
	tir_tensor_release(&u->t);
	free(u->list);
	free(u);
}

static void upload_fault(struct upload *u, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void upload_fault(struct upload *u, int status, const char *code, const char *fmt, ...)
{
	if (u->status)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof u->msg, fmt, ap);
	va_end(ap);
	u->status = status;
	u->code = code;
	check_join(u, true); /* the rest of the body is dropped */
}

/* Chunk i hashed to h, not to its entry of the list. */
static void chunk_fault(struct upload *u, size_t i, const unsigned char h[32])
{
	char got[TIR_SHA_HEX + 1], want[TIR_SHA_HEX + 1];
	hexof(h, got);
	hexof(entry(u, i), want);
	uint64_t a = (uint64_t)i * TIR_CHUNK, b = a + TIR_CHUNK < u->flen ? a + TIR_CHUNK : u->flen;
	upload_fault(u, 400, "bad_hash",
		     "blob %s: chunk %zu of %zu (bytes %llu-%llu of the frame) hashes to %s, but the chunk "
		     "list says %s; nothing was stored",
		     u->name, i, u->k, (unsigned long long)a, (unsigned long long)(b - 1), got, want);
}

/* The frame's bytes d[0..n), in order, hashed into their chunks. */
static void stream_check(struct upload *u, const unsigned char *d, size_t n)
{
	while (n && !u->status && u->ci < u->k) {
		uint64_t clen = u->ci + 1 < u->k ? TIR_CHUNK : u->flen - (uint64_t)u->ci * TIR_CHUNK;
		size_t take = clen - u->cfill < n ? (size_t)(clen - u->cfill) : n;
		if (!u->cfill)
			EVP_DigestInit_ex(u->ctx, EVP_sha256(), NULL);
		EVP_DigestUpdate(u->ctx, d, take);
		u->cfill += take;
		d += take;
		n -= take;
		if (u->cfill == clen) {
			unsigned char h[32];
			unsigned int hl = 0;
			EVP_DigestFinal_ex(u->ctx, h, &hl);
			if (memcmp(h, entry(u, u->ci), 32))
				chunk_fault(u, u->ci, h);
			u->ci++;
			u->cfill = 0;
		}
	}
}

/* The frame's header is whole and checked: allocate the tensor. */
static void frame_begin(struct upload *u)
{
	const struct tir_frame_info *fi = &u->fi;
	uint64_t total = fi->headlen + fi->nbytes + fi->padlen;
	if (u->flen < total)
		return upload_fault(u, 400, "bad_request", "tensor frame: truncated: %llu of %llu bytes",
				    (unsigned long long)u->flen, (unsigned long long)total);
	if (u->flen > total)
		return upload_fault(u, 400, "bad_request", "tensor frame: %llu bytes after the frame's %llu",
				    (unsigned long long)(u->flen - total), (unsigned long long)total);
	u->headok = true;
	u->nbytes = (size_t)fi->nbytes;
	/* a blob held already (maybe another tenant's) is received and
	 * checked as a new one is, into a tensor dropped at the end: its PUT
	 * takes as long and is refused as a new one would be */
	if (u->nbytes >= HASH_THREAD_MIN) { /* the reserve's keeper waits for it */
		u->busy = true;
		tir_mem_ready_busy(true);
	}
	struct tir_err err = {0};
	if (tir_tensor_alloc_ready(&u->t, fi->dtype, fi->rank, fi->shape, &err)) {
		size_t lim = tir_mem_limit();
		if (err.code == TIR_EBUDGET && lim && fi->nbytes > lim) /* it never fits */
			return upload_fault(u, 413, "too_large", "a tensor of %llu bytes is over the memory budget of "
					    "%zu bytes (--max-memory)", (unsigned long long)fi->nbytes, lim);
		if (err.code == TIR_EBUDGET) /* it fits once others are let go */
			return upload_fault(u, 503, "busy", "%s", err.msg);
		return upload_fault(u, 503, "busy", "no memory for a tensor of %llu bytes now",
				    (unsigned long long)fi->nbytes);
	}
	if (u->nbytes >= HASH_THREAD_MIN && u->ci == 0 && u->cfill == u->fi.headlen) {
		/* the thread checks every chunk from memory, the first one too */
		pthread_mutex_init(&u->mu, NULL);
		pthread_cond_init(&u->cv, NULL);
		u->avail = u->fin;
		tir_touch_start(&u->touch, tir_tensor_data(&u->t), u->nbytes);
		int nth = tir_pool_threads(); /* the cores it may use (--threads) */
		int want = nth < 1 ? 1 : nth > CHECKERS_MAX ? CHECKERS_MAX : nth;
		while (u->nth < want && !pthread_create(&u->th[u->nth], NULL, check_thread, u))
			u->nth++;
		u->threaded = u->nth > 0;
		if (!u->threaded) {
			pthread_mutex_destroy(&u->mu);
			pthread_cond_destroy(&u->cv);
		}
	}
}

/* The chunk list is whole: it must hash to the blob's name. */
static void list_done(struct upload *u)
{
	char h[TIR_SHA_HEX + 1];
	tir_chunk_name(u->list, u->listlen, h);
	if (strcmp(h, u->name))
		upload_fault(u, 400, "bad_hash", "blob %s: its chunk list hashes to %s; nothing was stored", u->name,
			     h);
}

/* The chunk list's head is in (lhead): check it against the body's length. */
static void list_begin(struct upload *u)
{
	const unsigned char *p = u->lhead;
	if (!memcmp(p, TIR_FRAME_MAGIC, 4))
		return upload_fault(u, 400, "protocol",
				    "the body is a bare tensor frame, as tir protocol 1 sent a blob; this server "
				    "speaks protocol %d, where a blob's chunk list comes first (docs/protocol.md)",
				    TIR_PROTOCOL);
	if (memcmp(p, TIR_CHUNKS_MAGIC, 4))
		return upload_fault(u, 400, "bad_request", "chunk list: does not start with \"TIRC\"");
	if (tir_get_u32(p + 4) != TIR_CHUNK)
		return upload_fault(u, 400, "bad_request",
				    "chunk list: bytes 4-7: chunks of %u bytes; blobs are hashed in chunks of %zu",
				    tir_get_u32(p + 4), TIR_CHUNK);
	uint64_t f = tir_get_u64(p + 8);
	uint64_t k = f / TIR_CHUNK + (f % TIR_CHUNK != 0);
	if (f > u->len || k > (u->len - f) / 32 || u->len != TIR_CHUNKS_HEAD + 32 * k + f)
		return upload_fault(u, 400, "bad_request",
				    "body: %llu bytes, but its chunk list says a frame of %llu bytes (the list and "
				    "the frame would be %llu)",
				    (unsigned long long)u->len, (unsigned long long)f,
				    f > u->len ? (unsigned long long)f
					       : (unsigned long long)(TIR_CHUNKS_HEAD + 32 * k + f));
	u->flen = f;
	u->k = (size_t)k;
	u->listlen = TIR_CHUNKS_HEAD + 32 * (size_t)k;
	u->list = malloc(u->listlen);
	if (!u->list)
		return upload_fault(u, 503, "busy", "no memory for an upload now");
	memcpy(u->list, p, TIR_CHUNKS_HEAD);
	u->nlist = TIR_CHUNKS_HEAD;
	if (u->nlist == u->listlen)
		list_done(u);
}

/* Frame bytes d[0..n). */
static void frame_absorb(struct upload *u, const unsigned char *d, size_t n)
{
	while (n && !u->status) {
		size_t take;
		if (!u->headok) {
			size_t want = u->nhead < 16 ? 16 : u->fi.headlen;
			take = want - u->nhead < n ? want - u->nhead : n;
			memcpy(u->head + u->nhead, d, take);
			stream_check(u, d, take);
			u->nhead += take;
			u->fin += take;
			if (u->nhead == want && !u->status) {
				struct tir_err err = {0};
				int rc = tir_frame_head_parse(u->head, u->nhead, &u->fi, &err);
				if (rc < 0)
					upload_fault(u, u->fi.too_many ? 413 : 400,
						     u->fi.too_many ? "too_large" : "bad_request", "%s", err.msg);
				else if (rc == 0)
					frame_begin(u);
			}
		} else if (u->got < u->nbytes) {
			take = u->nbytes - u->got < n ? u->nbytes - u->got : n;
			if (u->t.buf) {
				unsigned char *dst = (unsigned char *)tir_tensor_data(&u->t) + u->got;
				if (u->threaded) /* past 4 MiB: the lines are read again only by the check */
					tir_copy_stream(dst, d, take);
				else
					memcpy(dst, d, take);
				atomic_store_explicit(&u->touch.done, u->got + take, memory_order_relaxed);
			}
			if (u->fi.dtype == TIR_DTYPE_BOOL)
				for (size_t i = 0; i < take; i++)
					if (d[i] > 1) {
						upload_fault(u, 400, "bad_request", "tensor frame: byte %zu: a bool is 0 or 1, not %u",
							     u->fi.headlen + u->got + i, d[i]);
						break;
					}
			if (!u->threaded)
				stream_check(u, d, take);
			u->got += take;
			u->fin += take;
		} else {
			take = u->fi.padlen - u->npad < n ? u->fi.padlen - u->npad : n;
			for (size_t i = 0; i < take; i++)
				if (d[i])
					upload_fault(u, 400, "bad_request", "tensor frame: byte %zu: padding must be zero",
						     u->fi.headlen + u->nbytes + u->npad + i);
			if (!u->threaded)
				stream_check(u, d, take);
			u->npad += take;
			u->fin += take;
		}
		d += take;
		n -= take;
	}
	if (u->threaded && !u->status) {
		/* a handoff per sixteen chunks (or the end): avail is written here only */
		bool hand = chunks_in(u, u->fin) - chunks_in(u, u->avail) >= 16 || u->fin == u->flen;
		size_t bad = 0;
		unsigned char h[32];
		if (hand) {
			pthread_mutex_lock(&u->mu);
			u->avail = u->fin;
			if (u->waiting)
				pthread_cond_broadcast(&u->cv);
			bad = u->bad;
			memcpy(h, u->badhash, 32);
			pthread_mutex_unlock(&u->mu);
		}
		if (bad) {
			check_join(u, true);
			chunk_fault(u, bad - 1, h);
		}
	}
}

void upload_absorb(struct upload *u, const void *piece, size_t n)
{
	const unsigned char *d = piece;
	u->in += n;
	while (n && !u->status) {
		size_t take;
		if (!u->listlen) {
			take = TIR_CHUNKS_HEAD - u->nlist < n ? TIR_CHUNKS_HEAD - u->nlist : n;
			memcpy(u->lhead + u->nlist, d, take);
			u->nlist += take;
			if (u->nlist == TIR_CHUNKS_HEAD)
				list_begin(u);
		} else if (u->nlist < u->listlen) {
			take = u->listlen - u->nlist < n ? u->listlen - u->nlist : n;
			memcpy(u->list + u->nlist, d, take);
			u->nlist += take;
			if (u->nlist == u->listlen)
				list_done(u);
		} else {
			take = n;
			frame_absorb(u, d, n);
		}
		d += take;
		n -= take;
	}
}

struct upload *upload_new(const char *name, uint64_t len, bool held)
{
	struct upload *u = calloc(1, sizeof *u);
	if (u)
		u->ctx = EVP_MD_CTX_new();
	if (!u || !u->ctx) {
		free(u);
		return NULL;
	}
	snprintf(u->name, sizeof u->name, "%s", name);
	u->len = len;
	u->held = held;
	return u;
}

int upload_finish(struct upload *u, bool *held, struct tir_tensor *t, const char **code, char *msg,
		  size_t n)
{
	bool threaded = u->threaded;
	check_join(u, false);
	if (threaded && u->bad) /* (the threads are gone: read without the lock) */
		chunk_fault(u, u->bad - 1, u->badhash);
	*held = u->held;
	if (!u->status && u->nlist < TIR_CHUNKS_HEAD)
		upload_fault(u, 400, "bad_request", "chunk list: %llu bytes, its head needs %d",
			     (unsigned long long)u->in, TIR_CHUNKS_HEAD);
	else if (!u->status && u->nlist < u->listlen)
		upload_fault(u, 400, "bad_request", "chunk list: truncated: %zu of %zu bytes", u->nlist, u->listlen);
	else if (!u->status && !u->headok)
		upload_fault(u, 400, "bad_request", "tensor frame: %llu bytes, the header needs %zu",
			     (unsigned long long)u->fin, u->nhead < 16 ? (size_t)16 : u->fi.headlen);
	if (u->status) {
		*code = u->code;
		snprintf(msg, n, "%s", u->msg);
		return u->status;
	}
	if (!u->held) {
		*t = u->t;
		memset(&u->t, 0, sizeof u->t);
	}
	return 0;
}

uint64_t upload_frame_bytes(const struct upload *u)
{
	return u->flen;
}

bool upload_failed(const struct upload *u)
{
	return u->status != 0;
}
