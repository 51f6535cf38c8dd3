#pragma once
// A second CUDA context on device 0, made with cuCtxCreate: on a machine with one GPU it stands in
// for "another device" wherever Kiln keys its state by context (loaded modules, specializations,
// reduction workspaces, events). Kiln's driver table leaves cuCtxCreate out (its signature changed
// across CUDA releases), so the helper resolves the stable cuCtxCreate_v2 from the driver Kiln has
// already loaded.
//
// The context is never destroyed: Kiln's per-context caches keep entries for the process, and a
// later context created at the same address would find them.

#include "driver/driver.hpp"
#include "kiln/device.hpp"

#include <cuda.h>
#include <dlfcn.h>

#include <stdexcept>

namespace kiln::test {

/// Creates a context on device 0 and leaves the calling thread's current context as it was.
inline CUcontext create_second_context() {
    kiln::detail::driver(); // loads the driver (or throws NoDeviceError)
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!library) throw std::runtime_error("libcuda.so.1 is not loaded");
    using Create = CUresult (*)(CUcontext*, unsigned int, CUdevice);
    auto create = reinterpret_cast<Create>(dlsym(library, "cuCtxCreate_v2"));
    if (!create) throw std::runtime_error("the driver has no cuCtxCreate_v2");
    CUcontext previous = nullptr;
    KILN_CU(cuCtxGetCurrent(&previous));
    CUcontext context = nullptr;
    const CUresult result = create(&context, 0, kiln::Device(0).handle());
    if (result != CUDA_SUCCESS) throw std::runtime_error("cuCtxCreate_v2 failed");
    // cuCtxCreate makes the new context current; put the thread back as it was.
    KILN_CU(cuCtxSetCurrent(previous));
    return context;
}

/// The second context of this process, made on first use.
inline CUcontext second_context() {
    static const CUcontext context = create_second_context();
    return context;
}

/// Makes @p context current for a scope and restores the previous one.
class ContextScope {
  public:
    explicit ContextScope(CUcontext context) {
        KILN_CU(cuCtxGetCurrent(&m_previous));
        KILN_CU(cuCtxSetCurrent(context));
    }
    ~ContextScope() { kiln::detail::driver().cuCtxSetCurrent(m_previous); }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

  private:
    CUcontext m_previous = nullptr;
};

} // namespace kiln::test
