#!/usr/bin/python3
"""tests/net/wait_for.py — wait for a state a test can see, never for a
time long enough: the tests that need a batch running, a session expired
or a line logged before they act poll for it here, every 20 ms, for at most
SECONDS (default 60: far longer than any of these takes on a loaded
machine, and still a bound when something is broken).

  wait_for.py metric HOST:PORT NAME OP VALUE [SECONDS]
      until the server's GET /metrics has NAME (a whole sample name, e.g.
      tir_batches_running) OP VALUE, OP one of == >=
  wait_for.py log FILE REGEX [COUNT [SECONDS]]
      until COUNT (default 1) lines of FILE match REGEX (Python's re.search;
      the file read as UTF-8)

Exit status 0 once seen; 1, with what was last seen on stderr, if not
within SECONDS; 2 for a bad command line.  Standard library only
(Debian's /usr/bin/python3); tests/net/*.py import the functions."""

import http.client
import os
import re
import sys
import time

POLL = 0.02


def metrics(hostport, timeout=10, token=None):
    """{sample name: value} of a server's /metrics; {} when it does not answer.
    token: the Bearer token to ask with (default TIR_TOKEN's; a server with
    tokens shows its figures to a token alone, all of them to an admin's)."""
    host, _, port = hostport.rpartition(":")
    token = token or os.environ.get("TIR_TOKEN")
    try:
        c = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=timeout)
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token} if token else {})
        body = c.getresponse().read().decode("utf-8", "replace")
        c.close()
    except (OSError, http.client.HTTPException):
        return {}
    m = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                m[k] = float(v)
            except ValueError:
                pass
    return m


def until(probe, seconds=60):
    """probe() -> (done, what it saw), polled until done or `seconds` pass;
    (done, what was last seen)."""
    end = time.monotonic() + seconds
    while True:
        done, seen = probe()
        if done or time.monotonic() >= end:
            return done, seen
        time.sleep(POLL)


def wait_metric(hostport, name, op, value, seconds=60):
    def probe():
        v = metrics(hostport).get(name)
        return v is not None and (v == value if op == "==" else v >= value), v
    return until(probe, seconds)


def matching(path, regex):
    """The lines of the file at path that match regex."""
    rx = re.compile(regex)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [ln for ln in f.read().splitlines() if rx.search(ln)]
    except OSError:
        return []


def wait_log(path, regex, count=1, seconds=60):
    def probe():
        n = len(matching(path, regex))
        return n >= count, n
    return until(probe, seconds)


def main(argv):
    try:
        if argv[1] == "metric" and len(argv) in (6, 7) and argv[4] in ("==", ">="):
            secs = float(argv[6]) if len(argv) == 7 else 60
            ok, seen = wait_metric(argv[2], argv[3], argv[4], float(argv[5]), secs)
            what = f"{argv[3]} {argv[4]} {argv[5]} (last seen: {seen})"
        elif argv[1] == "log" and len(argv) in (4, 5, 6):
            count = int(argv[4]) if len(argv) > 4 else 1
            secs = float(argv[5]) if len(argv) > 5 else 60
            ok, seen = wait_log(argv[2], argv[3], count, secs)
            what = f"{count} line(s) /{argv[3]}/ in {argv[2]} (last seen: {seen})"
        else:
            raise ValueError
    except (IndexError, ValueError):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if not ok:
        print(f"not within {secs:g} s: {what}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
