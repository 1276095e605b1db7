/*
 * ops.c — the op table built from ops.def: names, kinds, the fuser's and
 * vmath's columns, and each op's signature read once from its text into
 * parameters and default values.
 * Lookup by name for the parser.  No shape logic here (that is check.c).
 */
#include "ir.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ops.def's columns.  The rest of an op's row (its signature, read) is
 * made at the op's first tir_op, into table, which is zero until then:
 * filled here, table's pointers were relocated, all 26 pages of it written,
 * at every start of tir. */
static const struct {
	const char *name, *sig;
	enum tir_kind kind;
	enum tir_fuse fuse;
	uint8_t cost;
	enum tir_vec vec;
} rows[TIR_OP_COUNT] = {
#define X(e, nm, k, s, rule, fz, c, v) \
	[TIR_OP_##e] = {.name = nm, .kind = TIR_KIND_##k, .sig = s, .fuse = TIR_FUSE_##fz, .cost = c, .vec = TIR_VEC_##v},
#include "ops.def"
#undef X
};
static struct tir_opdef table[TIR_OP_COUNT];

static_assert(TIR_OP_COUNT < 256, "op ids fit a byte");
static_assert(TIR_DTYPE_COUNT == 10, "ten dtypes");

static int64_t default_ints[TIR_OP_COUNT][TIR_MAX_PARAMS][2];

static const char *const attr_kind_names[TIR_ATTR_KIND_COUNT] = {
	"int", "float", "num", "bool", "dtype", "shape", "axes", "pair", "pads", "str", "word", "strs",
};

static int attr_kind_from(const char *s, size_t n)
{
	for (int i = 0; i < TIR_ATTR_KIND_COUNT; i++)
		if (strlen(attr_kind_names[i]) == n && !memcmp(attr_kind_names[i], s, n))
			return i;
	return -1;
}

/* A default's text, read into a value.  The texts are ours (ops.def), so a
 * malformed one is an internal error. */
static void parse_default(enum tir_op op, int slot, const struct tir_param *prm, struct tir_attr *a)
{
	const char *d = prm->deflt;
	char *end;
	a->set = true;
	switch (prm->kind) {
	case TIR_ATTR_INT:
		a->i = strtoll(d, &end, 10);
		TIR_ASSERT(*end == 0);
		break;
	case TIR_ATTR_FLOAT:
	case TIR_ATTR_NUM:
		a->f = strtod(d, &end);
		TIR_ASSERT(*end == 0);
		a->is_int = strchr(d, '.') == NULL && strchr(d, 'e') == NULL;
		a->i = (int64_t)a->f;
		break;
	case TIR_ATTR_BOOL:
		TIR_ASSERT(!strcmp(d, "true") || !strcmp(d, "false"));
		a->i = !strcmp(d, "true");
		break;
	case TIR_ATTR_DTYPE:
		a->i = tir_dtype_from_name(d, strlen(d));
		TIR_ASSERT(a->i >= 0);
		break;
	case TIR_ATTR_PAIR:
		default_ints[op][slot][0] = default_ints[op][slot][1] = strtoll(d, &end, 10);
		TIR_ASSERT(*end == 0);
		a->n = 2;
		a->v = default_ints[op][slot];
		break;
	case TIR_ATTR_WORD:
	case TIR_ATTR_STR:
		a->s = d;
		break;
	default:
		TIR_ASSERT(!"no default for this attribute kind");
	}
}

/* Read "x, axis:int=-1, bias?" into params.  Our own text: asserts. */
static void parse_sig(enum tir_op op, struct tir_opdef *d)
{
	static char buf[TIR_OP_COUNT][160];
	char *s = buf[op];
	TIR_ASSERT(strlen(d->sig) < sizeof buf[op]);
	strcpy(s, d->sig);
	d->nattr = 0;
	d->nres = 1;
	char *arrow = strstr(s, "->");
	if (arrow) { /* several results: their names */
		*arrow = 0;
		d->nres = 0;
		char *save;
		for (char *tok = strtok_r(arrow + 2, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
			TIR_ASSERT(d->nres < TIR_MAX_RESULTS);
			size_t tl = strlen(tok);
			if (tl > 3 && !strcmp(tok + tl - 3, "...")) { /* as many as the call says */
				d->res_var = true;
				d->res[d->nres++] = tok;
				d->res[d->nres++] = tok;
				break;
			}
			d->res[d->nres++] = tok;
		}
		TIR_ASSERT(d->nres >= 2);
	}
	char *save;
	for (char *tok = strtok_r(s, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		TIR_ASSERT(d->nparams < TIR_MAX_PARAMS);
		struct tir_param *p = &d->params[d->nparams];
		char *colon = strchr(tok, ':');
		char *eq = strchr(tok, '=');
		if (eq)
			*eq++ = 0;
		size_t len = strlen(tok);
		if (!colon) {
			p->tensor = true;
			if (tok[len - 1] == '?')
				p->optional = true, tok[--len] = 0;
			else if (tok[len - 1] == '*')
				p->list = true, tok[--len] = 0;
			p->name = tok;
			d->attr_of_param[d->nparams] = -1;
			d->ntensor++;
		} else {
			*colon = 0;
			p->name = tok;
			char *kind = colon + 1;
			size_t kl = strlen(kind);
			if (kind[kl - 1] == '?')
				p->optional = true, kind[--kl] = 0;
			int k = attr_kind_from(kind, kl);
			TIR_ASSERT(k >= 0);
			p->kind = (enum tir_attr_kind)k;
			p->deflt = eq;
			int slot = d->nattr++;
			d->attr_of_param[d->nparams] = slot;
			if (eq)
				parse_default(op, slot, p, &d->defaults[slot]);
		}
		d->nparams++;
	}
}

static bool callable(int op)
{
	return op != TIR_OP_CONST && op != TIR_OP_INPUT && op != TIR_OP_RESULT;
}

/* The callable ops by name: open addressing over op + 1 (0 is empty), at
 * most half full.  Every call in a program looks its name up here. */
#define BY_NAME 512
static uint8_t by_name[BY_NAME];
static uint8_t name_len[TIR_OP_COUNT];
static_assert(TIR_OP_COUNT * 2 <= BY_NAME, "the name table is at most half full");

static unsigned name_hash(const char *s, size_t n)
{
	unsigned h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static bool table_built;   /* set (release) once build_table is done */

/* The names' lookup, built at the first lookup by name. */
static void build_table(void)
{
	for (int op = 0; op < TIR_OP_COUNT; op++) {
		name_len[op] = (uint8_t)strlen(rows[op].name);
		if (!callable(op))
			continue;
		unsigned i = name_hash(rows[op].name, name_len[op]) % BY_NAME;
		while (by_name[i])
			i = (i + 1) % BY_NAME;
		by_name[i] = (uint8_t)(op + 1);
	}
	__atomic_store_n(&table_built, true, __ATOMIC_RELEASE);
}

static inline void table_ready(void)
{
	if (!__atomic_load_n(&table_built, __ATOMIC_ACQUIRE))
		pthread_once(&table_once, build_table);
}

/* Each op's signature is read at the op's first tir_op, not all of them at
 * start: reading the 250-odd signatures took a fifth of the instructions of
 * a one-line program's run, which asks for a handful of ops. */
static bool sig_read[TIR_OP_COUNT];   /* set (release) once op's is read */
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

static void read_sig(enum tir_op op)
{
	pthread_mutex_lock(&sig_lock);
	if (!sig_read[op]) {
		struct tir_opdef *d = &table[op];
		d->name = rows[op].name;
		d->sig = rows[op].sig;
		d->kind = rows[op].kind;
		d->fuse = rows[op].fuse;
		d->cost = rows[op].cost;
		d->vec = rows[op].vec;
		parse_sig(op, d);
		__atomic_store_n(&sig_read[op], true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sig_lock);
}

/* tir_op is asked for every node by every pass: after the op's first
 * time, one load. */
const struct tir_opdef *tir_op(enum tir_op op)
{
	TIR_ASSERT((unsigned)op < TIR_OP_COUNT);
	if (!__atomic_load_n(&sig_read[op], __ATOMIC_ACQUIRE))
		read_sig(op);
	return &table[op];
}

int tir_op_lookup(const char *s, size_t n)
{
	table_ready();
	for (unsigned i = name_hash(s, n) % BY_NAME; by_name[i]; i = (i + 1) % BY_NAME) {
		int op = by_name[i] - 1;
		if (name_len[op] == n && !memcmp(rows[op].name, s, n))
			return op;
	}
	return -1;
}

int tir_op_attr_index(enum tir_op op, const char *name)
{
	const struct tir_opdef *d = tir_op(op);
	for (int i = 0; i < d->nparams; i++) {
		const struct tir_param *prm = &d->params[i];
		if (!prm->tensor && prm->name[0] == name[0] && !strcmp(prm->name, name))
			return d->attr_of_param[i];
	}
	return -1;
}

/* Levenshtein distance, bounded to short names (suggestions only). */
int tir_edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	if (na > 64 || nb > 64)
		return 1000;
	int prev[65], cur[65];
	for (size_t j = 0; j <= nb; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= na; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= nb; j++) {
			int c = prev[j - 1] + (a[i - 1] != b[j - 1]);
			int del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(int) * (nb + 1));
	}
	return prev[nb];
}

const char *tir_op_suggest(const char *s, size_t n)
{
	table_ready();
	const char *best = NULL;
	int bestd = n <= 3 ? 1 : n <= 6 ? 2 : 3;
	for (int op = 0; op < TIR_OP_COUNT; op++) {
		if (!callable(op))
			continue;
		const char *nm = rows[op].name;
		int d = tir_edit_distance(s, n, nm, strlen(nm));
		if (d <= bestd && (!best || d < bestd)) {
			best = nm;
			bestd = d;
		}
	}
	return best;
}

static const char *const kind_names[TIR_KIND_COUNT] = {
	"creation", "elementwise", "reduce", "movement", "matmul", "nn", "device", "linalg",
};

const char *tir_kind_name(enum tir_kind k)
{
	return (unsigned)k < TIR_KIND_COUNT ? kind_names[k] : "?";
}

char *tir_ops_help(void)
{
	struct tir_str out = {0};
	for (int k = 0; k < TIR_KIND_COUNT; k++) {
		tir_str_addf(&out, "%s:\n", tir_kind_name((enum tir_kind)k));
		for (int op = 0; op < TIR_OP_COUNT; op++) {
			const struct tir_opdef *d = tir_op((enum tir_op)op);
			if (d->kind != (enum tir_kind)k || !callable(op))
				continue;
			tir_str_addf(&out, "  %-12s(", d->name);
			for (int i = 0; i < d->nparams; i++) {
				const struct tir_param *p = &d->params[i];
				tir_str_addf(&out, "%s%s%s", i ? ", " : "", p->name,
					     p->list ? "*" : p->optional ? "?" : "");
				if (!p->tensor)
					tir_str_addf(&out, ":%s", attr_kind_names[p->kind]);
				if (p->deflt)
					tir_str_addf(&out, "=%s", p->deflt);
			}
			tir_str_add(&out, ")", 1);
			for (int i = 0; d->nres > 1 && i < (d->res_var ? 1 : d->nres); i++)
				tir_str_addf(&out, "%s%s", i ? ", " : " -> ", d->res[i]);
			tir_str_add(&out, "\n", 1);
		}
	}
	return out.s;
}
