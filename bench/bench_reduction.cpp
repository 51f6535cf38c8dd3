// Reductions: bandwidth (events, medians of Google Benchmark repetitions, fresh random data) for
// sum to a scalar, over rows (axis 1) and columns (axis 0) of a square matrix, of a 256^3 cube
// (inputs rotated so the L2 cache cannot hold them), argmax and the seed's l2norm
// ReductionKernel; host time per hot call against a raw cuLaunchKernel; and, with --first-call,
// the first call of a new ReductionKernel with an empty cache (run it in a fresh process with a
// fresh KILN_CACHE_DIR).

#include "bench_support.hpp"
#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace {

using kiln::Array;
using kiln::DType;
using kiln::ReduceCall;
using kiln::bench::have_gpu;
using kiln::bench::random_array;
using kiln::bench::time_device;
using kiln::bench::time_host;

const kiln::ReductionKernel& l2norm() {
    static kiln::ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    return k;
}

void BM_Reduction_SumAll(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n});
    Array out = kiln::empty({}, DType::float32);
    kiln::ReduceOptions options;
    options.out = &out;
    time_device(state, 4.0 * static_cast<double>(n), [&] { kiln::sum(x, {}, options); });
}

void BM_Reduction_SumCube(benchmark::State& state) {
    if (!have_gpu(state)) return;
    std::vector<Array> cubes;
    cubes.reserve(4);
    for (int i = 0; i < 4; ++i)
        cubes.push_back(random_array({256, 256, 256}));
    Array out = kiln::empty({}, DType::float32);
    kiln::ReduceOptions options;
    options.out = &out;
    std::size_t next = 0;
    time_device(state, 4.0 * (1 << 24),
                [&] { kiln::sum(cubes[next++ % cubes.size()], {}, options); });
}

void BM_Reduction_SumRows(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t side = state.range(0);
    Array x = random_array({side, side});
    Array out = kiln::empty({side}, DType::float32);
    kiln::ReduceOptions options;
    options.out = &out;
    time_device(state, 4.0 * static_cast<double>(side) * static_cast<double>(side),
                [&] { kiln::sum(x, 1, options); });
}

void BM_Reduction_SumColumns(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t side = state.range(0);
    Array x = random_array({side, side});
    Array out = kiln::empty({side}, DType::float32);
    kiln::ReduceOptions options;
    options.out = &out;
    time_device(state, 4.0 * static_cast<double>(side) * static_cast<double>(side),
                [&] { kiln::sum(x, 0, options); });
}

void BM_Reduction_SumMixed(benchmark::State& state) { // axes (0, 2) of a 256^3 cube
    if (!have_gpu(state)) return;
    std::vector<Array> cubes;
    cubes.reserve(4);
    for (int i = 0; i < 4; ++i)
        cubes.push_back(random_array({256, 256, 256}));
    Array out = kiln::empty({256}, DType::float32);
    kiln::ReduceOptions options;
    options.out = &out;
    std::size_t next = 0;
    time_device(state, 4.0 * (1 << 24), [&] {
        kiln::sum(cubes[next++ % cubes.size()], {0, 2}, options);
    });
}

void BM_Reduction_ArgmaxAll(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n});
    Array out = kiln::empty({}, DType::int64);
    kiln::ReduceOptions options;
    options.out = &out;
    time_device(state, 4.0 * static_cast<double>(n), [&] { kiln::argmax(x, {}, options); });
}

void BM_Reduction_L2normRows(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t side = state.range(0);
    Array x = random_array({side, side});
    Array out = kiln::empty({side}, DType::float32);
    time_device(state, 4.0 * static_cast<double>(side) * static_cast<double>(side),
                [&] { l2norm()(ReduceCall{1}, x, out); });
}

// 2^28 floats in rows of the argument's length: rows of 16 and 64 floats share a warp (4 and
// 16 lanes a row), a warp per row up to 2048 floats, then a block per row without the split path
// (rows of 4096 and 8192 floats are too short to split).
void BM_Reduction_L2normShortRows(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t columns = state.range(0), rows = (std::int64_t{1} << 28) / columns;
    Array x = random_array({rows, columns});
    Array out = kiln::empty({rows}, DType::float32);
    time_device(state, 4.0 * static_cast<double>(rows) * static_cast<double>(columns),
                [&] { l2norm()(ReduceCall{1}, x, out); });
}

// 2^28 floats summed over axis 0 of the argument's rows: fewer than 256 rows never split, so
// each column is one block's.
void BM_Reduction_SumShortColumns(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t rows = state.range(0), columns = (std::int64_t{1} << 28) / rows;
    Array x = random_array({rows, columns});
    Array out = kiln::empty({columns}, DType::float32);
    kiln::ReduceOptions options;
    options.out = &out;
    time_device(state, 4.0 * static_cast<double>(rows) * static_cast<double>(columns),
                [&] { kiln::sum(x, 0, options); });
}

void BM_Reduction_Read(benchmark::State& state) { // the read ceiling: a device-to-device copy
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n}), z = kiln::empty({n}, DType::float32);
    time_device(state, 2.0 * static_cast<double>(n) * 4, [&] {
        KILN_CU(cuMemcpyDtoDAsync(z.data(), x.data(), static_cast<std::size_t>(n) * 4, nullptr));
    });
}

void BM_ReductionHost_RawLaunch(benchmark::State& state) {
    if (!have_gpu(state)) return;
    kiln::RawKernel k("extern \"C\" __global__ void k(const float* x, float* y, int n) { "
                      "float s = 0; for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i]; "
                      "if (threadIdx.x == 0) *y = s; }",
                      "k");
    Array x = random_array({1024}), y = kiln::empty({1}, DType::float32);
    k({1}, {256}, x.data<float>(), y.data<float>(), 1024);
    CUfunction f = k.function().handle();
    float* px = x.data<float>();
    float* py = y.data<float>();
    int n = 1024;
    void* args[] = {&px, &py, &n};
    const auto& d = kiln::detail::driver();
    time_host(state, [&] { d.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr); });
}

void BM_ReductionHost_KernelOutputGiven(benchmark::State& state) {
    if (!have_gpu(state)) return;
    Array x = random_array({32, 1024}), y = kiln::empty({32}, DType::float32);
    time_host(state, [&] { l2norm()(ReduceCall{1}, x, y); });
}

void BM_ReductionHost_KernelOutputAllocated(benchmark::State& state) {
    if (!have_gpu(state)) return;
    Array x = random_array({32, 1024});
    time_host(state, [&] { benchmark::DoNotOptimize(l2norm()(ReduceCall{1}, x)); });
}

void BM_ReductionHost_SumAllocated(benchmark::State& state) {
    if (!have_gpu(state)) return;
    Array x = random_array({32, 1024});
    time_host(state, [&] { benchmark::DoNotOptimize(kiln::sum(x, 1)); });
}

BENCHMARK(BM_Reduction_Read)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_SumAll)
    ->RangeMultiplier(16)
    ->Range(1 << 20, 1 << 28)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_SumCube)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_SumRows)->Arg(1 << 14)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_SumColumns)->Arg(1 << 14)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_SumMixed)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_ArgmaxAll)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_L2normRows)->Arg(1 << 14)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_L2normShortRows)
    ->Arg(16)
    ->Arg(64)
    ->Arg(512)
    ->Arg(2048)
    ->Arg(1 << 12)
    ->Arg(1 << 13)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduction_SumShortColumns)
    ->Arg(16)
    ->Arg(255)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReductionHost_RawLaunch)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReductionHost_KernelOutputGiven)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReductionHost_KernelOutputAllocated)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReductionHost_SumAllocated)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);

// The first call of a new ReductionKernel: generate, compile (NVRTC), load and run; context
// excluded. A nonce in the preamble keeps NVRTC's own cache out of it. Split in two to show where
// the time goes: compile_for() (generate and compile, which the call then finds in memory), then
// the call (load, size, allocate, launch, synchronize).
int first_call() {
    kiln::Device::current();
    Array x = random_array({4096, 4096});
    kiln::Device::current().synchronize();
    const std::string arch = kiln::Device::current().arch();
    kiln::ReductionOptions options;
    options.preamble = "// nonce " + std::to_string(std::random_device{}());
    using Clock = std::chrono::steady_clock;
    const auto ms = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const auto t0 = Clock::now();
    kiln::ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", options);
    const kiln::Arg args[] = {x};
    k.compile_for(args, 1, ReduceCall{1}, arch);
    const auto t1 = Clock::now();
    Array y = k(ReduceCall{1}, x);
    kiln::Device::current().synchronize();
    const auto t2 = Clock::now();
    std::printf("first_call_ms %.1f (compile %.1f, load and run %.1f)\n", ms(t0, t2), ms(t0, t1),
                ms(t1, t2));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return kiln::bench::bench_main(argc, argv, first_call);
}
