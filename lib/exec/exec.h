/*
 * exec.h — lib/exec's one internal header: tensors, the reference kernels
 * (one per op family; the oracle every faster path is checked against),
 * .npy/.safetensors I/O, and one node by its reference kernel (eval.c).
 * The executor that runs a graph is lib/engine's, above this and
 * lib/fusion: nothing here includes or calls either.
 *
 * Vocabulary: shape[] is elements per axis, strides[] is ELEMENTS per step
 * (not bytes), offset is in elements from buf->data.  A stride of 0 is a
 * broadcast axis.  A tensor is contiguous when strides are row-major.
 */
#ifndef TIR_EXEC_H
#define TIR_EXEC_H

#include "../ir/ir.h"

/* A reference-counted, 64-byte aligned block of memory, or (map set) a
 * read-only mapping of a file that data points into: never written (the
 * pages are PROT_READ), munmap'd on the last release, counted apart from
 * the tensor bytes (tir_mem_mapped), never charged to the budget. */
struct tir_buf {
	int refs;
	size_t bytes;
	void *data;
	void *map;               /* the mapping's start (page aligned), or NULL */
	size_t map_bytes;
	bool inline_data;        /* data lives in this header's own block (tensor.c) */
	size_t ready_bytes;      /* >0: a mapping made of the reserve's pieces (tensor.c) */
};

struct tir_tensor {
	enum tir_dtype dtype;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	int64_t strides[TIR_MAX_RANK];   /* in elements */
	int64_t offset;                  /* in elements */
	struct tir_buf *buf;             /* owned reference (NULL for an empty tensor) */
};

/* Bytes allocated by tensors now, and the most ever (for "peak"). */
size_t tir_mem_current(void);
size_t tir_mem_peak(void);
void tir_mem_reset_peak(void);
/* A budget for all tensor bytes held at once (0: none, the default):
 * past it tir_tensor_alloc fails with TIR_EBUDGET before it allocates. */
void tir_mem_set_limit(size_t bytes);
size_t tir_mem_limit(void);
/* Memory a tensor's owner holds beside it (a server's records of its
 * blobs and kept values), charged to the same count and budget: false,
 * nothing charged, when it would pass the budget. */
bool tir_mem_charge(size_t n);
void tir_mem_uncharge(size_t n);
/* Scratch: memory a kernel holds beside the tensors (packing buffers,
 * widened copies, column matrices), charged to the same count and budget
 * while it is held, so that --max-memory bounds it too.  A kernel works
 * out what it needs before it starts and asks for it here; NULL (nothing
 * charged) when it would pass the budget or malloc fails: the kernel then
 * takes a smaller blocking, or fails with tir_scratch_err.  A buffer a
 * kernel keeps between calls lives in a struct tir_keep (zeroed: empty),
 * one a thread at a time: tir_scratch_get hands out k's buffer (*kept:
 * true, k is the caller's until tir_scratch_put), or a fresh one when k
 * is in use on another thread (or NULL).  Put back, a kept buffer stays
 * charged, beside the tensors (as the reuse cache is), when it is at most
 * `most` bytes and, under a budget, the kept buffers of all kernels
 * together stay within a quarter of it; else it is freed.  Kept buffers
 * not in use are freed when an allocation needs their room (after the
 * reuse cache, before the reserve) and by tir_mem_trim.  Buffers are
 * 64-byte aligned; bytes is what was asked for (charged rounded up). */
struct tir_keep {
	_Atomic int busy;        /* a thread holds it (tir_scratch_get .. put) */
	bool listed;             /* in tensor.c's list of keeps */
	void *p;
	size_t size;             /* charged while p is held */
	struct tir_keep *next;
};
void *tir_scratch_get(struct tir_keep *k, size_t bytes, bool *kept);
void tir_scratch_put(struct tir_keep *k, void *p, size_t bytes, bool kept, size_t most);
/* The error of scratch that was not had: TIR_EBUDGET under a budget
 * ("OP: WHAT needs N; the memory budget has L left of B (--max-memory)"),
 * else TIR_ENOMEM.  returns the negative code. */
int tir_scratch_err(struct tir_err *err, const char *op, const char *what, size_t bytes);
/* What the budget leaves for scratch now (kept buffers, the reuse cache
 * and the reserve would be given back for it); SIZE_MAX: no budget. */
size_t tir_scratch_room(void);
/* Bytes of kept scratch held now (not in use). */
size_t tir_scratch_kept(void);
/* n bytes for a person in out: "3.2 GiB", "64 MiB", "120 KiB", "40 B". */
const char *tir_bytes_str(size_t n, char out[32]);
/* Free the cache of released buffers kept for reuse (not the reserve). */
void tir_mem_trim(void);
/* Bytes of released buffers kept for reuse now: under a budget, never
 * more than the budget leaves beside the tensors and the reserve. */
size_t tir_mem_cached(void);
/* A reserve of `bytes` of pages kept faulted in (a server's, for the
 * tensors it receives): made now, kept full by a thread at the idle
 * priority, its free pages held against the budget and given back when
 * an allocation would pass it.  tir_tensor_alloc_ready takes a tensor of
 * 4 MiB or more from it (uninitialized; a smaller one, or past what the
 * reserve holds, as tir_tensor_alloc does). */
int tir_mem_ready_start(size_t bytes);
void tir_mem_ready_stop(void);
/* An upload under way (on) or ended: the reserve is filled while none is. */
void tir_mem_ready_busy(bool on);
void tir_mem_ready_stats(size_t *target, size_t *held, size_t *taken);
int tir_tensor_alloc_ready(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape,
			   struct tir_err *err);
/* Bytes of files mapped by tensors now, and the most since
 * tir_mem_reset_peak.  File pages: the kernel reads them in as they are
 * touched and may drop them again, so they are neither tensor bytes nor
 * under the budget. */
size_t tir_mem_mapped(void);
size_t tir_mem_mapped_peak(void);
/* Whether a kernel may write into b (it is held once and is not a file's
 * mapping): the executor's in-place reuse asks this. */
bool tir_buf_writable(const struct tir_buf *b);

/* Allocate a contiguous tensor of the given type (zeroed when zero is true).
 * returns 0 or -TIR_ENOMEM (err filled).  t is overwritten: release first. */
int tir_tensor_alloc(struct tir_tensor *t, enum tir_dtype dt, int rank,
		     const int64_t *shape, bool zero, struct tir_err *err);
/* A contiguous tensor over data, inside the read-only mapping [map,
 * map + map_bytes), which it takes over (given to tir_file_unmap on the
 * last release, or here on failure); data aligned for dt.  returns 0 or
 * -TIR_ENOMEM. */
int tir_tensor_wrap_map(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape, void *map,
			size_t map_bytes, void *data, struct tir_err *err);
/* npy.c: a file mapping no longer held: kept for the next load of the
 * same bytes of the same file, or unmapped.  tir_file_maps_forget:
 * unmap every kept mapping no tensor holds; tir_file_maps_made: the
 * mappings of data made so far (tests). */
void tir_file_unmap(void *map, size_t bytes);
void tir_file_maps_forget(void);
uint64_t tir_file_maps_made(void);
void tir_tensor_release(struct tir_tensor *t);       /* drop the reference; t becomes empty */
void tir_tensor_ref(struct tir_tensor *dst, const struct tir_tensor *src); /* share, refs++ */
int64_t tir_tensor_numel(const struct tir_tensor *t);
bool tir_tensor_is_contiguous(const struct tir_tensor *t);
void tir_tensor_set_contiguous_strides(struct tir_tensor *t);
/* Pointer to the element at flat position 0 (data + offset * size). */
void *tir_tensor_data(const struct tir_tensor *t);

/* A contiguous copy in dtype `dt` (converting; float to int truncates
 * toward zero, anything to bool is != 0).  dst must be empty. */
/* cvt.c: n elements from s (step ss, in elements) of dtype st into
 * contiguous d of dtype dt (equal dtypes: the bits copied). */
void tir_cvt_run(enum tir_dtype dt, void *d, enum tir_dtype st, const void *s, int64_t ss, int64_t n);
int tir_tensor_convert(const struct tir_tensor *src, enum tir_dtype dt,
		       struct tir_tensor *dst, struct tir_err *err);
/* Views (no copy).  The result shares src's buffer. */
void tir_view_broadcast(const struct tir_tensor *src, int rank, const int64_t *shape,
			struct tir_tensor *dst);   /* NumPy broadcast to shape */
void tir_view_transpose(const struct tir_tensor *src, const int *perm, struct tir_tensor *dst);
void tir_view_slice(const struct tir_tensor *src, int axis, int64_t start, int64_t step,
		    int64_t len, struct tir_tensor *dst);
/* Reshape: a view when src is contiguous, else a copy.  */
int tir_tensor_reshape(const struct tir_tensor *src, int rank, const int64_t *shape,
		       struct tir_tensor *dst, struct tir_err *err);

/* Read element i (row-major logical index) as double / int64, any dtype. */
double tir_tensor_get_f64(const struct tir_tensor *t, int64_t i);
int64_t tir_tensor_get_i64(const struct tir_tensor *t, int64_t i);

/* ---- kernels ----
 * Every kernel writes a contiguous, already allocated `out` whose type the
 * checker inferred.  Inputs may be strided views.  Unless said otherwise the
 * executor has already converted the inputs to the computation's dtype and
 * broadcast them (by views) to out's shape.  Kernels return 0 or -code with
 * err filled (err->loc left for the executor to set). */

/* unary elementwise: x has out's dtype and shape.
 * NOT: x is bool, out bool. */
int tir_k_unary(enum tir_op op, const struct tir_tensor *x, struct tir_tensor *out,
		struct tir_err *err);
/* binary elementwise: a, b have the same dtype and out's shape (broadcast
 * views).  Arithmetic: out has that dtype.  Comparisons: out bool.
 * AND/OR: a, b, out bool.  Integer DIV/MOD by zero: -TIR_ERUNTIME. */
int tir_k_binary(enum tir_op op, const struct tir_tensor *a, const struct tir_tensor *b,
		 struct tir_tensor *out, struct tir_err *err);
/* WHERE: cond bool, a, b out's dtype.  CLIP: x, lo, hi out's dtype.
 * (all broadcast to out's shape) */
int tir_k_ternary(enum tir_op op, const struct tir_tensor *x, const struct tir_tensor *y,
		  const struct tir_tensor *z, struct tir_tensor *out, struct tir_err *err);
/* Masks as a fused kernel holds them, 1 or 0 of its float dtype: a
 * comparison (EQ NE LT LE GT GE) of in[0], in[1], or WHERE selecting in[1]
 * where in[0] is not 0, else in[2]; every in[k] out's dtype and shape
 * (broadcast views). */
int tir_k_mask(enum tir_op op, const struct tir_tensor *in, struct tir_tensor *out, struct tir_err *err);
/* One run of n elements of a fused kernel's where, clip or comparison
 * (mask: a comparison giving 1 or 0 of dt, where testing p[0] against 0)
 * over operands p[k] with strides st[k] (0 or 1 are fast), all of dtype
 * dt; out contiguous.  Returns 0, or nonzero for an op it does not do. */
int tir_k_select_run(enum tir_op op, bool mask, enum tir_dtype dt, void *out, const void *const *p,
		     const int64_t *st, int64_t n);

/* reductions: mask[axis] says which axes of x reduce.  out holds the kept
 * axes in order (its shape as if keepdims were false, or with 1s: the
 * memory is the same).  SUM PROD MAX MIN MEAN VAR: x has out's dtype.
 * ARGMAX ARGMIN: any x dtype, out i64; exactly one axis in mask, or all. */
int tir_k_reduce(enum tir_op op, const struct tir_tensor *x, const bool *mask,
		 struct tir_tensor *out, struct tir_err *err);
/* For fused reductions (lib/fusion), which make the elements they reduce
 * piece by piece.  tir_reduce_by_runs: whether tir_k_reduce folds each
 * output of x as one run of its elements in logical order (true for a
 * contiguous x reduced over trailing axes).  tir_reduce_run: op (SUM PROD
 * MAX MIN MEAN VAR) over such a run of n >= 1 elements of dt (f32, f64),
 * which get(ctx, lo, m) hands out in order, m <= chunk (chunk >= 128, a
 * multiple of 8; several passes for VAR); writes to out the one element
 * tir_k_reduce would store, bit for bit. */
typedef const void *(*tir_run_get)(void *ctx, int64_t lo, int64_t n);
bool tir_reduce_by_runs(const struct tir_tensor *x, const bool *mask);
void tir_reduce_run(enum tir_op op, enum tir_dtype dt, int64_t n, int64_t chunk, tir_run_get get,
		    void *ctx, void *out);
/* tir_reduce_run over k such runs at once, each n contiguous elements (any
 * n >= 1), run i at x + i * stride elements, its result to out[i]: what
 * tir_reduce_run would write, with no get callback (whole rows in memory). */
void tir_reduce_rows(enum tir_op op, enum tir_dtype dt, const void *x, int64_t stride, int64_t n, int64_t k,
		     void *out);
/* The pairwise sum (SUM, MEAN) of such a run in 2^depth pieces, to be
 * summed apart (on several threads): tir_reduce_pw_split gives the
 * pieces (lo[], len[], each array 2^depth long; returns their count, or 0
 * when the run is too short for that depth); tir_reduce_pw_part sums one;
 * tir_reduce_pw_join (part[] overwritten) joins them, bitwise the run's
 * pairwise sum (the value tir_reduce_run adds to 0.0). */
int tir_reduce_pw_split(int64_t n, int64_t chunk, int depth, int64_t *lo, int64_t *len);
double tir_reduce_pw_part(enum tir_dtype dt, int64_t lo, int64_t n, int64_t chunk, tir_run_get get,
			  void *ctx);
double tir_reduce_pw_join(double *part, int cnt);
/* A piece of one run for tir_reduce_pool: the pairwise sum of its
 * elements [lo, lo + n) (dev: of their squared deviations from m), as
 * tir_reduce_pw_part (tir_reduce_pwdev_part) gives it. */
typedef double (*tir_piece_fn)(void *ctx, int64_t lo, int64_t n, bool dev, double m);
/* SUM, MEAN or VAR of one run of n elements of item_bytes each, in the
 * pieces of its pairwise tree on the pool (as many as a stream of the run
 * would make tasks; none shorter than chunk, >= 128 and a multiple of 8):
 * *out is the value tir_reduce_run computes before rounding it to the
 * output's dtype, the same bits for any thread count.  false, nothing
 * done, when the run is too short to split. */
bool tir_reduce_pool(enum tir_op op, int64_t n, int64_t chunk, int64_t item_bytes, tir_piece_fn part, void *ctx,
		     double *out);
/* tir_reduce_pw_part of var's second pass: the squared deviations from m */
double tir_reduce_pwdev_part(enum tir_dtype dt, int64_t lo, int64_t n, int64_t chunk, tir_run_get get,
			     void *ctx, double m);
/* A reduction over leading axes (x contiguous, its rows taken in order):
 * acc, n doubles (n elements of dt for MAX, MIN), starts with
 * tir_reduce_acc_init, takes each row of n elements with
 * tir_reduce_acc_fold (MEAN: the sum; VAR: the sum for the means, then
 * with aux the means, divided by tir_reduce_acc_div, the squared
 * deviations); tir_reduce_acc_div(acc, count) then gives means, and
 * tir_reduce_acc_store the outputs: bitwise what tir_k_reduce stores. */
void tir_reduce_acc_init(enum tir_op op, enum tir_dtype dt, void *acc, int64_t n);
void tir_reduce_acc_fold(enum tir_op op, enum tir_dtype dt, const void *x, int64_t n, void *acc,
			 const void *aux);
void tir_reduce_acc_div(double *acc, int64_t count, int64_t n);
void tir_reduce_acc_store(enum tir_op op, enum tir_dtype dt, const void *acc, void *out, int64_t n);

/* creation */
int tir_k_fill(struct tir_tensor *out, double value, int64_t ivalue, bool is_int);
int tir_k_arange(struct tir_tensor *out, double start, double step, int64_t istart, int64_t istep);
int tir_k_eye(struct tir_tensor *out);
/* Counter-based (Philox4x32-10): element i depends only on seed and i. */
int tir_k_rand(struct tir_tensor *out, uint64_t seed, bool normal);

/* gen.c: a float creation op (zeros ones full arange linspace eye rand
 * randn of f32 or f64) as a generator, its element at flat index i a
 * function of i alone. */
struct tir_gen {
	enum tir_op op;
	enum tir_dtype dt;
	double a, b;             /* fills: the value; arange, linspace: start, step */
	double c, d, e;          /* linspace: stop - start, num - 1, stop */
	int64_t n;               /* eye: its n; linspace: num */
	bool endpoint;           /* linspace: the last element is stop */
	uint32_t k0[10], k1[10]; /* rand, randn: the Philox round keys */
};
/* Whether op is a creation op gen.c computes (for float dtypes). */
bool tir_gen_is_op(enum tir_op op);
/* g for node n; false when n is not such an op of f32 or f64. */
bool tir_gen_init(struct tir_gen *g, const struct tir_node *n);
/* dst[e] = element i0 + e * st of g, e < n (g's dtype), on the vector path
 * in use; the same bits on every path. */
void tir_gen_run(const struct tir_gen *g, void *dst, int64_t i0, int64_t st, int64_t n);
/* Fill the contiguous out (of g's dtype), on the pool. */
int tir_k_gen(struct tir_tensor *out, const struct tir_gen *g);
/* What computing one element costs, counted as bytes moved (fuse.c). */
int64_t tir_gen_cost(enum tir_op op);
/* randn's own ln u (u in (0, 1]), cos(2 pi u) and sin(2 pi u) (u in
 * [0, 1) a multiple of 2^-53), as every path computes them. */
double tir_gen_ln(double u);
double tir_gen_cos2pi(double u);
double tir_gen_sin2pi(double u);
/* The same for randn f32, in f32: ln u (u a multiple of 2^-24 in (0, 1]),
 * cos(2 pi u) and sin(2 pi u) (u in [0, 1) a multiple of 2^-24). */
float tir_gen_lnf(float u);
float tir_gen_cos2pif(float u);
float tir_gen_sin2pif(float u);

/* movement (copies; views are above) */
int tir_k_concat(const struct tir_tensor *const *xs, int n, int axis, struct tir_tensor *out,
		 struct tir_err *err);
/* pads: 2 per axis (before, after) >= 0; value in out's dtype */
int tir_k_pad(const struct tir_tensor *x, const int64_t *pads, double value,
	      struct tir_tensor *out, struct tir_err *err);
/* indices: i32 or i64 of any shape; negative indices count from the end;
 * out of range: -TIR_ERUNTIME naming the index. */
int tir_k_gather(const struct tir_tensor *x, const struct tir_tensor *indices, int axis,
		 struct tir_tensor *out, struct tir_err *err);
/* scatter_nd (scatter.c): n's operands x, indices, updates as the checker
 * passed them, any dtypes; out: new.  An index out of range: -TIR_ERUNTIME
 * naming it, nothing written. */
int tir_k_scatter_nd(const struct tir_node *n, const struct tir_tensor *in, struct tir_tensor *out,
		     struct tir_err *err);
/* A contiguous copy of a view of the same dtype into out. */
int tir_k_copy(const struct tir_tensor *x, struct tir_tensor *out);

/* matmul: a [..., m, k] and b [..., k, n] of the same rank >= 2 and dtype,
 * batch axes broadcast (stride 0 allowed), any strides, out [..., m, n].
 * f32/f64 through tir's gemm (tir_gemm_run), integers by loops. */
int tir_k_matmul(const struct tir_tensor *a, const struct tir_tensor *b,
		 struct tir_tensor *out, struct tir_err *err);
/* The same, calling epi(ctx, i0, n) on each run of n output elements
 * starting at flat index i0 right after the block holding them is made
 * (while it is in cache); runs never overlap.  epi returns nonzero on
 * failure (out of memory). */
typedef int (*tir_epilogue_fn)(void *ctx, int64_t i0, int64_t n);
int tir_k_matmul_epi(const struct tir_tensor *a, const struct tir_tensor *b,
		     struct tir_tensor *out, tir_epilogue_fn epi, void *epi_ctx, struct tir_err *err);
/* A float product rounded to bf16: out (bf16, contiguous, as many
 * elements as wide) gets each element of a @ b rounded as the gemm makes
 * it, in its kernel's store (tir_gemm's out); wide (f32, the product's
 * shape) holds the f32 chains between its k-blocks, then nothing of use;
 * given with no data (buf NULL), only its shape, it is allocated (and
 * released) inside only where the gemm needs one (tir_gemm_needs_c). */
int tir_k_matmul_bf16(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *wide,
		      struct tir_tensor *out, struct tir_err *err);

/* gemm.c: tir's own float matrix product.  For each batch entry e (the
 * batch axes shape[0..nb), row-major order), c_e[m, n] = a_e[m, k] @
 * b_e[k, n], or c_e += it when acc; element (i, j) of a_e is at
 * a + off_a(e) + i * a_rs + j * a_cs elements, off_a(e) = sum of index_d *
 * as[d] (0 where broadcast), b likewise; c_e's (i, j) at c + e * c_batch +
 * i * ldc + j.  Each output element is one chain over p = 0 .. k-1 in
 * order (an FMA per step on the AVX2 and AVX-512 paths): its bits depend
 * only on its row of a, its column of b and the vector path, never on the
 * thread count or the tiles (gemm.c).  epi (when set; needs ldc == n and
 * c_batch == m * n) runs as tir_k_matmul_epi's, once on each element,
 * over whole rows or a group of tiles' part of each row, once the group
 * is made.  tile_m, tile_n: 0, or a test's tile size (rows, columns);
 * epi_group: 0, or a test's tiles per epilogue group.  Packs both
 * operands, a k-block at a time, into a scratch buffer it keeps for the
 * next product (up to 64 MiB, 8 on a pool worker); a product whose
 * k-block's packed operands would not fit it, or what the memory budget
 * leaves (tir_scratch_get), is done in slabs that do; slab_bytes: 0, or
 * a test's size for that buffer.  returns 0, -TIR_ENOMEM, or
 * -TIR_EBUDGET when not even a slab of one panel of each fits the
 * budget. */
struct tir_gemm {
	enum tir_dtype dt;                  /* F32 or F64 */
	/* a's and b's dtypes when other than dt (0: dt): f16, bf16, i8...
	 * are widened as their panels are packed, never in a pass of their own */
	enum tir_dtype a_dt, b_dt;
	int64_t m, n, k;
	const void *a, *b;
	int64_t a_rs, a_cs, b_rs, b_cs;
	int nb;
	int64_t shape[TIR_MAX_RANK], as[TIR_MAX_RANK], bs[TIR_MAX_RANK];
	void *c;
	int64_t ldc, c_batch;
	/* out (F32 dt, with no epi and no acc; NULL: none): the result rounded
	 * to bf16 (half.h's tir_f2b), laid out as c, each element as the gemm
	 * makes it (c then holds only the f32 chains between k-blocks, and
	 * what it holds after is undefined; c may be NULL, then the gemm
	 * allocates it where it needs it, scratch charged to the memory
	 * budget: tir_gemm_needs_c) */
	void *out;
	bool acc;
	tir_epilogue_fn epi;
	void *epi_ctx;
	int64_t tile_m, tile_n, epi_group, slab_bytes;
};
int tir_gemm_run(const struct tir_gemm *g, struct tir_err *err);
/* The least scratch tir_gemm_run needs for g (its operands' pointers and
 * strides are not read): one panel of each operand a k-block deep, for
 * every batch entry whose operands differ, the slabs it falls back to
 * under a memory budget.  The plan's memory counts it (lib/engine). */
size_t tir_gemm_least(const struct tir_gemm *g);
/* The least scratch a matmul, a conv2d, an attention of these types
 * needs, as the budget's simulation before a run counts it: 0 where the
 * kernel may need none (a product on OpenBLAS, a few rows, weights read
 * where they lie).  Never more than the kernel takes. */
size_t tir_matmul_least(const struct tir_type *a, const struct tir_type *b, const struct tir_type *out);
size_t tir_conv2d_least(const struct tir_type *x, const struct tir_type *w, const struct tir_type *out);
size_t tir_attention_least(const struct tir_type *q, const struct tir_type *k, const struct tir_type *v);
/* A product whose caller packs the right operand itself, as conv2d's
 * im2col writes its panels: the panels' form for dt (tir_gemm_form),
 * a packed once for every k-block (tir_gemm_pack_a, on the pool), then
 * tir_gemm_panels for each k-block of kc steps (the last may be short),
 * in order.  b's packed k-block holds ceil(n / nr) panels, panel r at r *
 * nr * kcb elements, its element (step p, column i) at p * nr + i, zero
 * past column n.  Each element of c is the chain tir_gemm_run makes. */
struct tir_gemm_form {
	const void *kern;                   /* gemm.c's kernel */
	int64_t mr, nr, kc, es;             /* kc may be lowered (a multiple of 8) */
};
void tir_gemm_form(enum tir_dtype dt, struct tir_gemm_form *f);
/* bytes of a [m, k] packed in f's form */
int64_t tir_gemm_a_bytes(const struct tir_gemm_form *f, int64_t m, int64_t k);
/* a[i, p] at a + i * rs + p * cs elements, into dst (tir_gemm_a_bytes) */
void tir_gemm_pack_a(const struct tir_gemm_form *f, void *dst, const void *a, int64_t rs,
		     int64_t cs, int64_t m, int64_t k);
/* bytes of b [k, n] packed in f's form, k-block by k-block; b[p, j] at b
 * + p * rs + j * cs elements, packed into dst on this thread (the k-block
 * at k0 then starts k0 * ceil(n / nr) * nr elements in) */
int64_t tir_gemm_b_bytes(const struct tir_gemm_form *f, int64_t k, int64_t n);
void tir_gemm_pack_b(const struct tir_gemm_form *f, void *dst, const void *b, int64_t rs,
		     int64_t cs, int64_t k, int64_t n);
/* c[m, n] (row stride ldc) (+)= the k-block of pa starting at step k0,
 * kcb steps long (pa: tir_gemm_pack_a's whole), times pb (that k-block
 * of b); load: add to what c holds.  false when the pool is stopping. */
bool tir_gemm_panels(const struct tir_gemm_form *f, const void *pa, int64_t k0, int64_t kcb,
		     int64_t m, const void *pb, int64_t n, void *c, int64_t ldc, bool load);
/* the same for a's panels [q0, q1) and b's panels [r0, r1) alone (rows
 * q0 * mr up to q1 * mr or m, columns r0 * nr up to r1 * nr or n): pb and
 * c are still the whole k-block's and the whole c's */
bool tir_gemm_panels_part(const struct tir_gemm_form *f, const void *pa, int64_t k0, int64_t kcb,
			  int64_t m, int64_t q0, int64_t q1, const void *pb, int64_t n, int64_t r0,
			  int64_t r1, void *c, int64_t ldc, bool load);
/* Whether f's kernels read an unpacked a (tir_gemm_direct_part): the
 * AVX-512 f32 ones. */
bool tir_gemm_has_direct(const struct tir_gemm_form *f);
/* tir_gemm_panels_part with a read where it lies, not packed: a[i, p] at
 * a + i * lda + p elements (the k-block's steps k0 .. k0 + kcb of rows
 * q0 * mr .. of m); the same chains, so the same bits. */
bool tir_gemm_direct_part(const struct tir_gemm_form *f, const void *a, int64_t lda, int64_t k0,
			  int64_t kcb, int64_t m, int64_t q0, int64_t q1, const void *pb, int64_t n,
			  int64_t r0, int64_t r1, void *c, int64_t ldc, bool load);
/* "tir avx512 (f32 12x32, f64 12x16, KC 192/192)": the gemm kernels the
 * vector path picks; static storage. */
const char *tir_gemm_info(void);

/* gemv.c: a product of at most TIR_GEMV_ROWS rows (m) with b read as it
 * lies (any strides: row-major, a transposed view), in one run of the
 * pool over column blocks, no packing; each element the very chain
 * tir_gemm_run makes on this vector path (the same bits).  takes: whether
 * g is one it does (f32 or f64 operands of g's dtype, no out, m in 1 ..
 * TIR_GEMV_ROWS, k and n > 0, an epi's ldc == n and c_batch == m * n).
 * run: as tir_gemm_run; call only when takes said true. */
#define TIR_GEMV_ROWS 4
bool tir_gemv_takes(const struct tir_gemm *g);
int tir_gemv_run(const struct tir_gemm *g, struct tir_err *err);

/* The product g describes on the gemm chosen (tir_gemm_kind): tir's
 * (tir_gemm_run), or OpenBLAS's (tir_blas_gemm) for f32 and f64 operands
 * of the product's own dtype; other products always on tir's.  returns 0
 * or -code (err filled). */
int tir_gemm(const struct tir_gemm *g, struct tir_err *err);
/* Whether tir_gemm uses g->c for g: 0 only for a product rounded to
 * out whose one k-block rounds each tile as it is made (c may then be
 * NULL); 1; or -code (err filled: the gemm chosen cannot run). */
int tir_gemm_needs_c(const struct tir_gemm *g, struct tir_err *err);

/* ---- OpenBLAS, loaded at its first use (blas.c) ----
 * Nothing of OpenBLAS is linked: tir_blas_sym dlopens it once (its
 * soname, found at build time; TIR_OPENBLAS names another file), with
 * OpenBLAS's own threads held at one as it loads, and resolves name in
 * it.  returns the symbol, or NULL with *err set to why (OpenBLAS not
 * installed, or no such symbol): a message in blas.c's storage, valid
 * until this thread's next call; never free it.  Thread-safe. */
void *tir_blas_sym(const char *name, char **err);
/* Whether OpenBLAS is loaded; whether it was tried and could not be
 * (nothing is loaded by asking). */
bool tir_blas_is_loaded(void);
bool tir_blas_missing(void);
/* Whether OpenBLAS, loaded, runs a kernel for SSE only (its core one
 * from before AVX: Nehalem, Core2, Opteron...); false when not loaded. */
bool tir_blas_sse_only(void);
/* Which gemm runs float products: TIR_GEMM_TIR or TIR_GEMM_OPENBLAS, as
 * tir_set_gemm set it, else TIR_GEMM, else the machine's default (tir's
 * where it has a tuned path: AVX2 or AVX-512; OpenBLAS elsewhere). */
enum { TIR_GEMM_TIR, TIR_GEMM_OPENBLAS };
int tir_gemm_kind(void);
/* Whether that is the machine's default (neither TIR_GEMM nor a flag). */
bool tir_gemm_default(void);
/* Whether a product of dtype dt runs on OpenBLAS now: 1 (OpenBLAS loaded
 * by this call if need be), 0 (tir's gemm: another dtype, --gemm tir, or
 * the default with OpenBLAS missing), or -TIR_ERUNTIME when openblas was
 * asked for by name and cannot be loaded (err says why). */
int tir_gemm_blas(enum tir_dtype dt, struct tir_err *err);
/* g (f32 or f64, a_dt and b_dt 0 or dt) on OpenBLAS: its batch entries
 * one call each, in turn on OpenBLAS's threads (as many as the pool's),
 * or, many or small, as tasks on the pool with OpenBLAS on one thread;
 * epi as tir_gemm_run's.  Call only when tir_gemm_blas said 1. */
int tir_blas_gemm(const struct tir_gemm *g, struct tir_err *err);
/* Whether cblas reads the r x c matrix with strides rs, cs (elements) as
 * it lies: row-major (*trans false) or as the transpose of one (*trans
 * true), *ld its leading dimension. */
bool tir_blas_layout(int64_t r, int64_t c, int64_t rs, int64_t cs, bool *trans, int64_t *ld);
/* Products on OpenBLAS from tasks of the caller's own (conv2d's,
 * attention's): tir_blas_lock(threads) before the run (OpenBLAS's count,
 * 1 for calls from pool tasks), tir_blas_unlock after; between them
 * tir_blas_call, c[m, n] (row stride ldc) = (acc ? c : 0) + op(a) @ op(b)
 * of dt (op: transposed when ta, tb; lda, ldb as tir_blas_layout). */
void tir_blas_lock(int threads);
void tir_blas_unlock(void);
void tir_blas_call(enum tir_dtype dt, int64_t m, int64_t n, int64_t k, const void *a, bool ta, int64_t lda,
		   const void *b, bool tb, int64_t ldb, bool acc, void *c, int64_t ldc);

/* nn (float dtypes; all inputs in out's dtype) */
int tir_k_softmax(const struct tir_tensor *x, int axis, bool log, struct tir_tensor *out,
		  struct tir_err *err);
/* over the last axis; weight, bias [D] (bias NULL for rmsnorm) */
int tir_k_layernorm(const struct tir_tensor *x, const struct tir_tensor *w,
		    const struct tir_tensor *b, double eps, struct tir_tensor *out,
		    struct tir_err *err);
int tir_k_rmsnorm(const struct tir_tensor *x, const struct tir_tensor *w, double eps,
		  struct tir_tensor *out, struct tir_err *err);
/* An [N, C, H, W] input and out, and strides and paddings in range, for
 * op (conv2d, a pool): 0, or the error saying which is not. */
int tir_nchw_window_check(const char *op, const struct tir_tensor *x, const struct tir_tensor *out,
			  const int64_t stride[2], const int64_t pad[2], struct tir_err *err);
/* x [N, C, H, W], w [O, C, kh, kw], bias [O] or NULL */
int tir_k_conv2d(const struct tir_tensor *x, const struct tir_tensor *w,
		 const struct tir_tensor *bias, const int64_t stride[2],
		 const int64_t padding[2], struct tir_tensor *out, struct tir_err *err);
/* conv.c: conv2d with dilation and groups (x's channels in groups of
 * C / groups, each with O / groups filters of w [O, C / groups, kh, kw]). */
int tir_k_conv2d_ex(const struct tir_tensor *x, const struct tir_tensor *w, const struct tir_tensor *bias,
		    const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2], int64_t groups,
		    struct tir_tensor *out, struct tir_err *err);
/* window.c: max or average pooling of x [N, C, H, W] (f32, f64; max also
 * i32, i64) into out [N, C, oh, ow] (contiguous), padded as PyTorch pads:
 * -inf (the type's least integer) for max, zeros for the average, counted
 * when count_pad (count_include_pad), else each window's mean is over its
 * real elements.  tir_k_pool2d: no padding.  tir_window_build: the build
 * of the vector path in use ("gen", "a2", "a5"). */
int tir_k_pool2d(bool max, const struct tir_tensor *x, const int64_t kernel[2],
		 const int64_t stride[2], struct tir_tensor *out, struct tir_err *err);
const char *tir_window_build(void);
int tir_k_pool2d_ex(bool max, const struct tir_tensor *x, const int64_t kernel[2], const int64_t stride[2],
		    const int64_t padding[2], bool count_pad, struct tir_tensor *out, struct tir_err *err);

/* axis.c, scan.c, sort.c, einsum.c: NumPy's ops along axes.  Each makes
 * out (empty on entry: these allocate it) in dtype dt. */
/* x's axes in mask moved last, converted to dt, contiguous: rows x cols
 * (the view's shape kept: x's other axes, then mask's) */
int tir_axes_last(const struct tir_tensor *x, const bool *mask, enum tir_dtype dt, struct tir_tensor *rows,
		  int64_t *nrows, int64_t *ncols, struct tir_err *err);
/* res (a result laid out by tir_axes_last with axis alone last) back in
 * x's axis order, converted to dt */
int tir_axis_back(const struct tir_tensor *res, int rank, int axis, enum tir_dtype dt, struct tir_tensor *out,
		  struct tir_err *err);
/* any, all, std, var (ddof), logsumexp over the axes in mask, out of
 * shape[rank] */
int tir_k_axes(enum tir_op op, const struct tir_tensor *x, const bool *mask, int64_t ddof, int rank,
	       const int64_t *shape, enum tir_dtype dt, struct tir_tensor *out, struct tir_err *err);
/* cumsum (prod false) or cumprod along axis, or the flattened x (axis -1) */
int tir_k_scan(bool prod, const struct tir_tensor *x, int axis, enum tir_dtype dt, struct tir_tensor *out,
	       struct tir_err *err);
/* sort (the values) or argsort (arg: the i64 indices) along axis, stable */
int tir_k_sort(bool arg, const struct tir_tensor *x, int axis, enum tir_dtype dt, struct tir_tensor *out,
	       struct tir_err *err);
/* xs[0..n) of one shape joined along a new axis into out (allocated) */
int tir_k_stack(const struct tir_tensor *const *xs, int n, int axis, struct tir_tensor *out, struct tir_err *err);
/* einsum of xs[0..n) (of dtype dt) into out, made in dt */
int tir_k_einsum(const char *spec, const struct tir_tensor *xs, int n, enum tir_dtype dt, struct tir_tensor *out,
		 struct tir_err *err);

/* act.c: elu, celu (alpha a), leaky_relu (slope a), hardsigmoid
 * (max(0, min(1, a x + b))), prelu (slope sl, broadcast to x) of x, out
 * made in dt (f32 or f64); tile of x to shape[rank]; triu (upper) or
 * tril of x's last two axes from diagonal k.  out empty on entry. */
int tir_k_act(enum tir_op op, const struct tir_tensor *x, const struct tir_tensor *sl, double a, double b,
	      enum tir_dtype dt, struct tir_tensor *out, struct tir_err *err);
int tir_k_tile(const struct tir_tensor *x, int rank, const int64_t *shape, struct tir_tensor *out,
	       struct tir_err *err);
int tir_k_trilu(bool upper, const struct tir_tensor *x, int64_t k, struct tir_tensor *out, struct tir_err *err);

/* q [..., Lq, d], k [..., Lk, d], v [..., Lk, dv], same rank, batch axes
 * broadcast to out's; out [..., Lq, dv] */
int tir_k_attention(const struct tir_tensor *q, const struct tir_tensor *k,
		    const struct tir_tensor *v, bool causal, struct tir_tensor *out,
		    struct tir_err *err);

/* ---- linear algebra (linalg.c) ---- */
/* A LINALG node (ops.def) on its operands as given (any dtype: converted
 * here); out: its one result, or the pack of several (ir.h). */
int tir_k_linalg(const struct tir_node *n, const struct tir_tensor *in, struct tir_tensor *out,
		 struct tir_err *err);
/* A RESULT node: a view of its result's bytes in the pack. */
/* several.c: split and topk, their results packed into out (allocated here) */
int tir_k_several(const struct tir_node *n, const struct tir_tensor *in, struct tir_tensor *out,
		  struct tir_err *err);
/* sort.c: the k largest (or smallest) of x along axis and their indices, a
 * stable sort (ties: the lower index first; NaN larger than any number),
 * into values (x's dtype) and indices (i64), contiguous, allocated */
int tir_k_topk(const struct tir_tensor *x, int axis, int64_t k, bool largest, struct tir_tensor *values,
	       struct tir_tensor *indices, struct tir_err *err);
int tir_k_result(const struct tir_node *n, const struct tir_tensor *pack, struct tir_tensor *out,
		 struct tir_err *err);
/* An OpenBLAS symbol by name, or NULL with *err saying why (blas.c). */
void *tir_blas_sym(const char *name, char **err);

/* ---- the thread pool and OpenBLAS's threads (pool.c) ----
 * Kernels split their work into tasks whose number and bounds depend only
 * on the shapes and the caches (machine.c), never on the thread count;
 * tasks write disjoint outputs, so a result is bitwise the same with any
 * number of threads (OpenBLAS's products excepted: blas.c). */

/* The most threads a run uses (caller included); per-worker scratch arrays
 * are sized by it. */
#define TIR_POOL_MAX 256
/* Threads for tir_pool_run, caller included; n < 1: one per online CPU,
 * more than TIR_POOL_MAX: TIR_POOL_MAX.  Takes effect at the next run,
 * which starts (or stops) workers as needed; they are joined at exit or by
 * tir_pool_shutdown.  The default, never set, is one per online CPU. */
void tir_pool_set_threads(int n);
/* The thread count runs use now (>= 1). */
int tir_pool_threads(void);
/* The calling thread's slot in [0, TIR_POOL_MAX): 0 for the thread that
 * called tir_pool_run (and any thread outside the pool), 1.. for workers;
 * two threads running tasks of one run never share a slot. */
int tir_pool_worker(void);
/* Run fn(ctx, t) for every t in 0 .. ntasks-1, each exactly once, on the
 * workers and the calling thread, in no fixed order, but each begun only
 * after every lower t was (claimed in turn), so a task may wait for one
 * of lower index (gemm.c's stages do); returns when all are done.  Called from inside a task, while another thread's run is in
 * progress, or with one thread, the tasks run inline in order.  returns:
 * the number of threads the tasks were offered to (1 when inline, 0 when
 * ntasks <= 0). */
int tir_pool_run(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx);
/* tir_pool_run for kernels whose tasks never wait for one another: every
 * task 0 .. ntasks-1 exactly once, in no order (not even the claiming in
 * turn that tir_pool_run promises).  Each thread walks a share of the
 * indices of its own, contiguous and upward, the calling thread the
 * first; a thread done with its share takes the back half of what is
 * left of another's.  So the threads stream through memory apart, each
 * task where its last ended, rather than take turns at neighbouring tasks
 * (streaming kernels: rows.c, elementwise.c, lib/fusion/vm.c...).  The
 * shares follow the thread count, the tasks never: a kernel cuts them as
 * for tir_pool_run, so its results do not change with the thread count.
 * Inline as tir_pool_run's; the same return; counted in tir_pool_offered. */
int tir_pool_run_shares(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx);
/* tir_pool_run for the tasks that pack a kernel's operands: not counted
 * in tir_pool_offered (--profile's tasks are a kernel's compute) */
int tir_pool_run_packing(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx);
/* Stop and join the workers (the next run starts them again).  Waits for a
 * run in progress to end; does nothing from inside a task. */
void tir_pool_shutdown(void);
/* Tasks the calling thread has offered to the pool so far, in runs started
 * outside a task (a nested run's tasks are its caller's task): a kernel's
 * count is the difference across it (--profile's tasks).  Counted whatever
 * the thread count, inline runs included. */
int64_t tir_pool_offered(void);
/* The stop flag of the runs this thread starts from now on (NULL: none):
 * once *flag is set, the tasks of such a run not yet begun are skipped,
 * on every thread, and tir_pool_stopping() turns true inside those under
 * way, so that a kernel that is cut short ends within one task (or within
 * the step between two checks of a long task).  What a stopped kernel
 * wrote is not a result: its caller (tir_exec_run) looks at the flag after
 * it and fails with TIR_EINTERRUPT.  Returns the flag it replaces. */
volatile sig_atomic_t *tir_pool_set_stop(volatile sig_atomic_t *flag);
/* Whether the run the calling thread works for has been told to stop: for
 * tasks long enough to look between their steps (gemm's tiles). */
bool tir_pool_stopping(void);
/* Tracing (tir run --trace): while on, each thread that works on a run
 * notes one span, from its first task to the end of its last, and the
 * tasks it ran; slot 0 is the thread that started the run, slot k its
 * k-th worker.  tir_pool_trace(true) clears what was noted, (false)
 * stops noting and keeps it;
 * tir_pool_trace_take hands the spans over (new array, free(); *n of
 * them) and clears them: call it while no run is in progress. */
struct tir_pool_span {
	int slot;
	int64_t t0_ns, t1_ns;    /* CLOCK_MONOTONIC */
	int64_t tasks;
	bool packing;            /* tasks of tir_pool_run_packing */
};
void tir_pool_trace(bool on);
struct tir_pool_span *tir_pool_trace_take(size_t *n);
/* ---- end of the thread pool block ---- */

/* ---- the machine (machine.c) ----
 * Every block size fitted to a CPU is derived from its caches, read once;
 * the rules are by each constant (machine.c, matmul.c, nn.c, rows.c,
 * lib/fusion/vm.c).  Block sizes never depend on the thread count. */

/* What a kernel splitting its work aims for: 4 tasks per thread at 64
 * threads, so that dynamic claiming balances uneven tasks and busy cores. */
#define TIR_TASKS_WANT 256

struct tir_caches {
	int64_t l1d, l2, l3;     /* bytes of one cache, as reported; L1d and L2
				  * are taken as a core's own (l3: 0 unknown) */
	int64_t l1d_ways;        /* L1d's associativity */
	int64_t line;            /* bytes per cache line */
	char source[32];         /* where they came from: "sysconf", "sysfs", "default" */
};
/* The caches: sysconf, else /sys/devices/system/cpu/cpu0/cache, else the
 * defaults machine.c documents; read at the first call.  static storage. */
const struct tir_caches *tir_machine_caches(void);
/* Where the shared object `so` is: the environment variable env names it
 * (when set), else it sits next to the running tir binary.  false when the
 * binary cannot be found (path says nothing then). */
bool tir_machine_lib_path(const char *env, const char *so, char *path, size_t cap);
/* "L1d 48 KiB, L2 2 MiB, L3 480 MiB (sysconf)"; static storage. */
const char *tir_machine_info(void);
/* A sysfs cache size ("48K", "2048K", "1M") in bytes; 0 when unreadable. */
int64_t tir_machine_parse_size(const char *s);
/* Items per task for a kernel streaming n items of item_bytes each: about
 * n / TIR_TASKS_WANT, but a task holds at least L1d and at most L2 bytes
 * (and at least one item).  From the shape and the caches only. */
int64_t tir_task_items(int64_t n, int64_t item_bytes);

/* ---- one node by its reference kernel (eval.c) ---- */

/* v in dtype dt: a new reference to v itself when it is of dt, else a
 * converted copy; release it. */
int tir_tensor_as_dtype(const struct tir_tensor *v, enum tir_dtype dt, struct tir_tensor *out,
			struct tir_err *err);
/* A matmul's operand: a storage type as it is (gemm.c widens it as it
 * packs), else as tir_tensor_as_dtype to the product's dtype dt. */
int tir_matmul_operand(const struct tir_tensor *v, enum tir_dtype dt, struct tir_tensor *out,
		       struct tir_err *err);
/* A matmul's operands a, b as tir_k_matmul_epi takes them: a [k] operand
 * lifted to [1, k] ([k, 1]), the batch axes broadcast to each other's (new
 * views av, bv; release them); rank and shape[] are the product's. */
void tir_matmul_views(const struct tir_tensor *a, const struct tir_tensor *b, struct tir_tensor *av,
		      struct tir_tensor *bv, int *rank, int64_t *shape);
/* Compute node n by its reference kernel from its operands' values in[]
 * (any dtype and layout: converted and broadcast here) into out (empty);
 * given: an INPUT node's value (NULL: none given, an error naming
 * --input).  On failure err->loc is n's when no kernel set it, and the
 * message starts with n's op. */
int tir_node_eval(const struct tir_node *n, struct tir_tensor *in, const struct tir_tensor *given,
		  struct tir_tensor *out, struct tir_err *err);
/* A weak scalar literal's value (CONST with type.weak), as tir_node_eval
 * makes it, without a tensor: its one element, 8 bytes at most, into
 * val; returns its dtype (f64 for a float, i64 for an integer, bool). */
enum tir_dtype tir_const_weak_value(const struct tir_node *n, void *val);

/* rows.c: softmax, log_softmax (w, b NULL), layernorm, rmsnorm (b NULL)
 * over the last axis when x, out (and w, b, as [D]) are contiguous of one
 * float dtype; false (nothing done) otherwise, for the general loops. */
bool tir_rows_apply(enum tir_op op, const struct tir_tensor *x, const struct tir_tensor *w,
		    const struct tir_tensor *b, double eps, struct tir_tensor *out);

/* attention's scores s[rows, lk] of query rows r0.. (f32 or f64), in
 * place, on this thread: each row times scale (rounded to the dtype,
 * scale too), then its softmax as tir_rows_apply's (over the first r0 + i
 * + 1 keys of row i when causal, zeros after). */
void tir_rows_scores(enum tir_dtype dt, void *s, int64_t rows, int64_t lk, int64_t r0,
		     bool causal, double scale);

/* Test hooks: the build of reduce.c's (rows.c's) vector loops that the
 * vector path picks, "gen", "a2" or "a5" (vmath.h's TIR_ISA_BUILDS). */
const char *tir_reduce_build(void);
const char *tir_rows_build(void);
/* Test hook: attention's batch entries a group (their k and v packed
 * together, then their chunks run) when n > 0; 0 puts back the choice by
 * the last-level cache.  Results never depend on it. */
void tir_attention_test_group(int64_t n);

/* ---- files: .npy and .safetensors ----
 * Every header field is validated against the file's size; errors name the
 * file (err->msg starts with the path). */

struct tir_file_info {
	enum tir_dtype dtype;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	uint64_t data_offset;   /* bytes from the start of the file */
	uint64_t data_bytes;
};
/* Read only the header: the type and where the data is.
 * name: the tensor's name in a .safetensors file (NULL for .npy; for a
 * .safetensors file with one tensor, NULL picks it).  The format is chosen
 * by content (the npy magic), not by extension. */
int tir_file_info(const char *path, const char *name, struct tir_file_info *info,
		  struct tir_err *err);
/* Every tensor of a file, from its header alone (tir inspect): each one
 * checked as loading it would check it, whatever its dtype, and no two
 * overlapping.  Free with tir_file_listing_free (also after an error). */
struct tir_file_entry {
	char *name;              /* NULL in a .npy file */
	char dtype[64];          /* as the file names it: "F32", "BF16", "<f4" */
	bool loads;              /* tir reads it, as dt */
	enum tir_dtype dt;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	uint64_t offset, bytes;  /* its data: from the start of the file */
};
struct tir_file_listing {
	const char *format;      /* "npy", "safetensors" */
	uint64_t file_bytes, header_bytes;
	size_t n;
	struct tir_file_entry *e;
	char *metadata;          /* safetensors' __metadata__ as compact JSON, or NULL */
};
int tir_file_list(const char *path, struct tir_file_listing *list, struct tir_err *err);
void tir_file_listing_free(struct tir_file_listing *list);
/* A .safetensors header is read and checked once and kept (by the file's
 * device, inode, size and times: a changed file is read again), so later
 * loads of the file only look their tensor up.  How many headers were
 * read since the process began (tests), and forgetting those kept. */
uint64_t tir_file_header_reads(void);
void tir_file_headers_forget(void);
/* The value of --input NAME=SPEC into dst: SPEC is FILE, or FILE:TENSOR
 * (one tensor of a .safetensors file) when SPEC is not itself a file and
 * the part before its last ':' is.  Without a TENSOR: the file's only
 * tensor, or of several the one called NAME; else an error listing them. */
int tir_file_load_input(const char *spec, const char *input, struct tir_tensor *dst, struct tir_err *err);
/* Read the tensor (header validated, data read fully). dst must be empty. */
int tir_file_load(const char *path, const char *name, struct tir_tensor *dst,
		  struct tir_err *err);
/* Write t (any layout) as a version 1.0 .npy file that NumPy reads. */
int tir_npy_save(const char *path, const struct tir_tensor *t, struct tir_err *err);
/* Write n named tensors (any layout) as one .safetensors file. */
int tir_safetensors_save(const char *path, const char *const *names, const struct tir_tensor *const *ts,
			 int n, struct tir_err *err);

#endif
