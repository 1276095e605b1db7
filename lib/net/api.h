/*
 * api.h — what libtir-net.so offers, by name: the functions whose
 * addresses fill tir.h's struct tir_net_api (api.c), for lib/net itself
 * and for the programs that link lib/net in directly (the tests, the
 * benchmarks; they hand tir_net_api() to tir_net_use).  Each does what the
 * table's member of its name says (tir.h).  The shared object exports
 * tir_net_api alone; nothing below lib/net names these (layers.sh).
 */
#ifndef TIR_NET_API_H
#define TIR_NET_API_H

#include "../engine/engine.h"

/* libtir-net.so's one entry point (TIR_NET_API_ENTRY).  returns: static. */
const struct tir_net_api *tir_net_api(void);

/* client.c */
struct tir_remote *tir_remote_open(const char *hostport, const char *token, struct tir_err *err);
void tir_remote_close(struct tir_remote *r);
const char *tir_remote_name(const struct tir_remote *r);
int tir_remote_connect(struct tir_remote *r, struct tir_err *err);
void tir_remote_forget(struct tir_remote *r);
const struct tir_remote_stats *tir_remote_stats(const struct tir_remote *r);
int tir_remote_group_open(const char *hostport, const char *token, struct tir_remote **out, int max,
			  struct tir_err *err);
int tir_remote_run(struct tir_remote *r, struct tir_exec *x, struct tir_node *const *targets,
		   size_t ntargets, struct tir_remote_result *res, struct tir_err *err);
bool tir_remote_holds(const struct tir_remote *r, const struct tir_exec *x, uint32_t id);
int tir_remote_sync(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err);
const char *tir_remote_base_url(const struct tir_remote *r);
int tir_remote_export(struct tir_remote *r, const struct tir_exec *x, uint32_t id, char cap[65], char blob[65],
		      struct tir_err *err);
int tir_remote_import(struct tir_remote *r, const struct tir_exec *x, uint32_t id, const struct tir_remote *from,
		      const char *cap, const char *blob, struct tir_err *err);
const char *tir_remote_group(const struct tir_remote *r, int *rank);
int tir_remote_all_reduce(struct tir_remote *r, struct tir_exec *x, const char *key, const char *op,
			  const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err);
/* server.c */
int tir_serve(const struct tir_serve_opts *o, volatile sig_atomic_t *stop, struct tir_err *err);

#endif
