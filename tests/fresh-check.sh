#!/bin/sh
# tests/fresh-check.sh — the README's two commands, the way a new user meets
# them: on a fresh Debian 12 root where only make and git were installed.
# `make fresh-check` runs it; it is not part of `make test` (it downloads
# Debian's packages and takes several minutes).  Needs root.
#
#  1. debootstrap --variant=minbase bookworm into build-fresh/root (made
#     anew each time; FRESH_MIRROR picks another Debian mirror, else
#     debootstrap's own default);
#  2. chroot: apt-get install make git;
#  3. a clone of this repository's committed HEAD (not the work tree: what
#     a user clones), made inside the root with its own git;
#  4. chroot, as root, with /proc, /sys, /dev and /dev/pts bound (the pty
#     and socket tests need them), in a clean environment: `make run`, then
#     `make test`.  Each one's output goes to build-fresh/NAME.log.
#
# It prints one line per step and exits 0 only when both commands exit 0
# the first time.  OPENBLAS_CORETYPE, when set here, is passed in as a
# user's machine would have it.  The mounts are undone on every exit.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
if [ "$(id -u)" -ne 0 ]; then
	echo "fresh-check: needs root (debootstrap, chroot and bind mounts)" >&2
	exit 1
fi
sh tests/deps.sh debootstrap git || exit 1

work=$root/build-fresh
dir=$work/root
suite=bookworm

# unmount_all: everything mounted under $dir, deepest first
unmount_all() {
	awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
}
cleanup() { unmount_all; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# a root left by an earlier run goes, but never with anything mounted in it
unmount_all
if awk -v d="$dir" 'index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
	echo "fresh-check: $dir still has mounts; not removing it" >&2
	exit 1
fi
rm -rf "$work"
mkdir -p "$work"

step() { printf 'fresh-check: %s\n' "$*"; }
elapsed() { echo $(($(date +%s) - t0))s; }

t0=$(date +%s)
# shellcheck disable=SC2086 # an empty mirror is no argument
if ! debootstrap --variant=minbase "$suite" "$dir" ${FRESH_MIRROR:-} >"$work/debootstrap.log" 2>&1; then
	step "debootstrap failed (build-fresh/debootstrap.log):"
	tail -n 5 "$work/debootstrap.log"
	exit 1
fi
step "debootstrap --variant=minbase $suite: $(elapsed)"

cp /etc/resolv.conf "$dir/etc/resolv.conf"
mount -t proc proc "$dir/proc" &&
	mount --bind /sys "$dir/sys" &&
	mount --bind /dev "$dir/dev" &&
	mount --bind /dev/pts "$dir/dev/pts" || {
	step "mounting /proc, /sys, /dev, /dev/pts failed"
	exit 1
}

# in_root CMD: CMD by sh in the root, as root, in a clean environment
in_root() {
	chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE} \
		/bin/sh -c "$1" </dev/null
}

t0=$(date +%s)
if ! in_root 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq make git' \
	>"$work/make-git.log" 2>&1; then
	step "apt-get install make git failed (build-fresh/make-git.log):"
	tail -n 5 "$work/make-git.log"
	exit 1
fi
step "apt-get install make git: $(elapsed)"

# the committed HEAD, carried in as a bundle and cloned by the root's git
git bundle create "$dir/tmp/tir.bundle" HEAD >/dev/null 2>&1 || {
	step "git bundle failed"
	exit 1
}
head=$(git rev-parse --short HEAD)
if ! in_root 'git clone -q /tmp/tir.bundle /root/tir' >"$work/clone.log" 2>&1; then
	step "git clone failed (build-fresh/clone.log):"
	tail -n 5 "$work/clone.log"
	exit 1
fi
step "git clone (HEAD $head) into /root/tir"

status=0
for cmd in "make run" "make test"; do
	log=$work/$(echo "$cmd" | tr ' ' '-').log
	t0=$(date +%s)
	in_root "cd /root/tir && $cmd" >"$log" 2>&1
	st=$?
	step "$cmd: exit $st, $(elapsed) (build-fresh/${log##*/}); its last lines:"
	tail -n 6 "$log" | sed 's/^/    /'
	[ $st -eq 0 ] || status=1
done
if [ $status -eq 0 ]; then
	step "passed: both commands worked the first time on a fresh Debian $suite"
else
	step "FAILED"
fi
exit $status
