/*
 * gemv.c — float products of a few rows (m <= TIR_GEMV_ROWS: a
 * classifier's [1, 512] @ [512, 1000], a decoder's one token) without
 * gemm.c's packing.  The gemm packs every k-block of b into panels and
 * then runs its tiles, two runs of the pool a k-block, to use each
 * element of b for MR rows of a; with one row each element is used once,
 * so the packing only doubled the bytes moved and the second run waited
 * on the first (the [1, 512] @ [512, 1000] above: 49 tasks, 0.7 ms for
 * 2 MB).  Here b is read as it lies, once, in one run of the pool.
 *
 * The same bits as gemm.c: each output element is ONE chain, c = 0 (or
 * c's old value when accumulating), then c = c + a[i, p] * b[p, j] for p
 * = 0 .. k - 1 in order, one FMA a step on the AVX-512 and AVX2 paths (the
 * instruction, through its intrinsic), a rounded product and a rounded
 * sum on SSE2 and in portable C, in lanes that never mix: gemm.c's chain
 * on each path.  So a row's result is the same whether a product of one
 * row or of many made it, and never depends on the threads or the cut.
 *
 * How: the columns are cut into tasks of whole column blocks (W columns,
 * the kernel's vectors), about n / TIR_TASKS_WANT columns each but each
 * task reading L1d to L2 bytes of b (tir_task_items).  A block whose
 * columns run along memory (a row-major b) is read in place, a row of W
 * elements a step; any other (a transposed view, b[p, j] at j * ld + p,
 * as an ONNX Gemm's weights; the last block's short row) is copied first,
 * GV_KB steps at a time, into a W-wide buffer on the stack (in L1), and
 * the chains go on from the block before (stored and loaded back
 * exactly).  The epilogue runs on the task's columns of every row once
 * they are made.  Not here: the choice of this path (matmul.c), the
 * gemm (gemm.c).
 */
#include "chain.h"
#include "exec.h"
#include "vmath.h"

#include <stdatomic.h>
#include <string.h>

/* c[0..R)[0..NV * L) (row stride ldc) = (load ? c : 0) + the sum over p <
 * kc of a[i * ars + p * acs] * b[p * ldb + j], step by step in p order;
 * b's rows need no alignment. */
typedef void (*gemv_kernel_fn)(int64_t kc, const void *a, int64_t ars, int64_t acs, const void *b,
			       int64_t ldb, void *c, int64_t ldc, int load);

#define GV_KERNEL(NAME, TGT, T, VF, R, NV, FMA)                                  \
	static TGT void NAME(int64_t kc, const void *av, int64_t ars, int64_t acs, \
			     const void *bv, int64_t ldb, void *cv, int64_t ldc, int load) \
	{                                                                      \
		GM_CHAIN_TYPES(T, VF);                                         \
		const T *a = av, *b = bv;                                      \
		T *c = cv;                                                     \
		VF acc[R][NV];                                                 \
		GM_ACC_LOAD(VF, R, NV, acc, c, ldc, load);                     \
		for (int64_t p = 0; p < kc; p++, b += ldb) {                   \
			VF x[NV];                                              \
			__builtin_prefetch(b + 8 * ldb);                       \
			_Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)    \
				x[v] = *(const VU_ *)(b + v * L_);              \
			GM_ACC_STEP(VF, R, NV, FMA, acc, x, a[i_ * ars + p * acs]); \
		}                                                              \
		GM_ACC_STORE(R, NV, acc, c, ldc);                              \
	}

/* one family: kernels of 1 .. 4 rows, and their table */
#define GV_FAMILY(N, TGT, T, VF, NV, FMA)                                        \
	GV_KERNEL(N##_1, TGT, T, VF, 1, NV, FMA)                               \
	GV_KERNEL(N##_2, TGT, T, VF, 2, NV, FMA)                               \
	GV_KERNEL(N##_3, TGT, T, VF, 3, NV, FMA)                               \
	GV_KERNEL(N##_4, TGT, T, VF, 4, NV, FMA)                               \
	static const gemv_kernel_fn N[TIR_GEMV_ROWS + 1] = { NULL, N##_1, N##_2, N##_3, N##_4 };

GV_FAMILY(gv_sc_f32, , float, gm_f1, 4, GM_MULADD)
GV_FAMILY(gv_sc_f64, , double, gm_d1, 4, GM_MULADD)
GV_FAMILY(gv_s2_f32, , float, gm_f4, 2, GM_MULADD)
GV_FAMILY(gv_s2_f64, , double, gm_d2, 2, GM_MULADD)
#if GM_X86
/* AVX2 (16 registers): 4 rows x 2 vectors and 2 of b */
GV_FAMILY(gv_a2_f32, GM_A2, float, gm_f8, 2, _mm256_fmadd_ps)
GV_FAMILY(gv_a2_f64, GM_A2, double, gm_d4, 2, _mm256_fmadd_pd)
/* AVX-512 (32 registers): 4 rows x 4 vectors and 4 of b */
GV_FAMILY(gv_a5_f32, GM_A5, float, gm_f16, 4, _mm512_fmadd_ps)
GV_FAMILY(gv_a5_f64, GM_A5, double, gm_d8, 4, _mm512_fmadd_pd)
#endif

struct gemv_kern {
	const gemv_kernel_fn *rows;   /* rows[R]: R rows */
	int64_t w;                    /* columns a block (NV vectors) */
};

/* [path][0 f32, 1 f64] */
static const struct gemv_kern kernels[TIR_VMATH_PATH_COUNT][2] = {
	[TIR_VMATH_SCALAR] = { { gv_sc_f32, 4 }, { gv_sc_f64, 4 } },
	[TIR_VMATH_SSE2] = { { gv_s2_f32, 8 }, { gv_s2_f64, 4 } },
#if GM_X86
	[TIR_VMATH_AVX2] = { { gv_a2_f32, 16 }, { gv_a2_f64, 8 } },
	[TIR_VMATH_AVX512] = { { gv_a5_f32, 64 }, { gv_a5_f64, 32 } },
#else
	[TIR_VMATH_AVX2] = { { gv_s2_f32, 8 }, { gv_s2_f64, 4 } },
	[TIR_VMATH_AVX512] = { { gv_s2_f32, 8 }, { gv_s2_f64, 4 } },
#endif
};

/* The widest block, in bytes, and the steps a copied block holds: 64 x
 * 4 bytes x 64 steps, 16 KiB of L1d. */
#define GV_WBYTES 256
#define GV_KB 64

/* Below this many multiply-adds a product runs on the calling thread. */
#define GV_SERIAL_MACS ((int64_t)1 << 18)

struct job {
	const struct tir_gemm *g;
	const struct gemv_kern *kern;
	int64_t es, w;
	int64_t per;                 /* columns a task (a multiple of w) */
	int64_t chunks;              /* tasks a batch entry */
	atomic_int epi_failed;
};

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Entry e's offset (elements) in an operand with batch strides st (0:
 * broadcast). */
static int64_t batch_off(const struct tir_gemm *g, const int64_t *st, int64_t e)
{
	int64_t o = 0;
	for (int d = g->nb - 1; d >= 0; d--) {
		o += e % g->shape[d] * st[d];
		e /= g->shape[d];
	}
	return o;
}

/* dst[p * w + x] = b[p * rs + x * cs] for x < len, 0 for len <= x < w,
 * p < kc: a block of b's columns, k-major, as the kernels read it */
static void copy_block(int64_t es, void *dst, const char *b, int64_t rs, int64_t cs, int64_t len,
		       int64_t w, int64_t kc)
{
	if (es == 4) {
		float *d = dst;
		const float *s = (const float *)b;
#if GM_X86
		if (rs == 1 && len == w && kc % 4 == 0) {
			/* a transposed b: 4 rows of it at a time, each read
			 * along (its lines used up at once: 64 rows 2 KiB
			 * apart in turn share a few sets of L1d and evicted
			 * each other), as 4 x 4 blocks turned in SSE
			 * registers; the next k-block's lines asked for */
			for (int64_t x = 0; x < w; x += 4) {
				const float *q = s + x * cs;
				for (int r = 0; r < 4; r++)
					for (int64_t o = 0; o < kc; o += 16)
						__builtin_prefetch(q + r * cs + kc + o);
				for (int64_t p = 0; p < kc; p += 4) {
					__m128 r0 = _mm_loadu_ps(q + p), r1 = _mm_loadu_ps(q + cs + p);
					__m128 r2 = _mm_loadu_ps(q + 2 * cs + p);
					__m128 r3 = _mm_loadu_ps(q + 3 * cs + p);
					_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
					_mm_storeu_ps(d + p * w + x, r0);
					_mm_storeu_ps(d + (p + 1) * w + x, r1);
					_mm_storeu_ps(d + (p + 2) * w + x, r2);
					_mm_storeu_ps(d + (p + 3) * w + x, r3);
				}
			}
			return;
		}
#endif
		for (int64_t p = 0; p < kc; p++, d += w) {
			for (int64_t x = 0; x < len; x++)
				d[x] = s[p * rs + x * cs];
			for (int64_t x = len; x < w; x++)
				d[x] = 0;
		}
		return;
	}
	double *d = dst;
	const double *s = (const double *)b;
	for (int64_t p = 0; p < kc; p++, d += w) {
		for (int64_t x = 0; x < len; x++)
			d[x] = s[p * rs + x * cs];
		for (int64_t x = len; x < w; x++)
			d[x] = 0;
	}
}

/* Task t: batch entry t / chunks, its columns [j0, j1) of chunk t % chunks. */
static void gemv_task(void *arg, int64_t t)
{
	struct job *j = arg;
	const struct tir_gemm *g = j->g;
	int64_t e = t / j->chunks, es = j->es, w = j->w;
	int64_t j0 = t % j->chunks * j->per, j1 = j0 + j->per < g->n ? j0 + j->per : g->n;
	const char *a = (const char *)g->a + batch_off(g, g->as, e) * es;
	const char *b = (const char *)g->b + batch_off(g, g->bs, e) * es;
	char *c = (char *)g->c + e * g->c_batch * es;
	gemv_kernel_fn fn = j->kern->rows[g->m];
	_Alignas(64) char buf[GV_WBYTES * GV_KB];
	_Alignas(64) char tail[TIR_GEMV_ROWS * GV_WBYTES];

	for (int64_t x0 = j0; x0 < j1; x0 += w) {
		if (tir_pool_stopping())
			return;
		int64_t len = j1 - x0 < w ? j1 - x0 : w;
		const char *bx = b + x0 * g->b_cs * es;
		/* a short block's chains go to a full-width copy of its c */
		char *cx = len == w ? c + x0 * es : tail;
		int64_t ldc = len == w ? g->ldc : w;
		for (int64_t i = 0; len < w && g->acc && i < g->m; i++)
			memcpy(tail + i * w * es, c + (i * g->ldc + x0) * es, (size_t)(len * es));
		if (g->b_cs == 1 && len == w) {
			fn(g->k, a, g->a_rs, g->a_cs, bx, g->b_rs, cx, ldc, g->acc);
		} else {
			for (int64_t p0 = 0; p0 < g->k; p0 += GV_KB) {
				int64_t kc = g->k - p0 < GV_KB ? g->k - p0 : GV_KB;
				copy_block(es, buf, bx + p0 * g->b_rs * es, g->b_rs, g->b_cs, len, w, kc);
				fn(kc, a + p0 * g->a_cs * es, g->a_rs, g->a_cs, buf, w, cx, ldc,
				   p0 > 0 || g->acc);
			}
		}
		for (int64_t i = 0; len < w && i < g->m; i++)
			memcpy(c + (i * g->ldc + x0) * es, tail + i * w * es, (size_t)(len * es));
	}
	if (!g->epi)
		return;
	/* the task's columns, still in cache: whole rows in one call */
	int64_t base = e * g->m * g->n;
	if (j1 - j0 == g->n) {
		if (g->epi(g->epi_ctx, base, g->m * g->n))
			atomic_store(&j->epi_failed, 1);
		return;
	}
	for (int64_t i = 0; i < g->m; i++)
		if (g->epi(g->epi_ctx, base + i * g->n + j0, j1 - j0))
			atomic_store(&j->epi_failed, 1);
}

bool tir_gemv_takes(const struct tir_gemm *g)
{
	return (g->dt == TIR_DTYPE_F32 || g->dt == TIR_DTYPE_F64) &&
	       (!g->a_dt || g->a_dt == g->dt) && (!g->b_dt || g->b_dt == g->dt) && !g->out &&
	       g->m >= 1 && g->m <= TIR_GEMV_ROWS && g->k > 0 && g->n > 0 &&
	       (!g->epi || (g->ldc == g->n && (g->nb == 0 || g->c_batch == g->m * g->n)));
}

int tir_gemv_run(const struct tir_gemm *g, struct tir_err *err)
{
	TIR_ASSERT(tir_gemv_takes(g));
	struct job j = { .g = g, .kern = &kernels[tir_vmath_path()][g->dt == TIR_DTYPE_F64] };
	int64_t batches = 1;
	for (int d = 0; d < g->nb; d++)
		batches *= g->shape[d];
	if (batches <= 0)
		return 0;
	j.es = g->dt == TIR_DTYPE_F32 ? 4 : 8;
	j.w = j.kern->w;
	TIR_ASSERT(j.w * j.es <= GV_WBYTES);
	/* columns a task: whole blocks, L1d to L2 of b (a column is k
	 * elements of it) */
	int64_t col = g->k * j.es;
	j.per = ceil_div(tir_task_items(g->n, col), j.w) * j.w;
	j.chunks = ceil_div(g->n, j.per);
	int64_t ntasks = batches * j.chunks;
	double macs = (double)batches * (double)g->m * (double)g->n * (double)g->k;
	if (macs < (double)GV_SERIAL_MACS || ntasks == 1) {
		for (int64_t t = 0; t < ntasks; t++)
			gemv_task(&j, t);
	} else {
		tir_pool_run(ntasks, gemv_task, &j);
	}
	if (atomic_load(&j.epi_failed))
		return tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory in its epilogue");
	return 0;
}
