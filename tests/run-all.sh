#!/bin/bash
# The whole test suite: unit (C, cmocka), parser differential vs bash,
# integration (real overlayfs/namespaces, as root and as an unprivileged
# user), security escapes, destructive commands in a disposable root (harm),
# an ASan+UBSan run, and bounded fuzzing.
# Ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${BUILD_DIR:-build}
PASSED=0
FAILED=0
LOG=${TEST_LOG_DIR:-$ROOT/build-testlogs}
mkdir -p "$LOG"
TEST_USER=${TEST_USER:-txbox-test}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
# Debian's python3, not a version manager's shim that may shadow it on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

add() { # suite passed failed
	echo "== $1: $2 passed, $3 failed"
	PASSED=$((PASSED + $2))
	FAILED=$((FAILED + $3))
}

# meson test output → counts
meson_suite() { # label builddir suite
	local out="$LOG/$1.log"
	if ! meson test -C "$2" --suite "$3" --print-errorlogs --num-processes 2 >"$out" 2>&1; then
		grep -E "^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|ERROR)" "$out" | head -20
	fi
	local ok fail to
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$out" | tail -1)
	fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$out" | tail -1)
	to=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$out" | tail -1)
	ok=${ok:-0}
	fail=$(( ${fail:-0} + ${to:-0} ))
	if [ "$ok" = 0 ] && [ "$fail" = 0 ]; then
		if grep -q "No tests defined\|No suitable tests" "$out"; then
			echo "== $1: no tests registered"
			return
		fi
		echo "== $1: could not run (see $out)"
		tail -5 "$out"
		fail=1
	fi
	add "$1" "$ok" "$fail"
}

# a runner printing "<label>: N passed, N failed"
counted() { # label command...
	local label=$1
	shift
	local out="$LOG/$label.log"
	"$@" >"$out" 2>&1
	local rc=$?
	local line
	line=$(grep -E "^[a-z-]*:? ?[0-9]+ passed, [0-9]+ failed" "$out" | tail -1)
	if [ -z "$line" ]; then
		echo "== $label: no result line (exit $rc); tail of $out:"
		tail -15 "$out"
		add "$label" 0 1
		return
	fi
	grep -E "^(FAIL|not ok)" "$out" | head -30
	local p f
	p=$(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+')
	f=$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	add "$label" "$p" "$f"
}

echo "== build"
if ! scripts/build.sh "$B" >"$LOG/build.log" 2>&1; then
	cat "$LOG/build.log" | tail -40
	echo "0 passed, 1 failed"
	exit 1
fi
TXBOX=$ROOT/$B/src/cli/txbox
export TXBOX

meson_suite unit "$B" unit
meson_suite shell-diff "$B" diff

# The unprivileged runs need the suites and the binary where that user can
# read them (a clone under /root is not): a world-readable copy.
USER_COPY=""
if id "$TEST_USER" >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	USER_COPY=$(mktemp -d /var/lib/txbox-ci.XXXXXX)
	chmod 755 "$USER_COPY"
	mkdir -p "$USER_COPY/build/src/cli"
	cp -a tests policy "$USER_COPY/"
	cp "$TXBOX" "$USER_COPY/build/src/cli/txbox"
	chmod -R a+rX "$USER_COPY"
	trap 'rm -rf "$USER_COPY"' EXIT
fi

counted integration-root "$PY" tests/integration/run.py
if [ -n "$USER_COPY" ]; then
	TXBOX=$USER_COPY/build/src/cli/txbox counted integration-user \
		"$PY" "$USER_COPY/tests/integration/run.py" --as-user "$TEST_USER"
fi
counted crash "$PY" tests/crash/crash_test.py
counted security-root "$PY" tests/security/run.py
if [ -n "$USER_COPY" ]; then
	TXBOX=$USER_COPY/build/src/cli/txbox counted security-user \
		"$PY" "$USER_COPY/tests/security/run.py" --as-user "$TEST_USER" --txbox "$USER_COPY/build/src/cli/txbox"
fi

# Destructive commands inside a disposable root (built with namespaces, so
# root only); the rootless run drops to $TEST_USER inside that root.
if [ "$(id -u)" = 0 ]; then
	counted harm-root "$PY" tests/harm/run.py --txbox "$TXBOX"
	if id "$TEST_USER" >/dev/null 2>&1; then
		counted harm-user "$PY" tests/harm/run.py --mode user --user "$TEST_USER" --txbox "$TXBOX"
	else
		echo "== harm-user: skipped (no user $TEST_USER)"
	fi
else
	echo "== harm: skipped (the disposable root needs root)"
fi

# Sanitizers: the unit tests and the integration suite's quick subset.
echo "== asan+ubsan build"
if scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
	>"$LOG/build-asan.log" 2>&1; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson_suite unit-asan build-asan unit
	if [ -f tests/integration/run.py ]; then
		TXBOX=$ROOT/build-asan/src/cli/txbox ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
			counted integration-asan "$PY" tests/integration/run.py -k exit/ -k isolation/ -k guard/ \
			-k 'commit/m/*' -k 'rollback/m/*' -k 'commit/hardlink/*' -k timeout/
	fi
else
	tail -30 "$LOG/build-asan.log"
	add asan-build 0 1
fi

if [ -x fuzz/run-fuzz.sh ] && command -v clang >/dev/null; then
	counted fuzz fuzz/run-fuzz.sh "$FUZZ_SECONDS"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
