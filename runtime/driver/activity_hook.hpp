#pragma once
// The hook through which Kiln's operations report themselves to activity timing (profile/,
// which registers an ActivityTimer) and NVTX launch ranges. Only Kiln's own code uses it. With
// nothing observing, the cost at each operation is one relaxed atomic load and a branch.

#include "kiln/activity_kind.hpp"
#include "kiln/stream.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln::detail {

/// The Activity bits wanted by open timing sessions, plus kObserveLaunchRanges while NVTX launch
/// ranges are on. Zero when nothing observes.
extern std::atomic<std::uint32_t> g_observers;
inline constexpr std::uint32_t kObserveLaunchRanges = 1u << 31;

/// Whether anything observes Kiln's operations; the only check on the hot path.
inline bool observing() noexcept {
    return g_observers.load(std::memory_order_relaxed) != 0;
}

/// One timed operation: profile/'s record, opaque here.
struct ActivityRecord;

/// What profile/ registers to time operations (before it publishes any kind to time).
struct ActivityTimer {
    /// Record the start of an operation of @p kind on @p stream for the sessions that want it;
    /// nullptr when none does. May throw (the operation then goes untimed).
    std::shared_ptr<ActivityRecord> (*begin)(Activity kind, std::string label, std::size_t bytes,
                                             CUstream stream);
    /// The operation was enqueued: record its end. May throw.
    void (*complete)(ActivityRecord& record, CUstream stream);
};

/// profile/ registers its timer once, when its first session opens; @p timer must live forever.
void set_activity_timer(const ActivityTimer* timer) noexcept;

/// profile/ publishes the Activity bits its open sessions want (0: none).
void set_timed_activities(std::uint32_t bits) noexcept;

/// Brackets one operation: construct it just before the driver call, call done() once the call
/// succeeded. When observed, construction records the start event (and opens an NVTX range for
/// launches) and done() records the end event. An operation that threw is dropped. Observation
/// never throws: a failure to record is logged and the operation goes untimed.
class ObservedActivity {
  public:
    /// @p name: for kernels the kernel's name ("kernel " is prefixed), otherwise the whole name
    /// ("memcpy HtoD"). @p stream: where the operation is enqueued.
    ObservedActivity(Activity kind, std::string_view name, std::size_t bytes,
                     StreamRef stream) noexcept {
        if (observing()) start(kind, name, bytes, stream);
    }
    ~ObservedActivity() {
        if (m_record || m_range) finish();
    }
    ObservedActivity(const ObservedActivity&) = delete;
    ObservedActivity& operator=(const ObservedActivity&) = delete;

    /// The operation was enqueued.
    void done() noexcept { m_done = true; }

  private:
    void start(Activity kind, std::string_view name, std::size_t bytes, StreamRef stream) noexcept;
    void finish() noexcept;

    std::shared_ptr<ActivityRecord> m_record;
    CUstream m_stream = nullptr;
    bool m_range = false;
    bool m_done = false;
};

/// While alive, kernels launched on this thread count as Kiln's ready kernels
/// (Activity::builtin_kernel, named "builtin kernel NAME") rather than user kernels. The library
/// of ready kernels wraps its launches in one. Nests.
class BuiltinKernelScope {
  public:
    BuiltinKernelScope() noexcept;
    ~BuiltinKernelScope();
    BuiltinKernelScope(const BuiltinKernelScope&) = delete;
    BuiltinKernelScope& operator=(const BuiltinKernelScope&) = delete;
};

/// Turn the NVTX launch-range bit of g_observers on or off (kiln::nvtx::set_launch_ranges).
void set_launch_ranges_observed(bool on) noexcept;

} // namespace kiln::detail
