/*
 * import.c — `tir import MODEL.onnx`, and what `tir run` needs of ONNX
 * files: a model imported in memory, inputs read from TensorProto .pb
 * files, names spelt as the model spells them.  The importer is libtir's
 * (lib/onnx); here only files, flags and messages.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cli_parse_dim(char *s, struct tir_onnx_dim *d)
{
	char *eq = strrchr(s, '=');
	if (!eq || eq == s || !eq[1])
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(eq + 1, &end, 10);
	if (errno || *end || v < 0 || v > (1LL << 32))
		return false;
	*eq = 0;
	d->name = s;
	d->value = v;
	return true;
}

struct tir_regex *cli_regex(const char *what, const char *pattern)
{
	struct tir_err err = {0};
	struct tir_regex *re = tir_regex_new(pattern, &err);
	if (!re) {
		fprintf(stderr, "tir: %s: bad pattern: %s\n    %s\n    %*s^\n", what, err.msg, pattern,
			(int)(err.loc.col ? err.loc.col - 1 : 0), "");
	}
	return re;
}

static int make_dir(struct cli_onnx *st)
{
	if (st->dir[0])
		return 0;
	const char *t = getenv("TMPDIR");
	snprintf(st->dir, sizeof st->dir, "%s/tir-onnx-XXXXXX", t && *t && strlen(t) < 40 ? t : "/tmp");
	if (!mkdtemp(st->dir)) {
		fprintf(stderr, "tir: a temporary folder %s: %s\n", st->dir, strerror(errno));
		st->dir[0] = 0;
		return EXIT_PROGRAM;
	}
	return 0;
}

static char *temp_path(struct cli_onnx *st, const char *name)
{
	char **np = realloc(st->paths, (size_t)(st->npaths + 1) * sizeof *np);
	if (!np)
		return NULL;
	st->paths = np;
	size_t n = strlen(st->dir) + strlen(name) + 32;
	char *p = malloc(n);
	if (!p)
		return NULL;
	snprintf(p, n, "%s/%d-%s", st->dir, st->npaths, name);
	st->paths[st->npaths++] = p;
	return p;
}

int cli_onnx_inputs(struct cli_onnx *st, const char **names, const char **paths, int n,
		    struct tir_onnx_shape *shapes)
{
	for (int i = 0; i < n; i++) {
		struct tir_err err = {0};
		struct tir_onnx_shape *sh = shapes ? &shapes[i] : NULL;
		struct tir_onnx_shape tmp;
		if (!sh)
			sh = &tmp;
		sh->name = names[i];
		sh->onnx_type = 0;
		if (tir_path_is_pb(paths[i])) {
			if (make_dir(st))
				return EXIT_PROGRAM;
			char *npy = temp_path(st, "input.npy");
			if (!npy) {
				fprintf(stderr, "tir: out of memory\n");
				return EXIT_PROGRAM;
			}
			if (tir_onnx_pb_to_npy(paths[i], npy, &sh->rank, sh->shape, &sh->onnx_type, &err)) {
				cli_print_err(&err);
				return EXIT_PROGRAM;
			}
			paths[i] = npy;
			sh->path = npy;
		} else if (shapes) {
			sh->path = paths[i];
			enum tir_dtype dt;
			if (tir_load_type_from_file(NULL, paths[i], NULL, &dt, &sh->rank, sh->shape, &err)) {
				cli_print_err(&err);
				return EXIT_PROGRAM;
			}
		}
	}
	return EXIT_OK;
}

int cli_onnx_bf16_inputs(struct cli_onnx *st, const char *const *names, const char **paths, int n,
			 const struct tir_onnx_shape *shapes)
{
	for (int i = 0; st->imported && i < n; i++) {
		if (!shapes[i].onnx_type)
			continue;
		struct tir_err err = {0};
		char *f = temp_path(st, "input.safetensors");
		if (!f) {
			fprintf(stderr, "tir: out of memory\n");
			return EXIT_PROGRAM;
		}
		int rc = tir_onnx_bf16_input(&st->model, names[i], shapes[i].onnx_type, paths[i], f, &err);
		if (rc < 0) {
			cli_print_err(&err);
			return EXIT_PROGRAM;
		}
		if (!rc)
			paths[i] = f;
	}
	return EXIT_OK;
}

struct tir_program *cli_onnx_load(struct cli_onnx *st, const char *path, const struct tir_onnx_opts *o,
				  int nremotes, int *status, double *parse_ms)
{
	*status = EXIT_PROGRAM;
	if (make_dir(st))
		return NULL;
	char *w = temp_path(st, "weights.safetensors");
	if (!w) {
		fprintf(stderr, "tir: out of memory\n");
		return NULL;
	}
	struct tir_onnx_opts opts = *o;
	opts.weights_file = w;
	opts.weights_ref = w;
	struct tir_err err = {0};
	double t0 = tir_now_ms();
	if (tir_onnx_import(path, &opts, &st->model, &err)) {
		cli_print_err(&err);
		return NULL;
	}
	st->imported = true;
	struct tir_program *p = tir_program_new();
	if (!p) {
		fprintf(stderr, "tir: out of memory\n");
		return NULL;
	}
	tir_program_set_loader(p, tir_load_type_from_file, NULL);
	if (nremotes >= 0)
		tir_program_set_remotes(p, nremotes);
	int rc = tir_program_parse(p, path, st->model.text, strlen(st->model.text), 0);
	if (parse_ms)
		*parse_ms = tir_now_ms() - t0;
	if (rc) {
		cli_print_diags(p);
		tir_program_free(p);
		return NULL;
	}
	*status = EXIT_OK;
	return p;
}

const char *cli_onnx_map(const struct cli_onnx *st, const char *name)
{
	const char *t = st->imported ? tir_onnx_name(&st->model, name) : NULL;
	return t ? t : name;
}

void cli_onnx_done(struct cli_onnx *st)
{
	for (int i = 0; i < st->npaths; i++) {
		unlink(st->paths[i]);
		free(st->paths[i]);
	}
	free(st->paths);
	if (st->dir[0])
		rmdir(st->dir);
	if (st->imported)
		tir_onnx_model_free(&st->model);
	memset(st, 0, sizeof *st);
}

/* model.onnx -> model.tir, and FILE.tir -> FILE.safetensors */
static char *with_ext(const char *path, const char *old, const char *ext)
{
	size_t n = strlen(path), k = strlen(old);
	if (n > k && !strcmp(path + n - k, old))
		n -= k;
	char *r = malloc(n + strlen(ext) + 1);
	if (r) {
		memcpy(r, path, n);
		strcpy(r + n, ext);
	}
	return r;
}

int cli_import(int argc, char **argv)
{
	/* -o is --output */
	char **av = calloc((size_t)argc + 1, sizeof *av);
	struct tir_onnx_dim *dims = calloc((size_t)argc + 1, sizeof *dims);
	struct tir_regex **res = calloc((size_t)argc + 1, sizeof *res);
	const char **repl = calloc((size_t)argc + 1, sizeof *repl);
	char *out = NULL, *weights = NULL;
	int status = EXIT_OK, ndims = 0, nres = 0;
	struct tir_onnx_model model = {0};
	if (!av || !dims || !res || !repl) {
		fprintf(stderr, "tir: out of memory\n");
		status = EXIT_PROGRAM;
		goto done;
	}
	for (int i = 0; i < argc; i++)
		av[i] = !strcmp(argv[i], "-o") ? (char *)"--output" : argv[i];
	const char *output = NULL;
	struct cli_args a;
	char *val;
	int f;
	cli_args_begin(&a, CMD_IMPORT, argc, av);
	while ((f = cli_args_next(&a, &val)) >= 0) {
		if (f == FLAG_IMPORT_OUTPUT) {
			output = val;
		} else if (f == FLAG_IMPORT_DIM) {
			if (!cli_parse_dim(val, &dims[ndims++])) {
				status = cli_misuse(CMD_IMPORT, "--dim wants NAME=N, got '%s'", val);
				goto done;
			}
		} else if (f == FLAG_IMPORT_RENAME) {
			char *eq = strrchr(val, '=');
			if (!eq || eq == val) {
				status = cli_misuse(CMD_IMPORT, "--rename wants REGEX=REPLACEMENT, got '%s'", val);
				goto done;
			}
			*eq = 0;
			repl[nres] = eq + 1;
			if (!(res[nres] = cli_regex("--rename", val))) {
				status = EXIT_USAGE;
				goto done;
			}
			nres++;
		}
	}
	if (f == CLI_ARGS_STOP) {
		status = a.exit;
		goto done;
	}
	out = output ? strdup(output) : with_ext(a.operand, ".onnx", ".tir");
	weights = out ? with_ext(out, ".tir", ".safetensors") : NULL;
	if (!out || !weights) {
		fprintf(stderr, "tir: out of memory\n");
		status = EXIT_PROGRAM;
		goto done;
	}
	struct tir_onnx_opts o = {.dims = dims, .ndims = ndims, .renames = res, .replacements = repl,
				  .nrenames = nres, .weights_file = weights};
	struct tir_err err = {0};
	if (tir_onnx_import(a.operand, &o, &model, &err)) {
		cli_print_err(&err);
		status = EXIT_PROGRAM;
		goto done;
	}
	FILE *fp = fopen(out, "w");
	bool ok = fp && fputs(model.text, fp) >= 0;
	if (fp && fclose(fp) != 0)
		ok = false;
	if (!ok) {
		fprintf(stderr, "tir import: %s: %s\n", out, strerror(errno));
		status = EXIT_PROGRAM;
	}
done:
	tir_onnx_model_free(&model);
	for (int i = 0; i < nres; i++)
		tir_regex_free(res[i]);
	free(res);
	free(repl);
	free(dims);
	free(av);
	free(out);
	free(weights);
	return status;
}
