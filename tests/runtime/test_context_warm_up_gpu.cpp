// On a real driver: the warm-up of a context Kiln makes (runtime/context_warm_up.hpp) runs, the
// thread's current context is left as it was, and kernels run right in that context afterwards.
// Each test is a fresh process (one per test), whose device 0 primary context is not active yet.

#include "gpu.hpp"
#include "kiln/detail/driver.hpp"
#include "kiln/kiln.hpp"
#include "kiln/log.hpp"

#include <spdlog/sinks/ostream_sink.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

namespace {

const char* const kTwice = R"(
extern "C" __global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
)";

TEST(ContextWarmUpGpu, TheDriverRunsItInAContextKilnMakesAndKernelsRunThereAfter) {
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

    EXPECT_NE(log.str().find("context warmed up: an empty kernel loaded and run"),
              std::string::npos)
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

} // namespace
