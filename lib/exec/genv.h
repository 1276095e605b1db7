/*
 * genv.h — the body of gen.c's generators, included by gen.c once per
 * build with GV_SFX (the build's name), GV_TGT (its target attribute),
 * GV_VB (vector bytes: 8 is one lane, the scalar path) and GV_MUL (a
 * 32 x 32 -> 64-bit multiply of each lane's low halves).  Every build
 * runs the same IEEE operations in the same order on each lane (gen.c
 * turns contraction off), so every build gives the same bits.
 */
#define GV_CAT_(a, b) a##b
#define GV_CAT(a, b) GV_CAT_(a, b)
#define GV_(name) GV_CAT(name##_, GV_SFX)
#define GV_L (GV_VB / 8)

typedef uint64_t GV_(vu) __attribute__((vector_size(GV_VB), aligned(8)));
typedef int64_t GV_(vs) __attribute__((vector_size(GV_VB), aligned(8)));
typedef double GV_(vd) __attribute__((vector_size(GV_VB), aligned(8)));
typedef float GV_(vf) __attribute__((vector_size(GV_VB / 2), aligned(4)));

#define VU GV_(vu)
#define VS GV_(vs)
#define VD GV_(vd)
#define VF GV_(vf)
#define SPLATU(c) ((VU){0} + (uint64_t)(c))
#define SPLATD(c) ((VD){0} + (double)(c))

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
 * its multiplies): the four words of each, in the low halves of the lanes. */
#define GV_U 4
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
 * to s^21; e ln 2 in two parts (e ln2_hi exact).  See gen.c for the bound. */
GV_INLINE GV_TGT VD GV_(ln)(VD u)
{
	VU b = (VU)u;
	VU e = (b >> 52) - SPLATU(1023);
	VD m = (VD)((b & SPLATU(0x000fffffffffffffu)) | SPLATU(0x3ff0000000000000u));
	VS big = (VS)(m > 1.4142135623730951);
	m = (VD)(((VU)big & (VU)(m * 0.5)) | (~(VU)big & (VU)m));
	e = e + ((VU)big & SPLATU(1));
	/* e as a double: the bits of 1.5 * 2^52 plus e are those of 1.5 * 2^52 + e */
	VD ed = (VD)(e + SPLATU(0x4338000000000000u)) - 0x1.8p52;
	VD f = m - 1.0, s = f / (m + 1.0), z = s * s;
	VD p = SPLATD(2.0 / 21.0);
	p = p * z + 2.0 / 19.0;
	p = p * z + 2.0 / 17.0;
	p = p * z + 2.0 / 15.0;
	p = p * z + 2.0 / 13.0;
	p = p * z + 2.0 / 11.0;
	p = p * z + 2.0 / 9.0;
	p = p * z + 2.0 / 7.0;
	p = p * z + 2.0 / 5.0;
	p = p * z + 2.0 / 3.0;
	VD lo = ed * 0x1.ef35793c76730p-45 + s * (z * p);
	return ed * 0x1.62e42fefa3800p-1 + (lo + 2.0 * s);
}

/* cos(2 pi u) for u in [0, 1) a multiple of 2^-53 or coarser: u = n/4 + r
 * exactly (n = round(4u), |r| <= 1/8), cos(n pi/2 + 2 pi r) by quadrant
 * from Taylor polynomials of cos(2 pi r) (to r^16) and sin(2 pi r) (to
 * r^17) in r. */
GV_INLINE GV_TGT VD GV_(cos2pi)(VD u)
{
	VD t = u * 4.0;
	VD nd = (t + 0x1.8p52) - 0x1.8p52;
	VU q = (VU)(nd + 0x1.8p52) & SPLATU(3);
	VD r = (t - nd) * 0.25, z = r * r;
	VD c = SPLATD(0x1.20c62c2f2d7f5p-2);          /* (2pi)^16 / 16! */
	c = c * z - 0x1.b6e24f44b128fp+0;      /* (2pi)^14 / 14! */
	c = c * z + 0x1.f9d38a3763cc3p+2;      /* (2pi)^12 / 12! */
	c = c * z - 0x1.a6d1f2a204a8cp+4;      /* (2pi)^10 / 10! */
	c = c * z + 0x1.e1f506891babbp+5;      /* (2pi)^8 / 8! */
	c = c * z - 0x1.55d3c7e3cbffap+6;      /* (2pi)^6 / 6! */
	c = c * z + 0x1.03c1f081b5ac4p+6;      /* (2pi)^4 / 4! */
	c = c * z - 0x1.3bd3cc9be45dep+4;      /* (2pi)^2 / 2! */
	c = c * z + 1.0;
	VD s = SPLATD(0x1.aaec32af93359p-4);          /* (2pi)^17 / 17! */
	s = s * z - 0x1.6fadb9f155744p-1;      /* (2pi)^15 / 15! */
	s = s * z + 0x1.e8f434d018d63p+1;      /* (2pi)^13 / 13! */
	s = s * z - 0x1.e3074fde8871fp+3;      /* (2pi)^11 / 11! */
	s = s * z + 0x1.50783487ee782p+5;      /* (2pi)^9 / 9! */
	s = s * z - 0x1.32d2cce62bd86p+6;      /* (2pi)^7 / 7! */
	s = s * z + 0x1.466bc6775aae2p+6;      /* (2pi)^5 / 5! */
	s = s * z - 0x1.4abbce625be53p+5;      /* (2pi)^3 / 3! */
	s = s * z + 0x1.921fb54442d18p+2;      /* 2pi */
	s = s * r;
	VS odd = (VS)((q & SPLATU(1)) != SPLATU(0));
	VS neg = (VS)((q == SPLATU(1)) | (q == SPLATU(2)));
	VD v = (VD)(((VU)odd & (VU)s) | (~(VU)odd & (VU)c));
	return (VD)((VU)v ^ ((VU)neg & SPLATU(0x8000000000000000u)));
}

/* Lanes of v to elements [e, min(e + lanes, n)) of dst. */
GV_INLINE GV_TGT void GV_(store)(void *dst, bool single, int64_t e, int64_t n, VD v)
{
	int64_t k = n - e < GV_L ? n - e : GV_L;
	char *d = (char *)dst + (size_t)e * (single ? 4 : 8);
	if (single) {
		VF f = __builtin_convertvector(v, VF);
		if (k == GV_L)
			memcpy(d, &f, sizeof f);
		else
			memcpy(d, &f, (size_t)k * 4);
	} else if (k == GV_L) {
		memcpy(d, &v, sizeof v);
	} else {
		memcpy(d, &v, (size_t)k * 8);
	}
}

/* The generator's values of flat elements i0 + e * st, e < n, to dst (of
 * g->dt).  Lanes past n are computed and not stored. */
static GV_TGT void GV_(run)(const struct tir_gen *g, void *dst, int64_t i0, int64_t st, int64_t n)
{
	bool single = g->dt == TIR_DTYPE_F32;
	if (g->op == TIR_OP_EYE) {
		gen_eye(dst, single, i0, st, n, g->n);
		return;
	}
	VU lane;
	for (int l = 0; l < GV_L; l++)
		lane[l] = (uint64_t)l * (uint64_t)st;
	const VU step = SPLATU((uint64_t)GV_L * (uint64_t)st);
	VU idx = SPLATU((uint64_t)i0) + lane;
	if (g->op == TIR_OP_RAND || g->op == TIR_OP_RANDN) {
		for (int64_t e = 0; e < n; e += GV_U * GV_L) {
			VU ix[GV_U], w[GV_U][4];
			for (int u = 0; u < GV_U; u++, idx += step)
				ix[u] = idx;
			GV_(philox)(ix, g->k0, g->k1, w);
			for (int u = 0; u < GV_U && e + u * GV_L < n; u++) {
				VD v;
				if (g->op == TIR_OP_RAND) {
					v = single ? GV_(u2d)(w[u][0] >> 8) * 0x1p-24
						   : GV_(u53d)(((w[u][0] << 32) | w[u][1]) >> 11) * 0x1p-53;
				} else {
					VD u1, u2;
					if (single) {
						u1 = GV_(u2d)((w[u][0] >> 8) + SPLATU(1)) * 0x1p-24;
						u2 = GV_(u2d)(w[u][2] >> 8) * 0x1p-24;
					} else {
						u1 = GV_(u53d)((((w[u][0] << 32) | w[u][1]) >> 11) + SPLATU(1)) * 0x1p-53;
						u2 = GV_(u53d)(((w[u][2] << 32) | w[u][3]) >> 11) * 0x1p-53;
					}
					v = GV_SQRT(-2.0 * GV_(ln)(u1)) * GV_(cos2pi)(u2);
				}
				GV_(store)(dst, single, e + u * GV_L, n, v);
			}
		}
		return;
	}
	for (int64_t e = 0; e < n; e += GV_L, idx += step) {
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
		GV_(store)(dst, single, e, n, v);
	}
}

#undef VU
#undef VS
#undef VD
#undef VF
#undef SPLATU
#undef SPLATD
#undef GV_L
#undef GV_U
