/*
 * eval.c — one node by its reference kernel: the operands converted to
 * the dtype the op computes in (and broadcast for elementwise ops), the
 * kernel of its op family called, a storage dtype rounded on store.  The
 * oracle every fused kernel is checked against (`--no-fuse`).  Which nodes
 * run, in what order and on which device is the executor's (lib/engine).
 */
#include "exec.h"
#include "half.h"

#include <stdlib.h>
#include <string.h>

int tir_tensor_as_dtype(const struct tir_tensor *v, enum tir_dtype dt, struct tir_tensor *out,
			struct tir_err *err)
{
	memset(out, 0, sizeof *out);
	if (v->dtype == dt) {
		tir_tensor_ref(out, v);
		return 0;
	}
	return tir_tensor_convert(v, dt, out, err);
}

static bool is_narrow(enum tir_dtype dt);

int tir_matmul_operand(const struct tir_tensor *v, enum tir_dtype dt, struct tir_tensor *out,
		       struct tir_err *err)
{
	if (is_narrow(v->dtype)) {
		tir_tensor_ref(out, v);
		return 0;
	}
	return tir_tensor_as_dtype(v, dt, out, err);
}

/* n's result in the type it computes in (f32 for f16 and bf16, i32 for
 * i8, u8 and i16: tir_node_eval narrows it after) */
static int alloc_out(const struct tir_node *n, struct tir_tensor *out, struct tir_err *err)
{
	enum tir_dtype dt = (enum tir_dtype)n->type.dtype, w = tir_dtype_wide(dt);
	/* an f16 or bf16 creation op is made in f64 and rounded once */
	if (w == TIR_DTYPE_F32 && dt != w && tir_op(n->op)->kind == TIR_KIND_CREATE)
		w = TIR_DTYPE_F64;
	return tir_tensor_alloc(out, w, n->type.rank, n->type.shape, false, err);
}

/* concat and stack: every input, in order, to one kernel that joins them along axis. */
static int join_inputs(const struct tir_node *n, const struct tir_tensor *c, int axis,
		       int (*join)(const struct tir_tensor *const *, int, int, struct tir_tensor *, struct tir_err *),
		       struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_tensor **xs = calloc(n->nin, sizeof *xs);
	if (!xs)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < n->nin; i++)
		xs[i] = &c[i];
	int rc = alloc_out(n, out, err);
	if (!rc)
		rc = join(xs, n->nin, axis, out, err);
	free(xs);
	return rc;
}

static bool is_narrow(enum tir_dtype dt)
{
	return tir_dtype_wide(dt) != dt;
}

/* A view (or a copy of one): no arithmetic, any dtype as it is. */
static bool moves_only(enum tir_op op)
{
	switch (op) {
	case TIR_OP_RESHAPE: case TIR_OP_FLATTEN: case TIR_OP_SQUEEZE: case TIR_OP_UNSQUEEZE:
	case TIR_OP_TRANSPOSE: case TIR_OP_EXPAND: case TIR_OP_SLICE: case TIR_OP_CAST: case TIR_OP_TO:
		return true;
	default:
		return false;
	}
}

/* rand's [0, 1) values narrowed toward zero (to nearest, one just under 1
 * would round up to 1) */
static int narrow_rand(struct tir_tensor *t, enum tir_dtype dt, struct tir_tensor *out, struct tir_err *err)
{
	int rc = tir_tensor_convert(t, dt, out, err);
	if (rc)
		return rc;
	const double *s = tir_tensor_data(t); /* made in f64: alloc_out */
	uint16_t *d = tir_tensor_data(out);
	int64_t n = tir_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		double back = dt == TIR_DTYPE_F16 ? tir_h2f(d[i]) : tir_b2f(d[i]);
		if (back > s[i])
			d[i]--; /* positive: the next value down */
	}
	return 0;
}

/* A view with size-1 axes in front, up to rank r. */
static void lift_rank(const struct tir_tensor *src, int r, struct tir_tensor *dst)
{
	tir_tensor_ref(dst, src);
	int k = r - src->rank;
	if (k <= 0)
		return;
	memmove(dst->shape + k, src->shape, sizeof(int64_t) * (size_t)src->rank);
	memmove(dst->strides + k, src->strides, sizeof(int64_t) * (size_t)src->rank);
	for (int i = 0; i < k; i++) {
		dst->shape[i] = 1;
		dst->strides[i] = 0;
	}
	dst->rank = r;
}

/* Broadcast the batch axes (all but the last two) of t to batch[nb]. */
static void batch_view(const struct tir_tensor *t, int nb, const int64_t *batch, struct tir_tensor *dst)
{
	struct tir_tensor l = {0};
	lift_rank(t, nb + 2, &l);
	int64_t shape[TIR_MAX_RANK];
	memcpy(shape, batch, sizeof(int64_t) * (size_t)nb);
	shape[nb] = l.shape[nb];
	shape[nb + 1] = l.shape[nb + 1];
	tir_view_broadcast(&l, nb + 2, shape, dst);
	tir_tensor_release(&l);
}

void tir_matmul_views(const struct tir_tensor *a0, const struct tir_tensor *b0, struct tir_tensor *av,
		      struct tir_tensor *bv, int *rank, int64_t *shape)
{
	struct tir_tensor a = {0}, b = {0};
	tir_tensor_ref(&a, a0);
	tir_tensor_ref(&b, b0);
	if (a.rank == 1) { /* [k] -> [1, k] */
		a.shape[1] = a.shape[0];
		a.strides[1] = a.strides[0];
		a.shape[0] = 1;
		a.strides[0] = 0;
		a.rank = 2;
	}
	if (b.rank == 1) { /* [k] -> [k, 1] */
		b.shape[1] = 1;
		b.strides[1] = 0;
		b.rank = 2;
	}
	int nb = (a.rank > b.rank ? a.rank : b.rank) - 2;
	int64_t batch[TIR_MAX_RANK];
	for (int i = 0; i < nb; i++) {
		int ia = i - (nb - (a.rank - 2)), ib = i - (nb - (b.rank - 2));
		int64_t da = ia >= 0 ? a.shape[ia] : 1, db = ib >= 0 ? b.shape[ib] : 1;
		batch[i] = da == 1 ? db : da;
	}
	batch_view(&a, nb, batch, av);
	batch_view(&b, nb, batch, bv);
	memcpy(shape, batch, sizeof(int64_t) * (size_t)nb);
	shape[nb] = av->shape[nb];
	shape[nb + 1] = bv->shape[nb + 1];
	*rank = nb + 2;
	tir_tensor_release(&a);
	tir_tensor_release(&b);
}

/* A narrow product (bf16, f16; i8, u8, i16) is computed wide and rounded
 * or wrapped into its own type block by block, as the product makes each
 * one and it is still in the caches, not in a pass over the whole after
 * (a bf16 2048^3 product spent as long there as it saved reading its
 * operands at half the bytes).  The same conversion, element by element. */
struct narrow {
	char *d;
	const char *s;
	enum tir_dtype dt, st;
};

static int narrow_range(void *ctx, int64_t i0, int64_t n)
{
	const struct narrow *c = ctx;
	tir_cvt_run(c->dt, c->d + i0 * (int64_t)tir_dtype_size(c->dt), c->st,
		    c->s + i0 * (int64_t)tir_dtype_size(c->st), 1, n);
	return 0;
}

static int eval_matmul(const struct tir_node *n, struct tir_tensor *a0, struct tir_tensor *b0,
		       struct tir_tensor *out, struct tir_err *err)
{
	struct tir_tensor av = {0}, bv = {0}, o = {0}, nw = {0};
	int rank;
	int64_t oshape[TIR_MAX_RANK];
	enum tir_dtype ot = (enum tir_dtype)n->type.dtype, wt = tir_dtype_wide(ot);
	struct narrow nc;
	bool bf16 = ot == TIR_DTYPE_BF16 && wt == TIR_DTYPE_F32;
	tir_matmul_views(a0, b0, &av, &bv, &rank, oshape);
	int rc = 0;
	if (bf16) {
		/* its f32 sums only where the gemm keeps them (matmul.c) */
		o = (struct tir_tensor){ .dtype = wt, .rank = rank };
		memcpy(o.shape, oshape, sizeof(int64_t) * (size_t)rank);
		tir_tensor_set_contiguous_strides(&o);
	} else {
		rc = tir_tensor_alloc(&o, wt, rank, oshape, false, err);
	}
	if (!rc && ot != wt)
		rc = tir_tensor_alloc(&nw, ot, n->type.rank, n->type.shape, false, err);
	if (!rc && bf16) {
		/* rounded in the gemm's store, each tile as it is made */
		rc = tir_k_matmul_bf16(&av, &bv, &o, &nw, err);
		if (!rc)
			tir_tensor_ref(out, &nw);
	} else if (!rc && ot != wt) {
		nc = (struct narrow){ tir_tensor_data(&nw), tir_tensor_data(&o), ot, wt };
		rc = tir_k_matmul_epi(&av, &bv, &o, narrow_range, &nc, err);
		if (!rc)
			tir_tensor_ref(out, &nw);
	} else if (!rc) {
		rc = tir_k_matmul_epi(&av, &bv, &o, NULL, NULL, err);
		if (!rc)
			rc = tir_tensor_reshape(&o, n->type.rank, n->type.shape, out, err);
	}
	tir_tensor_release(&av);
	tir_tensor_release(&bv);
	tir_tensor_release(&o);
	tir_tensor_release(&nw);
	return rc;
}

static int eval_attention(const struct tir_node *n, struct tir_tensor *in, struct tir_tensor *out,
			  struct tir_err *err)
{
	int nb = n->type.rank - 2;
	struct tir_tensor v[3] = {{0}};
	for (int i = 0; i < 3; i++)
		batch_view(&in[i], nb, n->type.shape, &v[i]);
	int rc = alloc_out(n, out, err);
	if (!rc)
		rc = tir_k_attention(&v[0], &v[1], &v[2], n->attr[0].i, out, err);
	for (int i = 0; i < 3; i++)
		tir_tensor_release(&v[i]);
	return rc;
}

enum tir_dtype tir_const_weak_value(const struct tir_node *n, void *val)
{
	/* a literal keeps its exact value until an op gives it a dtype */
	enum tir_dtype dt = n->type.dtype == TIR_DTYPE_BOOL ? TIR_DTYPE_BOOL
			    : n->type.dtype == TIR_DTYPE_F32 || n->type.dtype == TIR_DTYPE_F64
				? TIR_DTYPE_F64
				: TIR_DTYPE_I64;
	if (dt == TIR_DTYPE_F64)
		memcpy(val, &n->fval, sizeof n->fval);
	else if (dt == TIR_DTYPE_I64)
		memcpy(val, &n->ival, sizeof n->ival);
	else
		*(uint8_t *)val = n->ival != 0;
	return dt;
}

static int eval_const(const struct tir_node *n, struct tir_tensor *out, struct tir_err *err)
{
	if (n->type.weak) {
		uint64_t v;
		enum tir_dtype dt = tir_const_weak_value(n, &v);
		int rc = tir_tensor_alloc(out, dt, 0, NULL, false, err);
		if (rc)
			return rc;
		memcpy(tir_tensor_data(out), &v, tir_dtype_size(dt));
		return 0;
	}
	int rc = alloc_out(n, out, err);
	if (rc)
		return rc;
	size_t bytes = (size_t)tir_type_numel(&n->type) * tir_dtype_size((enum tir_dtype)n->type.dtype);
	if (bytes)
		memcpy(tir_tensor_data(out), n->data, bytes);
	return 0;
}

static int eval_load(const struct tir_node *n, struct tir_tensor *out, struct tir_err *err)
{
	int rc = tir_file_load(n->attr[0].s, n->attr[1].set ? n->attr[1].s : NULL, out, err);
	if (rc)
		return rc;
	bool ok = out->dtype == n->type.dtype && out->rank == n->type.rank;
	for (int i = 0; ok && i < out->rank; i++)
		ok = out->shape[i] == n->type.shape[i];
	if (!ok) {
		tir_tensor_release(out);
		return tir_errf(err, TIR_EDATA, NULL, "%s changed since the program was checked", n->attr[0].s);
	}
	return 0;
}

int tir_node_eval(const struct tir_node *n, struct tir_tensor *in, const struct tir_tensor *given,
		  struct tir_tensor *out, struct tir_err *err)
{
	const struct tir_attr *at = n->attr;
	enum tir_dtype ot = (enum tir_dtype)n->type.dtype;
	enum tir_dtype cd = tir_compute_dtype(n);
	const struct tir_opdef *d = tir_op(n->op);
	int rc = 0;
	/* operands converted to the dtype the op computes in, and for
	 * elementwise ops broadcast to the result's shape */
	struct tir_tensor cv[TIR_MAX_PARAMS] = {{0}};
	struct tir_tensor *c = cv;
	/* linalg.c converts its operands itself; its results may be packed (ir.h) */
	if (n->op == TIR_OP_RESULT)
		return tir_k_result(n, &in[0], out, err);
	if (d->kind == TIR_KIND_LINALG)
		return tir_k_linalg(n, in, out, err);
	if (d->nres > 1)
		return tir_k_several(n, in, out, err);
	if (n->op == TIR_OP_SCATTER_ND) { /* converts its operands itself */
		rc = tir_k_scatter_nd(n, in, out, err);
		goto out;
	}
	bool convert = d->kind == TIR_KIND_ELEMWISE || d->kind == TIR_KIND_MATMUL ||
		       d->kind == TIR_KIND_NN || n->op == TIR_OP_CONCAT || n->op == TIR_OP_PAD ||
		       n->op == TIR_OP_STACK;
	/* the storage types compute in their wide type */
	for (int i = 0; i < n->nin && !moves_only(n->op); i++)
		if (n->in[i] && is_narrow((enum tir_dtype)n->in[i]->type.dtype))
			convert = true;
	if (n->op == TIR_OP_CONCAT || n->nin > TIR_MAX_PARAMS) {
		c = calloc(n->nin, sizeof *c);
		if (!c)
			return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	}
	if (n->op == TIR_OP_SUM || n->op == TIR_OP_PROD || n->op == TIR_OP_MEAN || n->op == TIR_OP_VAR ||
	    n->op == TIR_OP_MAX || n->op == TIR_OP_MIN)
		convert = true;
	for (int i = 0; i < n->nin && !rc; i++) {
		if (!n->in[i])
			continue;
		enum tir_dtype want = cd;
		if (n->op == TIR_OP_WHERE && i == 0)
			want = TIR_DTYPE_BOOL;
		if (n->op == TIR_OP_GATHER && i == 1 && is_narrow(in[i].dtype))
			want = TIR_DTYPE_I64; /* an index */
		if (n->op == TIR_OP_MATMUL && is_narrow(in[i].dtype) && tir_dtype_is_float(cd))
			tir_tensor_ref(&c[i], &in[i]); /* widened as gemm.c packs it */
		else if (convert && !(n->op == TIR_OP_GATHER && i == 1 && !is_narrow(in[i].dtype)))
			rc = tir_tensor_as_dtype(&in[i], want, &c[i], err);
		else
			tir_tensor_ref(&c[i], &in[i]);
		if (!rc && d->kind == TIR_KIND_ELEMWISE) {
			struct tir_tensor b = {0};
			tir_view_broadcast(&c[i], n->type.rank, n->type.shape, &b);
			tir_tensor_release(&c[i]);
			c[i] = b;
		}
	}
	if (rc)
		goto out;

	switch (d->kind) {
	case TIR_KIND_CREATE:
		switch (n->op) {
		case TIR_OP_CONST:
			rc = eval_const(n, out, err);
			break;
		case TIR_OP_INPUT:
			if (!given || !given->buf) {
				rc = tir_errf(err, TIR_EDATA, &n->loc,
					      "input '%s' has no value; give it with --input %s=FILE.npy",
					      n->input_name, n->input_name);
				break;
			}
			tir_tensor_ref(out, given);
			break;
		case TIR_OP_LOAD:
			rc = eval_load(n, out, err);
			break;
		default: {
			struct tir_gen gen;
			if ((rc = alloc_out(n, out, err)))
				break;
			if (tir_gen_init(&gen, n))
				rc = tir_k_gen(out, &gen); /* float: gen.c's vector paths */
			else if (n->op == TIR_OP_ZEROS || n->op == TIR_OP_ONES)
				rc = tir_k_fill(out, n->op == TIR_OP_ONES, n->op == TIR_OP_ONES, true);
			else if (n->op == TIR_OP_FULL)
				rc = tir_k_fill(out, at[1].is_int ? (double)at[1].i : at[1].f, at[1].i, at[1].is_int);
			else if (n->op == TIR_OP_EYE)
				rc = tir_k_eye(out);
			else if (n->op == TIR_OP_RAND || n->op == TIR_OP_RANDN)
				rc = tir_k_rand(out, (uint64_t)at[1].i, n->op == TIR_OP_RANDN);
			else if (n->op == TIR_OP_ARANGE) {
				double start, stop, step;
				tir_arange_params(n, &start, &stop, &step);
				rc = tir_k_arange(out, start, step, (int64_t)start, (int64_t)step);
			} else {
				TIR_ASSERT(!"creation op");
			}
			break;
		}
		}
		break;
	case TIR_KIND_ELEMWISE:
		if ((rc = alloc_out(n, out, err)))
			break;
		if (n->nin == 1)
			rc = tir_k_unary(n->op, &c[0], out, err);
		else if (n->nin == 2)
			rc = tir_k_binary(n->op, &c[0], &c[1], out, err);
		else
			rc = tir_k_ternary(n->op, &c[0], &c[1], &c[2], out, err);
		break;
	case TIR_KIND_REDUCE: {
		bool mask[TIR_MAX_RANK];
		if (n->op == TIR_OP_CUMSUM || n->op == TIR_OP_CUMPROD) {
			rc = tir_k_scan(n->op == TIR_OP_CUMPROD, &c[0], at[0].set ? tir_axis(at[0].i, in[0].rank) : -1,
					tir_dtype_wide(ot), out, err);
			break;
		}
		tir_reduce_mask(n, in[0].rank, mask);
		int ddof = tir_op_attr_index(n->op, "ddof");
		if (n->op == TIR_OP_STD || n->op == TIR_OP_ANY || n->op == TIR_OP_ALL || n->op == TIR_OP_LOGSUMEXP ||
		    (ddof >= 0 && at[ddof].i != 0)) {
			rc = tir_k_axes(n->op, &c[0], mask, ddof >= 0 ? at[ddof].i : 0, n->type.rank, n->type.shape,
					tir_dtype_wide(ot), out, err);
			break;
		}
		if (!(rc = alloc_out(n, out, err)))
			rc = tir_k_reduce(n->op, convert ? &c[0] : &in[0], mask, out, err);
		break;
	}
	case TIR_KIND_MOVEMENT:
		switch (n->op) {
		case TIR_OP_RESHAPE:
		case TIR_OP_FLATTEN:
		case TIR_OP_SQUEEZE:
		case TIR_OP_UNSQUEEZE:
			rc = tir_tensor_reshape(&in[0], n->type.rank, n->type.shape, out, err);
			break;
		case TIR_OP_TRANSPOSE: {
			int perm[TIR_MAX_RANK];
			for (int i = 0; i < in[0].rank; i++)
				perm[i] = at[0].set ? tir_axis(at[0].v[i], in[0].rank) : in[0].rank - 1 - i;
			tir_view_transpose(&in[0], perm, out);
			break;
		}
		case TIR_OP_EXPAND:
			tir_view_broadcast(&in[0], n->type.rank, n->type.shape, out);
			break;
		case TIR_OP_SLICE: {
			int axis = tir_axis(at[0].i, in[0].rank);
			int64_t start, step, len;
			tir_slice_params(n, in[0].shape[axis], &start, &step, &len);
			tir_view_slice(&in[0], axis, start, step, len, out);
			break;
		}
		case TIR_OP_CAST:
			rc = tir_tensor_convert(&in[0], ot, out, err);
			break;
		case TIR_OP_CONCAT:
			rc = join_inputs(n, c, tir_axis(at[0].i, n->type.rank), tir_k_concat, out, err);
			break;
		case TIR_OP_PAD:
			if (!(rc = alloc_out(n, out, err)))
				rc = tir_k_pad(&c[0], at[0].v, at[1].is_int ? (double)at[1].i : at[1].f, out, err);
			break;
		case TIR_OP_SORT:
		case TIR_OP_ARGSORT:
			rc = tir_k_sort(n->op == TIR_OP_ARGSORT, &c[0], tir_axis(at[0].i, in[0].rank), tir_dtype_wide(ot),
					out, err);
			break;
		case TIR_OP_TILE:
			rc = tir_k_tile(&c[0], n->type.rank, n->type.shape, out, err);
			break;
		case TIR_OP_TRIU:
		case TIR_OP_TRIL:
			rc = tir_k_trilu(n->op == TIR_OP_TRIU, &c[0], at[0].i, out, err);
			break;
		case TIR_OP_STACK:
			rc = join_inputs(n, c, tir_axis(at[0].i, n->type.rank), tir_k_stack, out, err);
			break;
		case TIR_OP_GATHER:
			if (!(rc = alloc_out(n, out, err)))
				rc = tir_k_gather(convert ? &c[0] : &in[0], &c[1], tir_axis(at[0].i, in[0].rank), out,
						  err);
			break;
		default:
			TIR_ASSERT(!"movement op");
		}
		break;
	case TIR_KIND_MATMUL:
		if (n->op == TIR_OP_EINSUM)
			rc = tir_k_einsum(at[0].s, c, n->nin, tir_dtype_wide(ot), out, err);
		else
			rc = eval_matmul(n, &c[0], &c[1], out, err);
		break;
	case TIR_KIND_NN:
		if (n->op == TIR_OP_ATTENTION) {
			rc = eval_attention(n, c, out, err);
			break;
		}
		if (n->op == TIR_OP_ELU || n->op == TIR_OP_CELU || n->op == TIR_OP_LEAKY_RELU ||
		    n->op == TIR_OP_HARDSIGMOID || n->op == TIR_OP_PRELU) {
			bool two = n->op == TIR_OP_HARDSIGMOID;
			rc = tir_k_act(n->op, &c[0], n->op == TIR_OP_PRELU ? &c[1] : NULL, d->nattr ? at[0].f : 0,
				       two ? at[1].f : 0, tir_dtype_wide(ot), out, err);
			break;
		}
		if ((rc = alloc_out(n, out, err)))
			break;
		switch (n->op) {
		case TIR_OP_SOFTMAX:
		case TIR_OP_LOG_SOFTMAX:
			rc = tir_k_softmax(&c[0], tir_axis(at[0].i, n->type.rank), n->op == TIR_OP_LOG_SOFTMAX,
					   out, err);
			break;
		case TIR_OP_LAYERNORM:
			rc = tir_k_layernorm(&c[0], &c[1], &c[2], at[0].f, out, err);
			break;
		case TIR_OP_RMSNORM:
			rc = tir_k_rmsnorm(&c[0], &c[1], at[0].f, out, err);
			break;
		case TIR_OP_CONV2D:
			rc = tir_k_conv2d_ex(&c[0], &c[1], n->in[2] ? &c[2] : NULL, at[0].v, at[1].v, at[2].v, at[3].i,
					     out, err);
			break;
		case TIR_OP_MAXPOOL2D:
		case TIR_OP_AVGPOOL2D:
			rc = tir_k_pool2d_ex(n->op == TIR_OP_MAXPOOL2D, &c[0], at[0].v, at[1].set ? at[1].v : at[0].v,
					     at[2].v, n->op == TIR_OP_AVGPOOL2D && at[3].i, out, err);
			break;
		default:
			TIR_ASSERT(!"nn op");
		}
		break;
	case TIR_KIND_DEVICE:
		if (n->op == TIR_OP_TO) { /* here, the value is where it goes: the executor moved it */
			tir_tensor_ref(out, &c[0]);
			break;
		}
		rc = tir_errf(err, TIR_EUNSUPPORTED, &n->loc,
			      "%s: sharded values are not supported yet (issue 13, point 2)", d->name);
		break;
	default:
		TIR_ASSERT(!"op kind");
	}
	if (!rc && is_narrow(ot) && out->dtype != ot && !moves_only(n->op) && n->op != TIR_OP_CONST &&
	    n->op != TIR_OP_INPUT && n->op != TIR_OP_LOAD) {
		/* a storage type: computed wide, rounded or wrapped on store */
		struct tir_tensor t;
		rc = n->op == TIR_OP_RAND ? narrow_rand(out, ot, &t, err) : tir_tensor_convert(out, ot, &t, err);
		tir_tensor_release(out);
		if (!rc)
			*out = t;
	}
out:
	for (int i = 0; i < n->nin; i++)
		tir_tensor_release(&c[i]);
	if (c != cv)
		free(c);
	if (rc) {
		tir_tensor_release(out);
		if (!err->loc.src)
			err->loc = n->loc;
		/* kernels say what went wrong; the op's name says where */
		if (strncmp(err->msg, d->name, strlen(d->name)) != 0) {
			char msg[sizeof err->msg];
			size_t k = strlen(d->name);
			memcpy(msg, d->name, k);
			memcpy(msg + k, ": ", 2);
			size_t room = sizeof msg - k - 3;
			size_t m = strnlen(err->msg, room);
			memcpy(msg + k + 2, err->msg, m);
			msg[k + 2 + m] = 0;
			memcpy(err->msg, msg, sizeof msg);
		}
	}
	return rc;
}
