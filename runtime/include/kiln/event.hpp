#pragma once
/// @file
/// CUDA events: an owning, move-only Event and a non-owning EventRef.

#include "kiln/stream.hpp"

#include <cuda.h>

#include <memory>

namespace kiln {

/// A non-owning view of an event.
class EventRef {
  public:
    constexpr EventRef(CUevent event) noexcept
        : m_event(event) {} // NOLINT: implicit by design
    constexpr CUevent get() const noexcept { return m_event; }

    /// Record on @p stream. @throws CudaError.
    void record(StreamRef stream = {}) const;
    /// Block until the recorded work is done. @throws CudaError.
    void synchronize() const;
    /// Whether the recorded work is done (never blocks).
    bool ready() const;
    /// Make @p stream wait for this event's recorded work.
    void wait_on(StreamRef stream) const;

  private:
    CUevent m_event;
};

/// An owned event. Timing is off unless asked for, since timing events cost more to record.
class Event {
  public:
    /// @throws NoDeviceError, CudaError.
    explicit Event(bool timing = false, bool blocking_sync = false);
    Event(Event&&) noexcept = default;
    Event& operator=(Event&&) noexcept = default;

    CUevent get() const noexcept { return m_event.get(); }
    EventRef ref() const noexcept { return EventRef(get()); }
    operator EventRef() const noexcept { return ref(); } // NOLINT: implicit by design
    void record(StreamRef stream = {}) const { ref().record(stream); }
    void synchronize() const { ref().synchronize(); }

  private:
    struct Deleter {
        void operator()(CUevent event) const noexcept;
    };
    std::unique_ptr<CUevent_st, Deleter> m_event;
};

/// Milliseconds between two completed timing events. @throws CudaError if either is not ready.
float elapsed_ms(EventRef start, EventRef end);

} // namespace kiln
