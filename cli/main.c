/*
 * main.c — the tir command line: run, check, fmt, repl, serve, help.  A
 * thin client of libtir (lib/tir.h): it reads files, prints results and
 * errors, and owns the exit statuses (0 ok, 1 program or data error, 2 bad
 * usage, 3 remote failure, 130/143 a remote run stopped by SIGINT/SIGTERM).  No tensor logic lives here.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const usage_text =
	"usage: tir COMMAND [ARGS]\n"
	"\n"
	"  tir run FILE.tir [options]   parse, check and run a program; print its results\n"
	"  tir check FILE.tir           parse and type-check only (silent when well formed)\n"
	"  tir fmt FILE.tir [--dot]     print the program in canonical form (--dot: its plan, for Graphviz)\n"
	"  tir inspect FILE             the tensors of a .safetensors or .npy file\n"
	"  tir repl                     an interactive session (tir help repl)\n"
	"  tir serve [--port 6667]      serve batches over HTTP (tir help serve)\n"
	"  tir help [COMMAND|ops]       this text, a command's options, or the op table\n"
	"  tir --version                the version, vector path, gemm, BLAS, caches\n"
	"\n"
	"TIR_VMATH=scalar|sse2|avx2|avx512 caps the vector path (default: the best the\n"
	"CPU has).\n";

const char *const cli_run_help =
	"usage: tir run FILE.tir [options]\n"
	"\n"
	"  --input NAME=FILE     value of `input NAME` from a .npy or .safetensors file\n"
	"  --save NAME=FILE      write a bound value to FILE.npy, or to FILE.safetensors\n"
	"                        (which holds every value saved to it, by name)\n"
	"  --remote HOST:PORT    run on a tir server (`tir serve`); https://HOST:PORT for one\n"
	"                        serving TLS (checked against the system's CAs, or\n"
	"                        TIR_CA_FILE's); TIR_TOKEN is its token, TIR_TIMEOUT the\n"
	"                        seconds to wait for a reply (default 600).  A list\n"
	"                        a:6667,b:6667 names remote:0, remote:1, ... for to() and\n"
	"                        shard(); one address of an MPI group names all its ranks\n"
	"  --no-fuse             run op by op (the reference path)\n"
	"  --explain             print the plan: which ops went into which kernel\n"
	"  --profile             print a table of kernels: time, bytes, GFLOP/s, tasks\n"
	"  --trace FILE.json     write the run as Chrome trace events (Perfetto,\n"
	"                        chrome://tracing): parse, plan, each kernel, and each\n"
	"                        pool thread's share of it; with --remote the batch,\n"
	"                        each request, upload and fetch, the server's plan and run\n"
	"  --progress=WHEN       a progress line on stderr once a run takes a second:\n"
	"                        auto (default: when stderr is a terminal), always, never\n"
	"  --threads N           threads for the engine (default: one per processor)\n"
	"  --precision N         significant digits of printed floats (default 6)\n"
	"  --full                print every element (no ... summary)\n"
	"  --quiet               no timing line on stderr\n"
	"\n"
	"Exit status: 0 ok, 1 an error in the program or its data, 2 bad usage,\n"
	"3 the remote failed (unreachable, another protocol, token refused),\n"
	"130/143 a --remote run stopped by SIGINT/SIGTERM (its session deleted).\n";

char *cli_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "tir: cannot open '%s': %s\n", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
		if (n > (size_t)TIR_MAX_SOURCE) {
			fprintf(stderr, "tir: %s: program text is over the limit of %lld MiB\n", path,
				(long long)(TIR_MAX_SOURCE >> 20));
			free(buf);
			fclose(f);
			return NULL;
		}
		if (n == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf || ferror(f)) {
		fprintf(stderr, "tir: cannot read '%s': %s\n", path, buf ? strerror(errno) : "out of memory");
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

void cli_print_diags(const struct tir_program *p)
{
	for (int i = 0; i < tir_program_ndiags(p); i++) {
		char *s = tir_err_render(tir_program_diag(p, i));
		if (s)
			fputs(s, stderr);
		free(s);
	}
	int more = tir_program_nerrors(p) - tir_program_ndiags(p);
	if (more > 0)
		fprintf(stderr, "tir: %d more error%s not shown\n", more, more == 1 ? "" : "s");
}

void cli_print_err(const struct tir_err *e)
{
	char *s = tir_err_render(e);
	if (s) {
		if (!e->loc.src && e->code == TIR_ENET && !strncmp(s, "error: ", 7))
			fprintf(stderr, "tir: %s", s + 7); /* "tir: remote HOST:PORT: ..." */
		else if (!e->loc.src)
			fprintf(stderr, "tir: %s", s);
		else
			fputs(s, stderr);
	}
	free(s);
}

static void human_bytes(double b, char *buf, size_t n)
{
	if (b < 1024)
		snprintf(buf, n, "%.0f B", b);
	else if (b < 1024 * 1024)
		snprintf(buf, n, "%.1f KiB", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, n, "%.1f MiB", b / (1024 * 1024));
	else
		snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
}

void cli_print_timing(double parse_ms, const struct tir_exec_stats *st,
		      const struct tir_remote_stats *net)
{
	char peak[32];
	human_bytes((double)st->peak_bytes, peak, sizeof peak);
	fprintf(stderr, "parse %.2f ms \xc2\xb7 plan %.2f ms (%d ops -> %d kernels%s) \xc2\xb7 run %.2f ms "
		"\xc2\xb7 peak %s", parse_ms, st->plan_ms, st->nops, st->nkernels,
		st->plan_cached ? ", cached" : "", st->run_ms, peak);
	if (st->mapped_bytes) {
		char mapped[32];
		human_bytes((double)st->mapped_bytes, mapped, sizeof mapped);
		fprintf(stderr, " \xc2\xb7 mapped %s", mapped);
	}
	if (net) {
		char up[32], down[32];
		human_bytes((double)net->bytes_up, up, sizeof up);
		human_bytes((double)net->bytes_down, down, sizeof down);
		fprintf(stderr, " \xc2\xb7 net %.2f ms (%d round trip%s, %s up, %s down)", net->net_ms,
			net->round_trips, net->round_trips == 1 ? "" : "s", up, down);
	}
	fputc('\n', stderr);
}

void cli_print_blobs(const struct tir_remote_stats *net)
{
	fprintf(stderr, "blobs: %d cached, %d sent (%llu bytes); graph: %s\n", net->blobs_cached,
		net->blobs_sent, (unsigned long long)net->blob_bytes_sent, net->graph_sent ? "sent" : "cached");
}

struct tir_program *cli_load_program(const char *path, int nremotes, int *status, double *parse_ms)
{
	size_t len;
	char *src = cli_read_file(path, &len);
	if (!src) {
		*status = EXIT_PROGRAM;
		return NULL;
	}
	struct tir_program *p = tir_program_new();
	if (!p) {
		free(src);
		fprintf(stderr, "tir: out of memory\n");
		*status = EXIT_PROGRAM;
		return NULL;
	}
	tir_program_set_loader(p, tir_load_type_from_file, NULL);
	if (nremotes >= 0)
		tir_program_set_remotes(p, nremotes);
	double t0 = tir_now_ms();
	int rc = tir_program_parse(p, path, src, len, 0);
	if (parse_ms)
		*parse_ms = tir_now_ms() - t0;
	free(src);
	if (rc) {
		cli_print_diags(p);
		tir_program_free(p);
		*status = EXIT_PROGRAM;
		return NULL;
	}
	return p;
}

static int cmd_check(int argc, char **argv)
{
	if (argc != 1) {
		fprintf(stderr, "usage: tir check FILE.tir\n");
		return EXIT_USAGE;
	}
	int status = EXIT_OK;
	struct tir_program *p = cli_load_program(argv[0], -1, &status, NULL);
	tir_program_free(p);
	return status;
}

static int cmd_fmt(int argc, char **argv)
{
	const char *file = NULL;
	bool dot = false;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--dot"))
			dot = true;
		else if (!file && argv[i][0] != '-')
			file = argv[i];
		else
			file = NULL, argc = -1;
	}
	if (!file) {
		fprintf(stderr, "usage: tir fmt FILE.tir [--dot]\n");
		return EXIT_USAGE;
	}
	int status = EXIT_OK;
	struct tir_program *p = cli_load_program(file, -1, &status, NULL);
	if (!p)
		return status;
	char *s = NULL;
	if (dot) {
		/* the plan of what it prints, kernels as clusters (nothing runs) */
		struct tir_err err = {0};
		struct tir_exec *x = tir_exec_new(p);
		s = x ? tir_exec_dot(x, NULL, &err) : NULL;
		tir_exec_free(x);
		if (!s && err.code && err.code != TIR_ENOMEM) {
			cli_print_err(&err);
			tir_program_free(p);
			return EXIT_PROGRAM;
		}
	} else {
		s = tir_program_format(p);
	}
	if (!s) {
		fprintf(stderr, "tir: out of memory\n");
		status = EXIT_PROGRAM;
	} else {
		fputs(s, stdout);
	}
	free(s);
	tir_program_free(p);
	return status;
}

static const char inspect_help[] =
	"usage: tir inspect FILE\n"
	"\n"
	"The tensors of a .safetensors or .npy file, from its header alone (the\n"
	"data is not read): name, dtype as the file names it, shape, bytes, offset\n"
	"of the data from the start of the file, and the tir dtype it loads as (\"-\"\n"
	"for a dtype tir does not read yet).  Every tensor is checked as loading\n"
	"it would be: a header that lies (offsets out of range or overlapping, a\n"
	"shape that disagrees with its bytes) is an error, exit status 1.\n";

static int cmd_inspect(int argc, char **argv)
{
	if (argc == 1 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
		fputs(inspect_help, stdout);
		return EXIT_OK;
	}
	if (argc != 1) {
		fputs(inspect_help, stderr);
		return EXIT_USAGE;
	}
	struct tir_err err = {0};
	char *s = tir_file_inspect(argv[0], &err);
	if (!s) {
		cli_print_err(&err);
		return EXIT_PROGRAM;
	}
	fputs(s, stdout);
	free(s);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "tir: writing: %s\n", strerror(errno));
		return EXIT_PROGRAM;
	}
	return EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 0) {
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "run")) {
		fputs(cli_run_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "repl")) {
		fputs(cli_repl_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "serve")) {
		fputs(cli_serve_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "ops")) {
		char *s = tir_ops_help();
		fputs(s ? s : "", stdout);
		free(s);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "check")) {
		printf("usage: tir check FILE.tir\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "fmt")) {
		printf("usage: tir fmt FILE.tir [--dot]\n"
		       "\n"
		       "The program in canonical form; with --dot, the plan of what it prints as a\n"
		       "Graphviz graph (each kernel a cluster of the ops fused into it; nothing\n"
		       "runs): tir fmt model.tir --dot | dot -Tpng > plan.png\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "inspect")) {
		fputs(inspect_help, stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "tir: no help for '%s'\n%s", argv[0], usage_text);
	return EXIT_USAGE;
}

/* A file that load or --input mapped, truncated while its value lives,
 * faults (SIGBUS) where the value is read past the file's new end: said
 * plainly, exit 1, rather than a core dump.  Any other SIGBUS is left to
 * kill as usual. */
static void on_sigbus(int sig)
{
	static const char msg[] = "tir: a file mapped by load or --input was truncated or replaced "
				  "in place while its value was in use (SIGBUS)\n";
	if (tir_mapped_bytes()) {
		ssize_t w = write(2, msg, sizeof msg - 1);
		(void)w;
		_exit(EXIT_PROGRAM);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
		return cmd_help(argc - 2, argv + 2);
	/* before any command runs a kernel: a misspelt path is never taken
	 * silently for the best one */
	struct tir_err err = {0};
	if (tir_vector_path_check(&err)) {
		fprintf(stderr, "tir: %s\n", err.msg);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("tir %s\nvector path: %s\ngemm: %s\nblas: %s\ncaches: %s\n", TIR_VERSION,
		       tir_vector_path(), tir_gemm_info(), tir_blas_info(), tir_machine_info());
		return EXIT_OK;
	}
	if (!strcmp(cmd, "check"))
		return cmd_check(argc - 2, argv + 2);
	if (!strcmp(cmd, "fmt"))
		return cmd_fmt(argc - 2, argv + 2);
	if (!strcmp(cmd, "inspect"))
		return cmd_inspect(argc - 2, argv + 2);
	if (!strcmp(cmd, "run")) {
		int status = cli_run(argc - 2, argv + 2);
		tir_release_caches();
		return status;
	}
	if (!strcmp(cmd, "repl")) {
		int status = cli_repl(argc - 2, argv + 2);
		tir_release_caches();
		return status;
	}
	if (!strcmp(cmd, "serve")) {
		int status = cli_serve(argc - 2, argv + 2);
		tir_release_caches();
		return status;
	}
	fprintf(stderr, "tir: unknown command '%s'\n%s", cmd, usage_text);
	return EXIT_USAGE;
}
