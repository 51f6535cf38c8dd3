#!/usr/bin/env bash
# Build Kiln with sanitizers and run its CPU test suite under them; any report fails the run.
#   scripts/sanitize.sh address   # AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer),
#                                 # built in build-asan
#   scripts/sanitize.sh thread    # ThreadSanitizer, built in build-tsan
# Builds with line tables for the reports (-g1; AddressSanitizer at -O0, which compiles about 2.4x
# faster than -O1 with it and is what CI's time allows; ThreadSanitizer at -O1) without benchmarks
# or GPU tests (they would only skip). Every process the tests
# start (the `kiln` tool included) inherits the options, so a report anywhere stops that process
# and is also written under <build>/sanitizer-logs: a report in a process whose failure a test
# expects still fails the run. The GPU suite is checked with compute-sanitizer instead
# (scripts/gpu_sanitize.sh): host sanitizers and the CUDA driver do not mix.
# Left out: package_client and package_deb, which install this build and link a client project against it
# without the sanitizer runtime (its link fails by design; it tests packaging, not memory).
# Extra ctest arguments may follow the kind, e.g. `scripts/sanitize.sh thread -R test_threads`;
# KILN_SANITIZE_TARGETS="test_threads ..." then builds only those targets.
# KILN_SANITIZE_EXCLUDE="REGEX" leaves out more tests (CI: those whose time goes to NVRTC).
# KILN_SANITIZE_GPU=1 (on a GPU machine) builds and runs the GPU tests too; host sanitizers see
# Kiln's threads and memory around the driver, compute-sanitizer sees the kernels.
# KILN_SANITIZE_CXX: the compiler. Default for address: clang++-14 (installed here from Debian's
# clang-14 and its sanitizer runtimes, as for the fuzzers), which builds the unoptimized
# instrumented tree in 55-70% of g++'s time (what keeps CI inside its 30 minutes) and compiles Kiln
# with a second compiler on every run; for thread: the system's c++ (at -O1 clang is no faster).
# A build directory configured with another compiler is remade.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case "$kind" in
address) preset=asan build=build-asan ;;
thread) preset=tsan build=build-tsan ;;
*)
    echo "usage: scripts/sanitize.sh address|thread [ctest arguments...]" >&2
    exit 2
    ;;
esac
shift
suppressions=$PWD/scripts/sanitizers
gpu_tests=OFF labels=cpu
if [[ ${KILN_SANITIZE_GPU:-0} == 1 ]]; then
    gpu_tests=ON labels="cpu|gpu"
fi

default_cxx=c++
[[ $kind == address ]] && default_cxx=clang++-14
# The libraries in batches of sources (KILN_LIBRARY_UNITY_BUILD), built faster and instrumented
# the same.
unity=ON
cxx=${KILN_SANITIZE_CXX:-$default_cxx}
link_flags=()
if [[ $cxx == clang++-14 ]]; then
    scripts/install_packages.sh clang-14 libclang-rt-14-dev lld-14
    # LLVM's linker links an instrumented test in a quarter of the time GNU ld takes.
    link_flags=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld)
fi
if [[ -f $build/CMakeCache.txt ]] &&
    ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$(command -v "$cxx")" "$build/CMakeCache.txt"; then
    rm -rf "$build"
fi
# The asan / tsan presets of CMakePresets.json (build-asan, build-tsan).
cmake --preset "$preset" -DCMAKE_CXX_COMPILER="$cxx" "${link_flags[@]}" \
    -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" -DKILN_BUILD_GPU_TESTS="$gpu_tests" \
    -DKILN_LIBRARY_UNITY_BUILD="$unity" \
    ${KILN_CMAKE_ARGS:-} >/dev/null
# KILN_SANITIZE_TARGETS: build only these targets (with `-R` among the ctest arguments to run
# only their tests), for a focused run that costs a fraction of the whole build.
if [[ -n ${KILN_SANITIZE_TARGETS:-} ]]; then
    # shellcheck disable=SC2086 # a list of target names
    cmake --build "$build" -j"$(nproc)" --target ${KILN_SANITIZE_TARGETS}
else
    cmake --build "$build" -j"$(nproc)"
fi

logs=$PWD/$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
common="halt_on_error=1:print_stacktrace=1:log_path=$logs/report"
export ASAN_OPTIONS="$common:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
# The CUDA driver maps memory where AddressSanitizer's shadow gap would be protected.
[[ $gpu_tests == ON ]] && ASAN_OPTIONS="$ASAN_OPTIONS:protect_shadow_gap=0"
export UBSAN_OPTIONS="$common"
export LSAN_OPTIONS="suppressions=$suppressions/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="$common:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp"

status=0
# KILN_SANITIZE_EXCLUDE: a regex of more tests to leave out (ctest keeps only one -E).
exclude='^package_(client|deb)$'
[[ -n ${KILN_SANITIZE_EXCLUDE:-} ]] && exclude="$exclude|$KILN_SANITIZE_EXCLUDE"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -L "$labels" -E "$exclude" "$@" ||
    status=1

# LeakSanitizer's own stop-the-world tracer crashes now and then at a process's exit, after its
# work passed ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal error"; google/
# sanitizers#1353, twice in one CI run here on 2 busy cores, never again in isolation). When every
# report is that and nothing else, the reports are kept aside and the failed tests run once more:
# a real finding in them reports again. Any other report fails the run as before.
tracer_crashes_only() {
    local report
    for report in "$logs"/report*; do
        grep -q 'Tracer caught signal' "$report" &&
            ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error|ThreadSanitizer' \
                "$report" || return 1
    done
}
if compgen -G "$logs/report*" >/dev/null && tracer_crashes_only; then
    aside=$PWD/$build/sanitizer-tracer-crashes
    rm -rf "$aside" && mkdir -p "$aside" && mv "$logs"/report* "$aside"/
    echo "sanitize.sh $kind: LeakSanitizer's tracer crashed at exit (kept in $aside); the failed tests again:"
    status=0
    if [[ -s $build/Testing/Temporary/LastTestsFailed.log ]]; then
        ctest --test-dir "$build" --output-on-failure --rerun-failed || status=1
    fi
fi
if compgen -G "$logs/report*" >/dev/null; then
    echo "sanitize.sh $kind: sanitizer reports (from $logs):"
    cat "$logs"/report*
    status=1
fi
echo "sanitize.sh $kind: $([ $status -eq 0 ] && echo clean || echo FAILED)"
exit $status
