#!/bin/sh
# tests/suites/onnx_import.sh — tir import and tir run on ONNX models made
# by tests/onnx/make_models.py: a perceptron named as PyTorch names things
# (input.1, onnx::Gemm_1) run and checked against NumPy, its inputs from
# .npy and from TensorProto .pb files, names kept or renamed (--rename,
# PCRE2), `tir fmt` leaving an imported program as it is, shape arithmetic
# folded, and each hostile file (malformed, lying sizes, a cycle, huge
# dimensions, an unknown domain, an escaping external-data path, ops tir
# has not) refused with its own message, never a crash; --remote and the
# REPL's .load of a model.  Also tir inspect --match and the REPL's .vars
# REGEX, which share the PCRE2 wrapper.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin onnx_import
m=$tmp/models
if ! $py tests/onnx/make_models.py "$m" >"$tmp/make.out" 2>&1; then
	bad "make_models.py failed: $(tail -n 1 "$tmp/make.out")"
	suite_end
	exit 1
fi

# close PATH_A PATH_B: the two .npy files agree within 1e-6
close() {
	$py -c "import numpy as n, sys; a = n.load(sys.argv[1]); b = n.load(sys.argv[2]); \
sys.exit(0 if a.shape == b.shape and a.dtype == b.dtype and n.allclose(a, b, rtol=1e-5, atol=1e-6) else 1)" "$1" "$2"
}

# the perceptron: import, then the program runs and matches NumPy
if $tir import "$m/mlp.onnx" --dim batch=2 -o "$tmp/mlp.tir" 2>"$tmp/err"; then ok; else bad "import mlp: $(cat "$tmp/err")"; fi
[ -f "$tmp/mlp.safetensors" ] && ok || bad "no weights file beside the program"
grep -q '^# node /fc1/Gemm: Gemm$' "$tmp/mlp.tir" && ok || bad "no comment naming node /fc1/Gemm"
grep -q '^input input_1: f32\[2, 4\]$' "$tmp/mlp.tir" && ok || bad "input.1 is not input_1: f32[2, 4]"
grep -q 'load(".*mlp.safetensors", name="onnx__Gemm_1")' "$tmp/mlp.tir" && ok || bad "onnx::Gemm_1 is not loaded as onnx__Gemm_1"
# tir fmt leaves it as it is (but the comments, which fmt never keeps)
if $tir fmt "$tmp/mlp.tir" >"$tmp/fmt.out" 2>&1 && grep -v '^#' "$tmp/mlp.tir" | cmp -s - "$tmp/fmt.out"; then ok
else bad "tir fmt changes the imported program:"; grep -v '^#' "$tmp/mlp.tir" | diff - "$tmp/fmt.out" | head -n 5; fi
if $tir run "$tmp/mlp.tir" --input input_1="$m/x.npy" --save probs="$tmp/p0.npy" --quiet >/dev/null 2>"$tmp/err" &&
   close "$tmp/p0.npy" "$m/expect.npy"; then ok; else bad "the imported program's result differs: $(cat "$tmp/err")"; fi
# tir run MODEL.onnx with the ONNX spellings, inputs from .npy and .pb
for x in x.npy x.pb; do
	if $tir run "$m/mlp.onnx" --input input.1="$m/$x" --save probs="$tmp/p.npy" --quiet >/dev/null 2>"$tmp/err" &&
	   close "$tmp/p.npy" "$m/expect.npy"; then ok; else bad "tir run mlp.onnx --input input.1=$x: $(cat "$tmp/err")"; fi
done
# a value inside the graph, saved by its ONNX name, in a .safetensors file by that name
if $tir run "$m/mlp.onnx" --input input.1="$m/x.pb" --save h.2="$tmp/h.safetensors" --quiet >/dev/null 2>"$tmp/err" &&
   $tir inspect "$tmp/h.safetensors" | grep -q '^h\.2 '; then ok; else bad "--save h.2=FILE.safetensors: $(cat "$tmp/err")"; fi
# --explain and --profile work as for any program
if $tir run "$m/mlp.onnx" --input input.1="$m/x.pb" --explain --profile --quiet >/dev/null 2>"$tmp/err" &&
   grep -q matmul "$tmp/err"; then ok; else bad "--explain --profile: $(head -n 3 "$tmp/err")"; fi
# the symbolic dimension unfixed: an error saying how to fix it
$tir import "$m/mlp.onnx" -o "$tmp/x.tir" 2>"$tmp/err"
grep -q "input 'input.1': dimension 0 ('batch') is symbolic; fix it with --dim batch=N" "$tmp/err" && ok ||
	bad "unfixed dimension: $(cat "$tmp/err")"

# weights past the folding limit, stored as raw_data and as float_data
for f in big_raw big_fields; do
	if $tir run "$m/$f.onnx" --input x="$m/xb.npy" --save y="$tmp/yb.npy" --quiet >/dev/null 2>"$tmp/err" &&
	   close "$tmp/yb.npy" "$m/expect_big.npy"; then ok; else bad "$f.onnx: $(cat "$tmp/err")"; fi
done

# --rename: PCRE2 substitutions, in order
if $tir import "$m/mlp.onnx" --dim batch=2 -o "$tmp/r.tir" --rename '^onnx::Gemm_(\d+)$=gemm_w$1' \
	--rename '\.=_' 2>"$tmp/err" && grep -q 'gemm_w1: f32\[8, 4\] = load' "$tmp/r.tir" &&
   grep -q '^fc2_weight: ' "$tmp/r.tir"; then ok; else bad "--rename: $(cat "$tmp/err")"; fi
# a bad pattern: exit 2, a caret under PCRE2's offset
$tir import "$m/mlp.onnx" --rename 'ab(c=x' 2>"$tmp/err"
st=$?
if [ "$st" -eq 2 ] && grep -q 'bad pattern: missing closing parenthesis' "$tmp/err" &&
   grep -q '^        \^$' "$tmp/err"; then ok; else bad "bad --rename pattern (exit $st): $(cat "$tmp/err")"; fi

# shape arithmetic folded: Shape, Gather, Unsqueeze, Concat into one reshape
if $tir import "$m/fold.onnx" -o "$tmp/f.tir" 2>"$tmp/err" && grep -q '^y: f32\[2, 12\] = reshape(x, \[2, 12\])$' "$tmp/f.tir"
then ok; else bad "fold: $(cat "$tmp/err" "$tmp/f.tir" 2>/dev/null)"; fi

# hostile and unsupported files: exit 1 and the message, never a crash
refused() {
	file=$1
	want=$2
	$tir import "$m/$file" -o "$tmp/h.tir" >/dev/null 2>"$tmp/err"
	st=$?
	if [ "$st" -eq 1 ] && grep -qF -- "$want" "$tmp/err"; then ok; else bad "$file (exit $st): $(cat "$tmp/err")"; fi
}
refused garbage.onnx "not an ONNX model (the protobuf does not parse as a ModelProto)"
refused truncated.onnx "not an ONNX model"
refused length.onnx "not an ONNX model"
refused lying.onnx "tensor 'w': raw_data holds 8 bytes, its shape wants 24"
refused huge.onnx "tensor 'w': its dimensions ask for more than 4294967296 elements"
refused cycle.onnx "the graph has a cycle: node 'first' (Relu) reads 'b'"
refused domain.onnx "node 'custom': Frobnicate (domain 'com.example', opset 1): unknown domain"
refused escape.onnx "external data path '../../etc/passwd' leaves the model's folder"
refused nonzero.onnx "node 'nz': NonZero (domain 'ai.onnx', opset 13): its result's shape depends on the data"
refused opset18.onnx "opset 18 of the default domain; tir imports opsets 1 to 17"
refused opset0.onnx "opset 0 of the default domain; tir imports opsets 1 to 17"
refused old_tile.onnx "node 'tile5': Tile (domain 'ai.onnx', opset 5): its version of opset 5 is not supported (tir imports Tile from opset 6)"
# opset 6's broadcast with an axis: B [3] against A [3, 2] at axis 0
if $tir import "$m/old_broadcast.onnx" -o "$tmp/ob.tir" 2>"$tmp/err" &&
   grep -q '= reshape(b, \[3, 1\])$' "$tmp/ob.tir"; then ok; else bad "old_broadcast: $(cat "$tmp/err" "$tmp/ob.tir" 2>/dev/null)"; fi
refused deconv_shape.onnx "node 'deconv' (ConvTranspose, opset 13): output_shape past 4294967296"
refused deconv_strides.onnx "node 'deconv' (ConvTranspose, opset 13): a result of 3 x 2147483648 strides"
refused deconv_dilation.onnx "node 'deconv' (ConvTranspose, opset 13): a dilated kernel of 3 x 2147483648 taps"
refused symbolic.onnx "dimension 0 ('n') is symbolic"
# every unsupported op of the model at once
refused unsupported.onnx "2 nodes tir cannot import: node 'lp': LpPool (domain 'ai.onnx', opset 13): not supported; node 'roi': MaxRoiPool"
# not a file at all
$tir import "$tmp/none.onnx" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q 'No such file' "$tmp/err" && ok || bad "a missing model: $(cat "$tmp/err")"
# a .pb that is no TensorProto
printf '\377\377\377' >"$tmp/bad.pb"
$tir run "$m/mlp.onnx" --input input.1="$tmp/bad.pb" --quiet >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q 'not an ONNX TensorProto' "$tmp/err" && ok || bad "a bad .pb: $(cat "$tmp/err")"

# tir inspect --match and the REPL's .vars REGEX
$tir inspect "$tmp/mlp.safetensors" --match '^fc2_' >"$tmp/out" 2>&1
if grep -q '^fc2_weight ' "$tmp/out" && ! grep -q '^onnx__Gemm_1 ' "$tmp/out"; then ok; else bad "inspect --match: $(cat "$tmp/out")"; fi
$tir inspect "$tmp/mlp.safetensors" --match '[a-' >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'bad pattern' "$tmp/err" && ok || bad "inspect --match '[a-': $(cat "$tmp/err")"
printf 'alpha = 1\nalps = 2\nbeta = 3\n.vars ^al\n' | $tir repl >"$tmp/out" 2>&1
if grep -q '^alpha ' "$tmp/out" && grep -q '^alps ' "$tmp/out" && ! grep -q '^beta ' "$tmp/out"; then ok
else bad ".vars ^al: $(cat "$tmp/out")"; fi
# --remote: the model imported here, run on a tir serve
: >"$tmp/serve.log"
$tir serve --port=0 --host=127.0.0.1 --threads=1 2>"$tmp/serve.log" &
spid=$!
trap 'kill -TERM $spid 2>/dev/null; wait $spid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
port= i=0
while [ $i -lt 1200 ] && [ -z "$port" ] && kill -0 $spid 2>/dev/null; do
	port=$(sed -n 's|^tir serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\) .*|\1|p' "$tmp/serve.log")
	[ -n "$port" ] || sleep 0.05
	i=$((i + 1))
done
if [ -n "$port" ] && $tir run "$m/mlp.onnx" --input input.1="$m/x.pb" --remote "127.0.0.1:$port" \
	--save probs="$tmp/pr.npy" --quiet >/dev/null 2>"$tmp/err" && close "$tmp/pr.npy" "$m/expect.npy"; then ok
else bad "--remote (port '$port'): $(cat "$tmp/err" "$tmp/serve.log")"; fi
kill -TERM $spid 2>/dev/null
wait $spid 2>/dev/null

# the REPL's .load of a model: its names, then an input and an output
printf '.load %s batch=2\n.input input_1=%s\n.save probs %s\n' "$m/mlp.onnx" "$m/x.npy" "$tmp/rp.npy" |
	$tir repl >"$tmp/out" 2>&1
if [ $? -eq 0 ] && close "$tmp/rp.npy" "$m/expect.npy"; then ok; else bad ".load mlp.onnx: $(cat "$tmp/out")"; fi

# protobuf-c and PCRE2 are loaded at their first use (lib/onnx/libs.c), not
# at start: a one-line run maps neither, an import protobuf-c alone, a
# pattern PCRE2
# maps LIB CMD...: whether running CMD loads LIB (the loader's own account)
maps() {
	lib=$1
	shift
	LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -q "file=$lib"
}
printf 'print add(1, 2)\n' >"$tmp/one.tir"
for lib in libprotobuf-c libpcre2-8; do
	if command -v ldd >/dev/null 2>&1; then
		ldd "$tir" | grep -q "$lib" && bad "tir is linked with $lib" || ok
	fi
	maps $lib "$tir" run --quiet "$tmp/one.tir" && bad "print add(1, 2) loads $lib" || ok
done
maps libprotobuf-c "$tir" import "$m/mlp.onnx" --dim batch=2 -o "$tmp/l.tir" && ok ||
	bad "tir import does not load libprotobuf-c"
maps libpcre2-8 "$tir" import "$m/mlp.onnx" --dim batch=2 -o "$tmp/l.tir" && bad "an import with no --rename loads PCRE2" || ok
maps libpcre2-8 "$tir" import "$m/mlp.onnx" --dim batch=2 -o "$tmp/l.tir" --rename '\.=_' && ok ||
	bad "tir import --rename does not load PCRE2"
suite_end
