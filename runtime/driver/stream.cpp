#include "kiln/stream.hpp"

#include "stream_capture.hpp"

#include "driver.hpp"
#include "hooks.hpp"
#include "kiln/device.hpp"

#include <string>

namespace kiln {

void StreamRef::synchronize() const {
    const CUresult result = detail::driver().cuStreamSynchronize(m_stream);
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result,
                                 "kiln::StreamRef::synchronize: cuStreamSynchronize(stream)",
                                 __FILE__, __LINE__);
}

bool StreamRef::ready() const {
    const CUresult result = detail::driver().cuStreamQuery(m_stream);
    if (result == CUDA_ERROR_NOT_READY) return false;
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "kiln::StreamRef::ready: cuStreamQuery(stream)", __FILE__,
                                 __LINE__);
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

void detail::refuse_while_capturing(StreamRef stream, const char* call) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult code = driver().cuStreamIsCapturing(stream.get(), &status);
    // The legacy stream answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while a stream that
    // synchronizes with it is captured: its use would end that capture.
    if (code == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE)
        code = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (code != CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
        return; // not captured; another error is the call's own to report
    const char* name = nullptr;
    const char* text = nullptr;
    driver().cuGetErrorName(code, &name);
    driver().cuGetErrorString(code, &text);
    throw CaptureError(
        std::string(call) + " (refused by Kiln before it reached the driver)",
        static_cast<int>(code), name ? name : "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        text ? text : "operation not permitted when stream is capturing", __FILE__, __LINE__);
}

} // namespace kiln
