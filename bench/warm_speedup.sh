#!/usr/bin/env bash
# `kiln warm` of 64 distinct kernels with -j 1 and -j N (default 2; 16 on the GPU host), each into
# a fresh cache directory with a fresh salt (so neither Kiln's cache nor NVRTC's own can serve a
# compile). -j N > 1 runs N worker processes.
#   bench/warm_speedup.sh [path/to/kiln] [JOBS...]      (default JOBS: 1 2)
set -euo pipefail
kiln=${1:-build/tools/kiln}
shift || true
job_counts=("$@")
[ ${#job_counts[@]} -gt 0 ] || job_counts=(1 2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work/manifest.json" <<'PY'
import json, sys
kernels = []
for i in range(64):
    kernels.append({"source": (
        "template <int K> __device__ float f(float v) {\n"
        f"    for (int j = 0; j < K; ++j) v = sinf(v) * {i + 1}.5f + cosf(v);\n"
        "    return v;\n}\n"
        f"extern \"C\" __global__ void k{i}(float* x, int n) {{\n"
        "    int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (t < n) x[t] = f<{i % 7 + 3}>(x[t]) + expf(x[t]) * {i};\n}}\n"),
        "options": ["-DSALT=SALT_VALUE"]})
json.dump({"kernels": kernels}, open(sys.argv[1], "w"))
PY
# Other processes on a small machine decide the parallel figure: say what the machine was doing.
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A seconds
for jobs in "${job_counts[@]}"; do
    sed "s/SALT_VALUE/$RANDOM$RANDOM$jobs/" "$work/manifest.json" > "$work/m$jobs.json"
    seconds[$jobs]=$(KILN_CACHE_DIR="$work/cache$jobs" "$kiln" warm "$work/m$jobs.json" --arch sm_90 \
        -j "$jobs" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    echo "-j $jobs: ${seconds[$jobs]} s"
done
first=${job_counts[0]}
for jobs in "${job_counts[@]:1}"; do
    python3 -c "print(f'speedup -j $jobs over -j $first: {${seconds[$first]} / ${seconds[$jobs]}:.2f}x')"
done
