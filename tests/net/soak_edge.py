"""tests/net/soak_edge.py — the red-team cases of `make soak` at the edge of
`tir serve` (tests/net/soak.py runs them beside its clients, each a thread
of its own, for the whole soak):

  heads    300 connections from 10 loopback addresses (127.0.0.2-11), half
           of them silent (a TLS handshake never sent looks the same to the
           server: nothing comes), half a request head begun and never
           finished, reopened as soon as the server closes them;
  health   /healthz asked every 0.2 s from 127.0.0.1, with a token and
           without: each must be 200 (the heads never take the slots), and
           its time is kept (percentiles at the end);
  metrics  tenant eve asks /metrics every 2 s: without a token it is 401,
           with hers it shows her own figures only (every sample labelled
           tenant="eve"), whatever the others do;
  puts     eve PUTs blobs of PUT_MIB MiB every 5 s: one that tenant probe
           holds and one nobody does, one right after the other (the order
           swapped each time); the medians of the two times are reported,
           and once there are PUT_MIN such pairs the median of the pairs'
           ratios must be within PUT_RATIO either way.  A pair's two PUTs
           see the same load, so a burst of the soak's own work (which
           made the ratio of the two medians swing from run to run) moves
           both; a server whose answer told whether a blob is held would
           show in every pair.

Each case counts what went wrong; checks() gives soak.py its checks and
report() its "# " lines.  Standard library and NumPy only."""

import socket
import statistics
import threading
import time

import numpy as np

PUT_MIB = 4
PUT_RATIO = 3.0          # loose: the soak's own load is on the same two CPUs
PUT_MIN = 5              # PUTs of each kind before the medians are judged
HEADS = 300
SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "


def ask(port, req, timeout=10, source=None):
    """(status, body) of one request on a new connection; (None, b"") if none."""
    try:
        s = socket.socket()
        s.settimeout(timeout)
        if source:
            s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(req)
        out = b""
        while True:
            d = s.recv(1 << 16)
            if not d:
                break
            out += d
            head, sep, body = out.partition(b"\r\n\r\n")
            for ln in head.split(b"\r\n"):
                if ln.lower().startswith(b"content-length:") and sep and len(body) >= int(ln.split(b":")[1]):
                    s.close()
                    return int(out[9:12]), body
        s.close()
        return (int(out[9:12]) if out.startswith(b"HTTP/1.1 ") else None), out.partition(b"\r\n\r\n")[2]
    except (OSError, ValueError):
        return None, b""


def get(path, token=None):
    auth = b"Authorization: Bearer %s\r\n" % token.encode() if token else b""
    return b"GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % (path.encode(), auth)


def frame_of(a):
    """A blob's PUT body and name (docs/protocol.md: the chunk list, then the frame)."""
    import tirnet
    return tirnet.blob(tirnet.frame(a))


class Edge:
    """The four cases, started with start(port_of, token_of, stop, paused)
    where port_of() is the server's port now (None while it restarts) and
    paused() says that the soak has paused its clients (for a quiet point:
    the heads are closed and nothing is asked until it goes on)."""

    def __init__(self):
        self.fails = []
        self.health_ms = []
        self.health_bad = 0
        self.health_none = 0
        self.opened = 0
        self.metrics_n = 0
        self.put_ms = {"held": [], "new": []}
        self.put_pairs = []  # (held ms, new ms), each pair back to back
        self.threads = []

    def fail(self, what):
        if len(self.fails) < 50:
            self.fails.append(what)

    def start(self, port_of, token_of, stop, paused):
        self.port_of, self.token_of, self.stop = (lambda: None if paused() else port_of()), token_of, stop
        for fn in (self.heads, self.health, self.metrics, self.puts):
            th = threading.Thread(target=fn, daemon=True, name="edge-" + fn.__name__)
            th.start()
            self.threads.append(th)

    def join(self, seconds):
        for th in self.threads:
            th.join(seconds)

    def heads(self):
        live = [None] * HEADS
        while not self.stop.is_set():
            port = self.port_of()
            for i in range(HEADS):
                k = live[i]
                if k is not None and not port:  # paused, or a restart: let go
                    k.close()
                    live[i] = k = None
                if k is not None:
                    try:
                        gone = k.recv(1) == b""
                    except BlockingIOError:
                        gone = False
                    except OSError:
                        gone = True
                    if not gone:
                        continue
                    k.close()
                    live[i] = None
                if not port or self.stop.is_set():
                    continue
                try:
                    k = socket.socket()
                    k.bind((f"127.0.0.{2 + i % 10}", 0))
                    k.settimeout(2)
                    k.connect(("127.0.0.1", port))
                    if i % 2:
                        k.sendall(SLOW_HEAD)
                    k.setblocking(False)
                    live[i] = k
                    self.opened += 1
                except OSError:
                    k.close()
            self.stop.wait(0.5)
        for k in live:
            if k is not None:
                k.close()

    def health(self):
        while not self.stop.wait(0.2):
            port = self.port_of()
            if not port:
                continue
            for tok in (None, self.token_of("eve")):
                t0 = time.monotonic()
                st, _ = ask(port, get("/healthz", tok))
                if st is None:  # no server (a restart under way): the heads never cause this
                    self.health_none += 1
                    continue
                self.health_ms.append((time.monotonic() - t0) * 1e3)
                if st != 200:
                    self.health_bad += 1
                    self.fail(f"/healthz {'with' if tok else 'without'} a token: {st}")

    def metrics(self):
        while not self.stop.wait(2):
            port = self.port_of()
            if not port:
                continue
            st, _ = ask(port, get("/metrics"))
            if st not in (401, None):
                self.fail(f"/metrics without a token: {st}, not 401")
            st, body = ask(port, get("/metrics", self.token_of("eve")))
            if st is None:
                continue
            lines = [ln for ln in body.decode("utf-8", "replace").splitlines() if ln and not ln.startswith("#")]
            if st != 200 or not lines or any('tenant="eve"' not in ln for ln in lines):
                self.fail(f"eve's /metrics: {st}, a figure not hers: "
                          f"{[ln for ln in lines if 'tenant=' + chr(34) + 'eve' not in ln][:2]}")
            self.metrics_n += 1

    def puts(self):
        n = PUT_MIB << 18
        i = 0
        while not self.stop.wait(5):
            port = self.port_of()
            if not port:
                continue
            i += 1
            held = frame_of(np.full(n, 1e6 + i, np.float32))
            new = frame_of(np.full(n, -1e6 - i, np.float32))
            h, body = held
            put = b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n" \
                  b"Connection: close\r\n\r\n"
            st, _ = ask(port, put % (h.encode(), self.token_of("probe").encode(), len(body)) + body, timeout=60)
            if st != 201:
                continue  # (busy now: another time)
            pair = {}
            for kind, (name, b) in (("held", held), ("new", new))[::1 if i % 2 else -1]:
                t0 = time.monotonic()
                st, _ = ask(port, put % (name.encode(), self.token_of("eve").encode(), len(b)) + b, timeout=60)
                if st == 201:
                    pair[kind] = (time.monotonic() - t0) * 1e3
                    self.put_ms[kind].append(pair[kind])
                elif st not in (503, None):
                    self.fail(f"eve's PUT of a blob {kind}: {st}")
            if len(pair) == 2:
                self.put_pairs.append((pair["held"], pair["new"]))

    def report(self):
        out = [f"# edge: {self.opened} slow heads and silent connections opened from 10 addresses; "
               f"/healthz answered {len(self.health_ms)} times, {self.health_bad} not 200 "
               f"({self.health_none} not answered: restarts)"]
        if self.health_ms:
            q = statistics.quantiles(self.health_ms, n=100) if len(self.health_ms) > 1 else self.health_ms * 99
            out.append(f"# edge: /healthz beside them: p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, "
                       f"max {max(self.health_ms):.1f} ms")
        h, w = self.put_ms["held"], self.put_ms["new"]
        if h and w:
            out.append(f"# edge: eve's PUT of a {PUT_MIB} MiB blob, median of {len(h)}: probe holds it "
                       f"{statistics.median(h):.1f} ms, nobody does {statistics.median(w):.1f} ms")
        out.append(f"# edge: eve's /metrics asked {self.metrics_n} times")
        return out

    def checks(self):
        ratio = statistics.median(h / w for h, w in self.put_pairs) \
            if len(self.put_pairs) >= PUT_MIN else None  # (fewer: reported, not judged)
        return [
            ("edge: /healthz always 200 beside 300 slow heads from 10 addresses, with a token and without",
             self.health_bad == 0 and len(self.health_ms) > 0, "; ".join(self.fails[:6])),
            ("edge: /metrics needs a token and shows eve her own figures only",
             self.metrics_n > 0 and not any("metrics" in f for f in self.fails),
             "; ".join(f for f in self.fails if "metrics" in f)[:600] or "never asked"),
            (f"edge: eve's PUT of a blob another holds takes as long as a new one "
             f"(median of {len(self.put_pairs)} back-to-back pairs' ratios within {PUT_RATIO}x either way)",
             ratio is None or 1 / PUT_RATIO < ratio < PUT_RATIO, f"held/new ratio {ratio}"),
        ]
