#!/bin/sh
# tests/suites/xfer.sh — server to server (docs/protocol.md, "Server to
# server"): a value moves from one `tir serve` to another with a
# single-use capability, the receiver fetching it and checking its hash,
# never through the client; every refusal of the protocol; a 64 MiB value;
# and the client's tir_remote_export / tir_remote_import
# (tests/net/xfer_client.c).  tests/net/xfer_test.py, with Debian's
# /usr/bin/python3, on servers it starts on free loopback ports.  Only the
# failures are shown (VERBOSE=1: every line); the last line is "N passed,
# M failed".  Run from the repository root (tests/run.sh does); BUILD
# picks the build.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
py_build
unset TIR_TOKEN TIR_CA_FILE
py_suite 300 tests/net/xfer_test.py "$tir" "$bdir/tests/xfer_client"
