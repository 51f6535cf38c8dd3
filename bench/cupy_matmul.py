"""CuPy's cp.matmul on bench_matmul's cases (issue 41), timed as the C++ bench times its sides:
a warm-up, then rounds of a CUDA-event-timed loop of calls into a given output (about 20 ms of GPU
time each), the median per-call time. CuPy's defaults: float32 without TF32 (CUPY_TF32 unset),
float16 through cublasGemmEx with float32 compute. Prints JSON."""

import json
import statistics

import cupy as cp

CASES = [
    ("float32 1024", cp.float32, 1, 1024),
    ("float32 4096", cp.float32, 1, 4096),
    ("float32 8192", cp.float32, 1, 8192),
    ("float32 64x256", cp.float32, 64, 256),
    ("float16 1024", cp.float16, 1, 1024),
    ("float16 4096", cp.float16, 1, 4096),
    ("float16 8192", cp.float16, 1, 8192),
    ("float16 64x256", cp.float16, 64, 256),
]


def main(rounds=15):
    rows = []
    for name, dtype, batch, n in CASES:
        shape = (n, n) if batch == 1 else (batch, n, n)
        count = batch * n * n
        a = cp.sin(cp.arange(count, dtype=cp.float32)).astype(dtype).reshape(shape)
        b = cp.cos(cp.arange(count, dtype=cp.float32)).astype(dtype).reshape(shape)
        out = cp.empty(shape, dtype=dtype)
        for _ in range(5):
            cp.matmul(a, b, out=out)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        cp.matmul(a, b, out=out)
        stop.record()
        stop.synchronize()
        calls = max(3, int(20.0 / max(1e-3, cp.cuda.get_elapsed_time(start, stop))))
        times = []
        for _ in range(rounds):
            start.record()
            for _ in range(calls):
                cp.matmul(a, b, out=out)
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / calls)
        ms = statistics.median(times)
        rows.append({"case": name, "side": "cupy", "median_ms": ms,
                     "tflops": 2.0 * batch * n ** 3 / (ms * 1e9)})
    print(json.dumps({"cupy": cp.__version__, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                      "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
