/*
 * einsum.c — einsum's explicit form through the gemm.  Each operand's
 * repeated letters become its diagonal (a view: the strides added), then
 * the operands are contracted left to right, two at a time: the letters
 * both share and something later needs are batch axes, the ones both
 * share and nothing later needs are summed by the product, the rest are
 * rows of one and columns of the other, so each pair is one batched
 * matmul ([batch, m, k] @ [batch, k, n], tir_k_matmul: tir's gemm for
 * floats).  A letter only one side has and nothing later needs is summed
 * first (tir_k_reduce).  The subscripts were checked (check.c).
 */
#include "exec.h"

#include <stdlib.h>
#include <string.h>

/* a value and the letter of each of its axes */
struct term {
	struct tir_tensor t;
	int n;
	char l[TIR_MAX_RANK];
};

static bool has(const struct term *a, char c)
{
	return memchr(a->l, c, (size_t)a->n) != NULL;
}

/* the axis of a that letter c names (c is one of a's) */
static int pos(const struct term *a, char c)
{
	return (int)((const char *)memchr(a->l, c, (size_t)a->n) - a->l);
}

/* a's diagonal over its repeated letters, each letter once (in the order
 * of first appearance): a view */
static void diagonal(struct term *a)
{
	struct term d = {.n = 0};
	tir_tensor_ref(&d.t, &a->t);
	for (int i = 0; i < a->n; i++) {
		char *seen = memchr(d.l, a->l[i], (size_t)d.n);
		if (seen) {
			d.t.strides[seen - d.l] += a->t.strides[i];
			continue;
		}
		d.l[d.n] = a->l[i];
		d.t.shape[d.n] = a->t.shape[i];
		d.t.strides[d.n] = a->t.strides[i];
		d.n++;
	}
	d.t.rank = d.n;
	tir_tensor_release(&a->t);
	*a = d;
}

/* sum a over its letters that neither other nor later has */
static int sum_out(struct term *a, const struct term *other, const char *later, int nlater, struct tir_err *err)
{
	bool mask[TIR_MAX_RANK] = {0}, any = false;
	struct term r = {.n = 0};
	for (int i = 0; i < a->n; i++) {
		bool need = (other && has(other, a->l[i])) || memchr(later, a->l[i], (size_t)nlater);
		mask[i] = !need;
		any |= !need;
		if (need) {
			r.l[r.n] = a->l[i];
			r.t.shape[r.n++] = a->t.shape[i];
		}
	}
	if (!any)
		return 0;
	struct tir_tensor o = {0};
	int rc = tir_tensor_alloc(&o, a->t.dtype, r.n, r.t.shape, false, err);
	if (!rc)
		rc = tir_k_reduce(TIR_OP_SUM, &a->t, mask, &o, err);
	tir_tensor_release(&a->t);
	if (rc) {
		tir_tensor_release(&o);
		return rc;
	}
	r.t = o;
	*a = r;
	return 0;
}

/* a's axes in the order of letters ls, as a contiguous [p, q, r] (the
 * products of the sizes of ls's three parts, of lengths n0, n1, n2) */
static int as_3d(const struct term *a, const char *ls, int n0, int n1, int n2, struct tir_tensor *out,
		 struct tir_err *err)
{
	int perm[TIR_MAX_RANK];
	int64_t s[3] = {1, 1, 1};
	for (int i = 0; i < n0 + n1 + n2; i++) {
		perm[i] = pos(a, ls[i]);
		s[i < n0 ? 0 : i < n0 + n1 ? 1 : 2] *= a->t.shape[perm[i]];
	}
	struct tir_tensor v = {0};
	tir_view_transpose(&a->t, perm, &v);
	int rc = tir_tensor_reshape(&v, 3, s, out, err);
	tir_tensor_release(&v);
	return rc;
}

/* a := a (x) b over their letters; later: the letters needed after */
static int contract(struct term *a, struct term *b, const char *later, int nlater, struct tir_err *err)
{
	int rc;
	if ((rc = sum_out(a, b, later, nlater, err)) || (rc = sum_out(b, a, later, nlater, err)))
		return rc;
	char bat[TIR_MAX_RANK], m[TIR_MAX_RANK], k[TIR_MAX_RANK], nn[TIR_MAX_RANK];
	int nb = 0, nm = 0, nk = 0, nq = 0;
	for (int i = 0; i < a->n; i++) {
		char c = a->l[i];
		if (!has(b, c))
			m[nm++] = c;
		else if (memchr(later, c, (size_t)nlater))
			bat[nb++] = c;
		else
			k[nk++] = c;
	}
	for (int i = 0; i < b->n; i++)
		if (!has(a, b->l[i]))
			nn[nq++] = b->l[i];
	if (nb + nm + nq > TIR_MAX_RANK)
		return tir_errf(err, TIR_EUNSUPPORTED, NULL, "a product of more than %d axes", TIR_MAX_RANK);
	char la[3 * TIR_MAX_RANK], lb[3 * TIR_MAX_RANK];
	memcpy(la, bat, (size_t)nb);
	memcpy(la + nb, m, (size_t)nm);
	memcpy(la + nb + nm, k, (size_t)nk);
	memcpy(lb, bat, (size_t)nb);
	memcpy(lb + nb, k, (size_t)nk);
	memcpy(lb + nb + nk, nn, (size_t)nq);
	struct tir_tensor a3 = {0}, b3 = {0}, o = {0};
	struct term r = {.n = 0};
	for (int i = 0; i < nb; i++)
		r.t.shape[r.n] = a->t.shape[pos(a, bat[i])], r.l[r.n++] = bat[i];
	for (int i = 0; i < nm; i++)
		r.t.shape[r.n] = a->t.shape[pos(a, m[i])], r.l[r.n++] = m[i];
	for (int i = 0; i < nq; i++)
		r.t.shape[r.n] = b->t.shape[pos(b, nn[i])], r.l[r.n++] = nn[i];
	rc = as_3d(a, la, nb, nm, nk, &a3, err);
	if (!rc)
		rc = as_3d(b, lb, nb, nk, nq, &b3, err);
	if (!rc) {
		int64_t os[3] = {a3.shape[0], a3.shape[1], b3.shape[2]};
		rc = tir_tensor_alloc(&o, a->t.dtype, 3, os, a3.shape[2] == 0, err);
	}
	if (!rc && a3.shape[2] > 0)
		rc = tir_k_matmul(&a3, &b3, &o, err);
	if (!rc)
		rc = tir_tensor_reshape(&o, r.n, r.t.shape, &r.t, err);
	tir_tensor_release(&a3);
	tir_tensor_release(&b3);
	tir_tensor_release(&o);
	if (rc)
		return rc;
	tir_tensor_release(&a->t);
	*a = r;
	return 0;
}

int tir_k_einsum(const char *spec, const struct tir_tensor *xs, int n, enum tir_dtype dt, struct tir_tensor *out,
		 struct tir_err *err)
{
	const struct tir_type *tp[TIR_EINSUM_MAX_OPS];
	struct tir_type ty[TIR_EINSUM_MAX_OPS];
	for (int i = 0; i < n; i++) {
		ty[i] = (struct tir_type){.dtype = (uint8_t)xs[i].dtype, .rank = (uint8_t)xs[i].rank};
		memcpy(ty[i].shape, xs[i].shape, sizeof(int64_t) * (size_t)xs[i].rank);
		tp[i] = &ty[i];
	}
	struct tir_einsum e;
	char why[300];
	if (tir_einsum_parse(spec, n, tp, &e, why, sizeof why))
		return tir_errf(err, TIR_ETYPE, NULL, "%s", why);
	struct term *t = calloc((size_t)n, sizeof *t);
	if (!t)
		return tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < n; i++) {
		tir_tensor_ref(&t[i].t, &xs[i]);
		t[i].n = e.len[i];
		memcpy(t[i].l, e.term[i], (size_t)e.len[i]);
		diagonal(&t[i]);
	}
	int rc = 0;
	char later[TIR_EINSUM_MAX_OPS * TIR_MAX_RANK + TIR_MAX_RANK];
	for (int i = 1; i < n && !rc; i++) {
		/* what the output and the operands after i need */
		int nl = e.nout;
		memcpy(later, e.out, (size_t)e.nout);
		for (int j = i + 1; j < n; j++) {
			memcpy(later + nl, t[j].l, (size_t)t[j].n);
			nl += t[j].n;
		}
		rc = contract(&t[0], &t[i], later, nl, err);
	}
	if (!rc)
		rc = sum_out(&t[0], NULL, e.out, e.nout, err);
	if (!rc) {
		int perm[TIR_MAX_RANK];
		for (int i = 0; i < e.nout; i++)
			perm[i] = pos(&t[0], e.out[i]);
		struct tir_tensor v = {0};
		tir_view_transpose(&t[0].t, perm, &v);
		rc = tir_tensor_convert(&v, dt, out, err);
		tir_tensor_release(&v);
	}
	for (int i = 0; i < n; i++)
		tir_tensor_release(&t[i].t);
	free(t);
	return rc;
}
