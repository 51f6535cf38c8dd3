#!/usr/bin/env bash
# scripts/setup.sh [--tests]: install Kiln's build dependencies from Debian/Ubuntu packages and
# build it in ./build (the `release` preset of CMakePresets.json).
#   no option  what the README's demo command needs: the library and the `kiln` tool, nothing else
#              (no tests, benchmarks or their packages)
#   --tests    what its test command needs: also the packages only the tests, benchmarks and API
#              reference use, and everything built (scripts/test.sh then runs the suite)
# Expects the CUDA toolkit (12.4 or newer; tested with 13.0) in /usr/local/cuda or $CUDA_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=0
case "${1:-}" in
    "") ;;
    --tests) tests=1 ;;
    *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac
# README.md lists both lists together (tests/package checks it).
packages=(cmake g++ make ninja-build pkg-config libspdlog-dev libfmt-dev libxxhash-dev libdlpack-dev
          libcli11-dev nlohmann-json3-dev libssl-dev libsodium-dev libzstd-dev binutils)
test_packages=(libgtest-dev libbenchmark-dev doxygen redis-server)
if [ "$tests" -eq 0 ]; then
    scripts/install_packages.sh "${packages[@]}"
else
    had_redis=0
    dpkg -s redis-server >/dev/null 2>&1 && had_redis=1
    scripts/install_packages.sh "${packages[@]}" "${test_packages[@]}"
    # redis-server is for the remote-cache tests, which start private servers of their own on
    # 127.0.0.1. Debian's package starts a system service: when this run installed it, stop it and
    # keep it from starting at boot (a Redis that was there before is left alone).
    if [ "$had_redis" -eq 0 ]; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
            $sudo systemctl disable --now redis-server >/dev/null 2>&1 || true
        else
            $sudo service redis-server stop >/dev/null 2>&1 || true
            $sudo update-rc.d redis-server disable >/dev/null 2>&1 || true
        fi
    fi
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
# Ninja starts a library's sources while the one below it still compiles (Make waits for each
# target in turn), which keeps both cores busy on a first build. A build folder made earlier keeps
# its generator: CMake refuses to switch one.
generator=(-G Ninja)
[ -f build/CMakeCache.txt ] && generator=()
# The libraries in batches of sources (KILN_LIBRARY_UNITY_BUILD): about 0.6x the wall time of one
# file at a time on 2 cores. scripts/lint.sh analyses the batches as they are built.
if [ "$tests" -eq 0 ]; then
    # The options are cached in build/: a later `--tests` run sets them again.
    cmake --preset release "${generator[@]}" -DCUDAToolkit_ROOT="$cuda" -DKILN_BUILD_TESTS=OFF \
        -DKILN_BUILD_BENCH=OFF -DKILN_LIBRARY_UNITY_BUILD=ON ${KILN_CMAKE_ARGS:-}
    cmake --build build -j"$(nproc)" --target kiln_tool
else
    cmake --preset release "${generator[@]}" -DCUDAToolkit_ROOT="$cuda" -DKILN_BUILD_TESTS=ON \
        -DKILN_BUILD_BENCH=ON -DKILN_LIBRARY_UNITY_BUILD=ON ${KILN_CMAKE_ARGS:-}
    cmake --build build -j"$(nproc)"
fi
