/*
 * print.c — the canonical printer and the error renderer.  The canonical
 * form is tir text that parses back to the same graph: calls, not infix
 * sugar; tensor operands and required attributes by position, other
 * attributes by keyword and only when they differ from the default; floats
 * with the fewest digits that read back exactly.  Results are printed by
 * lib/exec, not here.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fewest significant digits that read back to v (as a float when
 * single), always with a '.' or an exponent so it reads as a float. */
static void render_real(double v, bool single, struct tir_str *out)
{
	if (isnan(v)) { /* the sign too, so the text reads back to the same bits */
		tir_str_add(out, signbit(v) ? "-nan" : "nan", signbit(v) ? 4 : 3);
		return;
	}
	if (isinf(v)) {
		tir_str_add(out, v < 0 ? "-inf" : "inf", v < 0 ? 4 : 3);
		return;
	}
	char buf[40];
	for (int prec = single ? 6 : 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".en"))
		strcat(buf, ".0");
	tir_str_add(out, buf, strlen(buf));
}

void tir_render_float(double v, struct tir_str *out)
{
	render_real(v, false, out);
}

static void render_ints(const int64_t *v, int n, struct tir_str *out)
{
	tir_str_add(out, "[", 1);
	for (int i = 0; i < n; i++)
		tir_str_addf(out, "%s%lld", i ? ", " : "", (long long)v[i]);
	tir_str_add(out, "]", 1);
}

static void render_string(const char *s, struct tir_str *out)
{
	tir_str_add(out, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			tir_str_add(out, "\\", 1);
		if (*s == '{' || *s == '}') /* a brace is written twice (one alone interpolates) */
			tir_str_add(out, s, 1);
		if (*s == '\n')
			tir_str_add(out, "\\n", 2);
		else if (*s == '\t')
			tir_str_add(out, "\\t", 2);
		else
			tir_str_add(out, s, 1);
	}
	tir_str_add(out, "\"", 1);
}

void tir_render_attr(const struct tir_param *prm, const struct tir_attr *a, struct tir_str *out)
{
	switch (prm->kind) {
	case TIR_ATTR_INT:
		tir_str_addf(out, "%lld", (long long)a->i);
		break;
	case TIR_ATTR_FLOAT:
	case TIR_ATTR_NUM:
		if (a->is_int)
			tir_str_addf(out, "%lld", (long long)a->i);
		else
			tir_render_float(a->f, out);
		break;
	case TIR_ATTR_BOOL:
		tir_str_addf(out, "%s", a->i ? "true" : "false");
		break;
	case TIR_ATTR_DTYPE:
		tir_str_addf(out, "%s", tir_dtype_name((enum tir_dtype)a->i));
		break;
	case TIR_ATTR_SHAPE:
	case TIR_ATTR_AXES:
		if (a->is_list)
			render_ints(a->v, a->n, out);
		else
			tir_str_addf(out, "%lld", (long long)(a->v ? a->v[0] : a->i));
		break;
	case TIR_ATTR_PAIR:
		if (a->is_list || a->v[0] != a->v[1])
			render_ints(a->v, 2, out);
		else
			tir_str_addf(out, "%lld", (long long)a->v[0]);
		break;
	case TIR_ATTR_PADS:
		tir_str_add(out, "[", 1);
		for (int i = 0; i < a->n / 2; i++) {
			tir_str_add(out, i ? ", " : "", i ? 2 : 0);
			render_ints(a->v + 2 * i, 2, out);
		}
		tir_str_add(out, "]", 1);
		break;
	case TIR_ATTR_STR: /* as written: a load path made relative to the program's folder keeps its text */
		render_string(a->ss ? a->ss[0] : a->s, out);
		break;
	case TIR_ATTR_STRS:
		tir_str_add(out, "[", 1);
		for (int i = 0; i < a->n; i++) {
			tir_str_add(out, i ? ", " : "", i ? 2 : 0);
			render_string(a->ss[i], out);
		}
		tir_str_add(out, "]", 1);
		break;
	case TIR_ATTR_WORD:
		tir_str_addf(out, "%s", a->s);
		break;
	default:
		TIR_ASSERT(!"attribute kind");
	}
}

static bool attr_equal(const struct tir_param *prm, const struct tir_attr *a, const struct tir_attr *b)
{
	if (a->set != b->set)
		return false;
	switch (prm->kind) {
	case TIR_ATTR_FLOAT:
	case TIR_ATTR_NUM:
		return a->is_int == b->is_int && (a->is_int ? a->i == b->i : a->f == b->f);
	case TIR_ATTR_PAIR:
		return !a->is_list && a->v[0] == b->v[0] && a->v[1] == b->v[1];
	case TIR_ATTR_STR:
	case TIR_ATTR_WORD:
		return !strcmp(a->s, b->s);
	case TIR_ATTR_SHAPE:
	case TIR_ATTR_AXES:
	case TIR_ATTR_PADS:
	case TIR_ATTR_STRS:
		return false; /* no defaults of these kinds */
	default:
		return a->i == b->i;
	}
}

/* A zero-size literal keeps its shape: [[], []] is f32[2, 0].  Its text
 * is as long as the literal it came from. */
static void render_empty(const struct tir_ntype *t, int d, struct tir_str *out)
{
	tir_str_add(out, "[", 1);
	for (int64_t i = 0; d + 1 < t->rank && i < t->shape[d]; i++) {
		if (i)
			tir_str_add(out, ", ", 2);
		render_empty(t, d + 1, out);
	}
	tir_str_add(out, "]", 1);
}

/* A tensor literal's elements as nested lists. */
static void render_literal(const struct tir_node *n, struct tir_str *out)
{
	const struct tir_ntype *t = &n->type;
	int64_t numel = tir_type_numel(t);
	int64_t idx[TIR_MAX_RANK] = {0};
	if (t->rank == 0) { /* not made by the parser, but printable */
		tir_str_add(out, "[]", 2);
		return;
	}
	if (numel == 0) {
		render_empty(t, 0, out);
		return;
	}
	for (int d = 0; d < t->rank; d++)
		tir_str_add(out, "[", 1);
	for (int64_t i = 0; i < numel; i++) {
		switch (t->dtype) {
		case TIR_DTYPE_F32: render_real(((const float *)n->data)[i], true, out); break;
		case TIR_DTYPE_F64: render_real(((const double *)n->data)[i], false, out); break;
		case TIR_DTYPE_I64: tir_str_addf(out, "%lld", (long long)((const int64_t *)n->data)[i]); break;
		case TIR_DTYPE_I32: tir_str_addf(out, "%d", ((const int32_t *)n->data)[i]); break;
		case TIR_DTYPE_BOOL: tir_str_addf(out, "%s", ((const uint8_t *)n->data)[i] ? "true" : "false"); break;
		}
		/* close the axes that wrap, open them again */
		int d = t->rank - 1;
		while (d >= 0 && ++idx[d] == t->shape[d]) {
			idx[d] = 0;
			tir_str_add(out, "]", 1);
			d--;
		}
		if (d >= 0) {
			tir_str_add(out, ", ", 2);
			for (int k = d + 1; k < t->rank; k++)
				tir_str_add(out, "[", 1);
		}
	}
}

void tir_render_scalar(const struct tir_node *n, struct tir_str *out)
{
	switch (n->type.dtype) {
	case TIR_DTYPE_BOOL: tir_str_addf(out, "%s", n->ival ? "true" : "false"); break;
	case TIR_DTYPE_I32:
	case TIR_DTYPE_I64: tir_str_addf(out, "%lld", (long long)n->ival); break;
	default: tir_render_float(n->fval, out); break;
	}
}

/* name(operands, attributes) with names for the operands (by name_of). */
static void render_call(const struct tir_program *p, const struct tir_node *n,
			void (*operand)(const struct tir_program *, const struct tir_node *, struct tir_str *),
			struct tir_str *out)
{
	const struct tir_opdef *d = tir_op(n->op);
	tir_str_addf(out, "%s(", d->name);
	bool positional = true, first = true;
	int k = 0;
	for (int pi = 0; pi < d->nparams; pi++) {
		const struct tir_param *prm = &d->params[pi];
		if (prm->list) {
			/* the last parameter: the operands written one by one */
			bool rest = pi == d->nparams - 1 && n->nin > 0;
			if (!first)
				tir_str_add(out, ", ", 2);
			if (!rest)
				tir_str_add(out, "[", 1);
			for (int j = 0; j < n->nin; j++) {
				if (j)
					tir_str_add(out, ", ", 2);
				operand(p, n->in[k++], out);
			}
			if (!rest)
				tir_str_add(out, "]", 1);
			first = false;
			continue;
		}
		if (prm->tensor) {
			const struct tir_node *x = n->in[k++];
			if (!x) {
				positional = false;
				continue;
			}
			if (!first)
				tir_str_add(out, ", ", 2);
			if (!positional)
				tir_str_addf(out, "%s=", prm->name);
			operand(p, x, out);
			first = false;
			continue;
		}
		int ai = d->attr_of_param[pi];
		const struct tir_attr *a = &n->attr[ai];
		if (!a->set || (prm->deflt && attr_equal(prm, a, &d->defaults[ai]))) {
			positional = false;
			continue;
		}
		bool required = !prm->deflt && !prm->optional;
		if (!first)
			tir_str_add(out, ", ", 2);
		if (!positional || !required)
			tir_str_addf(out, "%s=", prm->name);
		if (!required)
			positional = false;
		tir_render_attr(prm, a, out);
		first = false;
	}
	tir_str_add(out, ")", 1);
}

void tir_render_call(const struct tir_program *p, const struct tir_node *n,
		     void (*operand)(const struct tir_program *, const struct tir_node *, struct tir_str *),
		     struct tir_str *out)
{
	render_call(p, n, operand, out);
}

void tir_render_expr(const struct tir_program *p, const struct tir_node *n, struct tir_str *out)
{
	const char *name = tir_node_current_name(p, n);
	if (name) {
		tir_str_add(out, name, strlen(name));
		return;
	}
	if (n->op == TIR_OP_INPUT) {
		tir_str_add(out, n->input_name, strlen(n->input_name));
	} else if (n->op == TIR_OP_CONST) {
		if (n->type.weak)
			tir_render_scalar(n, out);
		else
			render_literal(n, out);
	} else {
		render_call(p, n, tir_render_expr, out);
	}
}

/* ---- the whole program, flattened ---- */

struct fmt_state {
	const struct tir_program *p;
	const char **tmp;        /* per node: its temporary name, if it has one */
	uint32_t next_tmp;
};

/* the operand callback's context (render_call's callback takes none) */
static _Thread_local struct fmt_state *fmt_tls;

static void fmt_operand(const struct tir_program *p, const struct tir_node *n, struct tir_str *out)
{
	const char *t = fmt_tls->tmp[n->id];
	if (t) {
		tir_str_add(out, t, strlen(t));
		return;
	}
	tir_render_expr(p, n, out);
}

/* A fresh name no binding of the program uses. */
static const char *fresh_name(struct fmt_state *st, char *buf, size_t n)
{
	for (;;) {
		snprintf(buf, n, "_t%u", ++st->next_tmp);
		if (!tir_program_lookup(st->p, buf, strlen(buf)))
			return buf;
	}
}

/* `q: T, r: T = qr(a)` for the statements s[0 .. s->nres), which bind
 * the results of one call. */
static void format_results(const struct tir_program *p, const struct tir_stmt *s, struct tir_str *out)
{
	char tb[TIR_TYPE_STRLEN];
	for (int i = 0; i < s->nres; i++)
		tir_str_addf(out, "%s%s: %s", i ? ", " : "", s[i].name, tir_type_str(&s[i].node->type, tb, sizeof tb));
	tir_str_add(out, " = ", 3);
	const struct tir_node *call = s->node->in[0];
	render_call(p, call, fmt_operand, out);
	if (p->pass.note)
		p->pass.note(p->pass.ud, call, out);
	tir_str_add(out, "\n", 1);
}

char *tir_program_format(const struct tir_program *p)
{
	struct tir_str out = {0};
	struct fmt_state st = {.p = p};
	st.tmp = calloc(p->nnodes + 1, sizeof *st.tmp);
	char **owned = calloc(p->nnodes + 1, sizeof *owned);
	if (!st.tmp || !owned) {
		free(st.tmp);
		free(owned);
		return NULL;
	}
	fmt_tls = &st;
	char tb[TIR_TYPE_STRLEN];
	/* The environment while printing must equal the program's at each
	 * statement, so names resolve the same: bindings are replayed. */
	struct tir_program *mp = (struct tir_program *)p;
	struct tir_node **saved = malloc(sizeof *saved * (p->nbind ? p->nbind : 1));
	if (!saved) {
		free(st.tmp);
		free(owned);
		return NULL;
	}
	for (size_t i = 0; i < p->nbind; i++) {
		saved[i] = p->bind[i].node;
		mp->bind[i].node = NULL;
	}
	/* a pass (placement) may have made nodes of its own, not written,
	 * and may say something after a line ("  # on remote:1") */
	const struct tir_pass *pass = &p->pass;
	size_t ni = 0;
	for (size_t si = 0; si < p->nstmts; si++) {
		const struct tir_stmt *s = &p->stmts[si];
		/* the nodes this statement made, operands first */
		for (; ni < p->nnodes && p->nodes[ni]->stmt <= si; ni++) {
			const struct tir_node *n = p->nodes[ni];
			if (n->in_print || n->op == TIR_OP_INPUT || n == s->node || (pass->made && pass->made(pass->ud, n)))
				continue;
			if (n->op == TIR_OP_CONST && n->type.weak)
				continue; /* scalars stay inline */
			if (n->op == TIR_OP_RESULT || tir_op(n->op)->nres > 1)
				continue; /* written by the statement that binds the results */
			char nb[32];
			const char *nm = fresh_name(&st, nb, sizeof nb);
			owned[n->id] = strdup(nm);
			st.tmp[n->id] = owned[n->id];
			tir_str_addf(&out, "%s: %s = ", nm, tir_type_str(&n->type, tb, sizeof tb));
			if (n->op == TIR_OP_CONST)
				render_literal(n, &out);
			else
				render_call(p, n, fmt_operand, &out);
			if (pass->note)
				pass->note(pass->ud, n, &out);
			tir_str_add(&out, "\n", 1);
		}
		switch (s->kind) {
		case TIR_STMT_INPUT:
			tir_str_addf(&out, "input %s: %s\n", s->name, tir_type_str(&s->node->type, tb, sizeof tb));
			break;
		case TIR_STMT_BIND: {
			const struct tir_node *n = s->node;
			if (s->nres) { /* a, b = op(...): one line, by its first statement */
				if (s->res == 0)
					format_results(p, s, &out);
				break;
			}
			tir_str_addf(&out, "%s: %s = ", s->name, tir_type_str(&n->type, tb, sizeof tb));
			if (n->stmt != si)
				fmt_operand(p, n, &out); /* an alias of an earlier value */
			else if (n->op == TIR_OP_CONST)
				n->type.weak ? tir_render_scalar(n, &out) : render_literal(n, &out);
			else
				render_call(p, n, fmt_operand, &out);
			if (pass->note)
				pass->note(pass->ud, n, &out);
			tir_str_add(&out, "\n", 1);
			break;
		}
		case TIR_STMT_PRINT:
			tir_str_add(&out, "print ", 6);
			for (int i = 0; i < s->nitems; i++) {
				if (i)
					tir_str_add(&out, ", ", 2);
				if (s->items[i].called) /* its header is the text written, calls and all */
					fmt_operand(p, s->items[i].node, &out);
				else
					tir_str_add(&out, s->items[i].header, strlen(s->items[i].header));
			}
			tir_str_add(&out, "\n", 1);
			break;
		}
		/* replay the binding this statement made */
		if (s->kind != TIR_STMT_PRINT) {
			struct tir_binding *b = tir_program_lookup(p, s->name, strlen(s->name));
			if (b)
				b->node = s->node;
		}
	}
	for (size_t i = 0; i < p->nbind; i++)
		mp->bind[i].node = saved[i];
	free(saved);
	for (size_t i = 0; i < p->nnodes; i++)
		free(owned[i]);
	free(owned);
	free(st.tmp);
	fmt_tls = NULL;
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	if (!out.s)
		return strdup("");
	return out.s;
}

/* ---- errors ---- */

/* Text for a terminal: control bytes (C0, DEL, and C1 as UTF-8) become '?'
 * so that no file name or source line can drive the user's terminal. */
static void add_clean(struct tir_str *out, const char *s, size_t n, bool keep_tab)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9F) {
			tir_str_add(out, "?", 1);
			i++;
		} else if ((c < 0x20 && !(keep_tab && c == '\t')) || c == 0x7f) {
			tir_str_add(out, "?", 1);
		} else {
			tir_str_add(out, s + i, 1);
		}
	}
}

/* `file:line:col: KIND: msg`, the source line and a caret. */
static void render_located(struct tir_str *out, const struct tir_loc *loc, const char *kind,
			   const char *msg)
{
	const struct tir_source *src = loc->src;
	add_clean(out, src->name, strlen(src->name), false);
	tir_str_addf(out, ":%u:%u: %s: ", loc->line, loc->col, kind);
	add_clean(out, msg, strlen(msg), false);
	tir_str_add(out, "\n", 1);
	/* the source line, cut to a window around the column if it is long */
	const char *t = src->text;
	uint32_t off = loc->off > src->len ? src->len : loc->off;
	uint32_t b = off, end = off;
	while (b > 0 && t[b - 1] != '\n')
		b--;
	while (end < src->len && t[end] != '\n' && t[end] != '\r')
		end++;
	uint32_t from = b, to = end;
	const uint32_t window = 100;
	if (off - b > window) {
		from = off - window;
		while (from < off && (t[from] & 0xC0) == 0x80)
			from++;
	}
	if (to - off > window) {
		to = off + window;
		while (to > off && (t[to] & 0xC0) == 0x80)
			to--;
	}
	tir_str_add(out, "    ", 4);
	if (from > b)
		tir_str_add(out, "...", 3);
	add_clean(out, t + from, to - from, true);
	if (to < end)
		tir_str_add(out, "...", 3);
	tir_str_add(out, "\n    ", 5);
	if (from > b)
		tir_str_add(out, "   ", 3);
	for (uint32_t i = from; i < off; i++) {
		if ((t[i] & 0xC0) == 0x80)
			continue;
		tir_str_add(out, t[i] == '\t' ? "\t" : " ", 1);
	}
	tir_str_add(out, "^\n", 2);
}

char *tir_err_render(const struct tir_err *e)
{
	struct tir_str out = {0};
	if (!e->loc.src) {
		tir_str_add(&out, "error: ", 7);
		add_clean(&out, e->msg, strlen(e->msg), false);
		tir_str_add(&out, "\n", 1);
		return out.s;
	}
	render_located(&out, &e->loc, "error", e->msg);
	int nn = e->nnotes < 0 ? 0 : e->nnotes > TIR_MAX_NOTES ? TIR_MAX_NOTES : e->nnotes;
	for (int i = 0; i < nn; i++)
		if (e->notes[i].loc.src)
			render_located(&out, &e->notes[i].loc, "note", e->notes[i].msg);
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s;
}
