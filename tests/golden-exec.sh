# tests/golden-exec.sh — sourced by tests/run.sh and tests/golden-update.sh:
# how a golden case is run, written once.
#
# golden_exec TIR DIR NAME SRC OUT ERR [EXTRA]: run case NAME (DIR/NAME.tir)
# with the command its first line names (`# tir: CMD ARGS...`, read from
# SRC; `run --quiet` when there is none) and the options EXTRA after them,
# in DIR, stdout to OUT, stderr to ERR, with a 20 s timeout.  `# tir: repl ...` pipes the file into `tir repl`.
# Sets verb (the command), args (its arguments) and st (the exit status).
golden_exec() {
	_line=$(head -n 1 "$4" | tr -d '\r')
	case $_line in
	"# tir: "*) _cmd=${_line#"# tir: "} ;;
	*) _cmd="run --quiet" ;;
	esac
	_tir=$1 _dir=$2 _name=$3 _out=$5 _err=$6
	set -f
	# shellcheck disable=SC2086 # the command line: split on purpose
	set -- $_cmd ${7:-}
	set +f
	verb=$1
	shift
	args="$*"
	if [ "$verb" = repl ]; then
		(cd "$_dir" && timeout 20 "$_tir" repl "$@" <"$_name.tir" >"$_out" 2>"$_err")
	else
		(cd "$_dir" && timeout 20 "$_tir" "$verb" "$_name.tir" "$@" >"$_out" 2>"$_err")
	fi
	st=$?
}

# golden_same WANT GOT MSG: 0 when GOT agrees with the golden WANT: the same
# bytes, or the same text with every float within tests/numdiff.py's stated
# tolerance (results through OpenBLAS and tir's vector paths move in the
# last digits between machines).  Otherwise 1, with numdiff's message (where
# and what) and the first lines of a unified diff in MSG.
golden_same() {
	cmp -s "$1" "$2" && return 0
	if python3 "${root:?}/tests/numdiff.py" "$1" "$2" >"$3" 2>&1; then
		return 0
	fi
	diff -u --label "$1 (expected)" --label "got" "$1" "$2" | head -n 40 >>"$3"
	return 1
}
