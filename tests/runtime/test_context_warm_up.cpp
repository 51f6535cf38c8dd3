// A context Kiln makes is warmed up (runtime/context_warm_up.hpp): one kernel that does nothing is
// loaded from PTX, launched once on the default stream and unloaded, and the thread's current
// context is left as it was. Runs over the fake driver (a fresh process per test, whose primary
// context is inactive until retained), so it needs no GPU; the test context_warm_up_off runs it
// with KILN_CONTEXT_WARM_UP=0.

#include "kiln/detail/driver.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace {

void* fake_driver() {
    kiln::Device::count(); // loads the driver
    return dlopen(std::getenv("KILN_DRIVER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
}

unsigned long long launches() {
    using Get = unsigned long long (*)();
    static const auto get =
        reinterpret_cast<Get>(dlsym(fake_driver(), "kiln_fake_driver_launches"));
    return get();
}

long long live_modules() {
    using Get = long long (*)();
    static const auto get = reinterpret_cast<Get>(dlsym(fake_driver(), "kiln_fake_driver_modules"));
    return get();
}

// The calling thread's last launch: grid and block extents, and its parameters' size.
std::size_t last_launch(unsigned* dims) {
    using Get = std::size_t (*)(unsigned char*, std::size_t, unsigned*, void**);
    static const auto get =
        reinterpret_cast<Get>(dlsym(fake_driver(), "kiln_fake_driver_last_launch"));
    unsigned char bytes[64];
    void* function = nullptr;
    return get(bytes, sizeof bytes, dims, &function);
}

bool turned_off() {
    const char* setting = std::getenv("KILN_CONTEXT_WARM_UP");
    return setting && std::strcmp(setting, "0") == 0;
}

CUcontext current() {
    CUcontext context = nullptr;
    kiln::detail::driver().cuCtxGetCurrent(&context);
    return context;
}

TEST(ContextWarmUp, AContextKilnMakesRunsOneEmptyKernelThereAndUnloadsIt) {
    if (turned_off()) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0: see ContextWarmUpOff";
    ASSERT_EQ(launches(), 0u);
    ASSERT_EQ(current(), nullptr);
    kiln::Device(0).make_current();
    EXPECT_EQ(launches(), 1u);
    unsigned dims[6] = {};
    EXPECT_EQ(last_launch(dims), 0u) << "the warm-up kernel takes no parameters";
    const unsigned one_warp[6] = {1, 1, 1, 32, 1, 1};
    EXPECT_TRUE(std::equal(dims, dims + 6, one_warp));
    EXPECT_EQ(live_modules(), 0) << "the warm-up's module is unloaded";
    EXPECT_EQ(current(), kiln::detail::primary_context(0));

    // Once per context: using it again warms nothing.
    kiln::Device(0).make_current();
    kiln::Device::current().synchronize();
    EXPECT_EQ(launches(), 1u);
}

TEST(ContextWarmUp, TheThreadsCurrentContextIsLeftAsItWas) {
    if (turned_off()) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0: see ContextWarmUpOff";
    ASSERT_EQ(current(), nullptr);
    // Retained without being made current: the warm-up makes it current for its work only.
    const CUcontext made = kiln::detail::primary_context(0);
    EXPECT_NE(made, nullptr);
    EXPECT_EQ(launches(), 1u);
    EXPECT_EQ(current(), nullptr);
}

TEST(ContextWarmUp, AContextThatWasAlreadyActiveIsLeftAlone) {
    if (turned_off()) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0: see ContextWarmUpOff";
    // Another library (the CUDA runtime, a framework) made it and may have work in it.
    using Activate = void (*)();
    const auto activate =
        reinterpret_cast<Activate>(dlsym(fake_driver(), "kiln_fake_driver_activate_primary"));
    ASSERT_NE(activate, nullptr);
    activate();
    kiln::Device(0).make_current();
    EXPECT_EQ(launches(), 0u);
    EXPECT_EQ(live_modules(), 0);
    EXPECT_EQ(current(), kiln::detail::primary_context(0));
}

TEST(ContextWarmUpOff, NothingIsLoadedOrLaunched) {
    if (!turned_off()) GTEST_SKIP() << "runs with KILN_CONTEXT_WARM_UP=0 (context_warm_up_off)";
    kiln::Device(0).make_current();
    EXPECT_EQ(launches(), 0u);
    EXPECT_EQ(live_modules(), 0);
    EXPECT_EQ(current(), kiln::detail::primary_context(0));
}

} // namespace
