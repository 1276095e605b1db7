#!/bin/sh
# tests/suites/flags.sh — every command's flags as cli/flags.def lists
# them.  Each flag that takes a value does the same given as `--flag VALUE`
# and as `--flag=VALUE`: a value it takes (exit 0, or for tir serve the
# misuse its other flags make, so that nothing is served) and one it
# refuses (exit 2, the same message), stdout and stderr alike; a flag of
# the table without a case here fails.  `tir help CMD`, `tir CMD --help`
# and `tir CMD -h` are one text naming every flag of CMD's rows, and
# `tir help` every command.  Operands stay where they are put (before or
# after the flags, after `--`, a lone `-`); unknown, abbreviated and
# valueless flags are refused.  Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin flags

def=cli/flags.def
rows=$(sed -n 's/^FLAG([A-Z0-9_]*, \([A-Z]*\), "\([a-z0-9-]*\)", \(NULL\|"[^"]*"\),.*/\1 \2 \3/p' "$def" |
	tr -d '"' | awk '{ print tolower($1), $2, $3 }')
n_rows=$(printf '%s\n' "$rows" | grep -c .)
n_def=$(grep -c '^FLAG(' "$def")
[ "$n_rows" -gt 0 ] && [ "$n_rows" = "$n_def" ] && ok ||
	bad "read $n_rows rows of $def's $n_def: its row format changed"

cat >"$tmp/p.tir" <<'EOF'
input x: f32[2, 3]
y = x * 2 + 0.123456789
print y
EOF
"$py" -c "import numpy as np; np.save('$tmp/x.npy', np.arange(6, dtype=np.float32).reshape(2, 3))"
printf 'alice tok-a\n' >"$tmp/tokens"
chmod 600 "$tmp/tokens"
printf 'ones([2])\n' >"$tmp/repl.in"

# a server for --remote, its own flags in the = form
pids=
trap 'for p in $pids; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT INT TERM
: >"$tmp/serve.log"
"$tir" serve --port=0 --host=127.0.0.1 --threads=1 --max-sessions=8 2>"$tmp/serve.log" &
spid=$!
pids=$spid
addr=
i=0
while [ $i -lt 1200 ] && [ -z "$addr" ] && kill -0 "$spid" 2>/dev/null; do
	port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) .*|\1|p' "$tmp/serve.log")
	[ -n "$port" ] && addr=127.0.0.1:$port || sleep 0.05
	i=$((i + 1))
done
[ -n "$addr" ] && ok || { bad "tir serve --port=0 --host=127.0.0.1 did not start"; cat "$tmp/serve.log"; }

# pair WANT CMD FLAG VALUE [ARGS...]: tir CMD ARGS --FLAG VALUE and
# tir CMD ARGS --FLAG=VALUE both exit WANT with the same stdout and stderr
# (stdin: $in, else none)
covered=
pair() {
	want=$1 cmd=$2 flag=$3 value=$4
	shift 4
	covered="$covered $cmd:$flag"
	"$tir" "$cmd" "$@" "--$flag" "$value" <"${in:-/dev/null}" >"$tmp/o1" 2>"$tmp/e1"
	s1=$?
	"$tir" "$cmd" "$@" "--$flag=$value" <"${in:-/dev/null}" >"$tmp/o2" 2>"$tmp/e2"
	s2=$?
	if [ $s1 -eq "$want" ] && [ $s2 -eq "$want" ] && cmp -s "$tmp/o1" "$tmp/o2" && cmp -s "$tmp/e1" "$tmp/e2"; then
		ok
	else
		bad "tir $cmd $* --$flag '$value' (exit $s1) and --$flag='$value' (exit $s2), $want expected:"
		diff "$tmp/o1" "$tmp/o2" | head -n 5
		diff "$tmp/e1" "$tmp/e2" | head -n 5
		head -n 3 "$tmp/e1"
	fi
}

run="--quiet $tmp/p.tir --input x=$tmp/x.npy"
printf 'print exp(zeros([512, 512]))\n' >"$tmp/big.tir"
for row in $(printf '%s\n' "$rows" | awk '$3 != "NULL" { print $1 ":" $2 }'); do
	cmd=${row%%:*} flag=${row#*:}
	case $row in
	run:input)
		pair 0 run input "x=$tmp/x.npy" --quiet "$tmp/p.tir"
		pair 2 run input "x" --quiet "$tmp/p.tir" ;;
	run:save)
		rm -f "$tmp/y.npy"
		"$tir" run $run --save="y=$tmp/y.npy" >/dev/null && [ -s "$tmp/y.npy" ] && ok ||
			bad "run --save=y=FILE wrote nothing"
		pair 0 run save "y=$tmp/y.npy" $run
		pair 2 run save "y=" $run ;;
	run:remote)
		pair 0 run remote "$addr" $run
		pair 3 run remote "127.0.0.1:1" $run ;;
	run:trace)
		rm -f "$tmp/t.json"
		"$tir" run $run --trace="$tmp/t.json" >/dev/null && grep -q traceEvents "$tmp/t.json" && ok ||
			bad "run --trace=FILE wrote no trace"
		pair 0 run trace "$tmp/t.json" $run
		pair 1 run trace "$tmp/nowhere/t.json" $run ;;
	run:progress)
		pair 0 run progress never $run
		pair 2 run progress sometimes $run
		for form in "--progress always" "--progress=always"; do
			TIR_PROGRESS_DELAY=0 "$tir" run $run $form 2>&1 >/dev/null | grep -q 'tir: kernel 1 of' && ok ||
				bad "run $form drew no progress line"
		done ;;
	run:threads)
		pair 0 run threads 2 $run
		pair 2 run threads 0 $run ;;
	run:gemm)
		pair 0 run gemm openblas $run
		pair 2 run gemm blis $run ;;
	run:precision)
		pair 0 run precision 3 $run
		"$tir" run $run >"$tmp/o3"
		! cmp -s "$tmp/o1" "$tmp/o3" && grep -q '^\[\[0\.123, 2\.12,' "$tmp/o1" && ok ||
			bad "run --precision 3 printed as the default does"
		pair 2 run precision 18 $run ;;
	run:max-memory)
		pair 0 run max-memory 1G $run
		pair 1 run max-memory 1K --quiet "$tmp/big.tir"
		pair 2 run max-memory lots $run ;;
	repl:input)
		printf 'input x: f32[2, 3]\nx\n' >"$tmp/repl_in.in"
		in=$tmp/repl_in.in pair 0 repl input "x=$tmp/x.npy"
		grep -q 'x: f32\[2, 3\]' "$tmp/o1" && ok || bad "repl --input x=FILE bound no value"
		in=$tmp/repl_in.in pair 2 repl input "x" ;;
	repl:max-memory)
		in=$tmp/repl.in pair 0 repl max-memory 512M
		in=$tmp/repl.in pair 2 repl max-memory 1X ;;
	run:dim)
		onnx=tests/fuzz/onnx/symbolic.onnx
		pair 0 run dim n=2 --quiet $onnx --input "x=$tmp/x.npy"
		pair 2 run dim n --quiet $onnx --input "x=$tmp/x.npy" ;;
	import:output)
		pair 0 import output "$tmp/s.tir" --dim n=2 tests/fuzz/onnx/symbolic.onnx
		pair 1 import output "$tmp/nowhere/s.tir" --dim n=2 tests/fuzz/onnx/symbolic.onnx ;;
	import:dim)
		pair 0 import dim n=2 --output "$tmp/s.tir" tests/fuzz/onnx/symbolic.onnx
		pair 2 import dim n=two --output "$tmp/s.tir" tests/fuzz/onnx/symbolic.onnx ;;
	import:rename)
		pair 0 import rename '^x$=pixels' --dim n=2 --output "$tmp/s.tir" tests/fuzz/onnx/symbolic.onnx
		grep -q '^input pixels: f32\[2, 3\]$' "$tmp/s.tir" && ok || bad "import --rename '^x$=pixels' renamed nothing"
		pair 2 import rename '(x=y' --dim n=2 --output "$tmp/s.tir" tests/fuzz/onnx/symbolic.onnx ;;
	inspect:match)
		pair 0 inspect match '^wte' samples/gpt2.safetensors
		pair 2 inspect match 'wte[' samples/gpt2.safetensors ;;
	repl:remote)
		in=$tmp/repl.in pair 0 repl remote "$addr"
		grep -q 'f32\[2\]' "$tmp/o1" && ok || bad "repl --remote ADDR printed no value"
		in=$tmp/repl.in pair 3 repl remote "127.0.0.1:1" ;;
	serve:*)
		# a good value and --tls-key alone: refused for the key (exit 2),
		# the value taken; a bad one refused for itself
		case $flag in
		host) good=127.0.0.1 badv= ;;
		port) good=0 badv=70000 ;;
		token) good=tok badv= ;;
		max-body) good=1M badv=0 ;;
		max-sessions) good=8 badv=0 ;;
		session-ttl) good=60 badv=1.5 ;;
		session-lease) good=30 badv=0 ;;
		blob-cache) good=1G badv=12Q ;;
		max-inflight) good=64M badv=0 ;;
		threads) good=2 badv=many ;;
		upload-reserve) good=64M badv=12Q ;;
		gemm) good=openblas badv=blis ;;
		max-memory) good=1GiB badv=0 ;;
		max-batch-seconds) good=0 badv=-1 ;;
		max-ops) good=1000 badv=0 ;;
		graph-cache) good=128M badv=0 ;;
		tls-cert) good=$tmp/c.pem badv= ;;
		tls-key) good=$tmp/k.pem badv= ;;
		max-connections-per-address) good=4 badv=0 ;;
		header-timeout) good=10 badv=0 ;;
		transfer-seconds) good=60 badv=86401 ;;
		tokens) good=$tmp/tokens badv= ;;
		peers) good=10.0.0.0/8 badv= ;;
		*) good= badv= ;;
		esac
		if [ -z "$good" ]; then
			bad "serve --$flag: no case in this suite"
			continue
		fi
		case $flag in
		tls-cert) pair 2 serve "$flag" "$good" ;;
		tls-key) pair 2 serve "$flag" "$good" ;;
		*) pair 2 serve "$flag" "$good" --tls-key "$tmp/k.pem" ;;
		esac
		grep -q "^tir serve: --tls-[a-z]* needs --tls-[a-z]* too" "$tmp/e1" && ok ||
			bad "serve --$flag '$good' was not taken: $(head -n 1 "$tmp/e1")"
		pair 2 serve "$flag" "$badv"
		grep -q "^tir serve: --$flag: bad value '$badv'" "$tmp/e1" && ok ||
			bad "serve --$flag '$badv': $(head -n 1 "$tmp/e1")" ;;
	*)
		bad "$cmd --$flag: no case in this suite" ;;
	esac
done
# every flag with a value was tried both ways
for row in $(printf '%s\n' "$rows" | awk '$3 != "NULL" { print $1 ":" $2 }'); do
	case " $covered " in *" $row "*) ok ;; *) bad "${row%%:*} --${row#*:}: not tried both ways" ;; esac
done

# every switch: taken alone, refused with a value
for row in $(printf '%s\n' "$rows" | awk '$3 == "NULL" { print $1 ":" $2 }'); do
	cmd=${row%%:*} flag=${row#*:}
	case $cmd in
	run) args="$run" ;;
	fmt) args="$tmp/p.tir" ;;
	*) bad "$cmd --$flag: no case in this suite"; continue ;;
	esac
	"$tir" "$cmd" $args "--$flag" >/dev/null 2>"$tmp/e1" && ok || bad "tir $cmd --$flag: $(head -n 1 "$tmp/e1")"
	"$tir" "$cmd" $args "--$flag=1" >/dev/null 2>"$tmp/e1"
	s=$?
	[ $s -eq 2 ] && grep -q "^tir $cmd: --$flag takes no value" "$tmp/e1" && ok ||
		bad "tir $cmd --$flag=1: exit $s, $(head -n 1 "$tmp/e1")"
done

# the help: one text, from the table
"$tir" help >"$tmp/usage" 2>&1 && ok || bad "tir help failed"
for cmd in $(printf '%s\n' "$rows" | awk '{ print $1 }' | sort -u) check inspect; do
	grep -q "^  tir $cmd " "$tmp/usage" && ok || bad "tir help does not list tir $cmd"
	"$tir" help "$cmd" >"$tmp/h1" 2>&1 || bad "tir help $cmd failed"
	"$tir" "$cmd" --help >"$tmp/h2" 2>&1 || bad "tir $cmd --help failed"
	"$tir" "$cmd" -h >"$tmp/h3" 2>&1 || bad "tir $cmd -h failed"
	cmp -s "$tmp/h1" "$tmp/h2" && cmp -s "$tmp/h1" "$tmp/h3" && ok ||
		bad "tir help $cmd, tir $cmd --help and -h differ"
	grep -q "^  -h, --help " "$tmp/h1" && ok || bad "tir help $cmd does not list -h, --help"
	printf '%s\n' "$rows" | awk -v c="$cmd" '$1 == c { print $2, $3 }' >"$tmp/mine"
	while read -r flag value; do
		if [ "$value" = NULL ]; then
			grep -q "^  --$flag\( \|$\)" "$tmp/h1"
		else
			grep -q "^  --$flag $value\( \|$\)" "$tmp/h1"
		fi && ok || bad "tir help $cmd does not list --$flag"
	done <"$tmp/mine"
done

# operands stay where they are given
"$tir" run --quiet "$tmp/p.tir" --input "x=$tmp/x.npy" >"$tmp/a" 2>&1
"$tir" run --quiet --input "x=$tmp/x.npy" "$tmp/p.tir" >"$tmp/b" 2>&1
"$tir" run --quiet --input="x=$tmp/x.npy" -- "$tmp/p.tir" >"$tmp/c" 2>&1
grep -q '0\.123457' "$tmp/a" && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/a" "$tmp/c" && ok ||
	bad "the program before, after the flags, after --: different output"
case $tir in /*) here=$tir ;; *) here=$(pwd)/$tir ;; esac
cp "$tmp/p.tir" "$tmp/--quiet"
(cd "$tmp" && "$here" run --input x=x.npy -- --quiet) >"$tmp/d" 2>"$tmp/e1" &&
	cmp -s "$tmp/a" "$tmp/d" && grep -q '^parse ' "$tmp/e1" && ok ||
	bad "tir run -- --quiet did not run the file named --quiet"
cp "$tmp/p.tir" "$tmp/-"
(cd "$tmp" && "$here" check -) >/dev/null 2>&1 && ok || bad "tir check - did not check the file named -"

# misuse: exit 2, said
misuse() {
	want=$1
	shift
	"$tir" "$@" >/dev/null 2>"$tmp/e1" </dev/null
	s=$?
	[ $s -eq 2 ] && grep -q -- "$want" "$tmp/e1" && ok || bad "tir $*: exit $s, $(head -n 1 "$tmp/e1")"
}
misuse "^tir run: unknown option '--bogus'" run "$tmp/p.tir" --bogus
misuse "^tir run: unknown option '--thr'" run "$tmp/p.tir" --thr 2
misuse "^tir run: unknown option '--thr=2'" run "$tmp/p.tir" --thr=2
misuse "^tir run: unknown option '-x'" run "$tmp/p.tir" -x
misuse "^tir run: --input needs a value" run "$tmp/p.tir" --input
misuse "^tir run: one program at a time; 'b' is a second one" run "$tmp/p.tir" b
misuse "^tir run: which program? tir run FILE.tir" run --quiet
misuse "^tir serve: unknown option '--por' (tir help serve)" serve --por 1
misuse "^tir serve: --port needs a value (tir help serve)" serve --port
misuse "^tir serve: unexpected 'extra' (tir help serve)" serve extra
misuse "^tir repl: unknown option '--bogus'" repl --bogus
misuse "^tir repl: --remote needs a value" repl --remote
misuse "^tir fmt: unknown option '--dot2'" fmt "$tmp/p.tir" --dot2
misuse "^tir check: which program? tir check FILE.tir" check
misuse "^tir inspect: which file? tir inspect FILE\.\.\." inspect

suite_end
