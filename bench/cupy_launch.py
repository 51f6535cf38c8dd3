"""Host time per hot launch of CuPy's RawKernel, measured like bench_launch.cpp: batches of 64
launches on the host clock, the stream drained outside the timed region, median of batches."""

import statistics
import time

import cupy as cp

SOURCE = r'''
extern "C" __global__ void empty(float* p, int n) { if (n < 0) p[0] = 0; }
'''
BATCH = 64


def main():
    kernel = cp.RawKernel(SOURCE, "empty")
    buffer = cp.empty(256, dtype=cp.float32)
    n = cp.int32(1)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(1000):  # compile, load, warm up
            kernel((1,), (32,), (buffer, n))
        stream.synchronize()
        per_launch = []
        for _ in range(2000):
            start = time.perf_counter()
            for _ in range(BATCH):
                kernel((1,), (32,), (buffer, n))
            stop = time.perf_counter()
            stream.synchronize()
            per_launch.append((stop - start) / BATCH * 1e6)
    print(f"cupy_rawkernel_launch_us median={statistics.median(per_launch):.3f} "
          f"min={min(per_launch):.3f} (batches of {BATCH}, {len(per_launch)} batches, "
          f"CuPy {cp.__version__})")


if __name__ == "__main__":
    main()
