/*
 * scan.c — cumsum and cumprod along one axis (NumPy's accumulate): floats
 * accumulate in their own dtype, element after element, as NumPy's do;
 * integers and bool in i64, wrapping.  No axis: the flattened elements.
 */
#include "exec.h"

#include <string.h>

#define SCAN_ROWS(T, ACC)                                                    \
	do {                                                                 \
		T *p = data;                                                 \
		for (int64_t r = 0; r < nrows; r++, p += cols) {              \
			T acc = p[0];                                        \
			for (int64_t c = 1; c < cols; c++) {                 \
				acc = ACC;                                   \
				p[c] = acc;                                  \
			}                                                    \
		}                                                            \
	} while (0)

int tir_k_scan(bool prod, const struct tir_tensor *x, int axis, enum tir_dtype dt, struct tir_tensor *out,
	       struct tir_err *err)
{
	struct tir_tensor flat = {0}, rows = {0};
	int64_t nrows, cols;
	const struct tir_tensor *src = x;
	int rc = 0;
	if (axis < 0) { /* the flattened elements */
		int64_t n = tir_tensor_numel(x);
		if ((rc = tir_tensor_reshape(x, 1, &n, &flat, err)))
			return rc;
		src = &flat;
		axis = 0;
	}
	bool mask[TIR_MAX_RANK] = {0};
	mask[axis] = true;
	rc = tir_axes_last(src, mask, dt, &rows, &nrows, &cols, err);
	if (!rc && nrows && cols) {
		void *data = tir_tensor_data(&rows);
		switch (dt) {
		case TIR_DTYPE_F32:
			if (prod)
				SCAN_ROWS(float, acc * p[c]);
			else
				SCAN_ROWS(float, acc + p[c]);
			break;
		case TIR_DTYPE_F64:
			if (prod)
				SCAN_ROWS(double, acc * p[c]);
			else
				SCAN_ROWS(double, acc + p[c]);
			break;
		case TIR_DTYPE_I64:
			if (prod)
				SCAN_ROWS(int64_t, (int64_t)((uint64_t)acc * (uint64_t)p[c]));
			else
				SCAN_ROWS(int64_t, (int64_t)((uint64_t)acc + (uint64_t)p[c]));
			break;
		default:
			rc = tir_errf(err, TIR_EUNSUPPORTED, NULL, "%s of %s", prod ? "cumprod" : "cumsum",
				      tir_dtype_name(dt));
		}
	}
	if (!rc)
		rc = tir_axis_back(&rows, src->rank, axis, dt, out, err);
	tir_tensor_release(&rows);
	tir_tensor_release(&flat);
	return rc;
}
