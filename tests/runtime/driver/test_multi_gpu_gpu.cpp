// Several GPUs in one process, runtime side: device guards, arrays that know their device, copies
// between devices (peer, staged, direct), a module loaded in a second context without a compile,
// per-device timing. On one GPU, a second context on device 0 (second_context.hpp) stands in for
// another device wherever Kiln keys its state by context; tests that need two real devices skip
// below two ("needs 2 GPUs").

#include "array/peer_copy.hpp"
#include "gpu.hpp"
#include "process_cache_dir.hpp"
#include "random_data.hpp"
#include "second_context.hpp"

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::Array;
using kiln::DType;
using kiln::test::ContextScope;
using kiln::test::second_context;

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

CUcontext current() {
    CUcontext context = nullptr;
    KILN_CU(cuCtxGetCurrent(&context));
    return context;
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    return kiln::test::random_floats(n, seed, -100.f, 100.f);
}

// An array of @p n float32 NaNs on the current device, so an element no copy wrote fails.
Array poisoned(std::int64_t n) {
    Array out = kiln::empty({n}, DType::float32);
    KILN_CU(cuMemsetD32Async(out.data(), 0xffffffffu, static_cast<std::size_t>(n), nullptr));
    return out;
}

constexpr const char* kScale = R"(
extern "C" __global__ void scale_multi_gpu(const float* x, float* out, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}
)";

// scale_multi_gpu over @p x on the current context; checked against the host.
void expect_scaled(const kiln::RawKernel& kernel, const std::vector<float>& host, float a) {
    const auto n = static_cast<std::int64_t>(host.size());
    const Array x = kiln::from_host(host);
    const Array out = poisoned(n);
    kernel({static_cast<unsigned>((n + 255) / 256)}, {256}, x.data<float>(), out.data<float>(), a,
           static_cast<long long>(n));
    const std::vector<float> result = out.to_host<float>();
    for (std::size_t i = 0; i < host.size(); ++i)
        ASSERT_EQ(result[i], a * host[i]) << "element " << i;
}

TEST(DeviceGuard, MakesThePrimaryContextCurrentAndRestoresThePrevious) {
    KILN_REQUIRE_GPU();
    const CUcontext primary = kiln::detail::primary_context(0);
    ContextScope in_second(second_context());
    {
        kiln::DeviceGuard on(0);
        EXPECT_EQ(on.ordinal(), 0);
        EXPECT_EQ(current(), primary);
        {
            kiln::DeviceGuard nested(kiln::Device(0));
            EXPECT_EQ(current(), primary);
        }
        EXPECT_EQ(current(), primary);
    }
    EXPECT_EQ(current(), second_context());
    // No context at all before: none after.
    KILN_CU(cuCtxSetCurrent(nullptr));
    {
        kiln::DeviceGuard on(0);
        EXPECT_EQ(current(), primary);
    }
    EXPECT_EQ(current(), nullptr);
}

TEST(DeviceGuard, AnOrdinalOutOfRangeIsArgumentErrorAndChangesNothing) {
    KILN_REQUIRE_GPU();
    ContextScope in_second(second_context());
    EXPECT_THROW(kiln::DeviceGuard on(kiln::Device::count()), kiln::ArgumentError);
    EXPECT_THROW(kiln::DeviceGuard on(-1), kiln::ArgumentError);
    EXPECT_EQ(current(), second_context());
}

TEST(DeviceGuard, ThreadsKeepTheirOwnContexts) {
    KILN_REQUIRE_GPU();
    const CUcontext primary = kiln::detail::primary_context(0);
    const CUcontext second = second_context();
    int wrong[2] = {0, 0};
    std::thread guarded([&] {
        KILN_CU(cuCtxSetCurrent(second));
        for (int i = 0; i < 2000; ++i) {
            kiln::DeviceGuard on(0);
            if (current() != primary) ++wrong[0];
        }
        if (current() != second) ++wrong[0];
    });
    std::thread plain([&] {
        ContextScope in_second(second);
        for (int i = 0; i < 2000; ++i)
            if (current() != second) ++wrong[1];
    });
    guarded.join();
    plain.join();
    EXPECT_EQ(wrong[0], 0);
    EXPECT_EQ(wrong[1], 0);
}

TEST(ArrayDevice, AllocatedArraysRecordTheirDevice) {
    KILN_REQUIRE_GPU();
    const Array a = kiln::zeros({16}, DType::float32);
    EXPECT_EQ(a.recorded_device(), kiln::Device::current().ordinal());
    {
        ContextScope in_second(second_context());
        EXPECT_EQ(kiln::empty({16}, DType::int8).recorded_device(), 0);
    }
    // Wrapped without a device: the driver answers for the pointer.
    const Array wrapped = Array::wrap(a.data(), a.shape(), a.dtype(), {}, a.owner());
    EXPECT_EQ(wrapped.recorded_device(), -1);
    EXPECT_EQ(wrapped.device(), a.recorded_device());
    // DLPack import records the tensor's device.
    EXPECT_EQ(kiln::from_dlpack(kiln::to_dlpack(a)).recorded_device(), a.recorded_device());
}

TEST(Copy, EveryRouteGivesTheSameElements) {
    KILN_REQUIRE_GPU();
    // Over 32 MiB: the staged copy goes in more than one piece.
    const std::int64_t n = (std::int64_t{32} << 20) / 4 + 4099;
    const std::vector<float> host = random_floats(static_cast<std::size_t>(n), 17);
    const Array src = kiln::from_host(host);
    using kiln::detail::CopyRoute;
    for (CopyRoute route : {CopyRoute::same_device, CopyRoute::peer, CopyRoute::staged}) {
        const Array dst = poisoned(n);
        kiln::detail::copy_via(route, dst, src, {});
        EXPECT_EQ(dst.to_host<float>(), host) << "route " << static_cast<int>(route);
    }
    const Array dst = poisoned(n);
    kiln::copy(dst, src);
    EXPECT_EQ(dst.to_host<float>(), host);
    const Array moved = src.copy_to(0);
    EXPECT_EQ(moved.recorded_device(), 0);
    EXPECT_NE(moved.data(), src.data());
    EXPECT_EQ(moved.to_host<float>(), host);
    EXPECT_EQ(kiln::detail::copy_route(0, 0), CopyRoute::same_device);
}

TEST(Function, ALaunchForAnotherDeviceIsArgumentError) {
    KILN_REQUIRE_GPU();
    const kiln::RawKernel kernel(kScale, "scale_multi_gpu");
    const kiln::Function& f = kernel.function();
    const Array x = kiln::zeros({4}, DType::float32);
    kiln::LaunchConfig config{{1}, {32}};
    config.device = 7;
    try {
        f.launch(config, x.data<float>(), x.data<float>(), 1.0f, 4LL);
        FAIL() << "a launch for GPU 7 of a kernel loaded on GPU 0 was accepted";
    } catch (const kiln::ArgumentError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("loaded on GPU 0"), std::string::npos) << what;
        EXPECT_NE(what.find("GPU 7"), std::string::npos) << what;
    }
    // RawKernel runs the launch on the device asked for: one out of range is refused.
    config.device = kiln::Device::count();
    EXPECT_THROW(kernel(config, x.data<float>(), x.data<float>(), 1.0f, 4LL), kiln::ArgumentError);
    // On the device it is loaded on, it runs.
    config.device = 0;
    kernel(config, x.data<float>(), x.data<float>(), 1.0f, 4LL);
    EXPECT_EQ(x.to_host<float>(), std::vector<float>(4, 0.f));
}

TEST(Module, ASecondContextLoadsWithoutCompiling) {
    KILN_REQUIRE_GPU();
    const kiln::RawKernel kernel(std::string(kScale) + "// second context\n", "scale_multi_gpu");
    const std::vector<float> host = random_floats(5000, 3);
    expect_scaled(kernel, host, 2.5f);
    const kiln::Function* first = &kernel.function();
    const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
    {
        ContextScope in_second(second_context());
        const kiln::Function& loaded = kernel.function();
        EXPECT_NE(&loaded, first);
        expect_scaled(kernel, host, -1.5f);
    }
    const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
    EXPECT_EQ(after.compiles, before.compiles);
    EXPECT_EQ(after.disk_hits, before.disk_hits);
    EXPECT_GE(after.memory_hits, before.memory_hits + 1);
    // The first context keeps its own module.
    EXPECT_EQ(&kernel.function(), first);
}

TEST(Timer, DeviceSummaryListsTheDevice) {
    KILN_REQUIRE_GPU();
    const kiln::RawKernel kernel(kScale, "scale_multi_gpu");
    const Array x = kiln::zeros({256}, DType::float32);
    std::ostringstream out;
    {
        kiln::ScopedTimerOptions options;
        options.activities = kiln::Activity::kernel;
        options.synchronize = true;
        options.out = &out;
        kiln::ScopedTimer timer("two contexts", options);
        kernel({1}, {256}, x.data<float>(), x.data<float>(), 2.0f, 256LL);
        ContextScope in_second(second_context());
        const Array y = kiln::zeros({256}, DType::float32);
        kernel({1}, {256}, y.data<float>(), y.data<float>(), 2.0f, 256LL);
    }
    const std::string text = out.str();
    const auto summary = text.find("CUDA device summary:");
    ASSERT_NE(summary, std::string::npos) << text;
    const auto line = text.find("|       2 | cuda:0", summary);
    EXPECT_NE(line, std::string::npos) << text; // both contexts are on device 0
}

TEST(Benchmark, EachDeviceListedGetsItsOwnTimes) {
    KILN_REQUIRE_GPU();
    const kiln::RawKernel kernel(kScale, "scale_multi_gpu");
    const Array x = kiln::zeros({1024}, DType::float32);
    kiln::BenchmarkOptions options;
    options.n_repeat = 4;
    options.n_warmup = 1;
    options.devices = {{0, {}}};
    const kiln::BenchmarkResult result = kiln::benchmark(
        [&] { kernel({4}, {256}, x.data<float>(), x.data<float>(), 1.0f, 1024LL); }, options);
    ASSERT_EQ(result.device_times().size(), 1u);
    EXPECT_EQ(result.device(), 0);
    EXPECT_EQ(result.gpu_times().size(), result.cpu_times().size());
    for (double t : result.gpu_times())
        EXPECT_GT(t, 0.0);
    EXPECT_NE(result.to_string().find("GPU-0:"), std::string::npos);
}

// ---- Two devices: skipped below two GPUs ----

TEST(TwoGpus, ArraysRecordTheDeviceTheyWereMadeOn) {
    KILN_REQUIRE_GPUS(2);
    Array on_one;
    {
        kiln::DeviceGuard on(1);
        on_one = kiln::zeros({8}, DType::float32);
    }
    EXPECT_EQ(on_one.recorded_device(), 1);
    EXPECT_EQ(Array::wrap(on_one.data(), {8}, DType::float32).device(), 1); // the driver's answer
    EXPECT_EQ(kiln::detail::operand_device(Array::wrap(on_one.data(), {8}, DType::float32)), 1);
}

TEST(TwoGpus, PeerAndStagedCopiesGiveTheSameElements) {
    KILN_REQUIRE_GPUS(2);
    const std::int64_t n = (std::int64_t{32} << 20) / 4 + 123;
    const std::vector<float> host = random_floats(static_cast<std::size_t>(n), 5);
    const Array src = kiln::from_host(host); // GPU 0 (the current context's device)
    ASSERT_EQ(src.recorded_device(), 0);
    using kiln::detail::CopyRoute;
    for (CopyRoute route : {CopyRoute::peer, CopyRoute::staged}) {
        Array dst;
        {
            kiln::DeviceGuard on(1);
            dst = poisoned(n);
        }
        kiln::detail::copy_via(route, dst, src, {});
        EXPECT_EQ(dst.to_host<float>(), host) << "route " << static_cast<int>(route);
    }
    // The automatic route, both ways.
    const Array there = src.copy_to(1);
    EXPECT_EQ(there.recorded_device(), 1);
    EXPECT_EQ(there.to_host<float>(), host);
    const Array back = there.copy_to(0);
    EXPECT_EQ(back.recorded_device(), 0);
    EXPECT_EQ(back.to_host<float>(), host);
    const bool peer = kiln::detail::peer_access(1, 0);
    EXPECT_EQ(kiln::detail::copy_route(1, 0), peer ? CopyRoute::peer : CopyRoute::staged);
}

TEST(TwoGpus, AModuleLoadsOnDevice1AfterDevice0WithoutCompiling) {
    KILN_REQUIRE_GPUS(2);
    if (kiln::Device(0).arch() != kiln::Device(1).arch())
        GTEST_SKIP() << "devices 0 and 1 differ in architecture: each compiles its own cubin";
    const kiln::RawKernel kernel(std::string(kScale) + "// device 1\n", "scale_multi_gpu");
    const std::vector<float> host = random_floats(3000, 9);
    expect_scaled(kernel, host, 3.f);
    const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
    {
        kiln::DeviceGuard on(1);
        expect_scaled(kernel, host, 4.f);
    }
    const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
    EXPECT_EQ(after.compiles, before.compiles);
    EXPECT_GE(after.memory_hits, before.memory_hits + 1);
}

TEST(TwoGpus, TimerAndBenchmarkReportEachDevice) {
    KILN_REQUIRE_GPUS(2);
    const kiln::RawKernel kernel(kScale, "scale_multi_gpu");
    const Array x0 = kiln::zeros({1024}, DType::float32);
    Array x1;
    {
        kiln::DeviceGuard on(1);
        x1 = kiln::zeros({1024}, DType::float32);
    }
    auto both = [&] {
        kernel({4}, {256}, x0.data<float>(), x0.data<float>(), 1.0f, 1024LL);
        kiln::LaunchConfig config{{4}, {256}};
        config.device = 1;
        kernel(config, x1.data<float>(), x1.data<float>(), 1.0f, 1024LL);
    };
    std::ostringstream out;
    {
        kiln::ScopedTimerOptions options;
        options.activities = kiln::Activity::kernel;
        options.synchronize = true;
        options.out = &out;
        kiln::ScopedTimer timer("two devices", options);
        both();
    }
    const std::string text = out.str();
    const auto summary = text.find("CUDA device summary:");
    ASSERT_NE(summary, std::string::npos) << text;
    EXPECT_NE(text.find("| cuda:0", summary), std::string::npos) << text;
    EXPECT_NE(text.find("| cuda:1", summary), std::string::npos) << text;

    kiln::BenchmarkOptions options;
    options.n_repeat = 3;
    options.n_warmup = 1;
    options.devices = {{0, {}}, {1, {}}};
    const kiln::BenchmarkResult result = kiln::benchmark(both, options);
    ASSERT_EQ(result.device_times().size(), 2u);
    EXPECT_EQ(result.device_times()[1].device, 1);
    const std::string line = result.to_string();
    EXPECT_NE(line.find("GPU-0:"), std::string::npos) << line;
    EXPECT_NE(line.find("GPU-1:"), std::string::npos) << line;
}

} // namespace
