// The worker pool behind `kiln warm -j N`: every job runs once, in worker processes when this
// process has one thread; failures print once per slot; a worker that dies costs only its job.

#include "job_pool.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>

using kiln::tools::JobOutcome;
using kiln::tools::JobOutput;
using kiln::tools::run_jobs;

TEST(JobPool, EveryJobRunsOnceInWorkerProcesses) {
    const pid_t self = ::getpid();
    const auto totals = run_jobs(40, 3, 0, false, false, [&](std::size_t job, JobOutput&) {
        if (::getpid() == self) return JobOutcome::error; // never in this process
        return job % 4 == 0 ? JobOutcome::hit : JobOutcome::miss;
    });
    if (!totals.processes) GTEST_SKIP() << "this test process runs threads: workers are threads";
    EXPECT_EQ(totals.workers, 3u);
    EXPECT_EQ(totals.hits, 10u);
    EXPECT_EQ(totals.misses, 30u);
    EXPECT_EQ(totals.errors, 0u);
}

TEST(JobPool, ThreadsWhenAskedAndEveryJobStillRunsOnce) {
    std::atomic<int> ran{0};
    const auto totals = run_jobs(25, 4, 0, false, true, [&](std::size_t, JobOutput&) {
        ++ran;
        return JobOutcome::miss;
    });
    EXPECT_FALSE(totals.processes);
    EXPECT_EQ(ran, 25);
    EXPECT_EQ(totals.misses, 25u);
}

TEST(JobPool, AFailureSlotReportsItsFirstFailureOnceAcrossWorkers) {
    // Jobs 0..11 fail, three per slot: each slot's first failure is seen once in all.
    const auto totals = run_jobs(12, 3, 4, false, false, [](std::size_t job, JobOutput& output) {
        if (output.first_failure(job / 3))
            output.print("first failure of slot " + std::to_string(job / 3) + "\n");
        return JobOutcome::error;
    });
    EXPECT_EQ(totals.errors, 12u);
    EXPECT_EQ(totals.failed_slots, 4u);
}

TEST(JobPool, AWorkerThatDiesCostsOnlyTheJobItHad) {
    const pid_t self = ::getpid();
    testing::internal::CaptureStderr();
    const auto totals = run_jobs(20, 2, 0, false, false, [&](std::size_t job, JobOutput&) {
        if (job == 7 && ::getpid() != self) ::kill(::getpid(), SIGKILL);
        return JobOutcome::miss;
    });
    const std::string err = testing::internal::GetCapturedStderr();
    if (!totals.processes) GTEST_SKIP() << "this test process runs threads: workers are threads";
    EXPECT_EQ(totals.misses, 19u);
    EXPECT_EQ(totals.errors, 1u);
    EXPECT_NE(err.find("killed by signal"), std::string::npos) << err;
}

TEST(JobPool, AJobThatThrowsIsAnErrorWithItsMessage) {
    testing::internal::CaptureStderr();
    const auto totals = run_jobs(6, 2, 0, false, false, [](std::size_t job, JobOutput&) {
        if (job == 2) throw std::runtime_error("no such thing");
        return JobOutcome::hit;
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(totals.hits, 5u);
    EXPECT_EQ(totals.errors, 1u);
    EXPECT_NE(err.find("job 2: no such thing"), std::string::npos) << err;
}
