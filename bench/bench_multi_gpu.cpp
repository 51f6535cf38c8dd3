// Several GPUs in one process (issue 17's figures):
//
//   bench_multi_gpu                  # both parts
//
// 1. The first call on a second device of the same architecture: an ElementwiseKernel and a
//    ReductionKernel warmed on device 0, then called for the first time on device 1. The host
//    time of that first call (generate the source, find the cubin in memory, load the module,
//    launch) and the compiles it ran (Compiler::statistics()). With one GPU, a second context on
//    device 0 stands in for device 1 (the same per-context path: a module load, no compile); the
//    line says which.
// 2. A data-parallel elementwise run over device-resident data (z = x * y + 1, float32): the
//    whole array on one GPU, then split in halves over two GPUs from one thread (CallOptions::
//    device), wall time from the first launch to both devices done, median of repeats; no host
//    transfers are timed. Skipped with a message below two GPUs. kiln::benchmark's per-device
//    summary line follows.
//
// Prints one line per figure; exits 1 when a first call on the second device compiled.

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A context on device 0 besides the primary one, left current: the stand-in for a second device
// on a one-GPU machine. cuCtxCreate_v2 from the loaded driver (Kiln's table leaves it out).
bool enter_second_context() {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!library) return false;
    using Create = CUresult (*)(CUcontext*, unsigned int, CUdevice);
    auto create = reinterpret_cast<Create>(dlsym(library, "cuCtxCreate_v2"));
    CUcontext context = nullptr;
    return create && create(&context, 0, kiln::Device(0).handle()) == CUDA_SUCCESS;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int first_call_on_second_device() {
    const kiln::ElementwiseKernel fma("T x, T y", "T z", "z = x * y + 1", "fma_multi_gpu_bench");
    const kiln::ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0",
                                    "sum_multi_gpu_bench");
    constexpr std::int64_t kCount = 1 << 20;
    {
        kiln::DeviceGuard on(0);
        const kiln::Array x = kiln::full({kCount}, 1.0, kiln::DType::float32);
        fma(x, x);
        sum(x);
        kiln::Device(0).synchronize();
    }
    const bool two = kiln::Device::count() >= 2 && kiln::Device(0).arch() == kiln::Device(1).arch();
    std::optional<kiln::DeviceGuard> on_second;
    if (two) {
        on_second.emplace(1);
    } else if (!enter_second_context()) {
        std::printf("first call on a second device: skipped, no second context could be made\n");
        return 0;
    }
    const char* where = two ? "device 1 (same architecture as device 0)"
                            : "a second context on device 0 (one GPU: stand-in for device 1)";
    const kiln::Array x = kiln::full({kCount}, 1.0, kiln::DType::float32); // allocation not timed
    kiln::detail::current_context();
    int status = 0;
    struct Case {
        const char* name;
        std::function<void()> call;
    };
    const Case cases[] = {{"ElementwiseKernel", [&] { fma(x, x); }},
                          {"ReductionKernel", [&] { sum(x); }}};
    for (const Case& c : cases) {
        const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
        const auto t0 = Clock::now();
        c.call();
        const double first = ms_since(t0);
        const auto t1 = Clock::now();
        c.call();
        const double second = ms_since(t1);
        const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
        const auto compiles = after.compiles - before.compiles;
        std::printf("first call on %s, %s: %.3f ms (next call %.3f ms), %llu compiles, %llu memory "
                    "hits, %llu disk hits\n",
                    where, c.name, first, second, static_cast<unsigned long long>(compiles),
                    static_cast<unsigned long long>(after.memory_hits - before.memory_hits),
                    static_cast<unsigned long long>(after.disk_hits - before.disk_hits));
        if (compiles) status = 1;
    }
    kiln::Device(0).synchronize();
    return status;
}

void data_parallel() {
    const int devices = kiln::Device::count();
    if (devices < 2) {
        std::printf("data-parallel elementwise over two GPUs: skipped, needs 2 GPUs (%d visible)\n",
                    devices);
        return;
    }
    const kiln::ElementwiseKernel fma("T x, T y", "T z", "z = x * y + 1", "fma_multi_gpu_bench");
    constexpr std::int64_t kElements = std::int64_t{1} << 28; // 1 GiB per array
    constexpr int kRepeats = 20;
    // Device-resident data: the whole array on device 0, and each half on its own device.
    struct Part {
        kiln::Array x, y, z;
    };
    auto make = [](int device, std::int64_t count) {
        kiln::DeviceGuard on(device);
        Part p{kiln::full({count}, 1.5, kiln::DType::float32),
               kiln::full({count}, 2.0, kiln::DType::float32),
               kiln::empty({count}, kiln::DType::float32)};
        kiln::Device(device).synchronize();
        return p;
    };
    const Part whole = make(0, kElements);
    const Part halves[2] = {make(0, kElements / 2), make(1, kElements - kElements / 2)};
    auto run_one = [&] {
        kiln::CallOptions on0;
        on0.device = 0;
        fma(on0, whole.x, whole.y, whole.z);
    };
    auto run_two = [&] {
        for (int d = 0; d < 2; ++d) {
            kiln::CallOptions on;
            on.device = d;
            fma(on, halves[d].x, halves[d].y, halves[d].z);
        }
    };
    auto wall = [&](auto&& run, int used) {
        std::vector<double> ms;
        for (int r = 0; r < kRepeats + 3; ++r) {
            const auto t0 = Clock::now();
            run();
            for (int d = 0; d < used; ++d)
                kiln::Device(d).synchronize();
            if (r >= 3) ms.push_back(ms_since(t0)); // the first ones load and warm up
        }
        return median(ms);
    };
    const double one = wall(run_one, 1), two = wall(run_two, 2);
    const double bytes = 3.0 * 4.0 * static_cast<double>(kElements);
    std::printf(
        "data-parallel elementwise z = x * y + 1, %lld float32: one GPU %.3f ms (%.0f GB/s), "
        "two GPUs %.3f ms (%.0f GB/s): %.2fx\n",
        static_cast<long long>(kElements), one, bytes / one / 1e6, two, bytes / two / 1e6,
        one / two);
    kiln::BenchmarkOptions options;
    options.name = "split fma";
    options.n_repeat = 20;
    options.devices = {{0, {}}, {1, {}}};
    std::printf("%s\n", kiln::benchmark(run_two, options).to_string().c_str());
}

} // namespace

int main() {
    std::string reason;
    if (!kiln::Device::available(&reason)) {
        std::printf("bench_multi_gpu: skipped, no GPU (%s)\n", reason.c_str());
        return 0;
    }
    for (int d = 0; d < kiln::Device::count(); ++d)
        std::printf("device %d: %s, %s\n", d, kiln::Device(d).name().c_str(),
                    kiln::Device(d).arch().c_str());
    // First: the second device has run nothing of these kernels yet.
    const int status = first_call_on_second_device();
    data_parallel();
    return status;
}
