#!/usr/bin/env python3
"""tests/net/devices_edge_test.py — several devices (issue 13), the edges:
the REPL's values kept on two servers (an input given again, .remote
changed while placed values exist), what a run of several steps reports
(bytes sent, blobs, the trace), a runtime error on remote:1, long chains
of moves, a value moved to the same place twice, --save of a value that
lives on remote:1, small dtypes moved between servers, one server listed
twice, an import the receiver refuses.

Servers are started here on free loopback ports (tirnet.Server).  Nothing
waits for a sleep: a server's batches are counted in its log, waited for
until they are there.

usage: devices_edge_test.py BUILD/tir
"""
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import devcheck  # noqa: E402
import tirnet  # noqa: E402
from devcheck import IMPORT_LINE, RUN_LINE, addr, local_twin  # noqa: E402
from tirnet import Server  # noqa: E402

TIR = sys.argv[1] if len(sys.argv) > 1 else "build/tir"
tirnet.TIR = TIR
C = devcheck.Checks(TIR, "tir-devices-edge.")  # its directory removed at the end (main)
TMP = C.tmp
check, tir, write, npy = C.check, C.tir, C.write, C.npy


def body(out):
    """The printed values without their header lines (a header names the to)."""
    return [ln for ln in out.splitlines() if not re.match(r"^.*: \w+\[[^\]]*\]$", ln)]


def runs(srv):
    return srv.logged(RUN_LINE)


def settled(srv, regex, want):
    """Whether srv logged exactly `want` lines matching regex: waits until
    at least that many are there (the log line follows the reply), then
    counts them."""
    return srv.wait_log(regex, want) and srv.logged(regex) == want


def test_repl_stale(a, b):
    """An input given again after values were computed on two servers: each
    server's held values go stale, and a value placed on remote:1 is
    computed again there, not by remote:0's batch (remote:0 held z, stale,
    when the run was planned)."""
    x1, x2 = npy("x1.npy", np.arange(4, dtype=np.float32)), npy("x2.npy", np.arange(4, dtype=np.float32) * 10)
    rb = runs(b)
    script = (f".remote {addr(a, b)}\ninput x: f32[4]\n.input x={x1}\ny = to(x, \"remote:1\") * 2.0\n"
              f"z = to(y, \"remote:0\") + 1.0\nz\n.input x={x2}\nz\ny\n")
    st, out, err = tir("repl", stdin=script.encode())
    check("repl stale: the values of the new input",
          st == 0 and "z: f32[4]\n[1, 3, 5, 7]\n" in out and "z: f32[4]\n[1, 21, 41, 61]\n" in out
          and "y: f32[4]\n[0, 20, 40, 60]\n" in out, out + err)
    # z's line made y on remote:1 each time; y's line read it there
    check("repl stale: y (on remote:1) is computed again on remote:1",
          settled(b, RUN_LINE, rb + 3), f"remote:1 ran {runs(b) - rb} batches, 3 wanted")


def test_repl_vars_stale(a, b):
    """.vars right after an input is given again: what was computed from it
    on a server is not 'computed' any more."""
    x1, x2 = npy("x1.npy", np.arange(4, dtype=np.float32)), npy("x2.npy", np.arange(4, dtype=np.float32) * 10)
    script = (f".remote {addr(a, b)}\ninput x: f32[4]\n.input x={x1}\ny = to(x, \"remote:1\") * 2.0\n"
              f"z = to(y, \"remote:0\") + 1.0\nz\n.vars\n.input x={x2}\n.vars\n")
    st, out, err = tir("repl", stdin=script.encode())
    tables = re.findall(r"^z\s+f32\[4\]\s+remote:0\s+(.*)$", out, re.M)
    check(".vars: z computed, then not once x is given again",
          st == 0 and tables == ["computed", "not computed"], out + err)


def test_repl_remote_off(a, b):
    """.remote off (or one server) while a value is placed on remote:1: a
    line that does not need remote:1 still runs."""
    x1 = npy("x1.npy", np.arange(4, dtype=np.float32))
    script = (f".remote {addr(a, b)}\ninput x: f32[4]\n.input x={x1}\ny = to(x, \"remote:1\") * 2.0\ny\n"
              f".remote off\nq = x + 1.0\nq\ny\n.remote {addr(a)}\nsum(x)\n")
    st, out, err = tir("repl", stdin=script.encode())
    check(".remote off: a line that needs no remote runs here",
          "q: f32[4]\n[1, 2, 3, 4]\n" in out, out + err)
    check(".remote off: a value on remote:1 is an error at its to",
          re.search(r"<stdin>:4:5: error: to: no device remote:1: the session has no servers \(\.remote HOST:PORT\)",
                    err), err)
    check(".remote one server: a line placed nowhere runs on it", "sum(x): f32[]\n6\n" in out, out + err)


def test_stats(a, b):
    """A run of three steps where remote:1 runs two batches: the blob it
    was sent in the first is counted (--profile, the timing line)."""
    xv = np.random.default_rng(7).random((300, 300), dtype=np.float32)
    xp = npy("big.npy", xv)
    f = write("stats.tir", "input x: f32[300, 300]\na = to(x, \"remote:1\") * 2.0\nb = to(a, \"remote:0\") + 1.0\n"
              "print sum(to(b, \"remote:1\"))\n")
    st, out, err = tir("run", f, "--input", f"x={xp}", "--remote", addr(a, b), "--profile")
    m = re.search(r"blobs: (\d+) cached, (\d+) sent \((\d+) bytes\)", err)
    check("stats: --profile counts the blob remote:1 was sent in step 1",
          st == 0 and m and m.group(2) == "1" and int(m.group(3)) >= xv.nbytes, err[-500:])
    m = re.search(r"net [\d.]+ ms \((\d+) round trips, ([\d.]+) (B|KiB|MiB) up", err)
    up = float(m.group(2)) * {"B": 1, "KiB": 1024, "MiB": 1 << 20}[m.group(3)] if m else 0
    check("stats: the timing line counts its bytes up", st == 0 and up >= xv.nbytes, err[-300:])
    # the REPL: a line only remote:0 runs reports its own trips, not
    # remote:1's upload of the line before
    xp = npy("big2.npy", np.random.default_rng(8).random((300, 300), dtype=np.float32))
    script = (f".remote {addr(a, b)}\n.timer on\ninput x: f32[300, 300]\n.input x={xp}\n"
              "sum(to(x, \"remote:1\"))\n1.0 + 2.0\n")
    st, out, err = tir("repl", stdin=script.encode())
    ups = re.findall(r"net [\d.]+ ms \((\d+) round trips, ([\d.]+) (B|KiB|MiB) up", err)
    check("stats: the REPL's next line does not count the line before's upload",
          len(ups) == 2 and ups[0][2] == "KiB" and float(ups[0][1]) > 300 and
          (ups[1][2] == "B" or float(ups[1][1]) < 100), f"{ups}\n{out}{err}")


def test_runtime_error(a, b):
    """A runtime error in remote:1's batch: at the op, and naming remote:1."""
    f = write("div0.tir", "x = arange(4, dtype=i32)\nz = zeros([4], dtype=i32)\na = to(x, \"remote:1\") * 2\n"
              "q = a / to(z, \"remote:1\")\nprint to(q, \"remote:0\")\n")
    st, out, err = tir("run", f, "--remote", addr(a, b))
    check("runtime error on remote:1: exit 1 at the op",
          st == 1 and "div0.tir:4:7: error: div: integer division by zero" in err and
          "    q = a / to(z, \"remote:1\")\n          ^" in err, err)
    check("... naming remote:1 and its address", f"div: integer division by zero, on remote:1 (127.0.0.1:{b.port})\n" in err, err)
    # one remote alone reads as a local run (docs: a program's error)
    g = write("div0_one.tir", "x = arange(4, dtype=i32)\nprint x / zeros([4], dtype=i32)\n")
    st, out, err = tir("run", g, "--remote", addr(a))
    lst, lout, lerr = tir("run", g)
    check("... one remote: the error reads as a local run's", st == 1 and err == lerr, err + lerr)


def trace_ok(path):
    """What is wrong with the trace at path in Chrome's format, or None:
    JSON, named threads, each thread one name, events with ts and dur, the
    complete events of a thread nested (a viewer drops the others)."""
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        return f"not JSON: {e}"
    names = {}
    for e in doc.get("traceEvents", []):
        if e.get("ph") == "M":
            n = e.get("args", {}).get("name")
            if e["tid"] in names and names[e["tid"]] != n:
                return f"thread {e['tid']} is named {names[e['tid']]!r} and {n!r}"
            names[e["tid"]] = n
    for e in doc.get("traceEvents", []):
        if e.get("ph") == "X":
            if not all(isinstance(e.get(k), (int, float)) and e[k] >= 0 for k in ("ts", "dur")):
                return f"event {e}: ts and dur"
            if e["tid"] not in names:
                return f"event {e['name']} on thread {e['tid']}, which has no name"
    xs = [e for e in doc.get("traceEvents", []) if e.get("ph") == "X"]
    for tid in sorted({e["tid"] for e in xs}):
        ends = []
        for e in sorted((e for e in xs if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
            while ends and ends[-1] <= e["ts"] + 50:
                ends.pop()
            if ends and e["ts"] + e["dur"] > ends[-1] + 50:
                return f"thread {tid} ({names[tid]}): {e['name']} overlaps an event it is not inside"
            ends.append(e["ts"] + e["dur"])
    return None


def test_trace_profile_explain(a, b):
    """--trace, --profile, --explain and --no-fuse over the CPU and two
    servers: the same values, and a trace with one name a thread."""
    f = write("mixed.tir", "w = randn([256, 256], seed=1)\nc = to(w, \"cpu\") @ w\nd = to(c, \"remote:1\") * 2.0\n"
              "e = to(d, \"remote:0\") + 1.0\nprint sum(e), sum(to(e, \"cpu\"))\n")
    lst, lout, lerr = tir("run", write("mixed_local.tir", local_twin(open(f).read())), "--quiet")
    tp = os.path.join(TMP, "mixed.json")
    st, out, err = tir("run", f, "--remote", addr(a, b), "--trace", tp, "--threads", "2", "--quiet")
    check("trace: runs, the same values", st == 0 and body(out) == body(lout), out + err + lout)
    bad = trace_ok(tp)
    check("trace: valid, one name a thread (the CPU's pool, the requests)", bad is None, bad)
    # two servers' batches at once: each its own threads
    g = write("at_once.tir", "w = randn([300, 300], seed=1)\na = to(w, \"remote:0\") @ w\n"
              "b = to(w, \"remote:1\") @ w\nprint sum(a + to(b, \"remote:0\"))\n")
    tp = os.path.join(TMP, "at_once.json")
    bad = "no run"
    for _ in range(3):  # the batches overlap in time on most runs; any run must be right
        st, out, err = tir("run", g, "--remote", addr(a, b), "--trace", tp, "--quiet")
        bad = trace_ok(tp) if st == 0 else err
        if bad:
            break
    check("trace: two servers at once, each server's events on threads of its own", bad is None, bad)
    st, out, err = tir("run", f, "--remote", addr(a, b), "--explain", "--profile", "--no-fuse")
    check("--explain --profile --no-fuse: the same values, each step said",
          st == 0 and body(out) == body(lout) and "# on cpu (cpu), step 1 of 4" in err and
          f"# on remote:1 (127.0.0.1:{b.port}), step 2 of 4" in err, out + err)


def test_chains(a, b):
    """Hundreds of steps: a value bounced a -> b -> a ... and through the CPU."""
    lines = ['v0 = to(arange(8, dtype=f32), "remote:0")']
    lines += [f'v{i} = to(v{i - 1}, "remote:{i % 2}") + 1.0' for i in range(1, 301)]
    lines.append("print v300, v150")
    ia = a.logged(IMPORT_LINE)
    st, out, err = tir("run", write("bounce.tir", "\n".join(lines) + "\n"), "--remote", addr(a, b), "--quiet")
    check("300 moves between two servers",
          st == 0 and "v300: f32[8]\n[300, 301, 302, 303, 304, 305, 306, 307]\n" in out and
          "v150: f32[8]\n[150, 151," in out, out + err[-300:])
    check("... remote:0 imported 150 of them", settled(a, IMPORT_LINE, ia + 150),
          f"{a.logged(IMPORT_LINE) - ia} imports")
    devs = ["cpu", "remote:0", "remote:1"]
    lines = ['v0 = to(arange(8, dtype=f32), "cpu")']
    lines += [f'v{i} = to(v{i - 1}, "{devs[i % 3]}") + 1.0' for i in range(1, 301)]
    lines.append("print v300, v299, v1")
    st, out, err = tir("run", write("round.tir", "\n".join(lines) + "\n"), "--remote", addr(a, b), "--quiet")
    check("300 moves round cpu, remote:0, remote:1",
          st == 0 and "v300: f32[8]\n[300," in out and "v299: f32[8]\n[299," in out and "v1: f32[8]\n[1," in out,
          out + err[-300:])


def test_same_twice(a, b):
    """A value moved to the same device twice, printed twice; saved from
    remote:1 to .npy and .safetensors."""
    f = write("twice.tir", "x = arange(6, dtype=f32)\na = to(x, \"remote:1\") * 2.0\np = to(a, \"remote:0\")\n"
              "q = to(a, \"remote:0\")\nprint p + q, a, a, to(a, \"remote:1\")\n")
    st, out, err = tir("run", f, "--remote", addr(a, b), "--quiet")
    two = "[0, 2, 4, 6, 8, 10]\n"
    check("a value moved twice to one server, printed twice", st == 0 and out.count(two) == 3 and
          "[0, 4, 8, 12, 16, 20]\n" in out, out + err)
    n1, s1 = os.path.join(TMP, "a.npy"), os.path.join(TMP, "a.safetensors")
    st, out, err = tir("run", f, "--remote", addr(a, b), "--quiet", "--save", f"a={n1}", "--save", f"a={s1}",
                       "--save", f"p={s1}")
    ok = st == 0 and os.path.exists(n1) and np.array_equal(np.load(n1), np.arange(6, dtype=np.float32) * 2)
    check("--save of a value on remote:1 to .npy", ok, out + err)
    st2, out2, err2 = tir("inspect", s1)
    check("--save to .safetensors: both values",
          st == 0 and re.search(r"^a\s+F32\s+\[6\]", out2, re.M) and re.search(r"^p\s+F32\s+\[6\]", out2, re.M),
          out2 + err2 + err)


def test_stays_and_back(a, b):
    """A value on remote:1 read by a later step there, moved to the CPU and
    to remote:0: made once, kept there, moved server to server."""
    f = write("stays_back.tir", "x = arange(4, dtype=f32)\np = to(x, \"remote:1\") * 3.0\nq = to(p, \"cpu\")\n"
              "r = to(p, \"remote:0\") + 1.0\ns = p + to(r, \"remote:1\")\nprint q, s\n")
    ia = a.logged(IMPORT_LINE)
    st, out, err = tir("run", f, "--remote", addr(a, b), "--explain")
    check("stays and back: the values",
          st == 0 and "q: f32[4]\n[0, 3, 6, 9]\n" in out and "s: f32[4]\n[1, 7, 13, 19]\n" in out, out + err)
    last = err.split(f"# on remote:1 (127.0.0.1:{b.port}), step 3 of 3\n")[-1]
    check("stays and back: p is made once on remote:1 (step 3 reads it)",
          st == 0 and err.count("mul -> p") == 1 and "add -> s" in last, err)
    check("stays and back: remote:0 imports p from remote:1", settled(a, IMPORT_LINE, ia + 1),
          f"{a.logged(IMPORT_LINE) - ia} imports")


def test_dtypes(a, b):
    for dt in ("bf16", "f16", "i8", "u8", "i64", "f64"):
        f = write(f"dt_{dt}.tir", f"x = arange(6, dtype={dt})\na = to(x, \"remote:1\")\nb = to(a, \"remote:0\")\n"
                  f"c = to(b, \"cpu\")\nprint b, c, to(c, \"remote:1\")\n")
        st, out, err = tir("run", f, "--remote", addr(a, b), "--quiet")
        check(f"{dt}: moved server to server, to the CPU and back",
              st == 0 and out.count(f": {dt}[6]\n[0, 1, 2, 3, 4, 5]\n") == 3, out + err)


def test_one_server_twice(a):
    """--remote a,a: two sessions on one server, a move between them."""
    f = write("twice_srv.tir", "x = randn([64, 64], seed=1)\na = to(x, \"remote:1\") * 2.0\n"
              "print sum(to(a, \"remote:0\")), sum(a)\n")
    st, out, err = tir("run", f, "--remote", addr(a, a), "--quiet")
    lst, lout, lerr = tir("run", write("twice_srv_local.tir", local_twin(open(f).read())), "--quiet")
    check("one server listed twice: the same values", st == 0 and body(out) == body(lout), out + err + lout)


def test_import_refused(b):
    """A receiver whose --max-body is under the value: exit 3, both named."""
    small = Server("--max-body", "1K")
    try:
        f = write("refused.tir", "x = randn([64, 64], seed=1)\na = to(x, \"remote:1\") * 2.0\n"
                  "print sum(to(a, \"remote:0\"))\n")
        st, out, err = tir("run", f, "--remote", addr(small, b))
        check("import refused: exit 3 naming both servers",
              st == 3 and f"127.0.0.1:{small.port}" in err and f"127.0.0.1:{b.port}" in err and "max-body" in err,
              f"{st} {err}")
    finally:
        small.stop()


def main():
    a, b = Server(), Server()
    try:
        tirnet.run_groups([(t, (a, b)) for t in (test_repl_stale, test_repl_vars_stale, test_repl_remote_off,
                                                  test_stats, test_runtime_error, test_trace_profile_explain,
                                                  test_stays_and_back, test_chains, test_same_twice, test_dtypes)] +
                          [(test_one_server_twice, (a,)), (test_import_refused, (b,))], check_fn=check)
    finally:
        a.stop()
        b.stop()
    tirnet.check_no_sanitizer(check)
    return C.counts()


if __name__ == "__main__":
    sys.exit(main())
