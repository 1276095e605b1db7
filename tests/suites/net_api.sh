#!/bin/sh
# tests/suites/net_api.sh — the network part is one versioned table
# (lib/tir.h, struct tir_net_api; lib/net/door.c): libtir-net.so exports
# tir_net_api alone; tir is linked without -rdynamic and exports nothing;
# tir and libtir-net.so share one libtir.so, which exports only tir_
# names, fewer than it defines; a running `tir serve` maps one libtir.so;
# and a library of another version, of another table size, or that is
# not tir's network part, is refused with a message naming the file and
# both versions (the objects are built here and given by TIR_NET_LIB,
# the documented way to load the network part from another file), while
# a run without a remote never loads it.  POSIX sh; one line per failure.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin net_api
b=$BUILD
cc=${CC:-cc}

# ---- what is linked and exported ----
got=$(nm -D --defined-only "$b/libtir-net.so" | awk '$2 ~ /^[TDBR]$/ {print $3}' | tr '\n' ' ')
[ "$got" = "tir_net_api " ] && ok || bad "libtir-net.so exports \"$got\", not tir_net_api alone"
got=$(nm -D --defined-only "$b/tir" | awk '$3 ~ /^tir_/' | head -n 3)
[ -z "$got" ] && ok || bad "tir exports libtir's names (linked with -rdynamic?): $got"
for f in tir libtir-net.so; do
	readelf -d "$b/$f" | grep -q 'NEEDED.*\[libtir\.so\]' && ok || bad "$f does not link libtir.so"
done
other=$(nm -D --defined-only "$b/libtir.so" | awk '$2 ~ /^[TDBRVW]$/ && $3 !~ /^tir_/ {print $3}' | head -n 3)
[ -z "$other" ] && ok || bad "libtir.so exports names that are not tir_: $other"
nexp=$(nm -D --defined-only "$b/libtir.so" | awk '$3 ~ /^tir_/' | wc -l)
ndef=$(nm -g --defined-only "$b/libtir.a" 2>/dev/null | awk '$3 ~ /^tir_/' | sort -u | wc -l)
[ "$nexp" -gt 0 ] && [ "$nexp" -lt "$ndef" ] && ok ||
	bad "libtir.so exports $nexp of the $ndef tir_ names libtir.a defines (only what tir and lib/net call)"
! nm -u "$b/libtir-net.so" | grep -q ' tir_net' && ok || bad "libtir-net.so calls back into the door"

# ---- one libtir in a process that loaded the network part ----
"$tir" serve --port 0 2>"$tmp/serve.log" &
spid=$!
i=0
while [ $i -lt 100 ] && ! grep -q 'listening on' "$tmp/serve.log"; do sleep 0.1; i=$((i + 1)); done
if grep -q 'listening on' "$tmp/serve.log"; then
	n=$(awk '$6 ~ /\/libtir\.so$/ {print $6}' "/proc/$spid/maps" | sort -u | wc -l)
	[ "$n" -eq 1 ] && ok || bad "tir serve maps $n libtir.so files"
	grep -q '/libtir-net\.so$' "/proc/$spid/maps" && ok || bad "tir serve has not loaded libtir-net.so"
else
	bad "tir serve --port 0 did not start: $(cat "$tmp/serve.log")"
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# ---- a table of another build is refused ----
ver=$(sed -n 's/^#define TIR_NET_API_VERSION \([0-9][0-9]*\)$/\1/p' lib/tir.h)
[ -n "$ver" ] && ok || bad "lib/tir.h defines no TIR_NET_API_VERSION"
# fake NAME VERSION SIZE_DELTA [ENTRY]: $tmp/NAME.so whose entry point
# (default tir_net_api) returns a table of that version and size
fake() {
	cat >"$tmp/$1.c" <<EOC
#include "tir.h"
static struct tir_net_api t;
const struct tir_net_api *${4:-tir_net_api}(void);
const struct tir_net_api *${4:-tir_net_api}(void)
{
	t.version = $2;
	t.size = sizeof t + ($3);
	return &t;
}
EOC
	$cc -shared -fPIC -Ilib -o "$tmp/$1.so" "$tmp/$1.c" 2>"$tmp/cc.err" || { bad "cannot build $1.so: $(cat "$tmp/cc.err")"; return 1; }
}
printf 'x = 1 + 2\nprint(x)\n' >"$tmp/p.tir"
# refused NAME STATUS PATTERN... : `tir run --remote` with $tmp/NAME.so
# exits STATUS and says each PATTERN (grep -F) on stderr; so does `tir serve`
refused() {
	name=$1 st=$2
	shift 2
	TIR_NET_LIB=$tmp/$name.so "$tir" run --remote 127.0.0.1:9 "$tmp/p.tir" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" -eq "$st" ] && ok || bad "$name: tir run --remote exit $got, expected $st: $(cat "$tmp/err")"
	TIR_NET_LIB=$tmp/$name.so timeout 20 "$tir" serve --port 0 >/dev/null 2>"$tmp/serr"
	[ $? -eq 1 ] && ok || bad "$name: tir serve started or exited otherwise: $(cat "$tmp/serr")"
	for pat in "$@"; do
		grep -qF -- "$pat" "$tmp/err" && ok || bad "$name: tir run does not say '$pat': $(cat "$tmp/err")"
		grep -qF -- "$pat" "$tmp/serr" && ok || bad "$name: tir serve does not say '$pat': $(cat "$tmp/serr")"
	done
}
if fake newer $((ver + 1)) 0; then
	refused newer 2 "$tmp/newer.so is version $((ver + 1)) of tir's network table" "this tir needs version $ver"
fi
if fake older $((ver - 1)) 0; then
	refused older 2 "$tmp/older.so is version $((ver - 1))" "needs version $ver"
fi
if fake wider "$ver" 8; then
	refused wider 2 "$tmp/wider.so has version $ver of tir's network table, but its table is" "bytes where this tir's"
fi
if fake other "$ver" 0 not_tir; then
	refused other 2 "$tmp/other.so is not tir's network part (it has no tir_net_api)"
fi
refused absent 2 "the network part of tir will not load" "$tmp/absent.so"
# a run without a remote never loads it
if TIR_NET_LIB=$tmp/newer.so "$tir" run --quiet "$tmp/p.tir" >"$tmp/out" 2>"$tmp/err" && grep -qx 3 "$tmp/out"; then ok; else
	bad "a local run with a wrong TIR_NET_LIB failed: $(cat "$tmp/err")"
fi
suite_end
