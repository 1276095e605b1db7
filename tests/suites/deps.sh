#!/bin/sh
# tests/suites/deps.sh — the dependency step as a user meets it: a package
# that is missing, for a user who is not root, gives the one apt-get line to
# run and a clear stop (make exits non-zero before compiling anything); a
# package that is there gives nothing; and the build's pkg.mk holds what
# pkg-config says of the libraries.  As root the unprivileged cases run as
# nobody (setpriv); they never install anything (the package name cannot
# exist).  One count per check; the last line is "N passed, M failed".
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-deps.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
	echo "deps $1: FAILED: $2"
	failed=$((failed + 1))
}

# the Makefile and the script, readable by anyone (a clone may not be)
mkdir -p "$tmp/repo/tests"
cp Makefile "$tmp/repo/" && cp tests/deps.sh "$tmp/repo/tests/"
chmod -R a+rwX "$tmp"
if [ "$(id -u)" -eq 0 ]; then
	as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
else
	as_user() { "$@"; }
fi
missing=tir-no-such-package

(cd "$tmp/repo" && as_user sh tests/deps.sh coreutils "$missing") >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -ne 1 ] || [ "$(cat "$tmp/out")" != "run: sudo apt-get install -y $missing" ]; then
	fail "missing, not root" "exit $st (expected 1), stdout '$(cat "$tmp/out")'"
else
	pass
fi

(cd "$tmp/repo" && as_user sh tests/deps.sh coreutils) >"$tmp/out" 2>&1
st=$?
if [ $st -ne 0 ] || [ -s "$tmp/out" ]; then
	fail "installed" "exit $st (expected 0 and silence): $(head -c 200 "$tmp/out")"
else
	pass
fi

# make, as a new user's first command: stops before compiling, saying what to do
(cd "$tmp/repo" && as_user make BUILD="$tmp/b" DEB_PKGS="coreutils $missing" all) >"$tmp/out" 2>&1
st=$?
if [ $st -eq 0 ]; then
	fail "make, missing" "make exited 0"
elif ! grep -qx "run: sudo apt-get install -y $missing" "$tmp/out" ||
	! grep -q "^make: the Debian packages above are missing; install them, then run make again$" "$tmp/out"; then
	fail "make, missing" "no apt-get line or no clear stop:"
	head -n 5 "$tmp/out"
elif grep -q 'CC \| cc ' "$tmp/out" || [ -d "$tmp/b/cli" ]; then
	fail "make, missing" "it compiled without the libraries"
else
	pass
fi

# the build's own pkg.mk: what pkg-config says of the libraries
if [ ! -f "$BUILD/pkg.mk" ]; then
	fail "pkg.mk" "$BUILD/pkg.mk is missing"
elif ! grep -q '^PKG_LIBS := .*-lopenblas' "$BUILD/pkg.mk" || ! grep -q '^NET_LIBS := .*-lcurl' "$BUILD/pkg.mk"; then
	fail "pkg.mk" "no -lopenblas or -lcurl in $BUILD/pkg.mk"
else
	pass
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
