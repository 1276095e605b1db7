/*
 * client.h — what the REPL asks of a remote beyond lib/tir.h (client.c).
 */
#ifndef TIR_NET_CLIENT_H
#define TIR_NET_CLIENT_H

#include "net.h"

/* Make the session now (one round trip), so that a wrong address, a wrong
 * token or another protocol is said at once.  returns 0 or -code. */
int tir_remote_connect(struct tir_remote *r, struct tir_err *err);
/* The program the values were kept for is gone (.reset): the next run
 * drops them on the server. */
void tir_remote_forget(struct tir_remote *r);
/* Whether the session holds the value of node id of x's program. */
bool tir_remote_holds(const struct tir_remote *r, const struct tir_exec *x, uint32_t id);

#endif
