// Timing on the GPU with kernels of known duration: each spins on %globaltimer (nanoseconds,
// independent of the SM clock) for a given time. Lower bounds are tight (a kernel cannot finish
// early); upper bounds leave room for launch latency and a busy machine.

#include "gpu.hpp"
#include "temp_dir.hpp"

#include "driver/activity_hook.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

namespace {

constexpr const char* kSpin = R"(
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
)";

constexpr double kSlackMs = 2.0; // launch latency, event resolution, a busy host

// A spinning kernel, compiled and loaded (and run once) before any timing starts.
struct Spinner {
    kiln::RawKernel kernel{kSpin, "spin"};
    kiln::Stream stream;
    Spinner() {
        run(0.01);
        stream.synchronize();
    }
    void run(double ms) const {
        kernel(kiln::LaunchConfig{{1}, {1}, 0, stream}, static_cast<std::uint64_t>(ms * 1e6));
    }
};

void expect_spin_time(double measured_ms, double spin_ms) {
    EXPECT_GE(measured_ms, spin_ms * 0.98) << "a kernel spinning " << spin_ms << " ms";
    EXPECT_LE(measured_ms, spin_ms + kSlackMs) << "a kernel spinning " << spin_ms << " ms";
}

double total_elapsed(const std::vector<kiln::TimingResult>& results) {
    double total = 0;
    for (const auto& r : results)
        total += r.elapsed_ms;
    return total;
}

} // namespace

TEST(BenchmarkGpu, MeasuresAKernelOfKnownDuration) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::BenchmarkOptions options;
    options.name = "spin 2 ms";
    options.n_repeat = 5;
    options.n_warmup = 1;
    options.stream = spinner.stream;
    const auto result = kiln::benchmark([&] { spinner.run(2.0); }, options);
    ASSERT_EQ(result.gpu_times().size(), 5u);
    ASSERT_EQ(result.cpu_times().size(), 5u);
    for (double t : result.gpu_times())
        expect_spin_time(t * 1e3, 2.0);
    EXPECT_LT(result.cpu_statistics().mean, result.gpu_statistics().mean)
        << "the launch returns before the kernel ends";
    EXPECT_EQ(result.device(), kiln::Device::current().ordinal());
    const std::string line = result.to_string();
    EXPECT_EQ(line.rfind("spin 2 ms           :    CPU:", 0), 0u) << line;
    EXPECT_NE(line.find("GPU-" + std::to_string(result.device()) + ":"), std::string::npos) << line;
}

TEST(BenchmarkGpu, CpuTimeIncludesWorkTheCallableWaitsFor) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::BenchmarkOptions options;
    options.n_repeat = 3;
    options.n_warmup = 0;
    options.stream = spinner.stream;
    const auto result = kiln::benchmark(
        [&] {
            spinner.run(1.0);
            spinner.stream.synchronize();
        },
        options);
    for (double t : result.cpu_times())
        EXPECT_GE(t * 1e3, 0.98);
}

TEST(BenchmarkGpu, StopsOnceMaxDurationHasPassed) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::BenchmarkOptions options;
    options.n_repeat = 1000;
    options.n_warmup = 0;
    options.max_duration = 0.02; // seconds: about ten 2 ms repeats
    options.stream = spinner.stream;
    const auto result = kiln::benchmark([&] { spinner.run(2.0); }, options);
    EXPECT_GE(result.gpu_times().size(), 2u);
    EXPECT_LE(result.gpu_times().size(), 11u);
}

TEST(ActivityTimingGpu, TimesKernelsCopiesAndFillsInIssueOrder) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    const std::size_t bytes = 1 << 20;
    std::vector<unsigned char> host(bytes, 7), back(bytes, 0);
    kiln::DeviceBuffer buffer(bytes, spinner.stream);

    kiln::TimingSession session(kiln::Activity::all);
    EXPECT_TRUE(kiln::detail::observing());
    spinner.run(1.0);
    spinner.run(3.0);
    spinner.run(2.0);
    buffer.copy_from_host(host.data(), bytes);
    buffer.fill_bytes(1);
    buffer.copy_to_host(back.data(), bytes);
    const auto results = session.end();
    EXPECT_FALSE(kiln::detail::observing()) << "no session open: launches are unobserved again";
    EXPECT_EQ(back[bytes - 1], 1);

    ASSERT_EQ(results.size(), 6u);
    const char* names[] = {"kernel spin", "kernel spin", "kernel spin",
                           "memcpy HtoD", "memset",      "memcpy DtoH"};
    const kiln::Activity kinds[] = {kiln::Activity::kernel, kiln::Activity::kernel,
                                    kiln::Activity::kernel, kiln::Activity::copy,
                                    kiln::Activity::fill,   kiln::Activity::copy};
    const int device = kiln::Device::current().ordinal();
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        EXPECT_EQ(r.name, names[i]) << i;
        EXPECT_EQ(r.kind, kinds[i]) << i;
        EXPECT_EQ(r.device, device);
        EXPECT_FALSE(r.captured);
        EXPECT_TRUE(std::isfinite(r.elapsed_ms)) << i;
        EXPECT_TRUE(std::isfinite(r.start_ms)) << i;
        EXPECT_GE(r.start_ms, 0.0) << i;
        if (i > 0) {
            EXPECT_GT(r.sequence, results[i - 1].sequence);
            EXPECT_GE(r.issue_ms, results[i - 1].issue_ms);
            // One stream: each starts after the previous one ended.
            EXPECT_GE(r.start_ms, results[i - 1].start_ms + results[i - 1].elapsed_ms - 0.01) << i;
        }
    }
    expect_spin_time(results[0].elapsed_ms, 1.0);
    expect_spin_time(results[1].elapsed_ms, 3.0);
    expect_spin_time(results[2].elapsed_ms, 2.0);
    EXPECT_EQ(results[3].bytes, bytes);
    EXPECT_EQ(results[4].bytes, bytes);
    EXPECT_EQ(results[0].bytes, 0u);
}

TEST(ActivityTimingGpu, SummariesAndExportsAddUpToTheTimeline) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::DeviceBuffer buffer(4096, spinner.stream);
    kiln::timing_begin();
    for (double ms : {0.5, 1.0, 1.5})
        spinner.run(ms);
    buffer.fill_bytes(0);
    spinner.run(0.5);
    const auto results = kiln::timing_end();
    ASSERT_EQ(results.size(), 5u);
    const double timeline = total_elapsed(results);
    expect_spin_time(timeline, 3.5);

    const auto activities = kiln::summarize_activities(results);
    ASSERT_EQ(activities.size(), 2u);
    EXPECT_EQ(activities[0].name, "kernel spin");
    EXPECT_EQ(activities[0].count, 4u);
    EXPECT_EQ(activities[1].name, "memset");
    EXPECT_NEAR(activities[0].total_ms + activities[1].total_ms, timeline, 1e-9);
    const auto devices = kiln::summarize_devices(results);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0].count, 5u);
    EXPECT_NEAR(devices[0].total_ms, timeline, 1e-9);

    const auto json = nlohmann::json::parse(kiln::to_json(results));
    EXPECT_NEAR(json["total_ms"].get<double>(), timeline, 1e-9);
    const auto trace = nlohmann::json::parse(kiln::to_chrome_trace(results));
    double gpu_us = 0;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["pid"] != 0) gpu_us += e["dur"].get<double>();
    EXPECT_NEAR(gpu_us / 1e3, timeline, 1e-6);

    std::ostringstream out;
    kiln::timing_print(results, "", out);
    EXPECT_NE(out.str().find("CUDA activity summary:"), std::string::npos);
    EXPECT_NE(out.str().find("|       4 | kernel spin"), std::string::npos) << out.str();
}

TEST(ActivityTimingGpu, TheFilterSelectsKindsAndBuiltinKernelsAreTheirOwnKind) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::DeviceBuffer buffer(256, spinner.stream);
    kiln::TimingSession copies_and_builtins(kiln::Activity::fill | kiln::Activity::builtin_kernel);
    kiln::TimingSession kernels(kiln::Activity::kernel);
    spinner.run(0.2);
    buffer.fill_bytes(3);
    {
        kiln::detail::BuiltinKernelScope builtin;
        spinner.run(0.2);
    }
    const auto only_kernels = kernels.end();
    const auto others = copies_and_builtins.end();
    ASSERT_EQ(only_kernels.size(), 1u);
    EXPECT_EQ(only_kernels[0].name, "kernel spin");
    ASSERT_EQ(others.size(), 2u);
    EXPECT_EQ(others[0].name, "memset");
    EXPECT_EQ(others[1].name, "builtin kernel spin");
    EXPECT_EQ(others[1].kind, kiln::Activity::builtin_kernel);
}

TEST(ActivityTimingGpu, NestedSessionsShareTheirRecords) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::timing_begin(kiln::Activity::all);
    spinner.run(0.3);
    kiln::timing_begin(kiln::Activity::kernel);
    spinner.run(0.6);
    const auto inner = kiln::timing_end();
    spinner.run(0.9);
    const auto outer = kiln::timing_end();
    ASSERT_EQ(inner.size(), 1u);
    ASSERT_EQ(outer.size(), 3u);
    EXPECT_EQ(outer[1].sequence, inner[0].sequence);
    EXPECT_DOUBLE_EQ(outer[1].elapsed_ms, inner[0].elapsed_ms) << "the same two events";
    expect_spin_time(outer[0].elapsed_ms, 0.3);
    expect_spin_time(outer[1].elapsed_ms, 0.6);
    expect_spin_time(outer[2].elapsed_ms, 0.9);
}

TEST(ActivityTimingGpu, WorkCapturedIntoAGraphIsTimedWhenTheGraphRuns) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::TimingSession session(kiln::Activity::all);
    kiln::Graph graph = kiln::Graph::capture(spinner.stream, [&] {
        spinner.run(1.0);
        spinner.run(2.0);
    });
    kiln::GraphExec exec = graph.instantiate();
    exec.launch(spinner.stream);
    spinner.stream.synchronize();
    const auto results = session.end();

    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].name, "kernel spin");
    EXPECT_TRUE(results[0].captured);
    EXPECT_TRUE(results[1].captured);
    expect_spin_time(results[0].elapsed_ms, 1.0);
    expect_spin_time(results[1].elapsed_ms, 2.0);
    EXPECT_EQ(results[2].name, "graph launch");
    EXPECT_EQ(results[2].kind, kiln::Activity::graph);
    EXPECT_FALSE(results[2].captured);
    expect_spin_time(results[2].elapsed_ms, 3.0);
    // The captured kernels ran inside the graph launch.
    EXPECT_GE(results[0].start_ms, results[2].start_ms - 0.01);
    EXPECT_LE(results[1].start_ms + results[1].elapsed_ms,
              results[2].start_ms + results[2].elapsed_ms + 0.01);
}

TEST(ActivityTimingGpu, AGraphThatNeverRanHasNoTimes) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::TimingSession session(kiln::Activity::kernel);
    kiln::Graph graph = kiln::Graph::capture(spinner.stream, [&] { spinner.run(0.5); });
    const auto results = session.end();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].captured);
    EXPECT_TRUE(std::isnan(results[0].elapsed_ms));
    EXPECT_TRUE(std::isnan(results[0].start_ms));
    const auto json = nlohmann::json::parse(kiln::to_json(results));
    EXPECT_TRUE(json["activities"][0]["elapsed_ms"].is_null());
}

TEST(ActivityTimingGpu, LaunchesAreUnchangedWithNvtxLaunchRangesOn) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::nvtx::set_launch_ranges(true);
    spinner.run(0.1);
    kiln::TimingSession session(kiln::Activity::kernel);
    spinner.run(0.1);
    const auto results = session.end();
    kiln::nvtx::set_launch_ranges(false);
    spinner.stream.synchronize();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_FALSE(kiln::detail::observing());
}

TEST(ScopedTimerGpu, ReportsActivitiesNestedAndIndented) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    std::ostringstream out;
    kiln::ScopedTimerOptions options;
    options.activities = kiln::Activity::kernel;
    options.out = &out;
    std::size_t outer_count = 0;
    {
        kiln::ScopedTimer outer("outer", options);
        spinner.run(0.5);
        {
            kiln::ScopedTimer inner("inner", options);
            spinner.run(1.0);
        }
        outer.stop();
        outer_count = outer.results().size();
    }
    EXPECT_EQ(outer_count, 2u) << "the outer timer also sees the inner timer's kernel";
    const std::string text = out.str();
    const auto inner_report = text.find("    CUDA timeline:");
    const auto inner_took = text.find("\n    inner took ");
    const auto outer_report = text.find("\nCUDA timeline:");
    const auto outer_took = text.find("\nouter took ");
    ASSERT_NE(inner_report, std::string::npos) << text;
    ASSERT_NE(inner_took, std::string::npos) << text;
    ASSERT_NE(outer_report, std::string::npos) << text;
    ASSERT_NE(outer_took, std::string::npos) << text;
    EXPECT_LT(inner_report, inner_took);
    EXPECT_LT(inner_took, outer_report);
    EXPECT_LT(outer_report, outer_took);
    EXPECT_NE(text.find("    CUDA device summary:"), std::string::npos) << text;
}

TEST(ScopedTimerGpu, AReportCallbackReceivesTheResultsInstead) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    std::ostringstream out;
    std::vector<kiln::TimingResult> received;
    std::string received_indent = "unset";
    kiln::ScopedTimerOptions options;
    options.activities = kiln::Activity::all;
    options.out = &out;
    options.report = [&](const std::vector<kiln::TimingResult>& results,
                         const std::string& indent) {
        received = results;
        received_indent = indent;
    };
    {
        kiln::ScopedTimer timer("callback", options);
        spinner.run(1.0);
    }
    ASSERT_EQ(received.size(), 1u);
    expect_spin_time(received[0].elapsed_ms, 1.0);
    EXPECT_EQ(received_indent, "");
    EXPECT_EQ(out.str().find("CUDA timeline"), std::string::npos) << "the callback replaces it";
    EXPECT_NE(out.str().find("callback took"), std::string::npos);
}

TEST(ScopedTimerGpu, SynchronizeIncludesTheGpuWorkAndTraceIsWritten) {
    KILN_REQUIRE_GPU();
    Spinner spinner;
    kiln::test::TempDir dir;
    std::ostringstream out;
    kiln::ScopedTimerOptions options;
    options.synchronize = true;
    options.nvtx = true;
    options.activities = kiln::Activity::kernel;
    options.out = &out;
    options.chrome_trace = dir / "trace.json";
    double elapsed = 0;
    {
        kiln::ScopedTimer timer("synchronized", options);
        spinner.run(2.0);
        elapsed = timer.stop();
    }
    EXPECT_GE(elapsed, 1.96);
    std::ifstream in(dir / "trace.json");
    const auto trace = nlohmann::json::parse(in);
    int gpu_slices = 0;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["pid"] != 0 && e["name"] == "kernel spin") ++gpu_slices;
    EXPECT_EQ(gpu_slices, 1);
}

TEST(ProfilerGpu, StartAndStopSucceedWithoutAProfiler) {
    KILN_REQUIRE_GPU();
    { kiln::ProfilerRange range; }
    kiln::profiler_start();
    kiln::profiler_stop();
}
