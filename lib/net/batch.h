/*
 * batch.h — the batch a client sends for one realization (batch.c), as
 * docs/protocol.md "The batch text" says: the subgraph the targets need as
 * canonical tir text with values numbered t0, t1, ... in order of
 * appearance, its leaves as `input tK: TYPE` bound to blobs or to values
 * the session kept, and a final `print` of the targets.
 */
#ifndef TIR_NET_BATCH_H
#define TIR_NET_BATCH_H

#include "net.h"

/* One `input tK` of the text: a blob (an input's value, a loaded file, a
 * tensor literal) or a value the session holds under key. */
struct tir_batch_input {
	uint32_t t;                        /* tK */
	const struct tir_node *node;
	char blob[TIR_SHA_HEX + 1];        /* the blob's name; "" for a held value */
	char key[24];                      /* the held value's key; "" for a blob */
	struct tir_tensor value;           /* a blob's tensor (a reference), to upload */
	unsigned char *list;               /* a blob's chunk list (net.h), sent before its frame */
	size_t len;                        /* its bytes */
};

/* A value the session is asked to keep: tK under key "v<node id>". */
struct tir_batch_keep {
	uint32_t t;
	uint32_t node;
};

struct tir_batch {
	char *text;
	size_t len;
	char graph[TIR_SHA_HEX + 1];       /* SHA-256 of text */
	struct tir_batch_input *inputs;
	size_t ninputs;
	struct tir_batch_keep *keep;
	size_t nkeep;
	const struct tir_node **line_node; /* by line - 1: the node the line defines (NULL: print) */
	size_t nlines;
	const struct tir_node **var_node;  /* by K: the node tK is */
	size_t nvars;
};

/* Whether the session may keep n's value: n is bound to a name now, and
 * is neither an input (its value is the client's) nor a scalar literal. */
bool tir_batch_keepable(const struct tir_program *p, const struct tir_node *n);

/* Blob names of input values hashed before, by node id, so that a REPL
 * printing again and again hashes each input once.  An entry holds a
 * reference to the value it names: the same buffer (which no one writes)
 * is the same value. */
struct tir_batch_memo {
	struct tir_batch_memo_entry {
		struct tir_tensor value;
		char name[TIR_SHA_HEX + 1];
		unsigned char *list;           /* its chunk list, len bytes */
		size_t len;
	} *e;
	size_t n;
};
void tir_batch_memo_free(struct tir_batch_memo *m);
/* The blob name of input node n's value v, through memo. */
int tir_batch_memo_name(struct tir_batch_memo *memo, const struct tir_node *n, const struct tir_tensor *v,
			char out[TIR_SHA_HEX + 1], struct tir_err *err);

/* The key a held value of node id goes by. */
void tir_batch_key(uint32_t id, char key[24]);

/* Make the batch computing targets[0..ntargets) of x's program.  held[id]
 * (id < nheld; NULL: none) says the session holds node id's value under
 * tir_batch_key(id): such a node is a leaf.  With tir_exec_keeping(x) the
 * batch asks to keep every value it computes or uploads whose node is bound
 * to a name now.  memo (NULL: none) keeps inputs' blob names between
 * batches.  An input with no value, a file that cannot be read:
 * the error a local run gives, at the node.  b is overwritten; free it
 * with tir_batch_free either way. */
int tir_batch_build(struct tir_batch *b, const struct tir_exec *x, struct tir_node *const *targets,
		    size_t ntargets, const bool *held, size_t nheld, struct tir_batch_memo *memo,
		    struct tir_err *err);
/* The same, for one batch of a run over several devices: stay[i] (NULL:
 * none) says targets[i] is not printed but kept under tir_batch_key (a
 * later batch reads it there, or another server fetches it); given[id]
 * (id < ngiven; an empty tensor: none) is a value the batch starts from,
 * sent as a blob (one moved here from another device). */
int tir_batch_build_on(struct tir_batch *b, const struct tir_exec *x, struct tir_node *const *targets,
		       size_t ntargets, const bool *stay, const bool *held, size_t nheld,
		       const struct tir_tensor *given, size_t ngiven, struct tir_batch_memo *memo,
		       struct tir_err *err);
void tir_batch_free(struct tir_batch *b);

/* The node line (1-based) of the text defines, or NULL. */
const struct tir_node *tir_batch_line_node(const struct tir_batch *b, long line);

/* The name of t's frame (tir_frame_encode) without making the frame: the
 * SHA-256 of its chunk list (net.h), whose chunks hash on one thread per
 * CPU.  With list, the chunk list in *list (malloc'd, *len bytes). */
int tir_blob_chunks(const struct tir_tensor *t, char out[TIR_SHA_HEX + 1], unsigned char **list,
		    size_t *len, struct tir_err *err);
int tir_blob_name(const struct tir_tensor *t, char out[TIR_SHA_HEX + 1], struct tir_err *err);

#endif
