#include "kiln/device_guard.hpp"

#include "kiln/detail/driver.hpp"

namespace kiln {

DeviceGuard::DeviceGuard(const Device& device)
    : m_context(detail::primary_context(device.ordinal()))
    , m_ordinal(device.ordinal()) {
    KILN_CU(cuCtxGetCurrent(&m_previous));
    if (m_previous != m_context) KILN_CU(cuCtxSetCurrent(m_context));
}

DeviceGuard::DeviceGuard(int ordinal)
    : DeviceGuard(Device(ordinal)) {}

DeviceGuard::~DeviceGuard() {
    // The driver is loaded: the constructor used it. A failure here has nowhere to go.
    detail::driver().cuCtxSetCurrent(m_previous);
}

namespace detail {

InContext::InContext(CUcontext context) noexcept {
    if (!context || !driver_available()) return;
    const Driver& d = driver();
    if (d.cuCtxGetCurrent(&m_previous) != CUDA_SUCCESS || m_previous == context) return;
    m_switched = d.cuCtxSetCurrent(context) == CUDA_SUCCESS;
}

InContext::~InContext() {
    if (m_switched) driver().cuCtxSetCurrent(m_previous);
}

} // namespace detail

} // namespace kiln
