#!/usr/bin/python3
"""tests/net/mpi_test.py TIR — server groups on MPI (docs/groups.md):
`mpirun --oversubscribe -n 4 tir serve --port BASE` starts one group (rank
r on BASE + r, its listening line naming its rank); /v1/info of each rank
says the group; a client given one rank's address opens remote:0..3 in
rank order; the data- and tensor-parallel examples print over the group
what they print over 4 lone servers (and agree with their goldens); a move
between two ranks goes over MPI (the receiver's log and metrics say so)
with the right bytes; a move between a rank and a lone server over HTTP;
three clients at once get the right answers; a rank killed with -9 while a
client runs is exit 3 naming it, and the other ranks keep serving.
Everything waits for what it can observe (listening lines, /metrics),
never for a sleep.  Prints "ok NAME" or "FAIL NAME: WHY" per check, and
last "N passed, M failed"."""

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tirnet  # noqa: E402
from tirnet import Server, eventually, metrics  # noqa: E402

TIR = os.path.abspath(sys.argv[1])
tirnet.TIR = TIR
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
passed = failed = 0
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")
ENV.pop("TIR_TOKEN", None)


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok " + name)
    else:
        failed += 1
        print(f"FAIL {name}: {detail}"[:2000])
    sys.stdout.flush()


def tir(*args, timeout=120):
    p = subprocess.run([TIR, *args], cwd=ROOT, capture_output=True, timeout=timeout, env=ENV)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


class Rank:
    """What tirnet's request() needs of a server: its port."""

    def __init__(self, port):
        self.port = port
        self.requests = 0

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)


def free_range(n):
    """A base port with n free ones after it (bound and let go)."""
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1]
        s.close()
        if base + n > 65535:
            continue
        ok = True
        for p in range(base, base + n):
            t = socket.socket()
            try:
                t.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            t.close()
        if ok:
            return base
    raise RuntimeError("no free port range")


class Group:
    """`mpirun --oversubscribe -n N tir serve --port BASE ARGS`, retried on
    another range when a port is taken."""

    def __init__(self, n, *args, recovery=False):
        for _ in range(5):
            self.base = free_range(n)
            cmd = ["mpirun", "--oversubscribe", "-n", str(n)] + (["--enable-recovery"] if recovery else []) + \
                [TIR, "serve", "--port", str(self.base), *args]
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, env=ENV, start_new_session=True)
            self.lines = []
            self.listening = {}
            t = threading.Thread(target=self.drain, daemon=True)
            t.start()
            if eventually(lambda: len(self.listening) == n or self.proc.poll() is not None, 60) and \
                    len(self.listening) == n:
                self.ranks = [Rank(self.base + r) for r in range(n)]
                return
            self.stop()
            if not any("Address already in use" in ln or "already" in ln for ln in self.lines):
                break
        raise RuntimeError("the group did not start: " + " | ".join(self.lines[-5:]))

    def drain(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            m = re.match(r"tir serve: listening on http://[^ ]+:(\d+) \(protocol 4, rank (\d+) of a group of (\d+)\)$",
                         line)
            if m:
                self.listening[int(m.group(2))] = int(m.group(1))

    def addr(self, r):
        return f"127.0.0.1:{self.base + r}"

    def pids(self):
        """The ranks' pids, by port (from /proc: the children of mpirun)."""
        out = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if len(cmd) > 3 and cmd[0].decode(errors="replace") == TIR and cmd[1] == b"serve" and \
                    cmd[3] == str(self.base).encode():
                for e in env:
                    if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                        out[int(e.split(b"=")[1])] = int(pid)
        return out

    def stop(self):
        """mpirun's exit status after SIGTERM (None: it did not stop in 20 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None


def info(rank):
    return tirnet.request(rank, "GET", "/v1/info").json()


tmp = tempfile.mkdtemp(prefix="tir-mpi-")


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


g = Group(4)
lone = [Server() for _ in range(4)]
try:
    check("group: 4 ranks listening on BASE + rank, each line naming its rank",
          g.listening == {r: g.base + r for r in range(4)}, str(g.listening))
    infos = [info(rk) for rk in g.ranks]
    members = [g.addr(r) for r in range(4)]
    ids = {i.get("group", {}).get("id") for i in infos}
    check("/v1/info: each rank says size 4, its rank and the members in rank order",
          all(i.get("group", {}).get("size") == 4 and i["group"].get("rank") == r and i["group"].get("members") == members
              for r, i in enumerate(infos)) and len(ids) == 1 and None not in ids, str(infos[0].get("group")))
    check("/v1/info: a lone server has no group", "group" not in tirnet.request(lone[0], "GET", "/v1/info").json())

    # discovery from rank 2's address: remote:k is rank k
    prog = write("where.tir", 'a = to(ones([2]), "remote:3")\nb = to(a * 2.0, "remote:1")\n'
                              'c = to(b + 1.0, "remote:0")\nprint c\n')
    st, out, err = tir("run", prog, "--remote", g.addr(2), "--explain")
    check("discovery: --remote RANK2 gives remote:0..3 at BASE..BASE+3",
          st == 0 and f"# on remote:3 ({g.addr(3)})" in err and f"# on remote:1 ({g.addr(1)})" in err
          and f"# on remote:0 ({g.addr(0)})" in err, f"exit {st}: {err[-600:]}")

    lone_list = ",".join(f"127.0.0.1:{s.port}" for s in lone)
    for ex in ("data-parallel", "tensor-parallel"):
        st1, out1, err1 = tir("run", f"docs/examples/{ex}.tir", "--remote", g.addr(0), "--quiet")
        st2, out2, err2 = tir("run", f"docs/examples/{ex}.tir", "--remote", lone_list, "--quiet")
        check(f"{ex}: over the group as over 4 lone servers", st1 == 0 and out1 == out2 and out1,
              f"exit {st1}/{st2}: {err1[-300:]} {err2[-300:]}")
        gold = write(ex + ".got", out1)
        nd = subprocess.run([sys.executable, "tests/numdiff.py", f"docs/examples/{ex}.out", gold], cwd=ROOT,
                            capture_output=True)
        check(f"{ex}: agrees with its golden (numdiff)", nd.returncode == 0, nd.stdout.decode()[-300:])

    # a move between two ranks goes over MPI, and its bytes are right
    big = write("move.tir", 'x = to(randn([4096, 4096], seed=3), "remote:2")\n'
                            'y = to(x * 3.0, "remote:1")\nprint sum(y, axis=1), y\n')
    local = write("move-local.tir", 'x = randn([4096, 4096], seed=3)\ny = x * 3.0\nprint sum(y, axis=1), y\n')
    m0 = metrics(g.ranks[1])
    s0 = metrics(g.ranks[2])
    st, out, err = tir("run", big, "--remote", g.addr(0), "--precision", "9")
    stl, outl, _ = tir("run", local, "--precision", "9")
    m1 = metrics(g.ranks[1])
    s1 = metrics(g.ranks[2])
    got = m1.get('tir_group_import_bytes_total{via="mpi"}', 0) - m0.get('tir_group_import_bytes_total{via="mpi"}', 0)
    check("move between two ranks: over MPI (rank 1's metrics and log, rank 2's served)",
          st == 0 and m1.get('tir_group_imports_total{via="mpi"}', 0) == m0.get('tir_group_imports_total{via="mpi"}', 0) + 1
          and got > 64 << 20 and
          s1.get('tir_group_exports_served_total{via="mpi"}', 0) == s0.get('tir_group_exports_served_total{via="mpi"}', 0) + 1
          and any(re.search(r"import over MPI from rank 2 \(http://" + re.escape(g.addr(2)), ln) for ln in g.lines),
          f"exit {st}, {got} bytes: {err[-300:]}")
    check("move between two ranks: the same bytes as a local run", st == 0 and stl == 0 and out == outl and out,
          f"{len(out)} vs {len(outl)} bytes of output")

    # between a rank and a lone server: HTTP
    mixed = write("mixed.tir", 'a = to(ones([4]) * 5.0, "remote:4")\nb = to(a + 1.0, "remote:0")\n'
                               'c = to(b * 2.0, "remote:4")\nprint c\n')
    r0 = metrics(g.ranks[0])
    l0 = metrics(lone[0])
    st, out, err = tir("run", mixed, "--remote", f"{g.addr(3)},127.0.0.1:{lone[0].port}")
    r1 = metrics(g.ranks[0])
    l1 = metrics(lone[0])
    check("rank and lone server: --remote GROUP,LONE gives the lone one remote:4; moves over HTTP",
          st == 0 and "12" in out and
          r1.get('tir_imports_total{result="ok"}', 0) == r0.get('tir_imports_total{result="ok"}', 0) + 1 and
          r1.get('tir_group_imports_total{via="mpi"}', 0) == r0.get('tir_group_imports_total{via="mpi"}', 0) and
          l1.get('tir_imports_total{result="ok"}', 0) == l0.get('tir_imports_total{result="ok"}', 0) + 1,
          f"exit {st}: {out} {err[-300:]}")

    # three clients at once over the same group
    want = tir("run", "docs/examples/tensor-parallel.tir", "--remote", lone_list, "--quiet")[1]
    res = [None] * 3

    def client(i):
        res[i] = tir("run", "docs/examples/tensor-parallel.tir" if i != 1 else "docs/examples/data-parallel.tir",
                     "--remote", g.addr(i), "--quiet")
    want_dp = tir("run", "docs/examples/data-parallel.tir", "--remote", lone_list, "--quiet")[1]
    ts = [threading.Thread(target=client, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    check("3 clients at once over the group: all right, no deadlock",
          all(r is not None and r[0] == 0 for r in res) and res[0][1] == want and res[2][1] == want
          and res[1][1] == want_dp, str([(r[0], r[2][-200:]) if r else None for r in res]))
finally:
    st = g.stop()
    check("SIGTERM to mpirun stops every rank (no hang)", st is not None and not g.pids(), f"status {st}")
    for s in lone:
        s.stop()

# a rank killed while a client runs: exit 3 naming it; the others keep serving
g = Group(4, recovery=True)
try:
    # minutes of work on any machine (5000 products of [512, 2048] @ [2048,
    # 2048] a rank, 4 GFLOP each), each kernel short: the rank is killed
    # while its batch runs, whatever the machine's speed
    heavy = write("heavy.tir", 'x = randn([2048, 2048], seed=1)\nw = randn([2048, 2048], seed=2) * 0.0221\n'
                               'h = shard(x, axis=0)\n' + "".join("h = tanh(h @ w)\n" for _ in range(5000)) +
                  'print sum(h)\n')
    p = subprocess.Popen([TIR, "run", heavy, "--remote", g.addr(0), "--quiet"], cwd=ROOT, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    running = eventually(lambda: metrics(g.ranks[3]).get("tir_batches_running", 0) >= 1 or p.poll() is not None, 60)
    pid = g.pids().get(3)
    if pid and p.poll() is None:
        os.kill(pid, signal.SIGKILL)
    try:
        out, err = p.communicate(timeout=60)
        st = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        st = None
    err = err.decode()
    check("a rank killed mid-run: exit 3 naming its address", running and pid and st == 3 and g.addr(3) in err,
          f"running {running}, pid {pid}, exit {st}: {err[-400:]}")
    check("a rank killed: the others keep serving (mpirun --enable-recovery)",
          all(tirnet.request(g.ranks[r], "GET", "/healthz").status == 200 for r in range(3)))
finally:
    g.stop()
    pids = g.pids()
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
