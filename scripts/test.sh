#!/bin/sh
# Install what is needed, build, and run the whole test suite.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
exec tests/run-all.sh
