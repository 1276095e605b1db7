/*
 * parse.c — recursive descent from tokens straight to the graph: every call
 * is checked against the op table and type-checked as its node is made, so
 * errors point at the text that caused them.  Infix sugar lowers to the same
 * ops as the calls.  grammar/tir.ebnf is the grammar; each function opens
 * with the production it implements.  Not an evaluator: nothing runs here.
 */
#include "ir.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One argument of a call being expanded: an int (known when checked) or a
 * tensor. */
struct fn_arg {
	bool is_int;
	int64_t v;
	struct tir_node *node;
	const char *str;           /* a string (node NULL, is_int false) */
};

/* A loop or a call being expanded (parser.frames, innermost last).  Names
 * are looked up through the frames down to the innermost call: a loop
 * gives its index, a call its locals and parameters, and nothing past a
 * call is seen (a function reads only what it is given). */
struct frame {
	bool call;                 /* a call; else a loop */
	bool in_print;             /* call: the caller's in_print, for the value returned */
	struct tir_loc loc;        /* the 'for', or the call's name */
	const char *var;           /* loop: its index's name (in the source) */
	uint32_t varlen;
	int64_t value, trips;      /* loop: the index now, and the count */
	const struct tir_func *fn; /* call */
	uint32_t serial;           /* call: the program's count (binding owner) */
	uint32_t callno;           /* call: the function's count (in its locals' names) */
	struct fn_arg args[TIR_MAX_FN_PARAMS];
};

/* What a failed top-level statement must undo of the bindings its loops
 * and calls made. */
struct bind_undo {
	uint32_t index;            /* into prog->bind */
	bool was_new, unbound;
	uint32_t owner;
	struct tir_node *node;
	uint32_t stmt;
};

/* Weak scalar literals by value: a program writes the same few (0.5, 1,
 * 1e-5) again and again, and each was a node of its own (192 bytes, and
 * the planner's and the run's work for each): the literals of a program
 * of 100,000 scalar statements were 60,000 of its 160,000 nodes.  A
 * literal written again as an operand is the node made for it the first
 * time (literal), while that node is still in the graph and no name is
 * bound to it.  A cache, not an index: a slot taken by another value
 * makes a new node, as before. */
#define LIT_SLOTS 256

struct parser {
	struct tir_program *prog;
	struct tir_node *lits_by_value[LIT_SLOTS];
	struct tir_node *lit_hit;  /* the literal last shared, and where: a copy */
	struct tir_loc lit_hit_at; /* bound to a name is placed there */
	struct tir_lexer lx;
	/* The lexer runs a token ahead, into the slot that is not current:
	 * a token copied whole just after the lexer wrote it would stall the
	 * copy (store forwarding fails on the lexer's narrower stores).  So
	 * lx.depth and lx.open describe the text up to the next token: they
	 * are read only at the end of input, where the two agree. */
	struct tir_token toks[2];  /* the current token and the next one */
	struct tir_token *tok;     /* current: one of toks */
	struct tir_token *next;    /* the other one (swapped with tok by advance) */
	char errmsg[2][TIR_LEX_ERRLEN]; /* each slot's lexer error */
	bool ahead_told;           /* the next token's lexer error is reported (peeked) */
	unsigned flags;
	uint32_t line_base;        /* lines before the chunk (tir_program_parse_at) */
	int depth;
	bool in_print;
	uint32_t stmt;
	uint64_t ntok;             /* tokens consumed (to spot a bare name) */
	bool stmt_failed;          /* an error was reported in this statement */
	int first_code;
	/* What the statement will bind, committed only when it ends well: a
	 * failed statement binds nothing (in a file it poisons the name). */
	struct pending {
		const char *name;  /* in the source text; NULL: binds nothing */
		uint32_t len;
		uint32_t hash;     /* of the name (hash_name) */
		enum tir_stmt_kind kind;
		struct tir_node *node;
		const char *str;   /* a string bound (node NULL) */
		struct tir_loc loc;
	} pend;
	/* a, b = op(...): the names after the first (pend), bound with it */
	struct pending more[TIR_MAX_RESULTS - 1];
	int nmore;
	int want_results;          /* names the call being parsed binds (parse_call reads it) */
	struct tir_node *multi;    /* the call of several results it made */
	/* ref_name changes of this statement, undone if it fails */
	struct ref_undo {
		struct tir_node *node;
		const char *old;
	} *undo;
	size_t nundo, capundo;
	/* loops and calls (see struct frame) */
	struct frame frames[TIR_MAX_NEST];
	int nframes;
	uint64_t expanded;         /* tokens read again by loops and calls (TIR_MAX_EXPANDED) */
	bool quiet;                /* a trial parse: errors are not reported */
	bool called;               /* the expression called a function (print headers) */
	uint32_t prev_end;         /* the end of the last token consumed */
	struct bind_undo *bundo;   /* bindings made inside loops and calls */
	size_t nbundo, capbundo;
	uint32_t *findex;          /* prog->funcs by name: open addressing, index + 1 */
	size_t capfindex;
	/* float list literals of this statement whose dtype their use may
	 * still settle (settle_literals), with their values as written */
	struct float_lit {
		struct tir_node *node;
		double *v;         /* arena */
	} *lits;
	size_t nlits, caplits;
};

#define WORD(s) {s, sizeof s - 1}
static const struct word {
	const char *s;
	uint8_t n;
} reserved[] = {WORD("input"), WORD("print"), WORD("true"), WORD("false"), WORD("inf"), WORD("nan"), WORD("fn"),
		WORD("for"), WORD("return"), WORD("True"), WORD("False"), WORD("None")};
#undef WORD

/* ---- errors ---- */

static void loc_tok(const struct parser *ps, const struct tir_token *t, struct tir_loc *loc)
{
	loc->src = ps->lx.src;
	loc->off = t->off;
	loc->line = t->line + ps->line_base;
	loc->col = t->col;
}

static void add_notes(const struct parser *ps, struct tir_err *e);

static void add_diag(struct parser *ps, const struct tir_err *e)
{
	struct tir_program *p = ps->prog;
	if (ps->quiet || ps->stmt_failed)
		return; /* a trial; or one error per statement: the rest would be echoes */
	ps->stmt_failed = true;
	if (!ps->first_code)
		ps->first_code = e->code;
	p->nerrors++;
	if (p->ndiags < TIR_MAX_DIAGS) {
		p->diags[p->ndiags] = *e;
		add_notes(ps, &p->diags[p->ndiags++]);
	}
}

static void perr(struct parser *ps, int code, const struct tir_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void perr(struct parser *ps, int code, const struct tir_loc *loc, const char *fmt, ...)
{
	struct tir_err e = {.code = code};
	if (loc)
		e.loc = *loc;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	add_diag(ps, &e);
}

static void perr_tok(struct parser *ps, const struct tir_token *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A description of a token for messages: "',' ", "the name 'x'" ... */
static void tok_desc(const struct parser *ps, const struct tir_token *t, char *buf, size_t n)
{
	const char *s = ps->lx.src->text + t->off;
	int len = (int)(t->len > 40 ? 40 : t->len);
	switch (t->kind) {
	case TIR_TOK_NAME: snprintf(buf, n, "'%.*s'", len, s); break;
	case TIR_TOK_INT:
	case TIR_TOK_FLOAT: snprintf(buf, n, "the number %.*s", len, s); break;
	case TIR_TOK_STRING: snprintf(buf, n, "a string"); break;
	default: snprintf(buf, n, "%s", tir_tok_name(t->kind)); break;
	}
}

/* tir's word for a NumPy spelling that is not tir's ("did you mean"):
 * dtypes, and functions whose tir name differs.  NULL if none. */
static const char *numpy_spelling(const char *s, size_t n)
{
	static const char *const map[][2] = {
		{"float32", "f32"}, {"float64", "f64"}, {"float16", "f16"}, {"bfloat16", "bf16"},
		{"int8", "i8"}, {"uint8", "u8"}, {"int16", "i16"}, {"int32", "i32"}, {"int64", "i64"},
		{"bool_", "bool"}, {"double", "f64"}, {"single", "f32"}, {"half", "f16"},
		{"float_", "f64"}, {"int_", "i64"}, {"newaxis", "None"},
		{"concatenate", "concat"}, {"power", "pow"}, {"multiply", "mul"}, {"subtract", "sub"},
		{"divide", "div"}, {"true_divide", "div"}, {"remainder", "mod"}, {"absolute", "abs"},
		{"negative", "neg"}, {"equal", "eq"}, {"not_equal", "ne"}, {"less", "lt"},
		{"less_equal", "le"}, {"greater", "gt"}, {"greater_equal", "ge"}, {"logical_and", "and"},
		{"logical_or", "or"}, {"logical_not", "not"}, {"expand_dims", "unsqueeze"}, {"take", "gather"},
		{"amax", "max"}, {"amin", "min"}, {"average", "mean"}, {"broadcast_to", "expand"},
		{"reciprocal", "recip"}, {"astype", "cast"}, {"array", "a list literal [...]"},
		{"asarray", "a list literal [...]"}, {"dot", "matmul"}, {"fromfile", "load"},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strlen(map[i][0]) == n && !memcmp(map[i][0], s, n))
			return map[i][1];
	return NULL;
}

/* ---- tokens ---- */

static __attribute__((noinline, cold)) void lex_error(struct parser *ps, const struct tir_token *t)
{
	struct tir_loc loc;
	loc_tok(ps, t, &loc);
	perr(ps, TIR_ESYNTAX, &loc, "%s", ps->errmsg[t - ps->toks]);
}

/* The current token becomes the next one (the slots are swapped). */
static void swap_toks(struct parser *ps)
{
	struct tir_token *t = ps->tok;
	ps->tok = ps->next;
	ps->next = t;
}

static __attribute__((noinline, cold)) void keep_lex_error(struct parser *ps, const struct tir_token *t)
{
	memcpy(ps->errmsg[t - ps->toks], ps->lx.errmsg, sizeof ps->errmsg[0]);
}

/* Lex the token after the current one, its error untold. */
static inline __attribute__((always_inline)) void lex_ahead(struct parser *ps)
{
	struct tir_token *next = ps->next;
	tir_lex_scan(&ps->lx, next);
	if (next->kind == TIR_TOK_ERROR)
		keep_lex_error(ps, next);
	ps->ahead_told = false;
}

/* A lexer error is reported when its token is reached or peeked at, as if
 * the lexer did not run ahead (the errors' work is out of line, cold).
 * advance_inline is advance inlined, where every token of a program
 * passes (an operand, an operator, a statement's name): there a call was
 * a third of a token's cost again.  Elsewhere advance() is a call, so
 * that parse.c's code, and a program's resident pages, do not grow by a
 * copy in each of its hundred places. */
static inline __attribute__((always_inline)) void advance_inline(struct parser *ps)
{
	ps->ntok++;
	ps->prev_end = ps->tok->off + ps->tok->len;
	swap_toks(ps);
	if (ps->tok->kind == TIR_TOK_ERROR && !ps->ahead_told)
		lex_error(ps, ps->tok);
	lex_ahead(ps);
}

static __attribute__((noinline)) void advance(struct parser *ps)
{
	advance_inline(ps);
}

static inline __attribute__((always_inline)) const struct tir_token *peek(struct parser *ps)
{
	struct tir_token *next = ps->next;
	if (next->kind == TIR_TOK_ERROR && !ps->ahead_told)
		lex_error(ps, next);
	ps->ahead_told = true;
	return next;
}

static bool tok_is(const struct parser *ps, const struct tir_token *t, const char *word)
{
	size_t n = strlen(word);
	return t->kind == TIR_TOK_NAME && t->len == n &&
	       !memcmp(ps->lx.src->text + t->off, word, n);
}

/* true and false, and Python's True and False, which mean the same. */
static bool is_true(const struct parser *ps, const struct tir_token *t)
{
	return tok_is(ps, t, "true") || tok_is(ps, t, "True");
}

static bool is_bool_word(const struct parser *ps, const struct tir_token *t)
{
	return is_true(ps, t) || tok_is(ps, t, "false") || tok_is(ps, t, "False");
}

static void perr_tok(struct parser *ps, const struct tir_token *t, const char *fmt, ...)
{
	struct tir_err e = {.code = TIR_ESYNTAX};
	loc_tok(ps, t, &e.loc);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	add_diag(ps, &e);
}

/* np.sum, numpy.float32: at NAME "np" before ".", say so with tir's word
 * (the statement fails); false if it is not that. */
static bool np_prefix(struct parser *ps, const struct tir_token *t)
{
	if ((!tok_is(ps, t, "np") && !tok_is(ps, t, "numpy")) || peek(ps)->kind != TIR_TOK_DOT)
		return false;
	const char *s = ps->lx.src->text + t->off;
	advance(ps);
	advance(ps);
	const struct tir_token *a = ps->tok;
	const char *as = ps->lx.src->text + a->off;
	const char *sug = a->kind != TIR_TOK_NAME ? NULL
			  : tir_op_lookup(as, a->len) >= 0 || tir_dtype_from_name(as, a->len) >= 0
			  ? tir_arena_strndup(&ps->prog->arena, as, a->len)
			  : numpy_spelling(as, a->len);
	if (sug)
		perr_tok(ps, t, "tir's names have no '%.*s.' prefix; did you mean '%s'?", (int)t->len, s, sug);
	else
		perr_tok(ps, t, "tir's names have no '%.*s.' prefix (tir help ops lists the ops)", (int)t->len, s);
	return true;
}

/* An unexpected token where `want` was expected.  At the end of input in
 * an open bracket, say where it opened (and let the REPL read on). */
static void expected(struct parser *ps, const char *want)
{
	char got[80];
	if (ps->tok->kind == TIR_TOK_ERROR)
		return; /* the lexer said it */
	if (ps->tok->kind == TIR_TOK_EOF && ps->lx.depth > 0) {
		const struct tir_token *o = &ps->lx.open[ps->lx.depth - 1];
		struct tir_loc loc;
		loc_tok(ps, o, &loc);
		char close = o->kind == TIR_TOK_LPAREN ? ')' : ']';
		char open = o->kind == TIR_TOK_LPAREN ? '(' : '[';
		perr(ps, TIR_EINCOMPLETE, &loc, "'%c' is never closed: expected '%c' before the end of input",
		     open, close);
		return;
	}
	tok_desc(ps, ps->tok, got, sizeof got);
	perr_tok(ps, ps->tok, "expected %s, got %s", want, got);
}

static bool accept(struct parser *ps, enum tir_tok k)
{
	if (ps->tok->kind == k) {
		advance_inline(ps);
		return true;
	}
	return false;
}

/* A closing bracket matching `open` (Lua's check_match). */
static bool close_bracket(struct parser *ps, enum tir_tok k, const struct tir_token *open)
{
	if (ps->tok->kind == k) {
		advance(ps);
		return true;
	}
	char want[80];
	char c = k == TIR_TOK_RPAREN ? ')' : ']';
	char o = k == TIR_TOK_RPAREN ? '(' : '[';
	if (ps->tok->kind == TIR_TOK_EOF && ps->lx.depth > 0) {
		expected(ps, "");
		return false;
	}
	if (open->line == ps->tok->line)
		snprintf(want, sizeof want, "'%c' to close '%c' at column %u", c, o, open->col);
	else
		snprintf(want, sizeof want, "'%c' to close '%c' at line %u", c, o,
			 open->line + ps->line_base);
	expected(ps, want);
	return false;
}

/* ---- bindings ----
 * p->bind holds every name ever bound, in the order first bound (a NULL node
 * is a poisoned name); p->bind_index finds them by name: open addressing
 * over 4-byte slots (a binding's index; its name's hash is in the binding,
 * read when a slot's binding is compared), at most half full.  Slots this
 * small keep the index of a big program within the caches: 10 bytes a
 * name where the slot's own hash beside it made 21.
 *
 * Names numbered in turn (t1, t2, ... as generated programs write them)
 * go eight to a half cache line of the index, in the order of their numbers: a
 * statement binds its name next to the one the statement before it bound,
 * not at a random place of a big index, where each new name cost a miss
 * all the way to memory (the program's nodes, written meanwhile, push the
 * index out of the caches). */

/* FNV-1a of the name, but for a name ending in a number (at most 9
 * digits): then the stem's hash and the number's digits pick the line,
 * the number's low three bits the slot in it.  With `ahead`, the hash of
 * the name whose number is that much more, as many digits (t16 for t8
 * and 8), or 0: no number, or the sum takes another digit. */
static inline __attribute__((always_inline)) uint32_t hash_ahead(const char *s, size_t n, uint32_t ahead)
{
	uint32_t h = 2166136261u, stem = h, v = 0, nd = 0, top = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned char)s[i], d = c - '0';
		h = (h ^ c) * 16777619u;
		if (d < 10) {
			v = v * 10 + d;
			nd++;
			top = top * 10;
		} else {
			stem = h;
			v = nd = 0;
			top = 1;
		}
	}
	if (nd == 0 || nd > 9)
		return ahead ? 0 : h;
	if (ahead && (uint64_t)v + ahead >= top)
		return 0;
	v += ahead;
	uint64_t x = ((uint64_t)(stem + nd) << 32 | (v >> 3)) * 0x9e3779b97f4a7c15u;
	return ((uint32_t)(x >> 32) & ~7u) | (v & 7);
}

static uint32_t hash_name(const char *s, size_t n)
{
	return hash_ahead(s, n, 0);
}

/* Whether the NUL-terminated name is s[0..n) (names are short: a loop
 * beats a call). */
static bool same_name(const char *name, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (name[i] != s[i] || !name[i])
			return false;
	return name[n] == 0;
}

/* the length fits where there was padding: a binding is as big as before */
_Static_assert(sizeof(void *) != 8 || sizeof(struct tir_binding) == 40, "struct tir_binding grew");

/* Whether binding b is of the name s[0..n): its length first, then its
 * bytes from the last (numbered names differ there: t12 and t15). */
static bool binding_is(const struct tir_binding *b, const char *s, size_t n)
{
	if (b->len != n)
		return false;
	for (size_t i = n; i-- > 0;)
		if (b->name[i] != s[i])
			return false;
	return true;
}

/* The slot holding the name s (its hash h), or else the empty slot where it
 * would go. */
static struct tir_bind_slot *bind_slot(const struct tir_program *p, const char *s, size_t n,
				       uint32_t h)
{
	size_t mask = p->capindex - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct tir_bind_slot *sl = &p->bind_index[i];
		if (!sl->bind)
			return sl;
		const struct tir_binding *b = &p->bind[sl->bind - 1];
		if (b->hash == h && binding_is(b, s, n))
			return sl;
	}
}

struct tir_binding *tir_program_lookup(const struct tir_program *p, const char *s, size_t n)
{
	if (!p->capindex)
		return NULL;
	const struct tir_bind_slot *sl = bind_slot(p, s, n, hash_name(s, n));
	return sl->bind ? &p->bind[sl->bind - 1] : NULL;
}

/* The index at ncap slots (a power of two), its names placed again. */
static int index_resize(struct tir_program *p, size_t ncap)
{
	struct tir_bind_slot *ni = tir_pages_alloc(ncap * sizeof *ni);
	if (!ni)
		return -TIR_ENOMEM;
	for (size_t i = 0; i < p->capindex; i++) {
		const struct tir_bind_slot *sl = &p->bind_index[i];
		if (!sl->bind)
			continue;
		size_t j = p->bind[sl->bind - 1].hash & (ncap - 1);
		while (ni[j].bind)
			j = (j + 1) & (ncap - 1);
		ni[j] = *sl;
	}
	tir_pages_free(p->bind_index, p->capindex * sizeof *ni);
	p->bind_index = ni;
	p->capindex = ncap;
	return 0;
}

static int grow_index(struct tir_program *p)
{
	return index_resize(p, p->capindex ? p->capindex * 2 : 64);
}

/* The slot where the search for a name of hash h starts, NULL with no
 * index.  A statement that binds a name asks the index for it only once
 * parsed: prefetching this slot when the name is read hides the cache miss
 * of a big program's index behind the parsing of the value.  (The prefetch
 * is the caller's: GCC drops a call to a function that only prefetches.) */
static const struct tir_bind_slot *bind_home(const struct tir_program *p, uint32_t h)
{
	return p->capindex ? &p->bind_index[h & (p->capindex - 1)] : NULL;
}

/* The binding of the name s (its hash h), made if new. */
static struct tir_binding *bind_name(struct tir_program *p, const char *s, size_t n, uint32_t h)
{
	if (n > 255)
		return NULL; /* not asked today (see struct tir_binding's len) */
	struct tir_bind_slot *sl = p->capindex ? bind_slot(p, s, n, h) : NULL;
	if (sl && sl->bind)
		return &p->bind[sl->bind - 1];
	size_t capindex = p->capindex;
	if (((p->nbind + 1) * 2 > p->capindex && grow_index(p)) || p->nbind >= UINT32_MAX ||
	    (p->nbind >= p->capbind &&
	     tir_grow_pages((void **)&p->bind, &p->capbind, p->nbind + 1, sizeof *p->bind)))
		return NULL;
	struct tir_binding *b = &p->bind[p->nbind];
	memset(b, 0, sizeof *b);
	b->len = (uint16_t)n;
	char *name = tir_arena_alloc1(&p->name_arena, n + 1); /* zeroed: its NUL */
	if (!name)
		return NULL;
	b->name = memcpy(name, s, n);
	if (!sl || p->capindex != capindex)
		sl = bind_slot(p, s, n, h); /* the index has grown */
	b->hash = h;
	sl->bind = (uint32_t)++p->nbind;
	return b;
}

const char *tir_program_suggest(const struct tir_program *p, const char *s, size_t n)
{
	const char *best = NULL;
	int bestd = n <= 2 ? 1 : n <= 5 ? 2 : 3;
	for (size_t i = 0; i < p->nbind; i++) {
		const struct tir_binding *b = &p->bind[i];
		if (!b->node)
			continue;
		int d = tir_edit_distance(s, n, b->name, strlen(b->name));
		if (d <= bestd && (!best || d < bestd || strcmp(b->name, best) < 0)) {
			best = b->name;
			bestd = d;
		}
	}
	return best;
}

const char *tir_node_current_name(const struct tir_program *p, const struct tir_node *n)
{
	if (n->ref_name) {
		const struct tir_binding *b = tir_program_lookup(p, n->ref_name, strlen(n->ref_name));
		if (b && b->node == n)
			return n->ref_name;
	}
	for (const struct tir_name_link *l = n->names; l; l = l->next) {
		const struct tir_binding *b = tir_program_lookup(p, l->name, strlen(l->name));
		if (b && b->node == n)
			return l->name;
	}
	if (n->name) { /* the first */
		const struct tir_binding *b = tir_program_lookup(p, n->name, strlen(n->name));
		if (b && b->node == n)
			return n->name;
	}
	return NULL;
}

/* ---- positions: loops and calls read text again ----
 * A loop's body is parsed once per iteration and a function's body once
 * per call, each time from its text: the lexer is moved to the body and
 * back.  Bodies start where no bracket is open (a '{' ends a statement's
 * head), so a body is lexed at depth 0 whatever the caller had open. */

struct pos {
	struct tir_token toks[2];
	int cur;                   /* which of toks is current */
	char errmsg[2][TIR_LEX_ERRLEN];
	bool ahead_told;
	const struct tir_source *src;
	const char *p, *line_start, *col_p;
	uint32_t line, col_v;
	bool line_ascii;
	int depth;
	struct tir_token *open;    /* a copy of lx.open[0..depth) (calls), or NULL */
	uint32_t line_base, prev_end;
	uint64_t ntok;
};

/* Note where the parser is; with_open, also the brackets open (freed by
 * restore_pos).  False when out of memory. */
static bool save_pos(const struct parser *ps, struct pos *s, bool with_open)
{
	memcpy(s->toks, ps->toks, sizeof s->toks);
	s->cur = (int)(ps->tok - ps->toks);
	memcpy(s->errmsg, ps->errmsg, sizeof s->errmsg);
	s->ahead_told = ps->ahead_told;
	s->src = ps->lx.src;
	s->p = ps->lx.p;
	s->line_start = ps->lx.line_start;
	s->col_p = ps->lx.col_p;
	s->line = ps->lx.line;
	s->col_v = ps->lx.col_v;
	s->line_ascii = ps->lx.line_ascii;
	s->depth = ps->lx.depth;
	s->open = NULL;
	s->line_base = ps->line_base;
	s->prev_end = ps->prev_end;
	s->ntok = ps->ntok;
	if (with_open && s->depth > 0) {
		s->open = malloc(sizeof *s->open * (size_t)s->depth);
		if (!s->open)
			return false;
		memcpy(s->open, ps->lx.open, sizeof *s->open * (size_t)s->depth);
	}
	return true;
}

static void restore_pos(struct parser *ps, struct pos *s)
{
	memcpy(ps->toks, s->toks, sizeof s->toks);
	ps->tok = &ps->toks[s->cur];
	ps->next = &ps->toks[!s->cur];
	memcpy(ps->errmsg, s->errmsg, sizeof s->errmsg);
	ps->ahead_told = s->ahead_told;
	ps->lx.src = s->src;
	ps->lx.p = s->p;
	ps->lx.end = s->src->text + s->src->len;
	ps->lx.line_start = s->line_start;
	ps->lx.col_p = s->col_p;
	ps->lx.line = s->line;
	ps->lx.col_v = s->col_v;
	ps->lx.line_ascii = s->line_ascii;
	ps->lx.depth = s->depth;
	if (s->open)
		memcpy(ps->lx.open, s->open, sizeof *s->open * (size_t)s->depth);
	free(s->open);
	s->open = NULL;
	ps->line_base = s->line_base;
	ps->prev_end = s->prev_end;
	ps->ntok = s->ntok;
}

/* Point a lexer at byte off of src, which is on line `line`. */
static void lex_at(struct tir_lexer *lx, const struct tir_source *src, uint32_t off, uint32_t line)
{
	lx->src = src;
	lx->p = src->text + off;
	lx->end = src->text + src->len;
	lx->line = line;
	const char *ls = lx->p;
	while (ls > src->text && ls[-1] != '\n')
		ls--;
	lx->line_start = ls;
	lx->line_ascii = false; /* columns counted in code points from the line's start */
	lx->col_p = ls;
	lx->col_v = 1;
	lx->depth = 0;
}

/* Go on parsing at byte off of src (lines before its chunk: line_base). */
static void seek(struct parser *ps, const struct tir_source *src, uint32_t off, uint32_t line,
		 uint32_t line_base)
{
	lex_at(&ps->lx, src, off, line);
	ps->line_base = line_base;
	lex_ahead(ps);
	advance(ps);
}

/* ---- names in loops and functions ---- */

/* The innermost call being expanded, or NULL at the top level. */
static struct frame *scope_call(struct parser *ps)
{
	for (int i = ps->nframes; i-- > 0;)
		if (ps->frames[i].call)
			return &ps->frames[i];
	return NULL;
}

/* The index of the parameter of f named s[0..n), or -1. */
static int param_index(const struct tir_func *f, const char *s, size_t n)
{
	for (int k = 0; k < f->nparams; k++)
		if (same_name(f->params[k], s, n))
			return k;
	return -1;
}

/* A function's local name is bound in the program as FN_K_NAME (the K-th
 * call of FN; '_' added while that name is another's), so that the
 * expanded program, which tir fmt prints, reads back as it is.  The
 * binding of the local s[0..n) of call fr (made if `create`), or NULL. */
static struct tir_binding *local_binding(struct parser *ps, const struct frame *fr, const char *s,
					 size_t n, bool create)
{
	struct tir_program *p = ps->prog;
	char buf[600];
	int len = snprintf(buf, sizeof buf - 20, "%s_%u_%.*s", fr->fn->name, fr->callno, (int)n, s);
	if (len < 0 || len >= (int)sizeof buf - 20)
		return NULL;
	for (int k = 0; k < 16; k++, buf[len++] = '_') {
		struct tir_binding *b = tir_program_lookup(p, buf, (size_t)len);
		if (b && b->owner == fr->serial)
			return b;
		if (!b) {
			if (!create || len > 255)
				return NULL; /* not bound in this call */
			b = bind_name(p, buf, (size_t)len, hash_name(buf, (size_t)len));
			if (!b)
				return NULL;
		} else if (!create || !b->unbound) {
			continue; /* another's: the name with one more '_' */
		}
		b->owner = fr->serial;
		b->unbound = false;
		return b;
	}
	return NULL;
}

enum { L_NONE, L_INT, L_NODE, L_STR };

struct look {
	int kind;
	int64_t v;                 /* L_INT */
	struct tir_node *node;     /* L_NODE (NULL: poisoned) */
	struct tir_binding *b;     /* L_NODE through a binding */
	const char *str;           /* L_STR: a name for a string */
	bool in_fn;                /* looked up inside a function */
};

/* What the name s[0..n) stands for here: a loop's index or an int
 * parameter (L_INT), a tensor (L_NODE), or nothing. */
static void lookup_name(struct parser *ps, const char *s, size_t n, struct look *lk)
{
	memset(lk, 0, sizeof *lk);
	for (int i = ps->nframes; i-- > 0;) {
		struct frame *f = &ps->frames[i];
		if (!f->call) {
			if (f->varlen == n && !memcmp(f->var, s, n)) {
				lk->kind = L_INT;
				lk->v = f->value;
				return;
			}
			continue;
		}
		/* the function's own names, then its parameters, and nothing else */
		lk->in_fn = true;
		struct tir_binding *b = local_binding(ps, f, s, n, false);
		if (b && b->str) {
			lk->kind = L_STR;
			lk->str = b->str;
			return;
		}
		if (b) {
			lk->kind = L_NODE;
			lk->b = b;
			lk->node = b->node;
			return;
		}
		int k = param_index(f->fn, s, n);
		if (k >= 0) {
			lk->kind = f->args[k].is_int ? L_INT : f->args[k].str ? L_STR : L_NODE;
			lk->v = f->args[k].v;
			lk->node = f->args[k].node;
			lk->str = f->args[k].str;
		}
		return;
	}
	/* the name made last first: a statement most often reads what the one
	 * before it bound (t2 = t1 + 1), found so without hashing its name */
	const struct tir_program *p = ps->prog;
	struct tir_binding *b = p->nbind && binding_is(&p->bind[p->nbind - 1], s, n)
					? &p->bind[p->nbind - 1]
					: tir_program_lookup(p, s, n);
	if (b && !b->unbound && b->str) {
		lk->kind = L_STR;
		lk->str = b->str;
	} else if (b && !b->unbound) {
		lk->kind = L_NODE;
		lk->b = b;
		lk->node = b->node;
	}
}

/* A weak integer scalar: the value of an integer literal. */
static bool is_int_literal(const struct tir_node *n)
{
	return n && n->op == TIR_OP_CONST && n->type.weak && n->type.dtype == TIR_DTYPE_I64;
}

/* Whether the name s[0..n) is an integer known when checked. */
static bool static_name(struct parser *ps, const char *s, size_t n, int64_t *v)
{
	struct look lk;
	lookup_name(ps, s, n, &lk);
	if (lk.kind == L_INT)
		*v = lk.v;
	else if (lk.kind == L_NODE && is_int_literal(lk.node))
		*v = lk.node->ival;
	else
		return false;
	return true;
}

/* The notes of an error made inside loops and calls: where each was
 * entered, innermost first. */
static void add_notes(const struct parser *ps, struct tir_err *e)
{
	e->nnotes = 0;
	for (int i = ps->nframes; i-- > 0 && e->nnotes < TIR_MAX_NOTES;) {
		const struct frame *f = &ps->frames[i];
		struct tir_note *nt = &e->notes[e->nnotes++];
		nt->loc = f->loc;
		if (!f->call) {
			snprintf(nt->msg, sizeof nt->msg, "in this loop, at %.*s = %lld", (int)f->varlen, f->var,
				 (long long)f->value);
			continue;
		}
		struct tir_str m = {0};
		char tb[TIR_TYPE_STRLEN];
		tir_str_addf(&m, "in call to %s (", f->fn->name);
		for (int k = 0; k < f->fn->nparams; k++) {
			const struct fn_arg *a = &f->args[k];
			if (a->is_int)
				tir_str_addf(&m, "%s%s = %lld", k ? ", " : "", f->fn->params[k], (long long)a->v);
			else if (a->str)
				tir_str_addf(&m, "%s%s = \"%s\"", k ? ", " : "", f->fn->params[k], a->str);
			else
				tir_str_addf(&m, "%s%s: %s", k ? ", " : "", f->fn->params[k],
					     tir_type_str(&a->node->type, tb, sizeof tb));
		}
		tir_str_add(&m, ")", 1);
		snprintf(nt->msg, sizeof nt->msg, "%s", m.s && !m.oom ? m.s : "in a call");
		if (m.n >= sizeof nt->msg && sizeof nt->msg > 4)
			memcpy(nt->msg + sizeof nt->msg - 5, "...)", 5);
		tir_str_free(&m);
	}
}

/* ---- functions by name ---- */

const struct tir_func *tir_program_func(const struct tir_program *p, const char *s, size_t n)
{
	for (size_t i = p->nfuncs; i-- > 0;)
		if (same_name(p->funcs[i]->name, s, n))
			return p->funcs[i];
	return NULL;
}

/* The parser's own index of prog->funcs (the program's may be long: a
 * REPL session's). */
static struct tir_func *func_find(struct parser *ps, const char *s, size_t n)
{
	if (!ps->capfindex)
		return NULL;
	size_t mask = ps->capfindex - 1;
	for (size_t i = hash_name(s, n) & mask;; i = (i + 1) & mask) {
		uint32_t k = ps->findex[i];
		if (!k)
			return NULL;
		if (same_name(ps->prog->funcs[k - 1]->name, s, n))
			return ps->prog->funcs[k - 1];
	}
}

static int func_index_put(struct parser *ps, size_t k)
{
	struct tir_program *p = ps->prog;
	if ((k + 1) * 2 > ps->capfindex) {
		size_t ncap = ps->capfindex ? ps->capfindex * 2 : 16;
		uint32_t *ni = calloc(ncap, sizeof *ni);
		if (!ni)
			return -TIR_ENOMEM;
		free(ps->findex);
		ps->findex = ni;
		ps->capfindex = ncap;
		for (size_t j = 0; j < k; j++)
			func_index_put(ps, j); /* room enough now: no recursion past one level */
	}
	const char *name = p->funcs[k]->name;
	size_t n = strlen(name), mask = ps->capfindex - 1;
	for (size_t i = hash_name(name, n) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &ps->findex[i];
		if (!*slot || same_name(p->funcs[*slot - 1]->name, name, n)) {
			*slot = (uint32_t)k + 1; /* a later definition replaces an earlier one */
			return 0;
		}
	}
}

/* ---- integers known when checked ----
 * Loop bounds, attributes, dimensions of a type, function arguments and
 * strings' {...} take integers known when the program is checked:
 *   iexpr   = iterm { ("+" | "-") iterm }
 *   iterm   = ifactor { "*" ifactor }
 *   ifactor = "-" ifactor | INT | NAME | "(" iexpr ")"
 * where a NAME is a loop's index, an int parameter, or a name bound to an
 * integer literal.  Overflow is an error. */

static bool static_factor(struct parser *ps, int64_t *v, int lvl, const char *want);
static bool static_expr_rest(struct parser *ps, int64_t first, int64_t *v, int lvl, const char *want);

static bool static_overflow(struct parser *ps, const struct tir_token *at)
{
	perr_tok(ps, at, "integer overflow (the limit is 2^63-1)");
	return false;
}

static bool static_term_rest(struct parser *ps, int64_t t, int64_t *v, int lvl, const char *want)
{
	while (ps->tok->kind == TIR_TOK_STAR || ps->tok->kind == TIR_TOK_SLASHSLASH ||
	       ps->tok->kind == TIR_TOK_PERCENT) {
		struct tir_token op = *ps->tok;
		advance(ps);
		int64_t f;
		if (!static_factor(ps, &f, lvl, want))
			return false;
		if (op.kind == TIR_TOK_STAR) {
			if (__builtin_mul_overflow(t, f, &t))
				return static_overflow(ps, &op);
			continue;
		}
		/* Python's // and %: toward -inf, the divisor's sign */
		if (f == 0) {
			perr_tok(ps, &op, "integer division by zero");
			return false;
		}
		if (t == INT64_MIN && f == -1)
			return static_overflow(ps, &op);
		int64_t q = t / f, r = t % f;
		if (r != 0 && (r < 0) != (f < 0)) {
			q--;
			r += f;
		}
		t = op.kind == TIR_TOK_SLASHSLASH ? q : r;
	}
	*v = t;
	return true;
}

static bool static_expr_rest(struct parser *ps, int64_t first, int64_t *v, int lvl, const char *want)
{
	int64_t acc;
	if (!static_term_rest(ps, first, &acc, lvl, want))
		return false;
	while (ps->tok->kind == TIR_TOK_PLUS || ps->tok->kind == TIR_TOK_MINUS) {
		struct tir_token op = *ps->tok;
		advance(ps);
		int64_t f, t;
		if (!static_factor(ps, &f, lvl, want) || !static_term_rest(ps, f, &t, lvl, want))
			return false;
		if (op.kind == TIR_TOK_PLUS ? __builtin_add_overflow(acc, t, &acc)
					    : __builtin_sub_overflow(acc, t, &acc))
			return static_overflow(ps, &op);
	}
	*v = acc;
	return true;
}

static bool static_factor(struct parser *ps, int64_t *v, int lvl, const char *want)
{
	struct tir_token t = *ps->tok;
	if (lvl > 64) {
		perr_tok(ps, &t, "integer expression nested deeper than 64 levels");
		return false;
	}
	switch (t.kind) {
	case TIR_TOK_MINUS:
		advance(ps);
		if (!static_factor(ps, v, lvl + 1, want))
			return false;
		if (*v == INT64_MIN)
			return static_overflow(ps, &t);
		*v = -*v;
		return true;
	case TIR_TOK_INT:
		*v = t.ival;
		advance(ps);
		return true;
	case TIR_TOK_NAME:
		if (!static_name(ps, ps->lx.src->text + t.off, t.len, v))
			break;
		advance(ps);
		return true;
	case TIR_TOK_LPAREN: {
		advance(ps);
		int64_t f;
		return static_factor(ps, &f, lvl + 1, want) && static_expr_rest(ps, f, v, lvl + 1, want) &&
		       close_bracket(ps, TIR_TOK_RPAREN, &t);
	}
	default:
		break;
	}
	expected(ps, want);
	return false;
}

/* iexpr, at the current token. */
static bool parse_static(struct parser *ps, int64_t *v, const char *want)
{
	int64_t f;
	return static_factor(ps, &f, 0, want) && static_expr_rest(ps, f, v, 0, want);
}

/* Whether the current token begins an integer known when checked that
 * parse_number would not read: a name that is one, "(", or "-" before
 * either. */
static bool static_start(struct parser *ps)
{
	const struct tir_token *t = ps->tok;
	int64_t v;
	if (t->kind == TIR_TOK_MINUS)
		t = peek(ps);
	if (t->kind == TIR_TOK_LPAREN)
		return true;
	return t->kind == TIR_TOK_NAME && static_name(ps, ps->lx.src->text + t->off, t->len, &v);
}

#define STATIC_WANT "an integer known when checked (a literal, a loop index, an int parameter, or a name bound to an integer literal)"

/* ---- nodes ---- */

struct tir_node *tir_node_new(struct tir_program *p, enum tir_op op, int nin, const struct tir_loc *loc,
			      uint32_t stmt)
{
	const struct tir_opdef *d = tir_op(op);
	/* the node, its attributes and its operands in one piece */
	size_t nattr = (size_t)d->nattr, n_in = (size_t)nin;
	struct tir_node *n = tir_arena_alloc8(&p->node_arena, sizeof *n + sizeof *n->attr * nattr +
							(sizeof *n->in + sizeof *n->inloc) * n_in);
	if (!n || (p->nnodes >= p->capnodes &&
		   tir_grow_pages((void **)&p->nodes, &p->capnodes, p->nnodes + 1, sizeof *p->nodes)))
		return NULL;
	n->op = op;
	n->type.shape = tir_shape0;
	n->loc = *loc;
	n->nin = (uint16_t)nin;
	n->stmt = stmt;
	if (nattr) {
		n->attr = (struct tir_attr *)(n + 1);
		memcpy(n->attr, d->defaults, sizeof *n->attr * nattr);
	}
	if (n_in) {
		n->in = (struct tir_node **)((struct tir_attr *)(n + 1) + nattr);
		n->inloc = (struct tir_oploc *)(n->in + n_in);
	}
	n->id = (uint32_t)p->nnodes;
	p->nodes[p->nnodes++] = n;
	return n;
}

static struct tir_node *new_node(struct parser *ps, enum tir_op op, int nin, const struct tir_loc *loc)
{
	struct tir_node *n = tir_node_new(ps->prog, op, nin, loc, ps->stmt);
	if (!n) {
		perr(ps, TIR_ENOMEM, loc, "out of memory");
		return NULL;
	}
	n->in_print = ps->in_print;
	return n;
}

/* Type-check a finished node; NULL (error reported) when it does not. */
static void settle_literals(struct parser *ps, struct tir_node *n);
static void settle_for(struct parser *ps, const struct tir_node *n, enum tir_dtype want);

static struct tir_node *checked(struct parser *ps, struct tir_node *n)
{
	if (!n)
		return NULL;
	if (ps->nlits)
		settle_literals(ps, n);
	struct tir_err e; /* a failing rule fills it (tir_errf): not zeroed for every node */
	const struct tir_pass *pass = &ps->prog->pass;
	if (tir_check_node(n, &ps->prog->node_arena, &e) == 0 && (!pass->node || pass->node(pass->ud, ps->prog, n, &e) == 0))
		return n;
	if (e.loc.src == NULL)
		e.loc = n->loc;
	add_diag(ps, &e);
	return NULL;
}

/* A float list literal is f32 unless its use needs another dtype: as an
 * operand of cast to f64, or beside an f64 tensor, it is f64, its values
 * as written (so [100000001.0] keeps its 1).  n is the op about to be
 * checked.  A literal bound to a name first, or alone, stays f32. */
static void settle_literals(struct parser *ps, struct tir_node *n)
{
	enum tir_dtype want = TIR_DTYPE_F32;
	if (n->op == TIR_OP_CAST)
		want = (enum tir_dtype)n->attr[0].i;
	for (int i = 0; i < n->nin; i++) {
		const struct tir_node *o = n->in[i];
		if (o && !(o->op == TIR_OP_CONST && o->data && o->type.dtype == TIR_DTYPE_F32) && !o->type.weak &&
		    o->type.dtype == TIR_DTYPE_F64)
			want = TIR_DTYPE_F64;
	}
	settle_for(ps, n, want);
}

/* Settle the pending literals among n's operands to `want`. */
static void settle_for(struct parser *ps, const struct tir_node *n, enum tir_dtype want)
{
	for (size_t k = 0; k < ps->nlits; k++) {
		struct float_lit *l = &ps->lits[k];
		bool operand = false;
		for (int i = 0; i < n->nin; i++)
			operand |= n->in[i] == l->node;
		if (!operand || l->node->name)
			continue;
		if (want == TIR_DTYPE_F64) {
			int64_t m = tir_type_numel(&l->node->type);
			double *d = tir_arena_alloc(&ps->prog->arena, sizeof *d * (size_t)m + 1);
			if (d) {
				memcpy(d, l->v, sizeof *d * (size_t)m);
				l->node->data = d;
				l->node->type.dtype = TIR_DTYPE_F64;
			}
		}
	}
}

static struct tir_node *scalar(struct parser *ps, const struct tir_loc *loc, enum tir_dtype dt,
			       int64_t iv, double fv)
{
	struct tir_node *n = new_node(ps, TIR_OP_CONST, 0, loc);
	if (!n)
		return NULL;
	n->type.dtype = dt;
	n->type.weak = true;
	n->ival = iv;
	n->fval = fv;
	return n;
}

static unsigned lit_slot(enum tir_dtype dt, int64_t iv, double fv)
{
	uint64_t b;
	memcpy(&b, &fv, sizeof b);
	uint64_t h = (b ^ (uint64_t)iv * 0x9E3779B97F4A7C15u ^ (uint64_t)dt) * 0xD6E8FEB86659FD93u;
	return (unsigned)(h >> 56) % LIT_SLOTS;
}

/* A literal as written (a number, true, false, inf, nan): the node of an
 * earlier one of the same value when there is one to share (see
 * LIT_SLOTS), else a new one, kept for those after it. */
static struct tir_node *literal(struct parser *ps, const struct tir_loc *loc, enum tir_dtype dt, int64_t iv,
				double fv)
{
	struct tir_node **slot = &ps->lits_by_value[lit_slot(dt, iv, fv)];
	struct tir_node *o = *slot;
	const struct tir_program *p = ps->prog;
	if (o && o->id < p->nnodes && p->nodes[o->id] == o && o->op == TIR_OP_CONST && o->type.dtype == dt && o->ival == iv &&
	    !memcmp(&o->fval, &fv, sizeof fv) && !o->name && !o->ref_name) {
		o->lit_shared = true;
		ps->lit_hit = o;
		ps->lit_hit_at = *loc;
		return o;
	}
	struct tir_node *n = scalar(ps, loc, dt, iv, fv);
	if (n)
		*slot = n;
	return n;
}

/* The node a statement binds to a name, when it is a weak literal: one
 * the parser shares (literal) would carry the name into every place it
 * is written, so the binding gets a copy of it; else it is taken out of
 * the literals to share.  NULL when out of memory. */
static struct tir_node *literal_to_bind(struct parser *ps, struct tir_node *n)
{
	struct tir_node **slot = &ps->lits_by_value[lit_slot((enum tir_dtype)n->type.dtype, n->ival, n->fval)];
	if (!n->lit_shared) {
		if (*slot == n)
			*slot = NULL;
		return n;
	}
	return scalar(ps, n == ps->lit_hit ? &ps->lit_hit_at : &n->loc, (enum tir_dtype)n->type.dtype, n->ival,
		      n->fval);
}

/* A loop's index or an int parameter where a tensor may be: an integer
 * literal, marked so that i + 1 folds. */
static struct tir_node *known_int(struct parser *ps, const struct tir_loc *loc, int64_t v)
{
	struct tir_node *n = scalar(ps, loc, TIR_DTYPE_I64, v, (double)v);
	if (n)
		n->known_int = true;
	return n;
}

/* ---- expressions ---- */

static struct tir_node *parse_expr(struct parser *ps, struct tir_loc *start);
static struct tir_node *parse_fn_call(struct parser *ps, struct tir_func *f, const struct tir_token *name);
static void unknown_call(struct parser *ps, const struct tir_token *t);

static bool enter(struct parser *ps)
{
	if (++ps->depth > TIR_MAX_DEPTH) {
		perr_tok(ps, ps->tok, "expression nested deeper than %d levels", TIR_MAX_DEPTH);
		return false;
	}
	return true;
}

/* A number literal with an optional sign, for attributes and list
 * literals: INT | FLOAT | inf | nan, after an optional '-'. */
static bool parse_number(struct parser *ps, bool *is_int, int64_t *iv, double *fv)
{
	bool neg = accept(ps, TIR_TOK_MINUS);
	const struct tir_token *t = ps->tok;
	if (t->kind == TIR_TOK_INT) {
		*is_int = true;
		*iv = neg ? -t->ival : t->ival;
		*fv = neg ? -t->fval : t->fval;
	} else if (t->kind == TIR_TOK_FLOAT) {
		*is_int = false;
		*fv = neg ? -t->fval : t->fval;
		*iv = 0;
	} else if (tok_is(ps, t, "inf") || tok_is(ps, t, "nan")) {
		*is_int = false;
		*fv = tok_is(ps, t, "inf") ? INFINITY : NAN;
		if (neg)
			*fv = -*fv;
		*iv = 0;
	} else {
		expected(ps, "a number");
		return false;
	}
	advance(ps);
	return true;
}

static bool is_static_op(enum tir_tok k)
{
	return k == TIR_TOK_PLUS || k == TIR_TOK_MINUS || k == TIR_TOK_STAR || k == TIR_TOK_SLASHSLASH ||
	       k == TIR_TOK_PERCENT;
}

/* A numeric attribute: a number literal, or an integer known when checked
 * (i, i + 1, 2 * n).  *wrong when the token can begin neither (nothing
 * consumed, nothing reported). */
static bool parse_num_or_static(struct parser *ps, const struct tir_token *at, bool *is_int, int64_t *iv,
				double *fv, bool *wrong)
{
	*wrong = false;
	if (static_start(ps)) {
		if (!parse_static(ps, iv, "an integer"))
			return false;
		*is_int = true;
		*fv = (double)*iv;
		return true;
	}
	if (at->kind != TIR_TOK_INT && at->kind != TIR_TOK_FLOAT && at->kind != TIR_TOK_MINUS &&
	    !tok_is(ps, at, "inf") && !tok_is(ps, at, "nan")) {
		*wrong = true;
		return true;
	}
	if (!parse_number(ps, is_int, iv, fv))
		return false;
	if (*is_int && is_static_op(ps->tok->kind)) { /* 2 * i */
		if (!static_expr_rest(ps, *iv, iv, 0, "an integer"))
			return false;
		*fv = (double)*iv;
	}
	return true;
}

/* Values of a list literal, gathered before their shape is known. */
struct litbuf {
	double *f;
	int64_t *i;
	size_t n, capf, capi;
	bool any_float, any_num, any_bool;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	bool seen[TIR_MAX_RANK + 1];   /* a list at this depth was completed */
	bool scalars_at[TIR_MAX_RANK + 1];
};

/* list_literal = "[" [ elem { "," elem } [","] ] "]"
 * elem = list_literal | ["-"] number | true | false */
static bool parse_list_rec(struct parser *ps, struct litbuf *lb, int level)
{
	struct tir_token open = *ps->tok;
	advance(ps); /* '[' */
	if (level >= TIR_MAX_RANK) {
		perr_tok(ps, &open, "list literal nested deeper than %d (the rank limit)", TIR_MAX_RANK);
		return false;
	}
	if (!enter(ps))
		return false;
	int64_t count = 0;
	int kind = -1; /* 0 scalars, 1 lists */
	while (ps->tok->kind != TIR_TOK_RBRACKET) {
		struct tir_token at = *ps->tok;
		int k = at.kind == TIR_TOK_LBRACKET ? 1 : 0;
		if (kind >= 0 && k != kind) {
			perr_tok(ps, &at, "ragged list literal: mixes numbers and lists at one level");
			return false;
		}
		kind = k;
		if (k) {
			if (!parse_list_rec(ps, lb, level + 1))
				return false;
		} else {
			bool is_int;
			int64_t iv;
			double fv;
			if (is_bool_word(ps, &at)) {
				lb->any_bool = true;
				is_int = true;
				iv = is_true(ps, &at);
				fv = (double)iv;
				advance(ps);
			} else if (static_start(ps)) {
				if (!parse_static(ps, &iv, "an integer"))
					return false;
				is_int = true;
				fv = (double)iv;
				lb->any_num = true;
			} else if ((at.kind == TIR_TOK_NAME && !tok_is(ps, &at, "inf") && !tok_is(ps, &at, "nan")) ||
				   at.kind == TIR_TOK_LPAREN) {
				perr_tok(ps, &at, "a list literal holds numbers only; to join tensors use concat([a, b], axis=0)");
				return false;
			} else if (!parse_number(ps, &is_int, &iv, &fv)) {
				return false;
			} else {
				lb->any_num = true;
				if (is_int && is_static_op(ps->tok->kind)) {
					if (!static_expr_rest(ps, iv, &iv, 0, "an integer"))
						return false;
					fv = (double)iv;
				}
			}
			if (!is_int)
				lb->any_float = true;
			if ((int64_t)lb->n >= TIR_MAX_ELEMS) {
				perr_tok(ps, &at, "list literal has more than %lld elements",
					 (long long)TIR_MAX_ELEMS);
				return false;
			}
			if (tir_grow((void **)&lb->f, &lb->capf, lb->n + 1, sizeof *lb->f) ||
			    tir_grow((void **)&lb->i, &lb->capi, lb->n + 1, sizeof *lb->i)) {
				perr_tok(ps, &at, "out of memory");
				return false;
			}
			lb->f[lb->n] = fv;
			lb->i[lb->n] = iv;
			lb->n++;
		}
		count++;
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	if (!close_bracket(ps, TIR_TOK_RBRACKET, &open))
		return false;
	ps->depth--;
	/* every list at one level has the length of the first one there */
	if (!lb->seen[level]) {
		lb->seen[level] = true;
		lb->shape[level] = count;
		lb->scalars_at[level] = kind == 0;
		if (level + 1 > lb->rank)
			lb->rank = level + 1;
	} else if (lb->shape[level] != count || (count && lb->scalars_at[level] != (kind == 0))) {
		perr_tok(ps, &open, "ragged list literal: this list has %lld element%s, the first one at its level has %lld",
			 (long long)count, count == 1 ? "" : "s", (long long)lb->shape[level]);
		return false;
	}
	/* an empty list where lists were expected, or lists where numbers were */
	if (count == 0 && level + 1 < lb->rank) {
		perr_tok(ps, &open, "ragged list literal: an empty list beside non-empty ones");
		return false;
	}
	return true;
}

static struct tir_node *parse_list_literal(struct parser *ps, const struct tir_loc *loc)
{
	struct litbuf lb = {0};
	struct tir_node *n = NULL;
	if (!parse_list_rec(ps, &lb, 0))
		goto out;
	/* numbers at the deepest level only */
	for (int l = 0; l + 1 < lb.rank; l++) {
		if (lb.scalars_at[l] && lb.shape[l]) {
			perr(ps, TIR_ESYNTAX, loc, "ragged list literal: numbers and lists at the same level");
			goto out;
		}
	}
	n = new_node(ps, TIR_OP_CONST, 0, loc);
	if (!n)
		goto out;
	enum tir_dtype dt = lb.any_float ? TIR_DTYPE_F32
			    : lb.any_num  ? TIR_DTYPE_I64
			    : lb.any_bool ? TIR_DTYPE_BOOL
					  : TIR_DTYPE_F32;
	struct tir_type lt = {.dtype = (uint8_t)dt, .rank = (uint8_t)lb.rank};
	memcpy(lt.shape, lb.shape, sizeof lb.shape);
	if (tir_node_set_type(n, &lt, &ps->prog->node_arena)) {
		perr(ps, TIR_ENOMEM, loc, "out of memory");
		n = NULL;
		goto out;
	}
	if (tir_type_numel(&n->type) != (int64_t)lb.n) {
		perr(ps, TIR_ESYNTAX, loc, "ragged list literal");
		n = NULL;
		goto out;
	}
	size_t sz = tir_dtype_size(dt);
	n->data = tir_arena_alloc(&ps->prog->arena, lb.n * sz + 1);
	if (!n->data) {
		perr(ps, TIR_ENOMEM, loc, "out of memory");
		n = NULL;
		goto out;
	}
	if (dt == TIR_DTYPE_F32 && lb.any_float) {
		struct float_lit l = {.node = n};
		l.v = tir_arena_alloc(&ps->prog->arena, sizeof *l.v * lb.n + 1);
		if (!l.v || tir_grow((void **)&ps->lits, &ps->caplits, ps->nlits + 1, sizeof *ps->lits)) {
			perr(ps, TIR_ENOMEM, loc, "out of memory");
			n = NULL;
			goto out;
		}
		memcpy(l.v, lb.f, sizeof *l.v * lb.n);
		ps->lits[ps->nlits++] = l;
	}
	for (size_t i = 0; i < lb.n; i++) {
		switch (dt) {
		case TIR_DTYPE_F32: ((float *)n->data)[i] = (float)lb.f[i]; break;
		case TIR_DTYPE_I64: ((int64_t *)n->data)[i] = lb.i[i]; break;
		case TIR_DTYPE_BOOL: ((uint8_t *)n->data)[i] = lb.i[i] != 0; break;
		default: TIR_ASSERT(0);
		}
	}
out:
	free(lb.f);
	free(lb.i);
	return n;
}

/* ---- strings: escapes and {...} ----
 * A string's {iexpr} is replaced by the integer's decimal digits (a loop
 * index, an int parameter: "h.{i}.weight"); "{{" and "}}" are braces. */

struct interp {
	struct parser *ps;
	const struct tir_token *t;
	const char *s;             /* the token's text */
	size_t i;                  /* at s[i] */
};

/* The position of byte k of string token t (it is on one line). */
static void loc_in_string(const struct parser *ps, const struct tir_token *t, size_t k, struct tir_loc *loc)
{
	const char *s = ps->lx.src->text + t->off;
	uint32_t col = t->col;
	for (size_t j = 0; j < k; j++)
		col += ((unsigned char)s[j] & 0xC0) != 0x80;
	loc->src = ps->lx.src;
	loc->off = t->off + (uint32_t)k;
	loc->line = t->line + ps->line_base;
	loc->col = col;
}

static bool interp_fail(struct interp *c, size_t k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool interp_fail(struct interp *c, size_t k, const char *fmt, ...)
{
	struct tir_err e = {.code = TIR_ESYNTAX};
	loc_in_string(c->ps, c->t, k, &e.loc);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	add_diag(c->ps, &e);
	return false;
}

static void interp_blank(struct interp *c)
{
	while (c->s[c->i] == ' ' || c->s[c->i] == '\t')
		c->i++;
}

static bool interp_sum(struct interp *c, int64_t *v, int lvl);

static bool interp_factor(struct interp *c, int64_t *v, int lvl)
{
	interp_blank(c);
	size_t at = c->i;
	char ch = c->s[at];
	if (lvl > 64)
		return interp_fail(c, at, "integer expression nested deeper than 64 levels");
	if (ch == '-') {
		c->i++;
		if (!interp_factor(c, v, lvl + 1))
			return false;
		if (*v == INT64_MIN)
			return interp_fail(c, at, "integer overflow (the limit is 2^63-1)");
		*v = -*v;
		return true;
	}
	if (ch == '(') {
		c->i++;
		if (!interp_sum(c, v, lvl + 1))
			return false;
		interp_blank(c);
		if (c->s[c->i] != ')')
			return interp_fail(c, c->i, "expected ')' to close '(' in {...}");
		c->i++;
		return true;
	}
	if (ch >= '0' && ch <= '9') {
		uint64_t x = 0;
		for (; c->s[c->i] >= '0' && c->s[c->i] <= '9'; c->i++) {
			unsigned d = (unsigned)(c->s[c->i] - '0');
			if (x > (UINT64_C(9223372036854775807) - d) / 10)
				return interp_fail(c, at, "integer overflow (the limit is 2^63-1)");
			x = x * 10 + d;
		}
		*v = (int64_t)x;
		return true;
	}
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
		size_t b = c->i;
		while ((c->s[c->i] >= 'a' && c->s[c->i] <= 'z') || (c->s[c->i] >= 'A' && c->s[c->i] <= 'Z') ||
		       (c->s[c->i] >= '0' && c->s[c->i] <= '9') || c->s[c->i] == '_')
			c->i++;
		size_t n = c->i - b;
		if (!static_name(c->ps, c->s + b, n, v))
			return interp_fail(c, b,
					   "'%.*s' in a string's {...} is not a loop index, an int parameter or a name "
					   "bound to an integer literal (a brace itself is written {{ or }})",
					   (int)(n > 40 ? 40 : n), c->s + b);
		return true;
	}
	return interp_fail(c, at, "expected an integer expression in {...} (a brace itself is written {{ or }})");
}

static bool interp_sum(struct interp *c, int64_t *v, int lvl)
{
	int64_t acc = 0, t;
	char op = '+';
	for (;;) {
		size_t at = c->i;
		if (!interp_factor(c, &t, lvl))
			return false;
		interp_blank(c);
		while (c->s[c->i] == '*' || c->s[c->i] == '%' || (c->s[c->i] == '/' && c->s[c->i + 1] == '/')) {
			int64_t f;
			size_t mat = c->i;
			char mop = c->s[c->i];
			c->i += mop == '/' ? 2 : 1;
			if (!interp_factor(c, &f, lvl))
				return false;
			if (mop == '*') {
				if (__builtin_mul_overflow(t, f, &t))
					return interp_fail(c, mat, "integer overflow (the limit is 2^63-1)");
			} else if (f == 0) {
				return interp_fail(c, mat, "integer division by zero");
			} else if (t == INT64_MIN && f == -1) {
				return interp_fail(c, mat, "integer overflow (the limit is 2^63-1)");
			} else { /* Python's // and % */
				int64_t q = t / f, r = t % f;
				if (r != 0 && (r < 0) != (f < 0)) {
					q--;
					r += f;
				}
				t = mop == '/' ? q : r;
			}
			interp_blank(c);
		}
		if (op == '+' ? __builtin_add_overflow(acc, t, &acc) : __builtin_sub_overflow(acc, t, &acc))
			return interp_fail(c, at, "integer overflow (the limit is 2^63-1)");
		if (c->s[c->i] != '+' && c->s[c->i] != '-')
			break;
		op = c->s[c->i++];
	}
	*v = acc;
	return true;
}

/* A string literal's contents (escapes \" \\ \n \t, and {...}). */
static const char *string_value(struct parser *ps, const struct tir_token *t)
{
	const char *s = ps->lx.src->text + t->off;
	size_t n = t->len - 1; /* s[0] and s[n] are the quotes */
	struct tir_str d = {0};
	struct interp c = {.ps = ps, .t = t, .s = s};
	const char *out = NULL;
	for (size_t i = 1; i < n; i++) {
		char ch = s[i];
		if (ch == '\\' && i + 1 < n) {
			ch = s[++i];
			ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
		} else if ((ch == '{' || ch == '}') && s[i + 1] == ch) {
			i++; /* {{ and }} */
		} else if (ch == '}') {
			interp_fail(&c, i, "a '}' alone in a string: write '}}' for a brace, or {NAME} to put in an integer");
			goto out;
		} else if (ch == '{') {
			int64_t v;
			/* {NAME} of a string: the string */
			size_t b = i + 1, e;
			while (b < n && (s[b] == ' ' || s[b] == '\t'))
				b++;
			for (e = b; e < n && (s[e] == '_' || (s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z') ||
					      (e > b && s[e] >= '0' && s[e] <= '9'));)
				e++;
			size_t m = e;
			while (m < n && (s[m] == ' ' || s[m] == '\t'))
				m++;
			if (e > b && m < n && s[m] == '}') {
				struct look lk;
				lookup_name(ps, s + b, e - b, &lk);
				if (lk.kind == L_STR) {
					tir_str_add(&d, lk.str, strlen(lk.str));
					i = m;
					continue;
				}
			}
			c.i = i + 1;
			if (!interp_sum(&c, &v, 0))
				goto out;
			interp_blank(&c);
			if (c.i >= n || s[c.i] != '}') {
				interp_fail(&c, c.i >= n ? i : c.i, "expected '}' to close the '{' of this string");
				goto out;
			}
			tir_str_addf(&d, "%lld", (long long)v);
			i = c.i;
			continue;
		}
		if (ch == 0) {
			struct tir_loc loc;
			loc_tok(ps, t, &loc);
			perr(ps, TIR_ESYNTAX, &loc, "a string may not contain a NUL byte");
			goto out;
		}
		tir_str_add(&d, &ch, 1);
	}
	if (!d.oom)
		out = tir_arena_strndup(&ps->prog->arena, d.s ? d.s : "", d.n);
out:
	tir_str_free(&d);
	return out;
}

/* The string a NAME token names (ck = "m.npy"), or NULL. */
static const char *string_name(struct parser *ps, const struct tir_token *t)
{
	if (t->kind != TIR_TOK_NAME)
		return NULL;
	struct look lk;
	lookup_name(ps, ps->lx.src->text + t->off, t->len, &lk);
	return lk.kind == L_STR ? lk.str : NULL;
}

/* Whether the current token is a string: a STRING, or a name for one. */
static bool at_string(struct parser *ps)
{
	return ps->tok->kind == TIR_TOK_STRING || string_name(ps, ps->tok);
}

/* The string at the current token (at_string), consumed; NULL on error
 * (reported). */
static const char *take_string(struct parser *ps)
{
	const char *v = ps->tok->kind == TIR_TOK_STRING ? string_value(ps, ps->tok) : string_name(ps, ps->tok);
	advance(ps);
	return v;
}

static const char *attr_kind_text(enum tir_attr_kind k)
{
	switch (k) {
	case TIR_ATTR_INT: return "an integer";
	case TIR_ATTR_FLOAT: return "a number";
	case TIR_ATTR_NUM: return "a number";
	case TIR_ATTR_BOOL: return "true or false";
	case TIR_ATTR_DTYPE: return "a dtype (f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool)";
	case TIR_ATTR_SHAPE: return "a list of integers";
	case TIR_ATTR_AXES: return "an integer or a list of integers";
	case TIR_ATTR_PAIR: return "an integer or a pair [a, b]";
	case TIR_ATTR_PADS: return "a list of [before, after] pairs";
	case TIR_ATTR_STR: return "a string";
	case TIR_ATTR_WORD: return "a name";
	case TIR_ATTR_STRS: return "a list of strings";
	default: return "?";
	}
}

/* int_list = "[" [ ["-"] INT { "," ["-"] INT } [","] ] "]" */
/* Integers separated by commas into buf[*n ..] (at most max in all), up
 * to the closing token `close`, which is left for the caller; a trailing
 * comma is taken. */
static bool parse_int_entries(struct parser *ps, int64_t *buf, int *n, int max, enum tir_tok close)
{
	while (ps->tok->kind != close) {
		struct tir_token at = *ps->tok;
		int64_t v;
		if (!parse_static(ps, &v, "an integer"))
			return false;
		if (*n >= max) {
			perr_tok(ps, &at, "too many entries (at most %d)", max);
			return false;
		}
		buf[(*n)++] = v;
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	return true;
}

/* The n integers of buf as a's values, in the program's arena (room for
 * at least `room`). */
static bool store_ints(struct parser *ps, struct tir_attr *a, const int64_t *buf, int n, int room)
{
	a->n = n;
	a->v = tir_arena_alloc(&ps->prog->arena, sizeof *a->v * (size_t)(n > room ? n : room));
	if (!a->v)
		return false;
	memcpy(a->v, buf, sizeof *a->v * (size_t)n);
	return true;
}

static bool parse_int_list(struct parser *ps, struct tir_attr *a, int max)
{
	struct tir_token open = *ps->tok;
	advance(ps);
	int64_t buf[TIR_MAX_RANK * 2];
	int n = 0;
	if (!parse_int_entries(ps, buf, &n, max, TIR_TOK_RBRACKET) || !close_bracket(ps, TIR_TOK_RBRACKET, &open) ||
	    !store_ints(ps, a, buf, n, 1))
		return false;
	a->is_list = true;
	return true;
}

/* A Python tuple where a list of integers is taken: "(" iexpr "," ... ")".
 * (n) alone is the integer n, as in Python, and may go on as an iexpr:
 * (n + 1) * 2.  *one when it was a single integer (in a->v[0]). */
static bool parse_int_tuple(struct parser *ps, struct tir_attr *a, int max, bool *one)
{
	struct tir_token open = *ps->tok;
	advance(ps);
	int64_t buf[TIR_MAX_RANK * 2];
	int n = 0;
	*one = false;
	if (ps->tok->kind != TIR_TOK_RPAREN) {
		if (!parse_static(ps, &buf[0], "an integer"))
			return false;
		n = 1;
		if (ps->tok->kind == TIR_TOK_RPAREN) { /* (n): an integer in parentheses */
			advance(ps);
			*one = true;
			if (is_static_op(ps->tok->kind) && !static_expr_rest(ps, buf[0], &buf[0], 0, "an integer"))
				return false;
		} else if (!accept(ps, TIR_TOK_COMMA)) {
			close_bracket(ps, TIR_TOK_RPAREN, &open);
			return false;
		}
	}
	if (!*one && (!parse_int_entries(ps, buf, &n, max, TIR_TOK_RPAREN) || !close_bracket(ps, TIR_TOK_RPAREN, &open)))
		return false;
	if (!store_ints(ps, a, buf, n, 2))
		return false;
	a->i = n ? buf[0] : 0;
	a->is_list = !*one;
	return true;
}

/* An attribute's literal value, of the kind the op's signature says. */
static bool parse_attr(struct parser *ps, const char *opname, const struct tir_param *prm,
		       struct tir_attr *a)
{
	struct tir_token at = *ps->tok;
	char got[80];
	bool wrong_kind = false;
	memset(a, 0, sizeof *a);
	a->set = true;
	switch (prm->kind) {
	case TIR_ATTR_INT:
	case TIR_ATTR_FLOAT:
	case TIR_ATTR_NUM: {
		bool is_int;
		if (!parse_num_or_static(ps, &at, &is_int, &a->i, &a->f, &wrong_kind))
			return false;
		if (wrong_kind)
			goto wrong;
		if (prm->kind == TIR_ATTR_INT && !is_int) {
			perr_tok(ps, &at, "%s: '%s' must be an integer, got %g", opname, prm->name, a->f);
			return false;
		}
		a->is_int = is_int;
		return true;
	}
	case TIR_ATTR_BOOL:
		if (!is_bool_word(ps, &at))
			goto wrong;
		a->i = is_true(ps, &at);
		advance(ps);
		return true;
	case TIR_ATTR_DTYPE:
		if (at.kind != TIR_TOK_NAME)
			goto wrong;
		a->i = tir_dtype_from_name(ps->lx.src->text + at.off, at.len);
		if (a->i < 0)
			goto wrong;
		advance(ps);
		return true;
	case TIR_ATTR_SHAPE:
	case TIR_ATTR_AXES:
	case TIR_ATTR_PAIR:
		if (at.kind == TIR_TOK_LPAREN) { /* a tuple: (2, 3) */
			bool one;
			if (!parse_int_tuple(ps, a, TIR_MAX_RANK, &one))
				return false;
			if (one && prm->kind != TIR_ATTR_AXES) { /* (5) is 5: [5], or the pair [5, 5] */
				a->v[1] = a->v[0];
				a->n = prm->kind == TIR_ATTR_PAIR ? 2 : 1;
				a->is_list = prm->kind == TIR_ATTR_SHAPE;
			}
			if (prm->kind == TIR_ATTR_PAIR && a->n != 2) {
				perr_tok(ps, &at, "%s: '%s' must be an integer or a pair (a, b), got %d entries",
					 opname, prm->name, a->n);
				return false;
			}
			return true;
		}
		if (prm->kind != TIR_ATTR_SHAPE)
			goto axes;
		if (at.kind == TIR_TOK_INT || (at.kind != TIR_TOK_MINUS && static_start(ps))) {
			/* zeros(5) is zeros([5]) */
			a->n = 1;
			a->v = tir_arena_alloc(&ps->prog->arena, sizeof *a->v);
			if (!a->v)
				return false;
			if (!parse_static(ps, &a->v[0], "an integer"))
				return false;
			a->is_list = true;
			return true;
		}
		if (at.kind != TIR_TOK_LBRACKET)
			goto wrong;
		return parse_int_list(ps, a, TIR_MAX_RANK);
	axes:
		if (at.kind == TIR_TOK_LBRACKET) {
			if (!parse_int_list(ps, a, TIR_MAX_RANK))
				return false;
			if (prm->kind == TIR_ATTR_PAIR && a->n != 2) {
				perr_tok(ps, &at, "%s: '%s' must be an integer or a pair [a, b], got %d entries",
					 opname, prm->name, a->n);
				return false;
			}
			return true;
		}
		if (at.kind != TIR_TOK_INT && at.kind != TIR_TOK_MINUS && !static_start(ps))
			goto wrong;
		{
			int64_t v;
			if (!parse_static(ps, &v, "an integer"))
				return false;
			a->n = prm->kind == TIR_ATTR_PAIR ? 2 : 1;
			a->v = tir_arena_alloc(&ps->prog->arena, sizeof *a->v * 2);
			if (!a->v)
				return false;
			a->v[0] = a->v[1] = v;
			a->i = v;
		}
		return true;
	case TIR_ATTR_PADS: {
		if (at.kind != TIR_TOK_LBRACKET)
			goto wrong;
		struct tir_token open = at;
		advance(ps);
		int64_t buf[TIR_MAX_RANK * 2];
		int n = 0;
		while (ps->tok->kind != TIR_TOK_RBRACKET) {
			struct tir_attr pair = {0};
			struct tir_token pt = *ps->tok;
			if (pt.kind != TIR_TOK_LBRACKET) {
				expected(ps, "a pair [before, after]");
				return false;
			}
			if (!parse_int_list(ps, &pair, 2))
				return false;
			if (pair.n != 2 || n >= TIR_MAX_RANK) {
				perr_tok(ps, &pt, "%s: each pad is a pair [before, after]%s", opname,
					 n >= TIR_MAX_RANK ? " (and at most 8 of them)" : "");
				return false;
			}
			buf[2 * n] = pair.v[0];
			buf[2 * n + 1] = pair.v[1];
			n++;
			if (!accept(ps, TIR_TOK_COMMA))
				break;
		}
		if (!close_bracket(ps, TIR_TOK_RBRACKET, &open))
			return false;
		a->n = 2 * n;
		a->v = tir_arena_alloc(&ps->prog->arena, sizeof *a->v * (size_t)(2 * n + 1));
		if (!a->v)
			return false;
		memcpy(a->v, buf, sizeof *a->v * (size_t)(2 * n));
		a->is_list = true;
		return true;
	}
	case TIR_ATTR_STR:
		if (!at_string(ps))
			goto wrong;
		return (a->s = take_string(ps)) != NULL;
	case TIR_ATTR_STRS: {
		if (at.kind != TIR_TOK_LBRACKET)
			goto wrong;
		struct tir_token open = at;
		advance(ps);
		const char *buf[TIR_MAX_STRS];
		int n = 0;
		while (ps->tok->kind != TIR_TOK_RBRACKET) {
			struct tir_token st = *ps->tok;
			if (!at_string(ps)) {
				expected(ps, "a string");
				return false;
			}
			if (n >= TIR_MAX_STRS) {
				perr_tok(ps, &st, "%s: '%s' has more than %d strings", opname, prm->name, TIR_MAX_STRS);
				return false;
			}
			if (!(buf[n++] = take_string(ps)))
				return false;
			if (!accept(ps, TIR_TOK_COMMA))
				break;
		}
		if (!close_bracket(ps, TIR_TOK_RBRACKET, &open))
			return false;
		a->n = n;
		a->ss = tir_arena_alloc(&ps->prog->arena, sizeof *a->ss * (size_t)(n + 1));
		if (!a->ss)
			return false;
		memcpy(a->ss, buf, sizeof *a->ss * (size_t)n);
		a->is_list = true;
		return true;
	}
	case TIR_ATTR_WORD:
		if (at.kind != TIR_TOK_NAME)
			goto wrong;
		a->s = tir_arena_strndup(&ps->prog->arena, ps->lx.src->text + at.off, at.len);
		advance(ps);
		return a->s != NULL;
	default:
		break;
	}
wrong:
	if (at.kind == TIR_TOK_ERROR || (at.kind == TIR_TOK_EOF && ps->lx.depth > 0)) {
		expected(ps, "");
		return false;
	}
	if (np_prefix(ps, &at))
		return false;
	tok_desc(ps, &at, got, sizeof got);
	const char *np = at.kind == TIR_TOK_NAME ? numpy_spelling(ps->lx.src->text + at.off, at.len) : NULL;
	if (np && prm->kind == TIR_ATTR_DTYPE)
		perr_tok(ps, &at, "%s: '%s' must be a dtype, got %s; did you mean '%s'?", opname, prm->name, got, np);
	else
		perr_tok(ps, &at, "%s: '%s' must be %s, got %s", opname, prm->name,
			 attr_kind_text(prm->kind), got);
	return false;
}

/* A relative load path is relative to the program's file: joined to the
 * folder of the source's name when that has one (not in the REPL, nor for
 * a program read from standard input, whose folder is the current one).
 * The text as written stays in ss[0], for tir fmt. */
static bool relative_path(struct parser *ps, struct tir_attr *a)
{
	const char *name = ps->lx.src->name, *slash = name ? strrchr(name, '/') : NULL;
	if ((ps->flags & TIR_PARSE_REPL) || !slash || !a->s || a->s[0] == '/' || !a->s[0])
		return true;
	size_t dl = (size_t)(slash - name) + 1, pl = strlen(a->s);
	char *j = tir_arena_alloc(&ps->prog->arena, dl + pl + 1);
	const char **ss = tir_arena_alloc(&ps->prog->arena, sizeof *ss);
	if (!j || !ss) {
		perr(ps, TIR_ENOMEM, NULL, "out of memory");
		return false;
	}
	memcpy(j, name, dl);
	memcpy(j + dl, a->s, pl + 1);
	ss[0] = a->s;
	a->ss = ss;
	a->s = j;
	return true;
}

static const char *op_params_text(const struct tir_opdef *d, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < d->nparams && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", d->params[i].name);
	return buf;
}

/* call = NAME "(" [ arg { "," arg } [","] ] ")"
 * arg  = [ NAME "=" ] ( expr | attribute literal | "[" expr {"," expr} "]" ) */
/* Whether call n gives as many results as the names it is bound to
 * (want; 0 when it is an operand): else the error, at the call. */
static bool results_match(struct parser *ps, struct tir_node *n, int want, const struct tir_loc *loc)
{
	const struct tir_opdef *d = tir_op(n->op);
	int nres = tir_node_nres(n);
	char names[80] = "";
	for (int i = 0; i < nres && nres > 1 && strlen(names) + 8 < sizeof names; i++) {
		size_t l = strlen(names);
		if (d->res_var) /* the call's own number: a, b, c, ... */
			snprintf(names + l, sizeof names - l, "%s%c", i ? ", " : "", 'a' + i);
		else
			snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", d->res[i]);
	}
	if (nres > 1 && want == 0) {
		perr(ps, TIR_ETYPE, loc, "%s gives %d results; bind each to a name: %s = %s(...)", d->name, nres,
		     names, d->name);
		return false;
	}
	if (nres != want) {
		if (nres > 1)
			perr(ps, TIR_ETYPE, loc, "%s gives %d results (%s%s) but %d names are bound", d->name, nres,
			     d->res_var ? "its sections: " : "", names, want);
		else
			perr(ps, TIR_ETYPE, loc, "%s gives one result but %d names are bound", d->name, want);
		return false;
	}
	ps->multi = n;
	return true;
}

static struct tir_node *parse_primary(struct parser *ps, struct tir_loc *start);

/* A tensor argument: a name or a number alone before ')' or ',' (tanh(x),
 * the common case) is parse_primary's node, which each level of parse_expr
 * would hand up untouched; anything else parse_expr's.  (A name's next
 * token is peeked already, to tell a keyword argument.) */
static struct tir_node *parse_arg(struct parser *ps, struct tir_loc *start)
{
	enum tir_tok k = ps->tok->kind;
	if (k == TIR_TOK_NAME || k == TIR_TOK_INT || k == TIR_TOK_FLOAT) {
		enum tir_tok next = peek(ps)->kind;
		if (next == TIR_TOK_RPAREN || next == TIR_TOK_COMMA)
			return parse_primary(ps, start);
	}
	return parse_expr(ps, start);
}

static struct tir_node *parse_call(struct parser *ps, enum tir_op op, const struct tir_token *name)
{
	const struct tir_opdef *d = tir_op(op);
	struct tir_loc loc;
	loc_tok(ps, name, &loc);
	advance(ps); /* name */
	struct tir_token open = *ps->tok;
	advance(ps); /* '(' */

	struct tir_node *tens[TIR_MAX_PARAMS]; /* read only where given: not zeroed per call */
	struct tir_loc tloc[TIR_MAX_PARAMS];
	struct tir_attr attrs[TIR_MAX_PARAMS];
	bool given[TIR_MAX_PARAMS] = {0};
	struct tir_node **list = NULL;
	struct tir_loc *listloc = NULL;
	size_t nlist = 0, caplist = 0, caplistloc = 0;
	struct tir_node *n = NULL;
	char pbuf[160];
	int want = ps->want_results; /* the names bound to this call, if it is a statement's whole value */
	ps->want_results = 0;
	memcpy(attrs, d->defaults, sizeof *attrs * (size_t)d->nattr);

	int pos = 0;
	bool seen_kw = false;
	while (ps->tok->kind != TIR_TOK_RPAREN) {
		int pi;
		struct tir_token at = *ps->tok;
		if (at.kind == TIR_TOK_NAME && peek(ps)->kind == TIR_TOK_ASSIGN) {
			const char *kw = ps->lx.src->text + at.off;
			for (pi = 0; pi < d->nparams; pi++)
				if (strlen(d->params[pi].name) == at.len &&
				    !memcmp(d->params[pi].name, kw, at.len))
					break;
			if (pi == d->nparams) {
				const char *sug = NULL;
				for (int k = 0; k < d->nparams; k++)
					if (tir_edit_distance(kw, at.len, d->params[k].name,
							      strlen(d->params[k].name)) <= 2)
						sug = d->params[k].name;
				if (sug)
					perr_tok(ps, &at, "%s has no argument '%.*s'; did you mean '%s'?", d->name,
						 (int)at.len, kw, sug);
				else
					perr_tok(ps, &at, "%s has no argument '%.*s'; it takes (%s)", d->name,
						 (int)at.len, kw, op_params_text(d, pbuf, sizeof pbuf));
				goto fail;
			}
			if (given[pi]) {
				perr_tok(ps, &at, "%s: argument '%s' is given twice", d->name, d->params[pi].name);
				goto fail;
			}
			advance(ps);
			advance(ps);
			seen_kw = true;
		} else {
			if (seen_kw) {
				perr_tok(ps, &at, "%s: a positional argument after keyword arguments", d->name);
				goto fail;
			}
			if (pos >= d->nparams) {
				perr_tok(ps, &at, "%s takes %d argument%s (%s), got more", d->name, d->nparams,
					 d->nparams == 1 ? "" : "s", op_params_text(d, pbuf, sizeof pbuf));
				goto fail;
			}
			pi = pos++;
		}
		given[pi] = true;
		const struct tir_param *prm = &d->params[pi];
		/* a list that is the op's last parameter may be written as the
		 * remaining positional operands (einsum("ij,jk->ik", a, b)) */
		bool rest = prm->list && !seen_kw && pi == d->nparams - 1 && ps->tok->kind != TIR_TOK_LBRACKET;
		if (rest) {
			for (;;) {
				struct tir_loc el;
				struct tir_node *e = parse_expr(ps, &el);
				if (!e)
					goto fail;
				if (nlist >= 60000) {
					perr(ps, TIR_ESYNTAX, &el, "%s: too many operands", d->name);
					goto fail;
				}
				if (tir_grow((void **)&list, &caplist, nlist + 1, sizeof *list) ||
				    tir_grow((void **)&listloc, &caplistloc, nlist + 1, sizeof *listloc)) {
					perr(ps, TIR_ENOMEM, &el, "out of memory");
					goto fail;
				}
				list[nlist] = e;
				listloc[nlist++] = el;
				if (ps->tok->kind != TIR_TOK_COMMA || peek(ps)->kind == TIR_TOK_RPAREN)
					break;
				advance(ps);
			}
		} else if (prm->list) {
			struct tir_token lopen = *ps->tok;
			if (lopen.kind != TIR_TOK_LBRACKET) {
				char got[80];
				tok_desc(ps, &lopen, got, sizeof got);
				perr_tok(ps, &lopen, "%s: '%s' must be a list of tensors [a, b, ...], got %s",
					 d->name, prm->name, got);
				goto fail;
			}
			advance(ps);
			while (ps->tok->kind != TIR_TOK_RBRACKET) {
				struct tir_loc el;
				struct tir_node *e = parse_expr(ps, &el);
				if (!e)
					goto fail;
				if (nlist >= 60000) {
					perr(ps, TIR_ESYNTAX, &el, "%s: too many operands", d->name);
					goto fail;
				}
				if (tir_grow((void **)&list, &caplist, nlist + 1, sizeof *list) ||
				    tir_grow((void **)&listloc, &caplistloc, nlist + 1, sizeof *listloc)) {
					perr(ps, TIR_ENOMEM, &el, "out of memory");
					goto fail;
				}
				list[nlist] = e;
				listloc[nlist++] = el;
				if (!accept(ps, TIR_TOK_COMMA))
					break;
			}
			if (!close_bracket(ps, TIR_TOK_RBRACKET, &lopen))
				goto fail;
		} else if (prm->tensor) {
			tens[pi] = parse_arg(ps, &tloc[pi]);
			if (!tens[pi])
				goto fail;
		} else if (!parse_attr(ps, d->name, prm, &attrs[d->attr_of_param[pi]])) {
			goto fail;
		}
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	if (!close_bracket(ps, TIR_TOK_RPAREN, &open))
		goto fail;

	/* every required parameter given */
	for (int pi = 0; pi < d->nparams; pi++) {
		const struct tir_param *prm = &d->params[pi];
		if (given[pi] || prm->optional || prm->deflt)
			continue;
		perr(ps, TIR_ETYPE, &loc, "%s: missing argument '%s'; it takes (%s)", d->name, prm->name,
		     op_params_text(d, pbuf, sizeof pbuf));
		goto fail;
	}
	int nin = 0;
	for (int pi = 0; pi < d->nparams; pi++)
		if (d->params[pi].tensor)
			nin += d->params[pi].list ? (int)nlist : 1;
	n = new_node(ps, op, nin, &loc);
	if (!n)
		goto fail;
	int k = 0;
	for (int pi = 0; pi < d->nparams; pi++) {
		const struct tir_param *prm = &d->params[pi];
		if (prm->list) {
			for (size_t j = 0; j < nlist; j++) {
				n->in[k] = list[j];
				tir_node_set_inloc(n, k++, &listloc[j]);
			}
		} else if (prm->tensor) {
			if (given[pi]) { /* else an absent optional operand: NULL, as made */
				n->in[k] = tens[pi];
				tir_node_set_inloc(n, k, &tloc[pi]);
			}
			k++;
		}
	}
	if (d->nattr)
		memcpy(n->attr, attrs, sizeof *n->attr * (size_t)d->nattr);
	if (op == TIR_OP_LOAD && !relative_path(ps, &n->attr[0])) {
		n = NULL;
		goto fail;
	}
	if (op == TIR_OP_LOAD) {
		/* the type is in the file's header; whoever hosts us reads it */
		struct tir_err e = {0};
		int dt = 0, rank = 0;
		struct tir_type lt = {0};
		if (!ps->prog->loader) {
			perr(ps, TIR_EUNSUPPORTED, &loc, "load: reading files is not allowed here");
			n = NULL;
			goto fail;
		}
		if (ps->prog->loader(ps->prog->loader_ud, n->attr[0].s, n->attr[1].set ? n->attr[1].s : NULL,
				     (enum tir_dtype *)&dt, &rank, lt.shape, &e)) {
			e.loc = loc;
			add_diag(ps, &e);
			n = NULL;
			goto fail;
		}
		lt.dtype = (uint8_t)dt;
		lt.rank = (uint8_t)rank;
		if (tir_node_set_type(n, &lt, &ps->prog->node_arena)) {
			perr(ps, TIR_ENOMEM, &loc, "out of memory");
			n = NULL;
			goto fail;
		}
	}
	n = checked(ps, n);
	if (n && (d->nres > 1 || want > 0) && !results_match(ps, n, want, &loc))
		n = NULL;
fail:
	free(list);
	free(listloc);
	return n;
}

/* primary = NUMBER | true | false | inf | nan | STRING | list_literal
 *         | NAME | call | "(" expr ")" */
static struct tir_node *parse_primary(struct parser *ps, struct tir_loc *start)
{
	/* The token is read where the lexer wrote it, not copied whole: the
	 * copy, made just after the lexer's narrow stores to it, was a fifth
	 * of this function's time (and reading in place measured 3% off the
	 * parse).  advance() writes the token after next there, so what is
	 * used past it is taken first, and a branch that needs the token
	 * later copies it. */
	const struct tir_token *tp = ps->tok;
	loc_tok(ps, tp, start);
	char got[80];
	switch (tp->kind) {
	case TIR_TOK_INT: {
		int64_t iv = tp->ival;
		double fv = tp->fval;
		advance_inline(ps);
		return literal(ps, start, TIR_DTYPE_I64, iv, fv);
	}
	case TIR_TOK_FLOAT: {
		double fv = tp->fval;
		advance_inline(ps);
		return literal(ps, start, TIR_DTYPE_F32, 0, fv);
	}
	case TIR_TOK_LBRACKET:
		return parse_list_literal(ps, start);
	case TIR_TOK_LPAREN: {
		struct tir_token t = *tp;
		advance(ps);
		if (!enter(ps))
			return NULL;
		struct tir_loc inner;
		struct tir_node *n = parse_expr(ps, &inner);
		if (!n || !close_bracket(ps, TIR_TOK_RPAREN, &t))
			return NULL;
		ps->depth--;
		return n;
	}
	case TIR_TOK_STRING:
		perr_tok(ps, tp, "a string is a file path for load(...), or a name's value alone (ck = \"m.npy\")");
		return NULL;
	case TIR_TOK_NAME:
		break;
	default:
		if (tp->kind == TIR_TOK_EOF && ps->lx.depth > 0)
			expected(ps, "");
		else if (tp->kind != TIR_TOK_ERROR) {
			tok_desc(ps, tp, got, sizeof got);
			perr_tok(ps, tp, "expected an expression, got %s", got);
		}
		return NULL;
	}
	const char *s = ps->lx.src->text + tp->off;
	if (is_bool_word(ps, tp)) {
		bool v = is_true(ps, tp);
		advance(ps);
		return literal(ps, start, TIR_DTYPE_BOOL, v, 0);
	}
	if (tok_is(ps, tp, "inf") || tok_is(ps, tp, "nan")) {
		double v = tok_is(ps, tp, "inf") ? INFINITY : NAN;
		advance(ps);
		return literal(ps, start, TIR_DTYPE_F32, 0, v);
	}
	if (peek(ps)->kind == TIR_TOK_LPAREN) {
		struct tir_token t = *tp; /* the call's name, read past advance() */
		int op = tir_op_lookup(s, t.len);
		if (op < 0) {
			struct tir_func *f = func_find(ps, s, t.len);
			if (f) {
				if (!enter(ps))
					return NULL;
				struct tir_node *n = parse_fn_call(ps, f, &t);
				ps->depth--;
				return n;
			}
			unknown_call(ps, &t);
			return NULL;
		}
		if (!enter(ps))
			return NULL;
		struct tir_node *n = parse_call(ps, (enum tir_op)op, &t);
		ps->depth--;
		return n;
	}
	struct look lk;
	lookup_name(ps, s, tp->len, &lk);
	if (lk.kind == L_STR) {
		perr_tok(ps, tp, "'%.*s' names a string: a string is a file path or a tensor's name for load(...), "
			 "or a device for to(...)", (int)tp->len, s);
		return NULL;
	}
	if (lk.kind == L_INT) { /* a loop's index or an int parameter: its value, as a literal */
		advance(ps);
		return known_int(ps, start, lk.v);
	}
	if (lk.kind == L_NODE) {
		struct tir_binding *b = lk.b;
		advance_inline(ps);
		if (!lk.node)
			ps->stmt_failed = true; /* its definition failed: already reported */
		else if (b && b->node->ref_name != b->name &&
			 !tir_grow((void **)&ps->undo, &ps->capundo, ps->nundo + 1, sizeof *ps->undo)) {
			/* headers say what was written */
			ps->undo[ps->nundo++] = (struct ref_undo){b->node, b->node->ref_name};
			b->node->ref_name = b->name;
		}
		return lk.node;
	}
	struct tir_token t = *tp; /* np_prefix reads it past advance() */
	if (lk.in_fn) {
		perr_tok(ps, &t, "undefined name '%.*s' (a function sees only its parameters and the names it binds)",
			 (int)t.len, s);
		return NULL;
	}
	if (tir_dtype_from_name(s, t.len) >= 0) {
		perr_tok(ps, &t, "'%.*s' is a dtype, not a value", (int)t.len, s);
		return NULL;
	}
	if (tir_op_lookup(s, t.len) >= 0) {
		perr_tok(ps, &t, "'%.*s' is an op; call it: %.*s(...)", (int)t.len, s, (int)t.len, s);
		return NULL;
	}
	if (np_prefix(ps, &t))
		return NULL;
	if (tok_is(ps, &t, "None")) {
		perr_tok(ps, &t, "None is a new axis in an index only, as in x[:, None]");
		return NULL;
	}
	const char *np = numpy_spelling(s, t.len);
	if (np) {
		perr_tok(ps, &t, "undefined name '%.*s'; did you mean '%s'?", (int)t.len, s, np);
		return NULL;
	}
	const char *sug = tir_program_suggest(ps->prog, s, t.len);
	if (sug)
		perr_tok(ps, &t, "undefined name '%.*s'; did you mean '%s'?", (int)t.len, s, sug);
	else
		perr_tok(ps, &t, "undefined name '%.*s'", (int)t.len, s);
	return NULL;
}

static struct tir_node *binary(struct parser *ps, enum tir_op op, const struct tir_token *optok,
			       struct tir_node *a, const struct tir_loc *aloc, struct tir_node *b,
			       const struct tir_loc *bloc)
{
	struct tir_loc loc;
	loc_tok(ps, optok, &loc);
	if ((a->known_int || b->known_int) && is_int_literal(a) && is_int_literal(b) &&
	    (op == TIR_OP_ADD || op == TIR_OP_SUB || op == TIR_OP_MUL)) {
		/* i + 1: still an integer known when checked, folded */
		int64_t v;
		if (op == TIR_OP_ADD ? __builtin_add_overflow(a->ival, b->ival, &v)
		    : op == TIR_OP_SUB ? __builtin_sub_overflow(a->ival, b->ival, &v)
				       : __builtin_mul_overflow(a->ival, b->ival, &v)) {
			perr(ps, TIR_ESYNTAX, &loc, "integer overflow (the limit is 2^63-1)");
			return NULL;
		}
		return known_int(ps, aloc, v);
	}
	struct tir_node *n = new_node(ps, op, 2, &loc);
	if (!n)
		return NULL;
	n->in[0] = a;
	n->in[1] = b;
	tir_node_set_inloc(n, 0, aloc);
	tir_node_set_inloc(n, 1, bloc);
	return checked(ps, n);
}

/* A node of op with operand x (at xloc), its attributes at their defaults,
 * not yet checked (the caller sets attributes, then checked()). */
static struct tir_node *node1(struct parser *ps, enum tir_op op, struct tir_node *x, const struct tir_loc *xloc,
			      const struct tir_loc *loc)
{
	struct tir_node *n = new_node(ps, op, 1, loc);
	if (!n)
		return NULL;
	n->in[0] = x;
	tir_node_set_inloc(n, 0, xloc);
	return n;
}

/* Set n's integer attribute `name` (int, or a one-entry axes). */
static void set_int_attr(struct tir_node *n, const char *name, int64_t v, int64_t *store)
{
	struct tir_attr *a = &n->attr[tir_op_attr_index(n->op, name)];
	a->set = true;
	a->i = v;
	a->is_int = true;
	if (store) { /* axes: a list of one */
		*store = v;
		a->n = 1;
		a->v = store;
	}
}

/* ---- indexing: NumPy's basic indexing, lowered to movement ops ----
 * x[2] is squeeze(slice(x, start=2, stop=3), axis=0); x[a:b:s] a slice (a
 * view); None an unsqueeze; "..." as many ":" as the other items leave;
 * a tensor of integers a gather along its axis (NumPy's take). */

enum { IX_INT, IX_SLICE, IX_NEW, IX_ALL, IX_TENSOR };

struct index_item {
	int kind;
	struct tir_loc loc;
	int64_t v[3];              /* INT: v[0]; SLICE: start, stop, step */
	bool set[3];
	struct tir_node *node;     /* TENSOR */
	struct tir_loc nloc;
};

#define MAX_INDEX_ITEMS 32

/* Whether the current token begins an integer known when checked. */
static bool index_static(struct parser *ps)
{
	const struct tir_token *t = ps->tok;
	if (t->kind == TIR_TOK_INT)
		return true;
	if (t->kind == TIR_TOK_MINUS && peek(ps)->kind == TIR_TOK_INT)
		return true;
	return t->kind != TIR_TOK_LPAREN && static_start(ps);
}

static bool slice_bound_end(enum tir_tok k)
{
	return k == TIR_TOK_COLON || k == TIR_TOK_COMMA || k == TIR_TOK_RBRACKET;
}

/* item = "..." | "None" | [iexpr] ":" [iexpr] [":" [iexpr]] | iexpr | expr */
static bool parse_index_item(struct parser *ps, struct index_item *it)
{
	memset(it, 0, sizeof *it);
	loc_tok(ps, ps->tok, &it->loc);
	if (ps->tok->kind == TIR_TOK_ELLIPSIS) {
		advance(ps);
		it->kind = IX_ALL;
		return true;
	}
	if (tok_is(ps, ps->tok, "None")) {
		advance(ps);
		it->kind = IX_NEW;
		return true;
	}
	if (ps->tok->kind != TIR_TOK_COLON) {
		if (index_static(ps)) {
			if (!parse_static(ps, &it->v[0], "an index"))
				return false;
			it->set[0] = true;
			it->kind = IX_INT;
		} else {
			it->node = parse_expr(ps, &it->nloc);
			if (!it->node)
				return false;
			if (is_int_literal(it->node)) {
				it->kind = IX_INT;
				it->v[0] = it->node->ival;
				it->set[0] = true;
			} else {
				it->kind = IX_TENSOR;
			}
		}
		if (ps->tok->kind != TIR_TOK_COLON)
			return true;
		if (it->kind == IX_TENSOR) {
			perr(ps, TIR_ESYNTAX, &it->loc,
			     "a slice's bounds are integers known when checked, not tensors");
			return false;
		}
	}
	it->kind = IX_SLICE;
	it->v[2] = 1;
	for (int k = 1; k < 3 && ps->tok->kind == TIR_TOK_COLON; k++) {
		advance(ps);
		if (slice_bound_end(ps->tok->kind))
			continue;
		if (!parse_static(ps, &it->v[k], STATIC_WANT))
			return false;
		it->set[k] = true;
	}
	return true;
}

/* index = "[" item { "," item } [","] "]", after the value x */
static struct tir_node *parse_index(struct parser *ps, struct tir_node *x, const struct tir_loc *xloc)
{
	struct tir_token open = *ps->tok;
	struct tir_loc oloc;
	loc_tok(ps, &open, &oloc);
	advance(ps);
	if (!enter(ps))
		return NULL;
	struct index_item items[MAX_INDEX_ITEMS];
	int n = 0, nconsume = 0, nell = 0, ntensor = 0, nint = 0;
	while (ps->tok->kind != TIR_TOK_RBRACKET) {
		if (n == MAX_INDEX_ITEMS) {
			perr_tok(ps, ps->tok, "too many indices (at most %d)", MAX_INDEX_ITEMS);
			return NULL;
		}
		struct index_item *it = &items[n];
		if (!parse_index_item(ps, it))
			return NULL;
		if (it->kind == IX_ALL && nell++) {
			perr(ps, TIR_ESYNTAX, &it->loc, "an index can only have a single ellipsis ('...')");
			return NULL;
		}
		nconsume += it->kind == IX_INT || it->kind == IX_SLICE || it->kind == IX_TENSOR;
		ntensor += it->kind == IX_TENSOR;
		nint += it->kind == IX_INT;
		n++;
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	if (!close_bracket(ps, TIR_TOK_RBRACKET, &open))
		return NULL;
	if (n == 0) {
		perr(ps, TIR_ESYNTAX, &oloc, "an empty index: write x[...] for all of x");
		return NULL;
	}
	ps->depth--;
	ps->called = true; /* a print's header says what was written */
	char sx[TIR_TYPE_STRLEN];
	int rank = x->type.rank;
	if (nconsume > rank) {
		perr(ps, TIR_ETYPE, &oloc, "too many indices for %s: it has %d ax%s, indexed with %d",
		     tir_type_str(&x->type, sx, sizeof sx), rank, rank == 1 ? "is" : "es", nconsume);
		return NULL;
	}
	if (ntensor > 1 || (ntensor && nint)) {
		for (int i = 0; i < n; i++)
			if (items[i].kind == IX_TENSOR && (ntensor > 1 || nint)) {
				perr(ps, TIR_EUNSUPPORTED, &items[i].loc,
				     ntensor > 1 ? "one tensor index at most (NumPy's advanced indexing of several is not supported)"
						 : "a tensor index beside an integer index is not supported: "
						   "write the integer as a slice (i:i+1) and squeeze after");
				return NULL;
			}
	}
	struct tir_node *cur = x;
	struct tir_loc curloc = *xloc;
	int ax = 0, oax = 0; /* axis of x, axis of cur */
	for (int i = 0; i < n; i++) {
		struct index_item *it = &items[i];
		struct tir_node *m = NULL;
		int64_t dim = ax < rank ? x->type.shape[ax] : 0;
		switch (it->kind) {
		case IX_ALL:
			ax += rank - nconsume;
			oax += rank - nconsume;
			continue;
		case IX_NEW:
			m = node1(ps, TIR_OP_UNSQUEEZE, cur, &curloc, &it->loc);
			if (!m)
				return NULL;
			set_int_attr(m, "axis", oax, NULL);
			oax++;
			break;
		case IX_SLICE:
			ax++;
			if (!it->set[0] && !it->set[1] && it->v[2] == 1) {
				oax++; /* ':' takes the axis whole */
				continue;
			}
			m = node1(ps, TIR_OP_SLICE, cur, &curloc, &it->loc);
			if (!m)
				return NULL;
			set_int_attr(m, "axis", oax, NULL);
			if (it->set[0])
				set_int_attr(m, "start", it->v[0], NULL);
			if (it->set[1])
				set_int_attr(m, "stop", it->v[1], NULL);
			set_int_attr(m, "step", it->v[2], NULL);
			oax++;
			break;
		case IX_INT: {
			int64_t k = it->v[0];
			if (k < -dim || k >= dim) {
				perr(ps, TIR_ETYPE, &it->loc, "index %lld is out of bounds for axis %d with size %lld",
				     (long long)k, ax, (long long)dim);
				return NULL;
			}
			if (k < 0)
				k += dim;
			ax++;
			m = node1(ps, TIR_OP_SLICE, cur, &curloc, &it->loc);
			if (!m)
				return NULL;
			set_int_attr(m, "axis", oax, NULL);
			set_int_attr(m, "start", k, NULL);
			set_int_attr(m, "stop", k + 1, NULL);
			if (!(m = checked(ps, m)))
				return NULL;
			cur = m;
			int64_t *store = tir_arena_alloc(&ps->prog->arena, sizeof *store);
			if (!store || !(m = node1(ps, TIR_OP_SQUEEZE, cur, &curloc, &it->loc)))
				return NULL;
			set_int_attr(m, "axis", oax, store);
			break;
		}
		case IX_TENSOR:
			if (it->node->type.dtype == TIR_DTYPE_BOOL) {
				perr(ps, TIR_EUNSUPPORTED, &it->loc,
				     "a bool index (a mask) picks a number of elements known only when run; "
				     "use where(mask, x, 0) instead");
				return NULL;
			}
			ax++;
			m = new_node(ps, TIR_OP_GATHER, 2, &it->loc);
			if (!m)
				return NULL;
			m->in[0] = cur;
			tir_node_set_inloc(m, 0, &curloc);
			m->in[1] = it->node;
			tir_node_set_inloc(m, 1, &it->nloc);
			set_int_attr(m, "axis", oax, NULL);
			oax += it->node->type.rank;
			break;
		}
		if (!(m = checked(ps, m)))
			return NULL;
		cur = m;
	}
	return cur;
}

/* What follows "." after a value: T, or a helpful error. */
static struct tir_node *parse_dot(struct parser *ps, struct tir_node *x, const struct tir_loc *xloc)
{
	advance(ps); /* '.' */
	struct tir_token t = *ps->tok;
	if (t.kind != TIR_TOK_NAME) {
		expected(ps, "'T' after '.' (x.T reverses the axes)");
		return NULL;
	}
	const char *s = ps->lx.src->text + t.off;
	if (tok_is(ps, &t, "T")) {
		struct tir_loc loc;
		loc_tok(ps, &t, &loc);
		advance(ps);
		ps->called = true;
		return checked(ps, node1(ps, TIR_OP_TRANSPOSE, x, xloc, &loc));
	}
	if (tir_op_lookup(s, t.len) >= 0)
		perr_tok(ps, &t, "tir has no methods: write %.*s(x, ...) for x.%.*s(...)", (int)t.len, s, (int)t.len, s);
	else
		perr_tok(ps, &t, "'.%.*s': the only attribute is .T (the axes reversed)", (int)t.len, s);
	return NULL;
}

/* The rest of a postfix after its primary x (at start), and of a power
 * after its postfix a: out of line, with the frames they need, so that
 * an operand without them (most) does not set those frames up. */
static __attribute__((noinline)) struct tir_node *postfix_rest(struct parser *ps, struct tir_loc *start,
							       struct tir_node *x)
{
	int chain = 0;
	while (x && (ps->tok->kind == TIR_TOK_LBRACKET || ps->tok->kind == TIR_TOK_DOT)) {
		if (!enter(ps))
			return NULL;
		chain++;
		x = ps->tok->kind == TIR_TOK_DOT ? parse_dot(ps, x, start) : parse_index(ps, x, start);
	}
	ps->depth -= chain;
	return x;
}

static struct tir_node *parse_unary(struct parser *ps, struct tir_loc *start);

static __attribute__((noinline)) struct tir_node *power_rest(struct parser *ps, struct tir_loc *start,
							     struct tir_node *a)
{
	struct tir_token optok = *ps->tok;
	advance(ps);
	if (!enter(ps))
		return NULL;
	struct tir_loc bloc;
	struct tir_node *b = parse_unary(ps, &bloc);
	ps->depth--;
	return b ? binary(ps, TIR_OP_POW, &optok, a, start, b, &bloc) : NULL;
}

/* postfix = primary { index | "." "T" } */
static struct tir_node *parse_postfix(struct parser *ps, struct tir_loc *start)
{
	struct tir_node *x = parse_primary(ps, start);
	if (x && (ps->tok->kind == TIR_TOK_LBRACKET || ps->tok->kind == TIR_TOK_DOT))
		return postfix_rest(ps, start, x);
	return x;
}

/* power = postfix [ "**" unary ]   (right-associative: 2**3**2 is 2**9) */
static struct tir_node *parse_power(struct parser *ps, struct tir_loc *start)
{
	struct tir_node *a = parse_postfix(ps, start);
	if (a && ps->tok->kind == TIR_TOK_STARSTAR)
		return power_rest(ps, start, a);
	return a;
}

static struct tir_node *parse_prefixed(struct parser *ps, struct tir_loc *start);

/* unary = "-" NUMBER | ( "-" | "+" | "~" ) unary | power
 * (-2**2 is -(2**2), as in Python)
 * An operand without a sign goes to parse_power from here; one with a
 * sign to parse_prefixed, whose frame (its locals, the registers it keeps)
 * the common operand then does not set up and take down. */
static struct tir_node *parse_unary(struct parser *ps, struct tir_loc *start)
{
	enum tir_tok k = ps->tok->kind;
	if (k != TIR_TOK_MINUS && k != TIR_TOK_PLUS && k != TIR_TOK_TILDE)
		return parse_power(ps, start);
	return parse_prefixed(ps, start);
}

/* ( "-" | "+" | "~" ) unary, and "-" NUMBER: parse_unary's at a sign */
static __attribute__((noinline)) struct tir_node *parse_prefixed(struct parser *ps, struct tir_loc *start)
{
	enum tir_tok k = ps->tok->kind;
	struct tir_token minus = *ps->tok;
	loc_tok(ps, &minus, start);
	advance(ps);
	if (!enter(ps))
		return NULL;
	/* -NUMBER (and -inf, -nan) is a literal, not neg(NUMBER), unless a ** follows */
	if (k == TIR_TOK_MINUS &&
	    (ps->tok->kind == TIR_TOK_INT || ps->tok->kind == TIR_TOK_FLOAT || tok_is(ps, ps->tok, "inf") ||
	     tok_is(ps, ps->tok, "nan")) &&
	    peek(ps)->kind != TIR_TOK_STARSTAR && peek(ps)->kind != TIR_TOK_LBRACKET &&
	    peek(ps)->kind != TIR_TOK_DOT) {
		struct tir_token t = *ps->tok;
		advance(ps);
		ps->depth--;
		if (t.kind == TIR_TOK_INT)
			return literal(ps, start, TIR_DTYPE_I64, -t.ival, -t.fval);
		double v = t.kind == TIR_TOK_FLOAT ? t.fval : tok_is(ps, &t, "inf") ? INFINITY : NAN;
		return literal(ps, start, TIR_DTYPE_F32, 0, -v);
	}
	struct tir_loc inner;
	struct tir_node *x = parse_unary(ps, &inner);
	ps->depth--;
	if (!x)
		return NULL;
	if (k == TIR_TOK_PLUS)
		return x;
	if (k == TIR_TOK_TILDE) {
		if (x->type.dtype != TIR_DTYPE_BOOL) {
			perr(ps, TIR_ETYPE, start, "'~' is logical not, on bool; %s has no bitwise ops",
			     tir_dtype_name(x->type.dtype));
			return NULL;
		}
		return checked(ps, node1(ps, TIR_OP_NOT, x, &inner, start));
	}
	if (x->known_int && is_int_literal(x) && x->ival != INT64_MIN)
		return known_int(ps, start, -x->ival); /* -i */
	return checked(ps, node1(ps, TIR_OP_NEG, x, &inner, start));
}

/* and(a, b) or or(a, b) for "&" "|": on bool only. */
static struct tir_node *logical(struct parser *ps, enum tir_op op, const struct tir_token *optok,
				struct tir_node *a, const struct tir_loc *aloc, struct tir_node *b,
				const struct tir_loc *bloc)
{
	const struct tir_node *bad = a->type.dtype != TIR_DTYPE_BOOL ? a : b->type.dtype != TIR_DTYPE_BOOL ? b : NULL;
	if (bad) {
		perr(ps, TIR_ETYPE, bad == a ? aloc : bloc,
		     "'%c' is logical %s, on bool; %s has no bitwise ops (compare first: (x > 0) %c (y > 0))",
		     op == TIR_OP_AND ? '&' : '|', op == TIR_OP_AND ? "and" : "or", tir_dtype_name(bad->type.dtype),
		     op == TIR_OP_AND ? '&' : '|');
		return NULL;
	}
	return binary(ps, op, optok, a, aloc, b, bloc);
}

/* The rest of one left-associative chain, its first operand a parsed
 * already (at start): { OP operand }, where op_of gives the op of a token
 * (-1: not one of this chain's) and combine (binary or logical) makes and
 * checks each step's node.  Inlined where used, so that each level calls
 * its own functions directly. */
static inline __attribute__((always_inline)) struct tir_node *
chain_rest(struct parser *ps, struct tir_loc *start, struct tir_node *a, int (*op_of)(enum tir_tok),
	   struct tir_node *(*combine)(struct parser *, enum tir_op, const struct tir_token *, struct tir_node *,
				       const struct tir_loc *, struct tir_node *, const struct tir_loc *),
	   struct tir_node *(*operand)(struct parser *, struct tir_loc *))
{
	int chain = 0, op;
	while (a && (op = op_of(ps->tok->kind)) >= 0) {
		struct tir_token optok = *ps->tok;
		advance_inline(ps);
		if (!enter(ps))
			return NULL;
		chain++;
		struct tir_loc bloc;
		struct tir_node *b = operand(ps, &bloc);
		if (!b)
			return NULL;
		a = combine(ps, (enum tir_op)op, &optok, a, start, b, &bloc);
	}
	ps->depth -= chain;
	return a;
}

static int term_op(enum tir_tok k)
{
	switch (k) {
	case TIR_TOK_STAR: return TIR_OP_MUL;
	case TIR_TOK_SLASH: return TIR_OP_DIV;
	case TIR_TOK_SLASHSLASH: return TIR_OP_FLOOR_DIVIDE;
	case TIR_TOK_PERCENT: return TIR_OP_MOD;
	case TIR_TOK_AT: return TIR_OP_MATMUL;
	default: return -1;
	}
}

static int arith_op(enum tir_tok k)
{
	return k == TIR_TOK_PLUS ? TIR_OP_ADD : k == TIR_TOK_MINUS ? TIR_OP_SUB : -1;
}

static int and_op(enum tir_tok k)
{
	return k == TIR_TOK_AMP ? TIR_OP_AND : -1;
}

static int or_op(enum tir_tok k)
{
	return k == TIR_TOK_PIPE ? TIR_OP_OR : -1;
}

/* The levels below are the grammar's, one production each; but a level's
 * first operand is not parsed by a call to the level below, which would
 * call the one below it, and so on down: each level starts at the unary
 * and then finishes the chains of the levels below it, innermost first,
 * the same calls in the same order as the nested form makes them.  An
 * operand alone (t1 in t2 = t1 + 1, and every right-hand operand of a
 * '+') so goes from the level asked straight to parse_unary, not through
 * every level between (a third of the calls of a scalar statement). */

/* term = unary { ("*" | "/" | "//" | "%" | "@") unary } */
static inline __attribute__((always_inline)) struct tir_node *term_from(struct parser *ps, struct tir_loc *start)
{
	return chain_rest(ps, start, parse_unary(ps, start), term_op, binary, parse_unary);
}

static struct tir_node *parse_term(struct parser *ps, struct tir_loc *start)
{
	return term_from(ps, start);
}

/* arith = term { ("+" | "-") term } */
static inline __attribute__((always_inline)) struct tir_node *arith_from(struct parser *ps, struct tir_loc *start)
{
	return chain_rest(ps, start, term_from(ps, start), arith_op, binary, parse_term);
}

static struct tir_node *parse_arith(struct parser *ps, struct tir_loc *start)
{
	return arith_from(ps, start);
}

/* bitand = arith { "&" arith };  bitor = bitand { "|" bitand } */
static inline __attribute__((always_inline)) struct tir_node *bitand_from(struct parser *ps, struct tir_loc *start)
{
	return chain_rest(ps, start, arith_from(ps, start), and_op, logical, parse_arith);
}

static struct tir_node *parse_bitand(struct parser *ps, struct tir_loc *start)
{
	return bitand_from(ps, start);
}

static inline __attribute__((always_inline)) struct tir_node *bitor_from(struct parser *ps, struct tir_loc *start)
{
	return chain_rest(ps, start, bitand_from(ps, start), or_op, logical, parse_bitand);
}

static struct tir_node *parse_bitor(struct parser *ps, struct tir_loc *start)
{
	return bitor_from(ps, start);
}

static int compare_op(enum tir_tok k)
{
	switch (k) {
	case TIR_TOK_LT: return TIR_OP_LT;
	case TIR_TOK_LE: return TIR_OP_LE;
	case TIR_TOK_GT: return TIR_OP_GT;
	case TIR_TOK_GE: return TIR_OP_GE;
	case TIR_TOK_EQ: return TIR_OP_EQ;
	case TIR_TOK_NE: return TIR_OP_NE;
	default: return -1;
	}
}

/* expr = bitor { ("<" | "<=" | ">" | ">=" | "==" | "!=") bitor }
 * A chain is Python's: a < b < c is (a < b) & (b < c). */
static struct tir_node *parse_expr(struct parser *ps, struct tir_loc *start)
{
	struct tir_node *a = bitor_from(ps, start);
	struct tir_node *acc = NULL;
	struct tir_loc aloc = *start;
	int chain = 0, op;
	while (a && (op = compare_op(ps->tok->kind)) >= 0) {
		struct tir_token optok = *ps->tok;
		advance(ps);
		if (!enter(ps))
			return NULL;
		chain++;
		struct tir_loc bloc;
		struct tir_node *b = parse_bitor(ps, &bloc);
		if (!b)
			return NULL;
		struct tir_node *c = binary(ps, (enum tir_op)op, &optok, a, &aloc, b, &bloc);
		if (!c)
			return NULL;
		acc = acc ? binary(ps, TIR_OP_AND, &optok, acc, start, c, &aloc) : c;
		if (!acc)
			return NULL;
		a = b;
		aloc = bloc;
	}
	ps->depth -= chain;
	return acc ? acc : a;
}

/* ---- statements ---- */

/* type = DTYPE "[" [ INT { "," INT } [","] ] "]" */
static bool parse_type(struct parser *ps, struct tir_type *ty)
{
	struct tir_token t = *ps->tok;
	int dt = t.kind == TIR_TOK_NAME ? tir_dtype_from_name(ps->lx.src->text + t.off, t.len) : -1;
	if (dt < 0) {
		const char *np = t.kind == TIR_TOK_NAME ? numpy_spelling(ps->lx.src->text + t.off, t.len) : NULL;
		if (np) {
			perr_tok(ps, &t, "expected a type such as f32[2, 3], got '%.*s'; did you mean '%s'?", (int)t.len,
				 ps->lx.src->text + t.off, np);
			return false;
		}
		expected(ps, "a type such as f32[2, 3]");
		return false;
	}
	advance(ps);
	memset(ty, 0, sizeof *ty);
	ty->dtype = (uint8_t)dt;
	struct tir_token open = *ps->tok;
	if (!accept(ps, TIR_TOK_LBRACKET)) {
		expected(ps, "'[' and the shape (a scalar is f32[])");
		return false;
	}
	int64_t numel = 1;
	while (ps->tok->kind != TIR_TOK_RBRACKET) {
		struct tir_token d = *ps->tok;
		if (d.kind == TIR_TOK_MINUS) {
			perr_tok(ps, &d, "a dimension must be >= 0");
			return false;
		}
		if (d.kind != TIR_TOK_INT) {
			expected(ps, "a dimension (an integer)");
			return false;
		}
		if (ty->rank >= TIR_MAX_RANK) {
			perr_tok(ps, &d, "more than %d dimensions", TIR_MAX_RANK);
			return false;
		}
		int64_t d1 = d.ival ? d.ival : 1; /* a 0 counts as 1: see tir_type_bounded */
		if (d.ival > TIR_MAX_DIM || numel > TIR_MAX_ELEMS / d1) {
			perr_tok(ps, &d, "type too large: more than %lld elements", (long long)TIR_MAX_ELEMS);
			return false;
		}
		numel *= d1;
		ty->shape[ty->rank++] = d.ival;
		advance(ps);
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	return close_bracket(ps, TIR_TOK_RBRACKET, &open);
}

/* By first byte, the lengths of the reserved words and dtype names that
 * start with it (bit n - 1): a name bound (t1234, say) is most often
 * rejected by one look, where comparing it with each word took more than
 * the rest of its check. */
static uint8_t reserved_lens[256];
static pthread_once_t reserved_once = PTHREAD_ONCE_INIT;
static bool reserved_ready; /* set (release) once reserved_lens is filled:
			     * read first, it spares each name a call of
			     * pthread_once */

static void reserved_lens_init(void)
{
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		reserved_lens[(unsigned char)reserved[i].s[0]] |= (uint8_t)(1u << (reserved[i].n - 1));
	for (int d = 0; d < TIR_DTYPE_COUNT; d++) {
		const char *name = tir_dtype_name((enum tir_dtype)d);
		reserved_lens[(unsigned char)name[0]] |= (uint8_t)(1u << (strlen(name) - 1));
	}
	__atomic_store_n(&reserved_ready, true, __ATOMIC_RELEASE);
}

static bool is_reserved(const char *s, size_t n)
{
	/* asked of every name bound: its length and first byte reject most
	 * (the words are 2 to 6 bytes, dtypes' names 2 to 4) */
	if (n < 2 || n > 6)
		return false;
	if (!__atomic_load_n(&reserved_ready, __ATOMIC_ACQUIRE))
		pthread_once(&reserved_once, reserved_lens_init);
	if (!(reserved_lens[(unsigned char)s[0]] >> (n - 1) & 1))
		return false;
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (reserved[i].n == n && reserved[i].s[0] == s[0] && !memcmp(reserved[i].s, s, n))
			return true;
	return n <= 4 && tir_dtype_from_name(s, n) >= 0;
}

static struct tir_stmt *new_stmt(struct parser *ps, enum tir_stmt_kind k, const struct tir_loc *loc)
{
	struct tir_program *p = ps->prog;
	if (p->nstmts >= p->capstmts &&
	    tir_grow_pages((void **)&p->stmts, &p->capstmts, p->nstmts + 1, sizeof *p->stmts)) {
		perr(ps, TIR_ENOMEM, loc, "out of memory");
		return NULL;
	}
	struct tir_stmt *s = &p->stmts[p->nstmts++];
	memset(s, 0, sizeof *s);
	s->kind = k;
	s->src = loc->src;
	s->off = loc->off;
	s->line = loc->line;
	return s;
}

static void name_node(struct parser *ps, struct tir_node *n, const char *name)
{
	if (!n->name) {
		n->name = name;
		return;
	}
	if (!strcmp(n->name, name))
		return;
	for (struct tir_name_link *l = n->names; l; l = l->next)
		if (!strcmp(l->name, name))
			return;
	struct tir_name_link *l = tir_arena_alloc(&ps->prog->arena, sizeof *l);
	if (!l)
		return;
	l->name = name;
	l->next = n->names;
	n->names = l;
}

/* check_name's whole check: true, having reported it, when the name at t
 * may not be bound here. */
static __attribute__((noinline)) bool refuse_name(struct parser *ps, const struct tir_token *t)
{
	const char *s = ps->lx.src->text + t->off;
	if (is_reserved(s, t->len)) {
		perr_tok(ps, t, "'%.*s' is reserved and cannot be bound", (int)t->len, s);
		return true;
	}
	/* a loop's index and an int parameter stand for numbers */
	for (int i = ps->nframes; i-- > 0;) {
		const struct frame *f = &ps->frames[i];
		if (!f->call && f->varlen == t->len && !memcmp(f->var, s, t->len)) {
			perr_tok(ps, t, "'%.*s' is the index of a loop around it and cannot be bound here", (int)t->len, s);
			return true;
		}
		if (f->call) {
			int k = param_index(f->fn, s, t->len);
			if (k >= 0 && f->args[k].is_int) {
				perr_tok(ps, t, "'%.*s' is an int parameter of %s and cannot be bound", (int)t->len, s,
					 f->fn->name);
				return true;
			}
			break;
		}
	}
	return false;
}

/* Whether the name at t may be bound here (else it is reported): not a
 * reserved word, nor a loop's index or an int parameter around it.  A
 * name outside loops and calls that is not reserved (most) is taken
 * here; the rest is refuse_name's, which asks again. */
static inline __attribute__((always_inline)) bool check_name(struct parser *ps, const struct tir_token *t)
{
	if (ps->nframes == 0 && !is_reserved(ps->lx.src->text + t->off, t->len))
		return true;
	return !refuse_name(ps, t);
}

/* Text as written, for a header: blanks and line ends folded to one
 * space, comments dropped. */
static void fold_text(const char *s, size_t n, struct tir_str *out)
{
	bool blank = false, quoted = false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!quoted && c == '#') {
			while (i + 1 < n && s[i + 1] != '\n')
				i++;
			blank = true;
			continue;
		}
		if (!quoted && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
			blank = true;
			continue;
		}
		if (blank && out->n)
			tir_str_add(out, " ", 1);
		blank = false;
		if (c == '"')
			quoted = !quoted;
		else if (quoted && c == '\\' && i + 1 < n)
			tir_str_add(out, &s[i++], 1);
		tir_str_add(out, &s[i], 1);
	}
}

/* input_stmt = "input" NAME ":" type */
static void parse_input(struct parser *ps)
{
	advance(ps); /* input */
	struct tir_token nt = *ps->tok;
	if (nt.kind != TIR_TOK_NAME) {
		expected(ps, "the input's name");
		return;
	}
	if (!check_name(ps, &nt))
		return;
	ps->pend.name = ps->lx.src->text + nt.off;
	ps->pend.len = nt.len;
	ps->pend.hash = hash_name(ps->pend.name, nt.len);
	__builtin_prefetch(bind_home(ps->prog, ps->pend.hash));
	ps->pend.kind = TIR_STMT_INPUT;
	loc_tok(ps, &nt, &ps->pend.loc);
	advance(ps);
	if (!accept(ps, TIR_TOK_COLON)) {
		expected(ps, "':' and the input's type, as in: input x: f32[2, 3]");
		return;
	}
	struct tir_type ty;
	if (!parse_type(ps, &ty))
		return;
	struct tir_loc loc;
	loc_tok(ps, &nt, &loc);
	struct tir_node *n = new_node(ps, TIR_OP_INPUT, 0, &loc);
	if (!n)
		return;
	if (tir_node_set_type(n, &ty, &ps->prog->node_arena)) {
		perr(ps, TIR_ENOMEM, &loc, "out of memory");
		return;
	}
	ps->pend.node = n;
}

/* Bind what the statement promised (see struct parser's pend).  Inside a
 * function the name is the call's local (local_binding).  Inside loops and
 * calls each binding is noted, for a failed top-level statement to undo. */
static void commit_one(struct parser *ps)
{
	struct tir_program *p = ps->prog;
	if (!ps->pend.name)
		return;
	bool ok = !ps->stmt_failed && (ps->pend.node || ps->pend.str);
	bool nested = ps->nframes > 0;
	struct frame *fr = scope_call(ps);
	if (!ok && (fr || (ps->flags & TIR_PARSE_REPL)))
		return; /* the old binding stays (in a call: the top-level statement undoes all) */
	/* in a file, a loop's failed statement poisons its name as a top-level one does */
	size_t nbind = p->nbind;
	struct tir_binding *b = fr ? local_binding(ps, fr, ps->pend.name, ps->pend.len, true)
				   : bind_name(p, ps->pend.name, ps->pend.len, ps->pend.hash);
	if (!b) {
		perr(ps, TIR_ENOMEM, &ps->pend.loc, fr ? "the renamed local name is too long" : "out of memory");
		return;
	}
	if (nested) {
		if (tir_grow((void **)&ps->bundo, &ps->capbundo, ps->nbundo + 1, sizeof *ps->bundo)) {
			perr(ps, TIR_ENOMEM, &ps->pend.loc, "out of memory");
			return;
		}
		ps->bundo[ps->nbundo++] = (struct bind_undo){
			.index = (uint32_t)(b - p->bind), .was_new = p->nbind != nbind, .unbound = b->unbound,
			.owner = b->owner, .node = b->node, .stmt = b->stmt};
	}
	if (!fr)
		b->owner = 0; /* bound at the top level: the program's name now */
	b->node = NULL; /* poisoned unless the statement is whole */
	b->str = NULL;
	b->unbound = false;
	if (!ok)
		return;
	if (ps->pend.str) { /* a string is the parser's alone: no statement, no node */
		b->str = ps->pend.str;
		return;
	}
	struct tir_node *n = ps->pend.node;
	if (n->op == TIR_OP_CONST && n->type.weak && !(n = literal_to_bind(ps, n))) {
		perr(ps, TIR_ENOMEM, &ps->pend.loc, "out of memory");
		return;
	}
	struct tir_stmt *st = new_stmt(ps, ps->pend.kind, &ps->pend.loc);
	if (!st)
		return;
	st->name = b->name;
	st->node = n;
	b->node = n;
	b->stmt = (uint32_t)(st - p->stmts);
	if (ps->pend.kind == TIR_STMT_INPUT)
		n->input_name = b->name;
	name_node(ps, n, b->name);
}

/* Commit the statement's binding, or its several (a, b = op(...)): one
 * BIND statement each, consecutive, marked so that fmt writes them as one. */
static void commit_binding(struct parser *ps)
{
	struct tir_program *p = ps->prog;
	int nres = ps->nmore ? ps->nmore + 1 : 0;
	size_t first = p->nstmts;
	commit_one(ps);
	for (int i = 0; i < ps->nmore; i++) {
		ps->pend = ps->more[i];
		commit_one(ps);
	}
	ps->nmore = 0;
	if (nres && p->nstmts == first + (size_t)nres)
		for (int i = 0; i < nres; i++) {
			p->stmts[first + (size_t)i].nres = (uint8_t)nres;
			p->stmts[first + (size_t)i].res = (uint8_t)i;
		}
}

/* Undo the bindings a failed top-level statement made in its loops and
 * calls: in the REPL as if never made, in a file poisoned (their later
 * uses are not reported again). */
static void undo_bindings(struct parser *ps)
{
	struct tir_program *p = ps->prog;
	bool repl = ps->flags & TIR_PARSE_REPL;
	while (ps->nbundo > 0) {
		const struct bind_undo *u = &ps->bundo[--ps->nbundo];
		struct tir_binding *b = &p->bind[u->index];
		b->str = NULL;
		if (!repl) {
			b->node = NULL;
		} else if (u->was_new) {
			b->node = NULL;
			b->unbound = true;
		} else {
			b->node = u->node;
			b->stmt = u->stmt;
			b->owner = u->owner;
			b->unbound = u->unbound;
		}
	}
}

/* print_stmt = "print" expr { "," expr }   (REPL: a bare expr) */
static void parse_print(struct parser *ps, bool bare)
{
	struct tir_token kw = *ps->tok;
	if (!bare)
		advance(ps);
	struct tir_loc loc;
	loc_tok(ps, &kw, &loc);
	struct tir_print_item items[64];
	int nitems = 0;
	ps->in_print = true;
	do {
		if (nitems == 64) {
			perr_tok(ps, ps->tok, "print takes at most 64 values");
			return;
		}
		struct tir_token first = *ps->tok;
		uint64_t before = ps->ntok;
		struct tir_print_item *it = &items[nitems];
		ps->called = false;
		it->node = parse_expr(ps, &it->loc);
		if (!it->node)
			return;
		it->called = ps->called;
		struct tir_str h = {0};
		if (ps->ntok - before == 1 && first.kind == TIR_TOK_NAME)
			tir_str_add(&h, ps->lx.src->text + first.off, first.len);
		else if (it->called) /* the expanded expression names a call's locals: say what was written */
			fold_text(ps->lx.src->text + first.off, ps->prev_end - first.off, &h);
		else
			tir_render_expr(ps->prog, it->node, &h);
		it->header = h.oom ? NULL : tir_arena_strndup(&ps->prog->arena, h.s, h.n);
		tir_str_free(&h);
		if (!it->header) {
			perr(ps, TIR_ENOMEM, &it->loc, "out of memory");
			return;
		}
		nitems++;
	} while (accept(ps, TIR_TOK_COMMA));
	ps->in_print = false;
	struct tir_stmt *st = new_stmt(ps, TIR_STMT_PRINT, &loc);
	if (!st)
		return;
	st->items = tir_arena_alloc(&ps->prog->arena, sizeof *items * (size_t)nitems);
	if (!st->items) {
		ps->prog->nstmts--;
		perr(ps, TIR_ENOMEM, &loc, "out of memory");
		return;
	}
	memcpy(st->items, items, sizeof *items * (size_t)nitems);
	st->nitems = (uint16_t)nitems;
}

/* bind_stmt = NAME [ ":" type ] "=" expr */
static void parse_bind(struct parser *ps)
{
	struct tir_token nt = *ps->tok;
	const char *s = ps->lx.src->text + nt.off;
	if (!check_name(ps, &nt))
		return;
	ps->pend.name = s;
	ps->pend.len = nt.len;
	ps->pend.hash = hash_name(s, nt.len);
	__builtin_prefetch(bind_home(ps->prog, ps->pend.hash));
	if ((ps->pend.hash & 7) == 0 && (unsigned)(s[nt.len - 1] - '0') < 10 && ps->prog->capindex) {
		/* t8 (say): the index's line of t16 to t23, which a program binding
		 * them in turn binds next, asked for now, eight statements ahead
		 * (this line's was asked for when t0 was bound, or is) */
		uint32_t next = hash_ahead(s, nt.len, 8);
		if (next)
			__builtin_prefetch(bind_home(ps->prog, next));
	}
	ps->pend.kind = TIR_STMT_BIND;
	loc_tok(ps, &nt, &ps->pend.loc);
	advance_inline(ps);
	struct tir_type ann;
	bool has_ann = false;
	struct tir_loc annloc = {0};
	if (ps->tok->kind == TIR_TOK_COLON && accept(ps, TIR_TOK_COLON)) { /* (a call only for an annotation) */
		loc_tok(ps, ps->tok, &annloc);
		if (!parse_type(ps, &ann))
			return;
		has_ann = true;
	}
	if (ps->tok->kind != TIR_TOK_ASSIGN) {
		expected(ps, "'='");
		return;
	}
	advance_inline(ps); /* accept's work, inlined: every statement's '=' */
	enum tir_tok after = peek(ps)->kind;
	if ((after == TIR_TOK_NEWLINE || after == TIR_TOK_EOF || after == TIR_TOK_RBRACE) && at_string(ps)) {
		/* a name for a string: ck = "m.safetensors" */
		if (has_ann) {
			perr(ps, TIR_ETYPE, &annloc, "a string has no tensor type: write %.*s = \"...\"", (int)nt.len, s);
			return;
		}
		ps->pend.str = take_string(ps);
		return;
	}
	struct tir_loc eloc;
	struct tir_node *n = parse_expr(ps, &eloc);
	if (n && has_ann && ann.dtype == TIR_DTYPE_F64) { /* x: f64[2] = [0.1, 0.2]: the literal is f64 */
		struct tir_node view = {.op = TIR_OP_CONST, .nin = 1, .in = &n};
		settle_for(ps, &view, TIR_DTYPE_F64);
	}
	if (n && has_ann && !tir_type_equal(&ann, &n->type)) {
		char a[TIR_TYPE_STRLEN], v[TIR_TYPE_STRLEN];
		perr(ps, TIR_ETYPE, &annloc, "annotation says %s but the value is %s%s",
		     tir_type_str(&ann, a, sizeof a), tir_type_str(&n->type, v, sizeof v),
		     n->type.weak ? " (a scalar literal keeps its own dtype)" : "");
		return;
	}
	ps->pend.node = n;
}

/* Whether the statement at a NAME followed by ',' or ':' binds several
 * names: a ',' and then an '=' outside brackets before the line ends
 * (else, in the REPL, `a, b` prints a list of values, and `a: T = ...`
 * binds one).  Reads ahead on a copy of the lexer. */
static bool is_multi_bind(struct parser *ps)
{
	struct tir_lexer lx = ps->lx; /* it is a token ahead: at what follows the ',' or ':' */
	int depth = 0;
	bool comma = peek(ps)->kind == TIR_TOK_COMMA;
	for (;;) {
		struct tir_token t = tir_lex_next(&lx);
		switch (t.kind) {
		case TIR_TOK_LPAREN: case TIR_TOK_LBRACKET: case TIR_TOK_LBRACE:
			depth++;
			break;
		case TIR_TOK_RPAREN: case TIR_TOK_RBRACKET: case TIR_TOK_RBRACE:
			if (--depth < 0)
				return false;
			break;
		case TIR_TOK_ASSIGN:
			if (depth == 0)
				return comma;
			break;
		case TIR_TOK_COMMA:
			comma |= depth == 0;
			break;
		case TIR_TOK_NEWLINE: case TIR_TOK_EOF: case TIR_TOK_ERROR:
			return false;
		default:
			break;
		}
	}
}

/* bind_stmt = target { "," target } "=" expr
 * target    = NAME [ ":" type ]
 * Several targets: expr is a call of an op with that many results (ir.h);
 * each name is bound to a RESULT node reading the call's node. */
static void parse_multi_bind(struct parser *ps)
{
	struct pending tg[TIR_MAX_RESULTS];
	struct tir_type ann[TIR_MAX_RESULTS];
	struct tir_loc annloc[TIR_MAX_RESULTS];
	bool has_ann[TIR_MAX_RESULTS] = {0};
	int k = 0;
	do {
		struct tir_token nt = *ps->tok;
		if (nt.kind != TIR_TOK_NAME) {
			expected(ps, "a name");
			return;
		}
		if (k == TIR_MAX_RESULTS) {
			perr_tok(ps, &nt, "at most %d names are bound by one statement", TIR_MAX_RESULTS);
			return;
		}
		if (!check_name(ps, &nt))
			return;
		const char *s = ps->lx.src->text + nt.off;
		for (int i = 0; i < k; i++)
			if (tg[i].len == nt.len && !memcmp(tg[i].name, s, nt.len)) {
				perr_tok(ps, &nt, "'%.*s' is bound twice by this statement", (int)nt.len, s);
				return;
			}
		tg[k] = (struct pending){.name = s, .len = nt.len, .hash = hash_name(s, nt.len), .kind = TIR_STMT_BIND};
		loc_tok(ps, &nt, &tg[k].loc);
		advance(ps);
		if (accept(ps, TIR_TOK_COLON)) {
			loc_tok(ps, ps->tok, &annloc[k]);
			if (!parse_type(ps, &ann[k]))
				return;
			has_ann[k] = true;
		}
		k++;
	} while (accept(ps, TIR_TOK_COMMA));
	if (!accept(ps, TIR_TOK_ASSIGN)) {
		expected(ps, "'='");
		return;
	}
	struct tir_token at = *ps->tok;
	struct tir_loc eloc;
	loc_tok(ps, &at, &eloc);
	if (at.kind != TIR_TOK_NAME || peek(ps)->kind != TIR_TOK_LPAREN ||
	    tir_op_lookup(ps->lx.src->text + at.off, at.len) < 0) {
		if (at.kind != TIR_TOK_ERROR)
			perr(ps, TIR_ETYPE, &eloc, "%d names are bound: the value must be a call of an op with %d results "
			     "(as q, r = qr(a))", k, k);
		return;
	}
	ps->want_results = k;
	ps->multi = NULL;
	struct tir_node *n = parse_expr(ps, &eloc);
	ps->want_results = 0;
	if (!n)
		return;
	if (n != ps->multi) {
		perr(ps, TIR_ETYPE, &eloc, "%d names are bound: the value must be the call alone (as q, r = qr(a))", k);
		return;
	}
	for (int i = 0; i < k; i++) {
		struct tir_node *r = new_node(ps, TIR_OP_RESULT, 1, &n->loc);
		if (!r)
			return;
		r->in[0] = n;
		tir_node_set_inloc(r, 0, &eloc);
		r->attr[0].set = true;
		r->attr[0].i = i;
		if (!(r = checked(ps, r)))
			return;
		if (has_ann[i] && !tir_type_equal(&ann[i], &r->type)) {
			char a[TIR_TYPE_STRLEN], v[TIR_TYPE_STRLEN];
			perr(ps, TIR_ETYPE, &annloc[i], "annotation says %s but %s's result %d is %s",
			     tir_type_str(&ann[i], a, sizeof a), tir_op(n->op)->name, i + 1,
			     tir_type_str(&r->type, v, sizeof v));
			return;
		}
		tg[i].node = r;
	}
	ps->pend = tg[0];
	for (int i = 1; i < k; i++)
		ps->more[i - 1] = tg[i];
	ps->nmore = k - 1;
}

/* Skip the rest of a failed statement: to the end of its line, or of the
 * block it opened. */
/* Whether a line feed comes between byte prev and the current token. */
static bool starts_line(const struct parser *ps, uint32_t prev)
{
	const char *t = ps->lx.src->text;
	return prev < ps->tok->off && memchr(t + prev, '\n', ps->tok->off - prev) != NULL;
}

/* Whether the current token begins a statement beyond doubt: NAME "=",
 * NAME ":", or print, input, fn, for before a name. */
static bool starts_statement(struct parser *ps)
{
	const struct tir_token *t = ps->tok;
	if (t->kind != TIR_TOK_NAME)
		return false;
	enum tir_tok k = peek(ps)->kind;
	if (tok_is(ps, t, "print"))
		return true;
	return k == TIR_TOK_ASSIGN || k == TIR_TOK_COLON ||
	       ((tok_is(ps, t, "input") || tok_is(ps, t, "fn") || tok_is(ps, t, "for")) && k == TIR_TOK_NAME);
}

static void skip_statement(struct parser *ps)
{
	int braces = 0;
	/* A bracket left open ran the statement into the next line, which
	 * begins a statement of its own (NAME "=" ...): that one is parsed, so
	 * the errors further down are found.  (A mismatched closer within a
	 * line keeps the old reading: the rest is skipped.) */
	if (ps->lx.depth > 0 && starts_line(ps, ps->prev_end) && starts_statement(ps)) {
		ps->lx.depth = 0;
		return;
	}
	while (ps->tok->kind != TIR_TOK_EOF && (braces > 0 || ps->tok->kind != TIR_TOK_NEWLINE)) {
		if (ps->tok->kind == TIR_TOK_LBRACE)
			braces++;
		else if (ps->tok->kind == TIR_TOK_RBRACE && braces > 0)
			braces--;
		ps->ntok++;
		swap_toks(ps); /* its errors are the failed statement's */
		lex_ahead(ps);
	}
}

struct scan {
	uint32_t end_off, end_line;  /* just past the closing '}', and its line */
	uint32_t ntok;               /* tokens in the block, the '}' too */
};

/* Find the '}' that closes the block *open opens (in the current text)
 * and count its tokens, checking what may be written in it: no fn; in a
 * function no input or print, and `return EXPR` last; elsewhere no
 * return.  False with the error reported. */
static bool scan_block(struct parser *ps, const struct tir_token *open, bool fn_body, struct scan *sc)
{
	struct tir_lexer *lx = malloc(sizeof *lx);
	struct tir_loc loc;
	if (!lx) {
		loc_tok(ps, open, &loc);
		perr(ps, TIR_ENOMEM, &loc, "out of memory");
		return false;
	}
	tir_lex_init(lx, ps->lx.src);
	lex_at(lx, ps->lx.src, open->off + 1, open->line);
	bool in_fn = fn_body || scope_call(ps), ok = false, returned = false;
	int depth = 1;
	enum tir_tok prev = TIR_TOK_LBRACE;
	struct tir_token t;
	sc->ntok = 0;
	for (;;) {
		tir_lex_scan(lx, &t);
		if (t.kind == TIR_TOK_EOF) {
			loc_tok(ps, open, &loc);
			perr(ps, TIR_EINCOMPLETE, &loc, "'{' is never closed: expected '}' before the end of input");
			break;
		}
		if (t.kind == TIR_TOK_ERROR) {
			loc_tok(ps, &t, &loc);
			perr(ps, TIR_ESYNTAX, &loc, "%s", lx->errmsg);
			break;
		}
		sc->ntok++;
		bool start = prev == TIR_TOK_NEWLINE || prev == TIR_TOK_LBRACE || prev == TIR_TOK_RBRACE;
		prev = t.kind;
		if (t.kind == TIR_TOK_LBRACE) {
			if (++depth > TIR_MAX_NEST) {
				perr_tok(ps, &t, "blocks nested deeper than %d", TIR_MAX_NEST);
				break;
			}
			continue;
		}
		if (t.kind == TIR_TOK_RBRACE) {
			if (--depth > 0)
				continue;
			if (fn_body && !returned) {
				perr_tok(ps, &t, "a function's body ends with 'return EXPR', the value it gives");
				break;
			}
			sc->end_off = t.off + 1;
			sc->end_line = t.line;
			ok = true;
			break;
		}
		if (!start || t.kind == TIR_TOK_NEWLINE)
			continue;
		if (returned && depth == 1) {
			perr_tok(ps, &t, "nothing may follow 'return' in a function's body");
			break;
		}
		if (t.kind != TIR_TOK_NAME)
			continue;
		if (tok_is(ps, &t, "fn")) {
			perr_tok(ps, &t, "a function is defined at the top level only, not inside a %s",
				 fn_body && depth == 1 ? "function" : "loop");
			break;
		}
		if (tok_is(ps, &t, "return")) {
			if (fn_body && depth == 1) {
				struct tir_token v;
				tir_lex_scan(lx, &v);
				sc->ntok++;
				prev = v.kind;
				if (v.kind == TIR_TOK_NEWLINE || v.kind == TIR_TOK_RBRACE || v.kind == TIR_TOK_EOF) {
					perr_tok(ps, &t, "'return' needs the value to give: return EXPR");
					break;
				}
				if (v.kind == TIR_TOK_LBRACE)
					depth++;
				returned = true;
				continue;
			}
			perr_tok(ps, &t, in_fn ? "'return' inside a loop: a function returns once, at the end of its body"
					       : "'return' outside a function");
			break;
		}
		if (in_fn && tok_is(ps, &t, "print")) {
			perr_tok(ps, &t, "a function cannot print (it is pure): print what it returns");
			break;
		}
		if (tok_is(ps, &t, "input")) {
			perr_tok(ps, &t, "'input' is declared at the top level only%s",
				 in_fn ? ": a function is given its values as arguments" : "");
			break;
		}
	}
	tir_lex_fini(lx);
	free(lx);
	return ok;
}

static void parse_statement(struct parser *ps);

/* The error of a statement followed by more than its end. */
static void end_expected(struct parser *ps)
{
	char got[80];
	tok_desc(ps, ps->tok, got, sizeof got);
	if (ps->tok->kind == TIR_TOK_ERROR)
		lex_error(ps, ps->tok);
	else if (ps->tok->kind == TIR_TOK_ASSIGN && (ps->flags & TIR_PARSE_REPL))
		perr_tok(ps, ps->tok, "only a name can be assigned: a tensor is never changed in place "
				      "(x[0] = v has no meaning here; build a new one with where, concat or pad)");
	else
		perr_tok(ps, ps->tok, "expected the end of the statement, got %s", got);
}

/* block    = { statement ( NEWLINE | before "}" ) } "}"
 * fn_block = { statement ( NEWLINE | before "}" ) } "return" expr { NEWLINE } "}"
 * From the token after '{' up to its '}' (left current).  A function's
 * gives the value returned.  Stops at the first error. */
static struct tir_node *parse_block(struct parser *ps, bool fn_body)
{
	for (;;) {
		while (ps->tok->kind == TIR_TOK_NEWLINE)
			advance(ps);
		if (ps->tok->kind == TIR_TOK_RBRACE || ps->tok->kind == TIR_TOK_EOF)
			return NULL; /* scan_block checked the rest */
		if (fn_body && tok_is(ps, ps->tok, "return")) {
			const struct frame *fr = scope_call(ps);
			advance(ps);
			ps->stmt = (uint32_t)ps->prog->nstmts;
			ps->in_print = fr->in_print; /* the value is the caller's */
			struct tir_loc l;
			struct tir_node *n = parse_expr(ps, &l);
			ps->in_print = false;
			if (!n || ps->stmt_failed)
				return NULL;
			while (ps->tok->kind == TIR_TOK_NEWLINE)
				advance(ps);
			if (ps->tok->kind != TIR_TOK_RBRACE) {
				end_expected(ps);
				return NULL;
			}
			return n;
		}
		ps->stmt = (uint32_t)ps->prog->nstmts;
		ps->in_print = false;
		parse_statement(ps);
		if (!ps->stmt_failed && ps->tok->kind != TIR_TOK_NEWLINE && ps->tok->kind != TIR_TOK_RBRACE)
			end_expected(ps);
		commit_binding(ps);
		memset(&ps->pend, 0, sizeof ps->pend);
		if (ps->stmt_failed)
			return NULL;
	}
}

/* The product of the counts of the loops being expanded. */
static double loop_mult(const struct parser *ps)
{
	double m = 1;
	for (int i = 0; i < ps->nframes; i++)
		if (!ps->frames[i].call)
			m *= (double)ps->frames[i].trips;
	return m;
}

/* Whether expanding `what` (about est tokens, the loops around it
 * counted) keeps within TIR_MAX_EXPANDED; else the error, at loc. */
static bool within_limit(struct parser *ps, const struct tir_loc *loc, double est, const char *what)
{
	if ((double)ps->expanded + est <= (double)TIR_MAX_EXPANDED)
		return true;
	perr(ps, TIR_ESYNTAX, loc,
	     "%s would expand to about %.3g tokens%s, over the limit of %d (TIR_MAX_EXPANDED)", what,
	     (double)ps->expanded + est, ps->nframes ? " with the loops and calls around it" : "",
	     TIR_MAX_EXPANDED);
	return false;
}

/* for_stmt = "for" NAME "in" "range" "(" iexpr [ "," iexpr [ "," iexpr ] ] ")" "{" block */
static void parse_for(struct parser *ps)
{
	struct tir_token kw = *ps->tok;
	struct tir_loc loc;
	loc_tok(ps, &kw, &loc);
	advance(ps); /* for */
	struct tir_token var = *ps->tok;
	if (!check_name(ps, &var))
		return;
	struct look lk;
	lookup_name(ps, ps->lx.src->text + var.off, var.len, &lk);
	if (lk.kind == L_INT) {
		perr_tok(ps, &var, "'%.*s' is already the index of a loop around this one, or an int parameter",
			 (int)var.len, ps->lx.src->text + var.off);
		return;
	}
	advance(ps);
	if (!tok_is(ps, ps->tok, "in")) {
		expected(ps, "'in', as in: for i in range(4) { ... }");
		return;
	}
	advance(ps);
	if (!tok_is(ps, ps->tok, "range") || peek(ps)->kind != TIR_TOK_LPAREN) {
		expected(ps, "range(...), as in: for i in range(4) { ... }");
		return;
	}
	advance(ps);
	struct tir_token open = *ps->tok;
	advance(ps);
	int64_t a[3];
	struct tir_token at[3];
	int na = 0;
	while (ps->tok->kind != TIR_TOK_RPAREN) {
		if (na == 3) {
			perr_tok(ps, ps->tok, "range takes at most 3 arguments (start, stop, step)");
			return;
		}
		at[na] = *ps->tok;
		if (!parse_static(ps, &a[na++], STATIC_WANT))
			return;
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	if (!close_bracket(ps, TIR_TOK_RPAREN, &open))
		return;
	if (na == 0) {
		perr_tok(ps, &open, "range needs a count: range(stop), range(start, stop) or range(start, stop, step)");
		return;
	}
	int64_t start = na > 1 ? a[0] : 0, stop = na > 1 ? a[1] : a[0], step = na > 2 ? a[2] : 1;
	if (step == 0) {
		perr_tok(ps, &at[2], "range: the step must not be 0");
		return;
	}
	uint64_t trips = 0;
	if (step > 0 && stop > start)
		trips = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
	else if (step < 0 && stop < start)
		trips = ((uint64_t)start - (uint64_t)stop - 1) / ((uint64_t)(-(step + 1)) + 1) + 1;
	if (ps->tok->kind != TIR_TOK_LBRACE) {
		expected(ps, "'{' to open the loop's body");
		return;
	}
	struct tir_token brace = *ps->tok;
	struct scan sc;
	if (!scan_block(ps, &brace, false, &sc))
		return;
	const struct tir_source *src = ps->lx.src;
	uint32_t base = ps->line_base;
	if (ps->nframes >= TIR_MAX_NEST) {
		perr(ps, TIR_ESYNTAX, &loc, "loops and calls nested deeper than %d", TIR_MAX_NEST);
		return;
	}
	if (!within_limit(ps, &loc, loop_mult(ps) * (double)trips * sc.ntok, "this loop"))
		return;
	struct frame *fr = &ps->frames[ps->nframes++];
	memset(fr, 0, offsetof(struct frame, args));
	fr->loc = loc;
	fr->var = src->text + var.off;
	fr->varlen = var.len;
	fr->trips = (int64_t)trips;
	for (uint64_t k = 0; k < trips && !ps->stmt_failed; k++) {
		fr->value = (int64_t)((uint64_t)start + k * (uint64_t)step);
		ps->expanded += sc.ntok;
		seek(ps, src, brace.off + 1, brace.line, base);
		parse_block(ps, false);
	}
	ps->nframes--;
	seek(ps, src, sc.end_off, sc.end_line, base);
}

/* fn_def = "fn" NAME "(" [ NAME { "," NAME } [","] ] ")" "{" fn_block */
static void parse_fn(struct parser *ps)
{
	struct tir_program *p = ps->prog;
	advance(ps); /* fn */
	struct tir_token nt = *ps->tok;
	const char *text = ps->lx.src->text;
	if (!check_name(ps, &nt))
		return;
	if (tir_op_lookup(text + nt.off, nt.len) >= 0) {
		perr_tok(ps, &nt, "'%.*s' is an op; a function needs a name of its own", (int)nt.len, text + nt.off);
		return;
	}
	advance(ps);
	struct tir_token open = *ps->tok;
	if (!accept(ps, TIR_TOK_LPAREN)) {
		expected(ps, "'(' and the parameters, as in: fn block(x, i) { ... }");
		return;
	}
	struct tir_token params[TIR_MAX_FN_PARAMS];
	int np = 0;
	while (ps->tok->kind != TIR_TOK_RPAREN) {
		struct tir_token pt = *ps->tok;
		if (pt.kind != TIR_TOK_NAME) {
			expected(ps, "a parameter's name");
			return;
		}
		if (!check_name(ps, &pt))
			return;
		for (int k = 0; k < np; k++) {
			if (params[k].len == pt.len && !memcmp(text + params[k].off, text + pt.off, pt.len)) {
				perr_tok(ps, &pt, "parameter '%.*s' is named twice", (int)pt.len, text + pt.off);
				return;
			}
		}
		if (np == TIR_MAX_FN_PARAMS) {
			perr_tok(ps, &pt, "a function takes at most %d parameters", TIR_MAX_FN_PARAMS);
			return;
		}
		params[np++] = pt;
		advance(ps);
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	if (!close_bracket(ps, TIR_TOK_RPAREN, &open))
		return;
	if (ps->tok->kind != TIR_TOK_LBRACE) {
		expected(ps, "'{' to open the function's body");
		return;
	}
	struct tir_token brace = *ps->tok;
	struct scan sc;
	bool ok = scan_block(ps, &brace, true, &sc);
	if (!ok && (ps->flags & TIR_PARSE_REPL))
		return; /* an earlier definition stays */
	struct tir_func *f = tir_arena_alloc(&p->arena, sizeof *f);
	if (!f || tir_grow((void **)&p->funcs, &p->capfuncs, p->nfuncs + 1, sizeof *p->funcs) ||
	    !(f->name = tir_arena_strndup(&p->arena, text + nt.off, nt.len))) {
		perr_tok(ps, &nt, "out of memory");
		return;
	}
	for (int k = 0; k < np; k++)
		if (!(f->params[k] = tir_arena_strndup(&p->arena, text + params[k].off, params[k].len))) {
			perr_tok(ps, &nt, "out of memory");
			return;
		}
	f->nparams = np;
	f->src = ps->lx.src;
	f->line_base = ps->line_base;
	f->body_off = brace.off + 1;
	f->body_line = brace.line;
	f->ntok = sc.ntok;
	loc_tok(ps, &nt, &f->loc);
	f->bad = !ok; /* in a file its calls then fail unreported */
	p->funcs[p->nfuncs++] = f;
	if (func_index_put(ps, p->nfuncs - 1)) {
		perr_tok(ps, &nt, "out of memory");
		return;
	}
	if (ok)
		seek(ps, ps->lx.src, sc.end_off, sc.end_line, ps->line_base);
}

/* An unknown op's (or function's) error, with what it may have meant. */
static void unknown_call(struct parser *ps, const struct tir_token *t)
{
	const struct tir_program *p = ps->prog;
	const char *s = ps->lx.src->text + t->off;
	size_t n = t->len;
	if (tok_is(ps, t, "range")) {
		perr_tok(ps, t, "range(...) is a loop's count only, as in: for i in range(4) { ... }");
		return;
	}
	const char *np = numpy_spelling(s, n);
	if (np) {
		perr_tok(ps, t, "unknown op '%.*s'; did you mean '%s'?", (int)n, s, np);
		return;
	}
	const char *sug = tir_op_suggest(s, n);
	if (!p->nfuncs) {
		if (sug)
			perr_tok(ps, t, "unknown op '%.*s'; did you mean '%s'?", (int)n, s, sug);
		else
			perr_tok(ps, t, "unknown op '%.*s' (tir help ops lists them)", (int)n, s);
		return;
	}
	int best = n <= 2 ? 1 : n <= 5 ? 2 : 3;
	for (size_t i = 0; i < p->nfuncs; i++) {
		const char *fname = p->funcs[i]->name;
		int d = tir_edit_distance(s, n, fname, strlen(fname));
		if (d < best || (d == best && !sug)) {
			best = d;
			sug = fname;
		}
	}
	if (sug)
		perr_tok(ps, t, "unknown op or function '%.*s'; did you mean '%s'?", (int)n, s, sug);
	else
		perr_tok(ps, t, "unknown op or function '%.*s' (tir help ops lists the ops)", (int)n, s);
}

/* fn_call = NAME "(" [ expr { "," expr } [","] ] ")"   (NAME a function)
 * An argument that is an integer known when checked (iexpr) makes its
 * parameter an int; any other is a tensor.  The body is parsed with them,
 * its names the call's own; the value is what it returns. */
static struct tir_node *parse_fn_call(struct parser *ps, struct tir_func *f, const struct tir_token *name)
{
	struct tir_program *p = ps->prog;
	struct tir_loc loc;
	loc_tok(ps, name, &loc);
	advance(ps); /* name */
	struct tir_token open = *ps->tok;
	advance(ps); /* '(' */
	struct fn_arg args[TIR_MAX_FN_PARAMS];
	int nargs = 0;
	bool in_print = ps->in_print;
	struct tir_node *ret = NULL;
	ps->in_print = false; /* the arguments are the body's statements' operands */
	while (ps->tok->kind != TIR_TOK_RPAREN) {
		struct tir_token at = *ps->tok;
		if (at.kind == TIR_TOK_NAME && peek(ps)->kind == TIR_TOK_ASSIGN) {
			perr_tok(ps, &at, "%s: a function's arguments are given by position", f->name);
			goto out;
		}
		if (nargs == TIR_MAX_FN_PARAMS) {
			perr_tok(ps, &at, "%s: more than %d arguments", f->name, TIR_MAX_FN_PARAMS);
			goto out;
		}
		struct fn_arg *a = &args[nargs++];
		enum tir_tok after = peek(ps)->kind;
		a->str = NULL;
		if (at_string(ps) && (after == TIR_TOK_COMMA || after == TIR_TOK_RPAREN)) {
			a->is_int = false;
			a->node = NULL;
			if (!(a->str = take_string(ps)))
				goto out;
			if (!accept(ps, TIR_TOK_COMMA))
				break;
			continue;
		}
		/* an integer known when checked?  tried quietly, else a tensor */
		struct pos mark;
		save_pos(ps, &mark, false);
		bool quiet = ps->quiet;
		ps->quiet = true;
		bool is_int = parse_static(ps, &a->v, "") &&
			      (ps->tok->kind == TIR_TOK_COMMA || ps->tok->kind == TIR_TOK_RPAREN);
		ps->quiet = quiet;
		a->is_int = is_int;
		a->node = NULL;
		if (!is_int) {
			restore_pos(ps, &mark);
			struct tir_loc el;
			if (!(a->node = parse_expr(ps, &el)))
				goto out;
		}
		if (!accept(ps, TIR_TOK_COMMA))
			break;
	}
	if (!close_bracket(ps, TIR_TOK_RPAREN, &open))
		goto out;
	if (f->bad) {
		ps->stmt_failed = true; /* its definition failed: reported there */
		goto out;
	}
	if (nargs != f->nparams) {
		struct tir_str ps_ = {0};
		for (int k = 0; k < f->nparams; k++)
			tir_str_addf(&ps_, "%s%s", k ? ", " : "", f->params[k]);
		perr(ps, TIR_ETYPE, &loc, "%s takes %d argument%s (%s), got %d", f->name, f->nparams,
		     f->nparams == 1 ? "" : "s", ps_.s && !ps_.oom ? ps_.s : "", nargs);
		tir_str_free(&ps_);
		goto out;
	}
	for (int i = 0; i < ps->nframes; i++) {
		if (!ps->frames[i].call || ps->frames[i].fn != f)
			continue;
		struct tir_str cyc = {0};
		for (int j = i; j < ps->nframes; j++)
			if (ps->frames[j].call)
				tir_str_addf(&cyc, "%s -> ", ps->frames[j].fn->name);
		tir_str_addf(&cyc, "%s", f->name);
		perr(ps, TIR_ESYNTAX, &loc, "recursion: %s (a function may not call itself, directly or through others)",
		     cyc.s && !cyc.oom ? cyc.s : f->name);
		tir_str_free(&cyc);
		goto out;
	}
	if (ps->nframes >= TIR_MAX_NEST) {
		perr(ps, TIR_ESYNTAX, &loc, "loops and calls nested deeper than %d", TIR_MAX_NEST);
		goto out;
	}
	if (!within_limit(ps, &loc, loop_mult(ps) * f->ntok, "this call"))
		goto out;
	ps->expanded += f->ntok;
	struct frame *fr = &ps->frames[ps->nframes++];
	memset(fr, 0, offsetof(struct frame, args));
	fr->call = true;
	fr->in_print = in_print;
	fr->loc = loc;
	fr->fn = f;
	fr->serial = ++p->ncallserial;
	fr->callno = f->ncalls++;
	memcpy(fr->args, args, sizeof *args * (size_t)nargs);
	struct pos back;
	if (!save_pos(ps, &back, true)) {
		ps->nframes--;
		perr(ps, TIR_ENOMEM, &loc, "out of memory");
		goto out;
	}
	struct pending pend = ps->pend;
	memset(&ps->pend, 0, sizeof ps->pend);
	seek(ps, f->src, f->body_off, f->body_line, f->line_base);
	ret = parse_block(ps, true);
	restore_pos(ps, &back);
	ps->pend = pend;
	ps->nframes--;
	ps->stmt = (uint32_t)p->nstmts; /* the caller's nodes from here come after the body's statements */
	ps->called = true;
out:
	ps->in_print = in_print;
	return ret;
}

/* statement = input_stmt | bind_stmt | print_stmt | fn_def | for_stmt
 *           | expr (REPL, top level: printed) */
static void parse_statement(struct parser *ps)
{
	const struct tir_token *t = ps->tok;
	bool top = ps->nframes == 0;
	enum tir_tok next = TIR_TOK_EOF; /* at a NAME, the token after it (peeked once) */
	if (t->kind == TIR_TOK_ERROR) {
		/* reported by advance */
	} else if (t->kind == TIR_TOK_RBRACE) {
		perr_tok(ps, t, "'}' closes nothing");
	} else if (t->kind == TIR_TOK_NAME && ((next = peek(ps)->kind) == TIR_TOK_COMMA || next == TIR_TOK_COLON) &&
		   is_multi_bind(ps)) {
		parse_multi_bind(ps);
	} else if (t->kind == TIR_TOK_NAME && (next == TIR_TOK_ASSIGN || next == TIR_TOK_COLON)) {
		parse_bind(ps); /* also `print = 3`, to say print is reserved */
	} else if (tok_is(ps, t, "input") && peek(ps)->kind == TIR_TOK_NAME) {
		if (top)
			parse_input(ps);
		else
			perr_tok(ps, t, "'input' is declared at the top level only");
	} else if (tok_is(ps, t, "print")) {
		if (scope_call(ps))
			perr_tok(ps, t, "a function cannot print (it is pure): print what it returns");
		else
			parse_print(ps, false);
	} else if (tok_is(ps, t, "fn") && peek(ps)->kind == TIR_TOK_NAME) {
		if (top)
			parse_fn(ps);
		else
			perr_tok(ps, t, "a function is defined at the top level only");
	} else if (tok_is(ps, t, "for") && peek(ps)->kind == TIR_TOK_NAME) {
		parse_for(ps);
	} else if (tok_is(ps, t, "return")) {
		perr_tok(ps, t, scope_call(ps) ? "'return' inside a loop: a function returns once, at the end of its body"
					       : "'return' outside a function");
	} else if (top && (ps->flags & TIR_PARSE_REPL)) {
		parse_print(ps, true);
	} else {
		struct tir_token at = *t;
		struct tir_loc l;
		/* parse it anyway: its own errors come first */
		if (parse_expr(ps, &l) && !ps->stmt_failed && ps->tok->kind == TIR_TOK_ASSIGN)
			perr_tok(ps, ps->tok, "only a name can be assigned: a tensor is never changed in place "
					      "(x[0] = v has no meaning here; build a new one with where, concat or pad)");
		else if (!ps->stmt_failed)
			perr_tok(ps, &at, top ? "an expression alone does nothing in a file; write 'print ...' or 'NAME = ...'"
					      : "an expression alone does nothing here; write 'NAME = ...'");
	}
}

/* program = { statement ( NEWLINE | EOF ) } */
static void parse_statements(struct parser *ps)
{
	lex_ahead(ps);
	advance(ps);
	for (;;) {
		while (ps->tok->kind == TIR_TOK_NEWLINE)
			advance_inline(ps);
		if (ps->tok->kind == TIR_TOK_EOF)
			break;
		ps->stmt = (uint32_t)ps->prog->nstmts;
		ps->depth = 0;
		ps->in_print = false;
		size_t nodes_before = ps->prog->nnodes;
		size_t stmts_before = ps->prog->nstmts;
		parse_statement(ps);
		if (!ps->stmt_failed && ps->tok->kind != TIR_TOK_NEWLINE && ps->tok->kind != TIR_TOK_EOF)
			end_expected(ps);
		ps->nlits = 0; /* a float list literal not settled by its use is f32 */
		if (ps->stmt_failed) {
			/* nothing of a failed statement stays in the graph */
			ps->prog->nnodes = nodes_before;
			ps->prog->nstmts = stmts_before;
			if (ps->prog->pass.cut)
				ps->prog->pass.cut(ps->prog->pass.ud, nodes_before);
			while (ps->nundo > 0) {
				ps->nundo--;
				ps->undo[ps->nundo].node->ref_name = ps->undo[ps->nundo].old;
			}
			undo_bindings(ps);
		}
		commit_binding(ps);
		ps->nundo = 0;
		ps->nbundo = 0;
		memset(&ps->pend, 0, sizeof ps->pend);
		if (ps->stmt_failed)
			skip_statement(ps);
		ps->stmt_failed = false;
		if (ps->prog->nerrors >= TIR_MAX_DIAGS * 5)
			break;
	}
}

int tir_program_parse(struct tir_program *p, const char *name, const char *src, size_t len,
		      unsigned flags)
{
	return tir_program_parse_at(p, name, src, len, flags, 1);
}

/* Room for about as many statements as the text has lines that start with
 * a name (a statement's first token), and for the names they bind: sized
 * once, these arrays are not copied again and again as a big program
 * grows.  A guess, not a bound: they still grow
 * past it as needed; and never more than STMT_GUESS ahead. */
#define STMT_GUESS (1 << 20)
#define NODE_BYTES_GUESS 448
#define ARENA_BYTES_GUESS 64
#define NAME_BYTES_GUESS 8

static void reserve(struct tir_program *p, const char *text, size_t len, bool copy)
{
	const char *end = text + len;
	size_t guess = 1;
	for (const char *q = text; guess < STMT_GUESS && (q = memchr(q, '\n', (size_t)(end - q))); q++)
		guess += q + 1 < end && ((unsigned)((q[1] | 32) - 'a') < 26 || q[1] == '_');
	/* best effort: if memory is short they grow as they go */
	(void)tir_grow_pages((void **)&p->stmts, &p->capstmts, p->nstmts + guess, sizeof *p->stmts);
	(void)tir_grow_pages((void **)&p->bind, &p->capbind, p->nbind + guess, sizeof *p->bind);
	(void)tir_grow_pages((void **)&p->nodes, &p->capnodes, p->nnodes + 2 * guess, sizeof *p->nodes);
	/* and the arenas' room for them, at the bytes a statement usually
	 * takes (a tensor literal's data and a long name take more: the
	 * arenas grow past it as they would) */
	(void)tir_arena_reserve(&p->node_arena, guess * NODE_BYTES_GUESS);
	(void)tir_arena_reserve(&p->name_arena, guess * NAME_BYTES_GUESS);
	(void)tir_arena_reserve(&p->arena, guess * ARENA_BYTES_GUESS + (copy ? len : 0));
	size_t ncap = p->capindex ? p->capindex : 64;
	while (ncap < 2 * (p->nbind + guess))
		ncap *= 2;
	if (ncap > p->capindex && !index_resize(p, ncap))
		tir_prefault(p->bind_index, p->capindex * sizeof *p->bind_index);
	/* and faulted in ahead by another thread (prefault.c), as far as the
	 * parse will write them for certain: a statement, a binding (a print
	 * takes none: a program of prints has a few pages faulted it does
	 * not use), a node pointer and a node's bytes at the least */
	if (p->capstmts >= p->nstmts + guess)
		tir_prefault(p->stmts + p->nstmts, guess * sizeof *p->stmts);
	if (p->capbind >= p->nbind + guess)
		tir_prefault(p->bind + p->nbind, guess * sizeof *p->bind);
	if (p->capnodes >= p->nnodes + guess)
		tir_prefault(p->nodes + p->nnodes, guess * sizeof *p->nodes);
	size_t room;
	void *at = tir_arena_room(&p->node_arena, &room);
	tir_prefault(at, guess * sizeof(struct tir_node) < room ? guess * sizeof(struct tir_node) : room);
}

int tir_program_parse_at(struct tir_program *p, const char *name, const char *src, size_t len,
			 unsigned flags, uint32_t first_line)
{
	p->ndiags = 0;
	p->nerrors = 0;
	struct tir_source *s = tir_arena_alloc(&p->arena, sizeof *s);
	if (!s)
		return -TIR_ENOMEM;
	s->name = tir_arena_strndup(&p->arena, name, strlen(name));
	if (len > (size_t)TIR_MAX_SOURCE) {
		struct tir_err e = {.code = TIR_ESYNTAX};
		snprintf(e.msg, sizeof e.msg, "%s: program text of %zu bytes is over the limit of %lld MiB",
			 name, len, (long long)(TIR_MAX_SOURCE >> 20));
		p->diags[p->ndiags++] = e;
		p->nerrors++;
		return -TIR_ESYNTAX;
	}
	bool copy = !(flags & TIR_PARSE_BORROW);
	reserve(p, src, len, copy);
	char *text = copy ? tir_arena_alloc(&p->arena, len + 1) : NULL;
	if (!s->name || (copy && !text))
		return -TIR_ENOMEM;
	if (copy)
		memcpy(text, src, len);
	s->text = copy ? text : src;
	s->len = (uint32_t)len;
	s->next = p->sources;
	p->sources = s;

	struct parser ps = {.prog = p, .flags = flags, .line_base = first_line ? first_line - 1 : 0};
	ps.tok = &ps.toks[0];
	ps.next = &ps.toks[1];
	if (tir_lex_init(&ps.lx, s))
		return -TIR_ENOMEM;
	for (size_t k = 0; k < p->nfuncs; k++)
		if (func_index_put(&ps, k))
			return -TIR_ENOMEM;
	parse_statements(&ps);
	tir_lex_fini(&ps.lx);
	free(ps.undo);
	free(ps.bundo);
	free(ps.findex);
	free(ps.lits);
	return p->nerrors ? -ps.first_code : 0;
}

struct tir_program *tir_program_alloc(void)
{
	struct tir_program *p = malloc(sizeof *p);
	if (p)
		memset(p, 0, offsetof(struct tir_program, diags));
	return p;
}

void tir_program_free(struct tir_program *p)
{
	if (!p)
		return;
	if (p->pass.free)
		p->pass.free(p->pass.ud);
	tir_pages_free(p->nodes, p->capnodes * sizeof *p->nodes);
	tir_pages_free(p->stmts, p->capstmts * sizeof *p->stmts);
	tir_pages_free(p->bind, p->capbind * sizeof *p->bind);
	tir_pages_free(p->bind_index, p->capindex * sizeof *p->bind_index);
	free(p->funcs);
	tir_arena_free(&p->arena);
	tir_arena_free(&p->node_arena);
	tir_arena_free(&p->name_arena);
	free(p);
}

int tir_program_ndiags(const struct tir_program *p)
{
	return p->ndiags;
}

const struct tir_err *tir_program_diag(const struct tir_program *p, int i)
{
	return i >= 0 && i < p->ndiags ? &p->diags[i] : NULL;
}

int tir_program_nerrors(const struct tir_program *p)
{
	return p->nerrors;
}

void tir_program_set_loader(struct tir_program *p, tir_load_type_fn fn, void *ud)
{
	p->loader = fn;
	p->loader_ud = ud;
}

int tir_text_incomplete(const char *src, size_t len)
{
	struct tir_source s = {.name = "", .text = src, .len = (uint32_t)len};
	struct tir_lexer lx;
	if (len > (size_t)TIR_MAX_SOURCE || tir_lex_init(&lx, &s))
		return 0;
	long braces = 0; /* a block's lines are one chunk: read on while one is open */
	for (enum tir_tok k; (k = tir_lex_next(&lx).kind) != TIR_TOK_EOF;)
		braces += k == TIR_TOK_LBRACE ? 1 : k == TIR_TOK_RBRACE && braces > 0 ? -1 : 0;
	int depth = lx.depth;
	tir_lex_fini(&lx);
	return depth > 0 || braces > 0;
}
