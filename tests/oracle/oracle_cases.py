"""oracle_cases.py — the table of oracle.py: tir programs and the NumPy
values their names must hold.

A case is a program body (it may use the inputs by name; oracle.py adds the
`input` lines in front) plus, by result name, the expected array with its
exact dtype and shape; or an error it must stop with.  Inputs come from a
generator seeded by the case's name, so cases are reproducible and adding
one changes no other.  The reference values come from oracle_ref.py (NumPy)
and, for tir's dtype rules, from docs/language.md and lib/ir/check.c's contract.
"""
import json
import math
import re
import struct
import warnings
import zlib

import numpy as np

import oracle_ops
import oracle_scatter
import oracle_ref as R
from oracle_ref import NPDT, FLOATS, INTS, INT_MIN, INT_MAX

NAN, INF = float("nan"), float("inf")
ALL = ["f32", "f64", "i32", "i64", "bool"]
NUM = ["f32", "f64", "i32", "i64"]


class Case:
    def __init__(self, name, body, inputs=None, expect=None, files=None, error=None,
                 err_line=None, tol=None, scale=None, printed=True, check_default_format=None):
        self.name = name
        self.body = body
        self.inputs = dict(inputs or {})
        self.expect = {n: np.asarray(a) for n, a in (expect or {}).items()}
        self.files = dict(files or {})
        self.error = error          # a regex stderr must match (exit 1 expected)
        self.err_line = err_line    # the body line (from 1) the error points at
        self.tol = tol              # (rtol, atol) instead of the dtype's default
        self.scale = dict(scale or {})
        self.printed = printed
        self.check_default_format = check_default_format


def selftest():
    return R.philox_selftest() or R.randnf_selftest()


class Gen:
    """Random inputs, seeded by the case name."""

    def __init__(self, name):
        self.r = np.random.default_rng(zlib.crc32(name.encode()))

    def f(self, dt, shape, lo=-3.0, hi=3.0):
        return self.r.uniform(lo, hi, shape).astype(NPDT[dt])

    def i(self, dt, shape, lo=-9, hi=9):
        return self.r.integers(lo, hi + 1, shape).astype(NPDT[dt])

    def b(self, shape):
        return self.r.random(shape) < 0.5

    def any(self, dt, shape, lo=-3, hi=3):
        if dt in FLOATS:
            return self.f(dt, shape, lo, hi)
        if dt in INTS:
            return self.i(dt, shape, int(lo), int(hi))
        return self.b(shape)

    def nonzero(self, dt, shape, lo=-7, hi=7):
        v = self.r.integers(lo, hi, shape)
        v[v >= 0] += 1
        return v.astype(NPDT[dt])

    def perm(self, a):
        return self.r.permutation(a)


SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-3, -3.5]


def with_specials(g, dt, shape, lo=-4.0, hi=4.0, specials=SPECIAL):
    x = g.f("f64", shape, lo, hi).reshape(-1)
    x[: len(specials)] = specials
    return x.reshape(shape).astype(NPDT[dt])


def arr(v, dt):
    return np.array(v, dtype=NPDT[dt])


CASES = []


def case(*a, **k):
    CASES.append(Case(*a, **k))


# ---------------------------------------------------------------- unary


def unary_cases():
    fops = list(R.UNARY_FLOAT)
    nops = list(R.UNARY_NUM)
    for dt in ALL:
        name = "unary_float_%s" % dt
        g = Gen(name)
        if dt in FLOATS:
            x = with_specials(g, dt, (4, 6))
        elif dt in INTS:
            x = g.i(dt, (4, 6), -20, 20)
            x.reshape(-1)[:3] = [0, -1, 1]
        else:
            x = g.b((4, 6))
        body = "\n".join("r_%s = %s(x)" % (op, op) for op in fops)
        case(name, body, {"x": x}, {"r_%s" % op: R.unary(op, x) for op in fops})

    for dt in NUM:
        name = "unary_num_%s" % dt
        g = Gen(name)
        if dt in FLOATS:
            x = with_specials(g, dt, (4, 6), specials=SPECIAL + [3.5, -1.5, 0.49999997, 4.5])
        else:
            x = g.i(dt, (4, 6), -20, 20)
            x.reshape(-1)[:5] = [INT_MIN[dt], INT_MAX[dt], 0, -1, 1]
        body = "\n".join("r_%s = %s(x)" % (op, op) for op in nops) + "\nr_negsugar = -x"
        exp = {"r_%s" % op: R.unary(op, x) for op in nops}
        exp["r_negsugar"] = R.unary("neg", x)
        case(name, body, {"x": x}, exp)

    for dt in ALL:
        name = "unary_not_%s" % dt
        g = Gen(name)
        x = with_specials(g, dt, (3, 5)) if dt in FLOATS else g.any(dt, (3, 5), -2, 2)
        case(name, "r = not(x)", {"x": x}, {"r": R.unary("not", x)})

    # rank 0 and zero-size operands
    g = Gen("unary_rank0_empty")
    s = arr(0.75, "f32")
    e = np.zeros((2, 0, 3), dtype="<f8")
    ie = np.zeros((0,), dtype="<i4")
    case("unary_rank0_empty",
         "r1 = exp(s)\nr2 = neg(s)\nr3 = sqrt(e)\nr4 = abs(ie)\nr5 = sin(ie)\nr6 = not(e)",
         {"s": s, "e": e, "ie": ie},
         {"r1": R.unary("exp", s), "r2": R.unary("neg", s), "r3": R.unary("sqrt", e),
          "r4": R.unary("abs", ie), "r5": R.unary("sin", ie), "r6": R.unary("not", e)})

    # round: half to even at many magnitudes, both signs
    v = [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5, 1e6 + 0.5, -1e6 - 0.5, 2.4999, 2.5001,
         -0.0, 8388609.0, 0.49999999999999994]
    for dt in FLOATS:
        x = arr(v, dt)
        case("round_half_even_%s" % dt, "r = round(x)", {"x": x}, {"r": R.unary("round", x)})

    # a bool operand where a number is needed
    case("unary_num_bool_error", "r = abs(x)", {"x": np.array([True, False])},
         error=r"abs: .*bool", err_line=1)


# ---------------------------------------------------------------- binary


def binary_inputs(g, dt, shape=(6, 7)):
    if dt in FLOATS:
        a = with_specials(g, "f64", shape, specials=SPECIAL + SPECIAL[:6])
        b = with_specials(g, "f64", shape,
                          specials=list(np.roll(SPECIAL, 3)) + [0.0, NAN, INF, -INF, 0.5, 2.0])
        ties = g.r.random(shape) < 0.2
        ties.reshape(-1)[:18] = False
        b[ties] = a[ties]
        return a.astype(NPDT[dt]), b.astype(NPDT[dt])
    if dt in INTS:
        return g.i(dt, shape, -20, 20), g.nonzero(dt, shape)
    return g.b(shape), g.b(shape)


ARITH = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod"]
SUGAR = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def binary_cases():
    for dt in NUM:
        name = "binary_arith_%s" % dt
        g = Gen(name)
        a, b = binary_inputs(g, dt)
        inputs = {"a": a, "b": b}
        body, exp = [], {}
        for op in ARITH:
            if op == "pow" and dt in INTS:
                continue
            if op == "mod" and dt in FLOATS:
                continue
            body.append("r_%s = %s(a, b)" % (op, op))
            exp["r_%s" % op] = R.binary(op, a, b)
        for op, s in SUGAR.items():
            body.append("s_%s = a %s b" % (op, s))
            exp["s_%s" % op] = R.binary(op, a, b)
        case(name, "\n".join(body), inputs, exp)

    # float mod: NaN/inf in the dividend, zero divisors, mixed signs
    for dt in FLOATS:
        name = "binary_mod_%s" % dt
        g = Gen(name)
        a = with_specials(g, dt, (5, 6), -9, 9, specials=[NAN, INF, -INF, 0.0, -0.0, 5.5, -5.5, 7.0, -7.0, 1.0])
        b = g.f(dt, (5, 6), -4, 4)
        b.reshape(-1)[:10] = [2.0, 2.0, 2.0, 3.0, 3.0, -2.0, 2.0, -3.5, 3.5, 0.0]
        b.reshape(-1)[10] = 0.0
        case(name, "r = mod(a, b)\nr2 = mod(a, -1.5)", {"a": a, "b": b},
             {"r": R.binary("mod", a, b),
              "r2": R.binary("mod", a, arr(-1.5, dt))})

    # integer pow: non-negative exponents, negative bases, wrapping
    for dt in INTS:
        name = "binary_pow_%s" % dt
        g = Gen(name)
        a = g.i(dt, (4, 5), -5, 5)
        b = g.i(dt, (4, 5), 0, 5)
        b.reshape(-1)[0] = 0
        a.reshape(-1)[0] = 0  # 0 ** 0 == 1
        big = arr([3, -3, 2], dt)
        e = arr([40, 41, 62 if dt == "i64" else 30], dt)
        case(name, "r = pow(a, b)\nr2 = pow(big, e)", {"a": a, "b": b, "big": big, "e": e},
             {"r": R.binary("pow", a, b), "r2": R.binary("pow", big, e)})

    # integer div and mod with every sign combination (NumPy // and %)
    for dt in INTS:
        name = "int_divmod_signs_%s" % dt
        av = [7, -7, 7, -7, 6, -6, 0, 1, -1, 13, -13, INT_MAX[dt], INT_MIN[dt], INT_MIN[dt] + 1,
              INT_MIN[dt], INT_MIN[dt], 5]
        bv = [2, 2, -2, -2, 3, -3, 5, 7, 7, -5, 5, 2, 3, -7, -1, INT_MIN[dt], -1]
        a, b = arr(av, dt), arr(bv, dt)
        case(name,
             "q = a / b\nm = mod(a, b)\nq2 = div(a, 3)\nm2 = mod(a, -3)\nback = q * b + m",
             {"a": a, "b": b},
             {"q": R.binary("div", a, b), "m": R.binary("mod", a, b),
              "q2": R.binary("div", a, arr(3, dt)), "m2": R.binary("mod", a, arr(-3, dt)),
              "back": a})

    # comparisons and logic, every dtype, with ties and NaN
    for dt in ALL:
        name = "binary_compare_logic_%s" % dt
        g = Gen(name)
        if dt in FLOATS:
            pool = np.array([NAN, -1.0, 0.0, -0.0, 1.0, 2.0, INF, -INF])
            a = g.r.choice(pool, (5, 8)).astype(NPDT[dt])
            b = g.r.choice(pool, (5, 8)).astype(NPDT[dt])
        else:
            a, b = g.any(dt, (5, 8), -2, 2), g.any(dt, (5, 8), -2, 2)
        ops = list(R.COMPARE) + ["and", "or"]
        case(name, "\n".join("r_%s = %s(a, b)" % (op, op) for op in ops), {"a": a, "b": b},
             {"r_%s" % op: R.binary(op, a, b) for op in ops})

    # maximum/minimum of bools (the only arithmetic bools allow)
    g = Gen("binary_bool_maxmin")
    a, b = g.b((3, 4)), g.b((3, 4))
    case("binary_bool_maxmin", "r1 = maximum(a, b)\nr2 = minimum(a, b)", {"a": a, "b": b},
         {"r1": np.maximum(a, b), "r2": np.minimum(a, b)})
    case("binary_bool_add_error", "r = a + b", {"a": a, "b": b}, error=r"add: .*bool", err_line=1)

    # mixed dtypes: promotion bool < i32 < i64 < f32 < f64
    pairs = [("i32", "i64"), ("i32", "f32"), ("i64", "f32"), ("f32", "f64"), ("bool", "i32"),
             ("bool", "f64"), ("i64", "f64"), ("i32", "f64"), ("bool", "i64")]
    for da, db in pairs:
        name = "binary_mixed_%s_%s" % (da, db)
        g = Gen(name)
        a = g.any(da, (3, 4), -9, 9)
        b = g.nonzero(db, (3, 4)) if db in INTS else g.any(db, (3, 4), -9, 9)
        if db in FLOATS:
            b[np.abs(b) < 0.1] = 1.0
        ops = ["add", "sub", "mul", "div", "maximum", "lt", "eq"]
        body = "\n".join("r_%s = %s(a, b)" % (op, op) for op in ops)
        body += "\nrev_mul = b * a\nrev_sub = b - a"
        exp = {"r_%s" % op: R.binary(op, a, b) for op in ops}
        exp["rev_mul"] = R.binary("mul", b, a)
        exp["rev_sub"] = R.binary("sub", b, a)
        case(name, body, {"a": a, "b": b}, exp)


# ---------------------------------------------------------------- broadcasting


def broadcast_cases():
    shapes = [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3)), ((2, 3), ()), ((2, 0, 3), (1, 3)),
              ((0,), (1,)), ((1,), (5,)), ((2, 1, 3), (4, 1)), ((1, 1, 1), (2, 3)), ((5,), (3, 1)),
              ((0, 3), (0, 1)), ((1, 0), (3, 1)), ((), ()), ((2, 1, 1, 3), (1, 4, 2, 1))]
    for k, (sa, sb) in enumerate(shapes):
        name = "broadcast_%d_%s_%s" % (k, "x".join(map(str, sa)) or "s", "x".join(map(str, sb)) or "s")
        g = Gen(name)
        a, b = g.f("f32", sa), g.i("i32", sb)
        c, d = g.f("f64", sb), g.nonzero("i64", sb)
        ia = g.i("i64", sa, -20, 20)
        case(name, "r1 = a + b\nr2 = a * c\nr3 = ia / d\nr4 = lt(b, a)\nr5 = maximum(c, a)",
             {"a": a, "b": b, "c": c, "d": d, "ia": ia},
             {"r1": R.binary("add", a, b), "r2": R.binary("mul", a, c),
              "r3": R.binary("div", ia, d), "r4": R.binary("lt", b, a),
              "r5": R.binary("maximum", c, a)})

    g = Gen("broadcast_where_3way")
    cnd = g.b((3, 1, 1))
    a = g.f("f32", (1, 4, 1))
    b = g.f("f64", (1, 1, 2))
    case("broadcast_where_3way", "r = where(cnd, a, b)\nr2 = clip(b, a, 1)",
         {"cnd": cnd, "a": a, "b": b},
         {"r": np.where(cnd, a.astype("<f8"), b),
          "r2": np.minimum(np.maximum(b, a.astype("<f8")), 1.0)})

    case("broadcast_mismatch_error", "r = a + b",
         {"a": np.zeros(3, "<f4"), "b": np.zeros(4, "<f4")},
         error=r"do not broadcast", err_line=1)


# ---------------------------------------------------------------- where / clip


def where_clip_cases():
    g = Gen("where_cases")
    c = g.b((3, 4))
    ci = g.i("i32", (3, 4), -1, 1)
    cf = with_specials(g, "f32", (3, 4), specials=[NAN, 0.0, -0.0, 1.0])
    af, bf = g.f("f32", (3, 4)), g.f("f32", (3, 4))
    ai, bl = g.i("i32", (3, 4)), g.i("i64", (3, 4))
    ad = g.f("f64", (3, 4))
    ba, bb = g.b((3, 4)), g.b((3, 4))
    case("where_cases",
         "r1 = where(c, af, bf)\nr2 = where(ci, ai, bl)\nr3 = where(cf, af, 0)\n"
         "r4 = where(gt(af, 0), af, -af)\nr5 = where(c, af, ad)\nr6 = where(c, 1, 2)\n"
         "r7 = where(c, ba, bb)\nr8 = where(c, ai, 2.5)\nr9 = where(gt(af, 0), af, nan)",
         {"c": c, "ci": ci, "cf": cf, "af": af, "bf": bf, "ai": ai, "bl": bl, "ad": ad, "ba": ba, "bb": bb},
         {"r1": np.where(c, af, bf), "r2": np.where(ci != 0, ai.astype("<i8"), bl),
          "r3": np.where(cf != 0, af, np.float32(0)), "r4": np.where(af > 0, af, -af),
          "r5": np.where(c, af.astype("<f8"), ad), "r6": np.where(c, 1, 2).astype("<i8"),
          "r7": np.where(c, ba, bb),
          "r8": np.where(c, ai.astype("<f4"), np.float32(2.5)),
          "r9": np.where(af > 0, af, np.float32(NAN))})

    g = Gen("clip_cases")
    x = with_specials(g, "f32", (3, 4), specials=[NAN, INF, -INF, 0.5, -2.0, 2.0])
    xd = with_specials(g, "f64", (3, 4), specials=[NAN, INF, -INF])
    xi = g.i("i32", (3, 4), -9, 9)
    lo = g.f("f32", (3, 1), -2, 0)
    hi = g.f("f32", (1, 4), 0.1, 2)
    case("clip_cases",
         "r1 = clip(x, -1, 1)\nr2 = clip(xi, 0, 5)\nr3 = clip(xi, 0.5, 2)\nr4 = clip(x, lo, hi)\n"
         "r5 = clip(xd, -0.25, 0.75)\nr6 = clip(xi, lo, 3)",
         {"x": x, "xd": xd, "xi": xi, "lo": lo, "hi": hi},
         {"r1": np.clip(x, np.float32(-1), np.float32(1)),
          "r2": np.clip(xi, 0, 5).astype("<i4"),
          "r3": np.clip(xi.astype("<f4"), np.float32(0.5), np.float32(2)),
          "r4": np.minimum(np.maximum(x, lo), hi),
          "r5": np.clip(xd, -0.25, 0.75),
          "r6": np.minimum(np.maximum(xi.astype("<f4"), lo), np.float32(3))})


# ---------------------------------------------------------------- reductions


REDUCE_AXES = [
    ("", None, False),
    (", axis=0", 0, False),
    (", axis=1, keepdims=true", 1, True),
    (", axis=-1", -1, False),
    (", axis=2", 2, False),
    (", axis=[0, 2]", [0, 2], False),
    (", axis=[-1, 0], keepdims=true", [-1, 0], True),
    (", keepdims=true", None, True),
    (", axis=[0, 1, 2]", [0, 1, 2], False),
    (", axis=-3", -3, False),
]


def reduce_cases():
    for op in ["sum", "mean", "max", "min", "prod", "var", "argmax", "argmin"]:
        for dt in ALL:
            name = "reduce_%s_%s" % (op, dt)
            g = Gen(name)
            if op == "prod":
                x = (g.f(dt, (3, 4, 5), 0.7, 1.3) * np.where(g.b((3, 4, 5)), 1, -1)).astype(NPDT[dt]) \
                    if dt in FLOATS else g.any(dt, (3, 4, 5), -2, 2)
            else:
                x = g.any(dt, (3, 4, 5), -3, 3)
            body, exp, scale = [], {}, {}
            for k, (attrs, axis, keep) in enumerate(REDUCE_AXES):
                if op.startswith("arg") and isinstance(axis, list):
                    continue
                n = "r%d" % k
                body.append("%s = %s(x%s)" % (n, op, attrs))
                exp[n] = R.reduce(op, x, axis, keep)
                s = R.reduce_scale(op, x, axis, keep)
                if s is not None:
                    scale[n] = s
            case(name, "\n".join(body), {"x": x}, exp, scale=scale)

    # NaN and inf through every reduction (float only)
    for dt in FLOATS:
        name = "reduce_nan_inf_%s" % dt
        g = Gen(name)
        x = g.f(dt, (4, 5))
        x[1, 2] = NAN
        x[2, 1] = INF
        x[3, 0], x[3, 3] = -INF, INF
        ops = ["sum", "mean", "max", "min", "prod", "var", "argmax", "argmin"]
        body, exp = [], {}
        for op in ops:
            body.append("r_%s = %s(x, axis=1)" % (op, op))
            exp["r_%s" % op] = R.reduce(op, x, 1)
            body.append("a_%s = %s(x)" % (op, op))
            exp["a_%s" % op] = R.reduce(op, x)
        case(name, "\n".join(body), {"x": x}, exp)

    # ties: the first index wins
    x = arr([[1, 3, 3, 0], [2, 2, 2, 2], [-1, -5, -5, 7]], "f32")
    xi = arr([[0, 0, 1, 1], [4, 4, 4, 4], [1, -1, 1, -1]], "i32")
    xb = np.array([[False, True, True], [False, False, False], [True, True, False]])
    case("argmax_ties",
         "r1 = argmax(x, axis=1)\nr2 = argmin(x, axis=1)\nr3 = argmax(xi, axis=1)\n"
         "r4 = argmin(xi, axis=-1)\nr5 = argmax(xb, axis=1)\nr6 = argmin(xb, axis=1)\n"
         "r7 = argmax(x, axis=0, keepdims=true)\nr8 = argmin(x)",
         {"x": x, "xi": xi, "xb": xb},
         {"r1": R.reduce("argmax", x, 1), "r2": R.reduce("argmin", x, 1),
          "r3": R.reduce("argmax", xi, 1), "r4": R.reduce("argmin", xi, -1),
          "r5": R.reduce("argmax", xb, 1), "r6": R.reduce("argmin", xb, 1),
          "r7": R.reduce("argmax", x, 0, True), "r8": R.reduce("argmin", x)})

    # zero-size and rank-0 reductions
    e = np.zeros((0, 3), "<f4")
    ei = np.zeros((2, 0), "<i4")
    s = arr(2.5, "f64")
    case("reduce_empty_rank0",
         "r1 = sum(e, axis=0)\nr2 = sum(e, axis=1)\nr3 = sum(e)\nr4 = prod(e, axis=0)\n"
         "r5 = sum(ei, axis=1)\nr6 = prod(ei)\nr7 = mean(e, axis=0)\nr8 = sum(s)\n"
         "r9 = max(s)\nr10 = mean(s, keepdims=true)\nr11 = max(e, axis=1)",
         {"e": e, "ei": ei, "s": s},
         {"r1": R.reduce("sum", e, 0), "r2": R.reduce("sum", e, 1), "r3": R.reduce("sum", e),
          "r4": R.reduce("prod", e, 0), "r5": R.reduce("sum", ei, 1), "r6": R.reduce("prod", ei),
          "r7": R.reduce("mean", e, 0), "r8": R.reduce("sum", s), "r9": R.reduce("max", s),
          "r10": R.reduce("mean", s, None, True), "r11": R.reduce("max", e, 1)})

    # integer sums wrap; i32 sums do not, they are i64
    xi = arr([2**31 - 1, 2**31 - 1, 5], "i32")
    xl = arr([2**62, 2**62, 2**62], "i64")
    case("reduce_int_widths",
         "r1 = sum(xi)\nr2 = sum(xl)\nr3 = prod(xi)\nr4 = mean(xi)\nr5 = max(xl)",
         {"xi": xi, "xl": xl},
         {"r1": R.reduce("sum", xi), "r2": R.reduce("sum", xl), "r3": R.reduce("prod", xi),
          "r4": R.reduce("mean", xi), "r5": R.reduce("max", xl)})

    # a longer row (pairwise or not, it must stay within the tolerance)
    g = Gen("reduce_long_rows")
    x = g.f("f32", (3, 4000), 0.0, 1.0)
    xd = g.f("f64", (4000, 3), -1.0, 1.0)
    case("reduce_long_rows",
         "r1 = sum(x, axis=1)\nr2 = mean(x)\nr3 = var(x, axis=-1)\nr4 = sum(xd, axis=0)\nr5 = var(xd)",
         {"x": x, "xd": xd},
         {"r1": R.reduce("sum", x, 1), "r2": R.reduce("mean", x), "r3": R.reduce("var", x, -1),
          "r4": R.reduce("sum", xd, 0), "r5": R.reduce("var", xd)},
         scale={"r4": R.reduce_scale("sum", xd, 0)})


# ---------------------------------------------------------------- movement


def movement_cases():
    g = Gen("reshape_cases")
    x = g.f("f32", (2, 3, 4))
    e = np.zeros((0, 3), "<i8")
    one = g.i("i32", (1, 1))
    case("reshape_cases",
         "r1 = reshape(x, [4, -1])\nr2 = reshape(x, [-1])\nr3 = reshape(x, [2, -1, 2])\n"
         "r4 = reshape(x, [24])\nr5 = reshape(e, [3, -1])\nr6 = reshape(one, [])\n"
         "r7 = reshape(x, [-1, 1, 3])",
         {"x": x, "e": e, "one": one},
         {"r1": x.reshape(4, -1), "r2": x.reshape(-1), "r3": x.reshape(2, -1, 2),
          "r4": x.reshape(24), "r5": e.reshape(3, 0), "r6": one.reshape(()),
          "r7": x.reshape(-1, 1, 3)})

    for dt in ALL:
        name = "transpose_%s" % dt
        g = Gen(name)
        x = g.any(dt, (2, 3, 4))
        m = g.any(dt, (3, 5))
        case(name,
             "r1 = transpose(x)\nr2 = transpose(x, [1, 0, 2])\nr3 = transpose(x, [2, 0, 1])\n"
             "r4 = transpose(x, [-1, 0, 1])\nr5 = transpose(m)\nr6 = transpose(m) + 0",
             {"x": x, "m": m},
             {"r1": x.transpose(), "r2": x.transpose(1, 0, 2), "r3": x.transpose(2, 0, 1),
              "r4": x.transpose(2, 0, 1), "r5": m.T,
              "r6": (m.T + 0).astype(NPDT["i64" if dt == "bool" else dt])})

    g = Gen("expand_cases")
    a = g.f("f32", (3, 1))
    s = arr(7, "i32")
    o = g.b((1,))
    case("expand_cases",
         "r1 = expand(a, [2, 3, 4])\nr2 = expand(s, [2, 2])\nr3 = expand(o, [0])\nr4 = expand(a, [3, 1])\n"
         "r5 = expand(o, [2, 3])",
         {"a": a, "s": s, "o": o},
         {"r1": np.broadcast_to(a, (2, 3, 4)).copy(), "r2": np.broadcast_to(s, (2, 2)).copy(),
          "r3": np.broadcast_to(o, (0,)).copy(), "r4": a.copy(), "r5": np.broadcast_to(o, (2, 3)).copy()})

    g = Gen("squeeze_unsqueeze")
    x = g.f("f64", (1, 3, 1, 2))
    s = arr(True, "bool")
    case("squeeze_unsqueeze",
         "r1 = squeeze(x)\nr2 = squeeze(x, 0)\nr3 = squeeze(x, [-2, 0])\nr4 = unsqueeze(x, 0)\n"
         "r5 = unsqueeze(x, -1)\nr6 = unsqueeze(x, 2)\nr7 = unsqueeze(s, 0)\nr8 = squeeze(unsqueeze(s, -1))",
         {"x": x, "s": s},
         {"r1": x.squeeze(), "r2": x.squeeze(0), "r3": x.squeeze((2, 0)), "r4": x[None],
          "r5": x[..., None], "r6": np.expand_dims(x, 2), "r7": s.reshape(1), "r8": s.copy()})
    case("squeeze_error", "r = squeeze(x, 1)", {"x": x}, error=r"squeeze: .*size 3", err_line=1)

    g = Gen("concat_cases")
    a, b = g.f("f32", (2, 3)), g.f("f32", (4, 3))
    c = g.f("f32", (2, 5))
    ai, af = g.i("i32", (2, 2)), g.f("f32", (2, 2))
    bb, bi = g.b((1, 2)), g.i("i32", (2, 2))
    z = np.zeros((0, 3), "<f4")
    d64 = g.f("f64", (1, 3))
    l1, l2 = g.i("i64", (3,)), g.i("i64", (2,))
    case("concat_cases",
         "r1 = concat([a, b])\nr2 = concat([a, c], axis=1)\nr3 = concat([a, c, a], axis=-1)\n"
         "r4 = concat([ai, af], axis=0)\nr5 = concat([bb, bi])\nr6 = concat([z, a, z])\n"
         "r7 = concat([a, d64, b])\nr8 = concat([l1, l2, l1])\nr9 = concat([a])",
         {"a": a, "b": b, "c": c, "ai": ai, "af": af, "bb": bb, "bi": bi, "z": z, "d64": d64,
          "l1": l1, "l2": l2},
         {"r1": np.concatenate([a, b]), "r2": np.concatenate([a, c], 1),
          "r3": np.concatenate([a, c, a], -1),
          "r4": np.concatenate([ai.astype("<f4"), af]),
          "r5": np.concatenate([bb.astype("<i4"), bi]), "r6": np.concatenate([z, a, z]),
          "r7": np.concatenate([a.astype("<f8"), d64, b.astype("<f8")]),
          "r8": np.concatenate([l1, l2, l1]), "r9": a.copy()})

    # slice: Python's clamping, negative steps, empty results
    g = Gen("slice_cases")
    x = g.i("i32", (7, 5), -50, 50)
    combos = [(None, None, 1), (1, 5, 1), (-3, None, 1), (None, -2, 1), (None, None, -1),
              (5, 1, -2), (-1, -8, -1), (100, -100, -1), (-100, 100, 2), (3, 3, 1), (4, 2, 1),
              (None, None, 3), (2, None, -1), (10, None, -3), (None, 100, 1), (-100, None, -1),
              (None, -100, 1), (6, None, 2), (None, 0, -1)]
    body, exp = [], {}
    k = 0
    for axis in (0, 1, -1):
        for (st, sp, step) in combos:
            attrs = "axis=%d" % axis
            if st is not None:
                attrs += ", start=%d" % st
            if sp is not None:
                attrs += ", stop=%d" % sp
            if step != 1 or k % 2:
                attrs += ", step=%d" % step
            n = "r%d" % k
            k += 1
            body.append("%s = slice(x, %s)" % (n, attrs))
            idx = [slice(None)] * 2
            idx[axis] = slice(st, sp, step)
            exp[n] = x[tuple(idx)].copy()
    body.append("d = slice(slice(x, axis=0, step=-2), axis=1, start=1, step=2) * 3")
    exp["d"] = (x[::-2, 1::2] * 3).astype("<i4")
    body.append("e = slice(x)")
    exp["e"] = x.copy()
    case("slice_cases", "\n".join(body), {"x": x}, exp)

    g = Gen("pad_cases")
    x = g.f("f32", (2, 3))
    xi = g.i("i32", (2, 3))
    xb = g.b((2, 2))
    x3 = g.f("f64", (1, 2, 2))
    z = np.zeros((0, 2), "<f4")
    case("pad_cases",
         "r1 = pad(x, [[1, 2], [0, 1]])\nr2 = pad(x, [[0, 0], [2, 2]], value=-1.5)\n"
         "r3 = pad(xi, [[1, 1], [1, 0]], value=7)\nr4 = pad(xb, [[1, 0], [0, 1]], value=1)\n"
         "r5 = pad(x3, [[0, 1], [1, 0], [2, 1]], value=inf)\nr6 = pad(z, [[1, 1], [0, 0]], value=3)\n"
         "r7 = pad(x, [[0, 0], [0, 0]])",
         {"x": x, "xi": xi, "xb": xb, "x3": x3, "z": z},
         {"r1": np.pad(x, ((1, 2), (0, 1))), "r2": np.pad(x, ((0, 0), (2, 2)), constant_values=-1.5),
          "r3": np.pad(xi, ((1, 1), (1, 0)), constant_values=7),
          "r4": np.pad(xb, ((1, 0), (0, 1)), constant_values=True),
          "r5": np.pad(x3, ((0, 1), (1, 0), (2, 1)), constant_values=INF),
          "r6": np.pad(z, ((1, 1), (0, 0)), constant_values=3), "r7": x.copy()})

    g = Gen("gather_cases")
    x = g.f("f32", (5, 4))
    xb = g.b((5, 4))
    il = arr([[0, 4], [2, -1]], "i64")
    ii = arr([3, 0, 3, -4], "i32")
    s = arr(2, "i64")
    case("gather_cases",
         "r1 = gather(x, il)\nr2 = gather(x, ii, axis=1)\nr3 = gather(x, ii, axis=-1)\n"
         "r4 = gather(x, s)\nr5 = gather(x, [0, 2, -5])\nr6 = gather(xb, il, axis=0)\n"
         "r7 = gather(x, s, axis=1)\nr8 = gather(x, slice(ii, stop=0))",
         {"x": x, "xb": xb, "il": il, "ii": ii, "s": s},
         {"r1": np.take(x, il, 0), "r2": np.take(x, ii, 1), "r3": np.take(x, ii, -1),
          "r4": np.take(x, s, 0), "r5": np.take(x, [0, 2, -5], 0), "r6": np.take(xb, il, 0),
          "r7": np.take(x, s, 1), "r8": np.take(x, ii[:0], 0)})
    case("gather_out_of_range", "y = x * 2\nr = gather(y, i)", {"x": x, "i": arr([1, 5], "i64")},
         error=r"out of range", err_line=2)
    case("gather_out_of_range_neg", "r = gather(x, i, axis=1)", {"x": x, "i": arr([[0], [-5]], "i32")},
         error=r"out of range", err_line=1)

    g = Gen("flatten_cases")
    x = g.i("i64", (2, 3, 4, 5))
    case("flatten_cases",
         "r1 = flatten(x)\nr2 = flatten(x, 0)\nr3 = flatten(x, start=2)\nr4 = flatten(x, -1)\n"
         "r5 = flatten(x, start=-3)",
         {"x": x},
         {"r1": x.reshape(2, 60), "r2": x.reshape(120), "r3": x.reshape(2, 3, 20),
          "r4": x.copy(), "r5": x.reshape(2, 60)})

    # cast: every pair; floats carry halves, negatives, NaN, inf and
    # out-of-range values (tir: truncation toward zero, else the minimum)
    for src in ALL:
        name = "cast_from_%s" % src
        g = Gen(name)
        if src in FLOATS:
            v = [2.7, -2.7, 0.5, -0.5, 1.0, -1.0, 0.0, -0.0, 1e-40, 3e9, -3e9, 1e20, -1e20,
                 2147483647.0, -2147483648.0, 16777217.0, 9.3e18, NAN, INF, -INF, 1e300, 123.99]
            x = arr(v, "f64").astype(NPDT[src]) if src == "f32" else arr(v, "f64")
        elif src in INTS:
            v = [0, 1, -1, 7, -7, 16777217, -16777219, INT_MAX[src], INT_MIN[src]]
            if src == "i64":
                v += [2**31, -(2**31) - 1, 2**53 + 1, 2**40 + 3]
            x = arr(v, src)
        else:
            x = np.array([True, False, True])
        body = "\n".join("r_%s = cast(x, %s)" % (d, d) for d in ALL)
        case(name, body, {"x": x}, {"r_%s" % d: R.cast(x, d) for d in ALL})


# ---------------------------------------------------------------- matmul


def matmul_cases():
    shapes = [("vv", (5,), (5,)), ("mv", (3, 5), (5,)), ("vm", (5,), (5, 4)), ("mm", (3, 5), (5, 4)),
              ("bmm", (2, 3, 5), (2, 5, 4)), ("bcast", (2, 1, 3, 5), (4, 5, 2)),
              ("m_b", (3, 5), (2, 5, 4)), ("v_b", (5,), (2, 5, 4)), ("b_v", (2, 3, 5), (5,)),
              ("k0", (3, 0), (0, 4)), ("m0", (0, 5), (5, 4)), ("b1", (1, 3, 5), (6, 5, 2))]
    for dt in NUM:
        name = "matmul_%s" % dt
        g = Gen(name)
        body, inputs, exp, scale = [], {}, {}, {}
        for tag, sa, sb in shapes:
            a, b = g.any(dt, sa, -3, 3), g.any(dt, sb, -3, 3)
            inputs["a_" + tag], inputs["b_" + tag] = a, b
            body.append("%s = a_%s @ b_%s" % (tag, tag, tag))
            if dt in FLOATS:
                exp[tag] = R.rounded(np.matmul(R.f64(a), R.f64(b)), dt)
                scale[tag] = np.matmul(np.abs(R.f64(a)), np.abs(R.f64(b)))
            else:
                exp[tag] = np.matmul(a, b).astype(NPDT[dt])
        body.append("call = matmul(a_mm, b_mm)")
        exp["call"] = exp["mm"]
        if "mm" in scale:
            scale["call"] = scale["mm"]
        case(name, "\n".join(body), inputs, exp, scale=scale)

    g = Gen("matmul_mixed")
    ai, af = g.i("i32", (3, 4)), g.f("f32", (4, 2))
    al = g.i("i64", (4, 2))
    ad = g.f("f64", (4, 2))
    case("matmul_mixed", "r1 = ai @ af\nr2 = ai @ al\nr3 = af @ transpose(ad)\nr4 = ai @ [1, 2, 3, 4]",
         {"ai": ai, "af": af, "al": al, "ad": ad},
         {"r1": R.rounded(np.matmul(R.f64(ai), R.f64(af)), "f32"),
          "r2": np.matmul(ai.astype("<i8"), al),
          "r3": np.matmul(R.f64(af), R.f64(ad).T),
          "r4": np.matmul(ai.astype("<i8"), np.arange(1, 5))},
         scale={"r1": np.matmul(np.abs(R.f64(ai)), np.abs(R.f64(af))),
                "r3": np.matmul(np.abs(R.f64(af)), np.abs(R.f64(ad)).T)})

    # big enough for a blocked kernel: positive entries, so no cancellation
    g = Gen("matmul_larger")
    a, b = g.f("f32", (33, 70), 0, 1), g.f("f32", (70, 17), 0, 1)
    c, d = g.f("f64", (3, 20, 40), -1, 1), g.f("f64", (40, 9), -1, 1)
    case("matmul_larger", "r1 = a @ b\nr2 = c @ d\nr3 = transpose(b) @ transpose(a)",
         {"a": a, "b": b, "c": c, "d": d},
         {"r1": R.rounded(R.f64(a) @ R.f64(b), "f32"), "r2": c @ d,
          "r3": R.rounded(R.f64(b).T @ R.f64(a).T, "f32")},
         scale={"r2": np.abs(c) @ np.abs(d)})

    case("matmul_bool_error", "r = a @ b", {"a": np.ones((2, 2), bool), "b": np.ones((2, 2), bool)},
         error=r"matmul: .*bool", err_line=1)
    case("matmul_inner_error", "r = a @ b", {"a": np.ones((2, 3), "<f4"), "b": np.ones((4, 2), "<f4")},
         error=r"inner dimensions differ", err_line=1)


# ---------------------------------------------------------------- nn


def nn_cases():
    # softmax / log_softmax on several axes
    for dt in ["f32", "f64", "i32"]:
        name = "softmax_%s" % dt
        g = Gen(name)
        x = g.any(dt, (3, 4, 5), -4, 4)
        od = dt if dt in FLOATS else "f32"
        body, exp = [], {}
        for k, ax in enumerate([None, -1, 0, 1, 2, -3]):
            a = "" if ax is None else ", axis=%d" % ax
            axx = -1 if ax is None else ax
            body.append("s%d = softmax(x%s)" % (k, a))
            exp["s%d" % k] = R.rounded(R.softmax(x, axx), od)
            body.append("l%d = log_softmax(x%s)" % (k, a))
            exp["l%d" % k] = R.rounded(R.softmax(x, axx, log=True), od)
        case(name, "\n".join(body), {"x": x}, exp)

    g = Gen("softmax_large")
    x = g.f("f32", (2, 6), 990, 1010)
    xd = g.f("f64", (2, 6), -1010, -990)
    case("softmax_large_values", "r1 = softmax(x)\nr2 = log_softmax(x)\nr3 = softmax(xd, axis=0)\n"
         "r4 = log_softmax(xd)",
         {"x": x, "xd": xd},
         {"r1": R.rounded(R.softmax(x), "f32"), "r2": R.rounded(R.softmax(x, log=True), "f32"),
          "r3": R.softmax(xd, 0), "r4": R.softmax(xd, log=True)})

    for dt in FLOATS:
        x = arr([[1, 2, -INF, 0.5], [NAN, 1, 2, 3], [-INF, 0, -INF, 1], [0, 0, 0, 0]], dt)
        case("softmax_nan_neginf_%s" % dt, "r1 = softmax(x)\nr2 = log_softmax(x)\nr3 = softmax(x, axis=0)",
             {"x": x},
             {"r1": R.rounded(R.softmax(x), dt), "r2": R.rounded(R.softmax(x, log=True), dt),
              "r3": R.rounded(R.softmax(x, 0), dt)})
        # +inf and all -inf rows: NumPy's formula gives NaN for the row
        y = arr([[INF, 1, 2], [-INF, -INF, -INF], [1, INF, INF]], dt)
        case("softmax_inf_rows_%s" % dt, "r1 = softmax(y)\nr2 = log_softmax(y)", {"y": y},
             {"r1": R.rounded(R.softmax(y), dt), "r2": R.rounded(R.softmax(y, log=True), dt)})

    # layernorm / rmsnorm
    for dt in FLOATS:
        name = "norms_%s" % dt
        g = Gen(name)
        x = g.f(dt, (2, 3, 8), -2, 2)
        w, b = g.f(dt, (8,), 0.5, 1.5), g.f(dt, (8,), -1, 1)
        x1 = g.f(dt, (8,), -2, 2)
        xn = g.f(dt, (3, 4))
        xn[1, 2] = NAN
        wn, bn = g.f(dt, (4,)), g.f(dt, (4,))
        case(name,
             "r1 = layernorm(x, w, b)\nr2 = layernorm(x, w, b, eps=0.1)\nr3 = rmsnorm(x, w)\n"
             "r4 = rmsnorm(x, w, eps=0.5)\nr5 = layernorm(x1, w, b)\nr6 = layernorm(xn, wn, bn)\n"
             "r7 = rmsnorm(xn, wn)",
             {"x": x, "w": w, "b": b, "x1": x1, "xn": xn, "wn": wn, "bn": bn},
             {"r1": R.rounded(R.layernorm(x, w, b), dt), "r2": R.rounded(R.layernorm(x, w, b, 0.1), dt),
              "r3": R.rounded(R.rmsnorm(x, w), dt), "r4": R.rounded(R.rmsnorm(x, w, 0.5), dt),
              "r5": R.rounded(R.layernorm(x1, w, b), dt), "r6": R.rounded(R.layernorm(xn, wn, bn), dt),
              "r7": R.rounded(R.rmsnorm(xn, wn), dt)})
    g = Gen("norms_mixed")
    xi = g.i("i32", (3, 6), -5, 5)
    w, b = g.f("f32", (6,)), g.f("f64", (6,))
    case("norms_mixed_dtypes", "r1 = layernorm(xi, w, b)\nr2 = rmsnorm(xi, w)\nr3 = layernorm(xi, w, w)",
         {"xi": xi, "w": w, "b": b},
         {"r1": R.layernorm(xi, w, b), "r2": R.rounded(R.rmsnorm(xi, w), "f32"),
          "r3": R.rounded(R.layernorm(xi, w, w), "f32")})

    # conv2d
    convs = [("plain", (2, 3, 7, 6), (4, 3, 3, 3), False, "", 1, 0),
             ("s2p1", (2, 3, 7, 6), (4, 3, 3, 3), True, ", stride=2, padding=1", 2, 1),
             ("s12p20", (1, 2, 5, 9), (3, 2, 3, 2), True, ", stride=[1, 2], padding=[2, 0]", (1, 2), (2, 0)),
             ("k1", (2, 3, 4, 4), (5, 3, 1, 1), True, "", 1, 0),
             ("s21p01", (1, 3, 6, 7), (2, 3, 2, 3), False, ", stride=[2, 1], padding=[0, 1]", (2, 1), (0, 1)),
             ("full", (1, 1, 3, 3), (2, 1, 3, 3), True, ", padding=2", 1, 2),
             ("s3", (1, 2, 8, 8), (2, 2, 2, 2), False, ", stride=3", 3, 0),
             # a CNN's late layers: few positions, many filters (130: an
             # edge panel of rows), taps past one k-block (864)
             ("late", (1, 96, 9, 9), (130, 96, 3, 3), True, ", stride=2, padding=1", 2, 1),
             ("wide", (2, 64, 7, 7), (96, 64, 3, 3), False, ", padding=1", 1, 1),
             # a stem's 7x7/2: rows of 23 positions read by stride 2, cut
             # at the panels' edges (AVX-512's vector im2col)
             ("stem", (1, 3, 40, 45), (8, 3, 7, 7), True, ", stride=2, padding=3", 2, 3),
             # positions enough for tasks of their own columns (8 images
             # of 34 blocks), whose weights are read where they lie
             ("tasks", (8, 4, 46, 46), (6, 4, 3, 3), True, ", padding=1", 1, 1)]
    for dt in ["f32", "f64", "i32"]:
        name = "conv2d_%s" % dt
        g = Gen(name)
        body, inputs, exp, scale = [], {}, {}, {}
        od = dt if dt in FLOATS else "f32"
        for tag, xs, ws, bias, attrs, st, pd in convs:
            x, w = g.any(dt, xs, -2, 2), g.any(dt, ws, -2, 2)
            inputs["x_" + tag], inputs["w_" + tag] = x, w
            b = None
            if bias:
                b = g.any(dt, (ws[0],), -2, 2)
                inputs["b_" + tag] = b
            args = "x_%s, w_%s%s" % (tag, tag, ", b_" + tag if bias else "")
            body.append("%s = conv2d(%s%s)" % (tag, args, attrs))
            exp[tag] = R.rounded(R.conv2d(x, w, b, st, pd), od)
            scale[tag] = R.conv2d(x, w, b, st, pd, absolute=True)
        case(name, "\n".join(body), inputs, exp, scale=scale)

    # pools
    for dt in ["f32", "f64", "i32", "i64"]:
        name = "pool2d_%s" % dt
        g = Gen(name)
        x = g.any(dt, (2, 3, 6, 7), -9, 9)
        pools = [("k2", "2", 2, None), ("k23s12", "[2, 3], stride=[1, 2]", (2, 3), (1, 2)),
                 ("k3s1", "3, stride=1", 3, 1), ("k1", "1", 1, None), ("whole", "[6, 7]", (6, 7), None),
                 ("k2s3", "kernel=2, stride=3", 2, 3)]
        body, exp = [], {}
        od = dt if dt in FLOATS else "f32"
        for tag, attrs, k, s in pools:
            body.append("max_%s = maxpool2d(x, %s)" % (tag, attrs))
            mp = R.pool2d(x, k, s, True)
            exp["max_" + tag] = R.rounded(mp, dt) if dt in FLOATS else mp.astype(NPDT[dt])
            body.append("avg_%s = avgpool2d(x, %s)" % (tag, attrs))
            exp["avg_" + tag] = R.rounded(R.pool2d(x, k, s, False), od)
        if dt in FLOATS:
            case(name, "\n".join(body), {"x": x}, exp)
            continue
        # ints: maxpool keeps the dtype, avgpool gives f32; two cases
        for kind in ("max", "avg"):
            keep = [ln for ln in body if ln.startswith(kind + "_")]
            case("%spool2d_%s" % (kind, dt), "\n".join(keep), {"x": x},
                 {n: v for n, v in exp.items() if n.startswith(kind + "_")})
    x = arr(np.arange(32).reshape(1, 2, 4, 4), "f32")
    x[0, 0, 0, 1] = NAN
    x[0, 1, 2, 2] = -INF
    x[0, 1, 0, 0] = INF
    case("pool2d_nan_inf", "r1 = maxpool2d(x, 2)\nr2 = avgpool2d(x, 2)\nr3 = maxpool2d(x, 3, stride=1)",
         {"x": x},
         {"r1": R.rounded(R.pool2d(x, 2, None, True), "f32"),
          "r2": R.rounded(R.pool2d(x, 2, None, False), "f32"),
          "r3": R.rounded(R.pool2d(x, 3, 1, True), "f32")})

    # attention (docs/language.md: softmax(q @ k^T / sqrt(d)) @ v, causal masks j > i)
    for dt in ["f32", "f64"]:
        name = "attention_%s" % dt
        g = Gen(name)
        q, k, v = g.f(dt, (2, 4, 8)), g.f(dt, (2, 6, 8)), g.f(dt, (2, 6, 5))
        qs, ks, vs = g.f(dt, (5, 8)), g.f(dt, (5, 8)), g.f(dt, (5, 3))
        qb, kb, vb = g.f(dt, (2, 3, 4, 8)), g.f(dt, (1, 3, 6, 8)), g.f(dt, (2, 1, 6, 4))
        ql = g.f(dt, (7, 8))
        body = ("r1 = attention(q, k, v)\nr2 = attention(q, k, v, causal=true)\n"
                "r3 = attention(qs, ks, vs, causal=true)\nr4 = attention(qs, ks, vs)\n"
                "r5 = attention(qb, kb, vb)\nr6 = attention(qb, kb, vb, causal=true)\n"
                "r7 = attention(ql, ks, vs, causal=true)")
        case(name, body,
             {"q": q, "k": k, "v": v, "qs": qs, "ks": ks, "vs": vs, "qb": qb, "kb": kb, "vb": vb, "ql": ql},
             {"r1": R.rounded(R.attention(q, k, v), dt), "r2": R.rounded(R.attention(q, k, v, True), dt),
              "r3": R.rounded(R.attention(qs, ks, vs, True), dt), "r4": R.rounded(R.attention(qs, ks, vs), dt),
              "r5": R.rounded(R.attention(qb, kb, vb), dt),
              "r6": R.rounded(R.attention(qb, kb, vb, True), dt),
              "r7": R.rounded(R.attention(ql, ks, vs, True), dt)})
    # scores near +-1000: the softmax inside must subtract the row max
    g = Gen("attention_large_scores")
    q, k, v = g.f("f32", (2, 5, 4), -30, 30), g.f("f32", (2, 5, 4), -30, 30), g.f("f32", (2, 5, 3))
    qd = g.f("f64", (3, 4), -40, 40)
    # (f32 scores of 1000 carry an absolute rounding error near 1e-4, which
    # the softmax turns into a relative one: the f32 case allows 2e-4)
    case("attention_large_scores_f32", "r1 = attention(q, k, v)\nr2 = attention(q, k, v, causal=true)",
         {"q": q, "k": k, "v": v},
         {"r1": R.rounded(R.attention(q, k, v), "f32"), "r2": R.rounded(R.attention(q, k, v, True), "f32")},
         tol=(2e-4, 1e-5))
    case("attention_large_scores_f64", "r3 = attention(qd, qd, qd, causal=true)\nr4 = attention(qd, qd, qd)",
         {"qd": qd}, {"r3": R.attention(qd, qd, qd, True), "r4": R.attention(qd, qd, qd)})

    g = Gen("attention_int")
    qi, ki, vi = g.i("i32", (3, 4), -2, 2), g.i("i32", (5, 4), -2, 2), g.i("i64", (5, 2), -2, 2)
    case("attention_int", "r = attention(qi, ki, vi, causal=true)", {"qi": qi, "ki": ki, "vi": vi},
         {"r": R.rounded(R.attention(qi, ki, vi, True), "f32")})


# ---------------------------------------------------------------- creation


def creation_cases():
    case("fill_cases",
         "r1 = zeros([2, 3])\nr2 = ones([3], dtype=bool)\nr3 = zeros([2], dtype=i32)\n"
         "r4 = ones([2, 0], dtype=f64)\nr5 = full([3], 7)\nr6 = full([2, 2], -2.7, dtype=i32)\n"
         "r7 = full([2], 5, dtype=i64)\nr8 = full([], 3.5, dtype=f64)\nr9 = full([2], 0, dtype=bool)\n"
         "r10 = full([2], 2.5, dtype=bool)\nr11 = zeros([])\nr12 = full([2], inf)\n"
         "r13 = full([1, 2], 0.1, dtype=f64)\nr14 = full([2], -7, dtype=f32)\nr15 = ones([2, 2], dtype=i64)",
         expect={"r1": np.zeros((2, 3), "<f4"), "r2": np.ones(3, bool), "r3": np.zeros(2, "<i4"),
                 "r4": np.ones((2, 0), "<f8"), "r5": np.full(3, 7, "<f4"), "r6": np.full((2, 2), -2, "<i4"),
                 "r7": np.full(2, 5, "<i8"), "r8": np.full((), 3.5, "<f8"), "r9": np.zeros(2, bool),
                 "r10": np.ones(2, bool), "r11": np.zeros((), "<f4"), "r12": np.full(2, INF, "<f4"),
                 "r13": np.full((1, 2), 0.1, "<f8"), "r14": np.full(2, -7, "<f4"),
                 "r15": np.ones((2, 2), "<i8")})

    def ar(start, stop, step, dt):
        n = max(0, math.ceil((stop - start) / step))
        return R.rounded(start + np.arange(n, dtype=np.float64) * step, dt) if dt in FLOATS \
            else (start + np.arange(n, dtype=np.int64) * step).astype(NPDT[dt])

    case("arange_cases",
         "r1 = arange(5)\nr2 = arange(2, 9, 3)\nr3 = arange(5, 0, -1)\nr4 = arange(0, 1, 0.25)\n"
         "r5 = arange(0.5)\nr6 = arange(3, dtype=f64)\nr7 = arange(-3, 3, dtype=i32)\n"
         "r8 = arange(1, 2, 0.1)\nr9 = arange(10, 0)\nr10 = arange(-1, -10, -4)\n"
         "r11 = arange(0, 1, 0.1, dtype=f64)\nr12 = arange(start=2, stop=5)\nr13 = arange(0, -2.5, -0.5)",
         expect={"r1": ar(0, 5, 1, "i64"), "r2": ar(2, 9, 3, "i64"), "r3": ar(5, 0, -1, "i64"),
                 "r4": ar(0, 1, 0.25, "f32"), "r5": ar(0, 0.5, 1, "f32"), "r6": ar(0, 3, 1, "f64"),
                 "r7": ar(-3, 3, 1, "i32"), "r8": ar(1, 2, 0.1, "f32"), "r9": ar(10, 0, 1, "i64"),
                 "r10": ar(-1, -10, -4, "i64"), "r11": ar(0, 1, 0.1, "f64"), "r12": ar(2, 5, 1, "i64"),
                 "r13": ar(0, -2.5, -0.5, "f32")})

    # element i is start + i * step in float64, rounded once to the dtype
    # (not NumPy's own float32 arange, whose step is (start + step) -
    # start); bit for bit, long enough for every vector path's lanes and
    # tail, alone and computed inside a fused kernel
    case("arange_exact",
         "r1 = arange(0.1, 1000.3, 0.37)\nr2 = arange(-5, 7, 0.013, dtype=f64)\n"
         "r3 = arange(100003, dtype=f32) * 1\nr4 = arange(3, -2.5, -0.0071) + 0",
         expect={"r1": ar(0.1, 1000.3, 0.37, "f32"), "r2": ar(-5, 7, 0.013, "f64"),
                 "r3": ar(0, 100003, 1, "f32"), "r4": ar(3, -2.5, -0.0071, "f32")},
         tol=(0.0, 0.0))

    # linspace: NumPy's float64 linspace (i * step + start, stop at the end
    # with endpoint), rounded once to the dtype: bit for bit
    def ls(a, b, n, endpoint, dt):
        return R.rounded(np.linspace(a, b, n, endpoint=endpoint), dt)

    case("linspace_cases",
         "r1 = linspace(0, 1, 5)\nr2 = linspace(-1.5, 2.25, 7, dtype=f64)\nr3 = linspace(0, 1, 4, endpoint=false)\n"
         "r4 = linspace(2, 2, 3)\nr5 = linspace(3, -7.1, 1)\nr6 = linspace(0, 1, 0)\n"
         "r7 = linspace(0.1, 0.7, 1001)\nr8 = linspace(1e-300, 2e-300, 9, dtype=f64)\n"
         "r9 = linspace(10, -3, 100003, endpoint=false) * 1\nr10 = linspace(-1, 1, 50)\n"
         "r11 = linspace(0, 1, 1, endpoint=false, dtype=f64)",
         expect={"r1": ls(0, 1, 5, True, "f32"), "r2": ls(-1.5, 2.25, 7, True, "f64"),
                 "r3": ls(0, 1, 4, False, "f32"), "r4": ls(2, 2, 3, True, "f32"),
                 "r5": ls(3, -7.1, 1, True, "f32"), "r6": ls(0, 1, 0, True, "f32"),
                 "r7": ls(0.1, 0.7, 1001, True, "f32"), "r8": ls(1e-300, 2e-300, 9, True, "f64"),
                 "r9": ls(10, -3, 100003, False, "f32"), "r10": ls(-1, 1, 50, True, "f32"),
                 "r11": ls(0, 1, 1, False, "f64")},
         tol=(0.0, 0.0))
    case("linspace_int_dtype", "r1 = linspace(0, 1, 5, dtype=i32)", error=r"dtype must be a float type", err_line=1)
    case("linspace_negative", "r1 = linspace(0, 1, -1)", error=r"num must be >= 0", err_line=1)

    # generators computed inside fused kernels (tests/golden/explain-generators.tir's
    # program, y smaller): the values NumPy gives
    def gens():
        y = np.maximum(R.rand([512, 512], 1, "f32", True) * np.float32(0.1), np.float32(0))
        r = R.rand([64, 64], 2, "f32", False)
        n = R.rand([64, 64], 3, "f32", True)
        w = R.rand([64, 32], 4, "f32", False)
        x = R.rand([8, 64], 5, "f32", False)
        g = (ar(0, 2, 0.5, "f32") * ls(0, 1, 4, True, "f32") + np.eye(4, dtype="<f4")).T + np.float32(0.25)
        return {"y": y, "a": np.exp(r) + np.float32(1), "b": (r * r).sum(axis=-1, dtype=np.float64).astype("<f4"),
                "c": n * np.float32(2) + np.float32(1), "d": n.sum(axis=-1, dtype=np.float64).astype("<f4"),
                "h": np.tanh(x @ w), "g": g}
    case("generators_fused",
         "y = relu(randn([512, 512], seed=1) * 0.1)\nr = rand([64, 64], seed=2)\na = exp(r) + 1\n"
         "b = sum(r * r, axis=-1)\nn = randn([64, 64], seed=3)\nc = n * 2 + 1\nd = sum(n, axis=-1)\n"
         "w = rand([64, 32], seed=4)\nh = tanh(rand([8, 64], seed=5) @ w)\n"
         "g = transpose(arange(0, 2, 0.5) * linspace(0, 1, 4) + eye(4)) + full([4, 4], 0.25)",
         expect=gens())

    case("eye_cases",
         "r1 = eye(3)\nr2 = eye(0)\nr3 = eye(2, dtype=i64)\nr4 = eye(4, dtype=bool)\nr5 = eye(1, dtype=f64)\n"
         "r6 = eye(3, dtype=i32)",
         expect={"r1": np.eye(3, dtype="<f4"), "r2": np.eye(0, dtype="<f4"), "r3": np.eye(2, dtype="<i8"),
                 "r4": np.eye(4, dtype=bool), "r5": np.eye(1, dtype="<f8"), "r6": np.eye(3, dtype="<i4")})

    # rand: bit-exact
    rands = [("rand([3, 5])", [3, 5], 0, "f32", False),
             ("rand([2, 3, 4], seed=7, dtype=f64)", [2, 3, 4], 7, "f64", False),
             ("rand([], seed=123456789012)", [], 123456789012, "f32", False),
             ("rand([0, 3], seed=1)", [0, 3], 1, "f32", False),
             ("rand([1200], seed=4294967301, dtype=f64)", [1200], 4294967301, "f64", False),
             ("rand([7, 300], seed=2)", [7, 300], 2, "f32", False),
             ("rand([5], seed=-1, dtype=f64)", [5], -1, "f64", False),
             ("rand([2, 2], seed=9223372036854775807)", [2, 2], 2**63 - 1, "f32", False)]
    body = "\n".join("r%d = %s" % (k, e) for k, e in enumerate(r[0] for r in rands))
    case("rand_bitexact", body,
         expect={"r%d" % k: R.rand(s, sd, dt, nm) for k, (_, s, sd, dt, nm) in enumerate(rands)},
         tol=(0.0, 0.0))
    # randn f32 is computed in f32 by its definition, which oracle_ref
    # follows step by step: bit-exact (randnf_selftest, run first, checks
    # that definition against float64 math)
    randns = [("randn([3, 5])", [3, 5], 0, "f32", True),
              ("randn([1000], seed=1)", [1000], 1, "f32", True),
              ("randn([], seed=5)", [], 5, "f32", True),
              ("randn([70001], seed=-3)", [70001], -3, "f32", True)]
    body = "\n".join("r%d = %s" % (k, e) for k, e in enumerate(r[0] for r in randns))
    body += "\nscaled = randn([784, 4], seed=1) * 0.05"
    exp = {"r%d" % k: R.rand(s, sd, dt, nm) for k, (_, s, sd, dt, nm) in enumerate(randns)}
    exp["scaled"] = R.rounded(R.f64(R.rand([784, 4], 1, "f32", True)) * R.f64(np.float32(0.05)), "f32")
    case("randn_f32_bitexact", body, expect=exp, tol=(0.0, 0.0))
    # randn f64: the same Box-Muller in float64 (tir's own log and cos may
    # differ from NumPy's in the last places)
    randns = [("randn([10, 10], seed=4294967301, dtype=f64)", [10, 10], 4294967301, "f64", True),
              ("randn([4, 2, 3], seed=99, dtype=f64)", [4, 2, 3], 99, "f64", True)]
    body = "\n".join("r%d = %s" % (k, e) for k, e in enumerate(r[0] for r in randns))
    exp = {"r%d" % k: R.rand(s, sd, dt, nm) for k, (_, s, sd, dt, nm) in enumerate(randns)}
    case("randn_cases", body, expect=exp, tol=(1e-6, 1e-12))


# ---------------------------------------------------------------- literals


def literal_cases():
    g = Gen("weak_scalars")
    x = g.i("i32", (2, 3), -9, 9)
    y = g.f("f64", (2, 3))
    z = g.f("f32", (2, 3))
    b = g.b((2, 3))
    w = g.i("i64", (2, 3), -9, 9)
    f32 = np.float32
    body = """
r1 = x * 2
r2 = x * 0.5
r3 = 2 - x
r4 = x + true
r5 = x / 2
r6 = x / 2.0
r7 = mod(x, -3)
r8 = y * 0.1
r9 = y + 1e-3
r10 = y * 3
r11 = z * 0.1
r12 = z + 16777217
r13 = b + 1
r14 = b * 2.5
r15 = maximum(b, false)
r16 = w * 0.5
r17 = x + [1, 2, 3]
r18 = y * [0.5, 1, 2]
r19 = [1, 2, 3] * 2
r20 = [[true], [false]]
r21 = 2 * 3
r22 = 1.5 + 1
r23 = z * inf
r24 = maximum(z, -inf)
r25 = gt(x, 2.5)
r26 = 0.1 * y
r27 = 10 / 4
r28 = -7 / 2
r29 = mod(-7, 2)
r30 = [1.5, -2, 0.25] * x
r31 = pow(z, 2)
r32 = pow(x, 2)
r33 = pow(2, x * 0 + 3)
r34 = w * 4611686018427387904
r35 = nan
r36 = 0.1
r37 = exp(1)
r38 = -inf
"""
    exp = {
        "r1": (x * 2).astype("<i4"),
        "r2": x.astype("<f4") * f32(0.5),
        "r3": (2 - x).astype("<i4"),
        "r4": (x + 1).astype("<i4"),
        "r5": (x // 2).astype("<i4"),
        "r6": x.astype("<f4") / f32(2.0),
        "r7": np.mod(x, -3).astype("<i4"),
        "r8": y * 0.1,
        "r9": y + 1e-3,
        "r10": y * 3.0,
        "r11": z * f32(0.1),
        "r12": z + f32(16777216.0),
        "r13": b.astype("<i8") + 1,
        "r14": b.astype("<f4") * f32(2.5),
        "r15": b.copy(),
        "r16": w.astype("<f4") * f32(0.5),
        "r17": x.astype("<i8") + np.array([1, 2, 3]),
        "r18": y * np.array([0.5, 1, 2]),
        "r19": np.array([2, 4, 6], "<i8"),
        "r20": np.array([[True], [False]]),
        "r21": np.array(6, "<i8"),
        "r22": np.array(2.5, "<f4"),
        "r23": z * f32(INF),
        "r24": z.copy(),
        "r25": x.astype("<f4") > f32(2.5),
        "r26": 0.1 * y,
        "r27": np.array(2, "<i8"),
        "r28": np.array(-4, "<i8"),
        "r29": np.array(1, "<i8"),
        "r30": np.array([1.5, -2, 0.25], "<f4") * x.astype("<f4"),
        "r31": R.rounded(R.f64(z) ** 2, "f32"),
        "r32": (x * x).astype("<i4"),
        "r33": np.full((2, 3), 8, "<i4"),
        "r34": (w * np.int64(4611686018427387904)).astype("<i8"),
        "r35": np.array(NAN, "<f4"),
        "r36": np.array(0.1, "<f4"),
        "r37": np.array(math.e, "<f4"),
        "r38": np.array(-INF, "<f4"),
    }
    with np.errstate(all="ignore"):
        case("weak_scalars", body, {"x": x, "y": y, "z": z, "b": b, "w": w}, exp)

    # f32 arithmetic is correctly rounded, and a float literal beside an
    # f32 tensor is the f32 nearest the literal: bit-exact
    g = Gen("f32_arith_exact")
    z, u = g.f("f32", (4, 6), -5, 5), g.f("f32", (4, 6), 0.5, 5)
    f = np.float32
    case("f32_arith_exact",
         "r1 = z * 0.1\nr2 = z + 0.3\nr3 = z / 0.7\nr4 = z + u\nr5 = z - u\nr6 = z * u\nr7 = z / u\n"
         "r8 = 1 / u\nr9 = sqrt(u)",
         {"z": z, "u": u},
         {"r1": z * f(0.1), "r2": z + f(0.3), "r3": z / f(0.7), "r4": z + u, "r5": z - u, "r6": z * u,
          "r7": z / u, "r8": f(1) / u, "r9": np.sqrt(u)}, tol=(0.0, 0.0))

    # every float literal is the exact double in f64 arithmetic
    y = arr([1.0, 3.0, 7.0], "f64")
    case("f64_literal_exact", "r1 = y * 0.1\nr2 = y + 0.3\nr3 = y / 0.7\nr4 = y - 1e-17",
         {"y": y}, {"r1": y * 0.1, "r2": y + 0.3, "r3": y / 0.7, "r4": y - 1e-17}, tol=(0.0, 0.0))


# ---------------------------------------------------------------- files


def safetensors(tensors):
    """bytes of a .safetensors file: u64 LE header size, JSON, data."""
    names = {"f32": "F32", "f64": "F64", "i32": "I32", "i64": "I64", "bool": "BOOL"}
    header, data, off = {"__metadata__": {"format": "pt"}}, b"", 0
    for n, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        header[n] = {"dtype": names[R.dtname(a)], "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def file_cases():
    g = Gen("load_files")
    xa = g.f("f64", (3, 2))
    xi = g.i("i32", (4,))
    xb = g.b((2, 2))
    w = g.f("f32", (2, 3))
    bias = g.i("i64", (3,))
    mask = g.b((2, 3))
    sc = arr(-1.25, "f64")
    iv = g.i("i32", (2, 2))
    st = safetensors({"w": w, "bias": bias, "mask": mask, "sc": sc, "iv": iv})
    case("load_files",
         'a = load("x.npy")\nr1 = a * 2\nr2 = load("xi.npy") + 1\nr3 = load("xb.npy")\n'
         'r4 = load("m.safetensors", "w")\nr5 = load("m.safetensors", "bias")\n'
         'r6 = load("m.safetensors", "mask")\nr7 = load("m.safetensors", "sc")\n'
         'r8 = load("m.safetensors", "w") @ transpose(load("m.safetensors", "w"))\n'
         'r9 = load("m.safetensors", "iv")',
         files={"x.npy": xa, "xi.npy": xi, "xb.npy": xb, "m.safetensors": st},
         expect={"r1": xa * 2, "r2": xi + np.int32(1), "r3": xb, "r4": w, "r5": bias, "r6": mask,
                 "r7": sc, "r8": R.rounded(R.f64(w) @ R.f64(w).T, "f32"), "r9": iv})


# ---------------------------------------------------------------- fn and for


def lang_cases():
    """A 4-layer perceptron written with fn and for (issue 15): the loop
    unrolled, each call typed and expanded, int parameters in slice bounds
    and in load names ("h.{i}.w"); the same network in NumPy, layer by
    layer in f64 rounded to f32 as tir computes it."""
    g = Gen("fn_mlp")
    d, n, layers = 16, 8, 4
    x = g.f("f32", (n, d), -1, 1)
    w = g.f("f32", (layers, d, d), -0.5, 0.5)
    b = g.f("f32", (layers, d), -0.1, 0.1)

    def dense(h, i):
        return (R.rounded(R.f64(h) @ R.f64(w[i]), "f32") + b[i]).astype(np.float32)

    h = x
    hs = []
    for i in range(layers - 1):
        h = np.maximum(dense(h, i), np.float32(0))
        hs.append(h)
    logits = dense(h, layers - 1)
    z = R.f64(logits) - R.f64(logits).max(axis=-1, keepdims=True)
    sm = R.rounded(np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True), "f32")
    tol = (1e-5, 1e-6)
    case("fn_mlp_slices",
         "fn dense(x, w, b, i) {\n"
         "  wi = reshape(slice(w, axis=0, start=i, stop=i + 1), [%d, %d])\n"
         "  bi = reshape(slice(b, axis=0, start=i, stop=i + 1), [%d])\n"
         "  return x @ wi + bi\n"
         "}\n"
         "fn layer(x, w, b, i) {\n"
         "  return relu(dense(x, w, b, i))\n"
         "}\n"
         "h = x\n"
         "for i in range(%d) {\n"
         "  h = layer(h, w, b, i)\n"
         "}\n"
         "r1 = h\n"
         "r2 = softmax(dense(h, w, b, %d), axis=-1)\n"
         "r3 = dense_2_wi\n" % (d, d, d, layers - 1, layers - 1),
         {"x": x, "w": w, "b": b},
         {"r1": hs[-1], "r2": sm, "r3": w[2]}, tol=tol)
    st = safetensors(dict([("h.%d.w" % i, w[i]) for i in range(layers)] +
                          [("h.%d.b" % i, b[i]) for i in range(layers)]))
    case("fn_mlp_load",
         "fn block(x, i) {\n"
         "  y = x @ load(\"m.safetensors\", \"h.{i}.w\") + load(\"m.safetensors\", \"h.{i}.b\")\n"
         "  return y\n"
         "}\n"
         "for i in range(%d) {\n"
         "  x = relu(block(x, i))\n"
         "}\n"
         "r1 = x\n"
         "r2 = softmax(block(x, %d), axis=-1)\n" % (layers - 1, layers - 1),
         {"x": x}, {"r1": hs[-1], "r2": sm}, files={"m.safetensors": st}, tol=tol)


# ---------------------------------------------------------------- errors


def error_cases():
    pos = r"(^|\n)case\.tir:\d+:\d+: error: "
    for dt in INTS:
        case("int_div_zero_%s" % dt, "q = a + 1\nr = a / b", {"a": arr([4, 5, 6], dt), "b": arr([1, 0, 2], dt)},
             error=pos + r".*division by zero", err_line=2)
        case("int_mod_zero_%s" % dt, "r = mod(a, b)", {"a": arr([4, 5, 6], dt), "b": arr([1, 2, 0], dt)},
             error=pos + r".*division by zero", err_line=1)
    case("int_div_zero_literal", "r = a / 0", {"a": arr([4, 5], "i64")},
         error=pos + r".*division by zero", err_line=1)
    case("int_pow_negative_exponent", "r = pow(a, b)", {"a": arr([2, 3], "i32"), "b": arr([1, -1], "i32")},
         error=pos + r"pow", err_line=1)
    x = np.ones((2, 2), "<f4")
    case("to_no_remote", 'r = to(x, "remote:1")', {"x": x}, error=pos + r"to: no device remote:1: no --remote",
         err_line=1)
    case("to_bad_device", 'r = to(x, "gpu:0")', {"x": x}, error=pos + r"to: no device 'gpu:0'", err_line=1)
    case("to_cpu_is_x", 'r = to(x * 2.0, "cpu") + 1.0', {"x": x}, expect={"r": x * 2 + 1})
    # (operands on two devices need a remote: tests/net/devices_test.py)
    case("all_reduce_unsharded", "r = all_reduce(x, op=sum)", {"x": x},
         error=pos + r"all_reduce: x is not sharded", err_line=1)
    case("shard_no_remote", "r = shard(x, axis=0)", {"x": x}, error=pos + r"shard: no devices to shard over",
         err_line=1)
    case("rand_int_dtype_error", "r = rand([2], dtype=i32)", error=pos + r"rand: dtype", err_line=1)


# ---------------------------------------------------------------- formatting


def formatting_cases():
    xd = arr([NAN, INF, -INF, 0.1, -0.0, 1e-300, 1.7976931348623157e308, 5e-324, 1 / 3, -123456789.125], "f64")
    xf = arr([NAN, INF, -INF, 0.1, 3.4028235e38, 1e-45, -1 / 3, 16777216.0], "f32")
    xl = arr([INT_MIN["i64"], INT_MAX["i64"], 0, -1], "i64")
    xi = arr([INT_MIN["i32"], INT_MAX["i32"], 0, -1], "i32")
    xb = np.array([[True, False], [False, True]])
    e = np.zeros((2, 0, 3), "<f4")
    s = arr(-0.5, "f64")
    big = np.arange(1500, dtype="<i8").reshape(3, 500)
    inputs = {"xd": xd, "xf": xf, "xl": xl, "xi": xi, "xb": xb, "e": e, "s": s, "big": big}
    body = "\n".join("p_%s = %s" % (n, n) for n in inputs)
    exp = {"p_%s" % n: a.copy() for n, a in inputs.items()}

    def check_default(st, out, err):
        if st != 0:
            return "default-precision run: exit %s" % st
        want_tok = {
            "p_xd": ["nan" if v != v else ("inf" if v > 0 else "-inf") if abs(v) == INF else "%.6g" % v
                     for v in xd.tolist()],
            "p_xf": ["nan" if v != v else ("inf" if v > 0 else "-inf") if abs(v) == INF else "%.6g" % v
                     for v in xf.astype(np.float64).tolist()],
        }
        m = {}
        block = None
        for line in out.split("\n"):
            h = re.match(r"^(p_\w+): ", line)
            if h:
                block = h.group(1)
                m[block] = ""
            elif block:
                m[block] += line
        for n, toks in want_tok.items():
            got = [t.strip() for t in m.get(n, "").strip("[]").split(",")]
            if got != toks:
                return "default precision: %s printed %s, expected %s" % (n, got, toks)
        return None

    case("format_values", body, inputs, exp, check_default_format=check_default)


# ---------------------------------------------------------------- views and size


def view_cases():
    """Ops on strided views (transpose, slice, expand) and chains of them:
    what a reference executor that keeps views must get right."""
    g = Gen("view_chains")
    x = g.f("f32", (4, 5, 6))
    m = g.f("f64", (6, 5))
    xi = g.i("i64", (4, 6), -9, 9)
    img = g.f("f32", (1, 2, 9, 8))
    w = g.f("f32", (3, 2, 3, 3))
    xt = x.transpose(2, 0, 1)
    body = """
r1 = reshape(transpose(x, [2, 0, 1]), [6, -1])
r2 = exp(slice(x, axis=2, step=-1))
r3 = sum(transpose(x), axis=0)
r4 = slice(transpose(m), axis=1, start=1, step=2) @ slice(m, axis=0, start=0, stop=3)
r5 = concat([transpose(xi), slice(transpose(xi), axis=0, step=-2)])
r6 = gather(transpose(x, [1, 2, 0]), [4, 0], axis=0)
r7 = pad(slice(x, axis=1, start=-2, step=-1), [[0, 1], [1, 0], [0, 0]], value=-1)
r8 = cast(transpose(xi), f32)
r9 = sum(expand(slice(m, axis=1, stop=1), [6, 4]), axis=1)
r10 = softmax(transpose(x, [0, 2, 1]), axis=1)
r11 = layernorm(transpose(x, [1, 0, 2]), reshape(slice(m, axis=1, stop=1), [6]), zeros([6]))
r12 = conv2d(slice(img, axis=2, step=-1), w, padding=1)
r13 = flatten(transpose(x, [1, 0, 2]))
r14 = maxpool2d(transpose(img, [0, 1, 3, 2]), 2)
r15 = x * transpose(x, [0, 1, 2]) - slice(x, axis=0, step=1)
r16 = argmax(transpose(x, [2, 1, 0]), axis=-1)
r17 = unsqueeze(slice(xi, axis=1, start=1, stop=4), 1) + expand(reshape(slice(xi, axis=1, stop=3), [4, 1, 3]), [4, 2, 3])
r18 = where(gt(transpose(xi), 0), transpose(xi), slice(transpose(xi), axis=0, step=-1))
r19 = attention(transpose(x, [0, 2, 1]), slice(transpose(x, [0, 2, 1]), axis=1, step=-1), transpose(x, [0, 2, 1]), causal=true)
"""
    xr = x[:, :, ::-1]
    mcol = m[:, 0]
    xt021 = x.transpose(0, 2, 1)
    exp = {
        "r1": xt.reshape(6, -1).copy(),
        "r2": R.unary("exp", np.ascontiguousarray(xr)),
        "r3": R.reduce("sum", x.transpose(), 0),
        "r4": (m.T[:, 1::2] @ m[0:3]),
        "r5": np.concatenate([xi.T, xi.T[::-2]]),
        "r6": np.take(x.transpose(1, 2, 0), [4, 0], 0),
        "r7": np.pad(x[:, -2::-1], ((0, 1), (1, 0), (0, 0)), constant_values=-1),
        "r8": xi.T.astype("<f4"),
        "r9": np.broadcast_to(m[:, :1], (6, 4)).sum(1),
        "r10": R.rounded(R.softmax(xt021, 1), "f32"),
        "r11": R.rounded(R.layernorm(x.transpose(1, 0, 2), mcol, np.zeros(6)), "f64"),
        "r12": R.rounded(R.conv2d(img[:, :, ::-1], w, None, 1, 1), "f32"),
        "r13": x.transpose(1, 0, 2).reshape(5, -1).copy(),
        "r14": R.rounded(R.pool2d(np.ascontiguousarray(img.transpose(0, 1, 3, 2)), 2, None, True), "f32"),
        "r15": R.rounded(R.f64(x) * R.f64(x) - R.f64(x), "f32"),
        "r16": R.reduce("argmax", x.transpose(2, 1, 0), -1),
        "r17": xi[:, None, 1:4] + np.broadcast_to(xi[:, :3].reshape(4, 1, 3), (4, 2, 3)),
        "r18": np.where(xi.T > 0, xi.T, xi.T[::-1]),
        "r19": R.rounded(R.attention(xt021, xt021[:, ::-1], xt021, True), "f32"),
    }
    case("view_chains", body, {"x": x, "m": m, "xi": xi, "img": img, "w": w}, exp,
         scale={"r4": np.abs(m.T[:, 1::2]) @ np.abs(m[0:3]),
                "r12": R.conv2d(img[:, :, ::-1], w, None, 1, 1, absolute=True),
                "r3": R.reduce_scale("sum", x.transpose(), 0)})

    # slices and flips of every dtype
    for dt in ALL:
        name = "slice_%s" % dt
        g = Gen(name)
        x = g.any(dt, (3, 4, 5), -9, 9)
        case(name,
             "r1 = slice(x, axis=2, step=-2)\nr2 = slice(x, axis=0, start=-1, stop=-4, step=-1)\n"
             "r3 = slice(slice(x, axis=1, start=1), axis=-1, start=10)\nr4 = slice(x, axis=1, start=-9, stop=2)",
             {"x": x},
             {"r1": x[:, :, ::-2].copy(), "r2": x[-1:-4:-1].copy(), "r3": x[:, 1:, 10:].copy(),
              "r4": x[:, -9:2].copy()})


def size_cases():
    """Tensors large enough for chunked, vectorized or threaded paths."""
    g = Gen("large_tensors")
    x = g.f("f32", (300, 700), -2, 2)
    y = g.f("f32", (700,), -2, 2)
    xi = g.i("i32", (300, 700), -50, 50)
    body = ("r1 = exp(x) + x * 2\nr2 = sum(x, axis=0)\nr3 = sum(x, axis=1)\nr4 = max(x)\nr5 = x * y - y\n"
            "r6 = mod(xi, 7) + xi / 3\nr7 = argmin(x, axis=0)\nr8 = softmax(x)\nr9 = mean(xi, axis=1)\n"
            "r10 = tanh(x)\nr11 = sum(xi)\nr12 = lt(x, y)")
    with np.errstate(all="ignore"):
        exp = {"r1": R.rounded(np.exp(R.f64(x)) + R.f64(x) * 2, "f32"),
               "r2": R.reduce("sum", x, 0), "r3": R.reduce("sum", x, 1), "r4": R.reduce("max", x),
               "r5": R.rounded(R.f64(x) * R.f64(y) - R.f64(y), "f32"),
               "r6": (np.mod(xi, 7) + xi // 3).astype("<i4"), "r7": R.reduce("argmin", x, 0),
               "r8": R.rounded(R.softmax(x), "f32"), "r9": R.reduce("mean", xi, 1),
               "r10": R.unary("tanh", x), "r11": R.reduce("sum", xi), "r12": x < y}
    case("large_tensors", body, {"x": x, "y": y, "xi": xi}, exp,
         scale={"r2": R.reduce_scale("sum", x, 0), "r3": R.reduce_scale("sum", x, 1),
                "r5": R.f64(np.abs(x * y)) + np.abs(R.f64(y)),
                "r1": np.exp(R.f64(x)) + np.abs(R.f64(x)) * 2})


def accuracy_cases():
    """Statistics of values far from zero: NumPy's two-pass answers."""
    g = Gen("var_offset")
    x = (1000 + g.f("f64", (4, 64), -1, 1)).astype("<f4")
    xd = 1e4 + g.f("f64", (4, 64), -1, 1)
    w, b = np.ones(64, "<f4"), np.zeros(64, "<f4")
    case("var_offset",
         "r1 = var(x, axis=1)\nr2 = var(xd, axis=-1)\nr3 = layernorm(x, w, b)\nr4 = var(xd)\n"
         "r5 = mean(x, axis=1)",
         {"x": x, "xd": xd, "w": w, "b": b},
         {"r1": R.reduce("var", x, 1), "r2": R.reduce("var", xd, -1),
          "r3": R.rounded(R.layernorm(x, w, b), "f32"), "r4": R.reduce("var", xd),
          "r5": R.reduce("mean", x, 1)})


def more_dtype_cases():
    g = Gen("clip_i64_logic_mixed")
    xl = g.i("i64", (3, 4), -20, 20)
    lo = g.i("i64", (4,), -5, 0)
    a, bb = with_specials(g, "f32", (3, 4), specials=[NAN, 0.0, -0.0, 1.0]), g.b((3, 4))
    ii = g.i("i32", (3, 4), -1, 1)
    case("clip_i64_logic_mixed",
         "r1 = clip(xl, lo, 7)\nr2 = clip(xl, -3, 3)\nr3 = and(a, bb)\nr4 = or(ii, a)\nr5 = and(ii, true)\n"
         "r6 = where(true, xl, lo)\nr7 = not(ii)",
         {"xl": xl, "lo": lo, "a": a, "bb": bb, "ii": ii},
         {"r1": np.minimum(np.maximum(xl, lo), 7), "r2": np.clip(xl, -3, 3),
          "r3": (a != 0) & bb, "r4": (ii != 0) | (a != 0), "r5": ii != 0,
          "r6": np.broadcast_to(xl, (3, 4)).copy(), "r7": ii == 0})

    g = Gen("float_pow_literals")
    a = arr([-2.0, -3.0, 0.0, -0.0, 2.0, 4.0, -1.5, NAN], "f32")
    case("float_pow_literals",
         "r1 = pow(a, 2)\nr2 = pow(a, 3.0)\nr3 = pow(a, -1)\nr4 = pow(a, 0.5)\nr5 = pow(a, 0)\n"
         "r6 = pow(2, a)\nr7 = a / 0\nr8 = -a / 0\nr9 = mod(a, 0)",
         {"a": a},
         {"r1": R.binary("pow", a, arr(2, "f32")), "r2": R.binary("pow", a, arr(3, "f32")),
          "r3": R.binary("pow", a, arr(-1, "f32")), "r4": R.binary("pow", a, arr(0.5, "f32")),
          "r5": R.binary("pow", a, arr(0, "f32")), "r6": R.binary("pow", arr(2, "f32"), a),
          "r7": R.binary("div", a, arr(0, "f32")), "r8": R.binary("div", -a, arr(0, "f32")),
          "r9": R.binary("mod", a, arr(0, "f32"))})

    case("fill_cast_rule",
         "r1 = full([2], nan, dtype=f64)\nr2 = full([2], -inf, dtype=i32)\nr3 = full([2], 1e10, dtype=i32)\n"
         "r4 = full([2], 1e10, dtype=i64)\nr5 = arange(5, dtype=f32)\nr6 = full([2], -0.9, dtype=i64)\n"
         "r7 = full([2], nan, dtype=bool)",
         expect={"r1": np.full(2, NAN, "<f8"), "r2": np.full(2, INT_MIN["i32"], "<i4"),
                 "r3": np.full(2, INT_MIN["i32"], "<i4"), "r4": np.full(2, 10**10, "<i8"),
                 "r5": np.arange(5, dtype="<f4"), "r6": np.zeros(2, "<i8"), "r7": np.ones(2, bool)})

    g = Gen("conv_mixed_bias")
    x, w = g.f("f32", (1, 2, 5, 5)), g.f("f32", (3, 2, 3, 3))
    bd = g.f("f64", (3,))
    xi, wi, bi = g.i("i32", (1, 2, 4, 4), -3, 3), g.i("i32", (2, 2, 2, 2), -3, 3), g.i("i64", (2,), -3, 3)
    case("conv_mixed_bias", "r1 = conv2d(x, w, bd)\nr2 = conv2d(xi, wi, bi, stride=2)\nr3 = conv2d(x, w, bias=bd, padding=[1, 0])",
         {"x": x, "w": w, "bd": bd, "xi": xi, "wi": wi, "bi": bi},
         {"r1": R.conv2d(x, w, bd), "r2": R.rounded(R.conv2d(xi, wi, bi, 2), "f32"),
          "r3": R.conv2d(x, w, bd, 1, (1, 0))},
         scale={"r1": R.conv2d(x, w, bd, absolute=True), "r3": R.conv2d(x, w, bd, 1, (1, 0), absolute=True)})



def edge_cases():
    """Size-1 and size-0 axes through nn, matmul and chains."""
    g = Gen("nn_edges")
    c1 = g.f("f32", (3, 1))
    e = np.zeros((0, 4), "<f4")
    eb = np.zeros((0, 3, 4), "<f8")
    m = g.f("f64", (4, 2))
    x = g.f("f32", (4, 5))
    w, b = g.f("f32", (4,)), g.f("f32", (4,))
    cnd = g.b((2,))
    case("nn_edges",
         "r1 = softmax(c1)\nr2 = log_softmax(c1)\nr3 = softmax(e)\nr4 = eb @ m\nr5 = layernorm(e, w, b)\n"
         "r6 = gather(x, argmax(x, axis=0))\nr7 = where(cnd, 1, 2.5)\nr8 = sum(softmax(x, axis=0), axis=0)\n"
         "r9 = rmsnorm(c1, [2.0])\nr10 = matmul(e, transpose(e))",
         {"c1": c1, "e": e, "eb": eb, "m": m, "x": x, "w": w, "b": b, "cnd": cnd},
         {"r1": np.ones((3, 1), "<f4"), "r2": np.zeros((3, 1), "<f4"), "r3": np.zeros((0, 4), "<f4"),
          "r4": np.zeros((0, 3, 2), "<f8"), "r5": np.zeros((0, 4), "<f4"),
          "r6": np.take(x, np.argmax(x, axis=0), 0), "r7": np.where(cnd, 1.0, 2.5).astype("<f4"),
          "r8": np.ones(5, "<f4"), "r9": R.rounded(R.rmsnorm(c1, np.array([2.0])), "f32"),
          "r10": np.zeros((0, 0), "<f4")})


def build():
    del CASES[:]
    warnings.simplefilter("ignore")  # NumPy's notes on NaN, 0/0, casts
    np.seterr(all="ignore")
    unary_cases()
    binary_cases()
    broadcast_cases()
    where_clip_cases()
    reduce_cases()
    movement_cases()
    matmul_cases()
    nn_cases()
    creation_cases()
    literal_cases()
    file_cases()
    lang_cases()
    error_cases()
    formatting_cases()
    view_cases()
    size_cases()
    accuracy_cases()
    more_dtype_cases()
    edge_cases()
    oracle_ops.ops_cases(case, Gen, with_specials, SPECIAL, arr)
    oracle_scatter.scatter_cases(case, Gen, arr)
    return list(CASES)
