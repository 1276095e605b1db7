/*
 * gemm.c — tir's own packed float matrix product (f32, f64), GotoBLAS/BLIS
 * style: stage by stage (a k-block of KC steps of k, for a group of batch
 * entries), both operands' share of it is packed into panels (MR rows of
 * a, NR columns of b, k-major) and the output is cut into tiles, each a
 * task that runs a register-blocked micro-kernel over the packed panels.
 * A product is one run of tasks on the pool: the first stage's packing,
 * then each stage's tiles and the next stage's packing (among them, into
 * a second slot, when the stages are groups of batch entries; else after
 * them, into the one slot), see step_task; a task waits only on tasks
 * the pool began before it, never at a barrier of the whole pool.
 * One micro-kernel per vector path
 * (AVX-512F, AVX2+FMA, SSE2, portable C), written once over GCC's vector
 * types and compiled per target attribute, picked by vmath's path
 * (TIR_VMATH), with variants of fewer rows for c's bottom edge.  A caller
 * may pack b itself (tir_gemm_panels: conv2d's im2col writes the panels).
 * Not here: integer products, batch-shape checks and the matmul op itself
 * (matmul.c), im2col (nn.c).
 *
 * Why the result never depends on the threads or the cut: each output
 * element is ONE accumulation chain, c = 0 (or c's old value when
 * accumulating), then c = c + a[i, p] * b[p, j] for p = 0, 1, ..., k - 1
 * in that order, rounded as the path does it: one FMA per step on
 * AVX-512 and AVX2 (the instruction itself, through its intrinsic), a
 * rounded product and a rounded sum on SSE2 and in portable C (never
 * contracted: -std=c11 keeps fp-contract off, whatever -O).  The k-blocks of KC steps only
 * split that chain: a block's accumulators are stored to c and loaded
 * back by the next one, exactly (they have c's type; a tile's k-blocks
 * run in order, each waiting for the one before).  Lanes never mix,
 * padding rows and columns only feed outputs that are dropped, and a
 * tile at the edge runs the same kernel on a copy.  So the bits of an
 * element depend only on row i of a, column j of b and the path: not on
 * the tiles, MR, NR, KC, the caches or the thread count, and not on m or
 * n either.  (OpenBLAS cannot promise this: its threaded results differ
 * from its single-threaded ones, and a grid of single-threaded calls from
 * one whole call, on most of its x86 kernels; see docs/decisions.md.)
 *
 * Speed: the packed panels make every micro-kernel step a few aligned
 * vector loads, MR broadcasts and MR x NR/L FMAs with all accumulators in
 * registers; KC makes a b micro-panel (KC x NR) of twice L1d, and the
 * MR-row panels of a and it stream from L2 (choose_kc); a tile's a block
 * (its rows x KC) holds at most half of L2.  All from the caches read at
 * run time (machine.c).  One stage at a time (two with the one being
 * packed), its packed panels are still in the last-level cache when its
 * tiles read them (packed whole first, a 2048^3 product read 32 MiB of
 * panels back from memory); batch entries with operands of their own
 * are packed a group at a time, a quarter of L2 (choose_group: a [32,
 * 256, 64] @ [32, 64, 256] packed all 4 MiB first and read it back from
 * L3; a group's tiles now read its panels from L2, while the next
 * group is packed).  The k-blocks of one product are packed one after
 * the other into one slot: packing the next one into a second slot while
 * this one's tiles were made (no thread idle between packing and tiles)
 * measured no faster at 2048^3 on 2 threads, for 12 MiB more.  A product
 * whose stage's packed operands would not fit the buffer kept between
 * products is done in slabs that do (run_slabs).  A fused epilogue runs
 * on groups of tiles once the last k-block made them (choose_epi).
 */
#include "chain.h"
#include "exec.h"
#include "vmath.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The micro-kernel: c[0..MR)[0..NR) (row stride ldc) = (load ? c : 0) +
 * the sum over p < kc of pa[p * MR + i] * pb[p * NR + j], step by step in
 * p order, NR = NV vectors of L lanes.  pb is aligned to its vector. */
#ifndef GM_PFC
#define GM_PFC 1
#endif
#ifndef GM_PFA
#define GM_PFA 16
#endif
#ifndef GM_PFB
#define GM_PFB 16
#endif
typedef void (*gemm_kernel_fn)(int64_t kc, const void *pa, const void *pb, void *c,
			       int64_t ldc, int load);

/* MR rows of c from a panel of MS rows (MS >= MR: a tile at the bottom
 * edge of c, whose panel was packed MS wide with zeros under its rows) */
#define GM_KERNEL(NAME, TGT, T, VF, MR, NV, FMA) GM_KERNEL_R(NAME, TGT, T, VF, MR, MR, NV, FMA)
#define GM_KERNEL_R(NAME, TGT, T, VF, MR, MS, NV, FMA)                          \
	static TGT void NAME(int64_t kc, const void *pav, const void *pbv, void *cv, \
			     int64_t ldc, int load)                           \
	{                                                                    \
		GM_CHAIN_TYPES(T, VF);                                       \
		typedef T VA_ __attribute__((vector_size(sizeof(VF)), may_alias)); \
		enum { NR_ = NV * L_ };                                      \
		const T *pa = pav, *pb = pbv;                                \
		T *c = cv;                                                   \
		VF acc[MR][NV];                                              \
		GM_ACC_LOAD(VF, MR, NV, acc, c, ldc, load);                  \
		for (int64_t p = 0; p < kc; p++, pa += MS, pb += NR_) {      \
			VF b[NV];                                            \
			__builtin_prefetch(pa + GM_PFA * MS);                \
			__builtin_prefetch(pb + GM_PFB * NR_);               \
			_Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)  \
				b[v] = *(const VA_ *)(pb + v * L_);           \
			GM_ACC_STEP(VF, MR, NV, FMA, acc, b, pa[i_]);        \
		}                                                            \
		GM_ACC_STORE(MR, NV, acc, c, ldc);                           \
	}

/* A family's kernels for the bottom edge of c: NAME_rR computes R < MS
 * rows, each the same chain as in the full kernel, so c's last rows
 * are written in place at R/MS of a full tile's time (conv2d's 64
 * filters are 5 panels of 12 and one of 4: a full kernel there cost an
 * eighth more), and the table of them (NULL for 0 rows). */
#define GM_EDGES(NAME, TGT, T, VF, MS, NV, FMA, ...)                             \
	GM_EDGE_##MS(NAME, TGT, T, VF, NV, FMA)                               \
	static const gemm_kernel_fn NAME##_rows[MS] = { NULL, __VA_ARGS__ };
#define GM_E(NAME, TGT, T, VF, R, MS, NV, FMA) GM_KERNEL_R(NAME##_r##R, TGT, T, VF, R, MS, NV, FMA)
#define GM_EDGE_4(N, TGT, T, VF, NV, FMA)                                       \
	GM_E(N, TGT, T, VF, 1, 4, NV, FMA) GM_E(N, TGT, T, VF, 2, 4, NV, FMA)    \
	GM_E(N, TGT, T, VF, 3, 4, NV, FMA)
#define GM_EDGE_6(N, TGT, T, VF, NV, FMA)                                       \
	GM_E(N, TGT, T, VF, 1, 6, NV, FMA) GM_E(N, TGT, T, VF, 2, 6, NV, FMA)    \
	GM_E(N, TGT, T, VF, 3, 6, NV, FMA) GM_E(N, TGT, T, VF, 4, 6, NV, FMA)    \
	GM_E(N, TGT, T, VF, 5, 6, NV, FMA)
#define GM_EDGE_12(N, TGT, T, VF, NV, FMA)                                      \
	GM_E(N, TGT, T, VF, 1, 12, NV, FMA) GM_E(N, TGT, T, VF, 2, 12, NV, FMA)  \
	GM_E(N, TGT, T, VF, 3, 12, NV, FMA) GM_E(N, TGT, T, VF, 4, 12, NV, FMA)  \
	GM_E(N, TGT, T, VF, 5, 12, NV, FMA) GM_E(N, TGT, T, VF, 6, 12, NV, FMA)  \
	GM_E(N, TGT, T, VF, 7, 12, NV, FMA) GM_E(N, TGT, T, VF, 8, 12, NV, FMA)  \
	GM_E(N, TGT, T, VF, 9, 12, NV, FMA) GM_E(N, TGT, T, VF, 10, 12, NV, FMA) \
	GM_E(N, TGT, T, VF, 11, 12, NV, FMA)
#define GM_ROWS4(N) N##_r1, N##_r2, N##_r3
#define GM_ROWS6(N) GM_ROWS4(N), N##_r4, N##_r5
#define GM_ROWS12(N) GM_ROWS6(N), N##_r6, N##_r7, N##_r8, N##_r9, N##_r10, N##_r11
/* portable C: one-lane vectors, 4 x 4 (16 accumulators) */
GM_KERNEL(kern_sc_f32, , float, gm_f1, 4, 4, GM_MULADD)
GM_KERNEL(kern_sc_f64, , double, gm_d1, 4, 4, GM_MULADD)
GM_EDGES(kern_sc_f32, , float, gm_f1, 4, 4, GM_MULADD, GM_ROWS4(kern_sc_f32))
GM_EDGES(kern_sc_f64, , double, gm_d1, 4, 4, GM_MULADD, GM_ROWS4(kern_sc_f64))
/* SSE2 (16 registers): 6 rows x 2 vectors, 12 accumulators.  (A 4 x 12
 * f32 kernel, 4 broadcasts a step where this takes 6, was no faster: a
 * bf16 2048^3 product widened as packed on 2 threads of a Zen 5, 8
 * alternating pairs, 184.6 against 183.5 ms; conv2d's im2col would need
 * panels of any width for it, test_gemm's test_form.) */
GM_KERNEL(kern_s2_f32, , float, gm_f4, 6, 2, GM_MULADD)
GM_KERNEL(kern_s2_f64, , double, gm_d2, 6, 2, GM_MULADD)
GM_EDGES(kern_s2_f32, , float, gm_f4, 6, 2, GM_MULADD, GM_ROWS6(kern_s2_f32))
GM_EDGES(kern_s2_f64, , double, gm_d2, 6, 2, GM_MULADD, GM_ROWS6(kern_s2_f64))

#if GM_X86
/* AVX2 + FMA (16 registers): 6 x 2 vectors (12 accumulators, 2 of b, one
 * broadcast) */
GM_KERNEL(kern_a2_f32, GM_A2, float, gm_f8, 6, 2, _mm256_fmadd_ps)
GM_KERNEL(kern_a2_f64, GM_A2, double, gm_d4, 6, 2, _mm256_fmadd_pd)
GM_EDGES(kern_a2_f32, GM_A2, float, gm_f8, 6, 2, _mm256_fmadd_ps, GM_ROWS6(kern_a2_f32))
GM_EDGES(kern_a2_f64, GM_A2, double, gm_d4, 6, 2, _mm256_fmadd_pd, GM_ROWS6(kern_a2_f64))
/* AVX-512F (32 registers): 12 x 2 vectors (24 accumulators) */
GM_KERNEL(kern_a5_f32, GM_A5, float, gm_f16, 12, 2, _mm512_fmadd_ps)
GM_KERNEL(kern_a5_f64, GM_A5, double, gm_d8, 12, 2, _mm512_fmadd_pd)
GM_EDGES(kern_a5_f32, GM_A5, float, gm_f16, 12, 2, _mm512_fmadd_ps, GM_ROWS12(kern_a5_f32))
GM_EDGES(kern_a5_f64, GM_A5, double, gm_d8, 12, 2, _mm512_fmadd_pd, GM_ROWS12(kern_a5_f64))
#endif

/* Kernels whose a is read where it lies, not packed: R rows of a
 * row-major a (row stride lda elements; steps along memory), each
 * element's chain the very one of GM_KERNEL (the same FMAs in the same
 * order, only the loads of a differ).  For a product that reads each
 * panel of a few times (conv2d's weights against a few panels of
 * positions: packing 9 MiB of weights to read them twice cost more than
 * the products).  Each row is read ahead, one row a step in turn. */
typedef void (*gemm_direct_fn)(int64_t kc, const void *a, int64_t lda, const void *pb, void *c,
			       int64_t ldc, int load);
#ifndef GM_PFD
#define GM_PFD 64
#endif
#define GM_DIRECT(NAME, TGT, T, VF, MR, NV, FMA)                                 \
	static TGT void NAME(int64_t kc, const void *av, int64_t lda, const void *pbv, \
			     void *cv, int64_t ldc, int load)                      \
	{                                                                      \
		GM_CHAIN_TYPES(T, VF);                                         \
		typedef T VA_ __attribute__((vector_size(sizeof(VF)), may_alias)); \
		enum { NR_ = NV * L_ };                                        \
		const T *a = av, *pb = pbv;                                    \
		T *c = cv;                                                     \
		VF acc[MR][NV];                                                \
		GM_ACC_LOAD(VF, MR, NV, acc, c, ldc, load);                    \
		int64_t ahead = 0;                                             \
		for (int64_t p = 0; p < kc; p++, pb += NR_) {                  \
			VF b[NV];                                              \
			__builtin_prefetch(a + ahead * lda + p + GM_PFD);      \
			ahead = ahead + 1 == MR ? 0 : ahead + 1;               \
			__builtin_prefetch(pb + GM_PFB * NR_);                 \
			_Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)    \
				b[v] = *(const VA_ *)(pb + v * L_);             \
			GM_ACC_STEP(VF, MR, NV, FMA, acc, b, a[i_ * lda + p]); \
		}                                                              \
		GM_ACC_STORE(MR, NV, acc, c, ldc);                             \
	}
#if GM_X86
#define GM_D5(R) GM_DIRECT(direct_a5_f32_r##R, GM_A5, float, gm_f16, R, 2, _mm512_fmadd_ps)
GM_D5(1) GM_D5(2) GM_D5(3) GM_D5(4) GM_D5(5) GM_D5(6)
GM_D5(7) GM_D5(8) GM_D5(9) GM_D5(10) GM_D5(11) GM_D5(12)
/* [R]: R rows */
static const gemm_direct_fn direct_a5_f32[13] = {
	NULL, direct_a5_f32_r1, direct_a5_f32_r2, direct_a5_f32_r3, direct_a5_f32_r4,
	direct_a5_f32_r5, direct_a5_f32_r6, direct_a5_f32_r7, direct_a5_f32_r8,
	direct_a5_f32_r9, direct_a5_f32_r10, direct_a5_f32_r11, direct_a5_f32_r12,
};
#endif

#if GM_X86
/* bf16 products on AVX-512 BF16 (vdpbf16ps): a and b packed as pairs of
 * bf16 along k (one 32-bit element a pair, so the panels are laid out as
 * f32 ones of half the depth), c f32.  Each step adds both products of
 * a pair to the accumulator, in the instruction's order; bf16 subnormal
 * inputs count as zero (the instruction's DAZ).  12 x 2 vectors, as
 * kern_a5_f32. */
#define GM_BF16 __attribute__((target("avx512f,avx512bf16")))
/* acc (c's 12 x 32, or zeros) plus kc steps of pairs; inlined into its
 * callers (kern_bf16, out_bf16), so acc stays in registers */
GM_BF16 static inline __attribute__((always_inline)) void bf16_steps(int64_t kc, const uint32_t *pa,
								  const uint32_t *pb, const float *c,
								  int64_t ldc, int load, __m512 acc[12][2])
{
	_Pragma("GCC unroll 12") for (int i = 0; i < 12; i++)
		for (int v = 0; v < 2; v++)
			acc[i][v] = load ? _mm512_loadu_ps(c + i * ldc + v * 16) : _mm512_setzero_ps();
	for (int64_t p = 0; p < kc; p++, pa += 12, pb += 32) {
		__builtin_prefetch(pa + GM_PFA * 12);
		__builtin_prefetch(pb + GM_PFB * 32);
		__m512bh b0 = (__m512bh)_mm512_load_si512(pb), b1 = (__m512bh)_mm512_load_si512(pb + 16);
		_Pragma("GCC unroll 12") for (int i = 0; i < 12; i++) {
			__m512bh a = (__m512bh)_mm512_set1_epi32((int)pa[i]);
			acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a, b0);
			acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a, b1);
		}
	}
}

GM_BF16 static void kern_bf16(int64_t kc, const void *pa, const void *pb, void *cv, int64_t ldc, int load)
{
	float *c = cv;
	__m512 acc[12][2];
	bf16_steps(kc, pa, pb, c, ldc, load, acc);
	_Pragma("GCC unroll 12") for (int i = 0; i < 12; i++)
		for (int v = 0; v < 2; v++)
			_mm512_storeu_ps(c + i * ldc + v * 16, acc[i][v]);
}
#endif

/* A tile's rows (cols f32 each, ldt apart) rounded to bf16 into o (row
 * stride ldo), as half.h's tir_f2b: to nearest even, a NaN kept quiet. */
#define GM_F2B(u)                                                              \
	((u & 0x7fffffffu) > 0x7f800000u ? u >> 16 | 0x40 : (u + 0x7fffu + (u >> 16 & 1)) >> 16)
#if GM_X86
/* 16 f32 bits to 16 bf16 (as 32-bit lanes), the same rounding by lanes */
GM_A5 static inline __m512i f2b_a5(__m512i u)
{
	__m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
				     _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
	__mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
						_mm512_set1_epi32(0x7f800000));
	r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
	return _mm512_srli_epi32(r, 16);
}

GM_A5 static void round_tile_a5(uint16_t *restrict o, int64_t ldo, const float *restrict t, int64_t ldt,
				int64_t rows, int64_t cols)
{
	__mmask16 tail = (__mmask16)((1u << (cols % 16)) - 1);
	for (int64_t i = 0; i < rows; i++, o += ldo, t += ldt) {
		int64_t j = 0;
		for (; j + 16 <= cols; j += 16)
			_mm512_mask_cvtepi32_storeu_epi16(o + j, (__mmask16)0xffff, f2b_a5(_mm512_loadu_si512(t + j)));
		if (tail)
			_mm512_mask_cvtepi32_storeu_epi16(o + j, tail, f2b_a5(_mm512_maskz_loadu_epi32(tail, t + j)));
	}
}

/* 8 f32 bits to 8 bf16 in the high halves of their lanes, shifted down
 * with their sign (so that packs keeps them), the same rounding */
GM_A2 static inline __m256i f2b_a2(__m256i u)
{
	__m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
				     _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
	__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
					 _mm256_set1_epi32(0x7f800000));
	r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x400000)), nan);
	return _mm256_srai_epi32(r, 16);
}

GM_A2 static void round_tile_a2(uint16_t *restrict o, int64_t ldo, const float *restrict t, int64_t ldt,
				int64_t rows, int64_t cols)
{
	for (int64_t i = 0; i < rows; i++, o += ldo, t += ldt) {
		int64_t j = 0;
		for (; j + 16 <= cols; j += 16) {
			__m256i h = _mm256_packs_epi32(f2b_a2(_mm256_loadu_si256((const __m256i *)(t + j))),
						       f2b_a2(_mm256_loadu_si256((const __m256i *)(t + j + 8))));
			_mm256_storeu_si256((__m256i *)(o + j), _mm256_permute4x64_epi64(h, 0xd8));
		}
		for (; j < cols; j++) {
			uint32_t u;
			memcpy(&u, t + j, 4);
			o[j] = (uint16_t)GM_F2B(u);
		}
	}
}
#endif

static void round_tile(uint16_t *restrict o, int64_t ldo, const float *restrict t, int64_t ldt,
		       int64_t rows, int64_t cols)
{
#if GM_X86
	if (tir_vmath_path() == TIR_VMATH_AVX512) {
		round_tile_a5(o, ldo, t, ldt, rows, cols);
		return;
	}
	if (tir_vmath_path() == TIR_VMATH_AVX2) {
		round_tile_a2(o, ldo, t, ldt, rows, cols);
		return;
	}
#endif
	for (int64_t i = 0; i < rows; i++, o += ldo, t += ldt) {
		int64_t j = 0;
#if GM_X86
		/* 8 at a time in SSE2 (x86-64's baseline), the result's high
		 * halves shifted down with their sign so that packs keeps them */
		const __m128i low = _mm_set1_epi32(0x7fff), one = _mm_set1_epi32(1);
		const __m128i abs = _mm_set1_epi32(0x7fffffff), inf = _mm_set1_epi32(0x7f800000);
		const __m128i quiet = _mm_set1_epi32(0x400000);
		for (; j + 8 <= cols; j += 8) {
			__m128i h[2];
			for (int v = 0; v < 2; v++) {
				__m128i u = _mm_loadu_si128((const __m128i *)(t + j + 4 * v));
				__m128i r = _mm_add_epi32(_mm_add_epi32(u, low),
							  _mm_and_si128(_mm_srli_epi32(u, 16), one));
				__m128i nan = _mm_cmpgt_epi32(_mm_and_si128(u, abs), inf);
				r = _mm_or_si128(_mm_andnot_si128(nan, r),
						 _mm_and_si128(nan, _mm_or_si128(u, quiet)));
				h[v] = _mm_srai_epi32(r, 16);
			}
			_mm_storeu_si128((__m128i *)(o + j), _mm_packs_epi32(h[0], h[1]));
		}
#endif
		for (; j < cols; j++) {
			uint32_t u;
			memcpy(&u, t + j, 4);
			o[j] = (uint16_t)GM_F2B(u);
		}
	}
}

/* The last k-block of a product rounded to bf16, for a full tile: the
 * f32 kernel's very chains (GM_ACC_LOAD from c when load, the same
 * steps), each row's sums then rounded as round_tile does and stored to
 * o (row stride ldo), from the registers.  Full tiles went through an
 * L1 buffer before (c copied in by a library call a row, the kernel,
 * round_tile reading it back): at 2048^3 on 2 threads that held 3-4%
 * of a bf16 product's samples on AVX-512 (1.6% now, f32's own tile
 * handling 1%), about what widening as packed saves, so a widened bf16
 * product ran no faster than f32. */
typedef void (*gemm_out_fn)(int64_t kc, const void *pa, const void *pb, const float *c, int64_t ldc,
			    int load, uint16_t *o, int64_t ldo);
#define GM_KERNEL_OUT(NAME, TGT, VF, MR, NV, FMA, ROUND)                        \
	static TGT void NAME(int64_t kc, const void *pav, const void *pbv, const float *c, \
			     int64_t ldc, int load, uint16_t *o, int64_t ldo)          \
	{                                                                      \
		GM_CHAIN_TYPES(float, VF);                                     \
		typedef float VA_ __attribute__((vector_size(sizeof(VF)), may_alias)); \
		enum { NR_ = NV * L_ };                                        \
		const float *pa = pav, *pb = pbv;                              \
		VF acc[MR][NV];                                                \
		GM_ACC_LOAD(VF, MR, NV, acc, c, ldc, load);                    \
		for (int64_t p = 0; p < kc; p++, pa += MR, pb += NR_) {        \
			VF b[NV];                                              \
			__builtin_prefetch(pa + GM_PFA * MR);                  \
			__builtin_prefetch(pb + GM_PFB * NR_);                 \
			_Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)    \
				b[v] = *(const VA_ *)(pb + v * L_);             \
			GM_ACC_STEP(VF, MR, NV, FMA, acc, b, pa[i_]);          \
		}                                                              \
		_Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)          \
			ROUND(o + i * ldo, acc[i]);                            \
	}
#if GM_X86
/* a row of 32: two vectors of 16 to 16 bf16 each */
#define GM_ROUND_A5(o, a)                                                        \
	do {                                                                   \
		_mm256_storeu_si256((__m256i *)(o), _mm512_cvtepi32_epi16(f2b_a5(_mm512_castps_si512((a)[0])))); \
		_mm256_storeu_si256((__m256i *)(o) + 1, _mm512_cvtepi32_epi16(f2b_a5(_mm512_castps_si512((a)[1])))); \
	} while (0)
/* a row of 16: two vectors of 8, packed as round_tile_a2 does */
#define GM_ROUND_A2(o, a)                                                        \
	do {                                                                   \
		__m256i h_ = _mm256_packs_epi32(f2b_a2(_mm256_castps_si256((a)[0])), \
						f2b_a2(_mm256_castps_si256((a)[1]))); \
		_mm256_storeu_si256((__m256i *)(o), _mm256_permute4x64_epi64(h_, 0xd8)); \
	} while (0)
GM_KERNEL_OUT(out_a5_f32, GM_A5, gm_f16, 12, 2, _mm512_fmadd_ps, GM_ROUND_A5)
GM_KERNEL_OUT(out_a2_f32, GM_A2, gm_f8, 6, 2, _mm256_fmadd_ps, GM_ROUND_A2)
/* kern_bf16's chains, rounded as out_a5_f32's */
GM_BF16 static void out_bf16(int64_t kc, const void *pa, const void *pb, const float *c, int64_t ldc,
			     int load, uint16_t *o, int64_t ldo)
{
	__m512 acc[12][2];
	bf16_steps(kc, pa, pb, c, ldc, load, acc);
	_Pragma("GCC unroll 12") for (int i = 0; i < 12; i++)
		GM_ROUND_A5(o + i * ldo, acc[i]);
}
#endif

struct gemm_kern {
	gemm_kernel_fn fn;
	int mr, nr;
	const gemm_kernel_fn *rows;  /* rows[R]: R < mr rows of a panel (NULL: none) */
	const gemm_direct_fn *direct; /* direct[R]: R <= mr rows of an unpacked a (NULL: none) */
	gemm_out_fn out;              /* a full tile's last k-block to bf16 (NULL: none) */
};

#if GM_X86
static const struct gemm_kern kern_pairs = { kern_bf16, 12, 32, NULL, NULL, out_bf16 };
#endif

/* The bf16 kernel, for a product of two bf16 operands on the AVX-512
 * path of a CPU with AVX-512 BF16; else NULL (the operands are widened
 * to f32 as they are packed, and the f32 kernel runs). */
static const struct gemm_kern *pick_pairs(const struct tir_gemm *g)
{
#if GM_X86
	static int ok = -1; /* asked once; threads may ask together (same answer) */
	int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
	if (v < 0) {
		/* TIR_BF16=widen: as on a CPU without AVX-512 BF16 (tests, bench) */
		const char *e = getenv("TIR_BF16");
		v = TIR_CPU_HAS(AVX512_BF16, "avx512bf16") && !(e && !strcmp(e, "widen"));
		__atomic_store_n(&ok, v, __ATOMIC_RELAXED);
	}
	if (v && g->dt == TIR_DTYPE_F32 && g->a_dt == TIR_DTYPE_BF16 && g->b_dt == TIR_DTYPE_BF16 &&
	    tir_vmath_path() == TIR_VMATH_AVX512)
		return &kern_pairs;
#else
	(void)g;
#endif
	return NULL;
}

/* [path][0 f32, 1 f64] */
static const struct gemm_kern kernels[TIR_VMATH_PATH_COUNT][2] = {
	[TIR_VMATH_SCALAR] = { { kern_sc_f32, 4, 4, kern_sc_f32_rows, NULL, NULL },
			       { kern_sc_f64, 4, 4, kern_sc_f64_rows, NULL, NULL } },
	[TIR_VMATH_SSE2] = { { kern_s2_f32, 6, 8, kern_s2_f32_rows, NULL, NULL },
			     { kern_s2_f64, 6, 4, kern_s2_f64_rows, NULL, NULL } },
#if GM_X86
	[TIR_VMATH_AVX2] = { { kern_a2_f32, 6, 16, kern_a2_f32_rows, NULL, out_a2_f32 },
			     { kern_a2_f64, 6, 8, kern_a2_f64_rows, NULL, NULL } },
	[TIR_VMATH_AVX512] = { { kern_a5_f32, 12, 32, kern_a5_f32_rows, direct_a5_f32, out_a5_f32 },
			       { kern_a5_f64, 12, 16, kern_a5_f64_rows, NULL, NULL } },
#endif
};

/* The largest MR x NR tile of any kernel, in bytes (edge tiles' copy). */
#define TILE_BYTES (12 * 32 * 4)

/* ---- packing ----
 * dst[p * w + i] = src[i * is + p * ps] for i < len, 0 for len <= i < w,
 * p < kc: an a panel (i a row, p along k) or a b panel (i a column).  A
 * full panel whose i runs along memory is kc copies of w elements (of a
 * size known here, so no library call); one whose p runs along memory
 * (row-major a) is read a column of rows at a time, written in order. */
#define GM_PACK(T, SFX)                                                       \
	static void pack_##SFX(T *restrict dst, const T *restrict src, int64_t is, \
			       int64_t ps, int64_t len, int64_t w, int64_t kc) \
	{                                                                    \
		if ((is == 1 || len == 1) && len == w) {                     \
			switch (w * (int64_t)sizeof(T)) {                    \
			GM_PACK_ROWS(16) GM_PACK_ROWS(32) GM_PACK_ROWS(64)   \
			GM_PACK_ROWS(128)                                    \
			default: break;                                      \
			}                                                    \
		}                                                            \
		if (is == 1 || len == 1) {                                   \
			for (int64_t p = 0; p < kc; p++, dst += w) {         \
				const T *s = src + p * ps;                   \
				for (int64_t i = 0; i < len; i++)            \
					dst[i] = s[i];                       \
				for (int64_t i = len; i < w; i++)            \
					dst[i] = 0;                          \
			}                                                    \
			return;                                              \
		}                                                            \
		if (len == w) {                                              \
			switch (w) {                                         \
			GM_PACK_COLS(T, 4) GM_PACK_COLS(T, 6)                \
			GM_PACK_COLS(T, 8) GM_PACK_COLS(T, 12)               \
			GM_PACK_COLS(T, 16) GM_PACK_COLS(T, 32)              \
			default: break;                                      \
			}                                                    \
		}                                                            \
		for (int64_t p = 0; p < kc; p++, dst += w) {                 \
			const T *s = src + p * ps;                           \
			for (int64_t i = 0; i < len; i++)                    \
				dst[i] = s[i * is];                          \
			for (int64_t i = len; i < w; i++)                    \
				dst[i] = 0;                                  \
		}                                                            \
	}
/* a full panel of W (every kernel's MR, and NR) across memory, as a
 * row-major a is (or a transposed b: attention's k): W elements a step,
 * W known here, so the copy is unrolled (half the time of the loop below
 * for a [256, 1024] a) */
#define GM_PACK_COLS(T, W)                                                    \
	case W:                                                              \
		for (int64_t p = 0; p < kc; p++, dst += W) {                 \
			const T *s = src + p * ps;                           \
			_Pragma("GCC unroll 12") for (int i = 0; i < W; i++) \
				dst[i] = s[i * is];                          \
		}                                                            \
		return;
/* kc rows of B bytes each (w elements), ps elements apart */
#define GM_PACK_ROWS(B)                                                       \
	case B:                                                              \
		for (int64_t p = 0; p < kc; p++)                             \
			memcpy((char *)dst + p * (B), src + p * ps, (B));    \
		return;
GM_PACK(float, f32)
GM_PACK(double, f64)

#if GM_X86
/* A full f32 panel of w (a multiple of 4) whose steps run along memory
 * (ps 1: a row-major a, a transposed b), by 4 x 4 blocks transposed in
 * SSE registers (x86-64's baseline): a quarter of the loads and stores
 * of the copy by elements, which held a quarter of a [32, 256, 64] @ [32,
 * 64, 256]'s time and most of attention's packing. */
static void pack_t4_f32(float *restrict dst, const float *restrict src, int64_t is, int64_t w,
			int64_t kc)
{
	int64_t p = 0;
	for (; p + 4 <= kc; p += 4, dst += 4 * w)
		for (int64_t i = 0; i < w; i += 4) {
			const float *s = src + i * is + p;
			__m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + is);
			__m128 r2 = _mm_loadu_ps(s + 2 * is), r3 = _mm_loadu_ps(s + 3 * is);
			_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
			_mm_storeu_ps(dst + i, r0);
			_mm_storeu_ps(dst + w + i, r1);
			_mm_storeu_ps(dst + 2 * w + i, r2);
			_mm_storeu_ps(dst + 3 * w + i, r3);
		}
	for (; p < kc; p++, dst += w)
		for (int64_t i = 0; i < w; i++)
			dst[i] = src[i * is + p];
}
#endif

static void pack(int64_t es, void *dst, const char *src, int64_t is, int64_t ps, int64_t len,
		 int64_t w, int64_t kc)
{
#if GM_X86
	if (es == 4 && ps == 1 && is != 1 && len == w && w % 4 == 0 && len > 1) {
		pack_t4_f32(dst, (const float *)src, is, w, kc);
		return;
	}
#endif
	if (es == 4)
		pack_f32(dst, (const float *)src, is, ps, len, w, kc);
	else
		pack_f64(dst, (const double *)src, is, ps, len, w, kc);
}

/* rows of b asked for ahead: a b too big for L2 waits on them otherwise
 * (perf: the loads of the copy held most of pack_task's samples in the
 * MLP); 4, 8 and 16 rows ahead do alike */
#ifndef GM_PFROW
#define GM_PFROW 8
#endif
/* bf16 widened to f32 as it is packed (a bf16 is an f32's high half):
 * the f32 kernel then runs on half the bytes read.  As pack's cases: a
 * panel whose elements run along memory (a row-major b) by rows, one
 * whose steps do (a row-major a) by 4 x 4 blocks widened and transposed
 * in SSE registers, else element by element. */
static inline float bf16_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Panels 0..nq-1 of kc rows of w f32 each (panel q at dst + q * w * kc),
 * widened from rows of bf16 ps apart whose panels follow each other (q
 * at src + q * w), len of each row's w there (len < w only when nq is
 * 1: zeros after): a row-major b, one row of all the unit's panels at a
 * time, as pack_rows.  One build per vector path, V elements a step
 * (AVX-512: vpmovzxwd and vpslld on 16; AVX2 the same on 8; SSE2: 8
 * interleaved with zeros), the rows GM_PFWIDEN ahead asked for (rows
 * a page or more apart, each a new page for the hardware's prefetcher:
 * without, the loads waited on memory, most of the widening's time; 8
 * ahead, as pack_rows, was too near for rows this short). */
#ifndef GM_PFWIDEN
#define GM_PFWIDEN 24
#endif
#define GM_WIDEN_ROWS(SFX, TGT, V, WIDEN)                                        \
	static TGT void widen_rows_##SFX(float *restrict dst, const uint16_t *restrict src, \
					 int64_t ps, int64_t nq, int64_t len, int64_t w, \
					 int64_t kc)                           \
	{                                                                      \
		for (int64_t p = 0; p < kc; p++, src += ps, dst += w) {        \
			if (p + GM_PFWIDEN < kc)                               \
				for (int64_t x = 0; x < nq * len; x += 32)     \
					__builtin_prefetch(src + GM_PFWIDEN * ps + x); \
			for (int64_t q = 0; q < nq; q++) {                     \
				float *d = dst + q * w * kc;                   \
				const uint16_t *s = src + q * w;               \
				int64_t i = 0;                                 \
				for (; i + V <= len; i += V)                   \
					WIDEN(d + i, s + i);                   \
				for (; i < len; i++)                           \
					d[i] = bf16_f32(s[i]);                 \
				for (; i < w; i++)                             \
					d[i] = 0;                              \
			}                                                      \
		}                                                              \
	}
#if GM_X86
#define GM_WIDEN_S2(d, s)                                                        \
	do {                                                                   \
		__m128i x_ = _mm_loadu_si128((const __m128i *)(s));            \
		_mm_storeu_si128((__m128i *)(d), _mm_unpacklo_epi16(_mm_setzero_si128(), x_)); \
		_mm_storeu_si128((__m128i *)(d) + 1, _mm_unpackhi_epi16(_mm_setzero_si128(), x_)); \
	} while (0)
#define GM_WIDEN_A2(d, s)                                                        \
	_mm256_storeu_si256((__m256i *)(d),                                    \
			    _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s))), 16))
#define GM_WIDEN_A5(d, s)                                                        \
	_mm512_storeu_si512((d), _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s))), 16))
GM_WIDEN_ROWS(s2, , 8, GM_WIDEN_S2)
GM_WIDEN_ROWS(a2, GM_A2, 8, GM_WIDEN_A2)
GM_WIDEN_ROWS(a5, GM_A5, 16, GM_WIDEN_A5)
#else
#define GM_WIDEN_C(d, s) ((d)[0] = bf16_f32((s)[0]))
GM_WIDEN_ROWS(s2, , 1, GM_WIDEN_C)
#endif

static void widen_rows(float *restrict dst, const uint16_t *restrict src, int64_t ps, int64_t nq, int64_t len,
		       int64_t w, int64_t kc)
{
#if GM_X86
	if (tir_vmath_path() == TIR_VMATH_AVX512) {
		widen_rows_a5(dst, src, ps, nq, len, w, kc);
		return;
	}
	if (tir_vmath_path() == TIR_VMATH_AVX2) {
		widen_rows_a2(dst, src, ps, nq, len, w, kc);
		return;
	}
#endif
	widen_rows_s2(dst, src, ps, nq, len, w, kc);
}

static void pack_bf16(float *restrict dst, const uint16_t *restrict src, int64_t is, int64_t ps, int64_t len,
		      int64_t w, int64_t kc)
{
	if (is == 1) {
		widen_rows(dst, src, ps, 1, len, w, kc);
		return;
	}
	int64_t p = 0;
#if GM_X86
	if (ps == 1 && len == w) {
		/* blocks of 4 rows by 8 steps (each row's 8 one load), then
		 * by 4; two rows past a multiple of 4 (AVX2's and SSE2's 6)
		 * interleaved in pairs, others by elements */
		__m128i z = _mm_setzero_si128();
		int64_t w4 = w & ~(int64_t)3;
		for (; p + 8 <= kc && w - w4 != 1 && w - w4 != 3; p += 8, dst += 8 * w) {
			if (w - w4 == 2) {
				const uint16_t *x = src + w4 * is + p;
				__m128i x0 = _mm_loadu_si128((const __m128i *)x);
				__m128i x1 = _mm_loadu_si128((const __m128i *)(x + is));
				for (int h = 0; h < 2; h++) {
					__m128 r0 = _mm_castsi128_ps(h ? _mm_unpackhi_epi16(z, x0) : _mm_unpacklo_epi16(z, x0));
					__m128 r1 = _mm_castsi128_ps(h ? _mm_unpackhi_epi16(z, x1) : _mm_unpacklo_epi16(z, x1));
					__m128 lo = _mm_unpacklo_ps(r0, r1), hi = _mm_unpackhi_ps(r0, r1);
					float *d = dst + 4 * h * w + w4;
					_mm_storel_pi((__m64 *)d, lo);
					_mm_storeh_pi((__m64 *)(d + w), lo);
					_mm_storel_pi((__m64 *)(d + 2 * w), hi);
					_mm_storeh_pi((__m64 *)(d + 3 * w), hi);
				}
			}
			for (int64_t i = 0; i < w4; i += 4) {
				const uint16_t *x = src + i * is + p;
				__m128i x0 = _mm_loadu_si128((const __m128i *)x);
				__m128i x1 = _mm_loadu_si128((const __m128i *)(x + is));
				__m128i x2 = _mm_loadu_si128((const __m128i *)(x + 2 * is));
				__m128i x3 = _mm_loadu_si128((const __m128i *)(x + 3 * is));
				for (int h = 0; h < 2; h++) {
					__m128 r0 = _mm_castsi128_ps(h ? _mm_unpackhi_epi16(z, x0) : _mm_unpacklo_epi16(z, x0));
					__m128 r1 = _mm_castsi128_ps(h ? _mm_unpackhi_epi16(z, x1) : _mm_unpacklo_epi16(z, x1));
					__m128 r2 = _mm_castsi128_ps(h ? _mm_unpackhi_epi16(z, x2) : _mm_unpacklo_epi16(z, x2));
					__m128 r3 = _mm_castsi128_ps(h ? _mm_unpackhi_epi16(z, x3) : _mm_unpacklo_epi16(z, x3));
					_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
					float *d = dst + 4 * h * w + i;
					_mm_storeu_ps(d, r0);
					_mm_storeu_ps(d + w, r1);
					_mm_storeu_ps(d + 2 * w, r2);
					_mm_storeu_ps(d + 3 * w, r3);
				}
			}
		}
		for (; p + 4 <= kc; p += 4, dst += 4 * w) {
			if (w - w4 == 2) {
				const uint16_t *x = src + w4 * is + p;
				__m128 r0 = _mm_castsi128_ps(_mm_unpacklo_epi16(z, _mm_loadl_epi64((const __m128i *)x)));
				__m128 r1 = _mm_castsi128_ps(
					_mm_unpacklo_epi16(z, _mm_loadl_epi64((const __m128i *)(x + is))));
				__m128 lo = _mm_unpacklo_ps(r0, r1), hi = _mm_unpackhi_ps(r0, r1);
				_mm_storel_pi((__m64 *)(dst + w4), lo);
				_mm_storeh_pi((__m64 *)(dst + w + w4), lo);
				_mm_storel_pi((__m64 *)(dst + 2 * w + w4), hi);
				_mm_storeh_pi((__m64 *)(dst + 3 * w + w4), hi);
			} else {
				for (int64_t i = w4; i < w; i++)
					for (int64_t q = 0; q < 4; q++)
						dst[q * w + i] = bf16_f32(src[i * is + p + q]);
			}
			for (int64_t i = 0; i < w4; i += 4) {
				const uint16_t *x = src + i * is + p;
				__m128 r0 = _mm_castsi128_ps(_mm_unpacklo_epi16(z, _mm_loadl_epi64((const __m128i *)x)));
				__m128 r1 = _mm_castsi128_ps(_mm_unpacklo_epi16(z, _mm_loadl_epi64((const __m128i *)(x + is))));
				__m128 r2 = _mm_castsi128_ps(
					_mm_unpacklo_epi16(z, _mm_loadl_epi64((const __m128i *)(x + 2 * is))));
				__m128 r3 = _mm_castsi128_ps(
					_mm_unpacklo_epi16(z, _mm_loadl_epi64((const __m128i *)(x + 3 * is))));
				_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
				_mm_storeu_ps(dst + i, r0);
				_mm_storeu_ps(dst + w + i, r1);
				_mm_storeu_ps(dst + 2 * w + i, r2);
				_mm_storeu_ps(dst + 3 * w + i, r3);
			}
		}
	}
#endif
	for (; p < kc; p++, dst += w) {
		const uint16_t *s = src + p * ps;
		for (int64_t i = 0; i < len; i++)
			dst[i] = bf16_f32(s[i * is]);
		for (int64_t i = len; i < w; i++)
			dst[i] = 0;
	}
}

/* Panels 0..nq-1 of wb bytes a row, each kc rows (panel q at dst + q *
 * wb * kc), from rows ps bytes apart whose panels follow each other (q
 * at src + q * wb): one row of all of them at a time.  wb of a size known
 * here, so no library call. */
#define GM_ROWS_CASE(B)                                                       \
	case B:                                                              \
		for (int64_t p = 0; p < kc; p++, src += ps, dst += B) {      \
			if (p + GM_PFROW < kc)                               \
				for (int64_t x = 0; x < nq * (B); x += 64)   \
					__builtin_prefetch(src + GM_PFROW * ps + x); \
			for (int64_t q = 0; q < nq; q++)                     \
				memcpy(dst + q * (B) * kc, src + q * (B), (B)); \
		}                                                            \
		return;
static void pack_rows(char *restrict dst, const char *restrict src, int64_t ps, int64_t nq,
		      int64_t wb, int64_t kc)
{
	switch (wb) {
	GM_ROWS_CASE(16) GM_ROWS_CASE(32) GM_ROWS_CASE(64) GM_ROWS_CASE(128)
	default:
		break;
	}
	for (int64_t p = 0; p < kc; p++, src += ps, dst += wb)
		for (int64_t q = 0; q < nq; q++)
			memcpy(dst + q * wb * kc, src + q * wb, (size_t)wb);
}

/* ---- blocking ---- */

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Below this many multiply-adds a product runs on the calling thread. */
#define SERIAL_MACS ((int64_t)1 << 18)

/* What the job's tasks share (see tir_gemm_run). */
struct job {
	const struct tir_gemm *g;
	const struct gemm_kern *kern;
	bool pairs;                  /* kern_bf16: g->k counts pairs of the ksrc steps */
	int64_t ksrc;
	int64_t es, mr, nr, kc;
	int64_t mp, np;              /* panels of a (rows), of b (columns) */
	int64_t mpad, npad;          /* mp * mr, np * nr */
	/* the batch entries whose operands differ: a's are na, b's nbb; entry
	 * e uses a's ai(e) and b's bi(e) */
	int64_t na, nbb, batches;
	/* the stages: group s of gsz batch entries (groups: 1, all entries,
	 * unless every entry has an a and a b of its own) by k-block p (kb of
	 * them), stage s * kb + p; each packs its operands (ea entries of a,
	 * eb of b, U units) into slot (stage % nslots) and makes its T tiles */
	int64_t kb, gsz, groups, nst, ea, eb, U, T, H;
	int nslots;
	char *slot[2];               /* ea x (kcb x mpad) of a, then at aoff eb x (kcb x npad) of b */
	int64_t aoff[2];
	_Atomic int64_t packed[2];   /* units packed into each slot so far */
	_Atomic int64_t freed;       /* stages whose tiles are all known made */
	_Atomic int32_t *done;       /* per tile: its k-blocks made */
	/* packing units of a stage: (operand, batch, group of panels) */
	int64_t ga, gb, ua, ub;      /* panels per unit; units of a, of b */
	/* output tiles: tm x tn panels each, ti x tj per batch entry */
	int64_t tm, tn, ti, tj;
	/* the epilogue: a row of tiles is cut into ng groups of eg tiles,
	 * finished together by the task that makes the group's last tile;
	 * left[(e * ti + row of tiles) * ng + group] counts those not yet
	 * made (used when eg > 1) */
	int64_t eg, ng;
	_Atomic int64_t *left;
	atomic_int epi_failed;
};

/* Entry e's operand offset (elements) and its packed index, over the batch
 * axes (st[d] == 0: broadcast, not counted). */
static void batch_of(const struct tir_gemm *g, const int64_t *st, int64_t e, int64_t *off,
		     int64_t *idx)
{
	int64_t o = 0, ix = 0, mul = 1;
	for (int d = g->nb - 1; d >= 0; d--) {
		int64_t x = e % g->shape[d];
		e /= g->shape[d];
		if (st[d] == 0)
			continue;
		o += x * st[d];
		ix += x * mul;
		mul *= g->shape[d];
	}
	*off = o;
	*idx = ix;
}

/* The first entry whose packed index is idx (its offset is what counts):
 * the inverse of batch_of's idx over the axes that are not broadcast. */
static int64_t batch_offset(const struct tir_gemm *g, const int64_t *st, int64_t idx)
{
	int64_t o = 0;
	for (int d = g->nb - 1; d >= 0; d--) {
		if (st[d] == 0)
			continue;
		o += idx % g->shape[d] * st[d];
		idx /= g->shape[d];
	}
	return o;
}

/* Stage st's k-block: its first step and its depth */
static int64_t stage_k0(const struct job *j, int64_t st)
{
	return st % j->kb * j->kc;
}

static int64_t stage_kcb(const struct job *j, int64_t st)
{
	int64_t k0 = stage_k0(j, st);
	return j->g->k - k0 < j->kc ? j->g->k - k0 : j->kc;
}

/* Packing unit t of stage st, into the stage's slot */
static void pack_unit(struct job *j, int64_t st, int64_t t)
{
	const struct tir_gemm *g = j->g;
	bool is_a = t < j->ua;
	if (!is_a)
		t -= j->ua;
	int64_t panels = is_a ? j->mp : j->np, per = is_a ? j->ga : j->gb;
	int64_t groups = ceil_div(panels, per);
	int64_t bi = t / groups, p0 = t % groups * per;
	int64_t p1 = p0 + per < panels ? p0 + per : panels;
	int64_t k0 = stage_k0(j, st), kcb = stage_kcb(j, st);
	int64_t w = is_a ? j->mr : j->nr, full = is_a ? g->m : g->n;
	int64_t pad = is_a ? j->mpad : j->npad;
	int64_t idx = st / j->kb * (is_a ? j->ea : j->eb) + bi;  /* packed index of the whole */
	int64_t off = batch_offset(g, is_a ? g->as : g->bs, idx);
	/* element (i along the panel, p along k) of the source */
	int64_t is = is_a ? g->a_rs : g->b_cs, ps = is_a ? g->a_cs : g->b_rs;
	enum tir_dtype sdt = is_a ? g->a_dt : g->b_dt;
	char *dst = j->slot[st % j->nslots] + (is_a ? 0 : j->aoff[st % j->nslots]) + bi * kcb * pad * j->es;
	if (j->pairs) {
		/* element (i, pair p): source steps 2p and 2p + 1 of k (past
		 * its end 0), low half first, as vdpbf16ps takes them */
		const uint16_t *s0 = (const uint16_t *)(is_a ? g->a : g->b) + off;
		for (int64_t q = p0; q < p1; q++) {
			int64_t len = full - q * w < w ? full - q * w : w;
			uint32_t *d = (uint32_t *)(dst + q * w * kcb * j->es);
			for (int64_t p = 0; p < kcb; p++, d += w) {
				int64_t kk = 2 * (k0 + p);
				const uint16_t *s = s0 + q * w * is + kk * ps;
				bool hi = kk + 1 < j->ksrc;
				for (int64_t i = 0; i < len; i++)
					d[i] = s[i * is] | (hi ? (uint32_t)s[i * is + ps] << 16 : 0);
				for (int64_t i = len; i < w; i++)
					d[i] = 0;
			}
		}
		return;
	}
	if (sdt == TIR_DTYPE_BF16 && g->dt == TIR_DTYPE_F32) {
		const uint16_t *s0 = (const uint16_t *)(is_a ? g->a : g->b) + off + k0 * ps;
		int64_t nfull = full / w - p0 < p1 - p0 ? full / w - p0 : p1 - p0;
		if (is == 1 && nfull > 1) {
			/* full panels along memory (a row-major b): each row read
			 * once across the unit's panels, as pack_rows */
			widen_rows((float *)(dst + p0 * w * kcb * j->es), s0 + p0 * w, ps, nfull, w, w, kcb);
			p0 += nfull;
		}
		for (int64_t q = p0; q < p1; q++) {
			int64_t len = full - q * w < w ? full - q * w : w;
			pack_bf16((float *)(dst + q * w * kcb * j->es), s0 + q * w * is, is, ps, len, w, kcb);
		}
		return;
	}
	if (sdt && sdt != g->dt) {
		/* stored narrower (f16 weights, i8 codes): widened as packed */
		int64_t ses = (int64_t)tir_dtype_size(sdt);
		const char *s0 = (const char *)(is_a ? g->a : g->b) + (off + k0 * ps) * ses;
		for (int64_t q = p0; q < p1; q++) {
			int64_t len = full - q * w < w ? full - q * w : w;
			char *d = dst + q * w * kcb * j->es;
			const char *s = s0 + q * w * is * ses;
			for (int64_t p = 0; p < kcb; p++, d += w * j->es) {
				tir_cvt_run(g->dt, d, sdt, s + p * ps * ses, is, len);
				memset(d + len * j->es, 0, (size_t)((w - len) * j->es));
			}
		}
		return;
	}
	const char *src = (const char *)(is_a ? g->a : g->b) + (off + k0 * ps) * j->es;
	/* full panels whose elements run along memory (a row-major b): row
	 * by row across the unit's panels, each row one run of memory read
	 * once (faster than panel by panel, which reads every row once per
	 * panel, a page apart) */
	int64_t nfull = full / w - p0 < p1 - p0 ? full / w - p0 : p1 - p0;
	if (is == 1 && nfull > 1) {
		pack_rows(dst + p0 * w * kcb * j->es, src + p0 * w * j->es, ps * j->es, nfull,
			  w * j->es, kcb);
		p0 += nfull;
	}
	for (int64_t q = p0; q < p1; q++) {
		int64_t len = full - q * w < w ? full - q * w : w;
		pack(j->es, dst + q * w * kcb * j->es, src + q * w * is * j->es, is, ps, len, w,
		     kcb);
	}
}

/* Panels [q0, q1) of a k-block's packed a (pa) times panels [r0, r1) of
 * its packed b (pb), kcb steps deep, into c (m x n in all, row stride
 * ldc elements; load: add to what c holds): each b micro-panel past every
 * a panel in turn.  o (the last k-block of a product rounded to bf16):
 * each tile is rounded into o (laid out as c), a full one from the
 * kernel's registers (kern->out, where the path has one), others made in
 * an L1 buffer (loaded from c when load) and rounded from there; c is
 * not written, and without load not read (it may be NULL).  false when
 * the pool is stopping. */
static bool run_panels(const struct gemm_kern *kern, int64_t es, int64_t kcb, const char *pa,
		       const char *pb, int64_t q0, int64_t q1, int64_t r0, int64_t r1, int64_t m,
		       int64_t n, char *c, int64_t ldc, int load, uint16_t *o)
{
	int64_t mr = kern->mr, nr = kern->nr;
	_Alignas(64) char tile[TILE_BYTES];
	for (int64_t r = r0; r < r1; r++) {
		/* a tile of a big product runs for long: a stop is seen
		 * between its column panels */
		if (tir_pool_stopping())
			return false;
		const char *b = pb + r * nr * kcb * es;
		int64_t cols = n - r * nr < nr ? n - r * nr : nr;
		for (int64_t q = q0; q < q1; q++) {
			const char *a = pa + q * mr * kcb * es;
			int64_t rows = m - q * mr < mr ? m - q * mr : mr;
			char *cp = c && (load || !o) ? c + (q * mr * ldc + r * nr) * es : NULL;
			if (GM_PFC && cp && q + 1 < q1)   /* the next tile's c */
				for (int64_t i = 0; i < mr; i++)
					for (int64_t x = 0; x < nr * es; x += 64)
						__builtin_prefetch(cp + (mr + i) * ldc * es + x, 1);
			if (o && q + 1 < q1)        /* and its rows of o, written next */
				for (int64_t i = 0; i < mr; i++)
					__builtin_prefetch(o + ((q + 1) * mr + i) * ldc + r * nr, 1);
			if (o && kern->out && rows == mr && cols == nr) {
				kern->out(kcb, a, b, (const float *)cp, ldc, load, o + q * mr * ldc + r * nr, ldc);
			} else if (o) {
				/* the tile in L1, rounded from there: its f32 sums
				 * never go back to c */
				for (int64_t i = 0; load && i < rows; i++)
					memcpy(tile + i * nr * es, cp + i * ldc * es, (size_t)(cols * es));
				kern->fn(kcb, a, b, tile, nr, load);
				round_tile(o + q * mr * ldc + r * nr, ldc, (const float *)tile, nr, rows, cols);
			} else if (rows == mr && cols == nr) {
				kern->fn(kcb, a, b, cp, ldc, load);
			} else if (cols == nr && kern->rows) {
				kern->rows[rows](kcb, a, b, cp, ldc, load);
			} else {
				/* an edge: the same kernel on a full tile, then the part that exists */
				for (int64_t i = 0; load && i < rows; i++)
					memcpy(tile + i * nr * es, cp + i * ldc * es, (size_t)(cols * es));
				kern->fn(kcb, a, b, tile, nr, load);
				for (int64_t i = 0; i < rows; i++)
					memcpy(cp + i * ldc * es, tile + i * nr * es, (size_t)(cols * es));
			}
		}
	}
	return true;
}

/* Whether the run this task works for is stopping; else a pause (a
 * task waiting on another that an earlier task index holds, see
 * step_task), and past a few thousand of them, the CPU given up: with
 * more threads than cores (tests run 64 on 2), the task waited on may
 * be one whose thread is not running. */
static bool wait_stopped(int *spins)
{
	if (tir_pool_stopping())
		return true;
	if (++*spins > 4000)
		sched_yield();
#if defined(__x86_64__) || defined(__i386__)
	else
		__builtin_ia32_pause();
#endif
	return false;
}

/* Tile x of stage st: once the stage's operands are packed and the
 * tile's earlier k-blocks made; the epilogue once the last one is. */
static void tile_task(struct job *j, int64_t st, int64_t x)
{
	const struct tir_gemm *g = j->g;
	int64_t t = st / j->kb * j->T + x, p = st % j->kb;   /* t: the tile of the whole */
	int64_t need = (st / j->nslots + 1) * j->U;
	int spins = 0;
	while (atomic_load_explicit(&j->packed[st % j->nslots], memory_order_acquire) < need)
		if (wait_stopped(&spins))
			return;
	while (atomic_load_explicit(&j->done[t], memory_order_acquire) < p)
		if (wait_stopped(&spins))
			return;
	int64_t per = j->ti * j->tj;
	int64_t e = t / per, rest = t % per;
	int64_t q0 = rest / j->tj * j->tm, r0 = rest % j->tj * j->tn;
	int64_t q1 = q0 + j->tm < j->mp ? q0 + j->tm : j->mp;
	int64_t r1 = r0 + j->tn < j->np ? r0 + j->tn : j->np;
	int64_t es = j->es, mr = j->mr, nr = j->nr;
	int64_t k0 = stage_k0(j, st), kcb = stage_kcb(j, st);
	int64_t off, ai, bi;
	if (j->groups > 1) {         /* entries of their own: by place in the group */
		ai = bi = e - st / j->kb * j->gsz;
	} else {
		batch_of(g, g->as, e, &off, &ai);
		batch_of(g, g->bs, e, &off, &bi);
	}
	const char *slot = j->slot[st % j->nslots];
	const char *pa = slot + ai * kcb * j->mpad * es;
	const char *pb = slot + j->aoff[st % j->nslots] + bi * kcb * j->npad * es;
	char *c = g->c ? (char *)g->c + e * g->c_batch * es : NULL;
	bool last = p == j->kb - 1;
	uint16_t *o = g->out && last ? (uint16_t *)g->out + e * g->c_batch : NULL;

	if (!run_panels(j->kern, es, kcb, pa, pb, q0, q1, r0, r1, g->m, g->n, c, g->ldc,
			k0 > 0 || g->acc, o))
		return;
	atomic_store_explicit(&j->done[t], (int32_t)(p + 1), memory_order_release);
	if (!last)
		return;
	if (!g->epi)
		return;
	/* the epilogue of the tile's group once its last tile is made (see
	 * choose_epi): whole rows in one call, else one call a row */
	int64_t jb = rest % j->tj, grp = jb / j->eg;
	if (j->eg > 1 && atomic_fetch_sub(&j->left[(t / j->tj) * j->ng + grp], 1) != 1)
		return;
	int64_t i0 = q0 * mr, rows = (q1 * mr < g->m ? q1 * mr : g->m) - i0;
	int64_t j0 = grp * j->eg * j->tn * nr, j1 = (grp + 1) * j->eg * j->tn * nr;
	int64_t cols = (j1 < g->n ? j1 : g->n) - j0, base = e * g->m * g->n;
	if (cols == g->n) {
		if (g->epi(g->epi_ctx, base + i0 * g->n, rows * cols))
			atomic_store(&j->epi_failed, 1);
		return;
	}
	for (int64_t i = 0; i < rows; i++)
		if (g->epi(g->epi_ctx, base + (i0 + i) * g->n + j0, cols))
			atomic_store(&j->epi_failed, 1);
}

/* Packing unit u of stage st, once its slot's last reader, stage st -
 * nslots, has made all its tiles */
static void pack_task(struct job *j, int64_t st, int64_t u)
{
	int64_t prev = st - j->nslots;
	if (prev >= 0 && atomic_load_explicit(&j->freed, memory_order_acquire) <= prev) {
		const _Atomic int32_t *d = j->done + prev / j->kb * j->T;
		int32_t want = (int32_t)(prev % j->kb + 1);
		int spins = 0;
		for (int64_t x = j->T - 1; x >= 0; x--)  /* the last ones are the likeliest still under way */
			while (atomic_load_explicit(&d[x], memory_order_acquire) < want)
				if (wait_stopped(&spins))
					return;
		int64_t f = atomic_load(&j->freed);
		while (f <= prev && !atomic_compare_exchange_weak(&j->freed, &f, prev + 1))
			;
	}
	pack_unit(j, st, u);
	atomic_fetch_add_explicit(&j->packed[st % j->nslots], 1, memory_order_release);
}

/* Task x of a product's one run: stage 0's packing, then for each stage
 * its tiles with the next stage's packing among them (after the first H
 * tiles, spread so that each unit comes first in its share of the
 * tiles; with one slot, after all of them), the last stage's tiles
 * alone.  A task only ever waits on tasks of lower index (the packing
 * of its stage, its tile's earlier k-blocks, the readers of the slot it
 * packs into), which the pool began before it (tasks are claimed in
 * order), so the wait ends; inline, in order, nothing waits. */
static void step_task(void *arg, int64_t x)
{
	struct job *j = arg;
	if (x < j->U) {
		pack_task(j, 0, x);
		return;
	}
	x -= j->U;
	int64_t st = x / (j->T + j->U), y = x % (j->T + j->U);
	if (st == j->nst - 1 || y < (j->nslots == 1 ? j->T : j->H)) {
		tile_task(j, st, y);
		return;
	}
	if (j->nslots == 1) {
		pack_task(j, st + 1, y - j->T);
		return;
	}
	int64_t z = y - j->H, r = j->T - j->H + j->U;
	int64_t u0 = (z * j->U + r - 1) / r, u1 = ((z + 1) * j->U + r - 1) / r;
	if (u1 > u0)
		pack_task(j, st + 1, u0);
	else
		tile_task(j, st, j->H + z - u0);
}

/* KC: a b micro-panel (KC x NR) of twice L1d, a multiple of 8 in
 * [64, 1024].  It streams from L2 (the prefetches ahead of the kernel
 * keep it coming); a longer KC loads and stores each C tile fewer times.
 * Half of L1d, as first chosen, made large products slower than twice
 * L1d does (bench/gemm_bench).
 * The results do not depend on it: each element's sum runs over k in
 * order whatever the blocks. */
static int64_t choose_kc(int64_t nr, int64_t es)
{
	const struct tir_caches *mc = tir_machine_caches();
	int64_t kc = mc->l1d * 2 / (nr * es) / 8 * 8;
	return kc < 64 ? 64 : kc > 1024 ? 1024 : kc;
}

/* Tiles of tm x tn panels: halve the longer side (in elements) until the
 * product makes TIR_TASKS_WANT tasks, but never below 2 panels of rows
 * and 1 of columns (a tile then still runs its b micro-panel past at least
 * 2 MR-row panels of a).  A tile's a block (its rows x KC) fits in half of
 * L2.  From the shapes and the caches only; the result does not depend on
 * it (the tiles only change who computes what). */
static void choose_tiles(struct job *j, int64_t want_m, int64_t want_n)
{
	const struct tir_caches *mc = tir_machine_caches();
	int64_t tm = j->mp, tn = j->np;
	int64_t max_tm = mc->l2 / 2 / (j->kc * j->mr * j->es);
	if (max_tm < 2)
		max_tm = 2;
	if (want_m > 0 || want_n > 0) {        /* the test hook */
		tm = want_m > 0 ? ceil_div(want_m, j->mr) : tm;
		tn = want_n > 0 ? ceil_div(want_n, j->nr) : tn;
	} else {
		if (tm > max_tm)
			tm = ceil_div(j->mp, ceil_div(j->mp, max_tm));
		while (j->batches * ceil_div(j->mp, tm) * ceil_div(j->np, tn) < TIR_TASKS_WANT) {
			bool rows = tm * j->mr >= tn * j->nr ? tm > 2 : tn <= 1;
			if (rows && tm > 2)
				tm = ceil_div(tm, 2) < 2 ? 2 : ceil_div(tm, 2);
			else if (tn > 1)
				tn = ceil_div(tn, 2);
			else
				break;
		}
	}
	j->tm = tm < 1 ? 1 : tm;
	j->tn = tn < 1 ? 1 : tn;
	j->ti = ceil_div(j->mp, j->tm);
	j->tj = ceil_div(j->np, j->tn);
}

/* The epilogue's groups: as many tiles along a row of tiles as keep the
 * group's part of the output within a quarter of L2 (still in the caches
 * of the threads that made it when its last tile is done), the row cut
 * into groups of equal size.  Each call of the epilogue pays a setup
 * (the fused VM's), so calls of a tile's rows alone cost much:
 * relu([256, 1024] @ [1024, 1024] + b) in tiles 32 wide made 9216 calls
 * of 32 elements; in groups (here whole rows: 8 calls) the setup is
 * nothing.  A group is
 * also the most work the epilogue leaves to one thread after the rest
 * of the product is made. */
static void choose_epi(struct job *j)
{
	const struct tir_caches *mc = tir_machine_caches();
	int64_t rows = j->tm * j->mr, cols = j->tn * j->nr;
	int64_t most = j->g->epi_group > 0 ? j->g->epi_group      /* the test hook */
					    : mc->l2 / 4 / (rows * cols * j->es);
	most = most < 1 ? 1 : most;
	j->ng = ceil_div(j->tj, most);
	j->eg = ceil_div(j->tj, j->ng);
}

/* Packing buffers kept between products, one per pool slot (the thread
 * that starts a matmul is slot 0; an attention task on a worker is its
 * worker's): a fresh buffer costs its page faults, as much as the packing
 * itself for a product like [256, 1024] @ [1024, 1024].  Slot 0 keeps up
 * to 64 MiB, the workers 8 MiB; a slot in use (two threads outside the
 * pool share slot 0) makes the other allocate its own.  Charged to the
 * memory budget while held, kept or not (tir_scratch_get): a product
 * whose buffer does not fit what the budget leaves is done in slabs that
 * do (run_slabs), the same bits. */
#define KEEP_MAIN ((size_t)64 << 20)
#define KEEP_WORKER ((size_t)8 << 20)

static struct tir_keep gemm_keep[TIR_POOL_MAX];

static const struct gemm_kern *pick_kernel(enum tir_dtype dt)
{
	return &kernels[tir_vmath_path()][dt == TIR_DTYPE_F64];
}

/* A slab of a product split in slabs (run_slabs): rows [i0, i0 + m)
 * and columns [j0, j0 + n) of the whole, whose rows are N long and whose
 * batch entries are M rows.  The slab's epilogue offsets (its own
 * [batch, m, n]) are mapped to the whole's, one run of a row at a time. */
struct slab {
	tir_epilogue_fn epi;
	void *ctx;
	int64_t M, N, i0, j0, m, n;
};

static int slab_epi(void *arg, int64_t off, int64_t count)
{
	const struct slab *s = arg;
	while (count > 0) {
		int64_t e = off / (s->m * s->n), r = off % (s->m * s->n);
		int64_t i = r / s->n, jj = r % s->n;
		int64_t run = s->n - jj < count ? s->n - jj : count;
		if (s->epi(s->ctx, (e * s->M + s->i0 + i) * s->N + s->j0 + jj, run))
			return 1;
		off += run;
		count -= run;
	}
	return 0;
}

/* The product in slabs, when its packed operands would outgrow the
 * buffer a thread keeps (keep bytes): the larger one's free axis (a's
 * rows, b's columns) is cut into slabs of whole panels that pack into at
 * most half of it, and each slab is a product of its own (which may cut
 * the other operand in turn).  Every element is the same chain in any
 * slab.  Packing a [16, 1024] @ [1024, 32768] whole (128 MiB of b) took
 * fresh pages at every product and read b back from memory: five times
 * OpenBLAS's time; in slabs its buffer stays kept, in the caches. */
static int run_slabs(const struct tir_gemm *g, const struct job *j, int64_t abytes, int64_t bbytes,
		     size_t keep, struct tir_err *err)
{
	/* the larger operand's axis, unless it is one panel */
	bool rows = abytes >= bbytes ? j->mp > 1 : j->np <= 1;
	int64_t panels = rows ? j->mp : j->np, w = rows ? j->mr : j->nr;
	int64_t slabs = ceil_div(rows ? abytes : bbytes, (int64_t)(keep / 2 > 0 ? keep / 2 : 1));
	slabs = slabs < 2 ? 2 : slabs;
	int64_t per = ceil_div(panels, slabs) * w, full = rows ? g->m : g->n;
	for (int64_t x0 = 0; x0 < full; x0 += per) {
		int64_t len = full - x0 < per ? full - x0 : per;
		struct tir_gemm s = *g;
		struct slab sl = { g->epi, g->epi_ctx, g->m, g->n, rows ? x0 : 0, rows ? 0 : x0,
				   rows ? len : g->m, rows ? g->n : len };
		int64_t aes = g->a_dt ? (int64_t)tir_dtype_size(g->a_dt) : j->es;
		int64_t bes = g->b_dt ? (int64_t)tir_dtype_size(g->b_dt) : j->es;
		if (rows) {
			s.m = len;
			s.a = (const char *)g->a + x0 * g->a_rs * aes;
			s.c = g->c ? (char *)g->c + x0 * g->ldc * j->es : NULL;
		} else {
			s.n = len;
			s.b = (const char *)g->b + x0 * g->b_cs * bes;
			s.c = g->c ? (char *)g->c + x0 * j->es : NULL;
		}
		if (g->out)
			s.out = (uint16_t *)g->out + (rows ? x0 * g->ldc : x0);
		if (g->epi) {
			s.epi = slab_epi;
			s.epi_ctx = &sl;
		}
		int rc = tir_gemm_run(&s, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Batch entries a stage packs and makes (see struct job): all of them,
 * unless each has an a and a b of its own, then the most that divide
 * them whose packed k-block (mpad rows, npad columns, kc1 deep) fits
 * in a quarter of L2 (two slots of them, the one packed and the one
 * read, and the tiles' share of c in the rest), at least one.  A
 * [32, 256, 64] @ [32, 64, 256] packed all 32 entries first (4 MiB),
 * and read them back from L3. */
static int64_t choose_group(int64_t batches, int64_t na, int64_t nbb, int64_t mpad, int64_t npad,
			    int64_t kc1, int64_t es)
{
	if (batches <= 1 || na != batches || nbb != batches)
		return batches;
	double entry = (double)(mpad + npad) * (double)kc1 * (double)es;
	double most = (double)(tir_machine_caches()->l2 / 4) / entry;
	for (int64_t d = most < (double)batches ? (int64_t)most : batches; d > 1; d--)
		if (batches % d == 0)
			return d;
	return 1;
}

/* The k-blocks tir_gemm_run cuts g's depth into (KC deep each) */
static int64_t k_blocks(const struct tir_gemm *g)
{
	const struct gemm_kern *pk = g->k > 0 ? pick_pairs(g) : NULL;
	const struct gemm_kern *kern = pk ? pk : pick_kernel(g->dt);
	int64_t k = pk ? (g->k + 1) / 2 : g->k;
	return k <= 0 ? 0 : ceil_div(k, choose_kc(kern->nr, g->dt == TIR_DTYPE_F32 ? 4 : 8));
}

size_t tir_gemm_least(const struct tir_gemm *g)
{
	const struct gemm_kern *pk = g->k > 0 ? pick_pairs(g) : NULL;
	const struct gemm_kern *kern = pk ? pk : pick_kernel(g->dt);
	int64_t k = pk ? (g->k + 1) / 2 : g->k, es = g->dt == TIR_DTYPE_F32 ? 4 : 8;
	if (k <= 0 || g->m <= 0 || g->n <= 0)
		return 0;
	int64_t kc = choose_kc(kern->nr, es), na = 1, nbb = 1;
	for (int d = 0; d < g->nb; d++) {
		na *= g->as[d] ? g->shape[d] : 1;
		nbb *= g->bs[d] ? g->shape[d] : 1;
	}
	/* as tir_gemm_run sizes its buffer for a slab of one panel of each
	 * operand, one slot (the epilogue's counters aside) */
	int64_t batches = 1, kc1 = k < kc ? k : kc;
	for (int d = 0; d < g->nb; d++)
		batches *= g->shape[d];
	int64_t gsz = choose_group(batches, na, nbb, kern->mr, kern->nr, kc1, es);
	int64_t ea = gsz < batches ? gsz : na, eb = gsz < batches ? gsz : nbb;
	double a = (double)(ea * kern->mr) * (double)kc1 * (double)es;
	double b = (double)(eb * kern->nr) * (double)kc1 * (double)es;
	if (a + b + (double)batches * 4 > (double)(SIZE_MAX / 4))
		return SIZE_MAX / 4;
	return ((size_t)a + 63) / 64 * 64 + ((size_t)b + 63) / 64 * 64 + ((size_t)batches * 4 + 63) / 64 * 64 + 64;
}

/* g run by run(g) with an f32 c of its own (g->out's layout), for a
 * caller that gave none where the product needs one */
static int with_c(const struct tir_gemm *g, int (*run)(const struct tir_gemm *, struct tir_err *),
		  struct tir_err *err)
{
	int64_t batches = 1;
	for (int d = 0; d < g->nb; d++)
		batches *= g->shape[d];
	size_t elems = (size_t)((batches - 1) * g->c_batch + (g->m - 1) * g->ldc + g->n);
	struct tir_gemm w = *g;
	bool kept;
	w.c = tir_scratch_get(NULL, elems * 4, &kept);
	if (!w.c)
		return tir_scratch_err(err, "matmul", "its f32 sums", elems * 4);
	int rc = run(&w, err);
	tir_scratch_put(NULL, w.c, elems * 4, false, 0);
	return rc;
}

int tir_gemm_run(const struct tir_gemm *g0, struct tir_err *err)
{
	if (g0->out && !g0->c && g0->m > 0 && g0->n > 0 && (g0->acc || k_blocks(g0) > 1))
		return with_c(g0, tir_gemm_run, err);
	struct job j = { .g = g0, .kern = pick_kernel(g0->dt), .ksrc = g0->k };
	int64_t batches = 1;
	int rc = 0;
	/* bf16 pairs: the product of half the depth over pair elements */
	struct tir_gemm gp;
	const struct gemm_kern *pk = g0->k > 0 ? pick_pairs(g0) : NULL;
	if (pk) {
		gp = *g0;
		gp.k = (g0->k + 1) / 2;
		j.g = &gp;
		j.kern = pk;
		j.pairs = true;
	}
	const struct tir_gemm *g = j.g;

	TIR_ASSERT(tir_dtype_is_wide_float(g->dt));
	for (int d = 0; d < g->nb; d++)
		batches *= g->shape[d];
	if (g->m <= 0 || g->n <= 0 || batches <= 0)
		return 0;
	j.es = g->dt == TIR_DTYPE_F32 ? 4 : 8;
	if (g->k <= 0) {
		for (int64_t e = 0; e < batches && !g->acc; e++)
			for (int64_t i = 0; i < g->m; i++) {
				int64_t at = e * g->c_batch + i * g->ldc;
				if (g->c)
					memset((char *)g->c + at * j.es, 0, (size_t)(g->n * j.es));
				if (g->out)
					memset((uint16_t *)g->out + at, 0, (size_t)g->n * 2);
			}
		if (g->epi && g->epi(g->epi_ctx, 0, batches * g->m * g->n))
			return tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory in its epilogue");
		return 0;
	}
	j.mr = j.kern->mr;
	j.nr = j.kern->nr;
	j.kc = choose_kc(j.nr, j.es);
	j.batches = batches;
	j.mp = ceil_div(g->m, j.mr);
	j.np = ceil_div(g->n, j.nr);
	j.mpad = j.mp * j.mr;
	j.npad = j.np * j.nr;
	j.na = j.nbb = 1;
	for (int d = 0; d < g->nb; d++) {
		j.na *= g->as[d] ? g->shape[d] : 1;
		j.nbb *= g->bs[d] ? g->shape[d] : 1;
	}
	/* the stages: one k-block of a group of entries packed at a time (a
	 * slot holds the deepest); groups of entries only when each has its
	 * own operands, as many as keep a slot within a quarter of L2 */
	int64_t kc1 = g->k < j.kc ? g->k : j.kc;
	const struct tir_caches *mc = tir_machine_caches();
	j.kb = ceil_div(g->k, j.kc);
	j.gsz = choose_group(batches, j.na, j.nbb, j.mpad, j.npad, kc1, j.es);
	j.ea = j.gsz < batches ? j.gsz : j.na;
	j.eb = j.gsz < batches ? j.gsz : j.nbb;
	j.groups = batches / j.gsz;
	int64_t abytes, bbytes;
	/* every product taken (| not ||: each one's result is the next's operand) */
	int big = (int)__builtin_mul_overflow(j.ea, j.mpad, &abytes) |
		  (int)__builtin_mul_overflow(abytes, kc1, &abytes) |
		  (int)__builtin_mul_overflow(abytes, j.es, &abytes) |
		  (int)__builtin_mul_overflow(j.eb, j.npad, &bbytes) |
		  (int)__builtin_mul_overflow(bbytes, kc1, &bbytes) |
		  (int)__builtin_mul_overflow(bbytes, j.es, &bbytes) | (abytes > INT64_MAX / 4 - 128 - bbytes);
	size_t keep = g->slab_bytes > 0 ? (size_t)g->slab_bytes      /* the test hook */
		      : tir_pool_worker() ? KEEP_WORKER : KEEP_MAIN;
	if (!big && (size_t)(abytes + bbytes) > keep && (j.mp > 1 || j.np > 1))
		return run_slabs(g0, &j, abytes, bbytes, keep, err);
	int w = tir_pool_worker();
	/* packing units of about L2 / 8 bytes each, of the k-block as long
	 * as it is (a [32, 256, 64] @ [32, 64, 256] made 512 units of 8 KiB
	 * when they were sized by KC) */
	int64_t unit = mc->l2 / 8;
	j.ga = unit / (kc1 * j.mr * j.es);
	j.gb = unit / (kc1 * j.nr * j.es);
	j.ga = j.ga < 1 ? 1 : j.ga;
	j.gb = j.gb < 1 ? 1 : j.gb;
	j.ua = j.ea * ceil_div(j.mp, j.ga);
	j.ub = j.eb * ceil_div(j.np, j.gb);
	j.U = j.ua + j.ub;
	choose_tiles(&j, g->tile_m, g->tile_n);
	choose_epi(&j);
	int64_t ntiles = batches * j.ti * j.tj;
	j.T = j.gsz * j.ti * j.tj;
	j.H = j.T / 4;
	j.nst = j.groups * j.kb;
	/* two slots when the stages are groups of entries (two of them hold
	 * no more than all entries would), and both fit what a thread keeps;
	 * else one.  Two slots of a k-block each (the next one packed while
	 * this one's tiles are made) made a 2048^3 product no faster at 2
	 * threads (tir / OpenBLAS 1.044 against 1.056, medians of 10 paired
	 * runs on a busy 2-core Zen 5) and cost a k-block's packed operands
	 * more memory. */
	j.nslots = j.groups > 1 && j.nst > 1 && (size_t)(abytes + bbytes) <= keep / 2 ? 2 : 1;
	/* the epilogue's counters and the tiles', after the slots */
	int64_t nleft = g->epi && j.eg > 1 ? batches * j.ti * j.ng : 0;
	if (!big && (nleft > (INT64_MAX / 4 - abytes - bbytes) / (int64_t)sizeof(int64_t) ||
		     ntiles > (INT64_MAX / 4 - abytes - bbytes) / (int64_t)sizeof(int32_t)))
		big = true;
	/* a slot as deep as the deepest stage it holds (the second one of
	 * two k-blocks holds only the last, often shallow: 784 = 768 + 16) */
	int64_t sbytes[2] = { 0, 0 }, extra = 0;
	size_t size = 0;
	bool kept = false;
	char *buf = NULL;
	if (!big)
		extra = nleft * (int64_t)sizeof(int64_t) + (ntiles * (int64_t)sizeof(int32_t) + 63) / 64 * 64 + 64;
	for (; !big && !buf && j.nslots > 0; j.nslots--) {
		int64_t deep[2] = { 0, 0 };
		for (int64_t st = 0; st < j.nst; st++) {
			int64_t d = stage_kcb(&j, st);
			deep[st % j.nslots] = d > deep[st % j.nslots] ? d : deep[st % j.nslots];
		}
		for (int s = 0; s < j.nslots; s++) {
			j.aoff[s] = (abytes / kc1 * deep[s] + 63) / 64 * 64;
			sbytes[s] = j.aoff[s] + (bbytes / kc1 * deep[s] + 63) / 64 * 64;
		}
		size = (size_t)(sbytes[0] + sbytes[1] + extra);
		buf = tir_scratch_get(&gemm_keep[w], size, &kept);
		if (buf)
			break;
		sbytes[1] = 0;
	}
	if (!buf && !big && (j.mp > 1 || j.np > 1)) /* past the budget: in slabs half as big */
		return run_slabs(g0, &j, abytes, bbytes, (size_t)(abytes + bbytes) / 2, err);
	if (!buf && !big)
		return tir_scratch_err(err, "matmul", "its packed operands", size);
	if (!buf)
		return tir_errf(err, TIR_ENOMEM, NULL,
				"matmul: out of memory packing its operands (%lld x %lld and %lld x %lld, %lld and %lld times)",
				(long long)g->m, (long long)g->k, (long long)g->k, (long long)g->n,
				(long long)j.na, (long long)j.nbb);
	j.slot[0] = buf;
	j.slot[1] = buf + sbytes[0];
	j.done = (_Atomic int32_t *)(buf + sbytes[0] + sbytes[1]);
	j.left = (_Atomic int64_t *)((char *)j.done + (ntiles * (int64_t)sizeof(int32_t) + 63) / 64 * 64);
	for (int64_t i = 0; i < ntiles; i++)
		atomic_init(&j.done[i], 0);
	for (int64_t i = 0; i < nleft; i++) {
		int64_t grp = i % j.ng, first = grp * j.eg;
		atomic_init(&j.left[i], j.tj - first < j.eg ? j.tj - first : j.eg);
	}
	atomic_init(&j.packed[0], 0);
	atomic_init(&j.packed[1], 0);
	atomic_init(&j.freed, 0);

	/* One run of tasks for the whole product, stage by stage (step): a
	 * stage's packed panels are still in the caches when its tiles read
	 * them, and with two slots the next stage is packed while this
	 * one's tiles are made (packed whole first, a 2048^3 product read
	 * its panels back from memory) */
	double macs = (double)batches * (double)g->m * (double)g->n * (double)g->k;
	int64_t ntasks = j.nst * (j.T + j.U);
	if (macs < (double)SERIAL_MACS) {
		for (int64_t t = 0; t < ntasks; t++)
			step_task(&j, t);
	} else {
		tir_pool_run(ntasks, step_task, &j);
	}
	if (atomic_load(&j.epi_failed))
		rc = tir_errf(err, TIR_ENOMEM, NULL, "matmul: out of memory in its epilogue");
	tir_scratch_put(&gemm_keep[w], buf, size, kept, w ? KEEP_WORKER : KEEP_MAIN);
	return rc;
}

/* ---- products whose caller packs b (conv2d) ---- */

void tir_gemm_form(enum tir_dtype dt, struct tir_gemm_form *f)
{
	const struct gemm_kern *k = pick_kernel(dt);
	int64_t es = dt == TIR_DTYPE_F64 ? 8 : 4;
	*f = (struct tir_gemm_form){ k, k->mr, k->nr, choose_kc(k->nr, es), es };
}

int64_t tir_gemm_a_bytes(const struct tir_gemm_form *f, int64_t m, int64_t k)
{
	return ceil_div(m, f->mr) * f->mr * k * f->es;
}

struct pack_a_job {
	const struct tir_gemm_form *f;
	char *dst;
	const char *a;
	int64_t rs, cs, m, k, mp;
};

/* unit t: panel t % mp of k-block t / mp */
static void pack_a_task(void *arg, int64_t t)
{
	const struct pack_a_job *j = arg;
	const struct tir_gemm_form *f = j->f;
	int64_t q = t % j->mp, k0 = t / j->mp * f->kc;
	int64_t kcb = j->k - k0 < f->kc ? j->k - k0 : f->kc;
	int64_t len = j->m - q * f->mr < f->mr ? j->m - q * f->mr : f->mr;
	pack(f->es, j->dst + (k0 * j->mp + q * kcb) * f->mr * f->es,
	     j->a + (q * f->mr * j->rs + k0 * j->cs) * f->es, j->rs, j->cs, len, f->mr, kcb);
}

void tir_gemm_pack_a(const struct tir_gemm_form *f, void *dst, const void *a, int64_t rs,
		     int64_t cs, int64_t m, int64_t k)
{
	struct pack_a_job j = { f, dst, a, rs, cs, m, k, ceil_div(m, f->mr) };
	int64_t units = j.mp * ceil_div(k, f->kc);
	if (m * k < SERIAL_MACS / 16)
		for (int64_t t = 0; t < units; t++)
			pack_a_task(&j, t);
	else
		tir_pool_run_packing(units, pack_a_task, &j);
}

int64_t tir_gemm_b_bytes(const struct tir_gemm_form *f, int64_t k, int64_t n)
{
	return ceil_div(n, f->nr) * f->nr * k * f->es;
}

void tir_gemm_pack_b(const struct tir_gemm_form *f, void *dst, const void *b, int64_t rs,
		     int64_t cs, int64_t k, int64_t n)
{
	int64_t np = ceil_div(n, f->nr);
	for (int64_t k0 = 0; k0 < k; k0 += f->kc) {
		int64_t kcb = k - k0 < f->kc ? k - k0 : f->kc;
		for (int64_t r = 0; r < np; r++) {
			int64_t len = n - r * f->nr < f->nr ? n - r * f->nr : f->nr;
			pack(f->es, (char *)dst + (k0 * np + r * kcb) * f->nr * f->es,
			     (const char *)b + (k0 * rs + r * f->nr * cs) * f->es, cs, rs, len, f->nr,
			     kcb);
		}
	}
}

bool tir_gemm_panels(const struct tir_gemm_form *f, const void *pa, int64_t k0, int64_t kcb,
		     int64_t m, const void *pb, int64_t n, void *c, int64_t ldc, bool load)
{
	return tir_gemm_panels_part(f, pa, k0, kcb, m, 0, ceil_div(m, f->mr), pb, n, 0,
				    ceil_div(n, f->nr), c, ldc, load);
}

bool tir_gemm_panels_part(const struct tir_gemm_form *f, const void *pa, int64_t k0, int64_t kcb,
			  int64_t m, int64_t q0, int64_t q1, const void *pb, int64_t n, int64_t r0,
			  int64_t r1, void *c, int64_t ldc, bool load)
{
	int64_t mp = ceil_div(m, f->mr), np = ceil_div(n, f->nr);
	return run_panels(f->kern, f->es, kcb, (const char *)pa + k0 * mp * f->mr * f->es, pb, q0,
			  q1 < mp ? q1 : mp, r0, r1 < np ? r1 : np, m, n, c, ldc, load, NULL);
}

bool tir_gemm_has_direct(const struct tir_gemm_form *f)
{
	return ((const struct gemm_kern *)f->kern)->direct != NULL;
}

bool tir_gemm_direct_part(const struct tir_gemm_form *f, const void *a, int64_t lda, int64_t k0,
			  int64_t kcb, int64_t m, int64_t q0, int64_t q1, const void *pb, int64_t n,
			  int64_t r0, int64_t r1, void *c, int64_t ldc, bool load)
{
	const struct gemm_kern *kern = f->kern;
	int64_t mr = kern->mr, nr = kern->nr, es = f->es;
	int64_t mp = ceil_div(m, mr), np = ceil_div(n, nr);
	_Alignas(64) char tile[TILE_BYTES];
	q1 = q1 < mp ? q1 : mp;
	r1 = r1 < np ? r1 : np;
	TIR_ASSERT(kern->direct);
	for (int64_t r = r0; r < r1; r++) {
		if (tir_pool_stopping())
			return false;
		const char *b = (const char *)pb + r * nr * kcb * es;
		int64_t cols = n - r * nr < nr ? n - r * nr : nr;
		for (int64_t q = q0; q < q1; q++) {
			const char *ap = (const char *)a + (q * mr * lda + k0) * es;
			int64_t rows = m - q * mr < mr ? m - q * mr : mr;
			char *cp = (char *)c + (q * mr * ldc + r * nr) * es;
			if (cols == nr) {
				kern->direct[rows](kcb, ap, lda, b, cp, ldc, load);
				continue;
			}
			/* an edge: the same kernel on a tile, then the part that exists */
			for (int64_t i = 0; load && i < rows; i++)
				memcpy(tile + i * nr * es, cp + i * ldc * es, (size_t)(cols * es));
			kern->direct[rows](kcb, ap, lda, b, tile, nr, load);
			for (int64_t i = 0; i < rows; i++)
				memcpy(cp + i * ldc * es, tile + i * nr * es, (size_t)(cols * es));
		}
	}
	return true;
}

/* bf16 operands on tir's gemm where OpenBLAS is the default for f32: on
 * the SSE2 path when OpenBLAS's kernel is for SSE only (asked by name,
 * OpenBLAS runs them) */
static bool bf16_on_tir(void)
{
	return tir_vmath_path() == TIR_VMATH_SSE2 && tir_gemm_default() && tir_blas_sse_only();
}

static char info[96];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void info_init(void)
{
	const struct gemm_kern *f = pick_kernel(TIR_DTYPE_F32), *d = pick_kernel(TIR_DTYPE_F64);
	snprintf(info, sizeof info, "tir %s (f32 %dx%d, f64 %dx%d, KC %lld/%lld)", tir_vector_path(),
		 f->mr, f->nr, d->mr, d->nr, (long long)choose_kc(f->nr, 4),
		 (long long)choose_kc(d->nr, 8));
}

/* "openblas (OpenBLAS 0.3.21, core Zen; tir avx512 for other dtypes)" */
static _Thread_local char blas_line[160];

const char *tir_gemm_info(void)
{
	pthread_once(&info_once, info_init);
	if (tir_gemm_kind() != TIR_GEMM_OPENBLAS)
		return info;
	if (tir_gemm_default() && tir_blas_missing()) {
		/* the default's OpenBLAS is not installed: products ran on tir's */
		snprintf(blas_line, sizeof blas_line, "%s; OpenBLAS, the default on this vector path, is not installed", info);
		return blas_line;
	}
	char ver[64] = "not loaded yet";
	if (tir_blas_is_loaded()) {
		/* "OpenBLAS 0.3.21 DYNAMIC_ARCH ... (core Zen), ...": its first
		 * two words and the core */
		const char *b = tir_blas_info(), *core = strstr(b, "(core ");
		int w = 0, len = 0;
		while (b[len] && (b[len] != ' ' || ++w < 2))
			len++;
		int clen = core ? (int)strcspn(core + 6, ")") : 0;
		snprintf(ver, sizeof ver, "%.*s%s%.*s", len, b, core ? ", core " : "", clen, core ? core + 6 : "");
	}
	bool b16 = bf16_on_tir();   /* as on_blas chooses */
	snprintf(blas_line, sizeof blas_line, "openblas (%s; f32, f64%s; %sother dtypes on tir %s)%s", ver,
		 b16 ? "" : ", bf16", b16 ? "bf16 and " : "", tir_vector_path(),
		 tir_gemm_default() ? ", the default on this vector path" : "");
	return blas_line;
}

/* Whether g runs on OpenBLAS (1), on tir's gemm (0), or an error (< 0) */
static int on_blas(const struct tir_gemm *g, struct tir_err *err)
{
	/* bf16 operands too where no bf16 kernel runs: OpenBLAS widened beats
	 * tir's portable loops where f32 goes to OpenBLAS (tir_blas_gemm
	 * widens them to f32 copies) */
	bool own = (!g->a_dt || g->a_dt == g->dt) && (!g->b_dt || g->b_dt == g->dt);
	bool half = g->dt == TIR_DTYPE_F32 && (!g->a_dt || g->a_dt == g->dt || g->a_dt == TIR_DTYPE_BF16) &&
		    (!g->b_dt || g->b_dt == g->dt || g->b_dt == TIR_DTYPE_BF16) && !pick_pairs(g);
	int use = own || half ? tir_gemm_blas(g->dt, err) : 0;
	/* but on OpenBLAS's SSE kernel (a CPU before AVX) tir's SSE2 gemm,
	 * widening as it packs, is as fast as OpenBLAS in f32 and bf16 on it
	 * a little faster than f32 on OpenBLAS: 2048^3 185 ms against 192 (2
	 * threads, a Zen 5 running OpenBLAS's Nehalem kernel; even at 1
	 * thread), where widened for sgemm it was no faster than f32 */
	if (use > 0 && half && !own && bf16_on_tir())
		use = 0;
	return use;
}

int tir_gemm_needs_c(const struct tir_gemm *g, struct tir_err *err)
{
	if (!g->out || g->acc || g->epi)
		return 1;
	int use = on_blas(g, err);
	if (use < 0)
		return use;
	return use || k_blocks(g) > 1;
}

/* The one place a float product picks its gemm. */
int tir_gemm(const struct tir_gemm *g, struct tir_err *err)
{
	int use = on_blas(g, err);
	if (use < 0)
		return use;
	if (use && !g->c && g->out)
		return with_c(g, tir_blas_gemm, err);
	return use ? tir_blas_gemm(g, err) : tir_gemm_run(g, err);
}
