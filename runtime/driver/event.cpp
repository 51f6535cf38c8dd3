#include "kiln/event.hpp"

#include "driver.hpp"
#include "kiln/device.hpp"

namespace kiln {

void EventRef::record(StreamRef stream) const {
    KILN_CU(cuEventRecord(m_event, stream.get()));
}

void EventRef::synchronize() const {
    const CUresult result = detail::driver().cuEventSynchronize(m_event);
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "kiln::EventRef::synchronize: cuEventSynchronize(event)",
                                 __FILE__, __LINE__);
}

bool EventRef::ready() const {
    const CUresult result = detail::driver().cuEventQuery(m_event);
    if (result == CUDA_ERROR_NOT_READY) return false;
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "kiln::EventRef::ready: cuEventQuery(event)", __FILE__,
                                 __LINE__);
    return true;
}

void EventRef::wait_on(StreamRef stream) const {
    KILN_CU(cuStreamWaitEvent(stream.get(), m_event, 0));
}

Event::Event(bool timing, bool blocking_sync) {
    detail::current_context();
    unsigned flags = timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
    if (blocking_sync) flags |= CU_EVENT_BLOCKING_SYNC;
    CUevent event = nullptr;
    KILN_CU(cuEventCreate(&event, flags));
    m_event.reset(event);
}

void Event::Deleter::operator()(CUevent event) const noexcept {
    detail::driver().cuEventDestroy(event);
}

float elapsed_ms(EventRef start, EventRef end) {
    float ms = 0;
    KILN_CU(cuEventElapsedTime(&ms, start.get(), end.get()));
    return ms;
}

} // namespace kiln
