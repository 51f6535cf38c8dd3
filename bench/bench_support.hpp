#pragma once
// What the GPU benches share: random inputs, event timing of device work, host timing of hot
// calls, skipping without a GPU, and a main() with a --first-call mode.

#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace kiln::bench {

/// Uniform float32 values in [-1, 1), made on the device: a hash of each element's index and a
/// seed that changes with every array, so each case gets fresh data. (Drawn on the host, 2^28
/// floats took about 7 s a case, longer than timing it.)
inline Array random_array(const Dims& shape) {
    static std::uint32_t seed = 12345;
    static const ElementwiseKernel fill(
        "uint32 seed", "float32 x",
        "unsigned h = static_cast<unsigned>(i) * 0x9e3779b1u ^ seed * 0x85ebca6bu; h ^= h >> 16; "
        "h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16; "
        "x = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f",
        "bench_random_fill");
    Array out = empty(shape, DType::float32);
    fill(seed++, out);
    return out;
}

/// Times @p call with CUDA events around each iteration (after a warm-up that compiles and
/// loads); @p bytes per call give the GB/s counter.
template <class F> void time_device(benchmark::State& state, double bytes, F&& call) {
    Event start(true), stop(true);
    for (int i = 0; i < 3; ++i)
        call();
    for (auto _ : state) {
        start.record();
        call();
        stop.record();
        stop.synchronize();
        state.SetIterationTime(elapsed_ms(start, stop) / 1e3);
    }
    state.counters["GB/s"] = benchmark::Counter(
        bytes * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

/// Host time per hot call: batches of calls on the host clock, the stream drained outside.
template <class F> void time_host(benchmark::State& state, F&& call) {
    for (int i = 0; i < 100; ++i)
        call();
    Device::current().synchronize();
    constexpr int kBatch = 64;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            call();
        const auto t1 = std::chrono::steady_clock::now();
        Device::current().synchronize();
        state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kBatch);
    }
}

/// Whether a GPU is there; skips the benchmark with the reason where not.
inline bool have_gpu(benchmark::State& state) {
    std::string reason;
    if (Device::available(&reason)) return true;
    state.SkipWithError(reason.c_str());
    return false;
}

/// The process's one @p Fixture, made on first use; null (the benchmark skipped with the reason)
/// when it cannot be made, as without a GPU.
template <class Fixture> Fixture* shared_fixture(benchmark::State& state) {
    static Fixture* f = [&]() -> Fixture* {
        try {
            return new Fixture;
        } catch (const Error& e) {
            state.SkipWithError(e.what());
            return nullptr;
        }
    }();
    if (!f) state.SkipWithError("no GPU");
    return f;
}

/// A bench's main(): with --first-call, @p first_call alone (run it in a fresh process with a
/// fresh KILN_CACHE_DIR); otherwise the Google Benchmark cases.
inline int bench_main(int argc, char** argv, int (*first_call)()) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--first-call") == 0) return first_call();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

} // namespace kiln::bench
