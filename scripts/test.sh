#!/usr/bin/env bash
# The README's test command after scripts/setup.sh --tests: the whole suite (ctest -j2 over
# build/), then the tests that skipped, grouped by the reason each gave (GTEST_SKIP's message, or
# what ctest says). Extra arguments go to ctest (-L cpu, -R Cli...). Exits with ctest's status.
set -uo pipefail
cd "$(dirname "$0")/.."
junit=build/ctest-junit.xml
rm -f "$junit"
ctest --test-dir build --output-on-failure -j2 --output-junit "$PWD/$junit" "$@"
status=$?
[ -f "$junit" ] && scripts/skipped_tests.sh "$junit"
exit "$status"
