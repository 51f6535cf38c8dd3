// kiln::prepare() with a cache setting it cannot read (KILN_CACHE_MAX_SIZE=lots, see
// CMakeLists.txt) and a driver library that does not exist: the error is the real call's.

#include "kiln/kiln.hpp"
#include "kiln/startup.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

TEST(StartupBadSetting, PrepareSwallowsTheErrorAndTheCallThatNeedsTheCacheReportsIt) {
    ASSERT_NE(std::getenv("KILN_CACHE_MAX_SIZE"), nullptr);
    EXPECT_NO_THROW(kiln::prepare());
    EXPECT_FALSE(kiln::Device::available()); // prepares again alongside: nothing new, no throw
    try {
        kiln::compile("extern \"C\" __global__ void k() {}",
                      kiln::CompileOptions::for_arch("sm_90"));
        FAIL() << "an unreadable KILN_CACHE_MAX_SIZE was accepted";
    } catch (const kiln::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("KILN_CACHE_MAX_SIZE"), std::string::npos) << e.what();
    }
}
