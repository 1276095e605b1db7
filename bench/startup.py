#!/usr/bin/python3
"""startup.py TIR — wall time of `tir run` on a one-line program: the median
of 51 runs, next to /bin/true's (process start-up alone) measured the same
way in the same run.  Prints "key value" lines for bench/run.sh."""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def median_ms(argv, runs=51):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def main():
    tir = sys.argv[1] if len(sys.argv) > 1 else "build/tir"
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "one.tir")
        with open(prog, "w") as f:
            f.write("print add(1, 2)\n")
        true_med, true_min = median_ms(["/bin/true"])
        tir_med, tir_min = median_ms([tir, "run", "--quiet", prog])
    print(f"tir_median_ms {tir_med:.2f}")
    print(f"tir_min_ms {tir_min:.2f}")
    print(f"true_median_ms {true_med:.2f}")


if __name__ == "__main__":
    main()
