/*
 * remote_bench.c — the client's figures against a running `tir serve`
 * (bench/remote.sh starts one on loopback):
 *
 *   round trip   one realization of a one-op batch whose graph and input
 *                the server holds (one POST, one binary reply), through
 *                tir_exec_run; and a bare GET /healthz on a kept-alive
 *                connection, the transport alone
 *   references   SHA-256 on one core (OpenSSL) and memcpy, over 256 MiB
 *                in memory, measured in this run: the figures below are
 *                read against them
 *   put          a 256 MiB f32 tensor the server lacks: its name (the
 *                chunk list, hashed on every CPU) and the PUT of the list
 *                and the frame alone (the server checks each chunk as it
 *                arrives)
 *   upload       a whole run that needs a fresh 256 MiB input (hashing
 *                here, the 409, the PUT, the run)
 *   download     a run whose result is a 256 MiB tensor (the server holds
 *                the input): the request, the 256 MiB down, decoded into
 *                the tensor; runs alternate with the uploads
 *   mlp          samples/mlp.tir run in this process, here and remote
 *                (graph cached on the server), medians and their ratio
 *
 *     remote_bench HOST:PORT [--runs N] [--big N] [--warm N] [--server-pid PID] [--mlp FILE] [--only rt|ref|put|up|down|mlp]
 *
 * --big N: the 256 MiB figures are medians of N runs (default 7), after
 * --warm N (default 4) runs timed apart ("cold"): until the server's blob
 * cache (1 GiB by default) is full and evicts, each upload goes into
 * fresh pages, which cost the kernel's zeroing (and in a VM the host's
 * first touch: 3-4 times the PUT here); after that into pages it had.
 * --server-pid PID: also the server's CPU time per upload and download
 * (with this process's, the work each costs, whatever else the machine
 * runs meanwhile).
 * --only put: the PUTs alone (bench/remote.sh also points it at a sink
 * that reads and drops, to see the client's side of an upload by itself).
 * --only up: the uploads and the downloads they alternate with (so that
 * both see the same load); --only down: the downloads alone.
 *
 * Prints "key value" lines for bench/remote.sh.  Not a test.
 */
#include "net/api.h"
#include "net/batch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU seconds so far: this process's (all threads), and the server's
 * when its pid was given (--server-pid; /proc, in clock ticks) */
static int server_pid;

static double cpu_self(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static double cpu_server(void)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", server_pid);
	FILE *f = server_pid ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* fields after the command's name */
	unsigned long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const struct tir_err *e)
{
	fprintf(stderr, "remote_bench: %s: %s\n", what, e ? e->msg : "failed");
	exit(1);
}

static struct tir_program *parse(const char *name, const char *src)
{
	struct tir_program *p = tir_program_new();
	if (tir_program_parse(p, name, src, strlen(src), 0))
		die(name, tir_program_diag(p, 0));
	return p;
}

static size_t discard(char *d, size_t size, size_t n, void *ud)
{
	return size * n;
}

/* the one-op batch, and GET /healthz on one connection */
static void round_trip(struct tir_remote *r, const char *addr, int runs)
{
	struct tir_program *p = parse("rt.tir", "input x: f32[16]\nprint neg(x)\n");
	struct tir_exec *x = tir_exec_new(p);
	struct tir_err err = {0};
	struct tir_tensor t = {0};
	int64_t shape[1] = {16};
	tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, shape, true, &err);
	if (tir_exec_set_input(x, "x", &t, "bench", &err))
		die("input", &err);
	tir_exec_set_remote(x, r, &err);
	double *ms = calloc((size_t)runs, sizeof *ms);
	for (int i = 0; i < 20; i++)
		if (tir_exec_run(x, 0, NULL, 0, &err))
			die("run", &err);
	int trips = 0;
	for (int i = 0; i < runs; i++) {
		double t0 = now_ms();
		if (tir_exec_run(x, 0, NULL, 0, &err))
			die("run", &err);
		ms[i] = now_ms() - t0;
		trips += tir_remote_stats(r)->round_trips;
	}
	printf("rt_runs %d\n", runs);
	printf("rt_round_trips_per_run %.2f\n", (double)trips / runs);
	printf("rt_bytes_up %llu\n", (unsigned long long)tir_remote_stats(r)->bytes_up);
	printf("rt_bytes_down %llu\n", (unsigned long long)tir_remote_stats(r)->bytes_down);
	double med = median(ms, runs);
	printf("rt_min_us %.1f\n", ms[0] * 1e3);
	printf("rt_median_us %.1f\n", med * 1e3);
	printf("rt_p90_us %.1f\n", ms[runs * 9 / 10] * 1e3);
	tir_exec_free(x);
	tir_program_free(p);

	CURL *c = curl_easy_init();
	char url[300];
	snprintf(url, sizeof url, "http://%s/healthz", addr);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	for (int i = 0; i < runs + 20; i++) {
		double t0 = now_ms();
		if (curl_easy_perform(c) != CURLE_OK)
			die("GET /healthz", NULL);
		if (i >= 20)
			ms[i - 20] = now_ms() - t0;
	}
	printf("healthz_median_us %.1f\n", median(ms, runs) * 1e3);
	curl_easy_cleanup(c);
	free(ms);
}

/* 256 MiB of f32 whose first element is k: a blob the server lacks */
static void fill(struct tir_tensor *t, float k)
{
	float *d = tir_tensor_data(t);
	d[0] = k;
}

#define BIG (INT64_C(1) << 26) /* 64 Mi floats = 256 MiB */

static void make_big(struct tir_tensor *t)
{
	struct tir_err err = {0};
	const int64_t n = BIG;
	if (tir_tensor_alloc(t, TIR_DTYPE_F32, 1, &n, false, &err))
		die("alloc", &err);
	float *d = tir_tensor_data(t);
	for (int64_t i = 0; i < n; i++)
		d[i] = (float)(i % 1000) * 0.001f;
}

/* The references, measured in this run: SHA-256 on one core (OpenSSL, the
 * CPU's SHA extensions) and memcpy, both over 256 MiB already in memory. */
static void refs(int runs)
{
	struct tir_tensor t = {0};
	make_big(&t);
	size_t n = (size_t)BIG * 4;
	char *dst = malloc(n);
	memset(dst, 1, n);
	double *sh = calloc((size_t)runs, sizeof *sh), *mc = calloc((size_t)runs, sizeof *mc);
	char h[TIR_SHA_HEX + 1];
	for (int i = 0; i < runs; i++) {
		double t0 = now_ms();
		tir_sha256_hex(tir_tensor_data(&t), n, h);
		sh[i] = now_ms() - t0;
		t0 = now_ms();
		memcpy(dst, tir_tensor_data(&t), n);
		mc[i] = now_ms() - t0;
	}
	double gb = (double)n / 1e9;
	printf("ref_sha256_gbps %.2f\n", gb / (median(sh, runs) / 1e3));
	printf("ref_memcpy_gbps %.2f\n", gb / (median(mc, runs) / 1e3));
	free(sh);
	free(mc);
	free(dst);
	tir_tensor_release(&t);
}

#ifdef TIR_CHUNK /* protocol 2's chunk lists (so that this file also builds against protocol 1, for A/B runs) */
/* a blob's body read in pieces, as lib/net/client.c sends it: the chunk
 * list, then the frame */
struct upload {
	const char *part[2];
	size_t len[2];
	int at;
	size_t off;
};

static size_t on_read(char *b, size_t size, size_t n, void *ud)
{
	struct upload *u = ud;
	size_t room = size * n, done = 0;
	while (done < room && u->at < 2) {
		size_t k = u->len[u->at] - u->off;
		if (k > room - done)
			k = room - done;
		memcpy(b + done, u->part[u->at] + u->off, k);
		done += k;
		u->off += k;
		if (u->off == u->len[u->at]) {
			u->at++;
			u->off = 0;
		}
	}
	return done;
}

/* The connection's socket as lib/net/client.c makes it (tuned when the
 * server is on this machine), so that the PUTs alone are the client's. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	curl_socket_t fd = socket(a->family, a->socktype, a->protocol);
	if (fd != CURL_SOCKET_BAD && purpose == CURLSOCKTYPE_IPCXN && a->socktype == SOCK_STREAM)
		tir_sock_local(fd, &a->addr);
	return fd;
}

/* The client's hash (the blob's name) and the PUT alone, with curl */
static void put(const char *addr, int runs)
{
	struct tir_err err = {0};
	struct tir_tensor t = {0};
	make_big(&t);
	size_t fsz = tir_frame_size(&t);
	void *frame = malloc(fsz);
	double *put = calloc((size_t)runs, sizeof *put), *hash = calloc((size_t)runs, sizeof *hash);
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Expect:");
	h = curl_slist_append(h, "Content-Type: application/octet-stream");
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	size_t body = 0;
	for (int i = 0; i < runs; i++) {
		fill(&t, (float)(1e6 + i));
		tir_frame_encode(&t, frame, &err);
		char name[TIR_SHA_HEX + 1], url[400];
		unsigned char *list = NULL;
		size_t llen = 0;
		double t0 = now_ms();
		if (tir_blob_chunks(&t, name, &list, &llen, &err))
			die("hash", &err);
		hash[i] = now_ms() - t0;
		snprintf(url, sizeof url, "http://%s/v1/blobs/%s", addr, name);
		curl_easy_setopt(c, CURLOPT_URL, url);
		struct upload u = {{(const char *)list, frame}, {llen, fsz}, 0, 0};
		body = llen + fsz;
		curl_easy_setopt(c, CURLOPT_READDATA, &u);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body);
		t0 = now_ms();
		if (curl_easy_perform(c) != CURLE_OK)
			die("PUT", NULL);
		put[i] = now_ms() - t0;
		free(list);
		long st = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
		if (st != 201)
			die("PUT: not 201", NULL);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(frame);
	double gb = (double)fsz / 1e9;
	double mp = median(put, runs), mh = median(hash, runs);
	printf("up_bytes %zu\n", fsz);
	printf("up_body_bytes %zu\n", body);
	printf("up_hash_ms %.1f\n", mh);
	printf("up_hash_gbps %.2f\n", gb / (mh / 1e3));
	printf("up_put_ms %.1f\n", mp);
	printf("up_put_gbps %.2f\n", gb / (mp / 1e3));
	free(put);
	free(hash);
	tir_tensor_release(&t);
}

#else
static void put(const char *addr, int runs)
{
}
#endif

/* A whole run that needs a fresh 256 MiB input (the hash here, the 409,
 * the PUT, the run); then runs whose result is a 256 MiB tensor (the
 * server holds the input: one request, 256 MiB down, decoded). */
static void upload_download(struct tir_remote *r, const char *addr, int runs, int warm, bool down_only)
{
	struct tir_err err = {0};
	struct tir_tensor t = {0};
	make_big(&t);
	double gb = (double)tir_frame_size(&t) / 1e9;
	double *whole = calloc((size_t)runs, sizeof *whole), *down = calloc((size_t)runs, sizeof *down);
	struct tir_program *p = parse("up.tir", "input x: f32[67108864]\nprint slice(x, axis=0, stop=2)\n");
	struct tir_exec *x = tir_exec_new(p);
	tir_exec_set_remote(x, r, &err);
	struct tir_program *q = parse("down.tir", "input x: f32[67108864]\nprint x\n");
	struct tir_exec *y = tir_exec_new(q);
	/* a connection of its own: a remote keeps the blob names of one
	 * program's inputs, and forgets them when another program runs */
	struct tir_remote *r2 = tir_remote_open(addr, getenv("TIR_TOKEN"), &err);
	if (!r2)
		die(addr, &err);
	tir_exec_set_remote(y, r2, &err);
	struct tir_tensor same = {0};
	tir_tensor_ref(&same, &t);
	if (tir_exec_set_input(y, "x", &same, "bench", &err)) /* takes it */
		die("input", &err);
	if (tir_exec_run(y, 0, NULL, 0, &err)) /* the blob goes up once */
		die("run", &err);
	/* uploads and downloads alternate, so that both see the same load;
	 * the first `warm` pairs are timed apart: until its blob cache is
	 * full and evicts, a server writes each upload into fresh pages (the
	 * kernel's zeroing, in a VM the host's first touch too), and after
	 * that into pages it had */
	double t0;
	int all = runs + warm;
	double *cold = calloc((size_t)(warm + 1), sizeof *cold), *cold_down = calloc((size_t)(warm + 1), sizeof *cold_down);
	double *c_up = calloc((size_t)runs, sizeof *c_up), *s_up = calloc((size_t)runs, sizeof *s_up);
	double *c_down = calloc((size_t)runs, sizeof *c_down), *s_down = calloc((size_t)runs, sizeof *s_down);
	for (int j = 0; j < all; j++) {
		int i = j - warm; /* < 0: warming */
		if (down_only)
			goto down;
		/* a fresh value each time (an input's buffer is never written
		 * once given: the client names a buffer it has seen by its hash) */
		struct tir_tensor v = {0};
		const int64_t n = BIG;
		/* (a plain copy: tir_tensor_convert's threads would still be
		 * spinning in the runs timed, and counted in their CPU) */
		if (tir_tensor_alloc(&v, TIR_DTYPE_F32, 1, &n, false, &err))
			die("copy", &err);
		memcpy(tir_tensor_data(&v), tir_tensor_data(&t), (size_t)BIG * 4);
		fill(&v, (float)(2e6 + j));
		if (tir_exec_set_input(x, "x", &v, "bench", &err)) /* takes it */
			die("input", &err);
		double c0 = cpu_self(), s0 = cpu_server();
		t0 = now_ms();
		if (tir_exec_run(x, 0, NULL, 0, &err))
			die("run", &err);
		if (i < 0) {
			cold[j] = now_ms() - t0;
		} else {
			whole[i] = now_ms() - t0;
			c_up[i] = cpu_self() - c0;
			s_up[i] = cpu_server() - s0;
		}
		if (tir_remote_stats(r)->blobs_sent != 1)
			die("the run did not send its blob", NULL);
	down:
		c0 = cpu_self();
		s0 = cpu_server();
		t0 = now_ms();
		if (tir_exec_run(y, 0, NULL, 0, &err))
			die("run", &err);
		if (i < 0) {
			cold_down[j] = now_ms() - t0;
		} else {
			down[i] = now_ms() - t0;
			c_down[i] = cpu_self() - c0;
			s_down[i] = cpu_server() - s0;
		}
		if (tir_remote_stats(r2)->blobs_sent != 0 || tir_remote_stats(r2)->bytes_down < (uint64_t)BIG * 4)
			die("the download run sent a blob or got no result", NULL);
	}
	double mw = median(whole, runs), md = median(down, runs);
	if (!down_only) {
		printf("up_runs %d\n", runs);
		printf("up_run_ms %.1f\n", mw);
		printf("up_run_gbps %.2f\n", gb / (mw / 1e3));
		if (warm) {
			printf("up_cold_ms %.1f\n", median(cold, warm));
			printf("up_cold_gbps %.2f\n", gb / (median(cold, warm) / 1e3));
		}
		printf("up_cpu_client_ms %.1f\n", median(c_up, runs) * 1e3);
		if (server_pid)
			printf("up_cpu_server_ms %.1f\n", median(s_up, runs) * 1e3);
	}
	printf("down_cpu_client_ms %.1f\n", median(c_down, runs) * 1e3);
	if (server_pid)
		printf("down_cpu_server_ms %.1f\n", median(s_down, runs) * 1e3);
	if (warm)
		printf("down_cold_ms %.1f\n", median(cold_down, warm));
	free(cold);
	free(cold_down);
	free(c_up);
	free(s_up);
	free(c_down);
	free(s_down);
	printf("down_run_ms %.1f\n", md);
	printf("down_run_gbps %.2f\n", gb / (md / 1e3));
	tir_exec_free(x);
	tir_program_free(p);
	tir_exec_free(y);
	tir_program_free(q);
	tir_remote_close(r2);
	tir_tensor_release(&t);
	free(whole);
	free(down);
}

static double run_once(struct tir_exec *x)
{
	struct tir_err err = {0};
	double t0 = now_ms();
	if (tir_exec_run(x, 0, NULL, 0, &err))
		die("mlp", &err);
	return now_ms() - t0;
}

static void mlp(struct tir_remote *r, const char *path, int runs)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, NULL);
	static char src[1 << 16];
	size_t n = fread(src, 1, sizeof src - 1, f);
	fclose(f);
	src[n] = 0;
	struct tir_program *p = parse(path, src);
	struct tir_exec *x = tir_exec_new(p);
	struct tir_err err = {0};
	double *l = calloc((size_t)runs, sizeof *l), *m = calloc((size_t)runs, sizeof *m);
	double *q = calloc((size_t)runs, sizeof *q);
	/* local and remote runs alternate, so that both see the same load;
	 * the ratio is the median of each pair's */
	for (int i = -3; i < runs; i++) {
		tir_exec_set_remote(x, NULL, &err);
		double a = run_once(x);
		tir_exec_set_remote(x, r, &err);
		double b = run_once(x);
		if (i < 0)
			continue;
		l[i] = a;
		m[i] = b;
		q[i] = b / a;
	}
	printf("mlp_runs %d\n", runs);
	printf("mlp_local_ms %.3f\n", median(l, runs));
	printf("mlp_remote_ms %.3f\n", median(m, runs));
	printf("mlp_ratio %.3f\n", median(q, runs));
	printf("mlp_remote_net_ms %.3f\n", tir_remote_stats(r)->net_ms);
	free(l);
	free(m);
	free(q);
	tir_exec_free(x);
	tir_program_free(p);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: remote_bench HOST:PORT [--runs N] [--big N] [--warm N] [--server-pid PID] [--mlp FILE] [--only rt|ref|put|up|down|mlp]\n");
		return 2;
	}
	const char *addr = argv[1], *mlp_path = "samples/mlp.tir", *only = NULL;
	/* lib/net is linked in: the executor's remote devices call it */
	struct tir_err nerr = {0};
	if (tir_net_use(tir_net_api(), &nerr)) {
		fprintf(stderr, "remote_bench: %s\n", nerr.msg);
		return 2;
	}
	int runs = 1000, big = 7, warm = 4;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mlp"))
			mlp_path = argv[i + 1];
		else if (!strcmp(argv[i], "--only"))
			only = argv[i + 1];
		else if (!strcmp(argv[i], "--big"))
			big = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--warm"))
			warm = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--server-pid"))
			server_pid = atoi(argv[i + 1]);
	}
	if (runs < 10)
		runs = 10;
	if (big < 1)
		big = 1;
	if (warm < 0)
		warm = 0;
	struct tir_err err = {0};
	struct tir_remote *r = tir_remote_open(addr, getenv("TIR_TOKEN"), &err);
	if (!r)
		die(addr, &err);
	if (!only || !strcmp(only, "rt"))
		round_trip(r, addr, runs);
	if (!only || !strcmp(only, "ref"))
		refs(big);
	/* the whole runs first: their first (--warm) fill the server's blob
	 * cache, so that the PUTs alone are timed on pages it has */
	if (!only || !strcmp(only, "up") || !strcmp(only, "down"))
		upload_download(r, addr, big, warm, only && !strcmp(only, "down"));
	if (!only || !strcmp(only, "put"))
		put(addr, big);
	if (!only || !strcmp(only, "mlp"))
		mlp(r, mlp_path, runs / 10 > 11 ? runs / 10 : 11);
	tir_remote_close(r);
	tir_release_caches();
	return 0;
}
