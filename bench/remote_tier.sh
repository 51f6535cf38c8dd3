#!/usr/bin/env bash
# The remote tier's figures for bench/RESULTS.md: starts its own redis-server on 127.0.0.1 (a
# free port, a temporary directory, no persistence), runs bench_remote under each configuration,
# and stops the server. Needs redis-server; no GPU.
#
#   bench/remote_tier.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build}
n=${2:-50}
bench="$build/bench/bench_remote"
[ -x "$bench" ] || { echo "build bench_remote first (-DKILN_BUILD_BENCH=ON)" >&2; exit 1; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --logfile "$work/redis.log" --daemonize no &
redis=$!
cleanup() { kill -CONT "$redis" 2>/dev/null || true; kill "$redis" 2>/dev/null || true; wait "$redis" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
url="redis://127.0.0.1:$port"
unset KILN_REMOTE_CACHE KILN_REMOTE_CACHE_MODE

echo "== populate: compile $n kernels into a directory and publish them to Redis"
KILN_CACHE_DIR="$work/a" KILN_REMOTE_CACHE=$url "$bench" "$n" hits --expect compile
echo "== local disk hit (no remote tier), fresh process"
KILN_CACHE_DIR="$work/a" "$bench" "$n" hits --expect hit
echo "== remote hit into an empty directory (warm Redis on loopback), fresh process"
KILN_CACHE_DIR="$work/b" KILN_REMOTE_CACHE=$url "$bench" "$n" hits --expect hit
echo "== the same directory again: local hits, the remote tier configured but not asked"
KILN_CACHE_DIR="$work/b" KILN_REMOTE_CACHE=$url "$bench" "$n" hits --expect hit

cold=10
echo "== cold compiles, no remote tier"
KILN_CACHE_DIR="$work/c" "$bench" "$cold" cold-plain --expect compile
kill -STOP "$redis"
echo "== cold compiles, server frozen (SIGSTOP), default deadlines"
KILN_CACHE_DIR="$work/d" KILN_REMOTE_CACHE=$url "$bench" "$cold" cold-frozen --expect compile
echo "== local hits with the server frozen (the remote tier is never asked)"
KILN_CACHE_DIR="$work/a" KILN_REMOTE_CACHE=$url "$bench" "$n" hits --expect hit
kill -CONT "$redis"
