/*
 * ir.h — lib/ir's one internal header: the arena, the op table, tokens, the
 * graph and the checker.  Other subsystems (exec, fusion, net) read the graph
 * through this header and nothing else of lib/ir.
 *
 * Vocabulary: a tensor type is a dtype plus shape[rank] (elements per axis).
 * A node is one op application; the graph is the nodes in creation order,
 * which is a topological order.
 */
#ifndef TIR_IR_H
#define TIR_IR_H

#include "../tir.h"

#include <assert.h>
#include <stdarg.h>

/* Internal invariants only; never reachable from user input. */
#define TIR_ASSERT(c) \
	((c) ? (void)0 : tir_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void tir_assert_fail(const char *what, const char *file, int line);

/* ---- arena: everything of one program lives here and goes in one call ---- */

struct tir_arena_block;
struct tir_arena {
	struct tir_arena_block *head;
	size_t used_total;
};
void *tir_arena_alloc(struct tir_arena *a, size_t n);      /* zeroed, 16-aligned; NULL on OOM */
/* The same 8-aligned, and not aligned at all (bytes: a name's text): for
 * an arena all of whose pieces are taken so, never mixed with the other
 * kinds (a program's nodes; its names), where 16-byte steps would be a
 * tenth of what a big program's statements hold. */
void *tir_arena_alloc8(struct tir_arena *a, size_t n);
void *tir_arena_alloc1(struct tir_arena *a, size_t n);
/* Room for n bytes more in one block, made now (a big program's parse says
 * what it will need: one block of huge pages, not a run of small ones);
 * below 512 KiB it does nothing, and from there to 2 MiB it makes one huge
 * page.  0, or -TIR_ENOMEM. */
int tir_arena_reserve(struct tir_arena *a, size_t n);
char *tir_arena_strndup(struct tir_arena *a, const char *s, size_t n);
void tir_arena_free(struct tir_arena *a);

/* (growable vectors and strings: tir_grow, struct tir_str in tir.h) */

/* Arrays a big program makes big (its nodes, statements and names): from
 * TIR_PAGES_MIN (512 KiB) up their memory is whole huge pages mapped for them (the kernel
 * clears and maps one where it would 512 small ones), below that the
 * allocator's.  tir_pages_alloc: n bytes, zeroed, NULL when out of memory;
 * free with tir_pages_free(p, n), n as allocated.  tir_grow_pages: as
 * tir_grow, for an array freed with tir_pages_free(p, cap * elem). */
#define TIR_PAGES_MIN ((size_t)512 * 1024)
void *tir_pages_alloc(size_t n);
void tir_pages_free(void *p, size_t n);
/* n rounded up to whole huge pages: what a block of n from TIR_PAGES_MIN
 * up (tir_pages_alloc, tir_pages_take) holds */
size_t tir_pages_round(size_t n);
int tir_grow_pages(void **p, size_t *cap, size_t need, size_t elem);
/* Blocks of whole huge pages kept for the next ask of the same size (a
 * plan's or a run's arrays made again and again).  tir_pages_take: a kept
 * block of n rounded up to huge pages (*dirty: written before, not zero),
 * else a new one (zero); NULL when out of memory.  tir_pages_give: back,
 * kept (a few, 32 MiB in all) or freed; n as taken.  tir_pages_drop_kept:
 * the kept ones freed (tir_mem_trim); returns their bytes. */
void *tir_pages_take(size_t n, bool *dirty);
void tir_pages_give(void *p, size_t n);
size_t tir_pages_drop_kept(void);

/* The free room of the arena's current block: its start, and *n its bytes
 * (NULL and 0 when it has none). */
void *tir_arena_room(const struct tir_arena *a, size_t *n);

/* Pages faulted in ahead of their use, by a thread of their own
 * (prefault.c): tir_prefault(p, n) asks for [p, p + n), which the caller
 * is about to write front to back (their contents never change; best
 * effort, ranges below TIR_PREFAULT_MIN and kernels without
 * MADV_POPULATE_WRITE do nothing).  tir_prefault_cancel: what is still
 * queued of [p, p + n) dropped (called as such memory is freed).
 * tir_prefault_stats: the bytes faulted in so far, after waiting for the
 * queue to drain when wait (tests). */
#define TIR_PREFAULT_MIN ((size_t)1024 * 1024)
void tir_prefault(const void *p, size_t n);
void tir_prefault_cancel(const void *p, size_t n);
uint64_t tir_prefault_stats(bool wait);

/* ---- the op table ---- */

enum tir_op {
#define X(e, ...) TIR_OP_##e,
#include "ops.def"
#undef X
	TIR_OP_COUNT
};

enum tir_kind {
	TIR_KIND_CREATE,
	TIR_KIND_ELEMWISE,
	TIR_KIND_REDUCE,
	TIR_KIND_MOVEMENT,
	TIR_KIND_MATMUL,
	TIR_KIND_NN,
	TIR_KIND_DEVICE,
	TIR_KIND_LINALG,      /* LAPACK's factorizations and solvers (lib/exec/linalg.c) */
	TIR_KIND_COUNT
};

/* ops.def's fuse column: how the fuser takes the op into a kernel. */
enum tir_fuse {
	TIR_FUSE_NO,          /* never: it runs by its reference kernel alone */
	TIR_FUSE_FLOAT,       /* elementwise, float in and out, in the kernel's dtype */
	TIR_FUSE_MASK,        /* a comparison: 1 or 0 of the kernel's dtype, never its result */
	TIR_FUSE_SELECT,      /* FLOAT, operand 0 a condition tested against 0 (where) */
	TIR_FUSE_CAST,        /* a conversion: its operand is widened as it is read */
	TIR_FUSE_REDUCE,      /* a reduction the kernels fold over trailing axes */
	TIR_FUSE_VIEW,        /* a movement that is a view: strides only */
	TIR_FUSE_RESHAPE,     /* a view that keeps the elements' order */
	TIR_FUSE_COUNT
};

/* ops.def's vec column: the op's float functions over arrays (vmath.h). */
enum tir_vec {
	TIR_VEC_NONE,
	TIR_VEC_UNARY,        /* f(dst, x, n) */
	TIR_VEC_BINARY,       /* f(dst, a, b, n) */
	TIR_VEC_BINARY_SV,    /* BINARY, and forms with a or b one value */
	TIR_VEC_COUNT
};

enum tir_attr_kind {
	TIR_ATTR_INT,
	TIR_ATTR_FLOAT,
	TIR_ATTR_NUM,
	TIR_ATTR_BOOL,
	TIR_ATTR_DTYPE,
	TIR_ATTR_SHAPE,
	TIR_ATTR_AXES,
	TIR_ATTR_PAIR,
	TIR_ATTR_PADS,
	TIR_ATTR_STR,
	TIR_ATTR_WORD,
	TIR_ATTR_STRS,        /* a list of strings: n of them in v's place, as ss */
	TIR_ATTR_KIND_COUNT
};

#define TIR_MAX_RESULTS 16   /* results of one op: u, s, vt = svd(a); split's sections */
#define TIR_MAX_PARAMS 8
#define TIR_MAX_STRS 64      /* strings in a strs attribute (shard's devices) */

struct tir_param {
	const char *name;
	bool tensor;          /* an operand, not an attribute */
	bool list;            /* xs*: a list of operands */
	bool optional;        /* may be absent (unset) */
	enum tir_attr_kind kind;
	const char *deflt;    /* default's text, or NULL */
};

/* The value of one attribute.  Lists live in the arena. */
struct tir_attr {
	bool set;
	bool is_list;         /* written as a list (axes, pair): print it so */
	bool is_int;          /* num: an integer literal */
	int n;                /* shape, axes, pair (2), pads (2 per axis) */
	int64_t i;            /* int, bool, dtype, num when is_int */
	double f;             /* float, num */
	int64_t *v;
	const char *s;        /* str, word */
	const char **ss;      /* strs: n strings; str: when set, ss[0] is the text
			       * as written and s what it means (load's path
			       * joined to the program's folder) */
};

struct tir_opdef {
	const char *name;
	enum tir_kind kind;
	const char *sig;
	enum tir_fuse fuse;
	uint8_t cost;         /* per element, as bytes moved (ops.def) */
	enum tir_vec vec;
	int nparams;
	int ntensor;          /* how many of the params are operands */
	struct tir_param params[TIR_MAX_PARAMS];
	int attr_of_param[TIR_MAX_PARAMS];   /* index into node->attr, -1 for operands */
	int nattr;
	struct tir_attr defaults[TIR_MAX_PARAMS];   /* parsed defaults, by attr index */
	/* Several results ("a -> q, r" in ops.def): the call's node holds them
	 * all, packed (tir_node_results), and each is read out by a RESULT node
	 * made with it; nres 1 for every other op.  res_var: the number is
	 * the call's own ("-> parts..." in ops.def, as split's sections), at
	 * least 2: tir_node_nres says it for a node. */
	int nres;
	bool res_var;
	const char *res[TIR_MAX_RESULTS];   /* the results' names, for help and errors */
};

/* The table from ops.def (thread-safe; each op's signature read at its first call). */
const struct tir_opdef *tir_op(enum tir_op op);
/* Lookup of a callable op by name; -1 if not whitelisted. */
int tir_op_lookup(const char *s, size_t n);
/* The closest callable op name, for "did you mean"; NULL if none is close. */
const char *tir_op_suggest(const char *s, size_t n);
/* Index of the attribute named `name` of op, or -1. */
int tir_op_attr_index(enum tir_op op, const char *name);
const char *tir_kind_name(enum tir_kind k);
/* Levenshtein distance of two short strings (1000 past 64 bytes). */
int tir_edit_distance(const char *a, size_t na, const char *b, size_t nb);

/* ---- types ---- */

/* A type as a value: what the checker computes with. */
struct tir_type {
	uint8_t dtype;        /* enum tir_dtype */
	uint8_t rank;
	bool weak;            /* a scalar literal: takes the other operand's dtype */
	int64_t shape[TIR_MAX_RANK];
};

/* A type as a node holds it: the same fields, the shape apart (rank of
 * them, in the program's node arena, often an operand's own; for rank 0
 * tir_shape0, so that a copy of rank axes never reads from NULL): 16
 * bytes where a struct tir_type is 72, in each of a long program's nodes.  Read it as a struct tir_type (n->type.shape[i]);
 * tir_ntype_value gives one, tir_node_set_type writes one. */
struct tir_ntype {
	uint8_t dtype;
	uint8_t rank;
	bool weak;
	const int64_t *shape;
};

extern const int64_t tir_shape0[1];

/* t into *v, its axes past rank left as they were (the checker's way,
 * once or twice a node: a 72-byte struct cleared costs more than the rest
 * of a scalar's check). */
static inline void tir_ntype_get(const struct tir_ntype *t, struct tir_type *v)
{
	v->dtype = t->dtype;
	v->rank = t->rank;
	v->weak = t->weak;
	for (int i = 0; i < t->rank; i++)
		v->shape[i] = t->shape[i];
}

/* t as a struct tir_type, its axes past rank 0 */
static inline struct tir_type tir_ntype_value(const struct tir_ntype *t)
{
	struct tir_type v = {0};
	tir_ntype_get(t, &v);
	return v;
}

/* The functions on types read their fields by name, so that each takes
 * either kind of type: a struct tir_type or a node's (&n->type). */
int64_t tir_shape_numel(int rank, const int64_t *shape);
bool tir_shape_bounded(int rank, const int64_t *shape);
bool tir_shape_equal(int dta, int ra, const int64_t *a, int dtb, int rb, const int64_t *b);
char *tir_shape_str(int dtype, int rank, const int64_t *shape, char *buf, size_t n);
#define tir_type_numel(t) tir_shape_numel((t)->rank, (t)->shape)
/* Whether the axes' product, a 0 counting as 1, is within TIR_MAX_ELEMS. */
#define tir_type_bounded(t) tir_shape_bounded((t)->rank, (t)->shape)
/* dtype and shape (not weakness) */
#define tir_type_equal(a, b) tir_shape_equal((a)->dtype, (a)->rank, (a)->shape, (b)->dtype, (b)->rank, (b)->shape)
/* "f32[2, 3]" into buf; returns buf. */
#define tir_type_str(t, buf, n) tir_shape_str((t)->dtype, (t)->rank, (t)->shape, (buf), (n))
#define TIR_TYPE_STRLEN 160

/* ---- sources and tokens ---- */

struct tir_source {
	const char *name;     /* file name for messages */
	const char *text;     /* a NUL-terminated copy, or the caller's text
			       * as it is (TIR_PARSE_BORROW): read by length */
	uint32_t len;
	struct tir_source *next;
};

enum tir_tok {
	TIR_TOK_EOF,
	TIR_TOK_NEWLINE,      /* also ';' */
	TIR_TOK_NAME,
	TIR_TOK_INT,
	TIR_TOK_FLOAT,
	TIR_TOK_STRING,
	TIR_TOK_LPAREN, TIR_TOK_RPAREN,
	TIR_TOK_LBRACKET, TIR_TOK_RBRACKET,
	TIR_TOK_COMMA, TIR_TOK_COLON, TIR_TOK_ASSIGN,
	TIR_TOK_PLUS, TIR_TOK_MINUS, TIR_TOK_STAR, TIR_TOK_SLASH, TIR_TOK_AT,
	TIR_TOK_LBRACE, TIR_TOK_RBRACE, /* a block: not brackets (newlines in it end statements) */
	/* Python's operators (docs/language.md, "Operators") */
	TIR_TOK_STARSTAR, TIR_TOK_SLASHSLASH, TIR_TOK_PERCENT,
	TIR_TOK_LT, TIR_TOK_LE, TIR_TOK_GT, TIR_TOK_GE, TIR_TOK_EQ, TIR_TOK_NE,
	TIR_TOK_AMP, TIR_TOK_PIPE, TIR_TOK_TILDE,
	TIR_TOK_DOT, TIR_TOK_ELLIPSIS,   /* x.T; x[..., 0] */
	TIR_TOK_ERROR,        /* the lexer's message is in the lexer */
	TIR_TOK_COUNT
};

struct tir_token {
	enum tir_tok kind;
	uint32_t off, len;    /* bytes into the source */
	uint32_t line, col;
	int64_t ival;         /* INT */
	double fval;          /* FLOAT */
};

#define TIR_LEX_ERRLEN 256

struct tir_lexer {
	const struct tir_source *src;
	const char *p, *end;
	uint32_t line;
	const char *line_start;
	bool line_ascii;      /* no byte of the line so far is a UTF-8 continuation */
	const char *col_p;    /* column cache: col_v is the column of col_p */
	uint32_t col_v;
	int depth;            /* open brackets: newlines inside are ignored */
	struct tir_token open[TIR_MAX_DEPTH + 1]; /* where each open bracket is */
	char errmsg[TIR_LEX_ERRLEN];
};

int tir_lex_init(struct tir_lexer *lx, const struct tir_source *src);
void tir_lex_fini(struct tir_lexer *lx);
/* Next token; on TIR_TOK_ERROR, lx->errmsg says what. */
struct tir_token tir_lex_next(struct tir_lexer *lx);
/* The same, written into *t (the parser's way: no copy of the token). */
void tir_lex_scan(struct tir_lexer *lx, struct tir_token *t);
/* tir_lex_scan without its quick way for the common tokens: the general
 * scan alone, which must give the same tokens (test_lex compares them). */
void tir_lex_scan_general(struct tir_lexer *lx, struct tir_token *t);
const char *tir_tok_name(enum tir_tok t);
/* Code-point column of byte offset `off` in src (1-based) and its line. */
void tir_loc_of(const struct tir_source *src, uint32_t off, struct tir_loc *loc);

/* ---- the graph ---- */

struct tir_name_link {
	const char *name;
	struct tir_name_link *next;
};

/* Where an operand was written, in the source of its node's loc (an
 * operand is written beside its op, in the same text): its byte offset
 * alone, 4 bytes where a struct tir_loc takes 24; its line and column are
 * counted from the node's when asked (an error's). */
struct tir_oploc {
	uint32_t at;              /* the offset + 1; 0: not known (the node's loc stands) */
};

/* The place of byte off of at's source, its line counted from at's (so
 * a REPL chunk's or a function body's lines stay theirs) and its column
 * in code points from its line's start, as the lexer counts them. */
void tir_loc_near(const struct tir_loc *at, uint32_t off, struct tir_loc *loc);

/* The small fields come together so that none pads: a program holds one
 * node per operation (120 bytes on 64-bit; parse.c puts its attr, in and
 * inloc right behind it, in the same arena piece).  It holds what the
 * program says: where a value runs is lib/place's answer, not the node's. */
struct tir_node {
	enum tir_op op;
	uint32_t id;              /* index in program->nodes */
	struct tir_ntype type;
	uint16_t nin;
	bool in_print;            /* made by a print statement (fmt inlines it) */
	bool known_int;           /* CONST: an integer known when checked (a loop's
				   * index, an int parameter, or + - * of them) */
	bool lit_shared;          /* CONST: a weak literal the parser gave to more
				   * than one place it is written (never bound to a name) */
	uint32_t uses;            /* operand edges pointing here */
	uint32_t stmt;            /* index of the statement that made it */
	struct tir_attr *attr;    /* tir_op(op)->nattr of them */
	struct tir_loc loc;       /* the op's token */
	/* the names ever bound to it: the first, and the others newest first
	 * (most nodes have one name: it takes no link) */
	const char *name;
	struct tir_name_link *names;
	const char *ref_name;     /* the name it was last referred to by */
	/* A node with operands holds them; INPUT and CONST, which have none,
	 * hold their value in the same bytes (24 a node, of 100,000 in a
	 * long program): read the one the op says. */
	union {
		struct {
			struct tir_node **in;
			struct tir_oploc *inloc;   /* where each operand was written (tir_node_inloc) */
		};
		struct {
			/* INPUT: its name.  CONST: a weak scalar keeps its
			 * literal (ival, fval); a tensor literal its data */
			union {
				const char *input_name;
				int64_t ival;
			};
			double fval;
			void *data;       /* arena; numel * dtype size, row-major */
		};
	};
};

/* Where n's operand i was written, as a struct tir_loc (n's own loc when
 * that is not known). */
static inline struct tir_loc tir_node_inloc(const struct tir_node *n, int i)
{
	const struct tir_oploc *o = &n->inloc[i];
	if (!o->at || !n->loc.src)
		return n->loc;
	struct tir_loc loc;
	tir_loc_near(&n->loc, o->at - 1, &loc);
	return loc;
}

/* Note loc as where n's operand i was written: known only when it is in
 * n's source (as it always is when parsed), else n's loc stands. */
static inline void tir_node_set_inloc(struct tir_node *n, int i, const struct tir_loc *loc)
{
	bool same = loc->src && loc->src == n->loc.src;
	n->inloc[i].at = same ? loc->off + 1 : 0; /* (a source is at most 256 MiB) */
}

enum tir_stmt_kind { TIR_STMT_INPUT, TIR_STMT_BIND, TIR_STMT_PRINT };

struct tir_print_item {
	struct tir_node *node;
	const char *header;       /* canonical text of the printed expression; as
				   * written (blanks folded) when it calls a function */
	struct tir_loc loc;
	bool called;              /* it calls a function: fmt renders node, not header */
};

/* 48 bytes: the small fields first, where none pads (a program of 100,000
 * statements holds 100,000 of them) */
struct tir_stmt {
	enum tir_stmt_kind kind;
	uint16_t nitems;          /* PRINT (at most 64) */
	/* BIND of `a, b = op(...)`: one statement per name, consecutive, each
	 * binding its RESULT node; nres how many (0: an ordinary binding) and
	 * res which this one is (the first writes the line: print.c) */
	uint8_t nres, res;
	/* where it starts (its name's token): a struct tir_loc without its
	 * column, which tir_stmt_loc counts when asked */
	uint32_t off, line;
	const struct tir_source *src;
	const char *name;         /* INPUT, BIND */
	struct tir_node *node;    /* INPUT, BIND: the value bound */
	struct tir_print_item *items;
};

/* Where statement s starts, as a struct tir_loc. */
static inline struct tir_loc tir_stmt_loc(const struct tir_stmt *s)
{
	struct tir_loc at = {.src = s->src, .off = s->off, .line = s->line}, loc = at;
	if (s->src)
		tir_loc_near(&at, s->off, &loc);
	return loc;
}

/* 40 bytes (one a name: a long program holds 100,000) */
struct tir_binding {
	const char *name;         /* arena */
	struct tir_node *node;    /* NULL: poisoned by an earlier error, or unbound */
	const char *str;          /* a name for a string (ck = "m.npy"): its value
				   * (arena); node is NULL then */
	uint32_t owner;           /* 0: a name of the program; else the call (its
				   * serial) whose local name this is, renamed */
	uint32_t stmt;            /* when node is set: the statement that bound it
				   * (index into program->stmts; where it was bound
				   * is that statement's loc) */
	uint32_t hash;            /* of the name (the index's, parse.c) */
	bool unbound;             /* rolled back (REPL): as if never bound */
	uint16_t len;             /* of the name (at most 255 bytes: lex.c and
				   * local_binding refuse longer), in what was
				   * padding: compared before its bytes */
};

/* A function: its text is expanded again at each call (parse.c). */
struct tir_func {
	const char *name;         /* arena */
	int nparams;
	const char *params[TIR_MAX_FN_PARAMS];   /* arena */
	const struct tir_source *src;
	uint32_t line_base;       /* lines before its chunk (REPL) */
	uint32_t body_off;        /* the byte after its '{' */
	uint32_t body_line;       /* that byte's line in src */
	uint32_t ntok;            /* tokens of the body: the cost of one call */
	struct tir_loc loc;       /* its name where defined */
	uint32_t ncalls;          /* calls expanded so far: numbers the next one's names */
	bool bad;                 /* its definition failed: calls fail unreported */
};

struct tir_bind_slot {
	uint32_t bind;            /* index into program->bind + 1; 0: empty (its
				   * name's hash is the binding's) */
};

/* A pass over the graph as it grows (lib/place's placement: lib/ir calls it
 * and knows nothing of what it does).  The parser hands it each node once
 * the node is checked, in graph order, so that the pass sees a node's
 * operands before the node; a node it fails fails its statement, as a
 * type error does.  Every hook may be NULL. */
struct tir_pass {
	void *ud;                 /* the pass's own state (its free hook frees it) */
	/* n is checked: 0, or -code with err filled (at n when it says no place) */
	int (*node)(void *ud, struct tir_program *p, struct tir_node *n, struct tir_err *err);
	/* the graph was cut back to its first nnodes nodes (a failed statement) */
	void (*cut)(void *ud, size_t nnodes);
	/* tir fmt: whether the pass made n (not written: its own node), and
	 * what to write after n's line (a comment, "  # on remote:1") */
	bool (*made)(const void *ud, const struct tir_node *n);
	void (*note)(const void *ud, const struct tir_node *n, struct tir_str *out);
	/* .vars: where n lives, a word of at most 23 bytes into buf */
	void (*where)(const void *ud, const struct tir_node *n, char buf[24]);
	void (*free)(void *ud);
};

struct tir_program {
	struct tir_arena arena;
	/* the nodes (each with its attributes and operands: tir_node_new),
	 * apart from everything else, one after the other: a pass over the
	 * graph (the planner makes a dozen) then reads memory in order */
	struct tir_arena node_arena;
	/* the names bound, their text packed (tir_arena_alloc1): a name of a
	 * long program is 7 bytes or so, which 16-byte pieces would double */
	struct tir_arena name_arena;
	struct tir_node **nodes;
	size_t nnodes, capnodes;
	struct tir_stmt *stmts;
	size_t nstmts, capstmts;
	struct tir_binding *bind;     /* every name bound, in the order first bound */
	size_t nbind, capbind;
	struct tir_bind_slot *bind_index;   /* bind by name: open addressing, power-of-two size */
	size_t capindex;
	struct tir_source *sources;
	struct tir_func **funcs;      /* every function defined, in order (arena) */
	size_t nfuncs, capfuncs;
	uint32_t ncallserial;         /* calls expanded so far (binding owners) */
	int ndiags, nerrors;
	tir_load_type_fn loader;
	void *loader_ud;
	struct tir_pass pass;         /* run over each node as it is checked */
	/* last: left unset until written (diags[0..ndiags) only are read), so
	 * that its 8 pages are not written at every start (tir_program_alloc) */
	struct tir_err diags[TIR_MAX_DIAGS];
};

/* A program with no pass (tir_program_new gives one with lib/place's
 * placement).  returns: new, free with tir_program_free. */
struct tir_program *tir_program_alloc(void);

struct tir_binding *tir_program_lookup(const struct tir_program *p, const char *s, size_t n);
/* (tir_program_suggest, "did you mean", is in tir.h) */
/* A name currently bound to node, or NULL. */
const char *tir_node_current_name(const struct tir_program *p, const struct tir_node *n);
/* The function named s[0..n), the latest definition, or NULL. */
const struct tir_func *tir_program_func(const struct tir_program *p, const char *s, size_t n);

/* ---- checking ---- */

/* parse.c: a new node of p (attributes at their defaults, made by
 * statement stmt), or NULL (out of memory). */
struct tir_node *tir_node_new(struct tir_program *p, enum tir_op op, int nin, const struct tir_loc *loc,
			      uint32_t stmt);

/* Infer node->type from its operands and attributes, its shape kept in
 * shapes (the program's node arena) unless an operand's is the same.  On
 * failure fill err (positioned at the operand at fault) and return -code. */
int tir_check_node(struct tir_node *n, struct tir_arena *shapes, struct tir_err *err);
/* Write t as n's type, its shape into shapes unless one of n's operands
 * has the same: 0, or -TIR_ENOMEM. */
int tir_node_set_shape(struct tir_node *n, const struct tir_type *t, struct tir_arena *shapes);
static inline int tir_node_set_type(struct tir_node *n, const struct tir_type *t, struct tir_arena *shapes)
{
	if (t->rank)
		return tir_node_set_shape(n, t, shapes);
	n->type = (struct tir_ntype){.dtype = t->dtype, .weak = t->weak, .shape = tir_shape0};
	return 0;
}
/* Result dtype and weakness of combining a and b (weak scalars adopt the
 * other's), in a type of rank 0; a and b either kind of type. */
struct tir_type tir_promote_dtypes(int dta, bool weaka, int dtb, bool weakb);
#define tir_promote(a, b) tir_promote_dtypes((a)->dtype, (a)->weak, (b)->dtype, (b)->weak)
/* NumPy broadcast of a and b into out's rank and shape (either kind of
 * type, out a struct tir_type); false if they do not broadcast. */
bool tir_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, struct tir_type *out);
#define tir_broadcast(a, b, out) tir_shape_broadcast((a)->rank, (a)->shape, (b)->rank, (b)->shape, (out))
/* The axes an op reduces (after normalizing negatives), as a mask. */
void tir_reduce_mask(const struct tir_node *n, int rank, bool mask[TIR_MAX_RANK]);
/* arange's (start, stop, step) with arange(stop) read as arange(0, stop). */
void tir_arange_params(const struct tir_node *n, double *start, double *stop, double *step);
/* linspace's element i (NumPy's formula): i * step + start, or with step 0
 * (i / div) * delta + start, where delta = stop - start, div = num - 1
 * with endpoint (then the last element is stop, when num > 1), else num;
 * div 0 gives step 0, div 1. */
void tir_linspace_params(const struct tir_node *n, double *start, double *stop, int64_t *num, bool *endpoint,
			 double *step, double *delta, double *div);
/* slice's first index, step and length along an axis of size dim (Python's
 * slice.indices: bounds clamp). */
void tir_slice_params(const struct tir_node *n, int64_t dim, int64_t *start, int64_t *step,
		      int64_t *len);
/* The dtype an op computes in (its operands are converted to it): the
 * result's, but for comparisons the operands' common dtype. */
enum tir_dtype tir_compute_dtype(const struct tir_node *n);
/* Normalize axis `a` for `rank` (-1 is the last); -1 when out of range. */
int tir_axis(int64_t a, int rank);

/* ---- several results (a, b = op(...)) ----
 * An op whose row gives results ("a -> q, r") makes one node holding all
 * of them, packed in one u8 buffer (each at tir_result_offset, 64-byte
 * aligned), and the statement binds k RESULT nodes reading it, each an
 * ordinary value of its own type.  The pack is never a name's value and
 * never an operand of anything but its RESULT nodes, which come right
 * after it in the graph (ids pack->id + 1 .. + k). */

/* n's results' types into t (at most TIR_MAX_RESULTS): their number, or
 * 0 when n is not an op with several results.  n must be checked. */
int tir_node_results(const struct tir_node *n, struct tir_type *t);
/* The number of results of n: tir_op(n->op)->nres, or the call's own for
 * an op whose number varies (res_var: read from its attributes, so known
 * before its operands' types are); 1 for an op of one result. */
int tir_node_nres(const struct tir_node *n);
/* Byte offset of result i in the pack of n, and the pack's size (i = k). */
size_t tir_result_offset(const struct tir_node *n, int i);
/* split's sections along its axis: start[i] and len[i] for each (at most
 * TIR_MAX_RESULTS); their number.  n must be checked. */
int tir_split_sections(const struct tir_node *n, int64_t *start, int64_t *len);
/* A RESULT node's index (which result of its operand it reads). */
int tir_result_index(const struct tir_node *n);
/* einsum's subscripts, read (check.c): term k of operand k, the output's
 * letters, each letter's size (-1: absent), by its character. */
#define TIR_EINSUM_MAX_OPS 32
struct tir_einsum {
	int nops, nout;
	int len[TIR_EINSUM_MAX_OPS];
	char term[TIR_EINSUM_MAX_OPS][TIR_MAX_RANK];
	char out[TIR_MAX_RANK];
	int64_t size[128];
};
/* 0, or fills why: -1 for the subscripts, -(k + 2) for operand k. */
int tir_einsum_parse(const char *spec, int nops, const struct tir_type *const *ops, struct tir_einsum *e,
		     char *why, size_t cap);

/* Error helpers: fill err, return -code. */
int tir_errf(struct tir_err *err, int code, const struct tir_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- printing ---- */

/* Append the canonical text of the expression computing n to buf (names
 * where a name is current, calls otherwise). */
void tir_render_expr(const struct tir_program *p, const struct tir_node *n, struct tir_str *out);
void tir_render_attr(const struct tir_param *prm, const struct tir_attr *a, struct tir_str *out);
/* n's call, op(operands, attributes), each operand written by `operand`
 * (lib/net names them by its own numbering). */
void tir_render_call(const struct tir_program *p, const struct tir_node *n,
		     void (*operand)(const struct tir_program *, const struct tir_node *, struct tir_str *),
		     struct tir_str *out);
/* A number as tir text that reads back to the same double ("1.0", "1e-05", "inf"). */
void tir_render_float(double v, struct tir_str *out);
/* A scalar literal's value as tir text: true/false, an integer, or a float
 * (tir_render_float) by n's dtype. */
void tir_render_scalar(const struct tir_node *n, struct tir_str *out);

#endif
