/*
 * repl.c — `tir repl`: an interactive session over one growing program.
 * Statements accumulate; a print or a bare expression computes only what it
 * needs, and values bound to names are kept, so each is computed once.
 * At a terminal: prompts, line editing, history and completion from
 * libedit's readline API, Ctrl-C back to the prompt.  Otherwise lines are
 * read plainly with no prompt, so stdout is what `tir run` prints for the
 * same text.  Not an evaluator: lib/ does the work.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <dlfcn.h>
#include <editline/readline.h>

/* libedit is loaded when a REPL at a terminal starts (edit_load), not at
 * every start of tir: it and what it needs (libtinfo, libbsd, libmd) were
 * four of the objects the dynamic loader mapped and bound for every `tir
 * run`.  What the code below uses of it, each by its own name through the
 * macros after edit_load. */
#define EDIT_FUNCS(X) \
	X(add_history) X(read_history) X(readline) X(rl_completion_matches) X(rl_copy_text) \
	X(rl_deprep_terminal) X(rl_forced_update_display) X(rl_initialize) X(rl_prep_terminal) \
	X(rl_resize_terminal) X(stifle_history) X(using_history) X(write_history)
#define EDIT_VARS(X) \
	X(rl_attempted_completion_function) X(rl_attempted_completion_over) \
	X(rl_basic_word_break_characters) X(rl_catch_signals) X(rl_completion_append_character) \
	X(rl_completion_word_break_hook) X(rl_getc_function) X(rl_line_buffer) X(rl_readline_name)

static struct {
#define EDIT_PTR(name) __typeof__(&name) name;
	EDIT_FUNCS(EDIT_PTR)
	EDIT_VARS(EDIT_PTR)
#undef EDIT_PTR
} edit;

#ifndef TIR_EDIT_SONAME
#define TIR_EDIT_SONAME "libedit.so.2"
#endif

/* Load libedit (once); 0, or -1 with why in stderr's message. */
static int edit_load(void)
{
	static void *h;
	if (h)
		return 0;
	void *lib = dlopen(TIR_EDIT_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "tir: no line editing: %s\n", dlerror());
		return -1;
	}
	bool all = true;
#define EDIT_SYM(name) all &= (edit.name = (__typeof__(edit.name))dlsym(lib, #name)) != NULL;
	EDIT_FUNCS(EDIT_SYM)
	EDIT_VARS(EDIT_SYM)
#undef EDIT_SYM
	if (!all) {
		fprintf(stderr, "tir: no line editing: %s lacks some of the readline API\n", TIR_EDIT_SONAME);
		dlclose(lib);
		return -1;
	}
	h = lib;
	return 0;
}

#define add_history (*edit.add_history)
#define read_history (*edit.read_history)
#define readline (*edit.readline)
#define rl_completion_matches (*edit.rl_completion_matches)
#define rl_copy_text (*edit.rl_copy_text)
#define rl_deprep_terminal (*edit.rl_deprep_terminal)
#define rl_forced_update_display (*edit.rl_forced_update_display)
#define rl_initialize (*edit.rl_initialize)
#define rl_prep_terminal (*edit.rl_prep_terminal)
#define rl_resize_terminal (*edit.rl_resize_terminal)
#define stifle_history (*edit.stifle_history)
#define using_history (*edit.using_history)
#define write_history (*edit.write_history)
#define rl_attempted_completion_function (*edit.rl_attempted_completion_function)
#define rl_attempted_completion_over (*edit.rl_attempted_completion_over)
#define rl_basic_word_break_characters (*edit.rl_basic_word_break_characters)
#define rl_catch_signals (*edit.rl_catch_signals)
#define rl_completion_append_character (*edit.rl_completion_append_character)
#define rl_completion_word_break_hook (*edit.rl_completion_word_break_hook)
#define rl_getc_function (*edit.rl_getc_function)
#define rl_line_buffer (*edit.rl_line_buffer)
#define rl_readline_name (*edit.rl_readline_name)

#define HISTORY_MAX 1000

struct repl {
	struct tir_program *p;
	struct tir_exec *x;
	struct cli_remotes remotes; /* .remote: remote:0, remote:1, ... (none: here) */
	bool tty;           /* stdin is a terminal: prompts and libedit */
	bool timer;         /* .timer on */
	bool failed;        /* an error happened (the exit status when piped) */
	bool quit;
	bool computed;      /* something ran since the session began */
	uint32_t line;      /* input lines read so far */
	char **pending;     /* --input NAME=FILE not yet bound (NAME not declared yet) */
	int npending;
	struct cli_onnx *models; /* .load MODEL.onnx: their weights' folders, kept for the session */
	int nmodels;
};

/* Set by the signal handlers; the self-pipe wakes a read in progress
 * whichever thread the signal lands on. */
static volatile sig_atomic_t interrupted, resized, continued;
static int wake_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	if (sig == SIGINT)
		interrupted = 1;
	else if (sig == SIGCONT)
		continued = 1;
	else
		resized = 1;
	if (wake_pipe[1] >= 0) {
		ssize_t w = write(wake_pipe[1], "", 1);
		(void)w; /* a full pipe already wakes the reader */
	}
	errno = saved;
}

/* The terminal as the session found it, put back if a signal ends the
 * process while libedit has it in raw mode. */
static struct termios tty_saved;

static void on_fatal_signal(int sig)
{
	tcsetattr(STDIN_FILENO, TCSANOW, &tty_saved);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void drain_wake_pipe(void)
{
	char buf[64];
	while (wake_pipe[0] >= 0 && read(wake_pipe[0], buf, sizeof buf) > 0)
		;
}

/* ---- the session ---- */

static int session_open(struct repl *r)
{
	r->p = tir_program_new();
	r->x = r->p ? tir_exec_new(r->p) : NULL;
	if (!r->x) {
		fprintf(stderr, "tir: out of memory\n");
		return -1;
	}
	tir_program_set_loader(r->p, tir_load_type_from_file, NULL);
	tir_exec_keep_named(r->x, true);
	tir_exec_set_interrupt(r->x, &interrupted);
	struct tir_err err = {0};
	tir_program_set_remotes(r->p, r->remotes.n);
	if (tir_exec_set_remotes(r->x, r->remotes.r, r->remotes.n, &err)) {
		cli_print_err(&err);
		return -1;
	}
	r->computed = false;
	return 0;
}

static void session_close(struct repl *r)
{
	tir_exec_free(r->x);
	tir_program_free(r->p);
	r->x = NULL;
	r->p = NULL;
}

static bool is_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	while (isalnum((unsigned char)*s) || *s == '_')
		s++;
	return !*s;
}

/* The library's hints name tir run's options; here they are dot-commands:
 * "--input x=F" is ".input x=F", "no --remote is given" says how to
 * connect.  In place (the message shrinks or stays within its buffer). */
static void repl_words(char *msg, size_t cap)
{
	static const struct {
		const char *from, *to;
	} sub[] = {
		{"no --remote is given", "the session has no servers (.remote HOST:PORT)"},
		{"--remote names", ".remote names"},
		{"past --remote's list", "past .remote's list"},
		{"--input ", ".input "},
	};
	for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		size_t lf = strlen(sub[i].from), lt = strlen(sub[i].to);
		for (char *at = strstr(msg, sub[i].from); at; at = strstr(at + lt, sub[i].from)) {
			size_t n = strlen(msg);
			if (n - lf + lt >= cap)
				break;
			memmove(at + lt, at + lf, n - (size_t)(at - msg) - lf + 1);
			memcpy(at, sub[i].to, lt);
		}
	}
}

static void print_run_err(struct tir_err *e)
{
	repl_words(e->msg, sizeof e->msg);
	if (e->code == TIR_EINTERRUPT)
		fputs("\ninterrupted\n", stderr); /* after the terminal's ^C */
	else
		cli_print_err(e);
}

/* Compute the prints of the statements from `from` on and show them. */
static void compute(struct repl *r, size_t from, double parse_ms)
{
	struct tir_err err = {0};
	interrupted = 0;
	drain_wake_pipe();
	int rc = tir_exec_run(r->x, from, NULL, 0, &err);
	r->computed = true;
	if (rc) {
		print_run_err(&err);
		r->failed = true;
		return;
	}
	for (size_t i = 0; i < tir_exec_nresults(r->x); i++) {
		char *s = tir_tensor_format(tir_exec_result(r->x, i), tir_exec_header(r->x, i), 6, false);
		if (!s) {
			fprintf(stderr, "tir: out of memory formatting a result\n");
			r->failed = true;
			return;
		}
		fputs(s, stdout);
		free(s);
	}
	fflush(stdout);
	if (r->timer) {
		struct tir_remote_stats net;
		cli_remotes_stats(&r->remotes, &net);
		cli_print_timing(parse_ms, tir_exec_stats(r->x), r->remotes.n ? &net : NULL);
	}
}

/* Bind each --input whose name the session now declares (before anything
 * computes with it); an error is said once and the pair dropped. */
static void bind_pending(struct repl *r)
{
	for (int i = 0; i < r->npending; i++) {
		char *eq = strchr(r->pending[i], '=');
		*eq = 0;
		bool declared = tir_program_is_input(r->p, r->pending[i]);
		struct tir_err err = {0};
		if (declared && tir_exec_input_file(r->x, r->pending[i], eq + 1, &err)) {
			print_run_err(&err);
			r->failed = true;
		}
		*eq = '=';
		if (declared)
			r->pending[i--] = r->pending[--r->npending];
	}
}

/* Parse a chunk of statements into the session and compute its prints. */
static void eval_text(struct repl *r, const char *name, const char *text, size_t len,
		      uint32_t first_line)
{
	size_t from = tir_program_nstmts(r->p);
	double t0 = tir_now_ms();
	int rc = tir_program_parse_at(r->p, name, text, len, TIR_PARSE_REPL, first_line);
	double parse_ms = tir_now_ms() - t0;
	if (rc) {
		if (tir_program_ndiags(r->p))
			cli_print_diags_reworded(r->p, repl_words);
		else
			fprintf(stderr, "tir: out of memory\n");
		r->failed = true;
	}
	bind_pending(r);
	if (tir_program_prints_from(r->p, from))
		compute(r, from, parse_ms);
}

/* ---- dot-commands ---- */

/* A command returns 0, or 1 for "Usage: ..." (an error either way sets
 * r->failed itself). */
typedef int dot_fn(struct repl *r, char *arg);

struct dot_cmd {
	const char *name, *args, *help;
	dot_fn *fn;
};

static int dot_explain(struct repl *r, char *arg)
{
	if (*arg)
		return 1;
	const char *s = r->computed ? tir_exec_explain(r->x) : "";
	if (!r->computed)
		puts("nothing computed yet");
	else if (!*s)
		puts("no kernels ran: every value needed was computed before");
	else
		fputs(s, stdout);
	return 0;
}

static int dot_graph(struct repl *r, char *arg)
{
	/* NAME [--dot] */
	char *opt = strchr(arg, ' ');
	bool dot = false;
	if (opt) {
		*opt++ = 0;
		while (*opt == ' ')
			opt++;
		if (strcmp(opt, "--dot"))
			return 1;
		dot = true;
	}
	if (!is_name(arg))
		return 1;
	if (!tir_program_binds(r->p, arg)) {
		const char *sug = tir_program_suggest(r->p, arg, strlen(arg));
		fprintf(stderr, "tir: no value named '%s'%s%s%s\n", arg, sug ? "; did you mean '" : "",
			sug ? sug : "", sug ? "'?" : "");
		r->failed = true;
		return 0;
	}
	if (dot) {
		/* the plan of NAME's value as Graphviz (as tir fmt --dot) */
		struct tir_err err = {0};
		char *g = tir_exec_dot(r->x, arg, &err);
		if (!g) {
			cli_print_err(&err);
			r->failed = true;
			return 0;
		}
		fputs(g, stdout);
		free(g);
		return 0;
	}
	/* the statements NAME depends on, in canonical form */
	char *text = tir_program_format_deps(r->p, arg);
	if (!text) {
		fprintf(stderr, "tir: out of memory\n");
		r->failed = true;
		return 0;
	}
	fputs(text, stdout);
	free(text);
	return 0;
}

static int dot_help(struct repl *r, char *arg);

static int dot_input(struct repl *r, char *arg)
{
	char *eq = strchr(arg, '=');
	if (!eq)
		return 1;
	*eq = 0;
	char *name = arg, *path = eq + 1;
	for (char *e = eq; e > name && isspace((unsigned char)e[-1]);)
		*--e = 0;
	while (isspace((unsigned char)*path))
		path++;
	if (!is_name(name) || !*path)
		return 1;
	struct tir_err err = {0};
	if (!tir_program_is_input(r->p, name)) {
		fprintf(stderr, "tir: the session has no 'input %s'; declare it first (input %s: f32[...])\n",
			name, name);
		r->failed = true;
	} else if (tir_exec_input_file(r->x, name, path, &err)) {
		print_run_err(&err);
		r->failed = true;
	}
	return 0;
}

/* .load MODEL.onnx [NAME=N...]: the model imported, its outputs not
 * printed (its inputs have no values yet: .input NAME=FILE, tir names) */
static int load_onnx(struct repl *r, char *arg)
{
	char *path = strtok(arg, " \t");
	struct tir_onnx_dim dims[16];
	int nd = 0;
	for (char *t = strtok(NULL, " \t"); t; t = strtok(NULL, " \t"))
		if (nd == 16 || !cli_parse_dim(t, &dims[nd++]))
			return 1;
	struct cli_onnx *m = realloc(r->models, (size_t)(r->nmodels + 1) * sizeof *m);
	if (!m) {
		fprintf(stderr, "tir: out of memory\n");
		r->failed = true;
		return 0;
	}
	r->models = m;
	struct cli_onnx *st = &r->models[r->nmodels++];
	memset(st, 0, sizeof *st);
	struct tir_onnx_opts o = {.dims = dims, .ndims = nd, .no_prints = true};
	int status;
	struct tir_program *p = cli_onnx_load(st, path, &o, -1, &status, NULL);
	if (!p) {
		r->failed = true;
		return 0;
	}
	tir_program_free(p); /* (checked; the session parses the text again) */
	eval_text(r, path, st->model.text, strlen(st->model.text), 1);
	return 0;
}

static int dot_load(struct repl *r, char *arg)
{
	if (!*arg)
		return 1;
	char first[PATH_MAX];
	snprintf(first, sizeof first, "%.*s", (int)strcspn(arg, " \t"), arg);
	if (tir_path_is_onnx(first))
		return load_onnx(r, arg);
	size_t len;
	/* (read: a session lives on past a file cut short under it) */
	char *src = cli_read_file(arg, &len, false);
	if (!src) {
		r->failed = true;
		return 0;
	}
	eval_text(r, arg, src, len, 1);
	cli_text_free(src, len);
	return 0;
}

/* .save NAME [NAME...] FILE: compute the names' values (those kept are
 * not computed again) and write them: FILE.safetensors holds them all,
 * by name; a .npy file one. */
#define TIR_REPL_SAVE_MAX 64

static int dot_save(struct repl *r, char *arg)
{
	char *tok[TIR_REPL_SAVE_MAX + 1];
	int n = 0;
	for (char *t = strtok(arg, " \t"); t; t = strtok(NULL, " \t")) {
		if (n == TIR_REPL_SAVE_MAX + 1) {
			fprintf(stderr, "tir: .save takes at most %d names\n", TIR_REPL_SAVE_MAX);
			r->failed = true;
			return 0;
		}
		tok[n++] = t;
	}
	if (n < 2)
		return 1;
	const char *path = tok[n - 1];
	int nnames = n - 1;
	for (int i = 0; i < nnames; i++) {
		if (!is_name(tok[i]))
			return 1;
		if (!tir_program_binds(r->p, tok[i])) {
			const char *sug = tir_program_suggest(r->p, tok[i], strlen(tok[i]));
			fprintf(stderr, "tir: no value named '%s'%s%s%s\n", tok[i], sug ? "; did you mean '" : "",
				sug ? sug : "", sug ? "'?" : "");
			r->failed = true;
			return 0;
		}
	}
	/* what tir run --save checks, before anything is computed */
	if (!cli_save_format_ok(path)) {
		fprintf(stderr, "tir: .save: %s: the file's name must end in .npy or .safetensors (the format "
			"written)\n", path);
		r->failed = true;
		return 0;
	}
	for (int i = 0; i < nnames; i++) {
		if (cli_save_check(r->p, tok[i], path, ".save")) {
			r->failed = true;
			return 0;
		}
	}
	struct tir_err err = {0};
	interrupted = 0;
	drain_wake_pipe();
	int rc = tir_exec_run(r->x, tir_program_nstmts(r->p), (const char *const *)tok, nnames, &err);
	r->computed = true; /* .explain shows what .save computed */
	if (rc) {
		print_run_err(&err);
		r->failed = true;
		return 0;
	}
	const struct tir_tensor *ts[TIR_REPL_SAVE_MAX];
	for (int i = 0; i < nnames; i++)
		ts[i] = tir_exec_named(r->x, (size_t)i);
	if (tir_tensors_save(path, (const char *const *)tok, ts, nnames, &err)) {
		cli_print_err(&err);
		r->failed = true;
	}
	return 0;
}

static int dot_quit(struct repl *r, char *arg)
{
	if (*arg)
		return 1;
	r->quit = true;
	return 0;
}

/* What .remote says: the servers, remote:0 first. */
static void remote_say(const struct repl *r)
{
	if (!r->remotes.n) {
		puts("remote: off (the session computes here)");
		return;
	}
	if (r->remotes.n == 1) {
		printf("remote: %s (computations run there)\n", r->remotes.net->remote_name(r->remotes.r[0]));
		return;
	}
	printf("remote: %d servers (values placed nowhere run on remote:0)\n", r->remotes.n);
	for (int i = 0; i < r->remotes.n; i++)
		printf("  remote:%d  %s\n", i, r->remotes.net->remote_name(r->remotes.r[i]));
}

static int dot_remote(struct repl *r, char *arg)
{
	if (strchr(arg, ' '))
		return 1;
	if (!*arg) {
		remote_say(r);
		return 0;
	}
	if (!strcmp(arg, "off")) {
		tir_exec_set_remotes(r->x, NULL, 0, NULL); /* (nothing to make: never fails) */
		cli_remotes_close(&r->remotes);
		tir_program_set_remotes(r->p, 0);
		remote_say(r);
		return 0;
	}
	struct cli_remotes g;
	if (cli_remotes_open(&g, arg, true)) {
		r->failed = true;
		return 0;
	}
	struct tir_err err = {0};
	if (tir_exec_set_remotes(r->x, g.r, g.n, &err)) {
		cli_print_err(&err);
		cli_remotes_close(&g);
		r->failed = true;
		return 0;
	}
	cli_remotes_close(&r->remotes);
	r->remotes = g;
	tir_program_set_remotes(r->p, g.n);
	remote_say(r);
	return 0;
}

static int dot_reset(struct repl *r, char *arg)
{
	if (*arg)
		return 1;
	session_close(r);
	tir_release_caches();
	for (int i = 0; i < r->remotes.n; i++)
		r->remotes.net->remote_forget(r->remotes.r[i]); /* the remotes stay; the values they kept go */
	if (session_open(r))
		r->quit = r->failed = true;
	return 0;
}

static int dot_timer(struct repl *r, char *arg)
{
	if (!strcmp(arg, "on"))
		r->timer = true;
	else if (!strcmp(arg, "off"))
		r->timer = false;
	else
		return 1;
	return 0;
}

/* .vars: a pass for the columns' widths, then one printing. */
struct vars_pass {
	struct repl *r;
	bool print;
	bool devices;       /* a value is placed: a column says where each lives */
	int wn, wt, count;
	const struct tir_regex *re; /* .vars REGEX: the names it matches */
};

static void var_line(void *ud, const struct tir_var *v)
{
	struct vars_pass *vp = ud;
	if (vp->re && !tir_regex_match(vp->re, v->name))
		return;
	if (!vp->print) {
		int ln = (int)strlen(v->name), lt = (int)strlen(v->type);
		vp->wn = ln > vp->wn ? ln : vp->wn;
		vp->wt = lt > vp->wt ? lt : vp->wt;
		vp->devices = vp->devices || strcmp(v->device, "any");
		vp->count++;
		return;
	}
	bool has = tir_exec_has_value(vp->r->x, v->name); /* (here or on the remote) */
	const char *state = v->input ? (has ? "input, given" : "input, no value yet (.input NAME=FILE)")
				     : (has ? "computed" : "not computed");
	if (vp->devices) /* where each lives, once a program places values */
		printf("%-*s  %-*s  %-8s  %s\n", vp->wn, v->name, vp->wt, v->type, v->device, state);
	else
		printf("%-*s  %-*s  %s\n", vp->wn, v->name, vp->wt, v->type, state);
}

static int dot_vars(struct repl *r, char *arg)
{
	struct tir_regex *re = NULL;
	if (*arg && !(re = cli_regex(".vars", arg)))
		return 0;
	/* each name once, where it was last bound */
	struct vars_pass vp = {.r = r, .re = re};
	tir_program_vars(r->p, var_line, &vp);
	vp.print = true;
	tir_program_vars(r->p, var_line, &vp);
	if (!vp.count)
		puts(re ? "no name bound matches" : "no names bound yet");
	tir_regex_free(re);
	return 0;
}

static const struct dot_cmd dot_cmds[] = {
	{"explain", "", "the plan of the last computation: its kernels, in order", dot_explain},
	{"graph", "NAME [--dot]", "the statements NAME depends on, in canonical form (--dot: its plan, for Graphviz)", dot_graph},
	{"help", "", "this list", dot_help},
	{"input", "NAME=FILE", "the value of `input NAME` from a .npy or .safetensors file", dot_input},
	{"load", "FILE", "run a .tir file's statements into the session", dot_load},
	{"quit", "", "leave the session (also Ctrl-D)", dot_quit},
	{"remote", "HOSTS|off", "compute on tir servers (HOST:PORT,HOST:PORT... are remote:0, remote:1, ...), or here again (off)", dot_remote},
	{"reset", "", "forget every name and value", dot_reset},
	{"save", "NAME... FILE", "write values to FILE.npy (one) or FILE.safetensors (each by name)", dot_save},
	{"timer", "on|off", "show timing after each computation (on stderr)", dot_timer},
	{"vars", "", "each name with its type and whether it is computed", dot_vars},
};
#define NDOT (sizeof dot_cmds / sizeof dot_cmds[0])

static int dot_help(struct repl *r, char *arg)
{
	if (*arg)
		return 1;
	puts("Statements: NAME = EXPR, NAME: TYPE = EXPR, input NAME: TYPE, print EXPR, ...;\n"
	     "an expression alone prints its value.  A line goes on while a bracket is open,\n"
	     "and a block while its braces are: fn NAME(PARAMS) { ... return EXPR },\n"
	     "for i in range(N) { ... }.\n");
	for (size_t i = 0; i < NDOT; i++) {
		char head[40];
		snprintf(head, sizeof head, ".%s %s", dot_cmds[i].name, dot_cmds[i].args);
		printf("  %-22s %s\n", head, dot_cmds[i].help);
	}
	puts("\nCtrl-C abandons the line or stops a computation; Ctrl-D leaves; Tab completes.");
	return 0;
}

/* The command a word names: exactly, or as the prefix of only one. */
static const struct dot_cmd *dot_find(const char *w, size_t n, int *nmatch)
{
	const struct dot_cmd *hit = NULL;
	*nmatch = 0;
	for (size_t i = 0; i < NDOT; i++) {
		if (strncmp(dot_cmds[i].name, w, n))
			continue;
		if (strlen(dot_cmds[i].name) == n) {
			*nmatch = 1;
			return &dot_cmds[i];
		}
		hit = &dot_cmds[i];
		++*nmatch;
	}
	return *nmatch == 1 ? hit : NULL;
}

static bool is_dot_line(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	return line[0] == '.' && isalpha((unsigned char)line[1]);
}

static void run_dot(struct repl *r, char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	char *w = line + 1, *arg = w;
	while (isalnum((unsigned char)*arg) || *arg == '_')
		arg++;
	size_t n = (size_t)(arg - w);
	while (isspace((unsigned char)*arg))
		arg++;
	for (char *e = arg + strlen(arg); e > arg && isspace((unsigned char)e[-1]);)
		*--e = 0;
	int nmatch;
	const struct dot_cmd *c = dot_find(w, n, &nmatch);
	if (!c) {
		fprintf(stderr, "tir: %s command '.%.*s'", nmatch ? "ambiguous" : "unknown", (int)n, w);
		for (size_t i = 0, k = 0; nmatch && i < NDOT; i++)
			if (!strncmp(dot_cmds[i].name, w, n))
				fprintf(stderr, "%s.%s", k++ ? ", " : ": ", dot_cmds[i].name);
		fprintf(stderr, "; .help lists them\n");
		r->failed = true;
		return;
	}
	if (c->fn(r, arg)) {
		fprintf(stderr, "Usage: .%s%s%s\n", c->name, *c->args ? " " : "", c->args);
		r->failed = true;
	}
	fflush(stdout);
}

/* ---- reading lines ---- */

/* One byte from the terminal; -1 at the end of input or once Ctrl-C was
 * pressed.  Waits on the self-pipe too, so a signal always wakes it. */
static int tty_byte(int fd)
{
	for (;;) {
		if (interrupted)
			return -1;
		if (resized) {
			resized = 0;
			rl_resize_terminal();
		}
		if (continued) {
			/* back from a stop (Ctrl-Z, fg): the shell may have
			 * put the terminal back in cooked mode */
			continued = 0;
			rl_deprep_terminal();
			rl_prep_terminal(0);
			rl_forced_update_display();
		}
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake_pipe[0], .events = POLLIN}};
		int n = poll(pf, 2, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pf[1].revents) {
			drain_wake_pipe();
			continue;
		}
		unsigned char c;
		ssize_t k = read(fd, &c, 1);
		if (k == 1)
			return c;
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return -1;
	}
}

/* libedit's getc hook: a whole UTF-8 character as its code point (the
 * hook's caller takes one int as one character). */
static int tty_getc(FILE *f)
{
	int fd = fileno(f);
	int c = tty_byte(fd);
	if (c < 0x80)
		return c;
	int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
	if (more < 0 || c > 0xF4)
		return 0xFFFD;
	int cp = c & (0x3F >> more);
	for (int i = 0; i < more; i++) {
		int b = tty_byte(fd);
		if (b < 0)
			return -1;
		if ((b & 0xC0) != 0x80)
			return 0xFFFD;
		cp = cp << 6 | (b & 0x3F);
	}
	return cp;
}

/* One line without its end; NULL at the end of input (or, at a terminal,
 * when Ctrl-C abandoned it: `interrupted` says which).
 * returns: new, free(); *len its length (it may hold NUL bytes). */
static char *read_line(struct repl *r, const char *prompt, size_t *len)
{
	if (r->tty) {
		char *s = readline(prompt);
		*len = s ? strlen(s) : 0;
		return s;
	}
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n = getline(&buf, &cap, stdin);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	*len = (size_t)n;
	return buf;
}

/* ---- completion ---- */

static struct repl *completing;
static char **cands;
static size_t ncands, capcands, next_cand;

static void cand_add(const char *s, const char *text, size_t n)
{
	if (strncmp(s, text, n) || tir_grow((void **)&cands, &capcands, ncands + 1, sizeof *cands))
		return;
	for (size_t i = 0; i < ncands; i++)
		if (!strcmp(cands[i], s))
			return;
	char *d = strdup(s);
	if (d)
		cands[ncands++] = d;
}

static void cands_clear(void)
{
	for (size_t i = 0; i < ncands; i++)
		free(cands[i]);
	ncands = 0;
}

static char *cand_next(const char *text, int state)
{
	if (state == 0)
		next_cand = 0;
	return next_cand < ncands ? strdup(cands[next_cand++]) : NULL;
}

/* A name from the program, for completion: the word being completed is
 * cand_text[0..cand_n). */
static const char *cand_text;
static size_t cand_n;

static void cand_name(void *ud, const char *name)
{
	(void)ud;
	cand_add(name, cand_text, cand_n);
}

static void add_names(const char *text, size_t n, enum tir_names kind)
{
	cand_text = text;
	cand_n = n;
	tir_program_names(completing->p, kind, cand_name, NULL);
}

static char **complete(const char *text, int start, int end)
{
	size_t n = strlen(text);
	const char *line = rl_line_buffer;
	cands_clear();
	rl_attempted_completion_over = 1;
	rl_completion_append_character = ' ';
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line == '.') {
		const char *sp = line + strcspn(line, " \t");
		if (rl_line_buffer + start <= sp) {
			for (size_t i = 0; i < NDOT; i++) {
				char d[32];
				snprintf(d, sizeof d, ".%s", dot_cmds[i].name);
				cand_add(d, text, n);
			}
		} else {
			int nm;
			const struct dot_cmd *c = dot_find(line + 1, (size_t)(sp - line - 1), &nm);
			if (c && c->fn == dot_load) {
				rl_attempted_completion_over = 0; /* file names */
				return NULL;
			}
			rl_completion_append_character = '\0';
			if (c && c->fn == dot_graph)
				add_names(text, n, TIR_NAMES_VALUES);
			if (c && c->fn == dot_input) {
				add_names(text, n, TIR_NAMES_INPUTS);
				rl_completion_append_character = '=';
			}
			if (c && c->fn == dot_timer) {
				cand_add("on", text, n);
				cand_add("off", text, n);
			}
			if (c && c->fn == dot_remote)
				cand_add("off", text, n);
		}
	} else {
		static const char *const words[] = {"print", "input", "true", "false", "inf", "nan",
						    "fn", "for", "in", "return"};
		add_names(text, n, TIR_NAMES_OPS);
		add_names(text, n, TIR_NAMES_FUNCS);
		cand_add("range", text, n);
		bool op = ncands == 1;
		add_names(text, n, TIR_NAMES_VALUES);
		for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
			cand_add(words[i], text, n);
		for (int d = 0; d < TIR_DTYPE_COUNT; d++) /* cast(x, bf16), dtype=f16, input x: u8[...] */
			cand_add(tir_dtype_name((enum tir_dtype)d), text, n);
		if (ncands == 1)
			rl_completion_append_character = op ? '(' : '\0';
		if (ncands == 1 && (!strcmp(cands[0], "print") || !strcmp(cands[0], "fn") ||
				    !strcmp(cands[0], "for") || !strcmp(cands[0], "in") || !strcmp(cands[0], "return")))
			rl_completion_append_character = ' ';
	}
	(void)end;
	return ncands ? rl_completion_matches(text, cand_next) : NULL;
}

/* Where words break for completion: at punctuation in statements, only at
 * blanks in the file name of .load.  libedit asks before each completion,
 * before rl_line_buffer is brought up to date: the line is copied. */
static char *word_breaks(void)
{
	static const char code[] = " \t\n\"()[],=+-*/@:;", path[] = " \t\n";
	char *copy = rl_copy_text(0, 256); /* the line's start is enough */
	const char *line = copy ? copy : "";
	while (*line == ' ' || *line == '\t')
		line++;
	int nm;
	const struct dot_cmd *c = *line == '.' ? dot_find(line + 1, strcspn(line + 1, " \t"), &nm) : NULL;
	rl_basic_word_break_characters = c && c->fn == dot_load ? path : code;
	free(copy);
	return (char *)rl_basic_word_break_characters;
}

/* ---- the terminal ---- */

static char *history_path(void)
{
	const char *env = getenv("TIR_HISTORY");
	if (env)
		return *env ? strdup(env) : NULL; /* TIR_HISTORY= : no history */
	const char *home = getenv("HOME");
	if (!home || !*home)
		return NULL;
	size_t n = strlen(home) + sizeof "/.tir_history";
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s/.tir_history", home);
	return s;
}

static int tty_open(struct repl *r, char **hist)
{
	if (pipe(wake_pipe) != 0) {
		fprintf(stderr, "tir: pipe: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		fcntl(wake_pipe[i], F_SETFD, FD_CLOEXEC);
		fcntl(wake_pipe[i], F_SETFL, fcntl(wake_pipe[i], F_GETFL) | O_NONBLOCK);
	}
	/* no SA_RESTART: a read in progress returns to look at the flags */
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	sigaction(SIGCONT, &sa, NULL);
	if (tcgetattr(STDIN_FILENO, &tty_saved) == 0) {
		sa.sa_handler = on_fatal_signal;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		sigaction(SIGQUIT, &sa, NULL);
	}
	/* libedit works in wide characters: UTF-8 needs a UTF-8 LC_CTYPE */
	if (!setlocale(LC_CTYPE, "") || MB_CUR_MAX == 1)
		setlocale(LC_CTYPE, "C.UTF-8");
	completing = r;
	rl_readline_name = "tir";
	rl_catch_signals = 0;
	rl_getc_function = tty_getc;
	rl_attempted_completion_function = complete;
	rl_completion_word_break_hook = word_breaks;
	rl_initialize();
	using_history();
	stifle_history(HISTORY_MAX);
	*hist = history_path();
	if (*hist)
		read_history(*hist);
	return 0;
}

static void tty_close(char *hist)
{
	if (hist) {
		/* the history can hold data: only the user reads it */
		int fd = open(hist, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
		if (write_history(hist) != 0)
			fprintf(stderr, "tir: cannot write the history to '%s'\n", hist);
	}
	free(hist);
	cands_clear();
	free(cands);
	cands = NULL;
	capcands = 0;
	signal(SIGINT, SIG_DFL);
	signal(SIGWINCH, SIG_DFL);
	signal(SIGCONT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	for (int i = 0; i < 2; i++) {
		close(wake_pipe[i]);
		wake_pipe[i] = -1;
	}
}

/* ---- the loop ---- */

int cli_repl(int argc, char **argv)
{
	const char *remote = NULL;
	size_t max_memory = SIZE_MAX;
	struct cli_args a;
	char *val;
	int f;
	char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
	int ninputs = 0;
	if (!inputs) {
		fprintf(stderr, "tir: out of memory\n");
		return EXIT_PROGRAM;
	}
	cli_args_begin(&a, CMD_REPL, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0) {
		if (f == FLAG_REPL_REMOTE)
			remote = val;
		if (f == FLAG_REPL_MAX_MEMORY && !cli_parse_bytes(val, &max_memory)) {
			free(inputs);
			return cli_misuse(CMD_REPL, "--max-memory wants BYTES (e.g. 512M, 8G; 0: no limit), got '%s'", val);
		}
		if (f != FLAG_REPL_INPUT)
			continue;
		char *eq = strchr(val, '=');
		if (eq)
			*eq = 0;
		bool good = eq && is_name(val) && eq[1];
		if (eq)
			*eq = '=';
		if (!good) {
			free(inputs);
			return cli_misuse(CMD_REPL, "--input wants NAME=FILE, got '%s'", val);
		}
		inputs[ninputs++] = val;
	}
	if (f == CLI_ARGS_STOP) {
		free(inputs);
		return a.exit;
	}
	struct repl r = {.tty = isatty(STDIN_FILENO), .pending = inputs, .npending = ninputs};
	if (r.tty && edit_load())
		r.tty = false; /* lines read as from a pipe (the message says why) */
	tir_set_max_memory(max_memory == SIZE_MAX ? tir_default_max_memory() : max_memory);
	char *hist = NULL;
	/* a session outlives the files it read: np.save rewrites a file in
	 * place, which would change (or, shorter, fault) a mapped value */
	tir_set_file_mapping(false);
	if (remote) {
		int st = cli_remotes_open(&r.remotes, remote, true);
		if (st) {
			free(inputs);
			return st;
		}
	}
	if (session_open(&r) || (r.tty && tty_open(&r, &hist))) {
		session_close(&r);
		cli_remotes_close(&r.remotes);
		free(inputs);
		return EXIT_PROGRAM;
	}
	struct tir_str acc = {0};   /* a statement while its brackets (or a block's braces) are open */
	uint32_t first = 0;         /* its first line */
	char *last = NULL;          /* the last line put in the history */
	while (!r.quit) {
		size_t len;
		interrupted = continued = 0;
		drain_wake_pipe();
		char *line = read_line(&r, acc.n ? "...> " : "tir> ", &len);
		if (!line) {
			if (r.tty && interrupted) {
				/* Ctrl-C: the line (and any open statement) is dropped */
				fputs("^C\n", stdout);
				acc.n = 0;
				continue;
			}
			if (r.tty)
				fputs("\n", stdout);
			break;
		}
		r.line++;
		if (r.tty && *line && (!last || strcmp(last, line))) {
			add_history(line);
			free(last);
			last = strdup(line);
		}
		if (!acc.n && is_dot_line(line)) {
			run_dot(&r, line);
			free(line);
			continue;
		}
		if (!acc.n) {
			size_t k = 0;
			while (k < len && isspace((unsigned char)line[k]))
				k++;
			if (k == len) {
				free(line);
				continue;
			}
			first = r.line;
		}
		tir_str_add(&acc, line, len);
		tir_str_add(&acc, "\n", 1);
		free(line);
		if (acc.oom) {
			fprintf(stderr, "tir: out of memory\n");
			r.failed = true;
			break;
		}
		if (acc.n <= (size_t)TIR_MAX_SOURCE && tir_text_incomplete(acc.s, acc.n))
			continue;
		eval_text(&r, "<stdin>", acc.s, acc.n, first);
		acc.n = 0;
	}
	if (acc.n && !r.quit) /* the input ended inside a bracket: say where it opened */
		eval_text(&r, "<stdin>", acc.s, acc.n, first);
	fflush(stdout);
	free(acc.s);
	free(last);
	if (r.tty)
		tty_close(hist);
	session_close(&r);
	cli_remotes_close(&r.remotes);
	free(inputs);
	for (int i = 0; i < r.nmodels; i++)
		cli_onnx_done(&r.models[i]);
	free(r.models);
	return r.failed && !r.tty ? EXIT_PROGRAM : EXIT_OK;
}
