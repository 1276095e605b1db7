#!/bin/sh
# tests/suites/fusion.sh — fused against unfused on generated programs
# (tests/fusion/diff.py); prints `N passed, M failed` last.
BUILD=${BUILD:-build}
if ! /usr/bin/python3 -c 'import sys' 2>/dev/null; then
	echo "fusion: /usr/bin/python3 is missing (the dependency step installs python3-numpy)"
	echo "0 passed, 1 failed"
	exit 1
fi
exec /usr/bin/python3 tests/fusion/diff.py --tir "$BUILD/tir" --cases "${FUSION_CASES:-300}"
