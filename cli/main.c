/*
 * main.c — the tir command line: dispatch to the commands of flags.c's
 * table; check, fmt, inspect, help and --version themselves.  A thin
 * client of libtir (lib/tir.h): it reads files, prints results and errors,
 * and owns the exit statuses (0 ok, 1 program or data error, 2 bad usage,
 * 3 remote failure, 130/143 a remote run stopped by SIGINT/SIGTERM).  No
 * tensor logic lives here.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A program file of TEXT_MAP_MIN bytes or more is mapped, not read
 * (cli_read_file with map): its pages are the page cache's, all mapped at
 * once (MAP_POPULATE), where read() copies them into fresh pages of the
 * process, a page fault each (a program of 100,000 statements, 2.3 MB:
 * some 1 ms of 30).  Nothing needs a NUL after the text (the parser takes
 * its length).  The program parsed from it reads it in place
 * (TIR_PARSE_BORROW: no copy of 2.3 MB into fresh pages), so the text
 * stays mapped until that program is freed (cli_program_free).  A file
 * cut short while it is mapped would be SIGBUS where the text is read
 * past its new end: on_sigbus says so, exit 1.  One text is mapped at a
 * time; standard input and files below TEXT_MAP_MIN are read. */
#define TEXT_MAP_MIN ((size_t)64 * 1024)
static char *volatile text_map; /* the text mapped now, or NULL */
static volatile size_t text_map_span; /* its pages' bytes */
static size_t text_map_len;           /* its bytes */
static const struct tir_program *text_reader; /* the program reading it in place */

/* The n bytes of regular file fd mapped (text_map), or NULL: read it */
static char *map_text(int fd, size_t n)
{
	int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
	flags |= MAP_POPULATE;
#endif
	void *m = mmap(NULL, n, PROT_READ, flags, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	/* cut short since its size was looked at: read what there is */
	struct stat st;
	if (fstat(fd, &st) || st.st_size < 0 || (size_t)st.st_size < n) {
		munmap(m, n);
		return NULL;
	}
	long pg = sysconf(_SC_PAGESIZE);
	text_map_span = pg > 0 ? (n + (size_t)pg - 1) / (size_t)pg * (size_t)pg : n;
	text_map_len = n;
	text_map = m;
	return m;
}

void cli_text_free(char *src, size_t len)
{
	if (src && src == text_map) {
		text_map = NULL;
		munmap(src, len);
	} else {
		free(src);
	}
}

char *cli_read_file(const char *path, size_t *len, bool map)
{
	bool in = !strcmp(path, "-");
	FILE *f = in ? stdin : fopen(path, "rb");
	if (in)
		path = "<stdin>";
	if (!f) {
		fprintf(stderr, "tir: cannot open '%s': %s\n", path, strerror(errno));
		return NULL;
	}
	/* a regular file is read at its size, in one read (a byte more, to
	 * see its end); a pipe, or a file that grows as it is read, into a
	 * buffer that doubles.  One bigger than the limit is refused unread. */
	size_t cap = 1 << 16, n = 0;
	struct stat st;
	if (!fstat(fileno(f), &st) && S_ISREG(st.st_mode) && st.st_size >= 0) {
		if (st.st_size > TIR_MAX_SOURCE) {
			fprintf(stderr, "tir: %s: program text is over the limit of %lld MiB\n", path,
				(long long)(TIR_MAX_SOURCE >> 20));
			if (!in)
				fclose(f);
			return NULL;
		}
		char *m = map && !in && !text_map && (size_t)st.st_size >= TEXT_MAP_MIN
				  ? map_text(fileno(f), (size_t)st.st_size)
				  : NULL;
		if (m) {
			fclose(f);
			*len = (size_t)st.st_size;
			return m;
		}
		cap = (size_t)st.st_size + 1;
	}
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
			if (!in)
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
		if (!in)
			fclose(f);
		return NULL;
	}
	if (!in)
		fclose(f);
	*len = n;
	return buf;
}

void cli_print_diags(const struct tir_program *p)
{
	cli_print_diags_reworded(p, NULL);
}

void cli_print_diags_reworded(const struct tir_program *p, void (*reword)(char *msg, size_t cap))
{
	for (int i = 0; i < tir_program_ndiags(p); i++) {
		struct tir_err e = *tir_program_diag(p, i);
		if (reword)
			reword(e.msg, sizeof e.msg);
		char *s = tir_err_render(&e);
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
		/* "tir: remote HOST:PORT: ...", the server's failure or its address's */
		bool remote = e->code == TIR_ENET || (e->code == TIR_EDATA && !strncmp(e->msg, "remote ", 7));
		if (!e->loc.src && remote && !strncmp(s, "error: ", 7))
			fprintf(stderr, "tir: %s", s + 7);
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

/* 1 + the highest N of "remote:N" in the text (0: none), for --local */
static int devices_named(const char *src, size_t len)
{
	int n = 0;
	for (const char *s = src; s + 7 <= src + len; s++) {
		if (memcmp(s, "remote:", 7))
			continue;
		long k = 0;
		const char *d = s + 7;
		while (d < src + len && *d >= '0' && *d <= '9' && k < TIR_MAX_REMOTES)
			k = k * 10 + (*d++ - '0');
		if (d > s + 7 && k + 1 > n)
			n = (int)(k + 1);
	}
	return n;
}

struct tir_program *cli_load_program(const char *path, int nremotes, int *status, double *parse_ms)
{
	size_t len;
	char *src = cli_read_file(path, &len, true);
	if (!src) {
		*status = EXIT_PROGRAM;
		return NULL;
	}
	if (nremotes == CLI_LOCAL_DEVICES) {
		nremotes = devices_named(src, len);
		nremotes = nremotes ? nremotes : 1;
		*status = nremotes;
	}
	struct tir_program *p = tir_program_new();
	if (!p) {
		cli_text_free(src, len);
		fprintf(stderr, "tir: out of memory\n");
		*status = EXIT_PROGRAM;
		return NULL;
	}
	tir_program_set_loader(p, tir_load_type_from_file, NULL);
	if (nremotes >= 0)
		tir_program_set_remotes(p, nremotes);
	/* mapped: the program reads the text in place, mapped until it is freed */
	bool mapped = src == text_map;
	double t0 = tir_now_ms();
	/* `-`: the program on standard input; errors name <stdin>, and its
	 * relative paths are the current directory's */
	int rc = tir_program_parse(p, strcmp(path, "-") ? path : "<stdin>", src, len,
				   mapped ? TIR_PARSE_BORROW : 0);
	if (parse_ms)
		*parse_ms = tir_now_ms() - t0;
	if (rc) {
		cli_print_diags(p);
		tir_program_free(p);
		cli_text_free(src, len);
		*status = EXIT_PROGRAM;
		return NULL;
	}
	if (mapped)
		text_reader = p;
	else
		cli_text_free(src, len);
	return p;
}

void cli_program_free(struct tir_program *p)
{
	bool text = p && p == text_reader;
	tir_program_free(p);
	if (text) {
		text_reader = NULL;
		cli_text_free(text_map, text_map_len);
	}
}

/* a command that takes a file and no flag but --help: its file, or NULL
 * with *status to return */
static const char *file_only(enum cli_cmd_id cmd, int argc, char **argv, int *status)
{
	struct cli_args a;
	char *val;
	int f;
	cli_args_begin(&a, cmd, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0)
		;
	*status = a.exit;
	return f == CLI_ARGS_DONE ? a.operand : NULL;
}

int cli_check(int argc, char **argv)
{
	int status;
	const char *file = file_only(CMD_CHECK, argc, argv, &status);
	if (!file)
		return status;
	struct tir_program *p = cli_load_program(file, -1, &status, NULL);
	cli_program_free(p);
	return status;
}

int cli_fmt(int argc, char **argv)
{
	bool dot = false;
	struct cli_args a;
	char *val;
	int f;
	cli_args_begin(&a, CMD_FMT, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0)
		if (f == FLAG_FMT_DOT)
			dot = true;
	if (f == CLI_ARGS_STOP)
		return a.exit;
	int status = EXIT_OK;
	struct tir_program *p = cli_load_program(a.operand, -1, &status, NULL);
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
			cli_program_free(p);
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
	cli_program_free(p);
	return status;
}

int cli_inspect(int argc, char **argv)
{
	struct cli_args a;
	char *val;
	int f;
	const char *match = NULL;
	cli_args_begin(&a, CMD_INSPECT, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0)
		if (f == FLAG_INSPECT_MATCH)
			match = val;
	if (f == CLI_ARGS_STOP)
		return a.exit;
	struct tir_regex *re = NULL;
	if (match && !(re = cli_regex("--match", match)))
		return EXIT_USAGE;
	/* one block per file, as ls does with several; a bad one is said and
	 * the rest still listed (exit 1 at the end) */
	int status = EXIT_OK;
	for (int i = 0; i < a.noperands; i++) {
		struct tir_err err = {0};
		char *s = tir_file_inspect(a.operands[i], &err);
		if (!s) {
			fflush(stdout);
			cli_print_err(&err);
			status = EXIT_PROGRAM;
			continue;
		}
		if (i)
			fputc('\n', stdout);
		/* --match: the two head lines, then the rows whose name matches */
		int line = 0;
		for (char *p = s; *p; line++) {
			char *eol = strchr(p, '\n');
			size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
			bool keep = !re || line < 2;
			if (!keep) {
				size_t nl = strcspn(p, " \n");
				char save = p[nl];
				p[nl] = 0;
				keep = tir_regex_match(re, p);
				p[nl] = save;
			}
			if (keep)
				fwrite(p, 1, len, stdout);
			p += len;
		}
		free(s);
	}
	tir_regex_free(re);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "tir: writing: %s\n", strerror(errno));
		return EXIT_PROGRAM;
	}
	return status;
}

/* tir help [COMMAND|ops] (its words are no flags) */
int cli_help(int argc, char **argv)
{
	if (argc < 2) {
		cli_print_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "ops")) {
		char *s = tir_ops_help();
		fputs(s ? s : "", stdout);
		free(s);
		return EXIT_OK;
	}
	const struct cli_cmd *c = cli_cmd_find(argv[1]);
	if (!c || c - cli_cmds == CMD_HELP || c - cli_cmds == CMD_VERSION) {
		fprintf(stderr, "tir: no help for '%s'\n", argv[1]);
		cli_print_usage(stderr);
		return EXIT_USAGE;
	}
	cli_print_help(stdout, (enum cli_cmd_id)(c - cli_cmds));
	return EXIT_OK;
}

int cli_version(int argc, char **argv)
{
	printf("tir %s\nvector path: %s\ngemm: %s\nblas: %s\ncaches: %s\n", TIR_VERSION, tir_vector_path(),
	       tir_gemm_info(), tir_blas_version(), tir_machine_info());
	return EXIT_OK;
}

/* A file that load or --input mapped, truncated while its value lives,
 * faults (SIGBUS) where the value is read past the file's new end, and so
 * does a program file cut short while its text is mapped (cli_read_file):
 * said plainly, exit 1, rather than a core dump.  Any other SIGBUS is left
 * to kill as usual. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	static const char msg[] = "tir: a file mapped by load or --input was truncated or replaced "
				  "in place while its value was in use (SIGBUS)\n";
	static const char text[] = "tir: the program file was truncated while it was read (SIGBUS)\n";
	const char *a = si ? si->si_addr : NULL, *m = text_map;
	if (m && a >= m && a < m + text_map_span) {
		ssize_t w = write(2, text, sizeof text - 1);
		(void)w;
		_exit(EXIT_PROGRAM);
	}
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
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	if (argc < 2) {
		cli_print_usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
		cmd = "help";
	else if (!strcmp(cmd, "version"))
		cmd = "--version";
	/* before any command runs a kernel: a misspelt path is never taken
	 * silently for the best one */
	struct tir_err err = {0};
	if (strcmp(cmd, "help") && (tir_vector_path_check(&err) || tir_gemm_check(&err))) {
		fprintf(stderr, "tir: %s\n", err.msg);
		return EXIT_USAGE;
	}
	const struct cli_cmd *c = cli_cmd_find(cmd);
	if (!c) {
		fprintf(stderr, "tir: unknown command '%s'\n", cmd);
		cli_print_usage(stderr);
		return EXIT_USAGE;
	}
	int status = c->main(argc - 1, argv + 1);
	tir_release_caches();
	return status;
}
