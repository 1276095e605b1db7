/*
 * pool.c — the engine's thread pool: tir_pool_run hands tasks 0..n-1 to
 * persistent workers plus the calling thread, which claim them one at a
 * time from an atomic counter; tir_pool_run_shares gives each thread a
 * contiguous share of them to walk, and the others' leftovers to steal.
 * Idle workers spin briefly (so back-to-back runs skip a sleep) and then
 * sleep on a condition variable.  Which thread
 * runs a task never changes what the task computes; how a kernel splits
 * its work into tasks (by shape and caches, never by thread count) is up
 * to the kernel (matmul.c, nn.c, rows.c, lib/fusion/vm.c), not here.
 * The thread count is set here (OpenBLAS's is set per product: blas.c).
 */
#include "exec.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long a waiting thread polls before it goes to sleep: long enough to
 * catch the next of back-to-back runs, short enough not to steal a core. */
#define SPIN_NS 50000

/* Poll cond (cheap, atomic) for up to SPIN_NS; the clock is read every
 * 64 polls. */
#define SPIN_WHILE(cond)                                                      \
	do {                                                                  \
		int64_t end_ = now_ns() + SPIN_NS;                            \
		while ((cond) && now_ns() < end_)                             \
			for (int i_ = 0; i_ < 64 && (cond); i_++)             \
				cpu_relax();                                  \
	} while (0)

struct worker {
	int id;              /* slot, 1 .. */
	unsigned gen;        /* the job generation when it was started */
	pthread_t tid;
};

static struct {
	pthread_mutex_t run;         /* held by the one thread running a job */
	pthread_mutex_t lock;        /* guards the fields below it */
	pthread_cond_t wake;         /* workers: a new job, or quit */
	pthread_cond_t done;         /* the caller: the last worker is done */
	int started;                 /* workers running */
	bool quit;
	bool hooks_set;              /* atexit and atfork registered */
	struct worker w[TIR_POOL_MAX];
	void (*fn)(void *ctx, int64_t task);   /* the current job */
	bool walk;                             /* tir_pool_run_shares's */
	void *ctx;
	volatile sig_atomic_t *stop;           /* its stop flag, or NULL */
	int64_t ntasks;
	bool packing;                          /* tir_pool_run_packing's (the trace says so) */
	atomic_uint gen;             /* bumped (under lock) for every job */
	atomic_int_fast64_t next;    /* the next task to claim */
	atomic_int active;           /* workers not yet done with the job */
	atomic_int want;             /* threads, caller included; 0: unset */
} pool = {
	.run = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

/* tir_pool_run_shares: each thread's share of the tasks, [lo, hi) packed
 * in one word (lo << 32 | hi), its owner taking tasks from the front and
 * the others runs from the back; one cache line each, so that an owner's
 * claims touch no other thread's line until someone steals. */
struct share {
	_Alignas(64) atomic_uint_fast64_t span;
};
static struct share shares[TIR_POOL_MAX];
static int nshares;          /* threads of the current shares job */

static _Thread_local int my_slot;      /* 0 outside the pool's workers */
static _Thread_local bool in_task;     /* running a task (workers: always) */
static _Thread_local int64_t offered;  /* tasks of the runs this thread started */
/* the stop flag of the run this thread works for: its own runs' (set by
 * tir_pool_set_stop), or on a worker the current job's */
static _Thread_local volatile sig_atomic_t *my_stop;
/* the run this thread works for packs operands (tir_pool_run_packing) */
static _Thread_local bool my_packing;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > TIR_POOL_MAX ? TIR_POOL_MAX : (int)n;
}

static inline bool stopped(void)
{
	return my_stop && *my_stop;
}

/* ---- tracing: a span per thread per run, each slot its own list ---- */
static atomic_bool tracing;
static struct {
	struct tir_pool_span *v;
	size_t n, cap;
} spans[TIR_POOL_MAX + 1];

static void note_span(int64_t t0, int64_t tasks)
{
	if (!tasks)
		return;
	int64_t t1 = now_ns();
	int slot = my_slot >= 0 && my_slot <= TIR_POOL_MAX ? my_slot : 0;
	if (tir_grow((void **)&spans[slot].v, &spans[slot].cap, spans[slot].n + 1, sizeof *spans[slot].v))
		return; /* a span lost, nothing else */
	spans[slot].v[spans[slot].n++] = (struct tir_pool_span){slot, t0, t1, tasks, my_packing};
}

void tir_pool_trace(bool on)
{
	size_t n;
	if (on)
		free(tir_pool_trace_take(&n));
	atomic_store(&tracing, on);
}

struct tir_pool_span *tir_pool_trace_take(size_t *n)
{
	size_t total = 0;
	for (int s = 0; s <= TIR_POOL_MAX; s++)
		total += spans[s].n;
	struct tir_pool_span *all = malloc(sizeof *all * (total ? total : 1));
	*n = 0;
	for (int s = 0; s <= TIR_POOL_MAX; s++) {
		if (all && spans[s].n)
			memcpy(all + *n, spans[s].v, sizeof *all * spans[s].n);
		*n += all ? spans[s].n : 0;
		spans[s].n = 0;
	}
	return all;
}

static void claim_tasks(void (*fn)(void *, int64_t), void *ctx, int64_t ntasks)
{
	int64_t t, done = 0, t0 = atomic_load_explicit(&tracing, memory_order_relaxed) ? now_ns() : -1;
	while (!stopped() && (t = atomic_fetch_add(&pool.next, 1)) < ntasks) {
		fn(ctx, t);
		done++;
	}
	if (t0 >= 0)
		note_span(t0, done);
}

static inline uint64_t span_pack(int64_t lo, int64_t hi)
{
	return (uint64_t)lo << 32 | (uint64_t)hi;
}

/* Take the front task of share s: true and *t when there was one. */
static bool take_front(int s, int64_t *t)
{
	uint64_t v = atomic_load_explicit(&shares[s].span, memory_order_relaxed);
	for (;;) {
		int64_t lo = (int64_t)(v >> 32), hi = (int64_t)(v & 0xffffffffu);
		if (lo >= hi)
			return false;
		if (atomic_compare_exchange_weak(&shares[s].span, &v, span_pack(lo + 1, hi))) {
			*t = lo;
			return true;
		}
	}
}

/* Take the back half (rounded up) of share s: its bounds in *lo, *hi. */
static bool take_back(int s, int64_t *lo, int64_t *hi)
{
	uint64_t v = atomic_load_explicit(&shares[s].span, memory_order_relaxed);
	for (;;) {
		int64_t a = (int64_t)(v >> 32), b = (int64_t)(v & 0xffffffffu);
		if (a >= b)
			return false;
		int64_t mid = b - (b - a + 1) / 2;
		if (atomic_compare_exchange_weak(&shares[s].span, &v, span_pack(a, mid))) {
			*lo = mid;
			*hi = b;
			return true;
		}
	}
}

/* A shares job on the thread of slot `me`: its own share front to back,
 * then the back halves of the others' shares, each made its own share
 * (so that a third thread may take from it in turn) and walked the same
 * way.  Tasks one at a time: a task is what a stop waits for (a kernel
 * that streams across its tasks' ends asks for the next one's memory
 * itself), and claiming one from its own share's line costs a thread no
 * more than a call. */
static void walk_shares(void (*fn)(void *, int64_t), void *ctx, int me)
{
	int64_t t, done = 0, t0 = atomic_load_explicit(&tracing, memory_order_relaxed) ? now_ns() : -1;
	for (;;) {
		while (!stopped() && take_front(me, &t)) {
			fn(ctx, t);
			done++;
		}
		if (stopped())
			break;
		int64_t lo = 0, hi = 0;
		bool got = false;
		for (int k = 1; k < nshares && !got; k++)
			got = take_back((me + k) % nshares, &lo, &hi);
		if (!got)
			break;
		atomic_store(&shares[me].span, span_pack(lo, hi));
	}
	if (t0 >= 0)
		note_span(t0, done);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned seen = w->gen;

	my_slot = w->id;
	in_task = true;              /* any run started here is nested */
	for (;;) {
		SPIN_WHILE(atomic_load(&pool.gen) == seen);
		if (atomic_load(&pool.gen) == seen) {
			pthread_mutex_lock(&pool.lock);
			while (atomic_load(&pool.gen) == seen && !pool.quit)
				pthread_cond_wait(&pool.wake, &pool.lock);
			bool quit = pool.quit;
			pthread_mutex_unlock(&pool.lock);
			if (quit)
				break;
		}
		/* the job was written before gen was bumped, and stays until
		 * this worker is done with it: read without the lock, which a
		 * worker that saw the job while spinning would otherwise wait
		 * (in the kernel) for the caller to let go of */
		seen = atomic_load(&pool.gen);
		void (*fn)(void *, int64_t) = pool.fn;
		bool walk = pool.walk;
		void *ctx = pool.ctx;
		int64_t ntasks = pool.ntasks;
		my_stop = pool.stop;
		my_packing = pool.packing;

		if (walk)
			walk_shares(fn, ctx, w->id);
		else
			claim_tasks(fn, ctx, ntasks);
		if (atomic_fetch_sub(&pool.active, 1) == 1) {
			pthread_mutex_lock(&pool.lock);
			pthread_cond_signal(&pool.done);
			pthread_mutex_unlock(&pool.lock);
		}
	}
	return NULL;
}

/* A forked child has none of the workers (and maybe a lock some other
 * thread held): start over. */
static void after_fork(void)
{
	pthread_mutex_init(&pool.run, NULL);
	pthread_mutex_init(&pool.lock, NULL);
	pthread_cond_init(&pool.wake, NULL);
	pthread_cond_init(&pool.done, NULL);
	pool.started = 0;
	pool.quit = false;
}

/* Start workers up to want - 1 (pool.run held).  Fewer when the system
 * refuses threads: the run then goes on with those it has.  Workers block
 * every signal, so signals reach the application's own threads. */
static void start_workers(int want)
{
	sigset_t all, old;

	if (pool.started >= want - 1)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&pool.lock);
	while (pool.started < want - 1) {
		struct worker *w = &pool.w[pool.started];
		w->id = pool.started + 1;
		w->gen = atomic_load(&pool.gen);
		if (pthread_create(&w->tid, NULL, worker_main, w))
			break;
		pool.started++;
	}
	pthread_mutex_unlock(&pool.lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pool.started && !pool.hooks_set) {
		pool.hooks_set = true;
		atexit(tir_pool_shutdown);
		pthread_atfork(NULL, NULL, after_fork);
	}
}

/* Join every worker (pool.run held). */
static void stop_workers(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.quit = true;
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
	for (int i = 0; i < pool.started; i++)
		pthread_join(pool.w[i].tid, NULL);
	pthread_mutex_lock(&pool.lock);
	pool.started = 0;
	pool.quit = false;
	pthread_mutex_unlock(&pool.lock);
}

/* The pool's size; workers follow at the next run. */
void tir_pool_set_threads(int n)
{
	if (n < 1)
		n = online_cpus();
	if (n > TIR_POOL_MAX)
		n = TIR_POOL_MAX;
	atomic_store(&pool.want, n);
}

/* The engine's threads are the pool's; OpenBLAS gets as many for a
 * product that runs on its threads (blas.c). */
void tir_set_threads(int n)
{
	tir_pool_set_threads(n);
}

/* Threads a run may use, caller included. */
int tir_pool_threads(void)
{
	int n = atomic_load(&pool.want);
	if (n < 1) {                 /* never set: one per CPU */
		int zero = 0;
		n = online_cpus();
		if (!atomic_compare_exchange_strong(&pool.want, &zero, n))
			n = zero;
	}
	return n;
}

/* The calling thread's worker slot. */
int tir_pool_worker(void)
{
	return my_slot;
}

/* This thread's tasks offered so far (--profile). */
int64_t tir_pool_offered(void)
{
	return offered;
}

volatile sig_atomic_t *tir_pool_set_stop(volatile sig_atomic_t *flag)
{
	volatile sig_atomic_t *was = my_stop;
	my_stop = flag;
	return was;
}

bool tir_pool_stopping(void)
{
	return stopped();
}

/* Stop the workers; registered with atexit once they exist. */
void tir_pool_shutdown(void)
{
	if (in_task)                 /* would wait for itself */
		return;
	pthread_mutex_lock(&pool.run);
	if (pool.started)
		stop_workers();
	pthread_mutex_unlock(&pool.run);
}

static int run_inline(int64_t ntasks, void (*fn)(void *, int64_t), void *ctx)
{
	bool was = in_task;
	in_task = true;
	int64_t t = 0, t0 = !was && atomic_load_explicit(&tracing, memory_order_relaxed) ? now_ns() : -1;
	for (; t < ntasks && !stopped(); t++)
		fn(ctx, t);
	in_task = was;
	if (t0 >= 0)
		note_span(t0, t);
	return 1;
}

static int pool_run(int64_t ntasks, void (*fn)(void *, int64_t), bool walk, void *ctx);

/* Every task once, on the workers and this thread. */
int tir_pool_run(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx)
{
	if (ntasks > 0 && !in_task)
		offered += ntasks;
	return pool_run(ntasks, fn, false, ctx);
}

/* Every task once, each thread walking its own share of them. */
int tir_pool_run_shares(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx)
{
	if (ntasks > 0 && !in_task)
		offered += ntasks;
	return pool_run(ntasks, fn, true, ctx);
}

/* The same, for the tasks that pack a kernel's operands before it
 * computes: not counted as offered, so that --profile's tasks are the
 * kernel's compute (a product whose packing alone is cut fine shows so). */
int tir_pool_run_packing(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx)
{
	if (in_task) /* a nested run's tasks are its caller's task */
		return pool_run(ntasks, fn, false, ctx);
	my_packing = true;
	int rc = pool_run(ntasks, fn, false, ctx);
	my_packing = false;
	return rc;
}

/* fn's tasks, claimed in turn from one counter, or (walk) from the
 * threads' shares, whose bounds are the halves of a word: more tasks
 * than those hold run inline. */
static int pool_run(int64_t ntasks, void (*fn)(void *, int64_t), bool walk, void *ctx)
{
	if (ntasks <= 0)
		return 0;
	int want = tir_pool_threads();
	if (want == 1 || ntasks == 1 || in_task || (walk && ntasks > UINT32_MAX))
		return run_inline(ntasks, fn, ctx);
	if (pthread_mutex_trylock(&pool.run))     /* another thread's run */
		return run_inline(ntasks, fn, ctx);
	if (pool.started > want - 1)        /* the pool was made smaller */
		stop_workers();
	start_workers(want);
	int helpers = pool.started;
	if (!helpers) {
		pthread_mutex_unlock(&pool.run);
		return run_inline(ntasks, fn, ctx);
	}

	pthread_mutex_lock(&pool.lock);
	pool.fn = fn;
	pool.walk = walk;
	pool.ctx = ctx;
	pool.ntasks = ntasks;
	pool.stop = my_stop;
	pool.packing = my_packing;
	if (walk) {
		/* share k: tasks [k n / threads, (k + 1) n / threads) */
		nshares = helpers + 1;
		for (int k = 0; k < nshares; k++)
			atomic_store(&shares[k].span, span_pack(ntasks * k / nshares, ntasks * (k + 1) / nshares));
	}
	atomic_store(&pool.next, 0);
	atomic_store(&pool.active, helpers);
	atomic_fetch_add(&pool.gen, 1);
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);

	in_task = true;
	if (walk)
		walk_shares(fn, ctx, 0);
	else
		claim_tasks(fn, ctx, ntasks);
	in_task = false;

	SPIN_WHILE(atomic_load(&pool.active) > 0);
	if (atomic_load(&pool.active) > 0) {
		pthread_mutex_lock(&pool.lock);
		while (atomic_load(&pool.active) > 0)
			pthread_cond_wait(&pool.done, &pool.lock);
		pthread_mutex_unlock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.run);
	return helpers + 1;
}
