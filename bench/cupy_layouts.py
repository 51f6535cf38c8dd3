"""CuPy on the cases of bench_layouts.cpp, measured the same way (CUDA events around each call
after a warm-up, the median; fresh uniform float32 inputs; outputs given where CuPy takes them),
written as the same CSV: layout,size,gbs,pct_of_copy,read_gbs,ms (gbs counts bytes read +
written, as the copy does; read_gbs bytes read alone).

    python3 bench/cupy_layouts.py [--reps N] OUT.csv
"""

import csv
import sys

import cupy as cp
from cupy_timing import device_ms, rand

N = 1 << 28  # floats: 1 GiB
SIDE = 1 << 14

fma3 = cp.ElementwiseKernel("T x, T y, T b", "T z", "z = x * y + b", "fma3")
l2norm = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


# cupy.fuse names the kernel after the function: a lambda's `<lambda>` is no CUDA identifier.
def fused_fma_fn(x, y):
    return x * y + cp.float32(1)


def fused_dot_rows_fn(x, y):
    return cp.sum(x * y, axis=-1)


fused_fma = cp.fuse(fused_fma_fn)
fused_dot_rows = cp.fuse(fused_dot_rows_fn)

OPS = {
    "sum": lambda x, axis, out: cp.sum(x, axis=axis, out=out),
    "l2norm": lambda x, axis, out: l2norm(x, axis=axis, out=out),
    "argmax": lambda x, axis, out: cp.argmax(x, axis=axis, out=out),
    "argmin": lambda x, axis, out: cp.argmin(x, axis=axis, out=out),
}


def shape_text(shape):
    return "x".join(str(d) for d in shape)


class Runner:
    def __init__(self, reps):
        self.reps, self.copy, self.rows = reps, 0.0, []

    def run(self, layout, size, read, written, call):
        try:
            ms = device_ms(call, self.reps)
        except Exception as e:  # a case CuPy does not take: reported, not fatal
            print(f"{layout:34} {size:18} ERROR {e}")
            return
        gbs, read_gbs = (read + written) / (ms * 1e6), read / (ms * 1e6)
        if layout == "copy":
            self.copy = gbs
        pct = 100 * gbs / self.copy if self.copy else 0.0
        print(f"{layout:34} {size:18} {ms:8.3f} ms {gbs:8.0f} GB/s {pct:6.1f}% of copy "
              f"{read_gbs:8.0f} GB/s read", flush=True)
        self.rows.append((layout, size, gbs, pct, read_gbs, ms))


def elementwise(run, layout, base, axes):
    x = rand(*base)
    if axes:
        x = x.transpose(axes)
    y, b = rand(*x.shape), rand(*x.shape)
    z = cp.empty(x.shape, cp.float32)
    run.run(layout, shape_text(x.shape), 3 * y.nbytes, z.nbytes, lambda: fma3(x, y, b, z))


def reduction(run, name, shape, axis, what):
    x = rand(*shape)
    op = OPS[name]
    out = op(x, axis, None)
    run.run(f"{name} {what}", shape_text(shape), x.nbytes, out.nbytes, lambda: op(x, axis, out))


def main():
    args = sys.argv[1:]
    reps = 15
    if args[:1] == ["--reps"]:
        reps, args = int(args[1]), args[2:]
    if len(args) != 1:
        sys.exit("usage: cupy_layouts.py [--reps N] OUT.csv")
    run = Runner(reps)
    print(f"CuPy {cp.__version__}, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"{reps} timed calls a case (median)")
    x, z = rand(N), cp.empty(N, cp.float32)
    run.run("copy", str(N), x.nbytes, z.nbytes,
            lambda: z.data.copy_from_device_async(x.data, N * 4))
    del x, z
    elementwise(run, "elementwise contiguous", (N,), None)
    elementwise(run, "elementwise x transposed", (SIDE, SIDE), (1, 0))
    elementwise(run, "elementwise x permuted (0,2,1)", (256, 1024, 1024), (0, 2, 1))
    elementwise(run, "elementwise x permuted (2,0,1)", (1024, 1024, 256), (2, 0, 1))
    for name in OPS:
        for row in (16, 32, 64):
            reduction(run, name, (N // row, row), 1, f"rows of {row}")
        for rows in (2, 4, 16, 64):
            reduction(run, name, (rows, N // rows), 0, f"axis 0, {rows} rows")
        reduction(run, name, (256, 1024, 1024), 1, "3-D axis 1")
        reduction(run, name, (N // 256, 16, 16), 1, "3-D axis 1, 16x16")
        if name in ("sum", "l2norm"):
            reduction(run, name, (256, 1024, 1024), (0, 2), "3-D axes (0, 2)")
            reduction(run, name, (1024, 1024, 256), (0, 2), "3-D axes (0, 2), short")
        cp.get_default_memory_pool().free_all_blocks()
    x, y = rand(SIDE, SIDE).T, rand(SIDE, SIDE)
    run.run("fused x * y + 1, x transposed", shape_text(y.shape), 2 * y.nbytes, y.nbytes,
            lambda: fused_fma(x, y))
    run.run("fused sum(x * y, -1), x transposed", shape_text(y.shape), 2 * y.nbytes, SIDE * 4,
            lambda: fused_dot_rows(x, y))
    with open(args[0], "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["layout", "size", "gbs", "pct_of_copy", "read_gbs", "ms"])
        for layout, size, gbs, pct, read_gbs, ms in run.rows:
            out.writerow([layout, size, f"{gbs:.1f}", f"{pct:.1f}", f"{read_gbs:.1f}", f"{ms:.4f}"])


if __name__ == "__main__":
    main()
