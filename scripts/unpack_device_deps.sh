#!/usr/bin/env bash
# Unpack the packages fetched by fetch_device_deps.sh into .deps/root (no root, no dpkg database).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/root
for deb in .deps/debs/*.deb; do
    dpkg -x "$deb" .deps/root
done
