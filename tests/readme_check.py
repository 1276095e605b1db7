#!/usr/bin/env python3
"""tests/readme_check.py [--tir TIR] [--counts] [FILE.md...] — run every
example of Markdown files and check that it prints what the file shows, so
that the README and the manual cannot drift from the program.  Without
FILE.md it reads README.md and docs/*.md, as tests/suites/readme.sh does.
With --counts it prints, before the last line, one line per file:
"FILE: N examples" (tests/suites/readme.sh holds each file to a floor, so
that an example cannot go untested by being deleted or losing its `$ `).

An example is a fenced block whose first line is a command or a prompt:

  - `$ CMD`: a shell transcript.  CMD runs with `sh -c` from the
    repository's root, `tir` and `build/tir` being the tir under test; the
    lines after it, up to the next `$ ` line or the end of the block, are
    what it prints (stdout and stderr, as a terminal shows them).  A
    command ending in `&` runs in the background: the lines after it are
    the first lines it prints, waited for (a state, never a sleep), and it
    is stopped at the end of the block.  Port 6667 in a block stands for a
    free loopback port the check picks, and 6668 for a second one.
  - `tir> STATEMENT`: a REPL transcript.  The lines after the `tir> ` and
    `...> ` prompts are typed into `tir repl` (stdin not a terminal, so
    errors say `<stdin>:LINE:COL` as in the block); the other lines are
    what it prints.

In the expected text a line `...` alone stands for any lines; tir's timing
line (`parse ... ms · plan ...`) is compared with its times and sizes
taken out (they differ on every run), its counts kept; everything else is
compared as goldens are (tests/numdiff.py: the text exactly, the floats
within the stated tolerance).  Other blocks (programs, layouts) are not
examples and are not run.

Prints one line per failing example with where and what; the last line is
"N passed, M failed" (one count per example); exit 0 only if none failed.
"""
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numdiff  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMING = re.compile(r"^parse [0-9.]+ ms · ")
MEASURE = re.compile(r"[0-9][0-9.]* ?(ms|µs|s|B|KiB|MiB|GiB)\b")
WAIT = 60          # seconds: the most any one command or first line may take


def blocks(path):
    """[(line number of the block's first line, [lines])] of fenced blocks"""
    out, cur, start = [], None, 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("```"):
                if cur is None:
                    cur, start = [], n + 1
                else:
                    out.append((start, cur))
                    cur = None
            elif cur is not None:
                cur.append(line)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def masked(line):
    return MEASURE.sub(lambda m: "N " + m.group(1), line) if TIMING.match(line) else line


def shape(line):
    """a line with its numbers taken out: what must match for lines to align"""
    return numdiff.NUMBER.sub("#", line)


def align(want, got):
    """[(want piece, got piece)] with the `...` lines of want matched to any
    lines of got and every other line to one of the same shape; None if
    there is no such match"""
    if not want:
        return [] if not got else None
    if want[0] == "...":
        for k in range(len(got) + 1):
            rest = align(want[1:], got[k:])
            if rest is not None:
                return rest
        return None
    n = 0
    while n < len(want) and n < len(got) and want[n] != "..." and shape(want[n]) == shape(got[n]):
        n += 1
    if n == 0:
        return None
    rest = align(want[n:], got[n:])
    return None if rest is None else [(want[:n], got[:n])] + rest


def agree(want, got):
    """None, or what differs: `...` lines match any lines, the timing line
    its shape, and the rest as goldens are compared"""
    want = [masked(w) for w in want]
    got = [masked(g) for g in got]
    pieces = align(want, got)
    if pieces is None:
        return ("the lines differ:\n  expected:\n    " + "\n    ".join(want[:12]) +
                "\n  printed:\n    " + "\n    ".join(got[:12]))
    for w, g in pieces:
        msg, _ = numdiff.compare("\n".join(w), "\n".join(g))
        if msg:
            return msg
    return None


class Shell:
    def __init__(self, tir):
        self.env = dict(os.environ)
        self.env["PATH"] = os.path.dirname(tir) + os.pathsep + self.env.get("PATH", "")
        self.tir = tir
        self.background = []

    def command(self, cmd):
        return cmd.replace("build/tir", self.tir)

    def run(self, cmd):
        p = subprocess.run(["sh", "-c", self.command(cmd)], cwd=ROOT, env=self.env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=WAIT)
        return p.stdout.decode("utf-8", "replace").splitlines()

    def start(self, cmd, nlines):
        """the first nlines lines a background command prints"""
        p = subprocess.Popen(["sh", "-c", "exec " + self.command(cmd.rstrip("& "))], cwd=ROOT,
                             env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append(p)
        lines, deadline = [], time.monotonic() + WAIT
        os.set_blocking(p.stdout.fileno(), False)
        buf = b""
        while len(lines) < nlines and time.monotonic() < deadline and p.poll() is None:
            chunk = p.stdout.read()
            if chunk:
                buf += chunk
                *done, buf = buf.split(b"\n")
                lines += [d.decode("utf-8", "replace") for d in done]
            else:
                time.sleep(0.01)
        return lines[:nlines]

    def stop(self):
        for p in self.background:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=WAIT)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            p.stdout.close()
        self.background = []


def shell_example(lines, tir):
    port = str(free_port())
    port2 = port
    while port2 == port:
        port2 = str(free_port())
    lines = [ln.replace("6667", port).replace("6668", port2) for ln in lines]
    steps = []              # [command, [expected lines]]
    for ln in lines:
        if ln.startswith("$ "):
            steps.append([ln[2:], []])
        elif steps:
            steps[-1][1].append(ln)
    sh = Shell(tir)
    try:
        for cmd, want in steps:
            if cmd.rstrip().endswith("&"):
                got = sh.start(cmd, len(want))
            else:
                got = sh.run(cmd)
            msg = agree(want, got)
            if msg:
                return f"`{cmd}`: {msg}"
    except subprocess.TimeoutExpired:
        return f"`{cmd}` took more than {WAIT} s"
    finally:
        sh.stop()
    return None


def repl_example(lines, tir):
    typed, want = [], []
    for ln in lines:
        for prompt in ("tir> ", "...> "):
            if ln.startswith(prompt) or ln == prompt.rstrip():
                typed.append(ln[len(prompt):])
                break
        else:
            want.append(ln)
    p = subprocess.run([tir, "repl"], cwd=ROOT, input="\n".join(typed) + "\n", text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=WAIT)
    return agree(want, p.stdout.splitlines())


def main(argv):
    args = argv[1:]
    tir = os.path.join(ROOT, os.environ.get("BUILD", "build"), "tir")
    counts = False
    while args[:1] in (["--tir"], ["--counts"]):
        if args[0] == "--tir":
            tir, args = os.path.abspath(args[1]), args[2:]
        else:
            counts, args = True, args[1:]
    if not args:
        args = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    passed = failed = 0
    per_file = []
    for path in args:
        before = passed + failed
        for start, lines in blocks(path):
            if not lines:
                continue
            if lines[0].startswith("$ "):
                msg = shell_example(lines, tir)
            elif lines[0].startswith("tir> "):
                msg = repl_example(lines, tir)
            else:
                continue
            if msg:
                print(f"{os.path.relpath(path, ROOT)}:{start}: FAILED: {msg}")
                failed += 1
            else:
                passed += 1
        per_file.append((os.path.relpath(path, ROOT), passed + failed - before))
    if counts:
        for name, n in per_file:
            print(f"{name}: {n} examples")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
