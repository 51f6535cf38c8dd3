#!/usr/bin/env bash
# Run the GPU test suite under compute-sanitizer, memcheck and racecheck, on the GPU machine after
# a build in build-gpu (scripts/gpu_suite.sh's build step):
#   bash scripts/gpu_sanitize.sh
# Each GPU test executable (those whose CTest cases carry the label `gpu`) runs once per tool, with
# all its GPU tests but those marked SERIAL (timing measurements, which instrumentation makes
# meaningless). Executables run in parallel (KILN_SANITIZE_JOBS, default 4), the two tools one
# after the other for each, so no two processes share a suite's cache directory at once.
# Logs go to $OUT/sanitize (or ./gpu-out/sanitize); the summary says, per executable and tool,
# the sanitizer's error count and the tests' result. Exit status 0 only when every run is clean.
#
# Settings: KILN_GPU_BUILD_DIR (build-gpu), KILN_SANITIZE_TOOLS ("memcheck racecheck"),
# KILN_SANITIZE_JOBS (4), KILN_SANITIZE_TIMEOUT (seconds per run, 300), KILN_SANITIZE_ONLY (a
# regular expression: only executables whose name matches), KILN_SANITIZE_SPLIT (a regular
# expression, default "tuning": executables whose name matches run one process per test, in
# parallel like the rest), KILN_SANITIZE_SKIP (a regular expression: tests left out; by default
# the test that runs a second process of its own binary, and that child: the child is not
# instrumented (application-only), and on 2026-11-28 the pair never finished under memcheck, 190
# s for that test alone, where every other tuning test took 3-11 s; its kernels are those of
# Tuning.SecondInstanceReusesTheStoredChoiceWithoutTiming, which runs).
# API errors are not reported (--report-api-errors no): Kiln checks every driver result itself,
# and its tests provoke failing calls on purpose (bad launches, rejected images). Only the test
# process is instrumented (--target-processes application-only): the `kiln` tool some tests start
# compiles and launches nothing, and with it instrumented a memcheck run of test_warm_from_cache_gpu
# went past the per-run limit (2026-11-25).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${KILN_GPU_BUILD_DIR:-build-gpu}
out=${OUT:-$PWD/gpu-out}/sanitize
tools=${KILN_SANITIZE_TOOLS:-memcheck racecheck}
jobs=${KILN_SANITIZE_JOBS:-4}
limit=${KILN_SANITIZE_TIMEOUT:-300}
only=${KILN_SANITIZE_ONLY:-.}
split=${KILN_SANITIZE_SPLIT:-tuning}
skip=${KILN_SANITIZE_SKIP:-'Tuning\.(ChildProcessOfTheReuseTest|SecondProcessReusesTheStoredChoiceWithoutTiming)'}
mkdir -p "$out"

sanitizer=$(command -v compute-sanitizer || true)
for candidate in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
                 "${CUDA_HOME:-/usr/local/cuda}/compute-sanitizer/compute-sanitizer"; do
    [[ -n "$sanitizer" ]] || { [[ -x "$candidate" ]] && sanitizer=$candidate; }
done
if [[ -z "$sanitizer" ]]; then
    echo "gpu_sanitize: compute-sanitizer not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)" >&2
    exit 1
fi
if [[ ! -f "$build/CTestTestfile.cmake" ]]; then
    echo "gpu_sanitize: no build in $build: build first (scripts/gpu_suite.sh with its build step)" >&2
    exit 1
fi
"$sanitizer" --version | tail -1 | tee "$out/version.txt"

# One line per run: the executable's path, its working directory, a gtest filter of its GPU tests
# that are not SERIAL (all of them, or one where the executable is split) and the run's name,
# separated by tabs.
(cd "$build" && ctest -L gpu --show-only=json-v1) >"$out/tests.json" || exit 1
python3 - "$out/tests.json" "$only" "$split" "$skip" >"$out/plan.txt" <<'EOF' || exit 1
import collections, json, re, sys
tests = json.load(open(sys.argv[1]))["tests"]
chosen = collections.OrderedDict()
for test in tests:
    command = test.get("command") or []
    properties = {p["name"]: p["value"] for p in test.get("properties", [])}
    if len(command) < 2 or not command[1].startswith("--gtest_filter="):
        continue
    exe = command[0]
    if not re.search(sys.argv[2], exe.rsplit("/", 1)[-1]):
        continue
    directory = properties.get("WORKING_DIRECTORY", ".")
    names = chosen.setdefault((exe, directory), [])
    serial = properties.get("RUN_SERIAL", False)
    if isinstance(serial, str):
        serial = serial.upper() in ("1", "ON", "TRUE", "YES", "Y")
    name = command[1][len("--gtest_filter="):]
    if not serial and not re.fullmatch(sys.argv[4], name):
        names.append(name)
for (exe, directory), names in chosen.items():
    name = exe.rsplit("/", 1)[-1]
    if names and re.search(sys.argv[3], name):
        for test in names:
            print(exe, directory, test, name + "." + test, sep="\t")
    elif names:
        print(exe, directory, ":".join(names), name, sep="\t")
EOF

# Tests racecheck cannot check: it does not support CUDA dynamic parallelism, warns about each
# parent kernel it sees ("CUDA Dynamic Parallelism is not supported by the selected tool") and
# counts the warnings as hazards, which fails the run whatever the kernels do. memcheck runs them.
racecheck_unsupported="DeviceLaunch.AParentKernelLaunchesChildKernels:DeviceLaunch.CupysDynamicParallelismKernelRuns"

# Run one executable under each tool in turn; prints one summary line per tool.
run_one() {
    local exe=$1 directory=$2 filter=$3 name=$4 tool log start status errors result tool_filter
    for tool in $tools; do
        log="$out/$tool-$name.log"
        start=$SECONDS
        tool_filter=$filter
        [[ $tool == racecheck ]] && tool_filter="$filter-$racecheck_unsupported"
        (cd "$directory" && timeout "$limit" "$sanitizer" --tool "$tool" --error-exitcode 1 \
            --report-api-errors no --target-processes application-only --print-limit 50 "$exe" --gtest_filter="$tool_filter") >"$log" 2>&1
        status=$?
        # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
        errors=$(grep -Eo "ERROR SUMMARY: [0-9]+|\([0-9]+ errors" "$log" | tail -1 | grep -Eo "[0-9]+")
        result=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?[,.]" "$log" |
            tr -s ' ' | sed 's/, listed below://' | paste -sd' ' -)
        ((status == 124)) && result="timed out after ${limit}s"
        printf "%-10s %-28s status %-3s errors %-4s %4ss  %s\n" "$tool" "$name" "$status" \
            "${errors:-?}" "$((SECONDS - start))" "${result:-no gtest summary}"
    done
}

begin=$SECONDS
running=0
while IFS=$'\t' read -r exe directory filter name; do
    run_one "$exe" "$directory" "$filter" "$name" >"$out/summary-$name.txt" &
    if ((++running >= jobs)); then
        wait -n
        ((running--))
    fi
done <"$out/plan.txt"
wait
cat "$out"/summary-*.txt | sort | tee "$out/summary.txt"
echo "compute-sanitizer: $(wc -l <"$out/summary.txt") runs in $((SECONDS - begin))s; logs in $out"
# Clean: every run exited 0 and its sanitizer counted no error.
if grep -Ev "status 0 +errors 0 " "$out/summary.txt" >/dev/null; then
    echo "compute-sanitizer: FAILED (see the lines above without 'status 0 errors 0')"
    exit 1
fi
echo "compute-sanitizer: clean"
