#!/usr/bin/python3
"""bench/first_upload.py TIR [--mib M] [--puts N] [-- SERVE_ARGS...] — the
first uploads into a fresh `tir serve` against later ones: N PUTs (default
5) of distinct f32 blobs of M MiB (default 256) into a server started with
--blob-cache 1.2 x M (each new blob evicts the one before), the server
idle 1.2 s before each (as between runs: its idle trim and the upload
reserve's keeper have their turn).  The bodies are made and hashed before
the server starts.  Prints, for bench/io.sh:

    first_gbs     the first PUT into the fresh server
    later_gbs     the median of the others
    first_cpu_ms  the server's CPU time (user + system) over the first PUT
    later_cpu_ms  the median over the others

SERVE_ARGS go to `tir serve` (e.g. `--upload-reserve 0` for none).  Not a
test."""

import http.client
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "net"))
import numpy as np  # noqa: E402
from tirnet import blob, frame  # noqa: E402


def main():
    args = sys.argv[1:]
    serve = args[args.index("--") + 1:] if "--" in args else []
    args = args[:args.index("--")] if "--" in args else args
    tir, mib, puts = args[0], 256, 5
    for i, a in enumerate(args):
        if a == "--mib":
            mib = int(args[i + 1])
        elif a == "--puts":
            puts = int(args[i + 1])
    bodies = [blob(frame(np.full(mib << 18, float(k + 1), np.float32))) for k in range(puts)]
    p = subprocess.Popen([tir, "serve", "--port", "0", "--blob-cache", f"{mib * 6 // 5}M", *serve],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port = None
    for line in p.stderr:
        m = re.search(rb"listening on http://127\.0\.0\.1:(\d+) ", line)
        if m:
            port = int(m.group(1))
            break
    tick = os.sysconf("SC_CLK_TCK")

    def cpu():
        f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tick

    gbs, ms = [], []
    try:
        for h, body in bodies:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            time.sleep(1.2)
            c0, t0 = cpu(), time.perf_counter()
            c.request("PUT", "/v1/blobs/" + h, body=body)
            r = c.getresponse()
            r.read()
            t = time.perf_counter() - t0
            if r.status != 201:
                sys.exit(f"first_upload.py: PUT answered {r.status}")
            gbs.append(len(body) / t / 1e9)
            ms.append((cpu() - c0) * 1e3)
            c.close()
    finally:
        p.terminate()
        p.wait()
    print(f"first_gbs {gbs[0]:.2f}\nlater_gbs {statistics.median(gbs[1:]):.2f}")
    print(f"first_cpu_ms {ms[0]:.0f}\nlater_cpu_ms {statistics.median(ms[1:]):.0f}")


if __name__ == "__main__":
    main()
