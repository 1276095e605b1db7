/*
 * test_sched.c — the scheduler (lib/engine/sched.c) without a server:
 * placed programs over made-up devices (what each holds, its MPI group and
 * rank), their schedules written out as text and compared whole: steps,
 * each device's batch (what stays, what is put back), the moves, the
 * collectives.  The cases of tests/net/devices_edge_test.py (which runs
 * them against live servers) each have their schedule here, and the
 * needs-walk its own checks.
 */
#include "engine/sched.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- made-up devices ---- */

#define MAX_HELD 64

struct fake {
	int ndev;
	const char *group[TIR_MAX_DEVICES]; /* NULL: in none */
	int rank[TIR_MAX_DEVICES];
	bool no_all_reduce[TIR_MAX_DEVICES];
	/* held values: device and node name */
	int nheld;
	int held_dev[MAX_HELD];
	const char *held_name[MAX_HELD];
	const struct tir_program *p;
	int calls; /* holds asked */
};

static bool fake_holds(const void *ctx, int d, uint32_t id)
{
	struct fake *f = (struct fake *)ctx;
	f->calls++;
	for (int i = 0; i < f->nheld; i++) {
		const struct tir_binding *b = tir_program_lookup(f->p, f->held_name[i], strlen(f->held_name[i]));
		if (f->held_dev[i] == d && b && b->node && tir_place_exe(tir_placed(f->p), b->node)->id == id)
			return true;
	}
	return false;
}

static void hold(struct fake *f, int d, const char *name)
{
	f->held_dev[f->nheld] = d;
	f->held_name[f->nheld++] = name;
}

static struct tir_program *parse(const char *src, int nremotes)
{
	struct tir_program *p = tir_program_new();
	tir_program_set_remotes(p, nremotes);
	int rc = tir_program_parse(p, "prog.tir", src, strlen(src), 0);
	CHECK(rc == 0);
	if (rc)
		for (int i = 0; i < tir_program_ndiags(p); i++)
			fprintf(stderr, "%s\n", tir_program_diag(p, i)->msg);
	return p;
}

/* every print item of p, as a run has them */
static size_t targets_of(const struct tir_program *p, struct tir_node **t, size_t max)
{
	size_t n = 0;
	for (size_t s = 0; s < p->nstmts; s++)
		for (int i = 0; p->stmts[s].kind == TIR_STMT_PRINT && i < p->stmts[s].nitems && n < max; i++)
			t[n++] = tir_place_shown(tir_placed(p), p->stmts[s].items[i].node);
	return n;
}

/* ---- a schedule as text ---- */

static const char *dev_name(int d, char buf[16])
{
	if (d == 0)
		snprintf(buf, 16, "cpu");
	else
		snprintf(buf, 16, "r%d", d - 1);
	return buf;
}

/* its name bound now, else op#id */
static const char *node_name(const struct tir_program *p, const struct tir_node *n, char buf[48])
{
	const char *s = tir_node_current_name(p, n);
	if (s)
		return s;
	snprintf(buf, 48, "%s#%u", tir_op(n->op)->name, n->id);
	return buf;
}

/* "1: r1[y*] | y@r1>to#4@r0\n2: r0[z]\n": each step, its batches (an item
 * that stays marked *, one put back ^), its moves (+: sent on from the
 * value its batch hands back, not kept where it was made) and collectives (coll op: ranks); then
 * "fetch" and the targets made by no batch. */
static void render(const struct tir_sched *s, char *out, size_t cap)
{
	const struct tir_program *p = s->p;
	size_t n = 0;
	char a[48], b[48], d1[16], d2[16];
#define PUT(...) (n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__))
	for (int L = 0; L < s->nsteps; L++) {
		const struct tir_sched_step *st = &s->steps[L];
		PUT("%d:", L + 1);
		for (size_t k = st->batch; k < st->batch + st->nbatches; k++) {
			const struct tir_sched_batch *bt = &s->batches[k];
			PUT(" %s[", dev_name(bt->dev, d1));
			for (size_t j = bt->item; j < bt->item + bt->nitems; j++)
				PUT("%s%s%s%s", j > bt->item ? " " : "", node_name(p, s->item_node[j], a),
				    s->item_stay[j] ? "*" : "", s->item_put[j] ? "^" : "");
			PUT("]");
		}
		for (size_t m = st->move; m < st->move + st->nmoves; m++) {
			const struct tir_sched_move *mv = &s->moves[m];
			PUT(" | %s@%s>%s@%s%s", node_name(p, p->nodes[mv->src], a), dev_name(mv->from, d1),
			    node_name(p, p->nodes[mv->dst], b), dev_name(mv->to, d2),
			    mv->src_item != TIR_SCHED_NONE && !s->item_stay[mv->src_item] ? "+" : "");
		}
		for (size_t c = st->coll; c < st->coll + st->ncolls; c++) {
			const struct tir_sched_coll *cl = &s->colls[c];
			PUT(" | coll %s:", cl->c->op);
			for (int i = 0; i < cl->c->n; i++)
				PUT("%s%d@%s", i ? "," : " ", cl->ranks[i], dev_name(cl->c->dev[i], d1));
		}
		PUT("\n");
	}
	for (size_t i = 0; i < s->nt; i++)
		if (s->target_item[i] == TIR_SCHED_NONE)
			PUT("fetch %s@%s\n", node_name(p, s->targets[i], a), dev_name(s->target_dev[i], d1));
#undef PUT
}

/* src's schedule over 1 + nremotes devices as f says, rendered into out;
 * 0, or the scheduler's -code with its message in err. */
static int schedule(const char *src, int nremotes, int ndev, struct fake *f, char *out, size_t cap,
		    struct tir_err *err)
{
	struct tir_program *p = parse(src, nremotes);
	struct tir_node *t[64];
	size_t nt = targets_of(p, t, 64);
	f->p = p;
	struct tir_sched s = {.p = p, .pl = tir_placed(p), .targets = t, .nt = nt, .ndev = ndev, .home = ndev > 1 ? 1 : 0,
			      .holds = fake_holds, .ctx = f};
	for (int d = 0; d < ndev; d++)
		s.dev[d] = (struct tir_sched_dev){.group = f->group[d], .rank = f->rank[d],
						  .all_reduce = !f->no_all_reduce[d]};
	int rc = tir_sched_reach(&s, err);
	if (!rc)
		rc = tir_sched_plan(&s, err);
	out[0] = 0;
	if (!rc)
		render(&s, out, cap);
	tir_sched_free(&s);
	tir_program_free(p);
	return rc;
}

/* src's schedule over the CPU and nremotes servers that hold nothing */
static char got[1 << 16];

static const char *plain(const char *src, int nremotes)
{
	struct fake f = {.ndev = 1 + nremotes};
	struct tir_err err = {0};
	if (schedule(src, nremotes, 1 + nremotes, &f, got, sizeof got, &err))
		snprintf(got, sizeof got, "error: %s", err.msg);
	return got;
}

#define SAME(have, want)                                                               \
	do {                                                                           \
		const char *h_ = (have), *w_ = (want);                                 \
		CHECK(!strcmp(h_, w_));                                                \
		if (strcmp(h_, w_))                                                    \
			fprintf(stderr, "  have:\n%s  want:\n%s", h_, w_);             \
	} while (0)

/* ---- the needs-walk ---- */

static bool held_b(const void *ctx, uint32_t id)
{
	return id == *(const uint32_t *)ctx;
}

static void test_need_walk(void)
{
	struct tir_program *p = parse("x = arange(4, dtype=f32)\ny = x * 2.0\nz = y + y\nw = x - 1.0\nprint z\n", 0);
	const struct tir_binding *bx = tir_program_lookup(p, "x", 1), *by = tir_program_lookup(p, "y", 1),
				 *bz = tir_program_lookup(p, "z", 1), *bw = tir_program_lookup(p, "w", 1);
	size_t nn = p->nnodes;
	bool *need = calloc(nn, sizeof *need);
	int32_t *uses = calloc(nn, sizeof *uses);
	need[bz->node->id] = true;
	tir_need_walk(p, need, uses, NULL, NULL);
	CHECK(need[bx->node->id] && need[by->node->id] && need[bz->node->id] && !need[bw->node->id]);
	CHECK(uses[by->node->id] == 2 && uses[bx->node->id] == 1 && uses[bz->node->id] == 0);
	/* y held: needed, but not x */
	memset(need, 0, nn);
	memset(uses, 0, nn * sizeof *uses);
	need[bz->node->id] = true;
	uint32_t yid = by->node->id;
	tir_need_walk(p, need, uses, held_b, &yid);
	CHECK(need[by->node->id] && !need[bx->node->id] && uses[by->node->id] == 2 && uses[bx->node->id] == 0);
	/* no uses counted; two targets */
	memset(need, 0, nn);
	need[bw->node->id] = need[by->node->id] = true;
	tir_need_walk(p, need, NULL, NULL, NULL);
	CHECK(need[bx->node->id] && !need[bz->node->id]);
	free(need);
	free(uses);
	tir_program_free(p);
}

/* ---- one device ---- */

static void test_cpu_alone(void)
{
	SAME(plain("x = arange(4, dtype=f32)\ny = x * 2.0\nprint y, sum(y), y\n", 0), "1: cpu[y sum#3]\n");
	/* nothing to print: no step */
	SAME(plain("x = arange(4, dtype=f32)\n", 0), "");
	/* a value held here is read, made by no batch but asked for */
	struct fake f = {.ndev = 1};
	struct tir_err err = {0};
	hold(&f, 0, "y");
	CHECK(schedule("x = arange(4, dtype=f32)\ny = x * 2.0\nprint y\n", 0, 1, &f, got, sizeof got, &err) == 0);
	SAME(got, "1: cpu[y]\n");
	/* y held: what it reads is not asked (the CPU alone asks nothing:
	 * its batch is the targets, and the device reads what it holds) */
	CHECK(f.calls <= 1);
}

/* ---- the cases of tests/net/devices_edge_test.py ---- */

/* test_repl_stale: y on remote:1, z on remote:0 from it.  Nothing held
 * (the input given again made both stale): y is made again on remote:1
 * and moved, not made by remote:0's batch. */
static void test_repl_stale(void)
{
	const char *src = "input x: f32[4]\ny = to(x, \"remote:1\") * 2.0\nz = to(y, \"remote:0\") + 1.0\nprint z\n";
	SAME(plain(src, 2), "1: r1[y*] | y@r1>to#4@r0\n2: r0[z]\n");
	/* before the input is given again: remote:0 holds z, a run of z is one batch of it */
	struct fake f = {.ndev = 3};
	struct tir_err err = {0};
	hold(&f, 1, "z");
	CHECK(schedule(src, 2, 3, &f, got, sizeof got, &err) == 0);
	SAME(got, "1: r0[z]\n");
	/* remote:1 holds y (z stale on remote:0): y moves, not made again */
	struct fake g = {.ndev = 3};
	hold(&g, 2, "y");
	CHECK(schedule(src, 2, 3, &g, got, sizeof got, &err) == 0);
	SAME(got, "1: r1[y*] | y@r1>to#4@r0\n2: r0[z]\n");
	/* the line `y` of the REPL, y held on remote:1: read there */
	struct fake h = {.ndev = 3};
	hold(&h, 2, "y");
	CHECK(schedule("input x: f32[4]\ny = to(x, \"remote:1\") * 2.0\nprint y\n", 2, 3, &h, got, sizeof got,
		       &err) == 0);
	SAME(got, "1: r1[y]\n");
}

/* test_repl_remote_off: .remote off (or one server) while a value is
 * placed on remote:1: a line that does not read it runs; one that does is
 * an error at its to; a line placed nowhere runs on remote:0. */
static void test_repl_remote_off(void)
{
	const char *placed = "input x: f32[4]\ny = to(x, \"remote:1\") * 2.0\n";
	char src[512];
	snprintf(src, sizeof src, "%sq = x + 1.0\nprint q\n", placed);
	struct fake f = {.ndev = 1};
	struct tir_err err = {0};
	CHECK(schedule(src, 2, 1, &f, got, sizeof got, &err) == 0);
	SAME(got, "1: cpu[q]\n");
	snprintf(src, sizeof src, "%sprint y\n", placed);
	memset(&err, 0, sizeof err);
	CHECK(schedule(src, 2, 1, &f, got, sizeof got, &err) == -TIR_EDATA);
	CHECK(!strcmp(err.msg, "to: no device remote:1: no --remote is given"));
	CHECK(err.loc.line == 2 && err.loc.col == 5);
	struct fake g = {.ndev = 2};
	memset(&err, 0, sizeof err);
	CHECK(schedule(src, 2, 2, &g, got, sizeof got, &err) == -TIR_EDATA);
	CHECK(!strcmp(err.msg, "to: no device remote:1: --remote names fewer servers"));
	snprintf(src, sizeof src, "%sprint sum(x)\n", placed);
	CHECK(schedule(src, 2, 2, &g, got, sizeof got, &err) == 0);
	SAME(got, "1: r0[sum#4]\n");
}

/* test_stats: three steps, remote:1 runs two batches; the REPL's line of a
 * value placed nowhere after one on remote:1 runs on remote:0. */
static void test_three_steps(void)
{
	SAME(plain("input x: f32[300, 300]\na = to(x, \"remote:1\") * 2.0\nb = to(a, \"remote:0\") + 1.0\n"
		   "print sum(to(b, \"remote:1\"))\n", 2),
	     "1: r1[a*] | a@r1>to#4@r0\n2: r0[b*] | b@r0>to#7@r1\n3: r1[sum#8]\n");
	SAME(plain("input x: f32[300, 300]\nprint sum(to(x, \"remote:1\"))\nprint 1.0 + 2.0\n", 2),
	     "1: r0[add#5] r1[sum#2]\n");
}

/* test_runtime_error: the division on remote:1, its result moved to remote:0. */
static void test_runtime_error(void)
{
	SAME(plain("x = arange(4, dtype=i32)\nz = zeros([4], dtype=i32)\na = to(x, \"remote:1\") * 2\n"
		   "q = a / to(z, \"remote:1\")\nprint to(q, \"remote:0\")\n", 2),
	     "1: r1[q*] | q@r1>to#7@r0\n2: r0[to#7]\n");
}

/* test_trace_profile_explain: four steps over the CPU and two servers
 * ("# on cpu (cpu), step 1 of 4", "# on remote:1 ..., step 2 of 4"); two
 * servers' batches in one step, at once. */
static void test_mixed_and_at_once(void)
{
	SAME(plain("w = randn([256, 256], seed=1)\nc = to(w, \"cpu\") @ w\nd = to(c, \"remote:1\") * 2.0\n"
		   "e = to(d, \"remote:0\") + 1.0\nprint sum(e), sum(to(e, \"cpu\"))\n", 2),
	     "1: cpu[c] | c@cpu>to#3@r1+\n2: r1[d*] | d@r1>to#6@r0\n3: r0[sum#9 e] | e@r0>to#10@cpu+\n"
	     "4: cpu[sum#11]\n");
	SAME(plain("w = randn([300, 300], seed=1)\na = to(w, \"remote:0\") @ w\nb = to(w, \"remote:1\") @ w\n"
		   "print sum(a + to(b, \"remote:0\"))\n", 2),
	     "1: r0[a*] r1[b*] | b@r1>to#5@r0\n2: r0[sum#7]\n");
}

/* test_chains: a value bounced between two servers, and round the CPU and
 * both: a step a move, each a batch of one device.  (The node numbers:
 * a statement makes its to and its add; the literal 1.0 is one node, made
 * by the first and shared by the others.) */
static void test_chains(void)
{
	static char src[32768];
	size_t n = (size_t)snprintf(src, sizeof src, "v0 = to(arange(8, dtype=f32), \"remote:0\")\n");
	for (int i = 1; i <= 300; i++)
		n += (size_t)snprintf(src + n, sizeof src - n, "v%d = to(v%d, \"remote:%d\") + 1.0\n", i, i - 1, i % 2);
	snprintf(src + n, sizeof src - n, "print v300, v150\n");
	plain(src, 2);
	/* 300 steps and one: step i makes v(i-1) where it lives, and moves it on */
	int steps = 0, moves = 0, bad = 0;
	for (const char *l = got; *l; l = strchr(l, '\n') + 1) {
		int step, dev;
		if (sscanf(l, "%d: r%d[", &step, &dev) == 2) {
			steps++;
			bad += step == 301 ? dev != 0 : dev != (step - 1) % 2;
		}
		moves += strstr(l, "| ") && strstr(l, "| ") < strchr(l, '\n');
	}
	CHECK(steps == 301 && moves == 300 && bad == 0);
	CHECK(strstr(got, "1: r0[v0*] | v0@r0>to#") == got);
	CHECK(strstr(got, "\n150: r1[v149*] | v149@r1>to#301@r0\n") != NULL);
	/* a target that moves on comes back (a target never stays), and is sent on from here */
	CHECK(strstr(got, "\n151: r0[v150] | v150@r0>to#303@r1+\n") != NULL);
	CHECK(strstr(got, "\n301: r0[v300]\n") != NULL);
	/* round the CPU: what the CPU makes is sent on from here (+), as is
	 * what a server sends to the CPU and a target (v1); what a server
	 * sends to a server stays there (*) */
	n = (size_t)snprintf(src, sizeof src, "v0 = to(arange(8, dtype=f32), \"cpu\")\n");
	const char *devs[] = {"cpu", "remote:0", "remote:1"};
	for (int i = 1; i <= 300; i++)
		n += (size_t)snprintf(src + n, sizeof src - n, "v%d = to(v%d, \"%s\") + 1.0\n", i, i - 1, devs[i % 3]);
	snprintf(src + n, sizeof src - n, "print v300, v299, v1\n");
	plain(src, 2);
	steps = moves = bad = 0;
	int back = 0;
	for (const char *l = got; *l; l = strchr(l, '\n') + 1) {
		int step;
		char dev[8];
		if (sscanf(l, "%d: %7[a-z0-9][", &step, dev) == 2) {
			steps++;
			const char *want_dev = (step - 1) % 3 == 0 ? "cpu" : (step - 1) % 3 == 1 ? "r0" : "r1";
			bad += strcmp(dev, want_dev) != 0;
		}
		const char *e = strchr(l, '\n');
		moves += strstr(l, "| ") && strstr(l, "| ") < e;
		back += strstr(l, "+\n") && strstr(l, "+\n") < e + 1;
	}
	CHECK(steps == 301 && moves == 300 && bad == 0 && back == 201);
	CHECK(strstr(got, "1: cpu[v0] | v0@cpu>to#") == got);
	CHECK(strstr(got, "\n2: r0[v1] | v1@r0>to#5@r1+\n3: r1[v2] | v2@r1>to#7@cpu+\n4: cpu[v3] | v3@cpu>to#9@r0+\n"
			  "5: r0[v4*] | v4@r0>to#11@r1\n") != NULL);
	CHECK(strstr(got, "\n300: r1[v299] | v299@r1>to#") != NULL);
	CHECK(strstr(got, "\n301: cpu[v300]\n") != NULL);
}

/* test_same_twice: a value moved to one server twice (two moves), printed
 * twice (one item), moved to where it is (no move).  A target never stays:
 * it comes back, and both moves send it on from here. */
static void test_same_twice(void)
{
	SAME(plain("x = arange(6, dtype=f32)\na = to(x, \"remote:1\") * 2.0\np = to(a, \"remote:0\")\n"
		   "q = to(a, \"remote:0\")\nprint p + q, a, a, to(a, \"remote:1\")\n", 2),
	     "1: r1[a to#7] | a@r1>p@r0+ | a@r1>q@r0+\n2: r0[add#6]\n");
}

/* test_stays_and_back: p made once on remote:1, read there by step 3,
 * moved to the CPU and to remote:0 (it stays: remote:0 takes it). */
static void test_stays_and_back(void)
{
	SAME(plain("x = arange(4, dtype=f32)\np = to(x, \"remote:1\") * 3.0\nq = to(p, \"cpu\")\n"
		   "r = to(p, \"remote:0\") + 1.0\ns = p + to(r, \"remote:1\")\nprint q, s\n", 2),
	     "1: r1[p*] | p@r1>q@cpu | p@r1>to#5@r0\n2: cpu[q] r0[r*] | r@r0>to#8@r1\n3: r1[s]\n");
	/* what only the CPU reads comes back from a server (not kept there) */
	SAME(plain("x = arange(4, dtype=f32)\np = to(x, \"remote:1\") * 3.0\nprint to(p, \"cpu\") + 1.0\n", 2),
	     "1: r1[p] | p@r1>to#4@cpu+\n2: cpu[add#6]\n");
	/* the CPU's value a later CPU step reads is put back */
	SAME(plain("x = arange(4, dtype=f32)\np = to(x, \"cpu\") * 3.0\nr = to(p, \"remote:0\") + 1.0\n"
		   "print p + to(r, \"cpu\")\n", 2),
	     "1: cpu[p^] | p@cpu>to#4@r0+\n2: r0[r] | r@r0>to#7@cpu+\n3: cpu[add#8]\n");
}

/* test_dtypes (moves of any dtype: the same schedule) and
 * test_one_server_twice (two devices, one server: a move between them). */
static void test_dtypes_and_twice(void)
{
	const char *dts[] = {"bf16", "f16", "i8", "u8", "i64", "f64"};
	for (int i = 0; i < 6; i++) {
		char src[256];
		snprintf(src, sizeof src, "x = arange(6, dtype=%s)\na = to(x, \"remote:1\")\nb = to(a, \"remote:0\")\n"
			 "c = to(b, \"cpu\")\nprint b, c, to(c, \"remote:1\")\n", dts[i]);
		SAME(plain(src, 2), "1: r1[a*] | a@r1>b@r0\n2: r0[b] | b@r0>c@cpu+\n3: cpu[c] | c@cpu>to#4@r1+\n"
				    "4: r1[to#4]\n");
	}
	SAME(plain("x = randn([64, 64], seed=1)\na = to(x, \"remote:1\") * 2.0\n"
		   "print sum(to(a, \"remote:0\")), sum(a)\n", 2),
	     "1: r1[sum#6 a*] | a@r1>to#4@r0\n2: r0[sum#5]\n");
}

/* ---- collectives ---- */

/* an all_reduce of a value sharded over 4 servers, of dtype dt and op op,
 * over devices in groups and ranks as given */
static const char *coll(const char *dt, const char *op, const char *const *group, const int *rank, bool no_ar)
{
	struct fake f = {.ndev = 5};
	for (int d = 1; d < 5; d++) {
		f.group[d] = group[d - 1];
		f.rank[d] = rank[d - 1];
		f.no_all_reduce[d] = no_ar && d == 4;
	}
	char src[256];
	snprintf(src, sizeof src, "x = arange(32, dtype=%s)\ny = all_reduce(shard(x, axis=0), op=%s)\nprint y\n", dt,
		 op);
	struct tir_err err = {0};
	if (schedule(src, 4, 5, &f, got, sizeof got, &err))
		snprintf(got, sizeof got, "error: %s", err.msg);
	return got;
}

static void test_collectives(void)
{
	const char *g1[] = {"g", "g", "g", "g"}, *g2[] = {"g", "g", "h", "h"};
	const int r0123[] = {0, 1, 2, 3}, r1230[] = {1, 2, 3, 0}, r1234[] = {1, 2, 3, 4}, r0113[] = {0, 1, 1, 3};
	/* at once: one collective after step 1, of the pieces made in step 1
	 * (each stays where it is made); its result read in step 2 where the
	 * printed value is gathered from */
	SAME(coll("f32", "sum", g1, r0123, false),
	     "1: r0[to#3*] r1[to#5*] r2[to#7*] r3[to#9*] | coll sum: 0@r0,1@r1,2@r2,3@r3\n"
	     "2: r0[add#25*] | add#25@r0>to#29@cpu\n3: cpu[to#29]\n");
	/* lowered (f16: MPI does not reduce it as tir does): the pieces moved
	 * to the first device and added there */
	SAME(coll("f16", "sum", g1, r0123, false),
	     "1: r0[to#3*] r1[to#5*] r2[to#7*] r3[to#9*] | to#5@r1>to#20@r0 | to#7@r2>to#22@r0 | to#9@r3>to#24@r0\n"
	     "2: r0[add#25] | add#25@r0>to#29@cpu+\n3: cpu[to#29]\n");
	/* ranks in another order: their ranks, piece by piece */
	CHECK(strstr(coll("f32", "sum", g1, r1230, false), "| coll sum: 1@r0,2@r1,3@r2,0@r3\n") != NULL);
	CHECK(strstr(coll("i32", "max", g1, r0123, false), "| coll max:") != NULL);
	CHECK(strstr(coll("f64", "mean", g1, r0123, false), "| coll mean:") != NULL);
	/* lowered: moves to the first device, no collective */
	const char *lowered[][2] = {{"f16", "sum"}, {"bf16", "sum"}, {"i32", "mean"}, {"i64", "mean"}};
	for (int i = 0; i < 4; i++) {
		const char *s = coll(lowered[i][0], lowered[i][1], g1, r0123, false);
		CHECK(!strstr(s, "coll") && strstr(s, ">") != NULL);
	}
	CHECK(!strstr(coll("f32", "sum", g2, r0123, false), "coll"));  /* two groups */
	CHECK(!strstr(coll("f32", "sum", g1, r1234, false), "coll"));  /* no rank 0 */
	CHECK(!strstr(coll("f32", "sum", g1, r0113, false), "coll"));  /* a rank twice */
	CHECK(!strstr(coll("f32", "sum", g1, r0123, true), "coll"));   /* one that cannot */
	const char *none[] = {NULL, NULL, NULL, NULL};
	CHECK(!strstr(coll("f32", "sum", none, r0123, false), "coll")); /* lone servers */
}

/* ---- levels ---- */

static void test_levels(void)
{
	/* a value placed nowhere is made on each device that reads it, in
	 * the step that reads it; a placed one's readers wait for its move */
	SAME(plain("x = arange(4, dtype=f32)\nu = x * 2.0\na = to(u, \"remote:0\") + 1.0\nb = to(u, \"remote:1\") + 2.0\n"
		   "print a + to(b, \"remote:0\")\n", 2),
	     "1: r0[a*] r1[b*] | b@r1>to#8@r0\n2: r0[add#9]\n");
	/* a diamond over three devices: the join waits for the longer side */
	SAME(plain("x = to(arange(4, dtype=f32), \"cpu\")\na = to(x, \"remote:0\") * 2.0\nb = to(a, \"remote:1\") + 1.0\n"
		   "c = to(x, \"remote:1\") * 3.0\nprint to(b + c, \"cpu\")\n", 2),
	     "1: cpu[x] | x@cpu>to#2@r0+ | x@cpu>to#8@r1+\n2: r0[a*] r1[c*] | a@r0>to#5@r1\n"
	     "3: r1[add#11] | add#11@r1>to#12@cpu+\n4: cpu[to#12]\n");
}

int main(void)
{
	test_need_walk();
	test_cpu_alone();
	test_repl_stale();
	test_repl_remote_off();
	test_three_steps();
	test_runtime_error();
	test_mixed_and_at_once();
	test_chains();
	test_same_twice();
	test_stays_and_back();
	test_dtypes_and_twice();
	test_collectives();
	test_levels();
	return check_report("test_sched");
}
