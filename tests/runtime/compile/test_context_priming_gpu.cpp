// On a real driver: the priming of a context Kiln makes (runtime/context_priming.hpp) runs, the
// thread's current context is left as it was, and kernels run right in that context afterwards.
// Each test is a fresh process (one per test), whose device 0 primary context is not active yet.
// The context also gets the modules the cache read ahead for the program, and a kernel's first call
// runs from the one loaded from its cubin (runtime/module_preload.hpp).

#include "driver/driver.hpp"
#include "gpu.hpp"
#include "kiln/kiln.hpp"
#include "kiln/log.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <spdlog/sinks/ostream_sink.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <vector>

namespace {

const char* const kTwice = R"(
extern "C" __global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
)";

TEST(ContextPrimingGpu, TheDriverRunsItInAContextKilnMakesAndKernelsRunThereAfter) {
    KILN_REQUIRE_GPU();
    const char* setting = std::getenv("KILN_CONTEXT_WARM_UP");
    if (setting && std::strcmp(setting, "0") == 0) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0";
    const auto& driver = kiln::detail::driver();
    CUdevice device = 0;
    ASSERT_EQ(driver.cuDeviceGet(&device, 0), CUDA_SUCCESS);
    unsigned flags = 0;
    int active = 0;
    ASSERT_EQ(driver.cuDevicePrimaryCtxGetState(device, &flags, &active), CUDA_SUCCESS);
    if (active) GTEST_SKIP() << "device 0's primary context is already active in this process";

    std::ostringstream log;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
    kiln::logger().sinks().push_back(sink);
    const auto level = kiln::logger().level();
    kiln::logger().set_level(spdlog::level::debug);
    CUcontext before = reinterpret_cast<CUcontext>(1);
    ASSERT_EQ(driver.cuCtxGetCurrent(&before), CUDA_SUCCESS);
    const CUcontext made = kiln::detail::primary_context(0); // retained, not made current
    CUcontext after = reinterpret_cast<CUcontext>(1);
    ASSERT_EQ(driver.cuCtxGetCurrent(&after), CUDA_SUCCESS);
    kiln::logger().set_level(level);
    kiln::logger().sinks().pop_back();

    EXPECT_NE(log.str().find("context primed: an empty kernel loaded and run"), std::string::npos)
        << log.str();
    EXPECT_EQ(after, before) << "the thread's current context changed";
    EXPECT_NE(made, nullptr);

    // The context works as any other: a kernel's results, over a poisoned output.
    kiln::Device(0).make_current();
    constexpr int kN = 1000;
    std::vector<float> x(kN);
    for (int i = 0; i < kN; ++i)
        x[i] = static_cast<float>(i) - 300.5f;
    const kiln::Array in = kiln::from_host(x);
    const kiln::Array out = kiln::full({kN}, 12345.0, kiln::DType::float32);
    kiln::RawKernel twice(kTwice, "twice");
    twice(kiln::Dim3{4}, kiln::Dim3{256}, in.data(), out.data(), kN);
    const std::vector<float> y = out.to_host<float>();
    for (int i = 0; i < kN; ++i)
        ASSERT_EQ(y[i], 2.0f * x[i]) << "element " << i;
}

// One process of ModulePreloadGpu.AKernelsFirstCallRunsFromTheModuleLoadedWithTheContext: Kiln
// makes the context (its debug log on standard error), then an elementwise kernel and a raw one
// run once; it prints whether both results were right.
TEST(ModulePreloadGpu, ChildProcessOfThePreloadTest) {
    if (!std::getenv("KILN_PRELOAD_TEST_CHILD"))
        GTEST_SKIP() << "run by AKernelsFirstCallRunsFromTheModuleLoadedWithTheContext";
    KILN_REQUIRE_GPU();
    kiln::Device(0).make_current();
    // The driver trace's lines after this one are the kernels' calls.
    std::fprintf(stderr, "KILN_CHILD context made\n");
    std::fflush(stderr);
    constexpr int kN = 1000;
    std::vector<float> x(kN);
    for (int i = 0; i < kN; ++i)
        x[i] = static_cast<float>(i) - 300.5f;
    const kiln::Array in = kiln::from_host(x);
    const kiln::ElementwiseKernel plus_one("T x", "T z", "z = x + 1", "preload_plus_one");
    const std::vector<float> z = plus_one(in)[0].to_host<float>();
    const kiln::Array out = kiln::full({kN}, 12345.0, kiln::DType::float32);
    kiln::RawKernel twice(kTwice, "twice");
    twice(kiln::Dim3{4}, kiln::Dim3{256}, in.data(), out.data(), kN);
    const std::vector<float> y = out.to_host<float>();
    bool right = true;
    for (int i = 0; i < kN; ++i)
        right = right && z[i] == x[i] + 1 && y[i] == 2.0f * x[i];
    std::printf("KILN_CHILD right=%d\n", right ? 1 : 0);
}

TEST(ModulePreloadGpu, AKernelsFirstCallRunsFromTheModuleLoadedWithTheContext) {
    KILN_REQUIRE_GPU();
    for (const char* setting : {"KILN_CONTEXT_WARM_UP", "KILN_READ_AHEAD"})
        if (const char* value = std::getenv(setting); value && std::strcmp(value, "0") == 0)
            GTEST_SKIP() << setting << "=0";
    kiln::test::TempDir dir;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    // What the child printed: whether its results were right, how many modules its context got
    // from the read-ahead, and how many its kernels' calls loaded.
    const auto child = [&] {
        const kiln::test::CommandResult run = kiln::test::run_command(
            "KILN_LOG_LEVEL=debug KILN_DRIVER_TRACE=1 KILN_PRELOAD_TEST_CHILD=1 KILN_CACHE_DIR='" +
            dir.path().string() + "' '" + self +
            "' --gtest_filter=ModulePreloadGpu.ChildProcessOfThePreloadTest");
        EXPECT_EQ(run.status, 0) << run.out << run.err;
        std::smatch right, loaded;
        EXPECT_TRUE(std::regex_search(run.out, right, std::regex("KILN_CHILD right=(\\d)")))
            << run.out;
        EXPECT_TRUE(std::regex_search(run.err, loaded,
                                      std::regex("(\\d+) module\\(s\\) read ahead loaded")))
            << run.err;
        // The log and the driver's trace are on standard error.
        const std::size_t calls = run.err.find("KILN_CHILD context made");
        EXPECT_NE(calls, std::string::npos) << run.err;
        int loads = 0;
        for (std::size_t at = run.err.find("cuModuleLoadDataEx", calls); at != std::string::npos;
             at = run.err.find("cuModuleLoadDataEx", at + 1))
            ++loads;
        return std::string(right.empty() ? "?" : right[1].str()) + " " +
               (loaded.empty() ? "?" : loaded[1].str()) + " " + std::to_string(loads);
    };
    // Compiled and loaded by the calls (the two kernels, and Kiln's own fill kernel where `full`
    // needs one), and filed for the next process.
    const std::string first = child();
    std::smatch m;
    ASSERT_TRUE(std::regex_match(first, m, std::regex("1 0 (\\d+)"))) << first;
    EXPECT_GE(std::stoi(m[1].str()), 2);
    // Every one of those modules loaded with the context; the calls load none.
    EXPECT_EQ(child(), "1 " + m[1].str() + " 0");
    EXPECT_EQ(child(), "1 " + m[1].str() + " 0");
}

} // namespace
