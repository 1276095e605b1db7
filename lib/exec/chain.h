/*
 * chain.h — what every product kernel of tir's (gemm.c's packed and
 * direct kernels, gemv.c's few-row ones) shares, so that each output
 * element is ONE chain on a path whichever kernel made it: c = 0 (or c's
 * old value), then c = FMA(a, b, c) step by step in k order, FMA the
 * path's own instruction (AVX2, AVX-512) or GM_MULADD (SSE2, portable
 * C), in lanes that never mix.  The x86 target attributes, the vector
 * types, and the accumulator's load, step and store.
 */
#ifndef TIR_EXEC_CHAIN_H
#define TIR_EXEC_CHAIN_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GM_X86 1
#include <immintrin.h>
#define GM_A2 __attribute__((target("avx2,fma")))
#define GM_A5 __attribute__((target("avx512f")))
#else
#define GM_X86 0
#endif

typedef float gm_f1 __attribute__((vector_size(4)));
typedef double gm_d1 __attribute__((vector_size(8)));
typedef float gm_f4 __attribute__((vector_size(16)));
typedef double gm_d2 __attribute__((vector_size(16)));
#if GM_X86
typedef float gm_f8 __attribute__((vector_size(32)));
typedef double gm_d4 __attribute__((vector_size(32)));
typedef float gm_f16 __attribute__((vector_size(64)));
typedef double gm_d8 __attribute__((vector_size(64)));
#endif

/* c + a * b rounded twice (never contracted: -std=c11 keeps
 * fp-contract off), or as one FMA by the path's own instruction (an
 * intrinsic, so no optimization level or pragma decides it) */
#define GM_MULADD(a, b, c) ((c) + (a) * (b))

/* Inside a kernel over elements of T in vectors VF: VU_, VF's unaligned
 * view of T, and L_, VF's lanes. */
#define GM_CHAIN_TYPES(T, VF)                                                      \
	typedef T VU_ __attribute__((vector_size(sizeof(VF)), aligned(sizeof(T)), may_alias)); \
	enum { L_ = sizeof(VF) / sizeof(T) }

/* acc[R][NV] = c's R rows of NV vectors (row stride ldc), or zeros */
#define GM_ACC_LOAD(VF, R, NV, acc, c, ldc, load)                                  \
	_Pragma("GCC unroll 16") for (int i_ = 0; i_ < (R); i_++)                  \
		_Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++)          \
			acc[i_][v_] = (load) ? (VF)*(const VU_ *)((c) + i_ * (ldc) + v_ * L_) \
					     : (VF){ 0 }

/* One step of every chain: row i_'s a (AI, an expression of i_) times
 * the step's NV vectors of b, added by FMA */
#define GM_ACC_STEP(VF, R, NV, FMA, acc, b, AI)                                    \
	_Pragma("GCC unroll 16") for (int i_ = 0; i_ < (R); i_++) {                \
		VF s_ = (AI) - (VF){ 0 }; /* splat, exact */                        \
		_Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++)          \
			acc[i_][v_] = FMA(s_, b[v_], acc[i_][v_]);                 \
	}

/* c's R rows of NV vectors = acc */
#define GM_ACC_STORE(R, NV, acc, c, ldc)                                           \
	_Pragma("GCC unroll 16") for (int i_ = 0; i_ < (R); i_++)                  \
		_Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++)          \
			*(VU_ *)((c) + i_ * (ldc) + v_ * L_) = acc[i_][v_]

#endif
