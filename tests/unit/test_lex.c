/*
 * test_lex.c — the lexer alone: the kind, byte span, line and code-point
 * column of every token kind; CRLF and UTF-8; newlines inside brackets;
 * ';'; the open-bracket record; each lexical error; and a 5 MB line.
 * Not the parser: statements and graphs are test_parse.c's.
 */
#include "ir/ir.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define MAXTOK 256

struct lexed {
	struct tir_source src;
	struct tir_lexer lx;
	struct tir_token t[MAXTOK];
	char msg[MAXTOK][256];   /* the lexer's message of each ERROR token */
	int n;
};

/* Lex text (len bytes) to EOF or MAXTOK tokens; the lexer stays open so
 * that its depth and bracket record can be inspected.  Free with done(). */
static struct lexed *lex(const char *text, size_t len)
{
	struct lexed *L = calloc(1, sizeof *L);
	char *copy = malloc(len + 1);
	memcpy(copy, text, len);
	copy[len] = 0;
	L->src.name = "t.tir";
	L->src.text = copy;
	L->src.len = (uint32_t)len;
	CHECK(tir_lex_init(&L->lx, &L->src) == 0);
	while (L->n < MAXTOK) {
		struct tir_token t = tir_lex_next(&L->lx);
		if (t.kind == TIR_TOK_ERROR)
			snprintf(L->msg[L->n], sizeof L->msg[0], "%s", L->lx.errmsg);
		L->t[L->n++] = t;
		if (t.kind == TIR_TOK_EOF)
			break;
	}
	return L;
}

static struct lexed *lexs(const char *text)
{
	return lex(text, strlen(text));
}

static void done(struct lexed *L)
{
	tir_lex_fini(&L->lx);
	free((char *)L->src.text);
	free(L);
}

/* Token i is of kind k, spans `text` at line:col.  Says what differs. */
static int tok_is(struct lexed *L, int i, enum tir_tok k, const char *text, uint32_t line,
		  uint32_t col, int where)
{
	const struct tir_token *t = &L->t[i];
	size_t n = strlen(text);
	int ok = i < L->n && t->kind == k && t->len == n &&
		 !memcmp(L->src.text + t->off, text, n) && t->line == line && t->col == col;
	if (!ok)
		fprintf(stderr, "line %d: token %d: want kind %d '%s' at %u:%u, got kind %d '%.*s' at %u:%u\n",
			where, i, k, text, line, col, t->kind, (int)t->len, L->src.text + t->off,
			t->line, t->col);
	return ok;
}
#define TOK(L, i, k, text, line, col) CHECK(tok_is((L), (i), (k), (text), (line), (col), __LINE__))

static int count_kind(const struct lexed *L, enum tir_tok k)
{
	int c = 0;
	for (int i = 0; i < L->n; i++)
		c += L->t[i].kind == k;
	return c;
}

/* ---- every token kind ---- */

static void test_kinds(void)
{
	struct lexed *L = lexs("x_1: f32[2, 3] = add(x, -1.5e3) @ \"a b\" / 7 * y; print\n");
	int i = 0;
	TOK(L, i++, TIR_TOK_NAME, "x_1", 1, 1);
	TOK(L, i++, TIR_TOK_COLON, ":", 1, 4);
	TOK(L, i++, TIR_TOK_NAME, "f32", 1, 6);
	TOK(L, i++, TIR_TOK_LBRACKET, "[", 1, 9);
	TOK(L, i++, TIR_TOK_INT, "2", 1, 10);
	TOK(L, i++, TIR_TOK_COMMA, ",", 1, 11);
	TOK(L, i++, TIR_TOK_INT, "3", 1, 13);
	TOK(L, i++, TIR_TOK_RBRACKET, "]", 1, 14);
	TOK(L, i++, TIR_TOK_ASSIGN, "=", 1, 16);
	TOK(L, i++, TIR_TOK_NAME, "add", 1, 18);
	TOK(L, i++, TIR_TOK_LPAREN, "(", 1, 21);
	TOK(L, i++, TIR_TOK_NAME, "x", 1, 22);
	TOK(L, i++, TIR_TOK_COMMA, ",", 1, 23);
	TOK(L, i++, TIR_TOK_MINUS, "-", 1, 25);
	TOK(L, i++, TIR_TOK_FLOAT, "1.5e3", 1, 26);
	CHECK(L->t[i - 1].fval == 1500.0);
	TOK(L, i++, TIR_TOK_RPAREN, ")", 1, 31);
	TOK(L, i++, TIR_TOK_AT, "@", 1, 33);
	TOK(L, i++, TIR_TOK_STRING, "\"a b\"", 1, 35);
	TOK(L, i++, TIR_TOK_SLASH, "/", 1, 41);
	TOK(L, i++, TIR_TOK_INT, "7", 1, 43);
	CHECK(L->t[i - 1].ival == 7);
	TOK(L, i++, TIR_TOK_STAR, "*", 1, 45);
	TOK(L, i++, TIR_TOK_NAME, "y", 1, 47);
	TOK(L, i++, TIR_TOK_NEWLINE, ";", 1, 48);
	TOK(L, i++, TIR_TOK_NAME, "print", 1, 50);
	TOK(L, i++, TIR_TOK_NEWLINE, "\n", 1, 55);
	TOK(L, i++, TIR_TOK_EOF, "", 2, 1);
	CHECK(L->n == i);
	done(L);

	L = lexs("a+b-c");
	TOK(L, 0, TIR_TOK_NAME, "a", 1, 1);
	TOK(L, 1, TIR_TOK_PLUS, "+", 1, 2);
	TOK(L, 2, TIR_TOK_NAME, "b", 1, 3);
	TOK(L, 3, TIR_TOK_MINUS, "-", 1, 4);
	TOK(L, 4, TIR_TOK_NAME, "c", 1, 5);
	TOK(L, 5, TIR_TOK_EOF, "", 1, 6);
	done(L);

	/* Python's operators: the two-character ones whole, . and ... */
	L = lexs("a**b//c%d<e<=f>g>=h==i!=j&k|~l.T[...]=.5");
	{
		static const struct { enum tir_tok k; const char *text; uint32_t col; } want[] = {
			{TIR_TOK_NAME, "a", 1}, {TIR_TOK_STARSTAR, "**", 2}, {TIR_TOK_NAME, "b", 4},
			{TIR_TOK_SLASHSLASH, "//", 5}, {TIR_TOK_NAME, "c", 7}, {TIR_TOK_PERCENT, "%", 8},
			{TIR_TOK_NAME, "d", 9}, {TIR_TOK_LT, "<", 10}, {TIR_TOK_NAME, "e", 11},
			{TIR_TOK_LE, "<=", 12}, {TIR_TOK_NAME, "f", 14}, {TIR_TOK_GT, ">", 15},
			{TIR_TOK_NAME, "g", 16}, {TIR_TOK_GE, ">=", 17}, {TIR_TOK_NAME, "h", 19},
			{TIR_TOK_EQ, "==", 20}, {TIR_TOK_NAME, "i", 22}, {TIR_TOK_NE, "!=", 23},
			{TIR_TOK_NAME, "j", 25}, {TIR_TOK_AMP, "&", 26}, {TIR_TOK_NAME, "k", 27},
			{TIR_TOK_PIPE, "|", 28}, {TIR_TOK_TILDE, "~", 29}, {TIR_TOK_NAME, "l", 30},
			{TIR_TOK_DOT, ".", 31}, {TIR_TOK_NAME, "T", 32}, {TIR_TOK_LBRACKET, "[", 33},
			{TIR_TOK_ELLIPSIS, "...", 34}, {TIR_TOK_RBRACKET, "]", 37}, {TIR_TOK_ASSIGN, "=", 38},
			{TIR_TOK_FLOAT, ".5", 39},
		};
		for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
			TOK(L, (int)k, want[k].k, want[k].text, 1, want[k].col);
		CHECK(!strcmp(tir_tok_name(TIR_TOK_STARSTAR), "'**'"));
		CHECK(!strcmp(tir_tok_name(TIR_TOK_ELLIPSIS), "'...'"));
	}
	done(L);

	/* empty input, and input of only blanks and comments */
	L = lexs("");
	CHECK(L->n == 1 && L->t[0].kind == TIR_TOK_EOF && L->t[0].line == 1 && L->t[0].col == 1);
	done(L);
	L = lexs("  \t\f\v # only a comment");
	CHECK(L->n == 1 && L->t[0].kind == TIR_TOK_EOF);
	done(L);

	/* the names of token kinds for messages */
	CHECK(!strcmp(tir_tok_name(TIR_TOK_EOF), "end of input"));
	CHECK(!strcmp(tir_tok_name(TIR_TOK_NEWLINE), "end of line"));
	CHECK(!strcmp(tir_tok_name(TIR_TOK_RBRACKET), "']'"));
	CHECK(!strcmp(tir_tok_name(TIR_TOK_COUNT), "?"));
}

static void test_numbers(void)
{
	static const struct {
		const char *text;
		enum tir_tok kind;
		double value;
	} ok[] = {
		{"0", TIR_TOK_INT, 0},
		{"007", TIR_TOK_INT, 7},
		{"42", TIR_TOK_INT, 42},
		{"9223372036854775807", TIR_TOK_INT, 9223372036854775807.0},
		{"1.5", TIR_TOK_FLOAT, 1.5},
		{"5.", TIR_TOK_FLOAT, 5},
		{".25", TIR_TOK_FLOAT, 0.25},
		{"1e3", TIR_TOK_FLOAT, 1000},
		{"1E+3", TIR_TOK_FLOAT, 1000},
		{"2.5e-2", TIR_TOK_FLOAT, 0.025},
		{"1.e2", TIR_TOK_FLOAT, 100},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct lexed *L = lexs(ok[i].text);
		TOK(L, 0, ok[i].kind, ok[i].text, 1, 1);
		if (ok[i].kind == TIR_TOK_INT)
			CHECK((double)L->t[0].ival == ok[i].value && L->t[0].fval == ok[i].value);
		else
			CHECK(L->t[0].fval == ok[i].value);
		CHECK(L->t[1].kind == TIR_TOK_EOF);
		done(L);
	}
	/* an INT keeps all 63 bits */
	struct lexed *L = lexs("9223372036854775807");
	CHECK(L->t[0].ival == INT64_MAX);
	done(L);
	/* a float too large for a double is inf, not an error */
	L = lexs("1e999");
	CHECK(L->t[0].kind == TIR_TOK_FLOAT && isinf(L->t[0].fval));
	done(L);
	/* a sign is its own token */
	L = lexs("-3");
	CHECK(L->t[0].kind == TIR_TOK_MINUS && L->t[1].kind == TIR_TOK_INT && L->t[1].ival == 3);
	done(L);
}

static void test_strings(void)
{
	struct lexed *L = lexs("load(\"w \\\"q\\\" \\\\.npy\")");
	TOK(L, 2, TIR_TOK_STRING, "\"w \\\"q\\\" \\\\.npy\"", 1, 6);
	TOK(L, 3, TIR_TOK_RPAREN, ")", 1, 22);
	done(L);
	/* UTF-8 inside a string counts one column per code point after it */
	L = lexs("s = \"h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\" + b");
	TOK(L, 2, TIR_TOK_STRING, "\"h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", 1, 5);
	TOK(L, 3, TIR_TOK_PLUS, "+", 1, 12);
	TOK(L, 4, TIR_TOK_NAME, "b", 1, 14);
	done(L);
	L = lexs("\"\"");
	TOK(L, 0, TIR_TOK_STRING, "\"\"", 1, 1);
	done(L);
}

/* ---- lines, columns, CRLF, UTF-8 ---- */

static void test_lines(void)
{
	struct lexed *L = lexs("a = 1\r\nbb = 2\r\n\r\n  c\r\n");
	TOK(L, 0, TIR_TOK_NAME, "a", 1, 1);
	TOK(L, 2, TIR_TOK_INT, "1", 1, 5);
	TOK(L, 3, TIR_TOK_NEWLINE, "\n", 1, 7); /* the CR before it is a blank */
	TOK(L, 4, TIR_TOK_NAME, "bb", 2, 1);
	TOK(L, 6, TIR_TOK_INT, "2", 2, 6);
	TOK(L, 7, TIR_TOK_NEWLINE, "\n", 2, 8);
	TOK(L, 8, TIR_TOK_NEWLINE, "\n", 3, 2);
	TOK(L, 9, TIR_TOK_NAME, "c", 4, 3);
	TOK(L, 10, TIR_TOK_NEWLINE, "\n", 4, 5);
	TOK(L, 11, TIR_TOK_EOF, "", 5, 1);
	done(L);

	/* a lone CR is a blank, not a line end */
	L = lexs("a\rb");
	TOK(L, 0, TIR_TOK_NAME, "a", 1, 1);
	TOK(L, 1, TIR_TOK_NAME, "b", 1, 3);
	done(L);

	/* UTF-8 in comments: columns count code points, a comment ends at '\n' */
	L = lexs("# caf\xc3\xa9 \xe2\x88\x91 \xf0\x9f\x98\x80\nx = 1 # \xce\xbb\ny");
	TOK(L, 0, TIR_TOK_NEWLINE, "\n", 1, 11);
	TOK(L, 1, TIR_TOK_NAME, "x", 2, 1);
	TOK(L, 4, TIR_TOK_NEWLINE, "\n", 2, 10);
	TOK(L, 5, TIR_TOK_NAME, "y", 3, 1);
	CHECK(count_kind(L, TIR_TOK_ERROR) == 0);
	done(L);

	/* columns after multi-byte characters on the same line (inside a string) */
	L = lexs("x = \"\xc3\xa9\xc3\xa9\" @ y");
	TOK(L, 3, TIR_TOK_AT, "@", 1, 10);
	TOK(L, 4, TIR_TOK_NAME, "y", 1, 12);
	done(L);

	/* tir_loc_of agrees with the token positions */
	L = lexs("a\n  \xc3\xa9\xc3\xa9 b");
	struct tir_loc loc;
	tir_loc_of(&L->src, 9, &loc); /* the 'b' */
	CHECK(loc.line == 2 && loc.col == 6 && loc.off == 9 && loc.src == &L->src);
	tir_loc_of(&L->src, 1000, &loc); /* past the end: clamps */
	CHECK(loc.off == L->src.len);
	done(L);
}

/* ---- brackets ---- */

static void test_brackets(void)
{
	/* newlines inside ( or [ are not tokens; the line count goes on */
	struct lexed *L = lexs("y = f(a,\n  [1,\n   2]\n)\nz");
	int i = 0;
	TOK(L, i++, TIR_TOK_NAME, "y", 1, 1);
	TOK(L, i++, TIR_TOK_ASSIGN, "=", 1, 3);
	TOK(L, i++, TIR_TOK_NAME, "f", 1, 5);
	TOK(L, i++, TIR_TOK_LPAREN, "(", 1, 6);
	TOK(L, i++, TIR_TOK_NAME, "a", 1, 7);
	TOK(L, i++, TIR_TOK_COMMA, ",", 1, 8);
	TOK(L, i++, TIR_TOK_LBRACKET, "[", 2, 3);
	TOK(L, i++, TIR_TOK_INT, "1", 2, 4);
	TOK(L, i++, TIR_TOK_COMMA, ",", 2, 5);
	TOK(L, i++, TIR_TOK_INT, "2", 3, 4);
	TOK(L, i++, TIR_TOK_RBRACKET, "]", 3, 5);
	TOK(L, i++, TIR_TOK_RPAREN, ")", 4, 1);
	TOK(L, i++, TIR_TOK_NEWLINE, "\n", 4, 2);
	TOK(L, i++, TIR_TOK_NAME, "z", 5, 1);
	TOK(L, i++, TIR_TOK_EOF, "", 5, 2);
	CHECK(L->lx.depth == 0);
	done(L);

	/* CRLF inside brackets too */
	L = lexs("f(a,\r\n b)\r\n");
	TOK(L, 4, TIR_TOK_NAME, "b", 2, 2);
	TOK(L, 5, TIR_TOK_RPAREN, ")", 2, 3);
	TOK(L, 6, TIR_TOK_NEWLINE, "\n", 2, 5);
	done(L);

	/* ';' ends a statement even inside brackets (the parser then objects) */
	L = lexs("f(a; b)");
	TOK(L, 3, TIR_TOK_NEWLINE, ";", 1, 4);
	done(L);

	/* a comment inside brackets runs to the line end; the newline is eaten */
	L = lexs("f(a, # note (\n b)\nc");
	TOK(L, 4, TIR_TOK_NAME, "b", 2, 2);
	TOK(L, 5, TIR_TOK_RPAREN, ")", 2, 3);
	TOK(L, 6, TIR_TOK_NEWLINE, "\n", 2, 4);
	CHECK(L->lx.depth == 0);
	done(L);

	/* the open-bracket record at the end of input */
	L = lexs("x = f(a, [b,\n  (c");
	CHECK(L->lx.depth == 3);
	CHECK(L->lx.open[0].kind == TIR_TOK_LPAREN && L->lx.open[0].line == 1 && L->lx.open[0].col == 6);
	CHECK(L->lx.open[1].kind == TIR_TOK_LBRACKET && L->lx.open[1].line == 1 &&
	      L->lx.open[1].col == 10 && L->lx.open[1].off == 9);
	CHECK(L->lx.open[2].kind == TIR_TOK_LPAREN && L->lx.open[2].line == 2 && L->lx.open[2].col == 3);
	CHECK(count_kind(L, TIR_TOK_NEWLINE) == 0);
	done(L);

	/* closing brackets pop; a stray closer does not go below zero */
	L = lexs("())]\n(");
	CHECK(L->lx.depth == 1);
	CHECK(count_kind(L, TIR_TOK_NEWLINE) == 1);
	CHECK(L->lx.open[0].line == 2 && L->lx.open[0].col == 1);
	done(L);

	/* brackets deeper than TIR_MAX_DEPTH: an error token, depth capped */
	char deep[TIR_MAX_DEPTH + 8];
	memset(deep, '[', TIR_MAX_DEPTH + 1);
	deep[TIR_MAX_DEPTH + 1] = 0;
	L = lexs(deep);
	CHECK(L->lx.depth == TIR_MAX_DEPTH);
	CHECK(L->t[TIR_MAX_DEPTH].kind == TIR_TOK_ERROR);
	CHECK(L->t[TIR_MAX_DEPTH].col == TIR_MAX_DEPTH + 1);
	CHECK(strstr(L->msg[TIR_MAX_DEPTH], "nested deeper than 200") != NULL);
	CHECK(count_kind(L, TIR_TOK_ERROR) == 1);
	done(L);

	/* tir_text_incomplete: open brackets at the end, outside strings/comments */
	static const struct {
		const char *text;
		int want;
	} inc[] = {
		{"x = f(1,", 1},
		{"x = [[1, 2],\n [3", 1},
		{"x = f(1)", 0},
		{"x = (1 +", 1},
		{"x = 1 +", 0},          /* an operator at the end is not a bracket */
		{"x = \"(\"", 0},
		{"x = 1 # (", 0},
		{"x = )", 0},
		{"", 0},
		{"f(\n", 1},
	};
	for (size_t k = 0; k < sizeof inc / sizeof inc[0]; k++)
		CHECK(tir_text_incomplete(inc[k].text, strlen(inc[k].text)) == inc[k].want);
}

/* ---- errors ---- */

struct bad {
	const char *text;
	int index;            /* of the ERROR token */
	const char *span;     /* its text */
	uint32_t col;
	const char *msg;      /* a piece of the lexer's message */
};

static void test_errors(void)
{
	static const struct bad bad[] = {
		{"1.2.3", 0, "1.2.3", 1, "malformed number '1.2.3'"},
		{"x = 12abc", 2, "12abc", 5, "malformed number '12abc'"},
		{"1e", 0, "1e", 1, "malformed number '1e'"},
		{"1e+", 0, "1e", 1, "malformed number"},
		{".5.", 0, ".5.", 1, "malformed number '.5.'"},
		{"0x1F", 0, "0x1F", 1, "malformed number"},
		{"1_000", 0, "1_000", 1, "malformed number"},
		{"f(\"abc)", 2, "\"", 3, "unterminated string"},
		{"\"abc\ndef\"", 0, "\"", 1, "unterminated string"},
		{"\"a\\", 0, "\"", 1, "unterminated string"},
		{"9223372036854775808", 0, "9223372036854775808", 1, "too large"},
		{"99999999999999999999999", 0, "99999999999999999999999", 1, "too large"},
		{"a $ b", 1, "$", 3, "unexpected character '$'"},
		{"a ! b", 1, "!", 3, "unexpected character '!' (not is ~"},
		{"a ? b", 1, "?", 3, "unexpected character '?'"},
		{"x \xff", 1, "\xff", 3, "unexpected byte 0xff"},
		{"x \x80", 1, "\x80", 3, "unexpected byte 0x80"},
		{"x \x01", 1, "\x01", 3, "unexpected byte 0x01"},
		{"x = \xc3\xa9", 2, "\xc3\xa9", 5, "U+00E9"},
		{"\xe2\x88\x91(x)", 0, "\xe2\x88\x91", 1, "U+2211"},
		{"\xf0\x9f\x98\x80", 0, "\xf0\x9f\x98\x80", 1, "U+1F600"},
		{"\xc0\xaf", 0, "\xc0", 1, "unexpected byte 0xc0"},       /* overlong */
		{"\xed\xa0\x80", 0, "\xed", 1, "unexpected byte 0xed"},   /* a surrogate */
		{"\xe2\x88", 0, "\xe2", 1, "unexpected byte 0xe2"},       /* cut short */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const struct bad *b = &bad[i];
		struct lexed *L = lexs(b->text);
		TOK(L, b->index, TIR_TOK_ERROR, b->span, 1, b->col);
		if (!strstr(L->msg[b->index], b->msg)) {
			fprintf(stderr, "case %zu: message '%s' lacks '%s'\n", i, L->msg[b->index], b->msg);
			CHECK(0);
		}
		/* the lexer goes on after an error, to the end */
		CHECK(L->t[L->n - 1].kind == TIR_TOK_EOF);
		done(L);
	}

	/* NUL bytes are unexpected, and lexing goes on past them */
	struct lexed *L = lex("a\0b", 3);
	TOK(L, 0, TIR_TOK_NAME, "a", 1, 1);
	CHECK(L->t[1].kind == TIR_TOK_ERROR && L->t[1].off == 1 && L->t[1].len == 1);
	CHECK(strstr(L->msg[1], "unexpected byte 0x00") != NULL);
	TOK(L, 2, TIR_TOK_NAME, "b", 1, 3);
	done(L);

	/* an unterminated string swallows the rest of its line only */
	L = lexs("s = \"abc\ny = 1");
	CHECK(L->t[2].kind == TIR_TOK_ERROR);
	TOK(L, 3, TIR_TOK_NEWLINE, "\n", 1, 9);
	TOK(L, 4, TIR_TOK_NAME, "y", 2, 1);
	done(L);

	/* a malformed number is one error token, then lexing resumes */
	L = lexs("1.2.3 + 4");
	CHECK(L->t[0].kind == TIR_TOK_ERROR);
	TOK(L, 1, TIR_TOK_PLUS, "+", 1, 7);
	TOK(L, 2, TIR_TOK_INT, "4", 1, 9);
	done(L);

	/* names: 255 characters is the limit */
	char name[300];
	memset(name, 'n', sizeof name);
	name[255] = 0;
	L = lexs(name);
	CHECK(L->t[0].kind == TIR_TOK_NAME && L->t[0].len == 255);
	done(L);
	name[255] = 'n';
	name[256] = 0;
	L = lexs(name);
	CHECK(L->t[0].kind == TIR_TOK_ERROR && L->t[0].len == 256);
	CHECK(strstr(L->msg[0], "name too long") != NULL);
	CHECK(L->t[1].kind == TIR_TOK_EOF);
	done(L);

	/* a number literal over 400 characters */
	char num[500];
	memset(num, '1', sizeof num);
	num[401] = '.';
	num[499] = 0;
	L = lexs(num);
	CHECK(L->t[0].kind == TIR_TOK_ERROR && strstr(L->msg[0], "too long") != NULL);
	done(L);
}

/* ---- a 5 MB line ---- */

static void test_long_line(void)
{
	/* "x = [0, 1, 2, ..., ]" with over 5 MB on one line, then "\nz".  The
	 * column cache must keep this linear; a quadratic lexer would not
	 * finish in any sensible time. */
	size_t cap = 6u << 20;
	char *s = malloc(cap);
	size_t n = (size_t)sprintf(s, "x = [");
	int64_t count = 0;
	while (n < (5u << 20)) {
		n += (size_t)sprintf(s + n, "%lld, ", (long long)(count % 1000));
		count++;
	}
	n += (size_t)sprintf(s + n, "1.5] # \xc3\xa9\xc3\xa9 end\nz");
	struct tir_source src = {.name = "big.tir", .text = s, .len = (uint32_t)n};
	struct tir_lexer lx;
	CHECK(tir_lex_init(&lx, &src) == 0);
	int64_t ints = 0, commas = 0, other = 0, errors = 0;
	struct tir_token t, last_float = {0}, lastz = {0};
	int64_t sum = 0;
	do {
		t = tir_lex_next(&lx);
		switch (t.kind) {
		case TIR_TOK_INT: ints++; sum += t.ival; break;
		case TIR_TOK_COMMA: commas++; break;
		case TIR_TOK_FLOAT: last_float = t; break;
		case TIR_TOK_ERROR: errors++; break;
		case TIR_TOK_NAME: lastz = t; other++; break;
		default: other++; break;
		}
	} while (t.kind != TIR_TOK_EOF);
	tir_lex_fini(&lx);
	int64_t want_sum = 0;
	for (int64_t i = 0; i < count; i++)
		want_sum += i % 1000;
	CHECK(errors == 0);
	CHECK(ints == count && commas == count && sum == want_sum);
	CHECK(last_float.fval == 1.5 && last_float.line == 1);
	/* every byte before the float is ASCII: its column is its offset + 1 */
	CHECK(last_float.col == last_float.off + 1);
	CHECK(lastz.line == 2 && lastz.col == 1 && lastz.off == n - 1);
	/* x, =, [, ], newline, z, EOF */
	CHECK(other == 7);
	free(s);
}

/* tir_lex_scan's quick way for names, numbers, line ends and one-byte
 * operators gives what the general scan gives, token for token (kind,
 * span, line, column, values, error text), on random text made of the
 * pieces tokens are made of, well formed or not: every prefix of a
 * number's shape, names of up to 300 bytes, operators of one byte that
 * start two-byte ones, brackets, comments, tabs, CRLF and UTF-8. */
static void test_quick_way(void)
{
	static const char *const piece[] = {
		"t1", "x", "_a9", "tanh", "t123456", "0", "7", "42", "0.5", "0.125", "5.", "1.5e3", "1e", "2e+",
		"1.2.3", "12abc", "007", "123456789012345678", "1234567890123456789", "9007199254740993.0",
		"0.00000000000000000000001", "99999999999999999999", "9223372036854775807", "9223372036854775808",
		".5", "..", "...", ".", " ", "  ", "\t", "\n", "\r\n", ";", ",", ":", "=", "==", "!", "!=", "<", "<=",
		">=", "+", "-", "*", "**", "/", "//", "%", "@", "&", "|", "~", "(", ")", "[", "]", "{", "}",
		"# note\n", "\"s\"", "\"open", "\xc3\xa9", "\xff", "$",
	};
	enum { NPIECE = sizeof piece / sizeof piece[0], NTEXT = 3000 };
	char text[4096], errq[TIR_LEX_ERRLEN];
	unsigned seed = 12345, bad = 0, tokens = 0;
	for (int k = 0; k < NTEXT && bad < 5; k++) {
		size_t n = 0;
		int np = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 24;
		for (int i = 0; i < np; i++) {
			seed = seed * 1103515245u + 12345u;
			const char *s = piece[(seed >> 16) % NPIECE];
			if ((seed >> 8) % 64 == 0) { /* a long name: 255 bytes and over */
				size_t len = 250 + (seed >> 4) % 10;
				memset(text + n, 'n', len);
				n += len;
				continue;
			}
			memcpy(text + n, s, strlen(s));
			n += strlen(s);
		}
		text[n] = 0;
		struct tir_source src = {.name = "q.tir", .text = text, .len = (uint32_t)n};
		struct tir_lexer quick, general;
		tir_lex_init(&quick, &src);
		tir_lex_init(&general, &src);
		for (int guard = 0; guard < 1000; guard++) {
			struct tir_token a, b;
			tir_lex_scan(&quick, &a);
			snprintf(errq, sizeof errq, "%s", quick.errmsg);
			tir_lex_scan_general(&general, &b);
			tokens++;
			bool same = a.kind == b.kind && a.off == b.off && a.len == b.len && a.line == b.line &&
				    a.col == b.col && a.ival == b.ival &&
				    (a.fval == b.fval || (a.fval != a.fval && b.fval != b.fval)) &&
				    quick.p == general.p && quick.depth == general.depth &&
				    (a.kind != TIR_TOK_ERROR || !strcmp(errq, general.errmsg));
			if (!same) {
				fprintf(stderr, "quick way differs on %.*s at byte %u: kind %d/%d len %u/%u\n",
					(int)(n > 200 ? 200 : n), text, b.off, a.kind, b.kind, a.len, b.len);
				bad++;
				break;
			}
			if (a.kind == TIR_TOK_EOF)
				break;
		}
	}
	CHECK(bad == 0);
	CHECK(tokens > 20000);
}

int main(void)
{
	test_kinds();
	test_numbers();
	test_strings();
	test_lines();
	test_brackets();
	test_errors();
	test_long_line();
	test_quick_way();
	return check_report("test_lex");
}
