#!/usr/bin/env bash
# Install the Debian/Ubuntu packages named as arguments that are not installed yet (with sudo when
# not root). Used by setup.sh (build dependencies) and fuzz.sh (clang and its libFuzzer runtime).
set -euo pipefail
missing=()
for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
((${#missing[@]})) || exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
