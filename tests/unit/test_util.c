/*
 * test_util.c — the small utilities lib/tir.h gives every layer: the one
 * clock (tir_now_ms), the two float predicates on dtypes (any float, and
 * the floats kernels compute in), and the dtype names both ways; and
 * lib/ir's memory: the arena and the arrays of whole huge pages.
 */
#include "tir.h"
#include "ir/ir.h"
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void test_clock(void)
{
	double t0 = tir_now_ms(), last = t0;
	bool steady = true;
	for (int i = 0; i < 1000; i++) {
		double t = tir_now_ms();
		steady &= t >= last;
		last = t;
	}
	CHECK(steady);
	CHECK(t0 > 0);
	struct timespec ts = {0, 20 * 1000 * 1000}; /* 20 ms */
	nanosleep(&ts, NULL);
	double slept = tir_now_ms() - t0;
	CHECK(slept >= 19.9);
	CHECK(slept < 60e3); /* milliseconds, not microseconds or nanoseconds */
}

static void test_dtypes(void)
{
	/* by name, as SPEC.md lists them: any float, and the floats kernels
	 * compute in (tir_dtype_wide of every float) */
	static const struct {
		const char *name;
		bool is_float, wide_float, is_int;
	} want[] = {
		{"bool", false, false, false}, {"i32", false, false, true}, {"i64", false, false, true},
		{"f32", true, true, false},    {"f64", true, true, false},  {"f16", true, false, false},
		{"bf16", true, false, false},  {"i8", false, false, true},  {"u8", false, false, true},
		{"i16", false, false, true},
	};
	CHECK(sizeof want / sizeof want[0] == TIR_DTYPE_COUNT);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int dt = tir_dtype_from_name(want[i].name, strlen(want[i].name));
		CHECK(dt >= 0 && dt < TIR_DTYPE_COUNT);
		if (dt < 0)
			continue;
		enum tir_dtype t = (enum tir_dtype)dt;
		CHECK(!strcmp(tir_dtype_name(t), want[i].name));
		CHECK(tir_dtype_is_float(t) == want[i].is_float);
		CHECK(tir_dtype_is_wide_float(t) == want[i].wide_float);
		CHECK(tir_dtype_is_int(t) == want[i].is_int);
		/* a wide float is a float, and each float widens to one */
		CHECK(!tir_dtype_is_wide_float(t) || tir_dtype_is_float(t));
		CHECK(!tir_dtype_is_float(t) || tir_dtype_is_wide_float(tir_dtype_wide(t)));
	}
	CHECK(tir_dtype_from_name("f8", 2) == -1);
	CHECK(tir_dtype_from_name("f32x", 4) == -1);
	CHECK(!strcmp(tir_dtype_name(TIR_DTYPE_COUNT), "?"));
	CHECK(!tir_dtype_is_float(TIR_DTYPE_COUNT) && !tir_dtype_is_wide_float(TIR_DTYPE_COUNT));
}

#define MIB ((size_t)1 << 20)

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* n more pieces of size bytes from ar, each step bytes past *prev (the
 * last one taken) and zeroed, then filled with fill; *prev the last */
static bool consecutive(struct tir_arena *ar, unsigned char **prev, int n, size_t size, size_t step, int fill)
{
	for (int i = 0; i < n; i++) {
		unsigned char *q = tir_arena_alloc(ar, size);
		if (q != *prev + step || !all_zero(q, size))
			return false;
		memset(q, fill, size);
		*prev = q;
	}
	return true;
}

static void test_pages(void)
{
	/* small: the allocator's; big: huge pages at their boundary; both zeroed */
	unsigned char *a = tir_pages_alloc(100);
	CHECK(a && all_zero(a, 100));
	tir_pages_free(a, 100);
	size_t n = 3 * MIB + 5;
	unsigned char *b = tir_pages_alloc(n);
	CHECK(b && (uintptr_t)b % (2 * MIB) == 0 && all_zero(b, 4 * MIB));
	if (b)
		memset(b, 0xab, 4 * MIB); /* the whole of its pages is its own */
	tir_pages_free(b, n);
	tir_pages_free(NULL, n);

	/* an array growing through the threshold keeps every element */
	uint32_t *v = NULL;
	size_t cap = 0, want = 1500000;
	bool ok = true;
	for (size_t i = 0; i < want && ok; i++) {
		ok = tir_grow_pages((void **)&v, &cap, i + 1, sizeof *v) == 0 && cap > i;
		if (ok)
			v[i] = (uint32_t)(i * 2654435761u);
	}
	CHECK(ok);
	CHECK(cap * sizeof *v % (2 * MIB) == 0);
	size_t bad = 0;
	for (size_t i = 0; ok && i < want; i++)
		bad += v[i] != (uint32_t)(i * 2654435761u);
	CHECK(bad == 0);
	tir_pages_free(v, cap * sizeof *v);
	/* a size past memory is refused, not wrapped */
	void *w = NULL;
	size_t wcap = 0;
	CHECK(tir_grow_pages(&w, &wcap, SIZE_MAX / 4, 16) < 0 && !w && wcap == 0);
}

/* Blocks kept for the next ask of their size: the same pages back
 * (written: dirty), at most 32 MiB kept, all given back by
 * tir_pages_drop_kept, after which a block is new again (zero). */
static void test_kept_pages(void)
{
	tir_pages_drop_kept(); /* (none kept by an earlier test) */
	bool dirty = true;
	size_t n = 3 * MIB + 5;
	unsigned char *a = tir_pages_take(n, &dirty);
	CHECK(a && !dirty && (uintptr_t)a % (2 * MIB) == 0 && all_zero(a, 4 * MIB));
	if (a)
		memset(a, 0xcd, n);
	tir_pages_give(a, n);
	unsigned char *b = tir_pages_take(n - 4096, &dirty); /* the same 4 MiB rounded */
	CHECK(b == a && dirty && b && b[n - 1] == 0xcd);
	unsigned char *c = tir_pages_take(5 * MIB, &dirty);   /* another size: new */
	CHECK(c && c != b && !dirty && all_zero(c, 6 * MIB));
	tir_pages_give(b, n);
	tir_pages_give(c, 5 * MIB);
	CHECK(tir_pages_drop_kept() == 10 * MIB);
	CHECK(tir_pages_drop_kept() == 0);
	/* kept within 32 MiB: nine blocks of 6 MiB given, five kept */
	unsigned char *many[9];
	for (int k = 0; k < 9; k++)
		many[k] = tir_pages_take(6 * MIB, &dirty);
	for (int k = 0; k < 9; k++)
		tir_pages_give(many[k], 6 * MIB);
	CHECK(tir_pages_drop_kept() == 30 * MIB);
	tir_pages_give(NULL, MIB);
}

/* The arena: zeroed, 16-aligned pieces that never overlap, through blocks
 * of every size and big one-offs. */
static void test_arena(void)
{
	struct tir_arena ar = {0};
	enum { N = 20000 };
	unsigned char **piece = malloc(sizeof *piece * N);
	size_t *len = malloc(sizeof *len * N), total = 0;
	bool ok = piece && len;
	for (int i = 0; ok && i < N; i++) {
		len[i] = i % 1000 == 999 ? 3 * MIB : (size_t)(i * 37 % 1500) + 1;
		piece[i] = tir_arena_alloc(&ar, len[i]);
		ok = piece[i] && (uintptr_t)piece[i] % 16 == 0 && all_zero(piece[i], len[i]);
		if (ok)
			memset(piece[i], i % 251 + 1, len[i]);
		total += (len[i] + 15) & ~(size_t)15;
	}
	CHECK(ok);
	size_t bad = 0;
	for (int i = 0; ok && i < N; i++)
		for (size_t k = 0; k < len[i]; k += 61)
			bad += piece[i][k] != i % 251 + 1;
	CHECK(bad == 0);
	CHECK(ar.used_total == total);
	tir_arena_free(&ar);
	CHECK(ar.head == NULL && ar.used_total == 0);
	free(piece);
	free(len);

	/* reserved room: the pieces follow one another in one block, zeroed */
	CHECK(tir_arena_reserve(&ar, 100) == 0 && ar.head == NULL); /* small: nothing */
	CHECK(tir_arena_reserve(&ar, 5 * MIB) == 0 && ar.head != NULL);
	unsigned char *first = tir_arena_alloc(&ar, 1000), *prev = first;
	CHECK(first != NULL && consecutive(&ar, &prev, 4000, 1000, 1008, 7));
	CHECK(tir_arena_reserve(&ar, 2 * MIB) == 0); /* room left: the same block */
	CHECK(tir_arena_alloc(&ar, 16) == prev + 1008);
	tir_arena_free(&ar);

	/* from 512 KiB up, room for a whole huge page: 600 KiB asked for, and
	 * 2 MiB less a little of pieces follow one another in the one block */
	CHECK(tir_arena_reserve(&ar, 511 * 1024) == 0 && ar.head == NULL); /* below: nothing */
	CHECK(tir_arena_reserve(&ar, 600 * 1024) == 0 && ar.head != NULL);
	first = prev = tir_arena_alloc(&ar, 1024);
	CHECK(first != NULL && consecutive(&ar, &prev, 1999, 1024, 1024, 9));
	tir_arena_free(&ar);
}

/* whether every page of [p, p + n) is resident */
static bool resident(const void *p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), np = (n + pg - 1) / pg;
	unsigned char *v = malloc(np);
	bool all = v && mincore((void *)p, n, v) == 0;
	for (size_t i = 0; all && i < np; i++)
		all = v[i] & 1;
	free(v);
	return all;
}

/* Pages faulted in ahead by prefault.c's thread: all of a range asked
 * for, contents unchanged (written before the ask and while it runs);
 * a range below TIR_PREFAULT_MIN or NULL is nothing; a range freed while
 * queued is dropped; a big program's parse asks for its arrays. */
static void test_prefault(void)
{
	bool can = false;
#ifdef MADV_POPULATE_WRITE
	void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	can = probe != MAP_FAILED && madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
	if (probe != MAP_FAILED)
		munmap(probe, 4096);
#endif
	if (!can)
		printf("test_util: this kernel has no MADV_POPULATE_WRITE: prefault checked as doing nothing\n");
	uint64_t d0 = tir_prefault_stats(true);
	size_t n = 8 * MIB;
	unsigned char *b = tir_pages_alloc(n);
	CHECK(b != NULL);
	if (!b)
		return;
	memset(b, 0x5a, 4096);
	b[3 * MIB + 17] = 0x77;
	tir_prefault(b + 100, n - 100);
	for (size_t i = 0; i < 64; i++) /* its owner writes while it runs */
		b[i * 131072 + 9] = (unsigned char)i;
	uint64_t d1 = tir_prefault_stats(true);
	CHECK(d1 - d0 == (can ? n : 0));
	CHECK(!can || resident(b, n));
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char want = i < 4096 ? 0x5a : i == 3 * MIB + 17 ? 0x77 : 0;
		if (i % 131072 == 9 && i / 131072 < 64)
			want = (unsigned char)(i / 131072);
		bad += b[i] != want;
	}
	CHECK(bad == 0);
	tir_pages_free(b, n);
	/* below the least, and nothing: no call */
	unsigned char *s = tir_pages_alloc(2 * MIB);
	tir_prefault(s, TIR_PREFAULT_MIN - 1);
	tir_prefault(NULL, n);
	CHECK(tir_prefault_stats(true) == d1);
	tir_pages_free(s, 2 * MIB);
	/* freed while queued: what is left of it is dropped, and the queue
	 * still drains */
	size_t big = 256 * MIB;
	unsigned char *q = tir_pages_alloc(big);
	CHECK(q != NULL);
	tir_prefault(q, big);
	tir_pages_free(q, big);
	uint64_t d2 = tir_prefault_stats(true);
	CHECK(d2 - d1 <= big);
	/* a parse of 30,000 statements asks for its statements, bindings and
	 * nodes: at least a node's bytes a statement */
	size_t ns = 30000;
	struct tir_str prog = {0};
	tir_str_addf(&prog, "x = cast(0.3, f32)\n");
	for (size_t i = 1; i < ns; i++) {
		char prev[32];
		snprintf(prev, sizeof prev, i == 1 ? "x" : "t%zu", i - 1);
		tir_str_addf(&prog, "t%zu = %s * 0.5\n", i, prev);
	}
	tir_str_addf(&prog, "print t%zu\n", ns - 1);
	struct tir_program *p = tir_program_new();
	CHECK(p && tir_program_parse(p, "big.tir", prog.s, prog.n, 0) == 0);
	uint64_t d3 = tir_prefault_stats(true);
	CHECK(!can || d3 - d2 >= ns * sizeof(struct tir_node));
	CHECK(can || d3 == d2);
	tir_program_free(p);
	tir_str_free(&prog);
}

int main(void)
{
	test_clock();
	test_dtypes();
	test_pages();
	test_kept_pages();
	test_arena();
	test_prefault();
	return check_report("test_util");
}
