/*
 * test_wire.c — the count of a JSON body's values the server makes before
 * it parses a run request (lib/net/wire.c, tir_json_values): keys not
 * counted, strings with escapes, invalid JSON counted at least as a
 * parser would make values of it; and the tuning of sockets to this
 * machine (tir_sock_local): which addresses are loopback, and that such a
 * socket gets reno while one to another machine keeps the default; the
 * frame header (tir_frame_head) that tir_frame_encode writes, byte by
 * byte; and the one libcurl set-up (tir_curl_setup), which takes http and
 * https only.
 */
#include "net/net.h"
#include "check.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

static size_t count(const char *s)
{
	return tir_json_values(s, strlen(s));
}

/* Values jansson makes of valid JSON s, counted in the document. */
static size_t parsed(const json_t *v)
{
	size_t n = 1, i;
	const char *k;
	json_t *x;
	if (json_is_array(v))
		json_array_foreach(v, i, x) n += parsed(x);
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, x) n += parsed(x);
	return n;
}

static void agrees(const char *s)
{
	json_t *d = json_loads(s, JSON_DECODE_ANY, NULL);
	CHECK(d != NULL);
	if (d) {
		CHECK(count(s) == parsed(d));
		if (count(s) != parsed(d))
			fprintf(stderr, "  %s: counted %zu, parsed %zu\n", s, count(s), parsed(d));
	}
	json_decref(d);
}

static bool loopback4(const char *ip)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
	return tir_addr_loopback((struct sockaddr *)&a);
}

static bool loopback6(const char *ip)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6};
	CHECK(inet_pton(AF_INET6, ip, &a.sin6_addr) == 1);
	return tir_addr_loopback((struct sockaddr *)&a);
}

/* The congestion control of a new TCP socket after tir_sock_local(peer);
 * "" where the system has no such option. */
static void cc_after(const struct sockaddr *peer, char out[32])
{
	out[0] = 0;
#ifdef TCP_CONGESTION
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	tir_sock_local(fd, peer);
	socklen_t n = 31;
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, out, &n) == 0)
		out[n < 31 ? n : 31] = 0;
	out[strcspn(out, "\n")] = 0;
	close(fd);
#endif
}

static void test_loopback(void)
{
	CHECK(loopback4("127.0.0.1"));
	CHECK(loopback4("127.1.2.3"));
	CHECK(!loopback4("10.0.0.1"));
	CHECK(!loopback4("128.0.0.1"));
	CHECK(!loopback4("0.0.0.0"));
	CHECK(loopback6("::1"));
	CHECK(loopback6("::ffff:127.0.0.1"));
	CHECK(!loopback6("::ffff:10.0.0.1"));
	CHECK(!loopback6("::2"));
	CHECK(!loopback6("fe80::1"));
	CHECK(!tir_addr_loopback(NULL));
	struct sockaddr_un u = {.sun_family = AF_UNIX, .sun_path = "x"};
	CHECK(!tir_addr_loopback((struct sockaddr *)&u));
	/* a loopback peer: reno; another: the system's default, untouched */
	struct sockaddr_in lo = {.sin_family = AF_INET}, far = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &lo.sin_addr);
	inet_pton(AF_INET, "192.0.2.1", &far.sin_addr);
	char got[32], other[32], fresh[32];
	cc_after((struct sockaddr *)&lo, got);
	cc_after((struct sockaddr *)&far, other);
	cc_after(NULL, fresh);
#ifdef TCP_CONGESTION
	CHECK(!strcmp(got, "reno"));
	if (strcmp(got, "reno"))
		fprintf(stderr, "  a loopback socket's congestion control: \"%s\"\n", got);
#endif
	CHECK(!strcmp(other, fresh));
}

/* tir_frame_head: net.h's layout, the very bytes tir_frame_encode starts
 * its frame with, for each rank and dtype sizes 1, 2, 8. */
static void test_frame_head(void)
{
	struct tir_err err = {0};
	enum tir_dtype dts[] = {TIR_DTYPE_BOOL, TIR_DTYPE_BF16, TIR_DTYPE_I16, TIR_DTYPE_F64};
	int64_t shape[TIR_MAX_RANK];
	for (int rank = 0; rank <= TIR_MAX_RANK; rank++)
		for (int k = 0; k < 4; k++) {
			for (int d = 0; d < rank; d++)
				shape[d] = 1 + (d + k) % 3;
			struct tir_tensor t = {0};
			CHECK(tir_tensor_alloc(&t, dts[k], rank, shape, true, &err) == 0);
			unsigned char head[TIR_FRAME_HEAD_MAX];
			size_t n = tir_frame_head(&t, head), size = tir_frame_size(&t);
			CHECK(n == 16 + 8 * (size_t)rank);
			CHECK(!memcmp(head, "TIRT", 4) && head[4] == dts[k] && head[5] == rank && !head[6] && !head[7]);
			CHECK(tir_get_u64(head + 8) == (uint64_t)tir_tensor_numel(&t) * tir_dtype_size(dts[k]));
			bool same = true;
			for (int d = 0; d < rank; d++)
				same &= tir_get_u64(head + 16 + 8 * d) == (uint64_t)shape[d];
			CHECK(same);
			unsigned char *frame = malloc(size);
			CHECK(frame && tir_frame_encode(&t, frame, &err) == 0 && !memcmp(frame, head, n));
			free(frame);
			tir_tensor_release(&t);
		}
}

/* A handle set up by tir_curl_setup refuses a scheme other than http and
 * https before it reads anything. */
static void test_curl_setup(void)
{
	CURL *h = curl_easy_init();
	CHECK(h != NULL);
	if (!h)
		return;
	char errbuf[CURL_ERROR_SIZE] = "";
	tir_curl_setup(h, &(struct tir_curl_opts){.agent = "tir/test", .connect_ms = 1000, .timeout_ms = 2000,
						  .errbuf = errbuf});
	curl_easy_setopt(h, CURLOPT_URL, "file:///dev/null");
	CHECK(curl_easy_perform(h) == CURLE_UNSUPPORTED_PROTOCOL);
	CHECK(errbuf[0] != 0);
	curl_easy_cleanup(h);
}

int main(void)
{
	test_loopback();
	test_frame_head();
	test_curl_setup();
	CHECK(count("") == 0);
	CHECK(count("   \n") == 0);
	agrees("0");
	agrees("[]");
	agrees("{}");
	agrees("[0,1,-2.5e3,true,false,null]");
	agrees("{\"a\":1}");
	agrees("{\"a\" : \"b\" , \"c\":[\"d\", {\"e\": {}}]}");
	agrees("[\"a\\\"b\", \"\\\\\", \"x\\\\\\\"y\", \":\"]");
	agrees("{\"k\\\"\":\"v\\\\\",\"k2\":\"}]\"}");
	agrees("[[[[[[1]]]]], {\"a\":[{\"b\":[]}]}]");
	agrees("{\"graph\":\"abc\",\"inputs\":{\"t0\":{\"blob\":\"h\"}},\"drop\":[\"a\",\"b\"],\"fuse\":true}");
	/* invalid: at least what a parser makes before its error */
	CHECK(count("\"a\":1") == 2);            /* a key only inside an object */
	CHECK(count("[\"a\":1]") == 3);
	CHECK(count("[1 2 3]") == 4);
	CHECK(count("\"unclosed") == 1);
	CHECK(count("[0,0,0") == 4);
	CHECK(count("{\"a\"::::}") == 1);
	CHECK(count("]]]]0") == 1);
	CHECK(count("tru") == 1);
	/* deeper than the parser goes: strings before ':' count as values */
	size_t d = 3000;
	char *deep = malloc(2 * d + 16);
	memset(deep, '{', d);
	strcpy(deep + d, "\"k\":1");
	CHECK(count(deep) == d + 2);
	free(deep);
	/* a binary body is counted too, and at no cost but a pass */
	static const unsigned char bin[] = {0x16, 0x03, 0x01, 0x00, '"', 0x00, '\\', '"', 0xff};
	CHECK(tir_json_values(bin, sizeof bin) == 2);
	return check_report("test_wire");
}
