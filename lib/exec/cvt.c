/*
 * cvt.c — one run of elements from one dtype into another: what cast,
 * the operand conversions of the reference kernels, the widening loads of
 * fused kernels and the narrowing stores of the storage types do.
 *
 * Rules (docs/language.md, "Dtypes"): to bool, nonzero; between integers,
 * two's complement wrap (NumPy's astype); float to integer, truncation
 * toward zero to i32 or i64 (out of range: the type's minimum, as x86's
 * cvtt* and so NumPy on x86), then the wrap to a narrower type; to a float,
 * round to nearest even from the exact value (half.h).  A run between
 * equal dtypes copies bits (a NaN's payload survives).
 *
 * f16 <-> f32 runs take F16C on the AVX2 and AVX-512 paths (the same
 * rounding, bit for bit: test_half checks both against half.h).
 */
#include "exec.h"
#include "half.h"
#include "iter.h"
#include "vmath.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif

/* One run of n elements from s (step ss, in elements) into contiguous d;
 * DEC turns a stored source element into the value converted. */
#define CONV_RUN(DT, ST, DEC, EXPR)                                         \
	do {                                                                \
		DT *d_ = (DT *)d;                                           \
		const ST *s_ = (const ST *)s;                               \
		if (ss == 1)                                                \
			for (int64_t i = 0; i < n; i++) {                   \
				__auto_type v = DEC(s_[i]);                 \
				d_[i] = (EXPR);                             \
			}                                                   \
		else                                                        \
			for (int64_t i = 0; i < n; i++) {                   \
				__auto_type v = DEC(s_[i * ss]);            \
				d_[i] = (EXPR);                             \
			}                                                   \
	} while (0)

#define AS_IS(x) (x)

#define CONV_FROM(DT, TO_BOOL, FROM_I, FROM_F)                                       \
	switch (st) {                                                                \
	case TIR_DTYPE_BOOL: CONV_RUN(DT, uint8_t, AS_IS, TO_BOOL); break;           \
	case TIR_DTYPE_I8: CONV_RUN(DT, int8_t, AS_IS, FROM_I); break;               \
	case TIR_DTYPE_U8: CONV_RUN(DT, uint8_t, AS_IS, FROM_I); break;              \
	case TIR_DTYPE_I16: CONV_RUN(DT, int16_t, AS_IS, FROM_I); break;             \
	case TIR_DTYPE_I32: CONV_RUN(DT, int32_t, AS_IS, FROM_I); break;             \
	case TIR_DTYPE_I64: CONV_RUN(DT, int64_t, AS_IS, FROM_I); break;             \
	case TIR_DTYPE_F16: CONV_RUN(DT, uint16_t, tir_h2f, FROM_F); break;          \
	case TIR_DTYPE_BF16: CONV_RUN(DT, uint16_t, tir_b2f, FROM_F); break;         \
	case TIR_DTYPE_F32: CONV_RUN(DT, float, AS_IS, FROM_F); break;               \
	case TIR_DTYPE_F64: CONV_RUN(DT, double, AS_IS, FROM_F); break;              \
	default: break;                                                              \
	}

/* a float value v (float or double) to bf16: f32's bit rounding, or one
 * rounding from a double */
#define TO_BF16(v) (sizeof(v) == 4 ? tir_f2b((float)(v)) : tir_d2b((double)(v)))

static void conv_generic(enum tir_dtype dt, void *d, enum tir_dtype st, const void *s, int64_t ss,
			 int64_t n)
{
	switch (dt) {
	case TIR_DTYPE_BOOL:
		CONV_FROM(uint8_t, v != 0, v != 0, v != 0);
		break;
	case TIR_DTYPE_I8:
		CONV_FROM(int8_t, (int8_t)(v != 0), (int8_t)(uint8_t)(uint64_t)v,
			  (int8_t)(uint8_t)(uint32_t)tir_f2i32(v));
		break;
	case TIR_DTYPE_U8:
		CONV_FROM(uint8_t, (uint8_t)(v != 0), (uint8_t)(uint64_t)v, (uint8_t)(uint32_t)tir_f2i32(v));
		break;
	case TIR_DTYPE_I16:
		CONV_FROM(int16_t, (int16_t)(v != 0), (int16_t)(uint16_t)(uint64_t)v,
			  (int16_t)(uint16_t)(uint32_t)tir_f2i32(v));
		break;
	case TIR_DTYPE_I32:
		CONV_FROM(int32_t, (int32_t)(v != 0), (int32_t)(uint32_t)(uint64_t)v, tir_f2i32(v));
		break;
	case TIR_DTYPE_I64:
		CONV_FROM(int64_t, (int64_t)(v != 0), (int64_t)v, tir_f2i64(v));
		break;
	case TIR_DTYPE_F16:
		CONV_FROM(uint16_t, (uint16_t)(v ? 0x3c00 : 0), tir_d2h((double)v), tir_d2h((double)v));
		break;
	case TIR_DTYPE_BF16:
		CONV_FROM(uint16_t, (uint16_t)(v ? 0x3f80 : 0), tir_d2b((double)v), TO_BF16(v));
		break;
	case TIR_DTYPE_F32:
		CONV_FROM(float, (float)(v != 0), (float)v, (float)v);
		break;
	case TIR_DTYPE_F64:
		CONV_FROM(double, (double)(v != 0), (double)v, (double)v);
		break;
	default:
		break;
	}
}

/* ---- bf16 <-> f32 runs ----
 * The bits as half.h's tir_f2b and tir_b2f make them, written without a
 * branch so that the compiler vectorizes the loop for each path's target
 * (a NaN is selected, not branched to): the narrowing store of every
 * bf16 result (a product's, an elementwise kernel's) and the widening
 * of bf16 operands, at a few instructions a vector. */
#define B2F_RUN(d, s, n)                                                       \
	for (int64_t i = 0; i < (n); i++) {                                    \
		uint32_t u_ = (uint32_t)(s)[i] << 16;                         \
		memcpy(&(d)[i], &u_, 4);                                       \
	}
#define F2B_RUN(d, s, n)                                                       \
	for (int64_t i = 0; i < (n); i++) {                                    \
		uint32_t u_;                                                   \
		memcpy(&u_, &(s)[i], 4);                                       \
		uint32_t r_ = (u_ + 0x7fffu + (u_ >> 16 & 1)) >> 16;           \
		uint32_t q_ = u_ >> 16 | 0x40; /* NaN stays a (quiet) NaN */  \
		(d)[i] = (uint16_t)((u_ & 0x7fffffffu) > 0x7f800000u ? q_ : r_); \
	}
#define BF16_RUNS(SFX, TGT)                                                    \
	static TGT void b2f_##SFX(float *restrict d, const uint16_t *restrict s, int64_t n) \
	{                                                                      \
		B2F_RUN(d, s, n)                                               \
	}                                                                      \
	static TGT void f2b_##SFX(uint16_t *restrict d, const float *restrict s, int64_t n) \
	{                                                                      \
		F2B_RUN(d, s, n)                                               \
	}
TIR_ISA_BUILDS(BF16_RUNS)

/* n contiguous elements between bf16 and f32, on the vector path's
 * build; false for any other pair */
static bool bf16_run(enum tir_dtype dt, void *d, enum tir_dtype st, const void *s, int64_t n)
{
	if (dt == TIR_DTYPE_F32 && st == TIR_DTYPE_BF16)
		TIR_ISA_PICK(b2f)(d, s, n);
	else if (dt == TIR_DTYPE_BF16 && st == TIR_DTYPE_F32)
		TIR_ISA_PICK(f2b)(d, s, n);
	else
		return false;
	return true;
}

/* ---- f16 <-> f32 with F16C ---- */

#if TIR_ISA_X86
#include <immintrin.h>

__attribute__((target("avx2,f16c"))) static void h2f_f16c(float *d, const uint16_t *s, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
	for (; i < n; i++)
		d[i] = tir_h2f(s[i]);
}

__attribute__((target("avx2,f16c"))) static void f2h_f16c(uint16_t *d, const float *s, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(d + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		d[i] = tir_f2h(s[i]);
}

static bool use_f16c(void)
{
	static int ok = -1; /* asked once; threads may ask together (same answer) */
	int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
	if (v < 0) {
		v = TIR_CPU_HAS(F16C, "f16c") && TIR_CPU_HAS(AVX2, "avx2");
		__atomic_store_n(&ok, v, __ATOMIC_RELAXED);
	}
	return v && tir_vmath_path() >= TIR_VMATH_AVX2;
}
#endif

void tir_cvt_run(enum tir_dtype dt, void *d, enum tir_dtype st, const void *s, int64_t ss, int64_t n)
{
	if (dt == st) {
		size_t es = tir_dtype_size(dt);
		if (ss == 1) {
			memmove(d, s, (size_t)n * es);
			return;
		}
		switch (es) {
		case 1: CONV_RUN(uint8_t, uint8_t, AS_IS, v); break;
		case 2: CONV_RUN(uint16_t, uint16_t, AS_IS, v); break;
		case 4: CONV_RUN(uint32_t, uint32_t, AS_IS, v); break;
		default: CONV_RUN(uint64_t, uint64_t, AS_IS, v); break;
		}
		return;
	}
#if TIR_ISA_X86
	if (ss == 1 && dt == TIR_DTYPE_F32 && st == TIR_DTYPE_F16 && use_f16c()) {
		h2f_f16c(d, s, n);
		return;
	}
	if (ss == 1 && dt == TIR_DTYPE_F16 && st == TIR_DTYPE_F32 && use_f16c()) {
		f2h_f16c(d, s, n);
		return;
	}
#endif
	if (ss == 1 && bf16_run(dt, d, st, s, n))
		return;
	conv_generic(dt, d, st, s, ss, n);
}
