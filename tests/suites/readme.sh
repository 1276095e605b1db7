#!/bin/sh
# tests/suites/readme.sh — the examples of README.md and docs/*.md run as
# written (tests/readme_check.py: a `$ CMD` or `tir> ` block prints what it
# shows, floats within tests/numdiff.py's tolerance), each file holding at
# least the examples it held when this suite last changed (so that none
# goes untested by being deleted), and the two checkers themselves: each
# must accept what it should and refuse what it should (a checker that
# cannot fail proves nothing), the examples of every file among them.  One
# count per example and per case; the last line is "N passed, M failed".
# Run from the repository root; BUILD picks the build (default build).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0

# the least number of examples of each file: raise a floor when adding
# examples, lower it only when an example moves to another file
floors="README.md 5 docs/commands.md 4 docs/fusion.md 1 docs/language.md 1 docs/remote.md 3"

# 1. the examples
"$py" tests/readme_check.py --tir "$tir" --counts README.md docs/*.md >"$tmp/out" 2>&1
c=$(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$tmp/out" | tail -n 1)
if [ -z "$c" ]; then
	echo "readme: FAILED: tests/readme_check.py gave no summary"
	tail -n 5 "$tmp/out"
	failed=$((failed + 1))
else
	sed '$d' "$tmp/out" | grep -v ': [0-9]* examples$'
	# shellcheck disable=SC2086 # "N M": split on purpose
	set -- $c
	passed=$((passed + $1))
	failed=$((failed + $2))
fi

# 1b. no file holds fewer examples than its floor
# shellcheck disable=SC2086 # "FILE N ...": split on purpose
set -- $floors
while [ $# -ge 2 ]; do
	n=$(sed -n "s|^$1: \([0-9]*\) examples\$|\1|p" "$tmp/out")
	if [ -n "$n" ] && [ "$n" -ge "$2" ]; then
		passed=$((passed + 1))
	else
		echo "readme: FAILED: $1 has ${n:-no} examples, fewer than its $2"
		failed=$((failed + 1))
	fi
	shift 2
done

# 1c. each file's first example, its expected output given one line more,
# must fail, and only it: the checker reads every file and can fail on it
mkdir "$tmp/broken"
# shellcheck disable=SC2086
set -- $floors
while [ $# -ge 2 ]; do
	b="$tmp/broken/$(echo "$1" | tr / _)"
	awk 'st == 0 && /^```/ { print; st = 1; next }
	     st == 1 { st = /^```/ ? 0 : /^(\$ |tir> )/ ? 2 : 3; print; next }
	     st == 2 && /^```/ { print "a line no example prints"; print; st = 4; next }
	     st == 3 && /^```/ { st = 0 }
	     { print }' "$1" >"$b"
	"$py" tests/readme_check.py --tir "$tir" "$b" >"$tmp/bout" 2>&1
	if ! cmp -s "$1" "$b" && [ "$(grep -c ': FAILED: ' "$tmp/bout")" -eq 1 ] &&
	   tail -n 1 "$tmp/bout" | grep -q ' passed, 1 failed$'; then
		passed=$((passed + 1))
	else
		echo "readme_check: FAILED: $1 with its first example broken: expected one failure:"
		tail -n 5 "$tmp/bout"
		failed=$((failed + 1))
	fi
	shift 2
done

# 2. numdiff: case NAME WANT_STATUS EXPECTED GOT (the texts as printf formats)
case_numdiff() {
	printf "$3" >"$tmp/want"
	printf "$4" >"$tmp/got"
	"$py" tests/numdiff.py "$tmp/want" "$tmp/got" >"$tmp/msg" 2>&1
	st=$?
	if [ $st -eq "$2" ]; then
		passed=$((passed + 1))
	else
		echo "numdiff $1: FAILED: exit $st, expected $2: $(head -c 300 "$tmp/msg")"
		failed=$((failed + 1))
	fi
}
v='y: f32[2, 3]\n[[0.0815929, 1.5, -2],\n [3, 4, 5]]\n'
case_numdiff "same bytes" 0 "$v" "$v"
case_numdiff "last digit" 0 "$v" 'y: f32[2, 3]\n[[0.081593, 1.5, -2],\n [3, 4, 5]]\n'
case_numdiff "small element, value's scale" 0 'y: f32[2]\n[1e-08, 100]\n' 'y: f32[2]\n[-3e-09, 100]\n'
case_numdiff "beyond the tolerance" 1 "$v" 'y: f32[2, 3]\n[[0.0815929, 1.5, -2],\n [3, 4.001, 5]]\n'
case_numdiff "small value alone" 1 'y: f32[2]\n[1e-08, 2e-08]\n' 'y: f32[2]\n[-3e-09, 2e-08]\n'
case_numdiff "integer value exact" 1 'k: i64[3]\n[9, 5, 100000]\n' 'k: i64[3]\n[9, 5, 100001]\n'
case_numdiff "bool exact" 1 'b: bool[2]\n[true, false]\n' 'b: bool[2]\n[true, true]\n'
case_numdiff "header exact" 1 'lt(x, 1e-06): bool[]\ntrue\n' 'lt(x, 1.00001e-06): bool[]\ntrue\n'
case_numdiff "nan exact" 1 'y: f32[2]\n[nan, 1]\n' 'y: f32[2]\n[1, 1]\n'
case_numdiff "inf sign" 1 'y: f32[2]\n[inf, 1]\n' 'y: f32[2]\n[-inf, 1]\n'
case_numdiff "text exact" 1 "$v" 'y: f32[2, 3]\n[[0.0815929, 1.5, -2],\n [3, 4, 5]]]\n'
case_numdiff "a number more" 1 'y: f32[2]\n[1, 2]\n' 'y: f32[2]\n[1, 2, 3]\n'
case_numdiff "a value more" 1 "$v" "${v}z: f32[]\n1\n"
case_numdiff "name with digits" 1 'x1 = 2\n' 'x2 = 2\n'

# 3. readme_check: a document with one good and three bad examples
cat >"$tmp/doc.md" <<'DOC'
```
$ printf 'a: f32[2]\n[0.0815929, 1]\nparse 0.20 ms · plan 0.01 ms (2 ops -> 1 kernels) · run 1.5 ms\n'
a: f32[2]
[0.081593, 1]
parse 9.99 ms · plan 0.03 ms (2 ops -> 1 kernels) · run 0.1 ms
```

```
$ echo one; echo two; echo three
one
...
```

```
$ printf 'parse 0.2 ms · plan 0.1 ms (2 ops -> 2 kernels)\n'
parse 0.2 ms · plan 0.1 ms (2 ops -> 1 kernels)
```

```
tir> x = [1.5, 2]
tir> x * 2
mul(x, 2): f32[2]
[3, 5]
```

```
$ echo one; echo two
one
```
DOC
"$py" tests/readme_check.py --tir "$tir" "$tmp/doc.md" >"$tmp/out" 2>&1
if [ "$(tail -n 1 "$tmp/out")" = "2 passed, 3 failed" ] &&
   grep -q 'doc.md:15: FAILED' "$tmp/out" && grep -q 'doc.md:20: FAILED' "$tmp/out" &&
   grep -q 'doc.md:27: FAILED' "$tmp/out"; then
	passed=$((passed + 1))
else
	echo "readme_check: FAILED: expected 2 passed, 3 failed (blocks 15, 20, 27):"
	cat "$tmp/out"
	failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
