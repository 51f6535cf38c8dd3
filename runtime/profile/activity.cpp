#include "kiln/activity.hpp"

#include "driver/activity_hook.hpp"
#include "driver/driver.hpp"
#include "event_pool.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "kiln/nvtx.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

namespace kiln {

namespace detail {

using Clock = std::chrono::steady_clock;

// One operation and its two events. Shared by every session open when it was issued.
struct ActivityRecord {
    std::uint64_t sequence = 0;
    Activity kind = Activity::none;
    std::string name;
    std::size_t bytes = 0;
    CUcontext context = nullptr;
    int device = 0;
    CUevent start = nullptr;
    CUevent end = nullptr;
    bool captured = false;
    bool complete = false; // the end event was recorded; guarded by the registry's mutex
    Clock::time_point issue_begin, issue_end;
    std::uint32_t thread = 0;

    ActivityRecord() = default;
    ActivityRecord(const ActivityRecord&) = delete;
    ActivityRecord& operator=(const ActivityRecord&) = delete;
    ~ActivityRecord() {
        // A captured record's events belong to event-record nodes of a graph, which records them
        // again at each launch: reusing them would corrupt later timings and destroying them
        // would leave the graph dangling, so they are left alone.
        if (captured) return;
        if (start) EventPool::instance().release(context, start);
        if (end) EventPool::instance().release(context, end);
    }
};

struct SessionState {
    Activity filter = Activity::none;
    CUcontext context = nullptr;
    CUevent begin_event = nullptr;
    Clock::time_point host_begin;
    bool open = false;
    std::vector<std::shared_ptr<ActivityRecord>> records; // guarded by the registry's mutex

    SessionState() = default;
    SessionState(const SessionState&) = delete;
    SessionState& operator=(const SessionState&) = delete;
    ~SessionState();
};

namespace {

// Events reserved when a session begins: reused ones for ordinary operations, never-recorded
// ones for operations captured into graphs (so a capture rarely has to create events).
constexpr std::size_t kReservedEvents = 64;
constexpr std::size_t kReservedFreshEvents = 32;

std::uint32_t thread_number() noexcept {
    static std::atomic<std::uint32_t> next{1};
    thread_local const std::uint32_t number = next.fetch_add(1, std::memory_order_relaxed);
    return number;
}

CUresult record_event(CUevent event, CUstream stream, bool captured) noexcept {
    const Driver& d = driver();
    // During capture a plain record only orders work; the external flag makes it a real
    // event-record node of the graph, timed whenever the graph runs.
    return captured ? d.cuEventRecordWithFlags(event, stream, CU_EVENT_RECORD_EXTERNAL)
                    : d.cuEventRecord(event, stream);
}

double milliseconds(Clock::duration d) noexcept {
    return std::chrono::duration<double, std::milli>(d).count();
}

// Milliseconds between two events once @p to has completed; NaN when they never both ran.
double event_ms(CUevent from, CUevent to) noexcept {
    const Driver& d = driver();
    d.cuEventSynchronize(to);
    float ms = 0;
    if (d.cuEventElapsedTime(&ms, from, to) != CUDA_SUCCESS)
        return std::numeric_limits<double>::quiet_NaN();
    return ms;
}

// The open sessions and the records they collect.
class ActivityRegistry {
  public:
    static ActivityRegistry& instance() {
        static ActivityRegistry* registry =
            new ActivityRegistry; // outlives thread-local sessions at exit
        return *registry;
    }

    // Operations reach the registry through driver/'s hook, set before any session opens.
    ActivityRegistry() {
        static const ActivityTimer timer{
            [](Activity kind, std::string label, std::size_t bytes, CUstream stream) {
                return instance().begin(kind, std::move(label), bytes, stream);
            },
            [](ActivityRecord& record, CUstream stream) { instance().complete(record, stream); }};
        set_activity_timer(&timer);
    }

    void open(SessionState* session) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_sessions.push_back(session);
        session->open = true;
        publish();
    }

    void close(SessionState* session) noexcept {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_sessions.erase(std::remove(m_sessions.begin(), m_sessions.end(), session),
                         m_sessions.end());
        session->open = false;
        publish();
    }

    // The completed records of a closed session, in issue order.
    std::vector<std::shared_ptr<ActivityRecord>> take(SessionState* session) {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::vector<std::shared_ptr<ActivityRecord>> done;
        for (auto& record : session->records)
            if (record->complete) done.push_back(std::move(record));
        session->records.clear();
        return done;
    }

    // Record the start of an operation for the sessions that want @p kind; nullptr if none does.
    // @throws CudaError when an event cannot be made or recorded.
    std::shared_ptr<ActivityRecord> begin(Activity kind, std::string name, std::size_t bytes,
                                          CUstream stream) {
        const Driver& d = driver();
        CUcontext context = nullptr;
        if (d.cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context) return nullptr;
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        if (d.cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS)
            status = CU_STREAM_CAPTURE_STATUS_NONE;

        std::lock_guard<std::mutex> lock(m_mutex);
        const bool wanted =
            std::any_of(m_sessions.begin(), m_sessions.end(),
                        [&](const SessionState* s) { return has_activity(s->filter, kind); });
        if (!wanted) return nullptr;
        auto record = std::make_shared<ActivityRecord>();
        record->kind = kind;
        record->name = std::move(name);
        record->bytes = bytes;
        record->context = context;
        record->captured = status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
        CUdevice device = 0;
        if (d.cuCtxGetDevice(&device) == CUDA_SUCCESS) record->device = static_cast<int>(device);
        if (record->captured) {
            // Never-recorded events: a reused one would keep its old time if the graph never ran.
            record->start = EventPool::instance().acquire_fresh(context);
            record->end = EventPool::instance().acquire_fresh(context);
        } else {
            record->start = EventPool::instance().acquire(context);
            record->end = EventPool::instance().acquire(context);
        }
        const CUresult result = record_event(record->start, stream, record->captured);
        if (result != CUDA_SUCCESS)
            throw_cuda_error(result, "cuEventRecord(start, stream)", __FILE__, __LINE__);
        record->sequence = m_next_sequence++;
        record->thread = thread_number();
        record->issue_begin = Clock::now();
        for (SessionState* session : m_sessions)
            if (has_activity(session->filter, kind)) session->records.push_back(record);
        return record;
    }

    // The operation was enqueued: record its end event. @throws CudaError.
    void complete(ActivityRecord& record, CUstream stream) {
        const auto issued = Clock::now();
        const CUresult result = record_event(record.end, stream, record.captured);
        if (result != CUDA_SUCCESS)
            throw_cuda_error(result, "cuEventRecord(end, stream)", __FILE__, __LINE__);
        std::lock_guard<std::mutex> lock(m_mutex);
        record.issue_end = issued;
        record.complete = true;
    }

  private:
    void publish() noexcept {
        std::uint32_t bits = 0;
        for (const SessionState* session : m_sessions)
            bits |= static_cast<std::uint32_t>(session->filter);
        set_timed_activities(bits);
    }

    std::mutex m_mutex;
    std::vector<SessionState*> m_sessions;
    std::uint64_t m_next_sequence = 0;
};

} // namespace

SessionState::~SessionState() {
    if (open) ActivityRegistry::instance().close(this);
    if (begin_event) EventPool::instance().release(context, begin_event);
}

} // namespace detail

const char* activity_name(Activity kind) noexcept {
    switch (kind) {
    case Activity::kernel:
        return "kernel";
    case Activity::builtin_kernel:
        return "builtin_kernel";
    case Activity::copy:
        return "copy";
    case Activity::fill:
        return "fill";
    case Activity::graph:
        return "graph";
    default:
        return "activity";
    }
}

TimingSession::TimingSession(Activity filter, bool synchronize)
    : m_state(std::make_unique<detail::SessionState>()) {
    m_state->filter = filter;
    m_state->context = detail::current_context();
    if (synchronize) KILN_CU(cuCtxSynchronize());
    detail::EventPool& pool = detail::EventPool::instance();
    pool.reserve(m_state->context, detail::kReservedEvents);
    pool.reserve_fresh(m_state->context, detail::kReservedFreshEvents);
    m_state->begin_event = pool.acquire(m_state->context);
    // The reference for start times, on the legacy default stream: after a synchronization it
    // completes at once.
    KILN_CU(cuEventRecord(m_state->begin_event, nullptr));
    m_state->host_begin = detail::Clock::now();
    detail::ActivityRegistry::instance().open(m_state.get());
}

TimingSession::~TimingSession() = default;
TimingSession::TimingSession(TimingSession&& other) noexcept = default;
TimingSession& TimingSession::operator=(TimingSession&& other) noexcept = default;

Activity TimingSession::filter() const noexcept {
    return m_state ? m_state->filter : Activity::none;
}

bool TimingSession::open() const noexcept {
    return m_state && m_state->open;
}

std::vector<TimingResult> TimingSession::end(bool synchronize) {
    if (!open()) return {};
    detail::ActivityRegistry& registry = detail::ActivityRegistry::instance();
    registry.close(m_state.get());
    const auto records = registry.take(m_state.get());
    if (synchronize) KILN_CU(cuCtxSynchronize());
    const detail::SessionState& s = *m_state;
    detail::driver().cuEventSynchronize(s.begin_event);

    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    std::vector<TimingResult> results;
    results.reserve(records.size());
    for (const auto& record : records) {
        TimingResult r;
        r.sequence = record->sequence;
        r.kind = record->kind;
        r.name = record->name;
        r.device = record->device;
        r.elapsed_ms = detail::event_ms(record->start, record->end);
        r.start_ms = record->context == s.context && !std::isnan(r.elapsed_ms)
                         ? detail::event_ms(s.begin_event, record->start)
                         : kNaN;
        r.issue_ms = detail::milliseconds(record->issue_begin - s.host_begin);
        r.issue_duration_ms = detail::milliseconds(record->issue_end - record->issue_begin);
        r.bytes = record->bytes;
        r.thread = record->thread;
        r.captured = record->captured;
        results.push_back(std::move(r));
    }
    return results;
}

namespace {
thread_local std::vector<TimingSession> t_sessions;
} // namespace

void timing_begin(Activity filter, bool synchronize) {
    t_sessions.emplace_back(filter, synchronize);
}

std::vector<TimingResult> timing_end(bool synchronize) {
    if (t_sessions.empty())
        throw ArgumentError("timing_end without timing_begin: this thread has no timing session "
                            "open");
    TimingSession session = std::move(t_sessions.back());
    t_sessions.pop_back();
    return session.end(synchronize);
}

} // namespace kiln
