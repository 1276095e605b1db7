#!/usr/bin/python3
"""create.py — the create section's peers: NumPy and PyTorch making the
creation ops' values at 16M f32 (zeros, ones, full, arange, linspace, eye
4096 x 4096, rand, randn), timed inside one process as bench/peers.py
times (median of at least RUNS calls lasting at least a second, after
warm-up calls; imports and start-up excluded).  Prints "key value" lines:

    OP_IMPL_ms MEDIAN     IMPL_version V     IMPL_missing apt-get install ...

Usage: create.py [--threads N] [--runs N]
NumPy's creation runs on one thread; torch gets N (torch.set_num_threads).
Not a test.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (its timing and report helpers)

N = 1 << 24
EYE = 4096


def numpy_ops(np):
    rng = np.random.default_rng(1)
    f = np.float32
    return {
        "zeros": lambda: np.zeros(N, f),
        "ones": lambda: np.ones(N, f),
        "full": lambda: np.full(N, 2.5, f),
        "arange": lambda: np.arange(N, dtype=f),
        "linspace": lambda: np.linspace(0, 1, N, dtype=f),
        "eye": lambda: np.eye(EYE, dtype=f),
        "rand": lambda: rng.random(N, dtype=f),
        "randn": lambda: rng.standard_normal(N, dtype=f),
        "fused": lambda: np.maximum(rng.standard_normal(N, dtype=f) * f(0.1), f(0)),
    }


def torch_ops(torch):
    g = torch.Generator().manual_seed(1)
    f = torch.float32
    return {
        "zeros": lambda: torch.zeros(N, dtype=f),
        "ones": lambda: torch.ones(N, dtype=f),
        "full": lambda: torch.full((N,), 2.5, dtype=f),
        "arange": lambda: torch.arange(N, dtype=f),
        "linspace": lambda: torch.linspace(0, 1, N, dtype=f),
        "eye": lambda: torch.eye(EYE, dtype=f),
        "rand": lambda: torch.rand(N, generator=g, dtype=f),
        "randn": lambda: torch.randn(N, generator=g, dtype=f),
        "fused": lambda: torch.relu(torch.randn(N, generator=g, dtype=f) * 0.1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    for impl in ("numpy", "torch"):
        try:
            mod = __import__(impl)
        except ImportError:
            peers.say(f"{impl}_missing", f"apt-get install {peers.MISSING[impl]}")
            continue
        peers.say(f"{impl}_version", mod.__version__)
        if impl == "torch":
            mod.set_num_threads(args.threads)
        ops = numpy_ops(mod) if impl == "numpy" else torch_ops(mod)
        for op, fn in ops.items():
            peers.say(f"{op}_{impl}_ms", f"{peers.median_ms(fn, args.runs, 2):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
