/*
 * elementwise.c — the reference elementwise kernels (unary, binary, where,
 * clip) and the simple creation kernels (fill, arange, eye); a float op over
 * one long contiguous run is cut into tasks on the pool (split_run).  Semantics are
 * NumPy's (docs/language.md, "Types"); integer arithmetic wraps without undefined
 * behaviour.  The float math itself is vmath.c's (shared with the fused
 * kernels).  Not here: reductions, rand (rng.c), fused paths.
 */
#include "exec.h"
#include "iter.h"
#include "vmath.h"

#include <math.h>
#include <string.h>

/* GCC's -O2 cost model ("very cheap") vectorizes no loop that needs a
 * remainder or an alias check, i.e. none of these; ask for "cheap". */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif

/* Results of an inner run besides 0 (done). */
#define RUN_UNSUPPORTED (-1)
#define RUN_DIV_ZERO 1
#define RUN_NEG_POW 2

/* ---- scalar helpers: one per rule that is not a single C operator ---- */

/* NumPy's maximum/minimum: NaN in either wins; a tie gives b (as maxps). */
static inline double k_max(double a, double b) { return isnan(a) ? a : (a > b ? a : b); }
static inline float k_maxf(float a, float b) { return isnan(a) ? a : (a > b ? a : b); }
static inline double k_min(double a, double b) { return isnan(a) ? a : (a < b ? a : b); }
static inline float k_minf(float a, float b) { return isnan(a) ? a : (a < b ? a : b); }

/* NumPy's floor_divide of floats (npy_divmod): from fmod, so that it agrees
 * with mod (a == b * (a // b) + a % b as nearly as rounding allows);
 * b == 0 gives a / b (inf or nan). */
#define FLOAT_FLOORDIV(S, T, FMOD, FLOOR, COPYSIGN)                          \
	static inline T k_floordiv_##S(T a, T b)                             \
	{                                                                    \
		if (b == 0)                                                  \
			return a / b;                                        \
		T mod = FMOD(a, b), div = (a - mod) / b;                     \
		if (mod != 0 && (b < 0) != (mod < 0))                        \
			div -= 1;                                            \
		if (div == 0)                                                \
			return COPYSIGN((T)0, a / b);                        \
		T fd = FLOOR(div);                                           \
		return div - fd > (T)0.5 ? fd + 1 : fd;                      \
	}
FLOAT_FLOORDIV(f32, float, fmodf, floorf, copysignf)
FLOAT_FLOORDIV(f64, double, fmod, floor, copysign)

/* Integer floor division, modulo with the divisor's sign, and power, for
 * T with unsigned twin U.  The caller has flagged b == 0 (and b < 0 for
 * pow); these return 0 then.  INT_MIN / -1 wraps to INT_MIN as in NumPy. */
#define INT_HELPERS(SUF, T, U)                                               \
	static inline T k_idiv##SUF(T a, T b)                                \
	{                                                                    \
		if (b == 0)                                                  \
			return 0;                                            \
		if (b == -1)                                                 \
			return (T)(0 - (U)a);                                \
		T q = a / b;                                                 \
		if (a % b != 0 && ((a < 0) != (b < 0)))                      \
			q--;                                                 \
		return q;                                                    \
	}                                                                    \
	static inline T k_imod##SUF(T a, T b)                                \
	{                                                                    \
		if (b == 0 || b == -1)                                       \
			return 0;                                            \
		T r = a % b;                                                 \
		if (r != 0 && ((r < 0) != (b < 0)))                          \
			r += b;                                              \
		return r;                                                    \
	}                                                                    \
	static inline T k_ipow##SUF(T a, T b)                                \
	{                                                                    \
		U r = 1, x = (U)a;                                           \
		if (b < 0)                                                   \
			return 0;                                            \
		while (b) {                                                  \
			if (b & 1)                                           \
				r *= x;                                      \
			x *= x;                                              \
			b >>= 1;                                             \
		}                                                            \
		return (T)r;                                                 \
	}

INT_HELPERS(32, int32_t, uint32_t)
INT_HELPERS(64, int64_t, uint64_t)

/* ---- inner runs ----
 * A run is n elements; out is contiguous (step 1), inputs step by sx, sa,
 * sb...  The stride-1 and stride-0 cases are spelled out so the compiler
 * can vectorize them. */

#define RUN1(TO, TI, EXPR)                                                   \
	do {                                                                 \
		TO *o_ = o;                                                  \
		const TI *x_ = px;                                           \
		if (sx == 1)                                                 \
			for (int64_t i = 0; i < n; i++) {                    \
				TI v = x_[i];                                \
				o_[i] = (EXPR);                              \
			}                                                    \
		else                                                         \
			for (int64_t i = 0; i < n; i++) {                    \
				TI v = x_[i * sx];                           \
				o_[i] = (EXPR);                              \
			}                                                    \
	} while (0)

#define RUN2(TO, TI, EXPR)                                                   \
	do {                                                                 \
		TO *o_ = o;                                                  \
		const TI *a_ = pa, *b_ = pb;                                 \
		if (sa == 1 && sb == 1) {                                    \
			for (int64_t i = 0; i < n; i++) {                    \
				TI a = a_[i], b = b_[i];                     \
				o_[i] = (EXPR);                              \
			}                                                    \
		} else if (sa == 1 && sb == 0) {                             \
			TI b = b_[0];                                        \
			for (int64_t i = 0; i < n; i++) {                    \
				TI a = a_[i];                                \
				o_[i] = (EXPR);                              \
			}                                                    \
		} else if (sa == 0 && sb == 1) {                             \
			TI a = a_[0];                                        \
			for (int64_t i = 0; i < n; i++) {                    \
				TI b = b_[i];                                \
				o_[i] = (EXPR);                              \
			}                                                    \
		} else {                                                     \
			for (int64_t i = 0; i < n; i++) {                    \
				TI a = a_[i * sa], b = b_[i * sb];           \
				o_[i] = (EXPR);                              \
			}                                                    \
		}                                                            \
	} while (0)

/* (the cases a fused kernel's blocks give: contiguous operands, and one
 * value for where's fill or clip's bounds, as loops GCC vectorizes) */
#define RUN3_LOOP(TO, TC, TI, EXPR, IC, IA, IB)                              \
	for (int64_t i = 0; i < n; i++) {                                    \
		TC c = c_[IC];                                               \
		TI a = a_[IA], b = b_[IB];                                   \
		o_[i] = (EXPR);                                              \
	}

#define RUN3(TO, TC, TI, EXPR)                                               \
	do {                                                                 \
		TO *o_ = o;                                                  \
		const TC *c_ = pc;                                           \
		const TI *a_ = pa, *b_ = pb;                                 \
		if (sc == 1 && sa == 1 && sb == 1)                           \
			RUN3_LOOP(TO, TC, TI, EXPR, i, i, i)                 \
		else if (sc == 1 && sa == 1 && sb == 0)                      \
			RUN3_LOOP(TO, TC, TI, EXPR, i, i, 0)                 \
		else if (sc == 1 && sa == 0 && sb == 1)                      \
			RUN3_LOOP(TO, TC, TI, EXPR, i, 0, i)                 \
		else if (sc == 1 && sa == 0 && sb == 0)                      \
			RUN3_LOOP(TO, TC, TI, EXPR, i, 0, 0)                 \
		else                                                         \
			RUN3_LOOP(TO, TC, TI, EXPR, i * sc, i * sa, i * sb)  \
	} while (0)

#define UNARY_ARGS void *o, const void *px, int64_t sx, int64_t n
#define BINARY_ARGS void *o, const void *pa, int64_t sa, const void *pb, int64_t sb, int64_t n

/* ---- unary ---- */

/* Float unary ops go through vmath (the same per-element functions as a
 * fused kernel); a strided run is gathered into out a block at a time and
 * computed there in place (out is contiguous). */
#define UNARY_FLOAT(NAME, T, S)                                              \
	static int NAME(enum tir_op op, UNARY_ARGS)                          \
	{                                                                    \
		T *o_ = o;                                                   \
		const T *x_ = px;                                            \
		if (!tir_vmath_unary_op(op))                                 \
			return RUN_UNSUPPORTED;                              \
		if (sx == 1) {                                               \
			tir_vmath_##S(op, o_, x_, n);                        \
			return 0;                                            \
		}                                                            \
		for (int64_t j = 0; j < n; j += TIR_VMATH_BLOCK) {           \
			int64_t m = n - j < TIR_VMATH_BLOCK ? n - j : TIR_VMATH_BLOCK; \
			for (int64_t i = 0; i < m; i++)                      \
				o_[j + i] = x_[(j + i) * sx];                \
			tir_vmath_##S(op, o_ + j, o_ + j, m);                \
		}                                                            \
		return 0;                                                    \
	}

#define UNARY_INT(NAME, T, U)                                                \
	static int NAME(enum tir_op op, UNARY_ARGS)                          \
	{                                                                    \
		switch (op) {                                                \
		case TIR_OP_NEG: RUN1(T, T, (T)(0 - (U)v)); break;           \
		case TIR_OP_ABS: RUN1(T, T, v < 0 ? (T)(0 - (U)v) : v); break; \
		case TIR_OP_RELU: RUN1(T, T, v > 0 ? v : 0); break;          \
		case TIR_OP_FLOOR:                                           \
		case TIR_OP_CEIL:                                            \
		case TIR_OP_ROUND: RUN1(T, T, v); break;                     \
		case TIR_OP_SIGN: RUN1(T, T, (T)((v > 0) - (v < 0))); break; \
		default: return RUN_UNSUPPORTED;                             \
		}                                                            \
		return 0;                                                    \
	}

UNARY_FLOAT(unary_f32, float, f32)
UNARY_FLOAT(unary_f64, double, f64)
UNARY_INT(unary_i32, int32_t, uint32_t)
UNARY_INT(unary_i64, int64_t, uint64_t)

/* NOT of any dtype: true where x == 0. */
static int unary_not(enum tir_dtype dt, UNARY_ARGS)
{
	switch (dt) {
	case TIR_DTYPE_BOOL: RUN1(uint8_t, uint8_t, v == 0); break;
	case TIR_DTYPE_I32: RUN1(uint8_t, int32_t, v == 0); break;
	case TIR_DTYPE_I64: RUN1(uint8_t, int64_t, v == 0); break;
	case TIR_DTYPE_F32: RUN1(uint8_t, float, v == 0); break;
	case TIR_DTYPE_F64: RUN1(uint8_t, double, v == 0); break;
	default: return RUN_UNSUPPORTED;
	}
	return 0;
}

/* isnan, isinf, isfinite of any dtype: an integer or bool is finite */
static int unary_test(enum tir_op op, enum tir_dtype dt, UNARY_ARGS)
{
	bool fl = dt == TIR_DTYPE_F32 || dt == TIR_DTYPE_F64;
	if (!fl) {
		if (dt != TIR_DTYPE_BOOL && dt != TIR_DTYPE_I32 && dt != TIR_DTYPE_I64)
			return RUN_UNSUPPORTED;
		memset(o, op == TIR_OP_ISFINITE, (size_t)n);
		return 0;
	}
#define TESTS(T)                                                             	switch (op) {                                                        	case TIR_OP_ISNAN: RUN1(uint8_t, T, isnan(v) != 0); break;           	case TIR_OP_ISINF: RUN1(uint8_t, T, isinf(v) != 0); break;           	case TIR_OP_ISFINITE: RUN1(uint8_t, T, isfinite(v) != 0); break;     	default: return RUN_UNSUPPORTED;                                     	}
	if (dt == TIR_DTYPE_F32)
		TESTS(float)
	else
		TESTS(double)
#undef TESTS
	return 0;
}

static bool is_test(enum tir_op op)
{
	return op == TIR_OP_ISNAN || op == TIR_OP_ISINF || op == TIR_OP_ISFINITE;
}

static int unary_run(enum tir_op op, enum tir_dtype dt, UNARY_ARGS)
{
	if (op == TIR_OP_NOT)
		return unary_not(dt, o, px, sx, n);
	if (is_test(op))
		return unary_test(op, dt, o, px, sx, n);
	switch (dt) {
	case TIR_DTYPE_I32: return unary_i32(op, o, px, sx, n);
	case TIR_DTYPE_I64: return unary_i64(op, o, px, sx, n);
	case TIR_DTYPE_F32: return unary_f32(op, o, px, sx, n);
	case TIR_DTYPE_F64: return unary_f64(op, o, px, sx, n);
	default: return RUN_UNSUPPORTED;
	}
}

/* ---- binary ---- */

/* The comparisons and logic ops, the same for every input type. */
#define COMPARE_CASES(T)                                                     \
	case TIR_OP_EQ: RUN2(uint8_t, T, a == b); break;                     \
	case TIR_OP_NE: RUN2(uint8_t, T, a != b); break;                     \
	case TIR_OP_LT: RUN2(uint8_t, T, a < b); break;                      \
	case TIR_OP_LE: RUN2(uint8_t, T, a <= b); break;                     \
	case TIR_OP_GT: RUN2(uint8_t, T, a > b); break;                      \
	case TIR_OP_GE: RUN2(uint8_t, T, a >= b); break;                     \
	case TIR_OP_AND: RUN2(uint8_t, T, a != 0 && b != 0); break;          \
	case TIR_OP_OR: RUN2(uint8_t, T, a != 0 || b != 0); break;

/* Float arithmetic goes through vmath; a stride-0 operand beside a
 * contiguous one goes as one value (vmath's one-value functions: the same
 * bits), else operands that are not contiguous in the run are gathered a
 * block at a time (a stride-0 one filled once). */
#define BINARY_FLOAT(NAME, T, S, DT)                                         \
	static void NAME##_vmath(enum tir_op op, BINARY_ARGS)                \
	{                                                                    \
		T *o_ = o, ta[TIR_VMATH_BLOCK], tb[TIR_VMATH_BLOCK];         \
		const T *a_ = pa, *b_ = pb;                                  \
		if (sa == 1 && sb == 1) {                                    \
			tir_vmath2_##S(op, o_, a_, b_, n);                   \
			return;                                              \
		}                                                            \
		if ((sa == 0 && sb == 1) || (sa == 1 && sb == 0)) {          \
			tir_vmath2_fn f = tir_vmath_binary_scalar_fn(op, DT, sb == 0); \
			if (f) {                                             \
				f(o_, a_, b_, n);                            \
				return;                                      \
			}                                                    \
		}                                                            \
		for (int64_t j = 0; j < n; j += TIR_VMATH_BLOCK) {           \
			int64_t m = n - j < TIR_VMATH_BLOCK ? n - j : TIR_VMATH_BLOCK; \
			if (sa == 0 && j == 0) {                             \
				T v = a_[0];                                 \
				for (int64_t i = 0; i < m; i++)              \
					ta[i] = v;                           \
			} else if (sa != 1 && sa != 0) {                     \
				for (int64_t i = 0; i < m; i++)              \
					ta[i] = a_[(j + i) * sa];            \
			}                                                    \
			if (sb == 0 && j == 0) {                             \
				T v = b_[0];                                 \
				for (int64_t i = 0; i < m; i++)              \
					tb[i] = v;                           \
			} else if (sb != 1 && sb != 0) {                     \
				for (int64_t i = 0; i < m; i++)              \
					tb[i] = b_[(j + i) * sb];            \
			}                                                    \
			tir_vmath2_##S(op, o_ + j, sa == 1 ? a_ + j : ta,   \
				       sb == 1 ? b_ + j : tb, m);            \
		}                                                            \
	}                                                                    \
	static int NAME(enum tir_op op, BINARY_ARGS)                         \
	{                                                                    \
		if (tir_vmath_binary_op(op)) {                               \
			NAME##_vmath(op, o, pa, sa, pb, sb, n);              \
			return 0;                                            \
		}                                                            \
		switch (op) {                                                \
		case TIR_OP_FLOOR_DIVIDE: RUN2(T, T, k_floordiv_##S(a, b)); break; \
		COMPARE_CASES(T)                                             \
		default: return RUN_UNSUPPORTED;                             \
		}                                                            \
		return 0;                                                    \
	}

/* Integer add/sub/mul wrap through the unsigned type, as NumPy's do. */
#define BINARY_INT(NAME, T, U, SUF)                                          \
	static int NAME(enum tir_op op, BINARY_ARGS)                         \
	{                                                                    \
		bool bad = false;                                            \
		switch (op) {                                                \
		case TIR_OP_ADD: RUN2(T, T, (T)((U)a + (U)b)); break;        \
		case TIR_OP_SUB: RUN2(T, T, (T)((U)a - (U)b)); break;        \
		case TIR_OP_MUL: RUN2(T, T, (T)((U)a * (U)b)); break;        \
		case TIR_OP_DIV:                                             \
		case TIR_OP_FLOOR_DIVIDE: /* integer division floors already */ \
			RUN2(T, T, (bad |= b == 0, k_idiv##SUF(a, b)));      \
			return bad ? RUN_DIV_ZERO : 0;                       \
		case TIR_OP_MOD:                                             \
			RUN2(T, T, (bad |= b == 0, k_imod##SUF(a, b)));      \
			return bad ? RUN_DIV_ZERO : 0;                       \
		case TIR_OP_POW:                                             \
			RUN2(T, T, (bad |= b < 0, k_ipow##SUF(a, b)));       \
			return bad ? RUN_NEG_POW : 0;                        \
		case TIR_OP_MAXIMUM: RUN2(T, T, a > b ? a : b); break;       \
		case TIR_OP_MINIMUM: RUN2(T, T, a < b ? a : b); break;       \
		/* NumPy's: a shift by the width or more (or by a negative   \
		 * count, taken unsigned) gives 0, or -1 shifting a negative  \
		 * value right */                                            \
		case TIR_OP_LEFT_SHIFT:                                      \
			RUN2(T, T, (U)b < SUF ? (T)((U)a << b) : 0); break;  \
		case TIR_OP_RIGHT_SHIFT:                                     \
			RUN2(T, T, (U)b < SUF ? a >> b : a < 0 ? -1 : 0); break; \
		COMPARE_CASES(T)                                             \
		default: return RUN_UNSUPPORTED;                             \
		}                                                            \
		return 0;                                                    \
	}

BINARY_FLOAT(binary_f32, float, f32, TIR_DTYPE_F32)
BINARY_FLOAT(binary_f64, double, f64, TIR_DTYPE_F64)
BINARY_INT(binary_i32, int32_t, uint32_t, 32)
BINARY_INT(binary_i64, int64_t, uint64_t, 64)

/* bool as NumPy has it: add/maximum are or, mul/minimum are and. */
static int binary_bool(enum tir_op op, BINARY_ARGS)
{
	switch (op) {
	case TIR_OP_ADD:
	case TIR_OP_MAXIMUM: RUN2(uint8_t, uint8_t, (a | b) != 0); break;
	case TIR_OP_MUL:
	case TIR_OP_MINIMUM: RUN2(uint8_t, uint8_t, (a & b) != 0); break;
	COMPARE_CASES(uint8_t)
	default: return RUN_UNSUPPORTED;
	}
	return 0;
}

static int binary_run(enum tir_op op, enum tir_dtype dt, BINARY_ARGS)
{
	switch (dt) {
	case TIR_DTYPE_BOOL: return binary_bool(op, o, pa, sa, pb, sb, n);
	case TIR_DTYPE_I32: return binary_i32(op, o, pa, sa, pb, sb, n);
	case TIR_DTYPE_I64: return binary_i64(op, o, pa, sa, pb, sb, n);
	case TIR_DTYPE_F32: return binary_f32(op, o, pa, sa, pb, sb, n);
	case TIR_DTYPE_F64: return binary_f64(op, o, pa, sa, pb, sb, n);
	default: return RUN_UNSUPPORTED;
	}
}

static bool is_compare(enum tir_op op)
{
	switch (op) {
	case TIR_OP_EQ: case TIR_OP_NE: case TIR_OP_LT: case TIR_OP_LE:
	case TIR_OP_GT: case TIR_OP_GE: case TIR_OP_AND: case TIR_OP_OR:
		return true;
	default:
		return false;
	}
}

/* ---- ternary ---- */

#define TERNARY_ARGS void *o, const void *pc, int64_t sc, const void *pa, int64_t sa, \
	const void *pb, int64_t sb, int64_t n

/* where() only moves elements, so it goes by element size. */
static int where_run(size_t size, TERNARY_ARGS)
{
	switch (size) {
	case 1: RUN3(uint8_t, uint8_t, uint8_t, c ? a : b); break;
	case 4: RUN3(uint32_t, uint8_t, uint32_t, c ? a : b); break;
	case 8: RUN3(uint64_t, uint8_t, uint64_t, c ? a : b); break;
	default: return RUN_UNSUPPORTED;
	}
	return 0;
}

/* clip(x, lo, hi) = minimum(maximum(x, lo), hi); here c is x. */
static int clip_run(enum tir_dtype dt, TERNARY_ARGS)
{
#define IMAX(p, q) ((p) > (q) ? (p) : (q))
#define IMIN(p, q) ((p) < (q) ? (p) : (q))
	switch (dt) {
	case TIR_DTYPE_BOOL: RUN3(uint8_t, uint8_t, uint8_t, IMIN(IMAX(c, a), b)); break;
	case TIR_DTYPE_I32: RUN3(int32_t, int32_t, int32_t, IMIN(IMAX(c, a), b)); break;
	case TIR_DTYPE_I64: RUN3(int64_t, int64_t, int64_t, IMIN(IMAX(c, a), b)); break;
	case TIR_DTYPE_F32: RUN3(float, float, float, k_minf(k_maxf(c, a), b)); break;
	case TIR_DTYPE_F64: RUN3(double, double, double, k_min(k_max(c, a), b)); break;
	default: return RUN_UNSUPPORTED;
	}
#undef IMAX
#undef IMIN
	return 0;
}

/* ---- the kernels ---- */

static bool same_shape(const struct tir_tensor *a, const struct tir_tensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

static bool ready(const struct tir_tensor *t)
{
	return t->buf != NULL || tir_tensor_numel(t) == 0;
}

static int misuse(struct tir_err *err, const char *what, enum tir_op op, enum tir_dtype dt)
{
	return tir_errf(err, TIR_EUNSUPPORTED, NULL,
			"%s kernel: op %d not supported on %s operands (or operands mismatched)",
			what, (int)op, tir_dtype_name(dt));
}

static int run_failed(int rc, const char *what, enum tir_op op, enum tir_dtype dt,
		      struct tir_err *err)
{
	if (rc == RUN_DIV_ZERO)
		return tir_errf(err, TIR_ERUNTIME, NULL, "integer division by zero");
	if (rc == RUN_NEG_POW)
		return tir_errf(err, TIR_ERUNTIME, NULL,
				"integers to negative integer powers are not allowed");
	return misuse(err, what, op, dt);
}

#define AT(t, p, k) ((const char *)(p) + it.off[k] * (int64_t)tir_dtype_size((t)->dtype))

/* A float op over one contiguous run of n elements (every operand laid out
 * as out, or a scalar broadcast), cut into tasks on the pool: a relu of a
 * conv2d's [1, 64, 112, 112] result ran on one thread while the other
 * waited.  Tasks of tir_task_items elements (from the shape and the caches
 * alone); each element is computed alone, so any cut gives the same bytes. */
struct split {
	enum tir_op op;
	enum tir_dtype dt;
	int nin;
	char *o;
	const char *a, *b;
	int64_t sa, sb, es, n, per;
	int rc;
};

static void split_task(void *arg, int64_t t)
{
	struct split *j = arg;
	int64_t i0 = t * j->per, n = j->n - i0 < j->per ? j->n - i0 : j->per;
	int rc = j->nin == 1
		? unary_run(j->op, j->dt, j->o + i0 * j->es, j->a + i0 * j->sa * j->es, j->sa, n)
		: binary_run(j->op, j->dt, j->o + i0 * j->es, j->a + i0 * j->sa * j->es, j->sa,
			     j->b + i0 * j->sb * j->es, j->sb, n);
	if (rc)
		__atomic_store_n(&j->rc, rc, __ATOMIC_RELAXED);
}

/* Whether j (its run filled in) went to the pool; j->rc its result then. */
static bool split_run(struct split *j)
{
	if (j->dt != TIR_DTYPE_F32 && j->dt != TIR_DTYPE_F64)
		return false;
	j->es = (int64_t)tir_dtype_size(j->dt);
	/* bytes an element streams: its operands read and out written */
	j->per = tir_task_items(j->n, j->es * (j->nin + 1));
	if (j->per >= j->n)
		return false;
	tir_pool_run_shares((j->n + j->per - 1) / j->per, split_task, j);
	return true;
}

int tir_k_unary(enum tir_op op, const struct tir_tensor *x, struct tir_tensor *out,
		struct tir_err *err)
{
	enum tir_dtype want = op == TIR_OP_NOT || is_test(op) ? TIR_DTYPE_BOOL : x->dtype;
	if (out->dtype != want || !same_shape(x, out) || !tir_tensor_is_contiguous(out) ||
	    !ready(x) || !ready(out))
		return misuse(err, "unary", op, x->dtype);
	struct tir_iter it;
	const int64_t *st[2] = {out->strides, x->strides};
	const void *px = tir_tensor_data(x);
	void *po = tir_tensor_data(out);
	if (!tir_iter_init(&it, out->rank, out->shape, 2, st))
		return 0;
	if (it.inner == tir_tensor_numel(out) && out->dtype == x->dtype) {
		struct split j = { .op = op, .dt = x->dtype, .nin = 1, .o = (void *)AT(out, po, 0),
				   .a = AT(x, px, 1), .sa = it.istride[1], .n = it.inner };
		if (split_run(&j))
			return j.rc ? run_failed(j.rc, "unary", op, x->dtype, err) : 0;
	}
	do {
		int rc = unary_run(op, x->dtype, (void *)AT(out, po, 0), AT(x, px, 1),
				   it.istride[1], it.inner);
		if (rc)
			return run_failed(rc, "unary", op, x->dtype, err);
	} while (tir_iter_next(&it));
	return 0;
}

int tir_k_binary(enum tir_op op, const struct tir_tensor *a, const struct tir_tensor *b,
		 struct tir_tensor *out, struct tir_err *err)
{
	enum tir_dtype want = is_compare(op) ? TIR_DTYPE_BOOL : a->dtype;
	if (a->dtype != b->dtype || out->dtype != want || !same_shape(a, out) ||
	    !same_shape(b, out) || !tir_tensor_is_contiguous(out) || !ready(a) ||
	    !ready(b) || !ready(out))
		return misuse(err, "binary", op, a->dtype);
	struct tir_iter it;
	const int64_t *st[3] = {out->strides, a->strides, b->strides};
	const void *pa = tir_tensor_data(a), *pb = tir_tensor_data(b);
	void *po = tir_tensor_data(out);
	if (!tir_iter_init(&it, out->rank, out->shape, 3, st))
		return 0;
	if (it.inner == tir_tensor_numel(out) && out->dtype == a->dtype) {
		struct split j = { .op = op, .dt = a->dtype, .nin = 2, .o = (void *)AT(out, po, 0),
				   .a = AT(a, pa, 1), .sa = it.istride[1], .b = AT(b, pb, 2),
				   .sb = it.istride[2], .n = it.inner };
		if (split_run(&j))
			return j.rc ? run_failed(j.rc, "binary", op, a->dtype, err) : 0;
	}
	do {
		int rc = binary_run(op, a->dtype, (void *)AT(out, po, 0), AT(a, pa, 1),
				    it.istride[1], AT(b, pb, 2), it.istride[2], it.inner);
		if (rc)
			return run_failed(rc, "binary", op, a->dtype, err);
	} while (tir_iter_next(&it));
	return 0;
}

/* The fused evaluator's entry points (vmath.h): one contiguous run, none
 * of the tensor bookkeeping, the same inner runs as the kernels above. */
int tir_k_unary_run(enum tir_op op, enum tir_dtype dt, void *out, const void *x, int64_t n,
		    struct tir_err *err)
{
	if (dt == TIR_DTYPE_F32 && tir_vmath_unary_op(op)) {   /* the fused kernels' case */
		tir_vmath_f32(op, out, x, n);
		return 0;
	}
	int rc = unary_run(op, dt, out, x, 1, n);
	return rc ? run_failed(rc, "unary", op, dt, err) : 0;
}

int tir_k_binary_run(enum tir_op op, enum tir_dtype dt, void *out, const void *a,
		     const void *b, int64_t n, struct tir_err *err)
{
	if (dt == TIR_DTYPE_F32 && tir_vmath_binary_op(op)) {
		tir_vmath2_f32(op, out, a, b, n);
		return 0;
	}
	int rc = binary_run(op, dt, out, a, 1, b, 1, n);
	return rc ? run_failed(rc, "binary", op, dt, err) : 0;
}

int tir_k_ternary(enum tir_op op, const struct tir_tensor *x, const struct tir_tensor *y,
		  const struct tir_tensor *z, struct tir_tensor *out, struct tir_err *err)
{
	bool ok = (op == TIR_OP_WHERE && x->dtype == TIR_DTYPE_BOOL) ||
		  (op == TIR_OP_CLIP && x->dtype == out->dtype);
	if (!ok || y->dtype != out->dtype || z->dtype != out->dtype ||
	    !same_shape(x, out) || !same_shape(y, out) || !same_shape(z, out) ||
	    !tir_tensor_is_contiguous(out) || !ready(x) || !ready(y) || !ready(z) ||
	    !ready(out))
		return misuse(err, "ternary", op, out->dtype);
	struct tir_iter it;
	const int64_t *st[4] = {out->strides, x->strides, y->strides, z->strides};
	const void *px = tir_tensor_data(x), *py = tir_tensor_data(y), *pz = tir_tensor_data(z);
	void *po = tir_tensor_data(out);
	if (!tir_iter_init(&it, out->rank, out->shape, 4, st))
		return 0;
	do {
		void *o = (void *)AT(out, po, 0);
		int rc;
		if (op == TIR_OP_WHERE)
			rc = where_run(tir_dtype_size(out->dtype), o, AT(x, px, 1),
				       it.istride[1], AT(y, py, 2), it.istride[2],
				       AT(z, pz, 3), it.istride[3], it.inner);
		else
			rc = clip_run(out->dtype, o, AT(x, px, 1), it.istride[1],
				      AT(y, py, 2), it.istride[2], AT(z, pz, 3),
				      it.istride[3], it.inner);
		if (rc)
			return run_failed(rc, "ternary", op, out->dtype, err);
	} while (tir_iter_next(&it));
	return 0;
}

/* ---- masks: comparisons and where inside a float kernel ---- */

/* A comparison giving 1 or 0 of its operands' float type. */
#define MASK_CMP(T)                                                          \
	switch (op) {                                                        \
	case TIR_OP_EQ: RUN2(T, T, a == b); break;                           \
	case TIR_OP_NE: RUN2(T, T, a != b); break;                           \
	case TIR_OP_LT: RUN2(T, T, a < b); break;                            \
	case TIR_OP_LE: RUN2(T, T, a <= b); break;                           \
	case TIR_OP_GT: RUN2(T, T, a > b); break;                            \
	case TIR_OP_GE: RUN2(T, T, a >= b); break;                           \
	default: return RUN_UNSUPPORTED;                                     \
	}

static int mask_cmp_run(enum tir_op op, enum tir_dtype dt, BINARY_ARGS)
{
	if (dt == TIR_DTYPE_F32)
		MASK_CMP(float)
	else if (dt == TIR_DTYPE_F64)
		MASK_CMP(double)
	else
		return RUN_UNSUPPORTED;
	return 0;
}
#undef MASK_CMP

/* isnan, isinf, isfinite giving 1 or 0 of their operand's float type */
static int mask_test_run(enum tir_op op, enum tir_dtype dt, UNARY_ARGS)
{
#define MASK_TEST(T)                                                         \
	switch (op) {                                                        \
	case TIR_OP_ISNAN: RUN1(T, T, isnan(v) ? 1 : 0); break;              \
	case TIR_OP_ISINF: RUN1(T, T, isinf(v) ? 1 : 0); break;              \
	case TIR_OP_ISFINITE: RUN1(T, T, isfinite(v) ? 1 : 0); break;        \
	default: return RUN_UNSUPPORTED;                                     \
	}
	if (dt == TIR_DTYPE_F32)
		MASK_TEST(float)
	else if (dt == TIR_DTYPE_F64)
		MASK_TEST(double)
	else
		return RUN_UNSUPPORTED;
#undef MASK_TEST
	return 0;
}

static int mask_where_run(enum tir_dtype dt, TERNARY_ARGS)
{
	switch (dt) {
	case TIR_DTYPE_F32: RUN3(float, float, float, c != 0 ? a : b); break;
	case TIR_DTYPE_F64: RUN3(double, double, double, c != 0 ? a : b); break;
	default: return RUN_UNSUPPORTED;
	}
	return 0;
}

int tir_k_select_run(enum tir_op op, bool mask, enum tir_dtype dt, void *out, const void *const *p,
		     const int64_t *st, int64_t n)
{
	int rc;
	if (op == TIR_OP_WHERE && mask)
		rc = mask_where_run(dt, out, p[0], st[0], p[1], st[1], p[2], st[2], n);
	else if (op == TIR_OP_CLIP)
		rc = clip_run(dt, out, p[0], st[0], p[1], st[1], p[2], st[2], n);
	else if (mask && is_test(op))
		rc = mask_test_run(op, dt, out, p[0], st[0], n);
	else if (mask)
		rc = mask_cmp_run(op, dt, out, p[0], st[0], p[1], st[1], n);
	else
		rc = RUN_UNSUPPORTED;
	return rc;
}

int tir_k_mask(enum tir_op op, const struct tir_tensor *in, struct tir_tensor *out, struct tir_err *err)
{
	int nin = op == TIR_OP_WHERE ? 3 : is_test(op) ? 1 : 2;
	bool ok = tir_dtype_is_wide_float(out->dtype);
	for (int k = 0; k < nin; k++)
		ok &= in[k].dtype == out->dtype && same_shape(&in[k], out) && ready(&in[k]);
	if (!ok || !tir_tensor_is_contiguous(out) || !ready(out))
		return misuse(err, "mask", op, out->dtype);
	struct tir_iter it;
	const int64_t *st[4] = {out->strides, in[0].strides, in[nin > 1].strides, in[nin - 1].strides};
	const void *p[3];
	for (int k = 0; k < nin; k++)
		p[k] = tir_tensor_data(&in[k]);
	void *po = tir_tensor_data(out);
	if (!tir_iter_init(&it, out->rank, out->shape, nin + 1, st))
		return 0;
	do {
		void *o = (void *)AT(out, po, 0);
		int rc;
		if (op == TIR_OP_WHERE)
			rc = mask_where_run(out->dtype, o, AT(&in[0], p[0], 1), it.istride[1], AT(&in[1], p[1], 2),
					    it.istride[2], AT(&in[2], p[2], 3), it.istride[3], it.inner);
		else if (nin == 1)
			rc = mask_test_run(op, out->dtype, o, AT(&in[0], p[0], 1), it.istride[1], it.inner);
		else
			rc = mask_cmp_run(op, out->dtype, o, AT(&in[0], p[0], 1), it.istride[1], AT(&in[1], p[1], 2),
					  it.istride[2], it.inner);
		if (rc)
			return run_failed(rc, "mask", op, out->dtype, err);
	} while (tir_iter_next(&it));
	return 0;
}

/* ---- creation ---- */

/* value in out's dtype: integers from ivalue when is_int, else truncated. */
int tir_k_fill(struct tir_tensor *out, double value, int64_t ivalue, bool is_int)
{
	int64_t n = tir_tensor_numel(out);
	void *p = tir_tensor_data(out);
	if (n == 0)
		return 0;
	if (!p || !tir_tensor_is_contiguous(out))
		return -TIR_EUNSUPPORTED;
	double f = is_int ? (double)ivalue : value;
	switch (out->dtype) {
	case TIR_DTYPE_BOOL:
		memset(p, is_int ? ivalue != 0 : value != 0, (size_t)n);
		break;
	case TIR_DTYPE_I32: {
		int32_t v = is_int ? (int32_t)(uint32_t)(uint64_t)ivalue : tir_f2i32(value);
		int32_t *o = p;
		for (int64_t i = 0; i < n; i++)
			o[i] = v;
		break;
	}
	case TIR_DTYPE_I64: {
		int64_t v = is_int ? ivalue : tir_f2i64(value);
		int64_t *o = p;
		for (int64_t i = 0; i < n; i++)
			o[i] = v;
		break;
	}
	case TIR_DTYPE_F32: {
		float v = (float)f, *o = p;
		for (int64_t i = 0; i < n; i++)
			o[i] = v;
		break;
	}
	case TIR_DTYPE_F64: {
		double *o = p;
		for (int64_t i = 0; i < n; i++)
			o[i] = f;
		break;
	}
	default:
		return -TIR_EUNSUPPORTED;
	}
	return 0;
}

/* out[i] = start + i * step, in double for floats (then rounded to out's
 * dtype) and in wrapping int64 arithmetic for integers. */
int tir_k_arange(struct tir_tensor *out, double start, double step, int64_t istart,
		 int64_t istep)
{
	int64_t n = tir_tensor_numel(out);
	void *p = tir_tensor_data(out);
	if (n == 0)
		return 0;
	if (!p || !tir_tensor_is_contiguous(out))
		return -TIR_EUNSUPPORTED;
	for (int64_t i = 0; i < n; i++) {
		int64_t iv = (int64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep);
		double fv = start + (double)i * step;
		switch (out->dtype) {
		case TIR_DTYPE_BOOL: ((uint8_t *)p)[i] = iv != 0; break;
		case TIR_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)iv; break;
		case TIR_DTYPE_I64: ((int64_t *)p)[i] = iv; break;
		case TIR_DTYPE_F32: ((float *)p)[i] = (float)fv; break;
		case TIR_DTYPE_F64: ((double *)p)[i] = fv; break;
		default: return -TIR_EUNSUPPORTED;
		}
	}
	return 0;
}

/* Ones on the main diagonal of a 2-D out, zeros elsewhere. */
int tir_k_eye(struct tir_tensor *out)
{
	int64_t n = tir_tensor_numel(out);
	char *p = tir_tensor_data(out);
	if (n == 0)
		return 0;
	if (!p || out->rank != 2 || !tir_tensor_is_contiguous(out))
		return -TIR_EUNSUPPORTED;
	size_t sz = tir_dtype_size(out->dtype);
	memset(p, 0, (size_t)n * sz);
	int64_t rows = out->shape[0], cols = out->shape[1];
	for (int64_t i = 0; i < rows && i < cols; i++) {
		char *e = p + (i * cols + i) * (int64_t)sz;
		switch (out->dtype) {
		case TIR_DTYPE_BOOL: *(uint8_t *)e = 1; break;
		case TIR_DTYPE_I32: *(int32_t *)e = 1; break;
		case TIR_DTYPE_I64: *(int64_t *)e = 1; break;
		case TIR_DTYPE_F32: *(float *)e = 1; break;
		case TIR_DTYPE_F64: *(double *)e = 1; break;
		default: return -TIR_EUNSUPPORTED;
		}
	}
	return 0;
}
