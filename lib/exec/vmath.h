/*
 * vmath.h — lib/exec internals: the per-element functions of the float
 * elementwise ops over contiguous arrays, vectorized with SLEEF and chosen
 * once per process for the CPU (AVX-512, AVX2, SSE2, or portable C).
 *
 * The reference kernels (elementwise.c) and the fused evaluator both compute
 * through these, so a value is bitwise the same fused or not, and one
 * process uses one path, so it never depends on the thread count.  An
 * element's result depends only on its input, never on n or alignment.
 * The exact ops (+ - * / sqrt floor ceil round relu sign neg abs recip
 * maximum minimum mod) give the same bits on every path; the
 * transcendentals use SLEEF's fastest u10 builds per path (with FMA on
 * AVX-512 and AVX2) and may differ between paths within their error.
 *
 * Accuracy (ULP of the result against libm in higher precision, the bound
 * test_vmath checks, on every path): exp log sin cos erf pow 1.0 (SLEEF
 * u10; f32 exp is SLEEF's algorithm inline, 0.99 over every float);
 * rsqrt 1.5; f32 tanh 1.1 (x + x^3 P(x^2) below 0.75, else
 * 1 - 2 / (exp(2|x|) + 1); 1.06 over every float), f64 tanh 3 (from
 * expm1); sigmoid 3 (f32: 2.4 over every float); silu 3.5;
 * gelu 4 down to x = -1 and 4 x^2 below (its erfc magnifies the rounding
 * of -x/sqrt 2); everything else exact.  Results near the subnormal range
 * may be off by a few subnormal steps.  f64 exp gives inf from
 * x = 709.7827111495576 on, a little before log(DBL_MAX) (SLEEF).
 *
 * A NaN result is a quiet NaN; its sign and payload are whatever the
 * vector unit and SLEEF make of the inputs (the same on every run on one
 * machine), not a fixed one: keeping one default NaN would cost time on
 * every fused chain, and printing shows every NaN as nan.  Of two NaN
 * operands, + and * give the first's on every path (tir_vm_addf below).
 *
 * Not here: strided operands (callers gather them into a block first),
 * integer or bool dtypes, comparisons.
 */
#ifndef TIR_EXEC_VMATH_H
#define TIR_EXEC_VMATH_H

#include "exec.h"

/* A good block length (elements) for callers that gather strided operands:
 * a few such blocks of doubles stay in L1.  Fixed, unlike the block sizes
 * machine.c derives: it sizes arrays on the stack, and 4 KiB blocks stay
 * in any L1d. */
#define TIR_VMATH_BLOCK 512

/* a + b and a * b of one float or double with a as the instruction's
 * first source.  Of two NaN operands x86 returns the first source's (its
 * sign and payload), and + and * commute for the compiler, which picks
 * the order per loop and per optimization level (GCC at -O1 with ASan
 * gave the two loops of one function opposite orders).  So every +
 * and * of user values, in any path or in a caller's own one-element
 * step (vm.c's), is one of these or vmath.c's per-path vector ones: a
 * NaN's bits never depend on where an element falls.  Elsewhere: plain C. */
#if defined(__x86_64__) && defined(__GNUC__)
#define TIR_VM_PIN1(NAME, T, INS, OP)                                         \
	static inline T NAME(T a, T b)                                       \
	{                                                                    \
		__asm__(INS " %1, %0" : "+x"(a) : "x"(b));                   \
		return a;                                                    \
	}
#else
#define TIR_VM_PIN1(NAME, T, INS, OP)                                         \
	static inline T NAME(T a, T b) { return a OP b; }
#endif
TIR_VM_PIN1(tir_vm_addf, float, "addss", +)
TIR_VM_PIN1(tir_vm_adds, double, "addsd", +)
TIR_VM_PIN1(tir_vm_mulf, float, "mulss", *)
TIR_VM_PIN1(tir_vm_muls, double, "mulsd", *)

/* Whether op is a float unary op these compute: ops.def's vec UNARY. */
bool tir_vmath_unary_op(enum tir_op op);
/* Whether op is a float binary op these compute: vec BINARY or BINARY_SV. */
bool tir_vmath_binary_op(enum tir_op op);

/* dst[i] = op(src[i]) for i < n; dst may equal src (no other overlap).
 * op must satisfy tir_vmath_unary_op. */
void tir_vmath_f32(enum tir_op op, float *dst, const float *src, int64_t n);
void tir_vmath_f64(enum tir_op op, double *dst, const double *src, int64_t n);
/* dst[i] = op(a[i], b[i]) for i < n; dst may equal a or b (no other
 * overlap).  op must satisfy tir_vmath_binary_op. */
void tir_vmath2_f32(enum tir_op op, float *dst, const float *a, const float *b, int64_t n);
void tir_vmath2_f64(enum tir_op op, double *dst, const double *a, const double *b, int64_t n);

/* One op over n contiguous elements (dst may equal an operand), as
 * tir_vmath_f32 ... compute it, without the dispatch: for callers that
 * run one op on many blocks (the fused kernels look it up once). */
typedef void (*tir_vmath1_fn)(void *dst, const void *src, int64_t n);
typedef void (*tir_vmath2_fn)(void *dst, const void *a, const void *b, int64_t n);
/* The function of the path in use for op on dt (F32 or F64), or NULL
 * when op is not a vmath op or dt not a float dtype. */
tir_vmath1_fn tir_vmath_unary_fn(enum tir_op op, enum tir_dtype dt);
tir_vmath2_fn tir_vmath_binary_fn(enum tir_op op, enum tir_dtype dt);
/* As tir_vmath_binary_fn's, with operand k (0: a, 1: b) one value, used
 * for every element: op(a[0], b[i]) or op(a[i], b[0]), each result bitwise
 * what the array function gives for an array of copies (broadcast scalars
 * and per-row values need no spreading).  NULL when not provided (ops.def's
 * vec BINARY_SV ops have them). */
tir_vmath2_fn tir_vmath_binary_scalar_fn(enum tir_op op, enum tir_dtype dt, int k);
/* The C operator ('+', '-', '*' or '/') each lane of op's binary
 * functions applies, on every path and dtype (the IEEE operation itself,
 * so one element done inline has the same bits), or 0. */
char tir_vmath_binary_arith(enum tir_op op);

/* softmax's middle pass over a row: dst[i] = exp(src[i] - m) (each
 * element exactly as tir_vmath_f32(EXP) of the rounded difference), and
 * returns their sum in double: 8 lanes, lane k adding elements k, k + 8,
 * ... in order, the last n % 8 added to lane 0, then
 * ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).  0 for n = 0.
 * dst may equal src. */
double tir_vmath_expsum_f32(float *dst, const float *src, float m, int64_t n);
double tir_vmath_expsum_f64(double *dst, const double *src, double m, int64_t n);

/* layernorm's moments over a row: *s1 = sum of d = x[i] - c, *s2 = sum of
 * d^2, in double with 16 lanes (lane k adds elements k, k + 16, ... in
 * order, then an 8-step, the last n % 8 in lane 0; lanes k and k + 8 fold,
 * then ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))); d^2 is added
 * with one rounding (FMA) on the paths that have it.  0s for n = 0. */
void tir_vmath_moments_f32(const float *x, int64_t n, double c, double *s1, double *s2);
void tir_vmath_moments_f64(const double *x, int64_t n, double c, double *s1, double *s2);

/* layernorm's last pass over a row: o[i] = (T)(((double)x[i] - mean) * r)
 * * w[i] + b[i], or with b NULL (rmsnorm) (T)((double)x[i] * r) * w[i];
 * the float steps round twice.  On AVX-512 the double part is one FMA,
 * x * r - mean * r (a different double rounding: the float result is the
 * same but for values within ~2^-29 of a rounding boundary). */
void tir_vmath_norm_f32(float *o, const float *x, const float *w, const float *b, double mean,
			double r, int64_t n);
void tir_vmath_norm_f64(double *o, const double *x, const double *w, const double *b,
			double mean, double r, int64_t n);

/* The fused evaluator's per-block calls (elementwise.c): op over n
 * contiguous elements of dtype dt, exactly what tir_k_unary / tir_k_binary
 * compute for them (out's dtype as theirs: bool for NOT and comparisons),
 * without building tensors.  out may equal an operand.  0, or -code with
 * err set (integer division by zero, or an op the dtype does not have). */
int tir_k_unary_run(enum tir_op op, enum tir_dtype dt, void *out, const void *x, int64_t n,
		    struct tir_err *err);
int tir_k_binary_run(enum tir_op op, enum tir_dtype dt, void *out, const void *a,
		     const void *b, int64_t n, struct tir_err *err);

/* ---- the vector path ----
 * One per process, for every per-ISA build in lib/: these functions', and
 * reduce.c's, rows.c's and fusion/vm.c's own AVX-512 and AVX2 builds (on
 * SSE2 and scalar those run their generic builds; scalar also copies with
 * memcpy where the others stream).  Chosen on first use: the best the CPU
 * has, or, when the environment variable TIR_VMATH names a path
 * (scalar|sse2|avx2|avx512; "auto" or empty: the best), the best at or
 * below that one.  Here an unknown value counts as unset; the CLI refuses
 * it first (tir_vector_path_check). */
enum tir_vmath_path {
	TIR_VMATH_SCALAR,
	TIR_VMATH_SSE2,
	TIR_VMATH_AVX2,
	TIR_VMATH_AVX512,
	TIR_VMATH_PATH_COUNT
};
/* Whether this x86-64 CPU, and the OS saving its registers, offers a
 * feature: GNAME as glibc's <sys/platform/x86.h> names it, CNAME as
 * __builtin_cpu_supports does.  glibc answers from what its loader asked
 * the CPU at start (no cpuid here: in a virtual machine each one is a
 * trip to the hypervisor, and libgcc's answers come from a constructor
 * that asks a dozen of them at every start of tir, vectors used or not). */
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define TIR_CPU_HAS(gname, cname) CPU_FEATURE_ACTIVE(gname)
#endif
#endif
#ifndef TIR_CPU_HAS
#define TIR_CPU_HAS(gname, cname) __builtin_cpu_supports(cname)
#endif

/* The path in use; after the first call one load (callers pick a build
 * per call or per task with it, never per element). */
static inline enum tir_vmath_path tir_vmath_path(void);

/* Per-ISA builds of one text: TIR_ISA_BUILDS(DEF) expands DEF(SFX, TGT)
 * for each build, SFX naming it and TGT its target attribute: gen (no
 * attribute: the path scalar and sse2), a2 (AVX2: avx2) and a5 (AVX-512F:
 * avx512), the last two only where GCC targets x86-64.  A body inlined
 * into a build (always_inline) is compiled for its target too.
 * TIR_ISA_PICK(NAME) is the build NAME_SFX for the path in use. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TIR_ISA_X86 1
#define TIR_ISA_A2 __attribute__((target("avx2")))
#define TIR_ISA_A5 __attribute__((target("avx512f")))
#define TIR_ISA_BUILDS(DEF) DEF(gen, ) DEF(a2, TIR_ISA_A2) DEF(a5, TIR_ISA_A5)
#define TIR_ISA_PICK(NAME)                                                  \
	({                                                                   \
		enum tir_vmath_path p_ = tir_vmath_path();                   \
		p_ == TIR_VMATH_AVX512 ? NAME##_a5 : p_ == TIR_VMATH_AVX2 ? NAME##_a2 : NAME##_gen; \
	})
#else
#define TIR_ISA_X86 0
#define TIR_ISA_BUILDS(DEF) DEF(gen, )
#define TIR_ISA_PICK(NAME) NAME##_gen
#endif

/* ---- test hook: one named path, whatever was chosen ---- */
/* Whether this CPU (and OS) can run path p. */
bool tir_vmath_path_ok(enum tir_vmath_path p);
/* As tir_vmath_f32 ... through path p, which must satisfy tir_vmath_path_ok. */
void tir_vmath_f32_on(enum tir_vmath_path p, enum tir_op op, float *dst, const float *src,
		      int64_t n);
void tir_vmath_f64_on(enum tir_vmath_path p, enum tir_op op, double *dst, const double *src,
		      int64_t n);
void tir_vmath2_f32_on(enum tir_vmath_path p, enum tir_op op, float *dst, const float *a,
		       const float *b, int64_t n);
void tir_vmath2_f64_on(enum tir_vmath_path p, enum tir_op op, double *dst, const double *a,
		       const double *b, int64_t n);
double tir_vmath_expsum_f32_on(enum tir_vmath_path p, float *dst, const float *src, float m,
			       int64_t n);

/* gen.c's tir_gen_run through path p (which must satisfy tir_vmath_path_ok). */
struct tir_gen;
void tir_gen_run_on(enum tir_vmath_path p, const struct tir_gen *g, void *dst, int64_t i0, int64_t st,
		    int64_t n);

/* vmath.c's: the path chosen, -1 until the first tir_vmath_path */
extern int tir_vmath_chosen;
int tir_vmath_choose(void);

static inline enum tir_vmath_path tir_vmath_path(void)
{
	int p = __atomic_load_n(&tir_vmath_chosen, __ATOMIC_RELAXED);
	return (enum tir_vmath_path)(__builtin_expect(p < 0, 0) ? tir_vmath_choose() : p);
}

#endif
