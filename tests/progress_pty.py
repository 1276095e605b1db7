#!/usr/bin/python3
"""tests/progress_pty.py TIR — `tir run`'s progress line.  On a terminal
(a pseudo-terminal here):
  - a local run with TIR_PROGRESS_DELAY=0 shows "tir: kernel 1 of N" at
    its first kernel, N the kernels its timing line counts, and clears the
    line ("\\r\\033[K") before the timing line;
  - with the default delay (a second), a remote run whose upload the fake
    server holds (tests/net/remote_fake.py holdput: the body never read)
    shows "upload 1 of 1: X of 64.0 MiB, R MiB/s", and one whose server
    never answers (silent) "waiting for the server"; SIGINT then stops it,
    the line cleared before "tir: interrupted", exit 130;
  - --progress=never shows nothing.
On a pipe: nothing with the default (auto), even with TIR_PROGRESS_DELAY=0;
--progress=always draws there too; a bad --progress is exit 2.
And a mapped --input truncated while its upload reads it (the fake holds
the upload, the file is cut, the fake reads on): the SIGBUS is said
plainly ("truncated or replaced in place"), exit 1, no core.

Each step waits for what it must see (up to a generous timeout), never
for a pause being long enough.  One line per failure; the last line is
"N passed, M failed".  Standard library only (Debian's /usr/bin/python3)."""

import os
import pty
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("progress: %s: FAILED%s" % (name, (": " + detail) if detail else ""))


def spawn(argv, env):
    """argv under a new pseudo-terminal (stdout and stderr both on it)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def read_until(fd, pat, timeout=60.0, out=None):
    """Read the terminal until pat (bytes regex) matches what came so far
    or it closes; returns (match or None, all the bytes)."""
    buf = out if out is not None else bytearray()
    end = time.monotonic() + timeout
    while True:
        m = re.search(pat, bytes(buf))
        if m:
            return m, buf
        left = end - time.monotonic()
        if left <= 0:
            return None, buf
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        try:
            d = os.read(fd, 65536)
        except OSError:
            d = b""
        if not d:
            return None, buf
        buf += d


def finish(pid, fd, buf, timeout=60.0):
    """Read to the end; returns (exit status, all the bytes)."""
    read_until(fd, rb"(?!x)x", timeout, buf)
    os.close(fd)
    _, st = os.waitpid(pid, 0)
    return (os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)), bytes(buf)


def fake(mode):
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "tests/net/remote_fake.py"), mode],
                         stdout=subprocess.PIPE)
    return p, "127.0.0.1:" + p.stdout.readline().decode().strip()



def held(mode, cmd, env, pattern, line, name):
    """cmd --remote a fake server in MODE, on a terminal: once its progress
    line matches pattern, Ctrl-C; the line (starting with `line`) must be
    cleared before "interrupted", and the exit 130."""
    fp, addr = fake(mode)
    try:
        pid, fd = spawn(cmd + ["--remote", addr], env)
        m, buf = read_until(fd, pattern)
        os.kill(pid, signal.SIGINT)
        st, out = finish(pid, fd, buf)
        stop = out.find(b"tir: interrupted")
        check(name, m is not None and st == 130 and stop > 0 and
              out.rfind(b"\r\x1b[K", 0, stop) > out.rfind(line, 0, stop),
              "exit %d: %r" % (st, out[-400:]))
    finally:
        fp.kill()
        fp.wait()

def main():
    global ROOT
    tir = os.path.abspath(sys.argv[1])
    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mlp = os.path.join(ROOT, "samples/mlp.tir")
    tmp = tempfile.mkdtemp(prefix="tir-progress.")
    env = dict(os.environ)
    env.pop("TIR_PROGRESS_DELAY", None)
    now = dict(env, TIR_PROGRESS_DELAY="0")

    # 1. a local run, the delay 0: kernel 1 of N, then the line cleared
    pid, fd = spawn([tir, "run", mlp], now)
    st, out = finish(pid, fd, bytearray())
    m = re.search(rb"-> (\d+) kernels", out)
    n = m.group(1) if m else b"?"
    draw = out.find(b"\rtir: kernel 1 of " + n + b" \xc2\xb7 ")
    clear = out.find(b"\r\x1b[K", draw + 1)
    check("local run on a terminal", st == 0 and draw >= 0 and 0 < clear < out.find(b"parse "),
          "exit %d: %r" % (st, out[-400:]))

    # 2. --progress=never: nothing
    pid, fd = spawn([tir, "run", "--progress=never", mlp], now)
    st, out = finish(pid, fd, bytearray())
    check("--progress=never", st == 0 and b"tir: kernel" not in out and b"\x1b[K" not in out, repr(out[-300:]))

    # 3. an upload held by the server, the default delay: its line, MiB/s; SIGINT
    big = os.path.join(tmp, "big.npy")
    with open(big, "wb") as f:
        head = b"{'descr': '<f4', 'fortran_order': False, 'shape': (16777216,), }"
        head += b" " * (117 - len(head)) + b"\n"
        f.write(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head)
        f.truncate(128 + (64 << 20))
    prog = os.path.join(tmp, "up.tir")
    with open(prog, "w") as f:
        f.write("input x: f32[16777216]\nprint sum(x)\n")
    held("holdput", [tir, "run", prog, "--input", "x=" + big], env,
         rb"\rtir: upload 1 of 1: [0-9.]+ of 64\.0 MiB, \d+ MiB/s \xc2\xb7 \d+\.\d s",
         b"\rtir: upload", "a held upload on a terminal")

    # 4. a server that never answers: waiting for it
    held("quiet", [tir, "run", mlp], env,
         rb"\rtir: waiting for the server \([0-9.]+ s\) \xc2\xb7 \d+\.\d s",
         b"\rtir: waiting", "a silent server on a terminal")

    # 5. on a pipe: nothing by default, even at once; --progress=always draws
    r = subprocess.run([tir, "run", mlp], env=now, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check("auto on a pipe", r.returncode == 0 and b"\r" not in r.stderr and b"tir: kernel" not in r.stderr,
          repr(r.stderr))
    r = subprocess.run([tir, "run", "--progress=always", mlp], env=now, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    check("--progress=always on a pipe", r.returncode == 0 and b"\rtir: kernel 1 of " in r.stderr, repr(r.stderr))
    r = subprocess.run([tir, "run", "--progress=sometimes", mlp], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check("--progress=sometimes", r.returncode == 2 and b"--progress wants auto, always or never" in r.stderr,
          repr(r.stderr))

    # 6. the mapped input truncated under its upload: SIGBUS, said, exit 1
    fp, addr = fake("holdput")
    try:
        p = subprocess.Popen([tir, "run", "--quiet", prog, "--input", "x=" + big, "--remote", addr], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        seen = fp.stdout.readline() == b"PUT\n"   # the upload under way, from the mapping
        os.truncate(big, 0)
        fp.send_signal(signal.SIGUSR1)             # the fake reads on: the client reads past the end
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        check("a mapped input truncated under its upload", seen and p.returncode == 1 and
              b"tir: a file mapped by load or --input was truncated or replaced in place" in err,
              "exit %d: %r" % (p.returncode, err[-300:]))
    finally:
        fp.kill()
        fp.wait()

    os.unlink(big)
    os.unlink(prog)
    os.rmdir(tmp)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()
