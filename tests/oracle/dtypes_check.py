#!/usr/bin/python3
"""dtypes_check.py — the storage dtypes f16, bf16, i8, u8 and i16 against
NumPy (docs/language.md, "Dtypes").

What is checked, each case fused and --no-fuse (the bytes must agree):
  * f16 elementwise ops against NumPy's float16 ufuncs, which convert to
    float32, compute and round back: exactly tir's rule.  Exact for + - *
    / and the rest NumPy computes correctly rounded; within one f16 step
    for the transcendental ops (NumPy's f32 libm and tir's vmath differ in
    the last f32 bit, which can move a value across an f16 rounding).
  * bf16 (NumPy has none): the same ops on the f32 widening, rounded to
    bf16 by round_bf16 below (round to nearest even on the bits); that
    rounding is checked first against the exact definition on every
    boundary (the midpoint of each pair of neighbours and the values next
    to it).
  * i8, u8, i16: NumPy's own integer ufuncs (wrapping), exactly.
  * promotion across the new types (PyTorch's table), reductions, matmul
    (f16 and bf16 products accumulate in f32 and round once), cast between
    all ten dtypes for values in range, .npy and .safetensors in and out,
    and the printed digits (f16 at most 5, bf16 at most 4, reading back to
    the same value).
Prints "ok NAME" / "FAIL NAME: WHY", last "N passed, M failed".
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import bad, ok, summary  # noqa: E402

TIR = sys.argv[sys.argv.index("--tir") + 1] if "--tir" in sys.argv else "build/tir"


# ---- bf16 by bits ----

def bf16_bits(x):
    """float32 array -> bf16 bits (uint16), round to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, np.float32))
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_f32(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(x):
    return bf16_f32(bf16_bits(x))


def check_rounding():
    # every finite positive bf16 pair (a, b): their midpoint goes to the
    # even one, the values just below and above it to a and to b
    allb = np.arange(0, 0x7F80, dtype=np.uint16)
    a, b = bf16_f32(allb[:-1]), bf16_f32(allb[1:])
    mid = ((a.astype(np.float64) + b.astype(np.float64)) / 2).astype(np.float32)
    even = np.where(allb[:-1] % 2 == 0, allb[:-1], allb[1:])
    below = np.nextafter(mid, np.float32(0))
    above = np.nextafter(mid, np.float32(np.inf))
    good = ((bf16_bits(mid) == even).all() and (bf16_bits(below) == allb[:-1]).all()
            and (bf16_bits(above)[:-1] == allb[1:-1]).all())
    if good and (bf16_f32(bf16_bits(bf16_f32(allb))) == bf16_f32(allb)).all():
        ok("round_bf16: ties to even, neighbours, every value round-trips")
    else:
        bad("round_bf16", "the reference rounding is wrong")


# ---- running tir ----

def write_st(path, tensors):
    """tensors: name -> (dtype string, shape, raw bytes)"""
    head, off, blobs = {}, 0, []
    for n, (dt, shape, raw) in tensors.items():
        head[n] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = (v["dtype"], v["shape"], raw[8 + n + a:8 + n + b])
    return out


NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
      "u8": np.uint8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


def run(d, body, inputs, outs, extra=(), env=None):
    """Run body with inputs (name -> np array, or ("bf16", f32 array)) and
    return {name: array} (bf16 results as their f32 widening) for each
    flag set, after checking fused and --no-fuse agree byte for byte.
    env: the children's environment (None: this one's); the last child's
    stderr is left in run.stderr."""
    decl, args = [], []
    for n, v in inputs.items():
        if isinstance(v, tuple):  # bf16: through a safetensors file
            bits = bf16_bits(v[1])
            p = os.path.join(d, n + ".safetensors")
            write_st(p, {n: ("BF16", bits.shape, bits.tobytes())})
            decl.append("input %s: bf16[%s]" % (n, ", ".join(map(str, bits.shape))))
            args += ["--input", "%s=%s" % (n, p)]
        else:
            p = os.path.join(d, n + ".npy")
            np.save(p, v)
            tn = [k for k, t in NP.items() if np.dtype(t) == v.dtype][0]
            decl.append("input %s: %s[%s]" % (n, tn, ", ".join(map(str, v.shape))))
            args += ["--input", "%s=%s" % (n, p)]
    prog = os.path.join(d, "case.tir")
    with open(prog, "w") as f:
        f.write("\n".join(decl + [body]) + "\n")
    got = []
    for flags in ([], ["--no-fuse"]):
        out = os.path.join(d, "out%d.safetensors" % len(got))
        saves = []
        for o in outs:
            saves += ["--save", "%s=%s" % (o, out)]
        r = subprocess.run([TIR, "run", prog, "--quiet"] + args + saves + flags + list(extra),
                           capture_output=True, text=True, timeout=120, env=env)
        run.stderr = r.stderr
        if r.returncode != 0:
            raise RuntimeError("tir exit %d: %s" % (r.returncode, r.stderr.strip()[:400]))
        got.append(read_st(out))
    if got[0] != got[1]:
        raise RuntimeError("fused and --no-fuse differ")
    res = {}
    for k, (dt, shape, raw) in got[0].items():
        if dt == "BF16":
            res[k] = ("bf16", bf16_f32(np.frombuffer(raw, np.uint16)).reshape(shape))
        else:
            npdt = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8,
                    "U8": np.uint8, "I16": np.int16, "I32": np.int32, "I64": np.int64,
                    "BOOL": np.bool_}[dt]
            res[k] = (dt.lower(), np.frombuffer(raw, npdt).reshape(shape))
    return res


def same(got, want, ulps=0, step=None):
    """got == want bit for bit (nan where nan); or within ulps steps of the
    type (step: the relative size of one)"""
    g = np.asarray(got, np.float64)
    w = np.asarray(want, np.float64)
    if g.shape != w.shape:
        return "shape %s, want %s" % (g.shape, w.shape)
    nan = np.isnan(w)
    if (np.isnan(g) != nan).any():
        return "nan where not expected, or missing"
    g, w = g[~nan], w[~nan]
    if ulps == 0:
        diff = g != w
    else:
        tol = ulps * step * np.maximum(np.abs(w), 2.0 ** -14)
        diff = ~((g == w) | (np.abs(g - w) <= tol))
    if diff.any():
        i = int(np.argmax(diff))
        return "%d of %d differ; first got %r want %r" % (diff.sum(), diff.size, g[i], w[i])
    return None


def case(name, fn):
    try:
        why = fn()
    except Exception as e:  # noqa: BLE001 - a case's failure is reported, not raised
        why = str(e)
    if why:
        bad(name, why)
    else:
        ok(name)


rng = np.random.default_rng(15)
SPEC = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 65504.0, 1e-7, -2.5, np.inf, -np.inf, np.nan, 3.140625],
                np.float32)


def f16_input(shape):
    x = rng.uniform(-4, 4, shape).astype(np.float32)
    k = min(SPEC.size, x.size)
    x.reshape(-1)[:k] = SPEC[:k]
    return x.astype(np.float16)


EXACT_UNARY = ["neg", "abs", "sqrt", "floor", "ceil", "round", "sign", "relu"]
TRANS_UNARY = ["exp", "log", "tanh", "sigmoid", "sin", "cos", "recip", "rsqrt", "erf", "gelu", "silu"]


def np_unary(op, x):
    with np.errstate(all="ignore"):
        f = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "floor": np.floor,
             "ceil": np.ceil, "round": np.rint, "sign": np.sign, "exp": np.exp, "log": np.log, "tanh": np.tanh,
             "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "sin": np.sin, "cos": np.cos,
             "recip": lambda v: 1 / v, "rsqrt": lambda v: 1 / np.sqrt(v)}
        if op in f:
            return f[op](x)
        # relu: each caller writes its own (a NaN stays NaN, -0 gives 0)
        import math
        v = x.astype(np.float64)
        if op == "erf":
            r = np.vectorize(math.erf)(v)
        elif op == "gelu":
            r = 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))
        elif op == "silu":
            r = v / (1 + np.exp(-v))
        return r.astype(x.dtype)


def unary_cases(d):
    x16 = f16_input((6, 50))
    xf = x16.astype(np.float32)
    ops = EXACT_UNARY + TRANS_UNARY
    body = "\n".join("r_%s = %s(x)" % (o, o) for o in ops)

    def f16():
        got = run(d, body, {"x": x16}, ["r_" + o for o in ops])
        for o in ops:
            dt, g = got["r_" + o]
            if dt != "f16":
                return "%s: dtype %s" % (o, dt)
            # NumPy's float16 ufuncs: computed in f32, rounded
            if o == "relu":
                want = np.where(xf > 0, xf, 0).astype(np.float16)
                want[np.isnan(xf)] = np.nan
            elif o in ("erf", "gelu", "silu"):
                want = np_unary(o, xf).astype(np.float16)
            else:
                want = np_unary(o, x16)
            why = same(g, want, 0 if o in EXACT_UNARY else 1, 2.0 ** -10)
            if why:
                return "%s: %s" % (o, why)
    case("f16 unary ops = NumPy float16 (exact: %s; one f16 step: the rest)" % " ".join(EXACT_UNARY), f16)

    def bf16():
        xb = round_bf16(rng.uniform(-4, 4, (6, 50)).astype(np.float32))
        xb.reshape(-1)[:SPEC.size] = round_bf16(SPEC)
        got = run(d, body, {"x": ("bf16", xb)}, ["r_" + o for o in ops])
        for o in ops:
            dt, g = got["r_" + o]
            if dt != "bf16":
                return "%s: dtype %s" % (o, dt)
            if o == "relu":
                want = np.where(xb > 0, xb, 0).astype(np.float32)
                want[np.isnan(xb)] = np.nan
            else:
                want = np_unary(o, xb.astype(np.float32))
            why = same(g, round_bf16(want), 0 if o in EXACT_UNARY else 1, 2.0 ** -7)
            if why:
                return "%s: %s" % (o, why)
    case("bf16 unary ops = f32 op, rounded to bf16", bf16)


BIN = ["add", "sub", "mul", "div", "maximum", "minimum"]
NPBIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
         "maximum": np.maximum, "minimum": np.minimum, "mod": np.mod}


def binary_cases(d):
    a, b = f16_input((8, 40)), f16_input((40,))
    body = "\n".join("r_%s = %s(a, b)" % (o, o) for o in BIN) + "\nr_lt = lt(a, b)\nr_s = a * 3"

    def f16():
        got = run(d, body, {"a": a, "b": b}, ["r_" + o for o in BIN] + ["r_lt", "r_s"])
        with np.errstate(all="ignore"):
            for o in BIN:
                why = same(got["r_" + o][1], NPBIN[o](a, b))
                if why or got["r_" + o][0] != "f16":
                    return "%s: %s %s" % (o, got["r_" + o][0], why)
            if got["r_lt"][0] != "bool" or (got["r_lt"][1] != (a < b)).any():
                return "lt differs"
            why = same(got["r_s"][1], (a.astype(np.float32) * 3).astype(np.float16))
            if why:
                return "a * 3: " + why
    case("f16 binary ops (broadcast, a weak literal) = NumPy float16, exactly", f16)

    def ints():
        out = []
        for dt, lo, hi in (("i8", -128, 127), ("u8", 0, 255), ("i16", -32768, 32767)):
            x = rng.integers(lo, hi + 1, (5, 30)).astype(NP[dt])
            y = rng.integers(lo, hi + 1, (30,)).astype(NP[dt])
            y[y == 0] = 1
            ops = ["add", "sub", "mul", "maximum", "minimum", "mod"]
            body = "\n".join("r_%s = %s(x, y)" % (o, o) for o in ops) + "\nr_neg = neg(x)\nr_abs = abs(x)"
            got = run(d, body, {"x": x, "y": y}, ["r_" + o for o in ops] + ["r_neg", "r_abs"])
            with np.errstate(all="ignore"):
                for o in ops:
                    g = got["r_" + o]
                    if g[0] != dt or (g[1] != NPBIN[o](x, y)).any():
                        out.append("%s %s: got %s" % (dt, o, g[0]))
                if (got["r_neg"][1] != np.negative(x)).any() or (got["r_abs"][1] != np.abs(x)).any():
                    out.append("%s neg/abs" % dt)
        return "; ".join(out) or None
    case("i8 u8 i16 add sub mul maximum minimum mod neg abs wrap as NumPy's", ints)


def promotion_cases(d):
    def promo():
        a8 = rng.integers(-128, 128, 7).astype(np.int8)
        u8 = rng.integers(0, 256, 7).astype(np.uint8)
        h = f16_input((7,))
        s16 = rng.integers(-3000, 3000, 7).astype(np.int16)
        xb = round_bf16(rng.uniform(-2, 2, 7).astype(np.float32))
        f = rng.uniform(-2, 2, 7).astype(np.float32)
        body = "\n".join(["p1 = a8 + ub", "p2 = h + xb", "p3 = s16 * h", "p4 = ub + f",
                          "p5 = a8 + s16", "p6 = xb * 2", "p7 = a8 * 0.5"])
        got = run(d, body, {"a8": a8, "ub": u8, "h": h, "s16": s16, "xb": ("bf16", xb), "f": f},
                  ["p%d" % i for i in range(1, 8)])
        want = {
            "p1": ("i16", a8.astype(np.int16) + u8.astype(np.int16)),
            "p2": ("f32", h.astype(np.float32) + xb),
            "p3": ("f16", (s16.astype(np.float32) * h.astype(np.float32)).astype(np.float16)),
            "p4": ("f32", u8.astype(np.float32) + f),
            "p5": ("i16", a8.astype(np.int16) + s16),
            "p6": ("bf16", round_bf16(xb * np.float32(2))),
            "p7": ("f32", a8.astype(np.float32) * np.float32(0.5)),
        }
        for k, (dt, w) in want.items():
            if got[k][0] != dt:
                return "%s: dtype %s, want %s" % (k, got[k][0], dt)
            why = same(got[k][1], w)
            if why:
                return "%s: %s" % (k, why)
    case("promotion: i8+u8 i16, f16+bf16 f32, i16*f16 f16, u8+f32 f32, bf16*2 bf16, i8*0.5 f32", promo)


def reduce_cases(d):
    def red():
        x = f16_input((16, 300))
        x[np.isnan(x) | np.isinf(x)] = 1
        i8 = rng.integers(-128, 128, (16, 300)).astype(np.int8)
        xb = round_bf16(rng.uniform(-1, 1, (16, 300)).astype(np.float32))
        body = "\n".join(["s = sum(x, axis=1)", "m = max(x, axis=0)", "a = argmax(x, axis=1)",
                          "mu = mean(x)", "si = sum(q, axis=1)", "mi = min(q)",
                          "sb = sum(xb, axis=1)"])
        got = run(d, body, {"x": x, "q": i8, "xb": ("bf16", xb)}, ["s", "m", "a", "mu", "si", "mi", "sb"])
        xf = x.astype(np.float32)
        checks = [
            ("s", "f16", xf.sum(axis=1).astype(np.float16), 1, 2.0 ** -10),
            ("m", "f16", x.max(axis=0), 0, 0),
            ("a", "i64", x.argmax(axis=1), 0, 0),
            ("mu", "f16", np.float16(xf.mean()), 1, 2.0 ** -10),
            ("si", "i64", i8.sum(axis=1), 0, 0),
            ("mi", "i8", i8.min(), 0, 0),
            ("sb", "bf16", round_bf16(xb.sum(axis=1, dtype=np.float32)), 1, 2.0 ** -7),
        ]
        for k, dt, w, u, st in checks:
            if got[k][0] != dt:
                return "%s: dtype %s, want %s" % (k, got[k][0], dt)
            why = same(got[k][1], w, u, st)
            if why:
                return "%s: %s" % (k, why)
    case("reductions: f16 sums in f32 (one f16 step), max/argmax exact, i8 sums to i64", red)


def matmul_cases(d):
    def mm():
        a = (rng.standard_normal((70, 130)) / 4).astype(np.float16)
        w = (rng.standard_normal((130, 90)) / 4).astype(np.float16)
        x = rng.standard_normal((70, 130)).astype(np.float32)
        ab = round_bf16(rng.standard_normal((70, 130)).astype(np.float32))
        wb = round_bf16(rng.standard_normal((130, 90)).astype(np.float32))
        q = rng.integers(-128, 128, (30, 40)).astype(np.int8)
        body = "\n".join(["h = a @ w", "y = relu(x @ w + 1.0)", "b = ab @ wb", "qq = q @ transpose(q)"])
        got = run(d, body, {"a": a, "w": w, "x": x, "ab": ("bf16", ab), "wb": ("bf16", wb), "q": q},
                  ["h", "y", "b", "qq"])
        ref = a.astype(np.float64) @ w.astype(np.float64)
        if got["h"][0] != "f16":
            return "h dtype " + got["h"][0]
        why = same(got["h"][1], ref.astype(np.float16), 1, 2.0 ** -10)
        if why:
            return "f16 @ f16: " + why
        y = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + 1, 0)
        if got["y"][0] != "f32" or np.abs(got["y"][1] - y).max() > 1e-5 * np.abs(y).max():
            return "f32 @ f16 (widened while packed): %s, max err %g" % (
                got["y"][0], np.abs(got["y"][1] - y).max())
        why = same(got["b"][1], round_bf16((ab.astype(np.float64) @ wb.astype(np.float64)).astype(np.float32)),
                   1, 2.0 ** -7)
        if got["b"][0] != "bf16" or why:
            return "bf16 @ bf16: %s %s" % (got["b"][0], why)
        qq = (q.astype(np.int64) @ q.T.astype(np.int64)).astype(np.int8)
        if got["qq"][0] != "i8" or (got["qq"][1] != qq).any():
            return "i8 @ i8 wraps as NumPy's"
    case("matmul: f16@f16 f16, f32@f16 f32, bf16@bf16 bf16 (f32 accumulation), i8@i8 wraps", mm)

    # bf16 products on every vector path (TIR_VMATH: the best the CPU has
    # at or below the one named), the AVX-512 BF16 kernel (vdpbf16ps) and
    # its widening (TIR_BF16=widen), each gemm (--gemm): edge tiles, a
    # row-major a whose panel height is not a multiple of 4 (AVX2's and
    # SSE2's 6), several k-blocks, a batch, a transposed b, 2 threads
    def mm_paths():
        a = round_bf16(rng.standard_normal((37, 700)).astype(np.float32))
        b = round_bf16(rng.standard_normal((700, 45)).astype(np.float32))
        bt = round_bf16(rng.standard_normal((45, 700)).astype(np.float32))
        x = round_bf16(rng.standard_normal((3, 20, 64)).astype(np.float32))
        y = round_bf16(rng.standard_normal((3, 64, 50)).astype(np.float32))
        body = "p = a @ b\nq = a @ transpose(bt)\nr = x @ y"
        ins = {"a": ("bf16", a), "b": ("bf16", b), "bt": ("bf16", bt), "x": ("bf16", x), "y": ("bf16", y)}
        want = {"p": a.astype(np.float64) @ b.astype(np.float64),
                "q": a.astype(np.float64) @ bt.T.astype(np.float64),
                "r": x.astype(np.float64) @ y.astype(np.float64)}
        saved = {k: os.environ.get(k) for k in ("TIR_VMATH", "TIR_BF16", "TIR_GEMM")}
        try:
            for vm in ("avx512", "avx2", "sse2", "scalar"):
                for bf in ("", "widen"):
                    for gm in ("tir", "openblas"):
                        os.environ.update(TIR_VMATH=vm, TIR_BF16=bf, TIR_GEMM=gm)
                        got = run(d, body, ins, ["p", "q", "r"], ("--threads", "2"))
                        for n, w in want.items():
                            w32 = round_bf16(w.astype(np.float32))
                            g = got[n][1].astype(np.float64)
                            tol = 2.0 ** -7 * np.maximum(np.abs(w), 1e-3 * np.abs(w).max())
                            if got[n][0] != "bf16" or (np.abs(g - w32) > tol).any():
                                return "TIR_VMATH=%s TIR_BF16=%s TIR_GEMM=%s: %s %s off by %g" % (
                                    vm, bf, gm, n, got[n][0], np.abs(g - w32).max())
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    case("matmul: bf16@bf16 on every vector path, vdpbf16ps and widened, --gemm tir and openblas", mm_paths)

    # bf16 products on the SSE2 path over OpenBLAS's SSE kernel (a CPU
    # before AVX: OPENBLAS_CORETYPE=Nehalem given to these children only)
    # run on tir's gemm by default, faster there than f32 on OpenBLAS: the
    # --profile footer says so and the bits are --gemm tir's; asked for by
    # name, OpenBLAS runs them; NumPy's values either way
    def mm_sse_core():
        a = round_bf16(rng.standard_normal((37, 700)).astype(np.float32))
        b = round_bf16(rng.standard_normal((700, 45)).astype(np.float32))
        ins = {"a": ("bf16", a), "b": ("bf16", b)}
        w = a.astype(np.float64) @ b.astype(np.float64)
        w32 = round_bf16(w.astype(np.float32))
        tol = 2.0 ** -7 * np.maximum(np.abs(w), 1e-3 * np.abs(w).max())
        env = {k: v for k, v in os.environ.items() if k not in ("TIR_GEMM", "TIR_BF16")}
        env.update(TIR_VMATH="sse2", OPENBLAS_CORETYPE="Nehalem")
        want = {"": "openblas (OpenBLAS * core Nehalem; f32, f64; bf16 and other dtypes on tir sse2), the default*",
                "tir": "tir sse2 *", "openblas": "openblas (OpenBLAS * core Nehalem; f32, f64, bf16; *"}
        got = {}
        for gm, foot in want.items():
            got[gm] = run(d, "p = a @ b", ins, ["p"], ("--threads", "2", "--profile"), dict(env, TIR_GEMM=gm))["p"]
            m = re.search(r"; gemm: (.*?); blas: ", run.stderr)
            pat = re.escape(foot).replace(r"\*", ".*")
            if not m or not re.fullmatch(pat, m.group(1)):
                return "TIR_GEMM=%r: gemm %r, want %s" % (gm, m and m.group(1), foot)
            g = got[gm][1].astype(np.float64)
            if got[gm][0] != "bf16" or (np.abs(g - w32) > tol).any():
                return "TIR_GEMM=%r: %s off by %g" % (gm, got[gm][0], np.abs(g - w32).max())
        if (got[""][1] != got["tir"][1]).any():
            return "the default's bits are not --gemm tir's"
    case("matmul: bf16@bf16 on SSE2 over OpenBLAS's SSE kernel (Nehalem) on tir's gemm, as NumPy", mm_sse_core)


def cast_cases(d):
    def casts():
        v = np.array([0, 1, -1, 2.5, -2.5, 100.75, -100.75, 127, -128, 200, 0.1, 3.3e-5, 65504, 7e4],
                     np.float32)
        names = ["f16", "bf16", "i8", "u8", "i16", "i32", "f64"]
        body = "\n".join("c_%s = cast(v, %s)" % (n, n) for n in names)
        body += "\nback = cast(cast(v, f16), bf16)\nh2i = cast(cast(v, f16), i16)"
        got = run(d, body, {"v": v}, ["c_" + n for n in names] + ["back", "h2i"])
        want = {
            "f16": v.astype(np.float16), "bf16": round_bf16(v),
            # float to a narrow integer: truncate to i32, then wrap
            "i8": np.trunc(v).astype(np.int64).astype(np.int8),
            "u8": np.trunc(v).astype(np.int64).astype(np.uint8),
            "i16": np.trunc(v).astype(np.int64).astype(np.int16),
            "i32": np.trunc(v).astype(np.int32), "f64": v.astype(np.float64),
        }
        for n in names:
            if got["c_" + n][0] != n:
                return "%s: dtype %s" % (n, got["c_" + n][0])
            why = same(got["c_" + n][1], want[n])
            if why:
                return "cast to %s: %s" % (n, why)
        why = same(got["back"][1], round_bf16(v.astype(np.float16).astype(np.float32)))
        if why:
            return "f16 -> bf16: " + why
        h = v.astype(np.float16).astype(np.float64)
        if (got["h2i"][1] != np.trunc(h).astype(np.int64).astype(np.int16)).any():
            return "f16 -> i16"
    case("cast between the new dtypes and the old ones (NumPy astype; bf16 by bits)", casts)

    def io():
        # .npy of every new dtype but bf16 goes in and out unchanged; bf16
        # goes through .safetensors; a bf16 .npy save is refused
        x = f16_input((3, 4))
        u = rng.integers(0, 256, (5,)).astype(np.uint8)
        got = run(d, "y = x\nz = u\nb = cast(x, bf16)", {"x": x, "u": u}, ["y", "z", "b"])
        if got["y"][1].tobytes() != x.tobytes() or got["z"][1].tobytes() != u.tobytes():
            return "values changed on the way through"
        p = os.path.join(d, "b.npy")
        r = subprocess.run([TIR, "run", os.path.join(d, "case.tir"), "--quiet", "--input",
                            "x=" + os.path.join(d, "x.npy"), "--input", "u=" + os.path.join(d, "u.npy"),
                            "--save", "b=" + p], capture_output=True, text=True, timeout=60)
        if r.returncode != 1 or "bf16 has no .npy dtype" not in r.stderr:
            return "a bf16 .npy save: exit %d %s" % (r.returncode, r.stderr.strip())
    case(".npy and .safetensors of the new dtypes, in and out", io)

    def printed():
        x = f16_input((40,))
        prog = os.path.join(d, "p.tir")
        with open(prog, "w") as f:
            f.write("input x: f16[40]\nxb = cast(x, bf16)\nprint x, xb\n")
        np.save(os.path.join(d, "x.npy"), x)
        r = subprocess.run([TIR, "run", prog, "--quiet", "--precision", "17", "--input",
                            "x=" + os.path.join(d, "x.npy")], capture_output=True, text=True, timeout=60)
        blocks = re.findall(r"^(\w+): (\w+)\[40\]\n\[([^\]]*)\]", r.stdout, re.M)
        if len(blocks) != 2:
            return "printed: %r" % r.stdout[:200]
        for name, dt, text in blocks:
            vals = [t.strip() for t in text.split(",")]
            digits = max(len(re.sub(r"[^0-9]", "", re.sub(r"e.*", "", t)).lstrip("0")) for t in vals
                         if t not in ("nan", "inf", "-inf"))
            want = x if name == "x" else round_bf16(x.astype(np.float32))
            back = np.array([float(t) for t in vals]).astype(np.float16 if name == "x" else np.float32)
            if name == "xb":
                back = round_bf16(back)
            if same(back, want) or digits > (5 if dt == "f16" else 4):
                return "%s printed with %d digits, reads back %s" % (name, digits, same(back, want))
    case("printing: f16 at most 5 digits, bf16 4, each reads back to its value", printed)


def main():
    np.seterr(all="ignore")
    check_rounding()
    with tempfile.TemporaryDirectory() as d:
        unary_cases(d)
        binary_cases(d)
        promotion_cases(d)
        reduce_cases(d)
        matmul_cases(d)
        cast_cases(d)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
