/*
 * wire.c — the binary formats of net.h: tensor frames, SHA-256 names
 * (OpenSSL's libcrypto, which uses this CPU's SHA extensions), the
 * constant-time compare for tokens, the count of a JSON body's values
 * that the server makes before it lets a parser near the body, and the
 * tuning of sockets to this machine.
 */
#include "net.h"
#include "../exec/vmath.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor data goes on the wire as the host stores it: little-endian hosts only"
#endif

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

size_t tir_frame_size(const struct tir_tensor *t)
{
	size_t data = (size_t)tir_tensor_numel(t) * tir_dtype_size(t->dtype);
	return 16 + 8 * (size_t)t->rank + pad8(data);
}

size_t tir_frame_head(const struct tir_tensor *t, unsigned char *head)
{
	memcpy(head, TIR_FRAME_MAGIC, 4);
	head[4] = (unsigned char)t->dtype;
	head[5] = (unsigned char)t->rank;
	head[6] = head[7] = 0;
	tir_put_u64(head + 8, (uint64_t)tir_tensor_numel(t) * tir_dtype_size(t->dtype));
	for (int i = 0; i < t->rank; i++)
		tir_put_u64(head + 16 + 8 * i, (uint64_t)t->shape[i]);
	return 16 + 8 * (size_t)t->rank;
}

int tir_frame_encode(const struct tir_tensor *t, void *dst, struct tir_err *err)
{
	unsigned char *p = dst;
	size_t data = (size_t)tir_tensor_numel(t) * tir_dtype_size(t->dtype);
	p += tir_frame_head(t, p);
	if (data && tir_tensor_is_contiguous(t)) {
		memcpy(p, tir_tensor_data(t), data);
	} else if (data) {
		struct tir_tensor c = {0};
		if (tir_tensor_convert(t, t->dtype, &c, err))
			return -TIR_ENOMEM;
		memcpy(p, tir_tensor_data(&c), data);
		tir_tensor_release(&c);
	}
	memset(p + data, 0, pad8(data) - data);
	return 0;
}

int tir_frame_head_parse(const unsigned char *p, size_t len, struct tir_frame_info *fi, struct tir_err *err)
{
	if (len < 16)
		return 16;
	if (memcmp(p, TIR_FRAME_MAGIC, 4))
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: does not start with \"TIRT\"");
	if (p[4] >= TIR_DTYPE_COUNT)
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: byte 4: unknown dtype %u", p[4]);
	if (p[5] > TIR_MAX_RANK)
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: byte 5: rank %u is over %d", p[5],
				TIR_MAX_RANK);
	if (p[6] || p[7])
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: bytes 6-7 must be zero");
	fi->dtype = p[4];
	fi->rank = p[5];
	fi->headlen = 16 + 8 * (size_t)fi->rank;
	if (len < fi->headlen)
		return (int)fi->headlen;
	uint64_t numel = 1, real = 1;
	fi->too_many = false;
	for (int i = 0; i < fi->rank; i++) {
		uint64_t d = tir_get_u64(p + 16 + 8 * i);
		if (d > (uint64_t)TIR_MAX_DIM) {
			fi->too_many = true;
			return tir_errf(err, TIR_EDATA, NULL, "tensor frame: byte %d: axis %d of %llu is over the limit",
					16 + 8 * i, i, (unsigned long long)d);
		}
		fi->shape[i] = (int64_t)d;
		/* a 0 axis counts as 1, as in the checker; both axes are at most
		 * 2^32, so the test comes before the product can wrap */
		uint64_t f = d ? d : 1;
		if (numel > (uint64_t)TIR_MAX_ELEMS / f) {
			fi->too_many = true;
			return tir_errf(err, TIR_EDATA, NULL, "tensor frame: more than %lld elements, the most a tensor holds",
					(long long)TIR_MAX_ELEMS);
		}
		numel *= f;
		real *= d;
		if (numel > (uint64_t)TIR_MAX_ELEMS) {
			fi->too_many = true;
			return tir_errf(err, TIR_EDATA, NULL, "tensor frame: more than %lld elements, the most a tensor holds",
					(long long)TIR_MAX_ELEMS);
		}
	}
	fi->nbytes = tir_get_u64(p + 8);
	if (fi->nbytes != real * tir_dtype_size(fi->dtype))
		return tir_errf(err, TIR_EDATA, NULL,
				"tensor frame: byte 8: %llu data bytes, but %s of that shape holds %llu",
				(unsigned long long)fi->nbytes, tir_dtype_name(fi->dtype),
				(unsigned long long)(real * tir_dtype_size(fi->dtype)));
	fi->padlen = pad8((size_t)fi->nbytes) - (size_t)fi->nbytes;
	return 0;
}

int tir_frame_decode(const void *buf, size_t len, size_t *used, struct tir_tensor *t,
		     struct tir_err *err)
{
	const unsigned char *p = buf;
	struct tir_frame_info fi;
	int rc = tir_frame_head_parse(p, len, &fi, err);
	if (rc > 0 && len < 16)
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: %zu bytes, a header needs 16", len);
	if (rc > 0)
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: %zu bytes, the rank-%d header needs %zu",
				len, fi.rank, fi.headlen);
	if (rc)
		return rc;
	size_t head = fi.headlen, nbytes = (size_t)fi.nbytes;
	size_t total = head + nbytes + fi.padlen;
	if (len < total)
		return tir_errf(err, TIR_EDATA, NULL, "tensor frame: truncated: %zu of %zu bytes", len, total);
	for (size_t i = head + nbytes; i < total; i++)
		if (p[i])
			return tir_errf(err, TIR_EDATA, NULL, "tensor frame: byte %zu: padding must be zero", i);
	if (fi.dtype == TIR_DTYPE_BOOL)
		for (size_t i = 0; i < nbytes; i++)
			if (p[head + i] > 1)
				return tir_errf(err, TIR_EDATA, NULL, "tensor frame: byte %zu: a bool is 0 or 1, not %u",
						head + i, p[head + i]);
	rc = tir_tensor_alloc(t, fi.dtype, fi.rank, fi.shape, false, err);
	if (rc)
		return rc;
	if (nbytes)
		memcpy(tir_tensor_data(t), p + head, nbytes);
	*used = total;
	return 0;
}

/* ---- copies into big tensors ---- */

#if TIR_ISA_X86
#include <immintrin.h>

__attribute__((target("avx512f"))) static void stream_a5(unsigned char *d, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i += 64)
		_mm512_stream_si512((void *)(d + i), _mm512_loadu_si512(s + i));
	_mm_sfence();
}

__attribute__((target("avx2"))) static void stream_a2(unsigned char *d, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i += 32)
		_mm256_stream_si256((void *)(d + i), _mm256_loadu_si256((const void *)(s + i)));
	_mm_sfence();
}
#endif

void tir_copy_stream(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
#if TIR_ISA_X86
	enum tir_vmath_path p = tir_vmath_path();
	if (n >= 4096 && p >= TIR_VMATH_AVX2) {
		size_t head = (64 - ((uintptr_t)d & 63)) & 63; /* to dst's next 64 bytes */
		memcpy(d, s, head);
		size_t body = (n - head) & ~(size_t)63;
		if (p == TIR_VMATH_AVX512)
			stream_a5(d + head, s + head, body);
		else
			stream_a2(d + head, s + head, body);
		memcpy(d + head + body, s + head + body, n - head - body);
		return;
	}
#endif
	memcpy(d, s, n);
}

/* ---- faulting in a fresh tensor's pages ahead of a copy ---- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define TOUCH_STEP ((size_t)4 << 20)

static void *touch_thread(void *arg)
{
	struct tir_toucher *t = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = ((uintptr_t)t->data + page - 1) & ~(uintptr_t)(page - 1);
	size_t skip = base - (uintptr_t)t->data; /* to the first whole page */
	size_t span = t->n > skip ? (t->n - skip) & ~(page - 1) : 0;
	for (size_t ahead = 0; ahead < span && !atomic_load(&t->stop);) {
		/* past what the copy has faulted in already, if it got ahead */
		size_t done = atomic_load_explicit(&t->done, memory_order_relaxed);
		if (done > skip + ahead)
			ahead = (done - skip) & ~(page - 1);
		if (ahead >= span)
			break;
		size_t n = span - ahead < TOUCH_STEP ? span - ahead : TOUCH_STEP;
		if (madvise((void *)(base + ahead), n, MADV_POPULATE_WRITE))
			break; /* not on this kernel: the copy faults them in */
		ahead += n;
	}
	return NULL;
}

void tir_touch_start(struct tir_toucher *t, void *data, size_t n)
{
	t->data = data;
	t->n = n;
	atomic_store(&t->done, 0);
	atomic_store(&t->stop, false);
	t->on = !pthread_create(&t->th, NULL, touch_thread, t);
}

void tir_touch_stop(struct tir_toucher *t)
{
	if (!t->on)
		return;
	atomic_store(&t->stop, true);
	pthread_join(t->th, NULL);
	t->on = false;
}

/* ---- sockets to this machine ---- */

bool tir_addr_loopback(const struct sockaddr *sa)
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

void tir_sock_local(int fd, const struct sockaddr *peer)
{
#ifdef TCP_CONGESTION
	static const char reno[] = "reno";
	if (fd >= 0 && tir_addr_loopback(peer))
		setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1);
#endif
}

/* ---- SHA-256 ---- */

static void hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = 0;
}

void tir_sha256_hex(const void *d, size_t n, char out[TIR_SHA_HEX + 1])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	EVP_Digest(d, n, md, &mdlen, EVP_sha256(), NULL);
	hex(md, 32, out);
}

struct tir_sha256 {
	EVP_MD_CTX *ctx;
};

struct tir_sha256 *tir_sha256_new(void)
{
	struct tir_sha256 *h = malloc(sizeof *h);
	if (!h)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || !EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(h->ctx);
		free(h);
		return NULL;
	}
	return h;
}

void tir_sha256_update(struct tir_sha256 *h, const void *d, size_t n)
{
	EVP_DigestUpdate(h->ctx, d, n);
}

void tir_sha256_final(struct tir_sha256 *h, char out[TIR_SHA_HEX + 1])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	EVP_DigestFinal_ex(h->ctx, md, &mdlen);
	hex(md, 32, out);
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

bool tir_sha_valid(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (i >= TIR_SHA_HEX || !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == TIR_SHA_HEX;
}

bool tir_const_eq(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

/* ---- JSON, counted before it is parsed ---- */

/* The end of the string whose opening quote is p[i - 1]: the index of its
 * closing quote, or len.  A quote is escaped when an odd number of
 * backslashes (of this string) stands before it. */
static size_t string_end(const unsigned char *p, size_t i, size_t len)
{
	size_t from = i;
	for (;;) {
		const unsigned char *q = memchr(p + i, '"', len - i);
		if (!q)
			return len;
		size_t at = (size_t)(q - p), back = 0;
		while (at - back > from && p[at - back - 1] == '\\')
			back++;
		if (!(back & 1))
			return at;
		i = at + 1;
	}
}

/* Containers deeper than this are not told apart (jansson's parser stops
 * at depth 2048): a string followed by ':' in one counts as a value. */
#define JSON_DEPTH 2048

size_t tir_json_values(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	unsigned char object[JSON_DEPTH / 8] = {0}; /* by depth: the container is an object */
	size_t n = 0, depth = 0;
	bool scalar = false;           /* inside a number or a literal */
	bool pending = false;          /* a string closed: a value, unless it is an object's key */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			scalar = false;
			continue;
		}
		if (pending) {
			size_t d = depth - 1;
			pending = false;
			n += !(c == ':' && depth && d < JSON_DEPTH && (object[d / 8] >> (d % 8) & 1));
		}
		bool mark = c == '"' || c == '{' || c == '[' || c == '}' || c == ']' || c == ',' || c == ':';
		if (c == '"') {
			i = string_end(p, i + 1, len);
			pending = true;
		} else if (c == '{' || c == '[') {
			if (depth < JSON_DEPTH)
				object[depth / 8] = (unsigned char)((object[depth / 8] & ~(1u << depth % 8)) |
								    (unsigned)(c == '{') << depth % 8);
			depth++;
			n++;
		} else if (c == '}' || c == ']') {
			depth -= depth > 0;
		} else if (!mark && !scalar) {
			n++; /* a number or a literal begins */
		}
		scalar = !mark;
	}
	return n + pending;
}
