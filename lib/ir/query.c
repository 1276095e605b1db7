/*
 * query.c — what a client asks of a program it holds (the REPL): its
 * statements, the names it binds and their types, the names to complete,
 * and the canonical lines a value depends on.  Nothing here changes the
 * program.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static_assert(sizeof((struct tir_var *)0)->type == TIR_TYPE_STRLEN, "a var's type holds tir_type_str's");

size_t tir_program_nstmts(const struct tir_program *p)
{
	return p->nstmts;
}

bool tir_program_prints_from(const struct tir_program *p, size_t from)
{
	for (size_t s = from; s < p->nstmts; s++)
		if (p->stmts[s].kind == TIR_STMT_PRINT)
			return true;
	return false;
}

bool tir_program_binds(const struct tir_program *p, const char *name)
{
	const struct tir_binding *b = tir_program_lookup(p, name, strlen(name));
	return b && b->node;
}

/* The input statement named name, or NULL. */
static const struct tir_stmt *find_input(const struct tir_program *p, const char *name)
{
	for (size_t i = p->nstmts; i-- > 0;)
		if (p->stmts[i].kind == TIR_STMT_INPUT && !strcmp(p->stmts[i].name, name))
			return &p->stmts[i];
	return NULL;
}

bool tir_program_is_input(const struct tir_program *p, const char *name)
{
	return find_input(p, name) != NULL;
}

void tir_program_names(const struct tir_program *p, enum tir_names kind, tir_name_fn fn, void *ud)
{
	switch (kind) {
	case TIR_NAMES_OPS:
		for (int op = 0; op < TIR_OP_COUNT; op++) {
			const char *s = tir_op((enum tir_op)op)->name;
			if (tir_op_lookup(s, strlen(s)) >= 0)
				fn(ud, s);
		}
		break;
	case TIR_NAMES_FUNCS:
		for (size_t i = 0; i < p->nfuncs; i++)
			if (!p->funcs[i]->bad)
				fn(ud, p->funcs[i]->name);
		break;
	case TIR_NAMES_VALUES:
	case TIR_NAMES_INPUTS:
		for (size_t i = 0; i < p->nbind; i++) {
			const struct tir_binding *b = &p->bind[i];
			if (b->node && !b->owner && (kind == TIR_NAMES_VALUES || find_input(p, b->name)))
				fn(ud, b->name);
		}
		break;
	}
}

void tir_program_vars(const struct tir_program *p, tir_var_fn fn, void *ud)
{
	for (size_t i = 0; i < p->nstmts; i++) {
		const struct tir_stmt *s = &p->stmts[i];
		if (s->kind == TIR_STMT_PRINT)
			continue;
		const struct tir_binding *b = tir_program_lookup(p, s->name, strlen(s->name));
		const struct tir_stmt *bs = b && b->stmt < p->nstmts ? &p->stmts[b->stmt] : NULL;
		if (!bs || b->node != s->node || bs->src != s->src || bs->off != s->off || b->owner)
			continue; /* rebound since, or a function's local (renamed) */
		struct tir_var v = {.name = s->name, .input = s->node->op == TIR_OP_INPUT};
		tir_type_str(&s->node->type, v.type, sizeof v.type);
		if (p->pass.where)
			p->pass.where(p->pass.ud, s->node, v.device);
		else
			snprintf(v.device, sizeof v.device, "any");
		fn(ud, &v);
	}
}

/* A line of canonical text, "NAME: T = EXPR" or "input NAME: T" (or a
 * print, which defines nothing): the name it defines and the names EXPR
 * reads, that is its names neither called nor naming a keyword argument (a
 * word never bound, like true or f32, costs only a lookup). */
struct fmt_line {
	const char *text;
	size_t len;
	char *def;
	char **uses;
	int nuses;
	bool keep;
};

static void scan_line(struct fmt_line *fl)
{
	struct tir_source src = {.name = "", .text = fl->text, .len = (uint32_t)fl->len};
	struct tir_lexer lx;
	if (tir_lex_init(&lx, &src))
		return;
	struct tir_token t = tir_lex_next(&lx), prev = {0};
	bool input = t.kind == TIR_TOK_NAME && t.len == 5 && !memcmp(fl->text + t.off, "input", 5);
	if (input)
		t = tir_lex_next(&lx);
	if (t.kind == TIR_TOK_NAME && !(t.len == 5 && !memcmp(fl->text + t.off, "print", 5)))
		fl->def = strndup(fl->text + t.off, t.len);
	bool rhs = false;
	while (!input && fl->def && t.kind != TIR_TOK_EOF && t.kind != TIR_TOK_ERROR) {
		prev = t;
		t = tir_lex_next(&lx);
		if (t.kind == TIR_TOK_ASSIGN && !rhs) {
			rhs = true;
			continue;
		}
		/* a name before this token, neither called nor a keyword */
		if (!rhs || prev.kind != TIR_TOK_NAME || t.kind == TIR_TOK_LPAREN || t.kind == TIR_TOK_ASSIGN)
			continue;
		const char *s = fl->text + prev.off;
		char **nu = realloc(fl->uses, sizeof *nu * (size_t)(fl->nuses + 1));
		if (!nu)
			break;
		fl->uses = nu;
		fl->uses[fl->nuses] = strndup(s, prev.len);
		if (fl->uses[fl->nuses])
			fl->nuses++;
	}
	tir_lex_fini(&lx);
}

char *tir_program_format_deps(const struct tir_program *p, const char *name)
{
	/* the whole program in canonical form, then only the lines NAME
	 * depends on: walking back, a line is kept when it defines a name still
	 * wanted, and its names become wanted (the latest definition wins, as
	 * when the program ran) */
	char *text = tir_program_format(p);
	struct fmt_line *lines = NULL;
	size_t n = 0, cap = 0;
	struct tir_str out = {0};
	bool oom = false;
	for (char *s = text; s && *s;) {
		char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s + 1) : strlen(s);
		if (tir_grow((void **)&lines, &cap, n + 1, sizeof *lines))
			break;
		lines[n++] = (struct fmt_line){.text = s, .len = len};
		s += len;
	}
	char **want = NULL;
	size_t nwant = 0, capwant = 0;
	if (!text || tir_grow((void **)&want, &capwant, 1, sizeof *want) || !(want[0] = strdup(name))) {
		oom = true;
		goto out;
	}
	nwant = 1;
	for (size_t i = n; i-- > 0 && nwant > 0;) {
		struct fmt_line *fl = &lines[i];
		scan_line(fl);
		size_t w = 0;
		while (fl->def && w < nwant && strcmp(want[w], fl->def))
			w++;
		if (!fl->def || w == nwant)
			continue;
		fl->keep = true;
		free(want[w]);
		want[w] = want[--nwant];
		for (int k = 0; k < fl->nuses; k++) {
			size_t j = 0;
			while (j < nwant && strcmp(want[j], fl->uses[k]))
				j++;
			if (j == nwant && !tir_grow((void **)&want, &capwant, nwant + 1, sizeof *want)) {
				want[nwant++] = fl->uses[k];
				fl->uses[k] = NULL;
			}
		}
	}
	tir_str_add(&out, "", 0);
	for (size_t i = 0; i < n; i++)
		if (lines[i].keep)
			tir_str_add(&out, lines[i].text, lines[i].len);
	oom = out.oom;
out:
	for (size_t i = 0; i < nwant; i++)
		free(want[i]);
	free(want);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < lines[i].nuses; k++)
			free(lines[i].uses[k]);
		free(lines[i].uses);
		free(lines[i].def);
	}
	free(lines);
	free(text);
	if (oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s;
}
