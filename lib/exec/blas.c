/*
 * blas.c — OpenBLAS, loaded at its first use rather than linked: the
 * loader (tir_blas_sym, for products here and LAPACK in linalg.c), which
 * gemm runs float products (--gemm tir|openblas, TIR_GEMM), and the
 * products on OpenBLAS (matmul's; conv2d's and attention's call
 * tir_blas_call from their own tasks, nn.c).  Not here: tir's own gemm
 * (gemm.c).
 *
 * Why loaded late: linked, OpenBLAS and its Fortran runtime were loaded and
 * bound at every start (most of a one-line program's start-up), and its
 * thread pool, started at load, spun (sched_yield) beside tir's in runs
 * that never called it.  Loaded here, it starts with one thread: OpenBLAS
 * reads OPENBLAS_NUM_THREADS as it loads, so the dlopen runs with it set
 * to 1 (whatever the user's environment says: tir sets OpenBLAS's count
 * itself before every product, from --threads), and with
 * OPENBLAS_THREAD_TIMEOUT=TIMEOUT unless the user set a timeout; both are
 * put back as they were right after, so children see the user's
 * environment.  (setenv while other threads may read the environment:
 * tir's own threads do not.)
 *
 * The timeout: an idle OpenBLAS thread polls for work (sched_yield) for
 * 2^TIMEOUT cycles of the time-stamp counter, then sleeps until the next
 * call wakes it.  OpenBLAS's default, 2^28 (some 0.1 s), kept its threads
 * spinning beside tir's pool long after a product.  2^4 (sleep at once)
 * made every threaded BLAS call inside one LAPACK routine wake them:
 * a 1024 x 1024 eigh (dsyevd) at 2 threads put its second thread to
 * sleep and woke it some 1,600 times, and gained 1.1x from that thread
 * where NumPy on the same OpenBLAS gains 1.3x.  2^20 (0.4 ms
 * at 2.6 GHz; 0.25-0.5 ms at the usual 2-4 GHz) spans the gaps between
 * those calls (microseconds: the same eigh sleeps a handful of times) and
 * still sends the threads to sleep within a millisecond of the routine's
 * end.
 *
 * One pool of threads at a time: a product either runs on OpenBLAS's
 * threads (as many as tir's --threads) while tir's pool is idle, or its
 * independent parts (batch entries, conv2d's and attention's blocks) are
 * tasks on tir's pool, each on one OpenBLAS thread.  Products on OpenBLAS
 * take one lock, so two threads of one process (server sessions) never
 * run them at once.
 */
#include "exec.h"
#include "vmath.h"

#include <cblas.h>   /* the functions' types only: nothing is linked */
#include <dlfcn.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TIR_BLAS_SONAME
#define TIR_BLAS_SONAME "libopenblas.so.0"
#endif
#ifndef TIR_BLAS_PATH
#define TIR_BLAS_PATH ""
#endif

static struct {
	pthread_once_t once;
	void *h;
	char name[512];          /* what was loaded, or what was tried */
	char err[768];           /* why it was not, when it was not */
	__typeof__(cblas_sgemm) *sgemm;
	__typeof__(cblas_dgemm) *dgemm;
	void (*set_threads)(int);
	char *(*config)(void);
	char *(*corename)(void);
	pthread_mutex_t lock;    /* held while a product runs on OpenBLAS */
} blas = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- the loader ---- */

struct env_saved {
	const char *name;
	char *old;               /* its value before, or NULL when unset */
	bool set;                /* set here */
};

static void env_push(struct env_saved *s, const char *name, const char *value)
{
	const char *old = getenv(name);
	s->name = name;
	s->old = old ? strdup(old) : NULL;
	s->set = (!old || s->old) && setenv(name, value, 1) == 0;
}

static void env_pop(struct env_saved *s)
{
	if (!s->set)
		return;
	if (s->old)
		setenv(s->name, s->old, 1);
	else
		unsetenv(s->name);
	free(s->old);
}

static void *open_lib(const char *path)
{
	snprintf(blas.name, sizeof blas.name, "%s", path);
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* OPENBLAS_THREAD_TIMEOUT: 2^20 cycles (above) */
#define TIMEOUT "20"

static void load(void)
{
	struct env_saved thr = { 0 }, tmo = { 0 };
	env_push(&thr, "OPENBLAS_NUM_THREADS", "1");
	if (!getenv("OPENBLAS_THREAD_TIMEOUT") && !getenv("GOTO_THREAD_TIMEOUT"))
		env_push(&tmo, "OPENBLAS_THREAD_TIMEOUT", TIMEOUT);
	const char *want = getenv("TIR_OPENBLAS");
	void *h = NULL;
	if (want && *want) {
		h = open_lib(want);
	} else {
		h = open_lib(TIR_BLAS_SONAME);
		if (!h && TIR_BLAS_PATH[0] != '\0') {
			char first[512];
			snprintf(first, sizeof first, "%s", dlerror());
			h = open_lib(TIR_BLAS_PATH);
			if (!h)
				snprintf(blas.err, sizeof blas.err, "OpenBLAS is not installed: %s; %s",
					 first, dlerror());
		}
	}
	env_pop(&tmo);
	env_pop(&thr);
	if (!h) {
		if (!blas.err[0])
			snprintf(blas.err, sizeof blas.err, "OpenBLAS is not installed: %s", dlerror());
		return;
	}
	blas.sgemm = (__typeof__(blas.sgemm))dlsym(h, "cblas_sgemm");
	blas.dgemm = (__typeof__(blas.dgemm))dlsym(h, "cblas_dgemm");
	blas.set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
	blas.config = (char *(*)(void))dlsym(h, "openblas_get_config");
	blas.corename = (char *(*)(void))dlsym(h, "openblas_get_corename");
	if (!blas.sgemm || !blas.dgemm || !blas.set_threads) {
		snprintf(blas.err, sizeof blas.err,
			 "%s is not OpenBLAS (no cblas_sgemm, cblas_dgemm or openblas_set_num_threads)",
			 blas.name);
		dlclose(h);
		return;
	}
	__atomic_store_n(&blas.h, h, __ATOMIC_RELEASE);
}

static bool loaded(void)
{
	pthread_once(&blas.once, load);
	return blas.h != NULL;
}

static _Thread_local char sym_err[640];

void *tir_blas_sym(const char *name, char **err)
{
	if (!loaded()) {
		if (err)
			*err = blas.err;
		return NULL;
	}
	void *p = dlsym(blas.h, name);
	if (!p) {
		snprintf(sym_err, sizeof sym_err, "%s has no function %s", blas.name, name);
		if (err)
			*err = sym_err;
	}
	return p;
}

bool tir_blas_is_loaded(void)
{
	return __atomic_load_n(&blas.h, __ATOMIC_ACQUIRE) != NULL;
}

/* Set every time, never cached: a program linked with OpenBLAS too (the
 * benchmarks) sets it itself between tir's products. */
static void set_threads(int n)
{
	blas.set_threads(n < 1 ? 1 : n);
}

void tir_blas_lock(int threads)
{
	pthread_mutex_lock(&blas.lock);
	set_threads(threads);
}

void tir_blas_unlock(void)
{
	pthread_mutex_unlock(&blas.lock);
}

/* "OpenBLAS 0.3.21 ... (core Zen), libopenblas.so.0"; static storage */
static char info[640];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void info_init(void)
{
	const char *cfg = blas.config ? blas.config() : NULL;
	const char *core = blas.corename ? blas.corename() : NULL;
	snprintf(info, sizeof info, "%s (core %s), %s", cfg ? cfg : "OpenBLAS", core ? core : "unknown",
		 blas.name);
}

const char *tir_blas_info(void)
{
	if (!tir_blas_is_loaded())
		return TIR_BLAS_SONAME ", not loaded (loaded when a product or linear algebra first runs on it)";
	pthread_once(&info_once, info_init);
	return info;
}

/* OpenBLAS 0.3.21's x86-64 cores (openblas_get_corename) from before
 * AVX; Sandybridge and every later one have AVX kernels */
static const char *const sse_cores[] = {
	"Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn",
	"Dunnington", "Nehalem", "Athlon", "Opteron", "Opteron(SSE3)", "Barcelona", "Nano", "Bobcat",
};

bool tir_blas_sse_only(void)
{
	static int sse = -1; /* the core is fixed once loaded (threads: the same answer) */
	int v = __atomic_load_n(&sse, __ATOMIC_RELAXED);
	if (v >= 0)
		return v;
	if (!tir_blas_is_loaded())
		return false;
	const char *core = blas.corename ? blas.corename() : NULL;
	v = 0;
	for (size_t i = 0; core && i < sizeof sse_cores / sizeof sse_cores[0]; i++)
		v |= !strcmp(core, sse_cores[i]);
	__atomic_store_n(&sse, v, __ATOMIC_RELAXED);
	return v;
}

const char *tir_blas_version(void)
{
	return loaded() ? tir_blas_info() : blas.err;
}

/* ---- which gemm runs float products ---- */

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static int choice = -1;          /* TIR_GEMM_TIR, TIR_GEMM_OPENBLAS */
static bool chosen;              /* by TIR_GEMM or tir_set_gemm, not by default */

/* -1 for a name that is no gemm's, else the kind; "" and "auto": the
 * machine's default */
static int parse_kind(const char *s, bool *given)
{
	*given = s && *s && strcmp(s, "auto");
	if (!*given)
		return tir_vmath_path() >= TIR_VMATH_AVX2 ? TIR_GEMM_TIR : TIR_GEMM_OPENBLAS;
	if (!strcmp(s, "tir"))
		return TIR_GEMM_TIR;
	if (!strcmp(s, "openblas"))
		return TIR_GEMM_OPENBLAS;
	return -1;
}

static void choose(void)
{
	bool given;
	int k = parse_kind(getenv("TIR_GEMM"), &given);
	if (k < 0)
		k = parse_kind(NULL, &given);
	__atomic_store_n(&chosen, given, __ATOMIC_RELAXED);
	__atomic_store_n(&choice, k, __ATOMIC_RELEASE);
}

int tir_gemm_check(struct tir_err *err)
{
	bool given;
	const char *s = getenv("TIR_GEMM");
	if (parse_kind(s, &given) >= 0)
		return 0;
	return tir_errf(err, TIR_EUNSUPPORTED, NULL, "TIR_GEMM=%s: unknown gemm (tir, openblas)", s);
}

int tir_set_gemm(const char *name, struct tir_err *err)
{
	bool given;
	int k = parse_kind(name, &given);
	if (k < 0)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "unknown gemm '%s' (tir, openblas)", name);
	pthread_once(&choice_once, choose);
	__atomic_store_n(&chosen, given, __ATOMIC_RELAXED);
	__atomic_store_n(&choice, k, __ATOMIC_RELEASE);
	return 0;
}

int tir_gemm_kind(void)
{
	pthread_once(&choice_once, choose);
	return __atomic_load_n(&choice, __ATOMIC_ACQUIRE);
}

bool tir_gemm_default(void)
{
	pthread_once(&choice_once, choose);
	return !__atomic_load_n(&chosen, __ATOMIC_RELAXED);
}

bool tir_blas_missing(void)
{
	return !tir_blas_is_loaded() && blas.err[0];
}

int tir_gemm_blas(enum tir_dtype dt, struct tir_err *err)
{
	if ((dt != TIR_DTYPE_F32 && dt != TIR_DTYPE_F64) || tir_gemm_kind() != TIR_GEMM_OPENBLAS)
		return 0;
	if (loaded())
		return 1;
	/* the machine's default: tir's gemm serves where OpenBLAS is not
	 * installed; asked for by name, it is an error */
	if (tir_gemm_default())
		return 0;
	return tir_errf(err, TIR_ERUNTIME, NULL, "--gemm openblas: %s", blas.err);
}

/* ---- products on OpenBLAS ---- */

bool tir_blas_layout(int64_t r, int64_t c, int64_t rs, int64_t cs, bool *trans, int64_t *ld)
{
	if (r > INT_MAX || c > INT_MAX)
		return false;
	/* row-major: a row's elements next to each other */
	if (c == 1 || cs == 1) {
		int64_t l = r == 1 ? (c > 1 ? c : 1) : rs;
		if (l >= c && l >= 1 && l <= INT_MAX) {
			*trans = false;
			*ld = l;
			return true;
		}
	}
	/* column-major: the transpose of a row-major one */
	if (r == 1 || rs == 1) {
		int64_t l = c == 1 ? (r > 1 ? r : 1) : cs;
		if (l >= r && l >= 1 && l <= INT_MAX) {
			*trans = true;
			*ld = l;
			return true;
		}
	}
	return false;
}

void tir_blas_call(enum tir_dtype dt, int64_t m, int64_t n, int64_t k, const void *a, bool ta, int64_t lda,
		    const void *b, bool tb, int64_t ldb, bool acc, void *c, int64_t ldc)
{
	enum CBLAS_TRANSPOSE at = ta ? CblasTrans : CblasNoTrans, bt = tb ? CblasTrans : CblasNoTrans;
	if (dt == TIR_DTYPE_F32)
		blas.sgemm(CblasRowMajor, at, bt, (blasint)m, (blasint)n, (blasint)k, 1.0f, a, (blasint)lda, b,
			   (blasint)ldb, acc ? 1.0f : 0.0f, c, (blasint)ldc);
	else
		blas.dgemm(CblasRowMajor, at, bt, (blasint)m, (blasint)n, (blasint)k, 1.0, a, (blasint)lda, b,
			   (blasint)ldb, acc ? 1.0 : 0.0, c, (blasint)ldc);
}

/* A product of struct tir_gemm's form on OpenBLAS: its batch entries, each
 * one call; operands cblas cannot read as they lie (a broadcast row,
 * negative strides) copied to a contiguous matrix first. */
struct bjob {
	const struct tir_gemm *g;
	int64_t es, batches;
	bool one;                /* a task per entry, OpenBLAS on one thread */
	int64_t kb;              /* bf16 operands: the depth of their blocks (bf16_blocks) */
	int64_t rows;            /* epilogue: rows a task */
	_Atomic bool failed;
};

/* Each pool slot keeps the f32 copies of bf16 operands (one for a, one
 * for b) between products, up to this many bytes each: fresh pages for
 * every product cost a quarter of a 1024^3 bf16 product's time (faults
 * and zeroing).  Larger copies are freed.  Kept or not, a copy is
 * charged to the memory budget while it is held (tir_scratch_get); a
 * product whose copies would not fit what the budget leaves takes
 * shallower blocks, or runs on tir's gemm (tir_blas_gemm). */
#define BLAS_KEEP_BYTES ((size_t)64 << 20)

static struct tir_keep blas_keep[TIR_POOL_MAX][2];

/* a copy of an operand: kept (in blas_keep[slot][which]) or not */
struct copy {
	void *p;
	size_t bytes;
	bool kept;
	struct tir_keep *k;
};

/* bytes of scratch for operand which (0 a, 1 b), kept when it may be
 * (bf16 widened copies), into *c; NULL when it was not had */
static void *scratch(int which, size_t bytes, bool keep, struct copy *c)
{
	c->k = keep && bytes <= BLAS_KEEP_BYTES ? &blas_keep[tir_pool_worker()][which] : NULL;
	c->bytes = bytes;
	return c->p = tir_scratch_get(c->k, bytes, &c->kept);
}

static void copy_put(struct copy *c)
{
	if (c->p)
		tir_scratch_put(c->k, c->p, c->bytes, c->kept, BLAS_KEEP_BYTES);
	c->p = NULL;
}

/* matrix r x c at p (strides rs, cs elements) as cblas reads it, copied
 * into *copy (copy_put it) when it must be: laid out as cblas cannot
 * read, or bf16 (bf16_f32: widened to f32, exactly) */
static const void *readable(const char *p, int64_t r, int64_t c, int64_t rs, int64_t cs, int64_t es,
			    bool bf16_f32, int which, bool *t, int64_t *ld, struct copy *copy)
{
	copy->p = NULL;
	if (!bf16_f32 && tir_blas_layout(r, c, rs, cs, t, ld))
		return p;
	char *d = scratch(which, (size_t)(r * c * es), bf16_f32, copy);
	if (!d)
		return NULL;
	if (bf16_f32) {
		const uint16_t *h = (const void *)p;
		uint32_t *f = (void *)d;
		for (int64_t i = 0; i < r; i++) {
			int64_t j = 0;
#if defined(__x86_64__)
			if (cs == 1)    /* a row along memory: 8 at a time */
				for (__m128i z = _mm_setzero_si128(); j + 8 <= c; j += 8) {
					__m128i x = _mm_loadu_si128((const __m128i *)(h + i * rs + j));
					_mm_storeu_si128((__m128i *)(f + i * c + j), _mm_unpacklo_epi16(z, x));
					_mm_storeu_si128((__m128i *)(f + i * c + j + 4), _mm_unpackhi_epi16(z, x));
				}
#endif
			for (; j < c; j++)
				f[i * c + j] = (uint32_t)h[i * rs + j * cs] << 16;
		}
	} else {
		for (int64_t i = 0; i < r; i++)
			for (int64_t j = 0; j < c; j++)
				memcpy(d + (i * c + j) * es, p + (i * rs + j * cs) * es, (size_t)es);
	}
	*t = false;
	*ld = c > 1 ? c : 1;
	return d;
}

/* rows [r0, r0 + nr) of all entries' c (row r: entry r / m, its row
 * r % m) rounded to bf16 into g->out, laid out as c */
static void round_rows(const struct tir_gemm *g, int64_t r0, int64_t nr)
{
	for (int64_t r = r0; r < r0 + nr; r++) {
		int64_t at = r / g->m * g->c_batch + r % g->m * g->ldc;
		tir_cvt_run(TIR_DTYPE_BF16, (uint16_t *)g->out + at, TIR_DTYPE_F32, (const float *)g->c + at, 1, g->n);
	}
}

static int64_t entry_offset(const struct tir_gemm *g, const int64_t *st, int64_t e)
{
	int64_t off = 0;
	for (int d = g->nb - 1; d >= 0; d--) {
		off += e % g->shape[d] * st[d];
		e /= g->shape[d];
	}
	return off;
}

/* ---- bf16 operands on OpenBLAS, a k-block at a time ----
 * OpenBLAS 0.3.21 has no bf16 product, so both bf16 operands are widened
 * to f32 for sgemm; whole copies (two passes over memory, the second
 * sgemm's own packing of them, read back from memory) made a bf16 2048^3
 * product 3% slower than the same in f32, which reads the operands once.
 * Instead a k-block of kb steps of both (a's columns, b's rows) is
 * widened on the pool into buffers this thread keeps, and sgemm adds
 * that block's product to c: every step of k on the same kernel in the
 * same order, c carried from block to block as OpenBLAS carries it
 * between its own k-blocks (kb a multiple of 256, at least 256: as deep
 * as its own).  The blocks are as deep as the kept buffers allow, most
 * often the whole depth in one call (the f32 product's own call): on a
 * 2-vCPU Zen 5, sgemm's Haswell kernel, a 2048^3 product took 73.5 ms
 * in blocks of 256 (4 x L2), 72.8 in 512, 72.1 in 1024, 71.7 in one call
 * (f32 69.3: the widening's pass is what is left).
 *
 * Each block is widened as its operand lies, runs along memory: a
 * row-major a's block is its m rows' kb steps (a short run a row, rows
 * a row of a apart), a column-major one's (transpose(x) @ y) kb runs of
 * m, given to sgemm transposed; b's likewise (its kb rows, or n runs of
 * kb).  The runs are asked for ahead (wjob.ahead): each short run is on
 * a page of its own, which the hardware's prefetcher does not reach in
 * time; without, a 2048^3 product's widening took twice a whole copy's
 * time, all of it waiting on a's rows. */
struct wside {
	const uint16_t *s;                 /* the block's first element */
	float *d;                          /* its runs, each len, one after another */
	int64_t runs, len, rs, es;         /* run i at s + i * rs, elements es apart */
	int64_t ahead;                     /* runs asked for ahead (0: none) */
	int64_t per, tasks;                /* runs a task, and tasks */
};

struct wjob {
	struct wside side[2];              /* a's block, b's */
};

/* rows of the block ahead of the one widened: about 8 KiB of it (the
 * time one's memory takes to come), between 2 and 32 runs */
static int64_t runs_ahead(int64_t len)
{
	int64_t r = 8192 / (len * 2 > 0 ? len * 2 : 1);
	return r < 2 ? 2 : r > 32 ? 32 : r;
}

/* task t: runs of a's block, then of b's */
static void widen_task(void *arg, int64_t t)
{
	const struct wjob *w = arg;
	const struct wside *x = &w->side[t >= w->side[0].tasks];
	int64_t r0 = (t >= w->side[0].tasks ? t - w->side[0].tasks : t) * x->per;
	int64_t r1 = r0 + x->per < x->runs ? r0 + x->per : x->runs;
	for (int64_t r = r0; r < r1; r++) {
		if (x->ahead && r + x->ahead < x->runs) {
			const char *p = (const char *)(x->s + (r + x->ahead) * x->rs);
			for (int64_t b = 0; b < x->len * 2; b += 64)
				__builtin_prefetch(p + b);
		}
		tir_cvt_run(TIR_DTYPE_F32, x->d + r * x->len, TIR_DTYPE_BF16, x->s + r * x->rs, x->es, x->len);
	}
}

/* an operand's block of kb steps as runs: its element (i, step q) at p +
 * i * is + q * qs (i < count); runs of kb steps, one per i (true), unless
 * i runs along memory and the steps do not (then kb runs of count) */
static bool block_side(struct wside *x, const uint16_t *p, float *d, int64_t count, int64_t is, int64_t kb,
		       int64_t qs)
{
	bool by_steps = qs == 1 || is != 1;
	*x = (struct wside){ .s = p, .d = d, .runs = by_steps ? count : kb, .len = by_steps ? kb : count,
			     .rs = by_steps ? is : qs, .es = by_steps ? qs : is };
	if (x->es == 1)
		x->ahead = runs_ahead(x->len);
	x->per = tir_task_items(x->runs, x->len * 4);
	x->tasks = (x->runs + x->per - 1) / x->per;
	return by_steps;
}

/* The depth of bf16_blocks' blocks: as deep as each widened block fits
 * the copy a thread keeps (BLAS_KEEP_BYTES, whatever the cores): the
 * whole depth in one call up to [4096, 4096] @ [4096, 4096]; and both
 * blocks within room bytes (what the memory budget leaves); slab_bytes:
 * a test's budget for both (down to 8 steps).  0: not even the shallowest
 * block fits room. */
static int64_t bf16_depth(const struct tir_gemm *g, size_t room)
{
	int64_t wide = (g->m > g->n ? g->m : g->n) * 4, least = g->slab_bytes > 0 ? 8 : 256;
	int64_t kb = g->slab_bytes > 0 ? g->slab_bytes / ((g->m + g->n) * 4) / least * least
				       : (int64_t)BLAS_KEEP_BYTES / wide;
	int64_t fit = (int64_t)(room / 2 / (size_t)((g->m + g->n) * 4)); /* room for both, halved: a margin */
	kb = fit < kb ? fit : kb;
	if (kb < g->k)
		kb = kb / least * least;
	if (kb < least && least < g->k && (size_t)(least * (g->m + g->n) * 4) > room)
		return 0;
	kb = kb < least ? least : kb;
	return kb > g->k ? g->k : kb;
}

/* entry e of a product of two bf16 operands, on the calling thread (its
 * tasks on the pool), in blocks of kb steps; false when its copies were
 * not had */
static bool bf16_blocks(const struct tir_gemm *g, int64_t e, char *c, int64_t kb)
{
	struct copy ca, cb;
	float *wa = scratch(0, (size_t)(g->m * kb * 4), true, &ca), *wb = scratch(1, (size_t)(kb * g->n * 4), true, &cb);
	if (!wa || !wb) {
		copy_put(&ca);
		copy_put(&cb);
		return false;
	}
	const uint16_t *a = (const uint16_t *)g->a + entry_offset(g, g->as, e);
	const uint16_t *b = (const uint16_t *)g->b + entry_offset(g, g->bs, e);
	for (int64_t k0 = 0; k0 < g->k; k0 += kb) {
		int64_t kk = g->k - k0 < kb ? g->k - k0 : kb;
		struct wjob w;
		/* a's block m x kk (its rows, or its transpose's), b's kk x n
		 * (its columns: the transpose's rows, or its rows) */
		bool ta = !block_side(&w.side[0], a + k0 * g->a_cs, wa, g->m, g->a_rs, kk, g->a_cs);
		bool tb = block_side(&w.side[1], b + k0 * g->b_rs, wb, g->n, g->b_cs, kk, g->b_rs);
		tir_pool_run(w.side[0].tasks + w.side[1].tasks, widen_task, &w);
		tir_blas_call(TIR_DTYPE_F32, g->m, g->n, kk, wa, ta, w.side[0].len, wb, tb, w.side[1].len,
			      g->acc || k0 > 0, c, g->ldc);
	}
	copy_put(&ca);
	copy_put(&cb);
	return true;
}

static void entry_task(void *arg, int64_t e)
{
	struct bjob *j = arg;
	const struct tir_gemm *g = j->g;
	bool ta, tb;
	int64_t lda, ldb;
	struct copy ca, cb;
	bool ha = g->a_dt == TIR_DTYPE_BF16, hb = g->b_dt == TIR_DTYPE_BF16;
	if (ha && hb && !j->one && g->dt == TIR_DTYPE_F32) {
		char *cb16 = (char *)g->c + e * g->c_batch * j->es;
		if (!bf16_blocks(g, e, cb16, j->kb))
			atomic_store(&j->failed, true);
		return;
	}
	const char *a = (const char *)g->a + entry_offset(g, g->as, e) * (ha ? 2 : j->es);
	const char *b = (const char *)g->b + entry_offset(g, g->bs, e) * (hb ? 2 : j->es);
	const void *pa = readable(a, g->m, g->k, g->a_rs, g->a_cs, j->es, ha, 0, &ta, &lda, &ca);
	const void *pb = pa ? readable(b, g->k, g->n, g->b_rs, g->b_cs, j->es, hb, 1, &tb, &ldb, &cb) : NULL;
	if (!pa)
		cb.p = NULL;
	char *c = (char *)g->c + e * g->c_batch * j->es;
	if (pa && pb)
		tir_blas_call(g->dt, g->m, g->n, g->k, pa, ta, lda, pb, tb, ldb, g->acc, c, g->ldc);
	else
		atomic_store(&j->failed, true);
	copy_put(&ca);
	copy_put(&cb);
	if (j->one && pa && pb && g->out)
		round_rows(g, e * g->m, g->m);
	if (j->one && pa && pb && g->epi && g->epi(g->epi_ctx, e * g->m * g->n, g->m * g->n))
		atomic_store(&j->failed, true);
}

/* the epilogue (or the rounding to g->out) over rows [t * rows, ...) of
 * all entries */
static void epi_task(void *arg, int64_t t)
{
	struct bjob *j = arg;
	const struct tir_gemm *g = j->g;
	int64_t total = j->batches * g->m;
	int64_t r0 = t * j->rows;
	int64_t nr = total - r0 < j->rows ? total - r0 : j->rows;
	if (g->out)
		round_rows(g, r0, nr);
	else if (g->epi(g->epi_ctx, r0 * g->n, nr * g->n))
		atomic_store(&j->failed, true);
}

/* Below this many multiply-adds an entry is a task of its own on tir's
 * pool (OpenBLAS itself runs such products on one thread). */
#define BLAS_ENTRY_MACS ((double)(1 << 22))

int tir_blas_gemm(const struct tir_gemm *g, struct tir_err *err)
{
	struct bjob j = { .g = g, .es = g->dt == TIR_DTYPE_F32 ? 4 : 8, .batches = 1 };
	for (int d = 0; d < g->nb; d++)
		j.batches *= g->shape[d];
	if (g->m <= 0 || g->n <= 0 || j.batches <= 0)
		return 0;
	if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->ldc > INT_MAX)
		return tir_gemm_run(g, err);       /* past cblas's int sizes */
	if (g->k <= 0)
		return tir_gemm_run(g, err);       /* zeros and the epilogue */
	int threads = tir_pool_threads();
	double macs = (double)g->m * (double)g->n * (double)g->k;
	j.one = threads > 1 && j.batches > 1 && (macs < BLAS_ENTRY_MACS || j.batches >= 4 * threads);
	/* the copies it makes, within what the memory budget leaves, else on
	 * tir's gemm (which widens as it packs, in slabs that fit) */
	size_t room = tir_scratch_room();
	bool ha = g->a_dt == TIR_DTYPE_BF16, hb = g->b_dt == TIR_DTYPE_BF16, t;
	int64_t ld;
	if (ha && hb && !j.one && g->dt == TIR_DTYPE_F32) {
		if (!(j.kb = bf16_depth(g, room)))
			return tir_gemm_run(g, err);
	} else if (room != SIZE_MAX) {
		double need = (ha || !tir_blas_layout(g->m, g->k, g->a_rs, g->a_cs, &t, &ld) ? (double)(g->m * g->k) : 0) +
			      (hb || !tir_blas_layout(g->k, g->n, g->b_rs, g->b_cs, &t, &ld) ? (double)(g->k * g->n) : 0);
		need *= (double)j.es * (double)(j.one ? (j.batches < threads ? j.batches : threads) : 1);
		if (need > (double)room)
			return tir_gemm_run(g, err);
	}
	tir_blas_lock(j.one ? 1 : threads);
	if (j.one) {
		tir_pool_run(j.batches, entry_task, &j);
	} else {
		for (int64_t e = 0; e < j.batches && !tir_pool_stopping(); e++)
			entry_task(&j, e);
	}
	tir_blas_unlock();
	if (!j.one && (g->epi || g->out) && !atomic_load(&j.failed)) {
		/* the epilogue on tir's pool, OpenBLAS idle: tasks of whole rows */
		int64_t total = j.batches * g->m;
		j.rows = tir_task_items(total, g->n * j.es);
		tir_pool_run_shares((total + j.rows - 1) / j.rows, epi_task, &j);
	}
	if (atomic_load(&j.failed) && tir_mem_limit())
		return tir_errf(err, TIR_EBUDGET, NULL, "matmul: its epilogue or a copy of an operand would pass the "
			        "memory budget: %s held of %s (--max-memory)", tir_bytes_str(tir_mem_current(), (char[32]){0}),
				tir_bytes_str(tir_mem_limit(), (char[32]){0}));
	if (atomic_load(&j.failed))
		return tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory (its epilogue, or a copy of an operand)");
	return 0;
}
