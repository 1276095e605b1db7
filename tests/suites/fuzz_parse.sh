#!/bin/sh
# tests/suites/fuzz_parse.sh — the parser's fuzz target builds and its
# corpus replays: $BUILD/tests/fuzz_parse (tests/fuzz/fuzz_parse.c with
# the plain main tests/fuzz/replay.c, built by `make` from libtir.a like
# every other program) runs once on each file of tests/fuzz/corpus, so a
# target that no longer builds or a corpus file that crashes it fails
# `make test` (and, in the ASan build, `make asan`).  `make fuzz` runs the
# same target under libFuzzer.  One check a file, one for the whole folder
# at once, and one that a file the replay cannot read fails it.
set -u
. "$(dirname "$0")/../sh-suite.sh"
suite_begin fuzz_parse
bin=$BUILD/tests/fuzz_parse
replay_each "$bin" tests/fuzz/corpus FUZZ_BIN
# the whole folder at once, as libFuzzer is given it
if timeout 120 "$bin" tests/fuzz/corpus >"$tmp/out" 2>&1 &&
   grep -q "^replay: $n inputs, 0 unreadable$" "$tmp/out"; then ok; else
	bad "replaying the folder: $(tail -n 1 "$tmp/out")"
fi
# a file that is not there fails the replay
if "$bin" "$tmp/none.tir" >"$tmp/out" 2>&1; then bad "a missing file replayed without failing"; else ok; fi
suite_end
