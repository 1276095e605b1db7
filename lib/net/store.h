/*
 * store.h — what `tir serve` keeps between requests (store.c), shared by
 * the server's threads, each store under its own mutex, and the decoding
 * of a blob upload as it arrives (upload.c):
 *
 *   blobs     SHA-256 -> decoded tensor, least recently used evicted past
 *             a byte budget; shared by a tenant's sessions (held once,
 *             seen only by the tenants that sent its bytes)
 *   graphs    SHA-256 of a batch text -> its parsed program and a tir_exec
 *             (with the exec's plan cache); bounded in count and in bytes
 *             (what each was charged to --max-memory while parsed), the
 *             graphs of queued and running batches counted
 *   sessions  random 128-bit id -> values kept under client-chosen keys;
 *             idle ones expire, and leased ones whose client stops
 *             renewing
 *
 * Whatever a request takes out of a store is a new reference (a tensor
 * reference, or a counted graph or session), so that an eviction, an
 * expiry or a DELETE under way never frees what a running batch uses.
 */
#ifndef TIR_NET_STORE_H
#define TIR_NET_STORE_H

#include "net.h"

/* Tenants (--tokens): each has its own sessions and its own view of the
 * blobs, numbered 0..TIR_MAX_TENANTS-1 (one tenant, 0, without --tokens). */
#define TIR_MAX_TENANTS 256
#define TENANT_WORDS (TIR_MAX_TENANTS / 64)

/* ---- blobs ---- */

struct blob_store;
struct blob_stats {
	uint64_t hits, misses, evictions;
	uint64_t bytes, count;
};

/* returns: new, free with blob_store_free; NULL when out of memory. */
struct blob_store *blob_store_new(uint64_t cap_bytes);
void blob_store_free(struct blob_store *s);
/* A blob is held once for each tenant that sent its bytes (a copy of its
 * own: no time or count of a PUT says whether another tenant holds it),
 * and a tenant sees only the blobs it sent the bytes of: its name alone is
 * no key to it (a tenant that knows a SHA-256 must still prove the bytes). */
/* A new reference to blob sha's tensor in *t (and the blob becomes the
 * most recently used); false when tenant does not hold it.  Counts a hit
 * or a miss. */
bool blob_get(struct blob_store *s, const char *sha, int tenant, struct tir_tensor *t);
/* Whether tenant holds sha (counts nothing, touches it). */
bool blob_touch(struct blob_store *s, const char *sha, int tenant);
/* tenant sent sha's bytes, which the server has: it holds it now.
 * returns 1 (newly), 0 (it did already), -1 (not there: evicted since). */
int blob_grant(struct blob_store *s, const char *sha, int tenant);
/* Keep t under sha for tenant (takes t's reference; t is left empty), then
 * evict least recently used blobs past the budget.  returns 1 when stored
 * or newly the tenant's (t released when the bytes were there), 0 when
 * the tenant held it already (t released), -1 when out of memory. */
int blob_put(struct blob_store *s, const char *sha, int tenant, struct tir_tensor *t, uint64_t bytes);
void blob_store_stats(struct blob_store *s, struct blob_stats *st);
/* The blobs tenant holds and their bytes (as the cache counts them): what
 * /metrics shows a tenant of its own. */
void blob_store_tenant(struct blob_store *s, int tenant, uint64_t *count, uint64_t *bytes);

/* ---- graphs ---- */

struct graph {
	char sha[TIR_SHA_HEX + 1];
	int tenant;                    /* whose: a tenant learns nothing of another's texts */
	struct tir_program *prog;
	struct tir_exec *x;            /* used under the server's compute mutex only */
	/* store.c's: */
	int refs;
	uint64_t used;
	uint64_t cost;                 /* what it was charged to --max-memory (its parse's estimate) */
	struct graph *next;            /* hash chain */
};
struct graph_store;

/* At most max_graphs graphs, whose costs add up to at most cap_bytes. */
struct graph_store *graph_store_new(int max_graphs, uint64_t cap_bytes);
void graph_store_free(struct graph_store *s);
/* Tenant's graph named sha with a reference (release with graph_unref), or NULL. */
struct graph *graph_get(struct graph_store *s, const char *sha, int tenant);
/* Keep a parsed program under sha (takes p; it gets an exec) and its
 * charge of cost bytes to --max-memory (taken: given back when the graph
 * goes), and return it with a reference; when another request stored sha
 * meanwhile, p is freed and that one is returned.  Graphs no run holds are
 * evicted, least recently used first, to make room.  NULL (p freed, cost
 * given back) with *why 413 when cost alone is over the cache's size, 503
 * when the graphs in use fill it now, 500 when out of memory. */
struct graph *graph_put(struct graph_store *s, const char *sha, int tenant, struct tir_program *p,
			uint64_t cost, int *why);
/* Let go of a reference (and evict what no longer fits). */
void graph_unref(struct graph_store *s, struct graph *g);
/* Drop the graphs no run holds, tenant's (-1: anyone's): what they cost. */
uint64_t graph_store_trim(struct graph_store *s, int tenant);
/* What tenant's graphs cost; the cache's size; graphs refused for room. */
uint64_t graph_store_tenant_bytes(struct graph_store *s, int tenant);
uint64_t graph_store_cap(const struct graph_store *s);
uint64_t graph_store_refused(struct graph_store *s);
uint64_t graph_store_hits(struct graph_store *s);
size_t graph_store_count(struct graph_store *s);
/* What the graphs kept cost (at most the cache's size). */
uint64_t graph_store_bytes(struct graph_store *s);

/* ---- sessions ---- */

#define SESSION_ID_HEX 32
#define SESSION_MAX_VALUES 4096
#define SESSION_KEY_MAX 64

struct session;
struct session_store;

struct session_store *session_store_new(int max_sessions, int ttl_seconds);
void session_store_free(struct session_store *s);
/* Make a session of tenant's; its id (32 hex digits of 128 random bits)
 * in id.  lease: seconds it may go without a request or a renewal (its
 * client's sign of life) before it expires, besides the TTL (0: none).
 * returns 0; -1 when max_sessions are open after expiring idle ones; -3
 * when the tenant has tenant_max open; -2 when out of memory or without
 * randomness. */
int session_create(struct session_store *s, int tenant, int tenant_max, int lease,
		   char id[SESSION_ID_HEX + 1]);
/* The live session id of tenant's, touched, with a reference
 * (session_unref), or NULL (none, or another tenant's). */
struct session *session_get(struct session_store *s, const char *id, int tenant);
void session_unref(struct session_store *s, struct session *ss);
/* Delete session id now (a run under way finishes on its own reference).
 * returns false when there is no such session. */
bool session_delete(struct session_store *s, const char *id, int tenant);
/* Renew the lease of tenant's session id (its TTL is not touched: a
 * renewal is a sign of life, not of use); *lease is its lease (0: none).
 * false when there is no such session. */
bool session_renew(struct session_store *s, const char *id, int tenant, int *lease);
/* Expire sessions idle past the TTL, and those whose lease ran out. */
void session_sweep(struct session_store *s);
/* Sessions tenant has open. */
int session_store_tenant(struct session_store *s, int tenant);
/* A new reference to the value kept under key in *t; false when none. */
bool session_value(struct session_store *s, struct session *ss, const char *key,
		   struct tir_tensor *t);
/* session_value, and the value's chunk list and blob name when
 * session_value_note kept them: *list a copy (free it), or NULL. */
bool session_value_chunks(struct session_store *s, struct session *ss, const char *key,
			  struct tir_tensor *t, unsigned char **list, size_t *len,
			  char blob[TIR_SHA_HEX + 1]);
/* Keep a copy of list[0..len), the chunk list of t's frame, and its blob
 * name, with the value key holds, while that is t (it is charged to the
 * memory budget; when there is no room, or key holds another value now,
 * nothing is kept): the next export of it need not hash it again. */
void session_value_note(struct session_store *s, struct session *ss, const char *key,
			const struct tir_tensor *t, const unsigned char *list, size_t len,
			const char blob[TIR_SHA_HEX + 1]);
/* Whether, after forgetting drop[0..ndrop) and adding the keys
 * keys[0..nkeep) (replacing any they hold), the session keeps at most
 * SESSION_MAX_VALUES values. */
bool session_fits(struct session_store *s, struct session *ss, const char *const *drop,
		  size_t ndrop, const char *const *keys, size_t nkeep);
/* Forget drop[0..ndrop), then keep vals[i] under keys[i] (new references
 * are taken; vals are left as they are; each record is charged to the
 * memory budget).  A deleted or expired session takes nothing.  returns
 * 0, -1 over the value limit (nothing changed), or -2 out of memory or
 * over the memory budget (nothing changed, but a failed grow of the
 * table, which drops the value). */
int session_update(struct session_store *s, struct session *ss, const char *const *drop,
		   size_t ndrop, const char *const *keys, const struct tir_tensor *vals, size_t nkeep);
size_t session_store_count(struct session_store *s);
/* The bytes tenant's sessions keep (tensors and records). */
size_t session_store_tenant_bytes(struct session_store *s, int tenant);
/* A tenant at its cap of sessions (session_create) takes the slot of its
 * session without a lease that has been idle longest, once idle for
 * `seconds` (0: never); sessions reclaimed so. */
void session_store_set_reclaim(struct session_store *s, int seconds);
uint64_t session_store_reclaimed(struct session_store *s);
/* The values all sessions keep, and what they hold: their tensors'
 * bytes and their records'. */
void session_store_kept(struct session_store *s, size_t *count, size_t *bytes);
uint64_t session_store_created(struct session_store *s);
/* Sessions expired so far: idle past the TTL, their lease not renewed. */
void session_store_expired(struct session_store *s, uint64_t *ttl, uint64_t *lease);
/* Whether key is 1..64 bytes of [A-Za-z0-9_.-]. */
bool session_key_valid(const char *key);
/* Whether ss was deleted or expired (a request's reference keeps it). */
bool session_dead(struct session_store *s, struct session *ss);

/* ---- capabilities (POST /v1/sessions/ID/export, GET /v1/exports/CAP) ----
 * A capability is 256 random bits, as 64 hex digits, that names one value
 * of one session for one GET: the value's frame and its chunk list, held
 * by reference (a key dropped later does not take it away).  The store
 * keeps the SHA-256 of each, not the capability, and finds one by it, so
 * that no lookup's time depends on how much of a guess was right.  A
 * capability dies when it is used, and with its session (deleted,
 * expired, its lease run out) and the server. */
#define SESSION_MAX_CAPS 64

/* What a capability hands out: the PUT body of its blob, in pieces. */
struct cap_value {
	struct tir_tensor t;           /* contiguous; a reference */
	unsigned char *list;           /* the chunk list (malloc'd), listlen bytes */
	size_t listlen;
	char blob[TIR_SHA_HEX + 1];    /* the SHA-256 of the list */
	uint64_t frame_bytes;
};
void cap_value_release(struct cap_value *v);
/* Issue a capability for v in ss (v taken: its tensor reference and list
 * are the capability's now, v left empty; on failure released).  cap gets
 * its 64 hex digits.  returns 0; -1 when ss has SESSION_MAX_CAPS open; -2
 * no memory, no randomness or over the memory budget; -3 ss is dead. */
int session_cap_issue(struct session_store *s, struct session *ss, struct cap_value *v,
		      char cap[TIR_SHA_HEX + 1]);
/* Use capability cap (any string) as tenant: true with its value in *v
 * (the caller's, release it), and the capability gone; false when there
 * is none such, it is another tenant's, or its session has expired (all
 * alike). */
bool session_cap_take(struct session_store *s, const char *cap, int tenant, struct cap_value *v);
/* Capabilities open, and the frame bytes they hold. */
void session_store_caps(struct session_store *s, size_t *count, uint64_t *bytes);

/* ---- blob uploads (upload.c) ---- */

/* A PUT of blob `name` whose body is len bytes (its Content-Length): the
 * chunk list, then the frame (net.h), checked and decoded as it arrives;
 * held: the server holds the blob already (check only).  returns: new,
 * free with upload_free; NULL when out of memory. */
struct upload *upload_new(const char *name, uint64_t len, bool held);
/* The next n bytes of the body. */
void upload_absorb(struct upload *u, const void *d, size_t n);
/* The body is whole.  returns 0 with the decoded tensor in *t (new
 * reference; left empty when held) and *held as given, or the status of
 * what is wrong (400 with *code "bad_hash" (the list does not hash to the
 * name, or a chunk to its entry), "bad_request" (not a valid list or
 * frame) or "protocol" (a body of protocol 1); 413 over the element
 * limit; 503 no memory) with msg filled. */
int upload_finish(struct upload *u, bool *held, struct tir_tensor *t, const char **code, char *msg,
		  size_t n);
/* The frame's bytes (its chunk list says), once the list's head is in. */
uint64_t upload_frame_bytes(const struct upload *u);
/* Whether something is wrong already (upload_finish will say what): the
 * rest of the body need not be read. */
bool upload_failed(const struct upload *u);
/* Free it at any point (a client that went away mid-upload). */
void upload_free(struct upload *u);

#endif
