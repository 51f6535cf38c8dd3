#pragma once
/// @file
/// Device memory: stream-ordered, move-only buffers and a pluggable allocator. DeviceBuffer owns a
/// block of device memory; kiln::Array allocates through it. An application that manages its own
/// memory replaces the allocator with set_default_allocator() (docs/embedding.md, "Inside an
/// application").

#include "kiln/stream.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kiln {

/// Where device memory comes from. The default uses the driver's stream-ordered allocator
/// (cuMemAllocAsync on the device's default memory pool). Applications can plug in their own,
/// for example one forwarding to their framework's caching allocator.
class Allocator {
  public:
    virtual ~Allocator() = default;
    /// @p bytes of device memory usable in stream order on @p stream.
    /// @param bytes the size, more than 0.
    /// @param stream the stream the memory will first be used on.
    /// @return the address of the block.
    /// @throws on failure (any exception; Kiln's own throws CudaError).
    virtual CUdeviceptr allocate(std::size_t bytes, StreamRef stream) = 0;
    /// Free in stream order on @p stream. Must not throw.
    /// @param pointer an address allocate() returned.
    /// @param bytes the size it was allocated with.
    /// @param stream the stream the memory was last used on, as given to the buffer.
    virtual void deallocate(CUdeviceptr pointer, std::size_t bytes, StreamRef stream) noexcept = 0;
};

/// The driver's stream-ordered allocator.
class StreamOrderedAllocator final : public Allocator {
  public:
    /// cuMemAllocAsync on the current device's default memory pool, which keeps freed memory for
    /// reuse rather than returning it to the system at each synchronization.
    /// @param bytes the size, more than 0.
    /// @param stream the stream the allocation is ordered on.
    /// @return the address of the block.
    /// @throws NoDeviceError, CudaError (out of memory included).
    CUdeviceptr allocate(std::size_t bytes, StreamRef stream) override;
    /// cuMemFreeAsync on @p stream.
    /// @param pointer an address allocate() returned.
    /// @param bytes the size it was allocated with (unused).
    /// @param stream the stream the free is ordered on.
    void deallocate(CUdeviceptr pointer, std::size_t bytes, StreamRef stream) noexcept override;
};

/// The allocator new buffers use; StreamOrderedAllocator unless replaced.
/// @return the allocator in force.
std::shared_ptr<Allocator> default_allocator();
/// Replace the allocator new buffers use (nullptr restores the stream-ordered one). Buffers that
/// exist keep the allocator they were made with.
/// @param allocator the new allocator, or nullptr.
void set_default_allocator(std::shared_ptr<Allocator> allocator);

/// A move-only block of device memory, allocated and freed in stream order on its stream.
///
/// Lifetime: the memory is returned on the buffer's stream when the buffer is destroyed, so work
/// queued on that stream before then may still use it; work on other streams must be ordered
/// before the destruction (for example with an event) by the caller. The buffer's stream must
/// exist until the buffer is destroyed: the free is ordered on it.
///
/// Graphs: a buffer made while its stream is captured is the graph's allocation (a graph memory
/// node; its address is fixed, its memory is made by each launch of the graph). Destroyed inside
/// the capture, the graph frees it; kept past the capture, it holds the last launch's memory and
/// frees it when destroyed (docs/graphs.md). A buffer made before the capture and destroyed
/// inside it goes back to the pool when kiln::Graph::capture ends.
class DeviceBuffer {
  public:
    /// No memory (size 0, address 0).
    DeviceBuffer() = default;
    /// Allocate @p bytes in stream order on @p stream; 0 bytes allocates nothing.
    /// @param bytes the size.
    /// @param stream the buffer's stream: allocation, default copies and the free are ordered on
    /// it.
    /// @param allocator where the memory comes from.
    /// @throws NoDeviceError, CudaError (out of memory included); ArgumentError for a null
    /// @p allocator.
    explicit DeviceBuffer(std::size_t bytes, StreamRef stream = {},
                          std::shared_ptr<Allocator> allocator = default_allocator());
    /// Frees the memory in stream order on the buffer's stream.
    ~DeviceBuffer();
    /// Takes @p other's memory; @p other is left empty.
    /// @param other the buffer to move from.
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    /// Frees this buffer's memory, then takes @p other's; @p other is left empty.
    /// @param other the buffer to move from.
    /// @return this buffer.
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    /// Not copyable: one owner per block.
    DeviceBuffer(const DeviceBuffer&) = delete;
    /// Not copyable.
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    /// The device address.
    /// @return the device address (0 when empty).
    CUdeviceptr get() const noexcept { return m_pointer; }
    /// The device address as a pointer.
    /// @return the device address as a pointer, for kernel arguments.
    void* data() const noexcept {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): CUdeviceptr is an integer address
        return reinterpret_cast<void*>(m_pointer);
    }
    /// The device address as a typed pointer.
    /// @tparam T the element type.
    /// @return the address.
    template <class T> T* data() const noexcept { return static_cast<T*>(data()); }
    /// The size in bytes.
    /// @return the size in bytes.
    std::size_t size() const noexcept { return m_bytes; }
    /// The stream the memory is ordered on.
    /// @return the stream the memory is ordered on.
    StreamRef stream() const noexcept { return m_stream; }

    /// Copy @p bytes from host memory, queued on @p stream (the buffer's own when omitted).
    /// Pageable host memory makes it blocking; with pinned memory, keep @p source alive and
    /// unchanged until the copy is done.
    /// @param source host memory of at least @p bytes.
    /// @param bytes how many bytes, from the buffer's start; at most size().
    /// @param stream the stream the copy is queued on.
    /// @throws ArgumentError when @p bytes exceeds size(); CudaError.
    void copy_from_host(const void* source, std::size_t bytes, StreamRef stream) const;
    /// copy_from_host() on the buffer's own stream.
    /// @param source host memory of at least @p bytes.
    /// @param bytes how many bytes; at most size().
    void copy_from_host(const void* source, std::size_t bytes) const {
        copy_from_host(source, bytes, m_stream);
    }
    /// Copy @p bytes to host memory, queued on @p stream. Pageable host memory makes it blocking;
    /// with pinned memory, synchronize @p stream before reading @p destination.
    /// @param destination host memory of at least @p bytes.
    /// @param bytes how many bytes, from the buffer's start; at most size().
    /// @param stream the stream the copy is queued on.
    /// @throws ArgumentError when @p bytes exceeds size(); CudaError.
    void copy_to_host(void* destination, std::size_t bytes, StreamRef stream) const;
    /// copy_to_host() on the buffer's own stream.
    /// @param destination host memory of at least @p bytes.
    /// @param bytes how many bytes; at most size().
    void copy_to_host(void* destination, std::size_t bytes) const {
        copy_to_host(destination, bytes, m_stream);
    }
    /// Set every byte to @p value, queued on the buffer's stream.
    /// @param value the byte.
    /// @throws CudaError.
    void fill_bytes(unsigned char value) const;

  private:
    void release() noexcept;
    bool free_on_own_stream() noexcept;

    CUdeviceptr m_pointer = 0;
    std::size_t m_bytes = 0;
    StreamRef m_stream;
    std::shared_ptr<Allocator> m_allocator;
    CUcontext m_context = nullptr; // current at allocation: the free goes there (its streams)
    std::uint64_t m_stream_id = 0; // the stream's id to the block cache, when m_keepable
    bool m_keepable = false;       // the thread may keep the block for reuse when it is freed
    bool m_foreign_stream = false; // m_stream is not Kiln's: a kept block carries an event
    bool m_captured = false;       // made while its stream was captured: the graph's allocation
};

} // namespace kiln
