#!/bin/sh
# tests/suites/tls.sh — `tir serve --tls-cert --tls-key` and the client's
# https://HOST:PORT, on loopback, with certificates made here by the
# openssl command (a CA of the test's own, a second CA nobody trusts, a
# certificate for another name, an expired one).  Each check is one count;
# one line per failure; the last line is "N passed, M failed".
#
#  1. a run over TLS prints what a local run prints (samples/mlp.tir, and a
#     program with an 8 MiB input sent as a blob), TIR_CA_FILE naming the CA;
#     the token holds over TLS; the REPL's .remote https://...; curl
#     --cacert reaches /healthz (docs/remote.md's example);
#  2. the client refuses, with exit 3 and the reason: a certificate of an
#     unknown CA (no TIR_CA_FILE, or another CA's), one naming another
#     host, a TIR_CA_FILE that cannot be read, http:// to a TLS server (it
#     says to use https), https:// to a plain one (the handshake failed);
#     a connection that does not finish its handshake within
#     --header-timeout is closed, one past --max-connections-per-address
#     at once;
#  3. the server refuses to start, exit 1 or 2 and the file named: one of
#     the two flags alone, a missing file, a file with no certificate, a key
#     that is not the certificate's, an encrypted key, an expired
#     certificate.
#
# Nothing waits for a sleep: a server is waited for by its "listening" line.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) tir=$BUILD/tir ;; *) tir=$root/$BUILD/tir ;; esac
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tir-tls.XXXXXX") || exit 1
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
unset TIR_TOKEN TIR_TIMEOUT TIR_CA_FILE
passed=0
failed=0

pass() { passed=$((passed + 1)); }
fail() {
	echo "tls $1: FAILED: $2"
	failed=$((failed + 1))
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}

if ! command -v openssl >/dev/null 2>&1; then
	fail "setup" "the openssl command is missing (make deps installs it)"
	finish
fi

# ---- certificates ----
# mkca NAME: a self-signed CA, NAME.key and NAME.pem
mkca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/$1.key" \
		-out "$tmp/$1.pem" -days 2 -subj "/CN=tir test $1" 2>>"$tmp/openssl.log"
}
# mkcert NAME CA SAN DAYS: NAME.key and NAME.pem for SAN, signed by CA
mkcert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/$1.key" \
		-out "$tmp/$1.csr" -subj "/CN=tir test server" 2>>"$tmp/openssl.log" &&
		printf 'subjectAltName=%s\n' "$3" >"$tmp/$1.ext" &&
		openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.pem" -CAkey "$tmp/$2.key" -CAcreateserial \
			-out "$tmp/$1.pem" -days "$4" -extfile "$tmp/$1.ext" 2>>"$tmp/openssl.log"
}
if ! { mkca ca && mkca other && mkcert good ca "IP:127.0.0.1,DNS:localhost" 2 &&
	mkcert stranger other "IP:127.0.0.1,DNS:localhost" 2 &&
	mkcert elsewhere ca "DNS:tir.example.org" 2; }; then
	fail "setup" "openssl could not make the certificates: $(tail -n 3 "$tmp/openssl.log")"
	finish
fi
# an expired certificate: its notAfter a day ago (openssl x509 -days -1)
mkcert expired ca "IP:127.0.0.1" -1 || fail "setup" "no expired certificate: $(tail -n 1 "$tmp/openssl.log")"
# the good key, encrypted
openssl pkey -in "$tmp/good.key" -aes256 -passout pass:secret -out "$tmp/locked.key" 2>>"$tmp/openssl.log"

# start_server LOG [ARGS...]: `tir serve --port 0 ARGS`; sets spid and port
# from its "listening on http(s)://127.0.0.1:PORT" line; 1 if it exits or
# says nothing within 60 s
start_server() {
	log=$1
	shift
	: >"$log"
	"$tir" serve --port 0 "$@" 2>"$log" &
	spid=$!
	pids="$pids $spid"
	port=
	i=0
	while [ $i -lt 1200 ]; do
		port=$(sed -n 's|^tir serve: listening on https*://127\.0\.0\.1:\([0-9][0-9]*\) (protocol 4)$|\1|p' "$log")
		[ -n "$port" ] && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
stop() {
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# expect3 NAME PATTERN CMD...: exit 3, stderr matching PATTERN, nothing on stdout
expect3() {
	n=$1
	pat=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne 3 ]; then
		fail "$n" "exit status $st, expected 3: $(head -n 2 "$tmp/err")"
	elif ! grep -Eq "$pat" "$tmp/err"; then
		fail "$n" "stderr does not say /$pat/: $(head -n 2 "$tmp/err")"
	elif [ -s "$tmp/out" ]; then
		fail "$n" "something on stdout"
	else
		pass
	fi
}

# same NAME CMD...: stdout and exit status 0 equal to the local run's ($tmp/local)
same() {
	n=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne 0 ]; then
		fail "$n" "exit status $st: $(head -n 2 "$tmp/err")"
	elif ! cmp -s "$tmp/out" "$tmp/local"; then
		fail "$n" "stdout differs from the local run's"
		diff "$tmp/local" "$tmp/out" | head -n 4
	else
		pass
	fi
}

# ---- 1. runs over TLS ----
"$tir" run --quiet samples/mlp.tir >"$tmp/mlp.local" 2>&1 || fail "setup" "samples/mlp.tir does not run here"
# an input of 8 MiB: an upload of 32 chunks, checked as they arrive
"$py" -c "
import numpy as np
np.save('$tmp/big.npy', (np.arange(2097152, dtype=np.float32) % 1000) / 7)
" || fail "setup" "numpy could not write the input"
printf 'input x: f32[2097152]\nprint sum(x * 2)\nprint max(x)\n' >"$tmp/big.tir"
"$tir" run --quiet "$tmp/big.tir" --input x="$tmp/big.npy" >"$tmp/big.local" 2>&1 || fail "setup" "big.tir does not run here"

if start_server "$tmp/s1.log" --tls-cert "$tmp/good.pem" --tls-key "$tmp/good.key"; then
	grep -q "^tir serve: listening on https://" "$tmp/s1.log" && pass || fail "https line" "$(cat "$tmp/s1.log")"
	cp "$tmp/mlp.local" "$tmp/local"
	TIR_CA_FILE=$tmp/ca.pem same "samples/mlp.tir over TLS" "$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	TIR_CA_FILE=$tmp/ca.pem same "by the name localhost" "$tir" run --quiet samples/mlp.tir --remote "https://localhost:$port"
	cp "$tmp/big.local" "$tmp/local"
	TIR_CA_FILE=$tmp/ca.pem same "an 8 MiB input over TLS" "$tir" run --quiet "$tmp/big.tir" --input x="$tmp/big.npy" --remote "https://127.0.0.1:$port"
	# the REPL, piped
	printf 'x = arange(5) * 2\nsum(x)\n' >"$tmp/repl.in"
	"$tir" repl <"$tmp/repl.in" >"$tmp/local" 2>/dev/null
	TIR_CA_FILE=$tmp/ca.pem same "repl --remote https://" sh -c '"$1" repl --remote "$2" <"$3"' sh "$tir" "https://127.0.0.1:$port" "$tmp/repl.in"
	{ printf '.remote https://127.0.0.1:%s\n' "$port"; cat "$tmp/repl.in"; } >"$tmp/repl2.in"
	TIR_CA_FILE=$tmp/ca.pem "$tir" repl <"$tmp/repl2.in" >"$tmp/out" 2>"$tmp/err"
	if [ $? -ne 0 ] || [ "$(tail -n 1 "$tmp/out")" != "$(tail -n 1 "$tmp/local")" ]; then
		fail "repl .remote https://" "$(head -n 3 "$tmp/err")"
	else
		pass
	fi
	# curl, as docs/remote.md shows
	if command -v curl >/dev/null 2>&1; then
		got=$(curl -s --max-time 20 --cacert "$tmp/ca.pem" "https://127.0.0.1:$port/healthz")
		[ "$got" = "ok" ] && pass || fail "curl --cacert /healthz" "got '$got'"
	fi

	# ---- 2. the client refuses ----
	expect3 "no CA given" "^tir: remote https://127\.0\.0\.1:$port: its certificate is not trusted \(.*\); TIR_CA_FILE names" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	TIR_CA_FILE=$tmp/other.pem expect3 "another CA" "^tir: remote https://127\.0\.0\.1:$port: its certificate is not trusted" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	TIR_CA_FILE=$tmp/nothere.pem expect3 "TIR_CA_FILE missing" "TIR_CA_FILE '$tmp/nothere.pem' cannot be read" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	expect3 "http:// to a TLS server" "^tir: remote 127\.0\.0\.1:$port: the server closed the connection without a reply \(if it serves TLS, use https://HOST:PORT\)$" \
		"$tir" run --quiet samples/mlp.tir --remote "127.0.0.1:$port"
	grep -q "^tir serve: stopped" "$tmp/s1.log" && fail "server after the refusals" "it stopped" || pass
	stop "$spid"
else
	fail "TLS server" "did not start: $(head -n 3 "$tmp/s1.log")"
fi

if start_server "$tmp/s2.log" --tls-cert "$tmp/stranger.pem" --tls-key "$tmp/stranger.key"; then
	TIR_CA_FILE=$tmp/ca.pem expect3 "a certificate of a CA not trusted" "its certificate is not trusted" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	stop "$spid"
else
	fail "second TLS server" "did not start: $(head -n 3 "$tmp/s2.log")"
fi
if start_server "$tmp/s3.log" --tls-cert "$tmp/elsewhere.pem" --tls-key "$tmp/elsewhere.key"; then
	TIR_CA_FILE=$tmp/ca.pem expect3 "a certificate for another host" "its certificate is not trusted \(.*(match|name).*\)" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	stop "$spid"
else
	fail "third TLS server" "did not start: $(head -n 3 "$tmp/s3.log")"
fi
# the token over TLS
if start_server "$tmp/s4.log" --tls-cert "$tmp/good.pem" --tls-key "$tmp/good.key" --token s3cret; then
	cp "$tmp/mlp.local" "$tmp/local"
	TIR_TOKEN=s3cret TIR_CA_FILE=$tmp/ca.pem same "token over TLS" "$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	TIR_TOKEN=wrong TIR_CA_FILE=$tmp/ca.pem expect3 "wrong token over TLS" "refused the token" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	stop "$spid"
else
	fail "TLS server with a token" "did not start: $(head -n 3 "$tmp/s4.log")"
fi
# https:// to a plain server
if start_server "$tmp/s5.log"; then
	TIR_CA_FILE=$tmp/ca.pem expect3 "https:// to a plain server" "^tir: remote https://127\.0\.0\.1:$port: the TLS handshake failed \(.*\); is it a tir serve with --tls-cert\?$" \
		"$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	stop "$spid"
else
	fail "plain server" "did not start"
fi

# connections over TLS: the gate cannot read a head inside TLS, so the
# header deadline is the main thread's sweep: a handshake begun and not
# finished, and a connection that sends nothing, are closed after
# --header-timeout; past --max-connections-per-address the address's
# oldest connection that has no request under way (here the handshake
# begun) is closed at once to make room; a run is served
if start_server "$tmp/s6.log" --tls-cert "$tmp/good.pem" --tls-key "$tmp/good.key" --header-timeout 1 \
	--max-connections-per-address 2; then
	times=$("$py" - "$port" <<'EOF'
import select, socket, sys, time
port = int(sys.argv[1])
t0 = time.monotonic()
a = socket.create_connection(("127.0.0.1", port))
a.sendall(b"\x16\x03\x01\x00\x10")  # a handshake begun
b = socket.create_connection(("127.0.0.1", port))
c = socket.create_connection(("127.0.0.1", port))  # the third from 127.0.0.1
end = {}
while len(end) < 3 and time.monotonic() - t0 < 20:
    for s in select.select([k for k in (a, b, c) if k not in end], [], [], 1)[0]:
        try:
            d = s.recv(4096)
        except OSError:
            d = b""
        if not d:
            end[s] = time.monotonic() - t0
print(" ".join("%.2f" % end[k] if k in end else "never" for k in (a, b, c)))
EOF
)
	# shellcheck disable=SC2086 # three words on purpose
	set -- $times
	if [ $# -ne 3 ] || [ "$1" = never ] || [ "$2" = never ] || [ "$3" = never ] ||
		! "$py" -c "import sys; a, b, c = map(float, sys.argv[1:]); sys.exit(not (a < 0.9 and 0.9 <= b < 12 and 0.9 <= c < 12))" "$@"; then
		fail "TLS connections" "closed after (handshake begun, silent, third): $times; expected at once, 1 s, 1 s"
	else
		pass
	fi
	cp "$tmp/mlp.local" "$tmp/local"
	TIR_CA_FILE=$tmp/ca.pem same "a run with --header-timeout 1" "$tir" run --quiet samples/mlp.tir --remote "https://127.0.0.1:$port"
	stop "$spid"
else
	fail "TLS server with connection limits" "did not start: $(head -n 3 "$tmp/s6.log")"
fi

# handshakes never sent, from many addresses: 300 connections from
# 127.0.0.2-11 that say nothing (reopened as soon as they are closed) hold
# at most half of the server's slots and give way to newcomers; /healthz
# over TLS from 127.0.0.1 is answered every time, within 1 s, for 3 s
if start_server "$tmp/s7.log" --tls-cert "$tmp/good.pem" --tls-key "$tmp/good.key" --header-timeout 120; then
	res=$("$py" - "$port" "$tmp/ca.pem" <<'EOF'
import socket, ssl, sys, time
port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)

def attacker(i):
    s = socket.socket()
    s.bind((f"127.0.0.{2 + i % 10}", 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s

silent = [attacker(i) for i in range(300)]
worst, bad, n = 0.0, 0, 0
t_end = time.monotonic() + 3
while time.monotonic() < t_end:
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as c:
                c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                out = b""
                while True:
                    d = c.recv(4096)
                    if not d:
                        break
                    out += d
        bad += not out.startswith(b"HTTP/1.1 200")
    except OSError:
        bad += 1
    n += 1
    worst = max(worst, time.monotonic() - t0)
    for i, s in enumerate(silent):
        try:
            gone = s.recv(1) == b""
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone:
            s.close()
            silent[i] = attacker(i)
print(n, bad, "%.3f" % worst)
EOF
)
	# shellcheck disable=SC2086 # three words on purpose
	set -- $res
	if [ $# -ne 3 ] || [ "$2" != 0 ] || ! "$py" -c "import sys; sys.exit(not float(sys.argv[1]) < 1.0)" "$3"; then
		fail "TLS handshakes never sent from 10 addresses" "/healthz over TLS: (asked, failed, worst s) $res"
	else
		pass
	fi
	stop "$spid"
else
	fail "TLS server for silent handshakes" "did not start: $(head -n 3 "$tmp/s7.log")"
fi

# ---- 3. the server refuses to start ----
# refuse NAME STATUS PATTERN ARGS...: tir serve ARGS exits STATUS, saying PATTERN
refuse() {
	n=$1
	want=$2
	pat=$3
	shift 3
	timeout 60 "$tir" serve --port 0 "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -ne "$want" ]; then
		fail "$n" "exit status $st, expected $want: $(head -n 2 "$tmp/err")"
	elif ! grep -Eq "$pat" "$tmp/err"; then
		fail "$n" "stderr does not say /$pat/: $(head -n 2 "$tmp/err")"
	else
		pass
	fi
}
refuse "--tls-cert alone" 2 "^tir serve: --tls-cert needs --tls-key too" --tls-cert "$tmp/good.pem"
refuse "--tls-key alone" 2 "^tir serve: --tls-key needs --tls-cert too" --tls-key "$tmp/good.key"
refuse "a missing certificate" 1 "^tir serve: --tls-cert $tmp/none.pem: No such file" \
	--tls-cert "$tmp/none.pem" --tls-key "$tmp/good.key"
refuse "a key as the certificate" 1 "^tir serve: --tls-cert $tmp/good.key: no PEM certificate in it$" \
	--tls-cert "$tmp/good.key" --tls-key "$tmp/good.key"
refuse "a certificate as the key" 1 "^tir serve: --tls-key $tmp/good.pem: no PEM private key in it" \
	--tls-cert "$tmp/good.pem" --tls-key "$tmp/good.pem"
refuse "another certificate's key" 1 "^tir serve: --tls-key $tmp/stranger.key is not the key of --tls-cert $tmp/good.pem$" \
	--tls-cert "$tmp/good.pem" --tls-key "$tmp/stranger.key"
refuse "an encrypted key" 1 "^tir serve: --tls-key $tmp/locked.key: no PEM private key in it \(an encrypted key" \
	--tls-cert "$tmp/good.pem" --tls-key "$tmp/locked.key"
if [ -s "$tmp/expired.pem" ]; then
	refuse "an expired certificate" 1 "^tir serve: --tls-cert $tmp/expired.pem: the certificate has expired$" \
		--tls-cert "$tmp/expired.pem" --tls-key "$tmp/expired.key"
fi

finish
