#include "context_priming.hpp"
#include "module_preload.hpp"

#include "driver/driver.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/settings.hpp"
#include "log_line.hpp"

#include <chrono>
#include <memory>

namespace kiln::detail {

namespace {

struct ModuleUnloader {
    void operator()(CUmodule module) const noexcept { driver().cuModuleUnload(module); }
};

// Read once, where the first context is made: a value that cannot be parsed keeps the priming
// (every `kiln` command reports it).
bool priming_enabled() noexcept {
    static const bool on = [] {
        try {
            return settings::flag(Variable::context_warm_up);
        } catch (...) {
            return true;
        }
    }();
    return on;
}

const char* prime_in(CUcontext context, std::size_t& preloaded) noexcept {
    const Driver& d = driver();
    const InContext in_context(context);
    if (!in_context.active()) return "making the context current";
    CUmodule module = nullptr;
    if (d.cuModuleLoadDataEx(&module, kContextPrimingPtx, 0, nullptr, nullptr) != CUDA_SUCCESS)
        return "cuModuleLoadDataEx";
    const std::unique_ptr<CUmod_st, ModuleUnloader> module_owner(module);
    CUfunction function = nullptr;
    if (d.cuModuleGetFunction(&function, module, kContextPrimingKernel) != CUDA_SUCCESS)
        return "cuModuleGetFunction";
    // The legacy default stream, where Kiln's calls go unless given another (a stream of its own
    // would cost about 0.12 ms more to create). The context is new, so this waits for nothing
    // but the kernel.
    if (d.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS)
        return "cuLaunchKernel";
    // Waited for before the module is unloaded.
    if (d.cuStreamSynchronize(nullptr) != CUDA_SUCCESS) return "cuStreamSynchronize";
    // After the set-up above, which the first load would otherwise pay.
    preloaded = preload_read_ahead_modules(context);
    return nullptr;
}

} // namespace

void prime_new_context(CUcontext context) noexcept {
    if (!priming_enabled() || !driver_available()) return;
    try {
        const auto start = std::chrono::steady_clock::now();
        std::size_t preloaded = 0;
        if (const char* failed = prime_in(context, preloaded))
            kiln::detail::log_debug("context priming skipped: {} failed", failed);
        else
            kiln::detail::log_debug(
                "context primed: an empty kernel loaded and run, {} module(s) read ahead "
                "loaded, in {:.0f} us",
                preloaded,
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count());
    } catch (...) {
        // The logger could not write: the priming is only ever an optimization.
    }
}

} // namespace kiln::detail
