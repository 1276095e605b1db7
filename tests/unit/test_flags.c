/*
 * test_flags.c — cli/flags.c, the flag table and its getopt_long reader,
 * compiled in whole (the CLI is no library): --opt value and --opt=value
 * read alike, operands in place, `--` and `-`, misuse said once on
 * stderr, getopt's state fresh for every parse (a parse left in the middle
 * of "-xq" does not leak into the next), and the table itself: names
 * unique per command, help lines that fit 80 columns.
 */
#include "../../cli/flags.c"

#include "check.h"

#include <stdlib.h>
#include <unistd.h>

/* the commands the table points at: not under test here */
int cli_run(int argc, char **argv) { return 0; }
int cli_repl(int argc, char **argv) { return 0; }
int cli_serve(int argc, char **argv) { return 0; }
int cli_check(int argc, char **argv) { return 0; }
int cli_fmt(int argc, char **argv) { return 0; }
int cli_inspect(int argc, char **argv) { return 0; }
int cli_import(int argc, char **argv) { return 0; }
int cli_help(int argc, char **argv) { return 0; }
int cli_version(int argc, char **argv) { return 0; }

/* Parse ARGS (space-separated, argv[0] the command) as CMD; what came
 * back, in order, into out: "name=value;" per flag, "@operand;" at the
 * end, then "DONE", "HELP" or "USAGE"; what went to stderr into err. */
static void parse(enum cli_cmd_id cmd, const char *args, char *out, size_t n, char *err, size_t nerr)
{
	char buf[512], *argv[32];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", args);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = !strcmp(t, "''") ? t + 2 : t; /* '' is an empty argument */
	argv[argc] = NULL;

	fflush(stdout);
	fflush(stderr);
	FILE *tmp = tmpfile(), *help = tmpfile(); /* help goes to stdout: not wanted in the report */
	int saved = dup(2), saved_out = dup(1);
	dup2(fileno(tmp), 2);
	dup2(fileno(help), 1);
	struct cli_args a;
	char *val;
	int f;
	size_t k = 0;
	out[0] = 0;
	cli_args_begin(&a, cmd, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0 && k < n)
		k += (size_t)snprintf(out + k, n - k, "%s%s%s;", cli_flag_name(f), val ? "=" : "", val ? val : "");
	if (a.operand && k < n)
		k += (size_t)snprintf(out + k, n - k, "@%s;", a.operand);
	if (k < n)
		snprintf(out + k, n - k, "%s", f == CLI_ARGS_DONE ? "DONE" : a.exit == EXIT_OK ? "HELP" : "USAGE");
	fflush(stdout);
	fflush(stderr);
	dup2(saved, 2);
	dup2(saved_out, 1);
	close(saved);
	close(saved_out);
	fclose(help);
	size_t got = 0;
	if (fseek(tmp, 0, SEEK_SET) == 0)
		got = fread(err, 1, nerr - 1, tmp);
	err[got] = 0;
	fclose(tmp);
}

#define EXPECT(cmd, args, want, errwant)                                                      \
	do {                                                                                  \
		char out_[512], err_[4096];                                                   \
		parse(cmd, args, out_, sizeof out_, err_, sizeof err_);                       \
		CHECK(!strcmp(out_, want));                                                   \
		CHECK(strstr(err_, errwant) != NULL);                                         \
		if (strcmp(out_, want) || !strstr(err_, errwant))                             \
			fprintf(stderr, "  %s: got '%s', stderr '%.120s'\n", args, out_, err_); \
	} while (0)

static void test_values(void)
{
	/* both spellings, a value with '=' in it, a value that looks like a flag */
	EXPECT(CMD_RUN, "run m.tir --input x=f.npy --progress always", "input=x=f.npy;progress=always;@m.tir;DONE", "");
	EXPECT(CMD_RUN, "run m.tir --input=x=f.npy --progress=always", "input=x=f.npy;progress=always;@m.tir;DONE", "");
	EXPECT(CMD_RUN, "run --trace --quiet m.tir", "trace=--quiet;@m.tir;DONE", "");
	EXPECT(CMD_SERVE, "serve --port 0 --host=::1 --token= --max-body=1M", "port=0;host=::1;token=;max-body=1M;DONE",
	       "");
	EXPECT(CMD_SERVE, "serve --token ''", "token=;DONE", "");
	EXPECT(CMD_REPL, "repl --remote a:1,b:2", "remote=a:1,b:2;DONE", "");
	EXPECT(CMD_FMT, "fmt --dot m.tir", "dot;@m.tir;DONE", "");
}

static void test_operands(void)
{
	EXPECT(CMD_RUN, "run --quiet m.tir --full", "quiet;full;@m.tir;DONE", "");
	EXPECT(CMD_RUN, "run --quiet -- --full", "quiet;@--full;DONE", "");
	EXPECT(CMD_CHECK, "check -", "@-;DONE", "");
	EXPECT(CMD_CHECK, "check -- -", "@-;DONE", "");
	EXPECT(CMD_RUN, "run a.tir b.tir", "@a.tir;USAGE", "tir run: one program at a time; 'b.tir' is a second one\n");
	EXPECT(CMD_RUN, "run a.tir -- b.tir", "@a.tir;USAGE", "'b.tir' is a second one");
	EXPECT(CMD_RUN, "run --quiet", "quiet;USAGE", "tir run: which program? tir run FILE.tir\n");
	EXPECT(CMD_SERVE, "serve extra", "USAGE", "tir serve: unexpected 'extra' (tir help serve)\n");
	EXPECT(CMD_INSPECT, "inspect", "USAGE", "tir inspect: which file? tir inspect FILE...\nusage: tir inspect FILE... [--match REGEX]\n");
	/* inspect takes several files, each in operands[] in order */
	EXPECT(CMD_INSPECT, "inspect a.npy b.npy", "@a.npy;DONE", "");
}

static void test_misuse(void)
{
	EXPECT(CMD_RUN, "run m.tir --bogus", "@m.tir;USAGE", "tir run: unknown option '--bogus'\n(tir help run lists the options)\n");
	EXPECT(CMD_RUN, "run m.tir --thr 2", "@m.tir;USAGE", "unknown option '--thr'\n");   /* no abbreviations */
	EXPECT(CMD_RUN, "run m.tir --thr=2", "@m.tir;USAGE", "unknown option '--thr=2'\n");
	EXPECT(CMD_RUN, "run m.tir --he", "@m.tir;USAGE", "unknown option '--he'\n");
	EXPECT(CMD_RUN, "run m.tir -x", "@m.tir;USAGE", "unknown option '-x'\n");
	EXPECT(CMD_RUN, "run m.tir --input", "@m.tir;USAGE", "tir run: --input needs a value\n");
	EXPECT(CMD_RUN, "run m.tir --quiet=yes", "@m.tir;USAGE", "tir run: --quiet takes no value\n");
	EXPECT(CMD_RUN, "run m.tir --help=yes", "@m.tir;USAGE", "tir run: --help takes no value\n");
	EXPECT(CMD_SERVE, "serve --port", "USAGE", "tir serve: --port needs a value (tir help serve)\n");
	EXPECT(CMD_SERVE, "serve --tls", "USAGE", "tir serve: unknown option '--tls' (tir help serve)\n"); /* ambiguous */
	EXPECT(CMD_REPL, "repl --dot", "USAGE", "tir repl: unknown option '--dot'\nusage: tir repl"); /* fmt's */
	EXPECT(CMD_FMT, "fmt m.tir --dot2", "@m.tir;USAGE", "tir fmt: unknown option '--dot2'\nusage: tir fmt FILE.tir [--dot]\n");
}

static void test_help(void)
{
	EXPECT(CMD_RUN, "run --quiet -h m.tir", "quiet;HELP", "");
	EXPECT(CMD_SERVE, "serve --help", "HELP", "");
	EXPECT(CMD_CHECK, "check --help", "HELP", "");
}

/* getopt keeps where it is inside "-xq" between calls: each parse must
 * begin afresh, whatever the last one left */
static void test_reset(void)
{
	for (int i = 0; i < 3; i++) {
		EXPECT(CMD_RUN, "run m.tir -xq", "@m.tir;USAGE", "unknown option '-x'");
		EXPECT(CMD_RUN, "run --full a.tir", "full;@a.tir;DONE", "");
		EXPECT(CMD_REPL, "repl --remote", "USAGE", "--remote needs a value");
		EXPECT(CMD_REPL, "repl --remote h:1", "remote=h:1;DONE", "");
		EXPECT(CMD_SERVE, "serve --port 1 --host", "port=1;USAGE", "--host needs a value");
		EXPECT(CMD_SERVE, "serve --port=2", "port=2;DONE", "");
	}
}

static void test_table(void)
{
	for (int i = 0; i < FLAG_COUNT; i++) {
		CHECK(flags[i].name && flags[i].name[0] && strcmp(flags[i].name, "help"));
		CHECK(!flags[i].value || flags[i].value[0]);
		CHECK(flags[i].help && flags[i].help[0]);
		for (int j = 0; j < i; j++)
			CHECK(flags[i].cmd != flags[j].cmd || strcmp(flags[i].name, flags[j].name));
		/* every help line fits beside the column in 80 */
		for (const char *l = flags[i].help; *l;) {
			const char *e = strchr(l, '\n');
			size_t len = e ? (size_t)(e - l) : strlen(l);
			CHECK(HELP_COLUMN + len <= 80);
			l += len + (e != NULL);
		}
	}
	for (int c = 0; c < CMD_COUNT; c++) {
		CHECK(cli_cmds[c].name && cli_cmds[c].summary && cli_cmds[c].main);
		CHECK(cli_cmd_find(cli_cmds[c].name) == &cli_cmds[c]);
		CHECK(!cli_cmds[c].what == !cli_cmds[c].operand || c == CMD_HELP);
	}
	CHECK(cli_cmd_find("bogus") == NULL);
}

int main(void)
{
	test_values();
	test_operands();
	test_misuse();
	test_help();
	test_reset();
	test_table();
	return check_report("test_flags");
}
