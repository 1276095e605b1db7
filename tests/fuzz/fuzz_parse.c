/*
 * fuzz_parse.c — a libFuzzer target for the front end (lex, parse, check,
 * render, format).  Each input is parsed as a file and as REPL text; every
 * diagnostic is rendered; a program that parsed is formatted, and the
 * canonical text must parse again without errors and format to itself.
 * The input is also fed line by line to one program, as the REPL does;
 * whatever lines failed, the program's canonical text must then parse too.
 * Any violation aborts, which libFuzzer reports as a crash.  Not a test of
 * execution: nothing runs, and load() has no loader (it is refused).
 */
#include "tir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render_all(const struct tir_program *p)
{
	for (int i = 0; i < tir_program_ndiags(p); i++) {
		char *s = tir_err_render(tir_program_diag(p, i));
		if (!s)
			abort();
		free(s);
	}
}

/* Parse the canonical text `text`; it must have no errors, and return its
 * canonical text (new, free()). */
static char *reparse(const char *text, const char *what)
{
	struct tir_program *p = tir_program_new();
	if (!p)
		abort();
	if (tir_program_parse(p, "fmt.tir", text, strlen(text), 0) != 0) {
		fprintf(stderr, "fuzz_parse: the %s output does not parse:\n%s\n", what, text);
		for (int i = 0; i < tir_program_ndiags(p); i++) {
			char *s = tir_err_render(tir_program_diag(p, i));
			fputs(s ? s : "?\n", stderr);
			free(s);
		}
		abort();
	}
	char *again = tir_program_format(p);
	if (!again)
		abort();
	tir_program_free(p);
	return again;
}

static void one(const char *src, size_t size, unsigned flags)
{
	struct tir_program *p = tir_program_new();
	if (!p)
		return;
	int rc = tir_program_parse(p, "fuzz.tir", src, size, flags);
	(void)tir_text_incomplete(src, size);
	render_all(p);
	if (rc != 0 && tir_program_ndiags(p) == 0)
		abort(); /* an error must come with a diagnostic */
	if (rc == 0 && tir_program_nerrors(p) != 0)
		abort();
	if (rc == 0) {
		char *text = tir_program_format(p);
		if (!text)
			abort();
		char *f2 = reparse(text, "fmt");
		if (strcmp(text, f2) != 0) {
			fprintf(stderr, "fuzz_parse: fmt is not idempotent\n--- fmt:\n%s--- fmt of fmt:\n%s",
				text, f2);
			abort();
		}
		free(f2);
		free(text);
	}
	tir_program_free(p);
}

/* Line by line into one program, as a REPL session: each parse sees the
 * bindings of the lines before, and a failed line changes nothing. */
static void session(const char *src, size_t size)
{
	struct tir_program *p = tir_program_new();
	if (!p)
		return;
	size_t start = 0;
	while (start < size) {
		const char *nl = memchr(src + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - src) + 1 : size;
		tir_program_parse(p, "<stdin>", src + start, end - start, TIR_PARSE_REPL);
		render_all(p);
		start = end;
	}
	char *text = tir_program_format(p);
	if (!text)
		abort();
	char *f2 = reparse(text, "session fmt");
	if (strcmp(text, f2) != 0) {
		fprintf(stderr, "fuzz_parse: session fmt is not idempotent\n--- fmt:\n%s--- fmt of fmt:\n%s",
			text, f2);
		abort();
	}
	free(f2);
	free(text);
	tir_program_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one((const char *)data, size, 0);
	one((const char *)data, size, TIR_PARSE_REPL);
	session((const char *)data, size);
	return 0;
}
