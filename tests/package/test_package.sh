#!/usr/bin/env bash
# test_package.sh CMAKE GENERATOR SOURCE_DIR BUILD_DIR WORK_DIR CUDA_ROOT CXX
# Install BUILD_DIR into WORK_DIR/prefix; build and run examples/client with find_package and with
# add_subdirectory; compile it once more with pkg-config's flags; build every example under
# examples/ against the install in one project (examples/CMakeLists.txt) and run each. Each step
# prints its seconds.
set -euo pipefail
cmake=$1 generator=$2 source=$3 build=$4 work=$5 cuda_root=$6 cxx=$7

rm -rf "$work"
mkdir -p "$work"
export KILN_CACHE_DIR="$work/cache"   # never the user's cache
common=(-G "$generator" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda_root"
        -DCMAKE_CXX_COMPILER="$cxx")

step() {
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    "$@"
    echo "== $name: $((SECONDS - start)) s"
}

check_run() {
    local out
    out=$("$1")
    echo "$out"
    grep -q "compiled for sm_90: key [0-9a-f]\{32\}" <<<"$out"
    grep -q "GPU part \(passed\|skipped\)" <<<"$out"
}

step install "$cmake" --install "$build" --prefix "$work/prefix"
for f in include/kiln/kiln.hpp include/kiln/version.hpp include/kiln/cache/key.hpp \
         lib/cmake/kiln/kilnConfig.cmake lib/cmake/kiln/kilnConfigVersion.cmake \
         lib/pkgconfig/kiln.pc bin/kiln; do
    [[ -e "$work/prefix/$f" ]] || { echo "missing from the install: $f"; exit 1; }
done
if grep -q "kiln_settings\|kiln_xxhash\|kiln_dlpack\|$source" "$work/prefix/lib/cmake/kiln/kilnTargets.cmake"; then
    echo "kilnTargets.cmake names internal targets or the source tree"; exit 1
fi

step "find_package configure" "$cmake" -S "$source/examples/client" -B "$work/installed" "${common[@]}" \
    -DCMAKE_PREFIX_PATH="$work/prefix"
step "find_package build" "$cmake" --build "$work/installed" -j2
step "find_package run" check_run "$work/installed/client"

# Every example folder, each program run: 0 (checked on the GPU) or 77 (no usable GPU, as here;
# the GPU suite's `examples` step accepts only 0). Unoptimized: what is tested is that each
# compiles and links against the package (the build: 43 s for the eight on 2 busy cores).
run_examples() {
    local list name status ran=0
    for list in "$source"/examples/*/CMakeLists.txt; do
        name=$(basename "$(dirname "$list")")
        status=0
        "$work/examples/$name/$name" >"$work/examples/$name.log" 2>&1 || status=$?
        echo "$name: exit $status: $(tail -1 "$work/examples/$name.log")"
        if [[ $status != 0 && $status != 77 ]]; then
            cat "$work/examples/$name.log"
            return 1
        fi
        ran=$((ran + 1))
    done
    ((ran >= 8)) || { echo "only $ran examples found under $source/examples"; return 1; }
}
step "examples configure" "$cmake" -S "$source/examples" -B "$work/examples" "${common[@]}" \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0
step "examples build" "$cmake" --build "$work/examples" -j2
step "examples run" run_examples

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if command -v pkg-config >/dev/null && ! pkg-config --exists kiln; then
    # kiln.pc requires the .pc files of its dependencies (libsodium's is missing where the
    # library only travels in .deps/, as on the GPU machine).
    echo "== pkg-config: skipped ($(pkg-config --print-errors --exists kiln 2>&1 | head -1))"
elif command -v pkg-config >/dev/null; then
    # shellcheck disable=SC2046  # the flags are words
    step "pkg-config build" "$cxx" -O1 -o "$work/client-pc" "$source/examples/client/main.cpp" \
        $(pkg-config --cflags --libs kiln)
    step "pkg-config run" check_run "$work/client-pc"
fi

# This build compiles all of Kiln's library again: unoptimized, without debug information and as
# a unity build (one translation unit per library), since what is tested is the CMake wiring (the
# library's build: 164 s of CPU time -> 50 s on 2 cores). It also shows that Kiln builds inside a
# project that sets CMAKE_UNITY_BUILD: no two of its sources define the same internal name.
step "add_subdirectory configure" "$cmake" -S "$source/examples/client" -B "$work/subdir" "${common[@]}" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 \
    -DKILN_SOURCE_DIR="$source" -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_TOOLS=OFF -DKILN_BUILD_BENCH=OFF
step "add_subdirectory build" "$cmake" --build "$work/subdir" -j2 --target client
step "add_subdirectory run" check_run "$work/subdir/client"

rm -rf "$work"
echo "package test passed"
