"""CuPy's first call of a kernel already in its disk cache, measured as bench_first_call.cpp measures
Kiln's: a fresh process per sample, the CUDA context created and the inputs allocated before the
timed region, the kernel object made and called once inside it (the stream drained after, untimed).
The same kernels: RawKernel my_add, ElementwiseKernel squared_diff (output given), ReductionKernel
l2norm over the rows of a 1024x1024 float32 array. The cache directory is filled by one run first.

    python3 bench/cupy_first_call.py [SAMPLES]

Prints one JSON object: per kernel the median, min and max in ms."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MY_ADD = r"""
extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
"""
ELEMENTS = 1 << 20


def sample(kind):
    import cupy as cp

    cp.cuda.Device(0).use()
    if kind == "reduction":
        x = cp.empty((1024, 1024), cp.float32)
    else:
        x, y, z = (cp.empty(ELEMENTS, cp.float32) for _ in range(3))
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    if kind == "raw":
        k = cp.RawKernel(MY_ADD, "my_add")
        k((ELEMENTS // 256,), (256,), (x, y, z, cp.int32(ELEMENTS)))
    elif kind == "elementwise":
        k = cp.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
        k(x, y, z)
    else:
        k = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        k(x, axis=1)
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    print((t1 - t0) * 1e3)


def main():
    if sys.argv[1:2] == ["--sample"]:
        return sample(sys.argv[2])
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    import cupy as cp

    out = {"cupy": cp.__version__, "samples": samples}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUPY_CACHE_DIR=cache)
        for kind in ("raw", "elementwise", "reduction"):
            run = [sys.executable, __file__, "--sample", kind]
            subprocess.run(run, env=env, check=True, capture_output=True)  # fills the cache
            times = [float(subprocess.run(run, env=env, check=True, capture_output=True,
                                          text=True).stdout.strip()) for _ in range(samples)]
            out[kind] = {"median_ms": statistics.median(times), "min_ms": min(times),
                         "max_ms": max(times)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
