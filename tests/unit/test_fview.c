/*
 * test_fview.c — the planner's view of the graph (fusion.h: struct
 * tir_fview) and the passes that read it, against the nodes they stand
 * for.  For every sample, golden and bench program: each node's view
 * (op, operands, dtype, type, flags, kind, fuse dtype: the flags asked
 * once per kind of node) is what the node's own functions say; the plan
 * made from the view is the one tir_fuse makes, its groups analyzed as
 * tir_group_analyze analyzes them from their nodes (and as its passes
 * alone do, without the one-pass class of a group elementwise all
 * through), and what it finished
 * is what tir_plan_finish makes again from the groups alone; a view of
 * the needed nodes alone (a run's: tir_fview_add) plans the same.  And the
 * view of a long program costs per node what a short one's does (bytes
 * counted, not timed): 16 a node, 4 an operand, and a few distinct types
 * whatever the length; a long program's plan takes its arrays from one
 * block (big_groups: groups that take their arrays from it and past it),
 * and pages given back are kept for the next ask of their size, zeroed.
 */
#include "engine/engine.h"
#include "fusion/fusion.h"
#include "check.h"
#include "unit_util.h"

#include <stdlib.h>
#include <string.h>

static int ngens; /* views with a generator (check_view) */

/* The node's view is what the node says. */
static void check_view(const struct tir_program *p, const struct tir_fview *v)
{
	CHECK(v->nnodes == p->nnodes);
	size_t wrong = 0, edges = 0;
	for (size_t i = 0; i < p->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		const struct tir_fnode *f = &v->n[i];
		const struct tir_type *t = &v->types[f->type].t;
		bool ok = f->op == n->op && f->nin == n->nin && f->dt == n->type.dtype && f->in == edges &&
			  f->kind == tir_op(n->op)->kind && f->fdt == tir_fuse_dtype(n) &&
			  !!(f->flags & TIR_FN_FUSABLE) == tir_fusable(n) && t->dtype == n->type.dtype &&
			  t->weak == n->type.weak && t->rank == n->type.rank &&
			  v->types[f->type].numel == tir_type_numel(&n->type) &&
			  !!(f->flags & TIR_FN_LEAF) == (n->op == TIR_OP_CONST || n->op == TIR_OP_INPUT ||
							 tir_gen_is_op(n->op));
		for (int d = 0; ok && d < t->rank; d++)
			ok = t->shape[d] == n->type.shape[d];
		for (int k = 0; k < n->nin; k++, edges++)
			ok = ok && v->edges[edges] == (n->in[k] ? n->in[k]->id : TIR_FN_NONE);
		if (!ok && wrong++ < 3)
			fprintf(stderr, "node %zu (%s): its view differs\n", i, tir_op(n->op)->name);
	}
	CHECK(wrong == 0);
	CHECK(v->nedges == edges);
	/* gens (some node a generator the kernels may compute: the planner
	 * skips its pass over the nodes without one) is what the nodes say */
	bool gens = false;
	for (size_t i = 0; i < p->nnodes; i++)
		gens |= (v->n[i].flags & TIR_FN_GEN) != 0;
	CHECK(v->gens == gens);
	ngens += gens;
}

static bool same_info(const struct tir_group_info *a, const struct tir_group_info *b, int n)
{
	if (a->dt != b->dt || a->rank != b->rank || a->split != b->split || a->rows != b->rows ||
	    a->cols != b->cols || a->reduces != b->reduces || a->leading != b->leading ||
	    memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) ||
	    memcmp(a->kshape, b->kshape, sizeof(int64_t) * (size_t)a->rank))
		return false;
	return !memcmp(a->cls, b->cls, (size_t)n) && !memcmp(a->via, b->via, sizeof *a->via * (size_t)n);
}

static int nplans, npasses_differ, nplain;

/* Plan p (every print a target) from the view and from the nodes: the same. */
static void check_plan(const struct tir_program *p, const struct tir_fview *v)
{
	size_t nn = p->nnodes;
	bool *need = calloc(nn + 1, 1), *target = calloc(nn + 1, 1);
	int32_t *uses = calloc(nn + 1, sizeof *uses);
	CHECK(need && target && uses);
	for (size_t s = 0; need && target && uses && s < p->nstmts; s++)
		for (int i = 0; p->stmts[s].kind == TIR_STMT_PRINT && i < p->stmts[s].nitems; i++) {
			uint32_t id = p->stmts[s].items[i].node->id;
			need[id] = target[id] = true;
			uses[id]++;
		}
	/* a program with no print: its last value */
	if (need && target && uses && nn && p->nstmts && !memchr(target, 1, nn))
		need[nn - 1] = target[nn - 1] = true, uses[nn - 1]++;
	if (!need || !target || !uses)
		goto out;
	tir_need_walk(p, need, uses, NULL, NULL);
	struct tir_plan a, b;
	CHECK(tir_fuse_view(p, v, need, uses, target, &a) == 0);
	CHECK(tir_fuse(p, need, uses, target, &b) == 0);
	nplans++;
	CHECK(a.ngroups == b.ngroups);
	for (int g = 0; g < a.ngroups && g < b.ngroups; g++) {
		const struct tir_group *ga = &a.groups[g];
		CHECK(ga->n == b.groups[g].n && ga->nin == b.groups[g].nin && ga->root == b.groups[g].root);
		/* analyzed from the view as from the nodes */
		struct tir_group_info own;
		const struct tir_node *culprit;
		void *mem = malloc(tir_group_info_bytes(ga->n));
		CHECK(mem && ga->info && ga->ids && ga->input_ids);
		if (!mem || !ga->info)
			continue;
		tir_group_info_place(&own, mem, ga->n);
		CHECK(tir_group_analyze(ga, &own, &culprit) == NULL);
		CHECK(same_info(&own, ga->info, ga->n));
		/* the one pass read from the view in place (tir_fuse_view's)
		 * says what it says read from the nodes */
		CHECK(own.plain == ga->info->plain);
		/* and by the passes alone, as before the one-pass class of a
		 * group elementwise all through */
		tir_group_analyze_passes_only(true);
		CHECK(tir_group_analyze(ga, &own, &culprit) == NULL);
		tir_group_analyze_passes_only(false);
		if (!same_info(&own, ga->info, ga->n) && npasses_differ++ < 3)
			fprintf(stderr, "group %d of %d (root %s): the passes say another class\n", g,
				a.ngroups, tir_op(ga->root->op)->name);
		CHECK(same_info(&own, ga->info, ga->n));
		/* plain (the one pass's word that every member is FULL in
		 * the domain's layout, which a small kernel takes without
		 * reading cls and via) is what the passes' cls and via say,
		 * and the passes alone never say it */
		bool all = true;
		for (int j = 0; j < ga->n; j++)
			all = all && own.cls[j] == TIR_FC_FULL && own.via[j] == -1;
		CHECK(!ga->info->plain || all);
		CHECK(!own.plain);
		nplain += ga->info->plain;
		for (int j = 0; ga->ids && j < ga->n; j++)
			CHECK(ga->ids[j] == ga->nodes[j]->id);
		for (int k = 0; ga->input_ids && k < ga->nin; k++)
			CHECK(ga->input_ids[k] == ga->inputs[k]->id);
		free(mem);
	}
	/* from a view of the needed nodes alone, added last first */
	struct tir_fview part;
	struct tir_plan d;
	CHECK(tir_fview_init(&part, nn) == 0);
	for (size_t i = nn; i-- > 0;)
		if (need[i])
			CHECK(tir_fview_add(&part, p->nodes[i]) == 0);
	CHECK(tir_fuse_view(p, &part, need, uses, target, &d) == 0);
	CHECK(d.ngroups == a.ngroups && !memcmp(d.interior, a.interior, nn) && !memcmp(d.dup, a.dup, nn) &&
	      !memcmp(d.keep, a.keep, sizeof *d.keep * nn) && !memcmp(d.copy, a.copy, sizeof *d.copy * nn));
	for (int g = 0; g < a.ngroups && g < d.ngroups; g++)
		CHECK(d.groups[g].n == a.groups[g].n && d.groups[g].nin == a.groups[g].nin &&
		      !memcmp(d.groups[g].nodes, a.groups[g].nodes, sizeof *d.groups[g].nodes * (size_t)d.groups[g].n) &&
		      same_info(d.groups[g].info, a.groups[g].info, d.groups[g].n));
	tir_plan_free(&d);
	tir_fview_free(&part);
	/* what the plan finished, made again from its groups alone */
	struct tir_plan c = a;
	c.interior = NULL;
	c.extra_uses = NULL;
	c.keep = c.copy = NULL;
	c.dup = NULL;
	CHECK(tir_plan_finish(p, need, uses, target, &c) == 0);
	CHECK(c.interior && !memcmp(c.interior, a.interior, nn));
	CHECK(c.dup && !memcmp(c.dup, a.dup, nn));
	CHECK(c.extra_uses && !memcmp(c.extra_uses, a.extra_uses, sizeof *c.extra_uses * nn));
	CHECK(c.keep && !memcmp(c.keep, a.keep, sizeof *c.keep * nn));
	CHECK(c.copy && !memcmp(c.copy, a.copy, sizeof *c.copy * nn));
	free(c.interior);
	tir_node_sparse_free(c.extra_uses, sizeof *c.extra_uses * (nn + 1));
	tir_node_sparse_free(c.keep, sizeof *c.keep * (nn + 1));
	tir_node_sparse_free(c.copy, sizeof *c.copy * (nn + 1));
	free(c.dup);
	tir_plan_free(&a);
	tir_plan_free(&b);
out:
	free(need);
	free(target);
	free(uses);
}

static void one(const char *dir, const char *name, const char *text, size_t len)
{
	(void)dir;
	struct tir_program *p = tir_program_new();
	if (tir_program_parse(p, name, text, len, 0) == 0) {
		struct tir_fview v;
		CHECK(tir_fview_make(p, &v) == 0);
		check_view(p, &v);
		check_plan(p, &v);
		tir_fview_free(&v);
	}
	tir_program_free(p);
}

static void every(const char *dir)
{
	CHECK(unit_each_program(dir, one));
}

/* n scalar statements as bench/statements.py writes them. */
static char *statements(int n)
{
	struct tir_str s = {0};
	unit_statements(&s, n);
	tir_str_addf(&s, "print y\n");
	return s.s;
}

/* The view's bytes per node, for a program of n statements; its types. */
static double view_bytes(int n, uint32_t *ntypes, int *ngroups)
{
	char *text = statements(n);
	struct tir_program *p = tir_program_new();
	double per = 0;
	CHECK(text && tir_program_parse(p, "statements", text, strlen(text), 0) == 0);
	struct tir_fview v;
	if (text && tir_fview_make(p, &v) == 0) {
		check_view(p, &v);
		int before = nplans;
		check_plan(p, &v);
		CHECK(nplans == before + 1);
		per = (double)(sizeof *v.n * v.nnodes + sizeof *v.edges * v.nedges + sizeof *v.types * v.ntypes) /
		      (double)v.nnodes;
		*ntypes = v.ntypes;
		/* one kernel: the whole chain */
		bool *need = calloc(p->nnodes + 1, 1), *target = calloc(p->nnodes + 1, 1);
		int32_t *uses = calloc(p->nnodes + 1, sizeof *uses);
		struct tir_plan plan;
		*ngroups = -1;
		if (need && target && uses) {
			need[p->nnodes - 1] = target[p->nnodes - 1] = true;
			uses[p->nnodes - 1] = 1;
			tir_need_walk(p, need, uses, NULL, NULL);
			if (tir_fuse_view(p, &v, need, uses, target, &plan) == 0) {
				*ngroups = plan.ngroups;
				CHECK(plan.ngroups == 1 && plan.groups[0].n == n + 1); /* x's cast too */
				/* the arrays by node id from one block of huge pages
				 * for the long program (32,000 nodes), each malloc'd
				 * for the short one (TIR_PAGES_MIN) */
				CHECK((plan.mem != NULL) == (n >= 20000));
				CHECK(!plan.mem || ((char *)plan.interior >= (char *)plan.mem &&
						    (char *)plan.interior < (char *)plan.mem + plan.memsize));
				tir_plan_free(&plan);
			}
		}
		free(need);
		free(target);
		free(uses);
		tir_fview_free(&v);
	}
	tir_program_free(p);
	free(text);
	return per;
}

/* Groups that take the arrays they grew in (fuse.c's TAKE_MIN, 1,024
 * members and inputs), one after another, and small ones between: each
 * group's members, inputs and ids are its own (check_plan), and the
 * kernels are the chains. */
static void big_groups(void)
{
	struct tir_str s = {0};
	const int len[4] = {1500, 3, 2000, 700};
	for (int c = 0; c < 4; c++) {
		tir_str_addf(&s, "a%d_0 = cast(0.%d, f32)\n", c, c + 1);
		for (int i = 1; i <= len[c]; i++)
			tir_str_addf(&s, "a%d_%d = tanh(a%d_%d * 0.5 + %d.25)\n", c, i, c, i - 1, i % 3);
		tir_str_addf(&s, "print a%d_%d\n", c, len[c]);
	}
	tir_str_addf(&s, "print a0_%d + a2_%d\n", len[0], len[2]);
	struct tir_program *p = tir_program_new();
	CHECK(s.s && tir_program_parse(p, "big_groups", s.s, s.n, 0) == 0);
	struct tir_fview v;
	if (s.s && tir_fview_make(p, &v) == 0) {
		int before = nplans;
		check_plan(p, &v);
		CHECK(nplans == before + 1);
		tir_fview_free(&v);
	}
	/* run, fused and not: the same values */
	char *out[2] = {NULL, NULL};
	for (int fuse = 0; fuse < 2; fuse++) {
		struct tir_exec *x = tir_exec_new(p);
		struct tir_err err = {0};
		struct tir_str o = {0};
		CHECK(x != NULL);
		if (!x)
			continue;
		tir_exec_set_fuse(x, fuse);
		CHECK(tir_exec_run(x, 0, NULL, 0, &err) == 0 && tir_exec_nresults(x) == 5);
		for (size_t i = 0; i < tir_exec_nresults(x); i++) {
			char *txt = tir_tensor_format(tir_exec_result(x, i), tir_exec_header(x, i), 9, false);
			tir_str_addf(&o, "%s", txt ? txt : "?");
			free(txt);
		}
		out[fuse] = o.s;
		tir_exec_free(x);
	}
	CHECK(out[0] && out[1] && !strcmp(out[0], out[1]));
	free(out[0]);
	free(out[1]);
	tir_program_free(p);
	free(s.s);
}

/* tir_node_pages: zeroed, from the pages given back of the same size
 * when there are (written before: zeroed again), calloc below 512 KiB */
static void node_pages(void)
{
	size_t n = (size_t)1 << 20;
	unsigned char *a = tir_node_pages(n);
	CHECK(a != NULL);
	if (!a)
		return;
	memset(a, 0xab, n);
	tir_node_pages_free(a, n);
	/* a is among those kept for this size (with any a plan gave back) */
	unsigned char *got[9] = {0};
	bool again = false, zero = true;
	for (int k = 0; k < 9; k++) {
		got[k] = tir_node_pages(n + 4096); /* (the same huge pages) */
		CHECK(got[k] != NULL);
		for (size_t i = 0; got[k] && i < n + 4096; i += 997)
			zero &= got[k][i] == 0;
		zero &= !got[k] || (got[k][n - 1] == 0 && got[k][n + 4095] == 0);
		again |= got[k] == a;
	}
	CHECK(again && zero);
	for (int k = 0; k < 9; k++)
		tir_node_pages_free(got[k], n + 4096);
	unsigned char *s = tir_node_pages(100), *b = tir_node_pages(3 * n);
	CHECK(s && b && s[99] == 0 && b[3 * n - 1] == 0 && b != a);
	tir_node_pages_free(s, 100);
	tir_node_pages_free(b, 3 * n);
	/* the caches' trim (an idle server's, a REPL's end) gives the kept
	 * pages back: the next block of a size given back is a fresh one */
	tir_node_pages_free(tir_node_pages(n), n);
	tir_mem_trim();
	bool dirty = true;
	void *f = tir_pages_take(n, &dirty);
	CHECK(f && !dirty);
	tir_pages_give(f, n);
	tir_pages_drop_kept();
}

int main(void)
{
	node_pages();
	big_groups();
	every("samples");
	every("tests/golden");
	every("bench");
	CHECK(nplans > 40);
	CHECK(nplain > 10); /* (groups elementwise all through are common) */
	CHECK(ngens > 3);   /* (so are programs of randn and arange) */
	uint32_t t1 = 0, t2 = 0;
	int g1 = 0, g2 = 0;
	double b1 = view_bytes(2000, &t1, &g1), b2 = view_bytes(20000, &t2, &g2);
	/* ~3.5 KiB of types over 2,000 statements (3,200 nodes), nothing
	 * over 20,000: 16 a node, 4 an operand (1.25 a node) */
	CHECK(b1 > 16 && b1 < 24 && b2 > 16 && b2 < b1 + 0.01);
	CHECK(t1 == t2 && t1 <= 4);
	CHECK(g1 == 1 && g2 == 1);
	return check_report("test_fview");
}
