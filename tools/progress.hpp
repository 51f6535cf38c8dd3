#pragma once
// The progress line of the long commands (`kiln warm`, `kiln warm --from-cache`, `kiln import
// --verify`): "[12/40] 3 hits, 9 compiles, 0 failures, 4.1/s", redrawn in place on standard
// error while the work runs, at most kRedrawsPerSecond times a second, and ended with a newline
// before the summary. Only on a terminal, and never with --json: a log or a pipe gets nothing
// extra.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace kiln::tools {

/// What the line shows, read when it is redrawn.
struct ProgressCounts {
    std::size_t done = 0;     ///< jobs finished, whatever their outcome
    std::size_t total = 0;    ///< jobs in all
    std::size_t hits = 0;     ///< jobs a cache answered
    std::size_t compiles = 0; ///< jobs that compiled
    std::size_t failures = 0; ///< jobs that failed
};

/// The line for @p counts after @p seconds: "[12/40] 3 hits, 9 compiles, 0 failures, 4.1/s"
/// (the rate: jobs done per second; "-" before a tenth of a second has passed).
std::string progress_text(const ProgressCounts& counts, double seconds);

/// Whether a command shows a progress line: standard error is a terminal and not --json.
bool progress_wanted(bool json);

/// Erases the line: what a job prints goes above the progress line, which the next redraw puts
/// back.
inline constexpr const char* kEraseLine = "\r\033[K";

/// Redraws a progress line from a thread of its own until finish(). Thread-safe: @p read is called
/// from that thread (it reads counters others update), and @p write too (it must not interleave
/// with the other output of the run: a job's message is written through the same lock).
class ProgressLine {
  public:
    /// Redraws per second, at most.
    static constexpr int kRedrawsPerSecond = 10;

    /// A line that draws nothing unless @p enabled.
    /// @param enabled whether to draw at all (progress_wanted()).
    /// @param read the counts now.
    /// @param write writes text to standard error whole.
    ProgressLine(bool enabled, std::function<ProgressCounts()> read,
                 std::function<void(const std::string&)> write);
    /// finish().
    ~ProgressLine();
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    /// Start redrawing (a thread: call it after any fork). Does nothing when disabled or started.
    void start();
    /// Stop redrawing, draw the final counts, end the line with a newline (nothing when never
    /// started). Idempotent.
    void finish();

  private:
    void run();
    void draw();

    const bool m_enabled;
    const std::function<ProgressCounts()> m_read;
    const std::function<void(const std::string&)> m_write;
    const std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    std::mutex m_mutex;
    std::condition_variable m_stop_signal;
    bool m_stop = false;
    bool m_finished = false;
    std::thread m_thread;
};

} // namespace kiln::tools
