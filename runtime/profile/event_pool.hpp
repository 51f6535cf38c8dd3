#pragma once
// Timing events for activity records, kept for reuse across sessions: one free list per context,
// so an operation timed while a session is open usually costs two cuEventRecord calls and no
// cuEventCreate.

#include <cuda.h>

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln::detail {

/// A new event with timing enabled, in the current context. @throws CudaError.
CUevent create_timing_event();

class EventPool {
  public:
    /// The process-wide pool. Never destroyed: its events live as long as their contexts.
    static EventPool& instance();

    /// An event of @p context, which must be current. @throws CudaError.
    CUevent acquire(CUcontext context);
    /// Give @p event (of @p context) back for reuse.
    void release(CUcontext context, CUevent event) noexcept;
    /// Make sure @p count events of @p context (current) are ready. @throws CudaError.
    void reserve(CUcontext context, std::size_t count);

    /// An event of @p context (current) that has never been recorded, for an event-record node of
    /// a graph being captured: until the graph runs, it has no time at all. Never given back.
    /// @throws CudaError.
    CUevent acquire_fresh(CUcontext context);
    /// Make sure @p count never-recorded events of @p context (current) are ready, so that timing
    /// inside a stream capture usually creates none. @throws CudaError.
    void reserve_fresh(CUcontext context, std::size_t count);

  private:
    static CUevent pop(std::vector<CUevent>& events) noexcept;
    static void top_up(std::mutex& mutex, std::vector<CUevent>& events, std::size_t count);

    std::mutex m_mutex;
    std::unordered_map<CUcontext, std::vector<CUevent>> m_free;
    std::unordered_map<CUcontext, std::vector<CUevent>> m_fresh;
};

} // namespace kiln::detail
