#!/bin/sh
# tests/suites/dtypes.sh — the storage dtypes f16, bf16, i8, u8 and i16
# against NumPy (tests/oracle/dtypes_check.py: ops, promotion, reductions,
# matmul, cast, files and printing, fused and --no-fuse), run as oracle.sh
# runs its table.  POSIX sh.
ORACLE_SCRIPT=dtypes_check.py exec sh "$(dirname "$0")/oracle.sh"
