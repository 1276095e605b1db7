#!/bin/sh
# tests/suites/dot.sh — the plan as a picture: `tir fmt FILE --dot` for
# every sample is a graph Graphviz renders (`dot -Tpng`, a PNG comes out)
# with one cluster per kernel, as many as a run of the sample reports in
# its timing line; the REPL's `.graph NAME --dot` gives NAME's plan alone;
# misuse is exit 2 or a message.  (tests/golden/dot-plan.tir has a whole
# graph.)  Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin dot

if ! command -v dot >/dev/null 2>&1; then
	echo "dot: Graphviz's dot is missing (install graphviz: make deps)"
	echo "0 passed, 1 failed"
	exit 1
fi

for f in samples/*.tir; do
	name=${f##*/}
	"$tir" fmt "$f" --dot >"$tmp/g.dot" 2>"$tmp/err"
	st=$?
	if [ $st -ne 0 ] || [ -s "$tmp/err" ]; then
		bad "$name: tir fmt --dot exit $st"
		cat "$tmp/err"
		continue
	fi
	# Graphviz reads it: a PNG comes out, and nothing is said on stderr
	if dot -Tpng "$tmp/g.dot" >"$tmp/g.png" 2>"$tmp/err" && [ ! -s "$tmp/err" ] &&
		[ "$(head -c 4 "$tmp/g.png" | od -An -tx1 | tr -d ' ')" = "89504e47" ]; then ok; else
		bad "$name: dot -Tpng of its graph failed"
		head -n 5 "$tmp/err"
	fi
	# a cluster per kernel, as many as the run reports
	k=$("$tir" run "$f" 2>&1 >/dev/null | sed -n 's/.* -> \([0-9]*\) kernels.*/\1/p')
	c=$(grep -c '^  subgraph cluster_' "$tmp/g.dot")
	[ -n "$k" ] && [ "$c" = "$k" ] && ok || bad "$name: $c clusters, the run reports '$k' kernels"
done

# the REPL: one value's plan
printf 'a = ones([4, 4])\nb = exp(a) * 2\nc = sum(b, axis=1)\n.graph b --dot\n.graph nope --dot\n.graph c --png\n' |
	"$tir" repl >"$tmp/out" 2>"$tmp/err"
if grep -q '^digraph tir {$' "$tmp/out" && [ "$(grep -c 'subgraph cluster_' "$tmp/out")" = 1 ] &&
	grep -q 'b = mul' "$tmp/out" && ! grep -q 'sum' "$tmp/out" &&
	grep -q "no value named 'nope'" "$tmp/err" && grep -q "Usage: .graph NAME \[--dot\]" "$tmp/out" "$tmp/err"; then ok; else
	bad "the REPL's .graph NAME --dot:"
	cat "$tmp/out" "$tmp/err"
fi

# misuse
"$tir" fmt --dot >/dev/null 2>&1
st=$?
[ $st -eq 2 ] && ok || bad "tir fmt --dot without a file: exit $st, expected 2"
"$tir" fmt samples/mlp.tir --dot --dot2 >/dev/null 2>&1
st=$?
[ $st -eq 2 ] && ok || bad "tir fmt with an unknown option: exit $st, expected 2"

suite_end
