#!/usr/bin/python3
"""peers.py — the fusion benchmark's peers: NumPy, numexpr and PyTorch
eager running the same computations as bench/*.tir, timed inside one
process after the imports and the data are ready (so, like tir_time on the
tir side, process start-up is excluded), as the median of at least RUNS
calls lasting at least a second in all, after WARMUP calls.  Prints "key value" lines for bench/run.sh:

    IMPL_ms MEDIAN   IMPL_sum SUM   IMPL_version V
    IMPL_missing apt-get install python3-XXX     (module not importable)

Usage:
    peers.py [--threads N] [--runs N] [--warmup N] [--blocks N] chain|softmax|layernorm|mlp|tiny|blocks
    peers.py tiny-tir FILE      write the tiny section's tir program to FILE

Thread counts: torch.set_num_threads, numexpr.set_num_threads and
OpenBLAS's (NumPy's matmul) are all set to N; NumPy's elementwise ops run on
one thread whatever N is.  The mlp section runs with OMP_WAIT_POLICY=PASSIVE
(see main).  Not a test.
"""
import argparse
import os
import statistics
import sys
import time

# The data: element i of the k-th input, exactly as bench/tir_time.c
# makes it (see there): h = (i * 2654435761 + k * 40503) mod 2^32,
# v = lo + (hi - lo) * (h / 2^32) in double, then cast.
TIR_HASH = 2654435761
TIR_KSTEP = 40503

CHAIN_N = 1 << 24
ROWS, COLS = 4096, 1024
LN_EPS = 1e-5
TINY_OPS = 10000

MISSING = {"numpy": "python3-numpy", "numexpr": "python3-numexpr", "torch": "python3-torch"}


def say(key, value):
    print(f"{key} {value}", flush=True)


def bench_input(np, n, k, lo=-2.0, hi=2.0):
    i = np.arange(n, dtype=np.uint64)
    h = (i * np.uint64(TIR_HASH) + np.uint64(k * TIR_KSTEP)) % np.uint64(1 << 32)
    return (lo + (hi - lo) * (h.astype(np.float64) / 4294967296.0)).astype(np.float32)


MIN_MS = 1000.0   # as bench/tir_time.c: at least RUNS runs and this long
MAX_RUNS = 10000


def median_ms(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    while len(times) < MAX_RUNS and (len(times) < runs or sum(times) < MIN_MS):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def report(impl, fn, runs, warmup, to_sum):
    """Time fn, then print its median and the double sum of its result."""
    ms = median_ms(fn, runs, warmup)
    say(f"{impl}_ms", f"{ms:.4f}")
    say(f"{impl}_sum", f"{to_sum(fn()):.9g}")


# ---- the computations (each the same as its bench/*.tir) ----

def chain_numpy(np, x):
    # y = sqrt(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)
    f = np.float32
    return np.sqrt(np.tanh(x * f(0.5)) * np.exp(x * x * f(-0.5))
                   + f(1) / (f(1) + np.exp(-x)) + f(0.5))


def blocks_numpy(np, x, n):
    # bench/blocks.tir: for i in range(n) { y = chain(x); t = t + sum(y) }
    t = np.float32(0)
    for _ in range(n):
        t = t + chain_numpy(np, x).sum()
    return t


CHAIN_NUMEXPR = "sqrt(tanh(x * h) * exp(x * x * mh) + one / (one + exp(-x)) + h)"


def chain_torch(torch, x):
    return torch.sqrt(torch.tanh(x * 0.5) * torch.exp(x * x * -0.5) + torch.sigmoid(x) + 0.5)


def softmax_numpy(np, x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e


def layernorm_numpy(np, x, w, b):
    mu = x.mean(axis=1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=1, keepdims=True)
    return d / np.sqrt(var + np.float32(LN_EPS)) * w + b


def tiny_lines():
    """The tiny section's graph: input x (a scalar), then TINY_OPS ops on
    scalars in a repeating group of five — mul, add, tanh, mul of two
    values, sub — ending in y.  Each item is (name, op, a, b) with a, b
    names or float constants (b None for a unary op)."""
    out, v, n = [], "x", 0
    while n < TINY_OPS:
        group = [("mul", v, 0.5), ("add", None, 0.25), ("tanh", None, None),
                 ("mul", None, v), ("sub", None, 0.125)]
        prev = v
        for op, a, b in group:
            if n == TINY_OPS:
                break
            n += 1
            name = "y" if n == TINY_OPS else f"t{n}"
            out.append((name, op, a if a is not None else prev, b))
            prev = name
        v = prev
    return out


SYM = {"mul": "*", "add": "+", "sub": "-"}


def tiny_tir_text():
    lines = [f"# tiny: {TINY_OPS} ops on f32 scalars (bench/peers.py tiny-tir writes this)",
             "input x: f32[]"]
    for name, op, a, b in tiny_lines():
        if b is None:
            lines.append(f"{name} = {op}({a})")
        else:
            lines.append(f"{name} = {a} {SYM[op]} {b}")
    return "\n".join(lines) + "\n"


def tiny_python(mod):
    """The tiny graph as Python source of f(x, K), one statement an op,
    compiled once, with mod.tanh for tanh; K holds the constants in the
    library's scalar type."""
    consts, body = {}, []
    for name, op, a, b in tiny_lines():
        if isinstance(b, float):
            b = consts.setdefault(b, f"K[{len(consts)}]")
        if b is None:
            body.append(f"    {name} = M.{op}({a})")
        else:
            body.append(f"    {name} = {a} {SYM[op]} {b}")
    src = "def f(x, K):\n" + "\n".join(body) + "\n    return y\n"
    scope = {"M": mod}
    exec(compile(src, "<tiny>", "exec"), scope)
    return scope["f"], list(consts)


# ---- the sections ----

def section(name, mods, runs, warmup, threads, blocks=8):
    np, ne, torch = mods.get("numpy"), mods.get("numexpr"), mods.get("torch")
    f32 = np.float32
    nsum = lambda y: float(y.sum(dtype=np.float64))
    tsum = lambda y: float(y.double().sum())
    nograd = torch.no_grad() if torch else None
    if nograd:
        nograd.__enter__()
    if name == "chain":
        x = bench_input(np, CHAIN_N, 0)
        report("numpy", lambda: chain_numpy(np, x), runs, warmup, nsum)
        if ne:
            d = {"x": x, "h": f32(0.5), "mh": f32(-0.5), "one": f32(1)}
            report("numexpr", lambda: ne.evaluate(CHAIN_NUMEXPR, local_dict=d), runs, warmup, nsum)
        if torch:
            tx = torch.from_numpy(x)
            report("torch", lambda: chain_torch(torch, tx), runs, warmup, tsum)
    elif name == "blocks":
        x = bench_input(np, CHAIN_N, 0)
        report("numpy", lambda: blocks_numpy(np, x, blocks), runs, warmup, float)
    elif name == "softmax":
        x = bench_input(np, ROWS * COLS, 0).reshape(ROWS, COLS)
        report("numpy", lambda: softmax_numpy(np, x), runs, warmup, nsum)
        if ne:
            def softmax_ne():
                m = x.max(axis=1, keepdims=True)
                e = ne.evaluate("exp(x - m)", local_dict={"x": x, "m": m})
                s = e.sum(axis=1, keepdims=True)
                return ne.evaluate("e / s", local_dict={"e": e, "s": s})
            report("numexpr", softmax_ne, runs, warmup, nsum)
        if torch:
            tx = torch.from_numpy(x)
            report("torch", lambda: torch.softmax(tx, dim=-1), runs, warmup, tsum)
    elif name == "layernorm":
        x = bench_input(np, ROWS * COLS, 0).reshape(ROWS, COLS)
        w, b = bench_input(np, COLS, 1), bench_input(np, COLS, 2)
        report("numpy", lambda: layernorm_numpy(np, x, w, b), runs, warmup, nsum)
        if ne:
            eps = f32(LN_EPS)

            def layernorm_ne():
                mu = x.mean(axis=1, keepdims=True)
                d = {"x": x, "mu": mu, "w": w, "b": b, "eps": eps}
                d["var"] = ne.evaluate("(x - mu) * (x - mu)", local_dict=d).mean(axis=1, keepdims=True)
                return ne.evaluate("(x - mu) / sqrt(var + eps) * w + b", local_dict=d)
            report("numexpr", layernorm_ne, runs, warmup, nsum)
        if torch:
            tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
            fn = lambda: torch.nn.functional.layer_norm(tx, (COLS,), tw, tb, LN_EPS)
            report("torch", fn, runs, warmup, tsum)
    elif name == "mlp":
        # bench/mlp_bench.c's MLP: 1024-1024-1024-10 at batch 256
        shapes = [(256, 1024), (1024, 1024), (1024, 1024), (1024, 10), (1024,), (1024,), (10,)]
        a = [bench_input(np, int(np.prod(s)), k, -0.03, 0.03).reshape(s)
             for k, s in enumerate(shapes)]
        x, w1, w2, w3, b1, b2, b3 = a

        def mlp_numpy():
            h1 = np.maximum(x @ w1 + b1, f32(0))
            h2 = np.maximum(h1 @ w2 + b2, f32(0))
            return h2 @ w3 + b3
        report("numpy", mlp_numpy, runs, warmup, nsum)
        if torch:
            tx, tw1, tw2, tw3, tb1, tb2, tb3 = (torch.from_numpy(v) for v in a)

            def mlp_torch():
                h1 = torch.relu(tx @ tw1 + tb1)
                h2 = torch.relu(h1 @ tw2 + tb2)
                return h2 @ tw3 + tb3
            report("torch", mlp_torch, runs, warmup, tsum)
    elif name == "tiny":
        say("tiny_ops", TINY_OPS)
        x = bench_input(np, 1, 0)[0]     # np.float32; ops on it give np.float32
        f, consts = tiny_python(np)
        k = [f32(c) for c in consts]
        report("numpy", lambda: f(x, k), runs, warmup, float)
        if torch:
            f, consts = tiny_python(torch)
            tx = torch.tensor(float(x), dtype=torch.float32)
            report("torch", lambda: f(tx, consts), runs, warmup, lambda y: float(y))
    if nograd:
        nograd.__exit__(None, None, None)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "tiny-tir":
        with open(sys.argv[2], "w") as f:
            f.write(tiny_tir_text())
        return 0
    ap = argparse.ArgumentParser(description="NumPy / numexpr / PyTorch peers of bench/*.tir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=8, help="the blocks section's N")
    ap.add_argument("section", choices=["chain", "softmax", "layernorm", "mlp", "tiny", "blocks"])
    args = ap.parse_args()
    n = str(args.threads)
    # before the imports: OpenBLAS (NumPy's matmul) and OpenMP read these once
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_MAX_THREADS"):
        os.environ[var] = n
    if args.section == "mlp":
        # Debian's torch does matmuls in OpenBLAS's threads; its OpenMP
        # threads, spinning after each add/relu (GOMP's default active
        # wait), take the cores from them and double the MLP's time.
        # Passive waiting gives torch its best figure here.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    mods = {}
    for name in ("numpy", "numexpr", "torch"):
        try:
            mods[name] = __import__(name)
            say(f"{name}_version", mods[name].__version__)
        except ImportError:
            say(f"{name}_missing", f"apt-get install {MISSING[name]}")
    if "numpy" not in mods:
        return 1
    if "numexpr" in mods:
        mods["numexpr"].set_num_threads(args.threads)
    if "torch" in mods:
        mods["torch"].set_num_threads(args.threads)
    say("threads", args.threads)
    section(args.section, mods, args.runs, args.warmup, args.threads, args.blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
