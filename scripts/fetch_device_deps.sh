#!/usr/bin/env bash
# Fetch, on a machine with network, the Debian packages the GPU machine lacks (it has no network,
# no xxhash.h, no dlpack.h, no OpenSSL, libsodium or zstd headers; the libraries come along for a
# machine without them): they land in .deps/debs (git-ignored) and travel with the tree
# (`carry`).
# scripts/gpu_suite.sh unpacks them there with dpkg -x; CMake looks in .deps/root.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
for package in libxxhash-dev libdlpack-dev libssl-dev libssl3 libsodium-dev libsodium23 \
    libzstd-dev libzstd1; do
    ls ${package}_*.deb >/dev/null 2>&1 || apt-get download "$package"
done
ls -l
