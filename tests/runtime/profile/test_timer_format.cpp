// The timing reports, on the CPU: statistics, CuPy's benchmark line, Warp's activity report, the
// JSON and Chrome trace exports, and ScopedTimer's host-only mode. Results are built by hand here;
// test_timer_gpu.cpp measures real ones.

#include "driver/activity_hook.hpp"
#include "kiln/benchmark.hpp"
#include "kiln/error.hpp"
#include "kiln/nvtx.hpp"
#include "kiln/scoped_timer.hpp"
#include "kiln/statistics.hpp"
#include "kiln/timing_export.hpp"
#include "kiln/timing_report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

kiln::TimingResult result(std::uint64_t sequence, kiln::Activity kind, std::string name,
                          double elapsed_ms, double start_ms, int device = 0) {
    kiln::TimingResult r;
    r.sequence = sequence;
    r.kind = kind;
    r.name = std::move(name);
    r.device = device;
    r.elapsed_ms = elapsed_ms;
    r.start_ms = start_ms;
    r.issue_ms = 0.25 * static_cast<double>(sequence);
    r.issue_duration_ms = 0.005;
    r.thread = 1;
    return r;
}

std::vector<kiln::TimingResult> sample() {
    auto copy = result(0, kiln::Activity::copy, "memcpy HtoD", 0.012288, 0.5);
    copy.bytes = 4096;
    return {copy, result(1, kiln::Activity::kernel, "kernel spin", 1.004544, 0.6),
            result(2, kiln::Activity::kernel, "kernel spin", 0.5, 1.7)};
}

} // namespace

TEST(Statistics, MatchNumpysMeanAndPopulationStandardDeviation) {
    const auto s = kiln::Statistics::of({1.0, 2.0, 3.0, 4.0});
    EXPECT_EQ(s.count, 4u);
    EXPECT_DOUBLE_EQ(s.mean, 2.5);
    EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(1.25)); // numpy.std([1, 2, 3, 4])
    EXPECT_DOUBLE_EQ(s.min, 1.0);
    EXPECT_DOUBLE_EQ(s.max, 4.0);
}

TEST(Statistics, OneValueHasNoSpreadAndNoValuesAreAllZero) {
    const auto one = kiln::Statistics::of({7.5});
    EXPECT_DOUBLE_EQ(one.mean, 7.5);
    EXPECT_DOUBLE_EQ(one.stddev, 0.0);
    const auto none = kiln::Statistics::of({});
    EXPECT_EQ(none.count, 0u);
    EXPECT_DOUBLE_EQ(none.mean, 0.0);
}

TEST(Statistics, StayAccurateForLongSeriesOfNearlyEqualValues) {
    std::vector<double> values;
    values.reserve(100000);
    for (int i = 0; i < 100000; ++i)
        values.push_back(1e6 + (i % 2 ? 1e-3 : -1e-3));
    EXPECT_NEAR(kiln::Statistics::of(values).stddev, 1e-3, 1e-9);
}

TEST(BenchmarkResult, PrintsCuPysLine) {
    const kiln::BenchmarkResult r("saxpy", {1e-6, 2e-6, 3e-6, 4e-6}, {10e-6, 10e-6, 12e-6, 16e-6});
    // Python: str(cupyx.profiler._time._PerfCaseResult('saxpy', ts, devices=(0,))).
    EXPECT_EQ(r.to_string(), "saxpy               :    CPU:    2.500 us   +/- 1.118 (min:    1.000 "
                             "/ max:    4.000) us     GPU-0:   12.000 us   +/- 2.449 (min:   "
                             "10.000 / max:   16.000) us");
    std::ostringstream out;
    out << r;
    EXPECT_EQ(out.str(), r.to_string());
}

TEST(BenchmarkResult, LeavesTheSpreadOutForOneRepeatAndKeepsLongNames) {
    const kiln::BenchmarkResult r("a_name_longer_than_twenty", {5e-6}, {7.5e-6}, 1);
    EXPECT_EQ(r.to_string(),
              "a_name_longer_than_twenty:    CPU:    5.000 us     GPU-1:    7.500 us");
}

TEST(BenchmarkResult, CanLeaveTheGpuOut) {
    const kiln::BenchmarkResult r("x", {1e-6, 3e-6}, {1e-6, 1e-6});
    EXPECT_EQ(
        r.to_string(false),
        "x                   :    CPU:    2.000 us   +/- 1.000 (min:    1.000 / max:    3.000) us");
}

TEST(BenchmarkResult, KeepsTheRawTimesAndTheirStatistics) {
    const kiln::BenchmarkResult r("f", {1e-6, 3e-6}, {2e-6, 4e-6}, 2);
    EXPECT_EQ(r.name(), "f");
    EXPECT_EQ(r.device(), 2);
    EXPECT_EQ(r.cpu_times(), (std::vector<double>{1e-6, 3e-6}));
    EXPECT_EQ(r.gpu_times(), (std::vector<double>{2e-6, 4e-6}));
    EXPECT_DOUBLE_EQ(r.gpu_statistics().mean, 3e-6);
    EXPECT_DOUBLE_EQ(r.cpu_statistics().max, 3e-6);
}

TEST(BenchmarkResult, RefusesNoRepeatsOrMismatchedSeries) {
    EXPECT_THROW(kiln::BenchmarkResult("f", {}, {}), kiln::ArgumentError);
    EXPECT_THROW(kiln::BenchmarkResult("f", {1e-6, 2e-6}, {1e-6}), kiln::ArgumentError);
}

TEST(BenchmarkResult, WritesJsonInMicroseconds) {
    const kiln::BenchmarkResult r("saxpy", {1e-6, 3e-6}, {10e-6, 14e-6}, 0);
    const auto json = nlohmann::json::parse(r.to_json());
    EXPECT_EQ(json["name"], "saxpy");
    EXPECT_EQ(json["device"], 0);
    EXPECT_EQ(json["n_repeat"], 2);
    EXPECT_NEAR(json["cpu"]["mean_us"].get<double>(), 2.0, 1e-9);
    EXPECT_NEAR(json["cpu"]["stddev_us"].get<double>(), 1.0, 1e-9);
    EXPECT_NEAR(json["gpu"]["min_us"].get<double>(), 10.0, 1e-9);
    EXPECT_NEAR(json["gpu"]["max_us"].get<double>(), 14.0, 1e-9);
    ASSERT_EQ(json["gpu_times_us"].size(), 2u);
    EXPECT_NEAR(json["gpu_times_us"][1].get<double>(), 14.0, 1e-9);
    EXPECT_NEAR(json["cpu_times_us"][0].get<double>(), 1.0, 1e-9);
}

TEST(Benchmark, RefusesBadRepeatCountsBeforeTouchingTheDevice) {
    kiln::BenchmarkOptions options;
    options.n_repeat = 0;
    EXPECT_THROW(kiln::benchmark([] {}, options), kiln::ArgumentError);
    options.n_repeat = 1;
    options.n_warmup = -1;
    EXPECT_THROW(kiln::benchmark([] {}, options), kiln::ArgumentError);
}

TEST(TimingReport, PrintsWarpsTimelineAndSummaries) {
    std::ostringstream out;
    kiln::timing_print(sample(), "  ", out);
    EXPECT_EQ(out.str(), "  CUDA timeline:\n"
                         "  ----------------+---------+------------\n"
                         "  Time            | Device  | Activity\n"
                         "  ----------------+---------+------------\n"
                         "      0.012288 ms | cuda:0  | memcpy HtoD\n"
                         "      1.004544 ms | cuda:0  | kernel spin\n"
                         "      0.500000 ms | cuda:0  | kernel spin\n"
                         "\n"
                         "  CUDA activity summary:\n"
                         "  ----------------+---------+------------\n"
                         "  Total time      | Count   | Activity\n"
                         "  ----------------+---------+------------\n"
                         "      0.012288 ms |       1 | memcpy HtoD\n"
                         "      1.504544 ms |       2 | kernel spin\n"
                         "\n"
                         "  CUDA device summary:\n"
                         "  ----------------+---------+------------\n"
                         "  Total time      | Count   | Device\n"
                         "  ----------------+---------+------------\n"
                         "      1.516832 ms |       3 | cuda:0\n");
}

TEST(TimingReport, SaysNoActivityForAnEmptySession) {
    std::ostringstream out;
    kiln::timing_print({}, "    ", out);
    EXPECT_EQ(out.str(), "    No activity\n");
}

TEST(TimingReport, SummariesAddUpToTheTimelineAndSkipTimesThatNeverCame) {
    auto results = sample();
    results.push_back(result(3, kiln::Activity::kernel, "kernel spin", kNaN, kNaN, 1));
    const auto activities = kiln::summarize_activities(results);
    ASSERT_EQ(activities.size(), 2u);
    EXPECT_EQ(activities[0].name, "memcpy HtoD");
    EXPECT_EQ(activities[1].count, 3u);
    EXPECT_NEAR(activities[1].total_ms, 1.504544, 1e-12);
    const auto devices = kiln::summarize_devices(results);
    ASSERT_EQ(devices.size(), 2u);
    EXPECT_EQ(devices[0].device, 0);
    EXPECT_EQ(devices[0].count, 3u);
    EXPECT_NEAR(devices[0].total_ms, 1.516832, 1e-12);
    EXPECT_EQ(devices[1].count, 1u);
    EXPECT_DOUBLE_EQ(devices[1].total_ms, 0.0);
}

TEST(TimingExport, PlainJsonHasActivitiesSummariesAndNullForUnknownTimes) {
    auto results = sample();
    results[2].captured = true;
    results[2].elapsed_ms = kNaN;
    results[2].start_ms = kNaN;
    const auto json = nlohmann::json::parse(kiln::to_json(results));
    ASSERT_EQ(json["activities"].size(), 3u);
    const auto& copy = json["activities"][0];
    EXPECT_EQ(copy["kind"], "copy");
    EXPECT_EQ(copy["name"], "memcpy HtoD");
    EXPECT_EQ(copy["bytes"], 4096);
    EXPECT_NEAR(copy["elapsed_ms"].get<double>(), 0.012288, 1e-12);
    EXPECT_TRUE(json["activities"][2]["elapsed_ms"].is_null());
    EXPECT_TRUE(json["activities"][2]["start_ms"].is_null());
    EXPECT_EQ(json["activities"][2]["captured"], true);
    EXPECT_NEAR(json["total_ms"].get<double>(), 0.012288 + 1.004544, 1e-12);
    ASSERT_EQ(json["activity_summary"].size(), 2u);
    EXPECT_EQ(json["activity_summary"][1]["count"], 2);
    ASSERT_EQ(json["device_summary"].size(), 1u);
    EXPECT_NEAR(json["device_summary"][0]["total_ms"].get<double>(), 0.012288 + 1.004544, 1e-12);
}

TEST(TimingExport, ChromeTraceHasHostIssuesGpuSlicesAndFlows) {
    auto results = sample();
    results[2].elapsed_ms = kNaN; // never ran: on the host only
    results[2].start_ms = kNaN;
    const auto trace = nlohmann::json::parse(kiln::to_chrome_trace(results));
    EXPECT_EQ(trace["displayTimeUnit"], "ms");
    int host = 0, gpu = 0, flow_starts = 0, flow_ends = 0;
    bool named_device = false;
    for (const auto& e : trace["traceEvents"]) {
        const std::string ph = e["ph"];
        if (ph == "X" && e["pid"] == 0) {
            ++host;
            EXPECT_EQ(e["tid"], 1);
        } else if (ph == "X") {
            ++gpu;
            EXPECT_EQ(e["pid"], 1); // device 0
            if (e["name"] == "kernel spin") {
                EXPECT_NEAR(e["ts"].get<double>(), 600.0, 1e-9); // 0.6 ms after the begin
                EXPECT_NEAR(e["dur"].get<double>(), 1004.544, 1e-9);
                EXPECT_EQ(e["args"]["kind"], "kernel");
            }
            if (e["name"] == "memcpy HtoD") {
                EXPECT_EQ(e["args"]["bytes"], 4096);
            }
        } else if (ph == "s") {
            ++flow_starts;
        } else if (ph == "f") {
            ++flow_ends;
            EXPECT_EQ(e["bp"], "e");
        } else if (ph == "M" && e["name"] == "process_name" && e["pid"] == 1) {
            named_device = e["args"]["name"] == "cuda:0";
        }
    }
    EXPECT_EQ(host, 3);
    EXPECT_EQ(gpu, 2);
    EXPECT_EQ(flow_starts, 2);
    EXPECT_EQ(flow_ends, 2);
    EXPECT_TRUE(named_device);
}

TEST(TimingExport, AnEmptySessionIsAValidTrace) {
    const auto trace = nlohmann::json::parse(kiln::to_chrome_trace({}));
    EXPECT_TRUE(trace["traceEvents"].is_array());
}

TEST(TimingExport, WritingToAMissingDirectoryIsAnError) {
    EXPECT_THROW(kiln::write_chrome_trace(sample(), "/nonexistent/dir/trace.json"), kiln::Error);
}

TEST(ScopedTimer, PrintsTheHostTimeWithoutTouchingTheDevice) {
    std::ostringstream out;
    kiln::ScopedTimerOptions options;
    options.out = &out;
    double elapsed = 0;
    {
        kiln::ScopedTimer timer("host work", options);
        timer.set_extra_message("(3 items)");
        elapsed = timer.stop();
        EXPECT_EQ(timer.stop(), elapsed) << "a second stop changes nothing";
        EXPECT_TRUE(timer.results().empty());
    }
    EXPECT_GE(elapsed, 0.0);
    EXPECT_TRUE(std::regex_match(out.str(), std::regex("host work took [0-9]+\\.[0-9]{2} ms "
                                                       "\\(3 items\\)\n")))
        << out.str();
}

TEST(ScopedTimer, NestedTimersIndentFourSpacesPerLevel) {
    std::ostringstream out;
    kiln::ScopedTimerOptions options;
    options.out = &out;
    {
        kiln::ScopedTimer outer("outer", options);
        {
            kiln::ScopedTimer middle("middle", options);
            kiln::ScopedTimer inner("inner", options);
        }
        kiln::ScopedTimer sibling("sibling", options);
    }
    const std::regex expected("        inner took [0-9.]+ ms\n"
                              "    middle took [0-9.]+ ms\n"
                              "    sibling took [0-9.]+ ms\n"
                              "outer took [0-9.]+ ms\n");
    EXPECT_TRUE(std::regex_match(out.str(), expected)) << out.str();
}

TEST(ScopedTimer, QuietAndInactiveTimersPrintNothing) {
    std::ostringstream out;
    kiln::ScopedTimerOptions quiet;
    quiet.out = &out;
    quiet.print = false;
    kiln::ScopedTimerOptions inactive = quiet;
    inactive.print = true;
    inactive.active = false;
    {
        kiln::ScopedTimer a("quiet", quiet);
        kiln::ScopedTimer b("inactive", inactive);
        EXPECT_EQ(b.stop(), 0.0);
        EXPECT_GE(a.stop(), 0.0);
    }
    EXPECT_EQ(out.str(), "");
}

TEST(ScopedTimer, AnNvtxRangeNeedsNoProfiler) {
    std::ostringstream out;
    kiln::ScopedTimerOptions options;
    options.out = &out;
    options.nvtx = true;
    options.nvtx_color = kiln::nvtx::kPurple;
    { kiln::ScopedTimer timer("ranged", options); }
    EXPECT_NE(out.str().find("ranged took"), std::string::npos);
}

TEST(Nvtx, RangesAndMarksWorkWithoutATool) {
    kiln::nvtx::push_range("outer");
    {
        kiln::time_range range(std::string("inner"), kiln::nvtx::kRed);
        kiln::nvtx::mark("here");
    }
    kiln::nvtx::pop_range();
    SUCCEED();
}

TEST(Nvtx, LaunchRangesAreTheOnlyObserverWhenOn) {
    EXPECT_FALSE(kiln::detail::observing());
    kiln::nvtx::set_launch_ranges(true);
    EXPECT_TRUE(kiln::nvtx::launch_ranges());
    EXPECT_TRUE(kiln::detail::observing());
    kiln::nvtx::set_launch_ranges(false);
    EXPECT_FALSE(kiln::nvtx::launch_ranges());
    EXPECT_FALSE(kiln::detail::observing());
}

TEST(ActivityTiming, TimingEndWithoutBeginIsAnError) {
    EXPECT_THROW(kiln::timing_end(), kiln::ArgumentError);
}

TEST(ActivityTiming, KindsCombineAndHaveNames) {
    const auto copies_and_fills = kiln::Activity::copy | kiln::Activity::fill;
    EXPECT_TRUE(kiln::has_activity(copies_and_fills, kiln::Activity::fill));
    EXPECT_FALSE(kiln::has_activity(copies_and_fills, kiln::Activity::kernel));
    EXPECT_TRUE(kiln::has_activity(kiln::Activity::all, kiln::Activity::graph));
    EXPECT_FALSE(kiln::has_activity(kiln::Activity::none, kiln::Activity::all));
    EXPECT_STREQ(kiln::activity_name(kiln::Activity::builtin_kernel), "builtin_kernel");
    EXPECT_STREQ(kiln::activity_name(copies_and_fills), "activity");
}
