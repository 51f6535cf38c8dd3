#include "kiln/nvtx.hpp"

#include "activity_hook.hpp"

#include "nvtx_domain.hpp"

namespace kiln {

nvtxDomainHandle_t detail::nvtx_domain() noexcept {
    static const nvtxDomainHandle_t handle = nvtxDomainCreateA("kiln");
    return handle;
}

namespace nvtx {

namespace {

nvtxDomainHandle_t domain() noexcept {
    return detail::nvtx_domain();
}

nvtxEventAttributes_t attributes(const char* message, std::uint32_t argb) noexcept {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = argb;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message;
    return a;
}

} // namespace

void push_range(const char* name, std::uint32_t argb) noexcept {
    const nvtxEventAttributes_t a = attributes(name, argb);
    nvtxDomainRangePushEx(domain(), &a);
}

void pop_range() noexcept {
    nvtxDomainRangePop(domain());
}

void mark(const char* message, std::uint32_t argb) noexcept {
    const nvtxEventAttributes_t a = attributes(message, argb);
    nvtxDomainMarkEx(domain(), &a);
}

void set_launch_ranges(bool enabled) noexcept {
    detail::set_launch_ranges_observed(enabled);
}

bool launch_ranges() noexcept {
    return (detail::g_observers.load(std::memory_order_relaxed) & detail::kObserveLaunchRanges) !=
           0;
}

} // namespace nvtx
} // namespace kiln
