/*
 * blas.c — the matmul kernel: float matrices through OpenBLAS's gemm, integer
 * ones by plain loops, batch axes broadcast.  Operands are handed to BLAS in
 * place whenever their layout allows; only odd strides are copied.  The
 * output is cut into blocks (and batch entries) sized by the shapes and the
 * caches, each one single-threaded gemm call run as a task on the pool
 * (pool.c), so the result is bitwise the same with any thread count.  OpenBLAS itself is
 * kept at one thread.  Not here: fused epilogues (lib/fusion) or the nn
 * ops built on matmul (nn.c).
 */
#include "exec.h"

#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest dimension or leading dimension a cblas call takes. */
#define GEMM_MAX ((int64_t)(sizeof(blasint) >= 8 ? INT64_MAX : INT_MAX))

/* One 2-D operand: element (i, j) is at p + (i * rs + j * cs) elements. */
struct mat {
	const char *p;
	int64_t rs, cs;
};

/* Can BLAS read rows x cols at (rs, cs) directly?  Row-major wants cs == 1
 * and ld = rs >= cols; transposed wants rs == 1 and ld = cs >= rows.  A
 * stride along an axis of length 1 never moves and so does not matter. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
			enum CBLAS_TRANSPOSE *tr, int64_t *ld)
{
	if ((cs == 1 || cols == 1) && (rows == 1 || rs >= cols)) {
		*tr = CblasNoTrans;
		*ld = rows == 1 ? cols : rs;
	} else if ((rs == 1 || rows == 1) && (cols == 1 || cs >= rows)) {
		*tr = CblasTrans;
		*ld = cols == 1 ? rows : cs;
	} else {
		return false;
	}
	return *ld >= 1 && *ld <= GEMM_MAX;
}

/* Output blocks of the parallel gemm, in rows and columns.  Sizes follow
 * from the shapes and the caches (machine.c), never from the thread count:
 * every output element comes from the same single-threaded BLAS call
 * (same arguments, same summation order) whatever the number of threads,
 * so results are bitwise reproducible.
 *
 * What a cut costs: each call packs its rows of a (bm x k) and its columns
 * of b (k x bn) afresh, so a grid of blocks packs a once per column block
 * and b once per row block, 1/bm + 1/bn packed elements per multiply-add.
 * OpenBLAS blocks each call for the caches itself, so on one core a larger
 * block is never slower; cutting only buys tasks for more cores.  On one
 * core (Xeon, AVX-512, OpenBLAS 0.3.21 SkylakeX kernels, L1d 48 KiB,
 * L2 2 MiB; the blocks' calls in a C loop), GFLOP/s of the whole product:
 *     [256, 1024] @ [1024, 1024]:   1 block 143, 4 x (256 x 256) 132,
 *                                   8 x (128 x 256) 117, 16 x (128 x 128) 114
 *     [1024, 1024] @ [1024, 1024]:  2 x (512 x 1024) 147, 16 x (256 x 256) 123
 *     [2048, 2048] @ [2048, 2048]:  4 x (512 x 2048) 152, 64 x (256 x 256) 126,
 *                                   256 x (128 x 128) 113
 * So the output is halved, the longer side first (the columns of a square:
 * b's panel, k rows of bn elements far apart, costs more to pack than a's
 * rows; 256 x 128 blocks beat 128 x 256 by 5%), until the matmul makes
 * TIR_TASKS_WANT tasks, but never into blocks
 *   - with a side cut below 16 cache lines of elements (256 f32, 128
 *     f64), however long k is: each element a call packs then feeds at
 *     least that many multiply-adds (a side left whole costs no
 *     repacking).  At 8 lines a 2048 cube made 256 tasks but ran at 113
 *     GFLOP/s a core against 152 for 4 large blocks: 16 lines keep it at
 *     64 tasks and 126, and a 4096 cube still makes 256;
 *   - past the first two tasks (which two cores share well), whose panels
 *     ((bm + bn) x k elements of a and b) hold less than L2: packing is
 *     then a large share of a task that is short anyway, and the product
 *     one that a few cores share well ([256, 1024] @ [1024, 1024] stops
 *     at 4 x (256 x 256); a 2048 cube goes on to 64 x (256 x 256)).
 * Column blocks are a whole number of cache lines wide, so two tasks
 * never write one line.  A product past TIR_TASKS_WANT tasks keeps its
 * blocks large. */
/* Below this many multiply-adds a matmul is not worth waking the pool. */
#define SERIAL_MACS ((int64_t)1 << 18)

/* c (row stride ldc) = a[m, k] @ b[k, n] by loops.  T is float, double or
 * an unsigned type, so integer products wrap instead of overflowing. */
#define LOOP_MATMUL(T)                                                        \
	do {                                                                  \
		T *o = (T *)c;                                                \
		const T *pa = (const T *)a.p, *pb = (const T *)b.p;           \
		for (int64_t i = 0; i < m; i++) {                             \
			T *row = o + i * ldc;                                 \
			for (int64_t j = 0; j < n; j++)                       \
				row[j] = 0;                                   \
			for (int64_t p = 0; p < k; p++) {                     \
				T av = pa[i * a.rs + p * a.cs];               \
				const T *bp = pb + p * b.rs;                  \
				for (int64_t j = 0; j < n; j++)               \
					row[j] += av * bp[j * b.cs];          \
			}                                                     \
		}                                                             \
	} while (0)

static void loop_matmul(enum tir_dtype dt, int64_t m, int64_t n, int64_t k,
			struct mat a, struct mat b, void *c, int64_t ldc)
{
	switch (dt) {
	case TIR_DTYPE_I32:
		LOOP_MATMUL(uint32_t);
		break;
	case TIR_DTYPE_I64:
		LOOP_MATMUL(uint64_t);
		break;
	case TIR_DTYPE_F32:
		LOOP_MATMUL(float);
		break;
	case TIR_DTYPE_F64:
		LOOP_MATMUL(double);
		break;
	default:
		TIR_ASSERT(!"matmul dtype");
	}
}

/* One matmul cut into tasks: batch entries by bm x bn blocks of the
 * [m, n] output matrix, task t = (batch, row block, column block). */
struct job {
	enum tir_dtype dt;
	int64_t es;
	bool blas;                          /* else loops */
	int64_t m, n, k;                    /* one batch entry's matrices */
	int64_t bm, bn, mblocks, nblocks;   /* block size, blocks per axis */
	int nb;                             /* batch axes */
	int64_t shape[TIR_MAX_RANK];        /* out's batch axes */
	int64_t as[TIR_MAX_RANK], bs[TIR_MAX_RANK];   /* 0 when broadcast */
	struct mat a, b;
	enum CBLAS_TRANSPOSE ta, tb;
	int64_t lda, ldb;
	char *c;                            /* contiguous [batches, m, n] */
	tir_epilogue_fn epi;                /* run on each block's rows once made */
	void *epi_ctx;
	int epi_rc;
};

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* n rounded up to a multiple of q. */
static int64_t round_up(int64_t n, int64_t q)
{
	return (n + q - 1) / q * q;
}

/* The block sizes of j (see the rule above): from the shapes and caches. */
static void choose_blocks(struct job *j, int64_t batches)
{
	const struct tir_caches *mc = tir_machine_caches();
	int64_t line = mc->line / j->es > 1 ? mc->line / j->es : 1;
	int64_t bm = j->m, bn = j->n;
	int64_t tasks;
	while ((tasks = batches * ceil_div(j->m, bm) * ceil_div(j->n, bn)) < TIR_TASKS_WANT) {
		int64_t hm = bm, hn = bn;
		if (bm > bn)
			hm = round_up(ceil_div(bm, 2), line);
		else
			hn = round_up(ceil_div(bn, 2), line);
		if ((hm < bm ? hm : hn) < 16 * line ||
		    (tasks >= 2 && (double)(hm + hn) * (double)j->k * (double)j->es < (double)mc->l2))
			break;
		bm = hm;
		bn = hn;
	}
	j->bm = bm;
	j->bn = bn;
	j->mblocks = ceil_div(j->m, bm);
	j->nblocks = ceil_div(j->n, bn);
}

static void gemm_task(void *arg, int64_t t)
{
	const struct job *j = arg;
	int64_t per = j->mblocks * j->nblocks;
	int64_t batch = t / per, rest = t % per;
	int64_t i0 = rest / j->nblocks * j->bm, j0 = rest % j->nblocks * j->bn;
	int64_t mi = j->m - i0 < j->bm ? j->m - i0 : j->bm;
	int64_t nj = j->n - j0 < j->bn ? j->n - j0 : j->bn;
	int64_t aoff = 0, boff = 0, r = batch;

	for (int d = j->nb - 1; d >= 0; d--) {
		int64_t ix = r % j->shape[d];
		r /= j->shape[d];
		aoff += ix * j->as[d];
		boff += ix * j->bs[d];
	}
	struct mat a = j->a, b = j->b;
	a.p += (aoff + i0 * a.rs) * j->es;
	b.p += (boff + j0 * b.cs) * j->es;
	char *c = j->c + ((batch * j->m + i0) * j->n + j0) * j->es;
	if (!j->blas)
		loop_matmul(j->dt, mi, nj, j->k, a, b, c, j->n);
	else if (j->dt == TIR_DTYPE_F32)
		cblas_sgemm(CblasRowMajor, j->ta, j->tb, (blasint)mi, (blasint)nj, (blasint)j->k,
			    1.0f, (const float *)a.p, (blasint)j->lda, (const float *)b.p,
			    (blasint)j->ldb, 0.0f, (float *)c, (blasint)j->n);
	else
		cblas_dgemm(CblasRowMajor, j->ta, j->tb, (blasint)mi, (blasint)nj, (blasint)j->k,
			    1.0, (const double *)a.p, (blasint)j->lda, (const double *)b.p,
			    (blasint)j->ldb, 0.0, (double *)c, (blasint)j->n);
	/* the block is still in cache: finish it (whole rows in one call) */
	int64_t run = nj == j->n ? mi * nj : nj;
	for (int64_t row = 0; j->epi && row < mi; row += run / nj)
		if (j->epi(j->epi_ctx, (batch * j->m + i0 + row) * j->n + j0, run))
			__atomic_store_n(&((struct job *)j)->epi_rc, 1, __ATOMIC_RELAXED);
}

/* Copy an operand BLAS cannot read in place (rows x cols per batch entry
 * at *mt, batch strides st[], 0 where broadcast) into a new row-major
 * buffer *buf; a broadcast axis stays stride 0, so its data is copied
 * once.  *mt and st[] then describe the copy.  returns 0 or -TIR_ENOMEM. */
static int stage(int nb, const int64_t *shape, int64_t *st, struct mat *mt, int64_t rows,
		 int64_t cols, int64_t es, void **buf, struct tir_err *err)
{
	int64_t plane, count = 1, nst[TIR_MAX_RANK], bytes;
	bool big = __builtin_mul_overflow(rows, cols, &plane);

	for (int d = nb - 1; d >= 0; d--) {
		nst[d] = 0;
		if (st[d] == 0)
			continue;
		big |= __builtin_mul_overflow(plane, count, &nst[d]);
		big |= __builtin_mul_overflow(count, shape[d], &count);
	}
	big |= __builtin_mul_overflow(plane, count, &bytes);
	big |= __builtin_mul_overflow(bytes, es, &bytes);
	char *p = big ? NULL : malloc((size_t)bytes);
	if (!p)
		return tir_errf(err, TIR_ENOMEM, NULL,
				"matmul: out of memory copying a strided operand (%lld x %lld, %lld times)",
				(long long)rows, (long long)cols, (long long)count);
	int64_t idx[TIR_MAX_RANK] = { 0 }, off = 0;
	char *d = p;
	for (int64_t e = 0; e < count; e++) {
		for (int64_t i = 0; i < rows; i++) {
			const char *s = mt->p + (off + i * mt->rs) * es;
			if (es == 4) {
				for (int64_t j = 0; j < cols; j++, d += 4)
					memcpy(d, s + j * mt->cs * 4, 4);
			} else {
				for (int64_t j = 0; j < cols; j++, d += 8)
					memcpy(d, s + j * mt->cs * 8, 8);
			}
		}
		for (int x = nb - 1; x >= 0; x--) {
			if (st[x] == 0)
				continue;
			if (++idx[x] < shape[x]) {
				off += st[x];
				break;
			}
			idx[x] = 0;
			off -= st[x] * (shape[x] - 1);
		}
	}
	*buf = p;
	mt->p = p;
	mt->rs = cols;
	mt->cs = 1;
	memcpy(st, nst, sizeof nst[0] * (size_t)nb);
	return 0;
}

/* When b is one matrix for every batch and a's batches follow each other
 * row after row, the whole batch is one [batches * m, k] matrix with row
 * stride *rs (x[B, T, D] @ w[D, E]). */
static bool fold_rows(int nb, const int64_t *dims, const int64_t *as, const int64_t *bs,
		      int64_t m, int64_t a_rs, int64_t *rs)
{
	bool known = m > 1;
	int64_t want = 0;
	if (known && __builtin_mul_overflow(a_rs, m, &want))
		return false;
	*rs = a_rs;
	for (int d = nb - 1; d >= 0; d--) {
		if (dims[d] == 1)
			continue;
		if (bs[d] != 0)
			return false;
		if (!known) {
			*rs = want = as[d];
			known = true;
		}
		if (as[d] != want || want == 0)
			return false;
		if (__builtin_mul_overflow(want, dims[d], &want))
			return false;
	}
	return true;
}

/* out = a @ b over broadcast batches; see exec.h.  Scratch is freed. */
int tir_k_matmul(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *out,
		 struct tir_err *err)
{
	return tir_k_matmul_epi(a, b, out, NULL, NULL, err);
}

int tir_k_matmul_epi(const struct tir_tensor *a, const struct tir_tensor *b,
		     struct tir_tensor *out, tir_epilogue_fn epi, void *epi_ctx, struct tir_err *err)
{
	int r = a->rank, nb = r - 2;
	enum tir_dtype dt = out->dtype;
	struct job j = { .dt = dt, .epi = epi, .epi_ctx = epi_ctx };
	void *sa = NULL, *sb = NULL;
	int rc = 0;

	if (r < 2 || b->rank != r || out->rank != r)
		return tir_errf(err, TIR_ETYPE, NULL,
				"matmul: operands of rank %d and %d into rank %d (need equal ranks >= 2)",
				a->rank, b->rank, out->rank);
	if (a->dtype != dt || b->dtype != dt)
		return tir_errf(err, TIR_ETYPE, NULL, "matmul: dtypes %s and %s into %s",
				tir_dtype_name(a->dtype), tir_dtype_name(b->dtype),
				tir_dtype_name(dt));
	if (dt == TIR_DTYPE_BOOL || (unsigned)dt >= TIR_DTYPE_COUNT)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "matmul: no kernel for %s",
				tir_dtype_name(dt));
	int64_t m = a->shape[r - 2], k = a->shape[r - 1], n = b->shape[r - 1];
	if (b->shape[r - 2] != k)
		return tir_errf(err, TIR_ETYPE, NULL, "matmul: inner dimensions differ: %lld and %lld",
				(long long)k, (long long)b->shape[r - 2]);
	if (out->shape[r - 2] != m || out->shape[r - 1] != n)
		return tir_errf(err, TIR_ETYPE, NULL, "matmul: result is [%lld, %lld], out is [%lld, %lld]",
				(long long)m, (long long)n, (long long)out->shape[r - 2],
				(long long)out->shape[r - 1]);
	for (int d = 0; d < nb; d++) {
		int64_t dim = out->shape[d];
		if ((a->shape[d] != dim && a->shape[d] != 1) ||
		    (b->shape[d] != dim && b->shape[d] != 1))
			return tir_errf(err, TIR_ETYPE, NULL,
					"matmul: batch axis %d: %lld and %lld do not broadcast to %lld",
					d, (long long)a->shape[d], (long long)b->shape[d],
					(long long)dim);
		j.shape[d] = dim;
		j.as[d] = a->shape[d] == 1 ? 0 : a->strides[d];
		j.bs[d] = b->shape[d] == 1 ? 0 : b->strides[d];
	}
	if (!tir_tensor_is_contiguous(out))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "matmul: out must be contiguous");

	int64_t total = tir_tensor_numel(out);
	if (total == 0)
		return 0;
	j.es = (int64_t)tir_dtype_size(dt);
	j.c = tir_tensor_data(out);
	if (k == 0) {
		memset(j.c, 0, (size_t)(total * j.es));
		if (epi && epi(epi_ctx, 0, total))
			return tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory in its epilogue");
		return 0;
	}
	int64_t batches = total / (m * n);
	j.nb = nb;
	j.m = m;
	j.n = n;
	j.k = k;
	j.a = (struct mat){ tir_tensor_data(a), a->strides[r - 2], a->strides[r - 1] };
	j.b = (struct mat){ tir_tensor_data(b), b->strides[r - 2], b->strides[r - 1] };
	j.blas = (dt == TIR_DTYPE_F32 || dt == TIR_DTYPE_F64) && k <= GEMM_MAX && n <= GEMM_MAX;

	if (j.blas) {
		tir_blas_single();
		if (!blas_layout(m, k, j.a.rs, j.a.cs, &j.ta, &j.lda)) {
			if ((rc = stage(nb, j.shape, j.as, &j.a, m, k, j.es, &sa, err)))
				goto done;
			blas_layout(m, k, j.a.rs, j.a.cs, &j.ta, &j.lda);
		}
		if (!blas_layout(k, n, j.b.rs, j.b.cs, &j.tb, &j.ldb)) {
			if ((rc = stage(nb, j.shape, j.bs, &j.b, k, n, j.es, &sb, err)))
				goto done;
			blas_layout(k, n, j.b.rs, j.b.cs, &j.tb, &j.ldb);
		}
		/* b shared by every batch entry: one tall matrix, blocked as such */
		int64_t frs, flda;
		enum CBLAS_TRANSPOSE fta;
		if (batches > 1 && fold_rows(nb, j.shape, j.as, j.bs, m, j.a.rs, &frs) &&
		    blas_layout(batches * m, k, frs, j.a.cs, &fta, &flda)) {
			j.m = batches * m;
			j.nb = 0;
			j.a.rs = frs;
			j.ta = fta;
			j.lda = flda;
			batches = 1;
		}
	}
	choose_blocks(&j, batches);
	int64_t ntasks = batches * j.mblocks * j.nblocks;
	double macs = (double)batches * (double)j.m * (double)j.n * (double)j.k;
	if (macs < (double)SERIAL_MACS) {
		for (int64_t t = 0; t < ntasks; t++)
			gemm_task(&j, t);
	} else {
		tir_pool_run(ntasks, gemm_task, &j);
	}
	if (j.epi_rc)
		rc = tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory in its epilogue");
done:
	free(sa);
	free(sb);
	return rc;
}

static pthread_once_t single_once = PTHREAD_ONCE_INIT;

static void set_single(void)
{
	openblas_set_num_threads(1);
}

/* OpenBLAS on one thread: the pool does the parallel work. */
void tir_blas_single(void)
{
	pthread_once(&single_once, set_single);
}

/* n threads for the engine; n < 1 means one per processor. */
void tir_blas_set_threads(int n)
{
	tir_blas_single();
	tir_pool_set_threads(n);
}

static char blas_info[256];
static pthread_once_t blas_info_once = PTHREAD_ONCE_INIT;

static void blas_info_init(void)
{
	const char *cfg = openblas_get_config();
	const char *core = openblas_get_corename();
	snprintf(blas_info, sizeof blas_info, "%s (core %s)", cfg ? cfg : "OpenBLAS",
		 core ? core : "unknown");
}

/* A line describing the BLAS in use; static storage. */
const char *tir_blas_info(void)
{
	pthread_once(&blas_info_once, blas_info_init);
	return blas_info;
}
