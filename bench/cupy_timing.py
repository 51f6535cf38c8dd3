"""How the CuPy comparison scripts time calls, the way Kiln's benches do: CUDA events around each
call after a warm-up, the median; host time per hot call over batches with the stream drained
outside the timed region; fresh uniform float32 inputs."""

import statistics
import time

import cupy as cp


def device_ms(call, repeat=200):
    for _ in range(3):
        call()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeat):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def host_us(call, batches=2000, batch=64):
    for _ in range(100):
        call()
    cp.cuda.Device().synchronize()
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        t1 = time.perf_counter()
        cp.cuda.Device().synchronize()
        per_call.append((t1 - t0) / batch * 1e6)
    return statistics.median(per_call)


def rand(*shape):
    return cp.random.uniform(-1, 1, shape, dtype=cp.float32)
