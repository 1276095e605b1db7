#!/bin/sh
# tests/suites/mpi.sh — server groups on MPI (docs/groups.md):
# tests/net/mpi_test.py starts groups with `mpirun --oversubscribe` on free
# loopback ports (group start, /v1/info, discovery, the examples over a
# group, moves over MPI and over HTTP, all_reduce as MPI_Allreduce against
# NumPy, concurrent clients' collectives, collectives that cannot be, a
# killed rank).
# MPI is optional: a build without libtir-mpi.so (no MPI found by
# pkg-config, or NO_MPI=1) or a machine without mpirun says the checks are
# skipped, and only the checks that need no MPI run: that NO_MPI=1 builds
# no libtir-mpi.so, and that a plain `tir serve` never maps libmpi.  The
# last line is "N passed, M failed".
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/py-suite.sh
. tests/sh-suite.sh
suite_begin mpi
case $BUILD in /*) bdir=$BUILD ;; *) bdir=$root/$BUILD ;; esac
tir=$bdir/tir

# NO_MPI=1 (as if pkg-config found none): nothing of MPI is built
if make -n BUILD="$tmp/nompi" NO_MPI=1 all 2>/dev/null | grep -q -- '-o [^ ]*libtir-mpi\.so'; then
	bad "make NO_MPI=1 would still build libtir-mpi.so"
else
	ok
fi

# a plain tir serve never loads MPI
"$tir" serve --port 0 2>"$tmp/serve.err" &
pid=$!
i=0
while ! grep -q 'listening on' "$tmp/serve.err" && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
	i=$((i + 1))
	sleep 0.05 # (waits for the listening line, at most 30 s)
done
if ! grep -q 'listening on' "$tmp/serve.err"; then
	bad "tir serve did not start: $(tail -n 2 "$tmp/serve.err")"
elif grep -q 'libmpi\|libtir-mpi' /proc/$pid/maps; then
	bad "a plain tir serve mapped MPI"
else
	ok
fi
kill $pid 2>/dev/null
wait $pid 2>/dev/null

if [ ! -f "$bdir/libtir-mpi.so" ] || ! command -v mpirun >/dev/null 2>&1; then
	echo "mpi: 54 checks skipped: MPI is not installed (no $BUILD/libtir-mpi.so or no mpirun; make deps installs libopenmpi-dev and openmpi-bin)"
	suite_end
	exit $?
fi

timeout 300 /usr/bin/python3 tests/net/mpi_test.py "$tir" >"$tmp/out" 2>&1
st=$?
py_shown "$tmp/out"
last=$(tail -n 1 "$tmp/out")
case $last in
*" passed, "*" failed")
	set -- $last
	pass=$((pass + $1))
	fail=$((fail + $3))
	[ "$st" -eq 0 ] || [ "$3" -ne 0 ] || bad "mpi_test.py exited $st"
	;;
*) bad "mpi_test.py: exit $st, no summary line: $last" ;;
esac
suite_end
