#!/bin/sh
# tests/suites/linalg.sh — linear algebra (solve ... pinv) and several results
# (q, r = qr(a)) against NumPy's np.linalg (tests/oracle/linalg_check.py),
# run as oracle.sh runs its table.  POSIX sh.
ORACLE_SCRIPT=linalg_check.py exec sh "$(dirname "$0")/oracle.sh"
