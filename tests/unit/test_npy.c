/*
 * test_npy.c — .npy and .safetensors I/O: round trips of every dtype, files
 * built byte by byte here (npy 1.0/2.0/3.0 headers as numpy writes them, a
 * two-tensor safetensors file), and one malformed input per check, each
 * pinned by its error code and a distinctive piece of its message.  The
 * fixtures go to a mkdtemp directory that is removed at the end.
 */
#include "exec/exec.h"
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/tir_test_npy_XXXXXX";

/* dir/name in one of a few rotating buffers. */
static const char *fpath(const char *name)
{
	static char bufs[4][512];
	static int k;
	char *b = bufs[k++ % 4];
	snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
	return b;
}

static void write_bytes(const char *name, const void *data, size_t n)
{
	FILE *f = fopen(fpath(name), "wb");
	if (!f) {
		perror(name);
		exit(2);
	}
	if (n)
		fwrite(data, 1, n, f);
	fclose(f);
}

/* An .npy file: preamble of version major.0, dict padded with spaces to a
 * multiple of 64 bytes and ended by '\n' (as numpy does), then data. */
static void make_npy(const char *name, int major, const char *dict, const void *data,
		     size_t ndata)
{
	static unsigned char buf[4096];
	size_t pre = major == 1 ? 10 : 12;
	size_t dl = strlen(dict);
	size_t hlen = (pre + dl + 1 + 63) / 64 * 64 - pre;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	for (size_t i = 8; i < pre; i++)
		buf[i] = (unsigned char)(hlen >> (8 * (i - 8)));
	memcpy(buf + pre, dict, dl);
	memset(buf + pre + dl, ' ', hlen - dl - 1);
	buf[pre + hlen - 1] = '\n';
	if (ndata)
		memcpy(buf + pre + hlen, data, ndata);
	write_bytes(name, buf, pre + hlen + ndata);
}

/* A .safetensors file: u64 LE header size, the JSON, the data. */
static void make_st(const char *name, const char *json, const void *data, size_t ndata)
{
	static unsigned char buf[4096];
	size_t n = strlen(json);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
	memcpy(buf + 8, json, n);
	if (ndata)
		memcpy(buf + 8 + n, data, ndata);
	write_bytes(name, buf, 8 + n + ndata);
}

/* Loading path (and name) fails with TIR_EDATA, the message starts with the
 * path and contains want. */
static void expect_err_at(const char *file, const char *name, const char *want, int line)
{
	const char *p = fpath(file);
	struct tir_tensor t;
	struct tir_err err = {0};
	int rc = tir_file_load(p, name, &t, &err);
	bool ok = rc == -TIR_EDATA && err.code == TIR_EDATA &&
		  strncmp(err.msg, p, strlen(p)) == 0 && strstr(err.msg, want) != NULL &&
		  t.buf == NULL;
	CHECK(ok);
	if (getenv("TEST_VERBOSE"))
		printf("  %s\n", err.msg);
	if (!ok)
		fprintf(stderr, "  line %d: %s: rc %d, msg \"%s\", want \"%s\"\n", line, file, rc,
			err.msg, want);
	/* the header-only path agrees, except on checks of the data itself */
	if (!strstr(want, "bool byte")) {
		struct tir_file_info info;
		struct tir_err e2 = {0};
		CHECK(tir_file_info(p, name, &info, &e2) == -TIR_EDATA &&
		      strcmp(e2.msg, err.msg) == 0);
	}
}
#define expect_err(file, name, want) expect_err_at(file, name, want, __LINE__)

static void fill(struct tir_tensor *t, int seed)
{
	int64_t n = tir_tensor_numel(t);
	void *d = tir_tensor_data(t);
	for (int64_t i = 0; i < n; i++) {
		int64_t v = (i * 7 + seed) % 11 - 5;
		switch (t->dtype) {
		case TIR_DTYPE_BOOL: ((uint8_t *)d)[i] = v > 0; break;
		case TIR_DTYPE_I32: ((int32_t *)d)[i] = (int32_t)(v * 1000003); break;
		case TIR_DTYPE_I64: ((int64_t *)d)[i] = v * INT64_C(1000000000007); break;
		case TIR_DTYPE_F32: ((float *)d)[i] = (float)v / 3.0f; break;
		case TIR_DTYPE_F64: ((double *)d)[i] = (double)v / 3.0 + 1e-300; break;
		case TIR_DTYPE_F16: ((uint16_t *)d)[i] = (uint16_t)(0x3555 + v * 0x801); break;
		case TIR_DTYPE_BF16: ((uint16_t *)d)[i] = (uint16_t)(0x3eab + v * 0x8011); break;
		case TIR_DTYPE_I8: ((int8_t *)d)[i] = (int8_t)(v * 25); break;
		case TIR_DTYPE_U8: ((uint8_t *)d)[i] = (uint8_t)(v * 51); break;
		case TIR_DTYPE_I16: ((int16_t *)d)[i] = (int16_t)(v * 6553); break;
		default: break;
		}
	}
}

static bool same_type(const struct tir_tensor *a, const struct tir_tensor *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

static void roundtrip(enum tir_dtype dt, int rank, const int64_t *shape)
{
	struct tir_tensor t, u;
	struct tir_err err = {0};
	CHECK(tir_tensor_alloc(&t, dt, rank, shape, false, &err) == 0);
	fill(&t, rank);
	if (dt == TIR_DTYPE_BF16) {
		/* NumPy has no bf16: .npy refuses it, .safetensors keeps it */
		CHECK(tir_npy_save(fpath("rt.npy"), &t, &err) == -TIR_EDATA &&
		      strstr(err.msg, "bf16 has no .npy dtype"));
		const char *sp = fpath("rt.safetensors"), *name = "t";
		const struct tir_tensor *ts[1] = {&t};
		CHECK(tir_safetensors_save(sp, &name, ts, 1, &err) == 0);
		CHECK(tir_file_load(sp, "t", &u, &err) == 0);
		size_t nb = (size_t)tir_tensor_numel(&t) * 2;
		CHECK(same_type(&t, &u) && (nb == 0 || !memcmp(tir_tensor_data(&t), tir_tensor_data(&u), nb)));
		tir_tensor_release(&u);
		tir_tensor_release(&t);
		return;
	}
	const char *p = fpath("rt.npy");
	CHECK(tir_npy_save(p, &t, &err) == 0);
	CHECK(access(fpath("rt.npy.tmp"), F_OK) != 0);
	int rc = tir_file_load(p, NULL, &u, &err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "  %s\n", err.msg);
		tir_tensor_release(&t);
		return;
	}
	CHECK(same_type(&t, &u));
	CHECK(tir_tensor_is_contiguous(&u));
	size_t bytes = (size_t)tir_tensor_numel(&t) * tir_dtype_size(dt);
	CHECK(bytes == 0 || memcmp(tir_tensor_data(&t), tir_tensor_data(&u), bytes) == 0);

	/* the header is numpy's: version 1.0, 64-byte aligned, '\n' last */
	struct tir_file_info info;
	CHECK(tir_file_info(p, NULL, &info, &err) == 0);
	CHECK(info.data_offset % 64 == 0 && info.data_bytes == bytes);
	FILE *f = fopen(p, "rb");
	unsigned char head[128] = {0};
	size_t got = fread(head, 1, sizeof head, f);
	fclose(f);
	CHECK(got >= 64 && memcmp(head, "\x93NUMPY\x01\x00", 8) == 0);
	CHECK((uint64_t)(10 + (head[8] | head[9] << 8)) == info.data_offset);
	CHECK(head[info.data_offset - 1] == '\n');
	tir_tensor_release(&t);
	tir_tensor_release(&u);
}

static void test_roundtrips(void)
{
	static const int64_t s2[] = {2, 3}, s1[] = {5}, s0z[] = {3, 0, 2}, s4[] = {2, 1, 3, 2};
	for (int dt = 0; dt < TIR_DTYPE_COUNT; dt++) {
		roundtrip(dt, 0, NULL);
		roundtrip(dt, 1, s1);
		roundtrip(dt, 2, s2);
		roundtrip(dt, 3, s0z);
		roundtrip(dt, 4, s4);
	}

	/* the rank-1 header spells a 1-tuple with its comma */
	struct tir_tensor t, u;
	struct tir_err err = {0};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, s1, true, &err) == 0);
	CHECK(tir_npy_save(fpath("one.npy"), &t, &err) == 0);
	char head[128] = {0};
	FILE *f = fopen(fpath("one.npy"), "rb");
	CHECK(fread(head, 1, 127, f) == 127);
	fclose(f);
	CHECK(strstr(head + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }") ==
	      head + 10);
	tir_tensor_release(&t);

	/* a strided view (a transpose) is written in its logical C order */
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_I32, 2, s2, false, &err) == 0);
	int32_t *d = tir_tensor_data(&t);
	for (int i = 0; i < 6; i++)
		d[i] = i;                       /* [[0 1 2] [3 4 5]] */
	struct tir_tensor v;
	static const int perm[2] = {1, 0};
	tir_view_transpose(&t, perm, &v);
	CHECK(!tir_tensor_is_contiguous(&v));
	CHECK(tir_npy_save(fpath("tr.npy"), &v, &err) == 0);
	CHECK(tir_file_load(fpath("tr.npy"), NULL, &u, &err) == 0);
	static const int32_t want[6] = {0, 3, 1, 4, 2, 5};
	CHECK(u.rank == 2 && u.shape[0] == 3 && u.shape[1] == 2 &&
	      memcmp(tir_tensor_data(&u), want, sizeof want) == 0);
	tir_tensor_release(&u);

	/* a slice with a step and an offset */
	struct tir_tensor w;
	tir_view_slice(&t, 1, 2, -2, 2, &w);    /* columns 2, 0 */
	CHECK(tir_npy_save(fpath("sl.npy"), &w, &err) == 0);
	CHECK(tir_file_load(fpath("sl.npy"), NULL, &u, &err) == 0);
	static const int32_t want2[4] = {2, 0, 5, 3};
	CHECK(u.rank == 2 && u.shape[0] == 2 && u.shape[1] == 2 &&
	      memcmp(tir_tensor_data(&u), want2, sizeof want2) == 0);
	tir_tensor_release(&u);
	tir_tensor_release(&w);
	tir_tensor_release(&v);
	tir_tensor_release(&t);

	/* a transpose bigger than the writer's gather buffer */
	static const int64_t sb[2] = {300, 200};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 2, sb, false, &err) == 0);
	double *db = tir_tensor_data(&t);
	for (int i = 0; i < 300 * 200; i++)
		db[i] = i;
	tir_view_transpose(&t, perm, &v);
	CHECK(tir_npy_save(fpath("big.npy"), &v, &err) == 0);
	CHECK(tir_file_load(fpath("big.npy"), NULL, &u, &err) == 0);
	CHECK(u.rank == 2 && u.shape[0] == 200 && u.shape[1] == 300);
	const double *du = tir_tensor_data(&u);
	bool same = true;
	for (int i = 0; i < 200 && same; i++)
		for (int j = 0; j < 300 && same; j++)
			same = du[i * 300 + j] == db[j * 200 + i];
	CHECK(same);
	tir_tensor_release(&u);
	tir_tensor_release(&v);
	tir_tensor_release(&t);
}

/* Headers in the forms numpy and other writers produce. */
static void test_npy_versions(void)
{
	struct tir_tensor t;
	struct tir_err err = {0};
	const float f6[6] = {1, 2, 3, 4, 5, 6.5f};

	/* numpy 1.x style, version 1.0 */
	make_npy("v1.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
		 f6, sizeof f6);
	CHECK(tir_file_load(fpath("v1.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_F32 && t.rank == 2 && t.shape[0] == 2 && t.shape[1] == 3);
	CHECK(((float *)tir_tensor_data(&t))[5] == 6.5f);
	tir_tensor_release(&t);

	/* version 2.0 (u32 length), keys reordered, double quotes, no trailing comma */
	const int64_t i3[3] = {-1, 0, INT64_MAX};
	make_npy("v2.npy", 2, "{\"shape\": (3,), \"descr\": \"<i8\",\"fortran_order\":False}",
		 i3, sizeof i3);
	struct tir_file_info info;
	CHECK(tir_file_info(fpath("v2.npy"), NULL, &info, &err) == 0);
	CHECK(info.data_offset == 128 && info.data_bytes == 24);   /* 12 + 116 */
	CHECK(tir_file_load(fpath("v2.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I64 && t.rank == 1 && t.shape[0] == 3);
	CHECK(((int64_t *)tir_tensor_data(&t))[2] == INT64_MAX);
	tir_tensor_release(&t);

	/* version 3.0 (utf-8 header), a scalar */
	const double d1 = -2.25;
	make_npy("v3.npy", 3, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
		 &d1, sizeof d1);
	CHECK(tir_file_load(fpath("v3.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_F64 && t.rank == 0 &&
	      *(double *)tir_tensor_data(&t) == -2.25);
	tir_tensor_release(&t);

	/* bool as numpy writes it, and i32; newer numpy's extra spaces */
	const uint8_t b4[4] = {1, 0, 0, 1};
	make_npy("b.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), "
		 "}                    ", b4, sizeof b4);
	CHECK(tir_file_load(fpath("b.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_BOOL && ((uint8_t *)tir_tensor_data(&t))[3] == 1);
	tir_tensor_release(&t);
	const int32_t i1 = 7;
	make_npy("i.npy", 1, "{ 'descr' : '<i4' , 'fortran_order' : False , "
		 "'shape' : ( 1 , 1 , ) , }", &i1, sizeof i1);
	CHECK(tir_file_load(fpath("i.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I32 && t.rank == 2 && *(int32_t *)tir_tensor_data(&t) == 7);
	tir_tensor_release(&t);

	/* a zero-size array has no data at all */
	make_npy("z.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }",
		 NULL, 0);
	CHECK(tir_file_load(fpath("z.npy"), NULL, &t, &err) == 0);
	CHECK(t.rank == 2 && t.shape[0] == 0 && t.shape[1] == 4 && tir_tensor_numel(&t) == 0);
	tir_tensor_release(&t);
}

static void test_npy_errors(void)
{
	const float f6[6] = {0};
	const char *f23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

	write_bytes("magic.npy", "\x93NUMPX\x01\x00\x10\x00{}", 12);
	expect_err("magic.npy", NULL, "not a .npy or .safetensors file");
	write_bytes("short.npy", "\x93NUMPY\x01\x00\x40", 9);
	expect_err("short.npy", NULL, "truncated");
	write_bytes("ver.npy", "\x93NUMPY\x04\x00\x10\x00{}", 12);
	expect_err("ver.npy", NULL, "unsupported .npy format version 4.0");

	unsigned char big[64] = "\x93NUMPY\x01\x00\xe8\x03{'descr': '<f4'";  /* 1000 */
	write_bytes("hlen.npy", big, sizeof big);
	expect_err("hlen.npy", NULL, "header length 1000 goes past the end of the file");
	unsigned char huge[64] = "\x93NUMPY\x02\x00\xff\xff\xff\xff{";
	write_bytes("huge.npy", huge, sizeof huge);
	expect_err("huge.npy", NULL, "header length 4294967295 exceeds the limit");

	make_npy("syntax.npy", 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }",
		 f6, sizeof f6);
	expect_err("syntax.npy", NULL, "bad .npy header: expected ',' or '}' at byte 16");
	make_npy("open.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ",
		 f6, sizeof f6);
	expect_err("open.npy", NULL, "bad .npy header");
	make_npy("quote.npy", 1, "{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }",
		 f6, sizeof f6);
	expect_err("quote.npy", NULL, "bad .npy header");
	make_npy("tuple1.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }",
		 f6, sizeof f6);
	expect_err("tuple1.npy", NULL, "a 1-tuple needs a trailing comma");
	make_npy("pybool.npy", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (6,), }",
		 f6, sizeof f6);
	expect_err("pybool.npy", NULL, "expected True or False");
	make_npy("after.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } x",
		 f6, sizeof f6);
	expect_err("after.npy", NULL, "unexpected text after the dict");
	make_npy("missing.npy", 1, "{'descr': '<f4', 'fortran_order': False, }", f6, sizeof f6);
	expect_err("missing.npy", NULL, "no 'shape' key");
	make_npy("extra.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), "
		 "'x': 1}", f6, sizeof f6);
	expect_err("extra.npy", NULL, "unexpected key 'x'");
	make_npy("twice.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), "
		 "'descr': '<f4'}", f6, sizeof f6);
	expect_err("twice.npy", NULL, "key 'descr' appears twice");

	make_npy("u2.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (12,), }",
		 f6, sizeof f6);
	expect_err("u2.npy", NULL, "unsupported dtype '<u2'; tir reads f2 f4 f8");
	make_npy("bec.npy", 1, "{'descr': '>c8', 'fortran_order': False, 'shape': (3,), }",
		 f6, sizeof f6);
	expect_err("bec.npy", NULL, "unsupported dtype '>c8'; tir reads f2 f4 f8 i1 i2 i4 i8 u1 b1 "
		   "(little- or big-endian)");
	make_npy("barf4.npy", 1, "{'descr': '|f4', 'fortran_order': False, 'shape': (6,), }",
		 f6, sizeof f6);
	expect_err("barf4.npy", NULL, "unsupported dtype '|f4'");
	make_npy("rec.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, "
		 "'shape': (6,), }", f6, sizeof f6);
	expect_err("rec.npy", NULL, "structured dtypes are not supported");
	/* a Fortran-order file is checked as any other: its bytes must be there */
	make_npy("fort.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
		 f6, 20);
	expect_err("fort.npy", NULL, "truncated: expected 24 bytes of data, file has 20");
	make_npy("bef.npy", 1, "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }",
		 f6, sizeof f6);
	expect_err("bef.npy", NULL, "truncated: expected 48 bytes of data, file has 24");

	make_npy("neg.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 6), }",
		 f6, sizeof f6);
	expect_err("neg.npy", NULL, "negative dimension -1");
	make_npy("dim.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (99999999999,), }", f6, sizeof f6);
	expect_err("dim.npy", NULL, "dimension 99999999999 exceeds the limit");
	make_npy("digits.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (123456789012345678901234567890,), }", f6, sizeof f6);
	expect_err("digits.npy", NULL, "dimension out of range");
	make_npy("numel.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (4294967296, 4294967296), }", f6, sizeof f6);
	expect_err("numel.npy", NULL, "too many elements");
	/* an empty axis does not excuse absurd others */
	make_npy("numel0.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (0, 4294967296, 4294967296), }", NULL, 0);
	expect_err("numel0.npy", NULL, "too many elements");
	make_npy("rank9.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 6), }", f6, sizeof f6);
	expect_err("rank9.npy", NULL, "more than 8 axes");

	make_npy("trunc.npy", 1, f23, f6, 20);
	expect_err("trunc.npy", NULL, "truncated: expected 24 bytes of data, file has 20");
	const float f7[7] = {0};
	make_npy("trail.npy", 1, f23, f7, sizeof f7);
	expect_err("trail.npy", NULL, "4 trailing bytes");
	const uint8_t b3[3] = {0, 1, 2};
	make_npy("bool.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
		 b3, sizeof b3);
	expect_err("bool.npy", NULL, "invalid bool byte 0x02 at element 2");

	make_npy("named.npy", 1, f23, f6, sizeof f6);
	expect_err("named.npy", "w", "load it without a name");
	expect_err("nope.npy", NULL, "cannot open: No such file or directory");
	expect_err("", NULL, "is a directory");    /* the directory itself */
	write_bytes("empty.bin", "", 0);
	expect_err("empty.bin", NULL, "not a .npy or .safetensors file");
	write_bytes("text.bin", "hello, world {}\n", 16);
	expect_err("text.bin", NULL, "not a .npy or .safetensors file");
}

/* Big-endian and Fortran-order data, as NumPy writes `a.astype('>f4')` and
 * `np.save(p, a.T)`: byte-swapped and transposed into C order on load. */
static void test_npy_orders(void)
{
	struct tir_tensor t;
	struct tir_err err = {0};

	/* >f4 [2, 3]: 1.5 is 3f c0 00 00 */
	unsigned char bef[24] = {0};
	for (int i = 0; i < 6; i++) {
		float v = (float)i + 0.5f;
		uint32_t u;
		memcpy(&u, &v, 4);
		u = __builtin_bswap32(u);
		memcpy(bef + 4 * i, &u, 4);
	}
	make_npy("be4.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
		 bef, sizeof bef);
	CHECK(tir_file_load(fpath("be4.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_F32 && t.rank == 2);
	CHECK(((float *)tir_tensor_data(&t))[0] == 0.5f && ((float *)tir_tensor_data(&t))[5] == 5.5f);
	tir_tensor_release(&t);

	/* >i8, >i4, >i2, >f2, >f8: one element each */
	const unsigned char i8[8] = {0x80, 0, 0, 0, 0, 0, 0, 0x01};
	make_npy("be8.npy", 1, "{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }", i8, 8);
	CHECK(tir_file_load(fpath("be8.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I64 && ((int64_t *)tir_tensor_data(&t))[0] == INT64_MIN + 1);
	tir_tensor_release(&t);
	const unsigned char i4[4] = {0xff, 0xff, 0xff, 0xfe};
	make_npy("bei4.npy", 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (), }", i4, 4);
	CHECK(tir_file_load(fpath("bei4.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I32 && t.rank == 0 && ((int32_t *)tir_tensor_data(&t))[0] == -2);
	tir_tensor_release(&t);
	const unsigned char i2[4] = {0x01, 0x02, 0xff, 0xff};
	make_npy("bei2.npy", 1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }", i2, 4);
	CHECK(tir_file_load(fpath("bei2.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I16 && ((int16_t *)tir_tensor_data(&t))[0] == 0x0102 &&
	      ((int16_t *)tir_tensor_data(&t))[1] == -1);
	tir_tensor_release(&t);
	const unsigned char f2[2] = {0x3c, 0x00}; /* 1.0 */
	make_npy("bef2.npy", 1, "{'descr': '>f2', 'fortran_order': False, 'shape': (1,), }", f2, 2);
	CHECK(tir_file_load(fpath("bef2.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_F16 && ((uint16_t *)tir_tensor_data(&t))[0] == 0x3c00);
	tir_tensor_release(&t);
	/* one-byte types in every order NumPy may write them */
	const uint8_t u3[3] = {0, 7, 255};
	const char *u1s[] = {"|u1", "<u1", ">u1", "=u1"};
	for (int i = 0; i < 4; i++) {
		char dict[128];
		snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }", u1s[i]);
		make_npy("u1.npy", 1, dict, u3, 3);
		CHECK(tir_file_load(fpath("u1.npy"), NULL, &t, &err) == 0);
		CHECK(t.dtype == TIR_DTYPE_U8 && ((uint8_t *)tir_tensor_data(&t))[2] == 255);
		tir_tensor_release(&t);
	}
	const uint8_t b2[2] = {1, 0};
	make_npy("beb.npy", 1, "{'descr': '>b1', 'fortran_order': False, 'shape': (2,), }", b2, 2);
	CHECK(tir_file_load(fpath("beb.npy"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_BOOL && ((uint8_t *)tir_tensor_data(&t))[0] == 1);
	tir_tensor_release(&t);

	/* Fortran order: a [2, 3, 4] array whose first axis varies fastest */
	int32_t fo[24], want[24];
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++) {
				int v = 100 * i + 10 * j + k;
				fo[i + 2 * j + 6 * k] = v;
				want[12 * i + 4 * j + k] = v;
			}
	make_npy("f3.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
		 fo, sizeof fo);
	CHECK(tir_file_load(fpath("f3.npy"), NULL, &t, &err) == 0);
	CHECK(t.rank == 3 && t.shape[0] == 2 && t.shape[2] == 4);
	CHECK(memcmp(tir_tensor_data(&t), want, sizeof want) == 0);
	tir_tensor_release(&t);
	/* both at once: big-endian and Fortran order */
	for (int i = 0; i < 24; i++)
		fo[i] = (int32_t)__builtin_bswap32((uint32_t)fo[i]);
	make_npy("bf3.npy", 1, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
		 fo, sizeof fo);
	CHECK(tir_file_load(fpath("bf3.npy"), NULL, &t, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&t), want, sizeof want) == 0);
	tir_tensor_release(&t);
	/* Fortran order of rank 0, 1 and of an empty array is C order */
	make_npy("f0.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (0, 3), }", NULL, 0);
	CHECK(tir_file_load(fpath("f0.npy"), NULL, &t, &err) == 0);
	CHECK(t.rank == 2 && tir_tensor_numel(&t) == 0);
	tir_tensor_release(&t);
	make_npy("f1.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (5,), }", want, 20);
	CHECK(tir_file_load(fpath("f1.npy"), NULL, &t, &err) == 0);
	CHECK(memcmp(tir_tensor_data(&t), want, 20) == 0);
	tir_tensor_release(&t);
	/* big enough to be mapped were it little-endian C order: it is read */
	static int32_t bigf[64 * 1024];
	for (int i = 0; i < 64 * 1024; i++)
		bigf[i] = (int32_t)__builtin_bswap32((uint32_t)i);
	FILE *f = fopen(fpath("bigbe.npy"), "wb");
	const char hd[] = "{'descr': '>i4', 'fortran_order': True, 'shape': (256, 256), }";
	unsigned char pre[10] = "\x93NUMPY\x01\x00";
	size_t hl = (10 + strlen(hd) + 1 + 63) / 64 * 64 - 10;
	pre[8] = (unsigned char)hl;
	pre[9] = (unsigned char)(hl >> 8);
	fwrite(pre, 1, 10, f);
	fwrite(hd, 1, strlen(hd), f);
	for (size_t i = strlen(hd); i + 1 < hl; i++)
		fputc(' ', f);
	fputc('\n', f);
	fwrite(bigf, 4, 64 * 1024, f);
	fclose(f);
	size_t mapped0 = tir_mapped_bytes();
	CHECK(tir_file_load(fpath("bigbe.npy"), NULL, &t, &err) == 0);
	CHECK(tir_mapped_bytes() == mapped0);
	/* element [i][j] was stored at i + 256 j */
	CHECK(((int32_t *)tir_tensor_data(&t))[1] == 256 && ((int32_t *)tir_tensor_data(&t))[256] == 1);
	tir_tensor_release(&t);
}

/* Headers mutated at random (bytes changed, cut, grown) are loaded or
 * refused with an error naming the file, never a crash; a header whose
 * shape lies about the data is an error. */
static void test_npy_fuzz(void)
{
	const char *dicts[] = {
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
		"{'descr': '>i8', 'fortran_order': True, 'shape': (3, 1), }",
		"{'descr': '|b1', 'fortran_order': False, 'shape': (6,), }",
	};
	unsigned char data[48] = {0};
	uint32_t seed = 12345;
	int loaded = 0, refused = 0;
	for (int round = 0; round < 3000; round++) {
		char dict[160];
		snprintf(dict, sizeof dict, "%s", dicts[round % 3]);
		size_t n = strlen(dict);
		int edits = 1 + round % 4;
		for (int e = 0; e < edits; e++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % n;
			static const char alphabet[] = "0123456789(),: '{}<>|=fibuTrueFals-\"x";
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 20) % 5 == 0 && n > 2)
				dict[--n] = 0;                    /* cut */
			else
				dict[at] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
		}
		seed = seed * 1103515245u + 12345u;
		static const size_t exact[3] = {24, 24, 6};
		size_t nd = (seed >> 24) % 2 ? exact[round % 3] : (seed >> 12) % 49;
		make_npy("fz.npy", 1 + (int)((seed >> 8) % 3), dict, data, nd);
		struct tir_tensor t;
		struct tir_err err = {0};
		if (tir_file_load(fpath("fz.npy"), NULL, &t, &err) == 0) {
			loaded++;
			CHECK((size_t)tir_tensor_numel(&t) * tir_dtype_size(t.dtype) <= sizeof data);
			tir_tensor_release(&t);
		} else {
			refused++;
			CHECK(err.code == TIR_EDATA && strncmp(err.msg, fpath("fz.npy"), strlen(dir)) == 0);
		}
	}
	CHECK(loaded > 0 && refused > 0);
	/* the shape lies: more elements than the data holds, or fewer */
	const float f6[6] = {0};
	make_npy("lie.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 3), }", f6, sizeof f6);
	expect_err("lie.npy", NULL, "truncated: expected 36 bytes of data, file has 24");
	make_npy("lie2.npy", 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", f6, sizeof f6);
	expect_err("lie2.npy", NULL, "8 trailing bytes");
}

static void test_safetensors(void)
{
	struct tir_tensor t;
	struct tir_err err = {0};
	unsigned char data[40];
	const float a[4] = {1, 2, 3, -4.5f};
	const int64_t b[3] = {7, -8, INT64_MIN};
	memcpy(data, a, 16);
	memcpy(data + 16, b, 24);
	make_st("m.safetensors",
		"{\"__metadata__\": {\"format\": \"pt\"}, "
		"\"weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}, "
		"\"bias\": {\"dtype\": \"I64\", \"shape\": [3], \"data_offsets\": [16, 40]}}   ",
		data, sizeof data);
	CHECK(tir_file_load(fpath("m.safetensors"), "weight", &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_F32 && t.rank == 2 && t.shape[1] == 2 &&
	      memcmp(tir_tensor_data(&t), a, 16) == 0);
	tir_tensor_release(&t);
	CHECK(tir_file_load(fpath("m.safetensors"), "bias", &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I64 && t.rank == 1 && t.shape[0] == 3 &&
	      memcmp(tir_tensor_data(&t), b, 24) == 0);
	tir_tensor_release(&t);
	struct tir_file_info info;
	CHECK(tir_file_info(fpath("m.safetensors"), "bias", &info, &err) == 0);
	CHECK(info.data_bytes == 24);

	/* one tensor: no name needed; a scalar; an empty one; bool */
	const double s = 0.5;
	make_st("one.safetensors", "{\"x\":{\"dtype\":\"F64\",\"shape\":[],"
		"\"data_offsets\":[0,8]}}", &s, 8);
	CHECK(tir_file_load(fpath("one.safetensors"), NULL, &t, &err) == 0);
	CHECK(t.rank == 0 && *(double *)tir_tensor_data(&t) == 0.5);
	tir_tensor_release(&t);
	make_st("e.safetensors", "{\"x\":{\"dtype\":\"I32\",\"shape\":[2,0],"
		"\"data_offsets\":[0,0]}}", NULL, 0);
	CHECK(tir_file_load(fpath("e.safetensors"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_I32 && t.rank == 2 && tir_tensor_numel(&t) == 0);
	tir_tensor_release(&t);
	const uint8_t bb[2] = {1, 0};
	make_st("bool.safetensors", "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[2],"
		"\"data_offsets\":[0,2]}}", bb, 2);
	CHECK(tir_file_load(fpath("bool.safetensors"), NULL, &t, &err) == 0);
	CHECK(t.dtype == TIR_DTYPE_BOOL && ((uint8_t *)tir_tensor_data(&t))[0] == 1);
	tir_tensor_release(&t);
	/* another tensor's unsupported dtype does not stop this one */
	make_st("mixed.safetensors", "{\"h\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],"
		"\"data_offsets\":[0,4]}, \"f\":{\"dtype\":\"F32\",\"shape\":[1],"
		"\"data_offsets\":[4,8]}}", data, 8);
	CHECK(tir_file_load(fpath("mixed.safetensors"), "f", &t, &err) == 0);
	CHECK(*(float *)tir_tensor_data(&t) == 2.0f);
	tir_tensor_release(&t);

	/* errors */
	expect_err("m.safetensors", NULL,
		   "holds 2 tensors (weight, bias): say which, load(\"");
	expect_err("m.safetensors", "wieght", "no tensor named 'wieght' (did you mean 'weight'?)");
	expect_err("m.safetensors", "__metadata__", "no tensor named '__metadata__'");
	expect_err("mixed.safetensors", "h", "unsupported dtype 'F8_E4M3'");
	make_st("range.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],"
		"\"data_offsets\":[0,8]}}", data, 4);
	expect_err("range.safetensors", NULL, "data_offsets [0, 8] out of range");
	make_st("back.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[0],"
		"\"data_offsets\":[4,0]}}", data, 4);
	expect_err("back.safetensors", NULL, "out of range");
	make_st("count.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,3],"
		"\"data_offsets\":[0,20]}}", data, 20);
	expect_err("count.safetensors", NULL, "needs 24 bytes but data_offsets span 20");
	make_st("json.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],}}", data, 4);
	expect_err("json.safetensors", NULL, "bad safetensors header");
	make_st("arr.safetensors", "{\"x\" : 1} ", NULL, 0);
	expect_err("arr.safetensors", NULL, "tensor 'x': expected a JSON object");
	make_st("noshape.safetensors", "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}",
		data, 4);
	expect_err("noshape.safetensors", NULL, "\"shape\" missing");
	make_st("negdim.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[-1],"
		"\"data_offsets\":[0,4]}}", data, 4);
	expect_err("negdim.safetensors", NULL, "negative dimension -1");
	make_st("fdim.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1.5],"
		"\"data_offsets\":[0,4]}}", data, 4);
	expect_err("fdim.safetensors", NULL, "shape entries must be integers");
	make_st("numel.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[65536,65536,2],"
		"\"data_offsets\":[0,4]}}", data, 4);
	expect_err("numel.safetensors", NULL, "too many elements");
	make_st("meta.safetensors", "{\"__metadata__\":{\"n\":1},\"x\":{\"dtype\":\"F32\","
		"\"shape\":[1],\"data_offsets\":[0,4]}}", data, 4);
	expect_err("meta.safetensors", NULL, "\"__metadata__\" must map strings to strings");
	make_st("none.safetensors", "{\"__metadata__\":{}}", NULL, 0);
	expect_err("none.safetensors", NULL, "holds no tensors");
	make_st("dup.safetensors", "{\"x\":{},\"x\":{}}", NULL, 0);
	expect_err("dup.safetensors", NULL, "bad safetensors header");

	/* header size beyond the file, and over the limit */
	unsigned char h[16] = {0x00, 0x01, 0, 0, 0, 0, 0, 0, '{', '}'};
	write_bytes("hpast.safetensors", h, 10);
	expect_err("hpast.safetensors", NULL, "header size 256 goes past the end of the file");
	unsigned char h2[16] = {0, 0, 0, 0x10, 0, 0, 0, 0, '{', '}'};
	write_bytes("hbig.safetensors", h2, 10);
	expect_err("hbig.safetensors", NULL, "header size 268435456 exceeds the limit");
}

static void test_save_errors(void)
{
	struct tir_tensor t;
	struct tir_err err = {0};
	static const int64_t s[1] = {4};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F64, 1, s, true, &err) == 0);

	const char *p = fpath("no/such/dir/x.npy");
	CHECK(tir_npy_save(p, &t, &err) == -TIR_EDATA);
	CHECK(strncmp(err.msg, p, strlen(p)) == 0 && strstr(err.msg, "No such file or directory"));

	/* the target is a directory: rename fails and no .tmp is left behind */
	char sub[600];
	snprintf(sub, sizeof sub, "%s", fpath("adir"));
	CHECK(mkdir(sub, 0777) == 0);
	err.code = 0;
	CHECK(tir_npy_save(sub, &t, &err) == -TIR_EDATA);
	CHECK(strstr(err.msg, "cannot rename") != NULL);
	CHECK(access(fpath("adir.tmp"), F_OK) != 0);
	rmdir(sub);

	/* a FIFO (as /dev/null or /dev/stdout) is written in place, never
	 * replaced by a regular file: a reader on it gets the whole .npy */
	CHECK(mkfifo(fpath("fifo"), 0600) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		FILE *f = fopen(fpath("fifo"), "rb");
		size_t n = 0, k;
		char b[256];
		while (f && (k = fread(b, 1, sizeof b, f)) > 0)
			n += k;
		_exit(n == 128 + 4 * 8 ? 0 : 1);      /* a 128-byte header, 4 f64 */
	}
	err.code = 0;
	CHECK(tir_npy_save(fpath("fifo"), &t, &err) == 0);
	int wst = 0;
	CHECK(waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	struct stat fst;
	CHECK(stat(fpath("fifo"), &fst) == 0 && S_ISFIFO(fst.st_mode));
	CHECK(access(fpath("fifo.tmp"), F_OK) != 0);

	/* overwriting an existing file replaces it whole */
	write_bytes("over.npy", "junk", 4);
	CHECK(tir_npy_save(fpath("over.npy"), &t, &err) == 0);
	struct tir_tensor u;
	CHECK(tir_file_load(fpath("over.npy"), NULL, &u, &err) == 0);
	CHECK(u.dtype == TIR_DTYPE_F64 && u.shape[0] == 4);
	tir_tensor_release(&u);
	tir_tensor_release(&t);

	/* a write that fails midway (a file size limit standing in for a full
	 * disk) is reported and leaves neither the file nor the .tmp */
	static const int64_t sbig[1] = {1 << 18};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, sbig, true, &err) == 0);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 100000;
	void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	err.code = 0;
	int rc = tir_npy_save(fpath("fsize.npy"), &t, &err);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, oldsig);
	CHECK(rc == -TIR_EDATA && strstr(err.msg, "cannot write: File too large"));
	CHECK(access(fpath("fsize.npy"), F_OK) != 0 && access(fpath("fsize.npy.tmp"), F_OK) != 0);
	tir_tensor_release(&t);
}

/* tir_file_list (tir inspect): every tensor, whatever its dtype, in the
 * file's order; a header that lies about any tensor is refused, for
 * loading too; several named tensors saved as one .safetensors file and
 * read back by name. */
static void test_listing(void)
{
	struct tir_err err = {0};
	struct tir_file_listing l;
	unsigned char data[64] = {0};
	make_st("list.safetensors",
		"{\"b\": {\"dtype\": \"BF16\", \"shape\": [4], \"data_offsets\": [16, 24]}, "
		"\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}, "
		"\"e\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [24, 24]}, "
		"\"__metadata__\": {\"format\": \"pt\"}}",
		data, 24);
	CHECK(tir_file_list(fpath("list.safetensors"), &l, &err) == 0);
	CHECK(l.n == 3 && !strcmp(l.format, "safetensors") && l.metadata &&
	      !strcmp(l.metadata, "{\"format\":\"pt\"}"));
	if (l.n == 3) {
		CHECK(!strcmp(l.e[0].name, "a") && l.e[0].loads && l.e[0].dt == TIR_DTYPE_F32 &&
		      l.e[0].offset == l.header_bytes && l.e[0].bytes == 16);
		CHECK(!strcmp(l.e[1].name, "b") && l.e[1].loads && l.e[1].dt == TIR_DTYPE_BF16 &&
		      l.e[1].rank == 1 && l.e[1].shape[0] == 4 && l.e[1].bytes == 8);
		CHECK(!strcmp(l.e[2].name, "e") && l.e[2].bytes == 0);
	}
	tir_file_listing_free(&l);
	char *text = tir_file_inspect(fpath("list.safetensors"), &err);
	CHECK(text && strstr(text, "safetensors, 3 tensors, 24 bytes of data") &&
	      strstr(text, "BF16") && strstr(text, "__metadata__: {\"format\":\"pt\"}"));
	free(text);

	/* a .npy of a dtype tir does not read is listed, not loaded */
	const float h[6] = {1, 0, 2, 0, -2, 0};
	make_npy("cplx.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", h, sizeof h);
	CHECK(tir_file_list(fpath("cplx.npy"), &l, &err) == 0);
	CHECK(l.n == 1 && !l.e[0].name && !l.e[0].loads && !strcmp(l.e[0].dtype, "<c8") &&
	      l.e[0].bytes == 24 && l.e[0].offset == 128);
	tir_file_listing_free(&l);
	expect_err("cplx.npy", NULL, "unsupported dtype '<c8'");

	/* lies: overlapping data, an unknown dtype, bytes that disagree with
	 * the shape; refused when listing and when loading another tensor */
	make_st("overlap.safetensors",
		"{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}, "
		"\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}}",
		data, 16);
	CHECK(tir_file_list(fpath("overlap.safetensors"), &l, &err) != 0 &&
	      strstr(err.msg, "tensors 'a' and 'b' overlap: data_offsets [0, 16] and [8, 16]"));
	CHECK(l.n == 0 && !l.e);
	expect_err("overlap.safetensors", "a", "overlap");
	make_st("unknown.safetensors",
		"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
		"\"q\": {\"dtype\": \"Q4\", \"shape\": [2], \"data_offsets\": [8, 9]}}",
		data, 9);
	CHECK(tir_file_list(fpath("unknown.safetensors"), &l, &err) != 0 &&
	      strstr(err.msg, "tensor 'q': unknown dtype 'Q4'"));
	expect_err("unknown.safetensors", "a", "unknown dtype 'Q4'");
	make_st("lies.safetensors",
		"{\"h\": {\"dtype\": \"F16\", \"shape\": [3], \"data_offsets\": [0, 8]}}", data, 8);
	CHECK(tir_file_list(fpath("lies.safetensors"), &l, &err) != 0 &&
	      strstr(err.msg, "its shape needs 6 bytes but data_offsets span 8"));
	make_st("range.safetensors",
		"{\"h\": {\"dtype\": \"I8\", \"shape\": [30], \"data_offsets\": [0, 30]}}", data, 8);
	CHECK(tir_file_list(fpath("range.safetensors"), &l, &err) != 0 && strstr(err.msg, "out of range"));

	/* several named tensors in one file, any layout, read back by name */
	struct tir_tensor x, y, z, xt, back;
	const int64_t sx[2] = {3, 5}, sy[1] = {4};
	CHECK(tir_tensor_alloc(&x, TIR_DTYPE_F64, 2, sx, false, &err) == 0);
	CHECK(tir_tensor_alloc(&y, TIR_DTYPE_I32, 1, sy, false, &err) == 0);
	CHECK(tir_tensor_alloc(&z, TIR_DTYPE_BOOL, 0, NULL, false, &err) == 0);
	fill(&x, 1);
	fill(&y, 2);
	fill(&z, 3);
	tir_view_transpose(&x, (const int[]){1, 0}, &xt);
	const char *names[3] = {"x.t", "y", "z"};
	const struct tir_tensor *ts[3] = {&xt, &y, &z};
	CHECK(tir_safetensors_save(fpath("out.safetensors"), names, ts, 3, &err) == 0);
	CHECK(tir_file_list(fpath("out.safetensors"), &l, &err) == 0 && l.n == 3);
	CHECK(l.n == 3 && (l.header_bytes - 8) % 8 == 0 && !strcmp(l.e[0].name, "x.t") &&
	      l.e[0].shape[0] == 5 && l.e[0].shape[1] == 3);
	tir_file_listing_free(&l);
	for (int i = 0; i < 3; i++) {
		CHECK(tir_file_load(fpath("out.safetensors"), names[i], &back, &err) == 0);
		CHECK(same_type(&back, ts[i]));
		bool same = true;
		for (int64_t e = 0; e < tir_tensor_numel(ts[i]); e++)
			same &= tir_tensor_get_f64(&back, e) == tir_tensor_get_f64(ts[i], e);
		CHECK(same);
		tir_tensor_release(&back);
	}
	const char *twice[2] = {"y", "y"};
	const struct tir_tensor *two[2] = {&y, &y};
	CHECK(tir_safetensors_save(fpath("twice.safetensors"), twice, two, 2, &err) != 0 &&
	      strstr(err.msg, "tensor 'y' given twice"));
	const char *meta[1] = {"__metadata__"};
	CHECK(tir_safetensors_save(fpath("meta.safetensors"), meta, two, 1, &err) != 0 &&
	      strstr(err.msg, "reserved"));
	CHECK(tir_tensors_save(fpath("two.npy"), twice, two, 2, &err) != 0 &&
	      strstr(err.msg, "a .npy file holds one tensor, not 2"));
	CHECK(tir_tensors_save(fpath("one.npy"), names + 1, ts + 1, 1, &err) == 0);
	tir_tensor_release(&xt);
	tir_tensor_release(&x);
	tir_tensor_release(&y);
	tir_tensor_release(&z);
}

static void cleanup(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(fpath(e->d_name));
	if (d)
		closedir(d);
	rmdir(dir);
}

/* load maps data of 64 KiB or more (tir_set_file_mapping): the file's
 * pages, read-only, not charged as tensor bytes, unmapped on the last
 * release; small data, or mapping off, is read into memory of its own.
 * The mapping is live: the file truncated under it is SIGBUS on a touch
 * (docs/commands.md, "Files are mapped"; the CLI says so, exit 1). */
static void test_mapping(void)
{
	struct tir_err err = {0};
	struct tir_tensor t, u, v;
	int64_t shape[1] = {32768};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, shape, false, &err) == 0);
	float *d = tir_tensor_data(&t);
	for (int64_t i = 0; i < shape[0]; i++)
		d[i] = (float)i * 0.5f;
	CHECK(tir_npy_save(fpath("map.npy"), &t, &err) == 0);
	size_t held = tir_mem_current(), mapped = tir_mem_mapped();
	CHECK(tir_file_load(fpath("map.npy"), NULL, &u, &err) == 0);
	CHECK(u.buf && u.buf->map && !tir_buf_writable(u.buf));
	CHECK(tir_mem_current() == held && tir_mem_mapped() >= mapped + 131072);
	CHECK(u.buf && memcmp(tir_tensor_data(&u), d, 131072) == 0);
	CHECK(((uintptr_t)tir_tensor_data(&u) & 63) == 0);   /* numpy's 64-byte header */
	tir_tensor_ref(&v, &u);
	tir_tensor_release(&u);
	CHECK(tir_mem_mapped() >= mapped + 131072);           /* still held by v */
	tir_tensor_release(&v);
	CHECK(tir_mem_mapped() == mapped);
	tir_set_file_mapping(false);
	CHECK(tir_file_load(fpath("map.npy"), NULL, &u, &err) == 0);
	CHECK(u.buf && !u.buf->map && tir_buf_writable(u.buf) && tir_mem_mapped() == mapped);
	CHECK(u.buf && memcmp(tir_tensor_data(&u), d, 131072) == 0);
	tir_tensor_release(&u);
	tir_set_file_mapping(true);
	struct tir_tensor small = t; /* 4000 bytes: read */
	small.shape[0] = 1000;
	CHECK(tir_npy_save(fpath("small.npy"), &small, &err) == 0);
	CHECK(tir_file_load(fpath("small.npy"), NULL, &u, &err) == 0);
	CHECK(u.buf && !u.buf->map);
	tir_tensor_release(&u);
#if !defined(__SANITIZE_ADDRESS__)
	/* (ASan takes SIGBUS for itself) */
	pid_t pid = fork();
	if (pid == 0) {
		if (tir_file_load(fpath("map.npy"), NULL, &u, &err) || truncate(fpath("map.npy"), 0))
			_exit(3);
		volatile float x = ((volatile float *)tir_tensor_data(&u))[32767];
		(void)x;
		_exit(0);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);
#endif
	tir_tensor_release(&t);
}

/* A mapping released is kept for the next load of the same bytes (the
 * same address again, nothing mapped anew); a file replaced, or changed
 * in place, gives its new bytes; tir_file_maps_forget unmaps the kept. */
static void test_mapping_kept(void)
{
	struct tir_err err = {0};
	struct tir_tensor t, u, v;
	int64_t shape[1] = {32768};
	CHECK(tir_tensor_alloc(&t, TIR_DTYPE_F32, 1, shape, false, &err) == 0);
	float *d = tir_tensor_data(&t);
	for (int64_t i = 0; i < shape[0]; i++)
		d[i] = (float)i;
	CHECK(tir_npy_save(fpath("mk.npy"), &t, &err) == 0);
	size_t mapped = tir_mem_mapped();
	CHECK(tir_file_load(fpath("mk.npy"), NULL, &u, &err) == 0 && u.buf && u.buf->map);
	const void *at = tir_tensor_data(&u);
	tir_tensor_release(&u);
	CHECK(tir_mem_mapped() == mapped);                    /* no tensor holds it */
	uint64_t made = tir_file_maps_made();
	for (int i = 0; i < 3; i++) {
		CHECK(tir_file_load(fpath("mk.npy"), NULL, &u, &err) == 0);
		CHECK(tir_tensor_data(&u) == at && memcmp(at, d, 131072) == 0);
		tir_tensor_ref(&v, &u);                       /* two holders, one mapping */
		tir_tensor_release(&u);
		CHECK(tir_file_load(fpath("mk.npy"), NULL, &u, &err) == 0 && tir_tensor_data(&u) == at);
		tir_tensor_release(&u);
		tir_tensor_release(&v);
	}
	CHECK(tir_file_maps_made() == made);
	/* replaced (another inode): the new bytes */
	d[5] = -1;
	CHECK(tir_npy_save(fpath("mk2.npy"), &t, &err) == 0);
	CHECK(rename(fpath("mk2.npy"), fpath("mk.npy")) == 0);
	CHECK(tir_file_load(fpath("mk.npy"), NULL, &u, &err) == 0);
	CHECK(((float *)tir_tensor_data(&u))[5] == -1 && memcmp(tir_tensor_data(&u), d, 131072) == 0);
	tir_tensor_release(&u);
	CHECK(tir_file_maps_made() == made + 1);
	/* written in place, held meanwhile by v: v's mapping is the file's
	 * pages, and a new load gives the new bytes */
	CHECK(tir_file_load(fpath("mk.npy"), NULL, &v, &err) == 0);
	d[7] = -2;
	int fd = open(fpath("mk.npy"), O_WRONLY);
	struct stat st;
	CHECK(fd >= 0 && fstat(fd, &st) == 0 &&
	      pwrite(fd, &d[7], 4, st.st_size - 131072 + 7 * 4) == 4 && close(fd) == 0);
	CHECK(((const float *)tir_tensor_data(&v))[7] == -2);
	CHECK(tir_file_load(fpath("mk.npy"), NULL, &u, &err) == 0);
	CHECK(((float *)tir_tensor_data(&u))[7] == -2 && memcmp(tir_tensor_data(&u), d, 131072) == 0);
	tir_tensor_release(&u);
	tir_tensor_release(&v);
	/* (mapped anew, or within its times' tick the same mapping) */
	made = tir_file_maps_made();
	tir_file_maps_forget();
	CHECK(tir_file_load(fpath("mk.npy"), NULL, &u, &err) == 0 && memcmp(tir_tensor_data(&u), d, 131072) == 0);
	tir_tensor_release(&u);
	CHECK(tir_file_maps_made() == made + 1);
	tir_file_maps_forget();
	CHECK(tir_mem_mapped() == mapped);
	tir_tensor_release(&t);
}

/* A header is parsed once, however many loads name the file; a file
 * rewritten at once (within its times' tick, the same size) is read again. */
static void test_header_kept(void)
{
	struct tir_tensor t;
	struct tir_err err = {0};
	float data[4] = {1, 2, 3, 4};
	const char *h1 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
			 "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[4,16]}}";
	/* the same length: b is first, and of one element */
	const char *h2 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[4,16]},"
			 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
	CHECK(strlen(h1) == strlen(h2));
	make_st("kept.safetensors", h1, data, sizeof data);
	uint64_t r0 = tir_file_header_reads();
	for (int i = 0; i < 50; i++) {
		CHECK(tir_file_load(fpath("kept.safetensors"), i % 2 ? "a" : "b", &t, &err) == 0);
		CHECK(t.shape[0] == (i % 2 ? 1 : 3));
		tir_tensor_release(&t);
	}
	struct tir_file_info info;
	CHECK(tir_file_info(fpath("kept.safetensors"), "b", &info, &err) == 0 && info.shape[0] == 3);
	CHECK(tir_file_header_reads() == r0 + 1);
	make_st("kept.safetensors", h2, data, sizeof data);
	CHECK(tir_file_load(fpath("kept.safetensors"), "a", &t, &err) == 0);
	CHECK(t.shape[0] == 3 && ((float *)tir_tensor_data(&t))[0] == 2);
	tir_tensor_release(&t);
	CHECK(tir_file_header_reads() == r0 + 2);
	/* a bad header is never kept: the error again, and a fixed file loads */
	make_st("kept.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[9],\"data_offsets\":[0,36]}}",
		data, sizeof data);
	expect_err("kept.safetensors", "a", "out of range");
	expect_err("kept.safetensors", "a", "out of range");
	/* more files than are kept: each still right */
	char name[32];
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof name, "k%d.safetensors", i);
		make_st(name, i % 2 ? h1 : h2, data, sizeof data);
	}
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 20; i++) {
			snprintf(name, sizeof name, "k%d.safetensors", i);
			CHECK(tir_file_load(fpath(name), "a", &t, &err) == 0 && t.shape[0] == (i % 2 ? 1 : 3));
			tir_tensor_release(&t);
		}
	tir_file_headers_forget();
	uint64_t r1 = tir_file_header_reads();
	CHECK(tir_file_load(fpath("k0.safetensors"), "a", &t, &err) == 0);
	tir_tensor_release(&t);
	CHECK(tir_file_header_reads() == r1 + 1);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	size_t mem0 = tir_mem_current();
	test_roundtrips();
	test_npy_versions();
	test_npy_errors();
	test_npy_orders();
	test_npy_fuzz();
	test_safetensors();
	test_save_errors();
	test_listing();
	test_mapping();
	test_mapping_kept();
	test_header_kept();
	CHECK(tir_mem_current() == mem0);
	cleanup();
	return check_report("test_npy");
}
