// Host time per hot launch: raw cuLaunchKernel against Kiln's Function and RawKernel.
// Each iteration times a batch of launches on the host clock and reports the time per launch;
// the stream is drained outside the timed region so the queue never fills.

#include "kiln/detail/driver.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>

namespace {

constexpr int kBatch = 64;

constexpr const char* kEmpty = R"(
extern "C" __global__ void empty(float* p, int n) { if (n < 0) p[0] = 0; }
)";

struct Fixture {
    kiln::Stream stream;
    kiln::DeviceBuffer buffer{1024, stream};
    kiln::RawKernel kernel{kEmpty, "empty"};
    kiln::Function function;
    Fixture() {
        kernel({1}, {32}, buffer.data<float>(), 1); // compile, load, warm up
        function = kernel.function();
        stream.synchronize();
    }
};

Fixture* fixture(benchmark::State& state) {
    static Fixture* f = [&]() -> Fixture* {
        try {
            return new Fixture;
        } catch (const kiln::Error& e) {
            state.SkipWithError(e.what());
            return nullptr;
        }
    }();
    if (!f) state.SkipWithError("no GPU");
    return f;
}

template <class Launch> void run(benchmark::State& state, Fixture& f, Launch&& launch) {
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            launch();
        const auto stop = std::chrono::steady_clock::now();
        f.stream.synchronize();
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count() / kBatch);
    }
}

void BM_Launch_RawDriver(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const auto& driver = kiln::detail::driver();
    CUfunction function = f->function.handle();
    float* p = f->buffer.data<float>();
    int n = 1;
    void* args[] = {&p, &n};
    CUstream stream = f->stream.get();
    run(state, *f, [&] {
        if (driver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr) !=
            CUDA_SUCCESS)
            state.SkipWithError("cuLaunchKernel failed");
    });
}

void BM_Launch_Function(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    run(state, *f, [&] { f->function.launch(config, p, 1); });
}

void BM_Launch_RawKernel(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    run(state, *f, [&] { f->kernel(config, p, 1); });
}

// Activity timing on (issue 6): each launch also records two events and a record. A session per
// batch keeps the record list short; opening and closing it is outside the timed region.
void BM_Launch_RawKernel_ActivityTiming(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    for (auto _ : state) {
        kiln::TimingSession session(kiln::Activity::kernel, false);
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            f->kernel(config, p, 1);
        const auto stop = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(session.end(false));
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count() / kBatch);
    }
}

// Interleaved in registration order, so drift affects each alike.
BENCHMARK(BM_Launch_RawDriver)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_Function)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_RawKernel)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_RawKernel_ActivityTiming)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
