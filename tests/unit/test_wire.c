/*
 * test_wire.c — the count of a JSON body's values the server makes before
 * it parses a run request (lib/net/wire.c, tir_json_values): keys not
 * counted, strings with escapes, invalid JSON counted at least as a
 * parser would make values of it.
 */
#include "net/net.h"
#include "check.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
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
