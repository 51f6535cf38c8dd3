#pragma once
/// @file
/// Device memory: stream-ordered, move-only buffers and a pluggable allocator.

#include "kiln/stream.hpp"

#include <cuda.h>

#include <cstddef>
#include <memory>

namespace kiln {

/// Where device memory comes from. The default uses the driver's stream-ordered allocator
/// (cuMemAllocAsync on the device's default memory pool). Applications can plug in their own,
/// for example one forwarding to their framework's caching allocator.
class Allocator {
  public:
    virtual ~Allocator() = default;
    /// @p bytes of device memory usable in stream order on @p stream. @throws on failure.
    virtual CUdeviceptr allocate(std::size_t bytes, StreamRef stream) = 0;
    /// Free in stream order on @p stream. Must not throw.
    virtual void deallocate(CUdeviceptr pointer, std::size_t bytes, StreamRef stream) noexcept = 0;
};

/// The driver's stream-ordered allocator.
class StreamOrderedAllocator final : public Allocator {
  public:
    CUdeviceptr allocate(std::size_t bytes, StreamRef stream) override;
    void deallocate(CUdeviceptr pointer, std::size_t bytes, StreamRef stream) noexcept override;
};

/// The allocator new buffers use; StreamOrderedAllocator unless replaced.
std::shared_ptr<Allocator> default_allocator();
/// Replace the allocator new buffers use (nullptr restores the stream-ordered one).
void set_default_allocator(std::shared_ptr<Allocator> allocator);

/// A move-only block of device memory, allocated and freed in stream order on its stream.
///
/// Lifetime: the memory is returned on the buffer's stream when the buffer is destroyed, so work
/// queued on that stream before then may still use it; work on other streams must be ordered
/// before the destruction (for example with an event) by the caller.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    /// @throws NoDeviceError, CudaError (out of memory included).
    explicit DeviceBuffer(std::size_t bytes, StreamRef stream = {},
                          std::shared_ptr<Allocator> allocator = default_allocator());
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    CUdeviceptr get() const noexcept { return m_pointer; }
    void* data() const noexcept { return reinterpret_cast<void*>(m_pointer); }
    template <class T> T* data() const noexcept { return reinterpret_cast<T*>(m_pointer); }
    std::size_t size() const noexcept { return m_bytes; }
    StreamRef stream() const noexcept { return m_stream; }

    /// Copy @p bytes from host memory, queued on @p stream (the buffer's own when omitted).
    void copy_from_host(const void* source, std::size_t bytes, StreamRef stream) const;
    void copy_from_host(const void* source, std::size_t bytes) const {
        copy_from_host(source, bytes, m_stream);
    }
    /// Copy @p bytes to host memory, queued on @p stream. Pageable host memory makes it blocking.
    void copy_to_host(void* destination, std::size_t bytes, StreamRef stream) const;
    void copy_to_host(void* destination, std::size_t bytes) const {
        copy_to_host(destination, bytes, m_stream);
    }
    /// Set every byte to @p value, queued on the buffer's stream.
    void fill_bytes(unsigned char value) const;

  private:
    void release() noexcept;

    CUdeviceptr m_pointer = 0;
    std::size_t m_bytes = 0;
    StreamRef m_stream;
    std::shared_ptr<Allocator> m_allocator;
};

} // namespace kiln
