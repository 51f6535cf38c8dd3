#include "kiln/stream.hpp"

#include "stream_capture.hpp"

#include "driver.hpp"
#include "hooks.hpp"
#include "kiln/device.hpp"

namespace kiln {

void StreamRef::synchronize() const {
    KILN_CU(cuStreamSynchronize(m_stream));
}

bool StreamRef::ready() const {
    const CUresult result = detail::driver().cuStreamQuery(m_stream);
    if (result == CUDA_ERROR_NOT_READY) return false;
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "cuStreamQuery(stream)", __FILE__, __LINE__);
    return true;
}

Stream::Stream(bool non_blocking) {
    detail::current_context();
    CUstream stream = nullptr;
    KILN_CU(cuStreamCreate(&stream, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
    m_stream.reset(stream);
    detail::stream_made(stream); // memory/: blocks freed on it may be kept until it ends
}

void Stream::Deleter::operator()(CUstream stream) const noexcept {
    detail::stream_ending(stream);            // the blocks kept for it go back while it exists
    detail::driver().cuStreamDestroy(stream); // a destructor never throws; errors are sticky anyway
}

bool detail::stream_capturing(StreamRef stream) noexcept {
    try {
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        return driver().cuStreamIsCapturing(stream.get(), &status) != CUDA_SUCCESS ||
               status != CU_STREAM_CAPTURE_STATUS_NONE;
    } catch (const Error&) {
        return true; // no driver to ask
    }
}

} // namespace kiln
