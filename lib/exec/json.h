/*
 * json.h — jansson for libtir's own JSON (safetensors headers, --trace's
 * events, a remote's trace), loaded at its first use (json.c) rather than
 * linked: linked, it was opened, mapped and relocated at every start of
 * tir, a one-line `tir run` too.  Include this instead of <jansson.h>:
 * every jansson function called is a pointer in tir_json_fns, under the
 * function's own name (the macros below; json_decref is redone over
 * them).  Before any call: tir_json_ready (lib/tir.h), which loads it once
 * and says why when it will not.  (lib/net links jansson as it is: that
 * object is itself loaded only when used.)
 */
#ifndef TIR_EXEC_JSON_H
#define TIR_EXEC_JSON_H

#include <jansson.h>

#define TIR_JSON_FNS(X)                                                      \
	X(json_array)                                                        \
	X(json_array_append_new)                                             \
	X(json_array_get)                                                    \
	X(json_array_size)                                                   \
	X(json_delete)                                                       \
	X(json_dumps)                                                        \
	X(json_integer)                                                      \
	X(json_integer_value)                                                \
	X(json_loadb)                                                        \
	X(json_object)                                                       \
	X(json_object_get)                                                   \
	X(json_object_iter)                                                  \
	X(json_object_iter_key)                                              \
	X(json_object_iter_next)                                             \
	X(json_object_iter_value)                                            \
	X(json_object_key_to_iter)                                           \
	X(json_object_set_new)                                               \
	X(json_object_size)                                                  \
	X(json_pack)                                                         \
	X(json_real)                                                         \
	X(json_string)                                                       \
	X(json_string_value)

extern struct tir_json_fns {
#define X(f) __typeof__(f) *f;
	TIR_JSON_FNS(X)
#undef X
} tir_json_fns;

#define json_array (*tir_json_fns.json_array)
#define json_array_append_new (*tir_json_fns.json_array_append_new)
#define json_array_get (*tir_json_fns.json_array_get)
#define json_array_size (*tir_json_fns.json_array_size)
#define json_delete (*tir_json_fns.json_delete)
#define json_dumps (*tir_json_fns.json_dumps)
#define json_integer (*tir_json_fns.json_integer)
#define json_integer_value (*tir_json_fns.json_integer_value)
#define json_loadb (*tir_json_fns.json_loadb)
#define json_object (*tir_json_fns.json_object)
#define json_object_get (*tir_json_fns.json_object_get)
#define json_object_iter (*tir_json_fns.json_object_iter)
#define json_object_iter_key (*tir_json_fns.json_object_iter_key)
#define json_object_iter_next (*tir_json_fns.json_object_iter_next)
#define json_object_iter_value (*tir_json_fns.json_object_iter_value)
#define json_object_key_to_iter (*tir_json_fns.json_object_key_to_iter)
#define json_object_set_new (*tir_json_fns.json_object_set_new)
#define json_object_size (*tir_json_fns.json_object_size)
#define json_pack (*tir_json_fns.json_pack)
#define json_real (*tir_json_fns.json_real)
#define json_string (*tir_json_fns.json_string)
#define json_string_value (*tir_json_fns.json_string_value)

/* jansson.h's json_decref calls the linked json_delete: the same over the
 * pointer */
static inline void tir_json_decref(json_t *j)
{
	if (j && j->refcount != (size_t)-1 && JSON_INTERNAL_DECREF(j) == 0)
		json_delete(j);
}
#define json_decref tir_json_decref

#endif
