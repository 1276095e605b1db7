"""oracle_ref.py — tir's semantics written again in NumPy, for oracle.py.

What is here: the dtype rules of docs/language.md section 4 (promotion
bool < i32 < i64 < f32 < f64, weak scalar literals), tir's cast (float to int
truncates toward zero; NaN, infinities and out-of-range values give the
type's minimum, as lib/exec/iter.h defines), Philox4x32-10 and the rand/randn
definition of lib/exec/rng.c, and reference versions of the ops whose NumPy
spelling is not one call (conv2d, pools, attention, norms, softmax, reduce
dtypes).  Every float reference computes in float64 and is rounded to the
result's dtype by the caller; integers compute in their own dtype (NumPy
wraps like tir).  Written from docs/language.md and the contracts in the headers,
not from the kernels: it must stay an independent second opinion.
"""
import math

import numpy as np

NPDT = {
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
    "i32": np.dtype("<i4"),
    "i64": np.dtype("<i8"),
    "bool": np.dtype("bool"),
}
ORDER = ["bool", "i32", "i64", "f32", "f64"]
FLOATS = ("f32", "f64")
INTS = ("i32", "i64")
INT_MIN = {"i32": -(2**31), "i64": -(2**63)}
INT_MAX = {"i32": 2**31 - 1, "i64": 2**63 - 1}


def dtname(a):
    """tir's name of an array's dtype."""
    dt = np.asarray(a).dtype
    for k, v in NPDT.items():
        if v == dt:
            return k
    raise ValueError("no tir dtype for %s" % dt)


def kind(dt):
    return 0 if dt == "bool" else 1 if dt in INTS else 2


def promote(*dts):
    """Promotion of strong (non-literal) operands."""
    return max(dts, key=ORDER.index)


def with_literal(dt, lit):
    """A strong dtype combined with a weak literal of kind lit
    ('bool', 'int' or 'float'): the literal takes dt unless it is of a
    higher kind; then an int literal is i64 and a float literal f32."""
    lk = {"bool": 0, "int": 1, "float": 2}[lit]
    if lk > kind(dt):
        return "i64" if lit == "int" else "f32"
    return dt


def cast(x, dt):
    """tir's cast(x, dt) (also how operands are converted)."""
    x = np.asarray(x)
    src = dtname(x)
    if dt == "bool":
        return np.asarray(x != 0)
    if dt in INTS and src in FLOATS:
        v = x.astype(np.float64)
        with np.errstate(invalid="ignore"):
            if dt == "i32":
                ok = (v > -2147483649.0) & (v < 2147483648.0)
            else:
                ok = (v >= -(2.0**63)) & (v < 2.0**63)
        t = np.trunc(np.where(ok, v, 0.0)).astype(NPDT[dt])
        t[~ok] = INT_MIN[dt]
        return t
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(NPDT[dt])


def rounded(v, dt):
    """A float64 (or int) reference value given tir's dtype dt."""
    v = np.asarray(v)
    if dt in FLOATS:
        with np.errstate(over="ignore", invalid="ignore"):
            return v.astype(NPDT[dt])
    return cast(v, dt)


def f64(x):
    return np.asarray(x).astype(np.float64)


# ---- elementwise ----

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def erf(x):
    x = f64(x)
    return _erf(x) if x.size else x.copy()


def erfc(x):
    x = f64(x)
    return _erfc(x) if x.size else x.copy()


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x):
    # 0.5 x (1 + erf(x / sqrt 2)), written with erfc (the same function)
    # so the far left tail is not lost to cancellation in float64
    return 0.5 * x * erfc(-x / math.sqrt(2.0))


UNARY_FLOAT = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "recip": lambda x: 1.0 / x,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "gelu": gelu,
    "silu": lambda x: x * sigmoid(x),
    "erf": erf,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "selu": lambda x: 1.0507009873554804934 * np.where(x > 0, x, 1.6732632423543772848 * np.expm1(x)),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "softplus": lambda x: np.logaddexp(0, x),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
}

UNARY_NUM = {
    "neg": np.negative,
    "abs": np.abs,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,  # half to even
    "sign": np.sign,
}


def unary(op, x):
    """op(x) with tir's result dtype."""
    dt = dtname(x)
    with np.errstate(all="ignore"):
        if op == "not":
            return np.asarray(x == 0)
        if op in UNARY_FLOAT:
            od = dt if dt in FLOATS else "f32"
            return rounded(UNARY_FLOAT[op](f64(cast(x, od))), od)
        if dt in FLOATS:
            return rounded(UNARY_NUM[op](f64(x)), dt)
        if op in ("floor", "ceil", "round"):
            return x.copy()
        return UNARY_NUM[op](x).astype(NPDT[dt])


def arith(op, a, b, dt):
    """Binary op on a, b already of dtype dt (broadcast by NumPy)."""
    with np.errstate(all="ignore"):
        if dt in FLOATS:
            x, y = f64(a), f64(b)
            r = {
                "add": lambda: x + y,
                "sub": lambda: x - y,
                "mul": lambda: x * y,
                "div": lambda: x / y,
                "pow": lambda: np.power(x, y),
                "maximum": lambda: np.maximum(x, y),
                "minimum": lambda: np.minimum(x, y),
                "mod": lambda: np.mod(x, y),
            }[op]()
            return rounded(r, dt)
        x, y = np.asarray(a), np.asarray(b)
        r = {
            "add": lambda: x + y,
            "sub": lambda: x - y,
            "mul": lambda: x * y,
            "div": lambda: x // y,  # floor division
            "pow": lambda: np.power(x, y),
            "maximum": lambda: np.maximum(x, y),
            "minimum": lambda: np.minimum(x, y),
            "mod": lambda: np.mod(x, y),  # the divisor's sign
        }[op]()
        return np.asarray(r).astype(NPDT[dt])


COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def binary(op, a, b, dt=None):
    """op(a, b) for two strong operands (dt: the promoted dtype, or a
    given one when an operand is a literal)."""
    if dt is None:
        dt = promote(dtname(a), dtname(b))
    if op in ("and", "or"):
        x, y = np.asarray(a) != 0, np.asarray(b) != 0
        return np.asarray(x & y if op == "and" else x | y)
    A, B = cast(a, dt), cast(b, dt)
    if op in COMPARE:
        with np.errstate(invalid="ignore"):
            return np.asarray(COMPARE[op](A, B))
    return arith(op, A, B, dt)


# ---- reductions ----


def reduce(op, x, axis=None, keepdims=False):
    """sum mean max min prod var argmax argmin with tir's result dtypes."""
    dt = dtname(x)
    ax = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    with np.errstate(all="ignore"):
        if op in ("argmax", "argmin"):
            f = np.argmax if op == "argmax" else np.argmin
            return np.asarray(f(x, axis=ax, keepdims=keepdims)).astype(np.int64)
        if op in ("max", "min"):
            f = np.max if op == "max" else np.min
            return np.asarray(f(x, axis=ax, keepdims=keepdims))
        if op in ("sum", "prod"):
            f = np.sum if op == "sum" else np.prod
            if dt in FLOATS:
                return rounded(f(f64(x), axis=ax, keepdims=keepdims), dt)
            return np.asarray(f(x.astype(np.int64), axis=ax, keepdims=keepdims)).astype(np.int64)
        od = dt if dt in FLOATS else "f32"
        f = np.mean if op == "mean" else np.var
        return rounded(f(f64(x), axis=ax, keepdims=keepdims), od)


def reduce_scale(op, x, axis=None, keepdims=False):
    """The size of the terms a sum-like reduction adds (a tolerance scale:
    rounding error is relative to it, not to a cancelled result)."""
    ax = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    a = np.abs(f64(x))
    if op == "sum":
        return np.sum(a, axis=ax, keepdims=keepdims)
    if op == "mean":
        return np.mean(a, axis=ax, keepdims=keepdims)
    if op == "var":
        return np.mean(a * a, axis=ax, keepdims=keepdims)
    return None


# ---- nn ----


def softmax(x, axis=-1, log=False):
    x = f64(x)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        s = x - m
        e = np.exp(s)
        t = np.sum(e, axis=axis, keepdims=True)
        return s - np.log(t) if log else e / t


def layernorm(x, w, b, eps=1e-5):
    x = f64(x)
    with np.errstate(all="ignore"):
        mu = np.mean(x, axis=-1, keepdims=True)
        var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * f64(w) + f64(b)


def rmsnorm(x, w, eps=1e-6):
    x = f64(x)
    with np.errstate(all="ignore"):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * f64(w)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def windows(x, kh, kw, sh, sw):
    """x [N, C, H, W] -> the strided windows [N, C, oh, ow, kh, kw]."""
    n, c, h, w = x.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2], s[3]), writeable=False
    )


def conv2d(x, w, b=None, stride=1, padding=0, absolute=False):
    """NCHW convolution (cross-correlation, like every DL framework), by
    stride tricks; absolute=True gives sum |x| |w| (the error scale)."""
    sh, sw = pair(stride)
    ph, pw = pair(padding)
    x, w = f64(x), f64(w)
    if absolute:
        x, w = np.abs(x), np.abs(w)
    xp = np.ascontiguousarray(np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw))))
    win = windows(xp, w.shape[2], w.shape[3], sh, sw)
    out = np.einsum("ncyxij,ocij->noyx", win, w)
    if b is not None:
        bb = np.abs(f64(b)) if absolute else f64(b)
        out = out + bb[None, :, None, None]
    return out


def pool2d(x, kernel, stride=None, is_max=True):
    kh, kw = pair(kernel)
    sh, sw = pair(stride if stride is not None else kernel)
    xd = x if (is_max and dtname(x) not in FLOATS) else f64(x)
    win = windows(np.ascontiguousarray(xd), kh, kw, sh, sw)
    with np.errstate(all="ignore"):
        if is_max:
            return np.max(win, axis=(4, 5))  # NaN propagates, as np.max
        return np.mean(win, axis=(4, 5))


def attention(q, k, v, causal=False):
    """softmax(q @ k^T / sqrt(d)) @ v, masking j > i when causal."""
    q, k, v = f64(q), f64(k), f64(v)
    d = q.shape[-1]
    s = np.matmul(q, np.swapaxes(k, -1, -2)) / math.sqrt(d)
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        mask = np.arange(lk)[None, :] > np.arange(lq)[:, None]
        s = np.where(mask, -np.inf, s)
    return np.matmul(softmax(s, -1), v)


# ---- Philox4x32-10 and rand/randn (lib/exec/rng.c's definition) ----

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Vectorized Philox4x32-10: counters as uint64 arrays holding 32-bit
    words, the key as two Python ints; returns the four output words."""
    c = [np.asarray(w, dtype=np.uint64) & _M32 for w in (c0, c1, c2, c3)]
    c0, c1, c2, c3 = np.broadcast_arrays(*c)
    k0 &= 0xFFFFFFFF
    k1 &= 0xFFFFFFFF
    for r in range(10):
        if r:
            k0 = (k0 + PHILOX_W0) & 0xFFFFFFFF
            k1 = (k1 + PHILOX_W1) & 0xFFFFFFFF
        p0 = c0 * np.uint64(PHILOX_M0)  # < 2^64: exact in uint64
        p1 = c2 * np.uint64(PHILOX_M1)
        hi0, lo0 = p0 >> _S32, p0 & _M32
        hi1, lo1 = p1 >> _S32, p1 & _M32
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return c0, c1, c2, c3


# Random123's published known-answer vectors (its tests/kat_vectors)
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def philox_selftest():
    """None when philox4x32_10 reproduces the known answers, else a message."""
    for ctr, key, want in PHILOX_KAT:
        got = tuple(int(w) for w in philox4x32_10(*ctr, *key))
        if got != want:
            return "philox%s%s = %s, expected %s" % (
                ctr, key, [hex(g) for g in got], [hex(w) for w in want])
    return None


F4 = np.float32


def _f4(h):
    """an f32 constant from its hex-float spelling in rng.c's definition"""
    return F4(float.fromhex(h))


def lnf(u):
    """randn f32's ln u, u float32 in (0, 1], every step in float32 (NumPy's
    float32 ufuncs round each operation, as IEEE does): u = 2^e m with m in
    [sqrt(1/2), sqrt(2)) (the bound sqrt 2 rounded to f32), s = (m-1)/(m+1),
    z = s^2, p = 2/3 + z (2/5 + z (2/7 + z 2/9)) (each 2/k rounded to f32),
    ln u = e ln2_hi + ((e ln2_lo + s (z p)) + 2 s)."""
    b = u.view(np.uint32)
    e = (b >> np.uint32(23)).astype(np.int32) - np.int32(127)
    m = ((b & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(F4)
    big = m > _f4("0x1.6a09e6p+0")
    m = np.where(big, m * F4(0.5), m)
    ed = (e + big.astype(np.int32)).astype(F4)
    s = (m - F4(1)) / (m + F4(1))
    z = s * s
    p = _f4("0x1.c71c72p-3")
    for c in ("0x1.24924ap-2", "0x1.99999ap-2", "0x1.555556p-1"):
        p = p * z + _f4(c)
    lo = ed * _f4("0x1.2fefa4p-17") + s * (z * p)
    return ed * _f4("0x1.62e3p-1") + (lo + F4(2) * s)


def cossinf(u):
    """randn f32's cos(2 pi u) and sin(2 pi u), u float32 multiples of 2^-24
    in [0, 1), in float32: n = round(4u) (half to even), r = (4u - n)/4,
    z = r^2, cos(2 pi r) and sin(2 pi r) by their Taylor polynomials to
    r^10 and r^9 (coefficients (2 pi)^k/k! rounded to f32, Horner in z),
    then by quadrant n % 4."""
    t = u * F4(4)
    n = np.rint(t)  # exact: t is a float32 <= 4
    q = n.astype(np.int64) & 3
    r = (t - n) * F4(0.25)
    z = r * r
    c = _f4("-0x1.a6d1f2p+4")
    for k in ("0x1.e1f506p+5", "-0x1.55d3c8p+6", "0x1.03c1f0p+6", "-0x1.3bd3ccp+4", "0x1p+0"):
        c = c * z + _f4(k)
    s = _f4("0x1.507834p+5")
    for k in ("-0x1.32d2ccp+6", "0x1.466bc6p+6", "-0x1.4abbcep+5", "0x1.921fb6p+2"):
        s = s * z + _f4(k)
    s = s * r
    cos = np.choose(q, [c, -s, -c, s])
    sin = np.choose(q, [s, c, -s, -c])
    return cos, sin


def _ulps32(got, want):
    """|got - want| in f32 ULPs of want (float64; 0 where both are 0)"""
    w = np.abs(want)
    e = np.floor(np.log2(np.where(w > 0, w, 1.0)))
    err = np.abs(got.astype(np.float64) - want) / np.exp2(np.maximum(e, -126.0) - 23)
    return float(np.max(np.where(w > 0, err, np.where(got == 0, 0.0, np.inf)), initial=0.0))


def randnf_selftest():
    """None when the f32 definition above is close to float64 math: lnf and
    cossinf over all 2^24 arguments within 2 f32 ULPs, and z over 2^20
    pairs within 4 (rng.c's bounds), else a message."""
    k = np.arange(1, 2**24 + 1, dtype=np.uint64)
    u1 = k.astype(F4) * F4(2.0**-24)
    worst = {"ln": _ulps32(lnf(u1), np.log(u1.astype(np.float64)))}
    u2 = (k - np.uint64(1)).astype(F4) * F4(2.0**-24)
    c, s = cossinf(u2)
    n = np.rint(4 * u2.astype(np.float64))
    q = n.astype(np.int64) & 3
    t = 2 * np.pi * (u2.astype(np.float64) - n / 4)  # exact reduction, so zeros are exact
    cr, sr = np.cos(t), np.sin(t)
    worst["cos"] = _ulps32(c, np.choose(q, [cr, -sr, -cr, sr]))
    worst["sin"] = _ulps32(s, np.choose(q, [sr, cr, -sr, -cr]))
    g = np.random.default_rng(12)
    i1, i2 = g.integers(0, 2**24, 2**20), g.integers(0, 2**24, 2**20)
    a, b, bq = u1[i1], u2[i2], q[i2]
    rad = np.sqrt(-2 * np.log(a.astype(np.float64)))
    zc = np.sqrt(F4(-2) * lnf(a)) * c[i2]
    worst["z"] = _ulps32(zc, rad * np.choose(bq, [cr[i2], -sr[i2], -cr[i2], sr[i2]]))
    for name, bound in (("ln", 2), ("cos", 2), ("sin", 2), ("z", 4)):
        if not worst[name] <= bound:
            return "randn f32's %s: %.3f f32 ULPs from float64 math (bound %d)" % (name, worst[name], bound)
    return None


def rand(shape, seed=0, dt="f32", normal=False):
    """rand/randn exactly as rng.c defines them: element i of a group of 8
    Philox counters (32 f32 or 16 f64 elements) takes counter
    8 * (i // group) + i % 8 and slot (i // 8) % slots of its words."""
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    seed &= 0xFFFFFFFFFFFFFFFF
    single = dt == "f32"
    s3, s8, s11 = np.uint64(3), np.uint64(8), np.uint64(11)
    group = np.uint64(32 if single else 16)
    c = (i // group) * np.uint64(8) + (i & np.uint64(7))
    q = ((i >> s3) & np.uint64(3 if single else 1)).astype(np.int64)
    r = philox4x32_10(c & _M32, c >> _S32, 0, 0, seed & 0xFFFFFFFF, seed >> 32)
    r = np.stack(r)  # r[w][i]: word w of element i's counter
    cols = np.arange(n)

    def word(k):  # word k[i] of element i's block
        return r[k, cols]

    if not normal:
        if single:
            v = (word(q) >> s8).astype(np.float64) * 2.0**-24
        else:
            v = (((word(2 * q) << _S32) | word(2 * q + 1)) >> s11).astype(np.float64) * 2.0**-53
    else:
        if single:  # in float32 throughout (rng.c: since 27 Nov 2026)
            p = q // 2
            u1 = ((word(2 * p) >> s8) + np.uint64(1)).astype(F4) * F4(2.0**-24)
            u2 = (word(2 * p + 1) >> s8).astype(F4) * F4(2.0**-24)
            cos, sin = cossinf(u2)
            v = np.sqrt(F4(-2) * lnf(u1)) * np.where(q % 2 == 1, sin, cos)
            assert v.dtype == F4
            return v.reshape(shape)
        else:
            u1 = ((((r[0] << _S32) | r[1]) >> s11) + np.uint64(1)).astype(np.float64) * 2.0**-53
            u2 = (((r[2] << _S32) | r[3]) >> s11).astype(np.float64) * 2.0**-53
            sine = q == 1
        t = 6.283185307179586476925 * u2
        v = np.sqrt(-2.0 * np.log(u1)) * np.where(sine, np.sin(t), np.cos(t))
    return rounded(v.reshape(shape), dt)
