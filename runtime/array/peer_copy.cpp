#include "peer_copy.hpp"

#include "driver/activity_hook.hpp"
#include "driver/driver.hpp"
#include "kiln/array.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <string>

namespace kiln {

namespace detail {

namespace {

constexpr int kMaxPeers = 64;
// Pinned staging is reused in pieces of this size: big enough to run near the bus's rate, small
// enough not to pin a large array's worth of host memory.
constexpr std::size_t kStagingChunk = std::size_t{32} << 20;

// The distance in bytes between the rows (the elements of one index of the first dimension) of an
// array whose rows are each C-contiguous and follow each other in order, at least a row apart:
// kiln::empty_pitched's layout, and every C-contiguous array's (a row apart). 0 for any other.
std::int64_t row_pitch(const Array& a) {
    if (a.ndim() == 0) return 0;
    auto row = static_cast<std::int64_t>(a.itemsize());
    for (int i = a.ndim() - 1; i >= 1; --i) {
        if (a.shape()[i] != 1 && a.strides()[i] != row) return 0;
        row *= a.shape()[i];
    }
    if (a.shape()[0] == 1) return row;
    return a.strides()[0] >= row ? a.strides()[0] : 0;
}

void check_copy(const Array& dst, const Array& src) {
    if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
        throw ArgumentError(std::string("cannot copy an array of dtype ") + name(src.dtype()) +
                            " and shape " + src.shape().to_string() + " into one of dtype " +
                            name(dst.dtype()) + " and shape " + dst.shape().to_string() +
                            ": shapes and dtypes must match");
    if ((!dst.is_c_contiguous() || !src.is_c_contiguous()) &&
        (row_pitch(dst) == 0 || row_pitch(src) == 0))
        throw ArgumentError("copies between arrays need both C-contiguous, or on one device both "
                            "with C-contiguous rows in order (kiln::empty_pitched's layout) "
                            "(source strides " +
                            src.strides().to_string() + ", destination strides " +
                            dst.strides().to_string() + "): make a contiguous copy first");
}

struct PinnedDeleter {
    void operator()(void* p) const noexcept { driver().cuMemFreeHost(p); }
};

void copy_staged(const Array& dst, const Array& src, StreamRef stream) {
    const std::size_t bytes = dst.nbytes();
    const int src_device = src.device(), dst_device = dst.device();
    std::unique_ptr<void, PinnedDeleter> host;
    const std::size_t chunk = std::min(bytes, kStagingChunk);
    {
        OnDevice on(dst_device);
        void* p = nullptr;
        // Portable: pinned for every context, the source's included.
        KILN_CU(cuMemHostAlloc(&p, chunk, CU_MEMHOSTALLOC_PORTABLE));
        host.reset(p);
    }
    for (std::size_t offset = 0; offset < bytes; offset += chunk) {
        const std::size_t n = std::min(chunk, bytes - offset);
        {
            OnDevice on(src_device);
            KILN_CU(cuMemcpyDtoHAsync(host.get(), src.data() + offset, n, nullptr));
            KILN_CU(cuStreamSynchronize(nullptr));
        }
        OnDevice on(dst_device);
        KILN_CU(cuMemcpyHtoDAsync(dst.data() + offset, host.get(), n, stream.get()));
        // The next piece overwrites the staging memory.
        KILN_CU(cuStreamSynchronize(stream.get()));
    }
}

} // namespace

int pointer_device(CUdeviceptr pointer) {
    if (!pointer) return -1;
    const Driver& d = driver();
    unsigned int managed = 0;
    int ordinal = -1;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* values[] = {&managed, &ordinal};
    if (d.cuPointerGetAttributes(2, attributes, values, pointer) != CUDA_SUCCESS || managed)
        return -1;
    return ordinal;
}

int operand_device(const Array& array) {
    if (array.recorded_device() >= 0) return array.recorded_device();
    // With one device there is nothing to mix up: no driver query on the call path.
    return visible_device_count() > 1 ? pointer_device(array.data()) : -1;
}

bool peer_access(int dst, int src) {
    if (dst == src) return true;
    if (dst < 0 || src < 0 || dst >= kMaxPeers || src >= kMaxPeers) return false;
    // 0: not asked yet, 1: enabled, -1: not available.
    static std::array<std::array<signed char, kMaxPeers>, kMaxPeers> state{};
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    signed char& known = state[static_cast<std::size_t>(dst)][static_cast<std::size_t>(src)];
    if (known == 0) {
        int can = 0;
        KILN_CU(cuDeviceCanAccessPeer(&can, Device(dst).handle(), Device(src).handle()));
        known = -1;
        if (can) {
            DeviceGuard on(dst);
            const CUresult result = driver().cuCtxEnablePeerAccess(primary_context(src), 0);
            if (result == CUDA_SUCCESS || result == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
                known = 1;
        }
    }
    return known == 1;
}

CopyRoute copy_route(int dst, int src) {
    if (dst < 0 || src < 0 || dst == src) return CopyRoute::same_device;
    return peer_access(dst, src) ? CopyRoute::peer : CopyRoute::staged;
}

void copy_via(CopyRoute route, const Array& dst, const Array& src, StreamRef stream) {
    check_copy(dst, src);
    const std::size_t bytes = dst.nbytes();
    if (!bytes) return;
    const bool contiguous = dst.is_c_contiguous() && src.is_c_contiguous();
    if (!contiguous && route != CopyRoute::same_device)
        throw ArgumentError("a copy between devices needs both arrays C-contiguous (source "
                            "strides " +
                            src.strides().to_string() + ", destination strides " +
                            dst.strides().to_string() + "): make a contiguous copy first");
    if (route == CopyRoute::staged) return copy_staged(dst, src, stream);
    // Queued on the destination's device, where @p stream lives.
    const int dst_device = dst.device(), src_device = src.device();
    OnDevice on(dst_device);
    ObservedActivity observed(Activity::copy, "memcpy DtoD", bytes, stream);
    if (!contiguous) {
        // Rows at their pitches (padded rows on either side), in one 2-D copy.
        const std::int64_t rows = dst.shape()[0];
        CUDA_MEMCPY2D c{};
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = src.data();
        c.srcPitch = static_cast<std::size_t>(row_pitch(src));
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = dst.data();
        c.dstPitch = static_cast<std::size_t>(row_pitch(dst));
        c.WidthInBytes = bytes / static_cast<std::size_t>(rows);
        c.Height = static_cast<std::size_t>(rows);
        KILN_CU(cuMemcpy2DAsync(&c, stream.get()));
    } else if (route == CopyRoute::same_device)
        KILN_CU(cuMemcpyDtoDAsync(dst.data(), src.data(), bytes, stream.get()));
    else
        KILN_CU(cuMemcpyPeerAsync(dst.data(), primary_context(std::max(dst_device, 0)), src.data(),
                                  primary_context(std::max(src_device, 0)), bytes, stream.get()));
    observed.done();
}

} // namespace detail

int Array::device() const {
    return m_device >= 0 ? m_device : detail::pointer_device(m_data);
}

Array Array::copy_to(int device, StreamRef stream) const {
    Array out;
    {
        DeviceGuard on(device);
        out = empty(shape(), dtype(), stream);
    }
    copy(out, *this, stream);
    return out;
}

void copy(const Array& dst, const Array& src, StreamRef stream) {
    detail::check_copy(dst, src);
    if (!dst.nbytes()) return;
    detail::copy_via(detail::copy_route(dst.device(), src.device()), dst, src, stream);
}

} // namespace kiln
