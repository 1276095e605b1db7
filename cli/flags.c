/*
 * flags.c — the commands and their flags (flags.def): the one table that
 * getopt_long reads and every help text and usage line is printed from.
 * What a flag does is its command's (run.c, serve.c, repl.c, main.c);
 * here only how it is spelt, what it takes, and what its help says.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

struct flag {
	enum cli_cmd_id cmd;
	const char *name, *value, *help;
};

static const struct flag flags[FLAG_COUNT] = {
#define FLAG(id, c, n, v, h) [FLAG_##id] = {CMD_##c, n, v, h},
#include "flags.def"
#undef FLAG
};

/* getopt_long's val of a flag: above every char, so never a short option */
#define FLAG_VAL(id) (256 + (id))
#define HELP_COLUMN 24

const struct cli_cmd cli_cmds[CMD_COUNT] = {
	[CMD_RUN] = {"run", "FILE.tir", "program", "parse, check and run a program; print its results", NULL,
		     "Exit status: 0 ok, 1 an error in the program or its data, 2 bad usage,\n"
		     "3 the remote failed (unreachable, another protocol, token refused),\n"
		     "130/143 a --remote run stopped by SIGINT/SIGTERM (its session deleted).\n",
		     "\n(tir help run lists the options)", cli_run},
	[CMD_CHECK] = {"check", "FILE.tir", "program", "parse and type-check only (silent when well formed)", NULL,
		       NULL, NULL, cli_check},
	[CMD_FMT] = {"fmt", "FILE.tir", "program", "print the program in canonical form, or its plan",
		     "The program in canonical form (one op per line, explicit types), or its\n"
		     "plan for Graphviz: tir fmt model.tir --dot | dot -Tpng > plan.png\n",
		     NULL, NULL, cli_fmt},
	[CMD_INSPECT] = {"inspect", "FILE...", "file", "the tensors of .safetensors or .npy files",
			 "The tensors of .safetensors or .npy files, from their headers alone (the\n"
			 "data is not read): name, dtype as the file names it, shape, bytes, offset\n"
			 "of the data from the start of the file, and the tir dtype it loads as (\"-\"\n"
			 "for a dtype tir does not read yet).  Every tensor is checked as loading\n"
			 "it would be: a header that lies (offsets out of range or overlapping, a\n"
			 "shape that disagrees with its bytes) is an error, exit status 1.  Of\n"
			 "several files, one block each, a blank line between; a file that fails\n"
			 "is said on stderr and the others are still listed.\n",
			 NULL, NULL, cli_inspect},
	[CMD_IMPORT] = {"import", "MODEL.onnx", "model", "an ONNX model as a tir program and its weights",
			"An ONNX model (opsets 1 to 17) as a readable tir program: one or a few\n"
			"statements per node, each node's name and op in a comment, its\n"
			"initializers in a .safetensors file beside it read with load()\n"
			"(docs/onnx.md).  Shapes are static: a symbolic dimension must be fixed\n"
			"with --dim.  A model with ops tir cannot import is refused, every such\n"
			"node listed.  tir run MODEL.onnx imports and runs it in one go.\n",
			NULL, NULL, cli_import},
	[CMD_REPL] = {"repl", NULL, NULL, "an interactive session (tir help repl)",
		      "  An interactive session: statements accumulate, an expression alone\n"
		      "  prints its value, .help lists the dot-commands.  With stdin not a\n"
		      "  terminal there is no prompt (tir repl < script.tir) and the exit\n"
		      "  status is 1 when any statement failed.  History is kept in\n"
		      "  ~/.tir_history (TIR_HISTORY=FILE elsewhere, TIR_HISTORY= none).\n",
		      NULL, NULL, cli_repl},
	[CMD_SERVE] = {"serve", NULL, NULL, "serve batches over HTTP (tir help serve)",
		       "Runs batches for `tir run --remote HOST:PORT` and the REPL's .remote over\n"
		       "HTTP (docs/protocol.md).  One line per request on stderr; SIGINT or SIGTERM\n"
		       "stops it.\n",
		       "BYTES may end in K, M or G (powers of 1024).\n", " (tir help serve)", cli_serve},
	[CMD_HELP] = {"help", "[COMMAND|ops]", NULL, "this text, a command's options, or the op table", NULL, NULL,
		      NULL, cli_help},
	[CMD_VERSION] = {"--version", NULL, NULL, "the version, vector path, gemm, BLAS, caches", NULL, NULL, NULL,
			 cli_version},
};

const struct cli_cmd *cli_cmd_find(const char *name)
{
	for (int i = 0; i < CMD_COUNT; i++)
		if (!strcmp(cli_cmds[i].name, name))
			return &cli_cmds[i];
	return NULL;
}

/* "run FILE.tir [options]": a lone flag spelt out, several as [options] */
static void synopsis(char *buf, size_t n, enum cli_cmd_id cmd)
{
	const struct cli_cmd *c = &cli_cmds[cmd];
	int count = 0, one = -1;
	for (int i = 0; i < FLAG_COUNT; i++)
		if (flags[i].cmd == cmd)
			count++, one = i;
	int k = snprintf(buf, n, "%s%s%s", c->name, c->operand ? " " : "", c->operand ? c->operand : "");
	if (count == 1)
		snprintf(buf + k, n - (size_t)k, " [--%s%s%s]", flags[one].name, flags[one].value ? " " : "",
			 flags[one].value ? flags[one].value : "");
	else if (count > 1)
		snprintf(buf + k, n - (size_t)k, " [options]");
}

void cli_print_usage(FILE *f)
{
	char s[CMD_COUNT][96];
	int width = 0;
	for (int i = 0; i < CMD_COUNT; i++) {
		synopsis(s[i], sizeof s[i], (enum cli_cmd_id)i);
		int w = (int)strlen(s[i]);
		width = w > width ? w : width;
	}
	fputs("usage: tir COMMAND [ARGS]\n\n", f);
	for (int i = 0; i < CMD_COUNT; i++)
		fprintf(f, "  tir %-*s  %s\n", width, s[i], cli_cmds[i].summary);
	fputs("\nTIR_VMATH=scalar|sse2|avx2|avx512 caps the vector path (default: the best the\n"
	      "CPU has).  TIR_GEMM=tir|openblas picks the code of float products (as run's\n"
	      "--gemm, which wins over it).\n", f);
}

/* "  --name VALUE" and its help, its lines from HELP_COLUMN on */
static void print_flag(FILE *f, const char *head, const char *help)
{
	int w = fprintf(f, "  %s", head);
	if (w >= HELP_COLUMN) {
		fputc('\n', f);
		w = 0;
	}
	for (const char *line = help; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		fprintf(f, "%*s%.*s\n", HELP_COLUMN - w, "", (int)len, line);
		w = 0;
		line += len + (eol != NULL);
	}
}

void cli_print_help(FILE *f, enum cli_cmd_id cmd)
{
	const struct cli_cmd *c = &cli_cmds[cmd];
	char s[96];
	synopsis(s, sizeof s, cmd);
	fprintf(f, "usage: tir %s\n", s);
	if (c->about)
		fprintf(f, "\n%s", c->about);
	fputc('\n', f);
	for (int i = 0; i < FLAG_COUNT; i++) {
		if (flags[i].cmd != cmd)
			continue;
		char head[64];
		snprintf(head, sizeof head, "--%s%s%s", flags[i].name, flags[i].value ? " " : "",
			 flags[i].value ? flags[i].value : "");
		print_flag(f, head, flags[i].help);
	}
	print_flag(f, "-h, --help", "this text");
	if (c->footer)
		fprintf(f, "\n%s", c->footer);
}

int cli_misuse(enum cli_cmd_id cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "tir %s: ", cli_cmds[cmd].name);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cli_cmds[cmd].hint) {
		fprintf(stderr, "%s\n", cli_cmds[cmd].hint);
	} else {
		fputc('\n', stderr);
		cli_print_help(stderr, cmd);
	}
	return EXIT_USAGE;
}

void cli_args_begin(struct cli_args *a, enum cli_cmd_id cmd, int argc, char **argv)
{
	memset(a, 0, sizeof *a);
	a->cmd = cmd;
	a->argc = argc;
	a->argv = argv;
	int n = 0;
	for (int i = 0; i < FLAG_COUNT; i++)
		if (flags[i].cmd == cmd)
			a->longopts[n++] = (struct option){flags[i].name, flags[i].value ? required_argument : no_argument,
							   NULL, FLAG_VAL(i)};
	a->longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
	optind = 0; /* a fresh scan: getopt forgets any earlier argv */
	opterr = 0; /* its messages are ours */
}

static int stop(struct cli_args *a, int exit)
{
	a->exit = exit;
	return CLI_ARGS_STOP;
}

/* Whether ARG ("--name" or "--name=value") spells NAME whole: getopt_long
 * takes any unambiguous prefix, tir does not. */
static bool spelt(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(arg, "--", 2) && !strncmp(arg + 2, name, n) && (arg[n + 2] == 0 || arg[n + 2] == '=');
}

const char *cli_flag_name(int id)
{
	return flags[id].name;
}

static const char *flag_name(int val)
{
	return val == 'h' ? "help" : cli_flag_name(val - FLAG_VAL(0));
}

static bool operand(struct cli_args *a, const char *s)
{
	const struct cli_cmd *c = &cli_cmds[a->cmd];
	if (!c->what)
		a->exit = cli_misuse(a->cmd, "unexpected '%s'", s);
	else if (a->operand && !strstr(c->operand, "..."))
		a->exit = cli_misuse(a->cmd, "one %s at a time; '%s' is a second one", c->what, s);
	else if (a->noperands == CLI_MAX_OPERANDS)
		a->exit = cli_misuse(a->cmd, "at most %d %ss at once", CLI_MAX_OPERANDS, c->what);
	else
		a->operands[a->noperands++] = a->operand ? s : (a->operand = s);
	return !a->exit;
}

int cli_args_next(struct cli_args *a, char **value)
{
	*value = NULL;
	while (!a->done) {
		/* "-": operands come back in place (1), never permuted, whatever
		 * POSIXLY_CORRECT says; ":": a missing value is ':' */
		int li = -1;
		int c = getopt_long(a->argc, a->argv, "-:h", a->longopts, &li);
		if (c == -1) {
			a->done = true;
			break;
		}
		if (c == 1) {
			if (!operand(a, optarg))
				return CLI_ARGS_STOP;
			continue;
		}
		if (c == '?' && optopt != 'h' && optopt > 0 && optopt < FLAG_VAL(0))
			return stop(a, cli_misuse(a->cmd, "unknown option '-%c'", optopt));
		/* a long flag from here on but -h; arg is it as given */
		const char *arg = a->argv[optind - 1];
		if (c == '?' && optopt == 0)
			return stop(a, cli_misuse(a->cmd, "unknown option '%s'", arg));
		int val = c == '?' || c == ':' ? optopt : c;
		if (c >= FLAG_VAL(0) && optarg == arg)
			arg = a->argv[optind - 2]; /* --name VALUE */
		if ((c != 'h' || li >= 0) && !spelt(arg, flag_name(val)))
			return stop(a, cli_misuse(a->cmd, "unknown option '%s'", arg));
		if (c == '?')
			return stop(a, cli_misuse(a->cmd, "--%s takes no value", flag_name(val)));
		if (c == ':')
			return stop(a, cli_misuse(a->cmd, "%s needs a value", arg));
		if (c == 'h') {
			cli_print_help(stdout, a->cmd);
			return stop(a, EXIT_OK);
		}
		*value = optarg;
		return c - FLAG_VAL(0);
	}
	/* after `--`: all operands */
	for (; optind < a->argc; optind++)
		if (!operand(a, a->argv[optind]))
			return CLI_ARGS_STOP;
	if (cli_cmds[a->cmd].what && !a->operand)
		return stop(a, cli_misuse(a->cmd, "which %s? tir %s %s", cli_cmds[a->cmd].what, cli_cmds[a->cmd].name,
					  cli_cmds[a->cmd].operand));
	return CLI_ARGS_DONE;
}
