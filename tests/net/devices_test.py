#!/usr/bin/env python3
"""tests/net/devices_test.py — several devices (issue 13, point 1): `to`,
`--remote a,b` (remote:0, remote:1, ...), the CPU among them, checked
placement, and what fmt, .vars and --explain say of it.

Servers are started here on free loopback ports (tirnet.Server).  Each
program runs three ways: on several devices, and locally with every
`to(...)` taken out; the printed bytes must be the same (on one machine,
the same kernels compute the same bits wherever they run), and the values
are checked against NumPy too.  Nothing waits for a sleep: a server is
ready when it says it listens, and counts are read from its /metrics.

usage: devices_test.py BUILD/tir
"""
import os
import re
import signal
import subprocess
import time
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import devcheck  # noqa: E402
import tirnet  # noqa: E402
from devcheck import EXPORT_LINE, IMPORT_LINE, RUN_LINE, addr, local_twin  # noqa: E402
from tirnet import Server, eventually, metrics  # noqa: E402

TIR = sys.argv[1] if len(sys.argv) > 1 else "build/tir"
tirnet.TIR = TIR
C = devcheck.Checks(TIR, "tir-devices.")  # its directory removed at the end (main)
TMP = C.tmp
check, tir, npy = C.check, C.tir, C.npy
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "examples")


def write(name, text):
    """C.write, with the examples' data named by absolute path: a relative
    load path is relative to the program's file, here in a temporary folder."""
    return C.write(name, text.replace('load("docs/examples/', 'load("%s/' % EXAMPLES))


def runs(srv):
    """Batches it answered 200 (its log: a line once each is sent)."""
    return srv.logged(RUN_LINE)


def values(out):
    """name -> array from tir's printed results (--full)."""
    got, name, buf = {}, None, []
    for ln in out.splitlines():
        m = re.match(r"^(\S+): (\w+)\[([^\]]*)\]$", ln)
        if m:
            if name:
                got[name] = buf
            name, buf = m.group(1), []
            continue
        buf.append(ln)
    if name:
        got[name] = buf
    res = {}
    for k, lines in got.items():
        txt = " ".join(lines).replace("[", " ").replace("]", " ").replace(",", " ")
        res[k] = np.array([float(t) for t in txt.split()])
    return res


X = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 4


def test_programs(a, b):
    xp = npy("x.npy", X)
    w = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    wp = npy("w.npy", w)
    progs = {
        # a chain over three devices and back: two moves server to server,
        # one to the CPU; a value placed nowhere (h) made on each user
        "chain": ("input x: f32[3, 4]\nw = load(\"%s\")\nh = relu(x @ w)\n"
                  "a = to(h, \"remote:0\") * 2.0\nb = to(a, \"remote:1\") + 1.0\n"
                  "c = to(b, \"cpu\")\nd = exp(to(c, \"remote:0\") - 3.0)\nprint h, a, b, c, d\n" % wp,
                  lambda: {"h": np.maximum(X @ w, 0), "a": np.maximum(X @ w, 0) * 2,
                           "b": np.maximum(X @ w, 0) * 2 + 1, "c": np.maximum(X @ w, 0) * 2 + 1,
                           "d": np.exp(np.maximum(X @ w, 0) * 2 + 1 - 3)}),
        # one value used on a device and moved away too: it stays where it
        # was made for the later step that reads it there
        "stays": ("input x: f32[3, 4]\np = to(x, \"remote:1\") * 3.0\nq = to(p, \"remote:0\") + 1.0\n"
                  "r = p + to(q, \"remote:1\")\nprint r\n",
                  lambda: {"r": X * 3 + X * 3 + 1}),
        # creation ops made on the device that reads them
        "made_there": ("m = randn([64, 64], seed=3)\nk = to(m, \"remote:1\") @ to(m, \"remote:1\")\n"
                       "s = sum(to(k, \"cpu\"))\nprint s\n", None),
        # the CPU alone among remotes, and a reduction moved
        "reduce": ("input x: f32[3, 4]\nt = sum(to(x, \"cpu\") * x, axis=1)\nu = to(t, \"remote:1\") / 2.0\n"
                   "print u\n", lambda: {"u": (X * X).sum(1) / 2}),
    }
    for name, (text, ref) in progs.items():
        f = write(f"{name}.tir", text)
        lf = write(f"{name}_local.tir", local_twin(text))
        inp = ["--input", f"x={xp}"] if "input x" in text else []
        st, out, err = tir("run", f, *inp, "--remote", addr(a, b), "--quiet", "--full")
        lst, lout, lerr = tir("run", lf, *inp, "--quiet", "--full")
        check(f"{name}: runs on several devices", st == 0, err)
        check(f"{name}: the same bytes as a local run", st == 0 and lst == 0 and out == lout,
              f"\n{out}\n-- local --\n{lout}\n{lerr}")
        if ref and st == 0:
            got = values(out)
            bad = [k for k, v in ref().items() if k not in got or
                   not np.allclose(got[k], np.asarray(v, dtype=np.float64).ravel(), rtol=1e-5, atol=1e-5)]
            check(f"{name}: NumPy agrees", not bad, f"{bad}: {got}")


def test_moves(a, b):
    """What moves where, counted by each server."""
    xp = npy("x.npy", X)
    text = ("input x: f32[3, 4]\ny = to(x, \"remote:1\") * 2.0\nz = to(y, \"remote:0\") + 1.0\n"
            "print z\n")
    f = write("moves.tir", text)
    ra, rb = runs(a), runs(b)
    st, out, err = tir("run", f, "--input", f"x={xp}", "--remote", addr(a, b), "--explain")
    check("moves: exit 0", st == 0, err)
    check("moves: remote:1 ran a batch, remote:0 one",
          b.wait_log(RUN_LINE, rb + 1) and a.wait_log(RUN_LINE, ra + 1),
          f"remote:0 {runs(a) - ra}, remote:1 {runs(b) - rb}")
    check("moves: --explain says where each batch ran",
          re.search(r"# on remote:1 \(127\.0\.0\.1:%d\), step 1 of 2" % b.port, err) and
          re.search(r"# on remote:0 \(127\.0\.0\.1:%d\), step 2 of 2" % a.port, err), err)
    # a weight made by randn on remote:1 is made there: no blob goes up
    g = write("gen.tir", "w = randn([256, 256], seed=1)\nk = to(w, \"remote:1\") * 2.0\n"
              "print sum(to(k, \"remote:0\"))\n")
    ia, eb = a.logged(IMPORT_LINE), b.logged(EXPORT_LINE)
    st, out, err = tir("run", g, "--remote", addr(a, b), "--profile")
    m = re.search(r"blobs: (\d+) cached, (\d+) sent \((\d+) bytes\)", err)
    # no blob at all: the weight is made on remote:1, and the value moves
    # from remote:1 to remote:0 server to server, never through this client
    check("randn on remote:1 is made there; the move goes server to server: no blob sent",
          st == 0 and m and m.group(2) == "0" and m.group(3) == "0", err[-600:])
    check("... remote:0 imported it, fetched from remote:1",
          a.wait_log(IMPORT_LINE, ia + 1) and b.wait_log(EXPORT_LINE, eb + 1),
          f"imports {a.logged(IMPORT_LINE) - ia}, exports served {b.logged(EXPORT_LINE) - eb}")
    lf = write("gen_local.tir", local_twin(open(g).read()))
    lst, lout, lerr = tir("run", lf, "--quiet")
    st, out, err = tir("run", g, "--remote", addr(a, b), "--quiet")
    check("... and prints what a local run does (its header names the to)",
          st == 0 and out.splitlines()[1:] == lout.splitlines()[1:], out + err + lout)


def test_checked(a, b):
    xp = npy("x.npy", X)
    # operands on two devices: an error at the op, before anything is sent
    bad = write("mixed.tir", "input x: f32[3, 4]\np = to(x, \"remote:0\")\nq = to(x, \"remote:1\")\n"
                "r = p + q\nprint r\n")
    ra, rb = runs(a), runs(b)
    st, out, err = tir("run", bad, "--input", f"x={xp}", "--remote", addr(a, b))
    check("mixed devices: exit 1, at the op, said what",
          st == 1 and "mixed.tir:4:7: error: add: operands on different devices: p is on remote:0, q on remote:1"
          in err and "    r = p + q\n          ^" in err, err)
    check("mixed devices: nothing was sent", runs(a) == ra and runs(b) == rb, "")
    st, out, err = tir("check", bad)
    check("tir check says it too", st == 1 and "operands on different devices" in err, err)
    # a device past the list: at check time with --remote, at the `to`
    far = write("far.tir", "input x: f32[3, 4]\np = to(x, \"remote:2\")\nprint p\n")
    st, out, err = tir("run", far, "--input", f"x={xp}", "--remote", addr(a, b))
    check("remote:2 of two: exit 1 at the to",
          st == 1 and "far.tir:2:5: error: to: no device remote:2: --remote names 2 servers (remote:0 .. remote:1)"
          in err, err)
    st, out, err = tir("check", far)
    check("remote:2 without --remote: tir check passes (no list to check against)", st == 0, err)
    st, out, err = tir("run", far, "--input", f"x={xp}")
    check("remote:2 run locally: exit 1, no --remote", st == 1 and "no device remote:2: no --remote is given" in err,
          err)
    typo = write("typo.tir", "input x: f32[3, 4]\np = to(x, \"remote1\")\nprint p\n")
    st, out, err = tir("check", typo)
    check("a device name that is none: said, with the names there are",
          st == 1 and "to: no device 'remote1': devices are \"cpu\" and \"remote:N\"" in err, err)
    # fmt says where each placed value lives, and parses back the same
    st, out, err = tir("fmt", write("fmt.tir", "input x: f32[3, 4]\ny = exp(x)\np = to(y, \"remote:1\")\n"
                                    "q = p * 2.0\nprint q\n"))
    check("fmt notes each placed value's device",
          st == 0 and 'p: f32[3, 4] = to(y, "remote:1")  # on remote:1\n' in out and
          "q: f32[3, 4] = mul(p, 2.0)  # on remote:1\n" in out and "y: f32[3, 4] = exp(x)\n" in out, out)
    st2, out2, err2 = tir("fmt", write("fmt2.tir", out))
    check("fmt's text parses back the same", st2 == 0 and out2 == out, out2 + err2)


def test_repl(a, b):
    xp = npy("x.npy", X)
    script = (f".remote {addr(a, b)}\n.remote\ninput x: f32[3, 4]\n.input x={xp}\n"
              "y = to(x, \"remote:1\") * 2.0\nz = to(y, \"remote:0\") + 1.0\nz\n.vars\nsum(z)\n"
              "w = to(x, \"remote:3\")\n.remote off\n.remote\n")
    st, out, err = tir("repl", stdin=script.encode())
    check("repl: .remote lists the servers in order",
          f"remote: 2 servers (values placed nowhere run on remote:0)\n  remote:0  127.0.0.1:{a.port}\n"
          f"  remote:1  127.0.0.1:{b.port}\n" in out, out)
    want = (X * 2 + 1).sum()
    m = re.search(r"sum\(z\): f32\[\]\n(\S+)", out)
    check("repl: values across devices, kept between lines", m and abs(float(m.group(1)) - want) < 1e-3, out + err)
    check("repl: .vars says each value's device",
          re.search(r"^y\s+f32\[3, 4\]\s+remote:1\s+computed$", out, re.M) and
          re.search(r"^z\s+f32\[3, 4\]\s+remote:0\s+computed$", out, re.M) and
          re.search(r"^x\s+f32\[3, 4\]\s+any\s+input, given$", out, re.M), out)
    check("repl: to a device past the list is an error at check time, the session goes on",
          "error: to: no device remote:3: .remote names 2 servers" in err and
          out.rstrip().endswith("remote: off (the session computes here)") and st == 1, err + out)


def test_repl_sharded(a, b):
    """A sharded value named in the REPL is kept between lines, each piece
    on its server: a later line reads the pieces, it does not make them
    again; rebinding the name lets them go."""
    script = (f".remote {addr(a, b)}\nx = randn([4, 3], seed=1)\ny = shard(x, axis=0) * 2.0\ny\n.vars\n"
              "sum(y, axis=1)\n.explain\ny = y + 1.0\n.vars\n")
    st, out, err = tir("repl", stdin=script.encode())
    ex = out[out.index("sum(y, axis=1)"):] if "sum(y, axis=1)" in out else ""
    check("repl: a named sharded value is kept, each piece on its server",
          st == 0 and re.search(r"^y\s+f32\[4, 3\]\s+sharded\s+computed$", out, re.M), out + err)
    check("repl: ... a later line reads the pieces (each server sums, makes nothing again)",
          "# on remote:0" in ex and "# on remote:1" in ex and "mul" not in ex and "randn" not in ex, ex)
    check("repl: ... and rebinding y lets them go",
          re.search(r"^y\s+f32\[4, 3\]\s+sharded\s+not computed$", out, re.M), out)


def test_faults(a):
    xp = npy("x.npy", X)
    dead = Server()
    port = dead.port
    dead.stop()
    f = write("dead.tir", "input x: f32[3, 4]\ny = to(x, \"remote:1\") + 1.0\nprint to(y, \"remote:0\")\n")
    st, out, err = tir("run", f, "--input", f"x={xp}", "--remote", f"127.0.0.1:{a.port},127.0.0.1:{port}")
    check("remote:1 down: exit 3, its address named", st == 3 and f"127.0.0.1:{port}" in err, f"{st} {err}")
    st, out, err = tir("run", f, "--input", f"x={xp}", "--remote", f"127.0.0.1:{a.port},")
    check("an empty name in the list: exit 2", st == 2 and "empty" in err, f"{st} {err}")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def blocks(out):
    """[(header, numbers)] of printed values"""
    res = []
    for part in re.split(r"^(\S.*: \w+\[[^\]]*\])$", out, flags=re.M)[1:]:
        if re.match(r"^\S.*: \w+\[[^\]]*\]$", part):
            res.append([part, None])
        else:
            res[-1][1] = np.array([float(v) for v in re.findall(r"-?(?:inf|nan|[0-9.]+(?:e[-+]?\d+)?)", part)])
    return res


def test_sharding(a, b):
    """shard, ops on sharded values, reductions and products across the
    split, all_reduce: docs/examples' two samples against their goldens
    (tests/numdiff.py's tolerance) and NumPy, and the same bytes as a
    local run wherever the split leaves the order of every sum as it is."""
    x = np.load(f"{ROOT}/docs/examples/x.npy")
    w1 = np.load(f"{ROOT}/docs/examples/w1.npy")
    w2 = np.load(f"{ROOT}/docs/examples/w2.npy")
    h = np.maximum(x.astype(np.float64) @ w1, 0)
    z = h @ w2
    y = np.exp(z - z.max(1, keepdims=True))
    y /= y.sum(1, keepdims=True)
    want = {"data-parallel": [y, y.mean(0)], "tensor-parallel": [z, z.sum(1)]}
    for name, ref in want.items():
        f = f"docs/examples/{name}.tir"
        ra, rb = a.logged(RUN_LINE), b.logged(RUN_LINE)
        e = dict(os.environ)
        e.pop("TIR_TOKEN", None)
        p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b)], capture_output=True, cwd=ROOT,
                           timeout=300, env=e)
        out = p.stdout.decode()
        check(f"{name}: runs sharded over two servers", p.returncode == 0, p.stderr.decode())
        got = os.path.join(TMP, f"{name}.got")
        with open(got, "w") as fh:
            fh.write(out)
        nd = subprocess.run(["/usr/bin/python3", f"{ROOT}/tests/numdiff.py", f"{ROOT}/docs/examples/{name}.out", got],
                            capture_output=True)
        check(f"{name}: its golden, within tests/numdiff.py's tolerance", nd.returncode == 0,
              nd.stdout.decode() + nd.stderr.decode())
        bl = blocks(out)
        ok = len(bl) == len(ref) and all(np.allclose(v, r.ravel(), rtol=1e-5, atol=1e-6) for (_, v), r in zip(bl, ref))
        check(f"{name}: NumPy agrees", ok, out)
        check(f"{name}: both servers ran their piece",
              a.wait_log(RUN_LINE, ra + 1) and b.wait_log(RUN_LINE, rb + 1), "")
    # the same bytes as a local run where no sum is split: rows of a
    # product, elementwise ops, a reduction along the other axis
    text = ('x = load("docs/examples/x.npy")\nw1 = load("docs/examples/w1.npy")\n'
            "s = shard(x, axis=0)\nh = exp(s @ w1 * 0.5) - 1.0\nr = max(h, axis=1)\nc = to(h, \"cpu\") * 2.0\n"
            "print h, r, c\n")
    f = write("rows.tir", text)
    lf = write("rows_local.tir", text.replace("shard(x, axis=0)", "x").replace('to(h, \"cpu\")', "h"))
    e = dict(os.environ)
    e.pop("TIR_TOKEN", None)
    p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b)], capture_output=True, cwd=ROOT, timeout=300,
                       env=e)
    q = subprocess.run([TIR, "run", "--quiet", lf], capture_output=True, cwd=ROOT, timeout=300, env=e)
    po = [ln for ln in p.stdout.decode().splitlines() if not ln.startswith(("h:", "r:", "mul("))]
    qo = [ln for ln in q.stdout.decode().splitlines() if not ln.startswith(("h:", "r:", "mul("))]
    check("sharded rows: the same bytes as a local run", p.returncode == 0 and po == qo and po,
          p.stderr.decode() + "\n".join(po[:4]) + "\n--\n" + "\n".join(qo[:4]))
    # reductions over the split axis that must not sum the pieces' own
    # (var), and f16 sums made in f32 and rounded once, as a local run does
    text = ('x = load("docs/examples/x.npy")\ns = shard(x, axis=0)\n'
            "print var(s, axis=0), var(s, axis=1), cast(s, bf16), sum(cast(s, f16), axis=0), mean(s * 2.0)\n")
    f = write("reduce.tir", text)
    lf = write("reduce_local.tir", text.replace("shard(x, axis=0)", "x"))
    p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b)], capture_output=True, cwd=ROOT,
                       timeout=300, env=e)
    q = subprocess.run([TIR, "run", "--quiet", lf], capture_output=True, cwd=ROOT, timeout=300, env=e)
    got = os.path.join(TMP, "reduce.got")
    want = os.path.join(TMP, "reduce.want")
    with open(got, "wb") as fh:
        fh.write(p.stdout)
    with open(want, "wb") as fh:
        fh.write(q.stdout)
    nd = subprocess.run(["/usr/bin/python3", f"{ROOT}/tests/numdiff.py", want, got], capture_output=True)
    check("var, f16 sums, bf16 casts, mean over the split axis: a local run's, within tolerance",
          p.returncode == 0 and q.returncode == 0 and nd.returncode == 0,
          p.stderr.decode() + nd.stdout.decode())
    # the norms and attention split along a batch axis: each piece on its
    # server (the weights whole on each), the same bytes as a local run
    text = ('x = load("docs/examples/x.npy")\nq = reshape(x, [2, 4, 16])\ng = ones([16]) * 1.5\n'
            "b = zeros([16]) + 0.25\ns = shard(q, axis=0)\nh = layernorm(s, g, b)\nr = rmsnorm(s, g)\n"
            "a = attention(h, h, r, causal=true)\nprint h, r, a, attention(s, q, q)\n")
    f = write("norms.tir", text)
    lf = write("norms_local.tir", text.replace("shard(q, axis=0)", "q"))
    ra, rb = a.logged(RUN_LINE), b.logged(RUN_LINE)
    p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b), "--explain"], capture_output=True,
                       cwd=ROOT, timeout=300, env=e)
    q = subprocess.run([TIR, "run", "--quiet", lf], capture_output=True, cwd=ROOT, timeout=300, env=e)
    po = [ln for ln in p.stdout.decode().splitlines() if not ln.startswith("attention(")]
    qo = [ln for ln in q.stdout.decode().splitlines() if not ln.startswith("attention(")]
    ex = p.stderr.decode()
    on_both = all(re.search(r"# on remote:%d .*\n(kernel .*\n)*kernel \d+: .*attention" % k, ex) for k in (0, 1))
    check("layernorm, rmsnorm, attention split along a batch axis: on both servers, a local run's bytes",
          p.returncode == 0 and po == qo and po and on_both, ex[-800:])
    # heads split out by reshape and transpose, attention per head, and
    # back: along the split axis, each piece on its server; a reshape that
    # merges the split axis with another gathers (correct either way)
    text = ('x = load("docs/examples/x.npy")\nq = reshape(x, [2, 4, 16])\ns = shard(q, axis=0)\n'
            "h = transpose(reshape(s, [2, 4, 2, 8]), [0, 2, 1, 3])\na = attention(h, h, h, causal=true)\n"
            "o = reshape(transpose(a, [0, 2, 1, 3]), [2, 4, 16])\nt = transpose(s)\n"
            "c = slice(s, axis=2, start=3, stop=9)\nf = reshape(s, [8, 16])\nprint o, t, c, f\n")
    f = write("heads.tir", text)
    lf = write("heads_local.tir", text.replace("shard(q, axis=0)", "q"))
    p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b), "--explain"], capture_output=True,
                       cwd=ROOT, timeout=300, env=e)
    q = subprocess.run([TIR, "run", "--quiet", lf], capture_output=True, cwd=ROOT, timeout=300, env=e)
    ex = p.stderr.decode()
    r1 = ex[ex.index("# on remote:1"):] if "# on remote:1" in ex else ""
    check("reshape, transpose and slice along the split axis: each piece on its server, a local run's bytes",
          p.returncode == 0 and p.stdout == q.stdout and "reshape -> _ f32[1, 4, 2, 8]" in r1 and
          "attention -> _ f32[1, 2, 4, 8]" in r1, ex[-1200:])
    # conv2d and the pools of a batch split, a pool of a channel split,
    # argmax along another axis, concat along another axis: each piece on
    # its server (the weights whole on each), a local run's bytes
    text = ("x = randn([4, 3, 8, 8], seed=1)\nw = randn([6, 3, 3, 3], seed=2)\nb = randn([6], seed=3)\n"
            "c = conv2d(shard(x, axis=0), w, b, padding=1)\nm = maxpool2d(relu(c), kernel=2)\n"
            "v = avgpool2d(m, kernel=2)\nq = maxpool2d(shard(conv2d(x, w, b, padding=1), axis=1), kernel=2)\n"
            "print c, m, v, q, argmax(v, axis=1), concat([v, v * 2.0], axis=1)\n")
    f = write("cnn.tir", text)
    lf = write("cnn_local.tir", text.replace("shard(x, axis=0)", "x").replace(
        "shard(conv2d(x, w, b, padding=1), axis=1)", "conv2d(x, w, b, padding=1)"))
    p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b), "--explain"], capture_output=True,
                       cwd=ROOT, timeout=300, env=e)
    q = subprocess.run([TIR, "run", "--quiet", lf], capture_output=True, cwd=ROOT, timeout=300, env=e)
    ex = p.stderr.decode()
    r1 = ex[ex.index("# on remote:1"):ex.index("# on cpu")] if "# on remote:1" in ex and "# on cpu" in ex else ""
    check("conv2d, pools, argmax and concat of split values: each piece on its server, a local run's bytes",
          p.returncode == 0 and p.stdout == q.stdout and p.stdout and
          all(k in r1 for k in ("conv2d -> _ f32[2, 6, 8, 8]", "maxpool2d -> _ f32[2, 6, 4, 4]",
                                "avgpool2d -> _ f32[2, 6, 2, 2]", "maxpool2d -> _ f32[4, 3, 4, 4]",
                                "argmax -> _ i64[2, 2, 2]", "concat -> _ f32[2, 12, 2, 2]")), ex[-1500:])
    # --profile: each device's kernel table under its name; --explain: the
    # printed value gathered here, in a last step on the CPU
    p = subprocess.run([TIR, "run", "--quiet", "docs/examples/data-parallel.tir", "--remote", addr(a, b),
                        "--profile", "--explain"], capture_output=True, cwd=ROOT, timeout=300, env=e)
    ex = p.stderr.decode()
    check("--profile over several devices: a table for each, under its name",
          p.returncode == 0 and all(re.search(r"^# on %s \(.*\n#    kernel " % d, ex, re.M)
                                    for d in (r"remote:0", r"remote:1", "cpu")), ex[-1500:])
    check("a printed sharded value is gathered here: its concat in the CPU's step",
          re.search(r"^# on cpu \(cpu\), step \d of \d\n(kernel .*\n)*kernel \d+: concat", ex, re.M), ex[-1500:])
    # over this process and a server
    f = write("mixed.tir", 'x = load("docs/examples/x.npy")\n'
              'print sum(shard(x, axis=1, devices=["cpu", "remote:1"]) * 3.0, axis=0)\n')
    p = subprocess.run([TIR, "run", "--quiet", f, "--remote", addr(a, b)], capture_output=True, cwd=ROOT, timeout=300,
                       env=e)
    bl = blocks(p.stdout.decode())
    check("sharded over cpu and remote:1", p.returncode == 0 and bl and np.allclose(bl[0][1], (x * 3).sum(0), rtol=1e-5),
          p.stdout.decode() + p.stderr.decode())
    # errors, at check time, before anything is sent
    cases = [
        ("x = ones([5, 2])\nprint shard(x, axis=0)\n",
         "2:7: error: shard: an uneven split: axis 0 of f32[5, 2] has 5, not a multiple of the 2 devices"),
        ('x = ones([4, 2])\na = to(x, "remote:0")\nprint shard(x) + a\n',
         "3:16: error: add: operands on different devices: one is sharded over remote:0, remote:1, a on remote:0"),
        ("x = ones([4])\nprint all_reduce(x)\n", "2:7: error: all_reduce: x is not sharded"),
        ("print shard(ones([4]), devices=[])\n", "1:7: error: shard: devices is empty"),
        ('print shard(ones([4]), devices=["remote:0", 3])\n', "1:45: error: expected a string"),
        ("x = shard(ones([4]))\nprint shard(x)\n", "2:7: error: shard: x is sharded already"),
        ('print shard(ones([4]), devices=["remote:1", "remote:1"])\n', "1:7: error: shard: remote:1 is named twice"),
        ('print shard(ones([4]), devices=["remote:2"])\n', "1:7: error: shard: no device remote:2: past --remote's list"),
        ("p = shard(ones([4, 4]), axis=1) @ shard(ones([4, 4]), axis=0)\nprint all_reduce(p, op=max)\n",
         "2:7: error: all_reduce: p holds the terms of a sum"),
    ]
    for i, (prog, msg) in enumerate(cases):
        f = write(f"bad{i}.tir", prog)
        st, out, err = tir("run", f, "--remote", addr(a, b))
        check(f"sharding error {i}: exit 1, said where", st == 1 and f"bad{i}.tir:{msg}" in err, err)
    st, out, err = tir("run", write("nodev.tir", "print shard(ones([4]))\n"))
    check("shard without --remote: said", st == 1 and "shard: no devices to shard over: no --remote is given" in err,
          err)
    st, out, err = tir("check", write("chk.tir", "x = shard(ones([4, 2]))\ny = all_reduce(x * 2.0)\nprint y\n"))
    check("tir check without --remote: typed, not split", st == 0, err)


def test_tokens():
    """Servers with a token: the client's TIR_TOKEN opens both, and one
    server fetching from the other shows it too (tokens hold between
    servers); a wrong token is refused before anything runs."""
    t1, t2 = Server("--token", "s3cret-a"), Server("--token", "s3cret-a")
    try:
        g = write("tok.tir", "w = randn([64, 64], seed=2)\nk = to(w, \"remote:1\") * 2.0\n"
                  "print sum(to(k, \"remote:0\"))\n")
        ia = t1.logged(IMPORT_LINE)
        st, out, err = tir("run", g, "--remote", addr(t1, t2), "--quiet", env={"TIR_TOKEN": "s3cret-a"})
        lst, lout, lerr = tir("run", write("tok_local.tir", local_twin(open(g).read())), "--quiet")
        check("tokens: a move between two servers with a token",
              st == 0 and out.splitlines()[1:] == lout.splitlines()[1:] and t1.wait_log(IMPORT_LINE, ia + 1),
              out + err)
        st, out, err = tir("run", g, "--remote", addr(t1, t2), "--quiet", env={"TIR_TOKEN": "wrong"})
        check("tokens: a wrong token: exit 3, said", st == 3 and "token" in err, f"{st} {err}")
    finally:
        t1.stop()
        t2.stop()


def chain_program():
    """Two chains of 20,000 1024 x 1024 matmuls (2 GFLOP each), one on
    each server: minutes of work on any machine, each kernel short, so
    that the test acts while both run and a stop is prompt.  w is scaled
    by 1/sqrt(1024): the values stay far from overflow and denormals."""
    lines = ["w = randn([1024, 1024], seed=1) * 0.03125", 'a0 = to(w, "remote:0")', 'b0 = to(w, "remote:1")']
    lines += ["a%d = a%d @ w\nb%d = b%d @ w" % (i + 1, i, i + 1, i) for i in range(20000)]
    lines.append('print sum(to(a20000, "cpu")) + sum(to(b20000, "cpu"))')
    return write("chains.tir", "\n".join(lines) + "\n")


def running(srv):
    return metrics(srv).get("tir_batches_running", 0.0)


def start_chains(servers):
    e = dict(os.environ)
    e.pop("TIR_TOKEN", None)
    return subprocess.Popen([TIR, "run", "--quiet", chain_program(), "--remote", addr(*servers)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)


def test_at_once(a, b):
    """A step's batches run at once: both servers are seen running theirs
    together; SIGINT then stops the client (130) and both batches."""
    p = start_chains((a, b))
    both = eventually(lambda: running(a) == 1 and running(b) == 1 or p.poll() is not None)
    check("a step's batches run at once: both servers run one together",
          both and p.poll() is None, f"running {running(a)}, {running(b)}; client {p.poll()}")
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    check("SIGINT stops the run: exit 130", p.returncode == 130, f"{p.returncode} {err.decode()[-300:]}")
    check("... and both servers stop their batch",
          eventually(lambda: running(a) == 0 and running(b) == 0), f"running {running(a)}, {running(b)}")


def test_member_dies(a):
    """One of several remotes killed mid-batch: exit 3 naming it, at once,
    and the other server's batch is stopped (its client went away)."""
    c = Server()
    p = start_chains((a, c))
    both = eventually(lambda: running(a) == 1 and running(c) == 1 or p.poll() is not None)
    check("member dies: both servers run their batch", both and p.poll() is None,
          f"running {running(a)}, {running(c)}")
    t0 = time.monotonic()
    c.proc.kill()
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    took = time.monotonic() - t0
    err = err.decode()
    check("member dies: exit 3 naming the dead server",
          p.returncode == 3 and f"remote 127.0.0.1:{c.port}" in err, f"{p.returncode} {err[-300:]}")
    check("member dies: said at once (under 10 s)", took < 10, f"{took:.1f} s")
    check("member dies: the other server stops its batch", eventually(lambda: running(a) == 0),
          f"running {running(a)}")
    c.stop()


def main():
    a, b = Server(), Server()
    try:
        tirnet.run_groups([(t, (a, b)) for t in (test_programs, test_moves, test_checked, test_repl,
                                                  test_sharding, test_repl_sharded, test_at_once)] +
                          [test_tokens, (test_member_dies, (a,)), (test_faults, (a,))], check_fn=check)
    finally:
        a.stop()
        b.stop()
    tirnet.check_no_sanitizer(check)
    return C.counts()


if __name__ == "__main__":
    sys.exit(main())
