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
		char *fld[8];
		int nf = 0;
		for (char *q = strtok(p, " \t\r"); q && nf < 8; q = strtok(NULL, " \t\r"))
			fld[nf++] = q;
		if (!nf || fld[0][0] == '#')
			continue;
		const char *why = NULL;
		if (nf < 2)
			why = "expected NAME TOKEN [sessions=N] [inflight=BYTES] [memory=BYTES] [batches=N] [admin]";
		else if (nf > 7)
			why = "more than NAME TOKEN [sessions=N] [inflight=BYTES] [memory=BYTES] [batches=N] [admin]";
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
				if (!strcmp(fld[k], "admin"))
					e->admin = true;
				else if (!strncmp(fld[k], "sessions=", 9) && parse_num(fld[k] + 9, 1, 1000000, false, &v))
					e->max_sessions = (int)v;
				else if (!strncmp(fld[k], "batches=", 8) && parse_num(fld[k] + 8, 1, 1000000, false, &v))
					e->max_batches = (int)v;
				else if (!(!strncmp(fld[k], "inflight=", 9) &&
					   parse_num(fld[k] + 9, 1, UINT64_MAX, true, &e->max_inflight)) &&
					 !(!strncmp(fld[k], "memory=", 7) &&
					   parse_num(fld[k] + 7, 1, UINT64_MAX, true, &e->max_memory)))
					why = "an option is sessions=N, inflight=BYTES, memory=BYTES, batches=N or admin";
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
	struct cli_args a;
	char *val;
	int f;
	cli_args_begin(&a, CMD_SERVE, argc, argv);
	while ((f = cli_args_next(&a, &val)) >= 0) {
		uint64_t v = 0;
		bool ok = true;
		switch (f) {
		case FLAG_SERVE_HOST:
			o.host = val;
			ok = *val != 0;
			break;
		case FLAG_SERVE_PORT:
			ok = parse_num(val, 0, 65535, false, &v);
			o.port = (int)v;
			break;
		case FLAG_SERVE_TOKEN:
			token = val;
			token_flag = true;
			ok = *val != 0;
			break;
		case FLAG_SERVE_MAX_BODY:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.max_body);
			break;
		case FLAG_SERVE_MAX_SESSIONS:
			ok = parse_num(val, 1, 1000000, false, &v);
			o.max_sessions = (int)v;
			break;
		case FLAG_SERVE_SESSION_TTL:
			ok = parse_num(val, 1, 100000000, false, &v);
			o.session_ttl = (int)v;
			break;
		case FLAG_SERVE_BLOB_CACHE:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.blob_cache);
			break;
		case FLAG_SERVE_UPLOAD_RESERVE:
			ok = parse_num(val, 0, (uint64_t)1 << 50, true, &v);
			o.upload_reserve = v ? (int64_t)v : -1;
			break;
		case FLAG_SERVE_THREADS:
			ok = parse_num(val, 0, 256, false, &v);
			o.threads = (int)v;
			break;
		case FLAG_SERVE_GEMM:
			ok = !strcmp(val, "tir") || !strcmp(val, "openblas");
			if (ok)
				tir_set_gemm(val, NULL);
			break;
		case FLAG_SERVE_MAX_INFLIGHT:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.max_inflight);
			break;
		case FLAG_SERVE_TLS_CERT:
			o.tls_cert = val;
			ok = *val != 0;
			break;
		case FLAG_SERVE_TLS_KEY:
			o.tls_key = val;
			ok = *val != 0;
			break;
		case FLAG_SERVE_TOKENS:
			tokens_file = val;
			ok = *val != 0;
			break;
		case FLAG_SERVE_MAX_MEMORY:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.max_memory);
			break;
		case FLAG_SERVE_MAX_CONNECTIONS_PER_ADDRESS:
			ok = parse_num(val, 1, 1000000, false, &v);
			o.max_connections_per_address = (int)v;
			break;
		case FLAG_SERVE_HEADER_TIMEOUT:
			ok = parse_num(val, 1, 86400, false, &v);
			o.header_timeout = (int)v;
			break;
		case FLAG_SERVE_SESSION_LEASE:
			ok = parse_num(val, 1, 100000000, false, &v);
			o.session_lease = (int)v;
			break;
		case FLAG_SERVE_MAX_BATCH_SECONDS:
			ok = parse_num(val, 0, 1000000000, false, &v);
			o.max_batch_seconds = v ? (int)v : -1; /* 0: no limit (the library's 0 is its default) */
			break;
		case FLAG_SERVE_MAX_OPS:
			ok = parse_num(val, 1, 100000000, false, &v);
			o.max_ops = (int)v;
			break;
		case FLAG_SERVE_GRAPH_CACHE:
			ok = parse_num(val, 1, UINT64_MAX, true, &o.graph_cache);
			break;
		case FLAG_SERVE_PEERS: {
			/* repeated: joined by commas */
			static char peers[4096];
			size_t have = strlen(peers), add = strlen(val);
			ok = *val != 0 && have + add + 2 < sizeof peers;
			if (ok) {
				snprintf(peers + have, sizeof peers - have, "%s%s", have ? "," : "", val);
				o.peers = peers;
			}
			break;
		}
		case FLAG_SERVE_TRANSFER_SECONDS:
			ok = parse_num(val, 1, 86400, false, &v);
			o.transfer_seconds = (int)v;
			break;
		default:
			break;
		}
		if (!ok)
			return cli_misuse(CMD_SERVE, "--%s: bad value '%s'", cli_flag_name(f), val);
	}
	if (f == CLI_ARGS_STOP)
		return a.exit;
	if (!o.tls_cert != !o.tls_key) {
		return cli_misuse(CMD_SERVE, "%s needs %s too", o.tls_cert ? "--tls-cert" : "--tls-key",
				  o.tls_cert ? "--tls-key" : "--tls-cert");
	}
	static struct tir_serve_tenant tenants[256];
	if (tokens_file) {
		if (token_flag) {
			return cli_misuse(CMD_SERVE, "--token or --tokens, not both");
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
