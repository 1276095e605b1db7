/*
 * genv.h — the body of gen.c's generators, included by gen.c once per
 * build with GV_SFX (the build's name), GV_TGT (its target attribute),
 * GV_VB (vector bytes: 8 is one lane, the scalar path), GV_MUL (a
 * 32 x 32 -> 64-bit multiply of each lane's low halves), GV_HI, and
 * GV_SQRT and GV_SQRTF (square roots of double lanes and of the twice as
 * many f32 lanes randn f32 computes on).  Every build runs the same IEEE
 * operations in the same order on each lane (gen.c turns contraction
 * off), so every build gives the same bits.
 */
#define GV_CAT_(a, b) a##b
#define GV_CAT(a, b) GV_CAT_(a, b)
#define GV_(name) GV_CAT(name##_, GV_SFX)
#define GV_L (GV_VB / 8)

typedef uint64_t GV_(vu) __attribute__((vector_size(GV_VB), aligned(8)));
typedef int64_t GV_(vs) __attribute__((vector_size(GV_VB), aligned(8)));
typedef double GV_(vd) __attribute__((vector_size(GV_VB), aligned(8)));
typedef float GV_(vf) __attribute__((vector_size(GV_VB / 2), aligned(4)));
/* randn f32's vectors: twice the lanes, 32 bits each */
typedef uint32_t GV_(wu) __attribute__((vector_size(GV_VB), aligned(4)));
typedef int32_t GV_(ws) __attribute__((vector_size(GV_VB), aligned(4)));
typedef float GV_(wf) __attribute__((vector_size(GV_VB), aligned(4)));

#define VU GV_(vu)
#define VS GV_(vs)
#define VD GV_(vd)
#define VF GV_(vf)
#define WU GV_(wu)
#define WS GV_(ws)
#define WF GV_(wf)
#define SPLATU(c) ((VU){0} + (uint64_t)(c))
#define SPLATD(c) ((VD){0} + (double)(c))
#define SPLATW(c) ((WU){0} + (uint32_t)(c))
#define SPLATF(c) ((WF){0} + (float)(c))

/* u < 2^52 (u64 lanes) as doubles, exactly */
GV_INLINE GV_TGT VD GV_(u2d)(VU u)
{
	return (VD)(u | SPLATU(0x4330000000000000u)) - 0x1p52;
}

/* u <= 2^53 as doubles, exactly (the sum of the two parts is representable) */
GV_INLINE GV_TGT VD GV_(u53d)(VU u)
{
	return GV_(u2d)(u >> 26) * 0x1p26 + GV_(u2d)(u & SPLATU(0x3ffffff));
}

/* Philox4x32-10 of counters {lo32(i), hi32(i), 0, 0} under the round keys,
 * for GV_U vectors at once (their rounds interleaved: one alone waits on
 * its multiplies): the four words of each, in the low halves of the lanes.
 * GV_U * GV_L is a multiple of 8, the counters of one group (rng.c). */
#define GV_U (GV_L >= 2 ? 4 : 8)
/* vectors whose ln and cos/sin randn computes side by side (ln_n) */
#define GV_NX 4
GV_INLINE GV_TGT void GV_(philox)(const VU *i, const uint32_t *k0, const uint32_t *k1, VU w[][4])
{
	const VU m0 = SPLATU(PHILOX_M0), m1 = SPLATU(PHILOX_M1);
	VU c0[GV_U], c1[GV_U], c2[GV_U], c3[GV_U];
	/* round 1: c2 = c3 = 0 */
	_Pragma("GCC unroll 4") for (int u = 0; u < GV_U; u++) {
		VU p0 = GV_MUL(i[u], m0);
		c0[u] = GV_HI(i[u]) ^ SPLATU(k0[0]);
		c1[u] = SPLATU(0);
		c2[u] = GV_HI(p0) ^ SPLATU(k1[0]);
		c3[u] = p0;
	}
	_Pragma("GCC unroll 9") for (int r = 1; r < 10; r++) {
		_Pragma("GCC unroll 4") for (int u = 0; u < GV_U; u++) {
			VU q0 = GV_MUL(c0[u], m0), q1 = GV_MUL(c2[u], m1);
			c0[u] = GV_HI(q1) ^ c1[u] ^ SPLATU(k0[r]);
			c1[u] = q1;
			c2[u] = GV_HI(q0) ^ c3[u] ^ SPLATU(k1[r]);
			c3[u] = q0;
		}
	}
	_Pragma("GCC unroll 4") for (int u = 0; u < GV_U; u++) {
		w[u][0] = c0[u] & SPLATU(0xffffffffu);
		w[u][1] = c1[u] & SPLATU(0xffffffffu);
		w[u][2] = c2[u] & SPLATU(0xffffffffu);
		w[u][3] = c3[u] & SPLATU(0xffffffffu);
	}
}

/* ln u for u in (0, 1]: u = 2^e m, m in [sqrt(1/2), sqrt(2)), then
 * ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, by its series
 * to s^21; e ln 2 in two parts (e ln2_hi exact).  See gen.c for the bound.
 * Of N vectors at once, step by step across them: each lane's operations
 * are the same for any N, but N independent chains keep the multiplier
 * and adder busy where one chain waits on each step. */
GV_INLINE GV_TGT void GV_(ln_n)(const VD *u, VD *out, int N)
{
	VD ed[GV_NX], s[GV_NX], z[GV_NX], p[GV_NX];
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		VU b = (VU)u[k];
		VU e = (b >> 52) - SPLATU(1023);
		VD m = (VD)((b & SPLATU(0x000fffffffffffffu)) | SPLATU(0x3ff0000000000000u));
		VS big = (VS)(m > 1.4142135623730951);
		m = (VD)(((VU)big & (VU)(m * 0.5)) | (~(VU)big & (VU)m));
		e = e + ((VU)big & SPLATU(1));
		/* e as a double: the bits of 1.5 * 2^52 plus e are those of 1.5 * 2^52 + e */
		ed[k] = (VD)(e + SPLATU(0x4338000000000000u)) - 0x1.8p52;
		VD f = m - 1.0;
		s[k] = f / (m + 1.0);
		z[k] = s[k] * s[k];
		p[k] = SPLATD(2.0 / 21.0);
	}
	static const double coef[] = {2.0 / 19.0, 2.0 / 17.0, 2.0 / 15.0, 2.0 / 13.0, 2.0 / 11.0,
				      2.0 / 9.0,  2.0 / 7.0,  2.0 / 5.0,  2.0 / 3.0};
	_Pragma("GCC unroll 9") for (int c = 0; c < 9; c++)
		_Pragma("GCC unroll 4") for (int k = 0; k < N; k++)
			p[k] = p[k] * z[k] + coef[c];
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		VD lo = ed[k] * 0x1.ef35793c76730p-45 + s[k] * (z[k] * p[k]);
		out[k] = ed[k] * 0x1.62e42fefa3800p-1 + (lo + 2.0 * s[k]);
	}
}

GV_INLINE GV_TGT VD GV_(ln)(VD u)
{
	VD r;
	GV_(ln_n)(&u, &r, 1);
	return r;
}

/* cos(2 pi u) and sin(2 pi u) for u in [0, 1) a multiple of 2^-53 or
 * coarser: u = n/4 + r exactly (n = round(4u), |r| <= 1/8), then
 * cos and sin of n pi/2 + 2 pi r by quadrant from Taylor polynomials of
 * cos(2 pi r) (to r^16) and sin(2 pi r) (to r^17) in r.  Of N vectors at
 * once, as ln_n. */
GV_INLINE GV_TGT void GV_(cossin2pi_n)(const VD *u, VD *cos_out, VD *sin_out, int N)
{
	/* (2pi)^16 / 16!, -(2pi)^14 / 14!, ... 1 and (2pi)^17 / 17!, ... 2pi */
	static const double cc[] = {-0x1.b6e24f44b128fp+0, 0x1.f9d38a3763cc3p+2, -0x1.a6d1f2a204a8cp+4,
				    0x1.e1f506891babbp+5,  -0x1.55d3c7e3cbffap+6, 0x1.03c1f081b5ac4p+6,
				    -0x1.3bd3cc9be45dep+4, 1.0};
	static const double sc[] = {-0x1.6fadb9f155744p-1, 0x1.e8f434d018d63p+1, -0x1.e3074fde8871fp+3,
				    0x1.50783487ee782p+5,  -0x1.32d2cce62bd86p+6, 0x1.466bc6775aae2p+6,
				    -0x1.4abbce625be53p+5, 0x1.921fb54442d18p+2};
	VU q[GV_NX];
	VD r[GV_NX], z[GV_NX], c[GV_NX], s[GV_NX];
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		VD t = u[k] * 4.0;
		VD nd = (t + 0x1.8p52) - 0x1.8p52;
		q[k] = (VU)(nd + 0x1.8p52) & SPLATU(3);
		r[k] = (t - nd) * 0.25;
		z[k] = r[k] * r[k];
		c[k] = SPLATD(0x1.20c62c2f2d7f5p-2);
		s[k] = SPLATD(0x1.aaec32af93359p-4);
	}
	/* c * z - 0x1.b6e...p+0 is c * z + (-0x1.b6e...p+0): the same IEEE sum */
	_Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
		_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
			c[k] = c[k] * z[k] + cc[j];
			s[k] = s[k] * z[k] + sc[j];
		}
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		VD sk = s[k] * r[k];
		/* cos: c, -s, -c, s by quadrant; sin: s, c, -s, -c */
		VU odd = (VU)((q[k] & SPLATU(1)) != SPLATU(0));
		VU cneg = (VU)((q[k] == SPLATU(1)) | (q[k] == SPLATU(2))) & SPLATU(0x8000000000000000u);
		VU sneg = (VU)(q[k] >= SPLATU(2)) & SPLATU(0x8000000000000000u);
		cos_out[k] = (VD)(((odd & (VU)sk) | (~odd & (VU)c[k])) ^ cneg);
		sin_out[k] = (VD)(((odd & (VU)c[k]) | (~odd & (VU)sk)) ^ sneg);
	}
}

GV_INLINE GV_TGT void GV_(cossin2pi)(VD u, VD *cos_out, VD *sin_out)
{
	GV_(cossin2pi_n)(&u, cos_out, sin_out, 1);
}

/* ---- randn f32: in f32, 2 GV_L lanes a vector ---- */

/* The 32-bit words of a's lanes, then b's (the low halves of the u64
 * lanes, where philox leaves them): one vector of twice the lanes. */
GV_INLINE GV_TGT WU GV_(pack)(VU a, VU b)
{
#if defined(__GNUC__) && !defined(__clang__)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GV_LO 0
#else
#define GV_LO 1
#endif
#if GV_L == 1
	const WU ix = {GV_LO, 2 + GV_LO};
#elif GV_L == 2
	const WU ix = {GV_LO, 2 + GV_LO, 4 + GV_LO, 6 + GV_LO};
#elif GV_L == 4
	const WU ix = {GV_LO, 2 + GV_LO, 4 + GV_LO, 6 + GV_LO, 8 + GV_LO, 10 + GV_LO, 12 + GV_LO, 14 + GV_LO};
#elif GV_L == 8
	const WU ix = {GV_LO,      2 + GV_LO,  4 + GV_LO,  6 + GV_LO,  8 + GV_LO,  10 + GV_LO,
		       12 + GV_LO, 14 + GV_LO, 16 + GV_LO, 18 + GV_LO, 20 + GV_LO, 22 + GV_LO,
		       24 + GV_LO, 26 + GV_LO, 28 + GV_LO, 30 + GV_LO};
#else
#error "genv.h: pack for GV_L lanes"
#endif
#undef GV_LO
	return __builtin_shuffle((WU)a, (WU)b, ix);
#else
	WU r;
	for (int l = 0; l < GV_L; l++) {
		r[l] = (uint32_t)a[l];
		r[GV_L + l] = (uint32_t)b[l];
	}
	return r;
#endif
}

/* The uniform of a word's top 24 bits, k 2^-24, plus one step when plus1
 * (Box-Muller's u1, in (0, 1]): exact in f32. */
GV_INLINE GV_TGT WF GV_(unit24f)(WU w, bool plus1)
{
	return __builtin_convertvector((WS)(w >> 8) + (int32_t)plus1, WF) * 0x1p-24f;
}

/* ln u for u in (0, 1] in f32, as ln_n: u = 2^e m, m in [sqrt(1/2),
 * sqrt(2)) (1.41421354, sqrt 2 rounded to f32, the bound), ln m = 2 atanh
 * s, s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to s^9 (the
 * coefficients 2/k rounded to f32), e ln 2 in two parts (fdlibm's logf's:
 * e ln2_hi exact for |e| < 128). */
GV_INLINE GV_TGT void GV_(lnf_n)(const WF *u, WF *out, int N)
{
	WF ed[GV_NX], s[GV_NX], z[GV_NX], p[GV_NX];
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		WU b = (WU)u[k];
		WS e = (WS)(b >> 23) - 127;
		WF m = (WF)((b & SPLATW(0x007fffffu)) | SPLATW(0x3f800000u));
		WS big = (WS)(m > 0x1.6a09e6p+0f);
		m = (WF)(((WU)big & (WU)(m * 0.5f)) | (~(WU)big & (WU)m));
		e = e - big; /* big is -1 where true */
		ed[k] = __builtin_convertvector(e, WF);
		WF f = m - 1.0f;
		s[k] = f / (m + 1.0f);
		z[k] = s[k] * s[k];
		p[k] = SPLATF(0x1.c71c72p-3f); /* 2/9 */
	}
	static const float coef[] = {0x1.24924ap-2f, 0x1.99999ap-2f, 0x1.555556p-1f}; /* 2/7, 2/5, 2/3 */
	_Pragma("GCC unroll 3") for (int c = 0; c < 3; c++)
		_Pragma("GCC unroll 4") for (int k = 0; k < N; k++)
			p[k] = p[k] * z[k] + coef[c];
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		WF lo = ed[k] * 0x1.2fefa4p-17f + s[k] * (z[k] * p[k]);
		out[k] = ed[k] * 0x1.62e3p-1f + (lo + 2.0f * s[k]);
	}
}

/* cos(2 pi u) and sin(2 pi u) in f32 for u in [0, 1) a multiple of 2^-24
 * or coarser, as cossin2pi_n: u = n/4 + r exactly (n = round(4u), |r| <=
 * 1/8), Taylor polynomials of cos(2 pi r) to r^10 and sin(2 pi r) to r^9,
 * the coefficients (2 pi)^k / k! rounded to f32. */
GV_INLINE GV_TGT void GV_(cossinf_n)(const WF *u, WF *cos_out, WF *sin_out, int N)
{
	/* (2pi)^8 / 8!, -(2pi)^6 / 6!, ... 1 and -(2pi)^7 / 7!, ... 2pi (the
	 * highest of each is where c and s start, below) */
	static const float cc[] = {0x1.e1f506p+5f, -0x1.55d3c8p+6f, 0x1.03c1f0p+6f, -0x1.3bd3ccp+4f, 1.0f};
	static const float sc[] = {-0x1.32d2ccp+6f, 0x1.466bc6p+6f, -0x1.4abbcep+5f, 0x1.921fb6p+2f};
	WU q[GV_NX];
	WF r[GV_NX], z[GV_NX], c[GV_NX], s[GV_NX];
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		WF t = u[k] * 4.0f;
		WF nd = (t + 0x1.8p23f) - 0x1.8p23f;
		q[k] = (WU)(nd + 0x1.8p23f) & SPLATW(3);
		r[k] = (t - nd) * 0.25f;
		z[k] = r[k] * r[k];
		c[k] = SPLATF(-0x1.a6d1f2p+4f); /* -(2pi)^10 / 10! */
		s[k] = SPLATF(0x1.507834p+5f);  /* (2pi)^9 / 9! */
	}
	_Pragma("GCC unroll 5") for (int j = 0; j < 5; j++)
		_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
			c[k] = c[k] * z[k] + cc[j];
			if (j < 4)
				s[k] = s[k] * z[k] + sc[j];
		}
	_Pragma("GCC unroll 4") for (int k = 0; k < N; k++) {
		WF sk = s[k] * r[k];
		WU odd = (WU)((q[k] & SPLATW(1)) != SPLATW(0));
		WU cneg = (WU)((q[k] == SPLATW(1)) | (q[k] == SPLATW(2))) & SPLATW(0x80000000u);
		WU sneg = (WU)(q[k] >= SPLATW(2)) & SPLATW(0x80000000u);
		cos_out[k] = (WF)(((odd & (WU)sk) | (~odd & (WU)c[k])) ^ cneg);
		sin_out[k] = (WF)(((odd & (WU)c[k]) | (~odd & (WU)sk)) ^ sneg);
	}
}

/* randn f32 of GV_U vectors of counters (their words w, as philox gives
 * them), N <= 2 GV_NX of them: for vector u, o[u][q] the lanes of
 * slot q.  Pair p of a counter (u1 from word 2p, u2 from 2p + 1) goes
 * in lanes p GV_L .. p GV_L + GV_L - 1; z = sqrt(-2 ln u1) cos(2 pi u2)
 * (slot 2p) and sqrt(-2 ln u1) sin(2 pi u2) (slot 2p + 1), in f32. */
GV_INLINE GV_TGT void GV_(normf)(VU w[][4], VF o[][4], int N)
{
	WF u1[2 * GV_NX], u2[2 * GV_NX], rad[2 * GV_NX], cs[2 * GV_NX], sn[2 * GV_NX];
	for (int u = 0; u < N; u++) {
		u1[u] = GV_(unit24f)(GV_(pack)(w[u][0], w[u][2]), true);
		u2[u] = GV_(unit24f)(GV_(pack)(w[u][1], w[u][3]), false);
	}
	_Pragma("GCC unroll 2") for (int j = 0; j < N; j += GV_NX) {
		int n = N - j < GV_NX ? N - j : GV_NX;
		GV_(lnf_n)(u1 + j, rad + j, n);
		_Pragma("GCC unroll 4") for (int k = j; k < j + n; k++)
			rad[k] = GV_SQRTF(-2.0f * rad[k]);
		GV_(cossinf_n)(u2 + j, cs + j, sn + j, n);
	}
	for (int u = 0; u < N; u++) {
		WF zc = rad[u] * cs[u], zs = rad[u] * sn[u];
		memcpy(&o[u][0], &zc, sizeof(VF));
		memcpy(&o[u][1], &zs, sizeof(VF));
		memcpy(&o[u][2], (char *)&zc + sizeof(VF), sizeof(VF));
		memcpy(&o[u][3], (char *)&zs + sizeof(VF), sizeof(VF));
	}
}

/* ln u1 -> sqrt(-2 ln u1): Box-Muller's radius */
GV_INLINE GV_TGT VD GV_(radius)(VD u1)
{
	return GV_SQRT(-2.0 * GV_(ln)(u1));
}

/* The uniform of a 24-bit (single) or 53-bit word pair: k 2^-24 or
 * k 2^-53, plus one step when plus1 (Box-Muller's u1, in (0, 1]). */
GV_INLINE GV_TGT VD GV_(unit24)(VU w, bool plus1)
{
	return GV_(u2d)((w >> 8) + SPLATU(plus1)) * 0x1p-24;
}

GV_INLINE GV_TGT VD GV_(unit53)(VU hi, VU lo, bool plus1)
{
	return GV_(u53d)((((hi << 32) | lo) >> 11) + SPLATU(plus1)) * 0x1p-53;
}

/* lanes of a where m is all ones, else of b */
GV_INLINE GV_TGT VU GV_(pick)(VU m, VU a, VU b)
{
	return (m & a) | (~m & b);
}

/* rand and randn by rng.c's layout.  One group: 8 counters (lane l of the
 * group: counter 8 g + l), 32 f32 or 16 f64 elements, slot q of the group
 * (elements 8 q .. 8 q + 7) from its words:
 *   rand f32: word q;  rand f64: words 2q, 2q + 1;
 *   randn f32: pair p = q / 2 (u1 from word 2p, u2 from 2p + 1), cos for
 *     even q, sin for odd;  randn f64: u1 from words 0, 1, u2 from 2, 3,
 *     cos for q = 0, sin for q = 1.
 * The slots of one vector of counters w: v[q] for each slot q (4 for f32,
 * 2 for f64). */
GV_INLINE GV_TGT void GV_(slots)(bool normal, bool single, const VU w[4], VD v[4])
{
	if (!normal) {
		if (single) {
			for (int q = 0; q < 4; q++)
				v[q] = GV_(unit24)(w[q], false);
		} else {
			v[0] = GV_(unit53)(w[0], w[1], false);
			v[1] = GV_(unit53)(w[2], w[3], false);
		}
		return;
	}
	if (single) {
		VU ww[1][4] = {{w[0], w[1], w[2], w[3]}};
		VF o[1][4];
		GV_(normf)(ww, o, 1);
		for (int q = 0; q < 4; q++)
			v[q] = __builtin_convertvector(o[0][q], VD);
	} else {
		VD r = GV_(radius)(GV_(unit53)(w[0], w[1], true)), c, s;
		GV_(cossin2pi)(GV_(unit53)(w[2], w[3], false), &c, &s);
		v[0] = r * c;
		v[1] = r * s;
	}
}

/* Element i's value alone, any i (lanes of arbitrary indices): its counter
 * and slot from i, every slot of that counter, the one it needs picked. */
GV_INLINE GV_TGT VD GV_(pick_slot)(bool single, VU i, const VD v[4])
{
	VU q = single ? (i >> 3) & SPLATU(3) : (i >> 3) & SPLATU(1);
	VD r = v[0];
	for (int k = 1; k < (single ? 4 : 2); k++)
		r = (VD)GV_(pick)((VU)(q == SPLATU((uint64_t)k)), (VU)v[k], (VU)r);
	return r;
}

GV_INLINE GV_TGT VU GV_(counter)(bool single, VU i)
{
	VU g = single ? i >> 5 : i >> 4;
	return (g << 3) | (i & SPLATU(7));
}

/* Lanes of v to elements [e, min(e + lanes, n)) of dst; nt: a whole
 * vector at an address aligned to its size goes by a store that bypasses
 * the caches (GV_NTF, GV_NTD where the build has them; the caller fences). */
GV_INLINE GV_TGT void GV_(store)(void *dst, bool single, int64_t e, int64_t n, VD v, bool nt)
{
	int64_t k = n - e < GV_L ? n - e : GV_L;
	char *d = (char *)dst + (size_t)e * (single ? 4 : 8);
	if (single) {
		VF f = __builtin_convertvector(v, VF);
#ifdef GV_NTF
		if (nt && k == GV_L && !((uintptr_t)d & (sizeof f - 1))) {
			GV_NTF(d, f);
			return;
		}
#endif
		if (k == GV_L)
			memcpy(d, &f, sizeof f);
		else
			memcpy(d, &f, (size_t)k * 4);
		return;
	}
#ifdef GV_NTD
	if (nt && k == GV_L && !((uintptr_t)d & (sizeof v - 1))) {
		GV_NTD(d, v);
		return;
	}
#endif
	(void)nt;
	if (k == GV_L)
		memcpy(d, &v, sizeof v);
	else
		memcpy(d, &v, (size_t)k * 8);
}

/* A whole vector of f32 lanes to d, as store */
GV_INLINE GV_TGT void GV_(storef)(float *d, VF f, bool nt)
{
#ifdef GV_NTF
	if (nt && !((uintptr_t)d & (sizeof f - 1))) {
		GV_NTF(d, f);
		return;
	}
#endif
	(void)nt;
	memcpy(d, &f, sizeof f);
}

/* The flat indices of a vector's lanes at i0 (i0, i0 + st, ...), and in
 * *step what takes them to the next vector's. */
GV_INLINE GV_TGT VU GV_(lanes)(int64_t i0, int64_t st, VU *step)
{
	VU lane;
	for (int l = 0; l < GV_L; l++)
		lane[l] = (uint64_t)l * (uint64_t)st;
	*step = SPLATU((uint64_t)GV_L * (uint64_t)st);
	return SPLATU((uint64_t)i0) + lane;
}

/* K = GV_U * GV_L counters from c (a multiple of 8): their groups'
 * elements, K * per of them (per: 4 for f32, 2 for f64), to out in
 * element order. */
GV_INLINE GV_TGT void GV_(rand_block)(const struct tir_gen *g, bool single, uint64_t c, void *out, bool nt)
{
	VU lane, ix[GV_U], w[GV_U][4];
	for (int l = 0; l < GV_L; l++)
		lane[l] = (uint64_t)l;
	for (int u = 0; u < GV_U; u++)
		ix[u] = SPLATU(c + (uint64_t)(u * GV_L)) + lane;
	GV_(philox)(ix, g->k0, g->k1, w);
	int per = single ? 4 : 2;
	if (g->op == TIR_OP_RAND && single) {
		/* unit24 in f32, two slots' words a vector (the same exact
		 * values: k 2^-24, k < 2^24) */
		for (int u = 0; u < GV_U; u++) {
			int grp = u * GV_L / 8, at = u * GV_L % 8;
			for (int q = 0; q < 4; q += 2) {
				WF f = GV_(unit24f)(GV_(pack)(w[u][q], w[u][q + 1]), false);
				VF h[2];
				memcpy(h, &f, sizeof f);
				GV_(storef)((float *)out + grp * 32 + q * 8 + at, h[0], nt);
				GV_(storef)((float *)out + grp * 32 + (q + 1) * 8 + at, h[1], nt);
			}
		}
		return;
	}
	if (g->op == TIR_OP_RANDN && single) {
		VF o[GV_U][4];
		GV_(normf)(w, o, GV_U);
		for (int u = 0; u < GV_U; u++) {
			int grp = u * GV_L / 8, at = u * GV_L % 8;
			for (int q = 0; q < 4; q++)
				GV_(storef)((float *)out + grp * 32 + q * 8 + at, o[u][q], nt);
		}
		return;
	}
	/* randn f64: the radii and angles of all the block's pairs, GV_NX
	 * vectors at a time (slots' values, side by side) */
	VD rad[GV_U], cs[GV_U], sn[GV_U];
	if (g->op == TIR_OP_RANDN) {
		VD u1[GV_U], u2[GV_U];
		for (int u = 0; u < GV_U; u++) {
			u1[u] = GV_(unit53)(w[u][0], w[u][1], true);
			u2[u] = GV_(unit53)(w[u][2], w[u][3], false);
		}
		_Pragma("GCC unroll 2") for (int j = 0; j < GV_U; j += GV_NX) {
			GV_(ln_n)(u1 + j, rad + j, GV_NX);
			_Pragma("GCC unroll 4") for (int k = j; k < j + GV_NX; k++)
				rad[k] = GV_SQRT(-2.0 * rad[k]);
			GV_(cossin2pi_n)(u2 + j, cs + j, sn + j, GV_NX);
		}
	}
	for (int u = 0; u < GV_U; u++) {
		VD v[4];
		if (g->op != TIR_OP_RANDN)
			GV_(slots)(false, single, w[u], v);
		else {
			v[0] = rad[u] * cs[u];
			v[1] = rad[u] * sn[u];
		}
		/* the group of vector u, and its place in the group */
		int grp = u * GV_L / 8, at = u * GV_L % 8;
		for (int q = 0; q < per; q++)
			GV_(store)(out, single, grp * 8 * per + q * 8 + at, 1 << 30, v[q], nt);
	}
}

/* rand and randn of flat elements i0 + e * st, e < n. */
static GV_TGT void GV_(rand)(const struct tir_gen *g, void *dst, int64_t i0, int64_t st, int64_t n, bool nt)
{
	bool single = g->dt == TIR_DTYPE_F32;
	size_t es = single ? 4 : 8;
	if (st == 1 && n > 0) {
		/* whole blocks of K counters, each giving K * per elements in
		 * order; a block the run covers in part goes through buf */
		const int64_t per = single ? 4 : 2, kc = GV_U * GV_L, kel = kc * per;
		_Alignas(64) char buf[GV_U * GV_L * 4 * 4];
		int64_t b0 = i0 / kel * kel;
		for (int64_t b = b0; b < i0 + n; b += kel) {
			uint64_t c = (uint64_t)(b / per);
			if (b >= i0 && b + kel <= i0 + n) {
				GV_(rand_block)(g, single, c, (char *)dst + (size_t)(b - i0) * es, nt);
				continue;
			}
			GV_(rand_block)(g, single, c, buf, false);
			int64_t lo = b > i0 ? b : i0, hi = b + kel < i0 + n ? b + kel : i0 + n;
			memcpy((char *)dst + (size_t)(lo - i0) * es, buf + (size_t)(lo - b) * es,
			       (size_t)(hi - lo) * es);
		}
		return;
	}
	/* any other run: each lane its own counter, the slot it needs picked */
	VU step, idx = GV_(lanes)(i0, st, &step);
	for (int64_t e = 0; e < n; e += GV_U * GV_L) {
		VU ix[GV_U], cx[GV_U], w[GV_U][4];
		for (int u = 0; u < GV_U; u++, idx += step) {
			ix[u] = idx;
			cx[u] = GV_(counter)(single, idx);
		}
		GV_(philox)(cx, g->k0, g->k1, w);
		for (int u = 0; u < GV_U && e + u * GV_L < n; u++) {
			VD v[4];
			GV_(slots)(g->op == TIR_OP_RANDN, single, w[u], v);
			GV_(store)(dst, single, e + u * GV_L, n, GV_(pick_slot)(single, ix[u], v), false);
		}
	}
}

/* A whole vector of twice the lanes (WF) to d, as storef: its halves */
GV_INLINE GV_TGT void GV_(storew)(float *d, WF w, bool nt)
{
	VF h[2];
	memcpy(h, &w, sizeof w);
	GV_(storef)(d, h[0], nt);
	GV_(storef)(d + GV_L, h[1], nt);
}

/* arange and linspace of f32 over elements [i0, i0 + n), contiguous, in
 * whole vectors from the first: the same values as run's lanes (below),
 * with less work per element.  arange of integer start and step whose
 * values all lie in int32 (arange_ints) in 32-bit lanes: a + i b is an
 * exact integer in f64 too, rounded to f32 once there, once here by the
 * conversion from int32 (to nearest even, both).  linspace in f64 as
 * run's lanes, i as a double counted up (exact below 2^53), its choice of
 * formula made once, the endpoint left to run.  Returns the elements
 * done (0: none, run does them all). */
static GV_TGT int64_t GV_(ramp_f32)(const struct tir_gen *g, float *dst, int64_t i0, int64_t n, bool nt)
{
	int64_t e = 0;
	if (g->op == TIR_OP_ARANGE) {
		int32_t a, b;
		if (!arange_ints(g, i0, n, &a, &b))
			return 0;
		/* uint32 lanes: those past n may wrap, and are not stored */
		WU v, step = SPLATW((uint32_t)b * (uint32_t)(2 * GV_L));
		for (int l = 0; l < 2 * GV_L; l++)
			v[l] = (uint32_t)a + (uint32_t)b * (uint32_t)(i0 + l);
		for (; e + 2 * GV_L <= n; e += 2 * GV_L, v += step)
			GV_(storew)(dst + e, __builtin_convertvector((WS)v, WF), nt);
		return e;
	}
	/* linspace: up to its last element when that is stop (run's select) */
	int64_t end = g->endpoint && i0 + n > g->n - 1 ? g->n - 1 - i0 : n;
	if (i0 + n >= ((int64_t)1 << 53))
		return 0;
	VD x;
	for (int l = 0; l < GV_L; l++)
		x[l] = (double)(i0 + l);
	if (g->b == 0) {
		for (; e + GV_L <= end; e += GV_L, x += (double)GV_L)
			GV_(storef)(dst + e, __builtin_convertvector(x / g->d * g->c + g->a, VF), nt);
	} else {
		for (; e + GV_L <= end; e += GV_L, x += (double)GV_L)
			GV_(storef)(dst + e, __builtin_convertvector(x * g->b + g->a, VF), nt);
	}
	return e;
}

/* The generator's values of flat elements i0 + e * st, e < n, to dst (of
 * g->dt).  Lanes past n are computed and not stored. */
static GV_TGT void GV_(run)(const struct tir_gen *g, void *dst, int64_t i0, int64_t st, int64_t n, bool nt)
{
	bool single = g->dt == TIR_DTYPE_F32;
	if (g->op == TIR_OP_EYE) {
		gen_eye(dst, single, i0, st, n, g->n);
		return;
	}
	if (g->op == TIR_OP_RAND || g->op == TIR_OP_RANDN) {
		GV_(rand)(g, dst, i0, st, n, nt);
		return;
	}
	int64_t e0 = 0;
	if (single && st == 1 && (g->op == TIR_OP_ARANGE || g->op == TIR_OP_LINSPACE))
		e0 = GV_(ramp_f32)(g, dst, i0, n, nt);
	VU step, idx = GV_(lanes)(i0 + e0, st, &step);
	for (int64_t e = e0; e < n; e += GV_L, idx += step) {
		VD v;
		switch (g->op) {
		case TIR_OP_ARANGE:
			v = g->a + GV_(u2d)(idx) * g->b;
			break;
		case TIR_OP_LINSPACE: {
			VD x = GV_(u2d)(idx);
			v = (g->b == 0 ? x / g->d * g->c : x * g->b) + g->a;
			VS last = (VS)(idx == SPLATU((uint64_t)g->n - 1));
			if (g->endpoint)
				v = (VD)(((VU)last & (VU)SPLATD(g->e)) | (~(VU)last & (VU)v));
			break;
		}
		default: /* fills */
			v = SPLATD(g->a);
			break;
		}
		GV_(store)(dst, single, e, n, v, nt && st == 1);
	}
}

#undef VU
#undef VS
#undef VD
#undef VF
#undef SPLATU
#undef SPLATD
#undef WU
#undef WS
#undef WF
#undef SPLATW
#undef SPLATF
#undef GV_L
#undef GV_U
