#pragma once
/// @file
/// Activity timing: while a TimingSession is open, every operation of the kinds it asks for that
/// is issued through Kiln (kernel launches, Kiln's ready kernels, DeviceBuffer copies and fills,
/// graph launches) is bracketed by two CUDA events on its stream, and the session's end turns them
/// into a list of TimingResults in issue order, as Warp's `timing_begin` / `timing_end` do.
///
/// Events recorded while a stream is being captured into a CUDA graph become event-record nodes of
/// the graph: their times are those of the graph's latest run, so end the session after the graph
/// has run. Timing costs nothing while no session is open: the launch path checks one relaxed
/// atomic.

#include "kiln/activity_kind.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// A short lower-case name: "kernel", "builtin_kernel", "copy", "fill", "graph" (or "activity"
/// for none or a combination).
/// @param kind one kind.
/// @return its name, a static string.
const char* activity_name(Activity kind) noexcept;

/// One timed activity.
struct TimingResult {
    /// Position in issue order, counted across the process.
    std::uint64_t sequence = 0;
    /// What kind of activity it was (one kind, never a combination).
    Activity kind = Activity::none;
    /// What it was: "kernel NAME", "builtin kernel NAME", "memcpy HtoD", "memcpy DtoH",
    /// "memcpy DtoD", "memset" or "graph launch".
    std::string name;
    /// The ordinal of the device it ran on.
    int device = 0;
    /// GPU time between its two events, in milliseconds. NaN when its events never completed
    /// (recorded during a graph capture whose graph has not run).
    double elapsed_ms = 0;
    /// When it started on the GPU, in milliseconds after the session began; NaN when unknown (a
    /// context other than the session's, or events that never completed).
    double start_ms = 0;
    /// When the host began issuing it, in milliseconds after the session began.
    double issue_ms = 0;
    /// Host time spent issuing it (the driver call), in milliseconds.
    double issue_duration_ms = 0;
    /// Bytes copied or filled (0 for launches).
    std::size_t bytes = 0;
    /// A small number for the host thread that issued it (1 for the first thread seen).
    std::uint32_t thread = 0;
    /// Issued while its stream was being captured into a graph.
    bool captured = false;
};

namespace detail {
struct SessionState;
}

/// An open activity-timing session. From construction to end(), every matching operation issued
/// through Kiln, on any thread, records two events. Sessions may nest and overlap: an operation
/// belongs to every session open when it is issued (and costs two events however many there are).
///
/// Events are recorded in the context current when each operation is issued; the session's own
/// reference event goes to the context current at construction, on the legacy default stream.
/// Move-only.
class TimingSession {
  public:
    /// Begin timing the activities in @p filter. With @p synchronize, wait for the current
    /// context's work first, so no earlier work is counted.
    /// @param filter the kinds of activity to time.
    /// @param synchronize whether to wait for the context's work before the session begins.
    /// @throws NoDeviceError, CudaError.
    explicit TimingSession(Activity filter = Activity::all, bool synchronize = true);
    /// Ends the session if end() was not called, discarding its results. Never throws.
    ~TimingSession();
    /// Takes over @p other's session; @p other is left closed.
    /// @param other the session to move from.
    TimingSession(TimingSession&& other) noexcept;
    /// Ends this session (discarding its results), then takes over @p other's.
    /// @param other the session to move from.
    /// @return this session.
    TimingSession& operator=(TimingSession&& other) noexcept;
    /// Not copyable: a session's results are ended once.
    TimingSession(const TimingSession&) = delete;
    /// Not copyable.
    TimingSession& operator=(const TimingSession&) = delete;

    /// Stop recording and return what was recorded, in issue order. With @p synchronize, wait for
    /// the current context's work first; either way each result waits for its own end event.
    /// Must not be called while a stream of the context is being captured. A second call returns
    /// nothing.
    /// @param synchronize whether to wait for the context's work first.
    /// @return the timed activities, in issue order.
    /// @throws CudaError.
    std::vector<TimingResult> end(bool synchronize = true);

    /// The kinds of activity the session times.
    /// @return the kinds of activity the session times.
    Activity filter() const noexcept;
    /// Whether end() has not been called yet.
    /// @return whether end() has not been called yet.
    bool open() const noexcept;

  private:
    std::unique_ptr<detail::SessionState> m_state;
};

/// Begin a session (Warp's `timing_begin`) on the calling thread's stack of sessions.
/// @param filter the kinds of activity to time.
/// @param synchronize whether to wait for the context's work before the session begins.
/// @throws NoDeviceError, CudaError.
void timing_begin(Activity filter = Activity::all, bool synchronize = true);
/// End the innermost session begun by this thread with timing_begin (Warp's `timing_end`).
/// @param synchronize whether to wait for the context's work first.
/// @return the timed activities, in issue order.
/// @throws ArgumentError when this thread has none open, CudaError.
std::vector<TimingResult> timing_end(bool synchronize = true);

} // namespace kiln
