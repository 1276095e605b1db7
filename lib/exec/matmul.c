/*
 * matmul.c — the matmul kernel: float matrices through the gemm chosen
 * (tir_gemm: tir's own packed gemm, gemm.c, or OpenBLAS, blas.c), integer
 * ones by plain loops cut into blocks on the pool, batch axes broadcast.
 * Results are bitwise the same with any thread count on tir's gemm (not
 * on OpenBLAS's threads: docs/decisions.md); a product of a few rows
 * reads b where it lies (gemv.c).  Not here:
 * fused epilogues (lib/fusion) or the nn ops built on matmul (nn.c).
 */
#include "exec.h"

#include <string.h>

/* One 2-D operand: element (i, j) is at p + (i * rs + j * cs) elements. */
struct mat {
	const char *p;
	int64_t rs, cs;
};

/* Integer matmuls: the output is cut into blocks of rows and columns
 * (whole cache lines of columns, so two tasks never write one line),
 * halved the longer side first toward TIR_TASKS_WANT tasks but never below
 * 16 cache lines of elements a side; each block is one task of plain
 * loops.  Each element is one exact (wrapping) sum, so any cut gives the
 * same result. */
/* Below this many multiply-adds a matmul is not worth waking the pool. */
#define SERIAL_MACS ((int64_t)1 << 18)

/* c (row stride ldc) = a[m, k] @ b[k, n] by loops.  T is an unsigned
 * type, so integer products wrap instead of overflowing. */
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
	default:
		TIR_ASSERT(!"matmul dtype");
	}
}

/* One integer matmul cut into tasks: batch entries by bm x bn blocks of
 * the [m, n] output matrix, task t = (batch, row block, column block). */
struct job {
	enum tir_dtype dt;
	int64_t es;
	int64_t m, n, k;                    /* one batch entry's matrices */
	int64_t bm, bn, mblocks, nblocks;   /* block size, blocks per axis */
	int nb;                             /* batch axes */
	int64_t shape[TIR_MAX_RANK];        /* out's batch axes */
	int64_t as[TIR_MAX_RANK], bs[TIR_MAX_RANK];   /* 0 when broadcast */
	struct mat a, b;
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
	while (batches * ceil_div(j->m, bm) * ceil_div(j->n, bn) < TIR_TASKS_WANT) {
		int64_t hm = bm, hn = bn;
		if (bm > bn)
			hm = round_up(ceil_div(bm, 2), line);
		else
			hn = round_up(ceil_div(bn, 2), line);
		if ((hm < bm ? hm : hn) < 16 * line)
			break;
		bm = hm;
		bn = hn;
	}
	j->bm = bm;
	j->bn = bn;
	j->mblocks = ceil_div(j->m, bm);
	j->nblocks = ceil_div(j->n, bn);
}

static void loop_task(void *arg, int64_t t)
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
	loop_matmul(j->dt, mi, nj, j->k, a, b, c, j->n);
	/* the block is still in cache: finish it (whole rows in one call) */
	int64_t run = nj == j->n ? mi * nj : nj;
	for (int64_t row = 0; j->epi && row < mi; row += run / nj)
		if (j->epi(j->epi_ctx, (batch * j->m + i0 + row) * j->n + j0, run))
			__atomic_store_n(&((struct job *)j)->epi_rc, 1, __ATOMIC_RELAXED);
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

/* out = a @ b over broadcast batches; see exec.h. */
int tir_k_matmul(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *out,
		 struct tir_err *err)
{
	return tir_k_matmul_epi(a, b, out, NULL, NULL, err);
}

static int matmul(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *out,
		  tir_epilogue_fn epi, void *epi_ctx, void *round, struct tir_err *err);

int tir_k_matmul_epi(const struct tir_tensor *a, const struct tir_tensor *b,
		     struct tir_tensor *out, tir_epilogue_fn epi, void *epi_ctx, struct tir_err *err)
{
	return matmul(a, b, out, epi, epi_ctx, NULL, err);
}

int tir_k_matmul_bf16(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *wide,
		      struct tir_tensor *out, struct tir_err *err)
{
	if (wide->dtype != TIR_DTYPE_F32 || out->dtype != TIR_DTYPE_BF16 ||
	    tir_tensor_numel(out) != tir_tensor_numel(wide) || !tir_tensor_is_contiguous(out))
		return tir_errf(err, TIR_ETYPE, NULL, "matmul: a bf16 result needs an f32 one of its size");
	return matmul(a, b, wide, NULL, NULL, tir_tensor_data(out), err);
}

/* out = a @ b; round: NULL, or where the bf16 rounding of out goes (out
 * f32, contiguous; with no data, allocated here only where the gemm needs
 * its f32 sums: tir_gemm_needs_c) */
static int matmul(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *out,
		  tir_epilogue_fn epi, void *epi_ctx, void *round, struct tir_err *err)
{
	int r = a->rank, nb = r - 2;
	enum tir_dtype dt = out->dtype;
	struct job j = { .dt = dt, .epi = epi, .epi_ctx = epi_ctx };

	if (r < 2 || b->rank != r || out->rank != r)
		return tir_errf(err, TIR_ETYPE, NULL,
				"matmul: operands of rank %d and %d into rank %d (need equal ranks >= 2)",
				a->rank, b->rank, out->rank);
	/* a float product may read operands stored narrower: gemm.c widens
	 * them as it packs */
	bool widen = tir_dtype_is_wide_float(dt) &&
		(a->dtype == dt || tir_dtype_wide(a->dtype) != a->dtype) &&
		(b->dtype == dt || tir_dtype_wide(b->dtype) != b->dtype);
	if (!widen && (a->dtype != dt || b->dtype != dt))
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
		if (j.c)
			memset(j.c, 0, (size_t)(total * j.es));
		if (round)
			memset(round, 0, (size_t)total * 2);
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

	if (tir_dtype_is_wide_float(dt)) {
		struct tir_gemm g = {
			.dt = dt, .a_dt = a->dtype, .b_dt = b->dtype,
			.m = m, .n = n, .k = k, .a = j.a.p, .b = j.b.p,
			.a_rs = j.a.rs, .a_cs = j.a.cs, .b_rs = j.b.rs, .b_cs = j.b.cs,
			.nb = nb, .c = j.c, .ldc = n, .c_batch = m * n, .out = round, .epi = epi,
			.epi_ctx = epi_ctx,
		};
		memcpy(g.shape, j.shape, sizeof g.shape);
		memcpy(g.as, j.as, sizeof g.as);
		memcpy(g.bs, j.bs, sizeof g.bs);
		/* b shared by every batch entry: one tall matrix (the same
		 * elements either way; fewer edge tiles) */
		int64_t frs;
		if (batches > 1 && fold_rows(nb, j.shape, j.as, j.bs, m, j.a.rs, &frs)) {
			g.m = batches * m;
			g.nb = 0;
			g.a_rs = frs;
			g.c_batch = 0;
		}
		/* a few rows on tir's gemm: b read as it lies, not packed
		 * (gemv.c; the same bits) */
		if (tir_gemv_takes(&g)) {
			int use = tir_gemm_blas(dt, err);
			if (use < 0)
				return use;
			if (!use)
				return tir_gemv_run(&g, err);
		}
		/* a bf16 result's f32 sums, where the gemm keeps them (a
		 * tensor, so that a memory budget counts them) */
		struct tir_tensor sums = {0};
		int rc = !g.c ? tir_gemm_needs_c(&g, err) : 0;
		if (rc > 0) {
			rc = tir_tensor_alloc(&sums, dt, out->rank, out->shape, false, err);
			g.c = tir_tensor_data(&sums);
		}
		if (!rc)
			rc = tir_gemm(&g, err);
		tir_tensor_release(&sums);
		return rc;
	}

	choose_blocks(&j, batches);
	int64_t ntasks = batches * j.mblocks * j.nblocks;
	double macs = (double)batches * (double)j.m * (double)j.n * (double)j.k;
	if (macs < (double)SERIAL_MACS) {
		for (int64_t t = 0; t < ntasks; t++)
			loop_task(&j, t);
	} else {
		tir_pool_run(ntasks, loop_task, &j);
	}
	if (j.epi_rc)
		return tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory in its epilogue");
	return 0;
}

size_t tir_matmul_least(const struct tir_type *a, const struct tir_type *b, const struct tir_type *out)
{
	int r = out->rank, nb = r - 2;
	enum tir_dtype dt = out->dtype == TIR_DTYPE_BF16 ? TIR_DTYPE_F32 : (enum tir_dtype)out->dtype;
	if (!tir_dtype_is_wide_float(dt) || r < 2 || a->rank != r || b->rank != r || tir_gemm_kind() != TIR_GEMM_TIR)
		return 0;
	struct tir_gemm g = {
		.dt = dt, .a_dt = (enum tir_dtype)a->dtype, .b_dt = (enum tir_dtype)b->dtype,
		.m = out->shape[r - 2], .n = out->shape[r - 1], .k = a->shape[r - 1], .nb = nb,
		.a_rs = a->shape[r - 1], .a_cs = 1, .b_rs = b->shape[r - 1], .b_cs = 1,
	};
	int64_t batches = 1;
	bool shared = true;
	for (int d = 0; d < nb; d++) {
		g.shape[d] = out->shape[d];
		g.as[d] = a->shape[d] != 1;
		g.bs[d] = b->shape[d] != 1;
		shared &= !g.bs[d];
		batches *= out->shape[d];
	}
	if (batches > 1 && shared) { /* b shared: one tall product (at most) */
		g.m *= batches;
		g.nb = 0;
	}
	return tir_gemv_takes(&g) ? 0 : tir_gemm_least(&g);
}
