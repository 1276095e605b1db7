/*
 * test_pool.c — the thread pool (every task exactly once, with any thread
 * count, nested, concurrent callers, zero tasks, restarts) and the promise
 * it exists for: matmul, conv2d, attention and a whole program give
 * bitwise the same results with 1, 2, 3 and 4 threads.  Float results are
 * also checked against plain double loops written here.
 */
#include "exec/exec.h"
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the pool ---- */

struct counts {
	int64_t n;
	atomic_int *hits;
	atomic_int busy[TIR_POOL_MAX];   /* a slot in use by a running task */
	atomic_int bad;                  /* slot out of range or shared */
	int threads;
};

static void count_task(void *arg, int64_t t)
{
	struct counts *c = arg;
	int slot = tir_pool_worker();
	if (slot < 0 || slot >= c->threads) {
		atomic_fetch_add(&c->bad, 1);
		slot = 0;
	} else if (atomic_exchange(&c->busy[slot], 1)) {
		atomic_fetch_add(&c->bad, 1);
	}
	if (t >= 0 && t < c->n)
		atomic_fetch_add(&c->hits[t], 1);
	else
		atomic_fetch_add(&c->bad, 1);
	if (t % 7 == 0) {        /* uneven tasks */
		volatile double x = 0;
		for (int i = 0; i < 2000; i++)
			x += i;
	}
	atomic_store(&c->busy[slot], 0);
}

/* Run n tasks at `threads`: true when every one ran exactly once and no
 * two running tasks shared a slot.  *used: what tir_pool_run returned.
 * (No CHECK here: other threads call it.) */
static bool counted_ok_by(int threads, int64_t n, int *used, bool shares)
{
	struct counts *c = calloc(1, sizeof *c);
	c->n = n;
	c->threads = threads;
	c->hits = calloc((size_t)(n > 0 ? n : 1), sizeof *c->hits);
	*used = shares ? tir_pool_run_shares(n, count_task, c) : tir_pool_run(n, count_task, c);
	bool ok = atomic_load(&c->bad) == 0;
	for (int64_t t = 0; t < n; t++)
		if (atomic_load(&c->hits[t]) != 1)
			ok = false;
	free(c->hits);
	free(c);
	return ok;
}

static bool counted_ok(int threads, int64_t n, int *used)
{
	return counted_ok_by(threads, n, used, false);
}

static int run_counted_by(int threads, int64_t n, bool shares)
{
	int used;
	CHECK(counted_ok_by(threads, n, &used, shares));
	return used;
}

static int run_counted(int threads, int64_t n)
{
	return run_counted_by(threads, n, false);
}

static void test_pool_counts(bool shares)
{
	static const int threads[] = { 1, 2, 3, 8 };
	for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		int n = threads[i];
		tir_pool_set_threads(n);
		CHECK(tir_pool_threads() == n);
		int used = run_counted_by(n, 1000, shares);
		CHECK(used >= 1 && used <= n);
		if (n == 1)
			CHECK(used == 1);
		run_counted_by(n, 1, shares);
		run_counted_by(n, 2, shares);
		run_counted_by(n, n - 1, shares);
		run_counted_by(n, n + 1, shares);
		/* many tiny tasks, and many runs back to back (the two kinds
		 * in turn: a shares run after a counter's, and the reverse) */
		run_counted_by(n, 100000, shares);
		for (int r = 0; r < 300; r++)
			run_counted_by(n, 1 + r % 5 + r % 3 * 7, shares ? r % 2 : !(r % 2));
	}
}

/* ---- tir_pool_run_shares: each thread walks its own share upward ---- */

struct walk {
	int64_t n;
	atomic_llong last[TIR_POOL_MAX];   /* a slot's previous task, -1: none */
	atomic_llong breaks;               /* tasks that did not follow their slot's last */
	atomic_llong ran;
	atomic_int *hits;
	int64_t hold;                      /* this task waits for all others, -1: none */
	atomic_bool late;                  /* it waited past the deadline */
};

static void walk_task(void *arg, int64_t t)
{
	struct walk *w = arg;
	int slot = tir_pool_worker();
	if (slot >= 0 && slot < TIR_POOL_MAX &&
	    atomic_exchange(&w->last[slot], t) != t - 1)
		atomic_fetch_add(&w->breaks, 1);
	atomic_fetch_add(&w->hits[t], 1);
	if (t == w->hold) {
		/* the others must take every other task, this thread's share
		 * included: wait (bounded) for them to be done */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		time_t end = ts.tv_sec + 20;
		while (atomic_load(&w->ran) < w->n - 1 && ts.tv_sec < end) {
			sched_yield();
			clock_gettime(CLOCK_MONOTONIC, &ts);
		}
		if (atomic_load(&w->ran) < w->n - 1)
			atomic_store(&w->late, true);
	}
	atomic_fetch_add(&w->ran, 1);
}

static struct walk *walk_run(int64_t n, int64_t hold)
{
	struct walk *w = calloc(1, sizeof *w);
	w->n = n;
	w->hold = hold;
	w->hits = calloc((size_t)n, sizeof *w->hits);
	for (int s = 0; s < TIR_POOL_MAX; s++)
		atomic_store(&w->last[s], -1);
	tir_pool_run_shares(n, walk_task, w);
	bool once = true;
	for (int64_t t = 0; t < n; t++)
		once &= atomic_load(&w->hits[t]) == 1;
	CHECK(once);
	free(w->hits);
	return w;
}

static void test_pool_shares(void)
{
	static const int threads[] = { 1, 2, 3, 4 };
	for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		int k = threads[i];
		tir_pool_set_threads(k);
		/* a thread's tasks follow one another but where it begins its
		 * share and each half it takes: a few dozen breaks, where
		 * threads taking turns at a counter break at nearly every
		 * task; one thread walks them all in order */
		struct walk *w = walk_run(100000, -1);
		CHECK(atomic_load(&w->breaks) <= (k == 1 ? 0 : 2000));
		free(w);
		/* the thread with task 0 (the caller's first) is held until
		 * all the others are done: the other threads take the rest
		 * of its share from its back (with one thread, inline: the
		 * task waits in vain, so it is not asked) */
		if (k > 1) {
			w = walk_run(1000, 0);
			CHECK(!atomic_load(&w->late));
			free(w);
			/* and a task at the end of the last share */
			w = walk_run(1000, 999);
			CHECK(!atomic_load(&w->late));
			free(w);
		}
	}
	tir_pool_set_threads(0);
}

static int noop_calls;

static void noop_task(void *arg, int64_t t)
{
	noop_calls++;
}

static void test_pool_zero(void)
{
	tir_pool_set_threads(3);
	CHECK(tir_pool_run(0, noop_task, NULL) == 0);
	CHECK(tir_pool_run(-5, noop_task, NULL) == 0);
	CHECK(tir_pool_run_shares(0, noop_task, NULL) == 0);
	CHECK(tir_pool_run_shares(-5, noop_task, NULL) == 0);
	CHECK(noop_calls == 0);
}

/* outer tasks each run an inner set: inline, every inner task once */
struct nest {
	atomic_int hits[16][40];
	atomic_int inner_used_not_1;
};

struct nest_inner {
	struct nest *nest;
	int64_t outer;
};

static void inner_task(void *arg, int64_t t)
{
	struct nest_inner *in = arg;
	atomic_fetch_add(&in->nest->hits[in->outer][t], 1);
}

static void outer_task(void *arg, int64_t t)
{
	struct nest_inner in = { arg, t };
	int used = t % 2 ? tir_pool_run(40, inner_task, &in) : tir_pool_run_shares(40, inner_task, &in);
	if (used != 1)
		atomic_fetch_add(&((struct nest *)arg)->inner_used_not_1, 1);
}

static void test_pool_nested(void)
{
	for (int shares = 0; shares < 2; shares++) {
		struct nest *ns = calloc(1, sizeof *ns);
		tir_pool_set_threads(4);
		if (shares)
			tir_pool_run_shares(16, outer_task, ns);
		else
			tir_pool_run(16, outer_task, ns);
		int once = 1;
		for (int i = 0; i < 16; i++)
			for (int k = 0; k < 40; k++)
				once &= atomic_load(&ns->hits[i][k]) == 1;
		CHECK(once);
		CHECK(atomic_load(&ns->inner_used_not_1) == 0);
		free(ns);
	}
}

/* two application threads running jobs at once: one gets the pool, the
 * other runs inline; both complete every task */
static void *caller_main(void *arg)
{
	int used, *fails = arg;
	for (int r = 0; r < 50; r++)
		if (!counted_ok(3, 200 + r, &used))
			(*fails)++;
	return NULL;
}

static void test_pool_callers(void)
{
	pthread_t t1, t2;
	int fails1 = 0, fails2 = 0;
	tir_pool_set_threads(3);
	CHECK(pthread_create(&t1, NULL, caller_main, &fails1) == 0);
	CHECK(pthread_create(&t2, NULL, caller_main, &fails2) == 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(fails1 == 0 && fails2 == 0);
}

static void test_pool_restart(void)
{
	tir_pool_set_threads(4);
	run_counted(4, 500);
	tir_pool_shutdown();
	run_counted(4, 500);        /* workers start again */
	tir_pool_set_threads(2);    /* shrinks */
	run_counted(2, 500);
	tir_pool_set_threads(TIR_POOL_MAX + 100);
	CHECK(tir_pool_threads() == TIR_POOL_MAX);
	tir_pool_set_threads(0);    /* one per CPU */
	CHECK(tir_pool_threads() >= 1);
	run_counted(tir_pool_threads(), 300);
	tir_pool_shutdown();
}

/* A child forked while the pool has workers starts its own.  (Not under
 * TSan, which does not let a forked child start threads.) */
static void test_pool_fork(void)
{
#ifndef __SANITIZE_THREAD__
	int used, status = -1;
	tir_pool_set_threads(3);
	run_counted(3, 300);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(counted_ok(3, 300, &used) && used == 3 ? 0 : 1);
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	run_counted(3, 300);
#endif
}

/* ---- determinism of the kernels ---- */

static const int det_threads[] = { 1, 2, 3, 4 };
#define NDET ((int)(sizeof det_threads / sizeof det_threads[0]))

static void make(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape,
		 uint64_t seed, bool normal)
{
	struct tir_err err = { 0 };
	CHECK(tir_tensor_alloc(t, dt, rank, shape, false, &err) == 0);
	CHECK(tir_k_rand(t, seed, normal) == 0);
}

static bool same_bits(const struct tir_tensor *a, const struct tir_tensor *b)
{
	size_t bytes = (size_t)tir_tensor_numel(a) * tir_dtype_size(a->dtype);
	return tir_tensor_numel(a) == tir_tensor_numel(b) &&
	       memcmp(tir_tensor_data(a), tir_tensor_data(b), bytes) == 0;
}

/* a @ b by double loops from any views (batch axes already broadcast). */
static double *ref_matmul(const struct tir_tensor *a, const struct tir_tensor *b)
{
	int r = a->rank;
	int64_t m = a->shape[r - 2], k = a->shape[r - 1], n = b->shape[r - 1];
	int64_t batches = 1;
	for (int d = 0; d < r - 2; d++)
		batches *= a->shape[d] > b->shape[d] ? a->shape[d] : b->shape[d];
	double *da = malloc(sizeof(double) * (size_t)(batches * m * k));
	double *db = malloc(sizeof(double) * (size_t)(batches * k * n));
	double *c = calloc((size_t)(batches * m * n), sizeof(double));
	for (int64_t i = 0; i < batches * m * k; i++)
		da[i] = tir_tensor_get_f64(a, i);
	for (int64_t i = 0; i < batches * k * n; i++)
		db[i] = tir_tensor_get_f64(b, i);
	for (int64_t t = 0; t < batches; t++)
		for (int64_t i = 0; i < m; i++)
			for (int64_t p = 0; p < k; p++) {
				double av = da[(t * m + i) * k + p];
				for (int64_t j = 0; j < n; j++)
					c[(t * m + i) * n + j] += av * db[(t * k + p) * n + j];
			}
	free(da);
	free(db);
	return c;
}

/* out shape = a's batch axes, m, b's n; a and b have equal batch shapes. */
static void check_matmul(const char *what, const struct tir_tensor *a, const struct tir_tensor *b)
{
	int r = a->rank;
	int64_t shape[TIR_MAX_RANK];
	memcpy(shape, a->shape, sizeof shape[0] * (size_t)r);
	shape[r - 1] = b->shape[r - 1];
	struct tir_tensor first = { 0 };
	bool all_same = true, ran = true;
	for (int i = 0; i < NDET; i++) {
		struct tir_tensor out;
		struct tir_err err = { 0 };
		tir_set_threads(det_threads[i]);
		CHECK(tir_tensor_alloc(&out, a->dtype, r, shape, false, &err) == 0);
		if (tir_k_matmul(a, b, &out, &err)) {
			fprintf(stderr, "%s: %s\n", what, err.msg);
			ran = false;
		}
		if (i == 0)
			tir_tensor_ref(&first, &out);
		else
			all_same &= same_bits(&first, &out);
		tir_tensor_release(&out);
	}
	CHECK(ran);
	if (!all_same)
		fprintf(stderr, "%s: results differ between thread counts\n", what);
	CHECK(all_same);

	double *want = ref_matmul(a, b);
	double worst = 0, tol = a->dtype == TIR_DTYPE_F32 ? 1e-4 : 1e-12;
	int64_t n = tir_tensor_numel(&first);
	for (int64_t i = 0; i < n; i++) {
		double e = fabs(tir_tensor_get_f64(&first, i) - want[i]) / (1 + fabs(want[i]));
		if (e > worst)
			worst = e;
	}
	if (worst > tol)
		fprintf(stderr, "%s: off the reference by %g\n", what, worst);
	CHECK(worst <= tol);
	free(want);
	tir_tensor_release(&first);
}

static void test_matmul_det(enum tir_dtype dt)
{
	struct tir_tensor a, b, t1, t2, s;

	/* the shape that showed the problem, then several blocks each way */
	make(&a, dt, 2, (int64_t[]){ 64, 784 }, 7, false);
	make(&b, dt, 2, (int64_t[]){ 784, 256 }, 1, true);
	check_matmul("64x784 @ 784x256", &a, &b);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	make(&a, dt, 2, (int64_t[]){ 600, 300 }, 3, false);
	make(&b, dt, 2, (int64_t[]){ 300, 700 }, 4, true);
	check_matmul("600x300 @ 300x700", &a, &b);

	/* both operands transposed in place: a^T [300, 600]^T, b^T */
	make(&t1, dt, 2, (int64_t[]){ 300, 600 }, 5, true);
	make(&t2, dt, 2, (int64_t[]){ 520, 300 }, 6, true);
	struct tir_tensor at, bt;
	tir_view_transpose(&t1, (int[]){ 1, 0 }, &at);
	tir_view_transpose(&t2, (int[]){ 1, 0 }, &bt);
	check_matmul("transposed operands", &at, &bt);
	/* an operand BLAS cannot read: every other column, copied */
	make(&s, dt, 2, (int64_t[]){ 600, 600 }, 8, false);
	struct tir_tensor sl;
	tir_view_slice(&s, 1, 0, 2, 300, &sl);
	check_matmul("strided operand", &sl, &b);
	tir_tensor_release(&at);
	tir_tensor_release(&bt);
	tir_tensor_release(&sl);
	tir_tensor_release(&s);
	tir_tensor_release(&t1);
	tir_tensor_release(&t2);
	tir_tensor_release(&a);
	tir_tensor_release(&b);

	/* big enough for blocks of 512 x 512; a narrow b in row blocks */
	make(&a, dt, 2, (int64_t[]){ 2100, 32 }, 15, false);
	make(&b, dt, 2, (int64_t[]){ 32, 2100 }, 16, true);
	check_matmul("2100x32 @ 32x2100", &a, &b);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	make(&a, dt, 2, (int64_t[]){ 5000, 64 }, 17, false);
	make(&b, dt, 2, (int64_t[]){ 64, 10 }, 18, true);
	check_matmul("5000x64 @ 64x10", &a, &b);
	tir_tensor_release(&a);
	tir_tensor_release(&b);

	/* batched, each entry its own matrices */
	make(&a, dt, 3, (int64_t[]){ 3, 270, 130 }, 9, false);
	make(&b, dt, 3, (int64_t[]){ 3, 130, 300 }, 10, true);
	check_matmul("batched", &a, &b);
	tir_tensor_release(&a);
	tir_tensor_release(&b);

	/* b broadcast over the batch: folded into one tall matrix */
	make(&a, dt, 3, (int64_t[]){ 4, 100, 64 }, 11, false);
	make(&t1, dt, 2, (int64_t[]){ 64, 300 }, 12, true);
	tir_view_broadcast(&t1, 3, (int64_t[]){ 4, 64, 300 }, &b);
	check_matmul("broadcast b", &a, &b);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	tir_tensor_release(&t1);

	/* a broadcast, b batched and transposed per entry */
	make(&t1, dt, 2, (int64_t[]){ 300, 90 }, 13, false);
	tir_view_broadcast(&t1, 3, (int64_t[]){ 3, 300, 90 }, &a);
	make(&t2, dt, 3, (int64_t[]){ 3, 280, 90 }, 14, true);
	tir_view_transpose(&t2, (int[]){ 0, 2, 1 }, &b);
	check_matmul("broadcast a, transposed b", &a, &b);
	tir_tensor_release(&a);
	tir_tensor_release(&b);
	tir_tensor_release(&t1);
	tir_tensor_release(&t2);
}

/* conv2d and attention: bitwise the same at every thread count */
static void test_conv_det(enum tir_dtype dt)
{
	struct tir_tensor x, w, bias, first = { 0 };
	const int64_t stride[2] = { 1, 1 }, pad[2] = { 1, 1 };
	const int64_t oshape[4] = { 2, 16, 40, 40 };
	bool all_same = true;

	make(&x, dt, 4, (int64_t[]){ 2, 8, 40, 40 }, 21, false);
	make(&w, dt, 4, (int64_t[]){ 16, 8, 3, 3 }, 22, true);
	make(&bias, dt, 1, (int64_t[]){ 16 }, 23, true);
	for (int i = 0; i < NDET; i++) {
		struct tir_tensor out;
		struct tir_err err = { 0 };
		tir_set_threads(det_threads[i]);
		CHECK(tir_tensor_alloc(&out, dt, 4, oshape, false, &err) == 0);
		CHECK(tir_k_conv2d(&x, &w, &bias, stride, pad, &out, &err) == 0);
		if (i == 0)
			tir_tensor_ref(&first, &out);
		else
			all_same &= same_bits(&first, &out);
		tir_tensor_release(&out);
	}
	CHECK(all_same);
	/* spot checks against the definition */
	double worst = 0;
	for (int64_t i = 0; i < tir_tensor_numel(&first); i += 97) {
		int64_t img = i / (16 * 1600), f = i / 1600 % 16, oh = i / 40 % 40, ow = i % 40;
		double acc = tir_tensor_get_f64(&bias, f);
		for (int c = 0; c < 8; c++)
			for (int p = 0; p < 3; p++)
				for (int q = 0; q < 3; q++) {
					int64_t ih = oh - 1 + p, iw = ow - 1 + q;
					if (ih < 0 || ih >= 40 || iw < 0 || iw >= 40)
						continue;
					acc += tir_tensor_get_f64(&w, ((f * 8 + c) * 3 + p) * 3 + q) *
					       tir_tensor_get_f64(&x, ((img * 8 + c) * 40 + ih) * 40 + iw);
				}
		double e = fabs(tir_tensor_get_f64(&first, i) - acc) / (1 + fabs(acc));
		if (e > worst)
			worst = e;
	}
	CHECK(worst < (dt == TIR_DTYPE_F32 ? 1e-5 : 1e-12));
	tir_tensor_release(&first);
	tir_tensor_release(&x);
	tir_tensor_release(&w);
	tir_tensor_release(&bias);
}

static void attention_det(enum tir_dtype dt, int rank, const int64_t *qshape,
			  const int64_t *kshape, const int64_t *vshape, bool causal)
{
	struct tir_tensor q, k, v, first = { 0 };
	int64_t oshape[TIR_MAX_RANK];
	bool all_same = true;

	make(&q, dt, rank, qshape, 31, true);
	make(&k, dt, rank, kshape, 32, true);
	make(&v, dt, rank, vshape, 33, true);
	memcpy(oshape, qshape, sizeof oshape[0] * (size_t)rank);
	oshape[rank - 1] = vshape[rank - 1];
	for (int i = 0; i < NDET; i++) {
		struct tir_tensor out;
		struct tir_err err = { 0 };
		tir_set_threads(det_threads[i]);
		CHECK(tir_tensor_alloc(&out, dt, rank, oshape, false, &err) == 0);
		CHECK(tir_k_attention(&q, &k, &v, causal, &out, &err) == 0);
		if (i == 0)
			tir_tensor_ref(&first, &out);
		else
			all_same &= same_bits(&first, &out);
		tir_tensor_release(&out);
	}
	CHECK(all_same);

	/* a few rows against the definition */
	int64_t lq = qshape[rank - 2], lk = kshape[rank - 2], d = qshape[rank - 1];
	int64_t dv = vshape[rank - 1], rows = tir_tensor_numel(&q) / d;
	double worst = 0, *s = malloc(sizeof(double) * (size_t)lk);
	for (int64_t row = 0; row < rows; row += 37) {
		int64_t batch = row / lq, i = row % lq, lim = causal && i + 1 < lk ? i + 1 : lk;
		double mx = -INFINITY, sum = 0;
		for (int64_t jj = 0; jj < lim; jj++) {
			double dot = 0;
			for (int64_t p = 0; p < d; p++)
				dot += tir_tensor_get_f64(&q, row * d + p) *
				       tir_tensor_get_f64(&k, (batch * lk + jj) * d + p);
			s[jj] = dot / sqrt((double)d);
			if (s[jj] > mx)
				mx = s[jj];
		}
		for (int64_t jj = 0; jj < lim; jj++)
			sum += s[jj] = exp(s[jj] - mx);
		for (int64_t c = 0; c < dv; c++) {
			double acc = 0;
			for (int64_t jj = 0; jj < lim; jj++)
				acc += s[jj] / sum * tir_tensor_get_f64(&v, (batch * lk + jj) * dv + c);
			double e = fabs(tir_tensor_get_f64(&first, row * dv + c) - acc);
			if (e > worst)
				worst = e;
		}
	}
	CHECK(worst < (dt == TIR_DTYPE_F32 ? 1e-5 : 1e-12));
	free(s);
	tir_tensor_release(&first);
	tir_tensor_release(&q);
	tir_tensor_release(&k);
	tir_tensor_release(&v);
}

static void test_attention_det(enum tir_dtype dt)
{
	/* many tasks: 6 batch entries x 2 chunks of query rows */
	attention_det(dt, 4, (int64_t[]){ 2, 3, 300, 32 }, (int64_t[]){ 2, 3, 200, 32 },
		      (int64_t[]){ 2, 3, 200, 48 }, true);
	/* one task whose own matmuls go through the pool */
	attention_det(dt, 3, (int64_t[]){ 1, 200, 64 }, (int64_t[]){ 1, 1100, 64 },
		      (int64_t[]){ 1, 1100, 64 }, false);
}

/* A whole program (samples/mlp.tir's computation): the same printed text. */
static const char *mlp_program =
	"x = rand([64, 784], seed=7)\n"
	"w1 = randn([784, 256], seed=1) * 0.05\n"
	"w2 = randn([256, 10], seed=2) * 0.05\n"
	"x2 = rand([300, 784], seed=3)\n"
	"w3 = randn([784, 600], seed=4) * 0.05\n"
	"h = relu(x @ w1)\n"
	"y = softmax(h @ w2, axis=-1)\n"
	"print y\n"
	"print sum(x2 @ w3, axis=0)\n";

static char *run_program(int threads)
{
	struct tir_err err = { 0 };
	struct tir_program *p = tir_program_new();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	tir_set_threads(threads);
	CHECK(tir_program_parse(p, "mlp", mlp_program, strlen(mlp_program), 0) == 0);
	struct tir_exec *x = tir_exec_new(p);
	CHECK(tir_exec_run(x, 0, NULL, 0, &err) == 0);
	for (size_t i = 0; i < tir_exec_nresults(x); i++) {
		char *s = tir_tensor_format(tir_exec_result(x, i), tir_exec_header(x, i), 9, true);
		fputs(s ? s : "(null)", f);
		free(s);
	}
	fclose(f);
	tir_exec_free(x);
	tir_program_free(p);
	return text;
}

static void test_program_det(void)
{
	char *one = run_program(1);
	CHECK(one && strlen(one) > 1000);
	for (int i = 1; i < NDET; i++) {
		char *other = run_program(det_threads[i]);
		CHECK(one && other && strcmp(one, other) == 0);
		free(other);
	}
	free(one);
}

/* ---- stopping (tir_pool_set_stop) ---- */

struct stopper {
	volatile sig_atomic_t flag;
	int64_t at;                      /* the task that sets the flag */
	atomic_int ran;
	atomic_int late;                 /* tasks begun with the flag set */
};

static void stop_task(void *arg, int64_t t)
{
	struct stopper *st = arg;
	if (st->flag)
		atomic_fetch_add(&st->late, 1);
	atomic_fetch_add(&st->ran, 1);
	if (t == st->at)
		st->flag = 1;
}

/* Once the flag is set, the tasks not begun are skipped: a thread that
 * had checked the flag just before it was set begins one more, and no
 * thread begins two.  How many tasks others claim before the setter gets
 * to set the flag depends on the scheduler, so the test counts the tasks
 * begun after the flag was set, not the total (on one thread, exactly
 * the first six run).  Without a flag, all run. */
static void test_pool_stop(void)
{
	static const int threads[] = {1, 2, 4};
	for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
		tir_pool_set_threads(threads[i]);
		struct stopper st = {.at = 5};
		volatile sig_atomic_t *was = tir_pool_set_stop(&st.flag);
		CHECK(was == NULL);
		tir_pool_run(100000, stop_task, &st);
		int ran = atomic_load(&st.ran);
		CHECK(ran >= 6);
		CHECK(threads[i] > 1 || ran == 6);
		CHECK(atomic_load(&st.late) <= threads[i] - 1);
		CHECK(tir_pool_stopping());
		/* the same from the threads' shares (task 5 is the caller's) */
		struct stopper sh = {.at = 5};
		tir_pool_set_stop(&sh.flag);
		tir_pool_run_shares(100000, stop_task, &sh);
		CHECK(atomic_load(&sh.ran) >= 1);
		CHECK(threads[i] > 1 || atomic_load(&sh.ran) == 6);
		CHECK(atomic_load(&sh.late) <= threads[i] - 1);
		tir_pool_set_stop(NULL);
		CHECK(!tir_pool_stopping());
		struct stopper all = {.at = -1};
		tir_pool_run(1000, stop_task, &all);
		CHECK(atomic_load(&all.ran) == 1000);
		struct stopper all2 = {.at = -1};
		tir_pool_run_shares(1000, stop_task, &all2);
		CHECK(atomic_load(&all2.ran) == 1000);
	}
	tir_pool_set_threads(0);
}

/* A big product stops inside its tiles: the epilogue of the first tile
 * done sets the flag, and far fewer elements than all get their epilogue. */
struct epi_stop {
	volatile sig_atomic_t *flag;
	atomic_llong elems;
};

static int epi_stop_fn(void *ctx, int64_t i0, int64_t n)
{
	struct epi_stop *e = ctx;
	atomic_fetch_add(&e->elems, n);
	*e->flag = 1;
	return 0;
}

static void test_gemm_stop(void)
{
	const int64_t m = 2048, n = 2048, k = 512;
	float *a = calloc((size_t)(m * k), sizeof *a), *b = calloc((size_t)(k * n), sizeof *b);
	float *c = calloc((size_t)(m * n), sizeof *c);
	CHECK(a && b && c);
	if (!a || !b || !c)
		goto out;
	static const int threads[] = {1, 2};
	for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
		tir_pool_set_threads(threads[i]);
		volatile sig_atomic_t flag = 0;
		struct epi_stop e = {.flag = &flag};
		struct tir_gemm g = {.dt = TIR_DTYPE_F32, .m = m, .n = n, .k = k, .a = a, .b = b,
				     .a_rs = k, .a_cs = 1, .b_rs = n, .b_cs = 1, .c = c, .ldc = n,
				     .c_batch = m * n, .epi = epi_stop_fn, .epi_ctx = &e};
		struct tir_err err = {0};
		tir_pool_set_stop(&flag);
		CHECK(tir_gemm_run(&g, &err) == 0);
		tir_pool_set_stop(NULL);
		long long done = atomic_load(&e.elems);
		CHECK(flag == 1 && done > 0 && done < m * n / 2);
		/* and unstopped, every row */
		struct epi_stop f = {.flag = &flag};
		g.epi_ctx = &f;
		CHECK(tir_gemm_run(&g, &err) == 0 && atomic_load(&f.elems) == m * n);
	}
	tir_pool_set_threads(0);
out:
	free(a);
	free(b);
	free(c);
}

/* A run stopped in the middle of a kernel is an interrupt, never a
 * result; one whose flag is set before it starts runs nothing. */
static void test_exec_stop(void)
{
	static const char text[] = "a = rand([1024, 1024], seed=1)\nprint sum(a @ a)\n";
	struct tir_program *p = tir_program_new();
	CHECK(tir_program_parse(p, "stop", text, strlen(text), 0) == 0);
	struct tir_exec *x = tir_exec_new(p);
	volatile sig_atomic_t flag = 1;
	tir_exec_set_interrupt(x, &flag);
	struct tir_err err = {0};
	CHECK(tir_exec_run(x, 0, NULL, 0, &err) != 0 && err.code == TIR_EINTERRUPT);
	CHECK(tir_exec_nresults(x) == 0);
	CHECK(!tir_pool_stopping()); /* the run put the thread's flag back */
	flag = 0;
	memset(&err, 0, sizeof err);
	CHECK(tir_exec_run(x, 0, NULL, 0, &err) == 0 && tir_exec_nresults(x) == 1);
	tir_exec_free(x);
	tir_program_free(p);
}

int main(void)
{
	test_pool_counts(false);
	test_pool_counts(true);
	test_pool_shares();
	test_pool_zero();
	test_pool_nested();
	test_pool_callers();
	test_pool_restart();
	test_pool_fork();
	test_pool_stop();

	size_t before = tir_mem_current();
	test_matmul_det(TIR_DTYPE_F32);
	test_matmul_det(TIR_DTYPE_F64);
	test_conv_det(TIR_DTYPE_F32);
	test_conv_det(TIR_DTYPE_F64);
	test_attention_det(TIR_DTYPE_F32);
	test_attention_det(TIR_DTYPE_F64);
	test_program_det();
	test_gemm_stop();
	test_exec_stop();
	CHECK(tir_mem_current() == before);
	tir_pool_shutdown();
	tir_mem_trim();
	return check_report("test_pool");
}
