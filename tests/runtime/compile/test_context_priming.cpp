// A context Kiln makes is warmed up (runtime/context_priming.hpp): one kernel that does nothing is
// loaded from PTX, launched once on the default stream and unloaded, and the thread's current
// context is left as it was. Runs over the fake driver (a fresh process per test, whose primary
// context is inactive until retained), so it needs no GPU; the test context_priming_off runs it
// with KILN_CONTEXT_WARM_UP=0. The context also gets the modules the cache read ahead for the
// program (runtime/module_preload.hpp), which a first call adopts instead of loading its cubin.

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>

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

TEST(ContextPriming, AContextKilnMakesRunsOneEmptyKernelThereAndUnloadsIt) {
    if (turned_off()) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0: see ContextPrimingOff";
    ASSERT_EQ(launches(), 0u);
    ASSERT_EQ(current(), nullptr);
    kiln::Device(0).make_current();
    EXPECT_EQ(launches(), 1u);
    unsigned dims[6] = {};
    EXPECT_EQ(last_launch(dims), 0u) << "the priming kernel takes no parameters";
    const unsigned one_warp[6] = {1, 1, 1, 32, 1, 1};
    EXPECT_TRUE(std::equal(dims, dims + 6, one_warp));
    EXPECT_EQ(live_modules(), 0) << "the priming's module is unloaded";
    EXPECT_EQ(current(), kiln::detail::primary_context(0));

    // Once per context: using it again warms nothing.
    kiln::Device(0).make_current();
    kiln::Device::current().synchronize();
    EXPECT_EQ(launches(), 1u);
}

TEST(ContextPriming, TheThreadsCurrentContextIsLeftAsItWas) {
    if (turned_off()) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0: see ContextPrimingOff";
    ASSERT_EQ(current(), nullptr);
    // Retained without being made current: the priming makes it current for its work only.
    const CUcontext made = kiln::detail::primary_context(0);
    EXPECT_NE(made, nullptr);
    EXPECT_EQ(launches(), 1u);
    EXPECT_EQ(current(), nullptr);
}

TEST(ContextPriming, AContextThatWasAlreadyActiveIsLeftAlone) {
    if (turned_off()) GTEST_SKIP() << "KILN_CONTEXT_WARM_UP=0: see ContextPrimingOff";
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

TEST(ContextPrimingOff, NothingIsLoadedOrLaunched) {
    if (!turned_off()) GTEST_SKIP() << "runs with KILN_CONTEXT_WARM_UP=0 (context_priming_off)";
    kiln::Device(0).make_current();
    EXPECT_EQ(launches(), 0u);
    EXPECT_EQ(live_modules(), 0);
    EXPECT_EQ(current(), kiln::detail::primary_context(0));
}

// One process of ThePreviousRunsModulesAreLoadedWithTheContext (skipped otherwise): Kiln makes
// the context, then an elementwise kernel's first call; it prints the modules loaded after each.
TEST(ModulePreload, ChildProcessOfThePreloadTest) {
    if (!std::getenv("KILN_PRELOAD_TEST_CHILD"))
        GTEST_SKIP() << "run by ThePreviousRunsModulesAreLoadedWithTheContext";
    kiln::Device(0).make_current();
    const long long with_context = live_modules();
    const kiln::ElementwiseKernel kernel("T x", "T z", "z = x * 2", "preload_test");
    const kiln::Array x = kiln::empty({1000}, kiln::DType::float32);
    (void)kernel(x);
    std::printf("KILN_CHILD context=%lld call=%lld\n", with_context, live_modules());
}

TEST(ModulePreload, ThePreviousRunsModulesAreLoadedWithTheContext) {
    kiln::test::TempDir dir;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const auto child = [&](const std::string& settings) {
        const kiln::test::CommandResult run = kiln::test::run_command(
            settings + " KILN_PRELOAD_TEST_CHILD=1 KILN_CACHE_DIR='" + dir.path().string() + "' '" +
            self + "' --gtest_filter=ModulePreload.ChildProcessOfThePreloadTest");
        EXPECT_EQ(run.status, 0) << run.out << run.err;
        std::smatch m;
        return std::regex_search(run.out, m, std::regex("KILN_CHILD (context=\\d+ call=\\d+)"))
                   ? m[1].str()
                   : run.out;
    };
    // An empty cache: the kernel is compiled and loaded by its call, and filed for the next run.
    EXPECT_EQ(child(""), "context=0 call=1");
    // Loaded with the context; the call takes that module and loads none of its own.
    EXPECT_EQ(child(""), "context=1 call=1");
    EXPECT_EQ(child(""), "context=1 call=1");
    // Neither without the read-ahead nor without the priming.
    EXPECT_EQ(child("KILN_READ_AHEAD=0"), "context=0 call=1");
    EXPECT_EQ(child("KILN_CONTEXT_WARM_UP=0"), "context=0 call=1");
}

} // namespace
