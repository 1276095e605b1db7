/*
 * chunks.c — blob names of protocol 2 (net.h): a frame is cut in chunks
 * of TIR_CHUNK bytes, each chunk is hashed with SHA-256 on its own, and
 * the name is the SHA-256 of the chunk list (a 16-byte head and the
 * chunks' hashes).  Chunks hash independently, so a client hashes a big
 * tensor on several threads, and the server checks each chunk as soon as
 * it is in (and can say which one is wrong).
 *
 * The hashes are plain SHA-256 whatever computes them: OpenSSL's (the
 * CPU's SHA extensions) for a chunk alone, and on the AVX-512 vector path
 * sixteen whole chunks at once, one per 32-bit lane of a zmm register
 * (faster a core than the SHA extensions; gathers for loads and the
 * rounds in a loop were slower).  TIR_VMATH below avx512 turns the lanes
 * off.
 */
#include "net.h"
#include "../exec/vmath.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t tir_chunk_count(uint64_t frame_bytes)
{
	return (size_t)((frame_bytes + TIR_CHUNK - 1) / TIR_CHUNK);
}

void tir_chunk_list_head(uint64_t frame_bytes, unsigned char head[TIR_CHUNKS_HEAD])
{
	memcpy(head, TIR_CHUNKS_MAGIC, 4);
	tir_put_u32(head + 4, (uint32_t)TIR_CHUNK);
	tir_put_u64(head + 8, frame_bytes);
}

void tir_chunk_name(const unsigned char *list, size_t len, char name[TIR_SHA_HEX + 1])
{
	tir_sha256_hex(list, len, name);
}

/* ---- sixteen chunks at once (AVX-512F) ---- */

#if TIR_ISA_X86
#include <immintrin.h>

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* One 64-byte block of each lane's message: w[0..16) its words, big-endian
 * already undone.  s: the eight state words of the sixteen lanes. */
__attribute__((target("avx512f"), always_inline)) static inline void compress16(__m512i s[8], const __m512i win[16])
{
	__m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
	__m512i w[16];
	memcpy(w, win, sizeof w);
	/* the constants read from memory (a broadcast operand of the add),
	 * not made from immediates: that costs two more steps a round */
	const uint32_t *k = K256;
	__asm__("" : "+r"(k));
	#pragma GCC unroll 64
	for (int t = 0; t < 64; t++) {
		__m512i wt;
		if (t < 16) {
			wt = w[t];
		} else {
			__m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
			__m512i s0 = _mm512_ternarylogic_epi32(_mm512_ror_epi32(w15, 7), _mm512_ror_epi32(w15, 18),
							       _mm512_srli_epi32(w15, 3), 0x96);
			__m512i s1 = _mm512_ternarylogic_epi32(_mm512_ror_epi32(w2, 17), _mm512_ror_epi32(w2, 19),
							       _mm512_srli_epi32(w2, 10), 0x96);
			wt = _mm512_add_epi32(_mm512_add_epi32(w[t & 15], s0), _mm512_add_epi32(w[(t - 7) & 15], s1));
			w[t & 15] = wt;
		}
		/* summed so that e's next value waits on three steps after e:
		 * h + K + w and d are there a round early */
		__m512i hk = _mm512_add_epi32(h, _mm512_add_epi32(wt, _mm512_set1_epi32((int)k[t])));
		__m512i ch = _mm512_ternarylogic_epi32(e, f, g, 0xca);
		__m512i S1 = _mm512_ternarylogic_epi32(_mm512_ror_epi32(e, 6), _mm512_ror_epi32(e, 11),
						       _mm512_ror_epi32(e, 25), 0x96);
		__m512i hkc = _mm512_add_epi32(hk, ch);
		__m512i S0 = _mm512_ternarylogic_epi32(_mm512_ror_epi32(a, 2), _mm512_ror_epi32(a, 13),
						       _mm512_ror_epi32(a, 22), 0x96);
		__m512i mj = _mm512_ternarylogic_epi32(a, b, c, 0xe8);
		h = g;
		g = f;
		f = e;
		e = _mm512_add_epi32(_mm512_add_epi32(d, hkc), S1);
		d = c;
		c = b;
		b = a;
		a = _mm512_add_epi32(_mm512_add_epi32(hkc, S1), _mm512_add_epi32(S0, mj));
	}
	s[0] = _mm512_add_epi32(s[0], a);
	s[1] = _mm512_add_epi32(s[1], b);
	s[2] = _mm512_add_epi32(s[2], c);
	s[3] = _mm512_add_epi32(s[3], d);
	s[4] = _mm512_add_epi32(s[4], e);
	s[5] = _mm512_add_epi32(s[5], f);
	s[6] = _mm512_add_epi32(s[6], g);
	s[7] = _mm512_add_epi32(s[7], h);
}

/* Big-endian words to the host's (AVX-512F has no byte shuffle). */
__attribute__((target("avx512f"))) static inline __m512i bswap32(__m512i x)
{
	__m512i r = _mm512_ror_epi32(x, 16);
	return _mm512_ternarylogic_epi32(_mm512_set1_epi32((int)0xff00ff00u), _mm512_slli_epi32(r, 8),
					 _mm512_srli_epi32(r, 8), 0xca);
}

/* The same with AVX-512BW's byte shuffle, one instruction where the above
 * is four (three of them on the ports the rounds' rotates use): written
 * as an asm statement, so that the function holding it stays AVX-512F and
 * runs only where the CPU says it has the instruction (bw_ok, by
 * TIR_CPU_HAS as every other feature). */
__attribute__((target("avx512f"))) static inline __m512i bswap32_bw(__m512i x, __m512i idx)
{
	__m512i r;
	__asm__("vpshufb %2, %1, %0" : "=v"(r) : "v"(x), "v"(idx));
	return r;
}

/* The 16 x 16 words in r, transposed: lane j's word t to r[t]'s lane j
 * (four rounds of shuffles, all AVX-512F). */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(__m512i r[16])
{
	__m512i t[16];
	#pragma GCC unroll 64
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	#pragma GCC unroll 64
	for (int i = 0; i < 16; i += 4) {
		r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	#pragma GCC unroll 64
	for (int h = 0; h < 16; h += 8)
		#pragma GCC unroll 64
		for (int i = 0; i < 4; i++) {
			t[h + i] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0x88);
			t[h + i + 4] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0xdd);
		}
	#pragma GCC unroll 64
	for (int i = 0; i < 8; i++) {
		r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
		r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
	}
}

/* How far ahead of the block being hashed each lane's lines are fetched:
 * sixteen streams 256 KiB apart are more than the CPU's prefetchers
 * follow, and a load that misses stalls the rounds behind it. */
#define PREFETCH_AHEAD 1024

/* SHA-256 of m (1..16) messages of TIR_CHUNK bytes at base + j * TIR_CHUNK;
 * lanes past m repeat the first message and are not written.  Each block
 * is sixteen plain loads (one a lane) and a transpose, not gathers (which
 * cost as much as the rounds). */
__attribute__((target("avx512f"), always_inline)) static inline void
sha256_x16_body(const unsigned char *base, int m, unsigned char (*out)[32], const bool bw)
{
	const __m512i rev = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
	static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	__m512i s[8], w[16];
	for (int i = 0; i < 8; i++)
		s[i] = _mm512_set1_epi32((int)H0[i]);
	const unsigned char *lane[16];
	for (int j = 0; j < 16; j++)
		lane[j] = base + (j < m ? (size_t)j * TIR_CHUNK : 0);
	for (size_t at = 0; at < TIR_CHUNK; at += 64) {
		if (at + PREFETCH_AHEAD < TIR_CHUNK)
			for (int j = 0; j < m; j++)
				_mm_prefetch((const char *)lane[j] + at + PREFETCH_AHEAD, _MM_HINT_T0);
		#pragma GCC unroll 64
		for (int j = 0; j < 16; j++)
			w[j] = _mm512_loadu_si512(lane[j] + at);
		transpose16(w);
		#pragma GCC unroll 64
		for (int t = 0; t < 16; t++)
			w[t] = bw ? bswap32_bw(w[t], rev) : bswap32(w[t]);
		compress16(s, w);
	}
	/* the padding block: 0x80, zeros, the length in bits */
	for (int t = 0; t < 16; t++)
		w[t] = _mm512_setzero_si512();
	w[0] = _mm512_set1_epi32((int)0x80000000u);
	uint64_t bits = (uint64_t)TIR_CHUNK * 8;
	w[14] = _mm512_set1_epi32((int)(uint32_t)(bits >> 32));
	w[15] = _mm512_set1_epi32((int)(uint32_t)bits);
	compress16(s, w);
	uint32_t st[8][16];
	for (int i = 0; i < 8; i++)
		_mm512_storeu_si512(st[i], s[i]);
	for (int j = 0; j < m; j++)
		for (int i = 0; i < 8; i++) {
			uint32_t v = st[i][j];
			out[j][4 * i] = (unsigned char)(v >> 24);
			out[j][4 * i + 1] = (unsigned char)(v >> 16);
			out[j][4 * i + 2] = (unsigned char)(v >> 8);
			out[j][4 * i + 3] = (unsigned char)v;
		}
}

__attribute__((target("avx512f"))) static void sha256_x16_f(const unsigned char *base, int m,
							      unsigned char (*out)[32])
{
	sha256_x16_body(base, m, out, false);
}

__attribute__((target("avx512f"))) static void sha256_x16_bw(const unsigned char *base, int m,
							       unsigned char (*out)[32])
{
	sha256_x16_body(base, m, out, true);
}

static int bw_force = -1; /* tir_chunk_lanes_bw */

static bool bw_ok(void)
{
	static int ok = -1; /* (a race writes the same value) */
	if (ok < 0)
		ok = TIR_CPU_HAS(AVX512BW, "avx512bw") ? 1 : 0;
	return ok && bw_force != 0;
}

bool tir_chunk_lanes_bw(int bw)
{
	bw_force = bw;
	return bw_ok();
}

static void sha256_x16(const unsigned char *base, int m, unsigned char (*out)[32])
{
	if (bw_ok())
		sha256_x16_bw(base, m, out);
	else
		sha256_x16_f(base, m, out);
}

static bool lanes_ok(void)
{
	return tir_vmath_path() == TIR_VMATH_AVX512;
}
#else
static bool lanes_ok(void)
{
	return false;
}
static void sha256_x16(const unsigned char *base, int m, unsigned char (*out)[32])
{
}
#endif

/* Sixteen lanes cost what sixteen chunks do: fewer than this go one by one. */
#define LANES_MIN 6

/* Chunk i's hash, from the frame's pieces, by OpenSSL. */
static void chunk_one(const struct tir_frame_src *f, size_t i, unsigned char out[32])
{
	static const unsigned char zero[8];
	uint64_t total = f->hlen + f->dlen + f->plen;
	uint64_t a = (uint64_t)i * TIR_CHUNK, b = a + TIR_CHUNK < total ? a + TIR_CHUNK : total;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	/* the part of [a, b) in each piece: head, data, padding */
	const unsigned char *base[3] = {f->head, f->data, zero};
	uint64_t start[3] = {0, f->hlen, f->hlen + f->dlen}, len[3] = {f->hlen, f->dlen, f->plen};
	for (int p = 0; p < 3; p++) {
		uint64_t lo = a > start[p] ? a : start[p], hi = b < start[p] + len[p] ? b : start[p] + len[p];
		if (lo < hi)
			EVP_DigestUpdate(ctx, base[p] + (lo - start[p]), (size_t)(hi - lo));
	}
	unsigned int n = 0;
	EVP_DigestFinal_ex(ctx, out, &n);
	EVP_MD_CTX_free(ctx);
}

/* Whether chunk i is whole and inside the data (the lanes read it there). */
static bool in_data(const struct tir_frame_src *f, size_t i)
{
	uint64_t a = (uint64_t)i * TIR_CHUNK;
	return a >= f->hlen && a + TIR_CHUNK <= f->hlen + f->dlen;
}

void tir_chunk_hash(const struct tir_frame_src *f, size_t first, size_t last, unsigned char (*out)[32])
{
	bool lanes = lanes_ok();
	for (size_t i = first; i < last;) {
		size_t run = 0;
		while (lanes && run < 16 && i + run < last && in_data(f, i + run))
			run++;
		if (run >= LANES_MIN) {
			sha256_x16(f->data + ((uint64_t)i * TIR_CHUNK - f->hlen), (int)run, out + (i - first));
			i += run;
		} else {
			chunk_one(f, i, out[i - first]);
			i++;
		}
	}
}

/* The threads of tir_chunk_hash_all take the groups of sixteen chunks
 * one at a time, the next one not taken: a thread that gets less of the
 * CPU (other work, the server's threads on the same cores) hashes fewer,
 * where halves fixed at the start left the other thread idle at the end. */
struct parts {
	const struct tir_frame_src *f;
	size_t k, groups;
	_Atomic size_t next;
	unsigned char (*out)[32];
};

static void *part_thread(void *arg)
{
	struct parts *p = arg;
	for (;;) {
		size_t g = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
		if (g >= p->groups)
			break;
		size_t first = g * 16, last = first + 16 < p->k ? first + 16 : p->k;
		tir_chunk_hash(p->f, first, last, p->out + first);
	}
	return NULL;
}

#define THREADS_MAX 8
#define THREAD_MIN_CHUNKS 32 /* 8 MiB a thread at least: starting one is small beside it */

void tir_chunk_hash_all(const struct tir_frame_src *f, unsigned char (*out)[32], int nthreads)
{
	size_t k = tir_chunk_count(f->hlen + f->dlen + f->plen);
	if (nthreads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = n > 0 ? (int)n : 1;
	}
	if (nthreads > THREADS_MAX)
		nthreads = THREADS_MAX;
	if ((size_t)nthreads > k / THREAD_MIN_CHUNKS)
		nthreads = (int)(k / THREAD_MIN_CHUNKS);
	if (nthreads <= 1) {
		tir_chunk_hash(f, 0, k, out);
		return;
	}
	struct parts p = {.f = f, .k = k, .groups = (k + 15) / 16, .out = out};
	atomic_init(&p.next, 0);
	pthread_t th[THREADS_MAX];
	bool started[THREADS_MAX] = {false};
	for (int t = 1; t < nthreads; t++)
		started[t] = !pthread_create(&th[t], NULL, part_thread, &p);
	part_thread(&p); /* (a thread that could not start leaves its groups here) */
	for (int t = 1; t < nthreads; t++)
		if (started[t])
			pthread_join(th[t], NULL);
}
