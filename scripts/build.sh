#!/bin/sh
# Configure (once) and build txbox into ./build (or $1).
set -eu
cd "$(dirname "$0")/.."
B="${1:-build}"
shift 2>/dev/null || true
if [ ! -f "$B/build.ninja" ]; then
	meson setup "$B" "$@" >/dev/null
fi
ninja -C "$B" >/dev/null
