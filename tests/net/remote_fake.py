#!/usr/bin/python3
"""remote_fake.py MODE — a fake `tir serve` for the client's error tests
(tests/suites/remote.sh).  Listens on 127.0.0.1 on a free port, prints the
port on the first line of stdout, and serves until killed:

  silent    accepts and reads, never answers (the client's TIR_TIMEOUT; a
            client takes it for a rank of a group still forming: exit 3)
  quiet     answers GET /v1/info as a lone server, then never anything
            else (the client's wait for a batch, its progress line)
  proto1    answers everything, speaking Tir-Protocol 1 (an old server)
  noproto   answers everything, with no Tir-Protocol header (not tir)
  garbage   protocol 4, a session, then a run reply that is not a results body
  short     protocol 4, a session, then a run reply cut short (Content-Length lies)
  badframe  protocol 4, a session, then a results body whose frame is malformed
  trickle   protocol 4, a session, then a results body for `print ones([3])`
            saying [1, 2, 3], sent a few bytes at a time (the client decodes
            results as they come)
  wrongtype protocol 4, a session, then results whose frame is f32[4]
  extra     protocol 4, a session, then results with bytes after the frame
  endless   protocol 4, a session, then results for `print ones([3])` that
            announce 8 GB and go on with zeros after the frame, for as long
            as the client reads (the client stops at the first byte too many)
  bigerror  protocol 4, a session, then a 404 whose body announces 8 GB and
            streams (the client reads at most 16 MiB of a body not results)
  bigmeta   protocol 4, a session, then results whose head says 4 GiB of
            metadata (the client refuses before it allocates)
  hugeshape protocol 4, a session, then a result frame of shape
            [2^32, 2^32] with no data bytes (its element count would wrap)
  stall     protocol 4, a session, then nothing on the same connection
            (a stalled server: the client says no answer, not no connection)
  backlog   listens but never accepts, its queue full (its own two
            connections): a connect that never completes, on loopback
  sink      protocol 4, takes any PUT as fast as it can and answers 201 (for
            bench/remote.sh: the client's upload speed with no server work)
  holdput   protocol 4, a session, a 409 to a run asking for every blob it
            names, then a PUT's head read ("PUT" printed on stdout) and its
            body not until SIGUSR1, then read and dropped: an upload held
            under way (tests/progress_pty.py)
"""
import json
import signal
import socket
import struct
import sys
import threading
import time

MODE = sys.argv[1]
SESSION = "0123456789abcdef0123456789abcdef"


def read_request(conn, buf):
    """One request (head and body) from conn; returns (head, body, rest) or None."""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return None
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip())
    while len(rest) < n:
        d = conn.recv(65536)
        if not d:
            return None
        rest += d
    return head, rest[:n], rest[n:]


def sink(conn):
    """PUTs read into one buffer, nothing kept: the client's upload alone."""
    buf = bytearray(1 << 22)
    view = memoryview(buf)
    while True:
        head = b""
        while b"\r\n\r\n" not in head:
            d = conn.recv(4096)
            if not d:
                return
            head += d
        head, rest = head.split(b"\r\n\r\n", 1)
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v.strip())
        n -= len(rest)
        while n > 0:
            got = conn.recv_into(view, min(n, len(buf)))
            if not got:
                return
            n -= got
        reply(conn, 201, b"")


def reply(conn, status, body, proto=b"4", length=None, ctype=b"application/json"):
    h = b"HTTP/1.1 %d X\r\n" % status
    if proto is not None:
        h += b"Tir-Protocol: " + proto + b"\r\n"
    h += b"Content-Type: " + ctype + b"\r\n"
    h += b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length)
    conn.sendall(h + body)


def results_with_bad_frame():
    meta = b"{}"
    head = b"TIRR" + struct.pack("<III", 4, 1, len(meta)) + meta + b"\0" * 6
    frame = b"TIRT" + bytes([3, 1, 0, 0]) + struct.pack("<Q", 8) + struct.pack("<q", 3) + b"\0" * 8
    return head + frame  # 8 data bytes for 3 f32: malformed


def results_of(frame, tail=b""):
    meta = b'{"plan_ms": 0, "run_ms": 0}'
    return b"TIRR" + struct.pack("<III", 4, 1, len(meta)) + meta + b"\0" * (-len(meta) % 8) + frame + tail


def f32_frame(vals):
    data = struct.pack("<%df" % len(vals), *vals)
    return b"TIRT" + bytes([3, 1, 0, 0]) + struct.pack("<Q", len(data)) + struct.pack("<q", len(vals)) + \
        data + b"\0" * (-len(data) % 8)


def trickle(conn, body):
    """A results reply a few bytes at a time."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(b"HTTP/1.1 200 X\r\nTir-Protocol: 4\r\nContent-Type: application/x-tir-results\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body))
    for i in range(0, len(body), 3):
        conn.sendall(body[i:i + 3])
        time.sleep(0.004)


def endless(conn, ctype, first, status=b"200 OK", fill=b"\0"):
    """A reply that announces 8 GB: first, then fill for as long as the
    client reads (at most 8 GB, or until it hangs up)."""
    conn.sendall(b"HTTP/1.1 " + status + b"\r\nTir-Protocol: 4\r\nContent-Type: " + ctype +
                 b"\r\nContent-Length: %d\r\n\r\n" % (8 << 30) + first)
    block = fill * (1 << 20)
    sent = len(first)
    while sent + len(block) <= 8 << 30:
        conn.sendall(block)
        sent += len(block)


GO = threading.Event()


def holdput(conn):
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = conn.recv(65536)
            if not d:
                return
            buf += d
        if buf.startswith(b"PUT "):
            print("PUT", flush=True)
            GO.wait()  # the body is not read until SIGUSR1
            while conn.recv(1 << 20):
                pass
            return
        req = read_request(conn, buf)
        if req is None:
            return
        head, body, buf = req
        if head.startswith(b"POST /v1/sessions "):
            reply(conn, 201, json.dumps({"session": SESSION, "ttl": 600}).encode())
        elif head.startswith(b"POST "):
            blobs = [v["blob"] for v in json.loads(body).get("inputs", {}).values() if "blob" in v]
            reply(conn, 409, json.dumps({"error": {"status": 409, "code": "missing", "message": "send these",
                                                   "graph": True, "blobs": blobs}}).encode())
        else:
            reply(conn, 204, b"")


def serve(conn):
    buf = b""
    try:
        if MODE == "sink":
            sink(conn)
            return
        if MODE == "holdput":
            holdput(conn)
            return
        while True:
            if MODE == "silent":
                if not conn.recv(65536):
                    return
                continue
            if MODE == "quiet":
                req = read_request(conn, buf)
                if req is None:
                    return
                head, body, buf = req
                if not head.startswith(b"GET /v1/info "):
                    while conn.recv(65536):
                        pass
                    return
                reply(conn, 200, json.dumps({"name": "tir", "protocol": 4}).encode())
                continue
            req = read_request(conn, buf)
            if req is None:
                return
            head, body, buf = req
            line = head.split(b"\r\n")[0]
            method, path = line.split(b" ")[:2]
            if MODE == "proto1":
                reply(conn, 201, b'{"session": "%s", "ttl": 600}' % SESSION.encode(), proto=b"1")
            elif MODE == "noproto":
                reply(conn, 200, b"<html>hello</html>", proto=None, ctype=b"text/html")
            elif method == b"GET" and path == b"/v1/info":  # a lone server's (the client asks first)
                reply(conn, 200, json.dumps({"name": "tir", "protocol": 4}).encode())
            elif method == b"POST" and path == b"/v1/sessions":
                reply(conn, 201, json.dumps({"session": SESSION, "ttl": 600}).encode())
            elif method == b"DELETE":
                reply(conn, 204, b"")
            elif MODE == "garbage":
                reply(conn, 200, b"this is not a results body", ctype=b"application/x-tir-results")
            elif MODE == "short":
                reply(conn, 200, b"TIRR\2\0\0\0", length=4096, ctype=b"application/x-tir-results")
                return
            elif MODE == "badframe":
                reply(conn, 200, results_with_bad_frame(), ctype=b"application/x-tir-results")
            elif MODE == "trickle":
                trickle(conn, results_of(f32_frame([1, 2, 3])))
            elif MODE == "wrongtype":
                reply(conn, 200, results_of(f32_frame([1, 2, 3, 4])), ctype=b"application/x-tir-results")
            elif MODE == "endless":
                endless(conn, b"application/x-tir-results", results_of(f32_frame([1, 2, 3])))
                return
            elif MODE == "bigerror":
                endless(conn, b"application/json", b'{"error": {"status": 404, "code": "not_found", "message": "',
                        status=b"404 Not Found", fill=b"x")
                return
            elif MODE == "bigmeta":
                endless(conn, b"application/x-tir-results", b"TIRR" + struct.pack("<III", 4, 1, 0xFFFFFFF0))
                return
            elif MODE == "hugeshape":
                frame = b"TIRT" + bytes([3, 2, 0, 0]) + struct.pack("<Q", 0) + struct.pack("<qq", 1 << 32, 1 << 32)
                reply(conn, 200, results_of(frame), ctype=b"application/x-tir-results")
            elif MODE == "stall":
                while conn.recv(65536):
                    pass
                return
            elif MODE == "extra":
                reply(conn, 200, results_of(f32_frame([1, 2, 3]), b"\0" * 8), ctype=b"application/x-tir-results")
            else:
                reply(conn, 404, b'{"error": {"status": 404, "code": "not_found", "message": "?"}}')
    except OSError:
        pass
    finally:
        if MODE not in ("silent", "quiet"):
            conn.close()


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    if MODE == "backlog":
        s.listen(0)
        fill = []
        for _ in range(2):  # the accept queue holds backlog + 1: then SYNs are dropped
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.settimeout(0.5)
            try:
                c.connect(s.getsockname())
            except OSError:
                pass
            fill.append(c)
        print(s.getsockname()[1], flush=True)
        while True:
            time.sleep(3600)
    s.listen(16)
    signal.signal(signal.SIGUSR1, lambda *a: GO.set())
    print(s.getsockname()[1], flush=True)
    held = []
    while True:
        conn, _ = s.accept()
        held.append(conn)  # silent: never closed while the fake lives
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
