/*
 * unit_plan.h — what the tests of one fused kernel share (test_small.c,
 * test_blocks.c): a program planned for its last node alone, the node a
 * target read once, as the fuser plans a run that prints it; and a
 * program run for one of its values, fused or not.
 */
#ifndef TIR_UNIT_PLAN_H
#define TIR_UNIT_PLAN_H

#include "engine/engine.h"
#include "fusion/fusion.h"
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct unit_plan {
	struct tir_program *p;
	const struct tir_node *root;   /* the program's last node */
	bool *need, *target;
	int32_t *uses;
	struct tir_plan plan;
	/* for tir_fused_prepare_at: the group's operands (in[k] NULL, read
	 * from the program, until a test points it at vals[k]) and its
	 * output, a test's to allocate; all released by unit_plan_free */
	const struct tir_tensor **in;
	struct tir_tensor *vals, out;
	int nin;
};

/* text (named name) parsed and planned into u, with room for its group's
 * operands; the parse and the plan
 * are checks.  returns: the plan's one group when it made one, rooted at
 * the last node, else NULL.  Free u with unit_plan_free either way. */
static inline const struct tir_group *unit_plan_last(struct unit_plan *u, const char *name, const char *text)
{
	memset(u, 0, sizeof *u);
	u->p = tir_program_new();
	CHECK(tir_program_parse(u->p, name, text, strlen(text), 0) == 0);
	size_t nn = u->p->nnodes;
	u->need = calloc(nn + 1, 1);
	u->target = calloc(nn + 1, 1);
	u->uses = calloc(nn + 1, sizeof *u->uses);
	if (!nn || !u->need || !u->target || !u->uses)
		return NULL;
	u->root = u->p->nodes[nn - 1];
	u->need[u->root->id] = u->target[u->root->id] = true;
	u->uses[u->root->id] = 1;
	tir_need_walk(u->p, u->need, u->uses, NULL, NULL);
	CHECK(tir_fuse(u->p, u->need, u->uses, u->target, &u->plan) == 0);
	CHECK(u->plan.ngroups == 1);
	if (u->plan.ngroups != 1 || u->plan.groups[0].root != u->root)
		return NULL;
	const struct tir_group *g = &u->plan.groups[0];
	u->in = calloc((size_t)g->nin + 1, sizeof *u->in);
	u->vals = calloc((size_t)g->nin + 1, sizeof *u->vals);
	u->nin = g->nin;
	return u->in && u->vals ? g : NULL;
}

static inline void unit_plan_free(struct unit_plan *u)
{
	for (int k = 0; u->vals && k < u->nin; k++)
		tir_tensor_release(&u->vals[k]);
	free(u->vals);
	free(u->in);
	tir_tensor_release(&u->out);
	tir_plan_free(&u->plan);
	free(u->need);
	free(u->target);
	free(u->uses);
	tir_program_free(u->p);
}

/* The value of name in text (a file named file) run fused or not, new in
 * out (release it); bind, when not NULL, sets the program's inputs
 * first.  returns: 0, else the parse's or the run's error (printed). */
static inline int unit_run_named(const char *file, const char *text, const char *name, bool fuse,
				 void (*bind)(struct tir_program *, struct tir_exec *), struct tir_tensor *out)
{
	struct tir_program *p = tir_program_new();
	struct tir_err err = {0};
	int rc = tir_program_parse(p, file, text, strlen(text), 0);
	struct tir_exec *x = NULL;
	if (!rc) {
		x = tir_exec_new(p);
		tir_exec_set_fuse(x, fuse);
		if (bind)
			bind(p, x);
		const char *names[] = {name};
		rc = tir_exec_run(x, 0, names, 1, &err);
	}
	if (!rc)
		tir_tensor_ref(out, tir_exec_named(x, 0));
	else
		fprintf(stderr, "%s: %s: %s\n", file, name, err.msg);
	tir_exec_free(x);
	tir_program_free(p);
	return rc;
}

#endif
