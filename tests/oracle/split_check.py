#!/usr/bin/python3
"""split_check.py — split and topk, ops of several results (`a, b = split(x, 2)`,
`values, idx = topk(x, 3)`), against NumPy (docs/language.md, "Several results").

What is checked:
  * split against np.split, bit for bit (dtype, shape, values): a number of
    equal sections and a list of indices (negative, past the end, out of
    order: empty sections, as NumPy's slices give), on every axis (negative
    too), f32 f64 f16 i64 i32 u8 bool;
  * topk against a stable sort, as ONNX's TopK: the indices are
    np.argsort(-x, kind="stable") (largest) or np.argsort(x, kind="stable")
    (smallest) cut to k, the values np.take_along_axis of them; ties keep
    the lower index first; k = 0 and k = the whole axis; f32 f64 i64 i32;
  * NaN in topk: larger than every number (first when largest, last when
    smallest), NaNs in index order;
  * errors at check time with the caret: sections that do not divide the
    axis, a count of names that is not the number of sections or results,
    k out of range, an axis out of range;
  * the same bytes at --threads 1 and 2; `tir fmt` reads back to itself and
    runs the same; --remote against a `tir serve` started here; `tir help ops`.
Prints "ok NAME" / "FAIL NAME: WHY", last "N passed, M failed".
"""
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import bad, check, ok, run_saved, summary  # noqa: E402

np.seterr(all="ignore")

TIR = sys.argv[sys.argv.index("--tir") + 1] if "--tir" in sys.argv else "build/tir"
TIR = os.path.abspath(TIR)
NAMES = {np.float32: "f32", np.float64: "f64", np.float16: "f16", np.int64: "i64", np.int32: "i32",
         np.uint8: "u8", np.bool_: "bool"}


def ttype(a):
    return "%s[%s]" % (NAMES[a.dtype.type], ", ".join(str(d) for d in a.shape))


def run(tmp, body, inputs, outs, extra=()):
    """Run body with inputs (name -> array); the saved outs (name -> array), or an error string."""
    return run_saved(TIR, tmp, body, inputs, outs, ttype, extra)


def same(got, want, what):
    """None when got is want bit for bit (dtype, shape, values; NaN where NaN is)."""
    want = np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return "%s: got %s %s, want %s %s" % (what, got.dtype, got.shape, want.dtype, want.shape)
    if got.tobytes() != want.tobytes():
        return "%s: values differ: got %s, want %s" % (what, got.ravel()[:8], want.ravel()[:8])
    return None


def rng(name):
    return np.random.default_rng(sum(map(ord, name)) * 7919)


def sample(r, dt, shape, ties=False):
    if dt == np.bool_:
        return r.integers(0, 2, shape).astype(bool)
    if ties or np.issubdtype(dt, np.integer):
        return r.integers(0, 5 if ties else 100, shape).astype(dt)
    return r.standard_normal(shape).astype(dt)


def split_case(dt, shape, sections, axis):
    def fn(tmp):
        x = sample(rng("split%s%s%s" % (shape, sections, axis)), dt, shape)
        want = np.split(x, sections, axis=axis)
        names = ["p%d" % i for i in range(len(want))]
        sec = str(sections) if isinstance(sections, int) else "[%s]" % ", ".join(map(str, sections))
        got = run(tmp, "%s = split(x, %s, axis=%d)" % (", ".join(names), sec, axis), {"x": x}, names)
        if isinstance(got, str):
            return got
        for n, w in zip(names, want):
            why = same(got[n], w, n)
            if why:
                return why
        return None
    return fn


def topk_case(dt, shape, k, axis, largest):
    def fn(tmp):
        x = sample(rng("topk%s%s%s%s" % (shape, k, axis, largest)), dt, shape, ties=True)
        key = -x.astype(np.float64) if largest else x
        idx = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
        vals = np.take_along_axis(x, idx, axis=axis)
        got = run(tmp, "v, i = topk(x, %d, axis=%d, largest=%s)" % (k, axis, "true" if largest else "false"),
                  {"x": x}, ["v", "i"])
        if isinstance(got, str):
            return got
        return same(got["v"], vals, "values") or same(got["i"], idx.astype(np.int64), "indices")
    return fn


def nan_case(tmp):
    x = np.array([[1.0, np.nan, 3.0, np.nan, -1.0, 3.0]], dtype=np.float32)
    got = run(tmp, "v, i = topk(x, 4)\nw, j = topk(x, 6, largest=false)", {"x": x}, ["v", "i", "w", "j"])
    if isinstance(got, str):
        return got
    return (same(got["i"], np.array([[1, 3, 2, 5]]), "largest indices") or
            same(got["v"], np.array([[np.nan, np.nan, 3, 3]], dtype=np.float32), "largest values") or
            same(got["j"], np.array([[4, 0, 2, 5, 1, 3]]), "smallest indices") or
            same(got["w"], x[:, [4, 0, 2, 5, 1, 3]], "smallest values"))


ERRORS = [
    ("split not equal", "a, b, c = split(x, 3)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:11: error: split: array split does not result in an equal division: axis 0 of f32\[4, 6\] has 4"),
    ("split count", "a, b = split(x, 3, axis=1)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:8: error: split gives 3 results \(its sections: a, b, c\) but 2 names are bound"),
    ("split indices count", "a, b = split(x, [1, 2])", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:8: error: split gives 3 results"),
    ("split one name", "a = split(x, 2)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:5: error: split gives 2 results; bind each to a name: a, b = split"),
    ("split zero", "a, b = split(x, 0)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:8: error: split: the number of sections must be positive, got 0"),
    ("split axis", "a, b = split(x, 2, axis=2)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:8: error: split: axis 2 is out of range for f32\[4, 6\]"),
    ("topk k", "v, i = topk(x, 7)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:8: error: topk: k = 7 is out of range: axis 1 of f32\[4, 6\] has 6 elements"),
    ("topk negative k", "v, i = topk(x, -1)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:8: error: topk: k = -1 is out of range"),
    ("topk count", "v, i, w = topk(x, 2)", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:11: error: topk gives 2 results \(values, indices\) but 3 names are bound"),
    ("topk operand", "y = topk(x, 2) + 1.0", {"x": np.ones((4, 6), np.float32)},
     r"case\.tir:2:5: error: topk gives 2 results; bind each to a name: values, indices = topk"),
]


def error_case(body, inputs, pattern):
    def fn(tmp):
        got = run(tmp, body, inputs, [])
        if not isinstance(got, str):
            return "ran without an error"
        if not got.startswith("exit 1: ") or not re.search(pattern, got) or "^" not in got:
            return "stderr %r does not match %r" % (got, pattern)
        return None
    return fn


def threads_case(tmp):
    r = rng("threads")
    x = r.standard_normal((64, 300)).astype(np.float32)
    outs = {}
    for t in ("1", "2"):
        d = os.path.join(tmp, t)
        os.mkdir(d)
        got = run(d, "a, b, c = split(x, [10, 200], axis=1)\nv, i = topk(x, 50)\nw, j = topk(x, 3, axis=0)",
                  {"x": x}, ["a", "b", "c", "v", "i", "w", "j"], ("--threads", t))
        if isinstance(got, str):
            return got
        outs[t] = got
    for n in outs["1"]:
        if outs["1"][n].tobytes() != outs["2"][n].tobytes():
            return "%s differs between --threads 1 and 2" % n
    return None


PROG = """x = reshape(arange(0, 24), [4, 6])
a, b = split(x, 2)
c, d, e = split(mul(x, 2), [2, -1], axis=-1)
v, i = topk([3.0, 1.0, 3.0, 2.0], 2)
w, j = topk(x, 1, axis=0, largest=false)
print a, b, c, d, e, v, i, w, j
"""


def fmt_case(tmp):
    p = os.path.join(tmp, "p.tir")
    with open(p, "w") as f:
        f.write(PROG)
    f1 = subprocess.run([TIR, "fmt", p], capture_output=True, text=True)
    if f1.returncode:
        return "fmt: " + f1.stderr
    for want in ("a: i64[2, 6], b: i64[2, 6] = split(x, 2)\n",
                 "c: i64[4, 2], d: i64[4, 3], e: i64[4, 1] = split(", "w: i64[1, 6], j: i64[1, 6] = topk(x, 1, axis=0"):
        if want not in f1.stdout:
            return "fmt wrote no %r: %r" % (want, f1.stdout)
    p2 = os.path.join(tmp, "p2.tir")
    with open(p2, "w") as f:
        f.write(f1.stdout)
    f2 = subprocess.run([TIR, "fmt", p2], capture_output=True, text=True)
    if f2.stdout != f1.stdout:
        return "fmt of fmt differs"
    r1 = subprocess.run([TIR, "run", p, "--quiet"], capture_output=True, text=True)
    r2 = subprocess.run([TIR, "run", p2, "--quiet"], capture_output=True, text=True)
    if r1.returncode or r1.stdout != r2.stdout:
        return "the formatted program prints otherwise: %s" % (r1.stderr or r2.stderr)
    return None


def remote_case(tmp):
    p = os.path.join(tmp, "p.tir")
    with open(p, "w") as f:
        f.write(PROG)
    log = open(os.path.join(tmp, "serve.log"), "w+")
    srv = subprocess.Popen([TIR, "serve", "--port", "0"], stderr=log, stdout=subprocess.DEVNULL)
    try:
        port = None
        deadline = time.time() + 30
        while port is None and time.time() < deadline and srv.poll() is None:
            log.seek(0)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
            if m:
                port = m.group(1)
            else:
                time.sleep(0.05)
        if port is None:
            return "tir serve did not start"
        loc = subprocess.run([TIR, "run", p, "--quiet"], capture_output=True, text=True)
        rem = subprocess.run([TIR, "run", p, "--quiet", "--remote", "127.0.0.1:" + port], capture_output=True,
                             text=True, timeout=120)
        if loc.returncode or (loc.stdout, loc.stderr, loc.returncode) != (rem.stdout, rem.stderr, rem.returncode):
            return "remote differs: %r / %r" % (rem.stderr, loc.stderr)
        return None
    finally:
        srv.kill()
        srv.wait()
        log.close()


def help_case(tmp):
    r = subprocess.run([TIR, "help", "ops"], capture_output=True, text=True)
    for want in ("split       (x, sections:axes, axis:int=0) -> parts...",
                 "topk        (x, k:int, axis:int=-1, largest:bool=true, sorted:bool=true) -> values, indices"):
        if want not in r.stdout:
            return "tir help ops lacks %r" % want
    return None


def main():
    for dt in (np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_):
        for shape, sections, axis in (((6,), 3, 0), ((4, 6), 2, 0), ((4, 6), 3, 1), ((4, 6), 2, -1),
                                      ((2, 3, 4), [1, 3], 2), ((5, 4), [2], 0), ((5, 4), [-2, 10], 0),
                                      ((5, 4), [3, 1], 0), ((0, 4), 2, 0), ((3, 4), [0, 0, 4], 1)):
            check("split %s %s %s axis=%d" % (NAMES[dt], shape, sections, axis), split_case(dt, shape, sections, axis))
    for dt in (np.float32, np.float64, np.int64, np.int32):
        for shape, k, axis in (((7,), 3, 0), ((7,), 0, 0), ((7,), 7, 0), ((4, 9), 4, -1), ((4, 9), 2, 0),
                               ((3, 5, 6), 2, 1), ((2, 50), 17, 1)):
            for largest in (True, False):
                check("topk %s %s k=%d axis=%d largest=%s" % (NAMES[dt], shape, k, axis, largest),
                      topk_case(dt, shape, k, axis, largest))
    check("topk nan", nan_case)
    for name, body, inputs, pattern in ERRORS:
        check("error " + name, error_case(body, inputs, pattern))
    check("threads", threads_case)
    check("fmt", fmt_case)
    check("remote", remote_case)
    check("help", help_case)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
