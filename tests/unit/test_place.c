/*
 * test_place.c — the placement pass (lib/place): device names, a node's
 * device from `to` and its operands, the errors it reports, sharded values
 * (their pieces, alias, gather and collective), what tir fmt and .vars say
 * of it, and that a failed statement leaves nothing of its placement
 * behind (the REPL goes on with the same program).
 */
#include "place/place.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* A program of src (nremotes < 0: the remotes not known); NULL when it
 * does not parse, the first error in *err. */
static struct tir_program *parse(const char *src, int nremotes, struct tir_err *err)
{
	struct tir_program *p = tir_program_new();
	if (nremotes >= 0)
		tir_program_set_remotes(p, nremotes);
	memset(err, 0, sizeof *err);
	if (tir_program_parse(p, "t.tir", src, strlen(src), 0) != 0) {
		*err = *tir_program_diag(p, 0);
		tir_program_free(p);
		return NULL;
	}
	return p;
}

static struct tir_node *bound(struct tir_program *p, const char *name)
{
	struct tir_binding *b = tir_program_lookup(p, name, strlen(name));
	return b ? b->node : NULL;
}

static int dev(struct tir_program *p, const char *name)
{
	return tir_place_dev(tir_placed(p), bound(p, name));
}

/* src fails to place with exactly `want` as its first message. */
static void fails(const char *src, int nremotes, const char *want, int line)
{
	struct tir_err e;
	struct tir_program *p = parse(src, nremotes, &e);
	int ok = !p && !strcmp(e.msg, want);
	if (!ok)
		fprintf(stderr, "line %d: %s\n  want: %s\n  got:  %s\n", line, src, want, p ? "(no error)" : e.msg);
	CHECK(ok);
	tir_program_free(p);
}

/* ---- device names ---- */

static void test_dev_names(void)
{
	CHECK(tir_dev_parse("cpu") == TIR_DEV_CPU);
	CHECK(tir_dev_parse("remote:0") == TIR_DEV_REMOTE(0));
	CHECK(tir_dev_parse("remote:10") == TIR_DEV_REMOTE(10));
	CHECK(tir_dev_parse("remote:4095") == TIR_DEV_REMOTE(4095));
	CHECK(tir_dev_parse("remote:4096") == -1);
	CHECK(tir_dev_parse("remote:01") == -1);
	CHECK(tir_dev_parse("remote:") == -1);
	CHECK(tir_dev_parse("remote:1x") == -1);
	CHECK(tir_dev_parse("gpu") == -1);
	char b[24];
	CHECK(!strcmp(tir_dev_str(TIR_DEV_ANY, b), "any"));
	CHECK(!strcmp(tir_dev_str(TIR_DEV_SHARDED, b), "sharded"));
	CHECK(!strcmp(tir_dev_str(TIR_DEV_CPU, b), "cpu"));
	CHECK(!strcmp(tir_dev_str(TIR_DEV_REMOTE(3), b), "remote:3"));
}

/* ---- one device per node ---- */

static void test_devices(void)
{
	struct tir_err e;
	struct tir_program *p = parse("input x: f32[4]\na = to(x, \"remote:1\")\nb = a * 2\nc = x + 1\n"
				      "d = to(c, \"cpu\")\nf = d + sum(x)\nprint b\n", -1, &e);
	CHECK(p != NULL);
	if (!p)
		return;
	const struct tir_placed *pl = tir_placed(p);
	CHECK(pl && pl->p == p);
	CHECK(dev(p, "x") == TIR_DEV_ANY);
	CHECK(dev(p, "a") == TIR_DEV_REMOTE(1));
	CHECK(dev(p, "b") == TIR_DEV_REMOTE(1)); /* where its placed operand is */
	CHECK(dev(p, "c") == TIR_DEV_ANY);       /* placed nowhere: made where it is read */
	CHECK(dev(p, "d") == TIR_DEV_CPU);
	CHECK(dev(p, "f") == TIR_DEV_CPU);
	/* nothing sharded: no node has more than a device */
	for (size_t i = 0; i < p->nnodes; i++) {
		CHECK(tir_place_ext_of(pl, p->nodes[i]) == NULL);
		CHECK(tir_place_exe(pl, p->nodes[i]) == p->nodes[i]);
		CHECK(tir_place_shown(pl, p->nodes[i]) == p->nodes[i]);
	}
	CHECK(!strcmp(tir_place_kept_name(p, bound(p, "b")), "b"));
	tir_program_free(p);

	/* a program without the pass knows no devices */
	struct tir_program *q = tir_program_alloc();
	CHECK(tir_placed(q) == NULL);
	const char *src = "input x: f32[2]\na = to(x, \"remote:9\")\n";
	CHECK(tir_program_parse(q, "t.tir", src, strlen(src), 0) == 0);
	CHECK(tir_place_dev(tir_placed(q), bound(q, "a")) == TIR_DEV_ANY);
	tir_program_free(q);
}

static void test_errors(void)
{
	fails("input x: f32[4]\na = to(x, \"remote:1\")\nd = to(x, \"cpu\") + a\n", -1,
	      "add: operands on different devices: one operand is on cpu, a on remote:1; move one with to(a, \"cpu\")",
	      __LINE__);
	fails("input x: f32[4]\na = to(x, \"gpu:0\")\n", -1,
	      "to: no device 'gpu:0': devices are \"cpu\" and \"remote:N\" (the N-th of --remote, from 0)", __LINE__);
	fails("input x: f32[4]\na = to(x, \"remote:2\")\n", 2,
	      "to: no device remote:2: --remote names 2 servers (remote:0 .. remote:1)", __LINE__);
	fails("input x: f32[4]\na = to(x, \"remote:1\")\n", 1,
	      "to: no device remote:1: --remote names 1 server (remote:0)", __LINE__);
	fails("input x: f32[4]\na = to(x, \"remote:0\")\n", 0, "to: no device remote:0: no --remote is given", __LINE__);
	fails("input x: f32[4]\na = shard(x)\n", 0,
	      "shard: no devices to shard over: no --remote is given (or name them: devices=[\"remote:0\", ...])",
	      __LINE__);
	fails("input x: f32[3]\na = shard(x)\n", 2,
	      "shard: an uneven split: axis 0 of f32[3] has 3, not a multiple of the 2 devices", __LINE__);
	fails("input x: f32[4]\na = shard(shard(x))\n", 2, "shard: its operand is sharded already", __LINE__);
	fails("input x: f32[4]\na = all_reduce(x)\n", 2,
	      "all_reduce: x is not sharded: there is nothing to reduce across devices (shard it: shard(x, axis=0))",
	      __LINE__);
	/* the remotes not known (tir check): `to` any remote is taken */
	struct tir_err e;
	struct tir_program *p = parse("input x: f32[4]\na = to(x, \"remote:7\")\n", -1, &e);
	CHECK(p && dev(p, "a") == TIR_DEV_REMOTE(7));
	tir_program_free(p);
}

/* ---- sharded values ---- */

static void test_shard(void)
{
	struct tir_err e;
	struct tir_program *p = parse("input x: f32[4, 3]\ns = shard(x)\nt = s * 2\nprint t\n", 2, &e);
	CHECK(p != NULL);
	if (!p)
		return;
	const struct tir_placed *pl = tir_placed(p);
	struct tir_node *s = bound(p, "s"), *t = bound(p, "t");
	CHECK(dev(p, "s") == TIR_DEV_SHARDED);
	CHECK(dev(p, "t") == TIR_DEV_SHARDED);
	const struct tir_shard *sh = tir_place_shard(pl, t);
	CHECK(sh && sh->n == 2 && sh->axis == 0 && !sh->partial);
	for (int i = 0; sh && i < sh->n; i++) {
		struct tir_node *pc = sh->piece[i];
		CHECK(sh->dev[i] == TIR_DEV_REMOTE(i));
		CHECK(tir_place_dev(pl, pc) == TIR_DEV_REMOTE(i));
		CHECK(tir_place_hidden(pl, pc));
		CHECK(tir_place_owner(pl, pc) == t);
		CHECK(pc->op == TIR_OP_MUL && pc->type.shape[0] == 2 && pc->type.shape[1] == 3);
		CHECK(pc->id > s->id); /* operands first */
		const char *kn = tir_place_kept_name(p, pc);
		CHECK(kn && !strcmp(kn, "t"));
	}
	/* the run computes the alias (gathered on the first device), and
	 * prints the gather here */
	struct tir_node *a = tir_place_exe((struct tir_placed *)pl, t), *sh_t = tir_place_shown(pl, t);
	CHECK(a != t && tir_place_alias(pl, t) == a);
	CHECK(tir_place_dev(pl, a) == TIR_DEV_REMOTE(0));
	CHECK(a->op == TIR_OP_CONCAT && tir_place_hidden(pl, a));
	CHECK(sh_t != a && tir_place_dev(pl, sh_t) == TIR_DEV_CPU);
	CHECK(!tir_place_hidden(pl, t) && !tir_place_hidden(pl, s));
	/* fmt writes the user's ops, not the pieces, and says where */
	char *f = tir_program_format(p);
	CHECK(f && strstr(f, "t: f32[4, 3] = mul(s, 2)  # sharded over remote:0, remote:1 along axis 0\n"));
	CHECK(f && !strstr(f, "slice(") && !strstr(f, "concat("));
	free(f);
	tir_program_free(p);

	/* the devices not known (tir check, tir fmt): sharded, no pieces */
	p = parse("input x: f32[4, 3]\ns = shard(x)\nt = s * 2\n", -1, &e);
	CHECK(p && dev(p, "t") == TIR_DEV_SHARDED && !tir_place_shard(tir_placed(p), bound(p, "t")));
	f = p ? tir_program_format(p) : NULL;
	CHECK(f && strstr(f, "t: f32[4, 3] = mul(s, 2)  # sharded\n"));
	free(f);
	tir_program_free(p);
}

/* all_reduce: one piece's type, its pieces one collective */
static void test_all_reduce(void)
{
	struct tir_err e;
	struct tir_program *p = parse("input x: f32[4, 3]\nr = all_reduce(shard(x))\nu = r + 1\n", 2, &e);
	CHECK(p != NULL);
	if (!p)
		return;
	const struct tir_placed *pl = tir_placed(p);
	struct tir_node *r = bound(p, "r"), *u = bound(p, "u");
	CHECK(r->type.rank == 2 && r->type.shape[0] == 2 && r->type.shape[1] == 3);
	CHECK(u->type.shape[0] == 2); /* checked against placement's type */
	const struct tir_shard *s = tir_place_shard(pl, r);
	CHECK(s && s->n == 2 && s->axis < 0 && !s->partial);
	const struct tir_coll *c = s ? tir_place_coll(pl, s->piece[0]) : NULL;
	CHECK(c && c->n == 2 && !strcmp(c->op, "sum") && c->out[0] == s->piece[0] && c->out[1] == s->piece[1]);
	CHECK(c && tir_place_coll(pl, s->piece[1]) == c);
	CHECK(c && c->dev[0] == TIR_DEV_REMOTE(0) && c->dev[1] == TIR_DEV_REMOTE(1));
	CHECK(tir_place_coll(pl, r) == NULL);
	tir_program_free(p);

	/* the devices not known: typed as x */
	p = parse("input x: f32[4, 3]\nr = all_reduce(shard(x))\n", -1, &e);
	CHECK(p && bound(p, "r")->type.shape[0] == 4);
	tir_program_free(p);
}

/* ---- a failed statement leaves no placement (the REPL goes on) ---- */

static void repl_line(struct tir_program *p, const char *src, bool ok)
{
	int rc = tir_program_parse_at(p, "<stdin>", src, strlen(src), TIR_PARSE_REPL, 1);
	CHECK((rc == 0) == ok);
}

static void test_cut(void)
{
	struct tir_program *p = tir_program_new();
	tir_program_set_remotes(p, 2);
	const struct tir_placed *pl = tir_placed(p);
	repl_line(p, "input x: f32[4]\n", true);
	size_t before = p->nnodes;
	repl_line(p, "a = to(x, \"remote:1\") + to(x, \"cpu\")\n", false);
	CHECK(p->nnodes == before && pl->n <= p->nnodes && pl->nset == 0);
	char *f = tir_program_format(p);
	CHECK(f && !strstr(f, "# on")); /* nothing placed is left to note */
	free(f);
	repl_line(p, "s = shard(x) + to(x, \"cpu\")\n", false);
	CHECK(p->nnodes == before && pl->nset == 0);
	/* the ids come again: placed afresh, no piece's ext left on them */
	repl_line(p, "b = x * 2\nc = exp(b)\nd = c - 1\ne = d / 3\nf = e + x\ng = f * f\n", true);
	for (size_t i = before; i < p->nnodes; i++) {
		CHECK(tir_place_dev(pl, p->nodes[i]) == TIR_DEV_ANY);
		CHECK(tir_place_ext_of(pl, p->nodes[i]) == NULL);
	}
	/* .vars says where each lives */
	repl_line(p, "h = to(g, \"remote:0\")\n", true);
	CHECK(dev(p, "h") == TIR_DEV_REMOTE(0) && pl->nset == 1);
	f = tir_program_format(p);
	CHECK(f && strstr(f, "h: f32[4] = to(g, \"remote:0\")  # on remote:0\n"));
	free(f);
	tir_program_free(p);
}

static void var_seen(void *ud, const struct tir_var *v)
{
	char *out = ud;
	size_t n = strlen(out);
	snprintf(out + n, 256 - n, "%s@%s ", v->name, v->device);
}

static void test_vars(void)
{
	struct tir_err e;
	struct tir_program *p = parse("input x: f32[4]\na = to(x, \"remote:1\")\nb = x + 1\n", -1, &e);
	char out[256] = "";
	if (p)
		tir_program_vars(p, var_seen, out);
	CHECK(!strcmp(out, "x@any a@remote:1 b@any "));
	tir_program_free(p);
}

int main(void)
{
	test_dev_names();
	test_devices();
	test_errors();
	test_shard();
	test_all_reduce();
	test_cut();
	test_vars();
	return check_report("test_place");
}
