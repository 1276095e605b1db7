#!/bin/sh
# tests/suites/remote.sh — `tir run --remote` and the REPL's .remote against
# `tir serve` on loopback (servers started here on free ports and stopped
# here), and against fakes (tests/net/remote_fake.py) for what a real
# server does not do.  Each check is one count; one line per failure; the
# last line is "N passed, M failed".  Run from the repository root
# (tests/run.sh does); BUILD picks the build (default build); TIR_SERVE_BIN
# another tir binary to serve (the client of this build against the server
# of another).
#
#  1. every sample and every golden case that runs a program (run, repl):
#     the same stdout, stderr and exit status remote and local (errors and
#     --explain read the same), byte for byte against a local run of the
#     same program with the same options made here (not the golden files:
#     those hold what this machine's BLAS need not print to the last digit,
#     while local and remote on one machine print the same bytes);
#  2. --save and --input remote: the same .npy bytes, the same values;
#  3. the blob cache by byte counts: the second run of a model with a
#     loaded weight sends no blob bytes (--profile's "blobs:" line); the
#     first run of samples/gpt2.tir (149 blobs) on a fresh server takes at
#     most 4 round trips (its blobs in one POST /v1/blobs);
#  4. a runtime error, a missing input: the same stderr remote and local;
#  5. failures exit 3 with the remote named, promptly: a closed port, a
#     server killed mid-batch, one that never answers (TIR_TIMEOUT), one
#     speaking protocol 1 (an old server), not tir, a malformed or truncated reply; a wrong
#     or missing token says the token was refused; a server whose
#     --max-inflight is full (503, Retry-After) is waited for; SIGINT and
#     SIGTERM stop a long remote run at once (exit 130, 143), the session
#     deleted and the batch stopped on the server; a client killed (-9)
#     has its batch stopped too, and the next client is answered at once;
#  6. a REPL transcript (piped) is the same remote and local, .remote
#     switches, .reset keeps the remote, a session that expired is made
#     again; at a terminal (tests/net/remote_pty.py) Ctrl-C stops a remote
#     computation.
#
# Nothing here depends on the machine's speed: a check that needs a batch
# running (or a session expired, a 503 met) when it acts waits for the
# server to say so (/metrics, its log: tests/net/wait_for.py, at most 60 s),
# and the long batches are chains of matmuls that no machine finishes
# within the test (each kernel short, so that a stop is prompt); the bounds
# on how long something took are there only for promises ("at once") and
# hold on one CPU shared with two busy loops.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
serve_tir=${TIR_SERVE_BIN:-$tir}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-remote.XXXXXX") || exit 1
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
unset TIR_TOKEN TIR_TIMEOUT
passed=0
failed=0

pass() { passed=$((passed + 1)); }
fail() {
	echo "remote $1: FAILED: $2"
	failed=$((failed + 1))
}

if [ ! -x "$tir" ]; then
	echo "remote: $tir is missing"
	echo "0 passed, 1 failed"
	exit 1
fi

# start_server LOG [ARGS...]: `tir serve --port 0 ARGS` in the background;
# sets spid and addr (127.0.0.1:PORT from its "listening" line); 1 if it
# does not start within 60 s
start_server() {
	log=$1
	shift
	: >"$log"
	"$serve_tir" serve --port 0 "$@" 2>"$log" &
	spid=$!
	pids="$pids $spid"
	addr=
	i=0
	while [ $i -lt 1200 ]; do
		port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) (protocol 4)$|\1|p' "$log")
		if [ -n "$port" ]; then
			addr=127.0.0.1:$port
			return 0
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# stop PID: SIGTERM, then wait for it (a server stops cleanly)
stop() {
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# start_fake MODE: tests/net/remote_fake.py MODE; sets fpid and faddr
start_fake() {
	: >"$tmp/fake.port"
	"$py" tests/net/remote_fake.py "$1" >"$tmp/fake.port" &
	fpid=$!
	pids="$pids $fpid"
	faddr=
	i=0
	while [ $i -lt 1200 ]; do
		p=$(head -n 1 "$tmp/fake.port")
		if [ -n "$p" ]; then
			faddr=127.0.0.1:$p
			return 0
		fi
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# now_ms: wall clock in milliseconds
now_ms() { "$py" -c 'import time; print(int(time.time() * 1000))'; }

# wait_metric ADDR NAME OP VALUE: until the server's /metrics has NAME OP
# VALUE (== or >=); wait_log FILE REGEX [COUNT]: until COUNT lines (default
# 1) of FILE match REGEX (Python's).  At most 60 s each; 1, and what was
# seen last on stderr, when not.
wait_metric() { "$py" tests/net/wait_for.py metric "$@"; }
wait_log() { "$py" tests/net/wait_for.py log "$@"; }

# running NAME ADDR CPID: 0 once ADDR's /metrics says a batch runs;
# otherwise a failure for NAME, client CPID killed and waited for, and 1
running() {
	why=$(wait_metric "$2" tir_batches_running == 1 2>&1) && return 0
	fail "$1" "the batch was not seen running: $why"
	kill -9 "$3" 2>/dev/null
	wait "$3"
	return 1
}

# reap PID: wait for PID (a child started here) to end, for at most 60 s,
# then kill it; its exit status in st
reap() {
	i=0
	while [ $i -lt 3000 ]; do
		# the state in /proc/PID/stat: Z once it ended (not yet waited for)
		case $(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) in
		Z | "") break ;;
		esac
		sleep 0.02
		i=$((i + 1))
	done
	[ $i -lt 3000 ] || kill -9 "$1" 2>/dev/null
	wait "$1"
	st=$?
}

if ! start_server "$tmp/serve.log"; then
	fail "server" "tir serve --port 0 did not start"
	cat "$tmp/serve.log"
	echo "$passed passed, $failed failed"
	exit 1
fi
main_pid=$spid
main_addr=$addr

# samples/mlp.tir run here: what a remote run of it must print (the right
# token, the client after a killed one)
timeout 60 "$tir" run --quiet samples/mlp.tir >"$tmp/mlp.out" 2>/dev/null

# ---- 1. samples and golden cases ----

# every sample, remote and here with the same options: exit 0, nothing on
# stderr, the same stdout
for f in samples/*.tir; do
	name=${f##*/}
	name=${name%.tir}
	timeout 60 "$tir" run --quiet "$f" >"$tmp/lout" 2>"$tmp/lerr"
	lst=$?
	timeout 60 "$tir" run --quiet "$f" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne 0 ] || [ $lst -ne 0 ]; then
		fail "sample $name" "exit status $st remote, $lst local"
		head -n 5 "$tmp/err"
	elif [ -s "$tmp/err" ]; then
		fail "sample $name" "output on stderr"
		head -n 5 "$tmp/err"
	elif ! diff -u "$tmp/lout" "$tmp/out" >"$tmp/diff"; then
		fail "sample $name" "stdout differs remote and local"
		head -n 20 "$tmp/diff"
	else
		pass
	fi
done
# the second time every graph is cached on the server: the same again, op by op too
for f in samples/*.tir; do
	name=${f##*/}
	name=${name%.tir}
	timeout 60 "$tir" run --quiet --no-fuse "$f" >"$tmp/lout" 2>"$tmp/lerr"
	lst=$?
	timeout 60 "$tir" run --quiet --no-fuse "$f" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne 0 ] || [ $st -ne $lst ] || [ -s "$tmp/err" ] || ! cmp -s "$tmp/lout" "$tmp/out"; then
		fail "sample $name" "--no-fuse remote, a second time: exit $st ($lst local) or output differs"
		head -n 5 "$tmp/err"
	else
		pass
	fi
done

# the golden cases that run a program, with the command their first line
# names and --remote: stdout and status as the same command run here, and
# stderr too where the case has a .err (--explain shows the server's plan,
# with the user's names put back: the same text; --profile's timings differ)
for f in tests/golden/*.tir tests/golden/*.gen; do
	[ -f "$f" ] || continue
	name=${f##*/}
	name=${name%.*}
	case $f in *.tir) [ -f "tests/golden/$name.gen" ] && continue ;; esac
	dir=$root/tests/golden
	if [ -f "$dir/$name.gen" ]; then
		dir=$tmp/gen
		rm -rf "$dir" && mkdir -p "$dir"
		sh "$root/tests/golden/$name.gen" >"$dir/$name.tir" || continue
	fi
	line=$(head -n 1 "$dir/$name.tir" | tr -d '\r')
	case $line in
	"# tir: "*) cmd=${line#"# tir: "} ;;
	*) cmd="run --quiet" ;;
	esac
	# shellcheck disable=SC2086 # the command line: split on purpose
	set -- $cmd
	verb=$1
	shift
	case $verb in run | repl) ;; *) continue ;; esac
	if [ "$verb" = repl ]; then
		(cd "$dir" && timeout 20 "$tir" repl "$@" --remote "$main_addr" <"$name.tir" >"$tmp/out" 2>"$tmp/err")
	else
		(cd "$dir" && timeout 20 "$tir" run "$name.tir" "$@" >"$tmp/lout" 2>"$tmp/lerr")
		want=$?
		(cd "$dir" && timeout 20 "$tir" run "$name.tir" "$@" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err")
	fi
	st=$?
	if [ "$verb" = repl ]; then
		# .remote lines in a transcript change where it runs: compare with
		# the same transcript run here, without them
		sed '/^[ 	]*\.remote/d' "$dir/$name.tir" >"$tmp/t.tir"
		(cd "$dir" && timeout 20 "$tir" repl <"$tmp/t.tir" >"$tmp/lout" 2>"$tmp/lerr")
		want=$?
		(cd "$dir" && timeout 20 "$tir" repl --remote "$main_addr" <"$tmp/t.tir" >"$tmp/out" 2>"$tmp/err")
		st=$?
		expect_out=$tmp/lout
		expect_err=$tmp/lerr
	else
		expect_out=$tmp/lout
		expect_err=$tmp/lerr
		[ -f "tests/golden/$name.err" ] || expect_err=/nonexistent
		case " $* " in *" --profile "*) expect_err=/nonexistent ;; esac
	fi
	if [ "$want" -eq 124 ]; then
		fail "golden $name" "the local run timed out (20 s)"
	elif [ $st -ne "$want" ]; then
		fail "golden $name" "exit status $st, expected $want"
		head -n 5 "$tmp/err"
	elif ! diff -u "$expect_out" "$tmp/out" >"$tmp/diff"; then
		fail "golden $name" "stdout differs"
		head -n 20 "$tmp/diff"
	elif [ -f "$expect_err" ] && ! diff -u "$expect_err" "$tmp/err" >"$tmp/diff"; then
		fail "golden $name" "stderr differs"
		head -n 20 "$tmp/diff"
	else
		pass
	fi
done

# ---- 2. --save, --input ----

cat >"$tmp/save.tir" <<'EOF'
input x: f32[3, 4]
w = randn([4, 5], seed=11)
y = tanh(x @ w) * 3
k = argmax(y, axis=1)
b = gt(y, 0)
print sum(y)
EOF
"$py" -c "import numpy as np; np.save('$tmp/x.npy', np.arange(12, dtype=np.float32).reshape(3, 4) / 7)"
"$tir" run --quiet "$tmp/save.tir" --input "x=$tmp/x.npy" --save "y=$tmp/yl.npy" --save "k=$tmp/kl.npy" \
	--save "b=$tmp/bl.npy" >"$tmp/lout" 2>&1
"$tir" run --quiet "$tmp/save.tir" --input "x=$tmp/x.npy" --save "y=$tmp/yr.npy" --save "k=$tmp/kr.npy" \
	--save "b=$tmp/br.npy" --remote "$main_addr" >"$tmp/out" 2>&1
st=$?
if [ $st -ne 0 ]; then
	fail "save" "exit status $st"
	head -n 5 "$tmp/out"
elif ! cmp -s "$tmp/yl.npy" "$tmp/yr.npy" || ! cmp -s "$tmp/kl.npy" "$tmp/kr.npy" || ! cmp -s "$tmp/bl.npy" "$tmp/br.npy"; then
	fail "save" "the .npy files differ remote and local"
elif ! cmp -s "$tmp/lout" "$tmp/out"; then
	fail "save" "stdout with --input differs remote and local"
else
	pass
fi

# ---- 3. the blob cache, by byte counts ----

"$py" -c "
import numpy as np
rng = np.random.default_rng(5)
np.save('$tmp/w.npy', rng.standard_normal((256, 128), dtype=np.float32))
np.save('$tmp/w2.npy', rng.standard_normal((256, 128), dtype=np.float32))
"
cat >"$tmp/model.tir" <<EOF
w = load("$tmp/w.npy")
x = rand([8, 256], seed=3)
c = [1.0, -1.0, 0.5, 2.0]
h = relu(x @ w)
print sum(h, axis=1), c * 2
EOF
"$tir" run "$tmp/model.tir" >"$tmp/lout" 2>/dev/null
blobs() { sed -n 's/^blobs: \(.*\)$/\1/p' "$1"; }
timeout 20 "$tir" run --profile "$tmp/model.tir" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err"
st=$?
# a blob's bytes up: its chunk list (16 + 32 a chunk of 256 KiB), its frame
frame=$((16 + 32 + 16 + 16 + 256 * 128 * 4))
lit=$((16 + 32 + 16 + 8 + 16))
if [ $st -ne 0 ] || ! cmp -s "$tmp/lout" "$tmp/out"; then
	fail "blob cache" "first run: exit $st or stdout differs"
	head -n 5 "$tmp/err"
elif [ "$(blobs "$tmp/err")" != "0 cached, 2 sent ($((frame + lit)) bytes); graph: sent" ]; then
	fail "blob cache" "first run says '$(blobs "$tmp/err")', expected 2 blobs of $((frame + lit)) bytes sent"
else
	pass
fi
timeout 20 "$tir" run --profile "$tmp/model.tir" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err"
st=$?
up=$(sed -n 's/.* · net [0-9.]* ms (\([0-9]*\) round trips, \([0-9.]* [KMG]*i*B\) up, .*/\1 \2/p' "$tmp/err")
if [ $st -ne 0 ] || ! cmp -s "$tmp/lout" "$tmp/out"; then
	fail "blob cache" "second run: exit $st or stdout differs"
elif [ "$(blobs "$tmp/err")" != "2 cached, 0 sent (0 bytes); graph: cached" ]; then
	fail "blob cache" "second run says '$(blobs "$tmp/err")', expected 2 cached, 0 sent"
else
	# two round trips (the session, the run), and well under the weight's bytes up
	set -- $up
	case "${2:-}" in
	*KiB | *MiB | *GiB) fail "blob cache" "second run sent $2 up (round trips: ${1:-?})" ;;
	*) if [ "${1:-0}" -eq 2 ]; then pass; else fail "blob cache" "second run took ${1:-?} round trips"; fi ;;
	esac
fi
# another weight of the same shape: the graph is cached, only the new blob goes up
sed "s|$tmp/w.npy|$tmp/w2.npy|" "$tmp/model.tir" >"$tmp/model2.tir"
"$tir" run --quiet "$tmp/model2.tir" >"$tmp/lout" 2>/dev/null
timeout 20 "$tir" run --profile "$tmp/model2.tir" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err"
if ! cmp -s "$tmp/lout" "$tmp/out"; then
	fail "blob cache" "another weight: stdout differs"
elif [ "$(blobs "$tmp/err")" != "1 cached, 1 sent ($frame bytes); graph: cached" ]; then
	fail "blob cache" "another weight: '$(blobs "$tmp/err")', expected 1 cached, 1 sent ($frame bytes), graph cached"
else
	pass
fi

# a fresh server and a checkpoint of 152 tensors (149 blobs): they go up together
# (POST /v1/blobs), so the first run takes 4 round trips (the session, the
# run answered 409, the blobs, the run), not one a blob
if start_server "$tmp/serve_rt.log"; then
	"$tir" run samples/gpt2.tir >"$tmp/lout" 2>/dev/null
	timeout 60 "$tir" run --profile samples/gpt2.tir --remote "$addr" >"$tmp/out" 2>"$tmp/err"
	st=$?
	set -- $(sed -n 's/.* · net [0-9.]* ms (\([0-9]*\) round trips, .*/\1/p' "$tmp/err") ""
	if [ $st -ne 0 ] || ! cmp -s "$tmp/lout" "$tmp/out"; then
		fail "round trips" "gpt2 on a fresh server: exit $st or stdout differs"
	elif [ -z "$1" ] || [ "$1" -gt 4 ]; then
		fail "round trips" "gpt2 on a fresh server took ${1:-?} round trips (at most 4)"
	elif ! grep -q '^blobs: 0 cached, 1[0-9][0-9] sent' "$tmp/err"; then
		fail "round trips" "gpt2 on a fresh server: '$(blobs "$tmp/err")', expected over 100 blobs sent"
	else
		pass
	fi
	stop "$spid"
else
	fail "round trips" "the server did not start"
fi

# ---- 4. errors read the same ----

# check_same NAME FILE [ARGS...]: stdout, stderr and status equal remote and local
check_same() {
	n=$1
	f=$2
	shift 2
	(cd "$tmp" && timeout 20 "$tir" run --quiet "$f" "$@" >"$tmp/lout" 2>"$tmp/lerr")
	lst=$?
	(cd "$tmp" && timeout 20 "$tir" run --quiet "$f" "$@" --remote "$main_addr" >"$tmp/out" 2>"$tmp/err")
	st=$?
	if [ $st -ne $lst ]; then
		fail "$n" "exit status $st remote, $lst local"
		head -n 3 "$tmp/err"
	elif ! cmp -s "$tmp/lout" "$tmp/out"; then
		fail "$n" "stdout differs remote and local"
	elif ! diff -u "$tmp/lerr" "$tmp/err" >"$tmp/diff"; then
		fail "$n" "stderr differs remote and local"
		cat "$tmp/diff"
	else
		pass
	fi
}

printf 'a = arange(6)\nb = a - 3\nprint a\nc = (a * 2) / sub(b, b)\nprint c + 1\n' >"$tmp/div.tir"
check_same "runtime error" div.tir
printf 'x = arange(4)\ni = [0, 7]\nprint gather(x, i, axis=0)\n' >"$tmp/gather.tir"
check_same "index error" gather.tir
printf 'input x: f32[3, 4]\ny = x * 2\nprint y\n' >"$tmp/noinput.tir"
check_same "missing input" noinput.tir
check_same "input given" noinput.tir --input "x=$tmp/x.npy"
printf 'x = ones([2, 2]) @ ones([2, 3])\ny = to(x, 1)\nprint y\n' >"$tmp/device.tir"
check_same "device op" device.tir
printf 'x = relux(ones([2]))\n' >"$tmp/syntax.tir"
check_same "program error" syntax.tir
printf 'x = 1\n' >"$tmp/noprint.tir"
check_same "nothing printed" noprint.tir
# the storage dtypes cross the wire both ways: an f16 input uploaded, bf16,
# i8 and u8 values computed there and printed here, an f16 result saved
"$py" -c 'import numpy as np, sys; np.save(sys.argv[1], (np.arange(12).reshape(3, 4) / 7).astype(np.float16))' "$tmp/h.npy"
printf 'input h: f16[3, 4]\nb = cast(h, bf16) * 3\nq = cast(h * 100, i8) + cast(h * 100, i8)\nprint h * h, b, q, cast(q, u8)\n' >"$tmp/half.tir"
check_same "f16, bf16, i8, u8 values" half.tir --input "h=$tmp/h.npy"
(cd "$tmp" && timeout 20 "$tir" run --quiet half.tir --input "h=$tmp/h.npy" --save "b=$tmp/lb.safetensors" --save "q=$tmp/lq.npy" >/dev/null 2>&1)
(cd "$tmp" && timeout 20 "$tir" run --quiet half.tir --input "h=$tmp/h.npy" --save "b=$tmp/rb.safetensors" --save "q=$tmp/rq.npy" --remote "$main_addr" >/dev/null 2>&1)
if cmp -s "$tmp/lb.safetensors" "$tmp/rb.safetensors" && cmp -s "$tmp/lq.npy" "$tmp/rq.npy"; then
	pass
else
	fail "f16 saves" "a bf16 or i8 value saved from a remote run differs from the local one"
fi
printf 'print 2.5, 3, true, -inf\nprint [1.5, 2.5] * 2\n' >"$tmp/scalars.tir"
check_same "scalars" scalars.tir

# ---- 5. failures: exit 3, the remote named, promptly ----

# expect3 NAME MAX_MS PATTERN CMD...: exit status 3 within MAX_MS ms and
# a stderr matching PATTERN (grep -E).  The bounds below are a few seconds
# for what takes some 10 ms (a refused connection, a reply read): "at
# once", on one loaded CPU too.
expect3() {
	n=$1
	max=$2
	pat=$3
	shift 3
	t0=$(now_ms)
	"$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	t=$(($(now_ms) - t0))
	judge3 "$n" "$max" "$pat"
}

# judge3 NAME MAX_MS PATTERN: expect3's verdict on st, t, out and err
judge3() {
	n=$1
	max=$2
	pat=$3
	if [ $st -ne 3 ]; then
		fail "$n" "exit status $st, expected 3"
		head -n 3 "$tmp/err"
	elif [ $t -gt "$max" ]; then
		fail "$n" "took $t ms (at most $max)"
	elif ! grep -Eq "$pat" "$tmp/err"; then
		fail "$n" "stderr does not say /$pat/:"
		head -n 3 "$tmp/err"
	elif [ -s "$tmp/out" ]; then
		fail "$n" "something on stdout"
	else
		pass
	fi
}

# a port nobody listens on: a closed server's
start_server "$tmp/serve2.log" && stop "$spid"
closed=$addr
expect3 "closed port" 2000 "^tir: remote $closed: cannot connect" \
	"$tir" run --quiet samples/mlp.tir --remote "$closed"

# The long batch: a chain of 20,000 2048 x 2048 matmuls, each 17 GFLOP
# (some 0.1 s on one core here, a few ms on the fastest machines), so that
# no machine is near its end when the test acts on it (minutes at the very
# least), while a stop between two kernels is prompt.  A chain holds two
# or three tensors at a time; w is scaled by 1/sqrt(2048), so that the
# values stay far from overflow and from denormals (which would slow the
# kernels down).
"$py" -c "
lines = ['w = randn([2048, 2048], seed=1) * 0.0221', 'x0 = w']
lines += ['x%d = x%d @ w' % (i + 1, i) for i in range(20000)]
open('$tmp/chain.tir', 'w').write('\n'.join(lines + ['print sum(x20000)']) + '\n')
"

# a server killed (kill -9) in the middle of a long batch: once the server
# says the batch runs, the client exits 3 at once
if start_server "$tmp/serve3.log"; then
	kpid=$spid
	"$tir" run --quiet "$tmp/chain.tir" --remote "$addr" >"$tmp/out" 2>"$tmp/err" &
	cpid=$!
	pids="$pids $cpid"
	if ! running "server killed" "$addr" "$cpid"; then
		kill -9 "$kpid" 2>/dev/null
	else
		t0=$(now_ms)
		kill -9 "$kpid"
		reap "$cpid"
		t=$(($(now_ms) - t0))
		judge3 "server killed" 5000 "^tir: remote $addr: "
	fi
	wait "$kpid" 2>/dev/null
else
	fail "server killed" "the server did not start"
fi

# fakes
if start_fake silent; then
	# 2 s of TIR_TIMEOUT, and then at once: no answer to its first
	# question, /v1/info, is no lone server (a rank of a group forming)
	TIR_TIMEOUT=2 expect3 "no answer" 5000 "^tir: remote $faddr: no answer to /v1/info within 2 s \(a rank of a group still forming, or a server stopped\); it is not used as a lone server$" \
		"$tir" run --quiet samples/mlp.tir --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake proto1; then
	expect3 "protocol 1 (an old server)" 2000 "^tir: remote $faddr speaks tir protocol 1; this tir speaks 4$" \
		"$tir" run --quiet samples/mlp.tir --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake noproto; then
	expect3 "not tir" 2000 "^tir: remote $faddr does not speak the tir protocol" \
		"$tir" run --quiet samples/mlp.tir --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake garbage; then
	expect3 "garbage reply" 2000 "^tir: remote $faddr: the reply is not a results body$" \
		"$tir" run --quiet samples/mlp.tir --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake short; then
	expect3 "truncated reply" 2000 "^tir: remote $faddr: the reply was cut short" \
		"$tir" run --quiet samples/mlp.tir --remote "$faddr"
	kill -9 "$fpid"
fi
printf 'print ones([3])\n' >"$tmp/one.tir"
if start_fake badframe; then
	expect3 "malformed result" 2000 "^tir: remote $faddr: result 1: tensor frame: byte 8: " \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake wrongtype; then
	expect3 "a result of another type" 2000 "^tir: remote $faddr: result 1 is not the f32\[3\] asked for$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake extra; then
	expect3 "bytes after the results" 2000 "^tir: remote $faddr: the reply goes on after the last result \(1 asked for\); stopped reading it$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
# what the client reads is bounded by what it asked for, whatever the
# server announces: each of these would stream 8 GB
if start_fake endless; then
	expect3 "results announcing 8 GB" 5000 "^tir: remote $faddr: the reply goes on after the last result \(1 asked for\); stopped reading it$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake bigerror; then
	expect3 "an error body announcing 8 GB" 5000 "^tir: remote $faddr: a reply of more than 16 MiB that is not results; stopped reading it$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake bigmeta; then
	expect3 "4 GiB of metadata" 5000 "^tir: remote $faddr: results: 4294967280 bytes of metadata, more than the 64 MiB a client reads$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
if start_fake hugeshape; then
	expect3 "a result of shape [2^32, 2^32]" 2000 "^tir: remote $faddr: result 1: tensor frame: more than 4294967296 elements, the most a tensor holds$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
# a connect that never completes (the fake's accept queue is full, so the
# kernel drops the SYNs): the client gives up after its 5 s, and says so
if start_fake backlog; then
	TIR_TIMEOUT=30 expect3 "connect never completes" 12000 "^tir: remote $faddr: cannot connect within 5 s$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
# a server that stops answering on a connection already made is not one
# that cannot be reached
if start_fake stall; then
	TIR_TIMEOUT=2 expect3 "stalled after the session" 5000 "^tir: remote $faddr: no answer within 2 s \(TIR_TIMEOUT\)$" \
		"$tir" run --quiet "$tmp/one.tir" --remote "$faddr"
	kill -9 "$fpid"
fi
# results decoded as they come: a reply a few bytes at a time
if start_fake trickle; then
	timeout 20 "$tir" run --quiet "$tmp/one.tir" --remote "$faddr" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne 0 ] || [ "$(tail -n 1 "$tmp/out")" != "[1, 2, 3]" ]; then
		fail "results in pieces of 3 bytes" "exit $st, stdout '$(cat "$tmp/out")'"
		head -n 3 "$tmp/err"
	else
		pass
	fi
	kill -9 "$fpid"
fi

# --max-memory: a batch whose plan would pass the budget is refused before
# anything is made, said at the op of the largest value held at its peak
# (exit 3); the server serves on.  An upload over it: 413.
printf 'x = randn([4096, 4096], seed=1)\ny = x @ x\nprint sum(y)\n' >"$tmp/big.tir"
"$py" -c "
import numpy as np
np.save('$tmp/huge.npy', np.zeros(20 << 20, np.float32))
"
printf 'input h: f32[20971520]\nprint sum(h)\n' >"$tmp/huge.tir"
if start_server "$tmp/serve6.log" --max-memory 64M; then
	expect3 "over --max-memory: at the op" 60000 "^$tmp/big.tir:2:7: error: remote $addr: matmul: the batch would hold 128 MiB at its peak \(64 MiB of it this value, the largest then\); the memory budget has 64 MiB left of 64 MiB \(--max-memory\)$" \
		"$tir" run --quiet "$tmp/big.tir" --remote "$addr"
	grep -q '^          \^$' "$tmp/err" && pass || fail "over --max-memory: the caret" "$(cat "$tmp/err")"
	# (Python's, not curl: a fresh Debian has no curl command)
	m=$("$py" -c "import urllib.request; print(urllib.request.urlopen('http://$addr/metrics', timeout=20).read().decode())")
	echo "$m" | grep -q '^tir_memory_budget_bytes 67108864$' && pass || fail "/metrics: the budget" "$m"
	held=$(echo "$m" | sed -n 's/^tir_tensor_bytes //p')
	[ -n "$held" ] && [ "$held" -lt 1048576 ] && pass || fail "over --max-memory: the batch's tensors let go" "tir_tensor_bytes $held"
	"$tir" run --quiet samples/mlp.tir >"$tmp/local" 2>&1
	"$tir" run --quiet samples/mlp.tir --remote "$addr" >"$tmp/out" 2>&1
	cmp -s "$tmp/out" "$tmp/local" && pass || fail "under --max-memory: the server serves on" "$(head -n 3 "$tmp/out")"
	expect3 "an upload over --max-memory: 413" 60000 "^tir: remote $addr: 413 too_large: a tensor of 83886080 bytes is over the memory budget of 67108864 bytes \(--max-memory\)" \
		"$tir" run --quiet "$tmp/huge.tir" --input h="$tmp/huge.npy" --remote "$addr"
	stop "$spid"
else
	fail "--max-memory" "the server did not start"
fi

# tokens
if start_server "$tmp/serve4.log" --token s3cret; then
	tpid=$spid
	TIR_TOKEN=wrong expect3 "wrong token" 2000 "^tir: remote $addr refused the token: set TIR_TOKEN" \
		"$tir" run --quiet samples/mlp.tir --remote "$addr"
	expect3 "no token" 2000 "^tir: remote $addr refused the token: set TIR_TOKEN" \
		"$tir" run --quiet samples/mlp.tir --remote "$addr"
	TIR_TOKEN=s3cret "$tir" run --quiet samples/mlp.tir --remote "$addr" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne 0 ] || ! cmp -s "$tmp/mlp.out" "$tmp/out"; then
		fail "right token" "exit status $st or stdout differs"
		head -n 3 "$tmp/err"
	else
		pass
	fi
	stop "$tpid"
else
	fail "tokens" "the server did not start"
fi

# usage
# (several remotes work: tests/suites/devices.sh; a list too long or with a hole is a usage error)
"$tir" run --quiet samples/mlp.tir --remote "a:1,,b:2" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -ne 2 ] || ! grep -q "server 1 of the list is empty" "$tmp/err"; then
	fail "an empty server in --remote" "exit status $st: $(cat "$tmp/err")"
else
	pass
fi
many=$(i=0; while [ $i -lt 64 ]; do printf 'h:%d,' $((i + 1)); i=$((i + 1)); done)
"$tir" run --quiet samples/mlp.tir --remote "${many%,}" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -ne 2 ] || ! grep -q "names 64 servers; at most 63 at once" "$tmp/err"; then
	fail "64 servers in --remote" "exit status $st: $(cat "$tmp/err")"
else
	pass
fi

# a server whose --max-inflight is full answers a big upload 503 with
# Retry-After: the client waits, sends it again, and the run succeeds
if start_server "$tmp/serve5.log" --max-body 16M --max-inflight 20M; then
	bpid=$spid
	"$py" -c "import numpy as np; np.save('$tmp/big.npy', np.arange(2 << 20, dtype=np.float32))"
	printf 'input x: f32[2097152]\nprint max(x), sum(gt(x, 7.0))\n' >"$tmp/big.tir"
	"$tir" run --quiet "$tmp/big.tir" --input "x=$tmp/big.npy" >"$tmp/lout" 2>&1
	# a client that announces 15 MiB and sends a little: the server holds
	# its share of the budget while it is there, until the server's log
	# says that the run below met a 503 (at most 60 s); it was held if the
	# server had not answered it by then
	"$py" - "${addr#*:}" "$tmp/serve5.log" >"$tmp/hold.out" 2>&1 <<'EOF' &
import socket, sys
sys.path.insert(0, "tests/net")
from wait_for import wait_log
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"PUT /v1/blobs/" + b"d" * 64 + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 15728640\r\n\r\n" + b"\0" * 4096)
seen, _ = wait_log(sys.argv[2], "^PUT /v1/blobs/[0-9a-f]{8}\u2026 503 ")
s.setblocking(False)
try:
    print("answered", s.recv(100))
except BlockingIOError:
    print("held" if seen else "held, but no 503 in the log within 60 s")
s.close()
EOF
	hpid=$!
	pids="$pids $hpid"
	# the run once the server holds the 15 MiB (5 MiB of the budget left)
	if ! why=$(wait_metric "$addr" tir_inflight_body_bytes == 15728640 2>&1); then
		echo "the server did not hold the 15 MiB: $why" >"$tmp/err"
		st=1
		t=0
	else
		t0=$(now_ms)
		timeout 60 "$tir" run --quiet "$tmp/big.tir" --input "x=$tmp/big.npy" --remote "$addr" >"$tmp/out" 2>"$tmp/err"
		st=$?
		t=$(($(now_ms) - t0))
	fi
	bst=$st
	reap "$hpid"
	if [ "$(cat "$tmp/hold.out")" != held ]; then
		fail "busy server" "the holding client was not held: $(cat "$tmp/hold.out")"
	elif [ $bst -ne 0 ] || ! cmp -s "$tmp/lout" "$tmp/out"; then
		fail "busy server" "exit status $bst or stdout differs (${t} ms)"
		head -n 3 "$tmp/err"
	elif ! grep -q '^PUT /v1/blobs/[0-9a-f]\{8\}… 503 ' "$tmp/serve5.log" ||
		! grep -q '^PUT /v1/blobs/[0-9a-f]\{8\}… 201 ' "$tmp/serve5.log"; then
		fail "busy server" "the log has no 503 then 201 for the blob"
		grep PUT "$tmp/serve5.log" | head -n 5
	else
		pass
	fi
	stop "$bpid"
else
	fail "busy server" "the server did not start"
fi

# SIGINT (SIGTERM) in the middle of a long remote batch (the chain above,
# once the server says it runs): `tir: interrupted` and exit 130 (143) at
# once, the session deleted, the batch stopped there
stopped='^POST /v1/sessions/[0-9a-f]{8}\S*/run 499 .*its batch was stopped after'
if start_server "$tmp/serve6.log"; then
	ipid=$spid
	nstopped=0
	for sig in INT TERM; do
		want=130
		[ $sig = TERM ] && want=143
		"$tir" run --quiet "$tmp/chain.tir" --remote "$addr" >"$tmp/out" 2>"$tmp/err" &
		cpid=$!
		pids="$pids $cpid"
		running "SIG$sig" "$addr" "$cpid" || continue
		t0=$(now_ms)
		kill -$sig "$cpid"
		reap "$cpid"
		t=$(($(now_ms) - t0))
		# the server logs the stopped batch once it stopped at the end of
		# a kernel; the session of the last one is the one to be deleted
		nstopped=$((nstopped + 1))
		why=$(wait_log "$tmp/serve6.log" "$stopped" $nstopped 2>&1)
		sess=$(sed -n 's|^POST /v1/sessions/\([0-9a-f]\{8\}\)…/run 499 .*|\1|p' "$tmp/serve6.log" | tail -n 1)
		[ -n "$sess" ] && wait_log "$tmp/serve6.log" "^DELETE /v1/sessions/$sess\\S* 204 " >/dev/null 2>&1
		if [ $st -ne $want ] || [ "$(cat "$tmp/err")" != "tir: interrupted" ] || [ -s "$tmp/out" ]; then
			fail "SIG$sig" "exit status $st (expected $want), stderr: $(head -c 200 "$tmp/err")"
		elif [ $t -gt 3000 ]; then
			# at once: the client's own work (its wait cut short, a DELETE
			# answered by the server's HTTP threads), not the batch's
			fail "SIG$sig" "took $t ms to exit"
		elif [ -n "$why" ]; then
			fail "SIG$sig" "the server's log does not say the batch was stopped: $why"
			tail -n 3 "$tmp/serve6.log"
		elif [ -z "$sess" ] || ! grep -q "^DELETE /v1/sessions/$sess… 204 " "$tmp/serve6.log"; then
			fail "SIG$sig" "the server's log has no DELETE of session $sess"
		else
			pass
		fi
	done
	# kill -9: no goodbye, but the server sees the connection close and
	# stops the batch; another client is answered at once
	"$tir" run --quiet "$tmp/chain.tir" --remote "$addr" >/dev/null 2>&1 &
	cpid=$!
	pids="$pids $cpid"
	if running "client killed" "$addr" "$cpid"; then
		kill -9 "$cpid"
		wait "$cpid" 2>/dev/null
		t0=$(now_ms)
		timeout 60 "$tir" run --quiet samples/mlp.tir --remote "$addr" >"$tmp/out" 2>"$tmp/err"
		st=$?
		t=$(($(now_ms) - t0))
		why=$(wait_log "$tmp/serve6.log" "$stopped" 3 2>&1)
		if [ $st -ne 0 ] || ! cmp -s "$tmp/mlp.out" "$tmp/out"; then
			fail "client killed" "the next client: exit status $st or stdout differs"
		elif [ $t -gt 5000 ]; then
			# the batch of the dead client stopped at the end of its kernel
			# (0.1 s here, more on a loaded CPU), not after the minutes the
			# rest of the chain takes on the fastest machine
			fail "client killed" "the next client waited $t ms (the batch of the dead one ran on?)"
		elif [ -n "$why" ]; then
			fail "client killed" "the server's log does not say its batch was stopped: $why"
			tail -n 5 "$tmp/serve6.log"
		else
			pass
		fi
	fi
	stop "$ipid"
else
	fail "SIGINT" "the server did not start"
fi

# ---- 6. the REPL ----

cat >"$tmp/session.txt" <<EOF
a = [1.5, 2, 3]
a * 2
b = exp(a)
.vars
print b, sum(b)
input x: f32[3, 4]
.input x=$tmp/x.npy
y = relu(x @ ones([4, 2]) - 3)
y
.vars
.input x=$tmp/x.npy
y * 1
b = b - 1
print b
w = load("$tmp/w.npy")
sum(w, axis=0)
m = w * 2
sum(m)
.vars
.reset
.vars
z = arange(5)
z * z
q = 1 / 0
print z
EOF
(cd "$tmp" && timeout 20 "$tir" repl <session.txt >"$tmp/lout" 2>"$tmp/lerr")
lst=$?
(cd "$tmp" && timeout 20 "$tir" repl --remote "$main_addr" <session.txt >"$tmp/out" 2>"$tmp/err")
st=$?
if [ $st -ne $lst ] || ! diff -u "$tmp/lout" "$tmp/out" >"$tmp/diff" || ! diff -u "$tmp/lerr" "$tmp/err" >>"$tmp/diff"; then
	fail "repl" "the transcript differs remote and local (exit $st, $lst)"
	head -n 20 "$tmp/diff"
else
	pass
fi
# .remote switches: where runs go, connecting, off again
{
	echo ".remote"
	echo "a = arange(3)"
	echo ".remote $main_addr"
	echo ".remote"
	echo "a * 2"
	echo ".vars"
	echo ".remote $closed"
	echo "a + 1"
	echo ".remote off"
	echo "a + 2"
} >"$tmp/switch.txt"
timeout 20 "$tir" repl <"$tmp/switch.txt" >"$tmp/out" 2>"$tmp/err"
st=$?
cat >"$tmp/want" <<EOF
remote: off (the session computes here)
remote: $main_addr (computations run there)
remote: $main_addr (computations run there)
mul(a, 2): i64[3]
[0, 2, 4]
a  i64[3]  computed
add(a, 1): i64[3]
[1, 2, 3]
remote: off (the session computes here)
add(a, 2): i64[3]
[2, 3, 4]
EOF
if [ $st -ne 1 ] || ! diff -u "$tmp/want" "$tmp/out" >"$tmp/diff"; then
	fail "repl .remote" "exit $st (expected 1: one .remote failed), or stdout differs"
	head -n 20 "$tmp/diff"
elif ! grep -q "^tir: remote $closed: cannot connect" "$tmp/err"; then
	fail "repl .remote" "no 'cannot connect' for a closed port"
	cat "$tmp/err"
else
	pass
fi

# a session that expired while the REPL was idle (its kept values with
# it): a new session, the values made again, nothing lost.  The rest of
# the transcript goes in once b is printed (the REPL flushes each result)
# and the server has no session left (idle past --session-ttl 1, swept).
if start_server "$tmp/serve7.log" --session-ttl 1; then
	epid=$spid
	: >"$tmp/out"
	# shellcheck disable=SC2094 # the REPL's stdout is read on purpose, as it comes
	{
		echo "a = [1, 2]"
		echo "b = a * 2"
		echo "b"
		wait_log "$tmp/out" '^\[2, 4\]$' 2>"$tmp/wait.err" &&
			wait_metric "$addr" tir_sessions == 0 2>"$tmp/wait.err"
		echo "b * 3"
		echo ".vars"
	} | timeout 150 "$tir" repl --remote "$addr" >"$tmp/out" 2>"$tmp/err"
	st=$?
	printf 'b: i64[2]\n[2, 4]\nmul(b, 3): i64[2]\n[6, 12]\na  i64[2]  computed\nb  i64[2]  computed\n' >"$tmp/want"
	if [ -s "$tmp/wait.err" ]; then
		fail "session expired" "the session was not seen to expire: $(cat "$tmp/wait.err")"
	elif [ $st -ne 0 ] || ! cmp -s "$tmp/want" "$tmp/out" || [ -s "$tmp/err" ]; then
		fail "session expired" "exit $st, or the transcript differs"
		diff "$tmp/want" "$tmp/out" | head -n 5
		head -n 3 "$tmp/err"
	elif [ "$(grep -c '^POST /v1/sessions ' "$tmp/serve7.log")" -ne 2 ]; then
		fail "session expired" "not exactly one new session"
	else
		pass
	fi
	stop "$epid"
else
	fail "session expired" "the server did not start"
fi

# at a terminal: .remote, Ctrl-C stopping a remote computation (its own counts)
timeout 120 "$py" tests/net/remote_pty.py "$tir" "$main_addr" >"$tmp/pty" 2>&1
c=$(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$tmp/pty" | tail -n 1)
if [ -z "$c" ]; then
	fail "repl pty" "tests/net/remote_pty.py gave no summary"
	tail -n 5 "$tmp/pty"
else
	sed '$d' "$tmp/pty"
	# shellcheck disable=SC2086 # "N M": split on purpose
	set -- $c
	passed=$((passed + $1))
	failed=$((failed + $2))
fi

# every request was answered, and the server stops cleanly on SIGTERM
stop "$main_pid"
st=$?
if [ $st -ne 0 ]; then
	fail "server stop" "tir serve exited $st on SIGTERM"
elif awk '$3 ~ /^5/ { bad = 1 } END { exit !bad }' "$tmp/serve.log"; then
	fail "server log" "a 5xx reply:"
	awk '$3 ~ /^5/' "$tmp/serve.log" | head -n 3
else
	pass
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
