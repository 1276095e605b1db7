#!/usr/bin/python3
"""linalg_check.py — tir's linear algebra (solve, inv, det, slogdet, cholesky,
qr, eigh, svd, lstsq, pinv) against NumPy's np.linalg, and the several
results (`q, r = qr(a)`) through the stack (docs/language.md, "Linear
algebra").

What is checked, f32 and f64, on 1x1, 3x3 and 64x64 matrices, batches
(with solve's batch axes broadcast) and non-square ones for qr, svd, lstsq
and pinv:
  * solve, inv, det, slogdet, cholesky, lstsq, pinv, eigh's eigenvalues and
    svd's singular values against NumPy's values (NumPy computes f32 in f64
    and rounds once, as tir does): f64 within 1e-9 of the largest value,
    f32 within 2e-5;
  * qr, eigh's vectors and svd's u and vt, whose signs LAPACK chooses: the
    products q @ r, v @ diag(w) @ v.T and u @ diag(s) @ vt against a, q's,
    v's, u's and vt's orthonormality, r upper triangular, and the absolute
    values against NumPy's;
  * errors: a singular matrix (solve, inv) and one not positive definite
    (cholesky) at run time with the statement's line:col; non-square
    operands, batch axes that do not broadcast and a result count that does
    not match at check time, with the caret; det and slogdet of a singular
    matrix (0 and (0, -inf), as NumPy); NaN in, NaN out;
  * the same bytes at --threads 1 and 2 for a batch of at least 2 matrices;
    a single 256x256 matrix on OpenBLAS's 2 threads the same bytes run to
    run and NumPy's values; `tir fmt` reads back to
    itself and runs the same; --remote against a `tir serve` started here;
    the REPL (a result made with its sibling asked for).
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
NPDT = {"f32": np.float32, "f64": np.float64}


def ttype(a):
    return "%s[%s]" % ("f32" if a.dtype == np.float32 else "f64", ", ".join(str(d) for d in a.shape))


def run(tmp, body, inputs, outs, extra=()):
    """Run body with inputs (name -> array); the saved outs (name -> array), or an error string."""
    return run_saved(TIR, tmp, body, inputs, outs, ttype, extra)


def close(got, want, dt, what):
    """None when got matches want (dtype, shape, values), else why not."""
    want = np.asarray(want)
    if got.dtype != NPDT[dt] or got.shape != want.shape:
        return "%s: got %s %s, want %s %s" % (what, got.dtype, got.shape, NPDT[dt].__name__, want.shape)
    if got.size == 0:
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(np.isinf(g), np.isinf(w)):
        return "%s: NaN or inf where NumPy has none (or the reverse)" % what
    fin = np.isfinite(w)
    if fin.any() and not np.array_equal(g[~fin], w[~fin]):
        return "%s: infinities differ" % what
    scale = max(1.0, np.abs(w[fin]).max()) if fin.any() else 1.0
    tol = (1e-9 if dt == "f64" else 2e-5) * scale
    err = np.abs(g[fin] - w[fin]).max() if fin.any() else 0.0
    return None if err <= tol else "%s: off by %.3g (tolerance %.3g)" % (what, err, tol)


def recon(got, a, dt, what):
    """A product that must give back a (within the dtype's rounding)."""
    scale = max(1.0, np.abs(a).max()) * max(a.shape[-1], a.shape[-2], 1)
    tol = (1e-11 if dt == "f64" else 3e-6) * scale
    err = np.abs(got - a).max() if a.size else 0.0
    return None if err <= tol else "%s: off by %.3g (tolerance %.3g)" % (what, err, tol)


def orthonormal(x, dt, what, cols=True):
    """x's columns (rows when not cols) orthonormal."""
    x = x.astype(np.float64)
    g = np.swapaxes(x, -1, -2) @ x if cols else x @ np.swapaxes(x, -1, -2)
    eye = np.broadcast_to(np.eye(g.shape[-1]), g.shape)
    err = np.abs(g - eye).max() if g.size else 0.0
    tol = (1e-12 if dt == "f64" else 3e-6) * max(x.shape[-1], x.shape[-2], 1)
    return None if err <= tol else "%s: not orthonormal by %.3g" % (what, err)


def first(*whys):
    for w in whys:
        if w:
            return w
    return None


def rng(name):
    return np.random.default_rng(sum(map(ord, name)) * 7919)


def spd(r, shape, dt):
    """Symmetric positive definite matrices of shape [..., n, n]."""
    m = r.standard_normal(shape)
    n = shape[-1]
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(NPDT[dt])


SQUARE = [(1, 1), (3, 3), (64, 64), (4, 3, 3), (2, 3, 5, 5)]
RECT = [(1, 1), (3, 3), (5, 3), (3, 5), (64, 40), (40, 64), (2, 5, 3), (3, 2, 4)]


def values_case(op, dt, shape):
    """One-result ops and slogdet: NumPy's values."""
    def fn(tmp):
        r = rng("%s %s %s" % (op, dt, shape))
        a = r.uniform(-2, 2, shape).astype(NPDT[dt])
        if op in ("cholesky",):
            a = spd(r, shape, dt)
        ins = {"a": a}
        if op == "solve":
            n = shape[-1]
            b = r.uniform(-2, 2, shape[:-1] + (2,)).astype(NPDT[dt])
            bv = r.uniform(-2, 2, shape[:-1]).astype(NPDT[dt])
            ins.update(b=b, bv=bv)
            got = run(tmp, "x = solve(a, b)\nxv = solve(a, bv)", ins, ["x", "xv"])
            if isinstance(got, str):
                return got
            return first(close(got["x"], np.linalg.solve(a, b), dt, "x"),
                         close(got["xv"], np.linalg.solve(a, bv), dt, "xv"))
        if op == "lstsq":
            b = r.uniform(-2, 2, shape[:-1] + (2,)).astype(NPDT[dt])
            bv = r.uniform(-2, 2, shape[-2:-1]).astype(NPDT[dt])
            ins.update(b=b, bv=bv)
            got = run(tmp, "x = lstsq(a, b)\nxv = lstsq(a, bv)", ins, ["x", "xv"])
            if isinstance(got, str):
                return got
            return first(close(got["x"], np.linalg.lstsq(a, b, rcond=None)[0], dt, "x"),
                         close(got["xv"], np.linalg.lstsq(a, bv, rcond=None)[0], dt, "xv"))
        if op == "slogdet":
            got = run(tmp, "s, l = slogdet(a)", ins, ["s", "l"])
            if isinstance(got, str):
                return got
            s, l = np.linalg.slogdet(a)
            return first(close(got["s"], s, dt, "sign"), close(got["l"], l, dt, "logabsdet"))
        got = run(tmp, "x = %s(a)" % op, ins, ["x"])
        if isinstance(got, str):
            return got
        want = getattr(np.linalg, op)(a)
        return close(got["x"], want, dt, op)
    return fn


def qr_case(dt, shape):
    def fn(tmp):
        a = rng("qr %s %s" % (dt, shape)).uniform(-2, 2, shape).astype(NPDT[dt])
        got = run(tmp, "q, r = qr(a)", {"a": a}, ["q", "r"])
        if isinstance(got, str):
            return got
        q, r = got["q"], got["r"]
        nq, nr = np.linalg.qr(a)
        if q.shape != nq.shape or r.shape != nr.shape or q.dtype != NPDT[dt]:
            return "shapes %s %s, want %s %s" % (q.shape, r.shape, nq.shape, nr.shape)
        q64, r64 = q.astype(np.float64), r.astype(np.float64)
        return first(recon(q64 @ r64, a.astype(np.float64), dt, "q @ r"), orthonormal(q, dt, "q"),
                     None if np.array_equal(r, np.triu(r)) else "r is not upper triangular",
                     close(np.abs(q), np.abs(nq), dt, "|q|"), close(np.abs(r), np.abs(nr), dt, "|r|"))
    return fn


def eigh_case(dt, shape):
    def fn(tmp):
        r = rng("eigh %s %s" % (dt, shape))
        a = r.uniform(-2, 2, shape).astype(NPDT[dt])
        # the upper triangle is not read (UPLO='L'): garbage there must not matter
        got = run(tmp, "w, v = eigh(a)", {"a": a}, ["w", "v"])
        if isinstance(got, str):
            return got
        w, v = got["w"], got["v"]
        nw, nv = np.linalg.eigh(a)
        low = np.tril(a.astype(np.float64))
        sym = low + np.swapaxes(np.tril(low, -1), -1, -2)
        v64 = v.astype(np.float64)
        back = v64 @ (w.astype(np.float64)[..., :, None] * np.swapaxes(v64, -1, -2))
        return first(close(w, nw, dt, "w"), recon(back, sym, dt, "v diag(w) v.T"), orthonormal(v, dt, "v"),
                     close(np.abs(v), np.abs(nv), dt, "|v|"),
                     None if np.all(np.diff(w.astype(np.float64), axis=-1) >= 0) else "w not ascending")
    return fn


def svd_case(dt, shape, full):
    def fn(tmp):
        a = rng("svd %s %s" % (dt, shape)).uniform(-2, 2, shape).astype(NPDT[dt])
        body = "u, s, vt = svd(a%s)" % (", full_matrices=true" if full else "")
        got = run(tmp, body, {"a": a}, ["u", "s", "vt"])
        if isinstance(got, str):
            return got
        u, s, vt = got["u"], got["s"], got["vt"]
        nu, ns, nvt = np.linalg.svd(a, full_matrices=full)
        if u.shape != nu.shape or vt.shape != nvt.shape:
            return "shapes %s %s, want %s %s" % (u.shape, vt.shape, nu.shape, nvt.shape)
        k = s.shape[-1]
        u64, vt64 = u.astype(np.float64)[..., :, :k], vt.astype(np.float64)[..., :k, :]
        back = u64 @ (s.astype(np.float64)[..., :, None] * vt64)
        return first(close(s, ns, dt, "s"), recon(back, a.astype(np.float64), dt, "u diag(s) vt"),
                     orthonormal(u, dt, "u"), orthonormal(vt, dt, "vt", cols=False),
                     close(np.abs(u), np.abs(nu), dt, "|u|"), close(np.abs(vt), np.abs(nvt), dt, "|vt|"))
    return fn


def pinv_case(dt, shape):
    def fn(tmp):
        a = rng("pinv %s %s" % (dt, shape)).uniform(-2, 2, shape).astype(NPDT[dt])
        got = run(tmp, "x = pinv(a)", {"a": a}, ["x"])
        if isinstance(got, str):
            return got
        return close(got["x"], np.linalg.pinv(a), dt, "pinv")
    return fn


def broadcast_case(tmp):
    r = rng("broadcast")
    # NumPy 1.x: b is a vector when it has one axis fewer than a
    a = r.uniform(-2, 2, (2, 1, 4, 4))
    b = r.uniform(-2, 2, (1, 3, 4, 2))
    bv = r.uniform(-2, 2, (1, 3, 4))
    got = run(tmp, "x = solve(a, b)\nxv = solve(a, bv)", {"a": a, "b": b, "bv": bv}, ["x", "xv"])
    if isinstance(got, str):
        return got
    return first(close(got["x"], np.linalg.solve(a, b), "f64", "solve broadcast"),
                 close(got["xv"], np.linalg.solve(a, bv), "f64", "solve broadcast vector"))


def int_case(tmp):
    # integer operands compute as f32 (docs/language.md): NumPy gives f64
    prog = "a = [[2, 1], [1, 3]]\nx = inv(a)\nprint x\n"
    with open(os.path.join(tmp, "i.tir"), "w") as f:
        f.write(prog)
    r = subprocess.run([TIR, "run", os.path.join(tmp, "i.tir"), "--quiet", "--save",
                        "x=" + os.path.join(tmp, "x.npy")], capture_output=True, text=True)
    if r.returncode:
        return r.stderr
    return close(np.load(os.path.join(tmp, "x.npy")), np.linalg.inv(np.array([[2, 1], [1, 3]])), "f32", "inv")


def singular_values(tmp):
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    got = run(tmp, "d = det(a)\ns, l = slogdet(a)", {"a": a}, ["d", "s", "l"])
    if isinstance(got, str):
        return got
    s, l = np.linalg.slogdet(a)
    return first(close(got["d"], np.linalg.det(a), "f64", "det"), close(got["s"], s, "f64", "sign"),
                 close(got["l"], l, "f64", "logabsdet"))


def nan_case(tmp):
    a = np.array([[[1.0, np.nan], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])
    got = run(tmp, "x = inv(a)\nw, v = eigh(a)\nd = det(a)", {"a": a}, ["x", "w", "v", "d"])
    if isinstance(got, str):
        return got
    if not (np.isnan(got["x"][0]).all() and np.isnan(got["w"][0]).all() and np.isnan(got["d"][0])):
        return "a matrix with a NaN did not give NaN"
    return first(close(got["x"][1], np.linalg.inv(a[1]), "f64", "inv of the other"),
                 close(got["d"][1], np.linalg.det(a[1]), "f64", "det of the other"))


# ---- errors: (body, inputs, stderr regex, the names saved: a run-time error needs its value asked for) ----
ERRORS = [
    ("singular solve", "x = solve(a, b)", {"a": np.array([[1.0, 2.0], [2.0, 4.0]]), "b": np.ones(2)},
     r"case\.tir:3:5: error: solve: singular matrix", ["x"]),
    ("singular inv batch", "x = inv(a)",
     {"a": np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])},
     r"case\.tir:2:5: error: inv: singular matrix \(matrix 1 of the batch\)", ["x"]),
    ("not positive definite", "x = cholesky(a)", {"a": np.array([[1.0, 2.0], [2.0, 1.0]])},
     r"case\.tir:2:5: error: cholesky: matrix is not positive definite", ["x"]),
    ("non-square", "x = inv(a)", {"a": np.ones((3, 4))},
     r"case\.tir:2:9: error: inv: needs square matrices \(\.\.\., n, n\), got f64\[3, 4\]\n    x = inv\(a\)\n            \^", None),
    ("non-square eigh", "w, v = eigh(a)", {"a": np.ones((2, 3))},
     r"case\.tir:2:13: error: eigh: needs square matrices", None),
    ("batch mismatch", "x = solve(a, b)", {"a": np.ones((2, 3, 3)), "b": np.ones((4, 3))},
     r"case\.tir:3:14: error: solve: batch dimensions do not broadcast", None),
    ("vector", "x = det(a)", {"a": np.ones(3)},
     r"case\.tir:2:9: error: det: needs a matrix \(at least 2 dimensions\), got f64\[3\]", None),
    ("one name for two", "q = qr(a)", {"a": np.ones((2, 2))},
     r"case\.tir:2:5: error: qr gives 2 results; bind each to a name: q, r = qr\(\.\.\.\)\n    q = qr\(a\)\n        \^", None),
    ("three names for two", "x, y, z = qr(a)", {"a": np.ones((2, 2))},
     r"case\.tir:2:11: error: qr gives 2 results \(q, r\) but 3 names are bound", None),
    ("two names for one", "x, y = inv(a)", {"a": np.ones((2, 2))},
     r"case\.tir:2:8: error: inv gives one result but 2 names are bound", None),
    ("in an expression", "x = matmul(qr(a), a)", {"a": np.ones((2, 2))},
     r"case\.tir:2:12: error: qr gives 2 results", None),
    ("the call in an expression", "x, y = qr(a) + a", {"a": np.ones((2, 2))},
     r"case\.tir:2:8: error: qr gives 2 results; bind each to a name first", None),
    ("not a call", "x, y = a", {"a": np.ones((2, 2))},
     r"case\.tir:2:8: error: 2 names are bound: the value must be a call", None),
    ("bound twice", "x, x = qr(a)", {"a": np.ones((2, 2))},
     r"case\.tir:2:4: error: 'x' is bound twice", None),
    ("annotation", "q: f64[2, 3], r: f64[2, 2] = qr(a)", {"a": np.ones((2, 2))},
     r"case\.tir:2:4: error: annotation says f64\[2, 3\] but qr's result 1 is f64\[2, 2\]", None),
]


def error_case(body, inputs, pattern, outs):
    def fn(tmp):
        got = run(tmp, body, inputs, outs or [])
        if not isinstance(got, str):
            return "ran without an error"
        if not got.startswith("exit 1: ") or not re.search(pattern, got):
            return "stderr %r does not match %r" % (got, pattern)
        return None
    return fn


def threads_case(tmp):
    r = rng("threads")
    a = r.uniform(-2, 2, (24, 33, 33))
    outs = {}
    for t in ("1", "2"):
        d = os.path.join(tmp, t)
        os.mkdir(d)
        got = run(d, "w, v = eigh(a)\nx = solve(a, a)\nu, s, vt = svd(a)", {"a": a}, ["w", "v", "x", "u", "s", "vt"],
                  ("--threads", t))
        if isinstance(got, str):
            return got
        outs[t] = got
    for n in outs["1"]:
        if outs["1"][n].tobytes() != outs["2"][n].tobytes():
            return "%s differs between --threads 1 and 2" % n
    return None


def threads_large_case(tmp):
    # docs/language.md's rule: fewer matrices than threads, each of at least
    # 256 x 256, run on OpenBLAS's threads, bits those of the thread count
    # (the same run to run); a batch of as many matrices as threads, each
    # matrix on one thread, has the bits of --threads 1
    r = rng("threads large")
    a = r.uniform(-2, 2, (2, 256, 256))
    body = "w, v = eigh(a)\nx = solve(a, a)\nu, s, vt = svd(a)"
    names = ["w", "v", "x", "u", "s", "vt"]
    outs = {}
    for key, t, x in (("one 1", "1", a[:1]), ("one 2", "2", a[:1]), ("one 2 again", "2", a[:1]),
                      ("two 1", "1", a), ("two 2", "2", a)):
        d = os.path.join(tmp, key.replace(" ", "_"))
        os.mkdir(d)
        got = run(d, body, {"a": x}, names, ("--threads", t))
        if isinstance(got, str):
            return got
        outs[key] = got
        if key == "one 2":
            for n in ("w", "s"):
                want = np.linalg.eigh(x)[0] if n == "w" else np.linalg.svd(x, compute_uv=False)
                why = close(got[n], want, "f64", n + " on OpenBLAS's threads")
                if why:
                    return why
    # every op on one matrix on OpenBLAS's threads, against NumPy
    s = spd(r, (256, 256), "f64")
    g = r.uniform(-2, 2, (256, 256))
    b = r.uniform(-2, 2, (256, 3))
    d = os.path.join(tmp, "all")
    os.mkdir(d)
    got = run(d, "x = solve(g, b)\nxv = solve(g, bv)\ni = inv(g)\nsg, ld = slogdet(g)\nl = cholesky(s)\n"
                 "q, rr = qr(g)\nls = lstsq(g, b)\np = pinv(g)",
              {"g": g, "b": b, "bv": b[:, 0], "s": s}, ["x", "xv", "i", "sg", "ld", "l", "q", "rr", "ls", "p"],
              ("--threads", "2"))
    if isinstance(got, str):
        return got
    sg, ld = np.linalg.slogdet(g)
    why = first(close(got["x"], np.linalg.solve(g, b), "f64", "solve"),
                close(got["xv"], np.linalg.solve(g, b[:, 0]), "f64", "solve vector"),
                close(got["i"], np.linalg.inv(g), "f64", "inv"),
                close(got["sg"], sg, "f64", "slogdet sign"), close(got["ld"], ld, "f64", "slogdet"),
                close(got["l"], np.linalg.cholesky(s), "f64", "cholesky"),
                recon(got["q"] @ got["rr"], g, "f64", "q @ r"),
                close(got["ls"], np.linalg.lstsq(g, b, rcond=None)[0], "f64", "lstsq"),
                close(got["p"], np.linalg.pinv(g), "f64", "pinv"))
    if why:
        return why + " (one 256x256 matrix at --threads 2)"
    for n in names:
        if outs["one 2"][n].tobytes() != outs["one 2 again"][n].tobytes():
            return "%s differs between two runs at --threads 2" % n
        if outs["two 2"][n].tobytes() != outs["two 1"][n].tobytes():
            return "%s of a batch of 2 differs between --threads 1 and 2" % n
        if outs["two 1"][n][:1].tobytes() != outs["one 1"][n].tobytes():
            return "%s of matrix 0 differs alone and in a batch at --threads 1" % n
    return None


PROG = """a = [[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]]
b = [[1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
q, r = qr(matmul(a, b))
w, v = eigh(a)
s, l = slogdet(add(q, 1.0))
u, sv, vt = svd(b, full_matrices=true)
print matmul(q, r), w, v, s, l, sv, abs(u), det(a), solve(a, [1.0, 2.0, 3.0]), inv(a)
print cholesky(a), lstsq(b, a), pinv(b)
"""


def fmt_case(tmp):
    p = os.path.join(tmp, "p.tir")
    with open(p, "w") as f:
        f.write(PROG)
    f1 = subprocess.run([TIR, "fmt", p], capture_output=True, text=True)
    if f1.returncode:
        return "fmt: " + f1.stderr
    if "q: f32[3, 3], r: f32[3, 3] = qr(_t" not in f1.stdout and "q: f32[3, 3], r: f32[3, 3] = qr(" not in f1.stdout:
        return "fmt wrote no multi-result line: %r" % f1.stdout
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
        f.write(PROG + "x = inv([[1.0, 2.0], [2.0, 4.0]])\nprint x\n")
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
        if (loc.stdout, loc.stderr, loc.returncode) != (rem.stdout, rem.stderr, rem.returncode):
            return "remote differs: %r / %r" % (rem.stderr, loc.stderr)
        if "inv: singular matrix" not in rem.stderr or "p.tir:9:5" not in rem.stderr:
            return "remote error not named: %r" % rem.stderr
        return None
    finally:
        srv.kill()
        srv.wait()
        log.close()


def repl_case(tmp):
    # the REPL: several names bound, `a, b` still prints two values, and
    # the call's other result is made with the one asked for (kept)
    text = "a = [[2.0, 1.0], [1.0, 3.0]]\nw, v = eigh(a)\nw\n.vars\nq, r = qr(a)\nq, r\n"
    r = subprocess.run([TIR, "repl"], input=text, capture_output=True, text=True, timeout=60)
    if r.returncode or r.stderr:
        return "repl: %r" % r.stderr
    if not re.search(r"^v +f32\[2, 2\] +computed$", r.stdout, re.M):
        return "v was not made with w: %r" % r.stdout
    if "q: f32[2, 2]" not in r.stdout or "r: f32[2, 2]" not in r.stdout:
        return "`q, r` did not print both: %r" % r.stdout
    return None


def help_case(tmp):
    r = subprocess.run([TIR, "help", "ops"], capture_output=True, text=True)
    for want in ("qr          (a) -> q, r", "svd         (a, full_matrices:bool=false) -> u, s, vt", "solve", "pinv"):
        if want not in r.stdout:
            return "tir help ops lacks %r" % want
    return None


def main():
    for dt in ("f32", "f64"):
        for op in ("solve", "inv", "det", "slogdet", "cholesky"):
            for shape in SQUARE:
                check("%s %s %s" % (op, dt, shape), values_case(op, dt, shape))
        for shape in SQUARE:
            check("eigh %s %s" % (dt, shape), eigh_case(dt, shape))
        for shape in RECT:
            check("qr %s %s" % (dt, shape), qr_case(dt, shape))
            check("svd %s %s" % (dt, shape), svd_case(dt, shape, False))
            check("pinv %s %s" % (dt, shape), pinv_case(dt, shape))
        for shape in [(3, 5), (5, 3), (64, 40)]:
            check("svd full %s %s" % (dt, shape), svd_case(dt, shape, True))
        for shape in [(1, 1), (3, 3), (5, 3), (64, 40), (40, 64)]:
            check("lstsq %s %s" % (dt, shape), values_case("lstsq", dt, shape))
    check("solve broadcast", broadcast_case)
    check("integer operand", int_case)
    check("singular det slogdet", singular_values)
    check("nan", nan_case)
    for name, body, inputs, pattern, outs in ERRORS:
        check("error " + name, error_case(body, inputs, pattern, outs))
    check("threads", threads_case)
    check("threads large", threads_large_case)
    check("fmt", fmt_case)
    check("remote", remote_case)
    check("repl", repl_case)
    check("help", help_case)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
