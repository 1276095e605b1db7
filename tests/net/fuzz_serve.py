#!/usr/bin/python3
"""tests/net/fuzz_serve.py — a structure-aware protocol fuzzer for `tir serve`.

    fuzz_serve.py [--tir PATH] [--seed N] [--seconds S] [--requests N]
                  [--out DIR] [--timeout S] [--rss-mib N] [--strict-json]
                  [--reset-gone] [--valid-only] [--replay FILE]

It starts its own server (tirnet.Server: a free loopback port; two tenants
from a --tokens file; --max-memory 256M, --blob-cache 16M, --max-body 8M)
and sends it, one request at a time from one thread, so that a seed sends
the same traffic again (only what the server answers differs: its session
ids, what it evicted), a mix of

VALID traffic (3 actions in 10), as a client sends it, every answer checked:
  - sessions made and deleted (201; 204, and a second DELETE 404);
  - blobs: tensor frames of every dtype (bool i32 i64 f32 f64), rank 0 to
    8, axes of 0 included, now and then one over 4 MiB (checked on the
    server's threads), PUT as chunk list + frame (201, or 200 if held);
  - runs: a small program in canonical batch form (`input tK: TYPE`, one
    op a line with its type, or now and then without, `print ...`) from a
    grammar of elementwise ops (unary; binary with broadcasting and weak
    scalars; comparisons; where, not, and, or, clip), reductions (sum
    mean var max min prod argmax argmin; no axis, one, several, [];
    keepdims), movement (reshape transpose squeeze unsqueeze flatten
    slice concat expand pad gather cast), matmul, softmax, log_softmax,
    erf, gelu, layernorm, rmsnorm, max/avgpool2d, conv2d, attention and
    creation ops, over blobs and over values the session kept; `keep`
    and `drop`; the text sent or not (409 for what the server lacks, then
    the PUTs and the text, as a client does, up to four tries);
    fuse/explain/profile.  Every printed value is compared with NumPy:
    dtype and shape exactly, integers and bools (and floats that only
    moved) bit for bit, other floats within a tolerance; what is kept is
    what the server printed, and later runs read it back;
  - runs that must fail as the protocol says: integer division by zero
    (422 runtime at its line), a value over --max-memory (413 memory with
    budget and held), a key never kept (404); nothing they keep or drop
    takes effect;
  - GET and HEAD of /healthz, /v1/info, /metrics.

MUTATED traffic (7 actions in 10; their set-up, e.g. the blobs a mutated run
reads, is valid traffic), the same requests broken at one layer each:
  - tensor frames: dtype, rank, reserved bytes, the data byte count, shape
    values (0, 2^31, 2^32, 2^63, "negative" i64s, products that wrap),
    padding, bool bytes, magic, truncated, extended, bits flipped; with the
    chunk list recomputed (so that the frame decoder is reached) or not;
  - chunk lists: magic (and TIRT: protocol 1's bare frame), chunk size,
    frame size, an entry missing, extra or flipped, a frame byte flipped
    (the 400 bad_hash must name the chunk, past 4 MiB too), the URL's name;
  - run JSON: a field of the wrong type, missing, unknown, duplicated,
    renamed; bindings, keep keys, drop lists broken; 1,000 to 100,000
    entries; nesting 100 to 100,000 deep; huge numbers; bad UTF-8, lone
    surrogates, NULs; truncated, bytes flipped, other top-level values;
  - batch text, token by token (deleted, repeated, swapped, replaced by
    names, ops, dtypes, keywords, punctuation, interesting numbers), or
    whole: shapes made huge, nesting 50 to 5,000 deep, names of 255 to
    10,000 characters, 3,000 more lines, 65 or 1,000 prints, literals of
    50,000 numbers, load/to/all_reduce, CRLF, `;`, UTF-8, NULs; the graph
    hash recomputed (the parser is reached) or not (400 bad_hash);
  - HTTP: methods, paths (dots, slashes, %-escapes, queries, 70 KB, NULs),
    versions, Host missing; Content-Length missing, doubled, malformed,
    huge, lying short (the rest is a second request) or long; chunked
    bodies, well-formed (a blob's: 411) or not; Transfer-Encoding with
    Content-Length; Tir-Protocol and Authorization variants; Expect:
    100-continue; Connection; long, many, folded, nameless, NUL-bearing
    headers; bare LF; requests cut anywhere; sent in small pieces;
    pipelined (2 to 5, the answers checked in order); several connections
    interleaved; clients gone in the middle of headers or a body, or right
    after sending a run (the batch dropped, or stopped while it runs).

ORACLES, each a named check ("ok NAME", or one FAIL line per failure, ten
at most per check):
  - server alive: the process never dies (it is started again, at most 3
    times, so that one run finds more than one crash);
  - no sanitizer report: no "Sanitizer" or "runtime error:" in its log;
  - no 500: never, but code "internal" for out of memory (protocol.md);
  - no hang: every request that is complete is answered within --timeout
    (default 30 s) and none takes more than a third of it; after each
    burst of 20 actions /healthz answers 200 within 10 s;
  - error bodies: every 4xx/5xx of tir's with a body is {"error":
    {"status", "code", "message"}} with status equal to the HTTP status
    and a code of protocol.md's table for it.  libmicrohttpd's own pages
    (HTML, no Tir-Protocol header: a bad version, a header too long, bad
    chunking) are counted as "known" and do not fail; --strict-json makes
    them fail (the one-line change to make the oracle strict: its default);
  - documented answers: where the protocol fixes the answer to a mutation
    it is that one (a field of the wrong kind: 400 bad_request; a flipped
    chunk: 400 bad_hash naming it; Tir-Protocol 1: 400 protocol; a wrong
    token: 401; a 405 for a known path; a chunked blob: 411), every 503
    has Retry-After, every 405 Allow, every answer of tir's Tir-Protocol:
    2, a 200 of a run is a well-formed results body, pipelined answers
    come in order, every answer is HTTP;
  - valid answers right: the valid traffic's answers, as above;
  - memory bounded: at the end, once every session is deleted, nothing is
    counted in flight (tir_inflight_body_bytes 0, no batch queued), the
    tensors held are no more than the blob cache (and each blob's rounding
    to 64 bytes), and the server's VmRSS
    once idle (it gives memory back after 500 ms without a request) is
    under --rss-mib (default 160 MiB: the blob cache's 16, the graph
    cache's 64, kept values, the rest; 512 MiB more under ASan, for its
    quarantine, shadow and caches; a minute of traffic leaves about 65
    and 535);
  - clean stop: SIGTERM ends it with status 0 (LeakSanitizer runs then).

A failure prints the seed, the request's number and what it was; the
request's bytes (.req) and an account (.txt: the program, the last 20
requests, the server's last log lines) are saved under --out.  --replay
FILE sends a saved .req to a fresh server.  A client that goes away
closes with a FIN half the time: libmicrohttpd 0.9.75 may notice that
only at its 30 s connection timeout when the body was not all read
(tirnet.drained), and the check at the end then waits for it;
--reset-gone (the suite's short runs) always resets instead.  Standard
library and NumPy only: Debian's /usr/bin/python3.  The last line is
"N passed, M failed"."""

import argparse
import collections
import json
import math
import os
import random
import re
import shutil
import socket
import struct
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tirnet  # noqa: E402
from tirnet import CHUNK, JsonBody, Server, blob, chunk_list, frame, sha  # noqa: E402

np.seterr(all="ignore")
warnings.simplefilter("ignore")

# ---- dtypes ----

BOOL, I32, I64, F32, F64 = range(5)
DTN = ["bool", "i32", "i64", "f32", "f64"]
# every dtype, in wire order (/v1/info); the programs here use the first five
DTN_ALL = DTN + ["f16", "bf16", "i8", "u8", "i16"]
NPD = [np.bool_, np.int32, np.int64, np.float32, np.float64]


def kind(d):
    return 0 if d == BOOL else 1 if d in (I32, I64) else 2


def is_float(d):
    return d >= F32


def promote(*ds):
    return max(ds)


def weak(tdt, lk):
    """The dtype of tensor dtype tdt with a weak scalar of kind lk (NEP 50)."""
    if lk <= kind(tdt):
        return tdt
    return I64 if lk == 1 else F32


def tstr(dt, shape):
    return f"{DTN[dt]}[{', '.join(str(d) for d in shape)}]"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# The documented codes of each status (docs/protocol.md's error table).
CODES = {400: {"bad_request", "bad_hash", "protocol", "program"}, 401: {"unauthorized"},
         404: {"not_found"}, 405: {"method"}, 409: {"missing"}, 411: {"length_required"},
         413: {"memory", "too_large", "time"}, 422: {"runtime"}, 431: {"too_large"}, 500: {"internal"},
         501: {"not_implemented"}, 503: {"busy"}, 505: {"http_version"}}

# ---- HTTP on raw sockets ----


class Resp(JsonBody):
    __slots__ = ("status", "headers", "body", "head")

    def short(self):
        return f"{self.status} {self.body[:240]!r}"


class Conn:
    """One client connection; responses parsed as they come."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False
        self.used = 0

    def send(self, data, pieces=None):
        """Send data (in pieces, with a pause between, when given); False when the server closed."""
        try:
            if pieces:
                at = 0
                for n in pieces:
                    self.s.sendall(data[at:at + n])
                    at += n
                    time.sleep(0.0005)
                self.s.sendall(data[at:])
            else:
                self.s.sendall(data)
            return True
        except OSError:
            return False

    def _fill(self, deadline):
        """More bytes into buf: 'ok', 'eof' or 'timeout'."""
        if self.eof:
            return "eof"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            self.s.settimeout(left)
            d = self.s.recv(1 << 20)
        except socket.timeout:
            return "timeout"
        except OSError:
            self.eof = True
            return "eof"
        if not d:
            self.eof = True
            return "eof"
        self.buf += d
        return "ok"

    def response(self, deadline, head=False):
        """A Resp, or 'eof' (closed before a whole response), 'timeout', 'garbage'."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            while i < 0:
                if len(self.buf) > 1 << 20:
                    return "garbage"
                st = self._fill(deadline)
                if st != "ok":
                    return "eof" if st == "eof" else "timeout"
                i = self.buf.find(b"\r\n\r\n")
            raw, self.buf = self.buf[:i], self.buf[i + 4:]
            lines = raw.split(b"\r\n")
            m = re.match(rb"HTTP/1\.[01] (\d{3})( .*)?$", lines[0])
            if not m:
                return "garbage"
            r = Resp()
            r.status = int(m.group(1))
            r.head = raw
            r.headers = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(b":")
                r.headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
            if 100 <= r.status < 200:
                continue
            if head or r.status in (204, 304):
                r.body = b""
                return r
            if "chunked" in r.headers.get("transfer-encoding", "").lower():
                body = b""
                while True:
                    j = self.buf.find(b"\r\n")
                    while j < 0:
                        st = self._fill(deadline)
                        if st != "ok":
                            return "eof" if st == "eof" else "timeout"
                        j = self.buf.find(b"\r\n")
                    try:
                        n = int(self.buf[:j].split(b";")[0], 16)
                    except ValueError:
                        return "garbage"
                    while len(self.buf) < j + 2 + n + 2:
                        st = self._fill(deadline)
                        if st != "ok":
                            return "eof" if st == "eof" else "timeout"
                    body += self.buf[j + 2:j + 2 + n]
                    self.buf = self.buf[j + 2 + n + 2:]
                    if n == 0:
                        break
                r.body = body
                return r
            if "content-length" in r.headers:
                try:
                    n = int(r.headers["content-length"])
                except ValueError:
                    return "garbage"
                while len(self.buf) < n:
                    st = self._fill(deadline)
                    if st != "ok":
                        return "eof" if st == "eof" else "timeout"
                r.body, self.buf = self.buf[:n], self.buf[n:]
                return r
            while True:  # to the end of the connection
                st = self._fill(deadline)
                if st == "timeout":
                    return "timeout"
                if st == "eof":
                    r.body, self.buf = self.buf, b""
                    return r

    def close(self, abort=False):
        try:
            if abort:  # a reset, no FIN
                self.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.s.close()
        except OSError:
            pass


def http_bytes(method, path, headers, body=b"", version="HTTP/1.1"):
    h = f"{method} {path} {version}\r\n".encode("latin-1")
    for k, v in headers:
        h += (k if isinstance(k, bytes) else k.encode("latin-1")) + b": " + \
            (v if isinstance(v, bytes) else str(v).encode("latin-1")) + b"\r\n"
    return h + b"\r\n" + body


class Req:
    """A request before it is bytes: what the HTTP mutations work on."""

    def __init__(self, method, path, body=b"", auth=None, route=None):
        self.method, self.path, self.body = method, path, body
        self.version = "HTTP/1.1"
        self.headers = [("Host", "127.0.0.1"), ("Tir-Protocol", "4")]
        if auth:
            self.headers.append(("Authorization", "Bearer " + auth))
        if body or method in ("POST", "PUT"):
            self.headers.append(("Content-Length", str(len(body))))
        self.route = route  # what the answer is checked as, while method and path are unmutated

    def bytes(self):
        return http_bytes(self.method, self.path, self.headers, self.body, self.version)


# ---- the grammar of programs, each value with its NumPy value ----

class V:
    """A value of a generated program: its type, its NumPy value, whether
    the server's must equal it bit for bit (exact), a bound on its
    magnitude, and where it comes from (an input, or an op line)."""
    __slots__ = ("dt", "shape", "a", "exact", "bound", "op", "parts", "name", "src")

    def __init__(self, dt, shape, a, exact, bound, op=False, parts=None):
        self.dt, self.shape, self.exact, self.bound = dt, tuple(shape), exact, bound
        self.a = np.asarray(a).astype(NPD[dt]).reshape(self.shape)
        self.op, self.parts, self.name, self.src = op, parts, None, None


MAXEL = 6000  # elements of a value of a valid program


class Prog:
    def __init__(self, g):
        self.g = g  # the generator (rng, nrng, the session and the blobs it may use)
        self.vals = []
        self.prints = []
        self.line_of = {}

    def leaf(self, dt, shape, a=None):
        if a is None:
            a = self.g.rand_array(dt, shape)
        b = float(np.max(np.abs(a.astype(np.float64)))) if a.size else 0.0
        v = V(dt, shape, a, True, max(b, 1.0))
        self.vals.append(v)
        return v

    def add(self, dt, shape, a, parts, exact, bound):
        shape = tuple(int(d) for d in shape)
        if numel(shape) > MAXEL or len(shape) > 8:
            return None
        a = np.asarray(a)
        if a.shape != shape:
            raise AssertionError(f"model: {parts[0]} gives {a.shape}, expected {shape}")
        v = V(dt, shape, a, exact, max(float(bound), 1.0), op=True, parts=parts)
        self.vals.append(v)
        return v

    def text(self, annotate=True):
        ins = [v for v in self.vals if not v.op]
        ops = [v for v in self.vals if v.op]
        for i, v in enumerate(ins + ops):
            v.name = f"t{i}"
        lines = [f"input {v.name}: {tstr(v.dt, v.shape)}" for v in ins]
        for v in ops:
            e = "".join(p if isinstance(p, str) else p.name for p in v.parts)
            lines.append(f"{v.name}: {tstr(v.dt, v.shape)} = {e}" if annotate else f"{v.name} = {e}")
            self.line_of[v.name] = len(lines)
        lines.append("print " + ", ".join(v.name for v in self.prints))
        return "\n".join(lines) + "\n"


def lit(rng, lk):
    """A weak scalar literal of kind lk: (text, value)."""
    if lk == 0:
        b = rng.random() < 0.5
        return ("true" if b else "false"), b
    if lk == 1:
        k = rng.randint(-3, 3)
        return str(k), k
    t = rng.choice(["0.5", "-1.5", "2.0", "0.25", "-0.75", "1e-3", "3.0"])
    return t, float(t)


def bcast_shape(rng, shape):
    """A shape that broadcasts with shape (the other operand's)."""
    r = rng.random()
    if r < 0.35:
        return tuple(shape)
    if r < 0.55:
        return tuple(shape[rng.randint(0, len(shape)):])  # a suffix
    if r < 0.8:
        return tuple(1 if rng.random() < 0.5 else d for d in shape)
    extra = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 2)))
    return (extra + tuple(shape))[-8:]  # more axes: the result grows


class Gen:
    """Programs of a grammar, over inputs, with NumPy's answers."""

    def __init__(self, rng, nrng):
        self.rng, self.nrng = rng, nrng

    def rand_shape(self, maxel=256):
        rng = self.rng
        r = rng.random()
        rank = 0 if r < 0.12 else 1 if r < 0.4 else 2 if r < 0.7 else 3 if r < 0.85 else rng.randint(4, 8)
        while True:
            s = []
            for i in range(rank):
                q = rng.random()
                s.append(0 if q < 0.06 else 1 if q < 0.25 or rank > 4 else rng.randint(2, 5) if q < 0.9
                         else rng.randint(6, 16))
            if numel(s) <= maxel:
                return tuple(s)

    def rand_array(self, dt, shape):
        n = self.nrng
        if dt == BOOL:
            return n.random(shape) < 0.5
        if dt in (I32, I64):
            return n.integers(-4, 5, size=shape).astype(NPD[dt])
        return n.uniform(-2, 2, size=shape).astype(NPD[dt])

    def rand_dt(self):
        return self.rng.choice([BOOL, I32, I64, F32, F32, F64])

    # -- the ops: each returns a new value, or None when it does not apply --

    def pick(self, p, pred=lambda v: True):
        c = [v for v in p.vals if pred(v)]
        return self.rng.choice(c) if c else None

    def g_unary_float(self, p):
        x = self.pick(p, lambda v: v.bound <= 50)
        if not x:
            return None
        op = self.rng.choice(["exp", "sin", "cos", "tanh", "sigmoid", "silu"])
        if op == "exp" and x.bound > 8:
            op = "tanh"
        rd = F64 if x.dt == F64 else F32
        a = x.a.astype(NPD[rd])
        f = {"exp": np.exp, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
             "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "silu": lambda z: z / (1 + np.exp(-z))}[op]
        b = math.exp(x.bound) if op == "exp" else x.bound if op == "silu" else 1
        return p.add(rd, x.shape, f(a), [op + "(", x, ")"], False, b)

    def g_unary_num(self, p):
        op = self.rng.choice(["neg", "abs", "relu", "floor", "ceil", "round", "sign"])
        disc = op in ("floor", "ceil", "round", "sign")
        x = self.pick(p, lambda v: v.dt != BOOL and (v.exact or not disc or not is_float(v.dt)))
        if not x:
            return None
        f = {"neg": np.negative, "abs": np.abs, "relu": lambda z: np.maximum(z, z.dtype.type(0)),
             "floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign}[op]
        return p.add(x.dt, x.shape, f(x.a), [op + "(", x, ")"], x.exact, x.bound + 1)

    def operand(self, p, x, exact=False):
        """A second operand for x: (parts, dtype, value, weak?, exact, bound)."""
        rng = self.rng
        if rng.random() < 0.3:
            lk = rng.choice([0, 1, 1, 2, 2])
            t, val = lit(rng, lk)
            return t, lk, val, True, True, abs(float(val))
        shape = bcast_shape(rng, x.shape)
        y = self.pick(p, lambda v: v is not x and v.shape == shape and (v.exact or not exact))
        if not y or rng.random() < 0.4:
            y = p.leaf(self.rand_dt(), shape)
        return y, y.dt, y.a, False, y.exact, y.bound

    def g_binary(self, p):
        rng = self.rng
        op = rng.choice(["add", "sub", "mul", "maximum", "minimum", "div"])
        x = self.pick(p, lambda v: v.bound < 1e4)
        if not x:
            return None
        yp, ydt, ya, yweak, yexact, yb = self.operand(p, x)
        rd = weak(x.dt, ydt) if yweak else promote(x.dt, ydt)
        if rd == BOOL and op not in ("maximum", "minimum"):
            return None
        swap = rng.random() < 0.3
        if op == "div":  # floats only (integers floor, and divide by zero), by nothing near 0
            d = np.asarray(x.a if swap else ya, dtype=np.float64)
            if not is_float(rd) or d.size and np.min(np.abs(d)) < 0.2:
                return None
        try:
            shape = np.broadcast_shapes(x.shape, np.shape(ya) if not yweak else ())
        except ValueError:
            return None
        A = x.a.astype(NPD[rd])
        B = np.asarray(ya).astype(NPD[rd])
        if swap:
            A, B = B, A
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
             "minimum": np.minimum, "div": np.true_divide}[op]
        r = np.broadcast_to(f(A, B), shape)
        parts = [op + "(", yp, ", ", x, ")"] if swap else [op + "(", x, ", ", yp, ")"]
        bound = {"add": x.bound + yb, "sub": x.bound + yb, "mul": x.bound * max(yb, 1),
                 "maximum": max(x.bound, yb), "minimum": max(x.bound, yb), "div": max(x.bound, yb) / 0.2}[op]
        exact = x.exact and yexact and (not is_float(rd) or op in ("maximum", "minimum"))
        return p.add(rd, shape, r, parts, exact, bound)

    def g_compare(self, p):
        op = self.rng.choice(["eq", "ne", "lt", "le", "gt", "ge"])
        x = self.pick(p, lambda v: v.exact)
        if not x:
            return None
        yp, ydt, ya, yweak, yexact, yb = self.operand(p, x, exact=True)
        if not yexact:
            return None
        rd = weak(x.dt, ydt) if yweak else promote(x.dt, ydt)
        try:
            shape = np.broadcast_shapes(x.shape, () if yweak else np.shape(ya))
        except ValueError:
            return None
        f = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
             "ge": np.greater_equal}[op]
        r = np.broadcast_to(f(x.a.astype(NPD[rd]), np.asarray(ya).astype(NPD[rd])), shape)
        return p.add(BOOL, shape, r, [op + "(", x, ", ", yp, ")"], True, 1)

    def g_where(self, p):
        c = self.pick(p, lambda v: v.exact)
        a = self.pick(p)
        if not c or not a:
            return None
        b = p.leaf(self.rand_dt(), bcast_shape(self.rng, a.shape))
        rd = promote(a.dt, b.dt)
        try:
            shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
        except ValueError:
            return None
        r = np.where(c.a.astype(bool), a.a.astype(NPD[rd]), b.a.astype(NPD[rd]))
        return p.add(rd, shape, r, ["where(", c, ", ", a, ", ", b, ")"], a.exact and b.exact,
                     max(a.bound, b.bound))

    def g_reduce(self, p):
        rng = self.rng
        op = rng.choice(["sum", "sum", "mean", "var", "max", "min", "argmax"])
        x = self.pick(p, lambda v: (v.exact or op != "argmax") and v.bound < 1e4)
        if not x:
            return None
        r = len(x.shape)
        q = rng.random()
        if q < 0.3 or r == 0:
            axes = None
        elif q < 0.75 or op == "argmax":
            axes = [rng.randint(-r, r - 1)]
        elif q < 0.9:
            axes = sorted(rng.sample(range(r), rng.randint(1, r)))
        else:
            axes = []
        keep = rng.random() < 0.3 and not (op == "argmax" and axes is None)
        red = list(range(r)) if axes is None else [a % r for a in axes]
        if op in ("mean", "var", "max", "min", "argmax") and any(x.shape[a] == 0 for a in red):
            return None
        if op in ("mean", "var") and axes == []:
            return None
        ax = None if axes is None else tuple(a % r for a in axes)
        if op == "argmax":
            rd = I64
            val = np.argmax(x.a, axis=None if ax is None else ax[0])
            if keep:
                val = np.expand_dims(val, ax[0])
        elif op == "sum":
            rd = I64 if x.dt in (BOOL, I32, I64) else x.dt
            val = np.sum(x.a.astype(NPD[rd]), axis=ax, keepdims=keep)
        elif op in ("mean", "var"):
            rd = F64 if x.dt == F64 else F32
            f = np.mean if op == "mean" else np.var
            val = f(x.a.astype(np.float64), axis=ax, keepdims=keep)
        else:
            rd = x.dt
            f = np.max if op == "max" else np.min
            val = f(x.a, axis=ax, keepdims=keep)
        val = np.asarray(val)
        args = [op + "(", x]
        if axes is not None:
            args.append(", axis=" + (str(axes[0]) if len(axes) == 1 and rng.random() < 0.5 or op == "argmax"
                                     else "[" + ", ".join(map(str, axes)) + "]"))
        if keep:
            args.append(", keepdims=true")
        args.append(")")
        n = max(1, numel([x.shape[a] for a in red]))
        bound = {"sum": x.bound * n, "var": x.bound ** 2, "argmax": numel(x.shape)}.get(op, x.bound)
        exact = op in ("max", "min", "argmax") and x.exact or op == "sum" and x.exact and not is_float(rd)
        return p.add(rd, val.shape, val, args, exact, bound)

    def g_move(self, p):
        rng = self.rng
        op = rng.choice(["reshape", "transpose", "squeeze", "unsqueeze", "flatten", "slice", "concat",
                         "expand", "pad", "gather", "cast"])
        x = self.pick(p)
        if not x:
            return None
        r, a = len(x.shape), x.a
        if op == "reshape":
            n = numel(x.shape)
            if n and rng.random() < 0.3:
                shape, spec = (n,), "[-1]"
            else:
                shape = []
                m = n
                for f in (2, 3, 5, 7):
                    while m % f == 0 and m > 1 and rng.random() < 0.6:
                        shape.append(f)
                        m //= f
                shape.append(m)
                rng.shuffle(shape)
                if n == 0:
                    shape = [0] + [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
                spec = "[" + ", ".join(map(str, shape)) + "]"
            return p.add(x.dt, shape, a.reshape(shape), ["reshape(", x, ", " + spec + ")"], x.exact, x.bound)
        if op == "transpose":
            if rng.random() < 0.4 or r < 2:
                return p.add(x.dt, a.T.shape, a.T, ["transpose(", x, ")"], x.exact, x.bound)
            perm = list(range(r))
            rng.shuffle(perm)
            spec = [q - r if rng.random() < 0.2 else q for q in perm]
            t = np.transpose(a, perm)
            return p.add(x.dt, t.shape, t, ["transpose(", x, ", [" + ", ".join(map(str, spec)) + "])"],
                         x.exact, x.bound)
        if op == "squeeze":
            ones = [i for i, d in enumerate(x.shape) if d == 1]
            if ones and rng.random() < 0.5:
                ax = rng.sample(ones, rng.randint(1, len(ones)))
                t = np.squeeze(a, axis=tuple(ax))
                return p.add(x.dt, t.shape, t, ["squeeze(", x, ", axis=[" + ", ".join(map(str, ax)) + "])"],
                             x.exact, x.bound)
            t = np.squeeze(a)
            return p.add(x.dt, t.shape, t, ["squeeze(", x, ")"], x.exact, x.bound)
        if op == "unsqueeze":
            if r >= 8:
                return None
            ax = rng.randint(-(r + 1), r)
            t = np.expand_dims(a, ax)
            return p.add(x.dt, t.shape, t, ["unsqueeze(", x, f", {ax})"], x.exact, x.bound)
        if op == "flatten":
            if r == 0:
                return None
            st = rng.randint(0, r - 1)
            shape = x.shape[:st] + (numel(x.shape[st:]),)
            return p.add(x.dt, shape, a.reshape(shape), ["flatten(", x, f", start={st})"], x.exact, x.bound)
        if op == "slice":
            if r == 0:
                return None
            ax = rng.randint(0, r - 1)
            n = x.shape[ax]
            st = rng.choice([None, rng.randint(-n - 2, n + 2)])
            sp = rng.choice([None, rng.randint(-n - 2, n + 2)])
            step = rng.choice([1, 1, 2, -1, 3, -2])
            idx = [slice(None)] * r
            idx[ax] = slice(st, sp, step)
            t = a[tuple(idx)]
            kw = f", axis={ax}" + ("" if st is None else f", start={st}") + ("" if sp is None else f", stop={sp}") + \
                (f", step={step}" if step != 1 else "")
            return p.add(x.dt, t.shape, t, ["slice(", x, kw + ")"], x.exact, x.bound)
        if op == "concat":
            if r == 0:
                return None
            ax = rng.randint(0, r - 1)
            shape = list(x.shape)
            shape[ax] = rng.randint(0, 3)
            y = x if rng.random() < 0.3 else p.leaf(self.rand_dt(), shape)
            rd = promote(x.dt, y.dt)
            t = np.concatenate([a.astype(NPD[rd]), y.a.astype(NPD[rd])], axis=ax)
            spec = ax - r if rng.random() < 0.2 else ax
            return p.add(rd, t.shape, t, ["concat([", x, ", ", y, f"], axis={spec})"], x.exact and y.exact,
                         max(x.bound, y.bound))
        if op == "expand":
            shape = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2))) + \
                tuple(rng.randint(1, 3) if d == 1 else d for d in x.shape)
            if len(shape) > 8:
                return None
            t = np.broadcast_to(a, shape)
            return p.add(x.dt, shape, t, ["expand(", x, ", [" + ", ".join(map(str, shape)) + "])"], x.exact,
                         x.bound)
        if op == "pad":
            if r == 0 or x.dt == BOOL:
                return None
            pads = [(rng.randint(0, 2), rng.randint(0, 2)) for _ in range(r)]
            v = rng.randint(-2, 2)
            t = np.pad(a, pads, constant_values=v)
            spec = "[" + ", ".join(f"[{b}, {e}]" for b, e in pads) + "]"
            return p.add(x.dt, t.shape, t, ["pad(", x, f", {spec}, value={v})"], x.exact, x.bound + 2)
        if op == "gather":
            if r == 0:
                return None
            ax = rng.randint(0, r - 1)
            n = x.shape[ax]
            if n == 0:
                return None
            ishape = self.rand_shape(16)
            idx = p.leaf(rng.choice([I32, I64]), ishape, self.nrng.integers(0, n, size=ishape))
            t = np.take(a, idx.a, axis=ax)
            return p.add(x.dt, t.shape, t, ["gather(", x, ", ", idx, f", axis={ax})"], x.exact, x.bound)
        # cast: a float to an integer or bool only when the float is exact
        td = self.rand_dt()
        if is_float(x.dt) and not is_float(td) and not x.exact:
            return None
        if x.bound > 1e6:
            return None
        t = a.astype(NPD[td])
        return p.add(td, x.shape, t, ["cast(", x, f", {DTN[td]})"], x.exact, 1 if td == BOOL else x.bound + 1)

    def g_matmul(self, p):
        rng = self.rng
        x = self.pick(p, lambda v: v.dt != BOOL and 1 <= len(v.shape) <= 3 and v.bound < 100)
        if not x:
            return None
        k = x.shape[-1]
        n = rng.randint(0, 4)
        q = rng.random()
        yshape = (k,) if q < 0.25 else (k, n) if q < 0.75 else (rng.randint(1, 2), k, n)
        y = p.leaf(rng.choice([I32, F32, F32, F64]), yshape)
        rd = promote(x.dt, y.dt)
        try:
            t = np.matmul(x.a.astype(NPD[rd]), y.a.astype(NPD[rd]))
        except ValueError:  # batch axes that do not broadcast
            return None
        if numel(t.shape) > MAXEL:
            return None
        return p.add(rd, t.shape, t, ["matmul(", x, ", ", y, ")"], not is_float(rd),
                     x.bound * y.bound * max(k, 1))

    def g_softmax(self, p):
        x = self.pick(p, lambda v: len(v.shape) >= 1 and v.shape[-1] > 0 and v.bound < 50)
        if not x:
            return None
        rd = F64 if x.dt == F64 else F32
        a = x.a.astype(np.float64)
        e = np.exp(a - np.max(a, axis=-1, keepdims=True))
        if self.rng.random() < 0.5:
            return p.add(rd, x.shape, e / e.sum(axis=-1, keepdims=True), ["softmax(", x, ", axis=-1)"], False, 1)
        ls = (a - np.max(a, axis=-1, keepdims=True)) - np.log(e.sum(axis=-1, keepdims=True))
        return p.add(rd, x.shape, ls, ["log_softmax(", x, ")"], False, 2 * x.bound + 10)

    def g_create(self, p):
        rng = self.rng
        op = rng.choice(["zeros", "ones", "full", "arange", "eye"])
        if op == "arange":
            st, sp, step = rng.randint(-3, 3), rng.randint(-3, 12), rng.choice([1, 2, 3, -1])
            t = np.arange(st, sp, step, dtype=np.int64)
            return p.add(I64, t.shape, t, [f"arange({st}, {sp}, {step})"], True, 12)
        if op == "eye":
            n = rng.randint(0, 5)
            return p.add(F32, (n, n), np.eye(n, dtype=np.float32), [f"eye({n})"], True, 1)
        shape = self.rand_shape(64)
        spec = "[" + ", ".join(map(str, shape)) + "]"
        dt = rng.choice([None, BOOL, I32, I64, F32, F64])
        dts = "" if dt is None else f", dtype={DTN[dt]}"
        dt = F32 if dt is None else dt
        if op == "full":
            v = rng.randint(-3, 3)
            return p.add(dt, shape, np.full(shape, v).astype(NPD[dt]), [f"full({spec}, {v}{dts})"], True, 3)
        t = (np.zeros if op == "zeros" else np.ones)(shape, dtype=NPD[dt])
        return p.add(dt, shape, t, [f"{op}({spec}{dts})"], True, 1)

    def g_logic(self, p):
        rng = self.rng
        op = rng.choice(["not", "and", "or", "clip"])
        x = self.pick(p, lambda v: v.exact)
        if not x:
            return None
        if op == "not":
            return p.add(BOOL, x.shape, x.a == 0, ["not(", x, ")"], True, 1)
        if op == "clip":  # weak bounds: the tensor's dtype unless of a higher kind
            if x.dt == BOOL:
                return None
            (lo, vlo), (hi, vhi) = sorted([lit(rng, 1), lit(rng, rng.choice([1, 2]))], key=lambda q: q[1])
            rd = weak(weak(x.dt, 2 if isinstance(vlo, float) else 1), 2 if isinstance(vhi, float) else 1)
            r = np.minimum(np.maximum(x.a.astype(NPD[rd]), NPD[rd](vlo)), NPD[rd](vhi))
            return p.add(rd, x.shape, r, ["clip(", x, f", {lo}, {hi})"], True, max(abs(vlo), abs(vhi)))
        y = p.leaf(self.rand_dt(), bcast_shape(rng, x.shape))
        try:
            shape = np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            return None
        f = np.logical_and if op == "and" else np.logical_or
        return p.add(BOOL, shape, f(x.a != 0, y.a != 0), [op + "(", x, ", ", y, ")"], True, 1)

    def g_more(self, p):
        """prod, argmin, erf, gelu: reductions and unary ops past the first grammar."""
        rng = self.rng
        op = rng.choice(["prod", "argmin", "erf", "gelu"])
        if op in ("erf", "gelu"):
            x = self.pick(p, lambda v: v.bound < 50)
            if not x:
                return None
            rd = F64 if x.dt == F64 else F32
            a = x.a.astype(np.float64)
            e = np.vectorize(math.erf, otypes=[np.float64])(a / (math.sqrt(2) if op == "gelu" else 1)) \
                if a.size else a
            r = e if op == "erf" else 0.5 * a * (1 + e)
            return p.add(rd, x.shape, r, [op + "(", x, ")"], False, x.bound + 1)
        x = self.pick(p, lambda v: numel(v.shape) <= 16 and (v.exact or op == "prod") and v.bound <= 4 and
                      (numel(v.shape) > 0 or op == "prod"))
        if not x:
            return None
        r = len(x.shape)
        ax = rng.randint(-r, r - 1) if r and rng.random() < 0.6 else None
        if op == "argmin":
            val = np.argmin(x.a, axis=None if ax is None else ax % r)
            return p.add(I64, np.shape(val), val, ["argmin(", x, "" if ax is None else f", axis={ax}", ")"], True,
                         numel(x.shape))
        rd = I64 if x.dt in (BOOL, I32, I64) else x.dt
        val = np.prod(x.a.astype(NPD[rd]), axis=None if ax is None else ax % r)
        return p.add(rd, np.shape(val), val, ["prod(", x, "" if ax is None else f", axis={ax}", ")"],
                     x.exact and not is_float(rd), 4.0 ** numel(x.shape))

    def g_nn(self, p):
        """layernorm, rmsnorm, pooling, conv2d, attention: each over inputs of its own."""
        rng = self.rng
        op = rng.choice(["layernorm", "rmsnorm", "maxpool2d", "avgpool2d", "conv2d", "attention"])
        fdt = rng.choice([F32, F32, F64])
        if op in ("layernorm", "rmsnorm"):
            x = self.pick(p, lambda v: len(v.shape) >= 1 and v.shape[-1] > 0 and v.bound < 50)
            if not x:
                return None
            d = x.shape[-1]
            w = p.leaf(fdt, (d,))
            a = x.a.astype(np.float64)
            rd = F64 if F64 in (x.dt, w.dt) else F32
            if op == "rmsnorm":
                r = a / np.sqrt(np.mean(a * a, axis=-1, keepdims=True) + 1e-6) * w.a
                return p.add(rd, x.shape, r, ["rmsnorm(", x, ", ", w, ")"], False, 1e3 * w.bound)
            b = p.leaf(fdt, (d,))
            rd = F64 if F64 in (x.dt, w.dt, b.dt) else F32
            c = a - a.mean(axis=-1, keepdims=True)
            r = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5) * w.a + b.a
            return p.add(rd, x.shape, r, ["layernorm(", x, ", ", w, ", ", b, ")"], False, 1e3 * w.bound + b.bound)
        N, C, H, W = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6)
        if op in ("maxpool2d", "avgpool2d"):
            x = p.leaf(rng.choice([I32, F32, F64]), (N, C, H, W))
            kh, kw = rng.randint(1, H), rng.randint(1, W)
            sh, sw = rng.randint(1, 3), rng.randint(1, 3)
            oh, ow = (H - kh) // sh + 1, (W - kw) // sw + 1
            win = np.array([[x.a[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] for j in range(ow)] for i in range(oh)])
            if op == "maxpool2d":
                r, rd, ex = win.max(axis=(4, 5)).transpose(2, 3, 0, 1), x.dt, True
            else:
                r, rd, ex = win.astype(np.float64).mean(axis=(4, 5)).transpose(2, 3, 0, 1), \
                    F64 if x.dt == F64 else F32, False
            return p.add(rd, (N, C, oh, ow), r, [op + "(", x, f", [{kh}, {kw}], stride=[{sh}, {sw}])"], ex, x.bound)
        if op == "conv2d":
            O, kh, kw = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3)
            ph, pw, sh, sw = rng.randint(0, 1), rng.randint(0, 1), rng.randint(1, 2), rng.randint(1, 2)
            if H + 2 * ph < kh or W + 2 * pw < kw:
                return None
            x, w = p.leaf(fdt, (N, C, H, W)), p.leaf(fdt, (O, C, kh, kw))
            bias = p.leaf(fdt, (O,)) if rng.random() < 0.5 else None
            xp = np.pad(x.a.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
            oh, ow = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
            r = np.zeros((N, O, oh, ow))
            for i in range(oh):
                for j in range(ow):
                    r[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw], w.a)
            if bias is not None:
                r += bias.a.reshape(1, O, 1, 1)
            rd = F64 if fdt == F64 else F32
            parts = ["conv2d(", x, ", ", w] + ([", ", bias] if bias is not None else []) + \
                [f", stride=[{sh}, {sw}], padding=[{ph}, {pw}])"]
            return p.add(rd, (N, O, oh, ow), r, parts, False, 40)
        B, Lq, Lk, d, dv = rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 3)
        q, k, v = p.leaf(fdt, (B, Lq, d)), p.leaf(fdt, (B, Lk, d)), p.leaf(fdt, (B, Lk, dv))
        causal = rng.random() < 0.4
        s_ = q.a.astype(np.float64) @ np.swapaxes(k.a.astype(np.float64), -1, -2) / math.sqrt(d)
        if causal:
            s_ = np.where(np.arange(Lk)[None, :] > np.arange(Lq)[:, None], -np.inf, s_)
        e = np.exp(s_ - s_.max(axis=-1, keepdims=True))
        r = (e / e.sum(axis=-1, keepdims=True)) @ v.a.astype(np.float64)
        rd = F64 if fdt == F64 else F32
        return p.add(rd, (B, Lq, dv), r, ["attention(", q, ", ", k, ", ", v, ", causal=true)" if causal else ")"],
                     False, 2)

    OPS = ("g_unary_float", "g_unary_num", "g_binary", "g_binary", "g_compare", "g_where", "g_reduce",
           "g_reduce", "g_move", "g_move", "g_move", "g_matmul", "g_softmax", "g_create", "g_logic", "g_more",
           "g_nn")

    def program(self, leaves):
        """A program: leaves is a list of (dtype, shape, array or None) to start from."""
        p = Prog(self)
        for dt, shape, a in leaves:
            p.leaf(dt, shape, a)
        nops = self.rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8])
        tries = 0
        while sum(v.op for v in p.vals) < nops and tries < 60:
            tries += 1
            getattr(self, self.rng.choice(self.OPS))(p)
        ops = [v for v in p.vals if v.op]
        pool = ops or p.vals
        p.prints = [pool[-1]] + [self.rng.choice(p.vals) for _ in range(self.rng.choice([0, 0, 1, 2]))]
        return p


# ---- what the mutators draw from ----

M64 = (1 << 64) - 1
INTERESTING64 = [0, 1, 7, 8, 255, 1 << 16, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32, (1 << 32) + 1,
                 1 << 33, 1 << 40, 1 << 62, (1 << 63) - 1, 1 << 63, M64, M64 - 7, -2 & M64, -(1 << 32) & M64]
NUMBERS = ["0", "-1", "1", "2", "-0", "0.0", "-0.0", "1e-400", "1e400", "9e18", "2147483647", "2147483648",
           "4294967295", "4294967296", "4294967297", "9223372036854775807", "9223372036854775808",
           "18446744073709551616", "1" * 401, "nan", "inf", "-inf", "0x10", "1e", "1.2.3", "007", ".5", "5.",
           "65536", "100000", "-9223372036854775808", "3000"]
PUNCT = ["(", ")", "[", "]", ",", "=", ":", ";", "@", "+", "-", "*", "/", "#", '"', "\n", " ", "[]", "[[", "]]",
         "\\", "\x00", "\r", "\t", "\u00e9", "\u2028", "\ufeff", "\U0001d465", "\xff", "{", "}", "!", "'"]
WORDS = ["print", "input", "true", "false", "inf", "nan", "bool", "i32", "i64", "f32", "f64", "axis=", "keepdims=",
         "dtype=", "shape=", "seed=", "start=", "stop=", "step=", "value=", "perm=", "causal=", "op=", "device=",
         'load("w.npy")', 'load("/etc/passwd")', 'to(t0, "remote:1")', "all_reduce(t0)", 'all_reduce(t0, op=max)',
         "t0", "t1", "t99", "_t1", "x", "print t0", "input t9: f32[3]"]
JSON_JUNK = [0, -1, 1.5, 1e300, None, True, False, [], {}, "", "x", [1, 2], {"a": 1}, "0" * 64, "A" * 64,
             "g" * 64, "k" * 65, ["k"], {"blob": 5}]
FIELDS = {"graph": str, "text": str, "inputs": dict, "keep": dict, "drop": list, "fuse": bool, "explain": bool,
          "profile": bool}
METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT", "PROPFIND", "FOO", "G",
           "GET" * 40, "P\tOST", "get"]
ALLOWED = {"healthz": {"GET", "HEAD"}, "info": {"GET", "HEAD"}, "metrics": {"GET", "HEAD"}, "sessions": {"POST"},
           "run": {"POST"}, "session": {"DELETE"}, "blob": {"PUT"}}
TOKEN_RX = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|"(?:[^"\\\n]|\\.)*"|#[^\n]*'
                      r'|\r?\n|[ \t]+|.', re.S)
SANITIZER_RX = re.compile(r"Sanitizer|runtime error:")


class Tenant:
    def __init__(self, name, token):
        self.name, self.token = name, token
        self.reset()

    def reset(self):
        self.sessions = []                    # the valid traffic's
        self.scratch = []                     # the mutated traffic's session ids
        self.blobs = collections.OrderedDict()  # name -> (array, PUT body, frame bytes): sent lately
        self.graphs = set()                   # texts the server was sent
        self.conn = None                      # the valid traffic's keep-alive connection
        self.sconn = None                     # the mutated traffic's, for well-formed HTTP


class Session:
    def __init__(self, sid):
        self.id = sid
        self.values = {}                      # key -> the array the server holds (it printed it)
        self.nkey = 0
        self.last = time.monotonic()


class Ex:
    """One exchange: the bytes sent, the requests in them (each a HEAD or
    not), how many must be answered, what the first answer may be."""

    def __init__(self, desc, data, heads=(False,), must=1, wait=0.3, expect=None, route=None, pieces=None,
                 gone=False, tenant=None, detail=""):
        self.desc, self.data, self.heads, self.must, self.wait = desc, data, list(heads), must, wait
        self.expect, self.route, self.pieces, self.gone, self.tenant = expect, route, pieces, gone, tenant
        self.detail = detail


def dt_of(a):
    return tirnet.DTYPES.index(a.dtype)


class Fuzzer:
    TTL = 60
    # sessions: room for those the mutated traffic makes and loses track of
    # (an answer that came after it stopped waiting), until the TTL ends them
    SERVER_ARGS = ["--max-memory", "256M", "--blob-cache", "16M", "--max-body", "8M", "--max-sessions", "256",
                   "--session-ttl", str(TTL), "--threads", "2"]

    def __init__(self, a):
        self.a = a
        self.seed = a.seed
        self.rng = random.Random(a.seed)
        self.nrng = np.random.default_rng(a.seed)
        self.gen = Gen(self.rng, self.nrng)
        self.n = 0                                   # requests sent
        self.nvalid = self.nmut = self.nchecked = 0
        self.stats = collections.Counter()
        self.statuses = collections.Counter()
        self.fails = collections.OrderedDict()
        self.recent = collections.deque(maxlen=20)
        self.saved = 0
        self.tmp = tempfile.mkdtemp(prefix="tir-fuzz-serve.")
        self.tokens = os.path.join(self.tmp, "tokens")
        with open(self.tokens, "w") as f:
            # root: an admin, whose /metrics has every figure (the fuzzer's own view)
            f.write("alice alice-token-0123\nbob b0b-token-4567 sessions=128 inflight=24M\n"
                    "root root-token-89ab admin\n")
        os.chmod(self.tokens, 0o600)
        self.tenants = [Tenant("alice", "alice-token-0123"), Tenant("bob", "b0b-token-4567")]
        self.asan = b"__asan_init" in open(a.tir, "rb").read()
        self.srv = None
        self.scan_at = 0
        self.ops = []
        self.restarts = 0
        self.peak_rss = self.end_rss = 0
        self.secs = 0.0
        self.last_fin = -1e9
        self.took = collections.Counter()
        self.did = collections.Counter()

    # ---- the server ----

    def start(self):
        env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1"),
               "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "print_stacktrace=1")}
        self.srv = Server("--tokens", self.tokens, *self.SERVER_ARGS, env=env)
        self.scan_at = 0
        for t in self.tenants:
            t.reset()
        if not self.ops:
            c = Conn(self.srv.port)
            c.send(http_bytes("GET", "/v1/info", [("Host", "x")]))
            r = c.response(time.monotonic() + 30)
            c.close()
            self.ops = (r.json() or {}).get("ops", []) if isinstance(r, Resp) else []

    def log_tail(self, n=30):
        return "\n".join(list(self.srv.lines)[-n:])

    # ---- failures ----

    def fail(self, check, what, ex=None, detail=""):
        lst = self.fails.setdefault(check, [])
        lst.append(what)
        where = ""
        if self.saved < 60:
            self.saved += 1
            os.makedirs(self.a.out, exist_ok=True)
            slug = re.sub(r"[^a-z0-9]+", "-", check.lower()).strip("-")
            base = os.path.join(self.a.out, f"seed{self.seed}-req{self.n}-{slug}")
            with open(base + ".txt", "w") as f:
                f.write(f"seed {self.seed}, request {self.n}: {check}: {what}\n")
                f.write(f"rerun: {sys.argv[0]} --tir {self.a.tir} --seed {self.seed}\n")
                if ex:
                    f.write(f"\nthe request: {ex.desc}\n{ex.detail}\n{ex.data[:4096]!r}\n")
                if detail:
                    f.write("\n" + detail + "\n")
                f.write("\nthe requests before it:\n")
                for n, d, data in self.recent:
                    f.write(f"  {n}: {d}: {len(data)} bytes: {data[:200]!r}\n")
                f.write("\nthe server's last log lines:\n" + self.log_tail(60) + "\n")
            # the request's bytes; with no request to blame (the server died, a
            # report in its log), the last three, in order
            with open(base + ".req", "wb") as f:
                for _, _, data in ([(0, 0, ex.data)] if ex else list(self.recent)[-3:]):
                    f.write(data)
            where = f"; saved {base}.txt"
        if len(lst) <= 10:
            more = " (more are not printed)" if len(lst) == 10 else ""
            line = " " + repr(ex.data.split(b"\r\n", 1)[0][:100]) if ex else ""
            print(f"FAIL [seed {self.seed}] {check}: request {self.n}" + (f" ({ex.desc}){line}" if ex else "") +
                  f": {what}{where}{more}", flush=True)

    # ---- sending and the oracles every answer goes through ----

    def exchange(self, ex, conn=None):
        self.n += max(1, len(ex.heads))
        self.recent.append((self.n, ex.desc, ex.data))
        fresh = conn is None
        try:
            c = conn or Conn(self.srv.port)
        except OSError as e:
            self.fail("no hang", f"cannot connect: {e}", ex)
            return []
        c.send(ex.data, ex.pieces)
        if ex.gone:
            c.close(abort=self.gone_abort())
            return []
        outs = []
        for i, head in enumerate(ex.heads):
            wait = self.a.timeout if i < ex.must else ex.wait
            t0 = time.monotonic()
            r = c.response(t0 + wait, head)
            outs.append(r)
            if isinstance(r, Resp) and time.monotonic() - t0 > self.a.timeout / 3:
                self.fail("no hang", f"answered after {time.monotonic() - t0:.1f} s: {r.short()[:100]}", ex)
            if not isinstance(r, Resp) or r.headers.get("connection", "").lower() == "close":
                break
        if fresh:
            c.close(abort=bool(c.buf) or len(outs) < len(ex.heads))
        for i, r in enumerate(outs):
            if isinstance(r, Resp):
                self.check_resp(ex, i, r)
            elif r == "timeout" and i < ex.must:
                self.fail("no hang", f"no answer within {self.a.timeout:.0f} s", ex)
            elif r == "garbage":
                self.fail("documented answers", "an answer that is not HTTP/1.x", ex)
            elif r == "timeout":
                self.stats["silent (the server waits for more)"] += 1
            else:
                self.stats["closed without an answer"] += 1
        return outs

    def check_resp(self, ex, i, r):
        self.statuses[r.status] += 1
        ctype = r.headers.get("content-type", "")
        tirs = "tir-protocol" in r.headers
        e = r.err()
        if r.status == 500:
            if e.get("code") == "internal" and "memory" in str(e.get("message")):
                self.stats["500 internal: out of memory (documented)"] += 1
            else:
                self.fail("no 500", r.short(), ex)
        if r.status >= 400 and r.body:
            if tirs and ctype.startswith("application/json"):
                j = r.json()
                ok = isinstance(j, dict) and list(j) == ["error"] and isinstance(e.get("message"), str) and \
                    e.get("status") == r.status and e.get("code") in CODES.get(r.status, ())
                if not ok:
                    self.fail("error bodies", "not a JSON error of protocol.md's table: " + r.short(), ex)
            else:
                self.stats["known: an error page that is not JSON (libmicrohttpd's own)"] += 1
                if self.a.strict_json:
                    self.fail("error bodies", "not JSON: " + r.short(), ex)
        if tirs:
            if r.headers["tir-protocol"] != "4":
                self.fail("documented answers", "Tir-Protocol: " + r.headers["tir-protocol"], ex)
            if r.status == 503 and "retry-after" not in r.headers:
                self.fail("documented answers", "a 503 without Retry-After: " + r.short(), ex)
            if r.status == 405 and "allow" not in r.headers:
                self.fail("documented answers", "a 405 without Allow: " + r.short(), ex)
        elif r.status < 400:
            self.fail("documented answers", f"a {r.status} without Tir-Protocol", ex)
        if ex.expect is not None and i == 0 and r.status not in ex.expect and (r.status, e.get("code")) not in \
                ex.expect and (r.status, "busy") != (503, e.get("code")) and \
                (r.body or r.status not in {x[0] for x in ex.expect if isinstance(x, tuple)}):
            self.fail("documented answers", f"{r.short()}; expected one of {sorted(map(str, ex.expect))}", ex)
        if r.status == 200 and ctype == "application/x-tir-results":
            try:
                meta, _ = tirnet.results(r.body)
                assert {"plan_ms", "run_ms", "peak_bytes", "nops", "nkernels", "plan_cached", "graph_cached"} <= \
                    set(meta), "metadata lacks a field"
            except Exception as x:  # noqa: BLE001 (any way of being malformed)
                self.fail("documented answers", f"a malformed results body ({type(x).__name__}: {x})", ex)
        if r.status == 201 and ctype.startswith("application/json"):
            j = r.json() or {}
            if isinstance(j.get("session"), str) and ex.tenant:
                ex.tenant.scratch.append(j["session"])  # a session the mutated traffic may use
        rt = ex.route if i == 0 else None
        if rt == "healthz" and r.status == 200 and not ex.heads[0] and r.body != b"ok":
            self.fail("documented answers", "/healthz: " + r.short(), ex)
        if rt == "sessions" and r.status == 201:
            j = r.json() or {}
            if not re.fullmatch(r"[0-9a-f]{32}", str(j.get("session"))) or j.get("ttl") != self.TTL:
                self.fail("documented answers", "POST /v1/sessions: " + r.short(), ex)
        if rt == "session" and r.status == 204 and r.body:
            self.fail("documented answers", "a 204 with a body", ex)
        if isinstance(rt, tuple) and r.status in (200, 201):  # ("blob", name, frame bytes)
            j = r.json() or {}
            if j.get("blob") != rt[1] or j.get("bytes") != rt[2]:
                self.fail("documented answers", f"PUT of a blob of {rt[2]} bytes: " + r.short(), ex)

    def gone_abort(self):
        """How a client goes away: a reset, or a FIN.  After a FIN in the
        middle of a body libmicrohttpd 0.9.75 may notice the end only at its
        30 s connection timeout (tirnet.drained), and the body stays counted
        in flight until then: the check at the end waits that long after one."""
        if self.a.reset_gone or self.rng.random() < 0.5:
            return True
        self.last_fin = time.monotonic()
        return False

    # ---- valid traffic ----

    def valid(self, t, req, desc, detail=""):
        """req on t's keep-alive connection, as a client sends it (a 503 is
        sent again, a connection closed under a kept one opened again):
        (Resp or None, the exchange)."""
        data = req.bytes()
        self.nvalid += 1
        busy = 0
        ex = None
        for attempt in range(120):
            if t.conn is None:
                t.conn = Conn(self.srv.port)
            reused = t.conn.used > 0
            ex = Ex(desc, data, [req.method == "HEAD"], route=req.route, detail=detail)
            outs = self.exchange(ex, t.conn)
            t.conn.used += 1
            r = outs[0] if outs else "eof"
            if not isinstance(r, Resp) or r.headers.get("connection", "").lower() == "close" or t.conn.eof:
                t.conn.close()
                t.conn = None
            # sent again for 45 s in all (a client, for TIR_TIMEOUT): bodies cut
            # short with a FIN may hold --max-inflight for 30 s (gone_abort)
            if isinstance(r, Resp) and r.status == 503 and busy < 100 and req.route != "sessions":
                busy += 1
                self.stats["valid: 503 busy, sent again"] += 1
                time.sleep(min(0.02 * busy, 0.5))
                continue
            if isinstance(r, Resp):
                return r, ex
            if r == "eof" and reused and attempt == 0:
                continue  # a kept connection the server had closed
            if r == "eof":
                self.fail("valid answers right", "the connection closed without an answer", ex)
            return None, ex
        return None, ex

    def expect_valid(self, r, ex, want, what):
        if r is not None and r.status not in want:
            self.fail("valid answers right", f"{what}: {r.short()}; expected {sorted(want)}", ex)
            return False
        return r is not None

    def new_session(self, t):
        for attempt in range(3):
            r, ex = self.valid(t, Req("POST", "/v1/sessions", b"", t.token, route="sessions"), "POST /v1/sessions")
            if r is None:
                return None
            if r.status == 201:
                return (r.json() or {}).get("session")
            if r.status == 503 and attempt < 2:  # full: the mutated traffic's go first
                for u in self.tenants:
                    while u.scratch:
                        self.delete_session(u, u.scratch.pop())
                continue
            if r.status == 503:
                self.stats["valid: no session made: " + re.sub(r"\d+", "N", str(r.err().get("message")))[:80]] += 1
                return None
            self.expect_valid(r, ex, {201}, "POST /v1/sessions")
            return None
        return None

    def delete_session(self, t, sid, twice=False):
        r, ex = self.valid(t, Req("DELETE", f"/v1/sessions/{sid}", b"", t.token, route="session"), "DELETE session")
        self.expect_valid(r, ex, {204, 404}, "DELETE /v1/sessions/ID")
        if twice:
            r, ex = self.valid(t, Req("DELETE", f"/v1/sessions/{sid}", b"", t.token, route="session"),
                               "DELETE session again")
            if r is not None and (r.status, r.err().get("code")) != (404, "not_found"):
                self.fail("valid answers right", "a second DELETE: " + r.short(), ex)

    def valid_session(self, t):
        if len(t.sessions) < 3 and (not t.sessions or self.rng.random() < 0.2):
            sid = self.new_session(t)
            if sid:
                t.sessions.append(Session(sid))
        if not t.sessions:
            return None
        s = self.rng.choice(t.sessions)
        if time.monotonic() - s.last > self.TTL - 10:  # about to expire: let it go
            t.sessions.remove(s)
            return None
        return s

    def scratch(self, t):
        if len(t.scratch) < 2 or self.rng.random() < 0.03:
            sid = self.new_session(t)
            if sid:
                t.scratch.append(sid)
        while len(t.scratch) > 6:
            self.delete_session(t, t.scratch.pop(0))
        return self.rng.choice(t.scratch) if t.scratch else "0" * 32

    def put(self, t, body, name, flen, a=None, what="PUT blob"):
        r, ex = self.valid(t, Req("PUT", "/v1/blobs/" + name, body, t.token, route=("blob", name, flen)), what)
        ok = self.expect_valid(r, ex, {200, 201}, "PUT /v1/blobs/NAME")
        if ok and a is not None:
            t.blobs[name] = (a, body, flen)
            t.blobs.move_to_end(name)
            while len(t.blobs) > 64:
                t.blobs.popitem(last=False)
        return ok

    def v_put(self, t):
        rng = self.rng
        if rng.random() < 0.02:  # over 4 MiB: checked on the server's threads
            a = self.nrng.standard_normal(rng.randint(1 << 20, (1 << 20) + 70000)).astype(np.float32)
        else:
            a = self.gen.rand_array(self.gen.rand_dt(), self.gen.rand_shape())
        f = frame(a)
        name, body = blob(f)
        self.put(t, body, name, len(f), a if a.size <= MAXEL else None)

    def make_prog(self, t, s=None):
        leaves = []
        for _ in range(self.rng.choice([1, 1, 2, 2, 3])):
            q = self.rng.random()
            if s and s.values and q < 0.3:
                key = self.rng.choice(sorted(s.values))
                a = s.values[key]
                leaves.append((dt_of(a), a.shape, a, ("value", key)))
            elif t.blobs and q < 0.6:
                a = t.blobs[self.rng.choice(list(t.blobs))][0]
                leaves.append((dt_of(a), a.shape, a, None))
            else:
                leaves.append((self.gen.rand_dt(), self.gen.rand_shape(), None, None))
        p = self.gen.program([lf[:3] for lf in leaves])
        for v, lf in zip(p.vals, leaves):
            v.src = lf[3]
        return p

    @staticmethod
    def bindings(p):
        ins, bodies = {}, {}
        for v in p.vals:
            if v.op:
                continue
            if v.src:
                ins[v.name] = {"value": v.src[1]}
                continue
            f = frame(v.a)
            h, body = blob(f)
            ins[v.name] = {"blob": h}
            bodies[h] = (body, v.a, len(f))
        return ins, bodies

    def compare(self, got, v):
        if got.dtype != NPD[v.dt] or got.shape != v.shape:
            return f"{v.name}: {DTN[dt_of(got)] if got.dtype in tirnet.DTYPES else got.dtype}{list(got.shape)}, " \
                   f"expected {tstr(v.dt, v.shape)}"
        if v.exact or not is_float(v.dt):
            ok = np.array_equal(got, v.a)
        else:
            ok = np.allclose(got.astype(np.float64), v.a.astype(np.float64), rtol=2e-3,
                             atol=1e-4 * max(1.0, min(v.bound, 1e6)), equal_nan=True)
        if ok:
            return None
        with np.printoptions(threshold=40, precision=6):
            return f"{v.name}: got {got!r}, NumPy says {v.a!r}"

    def v_run(self, t):
        rng = self.rng
        s = self.valid_session(t)
        if not s:
            return
        p = self.make_prog(t, s)
        text = p.text(annotate=rng.random() < 0.85)
        g = sha(text)
        ins, bodies = self.bindings(p)
        keep = {}
        for v in rng.sample(p.prints, min(len(p.prints), rng.choice([0, 0, 1, 2]))):
            if v.op or rng.random() < 0.2:
                if s.values and rng.random() < 0.3:
                    keep[v.name] = rng.choice(sorted(s.values))
                else:
                    s.nkey += 1
                    keep[v.name] = f"k{s.nkey}.{rng.choice(['a', 'B', '_', '-'])}"
        drop = rng.sample(sorted(s.values), min(len(s.values), rng.choice([0, 0, 0, 1, 2])))
        if len(s.values) > 24:
            drop = sorted(s.values)[:8]
        body = {"graph": g, "inputs": ins}
        if g not in t.graphs or rng.random() < 0.2:
            body["text"] = text
        if keep:
            body["keep"] = keep
        if drop:
            body["drop"] = drop
        for o in ("fuse", "explain", "profile"):
            if rng.random() < 0.15:
                body[o] = rng.random() < 0.5
        if rng.random() < 0.5:  # as a client that knows what it lacks
            for h, (b, a, flen) in bodies.items():
                if h not in t.blobs:
                    self.put(t, b, h, flen, a)
        detail = "the program:\n" + text + "\nthe request: " + json.dumps(body)[:4000]
        for attempt in range(4):
            s.last = time.monotonic()
            r, ex = self.valid(t, Req("POST", f"/v1/sessions/{s.id}/run", json.dumps(body).encode(), t.token,
                                      route="run"), "a valid run", detail)
            if r is None:
                return
            if r.status == 409:
                e = r.err()
                listed = e.get("blobs")
                if ("text" in body and e.get("graph") is not False) or not isinstance(listed, list) or \
                        len(set(listed)) != len(listed) or not set(listed) <= set(bodies):
                    self.fail("valid answers right", "a 409 that lists what was not asked: " + r.short(), ex)
                    return
                for h in listed:
                    b, a, flen = bodies[h]
                    self.put(t, b, h, flen, a)
                if e.get("graph"):
                    body["text"] = text
                continue
            if r.status != 200:
                self.fail("valid answers right", "a valid run: " + r.short(), ex)
                return
            t.graphs.add(g)
            self.nchecked += 1
            try:
                meta, vals = tirnet.results(r.body)
            except Exception as x:  # noqa: BLE001
                self.fail("valid answers right", f"results: {type(x).__name__}: {x}", ex)
                return
            bad = [m for m in (self.compare(got, v) for got, v in zip(vals, p.prints)) if m]
            if len(vals) != len(p.prints):
                bad.append(f"{len(vals)} values for {len(p.prints)} printed")
            for o in ("explain", "profile"):
                if body.get(o) and not isinstance(meta.get(o), str):
                    bad.append(f"no {o} in the metadata")
            if bad:
                self.fail("valid answers right", "; ".join(bad)[:400], ex, "\n".join(bad))
                return
            for k in drop:
                s.values.pop(k, None)
            for name, key in keep.items():
                i = [v.name for v in p.prints].index(name)
                s.values[key] = vals[i].copy()
            return
        self.fail("valid answers right", "409 four times in a row", ex)

    def v_must_fail(self, t):
        """Runs whose failure the protocol fixes: nothing they keep or drop takes effect."""
        s = self.valid_session(t)
        if not s:
            return
        rng = self.rng
        k = rng.choice(["div0", "memory", "nokey"])
        s.nkey += 1
        newkey = f"never{s.nkey}"
        if k == "div0":
            a = np.array([1, 0, 3], np.int32)
            text = "input t0: i32[3]\ninput t1: i32[3]\nt2: i32[3] = add(t1, 2)\nt3: i32[3] = div(t2, t0)\nprint t3\n"
            f = frame(a)
            h, b = blob(f)
            self.put(t, b, h, len(f), a)
            ins = {"t0": {"blob": h}, "t1": {"blob": h}}
            want, line = (422, "runtime"), 4
        elif k == "memory":
            n = rng.choice([20000, 30000, 65536])
            text = f"t0: f32[{n}, {n}] = zeros([{n}, {n}])\nt1: f32[{n}, {n}] = exp(t0)\nprint t1\n"
            # refused on its plan, at the largest value held at its peak:
            # t0 (kept) and t1 are as large, and the later one is named
            ins, want, line = {}, (413, "memory"), 2
        else:
            text = "input t0: f32[2]\nt1: f32[2] = neg(t0)\nprint t1\n"
            ins, want, line = {"t0": {"value": "no-such-key" + str(s.nkey)}}, (404, "not_found"), None
        body = {"graph": sha(text), "text": text, "inputs": ins, "keep": {"t0" if k == "memory" else "t1": newkey}}
        if s.values:
            body["drop"] = [rng.choice(sorted(s.values))]
        r, ex = self.valid(t, Req("POST", f"/v1/sessions/{s.id}/run", json.dumps(body).encode(), t.token,
                                  route="run"), f"a run that must fail ({k})", text)
        s.last = time.monotonic()
        if r is None:
            return
        e = r.err()
        if (r.status, e.get("code")) != want or (line and e.get("line") != line) or \
                (k == "memory" and not (isinstance(e.get("budget"), int) and isinstance(e.get("held"), int))):
            self.fail("valid answers right", f"{k}: {r.short()}; expected {want} at line {line}", ex)
        # the key it would have kept is not there
        t2 = "input t0: f32[2]\nt1: f32[2] = neg(t0)\nprint t1\n"
        r, ex = self.valid(t, Req("POST", f"/v1/sessions/{s.id}/run",
                                  json.dumps({"graph": sha(t2), "text": t2, "inputs": {"t0": {"value": newkey}}}).encode(),
                                  t.token, route="run"), "a run on a key a failed run would have kept")
        if r is not None and (r.status, r.err().get("code")) != (404, "not_found"):
            self.fail("valid answers right", "a failed run kept a value: " + r.short(), ex)

    def v_get(self, t):
        path, rt = self.rng.choice([("/healthz", "healthz"), ("/v1/info", "info"), ("/metrics", "metrics")])
        m = "HEAD" if self.rng.random() < 0.2 else "GET"
        # (/metrics is the tenant's: its own figures, with its token)
        r, ex = self.valid(t, Req(m, path, b"", t.token if rt == "metrics" else None, route=rt), f"{m} {path}")
        if self.expect_valid(r, ex, {200}, f"{m} {path}") and m == "GET" and rt == "info":
            j = r.json() or {}
            if j.get("protocol") != 4 or j.get("dtypes") != DTN_ALL:
                self.fail("valid answers right", "/v1/info: " + r.short(), ex)

    def v_sessions(self, t):
        if t.sessions and self.rng.random() < 0.5:
            s = t.sessions.pop(self.rng.randrange(len(t.sessions)))
            self.delete_session(t, s.id, twice=self.rng.random() < 0.3)
        else:
            sid = self.new_session(t)
            if sid:
                t.sessions.append(Session(sid))

    # ---- the mutated traffic: base requests ----

    def b_put(self, t, big=False):
        if big:
            a = self.nrng.standard_normal(self.rng.randint(1 << 20, (1 << 20) + 300000)).astype(np.float32)
        else:
            a = self.gen.rand_array(self.gen.rand_dt(), self.gen.rand_shape())
        f = frame(a)
        lst = chunk_list(f)
        return a, f, lst

    def b_run(self, t):
        """A run request for a scratch session, its blobs sent: (Req, body dict, text)."""
        sid = self.scratch(t)
        p = self.make_prog(t)
        text = p.text(annotate=self.rng.random() < 0.85)
        ins, bodies = self.bindings(p)
        for h, (b, a, flen) in bodies.items():
            if h not in t.blobs or self.rng.random() < 0.05:
                self.put(t, b, h, flen, a)
        body = {"graph": sha(text), "text": text, "inputs": ins}
        if self.rng.random() < 0.3:
            body["keep"] = {p.prints[0].name: "s" + str(self.rng.randint(0, 9))}
        if self.rng.random() < 0.2:
            body["drop"] = ["s" + str(self.rng.randint(0, 9))]
        return Req("POST", f"/v1/sessions/{sid}/run", json.dumps(body).encode(), t.token, route="run"), body, text

    def b_any(self, t):
        """Any base request (Req, what the first answer may be)."""
        q = self.rng.random()
        if q < 0.35:
            req, _, _ = self.b_run(t)
            return req, {200, 409, 404}
        if q < 0.65:
            _, f, lst = self.b_put(t)
            return Req("PUT", "/v1/blobs/" + sha(lst), lst + f, t.token, route=("blob", sha(lst), len(f))), {200, 201}
        if q < 0.75:
            return Req("POST", "/v1/sessions", b"", t.token, route="sessions"), {201, 503}
        if q < 0.82 and t.scratch:
            sid = self.rng.choice(t.scratch)  # (left in the list: a later run on it may be 404)
            return Req("DELETE", f"/v1/sessions/{sid}", b"", t.token, route="session"), {204, 404}
        path, rt = self.rng.choice([("/healthz", "healthz"), ("/v1/info", "info"), ("/metrics", "metrics")])
        return Req("GET", path, b"", t.token, route=rt), {200}

    def send_mut(self, t, desc, req_or_bytes, expect=None, must=1, heads=None, wait=0.3, detail="", keep_alive=None):
        """A mutated exchange: well-formed HTTP may go on the tenant's scratch keep-alive connection."""
        self.nmut += 1
        if isinstance(req_or_bytes, Req):
            data, heads = req_or_bytes.bytes(), heads or [req_or_bytes.method == "HEAD"]
        else:
            data, heads = req_or_bytes, heads or [False]
        ex = Ex(desc, data, heads, must=must, wait=wait, expect=expect, tenant=t, detail=detail,
                route=req_or_bytes.route if isinstance(req_or_bytes, Req) else None)
        if keep_alive is None:
            keep_alive = self.rng.random() < 0.7
        if keep_alive and must == len(heads) == 1:
            if t.sconn is None:
                t.sconn = Conn(self.srv.port)
            outs = self.exchange(ex, t.sconn)
            r = outs[0] if outs else None
            if not isinstance(r, Resp) or t.sconn.eof or r.headers.get("connection", "").lower() == "close":
                t.sconn.close(abort=True)
                t.sconn = None
            return outs
        return self.exchange(ex)

    # ---- frames and chunk lists ----

    def mutate_frame(self, f):
        rng = self.rng
        b = bytearray(f)
        rank = b[5]
        nb = struct.unpack_from("<Q", b, 8)[0]
        k = rng.choice(["dtype", "rank", "reserved", "nbytes", "shape", "shape", "shape+nbytes", "wrap", "trunc",
                        "extend", "flip", "flip", "pad", "bool", "magic", "random", "empty", "header"])
        if k == "dtype":
            b[4] = rng.choice([x for x in (0, 1, 2, 3, 4, 5, 7, 128, 255) if x != b[4]])
        elif k == "rank":
            b[5] = rng.choice([x for x in (0, 1, 2, 3, 8, 9, 16, 255) if x != rank])
        elif k == "reserved":
            b[rng.choice([6, 7])] = rng.randint(1, 255)
        elif k == "nbytes":
            struct.pack_into("<Q", b, 8, rng.choice(INTERESTING64 + [(nb + d) & M64 for d in (-8, -1, 1, 8, nb)]))
        elif k in ("shape", "shape+nbytes"):
            if rank == 0:
                b[5] = 1
                b[16:16] = struct.pack("<Q", rng.choice(INTERESTING64))
                rank = 1
            else:
                struct.pack_into("<Q", b, 16 + 8 * rng.randrange(rank), rng.choice(INTERESTING64))
            if k == "shape+nbytes":
                n = 1
                for i in range(rank):
                    n *= struct.unpack_from("<Q", b, 16 + 8 * i)[0]
                size = [1, 4, 8, 4, 8][b[4]] if b[4] < 5 else 1
                struct.pack_into("<Q", b, 8, (n * size) & M64)
        elif k == "wrap":  # axes whose product wraps, or is huge with a 0 among them
            shape = rng.choice([[1 << 32, 1 << 32], [0, 1 << 32, 1 << 32], [(1 << 32) + 1, 0], [1 << 16] * 4,
                                [M64, 0], [1 << 63, 2], [3, (1 << 62) + 1]])
            b = bytearray(b"TIRT" + struct.pack("<BBHQ", rng.randint(0, 4), len(shape), 0, rng.choice([0, 8, 16])) +
                          b"".join(struct.pack("<Q", d) for d in shape) + bytes(rng.choice([0, 8, 16])))
        elif k == "trunc":
            b = b[:rng.randrange(max(1, len(b)))]
        elif k == "extend":
            b += rng.randbytes(rng.choice([1, 7, 8, 16])) if rng.random() < 0.5 else bytes(rng.choice([1, 8]))
        elif k == "flip" and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif k == "pad":
            data = 16 + 8 * rank + nb
            if data < len(b):
                b[rng.randrange(data, len(b))] = rng.randint(1, 255)
            else:
                b += b"\1" + bytes(7)
        elif k == "bool" and b[4] == 0 and nb:
            b[16 + 8 * rank + rng.randrange(nb)] = rng.randint(2, 255)
        elif k == "magic":
            b[rng.randrange(4)] ^= 0x20
        elif k == "random":
            b = bytearray(rng.randbytes(rng.randint(0, 64)))
        elif k == "empty":
            b = bytearray()
        elif k == "header":
            b = b[:16 + 8 * rank]
        return bytes(b), k

    def m_frame(self, t):
        a, f, _ = self.b_put(t)
        f2, k = self.mutate_frame(f)
        if self.rng.random() < 0.85:  # the list recomputed: the frame itself is what is wrong
            lst = chunk_list(f2)
            expect = {200, 201, (400, "bad_request"), (413, "too_large"), (503, "busy")}
        else:  # the list of the frame before: the hash or the size gives it away
            lst = chunk_list(f)
            expect = {200, 201, (400, "bad_request"), (400, "bad_hash"), (413, "too_large"), (503, "busy")}
        name = sha(lst)
        req = Req("PUT", "/v1/blobs/" + name, lst + f2, t.token, route=("blob", name, len(f2)))
        self.send_mut(t, f"frame: {k}", req, expect, detail=f"the frame was {f[:64]!r}")

    def m_chunks(self, t):
        rng = self.rng
        big = rng.random() < 0.08
        a, f, lst = self.b_put(t, big)
        nk = (len(lst) - 16) // 32
        b = bytearray(lst)
        fr = bytearray(f)
        k = rng.choice(["magic", "tirt", "chunk size", "frame size", "drop entry", "extra entry", "flip entry",
                        "flip frame", "name", "other name", "list only", "short"])
        expect = {(400, "bad_request")}
        rename = True
        if k == "magic":
            b[rng.randrange(4)] ^= 0x01
        elif k == "tirt":
            b[0:4] = b"TIRT"
            expect = {(400, "protocol")}
        elif k == "chunk size":
            struct.pack_into("<I", b, 4, rng.choice([0, 1, 4096, 1 << 20, (1 << 32) - 1, CHUNK + 1]))
        elif k == "frame size":
            struct.pack_into("<Q", b, 8, rng.choice(INTERESTING64 + [len(f) + 1, len(f) - 1, len(f) + CHUNK]))
        elif k == "drop entry":
            del b[-32:]
        elif k == "extra entry":
            b += rng.randbytes(32)
        elif k == "flip entry":
            i = rng.randrange(nk)
            b[16 + 32 * i + rng.randrange(32)] ^= 1 << rng.randrange(8)
            expect = {(400, "bad_hash")}
            detail = f"chunk {i} of {nk} "
        elif k == "flip frame":  # the list of the frame before: a chunk's hash is wrong
            j = rng.randrange(16 + 8 * a.ndim, len(f) - (-a.nbytes % 8)) if a.nbytes else 0
            fr[j] ^= 1 << rng.randrange(8)
            if a.nbytes:
                i = j // CHUNK
                expect = {(400, "bad_hash")} if a.dtype != np.bool_ else {(400, "bad_hash"), (400, "bad_request")}
                detail = f"chunk {i} of {nk} "
            else:
                expect = {(400, "bad_hash"), (400, "bad_request")}
        elif k == "name":
            rename = False
            name = rng.choice([sha(lst).upper(), sha(lst)[:63], sha(lst) + "0", "g" * 64, "", "..",
                               sha(lst)[:32] + "/" + sha(lst)[33:], "%61" * 64, sha(lst) + "?x=1", "a" * 2000])
            expect = {(400, "bad_request"), (400, "bad_hash"), (404, "not_found"), 200, 201}
        elif k == "other name":
            rename = False
            name = sha(lst + b"x")
            expect = {(400, "bad_hash")}
        elif k == "list only":
            fr = bytearray()
        elif k == "short":
            b = b[:rng.randrange(16)]
            fr = bytearray()
        if rename:
            name = sha(bytes(b))
        body = bytes(b) + bytes(fr)
        req = Req("PUT", "/v1/blobs/" + name, body, t.token, route=None if k == "name" else ("blob", name, len(f)))
        outs = self.send_mut(t, f"chunk list: {k}" + (" (4 MiB+)" if big else ""), req, expect)
        r = outs[0] if outs else None
        if k in ("flip entry", "flip frame") and a.nbytes and isinstance(r, Resp) and r.status == 400 and \
                r.err().get("code") == "bad_hash" and detail not in r.err().get("message", ""):
            self.fail("documented answers", f"bad_hash does not name {detail.strip()}: {r.short()}",
                      Ex(k, body[:4096]))

    # ---- run JSON ----

    def m_json(self, t):
        rng = self.rng
        req, body, text = self.b_run(t)
        k = rng.choice(["wrong type", "wrong type", "missing graph", "unknown field", "duplicate", "rename",
                        "binding", "binding", "keep", "drop", "many", "deep", "number", "utf8", "surrogate", "nul",
                        "truncate", "flip", "top", "empty", "bom", "spaces", "options", "trailing"])
        expect = {(400, "bad_request")}
        raw = None
        if k == "wrong type":
            fld = rng.choice(list(FIELDS))
            body[fld] = rng.choice([j for j in JSON_JUNK if not isinstance(j, FIELDS[fld]) or
                                    (FIELDS[fld] is not bool and isinstance(j, bool))])
            k += " " + fld
        elif k == "missing graph":
            del body["graph"]
        elif k == "unknown field":
            body[rng.choice(["Graph", "colour", "", "graph ", "inputs2", "\u00e9"])] = 1
        elif k == "duplicate":
            fld = rng.choice(list(body))
            raw = json.dumps(body)[:-1] + f', "{fld}": ' + json.dumps(body[fld]) + "}"
        elif k == "rename":
            fld = rng.choice(list(body))
            body[fld.upper() if rng.random() < 0.5 else fld + "s"] = body.pop(fld)
        elif k == "binding":
            if not body["inputs"]:
                return
            nm = rng.choice(sorted(body["inputs"]))
            v = rng.choice([5, "x", [], {}, {"blob": 5}, {"blob": "G" * 64}, {"value": ""}, {"value": "a/b"},
                            {"value": "k" * 65}, {"blob": sha(b"x"), "value": "k"}, {"blob": sha(b"x"), "x": 1},
                            {"other": 1}, {"value": "nokey"}, {"blob": sha(b"nothing")}, None])
            body["inputs"][nm] = v
            if v in ({"value": "nokey"}, {"blob": sha(b"nothing")}):
                expect = {(404, "not_found"), (409, "missing")}
            if rng.random() < 0.3:
                body["inputs"]["t99"] = {"blob": sha(b"y")}
        elif k == "keep":
            body["keep"] = rng.choice([{"t0": ""}, {"t0": "a/b"}, {"t0": "k" * 65}, {"t0": "k\u00e9"}, {"t0": 5},
                                       {"t0": "k" * 64}, {"t99": "k"}, {"": "k"}, {"print": "k"}])
            expect = None if body["keep"] in ({"t0": "k" * 64}, {"t99": "k"}, {"": "k"}, {"print": "k"}) else expect
        elif k == "drop":
            body["drop"] = rng.choice([[""], ["a b"], [5], [None], ["k" * 65], ["k", "k", "k"], [[]], ["k\n"]])
            expect = None if body["drop"] == ["k", "k", "k"] else expect
        elif k == "many":
            n = rng.choice([1000, 5000, 20000, 100000])
            what = rng.choice(["drop", "keep", "inputs"])
            if what == "drop":
                body["drop"] = [f"d{i}" for i in range(n)]
            elif what == "keep":
                body["keep"] = {f"x{i}": f"k{i % 7000}" for i in range(n)}
            else:
                body["inputs"].update({f"u{i}": {"blob": sha(str(i))} for i in range(n)})
            k += f" {what} x {n}"
            expect = None
        elif k == "deep":
            d = rng.choice([100, 1000, 2047, 2049, 10000, 100000])
            o, c = rng.choice([("[", "]"), ('{"a":', "}")])
            body["inputs"] = "@@"
            raw = json.dumps(body).replace('"@@"', o * d + "1" + c * d)
            k += f" {d}"
            # past max_run_values (16448) it is refused unparsed
            expect = {(400, "bad_request"), (413, "too_large")}
        elif k == "number":
            fld = rng.choice(["graph", "fuse", "inputs", "keep"])
            body[fld] = "@@"
            raw = json.dumps(body).replace('"@@"', rng.choice(["1e999", "-1e999", "1" * 500, "-0", "0.1e-999999",
                                                               "123456789012345678901234567890", "NaN", "Infinity"]))
        elif k == "utf8":
            body["text"] = "@@"
            bad = rng.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"])
            raw = json.dumps(body).encode().replace(b"@@", json.dumps(text)[1:-1].encode() + bad)
            expect = None
        elif k == "surrogate":
            body["text"] = "@@"
            raw = json.dumps(body).replace("@@", rng.choice(["\\ud800", "\\udc00x", "\\ud800\\ud800", "\\u12"]))
        elif k == "nul":
            fld = rng.choice(["text", "keep", "graph"])
            if fld == "keep":
                raw = json.dumps(dict(body, keep={"t0": "@@"})).replace("@@", "k\\u0000x")
            else:
                body[fld] = "@@"
                raw = json.dumps(body).replace("@@", (json.dumps(text)[1:-1] if fld == "text" else "0" * 32) +
                                               "\\u0000" + "0" * 31)
        elif k == "truncate":
            s = json.dumps(body)
            raw = s[:rng.randrange(len(s) - 1)]
        elif k == "flip":
            s = bytearray(json.dumps(body).encode())
            for _ in range(rng.randint(1, 4)):
                s[rng.randrange(len(s))] = rng.randrange(256)
            raw = bytes(s)
            expect = None
        elif k == "top":
            raw = rng.choice(["[]", "5", '"x"', "null", "true", json.dumps([body]), "{}{}", "}"])
        elif k == "empty":
            raw = rng.choice(["", " ", "\n"])
        elif k == "bom":
            raw = "\ufeff" + json.dumps(body)
            expect = None
        elif k == "spaces":
            raw = json.dumps(body, indent=rng.choice([0, 1, 100]))
            expect = {200, 409, 404}
        elif k == "options":
            for o in ("fuse", "explain", "profile"):
                body[o] = rng.random() < 0.5
            expect = {200, 409, 404}
        elif k == "trailing":
            raw = json.dumps(body) + rng.choice([" x", "\0", ",", "}"])
        data = raw if raw is not None else json.dumps(body)
        req.body = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        req.headers = [(h, str(len(req.body)) if h == "Content-Length" else v) for h, v in req.headers]
        self.send_mut(t, f"run JSON: {k}", req, expect, detail=f"the text:\n{text}")

    # ---- batch text ----

    def mutate_text(self, text):
        rng = self.rng
        lines = text.split("\n")[:-1]
        k = rng.choice(["tokens"] * 6 + ["huge shape", "deep", "long name", "many lines", "many prints", "dup input",
                                         "no print", "crlf", "semicolons", "unicode", "empty", "literal", "prints first"])
        if k == "huge shape":
            i = rng.randrange(len(lines))
            n = rng.choice(["65536", "100000", "2147483648", "4294967296", "4294967297", "3000", "-1", "0"])
            lines[i] = re.sub(r"\[([0-9, ]+)\]", lambda m: "[" + ", ".join(n for _ in m.group(1).split(",")) + "]",
                              lines[i])
        elif k == "deep":
            d = rng.choice([50, 199, 200, 201, 1000, 5000])
            i = rng.randrange(len(lines))
            if " = " in lines[i]:
                lhs, rhs = lines[i].split(" = ", 1)
                lines[i] = lhs + " = " + rng.choice(["neg(" * d + rhs + ")" * d, "(" * d + rhs + ")" * d,
                                                     "-" * d + rhs, " + ".join([rhs] * d)])
        elif k == "long name":
            nm = rng.choice(["x" * 255, "x" * 256, "y" * 10000])
            text = re.sub(r"\bt0\b", nm, text)
            return text, k
        elif k == "many lines":
            m = rng.choice([100, 1000, 3000])
            last = [ln for ln in lines if ln.startswith("t")][-1:] or [lines[0]]
            nm = re.match(r"(?:input )?(t\d+)", last[0])
            if nm:
                ty = re.search(r": (\w+\[[^\]]*\])", last[0])
                ty = ty.group(1) if ty else "f32[]"
                prev = nm.group(1)
                for j in range(m):
                    lines.insert(-1, f"m{j}: {ty} = {rng.choice(['neg', 'abs', 'relu'])}({prev})")
                    prev = f"m{j}"
        elif k == "many prints":
            lines[-1] = "print " + ", ".join(["t0"] * rng.choice([64, 65, 1000]))
        elif k == "dup input":
            lines.insert(0, lines[0])
        elif k == "no print":
            lines = lines[:-1]
        elif k == "crlf":
            return text.replace("\n", "\r\n"), k
        elif k == "semicolons":
            return text.replace("\n", rng.choice(["; ", ";"]), rng.randint(1, 5)), k
        elif k == "unicode":
            lines.insert(rng.randrange(len(lines)), rng.choice(["# \u00e9\U0001d465", "\u00e9 = 1", "t\u00e9: f32[] = 1"]))
        elif k == "empty":
            return rng.choice(["", "\n", "print", "#"]), k
        elif k == "literal":
            m = rng.choice([3, 1000, 50000])
            lines.insert(-1, f"lit: i64[{m}] = [" + ", ".join(str(j % 7) for j in range(m)) + "]")
        elif k == "prints first":
            lines.insert(0, lines.pop())
        if k != "tokens":
            return "\n".join(lines) + "\n", k
        toks = TOKEN_RX.findall(text)
        names = sorted({x for x in toks if re.fullmatch(r"t\d+", x)}) or ["t0"]
        done = []
        for _ in range(rng.choice([1, 1, 2, 3, 4])):
            i = rng.randrange(len(toks))
            op = rng.choice(["delete", "dup", "swap", "number", "name", "op", "dtype", "punct", "word", "insert"])
            done.append(op)
            if op == "delete":
                del toks[i]
            elif op == "dup":
                toks.insert(i, toks[i])
            elif op == "swap":
                j = rng.randrange(len(toks))
                toks[i], toks[j] = toks[j], toks[i]
            elif op == "number":
                nums = [j for j, x in enumerate(toks) if re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", x)]
                toks[rng.choice(nums) if nums else i] = rng.choice(NUMBERS)
            elif op == "name":
                toks[i] = rng.choice(names)
            elif op == "op":
                toks[i] = rng.choice(self.ops or ["neg"])
            elif op == "dtype":
                ds = [j for j, x in enumerate(toks) if x in DTN]
                toks[rng.choice(ds) if ds else i] = rng.choice(DTN)
            elif op == "punct":
                toks[i] = rng.choice(PUNCT)
            elif op == "word":
                toks[i] = rng.choice(WORDS)
            else:
                toks.insert(i, rng.choice(PUNCT + WORDS + NUMBERS))
            if not toks:
                toks = [""]
        return "".join(toks), "tokens " + "+".join(done)

    def m_text(self, t):
        req, body, text = self.b_run(t)
        text2, k = self.mutate_text(text)
        body["text"] = text2
        expect = None
        if self.rng.random() < 0.9:
            body["graph"] = sha(text2.encode("utf-8", "surrogatepass"))
        elif text2 != text:  # (a NUL in a JSON string is refused first)
            expect = {(400, "bad_hash")} | ({(400, "bad_request")} if "\x00" in text2 else set())
        req.body = json.dumps(body).encode()
        req.headers = [(h, str(len(req.body)) if h == "Content-Length" else v) for h, v in req.headers]
        self.send_mut(t, f"batch text: {k}", req, expect, detail=f"the text before:\n{text}\nafter:\n{text2[:3000]}")

    # ---- HTTP ----

    def mutate_path(self, path):
        rng = self.rng
        k = rng.choice(["dots", "slashes", "escape", "query", "fragment", "long", "case", "nul", "space", "utf8",
                        "trailing", "empty id", "star", "double"])
        if k == "dots":
            return path.replace("/v1/", rng.choice(["/v1/../v1/", "/./v1/", "/v1/./"]), 1)
        if k == "slashes":
            return path.replace("/", "//", rng.randint(1, 3))
        if k == "escape":
            return "".join(f"%{ord(c):02x}" if c.isalnum() and rng.random() < 0.3 else c for c in path) + \
                rng.choice(["", "%", "%zz", "%00", "%2f"])
        if k == "query":
            return path + rng.choice(["?", "?a=1", "?a=1&b", "?" + "x" * 3000])
        if k == "fragment":
            return path + "#frag"
        if k == "long":
            return path + "/" + "a" * rng.choice([100, 5000, 70000])
        if k == "case":
            return path.upper()
        if k == "nul":
            return path + "\x00x"
        if k == "space":
            return path + " x"
        if k == "utf8":
            return path + "\u00e9".encode().decode("latin-1")
        if k == "trailing":
            return path + "/"
        if k == "empty id":
            return re.sub(r"[0-9a-f]{32,64}", "", path)
        if k == "star":
            return "*"
        return path + path

    def m_http(self, t):
        rng = self.rng
        req, bexp = self.b_any(t)
        rt = req.route[0] if isinstance(req.route, tuple) else req.route
        heads = [False]
        must, wait, expect, pieces, gone = 1, 0.3, None, None, False
        k = rng.choice(["method", "method", "path", "path", "version", "no host", "no length", "length", "two lengths",
                        "short length", "long length", "chunked", "chunked", "bad chunked", "te and cl", "te other",
                        "protocol", "auth", "auth", "expect", "connection close", "long header", "many headers",
                        "fold", "no colon", "bad name", "nul", "bare lf", "spaces", "absolute", "cut", "fragments",
                        "fragments"])

        def hset(name, value, add=False):
            if not add:
                req.headers = [(h, v) for h, v in req.headers if h.lower() != name.lower()]
            req.headers.append((name, value))

        def hdel(name):
            req.headers = [(h, v) for h, v in req.headers if h.lower() != name.lower()]

        def chunked(body, sizes=None):
            out, at = b"", 0
            while at < len(body):
                n = min(len(body) - at, rng.choice([1, 7, 100, 4096, 65536]))
                ext = rng.choice(["", "", ";x=y", "; a"])
                out += b"%x%s\r\n%s\r\n" % (n, ext.encode(), body[at:at + n])
                at += n
            return out + b"0\r\n" + (b"X-Trailer: 1\r\n" if rng.random() < 0.2 else b"") + b"\r\n"

        data = None
        if k == "method":
            m = rng.choice(METHODS)
            req.method, req.route = m, None
            heads = [m == "HEAD"]
            if m in ("GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD", "TRACE", "FOO", "get") and \
                    m not in ALLOWED[rt]:
                expect = {(405, "method")}
            elif m in ("P\tOST", "CONNECT", "G"):
                must = 0
        elif k == "path":
            req.path, req.route = self.mutate_path(req.path), None
            if "\x00" in req.path or " " in req.path or len(req.path) > 60000:
                must = 0
        elif k == "version":
            req.version = rng.choice(["HTTP/1.0", "HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "HTTP/1.1x",
                                      "http/1.1", "HTTP/11", ""])
            if req.version == "HTTP/1.0":
                expect = bexp
            else:
                must = 0
        elif k == "no host":
            hdel("Host")
        elif k == "no length":
            hdel("Content-Length")
            if req.body:
                heads, wait = [False, False], 0.05
        elif k == "length":
            hset("Content-Length", rng.choice(["-1", "+5", "0x10", " 5", "5 ", "05", "1e3", "", "abc",
                                               "99999999999999999999999", "18446744073709551615",
                                               "18446744073709551616", str(len(req.body)) + "0", "1,2"]))
            must = 0
        elif k == "two lengths":
            hset("Content-Length", rng.choice([str(len(req.body)), str(len(req.body) + 1), "0"]), add=True)
            must = 0
        elif k == "short length" and req.body:
            hset("Content-Length", str(rng.randrange(len(req.body))))
            heads, wait = [False, False], 0.05
        elif k == "long length":
            hset("Content-Length", str(len(req.body) + rng.choice([1, 100, 1 << 20])))
            must = 0
        elif k == "chunked":
            hdel("Content-Length")
            hset("Transfer-Encoding", rng.choice(["chunked", "Chunked", "chunked"]))
            req.body = chunked(req.body)
            # a blob, or a session with a body, needs a Content-Length
            expect = {(411, "length_required")} if rt == "blob" else \
                bexp | {(411, "length_required")} if rt == "sessions" and bexp else bexp
        elif k == "bad chunked":
            hdel("Content-Length")
            hset("Transfer-Encoding", "chunked")
            b = chunked(req.body)
            req.body = rng.choice([b.replace(b"\r\n", b"\n", 2), b[:-5], b"zz\r\n" + b, b"fffffffffffffffffff\r\nx",
                                   b"-1\r\n" + b, b"%x\r\n" % (len(req.body) + 10) + req.body + b"\r\n0\r\n\r\n",
                                   b"1\r\nxx\r\n0\r\n\r\n", b"0\r\nbad trailer\r\n\r\n", b + b"junk"])
            must = 0
        elif k == "te and cl":
            hset("Transfer-Encoding", "chunked", add=True)
            req.body = chunked(req.body) if rng.random() < 0.5 else req.body
            must = 0
        elif k == "te other":
            hdel("Content-Length")
            hset("Transfer-Encoding", rng.choice(["gzip", "chunked, gzip", "identity", "gzip, chunked", "x" * 200]))
            must = 0
        elif k == "protocol":
            v = rng.choice(["1", "3", "04", "x" * 100, "4.0", "-4", "4\x00", "1", "4"])
            if rng.random() < 0.2:
                hset("Tir-Protocol", v, add=True)
            else:
                hset("Tir-Protocol", v)
                expect = bexp if v == "4" else {(400, "protocol")}  # (the token is right: that comes first)
            if "\x00" in v:
                must, expect = 0, None
        elif k == "auth":
            v = rng.choice(["Bearer wrong", "Basic " + t.token, "Bearer", "", "bearer " + t.token,
                            "Bearer   " + t.token, "Bearer " + t.token + " ", "Bearer " + t.token[:-1],
                            "Bearer " + self.tenants[0].token, "Bearer " + "z" * 100000])
            hset("Authorization", v)
            public = rt in ("healthz", "info")  # (/metrics is a tenant's: it needs the token)
            if v in ("Bearer wrong", "Basic " + t.token, "Bearer", "Bearer " + t.token[:-1]) and not public:
                expect = {(401, "unauthorized")}
            elif v in ("bearer " + t.token, "Bearer   " + t.token) or public and len(v) < 1000:
                expect = bexp
            if len(v) > 1000:
                must = 0
        elif k == "expect":
            hset("Expect", "100-continue")
            expect = bexp
        elif k == "connection close":
            hset("Connection", rng.choice(["close", "keep-alive", "Upgrade", "close, TE"]))
            expect = bexp
        elif k == "long header":
            hset("X-Long", "a" * rng.choice([8000, 60000, 200000]))
            must = 0
        elif k == "many headers":
            for i in range(rng.choice([100, 1000, 5000])):
                hset(f"X-H{i}", "v", add=True)
            must = 0
        elif k == "fold":
            hset("X-Fold", "a\r\n b")
            must = 0
        elif k == "no colon":
            hset("Garbage-No-Colon", "", add=True)
            req.headers[-1] = ("Garbage", "")
            data = req.bytes().replace(b"Garbage: \r\n", b"Garbage\r\n")
            must = 0
        elif k == "bad name":
            hset(rng.choice(["X Y", "X\x01", "", "\u00e9", "X:Y"]), "1", add=True)
            must = 0
        elif k == "nul":
            hset("X-Nul", "a\x00b", add=True)
            must = 0
        elif k == "bare lf":
            raw = req.bytes()
            i = raw.find(b"\r\n\r\n")
            data = raw[:i].replace(b"\r\n", b"\n") + b"\n\n" + raw[i + 4:]
            must = 0
        elif k == "spaces":
            data = req.bytes().replace(b" ", rng.choice([b"  ", b"\t", b" \t"]), 1)
            must = 0
        elif k == "absolute":
            req.path = f"http://127.0.0.1:{self.srv.port}" + req.path
            must = 0
        elif k == "cut":
            raw = req.bytes()
            data = raw[:rng.randrange(len(raw))]
            must, gone = 0, rng.random() < 0.5
        elif k == "fragments":
            raw = req.bytes()
            pieces = sorted(rng.sample(range(1, len(raw)), min(len(raw) - 1, rng.randint(1, 10))))
            pieces = [b - a for a, b in zip([0] + pieces, pieces)]
            expect = bexp
        if data is None:
            data = req.bytes()
        if must == 0:
            heads, wait = [h for h in heads[:1]], rng.choice([0.02] * 8 + [0.1, 0.3])
        self.nmut += 1
        self.exchange(Ex(f"HTTP: {k}", data, heads, must=min(must, 1), wait=wait, expect=expect,
                         route=req.route, pieces=pieces, gone=gone, tenant=t))

    def m_pipeline(self, t):
        items = [self.b_any(t) for _ in range(self.rng.randint(2, 5))]
        data = b"".join(r.bytes() for r, _ in items)
        heads = [r.method == "HEAD" for r, _ in items]
        junk = self.rng.random() < 0.3
        if junk:
            data += self.rng.choice([b"GARBAGE\r\n\r\n", b"GET /healthz HTTP/1.1\r\n", self.rng.randbytes(40)])
        self.nmut += 1
        ex = Ex("pipelined: " + ", ".join(f"{r.method} {r.path[:40]}" for r, _ in items), data,
                heads + ([False] if junk else []), must=len(items), wait=0.05, tenant=t)
        outs = self.exchange(ex)
        for i, (r, (req, want)) in enumerate(zip(outs, items)):
            if isinstance(r, Resp) and i > 0 and r.status not in want:
                self.fail("documented answers", f"pipelined request {i + 1} ({req.method} {req.path[:40]}): "
                          f"{r.short()}; expected {sorted(want)}", ex)

    def heavy_run(self, t, sid=None, keep=None):
        """A run request that takes a while: a chain of matmuls."""
        n = self.rng.choice([128, 192, 256])
        a = (self.nrng.standard_normal((n, n)) / n).astype(np.float32)
        f = frame(a)
        h, b = blob(f)
        self.put(t, b, h, len(f))
        lines = [f"input t0: f32[{n}, {n}]"] + \
            [f"t{i}: f32[{n}, {n}] = {'matmul(t%d, t0)' % (i - 1) if i % 2 else 'tanh(t%d)' % (i - 1)}"
             for i in range(1, self.rng.choice([10, 20, 40]))]
        last = len(lines) - 1
        lines.append(f"t{last + 1}: f32[] = sum(t{last})")
        text = "\n".join(lines) + f"\nprint t{last + 1}\n"
        body = {"graph": sha(text), "text": text, "inputs": {"t0": {"blob": h}}}
        if keep:
            body["keep"] = {f"t{last + 1}": keep}
        return Req("POST", f"/v1/sessions/{sid or self.scratch(t)}/run", json.dumps(body).encode(), t.token,
                   route="run")

    def m_gone(self, t):
        rng = self.rng
        k = rng.choice(["mid body", "mid headers", "after run", "after a long run", "after a long run"])
        if k == "mid body":
            if rng.random() < 0.5:
                _, f, lst = self.b_put(t, big=rng.random() < 0.3)
                req = Req("PUT", "/v1/blobs/" + sha(lst), lst + f, t.token)
            else:
                req, _, _ = self.b_run(t)
            raw = req.bytes()
            data = raw[:len(raw) - len(req.body) + rng.randrange(max(1, len(req.body)))]
        elif k == "mid headers":
            req, _ = self.b_any(t)
            raw = req.bytes()
            data = raw[:rng.randrange(raw.find(b"\r\n\r\n") + 3)]
        elif k == "after run":
            req, _, _ = self.b_run(t)
            data = req.bytes()
        else:
            data = self.heavy_run(t).bytes()
        self.nmut += 1
        self.exchange(Ex(f"client gone: {k}", data, [], must=0, gone=True, tenant=t))

    def m_interleave(self, t):
        """Several connections at once, their bytes sent in turns; some go away."""
        rng = self.rng
        items = []
        reqs = []
        if rng.random() < 0.3:  # a race on one session: a long run, its DELETE, a run keeping in it, uploads
            sid = self.scratch(t)
            run2, _, _ = self.b_run(t)
            run2.path = f"/v1/sessions/{sid}/run"
            _, f, lst = self.b_put(t, big=rng.random() < 0.5)
            reqs = [(self.heavy_run(t, sid, keep="race"), {200, 404}),
                    (Req("DELETE", f"/v1/sessions/{sid}", b"", t.token, route="session"), {204, 404}),
                    (run2, {200, 404, 409}),
                    (Req("PUT", "/v1/blobs/" + sha(lst), lst + f, t.token, route=("blob", sha(lst), len(f))),
                     {200, 201})]
            rng.shuffle(reqs)
        while len(reqs) < 2 or len(reqs) < 5 and rng.random() < 0.6:
            reqs.append((self.heavy_run(t), {200, 404}) if rng.random() < 0.15 else self.b_any(t))
        for req, want in reqs:
            data = req.bytes()
            cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 3))))
            parts = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
            items.append([req, want, parts, rng.random() < 0.2, None])
        self.n += len(items)
        self.nmut += 1
        try:
            for it in items:
                it[4] = Conn(self.srv.port)
        except OSError as e:
            self.fail("no hang", f"cannot connect: {e}")
            return
        order = [i for i, it in enumerate(items) for _ in it[2]]
        rng.shuffle(order)
        nxt = [0] * len(items)
        for i in order:  # each connection's parts in order, the connections in turns
            items[i][4].send(items[i][2][nxt[i]])
            nxt[i] += 1
        for req, want, parts, gone, c in items:
            ex = Ex(f"interleaved {req.method} {req.path[:40]}", b"".join(parts), [req.method == "HEAD"],
                    expect=want, route=req.route, tenant=t)
            self.recent.append((self.n, ex.desc, ex.data))
            if gone:
                c.close(abort=self.gone_abort())
                continue
            t0 = time.monotonic()
            r = c.response(t0 + self.a.timeout, req.method == "HEAD")
            c.close()
            if isinstance(r, Resp) and time.monotonic() - t0 > self.a.timeout / 3:
                self.fail("no hang", f"answered after {time.monotonic() - t0:.1f} s: {r.short()[:100]}", ex)
            if isinstance(r, Resp):
                self.check_resp(ex, 0, r)
            elif r == "timeout":
                self.fail("no hang", f"no answer within {self.a.timeout:.0f} s", ex)
            else:
                self.stats["closed without an answer"] += 1

    # ---- the loop, and the checks between bursts and at the end ----

    VALID = (("v_run", 60), ("v_put", 10), ("v_sessions", 6), ("v_get", 10), ("v_must_fail", 5))
    MUTATED = (("m_frame", 13), ("m_chunks", 8), ("m_json", 18), ("m_text", 16), ("m_http", 30), ("m_pipeline", 6),
               ("m_gone", 4), ("m_interleave", 4))

    def step(self):
        t = self.rng.choice(self.tenants)
        table = self.VALID if self.rng.random() < 0.3 or self.a.valid_only else self.MUTATED
        name = self.rng.choices([n for n, _ in table], [w for _, w in table])[0]
        t0 = time.monotonic()
        try:
            getattr(self, name)(t)
        except OSError as e:  # the server went away, most likely: the burst's check says
            self.stats[f"{name}: {type(e).__name__}"] += 1
            for u in self.tenants:
                for c in (u.conn, u.sconn):
                    if c:
                        c.close()
                u.conn = u.sconn = None
        except Exception as e:  # noqa: BLE001 a fault of the fuzzer's own
            import traceback
            self.fail("fuzzer", f"{name}: {type(e).__name__}: {e}", None, traceback.format_exc())
        self.took[name] += time.monotonic() - t0
        self.did[name] += 1

    def scan_log(self):
        lines = list(self.srv.lines)
        new, self.scan_at = lines[self.scan_at:], len(lines)
        for i, ln in enumerate(new):
            if SANITIZER_RX.search(ln) and (ln.startswith("==") or "runtime error:" in ln or "SUMMARY" in ln):
                self.fail("no sanitizer report", ln[:300], None, "\n".join(new[i:i + 80]))
            elif ln.startswith("microhttpd:"):
                self.stats["log: " + re.sub(r"\d+", "N", ln.split("`")[0].split(" (HTTP response")[0])[:90]] += 1

    def healthz(self, seconds):
        try:
            c = Conn(self.srv.port)
            c.send(http_bytes("GET", "/healthz", [("Host", "x")]))
            r = c.response(time.monotonic() + seconds)
            c.close()
            return isinstance(r, Resp) and r.status == 200 and r.body == b"ok"
        except OSError:
            return False

    def metrics(self):
        c = Conn(self.srv.port)
        c.send(http_bytes("GET", "/metrics", [("Host", "x"), ("Authorization", "Bearer root-token-89ab")]))
        r = c.response(time.monotonic() + 30)
        c.close()
        m = {}
        if isinstance(r, Resp):
            for line in r.body.decode().splitlines():
                if line and not line.startswith("#"):
                    k, v = line.rsplit(" ", 1)
                    m[k] = float(v)
        return m

    def health(self):
        """After a burst: alive, no report, /healthz within 10 s; False when the server is gone."""
        time.sleep(0.01)
        self.scan_log()
        st = self.srv.proc.poll()
        if st is not None:
            self.srv.thread.join(5)
            self.scan_log()
            self.fail("server alive", f"the server exited with status {st}", None, self.log_tail(80))
            return False
        if not self.healthz(10):
            self.fail("no hang", "/healthz did not answer 200 within 10 s after a burst", None, self.log_tail(40))
        self.peak_rss = max(self.peak_rss, self.srv.rss_kib())
        return True

    def rss_bound_kib(self):
        return (self.a.rss_mib + (512 if self.asan else 0)) * 1024

    def run(self):
        self.start()
        self.peak_rss = self.srv.rss_kib()
        t0 = time.monotonic()
        end = t0 + self.a.seconds
        while time.monotonic() < end and self.n < self.a.requests:
            for _ in range(20):
                self.step()
                if time.monotonic() >= end or self.n >= self.a.requests:
                    break
            if not self.health():
                if self.restarts >= 3:
                    break
                self.restarts += 1
                self.srv.stop()
                self.start()
        self.secs = time.monotonic() - t0
        self.finish()

    def finish(self):
        srv = self.srv
        if srv.proc.poll() is None:
            for t in self.tenants:
                for s in t.sessions:
                    self.delete_session(t, s.id)
                for sid in t.scratch:
                    self.delete_session(t, sid)
                for c in (t.conn, t.sconn):
                    if c:
                        c.close()
            # every body counted in flight is given back (a client gone
            # with bytes unread is noticed at the 30 s connection timeout)
            m = {}
            deadline = max(time.monotonic() + 5, self.last_fin + 35)
            while time.monotonic() < deadline:
                m = self.metrics()
                if m.get("tir_inflight_body_bytes") == 0 and m.get("tir_batches_queued") == 0 and \
                        m.get("tir_batches_running") == 0:
                    break
                time.sleep(0.1)
            else:
                self.fail("memory bounded", f"request bodies still counted in flight at the end: "
                          f"{m.get('tir_inflight_body_bytes')} bytes, batches queued "
                          f"{m.get('tir_batches_queued')}, running {m.get('tir_batches_running')}")
            # a blob's tensor is its frame's data rounded up to 64 bytes (the
            # cache counts the frame, whose head is 16 + 8 x rank bytes), and
            # the cached texts' graphs, charged to the budget as parsed
            bound = m.get("tir_blob_cache_bytes", 0) + 64 * m.get("tir_blob_cache_blobs", 0) + \
                m.get("tir_graph_cache_bytes", 0)
            if m.get("tir_sessions") == 0 and m.get("tir_tensor_bytes", 0) > bound:
                self.fail("memory bounded", f"no session open, but tensors hold {m.get('tir_tensor_bytes'):.0f} "
                          f"bytes, more than the blob cache's {m.get('tir_blob_cache_bytes'):.0f} "
                          f"(+ 64 B each of {m.get('tir_blob_cache_blobs', 0):.0f} blobs)")
            self.stats["sessions left open at the end (lost track of)"] = int(m.get("tir_sessions", 0))
            bound = self.rss_bound_kib()
            time.sleep(1.5)  # what the last requests used goes back once the server is idle 500 ms
            tirnet.eventually(lambda: srv.rss_kib() <= bound, 10)
            self.end_rss = srv.rss_kib()
            self.peak_rss = max(self.peak_rss, self.end_rss)
            if self.end_rss > bound:
                self.fail("memory bounded", f"VmRSS {self.end_rss} KiB once idle, over the bound of {bound} KiB")
            # SIGTERM while a batch runs and its client waits: it is answered, then exit 0
            t = self.tenants[0]
            sid = self.new_session(t)
            c = None
            if sid:
                c = Conn(srv.port)
                c.send(self.heavy_run(t, sid).bytes())
                tirnet.eventually(lambda: self.metrics().get("tir_batches_running") == 1, 10)
            st = srv.stop()
            self.scan_log()
            if st != 0:
                self.fail("clean stop", f"SIGTERM: exit status {st}", None, self.log_tail(80))
            if c:
                r = c.response(time.monotonic() + 5)
                c.close()
                if not isinstance(r, Resp) or r.status != 200:
                    self.fail("clean stop", "the batch running at the SIGTERM was not answered: " +
                              (r.short() if isinstance(r, Resp) else r), None, self.log_tail(20))
        else:
            self.end_rss = 0
            srv.stop()
            self.scan_log()

    def report(self):
        checks = ["server alive", "no sanitizer report", "no 500", "no hang", "error bodies", "documented answers",
                  "valid answers right", "memory bounded", "clean stop", "fuzzer"]
        rate = self.n / self.secs if self.secs else 0
        print(f"# seed {self.seed}, {self.secs:.1f} s against {self.a.tir}{' (ASan)' if self.asan else ''}: "
              f"{self.n} requests ({rate:.0f}/s): {self.nvalid} valid ({self.nchecked} runs checked against NumPy), "
              f"{self.nmut} mutated; {self.restarts} restarts")
        print("# answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.statuses.items())))
        for k, v in sorted(self.stats.items()):
            print(f"# {k}: {v}")
        print("# time: " + ", ".join(f"{k} {self.took[k]:.1f} s for {self.did[k]}" for k, _ in self.took.most_common()))
        print(f"# VmRSS: peak {self.peak_rss} KiB, once idle at the end {self.end_rss} KiB; bound {self.rss_bound_kib()} KiB")
        passed = failed = 0
        for c in checks:
            n = len(self.fails.get(c, []))
            if n:
                failed += min(n, 10)
                print(f"# {c}: {n} failure{'s' if n > 1 else ''}")
            elif c != "fuzzer":
                passed += 1
                print(f"ok {c}")
        if self.saved:
            print(f"# failures saved under {self.a.out}")
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0


def replay(a):
    """Send a saved request's bytes to a fresh server (the fuzzer's flags),
    a session of its own in place of the one in the bytes; print what
    comes back and the server's log.  Blobs the request names are not
    sent: a run may need the traffic before it (the seed) to do the same."""
    data = open(a.replay, "rb").read()
    fz = Fuzzer(a)
    fz.start()
    try:
        t = next((u for u in fz.tenants if u.token.encode() in data), fz.tenants[0])
        sid = fz.new_session(t)
        if sid:
            data = re.sub(rb"/v1/sessions/[0-9a-f]{32}", b"/v1/sessions/" + sid.encode(), data)
        c = Conn(fz.srv.port)
        c.send(data)
        while True:
            r = c.response(time.monotonic() + a.timeout)
            print(r.short() if isinstance(r, Resp) else r)
            if not isinstance(r, Resp):
                break
        c.close()
        time.sleep(0.5)
        alive = fz.srv.proc.poll() is None
        st = fz.srv.stop() if alive else fz.srv.proc.returncode
        print("\n".join(fz.srv.lines))
        print(f"the server {'lived' if alive else 'died'}; exit status {st}")
        return 0 if alive and st == 0 and not any(SANITIZER_RX.search(ln) for ln in fz.srv.lines) else 1
    finally:
        if fz.srv.proc.poll() is None:
            fz.srv.stop()
        shutil.rmtree(fz.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description="a structure-aware protocol fuzzer for tir serve")
    ap.add_argument("--tir", default="build/tir", help="the tir binary (default build/tir)")
    ap.add_argument("--seed", type=int, default=None, help="the seed (default: a random one, printed)")
    ap.add_argument("--seconds", type=float, default=10, help="how long to send (default 10)")
    ap.add_argument("--requests", type=int, default=1 << 62, help="at most this many requests")
    ap.add_argument("--out", default=None, help="where failures are saved (default: a folder in $TMPDIR)")
    ap.add_argument("--timeout", type=float, default=30, help="seconds an answer may take (default 30)")
    ap.add_argument("--rss-mib", type=int, default=160,
                    help="the bound on the server's VmRSS once idle at the end, in MiB (default 160: 16 of blobs, "
                    "64 of graphs, kept values; 512 more under ASan)")
    ap.add_argument("--strict-json", action="store_true",
                    help="an error page that is not JSON (libmicrohttpd's own) fails too")
    ap.add_argument("--reset-gone", action="store_true",
                    help="a client that goes away resets its connection, never closes it (FIN) mid-body: "
                    "libmicrohttpd notices that only at its 30 s timeout, which the check at the end then waits for")
    ap.add_argument("--replay", metavar="FILE", help="send a saved request (a .req file) to a fresh server, and stop")
    ap.add_argument("--valid-only", action="store_true", help="only the valid traffic (to check the model)")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    a.tir = os.path.abspath(a.tir)
    if a.out is None:
        a.out = os.path.join(tempfile.gettempdir(), f"tir-fuzz-serve-{a.seed}")
    tirnet.TIR = a.tir
    if not os.access(a.tir, os.X_OK):
        print(f"FAIL {a.tir} is missing\n0 passed, 1 failed")
        return 1
    if a.replay:
        return replay(a)
    print(f"# fuzz_serve.py --tir {a.tir} --seed {a.seed} --seconds {a.seconds:g}: failures go to {a.out}", flush=True)
    fz = Fuzzer(a)
    try:
        fz.run()
    finally:
        if fz.srv and fz.srv.proc.poll() is None:
            fz.srv.stop()
        shutil.rmtree(fz.tmp, ignore_errors=True)
    return fz.report()


if __name__ == "__main__":
    sys.exit(main())
