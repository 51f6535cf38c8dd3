// Host time per hot call: raw cuLaunchKernel against Kiln's Function and RawKernel, and every
// front end of issue 16's table (ElementwiseKernel and kiln::add with the output given and
// allocated, a ReductionKernel over an axis, kiln::sum). Each iteration times a batch of calls on
// the host clock and reports the time per call; the stream is drained outside the timed region so
// the queue never fills. The front-end rows also time a batch of raw cuLaunchKernel calls of an
// empty kernel in the same iteration, on the same stream, and report `raw_us` and `x_raw` (their
// time over the raw launch's), so the ratio never mixes two runs or two processes.
//
// Without a GPU, KILN_DRIVER_LIBRARY=<build>/tests/libkiln_fake_driver.so runs the same rows over
// a driver that does nothing: `over_raw_us` is then Kiln's own host work per call.

#include "driver/driver.hpp"
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
    // The front ends' operands: 1024 float32 elements, and a 32 x 1024 matrix reduced over rows.
    kiln::Array x = kiln::zeros({1024}, kiln::DType::float32, stream);
    kiln::Array y = kiln::zeros({1024}, kiln::DType::float32, stream);
    kiln::Array z = kiln::empty({1024}, kiln::DType::float32, stream);
    kiln::Array matrix = kiln::zeros({32, 1024}, kiln::DType::float32, stream);
    kiln::Array rows = kiln::empty({32}, kiln::DType::float32, stream);
    kiln::ElementwiseKernel fma3{"T x, T y, T b", "T z", "z = x * y + b", "fma3"};
    kiln::ReductionKernel l2norm{"T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm"};
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

// One row of the table: batches of @p call and of a raw cuLaunchKernel of the empty kernel, one
// after the other in each iteration, on the fixture's stream. The iteration time is @p call's;
// `raw_us` is the raw launch's, `x_raw` the ratio of the two totals, `over_raw_us` the difference
// per call.
template <class Call> void against_raw(benchmark::State& state, Fixture& f, Call&& call) {
    const auto& driver = kiln::detail::driver();
    CUfunction function = f.function.handle();
    float* p = f.buffer.data<float>();
    int n = 1;
    void* args[] = {&p, &n};
    CUstream stream = f.stream.get();
    for (int i = 0; i < 100; ++i) { // compile, load, fill the caches and the memory pool
        call();
        driver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr);
    }
    f.stream.synchronize();
    double raw_total = 0, call_total = 0;
    for (auto _ : state) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            if (driver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr) !=
                CUDA_SUCCESS)
                state.SkipWithError("cuLaunchKernel failed");
        auto stop = std::chrono::steady_clock::now();
        f.stream.synchronize();
        const double raw = std::chrono::duration<double>(stop - start).count();
        start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            call();
        stop = std::chrono::steady_clock::now();
        f.stream.synchronize();
        const double called = std::chrono::duration<double>(stop - start).count();
        raw_total += raw;
        call_total += called;
        state.SetIterationTime(called / kBatch);
    }
    const double calls = static_cast<double>(state.iterations()) * kBatch;
    if (calls == 0 || raw_total == 0) return;
    state.counters["raw_us"] = raw_total / calls * 1e6;
    state.counters["x_raw"] = call_total / raw_total;
    state.counters["over_raw_us"] = (call_total - raw_total) / calls * 1e6;
}

void BM_Hot_ElementwiseOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::CallOptions options{f->stream, {}, {}};
    against_raw(state, *f, [&] { f->fma3(options, f->x, f->y, 1.0f, f->z); });
}

void BM_Hot_ElementwiseOutputAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::CallOptions options{f->stream, {}, {}};
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(f->fma3(options, f->x, f->y, 1.0f)); });
}

void BM_Hot_ReductionAxisOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::ReduceCall how{1, false, f->stream};
    against_raw(state, *f, [&] { f->l2norm(how, f->matrix, f->rows); });
}

void BM_Hot_ReductionAxisOutputAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::ReduceCall how{1, false, f->stream};
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(f->l2norm(how, f->matrix)); });
}

void BM_Hot_AddOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::OpOptions options;
    options.stream = f->stream;
    options.out = &f->z;
    against_raw(state, *f, [&] { kiln::add(f->x, f->y, options); });
}

void BM_Hot_AddOutputAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::OpOptions options;
    options.stream = f->stream;
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(kiln::add(f->x, f->y, options)); });
}

void BM_Hot_SumAxisOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::ReduceOptions options;
    options.stream = f->stream;
    options.out = &f->rows;
    against_raw(state, *f, [&] { kiln::sum(f->matrix, 1, options); });
}

void BM_Hot_SumAxisAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::ReduceOptions options;
    options.stream = f->stream;
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(kiln::sum(f->matrix, 1, options)); });
}

void BM_Hot_RawKernel(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    against_raw(state, *f, [&] { f->kernel(config, p, 1); });
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
// Issue 16's table, each row against a raw launch timed in the same iterations.
BENCHMARK(BM_Hot_RawKernel)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ElementwiseOutputGiven)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ElementwiseOutputAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ReductionAxisOutputGiven)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ReductionAxisOutputAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_AddOutputGiven)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_AddOutputAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_SumAxisOutputGiven)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_SumAxisAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
