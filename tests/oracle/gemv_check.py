#!/usr/bin/python3
"""gemv_check.py — float products of a few rows (lib/exec/gemv.c: m <= 4,
b read as it lies, no packing) against NumPy, and the same bits as the gemm.

What is checked, on tir's gemm (--gemm tir), on each vector path this CPU
has (TIR_VMATH avx512, avx2, sse2, scalar):
  * m = 1 .. 4 rows of a, f32 and f64, b row-major ([k, n]) and a
    transposed view (transpose of a [n, k]: an ONNX Gemm's weights), n and
    k that fill no whole block (the tail columns, a k-block cut short),
    with a bias added (the fused epilogue) and relu after it: within
    rounding of NumPy's float64 product;
  * the same bits as the gemm: row i of the few-row product equals row i
    of the same rows stacked under 12 more (a product the gemm makes by
    its packed tiles), byte for byte, both layouts;
  * a batched product (a [3, 1, k] @ b [3, k, n]) and one whose batch
    axis of b broadcasts;
  * the same bytes at --threads 1 and 3, and with --no-fuse.
Prints "ok NAME" / "FAIL NAME: WHY", last "N passed, M failed".
"""
import os
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import check, run_saved, summary  # noqa: E402

TIR = sys.argv[sys.argv.index("--tir") + 1] if "--tir" in sys.argv else "build/tir"
TIR = os.path.abspath(TIR)
NAMES = {np.float32: "f32", np.float64: "f64"}


def ttype(a):
    return "%s[%s]" % (NAMES[a.dtype.type], ", ".join(str(d) for d in a.shape))


def paths():
    """The vector paths this CPU runs (tir --version's, and those below it)."""
    out = subprocess.run([TIR, "--version"], capture_output=True, text=True).stdout
    top = "scalar"
    for line in out.splitlines():
        if line.startswith("vector path: "):
            top = line.split(": ", 1)[1].split()[0]
    order = ["scalar", "sse2", "avx2", "avx512"]
    return order[:order.index(top) + 1] if top in order else ["scalar"]


def run(tmp, body, inputs, outs, vpath, extra=()):
    os.environ["TIR_VMATH"] = vpath
    return run_saved(TIR, tmp, body, inputs, outs, ttype, ("--gemm", "tir") + tuple(extra))


def close(got, want, dt, k):
    """None when got is within the rounding of a k-step product in dt."""
    eps = np.finfo(dt).eps
    tol = 4 * k * eps * (np.abs(want) + 1)
    if got.shape != want.shape or got.dtype != dt:
        return "got %s %s, want %s %s" % (got.dtype, got.shape, dt.__name__, want.shape)
    err = np.abs(got.astype(np.float64) - want)
    if not (err <= tol).all():
        i = int(np.argmax(err - tol))
        return "element %d: got %r, want %r" % (i, got.ravel()[i], want.ravel()[i])
    return None


def product_case(vpath, dt, m, k, n, transposed):
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((m, k)).astype(dt)
    big = rng.standard_normal((12, k)).astype(dt)
    bias = rng.standard_normal(n).astype(dt)
    w = rng.standard_normal((n, k) if transposed else (k, n)).astype(dt)
    bexpr = "transpose(w, perm=[1, 0])" if transposed else "w"
    body = ("y = relu(add(matmul(a, %s), bias))\n"
            "z = matmul(concat([a, big], axis=0), %s)\n" % (bexpr, bexpr))
    wb = (w.T if transposed else w).astype(np.float64)
    want = np.maximum(a.astype(np.float64) @ wb + bias, 0)

    def fn(tmp):
        ins = {"a": a, "big": big, "w": w, "bias": bias}
        r1 = run(tmp, body, ins, ["y", "z"], vpath, ["--threads", "1"])
        if isinstance(r1, str):
            return r1
        why = close(r1["y"], want, dt, k)
        if why:
            return why
        # the gemm's rows, with the same bias and relu applied by NumPy in dt
        zrow = np.maximum(r1["z"][:m] + bias, dt(0)).astype(dt)
        if zrow.tobytes() != r1["y"].tobytes():
            d = np.flatnonzero(zrow.ravel() != r1["y"].ravel())
            return "not the gemm's bits: %d elements differ, first %d: %r vs %r" % (
                d.size, d[0], r1["y"].ravel()[d[0]], zrow.ravel()[d[0]])
        for extra in (["--threads", "3"], ["--threads", "2", "--no-fuse"]):
            r = run(tmp, body, ins, ["y"], vpath, extra)
            if isinstance(r, str):
                return r
            if r["y"].tobytes() != r1["y"].tobytes():
                return "%s: other bytes than at --threads 1" % " ".join(extra)
        return None
    return fn


def batched_case(vpath, dt, shared):
    rng = np.random.default_rng(7)
    k, n = 70, 45
    a = rng.standard_normal((3, 1, k)).astype(dt)
    b = rng.standard_normal((1 if shared else 3, k, n)).astype(dt)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))

    def fn(tmp):
        r1 = run(tmp, "y = matmul(a, b)", {"a": a, "b": b}, ["y"], vpath, ["--threads", "1"])
        if isinstance(r1, str):
            return r1
        why = close(r1["y"], want, dt, k)
        if why:
            return why
        r3 = run(tmp, "y = matmul(a, b)", {"a": a, "b": b}, ["y"], vpath, ["--threads", "3"])
        if isinstance(r3, str):
            return r3
        return None if r3["y"].tobytes() == r1["y"].tobytes() else "other bytes at --threads 3"
    return fn


def main():
    for vpath in paths():
        for dt in (np.float32, np.float64):
            for m in (1, 2, 3, 4):
                for k, n in ((512, 1000), (67, 131)):
                    for tr in (False, True):
                        name = "%s %s m=%d k=%d n=%d %s" % (vpath, NAMES[dt], m, k, n,
                                                           "transposed" if tr else "row-major")
                        check(name, product_case(vpath, dt, m, k, n, tr))
            for shared in (False, True):
                check("%s %s batched%s" % (vpath, NAMES[dt], ", b shared" if shared else ""),
                      batched_case(vpath, dt, shared))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
