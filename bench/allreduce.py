#!/usr/bin/python3
"""bench/allreduce.py TIR MPI_PEER [--runs N] [--ranks R] — all_reduce over a
server group against plain MPI (docs/remote.md, "Several devices"; issue 13): R
ranks (default 4) of `mpirun --oversubscribe tir serve` on loopback, and a
program whose sharded value is R pieces of 64 MiB f32 (16M elements, each
made on its rank by randn) reduced by `all_reduce(op=sum)`.  Its peer,
MPI_PEER (bench/mpi/allreduce.c), is a plain C MPI_Allreduce of a 64 MiB
f32 buffer on R ranks of its own mpirun, the buffers made once.

Figures, medians of N runs (default 5) after 2 warm-up runs:
  tir_ms       the collective as the client sees it: from the first rank's
               request to the last rank's answer (--trace's spans of the
               POST .../allreduce requests): ordering by rank 0, the
               ranks' agreement, the data, keeping the result, HTTP
  tir_data_ms  the MPI_Iallreduce of the data alone (the servers' own
               figure, /metrics)
  plain_ms     the peer's MPI_Allreduce, from a barrier to the last rank's
               end; run before and after tir's runs (the median of both)
The group's ranks stay up, idle, while the peer runs.  The sum is checked
against a local run of the same sum.  Prints "key value" lines for
bench/run.sh.  Not a test."""

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "net"))
import tirnet  # noqa: E402

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")
ENV.pop("TIR_TOKEN", None)


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def plain(peer, ranks, runs):
    p = subprocess.run(["mpirun", "--oversubscribe", "-n", str(ranks), peer, "--runs", str(runs)], env=ENV,
                       capture_output=True, timeout=600)
    m = re.search(r"^plain_all (.*)$", p.stdout.decode(), re.M)
    if p.returncode or not m:
        raise RuntimeError("the MPI peer failed: " + p.stderr.decode()[-400:])
    return [float(v) for v in m.group(1).split(",")]


def main():
    args = sys.argv[1:]
    tir, peer = os.path.abspath(args[0]), os.path.abspath(args[1])
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    ranks = int(args[args.index("--ranks") + 1]) if "--ranks" in args else 4
    tmp = tempfile.mkdtemp(prefix="tir-allreduce-")
    prog = os.path.join(tmp, "ar.tir")
    with open(prog, "w") as f:
        f.write(f"x = randn([{ranks}, 16777216], seed=1)\n"
                "a = all_reduce(shard(x, axis=0), op=sum)\nprint sum(a)\n")
    local = os.path.join(tmp, "local.tir")
    with open(local, "w") as f:
        f.write(f"x = randn([{ranks}, 16777216], seed=1)\nprint sum(sum(x, axis=0))\n")

    base = tirnet.free_range(ranks)
    g = subprocess.Popen(["mpirun", "--oversubscribe", "-n", str(ranks), tir, "serve", "--port", str(base)],
                         env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    up = []

    def drain():
        for line in g.stderr:
            if b"listening on" in line:
                up.append(line)
    threading.Thread(target=drain, daemon=True).start()
    try:
        t0 = time.monotonic()
        while len(up) < ranks and g.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.05)  # (waits for every rank's listening line, at most 60 s)
        if len(up) < ranks:
            raise RuntimeError("the group did not start")
        before = plain(peer, ranks, runs)
        trace = os.path.join(tmp, "t.json")
        spans, data, out = [], [], b""
        for i in range(2 + runs):
            d0 = metric(base, "tir_group_allreduce_data_seconds_total")
            p = subprocess.run([tir, "run", prog, "--remote", f"127.0.0.1:{base}", "--quiet", "--trace", trace],
                               env=ENV, capture_output=True, timeout=600)
            if p.returncode:
                raise RuntimeError("tir run failed: " + p.stderr.decode()[-400:])
            out = p.stdout
            d1 = metric(base, "tir_group_allreduce_data_seconds_total")
            with open(trace) as f:
                ev = json.load(f)
            ev = ev["traceEvents"] if isinstance(ev, dict) else ev
            ar = [e for e in ev if e.get("ph") == "X" and e.get("name", "").endswith("/allreduce")]
            if len(ar) != ranks:
                raise RuntimeError(f"{len(ar)} allreduce requests in the trace, not {ranks}")
            if i >= 2:
                spans.append((max(e["ts"] + e["dur"] for e in ar) - min(e["ts"] for e in ar)) / 1e3)
                data.append((d1 - d0) * 1e3)
        after = plain(peer, ranks, runs)
        want = subprocess.run([tir, "run", local, "--quiet"], capture_output=True, timeout=600).stdout
        got_v = float(out.split(b"\n")[1])
        want_v = float(want.split(b"\n")[1])
        tir_ms = statistics.median(spans)
        plain_ms = statistics.median(before + after)
        print(f"ranks {ranks}")
        print(f"tir_ms {tir_ms:.1f}")
        print(f"tir_data_ms {statistics.median(data):.1f}")
        print(f"plain_ms {plain_ms:.1f}")
        print(f"ratio {tir_ms / plain_ms:.2f}")
        print(f"tir_all {','.join(f'{v:.1f}' for v in spans)}")
        print(f"plain_all {','.join(f'{v:.1f}' for v in before + after)}")
        print(f"same {'yes' if abs(got_v - want_v) <= 1e-4 * max(abs(want_v), 1.0) else 'NO'}")
    finally:
        if g.poll() is None:
            g.send_signal(signal.SIGTERM)
        try:
            g.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(g.pid, signal.SIGKILL)
            g.wait()


if __name__ == "__main__":
    main()
