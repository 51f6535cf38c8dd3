// The launch tuner: device time of tuned against default launches for a few shapes (events,
// medians of Google Benchmark repetitions; the first call, which tunes, is in the warm-up), the
// host time a tuned hot call adds (one lookup; beside a raw cuLaunchKernel in the same process),
// and, with --first-call, what tuning costs once: the first tuned call with nothing stored
// (candidates compiled and timed) and the first call of a new kernel instance that reads the
// stored choice (run it in a fresh process with a fresh KILN_CACHE_DIR).

#include "bench_support.hpp"
#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>

namespace {

using kiln::Array;
using kiln::bench::have_gpu;
using kiln::bench::random_array;
using kiln::bench::time_device;
using kiln::bench::time_host;

const char* const kOperation = "z = x * y + b";

const kiln::ElementwiseKernel& fma_kernel(bool tuned) {
    static const auto make = [](bool tune) {
        kiln::ElementwiseOptions options;
        options.tune = tune;
        return kiln::ElementwiseKernel("T x, T y, T b", "T z", kOperation, "tuner_fma", options);
    };
    static const kiln::ElementwiseKernel plain = make(false), tuned_kernel = make(true);
    return tuned ? tuned_kernel : plain;
}

const kiln::ReductionKernel& sum_kernel(bool tuned) {
    static const auto make = [](bool tune) {
        kiln::ReductionOptions options;
        options.tune = tune;
        return kiln::ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "tuner_sum",
                                     options);
    };
    static const kiln::ReductionKernel plain = make(false), tuned_kernel = make(true);
    return tuned ? tuned_kernel : plain;
}

// state.range(0): elements; range(1): 1 tuned, 0 default.
void BM_Tuner_Elementwise(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    const Array x = random_array({n}), y = random_array({n}), b = random_array({n});
    const Array z = kiln::empty({n}, kiln::DType::float32);
    const auto& k = fma_kernel(state.range(1) != 0);
    time_device(state, 16.0 * static_cast<double>(n), [&] { k(x, y, b, z); });
    state.SetLabel(state.range(1) ? "tuned" : "default");
}

// Rows of state.range(0) elements, 2^24 elements in all, reduced along axis 1: a warp per output
// for short rows (where the block size is tuned), a block per output for long ones.
void BM_Tuner_SumRows(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t row = state.range(0), rows = (std::int64_t{1} << 24) / row;
    const Array x = random_array({rows, row});
    const Array out = kiln::empty({rows}, kiln::DType::float32);
    const auto& k = sum_kernel(state.range(1) != 0);
    kiln::ReduceCall how;
    how.axis = kiln::Axes{1};
    time_device(state, 4.0 * static_cast<double>(rows * row), [&] { k(how, x, out); });
    state.SetLabel(state.range(1) ? "tuned" : "default");
}

void BM_Tuner_SumAll(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const std::int64_t n = state.range(0);
    const Array x = random_array({n});
    const Array out = kiln::empty({}, kiln::DType::float32);
    const auto& k = sum_kernel(state.range(1) != 0);
    time_device(state, 4.0 * static_cast<double>(n), [&] { k(x, out); });
    state.SetLabel(state.range(1) ? "tuned" : "default");
}

// The baseline of the host times: a raw cuLaunchKernel of a comparable kernel.
void BM_Tuner_HostRawLaunch(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const kiln::RawKernel k("extern \"C\" __global__ void k(const float* x, const float* y, "
                            "const float* b, float* z, int n) { int i = blockIdx.x * blockDim.x "
                            "+ threadIdx.x; if (i < n) z[i] = x[i] * y[i] + b[i]; }",
                            "k");
    const Array x = random_array({1024}), y = random_array({1024}), b = random_array({1024});
    const Array z = kiln::empty({1024}, kiln::DType::float32);
    const float *px = x.data<float>(), *py = y.data<float>(), *pb = b.data<float>();
    float* pz = z.data<float>();
    int n = 1024;
    k({4}, {256}, px, py, pb, pz, n);
    CUfunction f = k.function().handle();
    void* args[] = {&px, &py, &pb, &pz, &n};
    const auto& d = kiln::detail::driver();
    time_host(state, [&] { d.cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr); });
}

// Host time per hot call, output given: the tuned call's extra lookup.
void BM_Tuner_HostCall(benchmark::State& state) {
    if (!have_gpu(state)) return;
    const Array x = random_array({1024}), y = random_array({1024}), b = random_array({1024});
    const Array z = kiln::empty({1024}, kiln::DType::float32);
    const auto& k = fma_kernel(state.range(0) != 0);
    time_host(state, [&] { k(x, y, b, z); });
    state.SetLabel(state.range(0) ? "tuned" : "default");
}

BENCHMARK(BM_Tuner_Elementwise)
    ->ArgsProduct({{1 << 16, 1 << 20, 1 << 24, 1 << 27}, {0, 1}})
    ->UseManualTime();
BENCHMARK(BM_Tuner_SumRows)->ArgsProduct({{16, 32, 128, 4096}, {0, 1}})->UseManualTime();
BENCHMARK(BM_Tuner_SumAll)->ArgsProduct({{1 << 20, 1 << 26}, {0, 1}})->UseManualTime();
BENCHMARK(BM_Tuner_HostRawLaunch)->UseManualTime();
BENCHMARK(BM_Tuner_HostCall)->Arg(0)->Arg(1)->UseManualTime();

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One tuned call with nothing stored, then a new instance's first call: prints JSON.
int first_call() {
    if (!kiln::Device::available()) return 2;
    kiln::Device::current().make_current();
    const std::int64_t n = 1 << 24;
    const Array x = random_array({n}), y = random_array({n}), b = random_array({n});
    const Array z = kiln::empty({n}, kiln::DType::float32);
    kiln::Device::current().synchronize();
    kiln::ElementwiseOptions options;
    options.tune = true;
    double tune_ms, reuse_ms;
    {
        const kiln::ElementwiseKernel k("T x, T y, T b", "T z", kOperation, "tuner_first", options);
        const auto t0 = std::chrono::steady_clock::now();
        k(x, y, b, z);
        kiln::Device::current().synchronize();
        tune_ms = ms_since(t0);
    }
    {
        const kiln::ElementwiseKernel k("T x, T y, T b", "T z", kOperation, "tuner_first", options);
        const auto t0 = std::chrono::steady_clock::now();
        k(x, y, b, z);
        kiln::Device::current().synchronize();
        reuse_ms = ms_since(t0);
    }
    const kiln::TuningStatistics s = kiln::tuning_statistics();
    std::printf("{\"first_tuned_call_ms\": %.3f, \"new_instance_first_call_ms\": %.3f, "
                "\"tunings\": %llu, \"candidates_timed\": %llu, \"disk_hits\": %llu}\n",
                tune_ms, reuse_ms, static_cast<unsigned long long>(s.tunings),
                static_cast<unsigned long long>(s.candidates_timed),
                static_cast<unsigned long long>(s.disk_hits));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return kiln::bench::bench_main(argc, argv, first_call);
}
