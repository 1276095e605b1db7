/*
 * gen.c — the float creation ops as generators: zeros, ones, full, arange,
 * linspace, eye, rand and randn, whose element at flat index i is a
 * function of i alone.  The reference kernels fill a tensor with them (on
 * the pool, streaming the stores), and a fused kernel computes the
 * elements it reads in place of loading them (fusion/vm.c), so a
 * generator read by one kernel is never stored.  Not here: integer and
 * bool outputs (elementwise.c, rng.c), the Philox definition (rng.c).
 *
 * One build per vector path (portable one-lane, SSE2, AVX2, AVX-512; the
 * path of vmath.h), from one text (genv.h) of exact IEEE operations in a
 * fixed order with no contraction, so that every path, thread count and
 * blocking gives the same bits.  randn's ln and cos are this file's own
 * (genv.h), measured by test_gen against long double: f64's over 2^22
 * arguments, ln within 1.59 ULP for u = k 2^-53, cos(2 pi u) within
 * 1.6e-16 absolute (the test's bounds: 2 ULP, 2.5e-16); f32's, computed in
 * f32 on twice the lanes (lnf_n, cossinf_n), over all 2^24 arguments: ln
 * 1.61 f32 ULP, cos and sin 1.72, the normal values 3.52 (bounds 2, 2, 4).
 */
#include "exec.h"
#include "vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

#define GV_INLINE static inline __attribute__((always_inline))

/* eye: 1 where i is a multiple of n + 1 (the diagonal of [n, n]) */
static void gen_eye(void *dst, bool single, int64_t i0, int64_t st, int64_t n, int64_t k)
{
	int64_t per = k + 1;
	if (st == 1) {
		memset(dst, 0, (size_t)n * (single ? 4 : 8));
		for (int64_t d = (i0 + per - 1) / per * per; d < i0 + n; d += per) {
			if (single)
				((float *)dst)[d - i0] = 1;
			else
				((double *)dst)[d - i0] = 1;
		}
		return;
	}
	for (int64_t e = 0; e < n; e++) {
		bool on = (i0 + e * st) % per == 0;
		if (single)
			((float *)dst)[e] = on;
		else
			((double *)dst)[e] = on;
	}
}

/* arange's start and step as int32 (in *a, *b), when they are integers
 * and every value a + i b of elements [i0, i0 + n) lies within int32
 * (the values of a line: its ends).  Not a start of -0 (a + 0 b is -0 in
 * f64, 0 as an integer). */
static bool arange_ints(const struct tir_gen *g, int64_t i0, int64_t n, int32_t *a, int32_t *b)
{
	const double lim = 2147483647.0;
	if (n <= 0 || !(fabs(g->a) <= lim && fabs(g->b) <= lim) || (g->a == 0 && signbit(g->a)))
		return false;
	*a = (int32_t)g->a;
	*b = (int32_t)g->b;
	double first = g->a + (double)i0 * g->b, last = g->a + (double)(i0 + n - 1) * g->b;
	return (double)*a == g->a && (double)*b == g->b && (double)(i0 + n - 1) * fabs(g->b) <= lim &&
	       fabs(first) <= lim && fabs(last) <= lim;
}

/* the one-lane build: the scalar path */
#define GV_SFX s1
#define GV_TGT
#define GV_VB 8
#define GV_MUL(a, b) (((a) & 0xffffffffu) * (b))
#define GV_HI(x) ((x) >> 32)
#define GV_SQRT(x) ((VD){__builtin_sqrt((x)[0])})
#define GV_SQRTF(x) ((WF){__builtin_sqrtf((x)[0]), __builtin_sqrtf((x)[1])})
#include "genv.h"
#undef GV_SFX
#undef GV_TGT
#undef GV_VB
#undef GV_MUL
#undef GV_HI
#undef GV_SQRT
#undef GV_SQRTF

/* two lanes: SSE2 (any x86-64), else portable */
#define GV_SFX v2
#define GV_TGT
#define GV_VB 16
#if defined(__x86_64__)
#define GV_MUL(a, b) ((__typeof__(a))_mm_mul_epu32((__m128i)(a), (__m128i)(b)))
#define GV_HI(x) ((__typeof__(x))_mm_shuffle_epi32((__m128i)(x), 0xb1))
#define GV_SQRT(x) ((__typeof__(x))_mm_sqrt_pd((__m128d)(x)))
#define GV_SQRTF(x) ((__typeof__(x))_mm_sqrt_ps((__m128)(x)))
#define GV_NTD(d, v) _mm_stream_pd((double *)(void *)(d), (__m128d)(v))
#else
#define GV_MUL(a, b) (((a) & 0xffffffffu) * (b))
#define GV_HI(x) ((x) >> 32)
#define GV_SQRT(x) ((__typeof__(x)){__builtin_sqrt((x)[0]), __builtin_sqrt((x)[1])})
#define GV_SQRTF(x) ((__typeof__(x)){__builtin_sqrtf((x)[0]), __builtin_sqrtf((x)[1]), __builtin_sqrtf((x)[2]), __builtin_sqrtf((x)[3])})
#endif
#include "genv.h"
#undef GV_SFX
#undef GV_TGT
#undef GV_VB
#undef GV_MUL
#undef GV_HI
#undef GV_SQRT
#undef GV_SQRTF
#undef GV_NTD

#if TIR_ISA_X86
#define GV_SFX a2
#define GV_TGT TIR_ISA_A2
#define GV_VB 32
#define GV_MUL(a, b) ((__typeof__(a))_mm256_mul_epu32((__m256i)(a), (__m256i)(b)))
#define GV_HI(x) ((__typeof__(x))_mm256_shuffle_epi32((__m256i)(x), 0xb1))
#define GV_SQRT(x) ((__typeof__(x))_mm256_sqrt_pd((__m256d)(x)))
#define GV_SQRTF(x) ((__typeof__(x))_mm256_sqrt_ps((__m256)(x)))
#define GV_NTF(d, f) _mm_stream_ps((float *)(void *)(d), (__m128)(f))
#define GV_NTD(d, v) _mm256_stream_pd((double *)(void *)(d), (__m256d)(v))
#include "genv.h"
#undef GV_SFX
#undef GV_TGT
#undef GV_VB
#undef GV_MUL
#undef GV_HI
#undef GV_SQRT
#undef GV_SQRTF
#undef GV_NTF
#undef GV_NTD

#define GV_SFX a5
#define GV_TGT TIR_ISA_A5
#define GV_VB 64
#define GV_MUL(a, b) ((__typeof__(a))_mm512_mul_epu32((__m512i)(a), (__m512i)(b)))
#define GV_HI(x) ((__typeof__(x))_mm512_shuffle_epi32((__m512i)(x), _MM_PERM_CDAB))
#define GV_SQRT(x) ((__typeof__(x))_mm512_sqrt_pd((__m512d)(x)))
#define GV_SQRTF(x) ((__typeof__(x))_mm512_sqrt_ps((__m512)(x)))
#define GV_NTF(d, f) _mm256_stream_ps((float *)(void *)(d), (__m256)(f))
#define GV_NTD(d, v) _mm512_stream_pd((double *)(void *)(d), (__m512d)(v))
#include "genv.h"
#undef GV_SFX
#undef GV_TGT
#undef GV_VB
#undef GV_MUL
#undef GV_HI
#undef GV_SQRT
#undef GV_SQRTF
#undef GV_NTF
#undef GV_NTD
#endif

typedef void (*gen_fn)(const struct tir_gen *, void *, int64_t, int64_t, int64_t, bool);

static gen_fn gen_of(enum tir_vmath_path p)
{
	switch (p) {
	case TIR_VMATH_SCALAR: return run_s1;
	case TIR_VMATH_SSE2: return run_v2;
#if TIR_ISA_X86
	case TIR_VMATH_AVX2: return run_a2;
	case TIR_VMATH_AVX512: return run_a5;
#endif
	default: return run_v2;
	}
}

void tir_gen_run(const struct tir_gen *g, void *dst, int64_t i0, int64_t st, int64_t n)
{
	gen_of(tir_vmath_path())(g, dst, i0, st, n, false);
}

void tir_gen_run_on(enum tir_vmath_path p, const struct tir_gen *g, void *dst, int64_t i0, int64_t st,
		    int64_t n)
{
	gen_of(p)(g, dst, i0, st, n, false);
}

double tir_gen_ln(double u)
{
	vd_s1 v = {u};
	return ln_s1(v)[0];
}

double tir_gen_cos2pi(double u)
{
	vd_s1 v = {u}, c, s;
	cossin2pi_s1(v, &c, &s);
	return c[0];
}

double tir_gen_sin2pi(double u)
{
	vd_s1 v = {u}, c, s;
	cossin2pi_s1(v, &c, &s);
	return s[0];
}

float tir_gen_lnf(float u)
{
	wf_s1 v = {u, u}, r;
	lnf_n_s1(&v, &r, 1);
	return r[0];
}

float tir_gen_cos2pif(float u)
{
	wf_s1 v = {u, u}, c, s;
	cossinf_n_s1(&v, &c, &s, 1);
	return c[0];
}

float tir_gen_sin2pif(float u)
{
	wf_s1 v = {u, u}, c, s;
	cossinf_n_s1(&v, &c, &s, 1);
	return s[0];
}

/* ---- the generator of a node ---- */

static void gen_keys(struct tir_gen *g, uint64_t seed)
{
	uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
	for (int r = 0; r < 10; r++) {
		g->k0[r] = k0;
		g->k1[r] = k1;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
}

bool tir_gen_is_op(enum tir_op op)
{
	switch (op) {
	case TIR_OP_ZEROS: case TIR_OP_ONES: case TIR_OP_FULL: case TIR_OP_ARANGE:
	case TIR_OP_LINSPACE: case TIR_OP_EYE: case TIR_OP_RAND: case TIR_OP_RANDN:
		return true;
	default:
		return false;
	}
}

bool tir_gen_init(struct tir_gen *g, const struct tir_node *n)
{
	const struct tir_attr *at = n->attr;
	memset(g, 0, sizeof *g);
	g->op = n->op;
	g->dt = (enum tir_dtype)n->type.dtype;
	if (g->dt == TIR_DTYPE_F16 || g->dt == TIR_DTYPE_BF16)
		g->dt = TIR_DTYPE_F64; /* made in f64, rounded once (eval.c) */
	if (!tir_gen_is_op(n->op) || (g->dt != TIR_DTYPE_F32 && g->dt != TIR_DTYPE_F64))
		return false;
	switch (n->op) {
	case TIR_OP_ZEROS: g->a = 0; break;
	case TIR_OP_ONES: g->a = 1; break;
	case TIR_OP_FULL: g->a = at[1].is_int ? (double)at[1].i : at[1].f; break;
	case TIR_OP_ARANGE: {
		double stop;
		tir_arange_params(n, &g->a, &stop, &g->b);
		break;
	}
	case TIR_OP_LINSPACE:
		tir_linspace_params(n, &g->a, &g->e, &g->n, &g->endpoint, &g->b, &g->c, &g->d);
		break;
	case TIR_OP_EYE: g->n = n->type.shape[0]; break;
	default: gen_keys(g, (uint64_t)at[1].i); break;
	}
	return true;
}

/* Bytes moved that computing one element costs, as fuse.c counts work:
 * arange and the fills cost as much as their store, rand (a Philox block
 * for several elements) more, randn (a logarithm and a cosine besides)
 * most; set from their times against a fill's. */
int64_t tir_gen_cost(enum tir_op op)
{
	switch (op) {
	case TIR_OP_RAND: return 8;
	case TIR_OP_RANDN: return 24;
	case TIR_OP_ARANGE: case TIR_OP_LINSPACE: case TIR_OP_EYE: return 1;
	default: return 0;
	}
}

/* ---- the reference kernel: fill a tensor ---- */

#define GEN_CHUNK 1024 /* tasks are whole chunks, so that streamed stores stay aligned */

/* Tensors from this many bytes are streamed out (each vector stored by
 * the generator straight to memory, past the caches): 4 x L2, as the
 * fused kernels' roots (vm.c's ntmin), more than the caches near a core
 * hold, so not read back from them soon anyway. */
static int64_t gen_stream_min(void)
{
	return 4 * tir_machine_caches()->l2;
}

struct gen_job {
	const struct tir_gen *g;
	char *p;
	size_t es;
	int64_t n, per;
	bool nt;
};

static void gen_task(void *ctx, int64_t t)
{
	const struct gen_job *j = ctx;
	int64_t lo = t * j->per, hi = lo + j->per < j->n ? lo + j->per : j->n;
	gen_of(tir_vmath_path())(j->g, j->p + (size_t)lo * j->es, lo, 1, hi - lo, j->nt);
#if defined(__x86_64__)
	if (j->nt)
		_mm_sfence(); /* the streamed stores seen before the task is done */
#endif
}

int tir_k_gen(struct tir_tensor *out, const struct tir_gen *g)
{
	int64_t n = tir_tensor_numel(out);
	char *p = tir_tensor_data(out);
	if (n == 0)
		return 0;
	if (!p || !tir_tensor_is_contiguous(out) || out->dtype != g->dt)
		return -TIR_EUNSUPPORTED;
	size_t es = tir_dtype_size(g->dt);
	/* tasks of whole chunks (so that streamed ones stay aligned): the
	 * split changes no value */
	int64_t per = tir_task_items(n, (int64_t)es);
	per = (per + GEN_CHUNK - 1) / GEN_CHUNK * GEN_CHUNK;
	struct gen_job job = {g, p, es, n, per, n * (int64_t)es >= gen_stream_min()};
	int64_t nt = (n + per - 1) / per;
	if (nt > 1)
		tir_pool_run_shares(nt, gen_task, &job);
	else
		gen_task(&job, 0);
	return 0;
}
