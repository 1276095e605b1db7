/*
 * xfer_client.c — the client's half of server to server (lib/net/client.c:
 * tir_remote_export, tir_remote_import), against two running `tir serve`
 * (tests/net/xfer_test.py starts them):
 *
 *     xfer_client A B [TOKEN_A TOKEN_B]     (A, B: HOST:PORT; "-": no token)
 *
 * A REPL-like exec computes y on A (kept there), moves it to B, and runs
 * on B a batch that reads it as a leaf: B is sent nothing (no blob) and the
 * numbers are right.  Then an input y was computed from is given again: B
 * must find its copy stale as it would its own, and compute y anew from
 * the new input.  And the errors: a capability used twice, a node A does
 * not hold, a node no session keeps.  Every value is small integers in
 * f32, exact, so no oracle is needed.  Prints "ok NAME" or "FAIL NAME: WHY"
 * per check and "N passed, M failed" last; exit 0 when none failed.
 */
#include "net/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N ((int64_t)1 << 20) /* 4 MiB of f32: past upload.c's threaded check */

static int passed, failed;

static void check(const char *name, bool ok, const char *why)
{
	if (ok) {
		passed++;
		printf("ok %s\n", name);
	} else {
		failed++;
		printf("FAIL %s: %s\n", name, why);
	}
	fflush(stdout);
}

static int parse(struct tir_program *p, const char *text, struct tir_err *err)
{
	if (tir_program_parse(p, "xfer", text, strlen(text), 0) == 0)
		return 0;
	*err = *tir_program_diag(p, 0);
	return -err->code;
}

/* x = k * i (i = 0..N-1) as input x */
static int give_x(struct tir_exec *x, float k, struct tir_err *err)
{
	struct tir_tensor t = {0};
	int64_t shape[1] = {N};
	if (tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, shape, false, err))
		return -err->code;
	float *d = tir_tensor_data(&t);
	for (int64_t i = 0; i < N; i++)
		d[i] = k * (float)i;
	return tir_exec_set_input(x, "x", &t, "x", err);
}

/* Whether the last run's result i is f(i) for every element. */
static bool result_is(struct tir_exec *x, size_t i, float mul, float add, char *why, size_t n)
{
	if (tir_exec_nresults(x) <= i) {
		snprintf(why, n, "%zu results", tir_exec_nresults(x));
		return false;
	}
	const struct tir_tensor *t = tir_exec_result(x, i);
	if (t->dtype != TIR_DTYPE_F32 || tir_tensor_numel(t) != N || !tir_tensor_is_contiguous(t)) {
		snprintf(why, n, "not f32[%lld]", (long long)N);
		return false;
	}
	const float *d = tir_tensor_data(t);
	for (int64_t k = 0; k < N; k++)
		if (d[k] != mul * (float)k + add) {
			snprintf(why, n, "element %lld is %g, not %g", (long long)k, d[k], mul * (float)k + add);
			return false;
		}
	return true;
}

static uint32_t node_of(struct tir_program *p, const char *name)
{
	const struct tir_binding *b = tir_program_lookup(p, name, strlen(name));
	return b && b->node ? b->node->id : UINT32_MAX;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: xfer_client A B [TOKEN_A TOKEN_B]\n");
		return 2;
	}
	const char *ta = argc == 5 && strcmp(argv[3], "-") ? argv[3] : NULL;
	const char *tb = argc == 5 && strcmp(argv[4], "-") ? argv[4] : NULL;
	struct tir_err err = {0};
	char why[600];
	/* lib/net is linked in: the executor's remote devices call it */
	if (tir_net_use(tir_net_api(), &err)) {
		fprintf(stderr, "xfer_client: %s\n", err.msg);
		return 2;
	}
	struct tir_remote *a = tir_remote_open(argv[1], ta, &err);
	struct tir_remote *b = a ? tir_remote_open(argv[2], tb, &err) : NULL;
	struct tir_program *p = tir_program_new();
	struct tir_exec *x = p ? tir_exec_new(p) : NULL;
	if (!a || !b || !x) {
		fprintf(stderr, "xfer_client: %s\n", err.msg);
		return 2;
	}
	tir_exec_keep_named(x, true);
	char text[200];
	snprintf(text, sizeof text, "input x: f32[%lld]\ny = add(mul(x, 3.0), 1.0)\nprint y\n", (long long)N);
	size_t from = 0;
	int rc = parse(p, text, &err);
	if (!rc)
		rc = give_x(x, 1, &err);
	if (!rc)
		rc = tir_exec_set_remote(x, a, &err);
	if (!rc)
		rc = tir_exec_run(x, from, NULL, 0, &err);
	uint32_t y = node_of(p, "y");
	snprintf(why, sizeof why, "%s", rc ? err.msg : "A holds no y");
	check("client: y computed and kept on A", !rc && tir_remote_holds(a, x, y), why);
	check("client: y on A is 3i + 1", !rc && result_is(x, 0, 3, 1, why, sizeof why), why);

	char cap[65], blob[65];
	rc = tir_remote_export(a, x, y, cap, blob, &err);
	snprintf(why, sizeof why, "%s", rc ? err.msg : "");
	check("client: tir_remote_export gives a capability", !rc && strlen(cap) == 64 && strlen(blob) == 64, why);
	rc = rc ? rc : tir_remote_import(b, x, y, a, cap, blob, &err);
	snprintf(why, sizeof why, "%s", rc ? err.msg : "B does not say it holds y");
	check("client: tir_remote_import: B holds y", !rc && tir_remote_holds(b, x, y), why);
	snprintf(why, sizeof why, "%s", tir_remote_base_url(a));
	check("client: tir_remote_base_url", !strncmp(tir_remote_base_url(a), "http://", 7) &&
						     strstr(tir_remote_base_url(a), argv[1]) != NULL, why);

	/* B reads y as a leaf: nothing is sent to it but the batch */
	from = tir_program_nstmts(p);
	rc = parse(p, "z = mul(y, 2.0)\nprint z\n", &err);
	if (!rc)
		rc = tir_exec_set_remote(x, b, &err);
	if (!rc)
		rc = tir_exec_run(x, from, NULL, 0, &err);
	snprintf(why, sizeof why, "%s", rc ? err.msg : "");
	check("client: a batch on B reads y", !rc && result_is(x, 0, 6, 2, why, sizeof why), why);
	const struct tir_remote_stats *st = tir_remote_stats(b);
	snprintf(why, sizeof why, "%d blobs sent (%llu bytes)", st->blobs_sent, (unsigned long long)st->blob_bytes_sent);
	check("client: ... and B was sent no blob (y came from A)", !rc && st->blobs_sent == 0, why);

	/* the capability is used */
	rc = tir_remote_import(b, x, node_of(p, "z"), a, cap, blob, &err);
	snprintf(why, sizeof why, "rc %d: %s", rc, err.msg);
	check("client: a capability used twice: -TIR_ENET, B's 502 quoting A's 404",
	      rc == -TIR_ENET && strstr(err.msg, "502") && strstr(err.msg, "no such capability") &&
		      strstr(err.msg, argv[2]),
	      why);

	/* x given again: y (from the old x) is stale on B as on A */
	from = tir_program_nstmts(p);
	rc = parse(p, "w = add(y, 1.0)\nprint w\n", &err);
	if (!rc)
		rc = give_x(x, 2, &err);
	if (!rc)
		rc = tir_exec_run(x, from, NULL, 0, &err);
	snprintf(why, sizeof why, "%s", rc ? err.msg : "");
	check("client: x given again: B computes y anew (6i + 2)", !rc && result_is(x, 0, 6, 2, why, sizeof why),
	      why);
	st = tir_remote_stats(b);
	snprintf(why, sizeof why, "%d blobs sent", st->blobs_sent);
	check("client: ... from the new x, sent to B", !rc && st->blobs_sent == 1, why);
	rc = tir_remote_export(a, x, y, cap, blob, &err);
	snprintf(why, sizeof why, "rc %d: %s", rc, err.msg);
	check("client: ... and A no longer holds y (-TIR_EDATA)", rc == -TIR_EDATA, why);

	/* a node no session keeps: an unnamed one */
	rc = tir_remote_import(b, x, 0, a, cap, blob, &err);
	snprintf(why, sizeof why, "rc %d: %s", rc, err.msg);
	check("client: an input's node is not imported (-TIR_EDATA)", rc == -TIR_EDATA, why);

	tir_exec_set_remote(x, NULL, &err);
	tir_exec_free(x);
	tir_program_free(p);
	tir_remote_close(a);
	tir_remote_close(b);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
