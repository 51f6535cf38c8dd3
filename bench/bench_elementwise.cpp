// ElementwiseKernel: bandwidth (events, medians of Google Benchmark repetitions, fresh random data)
// for z = x * y + b contiguous over sizes, with a broadcast row and with a transposed input; host
// time per hot call against a raw cuLaunchKernel; and, with --first-call, the first call of a
// new kernel with an empty cache (run in a fresh process with a fresh KILN_CACHE_DIR).

#include "bench_support.hpp"
#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>

namespace {

using kiln::Array;
using kiln::DType;
using kiln::bench::have_gpu;
using kiln::bench::random_array;
using kiln::bench::time_device;
using kiln::bench::time_host;

const kiln::ElementwiseKernel& fma3() {
    static kiln::ElementwiseKernel k("T x, T y, T b", "T z", "z = x * y + b", "fma3");
    return k;
}

void BM_Elementwise_Fma(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n}), y = random_array({n}), b = random_array({n});
    Array z = kiln::empty({n}, DType::float32);
    time_device(state, 4.0 * static_cast<double>(n) * 4, [&] { fma3()(x, y, b, z); });
}

void BM_Elementwise_FmaBroadcastRow(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t side = state.range(0);
    Array x = random_array({side, side}), y = random_array({side, side}), b = random_array({side});
    Array z = kiln::empty({side, side}, DType::float32);
    const auto edge = static_cast<double>(side);
    time_device(state, (3.0 * edge * edge + edge) * 4, [&] { fma3()(x, y, b, z); });
}

void BM_Elementwise_FmaTransposed(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t side = state.range(0);
    Array x = random_array({side, side}), y = random_array({side, side}),
          b = random_array({side, side});
    Array z = kiln::empty({side, side}, DType::float32);
    Array xt = x.transpose();
    const auto edge = static_cast<double>(side);
    time_device(state, 4.0 * edge * edge * 4, [&] { fma3()(xt, y, b, z); });
}

void BM_Elementwise_Copy(benchmark::State& state) { // the device-to-device copy ceiling
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n}), z = kiln::empty({n}, DType::float32);
    time_device(state, 2.0 * static_cast<double>(n) * 4, [&] {
        KILN_CU(cuMemcpyDtoDAsync(z.data(), x.data(), static_cast<std::size_t>(n) * 4, nullptr));
    });
}

void BM_ElementwiseHost_RawLaunch(benchmark::State& state) {
    if (!have_gpu(state)) return;
    kiln::RawKernel k("extern \"C\" __global__ void k(const float* x, const float* y, float b, "
                      "float* z, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
                      "if (i < n) z[i] = x[i] * y[i] + b; }",
                      "k");
    Array x = random_array({1024}), y = random_array({1024}),
          z = kiln::empty({1024}, DType::float32);
    k({4}, {256}, x.data<float>(), y.data<float>(), 1.0f, z.data<float>(), 1024);
    CUfunction f = k.function().handle();
    float* px = x.data<float>();
    float* py = y.data<float>();
    float* pz = z.data<float>();
    float b = 1.0f;
    int n = 1024;
    void* args[] = {&px, &py, &b, &pz, &n};
    const auto& d = kiln::detail::driver();
    time_host(state, [&] { d.cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr); });
}

void BM_ElementwiseHost_OutputGiven(benchmark::State& state) {
    if (!have_gpu(state)) return;
    Array x = random_array({1024}), y = random_array({1024}),
          z = kiln::empty({1024}, DType::float32);
    time_host(state, [&] { fma3()(x, y, 1.0f, z); });
}

void BM_ElementwiseHost_OutputAllocated(benchmark::State& state) {
    if (!have_gpu(state)) return;
    Array x = random_array({1024}), y = random_array({1024});
    time_host(state, [&] { benchmark::DoNotOptimize(fma3()(x, y, 1.0f)); });
}

BENCHMARK(BM_Elementwise_Fma)
    ->RangeMultiplier(4)
    ->Range(1 << 16, 1 << 28)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Elementwise_Copy)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Elementwise_FmaBroadcastRow)
    ->Arg(1 << 14)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Elementwise_FmaTransposed)
    ->Arg(1 << 14)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ElementwiseHost_RawLaunch)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ElementwiseHost_OutputGiven)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ElementwiseHost_OutputAllocated)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);

// The first call of a new ElementwiseKernel: compile (NVRTC), load and run; context excluded.
int first_call() {
    kiln::Device::current();
    Array x = random_array({1 << 20}), y = random_array({1 << 20});
    kiln::Device::current().synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    kiln::ElementwiseKernel k("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
    Array z = k(x, y);
    kiln::Device::current().synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    std::printf("first_call_ms %.1f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return kiln::bench::bench_main(argc, argv, first_call);
}
