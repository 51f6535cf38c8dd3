"""CuPy's reductions on the cases of bench_reduction.cpp, measured the same way: CUDA events
around each call after a warm-up, median of 100 calls, fresh random data (the 256^3 cube rotated
over 4 arrays); host time per hot call over batches of 64 with the stream drained outside the
timed region; each case with CuPy's CUB accelerator and without it; the first call of the l2norm
ReductionKernel and of cupy.sum with CUB with an empty cache in a fresh process. Prints one JSON
object."""

import functools
import json
import os
import subprocess
import sys
import tempfile
import time

import cupy as cp
from cupy._core import _accelerator

import cupy_timing
from cupy_timing import rand

# Fewer repetitions than the elementwise script: each case runs twice (with and without CUB).
device_ms = functools.partial(cupy_timing.device_ms, repeat=100)
host_us = functools.partial(cupy_timing.host_us, batches=500)
l2norm = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def accelerate(cub):
    names = ["cub"] if cub else []
    _accelerator.set_routine_accelerators(names)
    _accelerator.set_reduction_accelerators(names)


def first_call(which):
    x = rand(4096, 4096)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    if which == "l2norm":
        k = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        k(x, axis=1)
    else:
        accelerate(True)
        x.sum()
    cp.cuda.Device().synchronize()
    print((time.perf_counter() - t0) * 1e3)


def cases(out, label):
    n = 1 << 28
    x = rand(n)
    ms = device_ms(lambda: x.sum())
    out[f"sum_all_gbs_{label}"] = 4.0 * n / (ms * 1e6)
    ms = device_ms(lambda: x.argmax())
    out[f"argmax_all_gbs_{label}"] = 4.0 * n / (ms * 1e6)
    del x
    cubes = [rand(256, 256, 256) for _ in range(4)]
    state = {"i": 0}

    def next_cube():
        state["i"] += 1
        return cubes[state["i"] % 4]

    out[f"sum_cube_ms_{label}"] = device_ms(lambda: next_cube().sum())
    out[f"sum_mixed_gbs_{label}"] = 4.0 * (1 << 24) / (
        device_ms(lambda: next_cube().sum(axis=(0, 2))) * 1e6)
    del cubes
    side = 1 << 14
    m = rand(side, side)
    out[f"sum_rows_gbs_{label}"] = 4.0 * side * side / (device_ms(lambda: m.sum(axis=1)) * 1e6)
    out[f"sum_columns_gbs_{label}"] = 4.0 * side * side / (device_ms(lambda: m.sum(axis=0)) * 1e6)
    y = cp.empty(side, cp.float32)
    out[f"l2norm_rows_gbs_{label}"] = 4.0 * side * side / (
        device_ms(lambda: l2norm(m, y, axis=1)) * 1e6)
    del m, y
    small = rand(32, 1024)
    ys = cp.empty(32, cp.float32)
    out[f"host_l2norm_given_us_{label}"] = host_us(lambda: l2norm(small, ys, axis=1))
    out[f"host_sum_allocated_us_{label}"] = host_us(lambda: small.sum(axis=1))


def main():
    if sys.argv[1:2] == ["--first-call"]:
        return first_call(sys.argv[2])
    out = {"cupy": cp.__version__}
    for cub in (True, False):
        accelerate(cub)
        cases(out, "cub" if cub else "nocub")
    for which in ("l2norm", "sum_cub"):
        times = []
        for _ in range(3):
            env = dict(os.environ, CUPY_CACHE_DIR=tempfile.mkdtemp())
            result = subprocess.run([sys.executable, __file__, "--first-call", which], env=env,
                                    capture_output=True, text=True, check=True)
            times.append(float(result.stdout.strip().splitlines()[-1]))
        out[f"first_call_ms_{which}"] = times
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
