# tests/sh-suite.sh — sourced by the shell suites that count their own
# checks (tests/suites/*.sh): `suite_begin NAME` sets tir (the build under
# test: $BUILD/tir, BUILD defaulting to build), py (/usr/bin/python3, which
# has NumPy) and tmp (a fresh folder, removed on exit); `ok` counts a check
# passed, `bad MESSAGE` one failed and prints "NAME: MESSAGE"; `suite_end`,
# the suite's last command, prints "N passed, M failed" and returns 0 only
# when none failed.  POSIX sh.
suite_begin() {
	suite=$1
	BUILD=${BUILD:-build}
	tir=$BUILD/tir
	py=/usr/bin/python3
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-$suite.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT INT TERM
	pass=0 fail=0
}
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	echo "$suite: $*"
}
suite_end() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
