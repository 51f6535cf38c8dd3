#!/usr/bin/env bash
# Builds Kiln's libFuzzer targets (fuzz/) in build-fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, then runs each for a bounded time on a copy of its seed corpus and
# of the crashers already fixed (tests/fuzz/regressions), so the repository is never modified.
# Exits non-zero on any finding: a crash, a sanitizer report, a leak, a timeout or running out of
# memory. Findings are kept in the build directory (fuzz-artifacts/) with the run's log.
#
#   scripts/fuzz.sh [SECONDS]           each target for SECONDS (default 60, or $KILN_FUZZ_SECONDS)
#   scripts/fuzz.sh SECONDS -- ARGS...  extra libFuzzer options (e.g. -runs=1000000 -seed=1)
#
# Environment: KILN_FUZZ_BUILD_DIR (default build-fuzz), KILN_FUZZ_CXX (default clang++-14),
# KILN_FUZZ_TARGETS (default "fuzz_param_spec fuzz_cache_entry"), KILN_FUZZ_JOBS (build jobs).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${KILN_FUZZ_SECONDS:-60}
if [[ $# -gt 0 && $1 != -- ]]; then
    seconds=$1
    shift
fi
[[ ${1:-} == -- ]] && shift
extra=("$@")
build=${KILN_FUZZ_BUILD_DIR:-$root/build-fuzz}
cxx=${KILN_FUZZ_CXX:-clang++-14}
read -r -a targets <<<"${KILN_FUZZ_TARGETS:-fuzz_param_spec fuzz_cache_entry}"
jobs=${KILN_FUZZ_JOBS:-$(nproc)}

"$root/scripts/install_packages.sh" clang-14 libclang-rt-14-dev

start=$SECONDS
# Only what the fuzzers need: no tests, tools, install rules or benches in this tree.
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_BUILD_FUZZERS=ON -DKILN_SANITIZE="address;undefined" \
    -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_TOOLS=OFF -DKILN_INSTALL=OFF -DKILN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
echo "fuzz.sh: built in $((SECONDS - start)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for target in "${targets[@]}"; do
    corpus=$work/$target
    mkdir -p "$corpus"
    cp "$root/fuzz/corpus/$target/"* "$corpus/"
    if [[ -d $root/tests/fuzz/regressions/$target ]]; then
        find "$root/tests/fuzz/regressions/$target" -type f ! -name README.md \
            -exec cp {} "$corpus/" \;
    fi
    options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
             -artifact_prefix="$artifacts/$target-")
    [[ -f $root/fuzz/$target.dict ]] && options+=(-dict="$root/fuzz/$target.dict")
    log=$artifacts/$target.log
    run_start=$SECONDS
    if "$build/fuzz/$target" "${options[@]}" "${extra[@]}" "$corpus" >"$log" 2>&1; then
        echo "fuzz.sh: $target: no finding in $((SECONDS - run_start)) s," \
             "$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs" \
             "($(grep 'cov:' "$log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*'))"
    else
        status=1
        echo "fuzz.sh: $target: FINDING (log and input under $artifacts):"
        grep -E 'ERROR|runtime error|SUMMARY|Test unit written|uncaught exception|HarnessFailure' \
            "$log" | head -20 || tail -40 "$log"
    fi
done
echo "fuzz.sh: total $((SECONDS - start)) s"
exit "$status"
