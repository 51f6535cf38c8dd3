// Run with KILN_DRIVER_LIBRARY pointing nowhere (see CMakeLists.txt): compiling works, every
// device operation is a NoDeviceError that says what is missing.

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

namespace {

template <class F> std::string no_device_message(F&& f) {
    try {
        f();
    } catch (const kiln::NoDeviceError& e) {
        return e.what();
    }
    return "no NoDeviceError thrown";
}

} // namespace

TEST(NoDriver, DeviceIsUnavailableWithAReason) {
    std::string reason;
    EXPECT_FALSE(kiln::Device::available(&reason));
    EXPECT_NE(reason.find("/nonexistent/libcuda.so.1"), std::string::npos) << reason;
}

TEST(NoDriver, EveryDeviceOperationSaysWhatIsMissing) {
    for (const auto& message : {
             no_device_message([] { kiln::Device::count(); }),
             no_device_message([] { kiln::Device::current(); }),
             no_device_message([] { kiln::Stream stream; }),
             no_device_message([] { kiln::Event event; }),
             no_device_message([] { kiln::DeviceBuffer buffer(1024); }),
         })
        EXPECT_NE(message.find("libcuda.so.1 could not be loaded"), std::string::npos) << message;
}

TEST(NoDriver, CompilingForANamedArchitectureWorks) {
    kiln::RawKernel kernel("extern \"C\" __global__ void k(int* p) { *p = 1; }", "k",
                           kiln::CompileOptions::for_arch("sm_80"));
    auto program = kernel.compile();
    ASSERT_TRUE(program);
    EXPECT_EQ(program->cubin().rfind("\x7f"
                                     "ELF",
                                     0),
              0u);
}

TEST(NoDriver, LaunchingIsANoDeviceError) {
    kiln::RawKernel kernel("extern \"C\" __global__ void k(int* p) { *p = 1; }", "k",
                           kiln::CompileOptions::for_arch("sm_80"));
    int* p = nullptr;
    EXPECT_THROW(kernel({1}, {1}, p), kiln::NoDeviceError);
}
