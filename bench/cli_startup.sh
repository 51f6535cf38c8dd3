#!/usr/bin/env bash
# bench/cli_startup.sh [BUILD_DIR] [RUNS]: what a `kiln` command costs as a process, medians of RUNS
# (default 41) runs taken side by side (one of each in turn, so a busy machine slows all alike):
#   /bin/true, `kiln help`, `kiln cache dir`, `kiln --version` (targets: help and cache dir <= 5 ms)
#   a cold `kiln compile` of a small raw kernel (empty Kiln cache, empty NVRTC cache) beside
#   plain_nvrtc_compile (bench/plain_nvrtc_compile.cpp) compiling the same file with the options
#   Kiln gives NVRTC (target: <= 1.1x)
# Wall time and CPU time (user + system, of the process and its children) for each; on a loaded
# machine the CPU time is the steadier figure. Needs python3 and a build with benchmarks
# (KILN_BUILD_BENCH=ON, as scripts/setup.sh --tests).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-41}
kiln=$build/tools/kiln
plain=$build/bench/plain_nvrtc_compile
[ -x "$kiln" ] && [ -x "$plain" ] || {
    echo "build $kiln and $plain first (cmake --build $build --target kiln_tool plain_nvrtc_compile)" >&2
    exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
arch=${KILN_BENCH_ARCH:-sm_90}
cat >"$work/my_add.cu" <<'CU'
extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
CU
python3 - "$kiln" "$plain" "$work" "$arch" "$runs" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

kiln, plain, work, arch, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
source = os.path.join(work, "my_add.cu")

def fresh_env():
    d = tempfile.mkdtemp(dir=work)
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(d, "kiln"), CUDA_CACHE_PATH=os.path.join(d, "nv"))
    return d, env

# The options Kiln gives NVRTC for this file (its compile's own record), for the plain side.
d, env = fresh_env()
out = subprocess.run([kiln, "compile", source, "--arch", arch, "--json"], env=env, check=True,
                     capture_output=True, text=True).stdout
options = json.loads(out)["options"]
shutil.rmtree(d)

def run(argv, cold):
    d, env = fresh_env() if cold else (None, dict(os.environ))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if d: shutil.rmtree(d)
    return wall * 1e3, cpu * 1e3

cases = [
    ("/bin/true", ["/bin/true"], False),
    ("kiln help", [kiln, "help"], False),
    ("kiln cache dir", [kiln, "cache", "dir"], False),
    ("kiln --version", [kiln, "--version"], False),
    ("kiln compile (cold)", [kiln, "compile", source, "--arch", arch], True),
    ("plain NVRTC program", [plain, source, os.path.join(work, "out.cubin")] + options, True),
]
samples = {name: [] for name, _, _ in cases}
for i in range(runs):
    for name, argv, cold in (cases if i % 2 == 0 else list(reversed(cases))):
        samples[name].append(run(argv, cold))

print(f"{runs} runs each, side by side; NVRTC options of the plain side: {' '.join(options)}")
print(f"{'command':24} {'wall ms':>9} {'CPU ms':>9}")
med = {}
for name, _, _ in cases:
    wall = statistics.median(s[0] for s in samples[name])
    cpu = statistics.median(s[1] for s in samples[name])
    med[name] = (wall, cpu)
    print(f"{name:24} {wall:9.2f} {cpu:9.2f}")
k, p = med["kiln compile (cold)"], med["plain NVRTC program"]
print(f"kiln compile / plain NVRTC: {k[0] / p[0]:.3f}x wall, {k[1] / p[1]:.3f}x CPU")
PY
