/*
 * fuse.c — the fuser: partitions the nodes a run needs into kernels.
 *
 * A group grows backwards from its root (the last node of a chain or DAG)
 * through the operands it can absorb, visiting candidates from the highest
 * node id down, so that when one is considered every reader it has inside
 * the group has been seen.  Legality is one small predicate, in the spirit
 * of ggml's ggml_can_fuse: an operand joins when it is a fusable
 * elementwise op of the group's dtype and shape, all its readers are in the
 * group, and it is not printed or saved — so an interior value is never
 * materialized and nothing is computed twice.  Everything else is an
 * input the group reads from memory.  Conservative by design: only what
 * is provably the same computation is fused.
 */
#include "fusion.h"

#include <stdlib.h>
#include <string.h>

bool tir_fusable(const struct tir_node *n)
{
	switch (n->op) {
	case TIR_OP_NEG: case TIR_OP_ABS: case TIR_OP_EXP: case TIR_OP_LOG:
	case TIR_OP_SQRT: case TIR_OP_RSQRT: case TIR_OP_RECIP: case TIR_OP_SIN:
	case TIR_OP_COS: case TIR_OP_TANH: case TIR_OP_SIGMOID: case TIR_OP_RELU:
	case TIR_OP_GELU: case TIR_OP_SILU: case TIR_OP_ERF: case TIR_OP_FLOOR:
	case TIR_OP_CEIL: case TIR_OP_ROUND: case TIR_OP_SIGN:
	case TIR_OP_ADD: case TIR_OP_SUB: case TIR_OP_MUL: case TIR_OP_DIV:
	case TIR_OP_POW: case TIR_OP_MAXIMUM: case TIR_OP_MINIMUM: case TIR_OP_MOD:
		break;
	default:
		return false;
	}
	/* float in, float out: the dtype it computes in is its result's */
	return (n->type.dtype == TIR_DTYPE_F32 || n->type.dtype == TIR_DTYPE_F64) &&
	       tir_compute_dtype(n) == n->type.dtype && !n->type.weak;
}

static bool same_shape(const struct tir_type *a, const struct tir_type *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

/* Why operand o cannot join a group rooted at r, or NULL if it can. */
static const char *why_not(const struct tir_node *r, const struct tir_node *o, int64_t seen,
			   const int64_t *uses, const bool *target, const bool *taken)
{
	if (o->op == TIR_OP_CONST || o->op == TIR_OP_INPUT)
		return "a leaf";
	if (!tir_fusable(o))
		return tir_op(o->op)->kind == TIR_KIND_ELEMWISE ? "an operand's dtype does not fuse"
								 : "an operand is not elementwise";
	if (o->type.dtype != r->type.dtype)
		return "an operand has another dtype";
	if (!same_shape(&o->type, &r->type))
		return "an operand is broadcast (computed once, not per element)";
	if (target[o->id])
		return "an operand is printed or saved";
	if (seen != uses[o->id])
		return "an operand is read by another kernel too";
	if (taken[o->id])
		return "an operand is in another kernel";
	return NULL;
}

/* Whether matmul o can be the head of the group rooted at r: read by the
 * group alone, of the root's float dtype and shape, operands of rank 2 up. */
static bool can_head(const struct tir_node *r, const struct tir_node *o, int64_t seen,
		     const int64_t *uses, const bool *target, const bool *taken)
{
	return o->op == TIR_OP_MATMUL && seen == uses[o->id] && !target[o->id] && !taken[o->id] &&
	       o->type.dtype == r->type.dtype && same_shape(&o->type, &r->type) &&
	       o->in[0]->type.rank >= 2 && o->in[1]->type.rank >= 2;
}

static int cmp_id(const void *a, const void *b)
{
	const struct tir_node *x = *(struct tir_node *const *)a, *y = *(struct tir_node *const *)b;
	return (x->id > y->id) - (x->id < y->id);
}

int tir_fuse(const struct tir_program *p, const bool *need, const int64_t *uses,
	     const bool *target, struct tir_plan *plan)
{
	memset(plan, 0, sizeof *plan);
	size_t nn = p->nnodes;
	plan->nnodes = nn;
	plan->group_of = malloc(sizeof *plan->group_of * (nn + 1));
	plan->interior = calloc(nn + 1, sizeof *plan->interior);
	plan->need = malloc(nn + 1);
	if (plan->need)
		memcpy(plan->need, need, nn);
	bool *taken = calloc(nn + 1, sizeof *taken);
	int64_t *seen = calloc(nn + 1, sizeof *seen); /* edges from the group's members */
	struct tir_node **members = malloc(sizeof *members * (nn + 1));
	struct tir_node **ins = malloc(sizeof *ins * (nn + 1));
	size_t capg = 0;
	int rc = 0;
	if (!plan->group_of || !plan->interior || !plan->need || !taken || !seen || !members || !ins) {
		rc = -TIR_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nn; i++)
		plan->group_of[i] = -1;
	/* roots from the last node back, so a chain's end heads its group */
	for (size_t i = nn; i-- > 0;) {
		struct tir_node *r = p->nodes[i];
		if (!need[i] || taken[i] || !tir_fusable(r))
			continue;
		taken[i] = true;
		int nm = 0, ni = 0;
		const char *closed = "its operands are all leaves";
		bool stopped = false;
		size_t lo = i;
		int pending = 0; /* candidates seen, not yet visited */
		members[nm++] = r;
		for (int k = 0; k < r->nin; k++) {
			pending += seen[r->in[k]->id]++ == 0;
			lo = r->in[k]->id < lo ? r->in[k]->id : lo;
		}
		struct tir_node *head = NULL;
		for (size_t id = i; id-- > lo;) {
			if (!seen[id])
				continue;
			struct tir_node *o = p->nodes[id];
			pending--;
			if (!head && can_head(r, o, seen[id], uses, target, taken)) {
				/* the matmul makes the group's output; the group
				 * finishes each block of it (its epilogue) */
				head = o;
				taken[id] = true;
				plan->interior[id] = true;
				ins[ni++] = o;
				continue;
			}
			const char *why = why_not(r, o, seen[id], uses, target, taken);
			if (!why) {
				/* a kernel stays within TIR_FUSE_MAX_OPS ops and reads
				 * at most TIR_FUSE_MAX_INPUTS values */
				int fresh = 0;
				for (int k = 0; k < o->nin; k++)
					fresh += seen[o->in[k]->id] == 0;
				if (nm >= TIR_FUSE_MAX_OPS)
					why = "the kernel is full (" TIR_STR(TIR_FUSE_MAX_OPS) " ops)";
				else if (ni + pending + fresh > TIR_FUSE_MAX_INPUTS)
					why = "the kernel reads " TIR_STR(TIR_FUSE_MAX_INPUTS) " values already";
			}
			if (!why) {
				taken[id] = true;
				plan->interior[id] = true;
				members[nm++] = o;
				for (int k = 0; k < o->nin; k++) {
					pending += seen[o->in[k]->id]++ == 0;
					lo = o->in[k]->id < lo ? o->in[k]->id : lo;
				}
				continue;
			}
			if (strcmp(why, "a leaf") != 0 && !stopped) {
				closed = why; /* the reason nearest the root */
				stopped = true;
			}
			ins[ni++] = o;
		}
		for (size_t id = lo; id < i; id++)
			seen[id] = 0;
		if (nm == 1 && !head) {
			/* nothing joined: the reference kernel runs it */
			continue;
		}
		qsort(members, (size_t)nm, sizeof *members, cmp_id);
		qsort(ins, (size_t)ni, sizeof *ins, cmp_id);
		if (tir_grow((void **)&plan->groups, &capg, (size_t)plan->ngroups + 1, sizeof *plan->groups)) {
			rc = -TIR_ENOMEM;
			goto out;
		}
		struct tir_group *g = &plan->groups[plan->ngroups];
		g->root = r;
		g->n = nm;
		g->nin = ni;
		g->closed = closed;
		g->head = head;
		g->nodes = tir_arena_alloc(&plan->arena, sizeof *g->nodes * (size_t)nm);
		g->inputs = tir_arena_alloc(&plan->arena, sizeof *g->inputs * (size_t)(ni ? ni : 1));
		if (!g->nodes || !g->inputs) {
			rc = -TIR_ENOMEM;
			goto out;
		}
		memcpy(g->nodes, members, sizeof *members * (size_t)nm);
		memcpy(g->inputs, ins, sizeof *ins * (size_t)ni);
		plan->group_of[i] = plan->ngroups++;
	}
out:
	free(taken);
	free(seen);
	free(members);
	free(ins);
	if (rc)
		tir_plan_free(plan);
	return rc;
}

void tir_plan_free(struct tir_plan *plan)
{
	free(plan->groups);
	free(plan->group_of);
	free(plan->interior);
	free(plan->need);
	tir_arena_free(&plan->arena);
	memset(plan, 0, sizeof *plan);
}

char *tir_plan_explain(const struct tir_program *p, const struct tir_plan *plan)
{
	struct tir_str out = {0};
	char tb[TIR_TYPE_STRLEN];
	int k = 0;
	for (size_t i = 0; i < plan->nnodes; i++) {
		const struct tir_node *n = p->nodes[i];
		if (!plan->need[i] || plan->interior[i] || n->op == TIR_OP_CONST || n->op == TIR_OP_INPUT)
			continue;
		const char *name = tir_node_current_name(p, n);
		int g = plan->group_of[i];
		tir_str_addf(&out, "kernel %d: ", ++k);
		if (g >= 0) {
			const struct tir_group *gr = &plan->groups[g];
			tir_str_addf(&out, "%sfused %d ops [", gr->head ? "matmul + " : "", gr->n);
			for (int j = 0; j < gr->n; j++)
				tir_str_addf(&out, "%s%s", j ? " " : "", tir_op(gr->nodes[j]->op)->name);
			tir_str_addf(&out, "] -> %s %s, reads %d; closed: %s\n", name ? name : "_",
				     tir_type_str(&n->type, tb, sizeof tb), gr->nin, gr->closed);
		} else {
			tir_str_addf(&out, "%s -> %s %s\n", tir_op(n->op)->name, name ? name : "_",
				     tir_type_str(&n->type, tb, sizeof tb));
		}
	}
	return out.oom ? (tir_str_free(&out), NULL) : out.s;
}
