/*
 * run.c — the executor: a program's inputs, the values a run must make
 * (every print, and names asked for), the values kept between runs (the
 * REPL), and the list of devices that hold values and run batches
 * (device.h): the CPU of this process, and a tir serve when one is given.
 * It carries out the scheduler's steps (sched.h): syncs the devices, runs
 * each step's batches at once on threads, moves values, says errors,
 * stats and --explain.  A run goes to its device through the ops table
 * alone.  No printing here: results are handed back as tensors.
 */
#include "device.h"
#include "../exec/json.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct tir_exec *tir_exec_new(struct tir_program *p)
{
	struct tir_exec *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->prog = p;
	x->pl = tir_placed(p);
	if (!(x->dev[0] = tir_cpu_device())) {
		free(x);
		return NULL;
	}
	x->ndev = 1;
	pthread_mutex_init(&x->mu, NULL);
	return x;
}


static void clear_results(struct tir_exec *x)
{
	for (size_t i = 0; i < x->nresults + x->nnamed; i++)
		tir_tensor_release(&x->results[i]);
	free(x->results);
	free(x->headers);
	x->results = x->named = NULL;
	x->headers = NULL;
	x->nresults = x->nnamed = 0;
}

static void net_spans_clear(struct tir_exec *x)
{
	for (size_t i = 0; i < x->nnet; i++)
		free(x->net[i].text);
	x->nnet = 0;
}

void tir_exec_free(struct tir_exec *x)
{
	if (!x)
		return;
	clear_results(x);
	net_spans_clear(x);
	free(x->net);
	free(x->explain);
	pthread_mutex_destroy(&x->mu);
	for (int i = 0; i < x->ndev; i++)
		x->dev[i]->ops->free(x->dev[i]);
	tir_exec_keep_named(x, false);
	for (size_t i = 0; i < x->ninputs_cap; i++)
		tir_tensor_release(&x->inputs[i]);
	free(x->inputs);
	free(x);
}

/* ---- values kept between runs (tir_exec_keep_named) ---- */

/* A node bound to a name now: its value is worth keeping.  An input's
 * value is kept anyway, in x->inputs. */
bool tir_exec_keepable(const struct tir_program *p, const struct tir_node *n)
{
	return n->op != TIR_OP_INPUT && tir_place_kept_name(p, n);
}

/* Size the cache to the grown graph; drop values whose name was rebound. */
static int kept_sync(struct tir_exec *x)
{
	size_t nn = x->prog->nnodes, old = x->nkept;
	if (tir_grow((void **)&x->kept, &x->nkept, nn, sizeof *x->kept))
		return -TIR_ENOMEM;
	if (x->nkept > old)
		memset(x->kept + old, 0, (x->nkept - old) * sizeof *x->kept);
	for (size_t i = 0; i < old; i++)
		if (x->kept[i].buf && (i >= nn || !tir_exec_keepable(x->prog, x->prog->nodes[i])))
			tir_tensor_release(&x->kept[i]);
	return 0;
}

/* Input node id has a new value: drop the kept values computed from it. */
static void kept_forget(struct tir_exec *x, uint32_t id)
{
	size_t nn = x->prog->nnodes < x->nkept ? x->prog->nnodes : x->nkept;
	if (id >= nn)
		return;
	bool *dep = calloc(nn, sizeof *dep); /* NULL: forget everything after id */
	for (size_t i = id; i < nn; i++) {
		const struct tir_node *n = x->prog->nodes[i];
		bool d = i == id || !dep;
		for (int k = 0; !d && k < n->nin; k++)
			d = n->in[k] && dep[n->in[k]->id];
		if (dep)
			dep[i] = d;
		if (d)
			tir_tensor_release(&x->kept[i]);
	}
	free(dep);
}

void tir_exec_keep_named(struct tir_exec *x, bool on)
{
	x->keep = on;
	if (on)
		return;
	for (size_t i = 0; i < x->nkept; i++)
		tir_tensor_release(&x->kept[i]);
	free(x->kept);
	x->kept = NULL;
	x->nkept = 0;
}

bool tir_exec_has_value(const struct tir_exec *x, const char *name)
{
	const struct tir_binding *b = tir_program_lookup(x->prog, name, strlen(name));
	if (!b || !b->node)
		return false;
	if (tir_place_shard(x->pl, b->node)) { /* sharded: every piece held where it lives */
		const struct tir_shard *s = tir_place_shard(x->pl, b->node);
		bool all = true;
		for (int i = 0; i < s->n && all; i++)
			all = s->dev[i] < x->ndev && x->dev[s->dev[i]]->ops->holds(x->dev[s->dev[i]], x, s->piece[i]->id);
		return all;
	}
	uint32_t id = tir_place_exe(x->pl, b->node)->id;
	if (b->node->op == TIR_OP_INPUT)
		return id < x->ninputs_cap && x->inputs[id].buf;
	for (int i = 0; i < x->ndev; i++)
		if (x->dev[i]->ops->holds(x->dev[i], x, id))
			return true;
	return false;
}

void tir_exec_set_interrupt(struct tir_exec *x, volatile sig_atomic_t *flag)
{
	x->intr = flag;
}

static const struct tir_stmt *find_input(const struct tir_program *p, const char *name)
{
	for (size_t i = p->nstmts; i-- > 0;)
		if (p->stmts[i].kind == TIR_STMT_INPUT && !strcmp(p->stmts[i].name, name))
			return &p->stmts[i];
	return NULL;
}

int tir_exec_set_input(struct tir_exec *x, const char *name, struct tir_tensor *t,
		       const char *what, struct tir_err *err)
{
	const struct tir_stmt *s = find_input(x->prog, name);
	if (!s)
		return tir_errf(err, TIR_EDATA, NULL, "%s: the program has no 'input %s'", what, name);
	const struct tir_node *n = s->node;
	bool ok = t->dtype == n->type.dtype && t->rank == n->type.rank;
	for (int i = 0; ok && i < t->rank; i++)
		ok = t->shape[i] == n->type.shape[i];
	if (!ok) {
		struct tir_type have = {.dtype = (uint8_t)t->dtype, .rank = (uint8_t)t->rank};
		memcpy(have.shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
		char a[TIR_TYPE_STRLEN], b[TIR_TYPE_STRLEN];
		return tir_errf(err, TIR_EDATA, &n->loc, "%s holds %s but input %s is declared %s", what,
				tir_type_str(&have, a, sizeof a), name, tir_type_str(&n->type, b, sizeof b));
	}
	size_t old = x->ninputs_cap;
	if (tir_grow((void **)&x->inputs, &x->ninputs_cap, x->prog->nnodes, sizeof *x->inputs))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	/* tir_grow leaves new slots uninitialised */
	memset(x->inputs + old, 0, (x->ninputs_cap - old) * sizeof *x->inputs);
	tir_tensor_release(&x->inputs[n->id]);
	x->inputs[n->id] = *t;
	memset(t, 0, sizeof *t);
	x->input_gen++;
	kept_forget(x, n->id);
	for (int i = 0; i < x->ndev; i++) {
		int rc = x->dev[i]->ops->upload(x->dev[i], x, n->id, err);
		/* the values computed from the old one go there too, now: the
		 * REPL's .vars asks holds before any run */
		if (!rc && x->dev[i]->ops->sync)
			rc = x->dev[i]->ops->sync(x->dev[i], x, err);
		if (rc)
			return rc;
	}
	return 0;
}

void tir_set_max_memory(size_t bytes)
{
	tir_mem_set_limit(bytes);
}

/* MemAvailable is among the first lines of /proc/meminfo: one read of its
 * start, not stdio's buffer and a sscanf per line (half the 50 us this
 * took at every start of tir on a 2-vCPU EPYC guest). */
size_t tir_default_max_memory(void)
{
	unsigned long long kb = 0;
	char buf[512];
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	const char *at = strstr(buf, "\nMemAvailable:");
	if (at)
		kb = strtoull(at + strlen("\nMemAvailable:"), NULL, 10);
	uint64_t mem = (uint64_t)kb << 10;
	if (!kb) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
		mem = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : (uint64_t)8 << 30;
	}
	mem = mem / 4 * 3;
	return mem > SIZE_MAX ? SIZE_MAX : (size_t)mem;
}

int tir_exec_input_file(struct tir_exec *x, const char *name, const char *path, struct tir_err *err)
{
	struct tir_tensor t = {0};
	if (!find_input(x->prog, name))
		return tir_errf(err, TIR_EDATA, NULL, "--input %s=%s: the program has no 'input %s'", name,
				path, name);
	/* FILE or FILE:TENSOR; the file's only tensor, or in a .safetensors
	 * file of several the one named like the input */
	int rc = tir_file_load_input(path, name, &t, err);
	if (rc)
		return rc;
	rc = tir_exec_set_input(x, name, &t, path, err);
	tir_tensor_release(&t);
	return rc;
}

char *tir_exec_dot(struct tir_exec *x, const char *name, struct tir_err *err)
{
	struct tir_program *p = x->prog;
	size_t nn = p->nnodes;
	int32_t *uses = calloc(nn + 1, sizeof *uses);
	bool *need = calloc(nn + 1, sizeof *need), *target = calloc(nn + 1, sizeof *target);
	char *dot = NULL;
	struct tir_plan plan = {0};
	if (!uses || !need || !target) {
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	/* the targets as a run would have them: every print, or the name */
	if (name) {
		struct tir_binding *b = tir_program_lookup(p, name, strlen(name));
		if (!b || !b->node) {
			const char *sug = tir_program_suggest(p, name, strlen(name));
			tir_errf(err, TIR_EDATA, NULL, "no value named '%s' in the program%s%s%s", name,
				 sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
			goto out;
		}
		uint32_t id = tir_place_exe(x->pl, b->node)->id;
		need[id] = target[id] = true;
		uses[id]++;
	}
	for (size_t s = 0; !name && s < p->nstmts; s++) {
		const struct tir_stmt *st = &p->stmts[s];
		for (int i = 0; st->kind == TIR_STMT_PRINT && i < st->nitems; i++) {
			uint32_t id = tir_place_exe(x->pl, st->items[i].node)->id;
			need[id] = target[id] = true;
			uses[id]++;
		}
	}
	tir_need_walk(p, need, uses, NULL, NULL);
	if (tir_fuse(p, need, uses, target, &plan) || !(dot = tir_plan_dot(p, &plan)))
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
out:
	tir_plan_free(&plan);
	free(uses);
	free(need);
	free(target);
	return dot;
}

int tir_values_put(struct tir_tensor **vals, size_t *n, const struct tir_exec *x, uint32_t id,
		   const struct tir_tensor *v, struct tir_err *err)
{
	size_t old = *n;
	if (tir_grow((void **)vals, n, (size_t)x->prog->nnodes + 1, sizeof **vals))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	memset(*vals + old, 0, (*n - old) * sizeof **vals); /* tir_grow leaves them as they were */
	tir_tensor_release(&(*vals)[id]);
	tir_tensor_ref(&(*vals)[id], v);
	return 0;
}

void tir_values_clear(struct tir_tensor *vals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tir_tensor_release(&vals[i]);
}

/* ---- a run over several devices ---- */

/* The home device: a value placed nowhere that is asked for is made there. */
static int home_of(const struct tir_exec *x)
{
	return x->ndev > 1 ? 1 : 0;
}

/* b, one batch's, into a, the run's so far (first: a is b).  The batches
 * of one step run at once: their plan and run times count once, the
 * longest (step_plan, step_run: the step's so far, added to a's times of
 * the steps before when the step ends, by the caller). */
static void stats_add(struct tir_exec_stats *a, const struct tir_exec_stats *b, bool first, double *step_plan,
		      double *step_run)
{
	*step_plan = b->plan_ms > *step_plan ? b->plan_ms : *step_plan;
	*step_run = b->run_ms > *step_run ? b->run_ms : *step_run;
	if (first) {
		double plan = a->plan_ms, run = a->run_ms;
		*a = *b;
		a->plan_ms = plan;
		a->run_ms = run;
		return;
	}
	a->mapped_bytes = a->mapped_bytes > b->mapped_bytes ? a->mapped_bytes : b->mapped_bytes;
	a->nops += b->nops;
	a->nkernels += b->nkernels;
	a->peak_bytes = a->peak_bytes > b->peak_bytes ? a->peak_bytes : b->peak_bytes;
	a->plan_peak_bytes = a->plan_peak_bytes > b->plan_peak_bytes ? a->plan_peak_bytes : b->plan_peak_bytes;
	a->plan_cached = a->plan_cached && b->plan_cached;
}

/* One batch's plan into the run's explain, under a line naming where it ran. */
static void explain_add(struct tir_exec *x, struct tir_device *d, int dev, int step, int nsteps)
{
	struct tir_str e = {0};
	if (x->explain)
		tir_str_add(&e, x->explain, strlen(x->explain));
	char dn[24];
	tir_str_addf(&e, "# on %s (%s)", tir_dev_str(dev, dn), d->ops->name(d));
	if (nsteps > 1)
		tir_str_addf(&e, ", step %d of %d", step + 1, nsteps);
	tir_str_add(&e, "\n", 1);
	const char *t = d->ops->explain(d, x);
	tir_str_add(&e, t, strlen(t));
	free(x->explain);
	x->explain = e.oom ? NULL : e.s;
	if (e.oom)
		tir_str_free(&e);
}

/* One device's batch of a step, run on a thread of its own or the caller's
 * (or its part of a collective: coll). */
struct batch_job {
	struct tir_exec *x;
	int d;
	const struct tir_sched_coll *coll; /* its part of this collective, piece */
	int piece;
	const char *key;
	struct tir_node **bt;
	const bool *bstay;
	struct tir_tensor *bv;
	size_t nb;
	int rc;
	struct tir_err err;
	struct tir_exec_stats st;
	pthread_t th;
	bool threaded;
	struct step_sync *sync;        /* running beside others, or NULL */
};

/* The batches of a step running at once: how many ended, whether one failed. */
struct step_sync {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int ended;
	bool failed;
};

static void *batch_thread(void *arg)
{
	struct batch_job *b = arg;
	struct tir_device *dv = b->x->dev[b->d];
	if (b->coll) {
		const struct tir_coll *c = b->coll->c;
		b->rc = dv->ops->all_reduce(dv, b->x, b->key, c->op, b->coll->ranks, c->n, c->in[b->piece]->id,
					    c->out[b->piece]->id, &b->err);
	} else {
		b->rc = dv->ops->run_on(dv, b->x, b->bt, b->nb, b->bstay, b->bv, &b->st, &b->err);
	}
	if (b->sync) {
		pthread_mutex_lock(&b->sync->mu);
		b->sync->ended++;
		b->sync->failed = b->sync->failed || b->rc;
		pthread_cond_signal(&b->sync->cv);
		pthread_mutex_unlock(&b->sync->mu);
	}
	return NULL;
}

/* Run jobs[0..nj) at once, each on a thread of its own, and wait for them
 * here: a batch that fails stops the others (a server that died, a program
 * error: the rest of the step is not worth waiting for), as does the
 * user's interrupt, through the flag the devices look at (x->intr, pointed
 * at the step's own meanwhile).  A job whose thread cannot start runs here. */
static void run_at_once(struct tir_exec *x, struct batch_job *jobs, int nj)
{
	struct step_sync sy = {.ended = 0};
	pthread_mutex_init(&sy.mu, NULL);
	pthread_cond_init(&sy.cv, NULL);
	volatile sig_atomic_t *user = x->intr;
	x->step_stop = 0;
	x->intr = &x->step_stop;
	for (int k = 0; k < nj; k++) {
		jobs[k].sync = &sy;
		jobs[k].threaded = !pthread_create(&jobs[k].th, NULL, batch_thread, &jobs[k]);
	}
	for (int k = 0; k < nj; k++) /* no thread: here, after the others started */
		if (!jobs[k].threaded)
			batch_thread(&jobs[k]);
	pthread_mutex_lock(&sy.mu);
	while (sy.ended < nj) {
		if (sy.failed || (user && *user))
			x->step_stop = user && *user ? *user : 1;
		/* the user's flag is set by a signal handler, which cannot
		 * signal cv: it is looked at every 20 ms */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&sy.cv, &sy.mu, &ts);
	}
	pthread_mutex_unlock(&sy.mu);
	for (int k = 0; k < nj; k++)
		if (jobs[k].threaded)
			pthread_join(jobs[k].th, NULL);
	x->intr = user;
	pthread_cond_destroy(&sy.cv);
	pthread_mutex_destroy(&sy.mu);
}

/* A program's error in remote d's batch, among several devices: said
 * where, as --explain heads its batch ("div: ..., on remote:1 (HOST:PORT)").
 * One remote alone reads as a local run; the CPU's is this process's. */
static void err_on(const struct tir_exec *x, int d, struct tir_err *err)
{
	struct tir_device *dv = x->dev[d];
	const char *name = dv->ops->name(dv);
	if (x->ndev < 3 || d == 0 || !err->loc.src || err->code == TIR_EINTERRUPT || strstr(err->msg, name))
		return;
	char dn[24], on[96];
	snprintf(on, sizeof on, ", on %s (%s)", tir_dev_str(TIR_DEV_REMOTE(d - 1), dn), name);
	size_t n = strlen(err->msg);
	if (n + strlen(on) < sizeof err->msg)
		memcpy(err->msg + n, on, strlen(on) + 1);
}

/* A collective's name: 128 random bits, the same on each of its ranks. */
static int coll_key(char key[33], struct tir_err *err)
{
	unsigned char r[16];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return tir_errf(err, TIR_EDATA, NULL, "no random bits for a collective's name: %s", strerror(errno));
	for (int i = 0; i < 16; i++)
		snprintf(key + 2 * i, 3, "%02x", r[i]);
	return 0;
}

/* c's collective: every rank's part at once (a part that fails stops the
 * others', as a step's batches do), and a line of --explain. */
static int coll_run(struct tir_exec *x, const struct tir_sched_coll *cp, int step, struct tir_err *err)
{
	const struct tir_coll *c = cp->c;
	char key[33];
	int rc = coll_key(key, err);
	struct batch_job *jobs = rc ? NULL : calloc((size_t)c->n, sizeof *jobs);
	if (rc || !jobs)
		return rc ? rc : tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < c->n; i++) {
		jobs[i].x = x;
		jobs[i].d = c->dev[i];
		jobs[i].coll = cp;
		jobs[i].piece = i;
		jobs[i].key = key;
	}
	run_at_once(x, jobs, c->n);
	for (int pass = 0; pass < 2 && !rc; pass++) /* first an error that is not another's stop */
		for (int i = 0; i < c->n && !rc; i++)
			if (jobs[i].rc && (pass || jobs[i].err.code != TIR_EINTERRUPT)) {
				rc = jobs[i].rc;
				*err = jobs[i].err;
				err_on(x, jobs[i].d, err);
			}
	free(jobs);
	if (rc)
		return rc;
	struct tir_str e = {0};
	if (x->explain)
		tir_str_add(&e, x->explain, strlen(x->explain));
	char ty[160], dn[24];
	tir_type_str(&c->out[0]->type, ty, sizeof ty);
	tir_str_addf(&e, "# all_reduce(op=%s) of %s: one MPI_Allreduce of ranks", c->op, ty);
	for (int i = 0; i < c->n; i++)
		tir_str_addf(&e, "%s%d (%s)", i ? ", " : " ", cp->ranks[i], tir_dev_str(c->dev[i], dn));
	tir_str_addf(&e, " of a group, before step %d\n", step + 1);
	free(x->explain);
	x->explain = e.oom ? NULL : e.s;
	if (e.oom)
		tir_str_free(&e);
	return 0;
}

/* ---- carrying a schedule out (sched.h makes it) ---- */

/* The scheduler's question of x's devices: whether d holds node id's value. */
static bool dev_holds(const void *ctx, int d, uint32_t id)
{
	const struct tir_exec *x = ctx;
	return x->dev[d]->ops->holds(x->dev[d], x, id);
}

/* What the scheduler knows of x's devices: the MPI group each is a rank of,
 * if it makes collectives. */
static void sched_devices(const struct tir_exec *x, struct tir_sched *s)
{
	for (int d = 0; d < x->ndev; d++) {
		struct tir_device *dv = x->dev[d];
		struct tir_sched_dev *sd = &s->dev[d];
		sd->rank = -1;
		sd->all_reduce = dv->ops->all_reduce != NULL;
		sd->group = dv->ops->group && sd->all_reduce ? dv->ops->group(dv, &sd->rank) : NULL;
	}
}

/* A move after a step: from the value its batch handed back here, if it
 * did; else straight from one device to the other when they can; else
 * fetched here and put there. */
static int move_run(struct tir_exec *x, const struct tir_sched_move *m, const struct tir_tensor *back,
		    struct tir_err *err)
{
	struct tir_device *src = x->dev[m->from], *dst = x->dev[m->to];
	if (back && back->buf)
		return dst->ops->put(dst, x, m->dst, back, err);
	int rc = dst->ops->take ? dst->ops->take(dst, src, x, m->src, m->dst, err) : -TIR_EUNSUPPORTED;
	if (rc != -TIR_EUNSUPPORTED)
		return rc;
	struct tir_tensor v = {0};
	rc = src->ops->fetch(src, x, m->src, &v, err);
	if (!rc)
		rc = dst->ops->put(dst, x, m->dst, &v, err);
	tir_tensor_release(&v);
	return rc;
}

/* Step L of s: its batches at once, each on a thread of its own; what they
 * made where it goes (the run's targets into out; a value the CPU reads in
 * a later step put back there); then the moves and the collectives into
 * the next step.  jobs: room for a batch per device; vals: for the step's
 * items. */
static int run_step(struct tir_exec *x, const struct tir_sched *s, int L, struct batch_job *jobs,
		    struct tir_tensor *vals, struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_sched_step *st = &s->steps[L];
	int nj = (int)st->nbatches, rc = 0;
	size_t first = nj ? s->batches[st->batch].item : 0, nv = 0;
	for (int k = 0; k < nj; k++) {
		const struct tir_sched_batch *sb = &s->batches[st->batch + (size_t)k];
		struct batch_job *b = &jobs[k];
		memset(b, 0, sizeof *b);
		b->x = x;
		b->d = sb->dev;
		b->bt = s->item_node + sb->item;
		b->bstay = s->item_stay + sb->item;
		b->bv = vals + (sb->item - first);
		b->nb = sb->nitems;
		nv += sb->nitems;
	}
	if (x->intr && *x->intr && nj)
		return tir_errf(err, TIR_EINTERRUPT, &jobs[0].bt[0]->loc, "interrupted");
	if (nj > 1)
		run_at_once(x, jobs, nj);
	else if (nj)
		batch_thread(&jobs[0]);
	/* the error to tell: the first that is not another's stop */
	for (int k = 0; k < nj && !rc; k++)
		if (jobs[k].rc && jobs[k].err.code != TIR_EINTERRUPT) {
			rc = jobs[k].rc;
			*err = jobs[k].err;
			err_on(x, jobs[k].d, err);
		}
	for (int k = 0; k < nj && !rc; k++)
		if (jobs[k].rc) {
			rc = jobs[k].rc;
			*err = jobs[k].err;
		}
	/* then, in device order: plans, values */
	double step_plan = 0, step_run = 0;
	for (int k = 0; k < nj; k++) {
		struct batch_job *b = &jobs[k];
		struct tir_device *dv = x->dev[b->d];
		size_t item = s->batches[st->batch + (size_t)k].item;
		stats_add(&x->stats, &b->st, x->nbatches == 0, &step_plan, &step_run);
		if (k == nj - 1) {
			x->stats.plan_ms += step_plan;
			x->stats.run_ms += step_run;
		}
		x->nbatches++;
		x->ran_mask |= 1ull << b->d;
		if (rc)
			continue;
		/* the run's explain is the batches' texts together only when
		 * there are several (tir_exec_explain); one batch's is its
		 * device's own, made when asked for */
		if (s->nbatches > 1)
			explain_add(x, dv, b->d, L, s->nsteps);
		x->explain_dev = b->d;
		for (size_t j = 0; j < b->nb && !rc; j++)
			if (b->bv[j].buf && s->item_put[item + j])
				rc = dv->ops->put(dv, x, b->bt[j]->id, &b->bv[j], err);
		/* the run's targets made here */
		for (size_t i = 0; i < s->nt && !rc; i++) {
			size_t t = s->target_item[i];
			if (t != TIR_SCHED_NONE && t >= item && t < item + b->nb && !out[i].buf &&
			    b->bv[t - item].buf)
				tir_tensor_ref(&out[i], &b->bv[t - item]);
		}
	}
	/* the moves into the next step, then the collectives, each at once on its ranks */
	for (size_t m = st->move; m < st->move + st->nmoves && !rc; m++) {
		size_t j = s->moves[m].src_item;
		rc = move_run(x, &s->moves[m], j != TIR_SCHED_NONE ? &vals[j - first] : NULL, err);
	}
	for (size_t j = 0; j < nv; j++)
		tir_tensor_release(&vals[j]);
	for (size_t c = st->coll; c < st->coll + st->ncolls && !rc; c++)
		rc = coll_run(x, &s->colls[c], L + 1, err);
	return rc;
}

/*
 * Compute targets[0..nt) into out: each op runs on the device its node is
 * placed on (a value placed nowhere: on each device that reads it, and a
 * target placed nowhere on the home device).  A `to` whose operand lives
 * on another device is a transfer.  The scheduler (sched.h) says the steps:
 * a step's batches (one per device) need only values made in earlier
 * steps; after each step the values the next one reads are moved.
 */
static int run_placed(struct tir_exec *x, struct tir_node *const *targets, size_t nt, struct tir_tensor *out,
		      struct tir_err *err)
{
	struct tir_sched s = {.p = x->prog, .pl = x->pl, .targets = targets, .nt = nt, .ndev = x->ndev, .home = home_of(x),
			      .holds = dev_holds, .ctx = x};
	struct batch_job *jobs = NULL;
	struct tir_tensor *vals = NULL;
	int rc = tir_sched_reach(&s, err);
	/* what each device holds, as of now: the schedule asks */
	for (int d = 0; d < x->ndev && !rc; d++)
		if (x->dev[d]->ops->sync)
			rc = x->dev[d]->ops->sync(x->dev[d], x, err);
	if (rc)
		goto out;
	sched_devices(x, &s);
	if ((rc = tir_sched_plan(&s, err)))
		goto out;
	jobs = calloc((size_t)x->ndev, sizeof *jobs);
	vals = calloc(s.nitems + 1, sizeof *vals);
	if (!jobs || !vals) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	x->nbatches = 0;
	x->ran_mask = 0;
	for (int L = 0; L < s.nsteps && !rc; L++)
		rc = run_step(x, &s, L, jobs, vals, out, err);
	/* a target its batch did not hand back (a device held it), asked for alone */
	for (size_t i = 0; i < nt && !rc; i++) {
		int d = s.target_dev[i];
		if (!out[i].buf)
			rc = x->dev[d]->ops->fetch(x->dev[d], x, targets[i]->id, &out[i], err);
	}
out:
	for (int d = 0; d < x->ndev; d++)
		x->dev[d]->ops->clear(x->dev[d]);
	tir_sched_free(&s);
	free(jobs);
	free(vals);
	return rc;
}

uint64_t tir_exec_run_seq(const struct tir_exec *x)
{
	return x->run_seq;
}

int tir_exec_run(struct tir_exec *x, size_t from_stmt, const char *const *names, int nnames,
		 struct tir_err *err)
{
	struct tir_program *p = x->prog;
	double t0 = tir_now_ms();
	clear_results(x);
	memset(&x->stats, 0, sizeof x->stats);
	x->run_t0 = t0;
	net_spans_clear(x);
	struct tir_node **targets = NULL;
	size_t ntargets = 0, captargets = 0, capheaders = 0;
	int rc = 0;
	if (x->keep && kept_sync(x)) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	/* the targets: every print from from_stmt on, then the names */
	for (size_t s = from_stmt; s < p->nstmts; s++) {
		const struct tir_stmt *st = &p->stmts[s];
		for (int i = 0; st->kind == TIR_STMT_PRINT && i < st->nitems; i++) {
			if (tir_grow((void **)&targets, &captargets, ntargets + 1, sizeof *targets) ||
			    tir_grow((void **)&x->headers, &capheaders, ntargets + 1, sizeof *x->headers)) {
				rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
				goto done;
			}
			x->headers[ntargets] = st->items[i].header;
			targets[ntargets++] = tir_place_shown(x->pl, st->items[i].node); /* a sharded value: gathered here */
		}
	}
	size_t nprint = ntargets;
	x->nresults = 0;
	for (int i = 0; i < nnames; i++) {
		struct tir_binding *b = tir_program_lookup(p, names[i], strlen(names[i]));
		if (!b || !b->node) {
			const char *sug = tir_program_suggest(p, names[i], strlen(names[i]));
			rc = tir_errf(err, TIR_EDATA, NULL, "no value named '%s' in the program%s%s%s", names[i],
				      sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
			goto done;
		}
		if (tir_grow((void **)&targets, &captargets, ntargets + 1, sizeof *targets)) {
			rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			goto done;
		}
		targets[ntargets++] = tir_place_shown(x->pl, b->node);
	}
	/* the values: one array, the printed then the named */
	x->results = calloc(ntargets + 1, sizeof *x->results);
	if (!x->results) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto done;
	}
	x->named = x->results + nprint;
	x->run_seq++;
	free(x->explain);
	x->explain = NULL;
	x->explain_dev = home_of(x);
	rc = run_placed(x, targets, ntargets, x->results, err);
	if (!rc) {
		x->nresults = nprint;
		x->nnamed = ntargets - nprint;
	} else {
		for (size_t i = 0; i < ntargets; i++)
			tir_tensor_release(&x->results[i]);
	}
done:
	free(targets);
	if (rc)
		clear_results(x);
	return rc;
}

size_t tir_exec_nresults(const struct tir_exec *x)
{
	return x->nresults;
}

const char *tir_exec_header(const struct tir_exec *x, size_t i)
{
	return i < x->nresults ? x->headers[i] : NULL;
}

const struct tir_tensor *tir_exec_result(const struct tir_exec *x, size_t i)
{
	return i < x->nresults ? &x->results[i] : NULL;
}

const struct tir_tensor *tir_exec_named(const struct tir_exec *x, size_t i)
{
	return i < x->nnamed ? &x->named[i] : NULL;
}

const struct tir_exec_stats *tir_exec_stats(const struct tir_exec *x)
{
	return &x->stats;
}

void tir_exec_set_fuse(struct tir_exec *x, bool fuse)
{
	x->no_fuse = !fuse;
}

void tir_exec_set_once(struct tir_exec *x, bool once)
{
	x->once = once;
}

void tir_exec_set_trace(struct tir_exec *x, bool on)
{
	x->trace = on;
}

void tir_exec_set_progress(struct tir_exec *x, tir_progress_fn fn, void *ctx)
{
	x->progress = fn;
	x->progress_ctx = ctx;
}

void tir_exec_progress(struct tir_exec *x, const struct tir_progress *p)
{
	if (!x->progress)
		return;
	pthread_mutex_lock(&x->mu); /* (batches of a step run at once) */
	x->progress(x->progress_ctx, p);
	pthread_mutex_unlock(&x->mu);
}

bool tir_exec_tracing(const struct tir_exec *x)
{
	return x->trace;
}

/* s is copied; its text taken over (freed if it cannot be kept). */
void tir_exec_trace_span(struct tir_exec *x, struct tir_net_span *s)
{
	pthread_mutex_lock(&x->mu); /* (batches of a step run at once) */
	if (tir_grow((void **)&x->net, &x->capnet, x->nnet + 1, sizeof *x->net))
		free(s->text);
	else
		x->net[x->nnet++] = *s;
	s->text = NULL;
	pthread_mutex_unlock(&x->mu);
}

char *tir_exec_trace_json(const struct tir_exec *x, double parse_ms)
{
	if (tir_json_ready(NULL))
		return NULL;
	/* Chrome's trace event format: complete events ("X", microseconds
	 * from the start of the parse), thread names as metadata ("M"): tid
	 * 0 the run (the parse here, then what the device ran) */
	json_t *ev = json_array();
	double origin = x->run_t0 - parse_ms;
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M", "pid", 1,
					    "tid", 0, "args", "name", "tir run"));
	json_array_append_new(ev, json_pack("{s:s, s:s, s:o, s:o, s:i, s:i}", "name", "parse", "ph", "X", "ts",
					    json_real(0), "dur", json_real(parse_ms * 1e3), "pid", 1, "tid", 0));
	/* the CPU's spans if it ran a batch, each remote's (its part of
	 * x->net) if it did */
	uint64_t ran = x->ran_mask ? x->ran_mask : 1ull << home_of(x);
	if (ran & 1)
		x->dev[0]->ops->trace(x->dev[0], x, ev, origin);
	for (int d = 1; d < x->ndev; d++)
		if (ran >> d & 1)
			x->dev[d]->ops->trace(x->dev[d], x, ev, origin);
	json_t *root = json_pack("{s:o, s:s}", "traceEvents", ev, "displayTimeUnit", "ms");
	char *s = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	json_decref(root);
	return s;
}

void tir_exec_set_profile(struct tir_exec *x, bool on)
{
	x->profile = on;
}

char *tir_exec_profile(const struct tir_exec *x)
{
	int ran = 0;
	for (int d = 0; d < x->ndev; d++)
		ran += (int)(x->ran_mask >> d & 1);
	if (ran < 2) {
		const struct tir_device *d = x->dev[x->explain_dev < x->ndev ? x->explain_dev : home_of(x)];
		return d->ops->profile(d, x);
	}
	/* several devices: each one's table (of its last batch), under its name */
	struct tir_str out = {0};
	for (int d = 0; d < x->ndev; d++) {
		if (!(x->ran_mask >> d & 1))
			continue;
		char *t = x->dev[d]->ops->profile(x->dev[d], x), dn[24];
		tir_str_addf(&out, "# on %s (%s)%s\n", tir_dev_str(d, dn), x->dev[d]->ops->name(x->dev[d]),
			     x->nbatches > ran ? ", its last batch" : "");
		if (t)
			tir_str_add(&out, t, strlen(t));
		free(t);
	}
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s;
}

const char *tir_exec_explain(struct tir_exec *x)
{
	if (x->explain && x->nbatches > 1)
		return x->explain;
	/* one batch: its plan as the device gave it */
	struct tir_device *d = x->dev[x->explain_dev < x->ndev ? x->explain_dev : home_of(x)];
	return d->ops->explain(d, x);
}

/* ---- for lib/net ---- */

void tir_exec_clear_inputs(struct tir_exec *x)
{
	clear_results(x);
	for (size_t i = 0; i < x->ninputs_cap; i++)
		tir_tensor_release(&x->inputs[i]);
}

/* x keeps its first device (the local one) and takes d[0..n) in place of the rest, which it frees. */
static void replace_extra_devices(struct tir_exec *x, struct tir_device *const *d, int n)
{
	for (int i = 1; i < x->ndev; i++)
		x->dev[i]->ops->free(x->dev[i]);
	x->ndev = 1;
	for (int i = 0; i < n; i++)
		x->dev[x->ndev++] = d[i];
}

int tir_exec_set_remotes(struct tir_exec *x, struct tir_remote *const *r, int n, struct tir_err *err)
{
	struct tir_device *d[TIR_MAX_DEVICES];
	if (n < 0 || n > TIR_MAX_REMOTES || n >= TIR_MAX_DEVICES)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%d remotes: at most %d at once", n, TIR_MAX_REMOTES);
	for (int i = 0; i < n; i++) {
		if (!(d[i] = tir_remote_device(r[i]))) {
			while (i-- > 0)
				d[i]->ops->free(d[i]);
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		}
	}
	replace_extra_devices(x, d, n);
	return 0;
}

int tir_exec_set_local(struct tir_exec *x, int n, struct tir_err *err)
{
	if (n < 0 || n > TIR_MAX_REMOTES || n >= TIR_MAX_DEVICES)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%d devices: at most %d at once", n, TIR_MAX_REMOTES);
	struct tir_device *d[TIR_MAX_DEVICES];
	for (int i = 0; i < n; i++) {
		if (!(d[i] = tir_cpu_device())) {
			while (i-- > 0)
				d[i]->ops->free(d[i]);
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		}
	}
	replace_extra_devices(x, d, n);
	return 0;
}

int tir_exec_set_remote(struct tir_exec *x, struct tir_remote *r, struct tir_err *err)
{
	return tir_exec_set_remotes(x, &r, r ? 1 : 0, err);
}

const struct tir_tensor *tir_exec_input_value(const struct tir_exec *x, uint32_t id)
{
	return id < x->ninputs_cap && x->inputs[id].buf ? &x->inputs[id] : NULL;
}

struct tir_program *tir_exec_program(const struct tir_exec *x)
{
	return x->prog;
}

bool tir_exec_keeping(const struct tir_exec *x)
{
	return x->keep;
}

uint64_t tir_exec_input_gen(const struct tir_exec *x)
{
	return x->input_gen;
}

bool tir_exec_fusing(const struct tir_exec *x)
{
	return !x->no_fuse;
}

bool tir_exec_profiling(const struct tir_exec *x)
{
	return x->profile;
}

volatile sig_atomic_t *tir_exec_interrupt_flag(const struct tir_exec *x)
{
	return x->intr;
}
