#!/usr/bin/env bash
# The remote tier's figures for bench/RESULTS.md: starts its own redis-server on 127.0.0.1 (a
# free port, a temporary directory, no persistence), runs bench_remote in fresh processes under
# each configuration, and stops the server. Needs redis-server; no GPU.
#
#   bench/remote_tier.sh [BUILD_DIR] [N kernels] [R fresh processes per configuration]
set -euo pipefail
build=${1:-build}
n=${2:-50}
runs=${3:-10}
bench="$build/bench/bench_remote"
[ -x "$bench" ] || { echo "build bench_remote first (-DKILN_BUILD_BENCH=ON)" >&2; exit 1; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --logfile "$work/redis.log" --daemonize no &
redis=$!
cleanup() {
    kill -CONT "$redis" 2>/dev/null || true
    kill "$redis" 2>/dev/null || true
    wait "$redis" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
url="redis://127.0.0.1:$port"
unset KILN_REMOTE_CACHE KILN_REMOTE_CACHE_MODE KILN_CACHE_DISABLE KILN_CACHE_READONLY

# summarize LABEL: over the runs, the first call's median, min and max, and the medians of the
# later calls and of the memory hits, from stdin.
summarize() {
    python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.startswith("RESULT")]
firsts = sorted(float(r[2]) for r in rows)
med = statistics.median(float(r[4]) for r in rows)
mem = statistics.median(float(r[6]) for r in rows)
print(f"{sys.argv[1]:<50} first {statistics.median(firsts):7.3f} ms (min {firsts[0]:7.3f}, max {firsts[-1]:7.3f})"
      f"   then {med:7.3f} ms   memory hit {mem:5.2f} us   ({len(rows)} processes)")
' "$1"
}

# repeat LABEL ENV... -- ARGS: R fresh processes, each with a fresh empty directory unless the
# environment names one.
repeat() {
    local label=$1
    shift
    for r in $(seq "$runs"); do
        env KILN_CACHE_DIR="$work/fresh-$label-$r" "$@"
    done | summarize "$label"
}

echo "populate: $n kernels compiled into $work/a and published to Redis"
KILN_CACHE_DIR="$work/a" KILN_REMOTE_CACHE=$url "$bench" "$n" hits --expect compile | grep -v RESULT
repeat "local disk hit, no remote tier" KILN_CACHE_DIR="$work/a" "$bench" "$n" hits --expect hit
repeat "remote hit into an empty directory (loopback)" KILN_REMOTE_CACHE=$url \
    "$bench" "$n" hits --expect hit
repeat "remote hit, remote-only mode" KILN_REMOTE_CACHE=$url KILN_REMOTE_CACHE_MODE=remote-only \
    "$bench" "$n" hits --expect hit
repeat "local disk hit, remote tier configured" KILN_CACHE_DIR="$work/a" KILN_REMOTE_CACHE=$url \
    "$bench" "$n" hits --expect hit

cold=10
repeat "cold compile, no remote tier" "$bench" "$cold" cold-plain --expect compile
kill -STOP "$redis"
repeat "cold compile, server frozen (SIGSTOP)" KILN_REMOTE_CACHE=$url \
    "$bench" "$cold" cold-frozen --expect compile
repeat "local disk hit, server frozen" KILN_CACHE_DIR="$work/a" KILN_REMOTE_CACHE=$url \
    "$bench" "$n" hits --expect hit
kill -CONT "$redis"
