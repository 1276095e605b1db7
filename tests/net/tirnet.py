#!/usr/bin/python3
"""tests/net/tirnet.py — what the Python tests of `tir serve` share: the
wire formats of docs/protocol.md (tensor frames, chunk lists, results),
a server started on a free loopback port (Server), and requests through
http.client or raw sockets.  Standard library and NumPy only (Debian's
/usr/bin/python3).  serve_test.py, fuzz_serve.py and soak.py import it.

TIR is the binary Server starts: set it (tirnet.TIR = path) before the
first Server.  ALL_LINES collects every server's stderr, for a check of
sanitizer reports at the end of a script."""

import hashlib
import http.client
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import numpy as np

from wait_for import until

TIR = "build/tir"
PROTOCOL = 4  # lib/net/net.h's TIR_PROTOCOL: the number in results heads and headers
ALL_LINES = []
# the counts check() keeps for a script, read at its end ("N passed, M failed")
passed = failed = 0


def check(name, ok, detail=""):
    """Count and print "ok NAME" or "FAIL NAME: DETAIL"; ok, as given."""
    global passed, failed
    if ok:
        passed += 1
        print(f"ok {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")
    sys.stdout.flush()
    return ok


def ephemeral_ports():
    """The kernel's range of local ports for outgoing connections (Linux's
    ip_local_port_range; its default elsewhere)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(v) for v in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_range(n):
    """A base port with n free ones after it on loopback (bound and let go),
    outside the ephemeral range: a server of the test may bind its port
    seconds later (an MPI rank once the group forms), and meanwhile any
    outgoing connection (the test's clients, MPI's own) can be given a
    port of that range as its local one, which made `Address already in
    use`.  Random, so that suites running side by side rarely meet."""
    lo, hi = ephemeral_ports()
    spans = [(a, b) for a, b in ((10000, lo - n), (hi + 1, 65536 - n)) if b > a]
    rnd = random.Random()
    for _ in range(200):
        if spans:
            a, b = rnd.choice(spans)
            base = rnd.randrange(a, b)
        else:  # no room outside it: the kernel's pick, as before
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


def eventually(pred, seconds=60):
    """Whether pred() becomes true, polled every 20 ms for at most `seconds`."""
    return until(lambda: (bool(pred()), None), seconds)[0]


# ---- the wire formats (docs/protocol.md) ----

DTYPES = [np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64),
          np.dtype(np.float32), np.dtype(np.float64)]


def frame(a):
    a = np.asarray(a, order="C")  # (ascontiguousarray makes a scalar 1-d)
    data = a.tobytes()
    head = b"TIRT" + struct.pack("<BBHQ", DTYPES.index(a.dtype), a.ndim, 0, len(data))
    head += b"".join(struct.pack("<q", d) for d in a.shape)
    return head + data + b"\0" * (-len(data) % 8)


def unframe(buf, off):
    assert buf[off:off + 4] == b"TIRT", "no TIRT"
    dt, rank, _, nbytes = struct.unpack_from("<BBHQ", buf, off + 4)
    shape = struct.unpack_from("<%dq" % rank, buf, off + 16)
    start = off + 16 + 8 * rank
    a = np.frombuffer(buf[start:start + nbytes], dtype=DTYPES[dt]).reshape(shape)
    return a, start + nbytes + (-nbytes % 8)


def results(body):
    """(metadata, [arrays]) of a results body."""
    assert body[:4] == b"TIRR", "no TIRR"
    proto, count, mlen = struct.unpack_from("<III", body, 4)
    assert proto == PROTOCOL
    meta = json.loads(body[16:16 + mlen])
    off = 16 + mlen + (-mlen % 8)
    vals = []
    for _ in range(count):
        a, off = unframe(body, off)
        vals.append(a)
    assert off == len(body), "bytes after the last frame"
    return meta, vals


def sha(b):
    return hashlib.sha256(b if isinstance(b, bytes) else b.encode()).hexdigest()


CHUNK = 256 << 10


def chunk_list(f):
    """Frame f's chunk list (since protocol 2): a head, then each chunk's SHA-256."""
    leaves = b"".join(hashlib.sha256(f[i:i + CHUNK]).digest() for i in range(0, len(f), CHUNK))
    return b"TIRC" + struct.pack("<IQ", CHUNK, len(f)) + leaves


def blob(f):
    """(name, PUT body) of frame f: the hash of its chunk list; the list, then the frame."""
    lst = chunk_list(f)
    return sha(lst), lst + f


# ---- servers ----

class Server:
    """`tir serve --port 0 ARGS`: its port, its log lines, and how it ended."""

    def __init__(self, *args, env=None):
        e = dict(os.environ)
        e.pop("TIR_TOKEN", None)
        e.update(env or {})
        self.proc = subprocess.Popen([TIR, "serve", "--port", "0", *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e)
        self.lines = []
        ALL_LINES.append(self.lines)
        self.requests = 0  # made by request() and raw(): one log line each
        self.port = None
        self.first = None
        ready = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append(line)
                m = re.match(r"tir serve: listening on https?://[^ ]+:(\d+) \(protocol 4\)$", line)
                if m and not self.port:
                    self.first = line
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self.thread = threading.Thread(target=drain, daemon=True)
        self.thread.start()
        ready.wait(60)
        if not self.port:
            self.proc.kill()
            raise RuntimeError("tir serve did not start: " + " | ".join(self.lines[-3:]))

    def conn(self, timeout=30, source=None):
        """A connection to it; source: the loopback address to connect from
        (127.0.0.0/8 is all this machine's), for a client of its own address.
        The timeout bounds a hang, not a speed: an ASan build's kernels run
        several times slower (a 4096^3 product ~23 s at -O1), so it gets 4x."""
        timeout *= 4 if asan_build() else 1
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                                          source_address=(source, 0) if source else None)

    def status_kib(self, field):
        """A field of its /proc/PID/status in KiB (VmRSS, VmHWM), 0 when absent."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def rss_kib(self):
        return self.status_kib("VmRSS")

    def hwm_kib(self):
        """The most it has held (VmHWM)."""
        return self.status_kib("VmHWM")

    def wait_trim(self, seconds=60):
        """Whether the server gives memory back once idle (its trim, 500 ms
        after its last request: tir_idle_trims_total) within `seconds`.
        Asked every 0.7 s, slower than the trim, as each ask is a request."""
        n = metrics(self).get("tir_idle_trims_total", 0)

        def trimmed():
            time.sleep(0.7)
            return metrics(self).get("tir_idle_trims_total", 0) > n
        return eventually(trimmed, seconds)

    def logged(self, regex):
        """How many of its log lines match regex."""
        rx = re.compile(regex)
        return sum(1 for ln in list(self.lines) if rx.search(ln))

    def wait_log(self, regex, count=1):
        """Whether `count` log lines match regex within 60 s."""
        return eventually(lambda: self.logged(regex) >= count)

    def wait_metric(self, name, value):
        """Whether /metrics shows name == value within 60 s."""
        return eventually(lambda: metrics(self).get(name) == value)

    def stop(self, sig=signal.SIGTERM):
        """The exit status after sig (None: it did not stop within 15 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            st = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            st = None
        self.thread.join(5)
        return st


class JsonBody:
    """An answer's body read as JSON, and its error object (docs/protocol.md,
    Errors): for any class with a .body."""

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def err(self):
        j = self.json()
        e = j.get("error") if isinstance(j, dict) else None
        return e if isinstance(e, dict) else {}


class Reply(JsonBody):
    def __init__(self, r):
        self.status = r.status
        self.headers = {k.lower(): v for k, v in r.getheaders()}
        self.body = r.read()


_asan = {}


def asan_build():
    """whether TIR is an AddressSanitizer build (its binary holds __asan_init)"""
    if TIR not in _asan:
        try:
            with open(TIR, "rb") as f:
                _asan[TIR] = b"__asan_init" in f.read()
        except OSError:
            _asan[TIR] = False
    return _asan[TIR]


def run_groups(groups, only=(), check_fn=None):
    """Run each test group (those named in only, if any): a function, or a
    (function, args) pair; a crash of one group is one failure (through
    check_fn, this module's check by default), the rest go on."""
    for g in groups:
        t, args = g if isinstance(g, tuple) else (g, ())
        if only and t.__name__ not in only:
            continue
        try:
            t(*args)
        except Exception as e:  # noqa: BLE001
            (check_fn or check)(t.__name__, False, f"{type(e).__name__}: {e}")


def check_no_sanitizer(check_fn=None):
    """The last check of every file of tests: no sanitizer report in any
    server's stderr."""
    reports = [ln for lines in ALL_LINES for ln in lines
               if "Sanitizer" in ln or "runtime error:" in ln or "LeakSanitizer" in ln]
    (check_fn or check)("no sanitizer report from any server", not reports, str(reports[:5]))


def finish():
    """The last check (check_no_sanitizer) and the summary line; the exit
    status."""
    check_no_sanitizer()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def request(srv, method, path, body=None, headers=None, conn=None):
    srv.requests += 1
    c = conn or srv.conn()
    h = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    try:
        c.request(method, path, body=body, headers=h)
    except (BrokenPipeError, ConnectionResetError):
        # refused and closed while the body was still going (a blob over
        # --blob-cache, read from its head): the answer came before the
        # close and waits in the socket, as a client reading it would see
        pass
    r = Reply(c.getresponse())
    if conn is None:
        c.close()
    return r


def error_is(r, status, code):
    e = r.err()
    return r.status == status and e.get("status") == status and e.get("code") == code and \
        isinstance(e.get("message"), str) and r.headers.get("tir-protocol") == "4"


def describe(r):
    return f"{r.status} {r.body[:300]!r}"


def new_session(srv, headers=None, conn=None):
    r = request(srv, "POST", "/v1/sessions", headers=headers, conn=conn)
    return r.json()["session"] if r.status == 201 else None


def put_blob(srv, a, headers=None, conn=None):
    f = a if isinstance(a, bytes) else frame(a)
    h, body = blob(f)
    r = request(srv, "PUT", "/v1/blobs/" + h, body, headers, conn)
    return h, r


def run(srv, sid, text, inputs=None, conn=None, headers=None, send_text=True, **extra):
    body = {"graph": sha(text), "inputs": inputs or {}}
    if send_text:
        body["text"] = text
    body.update(extra)
    return request(srv, "POST", f"/v1/sessions/{sid}/run", body, headers, conn)


def drained(s, seconds=60):
    """Whether the server has read all that socket s sent, within `seconds`:
    nothing left in s's send queue, nor in the receive queue of the
    server's end (/proc/net/tcp).  A client that goes away with bytes still
    unread at the server is noticed only at the connection timeout (30 s:
    libmicrohttpd 0.9.75 with epoll misses the end of such a connection);
    the checks of a client gone close once the server has caught up."""
    ours, theirs = s.getsockname()[1], s.getpeername()[1]

    def queues():
        q = {}
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                p = line.split()
                ends = (int(p[1].rsplit(":", 1)[1], 16), int(p[2].rsplit(":", 1)[1], 16))
                q[ends] = tuple(int(x, 16) for x in p[4].split(":"))  # tx_queue, rx_queue
        mine, server = q.get((ours, theirs)), q.get((theirs, ours))
        return mine is not None and server is not None and mine[0] == 0 and server[1] == 0
    return eventually(queues, seconds)


def raw(srv, data, wait=5.0):
    """Send bytes on a fresh connection, read until the server closes or wait runs out."""
    srv.requests += 1
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=wait)
    out = b""
    try:
        s.sendall(data)
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    finally:
        s.close()
    return out


def healthy(srv):
    try:
        r = request(srv, "GET", "/healthz")
        return r.status == 200 and r.body == b"ok"
    except OSError:
        return False


def metrics(srv):
    r = request(srv, "GET", "/metrics")
    m = {}
    for line in r.body.decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            m[k] = float(v)
    return m
