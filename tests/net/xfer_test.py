#!/usr/bin/python3
"""tests/net/xfer_test.py TIR [XFER_CLIENT] — server to server
(docs/protocol.md, "Server to server"), with `tir serve`s this script
starts on free loopback ports and stops: a value one server's session
keeps is exported (a capability), imported by another server, which
fetches it from the first itself and checks its hash, and read there by a
batch (NumPy compares the bytes).  And what must not work: a capability
used twice (404 at the source, 502 at the importer, nothing stored), after
its session was deleted or expired (TTL, lease), by another tenant (404 as
unknown) or with no token (401), a blob name that is not the value's (502
bad_hash, nothing stored), a source down, silent past --transfer-seconds
(while other clients are served), no tir server, or redirecting
(not followed); a `from` that is not http(s)://HOST:PORT (400); a value
over the importer's --max-body (413); a stopping server (503).  An https
source (a CA made here with the openssl command), 64 capabilities a session
(429 past them), the metrics and /v1/info's limits; a 64 MiB f32 value
moved with the importer's peak memory growing by less than twice the
value; and XFER_CLIENT (tests/net/xfer_client.c, the client's
tir_remote_export and tir_remote_import) against two servers with tokens.

Prints one "ok NAME" or "FAIL NAME: WHY" line per check, "# " lines of
figures, then "N passed, M failed".  Nothing waits on a sleep for
correctness: an expiry, a stop or a transfer under way is waited for as
the server shows it (/metrics, its log), polled (eventually())."""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tirnet  # noqa: E402  (tests/net/tirnet.py)
from tirnet import (ALL_LINES, Server, blob, check, chunk_list, describe, error_is, eventually, frame,  # noqa: E402
                    metrics, new_session, put_blob, request, results, run, sha)

TIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/tir"
CLIENT = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(os.path.dirname(TIR), "tests",
                                                                              "xfer_client")
tirnet.TIR = TIR
ASAN = os.path.exists(TIR) and b"__asan_init" in open(TIR, "rb").read()
# AddressSanitizer's quarantine keeps up to 256 MiB of freed memory resident
RSS_SLACK_KIB = 256 * 1024 if ASAN else 16 * 1024



# ---- helpers ----

DT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32",
      np.dtype(np.int64): "i64"}


def typ(a):
    return f"{DT[a.dtype]}[{', '.join(str(d) for d in a.shape)}]"


def neg_text(a):
    t = typ(a)
    return f"input t0: {t}\nt1: {t} = neg(t0)\nprint t1\n"


def keep(srv, sid, a, key, headers=None):
    """Have session sid keep -a under key; the reply."""
    h, r = put_blob(srv, a, headers)
    if r.status not in (200, 201):
        return r
    return run(srv, sid, neg_text(a), {"t0": {"blob": h}}, headers=headers, keep={"t1": key})


def read(srv, sid, key, like, headers=None):
    """(the negation of the value sid keeps under key, as like is, or None; the reply)"""
    r = run(srv, sid, neg_text(like), {"t0": {"value": key}}, headers=headers)
    return (results(r.body)[1][0] if r.status == 200 else None), r


def export(srv, sid, key, headers=None):
    return request(srv, "POST", f"/v1/sessions/{sid}/export", {"key": key}, headers)


def url(srv, scheme="http"):
    return f"{scheme}://127.0.0.1:{srv.port}"


def imp(srv, sid, key, src, cap, name, token=None, headers=None, frm=None):
    body = {"key": key, "from": frm or url(src), "cap": cap, "blob": name}
    if token is not None:
        body["token"] = token
    return request(srv, "POST", f"/v1/sessions/{sid}/import", body, headers)


def bearer(t):
    return {"Authorization": "Bearer " + t}


def m(srv, name):
    return metrics(srv).get(name)


class Fake:
    """A listening socket that answers every request as `mode` says:
    "silent" (reads, never answers), or the bytes to send back."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.heads = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            try:
                c.settimeout(10)
                head = b""
                while b"\r\n\r\n" not in head:
                    d = c.recv(4096)
                    if not d:
                        break
                    head += d
                self.heads.append(head)
                if self.mode != "silent":
                    c.sendall(self.mode)
            except OSError:
                pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


# ---- the checks ----

def test_basic():
    A, B = Server(), Server()
    try:
        sa, sb, sb2 = new_session(A), new_session(B), new_session(B)
        rng = np.random.default_rng(7)
        x = rng.standard_normal((123, 7)).astype(np.float32)
        r = keep(A, sa, x, "v12")
        check("a value kept on A", r.status == 200, describe(r))
        want = frame(-x)
        r = export(A, sa, "v12")
        j = r.json() or {}
        cap, name = j.get("cap", ""), j.get("blob", "")
        check("export: 200, a capability of 64 lowercase hex digits, the blob name a PUT of the value has, "
              "its frame's bytes",
              r.status == 200 and len(cap) == 64 and all(c in "0123456789abcdef" for c in cap) and
              name == sha(chunk_list(want)) and j.get("bytes") == len(want) and set(j) == {"cap", "blob", "bytes"},
              describe(r))
        r = imp(B, sb, "w3", A, cap, name)
        check("import: 200 with the key, the blob and its bytes",
              r.status == 200 and r.json() == {"key": "w3", "blob": name, "bytes": len(want)}, describe(r))
        got, r = read(B, sb, "w3", x)
        check("a batch on B reads the value: the bytes of A's", got is not None and np.array_equal(got, x) and
              got.dtype == np.float32, describe(r))

        # used once
        r = request(A, "GET", "/v1/exports/" + cap)
        check("the capability again at A: 404, no such capability",
              error_is(r, 404, "not_found") and
              r.err().get("message") == "no such capability (used, expired or never issued)", describe(r))
        r = imp(B, sb, "w4", A, cap, name)
        e = r.err()
        check("... imported again: 502 upstream, quoting A's 404 and naming A",
              error_is(r, 502, "upstream") and "404" in e.get("message", "") and
              "no such capability" in e.get("message", "") and url(A) in e.get("message", "") and
              e.get("source") == url(A) and e.get("source_status") == 404, describe(r))
        got, r = read(B, sb, "w4", x)
        check("... and nothing stored", error_is(r, 404, "not_found"), describe(r))

        # the body a GET gives is the PUT body of the blob, and used up
        r = export(A, sa, "v12")
        c2 = (r.json() or {}).get("cap", "")
        r = request(A, "HEAD", "/v1/exports/" + c2)
        check("HEAD of a capability: 405, Allow: GET (it would use it up)",
              r.status == 405 and r.headers.get("allow") == "GET", f"{r.status} {r.headers}")
        r = request(A, "GET", "/v1/exports/" + c2)
        check("GET /v1/exports/CAP: the chunk list, then the frame (a PUT's body), application/octet-stream",
              r.status == 200 and r.body == chunk_list(want) + want and
              r.headers.get("content-type") == "application/octet-stream" and
              r.headers.get("tir-protocol") == "4", f"{r.status} {len(r.body)} bytes {r.headers}")
        r = request(A, "GET", "/v1/exports/" + c2)
        check("... and once only (404)", error_is(r, 404, "not_found"), describe(r))
        for bad in ("abc", c2.upper(), c2[:-1] + "g", c2 + "0"):
            r = request(A, "GET", "/v1/exports/" + bad)
            check(f"GET /v1/exports/{bad[:8]}... ({len(bad)} digits): 404 as unknown",
                  error_is(r, 404, "not_found") and "no such capability" in r.err().get("message", ""),
                  describe(r))

        # a capability is the source's tenant's bearer: any session of the
        # importer may use it, for any key
        sa2 = new_session(A)
        y = np.arange(10, dtype=np.int64)
        keep(A, sa2, y, "v1")
        r = export(A, sa2, "v1")
        j = r.json() or {}
        r = imp(B, sb2, "k.other", A, j.get("cap"), j.get("blob"))
        got, r2 = read(B, sb2, "k.other", y)
        check("a capability of another A session, imported into another B session", r.status == 200 and
              got is not None and np.array_equal(got, y), describe(r) + " / " + describe(r2))

        # the capability holds the value: its key dropped meanwhile
        r = export(A, sa, "v12")
        j = r.json() or {}
        t = "input t0: f32[]\nt1: f32[] = neg(t0)\nprint t1\n"
        h, _ = put_blob(A, np.float32(2))
        r0 = run(A, sa, t, {"t0": {"blob": h}}, drop=["v12"])
        got0, _ = read(A, sa, "v12", x)
        r = imp(B, sb, "w5", A, j.get("cap"), j.get("blob"))
        got, r2 = read(B, sb, "w5", x)
        check("the key dropped at A after the export: the capability still gives the value",
              r0.status == 200 and got0 is None and r.status == 200 and got is not None and np.array_equal(got, x),
              describe(r) + " / " + describe(r2))

        # a value exported again is not hashed again, but a key kept anew
        # is a new value: its own blob name
        z = rng.standard_normal((123, 7)).astype(np.float32)
        keep(A, sa, z, "v12")
        n1 = (export(A, sa, "v12").json() or {}).get("blob")
        j = export(A, sa, "v12").json() or {}
        r = imp(B, sb, "w7", A, j.get("cap"), j.get("blob"))
        got, r2 = read(B, sb, "w7", z)
        check("a key kept anew: its exports name the new value, twice alike, and it moves",
              n1 == j.get("blob") == sha(chunk_list(frame(-z))) and r.status == 200 and got is not None and
              np.array_equal(got, z), describe(r) + " / " + describe(r2))

        # a blob name that is not the value's
        r = export(A, sa2, "v1")
        j = r.json() or {}
        r = imp(B, sb, "w6", A, j.get("cap"), sha(b"not it"))
        e = r.err()
        check("a blob name that is not the value's: 502 bad_hash, naming A",
              error_is(r, 502, "bad_hash") and url(A) in e.get("message", "") and
              "nothing was stored" in e.get("message", ""), describe(r))
        got, r = read(B, sb, "w6", y)
        r2 = request(A, "GET", "/v1/exports/" + j.get("cap", ""))
        check("... nothing stored, and the capability is used", error_is(r, 404, "not_found") and
              error_is(r2, 404, "not_found"), describe(r) + " / " + describe(r2))

        ma, mb = metrics(A), metrics(B)
        check("A's metrics: exports issued 7, served 6, one open",
              ma.get("tir_exports_issued_total") == 7 and ma.get("tir_exports_served_total") == 6 and
              ma.get("tir_exports_open") == 1 and ma.get("tir_export_bytes") == len(want),
              str({k: v for k, v in ma.items() if "export" in k}))
        fy = len(frame(-y))
        check("B's metrics: imports 4 ok, 2 failed, the bytes of the 4",
              mb.get('tir_imports_total{result="ok"}') == 4 and mb.get('tir_imports_total{result="failed"}') == 2 and
              mb.get("tir_import_bytes_total") == 3 * len(want) + fy,
              str({k: v for k, v in mb.items() if "import" in k}))
        r = request(A, "GET", "/v1/info")
        lim = (r.json() or {}).get("limits", {})
        check("/v1/info: max_exports_per_session 64, transfer_seconds 60",
              lim.get("max_exports_per_session") == 64 and lim.get("transfer_seconds") == 60, str(lim))
        check("the log names a capability by 8 digits at most",
              not any(cap in ln or c2 in ln for ln in A.lines + B.lines) and
              A.logged(r"^GET /v1/exports/[0-9a-f]{8}\u2026 200 ") >= 1, "\n".join(A.lines[-5:]))
    finally:
        A.stop()
        B.stop()


def test_requests():
    """What an export and an import refuse, and the cap on capabilities."""
    A, B = Server(), Server()
    try:
        sa, sb = new_session(A), new_session(B)
        x = np.arange(6, dtype=np.float32)
        keep(A, sa, x, "v1")
        r = export(A, sa, "v1")
        j = r.json() or {}
        cap, name = j.get("cap", ""), j.get("blob", "")
        bad_from = ["file:///etc/passwd", "http://127.0.0.1", "127.0.0.1:" + str(A.port), "ftp://127.0.0.1:21",
                    f"http://127.0.0.1:{A.port}/v1", f"http://user@127.0.0.1:{A.port}",
                    f"http://127.0.0.1:{A.port}?x=1", "http://127.0.0.1:0", "http://127.0.0.1:65536",
                    "gopher://127.0.0.1:70", "http://:80", "http://[::1:80", " http://127.0.0.1:80"]
        for f in bad_from:
            r = imp(B, sb, "k", A, cap, name, frm=f)
            check(f"import from {f!r}: 400", error_is(r, 400, "bad_request") and
                  r.err().get("message", "").startswith("from:"), describe(r))
        for what, body in [("no key", {"from": url(A), "cap": cap, "blob": name}),
                           ("a bad key", {"key": "a/b", "from": url(A), "cap": cap, "blob": name}),
                           ("no cap", {"key": "k", "from": url(A), "blob": name}),
                           ("a short cap", {"key": "k", "from": url(A), "cap": cap[:60], "blob": name}),
                           ("no blob", {"key": "k", "from": url(A), "cap": cap}),
                           ("a token of two lines", {"key": "k", "from": url(A), "cap": cap, "blob": name,
                                                     "token": "a\nb"}),
                           ("an unknown field", {"key": "k", "from": url(A), "cap": cap, "blob": name, "x": 1}),
                           ("not an object", [1])]:
            r = request(B, "POST", f"/v1/sessions/{sb}/import", body)
            check(f"import with {what}: 400", error_is(r, 400, "bad_request"), describe(r))
        r = imp(B, "0" * 32, "k", A, cap, name)
        check("import into no session: 404", error_is(r, 404, "not_found"), describe(r))
        r = request(B, "POST", f"/v1/sessions/{sb}/import", b"{" + b" " * 9000 + b"}")
        check("an import body over 8 KiB: 413", error_is(r, 413, "too_large"), describe(r))
        r = request(A, "GET", "/v1/exports/" + cap)
        check("the capability was not used by any of them", r.status == 200, describe(r))
        r = export(A, "0" * 32, "v1")
        check("export from no session: 404", error_is(r, 404, "not_found"), describe(r))
        r = export(A, sa, "nope")
        check("export of no value: 404", error_is(r, 404, "not_found") and "nope" in r.err().get("message", ""),
              describe(r))
        for what, body in [("a bad key", {"key": "a b"}), ("no key", {}), ("an unknown field", {"key": "v1", "y": 2}),
                           ("not JSON", b"{")]:
            r = request(A, "POST", f"/v1/sessions/{sa}/export", body)
            check(f"export with {what}: 400", error_is(r, 400, "bad_request"), describe(r))
        r = request(A, "GET", f"/v1/sessions/{sa}/export")
        check("GET of an export: 405", error_is(r, 405, "method") and r.headers.get("allow") == "POST", describe(r))

        # at most 64 capabilities open a session
        caps = [(export(A, sa, "v1").json() or {}).get("cap") for _ in range(64)]
        r = export(A, sa, "v1")
        check("64 capabilities open, the 65th: 429 too_many",
              all(caps) and error_is(r, 429, "too_many") and "64" in r.err().get("message", ""), describe(r))
        check("/metrics: 64 open, their bytes", m(A, "tir_exports_open") == 64 and
              m(A, "tir_export_bytes") == 64 * len(frame(x)), str(m(A, "tir_exports_open")))
        r = request(A, "GET", "/v1/exports/" + caps[0])
        r2 = export(A, sa, "v1")
        check("one used: another may be issued", r.status == 200 and r2.status == 200, describe(r2))
        # they die with their session
        r = request(A, "DELETE", f"/v1/sessions/{sa}")
        r2 = request(A, "GET", "/v1/exports/" + caps[1])
        check("the session deleted: its capabilities are gone (404), none open",
              r.status == 204 and error_is(r2, 404, "not_found") and m(A, "tir_exports_open") == 0 and
              m(A, "tir_export_bytes") == 0, describe(r2))
    finally:
        A.stop()
        B.stop()


def test_expiry():
    """A capability dies with its session: past its TTL, or its lease."""
    A = Server("--session-ttl", "3", "--session-lease", "1")
    try:
        x = np.arange(4, dtype=np.float64)
        st = new_session(A)  # no lease: the TTL
        r = request(A, "POST", "/v1/sessions", {"lease": True})
        sl = (r.json() or {}).get("session")
        keep(A, sl, x, "v")
        cl = (export(A, sl, "v").json() or {}).get("cap", "")
        gone = eventually(lambda: m(A, 'tir_sessions_expired_total{reason="lease"}') == 1, 30)
        r = request(A, "GET", "/v1/exports/" + cl)
        check("the session's lease ran out: its capability is gone (404)", gone and error_is(r, 404, "not_found"),
              describe(r))
        keep(A, st, x, "v")
        ct = (export(A, st, "v").json() or {}).get("cap", "")
        gone = eventually(lambda: m(A, 'tir_sessions_expired_total{reason="ttl"}') == 1, 30)
        r = request(A, "GET", "/v1/exports/" + ct)
        check("the session idle past its TTL: its capability is gone (404), none open",
              gone and error_is(r, 404, "not_found") and m(A, "tir_exports_open") == 0, describe(r))
    finally:
        A.stop()


def test_tokens(tmp):
    """A capability is the issuing session's tenant's: another tenant's
    token is told 404, as for none; no token 401.  The token a source
    wants travels in the import.  And the client's calls (xfer_client)."""
    path = os.path.join(tmp, "tokens")
    with open(path, "w") as f:
        f.write("alice tok-alice\nbob tok-bob\n")
    os.chmod(path, 0o600)
    A, B = Server("--tokens", path), Server("--token", "tok-b")
    try:
        ha, hb = bearer("tok-alice"), bearer("tok-b")
        sa, sb = new_session(A, ha), new_session(B, hb)
        x = np.arange(12, dtype=np.int32).reshape(3, 4)
        keep(A, sa, x, "v", ha)
        j = export(A, sa, "v", ha).json() or {}
        cap, name = j.get("cap", ""), j.get("blob", "")
        r = request(A, "GET", "/v1/exports/" + cap)
        check("tokens: a GET without a token: 401", error_is(r, 401, "unauthorized"), describe(r))
        r = request(A, "GET", "/v1/exports/" + cap, headers=bearer("tok-bob"))
        check("tokens: another tenant's token: 404, as an unknown capability",
              error_is(r, 404, "not_found") and r.err().get("message") ==
              "no such capability (used, expired or never issued)", describe(r))
        r = imp(B, sb, "k", A, cap, name, headers=hb)
        check("tokens: an import without the source's token: 502 quoting its 401",
              error_is(r, 502, "upstream") and r.err().get("source_status") == 401 and
              "401" in r.err().get("message", ""), describe(r))
        r = imp(B, sb, "k", A, cap, name, token="tok-bob", headers=hb)
        check("tokens: with another tenant's: 502 quoting its 404", error_is(r, 502, "upstream") and
              r.err().get("source_status") == 404, describe(r))
        r = imp(B, sb, "k", A, cap, name, token="tok-alice")
        check("tokens: the importer needs its own token (401)", error_is(r, 401, "unauthorized"), describe(r))
        r = imp(B, sb, "k", A, cap, name, token="tok-alice", headers=hb)
        got, r2 = read(B, sb, "k", x, hb)
        check("tokens: with the issuing tenant's token: 200, the value (none of the tries above used it)",
              r.status == 200 and got is not None and np.array_equal(got, x), describe(r) + " / " + describe(r2))
        check("tokens: the log has no token and no capability",
              not any("tok-" in ln or cap in ln for ln in A.lines + B.lines), "")

        # the client's calls, with tokens
        env = dict(os.environ)
        env.pop("TIR_TOKEN", None)
        p = subprocess.run([CLIENT, f"127.0.0.1:{A.port}", f"127.0.0.1:{B.port}", "tok-alice", "tok-b"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env)
        out = p.stdout.decode("utf-8", "replace").splitlines()
        for line in out:
            if line.startswith("ok ") or line.startswith("FAIL "):
                print(line)
                tirnet.passed += line.startswith("ok ")
                tirnet.failed += line.startswith("FAIL ")
        check("xfer_client: exit 0 and its summary", p.returncode == 0 and out and
              out[-1].endswith(" passed, 0 failed"), "\n".join(out[-5:]))
    finally:
        A.stop()
        B.stop()


def test_sources():
    """Sources that cannot give the value: down, silent, not tir,
    redirecting; a value over the importer's --max-body.  A slow source
    holds a compute thread, never the HTTP side."""
    A = Server()
    B = Server("--transfer-seconds", "3", "--max-body", "1M")
    fakes = []
    try:
        sa, sb, sb2 = new_session(A), new_session(B), new_session(B)
        x = np.arange(5, dtype=np.float32)
        keep(A, sa, x, "v")
        j = export(A, sa, "v").json() or {}
        cap, name = j.get("cap", ""), j.get("blob", "")

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
        s.close()
        t0 = time.monotonic()
        r = imp(B, sb, "k", A, cap, name, frm=f"http://127.0.0.1:{closed}")
        took = time.monotonic() - t0
        check("a source down (its port closed): 502 upstream naming it, at once",
              error_is(r, 502, "upstream") and f"127.0.0.1:{closed}" in r.err().get("message", "") and took < 2,
              f"{took:.2f} s {describe(r)}")

        silent = Fake("silent")
        fakes.append(silent)
        out = {}

        def slow():
            t0 = time.monotonic()
            out["r"] = imp(B, sb, "k", A, cap, name, frm=f"http://127.0.0.1:{silent.port}")
            out["took"] = time.monotonic() - t0
        th = threading.Thread(target=slow)
        th.start()
        waiting = eventually(lambda: len(silent.heads) == 1, 30)
        t1 = time.monotonic()
        ok = tirnet.healthy(B)
        h, _ = put_blob(B, x)
        r2 = run(B, sb2, neg_text(x), {"t0": {"blob": h}})
        side = time.monotonic() - t1
        th.join(60)
        r = out.get("r")
        # (held behind the import, they would take the 3 s it waits)
        check("a silent source: others are served meanwhile (healthz, another session's batch)",
              waiting and ok and r2.status == 200 and side < 2, f"{side:.2f} s {describe(r2)}")
        check("... and the import fails after --transfer-seconds (3): 502 upstream naming it",
              r is not None and error_is(r, 502, "upstream") and "within 3 s" in r.err().get("message", "") and
              f"127.0.0.1:{silent.port}" in r.err().get("message", "") and 2.5 < out["took"] < 20,
              f"{out.get('took')} s; {describe(r) if r else 'no answer'}")
        head = silent.heads[0].decode("latin-1") if silent.heads else ""
        check("... it asked GET /v1/exports/CAP, Tir-Protocol: 4, no token",
              head.startswith(f"GET /v1/exports/{cap} HTTP/1.1\r\n") and "\r\nTir-Protocol: 4\r\n" in head and
              "authorization" not in head.lower(), head[:300])

        body = b"<html>secret intranet page</html>"
        plain = Fake(b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        fakes.append(plain)
        r = imp(B, sb, "k", A, cap, name, frm=f"http://127.0.0.1:{plain.port}")
        check("a source that is no tir server: 502 upstream, its body not quoted",
              error_is(r, 502, "upstream") and "no tir server" in r.err().get("message", "") and
              b"secret" not in r.body, describe(r))
        there = f"{url(A)}/v1/exports/{cap}".encode()
        redirect = Fake(b"HTTP/1.1 302 Found\r\nLocation: " + there + b"\r\nTir-Protocol: 4\r\n"
                        b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        fakes.append(redirect)
        r = imp(B, sb, "k", A, cap, name, frm=f"http://127.0.0.1:{redirect.port}")
        r2 = request(A, "GET", "/v1/exports/" + cap)
        check("a redirect is not followed (502 quoting the 302; the capability it names unused)",
              error_is(r, 502, "upstream") and r.err().get("source_status") == 302 and r2.status == 200,
              describe(r) + " / " + describe(r2))

        big = np.zeros(300000, np.float32)  # 1.2 MB: over B's --max-body 1M
        keep(A, sa, big, "big")
        j = export(A, sa, "big").json() or {}
        r = imp(B, sb, "big", A, j.get("cap"), j.get("blob"))
        got, r2 = read(B, sb, "big", big)
        check("a value over the importer's --max-body: 413, nothing stored",
              error_is(r, 413, "too_large") and "--max-body" in r.err().get("message", "") and got is None,
              describe(r))
    finally:
        for f in fakes:
            f.close()
        A.stop()
        B.stop()


def test_peers():
    """--peers: an import's source is checked before any connection.  B
    with --peers 127.0.0.2: A's open port and a closed one on 127.0.0.1
    get the same 403, at once (no port-scan oracle); other spellings of an
    IPv4 address are refused (400); by default loopback is a peer, and a
    name (localhost) resolves to one; a tir-speaking source's own words are
    not quoted back."""
    A = Server()
    B = Server("--peers", "127.0.0.2", "--peers", "10.9.0.0/16,fd00::/8")
    C = Server()
    fakes = []
    try:
        sa, sb, sc = new_session(A), new_session(B), new_session(C)
        x = np.arange(5, dtype=np.float32)
        keep(A, sa, x, "v")
        j = export(A, sa, "v").json() or {}
        cap, name = j.get("cap", ""), j.get("blob", "")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
        s.close()
        answers, times = [], []
        for frm in (url(A), f"http://127.0.0.1:{closed}"):
            t0 = time.monotonic()
            r = imp(B, sb, "k", A, cap, name, frm=frm)
            times.append(time.monotonic() - t0)
            answers.append((r.status, r.err().get("code"), r.err().get("message", "").replace(frm, "FROM")))
        check("peers: an open port and a closed one of a non-peer: the same 403, at once",
              answers[0] == answers[1] and answers[0][:2] == (403, "forbidden") and
              "--peers" in answers[0][2] and max(times) < 1.0, f"{answers} {times}")
        check("peers: nothing was asked of A (its capability is unused)",
              request(A, "GET", "/v1/exports/" + cap).status == 200)
        j = export(A, sa, "v").json() or {}
        cap, name = j.get("cap", ""), j.get("blob", "")
        for host in ("2130706433", "0x7f.1", "017700000001", "127.1", "0177.0.0.1"):
            r = imp(C, sc, "k", A, cap, name, frm=f"http://{host}:{A.port}")
            check(f"peers: {host} is no spelling taken (400)", error_is(r, 400, "bad_request") and
                  "four decimal numbers" in r.err().get("message", ""), describe(r))
        r = imp(C, sc, "k", A, cap, name, frm=f"http://localhost:{A.port}")
        got, _ = read(C, sc, "k", x)
        check("peers: by default loopback is a peer, and localhost resolves to it (200)",
              r.status == 200 and got is not None and np.array_equal(got, x), describe(r))
        r = request(B, "GET", "/v1/info")
        check("peers: the server started with --peers given twice and a list", r.status == 200)
        body = b'{"error":{"status":404,"code":"not_found","message":"secret-internal-detail"}}'
        liar = Fake(b"HTTP/1.1 404 Not Found\r\nTir-Protocol: 4\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        fakes.append(liar)
        r = imp(C, sc, "k2", A, cap, name, frm=f"http://127.0.0.1:{liar.port}")
        check("peers: a source's own message is not quoted back (its status and a fixed phrase)",
              error_is(r, 502, "upstream") and r.err().get("source_status") == 404 and
              b"secret" not in r.body and "no such capability" in r.err().get("message", ""), describe(r))
    finally:
        for f in fakes:
            f.close()
        A.stop()
        B.stop()
        C.stop()
    for bad in ("1.2.3", "10.0.0.0/33", "example.org", "2130706433"):
        p = subprocess.run([tirnet.TIR, "serve", "--port", "0", "--peers", bad], capture_output=True, timeout=30)
        check(f"peers: --peers {bad} refused at start", p.returncode != 0 and b"--peers" in p.stderr,
              p.stderr.decode()[:200])


def test_tls(tmp):
    """An https source: the importer checks its certificate against
    TIR_CA_FILE (its own environment's) or the system's CAs."""
    if not shutil.which("openssl"):
        check("tls: the openssl command", False, "missing (make deps installs it)")
        return
    ca, key, crt = (os.path.join(tmp, n) for n in ("ca.pem", "srv.key", "srv.pem"))
    cakey, csr, ext = (os.path.join(tmp, n) for n in ("ca.key", "srv.csr", "srv.ext"))
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    cmds = [["openssl", "req", "-x509", *ec, "-keyout", cakey, "-out", ca, "-days", "2", "-subj", "/CN=tir xfer ca"],
            ["openssl", "req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=tir xfer"],
            ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey, "-CAcreateserial", "-out", crt,
             "-days", "2", "-extfile", ext]]
    for c in cmds:
        if subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            check("tls: certificates", False, " ".join(c))
            return
    A = Server("--tls-cert", crt, "--tls-key", key)
    B = Server(env={"TIR_CA_FILE": ca})
    B2 = Server()
    try:
        ctx = ssl.create_default_context(cafile=ca)

        def conn():
            return http.client.HTTPSConnection("127.0.0.1", A.port, timeout=30, context=ctx)
        sa = new_session(A, conn=conn())
        x = np.arange(7, dtype=np.float32)
        f = frame(x)
        h, body = blob(f)
        request(A, "PUT", "/v1/blobs/" + h, body, conn=conn())
        run(A, sa, neg_text(x), {"t0": {"blob": h}}, conn=conn(), keep={"t1": "v"})
        caps = [(request(A, "POST", f"/v1/sessions/{sa}/export", {"key": "v"}, conn=conn()).json() or {})
                for _ in range(3)]
        sb, sb2 = new_session(B), new_session(B2)
        r = imp(B2, sb2, "k", A, caps[0].get("cap"), caps[0].get("blob"), frm=url(A, "https"))
        check("tls: an https source whose CA the importer does not trust: 502 upstream, it says so",
              error_is(r, 502, "upstream") and "not trusted" in r.err().get("message", ""), describe(r))
        r = imp(B, sb, "k", A, caps[1].get("cap"), caps[1].get("blob"), frm=url(A, "http"))
        check("tls: http:// to an https source: 502 upstream", error_is(r, 502, "upstream"), describe(r))
        r = imp(B, sb, "k", A, caps[2].get("cap"), caps[2].get("blob"), frm=url(A, "https"))
        got, r2 = read(B, sb, "k", x)
        check("tls: an https source, its CA in the importer's TIR_CA_FILE: 200, the value",
              r.status == 200 and got is not None and np.array_equal(got, x), describe(r) + " / " + describe(r2))
    finally:
        A.stop()
        B.stop()
        B2.stop()


def test_big():
    """64 MiB of f32 from A to B: the bytes, the time, B's peak memory."""
    A, B = Server(), Server()
    try:
        sa, sb = new_session(A), new_session(B)
        n = 16 << 20
        x = np.random.default_rng(3).standard_normal(n, dtype=np.float32)
        r = keep(A, sa, x, "v")
        check("64 MiB: kept on A", r.status == 200, describe(r))
        hwm0 = B.hwm_kib()
        t0 = time.monotonic()
        j = export(A, sa, "v").json() or {}
        t1 = time.monotonic()
        r = imp(B, sb, "v", A, j.get("cap"), j.get("blob"))
        t2 = time.monotonic()
        grew = B.hwm_kib() - hwm0
        mib = (len(frame(x)) + len(chunk_list(frame(x)))) / 2**20
        print(f"# 64 MiB: export {(t1 - t0) * 1e3:.0f} ms, import {(t2 - t1) * 1e3:.0f} ms "
              f"({mib / 1024 / (t2 - t1):.2f} GiB/s); B's peak grew {grew / 1024:.0f} MiB")
        check("64 MiB: imported", r.status == 200 and (r.json() or {}).get("bytes") == 16 + 8 + 4 * n, describe(r))
        check("64 MiB: B's peak memory grew by less than twice the value",
              grew < 2 * 64 * 1024 + RSS_SLACK_KIB, f"{grew / 1024:.0f} MiB")
        got, r = read(B, sb, "v", x)
        check("64 MiB: B's batch reads A's bytes", got is not None and np.array_equal(got, x), describe(r))
    finally:
        A.stop()
        B.stop()


def chain_text(n):
    """n chained 2048 x 2048 matmuls (serve_test.py's): a batch no
    machine finishes within the test; it ends when its client goes away."""
    lines = ["x0: f32[2048, 2048] = randn([2048, 2048], seed=1)", "w: f32[2048, 2048] = mul(x0, 0.0221)"]
    lines += [f"x{i + 1}: f32[2048, 2048] = matmul(x{i}, w)" for i in range(n)]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


def test_stopping():
    """A stopping server takes no new export or import: 503."""
    A, B = Server(), Server()
    sock = None
    try:
        sa, sb, sb2 = new_session(A), new_session(B), new_session(B)
        x = np.arange(3, dtype=np.float32)
        keep(A, sa, x, "v")
        keep(B, sb2, x, "v")
        j = export(A, sa, "v").json() or {}
        text = chain_text(20000)
        body = json.dumps({"graph": sha(text), "text": text, "inputs": {}}).encode()
        sock = socket.create_connection(("127.0.0.1", B.port), timeout=10)
        sock.sendall(b"POST /v1/sessions/%s/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % (sb.encode(), len(body)) + body)
        running = B.wait_metric("tir_batches_running", 1)
        B.proc.send_signal(signal.SIGTERM)
        stopping = B.wait_log(r"^tir serve: stopping once 1 batch received is answered$")
        r = imp(B, sb2, "k", A, j.get("cap"), j.get("blob"))
        r2 = export(B, sb2, "v")
        check("stopping: an import and an export get 503 busy, the server is stopping",
              running and stopping and error_is(r, 503, "busy") and "stopping" in r.err().get("message", "") and
              error_is(r2, 503, "busy"), describe(r) + " / " + describe(r2))
        r = request(A, "GET", "/v1/exports/" + j.get("cap", ""))
        check("stopping: ... and the capability was not used", r.status == 200, describe(r))
        sock.close()
        sock = None
        st = B.stop()
        check("stopping: exit 0", st == 0, f"exit {st}")
    finally:
        if sock:
            sock.close()
        A.stop()
        B.stop()


def main():
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="tir-xfer.")
    try:
        for t in (test_basic, test_requests, test_expiry, lambda: test_tokens(tmp), test_sources, test_peers,
                  lambda: test_tls(tmp), test_big, test_stopping):
            try:
                t()
            except Exception as e:  # a check that crashed is one failure, the rest go on
                check(getattr(t, "__name__", "test"), False, f"{type(e).__name__}: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # the servers' logs: no sanitizer report
    reports = [ln for lines in ALL_LINES for ln in lines if "Sanitizer" in ln or "runtime error" in ln]
    check("no sanitizer report in the servers' logs", not reports, "\n".join(reports[:5]))
    print(f"# xfer_test: {time.monotonic() - t0:.1f} s")
    print(f"{tirnet.passed} passed, {tirnet.failed} failed")
    return tirnet.failed == 0


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
