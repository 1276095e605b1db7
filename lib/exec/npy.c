/*
 * npy.c — tensor files: reading .npy (versions 1.0, 2.0, 3.0) and
 * .safetensors headers and data, and writing .npy.  Every header field is
 * untrusted and checked against the file's size and tir's limits before
 * anything is allocated.  Not here: dtype conversion (the caller casts) and
 * any other file format.
 */
#include "exec.h"
#include "json.h"
#include "iter.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "npy.c reads and writes little-endian data in place"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (1u << 20)              /* bytes of .npy header dict */
#define ST_MAX_HEADER (UINT64_C(100) << 20)    /* bytes of .safetensors JSON */
#define NPY_ALIGN 64

/* Fill err with "PATH: message" and return -code. */
static int ferr(struct tir_err *err, int code, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int ferr(struct tir_err *err, int code, const char *path, const char *fmt, ...)
{
	char msg[sizeof err->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tir_errf(err, code, NULL, "%s: %s", path, msg);
}

/* Read exactly n bytes at off; a short file is -1 with errno 0. */
static int read_at(int fd, void *buf, uint64_t n, uint64_t off)
{
	char *p = buf;
	while (n > 0) {
		size_t want = n > (1u << 30) ? (1u << 30) : (size_t)n;
		ssize_t got = pread(fd, p, want, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = 0;
			return -1;
		}
		p += got;
		n -= (uint64_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

static int read_err(struct tir_err *err, const char *path, const char *what)
{
	if (errno)
		return ferr(err, TIR_EDATA, path, "cannot read %s: %s", what, strerror(errno));
	return ferr(err, TIR_EDATA, path, "truncated: the file ended while reading %s", what);
}

/* Shape rules shared by both formats: dims in [0, TIR_MAX_DIM] and at most
 * TIR_MAX_ELEMS elements, counting a 0 axis as 1 so that an empty tensor
 * cannot hide absurd other axes. */
static int check_shape(struct tir_err *err, const char *path, const char *what, int rank,
		       const int64_t *shape, int64_t *numel)
{
	int64_t n = 1, bound = 1;
	for (int i = 0; i < rank; i++) {
		int64_t d = shape[i];
		if (d < 0)
			return ferr(err, TIR_EDATA, path, "%snegative dimension %lld in the shape",
				    what, (long long)d);
		if (d > TIR_MAX_DIM)
			return ferr(err, TIR_EDATA, path,
				    "%sdimension %lld exceeds the limit of %lld",
				    what, (long long)d, (long long)TIR_MAX_DIM);
		int64_t b = d ? d : 1;
		if (bound > TIR_MAX_ELEMS / b)
			return ferr(err, TIR_EDATA, path,
				    "%sthe shape has too many elements (limit %lld)",
				    what, (long long)TIR_MAX_ELEMS);
		bound *= b;
		n *= d;
	}
	*numel = n;
	return 0;
}

/* ---- .npy header: a Python dict literal ----
 *   dict  := '{' [item (',' item)* [',']] '}'
 *   item  := str ':' (str | 'True' | 'False' | tuple)
 *   tuple := '(' ')' | '(' int ',' ')' | '(' int (',' int)+ [','] ')'
 * with spaces, tabs and newlines between tokens.  Exactly the keys descr,
 * fortran_order and shape, each once, in any order. */

struct hdr {
	const char *s, *p, *end;
	const char *path;
	struct tir_err *err;
};

static int hdr_fail(struct hdr *h, const char *what)
{
	return ferr(h->err, TIR_EDATA, h->path, "bad .npy header: %s at byte %td",
		    what, h->p - h->s);
}

static void hdr_ws(struct hdr *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' ||
				 *h->p == '\r'))
		h->p++;
}

/* Next non-blank byte is c: consume it. */
static bool hdr_eat(struct hdr *h, char c)
{
	hdr_ws(h);
	if (h->p < h->end && *h->p == c) {
		h->p++;
		return true;
	}
	return false;
}

/* A quoted string without escapes into out[cap]. */
static int hdr_str(struct hdr *h, char *out, size_t cap, const char *what)
{
	hdr_ws(h);
	if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
		return hdr_fail(h, what);
	char q = *h->p++;
	size_t n = 0;
	while (h->p < h->end && *h->p != q) {
		if (*h->p == '\\' || *h->p == '\n')
			return hdr_fail(h, "unsupported character in a string");
		if (n + 1 >= cap)
			return hdr_fail(h, "string too long");
		out[n++] = *h->p++;
	}
	if (h->p >= h->end)
		return hdr_fail(h, "unterminated string");
	h->p++;
	out[n] = 0;
	return 0;
}

static int hdr_bool(struct hdr *h, bool *v)
{
	hdr_ws(h);
	size_t left = (size_t)(h->end - h->p);
	if (left >= 4 && memcmp(h->p, "True", 4) == 0) {
		h->p += 4;
		*v = true;
	} else if (left >= 5 && memcmp(h->p, "False", 5) == 0) {
		h->p += 5;
		*v = false;
	} else {
		return hdr_fail(h, "expected True or False for 'fortran_order'");
	}
	if (h->p < h->end && (*h->p == '_' || ((*h->p | 32) >= 'a' && (*h->p | 32) <= 'z')))
		return hdr_fail(h, "expected True or False for 'fortran_order'");
	return 0;
}

static int hdr_int(struct hdr *h, int64_t *v)
{
	hdr_ws(h);
	bool neg = false;
	if (h->p < h->end && *h->p == '-') {
		neg = true;
		h->p++;
	}
	if (h->p >= h->end || *h->p < '0' || *h->p > '9')
		return hdr_fail(h, "expected an integer in 'shape'");
	if (*h->p == '0' && h->p + 1 < h->end && h->p[1] >= '0' && h->p[1] <= '9')
		return hdr_fail(h, "leading zero in a dimension");
	int64_t x = 0;
	while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
		int dig = *h->p - '0';
		if (x > (INT64_MAX - dig) / 10)
			return hdr_fail(h, "dimension out of range");
		x = x * 10 + dig;
		h->p++;
	}
	*v = neg ? -x : x;
	return 0;
}

static int hdr_shape(struct hdr *h, int *rank, int64_t *shape)
{
	int r = 0;
	if (!hdr_eat(h, '('))
		return hdr_fail(h, "expected a tuple for 'shape'");
	if (hdr_eat(h, ')')) {
		*rank = 0;
		return 0;
	}
	for (;;) {
		int64_t d = 0;
		int rc = hdr_int(h, &d);
		if (rc)
			return rc;
		if (r == TIR_MAX_RANK)
			return ferr(h->err, TIR_EDATA, h->path,
				    "the shape has more than %d axes (tir's limit)", TIR_MAX_RANK);
		shape[r++] = d;
		bool comma = hdr_eat(h, ',');
		if (hdr_eat(h, ')')) {
			if (r == 1 && !comma)
				return hdr_fail(h, "a 1-tuple needs a trailing comma");
			break;
		}
		if (!comma)
			return hdr_fail(h, "expected ',' or ')' in 'shape'");
	}
	*rank = r;
	return 0;
}

/* descr to dtype, or an error naming it. */
/* What a header says of its one tensor, or of each (tir_file_list): the
 * dtype as the file names it, and whether tir reads it (info->dtype). */
struct probe {
	struct tir_file_info info;
	char dtype[64];        /* "<f4", "F32", "BF16" */
	size_t esize;          /* bytes of an element */
	bool loads;            /* info->dtype is tir's */
	bool swap;             /* .npy: big-endian data, byte-swapped as it is read */
	bool fortran;          /* .npy: column-major data, transposed as it is read */
	bool lenient;          /* listing: a dtype tir does not read is no error */
};

/* A plain descr ('<f4', '>i8', '|u1', '=f2') to tir's dtype; *swap when
 * its bytes are big-endian and wider than one (read, then byte-swapped).
 * '=' is the writer's native order, which NumPy only writes as '<' or '>'
 * on disk; it is taken as little-endian. */
static bool npy_dtype_of(const char *d, enum tir_dtype *dt, bool *swap)
{
	static const struct {
		const char *kind; /* type letter and bytes */
		enum tir_dtype dt;
	} ok[] = {
		{"f4", TIR_DTYPE_F32}, {"f8", TIR_DTYPE_F64}, {"i4", TIR_DTYPE_I32},
		{"i8", TIR_DTYPE_I64}, {"b1", TIR_DTYPE_BOOL}, {"f2", TIR_DTYPE_F16},
		{"i1", TIR_DTYPE_I8},  {"u1", TIR_DTYPE_U8},  {"i2", TIR_DTYPE_I16},
	};
	if (!d[0] || !strchr("<>|=", d[0]))
		return false;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		if (strcmp(d + 1, ok[i].kind) == 0) {
			size_t es = tir_dtype_size(ok[i].dt);
			/* '|' (no order) is NumPy's mark of a one-byte type */
			if (d[0] == '|' && es != 1)
				return false;
			*dt = ok[i].dt;
			*swap = d[0] == '>' && es > 1;
			return true;
		}
	}
	return false;
}

/* The bytes of an element of a plain .npy descr ('<f2', '|u1', '>i8',
 * '<c8'): its number; 0 for anything else. */
static size_t npy_descr_size(const char *d)
{
	if (strlen(d) < 3 || !strchr("<>|=", d[0]) || !strchr("biufc", d[1]))
		return 0;
	char *end;
	long n = strtol(d + 2, &end, 10);
	return *end || n <= 0 || n > 32 ? 0 : (size_t)n;
}

static int npy_dtype(struct tir_err *err, const char *path, const char *d, struct probe *pr)
{
	snprintf(pr->dtype, sizeof pr->dtype, "%s", d);
	pr->loads = npy_dtype_of(d, &pr->info.dtype, &pr->swap);
	if (pr->loads) {
		pr->esize = tir_dtype_size(pr->info.dtype);
		return 0;
	}
	pr->esize = npy_descr_size(d);
	if (pr->lenient && pr->esize)
		return 0;
	return ferr(err, TIR_EDATA, path,
		    "unsupported dtype '%s'; tir reads f2 f4 f8 i1 i2 i4 i8 u1 b1 "
		    "(little- or big-endian)", d);
}

static int npy_parse_dict(struct hdr *h, struct probe *pr)
{
	struct tir_file_info *info = &pr->info;
	char key[32], descr[64];
	bool seen_descr = false, seen_fortran = false, seen_shape = false;
	bool fortran = false;
	int rc;

	if (!hdr_eat(h, '{'))
		return hdr_fail(h, "expected '{'");
	while (!hdr_eat(h, '}')) {
		if ((rc = hdr_str(h, key, sizeof key, "expected a quoted key or '}'")))
			return rc;
		if (!hdr_eat(h, ':'))
			return hdr_fail(h, "expected ':' after a key");
		bool *seen;
		if (strcmp(key, "descr") == 0) {
			seen = &seen_descr;
			hdr_ws(h);
			if (h->p < h->end && (*h->p == '[' || *h->p == '{'))
				return ferr(h->err, TIR_EDATA, h->path,
					    "structured dtypes are not supported; tir reads "
					    "f2 f4 f8 i1 i2 i4 i8 u1 b1");
			rc = hdr_str(h, descr, sizeof descr, "expected a string for 'descr'");
		} else if (strcmp(key, "fortran_order") == 0) {
			seen = &seen_fortran;
			rc = hdr_bool(h, &fortran);
		} else if (strcmp(key, "shape") == 0) {
			seen = &seen_shape;
			rc = hdr_shape(h, &info->rank, info->shape);
		} else {
			return ferr(h->err, TIR_EDATA, h->path,
				    "bad .npy header: unexpected key '%s'", key);
		}
		if (rc)
			return rc;
		if (*seen)
			return ferr(h->err, TIR_EDATA, h->path,
				    "bad .npy header: key '%s' appears twice", key);
		*seen = true;
		if (!hdr_eat(h, ',')) {
			if (!hdr_eat(h, '}'))
				return hdr_fail(h, "expected ',' or '}'");
			break;
		}
	}
	hdr_ws(h);
	if (h->p != h->end)
		return hdr_fail(h, "unexpected text after the dict");
	const char *missing = !seen_descr ? "descr" : !seen_fortran ? "fortran_order" :
			      !seen_shape ? "shape" : NULL;
	if (missing)
		return ferr(h->err, TIR_EDATA, h->path, "bad .npy header: no '%s' key", missing);
	if ((rc = npy_dtype(h->err, h->path, descr, pr)))
		return rc;
	pr->fortran = fortran;
	return 0;
}

static int npy_info(int fd, const char *path, uint64_t fsize, const unsigned char *head,
		    size_t nhead, struct probe *pr, struct tir_err *err)
{
	struct tir_file_info *info = &pr->info;
	if (nhead < 8)
		return ferr(err, TIR_EDATA, path,
			    "truncated: the file ends inside the .npy preamble");
	int major = head[6], minor = head[7];
	if (!(major >= 1 && major <= 3 && minor == 0))
		return ferr(err, TIR_EDATA, path,
			    "unsupported .npy format version %d.%d (tir reads 1.0, 2.0, 3.0)",
			    major, minor);
	size_t pre = major == 1 ? 10 : 12;
	if (nhead < pre)
		return ferr(err, TIR_EDATA, path,
			    "truncated: the file ends inside the .npy preamble");
	uint64_t hlen = head[8] | (uint64_t)head[9] << 8;
	if (major > 1)
		hlen |= (uint64_t)head[10] << 16 | (uint64_t)head[11] << 24;
	if (hlen > NPY_MAX_HEADER)
		return ferr(err, TIR_EDATA, path,
			    "header length %llu exceeds the limit of %u bytes",
			    (unsigned long long)hlen, NPY_MAX_HEADER);
	if (hlen > fsize - pre)
		return ferr(err, TIR_EDATA, path,
			    "header length %llu goes past the end of the file (%llu bytes)",
			    (unsigned long long)hlen, (unsigned long long)fsize);
	char *text = malloc(hlen + 1);
	if (!text)
		return ferr(err, TIR_ENOMEM, path, "out of memory reading the header");
	if (read_at(fd, text, hlen, pre)) {
		int rc = read_err(err, path, "the header");
		free(text);
		return rc;
	}
	struct hdr h = {text, text, text + hlen, path, err};
	int rc = npy_parse_dict(&h, pr);
	free(text);
	if (rc)
		return rc;

	int64_t numel;
	if ((rc = check_shape(err, path, "", info->rank, info->shape, &numel)))
		return rc;
	info->data_offset = pre + hlen;
	info->data_bytes = (uint64_t)numel * pr->esize;
	uint64_t have = fsize - info->data_offset;
	if (have < info->data_bytes)
		return ferr(err, TIR_EDATA, path,
			    "truncated: expected %llu bytes of data, file has %llu",
			    (unsigned long long)info->data_bytes, (unsigned long long)have);
	if (have > info->data_bytes)
		return ferr(err, TIR_EDATA, path,
			    "%llu trailing bytes after the data (expected %llu bytes, file has %llu)",
			    (unsigned long long)(have - info->data_bytes),
			    (unsigned long long)info->data_bytes, (unsigned long long)have);
	return 0;
}

/* ---- .safetensors: u64 header size, a JSON header, the data ---- */

/* Levenshtein distance, for "did you mean"; long names count as far. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 128 || lb > 128)
		return SIZE_MAX;
	size_t row[129];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The bytes of an element of each dtype the safetensors format names; 0
 * for a name it does not. */
static size_t st_dtype_size(const char *d)
{
	static const struct {
		const char *name;
		size_t size;
	} sizes[] = {
		{"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
		{"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
		{"I32", 4}, {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8},
	};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (strcmp(d, sizes[i].name) == 0)
			return sizes[i].size;
	return 0;
}

static bool st_dtype_of(const char *d, enum tir_dtype *dt)
{
	static const struct {
		const char *name;
		enum tir_dtype dt;
	} ok[] = {
		{"F32", TIR_DTYPE_F32}, {"F64", TIR_DTYPE_F64}, {"I32", TIR_DTYPE_I32},
		{"I64", TIR_DTYPE_I64}, {"BOOL", TIR_DTYPE_BOOL}, {"F16", TIR_DTYPE_F16},
		{"BF16", TIR_DTYPE_BF16}, {"I8", TIR_DTYPE_I8}, {"U8", TIR_DTYPE_U8},
		{"I16", TIR_DTYPE_I16},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		if (strcmp(d, ok[i].name) == 0) {
			*dt = ok[i].dt;
			return true;
		}
	}
	return false;
}

static int st_dtype(struct tir_err *err, const char *path, const char *tname,
		    const char *d, enum tir_dtype *dt)
{
	if (st_dtype_of(d, dt))
		return 0;
	return ferr(err, TIR_EDATA, path,
		    "tensor '%s': unsupported dtype '%s'; tir reads F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL",
		    tname, d);
}

/* Pick the entry for name (NULL: the only tensor) or explain why not. */
static int st_pick(json_t *root, const char *path, const char *name, const char **tname,
		   json_t **entry, struct tir_err *err)
{
	if (name) {
		json_t *e = strcmp(name, "__metadata__") ? json_object_get(root, name) : NULL;
		if (e) {
			*tname = name;
			*entry = e;
			return 0;
		}
		const char *best = NULL;
		size_t bestd = SIZE_MAX;
		const char *k;
		json_t *v;
		json_object_foreach(root, k, v) {
			size_t d = strcmp(k, "__metadata__") ? edit_distance(name, k) : SIZE_MAX;
			if (d < bestd) {
				bestd = d;
				best = k;
			}
		}
		if (best)
			return ferr(err, TIR_EDATA, path, "no tensor named '%s' (did you mean '%s'?)",
				    name, best);
		return ferr(err, TIR_EDATA, path, "no tensor named '%s'", name);
	}

	size_t count = 0;
	char list[256] = "";
	size_t used = 0;
	const char *k, *first = NULL;
	json_t *v;
	json_object_foreach(root, k, v) {
		if (strcmp(k, "__metadata__") == 0)
			continue;
		if (!first) {
			first = k;
			*entry = v;
		}
		if (count < 5 && used < sizeof list) {
			int n = snprintf(list + used, sizeof list - used, "%s%s",
					 count ? ", " : "", k);
			used += n > 0 ? (size_t)n : 0;
		}
		count++;
	}
	if (count == 1) {
		*tname = first;
		return 0;
	}
	if (count == 0)
		return ferr(err, TIR_EDATA, path, "holds no tensors");
	return ferr(err, TIR_EDATA, path,
		    "holds %zu tensors (%s%s): say which, load(\"%s\", \"%s\")",
		    count, list, count > 5 ? ", ..." : "", path, first);
}

/* A JSON number that is a non-negative integer, into *v. */
static bool st_uint(json_t *j, int64_t *v)
{
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (int64_t)json_integer_value(j);
	return true;
}

static int st_entry(json_t *e, const char *path, const char *tname, uint64_t data_size,
		    struct probe *pr, struct tir_err *err)
{
	struct tir_file_info *info = &pr->info;
	if (!json_is_object(e))
		return ferr(err, TIR_EDATA, path, "tensor '%s': expected a JSON object", tname);
	json_t *jd = json_object_get(e, "dtype");
	json_t *js = json_object_get(e, "shape");
	json_t *jo = json_object_get(e, "data_offsets");
	if (!json_is_string(jd))
		return ferr(err, TIR_EDATA, path, "tensor '%s': \"dtype\" missing or not a string",
			    tname);
	if (!json_is_array(js))
		return ferr(err, TIR_EDATA, path, "tensor '%s': \"shape\" missing or not a list",
			    tname);
	if (!json_is_array(jo) || json_array_size(jo) != 2)
		return ferr(err, TIR_EDATA, path,
			    "tensor '%s': \"data_offsets\" missing or not [begin, end]", tname);
	const char *dname = json_string_value(jd);
	snprintf(pr->dtype, sizeof pr->dtype, "%s", dname);
	pr->esize = st_dtype_size(dname);
	int rc = 0;
	if (!pr->lenient)
		rc = st_dtype(err, path, tname, dname, &info->dtype);
	else if (!pr->esize)
		rc = ferr(err, TIR_EDATA, path, "tensor '%s': unknown dtype '%s'", tname, dname);
	else
		pr->loads = st_dtype_of(dname, &info->dtype);
	if (rc)
		return rc;
	if (!pr->lenient) {
		pr->loads = true;
		pr->esize = tir_dtype_size(info->dtype);
	}
	size_t rank = json_array_size(js);
	if (rank > TIR_MAX_RANK)
		return ferr(err, TIR_EDATA, path,
			    "tensor '%s': the shape has %zu axes (tir's limit is %d)",
			    tname, rank, TIR_MAX_RANK);
	info->rank = (int)rank;
	for (size_t i = 0; i < rank; i++) {
		json_t *d = json_array_get(js, i);
		if (!json_is_integer(d))
			return ferr(err, TIR_EDATA, path,
				    "tensor '%s': shape entries must be integers", tname);
		info->shape[i] = (int64_t)json_integer_value(d);
	}
	char what[160];
	snprintf(what, sizeof what, "tensor '%s': ", tname);
	int64_t numel, begin, end;
	if ((rc = check_shape(err, path, what, info->rank, info->shape, &numel)))
		return rc;
	if (!st_uint(json_array_get(jo, 0), &begin) || !st_uint(json_array_get(jo, 1), &end))
		return ferr(err, TIR_EDATA, path,
			    "tensor '%s': data_offsets must be non-negative integers", tname);
	if (begin > end || (uint64_t)end > data_size)
		return ferr(err, TIR_EDATA, path,
			    "tensor '%s': data_offsets [%lld, %lld] out of range "
			    "(the data is %llu bytes)", tname, (long long)begin,
			    (long long)end, (unsigned long long)data_size);
	uint64_t need = (uint64_t)numel * pr->esize;
	if ((uint64_t)(end - begin) != need)
		return ferr(err, TIR_EDATA, path,
			    "tensor '%s': its shape needs %llu bytes but data_offsets span %llu",
			    tname, (unsigned long long)need, (unsigned long long)(end - begin));
	info->data_bytes = need;
	info->data_offset = (uint64_t)begin;   /* the caller adds the header */
	return 0;
}

struct span {
	uint64_t b, e;
	const char *name;
};

static int span_cmp(const void *x, const void *y)
{
	const struct span *a = x, *b = y;
	return a->b < b->b ? -1 : a->b > b->b ? 1 : a->e < b->e ? -1 : a->e > b->e;
}

/* Every tensor of the header checked (a dtype the format names, a shape,
 * offsets inside the data that match them) and no two overlapping; with
 * list, each goes into it too (in the file's order).  A file that lies
 * about one tensor is refused whichever is asked for. */
static int st_all(json_t *root, const char *path, uint64_t data_size, uint64_t base,
		  struct tir_file_listing *list, struct tir_err *err)
{
	size_t n = json_object_size(root), m = 0;
	struct span *sp = calloc(n ? n : 1, sizeof *sp);
	struct tir_file_entry *ents = list ? calloc(n ? n : 1, sizeof *ents) : NULL;
	if (!sp || (list && !ents)) {
		free(sp);
		free(ents);
		return ferr(err, TIR_ENOMEM, path, "out of memory reading the header");
	}
	int rc = 0;
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v) {
		if (strcmp(k, "__metadata__") == 0)
			continue;
		struct probe pr = {.lenient = true};
		if ((rc = st_entry(v, path, k, data_size, &pr, err)))
			goto out;
		sp[m] = (struct span){pr.info.data_offset, pr.info.data_offset + pr.info.data_bytes, k};
		if (ents) {
			struct tir_file_entry *e = &ents[m];
			e->name = strdup(k);
			if (!e->name) {
				rc = ferr(err, TIR_ENOMEM, path, "out of memory reading the header");
				goto out;
			}
			snprintf(e->dtype, sizeof e->dtype, "%s", pr.dtype);
			e->loads = pr.loads;
			e->dt = pr.info.dtype;
			e->rank = pr.info.rank;
			memcpy(e->shape, pr.info.shape, sizeof e->shape);
			e->offset = base + pr.info.data_offset;
			e->bytes = pr.info.data_bytes;
		}
		m++;
	}
	qsort(sp, m, sizeof *sp, span_cmp);
	for (size_t i = 1, last = 0; i < m; i++) {
		if (sp[i].b == sp[i].e)
			continue;
		if (sp[last].e > sp[i].b && sp[last].b != sp[last].e) {
			rc = ferr(err, TIR_EDATA, path,
				  "tensors '%s' and '%s' overlap: data_offsets [%llu, %llu] and [%llu, %llu]",
				  sp[last].name, sp[i].name, (unsigned long long)sp[last].b,
				  (unsigned long long)sp[last].e, (unsigned long long)sp[i].b,
				  (unsigned long long)sp[i].e);
			goto out;
		}
		if (sp[i].e > sp[last].e || sp[last].b == sp[last].e)
			last = i;
	}
	if (list) {
		/* in the file's order: by offset, then name */
		for (size_t i = 1; i < m; i++)
			for (size_t j = i; j > 0 && (ents[j].offset < ents[j - 1].offset ||
					(ents[j].offset == ents[j - 1].offset &&
					 strcmp(ents[j].name, ents[j - 1].name) < 0)); j--) {
				struct tir_file_entry t = ents[j];
				ents[j] = ents[j - 1];
				ents[j - 1] = t;
			}
		list->e = ents;
		list->n = m;
		ents = NULL;
	}
out:
	if (ents)
		for (size_t i = 0; i < n; i++)
			free(ents[i].name);
	free(ents);
	free(sp);
	return rc;
}

/* ---- headers read once a run ----
 * A program loads many tensors of one checkpoint (gpt2.tir: 152 of one
 * file, each named at parse time for its type and at run time for its
 * data).  A checked header is kept, by the file's identity (device,
 * inode, size, change and modification times: a file rewritten is read
 * again), so each later load of the file is a lookup in its parsed JSON:
 * the cost grows with the tensors used, not loads x tensors.  Only
 * headers that passed every check are kept (st_all), at most ST_KEEP
 * files and ST_KEEP_BYTES of header text, the least recently used
 * dropped. */
#define ST_KEEP 16
#define ST_KEEP_BYTES ((uint64_t)64 << 20)

/* A file as it was when something of it was kept: device, inode, size,
 * change and modification times (a file rewritten differs in one). */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

static struct file_id file_id_of(const struct stat *st)
{
	return (struct file_id){.dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
				.mtime = st->st_mtim, .ctime = st->st_ctim};
}

static bool file_id_same(const struct file_id *k, const struct stat *st)
{
	return k->dev == st->st_dev && k->ino == st->st_ino && k->size == st->st_size &&
	       k->mtime.tv_sec == st->st_mtim.tv_sec && k->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       k->ctime.tv_sec == st->st_ctim.tv_sec && k->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

struct st_kept {
	struct file_id id;
	struct timespec kept;
	uint64_t hlen;
	char *text;        /* the header's bytes */
	json_t *root;      /* one reference of the cache's */
	uint64_t used;     /* the clock at its last use */
};

static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;
static struct st_kept st_kept[ST_KEEP];
static size_t st_nkept;
static uint64_t st_clock, st_reads;

/* a before b by a whole second or more */
static bool well_before(struct timespec a, struct timespec b)
{
	return b.tv_sec - a.tv_sec > 1 || (b.tv_sec - a.tv_sec == 1 && b.tv_nsec >= a.tv_nsec);
}

/* The same file, unchanged since k was kept.  A file's times tick with
 * the kernel's clock (milliseconds), so a file rewritten within one tick
 * of being read would look the same: identity is trusted only for a file
 * last changed a second or more before its header was kept; a newer one
 * has its header read and compared. */
static bool st_same(const struct st_kept *k, const struct stat *st, uint64_t hlen)
{
	return file_id_same(&k->id, st) && k->hlen == hlen && well_before(k->id.mtime, k->kept) &&
	       well_before(k->id.ctime, k->kept);
}

/* The checked header of the file st is, a new reference; NULL if none is
 * kept.  text (its bytes, read) NULL: by the file's identity alone. */
static json_t *st_lookup(const struct stat *st, uint64_t hlen, const char *text)
{
	json_t *root = NULL;
	pthread_mutex_lock(&st_mu);
	for (size_t i = 0; i < st_nkept; i++) {
		struct st_kept *k = &st_kept[i];
		bool hit = text ? k->id.size == st->st_size && k->hlen == hlen && !memcmp(k->text, text, hlen)
				: st_same(k, st, hlen);
		if (hit) {
			k->used = ++st_clock;
			root = json_incref(k->root);
			break;
		}
	}
	pthread_mutex_unlock(&st_mu);
	return root;
}

static void st_drop(size_t i)
{
	json_decref(st_kept[i].root);
	free(st_kept[i].text);
	st_kept[i] = st_kept[--st_nkept];
}

/* Keep root (checked), parsed from text (taken), as the header of the file st is. */
static void st_keep(const struct stat *st, uint64_t hlen, char *text, json_t *root)
{
	if (hlen > ST_KEEP_BYTES / 4) {
		free(text);
		return;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&st_mu);
	/* the same inode changed: its old header goes; then the oldest, while
	 * the count or the bytes are over */
	for (size_t i = 0; i < st_nkept;)
		if (st_kept[i].id.dev == st->st_dev && st_kept[i].id.ino == st->st_ino)
			st_drop(i);
		else
			i++;
	for (;;) {
		uint64_t bytes = hlen;
		size_t oldest = 0;
		for (size_t j = 0; j < st_nkept; j++) {
			bytes += st_kept[j].hlen;
			if (st_kept[j].used < st_kept[oldest].used)
				oldest = j;
		}
		if (!st_nkept || (st_nkept < ST_KEEP && bytes <= ST_KEEP_BYTES))
			break;
		st_drop(oldest);
	}
	st_kept[st_nkept++] = (struct st_kept){
		.id = file_id_of(st), .kept = now, .hlen = hlen,
		.text = text, .root = json_incref(root), .used = ++st_clock,
	};
	pthread_mutex_unlock(&st_mu);
}

uint64_t tir_file_header_reads(void)
{
	pthread_mutex_lock(&st_mu);
	uint64_t n = st_reads;
	pthread_mutex_unlock(&st_mu);
	return n;
}

void tir_file_headers_forget(void)
{
	pthread_mutex_lock(&st_mu);
	while (st_nkept)
		st_drop(0);
	pthread_mutex_unlock(&st_mu);
}

/* The header of the file st is, read, parsed and checked (the metadata
 * and every tensor: st_all), or kept from an earlier read; a new reference. */
static int st_header(int fd, const char *path, const struct stat *st, uint64_t hlen, json_t **rootp,
		     struct tir_err *err)
{
	uint64_t fsize = (uint64_t)st->st_size;
	int rc = tir_json_ready(err);
	if (rc)
		return rc;
	if ((*rootp = st_lookup(st, hlen, NULL)))
		return 0;
	if (hlen > ST_MAX_HEADER)
		return ferr(err, TIR_EDATA, path,
			    "header size %llu exceeds the limit of %llu bytes",
			    (unsigned long long)hlen, (unsigned long long)ST_MAX_HEADER);
	if (hlen > fsize - 8)
		return ferr(err, TIR_EDATA, path,
			    "header size %llu goes past the end of the file (%llu bytes)",
			    (unsigned long long)hlen, (unsigned long long)fsize);
	char *text = malloc(hlen ? hlen : 1);
	if (!text)
		return ferr(err, TIR_ENOMEM, path, "out of memory reading the header");
	if (read_at(fd, text, hlen, 8)) {
		rc = read_err(err, path, "the header");
		free(text);
		return rc;
	}
	if ((*rootp = st_lookup(st, hlen, text))) {
		free(text);
		return 0;
	}
	pthread_mutex_lock(&st_mu);
	st_reads++;
	pthread_mutex_unlock(&st_mu);
	json_error_t jerr;
	json_t *root = json_loadb(text, hlen, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		free(text);
		return ferr(err, TIR_EDATA, path, "bad safetensors header: %s (at byte %d)",
			    jerr.text, jerr.position);
	}
	json_t *meta = json_object_get(root, "__metadata__");
	if (!json_is_object(root)) {
		rc = ferr(err, TIR_EDATA, path, "bad safetensors header: not a JSON object");
		goto fail;
	}
	if (meta) {
		const char *k;
		json_t *v;
		bool ok = json_is_object(meta);
		json_object_foreach(meta, k, v)
			ok = ok && json_is_string(v);
		if (!ok) {
			rc = ferr(err, TIR_EDATA, path,
				  "bad safetensors header: \"__metadata__\" must map strings to strings");
			goto fail;
		}
	}
	if ((rc = st_all(root, path, fsize - 8 - hlen, 8 + hlen, NULL, err)))
		goto fail;
	st_keep(st, hlen, text, root);
	*rootp = root;
	return 0;
fail:
	free(text);
	json_decref(root);
	return rc;
}

/* The tensor `name` into *pr (list NULL), or every tensor into list. */
static int st_info(int fd, const char *path, const struct stat *st, uint64_t hlen, const char *name,
		   struct probe *pr, struct tir_file_listing *list, struct tir_err *err)
{
	json_t *root;
	int rc = st_header(fd, path, st, hlen, &root, err);
	if (rc)
		return rc;
	const char *tname = NULL;
	json_t *entry = NULL;
	json_t *meta = json_object_get(root, "__metadata__");
	uint64_t data_size = (uint64_t)st->st_size - 8 - hlen;
	if (list) {
		list->format = "safetensors";
		list->header_bytes = 8 + hlen;
		if (meta && json_object_size(meta))
			list->metadata = json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS);
		rc = st_all(root, path, data_size, 8 + hlen, list, err);
		goto out;
	}
	if ((rc = st_pick(root, path, name, &tname, &entry, err)))
		goto out;
	if ((rc = st_entry(entry, path, tname, data_size, pr, err)))
		goto out;
	pr->info.data_offset += 8 + hlen;
out:
	json_decref(root);
	return rc;
}


/* ---- open, detect, dispatch ---- */

static int open_info(const char *path, const char *name, int *fdp, struct probe *pr,
		     struct tir_file_listing *list, struct tir_err *err)
{
	memset(&pr->info, 0, sizeof pr->info);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ferr(err, TIR_EDATA, path, "cannot open: %s", strerror(errno));
	struct stat st;
	int rc;
	if (fstat(fd, &st) != 0) {
		rc = ferr(err, TIR_EDATA, path, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = ferr(err, TIR_EDATA, path, "is a directory");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = ferr(err, TIR_EDATA, path, "not a regular file");
		goto fail;
	}
	uint64_t fsize = (uint64_t)st.st_size;
	unsigned char head[12];
	size_t nhead = fsize < sizeof head ? (size_t)fsize : sizeof head;
	if (read_at(fd, head, nhead, 0)) {
		rc = read_err(err, path, "the header");
		goto fail;
	}

	if (nhead >= NPY_MAGIC_LEN && memcmp(head, NPY_MAGIC, NPY_MAGIC_LEN) == 0) {
		if (name) {
			rc = ferr(err, TIR_EDATA, path,
				  "a .npy file holds one tensor: load it without a name");
			goto fail;
		}
		rc = npy_info(fd, path, fsize, head, nhead, pr, err);
		if (!rc && list) {
			list->format = "npy";
			list->header_bytes = pr->info.data_offset;
			list->e = calloc(1, sizeof *list->e);
			if (!list->e) {
				rc = ferr(err, TIR_ENOMEM, path, "out of memory");
			} else {
				struct tir_file_entry *e = list->e;
				list->n = 1;
				snprintf(e->dtype, sizeof e->dtype, "%s", pr->dtype);
				e->loads = pr->loads;
				e->dt = pr->info.dtype;
				e->rank = pr->info.rank;
				memcpy(e->shape, pr->info.shape, sizeof e->shape);
				e->offset = pr->info.data_offset;
				e->bytes = pr->info.data_bytes;
			}
		}
	} else {
		uint64_t hlen = 0;
		for (int i = 7; nhead >= 8 && i >= 0; i--)
			hlen = hlen << 8 | head[i];
		/* plausible: the upper half of the size is 0 and the JSON opens */
		if (nhead < 9 || hlen < 2 || hlen >> 32 || head[8] != '{') {
			rc = ferr(err, TIR_EDATA, path, "not a .npy or .safetensors file");
			goto fail;
		}
		rc = st_info(fd, path, &st, hlen, name, pr, list, err);
	}
	if (rc)
		goto fail;
	if (list)
		list->file_bytes = fsize;
	*fdp = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

/* The header only, validated against the file's size; see exec.h. */
int tir_file_info(const char *path, const char *name, struct tir_file_info *info,
		  struct tir_err *err)
{
	int fd;
	struct probe pr = {0};
	int rc = open_info(path, name, &fd, &pr, NULL, err);
	if (rc)
		return rc;
	*info = pr.info;
	close(fd);
	return 0;
}

int tir_file_list(const char *path, struct tir_file_listing *list, struct tir_err *err)
{
	int fd;
	struct probe pr = {.lenient = true};
	memset(list, 0, sizeof *list);
	int rc = open_info(path, NULL, &fd, &pr, list, err);
	if (rc) {
		tir_file_listing_free(list);
		return rc;
	}
	close(fd);
	return 0;
}

void tir_file_listing_free(struct tir_file_listing *list)
{
	for (size_t i = 0; i < list->n; i++)
		free(list->e[i].name);
	free(list->e);
	free(list->metadata);
	memset(list, 0, sizeof *list);
}

/* ---- --input NAME=FILE[:TENSOR] ---- */

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

int tir_file_load_input(const char *spec, const char *input, struct tir_tensor *dst, struct tir_err *err)
{
	memset(dst, 0, sizeof *dst);
	/* FILE:TENSOR only when SPEC itself is no file and FILE is one: a
	 * path with a colon in it still names its file */
	const char *colon = strrchr(spec, ':');
	if (!is_file(spec) && colon && colon > spec && colon[1]) {
		char *file = strndup(spec, (size_t)(colon - spec));
		if (!file)
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		int rc = 1;
		if (is_file(file)) {
			rc = tir_file_load(file, colon + 1, dst, err);
			if (rc) {
				char msg[sizeof err->msg];
				snprintf(msg, sizeof msg, "%s", err->msg);
				tir_errf(err, err->code, NULL, "--input %s=%s: %s", input, spec, msg);
			}
		}
		free(file);
		if (rc <= 0)
			return rc;
	}
	int rc = tir_file_load(spec, NULL, dst, err);
	if (!rc)
		return 0;
	/* of a .safetensors file of several, the one named like the input */
	struct tir_file_listing l;
	struct tir_err e2 = {0};
	bool several = !tir_file_list(spec, &l, &e2) && l.n > 1 && !strcmp(l.format, "safetensors");
	if (!several || !tir_file_load(spec, input, dst, &e2)) {
		tir_file_listing_free(&l);
		return several ? 0 : rc;
	}
	char names[200] = "";
	size_t used = 0;
	const char *near = l.e[0].name;
	size_t neard = SIZE_MAX;
	for (size_t i = 0; i < l.n; i++) {
		size_t d = edit_distance(input, l.e[i].name);
		if (d < neard) {
			neard = d;
			near = l.e[i].name;
		}
		if (i < 6 && used < sizeof names) {
			int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", l.e[i].name);
			used += n > 0 ? (size_t)n : 0;
		}
	}
	rc = tir_errf(err, TIR_EDATA, NULL,
		      "--input %s=%s: the file holds %zu tensors (%s%s) and none is named '%s'; "
		      "say which, as --input %s=%s:%s", input, spec, l.n, names, l.n > 6 ? ", ..." : "",
		      input, input, spec, near);
	tir_file_listing_free(&l);
	return rc;
}

/* ---- mapping the data (tir_set_file_mapping) ---- */

#define MAP_MIN ((uint64_t)64 << 10)   /* smaller data is read: a mapping costs a page and a syscall */

static atomic_bool map_off;

void tir_set_file_mapping(bool on)
{
	atomic_store(&map_off, !on);
}

size_t tir_mapped_bytes(void)
{
	return tir_mem_mapped();
}

/* ---- mappings kept for the next load of the same bytes ----
 * A mapping no tensor holds any more is kept (at most MAP_KEEP of them
 * and MAP_KEEP_BYTES of those no tensor holds, the least recently
 * released unmapped first), so that loading the same tensor of the same
 * file again, as every run of a program that loads its weights does,
 * finds it mapped: no mmap and munmap, and no page fault on each 64 KiB
 * of the weights at every run (ResNet-18's 46 MiB: about 4 ms of CPU a
 * run).  The same file is the same device, inode, size, change and
 * modification times, looked up at each load: a file replaced or changed
 * since is mapped anew.  (A file written in place within one tick of its
 * times shows its new bytes anyway: the mapping is of the page cache; and
 * its inode, held by the mapping, is never another file's.)  The kept
 * pages are the page cache's, clean, which the kernel may drop. */
#define MAP_KEEP 256
#define MAP_KEEP_BYTES ((size_t)1 << 30)

struct map_kept {
	struct file_id id;
	uint64_t start;
	size_t len;
	void *map;
	int refs;                /* tensors holding it */
	uint64_t used;           /* the clock at its last release */
};

static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t map_once = PTHREAD_ONCE_INIT;
static struct map_kept map_kept[MAP_KEEP];
static int map_nkept;
static uint64_t map_clock;
static size_t map_idle;          /* bytes of those no tensor holds */
static uint64_t map_made;        /* mmaps of data so far */

/* a child forked while another thread held the lock starts over with it */
static void map_after_fork(void)
{
	pthread_mutex_init(&map_mu, NULL);
}

static void map_hooks(void)
{
	pthread_atfork(NULL, NULL, map_after_fork);
}

static bool map_same(const struct map_kept *k, const struct stat *st, uint64_t start, uint64_t len)
{
	return file_id_same(&k->id, st) && k->start == start && k->len == len;
}

/* Unmap idle mappings, least recently released first, while they pass
 * MAP_KEEP_BYTES, or (room) until a slot is free (map_mu held). */
static void map_trim(bool room)
{
	while (map_idle > MAP_KEEP_BYTES || (room && map_nkept == MAP_KEEP)) {
		int old = -1;
		for (int i = 0; i < map_nkept; i++)
			if (!map_kept[i].refs && (old < 0 || map_kept[i].used < map_kept[old].used))
				old = i;
		if (old < 0)
			return;
		munmap(map_kept[old].map, map_kept[old].len);
		map_idle -= map_kept[old].len;
		map_kept[old] = map_kept[--map_nkept];
	}
}

void tir_file_unmap(void *map, size_t bytes)
{
	pthread_mutex_lock(&map_mu);
	for (int i = 0; i < map_nkept; i++) {
		if (map_kept[i].map != map)
			continue;
		if (--map_kept[i].refs == 0) {
			map_kept[i].used = ++map_clock;
			map_idle += map_kept[i].len;
			map_trim(false);
		}
		pthread_mutex_unlock(&map_mu);
		return;
	}
	pthread_mutex_unlock(&map_mu);
	munmap(map, bytes);          /* not kept: every slot was held */
}

uint64_t tir_file_maps_made(void)
{
	pthread_mutex_lock(&map_mu);
	uint64_t n = map_made;
	pthread_mutex_unlock(&map_mu);
	return n;
}

void tir_file_maps_forget(void)
{
	pthread_mutex_lock(&map_mu);
	for (int i = 0; i < map_nkept;) {
		if (map_kept[i].refs) {
			i++;
			continue;
		}
		munmap(map_kept[i].map, map_kept[i].len);
		map_idle -= map_kept[i].len;
		map_kept[i] = map_kept[--map_nkept];
	}
	pthread_mutex_unlock(&map_mu);
}

/* info's data as a read-only private mapping of fd in dst (a kept one
 * when there is one): 0; 1 (dst untouched) when it is read instead:
 * mapping off, small data, data not aligned for its dtype (a safetensors
 * offset may be any byte), or a file that cannot be mapped; or -code. */
static int map_data(int fd, const char *path, const struct tir_file_info *info, struct tir_tensor *dst,
		    struct tir_err *err)
{
	uint64_t es = tir_dtype_size(info->dtype), pg = (uint64_t)sysconf(_SC_PAGESIZE);
	if (atomic_load(&map_off) || info->data_bytes < MAP_MIN || info->data_offset % es || !pg)
		return 1;
	uint64_t start = info->data_offset / pg * pg, len = info->data_offset + info->data_bytes - start;
	struct stat st;
	if (len > SIZE_MAX || fstat(fd, &st) != 0)
		return 1;
	pthread_once(&map_once, map_hooks);
	void *m = NULL;
	pthread_mutex_lock(&map_mu);
	for (int i = 0; i < map_nkept && !m; i++) {
		if (map_same(&map_kept[i], &st, start, len)) {
			m = map_kept[i].map;
			if (map_kept[i].refs++ == 0)
				map_idle -= map_kept[i].len;
		}
	}
	pthread_mutex_unlock(&map_mu);
	if (!m) {
		m = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, (off_t)start);
		if (m == MAP_FAILED)
			return 1;
		pthread_mutex_lock(&map_mu);
		map_made++;
		map_trim(true);
		if (map_nkept < MAP_KEEP)
			map_kept[map_nkept++] = (struct map_kept){
				.id = file_id_of(&st), .start = start, .len = (size_t)len, .map = m, .refs = 1};
		pthread_mutex_unlock(&map_mu);
	}
	/* shrunk since its size was checked, a page past the end would be SIGBUS */
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < info->data_offset + info->data_bytes) {
		tir_file_unmap(m, (size_t)len);
		return ferr(err, TIR_EDATA, path, "truncated while being read (the file changed)");
	}
	return tir_tensor_wrap_map(dst, info->dtype, info->rank, info->shape, m, (size_t)len,
				   (char *)m + (info->data_offset - start), err);
}

/* Big-endian elements of es bytes to this machine's order, in place. */
static void swap_bytes(unsigned char *p, uint64_t n, size_t es)
{
	for (uint64_t i = 0; i < n; i++, p += es) {
		if (es == 2) {
			uint16_t v;
			memcpy(&v, p, 2);
			v = __builtin_bswap16(v);
			memcpy(p, &v, 2);
		} else if (es == 4) {
			uint32_t v;
			memcpy(&v, p, 4);
			v = __builtin_bswap32(v);
			memcpy(p, &v, 4);
		} else if (es == 8) {
			uint64_t v;
			memcpy(&v, p, 8);
			v = __builtin_bswap64(v);
			memcpy(p, &v, 8);
		}
	}
}

/* Column-major src (fortran_order: the first axis varies fastest) into
 * row-major dst, elements of es bytes. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src, int rank, const int64_t *shape,
			 size_t es)
{
	int64_t stride[TIR_MAX_RANK], idx[TIR_MAX_RANK] = {0}, numel = 1, off = 0;
	for (int d = 0; d < rank; d++) {
		stride[d] = numel;
		numel *= shape[d];
	}
	for (int64_t i = 0; i < numel; i++) {
		memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
		for (int d = rank - 1; d >= 0; d--) {
			off += stride[d];
			if (++idx[d] < shape[d])
				break;
			off -= stride[d] * shape[d];
			idx[d] = 0;
		}
	}
}

/* A new contiguous tensor in dst (empty on failure): the file's pages
 * (map_data) or a copy; bool bytes checked.  Big-endian data is
 * byte-swapped and Fortran-order data transposed into C order as it is
 * read (never mapped). */
int tir_file_load(const char *path, const char *name, struct tir_tensor *dst,
		  struct tir_err *err)
{
	struct probe pr = {0};
	int fd;
	unsigned char *tmp = NULL;
	memset(dst, 0, sizeof *dst);
	int rc = open_info(path, name, &fd, &pr, NULL, err);
	if (rc)
		return rc;
	const struct tir_file_info info = pr.info;
	/* data read in another byte order or layout than stored must not be
	 * mapped: it is converted into memory of its own */
	int mapped = pr.swap || pr.fortran ? 1 : map_data(fd, path, &info, dst, err);
	if (mapped < 0) {
		close(fd);
		return mapped;
	}
	if (mapped && (rc = tir_tensor_alloc(dst, info.dtype, info.rank, info.shape, false, err))) {
		close(fd);
		return ferr(err, err->code, path, "%s", err->msg);
	}
	unsigned char *data = tir_tensor_data(dst);
	if (pr.fortran && info.data_bytes && info.rank > 1) {
		tmp = malloc(info.data_bytes);
		if (!tmp) {
			rc = ferr(err, TIR_ENOMEM, path, "out of memory reading Fortran-order data");
			goto fail;
		}
	}
	if (mapped && info.data_bytes && read_at(fd, tmp ? tmp : data, info.data_bytes, info.data_offset)) {
		rc = read_err(err, path, "the data");
		goto fail;
	}
	size_t es = tir_dtype_size(info.dtype);
	if (pr.swap)
		swap_bytes(tmp ? tmp : data, info.data_bytes / es, es);
	if (tmp)
		fortran_to_c(data, tmp, info.rank, info.shape, es);
	if (info.dtype == TIR_DTYPE_BOOL) {
		for (uint64_t i = 0; i < info.data_bytes; i++) {
			if (data[i] > 1) {
				rc = ferr(err, TIR_EDATA, path,
					  "invalid bool byte 0x%02x at element %llu (must be 0 or 1)",
					  data[i], (unsigned long long)i);
				goto fail;
			}
		}
	}
	free(tmp);
	close(fd);
	return 0;
fail:
	free(tmp);
	close(fd);
	tir_tensor_release(dst);
	return rc;
}

/* ---- writing .npy ---- */

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t k = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The data in C order, gathering a strided view through a bounded buffer. */
static int write_data(int fd, const struct tir_tensor *t, int64_t numel)
{
	size_t es = tir_dtype_size(t->dtype);
	const char *base = tir_tensor_data(t);
	if (numel == 0)
		return 0;
	if (tir_tensor_is_contiguous(t))
		return write_all(fd, base, (size_t)numel * es);

	enum { CHUNK = 1 << 16 };
	char *chunk = malloc(CHUNK);
	if (!chunk) {
		errno = ENOMEM;
		return -1;
	}
	size_t used = 0;
	struct tir_iter it;
	const int64_t *st[1] = {t->strides};
	if (tir_iter_init(&it, t->rank, t->shape, 1, st)) {
		do {
			const char *src = base + it.off[0] * (int64_t)es;
			for (int64_t i = 0; i < it.inner; i++) {
				memcpy(chunk + used, src + i * it.istride[0] * (int64_t)es, es);
				used += es;
				if (used == CHUNK) {
					if (write_all(fd, chunk, used))
						goto fail;
					used = 0;
				}
			}
		} while (tir_iter_next(&it));
	}
	if (write_all(fd, chunk, used))
		goto fail;
	free(chunk);
	return 0;
fail:
	free(chunk);
	return -1;
}

/* "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", padded
 * with spaces and a final newline so the preamble plus header is a
 * multiple of 64 bytes, as numpy writes it.  Version 2.0 only when the
 * header outgrows 1.0's u16 length.  Sets *npre to the preamble's length. */
static void npy_header(const struct tir_tensor *t, struct tir_str *h, unsigned char pre[12],
		       size_t *npre)
{
	static const char *const descr[TIR_DTYPE_COUNT] = {
		[TIR_DTYPE_BOOL] = "|b1", [TIR_DTYPE_I32] = "<i4", [TIR_DTYPE_I64] = "<i8",
		[TIR_DTYPE_F32] = "<f4", [TIR_DTYPE_F64] = "<f8", [TIR_DTYPE_F16] = "<f2",
		[TIR_DTYPE_I8] = "|i1", [TIR_DTYPE_U8] = "|u1", [TIR_DTYPE_I16] = "<i2",
	};
	tir_str_addf(h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[t->dtype]);
	for (int i = 0; i < t->rank; i++)
		tir_str_addf(h, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	tir_str_addf(h, "%s), }", t->rank == 1 ? "," : "");
	size_t n = h->n + 1;   /* with the newline */
	*npre = NPY_MAGIC_LEN + 4;
	if ((n + *npre + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN - *npre > 65535)
		*npre = NPY_MAGIC_LEN + 6;
	size_t total = (*npre + n + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
	for (size_t k = *npre + n; k < total; k++)
		tir_str_add(h, " ", 1);
	tir_str_add(h, "\n", 1);

	memcpy(pre, NPY_MAGIC, NPY_MAGIC_LEN);
	pre[6] = *npre == NPY_MAGIC_LEN + 4 ? 1 : 2;
	pre[7] = 0;
	for (size_t i = 8; i < *npre; i++)
		pre[i] = (unsigned char)(h->n >> (8 * (i - 8)));
}

/* Write a file through PATH.tmp and a rename: never a half file.  A path
 * that names something other than a regular file (/dev/null, a FIFO,
 * /dev/stdout) is written in place: a rename would replace it (as root,
 * /dev/null itself) with a regular file.  body writes the bytes to fd,
 * -1 with errno on failure. */
static int write_file(const char *path, int (*body)(int fd, const void *ctx), const void *ctx,
		      struct tir_err *err)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 5);
	if (!tmp)
		return ferr(err, TIR_ENOMEM, path, "out of memory");
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp", 5);
	struct stat st;
	bool in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
	if (in_place)
		memcpy(tmp, path, plen + 1);

	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = ferr(err, TIR_EDATA, path, "cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	if (body(fd, ctx)) {
		rc = ferr(err, TIR_EDATA, path, "cannot write: %s", strerror(errno));
		close(fd);
		goto fail;
	}
	if (close(fd) != 0) {
		rc = ferr(err, TIR_EDATA, path, "cannot write: %s", strerror(errno));
		goto fail;
	}
	if (!in_place && rename(tmp, path) != 0) {
		rc = ferr(err, TIR_EDATA, path, "cannot rename %s into place: %s", tmp,
			  strerror(errno));
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	if (!in_place)
		unlink(tmp);
	free(tmp);
	return rc;
}

static int savable(const char *path, const struct tir_tensor *t, struct tir_err *err)
{
	if ((unsigned)t->dtype >= TIR_DTYPE_COUNT || t->rank < 0 || t->rank > TIR_MAX_RANK)
		return ferr(err, TIR_EDATA, path, "cannot save a tensor of rank %d", t->rank);
	if (tir_tensor_numel(t) > 0 && !t->buf)
		return ferr(err, TIR_EDATA, path, "the tensor has no data");
	return 0;
}

struct npy_out {
	const struct tir_tensor *t;
	const unsigned char *pre;
	size_t npre;
	const struct tir_str *header;
};

static int npy_body(int fd, const void *ctx)
{
	const struct npy_out *o = ctx;
	return write_all(fd, o->pre, o->npre) || write_all(fd, o->header->s, o->header->n) ||
			       write_data(fd, o->t, tir_tensor_numel(o->t))
		       ? -1
		       : 0;
}

/* Write t as .npy (write_file: never a half file). */
int tir_npy_save(const char *path, const struct tir_tensor *t, struct tir_err *err)
{
	int rc = savable(path, t, err);
	if (rc)
		return rc;
	if (t->dtype == TIR_DTYPE_BF16)
		return ferr(err, TIR_EDATA, path,
			    "bf16 has no .npy dtype (NumPy has none); save it as .safetensors, or cast it");
	struct tir_str header = {0};
	unsigned char pre[12];
	size_t npre;
	npy_header(t, &header, pre, &npre);
	if (header.oom) {
		tir_str_free(&header);
		return ferr(err, TIR_ENOMEM, path, "out of memory");
	}
	struct npy_out o = {t, pre, npre, &header};
	rc = write_file(path, npy_body, &o, err);
	tir_str_free(&header);
	return rc;
}

/* ---- writing .safetensors ---- */

struct st_out {
	const struct tir_tensor *const *ts;
	int n;
	const char *header;
	size_t hlen;              /* with its padding */
};

static int st_body(int fd, const void *ctx)
{
	const struct st_out *o = ctx;
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)o->hlen >> (8 * i));
	size_t text = strlen(o->header);
	static const char spaces[8] = "        ";
	if (write_all(fd, len, 8) || write_all(fd, o->header, text) ||
	    write_all(fd, spaces, o->hlen - text))
		return -1;
	for (int i = 0; i < o->n; i++)
		if (write_data(fd, o->ts[i], tir_tensor_numel(o->ts[i])))
			return -1;
	return 0;
}

/* Write n named tensors as one .safetensors file, in the order given:
 * names unique and not "__metadata__"; the header padded with spaces to a
 * multiple of 8 bytes, as the format's own writer does. */
int tir_safetensors_save(const char *path, const char *const *names, const struct tir_tensor *const *ts,
			 int n, struct tir_err *err)
{
	static const char *const stname[TIR_DTYPE_COUNT] = {
		[TIR_DTYPE_BOOL] = "BOOL", [TIR_DTYPE_I32] = "I32", [TIR_DTYPE_I64] = "I64",
		[TIR_DTYPE_F32] = "F32", [TIR_DTYPE_F64] = "F64", [TIR_DTYPE_F16] = "F16",
		[TIR_DTYPE_BF16] = "BF16", [TIR_DTYPE_I8] = "I8", [TIR_DTYPE_U8] = "U8",
		[TIR_DTYPE_I16] = "I16",
	};
	int rc = tir_json_ready(err);
	if (rc)
		return rc;
	json_t *root = json_object();
	uint64_t at = 0;
	for (int i = 0; root && i < n && !rc; i++) {
		if ((rc = savable(path, ts[i], err)))
			break;
		if (!strcmp(names[i], "__metadata__") || json_object_get(root, names[i])) {
			rc = ferr(err, TIR_EDATA, path, "tensor '%s' %s", names[i],
				  strcmp(names[i], "__metadata__") ? "given twice" : "is a reserved name");
			break;
		}
		uint64_t bytes = (uint64_t)tir_tensor_numel(ts[i]) * tir_dtype_size(ts[i]->dtype);
		json_t *shape = json_array();
		for (int d = 0; shape && d < ts[i]->rank; d++)
			json_array_append_new(shape, json_integer(ts[i]->shape[d]));
		json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", stname[ts[i]->dtype], "shape", shape,
				      "data_offsets", (json_int_t)at, (json_int_t)(at + bytes));
		if (!e || json_object_set_new(root, names[i], e))
			rc = ferr(err, TIR_ENOMEM, path, "out of memory");
		at += bytes;
	}
	char *text = !rc && root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (rc)
		return rc;
	if (!text)
		return ferr(err, TIR_ENOMEM, path, "out of memory");
	size_t len = strlen(text);
	struct st_out o = {ts, n, text, (len + 7) / 8 * 8};
	rc = write_file(path, st_body, &o, err);
	free(text);
	return rc;
}

/* ---- tir inspect ---- */

static void shape_str(const struct tir_file_entry *e, char *buf, size_t cap)
{
	size_t at = 0;
	at += (size_t)snprintf(buf, cap, "[");
	for (int d = 0; d < e->rank && at < cap; d++)
		at += (size_t)snprintf(buf + at, cap - at, "%s%lld", d ? ", " : "", (long long)e->shape[d]);
	if (at < cap)
		snprintf(buf + at, cap - at, "]");
}

char *tir_file_inspect(const char *path, struct tir_err *err)
{
	struct tir_file_listing l;
	if (tir_file_list(path, &l, err))
		return NULL;
	/* columns: name, dtype, shape, bytes, offset, tir (what it loads as) */
	static const char *const head[6] = {"name", "dtype", "shape", "bytes", "offset", "tir"};
	size_t w[6];
	for (int c = 0; c < 6; c++)
		w[c] = strlen(head[c]);
	char (*cell)[6][96] = calloc(l.n ? l.n : 1, sizeof *cell);
	struct tir_str out = {0};
	uint64_t data = 0;
	if (!cell)
		goto oom;
	for (size_t i = 0; i < l.n; i++) {
		const struct tir_file_entry *e = &l.e[i];
		snprintf(cell[i][0], 96, "%s", e->name ? e->name : "-");
		snprintf(cell[i][1], 96, "%s", e->dtype);
		shape_str(e, cell[i][2], 96);
		snprintf(cell[i][3], 96, "%llu", (unsigned long long)e->bytes);
		snprintf(cell[i][4], 96, "%llu", (unsigned long long)e->offset);
		snprintf(cell[i][5], 96, "%s", e->loads ? tir_dtype_name(e->dt) : "-");
		for (int c = 0; c < 6; c++)
			w[c] = strlen(cell[i][c]) > w[c] ? strlen(cell[i][c]) : w[c];
		data += e->bytes;
	}
	tir_str_addf(&out, "%s: %s, %zu tensor%s, %llu bytes of data, header %llu bytes\n", path, l.format,
		     l.n, l.n == 1 ? "" : "s", (unsigned long long)data, (unsigned long long)l.header_bytes);
	for (size_t i = 0; i <= l.n; i++) {
		for (int c = 0; c < 6; c++) {
			const char *v = i ? cell[i - 1][c] : head[c];
			bool right = c == 3 || c == 4;
			if (c == 5)
				tir_str_addf(&out, "%s\n", v);
			else if (right)
				tir_str_addf(&out, "%*s  ", (int)w[c], v);
			else
				tir_str_addf(&out, "%-*s  ", (int)w[c], v);
		}
	}
	if (l.metadata)
		tir_str_addf(&out, "__metadata__: %s\n", l.metadata);
	if (out.oom)
		goto oom;
	free(cell);
	tir_file_listing_free(&l);
	return out.s;
oom:
	free(cell);
	tir_str_free(&out);
	tir_file_listing_free(&l);
	tir_errf(err, TIR_ENOMEM, NULL, "%s: out of memory", path);
	return NULL;
}

int tir_load_type_from_file(void *ud, const char *path, const char *name, enum tir_dtype *dtype,
			    int *rank, int64_t *shape, struct tir_err *err)
{
	struct tir_file_info info;
	int rc = tir_file_info(path, name, &info, err);
	if (rc)
		return rc;
	*dtype = info.dtype;
	*rank = info.rank;
	memcpy(shape, info.shape, sizeof(int64_t) * (size_t)info.rank);
	return 0;
}
