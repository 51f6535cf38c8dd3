#!/usr/bin/env bash
# Build the matmul example against an installed Kiln, run it on this machine's GPU and plot it:
#   bash examples/matmul/run.sh <kiln prefix> [output folder] [example arguments...]
# The CSV, the PNG and the log land in the output folder (default: ./matmul-out). Exits as the
# example does (77: no GPU or no cuBLAS), or 1 when the build fails; a missing matplotlib only
# skips the plot.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:?usage: run.sh <kiln prefix> [output folder] [example arguments...]}
out=${2:-$PWD/matmul-out}
shift $(( $# >= 2 ? 2 : 1 ))
mkdir -p "$out"
build=$(mktemp -d)
# shellcheck disable=SC2086 # KILN_EXAMPLE_CMAKE_ARGS: -D options, split as a shell would
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    ${KILN_EXAMPLE_CMAKE_ARGS:-} >"$out/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" >>"$out/build.log" 2>&1 || {
    tail -20 "$out/build.log"
    exit 1
}
"$build/matmul" --csv "$out/matmul.csv" "$@" 2>&1 | tee "$out/matmul.log"
status=${PIPESTATUS[0]}
if [[ $status == 0 ]]; then
    python3 "$here/plot.py" "$out/matmul.csv" "$out/matmul.png" ||
        echo "plot: matplotlib missing? the CSV is $out/matmul.csv"
fi
rm -rf "$build"
exit "$status"
