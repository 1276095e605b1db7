/*
 * onnx.h — lib/onnx's internal header: the importer's state, shared by
 * import.c (reading the model, names, constants, the program's text),
 * nodes*.c (one emitter per ONNX op) and emit.c (the helpers they share).  Not a protobuf reader: the messages
 * are protobuf-c's, generated at build time from Debian's onnx.proto.
 */
#ifndef TIR_ONNX_H
#define TIR_ONNX_H

#include "../ir/ir.h"
/* before the generated header: its calls go through libs.h's pointers */
#include "libs.h"
#include "onnx/onnx.pb-c.h"

#define OX_MAX_MODEL (INT64_C(4) << 30)     /* bytes of a model file */
#define OX_FOLD_MAX 65536                    /* elements a folded constant may have */
#define OX_INLINE_MAX 16                     /* elements written as a literal */

/* A known value (an initializer, a Constant, folded shape arithmetic):
 * its elements as doubles and as integers (both kept, whichever the dtype). */
struct ox_const {
	enum tir_dtype dtype;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	int64_t n;
	int64_t *i;              /* n integers (floats truncated); NULL past OX_FOLD_MAX */
	double *d;               /* n doubles; NULL past OX_FOLD_MAX */
	unsigned char *bytes;    /* past OX_FOLD_MAX instead: the elements as tir stores them */
	bool borrowed;           /* bytes are the model's (its raw_data), not freed here */
};

/* One ONNX tensor name of the graph. */
struct ox_val {
	char *onnx;              /* the ONNX name */
	char *tir;               /* its tir name, once bound (or a constant's, once emitted) */
	bool defined;            /* an input, initializer or node output seen */
	bool is_input;
	struct ox_const *c;      /* known value, or NULL */
	struct ox_const *given;  /* an input's small float vector read from its file, or NULL: not
				  * folded, read only by emitters that need it (Resize's scales) */
	char *clean;             /* a node output's name by the name rule, kept for it */
};

/* A set of names, or a map of names to names (val NULL in a set). */
struct ox_names {
	char **key, **val;
	size_t n, cap;           /* cap: a power of 2, or 0 */
};

struct ox_node_ctx;

struct ox_imp {
	const struct tir_onnx_opts *opts;
	const char *path;
	char *dir;                       /* the model's folder (external data) */
	Onnx__ModelProto *model;
	int64_t opset;
	struct ox_val *vals;
	size_t nvals, cap;
	size_t *hash;                    /* open addressing: index + 1, 0 empty */
	size_t hcap;
	struct tir_program *prog;        /* every statement, checked as written */
	struct tir_str text;             /* the statements as written */
	char **comments;                 /* comment to put before the line binding names[k] */
	char **cnames;
	size_t ncomments, ccap;
	/* the initializers (and folded constants) to write to the weights file */
	char **wnames;
	struct ox_const **wconsts;
	size_t nw, wcap;
	int serial;
	struct ox_names reserved;        /* the clean names of node outputs */
	struct ox_names emitted;         /* names the node being imported bound */
	struct ox_names alias;           /* a node's last step -> its output's clean name */
	struct tir_err *err;
	char *loaded_path;               /* the load() path written */
};

/* ---- import.c ---- */
struct ox_val *ox_val(struct ox_imp *m, const char *onnx);
struct ox_val *ox_find(struct ox_imp *m, const char *onnx);
/* a fresh tir name made from base */
char *ox_fresh(struct ox_imp *m, const char *base);
/* emit "NAME = EXPR" (NAME fresh from base), check it; returns NAME or NULL with m->err set */
const char *ox_emit(struct ox_imp *m, const char *base, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the type of a bound tir name */
const struct tir_ntype *ox_type(struct ox_imp *m, const char *tir);
/* the tir name holding an ONNX value (a constant is emitted on first use); NULL with err */
const char *ox_use(struct ox_imp *m, const char *onnx);
/* ONNX value onnx is the tir value tir (a node's output) */
int ox_bind(struct ox_imp *m, const char *onnx, const char *tir);
int ox_fail(struct ox_imp *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* i and d for at most OX_FOLD_MAX elements, else bytes (a weight: never folded) */
struct ox_const *ox_const_new(enum tir_dtype dt, int rank, const int64_t *shape);
/* element k of c is d (as a float) and i (as an integer) */
void ox_const_set(struct ox_const *c, int64_t k, double d, int64_t i);
double ox_const_get(const struct ox_const *c, int64_t k);
void ox_const_free(struct ox_const *c);
int ox_tensor_decode(struct ox_imp *m, const Onnx__TensorProto *t, struct ox_const **out, struct tir_err *err);
bool ox_dtype(int32_t onnx, enum tir_dtype *dt);
const char *ox_onnx_type_name(int32_t onnx);

/* ---- nodes.c ---- */
/* The node's context handed to an emitter. */
struct ox_node_ctx {
	struct ox_imp *m;
	const Onnx__NodeProto *n;
	int64_t opset;
};
typedef int (*ox_emit_fn)(struct ox_node_ctx *c);
struct ox_opdef {
	const char *name;
	ox_emit_fn fn;
};
/* the emitter of op_type in the default domain, or NULL */
const struct ox_opdef *ox_op_lookup(const char *op_type);
/* why an op is refused outright (data-dependent shape, ...), or NULL */
const char *ox_op_refused(const char *op_type);

/* ---- nodes_spatial.c: Resize, Upsample and the 3-D window ops ---- */
int ox_op_resize(struct ox_node_ctx *c);
/* Conv of a 3-D input (rank 5); MaxPool, AveragePool of a 3-D input or dilated */
int ox_op_conv3d(struct ox_node_ctx *c);
int ox_op_convtranspose3d(struct ox_node_ctx *c);
int ox_op_pool_nd(struct ox_node_ctx *c);
int ox_op_gridsample(struct ox_node_ctx *c);
int ox_op_roialign(struct ox_node_ctx *c);
int ox_op_maxunpool(struct ox_node_ctx *c);

/* ---- nodes_seq.c: sequences and indices (rows of nodes.c's table) ---- */
int ox_op_rnn(struct ox_node_ctx *c);
int ox_op_gru(struct ox_node_ctx *c);
int ox_op_lstm(struct ox_node_ctx *c);
int ox_op_gathernd(struct ox_node_ctx *c);
int ox_op_reversesequence(struct ox_node_ctx *c);
int ox_op_batchnorm_training(struct ox_node_ctx *c);
int ox_op_scatternd(struct ox_node_ctx *c);
int ox_op_scatterelements(struct ox_node_ctx *c);
/* ---- nodes_misc.c ---- */
/* NULL when tir imports op_type at opset (before 7: the ops listed there),
 * else why not, written into buf */
const char *ox_op_old(const char *op_type, int64_t opset, char *buf, size_t len);
/* A node of opset 1 to 6 in the form of opset 7: a copy of the node whose
 * arrays the upgrade owns (free with ox_upgrade_free), c->n pointed at it;
 * statements it needs (an operand reshaped) emitted.  Nothing at opset 7+. */
struct ox_upgrade {
	Onnx__NodeProto node;
	char **input;
	Onnx__AttributeProto **attribute;
	Onnx__AttributeProto extra;      /* an attribute added */
	char *name;                      /* an input's new ONNX name */
};
int ox_node_upgrade(struct ox_node_ctx *c, struct ox_upgrade *u);
/* the emitter of op_type among nodes_misc.c's (ox_op_lookup asks), or NULL */
const struct ox_opdef *ox_misc_lookup(const char *op_type);
void ox_upgrade_free(struct ox_upgrade *u);

/* ---- emit.c: the helpers every emitter shares ---- */
/* the attribute name of node n (of the node's context c), or NULL; borrowed */
const Onnx__AttributeProto *ox_node_attr(const Onnx__NodeProto *n, const char *name);
const Onnx__AttributeProto *ox_attr(struct ox_node_ctx *c, const char *name);
/* an int, float or ints attribute's value, or def (ints: NULL, *n 0) */
int64_t ox_attr_i(struct ox_node_ctx *c, const char *name, int64_t def);
double ox_attr_f(struct ox_node_ctx *c, const char *name, double def);
const int64_t *ox_attr_ints(struct ox_node_ctx *c, const char *name, size_t *n);
/* the string attribute name is v (def when absent is v) */
bool ox_attr_str_is(struct ox_node_ctx *c, const char *name, const char *v, const char *def);
/* the string attribute name copied into buf (at most cap - 1 bytes), or def */
const char *ox_attr_str(struct ox_node_ctx *c, const char *name, const char *def, char *buf, size_t cap);
/* input k is given (present and not "") */
bool ox_has_in(struct ox_node_ctx *c, size_t k);
/* input k's value, or NULL when not given or unknown */
struct ox_val *ox_in_val(struct ox_node_ctx *c, size_t k);
/* input k's known value, or NULL (a weight past OX_FOLD_MAX elements is
 * known but never folded); borrowed */
struct ox_const *ox_cin(struct ox_node_ctx *c, size_t k);
/* as ox_cin, failing (unsupported, naming what) when input k is not known */
struct ox_const *ox_need_const(struct ox_node_ctx *c, size_t k, const char *what);
/* input k as a tir name (a constant written on first use); NULL with err */
const char *ox_in(struct ox_node_ctx *c, size_t k);
/* input k's type into *t (of a constant, without writing it) */
bool ox_in_type(struct ox_node_ctx *c, size_t k, struct tir_type *t);
/* input k as a tir name and its type; NULL (the error set) when either fails */
const char *ox_in_typed(struct ox_node_ctx *c, size_t k, struct tir_type *t);
/* output k's ONNX name ("" when absent) */
const char *ox_out_name(struct ox_node_ctx *c, size_t k);
/* output k is the tir value tir; tir NULL (or an error set): the error's code */
int ox_bind_out(struct ox_node_ctx *c, size_t k, const char *tir);
/* output k is the known value cv (takes ownership; NULL: out of memory) */
int ox_bind_const(struct ox_node_ctx *c, size_t k, struct ox_const *cv);
/* "[2, 3]" into buf of cap bytes (cut short when it does not fit) */
const char *ox_shape_str(char *buf, size_t cap, int rank, const int64_t *shape);
/* positions 0..n-1 (i64) on axis a of a rank-r value, 1 on the other axes:
 * "arange" reshaped, named from base; NULL with the error set */
const char *ox_iota(struct ox_node_ctx *c, const char *base, int64_t n, int a, int r);

#endif
