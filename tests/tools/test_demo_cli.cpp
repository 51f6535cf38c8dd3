#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>

using kiln::test::run_command;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

class DemoCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string cache_dir() const { return (m_dir / "cache").string(); }
    // Without a driver (also on a GPU machine), so what it prints is the compile-only path; the
    // GPU path is checked by the demo step of scripts/gpu_suite.sh.
    kiln::test::CommandResult demo() const {
        return run_command("KILN_DRIVER_LIBRARY=/nonexistent/libcuda.so.1 KILN_CACHE_DIR='" +
                           cache_dir() + "' " KILN_TOOL_PATH " demo");
    }
};

} // namespace

TEST_F(DemoCli, SaysWhereItCachesAndHitsOnTheSecondRun) {
    const auto first = demo();
    ASSERT_EQ(first.status, 0) << first.out << first.err;
    EXPECT_NE(first.out.find("cache: " + cache_dir() + "\n"), std::string::npos) << first.out;
    // Without a GPU all four examples compile: the RawKernel, both ElementwiseKernels, l2norm.
    EXPECT_EQ(count(first.out, "compile: miss"), 4u) << first.out;
    EXPECT_EQ(count(first.out, "squared_diff_generic   compile: miss"), 1u) << first.out;
    EXPECT_EQ(count(first.out, "compile: hit"), 0u) << first.out;

    const auto second = demo();
    ASSERT_EQ(second.status, 0) << second.out << second.err;
    EXPECT_EQ(count(second.out, "compile: miss"), 0u) << second.out;
    EXPECT_EQ(count(second.out, "compile: hit"), count(first.out, "compile: miss")) << second.out;
    // Each hit says how long its lookup took: never "0.00 ms".
    EXPECT_EQ(count(second.out, " 0.00 ms"), 0u) << second.out;
    // It ends with what to try next.
    EXPECT_NE(second.out.find("kiln cache ls"), std::string::npos) << second.out;
    EXPECT_NE(second.out.find("kiln cache stats"), std::string::npos) << second.out;
}

TEST_F(DemoCli, SaysOnceWhyNothingRunsWithoutADriver) {
    // A driver library that cannot exist: the demo compiles everything and says once why it does
    // not run the kernels.
    const auto result =
        run_command("KILN_DRIVER_LIBRARY=/nonexistent/libcuda.so.1 KILN_CACHE_DIR='" + cache_dir() +
                    "' " KILN_TOOL_PATH " demo");
    ASSERT_EQ(result.status, 0) << result.out << result.err;
    EXPECT_EQ(count(result.out + result.err, "could not be loaded"), 1u)
        << result.out << result.err;
    EXPECT_EQ(count(result.out, "no GPU"), 1u) << result.out;
    EXPECT_EQ(count(result.out, "compile: miss"), 4u) << result.out;
}
