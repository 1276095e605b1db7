/*
 * linalg.c — NumPy's np.linalg on LAPACK (OpenBLAS's): solve, inv, det,
 * slogdet, cholesky, qr, eigh, svd, lstsq, pinv, each matrix of a batch by
 * one single-threaded LAPACK call, the batch spread over tir's pool (one
 * matrix a task: the same bits at any thread count).  And RESULT, one of
 * the results an op with several packs into its node (ir.h).  Every LAPACK
 * symbol is found through tir_blas_sym.  Not here: shapes (check.c).
 */
#include "exec.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run-time lookup of OpenBLAS's symbols (lib/exec/blas.c). */


/* LAPACK's Fortran interface, s and d alike (pointers are pointers);
 * a character argument's hidden length is passed last. */
typedef void (*getrf_fn)(const int *, const int *, void *, const int *, int *, int *);
typedef void (*getrs_fn)(const char *, const int *, const int *, const void *, const int *, const int *, void *,
			 const int *, int *, size_t);
typedef void (*trsm_fn)(const char *, const char *, const char *, const char *, const int *, const int *,
			const void *, const void *, const int *, void *, const int *, size_t, size_t, size_t, size_t);
typedef void (*potrf_fn)(const char *, const int *, void *, const int *, int *, size_t);
typedef void (*geqrf_fn)(const int *, const int *, void *, const int *, void *, void *, const int *, int *);
typedef void (*orgqr_fn)(const int *, const int *, const int *, void *, const int *, const void *, void *,
			 const int *, int *);
typedef void (*syevd_fn)(const char *, const char *, const int *, void *, const int *, void *, void *,
			 const int *, int *, const int *, int *, size_t, size_t);
typedef void (*gesdd_fn)(const char *, const int *, const int *, void *, const int *, void *, void *,
			 const int *, void *, const int *, void *, const int *, int *, int *, size_t);
typedef void (*gelsd_fn)(const int *, const int *, const int *, void *, const int *, void *, const int *,
			 void *, const void *, int *, void *, const int *, int *, int *);

/* A batch of fewer matrices than tir's threads runs each matrix on
 * OpenBLAS's threads from this many elements of a (256 x 256) up. */
#define LA_THREADED_ELEMENTS ((int64_t)256 * 256)

/* One op over a batch. */
struct la {
	const struct tir_node *n;
	bool f64;                    /* always: f32 computes in f64 (tir_k_linalg) */
	size_t es;                   /* element size */
	int64_t m, k;                /* a's rows and columns */
	int64_t nrhs;                /* solve, lstsq: b's columns (1: a vector) */
	bool vec;                    /* solve, lstsq: b is a vector */
	int nb;                      /* batch axes */
	int64_t batch[TIR_MAX_RANK], nbatch;
	const char *a, *b;           /* operands (converted, contiguous matrices) */
	int64_t astr[TIR_MAX_RANK], bstr[TIR_MAX_RANK];   /* their batch strides, elements (0: broadcast) */
	int64_t amat, bmat;          /* elements of one matrix */
	char *out;                   /* a single result, or the pack */
	int nres;
	size_t off[TIR_MAX_RESULTS]; /* each result's bytes in out */
	int64_t rsize[TIR_MAX_RESULTS];   /* each result's elements per matrix */
	double rcond;                /* pinv */
	bool full;                   /* svd */
	void *fn[3];                 /* the LAPACK routines */
	int *info;                   /* per matrix: 0, LAPACK's info > 0, or -1 out of memory */
};

static double get(const struct la *L, const void *p, int64_t i)
{
	return L->f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static void put(const struct la *L, void *p, int64_t i, double v)
{
	if (L->f64)
		((double *)p)[i] = v;
	else
		((float *)p)[i] = (float)v;
}

/* The copies between tir's row-major matrices and LAPACK's column-major
 * ones go by square tiles of 8 x 8 (a tile's row is one 64-byte line of
 * f64), writing along the destination's contiguous axis: a store strided
 * a whole column apart costs more than a load does (a 1024 x 1024 f64
 * matrix into column-major order took 9 ms with the stores strided, 1 ms
 * with the loads strided).  LA_TRANSPOSE copies element (i, j) of an R x C
 * matrix, j innermost: D's j stride should be 1. */
#define LA_TILE 8

#define LA_TRANSPOSE(T, S, SROW, SCOL, D, DROW, DCOL, R, C)                            \
	for (int64_t i0 = 0; i0 < (R); i0 += LA_TILE)                                  \
		for (int64_t j0 = 0; j0 < (C); j0 += LA_TILE) {                        \
			int64_t i1 = i0 + LA_TILE < (R) ? i0 + LA_TILE : (R);           \
			int64_t j1 = j0 + LA_TILE < (C) ? j0 + LA_TILE : (C);           \
			for (int64_t i = i0; i < i1; i++)                               \
				for (int64_t j = j0; j < j1; j++)                       \
					((T *)(D))[i * (DROW) + j * (DCOL)] =           \
						((const T *)(S))[i * (SROW) + j * (SCOL)]; \
		}

/* Row-major r x c at src into column-major dst (leading dimension ld),
 * column by column: element (i, j) of the c x r transpose. */
static void to_cols(const struct la *L, const void *src, int64_t r, int64_t c, void *dst, int64_t ld)
{
	if (L->f64)
		LA_TRANSPOSE(double, src, 1, c, dst, ld, 1, c, r)
	else
		LA_TRANSPOSE(float, src, 1, c, dst, ld, 1, c, r)
}

/* Column-major r x c at src (leading dimension ld) into row-major dst. */
static void to_rows(const struct la *L, const void *src, int64_t ld, int64_t r, int64_t c, void *dst)
{
	if (L->f64)
		LA_TRANSPOSE(double, src, 1, ld, dst, c, 1, r, c)
	else
		LA_TRANSPOSE(float, src, 1, ld, dst, c, 1, r, c)
}

/* Matrix t of the batch: its operands and results. */
static const char *operand(const struct la *L, const char *base, const int64_t *str, int64_t t)
{
	int64_t off = 0;
	for (int d = L->nb - 1; d >= 0; d--) {
		off += (t % L->batch[d]) * str[d];
		t /= L->batch[d];
	}
	return base + off * (int64_t)L->es;
}

static void *result(const struct la *L, int r, int64_t t)
{
	return L->out + L->off[r] + (size_t)(t * L->rsize[r]) * L->es;
}

static int imax(int64_t a, int64_t b)
{
	return (int)(a > b ? a : b);
}

/* A workspace size LAPACK asked for (returned in the work array's first element). */
static int work_size(const struct la *L, const void *w)
{
	double v = get(L, w, 0);
	return v < 1 ? 1 : (int)(v * (1 + 4 * DBL_EPSILON)) + 1;
}

/* sign and log|det| of a's LU factors (NumPy's way: det = sign * exp(logdet)). */
static void lu_slogdet(const double *lu, const int *ipiv, int n, double *sign, double *logdet)
{
	double s = 1, acc = 0;
	for (int i = 0; i < n; i++) {
		double d = lu[i + (int64_t)i * n];
		if (ipiv[i] != i + 1)
			s = -s;
		if (d < 0)
			s = -s, d = -d;
		acc += log(d);
	}
	*sign = s;
	*logdet = acc;
}

/* One matrix: 0, LAPACK's info (> 0: singular, not positive definite,
 * no convergence), or -1 when out of memory. */
static int one(struct la *L, int64_t t)
{
	const struct tir_node *n = L->n;
	size_t es = L->es;
	int m = (int)L->m, k = (int)L->k, mn = m < k ? m : k, info = 0;
	const char *a = operand(L, L->a, L->astr, t);
	/* a in column-major order, and room LAPACK needs beside it */
	size_t ab = (size_t)L->amat * es;
	char *ca = malloc(ab ? ab : es);
	if (!ca)
		return -1;
	/* the LU family factors a's transpose, which is a as it lies (row-major
	 * a is column-major a^T): no transposition in or out */
	bool lu = n->op == TIR_OP_SOLVE || n->op == TIR_OP_INV || n->op == TIR_OP_DET || n->op == TIR_OP_SLOGDET;
	if (lu)
		memcpy(ca, a, ab);
	else
		to_cols(L, a, m, k, ca, m);
	int rc = 0;
	void *w = NULL, *w2 = NULL;
	int *iw = NULL;
	int lw = -1;
	char q[2];
	switch (n->op) {
	case TIR_OP_SOLVE:
	case TIR_OP_INV: {
		/* a^T = P^T L U (getrf of a as it lies).  A vector b: a x = b is
		 * (a^T)^T x = b, getrs with 'T'.  A matrix b (inv: the identity):
		 * a x = b is x^T a^T = b^T, and row-major x is column-major x^T,
		 * so x^T is solved in place in the result by two triangular
		 * solves from the right, its columns (x's rows) then swapped back
		 * by the pivots, last first. */
		int nrhs = n->op == TIR_OP_INV ? m : (int)L->nrhs;
		double *x = result(L, 0, t);
		iw = malloc(sizeof(int) * (size_t)(m + 1));
		if (!iw)
			goto oom;
		if (n->op == TIR_OP_INV) {
			memset(x, 0, (size_t)m * (size_t)m * es);
			for (int i = 0; i < m; i++)
				x[(int64_t)i * m + i] = 1;
		} else {
			memcpy(x, operand(L, L->b, L->bstr, t), (size_t)m * (size_t)nrhs * es);
		}
		if (m == 0 || nrhs == 0)
			break;
		((getrf_fn)L->fn[0])(&m, &m, ca, &m, iw, &info);
		if (info)
			break;
		int i1 = 1;
		if (n->op == TIR_OP_SOLVE && L->vec) {
			((getrs_fn)L->fn[1])("T", &m, &i1, ca, &m, iw, x, &m, &info, 1);
			break;
		}
		double alpha = 1;
		((trsm_fn)L->fn[2])("R", "U", "N", "N", &nrhs, &m, &alpha, ca, &m, x, &nrhs, 1, 1, 1, 1);
		((trsm_fn)L->fn[2])("R", "L", "N", "U", &nrhs, &m, &alpha, ca, &m, x, &nrhs, 1, 1, 1, 1);
		for (int i = m - 1; i >= 0; i--) {
			double *r0 = x + (int64_t)i * nrhs, *r1 = x + (int64_t)(iw[i] - 1) * nrhs;
			if (r0 != r1)
				for (int j = 0; j < nrhs; j++) {
					double v = r0[j];
					r0[j] = r1[j];
					r1[j] = v;
				}
		}
		break;
	}
	case TIR_OP_DET:
	case TIR_OP_SLOGDET: {
		iw = malloc(sizeof(int) * (size_t)(m + 1));
		if (!iw)
			goto oom;
		if (m > 0)
			((getrf_fn)L->fn[0])(&m, &m, ca, &m, iw, &info);
		double sign = 0, logdet = -INFINITY;
		if (info == 0)
			lu_slogdet((const double *)ca, iw, m, &sign, &logdet);
		info = 0; /* singular: det 0, slogdet (0, -inf), as NumPy */
		if (n->op == TIR_OP_DET) {
			put(L, result(L, 0, t), 0, sign * exp(logdet));
		} else {
			put(L, result(L, 0, t), 0, sign);
			put(L, result(L, 1, t), 0, logdet);
		}
		break;
	}
	case TIR_OP_CHOLESKY: {
		if (m > 0)
			((potrf_fn)L->fn[0])("L", &m, ca, &m, &info, 1);
		if (info)
			break;
		for (int j = 0; j < m; j++) /* the lower triangle: zero above */
			for (int i = 0; i < j; i++)
				put(L, ca, i + (int64_t)j * m, 0);
		to_rows(L, ca, m, m, m, result(L, 0, t));
		break;
	}
	case TIR_OP_QR: {
		void *r = result(L, 1, t), *qo = result(L, 0, t);
		if (mn == 0) {
			memset(r, 0, (size_t)L->rsize[1] * es);
			memset(qo, 0, (size_t)L->rsize[0] * es);
			break;
		}
		double wq[2];
		w = malloc((size_t)mn * es);
		if (!w)
			goto oom;
		((geqrf_fn)L->fn[0])(&m, &k, ca, &m, w, wq, &lw, &info);
		int l1 = work_size(L, wq);
		((orgqr_fn)L->fn[1])(&m, &mn, &mn, ca, &m, w, wq, &lw, &info);
		int l2 = work_size(L, wq);
		lw = l1 > l2 ? l1 : l2;
		if (!(w2 = malloc((size_t)lw * es)))
			goto oom;
		((geqrf_fn)L->fn[0])(&m, &k, ca, &m, w, w2, &lw, &info);
		/* r: the upper triangle of the first mn rows */
		for (int i = 0; i < mn; i++)
			for (int j = 0; j < k; j++)
				put(L, r, (int64_t)i * k + j, j >= i ? get(L, ca, i + (int64_t)j * m) : 0.0);
		((orgqr_fn)L->fn[1])(&m, &mn, &mn, ca, &m, w, w2, &lw, &info);
		to_rows(L, ca, m, m, mn, qo);
		break;
	}
	case TIR_OP_EIGH: {
		void *wv = result(L, 0, t);
		if (m == 0)
			break;
		double wq[2];
		int lwq = -1, liw = -1, iwq = 0;
		((syevd_fn)L->fn[0])("V", "L", &m, ca, &m, wv, wq, &lwq, &iwq, &liw, &info, 1, 1);
		lw = work_size(L, wq);
		liw = iwq > 1 ? iwq : 1;
		w = malloc((size_t)lw * es);
		iw = malloc(sizeof(int) * (size_t)liw);
		if (!w || !iw)
			goto oom;
		((syevd_fn)L->fn[0])("V", "L", &m, ca, &m, wv, w, &lw, iw, &liw, &info, 1, 1);
		if (!info)
			to_rows(L, ca, m, m, m, result(L, 1, t));
		break;
	}
	case TIR_OP_SVD:
	case TIR_OP_PINV: {
		/* u (m x uc) and vt (vr x k), column-major; s */
		bool full = n->op == TIR_OP_SVD && L->full;
		int uc = full ? m : mn, vr = full ? k : mn, ldu = imax(m, 1), ldvt = imax(vr, 1);
		void *s = n->op == TIR_OP_SVD ? result(L, 1, t) : NULL;
		w = malloc(((size_t)ldu * (size_t)uc + (size_t)ldvt * (size_t)k + (size_t)mn + 1) * es);
		iw = malloc(sizeof(int) * (size_t)(8 * mn + 1));
		if (!w || !iw)
			goto oom;
		char *u = w, *vt = u + (size_t)ldu * (size_t)uc * es, *sv = vt + (size_t)ldvt * (size_t)k * es;
		q[0] = full ? 'A' : 'S';
		q[1] = 0;
		if (mn > 0) {
			double wq[2];
			int lda = imax(m, 1);
			((gesdd_fn)L->fn[0])(q, &m, &k, ca, &lda, sv, u, &ldu, vt, &ldvt, wq, &lw, iw, &info, 1);
			lw = work_size(L, wq);
			if (!(w2 = malloc((size_t)lw * es)))
				goto oom;
			((gesdd_fn)L->fn[0])(q, &m, &k, ca, &lda, sv, u, &ldu, vt, &ldvt, w2, &lw, iw, &info, 1);
			if (info)
				break;
		} else if (full) { /* an empty matrix: u and vt the identities */
			memset(u, 0, (size_t)ldu * (size_t)uc * es);
			memset(vt, 0, (size_t)ldvt * (size_t)k * es);
			for (int i = 0; i < m; i++)
				put(L, u, i + (int64_t)i * ldu, 1);
			for (int i = 0; i < k; i++)
				put(L, vt, i + (int64_t)i * ldvt, 1);
		}
		if (n->op == TIR_OP_SVD) {
			to_rows(L, u, ldu, m, uc, result(L, 0, t));
			memcpy(s, sv, (size_t)mn * es);
			to_rows(L, vt, ldvt, vr, k, result(L, 2, t));
			break;
		}
		/* pinv: vt^T diag(1/s) u^T, with s at most rcond * max(s) taken as 0 (NumPy) */
		double cut = 0;
		for (int i = 0; i < mn; i++)
			cut = fmax(cut, get(L, sv, i));
		cut *= L->rcond;
		for (int i = 0; i < mn; i++) {
			double x = get(L, sv, i);
			put(L, sv, i, x > cut ? 1.0 / x : 0.0);
		}
		void *o = result(L, 0, t);
		for (int i = 0; i < k; i++)
			for (int j = 0; j < m; j++) {
				double acc = 0;
				for (int l = 0; l < mn; l++)
					acc += get(L, vt, l + (int64_t)i * ldvt) * get(L, sv, l) * get(L, u, j + (int64_t)l * ldu);
				put(L, o, (int64_t)i * m + j, acc);
			}
		break;
	}
	case TIR_OP_LSTSQ: {
		int nrhs = (int)L->nrhs, ldb = imax(imax(m, k), 1), lda = imax(m, 1), rank = 0;
		w = calloc((size_t)ldb * (size_t)(nrhs ? nrhs : 1) + (size_t)mn + 1, es);
		if (!w)
			goto oom;
		char *cb = w, *sv = cb + (size_t)ldb * (size_t)(nrhs ? nrhs : 1) * es;
		to_cols(L, operand(L, L->b, L->bstr, t), m, nrhs, cb, ldb);
		if (mn > 0 && nrhs > 0) {
			/* rcond: NumPy's default, machine epsilon times the larger dimension */
			double rc_d = (L->f64 ? DBL_EPSILON : FLT_EPSILON) * (m > k ? m : k);
			float rc_f = (float)rc_d;
			double wq[2];
			int iwq = 0;
			((gelsd_fn)L->fn[0])(&m, &k, &nrhs, ca, &lda, cb, &ldb, sv, L->f64 ? (void *)&rc_d : (void *)&rc_f,
					      &rank, wq, &lw, &iwq, &info);
			lw = work_size(L, wq);
			w2 = malloc((size_t)lw * es);
			iw = malloc(sizeof(int) * (size_t)(iwq > 1 ? iwq : 1));
			if (!w2 || !iw)
				goto oom;
			((gelsd_fn)L->fn[0])(&m, &k, &nrhs, ca, &lda, cb, &ldb, sv, L->f64 ? (void *)&rc_d : (void *)&rc_f,
					      &rank, w2, &lw, iw, &info);
		}
		if (!info)
			to_rows(L, cb, ldb, k, nrhs, result(L, 0, t));
		break;
	}
	default:
		TIR_ASSERT(!"linalg op");
	}
	rc = info;
	goto done;
oom:
	rc = -1;
done:
	free(ca);
	free(w);
	free(w2);
	free(iw);
	return rc;
}

/* Whether count f64 values at p hold a NaN or an infinity: an exponent of
 * all ones, tested on the bits (a loop the compiler vectorizes). */
static bool non_finite(const char *p, int64_t count)
{
	const uint64_t *u = (const uint64_t *)p, e = 0x7ffull << 52;
	uint64_t any = 0;
	for (int64_t i = 0; i < count; i++)
		any |= (u[i] & e) == e;
	return any != 0;
}

/* Matrix t: a NaN or infinity in its operands makes every one of its
 * results NaN (LAPACK is not asked: some of its iterations need not end
 * on them); else LAPACK's answer. */
static void task(void *ctx, int64_t t)
{
	struct la *L = ctx;
	if (non_finite(operand(L, L->a, L->astr, t), L->amat) ||
	    (L->b && non_finite(operand(L, L->b, L->bstr, t), L->bmat))) {
		for (int r = 0; r < L->nres; r++)
			for (int64_t i = 0; i < L->rsize[r]; i++)
				put(L, result(L, r, t), i, NAN);
		L->info[t] = 0;
		return;
	}
	L->info[t] = one(L, t);
}

/* The routines op calls, by their LAPACK names without the s/d prefix. */
static int find_routines(struct la *L, struct tir_err *err)
{
	const char *names[3] = {NULL, NULL, NULL};
	switch (L->n->op) {
	case TIR_OP_SOLVE: case TIR_OP_INV: names[0] = "getrf"; names[1] = "getrs"; names[2] = "trsm"; break;
	case TIR_OP_DET: case TIR_OP_SLOGDET: names[0] = "getrf"; break;
	case TIR_OP_CHOLESKY: names[0] = "potrf"; break;
	case TIR_OP_QR: names[0] = "geqrf"; names[1] = "orgqr"; break;
	case TIR_OP_EIGH: names[0] = "syevd"; break;
	case TIR_OP_SVD: case TIR_OP_PINV: names[0] = "gesdd"; break;
	case TIR_OP_LSTSQ: names[0] = "gelsd"; break;
	default: TIR_ASSERT(!"linalg op");
	}
	for (int i = 0; i < 3 && names[i]; i++) {
		char sym[32], *why = NULL;
		snprintf(sym, sizeof sym, "%c%s_", L->f64 ? 'd' : 's', names[i]);
		if (!(L->fn[i] = tir_blas_sym(sym, &why)))
			return tir_errf(err, TIR_EUNSUPPORTED, &L->n->loc, "%s: LAPACK's %s is not available%s%s",
					tir_op(L->n->op)->name, sym, why ? ": " : "", why ? why : "");
	}
	return 0;
}

/* An operand as a contiguous tensor of the op's dtype, broadcast to the
 * batch (its matrices keep their own two axes, or one for a vector). */
static int operand_view(struct la *L, const struct tir_tensor *x, int own, struct tir_tensor *c,
			struct tir_tensor *v, int64_t *str, struct tir_err *err)
{
	enum tir_dtype dt = L->f64 ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
	int rc = x->dtype == dt && tir_tensor_is_contiguous(x) ? (tir_tensor_ref(c, x), 0)
							     : tir_tensor_convert(x, dt, c, err);
	if (rc)
		return rc;
	/* batch strides of the contiguous c, lined up with L->batch from the right */
	int xb = c->rank - own;
	for (int d = 0; d < L->nb; d++) {
		int j = d - (L->nb - xb);
		str[d] = j >= 0 && c->shape[j] != 1 ? c->strides[j] : 0;
	}
	tir_tensor_ref(v, c);
	return 0;
}

int tir_k_linalg(const struct tir_node *n, const struct tir_tensor *in, struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_opdef *d = tir_op(n->op);
	struct la L = {.n = n};
	struct tir_type rt[TIR_MAX_RESULTS];
	L.nres = d->nres > 1 ? tir_node_results(n, rt) : 1;
	if (L.nres == 1)
		rt[0] = tir_ntype_value(&n->type);
	/* f32 computes in f64 and is rounded once at the end, as NumPy does */
	bool single = rt[0].dtype == TIR_DTYPE_F32;
	L.f64 = true;
	L.es = 8;
	const struct tir_tensor *a = &in[0];
	L.m = a->shape[a->rank - 2];
	L.k = a->shape[a->rank - 1];
	L.amat = L.m * L.k;
	/* the batch: result 0's leading axes (its own: by the op) */
	int own0 = 2;
	bool vec = false;
	if (n->op == TIR_OP_SOLVE || n->op == TIR_OP_LSTSQ) {
		L.vec = vec = in[1].rank == a->rank - 1;
		own0 = vec ? 1 : 2;
		L.nrhs = vec ? 1 : in[1].shape[in[1].rank - 1];
	} else if (n->op == TIR_OP_DET || n->op == TIR_OP_SLOGDET) {
		own0 = 0;
	} else if (n->op == TIR_OP_EIGH) {
		own0 = 1; /* w */
	}
	L.nb = rt[0].rank - own0;
	L.nbatch = 1;
	for (int i = 0; i < L.nb; i++)
		L.nbatch *= (L.batch[i] = rt[0].shape[i]);
	/* the results in f64, each 64-byte aligned (the pack's layout when f64) */
	size_t wbytes = 0;
	for (int i = 0; i < L.nres; i++) {
		int64_t all = tir_type_numel(&rt[i]);
		L.rsize[i] = L.nbatch ? all / L.nbatch : 0;
		L.off[i] = wbytes;
		wbytes = (wbytes + (size_t)all * 8 + 63) & ~(size_t)63;
	}
	if (n->op == TIR_OP_SVD)
		L.full = n->attr[0].i;
	if (n->op == TIR_OP_PINV)
		L.rcond = n->attr[0].f;
	if (L.m > INT32_MAX / 8 || L.k > INT32_MAX / 8 || L.nrhs > INT32_MAX / 8)
		return tir_errf(err, TIR_EUNSUPPORTED, &n->loc, "%s: LAPACK takes at most %d rows or columns", d->name,
				INT32_MAX / 8);
	struct tir_tensor ca = {0}, va = {0}, cb = {0}, vb = {0};
	int rc = find_routines(&L, err);
	if (!rc)
		rc = operand_view(&L, a, 2, &ca, &va, L.astr, err);
	if (!rc && (n->op == TIR_OP_SOLVE || n->op == TIR_OP_LSTSQ)) {
		rc = operand_view(&L, &in[1], own0, &cb, &vb, L.bstr, err);
		L.bmat = L.m * L.nrhs;
	}
	if (!rc)
		rc = L.nres == 1 ? tir_tensor_alloc(out, (enum tir_dtype)n->type.dtype, n->type.rank, n->type.shape, false, err)
				 : tir_tensor_alloc(out, TIR_DTYPE_U8, 1, n->type.shape, true, err);
	if (rc)
		goto done;
	L.a = tir_tensor_data(&va);
	L.b = vb.buf ? tir_tensor_data(&vb) : NULL;
	L.out = single ? calloc(wbytes + 1, 1) : tir_tensor_data(out);
	L.info = calloc((size_t)L.nbatch + 1, sizeof *L.info);
	if (!L.info || !L.out) {
		rc = tir_errf(err, TIR_ENOMEM, &n->loc, "out of memory");
		goto done;
	}
	/* A batch of at least as many matrices as threads: one matrix a task,
	 * each on one OpenBLAS thread (the same bits at any --threads).  Fewer
	 * matrices, large ones: one after another on this thread, each with
	 * OpenBLAS's threads, as many as tir's (tir's pool idle); its level-2
	 * routines split their sums by thread, so the bits are then those of
	 * the thread count (the same from run to run at one --threads). */
	int threads = tir_pool_threads();
	bool spread = L.nbatch >= threads || L.amat < LA_THREADED_ELEMENTS;
	tir_blas_lock(spread ? 1 : threads);
	if (spread)
		tir_pool_run(L.nbatch, task, &L);
	else
		for (int64_t t = 0; t < L.nbatch && !tir_pool_stopping(); t++)
			task(&L, t);
	tir_blas_unlock();
	/* the first matrix that failed, in batch order (the same at any thread count) */
	for (int64_t t = 0; t < L.nbatch && !rc; t++) {
		int info = L.info[t];
		if (!info)
			continue;
		char where[64] = "";
		if (L.nbatch > 1)
			snprintf(where, sizeof where, " (matrix %lld of the batch)", (long long)t);
		if (info < 0)
			rc = tir_errf(err, TIR_ENOMEM, &n->loc, "%s: out of memory", d->name);
		else if (n->op == TIR_OP_SOLVE || n->op == TIR_OP_INV)
			rc = tir_errf(err, TIR_ERUNTIME, &n->loc, "%s: singular matrix%s: U[%d, %d] of its LU factors is 0",
				      d->name, where, info - 1, info - 1);
		else if (n->op == TIR_OP_CHOLESKY)
			rc = tir_errf(err, TIR_ERUNTIME, &n->loc,
				      "%s: matrix is not positive definite%s: the leading minor of order %d is not positive",
				      d->name, where, info);
		else
			rc = tir_errf(err, TIR_ERUNTIME, &n->loc, "%s: %s did not converge%s", d->name,
				      n->op == TIR_OP_EIGH ? "the eigenvalue algorithm" : "the SVD", where);
	}
	free(L.info);
	if (single) { /* rounded once into the results */
		char *o = tir_tensor_data(out);
		for (int i = 0; !rc && i < L.nres; i++) {
			const double *src = (const double *)(L.out + L.off[i]);
			float *dst = (float *)(o + (L.nres > 1 ? tir_result_offset(n, i) : 0));
			for (int64_t j = 0, all = L.rsize[i] * L.nbatch; j < all; j++)
				dst[j] = (float)src[j];
		}
	}
done:
	if (single)
		free(L.out);
	if (rc)
		tir_tensor_release(out);
	tir_tensor_release(&ca);
	tir_tensor_release(&va);
	tir_tensor_release(&cb);
	tir_tensor_release(&vb);
	return rc;
}

int tir_k_result(const struct tir_node *n, const struct tir_tensor *pack, struct tir_tensor *out,
		 struct tir_err *err)
{
	const struct tir_node *call = n->in[0];
	int i = tir_result_index(n);
	size_t es = tir_dtype_size((enum tir_dtype)n->type.dtype);
	size_t off = (size_t)pack->offset + tir_result_offset(call, i);
	TIR_ASSERT(pack->dtype == TIR_DTYPE_U8 && tir_tensor_is_contiguous(pack) && off % es == 0);
	(void)err;
	tir_tensor_ref(out, pack); /* a view: the pack's buffer, at the result's bytes */
	out->dtype = (enum tir_dtype)n->type.dtype;
	out->rank = n->type.rank;
	memcpy(out->shape, n->type.shape, sizeof(int64_t) * (size_t)n->type.rank);
	out->offset = (int64_t)(off / es);
	tir_tensor_set_contiguous_strides(out);
	return 0;
}
