#!/usr/bin/python3
"""bench/xfer.py TIR [--runs N] [--mib M] — server to server on loopback
(docs/protocol.md, "Server to server"): two `tir serve`s, A and B, and an
f32 value of M MiB (default 64) that A's session keeps; each run moves it
to B's session: an export on A (the capability; the value hashed into its
chunk list, once per value kept) and an import on B (B fetches the value
from A and checks every chunk as it comes).  Medians of N runs (default
5), after 3 warm-up transfers (the first ones go into pages B's process
never had, which the kernel zeroes first: in a VM three or four times the
transfer):

    import            B's fetch and check, the transfer itself
    fresh             a value computed just before (kept anew by a batch
                      on A, so not hashed yet): export (its hash) + import
    again             a value exported before: export (its chunk list
                      kept) + import

Prints "key value" lines for bench/run.sh.  Not a test."""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "net"))
import numpy as np  # noqa: E402
import tirnet  # noqa: E402
from tirnet import Server, new_session, put_blob, request, run  # noqa: E402


def main():
    args = sys.argv[1:]
    tirnet.TIR = args[0] if args else "build/tir"
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    mib = int(args[args.index("--mib") + 1]) if "--mib" in args else 64
    n = mib << 18
    A, B = Server(), Server()
    try:
        sa, sb = new_session(A), new_session(B)
        ca, cb = A.conn(timeout=120), B.conn(timeout=120)
        x = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
        h, r = put_blob(A, x)
        text = f"input t0: f32[{n}]\nt1: f32[{n}] = neg(t0)\nprint t1\n"

        def keep():
            # kept anew: a new value, not hashed yet (its result comes back
            # too, as the batch prints it; not timed)
            r = run(A, sa, text, {"t0": {"blob": h}}, conn=ca, keep={"t1": "v"})
            assert r.status == 200, r.body[:300]

        def move(i):
            t0 = time.monotonic()
            r = request(A, "POST", f"/v1/sessions/{sa}/export", {"key": "v"}, conn=ca)
            t1 = time.monotonic()
            j = r.json()
            assert r.status == 200, r.body[:300]
            r = request(B, "POST", f"/v1/sessions/{sb}/import",
                        {"key": f"k{i % 2}", "from": f"http://127.0.0.1:{A.port}", "cap": j["cap"],
                         "blob": j["blob"]}, conn=cb)
            t2 = time.monotonic()
            assert r.status == 200, r.body[:300]
            return (t1 - t0) * 1e3, (t2 - t1) * 1e3, j["bytes"]

        keep()
        first = []
        for i in range(3):  # warm-up: B's pages
            first.append(move(i))
        fresh, again = [], []
        for i in range(runs):  # alternating, so that both see the same load
            keep()
            fresh.append(move(i))
            again.append(move(i + 1))
        size = fresh[0][2]
        med = statistics.median
        imp = med([f[1] for f in fresh + again])
        e2e_fresh = med([f[0] + f[1] for f in fresh])
        e2e_again = med([a[0] + a[1] for a in again])
        print(f"mib {mib}")
        print(f"runs {runs}")
        print(f"bytes {size}")
        print(f"cold_import_ms {first[0][1]:.1f}")
        print(f"import_ms {imp:.1f}")
        print(f"import_gbs {size / imp / 1e6:.2f}")
        print(f"export_hash_ms {med([f[0] for f in fresh]):.1f}")
        print(f"export_kept_ms {med([a[0] for a in again]):.2f}")
        print(f"fresh_ms {e2e_fresh:.1f}")
        print(f"fresh_gbs {size / e2e_fresh / 1e6:.2f}")
        print(f"again_ms {e2e_again:.1f}")
        print(f"again_gbs {size / e2e_again / 1e6:.2f}")
        print("imports_ms " + " ".join(f"{f[1]:.1f}" for f in fresh + again))
    finally:
        A.stop()
        B.stop()


if __name__ == "__main__":
    main()
