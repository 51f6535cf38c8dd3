// Host time per kernel of the mixed chain of 16 calls (bench/graph_chain.hpp: elementwise,
// reductions, fused, ready operations, RawKernel, RawModule) three ways in the same iterations,
// on one stream: replayed from a kiln::Graph captured once, called directly, and as 16 raw
// cuLaunchKernel calls of one of its kernels (chain_scale, same grid). Each way issues a batch
// on the host clock, then the stream is drained outside the timed region. The iteration time is
// the replay's per kernel; counters give all three per kernel (`replay_us`, `direct_us`,
// `raw_us`) and the replay's and direct call's ratios to raw (`replay_x_raw`, `direct_x_raw`).
// test_graph_capture_gpu checks that the replays equal the direct calls bit for bit.
//
//   build-gpu/bench/bench_graph --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

#include "graph_chain.hpp"

#include "bench_support.hpp"

#include "driver/driver.hpp"
#include "kiln/graph.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>

namespace {

namespace chain = kiln::graph_chain;
constexpr int kCalls = 16;
constexpr int kBatch = 8; // chains per timed batch: 128 kernels, well within the launch queue

struct Fixture {
    kiln::Stream stream;
    chain::Kernels kernels;
    kiln::Array x = kiln::full({chain::kSide * chain::kSide}, 0.5, kiln::DType::float32, stream);
    kiln::Array y = kiln::full({chain::kSide * chain::kSide}, 0.25, kiln::DType::float32, stream);
    chain::Results direct{stream}, captured{stream};
    std::unique_ptr<kiln::GraphExec> exec;
    Fixture() {
        for (int i = 0; i < 3; ++i) // compile, load, fill the caches and the pool
            chain::run(kernels, x, y, direct, stream);
        stream.synchronize();
        const kiln::Graph graph =
            kiln::Graph::capture(stream, [&] { chain::run(kernels, x, y, captured, stream); });
        exec = std::make_unique<kiln::GraphExec>(graph.instantiate());
        exec->launch(stream); // the first launch uploads the graph
        stream.synchronize();
    }
};

Fixture* fixture(benchmark::State& state) {
    return kiln::bench::shared_fixture<Fixture>(state);
}

template <class F> double host_seconds(F&& issue, kiln::StreamRef stream) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i)
        issue();
    const auto stop = std::chrono::steady_clock::now();
    stream.synchronize();
    return std::chrono::duration<double>(stop - start).count();
}

void BM_Graph_MixedChain16(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const auto& driver = kiln::detail::driver();
    CUfunction function = f->kernels.scale.function().handle();
    const int n = static_cast<int>(chain::kSide * chain::kSide);
    const float* in = f->x.data<float>();
    float* out = f->direct.t[4].data<float>();
    float s = 0.5f;
    int count = n;
    void* args[] = {&in, &out, &s, &count};
    CUstream stream = f->stream.get();
    const auto raw = [&] {
        for (int k = 0; k < kCalls; ++k)
            if (driver.cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args,
                                      nullptr) != CUDA_SUCCESS)
                state.SkipWithError("cuLaunchKernel failed");
    };
    const auto replay = [&] { f->exec->launch(f->stream); };
    const auto direct = [&] { chain::run(f->kernels, f->x, f->y, f->direct, f->stream); };
    double replay_total = 0, direct_total = 0, raw_total = 0;
    for (auto _ : state) {
        const double r = host_seconds(replay, f->stream);
        direct_total += host_seconds(direct, f->stream);
        raw_total += host_seconds(raw, f->stream);
        replay_total += r;
        state.SetIterationTime(r / (kBatch * kCalls));
    }
    const double kernels = static_cast<double>(state.iterations()) * kBatch * kCalls;
    if (kernels == 0 || raw_total == 0) return;
    state.counters["replay_us"] = replay_total / kernels * 1e6;
    state.counters["direct_us"] = direct_total / kernels * 1e6;
    state.counters["raw_us"] = raw_total / kernels * 1e6;
    state.counters["replay_x_raw"] = replay_total / raw_total;
    state.counters["direct_x_raw"] = direct_total / raw_total;
}

} // namespace

BENCHMARK(BM_Graph_MixedChain16)->UseManualTime()->Iterations(300)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
