"""check_util.py — what the *_check.py scripts of tests/oracle share: the
"ok NAME" / "FAIL NAME: WHY" lines and their count, a check run in a fresh
temporary directory, and one tir program run with .npy inputs and saved
results.  Each check ends with summary(), the "N passed, M failed" line.
"""
import os
import subprocess
import tempfile

import numpy as np

passed = failed = 0


def ok(name):
    global passed
    passed += 1
    print("ok", name)


def bad(name, why):
    global failed
    failed += 1
    print("FAIL %s: %s" % (name, why))


def summary():
    """Print "N passed, M failed"; the exit status (1 when something failed)."""
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def check(name, fn):
    """fn(tmp) in a fresh temporary directory: a reason it failed, or nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            why = fn(tmp)
        except Exception as e:  # a crash of the check is a failure, named
            why = "%s: %s" % (type(e).__name__, e)
        if why:
            bad(name, why)
        else:
            ok(name)


def run_saved(tir, tmp, body, inputs, outs, ttype, extra=()):
    """Run body with inputs (name -> array, declared as ttype(array) says); the
    saved outs (name -> array), or an error string."""
    lines = ["input %s: %s" % (n, ttype(a)) for n, a in inputs.items()]
    prog = os.path.join(tmp, "case.tir")
    with open(prog, "w") as f:
        f.write("\n".join(lines + [body]) + "\n")
    cmd = [tir, "run", prog, "--quiet"] + list(extra)
    for n, a in inputs.items():
        p = os.path.join(tmp, "in_%s.npy" % n)
        np.save(p, a)
        cmd += ["--input", "%s=%s" % (n, p)]
    for n in outs:
        cmd += ["--save", "%s=%s" % (n, os.path.join(tmp, "out_%s.npy" % n))]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode:
        return "exit %d: %s" % (r.returncode, r.stderr.strip())
    return {n: np.load(os.path.join(tmp, "out_%s.npy" % n)) for n in outs}
