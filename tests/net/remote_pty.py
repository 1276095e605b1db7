#!/usr/bin/python3
"""tests/net/remote_pty.py TIR HOST:PORT — the REPL at a terminal with
.remote (tests/suites/remote.sh runs it against its server): .remote
connects and says so, a computation runs there, Ctrl-C stops a long remote
computation promptly with the session intact and the remote still usable,
.remote off computes here again.  Drives the pseudo-terminal with
tests/repl_pty.py's Session; Ctrl-C goes once the server says the batch
runs (its /metrics, tests/net/wait_for.py).  One line per failure; the
last line is "N passed, M failed"."""

import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import repl_pty  # noqa: E402  (tests/repl_pty.py)
from repl_pty import Session, check, stop_long_computation  # noqa: E402
from wait_for import wait_metric  # noqa: E402


def main():
    tir = os.path.abspath(sys.argv[1])
    addr = sys.argv[2]
    with tempfile.TemporaryDirectory() as home:
        s = Session(tir, home)
        try:
            check("prompt", s.expect(r"tir> ") is not None, repr(s.text()[-200:]))
            s.send(b".remote " + addr.encode() + b"\r")
            check(".remote connects",
                  s.expect(r"remote: " + addr.replace(".", r"\.") + r" \(computations run there\)\s*\ntir> ")
                  is not None, repr(s.text(s.mark)[-300:]))
            s.send(b"a = [1, 2]\r")
            s.expect(r"\ntir> ")
            s.send(b"a * 10\r")
            check("a remote computation", s.expect(r"\[10, 20\]\s*\ntir> ") is not None,
                  repr(s.text(s.mark)[-300:]))

            # Ctrl-C stops a long remote computation: the wait for the reply
            # (the client's own work: 3 s holds on a loaded CPU), and (the
            # client's connection closed) the batch on the server, at the
            # next kernel
            def batch_runs(_):
                return wait_metric(addr, "tir_batches_running", "==", 1)[0]
            stop_long_computation(s, "Ctrl-C stops a remote computation", 3, batch_runs)
            t0 = time.time()
            s.send(b"a * 100\r")
            m = s.expect(r"\[100, 200\]\s*\ntir> ", timeout=30)
            took = time.time() - t0
            # the batch stopped at the end of its kernel (0.1 s here, more
            # on a loaded CPU), not after the minutes the rest of the chain
            # takes on the fastest machine
            check("the remote still answers after Ctrl-C", m is not None, repr(s.text(s.mark)[-300:]))
            check("... at once (the stopped batch does not run on)", took < 5, f"{took:.1f} s")
            s.send(b".remote off\r")
            check(".remote off", s.expect(r"remote: off \(the session computes here\)\s*\ntir> ") is not None,
                  repr(s.text(s.mark)[-300:]))
            s.send(b"a + 1\r")
            check("computing here again", s.expect(r"\[2, 3\]\s*\ntir> ") is not None,
                  repr(s.text(s.mark)[-300:]))
            s.send(b".quit\r")
            check("quits", s.wait_exit() and os.WIFEXITED(s.status) and os.WEXITSTATUS(s.status) == 0,
                  f"status {s.status}")
        finally:
            s.kill()
    print(f"{repl_pty.passed} passed, {repl_pty.failed} failed")
    return 1 if repl_pty.failed else 0


if __name__ == "__main__":
    sys.exit(main())
