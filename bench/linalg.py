#!/usr/bin/python3
"""linalg.py — the linalg section's NumPy side: np.linalg on the very data
bench/tir_time gives bench/linalg_solve.tir and bench/linalg_eigh.tir,
timed as peers.py times (median of at least RUNS calls lasting at least a
second, after WARMUP), OpenBLAS at THREADS threads (set before NumPy is
imported).  Prints "numpy_ms", "numpy_sum", "numpy_version" lines, and
"numpy_cpu_ms": the median CPU time of the process a call (all its
threads), for a loaded machine.

    linalg.py [--threads N] [--runs N] [--warmup N] solve|eigh

Not a test.
"""
import argparse
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("section", choices=["solve", "eigh"])
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    from peers import TIR_HASH, TIR_KSTEP, report, say

    def data(n, k, lo=-2.0, hi=2.0):  # bench/tir_time.c's numbers, kept in f64
        i = np.arange(n, dtype=np.uint64)
        h = (i * np.uint64(TIR_HASH) + np.uint64(k * TIR_KSTEP)) % np.uint64(1 << 32)
        return lo + (hi - lo) * (h.astype(np.float64) / 4294967296.0)

    say("numpy_version", "numpy " + np.__version__)

    def cpu(fn):
        ts = []
        for _ in range(max(args.runs, 5)):
            c0 = time.process_time()
            fn()
            ts.append((time.process_time() - c0) * 1e3)
        say("numpy_cpu_ms", "%.4f" % sorted(ts)[len(ts) // 2])

    if args.section == "solve":
        a = data(64 * 256 * 256, 0).reshape(64, 256, 256)
        b = data(64 * 256, 1).reshape(64, 256)
        eye = np.eye(256) * 64.0
        report("numpy", lambda: np.linalg.solve(a + eye, b), args.runs, args.warmup, lambda y: float(y.sum()))
        cpu(lambda: np.linalg.solve(a + eye, b))
    else:
        a = data(1024 * 1024, 0).reshape(1024, 1024)
        report("numpy", lambda: np.linalg.eigh(a)[0], args.runs, args.warmup, lambda y: float(y.sum()))
        cpu(lambda: np.linalg.eigh(a)[0])


if __name__ == "__main__":
    main()
