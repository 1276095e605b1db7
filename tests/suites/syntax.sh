#!/bin/sh
# tests/suites/syntax.sh — NumPy's spellings in tir (indexing, Python's
# operators and precedence, names for strings, program-relative paths)
# against NumPy: tests/oracle/syntax_check.py, through oracle.sh's checks
# of the Python it needs.  Prints "N passed, M failed" last.  POSIX sh.
ORACLE_SCRIPT=syntax_check.py exec sh "$(dirname "$0")/oracle.sh"
