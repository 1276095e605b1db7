/*
 * import.c — an ONNX model (a protobuf-c ModelProto) into a tir program:
 * reading and checking the file, the graph's names and order, constants,
 * and the text, checked by lib/ir statement by statement as it is written.
 * The ops themselves are nodes.c's.  Not a runner: the program it makes
 * runs as any other.
 */
#include "onnx.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../exec/exec.h"
#include "../exec/half.h"

int ox_fail(struct ox_imp *m, int code, const char *fmt, ...)
{
	if (m->err->code)
		return -m->err->code;
	va_list ap;
	va_start(ap, fmt);
	char msg[sizeof m->err->msg];
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tir_errf(m->err, code, NULL, "%s: %s", m->path, msg);
}

/* ---- dtypes ---- */

bool ox_dtype(int32_t onnx, enum tir_dtype *dt)
{
	switch (onnx) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *dt = TIR_DTYPE_F32; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *dt = TIR_DTYPE_U8; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *dt = TIR_DTYPE_I8; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *dt = TIR_DTYPE_I16; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *dt = TIR_DTYPE_I32; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *dt = TIR_DTYPE_I64; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *dt = TIR_DTYPE_BOOL; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *dt = TIR_DTYPE_F16; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *dt = TIR_DTYPE_F64; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *dt = TIR_DTYPE_BF16; return true;
	/* the unsigned types tir has not, held exactly in a wider signed one
	 * (uint64: its values below 2^63; docs/onnx.md) */
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: *dt = TIR_DTYPE_I32; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: *dt = TIR_DTYPE_I64; return true;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: *dt = TIR_DTYPE_I64; return true;
	default: return false;
	}
}

/* bytes of one element of an unsigned type tir holds in a wider one, or 0 */
static size_t unsigned_size(int32_t onnx)
{
	switch (onnx) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return 2;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return 4;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return 8;
	default: return 0;
	}
}

/* element k of raw unsigned data of usz bytes an element */
static uint64_t raw_unsigned(const unsigned char *p, size_t usz, int64_t k)
{
	uint16_t a;
	uint32_t b;
	uint64_t c;
	p += (size_t)k * usz;
	switch (usz) {
	case 2: memcpy(&a, p, 2); return a;
	case 4: memcpy(&b, p, 4); return b;
	default: memcpy(&c, p, 8); return c;
	}
}

const char *ox_onnx_type_name(int32_t onnx)
{
	static const char *const names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
					    "int64", "string", "bool", "float16", "double", "uint32", "uint64",
					    "complex64", "complex128", "bfloat16"};
	return onnx >= 0 && onnx < (int32_t)(sizeof names / sizeof *names) ? names[onnx] : "unknown";
}

/* ---- constants ---- */

struct ox_const *ox_const_new(enum tir_dtype dt, int rank, const int64_t *shape)
{
	int64_t n = 1;
	for (int k = 0; k < rank; k++) {
		if (shape[k] < 0 || (shape[k] && n > OX_MAX_MODEL / shape[k]))
			return NULL;
		n *= shape[k];
	}
	if (rank < 0 || rank > TIR_MAX_RANK)
		return NULL;
	struct ox_const *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->dtype = dt;
	c->rank = rank;
	for (int k = 0; k < rank; k++)
		c->shape[k] = shape[k];
	c->n = n;
	if (n > OX_FOLD_MAX) {
		c->bytes = calloc((size_t)n, tir_dtype_size(dt));
		if (!c->bytes) {
			ox_const_free(c);
			return NULL;
		}
		return c;
	}
	c->i = calloc((size_t)n + 1, sizeof *c->i);
	c->d = calloc((size_t)n + 1, sizeof *c->d);
	if (!c->i || !c->d) {
		ox_const_free(c);
		return NULL;
	}
	return c;
}

static void store_elem(unsigned char *p, enum tir_dtype dt, double d, int64_t i)
{
	switch (dt) {
	case TIR_DTYPE_F32: { float f = (float)d; memcpy(p, &f, 4); break; }
	case TIR_DTYPE_F64: memcpy(p, &d, 8); break;
	case TIR_DTYPE_I64: memcpy(p, &i, 8); break;
	case TIR_DTYPE_I32: { int32_t v = (int32_t)i; memcpy(p, &v, 4); break; }
	case TIR_DTYPE_I16: { int16_t v = (int16_t)i; memcpy(p, &v, 2); break; }
	case TIR_DTYPE_I8: { int8_t v = (int8_t)i; memcpy(p, &v, 1); break; }
	case TIR_DTYPE_U8: { uint8_t v = (uint8_t)i; memcpy(p, &v, 1); break; }
	case TIR_DTYPE_BOOL: { uint8_t v = d != 0; memcpy(p, &v, 1); break; }
	case TIR_DTYPE_F16: { uint16_t h = tir_d2h(d); memcpy(p, &h, 2); break; }
	case TIR_DTYPE_BF16: { uint16_t h = tir_d2b(d); memcpy(p, &h, 2); break; }
	default: break;
	}
}

void ox_const_set(struct ox_const *c, int64_t k, double d, int64_t i)
{
	if (c->bytes) {
		store_elem(c->bytes + (size_t)k * tir_dtype_size(c->dtype), c->dtype, d, i);
		return;
	}
	c->d[k] = d;
	c->i[k] = i;
}

void ox_const_free(struct ox_const *c)
{
	if (!c)
		return;
	free(c->i);
	free(c->d);
	if (!c->borrowed)
		free(c->bytes);
	free(c);
}

static float half_to_float(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, f = h & 1023;
	uint32_t u;
	if (e == 0) {
		if (!f) {
			u = s;
		} else {
			e = 113;
			while (!(f & 1024)) {
				f <<= 1;
				e--;
			}
			u = s | (e << 23) | ((f & 1023) << 13);
		}
	} else if (e == 31) {
		u = s | 0x7f800000u | (f << 13);
	} else {
		u = s | ((e + 112) << 23) | (f << 13);
	}
	float v;
	memcpy(&v, &u, 4);
	return v;
}

/* element k of little-endian bytes of dtype dt, as a double */
static double raw_elem(const unsigned char *p, enum tir_dtype dt, int64_t k)
{
	size_t sz = tir_dtype_size(dt);
	p += (size_t)k * sz;
	union { float f; double d; int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; int64_t i64; uint32_t u32; } u;
	memcpy(&u, p, sz);
	switch (dt) {
	case TIR_DTYPE_BOOL: return u.u8 != 0;
	case TIR_DTYPE_I8: return u.i8;
	case TIR_DTYPE_U8: return u.u8;
	case TIR_DTYPE_I16: return u.i16;
	case TIR_DTYPE_I32: return u.i32;
	case TIR_DTYPE_I64: return (double)u.i64;
	case TIR_DTYPE_F32: return u.f;
	case TIR_DTYPE_F64: return u.d;
	case TIR_DTYPE_F16: return half_to_float(u.u16);
	case TIR_DTYPE_BF16: { uint32_t w = (uint32_t)u.u16 << 16; float f; memcpy(&f, &w, 4); return f; }
	default: return 0;
	}
}

double ox_const_get(const struct ox_const *c, int64_t k)
{
	return c->bytes ? raw_elem(c->bytes, c->dtype, k) : c->d[k];
}

static int64_t raw_int(const unsigned char *p, enum tir_dtype dt, int64_t k)
{
	if (dt == TIR_DTYPE_I64) {
		int64_t v;
		memcpy(&v, p + (size_t)k * 8, 8);
		return v;
	}
	double d = raw_elem(p, dt, k);
	return isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0;
}

/* external data: a file under the model's folder, never outside it */
static int read_external(struct ox_imp *m, const Onnx__TensorProto *t, size_t want, unsigned char **out,
			 struct tir_err *err)
{
	const char *loc = NULL;
	int64_t off = 0, len = -1;
	for (size_t k = 0; k < t->n_external_data; k++) {
		const Onnx__StringStringEntryProto *e = t->external_data[k];
		if (!e->key || !e->value)
			continue;
		if (!strcmp(e->key, "location"))
			loc = e->value;
		else if (!strcmp(e->key, "offset"))
			off = strtoll(e->value, NULL, 10);
		else if (!strcmp(e->key, "length"))
			len = strtoll(e->value, NULL, 10);
	}
	const char *tn = t->name ? t->name : "?";
	if (!loc || !*loc)
		return tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': external data without a location", m->path, tn);
	if (loc[0] == '/' || !strcmp(loc, "..") || !strncmp(loc, "../", 3) || strstr(loc, "/../") ||
	    (strlen(loc) >= 3 && !strcmp(loc + strlen(loc) - 3, "/..")))
		return tir_errf(err, TIR_EDATA, NULL,
				"%s: tensor '%s': external data path '%s' leaves the model's folder", m->path, tn, loc);
	if (off < 0 || (len >= 0 && (uint64_t)len != want))
		return tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': external data offset %" PRId64
				" or length %" PRId64 " does not fit its %zu bytes", m->path, tn, off, len, want);
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", m->dir, loc) >= (int)sizeof path)
		return tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': external data path too long", m->path, tn);
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': external data %s: %s", m->path, tn, path,
				fd < 0 ? strerror(errno) : "not a regular file");
	}
	if ((uint64_t)off > (uint64_t)st.st_size || want > (uint64_t)st.st_size - (uint64_t)off) {
		close(fd);
		return tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': external data %s holds %jd bytes, "
				"not %zu at offset %" PRId64, m->path, tn, path, (intmax_t)st.st_size, want, off);
	}
	unsigned char *buf = malloc(want + 1);
	size_t got = 0;
	while (buf && got < want) {
		ssize_t r = pread(fd, buf + got, want - got, (off_t)(off + (int64_t)got));
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!buf || got < want) {
		free(buf);
		return tir_errf(err, buf ? TIR_EDATA : TIR_ENOMEM, NULL, "%s: tensor '%s': reading %s failed",
				m->path, tn, path);
	}
	*out = buf;
	return 0;
}

/* A TensorProto's elements, checked against its dims and dtype. */
int ox_tensor_decode(struct ox_imp *m, const Onnx__TensorProto *t, struct ox_const **out, struct tir_err *err)
{
	const char *where = m ? m->path : "tensor";
	const char *tn = t->name && *t->name ? t->name : "(unnamed)";
	enum tir_dtype dt;
	if (!ox_dtype(t->data_type, &dt))
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: tensor '%s' has type %s, which tir has not", where,
				tn, ox_onnx_type_name(t->data_type));
	if (t->n_dims > TIR_MAX_RANK)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: tensor '%s' has %zu dimensions; tir has at most %d",
				where, tn, t->n_dims, TIR_MAX_RANK);
	int64_t n = 1;
	for (size_t k = 0; k < t->n_dims; k++) {
		if (t->dims[k] < 0 || t->dims[k] > TIR_MAX_DIM || (t->dims[k] && n > TIR_MAX_ELEMS / t->dims[k]))
			return tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': its dimensions ask for more than %" PRId64
					" elements (dimension %zu is %" PRId64 ")", where, tn, TIR_MAX_ELEMS, k, t->dims[k]);
		n *= t->dims[k];
	}
	size_t usz = unsigned_size(t->data_type);
	size_t sz = usz ? usz : tir_dtype_size(dt);
	size_t want = (size_t)n * sz;
	const unsigned char *raw = NULL;
	unsigned char *ext = NULL;
	size_t have = 0;
	const char *field = NULL;
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		if (!m)
			return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: tensor '%s': external data", where, tn);
		int rc = read_external(m, t, want, &ext, err);
		if (rc)
			return rc;
		raw = ext;
		have = want;
	} else if (t->has_raw_data) {
		raw = t->raw_data.data;
		have = t->raw_data.len;
		field = "raw_data";
	}
	size_t count = 0;
	if (!raw) {
		switch (dt) {
		case TIR_DTYPE_F32: count = t->n_float_data; field = "float_data"; break;
		case TIR_DTYPE_F64: count = t->n_double_data; field = "double_data"; break;
		case TIR_DTYPE_I64: count = t->n_int64_data; field = "int64_data"; break;
		default: count = t->n_int32_data; field = "int32_data"; break;
		}
		if (usz > 2) {
			count = t->n_uint64_data;
			field = "uint64_data";
		} else if (usz) {
			count = t->n_int32_data;
			field = "int32_data";
		}
	}
	if ((raw && have != want) || (!raw && count != (size_t)n))
		return free(ext), tir_errf(err, TIR_EDATA, NULL, "%s: tensor '%s': %s holds %zu %s, its shape wants %zu",
					   where, tn, field ? field : "data", raw ? have : count,
					   raw ? "bytes" : "values", raw ? want : (size_t)n);
	struct ox_const *c = ox_const_new(dt, (int)t->n_dims, t->dims);
	if (!c)
		return free(ext), tir_errf(err, TIR_ENOMEM, NULL, "%s: tensor '%s': out of memory", where, tn);
	if (usz) {
		/* an unsigned type: each value widened (uint64: below 2^63) */
		for (int64_t k = 0; k < n; k++) {
			uint64_t v = raw ? raw_unsigned(raw, usz, k) : usz > 2 ? t->uint64_data[k] : (uint16_t)t->int32_data[k];
			if (v >> 63) {
				ox_const_free(c);
				free(ext);
				return tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s: tensor '%s': uint64 value %" PRIu64
						" at %" PRId64 " is 2^63 or more (tir holds uint64 in i64)", where, tn, v, k);
			}
			ox_const_set(c, k, (double)v, (int64_t)v);
		}
		n = 0;
	} else if (c->bytes && raw) {
		/* a weight, as stored: the model's raw_data itself while the
		 * model is kept (the import), the external file's buffer */
		if (ext || m) {
			free(c->bytes);
			c->bytes = ext ? ext : (unsigned char *)raw;
			c->borrowed = !ext;
			ext = NULL;
		} else {
			memcpy(c->bytes, raw, want);
		}
		n = 0;
	}
	for (int64_t k = 0; k < n; k++) {
		if (raw) {
			ox_const_set(c, k, raw_elem(raw, dt, k), raw_int(raw, dt, k));
			continue;
		}
		double d;
		switch (dt) {
		case TIR_DTYPE_F32: d = t->float_data[k]; break;
		case TIR_DTYPE_F64: d = t->double_data[k]; break;
		case TIR_DTYPE_I64: ox_const_set(c, k, (double)t->int64_data[k], t->int64_data[k]); continue;
		case TIR_DTYPE_F16: { uint16_t h = (uint16_t)t->int32_data[k]; d = half_to_float(h); break; }
		case TIR_DTYPE_BF16: { uint32_t w = (uint32_t)(uint16_t)t->int32_data[k] << 16; float f;
			memcpy(&f, &w, 4); d = f; break; }
		case TIR_DTYPE_BOOL: d = t->int32_data[k] != 0; break;
		default: d = t->int32_data[k]; break;
		}
		ox_const_set(c, k, d, isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0);
	}
	free(ext);
	*out = c;
	return 0;
}

/* ---- names ---- */

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

struct ox_val *ox_find(struct ox_imp *m, const char *onnx)
{
	if (!m->hcap)
		return NULL;
	for (size_t h = hash_str(onnx) & (m->hcap - 1);; h = (h + 1) & (m->hcap - 1)) {
		if (!m->hash[h])
			return NULL;
		if (!strcmp(m->vals[m->hash[h] - 1].onnx, onnx))
			return &m->vals[m->hash[h] - 1];
	}
}

struct ox_val *ox_val(struct ox_imp *m, const char *onnx)
{
	struct ox_val *v = ox_find(m, onnx);
	if (v)
		return v;
	if (m->nvals + 1 > m->hcap / 2) {
		size_t nc = m->hcap ? m->hcap * 2 : 256;
		size_t *nh = calloc(nc, sizeof *nh);
		if (!nh)
			return NULL;
		for (size_t k = 0; k < m->nvals; k++) {
			size_t h = hash_str(m->vals[k].onnx) & (nc - 1);
			while (nh[h])
				h = (h + 1) & (nc - 1);
			nh[h] = k + 1;
		}
		free(m->hash);
		m->hash = nh;
		m->hcap = nc;
	}
	if (tir_grow((void **)&m->vals, &m->cap, m->nvals + 1, sizeof *m->vals))
		return NULL;
	v = &m->vals[m->nvals];
	memset(v, 0, sizeof *v);
	v->onnx = strdup(onnx);
	if (!v->onnx)
		return NULL;
	size_t h = hash_str(onnx) & (m->hcap - 1);
	while (m->hash[h])
		h = (h + 1) & (m->hcap - 1);
	m->hash[h] = ++m->nvals;
	return v;
}

static const char *names_get(const struct ox_names *t, const char *k, bool *found)
{
	*found = false;
	if (!t->cap)
		return NULL;
	for (size_t h = hash_str(k) & (t->cap - 1); t->key[h]; h = (h + 1) & (t->cap - 1))
		if (!strcmp(t->key[h], k)) {
			*found = true;
			return t->val[h];
		}
	return NULL;
}

static bool names_has(const struct ox_names *t, const char *k)
{
	bool f;
	names_get(t, k, &f);
	return f;
}

/* add k (-> v) if absent; returns 0 or -1 out of memory */
static int names_put(struct ox_names *t, const char *k, const char *v)
{
	if (names_has(t, k))
		return 0;
	if ((t->n + 1) * 2 > t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		char **nk = calloc(nc, sizeof *nk), **nv = calloc(nc, sizeof *nv);
		if (!nk || !nv)
			return free(nk), free(nv), -1;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->key[i])
				continue;
			size_t h = hash_str(t->key[i]) & (nc - 1);
			while (nk[h])
				h = (h + 1) & (nc - 1);
			nk[h] = t->key[i];
			nv[h] = t->val[i];
		}
		free(t->key);
		free(t->val);
		t->key = nk;
		t->val = nv;
		t->cap = nc;
	}
	size_t h = hash_str(k) & (t->cap - 1);
	while (t->key[h])
		h = (h + 1) & (t->cap - 1);
	t->key[h] = strdup(k);
	t->val[h] = v ? strdup(v) : NULL;
	if (!t->key[h] || (v && !t->val[h]))
		return -1;
	t->n++;
	return 0;
}

static void names_free(struct ox_names *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->key[i]);
		free(t->val[i]);
	}
	free(t->key);
	free(t->val);
	memset(t, 0, sizeof *t);
}

static bool reserved(const char *s)
{
	static const char *const words[] = {"input", "print", "true", "false", "inf", "nan", "bool", "i8", "u8",
					    "i16", "i32", "i64", "f16", "bf16", "f32", "f64", NULL};
	for (int k = 0; words[k]; k++)
		if (!strcmp(s, words[k]))
			return true;
	/* the canonical form's temporaries are _t1, _t2, ... */
	if (s[0] == '_' && s[1] == 't' && s[2]) {
		const char *p = s + 2;
		while (*p >= '0' && *p <= '9')
			p++;
		if (!*p)
			return true;
	}
	return false;
}

static bool name_taken(struct ox_imp *m, const char *s)
{
	return reserved(s) || names_has(&m->reserved, s) || tir_program_lookup(m->prog, s, strlen(s)) != NULL;
}

/* The name rule (docs/onnx.md): each byte not a letter, digit or _ becomes
 * _, a leading digit (or nothing) gets a v before it, at most 200 bytes;
 * a name taken (or reserved) gets _2, _3, ... */
static char *fresh(struct ox_imp *m, const char *base);

char *ox_fresh(struct ox_imp *m, const char *base)
{
	const struct tir_onnx_opts *o = m->opts;
	if (!o || !o->nrenames || !base)
		return fresh(m, base);
	char *cur = strdup(base);
	for (int k = 0; cur && k < o->nrenames; k++) {
		struct tir_err e = {0};
		char *next = tir_regex_subst(o->renames[k], cur, o->replacements[k], &e);
		free(cur);
		cur = next;
		if (!cur && !m->err->code)
			*m->err = e;
	}
	if (!cur)
		return NULL;
	char *r = fresh(m, cur);
	free(cur);
	return r;
}

static char *fresh(struct ox_imp *m, const char *base)
{
	char buf[256];
	size_t n = 0;
	if (!base || !*base || (*base >= '0' && *base <= '9'))
		buf[n++] = 'v';
	for (const char *p = base ? base : ""; *p && n < 200; p++) {
		unsigned char ch = (unsigned char)*p;
		buf[n++] = (char)((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
						  ch == '_' ? ch : '_');
	}
	buf[n] = 0;
	if (!name_taken(m, buf))
		return strdup(buf);
	char out[280];
	for (int k = 2;; k++) {
		snprintf(out, sizeof out, "%s_%d", buf, k);
		if (!name_taken(m, out))
			return strdup(out);
	}
}

/* ---- the text ---- */

static int parse_stmt(struct ox_imp *m, const char *line)
{
	int rc = tir_program_parse(m->prog, m->path, line, strlen(line), 0);
	if (rc) {
		const struct tir_err *e = tir_program_ndiags(m->prog) ? tir_program_diag(m->prog, 0) : NULL;
		return ox_fail(m, -rc, "the statement made, `%s`, is refused: %s", line, e ? e->msg : "?");
	}
	tir_str_add(&m->text, line, strlen(line));
	tir_str_add(&m->text, "\n", 1);
	return m->text.oom ? ox_fail(m, TIR_ENOMEM, "out of memory") : 0;
}

const char *ox_emit(struct ox_imp *m, const char *base, const char *fmt, ...)
{
	if (m->err->code)
		return NULL;
	char *name = ox_fresh(m, base);
	struct tir_str line = {0};
	va_list ap;
	va_start(ap, fmt);
	va_list ap2;
	va_copy(ap2, ap);
	int need = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *expr = need >= 0 ? malloc((size_t)need + 1) : NULL;
	if (expr)
		vsnprintf(expr, (size_t)need + 1, fmt, ap2);
	va_end(ap2);
	if (!name || !expr) {
		free(name);
		free(expr);
		ox_fail(m, TIR_ENOMEM, "out of memory");
		return NULL;
	}
	tir_str_addf(&line, "%s = %s", name, expr);
	free(expr);
	int rc = line.oom ? ox_fail(m, TIR_ENOMEM, "out of memory") : parse_stmt(m, line.s);
	tir_str_free(&line);
	if (rc) {
		free(name);
		return NULL;
	}
	const struct tir_binding *b = tir_program_lookup(m->prog, name, strlen(name));
	if (names_put(&m->emitted, name, NULL))
		ox_fail(m, TIR_ENOMEM, "out of memory");
	free(name);
	return b && !m->err->code ? b->name : NULL;
}

/* The node's output takes its clean name in the end when its value is a
 * step the node itself wrote (not an operand passed through). */
static int alias(struct ox_imp *m, struct ox_val *v, const char *tir)
{
	if (!v->clean || !strcmp(tir, v->clean) || !names_has(&m->emitted, tir) || names_has(&m->alias, tir))
		return 0;
	return names_put(&m->alias, tir, v->clean) ? ox_fail(m, TIR_ENOMEM, "out of memory") : 0;
}

int ox_bind(struct ox_imp *m, const char *onnx, const char *tir)
{
	struct ox_val *v = ox_val(m, onnx);
	if (!v)
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	free(v->tir);
	v->tir = strdup(tir);
	v->defined = true;
	return v->tir ? alias(m, v, tir) : ox_fail(m, TIR_ENOMEM, "out of memory");
}

const struct tir_ntype *ox_type(struct ox_imp *m, const char *tir)
{
	const struct tir_binding *b = tir_program_lookup(m->prog, tir, strlen(tir));
	return b && b->node ? &b->node->type : NULL;
}

static void fmt_num(struct tir_str *s, double v, enum tir_dtype dt)
{
	if (isnan(v))
		tir_str_addf(s, "nan");
	else if (isinf(v))
		tir_str_addf(s, v < 0 ? "-inf" : "inf");
	else if (dt == TIR_DTYPE_BOOL)
		tir_str_addf(s, v != 0 ? "true" : "false");
	else if (!tir_dtype_is_float(dt))
		tir_str_addf(s, "%.0f", v);
	else {
		char b[40];
		snprintf(b, sizeof b, "%.9g", v);
		if (!strpbrk(b, ".en"))
			strcat(b, ".0");
		tir_str_addf(s, "%s", b);
	}
}

static int add_weight(struct ox_imp *m, const char *name, struct ox_const *c)
{
	if (tir_grow((void **)&m->wnames, &m->wcap, m->nw + 1, sizeof *m->wnames))
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	struct ox_const **nc = realloc(m->wconsts, m->wcap * sizeof *nc);
	if (!nc)
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	m->wconsts = nc;
	m->wnames[m->nw] = strdup(name);
	m->wconsts[m->nw++] = c;
	return 0;
}

/* A constant into the program: a literal when small (f32, i64, bool, i32
 * via cast), full() when all its elements are equal, else a tensor of the
 * weights file read with load(). */
static const char *emit_const(struct ox_imp *m, struct ox_val *v)
{
	struct ox_const *c = v->c;
	bool same = c->n > 0 && c->d;
	for (int64_t k = 1; same && k < c->n; k++)
		same = c->d[k] == c->d[0] || (isnan(c->d[k]) && isnan(c->d[0]));
	struct tir_str s = {0};
	const char *r = NULL;
	if (c->n > 1 && same && c->dtype != TIR_DTYPE_F64 && (c->dtype != TIR_DTYPE_I64 || fabs(c->d[0]) < 9e15)) {
		tir_str_addf(&s, "full([");
		for (int k = 0; k < c->rank; k++)
			tir_str_addf(&s, "%s%" PRId64, k ? ", " : "", c->shape[k]);
		tir_str_addf(&s, "], ");
		fmt_num(&s, c->d[0], tir_dtype_is_float(c->dtype) ? TIR_DTYPE_F64 : TIR_DTYPE_I64);
		tir_str_addf(&s, ", dtype=%s)", tir_dtype_name(c->dtype));
		r = s.oom ? NULL : ox_emit(m, v->onnx, "%s", s.s);
	} else if (c->n >= 1 && c->n <= OX_INLINE_MAX &&
		   (c->dtype == TIR_DTYPE_F32 || c->dtype == TIR_DTYPE_BOOL ||
		    c->dtype == TIR_DTYPE_I64 || c->dtype == TIR_DTYPE_I32)) {
		bool is_f = c->dtype == TIR_DTYPE_F32;
		tir_str_addf(&s, "[");
		for (int64_t k = 0; k < c->n; k++) {
			if (k)
				tir_str_addf(&s, ", ");
			if (is_f || c->dtype == TIR_DTYPE_BOOL)
				fmt_num(&s, c->d[k], c->dtype);
			else
				tir_str_addf(&s, "%" PRId64, c->i[k]);
		}
		tir_str_addf(&s, "]");
		/* all-integral f32 literals: fmt_num wrote 1.0, so f32 */
		const char *lit = s.oom ? NULL : ox_emit(m, v->onnx, "%s", s.s);
		r = lit;
		if (lit && c->dtype == TIR_DTYPE_I32)
			r = ox_emit(m, v->onnx, "cast(%s, dtype=i32)", lit);
		if (r && c->rank != 1) {
			struct tir_str sh = {0};
			for (int k = 0; k < c->rank; k++)
				tir_str_addf(&sh, "%s%" PRId64, k ? ", " : "", c->shape[k]);
			r = ox_emit(m, v->onnx, "reshape(%s, shape=[%s])", r, sh.s ? sh.s : "");
			tir_str_free(&sh);
		}
	} else {
		/* a tensor of the weights file, under the tir name it gets */
		char *wn = v->clean ? strdup(v->clean) : ox_fresh(m, v->onnx);
		if (!wn || add_weight(m, wn, c)) {
			free(wn);
			ox_fail(m, TIR_ENOMEM, "out of memory");
			return NULL;
		}
		char esc[PATH_MAX * 2];
		size_t e = 0;
		for (const char *p = m->loaded_path; *p && e + 2 < sizeof esc; p++) {
			if (*p == '"' || *p == '\\')
				esc[e++] = '\\';
			esc[e++] = *p;
		}
		esc[e] = 0;
		r = ox_emit(m, v->onnx, "load(\"%s\", \"%s\")", esc, wn);
		free(wn);
	}
	tir_str_free(&s);
	return r;
}

const char *ox_use(struct ox_imp *m, const char *onnx)
{
	struct ox_val *v = ox_find(m, onnx);
	if (!v || !v->defined) {
		ox_fail(m, TIR_EDATA, "tensor '%s' is used before any node makes it", onnx);
		return NULL;
	}
	if (!v->tir && v->c) {
		const char *t = emit_const(m, v);
		if (!t)
			return NULL;
		v->tir = strdup(t);
		if (alias(m, v, t))
			return NULL;
	}
	if (!v->tir)
		ox_fail(m, TIR_EDATA, "tensor '%s' has no value", onnx);
	return v->tir;
}

/* ---- the model ---- */

/* The len bytes of fd in a new buffer (one byte to spare); fd is closed either way.
 * NULL when they cannot be read, *nomem set when that is for want of memory. */
static unsigned char *read_whole(int fd, size_t len, bool *nomem)
{
	unsigned char *buf = malloc(len + 1);
	size_t got = 0;
	while (buf && got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*nomem = !buf;
	if (!buf || got < len) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int read_model(struct ox_imp *m, const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0)
		return tir_errf(m->err, TIR_EDATA, NULL, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return tir_errf(m->err, TIR_EDATA, NULL, "%s: not a regular file", path);
	}
	if (st.st_size > OX_MAX_MODEL) {
		close(fd);
		return tir_errf(m->err, TIR_EDATA, NULL, "%s: %jd bytes; a model may have at most %" PRId64, path,
				(intmax_t)st.st_size, OX_MAX_MODEL);
	}
	size_t len = (size_t)st.st_size;
	/* the file mapped (no copy of it in memory: its pages are the page
	 * cache's), else read */
	void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (map != MAP_FAILED) {
		close(fd);
		madvise(map, len, MADV_SEQUENTIAL);
		m->model = onnx__model_proto__unpack(NULL, len, map);
		munmap(map, len);
	} else {
		bool nomem;
		unsigned char *buf = read_whole(fd, len, &nomem);
		if (!buf)
			return tir_errf(m->err, nomem ? TIR_ENOMEM : TIR_EDATA, NULL, "%s: reading failed", path);
		m->model = onnx__model_proto__unpack(NULL, len, buf);
		free(buf);
	}
	if (!m->model)
		return tir_errf(m->err, TIR_EDATA, NULL, "%s: not an ONNX model (the protobuf does not parse as a ModelProto)",
				path);
	return 0;
}

static bool default_domain(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

static int check_opset(struct ox_imp *m)
{
	m->opset = -1;
	for (size_t k = 0; k < m->model->n_opset_import; k++) {
		const Onnx__OperatorSetIdProto *o = m->model->opset_import[k];
		if (default_domain(o->domain))
			m->opset = o->version;
	}
	if (!m->model->graph)
		return ox_fail(m, TIR_EDATA, "the model has no graph");
	if (m->opset < 0)
		return ox_fail(m, TIR_EDATA, "the model imports no opset of the default domain");
	if (m->opset < 1 || m->opset > 17)
		return ox_fail(m, TIR_EUNSUPPORTED, "opset %" PRId64 " of the default domain; tir imports opsets 1 to 17",
			       m->opset);
	return 0;
}

static int64_t dim_given(struct ox_imp *m, const char *name, bool *found)
{
	const struct tir_onnx_opts *o = m->opts;
	for (int k = 0; o && k < o->ndims; k++)
		if (!strcmp(o->dims[k].name, name)) {
			*found = true;
			return o->dims[k].value;
		}
	*found = false;
	return 0;
}

/* `input NAME: T` for a graph input that no initializer gives */
static int declare_input(struct ox_imp *m, const Onnx__ValueInfoProto *vi)
{
	const char *name = vi->name ? vi->name : "";
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return ox_fail(m, TIR_EUNSUPPORTED, "input '%s' is not a tensor (a sequence, map or optional)", name);
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	enum tir_dtype dt;
	if (!ox_dtype(tt->elem_type, &dt))
		return ox_fail(m, TIR_EUNSUPPORTED, "input '%s' has type %s, which tir has not", name,
			       ox_onnx_type_name(tt->elem_type));
	const struct tir_onnx_shape *given = NULL;
	for (int k = 0; m->opts && k < m->opts->ninputs; k++)
		if (!strcmp(m->opts->inputs[k].name, name))
			given = &m->opts->inputs[k];
	/* a uint16 file for a bfloat16 input holds its bit patterns (ONNX's
	 * test data): the CLI reads it so (tir_onnx_bf16_input) */
	bool bf16_bits = given && given->onnx_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 &&
			 tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
	if (given && given->onnx_type && given->onnx_type != tt->elem_type && !bf16_bits &&
	    (unsigned_size(given->onnx_type) || unsigned_size(tt->elem_type)))
		return ox_fail(m, TIR_EUNSUPPORTED, "input '%s' is %s and the file given holds %s (bfloat16's bits as "
			       "uint16, say): reading one type as another is not supported", name,
			       ox_onnx_type_name(tt->elem_type), ox_onnx_type_name(given->onnx_type));
	if (!tt->shape && !given)
		return ox_fail(m, TIR_EUNSUPPORTED, "input '%s' has no shape; give it (--input)", name);
	int rank = tt->shape ? (int)tt->shape->n_dim : given->rank;
	if (rank > TIR_MAX_RANK)
		return ox_fail(m, TIR_EUNSUPPORTED, "input '%s' has %d dimensions; tir has at most %d", name, rank,
			       TIR_MAX_RANK);
	if (given && tt->shape && given->rank != rank)
		return ox_fail(m, TIR_ETYPE, "input '%s' has %d dimensions, the file given %d", name, rank, given->rank);
	int64_t shape[TIR_MAX_RANK];
	for (int k = 0; k < rank; k++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape ? tt->shape->dim[k] : NULL;
		int64_t v = -1;
		if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			v = d->dim_value;
			if (given && given->shape[k] != v)
				return ox_fail(m, TIR_ETYPE, "input '%s': dimension %d is %" PRId64 ", the file given has %" PRId64,
					       name, k, v, given->shape[k]);
		} else {
			bool found = false;
			const char *param = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
						    ? d->dim_param : NULL;
			if (param && *param)
				v = dim_given(m, param, &found);
			if (!found && given)
				v = given->shape[k];
			else if (!found)
				return ox_fail(m, TIR_EUNSUPPORTED, "input '%s': dimension %d ('%s') is symbolic; fix it with "
					       "--dim %s=N or give the input", name, k, param && *param ? param : "?",
					       param && *param ? param : "NAME");
		}
		if (v < 0 || v > TIR_MAX_DIM)
			return ox_fail(m, TIR_EDATA, "input '%s': dimension %d is %" PRId64, name, k, v);
		shape[k] = v;
	}
	struct ox_val *val = ox_val(m, name);
	if (!val)
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	if (val->defined)
		return ox_fail(m, TIR_EDATA, "input '%s' is declared twice", name);
	/* a small integer input given, or a float scalar: its values are known
	 * (a shape, axes, a Range's bounds, a depth) */
	int64_t numel = 1;
	for (int k = 0; k < rank; k++)
		numel *= shape[k];
	bool fvec = tir_dtype_is_float(dt) && rank == 1 && numel > 1 && numel <= OX_INLINE_MAX;
	if (given && given->path && (tir_dtype_is_float(dt) ? numel == 1 || fvec : numel <= OX_FOLD_MAX)) {
		struct tir_tensor t = {0};
		if (tir_file_load(given->path, NULL, &t, m->err))
			return -m->err->code;
		struct ox_const *c = t.dtype == dt && t.rank == rank ? ox_const_new(dt, rank, shape) : NULL;
		const unsigned char *p = c ? tir_tensor_data(&t) : NULL;
		for (int64_t k = 0; c && k < c->n; k++)
			ox_const_set(c, k, raw_elem(p, dt, k), raw_int(p, dt, k));
		tir_tensor_release(&t);
		if (fvec)
			val->given = c; /* a float vector: known to the emitters that ask (Resize's scales, roi) */
		else
			val->c = c;
	}
	char *tn = ox_fresh(m, name);
	if (!tn)
		return m->err->code ? -m->err->code : ox_fail(m, TIR_ENOMEM, "out of memory");
	struct tir_str s = {0};
	tir_str_addf(&s, "input %s: %s[", tn, tir_dtype_name(dt));
	for (int k = 0; k < rank; k++)
		tir_str_addf(&s, "%s%" PRId64, k ? ", " : "", shape[k]);
	tir_str_addf(&s, "]");
	int rc = s.oom ? ox_fail(m, TIR_ENOMEM, "out of memory") : parse_stmt(m, s.s);
	tir_str_free(&s);
	val->defined = true;
	val->is_input = true;
	val->tir = tn;
	return rc;
}

/* The nodes in an order where each input is made before it is read
 * (Kahn's); a cycle, or an input nothing makes, is an error. */
static int order_nodes(struct ox_imp *m, size_t **order_out)
{
	const Onnx__GraphProto *g = m->model->graph;
	size_t nn = g->n_node;
	size_t *order = malloc((nn + 1) * sizeof *order);
	bool *done = calloc(nn + 1, 1);
	if (!order || !done) {
		free(order);
		free(done);
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	}
	/* who makes each name: ox_val's index -> node + 1 */
	for (size_t k = 0; k < nn; k++)
		for (size_t j = 0; j < g->node[k]->n_output; j++) {
			const char *o = g->node[k]->output[j];
			if (!o || !*o)
				continue;
			struct ox_val *v = ox_val(m, o);
			if (!v)
				return free(order), free(done), ox_fail(m, TIR_ENOMEM, "out of memory");
			if (v->defined)
				return free(order), free(done),
				       ox_fail(m, TIR_EDATA, "node '%s' (%s) makes '%s', which is made already",
					       g->node[k]->name ? g->node[k]->name : "?", g->node[k]->op_type, o);
		}
	size_t n = 0;
	bool progress = true;
	/* sweeps until none moves: a graph in order (the usual case) takes one */
	bool *made = calloc(m->cap + 1, 1);
	if (!made)
		return free(order), free(done), ox_fail(m, TIR_ENOMEM, "out of memory");
	for (size_t k = 0; k < m->nvals; k++)
		made[k] = m->vals[k].defined;
	while (n < nn && progress) {
		progress = false;
		for (size_t k = 0; k < nn; k++) {
			if (done[k])
				continue;
			const Onnx__NodeProto *nd = g->node[k];
			bool ready = true;
			for (size_t j = 0; j < nd->n_input && ready; j++) {
				const char *in = nd->input[j];
				if (!in || !*in)
					continue;
				struct ox_val *v = ox_find(m, in);
				ready = v && made[v - m->vals];
			}
			if (!ready)
				continue;
			for (size_t j = 0; j < nd->n_output; j++)
				if (nd->output[j] && *nd->output[j])
					made[ox_find(m, nd->output[j]) - m->vals] = true;
			done[k] = true;
			order[n++] = k;
			progress = true;
		}
	}
	int rc = 0;
	if (n < nn) {
		for (size_t k = 0; k < nn && !rc; k++) {
			if (done[k])
				continue;
			const Onnx__NodeProto *nd = g->node[k];
			const char *missing = "?";
			bool made_later = false;
			for (size_t j = 0; j < nd->n_input; j++) {
				struct ox_val *v = nd->input[j] && *nd->input[j] ? ox_find(m, nd->input[j]) : NULL;
				if (nd->input[j] && *nd->input[j] && !(v && made[v - m->vals])) {
					missing = nd->input[j];
					made_later = v != NULL;
					break;
				}
			}
			rc = made_later ? ox_fail(m, TIR_EDATA, "the graph has a cycle: node '%s' (%s) reads '%s', which "
						  "depends on the node's own result", nd->name ? nd->name : "?", nd->op_type, missing)
					: ox_fail(m, TIR_EDATA, "node '%s' (%s) reads '%s', which no input, initializer or node makes",
						  nd->name ? nd->name : "?", nd->op_type, missing);
		}
	}
	free(made);
	free(done);
	if (rc)
		return free(order), rc;
	*order_out = order;
	return 0;
}

/* Every node's op must have an emitter: else one error listing them all. */
static int check_ops(struct ox_imp *m)
{
	const Onnx__GraphProto *g = m->model->graph;
	struct tir_str s = {0};
	int bad = 0;
	char old[200];
	for (size_t k = 0; k < g->n_node; k++) {
		const Onnx__NodeProto *nd = g->node[k];
		const char *op = nd->op_type ? nd->op_type : "";
		const char *why = NULL;
		int64_t ver = m->opset;
		if (!default_domain(nd->domain)) {
			why = "unknown domain";
			for (size_t j = 0; j < m->model->n_opset_import; j++)
				if (m->model->opset_import[j]->domain && !strcmp(m->model->opset_import[j]->domain, nd->domain))
					ver = m->model->opset_import[j]->version;
		}
		else if ((why = ox_op_refused(op)) == NULL && !ox_op_lookup(op))
			why = "not supported";
		else if (!why)
			why = ox_op_old(op, m->opset, old, sizeof old);
		if (!why)
			continue;
		if (bad < 50)
			tir_str_addf(&s, "%snode '%s': %s (domain '%s', opset %" PRId64 "): %s", bad ? "; " : "",
				     nd->name && *nd->name ? nd->name : "(unnamed)", op,
				     default_domain(nd->domain) ? "ai.onnx" : nd->domain, ver, why);
		bad++;
	}
	int rc = 0;
	if (bad)
		rc = ox_fail(m, TIR_EUNSUPPORTED, "%d node%s tir cannot import: %s%s", bad, bad == 1 ? "" : "s",
			     s.s ? s.s : "", bad > 50 ? "; ..." : "");
	tir_str_free(&s);
	return rc;
}

static int add_comment(struct ox_imp *m, const char *first_name, const char *text)
{
	if (tir_grow((void **)&m->comments, &m->ccap, m->ncomments + 1, sizeof *m->comments))
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	char **nn = realloc(m->cnames, m->ccap * sizeof *nn);
	if (!nn)
		return ox_fail(m, TIR_ENOMEM, "out of memory");
	m->cnames = nn;
	m->comments[m->ncomments] = strdup(text);
	m->cnames[m->ncomments++] = strdup(first_name);
	return 0;
}

/* The loader of the checking program: the weights' types from memory. */
static int weight_type(void *ud, const char *path, const char *name, enum tir_dtype *dtype, int *rank,
		       int64_t *shape, struct tir_err *err)
{
	struct ox_imp *m = ud;
	for (size_t k = 0; name && k < m->nw; k++)
		if (!strcmp(m->wnames[k], name)) {
			const struct ox_const *c = m->wconsts[k];
			*dtype = c->dtype;
			*rank = c->rank;
			if (c->rank)
				memcpy(shape, c->shape, (size_t)c->rank * sizeof *shape);
			return 0;
		}
	return tir_errf(err, TIR_EDATA, NULL, "%s: no tensor '%s'", path, name ? name : "");
}

static int write_weights(struct ox_imp *m, const char *file, bool npy)
{
	const char **names = calloc(m->nw + 1, sizeof *names);
	struct tir_tensor *ts = calloc(m->nw + 1, sizeof *ts);
	const struct tir_tensor **tp = calloc(m->nw + 1, sizeof *tp);
	int rc = 0;
	if (!names || !ts || !tp)
		rc = ox_fail(m, TIR_ENOMEM, "out of memory");
	/* a weight's bytes are written from where they are (no copy): a
	 * tensor over them whose buffer this function holds and never frees */
	struct tir_buf *bufs = calloc(m->nw + 1, sizeof *bufs);
	if (!bufs && !rc)
		rc = ox_fail(m, TIR_ENOMEM, "out of memory");
	for (size_t k = 0; k < m->nw && !rc; k++) {
		const struct ox_const *c = m->wconsts[k];
		size_t sz = tir_dtype_size(c->dtype);
		names[k] = m->wnames[k];
		tp[k] = &ts[k];
		if (c->bytes) {
			bufs[k] = (struct tir_buf){.refs = 1, .bytes = (size_t)c->n * sz, .data = c->bytes};
			ts[k].dtype = c->dtype;
			ts[k].rank = c->rank;
			memcpy(ts[k].shape, c->shape, sizeof ts[k].shape);
			tir_tensor_set_contiguous_strides(&ts[k]);
			ts[k].buf = &bufs[k];
			continue;
		}
		if ((rc = tir_tensor_alloc(&ts[k], c->dtype, c->rank, c->shape, false, m->err)))
			break;
		unsigned char *dst = tir_tensor_data(&ts[k]);
		for (int64_t e = 0; e < c->n; e++)
			store_elem(dst + (size_t)e * sz, c->dtype, c->d[e], c->i[e]);
	}
	if (!rc)
		rc = npy ? tir_npy_save(file, tp[0], m->err) : tir_safetensors_save(file, names, tp, (int)m->nw, m->err);
	for (size_t k = 0; k < m->nw; k++)
		if (!bufs || ts[k].buf != &bufs[k])
			tir_tensor_release(&ts[k]);
	free(bufs);
	free(names);
	free(ts);
	free(tp);
	return rc;
}

/* text with each name of the alias map replaced (not inside comments or
 * strings, nor an op's or keyword's name) */
static char *apply_alias(const struct ox_names *al, char *text)
{
	if (!al->n)
		return text;
	struct tir_str out = {0};
	const char *p = text;
	bool line_start = true;
	while (*p) {
		if (line_start && *p == '#') {
			size_t n = strcspn(p, "\n");
			tir_str_add(&out, p, n);
			p += n;
			continue;
		}
		line_start = false;
		if (*p == '"') {
			const char *q = p + 1;
			while (*q && *q != '"' && *q != '\n')
				q += q[0] == '\\' && q[1] ? 2 : 1;
			if (*q == '"')
				q++;
			tir_str_add(&out, p, (size_t)(q - p));
			p = q;
			continue;
		}
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') {
			const char *q = p;
			while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_')
				q++;
			char name[300];
			size_t n = (size_t)(q - p);
			bool f = false;
			const char *to = NULL;
			if (n < sizeof name && *q != '(' && *q != '=') {
				memcpy(name, p, n);
				name[n] = 0;
				to = names_get(al, name, &f);
			}
			if (f && to)
				tir_str_add(&out, to, strlen(to));
			else
				tir_str_add(&out, p, n);
			p = q;
			continue;
		}
		if (*p == '\n')
			line_start = true;
		tir_str_add(&out, p, 1);
		p++;
	}
	free(text);
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s;
}

/* The canonical text with a comment before each node's first line. */
static char *final_text(struct ox_imp *m)
{
	char *canon = tir_program_format(m->prog);
	if (!canon)
		return NULL;
	struct tir_str out = {0};
	const char *pn = m->model->producer_name && *m->model->producer_name ? m->model->producer_name : "unknown";
	const char *pv = m->model->producer_version ? m->model->producer_version : "";
	tir_str_addf(&out, "# imported from %s (ONNX opset %" PRId64 ", producer %s%s%s) by tir import", m->path,
		     m->opset, pn, *pv ? " " : "", pv);
	for (size_t k = 0; !out.oom && k < out.n; k++) /* a name's line breaks would end the comment */
		if (out.s[k] == '\n' || out.s[k] == '\r')
			out.s[k] = ' ';
	tir_str_addf(&out, "\n");
	size_t ci = 0;
	for (char *line = canon; *line;) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *nm = line;
		if (!strncmp(nm, "input ", 6))
			nm += 6;
		size_t nl = strcspn(nm, ":");
		while (ci < m->ncomments && strlen(m->cnames[ci]) == nl && !strncmp(m->cnames[ci], nm, nl)) {
			tir_str_addf(&out, "# %s\n", m->comments[ci]);
			ci++;
		}
		tir_str_add(&out, line, len);
		tir_str_add(&out, "\n", 1);
		line += len + (end ? 1 : 0);
	}
	free(canon);
	if (out.oom) {
		tir_str_free(&out);
		return NULL;
	}
	return out.s;
}

static int import_nodes(struct ox_imp *m, const size_t *order)
{
	const Onnx__GraphProto *g = m->model->graph;
	for (size_t k = 0; k < g->n_node; k++) {
		const Onnx__NodeProto *nd = g->node[order[k]];
		const struct ox_opdef *def = ox_op_lookup(nd->op_type);
		struct ox_node_ctx c = {.m = m, .n = nd, .opset = m->opset};
		names_free(&m->emitted);
		for (size_t j = 0; j < nd->n_output; j++) {
			if (!nd->output[j] || !*nd->output[j])
				continue;
			struct ox_val *v = ox_val(m, nd->output[j]);
			if (v) /* a name made twice (by a malformed graph): its first tir name goes */
				free(v->clean);
			if (!v || !(v->clean = ox_fresh(m, nd->output[j])) || names_put(&m->reserved, v->clean, NULL))
				return ox_fail(m, TIR_ENOMEM, "out of memory");
		}
		size_t before = m->text.n;
		int serial = m->serial;
		struct ox_upgrade up = {0};
		int rc = ox_node_upgrade(&c, &up);
		if (!rc)
			rc = def->fn(&c);
		ox_upgrade_free(&up);
		if (rc || m->err->code) {
			if (!m->err->code)
				ox_fail(m, TIR_EUNSUPPORTED, "?");
			/* name the node in front of what went wrong */
			char msg[sizeof m->err->msg + 1024];
			const char *p = m->err->msg;
			size_t pl = strlen(m->path);
			if (!strncmp(p, m->path, pl) && p[pl] == ':')
				p += pl + 2;
			snprintf(msg, sizeof msg, "%s: node '%s' (%s, opset %" PRId64 "): %s", m->path,
				 nd->name && *nd->name ? nd->name : "(unnamed)", nd->op_type, m->opset, p);
			memcpy(m->err->msg, msg, sizeof m->err->msg - 1);
			m->err->msg[sizeof m->err->msg - 1] = 0;
			return -m->err->code;
		}
		(void)serial;
		/* the comment goes before the node's first statement */
		if (m->text.n > before) {
			const char *first = m->text.s + before;
			size_t nl = strcspn(first, " =:");
			char fname[300];
			snprintf(fname, sizeof fname, "%.*s", (int)(nl < 299 ? nl : 299), first);
			char cm[600];
			snprintf(cm, sizeof cm, "node %s: %s", nd->name && *nd->name ? nd->name : "(unnamed)",
				 nd->op_type);
			for (char *q = cm; *q; q++)
				if (*q == '\n' || *q == '\r')
					*q = ' ';
			if (add_comment(m, fname, cm))
				return -m->err->code;
		}
		/* every output bound */
		for (size_t j = 0; j < nd->n_output; j++) {
			if (!nd->output[j] || !*nd->output[j])
				continue;
			struct ox_val *v = ox_find(m, nd->output[j]);
			if (!v->defined)
				return ox_fail(m, TIR_EUNSUPPORTED, "node '%s' (%s): output %zu ('%s') is not supported",
					       nd->name ? nd->name : "?", nd->op_type, j, nd->output[j]);
		}
	}
	return 0;
}

int tir_onnx_import(const char *path, const struct tir_onnx_opts *o, struct tir_onnx_model *out,
		    struct tir_err *err)
{
	memset(out, 0, sizeof *out);
	if (ox_protobuf(err))
		return -TIR_EUNSUPPORTED;
	struct ox_imp m = {.opts = o, .path = path, .err = err};
	size_t *order = NULL;
	int rc = 0;
	m.prog = tir_program_new();
	char *d = strdup(path);
	if (!m.prog || !d) {
		free(d);
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	char *slash = strrchr(d, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(d, ".");
	m.dir = d;
	const char *wfile = o && o->weights_file ? o->weights_file : "model.safetensors";
	m.loaded_path = strdup(o && o->weights_ref ? o->weights_ref : wfile);
	tir_program_set_loader(m.prog, weight_type, &m);
	if ((rc = read_model(&m, path)) || (rc = check_opset(&m)) || (rc = check_ops(&m)))
		goto out;
	const Onnx__GraphProto *g = m.model->graph;
	/* initializers: known values */
	for (size_t k = 0; k < g->n_initializer; k++) {
		const Onnx__TensorProto *t = g->initializer[k];
		struct ox_const *c = NULL;
		if ((rc = ox_tensor_decode(&m, t, &c, err)))
			goto out;
		struct ox_val *v = ox_val(&m, t->name ? t->name : "");
		if (!v) {
			ox_const_free(c);
			rc = ox_fail(&m, TIR_ENOMEM, "out of memory");
			goto out;
		}
		ox_const_free(v->c);
		v->c = c;
		v->defined = true;
	}
	for (size_t k = 0; k < g->n_input; k++) {
		const Onnx__ValueInfoProto *vi = g->input[k];
		struct ox_val *v = ox_find(&m, vi->name ? vi->name : "");
		if (v && v->defined)
			continue; /* an initializer (older models list them as inputs too) */
		if ((rc = declare_input(&m, vi)))
			goto out;
	}
	if ((rc = order_nodes(&m, &order)) || (rc = import_nodes(&m, order)))
		goto out;
	/* the outputs: each printed */
	struct tir_str pr = {0};
	for (size_t k = 0; k < g->n_output && !(o && o->no_prints); k++) {
		const char *on = g->output[k]->name ? g->output[k]->name : "";
		const char *t = ox_use(&m, on);
		if (!t) {
			rc = -err->code;
			tir_str_free(&pr);
			goto out;
		}
		tir_str_addf(&pr, "print %s", t);
		if ((rc = parse_stmt(&m, pr.s)))
			break;
		pr.n = 0;
	}
	tir_str_free(&pr);
	if (rc)
		goto out;
	if (m.nw && (rc = write_weights(&m, wfile, false)))
		goto out;
	out->text = final_text(&m);
	if (out->text)
		out->text = apply_alias(&m.alias, out->text);
	if (!out->text) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	/* the names: every ONNX value bound */
	out->onnx_names = calloc(m.nvals + 1, sizeof *out->onnx_names);
	out->tir_names = calloc(m.nvals + 1, sizeof *out->tir_names);
	out->inputs = calloc(g->n_input + 1, sizeof *out->inputs);
	out->input_types = calloc(g->n_input + 1, sizeof *out->input_types);
	out->outputs = calloc(g->n_output + 1, sizeof *out->outputs);
	if (!out->onnx_names || !out->tir_names || !out->inputs || !out->input_types || !out->outputs) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < m.nvals; k++) {
		if (!m.vals[k].tir || m.vals[k].onnx[0] == '\x01') /* the importer's own values */
			continue;
		bool f;
		const char *to = names_get(&m.alias, m.vals[k].tir, &f);
		out->onnx_names[out->nnames] = strdup(m.vals[k].onnx);
		out->tir_names[out->nnames++] = strdup(f && to ? to : m.vals[k].tir);
		if (!m.vals[k].is_input)
			continue;
		for (size_t j = 0; j < g->n_input; j++) {
			const Onnx__TypeProto *tp = g->input[j]->type;
			if (g->input[j]->name && !strcmp(g->input[j]->name, m.vals[k].onnx) && tp &&
			    tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type)
				out->input_types[out->ninputs] = tp->tensor_type->elem_type;
		}
		out->inputs[out->ninputs++] = strdup(m.vals[k].onnx);
	}
	out->output_types = calloc(g->n_output + 1, sizeof *out->output_types);
	if (!out->output_types) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < g->n_output; k++) {
		const Onnx__TypeProto *tp = g->output[k]->type;
		if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type)
			out->output_types[k] = tp->tensor_type->elem_type;
		out->outputs[out->noutputs++] = strdup(g->output[k]->name ? g->output[k]->name : "");
	}
out:
	if (rc)
		tir_onnx_model_free(out);
	free(order);
	for (size_t k = 0; k < m.nvals; k++) {
		free(m.vals[k].onnx);
		free(m.vals[k].tir);
		free(m.vals[k].clean);
		ox_const_free(m.vals[k].c);
		ox_const_free(m.vals[k].given);
	}
	free(m.vals);
	free(m.hash);
	for (size_t k = 0; k < m.ncomments; k++) {
		free(m.comments[k]);
		free(m.cnames[k]);
	}
	free(m.comments);
	free(m.cnames);
	names_free(&m.reserved);
	names_free(&m.emitted);
	names_free(&m.alias);
	for (size_t k = 0; k < m.nw; k++)
		free(m.wnames[k]); /* the constants are the values' */
	free(m.wnames);
	free(m.wconsts);
	tir_str_free(&m.text);
	if (m.model)
		onnx__model_proto__free_unpacked(m.model, NULL);
	tir_program_free(m.prog);
	free(m.dir);
	free(m.loaded_path);
	return rc;
}

void tir_onnx_model_free(struct tir_onnx_model *m)
{
	for (size_t k = 0; k < m->nnames; k++) {
		free(m->onnx_names[k]);
		free(m->tir_names[k]);
	}
	for (size_t k = 0; k < m->ninputs; k++)
		free(m->inputs[k]);
	for (size_t k = 0; k < m->noutputs; k++)
		free(m->outputs[k]);
	free(m->output_types);
	free(m->input_types);
	free(m->onnx_names);
	free(m->tir_names);
	free(m->inputs);
	free(m->outputs);
	free(m->text);
	memset(m, 0, sizeof *m);
}

const char *tir_onnx_name(const struct tir_onnx_model *m, const char *onnx)
{
	for (size_t k = 0; k < m->nnames; k++)
		if (!strcmp(m->onnx_names[k], onnx))
			return m->tir_names[k];
	return NULL;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && !strcmp(s + n - k, suf);
}

bool tir_path_is_onnx(const char *path)
{
	return ends_with(path, ".onnx");
}

bool tir_path_is_pb(const char *path)
{
	return ends_with(path, ".pb");
}

int tir_onnx_save_unsigned(const struct tir_onnx_model *m, const char *onnx, const struct tir_tensor *t,
			   const char *path, struct tir_err *err)
{
	int32_t ty = 0;
	for (size_t k = 0; m && m->output_types && k < m->noutputs; k++)
		if (!strcmp(m->outputs[k], onnx))
			ty = m->output_types[k];
	size_t usz = unsigned_size(ty), pl = strlen(path);
	if (!usz || pl < 4 || strcmp(path + pl - 4, ".npy"))
		return 1;
	struct tir_tensor w = {0};
	if (tir_tensor_convert(t, TIR_DTYPE_I64, &w, err))
		return -err->code;
	int64_t n = tir_tensor_numel(&w);
	const int64_t *src = tir_tensor_data(&w);
	unsigned char *buf = malloc((size_t)n * usz + 1);
	if (!buf) {
		tir_tensor_release(&w);
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	for (int64_t k = 0; k < n; k++) {
		uint64_t v = (uint64_t)src[k];
		uint16_t a = (uint16_t)v;
		uint32_t b = (uint32_t)v;
		memcpy(buf + (size_t)k * usz, usz == 2 ? (void *)&a : usz == 4 ? (void *)&b : (void *)&v, usz);
	}
	/* NumPy's format 1.0: magic, header length, a dict padded to 64 bytes */
	char hdr[512];
	int hl = snprintf(hdr, sizeof hdr, "{'descr': '<u%zu', 'fortran_order': False, 'shape': (", usz);
	for (int k = 0; k < w.rank; k++)
		hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "%" PRId64 "%s", w.shape[k],
			       w.rank == 1 || k + 1 < w.rank ? ", " : "");
	hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "), }");
	while ((10 + hl + 1) % 64)
		hdr[hl++] = ' ';
	hdr[hl++] = '\n';
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 255), (unsigned char)(hl >> 8)};
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl &&
		  fwrite(buf, usz, (size_t)n, f) == (size_t)n;
	if (f && fclose(f))
		ok = false;
	free(buf);
	tir_tensor_release(&w);
	return ok ? 0 : tir_errf(err, TIR_EDATA, NULL, "%s: %s", path, strerror(errno));
}

int tir_onnx_bf16_input(const struct tir_onnx_model *m, const char *onnx, int32_t given_type, const char *npy,
			const char *path, struct tir_err *err)
{
	int32_t ty = 0;
	for (size_t k = 0; m && m->input_types && k < m->ninputs; k++)
		if (!strcmp(m->inputs[k], onnx))
			ty = m->input_types[k];
	if (ty != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 || given_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT16)
		return 1;
	struct tir_tensor t = {0}, w = {0}, b = {0};
	int rc = tir_file_load(npy, NULL, &t, err);
	if (!rc)
		rc = tir_tensor_convert(&t, TIR_DTYPE_I64, &w, err);
	if (!rc)
		rc = tir_tensor_alloc(&b, TIR_DTYPE_BF16, w.rank, w.shape, false, err);
	if (!rc) {
		const int64_t *src = tir_tensor_data(&w);
		uint16_t *dst = tir_tensor_data(&b);
		for (int64_t k = 0, n = tir_tensor_numel(&w); k < n; k++)
			dst[k] = (uint16_t)src[k];
		const struct tir_tensor *tb = &b;
		const char *name = "x";
		rc = tir_safetensors_save(path, &name, &tb, 1, err);
	}
	tir_tensor_release(&t);
	tir_tensor_release(&w);
	tir_tensor_release(&b);
	return rc;
}

int tir_onnx_pb_to_npy(const char *pb, const char *npy, int *rank, int64_t *shape, int32_t *onnx_type,
		       struct tir_err *err)
{
	if (ox_protobuf(err))
		return -TIR_EUNSUPPORTED;
	struct ox_imp m = {.path = pb, .err = err};
	int fd = open(pb, O_RDONLY);
	struct stat st;
	if (fd < 0)
		return tir_errf(err, TIR_EDATA, NULL, "%s: %s", pb, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > OX_MAX_MODEL) {
		close(fd);
		return tir_errf(err, TIR_EDATA, NULL, "%s: not a regular file of at most 4 GiB", pb);
	}
	size_t len = (size_t)st.st_size;
	bool nomem;
	unsigned char *buf = read_whole(fd, len, &nomem);
	if (!buf)
		return tir_errf(err, TIR_EDATA, NULL, "%s: reading failed", pb);
	Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!t)
		return tir_errf(err, TIR_EDATA, NULL, "%s: not an ONNX TensorProto", pb);
	struct ox_const *c = NULL;
	int rc = ox_tensor_decode(NULL, t, &c, err);
	if (onnx_type)
		*onnx_type = t->data_type;
	onnx__tensor_proto__free_unpacked(t, NULL);
	if (rc)
		return rc;
	if (rank) {
		*rank = c->rank;
		memcpy(shape, c->shape, (size_t)c->rank * sizeof *shape);
	}
	m.nw = 0;
	char *nm = strdup("x");
	m.wnames = &nm;
	m.wconsts = &c;
	m.nw = 1;
	m.wcap = 1;
	rc = write_weights(&m, npy, true);
	free(nm);
	ox_const_free(c);
	return rc;
}
