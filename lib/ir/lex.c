/*
 * lex.c — tir's lexer.  Numbers, names and strings are matched by PCRE2
 * patterns compiled once (JIT where the platform has it); punctuation by a
 * switch on the first byte.  Newlines inside open brackets are not tokens,
 * which is how a statement continues over lines.  Every token carries its
 * byte span, line and code-point column.  Not a parser: it knows nothing
 * of statements.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "ir.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PAT_NUMBER, PAT_NAME, PAT_STRING, PAT_COUNT };

static const char *const patterns[PAT_COUNT] = {
	[PAT_NUMBER] = "(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?",
	[PAT_NAME] = "[A-Za-z_][A-Za-z0-9_]*",
	/* a string ends at its quote; a newline or the end of input before that
	 * is an unterminated string, told apart below */
	[PAT_STRING] = "\"(?:[^\"\\\\\\n]|\\\\[^\\n])*\"",
};

static pcre2_code *compiled[PAT_COUNT];
static bool jit_ok[PAT_COUNT];
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

static void compile_patterns(void)
{
	for (int i = 0; i < PAT_COUNT; i++) {
		int ec;
		PCRE2_SIZE eo;
		compiled[i] = pcre2_compile((PCRE2_SPTR)patterns[i], PCRE2_ZERO_TERMINATED,
					    PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, &ec, &eo, NULL);
		TIR_ASSERT(compiled[i]);
		jit_ok[i] = pcre2_jit_compile(compiled[i], PCRE2_JIT_COMPLETE) == 0;
	}
}

/* Length of the pattern's match at p, or 0. */
static size_t match(struct tir_lexer *lx, int pat, const char *p)
{
	pcre2_match_data *md = lx->match_data;
	size_t len = (size_t)(lx->end - p);
	int rc;
	if (jit_ok[pat])
		rc = pcre2_jit_match(compiled[pat], (PCRE2_SPTR)p, len, 0, 0, md, NULL);
	else
		rc = pcre2_match(compiled[pat], (PCRE2_SPTR)p, len, 0, 0, md, NULL);
	if (rc < 0)
		return 0;
	return pcre2_get_ovector_pointer(md)[1];
}

int tir_lex_init(struct tir_lexer *lx, const struct tir_source *src)
{
	pthread_once(&compile_once, compile_patterns);
	memset(lx, 0, sizeof *lx);
	lx->src = src;
	lx->p = src->text;
	lx->end = src->text + src->len;
	lx->line = 1;
	lx->line_start = lx->p;
	lx->match_data = pcre2_match_data_create(1, NULL);
	return lx->match_data ? 0 : -TIR_ENOMEM;
}

void tir_lex_fini(struct tir_lexer *lx)
{
	pcre2_match_data_free(lx->match_data);
	lx->match_data = NULL;
}

static bool is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

/* Code-point column of p on the current line (1-based). */
static uint32_t column(struct tir_lexer *lx, const char *p)
{
	if (lx->col_p < lx->line_start || lx->col_p > p) {
		lx->col_p = lx->line_start;
		lx->col_v = 1;
	}
	uint32_t col = lx->col_v;
	for (const char *q = lx->col_p; q < p; q++)
		col += !is_cont((unsigned char)*q);
	lx->col_p = p;
	lx->col_v = col;
	return col;
}

void tir_loc_of(const struct tir_source *src, uint32_t off, struct tir_loc *loc)
{
	uint32_t line = 1, col = 1;
	const char *t = src->text;
	if (off > src->len)
		off = src->len;
	for (uint32_t i = 0; i < off; i++) {
		if (t[i] == '\n')
			line++, col = 1;
		else
			col += !is_cont((unsigned char)t[i]);
	}
	loc->src = src;
	loc->off = off;
	loc->line = line;
	loc->col = col;
}

static struct tir_token make(struct tir_lexer *lx, enum tir_tok k, const char *p, size_t len)
{
	struct tir_token t = {.kind = k};
	t.off = (uint32_t)(p - lx->src->text);
	t.len = (uint32_t)len;
	t.line = lx->line;
	t.col = column(lx, p);
	return t;
}

static struct tir_token error_at(struct tir_lexer *lx, const char *p, size_t len,
				 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static struct tir_token error_at(struct tir_lexer *lx, const char *p, size_t len,
				 const char *fmt, ...)
{
	struct tir_token t = make(lx, TIR_TOK_ERROR, p, len);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(lx->errmsg, sizeof lx->errmsg, fmt, ap);
	va_end(ap);
	return t;
}

/* Length of one UTF-8 sequence at p, 0 if it is not valid UTF-8. */
static int utf8_len(const unsigned char *p, const unsigned char *end, uint32_t *cp)
{
	unsigned c = p[0];
	int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
	if (!n || end - p < n)
		return 0;
	uint32_t v = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
	for (int i = 1; i < n; i++) {
		if (!is_cont(p[i]))
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return n;
}

static struct tir_token lex_number(struct tir_lexer *lx, const char *p)
{
	size_t len = match(lx, PAT_NUMBER, p);
	const char *q = p + len;
	/* a number runs into letters, digits or dots: 1.2.3, 12abc, 1e */
	const char *r = q;
	while (r < lx->end && (*r == '.' || *r == '_' || (*r >= '0' && *r <= '9') ||
			       ((*r | 32) >= 'a' && (*r | 32) <= 'z')))
		r++;
	if (len == 0 || r != q) {
		lx->p = r;
		int shown = (int)(r - p > 40 ? 40 : r - p);
		return error_at(lx, p, (size_t)(r - p), "malformed number '%.*s%s'", shown, p,
				r - p > 40 ? "..." : "");
	}
	lx->p = q;
	if (len > 400)
		return error_at(lx, p, len, "number literal too long (%zu characters)", len);
	char buf[401];
	memcpy(buf, p, len);
	buf[len] = 0;
	bool isfloat = memchr(p, '.', len) || memchr(p, 'e', len) || memchr(p, 'E', len);
	struct tir_token t = make(lx, isfloat ? TIR_TOK_FLOAT : TIR_TOK_INT, p, len);
	if (isfloat) {
		t.fval = strtod(buf, NULL);
	} else {
		uint64_t v = 0;
		for (size_t i = 0; i < len; i++) {
			unsigned d = (unsigned)(buf[i] - '0');
			if (v > (UINT64_C(9223372036854775807) - d) / 10)
				return error_at(lx, p, len,
						"integer literal %s is too large (the limit is 2^63-1)", buf);
			v = v * 10 + d;
		}
		t.ival = (int64_t)v;
		t.fval = (double)v;
	}
	return t;
}

static struct tir_token lex_string(struct tir_lexer *lx, const char *p)
{
	size_t len = match(lx, PAT_STRING, p);
	if (len == 0) {
		const char *q = p + 1;
		while (q < lx->end && *q != '\n')
			q++;
		lx->p = q;
		return error_at(lx, p, 1, "unterminated string (a string ends on its line)");
	}
	lx->p = p + len;
	return make(lx, TIR_TOK_STRING, p, len);
}

static struct tir_token bracket_open(struct tir_lexer *lx, const char *p, enum tir_tok k)
{
	struct tir_token t = make(lx, k, p, 1);
	lx->p = p + 1;
	if (lx->depth >= TIR_MAX_DEPTH)
		return error_at(lx, p, 1, "brackets nested deeper than %d", TIR_MAX_DEPTH);
	lx->open[lx->depth++] = t;
	return t;
}

static struct tir_token bracket_close(struct tir_lexer *lx, const char *p, enum tir_tok k)
{
	lx->p = p + 1;
	if (lx->depth > 0)
		lx->depth--;
	return make(lx, k, p, 1);
}

struct tir_token tir_lex_next(struct tir_lexer *lx)
{
	const char *p = lx->p;
	for (;;) {
		if (p >= lx->end) {
			lx->p = p;
			return make(lx, TIR_TOK_EOF, p, 0);
		}
		char c = *p;
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			p++;
		} else if (c == '#') {
			const char *nl = memchr(p, '\n', (size_t)(lx->end - p));
			p = nl ? nl : lx->end;
		} else if (c == '\n') {
			if (lx->depth == 0) {
				struct tir_token t = make(lx, TIR_TOK_NEWLINE, p, 1);
				lx->p = p + 1;
				lx->line++;
				lx->line_start = lx->p;
				return t;
			}
			p++;
			lx->line++;
			lx->line_start = p;
		} else {
			break;
		}
	}
	char c = *p;
	switch (c) {
	case '(': return bracket_open(lx, p, TIR_TOK_LPAREN);
	case '[': return bracket_open(lx, p, TIR_TOK_LBRACKET);
	case ')': return bracket_close(lx, p, TIR_TOK_RPAREN);
	case ']': return bracket_close(lx, p, TIR_TOK_RBRACKET);
	case '"': return lex_string(lx, p);
	default: break;
	}
	static const struct { char c; enum tir_tok k; } punct[] = {
		{';', TIR_TOK_NEWLINE}, {',', TIR_TOK_COMMA}, {':', TIR_TOK_COLON},
		{'=', TIR_TOK_ASSIGN}, {'+', TIR_TOK_PLUS}, {'-', TIR_TOK_MINUS},
		{'*', TIR_TOK_STAR}, {'/', TIR_TOK_SLASH}, {'@', TIR_TOK_AT},
	};
	for (size_t i = 0; i < sizeof punct / sizeof punct[0]; i++) {
		if (punct[i].c == c) {
			lx->p = p + 1;
			return make(lx, punct[i].k, p, 1);
		}
	}
	if ((c >= '0' && c <= '9') || (c == '.' && p + 1 < lx->end && p[1] >= '0' && p[1] <= '9'))
		return lex_number(lx, p);
	if (c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z')) {
		size_t len = match(lx, PAT_NAME, p);
		TIR_ASSERT(len > 0);
		lx->p = p + len;
		if (len > 255)
			return error_at(lx, p, len, "name too long (%zu characters; the limit is 255)", len);
		return make(lx, TIR_TOK_NAME, p, len);
	}
	uint32_t cp;
	int n = utf8_len((const unsigned char *)p, (const unsigned char *)lx->end, &cp);
	if (n > 1) {
		lx->p = p + n;
		return error_at(lx, p, (size_t)n, "unexpected character '%.*s' (U+%04X)", n, p, cp);
	}
	lx->p = p + 1;
	if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
		return error_at(lx, p, 1, "unexpected character '%c'", c);
	return error_at(lx, p, 1, "unexpected byte 0x%02x", (unsigned char)c);
}

const char *tir_tok_name(enum tir_tok t)
{
	static const char *const names[TIR_TOK_COUNT] = {
		"end of input", "end of line", "a name", "a number", "a number", "a string",
		"'('", "')'", "'['", "']'", "','", "':'", "'='", "'+'", "'-'", "'*'", "'/'", "'@'",
		"an invalid token",
	};
	return (unsigned)t < TIR_TOK_COUNT ? names[t] : "?";
}
