#include "release_stream.hpp"

#include "driver/driver.hpp"
#include "driver/hooks.hpp"
#include "driver/per_context_cache.hpp"
#include "kiln/device_guard.hpp"

#include <utility>

namespace kiln::detail {

namespace {

// One stream; a value made by a thread that lost the race to insert it is destroyed.
struct OwnedStream {
    CUstream stream = nullptr;
    explicit OwnedStream(CUstream s)
        : stream(s) {}
    OwnedStream(OwnedStream&& other) noexcept
        : stream(std::exchange(other.stream, nullptr)) {}
    OwnedStream& operator=(OwnedStream&&) = delete;
    ~OwnedStream() {
        if (!stream) return;
        stream_ending(stream);
        driver().cuStreamDestroy(stream);
    }
};

PerContextCache<OwnedStream>& streams() {
    // Never destroyed: memory may be freed on these streams during static destruction.
    static auto* cache = new PerContextCache<OwnedStream>;
    return *cache;
}

} // namespace

CUstream release_stream(CUcontext context) {
    return streams()
        .get(context, NoKey{},
             [context] {
                 const InContext in(context);
                 if (!in.active())
                     throw_cuda_error(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent(context)",
                                      __FILE__, __LINE__);
                 CUstream stream = nullptr;
                 KILN_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
                 OwnedStream owned(stream);
                 stream_made(stream); // blocks freed on it are kept as on a kiln::Stream
                 return owned;
             })
        .stream;
}

void free_after_event(CUcontext context, CUdeviceptr pointer, CUevent event) noexcept {
    try {
        const Driver& d = driver();
        try {
            const CUstream stream = release_stream(context);
            if (d.cuStreamWaitEvent(stream, event, 0) == CUDA_SUCCESS &&
                d.cuMemFreeAsync(pointer, stream) == CUDA_SUCCESS)
                return;
        } catch (...) {
        }
        // No release stream, or it refused: once the host has waited, any stream orders the free.
        const InContext in(context);
        d.cuEventSynchronize(event);
        d.cuMemFreeAsync(pointer, CU_STREAM_LEGACY);
    } catch (...) {
        // no driver: nothing to free with
    }
}

} // namespace kiln::detail
