"""cupy.fuse on the cases of bench_fuse.cpp, measured the same way: CUDA events around each call
after a warm-up, median of the calls; sum((x - y) * (x - y)) over 2^28 float32 fused and as the
unfused CuPy chain (GB/s over the bytes of x and y); a Black-Scholes call and put over 2^26
float32 options fused and op by op (GB/s over S, K, T and both outputs); host time per hot call
of a fused x * y + b against an ElementwiseKernel with the same operands; softmax over the rows
of 16384 x 16384 float32 with cupy.fuse, op by op, and a device copy of the same array (GB/s
over the bytes read and written once); the first call of each with an empty cache in a fresh
process. Prints one JSON object."""

import json
import os
import subprocess
import sys
import tempfile
import time

import cupy as cp
from cupy_timing import device_ms, host_us, rand

RATE, SIGMA = 0.02, 0.3


@cp.fuse()
def sum_squared_diff(x, y):
    return cp.sum((x - y) * (x - y))


def normal_cdf(x):
    return 0.5 * (1 + cp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def black_scholes_formula(S, K, T, r, sigma):
    sqrt_T = cp.sqrt(T)
    d1 = (cp.log(S / K) + (r + 0.5 * sigma * sigma) * T) / (sigma * sqrt_T)
    d2 = d1 - sigma * sqrt_T
    discount = K * cp.exp(-r * T)
    call = S * normal_cdf(d1) - discount * normal_cdf(d2)
    put = discount * normal_cdf(-d2) - S * normal_cdf(-d1)
    return call, put


black_scholes = cp.fuse(black_scholes_formula)


@cp.fuse()
def fused_fma(x, y, b):
    return x * y + b


def softmax_formula(x):
    e = cp.exp(x - cp.max(x, axis=-1, keepdims=True))
    return e / cp.sum(e, axis=-1, keepdims=True)


softmax_fused = cp.fuse(softmax_formula)


fma3 = cp.ElementwiseKernel("T x, T y, T b", "T z", "z = x * y + b", "kernel_fma")


def first_call(kind):
    x, y = rand(1 << 20), rand(1 << 20)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    if kind == "elementwise":
        k = cp.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
        k(x, y)
    else:
        # A named function: cupy.fuse names the kernel after it, and "<lambda>" is no C name.
        def squared_diff(a, b):
            return (a - b) * (a - b)

        cp.fuse(squared_diff)(x, y)
    cp.cuda.Device().synchronize()
    print((time.perf_counter() - t0) * 1e3)


def first_call_ms(kind):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUPY_CACHE_DIR=cache)
        run = subprocess.run([sys.executable, __file__, "--first-call", kind], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"cupy_fuse.py --first-call {kind} failed:\n{run.stderr}")
        return float(run.stdout.strip())


def softmax_figures(out):
    n = 16384
    x = rand(n, n)
    y = cp.empty_like(x)
    for key, f in (("softmax_fused", lambda: softmax_fused(x)),
                   ("softmax_unfused", lambda: softmax_formula(x)),
                   ("copy", lambda: y.__setitem__(Ellipsis, x))):
        try:
            ms = device_ms(f, repeat=10)
            out[key + "_ms"] = ms
            out[key + "_gbs"] = 2.0 * n * n * 4 / (ms * 1e6)
        except Exception as e:  # cupy.fuse may refuse a function: recorded, not fatal
            out[key + "_error"] = f"{type(e).__name__}: {e}"


def main():
    if sys.argv[1:2] == ["--first-call"]:
        return first_call(sys.argv[2])
    out = {"cupy": cp.__version__}
    if sys.argv[1:2] == ["--softmax"]:  # the softmax figures alone
        softmax_figures(out)
        print(json.dumps(out))
        return

    n = 1 << 28
    x, y = rand(n), rand(n)
    ms = device_ms(lambda: sum_squared_diff(x, y), repeat=20)
    out["sum_squared_diff_fused_ms"] = ms
    out["sum_squared_diff_fused_gbs"] = 2.0 * n * 4 / (ms * 1e6)
    ms = device_ms(lambda: cp.sum((x - y) * (x - y)), repeat=20)
    out["sum_squared_diff_unfused_ms"] = ms
    out["sum_squared_diff_unfused_gbs"] = 2.0 * n * 4 / (ms * 1e6)
    del x, y
    n = 1 << 26
    S, K, T = rand(n) + 20, rand(n) + 20, rand(n) + 2
    ms = device_ms(lambda: black_scholes(S, K, T, RATE, SIGMA), repeat=50)
    out["black_scholes_fused_ms"] = ms
    out["black_scholes_fused_gbs"] = 5.0 * n * 4 / (ms * 1e6)
    ms = device_ms(lambda: black_scholes_formula(S, K, T, RATE, SIGMA), repeat=20)
    out["black_scholes_unfused_ms"] = ms
    out["black_scholes_unfused_gbs"] = 5.0 * n * 4 / (ms * 1e6)
    del S, K, T
    softmax_figures(out)
    x, y, b = rand(1024), rand(1024), rand(1024)
    out["host_us_fused"] = host_us(lambda: fused_fma(x, y, b))
    out["host_us_elementwise_kernel"] = host_us(lambda: fma3(x, y, b))
    out["fused_first_call_ms"] = first_call_ms("fused")
    out["elementwise_first_call_ms"] = first_call_ms("elementwise")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
