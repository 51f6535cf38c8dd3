#include "read_scratch.hpp"

namespace kiln::cache::detail {

namespace {

std::mutex g_mutex;
// Static storage: its pages are shared by every thread, so faulting them in on the thread that
// runs kiln::prepare() spares the thread that makes the first call.
alignas(4096) char g_buffer[ReadScratch::kCapacity];

} // namespace

ReadScratch ReadScratch::take() noexcept {
    return ReadScratch(std::unique_lock<std::mutex>(g_mutex, std::try_to_lock));
}

void ReadScratch::fault_in() noexcept {
    ReadScratch held = take();
    if (!held) return;
    constexpr std::size_t kPage = 4096;
    // volatile: the stores must happen, though nothing reads them.
    volatile char* bytes = held.data();
    for (std::size_t offset = 0; offset < kCapacity; offset += kPage)
        bytes[offset] = 0;
}

char* ReadScratch::data() const noexcept {
    return m_lock.owns_lock() ? g_buffer : nullptr;
}

} // namespace kiln::cache::detail
