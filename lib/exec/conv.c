/*
 * conv.c — conv2d's groups and dilation over nn.c's kernel (issue 25).
 * A dilated filter is the filter with dilation - 1 zeros between its taps
 * (the same products, plus zeros); a grouped convolution is one
 * convolution per group of channels (views of x, w and the bias), joined
 * along the channels.  (Padded pooling: window.c.)
 */
#include "exec.h"
#include "iter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* w [O, C, kh, kw] with dilation - 1 zeros between taps */
static int dilate(const struct tir_tensor *w, const int64_t dil[2], struct tir_tensor *out, struct tir_err *err)
{
	int64_t kh = w->shape[2], kw = w->shape[3];
	int64_t shape[4] = {w->shape[0], w->shape[1], dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1};
	int rc = tir_tensor_alloc(out, w->dtype, 4, shape, true, err);
	if (rc)
		return rc;
	/* out viewed with strides dil times its own: w's positions */
	struct tir_tensor v = {0};
	tir_tensor_ref(&v, out);
	memcpy(v.shape, w->shape, sizeof v.shape[0] * 4);
	v.strides[2] *= dil[0];
	v.strides[3] *= dil[1];
	struct tir_iter it;
	const int64_t *st[2] = {v.strides, w->strides};
	size_t es = tir_dtype_size(w->dtype);
	char *d = tir_tensor_data(&v);
	const char *s = tir_tensor_data(w);
	if (tir_tensor_numel(w) && tir_iter_init(&it, 4, w->shape, 2, st))
		do {
			for (int64_t i = 0; i < it.inner; i++)
				memcpy(d + (it.off[0] + i * it.istride[0]) * (int64_t)es,
				       s + (it.off[1] + i * it.istride[1]) * (int64_t)es, es);
		} while (tir_iter_next(&it));
	tir_tensor_release(&v);
	return 0;
}

int tir_k_conv2d_ex(const struct tir_tensor *x, const struct tir_tensor *w, const struct tir_tensor *bias,
		    const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2], int64_t groups,
		    struct tir_tensor *out, struct tir_err *err)
{
	struct tir_tensor wd = {0};
	const struct tir_tensor *wf = w;
	int rc = 0;
	if (dilation[0] != 1 || dilation[1] != 1) {
		if ((rc = dilate(w, dilation, &wd, err)))
			return rc;
		wf = &wd;
	}
	if (groups == 1) {
		rc = tir_k_conv2d(x, wf, bias, stride, padding, out, err);
		tir_tensor_release(&wd);
		return rc;
	}
	int64_t cg = x->shape[1] / groups, og = w->shape[0] / groups;
	struct tir_tensor *part = calloc((size_t)groups, sizeof *part);
	const struct tir_tensor **parts = calloc((size_t)groups, sizeof *parts);
	if (!part || !parts) {
		rc = tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (int64_t g = 0; g < groups && !rc; g++) {
		struct tir_tensor xg = {0}, wg = {0}, bg = {0};
		tir_view_slice(x, 1, g * cg, 1, cg, &xg);
		tir_view_slice(wf, 0, g * og, 1, og, &wg);
		if (bias)
			tir_view_slice(bias, 0, g * og, 1, og, &bg);
		int64_t shape[4] = {out->shape[0], og, out->shape[2], out->shape[3]};
		rc = tir_tensor_alloc(&part[g], out->dtype, 4, shape, false, err);
		if (!rc)
			rc = tir_k_conv2d(&xg, &wg, bias ? &bg : NULL, stride, padding, &part[g], err);
		parts[g] = &part[g];
		tir_tensor_release(&xg);
		tir_tensor_release(&wg);
		tir_tensor_release(&bg);
	}
	if (!rc)
		rc = tir_k_concat(parts, (int)groups, 1, out, err);
out:
	for (int64_t g = 0; part && g < groups; g++)
		tir_tensor_release(&part[g]);
	free(part);
	free(parts);
	tir_tensor_release(&wd);
	return rc;
}
