#pragma once
/// @file
/// CUDA events: an owning, move-only Event and a non-owning EventRef, for ordering work between
/// streams and timing it on the GPU (elapsed_ms()). Like streams, APIs take the non-owning view.

#include "kiln/stream.hpp"

#include <cuda.h>

#include <memory>

namespace kiln {

/// A non-owning view of an event.
class EventRef {
  public:
    /// A view of @p event, which must outlive every use of the view.
    /// @param event an event of any library.
    // NOLINTNEXTLINE(google-explicit-constructor): any library's event
    constexpr EventRef(CUevent event) noexcept
        : m_event(event) {}
    /// The driver handle.
    /// @return the driver handle.
    constexpr CUevent get() const noexcept { return m_event; }

    /// Record on @p stream: the event completes when the work queued there so far is done.
    /// @param stream the stream.
    /// @throws CudaError.
    void record(StreamRef stream = {}) const;
    /// Block until the recorded work is done. @throws CudaError.
    void synchronize() const;
    /// Whether the recorded work is done (never blocks).
    /// @return true when done, or when the event was never recorded.
    /// @throws CudaError on a sticky error.
    bool ready() const;
    /// Make @p stream wait for this event's recorded work.
    /// @param stream the stream that waits; the host does not.
    /// @throws CudaError.
    void wait_on(StreamRef stream) const;

  private:
    CUevent m_event;
};

/// An owned event. Timing is off unless asked for, since timing events cost more to record.
class Event {
  public:
    /// Create an event in the current context.
    /// @param timing whether the event can be used with elapsed_ms().
    /// @param blocking_sync whether synchronize() sleeps rather than spins while it waits
    /// (CU_EVENT_BLOCKING_SYNC).
    /// @throws NoDeviceError, CudaError.
    explicit Event(bool timing = false, bool blocking_sync = false);
    /// Takes the other event; the moved-from object owns none.
    Event(Event&&) noexcept = default;
    /// Destroys this event, then takes the other; the moved-from object owns none.
    /// @return this event.
    Event& operator=(Event&&) noexcept = default;

    /// The driver handle.
    /// @return the driver handle, owned by this object.
    CUevent get() const noexcept { return m_event.get(); }
    /// A non-owning view.
    /// @return a non-owning view, valid while this object lives.
    EventRef ref() const noexcept { return EventRef(get()); }
    /// An Event passes wherever an EventRef is taken.
    // NOLINTNEXTLINE(google-explicit-constructor): an Event passes as an EventRef
    operator EventRef() const noexcept { return ref(); }
    /// Record on @p stream, as EventRef::record().
    /// @param stream the stream.
    void record(StreamRef stream = {}) const { ref().record(stream); }
    /// Block until the recorded work is done (throws CudaError).
    void synchronize() const { ref().synchronize(); }

  private:
    struct Deleter {
        void operator()(CUevent event) const noexcept;
    };
    std::unique_ptr<CUevent_st, Deleter> m_event;
};

/// Milliseconds between two completed timing events.
/// @param start the earlier event, made with `timing = true`.
/// @param end the later event, made with `timing = true`.
/// @return the GPU time between the two records (about 0.5 microsecond resolution).
/// @throws CudaError if either is not ready.
float elapsed_ms(EventRef start, EventRef end);

} // namespace kiln
