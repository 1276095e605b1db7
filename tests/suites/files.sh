#!/bin/sh
# tests/suites/files.sh — whole checkpoints from the command line:
# the program file itself (missing, a directory, over the size limit:
# refused before it is read; empty; a pipe and /dev/stdin);
# `tir run --save` of several values into one .safetensors file (read back
# by NumPy from the bytes, and by tir's own load), `tir inspect` of what
# was written and of files tir cannot load (a bf16 tensor is listed, not
# refused; a header that lies is exit 1 with the file and the tensor
# named), --save's usage errors (exit 2), and the REPL's `.save`.
# Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin files

# ---- the program file ----
"$tir" run "$tmp/none.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q "cannot open '$tmp/none.tir': No such file" "$tmp/err" && ok ||
	{ bad "a missing program file: exit $st"; cat "$tmp/err"; }
mkdir "$tmp/dir.tir"
"$tir" run "$tmp/dir.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q "cannot read '$tmp/dir.tir': Is a directory" "$tmp/err" && ok ||
	{ bad "a directory as the program: exit $st"; cat "$tmp/err"; }
# a regular file past the limit (sparse: no disk, and never read)
if truncate -s 257M "$tmp/big.tir" 2>/dev/null; then
	"$tir" run "$tmp/big.tir" >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st -eq 1 ] && grep -q "big.tir: program text is over the limit of 256 MiB" "$tmp/err" && [ ! -s "$tmp/out" ] &&
		ok || { bad "a program file of 257 MiB: exit $st"; cat "$tmp/err"; }
	rm -f "$tmp/big.tir"
fi
: >"$tmp/empty.tir"
"$tir" run --quiet "$tmp/empty.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ] && ok || { bad "an empty program: exit $st"; cat "$tmp/err"; }
for f in - /dev/stdin; do
	printf 'print 1 + 2\n' | "$tir" run --quiet "$f" >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = 3 ] && ok || { bad "a program from a pipe ($f): exit $st"; cat "$tmp/err"; }
done

cat >"$tmp/p.tir" <<'T'
w = randn([3, 4], seed=1)
b = arange(4)
m = gt(w, 0)
h = transpose(w, [1, 0]) * 2
print sum(w)
T

# several values into one file, one of them twice (another file), a view
"$tir" run --quiet "$tmp/p.tir" --save w=$tmp/ck.safetensors --save b=$tmp/ck.safetensors \
	--save m=$tmp/ck.safetensors --save h=$tmp/ck.safetensors --save w=$tmp/w.npy \
	>"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && ok || { bad "--save to one .safetensors: exit $st"; cat "$tmp/err"; }

# NumPy reads the bytes itself (u64 header size, JSON, data) and finds the
# values of the .npy written beside it
if "$py" - "$tmp" <<'PY'
import json, struct, sys
import numpy as np
d = sys.argv[1]
raw = open(d + "/ck.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
assert n % 8 == 0, "header not padded to 8"
head = json.loads(raw[8:8 + n])
assert list(head) == ["w", "b", "m", "h"], list(head)
kinds = {"F32": np.float32, "I64": np.int64, "BOOL": np.bool_}
def get(name):
    e = head[name]
    lo, hi = e["data_offsets"]
    return np.frombuffer(raw[8 + n + lo:8 + n + hi], dtype=kinds[e["dtype"]]).reshape(e["shape"])
w = np.load(d + "/w.npy")
assert np.array_equal(get("w"), w)
assert np.array_equal(get("b"), np.arange(4))
assert np.array_equal(get("m"), w > 0)
assert np.array_equal(get("h"), w.T * np.float32(2))
ends = sorted((e["data_offsets"][0], e["data_offsets"][1]) for e in head.values())
assert ends[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ends, ends[1:])), ends
assert 8 + n + ends[-1][1] == len(raw)
PY
then ok; else bad "NumPy's reading of ck.safetensors disagrees"; fi

# tir loads each back by name
cat >"$tmp/back.tir" <<T
h = load("$tmp/ck.safetensors", "h")
m = load("$tmp/ck.safetensors", "m")
print h, m
T
printf 'w = randn([3, 4], seed=1)\nprint transpose(w, [1, 0]) * 2, gt(w, 0)\n' >"$tmp/same.tir"
"$tir" run --quiet "$tmp/back.tir" 2>&1 | sed 's/^load([^)]*): /X: /; s/^load([^)]*)), /X, /' >"$tmp/b1"
"$tir" run --quiet "$tmp/same.tir" 2>&1 | sed 's/^[a-z]*(.*): \(f32\|bool\)/X: \1/' >"$tmp/b2"
if [ "$(sed -n '2,5p' "$tmp/b1")" = "$(sed -n '2,5p' "$tmp/b2")" ] &&
	[ "$(sed -n '7,9p' "$tmp/b1")" = "$(sed -n '7,9p' "$tmp/b2")" ]; then ok; else
	bad "values loaded back by name differ from the computed ones"
	diff "$tmp/b1" "$tmp/b2" | head -n 10
fi

# tir inspect: the table of what was written
"$tir" inspect "$tmp/ck.safetensors" >"$tmp/ins" 2>&1
st=$?
hb=$(sed -n 's/.*header \([0-9]*\) bytes$/\1/p' "$tmp/ins")
cat >"$tmp/want" <<W
$tmp/ck.safetensors: safetensors, 4 tensors, 140 bytes of data, header $hb bytes
name  dtype  shape   bytes  offset  tir
w     F32    [3, 4]     48     $((hb))  f32
b     I64    [4]        32     $((hb + 48))  i64
m     BOOL   [3, 4]     12     $((hb + 80))  bool
h     F32    [4, 3]     48     $((hb + 92))  f32
W
if [ $st -eq 0 ] && [ $((hb % 8)) -eq 0 ] && cmp -s "$tmp/ins" "$tmp/want"; then ok; else
	bad "tir inspect ck.safetensors (exit $st):"
	diff "$tmp/want" "$tmp/ins"
fi
"$tir" inspect "$tmp/w.npy" >"$tmp/ins" 2>&1
if grep -q '^-     <f4    \[3, 4\]     48     128  f32$' "$tmp/ins"; then ok; else
	bad "tir inspect w.npy:"
	cat "$tmp/ins"
fi

# a bf16 checkpoint is listed with the tir dtype of each tensor, and its metadata;
# an F8 tensor (which tir does not read) is listed with '-'
"$py" - "$tmp/bf.safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"__metadata__": {"format": "pt"},
                "l0.weight": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
                "l0.bias": {"dtype": "F32", "shape": [3], "data_offsets": [12, 24]},
                "q": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [24, 28]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(28))
PY
"$tir" inspect "$tmp/bf.safetensors" >"$tmp/ins" 2>&1
st=$?
if [ $st -eq 0 ] && grep -q '^l0.weight  BF16     \[2, 3\]     12 .* bf16$' "$tmp/ins" &&
	grep -q '^q          F8_E4M3  \[4\]         4 .* -$' "$tmp/ins" &&
	grep -q '^l0.bias    F32      \[3\]        12 .* f32$' "$tmp/ins" &&
	grep -q '^__metadata__: {"format":"pt"}$' "$tmp/ins"; then ok; else
	bad "tir inspect of a bf16 checkpoint (exit $st):"
	cat "$tmp/ins"
fi

# headers that lie: exit 1, the file and what is wrong named, nothing on stdout
lie() {
	"$py" - "$tmp/lie.safetensors" "$1" "$2" <<'PY'
import struct, sys
h = sys.argv[2].encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(int(sys.argv[3])))
PY
	"$tir" inspect "$tmp/lie.safetensors" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "^tir: error: $tmp/lie.safetensors: $3" "$tmp/err"; then ok; else
		bad "inspect of a lying header ($3): exit $st"
		cat "$tmp/out" "$tmp/err"
	fi
}
lie '{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}' 16 \
	"tensors 'a' and 'b' overlap"
lie '{"a": {"dtype": "F32", "shape": [400], "data_offsets": [0, 1600]}}' 16 \
	"tensor 'a': data_offsets \[0, 1600\] out of range"
lie '{"a": {"dtype": "F16", "shape": [3], "data_offsets": [0, 8]}}' 8 \
	"tensor 'a': its shape needs 6 bytes but data_offsets span 8"
lie '{"a": {"dtype": "Q4_K", "shape": [3], "data_offsets": [0, 8]}}' 8 \
	"tensor 'a': unknown dtype 'Q4_K'"
lie '{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}}' 8 \
	"tensor 'a': negative dimension"
"$tir" inspect "$tmp/none.safetensors" >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q "cannot open" "$tmp/err" && ok || bad "inspect of a missing file: exit $st"
"$tir" inspect >/dev/null 2>&1
st=$?
[ $st -eq 2 ] && ok || bad "inspect without a file: exit $st, expected 2"

# hostile files, fuzzed: 400 mutations (seeded) of a checkpoint with three
# tensors and of a .npy (bytes flipped in the header, cut short, the size
# field or numbers in the JSON changed, keys duplicated, deep nesting);
# `tir inspect` and `load` of each must exit 0 or 1, never crash or hang,
# and on 1 print one line on stderr naming the file, nothing on stdout
mkdir -p "$tmp/fz"
"$py" - "$tmp/fz" <<'PY'
import json, random, struct, sys
d = sys.argv[1]
rng = random.Random(20261126)
head = json.dumps({"__metadata__": {"format": "pt"},
                   "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                   "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]},
                   "c": {"dtype": "I64", "shape": [2], "data_offsets": [32, 48]}}).encode()
st = struct.pack("<Q", len(head)) + head + bytes(range(48))
npy_head = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
npy_head += b" " * (117 - len(npy_head)) + b"\n"
npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(npy_head)) + npy_head + bytes(24)
nums = [b"-1", b"0", b"99999999999999999999", b"18446744073709551615", b"1e400", b"4294967296",
        b"9223372036854775807", b"\"x\"", b"[]", b"null", b"2.5"]
def mutate(b, is_st):
    b = bytearray(b)
    k = rng.randrange(7)
    if k == 0:    # flip bytes in the header
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(min(len(b), 8 + len(head) if is_st else 128))
            b[i] = rng.randrange(256)
    elif k == 1:  # cut short
        b = b[:rng.randrange(len(b))]
    elif k == 2 and is_st:  # the size field lies
        b[0:8] = struct.pack("<Q", rng.choice([0, 1, len(head) - 1, len(head) + 1, len(b), 1 << 40, (1 << 64) - 1]))
    elif k == 3:  # a number becomes another
        txt = bytes(b)
        spots = [i for i in range(len(txt) if not is_st else 8 + len(head)) if txt[i:i+1].isdigit()]
        if spots:
            i = rng.choice(spots)
            j = i
            while j < len(txt) and txt[j:j+1].isdigit():
                j += 1
            b = bytearray(txt[:i] + rng.choice(nums) + txt[j:])
            if is_st:
                b[0:8] = struct.pack("<Q", len(head) + len(b) - len(txt))
    elif k == 4 and is_st:  # a key twice, or a tensor entry replaced
        h = head.replace(b'"c":', b'"a":') if rng.random() < 0.5 else \
            head.replace(b'"I64"', rng.choice([b'"Q4"', b'"F16"', b'""', b'7', b'"bf16"']))
        b = bytearray(struct.pack("<Q", len(h)) + h + bytes(48))
    elif k == 5 and is_st:  # deep nesting in the metadata
        h = b'{"__metadata__": ' + b"[" * 5000 + b"]" * 5000 + head[head.index(b','):]
        b = bytearray(struct.pack("<Q", len(h)) + h + bytes(48))
    else:         # bytes appended or the data cut
        b = b + bytes(rng.randrange(1, 64)) if rng.random() < 0.5 else b[:-rng.randrange(1, 16)]
    return bytes(b)
for i in range(200):
    open("%s/%03d.safetensors" % (d, i), "wb").write(mutate(st, True))
    open("%s/%03d.npy" % (d, i), "wb").write(mutate(npy, False))
PY
fz_bad=0
for f in "$tmp"/fz/*; do
	case $f in *.npy) load="load(\"$f\")" ;; *) load="load(\"$f\", \"a\")" ;; esac
	printf 'x = %s\nprint x\n' "$load" >"$tmp/fz.tir"
	for how in inspect run; do
		if [ $how = inspect ]; then
			timeout 20 "$tir" inspect "$f" >"$tmp/out" 2>"$tmp/err"
		else
			timeout 20 "$tir" run --quiet "$tmp/fz.tir" >"$tmp/out" 2>"$tmp/err"
		fi
		st=$?
		if [ $st -eq 0 ] && [ ! -s "$tmp/err" ]; then
			continue
		elif [ $st -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -le 3 ] &&
			grep -q "$f" "$tmp/err" && ! grep -q Sanitizer "$tmp/err"; then
			continue
		fi
		fz_bad=$((fz_bad + 1))
		[ $fz_bad -le 3 ] && { echo "files: $how of the fuzzed $f: exit $st"; head -n 5 "$tmp/err"; cp "$f" "${TMPDIR:-/tmp}/tir-files-fuzz-$(basename "$f")"; }
	done
done
[ $fz_bad -eq 0 ] && ok || bad "$fz_bad fuzzed files were not a clean exit 0 or 1 (the first kept in ${TMPDIR:-/tmp})"

# mapped files: load and --input map a tensor of 64 KiB or more (the
# timing line says "mapped"); a kernel that could take a loaded value's
# memory for its result (y = w * 2 + 1, w read by nothing else) must not
# write into the mapping: the file is unchanged and the results right
# (the pages are read-only: a write would be SIGSEGV)
"$py" - "$tmp" <<'PY'
import json, struct, sys
import numpy as np
d = sys.argv[1]
w = (np.arange(40000, dtype=np.float32) % 97 - 48).reshape(200, 200)
np.save(d + "/big.npy", w)
np.save(d + "/bigb.npy", (w > 0))
bb = (w > 0).astype(np.uint8)
bb[150, 7] = 2
np.save(d + "/bigbad.npy", bb.view(np.bool_))
# safetensors: a u8 pair first puts "u" at data offset 2 (not aligned for
# f32: copied), "a" at 160004 (aligned: mapped)
h = json.dumps({"p": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                "u": {"dtype": "F32", "shape": [200, 200], "data_offsets": [2, 160002]},
                "a": {"dtype": "F32", "shape": [200, 200], "data_offsets": [160004, 320004]}}).encode()
h += b" " * (-len(h) % 8)
open(d + "/big.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"\0\0" + w.tobytes() + b"\0\0" + w.tobytes())
# a header that promises 160000 bytes of data over a file cut at 100000
raw = open(d + "/big.npy", "rb").read()
open(d + "/cut.npy", "wb").write(raw[:100000])
open(d + "/empty.npy", "wb").close()
np.save(d + "/want.npy", w * np.float32(2) + np.float32(1))
PY
sum0=$(md5sum <"$tmp/big.npy")
printf 'w = load("%s")\ny = w * 2 + 1\nprint sum(y)\n' "$tmp/big.npy" >"$tmp/m.tir"
"$tir" run "$tmp/m.tir" --save "y=$tmp/y.npy" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -eq 0 ] && grep -q ' · mapped 156\.[0-9] KiB$' "$tmp/err" && [ "$(md5sum <"$tmp/big.npy")" = "$sum0" ] &&
	"$py" -c 'import numpy as np, sys; sys.exit(not np.array_equal(np.load(sys.argv[1]), np.load(sys.argv[2])))' \
		"$tmp/y.npy" "$tmp/want.npy"; then ok; else
	bad "a mapped load read by a kernel that may reuse its input (exit $st):"
	cat "$tmp/out" "$tmp/err"
fi
printf 'input w: f32[200, 200]\ny = w * 2 + 1\nprint sum(y)\n' >"$tmp/mi.tir"
"$tir" run "$tmp/mi.tir" --input "w=$tmp/big.npy" --save "y=$tmp/yi.npy" >"$tmp/out2" 2>"$tmp/err"
if [ $? -eq 0 ] && grep -q ' · mapped 156\.[0-9] KiB$' "$tmp/err" && cmp -s "$tmp/out" "$tmp/out2" &&
	cmp -s "$tmp/y.npy" "$tmp/yi.npy" && [ "$(md5sum <"$tmp/big.npy")" = "$sum0" ]; then ok; else
	bad "a mapped --input:"
	cat "$tmp/out2" "$tmp/err"
fi
# safetensors: the aligned tensor mapped, the unaligned one copied; the same values
for t in a u; do
	printf 'w = load("%s", "%s")\ny = w * 2 + 1\nprint sum(y)\n' "$tmp/big.safetensors" $t >"$tmp/s$t.tir"
	"$tir" run "$tmp/s$t.tir" --save "y=$tmp/y$t.npy" >"$tmp/out$t" 2>"$tmp/err$t"
	echo $? >"$tmp/st$t"
done
if [ "$(cat "$tmp/sta")$(cat "$tmp/stu")" = 00 ] && grep -q ' · mapped ' "$tmp/erra" && ! grep -q 'mapped' "$tmp/erru" &&
	cmp -s "$tmp/outa" "$tmp/out" && cmp -s "$tmp/outu" "$tmp/out" && cmp -s "$tmp/ya.npy" "$tmp/y.npy" &&
	cmp -s "$tmp/yu.npy" "$tmp/y.npy"; then ok; else
	bad "safetensors, mapped (a) and unaligned (u):"
	cat "$tmp/outa" "$tmp/erra" "$tmp/outu" "$tmp/erru"
fi
# a mapped bool file is checked byte by byte as a read one is
printf 'b = load("%s")\nprint sum(cast(b, i64))\n' "$tmp/bigb.npy" >"$tmp/b.tir"
"$tir" run --quiet "$tmp/b.tir" >"$tmp/out" 2>&1
want=$("$py" -c 'import numpy as np, sys; print(int(np.load(sys.argv[1]).sum()))' "$tmp/bigb.npy")
[ "$(sed -n 2p "$tmp/out")" = "$want" ] && ok || { bad "a mapped bool file:"; cat "$tmp/out"; }
printf 'b = load("%s")\nprint b\n' "$tmp/bigbad.npy" >"$tmp/b.tir"
"$tir" run --quiet "$tmp/b.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "bigbad.npy: invalid bool byte 0x02 at element 30007" "$tmp/err" && ok ||
	{ bad "a mapped bool file with a byte 2: exit $st"; cat "$tmp/err"; }
# files too short for what their header promises, or empty: clear errors, exit 1
for f in cut.npy:"truncated: expected 160000 bytes of data" empty.npy:"not a .npy or .safetensors file"; do
	printf 'w = load("%s")\nprint w\n' "$tmp/${f%%:*}" >"$tmp/c.tir"
	"$tir" run --quiet "$tmp/c.tir" >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "${f%%:*}: ${f#*:}" "$tmp/err" && ok ||
		{ bad "load of ${f%%:*}: exit $st"; cat "$tmp/err"; }
done

# --save's usage errors: exit 2 before anything runs
"$tir" run "$tmp/p.tir" --save w=$tmp/x.npy --save b=$tmp/x.npy >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 2 ] && grep -q "x.npy is named twice; a .npy file holds one tensor" "$tmp/err" && ok ||
	{ bad "two values to one .npy: exit $st"; cat "$tmp/err"; }
"$tir" run "$tmp/p.tir" --save w=$tmp/y.safetensors --save w=$tmp/y.safetensors >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 2 ] && grep -q "w=.*y.safetensors is given twice" "$tmp/err" && ok ||
	{ bad "one value twice to one .safetensors: exit $st"; cat "$tmp/err"; }
[ ! -e "$tmp/x.npy" ] && [ ! -e "$tmp/y.safetensors" ] && ok || bad "a refused --save wrote a file"

# the REPL: .save NAME... FILE
printf 'w = randn([3, 4], seed=1)\nh = transpose(w, [1, 0]) * 2\n.save h w %s\n.save w %s\n.save nope %s\n' \
	"$tmp/r.safetensors" "$tmp/r.npy" "$tmp/n.npy" | "$tir" repl >"$tmp/out" 2>"$tmp/err"
if cmp -s "$tmp/r.npy" "$tmp/w.npy" && "$tir" inspect "$tmp/r.safetensors" | grep -q '^h  ' &&
	grep -q "no value named 'nope'" "$tmp/err" && [ ! -e "$tmp/n.npy" ]; then ok; else
	bad "the REPL's .save:"
	cat "$tmp/out" "$tmp/err"
fi

suite_end
