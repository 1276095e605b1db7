/*
 * tensor.c — tensors: reference-counted aligned buffers, the byte counters
 * behind "peak", dtype conversion, and views (broadcast, transpose, slice,
 * reshape).  No arithmetic kernels live here; see elementwise.c and friends.
 */
#define _GNU_SOURCE /* mremap */
#include "exec.h"
#include "half.h"
#include "iter.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>

/* Let GCC vectorize the conversion loops at -O2 (see elementwise.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif

#define TIR_ALIGN 64
/* Buffers of at most this many bytes share their header's block. */
#define SMALL_BYTES 256

static atomic_size_t mem_current;
static atomic_size_t mem_peak;

size_t tir_mem_current(void)
{
	return atomic_load(&mem_current);
}

size_t tir_mem_peak(void)
{
	return atomic_load(&mem_peak);
}

static atomic_size_t mem_mapped, mem_mapped_peak;

void tir_mem_reset_peak(void)
{
	atomic_store(&mem_peak, atomic_load(&mem_current));
	atomic_store(&mem_mapped_peak, atomic_load(&mem_mapped));
}

size_t tir_mem_mapped(void)
{
	return atomic_load(&mem_mapped);
}

size_t tir_mem_mapped_peak(void)
{
	return atomic_load(&mem_mapped_peak);
}

bool tir_buf_writable(const struct tir_buf *b)
{
	return b && !b->map && __atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) == 1;
}

static atomic_size_t mem_limit;

void tir_mem_set_limit(size_t bytes)
{
	atomic_store(&mem_limit, bytes);
}

size_t tir_mem_limit(void)
{
	return atomic_load(&mem_limit);
}

/* ---- pages kept ready: a server's reserve for the tensors it receives ----
 * Pieces of 2 MiB, faulted in ahead (MADV_POPULATE_WRITE) and asked to
 * be huge pages.  A tensor received into the reserve is a fresh mapping
 * of its size whose pieces are moved in with mremap (the pages move, no
 * byte is copied); when it is released its pieces go back, still faulted
 * in.  The pieces held ready (ready_bytes) count against the budget as
 * tensors do: an allocation that would pass the budget because of them
 * gives them back to the kernel first (the reserve yields to what runs),
 * and the keeper thread makes them again once there is room.  The idle
 * trim (tir_mem_trim) leaves the reserve alone. */
#define PIECE ((size_t)2 << 20)

static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static void **ready;              /* the pieces ready (ready_n of ready_cap) */
static size_t ready_n, ready_cap; /* ready_cap: the target, in pieces */
static atomic_size_t ready_bytes; /* ready_n pieces, and those being faulted in */
static atomic_size_t ready_taken; /* bytes of tensors received into ready pages */
static atomic_int ready_busy;     /* uploads under way: the keeper waits for none */
static pthread_t ready_th;
static bool ready_on, ready_stop;

static bool fits(size_t lim, size_t cur, size_t n)
{
	return !lim || (n <= lim && cur <= lim - n);
}

/* Released buffers kept for reuse (below) count against the budget as
 * the ready pieces do: what the tensors, the reserve and the reuse cache
 * hold together stays within --max-memory. */
static atomic_size_t pool_bytes;
static bool pool_yield(size_t lim, size_t n);
/* and so do the kernels' kept scratch buffers not in use (tir_scratch_put) */
static atomic_size_t keep_bytes;
static bool keep_yield(size_t lim, size_t n);

static size_t held_beside(void)
{
	return atomic_load(&ready_bytes) + atomic_load(&pool_bytes) + atomic_load(&keep_bytes);
}

/* Give ready pieces back to the kernel until n more bytes fit under lim;
 * false: none was given back. */
static bool ready_yield(size_t lim, size_t n)
{
	bool gave = false;
	pthread_mutex_lock(&ready_lock);
	while (ready_n && !fits(lim, atomic_load(&mem_current) + held_beside(), n)) {
		munmap(ready[--ready_n], PIECE);
		atomic_fetch_sub(&ready_bytes, PIECE);
		gave = true;
	}
	pthread_mutex_unlock(&ready_lock);
	return gave;
}

static void peak_up(size_t now)
{
	size_t peak = atomic_load(&mem_peak);
	while (now > peak && !atomic_compare_exchange_weak(&mem_peak, &peak, now))
		;
}

/* n more bytes held, within the budget (false: nothing taken). */
static bool mem_add(size_t n)
{
	size_t lim = atomic_load(&mem_limit), cur;
	for (;;) {
		cur = atomic_load(&mem_current);
		bool ok;
		while ((ok = fits(lim, cur + held_beside(), n)) &&
		       !atomic_compare_exchange_weak(&mem_current, &cur, cur + n))
			;
		if (ok)
			break;
		/* the reuse cache goes first, then kept scratch, then the reserve */
		if (!lim || (!pool_yield(lim, n) && !keep_yield(lim, n) && !ready_yield(lim, n)))
			return false;
	}
	peak_up(cur + n);
	return true;
}

/* One fresh piece, faulted in; NULL when the kernel has none. */
static void *piece_make(void)
{
	char *p = mmap(NULL, 2 * PIECE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + PIECE - 1) & ~(uintptr_t)(PIECE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + PIECE, (size_t)(p + 2 * PIECE - (a + PIECE)));
#ifdef MADV_HUGEPAGE
	madvise(a, PIECE, MADV_HUGEPAGE);
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	if (madvise(a, PIECE, MADV_POPULATE_WRITE))
		memset(a, 0, PIECE); /* a kernel before 5.14 */
	return a;
}

/* Fill the reserve up to its target while the budget has room. */
static void ready_fill(void)
{
	pthread_mutex_lock(&ready_lock);
	while (!ready_stop && ready_n < ready_cap && !atomic_load(&ready_busy) &&
	       (fits(atomic_load(&mem_limit), atomic_load(&mem_current) + held_beside(), PIECE) ||
		/* the reuse cache yields to the reserve */
		(pool_yield(atomic_load(&mem_limit), PIECE) &&
		 fits(atomic_load(&mem_limit), atomic_load(&mem_current) + held_beside(), PIECE)))) {
		atomic_fetch_add(&ready_bytes, PIECE); /* held against the budget as it is made */
		pthread_mutex_unlock(&ready_lock);
		void *p = piece_make();
		pthread_mutex_lock(&ready_lock);
		if (!p || ready_n == ready_cap || ready_stop) {
			atomic_fetch_sub(&ready_bytes, PIECE);
			if (p)
				munmap(p, PIECE);
			if (!p)
				break;
			continue;
		}
		ready[ready_n++] = p;
	}
	pthread_mutex_unlock(&ready_lock);
}

/* The keeper: fills the reserve when no upload is under way (its pages
 * would be faulted in on the cores the upload's copy and checks want),
 * every quarter of a second.  It runs niced too (a thread's nice is its
 * own on Linux). */
static void *ready_keeper(void *arg)
{
	(void)arg;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&ready_lock);
	while (!ready_stop) {
		pthread_mutex_unlock(&ready_lock);
		ready_fill();
		pthread_mutex_lock(&ready_lock);
		if (ready_stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000 * 1000;
		if (ts.tv_nsec >= 1000 * 1000 * 1000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000 * 1000 * 1000;
		}
		pthread_cond_timedwait(&ready_cv, &ready_lock, &ts);
	}
	pthread_mutex_unlock(&ready_lock);
	return NULL;
}

int tir_mem_ready_start(size_t bytes)
{
	size_t cap = bytes / PIECE;
	if (!cap || ready_on)
		return 0;
	ready = calloc(cap, sizeof *ready);
	if (!ready)
		return -1;
	ready_cap = cap;
	ready_stop = false;
	ready_fill(); /* the first upload into a fresh server finds its pages */
	ready_on = !pthread_create(&ready_th, NULL, ready_keeper, NULL);
	return 0;
}

void tir_mem_ready_stop(void)
{
	if (ready_on) {
		pthread_mutex_lock(&ready_lock);
		ready_stop = true;
		pthread_cond_broadcast(&ready_cv);
		pthread_mutex_unlock(&ready_lock);
		pthread_join(ready_th, NULL);
		ready_on = false;
	}
	pthread_mutex_lock(&ready_lock);
	while (ready_n) {
		munmap(ready[--ready_n], PIECE);
		atomic_fetch_sub(&ready_bytes, PIECE);
	}
	free(ready);
	ready = NULL;
	ready_cap = 0;
	pthread_mutex_unlock(&ready_lock);
}

void tir_mem_ready_busy(bool on)
{
	atomic_fetch_add(&ready_busy, on ? 1 : -1);
}

void tir_mem_ready_stats(size_t *target, size_t *held, size_t *taken)
{
	pthread_mutex_lock(&ready_lock);
	*target = ready_cap * PIECE;
	*held = ready_n * PIECE;
	pthread_mutex_unlock(&ready_lock);
	*taken = atomic_load(&ready_taken);
}

/* A mapping of `bytes` (a multiple of PIECE) whose first pieces are the
 * reserve's; NULL when the reserve is empty.  *moved: the bytes that came
 * ready (their charge moved from the reserve to the caller). */
static void *ready_take(size_t bytes, size_t *moved)
{
	*moved = 0;
	size_t k = bytes / PIECE;
	void *got[64];
	char *dst = NULL;
	pthread_mutex_lock(&ready_lock);
	if (!ready_n) {
		pthread_mutex_unlock(&ready_lock);
		return NULL;
	}
	pthread_mutex_unlock(&ready_lock);
	char *p = mmap(NULL, bytes + PIECE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	dst = (char *)(((uintptr_t)p + PIECE - 1) & ~(uintptr_t)(PIECE - 1));
	if (dst > p)
		munmap(p, (size_t)(dst - p));
	if (p + PIECE > dst)
		munmap(dst + bytes, (size_t)(p + PIECE - dst));
#ifdef MADV_HUGEPAGE
	madvise(dst, bytes, MADV_HUGEPAGE);
#endif
	for (size_t i = 0; i < k;) {
		size_t m = 0;
		pthread_mutex_lock(&ready_lock);
		while (m < 64 && i + m < k && ready_n)
			got[m++] = ready[--ready_n];
		pthread_mutex_unlock(&ready_lock);
		if (!m)
			break;
		for (size_t j = 0; j < m; j++, i++) {
			if (mremap(got[j], PIECE, PIECE, MREMAP_MAYMOVE | MREMAP_FIXED, dst + i * PIECE) == MAP_FAILED)
				munmap(got[j], PIECE); /* that piece stays fresh */
			*moved += PIECE;
		}
	}
	return dst;
}

/* A received tensor's mapping released: its pieces back to the reserve,
 * as many as its target wants, the rest to the kernel. */
static void ready_give(char *data, size_t bytes)
{
	size_t i = 0, k = bytes / PIECE;
	pthread_mutex_lock(&ready_lock);
	for (; i < k && ready_n < ready_cap; i++) {
		ready[ready_n++] = data + i * PIECE;
		atomic_fetch_add(&ready_bytes, PIECE);
	}
	pthread_mutex_unlock(&ready_lock);
	if (i < k)
		munmap(data + i * PIECE, (k - i) * PIECE);
}

bool tir_mem_charge(size_t n)
{
	return mem_add(n);
}

void tir_mem_uncharge(size_t n)
{
	atomic_fetch_sub(&mem_current, n);
}

/* A small cache of freed large buffers, reused by exact size: a run
 * that frees and allocates same-sized intermediates (every layer of an
 * MLP) then touches no fresh pages.  Bounded in count and bytes; a buffer
 * of up to half the bytes is kept, so that a server receiving tensors of
 * one shape again and again (or a client receiving them) writes them
 * into pages it has already: fresh pages cost the kernel's zeroing, and
 * inside a virtual machine the host's first touch too (uploads spent much
 * of the server's time in clear_page before).  Under a budget the cache
 * holds only what the budget leaves free: a buffer is kept only if it
 * fits beside what is held, and an allocation that would pass the budget
 * because of the cache lets the oldest buffers go first. */
#define POOL_SLOTS 32
#define POOL_MIN (64 * 1024)
#define POOL_MAX_BYTES ((size_t)512 << 20)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *data;
	size_t bytes;
} pool[POOL_SLOTS];
static int pool_n;

static void *pool_take(size_t bytes)
{
	void *p = NULL;
	if (bytes < POOL_MIN)
		return NULL;
	pthread_mutex_lock(&pool_lock);
	for (int i = pool_n - 1; i >= 0; i--) {
		if (pool[i].bytes == bytes) {
			p = pool[i].data;
			atomic_fetch_sub(&pool_bytes, bytes);
			pool[i] = pool[--pool_n];
			break;
		}
	}
	pthread_mutex_unlock(&pool_lock);
	return p;
}

static void pool_give(void *data, size_t bytes)
{
	if (bytes < POOL_MIN || bytes > POOL_MAX_BYTES / 2) {
		free(data);
		return;
	}
	void *evict = NULL;
	pthread_mutex_lock(&pool_lock);
	if (pool_n == POOL_SLOTS || atomic_load(&pool_bytes) + bytes > POOL_MAX_BYTES) {
		/* drop the oldest */
		evict = pool[0].data;
		atomic_fetch_sub(&pool_bytes, pool[0].bytes);
		memmove(pool, pool + 1, sizeof pool[0] * (size_t)(pool_n - 1));
		pool_n--;
	}
	if (atomic_load(&pool_bytes) + bytes <= POOL_MAX_BYTES &&
	    fits(atomic_load(&mem_limit), atomic_load(&mem_current) + held_beside(), bytes)) {
		pool[pool_n].data = data;
		pool[pool_n++].bytes = bytes;
		atomic_fetch_add(&pool_bytes, bytes);
		data = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	free(evict);
	free(data);
}

/* Let the oldest kept buffers go until n more bytes fit under lim;
 * false: none was let go. */
static bool pool_yield(size_t lim, size_t n)
{
	void *drop[POOL_SLOTS];
	int k = 0;
	pthread_mutex_lock(&pool_lock);
	while (pool_n && !fits(lim, atomic_load(&mem_current) + held_beside(), n)) {
		drop[k++] = pool[0].data;
		atomic_fetch_sub(&pool_bytes, pool[0].bytes);
		memmove(pool, pool + 1, sizeof pool[0] * (size_t)(pool_n - 1));
		pool_n--;
	}
	pthread_mutex_unlock(&pool_lock);
	for (int i = 0; i < k; i++)
		free(drop[i]);
	return k > 0;
}

size_t tir_mem_cached(void)
{
	return atomic_load(&pool_bytes);
}

void tir_mem_trim(void)
{
	pthread_mutex_lock(&pool_lock);
	for (int i = 0; i < pool_n; i++)
		free(pool[i].data);
	pool_n = 0;
	atomic_store(&pool_bytes, 0);
	pthread_mutex_unlock(&pool_lock);
	keep_yield(1, SIZE_MAX); /* every kept scratch buffer not in use */
	tir_pages_drop_kept();   /* and the plans' and runs' arrays kept (lib/ir) */
}

/* ---- scratch: kernels' buffers beside the tensors (exec.h) ----
 * A buffer in use is charged to mem_current (so it is in the peak, and
 * an allocation beside it sees it); a kept one not in use to keep_bytes,
 * held beside as the reuse cache is, and given back when an allocation
 * needs its room.  The keeps that ever held a buffer are on one list
 * (static structs of the kernels: never taken off). */
#define KEEP_SHARE 4 /* under a budget, what is kept stays within limit / KEEP_SHARE */

static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tir_keep *keeps;

/* Large buffers on 2 MiB boundaries, with transparent huge pages asked
 * for: streaming kernels then take one TLB miss per 2 MiB, not per 4 KiB
 * (which costs most inside a virtual machine). */
#define HUGE_MIN ((size_t)4 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)

static void *big_alloc(size_t bytes)
{
	if (bytes < HUGE_MIN)
		return aligned_alloc(TIR_ALIGN, bytes);
	size_t r = (bytes + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
	void *p = aligned_alloc(HUGE_ALIGN, r);
#ifdef MADV_HUGEPAGE
	if (p)
		madvise(p, r, MADV_HUGEPAGE);   /* advice only: failure is fine */
#endif
	return p;
}

static size_t scratch_round(size_t bytes)
{
	return bytes ? (bytes + 63) / 64 * 64 : 64;
}

static bool keep_take(struct tir_keep *k)
{
	int no = 0;
	return atomic_compare_exchange_strong(&k->busy, &no, 1);
}

/* Free kept buffers not in use until n more bytes fit under lim (lim 1,
 * n SIZE_MAX: all of them); false: none was freed. */
static bool keep_yield(size_t lim, size_t n)
{
	bool gave = false;
	if (!atomic_load(&keep_bytes))
		return false;
	pthread_mutex_lock(&keep_lock);
	for (struct tir_keep *k = keeps; k && !fits(lim, atomic_load(&mem_current) + held_beside(), n); k = k->next) {
		if (!keep_take(k))
			continue;
		if (k->p) {
			free(k->p);
			atomic_fetch_sub(&keep_bytes, k->size);
			k->p = NULL;
			k->size = 0;
			gave = true;
		}
		atomic_store(&k->busy, 0);
	}
	pthread_mutex_unlock(&keep_lock);
	return gave;
}

size_t tir_scratch_room(void)
{
	size_t lim = atomic_load(&mem_limit), cur = atomic_load(&mem_current);
	return !lim ? SIZE_MAX : cur < lim ? lim - cur : 0;
}

size_t tir_scratch_kept(void)
{
	return atomic_load(&keep_bytes);
}

void *tir_scratch_get(struct tir_keep *k, size_t bytes, bool *kept)
{
	size_t r = scratch_round(bytes);
	*kept = false;
	if (k && keep_take(k)) {
		if (k->p && k->size >= r) {
			/* from kept to in use: the same bytes held (counted in
			 * use first, so that the sum never dips below them) */
			peak_up(atomic_fetch_add(&mem_current, k->size) + k->size);
			atomic_fetch_sub(&keep_bytes, k->size);
			*kept = true;
			return k->p;
		}
		if (k->p) {
			free(k->p);
			atomic_fetch_sub(&keep_bytes, k->size);
			k->p = NULL;
			k->size = 0;
		}
		void *p = NULL;
		if (mem_add(r) && !(p = big_alloc(r)))
			atomic_fetch_sub(&mem_current, r);
		if (!p) {
			atomic_store(&k->busy, 0);
			return NULL;
		}
		if (!k->listed) {
			pthread_mutex_lock(&keep_lock);
			k->next = keeps;
			keeps = k;
			k->listed = true;
			pthread_mutex_unlock(&keep_lock);
		}
		k->p = p;
		k->size = r;
		*kept = true;
		return p;
	}
	if (!mem_add(r))
		return NULL;
	void *p = big_alloc(r);
	if (!p)
		atomic_fetch_sub(&mem_current, r);
	return p;
}

void tir_scratch_put(struct tir_keep *k, void *p, size_t bytes, bool kept, size_t most)
{
	if (!kept) {
		if (p) {
			free(p);
			atomic_fetch_sub(&mem_current, scratch_round(bytes));
		}
		return;
	}
	size_t size = k->size, lim = atomic_load(&mem_limit);
	if (size <= most && (!lim || atomic_load(&keep_bytes) + size <= lim / KEEP_SHARE)) {
		atomic_fetch_add(&keep_bytes, size); /* kept first: the sum never dips */
	} else {
		free(k->p);
		k->p = NULL;
		k->size = 0;
	}
	atomic_fetch_sub(&mem_current, size);
	atomic_store(&k->busy, 0);
}

int tir_scratch_err(struct tir_err *err, const char *op, const char *what, size_t bytes)
{
	size_t lim = atomic_load(&mem_limit), cur = atomic_load(&mem_current);
	char a[32], l[32], b[32];
	if (!lim)
		return tir_errf(err, TIR_ENOMEM, NULL, "%s: out of memory for %s (%s)", op, what,
				tir_bytes_str(scratch_round(bytes), a));
	return tir_errf(err, TIR_EBUDGET, NULL, "%s: %s need %s; the memory budget has %s left of %s (--max-memory)",
			op, what, tir_bytes_str(scratch_round(bytes), a), tir_bytes_str(cur < lim ? lim - cur : 0, l),
			tir_bytes_str(lim, b));
}

const char *tir_bytes_str(size_t n, char out[32])
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < 4)
		v /= 1024, u++;
	snprintf(out, 32, u && v < 10 ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return out;
}

static void empty(struct tir_tensor *t)
{
	memset(t, 0, sizeof *t);
}

static int alloc_in(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape, bool zero,
		    bool take_ready, struct tir_err *err)
{
	empty(t);
	if ((unsigned)dt >= TIR_DTYPE_COUNT || rank < 0 || rank > TIR_MAX_RANK)
		return tir_errf(err, TIR_ETYPE, NULL, "bad tensor type (dtype %d, rank %d)",
				(int)dt, rank);
	int64_t n = 1;
	bool too_big = false;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return tir_errf(err, TIR_ETYPE, NULL, "negative dimension %lld",
					(long long)shape[i]);
		if (shape[i] > TIR_MAX_DIM)
			too_big = true;
		else if (n != 0 && shape[i] != 0 && n > TIR_MAX_ELEMS / shape[i])
			too_big = true;
		else
			n *= shape[i];
	}
	/* a 0 axis makes the tensor empty however large the others are */
	for (int i = 0; i < rank; i++)
		if (shape[i] == 0)
			too_big = false, n = 0;
	if (too_big || n > TIR_MAX_ELEMS)
		return tir_errf(err, TIR_ENOMEM, NULL,
				"tensor too large (limit %lld elements)",
				(long long)TIR_MAX_ELEMS);

	/* Rounded to the alignment; an empty tensor still gets one block so
	 * that buf is non-NULL exactly when the tensor is allocated. */
	size_t bytes = (size_t)n * tir_dtype_size(dt);
	size_t rounded = (bytes + TIR_ALIGN - 1) / TIR_ALIGN * TIR_ALIGN;
	if (rounded == 0)
		rounded = TIR_ALIGN;
	/* past 4 MiB a received tensor goes into the pages kept ready: the
	 * charge of the pieces moved becomes the tensor's, the rest must fit */
	size_t moved = 0, whole = (rounded + PIECE - 1) / PIECE * PIECE;
	void *got = take_ready && rounded >= HUGE_MIN ? ready_take(whole, &moved) : NULL;
	if (got) {
		size_t from = moved < rounded ? moved : rounded;
		atomic_fetch_add(&mem_current, from);
		atomic_fetch_sub(&ready_bytes, moved);
		if (!mem_add(rounded - from)) {
			atomic_fetch_sub(&mem_current, from);
			munmap(got, whole);
			got = NULL;
		} else {
			atomic_fetch_add(&ready_taken, rounded);
		}
		if (!got) {
			char a[32], h[32], l[32];
			return tir_errf(err, TIR_EBUDGET, NULL,
					"a value of %s would pass the memory budget: %s held of %s (--max-memory)",
					tir_bytes_str(rounded, a), tir_bytes_str(atomic_load(&mem_current), h),
					tir_bytes_str(atomic_load(&mem_limit), l));
		}
	}
	/* a buffer of this size kept for reuse leaves the cache before the
	 * charge, so that the charge does not let it go */
	void *reused = !got && rounded > SMALL_BYTES ? pool_take(rounded) : NULL;
	if (!got && !mem_add(rounded)) {
		if (reused)
			pool_give(reused, rounded);
		char a[32], h[32], l[32];
		return tir_errf(err, TIR_EBUDGET, NULL,
				"a value of %s would pass the memory budget: %s held of %s (--max-memory)",
				tir_bytes_str(rounded, a), tir_bytes_str(atomic_load(&mem_current), h),
				tir_bytes_str(atomic_load(&mem_limit), l));
	}
	/* a small value (a scalar, a short vector: one a statement in a
	 * program of scalars) is one block with its header, one malloc and
	 * one free, not two each */
	bool small = !got && rounded <= SMALL_BYTES;
	struct tir_buf *b = malloc(sizeof *b + (small ? TIR_ALIGN - 1 + rounded : 0));
	void *data = got;
	if (b && small)
		data = (void *)(((uintptr_t)(b + 1) + TIR_ALIGN - 1) & ~(uintptr_t)(TIR_ALIGN - 1));
	else if (b && !got)
		data = reused;
	else if (reused)
		free(reused);
	if (b && !data)
		data = big_alloc(rounded);
	if (!data || !b) {
		if (got)
			munmap(got, whole);
		else
			free(data);
		free(b);
		atomic_fetch_sub(&mem_current, rounded);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory allocating %zu bytes",
				rounded);
	}
	if (zero)
		memset(data, 0, rounded);
	*b = (struct tir_buf){.refs = 1, .bytes = rounded, .data = data, .inline_data = small,
			      .ready_bytes = got ? whole : 0};

	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = shape[i];
	tir_tensor_set_contiguous_strides(t);
	t->offset = 0;
	t->buf = b;
	return 0;
}

int tir_tensor_alloc(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape, bool zero,
		     struct tir_err *err)
{
	return alloc_in(t, dt, rank, shape, zero, false, err);
}

int tir_tensor_alloc_ready(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape,
			   struct tir_err *err)
{
	return alloc_in(t, dt, rank, shape, false, true, err);
}

int tir_tensor_wrap_map(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape, void *map,
			size_t map_bytes, void *data, struct tir_err *err)
{
	empty(t);
	struct tir_buf *b = malloc(sizeof *b);
	if (!b) {
		tir_file_unmap(map, map_bytes);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	*b = (struct tir_buf){.refs = 1, .bytes = map_bytes, .data = data, .map = map, .map_bytes = map_bytes};
	size_t now = atomic_fetch_add(&mem_mapped, map_bytes) + map_bytes;
	size_t peak = atomic_load(&mem_mapped_peak);
	while (now > peak && !atomic_compare_exchange_weak(&mem_mapped_peak, &peak, now))
		;
	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = shape[i];
	tir_tensor_set_contiguous_strides(t);
	t->buf = b;
	return 0;
}

void tir_tensor_release(struct tir_tensor *t)
{
	struct tir_buf *b = t->buf;
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (b->map) {
			tir_file_unmap(b->map, b->map_bytes);
			atomic_fetch_sub(&mem_mapped, b->map_bytes);
		} else if (b->ready_bytes) { /* back to the reserve, its charge too */
			ready_give(b->data, b->ready_bytes);
			atomic_fetch_sub(&mem_current, b->bytes);
		} else {
			atomic_fetch_sub(&mem_current, b->bytes);
			if (!b->inline_data)
				pool_give(b->data, b->bytes);
		}
		free(b);
	}
	empty(t);
}

/* dst is overwritten (not released): it must be empty or hold nothing of its own. */
void tir_tensor_ref(struct tir_tensor *dst, const struct tir_tensor *src)
{
	if (src->buf)
		__atomic_add_fetch(&src->buf->refs, 1, __ATOMIC_RELAXED);
	if (dst != src)
		*dst = *src;
}

int64_t tir_tensor_numel(const struct tir_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->shape[i];
	return n;
}

bool tir_tensor_is_contiguous(const struct tir_tensor *t)
{
	int64_t want = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		if (t->shape[i] == 0)
			return true;
		if (t->shape[i] != 1 && t->strides[i] != want)
			return false;
		want *= t->shape[i];
	}
	return true;
}

void tir_tensor_set_contiguous_strides(struct tir_tensor *t)
{
	int64_t s = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		t->strides[i] = s;
		s *= t->shape[i] ? t->shape[i] : 1;
	}
}

void *tir_tensor_data(const struct tir_tensor *t)
{
	if (!t->buf)
		return NULL;
	return (char *)t->buf->data + t->offset * (int64_t)tir_dtype_size(t->dtype);
}

/* ---- conversion (float to integer: tir_f2i32/tir_f2i64 in iter.h) ---- */

/* One element of type `st` at p, as a double and as an int64. */
static double load_f64(enum tir_dtype st, const void *p)
{
	switch (st) {
	case TIR_DTYPE_BOOL: return *(const uint8_t *)p != 0;
	case TIR_DTYPE_I32: return *(const int32_t *)p;
	case TIR_DTYPE_I64: return (double)*(const int64_t *)p;
	case TIR_DTYPE_F32: return *(const float *)p;
	case TIR_DTYPE_F64: return *(const double *)p;
	case TIR_DTYPE_F16: return tir_h2f(*(const uint16_t *)p);
	case TIR_DTYPE_BF16: return tir_b2f(*(const uint16_t *)p);
	case TIR_DTYPE_I8: return *(const int8_t *)p;
	case TIR_DTYPE_U8: return *(const uint8_t *)p;
	case TIR_DTYPE_I16: return *(const int16_t *)p;
	default: return 0;
	}
}

static int64_t load_i64(enum tir_dtype st, const void *p)
{
	switch (st) {
	case TIR_DTYPE_BOOL: return *(const uint8_t *)p != 0;
	case TIR_DTYPE_I32: return *(const int32_t *)p;
	case TIR_DTYPE_I64: return *(const int64_t *)p;
	case TIR_DTYPE_F32: return tir_f2i64(*(const float *)p);
	case TIR_DTYPE_F64: return tir_f2i64(*(const double *)p);
	case TIR_DTYPE_F16: return tir_f2i64(tir_h2f(*(const uint16_t *)p));
	case TIR_DTYPE_BF16: return tir_f2i64(tir_b2f(*(const uint16_t *)p));
	case TIR_DTYPE_I8: return *(const int8_t *)p;
	case TIR_DTYPE_U8: return *(const uint8_t *)p;
	case TIR_DTYPE_I16: return *(const int16_t *)p;
	default: return 0;
	}
}

int tir_tensor_convert(const struct tir_tensor *src, enum tir_dtype dt,
		       struct tir_tensor *dst, struct tir_err *err)
{
	struct tir_tensor out;
	int rc = tir_tensor_alloc(&out, dt, src->rank, src->shape, src->buf == NULL, err);
	if (rc)
		return rc;
	struct tir_iter it;
	const int64_t *st[2] = {out.strides, src->strides};
	size_t dsz = tir_dtype_size(dt), ssz = tir_dtype_size(src->dtype);
	char *d = tir_tensor_data(&out);
	const char *s = tir_tensor_data(src);
	if (s && tir_iter_init(&it, src->rank, src->shape, 2, st))
		do {
			tir_cvt_run(dt, d + it.off[0] * (int64_t)dsz, src->dtype,
				 s + it.off[1] * (int64_t)ssz, it.istride[1], it.inner);
		} while (tir_iter_next(&it));
	*dst = out;
	return 0;
}

/* ---- views ----
 * dst may be src itself (the view replaces it, reference moved); any other
 * dst is overwritten, not released. */

static void view_out(struct tir_tensor *dst, const struct tir_tensor *src,
		     const struct tir_tensor *v)
{
	struct tir_tensor r;
	tir_tensor_ref(&r, v);
	if (dst == src)
		tir_tensor_release(dst);
	*dst = r;
}

void tir_view_broadcast(const struct tir_tensor *src, int rank, const int64_t *shape,
			struct tir_tensor *dst)
{
	struct tir_tensor v = *src;
	int lead = rank - src->rank;
	TIR_ASSERT(lead >= 0 && rank <= TIR_MAX_RANK);
	for (int i = 0; i < rank; i++) {
		int j = i - lead;
		v.shape[i] = shape[i];
		if (j < 0) {
			v.strides[i] = 0;
		} else if (src->shape[j] == shape[i]) {
			v.strides[i] = src->strides[j];
		} else {
			TIR_ASSERT(src->shape[j] == 1);
			v.strides[i] = 0;
		}
	}
	v.rank = rank;
	view_out(dst, src, &v);
}

void tir_view_transpose(const struct tir_tensor *src, const int *perm, struct tir_tensor *dst)
{
	struct tir_tensor v = *src;
	for (int i = 0; i < src->rank; i++) {
		TIR_ASSERT(perm[i] >= 0 && perm[i] < src->rank);
		v.shape[i] = src->shape[perm[i]];
		v.strides[i] = src->strides[perm[i]];
	}
	view_out(dst, src, &v);
}

/* Elements start, start+step, ... (len of them) along axis; the caller has
 * clamped them into range.  step may be negative. */
void tir_view_slice(const struct tir_tensor *src, int axis, int64_t start, int64_t step,
		    int64_t len, struct tir_tensor *dst)
{
	struct tir_tensor v = *src;
	TIR_ASSERT(axis >= 0 && axis < src->rank && len >= 0);
	if (len > 0) {
		TIR_ASSERT(start >= 0 && start < src->shape[axis]);
		TIR_ASSERT(start + (len - 1) * step >= 0 &&
			   start + (len - 1) * step < src->shape[axis]);
		v.offset += start * src->strides[axis];
	}
	v.shape[axis] = len;
	v.strides[axis] = src->strides[axis] * step;
	view_out(dst, src, &v);
}

int tir_tensor_reshape(const struct tir_tensor *src, int rank, const int64_t *shape,
		       struct tir_tensor *dst, struct tir_err *err)
{
	int64_t n = 1;
	if (rank < 0 || rank > TIR_MAX_RANK)
		return tir_errf(err, TIR_ETYPE, NULL, "reshape: bad rank %d", rank);
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0 || (shape[i] && n > INT64_MAX / shape[i]))
			return tir_errf(err, TIR_ETYPE, NULL, "reshape: bad shape");
		n *= shape[i];
	}
	if (n != tir_tensor_numel(src))
		return tir_errf(err, TIR_ETYPE, NULL,
				"reshape: cannot reshape %lld elements into %lld",
				(long long)tir_tensor_numel(src), (long long)n);
	struct tir_tensor v;
	if (tir_tensor_is_contiguous(src)) {
		tir_tensor_ref(&v, src);
	} else {
		int rc = tir_tensor_convert(src, src->dtype, &v, err);
		if (rc)
			return rc;
	}
	v.rank = rank;
	for (int i = 0; i < rank; i++)
		v.shape[i] = shape[i];
	tir_tensor_set_contiguous_strides(&v);
	if (dst == src)
		tir_tensor_release(dst);
	*dst = v;
	return 0;
}

/* Pointer to logical (row-major) element i. */
static const void *elem_ptr(const struct tir_tensor *t, int64_t i)
{
	int64_t off = 0;
	for (int d = t->rank - 1; d >= 0; d--) {
		if (t->shape[d] == 0)
			break;
		off += (i % t->shape[d]) * t->strides[d];
		i /= t->shape[d];
	}
	return (const char *)tir_tensor_data(t) + off * (int64_t)tir_dtype_size(t->dtype);
}

double tir_tensor_get_f64(const struct tir_tensor *t, int64_t i)
{
	TIR_ASSERT(t->buf && i >= 0 && i < tir_tensor_numel(t));
	return load_f64(t->dtype, elem_ptr(t, i));
}

int64_t tir_tensor_get_i64(const struct tir_tensor *t, int64_t i)
{
	TIR_ASSERT(t->buf && i >= 0 && i < tir_tensor_numel(t));
	return load_i64(t->dtype, elem_ptr(t, i));
}
