#!/usr/bin/python3
"""tests/repl_pty.py TIR — drive the interactive `tir repl` through a
pseudo-terminal, as a person at a keyboard would: the prompt, the
continuation prompt, history recall (Up arrow, in a session and from the
history file of the last one), tab completion of an op name, a dot-command
and a file name (then .load), a multi-line fn and a loop calling it (with
its name completed), an error with its caret followed by a
statement that works, Ctrl-C abandoning a line, Ctrl-C stopping a long
computation with the session intact, a stop and continue, Ctrl-D leaving,
and the terminal put back when a signal ends the process.

Keys are typed once the REPL reads them (libedit has put the terminal in
raw mode), Ctrl-C once the computation is seen under way: states the test
sees, never a pause long enough, so that it passes on a loaded CPU as on
a fast one.

One line per failure; the last line is "N passed, M failed".  Uses only the
standard library (Debian's /usr/bin/python3)."""

import os
import pty
import re
import select
import signal
import sys
import tempfile
import termios
import time

ESC = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r|\x07|\x08")

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"repl_pty {name}: FAILED{': ' + detail if detail else ''}")
        sys.stdout.flush()


class Session:
    """A `tir repl` on the child side of a pseudo-terminal."""

    def __init__(self, tir, home):
        env = dict(os.environ)
        env.update(TERM="xterm", HOME=home, TIR_HISTORY=os.path.join(home, "hist"),
                   LC_ALL="C.UTF-8", COLUMNS="200", LINES="50")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(home)
                os.execve(tir, [tir, "repl"], env)
            finally:
                os._exit(127)
        self.home = home
        self.raw = b""
        self.mark = 0       # expect() looks at output after this point
        self.status = None

    def text(self, since=0):
        return ESC.sub(b"", self.raw[since:]).decode("utf-8", "replace")

    def pump(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            return False
        self.raw += data
        return True

    def expect(self, pattern, timeout=15):
        """Wait until the cleaned output since the mark matches pattern;
        move the mark past the match.  Returns the match or None."""
        end = time.time() + timeout
        rx = re.compile(pattern, re.S)
        while True:
            m = rx.search(self.text(self.mark))
            if m:
                # the mark moves in raw bytes: find the clean prefix's end
                clean_end = m.end()
                i = self.mark
                while len(ESC.sub(b"", self.raw[self.mark:i]).decode("utf-8", "replace")) < clean_end:
                    i += 1
                self.mark = i
                return m
            left = end - time.time()
            if left <= 0 or not self.pump(min(left, 0.1)):
                m = rx.search(self.text(self.mark))
                if m:
                    self.mark = len(self.raw)
                return m

    def raw_mode(self):
        """Whether the terminal is in raw mode: libedit reads keys."""
        return not (termios.tcgetattr(self.fd)[3] & termios.ICANON)

    def wait_raw(self, timeout=60):
        """Until the terminal is in raw mode (output read meanwhile); False
        if it is not within timeout s or the REPL is gone."""
        end = time.time() + timeout
        while not self.raw_mode():
            if time.time() >= end or not self.pump(0.01):
                return False
        return True

    def send(self, data):
        # libedit prints the prompt before it puts the terminal in raw
        # mode; a key typed in between is the line discipline's (a Ctrl-D
        # there is a cooked end-of-file and is lost), so type once the
        # terminal is raw: as a person would, after the prompt
        self.wait_raw()
        os.write(self.fd, data)

    def cpu_seconds(self):
        """The CPU time the REPL has spent, all its threads."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # from field 3 (state) on
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def state(self):
        """The process's state letter (R, S, T stopped, ...), or None once reaped."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return None

    def settle(self, t=0.3):
        end = time.time() + t
        while time.time() < end and self.pump(0.05):
            pass

    def wait_exit(self, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            self.pump(0.05)
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = st
                return True
        return False

    def kill(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        os.close(self.fd)


def computing_here(s, cpu=2.0, timeout=60):
    """Whether the REPL is seen computing within timeout s.  It shows
    nothing while it computes; what can be seen from outside is the CPU it
    spends.  Reading `sum(r)` and planning its 20,000 nodes take some 0.05 s
    of CPU here (a machine 40 times slower, or AddressSanitizer's, stays
    under `cpu`), the kernels spend without end: once it has spent `cpu` s
    more than when the line was read, the kernels run."""
    end = time.time() + timeout
    start = s.cpu_seconds()
    while s.cpu_seconds() < start + cpu:
        if time.time() >= end or not s.pump(0.02):
            return False
    return True


def stop_long_computation(s, what, bound, running=computing_here):
    """Ctrl-C while `sum(r)` runs, r a chain of 20,000 2048x2048 matmuls
    (.load'ed, 100 a line: an expression nests at most 200 deep), far more
    than any machine computes within the test (minutes on the fastest),
    each kernel short (0.1 s here); big is scaled by 1/sqrt(2048), so the
    values neither overflow nor sink into slow denormals.  Once running(s)
    says the computation is under way: the prompt comes back saying
    'interrupted', with no result, within `bound` seconds."""
    with open(os.path.join(s.home, "chain.tir"), "w") as f:
        f.write("r = big" + " @ big" * 100 + "\n")
        f.write(("r = r" + " @ big" * 100 + "\n") * 199)
    s.send(b"big = randn([2048, 2048]) * 0.0221\r")
    s.expect(r"\ntir> ")
    s.send(b".load chain.tir\r")
    s.expect(r"\ntir> ")
    s.send(b"sum(r)\r")
    s.expect(r"sum\(r\)\s*\n")
    seen = running(s)
    t0 = time.time()
    os.write(s.fd, b"\x03")  # the terminal is cooked while it computes: SIGINT
    m = s.expect(r"interrupted\s*\ntir> ", timeout=30)
    took = time.time() - t0
    check(what, seen and m is not None and "sum(r): f32" not in s.text(),
          ("" if seen else "the computation was not seen running; ") + repr(s.text(s.mark)[-300:]))
    check("the stop is prompt", took < bound, f"{took:.1f} s")


def main():
    tir = os.path.abspath(sys.argv[1])
    home = tempfile.mkdtemp(prefix="tir-pty.")
    s = Session(tir, home)
    try:
        check("prompt", s.expect(r"^tir> ") is not None, repr(s.text()[-200:]))

        s.send(b"a = [1, 2]\r")
        check("binding", s.expect(r"a = \[1, 2\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))

        s.send(b"b = add(a,\r")
        check("continuation prompt", s.expect(r"\n\.\.\.> ") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"  a)\r")
        check("continuation ends", s.expect(r"\ntir> ") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"b\r")
        check("value of a continued statement",
              s.expect(r"b: i64\[2\]\s*\n\[2, 4\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))

        # Up recalls "b"; Enter runs it again
        s.send(b"\x1b[A")
        s.settle()
        s.send(b"\r")
        check("history recall (Up)",
              s.expect(r"b: i64\[2\]\s*\n\[2, 4\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))

        # Tab completes a partial op name (with its parenthesis)
        s.send(b"print matm\t")
        check("tab completes an op", s.expect(r"print matmul\(") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"[[1, 2]], [[3], [4]])\r")
        check("completed line runs", s.expect(r"\[\[11\]\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-300:]))
        # ... and a dtype name
        s.send(b"print cast([1.5, 2.25], bf1\t")
        check("tab completes a dtype", s.expect(r"cast\(\[1\.5, 2\.25\], bf16") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b")\r")
        check("a bf16 value prints", s.expect(r"bf16\[2\]\s*\n\[1\.5, 2\.25\]\s*\ntir> ") is not None,
              repr(s.text(s.mark)[-300:]))

        s.send(b".ti\t")
        check("tab completes a dot-command", s.expect(r"\.timer ") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"\x15")  # Ctrl-U: clear the line
        s.settle(0.2)

        # after .load, Tab completes a file name (a '-' in it included)
        with open(os.path.join(home, "model-1.tir"), "w") as f:
            f.write("m1 = [4, 5]\n")
        s.send(b".load mod\t")
        check("tab completes a file name", s.expect(r"\.load model-1\.tir") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"\r")
        s.expect(r"\ntir> ")
        s.send(b"m1\r")
        check(".load", s.expect(r"m1: i64\[2\]\s*\n\[4, 5\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))

        # an error shows its caret; the next statement still works
        s.send(b"x = foo(a)\r")
        m = s.expect(r"error: unknown op 'foo'[^\n]*\n\s*x = foo\(a\)\s*\n(\s*)\^\s*\ntir> ")
        check("error with caret", m is not None and len(m.group(1).replace("\n", "")) == 8,
              repr(s.text(s.mark)[-300:]))
        s.send(b"a + 1\r")
        check("statement after an error", s.expect(r"\[2, 3\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))

        # a multi-line fn: the continuation prompt until its braces close,
        # then a loop calling it; Tab completes the function's name
        s.send(b"fn twice(v, k) {\r")
        check("fn opens a block", s.expect(r"\n\.\.\.> ") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"  w = v * 2\r")
        check("fn block goes on", s.expect(r"\n\.\.\.> ") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"  return w + k\r")
        s.expect(r"\n\.\.\.> ")
        s.send(b"}\r")
        check("fn block closes", s.expect(r"\}\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"c = a; for i in range(3) { c = twi\t")
        check("tab completes a function", s.expect(r"c = twice\(") is not None, repr(s.text(s.mark)[-200:]))
        s.send(b"c, i) }\r")
        s.expect(r"\ntir> ")
        s.send(b"c\r")
        check("fn and for ran", s.expect(r"c: i64\[2\]\s*\n\[12, 20\]\s*\ntir> ") is not None,
              repr(s.text(s.mark)[-200:]))

        # Ctrl-C at the prompt drops the line being typed
        s.send(b"this is not tir")
        # read (echoed) before the Ctrl-C: as a signal it would overtake
        # (and flush) keys the REPL has not read yet
        s.expect(r"this is not tir")
        s.send(b"\x03")
        check("Ctrl-C abandons the line", s.expect(r"\^C\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))
        before = s.mark
        s.send(b"a\r")
        check("after Ctrl-C at the prompt",
              s.expect(r"a: i64\[2\]\s*\n\[1, 2\]\s*\ntir> ") is not None and "error" not in s.text(before),
              repr(s.text(before)[-300:]))

        # Ctrl-C inside an open bracket drops the whole statement
        s.send(b"c = add(a,\r")
        s.expect(r"\.\.\.> ")
        s.send(b"\x03")
        check("Ctrl-C in a continuation", s.expect(r"\^C\s*\ntir> ") is not None, repr(s.text(s.mark)[-200:]))

        # Ctrl-C stops a long computation: a chain of big matmuls, stopped
        # at the end of a kernel (0.1 s here, some more on a loaded CPU)
        stop_long_computation(s, "Ctrl-C stops a computation", 10)
        s.send(b"a * 10\r")
        check("session intact after Ctrl-C",
              s.expect(r"\[10, 20\]\s*\ntir> ") is not None, repr(s.text(s.mark)[-300:]))
        s.send(b".vars\r")
        check(".vars after Ctrl-C",
              s.expect(r"big\s+f32\[2048, 2048\]\s+computed\s*\n"
                       r"r\s+f32\[2048, 2048\]\s+not computed\s*\ntir> ") is not None,
              repr(s.text(s.mark)[-300:]))

        # stopped and continued (Ctrl-Z, fg), with the terminal given back
        # in cooked mode as a shell may: line editing works again
        s.send(b"xy")
        s.expect(r"xy")  # read (echoed)
        os.kill(s.pid, signal.SIGSTOP)
        end = time.time() + 60
        while s.state() != "T" and time.time() < end:
            s.pump(0.01)
        attr = termios.tcgetattr(s.fd)
        attr[3] |= termios.ICANON | termios.ECHO
        termios.tcsetattr(s.fd, termios.TCSANOW, attr)
        os.kill(s.pid, signal.SIGCONT)
        # typed once the REPL has the terminal in raw mode again
        s.send(b"\x15a)\x01sum(\r")   # Ctrl-U, then Ctrl-A to the line's start
        check("line editing after a stop", s.expect(r"sum\(a\): i64\[\]\s*\n3\s*\ntir> ") is not None,
              repr(s.text(s.mark)[-300:]))

        # Ctrl-D leaves with status 0
        s.send(b"\x04")
        ok = s.wait_exit()
        check("Ctrl-D quits", ok and os.WIFEXITED(s.status) and os.WEXITSTATUS(s.status) == 0,
              f"status {s.status}; {s.raw[-300:]!r}")
    finally:
        s.kill()

    # the history file outlives the session; the next one recalls from it
    hist = os.path.join(home, "hist")
    check("history file written", os.path.exists(hist) and (os.stat(hist).st_mode & 0o077) == 0,
          "missing or readable by others")
    s = Session(tir, home)
    try:
        s.expect(r"tir> ")
        s.send(b"a = [7, 8]\r")
        s.expect(r"\ntir> ")
        # back past a = [7, 8], and sum(a), .vars of the last session, to its a * 10
        s.send(b"\x1b[A" * 4)
        s.settle()
        s.send(b"\r")
        check("history from the last session",
              s.expect(r"mul\(a, 10\): i64\[2\]\s*\n\[70, 80\]\s*\ntir> ") is not None,
              repr(s.text(s.mark)[-300:]))
        s.send(b".quit\r")
        ok = s.wait_exit()
        check(".quit", ok and os.WIFEXITED(s.status) and os.WEXITSTATUS(s.status) == 0, f"status {s.status}")
    finally:
        s.kill()

    # killed while libedit holds the terminal in raw mode: it is put back
    s = Session(tir, home)
    try:
        s.expect(r"tir> ")
        raw = s.wait_raw()
        os.kill(s.pid, signal.SIGTERM)
        ok = s.wait_exit()
        cooked = bool(termios.tcgetattr(s.fd)[3] & termios.ICANON)
        check("SIGTERM restores the terminal", raw and ok and cooked, f"raw {raw}, exited {ok}, cooked {cooked}")
    finally:
        s.kill()
        for f in os.listdir(home):
            os.unlink(os.path.join(home, f))
        os.rmdir(home)

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
