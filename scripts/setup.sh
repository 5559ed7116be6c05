#!/bin/sh
# Install what txbox needs to build and test on Debian 12 (run as root, or
# with sudo available). Idempotent; quiet unless something fails.
set -eu
PKGS="build-essential meson ninja-build pkg-config libseccomp-dev libsqlite3-dev libyaml-dev
libcurl4-openssl-dev libcmocka-dev zlib1g-dev bubblewrap attr acl git python3 clang util-linux procps
iproute2 hyperfine gcc make tar btrfs-progs"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing:$missing"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# shellcheck disable=SC2086
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# An unprivileged account for the rootless test runs.
if [ "$(id -u)" -eq 0 ] && ! id txbox-test >/dev/null 2>&1; then
	useradd --create-home --shell /bin/sh txbox-test
fi
