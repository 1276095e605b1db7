/*
 * test_api.c — the tutorial at the head of lib/tir.h, run as written: a
 * client using only the public header parses, runs and formats.
 */
#include "tir.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
	const char *src = "x = arange(4)\nprint x * 2\nprint sum(x)\n";
	size_t len = strlen(src);
	struct tir_program *p = tir_program_new();
	CHECK(tir_program_parse(p, "model.tir", src, len, 0) == 0);
	CHECK(tir_program_ndiags(p) == 0);
	struct tir_exec *x = tir_exec_new(p);
	struct tir_err err = {0};
	char out[256] = "";
	if (tir_exec_run(x, 0, NULL, 0, &err) == 0)
		for (size_t i = 0; i < tir_exec_nresults(x); i++) {
			char *s = tir_tensor_format(tir_exec_result(x, i), tir_exec_header(x, i), 6, false);
			strncat(out, s, sizeof out - strlen(out) - 1);
			free(s);
		}
	CHECK(!strcmp(out, "mul(x, 2): i64[4]\n[0, 2, 4, 6]\nsum(x): i64[]\n6\n"));
	tir_exec_free(x);

	/* run again and again (a REPL's lines, a server's replays): the same
	 * each time; the small constants a re-run reads from its cache are
	 * never a kernel's output (in place) */
	const char *again = "c = [1.0, 2.0, 3.0]\nprint c * 2.0 + 1.0\nprint -([4.5] * 2.0)\n";
	struct tir_program *p2 = tir_program_new();
	CHECK(tir_program_parse(p2, "again.tir", again, strlen(again), 0) == 0);
	x = tir_exec_new(p2);
	for (int run = 0; run < 4; run++) {
		out[0] = 0;
		if (tir_exec_run(x, 0, NULL, 0, &err) == 0)
			for (size_t i = 0; i < tir_exec_nresults(x); i++) {
				char *s = tir_tensor_format(tir_exec_result(x, i), "v", 6, false);
				strncat(out, s, sizeof out - strlen(out) - 1);
				free(s);
			}
		CHECK(!strcmp(out, "v: f32[3]\n[3, 5, 7]\nv: f32[1]\n[-9]\n"));
	}
	tir_exec_free(x);
	tir_program_free(p2);

	/* an error renders with its position and caret */
	CHECK(tir_program_parse(p, "bad.tir", "y = relux(x)\n", 13, 0) != 0);
	CHECK(tir_program_ndiags(p) == 1);
	char *msg = tir_err_render(tir_program_diag(p, 0));
	CHECK(msg && !strcmp(msg, "bad.tir:1:5: error: unknown op 'relux'; did you mean 'relu'?\n"
				  "    y = relux(x)\n        ^\n"));
	free(msg);
	tir_program_free(p);
	tir_release_caches();
	return check_report("test_api");
}
