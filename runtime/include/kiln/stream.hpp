#pragma once
/// @file
/// CUDA streams: an owning, move-only Stream and a non-owning StreamRef that APIs take.

#include <cuda.h>

#include <memory>

namespace kiln {

/// A non-owning view of a stream. Converts implicitly from a CUstream or a cudaStream_t (the same
/// type), so streams made by the application, CuPy or PyTorch pass straight in. The default
/// StreamRef is the legacy default stream (0), as in CuPy.
class StreamRef {
  public:
    constexpr StreamRef() noexcept = default;
    constexpr StreamRef(CUstream stream) noexcept
        : m_stream(stream) {} // NOLINT: implicit by design

    constexpr CUstream get() const noexcept { return m_stream; }
    /// Block the host until all work queued on the stream is done. @throws CudaError.
    void synchronize() const;
    /// Whether all queued work is done (never blocks). @throws CudaError on a sticky error.
    bool ready() const;

    friend bool operator==(StreamRef a, StreamRef b) noexcept { return a.m_stream == b.m_stream; }
    friend bool operator!=(StreamRef a, StreamRef b) noexcept { return a.m_stream != b.m_stream; }

  private:
    CUstream m_stream = nullptr;
};

/// An owned stream, destroyed with the object (after its queued work completes, as the driver
/// does). Non-blocking with respect to the legacy default stream unless asked otherwise.
class Stream {
  public:
    /// Create a stream in the current context. @throws NoDeviceError, CudaError.
    explicit Stream(bool non_blocking = true);
    Stream(Stream&&) noexcept = default;
    Stream& operator=(Stream&&) noexcept = default;

    CUstream get() const noexcept { return m_stream.get(); }
    StreamRef ref() const noexcept { return StreamRef(get()); }
    operator StreamRef() const noexcept { return ref(); } // NOLINT: implicit by design
    void synchronize() const { ref().synchronize(); }

  private:
    struct Deleter {
        void operator()(CUstream stream) const noexcept;
    };
    std::unique_ptr<CUstream_st, Deleter> m_stream;
};

} // namespace kiln
