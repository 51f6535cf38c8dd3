#include "prepare_steps.hpp"

#include "nvtx_domain.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <mutex>

namespace kiln {

namespace {

// Steps the layers above add from static initializers (compile/ the cache's and NVRTC's, memory/
// the block cache's, the front ends' their own): a fixed array, so adding one never allocates or
// throws before main.
struct PrepareSteps {
    std::array<std::atomic<void (*)()>, 16> steps{};
    std::atomic<std::size_t> count{0};
};
PrepareSteps& prepare_steps() {
    static PrepareSteps steps;
    return steps;
}

void run_steps() noexcept {
    detail::nvtx_domain();
    // Lookups and compiles time themselves: libstdc++ binds its clock call on its first use,
    // which is then not the first kernel call's.
    (void)std::chrono::steady_clock::now();
    // Each step separately: one that fails (it throws again, and is reported, when the call that
    // needs it runs) leaves the others done.
    PrepareSteps& extra = prepare_steps();
    const std::size_t n = std::min(extra.count.load(std::memory_order_acquire), extra.steps.size());
    for (std::size_t i = 0; i < n; ++i) {
        try {
            if (auto step = extra.steps[i].load(std::memory_order_acquire)) step();
        } catch (...) {
        }
    }
}

} // namespace

void prepare() noexcept {
    static std::once_flag once;
    try {
        std::call_once(once, run_steps);
    } catch (...) {
    }
}

void detail::add_prepare_step(void (*step)()) noexcept {
    PrepareSteps& s = prepare_steps();
    const std::size_t slot = s.count.load(std::memory_order_relaxed);
    if (slot >= s.steps.size()) return; // more steps than slots: the rest run on first use
    s.steps[slot].store(step, std::memory_order_release);
    s.count.store(slot + 1, std::memory_order_release);
}

} // namespace kiln
