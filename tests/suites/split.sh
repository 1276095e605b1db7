#!/bin/sh
# tests/suites/split.sh — split and topk, ops of several results (a, b =
# split(x, 2); values, idx = topk(x, 3)), against NumPy
# (tests/oracle/split_check.py), run as oracle.sh runs its table.  POSIX sh.
ORACLE_SCRIPT=split_check.py exec sh "$(dirname "$0")/oracle.sh"
