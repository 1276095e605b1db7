/*
 * remotes.c — `--remote a:6667,b:6667` (tir run, tir repl, .remote): the
 * servers in the order given, remote:0, remote:1, ...  Each is its own
 * connection and session.  An address of a group (mpirun; docs/groups.md)
 * stands for every rank of it: they take consecutive numbers there, in
 * rank order.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_remotes_count(const char *list)
{
	int n = 1;
	for (const char *c = list; *c; c++)
		n += *c == ',';
	return n;
}

int cli_remotes_open(struct cli_remotes *g, const char *list, bool connect)
{
	memset(g, 0, sizeof *g);
	int n = cli_remotes_count(list);
	if (n > CLI_MAX_REMOTES) {
		fprintf(stderr, "tir: --remote names %d servers; at most %d at once\n", n, CLI_MAX_REMOTES);
		return EXIT_USAGE;
	}
	struct tir_err lerr = {0};
	if (!(g->net = tir_net(&lerr))) {
		cli_print_err(&lerr);
		return EXIT_USAGE;
	}
	const char *token = getenv("TIR_TOKEN");
	const char *s = list;
	for (int i = 0; i < n; i++) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char one[512];
		if (!len || len >= sizeof one) {
			fprintf(stderr, "tir: --remote %s: server %d of the list is %s\n", list, i,
				len ? "too long" : "empty");
			cli_remotes_close(g);
			return EXIT_USAGE;
		}
		memcpy(one, s, len);
		one[len] = 0;
		struct tir_err err = {0};
		/* the servers after this one still need their places */
		int left = CLI_MAX_REMOTES - g->n - (n - i - 1);
		int got = g->net->remote_group_open(one, token && *token ? token : NULL, g->r + g->n, left, &err);
		for (int k = 0; k < got && connect && !err.code; k++)
			if (g->net->remote_connect(g->r[g->n + k], &err))
				break;
		if (got > 0)
			g->n += got;
		if (got <= 0 || err.code) {
			cli_print_err(&err);
			cli_remotes_close(g);
			/* got 0: the server was reached, and it or its group cannot be used */
			return err.code == TIR_ENOMEM				  ? EXIT_PROGRAM
			       : err.code == TIR_ENET && (connect || got == 0) ? EXIT_REMOTE
										  : EXIT_USAGE;
		}
		s = end ? end + 1 : s + len;
	}
	return EXIT_OK;
}

void cli_remotes_close(struct cli_remotes *g)
{
	for (int i = 0; i < g->n; i++)
		g->net->remote_close(g->r[i]);
	memset(g, 0, sizeof *g);
}

void cli_remotes_stats(const struct cli_remotes *g, struct tir_remote_stats *sum)
{
	memset(sum, 0, sizeof *sum);
	for (int i = 0; i < g->n; i++) {
		const struct tir_remote_stats *s = g->net->remote_stats(g->r[i]);
		sum->net_ms += s->net_ms;
		sum->round_trips += s->round_trips;
		sum->bytes_up += s->bytes_up;
		sum->bytes_down += s->bytes_down;
		sum->blobs_cached += s->blobs_cached;
		sum->blobs_sent += s->blobs_sent;
		sum->blob_bytes_sent += s->blob_bytes_sent;
		sum->graph_sent = sum->graph_sent || s->graph_sent;
	}
}
