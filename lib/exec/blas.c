/*
 * blas.c — the matmul kernel: float matrices through OpenBLAS's gemm, integer
 * ones by plain loops, batch axes broadcast.  Operands are handed to BLAS in
 * place whenever their layout allows; only odd strides are copied.  Not here:
 * fused epilogues (lib/fusion) or the nn ops built on matmul (nn.c).
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

/* A contiguous copy of a matrix BLAS cannot read, kept while the next
 * batch asks for the same source (a broadcast b is copied once). */
struct stage {
	void *buf;
	size_t cap;
	struct mat src;
	int64_t rows, cols;
	bool valid;
};

struct gemm {
	enum tir_dtype dt;
	size_t es;
	struct stage sa, sb;
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

/* Copy m into st->buf as a contiguous rows x cols matrix (reusing the last
 * copy when it is of the same source). */
static int stage_copy(struct stage *st, size_t es, struct mat m, int64_t rows, int64_t cols,
		      struct tir_err *err)
{
	if (st->valid && st->src.p == m.p && st->src.rs == m.rs && st->src.cs == m.cs &&
	    st->rows == rows && st->cols == cols)
		return 0;
	size_t need = (size_t)rows * (size_t)cols * es;
	if (need > st->cap) {
		free(st->buf);
		st->buf = malloc(need);
		st->cap = st->buf ? need : 0;
		st->valid = false;
		if (!st->buf)
			return tir_errf(err, TIR_ENOMEM, NULL,
					"matmul: out of memory copying an operand (%zu bytes)", need);
	}
	char *d = st->buf;
	for (int64_t i = 0; i < rows; i++) {
		const char *s = m.p + i * m.rs * (int64_t)es;
		if (es == 4) {
			for (int64_t j = 0; j < cols; j++, d += 4)
				memcpy(d, s + j * m.cs * 4, 4);
		} else {
			for (int64_t j = 0; j < cols; j++, d += 8)
				memcpy(d, s + j * m.cs * 8, 8);
		}
	}
	st->src = m;
	st->rows = rows;
	st->cols = cols;
	st->valid = true;
	return 0;
}

/* c[m, n] (row stride n) = a[m, k] @ b[k, n] by loops.  T is float, double
 * or an unsigned type, so integer products wrap instead of overflowing. */
#define LOOP_MATMUL(T)                                                        \
	do {                                                                  \
		T *o = (T *)c;                                                \
		const T *pa = (const T *)a.p, *pb = (const T *)b.p;           \
		for (int64_t i = 0; i < m; i++) {                             \
			T *row = o + i * n;                                   \
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
			struct mat a, struct mat b, void *c)
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

/* c[m, n] (contiguous) = a @ b for float types, m, n, k >= 1. */
static int gemm2d(struct gemm *g, int64_t m, int64_t n, int64_t k, struct mat a,
		  struct mat b, void *c, struct tir_err *err)
{
	enum CBLAS_TRANSPOSE ta, tb;
	int64_t lda, ldb;
	int rc;

	if (m > GEMM_MAX || n > GEMM_MAX || k > GEMM_MAX) {
		/* beyond what one cblas call can index: correct, if slow */
		loop_matmul(g->dt, m, n, k, a, b, c);
		return 0;
	}
	if (!blas_layout(m, k, a.rs, a.cs, &ta, &lda)) {
		if ((rc = stage_copy(&g->sa, g->es, a, m, k, err)))
			return rc;
		a.p = g->sa.buf;
		ta = CblasNoTrans;
		lda = k;
	}
	if (!blas_layout(k, n, b.rs, b.cs, &tb, &ldb)) {
		if ((rc = stage_copy(&g->sb, g->es, b, k, n, err)))
			return rc;
		b.p = g->sb.buf;
		tb = CblasNoTrans;
		ldb = n;
	}
	if (g->dt == TIR_DTYPE_F32)
		cblas_sgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, 1.0f,
			    (const float *)a.p, (blasint)lda, (const float *)b.p, (blasint)ldb,
			    0.0f, c, (blasint)n);
	else
		cblas_dgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, 1.0,
			    (const double *)a.p, (blasint)lda, (const double *)b.p, (blasint)ldb,
			    0.0, c, (blasint)n);
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
int tir_k_matmul(const struct tir_tensor *a, const struct tir_tensor *b,
		 struct tir_tensor *out, struct tir_err *err)
{
	int r = a->rank, nb = r - 2;
	enum tir_dtype dt = out->dtype;
	int64_t as[TIR_MAX_RANK], bs[TIR_MAX_RANK];
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
		as[d] = a->shape[d] == 1 ? 0 : a->strides[d];
		bs[d] = b->shape[d] == 1 ? 0 : b->strides[d];
	}
	if (!tir_tensor_is_contiguous(out))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "matmul: out must be contiguous");

	int64_t total = tir_tensor_numel(out);
	if (total == 0)
		return 0;
	size_t es = tir_dtype_size(dt);
	char *o = tir_tensor_data(out);
	if (k == 0) {
		memset(o, 0, (size_t)total * es);
		return 0;
	}
	int64_t batches = total / (m * n);
	struct mat ma = { tir_tensor_data(a), a->strides[r - 2], a->strides[r - 1] };
	struct mat mb = { tir_tensor_data(b), b->strides[r - 2], b->strides[r - 1] };
	bool is_float = dt == TIR_DTYPE_F32 || dt == TIR_DTYPE_F64;
	struct gemm g = { .dt = dt, .es = es };

	int64_t frs;
	if (is_float && batches > 1 && batches * m <= GEMM_MAX &&
	    fold_rows(nb, out->shape, as, bs, m, ma.rs, &frs)) {
		ma.rs = frs;
		rc = gemm2d(&g, batches * m, n, k, ma, mb, o, err);
		goto done;
	}

	int64_t idx[TIR_MAX_RANK] = { 0 }, aoff = 0, boff = 0;
	for (int64_t t = 0; t < batches; t++) {
		struct mat xa = ma, xb = mb;
		xa.p += aoff * (int64_t)es;
		xb.p += boff * (int64_t)es;
		void *c = o + t * m * n * (int64_t)es;
		if (is_float) {
			if ((rc = gemm2d(&g, m, n, k, xa, xb, c, err)))
				break;
		} else {
			loop_matmul(dt, m, n, k, xa, xb, c);
		}
		for (int d = nb - 1; d >= 0; d--) {
			if (++idx[d] < out->shape[d]) {
				aoff += as[d];
				boff += bs[d];
				break;
			}
			idx[d] = 0;
			aoff -= as[d] * (out->shape[d] - 1);
			boff -= bs[d] * (out->shape[d] - 1);
		}
	}
done:
	free(g.sa.buf);
	free(g.sb.buf);
	return rc;
}

/* n threads for OpenBLAS; n < 1 means one per processor. */
void tir_blas_set_threads(int n)
{
	openblas_set_num_threads(n < 1 ? openblas_get_num_procs() : n);
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
