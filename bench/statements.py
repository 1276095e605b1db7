#!/usr/bin/python3
"""statements.py TIR [--ops N ...] [--runs R] — a long program of scalar
statements end to end: `tir run` of a generated program of N statements
(bench/peers.py's tiny graph, on x = cast(0.3, f32), then `print y`),
R times, each as a process of its own; beside it NumPy running the same
statements on np.float32 scalars in this process, compiled from source
each time (Python's parse and compile, then the run).  Prints "key value"
lines for bench/run.sh (bench/README.md, "statements"):

    N_tir_wall_ms      median wall time of the whole `tir run` process
    N_tir_parse_ms     its parse (lex, parse and type-check: one pass)
    N_tir_plan_ms      its plan (fusion and schedule)
    N_tir_run_ms       its run (the kernels)
    N_tir_y            the value printed
    N_tir_wall_runs    each run's wall time, in order (ms)
    N_tir_parse_runs   each run's parse
    N_tir_thp          huge pages the kernel gave the runs, and those it
                       could not (/proc/vmstat's thp_fault_alloc and
                       thp_fault_fallback over the runs; Linux)
    N_numpy_compile_ms Python's compile() of the statements
    N_numpy_run_ms     running them
    N_numpy_y          y
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the tiny graph: peers.tiny_lines)

X0 = 0.3


def lines_of(n):
    peers.TINY_OPS = n
    return peers.tiny_lines()


def tir_text(n):
    out = [f"# {n} scalar statements (bench/statements.py)", f"x = cast({X0}, f32)"]
    for name, op, a, b in lines_of(n):
        out.append(f"{name} = {op}({a})" if b is None else f"{name} = {a} {peers.SYM[op]} {b}")
    return "\n".join(out) + "\nprint y\n"


def python_text(n):
    """The same statements as the body of f(), on np.float32 scalars (the
    constants made np.float32 once, as the tiny section does)."""
    consts, body = {}, []
    for name, op, a, b in lines_of(n):
        if isinstance(b, float):
            b = consts.setdefault(b, f"K{len(consts)}")
        body.append(f"    {name} = M.{op}({a})" if b is None else f"    {name} = {a} {peers.SYM[op]} {b}")
    head = "".join(f"{k} = M.float32({c!r})\n" for c, k in consts.items())
    return head + "def f(x):\n" + "\n".join(body) + "\n    return y\n"


PHASES = re.compile(r"parse ([0-9.]+) ms .* plan ([0-9.]+) ms .* run ([0-9.]+) ms")


def thp_counts():
    """(huge pages faulted in, faults that fell back to small pages) so
    far on this machine, or None.  A big program's parse asks for huge
    pages; where the kernel has none free at once it falls back, and
    inside a virtual machine whose host took back the guest's free
    memory the first touch of a fresh one costs far more: the per-run
    figures show which runs met which."""
    try:
        with open("/proc/vmstat") as f:
            v = dict(line.split() for line in f)
        return int(v["thp_fault_alloc"]), int(v["thp_fault_fallback"])
    except (OSError, KeyError, ValueError):
        return None


def bench_tir(tir, n, runs, d):
    prog = os.path.join(d, f"stmts{n}.tir")
    with open(prog, "w") as f:
        f.write(tir_text(n))
    wall, parse, plan, run, y = [], [], [], [], None
    thp0 = thp_counts()
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run([tir, "run", prog], capture_output=True, text=True)
        wall.append((time.perf_counter() - t) * 1e3)
        m = PHASES.search(p.stderr)
        if p.returncode or not m:
            sys.stderr.write(p.stderr)
            raise SystemExit(f"statements.py: tir run {prog} failed")
        parse.append(float(m.group(1)))
        plan.append(float(m.group(2)))
        run.append(float(m.group(3)))
        y = p.stdout.split("\n")[1].strip()
    thp1 = thp_counts()
    med = statistics.median
    print(f"{n}_tir_wall_runs {' '.join(f'{w:.1f}' for w in wall)}")
    print(f"{n}_tir_parse_runs {' '.join(f'{w:.1f}' for w in parse)}")
    if thp0 and thp1:
        print(f"{n}_tir_thp {thp1[0] - thp0[0]} {thp1[1] - thp0[1]}")
    print(f"{n}_tir_wall_ms {med(wall):.3f}")
    print(f"{n}_tir_parse_ms {med(parse):.3f}")
    print(f"{n}_tir_plan_ms {med(plan):.3f}")
    print(f"{n}_tir_run_ms {med(run):.3f}")
    print(f"{n}_tir_y {y}")


def bench_numpy(n, runs):
    try:
        import numpy as np
    except ImportError:
        print(f"{n}_numpy_missing python3-numpy")
        return
    src = python_text(n)
    comp, run, y = [], [], None
    for _ in range(runs):
        t = time.perf_counter()
        code = compile(src, "<statements>", "exec")
        t1 = time.perf_counter()
        scope = {"M": np}
        exec(code, scope)
        y = scope["f"](np.float32(X0))
        t2 = time.perf_counter()
        comp.append((t1 - t) * 1e3)
        run.append((t2 - t1) * 1e3)
    print(f"{n}_numpy_compile_ms {statistics.median(comp):.3f}")
    print(f"{n}_numpy_run_ms {statistics.median(run):.3f}")
    print(f"{n}_numpy_y {float(y):.6g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tir")
    ap.add_argument("--ops", type=int, action="append")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for n in a.ops or [100000]:
            bench_tir(a.tir, n, a.runs, d)
            bench_numpy(n, a.runs)


if __name__ == "__main__":
    main()
