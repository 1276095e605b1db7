/*
 * test_im2col.c — conv2d's column matrix (lib/exec/nn.c: conv_pieces, the
 * im2col builds of each vector path, im2col_s2) through tir_k_conv2d, on
 * shapes whose pieces are awkward: planes not a multiple of any panel
 * (7 to 61 wide), a position block cut mid-row, paddings 0 to 3 (whole
 * padding pieces, and pieces of padding wider than one column), strides 1
 * to 3, kernels 1x1 to 7x7 and 2x5, inputs whose rows lie apart or whose
 * elements do (views), f32 and f64, one image and two.  Each vector path
 * the CPU has (TIR_VMATH) and each way of packing the columns (TIR_CONV:
 * per task, shared, the default) runs in a child process (both are chosen
 * once): every element must be, bit for bit, the chain gemm.c documents
 * (from the bias over the taps in order; fma on AVX2 and AVX-512, two
 * roundings else), so a column element misplaced or left stale shows.
 * On OpenBLAS (TIR_GEMM=openblas, its own order), near a double reference.
 */
#include "exec/exec.h"
#include "exec/vmath.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 12345;

static double frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) / (double)(1ull << 53) * 2 - 1;
}

static void fill(struct tir_tensor *t, enum tir_dtype dt, int rank, const int64_t *shape)
{
	struct tir_err err = { 0 };
	if (tir_tensor_alloc(t, dt, rank, shape, false, &err)) {
		fprintf(stderr, "alloc failed: %s\n", err.msg);
		exit(1);
	}
	for (int64_t i = 0; i < tir_tensor_numel(t); i++) {
		if (dt == TIR_DTYPE_F32)
			((float *)tir_tensor_data(t))[i] = (float)frand();
		else
			((double *)tir_tensor_data(t))[i] = frand();
	}
}

/* Element (a, b, c, d) of a rank-4 tensor, by its strides */
static double get4(const struct tir_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t o = a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
	const char *p = (const char *)tir_tensor_data(t);
	return t->dtype == TIR_DTYPE_F32 ? ((const float *)p)[o] : ((const double *)p)[o];
}

/* conv2d of x by w (kh x kw, o filters) at stride s and padding p, with
 * a bias or not, against the chain (exact) or a double reference (blas):
 * how many elements differ */
static int64_t conv_case(const struct tir_tensor *x, int64_t o, int64_t kh, int64_t kw, int64_t s, int64_t p,
			 bool with_bias, bool exact)
{
	enum tir_dtype dt = x->dtype;
	struct tir_tensor w, bias, out;
	struct tir_err err = { 0 };
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
	int64_t oh = (h + 2 * p - kh) / s + 1, ow = (wd + 2 * p - kw) / s + 1;
	fill(&w, dt, 4, (int64_t[]){ o, c, kh, kw });
	fill(&bias, dt, 1, (int64_t[]){ o });
	if (tir_tensor_alloc(&out, dt, 4, (int64_t[]){ n, o, oh, ow }, false, &err))
		exit(1);
	/* garbage, so an element left unwritten shows */
	memset(tir_tensor_data(&out), 0x7f, (size_t)tir_tensor_numel(&out) * tir_dtype_size(dt));
	int64_t bad = 0;
	if (tir_k_conv2d(x, &w, with_bias ? &bias : NULL, (int64_t[]){ s, s }, (int64_t[]){ p, p }, &out,
			 &err)) {
		fprintf(stderr, "conv2d failed: %s\n", err.msg);
		bad = 1;
	}
	enum tir_vmath_path path = tir_vmath_path();
	bool fma_path = path == TIR_VMATH_AVX2 || path == TIR_VMATH_AVX512;
	for (int64_t i0 = 0; !bad && i0 < n; i0++)
	for (int64_t f = 0; f < o; f++)
	for (int64_t y = 0; y < oh; y++)
	for (int64_t xx = 0; xx < ow; xx++) {
		double b0 = with_bias ? tir_tensor_get_f64(&bias, f) : 0, ref = b0, mag = fabs(b0);
		float cf = (float)b0;
		double cd = b0;
		for (int64_t ch = 0; ch < c; ch++)
		for (int64_t i = 0; i < kh; i++)
		for (int64_t j = 0; j < kw; j++) {
			int64_t iy = y * s - p + i, ix = xx * s - p + j;
			if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
				continue;       /* a padding tap adds a zero: c stays */
			double a = tir_tensor_get_f64(&w, ((f * c + ch) * kh + i) * kw + j);
			double v = get4(x, i0, ch, iy, ix);
			if (dt == TIR_DTYPE_F32)
				cf = fma_path ? fmaf((float)a, (float)v, cf) : cf + (float)a * (float)v;
			else
				cd = fma_path ? fma(a, v, cd) : cd + a * v;
			ref += a * v;
			mag += fabs(a * v);
		}
		double got = tir_tensor_get_f64(&out, ((i0 * o + f) * oh + y) * ow + xx);
		double want = dt == TIR_DTYPE_F32 ? cf : cd;
		double u = dt == TIR_DTYPE_F32 ? 0x1p-24 : 0x1p-53;
		if (exact ? got != want : !(fabs(got - ref) <= (c * kh * kw + 2) * u * mag))
			bad++;
	}
	tir_tensor_release(&w);
	tir_tensor_release(&bias);
	tir_tensor_release(&out);
	return bad;
}

/* The cases on one dtype: how many elements differ in all */
static int64_t conv_cases(enum tir_dtype dt, bool exact)
{
	/* n, c, h, w; o, kh, kw, stride, padding */
	static const int64_t cases[][9] = {
		{ 1, 3, 56, 56, 5, 3, 3, 1, 1 },   /* ResNet's 3x3: rows over panels */
		{ 2, 2, 13, 61, 3, 3, 3, 1, 1 },   /* rows longer than a panel */
		{ 1, 3, 7, 7, 4, 3, 3, 1, 1 },     /* a late layer's plane */
		{ 2, 2, 9, 33, 3, 1, 1, 1, 0 },    /* 1x1 */
		{ 1, 2, 15, 17, 3, 5, 5, 1, 2 },
		{ 1, 2, 12, 29, 3, 3, 3, 1, 3 },   /* padding wider than the reach */
		{ 1, 2, 8, 10, 2, 7, 7, 1, 3 },    /* padding pieces of three */
		{ 2, 3, 30, 30, 4, 7, 7, 2, 3 },   /* a stem's 7x7/2 */
		{ 1, 2, 28, 28, 3, 3, 3, 2, 1 },   /* stride 2 */
		{ 1, 2, 28, 28, 3, 1, 1, 2, 0 },   /* a downsample's 1x1/2 */
		{ 1, 2, 25, 23, 3, 3, 3, 3, 2 },   /* stride 3 */
		{ 1, 2, 11, 40, 3, 2, 5, 1, 1 },   /* a wide kernel */
		{ 1, 40, 9, 9, 3, 5, 5, 1, 2 },    /* 1000 taps: k-blocks */
		{ 2, 1, 60, 60, 2, 3, 3, 1, 0 },   /* no padding */
	};
	int64_t bad = 0;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const int64_t *q = cases[k];
		struct tir_tensor x, t, v;
		/* contiguous */
		fill(&x, dt, 4, q);
		int64_t b = conv_case(&x, q[4], q[5], q[6], q[7], q[8], k % 2 == 0, exact);
		tir_tensor_release(&x);
		/* rows apart: every other column of one twice as wide (the
		 * elements apart too), and its first half (along memory) */
		fill(&t, dt, 4, (int64_t[]){ q[0], q[1], q[2], 2 * q[3] });
		tir_view_slice(&t, 3, 1, 2, q[3], &v);
		b += conv_case(&v, q[4], q[5], q[6], q[7], q[8], true, exact);
		tir_tensor_release(&v);
		tir_view_slice(&t, 3, 0, 1, q[3], &v);
		b += conv_case(&v, q[4], q[5], q[6], q[7], q[8], false, exact);
		tir_tensor_release(&v);
		tir_tensor_release(&t);
		/* H and W swapped */
		fill(&t, dt, 4, (int64_t[]){ q[0], q[1], q[3], q[2] });
		tir_view_transpose(&t, (int[]){ 0, 1, 3, 2 }, &v);
		b += conv_case(&v, q[4], q[5], q[6], q[7], q[8], true, exact);
		tir_tensor_release(&v);
		tir_tensor_release(&t);
		if (b)
			fprintf(stderr, "test_im2col: %s case %zu: %lld elements differ\n", tir_dtype_name(dt), k,
				(long long)b);
		bad += b;
	}
	return bad;
}

/* The child: TIR_VMATH=path, TIR_CONV=way (NULL: unset), TIR_GEMM=gemm;
 * exit status 0 when every element is as it should be */
static int child(const char *path, const char *way, const char *gemm)
{
	setenv("TIR_VMATH", path, 1);
	if (way)
		setenv("TIR_CONV", way, 1);
	else
		unsetenv("TIR_CONV");
	setenv("TIR_GEMM", gemm, 1);
	bool exact = !strcmp(gemm, "tir");
	tir_set_threads(2);
	if (exact && tir_gemm_kind() != TIR_GEMM_TIR)
		return 2;
	int64_t bad = conv_cases(TIR_DTYPE_F32, exact) + conv_cases(TIR_DTYPE_F64, exact);
	tir_pool_shutdown();
	return bad ? 1 : 0;
}

int main(void)
{
	static const char *const paths[TIR_VMATH_PATH_COUNT] = { "scalar", "sse2", "avx2", "avx512" };
	static const char *const ways[] = { NULL, "own", "shared" };
	int runs = 0;
	for (int k = 0; k < TIR_VMATH_PATH_COUNT; k++) {
		if (!tir_vmath_path_ok((enum tir_vmath_path)k))
			continue;
		for (int m = 0; m < 4; m++) {
			/* OpenBLAS once, on the best path */
			bool blas = m == 3;
			if (blas && (k + 1 < TIR_VMATH_PATH_COUNT && tir_vmath_path_ok((enum tir_vmath_path)(k + 1))))
				continue;
			fflush(NULL);
			pid_t pid = fork();
			if (pid == 0)
				_exit(child(paths[k], blas ? NULL : ways[m], blas ? "openblas" : "tir"));
			int st = -1;
			CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				fprintf(stderr, "test_im2col: TIR_VMATH=%s TIR_CONV=%s TIR_GEMM=%s failed\n", paths[k],
					blas || !ways[m] ? "(unset)" : ways[m], blas ? "openblas" : "tir");
			runs++;
		}
	}
	CHECK(runs >= 4);
	return check_report("test_im2col");
}
