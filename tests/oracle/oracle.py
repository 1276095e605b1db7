#!/usr/bin/python3
"""oracle.py — tir checked against NumPy, case by case.

    /usr/bin/python3 tests/oracle/oracle.py [--tir build/tir] [-k SUBSTR] [-v] [-j N]

Each case (the table is oracle_cases.py) is a small tir program that declares
its inputs with `input NAME: TYPE` and binds its results to names, plus the
NumPy values those names must hold.  For each case this script, in a fresh
temporary directory:

  1. writes the inputs with numpy.save and runs
        tir run case.tir --quiet --input x=x.npy ... --save r1=r1.npy ...
     then compares every saved result with NumPy: dtype and shape exactly;
     ints and bools exactly; floats with NaN where NumPy has NaN, the same
     infinities, and |got - want| <= atol + rtol * max(|want|, scale)
     (f32: rtol 1e-5, atol 1e-6; f64: rtol 1e-12, atol 1e-12; scale, where
     a case gives one, is the size of the terms a sum adds, so rounding in
     a cancelling sum is judged against what was summed);
  2. runs the same program with `print r1, r2, ...` and
     `--precision 17 --full`, parses the printed blocks back (nan, inf,
     -inf, true/false, ints) and checks them against the saved values
     bit for bit, and the headers' dtypes and shapes against NumPy's.

An error case instead expects exit status 1 and a message on stderr (with
a source position `case.tir:LINE:COL:` where the case says so).

Output: one line per failing case (its name, what differed, the largest
error), then `N passed, M failed`, where each case counts once however many
values it compares.  Exit status 0 when nothing failed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import oracle_cases  # noqa: E402
from oracle_ref import FLOATS, dtname  # noqa: E402

TOL = {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-12)}
TIMEOUT = 30


def tir_type(a):
    return "%s[%s]" % (dtname(a), ", ".join(str(d) for d in a.shape))


def fmt_val(v):
    if isinstance(v, (np.floating, float)):
        return repr(float(v))
    if isinstance(v, (np.bool_, bool)):
        return "true" if v else "false"
    return str(v)


def compare(got, want, rtol, atol, scale=None):
    """None when got matches want, else what differs (with the max error)."""
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (dtname(got), dtname(want))
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if got.size == 0:
        return None
    if dtname(want) not in FLOATS:
        bad = got != want
        if not bad.any():
            return None
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        return "%d of %d values differ; first at %s: got %s, expected %s" % (
            int(bad.sum()), want.size, list(i), fmt_val(got[i]), fmt_val(want[i]))
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    gi, wi = np.isinf(g), np.isinf(w)
    special = (gn != wn) | ((gi | wi) & ~(gn | wn) & (g != w))
    fin = np.isfinite(g) & np.isfinite(w)
    err = np.zeros_like(w)
    with np.errstate(all="ignore"):
        err[fin] = np.abs(g[fin] - w[fin])
        ref = np.abs(w)
        if scale is not None:
            ref = np.maximum(ref, np.broadcast_to(np.abs(scale), w.shape))
        tol = atol + rtol * ref
        bad = special | (fin & (err > tol))
        if not bad.any():
            return None
        rel = np.where(fin & (ref > 0), err / np.where(ref > 0, ref, 1), 0)
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    return "%d of %d values differ; first at %s: got %s, expected %s; max abs err %.3g, max rel err %.3g" % (
        int(bad.sum()), want.size, list(i), fmt_val(got[i]), fmt_val(want[i]),
        float(err.max()), float(rel.max()))


# ---- the printed path ----

HEADER = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): (f32|f64|i32|i64|bool)\[([0-9, ]*)\]$")


def parse_printed(text):
    """{name: (dtype, shape, nested values)} from `tir run` stdout."""
    blocks, order, cur = {}, [], None
    for line in text.split("\n"):
        m = HEADER.match(line)
        if m:
            cur = m.group(1)
            shape = [int(s) for s in m.group(3).split(",") if s.strip()]
            blocks[cur] = [m.group(2), shape, []]
            order.append(cur)
        elif cur is not None:
            blocks[cur][2].append(line)
    out = {}
    for name in order:
        dt, shape, lines = blocks[name]
        body = "\n".join(lines).strip()
        js = re.sub(r"\bnan\b", "NaN", body)
        js = re.sub(r"\binf\b", "Infinity", js)
        out[name] = (dt, shape, json.loads(js))
    return out


def printed_matches(name, dt, shape, values, saved, want):
    """Problems with one printed block, against the saved array (exact)
    and NumPy's dtype and shape."""
    if dt != dtname(want) or shape != list(want.shape):
        return "printed %s: header %s%s, expected %s" % (name, dt, shape, tir_type(want))
    if saved is None:
        return None
    arr = np.array(values, dtype=object)
    flat = []

    def walk(v, depth):
        if isinstance(v, list):
            for e in v:
                walk(e, depth + 1)
        else:
            if depth != len(shape):
                raise ValueError("value at depth %d in a rank-%d block" % (depth, len(shape)))
            flat.append(v)

    try:
        walk(values, 0)
    except ValueError as e:
        return "printed %s: %s" % (name, e)
    if len(flat) != saved.size:
        return "printed %s: %d values, expected %d" % (name, len(flat), saved.size)
    if saved.size and arr.shape != tuple(shape):
        return "printed %s: nested as %s, header says %s" % (name, list(arr.shape), shape)
    if dt == "bool":
        if not all(isinstance(v, bool) for v in flat):
            return "printed %s: a bool printed as something else than true/false" % name
    elif dt in ("i32", "i64"):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
            return "printed %s: an int printed as something else than an integer" % name
    p = np.array(flat, dtype=saved.dtype).reshape(saved.shape)
    s = saved
    if dt in FLOATS:
        same = (p == s) | (np.isnan(p) & np.isnan(s))
    else:
        same = p == s
    if not same.all():
        i = tuple(int(k) for k in np.argwhere(~same)[0])
        return "printed %s differs from the saved value at %s: printed %s, saved %s" % (
            name, list(i), fmt_val(p[i]), fmt_val(s[i]))
    return None


# ---- running a case ----


def write_files(d, c):
    # C order always: tir reads no fortran_order files (a clear error)
    for n, a in c.inputs.items():
        np.save(os.path.join(d, n + ".npy"), np.array(a, order="C"))
    for fname, data in c.files.items():
        path = os.path.join(d, fname)
        if isinstance(data, np.ndarray):
            np.save(path, np.array(data, order="C"))
        else:
            with open(path, "wb") as f:
                f.write(data)


def program(c, extra=""):
    lines = ["# %s (tests/oracle)" % c.name]
    lines += ["input %s: %s" % (n, tir_type(a)) for n, a in c.inputs.items()]
    return "\n".join(lines) + "\n" + c.body.strip("\n") + "\n" + extra


def run(tir, d, args):
    try:
        p = subprocess.run([tir] + args, cwd=d, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def first_line(s):
    s = s.strip()
    return s.split("\n")[0] if s else "(nothing on stderr)"


def run_case(c, tir, root):
    """A list of problems (empty: the case passed)."""
    d = os.path.join(root, c.name)
    os.mkdir(d)
    write_files(d, c)
    src = program(c)
    with open(os.path.join(d, "case.tir"), "w") as f:
        f.write(src)
    inputs = []
    for n in c.inputs:
        inputs += ["--input", "%s=%s.npy" % (n, n)]

    if c.error is not None:
        # values are computed only when needed: save the result(s)
        saves = []
        for n in c.expect or ["r"]:
            saves += ["--save", "%s=out_%s.npy" % (n, n)]
        st, out, err = run(tir, d, ["run", "case.tir", "--quiet"] + inputs + saves)
        probs = []
        if st != 1:
            probs.append("exit status %s, expected 1 (stderr: %s)" % (st, first_line(err)))
        if not re.search(c.error, err):
            probs.append("stderr %r does not match /%s/" % (first_line(err), c.error))
        if c.err_line is not None:
            line = 1 + len(c.inputs) + c.err_line
            if not re.search(r"(^|\n)case\.tir:%d:\d+: error:" % line, err):
                probs.append("stderr %r has no position case.tir:%d:COL:" % (first_line(err), line))
        return probs

    saves = []
    for n in c.expect:
        saves += ["--save", "%s=out_%s.npy" % (n, n)]
    st, out, err = run(tir, d, ["run", "case.tir", "--quiet"] + inputs + saves)
    if st != 0:
        return ["exit status %s: %s" % (st, first_line(err))]
    probs = []
    saved = {}
    for n, want in c.expect.items():
        try:
            got = np.load(os.path.join(d, "out_%s.npy" % n), allow_pickle=False)
        except Exception as e:  # report and go on
            probs.append("%s: cannot load the saved file: %s" % (n, e))
            continue
        saved[n] = got
        rtol, atol = c.tol or TOL.get(dtname(want), (0, 0))
        msg = compare(got, want, rtol, atol, c.scale.get(n))
        if msg:
            probs.append("%s: %s" % (n, msg))

    if not c.printed:
        return probs
    with open(os.path.join(d, "case_p.tir"), "w") as f:
        f.write(program(c, "print %s\n" % ", ".join(c.expect)))
    st, out, err = run(tir, d, ["run", "case_p.tir", "--quiet", "--precision", "17", "--full"] + inputs)
    if st != 0:
        return probs + ["printed run: exit status %s: %s" % (st, first_line(err))]
    try:
        blocks = parse_printed(out)
    except ValueError as e:
        return probs + ["printed output does not parse: %s" % e]
    for n, want in c.expect.items():
        if n not in blocks:
            probs.append("printed output has no block %s" % n)
            continue
        dt, shape, values = blocks[n]
        msg = printed_matches(n, dt, shape, values, saved.get(n), want)
        if msg:
            probs.append(msg)
    if c.check_default_format:
        st, out, err = run(tir, d, ["run", "case_p.tir", "--quiet", "--full"] + inputs)
        msg = c.check_default_format(st, out, err)
        if msg:
            probs.append(msg)
    return probs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tir", default="build/tir", help="the tir binary (default build/tir)")
    ap.add_argument("-k", default=None, help="only cases whose name contains this")
    ap.add_argument("-j", type=int, default=2, help="cases run at once (default 2)")
    ap.add_argument("-v", action="store_true", help="also list the passing cases")
    ap.add_argument("--products", action="store_true",
                    help="only the cases with a product (matmul, @, conv2d, attention): "
                         "tests/suites/gemm.sh runs them under --gemm openblas (TIR_GEMM)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)
    tir = os.path.abspath(args.tir)
    if not os.access(tir, os.X_OK):
        print("oracle: %s is missing or not executable" % tir)
        print("0 passed, 1 failed")
        return 1
    msg = oracle_cases.selftest()
    cases = oracle_cases.build()
    if args.k:
        cases = [c for c in cases if args.k in c.name]
    if args.products:
        cases = [c for c in cases if re.search(r"@|matmul|conv2d|attention", c.body or "")]
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print("oracle: duplicate case names: %s" % ", ".join(sorted(dup)))
        print("0 passed, 1 failed")
        return 1
    root = tempfile.mkdtemp(prefix="tir-oracle.")
    lock = threading.Lock()
    passed = failed = 0
    if msg:  # the oracle's own Philox is wrong: say so, count it
        print("oracle self-test: %s" % msg)
        failed += 1

    def one(c):
        try:
            return run_case(c, tir, root)
        except Exception as e:  # a broken case is a failure, not a crash
            return ["oracle error: %s: %s" % (type(e).__name__, e)]

    try:
        with ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
            for c, probs in zip(cases, ex.map(one, cases)):
                with lock:
                    if probs:
                        failed += 1
                        line = "FAIL %s: %s" % (c.name, "; ".join(probs))
                        print(line if len(line) < 600 else line[:597] + "...")
                    else:
                        passed += 1
                        if args.v:
                            print("ok %s" % c.name)
    finally:
        if args.keep:
            print("oracle: kept %s" % root, file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
