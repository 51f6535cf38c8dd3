// Many host threads compiling at once through the process-wide compiler, with no device: the same
// and different sources, asked for by free calls and by shared RawKernel objects. Each distinct
// program is compiled once in the process and every thread gets that one program. Runs under
// ThreadSanitizer in CI (scripts/sanitize.sh thread).

#include "process_cache_dir.hpp"
#include "start_line.hpp"

#include "kiln/compiler.hpp"
#include "kiln/error.hpp"
#include "kiln/raw_kernel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::test::StartLine;

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr int kThreads = 12;
constexpr const char* kArch = "sm_90";

// A small kernel whose source differs with @p tag (the tags keep each test's sources its own).
std::string kernel_source(const std::string& tag) {
    return "extern \"C\" __global__ void scale_" + tag +
           "(float* x, float a, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) x[i] = x[i] * a + " +
           std::to_string(tag.size()) + ".0f;\n}\n";
}

kiln::CompileStatistics operator-(const kiln::CompileStatistics& a,
                                  const kiln::CompileStatistics& b) {
    return {a.compiles - b.compiles, a.disk_hits - b.disk_hits, a.memory_hits - b.memory_hits};
}

} // namespace

TEST(Threads, SameAndDifferentSourcesCompileOncePerProcess) {
    constexpr int kShared = 4; // sources every thread asks for, each thread in its own order
    constexpr int kRounds = 3;
    std::vector<std::string> shared;
    shared.reserve(kShared);
    for (int s = 0; s < kShared; ++s)
        shared.push_back(kernel_source("shared" + std::to_string(s)));
    const auto options = kiln::CompileOptions::for_arch(kArch);
    kiln::Compiler& compiler = kiln::Compiler::global();
    const kiln::CompileStatistics before = compiler.statistics();

    // results[t][s]: what thread t got for shared source s (the last round); own[t]: its own.
    std::vector<std::vector<std::shared_ptr<const kiln::Program>>> results(
        kThreads, std::vector<std::shared_ptr<const kiln::Program>>(kShared));
    std::vector<std::shared_ptr<const kiln::Program>> own(kThreads);
    std::vector<std::string> errors(kThreads);
    StartLine start(kThreads);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            try {
                start.arrive_and_wait();
                for (int round = 0; round < kRounds; ++round) {
                    for (int k = 0; k < kShared; ++k) {
                        const int s = (t + k) % kShared;
                        results[t][s] = compiler.compile(shared[s], options);
                    }
                    // Different sources compiled at the same time as the shared ones.
                    own[t] = compiler.compile(kernel_source("own" + std::to_string(t)), options);
                }
            } catch (const std::exception& e) {
                errors[t] = e.what();
            }
        });
    for (auto& thread : threads)
        thread.join();
    for (int t = 0; t < kThreads; ++t)
        ASSERT_EQ(errors[t], "") << "thread " << t;

    const kiln::CompileStatistics done = compiler.statistics() - before;
    EXPECT_EQ(done.compiles, static_cast<std::uint64_t>(kShared + kThreads))
        << "each distinct source is compiled exactly once in the process";
    EXPECT_EQ(done.disk_hits, 0u) << "a fresh cache directory has nothing to hit";
    EXPECT_EQ(done.memory_hits,
              static_cast<std::uint64_t>(kThreads * kRounds * (kShared + 1) - kShared - kThreads));
    for (int s = 0; s < kShared; ++s)
        for (int t = 0; t < kThreads; ++t) {
            ASSERT_NE(results[t][s], nullptr);
            EXPECT_EQ(results[t][s].get(), results[0][s].get())
                << "thread " << t << " got another program for source " << s;
            EXPECT_EQ(results[t][s]->cubin(), results[0][s]->cubin());
        }
    std::set<const kiln::Program*> distinct;
    for (int s = 0; s < kShared; ++s)
        distinct.insert(results[0][s].get());
    for (int t = 0; t < kThreads; ++t) {
        ASSERT_NE(own[t], nullptr);
        EXPECT_EQ(own[t]->origin(), kiln::ProgramOrigin::compiled);
        distinct.insert(own[t].get());
    }
    EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kShared + kThreads));
}

TEST(Threads, SharedRawKernelsCompileOnceAcrossThreads) {
    // RawKernel objects shared by every thread, and copies of them, compiled through their
    // shared module state: no device is needed with an explicit architecture.
    constexpr int kKernels = 3;
    std::vector<kiln::RawKernel> kernels;
    kernels.reserve(kKernels);
    for (int k = 0; k < kKernels; ++k)
        kernels.emplace_back(kernel_source("raw" + std::to_string(k)),
                             "scale_raw" + std::to_string(k),
                             kiln::CompileOptions::for_arch(kArch));
    kiln::Compiler& compiler = kiln::Compiler::global();
    const kiln::CompileStatistics before = compiler.statistics();

    std::vector<std::vector<std::shared_ptr<const kiln::Program>>> results(
        kThreads, std::vector<std::shared_ptr<const kiln::Program>>(kKernels));
    std::vector<std::string> errors(kThreads);
    StartLine start(kThreads);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            try {
                start.arrive_and_wait();
                for (int k = 0; k < kKernels; ++k) {
                    const int which = (t + k) % kKernels;
                    // Odd threads use a copy: copies share the module state.
                    const kiln::RawKernel kernel =
                        t % 2 ? kiln::RawKernel(kernels[which]) : kernels[which];
                    results[t][which] = kernel.compile();
                }
            } catch (const std::exception& e) {
                errors[t] = e.what();
            }
        });
    for (auto& thread : threads)
        thread.join();
    for (int t = 0; t < kThreads; ++t)
        ASSERT_EQ(errors[t], "") << "thread " << t;

    const kiln::CompileStatistics done = compiler.statistics() - before;
    EXPECT_EQ(done.compiles, static_cast<std::uint64_t>(kKernels));
    EXPECT_EQ(done.disk_hits, 0u);
    for (int k = 0; k < kKernels; ++k)
        for (int t = 0; t < kThreads; ++t) {
            ASSERT_NE(results[t][k], nullptr);
            EXPECT_EQ(results[t][k].get(), results[0][k].get()) << "thread " << t;
            EXPECT_EQ(results[t][k]->arch(), kArch);
        }
}

TEST(Threads, AFailingCompileFailsForEveryThreadAndCanBeRetried) {
    // Threads waiting on a compile that fails all see the error; the failure is not remembered.
    const std::string bad = "extern \"C\" __global__ void broken_threads() { undeclared(); }\n";
    const auto options = kiln::CompileOptions::for_arch(kArch);
    kiln::Compiler& compiler = kiln::Compiler::global();
    std::atomic<int> failures{0};
    StartLine start(kThreads);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            start.arrive_and_wait();
            try {
                compiler.compile(bad, options);
            } catch (const kiln::CompileError&) {
                failures.fetch_add(1);
            }
        });
    for (auto& thread : threads)
        thread.join();
    EXPECT_EQ(failures.load(), kThreads);
    const auto compiles = compiler.statistics().compiles;
    EXPECT_THROW(compiler.compile(bad, options), kiln::CompileError);
    EXPECT_EQ(compiler.statistics().compiles, compiles + 1) << "a failure is retried, not cached";
}
