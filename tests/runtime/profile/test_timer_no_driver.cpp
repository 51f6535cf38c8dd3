// Without a driver: timing that needs the device says so with NoDeviceError, host-only timing and
// NVTX still work, and operations stay unobserved.

#include "driver/activity_hook.hpp"
#include "kiln/activity.hpp"
#include "kiln/benchmark.hpp"
#include "kiln/error.hpp"
#include "kiln/profiler.hpp"
#include "kiln/scoped_timer.hpp"

#include <gtest/gtest.h>

#include <sstream>

TEST(TimingWithoutDriver, SessionsAndBenchmarksNeedADevice) {
    EXPECT_THROW(kiln::TimingSession session, kiln::NoDeviceError);
    EXPECT_THROW(kiln::timing_begin(), kiln::NoDeviceError);
    EXPECT_THROW(kiln::benchmark([] {}), kiln::NoDeviceError);
    EXPECT_THROW(kiln::profiler_start(), kiln::NoDeviceError);
    EXPECT_FALSE(kiln::detail::observing()) << "a failed begin leaves nothing observing";
}

TEST(TimingWithoutDriver, ScopedTimersTimeTheHostAndRefuseDeviceWork) {
    std::ostringstream out;
    kiln::ScopedTimerOptions options;
    options.out = &out;
    options.nvtx = true;
    { kiln::ScopedTimer timer("host only", options); }
    EXPECT_NE(out.str().find("host only took"), std::string::npos);

    options.activities = kiln::Activity::all;
    EXPECT_THROW(kiln::ScopedTimer("activities", options), kiln::NoDeviceError);
    options.activities = kiln::Activity::none;
    options.synchronize = true;
    EXPECT_THROW(kiln::ScopedTimer("synchronized", options), kiln::NoDeviceError);
}
