/*
 * unit_util.h — what several unit tests share besides check.h: a file read
 * whole, and two tensors compared bit for bit.
 */
#ifndef TIR_UNIT_UTIL_H
#define TIR_UNIT_UTIL_H

#include "exec/exec.h"
#include "ir/ir.h"
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file at path, NUL-terminated, its length in *len; NULL when it
 * cannot be read. */
static inline char *unit_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		rewind(f);
		s = n >= 0 ? malloc((size_t)n + 1) : NULL;
		if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
			free(s);
			s = NULL;
		}
		if (s) {
			s[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return s;
}

/* fn(dir, name, text, len) for each program in dir (its .tir files, but
 * not the err-* ones, which must fail), run from dir (a program's load
 * paths are its own directory's) with the program's text; false when dir
 * cannot be read or left. */
static inline bool unit_each_program(const char *dir,
				     void (*fn)(const char *dir, const char *name, const char *text, size_t len))
{
	char cwd[4096];
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool ok = getcwd(cwd, sizeof cwd) != NULL;
	for (struct dirent *e; ok && (e = readdir(d));) {
		size_t n = strlen(e->d_name), len = 0;
		if (n <= 4 || strcmp(e->d_name + n - 4, ".tir") || !strncmp(e->d_name, "err-", 4))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		char *text = unit_slurp(path, &len);
		if (text && !chdir(dir)) {
			fn(dir, e->d_name, text, len);
			ok = !chdir(cwd);
		}
		free(text);
	}
	closedir(d);
	return ok;
}

/* bench/statements.py's program of n statements into s: x = cast(0.3,
 * f32), then n ops on scalars in groups of five (mul by 0.5, add 0.25,
 * tanh, mul by the group's input, sub 0.125), named t1, t2, ... and the
 * last y (bench/peers.py tiny_lines). */
static inline void unit_statements(struct tir_str *s, int n)
{
	tir_str_addf(s, "x = cast(0.3, f32)\n");
	for (int i = 1; i <= n; i++) {
		char name[32], prev[32], in[32];
		snprintf(name, sizeof name, i == n ? "y" : "t%d", i);
		snprintf(prev, sizeof prev, i == 1 ? "x" : "t%d", i - 1);
		snprintf(in, sizeof in, i <= 5 ? "x" : "t%d", (i - 1) / 5 * 5); /* the group's input */
		switch ((i - 1) % 5) {
		case 0: tir_str_addf(s, "%s = %s * 0.5\n", name, prev); break;
		case 1: tir_str_addf(s, "%s = %s + 0.25\n", name, prev); break;
		case 2: tir_str_addf(s, "%s = tanh(%s)\n", name, prev); break;
		case 3: tir_str_addf(s, "%s = %s * %s\n", name, prev, in); break;
		default: tir_str_addf(s, "%s = %s - 0.125\n", name, prev); break;
		}
	}
}

/* a and b hold the same bits in the same dtype, element by element (any
 * layout: each is made contiguous first). */
static inline bool unit_same_bits(const struct tir_tensor *a, const struct tir_tensor *b)
{
	if (!a || !b || a->dtype != b->dtype || tir_tensor_numel(a) != tir_tensor_numel(b))
		return false;
	struct tir_tensor ca = {0}, cb = {0};
	struct tir_err err = {0};
	bool ok = !tir_tensor_convert(a, a->dtype, &ca, &err) && !tir_tensor_convert(b, b->dtype, &cb, &err) &&
		  !memcmp(tir_tensor_data(&ca), tir_tensor_data(&cb),
			  (size_t)tir_tensor_numel(a) * tir_dtype_size(a->dtype));
	tir_tensor_release(&ca);
	tir_tensor_release(&cb);
	return ok;
}

#endif
