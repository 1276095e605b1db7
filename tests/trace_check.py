#!/usr/bin/env python3
"""tests/trace_check.py FILE.json KERNELS — check what `tir run --trace`
wrote against Chrome's trace event format (the JSON object form: a
"traceEvents" list; complete events "ph": "X" with "name", "ts" and "dur"
in microseconds, "pid" and "tid"; metadata "ph": "M" naming threads) and
against the run: KERNELS kernel events (cat "kernel") on thread 0, one
after another, after the parse and the plan; pool spans (cat "pool") each
inside one kernel, their tasks adding up to what the kernels offered.

tests/trace_check.py FILE.json --remote KERNELS TRIPS UP BLOBS BLOB_BYTES
checks the trace of a `tir run --remote` instead: thread 0 the parse,
then the batch; thread 1 TRIPS requests (cat "request", each with its
status and bytes), one after another after the batch, their bytes up
adding up to UP (the timing line's figure, as rounded there); BLOBS
uploads (cat "upload": a blob name of 64 hex digits, bytes, MiB/s), each
inside a PUT of status 201 or 200 or a POST /v1/blobs of status 200 (several
blobs in one request), their bytes adding up to BLOB_BYTES;
one fetch of the results inside the last request, a 200; on thread 2 the
server's plan (its explain text, KERNELS kernels) and run, inside that
request too.
Exit 0, or 1 with what is wrong.  Used by tests/suites/trace.sh."""
import json
import sys

EPS = 50.0  # us: the clocks are read a few calls apart


def fail(msg):
    print("trace_check: " + msg)
    sys.exit(1)


def main():
    path = sys.argv[1]
    want = None if sys.argv[2] == "--remote" else int(sys.argv[2])
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        fail("not JSON: %s" % e)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    if doc.get("displayTimeUnit") not in (None, "ms", "ns"):
        fail("displayTimeUnit %r" % doc.get("displayTimeUnit"))
    xs, names = [], {}
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or e.get("ph") not in ("X", "M"):
            fail("event %r: a name and ph X or M wanted" % (e,))
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail("event %r: integer pid and tid wanted" % (e,))
        if e["ph"] == "M":
            if e["name"] != "thread_name" or not isinstance(e.get("args", {}).get("name"), str):
                fail("metadata %r: thread_name with args.name wanted" % (e,))
            names[e["tid"]] = e["args"]["name"]
            continue
        for f in ("ts", "dur"):
            if not isinstance(e.get(f), (int, float)) or e[f] < 0:
                fail("event %r: %s must be a number >= 0" % (e, f))
        xs.append(e)
    if 0 not in names:
        fail("thread 0 has no name")
    if sys.argv[2] == "--remote":
        remote(xs, names, *sys.argv[3:8])
        return
    main_t = [e for e in xs if e["tid"] == 0]
    if [e["name"] for e in main_t[:2]] != ["parse", "plan"]:
        fail("thread 0 starts %r, not parse, plan" % [e["name"] for e in main_t[:2]])
    kernels = [e for e in xs if e.get("cat") == "kernel"]
    if len(kernels) != want or any(e["tid"] != 0 for e in kernels):
        fail("%d kernel events (on threads %r), the run reports %d kernels" %
             (len(kernels), sorted({e["tid"] for e in kernels}), want))
    end = 0.0
    for e in main_t:
        if e["ts"] + EPS < end:
            fail("%s at %.1f us starts before the event before it ends (%.1f)" % (e["name"], e["ts"], end))
        end = e["ts"] + e["dur"]
    spans = [e for e in xs if e.get("cat") == "pool"]
    for s in spans:
        if s["tid"] not in names or s["tid"] == 0:
            fail("pool span on thread %d, which has no name" % s["tid"])
        if not any(k["ts"] - EPS <= s["ts"] and s["ts"] + s["dur"] <= k["ts"] + k["dur"] + EPS for k in kernels):
            fail("pool span at %.1f us for %.1f us is inside no kernel" % (s["ts"], s["dur"]))
    offered = sum(k["args"]["tasks"] for k in kernels)
    pooled = sum(k["args"]["tasks"] for k in kernels if k["args"]["tasks"] > 1)
    # (packing spans are the operands' packing before a product: not
    # counted in a kernel's tasks, --profile's nor the trace's)
    done = sum(s["args"]["tasks"] for s in spans if s["name"] == "tasks")
    if not pooled <= done <= offered:
        fail("the spans ran %d tasks; the kernels offered %d (%d in runs of more than one)" % (done, offered, pooled))


def human(s):
    """ "549.5 KiB" as the timing line rounds it: (low, high) in bytes """
    v, unit = s.split()
    scale = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
    step = 1 if unit == "B" else (0.05 if unit != "GiB" else 0.005)
    return (float(v) - step) * scale, (float(v) + step) * scale


def inside(a, b):
    return b["ts"] - EPS <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"] + EPS


def remote(xs, names, kernels, trips, up, blobs, blob_bytes):
    kernels, trips, blobs, blob_bytes = int(kernels), int(trips), int(blobs), int(blob_bytes)
    for t in (1, 2):
        if t not in names:
            fail("thread %d has no name" % t)
    main_t = [e for e in xs if e["tid"] == 0]
    if [e["name"] for e in main_t] != ["parse", "batch"] or main_t[1]["ts"] + EPS < main_t[0]["dur"]:
        fail("thread 0 holds %r, not the parse then the batch" % [e["name"] for e in main_t])
    batch = main_t[1]
    if not isinstance(batch.get("args", {}).get("blobs"), int):
        fail("the batch does not say how many blobs it names")
    reqs = [e for e in xs if e.get("cat") == "request"]
    if len(reqs) != trips or any(e["tid"] != 1 for e in reqs):
        fail("%d request events (threads %r); the run made %d round trips" %
             (len(reqs), sorted({e["tid"] for e in reqs}), trips))
    end = batch["ts"] + batch["dur"]
    for e in reqs:
        a = e.get("args", {})
        if not all(isinstance(a.get(k), int) and a[k] >= 0 for k in ("status", "bytes_up", "bytes_down")):
            fail("request %r: status, bytes_up, bytes_down wanted" % (e,))
        if e["ts"] + EPS < end:
            fail("%s at %.1f us starts before what came before it ends (%.1f)" % (e["name"], e["ts"], end))
        end = e["ts"] + e["dur"]
    lo, hi = human(up)
    sent = sum(e["args"]["bytes_up"] for e in reqs)
    if not lo <= sent <= hi:
        fail("the requests sent %d bytes; the timing line says %s" % (sent, up))
    ups = [e for e in xs if e.get("cat") == "upload"]
    if len(ups) != blobs:
        fail("%d upload events; the run sent %d blobs" % (len(ups), blobs))
    for u in ups:
        a = u.get("args", {})
        b = a.get("blob", "")
        if len(b) != 64 or any(c not in "0123456789abcdef" for c in b) or not a.get("bytes", 0) > 0 \
                or not isinstance(a.get("mib_per_s"), (int, float)):
            fail("upload %r: a blob's name, bytes and mib_per_s wanted" % (u,))
        if not any((r["name"].startswith("PUT /v1/blobs/" + b[:8]) and r["args"]["status"] in (200, 201) or
                    r["name"].startswith("POST /v1/blobs (") and r["args"]["status"] == 200)
                   and inside(u, r) for r in reqs):
            fail("upload of %s is inside no PUT of it, nor POST /v1/blobs, that succeeded" % b[:8])
    if sum(u["args"]["bytes"] for u in ups) != blob_bytes:
        fail("the uploads carried %d bytes; the run sent %d bytes of blobs" %
             (sum(u["args"]["bytes"] for u in ups), blob_bytes))
    last = reqs[-1]
    if last["args"]["status"] != 200 or not last["name"].endswith("/run"):
        fail("the last request is %s %d, not a run answered 200" % (last["name"], last["args"]["status"]))
    fetch = [e for e in xs if e.get("cat") == "fetch"]
    if len(fetch) != 1 or not inside(fetch[0], last) or fetch[0]["args"].get("bytes", 0) <= 0:
        fail("%d fetch events, wanted one inside the last request with its bytes" % len(fetch))
    server = [e for e in xs if e["tid"] == 2]
    plan = [e for e in server if e["name"].startswith("plan")]
    run = [e for e in server if e["name"].startswith("run")]
    if len(plan) != 1 or len(run) != 1:
        fail("thread 2 holds %r, not one plan and one run" % [e["name"] for e in server])
    pa = plan[0].get("args", {})
    if pa.get("kernels") != kernels or sum(l.startswith("kernel ") for l in pa.get("explain", "").splitlines()) != kernels:
        fail("the server's plan says %r kernels, the run reports %d" % (pa.get("kernels"), kernels))
    for e in plan + run:
        if not inside(e, last):
            fail("the server's %s (%.1f us for %.1f) is outside the run request" % (e["name"], e["ts"], e["dur"]))
    if plan[0]["ts"] + plan[0]["dur"] > run[0]["ts"] + EPS:
        fail("the server's plan ends after its run begins")


main()
