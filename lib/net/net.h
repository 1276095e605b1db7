/*
 * net.h — lib/net's one internal header: what goes over the wire between
 * `tir run --remote` / the REPL's .remote (client.c, batch.c) and `tir
 * serve` (server.c).  docs/protocol.md is the contract; this is its code.
 *
 * Every binary format is fixed-width little-endian, 8-byte aligned:
 *
 *   tensor frame (a blob; also each result):
 *     0  "TIRT"            4 bytes
 *     4  dtype             u8   (enum tir_dtype: 0 bool, 1 i32, 2 i64, 3 f32,
 *                               4 f64, 5 f16, 6 bf16, 7 i8, 8 u8, 9 i16)
 *     5  rank              u8   (<= TIR_MAX_RANK)
 *     6  0                 u16
 *     8  nbytes            u64  (numel * dtype size; bool is one byte 0/1)
 *    16  shape[rank]       i64 each
 *    16+8*rank  data       nbytes, row-major, then zero padding to 8
 *   A blob is one frame; its name is the SHA-256 of the frame's chunk
 *   list (below, "blob names"), not of the frame itself.
 *
 *   results (the body of a successful run):
 *     0  "TIRR"            4 bytes
 *     4  protocol          u32
 *     8  count             u32  (tensor frames that follow)
 *    12  meta_len          u32  (bytes of JSON: run statistics)
 *    16  meta              JSON text, zero padding to 8
 *        count tensor frames
 */
#ifndef TIR_NET_H
#define TIR_NET_H

#include "api.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#define TIR_PROTOCOL_STR "4"          /* TIR_PROTOCOL (tir.h) as text */
_Static_assert(TIR_PROTOCOL == 4, "TIR_PROTOCOL_STR says TIR_PROTOCOL");
#define TIR_PROTOCOL_HEADER "Tir-Protocol"
#define TIR_SHA_HEX 64                 /* hex digits of a SHA-256 */

#define TIR_FRAME_MAGIC "TIRT"
#define TIR_RESULTS_MAGIC "TIRR"
#define TIR_RESULTS_HEAD 16
#define TIR_FRAME_HEAD_MAX (16 + 8 * TIR_MAX_RANK) /* a frame's header, at most */

/* Bytes of t's frame (header, data, padding). */
size_t tir_frame_size(const struct tir_tensor *t);
/* The header of t's frame into head (TIR_FRAME_HEAD_MAX bytes at most);
 * returns its length.  The data and zero padding to 8 follow it. */
size_t tir_frame_head(const struct tir_tensor *t, unsigned char *head);
/* Write t's frame into dst (tir_frame_size(t) bytes; t may be any layout).
 * returns 0 or -TIR_ENOMEM (a strided t is copied first). */
int tir_frame_encode(const struct tir_tensor *t, void *dst, struct tir_err *err);
/* Read one frame from buf[0..len): every field checked (magic, dtype, rank,
 * shape limits, nbytes == numel * size, len, padding); *used is the frame's
 * size.  t gets a fresh contiguous tensor (release it).  returns 0 or
 * -TIR_EDATA with err saying what is wrong and at which byte. */
int tir_frame_decode(const void *buf, size_t len, size_t *used, struct tir_tensor *t,
		     struct tir_err *err);

/* ---- blob names (protocol 2; chunks.c) ----
 * A frame of F bytes is cut in chunks of TIR_CHUNK bytes (the last one
 * shorter); each chunk's SHA-256 is one entry of the chunk list
 *     0  "TIRC"   4 bytes
 *     4  TIR_CHUNK u32
 *     8  F        u64
 *    16  k x 32   the chunks' SHA-256, k = ceil(F / TIR_CHUNK)
 * and a blob's name is the SHA-256 of its chunk list.  A PUT of a blob
 * sends the chunk list, then the frame. */
#define TIR_CHUNK ((size_t)256 << 10)
#define TIR_CHUNKS_MAGIC "TIRC"
#define TIR_CHUNKS_HEAD 16
/* POST /v1/blobs: several blobs in one body, each item a head
 *     0  "TIRB"   4 bytes
 *     4  zero     u32
 *     8  L        u64, the item's bytes after the head
 *    16  the blob's name, its SHA-256 (32 bytes, not hex)
 * then what a PUT /v1/blobs/NAME's body is (L bytes: the chunk list, then
 * the frame); at most TIR_BUNDLE_MAX_BLOBS items a request. */
#define TIR_BUNDLE_MAGIC "TIRB"
#define TIR_BUNDLE_HEAD 48
#define TIR_BUNDLE_MAX_BLOBS 4096
/* A frame as its pieces in memory: header, data, and plen zero bytes. */
struct tir_frame_src {
	const unsigned char *head;
	size_t hlen;
	const unsigned char *data;
	size_t dlen, plen;
};
size_t tir_chunk_count(uint64_t frame_bytes);
void tir_chunk_list_head(uint64_t frame_bytes, unsigned char head[TIR_CHUNKS_HEAD]);
/* The hashes of chunks [first, last) of f into out[0..last - first). */
void tir_chunk_hash(const struct tir_frame_src *f, size_t first, size_t last, unsigned char (*out)[32]);
/* Every chunk's hash into out[0..k), on up to nthreads threads (0: one per
 * CPU; small frames use fewer). */
void tir_chunk_hash_all(const struct tir_frame_src *f, unsigned char (*out)[32], int nthreads);
/* Test hook: which byte swap the AVX-512 lanes use, 0 AVX-512F's, 1
 * AVX-512BW's where the CPU has it, -1 (the start) the CPU's choice.
 * Returns whether the BW one is now in use. */
bool tir_chunk_lanes_bw(int bw);
/* The name of a blob: SHA-256 of its chunk list list[0..len). */
void tir_chunk_name(const unsigned char *list, size_t len, char name[TIR_SHA_HEX + 1]);

/* A frame's header, read from p[0..len): returns 0 with fi filled (every
 * field checked as tir_frame_decode checks it); the header's length when
 * len is short of it (16 until the rank is known); or -TIR_EDATA with err
 * saying what is wrong and at which byte (fi->too_many: a shape over the
 * element limit). */
struct tir_frame_info {
	enum tir_dtype dtype;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	uint64_t nbytes;
	size_t headlen, padlen;
	bool too_many;
};
int tir_frame_head_parse(const unsigned char *p, size_t len, struct tir_frame_info *fi, struct tir_err *err);

/* memcpy for data going into a big tensor that is not read again soon
 * (an upload, a result): non-temporal stores on the AVX2 and AVX-512
 * paths, twice memcpy's speed (no read of the lines written), and a fence,
 * so that another thread may read dst once told. */
void tir_copy_stream(void *dst, const void *src, size_t n);

/* A thread that faults in a fresh tensor's pages (MADV_POPULATE_WRITE,
 * 4 MiB a call: no trap per page) ahead of a copy into it, so that the
 * kernel's zeroing of them overlaps the copy (and the receive) instead of
 * stopping it at every page.  tir_touch_start(t, data, n) starts it
 * (t->on says it did); the copier stores its progress in t->done; stop it
 * before the tensor goes. */
struct tir_toucher {
	pthread_t th;
	bool on;
	unsigned char *data;
	size_t n;
	atomic_size_t done;
	atomic_bool stop;
};
void tir_touch_start(struct tir_toucher *t, void *data, size_t n);
void tir_touch_stop(struct tir_toucher *t);

/* A TCP socket whose other end is on this machine (a loopback address:
 * 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) is given the reno congestion
 * control (which every user may choose), whatever the system's default:
 * on loopback there is no congestion to control, and BBR (some systems'
 * default, the benchmark VM's) paces and reorders there, and retransmits
 * for nothing: a 256 MiB upload cost the client twice the CPU and the
 * machine a fifth of its time idle.  Sockets to other machines keep the
 * system's choice.  Best effort: a failure changes nothing. */
bool tir_addr_loopback(const struct sockaddr *sa);
void tir_sock_local(int fd, const struct sockaddr *peer);

/* SHA-256 of d[0..n) as 64 lowercase hex digits and a NUL. */
void tir_sha256_hex(const void *d, size_t n, char out[TIR_SHA_HEX + 1]);
/* Incremental SHA-256 (an upload hashed as it arrives). */
struct tir_sha256;
struct tir_sha256 *tir_sha256_new(void);
void tir_sha256_update(struct tir_sha256 *h, const void *d, size_t n);
void tir_sha256_final(struct tir_sha256 *h, char out[TIR_SHA_HEX + 1]); /* and frees h */
/* Whether s is 64 lowercase hex digits. */
bool tir_sha_valid(const char *s);
/* Compare n bytes in time independent of where they differ (tokens). */
bool tir_const_eq(const void *a, const void *b, size_t n);

/* How many values buf[0..len) holds as JSON, without parsing it: every
 * number, string, literal, array and object counts one, an object's keys
 * do not.  A parser makes no more values than that of it, valid or not
 * (invalid JSON is counted as well as it goes, and a parser stops at its
 * first error), so that a body can be judged by what parsing it would
 * hold before it is parsed.  Linear, no allocation. */
size_t tir_json_values(const void *buf, size_t len);

/* ---- libcurl handles (client.c): a remote's, a server's import ---- */
/* What one handle does beyond what all share. */
struct tir_curl_opts {
	const char *agent;                  /* the User-Agent */
	long connect_ms;                    /* to connect, at most */
	long timeout_ms;                    /* a whole request, at most (0: set per request) */
	char *errbuf;                       /* CURL_ERROR_SIZE bytes for libcurl's message, or NULL */
	curl_write_callback on_head;        /* response headers (NULL: dropped) */
	curl_write_callback on_body;        /* the response's body (NULL: libcurl's own) */
	curl_xferinfo_callback on_progress; /* NULL: none */
	void *ud;                           /* the callbacks' */
	bool big_pieces;                    /* bodies up and down in pieces of 1 MiB */
};
/* Set h up as every handle of tir is: no signals, TCP_NODELAY and
 * keep-alive, no proxy, http or https and no redirect followed, TLS checked
 * against the system's CAs or TIR_CA_FILE's (the host name too), loopback
 * connections tuned (tir_sock_local); then as o says. */
void tir_curl_setup(CURL *h, const struct tir_curl_opts *o);

/* Little-endian fixed-width reads and writes (any host). */
static inline void tir_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline void tir_put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t tir_get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
static inline uint64_t tir_get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif
