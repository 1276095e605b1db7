#!/usr/bin/python3
"""tests/net/reserve_test.py TIR — the pages `tir serve` keeps faulted in
for uploads (--upload-reserve, lib/exec/tensor.c) and the check of an
upload's chunks on several threads (lib/net/upload.c), with servers this
script starts on free loopback ports and stops:

  - the reserve's size: 256 MiB by default, a quarter of --max-memory
    when that is less, what --upload-reserve says, none with 0; it is
    ready (faulted in) once the server says it listens;
  - an upload of 64 MiB with --threads 1, 2 and 4 is stored (201: the
    server's hashes of its 256 chunks are the client's), its bytes come
    back as sent, and it was received into the reserve; a chunk changed
    in the middle or at the end is refused naming that chunk, and nothing
    is stored;
  - the reserve is held against --max-memory: tensors plus the pages
    ready never pass it; a value kept beside a 200 MiB blob under 300M
    makes the reserve give back what it needs, and once the value is gone
    the reserve is filled again.

Prints "ok NAME" or "FAIL NAME: WHY" per check, then "N passed, M
failed".  Waits are for states the server shows (its /metrics), each
bounded; no sleep stands for one."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tirnet  # noqa: E402
from tirnet import (CHUNK, Server, blob, check, describe, error_is, eventually, frame, metrics,  # noqa: E402
                    new_session, request, results, run)

TIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/tir"
tirnet.TIR = TIR
MIB = 1 << 20
PIECE = 2 * MIB


def reserve(srv):
    m = metrics(srv)
    return (int(m.get("tir_upload_reserve_bytes", -1)), int(m.get("tir_upload_reserve_ready_bytes", -1)),
            int(m.get("tir_upload_reserve_taken_bytes_total", -1)), int(m.get("tir_tensor_bytes", -1)))


def test_sizes():
    for args, want in (([], 256 * MIB), (["--max-memory", "300M"], 75 * MIB // PIECE * PIECE),
                       (["--upload-reserve", "64M"], 64 * MIB), (["--upload-reserve", "0"], 0)):
        srv = Server(*args)
        try:
            size, ready, taken, _ = reserve(srv)
            check(f"reserve {' '.join(args) or '(default)'}: {want >> 20} MiB, ready at start",
                  size == want and ready == want and taken == 0, f"size {size} ready {ready} taken {taken}")
        finally:
            srv.stop()


def put(srv, body_name, body):
    return request(srv, "PUT", "/v1/blobs/" + body_name, body)


def test_threads():
    n = 16 << 20  # 64 MiB of f32: 256 chunks
    x = (np.arange(n, dtype=np.uint32) * 2654435761 % 1000003).astype(np.float32)
    f = frame(x)
    h, body = blob(f)
    head = len(body) - len(f)  # the chunk list before the frame
    for threads in ("1", "2", "4"):
        srv = Server("--threads", threads)
        try:
            for k in (100, len(f) // CHUNK):  # a chunk in the middle, the last one
                bad = bytearray(body)
                bad[head + k * CHUNK + 5] ^= 1
                r = put(srv, h, bytes(bad))
                check(f"--threads {threads}: chunk {k} changed: 400 naming it", error_is(r, 400, "bad_hash") and
                      f"chunk {k} of {len(f) // CHUNK + 1}" in r.err().get("message", ""), describe(r))
            size, ready, taken, held = reserve(srv)
            check(f"--threads {threads}: refused uploads hold nothing", held == 0, f"tensors {held}")
            r = put(srv, h, body)
            check(f"--threads {threads}: 64 MiB stored (201)", r.status == 201, describe(r))
            size, ready, taken, held = reserve(srv)
            check(f"--threads {threads}: received into the reserve", taken >= n * 4 and held >= n * 4,
                  f"taken {taken} tensors {held}")
            sid = new_session(srv)
            r = run(srv, sid, "input x: f32[%d]\nprint x\n" % n, {"x": {"blob": h}})
            ok = r.status == 200 and np.array_equal(results(r.body)[1][0], x)
            check(f"--threads {threads}: its bytes come back as sent", ok, describe(r))
        finally:
            srv.stop()


def test_budget():
    srv = Server("--max-memory", "300M")
    big = 75 * MIB // PIECE * PIECE
    try:
        x = np.full(50 << 20, 3.0, np.float32)  # 200 MiB
        h, body = blob(frame(x))
        del x
        r = put(srv, h, body)
        del body
        check("budget: a 200 MiB blob under 300M with a 74 MiB reserve: stored", r.status == 201, describe(r))
        size, ready, taken, held = reserve(srv)
        check("budget: tensors and the reserve within --max-memory", held + ready <= 300 * MIB,
              f"tensors {held} ready {ready}")
        check("budget: the reserve is filled again up to what fits",
              eventually(lambda: reserve(srv)[1] == big, 60), str(reserve(srv)))
        sid = new_session(srv)
        n = 90 * MIB // 4
        r = run(srv, sid, "t0: f32[%d] = ones([%d]) * 2.0\nprint sum(t0)\n" % (n, n), keep={"t0": "v"})
        ok = r.status == 200 and float(results(r.body)[1][0]) == 2.0 * n
        check("budget: a kept value of 90 MiB beside them: the run succeeds", ok, describe(r))
        size, ready, taken, held = reserve(srv)
        check("budget: the reserve gave back what the value needed", held >= 290 * MIB and
              held + ready <= 300 * MIB, f"tensors {held} ready {ready}")
        r = request(srv, "DELETE", f"/v1/sessions/{sid}")
        check("budget: session closed", r.status in (200, 204), describe(r))
        check("budget: the value gone, the reserve is filled again",
              eventually(lambda: reserve(srv)[1] == big, 60), str(reserve(srv)))
        size, ready, taken, held = reserve(srv)
        check("budget: still within --max-memory", held + ready <= 300 * MIB, f"tensors {held} ready {ready}")
    finally:
        srv.stop()


def main():
    if not os.access(TIR, os.X_OK):
        check("tir binary", False, TIR + " is missing")
    else:
        only = [a for a in sys.argv[2:] if not a.startswith("-")]
        tirnet.run_groups((test_sizes, test_threads, test_budget), only)
    return tirnet.finish()


if __name__ == "__main__":
    sys.exit(main())
