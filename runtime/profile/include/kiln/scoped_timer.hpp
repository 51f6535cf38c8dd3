#pragma once
/// @file
/// kiln::ScopedTimer: Warp's `ScopedTimer` in C++. Times a scope on the host clock and prints
/// `NAME took X.XX ms`; optionally waits for the device around the scope, opens an NVTX range,
/// and times every activity Kiln issues inside it, printing Warp's activity report.
///
/// @code
/// kiln::ScopedTimerOptions options;
/// options.activities = kiln::Activity::all;
/// {
///     kiln::ScopedTimer timer("step", options);
///     x.copy_from_host(host.data(), x.size());
///     kernel({blocks}, {256}, x, n);
/// } // prints the CUDA timeline, the activity and device summaries, then "step took 1.23 ms"
/// @endcode

#include "kiln/activity.hpp"
#include "kiln/nvtx.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Receives a ScopedTimer's activity results and the indentation of its nesting level.
using TimingReport = std::function<void(const std::vector<TimingResult>&, const std::string&)>;

/// What a ScopedTimer does besides timing the host clock. The defaults print `NAME took X.XX ms`
/// and nothing more.
struct ScopedTimerOptions {
    /// false: the timer does nothing at all.
    bool active = true;
    /// Print `NAME took X.XX ms` (and the activity report) when the scope ends.
    bool print = true;
    /// Wait for the GPU work before and after the scope, so the time includes the work issued
    /// inside it: the current context's and that of every device Kiln has used (a scope that
    /// drives several GPUs waits for all of them). The activity report has one line per device
    /// in its device summary.
    bool synchronize = false;
    /// Open an NVTX range named after the timer for the scope.
    bool nvtx = false;
    /// The colour (ARGB) of that range.
    std::uint32_t nvtx_color = nvtx::kGreen;
    /// Activities to time inside the scope (Activity::none: host time only).
    Activity activities = Activity::none;
    /// Called with the activity results instead of printing them with timing_print (only when
    /// `activities` is set; also when `print` is false).
    TimingReport report;
    /// Where to print; standard output when null. Must outlive the timer.
    std::ostream* out = nullptr;
    /// When not empty and activities are timed, write them as a Chrome trace to this file.
    std::filesystem::path chrome_trace;
};

/// Times the scope it lives in. Timers nest: the reports of inner timers are indented four spaces
/// per level (per thread). Activity timing follows TimingSession: activities issued on any thread
/// while the timer is open are included. Not movable.
class ScopedTimer {
  public:
    /// Start timing.
    /// @param name what the timer measures; the report's lines start with it.
    /// @param options what to do besides timing the host clock.
    /// @throws NoDeviceError, CudaError (only when synchronizing or timing activities).
    explicit ScopedTimer(std::string name, ScopedTimerOptions options = {});
    /// Stops the timer if stop() was not called. Never throws: errors are logged.
    ~ScopedTimer();
    /// Not copyable: a timer reports once.
    ScopedTimer(const ScopedTimer&) = delete;
    /// Not copyable.
    ScopedTimer& operator=(const ScopedTimer&) = delete;

    /// End the timing now, report, and return the elapsed milliseconds. Later calls return the
    /// same value.
    /// @return host milliseconds from construction to the first stop().
    /// @throws CudaError when synchronizing or collecting activities fails.
    double stop();

    /// The timer's name.
    /// @return the timer's name.
    const std::string& name() const noexcept { return m_name; }
    /// Host milliseconds from construction to stop(); 0 while running.
    /// @return the time in milliseconds.
    double elapsed_ms() const noexcept { return m_elapsed_ms; }
    /// The activity results once stopped (empty without activity timing).
    /// @return the results, in issue order.
    const std::vector<TimingResult>& results() const noexcept { return m_results; }
    /// Text appended to the `took` line.
    /// @param message the text, e.g. a count of the items processed.
    void set_extra_message(std::string message) { m_extra_message = std::move(message); }

  private:
    std::string m_name;
    ScopedTimerOptions m_options;
    std::optional<TimingSession> m_session;
    std::chrono::steady_clock::time_point m_start;
    double m_elapsed_ms = 0;
    std::vector<TimingResult> m_results;
    std::string m_extra_message;
    int m_depth = 0;
    bool m_running = false;
    bool m_range = false;
};

} // namespace kiln
