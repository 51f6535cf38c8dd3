// kiln::prepare(): Kiln's one-time start-up work, run alongside the driver's loading. Run with
// KILN_DRIVER_LIBRARY pointing nowhere (see CMakeLists.txt), so the load fails at once on any
// machine.

#include "driver/prepare_steps.hpp"
#include "kiln/kiln.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

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

// One process of ReadAheadServesAProgramsNextProcessFromMemory (skipped otherwise): Kiln's
// start-up (the driver's load, which fails here), then, with KILN_READ_AHEAD_TEST_REMOVE set,
// every entry file removed, then a compile: it prints where the kernel came from.
TEST(Startup, ChildProcessOfTheReadAheadTest) {
    if (!std::getenv("KILN_READ_AHEAD_TEST_CHILD"))
        GTEST_SKIP() << "run by ReadAheadServesAProgramsNextProcessFromMemory";
    EXPECT_FALSE(kiln::Device::available()); // prepare() has run
    if (std::getenv("KILN_READ_AHEAD_TEST_REMOVE"))
        for (const auto& file :
             std::filesystem::recursive_directory_iterator(std::getenv("KILN_CACHE_DIR")))
            if (file.path().extension() == ".kiln") std::filesystem::remove(file.path());
    kiln::CompileOptions options;
    options.arch = "sm_90";
    const auto program = kiln::compile(
        "extern \"C\" __global__ void read_ahead_test(float* x) { x[0] = 1; }", options);
    std::printf("KILN_CHILD origin=%s\n",
                program->origin() == kiln::ProgramOrigin::disk_cache ? "disk" : "compiled");
}

TEST(Startup, ReadAheadServesAProgramsNextProcessFromMemory) {
    kiln::test::TempDir dir;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const auto child = [&](const std::string& settings) {
        const kiln::test::CommandResult run = kiln::test::run_command(
            settings + " KILN_READ_AHEAD_TEST_CHILD=1 KILN_CACHE_DIR='" + dir.path().string() +
            "' '" + self + "' --gtest_filter=Startup.ChildProcessOfTheReadAheadTest 2>&1");
        EXPECT_EQ(run.status, 0) << run.out << run.err;
        std::smatch m;
        return std::regex_search(run.out, m, std::regex("KILN_CHILD origin=(\\w+)")) ? m[1].str()
                                                                                     : run.out;
    };
    EXPECT_EQ(child(""), "compiled"); // files the kernel under this program
    EXPECT_EQ(child(""), "disk");
    // Read ahead before its file went: from memory.
    EXPECT_EQ(child("KILN_READ_AHEAD_TEST_REMOVE=1"), "disk");
    // The file is gone and nothing is read ahead: compiled again.
    EXPECT_EQ(child("KILN_READ_AHEAD=0 KILN_READ_AHEAD_TEST_REMOVE=1"), "compiled");
}
