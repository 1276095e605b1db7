/*
 * group.c — a `tir serve` started under mpirun is one rank of a group
 * (docs/groups.md).  Only then is libtir-mpi.so loaded (from next to the
 * tir binary, or TIR_MPI_LIB), as door.c loads lib/net: a plain `tir
 * serve` never maps MPI.  Rank r listens on --port + r; the ranks share
 * their addresses and the group's id (MPI_Iallgather), which /v1/info
 * says; and a value moving between two ranks goes over MPI point to point
 * (xfer.c asks, the hooks here answer a peer's ask from the capabilities
 * of the session store, as GET /v1/exports/CAP does).
 */
#include "batch.h"
#include "serve.h"

#include <dlfcn.h>
#include <limits.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MPI_SO "libtir-mpi.so"
#define JOIN_SECONDS 60                 /* for every rank to be listening */

static const unsigned char zero8[8];

bool group_wanted(void)
{
	const char *e = getenv("OMPI_COMM_WORLD_SIZE");
	if (e && *e)
		return true;
	e = getenv("PMIX_RANK");
	return e && *e;
}

int group_init(struct server *s, struct tir_err *err)
{
	char path[PATH_MAX];
	if (!tir_machine_lib_path("TIR_MPI_LIB", MPI_SO, path, sizeof path))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "cannot find the tir binary to load %s", MPI_SO);
	/* RTLD_GLOBAL: Open MPI dlopens its own components, which want
	 * libmpi's symbols */
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL,
				"started under mpirun, but the MPI part of tir will not load (was tir built without "
				"MPI? docs/groups.md): %s", dlerror());
	const struct tir_mpi_api *(*get)(void);
	*(void **)&get = dlsym(h, "tir_mpi_api");
	const struct tir_mpi_api *api = get ? get() : NULL;
	if (!api || api->version != TIR_MPI_API_VERSION)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s is not the one this tir was built with", path);
	char why[TIR_MPI_WHY];
	if (api->init(&s->group.rank, &s->group.size, why, sizeof why))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "MPI: %s", why);
	s->group.api = api;
	return 0;
}

/* One rank's entry in the allgather. */
struct entry {
	char addr[GROUP_ADDR];         /* "" when it could not listen */
	char id[33];
};

static int hook_take(void *ud, int peer, const char *cap, const char *token, struct tir_mpi_out *out, char *why,
		     size_t n);
static void hook_release(void *ud, void *hold);
static void hook_log(void *ud, const char *line);

int group_join(struct server *s, const char *addr, struct tir_err *err)
{
	struct group *gr = &s->group;
	struct entry mine = {0}, *all = calloc((size_t)gr->size, sizeof *all);
	if (!all)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	snprintf(mine.addr, sizeof mine.addr, "%s", addr ? addr : "");
	unsigned char rnd[16];
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		memset(rnd, 0, sizeof rnd);
	for (int i = 0; i < 16; i++)
		snprintf(mine.id + 2 * i, 3, "%02x", rnd[i]);
	char why[TIR_MPI_WHY];
	if (gr->api->allgather(&mine, all, sizeof mine, JOIN_SECONDS, why, sizeof why)) {
		free(all);
		return tir_errf(err, TIR_ENET, NULL, "the group (mpirun): %s", why);
	}
	for (int r = 0; r < gr->size; r++)
		if (!all[r].addr[0]) {
			free(all);
			return tir_errf(err, TIR_ENET, NULL, "rank %d of the group could not listen (its message says "
					"why); every rank stops", r);
		}
	if (!addr) {
		free(all);
		return 0; /* (this rank's own error is its caller's to say) */
	}
	gr->members = calloc((size_t)gr->size, sizeof *gr->members);
	if (!gr->members) {
		free(all);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	for (int r = 0; r < gr->size; r++)
		memcpy(gr->members[r], all[r].addr, GROUP_ADDR);
	memcpy(gr->id, all[0].id, sizeof gr->id); /* rank 0's names the group */
	free(all);
	struct tir_mpi_hooks h = {.ud = s, .take = hook_take, .release = hook_release, .log = hook_log};
	if (gr->api->serve(&h, s->o.transfer_seconds, why, sizeof why))
		return tir_errf(err, TIR_ENOMEM, NULL, "%s", why);
	return 0;
}

void group_finish(struct server *s)
{
	if (s->group.api && s->o.log)
		s->o.log(s->o.log_ud, "tir serve: leaving the group (MPI_Finalize)");
	if (s->group.api && s->group.api->finish(s->o.transfer_seconds) && s->o.log)
		s->o.log(s->o.log_ud, "tir serve: MPI_Finalize did not return within 1 s (mpirun is stopping the "
				      "job); leaving without it");
	free(s->group.members);
	s->group.members = NULL;
	s->group.api = NULL;
}

json_t *group_info(const struct server *s)
{
	const struct group *gr = &s->group;
	json_t *m = json_array();
	for (int r = 0; r < gr->size && gr->members; r++)
		json_array_append_new(m, json_string(gr->members[r]));
	return json_pack("{ss si si so s[s]}", "id", gr->id, "size", gr->size, "rank", gr->rank, "members", m,
			 "collectives", "all_reduce");
}

/* ---- a peer's ask (on the MPI service thread) ---- */

struct held {
	struct cap_value v;
	unsigned char head[TIR_FRAME_HEAD_MAX];
};

static int hook_take(void *ud, int peer, const char *cap, const char *token, struct tir_mpi_out *out, char *why,
		     size_t n)
{
	struct server *s = ud;
	if (runq_stopping(s)) {
		snprintf(why, n, "the server is stopping");
		return 503;
	}
	int tenant = server_tenant(s, token && *token ? token : NULL);
	if (tenant < 0) {
		snprintf(why, n, "no token, or a wrong one, for rank %d (%s)", s->group.rank,
			 s->group.members[s->group.rank]);
		return 401;
	}
	struct held *o = calloc(1, sizeof *o);
	if (!o) {
		snprintf(why, n, "no memory now");
		return 503;
	}
	if (!tir_sha_valid(cap) || !session_cap_take(s->sessions, cap, tenant, &o->v)) {
		free(o);
		snprintf(why, n, "no such capability (used, expired or never issued)");
		return 404;
	}
	size_t data = (size_t)tir_tensor_numel(&o->v.t) * tir_dtype_size(o->v.t.dtype);
	size_t hl = tir_frame_head(&o->v.t, o->head);
	size_t pad = (size_t)o->v.frame_bytes - hl - data;
	out->npieces = 0;
	out->p[out->npieces] = o->v.list;
	out->n[out->npieces++] = o->v.listlen;
	out->p[out->npieces] = o->head;
	out->n[out->npieces++] = hl;
	if (data) {
		out->p[out->npieces] = tir_tensor_data(&o->v.t);
		out->n[out->npieces++] = data;
	}
	if (pad) {
		out->p[out->npieces] = zero8;
		out->n[out->npieces++] = pad;
	}
	out->hold = o;
	pthread_mutex_lock(&s->mmu);
	s->exports_served++;
	s->group.served++;
	s->group.served_bytes += o->v.listlen + o->v.frame_bytes;
	pthread_mutex_unlock(&s->mmu);
	return 0;
}

static void hook_release(void *ud, void *hold)
{
	struct held *o = hold;
	cap_value_release(&o->v);
	free(o);
}

static void hook_log(void *ud, const char *line)
{
	struct server *s = ud;
	if (s->o.log)
		s->o.log(s->o.log_ud, line);
}
