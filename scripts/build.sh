#!/bin/sh
# Configure (once) and build txbox into ./build (or $1). Quiet when the
# build succeeds; on failure ninja's output (the compiler's errors) is
# shown and the exit status is ninja's, so a failed build never leaves a
# stale binary looking current.
set -eu
cd "$(dirname "$0")/.."
B="${1:-build}"
shift 2>/dev/null || true
if [ ! -f "$B/build.ninja" ]; then
	meson setup "$B" "$@" >/dev/null
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! ninja -C "$B" >"$log" 2>&1; then
	cat "$log" >&2
	exit 1
fi
