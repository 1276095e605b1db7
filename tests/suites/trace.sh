#!/bin/sh
# tests/suites/trace.sh — `tir run --trace FILE.json`: the file is Chrome
# trace events (checked by tests/trace_check.py against the format's
# rules: a traceEvents list of complete "X" events with numeric ts and
# dur in microseconds, and "M" thread names), one kernel event per kernel
# the run reports, kernels one after another after the parse and the plan,
# every pool span inside a kernel and as many tasks in the spans as the
# kernels offered; the same at --threads 1 and 3; a remote run's trace
# (its requests, uploads and fetch, the server's plan and run) against
# what the run reports; an unwritable file a data error.  Prints `N passed, M
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

# a remote run, on a server of its own (a free loopback port): the batch,
# every round trip, each upload and the fetch of the results, the
# server's plan and run (tests/trace_check.py --remote), against the
# numbers the run itself reports (--profile's blobs line, the timing
# line's round trips and bytes up); then again, the blobs cached: no uploads
"$tir" serve --port 0 2>"$tmp/serve.log" &
spid=$!
i=0
port=
while [ $i -lt 1200 ] && [ -z "$port" ] && kill -0 $spid 2>/dev/null; do
	port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) (protocol 4)$|\1|p' "$tmp/serve.log")
	[ -n "$port" ] || sleep 0.05
	i=$((i + 1))
done
"$py" -c 'import numpy as np, sys
np.save(sys.argv[1] + "/x.npy", np.linspace(-1, 1, 64 * 300, dtype=np.float32).reshape(64, 300))
np.save(sys.argv[1] + "/w.npy", np.cos(np.arange(300 * 200, dtype=np.float32)).reshape(300, 200))' "$tmp"
printf 'input x: f32[64, 300]\nw = load("%s/w.npy")\nprint sum(relu(x @ w), axis=1)\n' "$tmp" >"$tmp/r.tir"
"$tir" run --quiet "$tmp/r.tir" --input "x=$tmp/x.npy" >"$tmp/local.out" 2>&1
for round in first again; do
	"$tir" run --profile --trace "$tmp/r.json" "$tmp/r.tir" --input "x=$tmp/x.npy" --remote "127.0.0.1:$port" \
		>"$tmp/out" 2>"$tmp/err"
	st=$?
	k=$(sed -n 's/.* -> \([0-9]*\) kernels.*/\1/p' "$tmp/err")
	trips=$(sed -n 's/.* net .* (\([0-9]*\) round trips*, .*/\1/p' "$tmp/err")
	up=$(sed -n 's/.* round trips*, \(.*\) up, .*/\1/p' "$tmp/err")
	blobs=$(sed -n 's/^blobs: [0-9]* cached, \([0-9]*\) sent (\([0-9]*\) bytes).*/\1 \2/p' "$tmp/err")
	want=2
	[ $round = again ] && want=0
	: >"$tmp/msg"
	if [ $st -eq 0 ] && [ -n "$port" ] && cmp -s "$tmp/out" "$tmp/local.out" && [ "${blobs% *}" = $want ] &&
		"$py" tests/trace_check.py "$tmp/r.json" --remote "$k" "$trips" "$up" $blobs >"$tmp/msg" 2>&1; then ok; else
		bad "--trace of a remote run ($round; exit $st, blobs sent: '$blobs'):"
		cat "$tmp/msg" "$tmp/err" | head -n 10
	fi
done
kill -TERM $spid 2>/dev/null
wait $spid 2>/dev/null

# misuse
"$tir" run --quiet --trace "$tmp/no/such/dir/t.json" samples/mlp.tir >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q "tir: --trace $tmp/no/such/dir/t.json: No such file or directory" "$tmp/err" && ok ||
	{ bad "--trace to a folder that is not there: exit $st"; cat "$tmp/err"; }
"$tir" run samples/mlp.tir --trace >/dev/null 2>&1
st=$?
[ $st -eq 2 ] && ok || bad "--trace without a file: exit $st, expected 2"


# each product kernel's GFLOP in the trace: 2 multiply-add flops per
# output element and step of its sum (conv2d: per filter tap; attention:
# its two products), as --profile's GFLOP/s divides them
cat >"$tmp/flops.tir" <<'EOF'
a = randn([6, 20], seed=1)
b = randn([20, 7], seed=2)
print a @ b
x = randn([2, 3, 9, 8], seed=3)
w = randn([5, 3, 3, 2], seed=4)
print conv2d(x, w, stride=2, padding=1)
q = randn([2, 4, 6], seed=5)
k = randn([2, 10, 6], seed=6)
v = randn([2, 10, 3], seed=7)
print attention(q, k, v)
EOF
"$tir" run --trace "$tmp/f.json" "$tmp/flops.tir" >/dev/null 2>"$tmp/err"
st=$?
got=$("$py" -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
for e in ev:
    if e.get("ph") == "X" and e["name"] in ("matmul", "conv2d", "attention"):
        print(e["name"], round(e["args"]["gflop"] * 1e9))
' "$tmp/f.json" 2>&1)
# matmul 2*6*7*20; conv2d out [2, 5, 5, 5], 3*3*2 taps; attention 2*2*4*10*(6+3)
want="matmul 1680
conv2d 9000
attention 1440"
[ $st -eq 0 ] && [ "$got" = "$want" ] && ok || bad "flops in the trace (exit $st): '$got', expected '$want'"

# jansson is loaded at its first use (lib/exec/json.c), not at start: a
# one-line run does not map it, --trace and a safetensors load do
# maps CMD...: whether running CMD loads libjansson (the loader's account)
maps() {
	LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -q 'file=libjansson'
}
printf 'print add(1, 2)\n' >"$tmp/one.tir"
if command -v ldd >/dev/null 2>&1; then
	ldd "$tir" | grep -q libjansson && bad "tir is linked with jansson" || ok
fi
maps "$tir" run --quiet "$tmp/one.tir" && bad "print add(1, 2) loads jansson" || ok
maps "$tir" run --quiet --trace "$tmp/one.json" "$tmp/one.tir" && ok || bad "--trace does not load jansson"
$py -c "
import json, struct, sys
h = json.dumps({'t': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]}}).encode()
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + struct.pack('<2f', 1.5, 2.5))" "$tmp/w.safetensors"
printf 'print sum(load("%s", name="t"))\n' "$tmp/w.safetensors" >"$tmp/st.tir"
[ "$("$tir" run --quiet "$tmp/st.tir" 2>&1 | tail -n 1)" = 4 ] && ok || bad "a safetensors load: $("$tir" run --quiet "$tmp/st.tir" 2>&1)"
maps "$tir" run --quiet "$tmp/st.tir" && ok || bad "a safetensors load does not load jansson"

suite_end
