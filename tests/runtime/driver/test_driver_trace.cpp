// KILN_DRIVER_TRACE=1 (runtime/driver_trace.hpp): every driver call Kiln makes is written to
// standard error with its time and Kiln's time before it, and Kiln's steps on a first call write
// marks. Runs over the fake driver with the setting in its environment (it is read when the
// driver loads), so it needs no GPU.

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace {

const char* const kScale = R"(
extern "C" __global__ void scale_trace(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
)";

TEST(DriverTrace, EveryCallAndKilnsStepsAreWritten) {
    ::testing::internal::CaptureStderr();
    kiln::Device::current();
    const kiln::Array x = kiln::empty({1024}, kiln::DType::float32);
    kiln::RawKernel scale(kScale, "scale_trace");
    scale(kiln::Dim3{4}, kiln::Dim3{256}, x.data(), 2.0f, 1024);
    CUdeviceptr pointer = 0;
    std::size_t bytes = 0;
    CUmodule none = nullptr; // a call the driver refuses: its error is written too
    kiln::detail::driver().cuModuleGetGlobal(&pointer, &bytes, none, "missing");
    const std::string trace = ::testing::internal::GetCapturedStderr();

    const std::regex line(
        R"(kiln driver: \+ *[0-9]+\.[0-9] us  cuLaunchKernel +[0-9]+\.[0-9] us\n)");
    EXPECT_TRUE(std::regex_search(trace, line)) << trace;
    EXPECT_NE(trace.find("cuModuleLoadDataEx"), std::string::npos) << trace;
    EXPECT_NE(trace.find("(kiln) RawKernel made"), std::string::npos) << trace;
    EXPECT_NE(trace.find("(kiln) cache lookup"), std::string::npos) << trace;
    EXPECT_TRUE(
        std::regex_search(trace, std::regex(R"(cuModuleGetGlobal +[0-9.]+ us  -> error [0-9]+)")))
        << trace;
}

} // namespace
