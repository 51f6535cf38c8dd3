#include "driver.hpp"
#include "driver_trace.hpp"
#include "prepare_steps.hpp"

#include "kiln/settings.hpp"
#include "log_line.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <thread>

namespace kiln::detail {

namespace {

struct LoadResult {
    Driver driver;
    std::string failure; // empty when loaded
};

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

// The ABI version asked of cuGetProcAddress. Not CUDA_VERSION: cuda.h 13.0 declares
// cuCtxGetDevice and cuCtxSynchronize with their original signatures, while asking for 13000
// returns their 2-argument v13000 variants. 12.9 gives every entry point in
// KILN_DRIVER_FUNCTIONS the signature cuda.h declares (checked against cudaTypedefs.h).
constexpr int kDriverAbiVersion = 12090;

LoadResult load_driver() {
    LoadResult result;
    const std::string library = settings::text(Variable::driver_library);
    // Kept open for the life of the process: unloading a driver is never safe.
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        result.failure = "the CUDA driver library " + library + " could not be loaded (" +
                         (why ? why : "unknown reason") +
                         "): install the NVIDIA driver to run kernels; compiling works without it";
        return result;
    }
    auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
    if (!get_proc) {
        result.failure = library + " has no cuGetProcAddress_v2: the driver is older than CUDA "
                                   "12.0; update the NVIDIA driver";
        return result;
    }
    Driver& d = result.driver;
#define KILN_DRIVER_RESOLVE(name)                                                                  \
    {                                                                                              \
        void* fn = nullptr;                                                                        \
        CUdriverProcAddressQueryResult status{};                                                   \
        if (get_proc(#name, &fn, kDriverAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=       \
                CUDA_SUCCESS ||                                                                    \
            !fn) {                                                                                 \
            result.failure = "the CUDA driver in " + library +                                     \
                             " lacks " #name                                                       \
                             ": update the NVIDIA driver (Kiln needs CUDA 12.4 or newer)";         \
            return result;                                                                         \
        }                                                                                          \
        d.name = reinterpret_cast<decltype(d.name)>(fn);                                           \
    }
    KILN_DRIVER_FUNCTIONS(KILN_DRIVER_RESOLVE)
#undef KILN_DRIVER_RESOLVE

    const CUresult init = d.cuInit(0);
    if (init != CUDA_SUCCESS) {
        const char* name = nullptr;
        d.cuGetErrorName(init, &name);
        result.failure = std::string("cuInit failed with ") + (name ? name : "an unknown error") +
                         ": no usable CUDA device (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
        return result;
    }
    d.cuDriverGetVersion(&d.version);
    int count = 0;
    if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        result.failure = "the CUDA driver reports no device (check CUDA_VISIBLE_DEVICES)";
        return result;
    }
    if (settings::flag(Variable::driver_trace)) trace_driver_calls(d);
    kiln::detail::log_debug("loaded CUDA driver {} from {}", d.version, library);
    return result;
}

// The driver loads (dlopen, cuInit: tens of milliseconds) on a second thread while this one runs
// Kiln's own start-up work, kiln::prepare(), which needs no driver: this thread's caches then hold
// the code its first call runs next, which measured as a quarter of a first call from disk on a
// VM (bench/RESULTS.md, run M). Without a second thread, one after the other.
LoadResult load() {
    LoadResult result;
    std::thread loader;
    try {
        loader = std::thread([&result] { result = load_driver(); });
    } catch (...) {
    }
    prepare();
    if (loader.joinable())
        loader.join();
    else
        result = load_driver();
    return result;
}

const LoadResult& loaded() {
    static const LoadResult result = load();
    return result;
}

} // namespace

const Driver& driver() {
    const LoadResult& result = loaded();
    if (!result.failure.empty()) throw NoDeviceError(result.failure);
    return result.driver;
}

bool driver_available(std::string* reason) {
    const LoadResult& result = loaded();
    if (reason) *reason = result.failure;
    return result.failure.empty();
}

void throw_cuda_error(CUresult result, const char* call, const char* file, int line) {
    const char* name = nullptr;
    const char* text = nullptr;
    const Driver& d = driver();
    d.cuGetErrorName(result, &name);
    d.cuGetErrorString(result, &text);
    // A capture's refusals get their own type and say what to do: the driver's text ("operation
    // not permitted when stream is capturing") does not name the capture or the way out.
    const bool capture = (result >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
                          result <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    if (capture)
        throw CaptureError(call, static_cast<int>(result), name ? name : "CUDA_ERROR_UNKNOWN",
                           text ? text : "unknown error", file, line);
    throw CudaError(call, static_cast<int>(result), name ? name : "CUDA_ERROR_UNKNOWN",
                    text ? text : "unknown error", file, line);
}

} // namespace kiln::detail
