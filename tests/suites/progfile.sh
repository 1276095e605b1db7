#!/bin/sh
# tests/suites/progfile.sh — the program file, mapped or read: a file of
# 64 KiB or more is mapped (cli_read_file), a smaller one, standard input,
# a pipe and a FIFO are read; each way the same program gives the same
# output.  Sizes at the edges: exactly 64 KiB and a byte less, a size that
# is a whole number of pages (no byte after the text in its last page),
# with and without a newline at its end; a syntax error on the last line
# of a mapped file is reported at its place; an empty file; a file cut
# short as it is mapped (read as it is then) and once its text is mapped
# (SIGBUS: said plainly, exit 1); an error found when the program runs
# quotes the mapped text it reads in place.
# Prints `N passed, M failed` last.
. "$(dirname "$0")/../sh-suite.sh"
suite_begin progfile

# prog FILE SIZE [END]: a program of exactly SIZE bytes that counts its
# statements (`a = a + 1`, padded with a comment line so the size is
# exact) and prints the count; END: "nl" (default) ends it with a
# newline, "bare" with the print statement and no newline.  Its expected
# output (the count) is in FILE.want.
prog() {
	"$py" - "$1" "$2" "${3:-nl}" <<'PY'
import sys
path, size, end = sys.argv[1], int(sys.argv[2]), sys.argv[3]
head = "a = 0\n"
tail = "print a\n" if end == "nl" else "print a"
step = "a = a + 1\n"
n = (size - len(head) - len(tail) - 4) // len(step)
body = head + step * n
pad = size - len(body) - len(tail)
assert pad >= 2
body += "#" + "x" * (pad - 2) + "\n"
text = body + tail
assert len(text) == size, (len(text), size)
open(path, "w").write(text)
open(path + ".want", "w").write("%d\n" % n)
PY
}

# same NAME FILE: tir run of FILE gives the count in FILE.want, exit 0
same() {
	timeout 60 "$tir" run --quiet "$2" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = "$(cat "$2.want")" ] && [ ! -s "$tmp/err" ]; then ok; else
		bad "$1: exit $st, printed '$(tail -n 1 "$tmp/out")', want $(cat "$2.want")"
		head -n 5 "$tmp/err"
	fi
}

# the threshold and page edges: 64 KiB - 1 (read), 64 KiB (mapped, a whole
# number of pages), 17 pages, and 17 pages ending without a newline
for spec in 65535:nl 65536:nl 69632:nl 69632:bare 69633:bare 300000:nl; do
	size=${spec%%:*} end=${spec#*:}
	prog "$tmp/p$size$end.tir" "$size" "$end"
	[ "$(wc -c <"$tmp/p$size$end.tir")" -eq "$size" ] || bad "the test's file is not $size bytes"
	same "a program file of $size bytes ($end)" "$tmp/p$size$end.tir"
done

# the same big text read from standard input (a pipe; redirected from the
# file: read, never mapped), /dev/stdin and a FIFO
big=$tmp/p300000nl.tir
for how in pipe-dash pipe-devstdin redirect-dash redirect-devstdin fifo; do
	case $how in
	pipe-dash) cat "$big" | timeout 60 "$tir" run --quiet - >"$tmp/out" 2>"$tmp/err" ;;
	pipe-devstdin) cat "$big" | timeout 60 "$tir" run --quiet /dev/stdin >"$tmp/out" 2>"$tmp/err" ;;
	redirect-dash) timeout 60 "$tir" run --quiet - <"$big" >"$tmp/out" 2>"$tmp/err" ;;
	redirect-devstdin) timeout 60 "$tir" run --quiet /dev/stdin <"$big" >"$tmp/out" 2>"$tmp/err" ;;
	fifo)
		rm -f "$tmp/fifo"
		mkfifo "$tmp/fifo" || { bad "mkfifo failed"; continue; }
		# (the writer blocks until tir opens the FIFO; timeout bounds both)
		timeout 60 sh -c 'cat "$1" >"$2"' sh "$big" "$tmp/fifo" &
		timeout 60 "$tir" run --quiet "$tmp/fifo" >"$tmp/out" 2>"$tmp/err"
		wait
		;;
	esac
	st=$?
	if [ $st -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = "$(cat "$big.want")" ]; then ok; else
		bad "the big program by $how: exit $st, printed '$(tail -n 1 "$tmp/out")'"
		head -n 5 "$tmp/err"
	fi
done

# a syntax error on the last line of a mapped file (no newline after it,
# the file a whole number of pages): reported at its line and column
"$py" - "$tmp/err.tir" <<'PY'
import sys
step = "a = a + 1\n"
text = "a = 0\n" + step * 7000
bad = "b = a +* 2"
pad = 4096 * 18 - len(text) - len(bad)
assert 0 < pad
text += "#" + "x" * (pad - 2) + "\n" + bad
assert len(text) % 4096 == 0 and len(text) >= 65536
open(sys.argv[1], "w").write(text)
PY
line=$(($(wc -l <"$tmp/err.tir") + 1))
timeout 60 "$tir" run "$tmp/err.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -eq 1 ] && grep -q "^$tmp/err.tir:$line:8: error" "$tmp/err" && [ ! -s "$tmp/out" ]; then ok; else
	bad "a syntax error at the end of a mapped file: exit $st"
	head -n 5 "$tmp/err"
fi

# tir check and tir fmt take the program file the same way
timeout 60 "$tir" check "$big" >"$tmp/out" 2>"$tmp/err" && ok || { bad "tir check of a big program: exit $?"; cat "$tmp/err"; }
timeout 60 "$tir" fmt "$big" >"$tmp/fmt.tir" 2>"$tmp/err" && cp "$big.want" "$tmp/fmt.tir.want" &&
	same "the big program through tir fmt" "$tmp/fmt.tir" || bad "tir fmt of a big program"

# empty, and a file of 64 KiB of blank lines: nothing to do
: >"$tmp/empty.tir"
"$py" -c 'import sys; open(sys.argv[1], "w").write("\n" * 65536)' "$tmp/blank.tir"
for f in empty blank; do
	timeout 60 "$tir" run --quiet "$tmp/$f.tir" >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st -eq 0 ] && [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ] && ok || { bad "a $f program: exit $st"; cat "$tmp/err"; }
done

# a file cut short while tir maps it (a shim over mmap and fstat cuts it
# to CUT_AT bytes, as a writer truncating it would): right after the
# mapping, tir sees the new size and reads the file as it is now; after
# its size was checked, the parse's read past the new end is SIGBUS,
# said plainly, exit 1
cc=${CC:-cc}
cat >"$tmp/cut.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
static int armed = -1; /* the fd of a file just mapped */
static void cut(int fd)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	int w = open(p, O_WRONLY);
	if (w >= 0) {
		if (ftruncate(w, atol(getenv("CUT_AT"))) != 0)
			perror("ftruncate");
		close(w);
	}
}
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *(*real)(void *, size_t, int, int, int, off_t) = dlsym(RTLD_NEXT, "mmap");
	void *m = real(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && fd >= 0 && prot == PROT_READ && len >= 65536 && getenv("CUT_AT")) {
		if (!strcmp(getenv("CUT_WHEN"), "mmap"))
			cut(fd);
		else
			armed = fd;
	}
	return m;
}
int fstat(int fd, struct stat *st)
{
	int (*real)(int, struct stat *) = dlsym(RTLD_NEXT, "fstat");
	int rc = real(fd, st);
	if (fd == armed) {
		armed = -1;
		cut(fd);
	}
	return rc;
}
C
if $cc -shared -fPIC -o "$tmp/cut.so" "$tmp/cut.c" -ldl 2>"$tmp/cc.err"; then
	"$py" - "$tmp/cut.tir" <<'PY'
import sys
head = "a = 0\n" + "a = a + 1\n" * 50 + "print a\n"
text = head + ("# " + "x" * 60 + "\n") * 3000
open(sys.argv[1], "w").write(text)
open(sys.argv[1] + ".at", "w").write(str(len(head)))
PY
	at=$(cat "$tmp/cut.tir.at")
	cp "$tmp/cut.tir" "$tmp/cut2.tir"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD="$tmp/cut.so" CUT_AT=$at CUT_WHEN=mmap timeout 60 "$tir" run --quiet "$tmp/cut.tir" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = 50 ] && [ "$(wc -c <"$tmp/cut.tir")" -eq "$at" ]; then ok; else
		bad "a program file cut short as it was mapped: exit $st, printed '$(cat "$tmp/out")'"
		head -n 5 "$tmp/err"
	fi
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD="$tmp/cut.so" CUT_AT=100 CUT_WHEN=fstat timeout 60 "$tir" run --quiet "$tmp/cut2.tir" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -eq 1 ] && grep -q "^tir: the program file was truncated while it was read (SIGBUS)$" "$tmp/err" &&
		[ ! -s "$tmp/out" ]; then ok; else
		bad "a program file cut short while mapped: exit $st"
		head -n 5 "$tmp/err"
	fi
else
	bad "cannot build the shim: $(head -n 3 "$tmp/cc.err")"
fi

# the program reads a mapped text in place (no copy): an error found when
# it runs, after the parse, still quotes its line from the mapped file
"$py" - "$tmp/late.tir" <<'PY'
import sys
open(sys.argv[1], "w").write("input q: f32[2]\na = 0\n" + "a = a + 1\n" * 7000 + "print q * a\n")
PY
timeout 60 "$tir" run "$tmp/late.tir" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -eq 1 ] && grep -q "^$tmp/late.tir:1:7: error: input 'q' has no value" "$tmp/err" &&
	grep -qx "    input q: f32\[2\]" "$tmp/err" && [ ! -s "$tmp/out" ]; then ok; else
	bad "an error at run time in a mapped program: exit $st"
	head -n 5 "$tmp/err"
fi

# the REPL's .load of a big file (read, not mapped) gives the same count
printf '.load %s\nprint a\n' "$big" | timeout 60 "$tir" repl >"$tmp/out" 2>"$tmp/err"
if grep -qx "$(cat "$big.want")" "$tmp/out"; then ok; else
	bad "the REPL's .load of a big program"
	tail -n 3 "$tmp/out" "$tmp/err"
fi

suite_end
