/*
 * libs.c — loading protobuf-c and PCRE2 at their first use (libs.h says
 * why): each by its soname (the build's, from pkg-config), once per
 * process, its functions into ox_fns.
 */
#include "libs.h"
#include "../ir/ir.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef TIR_PROTOBUF_SONAME
#define TIR_PROTOBUF_SONAME "libprotobuf-c.so.1"
#endif
#ifndef TIR_PCRE2_SONAME
#define TIR_PCRE2_SONAME "libpcre2-8.so.0"
#endif

/* the names before libs.h's macros: what dlsym looks up */
#undef protobuf_c_message_free_unpacked
#undef protobuf_c_message_get_packed_size
#undef protobuf_c_message_pack
#undef protobuf_c_message_pack_to_buffer
#undef protobuf_c_message_unpack
#undef pcre2_code_free_8
#undef pcre2_compile_8
#undef pcre2_get_error_message_8
#undef pcre2_jit_compile_8
#undef pcre2_match_8
#undef pcre2_match_data_create_from_pattern_8
#undef pcre2_match_data_free_8
#undef pcre2_substitute_8

struct ox_fns ox_fns;

struct lazy_lib {
	pthread_once_t once;
	bool ok;
	char why[512];
};

static struct lazy_lib protobuf = {.once = PTHREAD_ONCE_INIT};
static struct lazy_lib pcre2 = {.once = PTHREAD_ONCE_INIT};

/* dlopen soname for what; NULL with why filled when it will not load. */
static void *open_lib(struct lazy_lib *l, const char *soname, const char *what)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		snprintf(l->why, sizeof l->why, "%s needs %s, which is not installed: %s", what, soname,
			 dlerror());
	return h;
}

#define LOAD_FN(l, h, soname, f)                                             \
	if (!(*(void **)&ox_fns.f = dlsym(h, #f))) {                         \
		snprintf((l)->why, sizeof (l)->why, "%s has no function %s", soname, #f); \
		return;                                                      \
	}

static void load_protobuf(void)
{
	void *h = open_lib(&protobuf, TIR_PROTOBUF_SONAME, "reading ONNX");
	if (!h)
		return;
#define X(f) LOAD_FN(&protobuf, h, TIR_PROTOBUF_SONAME, f)
	OX_PROTOBUF_FNS(X)
#undef X
	protobuf.ok = true;
}

static void load_pcre2(void)
{
	void *h = open_lib(&pcre2, TIR_PCRE2_SONAME, "a pattern");
	if (!h)
		return;
#define X(f) LOAD_FN(&pcre2, h, TIR_PCRE2_SONAME, f)
	OX_PCRE2_FNS(X)
#undef X
	pcre2.ok = true;
}

static int ready(struct lazy_lib *l, void (*load)(void), struct tir_err *err)
{
	pthread_once(&l->once, load);
	if (l->ok)
		return 0;
	return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s", l->why);
}

int ox_protobuf(struct tir_err *err)
{
	return ready(&protobuf, load_protobuf, err);
}

int ox_pcre2(struct tir_err *err)
{
	return ready(&pcre2, load_pcre2, err);
}
