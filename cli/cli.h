/*
 * cli.h — what the CLI's files share: reading programs, printing errors,
 * the clock, and the commands' entry points.
 */
#ifndef TIR_CLI_H
#define TIR_CLI_H

#include "tir.h"

#include <getopt.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_REMOTE = 3 };

/* Read a whole file ("-": standard input), *len bytes (no NUL after
 * them); NULL with a message on stderr.  map: a big regular file may be
 * mapped rather than read (a one-shot command's program: see main.c).
 * returns: new, give back with cli_text_free(text, *len). */
char *cli_read_file(const char *path, size_t *len, bool map);
void cli_text_free(char *text, size_t len);
/* Parse FILE into a new program; NULL (errors printed, *status set) if not.
 * nremotes: the servers --remote names (its `to`s are checked against
 * them), or -1 for none known (tir fmt, tir check without --remote), or
 * CLI_LOCAL_DEVICES (tir run --local): as many as the text names
 * (1 + the highest N of remote:N, at least 1), said in *status. */
#define CLI_LOCAL_DEVICES (-2)
struct tir_program *cli_load_program(const char *path, int nremotes, int *status, double *parse_ms);
/* Free a program of cli_load_program (or any: then tir_program_free),
 * and the program file's mapping it read in place. */
void cli_program_free(struct tir_program *p);
void cli_print_diags(const struct tir_program *p);
/* the same with each message passed through reword first (NULL: as it is) */
void cli_print_diags_reworded(const struct tir_program *p, void (*reword)(char *msg, size_t cap));
void cli_print_err(const struct tir_err *e);
/* The timing line of a computation on stderr ("parse ... · run ... · peak ...");
 * with net (a remote run), the network's part too. */
void cli_print_timing(double parse_ms, const struct tir_exec_stats *st,
		      const struct tir_remote_stats *net);
/* --profile of a remote run: what went up ("blobs: ...; graph: ..."). */
void cli_print_blobs(const struct tir_remote_stats *net);

/* run.c: whether PATH ends in .npy or .safetensors (what --save and .save
 * write); and whether the value NAME of p can be saved to PATH (bound, a
 * dtype the format holds, a folder that takes a new file): EXIT_OK, or
 * EXIT_PROGRAM with the reason on stderr ("WHAT NAME=PATH: ..."). */
bool cli_save_format_ok(const char *path);
/* BYTES with an optional K, M, G or T (powers of 1024, "KiB", "KB" too). */
bool cli_parse_bytes(const char *s, size_t *v);
int cli_save_check(const struct tir_program *p, const char *name, const char *path, const char *what);

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

/* flags.c: the commands and their flags (flags.def), read by getopt_long
 * and shown by the help.  Each command is called as main is, argv[0] its
 * name, and returns its exit status. */
enum cli_cmd_id { CMD_RUN, CMD_CHECK, CMD_FMT, CMD_INSPECT, CMD_IMPORT, CMD_REPL, CMD_SERVE, CMD_HELP, CMD_VERSION,
		  CMD_COUNT };
enum cli_flag_id {
#define FLAG(id, cmd, name, value, help) FLAG_##id,
#include "flags.def"
#undef FLAG
	FLAG_COUNT
};
struct cli_cmd {
	const char *name;     /* "run" */
	const char *operand;  /* what it takes besides flags ("FILE.tir"), or NULL */
	const char *what;     /* the operand in a message ("program"), NULL: none taken */
	const char *summary;  /* its line in `tir help` */
	const char *about;    /* its help's prose before the flags, or NULL */
	const char *footer;   /* and after them, or NULL */
	const char *hint;     /* after a misuse message; NULL: the whole help */
	int (*main)(int argc, char **argv);
};
extern const struct cli_cmd cli_cmds[CMD_COUNT];
/* The command named NAME, or NULL. */
const struct cli_cmd *cli_cmd_find(const char *name);
/* A flag's long name ("max-body" for FLAG_SERVE_MAX_BODY). */
const char *cli_flag_name(int id);
/* `tir help`: every command, one line each. */
void cli_print_usage(FILE *f);
/* `tir help CMD`, `tir CMD --help`: its usage line, prose and flags. */
void cli_print_help(FILE *f, enum cli_cmd_id cmd);
/* "tir CMD: MESSAGE" and the command's hint on stderr.  returns EXIT_USAGE. */
int cli_misuse(enum cli_cmd_id cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A command's arguments as getopt_long reads them, in order: each flag
 * from cli_args_next, the operand (if the command takes one) in
 * a->operand.  --opt=value and --opt value alike; `--` ends the flags; a
 * lone `-` is an operand; abbreviations are refused.  Any number of
 * parses per process (getopt's state is reset by each begin). */
enum { CLI_ARGS_DONE = -1, CLI_ARGS_STOP = -2 };
#define CLI_MAX_OPERANDS 256
struct cli_args {
	enum cli_cmd_id cmd;
	int argc;
	char **argv;
	const char *operand;
	const char *operands[CLI_MAX_OPERANDS]; /* every one, when the command's operand ends in "..." */
	int noperands;
	int exit;             /* after CLI_ARGS_STOP: EXIT_OK (help printed) or EXIT_USAGE (misuse said) */
	bool done;
	struct option longopts[FLAG_COUNT + 2]; /* the command's flags, --help, the end */
};
void cli_args_begin(struct cli_args *a, enum cli_cmd_id cmd, int argc, char **argv);
/* The next flag's FLAG_ id, *value its value (NULL for a switch);
 * CLI_ARGS_DONE at the end, the operand checked; CLI_ARGS_STOP when the
 * command is to return a->exit now. */
int cli_args_next(struct cli_args *a, char **value);

int cli_run(int argc, char **argv);
int cli_import(int argc, char **argv);

/* import.c: ONNX models and TensorProto inputs for tir run.  A state
 * holding the temporary folder its files go in (the model's weights, the
 * inputs read from .pb files), removed by cli_onnx_done. */
struct cli_onnx {
	char dir[64];
	struct tir_onnx_model model;
	bool imported;
	char **paths;                /* the temporary files */
	int npaths;
};
/* --input NAME=FILE.pb: each such path becomes a .npy file of the same
 * tensor (paths[i] is replaced; the new string is the state's).  With a
 * model (imported next), the shapes of all inputs are noted in shapes.
 * returns EXIT_OK or an exit status (the error said). */
int cli_onnx_inputs(struct cli_onnx *st, const char **names, const char **paths, int n,
		    struct tir_onnx_shape *shapes);
/* After the import: an input given as a uint16 .pb file that the model
 * declares bfloat16 holds bf16 bit patterns (ONNX's test data): paths[i]
 * becomes a file of that bf16 tensor.  names are ONNX names; returns
 * EXIT_OK or an exit status (the error said). */
int cli_onnx_bf16_inputs(struct cli_onnx *st, const char *const *names, const char **paths, int n,
			 const struct tir_onnx_shape *shapes);
/* Import the model at path in memory and parse it (as cli_load_program). */
struct tir_program *cli_onnx_load(struct cli_onnx *st, const char *path, const struct tir_onnx_opts *o,
				  int nremotes, int *status, double *parse_ms);
/* The tir name of ONNX name `name` of the model imported, else name. */
const char *cli_onnx_map(const struct cli_onnx *st, const char *name);
void cli_onnx_done(struct cli_onnx *st);
/* NAME=N, for --dim; false when malformed */
bool cli_parse_dim(char *s, struct tir_onnx_dim *d);
/* a PCRE2 pattern, its error printed with a caret under the offset */
struct tir_regex *cli_regex(const char *what, const char *pattern);
int cli_repl(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_fmt(int argc, char **argv);
int cli_inspect(int argc, char **argv);
int cli_help(int argc, char **argv);
int cli_version(int argc, char **argv);

#endif
