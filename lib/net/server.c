/* server.c — placeholder until the server lands (issue 6). */
#include "net.h"

int tir_serve(const struct tir_serve_opts *o, volatile sig_atomic_t *stop, struct tir_err *err)
{
	return tir_errf(err, TIR_EUNSUPPORTED, NULL, "tir serve is not supported yet");
}
