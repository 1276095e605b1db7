/*
 * test_scratch.c — kernels' scratch under the memory budget (tensor.c's
 * tir_scratch_get/put, exec.h): a buffer is charged while it is held, a
 * kept one stays charged beside the tensors and is given back when an
 * allocation needs its room (or by tir_mem_trim), what is kept stays
 * within a quarter of the budget, a buffer past what the budget leaves is
 * refused with the budget's error; and tir's gemm under a budget too
 * small for its packing buffer runs in slabs that fit, the same bits,
 * its charged peak within the budget, or fails with TIR_EBUDGET where no
 * slab fits; a bf16 result's f32 sums the gemm makes for a caller that
 * gave none are charged too; a buffer of 4 MiB or more starts on a
 * 2 MiB boundary with transparent huge pages asked for, as a tensor's
 * does (the widened operands and f32 sums of a bf16 product were on 4 KiB
 * pages, and OpenBLAS's and tir's kernels took a TLB miss a row).
 */
#include "exec/exec.h"
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static void keeps(void)
{
	static struct tir_keep k, k2;
	size_t base = tir_mem_current();
	bool kept = false, kept2 = true;

	/* no budget: charged while held, kept after, the same buffer again */
	void *p = tir_scratch_get(&k, 100 * KIB, &kept);
	CHECK(p && kept && tir_mem_current() == base + 100 * KIB);
	memset(p, 1, 100 * KIB);
	/* in use: another thread's ask (here the same keep) gets a fresh one */
	void *q = tir_scratch_get(&k, 10 * KIB, &kept2);
	CHECK(q && q != p && !kept2 && tir_mem_current() == base + 110 * KIB);
	tir_scratch_put(&k, q, 10 * KIB, kept2, 64 * MIB);
	tir_scratch_put(&k, p, 100 * KIB, kept, 64 * MIB);
	CHECK(tir_mem_current() == base && tir_scratch_kept() == 100 * KIB);
	void *p2 = tir_scratch_get(&k, 50 * KIB, &kept);
	CHECK(p2 == p && kept && tir_mem_current() == base + 100 * KIB && tir_scratch_kept() == 0);
	tir_scratch_put(&k, p2, 50 * KIB, kept, 64 * MIB);
	/* larger than `most`: freed when put back */
	p = tir_scratch_get(&k2, 300 * KIB, &kept);
	CHECK(p && kept);
	tir_scratch_put(&k2, p, 300 * KIB, kept, 200 * KIB);
	CHECK(tir_mem_current() == base && tir_scratch_kept() == 100 * KIB);

	/* a budget: the kept buffer gives its room to a tensor */
	tir_mem_set_limit(base + 1 * MIB);
	struct tir_tensor t = {0};
	struct tir_err err = {0};
	int64_t shape[1] = { (int64_t)(960 * KIB / 4) };
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, shape, false, &err) == 0);
	CHECK(tir_scratch_kept() == 0);
	/* past what is left: refused, nothing charged, the budget's error */
	size_t held = tir_mem_current();
	CHECK(tir_scratch_get(NULL, 100 * KIB, &kept) == NULL && tir_mem_current() == held);
	CHECK(tir_scratch_get(&k, 100 * KIB, &kept) == NULL && tir_mem_current() == held);
	CHECK(tir_scratch_err(&err, "matmul", "its packed operands", 100 * KIB) == -TIR_EBUDGET);
	CHECK(strstr(err.msg, "matmul: its packed operands need 100 KiB") && strstr(err.msg, "--max-memory"));
	CHECK(tir_scratch_room() == base + MIB - held);
	tir_tensor_release(&t);
	tir_mem_trim();
	/* kept within a quarter of the budget: 300 KiB of 1 MiB is not kept */
	p = tir_scratch_get(&k, 300 * KIB, &kept);
	CHECK(p && kept);
	tir_scratch_put(&k, p, 300 * KIB, kept, 64 * MIB);
	CHECK(tir_scratch_kept() == 0);
	p = tir_scratch_get(&k, 200 * KIB, &kept);
	tir_scratch_put(&k, p, 200 * KIB, kept, 64 * MIB);
	CHECK(tir_scratch_kept() == 200 * KIB);
	tir_mem_trim(); /* and the trim lets it go */
	CHECK(tir_scratch_kept() == 0 && tir_mem_current() == base);
	tir_mem_set_limit(0);
}

/* [m, k] @ [k, n] f32 on tir's gemm, into c (a fixed pattern of values) */
static int product(int64_t m, int64_t n, int64_t k, float *c, struct tir_err *err)
{
	float *a = malloc(sizeof *a * (size_t)(m * k)), *b = malloc(sizeof *b * (size_t)(k * n));
	for (int64_t i = 0; i < m * k; i++)
		a[i] = (float)((i * 7919) % 1013) / 512.0f - 1.0f;
	for (int64_t i = 0; i < k * n; i++)
		b[i] = (float)((i * 104729) % 1009) / 512.0f - 1.0f;
	struct tir_gemm g = { .dt = TIR_DTYPE_F32, .m = m, .n = n, .k = k, .a = a, .b = b, .a_rs = k, .a_cs = 1,
			      .b_rs = n, .b_cs = 1, .c = c, .ldc = n, .c_batch = m * n };
	int rc = tir_gemm_run(&g, err);
	free(a);
	free(b);
	return rc;
}

static void gemm(void)
{
	int64_t m = 600, n = 700, k = 1500;
	float *c0 = calloc((size_t)(m * n), sizeof *c0), *c1 = calloc((size_t)(m * n), sizeof *c1);
	struct tir_err err = {0};
	tir_mem_trim();
	size_t base = tir_mem_current();
	tir_mem_reset_peak();
	CHECK(product(m, n, k, c0, &err) == 0);
	size_t whole = tir_mem_peak() - base; /* its packing buffer, whole */
	CHECK(whole > 1 * MIB);
	tir_mem_trim();
	/* a quarter of that: slabs, the same bits, within it */
	for (int t = 0; t < 3; t++) {
		size_t room = t == 0 ? whole / 4 : t == 1 ? whole / 16 : 200 * KIB;
		tir_mem_set_limit(base + room);
		tir_mem_reset_peak();
		memset(c1, 0, sizeof *c1 * (size_t)(m * n));
		CHECK(product(m, n, k, c1, &err) == 0);
		CHECK(tir_mem_peak() - base <= room);
		CHECK(memcmp(c0, c1, sizeof *c0 * (size_t)(m * n)) == 0);
		tir_mem_trim();
	}
	/* no slab fits: the budget's error, nothing left charged */
	tir_mem_set_limit(base + 4 * KIB);
	CHECK(product(m, n, k, c1, &err) == -TIR_EBUDGET);
	CHECK(strstr(err.msg, "matmul: its packed operands need") != NULL);
	CHECK(tir_mem_current() == base);
	tir_mem_set_limit(0);
	free(c0);
	free(c1);
}

/* A bf16 result of several k-blocks and no c: its f32 sums are scratch
 * (with_c), charged while held: refused past the budget, else made. */
static void sums(void)
{
	int64_t m = 64, n = 256, k = 3000; /* more than any KC: several k-blocks */
	float *a = calloc((size_t)(m * k), sizeof *a), *b = calloc((size_t)(k * n), sizeof *b);
	uint16_t *out = calloc((size_t)(m * n), sizeof *out);
	for (int64_t i = 0; i < m * k; i++)
		a[i] = (float)(i % 7) - 3.0f;
	for (int64_t i = 0; i < k * n; i++)
		b[i] = (float)(i % 5) - 2.0f;
	struct tir_gemm g = { .dt = TIR_DTYPE_F32, .m = m, .n = n, .k = k, .a = a, .b = b, .a_rs = k, .a_cs = 1,
			      .b_rs = n, .b_cs = 1, .ldc = n, .c_batch = m * n, .out = out };
	struct tir_err err = {0};
	tir_mem_trim();
	size_t base = tir_mem_current();
	tir_mem_set_limit(base + 32 * KIB); /* not the sums' 64 KiB */
	CHECK(tir_gemm_run(&g, &err) == -TIR_EBUDGET && strstr(err.msg, "matmul: its f32 sums need 64 KiB"));
	CHECK(tir_mem_current() == base);
	tir_mem_set_limit(0);
	tir_mem_reset_peak();
	CHECK(tir_gemm_run(&g, &err) == 0);
	CHECK(tir_mem_peak() - base >= (size_t)(m * n * 4) && tir_mem_current() == base);
	/* row 0, column 0: sum of (p % 7 - 3) * ((p * n) % 5 - 2), exact in f32 */
	double s0 = 0;
	for (int64_t p = 0; p < k; p++)
		s0 += (double)(p % 7 - 3) * (double)((p * n) % 5 - 2);
	uint32_t bits = (uint32_t)out[0] << 16;
	float v;
	memcpy(&v, &bits, sizeof v);
	CHECK_NEAR(v, s0, 1.0 / 128);
	free(a);
	free(b);
	free(out);
}

/* "hg" in the VmFlags of the mapping holding p (/proc/self/smaps):
 * madvise(MADV_HUGEPAGE) was asked for it.  -1: no smaps to read. */
static int huge_asked(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	bool in = false;
	int got = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			got = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return got;
}

static void huge(void)
{
	static struct tir_keep k;
	bool kept = false;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r"); /* a kernel with THP */
	bool thp = f != NULL;
	if (f)
		fclose(f);
	size_t base = tir_mem_current();
	/* kept and not: 2 MiB boundaries, huge pages asked for, charged as asked */
	void *p = tir_scratch_get(&k, 5 * MIB + 3, &kept), *q = tir_scratch_get(NULL, 4 * MIB, &kept);
	CHECK(p && q && (uintptr_t)p % (2 * MIB) == 0 && (uintptr_t)q % (2 * MIB) == 0);
	CHECK(tir_mem_current() == base + 5 * MIB + 64 + 4 * MIB);
	if (thp)
		CHECK(huge_asked(p) == 1 && huge_asked(q) == 1);
	memset(p, 3, 5 * MIB + 3); /* all of it its own */
	memset(q, 4, 4 * MIB);
	tir_scratch_put(NULL, q, 4 * MIB, false, 0);
	tir_scratch_put(&k, p, 5 * MIB + 3, true, 64 * MIB);
	/* below 4 MiB: the allocator's, at the vector alignment only */
	void *s = tir_scratch_get(NULL, 100 * KIB, &kept);
	CHECK(s && (uintptr_t)s % 64 == 0);
	tir_scratch_put(NULL, s, 100 * KIB, false, 0);
	tir_mem_trim();
	CHECK(tir_mem_current() == base && tir_scratch_kept() == 0);
}

int main(void)
{
	keeps();
	huge();
	sums();
	for (int threads = 1; threads <= 4; threads *= 2) {
		tir_pool_set_threads(threads);
		gemm();
	}
	return check_report("test_scratch");
}
