/*
 * peers.c — `tir serve --peers`: the servers an import (POST
 * /v1/sessions/ID/import) may fetch from, as addresses and CIDRs; by
 * default the members of the server's group and loopback.  A source is
 * checked here before any connection is made to it, so that an import
 * cannot be used to probe what else the server can reach: every source
 * that is no peer gets the same answer at once, whether anything listens
 * there or not.  A host is spelled as an address is usually written (four
 * decimal numbers of 0-255, an IPv6 address in brackets) or as a name;
 * other spellings of an IPv4 address that resolvers take (2130706433,
 * 0x7f.1, 017700000001, 127.1) are refused, not normalized.  A name is
 * resolved here, every address it has must be a peer, and the fetch is
 * made to the address checked (no second lookup can give another).
 */
#include "serve.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct peer {
	unsigned char a[16];           /* IPv4 as IPv4-mapped IPv6 */
	int bits;                      /* of the 128 */
};

/* Four decimal numbers of 0-255 separated by dots, no leading zeros: the
 * one spelling of an IPv4 address taken. */
static bool dotted_quad(const char *s, unsigned char out[4])
{
	for (int i = 0; i < 4; i++) {
		if (!isdigit((unsigned char)*s))
			return false;
		int v = 0, n = 0;
		const char *d = s;
		while (isdigit((unsigned char)*s) && n < 4)
			v = v * 10 + (*s++ - '0'), n++;
		if (n > 3 || v > 255 || (n > 1 && *d == '0'))
			return false;
		out[i] = (unsigned char)v;
		if (i < 3 && *s++ != '.')
			return false;
	}
	return *s == 0;
}

/* An address: dotted quad, or IPv6 (without brackets); into a[16]. */
static bool address(const char *s, unsigned char a[16])
{
	unsigned char v4[4];
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (dotted_quad(s, v4)) {
		memcpy(a, mapped, 12);
		memcpy(a + 12, v4, 4);
		return true;
	}
	return strchr(s, ':') && inet_pton(AF_INET6, s, a) == 1;
}

/* Whether a name could be taken for a number by a resolver: all its
 * labels digits, or hex (0x...), as 2130706433, 0x7f.1, 017700000001
 * and 127.1 are. */
static bool numeric_looking(const char *s)
{
	for (const char *p = s; *p;) {
		const char *e = strchr(p, '.');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		bool num = n > 0;
		if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
			for (size_t i = 2; i < n; i++)
				num = num && isxdigit((unsigned char)p[i]);
		} else {
			for (size_t i = 0; i < n; i++)
				num = num && isdigit((unsigned char)p[i]);
		}
		if (!num)
			return false;
		p = e ? e + 1 : p + n;
	}
	return true;
}

static bool in_peer(const struct peer *p, const unsigned char a[16])
{
	int full = p->bits / 8, rest = p->bits % 8;
	if (memcmp(p->a, a, (size_t)full))
		return false;
	return !rest || ((p->a[full] ^ a[full]) & (0xff << (8 - rest)) & 0xff) == 0;
}

static bool is_peer(const struct server *s, const unsigned char a[16])
{
	for (int i = 0; i < s->npeers; i++)
		if (in_peer(&s->peers[i], a))
			return true;
	return false;
}

static int add_peer(struct server *s, const unsigned char a[16], int bits)
{
	struct peer *m = realloc(s->peers, (size_t)(s->npeers + 1) * sizeof *m);
	if (!m)
		return -1;
	s->peers = m;
	memcpy(m[s->npeers].a, a, 16);
	m[s->npeers++].bits = bits;
	return 0;
}

/* Every address of host (a name or an address) as a peer. */
static int add_host(struct server *s, const char *host)
{
	unsigned char a[16];
	if (address(host, a))
		return add_peer(s, a, 128);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res))
		return 0; /* a member that cannot be resolved is no peer */
	int rc = 0;
	for (struct addrinfo *ai = res; ai && !rc; ai = ai->ai_next) {
		char t[INET6_ADDRSTRLEN];
		const void *src = ai->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
							   : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (inet_ntop(ai->ai_family, src, t, sizeof t) && address(t, a))
			rc = add_peer(s, a, 128);
	}
	freeaddrinfo(res);
	return rc;
}

int peers_init(struct server *s, struct tir_err *err)
{
	unsigned char a[16];
	if (s->o.peers) {
		/* --peers ADDR[/BITS],... (repeated flags joined by commas) */
		const char *p = s->o.peers;
		while (*p) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			char one[80];
			if (!n || n >= sizeof one)
				return tir_errf(err, TIR_EUNSUPPORTED, NULL, "--peers: '%.*s' is not an address or a CIDR",
						(int)(n < 60 ? n : 60), p);
			memcpy(one, p, n);
			one[n] = 0;
			char *slash = strchr(one, '/');
			int bits = -1;
			if (slash) {
				*slash = 0;
				char *end;
				long b = strtol(slash + 1, &end, 10);
				bits = slash[1] && !*end && b >= 0 && b <= 128 ? (int)b : -2;
			}
			bool v4 = address(one, a) && !strchr(one, ':');
			if (!address(one, a) || bits == -2 || (v4 && bits > 32))
				return tir_errf(err, TIR_EUNSUPPORTED, NULL,
						"--peers: '%s%s%s' is not an address or a CIDR (1.2.3.4, 10.0.0.0/8, "
						"fd00::/8)", one, slash ? "/" : "", slash ? slash + 1 : "");
			bits = bits < 0 ? 128 : v4 ? bits + 96 : bits;
			for (int i = bits / 8 + (bits % 8 != 0); i < 16; i++) /* the address's host bits are no part of it */
				a[i] = 0;
			if (bits % 8)
				a[bits / 8] &= (unsigned char)(0xff << (8 - bits % 8));
			if (add_peer(s, a, bits))
				return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
			p += n + (e != NULL);
		}
		return 0;
	}
	/* the default: loopback, and the group's members */
	address("127.0.0.0", a);
	if (add_peer(s, a, 104))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	address("::1", a);
	if (add_peer(s, a, 128))
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	for (int r = 0; s->group.members && r < s->group.size; r++) {
		char host[GROUP_ADDR];
		const char *m = s->group.members[r];
		const char *colon = strrchr(m, ':');
		size_t n = colon ? (size_t)(colon - m) : strlen(m);
		if (n && m[0] == '[')
			snprintf(host, sizeof host, "%.*s", (int)n - 2, m + 1);
		else
			snprintf(host, sizeof host, "%.*s", (int)n, m);
		if (add_host(s, host))
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	return 0;
}

int peers_check(const struct server *s, const char *from, char *resolve, size_t n)
{
	/* from is http(s)://HOST:PORT, as xfer.c's parse_from took it */
	const char *h = strstr(from, "://");
	if (!h)
		return -1;
	h += 3;
	const char *colon = strrchr(h, ':');
	if (!colon)
		return -1;
	char host[FROM_HOST_MAX];
	size_t hl = (size_t)(colon - h);
	if (hl >= sizeof host)
		return -1;
	memcpy(host, h, hl);
	host[hl] = 0;
	const char *port = colon + 1;
	char bare[FROM_HOST_MAX];
	snprintf(bare, sizeof bare, "%s", host[0] == '[' ? host + 1 : host);
	if (host[0] == '[')
		bare[strlen(bare) - 1] = 0;
	unsigned char a[16];
	if (address(bare, a)) {
		if (!is_peer(s, a))
			return -1;
		resolve[0] = 0; /* an address: nothing to resolve */
		return 0;
	}
	if (host[0] == '[' || numeric_looking(bare))
		return -2;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(bare, NULL, &hints, &res) || !res)
		return -1;
	/* curl's --resolve: HOST:PORT:ADDRESS[,ADDRESS...] (IPv6 ones in
	 * brackets), every address checked: curl tries them in turn, as it
	 * would have, but reaches no other (localhost may be ::1 first and
	 * the source listen on 127.0.0.1 alone) */
	int rc = 0, len = snprintf(resolve, n, "%s:%s:", bare, port), nat = 0;
	for (struct addrinfo *ai = res; ai && !rc; ai = ai->ai_next) {
		char t[INET6_ADDRSTRLEN], one[INET6_ADDRSTRLEN + 3];
		const void *src = ai->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
							   : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (!inet_ntop(ai->ai_family, src, t, sizeof t) || !address(t, a) || !is_peer(s, a)) {
			rc = -1;
			break;
		}
		snprintf(one, sizeof one, ai->ai_family == AF_INET6 ? "[%s]" : "%s", t);
		if ((size_t)len < n && strstr(resolve + len, one)) /* getaddrinfo gives one per socket type */
			continue;
		size_t at = strlen(resolve), need = strlen(one) + (nat ? 1 : 0);
		if (at + need >= n)
			continue; /* no room for it: the ones in are enough */
		snprintf(resolve + at, n - at, "%s%s", nat ? "," : "", one);
		nat++;
	}
	freeaddrinfo(res);
	if (rc || len < 0 || (size_t)len >= n || !nat)
		return -1;
	return 0;
}

void peers_free(struct server *s)
{
	free(s->peers);
	s->peers = NULL;
	s->npeers = 0;
}
