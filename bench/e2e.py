#!/usr/bin/python3
"""e2e.py — the peers of bench/e2e/*.tir: each whole program (make the
data, compute, reduce) written once in NumPy and once in PyTorch eager,
timed inside one process after the imports, as bench/peers.py times its
sections (median of at least RUNS calls lasting at least a second in all,
after WARMUP calls).  Every call makes its data afresh, as the tir program
does on every run.  Prints "key value" lines for bench/run.sh:

    IMPL_ms MEDIAN   IMPL_sum SUM   IMPL_version V
    IMPL_missing apt-get install python3-XXX     (module not importable)

Usage:
    e2e.py [--threads N] [--runs N] [--warmup N] chain|noise|reduce|norm|layernorm|mlp

Random numbers: NumPy's default_rng and torch's generator make other
numbers than tir's Philox, so only the deterministic programs (chain) have
sums comparable with tir's; the others' sums agree only statistically.
Threads: torch.set_num_threads(N) and OpenBLAS (NumPy's matmul) at N;
NumPy's elementwise ops and its generator run on one thread.  Not a test.
"""
import argparse
import os
import sys

import peers

N = 1 << 24
ROWS, COLS = 4096, 1024
EPS = 1e-5

PROGRAMS = ["chain", "noise", "reduce", "norm", "layernorm", "mlp"]


def numpy_program(np, name):
    f32 = np.float32
    rng = np.random.default_rng

    def chain():
        x = np.arange(0, N, dtype=f32) * f32(2.384185791015625e-07) - f32(2)
        y = np.sqrt(np.tanh(x * f32(0.5)) * np.exp(x * x * f32(-0.5))
                    + f32(1) / (f32(1) + np.exp(-x)) + f32(0.5))
        return y.sum()

    def noise():
        x = rng(1).standard_normal(N, dtype=f32)
        return (np.maximum(x * f32(0.5) + f32(0.1), f32(0)) * x).sum()

    def reduce():
        x = rng(2).random((4096, 4096), dtype=f32)
        return x.max(axis=1).sum() + x.mean(axis=0).sum() + x.var()

    def norm():
        x = rng(3).standard_normal((ROWS, COLS), dtype=f32)
        d = x - x.mean(axis=-1, keepdims=True)
        v = (d * d).mean(axis=-1, keepdims=True)
        z = d / np.sqrt(v + f32(EPS))
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True) * x).sum()

    def layernorm():
        x = rng(4).standard_normal((ROWS, COLS), dtype=f32)
        w = np.arange(0, COLS, dtype=f32) * f32(0.001) + f32(0.5)
        b = np.ones(COLS, dtype=f32) * f32(0.1)
        mu = x.mean(axis=-1, keepdims=True)
        v = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return ((x - mu) / np.sqrt(v + f32(EPS)) * w + b).sum(axis=1)

    def mlp():
        x = rng(1).standard_normal((256, 1024), dtype=f32)
        w1 = rng(2).standard_normal((1024, 1024), dtype=f32) * f32(0.03)
        w2 = rng(3).standard_normal((1024, 1024), dtype=f32) * f32(0.03)
        w3 = rng(4).standard_normal((1024, 10), dtype=f32) * f32(0.03)
        b1 = np.full(1024, 0.01, dtype=f32)
        h1 = np.maximum(x @ w1 + b1, f32(0))
        h2 = np.maximum(h1 @ w2, f32(0))
        z = h2 @ w3
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    return locals()[name]


def torch_program(torch, name):
    f32 = torch.float32

    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def chain():
        x = torch.arange(0, N, dtype=f32) * 2.384185791015625e-07 - 2
        y = torch.sqrt(torch.tanh(x * 0.5) * torch.exp(x * x * -0.5) + torch.sigmoid(x) + 0.5)
        return y.sum()

    def noise():
        x = torch.randn(N, generator=gen(1))
        return (torch.relu(x * 0.5 + 0.1) * x).sum()

    def reduce():
        x = torch.rand((4096, 4096), generator=gen(2))
        return x.amax(dim=1).sum() + x.mean(dim=0).sum() + x.var(unbiased=False)

    def norm():
        x = torch.randn((ROWS, COLS), generator=gen(3))
        d = x - x.mean(dim=-1, keepdim=True)
        v = (d * d).mean(dim=-1, keepdim=True)
        return (torch.softmax(d * torch.rsqrt(v + EPS), dim=-1) * x).sum()

    def layernorm():
        x = torch.randn((ROWS, COLS), generator=gen(4))
        w = torch.arange(0, COLS, dtype=f32) * 0.001 + 0.5
        b = torch.ones(COLS) * 0.1
        return torch.nn.functional.layer_norm(x, (COLS,), w, b, EPS).sum(dim=1)

    def mlp():
        x = torch.randn((256, 1024), generator=gen(1))
        w1 = torch.randn((1024, 1024), generator=gen(2)) * 0.03
        w2 = torch.randn((1024, 1024), generator=gen(3)) * 0.03
        w3 = torch.randn((1024, 10), generator=gen(4)) * 0.03
        b1 = torch.full((1024,), 0.01)
        h1 = torch.relu(x @ w1 + b1)
        h2 = torch.relu(h1 @ w2)
        return torch.softmax(h2 @ w3, dim=-1)

    return locals()[name]


def main():
    ap = argparse.ArgumentParser(description="NumPy / PyTorch peers of bench/e2e/*.tir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("program", choices=PROGRAMS)
    args = ap.parse_args()
    n = str(args.threads)
    # before the imports: OpenBLAS (NumPy's matmul) and OpenMP read these once
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = n
    # as peers.py's mlp section: torch's OpenMP threads must not spin
    # against OpenBLAS's
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    mods = {}
    for name in ("numpy", "torch"):
        try:
            mods[name] = __import__(name)
            peers.say(f"{name}_version", mods[name].__version__)
        except ImportError:
            peers.say(f"{name}_missing", f"apt-get install {peers.MISSING[name]}")
    if "numpy" not in mods:
        return 1
    np = mods["numpy"]
    peers.say("threads", args.threads)
    nsum = lambda y: float(np.asarray(y).sum(dtype=np.float64))
    peers.report("numpy", numpy_program(np, args.program), args.runs, args.warmup, nsum)
    if "torch" in mods:
        torch = mods["torch"]
        torch.set_num_threads(args.threads)
        with torch.no_grad():
            fn = torch_program(torch, args.program)
            peers.report("torch", fn, args.runs, args.warmup, lambda y: float(y.double().sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
