/*
 * util.c — the small things everything else leans on: the arena, growable
 * vectors and strings, dtype names, error filling, the clock.  No policy
 * lives here.
 */
#include "ir.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

_Noreturn void tir_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "tir: internal error: %s (%s:%d)\n", what, file, line);
	abort();
}

double tir_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* a node's shape of rank 0 (ir.h) */
const int64_t tir_shape0[1] = {1};

/* ---- arena ---- */

struct tir_arena_block {
	struct tir_arena_block *next;
	size_t used, cap;
	bool mapped;          /* mmap'd (zero when new), not malloc'd */
	_Alignas(16) unsigned char mem[];
};

#define ARENA_BLOCK (64 * 1024)
#define ARENA_BLOCK_MAX (2 * 1024 * 1024)
#define HUGE_PAGE ((size_t)2 * 1024 * 1024)

/* total bytes mapped at a HUGE_PAGE boundary, or MAP_FAILED */
static void *map_aligned(size_t total)
{
	size_t span = total + HUGE_PAGE;
	unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return m;
	size_t lead = (HUGE_PAGE - (uintptr_t)m % HUGE_PAGE) % HUGE_PAGE;
	if (lead)
		munmap(m, lead);
	munmap(m + lead + total, span - lead - total);
	return m + lead;
}

/* A block of at least cap bytes.  The big ones are mapped from the kernel
 * with their pages at once (Linux): a big program's arena otherwise takes
 * one page fault per page, which was a third of parse_bench's time; and
 * their memory is zero already.  From HUGE_PAGE up a block is whole huge
 * pages, at their boundary, asked for as such (MADV_HUGEPAGE): one page
 * then costs the kernel what 512 small ones do, a program of 100,000
 * statements spending most of its parse in the kernel otherwise. */
static struct tir_arena_block *new_block(size_t cap, bool populate)
{
	struct tir_arena_block *b = NULL;
	size_t total = sizeof *b + cap;
	if (total >= HUGE_PAGE) {
		total = (total + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
		void *m = map_aligned(total);
		if (m != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
			(void)madvise(m, total, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
			if (populate) /* best effort: else it faults as it fills */
				(void)madvise(m, total, MADV_POPULATE_WRITE);
#endif
			b = m;
			b->mapped = true;
			cap = total - sizeof *b;
		}
	} else if (cap > ARENA_BLOCK) {
		int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
		flags |= MAP_POPULATE;
#endif
		void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (m != MAP_FAILED) {
			b = m;
			b->mapped = true;
		}
	}
	if (!b && !populate)
		return NULL; /* room reserved ahead: mapped or not at all */
	if (!b) {
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->mapped = false;
	}
	b->used = 0;
	b->cap = cap;
	return b;
}

/* The next n bytes of block b (which has room for them), zeroed */
static inline __attribute__((always_inline)) void *block_take(struct tir_arena *a, struct tir_arena_block *b,
							      size_t n)
{
	void *p = b->mem + b->used;
	b->used += n;
	a->used_total += n;
	if (!b->mapped)
		memset(p, 0, n);
	return p;
}

/* A new block at the head of the arena with room for n bytes more (or
 * behind it, for a big one-off), then the piece of it: arena_take's way
 * when its block is full, out of line so that its common way is short. */
static __attribute__((noinline)) void *arena_grow(struct tir_arena *a, size_t n)
{
	struct tir_arena_block *b = a->head;
	/* blocks double as the program grows, up to ARENA_BLOCK_MAX in all
	 * (one huge page) */
	size_t grow = !b ? ARENA_BLOCK
		      : b->cap >= ARENA_BLOCK_MAX / 2 ? ARENA_BLOCK_MAX - sizeof *b : b->cap * 2;
	size_t cap = n > grow / 4 ? n : grow;
	struct tir_arena_block *nb = new_block(cap, true);
	if (!nb)
		return NULL;
	if (cap == n && b) {
		/* a big one-off goes behind the current block, which keeps serving */
		nb->next = b->next;
		b->next = nb;
	} else {
		nb->next = b;
		a->head = nb;
	}
	return block_take(a, nb, n);
}

/* n bytes (a multiple of the arena's pieces' alignment), zeroed */
static inline __attribute__((always_inline)) void *arena_take(struct tir_arena *a, size_t n)
{
	struct tir_arena_block *b = a->head;
	if (!b || b->cap - b->used < n)
		return arena_grow(a, n);
	return block_take(a, b, n);
}

void *tir_arena_alloc(struct tir_arena *a, size_t n)
{
	return arena_take(a, (n + 15) & ~(size_t)15);
}

void *tir_arena_alloc8(struct tir_arena *a, size_t n)
{
	return arena_take(a, (n + 7) & ~(size_t)7);
}

void *tir_arena_alloc1(struct tir_arena *a, size_t n)
{
	return arena_take(a, n);
}

int tir_arena_reserve(struct tir_arena *a, size_t n)
{
	struct tir_arena_block *b = a->head;
	if (sizeof *b + n < HUGE_PAGE / 4 || (b && b->cap - b->used >= n))
		return 0;
	/* from a quarter of a huge page up, a whole one: here a huge page
	 * costs the kernel a fifth of what the 128 small ones in 512 KiB do
	 * (clearing 2 MiB at once against a fault, or a populated page, each;
	 * the blocks the arena grows by otherwise are small pages) */
	if (sizeof *b + n < HUGE_PAGE)
		n = HUGE_PAGE - sizeof *b;
	/* not populated: a guess may be too big, and a huge page costs one
	 * fault when first written */
	struct tir_arena_block *nb = new_block(n, false);
	if (!nb)
		return -TIR_ENOMEM;
	nb->next = b;
	a->head = nb;
	return 0;
}

void *tir_arena_room(const struct tir_arena *a, size_t *n)
{
	const struct tir_arena_block *b = a->head;
	*n = b ? b->cap - b->used : 0;
	return b && *n ? (void *)(b->mem + b->used) : NULL;
}

char *tir_arena_strndup(struct tir_arena *a, const char *s, size_t n)
{
	char *d = tir_arena_alloc(a, n + 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

void tir_arena_free(struct tir_arena *a)
{
	struct tir_arena_block *b = a->head;
	while (b) {
		struct tir_arena_block *next = b->next;
		if (b->mapped) {
			tir_prefault_cancel(b, sizeof *b + b->cap);
			munmap(b, sizeof *b + b->cap);
		}
		else
			free(b);
		b = next;
	}
	a->head = NULL;
	a->used_total = 0;
}

int tir_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 8;
	while (nc < need)
		nc *= 2;
	if (nc > SIZE_MAX / elem)
		return -TIR_ENOMEM;
	void *np = realloc(*p, nc * elem);
	if (!np)
		return -TIR_ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

/* ---- big arrays: whole huge pages of their own ---- */

/* From a quarter of a huge page up an array has huge pages of its own: a
 * program of 10,000 statements then takes one fault for each of its
 * arrays, not a few hundred */
#define PAGES_MIN TIR_PAGES_MIN
_Static_assert(TIR_PAGES_MIN == HUGE_PAGE / 4, "a quarter of a huge page");

size_t tir_pages_round(size_t n)
{
	return (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
}

void *tir_pages_alloc(size_t n)
{
	if (n < PAGES_MIN) {
		/* zeroed by writing, not calloc: fresh pages that calloc leaves to
		 * the kernel are read (the shared zero page) before they are
		 * written, and each then costs a second fault */
		void *m = malloc(n);
		if (m)
			memset(m, 0, n);
		return m;
	}
	n = tir_pages_round(n);
	void *m = map_aligned(n);
	if (m == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(m, n, MADV_HUGEPAGE); /* a hint: without it, small pages */
#endif
	return m;
}

void tir_pages_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < PAGES_MIN) {
		free(p);
	} else {
		tir_prefault_cancel(p, tir_pages_round(n));
		munmap(p, tir_pages_round(n));
	}
}

int tir_grow_pages(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	if (need > SIZE_MAX / elem / 4)
		return -TIR_ENOMEM;
	size_t nc = *cap ? *cap : 8;
	while (nc < need)
		nc *= 2;
	if (nc * elem < PAGES_MIN)
		return tir_grow(p, cap, need, elem);
	nc = tir_pages_round(nc * elem) / elem; /* the pages' room, all of it */
	void *np = tir_pages_alloc(nc * elem);
	if (!np)
		return -TIR_ENOMEM;
	if (*p)
		memcpy(np, *p, *cap * elem);
	tir_pages_free(*p, *cap * elem);
	*p = np;
	*cap = nc;
	return 0;
}

/* ---- strings ---- */

void tir_str_add(struct tir_str *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (tir_grow((void **)&b->s, &b->cap, b->n + n + 1, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}

void tir_str_addf(struct tir_str *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof tmp) {
		tir_str_add(b, tmp, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	tir_str_add(b, big, (size_t)n);
	free(big);
}

void tir_str_free(struct tir_str *b)
{
	free(b->s);
	b->s = NULL;
	b->n = b->cap = 0;
}

/* ---- dtypes ---- */

static const char *const dtype_names[TIR_DTYPE_COUNT] = {"bool", "i32", "i64", "f32", "f64",
							  "f16",  "bf16", "i8",  "u8",  "i16"};
static const size_t dtype_sizes[TIR_DTYPE_COUNT] = {1, 4, 8, 4, 8, 2, 2, 1, 1, 2};

const char *tir_dtype_name(enum tir_dtype t)
{
	return (unsigned)t < TIR_DTYPE_COUNT ? dtype_names[t] : "?";
}

size_t tir_dtype_size(enum tir_dtype t)
{
	return (unsigned)t < TIR_DTYPE_COUNT ? dtype_sizes[t] : 0;
}

bool tir_dtype_is_float(enum tir_dtype t)
{
	return t == TIR_DTYPE_F32 || t == TIR_DTYPE_F64 || t == TIR_DTYPE_F16 || t == TIR_DTYPE_BF16;
}

bool tir_dtype_is_int(enum tir_dtype t)
{
	return t == TIR_DTYPE_I32 || t == TIR_DTYPE_I64 || t == TIR_DTYPE_I8 || t == TIR_DTYPE_U8 ||
	       t == TIR_DTYPE_I16;
}

enum tir_dtype tir_dtype_wide(enum tir_dtype t)
{
	switch (t) {
	case TIR_DTYPE_F16: case TIR_DTYPE_BF16: return TIR_DTYPE_F32;
	case TIR_DTYPE_I8: case TIR_DTYPE_U8: case TIR_DTYPE_I16: return TIR_DTYPE_I32;
	default: return t;
	}
}

/* PyTorch's table: within a kind the wider type (u8 with a signed type
 * the signed type wide enough for both; f16 with bf16 f32); across kinds
 * (bool < integer < float) the higher kind's type. */
enum tir_dtype tir_dtype_promote(enum tir_dtype a, enum tir_dtype b)
{
	/* bits of the value range: signed ints, u8 as 9 (needs a sign bit
	 * to sit beside a signed type); floats ranked f16 = bf16 < f32 < f64 */
	static const int8_t kind[TIR_DTYPE_COUNT] = {0, 1, 1, 2, 2, 2, 2, 1, 1, 1};
	static const int8_t rank[TIR_DTYPE_COUNT] = {0, 32, 64, 32, 64, 16, 16, 8, 9, 16};
	if (a == b)
		return a;
	if (kind[a] != kind[b])
		return kind[a] > kind[b] ? a : b;
	if (rank[a] == rank[b]) /* f16 and bf16 */
		return TIR_DTYPE_F32;
	enum tir_dtype w = rank[a] > rank[b] ? a : b, o = w == a ? b : a;
	if (w == TIR_DTYPE_U8 && o == TIR_DTYPE_I8)
		return TIR_DTYPE_I16;
	return w;
}

int tir_dtype_from_name(const char *s, size_t n)
{
	/* asked of most names in a program: the length or the first byte
	 * rejects them */
	if (n < 2 || n > 4)
		return -1;
	for (int i = 0; i < TIR_DTYPE_COUNT; i++)
		if (n && dtype_names[i][0] == s[0] && strlen(dtype_names[i]) == n &&
		    memcmp(dtype_names[i], s, n) == 0)
			return i;
	return -1;
}

/* ---- types ---- */

int64_t tir_shape_numel(int rank, const int64_t *shape)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= shape[i];
	return n;
}

bool tir_shape_equal(int dta, int ra, const int64_t *a, int dtb, int rb, const int64_t *b)
{
	if (dta != dtb || ra != rb)
		return false;
	for (int i = 0; i < ra; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

char *tir_shape_str(int dtype, int rank, const int64_t *shape, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "%s[", tir_dtype_name(dtype));
	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "",
				      (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* ---- errors ---- */

int tir_errf(struct tir_err *err, int code, const struct tir_loc *loc, const char *fmt, ...)
{
	if (err) {
		err->code = code;
		err->nnotes = 0;
		if (loc)
			err->loc = *loc;
		else
			memset(&err->loc, 0, sizeof err->loc);
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return -code;
}

/* ---- whole huge pages kept for the next ask of their size ----
 * A REPL's lines and a server's runs plan and run a long program again
 * and again, each time making arrays of the same sizes (lib/fusion's
 * tir_node_pages): given back, up to KEEP_N blocks (KEEP_MAX bytes in all)
 * are kept, their pages faulted in already; tir_pages_drop_kept gives
 * them back to the kernel (tir_mem_trim: an idle or pressed server's
 * trim, a REPL's end). */
#define KEEP_N 8
#define KEEP_MAX ((size_t)32 * 1024 * 1024)

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t n; /* its rounded size */
} keep_pages[KEEP_N];

void *tir_pages_take(size_t n, bool *dirty)
{
	size_t r = tir_pages_round(n);
	void *p = NULL;
	pthread_mutex_lock(&keep_mu);
	for (int k = 0; k < KEEP_N && !p; k++)
		if (keep_pages[k].p && keep_pages[k].n == r) {
			p = keep_pages[k].p;
			keep_pages[k].p = NULL;
		}
	pthread_mutex_unlock(&keep_mu);
	*dirty = p != NULL;
	return p ? p : tir_pages_alloc(r);
}

void tir_pages_give(void *p, size_t n)
{
	if (!p)
		return;
	size_t r = tir_pages_round(n), held = 0;
	pthread_mutex_lock(&keep_mu);
	for (int k = 0; k < KEEP_N; k++)
		held += keep_pages[k].p ? keep_pages[k].n : 0;
	for (int k = 0; k < KEEP_N && p && held + r <= KEEP_MAX; k++)
		if (!keep_pages[k].p) {
			keep_pages[k].p = p;
			keep_pages[k].n = r;
			p = NULL;
		}
	pthread_mutex_unlock(&keep_mu);
	if (p)
		tir_pages_free(p, r);
}

size_t tir_pages_drop_kept(void)
{
	size_t freed = 0;
	pthread_mutex_lock(&keep_mu);
	for (int k = 0; k < KEEP_N; k++)
		if (keep_pages[k].p) {
			tir_pages_free(keep_pages[k].p, keep_pages[k].n);
			freed += keep_pages[k].n;
			keep_pages[k].p = NULL;
		}
	pthread_mutex_unlock(&keep_mu);
	return freed;
}
