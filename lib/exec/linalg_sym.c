/*
 * linalg_sym.c — PROVISIONAL: tir_blas_sym for linalg.c until the branch
 * that writes it in lib/exec/blas.c (OpenBLAS opened lazily, on one
 * thread) is merged; at that merge this file is deleted.  Here tir links
 * OpenBLAS, so its symbols are already in the process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

void *tir_blas_sym(const char *name, char **err);

void *tir_blas_sym(const char *name, char **err)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	if (!p && err)
		*err = (char *)"not found in the loaded OpenBLAS";
	return p;
}
