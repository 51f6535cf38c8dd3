// kiln::prepare(): Kiln's one-time start-up work, run alongside the driver's loading. Run with
// KILN_DRIVER_LIBRARY pointing nowhere (see CMakeLists.txt), so the load fails at once on any
// machine.

#include "kiln/kiln.hpp"
#include "prepare_steps.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

namespace {

std::atomic<int> g_step_runs{0};

} // namespace

TEST(Startup, LoadingTheDriverPreparesOnceAndPrepareThenDoesNothing) {
    kiln::detail::add_prepare_step([] { g_step_runs.fetch_add(1); });
    EXPECT_FALSE(kiln::Device::available());
    EXPECT_EQ(g_step_runs.load(), 1);
    kiln::prepare();
    kiln::prepare();
    EXPECT_EQ(g_step_runs.load(), 1);
}
