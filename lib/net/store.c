/*
 * store.c — the server's blobs, graphs and sessions (store.h).  Each store
 * is a chained hash table under one mutex; blobs and graphs also keep a
 * least-recently-used order.  Heavy frees (a big tensor, a program and its
 * exec) happen after the mutex is let go.
 */
#include "store.h"

#include <openssl/rand.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a string-keyed intrusive hash table and an LRU list ---- */

struct hlink {
	struct hlink *next;
	const char *key;
	uint64_t h;
};

struct htab {
	struct hlink **b;
	size_t nb, n;
};

#define CONTAINER(p, type, field) ((type *)(void *)((char *)(p) - offsetof(type, field)))

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static struct hlink *ht_find(const struct htab *t, const char *key)
{
	if (!t->nb)
		return NULL;
	uint64_t h = hash_str(key);
	for (struct hlink *l = t->b[h & (t->nb - 1)]; l; l = l->next)
		if (l->h == h && !strcmp(l->key, key))
			return l;
	return NULL;
}

/* l->key set; returns 0 or -1 (out of memory: not inserted). */
static int ht_insert(struct htab *t, struct hlink *l)
{
	if (t->n + 1 > t->nb) {
		size_t nb = t->nb ? t->nb * 2 : 16;
		struct hlink **b = calloc(nb, sizeof *b);
		if (!b)
			return -1;
		for (size_t i = 0; i < t->nb; i++)
			for (struct hlink *e = t->b[i], *next; e; e = next) {
				next = e->next;
				e->next = b[e->h & (nb - 1)];
				b[e->h & (nb - 1)] = e;
			}
		free(t->b);
		t->b = b;
		t->nb = nb;
	}
	l->h = hash_str(l->key);
	l->next = t->b[l->h & (t->nb - 1)];
	t->b[l->h & (t->nb - 1)] = l;
	t->n++;
	return 0;
}

static void ht_remove(struct htab *t, struct hlink *l)
{
	for (struct hlink **pp = &t->b[l->h & (t->nb - 1)]; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			t->n--;
			return;
		}
}

struct lru {
	struct lru *prev, *next;
};

static void lru_init(struct lru *h)
{
	h->prev = h->next = h;
}

static void lru_unlink(struct lru *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = e;
}

static void lru_front(struct lru *h, struct lru *e)
{
	if (e->next != e)
		lru_unlink(e);
	e->next = h->next;
	e->prev = h;
	h->next->prev = e;
	h->next = e;
}

/* Sessions' leases count in seconds. */
static double now_s(void)
{
	return tir_now_ms() / 1e3;
}

/* ---- blobs ---- */

struct blob {
	struct hlink h;
	struct lru l;
	char sha[TIR_SHA_HEX + 1];
	char key[TIR_SHA_HEX + 8];     /* SHA.TENANT: each tenant's blobs are its own copies */
	struct tir_tensor t;
	uint64_t bytes;
	uint64_t holders[TENANT_WORDS]; /* the tenants that sent its bytes: one bit each */
	bool charged;                  /* BLOB_OVERHEAD is counted in tir_mem */
};

static bool holds(const struct blob *b, int tenant)
{
	return b->holders[tenant / 64] >> (tenant % 64) & 1;
}

static void grant(struct blob *b, int tenant)
{
	b->holders[tenant / 64] |= (uint64_t)1 << (tenant % 64);
}

/* What a blob costs besides its frame: this record, the tensor's buffer
 * header and alignment, the allocator's own and the table's share (one
 * million blobs of one f32 each took 477 MB, not the 24 MB of their
 * frames): charged to --blob-cache, so that small blobs are not free. */
#define BLOB_OVERHEAD (sizeof(struct blob) + 320)

struct blob_store {
	pthread_mutex_t mu;
	struct htab tab;
	struct lru order;              /* most recently used first */
	uint64_t cap, bytes;
	struct blob_stats st;
};

struct blob_store *blob_store_new(uint64_t cap_bytes)
{
	struct blob_store *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	lru_init(&s->order);
	s->cap = cap_bytes;
	return s;
}

static void blob_free(struct blob *b)
{
	tir_tensor_release(&b->t);
	if (b->charged)
		tir_mem_uncharge(BLOB_OVERHEAD);
	free(b);
}

void blob_store_free(struct blob_store *s)
{
	if (!s)
		return;
	while (s->order.next != &s->order) {
		struct blob *b = CONTAINER(s->order.next, struct blob, l);
		lru_unlink(&b->l);
		blob_free(b);
	}
	free(s->tab.b);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* A blob is stored once per tenant that sent its bytes, not once for all:
 * a copy shared between tenants made a PUT of a blob another held differ
 * (in the memory it left free for the next one, and so in time) from a PUT
 * of a new one, and that told one tenant what another holds. */
static void blob_key(char out[TIR_SHA_HEX + 8], const char *sha, int tenant)
{
	snprintf(out, TIR_SHA_HEX + 8, "%.64s.%d", sha, tenant);
}

/* Blob sha if tenant holds it; s->mu held. */
static struct blob *find_held(struct blob_store *s, const char *sha, int tenant)
{
	char key[TIR_SHA_HEX + 8];
	blob_key(key, sha, tenant);
	struct hlink *l = ht_find(&s->tab, key);
	struct blob *b = l ? CONTAINER(l, struct blob, h) : NULL;
	return b && holds(b, tenant) ? b : NULL;
}

bool blob_get(struct blob_store *s, const char *sha, int tenant, struct tir_tensor *t)
{
	pthread_mutex_lock(&s->mu);
	struct blob *b = find_held(s, sha, tenant);
	if (b) {
		lru_front(&s->order, &b->l);
		tir_tensor_ref(t, &b->t);
		s->st.hits++;
	} else {
		s->st.misses++;
	}
	pthread_mutex_unlock(&s->mu);
	return b != NULL;
}

bool blob_touch(struct blob_store *s, const char *sha, int tenant)
{
	pthread_mutex_lock(&s->mu);
	struct blob *b = find_held(s, sha, tenant);
	if (b)
		lru_front(&s->order, &b->l);
	pthread_mutex_unlock(&s->mu);
	return b != NULL;
}

int blob_grant(struct blob_store *s, const char *sha, int tenant)
{
	pthread_mutex_lock(&s->mu);
	struct blob *b = find_held(s, sha, tenant);
	int rc = !b ? -1 : holds(b, tenant) ? 0 : 1;
	if (b) {
		grant(b, tenant);
		lru_front(&s->order, &b->l);
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int blob_put(struct blob_store *s, const char *sha, int tenant, struct tir_tensor *t, uint64_t bytes)
{
	struct blob *b = calloc(1, sizeof *b);
	if (!b) {
		tir_tensor_release(t);
		return -1;
	}
	memcpy(b->sha, sha, TIR_SHA_HEX + 1);
	blob_key(b->key, sha, tenant);
	b->h.key = b->key;
	b->t = *t;
	memset(t, 0, sizeof *t);
	b->bytes = bytes + BLOB_OVERHEAD;
	/* the record is memory too: charged to --max-memory with the tensor */
	b->charged = tir_mem_charge(BLOB_OVERHEAD);
	if (!b->charged) {
		blob_free(b);
		return -1;
	}
	grant(b, tenant);
	lru_init(&b->l);
	struct lru gone;               /* evicted, freed after the unlock */
	lru_init(&gone);
	int rc;
	pthread_mutex_lock(&s->mu);
	struct blob *had = find_held(s, sha, tenant);
	if (had) { /* the tenant's own, sent again meanwhile */
		rc = holds(had, tenant) ? 0 : 1;
		grant(had, tenant);
		lru_front(&s->order, &had->l);
	} else if (ht_insert(&s->tab, &b->h)) {
		rc = -1;
	} else {
		lru_front(&s->order, &b->l);
		s->bytes += b->bytes;
		s->st.count++;
		b = NULL;
		rc = 1;
		/* the oldest go first; the one just stored stays (the server
		 * refuses a blob over the whole budget before it gets here) */
		while (s->bytes > s->cap && s->order.prev != s->order.next) {
			struct blob *v = CONTAINER(s->order.prev, struct blob, l);
			lru_unlink(&v->l);
			ht_remove(&s->tab, &v->h);
			s->bytes -= v->bytes;
			s->st.count--;
			s->st.evictions++;
			lru_front(&gone, &v->l);
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (b)
		blob_free(b);
	while (gone.next != &gone) {
		struct blob *v = CONTAINER(gone.next, struct blob, l);
		lru_unlink(&v->l);
		blob_free(v); /* a running batch holds its own reference */
	}
	return rc;
}

void blob_store_stats(struct blob_store *s, struct blob_stats *st)
{
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	st->bytes = s->bytes;
	pthread_mutex_unlock(&s->mu);
}

void blob_store_tenant(struct blob_store *s, int tenant, uint64_t *count, uint64_t *bytes)
{
	*count = *bytes = 0;
	pthread_mutex_lock(&s->mu);
	for (struct lru *e = s->order.next; e != &s->order; e = e->next) {
		const struct blob *b = CONTAINER(e, struct blob, l);
		if (holds(b, tenant)) {
			++*count;
			*bytes += b->bytes;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- graphs ---- */

struct graph_store {
	pthread_mutex_t mu;
	struct graph **b;              /* hash chains (graph.next), power of two */
	size_t nb, n;
	int max;
	uint64_t cap;                  /* bytes: the cache's size, the graphs in use counted */
	uint64_t bytes;                /* their costs (charged while parsed) */
	uint64_t per[TIR_MAX_TENANTS]; /* the same, by tenant */
	uint64_t clock, hits, refused;
};

static size_t graph_bucket(const struct graph_store *s, const char *sha)
{
	return (size_t)(hash_str(sha) & (s->nb - 1));
}

struct graph_store *graph_store_new(int max_graphs, uint64_t cap_bytes)
{
	struct graph_store *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->nb = 512;
	s->b = calloc(s->nb, sizeof *s->b);
	if (!s->b) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->max = max_graphs;
	s->cap = cap_bytes;
	return s;
}

/* What a graph was charged (its cost) goes back to --max-memory with it. */
static void graph_free(struct graph *g)
{
	tir_exec_free(g->x);
	tir_program_free(g->prog);
	tir_mem_uncharge(g->cost);
	free(g);
}

void graph_store_free(struct graph_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nb; i++)
		for (struct graph *g = s->b[i], *next; g; g = next) {
			next = g->next;
			graph_free(g);
		}
	free(s->b);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

struct graph *graph_get(struct graph_store *s, const char *sha, int tenant)
{
	pthread_mutex_lock(&s->mu);
	struct graph *g = s->b[graph_bucket(s, sha)];
	while (g && (strcmp(g->sha, sha) || g->tenant != tenant))
		g = g->next;
	if (g) {
		g->refs++;
		g->used = ++s->clock;
		s->hits++;
	}
	pthread_mutex_unlock(&s->mu);
	return g;
}

/* Unlink the least recently used graphs no run holds onto *victims until
 * `more` bytes fit beside the rest, or none is left to drop (s->mu held).
 * Whether they fit. */
static bool graph_make_room(struct graph_store *s, uint64_t more, bool one_more, struct graph **victims)
{
	while ((one_more && s->n >= (size_t)s->max) || s->bytes + more > s->cap) {
		struct graph **vp = NULL;
		for (size_t i = 0; i < s->nb; i++)
			for (struct graph **pp = &s->b[i]; *pp; pp = &(*pp)->next)
				if (!(*pp)->refs && (!vp || (*pp)->used < (*vp)->used))
					vp = pp;
		if (!vp)
			return false;
		struct graph *v = *vp;
		*vp = v->next;
		s->n--;
		s->bytes -= v->cost;
		s->per[v->tenant] -= v->cost;
		v->next = *victims;
		*victims = v;
	}
	return true;
}

static void graph_free_list(struct graph *victims)
{
	while (victims) {
		struct graph *next = victims->next;
		graph_free(victims);
		victims = next;
	}
}

struct graph *graph_put(struct graph_store *s, const char *sha, int tenant, struct tir_program *p,
			uint64_t cost, int *why)
{
	*why = 500;
	struct graph *g = calloc(1, sizeof *g);
	if (g)
		g->x = tir_exec_new(p);
	if (!g || !g->x) {
		free(g);
		tir_program_free(p);
		tir_mem_uncharge(cost);
		return NULL;
	}
	memcpy(g->sha, sha, TIR_SHA_HEX + 1);
	g->tenant = tenant;
	g->prog = p;
	g->cost = cost;
	struct graph *victims = NULL, *dup = NULL;
	pthread_mutex_lock(&s->mu);
	size_t k = graph_bucket(s, sha);
	for (dup = s->b[k]; dup && (strcmp(dup->sha, sha) || dup->tenant != tenant);)
		dup = dup->next;
	bool fits = true;
	if (dup) {
		dup->refs++;
		dup->used = ++s->clock;
	} else if (cost > s->cap) {
		fits = false;
		*why = 413;
	} else if (!graph_make_room(s, cost, true, &victims)) {
		fits = false;
		*why = 503; /* the graphs of queued and running batches fill it now */
	} else {
		g->refs = 1;
		g->used = ++s->clock;
		g->next = s->b[k];
		s->b[k] = g;
		s->n++;
		s->bytes += g->cost;
		s->per[tenant] += g->cost;
	}
	s->refused += !fits;
	pthread_mutex_unlock(&s->mu);
	graph_free_list(victims);
	if (dup || !fits) {
		graph_free(g);
		return dup;
	}
	return g;
}

void graph_unref(struct graph_store *s, struct graph *g)
{
	if (!g)
		return;
	struct graph *victims = NULL;
	pthread_mutex_lock(&s->mu);
	g->refs--;
	graph_make_room(s, 0, false, &victims); /* a graph in use may have held it past its size */
	pthread_mutex_unlock(&s->mu);
	graph_free_list(victims);
}

uint64_t graph_store_trim(struct graph_store *s, int tenant)
{
	struct graph *victims = NULL;
	uint64_t freed = 0;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nb; i++)
		for (struct graph **pp = &s->b[i]; *pp;) {
			struct graph *g = *pp;
			if (g->refs || (tenant >= 0 && g->tenant != tenant)) {
				pp = &g->next;
				continue;
			}
			*pp = g->next;
			s->n--;
			s->bytes -= g->cost;
			s->per[g->tenant] -= g->cost;
			freed += g->cost;
			g->next = victims;
			victims = g;
		}
	pthread_mutex_unlock(&s->mu);
	graph_free_list(victims);
	return freed;
}

uint64_t graph_store_tenant_bytes(struct graph_store *s, int tenant)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->per[tenant];
	pthread_mutex_unlock(&s->mu);
	return n;
}

uint64_t graph_store_cap(const struct graph_store *s)
{
	return s->cap;
}

uint64_t graph_store_refused(struct graph_store *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->refused;
	pthread_mutex_unlock(&s->mu);
	return n;
}

uint64_t graph_store_hits(struct graph_store *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t h = s->hits;
	pthread_mutex_unlock(&s->mu);
	return h;
}

size_t graph_store_count(struct graph_store *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->n;
	pthread_mutex_unlock(&s->mu);
	return n;
}

uint64_t graph_store_bytes(struct graph_store *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->bytes;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* ---- sessions ---- */

struct sval {
	struct hlink h;
	char key[SESSION_KEY_MAX + 1];
	struct tir_tensor t;
	/* its chunk list and blob name, once an export hashed it (NULL: not yet) */
	unsigned char *list;
	size_t listlen;
	char blob[TIR_SHA_HEX + 1];
};

/* What a kept value's record costs besides its tensor (the record, the
 * allocator's share and the table's): charged to --max-memory, so that
 * 64 sessions of 4096 kept scalars are not free. */
#define SVAL_OVERHEAD (sizeof(struct sval) + 64)

/* The kept values of every session, for /metrics (one server a process),
 * and their bytes by tenant (a tenant's share of --max-memory). */
static atomic_size_t kept_count, kept_bytes;
static atomic_size_t kept_by_tenant[TIR_MAX_TENANTS];

static size_t tensor_bytes(const struct tir_tensor *t)
{
	return (size_t)tir_tensor_numel(t) * tir_dtype_size(t->dtype);
}

/* A record for key, holding a reference to t; NULL when there is no
 * memory for it, or the budget has no room for its record. */
static struct sval *sval_new(const char *key, const struct tir_tensor *t)
{
	struct sval *v = calloc(1, sizeof *v);
	if (!v || !tir_mem_charge(SVAL_OVERHEAD)) {
		free(v);
		return NULL;
	}
	snprintf(v->key, sizeof v->key, "%s", key);
	v->h.key = v->key;
	tir_tensor_ref(&v->t, t);
	return v;
}

static void sval_free(struct sval *v)
{
	tir_tensor_release(&v->t);
	tir_mem_uncharge(SVAL_OVERHEAD + v->listlen);
	free(v->list);
	free(v);
}

/* A record of tenant's enters or leaves a session's table. */
static void sval_counted(const struct sval *v, int tenant, bool in)
{
	size_t b = tensor_bytes(&v->t) + SVAL_OVERHEAD;
	if (in) {
		atomic_fetch_add(&kept_count, 1);
		atomic_fetch_add(&kept_bytes, b);
		atomic_fetch_add(&kept_by_tenant[tenant], b);
	} else {
		atomic_fetch_sub(&kept_count, 1);
		atomic_fetch_sub(&kept_bytes, b);
		atomic_fetch_sub(&kept_by_tenant[tenant], b);
	}
}

size_t session_store_tenant_bytes(struct session_store *s, int tenant)
{
	(void)s;
	return atomic_load(&kept_by_tenant[tenant]);
}

void session_store_kept(struct session_store *s, size_t *count, size_t *bytes)
{
	(void)s;
	*count = atomic_load(&kept_count);
	*bytes = atomic_load(&kept_bytes);
}

struct cap;

struct session {
	struct hlink h;
	char id[SESSION_ID_HEX + 1];
	int tenant;                    /* whose: no other tenant's request finds it */
	double last;                   /* monotonic seconds of the last request */
	int lease;                     /* seconds without a sign of its client (0: none) */
	double renewed;                /* the last sign: a request, or a renewal */
	int refs;                      /* requests under way */
	bool dead;                     /* deleted or expired: freed at the last unref */
	struct htab vals;
	struct cap *caps;              /* its capabilities not yet used (ncaps) */
	int ncaps;
};

/* A capability: in the store's table by the SHA-256 of its digits (key),
 * and in its session's list. */
struct cap {
	struct hlink h;
	char key[TIR_SHA_HEX + 1];
	struct cap *next;              /* the session's next */
	struct session *ss;
	struct cap_value v;
	size_t charge;                 /* of the memory budget: the record and the list */
};

/* Capabilities open in the server, and the frame bytes they hold (/metrics). */
static atomic_size_t caps_open;
static atomic_uint_fast64_t caps_bytes;

static void cap_free(struct cap *c)
{
	atomic_fetch_sub(&caps_open, 1);
	atomic_fetch_sub(&caps_bytes, c->v.frame_bytes);
	cap_value_release(&c->v);
	tir_mem_uncharge(c->charge);
	free(c);
}

struct session_store {
	pthread_mutex_t mu;
	struct htab tab;
	struct htab caps;              /* every live session's capabilities, by key */
	int max, ttl;
	uint64_t created;
	uint64_t expired_ttl, expired_lease, reclaimed;
	int per[TIR_MAX_TENANTS];      /* sessions open, by tenant */
	int reclaim;                   /* seconds idle before a lease-less session may be reclaimed */
};

void session_store_set_reclaim(struct session_store *s, int seconds)
{
	s->reclaim = seconds;
}

static void session_gone(struct session_store *s, struct session *ss);

/* A tenant at its cap: its session without a lease that has been idle
 * longest, if idle at least s->reclaim seconds and no request holds it,
 * leaves the store onto *gone, making room (s->mu held).  A leased
 * session's client says it is alive; one without a lease says nothing, and
 * would otherwise hold its slot for the whole TTL. */
static bool reclaim_locked(struct session_store *s, int tenant, struct session **gone)
{
	double now = now_s();
	struct session *old = NULL;
	for (size_t i = 0; i < s->tab.nb; i++)
		for (struct hlink *l = s->tab.b[i]; l; l = l->next) {
			struct session *ss = CONTAINER(l, struct session, h);
			if (ss->tenant == tenant && !ss->lease && !ss->refs && s->reclaim > 0 &&
			    now - ss->last >= s->reclaim && (!old || ss->last < old->last))
				old = ss;
		}
	if (!old)
		return false;
	ht_remove(&s->tab, &old->h);
	session_gone(s, old);
	old->dead = true;
	old->h.next = *gone ? &(*gone)->h : NULL;
	*gone = old;
	s->reclaimed++;
	return true;
}

uint64_t session_store_reclaimed(struct session_store *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->reclaimed;
	pthread_mutex_unlock(&s->mu);
	return n;
}

struct session_store *session_store_new(int max_sessions, int ttl_seconds)
{
	struct session_store *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	s->max = max_sessions;
	s->ttl = ttl_seconds;
	return s;
}

static void session_free(struct session *ss)
{
	while (ss->caps) {
		struct cap *c = ss->caps;
		ss->caps = c->next;
		cap_free(c);
	}
	for (size_t i = 0; i < ss->vals.nb; i++)
		for (struct hlink *l = ss->vals.b[i], *next; l; l = next) {
			next = l->next;
			struct sval *v = CONTAINER(l, struct sval, h);
			sval_counted(v, ss->tenant, false);
			sval_free(v);
		}
	free(ss->vals.b);
	free(ss);
}

void session_store_free(struct session_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->tab.nb; i++)
		for (struct hlink *l = s->tab.b[i], *next; l; l = next) {
			next = l->next;
			session_free(CONTAINER(l, struct session, h));
		}
	free(s->tab.b);
	free(s->caps.b);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ss leaves the store (deleted or expired): its capabilities can no
 * longer be found (they go with it when it is freed); s->mu held. */
static void session_gone(struct session_store *s, struct session *ss)
{
	s->per[ss->tenant]--;
	for (struct cap *c = ss->caps; c; c = c->next)
		ht_remove(&s->caps, &c->h);
}

/* Whether ss has expired: idle past the TTL, or its lease not renewed
 * (a request under way holds it); counted (s->mu held). */
static bool expired(struct session_store *s, const struct session *ss, double now)
{
	if (ss->refs)
		return false;
	bool ttl = now - ss->last > s->ttl, lease = ss->lease && now - ss->renewed > ss->lease;
	s->expired_ttl += ttl;
	s->expired_lease += lease && !ttl;
	return ttl || lease;
}

/* Unlink expired sessions onto *gone (s->mu held). */
static void sweep_locked(struct session_store *s, struct session **gone)
{
	double now = now_s();
	for (size_t i = 0; i < s->tab.nb; i++)
		for (struct hlink **pp = &s->tab.b[i]; *pp;) {
			struct session *ss = CONTAINER(*pp, struct session, h);
			if (expired(s, ss, now)) {
				*pp = ss->h.next;
				s->tab.n--;
				session_gone(s, ss);
				ss->dead = true;
				ss->h.next = *gone ? &(*gone)->h : NULL; /* a list of the gone */
				*gone = ss;
			} else {
				pp = &(*pp)->next;
			}
		}
}

static void free_gone(struct session *gone)
{
	while (gone) {
		struct session *next = gone->h.next ? CONTAINER(gone->h.next, struct session, h) : NULL;
		session_free(gone);
		gone = next;
	}
}

void session_sweep(struct session_store *s)
{
	struct session *gone = NULL;
	pthread_mutex_lock(&s->mu);
	sweep_locked(s, &gone);
	pthread_mutex_unlock(&s->mu);
	free_gone(gone);
}

int session_store_tenant(struct session_store *s, int tenant)
{
	pthread_mutex_lock(&s->mu);
	int n = s->per[tenant];
	pthread_mutex_unlock(&s->mu);
	return n;
}

int session_create(struct session_store *s, int tenant, int tenant_max, int lease, char id[SESSION_ID_HEX + 1])
{
	unsigned char r[16];
	if (RAND_bytes(r, sizeof r) != 1)
		return -2;
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		id[2 * i] = digits[r[i] >> 4];
		id[2 * i + 1] = digits[r[i] & 15];
	}
	id[SESSION_ID_HEX] = 0;
	struct session *ss = calloc(1, sizeof *ss);
	if (!ss)
		return -2;
	memcpy(ss->id, id, sizeof ss->id);
	ss->h.key = ss->id;
	ss->last = ss->renewed = now_s();
	ss->lease = lease;
	ss->tenant = tenant;
	struct session *gone = NULL;
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	sweep_locked(s, &gone);
	if (s->per[tenant] >= tenant_max && !reclaim_locked(s, tenant, &gone))
		rc = -3;
	else if (s->tab.n >= (size_t)s->max)
		rc = -1;
	else if (ht_find(&s->tab, id) || ht_insert(&s->tab, &ss->h))
		rc = -2; /* a collision of 128 random bits is not going to happen */
	else
		s->created++, s->per[tenant]++;
	pthread_mutex_unlock(&s->mu);
	free_gone(gone);
	if (rc)
		free(ss);
	return rc;
}

struct session *session_get(struct session_store *s, const char *id, int tenant)
{
	pthread_mutex_lock(&s->mu);
	struct hlink *l = ht_find(&s->tab, id);
	struct session *ss = l ? CONTAINER(l, struct session, h) : NULL;
	if (ss && ss->tenant != tenant)
		ss = NULL; /* another tenant's is no session of this one's */
	/* an idle session past its TTL (or lease) is gone even before a sweep sees it */
	if (ss && expired(s, ss, now_s())) {
		ht_remove(&s->tab, &ss->h);
		session_gone(s, ss);
		session_free(ss);
		ss = NULL;
	}
	if (ss) {
		ss->refs++;
		ss->last = ss->renewed = now_s();
	}
	pthread_mutex_unlock(&s->mu);
	return ss;
}

bool session_renew(struct session_store *s, const char *id, int tenant, int *lease)
{
	struct session *gone = NULL;
	pthread_mutex_lock(&s->mu);
	struct hlink *l = ht_find(&s->tab, id);
	struct session *ss = l ? CONTAINER(l, struct session, h) : NULL;
	if (ss && ss->tenant != tenant)
		ss = NULL;
	if (ss && expired(s, ss, now_s())) {
		ht_remove(&s->tab, &ss->h);
		session_gone(s, ss);
		gone = ss;
		ss = NULL;
	}
	if (ss) {
		ss->renewed = now_s();
		*lease = ss->lease;
	}
	pthread_mutex_unlock(&s->mu);
	if (gone)
		session_free(gone);
	return ss != NULL;
}

void session_unref(struct session_store *s, struct session *ss)
{
	if (!ss)
		return;
	pthread_mutex_lock(&s->mu);
	bool last = --ss->refs == 0 && ss->dead;
	ss->last = ss->renewed = now_s();
	pthread_mutex_unlock(&s->mu);
	if (last)
		session_free(ss);
}

bool session_delete(struct session_store *s, const char *id, int tenant)
{
	pthread_mutex_lock(&s->mu);
	struct hlink *l = ht_find(&s->tab, id);
	struct session *ss = l ? CONTAINER(l, struct session, h) : NULL;
	if (ss && ss->tenant != tenant)
		ss = NULL;
	bool now = false;
	if (ss) {
		ht_remove(&s->tab, &ss->h);
		session_gone(s, ss);
		ss->dead = true;
		now = ss->refs == 0;
	}
	pthread_mutex_unlock(&s->mu);
	if (now)
		session_free(ss);
	return ss != NULL;
}

bool session_value(struct session_store *s, struct session *ss, const char *key,
		   struct tir_tensor *t)
{
	pthread_mutex_lock(&s->mu);
	struct hlink *l = ht_find(&ss->vals, key);
	if (l)
		tir_tensor_ref(t, &CONTAINER(l, struct sval, h)->t);
	pthread_mutex_unlock(&s->mu);
	return l != NULL;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A sorted copy of the n keys of v (NULL when out of memory). */
static const char **sorted_keys(const char *const *v, size_t n)
{
	const char **c = malloc((n + 1) * sizeof *c);
	if (c && n) {
		memcpy(c, v, n * sizeof *c);
		qsort(c, n, sizeof *c, cmp_key);
	}
	return c;
}

/* The count after the update (s->mu held); SIZE_MAX when out of memory.
 * The lists are sorted first: a request's lists are as long as its body
 * allows, and comparing each key with every other one (quadratic in
 * them) held a thread for minutes. */
static size_t count_after(struct session *ss, const char *const *drop, size_t ndrop,
			  const char *const *keys, size_t nkeep)
{
	const char **d = sorted_keys(drop, ndrop), **k = sorted_keys(keys, nkeep);
	size_t n = ss->vals.n;
	if (!d || !k) {
		free(d);
		free(k);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < ndrop; i++) /* a key dropped twice counts once */
		if ((i == 0 || strcmp(d[i], d[i - 1])) && ht_find(&ss->vals, d[i]))
			n--;
	for (size_t i = 0; i < nkeep; i++) {
		if (i > 0 && !strcmp(k[i], k[i - 1])) /* kept twice: once */
			continue;
		bool dropped = bsearch(&k[i], d, ndrop, sizeof *d, cmp_key) != NULL;
		n += dropped || !ht_find(&ss->vals, k[i]);
	}
	free(d);
	free(k);
	return n;
}

bool session_fits(struct session_store *s, struct session *ss, const char *const *drop,
		  size_t ndrop, const char *const *keys, size_t nkeep)
{
	pthread_mutex_lock(&s->mu);
	bool ok = count_after(ss, drop, ndrop, keys, nkeep) <= SESSION_MAX_VALUES;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

int session_update(struct session_store *s, struct session *ss, const char *const *drop,
		   size_t ndrop, const char *const *keys, const struct tir_tensor *vals, size_t nkeep)
{
	/* new entries are made first, so that running out of memory changes nothing */
	struct sval **fresh = calloc(nkeep + 1, sizeof *fresh);
	bool oom = !fresh;
	for (size_t i = 0; i < nkeep && !oom; i++)
		oom = !(fresh[i] = sval_new(keys[i], &vals[i]));
	struct sval *gone = NULL;      /* chained through h.next, freed after the unlock */
	int rc = oom ? -2 : 0;
	pthread_mutex_lock(&s->mu);
	if (!oom && count_after(ss, drop, ndrop, keys, nkeep) > SESSION_MAX_VALUES) {
		rc = -1;
	} else if (!oom && !ss->dead) {
		for (size_t i = 0; i < ndrop + nkeep; i++) {
			const char *k = i < ndrop ? drop[i] : keys[i - ndrop];
			struct hlink *l = ht_find(&ss->vals, k);
			if (l) {
				ht_remove(&ss->vals, l);
				l->next = gone ? &gone->h : NULL;
				gone = CONTAINER(l, struct sval, h);
				sval_counted(gone, ss->tenant, false);
			}
			/* the table grows by doubling: an insert fails only
			 * when growing does, and then the value is dropped */
			if (i >= ndrop && ht_insert(&ss->vals, &fresh[i - ndrop]->h)) {
				rc = -2;
			} else if (i >= ndrop) {
				sval_counted(fresh[i - ndrop], ss->tenant, true);
				fresh[i - ndrop] = NULL;
			}
		}
	}
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; fresh && i < nkeep; i++)
		if (fresh[i])
			sval_free(fresh[i]);
	free(fresh);
	while (gone) {
		struct sval *next = gone->h.next ? CONTAINER(gone->h.next, struct sval, h) : NULL;
		sval_free(gone);
		gone = next;
	}
	return rc;
}

size_t session_store_count(struct session_store *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->tab.n;
	pthread_mutex_unlock(&s->mu);
	return n;
}

uint64_t session_store_created(struct session_store *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->created;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void session_store_expired(struct session_store *s, uint64_t *ttl, uint64_t *lease)
{
	pthread_mutex_lock(&s->mu);
	*ttl = s->expired_ttl;
	*lease = s->expired_lease;
	pthread_mutex_unlock(&s->mu);
}

bool session_key_valid(const char *key)
{
	size_t n = 0;
	for (; key[n]; n++) {
		char c = key[n];
		if (n >= SESSION_KEY_MAX || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return n > 0;
}

bool session_dead(struct session_store *s, struct session *ss)
{
	pthread_mutex_lock(&s->mu);
	bool dead = ss->dead;
	pthread_mutex_unlock(&s->mu);
	return dead;
}

/* ---- capabilities ---- */

/* What a capability's record costs besides its list (the record, the
 * allocator's share and the table's): charged to --max-memory with the
 * list, as a kept value's record is. */
#define CAP_OVERHEAD (sizeof(struct cap) + 64)

void cap_value_release(struct cap_value *v)
{
	tir_tensor_release(&v->t);
	free(v->list);
	v->list = NULL;
	v->listlen = 0;
}

int session_cap_issue(struct session_store *s, struct session *ss, struct cap_value *v,
		      char cap[TIR_SHA_HEX + 1])
{
	unsigned char r[32];
	struct cap *c = NULL;
	size_t charge = CAP_OVERHEAD + v->listlen;
	if (RAND_bytes(r, sizeof r) != 1 || !(c = calloc(1, sizeof *c)) || !tir_mem_charge(charge)) {
		free(c);
		cap_value_release(v);
		return -2;
	}
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		cap[2 * i] = digits[r[i] >> 4];
		cap[2 * i + 1] = digits[r[i] & 15];
	}
	cap[TIR_SHA_HEX] = 0;
	explicit_bzero(r, sizeof r);
	tir_sha256_hex(cap, TIR_SHA_HEX, c->key);
	c->h.key = c->key;
	c->ss = ss;
	c->v = *v;
	memset(v, 0, sizeof *v);
	c->charge = charge;
	atomic_fetch_add(&caps_open, 1);
	atomic_fetch_add(&caps_bytes, c->v.frame_bytes);
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	if (ss->dead)
		rc = -3;
	else if (ss->ncaps >= SESSION_MAX_CAPS)
		rc = -1;
	else if (ht_find(&s->caps, c->key) || ht_insert(&s->caps, &c->h))
		rc = -2; /* (a collision of 256 random bits is not going to happen) */
	if (!rc) {
		c->next = ss->caps;
		ss->caps = c;
		ss->ncaps++;
	}
	pthread_mutex_unlock(&s->mu);
	if (rc) {
		explicit_bzero(cap, TIR_SHA_HEX);
		cap_free(c);
	}
	return rc;
}

bool session_cap_take(struct session_store *s, const char *cap, int tenant, struct cap_value *v)
{
	char key[TIR_SHA_HEX + 1];
	tir_sha256_hex(cap, strlen(cap), key);
	struct cap *got = NULL;
	struct session *gone = NULL;
	pthread_mutex_lock(&s->mu);
	struct hlink *l = ht_find(&s->caps, key);
	struct cap *c = l ? CONTAINER(l, struct cap, h) : NULL;
	struct session *ss = c && c->ss->tenant == tenant ? c->ss : NULL;
	/* a session past its TTL (or lease) is gone, and its capabilities
	 * with it, even before a sweep sees it */
	if (ss && expired(s, ss, now_s())) {
		ht_remove(&s->tab, &ss->h);
		session_gone(s, ss);
		ss->dead = true;
		gone = ss; /* (expired: no request holds it) */
		ss = NULL;
	}
	if (ss) {
		ht_remove(&s->caps, &c->h);
		for (struct cap **pp = &ss->caps; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
		ss->ncaps--;
		got = c;
	}
	pthread_mutex_unlock(&s->mu);
	if (gone)
		session_free(gone);
	if (!got)
		return false;
	*v = got->v;
	memset(&got->v, 0, sizeof got->v);
	atomic_fetch_sub(&caps_bytes, v->frame_bytes);
	got->v.frame_bytes = 0;
	cap_free(got);
	return true;
}

void session_store_caps(struct session_store *s, size_t *count, uint64_t *bytes)
{
	(void)s;
	*count = atomic_load(&caps_open);
	*bytes = atomic_load(&caps_bytes);
}

bool session_value_chunks(struct session_store *s, struct session *ss, const char *key,
			  struct tir_tensor *t, unsigned char **list, size_t *len,
			  char blob[TIR_SHA_HEX + 1])
{
	*list = NULL;
	*len = 0;
	/* the copy's buffer is allocated with the lock let go, for the length
	 * the record had; should the record change meanwhile, again */
	size_t want = 0;
	for (int tries = 0; tries < 4; tries++) {
		unsigned char *buf = want ? malloc(want) : NULL;
		if (want && !buf)
			break;
		bool found = false, had = false, copied = false;
		pthread_mutex_lock(&s->mu);
		struct hlink *l = ht_find(&ss->vals, key);
		if (l) {
			struct sval *v = CONTAINER(l, struct sval, h);
			found = true;
			had = v->list != NULL;
			if (had && buf && v->listlen == want) {
				memcpy(buf, v->list, want);
				memcpy(blob, v->blob, TIR_SHA_HEX + 1);
				copied = true;
			}
			if (!had || copied)
				tir_tensor_ref(t, &v->t);
			else
				want = v->listlen;
		}
		pthread_mutex_unlock(&s->mu);
		if (copied) {
			*list = buf;
			*len = want;
			return true;
		}
		free(buf);
		if (!found || !had)
			return found;
	}
	return session_value(s, ss, key, t); /* without its list */
}

/* Whether a and b are the same value: one buffer, one view of it. */
static bool same_tensor(const struct tir_tensor *a, const struct tir_tensor *b)
{
	if (a->buf != b->buf || a->offset != b->offset || a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i] || a->strides[i] != b->strides[i])
			return false;
	return true;
}

void session_value_note(struct session_store *s, struct session *ss, const char *key,
			const struct tir_tensor *t, const unsigned char *list, size_t len,
			const char blob[TIR_SHA_HEX + 1])
{
	unsigned char *copy = malloc(len);
	if (!copy)
		return;
	memcpy(copy, list, len);
	if (!tir_mem_charge(len)) {
		free(copy);
		return;
	}
	pthread_mutex_lock(&s->mu);
	struct hlink *l = ht_find(&ss->vals, key);
	struct sval *v = l ? CONTAINER(l, struct sval, h) : NULL;
	if (v && !v->list && same_tensor(&v->t, t)) {
		v->list = copy;
		v->listlen = len;
		memcpy(v->blob, blob, TIR_SHA_HEX + 1);
		copy = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (copy) {
		tir_mem_uncharge(len);
		free(copy);
	}
}
