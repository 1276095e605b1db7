/*
 * lex.c — tir's lexer.  Numbers, names and strings are scanned by hand (one
 * pass, no backtracking: each has a regular shape, given in its comment);
 * punctuation by a switch on the first byte.  Newlines inside open brackets
 * are not tokens, which is how a statement continues over lines.  Every
 * token carries its byte span, line and code-point column.  Not a parser:
 * it knows nothing of statements.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte classes, so that the scanners test one table entry per byte. */
enum { C_DIGIT = 1, C_ALPHA = 2, C_SPACE = 4 };

static const unsigned char cls[256] = {
	['0' ... '9'] = C_DIGIT,
	['A' ... 'Z'] = C_ALPHA, ['a' ... 'z'] = C_ALPHA, ['_'] = C_ALPHA,
	[' '] = C_SPACE, ['\t'] = C_SPACE, ['\r'] = C_SPACE, ['\f'] = C_SPACE, ['\v'] = C_SPACE,
};

static bool is_digit(unsigned char c)
{
	return cls[c] & C_DIGIT;
}

static bool is_word(unsigned char c)
{
	return cls[c] & (C_DIGIT | C_ALPHA);
}

/* Length of the number at p: (?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?
 * (the caller has seen a digit, or a '.' before a digit).  *isfloat when it
 * has a '.' or an exponent. */
static size_t scan_number(const char *p, const char *end, bool *isfloat)
{
	const char *q = p;
	*isfloat = false;
	while (q < end && is_digit((unsigned char)*q))
		q++;
	if (q < end && *q == '.') {
		*isfloat = true;
		q++;
		while (q < end && is_digit((unsigned char)*q))
			q++;
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		/* an exponent only with its digits; else the number ends before the
		 * 'e' (and the run-on check calls it malformed) */
		const char *r = q + 1;
		if (r < end && (*r == '+' || *r == '-'))
			r++;
		if (r < end && is_digit((unsigned char)*r)) {
			while (r < end && is_digit((unsigned char)*r))
				r++;
			q = r;
			*isfloat = true;
		}
	}
	return (size_t)(q - p);
}

/* Length of the string literal at p (on its opening quote), closing quote
 * included: "(?:[^"\\\n]|\\[^\n])*"; 0 when a newline or the end of
 * input comes first (an unterminated string). */
static size_t scan_string(const char *p, const char *end)
{
	for (const char *q = p + 1; q < end; q++) {
		if (*q == '"')
			return (size_t)(q + 1 - p);
		if (*q == '\n')
			return 0;
		if (*q == '\\' && (++q == end || *q == '\n'))
			return 0;
	}
	return 0;
}

/* The value of a decimal literal of at most 19 significant digits whose
 * power of ten is within 22, into *v: both are exact doubles then, so one
 * multiplication or division rounds once, correctly, as strtod does
 * (Clinger's fast path).  False for the rest, which go to strtod. */
static bool decimal_fast(const char *s, size_t len, double *v)
{
	static const double pow10[23] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
	};
	const char *q = s, *end = s + len;
	uint64_t m = 0;
	int digits = 0, exp10 = 0;
	bool point = false;
	for (; q < end && *q != 'e' && *q != 'E'; q++) {
		if (*q == '.') {
			point = true;
			continue;
		}
		if (digits == 19)
			return false;
		m = m * 10 + (uint64_t)(*q - '0');
		digits += m != 0; /* leading zeros are not significant */
		exp10 -= point;
	}
	if (q < end) { /* the exponent: [eE][+-]?[0-9]+ */
		q++;
		bool neg = *q == '-';
		if (*q == '+' || *q == '-')
			q++;
		int e = 0;
		for (; q < end && e <= 1000; q++)
			e = e * 10 + (*q - '0');
		if (q < end)
			return false; /* a huge exponent */
		exp10 += neg ? -e : e;
	}
	if (m > (UINT64_C(1) << 53) || exp10 < -22 || exp10 > 22)
		return false;
	*v = exp10 < 0 ? (double)m / pow10[-exp10] : (double)m * pow10[exp10];
	return true;
}

int tir_lex_init(struct tir_lexer *lx, const struct tir_source *src)
{
	memset(lx, 0, sizeof *lx);
	lx->src = src;
	lx->p = src->text;
	lx->end = src->text + src->len;
	lx->line = 1;
	lx->line_start = lx->p;
	lx->line_ascii = true;
	return 0;
}

/* The lexer holds nothing to free; kept so that callers need not know. */
void tir_lex_fini(struct tir_lexer *lx)
{
}

static bool is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

/* Code-point column of p on the current line (1-based).  On a line of
 * ASCII so far, the bytes count; else the code points from the column last
 * asked.  Only strings, comments and invalid characters bring other bytes,
 * and they clear line_ascii. */
static uint32_t column(struct tir_lexer *lx, const char *p)
{
	if (lx->line_ascii)
		return (uint32_t)(p - lx->line_start) + 1;
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

void tir_loc_near(const struct tir_loc *at, uint32_t off, struct tir_loc *loc)
{
	const char *t = at->src->text;
	uint32_t line = at->line, col = 1;
	if (off > at->src->len)
		off = at->src->len;
	for (uint32_t i = off; i < at->off; i++) /* before at */
		line -= t[i] == '\n';
	for (uint32_t i = at->off; i < off; i++) /* after */
		line += t[i] == '\n';
	uint32_t ls = off;
	while (ls > 0 && t[ls - 1] != '\n')
		ls--;
	for (uint32_t i = ls; i < off; i++)
		col += !is_cont((unsigned char)t[i]);
	*loc = (struct tir_loc){.src = at->src, .off = off, .line = line, .col = col};
}

/* Tokens are written field by field where the parser keeps them: a token
 * returned by value and copied whole at once stalls the copy on the
 * lexer's narrower stores still in flight (store forwarding fails). */
static inline void make(struct tir_lexer *lx, struct tir_token *t, enum tir_tok k, const char *p,
			size_t len)
{
	t->kind = k;
	t->off = (uint32_t)(p - lx->src->text);
	t->len = (uint32_t)len;
	t->line = lx->line;
	t->col = column(lx, p);
	t->ival = 0;
	t->fval = 0;
}

/* the NEWLINE token at p (outside brackets), and the next line begun */
static inline void newline(struct tir_lexer *lx, struct tir_token *t, const char *p)
{
	make(lx, t, TIR_TOK_NEWLINE, p, 1);
	lx->p = p + 1;
	lx->line++;
	lx->line_start = lx->p;
	lx->line_ascii = true;
}

static void error_at(struct tir_lexer *lx, struct tir_token *t, const char *p, size_t len,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void error_at(struct tir_lexer *lx, struct tir_token *t, const char *p, size_t len,
		     const char *fmt, ...)
{
	make(lx, t, TIR_TOK_ERROR, p, len);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(lx->errmsg, sizeof lx->errmsg, fmt, ap);
	va_end(ap);
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

static void lex_number(struct tir_lexer *lx, struct tir_token *t, const char *p)
{
	bool isfloat;
	size_t len = scan_number(p, lx->end, &isfloat);
	const char *q = p + len;
	/* a number runs into letters, digits or dots: 1.2.3, 12abc, 1e */
	const char *r = q;
	while (r < lx->end && (*r == '.' || is_word((unsigned char)*r)))
		r++;
	if (len == 0 || r != q) {
		lx->p = r;
		int shown = (int)(r - p > 40 ? 40 : r - p);
		error_at(lx, t, p, (size_t)(r - p), "malformed number '%.*s%s'", shown, p,
			 r - p > 40 ? "..." : "");
		return;
	}
	lx->p = q;
	if (len > 400) {
		error_at(lx, t, p, len, "number literal too long (%zu characters)", len);
		return;
	}
	if (isfloat) {
		double v;
		if (!decimal_fast(p, len, &v)) {
			char buf[401];
			memcpy(buf, p, len);
			buf[len] = 0;
			v = strtod(buf, NULL);
		}
		make(lx, t, TIR_TOK_FLOAT, p, len);
		t->fval = v;
	} else {
		uint64_t v = 0;
		for (size_t i = 0; i < len; i++) {
			unsigned d = (unsigned)(p[i] - '0');
			if (v > (UINT64_C(9223372036854775807) - d) / 10) {
				error_at(lx, t, p, len, "integer literal %.*s is too large (the limit is 2^63-1)",
					 (int)len, p);
				return;
			}
			v = v * 10 + d;
		}
		make(lx, t, TIR_TOK_INT, p, len);
		t->ival = (int64_t)v;
		t->fval = (double)v;
	}
}

static void lex_string(struct tir_lexer *lx, struct tir_token *t, const char *p)
{
	lx->line_ascii = false;
	size_t len = scan_string(p, lx->end);
	if (len == 0) {
		const char *q = p + 1;
		while (q < lx->end && *q != '\n')
			q++;
		lx->p = q;
		error_at(lx, t, p, 1, "unterminated string (a string ends on its line)");
		return;
	}
	lx->p = p + len;
	make(lx, t, TIR_TOK_STRING, p, len);
}

static void bracket_open(struct tir_lexer *lx, struct tir_token *t, const char *p, enum tir_tok k)
{
	lx->p = p + 1;
	if (lx->depth >= TIR_MAX_DEPTH) {
		error_at(lx, t, p, 1, "brackets nested deeper than %d", TIR_MAX_DEPTH);
		return;
	}
	make(lx, t, k, p, 1);
	make(lx, &lx->open[lx->depth++], k, p, 1);
}

static void bracket_close(struct tir_lexer *lx, struct tir_token *t, const char *p, enum tir_tok k)
{
	lx->p = p + 1;
	if (lx->depth > 0)
		lx->depth--;
	make(lx, t, k, p, 1);
}

/* A number of at most 18 digits, a '.' among them or not, and no exponent
 * (the numbers programs mostly write), scanned and valued in one pass:
 * false, having done nothing, for any other (lex_number's).  Its value is
 * decimal_fast's, done the same way: 18 digits are below 2^63, and a float
 * within 2^53 with at most 22 digits after the point is exact. */
static bool number_fast(struct tir_lexer *lx, struct tir_token *t, const char *p)
{
	static const double pow10[23] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
	};
	const char *q = p, *end = lx->end;
	uint64_t m = 0;
	while (q < end && is_digit((unsigned char)*q))
		m = m * 10 + (uint64_t)(*q++ - '0');
	const char *point = q;
	if (q < end && *q == '.') {
		q++;
		while (q < end && is_digit((unsigned char)*q))
			m = m * 10 + (uint64_t)(*q++ - '0');
	}
	size_t len = (size_t)(q - p);
	if (len > 18 + (point < q) || (q < end && (*q == '.' || is_word((unsigned char)*q))))
		return false; /* long, an exponent, or running on: 1.2.3, 12abc */
	if (point == q) {
		lx->p = q;
		make(lx, t, TIR_TOK_INT, p, len);
		t->ival = (int64_t)m;
		t->fval = (double)m;
		return true;
	}
	if (m > (UINT64_C(1) << 53))
		return false;
	lx->p = q;
	make(lx, t, TIR_TOK_FLOAT, p, len);
	t->fval = (double)m / pow10[q - point - 1];
	return true;
}

struct tir_token tir_lex_next(struct tir_lexer *lx)
{
	struct tir_token t;
	tir_lex_scan(lx, &t);
	return t;
}

/* The operators of one byte that start no longer one (kind 0: not such a
 * byte; ';' ends a statement as a newline does). */
static const unsigned char single[256] = {
	[','] = TIR_TOK_COMMA, [':'] = TIR_TOK_COLON, ['+'] = TIR_TOK_PLUS, ['-'] = TIR_TOK_MINUS,
	['@'] = TIR_TOK_AT, ['{'] = TIR_TOK_LBRACE, ['}'] = TIR_TOK_RBRACE, ['%'] = TIR_TOK_PERCENT,
	['&'] = TIR_TOK_AMP, ['|'] = TIR_TOK_PIPE, ['~'] = TIR_TOK_TILDE, [';'] = TIR_TOK_NEWLINE,
};

/* The general scan, from p: blanks, comments and newlines, then any token
 * (tir_lex_scan takes the common ones first). */
static __attribute__((noinline)) void scan(struct tir_lexer *lx, struct tir_token *t, const char *p)
{
	for (;;) {
		if (p >= lx->end) {
			lx->p = p;
			make(lx, t, TIR_TOK_EOF, p, 0);
			return;
		}
		char c = *p;
		if (cls[(unsigned char)c] & C_SPACE) {
			p++;
		} else if (c == '#') {
			lx->line_ascii = false;
			const char *nl = memchr(p, '\n', (size_t)(lx->end - p));
			p = nl ? nl : lx->end;
		} else if (c == '\n') {
			if (lx->depth == 0) {
				newline(lx, t, p);
				return;
			}
			p++;
			lx->line++;
			lx->line_start = p;
			lx->line_ascii = true;
		} else {
			break;
		}
	}
	char c = *p;
	enum tir_tok k;
	switch (c) {
	case '(': bracket_open(lx, t, p, TIR_TOK_LPAREN); return;
	case '[': bracket_open(lx, t, p, TIR_TOK_LBRACKET); return;
	case ')': bracket_close(lx, t, p, TIR_TOK_RPAREN); return;
	case ']': bracket_close(lx, t, p, TIR_TOK_RBRACKET); return;
	case '"': lex_string(lx, t, p); return;
	case ';': k = TIR_TOK_NEWLINE; goto punct;
	case ',': k = TIR_TOK_COMMA; goto punct;
	case ':': k = TIR_TOK_COLON; goto punct;
	case '=': k = TIR_TOK_ASSIGN; goto punct2;
	case '+': k = TIR_TOK_PLUS; goto punct;
	case '-': k = TIR_TOK_MINUS; goto punct;
	case '*': k = TIR_TOK_STAR; goto punct2;
	case '/': k = TIR_TOK_SLASH; goto punct2;
	case '@': k = TIR_TOK_AT; goto punct;
	case '{': k = TIR_TOK_LBRACE; goto punct;
	case '}': k = TIR_TOK_RBRACE; goto punct;
	case '%': k = TIR_TOK_PERCENT; goto punct;
	case '<': k = TIR_TOK_LT; goto punct2;
	case '>': k = TIR_TOK_GT; goto punct2;
	case '!': k = TIR_TOK_ERROR; goto punct2;
	case '&': k = TIR_TOK_AMP; goto punct;
	case '|': k = TIR_TOK_PIPE; goto punct;
	case '~': k = TIR_TOK_TILDE; goto punct;
	case '.':
		if (p + 1 < lx->end && is_digit((unsigned char)p[1]))
			break; /* .5 */
		if (p + 2 < lx->end && p[1] == '.' && p[2] == '.') {
			lx->p = p + 3;
			make(lx, t, TIR_TOK_ELLIPSIS, p, 3);
			return;
		}
		k = TIR_TOK_DOT;
		goto punct;
	default: break;
	}
	if (is_digit((unsigned char)c) || (c == '.' && p + 1 < lx->end && is_digit((unsigned char)p[1]))) {
		lex_number(lx, t, p);
		return;
	}
	if (cls[(unsigned char)c] & C_ALPHA) {
		const char *q = p + 1;
		while (q < lx->end && is_word((unsigned char)*q))
			q++;
		size_t len = (size_t)(q - p);
		lx->p = q;
		if (len > 255)
			error_at(lx, t, p, len, "name too long (%zu characters; the limit is 255)", len);
		else
			make(lx, t, TIR_TOK_NAME, p, len);
		return;
	}
	uint32_t cp;
	int n = utf8_len((const unsigned char *)p, (const unsigned char *)lx->end, &cp);
	lx->line_ascii = false;
	if (n > 1) {
		lx->p = p + n;
		error_at(lx, t, p, (size_t)n, "unexpected character '%.*s' (U+%04X)", n, p, cp);
		return;
	}
	lx->p = p + 1;
	if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
		error_at(lx, t, p, 1, "unexpected character '%c'", c);
	else
		error_at(lx, t, p, 1, "unexpected byte 0x%02x", (unsigned char)c);
	return;
punct:
	lx->p = p + 1;
	make(lx, t, k, p, 1);
	return;
punct2:
	/* the two-character operators: ** // <= >= == != */
	if (p + 1 < lx->end && p[1] == (c == '*' || c == '/' ? c : '=')) {
		static const struct { char c; enum tir_tok k; } two[] = {
			{'*', TIR_TOK_STARSTAR}, {'/', TIR_TOK_SLASHSLASH}, {'<', TIR_TOK_LE},
			{'>', TIR_TOK_GE}, {'=', TIR_TOK_EQ}, {'!', TIR_TOK_NE},
		};
		for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
			if (two[i].c == c)
				k = two[i].k;
		lx->p = p + 2;
		make(lx, t, k, p, 2);
		return;
	}
	if (k == TIR_TOK_ERROR) {
		lx->p = p + 1;
		error_at(lx, t, p, 1, "unexpected character '!' (not is ~, and != is not equal)");
		return;
	}
	goto punct;
}

void tir_lex_scan(struct tir_lexer *lx, struct tir_token *t)
{
	const char *p = lx->p;
	/* Most tokens of a program are names, numbers, line ends and one-byte
	 * operators after spaces: taken here with a test or two; the rest by
	 * the general scan (which takes these the same way, after more tests) */
	while (p < lx->end && *p == ' ')
		p++;
	if (p < lx->end) {
		unsigned char c = (unsigned char)*p;
		if (cls[c] & C_ALPHA) {
			const char *q = p + 1;
			while (q < lx->end && is_word((unsigned char)*q))
				q++;
			if (q - p <= 255) {
				lx->p = q;
				make(lx, t, TIR_TOK_NAME, p, (size_t)(q - p));
				return;
			}
		} else if (single[c]) {
			lx->p = p + 1;
			make(lx, t, (enum tir_tok)single[c], p, 1);
			return;
		} else if (c == '=' && (p + 1 == lx->end || p[1] != '=')) {
			lx->p = p + 1;
			make(lx, t, TIR_TOK_ASSIGN, p, 1);
			return;
		} else if (c == '*' && (p + 1 == lx->end || p[1] != '*')) {
			lx->p = p + 1;
			make(lx, t, TIR_TOK_STAR, p, 1);
			return;
		} else if ((cls[c] & C_DIGIT) && number_fast(lx, t, p)) {
			return;
		} else if (c == '\n' && lx->depth == 0) {
			newline(lx, t, p);
			return;
		} else if (c == '(') {
			bracket_open(lx, t, p, TIR_TOK_LPAREN);
			return;
		} else if (c == ')') {
			bracket_close(lx, t, p, TIR_TOK_RPAREN);
			return;
		}
	}
	scan(lx, t, p);
}

void tir_lex_scan_general(struct tir_lexer *lx, struct tir_token *t)
{
	scan(lx, t, lx->p);
}

const char *tir_tok_name(enum tir_tok t)
{
	static const char *const names[TIR_TOK_COUNT] = {
		"end of input", "end of line", "a name", "a number", "a number", "a string",
		"'('", "')'", "'['", "']'", "','", "':'", "'='", "'+'", "'-'", "'*'", "'/'", "'@'",
		"'{'", "'}'", "'**'", "'//'", "'%'", "'<'", "'<='", "'>'", "'>='", "'=='", "'!='",
		"'&'", "'|'", "'~'", "'.'", "'...'", "an invalid token",
	};
	return (unsigned)t < TIR_TOK_COUNT ? names[t] : "?";
}
