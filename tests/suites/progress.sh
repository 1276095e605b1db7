#!/bin/sh
# tests/suites/progress.sh — `tir run`'s progress line (--progress), on a
# pseudo-terminal and on a pipe: tests/progress_pty.py, whose header lists
# what it checks (a local run's kernel k of N, a held upload's MiB/s, a
# silent server's wait, each cleared before what follows; nothing on a
# pipe unless --progress=always).  The last line is "N passed, M failed".
# Run from the repository root (tests/run.sh does); BUILD picks the build.
BUILD=${BUILD:-build}
exec /usr/bin/python3 tests/progress_pty.py "$BUILD/tir"
