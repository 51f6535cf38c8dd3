#pragma once
/// @file
/// CUDA streams: an owning, move-only Stream and a non-owning StreamRef that APIs take. Every
/// Kiln call that queues work takes a StreamRef, defaulting to the legacy default stream, so an
/// application passes the streams it already has.

#include <cuda.h>

#include <memory>

namespace kiln {

/// A non-owning view of a stream. Converts implicitly from a CUstream or a cudaStream_t (the same
/// type), so streams made by the application, CuPy or PyTorch pass straight in. The default
/// StreamRef is the legacy default stream (0), as in CuPy.
class StreamRef {
  public:
    /// The legacy default stream.
    constexpr StreamRef() noexcept = default;
    /// A view of @p stream, which must outlive every use of the view.
    /// @param stream a stream of any library, or 0 for the legacy default stream.
    // NOLINTNEXTLINE(google-explicit-constructor): any library's stream
    constexpr StreamRef(CUstream stream) noexcept
        : m_stream(stream) {}

    /// The driver handle.
    /// @return the driver handle.
    constexpr CUstream get() const noexcept { return m_stream; }
    /// Block the host until all work queued on the stream is done.
    /// @throws CudaError.
    void synchronize() const;
    /// Whether all queued work is done (never blocks).
    /// @return true when the stream is idle.
    /// @throws CudaError on a sticky error.
    bool ready() const;

    /// Views compare by handle.
    /// @param a a view.
    /// @param b another view.
    /// @return whether both view the same stream.
    friend bool operator==(StreamRef a, StreamRef b) noexcept { return a.m_stream == b.m_stream; }
    /// Views compare by handle.
    /// @param a a view.
    /// @param b another view.
    /// @return whether they view different streams.
    friend bool operator!=(StreamRef a, StreamRef b) noexcept { return a.m_stream != b.m_stream; }

  private:
    CUstream m_stream = nullptr;
};

/// An owned stream, destroyed with the object (after its queued work completes, as the driver
/// does). Non-blocking with respect to the legacy default stream unless asked otherwise.
class Stream {
  public:
    /// Create a stream in the current context.
    /// @param non_blocking whether the stream runs concurrently with the legacy default stream
    /// (CU_STREAM_NON_BLOCKING) rather than synchronizing with it.
    /// @throws NoDeviceError, CudaError.
    explicit Stream(bool non_blocking = true);
    /// Takes the other stream; the moved-from object owns none.
    Stream(Stream&&) noexcept = default;
    /// Destroys this stream, then takes the other; the moved-from object owns none.
    /// @return this stream.
    Stream& operator=(Stream&&) noexcept = default;

    /// The driver handle.
    /// @return the driver handle, owned by this object.
    CUstream get() const noexcept { return m_stream.get(); }
    /// A non-owning view.
    /// @return a non-owning view, valid while this object lives.
    StreamRef ref() const noexcept { return StreamRef(get()); }
    /// A Stream passes wherever a StreamRef is taken.
    // NOLINTNEXTLINE(google-explicit-constructor): a Stream passes as a StreamRef
    operator StreamRef() const noexcept { return ref(); }
    /// Block the host until all work queued on the stream is done (throws CudaError).
    void synchronize() const { ref().synchronize(); }

  private:
    struct Deleter {
        void operator()(CUstream stream) const noexcept;
    };
    std::unique_ptr<CUstream_st, Deleter> m_stream;
};

} // namespace kiln
