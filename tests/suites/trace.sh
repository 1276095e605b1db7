#!/bin/sh
# tests/suites/trace.sh — `tir run --trace FILE.json`: the file is Chrome
# trace events (checked by tests/trace_check.py against the format's
# rules: a traceEvents list of complete "X" events with numeric ts and
# dur in microseconds, and "M" thread names), one kernel event per kernel
# the run reports, kernels one after another after the parse and the plan,
# every pool span inside a kernel and as many tasks in the spans as the
# kernels offered; the same at --threads 1 and 3; --trace with --remote is
# a usage error, an unwritable file a data error.  Prints `N passed, M
# failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin trace

for prog in samples/mlp.tir samples/cnn.tir bench/e2e/norm.tir; do
	for t in 1 2 3; do
		"$tir" run --threads $t --trace "$tmp/t.json" "$prog" >/dev/null 2>"$tmp/err"
		st=$?
		k=$(sed -n 's/.* -> \([0-9]*\) kernels.*/\1/p' "$tmp/err")
		: >"$tmp/msg"
		if [ $st -eq 0 ] && "$py" tests/trace_check.py "$tmp/t.json" "$k" >"$tmp/msg" 2>&1; then ok; else
			bad "$prog --threads $t (exit $st):"
			cat "$tmp/msg" "$tmp/err" | head -n 10
		fi
	done
done

# misuse
"$tir" run --trace "$tmp/t.json" --remote 127.0.0.1:1 samples/mlp.tir >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 2 ] && grep -q "with --remote it is not supported yet" "$tmp/err" && ok ||
	{ bad "--trace with --remote: exit $st"; cat "$tmp/err"; }
"$tir" run --quiet --trace "$tmp/no/such/dir/t.json" samples/mlp.tir >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q "tir: --trace $tmp/no/such/dir/t.json: No such file or directory" "$tmp/err" && ok ||
	{ bad "--trace to a folder that is not there: exit $st"; cat "$tmp/err"; }
"$tir" run samples/mlp.tir --trace >/dev/null 2>&1
st=$?
[ $st -eq 2 ] && ok || bad "--trace without a file: exit $st, expected 2"

suite_end
