#include "context_warm_up.hpp"

#include "kiln/detail/driver.hpp"
#include "kiln/env.hpp"
#include "kiln/log.hpp"

#include <chrono>
#include <memory>

namespace kiln::detail {

namespace {

// PTX for the oldest target the driver still compiles, so one text serves every GPU.
constexpr char kWarmUpPtx[] = ".version 6.0\n"
                              ".target sm_50\n"
                              ".address_size 64\n"
                              ".visible .entry kiln_context_warm_up()\n"
                              "{\n"
                              "\tret;\n"
                              "}\n";

struct ModuleUnloader {
    void operator()(CUmodule module) const noexcept { driver().cuModuleUnload(module); }
};

// Read once, where the first context is made: a value that cannot be parsed keeps the warm-up
// (every `kiln` command reports it).
bool warm_up_enabled() noexcept {
    static const bool on = [] {
        try {
            return env::get_flag("KILN_CONTEXT_WARM_UP", true);
        } catch (...) {
            return true;
        }
    }();
    return on;
}

// The calling thread's current context, set back as it was on leaving the scope.
class CurrentContextSwitch {
  public:
    explicit CurrentContextSwitch(CUcontext context) noexcept {
        const Driver& d = driver();
        m_ok = d.cuCtxGetCurrent(&m_previous) == CUDA_SUCCESS &&
               (m_previous == context || d.cuCtxSetCurrent(context) == CUDA_SUCCESS);
        m_switched = m_ok && m_previous != context;
    }
    CurrentContextSwitch(const CurrentContextSwitch&) = delete;
    CurrentContextSwitch& operator=(const CurrentContextSwitch&) = delete;
    ~CurrentContextSwitch() {
        if (m_switched) driver().cuCtxSetCurrent(m_previous);
    }
    bool ok() const noexcept { return m_ok; }

  private:
    CUcontext m_previous = nullptr;
    bool m_ok = false, m_switched = false;
};

const char* warm_up_in(CUcontext context) noexcept {
    const Driver& d = driver();
    const CurrentContextSwitch current(context);
    if (!current.ok()) return "making the context current";
    CUmodule module = nullptr;
    if (d.cuModuleLoadDataEx(&module, kWarmUpPtx, 0, nullptr, nullptr) != CUDA_SUCCESS)
        return "cuModuleLoadDataEx";
    const std::unique_ptr<CUmod_st, ModuleUnloader> module_owner(module);
    CUfunction function = nullptr;
    if (d.cuModuleGetFunction(&function, module, "kiln_context_warm_up") != CUDA_SUCCESS)
        return "cuModuleGetFunction";
    // The legacy default stream, where Kiln's calls go unless given another (a stream of its own
    // would cost about 0.12 ms more to create). The context is new, so this waits for nothing
    // but the kernel.
    if (d.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS)
        return "cuLaunchKernel";
    // Waited for before the module is unloaded.
    if (d.cuStreamSynchronize(nullptr) != CUDA_SUCCESS) return "cuStreamSynchronize";
    return nullptr;
}

} // namespace

void warm_up_new_context(CUcontext context) noexcept {
    if (!warm_up_enabled() || !driver_available()) return;
    try {
        const auto start = std::chrono::steady_clock::now();
        if (const char* failed = warm_up_in(context))
            logger().debug("context warm-up skipped: {} failed", failed);
        else
            logger().debug(
                "context warmed up: an empty kernel loaded and run in {:.0f} us",
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count());
    } catch (...) {
        // The logger could not write: the warm-up is only ever an optimization.
    }
}

} // namespace kiln::detail
