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
# replay_each BIN DIR MAKEVAR: a fuzz target's plain-main build (BIN, which
# `make` builds as MAKEVAR says) run once on each file of DIR, one check a
# file and one that DIR holds at least 10; a missing BIN ends the suite.
replay_each() {
	if [ ! -x "$1" ]; then
		bad "$1 is missing: make builds it ($3)"
		suite_end
		exit 1
	fi
	n=0
	for f in "$2"/*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if timeout 60 "$1" "$f" >"$tmp/out" 2>&1; then ok; else
			bad "$f: the target failed (exit $?):"
			tail -n 5 "$tmp/out" | sed 's/^/    /'
		fi
	done
	[ "$n" -ge 10 ] && ok || bad "$2 holds $n files (10 at least expected)"
}
