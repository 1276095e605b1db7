#!/usr/bin/python3
"""bench/devices.py TIR [--runs N] [--batch B] — data-parallel inference over
several devices (docs/remote.md, "Several devices"): an MLP (1024 -> 2048 -> 1024,
relu) over a batch of B rows (default 4096), run by `tir run --remote` on
one local `tir serve`, and split by rows over two (`shard(x, axis=0)`:
each half sliced here and moved to its server, the two results gathered).
The weights are loaded files, sent once and then cached by hash; the
figures are medians of N runs (default 5) after one warm-up run, of the
whole command (start, parse, moves, both servers computing at once,
results back).

Two settings: every server with --threads 1 (a server is one core: the
throughput of two against one is what two machines would give), and every
server with its default threads (one per CPU: on this 2-CPU machine two
servers share the same two cores, so no gain is expected).  The cost model
for more devices is docs/remote.md's.  Prints "key value" lines for bench/run.sh.
Not a test."""

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "net"))
import numpy as np  # noqa: E402
import tirnet  # noqa: E402
from tirnet import Server  # noqa: E402


def program(tmp, b, halves):
    head = (f"input x: f32[{b}, 1024]\nw1 = load(\"{tmp}/w1.npy\")\nw2 = load(\"{tmp}/w2.npy\")\n"
            "fn mlp(v, a, b) {\n    return relu(v @ a) @ b\n}\n")
    if not halves:
        return head + "print sum(mlp(x, w1, w2), axis=1)\n"
    return head + "print sum(mlp(shard(x, axis=0), w1, w2), axis=1)\n"


def timed(tir, path, xp, remotes, runs):
    cmd = [tir, "run", "--quiet", path, "--input", f"x={xp}", "--remote", remotes]
    outs, ts = [], []
    for i in range(runs + 1):
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, timeout=600)
        t = time.monotonic() - t0
        if p.returncode:
            raise RuntimeError(p.stderr.decode()[-400:])
        outs.append(p.stdout)
        if i:
            ts.append(t)
    return statistics.median(ts) * 1e3, outs[-1]


def main():
    args = sys.argv[1:]
    tir = args[0] if args else "build/tir"
    tirnet.TIR = tir
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    b = int(args[args.index("--batch") + 1]) if "--batch" in args else 4096
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="tir-bench-devices.") as tmp:
        np.save(f"{tmp}/w1.npy", (rng.standard_normal((1024, 2048)) / 32).astype(np.float32))
        np.save(f"{tmp}/w2.npy", (rng.standard_normal((2048, 1024)) / 45).astype(np.float32))
        xp = f"{tmp}/x.npy"
        np.save(xp, rng.standard_normal((b, 1024)).astype(np.float32))
        one = f"{tmp}/one.tir"
        two = f"{tmp}/two.tir"
        with open(one, "w") as f:
            f.write(program(tmp, b, False))
        with open(two, "w") as f:
            f.write(program(tmp, b, True))
        gflop = 2 * b * (1024 * 2048 * 2) / 1e9
        print(f"gflop {gflop:.1f}")
        for name, extra in (("threads1", ["--threads", "1"]), ("default", [])):
            s0, s1 = Server(*extra), Server(*extra)
            try:
                t1, o1 = timed(tir, one, xp, f"127.0.0.1:{s0.port}", runs)
                t2, o2 = timed(tir, two, xp, f"127.0.0.1:{s0.port},127.0.0.1:{s1.port}", runs)
            finally:
                s0.stop()
                s1.stop()
            # the same rows, the same sums: one server or two, the same bytes
            same = o1.split(b"\n", 1)[1] == o2.split(b"\n", 1)[1]
            print(f"{name}_one_ms {t1:.1f}")
            print(f"{name}_two_ms {t2:.1f}")
            print(f"{name}_speedup {t1 / t2:.2f}")
            print(f"{name}_same {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
