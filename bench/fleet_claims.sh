#!/usr/bin/env bash
# How many NVRTC compiles a fleet pays for kernels none of its processes has, with compile claims
# (KILN_COMPILE_WAIT, default 10s) and without them (KILN_COMPILE_WAIT=0, what Kiln did before
# claims), side by side in one run. No GPU; needs redis-server for the remote case.
#   bench/fleet_claims.sh [path/to/kiln] [CASES...]
# CASES (default: compile kill warm remote):
#   compile  8 `kiln compile` processes started together, 5 sources each, one empty directory
#   kill     4 processes on one slow source; the claim holder is killed (-9) mid-compile
#   warm     16 `kiln warm -j 1` processes, the 200 kernels of generated_kernels_manifest.py,
#            one empty directory
#   remote   the same 16 processes through one real redis-server, from 4 empty directories
#            standing for 4 hosts (4 processes each)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kiln=$(realpath "${1:-build/tools/kiln}")
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(compile kill warm remote)
work=$(mktemp -d)
redis=""
cleanup() {
    [ -n "$redis" ] && { kill "$redis" 2>/dev/null || true; wait "$redis" 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT
unset KILN_REMOTE_CACHE KILN_REMOTE_CACHE_MODE KILN_CACHE_DISABLE KILN_CACHE_READONLY
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# Sources that take NVRTC a while each (unrolled transcendental loops), distinct per salt.
make_sources() { # DIR COUNT SALT
    mkdir -p "$1"
    for i in $(seq "$2"); do
        cat > "$1/k$i.cu" <<EOF
template <int K> __device__ float f(float v) {
#pragma unroll
    for (int j = 0; j < K; ++j) v = sinf(v) * $i.5f + cosf(v) + $3.0f;
    return v;
}
extern "C" __global__ void k$i(float* x, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) x[t] = f<4>(x[t]) + expf(x[t]);
}
EOF
    done
}

now() { date +%s.%N; }
misses() { python3 -c '
import json, sys
print(sum(json.loads(l)["cache"] == "miss" for f in sys.argv[1:] for l in open(f) if l.strip()))' "$@"; }

case_compile() { # WAIT
    local dir="$work/compile$1" start
    make_sources "$dir/src" 5 "$RANDOM"
    start=$(now)
    for p in $(seq 8); do
        (for i in $(seq 5); do
            KILN_COMPILE_WAIT=$1 KILN_CACHE_DIR="$dir/cache" "$kiln" compile "$dir/src/k$i.cu" \
                --arch sm_90 --json
        done > "$dir/out.$p") &
    done
    wait
    printf 'compile  wait=%-4s 8 processes x 5 kernels: %3d NVRTC compiles, %.2f s\n' "$1" \
        "$(misses "$dir"/out.*)" "$(python3 -c "print($(now) - $start)")"
}

case_kill() {
    local dir="$work/kill" start holder pids=()
    make_sources "$dir/src" 1 "$RANDOM"
    sed -i "s/f<4>/f<96>/" "$dir/src/k1.cu" # a compile of a few seconds
    export KILN_CACHE_DIR="$dir/cache"
    "$kiln" compile "$dir/src/k1.cu" --arch sm_90 --json > "$dir/out.0" 2>/dev/null &
    holder=$!
    sleep 0.3 # it holds the claim now
    start=$(now)
    for p in 1 2 3; do
        "$kiln" compile "$dir/src/k1.cu" --arch sm_90 --json > "$dir/out.$p" &
        pids+=($!)
    done
    sleep 0.2
    kill -9 "$holder"
    local failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
    wait "$holder" 2>/dev/null || true
    printf 'kill     holder killed -9 mid-compile: 3 waiters, %d failed, %d NVRTC compiles among them, done %.2f s after they started\n' \
        "$failed" "$(misses "$dir"/out.[123])" "$(python3 -c "print($(now) - $start)")"
    unset KILN_CACHE_DIR
}

warm_fleet() { # LABEL WAIT DIRS URL
    local dir="$work/$1" start compiles
    mkdir -p "$dir"
    python3 "$here/generated_kernels_manifest.py" |
        sed "s/\"x \* x + /\"x * x + $RANDOM * 0 + /" > "$dir/manifest.json"
    start=$(now)
    local pids=()
    for p in $(seq 16); do
        KILN_COMPILE_WAIT=$2 KILN_REMOTE_CACHE=$4 KILN_CACHE_DIR="$dir/cache$((p % $3))" \
            "$kiln" warm "$dir/manifest.json" --arch sm_90 -j 1 --json > "$dir/out.$p" &
        pids+=($!)
    done
    wait "${pids[@]}" # not the Redis server
    compiles=$(python3 -c '
import json, sys
print(sum(json.load(open(f))["compiles"] for f in sys.argv[1:]))' "$dir"/out.*)
    printf '%-8s wait=%-4s 16 processes x 200 kernels, %d director%s: %4d NVRTC compiles, %.1f s\n' \
        "${1%%[0-9]*}" "$2" "$3" "$([ "$3" = 1 ] && echo y || echo ies)" "$compiles" \
        "$(python3 -c "print($(now) - $start)")"
}

start_redis() {
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
        --logfile "$work/redis.log" --daemonize no &
    redis=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    url="redis://127.0.0.1:$port"
}

for c in "${cases[@]}"; do
    case $c in
    compile) case_compile 0; case_compile 10s ;;
    kill) case_kill ;;
    warm) warm_fleet warm0 0 1 ""; warm_fleet warm1 10s 1 "" ;;
    remote)
        start_redis
        warm_fleet remote0 0 4 "$url"
        redis-cli -p "${url##*:}" flushall >/dev/null
        warm_fleet remote1 10s 4 "$url"
        ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
    esac
done
