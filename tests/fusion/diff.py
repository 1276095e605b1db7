#!/usr/bin/python3
"""diff.py --tir BUILD/tir [--cases N] [--seed S]: randomized differential
test of the fuser.  Generates N programs (fixed seeds) of elementwise,
broadcast, reduce and movement ops, runs each fused and with --no-fuse, and
compares every printed value at full precision.  Fused kernels compute each
element with the reference kernels, so the two must agree bit for bit.
Prints one line per failing case and `N passed, M failed` last."""
import argparse
import os
import random
import subprocess
import sys
import tempfile

UNARY = ["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
         "erf", "sin", "cos", "floor", "ceil", "round", "sign", "rsqrt", "recip"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod"]
INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.vals = []          # (name, shape)
        self.n = 0

    def name(self):
        self.n += 1
        return f"v{self.n}"

    def shape(self):
        r = self.rng.randint(0, 3)
        return [self.rng.choice([1, 2, 3, 5, 8, 33]) for _ in range(r)]

    def leaf(self, shape, dtype):
        v = self.name()
        kind = self.rng.random()
        sh = "[" + ", ".join(map(str, shape)) + "]"
        if kind < 0.6:
            self.lines.append(f"{v} = rand({sh}, seed={self.rng.randint(0, 999)}, dtype={dtype}) * 4 - 2")
        elif kind < 0.8:
            self.lines.append(f"{v} = randn({sh}, seed={self.rng.randint(0, 999)}, dtype={dtype})")
        else:
            self.lines.append(f"{v} = full({sh}, {self.rng.choice(['0.5', '-1.25', '3', '0'])}, dtype={dtype})")
        self.vals.append((v, shape))
        return v, shape

    def broadcast_of(self, shape):
        # a shape that broadcasts to `shape`
        out = list(shape)
        for i in range(len(out)):
            if self.rng.random() < 0.3:
                out[i] = 1
        drop = self.rng.randint(0, len(out))
        return out[drop:]

    def expr(self, shape, dtype, depth):
        r = self.rng.random()
        if depth == 0 or r < 0.15:
            if self.vals and self.rng.random() < 0.5:
                cands = [v for v in self.vals if v[1] == shape]
                if cands:
                    return self.rng.choice(cands)[0]
            return self.leaf(shape, dtype)[0]
        if r < 0.22:
            return self.rng.choice(["0.5", "2", "-1.5", "3.0", "1e-3"])
        if r < 0.5:
            op = self.rng.choice(UNARY)
            return f"{op}({self.expr(shape, dtype, depth - 1)})"
        op = self.rng.choice(BINARY)
        a = self.expr(shape, dtype, depth - 1)
        bshape = self.broadcast_of(shape) if self.rng.random() < 0.3 else shape
        b = self.expr(bshape, dtype, depth - 1)
        if op in INFIX and self.rng.random() < 0.5:
            return f"({a} {INFIX[op]} {b})"
        return f"{op}({a}, {b})"

    def program(self):
        dtype = self.rng.choice(["f32", "f32", "f64"])
        outs = []
        for _ in range(self.rng.randint(1, 4)):
            shape = self.shape()
            e = self.expr(shape, dtype, self.rng.randint(1, 6))
            full = self.leaf(shape, dtype)[0]   # so the value has the whole shape
            v = self.name()
            self.lines.append(f"{v} = {e} + {full}")
            self.vals.append((v, shape))
            t = self.rng.random()
            if t < 0.15 and len(shape) >= 2:
                # a matmul the chain can finish block by block (its epilogue)
                k = self.rng.choice([1, 3, 16])
                a = self.leaf(shape[:-1] + [k], dtype)[0]
                b = self.leaf([k, shape[-1]], dtype)[0]
                w = self.name()
                self.lines.append(f"{w} = {self.rng.choice(UNARY)}({a} @ {b} * 0.5 + {v})")
                v = w
            elif t < 0.2 and shape:
                w = self.name()
                self.lines.append(f"{w} = sum({v}, axis={self.rng.randrange(len(shape))}, keepdims=true) * {v}")
                self.vals.append((w, shape))
                v = w
            elif t < 0.35 and len(shape) >= 2:
                w = self.name()
                self.lines.append(f"{w} = exp(transpose({v}))")
                v = w
            elif t < 0.45 and shape:
                w = self.name()
                self.lines.append(f"{w} = relu(slice({v}, axis=0, step=2)) + 1")
                v = w
            outs.append(v)
        self.lines.append("print " + ", ".join(outs))
        return "\n".join(self.lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tir", default="build/tir")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    passed = failed = fused_kernels = 0
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.cases):
            rng = random.Random(args.seed + i)
            src = Gen(rng).program()
            path = os.path.join(d, f"case{i}.tir")
            with open(path, "w") as f:
                f.write(src)
            runs = []
            for flags in ([], ["--no-fuse"], ["--threads", "1"]):
                p = subprocess.run([args.tir, "run", path, "--quiet", "--full", "--precision", "17",
                                    "--explain"] + flags, capture_output=True, text=True, timeout=60)
                runs.append(p)
            fused, ref, one = runs
            fused_kernels += fused.stderr.count("fused")
            ok = fused.returncode == ref.returncode and fused.stdout == ref.stdout == one.stdout
            if fused.returncode != 0 and "error" not in fused.stderr:
                ok = False
            if ok:
                passed += 1
            else:
                failed += 1
                print(f"FAIL case {i} (seed {args.seed + i}): fused and unfused differ")
                if args.v:
                    print(src)
                    print(fused.stdout[:2000], fused.stderr[:2000])
                    print(ref.stdout[:2000], ref.stderr[:2000])
    print(f"fusion diff: {fused_kernels} fused kernels over {args.cases} programs", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
