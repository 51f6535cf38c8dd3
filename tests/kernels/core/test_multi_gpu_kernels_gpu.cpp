// The same ElementwiseKernel, ReductionKernel and RawKernel objects on several devices: each
// device (on one GPU, a second context on device 0 standing in for one) loads the kernels on its
// first use there without compiling, calls from two threads at once give right results, and
// operands on another device are an ArgumentError naming them. Tests that need two real devices
// skip below two ("needs 2 GPUs").

#include "gpu.hpp"
#include "process_cache_dir.hpp"
#include "random_data.hpp"
#include "second_context.hpp"

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::Array;
using kiln::DType;
using kiln::test::ContextScope;
using kiln::test::second_context;

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr std::int64_t kCount = (1 << 15) + 77;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    return kiln::test::random_floats(n, seed, -4.f, 4.f);
}

// One kernel of each front end, each kept in one object that every thread and device uses.
struct Kernels {
    kiln::ElementwiseKernel fma{"T x, T y", "T z", "z = x * y + 1", "fma_multi_gpu"};
    kiln::ReductionKernel sum{"T x", "T y", "x", "a + b", "y = a", "0", "sum_multi_gpu"};
    kiln::RawKernel negate{R"(
extern "C" __global__ void negate_multi_gpu(const float* x, float* out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = -x[i];
})",
                           "negate_multi_gpu"};
};

Kernels& kernels() {
    static Kernels k;
    return k;
}

// Runs the three kernels on fresh data in the current context and checks them against the host.
// Returns "" or the first thing wrong (ASSERT cannot be used off the main thread).
std::string run_and_check(unsigned seed) {
    Kernels& k = kernels();
    const std::vector<float> hx = random_floats(kCount, seed), hy = random_floats(kCount, seed + 1);
    const Array x = kiln::from_host(hx), y = kiln::from_host(hy);
    const Array z = k.fma(x, y);
    const std::vector<float> hz = z.to_host<float>();
    for (std::size_t i = 0; i < hz.size(); ++i)
        if (hz[i] != std::fma(hx[i], hy[i], 1.f)) // NVRTC contracts x * y + 1 into one fma
            return "fma element " + std::to_string(i) + " is " + std::to_string(hz[i]);
    const Array s = k.sum(x);
    const float total = s.to_host<float>().at(0);
    double expected = 0;
    for (float v : hx)
        expected += v;
    if (std::fabs(total - expected) > 1e-3 * kCount)
        return "sum is " + std::to_string(total) + ", expected " + std::to_string(expected);
    const Array out = kiln::full({kCount}, std::nan(""), DType::float32);
    k.negate({static_cast<unsigned>((kCount + 255) / 256)}, {256}, x.data<float>(),
             out.data<float>(), static_cast<long long>(kCount));
    const std::vector<float> hn = out.to_host<float>();
    for (std::size_t i = 0; i < hn.size(); ++i)
        if (hn[i] != -hx[i]) return "negate element " + std::to_string(i);
    return "";
}

// The error of @p call, which must be an ArgumentError.
std::string argument_error(const std::function<void()>& call) {
    try {
        call();
    } catch (const kiln::ArgumentError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no ArgumentError";
    return "";
}

TEST(MultiContextKernels, ASecondContextLoadsTheSameKernelsWithoutCompiling) {
    KILN_REQUIRE_GPU();
    ASSERT_EQ(run_and_check(1), ""); // the first context: compiles (or reads the disk cache)
    const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
    {
        ContextScope in_second(second_context());
        ASSERT_EQ(run_and_check(2), "");
    }
    const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
    EXPECT_EQ(after.compiles, before.compiles);
    EXPECT_EQ(after.disk_hits, before.disk_hits);
    // One program per front end found in memory (the reduction may need more than one pass).
    EXPECT_GE(after.memory_hits, before.memory_hits + 3);
}

TEST(MultiContextKernels, TwoThreadsEachInItsOwnContextShareTheKernelObjects) {
    KILN_REQUIRE_GPU();
    std::string failures[2];
    std::thread first([&] {
        try {
            kiln::DeviceGuard on(0);
            for (unsigned i = 0; i < 8 && failures[0].empty(); ++i)
                failures[0] = run_and_check(100 + i);
        } catch (const std::exception& e) {
            failures[0] = e.what();
        }
    });
    std::thread second([&] {
        try {
            ContextScope in_second(second_context());
            for (unsigned i = 0; i < 8 && failures[1].empty(); ++i)
                failures[1] = run_and_check(200 + i);
        } catch (const std::exception& e) {
            failures[1] = e.what();
        }
    });
    first.join();
    second.join();
    EXPECT_EQ(failures[0], "");
    EXPECT_EQ(failures[1], "");
}

TEST(MultiContextKernels, OperandsOnAnotherDeviceAreArgumentErrors) {
    KILN_REQUIRE_GPU();
    Kernels& k = kernels();
    const Array x = kiln::zeros({64}, DType::float32);
    // The same memory described as GPU 1's: refused before any device work.
    const Array elsewhere = Array::wrap(x.data(), x.shape(), x.dtype(), x.strides(), x.owner(), 1);
    const std::string message = argument_error([&] { k.fma(x, elsewhere); });
    EXPECT_NE(message.find("fma_multi_gpu"), std::string::npos) << message;
    EXPECT_NE(message.find("GPU 0"), std::string::npos) << message;
    EXPECT_NE(message.find("'x' on GPU 0"), std::string::npos) << message;
    EXPECT_NE(message.find("'y' on GPU 1"), std::string::npos) << message;
    const std::string reduction = argument_error([&] { k.sum(elsewhere); });
    EXPECT_NE(reduction.find("'x' on GPU 1"), std::string::npos) << reduction;
    // A given output on another device, too.
    const std::string output = argument_error([&] { k.fma(x, x, elsewhere); });
    EXPECT_NE(output.find("'z' on GPU 1"), std::string::npos) << output;
    // The ready operations go through the same check.
    EXPECT_THROW(kiln::add(x, elsewhere), kiln::ArgumentError);
}

TEST(MultiContextKernels, CallOptionsDeviceRunsTheCallThere) {
    KILN_REQUIRE_GPU();
    Kernels& k = kernels();
    const std::vector<float> hx = random_floats(1000, 7);
    const Array x = kiln::from_host(hx);
    ContextScope in_second(second_context());
    kiln::CallOptions options;
    options.device = 0;
    const Array z = k.fma(options, x, x);
    CUcontext now = nullptr;
    KILN_CU(cuCtxGetCurrent(&now));
    EXPECT_EQ(now, second_context()); // the call's guard restored the thread's context
    EXPECT_EQ(z.recorded_device(), 0);
    std::vector<float> hz;
    {
        kiln::DeviceGuard on(0);
        hz = z.to_host<float>();
    }
    for (std::size_t i = 0; i < hx.size(); ++i)
        ASSERT_EQ(hz[i], std::fma(hx[i], hx[i], 1.f)) << i;
    options.device = kiln::Device::count();
    EXPECT_THROW(k.fma(options, x, x), kiln::ArgumentError);
    kiln::ReduceCall how;
    how.device = kiln::Device::count();
    EXPECT_THROW(k.sum(how, x), kiln::ArgumentError);
}

// ---- Two devices: skipped below two GPUs ----

TEST(TwoGpuKernels, TheSameKernelsRunOnEachDeviceFromTwoThreads) {
    KILN_REQUIRE_GPUS(2);
    ASSERT_EQ(run_and_check(11), "");
    const bool same_arch = kiln::Device(0).arch() == kiln::Device(1).arch();
    const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
    {
        kiln::DeviceGuard on(1);
        ASSERT_EQ(run_and_check(12), "");
    }
    const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
    if (same_arch) {
        EXPECT_EQ(after.compiles, before.compiles);
    }
    std::string failures[2];
    std::vector<std::thread> threads;
    threads.reserve(2);
    for (int d = 0; d < 2; ++d)
        threads.emplace_back([&, d] {
            try {
                kiln::DeviceGuard on(d);
                for (unsigned i = 0; i < 8 && failures[d].empty(); ++i)
                    failures[d] = run_and_check(300 + 10 * static_cast<unsigned>(d) + i);
            } catch (const std::exception& e) {
                failures[d] = e.what();
            }
        });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(failures[0], "");
    EXPECT_EQ(failures[1], "");
}

TEST(TwoGpuKernels, OperandsOnTheWrongDeviceAreArgumentErrors) {
    KILN_REQUIRE_GPUS(2);
    Kernels& k = kernels();
    const Array on0 = kiln::zeros({64}, DType::float32);
    Array on1;
    {
        kiln::DeviceGuard on(1);
        on1 = kiln::zeros({64}, DType::float32);
    }
    const std::string mixed = argument_error([&] { k.fma(on0, on1); });
    EXPECT_NE(mixed.find("'x' on GPU 0"), std::string::npos) << mixed;
    EXPECT_NE(mixed.find("'y' on GPU 1"), std::string::npos) << mixed;
    // Both on GPU 1 while the call runs on GPU 0.
    const std::string elsewhere = argument_error([&] { k.sum(on1); });
    EXPECT_NE(elsewhere.find("the call's device, GPU 0"), std::string::npos) << elsewhere;
    // Wrapped without a device: the driver is asked, since there are several.
    const Array wrapped = Array::wrap(on1.data(), on1.shape(), on1.dtype());
    EXPECT_THROW(k.fma(on0, wrapped), kiln::ArgumentError);
    // On their device, the same call runs.
    kiln::CallOptions options;
    options.device = 1;
    const Array z = k.fma(options, on1, wrapped);
    EXPECT_EQ(z.recorded_device(), 1);
}

} // namespace
