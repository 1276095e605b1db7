#!/usr/bin/python3
"""bench/fair.py TIR [--runs N] — the fair section of the benchmarks: what a
small batch waits on a `tir serve` that is busy with somebody else's long
one, and how soon a batch stops once its client leaves or its time is up.
It starts its own server on a free loopback port (tests/net/tirnet.py).

Prints "KEY VALUE" lines (milliseconds) for bench/run.sh's table:
  idle_ms        a small batch (`print sum(ones([4]))`), idle server: median
  beside_ms      the same beside another session's endless matmul chain
                 (2048^3 products): median, beside_p90_ms, beside_max_ms
  gone_ms        a client that leaves in the middle of a 6144^3 matmul: from
                 its close to the server's log line that it stopped (median)
  overrun_ms     --max-batch-seconds 1 on the same chain: the answer's time
                 past the 1 s (median)
Not a test: nothing here passes or fails."""

import os
import socket
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import tirnet  # noqa: E402
from tirnet import Server, eventually, metrics, new_session, run, sha  # noqa: E402
import json  # noqa: E402

tirnet.TIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/tir"
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 200

SMALL = "x: f32[4] = ones([4])\ns: f32[] = sum(x)\nprint s\n"


def chain(n, size):
    lines = [f"x0: f32[{size}, {size}] = randn([{size}, {size}], seed=1)",
             f"w: f32[{size}, {size}] = mul(x0, {1 / size ** 0.5:.6f})"]
    lines += [f"x{i + 1}: f32[{size}, {size}] = matmul(x{i}, w)" for i in range(n)]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


def post_raw(srv, sid, text):
    body = json.dumps({"graph": sha(text), "text": text, "inputs": {}}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(b"POST /v1/sessions/%s/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (sid.encode(), len(body)) + body)
    return s


def small_times(srv, sid, n):
    c = srv.conn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = run(srv, sid, SMALL, conn=c)
        out.append((time.perf_counter() - t0) * 1e3)
        if r.status != 200:
            raise RuntimeError(f"small batch: {r.status}")
    c.close()
    return sorted(out)


def main():
    srv = Server()
    try:
        a, b = new_session(srv), new_session(srv)
        idle = small_times(srv, b, RUNS)
        print(f"idle_ms {statistics.median(idle):.3f}")
        s = post_raw(srv, a, chain(20000, 2048))
        srv.wait_metric("tir_batches_running", 1)
        beside = small_times(srv, b, RUNS)
        s.close()
        print(f"beside_ms {statistics.median(beside):.3f}")
        print(f"beside_p90_ms {beside[int(len(beside) * 0.9)]:.3f}")
        print(f"beside_max_ms {beside[-1]:.3f}")
        gone = []
        for _ in range(5):
            s = post_raw(srv, a, chain(1000, 6144))
            eventually(lambda: metrics(srv).get("tir_tensor_bytes", 0) >= 3 * 6144 * 6144 * 4)
            before = srv.logged("its batch was stopped after")
            s.close()
            t0 = time.perf_counter()
            srv.wait_log("its batch was stopped after", before + 1)
            gone.append((time.perf_counter() - t0) * 1e3)
            srv.wait_metric("tir_batches_running", 0)
        print(f"gone_ms {statistics.median(gone):.1f}")
    finally:
        srv.stop()
    srv = Server("--max-batch-seconds", "1")
    try:
        sid = new_session(srv)
        over = []
        text = chain(1000, 6144)
        for _ in range(3):
            t0 = time.perf_counter()
            r = run(srv, sid, text)
            over.append((time.perf_counter() - t0) * 1e3 - 1000)
            if r.status != 413:
                raise RuntimeError(f"time limit: {r.status}")
        print(f"overrun_ms {statistics.median(over):.1f}")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
