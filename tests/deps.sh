#!/bin/sh
# tests/deps.sh PKG... — the dependency step: make sure these Debian packages
# are installed.  Nothing missing: silent, exit 0.  Something missing and
# we are root: install it, with no prompt (it runs in CI, without a
# terminal).  Otherwise print the command to run and exit 1.  POSIX sh.
set -u

missing=
for pkg in "$@"; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) || status=
	[ "$status" = "install ok installed" ] || missing="$missing $pkg"
done
missing=${missing# }
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "run: sudo apt-get install -y $missing"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! apt-get install -y -qq --no-install-recommends $missing </dev/null >/dev/null 2>&1; then
	# the package lists may be missing or stale: update once, then retry
	apt-get update -qq </dev/null || exit 1
	apt-get install -y -qq --no-install-recommends $missing </dev/null || exit 1
fi
