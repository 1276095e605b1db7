/*
 * progress.c — `tir run`'s progress line: on a terminal, a run that takes
 * longer than a second says on stderr where it is (kernel k of N, or a
 * remote run's upload with its MiB/s, its wait, its results), rewritten
 * in place with \r and cleared when the run ends.  Never on a pipe unless
 * asked (--progress=always).  Not here: what a run is doing (the library
 * tells, tir_exec_set_progress).
 */
#include "cli.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 250      /* the line's clock is redrawn this often */
#define MIN_GAP_MS 100   /* and never more often than this */

struct cli_progress {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, told, drawn;
	double t0, delay_ms, last_ms;
	struct tir_progress p;
};

/* The line for what g->p says, at now; with g->mu held. */
static void draw(struct cli_progress *g, double now)
{
	const struct tir_progress *p = &g->p;
	double el = (now - g->t0) / 1e3, mib = p->bytes / 1048576.0, sec = (now - p->step_ms) / 1e3;
	double rate = sec > 0.05 ? mib / sec : 0;
	char line[160];
	switch (p->step) {
	case TIR_STEP_KERNEL:
		snprintf(line, sizeof line, "kernel %d of %d", p->k, p->n);
		break;
	case TIR_STEP_UPLOAD:
		snprintf(line, sizeof line, "upload %d of %d: %.1f of %.1f MiB, %.0f MiB/s", p->k, p->n, mib,
			 p->total / 1048576.0, rate);
		break;
	case TIR_STEP_WAIT:
		snprintf(line, sizeof line, "waiting for the server (%.1f s)", sec);
		break;
	case TIR_STEP_RESULTS:
		if (p->total)
			snprintf(line, sizeof line, "results: %.1f of %.1f MiB, %.0f MiB/s", mib,
				 p->total / 1048576.0, rate);
		else
			snprintf(line, sizeof line, "results: %.1f MiB, %.0f MiB/s", mib, rate);
		break;
	}
	/* \033[K: erase what a longer line before left */
	fprintf(stderr, "\rtir: %s \xc2\xb7 %.1f s\033[K", line, el);
	fflush(stderr);
	g->drawn = true;
	g->last_ms = now;
}

/* Drawn when the run has gone on past the delay, at most every MIN_GAP_MS. */
static void maybe_draw(struct cli_progress *g, double now)
{
	if (g->told && now - g->t0 >= g->delay_ms && (!g->drawn || now - g->last_ms >= MIN_GAP_MS))
		draw(g, now);
}

static void on_progress(void *ctx, const struct tir_progress *p)
{
	struct cli_progress *g = ctx;
	pthread_mutex_lock(&g->mu);
	g->p = *p;
	g->told = true;
	maybe_draw(g, tir_now_ms());
	pthread_mutex_unlock(&g->mu);
}

/* The clock goes on while a long kernel or a wait tells nothing new. */
static void *ticker(void *arg)
{
	struct cli_progress *g = arg;
	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&g->cv, &g->mu, &ts);
		if (!g->stop)
			maybe_draw(g, tir_now_ms());
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

bool cli_progress_parse(const char *s, enum cli_progress_mode *mode)
{
	static const char *const names[] = {"auto", "always", "never"};
	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, names[i])) {
			*mode = (enum cli_progress_mode)i;
			return true;
		}
	}
	return false;
}

struct cli_progress *cli_progress_start(struct tir_exec *x, enum cli_progress_mode mode)
{
	if (mode == PROGRESS_NEVER || (mode == PROGRESS_AUTO && !isatty(STDERR_FILENO)))
		return NULL;
	struct cli_progress *g = calloc(1, sizeof *g);
	if (!g)
		return NULL; /* no line: the run goes on */
	/* TIR_PROGRESS_DELAY: seconds before the line shows (default 1; tests give 0) */
	const char *d = getenv("TIR_PROGRESS_DELAY");
	char *end;
	double delay = d && *d ? strtod(d, &end) : 1.0;
	g->delay_ms = (d && *d && (*end || delay < 0)) ? 1000.0 : delay * 1e3;
	g->t0 = tir_now_ms();
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	if (pthread_create(&g->th, NULL, ticker, g) != 0) {
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->cv);
		free(g);
		return NULL;
	}
	tir_exec_set_progress(x, on_progress, g);
	return g;
}

void cli_progress_stop(struct cli_progress *g, struct tir_exec *x)
{
	if (!g)
		return;
	tir_exec_set_progress(x, NULL, NULL);
	pthread_mutex_lock(&g->mu);
	g->stop = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->th, NULL);
	if (g->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	free(g);
}
