/*
 * half.h — the 16-bit float storage types, bit by bit: IEEE binary16
 * (f16) and bfloat16 (bf16, the top half of an f32).  Widening is exact;
 * narrowing rounds to nearest, ties to even, from the exact value (a
 * double narrows in one rounding, never through f32), overflows to
 * infinity and keeps NaN a NaN.  These are what NumPy's float16 and
 * PyTorch's bfloat16 do; tests/unit/test_half.c checks every f16 and bf16
 * value and the rounding boundaries.
 */
#ifndef TIR_HALF_H
#define TIR_HALF_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float tir_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint32_t tir_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float tir_h2f(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0) {
		float f = (float)m * 0x1p-24f; /* zero or subnormal: exact */
		return s ? -f : f;
	}
	if (e == 31)
		return tir_bits_f32(s | 0x7f800000u | m << 13);
	return tir_bits_f32(s | (e + 112) << 23 | m << 13);
}

static inline float tir_b2f(uint16_t b)
{
	return tir_bits_f32((uint32_t)b << 16);
}

/* |d| rounded to a float format of `man` stored mantissa bits and
 * exponent bias `bias` (its all-ones exponent 2 * bias + 1 is inf/NaN),
 * as the format's bits without the sign. */
static inline uint32_t tir_round_small(double a, int man, int bias)
{
	uint32_t inf = (uint32_t)(2 * bias + 1) << man;
	if (a != a)
		return inf | 1u << (man - 1);
	if (a > DBL_MAX)
		return inf;
	int e;
	frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): 2^(e-1) <= a */
	e -= 1;
	if (a == 0)
		return 0;
	if (e < 1 - bias) {
		/* subnormal: counts of the smallest step 2^(1-bias-man); a
		 * count of 2^man is the smallest normal, whose bits it is */
		return (uint32_t)nearbyint(ldexp(a, bias - 1 + man));
	}
	if (e > bias)
		return inf;
	double q = nearbyint(ldexp(a, man - e)); /* in [2^man, 2^(man+1)] */
	uint32_t bits = (uint32_t)(e + bias) << man;
	bits += (uint32_t)q - (1u << man); /* a carry to 2^(man+1) steps the exponent */
	return bits > inf ? inf : bits;
}

static inline uint16_t tir_d2h(double d)
{
	return (uint16_t)((signbit(d) ? 0x8000u : 0) | tir_round_small(fabs(d), 10, 15));
}

static inline uint16_t tir_d2b(double d)
{
	return (uint16_t)((signbit(d) ? 0x8000u : 0) | tir_round_small(fabs(d), 7, 127));
}

static inline uint16_t tir_f2b(float f)
{
	uint32_t u = tir_f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(u >> 16 | 0x40); /* NaN stays a (quiet) NaN */
	return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

static inline uint16_t tir_f2h(float f)
{
	return tir_d2h(f); /* an f32 is exact as a double: one rounding */
}

#endif
