#!/bin/sh
# tests/suites/gemv.sh — products of a few rows (lib/exec/gemv.c) against
# NumPy and bit for bit against the gemm's rows, on every vector path
# (tests/oracle/gemv_check.py), run as oracle.sh runs its table.  POSIX sh.
ORACLE_SCRIPT=gemv_check.py exec sh "$(dirname "$0")/oracle.sh"
