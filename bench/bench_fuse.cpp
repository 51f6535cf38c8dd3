// kiln::fuse: bandwidth (events, medians of Google Benchmark repetitions) of the fused kernel
// against the same chain of unfused Kiln operations, for sum((x - y) * (x - y)) over 2^28
// float32 (bytes of x and y) and a Black-Scholes call and put over 2^26 float32 options (bytes
// of S, K, T and both outputs); host time per hot call of a fused function against an
// ElementwiseKernel with the same operands; softmax over the rows of 16384 x 16384 float32
// fused (the row plan: one kernel), fused over a transposed view (the split plan: three
// kernels), as unfused Kiln operations and, for scale, a device copy of the same array (bytes
// read and written once each); and, with --first-call (fused) or
// --first-call --elementwise, the first call of each with an empty cache (run each in a fresh
// process with a fresh KILN_CACHE_DIR).

#include "bench_support.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <tuple>

namespace {

using kiln::Array;
using kiln::DType;
using kiln::bench::have_gpu;
using kiln::bench::random_array;
using kiln::bench::time_device;
using kiln::bench::time_host;

constexpr double kRate = 0.02, kSigma = 0.3;

const auto& sum_squared_diff() {
    static auto f =
        kiln::fuse("sum_squared_diff", [](auto x, auto y) { return kiln::sum((x - y) * (x - y)); });
    return f;
}

// The normal CDF through tanh: 0.5 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
auto normal_cdf = [](auto x) {
    return 0.5 * (1 + kiln::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
};

const auto& black_scholes() {
    static auto f =
        kiln::fuse("black_scholes", [](auto spot, auto strike, auto years, auto r, auto sigma) {
            auto sqrt_years = kiln::sqrt(years);
            auto d1 = (kiln::log(spot / strike) + (r + 0.5 * sigma * sigma) * years) /
                      (sigma * sqrt_years);
            auto d2 = d1 - sigma * sqrt_years;
            auto discount = strike * kiln::exp(-r * years);
            auto call = spot * normal_cdf(d1) - discount * normal_cdf(d2);
            auto put = discount * normal_cdf(-d2) - spot * normal_cdf(-d1);
            return std::make_tuple(call, put);
        });
    return f;
}

// Positive prices and times: random_array's [-1, 1) moved.
Array shifted(std::int64_t n, float by) {
    return kiln::add(random_array({n}), by);
}

void BM_Fuse_SumSquaredDiff(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n}), y = random_array({n});
    time_device(state, 2.0 * static_cast<double>(n) * 4,
                [&] { benchmark::DoNotOptimize(sum_squared_diff()(x, y)); });
}

void BM_Fuse_SumSquaredDiffUnfused(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n}), y = random_array({n});
    time_device(state, 2.0 * static_cast<double>(n) * 4, [&] {
        benchmark::DoNotOptimize(
            kiln::sum(kiln::multiply(kiln::subtract(x, y), kiln::subtract(x, y))));
    });
}

void BM_Fuse_BlackScholes(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array spot = shifted(n, 20), strike = shifted(n, 20), years = shifted(n, 2);
    time_device(state, 5.0 * static_cast<double>(n) * 4, [&] {
        benchmark::DoNotOptimize(black_scholes()(spot, strike, years, kRate, kSigma));
    });
}

// The same formula, one ready operation per step.
Array cdf_unfused(const Array& x) {
    return kiln::multiply(
        kiln::add(
            kiln::tanh(kiln::multiply(
                kiln::add(x, kiln::multiply(kiln::multiply(kiln::multiply(x, x), x), 0.044715)),
                0.7978845608028654)),
            1),
        0.5);
}

void BM_Fuse_BlackScholesUnfused(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array spot = shifted(n, 20), strike = shifted(n, 20), years = shifted(n, 2);
    time_device(state, 5.0 * static_cast<double>(n) * 4, [&] {
        Array sqrt_years = kiln::sqrt(years);
        Array d1 = kiln::divide(kiln::add(kiln::log(kiln::divide(spot, strike)),
                                          kiln::multiply(years, kRate + 0.5 * kSigma * kSigma)),
                                kiln::multiply(sqrt_years, kSigma));
        Array d2 = kiln::subtract(d1, kiln::multiply(sqrt_years, kSigma));
        Array discount = kiln::multiply(strike, kiln::exp(kiln::multiply(years, -kRate)));
        Array call = kiln::subtract(kiln::multiply(spot, cdf_unfused(d1)),
                                    kiln::multiply(discount, cdf_unfused(d2)));
        Array put = kiln::subtract(kiln::multiply(discount, cdf_unfused(kiln::multiply(d2, -1))),
                                   kiln::multiply(spot, cdf_unfused(kiln::multiply(d1, -1))));
        benchmark::DoNotOptimize(call);
        benchmark::DoNotOptimize(put);
    });
}

// Host time per hot call, three inputs and an allocated output either way.
void BM_FuseHost_Fused(benchmark::State& state) {
    if (!have_gpu(state)) return;
    static auto fma = kiln::fuse("fused_fma", [](auto x, auto y, auto b) { return x * y + b; });
    Array x = random_array({1024}), y = random_array({1024}), b = random_array({1024});
    time_host(state, [&] { benchmark::DoNotOptimize(fma(x, y, b)); });
}

void BM_FuseHost_ElementwiseKernel(benchmark::State& state) {
    if (!have_gpu(state)) return;
    static kiln::ElementwiseKernel fma("years x, years y, years b", "years z", "z = x * y + b",
                                       "kernel_fma");
    Array x = random_array({1024}), y = random_array({1024}), b = random_array({1024});
    time_host(state, [&] { benchmark::DoNotOptimize(fma(x, y, b)); });
}

const auto& softmax() {
    static auto f = kiln::fuse("softmax", [](auto x) {
        auto e = kiln::exp(x - kiln::max(x, -1, {true}));
        return e / kiln::sum(e, -1, {true});
    });
    return f;
}

void BM_Fuse_Softmax(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n, n});
    time_device(state, 2.0 * static_cast<double>(n * n) * 4,
                [&] { benchmark::DoNotOptimize(softmax()(x)); });
}

// The split plan: a max, a sum and the elementwise kernel, over the transpose of a contiguous
// array (each kernel reads the rows with a stride).
void BM_Fuse_SoftmaxSplit(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n, n}).transpose();
    time_device(state, 2.0 * static_cast<double>(n * n) * 4,
                [&] { benchmark::DoNotOptimize(softmax()(x)); });
}

void BM_Fuse_SoftmaxUnfused(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n, n});
    kiln::ReduceOptions keep;
    keep.keepdims = true;
    time_device(state, 2.0 * static_cast<double>(n * n) * 4, [&] {
        Array e = kiln::exp(kiln::subtract(x, kiln::max(x, -1, keep)));
        benchmark::DoNotOptimize(kiln::divide(e, kiln::sum(e, -1, keep)));
    });
}

void BM_Fuse_CopyForScale(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    Array x = random_array({n, n}), y = kiln::empty({n, n}, DType::float32);
    time_device(state, 2.0 * static_cast<double>(n * n) * 4, [&] { kiln::copy(y, x); });
}

BENCHMARK(BM_Fuse_Softmax)->Arg(16384)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_SoftmaxSplit)->Arg(16384)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_SoftmaxUnfused)->Arg(16384)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_CopyForScale)->Arg(16384)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_SumSquaredDiff)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_SumSquaredDiffUnfused)
    ->Arg(1 << 28)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_BlackScholes)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fuse_BlackScholesUnfused)
    ->Arg(1 << 26)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FuseHost_Fused)->UseManualTime()->Iterations(3000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FuseHost_ElementwiseKernel)
    ->UseManualTime()
    ->Iterations(3000)
    ->Unit(benchmark::kMicrosecond);

// The first call of squared_diff, fused or as the equivalent ElementwiseKernel: trace (fused),
// compile (NVRTC), load and run; context excluded.
int first_call(bool elementwise) {
    kiln::Device::current();
    Array x = random_array({1 << 20}), y = random_array({1 << 20});
    kiln::Device::current().synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    if (elementwise) {
        kiln::ElementwiseKernel k("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
        Array z = k(x, y);
    } else {
        auto f = kiln::fuse("squared_diff", [](auto a, auto b) { return (a - b) * (a - b); });
        Array z = f(x, y);
    }
    kiln::Device::current().synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    std::printf("%s_first_call_ms %.1f\n", elementwise ? "elementwise" : "fused",
                std::chrono::duration<double, std::milli>(t1 - t0).count());
    return 0;
}

} // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): a failing benchmark run may end in terminate
int main(int argc, char** argv) {
    bool first = false, elementwise = false;
    for (int i = 1; i < argc; ++i) {
        first = first || std::strcmp(argv[i], "--first-call") == 0;
        elementwise = elementwise || std::strcmp(argv[i], "--elementwise") == 0;
    }
    if (first) return first_call(elementwise);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
