#!/bin/sh
# Build every libFuzzer target fuzz/*/fuzz_*.c with clang (ASan + UBSan) and
# run each for a bounded time.
#   fuzz/run-fuzz.sh [SECONDS]   (default 60 per target)
# Environment: FUZZ_OUT (build/work directory, default /tmp/txbox-fuzz),
# CC (default clang), FUZZ_JOBS (parallel workers per target, default 1),
# FUZZ_ONLY (a pattern of target names, e.g. fuzz_gitobj; default all).
set -eu

secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${FUZZ_OUT:-/tmp/txbox-fuzz}
cc=${CC:-clang}
jobs=${FUZZ_JOBS:-1}
mkdir -p "$out"

# The sources of MODULE a target takes: all of them, but of tx only the
# git object reader (the rest of tx needs every other module).
srcs_of() {
	case "$1" in
	tx) echo "$root/src/tx/gitobj.c" ;;
	*) echo "$root/src/$1"/*.c ;;
	esac
}
# What a target of fuzz/MODULE/ links: src/util, src/MODULE and the modules
# and libraries MODULE depends on (kept here so every target builds the same
# way, without meson).
deps_of() {
	case "$1" in
	policy) echo "shell" ;;
	*) echo "" ;;
	esac
}
libs_of() {
	case "$1" in
	policy) pkg-config --cflags --libs yaml-0.1 2>/dev/null || echo "-lyaml" ;;
	tx) pkg-config --cflags --libs zlib 2>/dev/null || echo "-lz" ;;
	*) echo "" ;;
	esac
}

status=0
ok=0
bad=0
for target in "$here"/*/fuzz_*.c; do
	[ -e "$target" ] || continue
	case "$(basename "$target" .c)" in ${FUZZ_ONLY:-*}) ;; *) continue ;; esac
	mod=$(basename "$(dirname "$target")")
	name=$(basename "$target" .c)
	bin="$out/$name"
	srcs=""
	for m in util $(deps_of "$mod") "$mod"; do
		for f in $(srcs_of "$m"); do
			case "$f" in */treegen.c) continue ;; esac # a build tool with its own main()
			[ -e "$f" ] && srcs="$srcs $f"
		done
	done
	if [ "$mod" = policy ]; then
		# the built-in policy is generated at build time
		"${PYTHON:-/usr/bin/python3}" "$root/src/policy/embed.py" "$root/policy/default.yaml" "$out/default_policy.c"
		"${HOSTCC:-cc}" -std=gnu11 -D_GNU_SOURCE -I"$root/include" -I"$root/src" \
			"$root/src/policy/treegen.c" "$root/src/policy/yamltree.c" "$root/src/policy/load.c" \
			"$root/src/policy/paths.c" "$root/src/util/error.c" "$root/src/util/arena.c" \
			-lyaml -o "$out/policy-treegen"
		"$out/policy-treegen" "$root/policy/default.yaml" "$out/default_policy_tree.c"
		srcs="$srcs $out/default_policy.c $out/default_policy_tree.c"
	fi
	echo "== building $name ($mod)"
	# shellcheck disable=SC2086
	if ! "$cc" -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		-I"$root/include" -I"$root/src" $srcs "$target" $(libs_of "$mod") -o "$bin"; then
		echo "!! $name: build failed"
		status=1
		bad=$((bad + 1))
		continue
	fi
	corpus="$out/corpus-$name"
	mkdir -p "$corpus"
	seeds="$(dirname "$target")/corpus"
	echo "== running $name for ${secs}s"
	par=""
	[ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs"
	# run inside $out: libFuzzer writes fuzz-N.log files to the current directory
	# shellcheck disable=SC2086
	if ! (cd "$out" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 $par -artifact_prefix="$out/$name-" \
		"$corpus" $( [ -d "$seeds" ] && echo "$seeds" ) >"$out/$name.log" 2>&1); then
		echo "!! $name failed; see $out/$name.log"
		tail -n 40 "$out/$name.log"
		status=1
		bad=$((bad + 1))
	else
		tail -n 1 "$out/$name.log"
		ok=$((ok + 1))
	fi
done
echo "fuzz: $ok passed, $bad failed"
exit $status
