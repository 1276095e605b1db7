/*
 * batch.c — what a client sends for one realization: the ops the targets
 * need as canonical text, numbered so that the same computation on the
 * same shapes is the same text (and the same hash, which the server caches
 * it by) whatever the user named things; the values it starts from as
 * blobs named by their SHA-256.  The server never reads a file: `load` and
 * inputs are read here, and each of them is an `input` of the text.
 */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum role {
	R_NONE,     /* not needed */
	R_SCALAR,   /* a weak scalar: written inline where it is read */
	R_HELD,     /* the session holds it: an input bound to a key */
	R_BLOB,     /* an input, a load, a tensor literal: an input bound to a blob */
	R_OP        /* a line of its own */
};

void tir_batch_key(uint32_t id, char key[24])
{
	snprintf(key, 24, "v%u", id);
}

int tir_blob_chunks(const struct tir_tensor *t, char out[TIR_SHA_HEX + 1], unsigned char **list,
		    size_t *len, struct tir_err *err)
{
	struct tir_tensor c = {0};
	const struct tir_tensor *d = t;
	if (!tir_tensor_is_contiguous(t)) {
		if (tir_tensor_convert(t, t->dtype, &c, err))
			return -TIR_ENOMEM;
		d = &c;
	}
	/* the frame's bytes in three pieces: header, data, padding */
	unsigned char head[TIR_FRAME_HEAD_MAX];
	size_t data = (size_t)tir_tensor_numel(d) * tir_dtype_size(d->dtype);
	struct tir_frame_src f = {head, tir_frame_head(d, head), tir_tensor_data(d), data, (8 - data % 8) % 8};
	uint64_t fbytes = f.hlen + f.dlen + f.plen;
	size_t k = tir_chunk_count(fbytes), n = TIR_CHUNKS_HEAD + 32 * k;
	unsigned char *l = malloc(n);
	if (!l) {
		tir_tensor_release(&c);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	tir_chunk_list_head(fbytes, l);
	tir_chunk_hash_all(&f, (unsigned char (*)[32])(l + TIR_CHUNKS_HEAD), 0);
	tir_chunk_name(l, n, out);
	tir_tensor_release(&c);
	if (list) {
		*list = l;
		*len = n;
	} else {
		free(l);
	}
	return 0;
}

int tir_blob_name(const struct tir_tensor *t, char out[TIR_SHA_HEX + 1], struct tir_err *err)
{
	return tir_blob_chunks(t, out, NULL, NULL, err);
}

bool tir_batch_keepable(const struct tir_program *p, const struct tir_node *n)
{
	return n->op != TIR_OP_INPUT && !(n->op == TIR_OP_CONST && n->type.weak) &&
	       tir_place_kept_name(p, n);
}

/* The operand callback's context (tir_render_call's callback takes none). */
static _Thread_local const uint32_t *tnum_tls;

static void operand(const struct tir_program *p, const struct tir_node *n, struct tir_str *out)
{
	(void)p;
	if (n->op == TIR_OP_CONST && n->type.weak)
		tir_render_scalar(n, out);
	else
		tir_str_addf(out, "t%u", tnum_tls[n->id]);
}

/* The line of a call of several results: its RESULT nodes (the nodes
 * right after it, ir.h) bound by their numbers. */
static void results_line(const struct tir_program *p, const struct tir_node *n, const uint32_t *tnum,
			 struct tir_str *text)
{
	char tb[TIR_TYPE_STRLEN];
	for (int k = 1, nres = tir_node_nres(n); k <= nres; k++) {
		const struct tir_node *r = p->nodes[n->id + (uint32_t)k];
		TIR_ASSERT(r->op == TIR_OP_RESULT && r->in[0] == n && tir_result_index(r) == k - 1);
		tir_str_addf(text, "%st%u: %s", k > 1 ? ", " : "", tnum[r->id], tir_type_str(&r->type, tb, sizeof tb));
	}
	tir_str_add(text, " = ", 3);
	tir_render_call(p, n, operand, text);
	tir_str_add(text, "\n", 1);
}

/* The value a blob leaf starts from, as a local run would read it. */
static int leaf_value(const struct tir_exec *x, const struct tir_node *n, struct tir_tensor *v,
		      struct tir_err *err)
{
	if (n->op == TIR_OP_INPUT) {
		const struct tir_tensor *t = tir_exec_input_value(x, n->id);
		if (!t)
			return tir_errf(err, TIR_EDATA, &n->loc,
					"input '%s' has no value; give it with --input %s=FILE.npy", n->input_name,
					n->input_name);
		tir_tensor_ref(v, t);
		return 0;
	}
	if (n->op == TIR_OP_CONST) {
		int rc = tir_tensor_alloc(v, (enum tir_dtype)n->type.dtype, n->type.rank, n->type.shape, false, err);
		size_t bytes = (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
		if (!rc && bytes)
			memcpy(tir_tensor_data(v), n->data, bytes);
		return rc;
	}
	/* load: the file's errors as tir_node_eval in lib/exec/eval.c gives them */
	int rc = tir_file_load(n->attr[0].s, n->attr[1].set ? n->attr[1].s : NULL, v, err);
	if (!rc) {
		bool ok = v->dtype == n->type.dtype && v->rank == n->type.rank;
		for (int i = 0; ok && i < v->rank; i++)
			ok = v->shape[i] == n->type.shape[i];
		if (!ok) {
			tir_tensor_release(v);
			rc = tir_errf(err, TIR_EDATA, NULL, "%s changed since the program was checked", n->attr[0].s);
		}
	}
	if (rc) {
		if (!err->loc.src)
			err->loc = n->loc;
		if (strncmp(err->msg, "load", 4)) {
			char msg[sizeof err->msg];
			size_t m = strnlen(err->msg, sizeof msg - 7);
			memcpy(msg, "load: ", 6);
			memcpy(msg + 6, err->msg, m);
			msg[6 + m] = 0;
			memcpy(err->msg, msg, sizeof msg);
		}
	}
	return rc;
}

static int add_line(struct tir_batch *b, size_t *cap, const struct tir_node *n)
{
	if (tir_grow((void **)&b->line_node, cap, b->nlines + 1, sizeof *b->line_node))
		return -1;
	b->line_node[b->nlines++] = n;
	return 0;
}

void tir_batch_memo_free(struct tir_batch_memo *m)
{
	for (size_t i = 0; i < m->n; i++) {
		tir_tensor_release(&m->e[i].value);
		free(m->e[i].list);
	}
	free(m->e);
	memset(m, 0, sizeof *m);
}

/* The same view of the same buffer. */
static bool same_value(const struct tir_tensor *a, const struct tir_tensor *b)
{
	if (a->buf != b->buf || a->dtype != b->dtype || a->rank != b->rank || a->offset != b->offset)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i] || a->strides[i] != b->strides[i])
			return false;
	return true;
}

/* The blob name of input node n's value v, from memo when it is there;
 * with list, its chunk list too (a copy: free it). */
static int input_name(const struct tir_node *n, const struct tir_tensor *v, struct tir_batch_memo *memo,
		      char out[TIR_SHA_HEX + 1], unsigned char **list, size_t *len, struct tir_err *err)
{
	struct tir_batch_memo_entry *e = memo && n->id < memo->n ? &memo->e[n->id] : NULL;
	if (e && e->value.buf && same_value(&e->value, v)) {
		memcpy(out, e->name, TIR_SHA_HEX + 1);
		if (list) {
			if (!(*list = malloc(e->len)))
				return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			memcpy(*list, e->list, e->len);
			*len = e->len;
		}
		return 0;
	}
	unsigned char *l = NULL;
	size_t ll = 0;
	int rc = tir_blob_chunks(v, out, &l, &ll, err);
	if (rc)
		return rc;
	if (list) {
		*list = l;
		*len = ll;
	}
	if (!memo) {
		if (!list)
			free(l);
		return 0;
	}
	size_t old = memo->n;
	if (!e && tir_grow((void **)&memo->e, &memo->n, (size_t)n->id + 1, sizeof *memo->e)) {
		if (!list)
			free(l);
		return 0; /* no room: hashed again next time */
	}
	memset(memo->e + old, 0, (memo->n - old) * sizeof *memo->e);
	e = &memo->e[n->id];
	tir_tensor_release(&e->value);
	free(e->list);
	e->list = NULL;
	e->len = 0;
	tir_tensor_ref(&e->value, v);
	memcpy(e->name, out, TIR_SHA_HEX + 1);
	if (!list) {
		e->list = l;
		e->len = ll;
	} else if ((e->list = malloc(ll))) {
		memcpy(e->list, l, ll);
		e->len = ll;
	} else {
		tir_tensor_release(&e->value); /* no room: hashed again next time */
	}
	return 0;
}

int tir_batch_memo_name(struct tir_batch_memo *memo, const struct tir_node *n, const struct tir_tensor *v,
			char out[TIR_SHA_HEX + 1], struct tir_err *err)
{
	return input_name(n, v, memo, out, NULL, NULL, err);
}

/* What a batch reads of node i, as the needs-walk gets to it. */
struct batch_leaves {
	const struct tir_program *p;
	const bool *held;
	size_t nheld;
	const struct tir_tensor *given;
	size_t ngiven;
};

/* Node i's role in a batch that needs it (a weak scalar asked for is a
 * line of its own: the caller's). */
static enum role role_of(const struct batch_leaves *l, size_t i)
{
	const struct tir_node *n = l->p->nodes[i];
	if (n->op == TIR_OP_CONST && n->type.weak)
		return R_SCALAR;
	if (l->held && i < l->nheld && l->held[i])
		return R_HELD;
	if (n->op == TIR_OP_INPUT || n->op == TIR_OP_LOAD || n->op == TIR_OP_CONST ||
	    (l->given && i < l->ngiven && l->given[i].buf))
		return R_BLOB;
	return R_OP;
}

/* The needs-walk's held: a node the batch reads, not what it reads. */
static bool is_leaf(const void *ctx, uint32_t id)
{
	return role_of(ctx, id) != R_OP;
}

int tir_batch_build(struct tir_batch *b, const struct tir_exec *x, struct tir_node *const *targets,
		    size_t ntargets, const bool *held, size_t nheld, struct tir_batch_memo *memo,
		    struct tir_err *err)
{
	return tir_batch_build_on(b, x, targets, ntargets, NULL, held, nheld, NULL, 0, memo, err);
}

int tir_batch_build_on(struct tir_batch *b, const struct tir_exec *x, struct tir_node *const *targets,
		       size_t ntargets, const bool *stay, const bool *held, size_t nheld,
		       const struct tir_tensor *given, size_t ngiven, struct tir_batch_memo *memo,
		       struct tir_err *err)
{
	const struct tir_program *p = tir_exec_program(x);
	size_t nn = p->nnodes;
	memset(b, 0, sizeof *b);
	unsigned char *role = calloc(nn + 1, 1);
	bool *target = calloc(nn + 1, sizeof *target), *stays = calloc(nn + 1, sizeof *stays);
	bool *need = malloc((nn + 1) * sizeof *need);
	uint32_t *tnum = malloc((nn + 1) * sizeof *tnum);
	struct tir_str text = {0};
	size_t caplines = 0;
	int rc = 0;
	if (!role || !target || !tnum || !stays || !need)
		goto oom;
	/* what the targets need, from the last node back: a leaf stops the walk */
	for (size_t i = 0; i < ntargets; i++)
		target[targets[i]->id] = true;
	for (size_t i = 0; stay && i < ntargets; i++)
		stays[targets[i]->id] = stay[i];
	struct batch_leaves lv = {p, held, nheld, given, ngiven};
	memcpy(need, target, nn * sizeof *need);
	tir_need_walk(p, need, NULL, is_leaf, &lv);
	for (size_t i = 0; i < nn; i++) {
		enum role r = need[i] ? role_of(&lv, i) : R_NONE;
		role[i] = r == R_SCALAR && target[i] ? R_OP : r; /* a weak scalar asked for: a line */
	}
	/* a call of several results binds them all on its line (results_line) */
	for (size_t i = 0; i < nn; i++)
		for (int k = 1; role[i] == R_OP && tir_op(p->nodes[i]->op)->nres > 1 && k <= tir_node_nres(p->nodes[i]); k++)
			role[i + (size_t)k] = R_OP;
	/* numbers in order of appearance: the inputs first, then the lines */
	uint32_t next = 0;
	for (size_t i = 0; i < nn; i++) {
		tnum[i] = UINT32_MAX;
		if (role[i] == R_HELD || role[i] == R_BLOB)
			tnum[i] = next++;
	}
	b->ninputs = next;
	for (size_t i = 0; i < nn; i++)
		if (role[i] == R_OP)
			tnum[i] = next++;
	b->nvars = next;
	b->inputs = calloc(b->ninputs + 1, sizeof *b->inputs);
	b->var_node = calloc(b->nvars + 1, sizeof *b->var_node);
	b->keep = calloc(b->nvars + 1, sizeof *b->keep);
	if (!b->inputs || !b->var_node || !b->keep)
		goto oom;
	for (size_t i = 0; i < nn; i++)
		if (tnum[i] != UINT32_MAX)
			b->var_node[tnum[i]] = p->nodes[i];

	char tb[TIR_TYPE_STRLEN];
	bool keeping = tir_exec_keeping(x);
	for (size_t i = 0; i < nn; i++) {
		if (role[i] != R_HELD && role[i] != R_BLOB)
			continue;
		const struct tir_node *n = p->nodes[i];
		struct tir_batch_input *in = &b->inputs[tnum[i]];
		in->t = tnum[i];
		in->node = n;
		if (role[i] == R_HELD) {
			tir_batch_key(n->id, in->key);
		} else {
			bool moved = given && i < ngiven && given[i].buf;
			if (moved)
				tir_tensor_ref(&in->value, &given[i]);
			else if ((rc = leaf_value(x, n, &in->value, err)))
				goto fail;
			rc = n->op == TIR_OP_INPUT && !moved
				     ? input_name(n, &in->value, memo, in->blob, &in->list, &in->len, err)
				     : tir_blob_chunks(&in->value, in->blob, &in->list, &in->len, err);
			if (rc)
				goto fail;
			if ((keeping && tir_batch_keepable(p, n)) || stays[i])
				b->keep[b->nkeep++] = (struct tir_batch_keep){tnum[i], n->id};
		}
		tir_str_addf(&text, "input t%u: %s\n", tnum[i], tir_type_str(&n->type, tb, sizeof tb));
		if (add_line(b, &caplines, n))
			goto oom;
	}
	tnum_tls = tnum;
	for (size_t i = 0; i < nn; i++) {
		if (role[i] != R_OP)
			continue;
		const struct tir_node *n = p->nodes[i];
		if (n->op == TIR_OP_RESULT || tir_op(n->op)->nres > 1) {
			/* `tA: T, tB: T = qr(t2)`, written at the call, read by its results */
			if (n->op != TIR_OP_RESULT) {
				results_line(p, n, tnum, &text);
				if (add_line(b, &caplines, n))
					goto oom;
			} else if ((keeping && tir_batch_keepable(p, n)) || stays[i]) {
				b->keep[b->nkeep++] = (struct tir_batch_keep){tnum[i], n->id};
			}
			continue;
		}
		tir_str_addf(&text, "t%u: %s = ", tnum[i], tir_type_str(&n->type, tb, sizeof tb));
		if (n->op == TIR_OP_CONST)
			tir_render_scalar(n, &text);
		else if (n->op == TIR_OP_TO) /* its operand is here: the server's own device */
			tir_str_addf(&text, "to(t%u, \"cpu\")", tnum[n->in[0]->id]);
		else
			tir_render_call(p, n, operand, &text);
		tir_str_add(&text, "\n", 1);
		if ((keeping && tir_batch_keepable(p, n)) || stays[i])
			b->keep[b->nkeep++] = (struct tir_batch_keep){tnum[i], n->id};
		if (add_line(b, &caplines, n))
			goto oom;
	}
	tnum_tls = NULL;
	size_t nprint = 0;
	for (size_t i = 0; i < ntargets; i++)
		nprint += !stay || !stay[i];
	/* a batch whose values all stay prints nothing: its keeps are made */
	if (nprint) {
		tir_str_add(&text, "print ", 6);
		for (size_t i = 0, k = 0; i < ntargets; i++)
			if (!stay || !stay[i])
				tir_str_addf(&text, "%st%u", k++ ? ", " : "", tnum[targets[i]->id]);
		tir_str_add(&text, "\n", 1);
		if (add_line(b, &caplines, NULL))
			goto oom;
	}
	if (text.oom)
		goto oom;
	b->text = text.s;
	b->len = text.n;
	tir_sha256_hex(b->text, b->len, b->graph);
	free(role);
	free(target);
	free(stays);
	free(need);
	free(tnum);
	return 0;
oom:
	rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
fail:
	tnum_tls = NULL;
	tir_str_free(&text);
	free(role);
	free(target);
	free(stays);
	free(need);
	free(tnum);
	tir_batch_free(b);
	return rc;
}

void tir_batch_free(struct tir_batch *b)
{
	for (size_t i = 0; b->inputs && i < b->ninputs; i++) {
		tir_tensor_release(&b->inputs[i].value);
		free(b->inputs[i].list);
	}
	free(b->inputs);
	free(b->keep);
	free(b->line_node);
	free(b->var_node);
	free(b->text);
	memset(b, 0, sizeof *b);
}

const struct tir_node *tir_batch_line_node(const struct tir_batch *b, long line)
{
	return line >= 1 && (size_t)line <= b->nlines ? b->line_node[line - 1] : NULL;
}
