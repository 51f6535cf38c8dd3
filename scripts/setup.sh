#!/usr/bin/env bash
# Install Kiln's build dependencies from Debian/Ubuntu packages and build it in ./build (the
# `release` preset of CMakePresets.json).
# Expects the CUDA toolkit (12.4 or newer; tested with 13.0) in /usr/local/cuda or $CUDA_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake g++ make pkg-config libspdlog-dev libfmt-dev libxxhash-dev libdlpack-dev
          libcli11-dev nlohmann-json3-dev libssl-dev libsodium-dev libzstd-dev libgtest-dev libbenchmark-dev binutils doxygen
          redis-server)
had_redis=0
dpkg -s redis-server >/dev/null 2>&1 && had_redis=1
scripts/install_packages.sh "${packages[@]}"
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
cuda=${CUDA_HOME:-/usr/local/cuda}
cmake --preset release -DCUDAToolkit_ROOT="$cuda" ${KILN_CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
