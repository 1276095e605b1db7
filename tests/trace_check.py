#!/usr/bin/env python3
"""tests/trace_check.py FILE.json KERNELS — check what `tir run --trace`
wrote against Chrome's trace event format (the JSON object form: a
"traceEvents" list; complete events "ph": "X" with "name", "ts" and "dur"
in microseconds, "pid" and "tid"; metadata "ph": "M" naming threads) and
against the run: KERNELS kernel events (cat "kernel") on thread 0, one
after another, after the parse and the plan; pool spans (cat "pool") each
inside one kernel, their tasks adding up to what the kernels offered.
Exit 0, or 1 with what is wrong.  Used by tests/suites/trace.sh."""
import json
import sys

EPS = 50.0  # us: the clocks are read a few calls apart


def fail(msg):
    print("trace_check: " + msg)
    sys.exit(1)


def main():
    path, want = sys.argv[1], int(sys.argv[2])
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
    done = sum(s["args"]["tasks"] for s in spans)
    if not pooled <= done <= offered:
        fail("the spans ran %d tasks; the kernels offered %d (%d in runs of more than one)" % (done, offered, pooled))


main()
