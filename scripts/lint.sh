#!/usr/bin/env bash
# Static checks: clang-format (.clang-format) over every tracked C++ file, then clang-tidy
# (.clang-tidy) over every translation unit of the repository in the release build's compile
# database (build/, configured here if missing). Generated sources in the build directory are not
# analysed. Exits non-zero on any formatting difference or clang-tidy finding, and prints how long
# each part took.
#
#   scripts/lint.sh            both parts
#   scripts/lint.sh --library  both parts, clang-tidy over the library only (base, cache,
#                              runtime, kernels). CI runs this, for time: of clang-tidy's 17 minutes over
#                              everything on 2 cores, the tests took 54%, the `kiln` tool 19% (each
#                              of its files parses CLI11) and the benchmarks, fuzzers and examples
#                              8%. All of them are formatted and built either way.
#   scripts/lint.sh FILE...    clang-tidy on the given .cpp files only (after the format check)
#
# Environment: KILN_LINT_BUILD_DIR (default build), KILN_LINT_JOBS (default nproc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
everything=1
if [[ ${1:-} == --library ]]; then
    everything=0
    shift
fi
cd "$root"
build=${KILN_LINT_BUILD_DIR:-$root/build}
jobs=${KILN_LINT_JOBS:-$(nproc)}

# Debian's clang-format and clang-tidy 14 (CI and developer tools; not needed to build Kiln).
"$root/scripts/install_packages.sh" clang-format-14 clang-tidy-14

start=$SECONDS
git ls-files -z '*.cpp' '*.hpp' '*.h' '*.cuh' | xargs -0 clang-format-14 --dry-run -Werror
echo "lint.sh: clang-format clean in $((SECONDS - start)) s"

start=$SECONDS
if [[ ! -f $build/compile_commands.json ]]; then
    if [[ $build == "$root/build" ]]; then
        cmake --preset release -DCUDAToolkit_ROOT="${CUDAToolkit_ROOT:-/usr/local/cuda}" >/dev/null
    else
        echo "lint.sh: no compile_commands.json in $build" >&2
        exit 1
    fi
fi
# The repository's own directories: sources analysed, headers reported.
dirs='(base|cache|runtime|kernels|tools|tests|bench|fuzz|examples)'
library='(base|cache|runtime|kernels)'
extra=()
if [[ $# -gt 0 ]]; then
    files=()
    for f in "$@"; do files+=("^$(realpath "$f")\$"); done
elif ((everything)); then
    files=("^$root/$dirs/.*\\.cpp\$")
elif grep -qE "\"file\": \"$build/$library/.*/Unity/unity_[0-9]+_cxx\\.cxx\"" "$build/compile_commands.json"; then
    # A build with the libraries in batches (KILN_LIBRARY_UNITY_BUILD, as scripts/setup.sh
    # configures it): each batch is analysed as the compiler sees it, and the header filter
    # reports what it finds in the batch's sources. The headers are then parsed once per batch, not
    # once per source. Sources kept out of the batches are in the database as themselves.
    files=("^$build/$library/.*/Unity/unity_[0-9]+_cxx\\.cxx\$" "^$root/$library/.*\\.cpp\$")
    # A batch includes its sources by design.
    extra=(-checks=-bugprone-suspicious-include)
else
    files=("^$root/$library/.*\\.cpp\$")
fi
log=$(mktemp)
database=$(mktemp -d)
trap 'rm -rf "$log" "$database"' EXIT
# The kiln tool builds in two unity batches (KILN_TOOL_UNITY_BUILD), so compile_commands.json
# names its unity file, not its sources: to analyse them, the build is configured without it for
# the run, and with it again after.
if ((everything)) || [[ $# -gt 0 ]]; then
    library_unity=$(sed -n 's/^KILN_LIBRARY_UNITY_BUILD:BOOL=//p' "$build/CMakeCache.txt")
    cmake -B "$build" -DKILN_TOOL_UNITY_BUILD=OFF -DKILN_LIBRARY_UNITY_BUILD=OFF >/dev/null
    trap 'rm -rf "$log" "$database"; cmake -B "$build" -DKILN_TOOL_UNITY_BUILD=ON -DKILN_LIBRARY_UNITY_BUILD="${library_unity:-OFF}" >/dev/null' EXIT
fi
# The test suites share a precompiled header made by the build's compiler, which clang cannot read:
# clang-tidy gets the database without it, and so sees each suite's own includes only.
sed -E 's# -Winvalid-pch -include [^ "]*/cmake_pch\.hxx##g' "$build/compile_commands.json" \
    >"$database/compile_commands.json"
# run-clang-tidy skips a file the database does not name without a word: refuse that instead.
for f in "$@"; do
    grep -qF "\"file\": \"$(realpath "$f")\"" "$build/compile_commands.json" ||
        { echo "lint.sh: $f is not in $build/compile_commands.json" >&2; exit 1; }
done
# run-clang-tidy exits non-zero when clang-tidy does (WarningsAsErrors: '*'), and the log is
# checked too so that a finding can never pass silently.
status=0
run-clang-tidy-14 -p "$database" -quiet -j "$jobs" -header-filter="^$root/$dirs/" "${extra[@]}" \
    "${files[@]}" \
    >"$log" 2>&1 || status=$?
if ((status != 0)) || grep -q -E '(warning|error): ' "$log"; then
    grep -E -A3 '(warning|error): ' "$log" || cat "$log"
    echo "lint.sh: clang-tidy found problems ($((SECONDS - start)) s)" >&2
    exit 1
fi
echo "lint.sh: clang-tidy clean in $((SECONDS - start)) s"
