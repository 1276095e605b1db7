#!/usr/bin/python3
"""diff.py --tir BUILD/tir [--cases N] [--seed S]: randomized differential
test of the fuser.  Runs the hand-written FIXED programs, then generates
N programs (fixed seeds) of elementwise, broadcast, reduce and movement
ops; runs each fused, with --no-fuse and with --threads 1, and compares
every printed value at full precision.  Fused kernels compute each element
with the reference kernels, so the three must agree bit for bit.
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
CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
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
        if self.rng.random() < 0.05:
            # an empty axis: nothing to compute, identities or an error
            return [self.rng.choice([0, 3]) for _ in range(max(r, 1))]
        return [self.rng.choice([1, 2, 3, 5, 8, 33]) for _ in range(r)]

    def leaf(self, shape, dtype):
        v = self.name()
        kind = self.rng.random()
        sh = "[" + ", ".join(map(str, shape)) + "]"
        seed = self.rng.randint(0, 999)
        n = 1
        for d in shape:
            n *= d
        # generators (creation ops) are computed by the kernels that read
        # them, through views: bare, reshaped, transposed, sliced
        if kind < 0.45:
            self.lines.append(f"{v} = rand({sh}, seed={seed}, dtype={dtype}) * 4 - 2")
        elif kind < 0.6:
            self.lines.append(f"{v} = randn({sh}, seed={seed}, dtype={dtype})")
        elif kind < 0.7:
            self.lines.append(f"{v} = full({sh}, {self.rng.choice(['0.5', '-1.25', '3', '0'])}, dtype={dtype})")
        elif kind < 0.77:
            self.lines.append(f"{v} = rand({sh}, seed={seed}, dtype={dtype})")
        elif kind < 0.84:
            gen = self.rng.choice([f"linspace(-2, 2, {n}, dtype={dtype})",
                                   f"arange(-1, {n * 0.25 - 1}, 0.25, dtype={dtype})" if n else
                                   f"arange(0, dtype={dtype})"])
            self.lines.append(f"{v} = reshape({gen}, {sh})")
        elif kind < 0.92 and len(shape) >= 2:
            rev = "[" + ", ".join(map(str, shape[::-1])) + "]"
            self.lines.append(f"{v} = transpose(randn({rev}, seed={seed}, dtype={dtype}))")
        elif len(shape) >= 1:
            big = "[" + ", ".join(map(str, [2 * shape[0] + 1] + shape[1:])) + "]"
            self.lines.append(f"{v} = slice(rand({big}, seed={seed}, dtype={dtype}), axis=0, start=1, step=2) - 0.5")
        else:
            self.lines.append(f"{v} = ones({sh}, dtype={dtype}) * {self.rng.choice(['2', '-0.5'])}")
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
        if r < 0.58:
            return self.select(shape, dtype, depth)
        op = self.rng.choice(BINARY)
        a = self.expr(shape, dtype, depth - 1)
        bshape = self.broadcast_of(shape) if self.rng.random() < 0.3 else shape
        b = self.expr(bshape, dtype, depth - 1)
        if op in INFIX and self.rng.random() < 0.5:
            return f"({a} {INFIX[op]} {b})"
        return f"{op}({a}, {b})"

    def select(self, shape, dtype, depth):
        """where and clip, with comparisons as their masks (fused as 1 or 0
        of the kernel's dtype); a condition may also be a bool value read
        from memory, or a float one (tested against 0)."""
        def sub():
            bshape = self.broadcast_of(shape) if self.rng.random() < 0.3 else shape
            return self.expr(bshape, dtype, depth - 1)
        if self.rng.random() < 0.3:
            lo = self.rng.choice(["-0.5", "-1", "0"])
            hi = self.rng.choice(["0.5", "1", "2"]) if self.rng.random() < 0.7 else sub()
            return f"clip({self.expr(shape, dtype, depth - 1)}, {lo}, {hi})"
        k = self.rng.random()
        if k < 0.6:
            cond = f"{self.rng.choice(CMP)}({sub()}, {sub()})"
        elif k < 0.8:
            # a mask computed by another kernel (or printed): read as bool
            m = self.name()
            self.lines.append(f"{m} = {self.rng.choice(CMP)}({sub()}, {self.rng.choice(['0', '0.25', '-0.5'])})")
            if self.rng.random() < 0.3:
                self.lines.append(f"print {m}")
            cond = m
        else:
            cond = sub()
        return f"where({cond}, {sub()}, {sub()})"

    def reduction(self, shape, dtype):
        """A reduction of an elementwise expression over random axes, maybe
        read back by elementwise ops (keepdims broadcasts over the input)."""
        if self.rng.random() < 0.1:
            shape = self.rng.choice([[3, 0], [0, 3], [2, 0, 3], [0]])
        e = self.expr(shape, dtype, self.rng.randint(0, 3))
        full = self.leaf(shape, dtype)[0]
        x = self.name()
        self.lines.append(f"{x} = {e} + {full}")
        op = self.rng.choice(["sum", "mean", "max", "min", "var", "prod", "sum", "max"])
        r = self.rng.random()
        rank = len(shape)
        if rank == 0 or r < 0.2:
            axes, red = "", list(range(rank))
        elif r < 0.75:
            a = self.rng.randrange(rank)
            axes, red = f", axis={self.rng.choice([a, a - rank])}", [a]
        else:
            red = sorted(self.rng.sample(range(rank), self.rng.randint(1, rank)))
            axes = ", axis=[" + ", ".join(map(str, red)) + "]"
        keep = self.rng.random() < 0.6
        src = x if op != "prod" else f"(1 + {x} * 0.01)"
        v = self.name()
        self.lines.append(f"{v} = {op}({src}{axes}{', keepdims=true' if keep else ''})")
        rshape = [1 if i in red else d for i, d in enumerate(shape)] if keep else \
                 [d for i, d in enumerate(shape) if i not in red]
        t = self.rng.random()
        if keep and t < 0.5:
            # a consumer over the reduced value's input
            w = self.name()
            self.lines.append(f"{w} = {self.rng.choice(['exp', 'tanh', 'abs'])}({x} - {v}) * {v}")
            return w, shape
        if t < 0.7:
            w = self.name()
            self.lines.append(f"{w} = sqrt(abs({v})) * 2 + 1")
            return w, rshape
        return v, rshape

    def rows_pattern(self, dtype):
        """Hand-written softmax, log_softmax, layernorm, rmsnorm over the
        last axis (or two), of an elementwise expression."""
        rows = self.rng.choice([1, 3, 8, 33])
        cols = self.rng.choice([5, 16, 33, 130, 300, 1100])
        shape = [rows, cols] if self.rng.random() < 0.7 else [2, rows, cols]
        e = self.expr(shape, dtype, self.rng.randint(0, 2))
        full = self.leaf(shape, dtype)[0]
        x = self.name()
        self.lines.append(f"{x} = {e} + {full}")
        kind = self.rng.choice(["softmax", "log_softmax", "layernorm", "rmsnorm", "var"])
        ax = self.rng.choice(["-1", "-1", "[-2, -1]"]) if len(shape) == 3 else "-1"
        m, ee, s, y = self.name(), self.name(), self.name(), self.name()
        if kind == "softmax":
            self.lines.append(f"{m} = max({x}, axis={ax}, keepdims=true)")
            self.lines.append(f"{ee} = exp({x} - {m})")
            self.lines.append(f"{y} = {ee} / sum({ee}, axis={ax}, keepdims=true)")
        elif kind == "log_softmax":
            self.lines.append(f"{m} = max({x}, axis={ax}, keepdims=true)")
            self.lines.append(f"{s} = log(sum(exp({x} - {m}), axis={ax}, keepdims=true))")
            self.lines.append(f"{y} = {x} - {m} - {s}")
        elif kind == "layernorm":
            g = self.leaf(shape[-1:], dtype)[0]
            b = self.leaf(shape[-1:], dtype)[0]
            self.lines.append(f"{m} = mean({x}, axis=-1, keepdims=true)")
            self.lines.append(f"{ee} = {x} - {m}")
            self.lines.append(f"{s} = mean({ee} * {ee}, axis=-1, keepdims=true)")
            self.lines.append(f"{y} = {ee} * rsqrt({s} + 1e-5) * {g} + {b}")
        elif kind == "rmsnorm":
            g = self.leaf(shape[-1:], dtype)[0]
            self.lines.append(f"{y} = {x} * rsqrt(mean({x} * {x}, axis=-1, keepdims=true) + 1e-6) * {g}")
        else:
            self.lines.append(f"{y} = ({x} - mean({x}, axis={ax}, keepdims=true)) / sqrt(var({x}, axis={ax}, keepdims=true) + 1)")
        if self.rng.random() < 0.3:
            # a row statistic printed too (materialized, read by the kernel)
            return [y, m] if kind in ("softmax", "log_softmax", "layernorm") else [y]
        return [y]

    def movement(self, shape, dtype):
        """Views of computed values read by elementwise ops (and reductions)."""
        if len(shape) < 2:
            shape = [3, 5]
        if self.rng.random() < 0.15:
            shape = [40, 67]    # a transpose read in tiles
        e = self.expr(shape, dtype, self.rng.randint(1, 3))
        full = self.leaf(shape, dtype)[0]
        x = self.name()
        self.lines.append(f"{x} = {e} + {full}")
        t = self.rng.random()
        v = self.name()
        r = len(shape)
        if t < 0.3:
            perm = list(range(r))
            self.rng.shuffle(perm)
            tshape = [shape[i] for i in perm]
            self.lines.append(f"{v} = transpose({x}, [{', '.join(map(str, perm))}])")
        elif t < 0.55:
            a = self.rng.randrange(r)
            step = self.rng.choice([1, 2, -1, 3])
            n = len(range(*slice(None, None, step).indices(shape[a])))
            tshape = list(shape)
            tshape[a] = n
            self.lines.append(f"{v} = slice({x}, axis={a}, step={step})")
        elif t < 0.75:
            n = 1
            for d in shape:
                n *= d
            tshape = [n] if self.rng.random() < 0.5 else [shape[0], n // shape[0]]
            self.lines.append(f"{v} = reshape({x}, [{', '.join(map(str, tshape))}])")
        elif t < 0.9:
            tshape = [shape[0], 1] + shape[1:]
            self.lines.append(f"{v} = unsqueeze({x}, axis=1)")
        else:
            small = [1] + shape[1:]
            y = self.name()
            self.lines.append(f"{y} = exp(slice({x}, axis=0, stop=1)) * 0.5")
            tshape = list(shape)
            self.lines.append(f"{v} = expand({y}, [{', '.join(map(str, tshape))}])")
        if self.rng.random() < 0.15:
            # a value read in place and across (transposed) by one kernel:
            # its memory must not take the result
            n = self.rng.choice([5, 40])
            sq = self.name()
            self.lines.append(f"{sq} = randn([{n}, {n}], seed={self.rng.randint(0, 999)}, dtype={dtype})")
            w = self.name()
            self.lines.append(f"{w} = tanh({sq}) * 2 + transpose({sq})")
            return w
        w = self.name()
        other = self.leaf(tshape, dtype)[0]
        if self.rng.random() < 0.3 and tshape:
            self.lines.append(f"{w} = sum(tanh({v}) * {other}, axis=-1, keepdims=true) + {v}")
        else:
            self.lines.append(f"{w} = {self.rng.choice(UNARY)}({v}) * {other} + 1")
        return w

    def program(self):
        dtype = self.rng.choice(["f32", "f32", "f64"])
        outs = []
        for _ in range(self.rng.randint(1, 4)):
            c = self.rng.random()
            if c < 0.2:
                v, _ = self.reduction(self.shape(), dtype)
                outs.append(v)
                continue
            if c < 0.32:
                outs += self.rows_pattern(dtype)
                continue
            if c < 0.44:
                outs.append(self.movement(self.shape(), dtype))
                continue
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
                if self.rng.random() < 0.5:
                    # ... or leave it to a reduction of rows
                    w2 = self.name()
                    self.lines.append(f"{w2} = {w} - max({w}, axis=-1, keepdims=true)")
                    w = w2
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
            elif t < 0.55 and shape:
                # a computed broadcast operand, and a computed scalar
                small = self.broadcast_of(shape)
                b = self.expr(small, dtype, 2)
                c = self.name()
                self.lines.append(f"{c} = sqrt(abs(sum({v})) + 1)")
                w = self.name()
                self.lines.append(f"{w} = {v} * ({b}) - {c}")
                v = w
            outs.append(v)
        if self.rng.random() < 0.08:
            # rows too long for one block of registers: done a piece at a time
            cols = self.rng.choice([70000, 200003])
            x = self.leaf([2, cols], dtype)[0]
            m, e, y = self.name(), self.name(), self.name()
            self.lines.append(f"{m} = max(tanh({x}) * 3, axis=-1, keepdims=true)")
            self.lines.append(f"{e} = exp(tanh({x}) * 3 - {m})")
            self.lines.append(f"{y} = {e} / sum({e}, axis=-1, keepdims=true)")
            z = self.name()
            self.lines.append(f"{z} = var(sin({x}) * {x}, axis=-1)")
            outs += [f"slice({y}, axis=1, step=997)", z, f"mean(exp({x}) - 1)"]
            # one row long enough to be summed in pieces on several threads
            x2 = self.leaf([self.rng.choice([600011, 1048576])], dtype)[0]
            outs += [f"sum(sin({x2}) * 3)", f"mean({x2} * {x2})"]
        self.lines.append("print " + ", ".join(outs))
        return "\n".join(self.lines) + "\n"


def limits_program(nops, nins):
    """A chain of nops ops over nins distinct inputs: the kernel limits."""
    lines = [f"a{i} = rand([3, 8], seed={i}) - 0.5" for i in range(nins)]
    lines.append("v0 = " + " + ".join(f"a{i}" for i in range(nins)))
    for i in range(1, nops + 1):
        lines.append(f"v{i} = {['tanh', 'sin', 'neg', 'abs'][i % 4]}(v{i - 1}) + a{i % nins}")
    lines.append(f"s = sum(v{nops}, axis=-1, keepdims=true) * v{nops}")
    lines.append(f"print v{nops}, s, max(exp(v0), axis=0, keepdims=true) - v0")
    return "\n".join(lines) + "\n"


def long_view_program(nops):
    """A view (transpose) after nops members of one kernel: the layout of
    the members below it is the view's, a member index past 127 (it was
    kept in 8 bits once: the fused run never finished)."""
    lines = ["x = randn([4, 8], seed=1)", "a0 = x * 1.0"]
    lines += [f"a{i} = tanh(a{i - 1}) * 0.9 + 0.1" for i in range(1, nops)]
    lines += [f"t = transpose(a{nops - 1})", "y = t * 2.0", "print sum(y), y"]
    return "\n".join(lines) + "\n"


# Hand-written edge programs, run before the generated ones: empty and
# size-1 axes, negative and out-of-range slice steps, scalars over
# [1, 1, 1], NaN and inf in f32 and f64, a value read in place and through
# a view by one kernel, mixed dtypes, rank 8, matmuls with an empty
# contraction, kernels at the 32-op and 32-input limits, and a view past
# member 127 of a kernel.
def nan_program(dtype, big, more=""):
    """NaN and infinities through every kind of fused op (big * big
    overflows dtype to inf)."""
    return f"""\
x = log(rand([4, 9], seed=1, dtype={dtype}) * 4 - 2)
y = x / 0
z = x * 0 + y
m = max(z, axis=-1)
n = min(x, axis=0, keepdims=true) - x
s = sum(y, axis=-1)
p = prod(x, axis=0)
q = maximum(x, 0.0 / 0.0) + minimum(y, {big} * {big})
r = exp(x * 1000)
v = var(y, axis=-1)
sm = exp(x - max(x, axis=-1, keepdims=true))
print x, y, z, m, n, s, p, q, r, v, sm / sum(sm, axis=-1, keepdims=true){more}
"""


FIXED = [
    # zero
    """\
a = rand([0, 5], seed=1)
b = exp(a) * 2 + 1
c = sum(b, axis=0)
d = sum(b, axis=1)
e = max(exp(rand([5, 0], seed=2)) + 1, axis=0, keepdims=true)
f = mean(tanh(a) + 1, axis=0)
g = transpose(b) * 3
h = slice(b, axis=1, step=-2) + 1
k = prod(exp(a))
print b, c, d, e, f, g, h, k
""",
    # size1
    """\
a = rand([1, 1, 1], seed=3) * 4 - 2
s = full([], 2.5)
b = exp(a) * s + a
c = sum(b, axis=[0, 2], keepdims=true) * b
d = max(b - a, axis=1) + s
e = transpose(b, [2, 0, 1]) + 1
f = expand(a, [1, 4, 1]) * sin(rand([1, 4, 1], seed=4))
g = var(expand(a, [3, 4, 5]) + rand([3, 4, 5], seed=9), axis=[0, 2])
print b, c, d, e, f, g
""",
    # strides2
    """\
x = rand([40, 67], seed=6) * 2 - 1
a = slice(transpose(x), axis=0, start=60, stop=2, step=-7)
b = slice(a, axis=1, start=-1, stop=-100, step=-13)
c = exp(b) * 2 + sum(tanh(b), axis=-1, keepdims=true)
d = slice(x, axis=1, start=1000, stop=-1000, step=-1000)
e = sqrt(abs(d)) + 1
f = slice(x, axis=0, start=-1000, stop=1000, step=1000) * 2
g = sum(transpose(slice(x, axis=0, step=-1)) * slice(transpose(x), axis=1, step=-1), axis=0)
h = max(slice(slice(x, axis=0, start=-3, stop=-40, step=-5), axis=1, start=65, stop=0, step=-9) * 3, axis=0, keepdims=true)
print c, e, f, g, h
""",
    # scal
    """\
s = full([], -1.5)
t = full([1, 1, 1], 2)
a = exp(s) * t + s
b = a * rand([2, 3, 4], seed=2) + s
c = sum(t * s, axis=[0, 1, 2])
d = max(a, axis=1, keepdims=true) + s
print a, b, c, d, sum(b * s)
""",
    nan_program("f32", "1e38"),
    nan_program("f64", "1e308", ", round(x*3), sign(y), mod(x, y), pow(x, y)"),
    # inplace
    """\
x = rand([64], seed=1) @ rand([64, 300], seed=2)
y = slice(x, axis=0, start=1) + slice(x, axis=0, stop=-1)
z0 = rand([8, 64], seed=3) @ rand([64, 300], seed=4)
z = exp(z0) + slice(z0, axis=1, step=-1)
w0 = rand([8, 64], seed=5) @ rand([64, 8], seed=6)
w = tanh(w0) * 2 + transpose(w0)
u0 = rand([300], seed=7) * 0 + rand([16, 300], seed=8) @ rand([300, 300], seed=9)
u = sum(u0, axis=-1, keepdims=true) + slice(u0, axis=1, step=-1) * u0
v0 = randn([64, 64], seed=10) @ randn([64, 64], seed=11)
v = reshape(transpose(reshape(v0, [8, 8, 64]), [1, 0, 2]), [64, 64]) - v0
q0 = randn([4, 64], seed=12) @ randn([64, 4], seed=13)
q = expand(slice(q0, axis=0, stop=1), [4, 4]) + q0
print y, z, w, u, v, q
""",
    # mixed
    """\
x = rand([3, 5], seed=1)
i = arange(5)
j = arange(15) * 100000007
b = gt(x, 0.5)
y = exp(x) + i * x - cast(b, f32)
z = tanh(x) * reshape(j, [3, 5]) + 1
d = rand([3, 5], seed=2, dtype=f64)
w = exp(d) + x * 2
v = sum(exp(d) + x, axis=-1, keepdims=true) * x
u = x / arange(1, 6) + mod(x * 7, arange(1, 6))
t = pow(x, arange(5)) + pow(arange(5), x)
print y, z, w, v, u, t
""",
    # rank8
    """\
x = rand([2, 1, 3, 1, 2, 2, 1, 3], seed=1) - 0.5
y = exp(transpose(x, [7, 6, 5, 4, 3, 2, 1, 0])) * 2
z = sum(x * x, axis=[1, 3, 5, 7], keepdims=true) + x
w = max(exp(x), axis=[0, 2, 4]) + 1
v = sum(tanh(x), axis=[0, 1, 2, 3]) * 3
u = unsqueeze(squeeze(x, axis=1), axis=0) + 1
t = slice(transpose(x), axis=7, step=-1) * expand(slice(transpose(x), axis=0, stop=1), [3, 1, 2, 2, 1, 3, 1, 2])
print y, z, w, v, u, t
""",
    # mm
    """\
a = rand([3, 0], seed=1)
b = rand([0, 4], seed=2)
x = rand([3, 4], seed=3)
y = exp(a @ b * 0.5 + x)
z = (a @ b) + 1
p = rand([2, 1, 3, 5], seed=4)
q = rand([4, 5, 6], seed=5)
w = tanh(p @ q * 2 + rand([6], seed=6))
u = rand([0, 7], seed=7) @ rand([7, 3], seed=8) + 1
v = rand([2, 0, 3, 4], seed=9) @ rand([4, 4], seed=10)
r = rand([1, 5], seed=11) @ rand([5, 1], seed=12) * rand([1, 1], seed=13) + 2
print y, z, w, u, v, r
""",
    # generators: read by one kernel (computed in it, through views and
    # broadcasts), by several (scored: rand recomputed, randn kept), by a
    # matmul (stored), by reductions over trailing and leading axes
    """\
x = rand([33, 40], seed=1)
a = relu(randn([33, 40], seed=2) * 0.1) + x
b = transpose(randn([40, 33], seed=3)) * 2 - x
c = slice(rand([66, 40], seed=4), axis=0, step=2) + reshape(arange(0, 330, 0.25), [33, 40])
d = exp(linspace(-1, 1, 40)) * x + slice(eye(40), axis=0, stop=33)
e = sum(randn([33, 40], seed=5) * x, axis=-1, keepdims=true) + sum(randn([33, 40], seed=5), axis=0, keepdims=true)
r = rand([33, 40], seed=6)
f = exp(r) + 1
g = sum(r * r, axis=-1)
n = randn([33, 40], seed=7, dtype=f64)
h = n * 2 + 1
k = max(n, axis=-1)
m = tanh(rand([8, 33], seed=8) @ x) + rand([8, 40], seed=9)
z = zeros([40]) + ones([33, 1]) + full([33, 40], 0.5) + slice(eye(40), axis=0, start=7)
print a, b, c, d, e, f, g, h, k, m, z
""",
    # one long row summed by the root, its operand computed piece by
    # piece as elements (vm.c's pelems): sources computed, read in place
    # with a stride, one value; odd lengths; a select falls back
    """\
x = rand([1000003], seed=1) * 2 - 1
a = sum(tanh(x * 0.5) * exp(x * x * -0.5) + sigmoid(x) + 0.5)
b = mean(sqrt(arange(0, 1000003, dtype=f32) * 2.5e-7 + 0.25) * 2)
c = var(exp(linspace(-1, 1, 700001)) + rand([700001], seed=2))
d = sum(slice(x, axis=0, step=3) * 2 + full([], 0.5))
e = sum(randn([300007], seed=3, dtype=f64) * 0.5 + arange(300007, dtype=f64) * 1e-6)
f = sum(exp(arange(5, -1000000, -3, dtype=f32) * 1e-6) + 1)
g = sum(where(gt(x, 0), x, 0) * 3)
h = mean(reshape(x * 2, [1000003, 1]) + 1)
print a, b, c, d, e, f, g, h
""",
    # elements whose root (>= 4 x L2) goes out with non-temporal stores
    # from a register; odd length; read by two kernels, so stored
    """\
y = relu(randn([2100003], seed=4) * 0.1)
z = arange(-5, 2099998, dtype=f32) * 0.5 + rand([2100003], seed=5)
print sum(y), max(y), sum(z), min(z * y)
""",
] + [limits_program(n, k) for n, k in ((31, 2), (32, 2), (33, 2), (2, 31), (2, 32), (2, 33), (40, 40))] + [
    long_view_program(200)] + [
    # a layernorm by hand whose result (>= 8 MiB, blocks larger than L1)
    # goes out with non-temporal stores; read by three kernels, so stored
    f"""\
x = randn([{r}, {c}], seed=11)
w = rand([{c}], seed=12) + 0.5
b = rand([{c}], seed=13)
mu = mean(x, axis=-1, keepdims=true)
d = x - mu
v = mean(d * d, axis=-1, keepdims=true)
y = d * rsqrt(v + 1e-5) * w + b
print sum(y, axis=0), max(y, axis=-1), sum(y)
""" for r, c in ((2048, 1200), (1503, 1500))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tir", default="build/tir")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    passed = failed = fused_kernels = row_kernels = errors = 0
    with tempfile.TemporaryDirectory() as d:
        for i in range(-len(FIXED), args.cases):
            src = FIXED[i] if i < 0 else Gen(random.Random(args.seed + i)).program()
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
            row_kernels += fused.stderr.count(" in rows of ")
            errors += fused.returncode != 0
            ok = fused.returncode == ref.returncode and fused.stdout == ref.stdout == one.stdout
            if fused.returncode != 0 and "error" not in fused.stderr:
                ok = False
            if ok:
                passed += 1
            else:
                failed += 1
                what = f"fixed case {len(FIXED) + i}" if i < 0 else f"case {i} (seed {args.seed + i})"
                print(f"FAIL {what}: fused and unfused differ")
                if args.v:
                    print(src)
                    print(fused.stdout[:2000], fused.stderr[:2000])
                    print(ref.stdout[:2000], ref.stderr[:2000])
    print(f"fusion diff: {fused_kernels} fused kernels ({row_kernels} of rows) over {args.cases + len(FIXED)} programs,"
          f" {errors} stopped by an error", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
