#!/bin/bash
# The main job: install, build, then show a transaction commit, a rollback
# and a denial on a scratch workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
TXBOX=$PWD/build/src/cli/txbox
WS=$(mktemp -d /var/tmp/txbox-demo.XXXXXX)
trap 'rm -rf "$WS"' EXIT
printf 'int main(void) { return 0; }\n' >"$WS/main.c"
echo "important notes" >"$WS/NOTES.md"
show() { echo "  workspace: $(cd "$WS" && ls -A | grep -v '^.txbox$' | tr '\n' ' ')"; }

echo "### 1. a build that succeeds is committed"
show
"$TXBOX" run -w "$WS" -- 'cc -o app main.c && echo built app' || true
show

echo
echo "### 2. a command that fails is rolled back: the workspace is exactly as before"
"$TXBOX" run -w "$WS" -- 'rm -rf ./* && echo "deleted everything" && exit 1' || echo "  (exit status $?)"
show

echo
echo "### 3. a destructive command is denied by policy before anything runs"
"$TXBOX" run -w "$WS" -- 'rm -rf ~' || echo "  (exit status $?)"
show

echo
echo "### 4. the same as JSON, for agents"
"$TXBOX" run -w "$WS" --json -- 'echo hello > greeting.txt' || true
