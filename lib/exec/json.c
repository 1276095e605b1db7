/*
 * json.c — loading jansson at its first use (json.h says why): by its
 * soname (the build's, from pkg-config), once per process, its functions
 * into tir_json_fns.
 */
#include "exec.h"
#include "json.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef TIR_JANSSON_SONAME
#define TIR_JANSSON_SONAME "libjansson.so.4"
#endif

struct tir_json_fns tir_json_fns;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char why[512];

static void load(void)
{
	void *h = dlopen(TIR_JANSSON_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, sizeof why, "jansson (%s) is not installed: %s", TIR_JANSSON_SONAME, dlerror());
		return;
	}
	/* the names before json.h's macros: what dlsym looks up */
#define X(f)                                                                 \
	if (!(*(void **)&tir_json_fns.f = dlsym(h, #f))) {                   \
		snprintf(why, sizeof why, "%s has no function %s", TIR_JANSSON_SONAME, #f); \
		return;                                                      \
	}
#undef json_array
#undef json_array_append_new
#undef json_array_get
#undef json_array_size
#undef json_delete
#undef json_dumps
#undef json_integer
#undef json_integer_value
#undef json_loadb
#undef json_object
#undef json_object_get
#undef json_object_iter
#undef json_object_iter_key
#undef json_object_iter_next
#undef json_object_iter_value
#undef json_object_key_to_iter
#undef json_object_set_new
#undef json_object_size
#undef json_pack
#undef json_real
#undef json_string
#undef json_string_value
	TIR_JSON_FNS(X)
#undef X
	loaded = true;
}

int tir_json_ready(struct tir_err *err)
{
	pthread_once(&once, load);
	return loaded ? 0 : tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s", why);
}
