/*
 * upload.c — PUT /v1/blobs/SHA256 as the body arrives: the tensor frame
 * (net.h) decoded piece by piece and the body hashed (store.h).
 *
 * The frame's header goes into head[]; once it is whole and checked (the
 * rules of tir_frame_decode, which wants the whole frame in memory), the
 * tensor to keep is allocated and the data is copied straight into it:
 * one allocation and no copy of the whole body.  Past 4 MiB two threads
 * help: one hashes the data behind the copy, one faults in the tensor's
 * fresh pages ahead of it.  On loopback, hashing (about 1.8 GB/s with the
 * CPU's SHA extensions) and the kernel's zeroing of fresh pages (about
 * 2-3 GB/s here) are most of what an upload costs; on threads of their
 * own they overlap each other and the receive, and the scheduler spreads
 * them.  (When the one hashing thread also did the faulting, it was
 * always behind on the hash, so the receiving thread took the faults
 * itself, a trap per page: 20% more CPU for the whole upload.)  A blob
 * the server holds already is only hashed.
 */
#include "store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

#define HASH_THREAD_MIN ((size_t)4 << 20)
/* Data goes to the hashing thread in pieces of at least this: a handoff
 * (a lock, often a wakeup) per 128 KiB piece of MHD's cost more than the
 * wait. */
#define HANDOFF ((size_t)1 << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

struct upload {
	uint64_t len;                  /* Content-Length */
	uint64_t in;                   /* bytes received */
	struct tir_sha256 *sha;
	bool held;                     /* the server holds it: hash, keep nothing */
	int status;                    /* the first fault of the frame: 400 or 413 */
	char msg[300];
	unsigned char head[16 + 8 * TIR_MAX_RANK];
	size_t nhead, headlen;         /* headlen: 0 until the rank is known */
	struct tir_tensor t;
	size_t nbytes, got, padlen, npad;
	/* the hashing thread: it hashes t's data up to `avail` */
	bool threaded;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t avail;
	bool end, waiting;
	/* the touching thread: faults in t's pages ahead of the copy */
	bool touching;
	pthread_t toucher;
	atomic_size_t copied;          /* = got, for the toucher to skip what the copy faulted */
	atomic_bool stop_touch;
};

/* The touching thread: faults in the tensor's fresh pages ahead of the
 * copy (MADV_POPULATE_WRITE, 4 MiB a call: no trap per page), on a thread
 * of its own, so that the kernel's zeroing of them overlaps both the
 * receive and the hash. */
static void *touch_thread(void *arg)
{
	struct upload *u = arg;
	unsigned char *data = tir_tensor_data(&u->t);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = ((uintptr_t)data + page - 1) & ~(uintptr_t)(page - 1);
	size_t skip = base - (uintptr_t)data; /* to the first whole page */
	size_t span = u->nbytes > skip ? (u->nbytes - skip) & ~(page - 1) : 0;
	for (size_t ahead = 0; ahead < span && !atomic_load(&u->stop_touch);) {
		/* past what the copy has faulted in already, if it got ahead */
		size_t copied = atomic_load_explicit(&u->copied, memory_order_relaxed);
		if (copied > skip + ahead)
			ahead = (copied - skip) & ~(page - 1);
		if (ahead >= span)
			break;
		size_t n = span - ahead < ((size_t)4 << 20) ? span - ahead : (size_t)4 << 20;
		if (madvise((void *)(base + ahead), n, MADV_POPULATE_WRITE))
			break; /* not on this kernel: the copy faults them in */
		ahead += n;
	}
	return NULL;
}

/* The hashing thread: t's data up to `avail`, as the copy goes. */
static void *hash_thread(void *arg)
{
	struct upload *u = arg;
	unsigned char *data = tir_tensor_data(&u->t);
	size_t done = 0;
	pthread_mutex_lock(&u->mu);
	for (;;) {
		size_t avail = u->avail;
		if (avail > done) {
			pthread_mutex_unlock(&u->mu);
			tir_sha256_update(u->sha, data + done, avail - done);
			done = avail;
		} else if (u->end) {
			break;
		} else {
			u->waiting = true;
			pthread_cond_wait(&u->cv, &u->mu);
			u->waiting = false;
			continue;
		}
		pthread_mutex_lock(&u->mu);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

/* Stop the touching thread, and the hashing thread once it has hashed
 * all that was copied. */
static void hash_join(struct upload *u)
{
	if (u->touching) {
		atomic_store(&u->stop_touch, true);
		pthread_join(u->toucher, NULL);
		u->touching = false;
	}
	if (!u->threaded)
		return;
	pthread_mutex_lock(&u->mu);
	u->avail = u->got; /* all that was copied is hashed */
	u->end = true;
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
	pthread_join(u->th, NULL);
	pthread_mutex_destroy(&u->mu);
	pthread_cond_destroy(&u->cv);
	u->threaded = false;
}

void upload_free(struct upload *u)
{
	if (!u)
		return;
	hash_join(u);
	if (u->sha) {
		char skip[TIR_SHA_HEX + 1];
		tir_sha256_final(u->sha, skip);
	}
	tir_tensor_release(&u->t);
	free(u);
}

static void upload_fault(struct upload *u, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void upload_fault(struct upload *u, int status, const char *fmt, ...)
{
	if (u->status)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof u->msg, fmt, ap);
	va_end(ap);
	u->status = status;
	hash_join(u); /* the data goes no further: hash the rest here */
}

/* The header is whole (head[0..headlen)): check it against the body's
 * length and allocate the tensor. */
static void upload_head(struct upload *u, uint64_t body_len)
{
	const unsigned char *p = u->head;
	enum tir_dtype dt = p[4];
	int rank = p[5];
	int64_t shape[TIR_MAX_RANK];
	uint64_t numel = 1, real = 1;
	for (int i = 0; i < rank; i++) {
		uint64_t d = tir_get_u64(p + 16 + 8 * i);
		if (d > (uint64_t)TIR_MAX_DIM)
			return upload_fault(u, 413, "tensor frame: byte %d: axis %d of %llu is over the limit",
					    16 + 8 * i, i, (unsigned long long)d);
		shape[i] = (int64_t)d;
		numel *= d ? d : 1; /* a 0 axis counts as 1, as in the checker */
		real *= d;
		if (numel > (uint64_t)TIR_MAX_ELEMS)
			return upload_fault(u, 413, "tensor frame: more than %lld elements, the most a tensor holds",
					    (long long)TIR_MAX_ELEMS);
	}
	uint64_t nbytes = tir_get_u64(p + 8);
	if (nbytes != real * tir_dtype_size(dt))
		return upload_fault(u, 400, "tensor frame: byte 8: %llu data bytes, but %s of that shape holds %llu",
				    (unsigned long long)nbytes, tir_dtype_name(dt),
				    (unsigned long long)(real * tir_dtype_size(dt)));
	uint64_t total = u->headlen + pad8(nbytes);
	if (body_len < total)
		return upload_fault(u, 400, "tensor frame: truncated: %llu of %llu bytes",
				    (unsigned long long)body_len, (unsigned long long)total);
	if (body_len > total)
		return upload_fault(u, 400, "tensor frame: %llu bytes after the frame's %llu",
				    (unsigned long long)(body_len - total), (unsigned long long)total);
	struct tir_err err = {0};
	if (tir_tensor_alloc(&u->t, dt, rank, shape, false, &err))
		return upload_fault(u, 503, "no memory for a tensor of %llu bytes now", (unsigned long long)nbytes);
	u->nbytes = nbytes;
	u->padlen = pad8(nbytes) - nbytes;
	if (nbytes >= HASH_THREAD_MIN) {
		pthread_mutex_init(&u->mu, NULL);
		pthread_cond_init(&u->cv, NULL);
		u->touching = !pthread_create(&u->toucher, NULL, touch_thread, u);
		u->threaded = !pthread_create(&u->th, NULL, hash_thread, u);
		if (!u->threaded) {
			pthread_mutex_destroy(&u->mu);
			pthread_cond_destroy(&u->cv);
		}
	}
}

void upload_absorb(struct upload *u, const void *piece, size_t n)
{
	const unsigned char *d = piece;
	uint64_t body_len = u->len;
	u->in += n;
	/* what the thread does not hash is hashed here, in order: the
	 * header, then (when the thread is stopped) data and padding */
	if (u->held || u->status) {
		tir_sha256_update(u->sha, d, n);
		return;
	}
	while (n && !u->status) {
		size_t take;
		if (!u->t.buf) {
			size_t want = u->headlen ? u->headlen : 16;
			take = want - u->nhead < n ? want - u->nhead : n;
			memcpy(u->head + u->nhead, d, take);
			tir_sha256_update(u->sha, d, take);
			u->nhead += take;
			if (u->nhead == 16 && !u->headlen) {
				const unsigned char *p = u->head;
				if (memcmp(p, TIR_FRAME_MAGIC, 4))
					upload_fault(u, 400, "tensor frame: does not start with \"TIRT\"");
				else if (p[4] >= TIR_DTYPE_COUNT)
					upload_fault(u, 400, "tensor frame: byte 4: unknown dtype %u", p[4]);
				else if (p[5] > TIR_MAX_RANK)
					upload_fault(u, 400, "tensor frame: byte 5: rank %u is over %d", p[5], TIR_MAX_RANK);
				else if (p[6] || p[7])
					upload_fault(u, 400, "tensor frame: bytes 6-7 must be zero");
				u->headlen = 16 + 8 * (size_t)p[5];
			}
			if (!u->status && u->headlen && u->nhead == u->headlen)
				upload_head(u, body_len);
		} else if (u->got < u->nbytes) {
			take = u->nbytes - u->got < n ? u->nbytes - u->got : n;
			unsigned char *dst = (unsigned char *)tir_tensor_data(&u->t) + u->got;
			memcpy(dst, d, take);
			if (u->t.dtype == TIR_DTYPE_BOOL)
				for (size_t i = 0; i < take; i++)
					if (dst[i] > 1) {
						upload_fault(u, 400, "tensor frame: byte %zu: a bool is 0 or 1, not %u",
							     u->headlen + u->got + i, dst[i]);
						break;
					}
			u->got += take;
			atomic_store_explicit(&u->copied, u->got, memory_order_relaxed);
			if (!u->threaded) {
				tir_sha256_update(u->sha, d, take);
			} else if (u->got - u->avail >= HANDOFF || u->got == u->nbytes) {
				/* avail is written here only: read without the lock */
				pthread_mutex_lock(&u->mu);
				u->avail = u->got;
				if (u->waiting)
					pthread_cond_signal(&u->cv);
				pthread_mutex_unlock(&u->mu);
			}
		} else {
			hash_join(u);
			take = u->padlen - u->npad < n ? u->padlen - u->npad : n;
			tir_sha256_update(u->sha, d, take);
			for (size_t i = 0; i < take; i++)
				if (d[i])
					upload_fault(u, 400, "tensor frame: byte %zu: padding must be zero",
						     u->headlen + u->nbytes + u->npad + i);
			u->npad += take;
		}
		d += take;
		n -= take;
	}
	if (n) /* after a fault */
		tir_sha256_update(u->sha, d, n);
}

struct upload *upload_new(uint64_t len, bool held)
{
	struct upload *u = calloc(1, sizeof *u);
	if (u)
		u->sha = tir_sha256_new();
	if (!u || !u->sha) {
		free(u);
		return NULL;
	}
	u->len = len;
	u->held = held;
	return u;
}

int upload_finish(struct upload *u, char sha[TIR_SHA_HEX + 1], bool *held, struct tir_tensor *t,
		  char *msg, size_t n)
{
	hash_join(u);
	tir_sha256_final(u->sha, sha);
	u->sha = NULL;
	*held = u->held;
	size_t head = u->headlen ? u->headlen : 16;
	if (!u->held && !u->status && u->in < head)
		upload_fault(u, 400, "tensor frame: %llu bytes, the header needs %zu", (unsigned long long)u->in,
			     head);
	if (u->held)
		return 0;
	if (u->status) {
		snprintf(msg, n, "%s", u->msg);
		return u->status;
	}
	*t = u->t;
	memset(&u->t, 0, sizeof u->t);
	return 0;
}
