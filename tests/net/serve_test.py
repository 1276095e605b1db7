#!/usr/bin/python3
"""tests/net/serve_test.py TIR [--quick] — `tir serve` against
docs/protocol.md, with servers this script starts on free loopback ports
and stops.  It checks every endpoint and the doc's curl examples, each error
row of the protocol table, malformed and truncated JSON and frames, a wrong
hash (nothing stored), the token (401 without or with a wrong one), bodies
over --max-body (413, and the server goes on), run bodies judged by the
count of their JSON values before they are parsed (a 50 MiB [0,0,...] is
413 and the server's peak memory stays near the body's), a client that
goes away in the middle of an upload, connections (at most 32 of one address, a
request head within --header-timeout whatever is trickled, a first head
that libmicrohttpd would refuse answered in JSON, from raw sockets bound
to other loopback addresses), sessions (isolated, DELETE, TTL expiry, a
lease reclaimed soon after its client stops renewing, tir's REPL renewing
its own while idle), LRU
eviction of blobs past --blob-cache, the request log, exit statuses (a port
taken, bad flags, SIGTERM and SIGINT stop with 0), and a load test: 64
concurrent clients x 50 batches, each result checked against NumPy, none
lost, and the server's resident memory back near its baseline afterwards.

Prints one "ok NAME" or "FAIL NAME: WHY" line per check, then "N passed, M
failed".  Standard library (http.client, socket) and NumPy only: Debian's
/usr/bin/python3.  --quick skips the load test.

No check depends on the machine's speed: one that needs a batch running,
an upload under way, a session expired or a line logged before it acts
waits for the server to show it (/metrics, its log), polled for at most
60 s (eventually()); the long batches are chains that no machine finishes
within the test, and they end by their client going away.  The bounds on
how long something took are for promises ("promptly") and hold on one CPU
shared with two busy loops.  A baseline of memory is taken once the
server's idle trim has been seen (Server.wait_trim: tir_idle_trims_total)."""

import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tirnet  # noqa: E402  (tests/net/tirnet.py)
from tirnet import (ALL_LINES, CHUNK, DTYPES, Reply, Server, blob, check, chunk_list, describe, drained,  # noqa: E402
                    error_is, eventually, frame, healthy, metrics, new_session, put_blob, raw, request,
                    results, run, sha, unframe)

TIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/tir"
QUICK = "--quick" in sys.argv
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEADLINE = time.monotonic() + 230  # the whole script (serve.sh allows 600)

tirnet.TIR = TIR
# AddressSanitizer's quarantine keeps up to 256 MiB of freed memory resident
ASAN = os.path.exists(TIR) and b"__asan_init" in open(TIR, "rb").read()
RSS_SLACK_KIB = 256 * 1024 if ASAN else 0


EXP3 = "input t0: f32[3]\nt1: f32[3] = exp(t0)\nprint t1\n"


# ---- the checks ----

def test_endpoints():
    srv = Server("--max-sessions", "5", "--session-ttl", "77", "--blob-cache", "12345678",
                 "--max-body", "2M", "--threads", "2")
    try:
        check("start line", srv.first == f"tir serve: listening on http://127.0.0.1:{srv.port} (protocol 4)",
              srv.first)
        r = request(srv, "GET", "/healthz")
        check("GET /healthz", r.status == 200 and r.body == b"ok" and r.headers.get("tir-protocol") == "4",
              describe(r))
        r = request(srv, "GET", "/v1/info")
        j = r.json() or {}
        lim = j.get("limits", {})
        check("GET /v1/info", r.status == 200 and j.get("name") == "tir" and j.get("protocol") == 4 and
              isinstance(j.get("version"), str) and "matmul" in j.get("ops", []) and
              "exp" in j.get("ops", []) and j.get("ops") == sorted(j.get("ops", [])) and
              j.get("dtypes") == ["bool", "i32", "i64", "f32", "f64", "f16", "bf16", "i8", "u8", "i16"] and
              lim.get("max_body") == 2 << 20 and lim.get("max_sessions") == 5 and
              lim.get("session_ttl") == 77 and lim.get("blob_cache") == 12345678 and
              lim.get("max_rank") == 8 and lim.get("max_elems") == 1 << 32 and
              lim.get("max_values") == 4096 and lim.get("max_text") == 256 << 20 and
              j.get("threads") == 2 and isinstance(j.get("blas"), str), describe(r))

        r = request(srv, "POST", "/v1/sessions")
        j = r.json() or {}
        sid = j.get("session", "")
        check("POST /v1/sessions", r.status == 201 and re.fullmatch(r"[0-9a-f]{32}", sid) and
              j.get("ttl") == 77, describe(r))
        other = new_session(srv)
        check("session ids differ", other and other != sid, f"{sid} {other}")

        x = np.array([1, 2, 3], np.float32)
        f = frame(x)
        h, body = blob(f)
        r = request(srv, "PUT", "/v1/blobs/" + h, body)
        check("PUT blob: 201 stored", r.status == 201 and (r.json() or {}).get("blob") == h and
              r.json().get("bytes") == len(f), describe(r))
        r = request(srv, "PUT", "/v1/blobs/" + h, body)
        check("PUT blob again: 200 held", r.status == 200, describe(r))

        # the first run of a graph: 409 for the text, then the text
        g = sha(EXP3)
        r = request(srv, "POST", f"/v1/sessions/{sid}/run", {"graph": g, "inputs": {"t0": {"blob": h}}})
        e = r.err()
        check("run without the text: 409 missing graph", error_is(r, 409, "missing") and
              e.get("graph") is True and e.get("blobs") == [], describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}})
        ok = r.status == 200 and r.headers.get("content-type") == "application/x-tir-results"
        if ok:
            meta, vals = results(r.body)
            ok = len(vals) == 1 and vals[0].dtype == np.float32 and np.allclose(vals[0], np.exp(x), rtol=1e-6)
            ok = ok and meta.get("graph_cached") is False and {"plan_ms", "run_ms", "peak_bytes", "nops",
                                                               "nkernels", "plan_cached"} <= set(meta)
            ok = ok and "explain" not in meta and "profile" not in meta
        check("run: 200, exp of the blob", ok, describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, send_text=False)
        ok = r.status == 200
        if ok:
            meta, vals = results(r.body)
            ok = meta.get("graph_cached") is True and meta.get("plan_cached") is True and \
                np.allclose(vals[0], np.exp(x), rtol=1e-6)
        check("run again by hash: graph and plan cached", ok, describe(r))

        # explain, profile, no fusion; two print items in order
        t2 = ("input t0: f32[3]\ninput t1: f32[3]\nt2: f32[3] = mul(t0, t1)\nt3: f32[3] = exp(t2)\n"
              "t4: f32[] = sum(t3)\nprint t3, t4\n")
        y = np.array([0.5, -1, 2], np.float32)
        hy, _ = put_blob(srv, y)
        for opts in ({"explain": True}, {"profile": True}, {"fuse": False, "explain": True}):
            r = run(srv, sid, t2, {"t0": {"blob": h}, "t1": {"blob": hy}}, **opts)
            ok = r.status == 200
            if ok:
                meta, vals = results(r.body)
                want = np.exp(x * y)
                ok = len(vals) == 2 and np.allclose(vals[0], want, rtol=1e-6) and vals[1].shape == () and \
                    np.allclose(vals[1], want.sum(), rtol=1e-5)
                for k in opts:
                    if k != "fuse":
                        ok = ok and isinstance(meta.get(k), str) and meta[k] != ""
                if opts.get("fuse") is False:
                    ok = ok and "no-fuse" in meta.get("explain", "") and meta["nkernels"] == 3
            check(f"run with {json.dumps(opts)}", ok, describe(r))

        # keep a value, use it from the session, drop it
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, keep={"t1": "e.x-1"})
        check("run with keep", r.status == 200, describe(r))
        t3 = "input t0: f32[3]\nt1: f32[3] = neg(t0)\nprint t1\n"
        r = run(srv, sid, t3, {"t0": {"value": "e.x-1"}})
        ok = r.status == 200 and np.allclose(results(r.body)[1][0], -np.exp(x), rtol=1e-6)
        check("run on a kept value", ok, describe(r))
        r = run(srv, other, t3, {"t0": {"value": "e.x-1"}})
        check("sessions isolated: another session cannot name it (404)", error_is(r, 404, "not_found"),
              describe(r))
        r = run(srv, sid, t3, {"t0": {"value": "e.x-1"}}, drop=["e.x-1"])
        check("run with drop", r.status == 200, describe(r))
        r = run(srv, sid, t3, {"t0": {"value": "e.x-1"}})
        check("a dropped key is gone (404)", error_is(r, 404, "not_found"), describe(r))
        # found by fuzz_serve.py: each drop and keep key was compared with
        # every other one (150,000 keys held a thread for a minute; such a
        # request is now refused unparsed, past max_run_values, and the
        # keys are sorted, not compared pairwise)
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, drop=[f"d{i}" for i in range(150000)])
        check("a drop of 150,000 keys: 413 too_large (JSON values)", error_is(r, 413, "too_large"), describe(r))
        t0 = time.monotonic()
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, keep={"t1": "d7"},
                drop=[f"d{i}" for i in range(16000)] + ["e.x-1", "d7"])
        took = time.monotonic() - t0
        check("a drop of 16,000 keys: 200 within 5 s", r.status == 200 and took < 5, f"{took:.1f} s; {describe(r)}")
        r = run(srv, sid, t3, {"t0": {"value": "d7"}})
        check("... and what it kept under a key it dropped is there", r.status == 200, describe(r))
        r = run(srv, sid, t3, {"t0": {"value": "d7"}}, drop=["d7", "d7"])
        check("a key dropped twice: 200", r.status == 200, describe(r))

        m = metrics(srv)
        r = request(srv, "GET", "/metrics")
        check("GET /metrics", r.status == 200 and r.headers.get("content-type", "").startswith("text/plain") and
              m.get('tir_requests_total{status="200"}', 0) >= 5 and m.get('tir_requests_total{status="201"}', 0) >= 3
              and m.get("tir_sessions") == 2 and m.get("tir_sessions_created_total") == 2 and
              m.get("tir_blob_cache_hits_total", 0) >= 5 and len(f) + len(frame(y)) < m.get("tir_blob_cache_bytes", 0) <= len(f) + len(frame(y)) + 2048
              and m.get("tir_graph_cache_hits_total", 0) >= 1 and m.get("tir_bytes_in_total", 0) > 0 and
              m.get("tir_bytes_out_total", 0) > 0 and "tir_kernel_seconds_total" in m and
              "tir_blob_cache_misses_total" in m and "tir_blob_cache_evictions_total" in m and
              m.get("tir_batches_queued") == 0 and m.get("tir_batches_running") == 0, str(m))

        r = request(srv, "DELETE", f"/v1/sessions/{sid}")
        check("DELETE session: 204", r.status == 204 and r.body == b"", describe(r))
        r = request(srv, "DELETE", f"/v1/sessions/{sid}")
        check("DELETE it again: 404", error_is(r, 404, "not_found"), describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}})
        check("run in a deleted session: 404", error_is(r, 404, "not_found"), describe(r))

        # keep-alive: several requests on one connection
        c = srv.conn()
        ok = all(request(srv, "GET", "/healthz", conn=c).status == 200 for _ in range(5))
        s2 = new_session(srv, conn=c)
        ok = ok and s2 and run(srv, s2, EXP3, {"t0": {"blob": h}}, conn=c).status == 200
        c.close()
        check("keep-alive connection", ok)

        # the log: one line per request (a request's line may come a moment
        # after its answer: once there are as many as requests made)
        pat = re.compile(r"^(GET|POST|PUT|DELETE) /\S* (\d{3}|-) \d+ \d+ \d+\.\d\dms( \(cut short by [a-z ]+\))?$")

        def reqlines():
            return [ln for ln in list(srv.lines) if not ln.startswith("tir serve:") and
                    not ln.startswith("microhttpd:")]
        eventually(lambda: len(reqlines()) >= srv.requests)
        bad = [ln for ln in reqlines() if not pat.match(ln)]
        check("log: one line per request, METHOD PATH STATUS IN OUT MS",
              len(reqlines()) == srv.requests >= 30 and not bad,
              f"{len(reqlines())} lines for {srv.requests} requests; bad: {bad[:3]}")
        reqlines = reqlines()
        check("log: session ids are shortened",
              not any(sid in ln or other in ln for ln in srv.lines) and
              any(re.search(r"POST /v1/sessions/[0-9a-f]{8}\u2026/run 200 ", ln) for ln in reqlines),
              str(reqlines[:8]))
    finally:
        st = srv.stop()
    check("SIGTERM: exit 0", st == 0, f"exit {st}")
    check("SIGTERM: says it stopped", srv.lines and srv.lines[-1] == "tir serve: stopped", str(srv.lines[-2:]))


def test_doc_examples():
    """The curl examples of docs/protocol.md, pasted into bash against a server."""
    if not (shutil.which("curl") and shutil.which("jq") and shutil.which("sha256sum")):
        check("docs/protocol.md curl examples (curl, jq or sha256sum missing: skipped)", True)
        return
    doc = open(os.path.join(ROOT, "docs", "protocol.md")).read()
    blocks = re.findall(r"```sh\n(.*?)```", doc, re.S)
    check("docs/protocol.md has its curl examples", len(blocks) >= 4, f"{len(blocks)} sh blocks")
    srv = Server()
    try:
        with tempfile.TemporaryDirectory() as d:
            outs = []
            env = dict(os.environ)
            state = ""
            for i, b in enumerate(blocks):
                script = b.replace("localhost:6667", f"localhost:{srv.port}")
                # each block runs after the ones before it, with their variables
                state_file = os.path.join(d, "state")
                full = (f". {state_file} 2>/dev/null\n" if state else "") + script + \
                    f"\ndeclare -p S H T G 2>/dev/null > {state_file} || true\n"
                p = subprocess.run(["bash", "-e", "-c", full], cwd=d, env=env, capture_output=True, timeout=20)
                state = "yes"
                outs.append((p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")))
            info = next((o for o in outs if '"protocol"' in o[1]), None)
            check("doc: curl /v1/info", info and info[0] == 0 and json.loads(info[1]).get("protocol") == 4,
                  str(outs[:1]))
            st = open(os.path.join(d, "state")).read()
            check("doc: S= makes a session", re.search(r'S="?[0-9a-f]{32}"?', st), st[:200])
            put = next((o for o in outs if '"blob"' in o[1]), None)
            check("doc: the frame by hand is stored (PUT)", put and put[0] == 0 and
                  json.loads(put[1]).get("bytes") == 40, str(outs))
            ran = next((o for b, o in zip(blocks, outs) if "od -A d" in b), (1, "", ""))
            od = ran[1].split()
            check("doc: the curl run answers TIRR (od)", ran[0] == 0 and od[1:5] == ["54", "49", "52", "52"],
                  str(ran)[:400])
            moved = next((o for b, o in zip(blocks, outs) if "/import" in b), (1, "", ""))
            try:
                j = json.loads(moved[1])
            except ValueError:
                j = {}
            check("doc: server to server: the export and the import (200, the 40-byte frame)",
                  moved[0] == 0 and j.get("key") == "w3" and j.get("bytes") == 40, str(moved)[:400])
    finally:
        srv.stop()


def test_errors():
    srv = Server("--max-body", "256K", "--max-sessions", "3")
    try:
        sid = new_session(srv)
        x = np.arange(3, dtype=np.float32)
        h, _ = put_blob(srv, x)
        runp = f"/v1/sessions/{sid}/run"

        # 400 bad_request: bodies that are not the request
        cases = [
            ("malformed JSON", b'{"graph": '),
            ("truncated JSON", json.dumps({"graph": sha(EXP3), "text": EXP3}).encode()[:-7]),
            ("JSON not an object", b'["graph"]'),
            ("empty body", b""),
            ("not UTF-8", b'{"graph": "\xff\xfe"}'),
            ("graph of the wrong kind", json.dumps({"graph": 5}).encode()),
            ("graph not a SHA-256", json.dumps({"graph": "ABC"}).encode()),
            ("no graph", json.dumps({"text": EXP3}).encode()),
            ("an unknown field", json.dumps({"graph": sha(EXP3), "colour": 1}).encode()),
            ("text of the wrong kind", json.dumps({"graph": sha(EXP3), "text": 7}).encode()),
            ("inputs of the wrong kind", json.dumps({"graph": sha(EXP3), "inputs": []}).encode()),
            ("a binding of the wrong kind", json.dumps({"graph": sha(EXP3), "inputs": {"t0": h}}).encode()),
            ("a binding with both", json.dumps({"graph": sha(EXP3), "inputs": {"t0": {"blob": h, "value": "a"}}}).encode()),
            ("a blob name not hex", json.dumps({"graph": sha(EXP3), "inputs": {"t0": {"blob": "zz"}}}).encode()),
            ("a key with a slash", json.dumps({"graph": sha(EXP3), "keep": {"t1": "a/b"}}).encode()),
            ("a key too long", json.dumps({"graph": sha(EXP3), "keep": {"t1": "k" * 65}}).encode()),
            ("drop not a list", json.dumps({"graph": sha(EXP3), "drop": "a"}).encode()),
            ("fuse not a bool", json.dumps({"graph": sha(EXP3), "fuse": 1}).encode()),
            ("a duplicate field", b'{"graph": "%s", "graph": "%s"}' % (sha(EXP3).encode(), sha(EXP3).encode())),
        ]
        for name, body in cases:
            r = request(srv, "POST", runp, body)
            check(f"400 bad_request: {name}", error_is(r, 400, "bad_request"), describe(r))

        # bindings that do not fit the text
        r = run(srv, sid, EXP3, {})
        check("400: an input without a binding", error_is(r, 400, "bad_request") and "t0" in r.err()["message"],
              describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}, "t9": {"blob": h}})
        check("400: a binding of no input", error_is(r, 400, "bad_request") and "t9" in r.err()["message"],
              describe(r))
        hi, _ = put_blob(srv, np.arange(3, dtype=np.int32))
        r = run(srv, sid, EXP3, {"t0": {"blob": hi}})
        check("400: a blob of another dtype", error_is(r, 400, "bad_request") and "i32[3]" in r.err()["message"]
              and "f32[3]" in r.err()["message"], describe(r))
        h4, _ = put_blob(srv, np.arange(4, dtype=np.float32))
        r = run(srv, sid, EXP3, {"t0": {"blob": h4}})
        check("400: a blob of another shape", error_is(r, 400, "bad_request") and "f32[4]" in r.err()["message"],
              describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, keep={"nope": "k"})
        check("400: keep names no value of the batch", error_is(r, 400, "bad_request"), describe(r))

        # 400 bad_hash
        f = frame(np.array([7, 8], np.float32))
        wrong = blob(f + b"x")[0]
        r = request(srv, "PUT", "/v1/blobs/" + wrong, blob(f)[1])
        check("400 bad_hash: a blob's chunk list", error_is(r, 400, "bad_hash") and
              "its chunk list hashes to " + blob(f)[0] in r.err()["message"], describe(r))
        good_name, body = blob(f)
        body = body[:-1] + b"\1"  # the list says the frame that was, the bytes differ
        r = request(srv, "PUT", "/v1/blobs/" + good_name, body)
        check("400 bad_hash: a chunk's bytes (chunk 0 named)", error_is(r, 400, "bad_hash") and
              "chunk 0 of 1 (bytes 0-31 of the frame)" in r.err()["message"], describe(r))
        r = run(srv, sid, EXP3.replace("[3]", "[2]"), {"t0": {"blob": wrong}})
        check("bad_hash: nothing was stored (409 lists it)", error_is(r, 409, "missing") and
              r.err().get("blobs") == [wrong], describe(r))
        r = request(srv, "POST", runp, {"graph": sha(EXP3 + " "), "text": EXP3, "inputs": {"t0": {"blob": h}}})
        check("400 bad_hash: text and graph differ", error_is(r, 400, "bad_hash"), describe(r))

        # 400 bad_request: frames that are not frames (with the right hash)
        good = frame(np.array([1, 2, 3], np.float32))
        frames = [
            ("empty", b""),
            ("short header", good[:10]),
            ("bad magic", b"TIRX" + good[4:]),
            ("unknown dtype", good[:4] + b"\x09" + good[5:]),
            ("rank over 8", good[:5] + b"\x09" + good[6:]),
            ("nonzero reserved bytes", good[:6] + b"\x01" + good[7:]),
            ("data bytes that do not fit the shape", good[:8] + struct.pack("<Q", 16) + good[16:]),
            ("truncated data", good[:-8]),
            ("nonzero padding", good[:-1] + b"\x01"),
            ("bytes after the frame", good + b"\0" * 8),
            ("a bool of 2", frame(np.array([True, False]))[:24] + b"\x02" + frame(np.array([True, False]))[25:]),
        ]
        for name, fr in frames:
            r = request(srv, "PUT", "/v1/blobs/" + blob(fr)[0], blob(fr)[1])
            check(f"400 bad_request: frame {name}", error_is(r, 400, "bad_request"), describe(r))
        # chunk lists that are not chunk lists
        gl = chunk_list(good)
        lists = [
            ("bad magic", b"TIRX" + gl[4:] + good, None),
            ("another chunk size", gl[:4] + struct.pack("<I", 1 << 20) + gl[8:] + good, None),
            ("a frame size the body does not have", gl[:8] + struct.pack("<Q", len(good) + 8) + gl[16:] + good,
             None),
            ("a short list", gl[:20], None),
            ("the head alone", gl[:10], None),
        ]
        for name, body, _ in lists:
            r = request(srv, "PUT", "/v1/blobs/" + sha(body[:len(gl)]), body)
            check(f"400 bad_request: chunk list {name}", error_is(r, 400, "bad_request") and
                  ("chunk list" in r.err()["message"] or "body:" in r.err()["message"]), describe(r))
        # protocol 1's blob (a bare frame), and a request that says protocol 1
        r = request(srv, "PUT", "/v1/blobs/" + sha(good), good)
        check("400 protocol: a bare frame, as protocol 1 sent it", error_is(r, 400, "protocol") and
              "protocol 1" in r.err()["message"] and "speaks protocol 4" in r.err()["message"], describe(r))
        r = request(srv, "POST", runp, {"graph": sha(EXP3), "inputs": {"t0": {"blob": h}}},
                    headers={"Tir-Protocol": "1"})
        check("400 protocol: a request of protocol 1", error_is(r, 400, "protocol") and
              "protocol 1; this server speaks 4" in r.err()["message"], describe(r))
        r = request(srv, "PUT", "/v1/blobs/" + "A" * 64, blob(good)[1])
        check("400 bad_request: blob name in capitals", error_is(r, 400, "bad_request"), describe(r))
        r = request(srv, "PUT", "/v1/blobs/abc", blob(good)[1])
        check("400 bad_request: blob name too short", error_is(r, 400, "bad_request"), describe(r))

        # 400 program: the text does not parse or check
        progs = [
            ("a syntax error", "input t0: f32[3]\nt1: f32[3] = exp(t0\nprint t1\n", 3),
            ("an unknown op", "input t0: f32[3]\nt1: f32[3] = expp(t0)\nprint t1\n", 2),
            ("a type error", "input t0: f32[3]\ninput t9: f32[4]\nt1: f32[3] = add(t0, t9)\nprint t1\n", 3),
            ("load", 'input t0: f32[3]\nt1: f32[3] = load("/etc/passwd")\nprint t1\n', 2),
        ]
        for name, text, line in progs:
            r = run(srv, sid, text, {"t0": {"blob": h}})
            e = r.err()
            ok = error_is(r, 400, "program") and e.get("line") == line and isinstance(e.get("col"), int) and \
                e.get("rendered", "").startswith(f"batch:{line}:{e.get('col')}: error: ")
            if name == "load":
                ok = ok and "a server reads no files; the client sends the data" in e.get("message", "")
            check(f"400 program: {name} (line, col, rendered)", ok, describe(r))

        # 401 needs a token: another server below
        # 404
        r = request(srv, "GET", "/nowhere")
        check("404: an unknown path", error_is(r, 404, "not_found"), describe(r))
        r = request(srv, "GET", "/v1/sessions/x/y")
        check("404: a path below a session", error_is(r, 404, "not_found"), describe(r))
        r = run(srv, "0" * 32, EXP3, {"t0": {"blob": h}})
        check("404: an unknown session", error_is(r, 404, "not_found"), describe(r))
        r = run(srv, "zz", EXP3, {"t0": {"blob": h}})
        check("404: a malformed session id", error_is(r, 404, "not_found"), describe(r))
        r = run(srv, sid, EXP3, {"t0": {"value": "nokey"}})
        check("404: an unknown value key", error_is(r, 404, "not_found"), describe(r))

        # 405
        for m, p in (("GET", "/v1/sessions"), ("POST", "/healthz"), ("GET", f"/v1/sessions/{sid}"),
                     ("GET", runp), ("GET", "/v1/blobs/" + h), ("DELETE", "/metrics")):
            r = request(srv, m, p)
            check(f"405: {m} {p.replace(sid, 'ID')}", error_is(r, 405, "method") and "allow" in r.headers,
                  describe(r))

        # 409: text and blobs missing, listed once each; nothing runs
        hz = sha(frame(np.zeros(3, np.float32)))
        t2 = "input a: f32[3]\ninput b: f32[3]\ninput c: f32[3]\nd: f32[3] = add(a, b)\ne: f32[3] = add(d, c)\nprint e\n"
        r = request(srv, "POST", runp, {"graph": sha(t2), "inputs": {"a": {"blob": hz}, "b": {"blob": h},
                                                                      "c": {"blob": hz}}})
        e = r.err()
        check("409 missing: the text and a blob, listed once", error_is(r, 409, "missing") and
              e.get("graph") is True and e.get("blobs") == [hz], describe(r))

        # 411
        c = srv.conn()
        c.putrequest("PUT", "/v1/blobs/" + blob(good)[0])
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        c.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(good), good))
        r = Reply(c.getresponse())
        c.close()
        check("411: a chunked blob", error_is(r, 411, "length_required"), describe(r))

        # 413: over --max-body by Content-Length, refused before the body
        big = b"{" + b" " * (300 << 10) + b"}"
        r = request(srv, "POST", runp, big)
        check("413: a body over --max-body", error_is(r, 413, "too_large"), describe(r))
        out = raw(srv, b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" %
                  (b"a" * 64, 1 << 40))
        check("413: a 1 TiB Content-Length, answered before any body",
              out.startswith(b"HTTP/1.1 413") and b'"too_large"' in out, out[:200])
        check("the server keeps serving after 413", healthy(srv))
        # chunked, no length: refused once it passes the limit
        c = srv.conn()
        c.putrequest("POST", runp)
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        for _ in range(80):
            c.send(b"%x\r\n%s\r\n" % (4096, b" " * 4096))
        c.send(b"0\r\n\r\n")
        r = Reply(c.getresponse())
        c.close()
        check("413: a chunked body past --max-body", error_is(r, 413, "too_large"), describe(r))
        # a chunked body within the limit works
        c = srv.conn()
        body = json.dumps({"graph": sha(EXP3), "text": EXP3, "inputs": {"t0": {"blob": h}}}).encode()
        c.putrequest("POST", runp)
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        for i in range(0, len(body), 7):
            c.send(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]))
        c.send(b"0\r\n\r\n")
        r = Reply(c.getresponse())
        c.close()
        check("a chunked run within the limit: 200", r.status == 200, describe(r))
        # a frame header asking for more elements than a tensor holds
        huge = b"TIRT" + struct.pack("<BBHQ", 3, 2, 0, 4 << 34) + struct.pack("<qq", 1 << 17, 1 << 17)
        r = request(srv, "PUT", "/v1/blobs/" + blob(huge)[0], blob(huge)[1])
        check("413: a frame over the element limit", error_is(r, 413, "too_large"), describe(r))
        # [2^32, 2^32] with no data bytes: the element count must not wrap to 0
        wrap = b"TIRT" + struct.pack("<BBHQ", 3, 2, 0, 0) + struct.pack("<qq", 1 << 32, 1 << 32)
        r = request(srv, "PUT", "/v1/blobs/" + blob(wrap)[0], blob(wrap)[1])
        check("413: a frame of [2^32, 2^32] and 0 bytes (the count would wrap)",
              error_is(r, 413, "too_large") and "more than 4294967296 elements" in r.err().get("message", ""), describe(r))
        check("the server keeps serving after it", healthy(srv))
        # a session over its value limit (4096)
        n = 4100
        text = "input t0: f32[3]\n" + "".join(f"v{i}: f32[3] = neg(t0)\n" for i in range(n)) + "print t0\n"
        r = run(srv, sid, text, {"t0": {"blob": h}}, keep={f"v{i}": f"k{i}" for i in range(n)})
        check("413: a session over its value limit", error_is(r, 413, "too_large"), describe(r))
        r = run(srv, sid, text, {"t0": {"blob": h}}, keep={f"v{i}": f"k{i}" for i in range(4096)})
        check("a session at its value limit: 200", r.status == 200, describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, keep={"t1": "one-more"})
        check("413: one value more", error_is(r, 413, "too_large"), describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, keep={"t1": "one-more"}, drop=["k0"])
        check("drop one, keep one: 200", r.status == 200, describe(r))

        # 422 runtime
        hz32, _ = put_blob(srv, np.zeros(2, np.int32))
        t = "input t0: i32[2]\nt1: i32[2] = add(t0, 1)\nt2: i32[2] = div(t1, t0)\nprint t2\n"
        r = run(srv, sid, t, {"t0": {"blob": hz32}})
        e = r.err()
        check("422 runtime: integer division by zero (line, col)", error_is(r, 422, "runtime") and
              e.get("line") == 3 and e.get("col") == 14 and "division by zero" in e.get("message", ""),
              describe(r))
        hix, _ = put_blob(srv, np.array([0, 5], np.int64))
        t = "input t0: f32[3]\ninput t1: i64[2]\nt2: f32[2] = gather(t0, t1)\nprint t2\n"
        r = run(srv, sid, t, {"t0": {"blob": h}, "t1": {"blob": hix}})
        check("422 runtime: an index out of range", error_is(r, 422, "runtime") and r.err().get("line") == 3,
              describe(r))
        check("the server keeps serving after 422", run(srv, sid, EXP3, {"t0": {"blob": h}}).status == 200)

        # found by fuzz_serve.py: a reduction of a generator read through a
        # broadcast killed the server (SIGFPE in the fusion planner)
        t = ("input t0: f32[3]\nt1: f32[2, 2] = ones([2, 2])\nt2: f32[3, 1, 2, 2] = expand(t1, [3, 1, 2, 2])\n"
             "t3: f32[1, 1, 1, 1] = max(t2, keepdims=true)\nt4: f32[1, 1, 1, 1] = exp(t3)\nprint t4\n")
        r = run(srv, sid, t, {"t0": {"blob": h}})
        check("a reduction of an expanded generator: 200, e (the planner divided by zero)",
              r.status == 200 and np.allclose(results(r.body)[1][0], np.full((1, 1, 1, 1), np.e, np.float32)),
              describe(r))
        check("the server lives after it", healthy(srv))

        # 503 busy: --max-sessions 3 (one open already)
        s2, s3 = new_session(srv), new_session(srv)
        r = request(srv, "POST", "/v1/sessions")
        check("503 busy: past --max-sessions, with Retry-After (every 503 has one)",
              error_is(r, 503, "busy") and r.headers.get("retry-after") == "1", describe(r))
        request(srv, "DELETE", f"/v1/sessions/{s3}")
        check("a session again after a DELETE", new_session(srv) is not None)

        # a client that goes away in the middle of an upload, or of its
        # headers.  Each upload goes once the server has begun it: a body
        # over 64 KiB has its share of --max-inflight reserved (/metrics)
        # when its headers are in; a connection closed before that would
        # be no request at all.
        before = srv.rss_kib()
        begun = 0
        for i in range(20):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" % (b"b" * 64)
                      + b"\0" * 30000)
            begun += srv.wait_metric("tir_inflight_body_bytes", 100000) and drained(s)
            s.close()
            srv.wait_metric("tir_inflight_body_bytes", 0)
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/sessions/%s/run HTTP/1.1\r\nHost: x\r\nContent-Le" % sid.encode())
        s.close()
        cut = r"^PUT /v1/blobs/bbbbbbbb\u2026 - \d+ 0 .*ms \(cut short by "
        srv.wait_log(cut, 20)
        check("uploads cut short: the server still serves", healthy(srv) and
              run(srv, sid, EXP3, {"t0": {"blob": h}}).status == 200)
        m = metrics(srv)
        check("uploads cut short: each begun, counted as aborted, nothing stored",
              begun == 20 and m.get("tir_requests_aborted_total", 0) >= 20 and
              error_is(run(srv, sid, EXP3, {"t0": {"blob": "b" * 64}}), 409, "missing"), f"{begun} begun; {m}")
        # the memory they held is given back (the idle trim may come later)
        freed = eventually(lambda: srv.rss_kib() < before + 8 * 1024 + RSS_SLACK_KIB)
        check("uploads cut short: memory freed", freed, f"{before} -> {srv.rss_kib()} KiB")
        check("log: a cut-short upload says so",
              any(re.match(r"PUT /v1/blobs/bbbbbbbb\u2026 - 30000 0 .*ms \(cut short by ", ln) for ln in srv.lines),
              str([ln for ln in srv.lines if "bbbb" in ln][:2]))
        check("the server still serves after all the errors", healthy(srv))
    finally:
        st = srv.stop(signal.SIGINT)
    check("SIGINT: exit 0", st == 0, f"exit {st}")


def test_token():
    srv = Server(env={"TIR_TOKEN": "s3cret-token"})
    try:
        for p in ("/healthz", "/v1/info"):
            check(f"token: GET {p} needs none", request(srv, "GET", p).status == 200)
        r = request(srv, "GET", "/metrics")
        check("token: GET /metrics needs the token (401 without)", error_is(r, 401, "unauthorized"), describe(r))
        r = request(srv, "GET", "/metrics", headers={"Authorization": "Bearer s3cret-token"})
        check("token: GET /metrics with it: every figure (the one tenant is the server's only one)",
              r.status == 200 and b"tir_sessions " in r.body and b"tir_connections " in r.body, describe(r))
        r = request(srv, "POST", "/v1/sessions")
        check("401: no token", error_is(r, 401, "unauthorized"), describe(r))
        for name, tok in (("wrong", "s3cret-tokeN"), ("shorter", "s3cret"), ("longer", "s3cret-token-and-more"),
                          ("empty", "")):
            r = request(srv, "POST", "/v1/sessions", headers={"Authorization": "Bearer " + tok})
            check(f"401: a {name} token", error_is(r, 401, "unauthorized"), describe(r))
        r = request(srv, "POST", "/v1/sessions", headers={"Authorization": "Basic s3cret-token"})
        check("401: another scheme", error_is(r, 401, "unauthorized"), describe(r))
        auth = {"Authorization": "Bearer s3cret-token"}
        sid = new_session(srv, headers=auth)
        check("token from TIR_TOKEN: the right one passes", sid is not None)
        h, r = put_blob(srv, np.ones(3, np.float32))
        check("401: PUT blob without the token", error_is(r, 401, "unauthorized"), describe(r))
        h, r = put_blob(srv, np.ones(3, np.float32), headers=auth)
        check("PUT blob with the token", r.status == 201, describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}})
        check("401: run without the token", error_is(r, 401, "unauthorized"), describe(r))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}}, headers=auth)
        check("run with the token", r.status == 200, describe(r))
        r = request(srv, "DELETE", f"/v1/sessions/{sid}")
        check("401: DELETE without the token", error_is(r, 401, "unauthorized"), describe(r))
        check("DELETE with the token", request(srv, "DELETE", f"/v1/sessions/{sid}", headers=auth).status == 204)
    finally:
        srv.stop()
    srv = Server("--token", "flag-token", env={"TIR_TOKEN": "env-token"})
    try:
        check("--token wins over TIR_TOKEN",
              request(srv, "POST", "/v1/sessions", headers={"Authorization": "Bearer flag-token"}).status == 201 and
              request(srv, "POST", "/v1/sessions", headers={"Authorization": "Bearer env-token"}).status == 401)
    finally:
        srv.stop()


def test_tenants():
    d = tempfile.mkdtemp(prefix="tir-tenants.")
    try:
        path = os.path.join(d, "tokens")
        with open(path, "w") as f:
            f.write("# tenants of this test\n\nalice  a-token-of-alice  sessions=2\n"
                    "bob b-token-of-bob inflight=1M\n")
        os.chmod(path, 0o600)
        srv = Server("--tokens", path, env={"TIR_TOKEN": "the-env-token"})
    except Exception:
        shutil.rmtree(d, ignore_errors=True)
        raise
    alice = {"Authorization": "Bearer a-token-of-alice"}
    bob = {"Authorization": "Bearer b-token-of-bob"}
    try:
        check("tenants: no warning for a file of mode 600", not srv.logged("can be read by other users"))
        r = request(srv, "POST", "/v1/sessions", headers={"Authorization": "Bearer the-env-token"})
        check("tenants: TIR_TOKEN is no tenant's token with --tokens", error_is(r, 401, "unauthorized"), describe(r))
        r = request(srv, "POST", "/v1/sessions")
        check("tenants: 401 without a token", error_is(r, 401, "unauthorized"), describe(r))
        sa, sb = new_session(srv, headers=alice), new_session(srv, headers=bob)
        check("tenants: each makes a session", sa is not None and sb is not None)
        # alice's secret: a blob bob has never sent
        secret = np.array([3, 1, 4, 1], np.float32)
        h, r = put_blob(srv, secret, headers=alice)
        check("tenants: alice stores a blob (201)", r.status == 201, describe(r))
        h2, r = put_blob(srv, secret, headers=alice)
        check("tenants: alice sends it again (200: she holds it)", h2 == h and r.status == 200, describe(r))
        text = "input t0: f32[4]\nt1: f32[4] = neg(t0)\nprint t1\n"
        # bob names it among 1,000 hashes: every one is missing, hers too
        names = [hashlib.sha256(b"candidate %d" % i).hexdigest() for i in range(999)] + [h]
        body = {"graph": sha(text), "text": text, "inputs": {"t0": {"blob": h}}}
        r = request(srv, "POST", f"/v1/sessions/{sb}/run", body, bob)
        check("tenants: bob naming alice's blob gets 409 missing", r.status == 409 and
              r.err().get("blobs") == [h], describe(r))
        text2 = "".join(f"input t{i}: f32[4]\n" for i in range(1000)) + "print t999\n"
        body = {"graph": sha(text2), "text": text2,
                "inputs": {f"t{i}": {"blob": n} for i, n in enumerate(names)}}
        r = request(srv, "POST", f"/v1/sessions/{sb}/run", body, bob)
        check("tenants: 1,000 candidate hashes: all 1,000 missing (hers not told apart)",
              r.status == 409 and sorted(r.err().get("blobs", [])) == sorted(names), describe(r))
        h3, r = put_blob(srv, secret, headers=bob)
        check("tenants: bob sends the same bytes: 201, as for a blob the server lacks", r.status == 201, describe(r))
        r = run(srv, sb, text, {"t0": {"blob": h}}, headers=bob)
        check("tenants: then bob's run has it", r.status == 200 and
              np.array_equal(results(r.body)[1][0], -secret), describe(r))
        # a wrong body under alice's name, from bob: refused, nothing granted
        r = request(srv, "PUT", "/v1/blobs/" + blob(frame(np.zeros(4, np.float32)))[0], blob(frame(secret))[1], bob)
        check("tenants: bytes that are not the name's: 400", r.status == 400, describe(r))
        # sessions are the tenant's
        r = run(srv, sa, text, {"t0": {"blob": h}}, headers=bob)
        check("tenants: bob cannot run in alice's session (404)", error_is(r, 404, "not_found"), describe(r))
        r = request(srv, "DELETE", f"/v1/sessions/{sa}", headers=bob)
        check("tenants: bob cannot delete alice's session (404)", error_is(r, 404, "not_found"), describe(r))
        r = request(srv, "POST", f"/v1/sessions/{sa}/renew", headers=bob)
        check("tenants: bob cannot renew alice's session (404)", error_is(r, 404, "not_found"), describe(r))
        r = request(srv, "POST", f"/v1/sessions/{sa}/renew")
        check("tenants: a renewal needs a token (401)", error_is(r, 401, "unauthorized"), describe(r))
        r = run(srv, sa, text, {"t0": {"blob": h}}, headers=alice)
        check("tenants: alice's session is still hers", r.status == 200, describe(r))
        # graphs are the tenant's: bob's text is not alice's to name
        t3 = "input t0: f32[4]\nt1: f32[4] = abs(t0)\nprint t1\n"
        r = run(srv, sb, t3, {"t0": {"blob": h}}, headers=bob)
        check("tenants: bob runs a new text", r.status == 200, describe(r))
        r = run(srv, sa, t3, {"t0": {"blob": h}}, headers=alice, send_text=False)
        check("tenants: alice naming bob's text by its hash gets 409 (graph)", r.status == 409 and
              r.err().get("graph") is True, describe(r))
        # limits of each tenant
        s2 = new_session(srv, headers=alice)
        r = request(srv, "POST", "/v1/sessions", headers=alice)
        check("tenants: alice's third session: 503 with Retry-After (sessions=2)",
              error_is(r, 503, "busy") and "tenant alice has 2 sessions open" in r.err().get("message", "") and
              "retry-after" in r.headers, describe(r))
        check("tenants: bob still makes sessions", new_session(srv, headers=bob) is not None)
        big = np.zeros(1 << 19, np.float32)  # 2 MiB: over bob's inflight=1M, answered before the body
        hb, body = blob(frame(big))
        out = raw(srv, b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer b-token-of-bob\r\n"
                  b"Content-Length: %d\r\n\r\n" % (hb.encode(), len(body)))
        check("tenants: a body over bob's inflight=1M: 413 naming the tenant",
              out.startswith(b"HTTP/1.1 413") and b"tenant bob may send" in out, out[:300])
        hb, r = put_blob(srv, big, headers=alice)
        check("tenants: the same body from alice: 201", r.status == 201, describe(r))
        request(srv, "DELETE", f"/v1/sessions/{s2}", headers=alice)
    finally:
        srv.stop()
    # the file itself
    def serve_exit(*args, env=None):
        e = dict(os.environ)
        e.pop("TIR_TOKEN", None)
        e.update(env or {})
        p = subprocess.run([TIR, "serve", "--port", "0", *args], capture_output=True, timeout=30, env=e)
        return p.returncode, p.stderr.decode()
    try:
        for name, content, want in (
                ("one field", "alice\n", ":1: expected NAME TOKEN"),
                ("a bad name", "al/ice tok\n", ":1: a name is 1 to 64 of"),
                ("a bad option", "alice tok sessions=0\n",
                 ":1: an option is sessions=N, inflight=BYTES, memory=BYTES, batches=N or admin"),
                ("an unknown option", "# c\nalice tok color=red\n", ":2: an option is"),
                ("eight fields", "alice tok sessions=1 inflight=1M memory=1G batches=1 admin more\n",
                 ":1: more than NAME TOKEN"),
                ("a name twice", "alice t1\nalice t2\n", ":2: a name given twice"),
                ("no tenants", "# nobody\n\n", ": no tenants in it")):
            path = os.path.join(d, "bad")
            with open(path, "w") as f:
                f.write(content)
            os.chmod(path, 0o600)
            st, err = serve_exit("--tokens", path)
            check(f"tenants: a tokens file with {name}: exit 1", st == 1 and
                  err.startswith(f"tir serve: --tokens {path}") and want in err, f"{st} {err[:200]}")
        with open(path, "w") as f:
            f.write("alice same\nbob same\n")
        st, err = serve_exit("--tokens", path)
        check("tenants: two tenants with one token: exit 1", st == 1 and
              "tenants alice and bob have the same token" in err, f"{st} {err[:200]}")
        st, err = serve_exit("--tokens", os.path.join(d, "none"))
        check("tenants: a missing tokens file: exit 1", st == 1 and "No such file" in err, err[:200])
        st, err = serve_exit("--tokens", path, "--token", "x")
        check("tenants: --token and --tokens: exit 2", st == 2 and "--token or --tokens, not both" in err, err[:200])
        with open(path, "w") as f:
            f.write("alice a-token\n")
        os.chmod(path, 0o644)
        srv = Server("--tokens", path)
        try:
            check("tenants: a tokens file others can read: a warning",
                  srv.wait_log(r"^tir serve: warning: --tokens .* can be read by other users \(chmod 600 "))
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_ttl_and_lru():
    # a blob is 24 + 4096 bytes; the cache holds two
    srv = Server("--session-ttl", "1", "--blob-cache", "10000")
    try:
        sid = new_session(srv)
        gone = srv.wait_metric("tir_sessions", 0)  # idle past the TTL, then swept
        r = run(srv, sid, EXP3, {})
        check("TTL: an idle session expires (404)", error_is(r, 404, "not_found") and gone,
              describe(r) + f" sessions={metrics(srv).get('tir_sessions')}")
        # two sessions made together, one used every 0.1 s (well within the
        # TTL, on a loaded CPU too), one idle: once the sweep has taken the
        # idle one, the one in use has lived past a TTL, kept by its requests
        sid, idle = new_session(srv), new_session(srv)
        ok = True
        uses = 0
        end = time.monotonic() + 60
        while metrics(srv).get("tir_sessions") == 2 and time.monotonic() < end:
            time.sleep(0.1)
            ok = ok and request(srv, "GET", "/healthz").status == 200
            ok = ok and error_is(run(srv, sid, EXP3, {"t0": {"value": "none"}}), 404, "not_found") and \
                "no value" in run(srv, sid, EXP3, {"t0": {"value": "none"}}).err()["message"]
            uses += 1
        r = run(srv, sid, EXP3, {"t0": {"value": "none"}})
        swept = metrics(srv).get("tir_sessions") == 1
        ri = run(srv, idle, EXP3, {"t0": {"value": "none"}})
        check("TTL: a session in use stays", ok and swept and error_is(r, 404, "not_found") and
              "no value" in r.err()["message"] and error_is(ri, 404, "not_found") and
              "no such session" in ri.err()["message"],
              f"{uses} uses, the idle one swept: {swept}; {describe(r)}; {describe(ri)}")

        t = "input t0: f32[1024]\nt1: f32[] = sum(t0)\nprint t1\n"
        arrs = [np.full(1024, i, np.float32) for i in range(3)]
        hs = [put_blob(srv, a)[0] for a in arrs[:2]]
        r = run(srv, sid, t, {"t0": {"blob": hs[0]}})  # blob 0 is now the most recent
        check("LRU: a run on blob 0", r.status == 200 and results(r.body)[1][0] == 0, describe(r))
        hs.append(put_blob(srv, arrs[2])[0])
        m = metrics(srv)
        r1 = run(srv, sid, t, {"t0": {"blob": hs[1]}})
        r0 = run(srv, sid, t, {"t0": {"blob": hs[0]}})
        r2 = run(srv, sid, t, {"t0": {"blob": hs[2]}})
        check("LRU: past --blob-cache the least recently used goes",
              error_is(r1, 409, "missing") and r1.err().get("blobs") == [hs[1]] and r0.status == 200 and
              r2.status == 200 and m.get("tir_blob_cache_evictions_total") == 1 and
              2 * (24 + 4096) < m.get("tir_blob_cache_bytes", 0) <= 2 * (24 + 4096 + 1024), f"{describe(r1)} {m}")
        r = request(srv, "PUT", "/v1/blobs/" + blob(frame(np.zeros(4096, np.float32)))[0],
                    blob(frame(np.zeros(4096, np.float32)))[1])
        check("413: a blob over the whole --blob-cache", error_is(r, 413, "too_large"), describe(r))
        # small blobs are not free: 300 scalars (24-byte frames, 7 KiB in
        # all) cost their records too, so a cache of 10,000 bytes holds
        # only a dozen or so of them
        before = metrics(srv).get("tir_blob_cache_evictions_total", 0)
        for i in range(300):
            put_blob(srv, np.array(i + 0.5, np.float32))
        m = metrics(srv)
        check("LRU: 300 scalar blobs are charged what they cost (evicted past 10,000 bytes)",
              m.get("tir_blob_cache_bytes", 1 << 30) <= 10000 and m.get("tir_blob_cache_blobs", 99) <= 20 and
              m.get("tir_blob_cache_evictions_total", 0) - before >= 280, str(m))
    finally:
        srv.stop()


def test_idle_trim():
    """The idle trim (memory given back 500 ms after the last request
    ended) is counted in /metrics, so that a test can wait for one: asked
    every 0.7 s, each ask being a request, the count passes what it was."""
    srv = Server()
    try:
        sid = new_session(srv)
        h, _ = put_blob(srv, np.ones(1 << 20, np.float32))
        r = run(srv, sid, "input t0: f32[1048576]\nt1: f32[1048576] = exp(t0)\nt2: f32[] = sum(t1)\nprint t2\n",
                {"t0": {"blob": h}})
        before = metrics(srv).get("tir_idle_trims_total")
        seen = [before]

        def trimmed():
            time.sleep(0.7)  # slower than the trim's 500 ms, or the asking would keep it from coming
            seen.append(metrics(srv).get("tir_idle_trims_total"))
            return seen[-1] is not None and seen[-1] > before
        check("idle trim: /metrics tir_idle_trims_total counts one once the server is idle",
              r.status == 200 and before is not None and eventually(trimmed), f"{describe(r)}; seen {seen[-5:]}")
    finally:
        srv.stop()
    # two clients at once, each sending blobs of 4 to 24 MiB through a 48
    # MiB cache and reducing them, six rounds with an idle trim after
    # each: the tensors freed are given back.  (glibc, left to itself,
    # takes buffers of up to 32 MiB from the threads' arenas once it has
    # freed one of that size, and malloc_trim does not give back the free
    # tops of those arenas: 25 to 55 MiB more here after a round, and the
    # soak's idle server held 2 to 5 times its tensors, 100 to 250 MiB.)
    srv = Server("--blob-cache", "48M")
    try:
        def idle_rss():
            srv.wait_trim()
            return srv.rss_kib() - (int(metrics(srv).get("tir_tensor_bytes", 0)) >> 10)

        def client(k, bad):
            c = srv.conn(timeout=60)
            sid = new_session(srv, conn=c)
            rng = np.random.default_rng(k)
            for i in range(6):
                mib = (4, 8, 16, 24, 12, 20)[(i + k) % 6]
                x = rng.standard_normal((mib * 256, 1024), dtype=np.float32)
                t = (f"input t0: f32[{mib * 256}, 1024]\nt1: f32[{mib * 256}] = sum(t0, axis=1)\n"
                     f"t2: f32[1024] = mean(t0, axis=0)\nprint t1, t2\n")
                for _ in range(4):  # (the other client's blob may evict it in between)
                    h, _ = put_blob(srv, x, conn=c)
                    r = run(srv, sid, t, {"t0": {"blob": h}}, conn=c)
                    if r.status != 409:
                        break
                bad += [] if r.status == 200 else [describe(r)]
            c.close()
        base = idle_rss()
        over, bad = [], []
        for rnd in range(6):
            ths = [threading.Thread(target=client, args=(k + 10 * rnd, bad)) for k in range(2)]
            for th in ths:
                th.start()
            for th in ths:
                th.join(120)
            over.append(idle_rss() - base)
        print(f"# idle trim: VmRSS less tensors {base} KiB at first, then more by {over} KiB after each round")
        if not ASAN:
            check("idle trim: the tensors freed are given back (VmRSS less tensors within 8 MiB of the first, "
                  "once idle after each round)", not bad and max(over) <= 8 * 1024, f"{bad[:2]}; more by {over} KiB")
        else:
            # ASan's allocator, not glibc's, serves the server: it keeps what
            # is freed (its quarantine of 256 MiB and its own caches of each
            # size: 250 to 300 MiB here from the second round on), and
            # malloc_trim is not its, so the glibc behaviour this is about
            # is checked in the plain build.  Here: that what it keeps stays
            # within its quarantine and one more blob cache (48 MiB) of
            # buffers, round after round.
            check("idle trim (ASan): what the allocator keeps is bounded (256 + 64 MiB)",
                  not bad and max(over) <= RSS_SLACK_KIB + 64 * 1024, f"{bad[:2]}; more by {over} KiB")
    finally:
        srv.stop()


def test_cli():
    p = subprocess.run([TIR, "help", "serve"], capture_output=True, timeout=10)
    out = p.stdout.decode()
    check("tir help serve", p.returncode == 0 and all(f in out for f in (
        "--host", "--port", "--token", "--max-body", "--max-sessions", "--session-ttl", "--blob-cache",
        "--threads", "--max-inflight", "--max-connections-per-address", "--header-timeout",
        "--session-lease")), out[:200])
    p = subprocess.run([TIR, "serve", "--help"], capture_output=True, timeout=10)
    check("tir serve --help", p.returncode == 0 and p.stdout.decode() == out)
    for args in (["--bogus"], ["--port"], ["--port", "x"], ["--port", "70000"], ["--port", "-1"],
                 ["--max-body", "0"], ["--max-body", "12Q"], ["--max-inflight", "0"], ["--max-sessions", "0"],
                 ["--session-ttl", "1.5"], ["--header-timeout", "0"], ["--max-connections-per-address", "0"],
                 ["--session-lease", "0"],
                 ["--threads", "many"], ["--token", ""], ["extra"]):
        p = subprocess.run([TIR, "serve", *args], capture_output=True, timeout=10)
        check(f"bad flags exit 2: {' '.join(args)}", p.returncode == 2 and p.stderr.startswith(b"tir serve: "),
              f"exit {p.returncode} {p.stderr[:200]!r}")
    srv = Server()
    try:
        p = subprocess.run([TIR, "serve", "--port", str(srv.port)], capture_output=True, timeout=10)
        err = p.stderr.decode()
        check("a port taken: exit 1, a clear message", p.returncode == 1 and
              f"cannot listen on 127.0.0.1 port {srv.port}: Address already in use" in err, f"{p.returncode} {err}")
        p = subprocess.run([TIR, "serve", "--port", "0", "--host", "no.such.host.invalid"], capture_output=True,
                           timeout=30)
        check("a bad host: exit 1", p.returncode == 1 and b"cannot listen on no.such.host.invalid" in p.stderr,
              p.stderr[:200])
    finally:
        srv.stop()
    srv = Server("--host", "::1")
    try:
        c = http.client.HTTPConnection("::1", srv.port, timeout=10)
        c.request("GET", "/healthz")
        r = c.getresponse()
        check("--host ::1 (IPv6)", r.status == 200 and r.read() == b"ok" and
              srv.first == f"tir serve: listening on http://[::1]:{srv.port} (protocol 4)", srv.first)
        c.close()
    except OSError as e:
        check("--host ::1 (IPv6: no IPv6 loopback here, skipped)", True, str(e))
    finally:
        srv.stop()


def test_big_blobs():
    """Blobs past 4 MiB are hashed by a second thread while they arrive."""
    srv = Server()
    try:
        sid = new_session(srv)
        rng = np.random.default_rng(5)
        a = rng.standard_normal((2 << 20) + 1, dtype=np.float32)  # 8 MiB + 4 bytes, 4 of padding
        f = frame(a)
        t0 = time.monotonic()
        h, r = put_blob(srv, f)
        dt = time.monotonic() - t0
        check("big blob: 201", r.status == 201, describe(r))
        print(f"# upload: {len(f) / 2**20:.0f} MiB in {dt * 1e3:.0f} ms: {len(f) / dt / 1e9:.2f} GB/s")
        text = f"input t0: f32[{a.size}]\nt1: f32[] = sum(t0)\nt2: f32[] = max(t0)\nprint t1, t2\n"
        r = run(srv, sid, text, {"t0": {"blob": h}})
        ok = r.status == 200
        if ok:
            _, vals = results(r.body)
            ok = np.allclose(vals[0], a.astype(np.float64).sum(), rtol=1e-3, atol=1e-1) and vals[1] == a.max()
        check("big blob: the data arrived whole (sum, max)", ok, describe(r))
        r = request(srv, "PUT", "/v1/blobs/" + blob(f[:-1] + b"\1")[0], blob(f)[1])
        check("big blob: 400 bad_hash (the list)", error_is(r, 400, "bad_hash"), describe(r))
        # a chunk in the middle, and the last one, corrupt on the way: the
        # answer names the chunk and its bytes; nothing is stored, the
        # server serves, and the blob sent again whole is stored
        a2 = rng.standard_normal(3 << 20, dtype=np.float32)  # 12 MiB: 48 chunks and a bit
        f2 = frame(a2)
        h2, body2 = blob(f2)
        off = len(chunk_list(f2))
        for k, at in ((17, 17 * CHUNK + 1000), (48, len(f2) - 3)):
            bad = bytearray(body2)
            bad[off + at] ^= 0x40
            r = request(srv, "PUT", "/v1/blobs/" + h2, bytes(bad))
            lo, hi = k * CHUNK, min((k + 1) * CHUNK, len(f2)) - 1
            check(f"big blob: a corrupt chunk {k}: 400 bad_hash naming it",
                  error_is(r, 400, "bad_hash") and
                  f"chunk {k} of 49 (bytes {lo}-{hi} of the frame) hashes to " in r.err()["message"] and
                  "nothing was stored" in r.err()["message"], describe(r))
        r = run(srv, sid, f"input t0: f32[{a2.size}]\nprint t0\n", {"t0": {"blob": h2}})
        check("big blob: a corrupt chunk: nothing stored (409)", error_is(r, 409, "missing") and
              r.err().get("blobs") == [h2] and healthy(srv), describe(r))
        h2b, r = put_blob(srv, f2)
        check("big blob: sent again whole: 201", r.status == 201 and h2b == h2, describe(r))
        r = run(srv, sid, f"input t0: f32[{a2.size}]\nprint t0\n", {"t0": {"blob": h2}})
        check("big blob: ... and every byte arrived", r.status == 200 and
              results(r.body)[1][0].tobytes() == a2.tobytes(), describe(r))
        g = f[:-1] + b"\1"
        r = request(srv, "PUT", "/v1/blobs/" + blob(g)[0], blob(g)[1])
        check("big blob: 400 nonzero padding", error_is(r, 400, "bad_request") and "padding" in r.err()["message"],
              describe(r))
        b = np.zeros(5 << 20, np.uint8)
        b[-3] = 2
        g = frame(np.zeros(5 << 20, np.bool_))
        g = g[:24] + b.tobytes() + g[24 + b.size:]
        r = request(srv, "PUT", "/v1/blobs/" + blob(g)[0], blob(g)[1])
        check("big blob: 400 a bool of 2 near the end", error_is(r, 400, "bad_request") and
              "a bool is 0 or 1" in r.err()["message"], describe(r))
        srv.wait_trim()  # the idle trim before the baseline
        base = srv.rss_kib()
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", srv.port))
            g, gb = blob(frame(rng.standard_normal(8 << 20, dtype=np.float32)))
            s.sendall(b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" %
                      (g.encode(), len(gb)) + gb[:len(gb) // 2])
            drained(s)  # half of it sent and read: the server is in the middle of it
            s.close()
            srv.wait_metric("tir_inflight_body_bytes", 0)  # ended
        # the memory they held is given back once the server is idle
        back = eventually(lambda: srv.rss_kib() < base + 8 * 1024 + RSS_SLACK_KIB)
        check("big uploads cut short: the server serves, memory back",
              healthy(srv) and back, f"{base} -> {srv.rss_kib()} KiB")
        # each dtype comes back as it went
        for a in (np.array([[True, False, True]]), np.array([-(2**31), 2**31 - 1], np.int32),
                  np.array([-(2**63), 2**63 - 1], np.int64), np.array([np.inf, -0.0, 1e-40], np.float32),
                  np.arange(24, dtype=np.float64).reshape(2, 3, 4), np.float64(3.5).reshape(())):
            h, _ = put_blob(srv, a)
            dt = {"bool": "bool", "int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64"}[a.dtype.name]
            ty = f"{dt}[{', '.join(map(str, a.shape))}]"
            r = run(srv, sid, f"input t0: {ty}\nprint t0\n", {"t0": {"blob": h}})
            ok = r.status == 200
            if ok:
                v = results(r.body)[1][0]
                ok = v.dtype == a.dtype and v.shape == a.shape and v.tobytes() == a.tobytes()
            check(f"round trip of {ty}", ok, describe(r))
    finally:
        srv.stop()


def test_inflight():
    """--max-inflight: the bodies being received hold at most that much
    memory together; a request past it is answered 503 busy (with
    Retry-After) before its body is read, and its bytes are back in the
    budget once a request ends or its client goes away."""
    srv = Server("--max-body", "32M", "--max-inflight", "64M", "--blob-cache", "256M")
    held, socks = [], []
    try:
        j = request(srv, "GET", "/v1/info").json() or {}
        check("inflight: /v1/info says max_inflight", j.get("limits", {}).get("max_inflight") == 64 << 20, str(j))
        sid = new_session(srv)
        hs, _ = put_blob(srv, np.arange(3, dtype=np.float32))
        run(srv, sid, EXP3, {"t0": {"blob": hs}})
        srv.wait_trim()  # the idle trim before the baseline
        base = srv.rss_kib()
        rng = np.random.default_rng(7)
        a = rng.standard_normal(6 << 20, dtype=np.float32)  # 24 MiB
        f = frame(a)
        h, fb = blob(f)
        head = b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (h.encode(), len(fb))
        replies = {}
        for i in range(8):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            socks.append(s)
            try:
                s.sendall(head + fb[:1 << 20])
            except OSError:  # answered and closed before all of it went
                pass
        # once the server's log has the six 503s and /metrics the two held,
        # what each connection got: a whole reply, or nothing yet
        srv.wait_log(r"^PUT /v1/blobs/\w{8}\u2026 503 ", 6)
        srv.wait_metric("tir_inflight_body_bytes", 2 * len(fb))
        for i, s in enumerate(socks):
            s.setblocking(False)
            got = b""
            try:
                got = s.recv(65536)
            except BlockingIOError:
                pass
            except OSError as e:
                got = str(e).encode()
            if got:  # the rest of a reply begun
                s.settimeout(10)
                try:
                    while b"\r\n\r\n" not in got or len(got.split(b"\r\n\r\n", 1)[1]) < \
                            int(re.search(rb"Content-Length: (\d+)", got, re.I).group(1)):
                        d = s.recv(65536)
                        if not d:
                            break
                        got += d
                except (OSError, AttributeError):
                    pass
            replies[i] = got
        busy = [g for g in replies.values() if g]
        held = [s for i, s in enumerate(socks) if not replies.get(i)]
        ok503 = all(g.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1\r\n" in g and
                    b'"code":"busy"' in g and b"--max-inflight" in g for g in busy)
        check("inflight: 8 x 24 MiB announced, 64 MiB budget: 2 held, 6 answered 503 busy with Retry-After",
              len(held) == 2 and len(busy) == 6 and ok503, f"{len(held)} held; {[g[:300] for g in busy][:2]}")
        m = metrics(srv)
        check("inflight: /metrics tir_inflight_body_bytes counts the two", m.get("tir_inflight_body_bytes") ==
              2 * len(fb), str(m.get("tir_inflight_body_bytes")))
        for s in held:
            s.settimeout(10)
            s.sendall(fb[1 << 20:12 << 20])
        # (sent: the server has read all but what the sockets' buffers hold)
        peak = srv.rss_kib()
        print(f"# inflight: VmRSS {base} KiB, with 2 uploads half way {peak} KiB")
        check("inflight: VmRSS bounded by the budget", peak < base + (64 + 16) * 1024 + RSS_SLACK_KIB,
              f"{base} -> {peak} KiB")
        t0 = time.monotonic()
        ok = healthy(srv)
        r = run(srv, sid, EXP3, {"t0": {"blob": hs}})
        h2, r2 = put_blob(srv, np.arange(5, dtype=np.float32))  # a small body is not counted
        check("inflight: with the budget full, /healthz, a small blob and a run are served",
              ok and r.status == 200 and r2.status == 201 and time.monotonic() - t0 < 5, describe(r))
        c = srv.conn()
        c.putrequest("POST", f"/v1/sessions/{sid}/run")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        piece = b" " * (1 << 20)
        try:
            for _ in range(20):
                c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            c.send(b"0\r\n\r\n")
            rc = Reply(c.getresponse())
        except OSError as e:
            rc = None
            err = str(e)
        c.close()
        check("inflight: a chunked body of 20 MiB past what is left: 503 busy",
              rc is not None and error_is(rc, 503, "busy") and rc.headers.get("retry-after") == "1",
              describe(rc) if rc else err)
        for s in held:
            drained(s)
            s.close()
        held = []
        whole = srv.wait_metric("tir_inflight_body_bytes", 0)
        check("inflight: the clients gone, the budget is whole again", whole,
              str(metrics(srv).get("tir_inflight_body_bytes")))
        out = {}

        def up(k):
            out[k] = put_blob(srv, f if k == 0 else frame(a[::-1].copy()))[1]

        ths = [threading.Thread(target=up, args=(k,)) for k in range(2)]
        for t in ths:
            t.start()
        for t in ths:
            t.join(60)
        check("inflight: then two big uploads at once succeed", all(out.get(k) and out[k].status == 201
                                                                    for k in range(2)),
              str([describe(out[k]) for k in out]))
        r = run(srv, sid, f"input t0: f32[{a.size}]\nt1: f32[] = max(t0)\nprint t1\n", {"t0": {"blob": h}})
        check("inflight: the upload arrived whole", r.status == 200 and results(r.body)[1][0] == a.max(),
              describe(r))
        check("inflight: the log says 503 for the refused",
              sum(1 for ln in srv.lines if re.match(r"PUT /v1/blobs/\w{8}\u2026 503 ", ln)) >= 6,
              str(srv.lines[-12:]))
    finally:
        for s in socks:
            s.close()
        srv.stop()
    srv = Server("--max-body", "8M", "--max-inflight", "4M")
    try:
        got = raw(srv, b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" %
                  (b"c" * 64, 6 << 20) + b"\0" * 4096)
        check("inflight: a body over the whole --max-inflight: 413", got.startswith(b"HTTP/1.1 413 ") and
              b'"code":"too_large"' in got and b"(--max-inflight)" in got, got[:300])
    finally:
        srv.stop()


# ---- no existence oracle: /metrics and the time of a PUT ----

def metrics_as(srv, headers):
    """(status, {sample: value}) of /metrics asked with headers."""
    r = request(srv, "GET", "/metrics", headers=headers)
    m = {}
    for ln in r.body.decode("utf-8", "replace").splitlines() if r.status == 200 else []:
        if ln and not ln.startswith("#"):
            k, _, v = ln.rpartition(" ")
            m[k] = float(v)
    return r.status, m


PUT_TIMING_N = 7           # PUTs of each kind
PUT_TIMING_MIB = 16        # each blob
PUT_TIMING_RATIO = 2.0   # the median of the pairs' ratios within this either way (before the fix: 4 to 7 times)


def test_existence():
    """docs/protocol.md: no answer tells one tenant whether another holds a
    tensor.  /metrics needs a token and shows a tenant its own figures only
    (a tokens line with `admin` sees every figure); bob's PUT of a blob
    alice holds moves bob's figures as a PUT of a blob nobody holds does,
    answers the same, and takes as long: PUT_TIMING_N pairs of PUTs of
    PUT_TIMING_MIB MiB, the median of their ratios within PUT_TIMING_RATIO
    (before, a blob
    another held was only hashed, on one thread: 303 ms against 70 ms at
    64 MiB)."""
    d = tempfile.mkdtemp(prefix="tir-exist.")
    path = os.path.join(d, "tokens")
    with open(path, "w") as f:
        f.write("alice a-tok\nbob b-tok\nroot r-tok admin\n")
    os.chmod(path, 0o600)
    A, B, R = ({"Authorization": "Bearer " + t} for t in ("a-tok", "b-tok", "r-tok"))
    srv = Server("--tokens", path, "--blob-cache", "2G", "--max-inflight", "1G")
    try:
        r = request(srv, "GET", "/metrics")
        check("existence: /metrics without a token: 401", error_is(r, 401, "unauthorized"), describe(r))
        r = request(srv, "GET", "/metrics", headers={"Authorization": "Bearer nobody"})
        check("existence: /metrics with a wrong token: 401", error_is(r, 401, "unauthorized"), describe(r))
        new_session(srv, headers=A)
        st, ma = metrics_as(srv, A)
        check("existence: alice's /metrics: her own figures only, labelled with her name",
              st == 200 and ma and all('tenant="alice"' in k for k in ma) and
              ma.get('tir_tenant_sessions{tenant="alice"}') == 1, str(sorted(ma))[:300])
        st, mr = metrics_as(srv, R)
        check("existence: an admin's /metrics: the server's figures and every tenant's",
              st == 200 and "tir_connections" in mr and "tir_blob_cache_blobs" in mr and
              mr.get('tir_tenant_sessions{tenant="alice"}') == 1 and
              mr.get('tir_tenant_sessions{tenant="bob"}') == 0, str(sorted(mr))[:300])
        # bob's figures: a blob alice holds, then one nobody holds
        theirs, nobodys = np.arange(1000, dtype=np.float32), np.arange(1000, dtype=np.float32) + 0.5
        put_blob(srv, theirs, headers=A)
        _, b0 = metrics_as(srv, B)
        h1, r1 = put_blob(srv, theirs, headers=B)
        _, b1 = metrics_as(srv, B)
        h2, r2 = put_blob(srv, nobodys, headers=B)
        _, b2 = metrics_as(srv, B)

        def moved(x, y):
            return {k: y.get(k, 0) - x.get(k, 0) for k in ('tir_tenant_blobs{tenant="bob"}',
                                                           'tir_tenant_blob_bytes{tenant="bob"}')}
        m1, m2 = moved(b0, b1), moved(b1, b2)
        check("existence: bob's PUT of alice's blob and of a new one: both 201, his blob figures moved alike",
              r1.status == 201 and r2.status == 201 and m1 == m2 and
              m1['tir_tenant_blobs{tenant="bob"}'] == 1, f"{r1.status} {r2.status} {m1} {m2}")
        check("existence: bob's /metrics has no figure that alice's PUTs move",
              all('tenant="bob"' in k for k in b2), str(sorted(b2))[:300])
        # the time of a PUT
        n = PUT_TIMING_MIB << 18  # f32 elements
        held = [blob(frame(np.full(n, i + 1, np.float32))) for i in range(PUT_TIMING_N)]
        fresh = [blob(frame(np.full(n, -(i + 1), np.float32))) for i in range(PUT_TIMING_N)]
        for h, body in held:
            request(srv, "PUT", "/v1/blobs/" + h, body, A)
        # Each pair (held, new) back to back, either first, sees the same
        # load; the median of the pairs' ratios is judged, not the ratio of
        # two medians taken across the run (other suites' load swung that)
        times = {"held": [], "new": []}
        statuses = set()
        for i in range(PUT_TIMING_N):
            for kind, (h, body) in (("held", held[i]), ("new", fresh[i]))[::1 if i % 2 else -1]:  # (either first)
                t0 = time.monotonic()
                r = request(srv, "PUT", "/v1/blobs/" + h, body, B)
                times[kind].append(time.monotonic() - t0)
                statuses.add(r.status)
        mh, mn = statistics.median(times["held"]), statistics.median(times["new"])
        ratio = statistics.median(a / b for a, b in zip(times["held"], times["new"]))
        print(f"# existence: bob's PUT of a {PUT_TIMING_MIB} MiB blob, median of {PUT_TIMING_N}: "
              f"alice holds it {mh * 1e3:.1f} ms, nobody does {mn * 1e3:.1f} ms; "
              f"median of the pairs' ratios {ratio:.2f}")
        check(f"existence: a PUT of a blob another tenant holds takes as long as a new one "
              f"(median of {PUT_TIMING_N} back-to-back pairs' ratios within {PUT_TIMING_RATIO}x either way)",
              statuses == {201} and 1 / PUT_TIMING_RATIO < ratio < PUT_TIMING_RATIO,
              f"held/new {ratio:.2f}: {mh * 1e3:.1f} ms vs {mn * 1e3:.1f} ms, statuses {statuses}")
    finally:
        srv.stop()
        shutil.rmtree(d, ignore_errors=True)


# ---- connections: per address, the header deadline, heads answered in JSON ----

def sock_from(srv, addr, timeout=10):
    """A socket connected to srv from loopback address addr (127.0.0.0/8)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((addr, 0))
    s.connect(("127.0.0.1", srv.port))
    return s


def read_reply(s, limit=1 << 20):
    """(status, {header: value}, body) of the one reply s gets; (None, {}, b"") if none."""
    out = b""
    try:
        while len(out) < limit:
            d = s.recv(65536)
            if not d:
                break
            out += d
            head, sep, body = out.partition(b"\r\n\r\n")
            m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
            if sep and m and len(body) >= int(m.group(1)):
                break
    except OSError:
        pass
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", lines[0])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    return (int(m.group(1)) if m else None), hdrs, body


def json_error(reply, status, code):
    """Whether reply (read_reply's) is the protocol's JSON error status/code."""
    st, hdrs, body = reply
    try:
        e = json.loads(body).get("error", {})
    except ValueError:
        return False
    return st == status and hdrs.get("tir-protocol") == "4" and \
        hdrs.get("content-type") == "application/json" and e.get("status") == status and \
        e.get("code") == code and isinstance(e.get("message"), str)


def closed_by_server(s, seconds):
    """Whether the server closes s within `seconds` (s sends nothing more)."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
        return True
    except socket.timeout:
        return False
    except OSError:
        return True


def get_from(srv, addr, path="/healthz"):
    s = sock_from(srv, addr)
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
        return read_reply(s)
    finally:
        s.close()


def metrics_from(srv, addr):
    """/metrics asked from loopback address addr ({} when refused)."""
    st, _, body = get_from(srv, addr, "/metrics")
    m = {}
    for ln in body.decode("utf-8", "replace").splitlines() if st == 200 else []:
        if ln and not ln.startswith("#"):
            k, _, v = ln.rpartition(" ")
            m[k] = float(v)
    return m


def metrics_on(srv, conn):
    """/metrics asked on the kept-alive connection conn."""
    r = request(srv, "GET", "/metrics", conn=conn)
    m = {}
    for ln in r.body.decode().splitlines():
        if ln and not ln.startswith("#"):
            k, _, v = ln.rpartition(" ")
            m[k] = float(v)
    return m


SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "  # a head not finished


def busy_from(srv, addr, headers=b""):
    """A connection from addr whose request is under way: a PUT's head and
    half of its body sent (the body waits for the rest)."""
    f = frame(np.arange(64, dtype=np.float32))
    h, body = blob(f)
    k = sock_from(srv, addr)
    k.sendall(b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n" %
              (h.encode(), headers, len(body)) + body[:len(body) // 2])
    return k


def test_per_address():
    """--max-connections-per-address: at, under and over it from one
    address while others get in.  Past the limit, the address's oldest
    connection that has sent no head yet makes room (closed); only when
    all its connections have requests under way is a newcomer refused.
    And the finding: 300 slow-loris connections from one address (and more
    from another) leave /healthz answered."""
    srv = Server("--max-connections-per-address", "4", "--header-timeout", "120")
    socks = []
    try:
        lim = request(srv, "GET", "/v1/info").json()["limits"]
        check("connections: /v1/info says the limits", lim.get("max_connections_per_address") == 4 and
              lim.get("header_timeout") == 120 and lim.get("max_connections") == 256, str(lim))
        for _ in range(3):
            socks.append(sock_from(srv, "127.0.0.2"))
            socks[-1].sendall(SLOW_HEAD)
        # /metrics' own connection is one of those it counts
        held3 = srv.wait_metric("tir_connections", 4)
        r = get_from(srv, "127.0.0.2")
        check("per address: under the limit (3 held of 4), a request from it is served", held3 and r[0] == 200, str(r))
        srv.wait_metric("tir_connections", 4)  # that one closed
        socks.append(sock_from(srv, "127.0.0.2"))
        socks[-1].sendall(SLOW_HEAD)
        held4 = srv.wait_metric("tir_connections", 5)
        r = get_from(srv, "127.0.0.2")
        oldest_gone = closed_by_server(socks[0], 5)
        others_kept = all(not closed_by_server(k, 0.01) for k in socks[1:])
        m = metrics(srv)
        check("per address: over the limit (4 slow heads of 4), a whole head is served; the oldest slow one "
              "made room", held4 and r[0] == 200 and oldest_gone and others_kept and
              m.get("tir_connections_evicted_total") == 1 and
              m.get('tir_connections_refused_total{reason="address"}') == 0, f"{r} {m.get('tir_connections')}")
        check("per address: the connection closed is logged with its address",
              srv.wait_log(r"^tir serve: 127\.0\.0\.2: connection closed: no request head yet, and its slot was needed"))
        for k in socks:
            k.close()
        socks = []
        srv.wait_metric("tir_connections", 1)
        # four with requests under way: the fifth is refused, nothing closed
        for _ in range(4):
            socks.append(busy_from(srv, "127.0.0.3"))
        held4 = srv.wait_metric("tir_connections_busy", 5)  # and /metrics' own
        over = sock_from(srv, "127.0.0.3")
        r = read_reply(over)
        over.close()
        m = metrics(srv)
        check("per address: over the limit (4 requests under way of 4): 503 busy, Retry-After, the limit named",
              held4 and json_error(r, 503, "busy") and r[1].get("retry-after") == "1" and
              "--max-connections-per-address" in json.loads(r[2])["error"]["message"] and
              m.get('tir_connections_refused_total{reason="address"}') == 1, f"{r} {m.get('tir_connections')}")
        r = get_from(srv, "127.0.0.4")
        check("per address: at the limit, another address is served", r[0] == 200 and r[2] == b"ok", str(r))
        check("per address: the refused connection is logged with its address",
              srv.wait_log(r"^tir serve: 127\.0\.0\.3: connection refused: .*--max-connections-per-address"))
        still = all(not closed_by_server(k, 0.01) for k in socks)
        for k in socks:
            k.close()
        socks = []
        back = srv.wait_metric("tir_connections", 1)
        r = get_from(srv, "127.0.0.3")
        check("per address: the 4 held meanwhile, and once they close the address gets in again",
              still and back and r[0] == 200, str(r))
    finally:
        for k in socks:
            k.close()
        srv.stop()

    # the finding: 300 connections from one address, each a header line
    # sent and the rest held back (they would trickle one every 10 s), and
    # 40 from another: 32 of each are held, each newcomer past them closing
    # its address's oldest, and /healthz from a third address is answered
    # promptly all along
    srv = Server("--header-timeout", "120")
    socks = []
    try:
        t0 = time.monotonic()
        for addr, n in (("127.0.0.1", 300), ("127.0.0.2", 40)):
            for _ in range(n):
                k = sock_from(srv, addr)
                try:
                    k.sendall(SLOW_HEAD)
                except OSError:
                    pass
                socks.append(k)
        opened = time.monotonic() - t0
        held = eventually(lambda: metrics_from(srv, "127.0.0.3").get("tir_connections") == 65)
        worst = 0.0
        ok = True
        for _ in range(10):
            t1 = time.monotonic()
            r = get_from(srv, "127.0.0.3")
            ok = ok and r[0] == 200
            worst = max(worst, time.monotonic() - t1)
        m = metrics_from(srv, "127.0.0.3")
        evicted = m.get("tir_connections_evicted_total")
        print(f"# slow loris: 340 connections opened in {opened:.2f} s; /healthz from another address: "
              f"worst of 10 {worst * 1e3:.1f} ms")
        check("slow loris: 300 + 40 connections from two addresses: 32 of each held, the rest closed older ones",
              held and evicted == 268 + 8 and m.get('tir_connections_refused_total{reason="address"}') == 0,
              f"connections {m.get('tir_connections')}, evicted {evicted}")
        check("slow loris: /healthz from a third address answered meanwhile, each within 1 s",
              ok and worst < 1.0, f"worst {worst:.3f} s")
    finally:
        for k in socks:
            k.close()
        srv.stop()

    # all clients together: slow heads hold at most half of the server's
    # 256 connections; 256 with requests under way, the 257th is refused
    # whatever its address.  /metrics is asked on one kept-alive
    # connection while the heads come, so that no connection of its comes
    # and goes
    srv = Server("--header-timeout", "120")
    socks = []
    try:
        mc = srv.conn(source="127.0.3.9")

        def count(name="tir_connections"):
            return metrics_on(srv, mc).get(name)
        for i in range(8):
            for _ in range(32):
                socks.append(sock_from(srv, f"127.0.2.{i + 1}"))
                socks[-1].sendall(SLOW_HEAD)
        # /metrics' kept-alive connection is in its head phase between
        # requests too: 127 slow heads and it
        held = eventually(lambda: count() == 128)
        r = get_from(srv, "127.0.3.1")
        ev = count("tir_connections_evicted_total")
        # (one more closed for the newcomer when libmicrohttpd was done with
        # /metrics' last request: 128 in their head phase then; none when
        # it was not yet (the client has an answer before libmicrohttpd
        # calls its request done), 127 and a request under way)
        check("connections: 256 slow heads from 8 addresses: 128 held, the rest closed older ones; another "
              "address is served", held and r[0] == 200 and ev in (256 - 127, 256 - 127 + 1), f"{r} evicted {ev}")
        mc.close()
        for k in socks:
            k.close()
        socks = []
        eventually(lambda: metrics_from(srv, "127.0.3.8").get("tir_connections") == 1)
        for i in range(8):
            for _ in range(32 if i < 7 else 31):
                socks.append(busy_from(srv, f"127.0.2.{i + 1}"))
        held = eventually(lambda: metrics_from(srv, "127.0.3.8").get("tir_connections_busy") == 256)
        socks.append(busy_from(srv, "127.0.3.2"))  # (the 256th; /metrics' is gone)

        def answered(k):  # (refused: the gate's 503 is in k before the next connection is accepted)
            k.setblocking(False)
            try:
                return k.recv(1) != b""
            except BlockingIOError:
                return False
        # (a connection of /metrics' that libmicrohttpd has not yet seen
        # closed is idle, and makes room once: asked again then; one whose
        # answer the client has but libmicrohttpd is not done with is still
        # under way, and the 256th is refused: sent again then, and looked
        # at again after the next ask, since the one sent again can meet
        # such a connection too.  The ask comes after the 256th, so a
        # refusal of it is in its socket by the time the ask is answered)
        mine = 0
        for _ in range(10):
            r = get_from(srv, "127.0.3.1")
            if answered(socks[-1]):
                mine += 1
                socks.pop().close()
                socks.append(busy_from(srv, "127.0.3.2"))
                continue
            if r[0] != 200:
                break
        socks.pop(0).close()
        # (until libmicrohttpd has read that close, the server is still
        # full and refuses /metrics' ask too, counted the same)
        m, asks = {}, []

        def ask():
            m.update(metrics_from(srv, "127.0.3.8"))
            asks.append(bool(m))
            return bool(m)
        eventually(ask)
        refused = asks.count(False)
        full = 'tir_connections_refused_total{reason="full"}'
        check("connections: 256 requests under way, one more from any address: 503 busy, counted",
              held and json_error(r, 503, "busy") and "256 connections are open" in r[2].decode() and
              m.get(full) == 1 + mine + refused,
              f"{r} {m.get('tir_connections')}, refused {m.get(full)} of which the 256th {mine}, /metrics' {refused}")
    finally:
        for k in socks:
            k.close()
        srv.stop()

    # a request under way while slow heads fill the head-phase half: its
    # connection is back in its head phase once it is answered, and one
    # more slow head is closed then, so that the half stays half
    srv = Server("--header-timeout", "120")
    socks = []
    try:
        h, body = blob(frame(np.arange(64, dtype=np.float32)))
        kc = sock_from(srv, "127.0.3.9")
        kc.sendall(b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" %
                   (h.encode(), len(body)) + body[:len(body) // 2])
        socks.append(kc)
        slow = []
        for i in range(8):
            for _ in range(32):
                slow.append(sock_from(srv, f"127.0.2.{i + 1}"))
                slow[-1].sendall(SLOW_HEAD)
        socks += slow

        def closed(k):
            k.setblocking(False)
            try:
                return k.recv(1) == b""
            except BlockingIOError:
                return False
            except OSError:
                return True
        before = eventually(lambda: sum(map(closed, slow)) == 128, 20)
        kc.settimeout(10)
        kc.sendall(body[len(body) // 2:])
        put = read_reply(kc)
        after = eventually(lambda: sum(map(closed, slow)) == 129, 10)
        kc.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        st, _, text = read_reply(kc)
        m = dict(ln.rpartition(" ")[::2] for ln in text.decode().splitlines() if ln and ln[0] != "#")
        check("connections: a request under way while 256 slow heads came: answered, its connection idle, "
              "one more slow head closed (128 in their head phase)",
              before and put[0] in (200, 201) and after and st == 200 and m.get("tir_connections") == "128" and
              m.get("tir_connections_evicted_total") == "129",
              f"128 closed first: {before}, PUT {put[0]}, 129 then: {after}, "
              f"{m.get('tir_connections')} held, {m.get('tir_connections_evicted_total')} evicted")
    finally:
        for k in socks:
            k.close()
        srv.stop()


def test_burst_heads():
    """A burst of connections accepted together, each with its whole head
    in its socket before the server has looked at any: past the address's
    limit, making room looks at every one of that address's connections
    before it closes one; those whose heads are in are served, and the
    newcomer is refused with an answer.  None is closed without a byte of
    an answer (it was: the eighth looked for was closed unread).  The
    server is stopped (SIGSTOP) while the burst connects and sends, so
    that its gate accepts them all in one wake-up."""
    n = 12
    srv = Server("--max-connections-per-address", str(n), "--header-timeout", "120")
    socks = []
    try:
        def state():
            with open(f"/proc/{srv.proc.pid}/stat") as f:
                return f.read().rpartition(")")[2].split()[0]
        os.kill(srv.proc.pid, signal.SIGSTOP)
        stopped = eventually(lambda: state() == "T", 30)
        for _ in range(n + 1):
            socks.append(sock_from(srv, "127.0.5.1", timeout=60))
            socks[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        os.kill(srv.proc.pid, signal.SIGCONT)
        replies = [read_reply(k) for k in socks]
        st = [r[0] for r in replies]
        refused = [r for r in replies if r[0] == 503]
        check(f"burst: {n + 1} heads from one address accepted in one wake-up, limit {n}: every one answered, "
              f"{n} served", stopped and None not in st and st.count(200) >= n and
              all(json_error(r, 503, "busy") for r in refused), f"stopped {stopped}, statuses {st}")
    finally:
        for k in socks:
            k.close()
        if srv.proc.poll() is None:
            os.kill(srv.proc.pid, signal.SIGCONT)
        srv.stop()


def test_slow_heads():
    """The issue's finding: 300 slow heads from 10 loopback addresses
    (127.0.0.2-11), reopened as soon as the server closes them, held all 256
    slots and /healthz answered 503 from any address.  Now they hold at most
    half, give way to newcomers, and /healthz is answered 200 within 1 s,
    with a token and without, every time for 3 s of it.  And 224 requests
    under way with a token: one more without a token is refused (the last
    32 slots are kept for tokens), one with is served."""
    srv = Server("--token", "tk", "--header-timeout", "120")
    socks = {}
    stop = threading.Event()
    opened = [0]

    def attacker():
        addrs = [f"127.0.0.{i}" for i in range(2, 12)]
        while not stop.is_set():
            for a in addrs:
                live = socks.setdefault(a, [])
                live[:] = [k for k in live if not closed_by_server(k, 0)]
                while len(live) < 30 and not stop.is_set():
                    try:
                        k = sock_from(srv, a, timeout=2)
                        k.sendall(SLOW_HEAD)
                        live.append(k)
                        opened[0] += 1
                    except OSError:
                        break
            stop.wait(0.05)
    th = threading.Thread(target=attacker, daemon=True)
    try:
        th.start()
        eventually(lambda: opened[0] >= 300)
        worst, bad = 0.0, []
        t_end = time.monotonic() + 3
        while time.monotonic() < t_end:
            for hdr in (b"", b"Authorization: Bearer tk\r\n"):
                t1 = time.monotonic()
                k = sock_from(srv, "127.0.0.1", timeout=5)
                try:
                    k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n%s\r\n" % hdr)
                    r = read_reply(k)
                finally:
                    k.close()
                worst = max(worst, time.monotonic() - t1)
                if r[0] != 200:
                    bad.append(r[0])
        m = metrics_as(srv, {"Authorization": "Bearer tk"})[1]
        print(f"# slow heads from 10 addresses: {opened[0]} opened; /healthz worst {worst * 1e3:.1f} ms; "
              f"connections {m.get('tir_connections')}, closed to make room {m.get('tir_connections_evicted_total')}")
        check("slow heads from 10 addresses: /healthz with and without a token always 200, within 1 s",
              not bad and worst < 1.0, f"bad {bad[:10]}, worst {worst:.3f} s")
        check("slow heads from 10 addresses: they hold at most half of the 256 slots",
              m.get("tir_connections", 999) <= 128 + 3, str(m.get("tir_connections")))
    finally:
        stop.set()
        th.join(10)
        for live in socks.values():
            for k in live:
                k.close()
        srv.stop()

    srv = Server("--token", "tk", "--header-timeout", "120", "--max-connections-per-address", "1000")
    busy = []
    try:
        for i in range(224):
            busy.append(busy_from(srv, f"127.0.4.{i % 8 + 1}", b"Authorization: Bearer tk\r\n"))
        auth = {"Authorization": "Bearer tk"}
        held = eventually(lambda: metrics_as(srv, auth)[1].get("tir_connections_busy") == 225)  # and its own
        r = get_from(srv, "127.0.5.1")
        k = sock_from(srv, "127.0.5.1")
        k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tk\r\n\r\n")
        rt = read_reply(k)
        k.close()
        m = metrics_as(srv, auth)[1]
        check("reserved slots: 224 requests under way, /healthz without a token: 503 busy, counted",
              held and json_error(r, 503, "busy") and "kept for requests with a token" in r[2].decode() and
              m.get('tir_connections_refused_total{reason="reserved"}') == 1, f"{r} {m.get('tir_connections_busy')}")
        check("reserved slots: with a token: 200", rt[0] == 200, str(rt))
    finally:
        for k in busy:
            k.close()
        srv.stop()


def test_header_deadline():
    """--header-timeout: a connection that has not sent a whole request head
    within it, from when it was accepted or its last request ended, is
    closed, whatever it trickles; one whose head is in is not, however long
    its body takes or its batch runs."""
    srv = Server("--header-timeout", "2")
    socks = []
    try:
        def trickle(k, first, t0):
            """Seconds from t0 until the server closes k, a header line sent every 0.25 s (at most 20 s)."""
            k.sendall(first)
            for i in range(80):
                if closed_by_server(k, 0.25):
                    return time.monotonic() - t0
                try:
                    k.sendall(b"X-Trickle-%d: a\r\n" % i)
                except OSError:
                    return time.monotonic() - t0
            return None

        t0 = time.monotonic()  # (before the connection: the deadline starts later)
        k = sock_from(srv, "127.0.0.4")
        took = trickle(k, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", t0)
        k.close()
        print(f"# header deadline: a first head trickled, closed after {took} s (--header-timeout 2)")
        check("header deadline: a first head trickled a line every 0.25 s: closed after 2 s",
              took is not None and 2 <= took < 12, f"{took}")
        check("header deadline: logged, counted", srv.wait_log(
            r"^tir serve: 127\.0\.0\.4: connection closed: no request head within 2 s \(--header-timeout\)$") and
            metrics(srv).get("tir_connections_timed_out_total", 0) >= 1)
        r = get_from(srv, "127.0.0.4")
        check("header deadline: a head sent whole is served", r[0] == 200, str(r))

        # kept alive: the deadline runs again from the end of a request
        k = sock_from(srv, "127.0.0.5")
        t0 = time.monotonic()  # (before the request: its end is later)
        k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        r = read_reply(k)
        took = trickle(k, b"GET /healthz HTTP/1.1\r\n", t0) if r[0] == 200 else None
        k.close()
        print(f"# header deadline: the next head of a kept-alive connection trickled, closed after {took} s")
        check("header deadline: kept alive, the next head trickled: closed 2 s after the last request",
              took is not None and 2 <= took < 12, f"{r[0]} {took}")
        k = sock_from(srv, "127.0.0.5")
        t0 = time.monotonic()
        k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        r = read_reply(k)
        gone = closed_by_server(k, 12)
        took = time.monotonic() - t0
        k.close()
        check("header deadline: kept alive and silent: closed 2 s after the last request",
              r[0] == 200 and gone and 2 <= took < 12, f"{r[0]} {gone} {took:.2f}")

        # a head in: the body may take longer than the deadline (libmicrohttpd's
        # idle timeout of 30 s between bytes is what holds it), and so may
        # the batch; each waits until a connection opened after it has timed
        # out (so more than 2 s have passed)
        def deadline_passed(addr):
            before = metrics(srv).get("tir_connections_timed_out_total", 0)
            p = sock_from(srv, addr)
            p.sendall(b"GET /")
            ok = srv.wait_metric("tir_connections_timed_out_total", before + 1)
            p.close()
            return ok

        f = frame(np.arange(20000, dtype=np.float32))
        h, body = blob(f)
        k = sock_from(srv, "127.0.0.6")
        k.sendall(b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (h.encode(), len(body)) +
                  body[:1000])
        waited = deadline_passed("127.0.0.7")
        k.sendall(body[1000:])
        r = read_reply(k)
        k.close()
        check("header deadline: a body sent slower than the deadline is received (201)",
              waited and r[0] == 201, str(r))
        sid = new_session(srv)
        socks.append(post_raw(srv, sid, ENDLESS))
        running = srv.wait_metric("tir_batches_running", 1)
        waited = deadline_passed("127.0.0.8")
        m = metrics(srv)
        check("header deadline: a batch running longer than it keeps its connection",
              running and waited and m.get("tir_batches_running") == 1 and
              not closed_by_server(socks[-1], 0.01), str(m.get("tir_batches_running")))
    finally:
        for k in socks:
            k.close()
        srv.stop()


HEAD_MAX = 16384


def test_head_errors():
    """What libmicrohttpd 0.9.75 would answer itself (an HTML page, the
    headers twice, or nothing) is answered in JSON: the gate reads each
    connection's first head before libmicrohttpd does."""
    srv = Server()
    try:
        cases = [
            ("a request line of one word", b"GARBAGE\r\n\r\n", 400, "bad_request"),
            ("no method", b" /healthz HTTP/1.1\r\n\r\n", 400, "bad_request"),
            ("no version", b"GET /healthz\r\n\r\n", 400, "bad_request"),
            ("a version not HTTP/d.d", b"GET /healthz HTTX/1.1\r\n\r\n", 400, "bad_request"),
            ("a space in the target", b"GET /health z HTTP/1.1\r\n\r\n", 400, "bad_request"),
            ("HTTP/0.9", b"GET /healthz HTTP/0.9\r\n\r\n", 505, "http_version"),
            ("HTTP/2.0", b"GET /healthz HTTP/2.0\r\n\r\n", 505, "http_version"),
            ("a header line without a colon", b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", 400, "bad_request"),
            ("a space before the colon", b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n", 400, "bad_request"),
            ("obsolete line folding", b"GET /healthz HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", 400, "bad_request"),
            ("a NUL in a header", b"GET /healthz HTTP/1.1\r\nX-A: a\0b\r\n\r\n", 400, "bad_request"),
            ("Content-Length not a number", b"POST /v1/sessions HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400,
             "bad_request"),
            ("Content-Length negative", b"POST /v1/sessions HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400,
             "bad_request"),
            ("Content-Length twice", b"POST /v1/sessions HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
             400, "bad_request"),
            ("Content-Length past 2^64", b"POST /v1/sessions HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n",
             413, "too_large"),
            ("Content-Length and Transfer-Encoding",
             b"POST /v1/sessions HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "bad_request"),
            ("Transfer-Encoding gzip", b"POST /v1/sessions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc", 501,
             "not_implemented"),
            ("a TLS hello to a plain server", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(64)), 400,
             "bad_request"),
        ]
        for name, data, status, code in cases:
            k = sock_from(srv, "127.0.0.1")
            k.sendall(data)
            r = read_reply(k)
            k.close()
            check(f"head in JSON: {name}: {status} {code}", json_error(r, status, code), f"{r[0]} {r[2][:160]!r}")
        # the head's size: at, under and over 16 KiB, and 100 header lines
        line = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: "
        for name, n, want in (("at", HEAD_MAX, 200), ("under", HEAD_MAX - 1, 200), ("over", HEAD_MAX + 1, 431)):
            data = line + b"p" * (n - len(line) - 4) + b"\r\n\r\n"
            k = sock_from(srv, "127.0.0.1")
            k.sendall(data)
            r = read_reply(k)
            k.close()
            check(f"head in JSON: a head of {len(data)} bytes ({name} the limit): {want}",
                  r[0] == want and (want == 200 or json_error(r, 431, "too_large")), f"{r[0]} {r[2][:120]!r}")
        for n, want in ((99, 200), (100, 200), (101, 431)):
            data = b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(n)) + b"\r\n"
            k = sock_from(srv, "127.0.0.1")
            k.sendall(data)
            r = read_reply(k)
            k.close()
            check(f"head in JSON: {n} header lines: {want}", r[0] == want and (want == 200 or
                                                                               json_error(r, 431, "too_large")),
                  f"{r[0]} {r[2][:120]!r}")
        # a head sent a byte at a time is waited for; bad, it is answered at
        # its first wrong byte, not at the deadline
        k = sock_from(srv, "127.0.0.1")
        for b in b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n":
            k.sendall(bytes([b]))
        r = read_reply(k)
        k.close()
        check("head in JSON: a head a byte at a time is served", r[0] == 200, str(r))
        k = sock_from(srv, "127.0.0.1")
        k.sendall(b"\x16\x03")
        t0 = time.monotonic()
        r = read_reply(k)
        k.close()
        check("head in JSON: two bytes no request begins with: 400 at once",
              json_error(r, 400, "bad_request") and time.monotonic() - t0 < 5, str(r))
        # a later head of a kept-alive connection: what the server's own code
        # sees (Transfer-Encoding) is JSON too
        k = sock_from(srv, "127.0.0.1")
        k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        r1 = read_reply(k)
        k.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n")
        r2 = read_reply(k)
        k.close()
        check("head in JSON: Transfer-Encoding gzip on a kept-alive connection: 501",
              r1[0] == 200 and json_error(r2, 501, "not_implemented"), f"{r2[0]} {r2[2][:120]!r}")
        m = metrics(srv)
        check("head in JSON: the answers are counted by status",
              m.get('tir_requests_total{status="400"}', 0) >= 14 and m.get('tir_requests_total{status="505"}') == 2
              and m.get('tir_requests_total{status="431"}') == 2, str(m))
        check("head in JSON: the server serves on", healthy(srv))
    finally:
        srv.stop()


# ---- sessions with a lease: a client gone without a word loses its session soon ----

def expired(srv, why):
    return metrics(srv).get(f'tir_sessions_expired_total{{reason="{why}"}}', 0)


def test_session_lease():
    """A session made with {"lease": true} is reclaimed once its client has
    given no sign (a request, or POST .../renew) for --session-lease, long
    before the TTL; a client that renews keeps it, and tir's client renews
    on a thread of its own, so an idle REPL keeps its session and a frozen
    one loses it (and makes a new one once it is back)."""
    srv = Server("--session-lease", "3")
    child = repl = None
    try:
        check("lease: /v1/info says session_lease", request(srv, "GET", "/v1/info").json()["limits"].get(
            "session_lease") == 3)
        r = request(srv, "POST", "/v1/sessions", {"lease": True})
        j = r.json() or {}
        check("lease: POST /v1/sessions {\"lease\": true}: 201 with the lease and the TTL",
              r.status == 201 and j.get("lease") == 3 and j.get("ttl") == 600, describe(r))
        request(srv, "DELETE", f"/v1/sessions/{j.get('session')}")  # (not to be counted as reclaimed)
        r = request(srv, "POST", "/v1/sessions")
        check("lease: without a body, no lease", r.status == 201 and "lease" not in (r.json() or {}), describe(r))
        for name, body, st, code in (("lease not a bool", {"lease": 1}, 400, "bad_request"),
                                     ("an unknown field", {"lease": True, "colour": 1}, 400, "bad_request"),
                                     ("not an object", [True], 400, "bad_request"),
                                     ("over 1 KiB", b'{"lease": true' + b" " * 1024 + b"}", 413, "too_large")):
            r = request(srv, "POST", "/v1/sessions", body)
            check(f"lease: a session body {name}: {st}", error_is(r, st, code), describe(r))
        a = request(srv, "POST", "/v1/sessions", {"lease": True}).json()["session"]
        r = request(srv, "POST", f"/v1/sessions/{a}/renew")
        check("lease: POST /v1/sessions/ID/renew: 200 with the lease",
              r.status == 200 and r.json() == {"session": a, "lease": 3}, describe(r))
        r = request(srv, "POST", f"/v1/sessions/{'0' * 32}/renew")
        check("lease: renewing no session: 404", error_is(r, 404, "not_found"), describe(r))
        r = request(srv, "GET", f"/v1/sessions/{a}/renew")
        check("lease: GET .../renew: 405", error_is(r, 405, "method") and r.headers.get("allow") == "POST",
              describe(r))

        # under and over the lease: A renewed every 0.3 s, B leased and left
        # alone, C not leased, made together; once B is reclaimed (the lease
        # has passed), A and C are there; once A is left alone, it goes too
        t0 = time.monotonic()  # (before B is made: its lease starts later)
        b = request(srv, "POST", "/v1/sessions", {"lease": True}).json()["session"]
        c = new_session(srv)
        stop = threading.Event()
        renewed = []

        def renew_a():
            while not stop.is_set():
                renewed.append(request(srv, "POST", f"/v1/sessions/{a}/renew").status)
                stop.wait(0.3)
        th = threading.Thread(target=renew_a)
        th.start()
        gone_b = eventually(lambda: expired(srv, "lease") >= 1)
        took = time.monotonic() - t0
        ra = request(srv, "POST", f"/v1/sessions/{a}/renew")
        rb = run(srv, b, EXP3, {})
        rc = request(srv, "POST", f"/v1/sessions/{c}/renew")
        check("lease: renewed every 0.3 s, a session outlives the lease; one not renewed is reclaimed; one "
              "without a lease stays", gone_b and took >= 3 and ra.status == 200 and
              all(x == 200 for x in renewed) and error_is(rb, 404, "not_found") and rc.status == 200 and
              expired(srv, "lease") == 1 and expired(srv, "ttl") == 0, f"B after {took:.2f} s; {describe(ra)} {describe(rb)} {describe(rc)}")
        stop.set()
        th.join(10)
        t0 = time.monotonic()
        gone_a = eventually(lambda: expired(srv, "lease") >= 2, 20)
        took = time.monotonic() - t0
        check("lease: no longer renewed, it is reclaimed within the lease (3 s) and the sweep (1 s)",
              gone_a and took < 3 + 1 + 5, f"{took:.2f} s")

        # a client frozen with its connection open: a process that renews
        # on a kept-alive connection, then is stopped (SIGSTOP)
        code = ("import http.client, json, sys, time\n"
                f"c = http.client.HTTPConnection('127.0.0.1', {srv.port}, timeout=10)\n"
                "c.request('POST', '/v1/sessions', body=json.dumps({'lease': True}))\n"
                "sid = json.loads(c.getresponse().read())['session']\n"
                "print(sid, flush=True)\n"
                "while True:\n"
                "    c.request('POST', '/v1/sessions/%s/renew' % sid, body=b'')\n"
                "    c.getresponse().read()\n"
                "    time.sleep(0.3)\n")
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        sid = child.stdout.readline().decode().strip()
        srv.requests += 1
        beating = srv.wait_log(r"^POST /v1/sessions/%s\u2026/renew 200 " % sid[:8], 2)
        before = expired(srv, "lease")
        os.kill(child.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        gone = eventually(lambda: expired(srv, "lease") >= before + 1, 30)
        took = time.monotonic() - t0
        open_conn = True
        with open(f"/proc/{child.pid}/net/tcp") as f:
            open_conn = any(f":{srv.port:04X}" in ln for ln in f)
        print(f"# lease: a client frozen (SIGSTOP) has its session reclaimed {took:.2f} s after "
              f"(--session-lease 3, TTL 600)")
        check("lease: a client frozen with its connection open: its session reclaimed within the lease and "
              "the sweep (4 s), far before the TTL (600 s)",
              beating and gone and took < 4 + 5 and error_is(run(srv, sid, EXP3, {}), 404, "not_found"),
              f"{took:.2f} s; renewing before {beating}; its socket open {open_conn}")
        child.kill()
        child.wait(10)
        child = None

        # tir's REPL: idle for three leases, it keeps its session (its
        # thread renews it); frozen, it loses it; back, it makes a new one
        lines = []
        repl = subprocess.Popen([TIR, "repl", "--remote", f"127.0.0.1:{srv.port}"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        threading.Thread(target=lambda: [lines.append(ln.decode().rstrip("\n")) for ln in repl.stdout],
                         daemon=True).start()
        repl.stdin.write(b"a = [1, 2]\nb = a * 2\nb\n")
        repl.stdin.flush()
        first = eventually(lambda: "[2, 4]" in lines)
        m0 = metrics(srv)
        for i in range(3):  # three leases pass: three witnesses, leased, not renewed, each reclaimed
            request(srv, "POST", "/v1/sessions", {"lease": True})
            eventually(lambda: expired(srv, "lease") >= m0['tir_sessions_expired_total{reason="lease"}'] + i + 1)
        m = metrics(srv)
        repl.stdin.write(b"b * 3\n")
        repl.stdin.flush()
        again = eventually(lambda: "[6, 12]" in lines)
        m1 = metrics(srv)
        renewals = srv.logged(r"^POST /v1/sessions/\w{8}\u2026/renew 200 ")
        check("lease: tir's REPL idle for three leases keeps its session (renewed on its own thread)",
              first and again and m.get("tir_sessions") == 3 and  # the REPL's, c and the one without a body
              m1["tir_sessions_created_total"] == m0["tir_sessions_created_total"] + 3 and renewals >= 4,
              f"{lines} sessions {m.get('tir_sessions')}, created {m0['tir_sessions_created_total']} -> "
              f"{m1['tir_sessions_created_total']}, {renewals} renewals")
        before = expired(srv, "lease")
        os.kill(repl.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        gone = eventually(lambda: expired(srv, "lease") >= before + 1, 30)
        took = time.monotonic() - t0
        os.kill(repl.pid, signal.SIGCONT)
        repl.stdin.write(b"b * 4\n")
        repl.stdin.flush()
        back = eventually(lambda: "[8, 16]" in lines)
        m2 = metrics(srv)
        check("lease: the REPL frozen loses its session within the lease; back, it makes a new one and "
              "its values again", gone and took < 4 + 5 and back and
              m2["tir_sessions_created_total"] == m1["tir_sessions_created_total"] + 1,
              f"{took:.2f} s; {lines}")
        repl.stdin.close()
        st = repl.wait(20)
        err = repl.stderr.read().decode()
        check("lease: the REPL ends cleanly", st == 0 and err == "", f"exit {st}: {err[:300]}")
        repl = None
    finally:
        for p in (child, repl):
            if p:
                p.kill()
                p.wait(10)
        srv.stop()


def json_values(v):
    """How many values the server counts in JSON v: every number, string,
    literal, array and object one, an object's keys none."""
    if isinstance(v, dict):
        return 1 + sum(json_values(x) for x in v.values())
    if isinstance(v, list):
        return 1 + sum(json_values(x) for x in v)
    return 1


RUN_MAX_VALUES = 4 * 4096 + 64


def test_json_values():
    """A run body is judged by what parsing it would hold before jansson
    sees it: more JSON values than a run request can need is 413 (with the
    count and the limit), and what the parse may hold (2 x the body, 384
    bytes a value) is charged to --max-inflight: 503 when it does not fit
    now, 413 when it never could.  The finding: a 50 MiB {"graph":
    [0,0,...]} raised the server's peak RSS by 1 GB before its 400."""
    srv = Server()
    try:
        sid = new_session(srv)
        check("json: /v1/info says max_run_values",
              request(srv, "GET", "/v1/info").json()["limits"].get("max_run_values") == RUN_MAX_VALUES)
        srv.wait_trim()  # the idle trim before the baseline
        base = srv.hwm_kib()
        body = b'{"graph":[' + b"0," * (25 << 20) + b'0]}'  # 50 MiB, 26,214,403 values
        t0 = time.monotonic()
        r = request(srv, "POST", f"/v1/sessions/{sid}/run", body)
        took = time.monotonic() - t0
        peak = srv.hwm_kib()
        print(f"# json: a 50 MiB body of 26 M values: {describe(r)[:60]} in {took * 1e3:.0f} ms, "
              f"VmHWM {base} -> {peak} KiB")
        check("json: a 50 MiB [0,0,...] body: 413 with its count and the limit",
              error_is(r, 413, "too_large") and f"26214403 JSON values, over the {RUN_MAX_VALUES}" in
              r.err().get("message", ""), describe(r))
        check("json: ... and the server's peak RSS grew by less than twice the body",
              peak - base < 2 * len(body) // 1024 + RSS_SLACK_KIB, f"VmHWM {base} -> {peak} KiB")
        check("json: ... and it serves on", healthy(srv))

        # a legitimate request of the most values: 4096 inputs, keep 4096,
        # and drop padded to the limit (at), one less (under), one more (over)
        hb, _ = put_blob(srv, np.arange(3, dtype=np.float32))
        n = 4096
        text = "".join(f"input t{i}: f32[3]\n" for i in range(n)) + \
            "".join(f"v{i}: f32[3] = neg(t0)\n" for i in range(n)) + "print t0\n"

        def body_of(ndrop):
            return {"graph": sha(text), "text": text, "inputs": {f"t{i}": {"blob": hb} for i in range(n)},
                    "keep": {f"v{i}": f"k{i}" for i in range(n)}, "drop": [f"d{i}" for i in range(ndrop)]}
        at = body_of(RUN_MAX_VALUES - json_values(body_of(0)))
        for name, b in (("at", at), ("under", body_of(len(at["drop"]) - 1)), ("over", body_of(len(at["drop"]) + 1))):
            r = request(srv, "POST", f"/v1/sessions/{sid}/run", b)
            k = json_values(b)
            if name == "over":
                check(f"json: a run request of {k} values ({name} the limit): 413",
                      error_is(r, 413, "too_large") and f"{k} JSON values, over the {RUN_MAX_VALUES}" in
                      r.err().get("message", ""), describe(r))
            else:
                check(f"json: a run request of {k} values ({name} the limit, 4096 inputs, keep and drop): 200",
                      r.status == 200 and np.array_equal(results(r.body)[1][0], np.arange(3)), describe(r))
    finally:
        srv.stop()

    # the parse charged to --max-inflight: a budget of exactly what the
    # request at the limit costs (2 x its bytes + 384 x its values)
    raw_at = json.dumps(at).encode()
    cost = 2 * len(raw_at) + 384 * json_values(at)
    srv = Server("--max-inflight", str(cost))
    try:
        sid = new_session(srv)
        put_blob(srv, np.arange(3, dtype=np.float32))
        runp = f"/v1/sessions/{sid}/run"
        r = request(srv, "POST", runp, raw_at)
        check("json: a parse that costs all of --max-inflight: 200", r.status == 200, describe(r))
        # its share is let go of before the answer is sent: a client that
        # has it may send the next body at once (asked once, no waiting)
        check("json: ... and the budget holds none of it once it is answered",
              metrics(srv).get("tir_inflight_body_bytes") == 0, str(metrics(srv).get("tir_inflight_body_bytes")))
        over = dict(at, drop=at["drop"][:-1] + [at["drop"][-1] + "x"])  # one byte more
        r = request(srv, "POST", runp, json.dumps(over).encode())
        check("json: one that costs more than --max-inflight: 413, said so",
              error_is(r, 413, "too_large") and "would hold" in r.err().get("message", "") and
              "(--max-inflight)" in r.err().get("message", ""), describe(r))
        # a blob upload under way holds 100,000 bytes of the budget: the
        # parse does not fit now (503, Retry-After); once it ends, it does
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" % (b"e" * 64))
        held = srv.wait_metric("tir_inflight_body_bytes", 100000)
        r = request(srv, "POST", runp, raw_at)
        check("json: a parse that does not fit what is left now: 503 busy, Retry-After",
              held and error_is(r, 503, "busy") and r.headers.get("retry-after") == "1", describe(r))
        s.close()
        srv.wait_metric("tir_inflight_body_bytes", 0)
        r = request(srv, "POST", runp, raw_at)
        check("json: ... and once the upload is gone: 200", r.status == 200, describe(r))
    finally:
        srv.stop()


def long_text(n):
    """A batch of n 1024 x 1024 matmuls: about 0.05 s each here."""
    lines = ["x0: f32[1024, 1024] = randn([1024, 1024], seed=1)"]
    for i in range(n):
        lines += [f"m{i}: f32[1024, 1024] = matmul(x{i}, x0)", f"x{i + 1}: f32[1024, 1024] = tanh(m{i})"]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


def chain_text(n):
    """A batch of n chained 2048 x 2048 matmuls, each 17 GFLOP: some 0.1 s
    on one core here, a few ms on the fastest machines.  w is scaled by
    1/sqrt(2048): the values keep their size, far from overflow and from
    denormals (which would slow the kernels down)."""
    lines = ["x0: f32[2048, 2048] = randn([2048, 2048], seed=1)", "w: f32[2048, 2048] = mul(x0, 0.0221)"]
    lines += [f"x{i + 1}: f32[2048, 2048] = matmul(x{i}, w)" for i in range(n)]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


# A batch no machine finishes within the test (minutes on the fastest, an
# hour here), each of its kernels short: the tests that need the compute
# thread busy run it, and end it by closing its connection.
ENDLESS = chain_text(20000)


def post_raw(srv, sid, text):
    """A socket that has sent POST /v1/sessions/SID/run of text (its answer not read)."""
    body = json.dumps({"graph": sha(text), "text": text, "inputs": {}}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"POST /v1/sessions/%s/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (sid.encode(), len(body)) + body)
    srv.requests += 1
    return s


def test_long_batch():
    """Batches run on one compute thread, one at a time, in the order they
    came; the connections of the HTTP threads go on meanwhile, and a stop
    waits for the batches received, which are answered.  An endless batch
    holds the thread while the checks look (the gauges say it runs and the
    others wait); its client then goes away, and it stops."""
    srv = Server()
    socks = []
    try:
        sid = new_session(srv)
        socks.append(post_raw(srv, sid, ENDLESS))
        holds = srv.wait_metric("tir_batches_running", 1)
        text = long_text(3)
        out = {}

        def go(key):
            t0 = time.monotonic()
            r = run(srv, sid, text)
            out[key] = (r, time.monotonic() - t0)

        threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        waiting = srv.wait_metric("tir_batches_queued", 2)
        worst = 0
        ok = True
        for _ in range(8):
            t0 = time.monotonic()
            ok = healthy(srv) and ok
            worst = max(worst, time.monotonic() - t0)
        m = metrics(srv)
        busy = holds and waiting and m.get("tir_batches_running") == 1 and m.get("tir_batches_queued") == 2
        socks.pop().close()  # the endless batch stops; the two run
        for t in threads:
            t.join(120)
        # /healthz: answered while the compute thread is busy, each within
        # 1 s (it takes a millisecond; 1 s holds on a loaded CPU)
        check("long batches: /healthz answers meanwhile", ok and busy and worst < 1.0,
              f"worst {worst:.3f}s; one batch running and two queued meanwhile: {busy} "
              f"(running {m.get('tir_batches_running')}, queued {m.get('tir_batches_queued')})")
        check("long batches: both answered", all(out.get(k, (None,))[0] is not None and out[k][0].status == 200
                                                 for k in range(2)), str(out))
        # a stop waits for the batches received, which are answered: one
        # runs when SIGTERM comes, one waits behind it; the server is still
        # there once it says it stops, and the one behind it is answered
        # after the one running ended (its client gone)
        socks.append(post_raw(srv, sid, ENDLESS))
        holds = srv.wait_metric("tir_batches_running", 1)
        th = threading.Thread(target=go, args=("stop",))
        th.start()
        waiting = srv.wait_metric("tir_batches_queued", 1)
        srv.proc.send_signal(signal.SIGTERM)
        stopping = srv.wait_log(r"^tir serve: stopping once 2 batches received are answered$")
        alive = srv.proc.poll() is None and th.is_alive()
        # a stopping server takes no new work: a batch whose blob it lacks
        # gets 503 (not a 409 asking for the blob), and a blob is not stored
        h, body = blob(frame(np.arange(7, dtype=np.float32)))
        rb = request(srv, "POST", f"/v1/sessions/{sid}/run",
                     json.dumps({"graph": hashlib.sha256(b"print x\n").hexdigest(), "inputs": {"x": {"blob": h}}}).encode())
        rp = request(srv, "PUT", "/v1/blobs/" + h, body)
        check("stopping: a new batch gets 503, not 409; a PUT gets 503",
              error_is(rb, 503, "busy") and "stopping" in str(rb.json()) and
              error_is(rp, 503, "busy") and "stopping" in str(rp.json()),
              describe(rb) + " / " + describe(rp))
        socks.pop().close()
        th.join(120)
        r = out.get("stop", (None,))[0]
        check("SIGTERM during a batch: the server waits, the batch behind it is answered",
              holds and waiting and stopping and alive and r is not None and r.status == 200,
              f"running {holds}, queued {waiting}, said it stops {stopping}, still there {alive}; " +
              (describe(r) if r else "no answer"))
    finally:
        for s in socks:
            s.close()
        st = srv.stop()
    check("SIGTERM during a batch: exit 0", st == 0, f"exit {st}")


def test_client_gone():
    """A client that goes away while its batch waits in the queue: the
    batch is not run; while it runs: it stops at the next kernel.  Others
    are answered promptly, and the log says what happened (499)."""
    srv = Server()
    socks = []
    try:
        sid = new_session(srv)
        # the first runs (endless), the second waits behind it
        socks.append(post_raw(srv, sid, ENDLESS))
        seen = srv.wait_metric("tir_batches_running", 1)
        socks.append(post_raw(srv, sid, ENDLESS))
        seen = srv.wait_metric("tir_batches_queued", 1) and seen
        for s in reversed(socks):
            s.close()
        socks = []
        t0 = time.monotonic()
        ok = healthy(srv)
        h, _ = put_blob(srv, np.arange(3, dtype=np.float32))
        r = run(srv, sid, EXP3, {"t0": {"blob": h}})
        took = time.monotonic() - t0
        print(f"# client gone: another client's batch answered {took * 1e3:.0f} ms after")
        # promptly: once the kernel under way ends (0.1 s here, more on a
        # loaded CPU), not after the hour the batch has left
        check("client gone: /healthz and another batch answered promptly",
              seen and ok and r.status == 200 and took < 5,
              f"{took:.2f} s, {describe(r)}; seen running and queued: {seen}")
        gone = r"^POST /v1/sessions/\w{8}\u2026/run 499 \d+ 0 [\d.]+ms \(the client went away: "
        srv.wait_log(gone + r"its batch was stopped after \d+ ms\)$")
        srv.wait_log(gone + r"its batch was dropped before it ran\)$")
        lines = [ln for ln in srv.lines if ln.startswith("POST /v1/sessions/")]
        check("client gone: the log says the batch running was stopped (499)",
              any(re.match(gone + r"its batch was stopped after \d+ ms\)$", ln) for ln in lines), str(lines[-4:]))
        check("client gone: the log says the batch queued was dropped (499)",
              any(re.match(gone + r"its batch was dropped before it ran\)$", ln) for ln in lines), str(lines[-4:]))
        m = metrics(srv)
        check("client gone: /metrics tir_batches_cancelled_total 2", m.get("tir_batches_cancelled_total") == 2,
              str(m.get("tir_batches_cancelled_total")))
        r = run(srv, sid, chain_text(3))
        check("client gone: the graph's exec runs again afterwards", r.status == 200, describe(r))
        # a stop waits for the batch under way, unless its client goes away
        socks.append(post_raw(srv, sid, ENDLESS))
        seen = srv.wait_metric("tir_batches_running", 1)
        srv.proc.send_signal(signal.SIGTERM)
        seen = srv.wait_log(r"^tir serve: stopping once 1 batch received is answered$") and seen
        socks.pop().close()
        t0 = time.monotonic()
        st = srv.stop()
        took = time.monotonic() - t0
        # at once: the end of the kernel under way, and the server's own stop
        check("client gone during a stop: the batch is stopped, the server exits 0 at once",
              seen and st == 0 and took < 5, f"exit {st} after {took:.1f} s; seen running, then stopping: {seen}")
    finally:
        for s in socks:
            s.close()
        st = srv.stop()
    check("client gone: SIGTERM afterwards: exit 0", st == 0, f"exit {st}")


def big_chain_text(n, size=6144):
    """n chained size x size matmuls: 0.46 TFLOP each at 6144, seconds on
    any machine of today, so that a stop seen only between kernels would
    take that long."""
    lines = [f"x0: f32[{size}, {size}] = randn([{size}, {size}], seed=1)",
             f"w: f32[{size}, {size}] = mul(x0, {1 / size ** 0.5:.6f})"]
    lines += [f"x{i + 1}: f32[{size}, {size}] = matmul(x{i}, w)" for i in range(n)]
    return "\n".join(lines + [f"s: f32[] = sum(x{n})", "print s"]) + "\n"


SMALL = "x: f32[4] = ones([4])\ns: f32[] = sum(x)\nprint s\n"


def small_ok(r):
    if r.status != 200:
        return False
    _, vals = results(r.body)
    return len(vals) == 1 and float(vals[0]) == 4.0


def test_fair_queue():
    """Batches of different sessions run at once: a small batch is answered
    while another session's endless one runs (it does not wait behind it);
    a session's own batches keep their order (one at a time); a batch whose
    bound does not fit beside the one running waits, and runs once that one
    is gone; a client that leaves stops its batch in the middle of a
    matmul of seconds, not after it."""
    srv = Server("--max-memory", "1G")
    socks = []
    try:
        a, b, c = new_session(srv), new_session(srv), new_session(srv)
        socks.append(post_raw(srv, a, ENDLESS))
        running = srv.wait_metric("tir_batches_running", 1)
        took, ok = [], True
        for _ in range(7):
            t0 = time.monotonic()
            ok = small_ok(run(srv, b, SMALL)) and ok
            took.append(time.monotonic() - t0)
        m = metrics(srv)
        took.sort()
        print(f"# fair queue: a small batch beside an endless one: median {took[3] * 1e3:.1f} ms, "
              f"worst {took[-1] * 1e3:.1f} ms")
        check("fair queue: another session's small batches are answered while the long one runs",
              running and ok and m.get("tir_batches_running") == 1 and m.get("tir_batches_queued") == 0,
              f"running {running}, answers right {ok}, {m.get('tir_batches_running')} running")
        # the same session: behind its own endless batch
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run(srv, a, SMALL)))
        t.start()
        queued = srv.wait_metric("tir_batches_queued", 1)
        # a batch that could hold 600 MB (its bound) does not start beside
        # the endless one under --max-memory 1G (more than half of what is
        # left): it waits too
        big = "x: f32[150000000] = ones([150000000])\ns: f32[] = sum(x)\nprint s\n"
        t2 = threading.Thread(target=lambda: out.update(big=run(srv, c, big)))
        t2.start()
        both = srv.wait_metric("tir_batches_queued", 2)
        m = metrics(srv)
        check("fair queue: a session's second batch, and a batch too big to run beside, wait",
              queued and both and "r" not in out and "big" not in out and m.get("tir_batches_running") == 1,
              f"queued {queued}/{both}, {m.get('tir_batches_running')} running, answered {list(out)}")
        socks.pop().close()
        t.join(60)
        t2.join(60)
        rb = out.get("big")
        check("fair queue: both run once the long one is gone",
              small_ok(out.get("r")) and rb is not None and rb.status == 200 and
              abs(float(results(rb.body)[1][0]) - 1.5e8) < 1e3, f"{out}")
        # a stop in the middle of a matmul of seconds: the batch is in its
        # first product once x0, w and x1 are held
        socks.append(post_raw(srv, c, big_chain_text(1000)))
        inside = eventually(lambda: metrics(srv).get("tir_tensor_bytes", 0) >= 3 * 6144 * 6144 * 4)
        before = srv.logged("its batch was stopped after")
        socks.pop().close()
        t0 = time.monotonic()
        stopped = srv.wait_log("its batch was stopped after", before + 1)
        took = time.monotonic() - t0
        print(f"# fair queue: a client gone in the middle of a 6144^3 matmul: stopped {took * 1e3:.0f} ms after")
        # 100 ms is the promise (bench/); 1 s holds on a loaded CPU, and a
        # stop between kernels would take the whole product (seconds)
        check("fair queue: a client gone mid-matmul has its batch stopped within 1 s",
              inside and stopped and took < 1.0, f"{took:.2f} s; seen in its matmul: {inside}")
        check("fair queue: answers right afterwards", small_ok(run(srv, c, SMALL)))
    finally:
        for sk in socks:
            sk.close()
        st = srv.stop()
    check("fair queue: SIGTERM afterwards: exit 0", st == 0, f"exit {st}")


def test_time_limit():
    """--max-batch-seconds: a batch under it is answered; one over it is
    stopped, inside its matmul, with a 413 time naming the op (line, col)
    and the limit; `tir run --remote` says so and exits 3."""
    srv = Server("--max-batch-seconds", "1")
    try:
        sid = new_session(srv)
        info = request(srv, "GET", "/v1/info").json()
        check("time limit: /v1/info says it", info["limits"].get("max_batch_seconds") == 1, str(info["limits"]))
        check("time limit: a batch under it is answered", small_ok(run(srv, sid, SMALL)))
        text = big_chain_text(1000)
        t0 = time.monotonic()
        r = run(srv, sid, text)
        took = time.monotonic() - t0
        e = r.err()
        check("time limit: a batch over it: 413 time, at its op, within the limit plus 1 s",
              error_is(r, 413, "time") and e.get("limit_s") == 1 and isinstance(e.get("line"), int) and
              1 <= e.get("line") <= len(text.splitlines()) and "--max-batch-seconds" in e.get("message", "") and
              "--max-batch-seconds" in e.get("rendered", "") and
              1.0 <= took < 2.0,
              f"{took:.2f} s, {describe(r)}")
        check("time limit: the session goes on", small_ok(run(srv, sid, SMALL)))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "long.tir")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([TIR, "run", "--remote", f"127.0.0.1:{srv.port}", path], capture_output=True,
                               text=True, timeout=60)
        check("time limit: tir run --remote exits 3 and says why, at the op",
              p.returncode == 3 and "--max-batch-seconds" in p.stderr and "long.tir:" in p.stderr,
              f"exit {p.returncode}: {p.stderr[-300:]}")
    finally:
        st = srv.stop()
    check("time limit: SIGTERM afterwards: exit 0", st == 0, f"exit {st}")


def test_memory_plan():
    """--max-memory against the plan: a batch whose simulated peak passes
    what the budget has left is refused before it allocates anything (413
    memory with peak, budget and held, at the op of the largest value held
    at the peak); one whose peak is the budget exactly runs, and one a few
    bytes over is refused.  The issue's zeros([32768, 32768]) chain is one
    fused kernel and holds nothing."""
    mib = 1 << 20
    two = "a: f32[4096, 4096] = randn([4096, 4096], seed=1)\nb: f32[4096, 4096] = matmul(a, a)\n" \
          "s: f32[] = sum(b)\nprint s\n"
    # a (64 MiB) and b (64 MiB) held at once; a goes once b is made, and the
    # sum's 4 bytes (64 as allocated) come beside b alone
    # (the batch's request and its parsed graph are charged to the budget
    # too: a few KiB here; the plan's peak counts the least scratch of the
    # matmul's kernel beside them, its packing buffers: under 1 MiB, none
    # where the product runs on OpenBLAS)
    for limit, ok in ((129 * mib, True), (128 * mib - 1, False)):
        srv = Server("--max-memory", str(limit))
        try:
            sid = new_session(srv)
            r = run(srv, sid, two)
            e = r.err()
            if ok:
                check(f"memory plan: a peak of 128 MiB under a budget of {limit} B (its request beside) runs",
                      r.status == 200, describe(r))
            else:
                check(f"memory plan: a peak of 128 MiB over a budget of {limit} B: 413 at the matmul",
                      error_is(r, 413, "memory") and 128 * mib <= e.get("peak", 0) < 129 * mib
                      and e.get("budget") == limit
                      and e.get("line") == 2 and "at its peak" in e.get("message", ""), describe(r))
        finally:
            srv.stop()
    srv = Server("--max-memory", "300M")
    try:
        sid = new_session(srv)
        base = srv.hwm_kib()
        big = "a: f32[4096, 8192] = randn([4096, 8192], seed=1)\nt: f32[8192, 4096] = transpose(a)\n" \
              "b: f32[8192, 8192] = matmul(t, a)\ns: f32[] = sum(b)\nprint s\n"
        r = run(srv, sid, big)
        e = r.err()
        grew = srv.hwm_kib() - base
        check("memory plan: 384 MiB planned under 300M: 413 before anything is made, at the largest value",
              error_is(r, 413, "memory") and 384 * mib <= e.get("peak", 0) < 385 * mib and e.get("line") == 3 and
              e.get("col") == 22 and e.get("held", mib) < mib and grew < 64 * 1024,
              f"VmHWM grew {grew} KiB; {describe(r)}")
        r = run(srv, sid, "x: f32[32768, 32768] = zeros([32768, 32768])\ny: f32[32768, 32768] = add(x, 1)\n"
                "z: f32[32768, 32768] = mul(y, 2)\ns: f32[] = sum(z)\nprint s\n")
        check("memory plan: sum((zeros([32768, 32768]) + 1) * 2) holds nothing under 300M",
              r.status == 200 and float(results(r.body)[1][0]) == 2.0 * 32768 * 32768, describe(r))
    finally:
        st = srv.stop()
    check("memory plan: SIGTERM afterwards: exit 0", st == 0, f"exit {st}")


def test_kept_values():
    """Kept values are charged what they cost: /metrics counts them and
    their bytes (tensors and records), and their records count against
    --max-memory, so many kept scalars cannot pass it (503, nothing kept).
    (The budget holds the texts' parsed graphs too, about 1.5 KiB an op:
    5M lets the 2000-op text run and its records pass it.)"""
    def keeper(n):
        lines = ["x: f32[] = full([], 1.0)"] + [f"v{i}: f32[] = add(x, {i})" for i in range(n)]
        return "\n".join(lines + ["print x"]) + "\n"
    srv = Server("--max-memory", "5M")
    try:
        sid = new_session(srv)
        text = keeper(200)
        r = run(srv, sid, text, keep={f"v{i}": f"k{i}" for i in range(200)})
        m = metrics(srv)
        check("kept values: 200 scalars kept, counted with their records in /metrics",
              r.status == 200 and m.get("tir_session_values") == 200 and
              200 * (4 + 128) < m.get("tir_session_value_bytes", 0) < 200 * 2048 and
              m.get("tir_tensor_bytes", 0) >= m.get("tir_session_value_bytes", 0), f"{describe(r)} {m}")
        big = keeper(2000)
        r = run(srv, sid, big, keep={f"v{i}": f"j{i}" for i in range(2000)})
        m2 = metrics(srv)
        check("kept values: 2000 more scalars pass --max-memory 5M: 503 with Retry-After, none kept",
              error_is(r, 503, "busy") and "keep" in r.err().get("message", "") and
              r.headers.get("retry-after") == "1" and m2.get("tir_session_values") == 200, f"{describe(r)} {m2}")
        request(srv, "DELETE", f"/v1/sessions/{sid}")
        m3 = metrics(srv)
        check("kept values: gone with their session", m3.get("tir_session_values") == 0 and
              m3.get("tir_session_value_bytes") == 0, str(m3))
    finally:
        srv.stop()


def load_text(n):
    return (f"input t0: f32[{n}, {n}]\ninput t1: f32[{n}]\nt2: f32[{n}, {n}] = matmul(t0, t0)\n"
            f"t3: f32[{n}, {n}] = add(t2, t1)\nt4: f32[{n}, {n}] = tanh(t3)\nt5: f32[{n}] = sum(t4, axis=1)\n"
            "print t5, t1\n")


LOAD_TEXT = load_text(32)


def test_graph_cache():
    """Found by fuzz_serve.py: the cache of parsed batch texts was bounded in
    count alone (256), and a text of 30,000 lines, parsed and planned,
    holds 26 MB: 256 of them held gigabytes."""
    srv = Server("--max-body", "4M")
    try:
        sid = new_session(srv)
        h, _ = put_blob(srv, np.ones(3, np.float32))
        srv.wait_trim()  # the idle trim before the baseline
        base = srv.rss_kib()
        ok = True
        for i in range(24):
            text = "input t0: f32[3]\n" + "".join(f"m{j}: f32[3] = neg({'t0' if j == 0 else f'm{j - 1}'})\n"
                                                  for j in range(15000)) + f"x: f32[3] = add(m14999, {i})\nprint x\n"
            r = run(srv, sid, text, {"t0": {"blob": h}})
            ok = ok and r.status == 200 and np.allclose(results(r.body)[1][0], 1 + i)
        check("graph cache: 24 texts of 15,000 lines run", ok, describe(r))
        n = metrics(srv).get("tir_graphs")
        check("graph cache: it keeps what fits in about 64 MiB (at most 5 of them)", n is not None and n <= 5, str(n))
        bound = base + 100 * 1024 + RSS_SLACK_KIB
        check("graph cache: VmRSS within 100 MiB of its baseline once idle",
              eventually(lambda: srv.rss_kib() <= bound, 15), f"{base} -> {srv.rss_kib()} KiB")
    finally:
        srv.stop()


def requests_total(m):
    return sum(v for k, v in m.items() if k.startswith("tir_requests_total"))


def settled_metrics(srv, want=None, seconds=10):
    """(m, polls): a /metrics of srv once every request before it is
    counted, and how many /metrics this asked before it.  The server counts
    a request when its answer has gone, which may be after the client read
    it; m is taken once it is one more than the /metrics before it (that one
    alone came between) and, with want, once want(m, polls) holds; the last
    one asked after `seconds` if neither comes."""
    prev, polls = metrics(srv), 1
    deadline = time.monotonic() + seconds
    while True:
        m = metrics(srv)
        if (requests_total(m) == requests_total(prev) + 1 and (want is None or want(m, polls))) or \
                time.monotonic() > deadline:
            return m, polls
        prev, polls = m, polls + 1
        time.sleep(0.02)


def test_load(clients=64, batches=50):
    # a small blob cache: the clients' 3200 x 2 blobs pass through it, and
    # what is evicted must be given back
    srv = Server("--max-sessions", "100", "--blob-cache", "4M")
    try:
        # a baseline once the engine, BLAS and the server's threads are up
        sid = new_session(srv)
        for i in range(20):
            a = np.random.default_rng(i).standard_normal((32, 32), dtype=np.float32)
            b = np.random.default_rng(i + 99).standard_normal(32, dtype=np.float32)
            ha, _ = put_blob(srv, a)
            hb, _ = put_blob(srv, b)
            run(srv, sid, LOAD_TEXT, {"t0": {"blob": ha}, "t1": {"blob": hb}})
        request(srv, "DELETE", f"/v1/sessions/{sid}")
        srv.wait_trim()  # the idle trim before the baseline
        base = srv.rss_kib()
        # the server counts a request once its answer has gone (libmicrohttpd's
        # completion callback), which may come after the client has read it:
        # the baseline is a /metrics that counts every request before it, as
        # the next one shows (one more: itself, and nothing else)
        m0, _ = settled_metrics(srv)

        lock = threading.Lock()
        stats = {"requests": 0, "batches": 0, "wrong": [], "lost": [], "evicted": 0}

        def client(k, n=32, batches=batches):
            rng = np.random.default_rng(1000 + k)
            text = load_text(n)
            # each client from an address of its own, as clients are (one
            # address may hold --max-connections-per-address, 32)
            c = srv.conn(timeout=60, source=f"127.0.1.{k % 250 + 1}")
            nreq = 0
            try:
                sid = new_session(srv, conn=c)
                nreq += 1
                if not sid:
                    raise RuntimeError("no session")
                for i in range(batches):
                    a = rng.standard_normal((n, n), dtype=np.float32) * (0.2 if n == 32 else 0.05)
                    b = rng.standard_normal(n, dtype=np.float32)
                    fa, fb = frame(a), frame(b)
                    (ha, ba), (hb, bb) = blob(fa), blob(fb)
                    inputs = {"t0": {"blob": ha}, "t1": {"blob": hb}}
                    # as a client does: ask; send what is missing; ask again,
                    # up to four times in all (with this small a cache, other
                    # clients' blobs may evict these between the PUT and the run)
                    r = run(srv, sid, text, inputs, conn=c, send_text=False)
                    nreq += 1
                    for attempt in range(3):
                        if r.status != 409:
                            break
                        e = r.err()
                        for h in e.get("blobs", []):
                            pr = request(srv, "PUT", "/v1/blobs/" + h, ba if h == ha else bb, conn=c)
                            nreq += 1
                            if pr.status not in (200, 201):
                                raise RuntimeError(f"PUT {pr.status}")
                        r = run(srv, sid, text, inputs, conn=c, send_text=e.get("graph", False))
                        nreq += 1
                        if attempt:
                            with lock:
                                stats["evicted"] += 1
                    if r.status != 200:
                        raise RuntimeError(f"run {describe(r)}")
                    _, vals = results(r.body)
                    want = np.tanh(a.astype(np.float64) @ a + b).sum(axis=1)
                    if len(vals) != 2 or not np.allclose(vals[0], want, rtol=1e-4, atol=1e-3) or \
                            not np.array_equal(vals[1], b):
                        with lock:
                            stats["wrong"].append((k, i))
                    with lock:
                        stats["batches"] += 1
                request(srv, "DELETE", f"/v1/sessions/{sid}", conn=c)
                nreq += 1
            except Exception as e:  # a request lost, refused or answered wrongly
                with lock:
                    stats["lost"].append(f"client {k}: {e}")
            finally:
                c.close()
                with lock:
                    stats["requests"] += nreq

        probe = {"worst": 0.0, "n": 0, "bad": 0}
        finished = threading.Event()

        def prober():  # an operator's health check while the clients run
            while not finished.is_set():
                t1 = time.monotonic()
                probe["bad"] += not healthy(srv)
                probe["worst"] = max(probe["worst"], time.monotonic() - t1)
                probe["n"] += 1
                time.sleep(0.05)

        t0 = time.monotonic()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
        pt = threading.Thread(target=prober)
        pt.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1.0, DEADLINE - time.monotonic()))
        secs = time.monotonic() - t0
        finished.set()
        pt.join(10)
        alive = sum(t.is_alive() for t in threads)
        # (counted once the last answers have gone: see m0; the /metrics asked
        # since m0, m0's own and those before m, are not the clients')
        m, polls = settled_metrics(srv, lambda m, polls: requests_total(m) - requests_total(m0) - 1 - polls -
                                   probe["n"] == stats["requests"])
        served = requests_total(m) - requests_total(m0) - 1 - polls - probe["n"]
        check(f"load: {clients} clients x {batches} batches, all answered within 60 s",
              not alive and not stats["lost"] and stats["batches"] == clients * batches and secs < 60,
              f"{stats['batches']} batches in {secs:.1f}s; {alive} stuck; lost: {stats['lost'][:3]}; "
              f"server: {[ln for ln in srv.lines if not re.match('(GET|POST|PUT|DELETE) ', ln)][-5:]}")
        check("load: every result right (NumPy)", not stats["wrong"], str(stats["wrong"][:5]))
        print(f"# load: /healthz during the load: {probe['n']} checks, worst {probe['worst'] * 1e3:.1f} ms")
        check("load: /healthz answered meanwhile, each within 1 s", probe["n"] > 0 and not probe["bad"] and
              probe["worst"] < 1.0, str(probe))
        check("load: the server counted every request", served == stats["requests"] and
              m.get("tir_requests_aborted_total", 0) == m0.get("tir_requests_aborted_total", 0),
              f"client {stats['requests']}, server {served}")
        print(f"# load: {stats['requests']} requests, {stats['batches']} batches in {secs:.2f} s: "
              f"{stats['requests'] / secs:.0f} requests/s, {stats['batches'] / secs:.0f} batches/s")
        # bigger tensors through the small cache: 256 KiB inputs, 1 MiB of
        # intermediates per batch
        before = dict(stats)
        stats["lost"], stats["wrong"] = [], []
        big = [threading.Thread(target=client, args=(100 + k, 256, 6)) for k in range(16)]
        for t in big:
            t.start()
        for t in big:
            t.join(max(1.0, DEADLINE - time.monotonic()))
        check("load: 16 clients x 6 batches of f32[256, 256], all answered and right",
              not any(t.is_alive() for t in big) and not stats["lost"] and not stats["wrong"] and
              stats["batches"] == before["batches"] + 16 * 6,
              f"lost {stats['lost'][:2]}, wrong {stats['wrong'][:2]}")
        print(f"# load: {stats['evicted']} runs needed a third or fourth try (their blobs evicted between "
              "the PUT and the run)")
        # memory: back near the baseline once idle (the blobs the cache
        # holds are the clients' data, counted apart)
        peak = srv.rss_kib()
        cache_kib = metrics(srv).get("tir_blob_cache_bytes", 0) / 1024
        bound = base + cache_kib * 1.25 + 12 * 1024
        bound += RSS_SLACK_KIB
        # given back by the idle trim, once the server has been idle 500 ms
        eventually(lambda: srv.rss_kib() <= bound)
        after = srv.rss_kib()
        print(f"# load: VmRSS baseline {base} KiB, right after {peak} KiB, idle {after} KiB; "
              f"blob cache {cache_kib:.0f} KiB; bound {bound:.0f} KiB")
        check("load: VmRSS back within baseline + 1.25 x blob cache (4 MiB) + 12 MiB" +
              (" + 256 MiB of ASan quarantine" if ASAN else ""), after <= bound,
              f"baseline {base} KiB, after {after} KiB, cache {cache_kib:.0f} KiB")
        check("load: no session left", m.get("tir_sessions") == 0, str(m.get("tir_sessions")))
        check("load: blobs were evicted", m.get("tir_blob_cache_evictions_total", 0) > 1000,
              str(m.get("tir_blob_cache_evictions_total")))
    finally:
        st = srv.stop()
    check("load: SIGTERM afterwards: exit 0", st == 0, f"exit {st}")


def bundle_item(f, name=None, length=None, magic=b"TIRB"):
    """One item of a POST /v1/blobs body: its head, then frame f's PUT body."""
    h, body = blob(f)
    n = len(body) if length is None else length
    return magic + struct.pack("<IQ", 0, n) + bytes.fromhex(name or h) + body


def test_bundle():
    """POST /v1/blobs: several blobs in one body, each checked and stored
    as a PUT's; nothing the body says is trusted (a lying length, a body
    ending inside an item, a head that is none, a bad hash, too many
    blobs), the items before a fault stay stored, and the limits are a
    PUT's (--max-body, --max-inflight, --blob-cache, a tenant's
    inflight=); the server serves on after each."""
    srv = Server("--max-body", "4M", "--max-inflight", "8M", "--blob-cache", "3M")
    try:
        arrs = [np.arange(i + 1, dtype=np.float32) * (i + 1) for i in range(3)]
        fs = [frame(a) for a in arrs]
        names = [blob(f)[0] for f in fs]
        body = b"".join(bundle_item(f) for f in fs)
        r = request(srv, "POST", "/v1/blobs", body)
        j = r.json() or {}
        check("bundle: 200, each blob stored (201)", r.status == 200 and
              [b.get("status") for b in j.get("blobs", [])] == [201, 201, 201] and
              [b.get("blob") for b in j.get("blobs", [])] == names, describe(r))
        r = request(srv, "POST", "/v1/blobs", body)
        check("bundle: sent again, each held (200)", r.status == 200 and
              [b.get("status") for b in (r.json() or {}).get("blobs", [])] == [200, 200, 200], describe(r))
        sid = new_session(srv)
        text = "input t0: f32[3]\nt1: f32[3] = exp(t0)\nprint t1\n"
        r = run(srv, sid, text, {"t0": {"blob": names[2]}})
        check("bundle: a run reads a blob sent in one", r.status == 200 and
              np.allclose(results(r.body)[1][0], np.exp(arrs[2])), describe(r))

        def refused(what, b, status, code, want=""):
            r = request(srv, "POST", "/v1/blobs", b)
            check("bundle: " + what, error_is(r, status, code) and want in r.err().get("message", ""), describe(r))
            return r
        # a length past the body's end, smaller than the item, zero
        g = [frame(np.full(5, 7 + i, dtype=np.float32)) for i in range(4)]
        refused("a length past the body's end is 400", bundle_item(g[0], length=1 << 40), 400, "bad_request",
                "the body has")
        item = bundle_item(g[0])
        short = bundle_item(g[0], length=len(blob(g[0])[1]) - 8)[:-8]
        refused("a length short of the item is 400", short + item, 400, "bad_request")
        refused("an empty item is 400", bundle_item(g[0], length=0)[:48], 400, "bad_request")
        # the body ends inside an item's head, or inside its body
        refused("a body ending inside a head is 400", item + item[:20], 400, "bad_request", "ended inside")
        refused("a head that is none is 400", item + bundle_item(g[1], magic=b"XXXX"), 400, "bad_request",
                "TIRB")
        refused("an empty body is 400", b"", 400, "bad_request")
        # a bad hash in the second item: the first stays stored, the third is never read
        bad = bytearray(bundle_item(g[2]))
        bad[-12] ^= 1
        r = refused("a bad hash is 400 bad_hash, naming the blob", bundle_item(g[1]) + bytes(bad) + bundle_item(g[3]),
                    400, "bad_hash", "blob 1 (")
        stored = [b.get("blob") for b in r.err().get("stored", [])]
        check("bundle: what came before a fault is stored", stored == [blob(g[1])[0]], describe(r))
        r = run(srv, sid, "input t0: f32[5]\nprint t0\n", {"t0": {"blob": blob(g[3])[0]}}, send_text=True)
        check("bundle: a blob after a fault was not stored (409)", error_is(r, 409, "missing"), describe(r))
        # too many blobs: 4097 items (the same tiny blob: held after the first)
        tiny = bundle_item(frame(np.float32(1)))
        refused("more than 4096 blobs is 413", tiny * 4097, 413, "too_large", "4096")
        r = request(srv, "POST", "/v1/blobs", tiny * 4096)
        check("bundle: 4096 blobs are taken", r.status == 200 and len((r.json() or {}).get("blobs", [])) == 4096,
              describe(r))
        # the limits: a body over --max-body, one item over --blob-cache
        big = frame(np.zeros(1 << 20, dtype=np.float32))  # 4 MiB + its head
        out = raw(srv, b"POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (2 * len(big) + 96))
        check("bundle: a body over --max-body is 413, before it is read",
              out.startswith(b"HTTP/1.1 413") and b"--max-body" in out, out[:300].decode("latin-1"))
        mid = frame(np.zeros(800 << 10, dtype=np.float32))  # 3.1 MiB: over the 3 MiB cache
        refused("a blob over --blob-cache is 413", bundle_item(mid), 413, "too_large", "--blob-cache")
        # without a Content-Length (chunked): 411
        c = srv.conn()
        c.putrequest("POST", "/v1/blobs")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        c.send(b"4\r\nTIRB\r\n0\r\n\r\n")
        r = Reply(c.getresponse())
        c.close()
        check("bundle: a chunked body is 411", error_is(r, 411, "length_required"), describe(r))
        # a client that goes away mid-body: the server goes on, its budget back
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        body = bundle_item(frame(np.ones(300 << 10, dtype=np.float32)))
        s.sendall(b"POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:1 << 19])
        check("bundle: a body under way holds its bytes of --max-inflight",
              srv.wait_metric("tir_inflight_body_bytes", len(body)), str(metrics(srv).get("tir_inflight_body_bytes")))
        s.close()
        check("bundle: a body cut short gives its bytes back",
              srv.wait_metric("tir_inflight_body_bytes", 0), str(metrics(srv).get("tir_inflight_body_bytes")))
        check("bundle: the server serves on", healthy(srv))
        check("bundle: GET /v1/blobs is 405", error_is(request(srv, "GET", "/v1/blobs"), 405, "method"))
    finally:
        srv.stop()
    # a tenant's inflight= holds for the whole body
    d = tempfile.mkdtemp()
    try:
        tf = os.path.join(d, "tokens")
        with open(tf, "w") as fh:
            fh.write("a ta inflight=1M\nb tb\n")
        os.chmod(tf, 0o600)
        srv = Server("--tokens", tf)
        try:
            body = bundle_item(frame(np.zeros(200 << 10, dtype=np.float32))) * 2  # 1.6 MiB
            ra = raw(srv, b"POST /v1/blobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ta\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
            rb = request(srv, "POST", "/v1/blobs", body, {"Authorization": "Bearer tb"})
            check("bundle: a tenant's inflight= bounds the whole body (413)", ra.startswith(b"HTTP/1.1 413") and
                  b"tenant a" in ra and rb.status == 200, ra[:300].decode("latin-1") + " / " + describe(rb))
            r = request(srv, "POST", "/v1/blobs", body)
            check("bundle: needs a token", error_is(r, 401, "unauthorized"), describe(r))
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d)


def main():
    if not os.access(TIR, os.X_OK):
        check("tir binary", False, TIR + " is missing")
    else:
        for t in (test_cli, test_endpoints, test_doc_examples, test_errors, test_token, test_tenants, test_existence, test_ttl_and_lru,
                  test_idle_trim, test_big_blobs, test_inflight, test_json_values, test_per_address, test_burst_heads, test_slow_heads, test_header_deadline,
                  test_head_errors, test_session_lease, test_long_batch,
                  test_client_gone, test_fair_queue, test_time_limit, test_memory_plan, test_kept_values, test_graph_cache, test_bundle):
            only = os.environ.get("SERVE_ONLY")  # a comma list of test names: those alone
            if only and t.__name__ not in only.split(","):
                continue
            try:
                t()
            except Exception as e:  # a crash of one group is one failure, the rest go on
                check(t.__name__, False, f"{type(e).__name__}: {e}")
        if not QUICK and not os.environ.get("SERVE_ONLY"):
            try:
                test_load()
            except Exception as e:
                check("test_load", False, f"{type(e).__name__}: {e}")
    return tirnet.finish()


if __name__ == "__main__":
    sys.exit(main())
