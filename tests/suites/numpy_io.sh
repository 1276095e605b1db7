#!/bin/sh
# tests/suites/numpy_io.sh — NumPy's files and a user's command line:
# Fortran-order and big-endian .npy as NumPy writes them (read, converted,
# checked against NumPy), --input NAME=FILE:TENSOR, `tir run -`, `tir repl
# --input`, `tir inspect` of several files, every --save checked before
# the run, --remote's address forms and TIR_TIMEOUT (a server that never
# answers), `tir run --local` against two real servers, the REPL's words,
# and the local memory budget (--max-memory; a generator feeding a
# reduction is never stored).  Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin numpy_io

now_ms() { date +%s%3N; }
pids=
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$tmp"' EXIT INT TERM

# ---- Fortran order and big-endian, as NumPy writes them ----
"$py" - "$tmp" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
r = np.random.default_rng(5)
W = r.standard_normal((3, 5)).astype(np.float32)
np.save(d + "/wt.npy", W.T)                                   # fortran_order: True
np.save(d + "/w3.npy", np.asfortranarray(np.arange(24).reshape(2, 3, 4)))
np.save(d + "/bef4.npy", W.astype(">f4"))
np.save(d + "/bef8.npy", W.astype(">f8").T)                   # both at once
np.save(d + "/bei4.npy", np.array([[-2, 7], [1 << 30, -(1 << 31)]], dtype=">i4"))
np.save(d + "/bei8.npy", np.array([-(1 << 62), 3], dtype=">i8"))
np.save(d + "/bef2.npy", np.array([1.5, -0.25, 65504], dtype=">f2"))
np.save(d + "/bei2.npy", np.array([-300, 12], dtype=">i2"))
np.save(d + "/b1.npy", np.array([[True, False], [False, True]]).T)
np.save(d + "/u1.npy", np.array([0, 7, 255], dtype="<u1"))
for n in ["wt", "w3", "bef4", "bef8", "bei4", "bei8", "bef2", "bei2", "b1", "u1"]:
    a = np.load(d + "/" + n + ".npy")
    np.save(d + "/want_" + n + ".npy", np.ascontiguousarray(a).astype(a.dtype.newbyteorder("=")))
PY
for n in wt w3 bef4 bef8 bei4 bei8 bef2 bei2 b1 u1; do
	printf 'a = load("%s/%s.npy")\nprint sum(cast(a, f64))\n' "$tmp" "$n" >"$tmp/l.tir"
	if "$tir" run --quiet "$tmp/l.tir" --save "a=$tmp/got_$n.npy" >"$tmp/out" 2>"$tmp/err" &&
		"$py" -c "
import sys, numpy as np
g = np.load(sys.argv[1]); w = np.load(sys.argv[2])
assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w), (g, w)
" "$tmp/got_$n.npy" "$tmp/want_$n.npy"; then ok; else bad "$n.npy: not NumPy's values"; cat "$tmp/err"; fi
done
# --input reads them the same way, and inspect names the byte order
printf 'input w: f32[5, 3]\nprint w\n' >"$tmp/in.tir"
"$tir" run --quiet "$tmp/in.tir" --input "w=$tmp/wt.npy" >"$tmp/a" 2>&1 &&
	printf 'print load("%s/want_wt.npy")\n' "$tmp" >"$tmp/lw.tir" && "$tir" run --quiet "$tmp/lw.tir" | tail -n +2 >"$tmp/b" &&
	tail -n +2 "$tmp/a" | cmp -s - "$tmp/b" && ok || bad "--input of a Fortran-order file"
"$tir" inspect "$tmp/bef8.npy" | grep -q '^-  *>f8  *\[5, 3\]  *120  *128  *f64$' && ok || bad "inspect of >f8"
# what tir does not read is still said plainly
"$py" -c "import numpy as np; np.save('$tmp/c8.npy', np.zeros(3, np.complex64)); np.save('$tmp/u2.npy', np.zeros(3, '>u2'))"
for n in c8 u2; do
	printf 'print load("%s/%s.npy")\n' "$tmp" "$n" >"$tmp/l.tir"
	"$tir" run --quiet "$tmp/l.tir" >/dev/null 2>"$tmp/err"
	[ $? -eq 1 ] && grep -q "unsupported dtype '.$n'; tir reads f2 f4 f8 i1 i2 i4 i8 u1 b1 (little- or big-endian)" "$tmp/err" &&
		ok || { bad "$n.npy: not the unsupported-dtype error"; cat "$tmp/err"; }
done

# ---- --input NAME=FILE:TENSOR ----
"$py" - "$tmp" <<'PY'
import json, struct, sys
import numpy as np
d = sys.argv[1]
def st(path, ts):
    head, blob = {}, b""
    for k, v in ts.items():
        b = v.tobytes()
        head[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [len(blob), len(blob) + len(b)]}
        blob += b
    h = json.dumps(head).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + blob)
st(d + "/ck.safetensors", {"w1": np.ones((2, 2), np.float32), "w2": np.arange(4, dtype=np.float32).reshape(2, 2),
                           "bias": np.zeros((2, 2), np.float32)})
st(d + "/a:b.safetensors", {"t": np.full((2, 2), 7, np.float32)})
st(d + "/one.safetensors", {"t": np.full((2, 2), 5, np.float32)})
PY
printf 'input x: f32[2, 2]\nprint sum(x)\n' >"$tmp/x.tir"
want_in() { # NAME SPEC SUM
	"$tir" run --quiet "$tmp/x.tir" --input "x=$2" >"$tmp/out" 2>"$tmp/err" && [ "$(tail -n 1 "$tmp/out")" = "$3" ] &&
		ok || { bad "--input x=$2: expected sum $3"; cat "$tmp/err" "$tmp/out"; }
}
want_in pick "$tmp/ck.safetensors:w2" 6
want_in colon "$tmp/a:b.safetensors" 28          # a path with ':' is still its file
want_in colon_pick "$tmp/a:b.safetensors:t" 28
want_in only "$tmp/one.safetensors" 20
"$tir" run --quiet "$tmp/x.tir" --input "x=$tmp/ck.safetensors" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "^tir: error: --input x=$tmp/ck.safetensors: the file holds 3 tensors (w1, w2, bias) and none is named 'x'; say which, as --input x=$tmp/ck.safetensors:w1$" "$tmp/err" &&
	ok || { bad "several tensors, none picked"; cat "$tmp/err"; }
"$tir" run --quiet "$tmp/x.tir" --input "x=$tmp/ck.safetensors:w3" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "no tensor named 'w3' (did you mean 'w1'?)" "$tmp/err" && ok || { bad "a wrong tensor name"; cat "$tmp/err"; }
"$tir" run --quiet "$tmp/x.tir" --input "x=$tmp/none.npy:w" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "none.npy:w: cannot open: No such file" "$tmp/err" && ok || { bad "no such file"; cat "$tmp/err"; }

# ---- tir run - ----
printf 'x = load("one.safetensors")\nprint sum(x)\n' | (cd "$tmp" && "$OLDPWD/$tir" run --quiet -) >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = "20" ] && ok || { bad "run -: a relative load from the current folder"; cat "$tmp/err"; }
printf 'x = [1, 2]\nprint y\n' | "$tir" run --quiet - >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "^<stdin>:2:7: error: undefined name 'y'" "$tmp/err" && ok || { bad "run -: errors name <stdin>"; cat "$tmp/err"; }
printf 'print 2 * 3\n' | "$tir" check - && ok || bad "check -"

# ---- tir repl --input ----
printf 'input w: f32[5, 3]\nprint sum(cast(w, f64))\ninput x: f32[2, 2]\nprint sum(x)\n' |
	"$tir" repl --input "w=$tmp/wt.npy" --input "x=$tmp/ck.safetensors:w2" >"$tmp/out" 2>"$tmp/err"
st=$?
w=$(printf 'print sum(cast(load("%s/want_wt.npy"), f64))\n' "$tmp" | "$tir" run --quiet - | tail -n 1)
[ $st -eq 0 ] && [ "$(sed -n 2p "$tmp/out")" = "$w" ] && [ "$(sed -n 4p "$tmp/out")" = "6" ] &&
	ok || { bad "repl --input"; cat "$tmp/out" "$tmp/err"; }
printf 'input x: f32[3]\n' | "$tir" repl --input "x=$tmp/ck.safetensors:w2" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "ck.safetensors:w2 holds f32\[2, 2\] but input x is declared f32\[3\]" "$tmp/err" &&
	ok || { bad "repl --input of the wrong type"; cat "$tmp/err"; }
"$tir" repl --input x </dev/null >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && ok || bad "repl --input without =FILE: not exit 2"

# ---- tir inspect of several files ----
"$tir" inspect "$tmp/wt.npy" "$tmp/ck.safetensors" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && [ "$(grep -c ': npy, \|: safetensors, ' "$tmp/out")" = 2 ] && [ "$(grep -c '^$' "$tmp/out")" = 1 ] &&
	ok || { bad "inspect of two files"; cat "$tmp/out"; }
"$tir" inspect "$tmp/wt.npy" "$tmp/nope.npy" "$tmp/u1.npy" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(grep -c ': npy, ' "$tmp/out")" = 2 ] && grep -q "nope.npy: cannot open" "$tmp/err" &&
	ok || { bad "inspect: one file of three missing"; cat "$tmp/out" "$tmp/err"; }

# ---- --save checked before anything runs ----
printf 'w = randn([2, 3], seed=1)\nh = cast(w, bf16)\nprint sum(w)\n' >"$tmp/s.tir"
save_err() { # NAME STATUS PATTERN ARGS...
	n=$1 want=$2 pat=$3
	shift 3
	rm -f "$tmp"/sv_*
	"$tir" run --quiet "$tmp/s.tir" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne "$want" ] || ! grep -q "$pat" "$tmp/err" || [ -s "$tmp/out" ] || ls "$tmp"/sv_* >/dev/null 2>&1; then
		bad "--save $n: exit $st (expected $want), or it ran, or a file was written"
		cat "$tmp/err"
	else
		ok
	fi
}
save_err txt 2 "^tir run: --save w=$tmp/sv_w.txt: the file's name must end in .npy or .safetensors" --save "w=$tmp/sv_w.txt"
save_err bf16 1 "h is bf16\[2, 3\]: bf16 has no .npy dtype (NumPy has none)" --save "w=$tmp/sv_w.npy" --save "h=$tmp/sv_h.npy"
save_err folder 1 "no such folder: $tmp/nodir" --save "w=$tmp/sv_w.npy" --save "h=$tmp/nodir/sv_h.safetensors"
save_err name 1 "no value named 'ww' in the program; did you mean 'w'?" --save "w=$tmp/sv_w.npy" --save "ww=$tmp/sv_x.npy"
mkdir "$tmp/dir.npy"
save_err isdir 1 "w=$tmp/dir.npy: a folder of that name is there$" --save "w=$tmp/dir.npy"
"$tir" run --quiet "$tmp/s.tir" --save "w=$tmp/sv_w.npy" --save "h=$tmp/sv_h.safetensors" >/dev/null 2>&1 &&
	[ -f "$tmp/sv_w.npy" ] && [ -f "$tmp/sv_h.safetensors" ] && ok || bad "--save of bf16 to .safetensors"
printf 'w = [1.0, 2.0]\n.save w %s/r.txt\n.save w %s/nodir/r.npy\n' "$tmp" "$tmp" | "$tir" repl >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "^tir: .save: $tmp/r.txt: the file's name must end in .npy or .safetensors" "$tmp/err" &&
	grep -q "^tir: .save w=$tmp/nodir/r.npy: no such folder" "$tmp/err" && [ ! -e "$tmp/r.txt" ] &&
	ok || { bad ".save checks"; cat "$tmp/err"; }

# ---- the REPL's words ----
printf 'x = [1.0, 2.0]\n.remote off\ny = to(x, "remote:0")\n.save x %s/rx.npy\n.explain\n' "$tmp" | "$tir" repl >"$tmp/out" 2>"$tmp/err"
grep -q "to: no device remote:0: the session has no servers (.remote HOST:PORT)" "$tmp/err" && ! grep -q -- "--remote" "$tmp/err" &&
	ok || { bad "REPL: a device with no servers"; cat "$tmp/err"; }
grep -q "^nothing computed yet" "$tmp/out" && bad ".explain after .save says nothing was computed" || ok

# ---- the local memory budget, and a generator into a reduction ----
printf 'print sum(zeros([65536, 65536]))\n' >"$tmp/z.tir"
t0=$(now_ms)
timeout 60 "$tir" run --max-memory 1M --explain "$tmp/z.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = 0 ] && grep -q "fused 2 ops \[zeros sum\]" "$tmp/err" && grep -q "peak 64 B$" "$tmp/err" &&
	ok || { bad "sum(zeros([65536, 65536])) in 1M: exit $st"; cat "$tmp/err"; }
printf 'print sum(randn([4096, 4096], seed=3))\n' >"$tmp/r.tir"
"$tir" run --max-memory 1K --profile "$tmp/r.tir" >"$tmp/out" 2>"$tmp/err" && grep -q "peak 64 B$" "$tmp/err" &&
	[ "$("$tir" run --no-fuse --quiet "$tmp/r.tir")" = "$(cat "$tmp/out")" ] &&
	ok || { bad "sum(randn([4096, 4096])): stored, or not the reference's"; cat "$tmp/err"; }
printf 'x = zeros([8192, 8192]) + 1.0\nprint sum(x), x\n' >"$tmp/big.tir"
t0=$(now_ms)
"$tir" run --max-memory 64M "$tmp/big.tir" >"$tmp/out" 2>"$tmp/err"
st=$? t=$(($(now_ms) - t0))
[ $st -eq 1 ] && [ $t -lt 5000 ] && [ ! -s "$tmp/out" ] &&
	grep -q "error: add: the batch would hold 256 MiB at its peak (256 MiB of it this value, the largest then); the memory budget has .* left of 64 MiB (--max-memory)" "$tmp/err" &&
	grep -q "^    x = zeros(\[8192, 8192\]) + 1.0$" "$tmp/err" &&
	ok || { bad "a plan over --max-memory: exit $st in $t ms"; cat "$tmp/err"; }
printf 'x = zeros([8192, 8192]) + 1.0\nx\n' | "$tir" repl --max-memory 64M >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "(--max-memory)" "$tmp/err" && ok || { bad "repl --max-memory"; cat "$tmp/err"; }
"$tir" run --max-memory lots "$tmp/r.tir" 2>/dev/null
[ $? -eq 2 ] && ok || bad "--max-memory lots: not exit 2"
"$tir" run --quiet --max-memory 0 "$tmp/r.tir" >/dev/null && ok || bad "--max-memory 0 (no limit)"

# ---- --remote's addresses; TIR_TIMEOUT against a server that never answers ----
start_server() {
	log=$1
	: >"$log"
	"$tir" serve --port 0 2>"$log" &
	spid=$!
	pids="$pids $spid"
	addr=
	i=0
	while [ $i -lt 1200 ]; do
		port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) (protocol 4)$|\1|p' "$log")
		[ -n "$port" ] && addr=127.0.0.1:$port && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
printf 'print ones([2]) * 3\n' >"$tmp/one.tir"
if start_server "$tmp/s1.log"; then
	a1=$addr s1=$spid
	for form in "$a1/" "http://$a1" "http://$a1/" "http://$a1//"; do
		[ "$("$tir" run --quiet "$tmp/one.tir" --remote "$form" 2>&1 | tail -n 1)" = "[3, 3]" ] && ok || bad "--remote $form"
	done
	if start_server "$tmp/s2.log"; then
		a2=$addr
		# --local: the same command with --local added runs here alone
		for f in two-devices data-parallel tensor-parallel; do
			"$tir" run --quiet --full --precision 9 "docs/examples/$f.tir" --remote "$a1,$a2" >"$tmp/remote.out" 2>"$tmp/err"
			"$tir" run --quiet --full --precision 9 "docs/examples/$f.tir" --remote "$a1,$a2" --local >"$tmp/local.out" 2>>"$tmp/err"
			"$py" tests/numdiff.py "$tmp/remote.out" "$tmp/local.out" >/dev/null 2>&1 && [ -s "$tmp/local.out" ] &&
				ok || { bad "--local: $f differs from its run on two servers"; head -n 5 "$tmp/err"; }
		done
	fi
else
	bad "a server did not start"
fi
"$tir" run --quiet --local docs/examples/two-devices.tir --remote "nowhere.invalid:1,nowhere.invalid:2" >/dev/null 2>&1 &&
	ok || bad "--local opened --remote's servers"
"$tir" run --quiet --local docs/examples/data-parallel.tir >/dev/null 2>&1 && ok || bad "--local with no --remote"
"$tir" run --quiet "$tmp/one.tir" --remote "a b" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "^tir: remote 'a b': expected HOST, HOST:PORT, \[IPV6\]:PORT or https://HOST:PORT" "$tmp/err" &&
	ok || { bad "a malformed address"; cat "$tmp/err"; }
# a host alone is at port 6667 (when that port is free here, a server is put there)
if "$tir" serve --port 6667 2>"$tmp/s6667.log" & s6=$!; pids="$pids $s6"; i=0; while [ $i -lt 200 ] && ! grep -q listening "$tmp/s6667.log"; do kill -0 $s6 2>/dev/null || break; sleep 0.05; i=$((i + 1)); done; grep -q listening "$tmp/s6667.log"; then
	for form in localhost localhost/ http://localhost 127.0.0.1; do
		[ "$("$tir" run --quiet "$tmp/one.tir" --remote "$form" 2>&1 | tail -n 1)" = "[3, 3]" ] && ok || bad "--remote $form (port 6667)"
	done
	kill -TERM $s6
	wait $s6 2>/dev/null
fi
: >"$tmp/fake.port"
"$py" tests/net/remote_fake.py silent >"$tmp/fake.port" &
fpid=$!
pids="$pids $fpid"
i=0
while [ $i -lt 200 ] && [ -z "$(head -n 1 "$tmp/fake.port")" ]; do sleep 0.05; i=$((i + 1)); done
faddr=127.0.0.1:$(head -n 1 "$tmp/fake.port")
t0=$(now_ms)
TIR_TIMEOUT=2 timeout 20 "$tir" run --quiet "$tmp/one.tir" --remote "$faddr" >/dev/null 2>"$tmp/err"
st=$? t=$(($(now_ms) - t0))
[ $st -eq 3 ] && [ $t -ge 1900 ] && [ $t -lt 3500 ] && grep -q "^tir: remote $faddr: no answer to /v1/info within 2 s " "$tmp/err" &&
	ok || { bad "TIR_TIMEOUT=2: exit $st after $t ms (expected 3 after 2 s)"; cat "$tmp/err"; }
t0=$(now_ms)
printf '.remote %s\n' "$faddr" | TIR_TIMEOUT=2 timeout 20 "$tir" repl >/dev/null 2>"$tmp/err"
t=$(($(now_ms) - t0))
[ $t -lt 3500 ] && grep -q "no answer to /v1/info within 2 s" "$tmp/err" && ok || { bad "REPL .remote, TIR_TIMEOUT=2: $t ms"; cat "$tmp/err"; }
kill -9 $fpid 2>/dev/null

suite_end
