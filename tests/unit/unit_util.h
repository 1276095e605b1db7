/*
 * unit_util.h — what several unit tests share besides check.h: a file read
 * whole, and two tensors compared bit for bit.
 */
#ifndef TIR_UNIT_UTIL_H
#define TIR_UNIT_UTIL_H

#include "exec/exec.h"
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* fn(dir, name) for each program in dir: its .tir files, but not the
 * err-* ones (programs that must fail); false when dir cannot be read. */
static inline bool unit_each_program(const char *dir, void (*fn)(const char *dir, const char *name))
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	for (struct dirent *e; (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".tir") && strncmp(e->d_name, "err-", 4))
			fn(dir, e->d_name);
	}
	closedir(d);
	return true;
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
