/*
 * rng.c — rand and randn: Philox4x32-10 (Salmon, Moraes, Dror, Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3", SC 2011), counter-based so
 * that a value depends only on (seed, element index, dtype), never on
 * threads, chunking, fusion or where it runs.  Not a cryptographic RNG.
 *
 * The definition (a contract: changing it changes every program's output).
 * Each Philox block gives four 32-bit words, and every word is used:
 * elements go in groups of 8 counters, 32 elements for f32 and 16 for
 * f64 (so that a vector of 8 counters fills whole runs of 8 elements):
 *   element i (flat row-major index into out), f32:  group g = i / 32,
 *     slot q = (i / 8) % 4;  f64:  g = i / 16, q = (i / 8) % 2;
 *   counter c = 8 g + i % 8:  {lo32(c), hi32(c), 0, 0}, key = {lo32(seed),
 *     hi32(seed)},  {r0, r1, r2, r3} = Philox4x32-10(counter, key)
 *   rand, f32:  (r_q >> 8) * 2^-24
 *   rand, f64:  (((u64)r_2q << 32 | r_2q+1) >> 11) * 2^-53   (both in [0, 1))
 *   randn: Box-Muller, both of its outputs; f32 out computed in f32,
 *   every other dtype in double:
 *     f32:  pair p = q / 2,  u1 = ((r_2p >> 8) + 1) * 2^-24,
 *           u2 = (r_2p+1 >> 8) * 2^-24 (both exact in f32),
 *           z = sqrt(-2 lnf(u1)) * cos2pif(u2) for even q, sin2pif for odd,
 *           every operation an f32 one (IEEE, rounded to nearest, no fused
 *           multiply-add), with gen.c's lnf and cos2pif/sin2pif (genv.h):
 *           lnf u = e ln2_hi + ((e ln2_lo + s (z p)) + 2 s) from u = 2^e m,
 *           m in [sqrt(1/2), sqrt(2)) (sqrt 2 rounded to f32 the bound),
 *           s = (m - 1)/(m + 1), z = s^2, p = 2/3 + z (2/5 + z (2/7 + z 2/9))
 *           (each 2/k, ln2_hi = 0x1.62e3p-1 and ln2_lo = 0x1.2fefa4p-17
 *           f32 constants); cos and sin of 2 pi u2 from u2 = n/4 + r
 *           (n = round(4 u2), half to even; exact), by quadrant n % 4 from
 *           the Taylor polynomials of cos(2 pi r) to r^10 and sin(2 pi r)
 *           to r^9 in z = r^2 (Horner; coefficients (2 pi)^k / k! rounded
 *           to f32; sin's is r times its polynomial).  Measured (test_gen,
 *           all 2^24 arguments, against long double): lnf within 1.61 f32
 *           ULP, cos and sin 1.72, z 3.52 (2^22 pairs).
 *     f64:  u1 = (((((u64)r0 << 32 | r1) >> 11) + 1) * 2^-53,
 *           u2 = (((u64)r2 << 32 | r3) >> 11) * 2^-53,  cos for q = 0, sin for 1
 *           z = sqrt(-2 ln u1) * cos(2 pi u2)  (or sin)        (u1 in (0, 1])
 *   with ln, cos and sin tir's own (gen.c, genv.h), the same bits on every
 *   vector path: ln u1 from u1 = 2^e m, m in [sqrt(1/2), sqrt(2)), as
 *   e ln 2 + 2 atanh((m - 1)/(m + 1)) by its series, within 2 ULP of the
 *   true value (1.59 measured); cos(2 pi u2) (and sin) from the exact
 *   split u2 = n/4 + r, |r| <= 1/8, and Taylor polynomials of cos and sin
 *   of 2 pi r, within 2.5e-16 absolute (1.6e-16 measured; test_gen
 *   measures them against long double).
 *   Until 27 Nov 2026 f32 randn was the f64 computation above, rounded
 *   once to f32 (of the same 24-bit u1 and u2): 43% of
 *   the 2^24 values of seed 1 differ from today's, by 4 f32 ULPs at most.
 *   Until 26 Nov 2026 element i took Philox's counter i and one word of it
 *   (two for f64 and randn): rand cost a Philox block per element, randn
 *   a block, a log and a square root.  Until earlier in Nov 2026 they were
 *   libm's log and cos(2 pi * u2 rounded): of the 2^24 f32 values of seed
 *   1, 3 differ, all where u2 is 1/4 or 3/4 (now 0 exactly, then about
 *   -2.7e-16); f64 values move in the last bits (4e-11 relative at most
 *   over 2^20, near cos's zeros).
 *   Other dtypes take the f64 value converted as cast does (truncation).
 *   gen.c computes f32 and f64 outputs by the same definition, vectorized.
 */
#include "exec.h"
#include "iter.h"

#include <math.h>

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

static inline void philox_round(uint32_t c[4], const uint32_t k[2])
{
	uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
	uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
	uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
	uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
	uint32_t n0 = hi1 ^ c[1] ^ k[0];
	uint32_t n2 = hi0 ^ c[3] ^ k[1];
	c[0] = n0;
	c[1] = lo1;
	c[2] = n2;
	c[3] = lo0;
}

void tir_philox4x32_10(uint32_t ctr[4], const uint32_t key[2])
{
	uint32_t k[2] = {key[0], key[1]};
	for (int r = 0; r < 10; r++) {
		if (r > 0) {
			k[0] += PHILOX_W0;
			k[1] += PHILOX_W1;
		}
		philox_round(ctr, k);
	}
}

/* The value of element i as a double, by the definition above. */
static inline double rng_value(uint64_t i, const uint32_t key[2], bool normal, bool single)
{
	uint64_t c = (single ? i >> 5 : i >> 4) << 3 | (i & 7);
	unsigned q = single ? (unsigned)(i >> 3) & 3 : (unsigned)(i >> 3) & 1;
	uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
	tir_philox4x32_10(r, key);
	if (!normal) {
		if (single)
			return (double)(r[q] >> 8) * 0x1p-24;
		return (double)((((uint64_t)r[2 * q] << 32) | r[2 * q + 1]) >> 11) * 0x1p-53;
	}
	if (single) {
		unsigned p = q / 2;
		float u1 = (float)((r[2 * p] >> 8) + 1) * 0x1p-24f;
		float u2 = (float)(r[2 * p + 1] >> 8) * 0x1p-24f;
		float rad = sqrtf(-2.0f * tir_gen_lnf(u1));
		return rad * (q % 2 ? tir_gen_sin2pif(u2) : tir_gen_cos2pif(u2));
	}
	double u1 = (double)(((((uint64_t)r[0] << 32) | r[1]) >> 11) + 1) * 0x1p-53;
	double u2 = (double)((((uint64_t)r[2] << 32) | r[3]) >> 11) * 0x1p-53;
	return sqrt(-2.0 * tir_gen_ln(u1)) * (q ? tir_gen_sin2pi(u2) : tir_gen_cos2pi(u2));
}

void tir_rand_range(void *p, enum tir_dtype dt, int64_t start, int64_t n, uint64_t seed,
		    bool normal)
{
	const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
	bool single = dt == TIR_DTYPE_F32;
	for (int64_t j = 0; j < n; j++) {
		double v = rng_value((uint64_t)(start + j), key, normal, single);
		switch (dt) {
		case TIR_DTYPE_BOOL: ((uint8_t *)p)[j] = v != 0; break;
		case TIR_DTYPE_I32: ((int32_t *)p)[j] = tir_f2i32(v); break;
		case TIR_DTYPE_I64: ((int64_t *)p)[j] = tir_f2i64(v); break;
		case TIR_DTYPE_F32: ((float *)p)[j] = (float)v; break;
		case TIR_DTYPE_F64: ((double *)p)[j] = v; break;
		default: break;
		}
	}
}

struct rand_job {
	void *p;
	enum tir_dtype dt;
	int64_t n, chunk;            /* values, values per task */
	uint64_t seed;
	bool normal;
};

static void rand_chunk(void *ctx, int64_t t)
{
	const struct rand_job *j = ctx;
	int64_t lo = t * j->chunk, len = j->n - lo < j->chunk ? j->n - lo : j->chunk;
	char *dst = (char *)j->p + (size_t)lo * tir_dtype_size(j->dt);
	tir_rand_range(dst, j->dt, lo, len, j->seed, j->normal);
}

/* Fill the contiguous out with uniform [0, 1) (normal false) or standard
 * normal values; returns 0, or -TIR_EUNSUPPORTED for a strided out. */
int tir_k_rand(struct tir_tensor *out, uint64_t seed, bool normal)
{
	int64_t n = tir_tensor_numel(out);
	void *p = tir_tensor_data(out);
	if (n == 0)
		return 0;
	if (!p || !tir_tensor_is_contiguous(out) || (unsigned)out->dtype >= TIR_DTYPE_COUNT)
		return -TIR_EUNSUPPORTED;
	/* chunks on the pool: each value depends on its index only, so the
	 * split changes nothing */
	int64_t chunk = tir_task_items(n, (int64_t)tir_dtype_size(out->dtype));
	struct rand_job job = {p, out->dtype, n, chunk, seed, normal};
	tir_pool_run_shares((n + chunk - 1) / chunk, rand_chunk, &job);
	return 0;
}
