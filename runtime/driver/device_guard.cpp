#include "kiln/device_guard.hpp"

#include "driver.hpp"

namespace kiln {

DeviceGuard::DeviceGuard(const Device& device)
    : m_context(detail::primary_context(device.ordinal()))
    , m_ordinal(device.ordinal()) {
    m_previous = detail::current_context_or_null();
    if (!m_previous) KILN_CU(cuCtxGetCurrent(&m_previous)); // not known: ask, failures included
    if (m_previous != m_context) KILN_CU(cuCtxSetCurrent(m_context));
    detail::note_current_context(m_context);
}

DeviceGuard::DeviceGuard(int ordinal)
    : DeviceGuard(Device(ordinal)) {}

DeviceGuard::~DeviceGuard() {
    // The driver is loaded: the constructor used it. A failure here has nowhere to go.
    detail::driver().cuCtxSetCurrent(m_previous);
    detail::note_current_context(m_previous);
}

namespace detail {

InContext::InContext(CUcontext context) noexcept {
    if (!context || !driver_available()) return;
    m_previous = current_context_or_null();
    m_active = m_previous == context;
    if (m_active) return;
    m_switched = m_active = driver().cuCtxSetCurrent(context) == CUDA_SUCCESS;
    if (m_switched) note_current_context(context);
}

InContext::~InContext() {
    if (!m_switched) return;
    driver().cuCtxSetCurrent(m_previous);
    note_current_context(m_previous);
}

} // namespace detail

} // namespace kiln
