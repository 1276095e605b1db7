/*
 * prefault.c — pages faulted in ahead of their use, on a thread of their
 * own.
 *
 * A big program's parse fills arrays and an arena that it asked for at
 * once (parse.c's reserve): at 100,000 statements some 40 MB, front to
 * back, a statement's bytes at a time.  The first write to each huge page
 * costs the kernel a fault and the page's clearing, and in a virtual
 * machine whose host took back the guest's free memory (free page
 * reporting) the host's faults too: measured on a 2-vCPU KVM guest, 60 MB
 * of fresh huge pages took 5 ms to touch in most runs and 30-69 ms in
 * others, against a parse of 20 ms.  That cost is paid whoever pays it;
 * here a thread that has nothing else to do pays it, ahead of the parser,
 * while the parser runs on its own core.
 *
 * The thread asks the kernel to fault the pages in as if written
 * (madvise MADV_POPULATE_WRITE, Linux 5.14): their contents never change,
 * so the owner may write them meanwhile, and a range freed meanwhile costs
 * nothing but a failed call.  The ranges are filled side by side, a huge
 * page of each in turn, since their owner fills them side by side.  It is
 * best effort: where the kernel has no such call, the thread cannot start
 * or the queue is full, the owner faults its pages itself, as it did
 * before.  Only what the owner will write goes in (parse.c gives the
 * bytes a statement takes at the least, not its guesses' room), so no
 * page is faulted in that would not have been.
 */
#include "ir.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#define STEP ((uintptr_t)2 * 1024 * 1024) /* a huge page */
#define QUEUE 16
#define PAGE ((uintptr_t)4096)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;   /* a range queued */
static pthread_cond_t drained = PTHREAD_COND_INITIALIZER; /* the queue empty, no call running */
static struct {
	uintptr_t at, end;
} queue[QUEUE];
static int nqueued;
static bool busy;        /* the thread is in a call, its range out of the queue */
static int state;        /* 0: not started; 1: running; -1: cannot run here */
static uint64_t done;    /* bytes the thread faulted in (tir_prefault_stats) */

/* under mu: queue[i] out, the rest in their order */
static void drop(int i)
{
	for (int k = i + 1; k < nqueued; k++)
		queue[k - 1] = queue[k];
	nqueued--;
}

static void *prefault_main(void *ud)
{
	(void)ud;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!nqueued)
			pthread_cond_wait(&work, &mu);
		/* a huge page of each range in turn, the first range first */
		for (int i = 0; i < nqueued;) {
			uintptr_t a = queue[i].at, e = (a & ~(STEP - 1)) + STEP;
			if (e > queue[i].end)
				e = queue[i].end;
			queue[i].at = e;
			if (e == queue[i].end)
				drop(i);
			else
				i++;
			busy = true;
			pthread_mutex_unlock(&mu);
			int r = madvise((void *)a, e - a, MADV_POPULATE_WRITE);
			int why = r ? errno : 0;
			pthread_mutex_lock(&mu);
			busy = false;
			if (!r)
				done += e - a;
			else if (why == EINVAL) { /* no such call here: the owners fault their own */
				state = -1;
				nqueued = 0;
			}
			/* (ENOMEM: freed meanwhile; EFAULT, EINTR...: the owner will) */
		}
		pthread_cond_broadcast(&drained);
	}
	return NULL;
}

/* under mu: whether the thread runs, started now if it never was */
static bool running(void)
{
	if (state)
		return state > 0;
	state = -1;
	pthread_attr_t at;
	if (pthread_attr_init(&at))
		return false;
	pthread_t t;
	sigset_t all, old;
	sigfillset(&all);
	/* no signal of the program's is ever run on it */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) &&
	    !pthread_create(&t, &at, prefault_main, NULL))
		state = 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	return state > 0;
}

void tir_prefault(const void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	if (!p || n < TIR_PREFAULT_MIN)
		return;
	uintptr_t a = (uintptr_t)p & ~(PAGE - 1), e = ((uintptr_t)p + n + PAGE - 1) & ~(PAGE - 1);
	pthread_mutex_lock(&mu);
	if (nqueued < QUEUE && running()) {
		queue[nqueued].at = a;
		queue[nqueued].end = e;
		nqueued++;
		pthread_cond_signal(&work);
	}
	pthread_mutex_unlock(&mu);
#else
	(void)p;
	(void)n;
#endif
}

void tir_prefault_cancel(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, e = a + n;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nqueued;) {
		if (queue[i].at < e && a < queue[i].end)
			drop(i);
		else
			i++;
	}
	pthread_mutex_unlock(&mu);
}

uint64_t tir_prefault_stats(bool wait)
{
	pthread_mutex_lock(&mu);
	while (wait && state > 0 && (nqueued || busy))
		pthread_cond_wait(&drained, &mu);
	uint64_t d = done;
	pthread_mutex_unlock(&mu);
	return d;
}
