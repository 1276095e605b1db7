#!/bin/sh
# tests/golden-update.sh NAME... — rewrite tests/golden/NAME.out, .err and
# .status from what the current $BUILD/tir (default build/tir) does, and
# show the change against the old files.  For a new case write NAME.tir (or
# NAME.gen) first.  The new files are only a proposal: a person must read
# them (every message, every caret column) before they are committed.
# `make golden-update NAME=foo` calls this; `make test` never does.
# NAME.err is written unless the command is `run` without --quiet (whose
# stderr has a timing line); NAME.status only when the status is not 0.
set -u

if [ $# -lt 1 ] || [ -z "$1" ]; then
	echo "usage: tests/golden-update.sh NAME..." >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/golden-exec.sh"
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
g=$root/tests/golden
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

for name in "$@"; do
	name=${name%.tir}
	name=${name##*/}
	dir=$g
	src=$g/$name.tir
	if [ -f "$g/$name.gen" ]; then
		dir=$tmp/gen
		mkdir -p "$dir"
		sh "$g/$name.gen" >"$dir/$name.tir" || { echo "$name.gen failed" >&2; exit 1; }
		src=$g/$name.gen
	elif [ ! -f "$src" ]; then
		echo "no $name.tir or $name.gen in tests/golden" >&2
		exit 1
	fi
	golden_exec "$tir" "$dir" "$name" "$src" "$tmp/out" "$tmp/err"
	keep_err=1
	if [ "$verb" = run ]; then
		keep_err=0
		case " $args " in *" --quiet "*) keep_err=1 ;; esac
	fi
	for ext in out err status; do
		if [ -f "$g/$name.$ext" ]; then cp "$g/$name.$ext" "$tmp/old.$ext"; else : >"$tmp/old.$ext"; fi
	done
	cp "$tmp/out" "$g/$name.out"
	if [ $keep_err = 1 ]; then cp "$tmp/err" "$g/$name.err"; else rm -f "$g/$name.err"; fi
	if [ $st -ne 0 ]; then echo $st >"$g/$name.status"; else rm -f "$g/$name.status"; fi
	echo "== $name ($verb, exit $st)"
	for ext in out err status; do
		[ -f "$g/$name.$ext" ] && new=$g/$name.$ext || new=/dev/null
		diff -u --label "old $name.$ext" --label "new $name.$ext" "$tmp/old.$ext" "$new"
	done
done
echo "golden-update: REVIEW the files above by hand (messages, caret columns) before committing them."
