#!/usr/bin/python3
"""syntax_check.py — NumPy's spellings in tir checked against NumPy itself.

    /usr/bin/python3 tests/oracle/syntax_check.py [--tir build/tir] [--seed N] [-v]

tir's indexing and operators are written as Python writes them, so each
generated expression is one text: tir runs it, and Python evaluates the same
text over NumPy arrays.  Checked, from a fixed seed:

  - indexing: random index expressions (integers, negative ones, slices with
    any step, "...", None, a list of integers as NumPy's take along an axis,
    and mixes) on tensors of rank 1 to 4: shape, dtype and values;
  - operators: % and // (NumPy's floor semantics, negative operands, ints and
    floats), **, comparisons (chained ones on scalars, as Python), & | ~ on
    bool, x.T, and random expression trees for precedence (-2**2 is -4);
  - names for strings and relative paths: a program in a subfolder loads
    "w.npy" beside itself from another working directory, through a name
    and a function's string parameter; tir fmt of docs/examples/
    data-parallel.tir from another folder;
  - errors: an out-of-range integer index is refused when checked, with the
    position of the index.

Prints one line per failing check, then "N passed, M failed".
"""
import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
passed = 0
failed = 0
verbose = False


def ok(name):
    global passed
    passed += 1
    if verbose:
        print("ok", name)


def bad(name, why):
    global failed
    failed += 1
    print("FAIL %s: %s" % (name, why))


def tir_type(a):
    dt = {np.float32: "f32", np.float64: "f64", np.int64: "i64", np.bool_: "bool"}[a.dtype.type]
    return "%s[%s]" % (dt, ", ".join(str(d) for d in a.shape))


def same(got, want, rtol):
    if got.dtype != want.dtype or got.shape != want.shape:
        return "got %s, want %s" % (tir_type(got), tir_type(want))
    if want.dtype.kind in "biu":
        return None if np.array_equal(got, want) else "values differ: got %s, want %s" % (got, want)
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_ok = np.array_equal(np.isnan(g), np.isnan(w))
    fin = np.isfinite(w)
    inf_ok = np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)])
    close = np.all(np.abs(g[fin] - w[fin]) <= 1e-6 + rtol * np.abs(w[fin]))
    if nan_ok and inf_ok and close:
        return None
    return "values differ: got %s, want %s" % (got, want)


def run_batch(tir, tmp, tag, inputs, exprs, rtol=1e-5):
    """One program binding r0, r1, ... to exprs (tir text = Python text),
    its inputs given as .npy files; each result compared with NumPy's."""
    lines = []
    args = [tir, "run", "--quiet"]
    for name, a in inputs.items():
        np.save(os.path.join(tmp, name + ".npy"), a)
        lines.append("input %s: %s" % (name, tir_type(a)))
        args += ["--input", "%s=%s" % (name, os.path.join(tmp, name + ".npy"))]
    wants = []
    for k, e in enumerate(exprs):
        with np.errstate(all="ignore"):
            want = np.asarray(eval(e, {"np": np}, dict(inputs)))
        if want.dtype == np.float64 and not any(v.dtype == np.float64 for v in inputs.values()):
            want = want.astype(np.float32)  # a float literal alone is f32 in tir (f64 in Python)
        wants.append(want)
        lines.append("r%d = %s" % (k, e))
        args += ["--save", "r%d=%s" % (k, os.path.join(tmp, "r%d.npy" % k))]
    prog = os.path.join(tmp, tag + ".tir")
    with open(prog, "w") as f:
        f.write("\n".join(lines) + "\n")
    args.insert(2, prog)
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        bad(tag, "exit %d: %s" % (p.returncode, p.stderr.strip()[:2000]))
        return
    for k, e in enumerate(exprs):
        got = np.load(os.path.join(tmp, "r%d.npy" % k))
        why = same(got, wants[k], rtol)
        if why:
            bad("%s: %s" % (tag, e), why)
        else:
            ok("%s: %s" % (tag, e))


def rand_index(rng, shape):
    """A random NumPy basic index (and at most one list of integers) for a
    tensor of this shape, as text."""
    rank = len(shape)
    nconsume = rng.randint(0, rank)
    use_list = rng.random() < 0.25
    ell = rng.randint(0, nconsume) if rng.random() < 0.3 else None
    # the axis each consuming item takes: "..." stands for the ones between
    axes = list(range(nconsume)) if ell is None else \
        list(range(ell)) + list(range(rank - (nconsume - ell), rank))
    items = []
    listed = False
    for axis in axes:
        d = shape[axis]
        r = rng.random()
        if r < 0.3 and not use_list:
            items.append(str(rng.randint(-d, d - 1)))
        elif r < 0.5 and use_list and not listed:
            listed = True
            n = rng.randint(1, 3)
            items.append("[%s]" % ", ".join(str(rng.randint(-d, d - 1)) for _ in range(n)))
        else:
            def bound():
                return "" if rng.random() < 0.4 else str(rng.randint(-d - 2, d + 2))
            step = rng.choice(["", "", "1", "2", "-1", "-2", "3"])
            items.append(bound() + ":" + bound() + (":" + step if step or rng.random() < 0.2 else ""))
    if ell is not None:
        items.insert(ell, "...")
    for _ in range(rng.randint(0, 2)):
        items.insert(rng.randint(0, len(items)), "None")
    if not items:
        items = ["..."]
    return "x[%s]" % ", ".join(items)


def check_indexing(tir, tmp, rng, per_rank):
    for rank in range(1, 5):
        shape = tuple(rng.randint(1, 5) for _ in range(rank))
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 1.5 - 3
        exprs = [rand_index(rng, shape) for _ in range(per_rank)]
        exprs += ["x.T", "x[..., None]", "x[::-1]", "x[-1]", "x[None]"]
        run_batch(tir, tmp, "index-rank%d" % rank, {"x": x}, exprs)


def check_operators(tir, tmp, rng):
    a = np.array([-9, -7, -4, -3, -1, 0, 1, 3, 4, 7, 9, 12], dtype=np.int64)
    b = np.array([4, -3, 3, -3, 2, -5, -2, 2, -4, 3, -2, 5], dtype=np.int64)
    fa = np.array([-7.5, -3.0, -0.5, 0.0, 0.25, 1.0, 2.5, 7.5, -1e-3, 5.0, -6.0, 1e6],
                  dtype=np.float32)
    fb = np.array([2.0, -2.0, 0.75, -1.5, 0.1, 3.0, -0.3, 2.0, 0.5, -4.0, 4.0, 7.0],
                  dtype=np.float32)
    ints = ["a % b", "a // b", "a % 3", "a // -3", "-7 % b", "-7 // b", "a % -4", "b ** 2",
            "a ** 3", "-a ** 2", "-2 ** 2", "2 ** 3 ** 2", "a < b", "a <= b", "a > b", "a >= b",
            "a == b", "a != b", "(a > 0) & (b > 0)", "(a > 0) | (b < 0)", "~(a == b)",
            "a + b * 2 % 5 // 2", "a - -b", "a * -b ** 2", "1 < 2 < 3", "3 < 2 < 4",
            "2 == 2 != 3", "a[::2] % b[1::2]"]
    floats = ["fa % fb", "fa // fb", "fa % -2.0", "fa // 0.5", "-fa % fb", "fa ** 2.0",
              "abs(fa) ** 0.5", "-fa ** 2", "2.0 ** -fb", "fa // 0.1", "fa % 0.1",
              "fa < fb", "fa >= fb", "(fa > 0.0) & ~(fb > 0.0) | (fa == fb)",
              "fa * fb // 2.0 % 3.0", "1.0 < 2.5 <= 2.5", "fa @ fb", "-2.0 ** 2"]
    run_batch(tir, tmp, "operators-int", {"a": a, "b": b}, ints)
    run_batch(tir, tmp, "operators-float", {"fa": fa, "fb": fb}, floats, rtol=1e-5)
    # precedence: random trees written without parentheses, evaluated alike
    leaves = ["fa", "fb", "2.0", "0.5", "3.0"]
    ops = ["+", "-", "*", "/", "**"]

    def tree(depth):
        if depth == 0 or rng.random() < 0.3:
            t = rng.choice(leaves)
            return ("-" + t) if rng.random() < 0.2 else t
        t = tree(depth - 1) + " " + rng.choice(ops) + " " + tree(depth - 1)
        return "(" + t + ")" if rng.random() < 0.2 else t

    pos = {"fa": np.abs(fa) + 0.5, "fb": np.abs(fb) + 0.5}
    exprs = [tree(3) for _ in range(40)]
    run_batch(tir, tmp, "precedence", pos, exprs, rtol=1e-4)
    mods = ["+", "-", "*", "//", "%"]

    def tree2(depth):
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(["a", "b", "3", "-2", "5"])
        return tree2(depth - 1) + " " + rng.choice(mods) + " " + tree2(depth - 1)

    nz = {"a": a, "b": b}

    class Divisors(ast.NodeTransformer):
        """Each // and % as chk(x, y, f): notes a zero divisor."""
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
                fn = "np.floor_divide" if isinstance(node.op, ast.FloorDiv) else "np.mod"
                return ast.Call(func=ast.Name("chk", ast.Load()),
                                args=[node.left, node.right, ast.parse(fn, mode="eval").body],
                                keywords=[])
            return node

    safe = []
    while len(safe) < 40:
        e = tree2(3)
        zero = [False]

        def chk(x, y, f):
            zero[0] |= bool(np.any(np.asarray(y) == 0))
            return f(x, y)
        t = ast.fix_missing_locations(Divisors().visit(ast.parse(e, mode="eval")))
        with np.errstate(all="ignore"):
            eval(compile(t, "e", "eval"), {"np": np, "chk": chk}, dict(nz))
        # a zero divisor is an error in tir (NumPy gives 0): keep those out
        if not zero[0]:
            safe.append(e)
    run_batch(tir, tmp, "precedence-int", nz, safe)


def check_strings_and_paths(tir, tmp):
    sub = os.path.join(tmp, "sub")
    os.makedirs(sub, exist_ok=True)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(os.path.join(sub, "w.npy"), w)
    prog = os.path.join(sub, "p.tir")
    with open(prog, "w") as f:
        f.write('ck = "w.npy"\n'
                'stem = "w"\n'
                'fn scaled(path, k) {\n  v = load(path)\n  return v * k\n}\n'
                'r0 = load(ck)\n'
                'r1 = scaled(ck, 3)\n'
                'r2 = load("{stem}.npy")[1, ::-1]\n')
    other = os.path.join(tmp, "elsewhere")
    os.makedirs(other, exist_ok=True)
    args = [tir, "run", "--quiet", prog]
    wants = [w, w * 3, w[1, ::-1]]
    for k in range(3):
        args += ["--save", "r%d=%s" % (k, os.path.join(tmp, "s%d.npy" % k))]
    p = subprocess.run(args, capture_output=True, text=True, cwd=other, timeout=60)
    if p.returncode != 0:
        bad("strings and relative paths", "exit %d: %s" % (p.returncode, p.stderr.strip()))
    else:
        for k in range(3):
            why = same(np.load(os.path.join(tmp, "s%d.npy" % k)), wants[k], 0)
            (bad("strings and relative paths r%d" % k, why) if why else ok("strings r%d" % k))
    ex = os.path.join(ROOT, "docs", "examples", "data-parallel.tir")
    p = subprocess.run([tir, "fmt", ex], capture_output=True, text=True, cwd=other, timeout=60)
    if p.returncode != 0 or 'load("x.npy")' not in p.stdout:
        bad("fmt docs/examples/data-parallel.tir from another folder", p.stderr.strip() or p.stdout)
    else:
        ok("fmt data-parallel.tir from another folder")


def check_errors(tir, tmp):
    cases = [
        ("x = ones([3, 4])\ny = x[1, 4]\n", "e.tir:2:10: error: index 4 is out of bounds for axis 1 with size 4"),
        ("x = ones([3])\ny = x[-4]\n", "e.tir:2:7: error: index -4 is out of bounds for axis 0 with size 3"),
        ("x = ones([3])\ny = x[0, 0]\n", "e.tir:2:6: error: too many indices for f32[3]"),
        ("x = ones([3])\ny = x[::0]\n", "step must not be zero"),
        ("x = ones([3])\ny = x[..., ...]\n", "e.tir:2:12: error: an index can only have a single ellipsis"),
    ]
    for src, want in cases:
        prog = os.path.join(tmp, "e.tir")
        with open(prog, "w") as f:
            f.write(src)
        p = subprocess.run([tir, "check", "e.tir"], capture_output=True, text=True, cwd=tmp, timeout=60)
        if p.returncode != 1 or want not in p.stderr:
            bad("error %r" % src, "exit %d, stderr: %s (want %r)" % (p.returncode, p.stderr.strip(), want))
        else:
            ok("error %r" % want)


def main():
    global verbose
    ap = argparse.ArgumentParser()
    ap.add_argument("--tir", default=os.path.join(ROOT, "build", "tir"))
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--per-rank", type=int, default=60)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    verbose = a.v
    tir = os.path.abspath(a.tir)
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="tir-syntax-")
    try:
        check_indexing(tir, tmp, rng, a.per_rank)
        check_operators(tir, tmp, rng)
        check_strings_and_paths(tir, tmp)
        check_errors(tir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
