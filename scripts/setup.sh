#!/usr/bin/env bash
# Install Kiln's build dependencies from Debian/Ubuntu packages and build it in ./build (the
# `release` preset of CMakePresets.json).
# Expects the CUDA toolkit (12.4 or newer; tested with 13.0) in /usr/local/cuda or $CUDA_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake g++ make pkg-config libspdlog-dev libfmt-dev libxxhash-dev libdlpack-dev
          libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev binutils doxygen)
scripts/install_packages.sh "${packages[@]}"
cuda=${CUDA_HOME:-/usr/local/cuda}
cmake --preset release -DCUDAToolkit_ROOT="$cuda" ${KILN_CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
