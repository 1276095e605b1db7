/*
 * test_batch.c — the batch a client sends (lib/net/batch.c): its text for
 * chosen programs, numbering that does not depend on the user's names,
 * leaves (inputs, loads, literals) as blobs with the right names, held
 * values as keys, the keep list, and the map from a line back to the op.
 */
#include "net/batch.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The name of frame f[0..n) by the letter of docs/protocol.md: each chunk
 * hashed alone (OpenSSL, whatever path the client takes), the list, its hash. */
static void name_by_hand(const unsigned char *f, size_t n, char out[TIR_SHA_HEX + 1])
{
	size_t k = (n + TIR_CHUNK - 1) / TIR_CHUNK;
	unsigned char *list = malloc(TIR_CHUNKS_HEAD + 32 * k);
	memcpy(list, "TIRC", 4);
	tir_put_u32(list + 4, (uint32_t)TIR_CHUNK);
	tir_put_u64(list + 8, n);
	for (size_t i = 0; i < k; i++) {
		char h[TIR_SHA_HEX + 1];
		size_t len = n - i * TIR_CHUNK < TIR_CHUNK ? n - i * TIR_CHUNK : TIR_CHUNK;
		tir_sha256_hex(f + i * TIR_CHUNK, len, h);
		for (int j = 0; j < 32; j++) {
			unsigned v;
			sscanf(h + 2 * j, "%2x", &v);
			list[TIR_CHUNKS_HEAD + 32 * i + j] = (unsigned char)v;
		}
	}
	tir_sha256_hex(list, TIR_CHUNKS_HEAD + 32 * k, out);
	free(list);
}

static struct tir_program *parse(const char *src)
{
	struct tir_program *p = tir_program_new();
	int rc = tir_program_parse(p, "prog.tir", src, strlen(src), 0);
	CHECK(rc == 0);
	if (rc)
		for (int i = 0; i < tir_program_ndiags(p); i++)
			fprintf(stderr, "%s\n", tir_program_diag(p, i)->msg);
	return p;
}

/* every print item of p, in order (at most 16) */
static size_t targets_of(const struct tir_program *p, struct tir_node **t)
{
	size_t n = 0;
	for (size_t s = 0; s < p->nstmts; s++)
		for (int i = 0; p->stmts[s].kind == TIR_STMT_PRINT && i < p->stmts[s].nitems && n < 16; i++)
			t[n++] = p->stmts[s].items[i].node;
	return n;
}

static int build(struct tir_batch *b, struct tir_exec *x, const bool *held, size_t nheld,
		 struct tir_err *err)
{
	struct tir_node *t[16];
	size_t n = targets_of(tir_exec_program(x), t);
	return tir_batch_build(b, x, t, n, held, nheld, NULL, err);
}

/* the text parses and checks as a program of its own */
static bool parses(const struct tir_batch *b)
{
	struct tir_program *q = tir_program_new();
	int rc = tir_program_parse(q, "batch", b->text, b->len, 0);
	if (rc)
		fprintf(stderr, "batch text does not parse: %s\n%s", tir_program_diag(q, 0)->msg, b->text);
	tir_program_free(q);
	return rc == 0;
}

static void set_input(struct tir_exec *x, const char *name, enum tir_dtype dt, int rank,
		      const int64_t *shape, float v0)
{
	struct tir_tensor t = {0};
	struct tir_err err = {0};
	CHECK(tir_tensor_alloc(&t, dt, rank, shape, true, &err) == 0);
	if (dt == TIR_DTYPE_F32)
		for (int64_t i = 0; i < tir_tensor_numel(&t); i++)
			((float *)tir_tensor_data(&t))[i] = v0 + (float)i;
	CHECK(tir_exec_set_input(x, name, &t, "test", &err) == 0);
	tir_tensor_release(&t);
}

static void test_text(void)
{
	const char *a = "input x: f32[4, 3]\n"
			"w = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]\n"
			"h = relu(x @ w + 0.5)\n"
			"unused = exp(x)\n"
			"print h, sum(h, axis=1), 2.5\n";
	/* the same computation, other names, an extra binding in between */
	const char *b2 = "input images: f32[4, 3]\n"
			 "weights = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]\n"
			 "zzz = ones([7])\n"
			 "hidden = relu(images @ weights + 0.5)\n"
			 "print hidden, sum(hidden, axis=1), 2.5\n";
	struct tir_program *p = parse(a), *q = parse(b2);
	struct tir_exec *x = tir_exec_new(p), *y = tir_exec_new(q);
	int64_t shape[2] = {4, 3};
	set_input(x, "x", TIR_DTYPE_F32, 2, shape, 1);
	set_input(y, "images", TIR_DTYPE_F32, 2, shape, 1);
	struct tir_batch b = {0}, c = {0};
	struct tir_err err = {0};
	CHECK(build(&b, x, NULL, 0, &err) == 0);
	CHECK(build(&c, y, NULL, 0, &err) == 0);
	const char *want = "input t0: f32[4, 3]\n"
			   "input t1: f32[3, 2]\n"
			   "t2: f32[4, 2] = matmul(t0, t1)\n"
			   "t3: f32[4, 2] = add(t2, 0.5)\n"
			   "t4: f32[4, 2] = relu(t3)\n"
			   "t5: f32[4] = sum(t4, axis=1)\n"
			   "t6: f32[] = 2.5\n"
			   "print t4, t5, t6\n";
	CHECK(b.text && !strcmp(b.text, want));
	if (b.text && strcmp(b.text, want))
		fprintf(stderr, "got:\n%s", b.text);
	CHECK(b.len == strlen(want));
	CHECK(c.text && b.text && !strcmp(b.text, c.text));
	CHECK(!strcmp(b.graph, c.graph));
	char h[TIR_SHA_HEX + 1];
	tir_sha256_hex(want, strlen(want), h);
	CHECK(!strcmp(b.graph, h));
	CHECK(parses(&b));
	/* leaves: the input and the literal, as blobs with the same names */
	CHECK(b.ninputs == 2);
	CHECK(b.inputs[0].node->op == TIR_OP_INPUT && b.inputs[0].t == 0 && !b.inputs[0].key[0]);
	CHECK(b.inputs[1].node->op == TIR_OP_CONST && tir_sha_valid(b.inputs[1].blob));
	CHECK(!strcmp(b.inputs[0].blob, c.inputs[0].blob) && !strcmp(b.inputs[1].blob, c.inputs[1].blob));
	CHECK(b.inputs[1].value.dtype == TIR_DTYPE_F32 && b.inputs[1].value.shape[0] == 3 &&
	      ((float *)tir_tensor_data(&b.inputs[1].value))[5] == 6.0f);
	/* no keep outside the REPL */
	CHECK(b.nkeep == 0);
	/* lines map back to the user's ops: line 3 is the matmul, 8 the print */
	CHECK(b.nlines == 8);
	const struct tir_node *m = tir_batch_line_node(&b, 3);
	CHECK(m && m->op == TIR_OP_MATMUL && m->loc.line == 3 && m->loc.col == 12);
	CHECK(tir_batch_line_node(&b, 4)->op == TIR_OP_ADD);
	CHECK(tir_batch_line_node(&c, 4)->loc.line == 4);
	CHECK(tir_batch_line_node(&b, 8) == NULL && tir_batch_line_node(&b, 9) == NULL &&
	      tir_batch_line_node(&b, 0) == NULL);
	CHECK(b.nvars == 7 && b.var_node[4]->op == TIR_OP_RELU);
	tir_batch_free(&b);
	tir_batch_free(&c);

	/* through a memo: the same names, the value held by the memo */
	struct tir_batch_memo memo = {0};
	char first[TIR_SHA_HEX + 1];
	struct tir_node *t[16];
	size_t nt = targets_of(p, t);
	CHECK(tir_batch_build(&c, x, t, nt, NULL, 0, &memo, &err) == 0);
	memcpy(first, c.inputs[0].blob, sizeof first);
	CHECK(memo.n > c.inputs[0].node->id && memo.e[c.inputs[0].node->id].value.buf == c.inputs[0].value.buf);
	tir_batch_free(&c);
	CHECK(tir_batch_build(&c, x, t, nt, NULL, 0, &memo, &err) == 0);
	CHECK(!strcmp(c.inputs[0].blob, first));
	tir_batch_free(&c);

	/* another input value: another blob name (the memo sees the new
	 * value), the same graph */
	set_input(x, "x", TIR_DTYPE_F32, 2, shape, 2);
	CHECK(tir_batch_build(&c, x, t, nt, NULL, 0, &memo, &err) == 0);
	CHECK(c.text && !strcmp(c.text, want));
	CHECK(strcmp(c.inputs[0].blob, first) != 0);
	char fresh[TIR_SHA_HEX + 1];
	CHECK(tir_blob_name(&c.inputs[0].value, fresh, &err) == 0 && !strcmp(fresh, c.inputs[0].blob));
	tir_batch_free(&c);
	tir_batch_memo_free(&memo);
	tir_exec_free(x);
	tir_exec_free(y);
	tir_program_free(p);
	tir_program_free(q);
}

static void test_errors(void)
{
	struct tir_program *p = parse("a = 1.0\ninput x: f32[2]\ny = x * 2\nprint y\n");
	struct tir_exec *x = tir_exec_new(p);
	struct tir_batch b = {0};
	struct tir_err err = {0};
	CHECK(build(&b, x, NULL, 0, &err) == -TIR_EDATA);
	CHECK(!strcmp(err.msg, "input 'x' has no value; give it with --input x=FILE.npy"));
	CHECK(err.loc.src && err.loc.line == 2 && err.loc.col == 7);
	CHECK(b.text == NULL && b.inputs == NULL);
	tir_exec_free(x);
	tir_program_free(p);
}

static void test_load_and_keep(void)
{
	char path[] = "/tmp/tir-test-batch-XXXXXX.npy";
	int fd = mkstemps(path, 4);
	CHECK(fd >= 0);
	close(fd);
	struct tir_tensor w = {0};
	struct tir_err err = {0};
	int64_t shape[1] = {5};
	CHECK(tir_tensor_alloc(&w, TIR_DTYPE_F64, 1, shape, false, &err) == 0);
	for (int i = 0; i < 5; i++)
		((double *)tir_tensor_data(&w))[i] = i * 0.25;
	CHECK(tir_npy_save(path, &w, &err) == 0);

	char src[256];
	snprintf(src, sizeof src, "w = load(\"%s\")\nv = w * 2\nprint v, neg(v)\n", path);
	struct tir_program *p = tir_program_new();
	tir_program_set_loader(p, tir_load_type_from_file, NULL);
	CHECK(tir_program_parse(p, "prog.tir", src, strlen(src), 0) == 0);
	struct tir_exec *x = tir_exec_new(p);
	tir_exec_keep_named(x, true);
	struct tir_batch b = {0};
	CHECK(build(&b, x, NULL, 0, &err) == 0);
	const char *want = "input t0: f64[5]\n"
			   "t1: f64[5] = mul(t0, 2)\n"
			   "t2: f64[5] = neg(t1)\n"
			   "print t1, t2\n";
	CHECK(b.text && !strcmp(b.text, want));
	/* the file's tensor is the blob: its name is its frame's (the hash of
	 * the frame's chunk list), and the list goes with it */
	size_t fsz = tir_frame_size(&w);
	void *frame = malloc(fsz);
	CHECK(tir_frame_encode(&w, frame, &err) == 0);
	char h[TIR_SHA_HEX + 1];
	name_by_hand(frame, fsz, h);
	CHECK(!strcmp(b.inputs[0].blob, h));
	CHECK(b.inputs[0].list && b.inputs[0].len == TIR_CHUNKS_HEAD + 32);
	tir_sha256_hex(b.inputs[0].list, b.inputs[0].len, h);
	CHECK(!strcmp(b.inputs[0].blob, h));
	free(frame);
	/* in the REPL the named values are kept: w (the load) and v */
	CHECK(b.nkeep == 2);
	CHECK(b.keep[0].t == 0 && b.keep[0].node == b.inputs[0].node->id);
	CHECK(b.keep[1].t == 1 && b.keep[1].node == b.var_node[1]->id);
	uint32_t vid = b.var_node[1]->id;
	tir_batch_free(&b);

	/* once the session holds v, v is an input bound to its key */
	bool held[16] = {0};
	held[vid] = true;
	CHECK(build(&b, x, held, 16, &err) == 0);
	const char *want2 = "input t0: f64[5]\n"
			    "t1: f64[5] = neg(t0)\n"
			    "print t0, t1\n";
	CHECK(b.text && !strcmp(b.text, want2));
	char key[24];
	tir_batch_key(vid, key);
	CHECK(b.ninputs == 1 && !strcmp(b.inputs[0].key, key) && !b.inputs[0].blob[0]);
	CHECK(b.nkeep == 0);
	tir_batch_free(&b);

	/* the file changed since the check: the local run's message, at the load */
	remove(path);
	CHECK(build(&b, x, NULL, 0, &err) == -TIR_EDATA);
	CHECK(!strncmp(err.msg, "load: ", 6) && err.loc.line == 1 && err.loc.col == 5);
	tir_exec_free(x);
	tir_program_free(p);
	tir_tensor_release(&w);
}

/* tir_blob_name is the name of the frame tir_frame_encode writes: any
 * dtype, padding, a strided view, an empty tensor, a scalar; and big
 * tensors, whose chunks hash sixteen at a time on several threads, with
 * chunks that start in the header, in the data and in the padding */
static void test_blob_name(void)
{
	struct tir_err err = {0};
	int64_t shapes[][2] = {{3, 3}, {1, 5}, {0, 4}, {2, 7}};
	for (int dt = 0; dt < TIR_DTYPE_COUNT; dt++) {
		for (int s = 0; s < 4; s++) {
			struct tir_tensor t = {0}, v = {0};
			CHECK(tir_tensor_alloc(&t, (enum tir_dtype)dt, 2, shapes[s], true, &err) == 0);
			unsigned char *d = tir_tensor_data(&t);
			size_t bytes = (size_t)tir_tensor_numel(&t) * tir_dtype_size((enum tir_dtype)dt);
			for (size_t i = 0; i < bytes; i++)
				d[i] = dt == TIR_DTYPE_BOOL ? (unsigned char)(i & 1) : (unsigned char)(i * 7);
			int perm[2] = {1, 0};
			tir_view_transpose(&t, perm, &v);
			for (int k = 0; k < 2; k++) {
				const struct tir_tensor *u = k ? &v : &t;
				size_t n = tir_frame_size(u);
				void *f = malloc(n);
				CHECK(tir_frame_encode(u, f, &err) == 0);
				char h1[TIR_SHA_HEX + 1], h2[TIR_SHA_HEX + 1];
				name_by_hand(f, n, h1);
				CHECK(tir_blob_name(u, h2, &err) == 0);
				CHECK(!strcmp(h1, h2));
				free(f);
			}
			tir_tensor_release(&t);
			tir_tensor_release(&v);
		}
	}
	struct tir_tensor s = {0};
	CHECK(tir_tensor_alloc(&s, TIR_DTYPE_I32, 0, NULL, true, &err) == 0);
	char h1[TIR_SHA_HEX + 1], h2[TIR_SHA_HEX + 1];
	unsigned char f[24];
	CHECK(tir_frame_size(&s) == 24);
	CHECK(tir_frame_encode(&s, f, &err) == 0);
	name_by_hand(f, 24, h1);
	CHECK(tir_blob_name(&s, h2, &err) == 0 && !strcmp(h1, h2));
	tir_tensor_release(&s);
	/* 1, 17 and 40 chunks and a bit (f64: no padding; bool: padding in
	 * the last chunk); rank 3 moves the chunks' edges off the data's */
	int64_t big[][3] = {{1, 1, 32767}, {1, 17, 32768}, {5, 8, 262145}, {3, 7, 499999}};
	enum tir_dtype bdt[] = {TIR_DTYPE_F64, TIR_DTYPE_F64, TIR_DTYPE_BOOL, TIR_DTYPE_F32};
	for (int c = 0; c < 4; c++) {
		struct tir_tensor t = {0};
		CHECK(tir_tensor_alloc(&t, bdt[c], 3, big[c], false, &err) == 0);
		unsigned char *d = tir_tensor_data(&t);
		size_t bytes = (size_t)tir_tensor_numel(&t) * tir_dtype_size(bdt[c]);
		for (size_t i = 0; i < bytes; i++)
			d[i] = bdt[c] == TIR_DTYPE_BOOL ? (unsigned char)((i >> 3) & 1) : (unsigned char)(i * 131 + (i >> 9));
		size_t n = tir_frame_size(&t);
		unsigned char *fr = malloc(n);
		CHECK(tir_frame_encode(&t, fr, &err) == 0);
		name_by_hand(fr, n, h1);
		unsigned char *list = NULL;
		size_t len = 0;
		CHECK(tir_blob_chunks(&t, h2, &list, &len, &err) == 0 && !strcmp(h1, h2));
		CHECK(len == TIR_CHUNKS_HEAD + 32 * tir_chunk_count(n));
		/* one thread, and the chunks one range at a time, say the same */
		unsigned char head[TIR_FRAME_HEAD_MAX];
		struct tir_frame_src src = {head, tir_frame_head(&t, head), d, bytes, n - tir_frame_head(&t, head) - bytes};
		size_t k = tir_chunk_count(n);
		unsigned char (*one)[32] = malloc(32 * k);
		tir_chunk_hash_all(&src, one, 1);
		CHECK(!memcmp(one, list + TIR_CHUNKS_HEAD, 32 * k));
		memset(one, 0, 32 * k);
		for (size_t a = 0; a < k; a += 7)
			tir_chunk_hash(&src, a, a + 7 < k ? a + 7 : k, one + a);
		CHECK(!memcmp(one, list + TIR_CHUNKS_HEAD, 32 * k));
		free(one);
		free(list);
		free(fr);
		tir_tensor_release(&t);
	}
}

/* Every run of 1 to 16 chunks hashed in one call (the AVX-512 lanes, where
 * the CPU has them, from 6 chunks on) says what each chunk hashed alone
 * says (OpenSSL), from data at every offset a frame's header gives it
 * (ranks 0 to 3: 16 to 40 bytes) and past a lane's prefetch distance. */
static void test_chunk_lanes(void)
{
	size_t k = 40, bytes = k * TIR_CHUNK;
	unsigned char *buf = malloc(bytes + 64);
	for (size_t i = 0; i < bytes + 64; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	unsigned char head[40] = {0};
	/* each byte swap the lanes have: AVX-512F's, then AVX-512BW's (where
	 * the CPU has it; else AVX-512F's again) */
	for (int rb = 0; rb < 8; rb++) {
		int rank = rb % 4;
		if (rank == 0)
			tir_chunk_lanes_bw(rb / 4);
		size_t hlen = 16 + 8 * (size_t)rank;
		struct tir_frame_src f = {head, hlen, buf + 8 * (size_t)rank, bytes - hlen, 0};
		unsigned char one[17][32], many[16][32];
		for (size_t m = 1; m <= 16; m++) {
			size_t first = 1 + (m * 7) % 20; /* whole chunks in the data */
			tir_chunk_hash(&f, first, first + m, many);
			for (size_t j = 0; j < m; j++)
				tir_chunk_hash(&f, first + j, first + j + 1, one + j);
			CHECK(!memcmp(one, many, 32 * m));
			if (memcmp(one, many, 32 * m))
				fprintf(stderr, "  %s rank %d: %zu chunks from %zu hashed at once differ\n",
					rb / 4 ? "AVX-512BW" : "AVX-512F", rank, m, first);
		}
	}
	tir_chunk_lanes_bw(-1);
	free(buf);
}

/* every op line of a bigger program reads back; optional operands by keyword */
static void test_parses_back(void)
{
	const char *src = "input x: f32[2, 3, 8, 8]\n"
			  "k = randn([4, 3, 3, 3], seed=3)\n"
			  "c = conv2d(x, k, stride=2, padding=1)\n"
			  "m = maxpool2d(c, 2)\n"
			  "f = flatten(m)\n"
			  "g = layernorm(f, ones([16]), zeros([16]), eps=0.001)\n"
			  "t = transpose(g)\n"
			  "s = slice(t, axis=0, start=1, stop=9, step=2)\n"
			  "e = where(gt(s, 0), s, -inf)\n"
			  "q = concat([e, e, e], axis=1)\n"
			  "print q, argmax(q, axis=0), cast(q, i32), arange(3), true\n";
	struct tir_program *p = parse(src);
	struct tir_exec *x = tir_exec_new(p);
	int64_t shape[4] = {2, 3, 8, 8};
	set_input(x, "x", TIR_DTYPE_F32, 4, shape, 0);
	struct tir_batch b = {0};
	struct tir_err err = {0};
	CHECK(build(&b, x, NULL, 0, &err) == 0);
	CHECK(b.text && parses(&b));
	CHECK(b.text && strstr(b.text, "= -inf") == NULL); /* a scalar is inline */
	CHECK(b.text && strstr(b.text, "where(t") != NULL);
	tir_batch_free(&b);
	tir_exec_free(x);
	tir_program_free(p);
}

int main(void)
{
	test_text();
	test_errors();
	test_load_and_keep();
	test_blob_name();
	test_chunk_lanes();
	test_parses_back();
	tir_release_caches();
	return check_report("test_batch");
}
