/*
 * several.c — the kernels of ops with several results other than LAPACK's
 * (linalg.c): split and topk.  Each writes its results into one pack, the
 * call's value (ir.h: each result at tir_result_offset, 64-byte aligned),
 * which the RESULT nodes then read as views.
 */
#include "exec.h"

#include <string.h>

/* Result i of the call n as a contiguous tensor over the pack's bytes. */
static void pack_view(const struct tir_node *n, const struct tir_type *t, int i, const struct tir_tensor *pack,
		      struct tir_tensor *out)
{
	size_t es = tir_dtype_size((enum tir_dtype)t->dtype);
	size_t off = (size_t)pack->offset + tir_result_offset(n, i);
	TIR_ASSERT(off % es == 0);
	tir_tensor_ref(out, pack);
	out->dtype = (enum tir_dtype)t->dtype;
	out->rank = t->rank;
	memcpy(out->shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
	out->offset = (int64_t)(off / es);
	tir_tensor_set_contiguous_strides(out);
}

/* split: each section copied out of x (np.split's views, as copies) */
static int split(const struct tir_node *n, const struct tir_tensor *x, const struct tir_type *t,
		 const struct tir_tensor *pack, struct tir_err *err)
{
	int64_t start[TIR_MAX_RESULTS], len[TIR_MAX_RESULTS];
	int k = tir_split_sections(n, start, len);
	int ax = tir_axis(n->attr[1].i, x->rank);
	int rc = 0;
	for (int i = 0; i < k && !rc; i++) {
		struct tir_tensor v = {0}, o = {0};
		tir_view_slice(x, ax, start[i], 1, len[i], &v);
		pack_view(n, &t[i], i, pack, &o);
		if (tir_k_copy(&v, &o))
			rc = tir_errf(err, TIR_ETYPE, &n->loc, "split: section %d does not match its type", i);
		tir_tensor_release(&v);
		tir_tensor_release(&o);
	}
	return rc;
}

int tir_k_several(const struct tir_node *n, const struct tir_tensor *in, struct tir_tensor *out,
		  struct tir_err *err)
{
	struct tir_type t[TIR_MAX_RESULTS];
	int k = tir_node_results(n, t);
	int rc = tir_tensor_alloc(out, TIR_DTYPE_U8, 1, n->type.shape, true, err);
	if (rc)
		return rc;
	switch (n->op) {
	case TIR_OP_SPLIT:
		rc = split(n, &in[0], t, out, err);
		break;
	case TIR_OP_TOPK: {
		struct tir_tensor v = {0}, ix = {0};
		pack_view(n, &t[0], 0, out, &v);
		pack_view(n, &t[1], 1, out, &ix);
		rc = tir_k_topk(&in[0], tir_axis(n->attr[1].i, in[0].rank), n->attr[0].i, n->attr[2].i, &v, &ix, err);
		tir_tensor_release(&v);
		tir_tensor_release(&ix);
		break;
	}
	default:
		TIR_ASSERT(!"an op of several results has its kernel here");
	}
	(void)k;
	if (rc)
		tir_tensor_release(out);
	return rc;
}
