/*
 * run.c — `tir run`: its options, the inputs, the run, the results on
 * stdout and the timing line on stderr.  Exit statuses as cli.h says.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pair {
	const char *name, *path;
};

struct run_opts {
	const char *file;
	struct pair *inputs, *saves;
	int ninputs, nsaves;
	struct tir_onnx_dim *dims;   /* --dim, for an ONNX model */
	int ndims;
	const char *remote;
	const char *trace;       /* --trace FILE.json */
	const char *gemm;        /* --gemm tir|openblas */
	bool no_fuse, explain, profile, full, quiet, local;
	size_t max_memory;       /* --max-memory; SIZE_MAX: not given (the default) */
	int threads, precision;
	enum cli_progress_mode progress;
};

/* NAME=FILE */
static bool split_pair(char *s, struct pair *p)
{
	char *eq = strchr(s, '=');
	if (!eq || eq == s || !eq[1])
		return false;
	*eq = 0;
	p->name = s;
	p->path = eq + 1;
	return true;
}

static bool parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

bool cli_parse_bytes(const char *s, size_t *v)
{
	char *end;
	errno = 0;
	if (!*s || !strchr("0123456789", *s))
		return false;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	int shift = 0;
	const char *at = *end ? strchr("KMGT", *end & ~0x20) : NULL;
	if (at) {
		shift = 10 * (int)(at - "KMGT" + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end || (shift && n > (SIZE_MAX >> shift)) || n > SIZE_MAX)
		return false;
	*v = (size_t)n << shift;
	return true;
}

bool cli_save_format_ok(const char *path)
{
	size_t n = strlen(path);
	return tir_path_is_safetensors(path) || (n > 4 && !strcmp(path + n - 4, ".npy"));
}

struct save_check {
	const char *name;
	char type[160];
};

static void find_var(void *ud, const struct tir_var *v)
{
	struct save_check *c = ud;
	if (!strcmp(v->name, c->name))
		snprintf(c->type, sizeof c->type, "%s", v->type);
}

int cli_save_check(const struct tir_program *p, const char *name, const char *path, const char *what)
{
	if (!tir_program_binds(p, name)) {
		const char *sug = tir_program_suggest(p, name, strlen(name));
		fprintf(stderr, "tir: %s %s=%s: no value named '%s' in the program%s%s%s\n", what, name, path, name,
			sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
		return EXIT_PROGRAM;
	}
	struct save_check c = {name, ""};
	tir_program_vars(p, find_var, &c);
	if (!tir_path_is_safetensors(path) && !strncmp(c.type, "bf16", 4)) {
		fprintf(stderr, "tir: %s %s=%s: %s is %s: bf16 has no .npy dtype (NumPy has none); save it to a "
			".safetensors file, or cast(%s, f32) first\n", what, name, path, name, c.type, name);
		return EXIT_PROGRAM;
	}
	/* the folder must exist and take a new file (written as PATH.tmp, then renamed) */
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	struct stat st;
	const char *why = NULL;
	if (stat(dir, &st) != 0)
		why = errno == ENOENT ? "no such folder" : strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a folder";
	else if (access(dir, W_OK | X_OK) != 0)
		why = "the folder is not writable";
	else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		why = "a folder of that name is there";
	if (why) {
		bool folder = why[0] != 'a'; /* the folder's fault: name it */
		fprintf(stderr, "tir: %s %s=%s: %s%s%s\n", what, name, path, why, folder && slash ? ": " : "",
			folder && slash ? dir : "");
		return EXIT_PROGRAM;
	}
	return EXIT_OK;
}

/* 0, or an exit status to return now (-1: help was printed) */
static int parse_args(int argc, char **argv, struct run_opts *o)
{
	o->precision = 6;
	o->max_memory = SIZE_MAX;
	o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
	o->saves = calloc((size_t)argc + 1, sizeof *o->saves);
	o->dims = calloc((size_t)argc + 1, sizeof *o->dims);
	if (!o->inputs || !o->saves || !o->dims)
		return cli_misuse(CMD_RUN, "%s", "out of memory");
	struct cli_args a;
	char *val; /* in argv: split_pair cuts it */
	int f;
	cli_args_begin(&a, CMD_RUN, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0) {
		switch (f) {
		case FLAG_RUN_INPUT:
			if (!split_pair(val, &o->inputs[o->ninputs++]))
				return cli_misuse(CMD_RUN, "--input wants NAME=FILE, got '%s'", val);
			break;
		case FLAG_RUN_SAVE: {
			if (!split_pair(val, &o->saves[o->nsaves++]))
				return cli_misuse(CMD_RUN, "--save wants NAME=FILE.npy or NAME=FILE.safetensors, got '%s'", val);
			const struct pair *sv = &o->saves[o->nsaves - 1];
			if (!cli_save_format_ok(sv->path))
				return cli_misuse(CMD_RUN, "--save %s=%s: the file's name must end in .npy or "
					     ".safetensors (the format written)", sv->name, sv->path);
			for (int j = 0; j < o->nsaves - 1; j++) {
				if (strcmp(o->saves[j].path, sv->path))
					continue;
				if (!tir_path_is_safetensors(sv->path))
					return cli_misuse(CMD_RUN, "--save: %s is named twice; a .npy file holds one tensor "
						     "(a name ending in .safetensors holds several)", sv->path);
				if (!strcmp(o->saves[j].name, sv->name))
					return cli_misuse(CMD_RUN, "--save: %s=%s is given twice", sv->name, sv->path);
			}
			break;
		}
		case FLAG_RUN_REMOTE:
			o->remote = val;
			break;
		case FLAG_RUN_TRACE:
			o->trace = val;
			break;
		case FLAG_RUN_THREADS:
			if (!parse_int(val, 1, 1024, &o->threads))
				return cli_misuse(CMD_RUN, "--threads wants a number from 1 to 1024, got '%s'", val);
			break;
		case FLAG_RUN_GEMM:
			if (strcmp(val, "tir") && strcmp(val, "openblas"))
				return cli_misuse(CMD_RUN, "--gemm wants tir or openblas, got '%s'", val);
			o->gemm = val;
			break;
		case FLAG_RUN_PRECISION:
			if (!parse_int(val, 1, 17, &o->precision))
				return cli_misuse(CMD_RUN, "--precision wants a number from 1 to 17, got '%s'", val);
			break;
		case FLAG_RUN_PROGRESS:
			if (!cli_progress_parse(val, &o->progress))
				return cli_misuse(CMD_RUN, "--progress wants auto, always or never, got '%s'", val);
			break;
		case FLAG_RUN_MAX_MEMORY:
			if (!cli_parse_bytes(val, &o->max_memory))
				return cli_misuse(CMD_RUN, "--max-memory wants BYTES (e.g. 512M, 8G; 0: no limit), got '%s'",
						  val);
			break;
		case FLAG_RUN_LOCAL:
			o->local = true;
			break;
		case FLAG_RUN_NO_FUSE:
			o->no_fuse = true;
			break;
		case FLAG_RUN_EXPLAIN:
			o->explain = true;
			break;
		case FLAG_RUN_PROFILE:
			o->profile = true;
			break;
		case FLAG_RUN_FULL:
			o->full = true;
			break;
		case FLAG_RUN_QUIET:
			o->quiet = true;
			break;
		case FLAG_RUN_DIM:
			if (!cli_parse_dim(val, &o->dims[o->ndims++]))
				return cli_misuse(CMD_RUN, "--dim wants NAME=N, got '%s'", val);
			break;
		default:
			break;
		}
	}
	if (f == CLI_ARGS_STOP)
		return a.exit == EXIT_OK ? -1 : a.exit;
	o->file = a.operand;
	return 0;
}

/* With --remote, SIGINT and SIGTERM stop the run (the wait for the
 * server's reply is cut short, which stops the batch there too) instead of
 * killing tir, so that the session is deleted on the way out.  A second
 * signal kills as usual (SA_RESETHAND). */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void catch_signals(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cli_run(int argc, char **argv)
{
	struct run_opts o = {0};
	int status = parse_args(argc, argv, &o);
	struct tir_program *p = NULL;
	struct tir_exec *x = NULL;
	struct cli_remotes remotes = {0};
	const char **names = NULL;
	struct cli_onnx onnx = {0};
	const char **in_names = NULL, **in_paths = NULL;
	struct tir_onnx_shape *shapes = NULL;
	if (status) {
		status = status < 0 ? EXIT_OK : status;
		goto out;
	}
	if (o.remote && cli_remotes_count(o.remote) > CLI_MAX_REMOTES) {
		fprintf(stderr, "tir run: --remote names %d servers; at most %d at once\n",
			cli_remotes_count(o.remote), CLI_MAX_REMOTES);
		status = EXIT_USAGE;
		goto out;
	}
	if (o.threads)
		tir_set_threads(o.threads);
	if (o.gemm)
		tir_set_gemm(o.gemm, NULL);
	/* the tensors of a run here; a --remote run's are the server's */
	tir_set_max_memory(o.max_memory == SIZE_MAX ? tir_default_max_memory() : o.max_memory);
	/* first the remotes: a group's address stands for all its ranks, and
	 * the program is checked against as many devices as they are */
	if (o.remote && !o.local && (status = cli_remotes_open(&remotes, o.remote, false)))
		goto out;
	double parse_ms = 0;
	/* --local: remote:0, ... are CPU devices here, as many as --remote
	 * names (nothing is opened) or as the program names */
	int nlocal = o.remote ? cli_remotes_count(o.remote) : CLI_LOCAL_DEVICES;
	/* inputs from TensorProto files, and an ONNX model, which is imported
	 * here and named as the model names its tensors */
	in_names = calloc((size_t)o.ninputs + 1, sizeof *in_names);
	in_paths = calloc((size_t)o.ninputs + 1, sizeof *in_paths);
	shapes = calloc((size_t)o.ninputs + 1, sizeof *shapes);
	if (!in_names || !in_paths || !shapes) {
		fprintf(stderr, "tir: out of memory\n");
		status = EXIT_PROGRAM;
		goto out;
	}
	for (int i = 0; i < o.ninputs; i++) {
		in_names[i] = o.inputs[i].name;
		in_paths[i] = o.inputs[i].path;
	}
	bool is_onnx = tir_path_is_onnx(o.file);
	if ((status = cli_onnx_inputs(&onnx, in_names, in_paths, o.ninputs, is_onnx ? shapes : NULL)))
		goto out;
	if (is_onnx) {
		struct tir_onnx_opts io = {.dims = o.dims, .ndims = o.ndims, .inputs = shapes, .ninputs = o.ninputs};
		if (o.local && nlocal == CLI_LOCAL_DEVICES)
			nlocal = 1; /* a model names no devices */
		p = cli_onnx_load(&onnx, o.file, &io, o.local ? nlocal : remotes.n, &status, &parse_ms);
		if (p && (status = cli_onnx_bf16_inputs(&onnx, in_names, in_paths, o.ninputs, shapes)))
			goto out;
		for (int i = 0; p && i < o.ninputs; i++)
			in_names[i] = cli_onnx_map(&onnx, in_names[i]);
	} else {
		p = cli_load_program(o.file, o.local ? nlocal : remotes.n, &status, &parse_ms);
	}
	if (!p)
		goto out;
	if (o.local && nlocal == CLI_LOCAL_DEVICES)
		nlocal = status;
	status = EXIT_OK;
	/* every --save checked before anything runs: no run wasted, no
	 * file of several written and the next refused */
	for (int i = 0; i < o.nsaves; i++)
		if ((status = cli_save_check(p, cli_onnx_map(&onnx, o.saves[i].name), o.saves[i].path, "--save")))
			goto out;
	x = tir_exec_new(p);
	names = calloc((size_t)o.nsaves + 1, sizeof *names);
	if (!x || !names) {
		fprintf(stderr, "tir: out of memory\n");
		status = EXIT_PROGRAM;
		goto out;
	}
	struct tir_err err = {0};
	if (o.local && tir_exec_set_local(x, nlocal, &err)) {
		cli_print_err(&err);
		status = EXIT_PROGRAM;
		goto out;
	}
	if (o.remote && !o.local) {
		if (tir_exec_set_remotes(x, remotes.r, remotes.n, &err)) {
			cli_print_err(&err);
			status = EXIT_PROGRAM;
			goto out;
		}
		tir_exec_set_interrupt(x, &interrupted);
		catch_signals();
	}
	tir_exec_set_fuse(x, !o.no_fuse);
	tir_exec_set_once(x, true);
	tir_exec_set_profile(x, o.profile);
	tir_exec_set_trace(x, o.trace != NULL);
	for (int i = 0; i < o.ninputs; i++) {
		if (tir_exec_input_file(x, in_names[i], in_paths[i], &err)) {
			cli_print_err(&err);
			status = EXIT_PROGRAM;
			goto out;
		}
	}
	for (int i = 0; i < o.nsaves; i++)
		names[i] = cli_onnx_map(&onnx, o.saves[i].name);
	struct cli_progress *prog = cli_progress_start(x, o.progress);
	int rc = tir_exec_run(x, 0, names, o.nsaves, &err);
	cli_progress_stop(prog, x);
	if (o.explain)
		fputs(tir_exec_explain(x), stderr);
	if (o.profile && !rc) {
		char *t = tir_exec_profile(x);
		if (t)
			fputs(t, stderr);
		free(t);
		if (remotes.n) {
			struct tir_remote_stats net;
			cli_remotes_stats(&remotes, &net);
			cli_print_blobs(&net);
		}
	}
	if (rc && err.code == TIR_EINTERRUPT) {
		fprintf(stderr, "tir: interrupted\n");
		status = 128 + (interrupted ? interrupted : SIGINT); /* 130, or 143 for SIGTERM */
		goto out;
	}
	if (rc) {
		cli_print_err(&err);
		status = err.code == TIR_ENET ? EXIT_REMOTE : EXIT_PROGRAM;
		goto out;
	}
	for (size_t i = 0; i < tir_exec_nresults(x); i++) {
		char *s = tir_tensor_format(tir_exec_result(x, i), tir_exec_header(x, i), o.precision, o.full);
		if (!s) {
			fprintf(stderr, "tir: out of memory formatting a result\n");
			status = EXIT_PROGRAM;
			goto out;
		}
		fputs(s, stdout);
		free(s);
	}
	/* one file per path: a .safetensors file gets every value saved to it */
	for (int i = 0; i < o.nsaves; i++) {
		bool done = false;
		for (int j = 0; j < i && !done; j++)
			done = !strcmp(o.saves[j].path, o.saves[i].path);
		if (done)
			continue;
		const char *fnames[o.nsaves];
		const struct tir_tensor *fts[o.nsaves];
		int n = 0;
		for (int j = i; j < o.nsaves; j++) {
			if (strcmp(o.saves[j].path, o.saves[i].path))
				continue;
			fnames[n] = o.saves[j].name;
			fts[n++] = tir_exec_named(x, (size_t)j);
		}
		/* an output the model declares unsigned: in that type */
		int urc = n == 1 && is_onnx ? tir_onnx_save_unsigned(&onnx.model, fnames[0], fts[0], o.saves[i].path,
								     &err) : 1;
		if (urc < 0 || (urc > 0 && tir_tensors_save(o.saves[i].path, fnames, fts, n, &err))) {
			cli_print_err(&err);
			status = EXIT_PROGRAM;
			goto out;
		}
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "tir: writing results: %s\n", strerror(errno));
		status = EXIT_PROGRAM;
		goto out;
	}
	if (o.trace) {
		char *json = tir_exec_trace_json(x, parse_ms);
		FILE *f = json ? fopen(o.trace, "w") : NULL;
		bool ok = f && fputs(json, f) >= 0 && fputc('\n', f) != EOF;
		if (f && fclose(f) != 0)
			ok = false;
		free(json);
		if (!ok) {
			struct tir_err je = {0};
			fprintf(stderr, "tir: --trace %s: %s\n", o.trace,
				json ? strerror(errno) : tir_json_ready(&je) ? je.msg : "out of memory");
			status = EXIT_PROGRAM;
			goto out;
		}
	}
	if (!o.quiet) {
		struct tir_remote_stats net;
		cli_remotes_stats(&remotes, &net);
		cli_print_timing(parse_ms, tir_exec_stats(x), remotes.n ? &net : NULL);
	}
out:
	free(names);
	free(in_names);
	free(in_paths);
	free(shapes);
	free(o.dims);
	free(o.inputs);
	free(o.saves);
	tir_exec_free(x);
	cli_remotes_close(&remotes); /* after x, which borrows them */
	cli_program_free(p);
	cli_onnx_done(&onnx);
	return status;
}
