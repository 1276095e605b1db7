#!/usr/bin/python3
"""tests/net/soak.py [--seconds N] [--restarts R] [--out DIR] [--tir PATH]
[--quiet-every S] [--warmup S] — a soak of `tir serve` (`make soak`;
`make soak SOAK_SECONDS=120` for a short one): a server of this script's
own, on a free loopback port, with tenants (--tokens) and budgets small
enough that every limit is met, under mixed clients for the whole time:

  alice  3 protocol clients (sessions=2: the third waits with 503s): blobs
         of 256 B to 256 KiB, runs checked against NumPy, values kept in
         the session and read by later runs, dropped, sessions DELETEd; now
         and then a batch over --max-memory (413 memory), a runtime error
         (422), a program error (400), a key never kept (404), on purpose;
  bob    2 protocol clients uploading 1 to 32 MiB (inflight=40M: 503s and a
         56 MiB body answered 413 before it is read), reductions checked
         against NumPy, blobs named again after the cache evicted them (409);
  carol  2 runners of real `tir run --remote` processes: the samples, a
         program with a new 1 MiB or 8 MiB --input every time and a load(),
         a runtime and an index error; stdout, stderr and exit status
         compared with a local `tir run` of the same program and input;
  dave   a killer: SIGKILL to a client in the middle of an upload, of a
         long batch, of a `tir run --remote`; connections dropped in the
         middle of a body or of the headers.
  mallory  the red team of issue 27: loop texts of 160,000 adds and texts
         of 50,000 lines (413 too_many_ops as they are parsed), loop texts
         of 30,000 adds whose graphs fill --graph-cache (checked, or 503
         while the cache holds graphs in use), a batch whose unused
         zeros([pad]) claims 40% of --max-memory;
  tina   tiny batches, timed: their latency percentiles are printed, with
         the peak VmRSS (each life's VmHWM) against --max-memory (checked
         within the budget and 128 MiB of the server's own: code, stacks,
         MHD's buffers, the allocator's arenas; the released tensors kept
         for reuse go once the server passes --max-memory and 64 MiB).

Every request of the protocol clients is accounted for: answered and
right, answered with an expected error (409 then sent again, 503 with
Retry-After then sent again, 413 over a budget, 404 for a session that
went with a restart, the deliberate errors), in flight when the server
restarted (sent again), or abandoned on purpose (a kill, a drop); anything
else (a wrong result, another status, no answer within 120 s, a
connection that breaks with no restart under way) is a failure.  The
server's log is held against the clients: for each session, the runs it
says it answered are the runs the client got; a killed client's batch is
dropped or stopped (499); no batch received before a stop goes
unanswered.  `tir run --remote` processes are accounted for the same way,
one count per process.

The server is restarted R times (default: one every 5 minutes of the first
half, at most 5; at least 1): SIGTERM, exit 0 within 120 s, the batches it
said it would answer answered; then again on the same port (SO_REUSEADDR:
it can), the clients going on through it as `tir run --remote` does:
retrying, making sessions again.  The last half is one long life.

Every 3 s /metrics and VmRSS go to samples.csv under --out (default a new
temporary folder, printed).  Every --quiet-every seconds (default 30; at
most a quarter of --seconds, which is 20 or more, so that a short soak
has quiet points before and after its restart) the
load pauses: once no batch is queued or running and no body in flight, and
the server has trimmed (tir_idle_trims_total has passed the count seen
after the pause: /metrics asked every 0.75 s or more slowly, so that the
asking leaves it idle), VmRSS and tir_tensor_bytes are taken (quiet.csv),
and tir_tensor_bytes must be what the blobs (tir_blob_cache_bytes less
each blob's record; a blob's tensor is its frame less a head, its data
rounded to 64 bytes: 80 bytes less to 40 more), the values the clients
kept, and the graphs' small constants account for (a cached graph keeps
its constants of 64 bytes or less from its second run on: measured first
on a server of its own, the programs run twice).  Memory is flat when, in
each life of at least 6 quiet points after its --warmup (default 90 s),
the median VmRSS of the last third of them is within 10% + 16 MiB of the
first third's, and VmRSS less the tensors held (the server's own memory)
within 8 MiB; the same across all lives.  At the end the clients stop
(DELETEing their sessions), the sessions left by killed clients expire,
and a last quiet point must hold the blobs only.  SOAK_SMAPS=DIR keeps a
copy of the server's /proc/PID/smaps at each quiet point.

Prints "ok NAME" or "FAIL NAME: WHY" per check, "# " lines with the
figures, then "N passed, M failed"; exit status 0 only when none failed.
Standard library and NumPy only (Debian's /usr/bin/python3)."""

import argparse
import collections
import csv
import json
import os
import random
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import tirnet  # noqa: E402  (tests/net/tirnet.py)
from tirnet import JsonBody, blob, frame, results, sha  # noqa: E402
from wait_for import metrics as scrape  # noqa: E402
import soak_edge  # noqa: E402  (the red-team cases at the edge: slow heads, /metrics, PUT times)

MiB = 1 << 20
now = time.monotonic
T0 = now()

TIR = os.path.join(ROOT, "build", "tir")
SALT = os.urandom(6).hex()
# tenant, its options in the --tokens file
TENANTS = [("alice", "sessions=2"), ("bob", "inflight=40M sessions=3"), ("carol", "sessions=4"), ("dave", "sessions=4"),
           ("probe", "sessions=2"), ("mallory", "sessions=2"), ("tina", "sessions=1"), ("root", "admin sessions=1"),
           ("eve", "sessions=1")]
LIMITS = ["--max-memory", "192M", "--blob-cache", "48M", "--max-inflight", "64M", "--max-sessions", "12",
          "--max-body", "80M", "--session-ttl", "120", "--threads", "2"]
TTL = 120
REQUEST_TIMEOUT = 120   # one request's answer
OP_BOUND = 300          # one request and its resends (503s, a restart)
TIR_TIMEOUT = 120       # a `tir run --remote` process's, for one request
STOP_BOUND = 120        # SIGTERM to exit
PAUSE_BOUND = 100       # every client paused (a runner waits for its process); under the TTL
SETTLE_BOUND = 90       # no batch, no body in flight (a body cut short may wait for MHD's 30 s timeout)
TRIM_BOUND = 60         # the idle trim seen
ROW = 1024              # bob's tensors are rows of 1024 f32
MIN_SECONDS = 20        # the shortest soak (soak_smoke.sh's): quiet points before and after its restart
THINK = 0.25            # a client's pause between two steps: 0 to this many seconds


def token(tenant):
    return f"{tenant}-soak-{SALT}"


def say(msg):
    print(msg, flush=True)


def t():
    return now() - T0


def round64(n):
    return max(64, (n + 63) // 64 * 64)


# ---- accounting ----

OK = "answered, correct"
EXPECTED = "answered, expected error"
RESTART = "in flight at a restart (sent again)"
ABANDONED = "abandoned on purpose (killed, dropped)"
FAILED = "failed"
CATS = (OK, EXPECTED, RESTART, ABANDONED, FAILED)


class Ledger:
    """Outcomes by category and detail; the failures in words."""

    def __init__(self, what):
        self.what = what
        self.lock = threading.Lock()
        self.n = collections.Counter()
        self.fails = []

    def add(self, cat, detail):
        with self.lock:
            self.n[(cat, detail)] += 1

    def fail(self, why):
        with self.lock:
            self.n[(FAILED, why.split(":")[0])] += 1
            self.fails.append(f"at {t():.1f} s: {why}")
        say(f"# {self.what} failed at {t():.1f} s: {why}")

    def total(self, cat=None):
        with self.lock:
            return sum(v for (c, _), v in self.n.items() if cat is None or c == cat)

    def report(self):
        lines = []
        with self.lock:
            for cat in CATS:
                items = sorted(((v, d) for (c, d), v in self.n.items() if c == cat), reverse=True)
                lines.append(f"#   {cat:<42} {sum(v for v, _ in items):>8}")
                if cat != FAILED:
                    lines += [f"#       {d:<66} {v:>8}" for v, d in items]
        return lines


REQ = Ledger("request")      # each HTTP request of the protocol clients (and of dave's own)
RUNS = Ledger("remote run")  # each `tir run --remote` process
ODD = Ledger("check")        # the server's side: log against clients, kills, stops


# ---- the server, one process a life ----

LISTEN = re.compile(r"tir serve: listening on http://127\.0\.0\.1:(\d+) \(protocol 4\)$")


class Life:
    """One `tir serve` process: its port, its log (also in server-N.log)."""

    def __init__(self, n, port, out, tokens):
        self.n = n
        self.port = None
        self.lines = []
        self.path = os.path.join(out, f"server-{n}.log")
        env = dict(os.environ)
        env.pop("TIR_TOKEN", None)
        self.proc = subprocess.Popen([TIR, "serve", "--port", str(port), "--tokens", tokens, *LIMITS],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        ready = threading.Event()

        def drain():
            with open(self.path, "w", encoding="utf-8") as f:
                for raw in self.proc.stderr:
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    f.write(line + "\n")
                    self.lines.append(line)
                    m = LISTEN.match(line)
                    if m and self.port is None:
                        self.port = int(m.group(1))
                        ready.set()
            ready.set()

        self.thread = threading.Thread(target=drain, daemon=True)
        self.thread.start()
        ready.wait(60)
        self.started = now()
        self.hwm = None

    def rss_kib(self, field="VmRSS"):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def wait_log(self, regex, start, bound=60):
        """The log lines from the start-th on that match regex, once there
        is one (at most bound seconds)."""
        rx = re.compile(regex)
        end = now() + bound
        while True:
            found = [ln for ln in self.lines[start:] if rx.search(ln)]
            if found or now() > end:
                return found
            time.sleep(0.05)

    def stop(self):
        """SIGTERM; (exit status or None past STOP_BOUND, seconds).  The
        life's peak RSS (VmHWM: every moment, not only the samples') is
        taken first."""
        self.hwm = self.rss_kib("VmHWM")
        t0 = now()
        self.proc.send_signal(signal.SIGTERM)
        try:
            st = self.proc.wait(STOP_BOUND)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            st = None
        self.thread.join(10)
        return st, now() - t0


class Srv:
    """The server as the clients see it: where it is, whether it is up, and
    when it was not (restart windows)."""

    def __init__(self):
        self.life = None
        self.port = None
        self.gen = 0
        self.up = threading.Event()
        self.windows = []            # [SIGTERM sent, new server listening (None: not yet)]
        self.action = threading.Lock()  # a restart or one of dave's acts, not both
        self.overhead = 0            # what tir_blob_cache_bytes charges a blob besides its frame

    def addr(self):
        return f"127.0.0.1:{self.port}"

    def overlaps(self, t0, t1):
        return any(t1 >= a and (b is None or t0 <= b) for a, b in list(self.windows))

    def metrics(self):
        return scrape(self.addr(), timeout=30, token=token("root")) if self.port else {}


SRV = Srv()


# ---- HTTP/1.1 over a socket: what the clients send and read ----

class ConnError(Exception):
    def __init__(self, why, sending_body=False):
        super().__init__(why)
        self.sending_body = sending_body


class Hang(Exception):
    pass


class Reply(JsonBody):
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        self.early = False
        self.gen = None

    def brief(self):
        return f"{self.status} {bytes(self.body[:240])!r}"


def recv_some(s):
    try:
        d = s.recv(1 << 20)
    except socket.timeout:
        raise Hang("no answer")
    except OSError as e:
        raise ConnError(f"reading the answer: {e}")
    if not d:
        raise ConnError("the connection closed before a whole answer")
    return d


class IdleClosed(ConnError):
    """A kept-alive connection closed with no byte of the answer: the
    server closes an idle one when a newcomer needs its slot
    (docs/protocol.md, the head phase), and a request sent at that moment
    was never read: it is sent again on a new connection."""


def read_reply(s, buf=b"", reused=False):
    """(Reply, bytes read past it) from socket s (reused: it has carried
    a request before)."""
    buf = bytearray(buf)
    while b"\r\n\r\n" not in buf:
        try:
            buf += recv_some(s)
        except ConnError as e:
            if reused and not buf and "closed before" in str(e):
                raise IdleClosed("a kept-alive connection closed with no answer")
            raise
    end = buf.index(b"\r\n\r\n")
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    del buf[:end + 4]
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise ConnError(f"not an HTTP status line: {lines[0][:80]!r}")
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(buf) < n:
        buf += recv_some(s)
    return Reply(int(parts[1]), headers, bytes(buf[:n])), bytes(buf[n:])


class Conn:
    """One keep-alive connection of a client; opened again after a close."""

    def __init__(self, tok):
        self.tok = tok
        self.s = None
        self.gen = None
        self.used = 0.0
        self.reused = False

    def close(self):
        if self.s:
            try:
                self.s.close()
            except OSError:
                pass
        self.s = None

    def request(self, method, path, body=b"", expect100=False):
        # the server closes a kept-alive connection that sends no request
        # head within 10 s (--header-timeout): a client opens another well
        # before, so that its request never meets the close
        if self.s and now() - self.used > 5:
            self.close()
        if not self.s:
            self.gen = SRV.gen
            self.reused = False
            try:
                self.s = socket.create_connection(("127.0.0.1", SRV.port), timeout=10)
            except OSError as e:
                raise ConnError(f"connecting: {e}")
        s, gen = self.s, self.gen
        reused, self.reused = self.reused, True
        s.settimeout(REQUEST_TIMEOUT)
        big = len(body) > 64 * 1024
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTir-Protocol: 4\r\n"
                f"Authorization: Bearer {self.tok}\r\nContent-Length: {len(body)}\r\n")
        if method == "POST" and body:
            head += "Content-Type: application/json\r\n"
        if big and expect100:
            head += "Expect: 100-continue\r\n"
        head = (head + "\r\n").encode()
        rest = b""
        try:
            if not big:
                s.sendall(head + body)
            else:
                s.sendall(head)
                if expect100:  # 100 Continue, or the answer without the body (refused)
                    r, rest = read_reply(s)
                    if r.status != 100:
                        self.close()
                        r.early, r.gen = True, gen
                        return r
                mv = memoryview(body)
                for off in range(0, len(body), MiB):
                    if select.select([s], [], [], 0)[0]:  # answered before the body went: refused
                        r, _ = read_reply(s, rest)
                        self.close()
                        r.early, r.gen = True, gen
                        return r
                    s.sendall(mv[off:off + MiB])
        except socket.timeout:
            self.close()
            raise Hang("sending")
        except (OSError, ConnError) as e:
            # refused and closed while the body was going: its answer may be there still
            if big:
                try:
                    s.settimeout(2)
                    r, _ = read_reply(s, rest)
                    self.close()
                    r.early, r.gen = True, gen
                    return r
                except (ConnError, Hang, OSError):
                    pass
            self.close()
            raise ConnError(f"sending: {e}", sending_body=big)
        try:
            r, _ = read_reply(s, rest, reused)
        except (ConnError, Hang):
            self.close()
            raise
        r.gen = gen
        self.used = now()
        if r.headers.get("connection", "").lower() == "close":
            self.close()
        return r


# ---- pauses, the end ----

class Yield(Exception):
    """An operation left after an answer (a 503) for a pause or the end: nothing lost."""


class Abort(Exception):
    """What the client was doing cannot go on (said in the ledger)."""


class Control:
    def __init__(self):
        self.stop = threading.Event()
        self.pause = threading.Event()
        self.quiet = threading.Event()   # the sampler keeps still
        self.cv = threading.Condition()
        self.paused = set()
        self.members = []

    def pause_point(self, who):
        if not self.pause.is_set():
            return
        who.on_pause()
        with self.cv:
            self.paused.add(who.name)
            self.cv.notify_all()
            while self.pause.is_set() and not self.stop.is_set():
                self.cv.wait(0.5)
            self.paused.discard(who.name)

    def wait(self, secs, yield_ok=True):
        """secs (a Retry-After); a pause or the end cuts it short (Yield)."""
        end = now() + secs
        while now() < end:
            if yield_ok and (self.pause.is_set() or self.stop.is_set()):
                raise Yield()
            time.sleep(min(0.05, max(0.0, end - now())))

    def hold(self, bound):
        """Pause every client; whether all are within bound (those still out named)."""
        self.pause.set()
        with self.cv:
            ok = self.cv.wait_for(lambda: all(m.name in self.paused or not m.is_alive() for m in self.members),
                                  bound)
            out = [m.name for m in self.members if m.is_alive() and m.name not in self.paused]
        return ok, out

    def release(self):
        self.pause.clear()
        with self.cv:
            self.cv.notify_all()


CTL = Control()


def busy_kind(msg):
    if "sessions" in msg:
        return "503 busy: sessions full (sent again)"
    if "may send" in msg or "max-inflight" in msg:
        return "503 busy: bodies in flight fill the budget (sent again)"
    if "evicted while" in msg:
        return "503 busy: the blob evicted while checked (sent again)"
    if "memory" in msg:
        return "503 busy: no memory for the upload now (sent again)"
    return "503 busy: " + msg[:50]


# ---- the protocol clients ----

def load_text(n):
    return (f"input t0: f32[{n}, {n}]\ninput t1: f32[{n}]\nt2: f32[{n}, {n}] = matmul(t0, t0)\n"
            f"t3: f32[{n}, {n}] = add(t2, t1)\nt4: f32[{n}, {n}] = tanh(t3)\nt5: f32[{n}] = sum(t4, axis=1)\n"
            "print t5, t4\n")


def chain_text(n):
    """n chained 2048 x 2048 matmuls: minutes here, more than a second anywhere."""
    lines = ["x0: f32[2048, 2048] = randn([2048, 2048], seed=1)", "w: f32[2048, 2048] = mul(x0, 0.0221)"]
    lines += [f"x{i + 1}: f32[2048, 2048] = matmul(x{i}, w)" for i in range(n)]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


ENDLESS = chain_text(1000)  # under 64 KiB: not held back by --max-inflight


def stop_text(n):
    """n 1024 x 1024 matmuls, a second or two here: the batch under way when
    the server is told to stop."""
    lines = ["x0: f32[1024, 1024] = randn([1024, 1024], seed=3)", "w: f32[1024, 1024] = mul(x0, 0.03125)"]
    for i in range(n):
        lines += [f"m{i}: f32[1024, 1024] = matmul(x{i}, w)", f"x{i + 1}: f32[1024, 1024] = tanh(m{i})"]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


STOP_TEXT = stop_text(120)  # (30 for a sanitizer build: main)
OVER_MEMORY = ("t0: f32[8192, 8192] = randn([8192, 8192], seed=1)\nt1: f32[8192, 8192] = matmul(t0, t0)\n"
               "t2: f32[] = sum(t1)\nprint t2\n")  # 256 MiB stored for the matmul: over --max-memory 192M


def frame_bytes(put_body):
    return struct.unpack_from("<Q", put_body, 8)[0]


class Client(threading.Thread):
    tenant = "?"

    def __init__(self, name, seed):
        super().__init__(name=name, daemon=True)
        self.tok = token(self.tenant)
        self.rng = np.random.default_rng(seed)
        self.prng = random.Random(seed)
        self.conn = Conn(self.tok)
        self.sid = None
        self.sid_gen = None
        self.kept = {}                                  # key -> (value, bytes held)
        self.nkeys = 0
        self.answered = collections.Counter()           # (gen, session) -> run answers received
        self.sessions = set()                           # (gen, session) made
        self.unread = collections.Counter()             # gen -> bodies refused, the answer not read

    def run(self):
        while not CTL.stop.is_set():
            CTL.pause_point(self)
            if CTL.stop.is_set():
                break
            try:
                self.step()
                CTL.wait(self.prng.uniform(0, THINK))
            except (Yield, Abort):
                pass
            except Exception:  # a fault of this script is a failure too
                REQ.fail(f"{self.name}: {traceback.format_exc(limit=4)}")
                time.sleep(1)
        try:
            self.end_session()
        except (Yield, Abort):
            pass
        except Exception:
            REQ.fail(f"{self.name}: {traceback.format_exc(limit=4)}")
        self.conn.close()

    def on_pause(self):
        self.conn.close()

    def kept_bytes(self):
        return sum(b for _, b in self.kept.values())

    def step(self):
        raise NotImplementedError

    def call(self, method, path, body=b"", what=None, yield_ok=True):
        """One request, sent again through a restart and after 503s: its
        answer (not a 503).  Failures are said here (Abort)."""
        what = what or f"{method} {path}"
        begun = now()
        idle_closed = 0
        while True:
            if now() - begun > OP_BOUND:
                REQ.fail(f"{self.name}: {what}: no answer in {OP_BOUND} s, resends included")
                raise Abort()
            if not SRV.up.wait(OP_BOUND):
                REQ.fail(f"{self.name}: {what}: the server did not come back within {OP_BOUND} s")
                raise Abort()
            cgen = self.conn.gen if self.conn.s else SRV.gen
            t0 = now()
            try:
                r = self.conn.request(method, path, body, expect100=self.prng.random() < 0.5)
            except Hang as e:
                REQ.fail(f"{self.name}: {what}: {e} within {REQUEST_TIMEOUT} s")
                raise Abort()
            except IdleClosed:
                idle_closed += 1
                if idle_closed > 3:
                    REQ.fail(f"{self.name}: {what}: kept-alive connections closed with no answer {idle_closed} "
                             "times in a row")
                    raise Abort()
                REQ.add(EXPECTED, "a kept-alive connection closed while idle, to make room (sent again)")
                continue
            except ConnError as e:
                if SRV.overlaps(t0, now()) or cgen != SRV.gen:
                    REQ.add(RESTART, "the connection broke: the server restarting")
                    CTL.wait(0.3, yield_ok=False)  # as a client backs off
                    continue
                if e.sending_body:
                    # refused before the body was read, and closed: the answer
                    # lost under the body (held against the server's log)
                    self.unread[cgen] += 1
                    REQ.add(EXPECTED, "a body refused, its answer unread (sent again)")
                    continue
                REQ.fail(f"{self.name}: {what}: {e} (no restart under way)")
                raise Abort()
            if path.endswith("/run"):
                self.answered[(r.gen, path.split("/")[3])] += 1
            if r.status == 503:
                # an answer: the closes counted "in a row" start again (after
                # Retry-After's wait the kept connection is idle, and a crowded
                # server may close it to make room once more)
                idle_closed = 0
                msg = r.err().get("message", "")
                ra = r.headers.get("retry-after")
                if not ra or not ra.isdigit():
                    REQ.fail(f"{self.name}: {what}: 503 without Retry-After: {r.brief()}")
                    raise Abort()
                if "stopping" in msg:
                    REQ.add(RESTART, "503: the server is stopping (sent again)")
                else:
                    REQ.add(EXPECTED, busy_kind(msg))
                CTL.wait(max(1, int(ra)), yield_ok)
                continue
            return r

    def unexpected(self, what, r):
        REQ.fail(f"{self.name}: {what}: {r.brief()}")
        raise Abort()

    # sessions

    def ensure_session(self):
        if self.sid and self.sid_gen == SRV.gen:
            return
        self.sid = None
        self.kept.clear()
        r = self.call("POST", "/v1/sessions")
        sid = (r.json() or {}).get("session", "")
        if r.status != 201 or not re.fullmatch(r"[0-9a-f]{32}", sid):
            self.unexpected("POST /v1/sessions", r)
        REQ.add(OK, "201 session made")
        self.sid, self.sid_gen = sid, r.gen
        self.sessions.add((r.gen, sid))

    def gone_with_restart(self, r):
        """A 404 for a session that went with the server it was made on."""
        if r.status == 404 and "no such session" in r.err().get("message", "") and r.gen != self.sid_gen:
            REQ.add(EXPECTED, "404: the session went with a restart (made again)")
            self.sid = None
            self.kept.clear()
            raise Abort()

    def end_session(self):
        if not self.sid:
            return
        sid, self.sid = self.sid, None
        self.kept.clear()
        r = self.call("DELETE", f"/v1/sessions/{sid}", yield_ok=False)
        if r.status == 204:
            REQ.add(OK, "204 session deleted")
        elif r.status == 404 and r.gen != self.sid_gen:
            REQ.add(EXPECTED, "404: the session went with a restart (made again)")
        else:
            self.unexpected(f"DELETE /v1/sessions/{sid[:8]}", r)

    # blobs and runs

    def put(self, h, body, too_large=False):
        what = f"PUT /v1/blobs/{h[:8]} ({len(body)} B)"
        r = self.call("PUT", "/v1/blobs/" + h, body, what=what)
        if too_large:
            if r.status == 413 and r.err().get("code") == "too_large":
                REQ.add(EXPECTED, "413 too_large: a body over the tenant's inflight=, on purpose")
                return r
            self.unexpected(what + " (over a limit)", r)
        j = r.json() or {}
        if r.status in (200, 201) and j.get("blob") == h and j.get("bytes") == frame_bytes(body):
            REQ.add(OK, f"{r.status} blob {'stored' if r.status == 201 else 'held already'}")
            return r
        self.unexpected(what, r)

    def run_batch(self, text, inputs, blobs=None, keep=None, drop=None, what="run"):
        """A run as a client makes it: what a 409 lists is sent, then the
        run again.  The answer (not a 409)."""
        blobs = blobs or {}
        send_text = self.prng.random() < 0.3
        for _ in range(8):
            body = {"graph": sha(text), "inputs": inputs}
            if send_text:
                body["text"] = text
            if keep:
                body["keep"] = keep
            if drop:
                body["drop"] = drop
            r = self.call("POST", f"/v1/sessions/{self.sid}/run", json.dumps(body).encode(), what=what)
            if r.status != 409:
                return r
            e = r.err()
            if e.get("code") != "missing" or any(h not in blobs for h in e.get("blobs", [])) or \
                    not (e.get("graph") or e.get("blobs")):
                self.unexpected(what, r)
            REQ.add(EXPECTED, "409 missing: the text or blobs sent, the run again")
            send_text = send_text or bool(e.get("graph"))
            for h in e.get("blobs", []):
                self.put(h, blobs[h])
        REQ.fail(f"{self.name}: {what}: still 409 missing after 8 tries")
        raise Abort()

    def over_budget(self, r):
        """413 memory: the batch met --max-memory (uploads, blobs and batches of others fill it)."""
        if r.status == 413 and r.err().get("code") == "memory":
            REQ.add(EXPECTED, "413 memory: the budget full under load")
            return True
        return False


class Alice(Client):
    """Small blobs, values kept and used again, deliberate errors."""
    tenant = "alice"

    def __init__(self, name, seed, first=()):
        super().__init__(name, seed)
        self.first = list(first)  # deliberate errors to begin with

    def step(self):
        self.ensure_session()
        k = self.prng.random()
        if self.first:
            self.deliberate(self.first.pop(0))
        elif k < 0.02:
            self.deliberate()
        elif self.kept and k < 0.45:
            self.reuse()
        else:
            self.fresh()
        if self.prng.random() < 0.08:
            self.end_session()

    def fresh(self):
        n = self.prng.choice([8, 16, 32, 64, 128, 256])
        a = (self.rng.standard_normal((n, n), dtype=np.float32) * np.float32(1 / np.sqrt(n))).astype(np.float32)
        b = self.rng.standard_normal(n, dtype=np.float32)
        (ha, ba), (hb, bb) = blob(frame(a)), blob(frame(b))
        if self.prng.random() < 0.5:  # else the run's 409 asks for it
            self.put(ha, ba)
        keep = None
        if self.kept and self.prng.random() < 0.3:
            keep = {"t4": self.prng.choice(sorted(self.kept))}  # a key kept again: the old value goes
        elif len(self.kept) < 6 and self.prng.random() < 0.7:
            self.nkeys += 1
            keep = {"t4": f"k{self.nkeys}"}
        r = self.run_batch(load_text(n), {"t0": {"blob": ha}, "t1": {"blob": hb}}, {ha: ba, hb: bb}, keep=keep,
                           what=f"run f32[{n}, {n}]")
        self.gone_with_restart(r)
        if self.over_budget(r):
            return
        if r.status != 200:
            self.unexpected(f"run f32[{n}, {n}]", r)
        _, vals = results(r.body)
        want = np.tanh(a.astype(np.float64) @ a + b)
        if len(vals) == 2 and vals[1].shape == (n, n) and np.allclose(vals[1], want, rtol=1e-4, atol=1e-5) and \
                np.allclose(vals[0], want.sum(axis=1), rtol=1e-4, atol=1e-3):
            REQ.add(OK, "200 run, checked against NumPy")
            if keep:
                self.kept[keep["t4"]] = (vals[1].copy(), round64(vals[1].nbytes))
        else:
            REQ.fail(f"{self.name}: run f32[{n}, {n}]: a wrong result")

    def reuse(self):
        key = self.prng.choice(sorted(self.kept))
        v, _ = self.kept[key]
        n = v.shape[0]
        c = self.rng.standard_normal(n, dtype=np.float32)
        hc, bc = blob(frame(c))
        drop = [key] if self.prng.random() < 0.35 else None
        text = (f"input t0: f32[{n}, {n}]\ninput t1: f32[{n}]\nt2: f32[{n}, {n}] = mul(t0, t1)\n"
                f"t3: f32[{n}] = sum(t2, axis=0)\nprint t3\n")
        r = self.run_batch(text, {"t0": {"value": key}, "t1": {"blob": hc}}, {hc: bc}, drop=drop,
                           what=f"run on kept {key}")
        self.gone_with_restart(r)
        if self.over_budget(r):
            return
        if r.status != 200:
            self.unexpected(f"run on kept {key}", r)
        _, vals = results(r.body)
        want = (v.astype(np.float64) * c).sum(axis=0)
        if len(vals) == 1 and np.allclose(vals[0], want, rtol=1e-4, atol=1e-4):
            REQ.add(OK, "200 run on a kept value, checked against NumPy")
            if drop:
                del self.kept[key]
        else:
            REQ.fail(f"{self.name}: run on kept {key}: a wrong result")

    def deliberate(self, which=None):
        which = which or self.prng.choice(["memory", "runtime", "program", "key"])
        if which == "memory":
            r = self.run_batch(OVER_MEMORY, {}, what="run over --max-memory")
            want = (413, "memory")
        elif which == "runtime":
            z = np.zeros(2, np.int32)
            hz, bz = blob(frame(z))
            text = "input t0: i32[2]\nt1: i32[2] = add(t0, 1)\nt2: i32[2] = div(t1, t0)\nprint t2\n"
            r = self.run_batch(text, {"t0": {"blob": hz}}, {hz: bz}, what="run dividing by zero")
            want = (422, "runtime")
        elif which == "program":
            text = "input t0: f32[3]\nt1: f32[3] = nosuchop(t0)\nprint t1\n"
            hz, bz = blob(frame(np.ones(3, np.float32)))
            r = self.run_batch(text, {"t0": {"blob": hz}}, {hz: bz}, what="run of a bad program")
            want = (400, "program")
        else:
            text = "input t0: f32[3]\nt1: f32[3] = neg(t0)\nprint t1\n"
            r = self.run_batch(text, {"t0": {"value": "never-kept"}}, what="run on a key never kept")
            want = (404, "not_found")
        self.gone_with_restart(r)
        if (r.status, r.err().get("code")) == want:
            REQ.add(EXPECTED, f"{want[0]} {want[1]}: on purpose")
        elif which != "memory" and self.over_budget(r):
            pass
        else:
            self.unexpected(f"a run that must be {want[0]} {want[1]}", r)


class Bob(Client):
    """Big uploads (1 to 32 MiB) against inflight=40M and the 48M cache."""
    tenant = "bob"

    def __init__(self, name, seed, over_first=False):
        super().__init__(name, seed)
        self.base = self.rng.standard_normal((32 * MiB // (4 * ROW), ROW), dtype=np.float32)
        self.last = None
        self.k = 0
        self.over_first = over_first

    def step(self):
        self.ensure_session()
        if self.over_first or self.prng.random() < 0.03:
            self.over_first = False
            # 56 MiB: over bob's inflight=40M, answered 413 before it is read
            self.put(sha(os.urandom(8)), bytes(56 * MiB), too_large=True)
            return
        if self.last and self.prng.random() < 0.3:
            x, hx, bx = self.last  # named again: held, or evicted (409, sent again)
        else:
            mib = self.prng.choice([1, 2, 4, 8, 16, 24, 32])
            self.k += 1
            x = self.base[:mib * MiB // (4 * ROW)] + np.float32(self.k % 97 / 8)
            hx, bx = blob(frame(x))
            self.put(hx, bx)
            self.last = (x, hx, bx)
        rows = x.shape[0]
        text = (f"input t0: f32[{rows}, {ROW}]\nt1: f32[{rows}] = sum(t0, axis=1)\nt2: f32[] = max(t0)\n"
                f"t3: f32[{ROW}] = mean(t0, axis=0)\nprint t1, t2, t3\n")
        r = self.run_batch(text, {"t0": {"blob": hx}}, {hx: bx}, what=f"run on {x.nbytes >> 20} MiB")
        self.gone_with_restart(r)
        if self.over_budget(r):
            return
        if r.status != 200:
            self.unexpected(f"run on {x.nbytes >> 20} MiB", r)
        _, vals = results(r.body)
        if len(vals) == 3 and np.allclose(vals[0], x.sum(axis=1, dtype=np.float64), rtol=1e-4, atol=1e-2) and \
                vals[1] == x.max() and np.allclose(vals[2], x.mean(axis=0, dtype=np.float64), rtol=1e-4, atol=1e-4):
            REQ.add(OK, "200 run, checked against NumPy")
        else:
            REQ.fail(f"{self.name}: run on {x.nbytes >> 20} MiB: a wrong result")
        if self.prng.random() < 0.1:
            self.end_session()


# ---- tir run --remote ----

class Mallory(Client):
    """The red team of issue 27, beside the normal traffic: batch texts
    that would build far more than they are (a 60-byte loop of 160,000
    adds, a text of 50,000 add lines: 413 too_many_ops as they are parsed),
    loop texts of 30,000 adds whose graphs fill the graph cache (run and
    checked, or 503 while the cache is full of graphs in use), and a crafted
    batch whose unused zeros([pad]) claims a planned bound of about 40% of
    --max-memory (run and checked, or refused by the budget)."""
    tenant = "mallory"

    def step(self):
        self.ensure_session()
        k = self.prng.random()
        if k < 0.25:
            self.refused(f"x = t0\nfor i in range(160000) {{ x = x + {self.prng.randrange(1000)} }}\nprint x\n",
                         "a 60-byte loop of 160,000 adds")
        elif k < 0.4:
            n = 50000
            text = "".join(f"t{j + 1}: f32[3] = add(t{j}, t0)\n" for j in range(n)) + f"print t{n}\n"
            self.refused(text, "a text of 50,000 add lines")
        elif k < 0.75:
            c = self.prng.randrange(1, 500)  # the sum stays an integer f32 holds exactly (< 2^24)
            r = self.send(f"x = t0\nfor i in range(30000) {{ x = x + {c} }}\nprint x\n", "a loop of 30,000 adds")
            if self.over_budget(r) or self.graph_refused(r):
                return
            if r.status == 200 and np.allclose(results(r.body)[1][0], 1 + 30000 * c):
                REQ.add(OK, "200 run of a 30,000-add loop (red team), checked")
            else:
                self.unexpected("a loop of 30,000 adds", r)
        else:
            pad = 192 * MiB * 2 // 5 // 4
            lines = ["x0: f32[512, 512] = randn([512, 512], seed=1)", "w: f32[512, 512] = mul(x0, 0.0442)",
                     f"p: f32[{pad}] = zeros([{pad}])"]
            lines += [f"x{i + 1}: f32[512, 512] = matmul(x{i}, w)" for i in range(8)]
            r = self.send("\n".join(lines + ["s: f32[] = sum(x8)", "print s"]) + "\n", "a crafted bound")
            self.gone_with_restart(r)
            if self.over_budget(r):
                return
            if r.status == 200 and np.isfinite(results(r.body)[1][0]):
                REQ.add(OK, "200 run of a crafted bound (red team)")
            else:
                self.unexpected("a crafted bound", r)

    def send(self, text, what):
        text = "input t0: f32[3]\n" + text
        h, b = blob(frame(np.ones(3, np.float32)))
        return self.run_batch(text, {"t0": {"blob": h}}, {h: b}, what=what)

    def refused(self, text, what):
        r = self.send(text, what)
        self.gone_with_restart(r)
        if r.status == 413 and r.err().get("code") == "too_many_ops" and "--max-ops" in r.err().get("message", ""):
            REQ.add(EXPECTED, "413 too_many_ops: " + what + " (red team)")
        else:
            self.unexpected(what, r)

    def graph_refused(self, r):
        self.gone_with_restart(r)
        if r.status == 413 and r.err().get("code") in ("too_large", "memory"):
            REQ.add(EXPECTED, "413: a graph over the cache or the tenant's share (red team)")
            return True
        return False


TINY = []  # ms of each tiny batch of tina's, answered


class Tina(Client):
    """A tiny batch now and then, timed: what the red team must not delay."""
    tenant = "tina"

    def step(self):
        self.ensure_session()
        text = "x: f32[4] = ones([4])\ns: f32[] = sum(x)\nprint s\n"
        body = json.dumps({"graph": sha(text), "text": text, "inputs": {}}).encode()
        t0 = now()
        r = self.call("POST", f"/v1/sessions/{self.sid}/run", body, what="a tiny batch")
        ms = (now() - t0) * 1e3
        self.gone_with_restart(r)
        if r.status == 200 and float(results(r.body)[1][0]) == 4.0:
            REQ.add(OK, "200 tiny batch, timed")
            TINY.append(ms)
        else:
            self.unexpected("a tiny batch", r)


class Program:
    def __init__(self, name, path, args=(), fresh=None):
        self.name, self.path, self.args, self.fresh = name, path, list(args), fresh
        self.want = None

    def local(self, cwd):
        p = subprocess.run([TIR, "run", os.path.basename(self.path), *self.args, "--quiet"], cwd=cwd,
                           capture_output=True, timeout=120)
        return p.returncode, p.stdout, p.stderr


def programs(d):
    """The samples, and programs of this script's own in folder d."""
    out = [Program("sample " + f[:-4], os.path.join(d, f)) for f in sorted(os.listdir(os.path.join(ROOT, "samples")))
           if f.endswith(".tir")]
    for p in out:
        with open(os.path.join(ROOT, "samples", os.path.basename(p.path)), "rb") as src, open(p.path, "wb") as dst:
            dst.write(src.read())
    np.save(os.path.join(d, "w.npy"), np.random.default_rng(5).standard_normal((512, 64), dtype=np.float32))
    texts = {
        "div.tir": "a = arange(6)\nb = a - 3\nprint a\nc = (a * 2) / sub(b, b)\nprint c + 1\n",
        "gather.tir": "x = arange(4)\ni = [0, 7]\nprint gather(x, i, axis=0)\n",
        "input1.tir": ("input x: f32[512, 512]\nw = load(\"w.npy\")\nh = tanh(x @ w)\n"
                       "print sum(h, axis=1), max(h)\n"),
        "input8.tir": "input x: f32[2048, 1024]\nprint sum(x, axis=1), mean(x, axis=0)\n",
        "stop.tir": STOP_TEXT,
        "long.tir": ENDLESS,
    }
    for name, text in texts.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    out += [Program("runtime error", os.path.join(d, "div.tir")),
            Program("index error", os.path.join(d, "gather.tir")),
            Program("a new 1 MiB input", os.path.join(d, "input1.tir"), fresh=(512, 512)),
            Program("a new 8 MiB input", os.path.join(d, "input8.tir"), fresh=(2048, 1024))]
    return out, Program("long", os.path.join(d, "long.tir")), Program("stop", os.path.join(d, "stop.tir"))


def tir_env(tenant):
    e = dict(os.environ)
    e.update({"TIR_TOKEN": token(tenant), "TIR_TIMEOUT": str(TIR_TIMEOUT)})
    return e


def classify_exit3(err, overlapped):
    """(category, detail) of a `tir run --remote` that exited 3, or None: a failure."""
    if "is busy: the server is stopping" in err:
        return RESTART, "exit 3: 503 the server is stopping (run again)"
    if "is busy" in err:
        return EXPECTED, "exit 3: 503 sessions full, said at once (run again)"
    if "keeps asking for blobs" in err:
        return EXPECTED, "exit 3: the cache evicted its blobs 4 times (run again)"
    if "would pass the memory budget" in err:
        return EXPECTED, "exit 3: 413 memory, the budget full under load (run again)"
    broke = ("cannot connect", "the connection broke", "closed the connection without a reply",
             "the reply was cut short")
    if overlapped and any(b in err for b in broke):
        return RESTART, "exit 3: the connection broke, the server restarting (run again)"
    return None


class Runner(Client):
    """Real `tir run --remote` processes, each against a local run of the same."""
    tenant = "carol"

    def __init__(self, name, seed, progs, d):
        super().__init__(name, seed)
        self.progs, self.d = progs, d

    def step(self):
        # half the runs the samples and errors; 35% a new 1 MiB input, 15% a new 8 MiB one
        weights = [0.5 / (len(self.progs) - 2)] * (len(self.progs) - 2) + [0.35, 0.15]
        prog = self.prng.choices(self.progs, weights=weights)[0]
        cwd = self.d
        if prog.fresh:
            cwd = os.path.join(self.d, self.name)
            os.makedirs(cwd, exist_ok=True)
            x = self.rng.standard_normal(prog.fresh, dtype=np.float32)
            np.save(os.path.join(cwd, "x.npy"), x)
            for f in ("input1.tir", "input8.tir", "w.npy"):
                if not os.path.exists(os.path.join(cwd, f)):
                    os.link(os.path.join(self.d, f), os.path.join(cwd, f))
            args = ["--input", "x=x.npy"]
        else:
            args = []
        p = Program(prog.name, prog.path, args)
        want = prog.want if not prog.fresh else p.local(cwd)
        begun = now()
        while True:
            if now() - begun > OP_BOUND:
                RUNS.fail(f"{self.name}: {p.name}: not run within {OP_BOUND} s, runs again included")
                return
            if not SRV.up.wait(OP_BOUND):
                RUNS.fail(f"{self.name}: {p.name}: the server did not come back")
                return
            t0 = now()
            proc = subprocess.Popen([TIR, "run", os.path.basename(p.path), *args, "--quiet", "--remote",
                                     SRV.addr()], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=tir_env(self.tenant))
            try:
                out, err = proc.communicate(timeout=TIR_TIMEOUT + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                RUNS.fail(f"{self.name}: {p.name}: no exit within {TIR_TIMEOUT + 60} s")
                return
            st, errs = proc.returncode, err.decode("utf-8", "replace")
            if (st, out, err) == want:
                RUNS.add(OK, "the same stdout, stderr and status as a local run")
                return
            if st == 3 and want[0] != 3:
                c = classify_exit3(errs, SRV.overlaps(t0, now()))
                if c:
                    RUNS.add(*c)
                    CTL.wait(0.2, yield_ok=False)
                    continue
            why = (f"exit {st} (local {want[0]})" if st != want[0] else
                   "stdout differs from a local run" if out != want[1] else "stderr differs from a local run")
            RUNS.fail(f"{self.name}: {p.name}: {why}: {errs.strip()[:300]}")
            return


# ---- dave: kills and drops ----

def child_main(argv):
    """soak.py --child upload PORT TOKEN MIB SEED | --child batch PORT TOKEN SID:
    begin an upload (half its body) or a long batch, say `waiting NAME`
    once the server has read all of it (or `answered STATUS NAME`), then
    wait to be killed (or for the parent to go: stdin closes)."""
    kind, port, tok = argv[0], int(argv[1]), argv[2]
    if kind == "upload":
        a = np.random.default_rng(int(argv[4])).standard_normal(int(argv[3]) * MiB // 4, dtype=np.float32)
        name, body = blob(frame(a))
        data = (f"PUT /v1/blobs/{name} HTTP/1.1\r\nHost: x\r\nTir-Protocol: 4\r\nAuthorization: Bearer {tok}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body[:len(body) // 2]
    else:
        name = argv[3]
        body = json.dumps({"graph": sha(ENDLESS), "text": ENDLESS, "inputs": {}}).encode()
        data = (f"POST /v1/sessions/{name}/run HTTP/1.1\r\nHost: x\r\nTir-Protocol: 4\r\n"
                f"Authorization: Bearer {tok}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(data)
    except OSError:
        pass
    said = settle(s)
    print(*said, name, flush=True)
    if said[0] == "waiting":
        sys.stdin.read()
    return 0


def settle(s, bound=60):
    """("waiting",) once the server has read all that s sent; ("answered",
    STATUS) if it answered first ("-": it closed, its answer unread);
    ("stuck",) after bound seconds."""
    end = now() + bound
    while now() < end:
        try:
            if select.select([s], [], [], 0.05)[0]:
                d = s.recv(4096)
                return ("answered", d.split(b" ")[1].decode() if d.startswith(b"HTTP/1.1 ") else "-")
            if tirnet.drained(s, 0):
                return ("waiting",)
        except OSError:
            return ("answered", "-")
    return ("stuck",)


def refused_in_log(life, start, what, name):
    """An answer the client could not read: the log says it was 503 or 413."""
    return life.wait_log(rf"^{what} 503 |^{what} 413 ", start, 10) if name else []


class Dave(Client):
    """SIGKILL to clients mid-upload, mid-batch, a `tir run --remote`;
    connections dropped mid-body, mid-headers.  Each act held against
    the server's log."""
    tenant = "dave"

    def __init__(self, name, seed, long_prog, kill_tir):
        super().__init__(name, seed)
        self.long_prog, self.kill_tir = long_prog, kill_tir
        self.kills = collections.Counter()
        self.half = None  # (name, PUT body) of a 4 MiB blob, half of which is sent

    def step(self):
        CTL.wait(self.prng.uniform(2, 6))
        acts = [self.kill_upload, self.kill_batch, self.drop_put, self.drop_run, self.drop_headers]
        if self.kill_tir:
            acts.append(self.kill_remote)
        act = self.prng.choice(acts)
        with SRV.action:
            if not SRV.up.is_set() or CTL.stop.is_set():
                return
            self.life, self.mark = SRV.life, len(SRV.life.lines)  # the log from here on
            act(self.life)

    def child(self, *args):
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", *map(str, args)],
                             stdout=subprocess.PIPE, stdin=subprocess.PIPE)
        line = b""
        if select.select([p.stdout], [], [], 90)[0]:
            line = p.stdout.readline()
        return p, line.decode().split()

    def killed(self, p, what):
        p.kill()
        p.wait()
        self.kills[what] += 1
        REQ.add(ABANDONED, what)

    def refused(self, said, what, logged, life, run=False):
        """A child's or a drop's request answered before it could be cut: a
        503 (the budget full) is expected; one it could not read must be
        a 503 or 413 in the log.  run: a run of this session's, whose
        answer (not dave's call's) the log's count of its runs includes."""
        if run and len(said) > 1 and said[0] == "answered" and said[1] != "-":
            self.answered[(self.sid_gen, self.sid)] += 1
        if said[:2] == ["answered", "503"] or \
                (said[:2] == ["answered", "-"] and refused_in_log(life, self.mark, *logged)):
            REQ.add(EXPECTED, f"503 busy: {what} refused before it began (not cut)")
        else:
            REQ.fail(f"{self.name}: {what}: {said}")

    def kill_upload(self, life):
        p, said = self.child("upload", SRV.port, self.tok, self.prng.choice([4, 12, 24]), self.prng.randrange(1 << 30))
        if said[:1] != ["waiting"]:
            p.kill()
            p.wait()
            return self.refused(said, "an upload", ("PUT /v1/blobs/" + said[-1][:8] + "\u2026", said[-1]), life)
        self.killed(p, "SIGKILL in the middle of an upload")
        rx = rf"^PUT /v1/blobs/{said[1][:8]}\u2026 - \d+ 0 [\d.]+ms \(cut short by "
        if not life.wait_log(rx, self.mark):
            ODD.fail(f"a client killed in the middle of an upload: no 'cut short' line for {said[1][:8]} within 60 s")

    def kill_batch(self, life):
        self.ensure_session()
        p, said = self.child("batch", SRV.port, self.tok, self.sid)
        if said[:1] != ["waiting"]:
            p.kill()
            p.wait()
            return self.refused(said, "a long batch", (f"POST /v1/sessions/{self.sid[:8]}\u2026/run", None), life,
                                run=True)
        CTL.wait(self.prng.uniform(0, 1.5), yield_ok=False)
        self.killed(p, "SIGKILL in the middle of a long batch")
        rx = rf"^POST /v1/sessions/{self.sid[:8]}\u2026/run (499|-) "
        found = life.wait_log(rx, self.mark)
        if not found:
            ODD.fail(f"a client killed with its batch: no 499 for session {self.sid[:8]} within 60 s")
        self.end_session()

    def kill_remote(self, life):
        """(carol's: the session it leaves until the TTL is not dave's to count)"""
        proc = subprocess.Popen([TIR, "run", os.path.basename(self.long_prog.path), "--quiet", "--remote",
                                 SRV.addr()], cwd=os.path.dirname(self.long_prog.path),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=tir_env("carol"))
        CTL.wait(self.prng.uniform(0.5, 3), yield_ok=False)
        if proc.poll() is not None:
            err = proc.stderr.read().decode("utf-8", "replace")
            if proc.returncode == 3 and "is busy" in err:  # sessions full, said at once
                RUNS.add(EXPECTED, "exit 3: 503 sessions full, said at once (run again)")
            else:
                RUNS.fail(f"{self.name}: the long program to kill: exit {proc.returncode}: {err[:300]}")
            return
        self.killed(proc, "SIGKILL to a tir run --remote of a long program")
        proc.stderr.close()

    def drop(self, data, what, rx, logged, life, head_only=False, run=False):
        s = socket.create_connection(("127.0.0.1", SRV.port), timeout=30)
        try:
            s.sendall(data)
        except OSError:
            pass
        # a part of a request head is only looked at (the server's gate
        # peeks until the head is whole, so it stays in the socket): it is
        # dropped as sent
        said = ("waiting",) if head_only else settle(s)
        s.close()
        if said[0] != "waiting":
            return self.refused(list(said), what, logged, life, run)
        self.kills[what] += 1
        REQ.add(ABANDONED, what)
        if rx and not life.wait_log(rx, self.mark):
            ODD.fail(f"{what}: no 'cut short' line within 60 s")

    def drop_put(self, life):
        if not self.half:
            self.half = blob(frame(self.rng.standard_normal(MiB, dtype=np.float32)))
        name, body = self.half
        head = (f"PUT /v1/blobs/{name} HTTP/1.1\r\nHost: x\r\nTir-Protocol: 4\r\nAuthorization: Bearer {self.tok}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self.drop(head + body[:len(body) // 2], "a connection dropped in the middle of an upload's body",
                  rf"^PUT /v1/blobs/{name[:8]}\u2026 - \d+ 0 [\d.]+ms \(cut short by ",
                  (f"PUT /v1/blobs/{name[:8]}\u2026", name), life)

    def drop_run(self, life):
        self.ensure_session()
        body = json.dumps({"graph": sha("x"), "text": "x" * 2000, "inputs": {}}).encode()
        head = (f"POST /v1/sessions/{self.sid}/run HTTP/1.1\r\nHost: x\r\nTir-Protocol: 4\r\n"
                f"Authorization: Bearer {self.tok}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        self.drop(head + body[:1000], "a connection dropped in the middle of a run's body",
                  rf"^POST /v1/sessions/{self.sid[:8]}\u2026/run - \d+ 0 [\d.]+ms \(cut short by ", ("", None), life,
                  run=True)

    def drop_headers(self, life):
        self.drop(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Le", "a connection dropped in the middle "
                  "of the headers", None, ("", None), life, head_only=True)


# ---- the conductor ----

def write_tokens(d):
    path = os.path.join(d, "tokens")
    with open(path, "w") as f:
        for name, opts in TENANTS:
            f.write(f"{name} {token(name)} {opts}\n")
    os.chmod(path, 0o600)
    return path


def start_life(n, port, out, tokens):
    """A server on port (0: any); the same port is tried again a few times."""
    for _ in range(10 if port else 1):
        life = Life(n, port, out, tokens)
        if life.port:
            return life
        life.proc.wait(10)
        if not any("in use" in ln for ln in life.lines):
            break
        time.sleep(0.2)  # a start that failed: tried again
    if port:
        say(f"# could not bind port {port} again: {life.lines[-1:]}; a new port")
        return start_life(n, 0, out, tokens)
    raise RuntimeError("tir serve did not start: " + " | ".join(life.lines[-3:]))


def probe_overhead():
    """What the cache charges a blob besides its frame (the server just
    started: its cache is empty)."""
    c = Conn(token("probe"))
    f = frame(np.arange(16, dtype=np.float32))
    h, body = blob(f)
    r = c.request("PUT", "/v1/blobs/" + h, body)
    c.close()
    m = SRV.metrics()
    if r.status != 201 or m.get("tir_blob_cache_blobs") != 1:
        raise RuntimeError(f"probe blob: {r.brief()} {m}")
    return int(m["tir_blob_cache_bytes"]) - len(f)


def calibrate(out, tokens, progs, pdir):
    """What the graphs' small constants hold once every program has run
    twice: a cached graph makes each constant of 64 bytes or less once,
    from its second run on, and keeps it (lib/engine/cpu.c), so that a quiet
    server holds those besides its blobs and kept values.  Measured on a
    server of its own, as the difference of what tensors hold beyond the
    blobs after one round and after two."""
    life = Life("calibrate", 0, out, tokens)
    if not life.port:
        raise RuntimeError("tir serve did not start: " + " | ".join(life.lines[-3:]))
    SRV.port, SRV.gen = life.port, 0
    probe_overhead()
    cwd = os.path.join(pdir, "calibrate")
    os.makedirs(cwd, exist_ok=True)
    for f in os.listdir(pdir):
        if f.endswith(".tir") or f == "w.npy":
            os.link(os.path.join(pdir, f), os.path.join(cwd, f))
    rng = np.random.default_rng(9)
    c = Conn(token("alice"))
    sid = c.request("POST", "/v1/sessions").json()["session"]
    hz, bz = blob(frame(np.zeros(2, np.int32)))
    c.request("PUT", "/v1/blobs/" + hz, bz)
    texts = [("input t0: i32[2]\nt1: i32[2] = add(t0, 1)\nt2: i32[2] = div(t1, t0)\nprint t2\n", {"t0": {"blob": hz}}),
             (OVER_MEMORY, {})]
    res = []
    for _ in range(2):
        for p in progs:
            args = []
            if p.fresh:
                np.save(os.path.join(cwd, f"x{p.fresh[0]}.npy"), rng.standard_normal(p.fresh, dtype=np.float32))
                args = ["--input", f"x=x{p.fresh[0]}.npy"]
            subprocess.run([TIR, "run", os.path.basename(p.path), *args, "--quiet", "--remote", SRV.addr()], cwd=cwd,
                           env=tir_env("carol"), capture_output=True, timeout=TIR_TIMEOUT)
        for text, inputs in texts:
            c.request("POST", f"/v1/sessions/{sid}/run",
                      json.dumps({"graph": sha(text), "text": text, "inputs": inputs}).encode())
        m = SRV.metrics()
        # (a blob's record is in both: tir_mem is charged it too)
        res.append(m["tir_tensor_bytes"] - m["tir_blob_cache_bytes"])
    c.close()
    life.stop()
    return int(res[1] - res[0]) + 2 * 64  # and one constant each of ENDLESS and STOP_TEXT


def stop_under_way(life, stop_prog):
    """Before a stop: a batch of a second or two sent, on a connection of its
    own, and read by the server (so that the stop must answer it).  The
    socket, or None."""
    c = Conn(token("probe"))
    for _ in range(30):  # sessions may be full for a moment
        r = c.request("POST", "/v1/sessions")
        if r.status == 201:
            break
        REQ.add(EXPECTED, busy_kind(r.err().get("message", "")))
        time.sleep(1)
    else:
        ODD.fail("the batch for a stop: no session within 30 s")
        return None
    REQ.add(OK, "201 session made")
    c.close()
    body = json.dumps({"graph": sha(STOP_TEXT), "text": STOP_TEXT, "inputs": {}}).encode()
    s = socket.create_connection(("127.0.0.1", SRV.port), timeout=30)
    s.sendall((f"POST /v1/sessions/{r.json()['session']}/run HTTP/1.1\r\nHost: x\r\nTir-Protocol: 4\r\n"
               f"Authorization: Bearer {token('probe')}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    said = settle(s)
    if said != ("waiting",):
        ODD.fail(f"the batch for a stop: {said}")
        s.close()
        return None
    return s


def answered_at_stop(s, want):
    """The answer to stop_under_way's batch, after the stop: 200, and the sum a local run prints."""
    try:
        s.settimeout(10)
        r, _ = read_reply(s)
        val = results(r.body)[1][0] if r.status == 200 else None
    except (ConnError, Hang, OSError, AssertionError) as e:
        r, val = None, str(e)
    s.close()
    if r is not None and r.status == 200 and abs(float(val) - want) <= 1e-5 * abs(want) + 1e-6:
        REQ.add(OK, "200 the batch under way at a stop, answered and right")
        return True
    REQ.fail(f"the batch under way at a stop: {r.brief() if r else val} (a local run printed {want})")
    return False


RUN_LINE = re.compile(r"^POST /v1/sessions/([0-9a-f]{8})\u2026/run (\d{3}|-) \d+ \d+ [\d.]+ms(.*)$")
STOPPING = re.compile(r"^tir serve: stopping once (\d+) batch(?:es)? received (?:is|are) answered$")


def end_life(life, clients, why, checks):
    """SIGTERM to a life, and what its log says against the clients."""
    nlines = len(life.lines)
    st, secs = life.stop()
    lines = life.lines
    stopping = [i for i, ln in enumerate(lines) if STOPPING.match(ln)]
    received = int(STOPPING.match(lines[stopping[0]]).group(1)) if stopping else None
    after = lines[nlines:] if stopping else []
    answered = unanswered = gone = 0
    other = []
    for ln in after:
        m = RUN_LINE.match(ln)
        if not m:
            continue
        # a client that hung up: before its batch ran, while it ran, or
        # while its answer was being sent (a client's own timeout, under load)
        if m.group(3).startswith((" (the client went away", " (cut short by the client going away")):
            gone += 1
        elif m.group(2) not in ("-", "503") and m.group(3).startswith(" (cut short by the server stopping"):
            unanswered += 1
        elif m.group(2) not in ("-", "503") and not m.group(3):
            answered += 1
        else:
            other.append(ln)
    ok = st == 0 and received is not None and unanswered == 0 and answered + gone >= received and \
        lines[-1:] == ["tir serve: stopped"]
    checks.append((f"{why}: SIGTERM, exit 0 within {STOP_BOUND} s, the {received} batches received answered", ok,
                   f"exit {st} after {secs:.1f} s; stopping line {received}; answered after it {answered}, "
                   f"their client gone {gone}, cut short by the stop {unanswered}; last line {lines[-1:]}; "
                   f"other run lines after the stop: {other[:4]}"))
    # each session's runs: those the server says it answered are those its client got
    server = collections.Counter()
    refused_puts = 0
    for ln in lines:
        m = RUN_LINE.match(ln)
        if m and m.group(2) != "-" and not m.group(3):
            server[m.group(1)] += 1
        if re.match(r"^PUT /v1/blobs/\S+ (503|413) ", ln):
            refused_puts += 1
    bad = []
    unread = 0
    for c in clients:
        unread += c.unread[life.n]
        for (gen, sid) in c.sessions:
            if gen != life.n:
                continue
            got = c.answered[(gen, sid)]
            if server[sid[:8]] != got:
                bad.append(f"{c.name} session {sid[:8]}: the server answered {server[sid[:8]]} runs, "
                           f"the client got {got}")
    checks.append((f"{why}: each session's runs answered by the server were received by its client "
                   f"({sum(1 for c in clients for g, _ in c.sessions if g == life.n)} sessions)", not bad,
                   "; ".join(bad[:4])))
    if unread:
        checks.append((f"{why}: the {unread} bodies refused with their answer unread were refused in the log",
                       unread <= refused_puts, f"{unread} unread, {refused_puts} PUTs 503 or 413 in the log"))
    reports = [ln for ln in lines if "Sanitizer" in ln or "runtime error:" in ln]
    if reports:
        checks.append((f"{why}: no sanitizer report", False, str(reports[:3])))
    life.lines = []  # (all in its file)
    return st, received, nlines


class Quiet:
    """The quiet points: the load paused, the server idle and trimmed."""

    COLS = ["t", "life", "age", "rss_kib", "tensor_bytes", "blobs_and_kept", "low", "high", "blob_cache_bytes",
            "blob_cache_blobs", "kept_bytes", "sessions", "settle_s", "trim_s"]

    def __init__(self, out, consts):
        self.rows = []
        self.consts = consts
        self.f = open(os.path.join(out, "quiet.csv"), "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(self.COLS)
        self.problems = []

    def take(self, clients, final=False):
        life = SRV.life
        t_a = now()
        ok, out = CTL.hold(PAUSE_BOUND)
        if not ok:
            self.problems.append(f"at {t():.0f} s the clients {out} did not pause within {PAUSE_BOUND} s")
            CTL.release()
            return None
        CTL.quiet.set()
        try:
            return self._take(life, clients, t_a, final)
        finally:
            CTL.quiet.clear()
            CTL.release()

    def _take(self, life, clients, t_a, final):
        # no batch queued or running, no body in flight
        end = now() + SETTLE_BOUND
        m = {}
        while now() < end:
            m = SRV.metrics()
            if m.get("tir_batches_queued") == 0 and m.get("tir_batches_running") == 0 and \
                    m.get("tir_inflight_body_bytes") == 0:
                break
            time.sleep(1)
        else:
            self.problems.append(f"at {t():.0f} s the server did not settle within {SETTLE_BOUND} s: "
                                 f"queued {m.get('tir_batches_queued')}, running {m.get('tir_batches_running')}, "
                                 f"in flight {m.get('tir_inflight_body_bytes')}")
            return None
        settled = now()
        # a trim after the pause: asked ever more slowly, each ask being a request
        base = m.get("tir_idle_trims_total", 0)
        gap, end = 0.75, now() + TRIM_BOUND
        while True:
            time.sleep(gap)
            m = SRV.metrics()
            rss = life.rss_kib()
            if m.get("tir_idle_trims_total", 0) > base:
                break
            if now() > end:
                self.problems.append(f"at {t():.0f} s no idle trim within {TRIM_BOUND} s")
                return None
            gap = min(gap * 1.5, 5)
        if os.environ.get("SOAK_SMAPS"):  # for a look at what the RSS is made of
            with open(f"/proc/{life.proc.pid}/smaps") as f, \
                    open(os.path.join(os.environ["SOAK_SMAPS"], f"smaps-{t():.0f}"), "w") as g:
                g.write(f.read())
        kept = sum(c.kept_bytes() for c in clients)
        nblobs = int(m.get("tir_blob_cache_blobs", 0))
        cache = int(m.get("tir_blob_cache_bytes", 0))
        # the blobs' frames and records (the cache's bytes: the records are
        # charged to the tensors' count too), the values kept and their
        # records (what tir_session_value_bytes says beyond the kept
        # tensors the clients count, at most 1 KiB a value); a blob's
        # tensor is its frame less a head of 16 + 8 x rank bytes, its data
        # rounded up to 64: 80 bytes less to 40 more; and the graphs' small
        # constants, at most what calibrate() measured
        # (the cached batch texts' graphs are charged to --max-memory too,
        # and tir_graph_cache_bytes says how much)
        graphs = int(m.get("tir_graph_cache_bytes", 0))
        nvals = int(m.get("tir_session_values", 0))
        records = int(m.get("tir_session_value_bytes", 0)) - kept
        if not 0 <= records <= 1024 * nvals:
            self.problems.append(f"at {t():.0f} s {nvals} kept values cost {records} bytes beside their "
                                 f"tensors ({kept} bytes)")
        expected = cache + kept + max(records, 0) + graphs
        row = {"t": round(t(), 1), "life": life.n, "age": round(now() - life.started, 1), "rss_kib": rss,
               "tensor_bytes": int(m.get("tir_tensor_bytes", -1)), "blobs_and_kept": expected,
               "low": expected - nblobs * 80 - 4096, "high": expected + nblobs * 40 + self.consts + 4096,
               "blob_cache_bytes": cache, "blob_cache_blobs": nblobs, "kept_bytes": kept,
               "sessions": int(m.get("tir_sessions", -1)), "settle_s": round(settled - t_a, 2),
               "trim_s": round(now() - settled, 2), "final": final}
        self.rows.append(row)
        self.w.writerow([row[k] for k in self.COLS])
        self.f.flush()
        say(f"# quiet {t():7.1f} s: life {life.n}, VmRSS {rss / 1024:.1f} MiB, tensors {row['tensor_bytes'] / MiB:.2f} "
            f"MiB (blobs and kept values {expected / MiB:.2f} MiB), {nblobs} blobs, {row['sessions']} sessions")
        return row


class Sampler(threading.Thread):
    COLS = ["t", "life", "pid", "rss_kib", "tir_tensor_bytes", "tir_blob_cache_bytes", "tir_blob_cache_blobs",
            "tir_sessions", "tir_inflight_body_bytes", "tir_batches_queued", "tir_batches_running",
            "tir_idle_trims_total", "requests"]

    def __init__(self, out, every=3.0):
        super().__init__(daemon=True)
        self.f = open(os.path.join(out, "samples.csv"), "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(self.COLS)
        self.every = every
        self.max_rss = 0
        self.n = 0

    def run(self):
        while not CTL.stop.is_set():
            time.sleep(self.every)
            life = SRV.life
            if CTL.quiet.is_set() or not SRV.up.is_set() or not life:
                continue
            m = SRV.metrics()
            rss = life.rss_kib()
            if not m or rss is None:
                continue
            self.max_rss = max(self.max_rss, rss)
            m["requests"] = sum(v for k, v in m.items() if k.startswith("tir_requests_total"))
            self.w.writerow([round(t(), 1), life.n, life.proc.pid, rss] +
                            [int(m.get(k, -1)) for k in self.COLS[4:]])
            self.f.flush()
            self.n += 1


def thirds(rows, key):
    """The medians of key over the first and the last third of rows."""
    k = len(rows) // 3
    return statistics.median(key(r) for r in rows[:k]), statistics.median(key(r) for r in rows[-k:])


def flat(rows, what):
    """Checks that the quiet VmRSS does not trend upward over rows: the last
    third's median within 10% + 16 MiB of the first third's, and the same
    less the tensors held (the server's own memory) within 8 MiB."""
    out = []
    a, b = thirds(rows, lambda r: r["rss_kib"])
    out.append((f"{what}: VmRSS flat at its {len(rows)} quiet points after warm-up (the last third's median "
                f"within 10% + 16 MiB of the first third's)", b <= a * 1.10 + 16 * 1024,
                f"{a / 1024:.1f} MiB -> {b / 1024:.1f} MiB"))
    c, d = thirds(rows, lambda r: r["rss_kib"] - r["tensor_bytes"] // 1024)
    out.append((f"{what}: VmRSS less the tensors held flat (within 8 MiB)", d <= c + 8 * 1024,
                f"{c / 1024:.1f} MiB -> {d / 1024:.1f} MiB"))
    say(f"# {what}: quiet VmRSS median {a / 1024:.1f} MiB (first third) -> {b / 1024:.1f} MiB (last third); "
        f"less the tensors {c / 1024:.1f} -> {d / 1024:.1f} MiB")
    return out


def main():
    global TIR, STOP_TEXT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1800)
    ap.add_argument("--restarts", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--tir", default=TIR)
    ap.add_argument("--quiet-every", type=float, default=30)
    ap.add_argument("--warmup", type=float, default=90)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--clients", default="alice,bob,carol,dave,mallory,tina,edge",
                    help="which kinds of client run (for a look at one)")
    a = ap.parse_args()
    if a.seconds < MIN_SECONDS:
        ap.error(f"--seconds {a.seconds:g}: a soak lasts at least {MIN_SECONDS} s (a quiet point before the "
                 f"restart, one after it, and the last)")
    # a quiet point before the restart and one after it, however short the
    # soak: at most a quarter of it apart (30 s apart, a 60 s soak restarts
    # at 30 s and its first quiet point moves past the end)
    a.quiet_every = min(a.quiet_every, a.seconds / 4)
    TIR = os.path.abspath(a.tir)
    tirnet.TIR = TIR
    if "asan" in TIR:
        # a sanitizer build runs the products at -O1, several times slower:
        # at a load of 9 under AddressSanitizer 120 of them did not finish
        # within STOP_BOUND; the check is that the batch under way is
        # answered, not how long it is
        STOP_TEXT = stop_text(30)
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    restarts = a.restarts if a.restarts is not None else max(1, min(5, int(a.seconds // 300)))
    out = a.out or tempfile.mkdtemp(prefix="tir-soak.")
    os.makedirs(out, exist_ok=True)
    say(f"# soak: {a.seconds:.0f} s, {restarts} restarts, seed {seed}; CSV and logs in {out}")
    checks = []
    if not os.access(TIR, os.X_OK):
        say(f"FAIL tir binary: {TIR} is missing")
        say("0 passed, 1 failed")
        return 1
    pdir = os.path.join(out, "programs")
    os.makedirs(pdir, exist_ok=True)
    progs, long_prog, stop_prog = programs(pdir)
    for p in progs:
        if not p.fresh:
            p.want = p.local(pdir)
    stop_want = float(stop_prog.local(pdir)[1].split()[-1])
    tokens = write_tokens(out)
    lives = []
    clients = []
    stops = []
    try:
        consts = calibrate(out, tokens, progs, pdir)
        SRV.life = start_life(1, 0, out, tokens)
        lives.append(SRV.life)
        SRV.port, SRV.gen = SRV.life.port, 1
        SRV.overhead = probe_overhead()
        SRV.up.set()
        say(f"# server on {SRV.addr()} (pid {SRV.life.proc.pid}): {' '.join(LIMITS)}; tenants "
            + ", ".join(f"{n} {o}".strip() for n, o in TENANTS) + f"; a blob's record {SRV.overhead} B, "
            f"the graphs' small constants {consts} B")
        rnd = random.Random(seed)
        clients = [Alice(f"alice{i}", rnd.randrange(1 << 30), ["memory", "runtime", "program", "key"] if i == 0 else [])
                   for i in range(3)] + [Bob(f"bob{i}", rnd.randrange(1 << 30), i == 0) for i in range(2)] + \
            [Mallory("mallory", rnd.randrange(1 << 30)), Tina("tina", rnd.randrange(1 << 30))]
        runners = [Runner(f"carol{i}", rnd.randrange(1 << 30), progs, pdir) for i in range(2)]
        dave = Dave("dave", rnd.randrange(1 << 30), long_prog, kill_tir=a.seconds >= 120)
        kinds = a.clients.split(",")
        clients = [c for c in clients if c.tenant in kinds]
        runners = runners if "carol" in kinds else []
        members = clients + runners + ([dave] if "dave" in kinds else [])
        proto = clients + [dave]
        CTL.members = members
        quiet = Quiet(out, consts)
        sampler = Sampler(out)
        sampler.start()
        for c in members:
            c.start()
        edge = soak_edge.Edge()
        if "edge" in kinds:
            edge.start(lambda: SRV.port if SRV.up.is_set() else None, token, CTL.stop, CTL.pause.is_set)
        begun = now()
        end = begun + a.seconds
        half = a.seconds / 2
        at_restart = [begun + half * (i + 1) / restarts for i in range(restarts)] if a.seconds >= 120 else \
            [begun + a.seconds * (i + 1) / (restarts + 1) for i in range(restarts)]
        next_quiet = begun + a.quiet_every
        next_note = begun + 60
        while now() < end:
            if SRV.life.proc.poll() is not None:
                ODD.fail(f"the server (life {SRV.life.n}) died: exit {SRV.life.proc.returncode}; its last lines: "
                         f"{SRV.life.lines[-3:]}")
                break
            if at_restart and now() >= at_restart[0]:
                at_restart.pop(0)
                with SRV.action:
                    life = SRV.life
                    s = stop_under_way(life, stop_prog)
                    SRV.windows.append([now(), None])
                    st, received, _ = end_life(life, proto, f"restart {len(lives)}", checks)
                    SRV.up.clear()
                    if s:
                        answered_at_stop(s, stop_want)
                    stops.append((st, received))
                    SRV.life = start_life(life.n + 1, SRV.port, out, tokens)
                    lives.append(SRV.life)
                    SRV.port, SRV.gen = SRV.life.port, SRV.life.n
                    # (a blob's record is the build's: not probed again, as
                    # carol's `tir run --remote` processes may have sent
                    # blobs to the new life before the probe's could count)
                    SRV.windows[-1][1] = now()
                    SRV.up.set()
                say(f"# restart {len(lives) - 1} at {t():.1f} s: exit {st}, {received} batches received at the "
                    f"stop; back on {SRV.addr()} in {SRV.windows[-1][1] - SRV.windows[-1][0]:.1f} s")
                next_quiet = max(next_quiet, now() + a.quiet_every)
                continue
            if now() >= next_quiet:
                quiet.take(clients)
                next_quiet = now() + a.quiet_every
                continue
            if now() >= next_note:
                say(f"# {t():7.1f} s: requests {REQ.total()} ({REQ.total(FAILED)} failed), remote runs "
                    f"{RUNS.total()} ({RUNS.total(FAILED)} failed), kills and drops {sum(dave.kills.values())}")
                next_note = now() + 60
            time.sleep(0.2)
        # the end: the clients stop (deleting their sessions), the sessions of
        # killed clients expire, and the server holds the blobs only
        CTL.stop.set()
        CTL.release()
        for c in members:
            c.join(PAUSE_BOUND)
        edge.join(PAUSE_BOUND)
        stuck = [c.name for c in members if c.is_alive()]
        checks.append(("the clients stopped", not stuck, f"still running: {stuck}"))
        end_sessions = now() + TTL + 30
        while now() < end_sessions and SRV.metrics().get("tir_sessions") != 0:
            time.sleep(1)
        m = SRV.metrics()
        checks.append(("every session gone at the end (deleted, or expired after a kill)",
                       m.get("tir_sessions") == 0, f"tir_sessions {m.get('tir_sessions')}"))
        CTL.members = []
        final = quiet.take([], final=True)
        s = stop_under_way(SRV.life, stop_prog)
        st, received, _ = end_life(SRV.life, proto, "the last stop", checks)
        if s:
            answered_at_stop(s, stop_want)
        stops.append((st, received))
        SRV.up.clear()
    finally:
        CTL.stop.set()
        for life in lives:
            if life.proc.poll() is None:
                life.proc.kill()
                life.proc.wait()

    # ---- what it comes to ----
    rows = quiet.rows
    say(f"# soak: {a.seconds:.0f} s ({a.seconds / 60:.1f} min), seed {seed}, {len(lives) - 1} restarts, out {out}")
    say(f"# requests of the protocol clients and dave: {REQ.total()}")
    for ln in REQ.report():
        say(ln)
    say(f"# tir run --remote processes: {RUNS.total()}")
    for ln in RUNS.report():
        say(ln)
    say("# kills and drops: " + ", ".join(f"{v} {k}" for k, v in sorted(dave.kills.items())))
    say("# stops: " + ", ".join(f"exit {s} with {r} batches received" for s, r in stops))
    warm = [r for r in rows if r["age"] >= min(a.warmup, a.seconds / 8) or r["final"]]
    if rows:
        say(f"# VmRSS at quiet points: first {rows[0]['rss_kib'] / 1024:.1f} MiB, last {rows[-1]['rss_kib'] / 1024:.1f}"
            f" MiB, max {max(r['rss_kib'] for r in rows) / 1024:.1f} MiB ({len(rows)} quiet points, "
            f"{len(warm)} after warm-up); max of all samples {sampler.max_rss / 1024:.1f} MiB ({sampler.n} samples)")
    for life in lives:
        lr = [r for r in warm if r["life"] == life.n]
        if lr:
            say(f"#   life {life.n}: " + " ".join(f"{r['rss_kib'] / 1024:.0f}" for r in lr) + " MiB")

    # the red team against the budget and the tiny batches
    budget_mib = 192
    hwm = max([life.hwm or 0 for life in lives] + [sampler.max_rss])
    say(f"# peak VmRSS {hwm / 1024:.1f} MiB (each life's VmHWM; {sampler.max_rss / 1024:.1f} MiB of the samples "
        f"every 3 s), against --max-memory {budget_mib} MiB (tensors, graphs, request bodies, records: "
        f"tir_tensor_bytes)")
    # Beside what --max-memory charges, the server's own: code and
    # libraries (13 MiB), thread stacks, MHD's buffers (128 KiB a
    # connection) and what the allocator's arenas keep of freed small
    # blocks (55 MiB seen); the released tensors kept for reuse go once
    # the process passes --max-memory and 64 MiB (server.c's OWN_MAX),
    # looked at every 20 ms: 64 MiB of its own, and 64 MiB more for what
    # arrives between two looks and for arenas at their fullest (peaks of
    # 265 to 276 MiB seen, each life's VmHWM, in 60 s and 180 s soaks on a
    # 2-vCPU EPYC shared with 7 other loads; 305 MiB before the trim).
    # A sanitizer build keeps freed memory in quarantine (AddressSanitizer's
    # 256 MiB by default) on top of it, and its shadow memory (an eighth of
    # every byte the process touches: the budget's, the quarantine's): 64 MiB
    # more (595 MiB seen under --max-memory 192M, the upload reserve's 48 MiB
    # held within the budget from the start).
    own = 128 + (320 if "asan" in TIR else 0)
    checks.append((f"peak VmRSS within --max-memory and {own} MiB of the server's own",
                   hwm <= (budget_mib + own) * 1024, f"{hwm} KiB"))
    if TINY:
        ms = sorted(TINY)
        pct = [ms[min(len(ms) - 1, int(len(ms) * q))] for q in (0.5, 0.9, 0.99)]
        say(f"# tiny batches beside the red team: {len(ms)}, median {pct[0]:.1f} ms, 90th {pct[1]:.1f} ms, "
            f"99th {pct[2]:.1f} ms, worst {ms[-1]:.1f} ms")
    checks.append(("tiny batches answered beside the red team (median under 1 s)",
                   "tina" not in kinds or (TINY and sorted(TINY)[len(TINY) // 2] < 1000),
                   f"{len(TINY)} answered"))
    if "edge" in a.clients.split(","):
        for ln in edge.report():
            say(ln)
        checks += edge.checks()
    checks.append(("no request failed", REQ.total(FAILED) == 0, "; ".join(REQ.fails[:6])))
    checks.append(("every tir run --remote printed what a local run prints", RUNS.total(FAILED) == 0 and
                   RUNS.total(OK) > 0, "; ".join(RUNS.fails[:6]) or f"{RUNS.total(OK)} right"))
    checks.append(("the server's log agrees with the kills and drops", ODD.total(FAILED) == 0,
                   "; ".join(ODD.fails[:6])))
    checks.append(("limits met: 503 with Retry-After, 409 missing, 413",
                   all(any(c == EXPECTED and d.startswith(p) for (c, d) in REQ.n) for p in ("503", "409", "413")),
                   str(sorted(d for (c, d) in REQ.n if c == EXPECTED))))
    checks.append(("every quiet point reached (paused, settled, trimmed)", not quiet.problems and len(rows) >= 2,
                   "; ".join(quiet.problems[:4]) or f"{len(rows)} quiet points"))
    off = [r for r in rows if not r["low"] <= r["tensor_bytes"] <= r["high"]]
    checks.append(("at each quiet point tir_tensor_bytes is what the blobs, kept values and the graphs' small "
                   "constants hold", rows and not off,
                   "; ".join(f"at {r['t']} s {r['tensor_bytes']} held, {r['blobs_and_kept']} in blobs and kept "
                             f"values (allowed {r['low']} to {r['high']})" for r in off[:4])))
    if final:
        checks.append(("at the end, only blobs held (and the graphs' small constants)", final["kept_bytes"] == 0 and
                       final["low"] <= final["tensor_bytes"] <= final["high"], str(final)))
    judged = 0
    for life in lives:
        lr = [r for r in warm if r["life"] == life.n]
        if len(lr) >= 6:
            checks += flat(lr, f"life {life.n}")
            judged += 1
    if len(warm) >= 6 and len(lives) > 1:
        checks += flat(warm, "all lives")
        judged += 1
    if not judged:
        say(f"# VmRSS trend not judged: {len(warm)} quiet points after warm-up (6 in one life needed)")

    passed = failed = 0
    for name, ok, why in checks:
        if ok:
            passed += 1
            say(f"ok {name}")
        else:
            failed += 1
            say(f"FAIL {name}: {why}")
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(f"seconds {a.seconds} restarts {len(lives) - 1} seed {seed}\n")
        f.write("\n".join(REQ.report() + RUNS.report()) + "\n")
        f.write("\n".join(f"{'ok' if ok else 'FAIL'} {name}" + ("" if ok else f": {why}") for name, ok, why in checks))
        f.write(f"\n{passed} passed, {failed} failed\n")
    say(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child_main(sys.argv[2:]))
    sys.exit(main())
