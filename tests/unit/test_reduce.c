/*
 * test_reduce.c — the reduction kernel and the copying movement kernels
 * (concat, pad, gather, copy).  Reductions are checked against a plain
 * reference loop over every op, dtype, axis mask and layout (contiguous,
 * transposed, sliced with negative and >1 steps, broadcast), plus a few
 * cases pinned to NumPy's answers; movement kernels against coordinates
 * computed directly.
 */
#include "exec/exec.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Store v (converted) as element i of the contiguous tensor t. */
static void put(struct tir_tensor *t, int64_t i, double v)
{
	char *p = tir_tensor_data(t);
	switch (t->dtype) {
	case TIR_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case TIR_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
	case TIR_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)v; break;
	case TIR_DTYPE_F32: ((float *)p)[i] = (float)v; break;
	case TIR_DTYPE_F64: ((double *)p)[i] = v; break;
	default: break;
	}
}

/* A new contiguous tensor holding vals (or zeros when vals is NULL). */
static void mk(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape,
	       const double *vals)
{
	struct tir_err err = {0};
	if (tir_tensor_alloc(t, dt, rank, shape, true, &err)) {
		fprintf(stderr, "alloc: %s\n", err.msg);
		exit(2);
	}
	int64_t n = tir_tensor_numel(t);
	for (int64_t i = 0; vals && i < n; i++)
		put(t, i, vals[i]);
}

static void unravel(int64_t i, int rank, const int64_t *shape, int64_t *c)
{
	for (int d = rank - 1; d >= 0; d--) {
		c[d] = shape[d] ? i % shape[d] : 0;
		i = shape[d] ? i / shape[d] : 0;
	}
}

/* ---- the reference reduction: one pass in logical order ---- */

struct expect {
	int err;          /* 0, or -code expected */
	int64_t n;
	double *f;        /* float outputs (and mean/var of ints) */
	int64_t *i;       /* integer, bool and arg outputs */
};

static void ref_reduce(enum tir_op op, const struct tir_tensor *x, const bool *mask,
		       struct expect *e)
{
	int r = x->rank;
	int64_t on = 1, cnt = 1;
	for (int d = 0; d < r; d++) {
		if (mask[d])
			cnt *= x->shape[d];
		else
			on *= x->shape[d];
	}
	e->n = on;
	e->err = 0;
	e->f = calloc((size_t)on + 1, sizeof *e->f);
	e->i = calloc((size_t)on + 1, sizeof *e->i);
	if (on > 0 && cnt == 0) {
		bool bad = op == TIR_OP_MAX || op == TIR_OP_MIN || op == TIR_OP_ARGMAX ||
			   op == TIR_OP_ARGMIN;
		e->err = bad ? -TIR_ERUNTIME : 0;
		for (int64_t o = 0; o < on; o++) {
			e->f[o] = op == TIR_OP_PROD ? 1 : op == TIR_OP_SUM ? 0 : NAN;
			e->i[o] = op == TIR_OP_PROD;
			if (op == TIR_OP_MEAN || op == TIR_OP_VAR)
				e->i[o] = x->dtype == TIR_DTYPE_I32 ? INT32_MIN : INT64_MIN;
		}
		return;
	}
	long double *ls = calloc((size_t)on + 1, sizeof *ls);
	long double *lp = calloc((size_t)on + 1, sizeof *lp);
	long double *m2 = calloc((size_t)on + 1, sizeof *m2);
	uint64_t *ws = calloc((size_t)on + 1, sizeof *ws);
	uint64_t *wp = calloc((size_t)on + 1, sizeof *wp);
	double *bf = calloc((size_t)on + 1, sizeof *bf);
	int64_t *bi = calloc((size_t)on + 1, sizeof *bi);
	int64_t *at = calloc((size_t)on + 1, sizeof *at);
	for (int64_t o = 0; o < on; o++) {
		lp[o] = 1;
		wp[o] = 1;
		at[o] = -1;
	}
	bool mx = op == TIR_OP_MAX || op == TIR_OP_ARGMAX;
	int64_t n = tir_tensor_numel(x), c[TIR_MAX_RANK];
	for (int pass = 0; pass < 2; pass++) {
		for (int64_t k = 0; k < n; k++) {
			unravel(k, r, x->shape, c);
			int64_t o = 0, ri = 0;
			for (int d = 0; d < r; d++) {
				if (mask[d])
					ri = ri * x->shape[d] + c[d];
				else
					o = o * x->shape[d] + c[d];
			}
			double v = tir_tensor_get_f64(x, k);
			if (pass == 1) {
				long double dv = v - ls[o] / cnt;
				m2[o] += dv * dv;
				continue;
			}
			int64_t vi = tir_dtype_is_wide_float(x->dtype) ? 0 : tir_tensor_get_i64(x, k);
			ls[o] += v;
			lp[o] *= v;
			ws[o] += (uint64_t)vi;
			wp[o] *= (uint64_t)vi;
			bool take;
			if (at[o] < 0)
				take = true;
			else if (tir_dtype_is_wide_float(x->dtype))
				take = !isnan(bf[o]) && (isnan(v) || (mx ? v > bf[o] : v < bf[o]));
			else
				take = mx ? vi > bi[o] : vi < bi[o];
			if (take) {
				bf[o] = v;
				bi[o] = vi;
				at[o] = ri;
			}
		}
	}
	bool i32 = x->dtype == TIR_DTYPE_I32;
	for (int64_t o = 0; o < on; o++) {
		switch (op) {
		case TIR_OP_SUM:
			e->f[o] = (double)ls[o];
			e->i[o] = i32 ? (int32_t)(uint32_t)ws[o] : (int64_t)ws[o];
			break;
		case TIR_OP_PROD:
			e->f[o] = (double)lp[o];
			e->i[o] = i32 ? (int32_t)(uint32_t)wp[o] : (int64_t)wp[o];
			break;
		case TIR_OP_MEAN:
			e->f[o] = (double)(ls[o] / cnt);
			e->i[o] = (int64_t)e->f[o];
			break;
		case TIR_OP_VAR:
			e->f[o] = (double)(m2[o] / cnt);
			e->i[o] = (int64_t)e->f[o];
			break;
		case TIR_OP_MAX:
		case TIR_OP_MIN:
			e->f[o] = bf[o];
			e->i[o] = bi[o];
			break;
		default:
			e->i[o] = at[o];
		}
	}
	free(ls);
	free(lp);
	free(m2);
	free(ws);
	free(wp);
	free(bf);
	free(bi);
	free(at);
}

static const char *opname(enum tir_op op)
{
	switch (op) {
	case TIR_OP_SUM: return "sum";
	case TIR_OP_MEAN: return "mean";
	case TIR_OP_MAX: return "max";
	case TIR_OP_MIN: return "min";
	case TIR_OP_PROD: return "prod";
	case TIR_OP_VAR: return "var";
	case TIR_OP_ARGMAX: return "argmax";
	default: return "argmin";
	}
}

/* Run the kernel and compare with the reference; one CHECK per call. */
static void check_reduce(enum tir_op op, const struct tir_tensor *x, const bool *mask,
			 const char *what)
{
	bool arg = op == TIR_OP_ARGMAX || op == TIR_OP_ARGMIN;
	int64_t oshape[TIR_MAX_RANK];
	int orank = 0;
	for (int d = 0; d < x->rank; d++)
		if (!mask[d])
			oshape[orank++] = x->shape[d];
	struct tir_tensor out;
	mk(&out, arg ? TIR_DTYPE_I64 : x->dtype, orank, oshape, NULL);
	struct expect e;
	ref_reduce(op, x, mask, &e);
	struct tir_err err = {0};
	int rc = tir_k_reduce(op, x, mask, &out, &err);
	bool ok = rc == e.err;
	if (ok && rc)
		ok = strstr(err.msg, "reduction over an empty axis") != NULL;
	double tol = x->dtype == TIR_DTYPE_F32 ? 2e-6 : 1e-12;
	bool loose = !arg && !tir_dtype_is_wide_float(x->dtype) &&
		     (op == TIR_OP_MEAN || op == TIR_OP_VAR);
	for (int64_t o = 0; ok && rc == 0 && o < e.n; o++) {
		if (!arg && tir_dtype_is_wide_float(x->dtype)) {
			double g = tir_tensor_get_f64(&out, o), w = e.f[o];
			if (x->dtype == TIR_DTYPE_F32)
				w = (float)w;
			ok = (isnan(g) && isnan(w)) || g == w || fabs(g - w) <= tol * (1 + fabs(w));
			if (!ok)
				fprintf(stderr, "  [%lld] got %.17g want %.17g\n", (long long)o, g, w);
		} else {
			int64_t g = tir_tensor_get_i64(&out, o), w = e.i[o];
			ok = g == w || (loose && llabs(g - w) <= 1);
			if (!ok)
				fprintf(stderr, "  [%lld] got %lld want %lld\n", (long long)o,
					(long long)g, (long long)w);
		}
	}
	if (!ok) {
		fprintf(stderr, "reduce %s %s %s rank %d mask", opname(op),
			tir_dtype_name(x->dtype), what, x->rank);
		for (int d = 0; d < x->rank; d++)
			fprintf(stderr, " %d", mask[d]);
		fprintf(stderr, ": rc %d (want %d) %s\n", rc, e.err, err.msg);
	}
	CHECK(ok);
	free(e.f);
	free(e.i);
	tir_tensor_release(&out);
}

/* Fill every element of t's buffer with random values of its dtype:
 * small integers (many ties), quarters for floats, NaN at rate nan_pct. */
static void randomize(struct tir_tensor *t, int nan_pct, int range)
{
	int64_t n = tir_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		double v = (double)((int64_t)(rnd() % (uint64_t)(2 * range + 1)) - range);
		if (tir_dtype_is_wide_float(t->dtype)) {
			v += (double)(rnd() % 4) / 4;
			if (nan_pct && (int)(rnd() % 100) < nan_pct)
				v = NAN;
		}
		if (t->dtype == TIR_DTYPE_BOOL)
			v = rnd() % 2;
		put(t, i, v);
	}
}

enum layout { L_CONTIG, L_TRANSPOSED, L_SLICED, L_BROADCAST, L_COUNT };
static const char *const layout_names[] = {"contiguous", "transposed", "sliced", "broadcast"};

/* A view of logical shape[rank] laid out as lay, over a new random buffer. */
static bool make_view(struct tir_tensor *v, enum tir_dtype dt, int rank, const int64_t *shape,
		      enum layout lay, int nan_pct, int range)
{
	struct tir_tensor base;
	int64_t bs[TIR_MAX_RANK];
	int perm[TIR_MAX_RANK];
	switch (lay) {
	case L_CONTIG:
		mk(v, dt, rank, shape, NULL);
		randomize(v, nan_pct, range);
		return true;
	case L_TRANSPOSED:   /* base has the reversed shape */
		for (int d = 0; d < rank; d++) {
			bs[d] = shape[rank - 1 - d];
			perm[d] = rank - 1 - d;
		}
		mk(&base, dt, rank, bs, NULL);
		randomize(&base, nan_pct, range);
		tir_view_transpose(&base, perm, v);
		break;
	case L_SLICED:       /* every other element of the last axis, axis 0 reversed */
		if (rank == 0)
			return false;
		memcpy(bs, shape, sizeof bs[0] * (size_t)rank);
		bs[rank - 1] = 2 * shape[rank - 1] + 1;
		mk(&base, dt, rank, bs, NULL);
		randomize(&base, nan_pct, range);
		struct tir_tensor t1;
		tir_view_slice(&base, rank - 1, 1, 2, shape[rank - 1], &t1);
		if (shape[0] > 0)
			tir_view_slice(&t1, 0, shape[0] - 1, -1, shape[0], v);
		else
			tir_tensor_ref(v, &t1);
		tir_tensor_release(&t1);
		break;
	case L_BROADCAST:    /* axis 0 broadcast from 1 */
		if (rank == 0 || shape[0] < 2)
			return false;
		memcpy(bs, shape, sizeof bs[0] * (size_t)rank);
		bs[0] = 1;
		mk(&base, dt, rank, bs, NULL);
		randomize(&base, nan_pct, range);
		tir_view_broadcast(&base, rank, shape, v);
		break;
	default:
		return false;
	}
	tir_tensor_release(&base);
	return true;
}

static bool op_supports(enum tir_op op, enum tir_dtype dt)
{
	if (dt != TIR_DTYPE_BOOL)
		return true;
	return op == TIR_OP_MAX || op == TIR_OP_MIN || op == TIR_OP_ARGMAX ||
	       op == TIR_OP_ARGMIN;
}

static const enum tir_op all_ops[] = {
	TIR_OP_SUM, TIR_OP_MEAN, TIR_OP_MAX, TIR_OP_MIN,
	TIR_OP_PROD, TIR_OP_VAR, TIR_OP_ARGMAX, TIR_OP_ARGMIN,
};

/* Every op x dtype x layout x mask over a list of shapes. */
static void test_reduce_matrix(void)
{
	static const struct { int rank; int64_t shape[4]; } shapes[] = {
		{0, {0}}, {1, {1}}, {1, {7}}, {1, {300}}, {2, {3, 4}}, {2, {1, 5}},
		{2, {37, 129}}, {2, {200, 3}}, {3, {2, 3, 4}}, {3, {4, 1, 3}},
		{4, {2, 3, 2, 5}}, {2, {0, 3}}, {2, {3, 0}}, {3, {2, 0, 2}},
	};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int rank = shapes[s].rank;
		const int64_t *shape = shapes[s].shape;
		int64_t numel = 1;
		for (int d = 0; d < rank; d++)
			numel *= shape[d];
		for (int dt = 0; dt <= TIR_DTYPE_F64; dt++) { /* the kernels' dtypes (the storage types compute wide) */
			for (int lay = 0; lay < L_COUNT; lay++) {
				for (int nanp = 0; nanp <= (tir_dtype_is_wide_float(dt) ? 15 : 0); nanp += 15) {
					struct tir_tensor x;
					if (!make_view(&x, dt, rank, shape, lay, nanp, 4))
						continue;
					for (unsigned m = 0; m < (1u << rank); m++) {
						bool mask[TIR_MAX_RANK] = {0};
						int nax = 0;
						for (int d = 0; d < rank; d++)
							nax += mask[d] = m >> d & 1;
						for (size_t k = 0; k < sizeof all_ops / sizeof all_ops[0]; k++) {
							enum tir_op op = all_ops[k];
							bool arg = op == TIR_OP_ARGMAX || op == TIR_OP_ARGMIN;
							if (!op_supports(op, dt))
								continue;
							/* argmax/argmin: one axis, or all */
							if (arg && nax != 1 && nax != rank)
								continue;
							/* products of many values leave double's range */
							if (op == TIR_OP_PROD && tir_dtype_is_wide_float(dt) && numel > 64)
								continue;
							check_reduce(op, &x, mask, layout_names[lay]);
						}
					}
					tir_tensor_release(&x);
				}
			}
		}
	}
}

/* ---- reductions pinned to NumPy ---- */

static void get_all_f64(const struct tir_tensor *t, double *v)
{
	for (int64_t i = 0; i < tir_tensor_numel(t); i++)
		v[i] = tir_tensor_get_f64(t, i);
}

static int run1(enum tir_op op, const struct tir_tensor *x, const bool *mask,
		struct tir_tensor *out, enum tir_dtype odt, struct tir_err *err)
{
	int64_t os[TIR_MAX_RANK];
	int orank = 0;
	for (int d = 0; d < x->rank; d++)
		if (!mask[d])
			os[orank++] = x->shape[d];
	mk(out, odt, orank, os, NULL);
	return tir_k_reduce(op, x, mask, out, err);
}

static void test_reduce_numpy(void)
{
	struct tir_err err = {0};
	struct tir_tensor x, out;
	double v[16];

	/* x = [[1, nan, 3, nan], [2, 5, 5, -1], [nan, 0, 0, 7]]; expected from
	 * np.max/min/argmax/argmin (axis=1, axis=0, none). */
	const double xv[] = {1, NAN, 3, NAN, 2, 5, 5, -1, NAN, 0, 0, 7};
	const int64_t xs[] = {3, 4};
	const bool ax0[] = {true, false}, ax1[] = {false, true}, all[] = {true, true};
	for (int dt = TIR_DTYPE_F32; dt <= TIR_DTYPE_F64; dt++) {
		mk(&x, dt, 2, xs, xv);
		CHECK(run1(TIR_OP_MAX, &x, ax1, &out, dt, &err) == 0);
		get_all_f64(&out, v);
		CHECK(isnan(v[0]) && v[1] == 5 && isnan(v[2]));
		tir_tensor_release(&out);
		CHECK(run1(TIR_OP_MIN, &x, ax0, &out, dt, &err) == 0);
		get_all_f64(&out, v);
		CHECK(isnan(v[0]) && isnan(v[1]) && v[2] == 0 && isnan(v[3]));
		tir_tensor_release(&out);
		const struct { enum tir_op op; const bool *m; int n; int64_t want[4]; } ac[] = {
			{TIR_OP_ARGMAX, ax1, 3, {1, 1, 0, 0}},
			{TIR_OP_ARGMIN, ax1, 3, {1, 3, 0, 0}},
			{TIR_OP_ARGMAX, ax0, 4, {2, 0, 1, 0}},
			{TIR_OP_ARGMIN, ax0, 4, {2, 0, 2, 0}},
			{TIR_OP_ARGMAX, all, 1, {1, 0, 0, 0}},
			{TIR_OP_ARGMIN, all, 1, {1, 0, 0, 0}},
		};
		for (size_t k = 0; k < sizeof ac / sizeof ac[0]; k++) {
			CHECK(run1(ac[k].op, &x, ac[k].m, &out, TIR_DTYPE_I64, &err) == 0);
			for (int i = 0; i < ac[k].n; i++)
				CHECK(tir_tensor_get_i64(&out, i) == ac[k].want[i]);
			tir_tensor_release(&out);
		}
		tir_tensor_release(&x);
	}

	/* ties: the first index wins (np.argmax([3, 1, 3, 0, 1]) == 0 ...) */
	const double tv[] = {3, 1, 3, 0, 1, 0};
	const int64_t ts[] = {6};
	const bool t1[] = {true};
	for (int dt = 0; dt <= TIR_DTYPE_F64; dt++) { /* the kernels' dtypes (the storage types compute wide) */
		mk(&x, dt, 1, ts, tv);
		CHECK(run1(TIR_OP_ARGMAX, &x, t1, &out, TIR_DTYPE_I64, &err) == 0);
		CHECK(tir_tensor_get_i64(&out, 0) == 0);
		tir_tensor_release(&out);
		CHECK(run1(TIR_OP_ARGMIN, &x, t1, &out, TIR_DTYPE_I64, &err) == 0);
		CHECK(tir_tensor_get_i64(&out, 0) == 3);
		tir_tensor_release(&out);
		tir_tensor_release(&x);
	}

	/* var accuracy: f32 values near 1e4 (a one-pass E[x^2] - E[x]^2 loses
	 * everything here); np.var(v.astype(np.float64)) = 0.0825391412 */
	const double vv[] = {10000.0, 10000.099609375, 10000.2001953125, 10000.2998046875,
			     10000.400390625, 10000.5, 10000.599609375, 10000.7001953125,
			     10000.7998046875, 10000.900390625};
	const int64_t vs[] = {10};
	mk(&x, TIR_DTYPE_F32, 1, vs, vv);
	CHECK(run1(TIR_OP_VAR, &x, t1, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(tir_tensor_get_f64(&out, 0) == (double)0.0825391412f);
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	/* f64 var of 1e8 + arange(n) is (n^2 - 1) / 12 exactly */
	double *big = malloc(1001 * sizeof *big);
	for (int i = 0; i < 1001; i++)
		big[i] = 1e8 + i;
	const int64_t bs[] = {1001};
	mk(&x, TIR_DTYPE_F64, 1, bs, big);
	CHECK(run1(TIR_OP_VAR, &x, t1, &out, TIR_DTYPE_F64, &err) == 0);
	CHECK_NEAR(tir_tensor_get_f64(&out, 0), (1001.0 * 1001.0 - 1) / 12, 1e-12);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
	free(big);

	/* y = arange(24).reshape(2, 3, 4) ** 1.5, axes [0, 2] and axis 1
	 * (np.var/np.mean/np.sum printed with %.17g) */
	double yv[24];
	for (int i = 0; i < 24; i++)
		yv[i] = pow(i, 1.5);
	const int64_t ys[] = {2, 3, 4};
	const bool m02[] = {true, false, true}, m1[] = {false, true, false};
	mk(&x, TIR_DTYPE_F64, 3, ys, yv);
	const double var02[] = {584.36447659080739, 938.9288966028239, 1281.1740139117701};
	const double mean02[] = {25.992989889760523, 43.209618181571287, 64.612893342491859};
	const double sum02[] = {207.94391911808418, 345.67694545257029, 516.90314673993487};
	const double var1[] = {87.77348089249864, 114.43344070000653, 139.60667999410342,
			       164.33846338688417, 382.48264995902701, 406.57381189545328,
			       430.65454514496923, 454.72655632758534};
	CHECK(run1(TIR_OP_VAR, &x, m02, &out, TIR_DTYPE_F64, &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(tir_tensor_get_f64(&out, i), var02[i], 1e-13);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_MEAN, &x, m02, &out, TIR_DTYPE_F64, &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(tir_tensor_get_f64(&out, i), mean02[i], 1e-14);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_SUM, &x, m02, &out, TIR_DTYPE_F64, &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(tir_tensor_get_f64(&out, i), sum02[i], 1e-14);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_VAR, &x, m1, &out, TIR_DTYPE_F64, &err) == 0);
	CHECK(out.rank == 2 && out.shape[0] == 2 && out.shape[1] == 4);
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(tir_tensor_get_f64(&out, i), var1[i], 1e-13);
	tir_tensor_release(&out);
	/* keepdims is the caller's: an out of shape [1, 3, 1] is the same memory */
	int64_t kd[] = {1, 3, 1};
	mk(&out, TIR_DTYPE_F64, 3, kd, NULL);
	CHECK(tir_k_reduce(TIR_OP_SUM, &x, m02, &out, &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(tir_tensor_get_f64(&out, i), sum02[i], 1e-14);
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	/* integer sums wrap as np.sum(a, dtype=a.dtype) */
	const int64_t two[] = {2};
	mk(&x, TIR_DTYPE_I32, 1, two, (const double[]){2147483647, 1});
	CHECK(run1(TIR_OP_SUM, &x, t1, &out, TIR_DTYPE_I32, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == INT32_MIN);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
	mk(&x, TIR_DTYPE_I64, 1, two, NULL);
	((int64_t *)tir_tensor_data(&x))[0] = INT64_MAX;
	((int64_t *)tir_tensor_data(&x))[1] = 2;
	CHECK(run1(TIR_OP_SUM, &x, t1, &out, TIR_DTYPE_I64, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == INT64_MIN + 1);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_MAX, &x, t1, &out, TIR_DTYPE_I64, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == INT64_MAX);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
	const int64_t three[] = {3};
	mk(&x, TIR_DTYPE_I32, 1, three, (const double[]){65536, 65536, 3});
	CHECK(run1(TIR_OP_PROD, &x, t1, &out, TIR_DTYPE_I32, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == 0);
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	/* f32 sums accumulate in double: a million 0.1f is 100000 in f32,
	 * where an f32 accumulator drifts to about 100958 */
	const int64_t mil[] = {1000000};
	mk(&x, TIR_DTYPE_F32, 1, mil, NULL);
	for (int i = 0; i < 1000000; i++)
		((float *)tir_tensor_data(&x))[i] = 0.1f;
	CHECK(run1(TIR_OP_SUM, &x, t1, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(tir_tensor_get_f64(&out, 0) == (double)(float)(1e6 * (double)0.1f));
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_MEAN, &x, t1, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(tir_tensor_get_f64(&out, 0) == (double)0.1f);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
}

static void test_reduce_errors(void)
{
	struct tir_err err = {0};
	struct tir_tensor x, out;
	const int64_t s30[] = {3, 0}, s03[] = {0, 3};
	const bool ax0[] = {true, false}, ax1[] = {false, true}, all[] = {true, true};

	mk(&x, TIR_DTYPE_F32, 2, s30, NULL);
	CHECK(run1(TIR_OP_MAX, &x, ax1, &out, TIR_DTYPE_F32, &err) == -TIR_ERUNTIME);
	CHECK(err.code == TIR_ERUNTIME);
	CHECK(strcmp(err.msg, "max: reduction over an empty axis") == 0);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_ARGMIN, &x, ax1, &out, TIR_DTYPE_I64, &err) == -TIR_ERUNTIME);
	CHECK(strcmp(err.msg, "argmin: reduction over an empty axis") == 0);
	tir_tensor_release(&out);
	/* an empty result is fine: np.max(np.zeros((3, 0)), axis=0) -> [] */
	CHECK(run1(TIR_OP_MAX, &x, ax0, &out, TIR_DTYPE_F32, &err) == 0);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_SUM, &x, ax1, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(tir_tensor_get_f64(&out, 2) == 0);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_PROD, &x, all, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(tir_tensor_get_f64(&out, 0) == 1);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_MEAN, &x, ax1, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(isnan(tir_tensor_get_f64(&out, 0)));
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_VAR, &x, all, &out, TIR_DTYPE_F32, &err) == 0);
	CHECK(isnan(tir_tensor_get_f64(&out, 0)));
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	mk(&x, TIR_DTYPE_I64, 2, s03, NULL);
	CHECK(run1(TIR_OP_MIN, &x, all, &out, TIR_DTYPE_I64, &err) == -TIR_ERUNTIME);
	CHECK(strcmp(err.msg, "min: reduction over an empty axis") == 0);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_ARGMAX, &x, ax0, &out, TIR_DTYPE_I64, &err) == -TIR_ERUNTIME);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_SUM, &x, ax0, &out, TIR_DTYPE_I64, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 1) == 0);
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	/* bool only for max/min/argmax/argmin; out must have the right type */
	const int64_t s2[] = {2};
	const bool one[] = {true};
	mk(&x, TIR_DTYPE_BOOL, 1, s2, (const double[]){1, 0});
	CHECK(run1(TIR_OP_SUM, &x, one, &out, TIR_DTYPE_BOOL, &err) == -TIR_EUNSUPPORTED);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_MAX, &x, one, &out, TIR_DTYPE_BOOL, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == 1);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_MIN, &x, one, &out, TIR_DTYPE_BOOL, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == 0);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_ARGMAX, &x, one, &out, TIR_DTYPE_I32, &err) == -TIR_ETYPE);
	tir_tensor_release(&out);
	mk(&out, TIR_DTYPE_BOOL, 1, s2, NULL);
	CHECK(tir_k_reduce(TIR_OP_MAX, &x, one, &out, &err) == -TIR_ETYPE);
	tir_tensor_release(&out);
	tir_tensor_release(&x);

	/* a rank-0 input: the reduction of nothing is the element itself */
	mk(&x, TIR_DTYPE_F64, 0, NULL, (const double[]){2.5});
	CHECK(run1(TIR_OP_VAR, &x, NULL, &out, TIR_DTYPE_F64, &err) == 0);
	CHECK(tir_tensor_get_f64(&out, 0) == 0);
	tir_tensor_release(&out);
	CHECK(run1(TIR_OP_ARGMAX, &x, NULL, &out, TIR_DTYPE_I64, &err) == 0);
	CHECK(tir_tensor_get_i64(&out, 0) == 0);
	tir_tensor_release(&out);
	tir_tensor_release(&x);
}

/* ---- movement ---- */

/* Is out (contiguous) equal, element by element, to want(coordinates)? */
static bool all_equal(const struct tir_tensor *out, const double *want)
{
	for (int64_t i = 0; i < tir_tensor_numel(out); i++) {
		double g = tir_tensor_get_f64(out, i);
		if (g != want[i]) {
			fprintf(stderr, "  [%lld] got %g want %g\n", (long long)i, g, want[i]);
			return false;
		}
	}
	return true;
}

static void test_copy(void)
{
	for (int dt = 0; dt <= TIR_DTYPE_F64; dt++) { /* the kernels' dtypes (the storage types compute wide) */
		static const struct { int rank; int64_t shape[4]; } shapes[] = {
			{0, {0}}, {1, {9}}, {2, {3, 4}}, {3, {2, 3, 5}}, {4, {2, 1, 3, 4}},
			{2, {0, 4}}, {2, {130, 3}},
		};
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
			for (int lay = 0; lay < L_COUNT; lay++) {
				struct tir_tensor x, out;
				int rank = shapes[s].rank;
				if (!make_view(&x, dt, rank, shapes[s].shape, lay, 0, 100))
					continue;
				int64_t n = tir_tensor_numel(&x);
				mk(&out, dt, rank, shapes[s].shape, NULL);
				CHECK(tir_k_copy(&x, &out) == 0);
				double *want = malloc((size_t)(n + 1) * sizeof *want);
				for (int64_t i = 0; i < n; i++)
					want[i] = tir_tensor_get_f64(&x, i);
				CHECK(all_equal(&out, want));
				free(want);
				tir_tensor_release(&out);
				tir_tensor_release(&x);
			}
		}
	}
	/* numpy: np.arange(12).reshape(3, 4).T.ravel() */
	struct tir_tensor b, t, out;
	double v[12];
	for (int i = 0; i < 12; i++)
		v[i] = i;
	mk(&b, TIR_DTYPE_I32, 2, (const int64_t[]){3, 4}, v);
	tir_view_transpose(&b, (const int[]){1, 0}, &t);
	mk(&out, TIR_DTYPE_I32, 2, (const int64_t[]){4, 3}, NULL);
	CHECK(tir_k_copy(&t, &out) == 0);
	CHECK(all_equal(&out, (const double[]){0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
	tir_tensor_release(&out);
	mk(&out, TIR_DTYPE_F32, 2, (const int64_t[]){4, 3}, NULL);
	CHECK(tir_k_copy(&t, &out) == -TIR_ETYPE);
	tir_tensor_release(&out);
	tir_tensor_release(&t);
	tir_tensor_release(&b);
}

static void test_concat(void)
{
	struct tir_err err = {0};
	for (int dt = 0; dt <= TIR_DTYPE_F64; dt++) { /* the kernels' dtypes (the storage types compute wide) */
		for (int axis = 0; axis < 3; axis++) {
			/* three inputs of [2, 3, 4] with sizes 2, 0, 3 along axis;
			 * the first contiguous, the second empty, the third transposed */
			int64_t base[3] = {2, 3, 4}, sz[3] = {2, 0, 3};
			struct tir_tensor xs[3], out;
			const struct tir_tensor *px[3];
			int64_t total = 0;
			for (int k = 0; k < 3; k++) {
				int64_t sh[3] = {base[0], base[1], base[2]};
				sh[axis] = sz[k];
				make_view(&xs[k], dt, 3, sh, k == 2 ? L_TRANSPOSED : L_CONTIG, 0, 50);
				px[k] = &xs[k];
				total += sz[k];
			}
			int64_t os[3] = {base[0], base[1], base[2]};
			os[axis] = total;
			mk(&out, dt, 3, os, NULL);
			CHECK(tir_k_concat(px, 3, axis, &out, &err) == 0);
			int64_t n = tir_tensor_numel(&out), c[3];
			double *want = malloc((size_t)n * sizeof *want);
			for (int64_t i = 0; i < n; i++) {
				unravel(i, 3, os, c);
				int k = 0;
				while (c[axis] >= sz[k]) {
					c[axis] -= sz[k];
					k++;
				}
				int64_t sh[3] = {base[0], base[1], base[2]};
				sh[axis] = sz[k];
				want[i] = tir_tensor_get_f64(&xs[k], (c[0] * sh[1] + c[1]) * sh[2] + c[2]);
			}
			CHECK(all_equal(&out, want));
			free(want);
			tir_tensor_release(&out);
			for (int k = 0; k < 3; k++)
				tir_tensor_release(&xs[k]);
		}
	}
	/* numpy: np.concatenate([[[1, 2]], [[3, 4], [5, 6]]]) */
	struct tir_tensor a, b, out;
	mk(&a, TIR_DTYPE_F64, 2, (const int64_t[]){1, 2}, (const double[]){1, 2});
	mk(&b, TIR_DTYPE_F64, 2, (const int64_t[]){2, 2}, (const double[]){3, 4, 5, 6});
	const struct tir_tensor *ab[] = {&a, &b};
	mk(&out, TIR_DTYPE_F64, 2, (const int64_t[]){3, 2}, NULL);
	CHECK(tir_k_concat(ab, 2, 0, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){1, 2, 3, 4, 5, 6}));
	CHECK(tir_k_concat(ab, 2, 1, &out, &err) == -TIR_ETYPE);
	tir_tensor_release(&out);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
}

static void test_pad(void)
{
	struct tir_err err = {0};
	/* x = transpose of arange(6).reshape(2, 3) (so [3, 2]), padded
	 * [[1, 2], [0, 3]]: np.pad(x, ((1, 2), (0, 3)), constant_values=v) */
	double v6[6] = {0, 1, 2, 3, 4, 5};
	const double vals[] = {7.9, -7.9, 0, 1};
	for (int dt = 0; dt <= TIR_DTYPE_F64; dt++) { /* the kernels' dtypes (the storage types compute wide) */
		for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
			struct tir_tensor b, x, out;
			mk(&b, dt, 2, (const int64_t[]){2, 3}, v6);
			tir_view_transpose(&b, (const int[]){1, 0}, &x);
			const int64_t pads[] = {1, 2, 0, 3};
			mk(&out, dt, 2, (const int64_t[]){6, 5}, NULL);
			CHECK(tir_k_pad(&x, pads, vals[k], &out, &err) == 0);
			double fv = vals[k];
			if (dt == TIR_DTYPE_BOOL)
				fv = fv != 0;
			else if (!tir_dtype_is_wide_float(dt))
				fv = trunc(fv);
			else if (dt == TIR_DTYPE_F32)
				fv = (float)fv;
			double want[30];
			for (int i = 0; i < 6; i++)
				for (int j = 0; j < 5; j++) {
					bool in = i >= 1 && i < 4 && j < 2;
					want[i * 5 + j] = in ? tir_tensor_get_f64(&x, (i - 1) * 2 + j) : fv;
				}
			CHECK(all_equal(&out, want));
			tir_tensor_release(&out);
			tir_tensor_release(&x);
			tir_tensor_release(&b);
		}
	}
	/* numpy: np.pad([1, 2], (2, 1), constant_values=9) */
	struct tir_tensor x, out;
	mk(&x, TIR_DTYPE_I64, 1, (const int64_t[]){2}, (const double[]){1, 2});
	mk(&out, TIR_DTYPE_I64, 1, (const int64_t[]){5}, NULL);
	CHECK(tir_k_pad(&x, (const int64_t[]){2, 1}, 9, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){9, 9, 1, 2, 9}));
	CHECK(tir_k_pad(&x, (const int64_t[]){-1, 4}, 9, &out, &err) == -TIR_ETYPE);
	CHECK(tir_k_pad(&x, (const int64_t[]){INT64_MAX, INT64_MAX}, 9, &out, &err) == -TIR_ETYPE);
	tir_tensor_release(&out);
	/* an empty x padded: all fill */
	tir_tensor_release(&x);
	mk(&x, TIR_DTYPE_F32, 2, (const int64_t[]){0, 2}, NULL);
	mk(&out, TIR_DTYPE_F32, 2, (const int64_t[]){2, 2}, NULL);
	CHECK(tir_k_pad(&x, (const int64_t[]){1, 1, 0, 0}, 0.5, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){0.5, 0.5, 0.5, 0.5}));
	tir_tensor_release(&out);
	tir_tensor_release(&x);
}

static void test_gather(void)
{
	struct tir_err err = {0};
	struct tir_tensor x, ind, out;
	double v[24];
	for (int i = 0; i < 24; i++)
		v[i] = i;

	/* numpy: np.take(np.arange(15).reshape(5, 3), [-1, 0, 4, -5], axis=0) */
	mk(&x, TIR_DTYPE_F32, 2, (const int64_t[]){5, 3}, v);
	mk(&ind, TIR_DTYPE_I64, 1, (const int64_t[]){4}, (const double[]){-1, 0, 4, -5});
	mk(&out, TIR_DTYPE_F32, 2, (const int64_t[]){4, 3}, NULL);
	CHECK(tir_k_gather(&x, &ind, 0, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){12, 13, 14, 0, 1, 2, 12, 13, 14, 0, 1, 2}));
	tir_tensor_release(&out);
	tir_tensor_release(&ind);
	/* out of range, both ways */
	mk(&ind, TIR_DTYPE_I32, 1, (const int64_t[]){3}, (const double[]){0, 7, 1});
	mk(&out, TIR_DTYPE_F32, 2, (const int64_t[]){3, 3}, NULL);
	CHECK(tir_k_gather(&x, &ind, 0, &out, &err) == -TIR_ERUNTIME);
	CHECK(strcmp(err.msg, "gather: index 7 is out of range for axis 0 of size 5") == 0);
	put(&ind, 1, -6);
	CHECK(tir_k_gather(&x, &ind, 0, &out, &err) == -TIR_ERUNTIME);
	CHECK(strcmp(err.msg, "gather: index -6 is out of range for axis 0 of size 5") == 0);
	tir_tensor_release(&out);
	tir_tensor_release(&ind);
	/* along axis 1 with 0-d indices: np.take(a, 2, axis=1) */
	mk(&ind, TIR_DTYPE_I64, 0, NULL, (const double[]){-1});
	mk(&out, TIR_DTYPE_F32, 1, (const int64_t[]){5}, NULL);
	CHECK(tir_k_gather(&x, &ind, 1, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){2, 5, 8, 11, 14}));
	tir_tensor_release(&out);
	tir_tensor_release(&ind);
	tir_tensor_release(&x);

	/* 2-D indices on a transposed view: z = arange(24).reshape(2, 3, 4)
	 * .transpose(2, 0, 1); np.take(z, [[0, 2], [1, -1]], axis=2) */
	struct tir_tensor b;
	mk(&b, TIR_DTYPE_I64, 3, (const int64_t[]){2, 3, 4}, v);
	tir_view_transpose(&b, (const int[]){2, 0, 1}, &x);
	mk(&ind, TIR_DTYPE_I32, 2, (const int64_t[]){2, 2}, (const double[]){0, 2, 1, -1});
	mk(&out, TIR_DTYPE_I64, 4, (const int64_t[]){4, 2, 2, 2}, NULL);
	CHECK(tir_k_gather(&x, &ind, 2, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){
		0, 8, 4, 8, 12, 20, 16, 20, 1, 9, 5, 9, 13, 21, 17, 21,
		2, 10, 6, 10, 14, 22, 18, 22, 3, 11, 7, 11, 15, 23, 19, 23}));
	tir_tensor_release(&out);
	/* and along axis 0 of the same view, where the block is strided:
	 * np.take(z, [[3], [0]], axis=0) */
	tir_tensor_release(&ind);
	mk(&ind, TIR_DTYPE_I64, 2, (const int64_t[]){2, 1}, (const double[]){3, 0});
	mk(&out, TIR_DTYPE_I64, 4, (const int64_t[]){2, 1, 2, 3}, NULL);
	CHECK(tir_k_gather(&x, &ind, 0, &out, &err) == 0);
	CHECK(all_equal(&out, (const double[]){3, 7, 11, 15, 19, 23, 0, 4, 8, 12, 16, 20}));
	tir_tensor_release(&out);
	tir_tensor_release(&ind);
	/* empty indices give an empty result */
	mk(&ind, TIR_DTYPE_I64, 1, (const int64_t[]){0}, NULL);
	mk(&out, TIR_DTYPE_I64, 3, (const int64_t[]){0, 2, 3}, NULL);
	CHECK(tir_k_gather(&x, &ind, 0, &out, &err) == 0);
	tir_tensor_release(&out);
	/* float indices are refused */
	tir_tensor_release(&ind);
	mk(&ind, TIR_DTYPE_F32, 1, (const int64_t[]){1}, NULL);
	mk(&out, TIR_DTYPE_I64, 3, (const int64_t[]){1, 2, 3}, NULL);
	CHECK(tir_k_gather(&x, &ind, 0, &out, &err) == -TIR_ETYPE);
	tir_tensor_release(&out);
	tir_tensor_release(&ind);
	tir_tensor_release(&x);
	tir_tensor_release(&b);
}

/* ---- tir_reduce_run: one output made piece by piece (fused reductions) ---- */

struct pieces {
	const char *base;
	size_t esz;
	int64_t chunk;
	bool ok;    /* every piece asked for is in order and within the chunk */
	int64_t next;
};

static const void *piece(void *ctx, int64_t lo, int64_t n)
{
	struct pieces *p = ctx;
	if (n > p->chunk || n < 1 || (lo != p->next && lo != 0))
		p->ok = false;
	p->next = lo + n;
	return p->base + (size_t)lo * p->esz;
}

static void test_reduce_run(void)
{
	static const enum tir_op ops[] = {TIR_OP_SUM, TIR_OP_MEAN, TIR_OP_MAX, TIR_OP_MIN,
					  TIR_OP_PROD, TIR_OP_VAR};
	static const int64_t ns[] = {1, 7, 8, 15, 16, 17, 100, 128, 129, 136, 1000, 4099, 20011};
	static const int64_t chunks[] = {128, 136, 1024, 1 << 20};
	int bad = 0;
	for (int d = 0; d < 2; d++) {
		enum tir_dtype dt = d ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
			int64_t n = ns[ni];
			struct tir_tensor x, out;
			mk(&x, dt, 1, &n, NULL);
			for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
				enum tir_op op = ops[oi];
				/* values with ties of +-0, some NaNs for max/min; near 1 for prod */
				for (int64_t i = 0; i < n; i++) {
					double v = (double)(int64_t)(rnd() % 2001 - 1000) / 256;
					if (op == TIR_OP_PROD)
						v = 1 + v / 4096;
					else if (rnd() % 17 == 0)
						v = rnd() % 2 ? 0.0 : -0.0;
					else if ((op == TIR_OP_MAX || op == TIR_OP_MIN) && n > 50 && rnd() % 97 == 0)
						v = NAN;
					put(&x, i, v);
				}
				bool mask[TIR_MAX_RANK] = {true};
				struct tir_err err = {0};
				mk(&out, dt, 0, NULL, NULL);
				CHECK(tir_reduce_by_runs(&x, mask));
				CHECK(tir_k_reduce(op, &x, mask, &out, &err) == 0);
				for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
					struct pieces p = {tir_tensor_data(&x), tir_dtype_size(dt), chunks[ci], true, 0};
					double got[1] = {0};
					tir_reduce_run(op, dt, n, chunks[ci], piece, &p, got);
					bool same = !memcmp(got, tir_tensor_data(&out), tir_dtype_size(dt));
					if (!same || !p.ok)
						bad++;
					if (!same && bad < 5)
						fprintf(stderr, "reduce_run %s %s n=%lld chunk=%lld differs\n", opname(op),
							tir_dtype_name(dt), (long long)n, (long long)chunks[ci]);
				}
				/* tir_reduce_rows: two rows, both the run (stride 0) */
				double two[2] = {0};
				tir_reduce_rows(op, dt, tir_tensor_data(&x), 0, n, 2, two);
				size_t es = tir_dtype_size(dt);
				if (memcmp(two, tir_tensor_data(&out), es) ||
				    memcmp((char *)two + es, tir_tensor_data(&out), es))
					bad++;
				tir_tensor_release(&out);
			}
			tir_tensor_release(&x);
		}
	}
	CHECK(bad == 0);
	/* a long run summed in pieces, then joined */
	for (int d = 0; d < 2; d++) {
		enum tir_dtype dt = d ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
		int64_t n = 300007;
		struct tir_tensor x, out;
		mk(&x, dt, 1, &n, NULL);
		for (int64_t i = 0; i < n; i++)
			put(&x, i, (double)(int64_t)(rnd() % 2001 - 1000) / 7);
		bool mask[TIR_MAX_RANK] = {true};
		struct tir_err err = {0};
		mk(&out, dt, 0, NULL, NULL);
		CHECK(tir_k_reduce(TIR_OP_SUM, &x, mask, &out, &err) == 0);
		for (int depth = 0; depth <= 6; depth++) {
			int64_t lo[64], len[64];
			double part[64];
			int cnt = tir_reduce_pw_split(n, 1024, depth, lo, len);
			CHECK(cnt == 1 << depth);
			for (int i = 0; i < cnt; i++) {
				struct pieces p = {tir_tensor_data(&x), tir_dtype_size(dt), 1024, true, lo[i]};
				part[i] = tir_reduce_pw_part(dt, lo[i], len[i], 1024, piece, &p);
				CHECK(i == 0 || lo[i] == lo[i - 1] + len[i - 1]);
			}
			double acc = 0.0;
			acc += tir_reduce_pw_join(part, cnt);
			if (dt == TIR_DTYPE_F32) {
				float f = (float)acc;
				CHECK(!memcmp(&f, tir_tensor_data(&out), 4));
			} else {
				CHECK(!memcmp(&acc, tir_tensor_data(&out), 8));
			}
		}
		int64_t lo[64], len[64];
		CHECK(tir_reduce_pw_split(1000, 1024, 1, lo, len) == 0); /* too short to split */
		tir_tensor_release(&out);
		tir_tensor_release(&x);
	}
	/* one output of a long run goes to the pool in pieces (sum, mean, var):
	 * the same bits at any thread count, and tir_reduce_run's (the one
	 * pairwise tree, computed on one thread piece by piece) */
	static const int pool_threads[] = {1, 2, 3, 7};
	static const enum tir_op pool_ops[] = {TIR_OP_SUM, TIR_OP_MEAN, TIR_OP_VAR};
	for (int d = 0; d < 2; d++) {
		enum tir_dtype dt = d ? TIR_DTYPE_F64 : TIR_DTYPE_F32;
		size_t es = tir_dtype_size(dt);
		int64_t n = 2000003;
		struct tir_tensor x, out;
		mk(&x, dt, 1, &n, NULL);
		for (int64_t i = 0; i < n; i++)
			put(&x, i, 1000 + (double)(int64_t)(rnd() % 2001 - 1000) / 7);
		bool mask[TIR_MAX_RANK] = {true};
		for (size_t oi = 0; oi < sizeof pool_ops / sizeof pool_ops[0]; oi++) {
			double want[1] = {0};
			struct pieces p = {tir_tensor_data(&x), es, 1024, true, 0};
			tir_reduce_run(pool_ops[oi], dt, n, 1024, piece, &p, want);
			for (size_t ti = 0; ti < sizeof pool_threads / sizeof pool_threads[0]; ti++) {
				tir_pool_set_threads(pool_threads[ti]);
				struct tir_err err = {0};
				mk(&out, dt, 0, NULL, NULL);
				CHECK(tir_k_reduce(pool_ops[oi], &x, mask, &out, &err) == 0);
				CHECK(!memcmp(want, tir_tensor_data(&out), es));
				tir_tensor_release(&out);
			}
		}
		tir_pool_set_threads(0);
		tir_tensor_release(&x);
	}
	/* rows of a contiguous matrix are runs; of its transpose they are not */
	int64_t shape[2] = {5, 300};
	bool last[TIR_MAX_RANK] = {false, true}, first[TIR_MAX_RANK] = {true, false};
	struct tir_tensor m, t;
	mk(&m, TIR_DTYPE_F32, 2, shape, NULL);
	CHECK(tir_reduce_by_runs(&m, last));
	CHECK(!tir_reduce_by_runs(&m, first));
	tir_view_transpose(&m, (const int[]){1, 0}, &t);
	CHECK(!tir_reduce_by_runs(&t, last));
	CHECK(tir_reduce_by_runs(&t, first));
	tir_tensor_release(&t);
	tir_tensor_release(&m);
}

int main(void)
{
	test_reduce_matrix();
	test_reduce_numpy();
	test_reduce_errors();
	test_copy();
	test_concat();
	test_pad();
	test_gather();
	test_reduce_run();
	CHECK(tir_mem_current() == 0);
	return check_report("test_reduce");
}
