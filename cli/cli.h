/*
 * cli.h — what the CLI's files share: reading programs, printing errors,
 * the clock, and the commands' entry points.
 */
#ifndef TIR_CLI_H
#define TIR_CLI_H

#include "tir.h"

enum { EXIT_OK = 0, EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_REMOTE = 3 };

double cli_now_ms(void);
/* Read a whole file; NULL with a message on stderr.  returns: new, free(). */
char *cli_read_file(const char *path, size_t *len);
/* Parse FILE into a new program; NULL (errors printed, *status set) if not.
 * nremotes: the servers --remote names (its `to`s are checked against
 * them), or -1 for none known (tir fmt, tir check without --remote). */
struct tir_program *cli_load_program(const char *path, int nremotes, int *status, double *parse_ms);
void cli_print_diags(const struct tir_program *p);
void cli_print_err(const struct tir_err *e);
/* The timing line of a computation on stderr ("parse ... · run ... · peak ...");
 * with net (a remote run), the network's part too. */
void cli_print_timing(double parse_ms, const struct tir_exec_stats *st,
		      const struct tir_remote_stats *net);
/* --profile of a remote run: what went up ("blobs: ...; graph: ..."). */
void cli_print_blobs(const struct tir_remote_stats *net);

/* progress.c: the progress line of a run (--progress=auto|always|never;
 * auto: when stderr is a terminal), shown once the run has taken a second
 * (TIR_PROGRESS_DELAY seconds).  start: NULL when there is none; stop
 * clears the line and frees it (NULL is fine). */
enum cli_progress_mode { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER };
bool cli_progress_parse(const char *s, enum cli_progress_mode *mode);
struct cli_progress *cli_progress_start(struct tir_exec *x, enum cli_progress_mode mode);
void cli_progress_stop(struct cli_progress *g, struct tir_exec *x);

/* remotes.c: --remote a:6667,b:6667, remote:0, remote:1, ... in order. */
#define CLI_MAX_REMOTES 63
struct cli_remotes {
	const struct tir_net_api *net; /* what they were opened through (tir_net) */
	struct tir_remote *r[CLI_MAX_REMOTES];
	int n;
};
/* How many servers the comma-separated list names. */
int cli_remotes_count(const char *list);
/* Open each (connect: make its session now, so that a wrong address is
 * said at once).  returns EXIT_OK, or an exit status (the error said). */
int cli_remotes_open(struct cli_remotes *g, const char *list, bool connect);
void cli_remotes_close(struct cli_remotes *g);
/* What the last run sent and received, over all of them. */
void cli_remotes_stats(const struct cli_remotes *g, struct tir_remote_stats *sum);

int cli_run(int argc, char **argv);
extern const char *const cli_run_help;
int cli_repl(int argc, char **argv);
extern const char *const cli_repl_help;
int cli_serve(int argc, char **argv);
extern const char *const cli_serve_help;

#endif
