"""Host time per hot call of CuPy, measured like bench_launch.cpp: batches of 64 calls on the host
clock, the stream drained outside the timed region, median of batches. The rows of issue 16's
table: RawKernel, ElementwiseKernel with the output given and allocated, a ReductionKernel over an
axis, cupy.add and cupy.sum (same shapes as bench_launch's BM_Hot_* rows: 1024 float32 elements,
a 32 x 1024 matrix reduced over rows).

Each row is also given as a ratio to a raw cuLaunchKernel of an empty kernel made in this process
through ctypes (which adds Python's call overhead to the driver's), and, with --raw-us X, to X: the
raw C++ launch bench_launch reports (BM_Hot_* raw_us) on the same machine, the reference the
table uses."""

import argparse
import ctypes
import statistics
import time

import cupy as cp

SOURCE = r'''
extern "C" __global__ void empty(float* p, int n) { if (n < 0) p[0] = 0; }
'''
BATCH = 64
BATCHES = 2000


def host_us(call, stream):
    for _ in range(100):  # compile, load, fill the caches and the memory pool
        call()
    stream.synchronize()
    per_call = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        for _ in range(BATCH):
            call()
        stop = time.perf_counter()
        stream.synchronize()
        per_call.append((stop - start) / BATCH * 1e6)
    return statistics.median(per_call)


def raw_launch(kernel, buffer, stream):
    """A call that launches @p kernel through the driver's cuLaunchKernel, from Python."""
    libcuda = ctypes.CDLL("libcuda.so.1")
    launch = libcuda.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    function = ctypes.c_void_p(kernel.kernel.ptr)
    pointer = ctypes.c_void_p(buffer.data.ptr)
    n = ctypes.c_int(1)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(pointer), ctypes.addressof(n))
    handle = ctypes.c_void_p(stream.ptr)

    def call():
        if launch(function, 1, 1, 1, 32, 1, 1, 0, handle, params, None) != 0:
            raise RuntimeError("cuLaunchKernel failed")
    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--raw-us", type=float, default=None,
                        help="bench_launch's raw cuLaunchKernel time on this machine, in us")
    args = parser.parse_args()

    kernel = cp.RawKernel(SOURCE, "empty")
    fma3 = cp.ElementwiseKernel("T x, T y, T b", "T z", "z = x * y + b", "fma3")
    l2norm = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        buffer = cp.empty(256, dtype=cp.float32)
        x = cp.zeros(1024, dtype=cp.float32)
        y = cp.zeros(1024, dtype=cp.float32)
        z = cp.empty(1024, dtype=cp.float32)
        one = cp.float32(1)
        matrix = cp.zeros((32, 1024), dtype=cp.float32)
        rows = cp.empty(32, dtype=cp.float32)
        n = cp.int32(1)
        kernel((1,), (32,), (buffer, n))  # compile and load before taking the handle
        rows_of = {
            "raw_ctypes": raw_launch(kernel, buffer, stream),
            "rawkernel": lambda: kernel((1,), (32,), (buffer, n)),
            "elementwise_output_given": lambda: fma3(x, y, one, z),
            "elementwise_output_allocated": lambda: fma3(x, y, one),
            "reduction_axis_output_given": lambda: l2norm(matrix, rows, axis=1),
            "reduction_axis_output_allocated": lambda: l2norm(matrix, axis=1),
            "add_output_given": lambda: cp.add(x, y, out=z),
            "add_output_allocated": lambda: cp.add(x, y),
            "sum_axis_output_given": lambda: cp.sum(matrix, axis=1, out=rows),
            "sum_axis_allocated": lambda: cp.sum(matrix, axis=1),
        }
        figures = {name: host_us(call, stream) for name, call in rows_of.items()}
    raw = figures["raw_ctypes"]
    for name, us in figures.items():
        line = f"cupy_{name}_us median={us:.3f} x_raw_ctypes={us / raw:.2f}"
        if args.raw_us:
            line += f" x_raw_cpp={us / args.raw_us:.2f}"
        print(line)
    print(f"(batches of {BATCH}, {BATCHES} batches, CuPy {cp.__version__})")


if __name__ == "__main__":
    main()
