/*
 * serve.c — `tir serve`: reads the flags, logs one line per request on
 * stderr, and stops cleanly on SIGINT or SIGTERM.  The server itself is
 * the network part's (lib/net/server.c, through tir_net()'s table);
 * docs/protocol.md is what it speaks.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_serve_help =
	"usage: tir serve [options]\n"
	"\n"
	"Runs batches for `tir run --remote HOST:PORT` and the REPL's .remote over\n"
	"HTTP (docs/protocol.md).  One line per request on stderr; SIGINT or SIGTERM\n"
	"stops it.\n"
	"\n"
	"  --host ADDR          address to listen on (default 127.0.0.1)\n"
	"  --port N             port (default 6667; 0: any free port, printed at start;\n"
	"                       under mpirun, rank r of the group listens on N + r)\n"
	"  --token T            requests need `Authorization: Bearer T` (default: the\n"
	"                       TIR_TOKEN environment variable; none when unset)\n"
	"  --max-body BYTES     largest request body (default 1G)\n"
	"  --max-sessions N     sessions open at once (default 64)\n"
	"  --session-ttl SECS   a session idle this long is deleted (default 600)\n"
	"  --session-lease SECS a session whose client asked for a lease (tir's do) is\n"
	"                       deleted after this long without a request or a renewal,\n"
	"                       so that a client gone without a word (frozen, cut off)\n"
	"                       does not hold it for the TTL; tir renews every third of\n"
	"                       it (default 30)\n"
	"  --blob-cache BYTES   tensors kept for clients, least recently used evicted\n"
	"                       past this (default 1G)\n"
	"  --max-inflight BYTES request bodies being received at once, all together;\n"
	"                       past it a request is answered 503 busy before its body\n"
	"                       is read (default: the larger of 2 x --max-body and\n"
	"                       --blob-cache; bodies of 64K or less are not counted);\n"
	"                       a run request is charged what parsing it would hold\n"
	"                       too, and one of over 16448 JSON values is refused\n"
	"  --threads N          threads for the engine (default: one per processor)\n"
	"  --max-memory BYTES   tensors held at once: blobs, kept values and batches\n"
	"                       together; a batch whose plan would pass what is left\n"
	"                       is refused before it starts (413, at the op of its\n"
	"                       largest value) (default: 3/4 of the machine's\n"
	"                       memory, or of its cgroup's limit if lower)\n"
	"  --max-batch-seconds N\n"
	"                       a batch running longer is stopped, inside its kernel\n"
	"                       if need be (413 time, at its op; default 0: no limit)\n"
	"  --tls-cert FILE      serve HTTPS with this certificate (PEM; a chain: the\n"
	"                       server's first); clients use --remote https://HOST:PORT\n"
	"  --tls-key FILE       the certificate's private key (PEM, not encrypted)\n"
	"  --max-connections-per-address N\n"
	"                       connections one client address (an IPv6 /64) may hold\n"
	"                       open; past it 503 busy, or closed on TLS (default 32;\n"
	"                       256 for all clients together)\n"
	"  --header-timeout SECS a connection has this long to send a request's head,\n"
	"                       from when it is accepted or its last request ended,\n"
	"                       whatever it trickles; then it is closed (default 10)\n"
	"  --transfer-seconds N an import (POST /v1/sessions/ID/import) that has not\n"
	"                       fetched its value from the other server within N s\n"
	"                       fails: 502 upstream (default 60); in a group, each\n"
	"                       wait of an all_reduce's too (docs/groups.md)\n"
	"  --tokens FILE        tenants, one a line: NAME TOKEN [sessions=N]\n"
	"                       [inflight=BYTES]; each has its own sessions and blobs\n"
	"                       (a blob's name is no key to another tenant's bytes) and\n"
	"                       these limits (default: the server's); instead of --token\n"
	"\n"
	"BYTES may end in K, M or G (powers of 1024).\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void log_line(void *ud, const char *line)
{
	/* one write per line: threads log at once */
	flockfile(stderr);
	fputs(line, stderr);
	fputc('\n', stderr);
	funlockfile(stderr);
}

static const char *host_shown;
static bool tls_shown;

static int group_rank = -1, group_size;

static void on_listening(void *ud, int port)
{
	bool v6 = strchr(host_shown, ':') != NULL;
	char rank[64] = "";
	if (group_rank >= 0)
		snprintf(rank, sizeof rank, ", rank %d of a group of %d", group_rank, group_size);
	fprintf(stderr, "tir serve: listening on %s://%s%s%s:%d (protocol %d%s)\n", tls_shown ? "https" : "http",
		v6 ? "[" : "", host_shown, v6 ? "]" : "", port, TIR_PROTOCOL, rank);
}

/* A count with an optional K, M or G suffix into *v, within [lo, hi]. */
static bool parse_num(const char *s, uint64_t lo, uint64_t hi, bool suffix, uint64_t *v)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	int shift = 0;
	if (suffix && *end) {
		const char *u = "KMG";
		const char *at = strchr(u, *end == 'k' || *end == 'm' || *end == 'g' ? *end - 32 : *end);
		if (!at || !*at)
			return false;
		shift = 10 * (int)(at - u + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end || (shift && n > (UINT64_MAX >> shift)))
		return false;
	*v = (uint64_t)n << shift;
	return *v >= lo && *v <= hi;
}

#define TOKENS_MAX_BYTES ((long)1 << 20)

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

/* --tokens FILE into t[0..*n): one tenant a line, NAME TOKEN and options;
 * blank lines and lines starting with # are skipped.  The strings point
 * into the file's text, which is kept.  false with the error printed. */
static bool read_tokens(const char *path, struct tir_serve_tenant *t, int max, int *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "tir serve: --tokens %s: %s\n", path, strerror(errno));
		return false;
	}
	struct stat st;
	if (!fstat(fileno(f), &st) && (st.st_mode & 077))
		fprintf(stderr, "tir serve: warning: --tokens %s can be read by other users (chmod 600 %s)\n", path,
			path);
	char *text = malloc(TOKENS_MAX_BYTES + 1);
	size_t len = text ? fread(text, 1, TOKENS_MAX_BYTES + 1, f) : 0;
	fclose(f);
	if (!text || len > (size_t)TOKENS_MAX_BYTES) {
		fprintf(stderr, "tir serve: --tokens %s: %s\n", path, text ? "over 1 MiB" : "out of memory");
		free(text);
		return false;
	}
	text[len] = 0;
	*n = 0;
	int line = 0;
	for (char *p = text, *eol; p; p = eol ? eol + 1 : NULL) {
		line++;
		eol = strchr(p, '\n');
		if (eol)
			*eol = 0;
		char *fld[5];
		int nf = 0;
		for (char *q = strtok(p, " \t\r"); q && nf < 5; q = strtok(NULL, " \t\r"))
			fld[nf++] = q;
		if (!nf || fld[0][0] == '#')
			continue;
		const char *why = NULL;
		if (nf < 2)
			why = "expected NAME TOKEN [sessions=N] [inflight=BYTES]";
		else if (nf > 4)
			why = "more than NAME TOKEN [sessions=N] [inflight=BYTES]";
		else if (!name_ok(fld[0]))
			why = "a name is 1 to 64 of A-Z a-z 0-9 _ . -";
		else if (*n >= max)
			why = "too many tenants (at most 256)";
		if (!why) {
			struct tir_serve_tenant *e = &t[(*n)++];
			memset(e, 0, sizeof *e);
			e->name = fld[0];
			e->token = fld[1];
			for (int k = 2; k < nf && !why; k++) {
				uint64_t v;
				if (!strncmp(fld[k], "sessions=", 9) && parse_num(fld[k] + 9, 1, 1000000, false, &v))
					e->max_sessions = (int)v;
				else if (!(!strncmp(fld[k], "inflight=", 9) &&
					   parse_num(fld[k] + 9, 1, UINT64_MAX, true, &e->max_inflight)))
					why = "an option is sessions=N or inflight=BYTES";
			}
			for (int j = 0; j < *n - 1 && !why; j++)
				if (!strcmp(t[j].name, e->name))
					why = "a name given twice";
		}
		if (why) {
			fprintf(stderr, "tir serve: --tokens %s:%d: %s\n", path, line, why);
			free(text);
			return false;
		}
	}
	if (!*n) {
		fprintf(stderr, "tir serve: --tokens %s: no tenants in it\n", path);
		free(text);
		return false;
	}
	return true; /* text stays: the tenants point into it */
}

int cli_serve(int argc, char **argv)
{
	struct tir_serve_opts o = {.host = "127.0.0.1", .port = 6667, .max_body = 1ull << 30,
				   .max_sessions = 64, .session_ttl = 600, .blob_cache = 1ull << 30};
	const char *token = getenv("TIR_TOKEN"), *tokens_file = NULL;
	bool token_flag = false;
	if (token && !*token)
		token = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(cli_serve_help, stdout);
			return EXIT_OK;
		}
		static const char *const flags[] = {"--host", "--port", "--token", "--max-body",
						    "--max-sessions", "--session-ttl", "--blob-cache",
						    "--threads", "--max-inflight", "--tls-cert", "--tls-key", "--tokens",
						    "--max-memory", "--max-connections-per-address", "--header-timeout",
						    "--session-lease", "--max-batch-seconds", "--transfer-seconds"};
		int f = -1;
		const char *val = NULL;
		for (int k = 0; k < (int)(sizeof flags / sizeof *flags) && f < 0; k++) {
			size_t n = strlen(flags[k]);
			if (!strncmp(a, flags[k], n) && (a[n] == 0 || a[n] == '=')) {
				f = k;
				val = a[n] == '=' ? a + n + 1 : NULL;
			}
		}
		if (f < 0) {
			fprintf(stderr, "tir serve: unknown option '%s' (tir help serve)\n", a);
			return EXIT_USAGE;
		}
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "tir serve: %s needs a value (tir help serve)\n", a);
				return EXIT_USAGE;
			}
			val = argv[++i];
		}
		uint64_t v = 0;
		bool ok = true;
		switch (f) {
		case 0:
			o.host = val;
			ok = *val != 0;
			break;
		case 1:
			ok = parse_num(val, 0, 65535, false, &v);
			o.port = (int)v;
			break;
		case 2:
			token = val;
			token_flag = true;
			ok = *val != 0;
			break;
		case 3:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.max_body);
			break;
		case 4:
			ok = parse_num(val, 1, 1000000, false, &v);
			o.max_sessions = (int)v;
			break;
		case 5:
			ok = parse_num(val, 1, 100000000, false, &v);
			o.session_ttl = (int)v;
			break;
		case 6:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.blob_cache);
			break;
		case 7:
			ok = parse_num(val, 0, 256, false, &v);
			o.threads = (int)v;
			break;
		case 8:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.max_inflight);
			break;
		case 9:
			o.tls_cert = val;
			ok = *val != 0;
			break;
		case 10:
			o.tls_key = val;
			ok = *val != 0;
			break;
		case 11:
			tokens_file = val;
			ok = *val != 0;
			break;
		case 12:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.max_memory);
			break;
		case 13:
			ok = parse_num(val, 1, 1000000, false, &v);
			o.max_connections_per_address = (int)v;
			break;
		case 14:
			ok = parse_num(val, 1, 86400, false, &v);
			o.header_timeout = (int)v;
			break;
		case 15:
			ok = parse_num(val, 1, 100000000, false, &v);
			o.session_lease = (int)v;
			break;
		case 16:
			ok = parse_num(val, 0, 1000000000, false, &v);
			o.max_batch_seconds = (int)v;
			break;
		case 17:
			ok = parse_num(val, 1, 86400, false, &v);
			o.transfer_seconds = (int)v;
			break;
		}
		if (!ok) {
			fprintf(stderr, "tir serve: %s: bad value '%s' (tir help serve)\n", flags[f], val);
			return EXIT_USAGE;
		}
	}
	if (!o.tls_cert != !o.tls_key) {
		fprintf(stderr, "tir serve: %s needs %s too (tir help serve)\n", o.tls_cert ? "--tls-cert" : "--tls-key",
			o.tls_cert ? "--tls-key" : "--tls-cert");
		return EXIT_USAGE;
	}
	static struct tir_serve_tenant tenants[256];
	if (tokens_file) {
		if (token_flag) {
			fprintf(stderr, "tir serve: --token or --tokens, not both (tir help serve)\n");
			return EXIT_USAGE;
		}
		if (!read_tokens(tokens_file, tenants, (int)(sizeof tenants / sizeof *tenants), &o.ntenants))
			return EXIT_PROGRAM;
		o.tenants = tenants;
		token = NULL; /* TIR_TOKEN is --token's default, not a tenant */
	}
	o.token = token;
	tls_shown = o.tls_cert != NULL;
	o.log = log_line;
	o.listening = on_listening;
	o.group_rank = &group_rank;
	o.group_size = &group_size;
	host_shown = o.host;

	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct tir_err err = {0};
	const struct tir_net_api *net = tir_net(&err);
	if (!net || net->serve(&o, &stop, &err)) {
		fprintf(stderr, "tir serve: %s\n", err.msg);
		return EXIT_PROGRAM;
	}
	fprintf(stderr, "tir serve: stopped\n");
	return EXIT_OK;
}
