#include "activity_hook.hpp"

#include "kiln/device.hpp"
#include "kiln/nvtx.hpp"
#include "log_line.hpp"

#include <mutex>
#include <string>
#include <utility>

namespace kiln::detail {

std::atomic<std::uint32_t> g_observers{0};

namespace {

std::atomic<const ActivityTimer*> g_timer{nullptr};

// The two sources of g_observers: the kinds profile/'s sessions time, and NVTX launch ranges.
std::mutex g_bits_mutex;
std::uint32_t g_timed_bits = 0;
bool g_launch_ranges = false;

void publish_locked() noexcept {
    g_observers.store(g_timed_bits | (g_launch_ranges ? kObserveLaunchRanges : 0),
                      std::memory_order_relaxed);
}

thread_local int t_builtin_depth = 0;

bool is_launch(Activity kind) noexcept {
    return has_activity(kind, Activity::kernel | Activity::builtin_kernel | Activity::graph);
}

std::string display_name(Activity kind, std::string_view name) {
    if (kind == Activity::kernel) return "kernel " + std::string(name);
    if (kind == Activity::builtin_kernel) return "builtin kernel " + std::string(name);
    return std::string(name);
}

void warn_untimed(const char* what) noexcept {
    try {
        kiln::detail::log_warn("activity timing: {}; the operation is not timed", what);
    } catch (...) {
        // Logging failed too: nothing more to do.
    }
}

} // namespace

void set_activity_timer(const ActivityTimer* timer) noexcept {
    g_timer.store(timer, std::memory_order_release);
}

void set_timed_activities(std::uint32_t bits) noexcept {
    std::lock_guard<std::mutex> lock(g_bits_mutex);
    g_timed_bits = bits & ~kObserveLaunchRanges;
    publish_locked();
}

void set_launch_ranges_observed(bool on) noexcept {
    std::lock_guard<std::mutex> lock(g_bits_mutex);
    g_launch_ranges = on;
    publish_locked();
}

void ObservedActivity::start(Activity kind, std::string_view name, std::size_t bytes,
                             StreamRef stream) noexcept {
    try {
        if (kind == Activity::kernel && t_builtin_depth > 0) kind = Activity::builtin_kernel;
        const std::uint32_t observers = g_observers.load(std::memory_order_relaxed);
        const bool range = (observers & kObserveLaunchRanges) && is_launch(kind);
        const ActivityTimer* timer = g_timer.load(std::memory_order_acquire);
        const bool timed = timer && (observers & static_cast<std::uint32_t>(kind)) != 0;
        if (!range && !timed) return;
        std::string label = display_name(kind, name);
        if (range) {
            // The device in the range's name: with several GPUs, Nsight Systems shows which one
            // each launch went to ("kernel add@GPU1").
            nvtx::push_range(label + "@GPU" + std::to_string(current_device_ordinal()),
                             nvtx::kBlue);
            m_range = true;
        }
        if (timed) {
            m_stream = stream.get();
            m_record = timer->begin(kind, std::move(label), bytes, m_stream);
        }
    } catch (const std::exception& e) {
        m_record.reset();
        warn_untimed(e.what());
    } catch (...) {
        m_record.reset();
        warn_untimed("an unknown error");
    }
}

void ObservedActivity::finish() noexcept {
    if (m_record && m_done) {
        try {
            if (const ActivityTimer* timer = g_timer.load(std::memory_order_acquire))
                timer->complete(*m_record, m_stream);
        } catch (const std::exception& e) {
            warn_untimed(e.what());
        }
    }
    m_record.reset(); // an operation that failed stays incomplete, and sessions skip it
    if (m_range) nvtx::pop_range();
    m_range = false;
}

BuiltinKernelScope::BuiltinKernelScope() noexcept {
    ++t_builtin_depth;
}

BuiltinKernelScope::~BuiltinKernelScope() {
    --t_builtin_depth;
}

} // namespace kiln::detail
