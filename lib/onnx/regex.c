/*
 * regex.c — PCRE2 patterns where a user writes one: tir import --rename,
 * tir inspect --match, the REPL's .vars.  JIT-compiled where PCRE2 has
 * it; a bad pattern's error gives PCRE2's offset.  Not a regex engine.
 */
/* PCRE2, loaded at the first pattern (tir_regex_new) */
#include "libs.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"

struct tir_regex {
	pcre2_code *code;
	pcre2_match_data *md;
};

struct tir_regex *tir_regex_new(const char *pattern, struct tir_err *err)
{
	if (ox_pcre2(err))
		return NULL;
	int ec;
	PCRE2_SIZE off;
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
	if (!code) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ec, msg, sizeof msg);
		tir_errf(err, TIR_ESYNTAX, NULL, "%s", (const char *)msg);
		err->loc.col = (uint32_t)off + 1;
		return NULL;
	}
	(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* the interpreter where there is no JIT */
	struct tir_regex *re = calloc(1, sizeof *re);
	if (re)
		re->md = pcre2_match_data_create_from_pattern(code, NULL);
	if (!re || !re->md) {
		if (re)
			free(re);
		pcre2_code_free(code);
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	re->code = code;
	return re;
}

void tir_regex_free(struct tir_regex *re)
{
	if (!re)
		return;
	pcre2_match_data_free(re->md);
	pcre2_code_free(re->code);
	free(re);
}

bool tir_regex_match(const struct tir_regex *re, const char *s)
{
	return pcre2_match(re->code, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, re->md, NULL) >= 0;
}

char *tir_regex_subst(const struct tir_regex *re, const char *s, const char *repl, struct tir_err *err)
{
	size_t cap = strlen(s) * 2 + strlen(repl) + 64;
	for (int tries = 0; tries < 8; tries++) {
		char *out = malloc(cap);
		if (!out)
			break;
		PCRE2_SIZE n = cap;
		int rc = pcre2_substitute(re->code, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0,
					  PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, re->md, NULL,
					  (PCRE2_SPTR)repl, PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)out, &n);
		if (rc >= 0)
			return out;
		free(out);
		if (rc == PCRE2_ERROR_NOMEMORY) {
			cap = n + 1;
			continue;
		}
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(rc, msg, sizeof msg);
		tir_errf(err, TIR_ESYNTAX, NULL, "replacement '%s': %s", repl, (const char *)msg);
		return NULL;
	}
	tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	return NULL;
}
