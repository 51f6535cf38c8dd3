#include "kiln/memory.hpp"

#include "block_cache.hpp"
#include "capture_frees.hpp"
#include "driver/stream_capture.hpp"

#include "driver/activity_hook.hpp"
#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

namespace {

// The stream-ordered allocator is one object for the process, never destroyed (buffers freed
// during static destruction still reach it), handed out as a shared_ptr without a control block:
// copying it touches no reference count. Until an application replaces it, every allocation
// reads one atomic flag and takes no lock; a replaced allocator is read under the mutex.
StreamOrderedAllocator& stream_ordered() {
    static auto* allocator = new StreamOrderedAllocator;
    return *allocator;
}
std::shared_ptr<Allocator> shared_stream_ordered() {
    return std::shared_ptr<Allocator>(std::shared_ptr<Allocator>(), &stream_ordered());
}
std::atomic<bool> g_replaced{false};
std::mutex g_allocator_mutex;
std::shared_ptr<Allocator> g_replacement; // under g_allocator_mutex

void check_range(std::size_t bytes, std::size_t size, const char* what) {
    if (bytes > size)
        throw ArgumentError(std::string(what) + " of " + std::to_string(bytes) +
                            " bytes overruns a device buffer of " + std::to_string(size) +
                            " bytes");
}

} // namespace

namespace {

// The default pool hands memory back to the system at every synchronization unless told to keep
// it (release threshold 0), so each allocation after a sync would map pages again (microseconds).
// Keep it, as CuPy's and PyTorch's pools do; an application that set its own threshold keeps it.
void keep_pool_memory(CUcontext context) {
    static std::mutex mutex;
    static std::vector<CUcontext> done;
    std::lock_guard<std::mutex> lock(mutex);
    if (std::find(done.begin(), done.end(), context) != done.end()) return;
    done.push_back(context);
    CUdevice device = 0;
    CUmemoryPool pool = nullptr;
    cuuint64_t threshold = 0;
    const auto& d = detail::driver();
    if (d.cuCtxGetDevice(&device) != CUDA_SUCCESS ||
        d.cuDeviceGetDefaultMemPool(&pool, device) != CUDA_SUCCESS ||
        d.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) !=
            CUDA_SUCCESS)
        return; // an optimization only
    if (threshold == 0) {
        threshold = ~cuuint64_t{0};
        d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    }
}

} // namespace

namespace {

// The stream-ordered allocation; @p keepable says whether the block may be kept for reuse when it
// is freed, @p cached (then) who its stream is to the block cache, and @p captured whether it is
// a graph's allocation.
CUdeviceptr allocate_stream_ordered(std::size_t bytes, StreamRef stream, bool& keepable,
                                    detail::CachedStream& cached, bool& captured) {
    thread_local CUcontext last = nullptr;
    CUcontext context = detail::current_context();
    if (context != last) {
        keep_pool_memory(context);
        last = context;
    }
    // A block this thread freed on this stream (a repeated call's dropped output) asks nothing
    // of the driver.
    // On a stream being captured the allocation belongs to the graph (and the driver refuses a
    // captured stream's id).
    captured = detail::stream_capturing(stream);
    keepable = bytes <= detail::kMaxCachedBlockBytes && !captured &&
               detail::identify_stream(stream.get(), cached);
    if (keepable)
        if (CUdeviceptr kept = detail::take_cached_block(context, cached, bytes)) return kept;
    CUdeviceptr pointer = 0;
    CUresult result = detail::driver().cuMemAllocAsync(&pointer, bytes, stream.get());
    // Blocks the threads keep may be what is missing: give them back and try once more.
    if (result == CUDA_ERROR_OUT_OF_MEMORY && detail::release_cached_blocks() > 0)
        result = detail::driver().cuMemAllocAsync(&pointer, bytes, stream.get());
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "cuMemAllocAsync(&pointer, bytes, stream.get())", __FILE__,
                                 __LINE__);
    return pointer;
}

} // namespace

CUdeviceptr StreamOrderedAllocator::allocate(std::size_t bytes, StreamRef stream) {
    bool keepable = false, captured = false;
    detail::CachedStream cached;
    return allocate_stream_ordered(bytes, stream, keepable, cached, captured);
}

void StreamOrderedAllocator::deallocate(CUdeviceptr pointer, std::size_t,
                                        StreamRef stream) noexcept {
    detail::driver().cuMemFreeAsync(pointer, stream.get());
}

std::shared_ptr<Allocator> default_allocator() {
    if (!g_replaced.load(std::memory_order_acquire)) return shared_stream_ordered();
    std::lock_guard<std::mutex> lock(g_allocator_mutex);
    return g_replacement ? g_replacement : shared_stream_ordered();
}

void set_default_allocator(std::shared_ptr<Allocator> allocator) {
    // Restoring the stream-ordered allocator (nullptr, or what default_allocator() gave) clears
    // the replacement, so allocations are lock-free again.
    if (allocator.get() == &stream_ordered()) allocator = nullptr;
    std::lock_guard<std::mutex> lock(g_allocator_mutex);
    g_replacement = std::move(allocator);
    g_replaced.store(g_replacement != nullptr, std::memory_order_release);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, StreamRef stream,
                           std::shared_ptr<Allocator> allocator)
    : m_bytes(bytes)
    , m_stream(stream)
    , m_allocator(std::move(allocator)) {
    if (!m_allocator) throw ArgumentError("DeviceBuffer needs an allocator, got nullptr");
    if (bytes) {
        if (m_allocator.get() == &stream_ordered()) {
            detail::CachedStream cached;
            m_pointer = allocate_stream_ordered(bytes, stream, m_keepable, cached, m_captured);
            m_stream_id = cached.id;
            m_foreign_stream = cached.foreign;
        } else {
            m_pointer = m_allocator->allocate(bytes, stream);
        }
        // An application's allocator may switch contexts: ask the driver again after it.
        if (m_allocator.get() != &stream_ordered()) detail::forget_current_context();
        m_context = detail::current_context_or_null();
    }
}

DeviceBuffer::~DeviceBuffer() {
    release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : m_pointer(std::exchange(other.m_pointer, 0))
    , m_bytes(std::exchange(other.m_bytes, 0))
    , m_stream(std::exchange(other.m_stream, StreamRef{}))
    , m_allocator(std::move(other.m_allocator))
    , m_context(std::exchange(other.m_context, nullptr))
    , m_stream_id(std::exchange(other.m_stream_id, 0))
    , m_keepable(std::exchange(other.m_keepable, false))
    , m_foreign_stream(std::exchange(other.m_foreign_stream, false))
    , m_captured(std::exchange(other.m_captured, false)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        release();
        m_pointer = std::exchange(other.m_pointer, 0);
        m_bytes = std::exchange(other.m_bytes, 0);
        m_stream = std::exchange(other.m_stream, StreamRef{});
        m_allocator = std::move(other.m_allocator);
        m_context = std::exchange(other.m_context, nullptr);
        m_stream_id = std::exchange(other.m_stream_id, 0);
        m_keepable = std::exchange(other.m_keepable, false);
        m_foreign_stream = std::exchange(other.m_foreign_stream, false);
        m_captured = std::exchange(other.m_captured, false);
    }
    return *this;
}

void DeviceBuffer::release() noexcept {
    if (m_pointer && !m_captured && m_allocator.get() == &stream_ordered()) {
        // While its stream is captured, a block made before the capture cannot be freed there
        // (the graph may free only its own allocations): it waits for the capture's end.
        if (detail::stream_capturing(m_stream)) {
            detail::free_after_capture(m_context, m_stream, m_pointer);
            m_pointer = 0;
            return;
        }
        // The block is kept for this thread's next allocation of its size on its stream, where
        // it can be. The stream is the one identified at allocation: it must outlive the buffer.
        if (m_keepable &&
            detail::keep_freed_block(
                m_context, detail::CachedStream{m_stream.get(), m_stream_id, m_foreign_stream},
                m_bytes, m_pointer)) {
            m_pointer = 0;
            return;
        }
    }
    if (m_pointer && m_allocator && !free_on_own_stream()) {
        // Freed from another device's context, the legacy default stream would be that device's.
        const detail::InContext in_allocating_context(m_context);
        m_allocator->deallocate(m_pointer, m_bytes, m_stream);
    }
    m_pointer = 0;
}

// A stream-ordered free on a stream of its own (not a default stream, which stands for the current
// context's) is ordered on that stream, in its context, whichever is current: no need to ask the
// driver which context is current (a call on the hot path). Should the driver refuse it anyway,
// the caller frees from the allocating context.
bool DeviceBuffer::free_on_own_stream() noexcept {
    const CUstream stream = m_stream.get();
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD ||
        m_allocator.get() != &stream_ordered())
        return false;
    return detail::driver().cuMemFreeAsync(m_pointer, stream) == CUDA_SUCCESS;
}

void DeviceBuffer::copy_from_host(const void* source, std::size_t bytes, StreamRef stream) const {
    check_range(bytes, m_bytes, "a copy from the host");
    if (!bytes) return;
    detail::ObservedActivity observed(Activity::copy, "memcpy HtoD", bytes, stream);
    KILN_CU(cuMemcpyHtoDAsync(m_pointer, source, bytes, stream.get()));
    observed.done();
}

void DeviceBuffer::copy_to_host(void* destination, std::size_t bytes, StreamRef stream) const {
    check_range(bytes, m_bytes, "a copy to the host");
    // It waits for the copy: refused at once while the stream is captured.
    detail::refuse_while_capturing(stream, "kiln::DeviceBuffer::copy_to_host");
    if (bytes) {
        detail::ObservedActivity observed(Activity::copy, "memcpy DtoH", bytes, stream);
        KILN_CU(cuMemcpyDtoHAsync(destination, m_pointer, bytes, stream.get()));
        observed.done();
    }
    // Pageable destinations are written by the time the call returns only for sync copies;
    // synchronize so the caller can read the host memory right away.
    stream.synchronize();
}

void DeviceBuffer::fill_bytes(unsigned char value) const {
    if (!m_bytes) return;
    detail::ObservedActivity observed(Activity::fill, "memset", m_bytes, m_stream);
    KILN_CU(cuMemsetD8Async(m_pointer, value, m_bytes, m_stream.get()));
    observed.done();
}

} // namespace kiln
