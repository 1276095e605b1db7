/*
 * libs.h — protobuf-c and PCRE2, which only lib/onnx uses (reading a model;
 * the patterns of tir import --rename, tir inspect --match, the REPL's
 * .vars), loaded at their first use (libs.c) rather than linked: linked,
 * each was opened, mapped and relocated at every start of tir, a one-line
 * `tir run` too.  Every function of theirs called here is a pointer in
 * ox_fns, under the function's own name (the macros below); the generated
 * onnx.pb-c.c is compiled with this header included first, so that its
 * calls go through the same pointers.  Before any call: ox_protobuf or
 * ox_pcre2, which load the library once and say why when it will not.
 */
#ifndef TIR_ONNX_LIBS_H
#define TIR_ONNX_LIBS_H

#include <protobuf-c/protobuf-c.h>
#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

struct tir_err;

#define OX_PROTOBUF_FNS(X)                                                   \
	X(protobuf_c_message_free_unpacked)                                  \
	X(protobuf_c_message_get_packed_size)                                \
	X(protobuf_c_message_pack)                                           \
	X(protobuf_c_message_pack_to_buffer)                                 \
	X(protobuf_c_message_unpack)
#define OX_PCRE2_FNS(X)                                                      \
	X(pcre2_code_free_8)                                                 \
	X(pcre2_compile_8)                                                   \
	X(pcre2_get_error_message_8)                                         \
	X(pcre2_jit_compile_8)                                               \
	X(pcre2_match_8)                                                     \
	X(pcre2_match_data_create_from_pattern_8)                            \
	X(pcre2_match_data_free_8)                                           \
	X(pcre2_substitute_8)

extern struct ox_fns {
#define X(f) __typeof__(f) *f;
	OX_PROTOBUF_FNS(X)
	OX_PCRE2_FNS(X)
#undef X
} ox_fns;

/* 0 once protobuf-c (PCRE2) is loaded, else -TIR_EUNSUPPORTED with why in
 * err (err may be NULL). */
int ox_protobuf(struct tir_err *err);
int ox_pcre2(struct tir_err *err);

#define protobuf_c_message_free_unpacked (*ox_fns.protobuf_c_message_free_unpacked)
#define protobuf_c_message_get_packed_size (*ox_fns.protobuf_c_message_get_packed_size)
#define protobuf_c_message_pack (*ox_fns.protobuf_c_message_pack)
#define protobuf_c_message_pack_to_buffer (*ox_fns.protobuf_c_message_pack_to_buffer)
#define protobuf_c_message_unpack (*ox_fns.protobuf_c_message_unpack)
#define pcre2_code_free_8 (*ox_fns.pcre2_code_free_8)
#define pcre2_compile_8 (*ox_fns.pcre2_compile_8)
#define pcre2_get_error_message_8 (*ox_fns.pcre2_get_error_message_8)
#define pcre2_jit_compile_8 (*ox_fns.pcre2_jit_compile_8)
#define pcre2_match_8 (*ox_fns.pcre2_match_8)
#define pcre2_match_data_create_from_pattern_8 (*ox_fns.pcre2_match_data_create_from_pattern_8)
#define pcre2_match_data_free_8 (*ox_fns.pcre2_match_data_free_8)
#define pcre2_substitute_8 (*ox_fns.pcre2_substitute_8)

#endif
