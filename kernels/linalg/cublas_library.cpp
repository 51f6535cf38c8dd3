#include "cublas_library.hpp"

#include "kiln/error.hpp"
#include "kiln/log.hpp"
#include "kiln/settings.hpp"

#include <dlfcn.h>

namespace kiln::detail {

namespace {

// Resolve @p name into @p target; false (and a failure naming it) when the library lacks it.
template <class F> bool resolve(void* handle, const char* name, F& target, CublasLibrary& out) {
    void* symbol = dlsym(handle, name);
    if (!symbol) {
        out.failure = out.path + " lacks " + name +
                      ": it is older than the cuBLAS Kiln needs (CUDA 12 or newer); set "
                      "KILN_CUBLAS_LIBRARY to a newer one";
        return false;
    }
    target = reinterpret_cast<F>(symbol);
    return true;
}

bool resolve_all(void* handle, CublasLibrary& out) {
    CublasFunctions& f = out.functions;
    return resolve(handle, "cublasCreate_v2", f.create, out) &&
           resolve(handle, "cublasDestroy_v2", f.destroy, out) &&
           resolve(handle, "cublasGetVersion_v2", f.get_version, out) &&
           resolve(handle, "cublasSetStream_v2", f.set_stream, out) &&
           resolve(handle, "cublasSetMathMode", f.set_math_mode, out) &&
           resolve(handle, "cublasGetStatusName", f.status_name, out) &&
           resolve(handle, "cublasGetStatusString", f.status_string, out) &&
           resolve(handle, "cublasGemmEx", f.gemm, out) &&
           resolve(handle, "cublasGemmStridedBatchedEx", f.gemm_strided_batched, out);
}

const CublasLibrary& loaded() {
    static const CublasLibrary library = open_cublas(cublas_candidates());
    return library;
}

} // namespace

std::vector<std::string> cublas_candidates() {
    std::string chosen = settings::text(Variable::cublas_library);
    if (!chosen.empty()) return {chosen};
    return {KILN_CUBLAS_PATH, KILN_CUBLAS_SONAME};
}

CublasLibrary open_cublas(const std::vector<std::string>& candidates) {
    CublasLibrary out;
    std::string tried;
    for (const std::string& candidate : candidates) {
        // Kept open for the life of the process, as the driver is: cuBLAS's handles and its
        // runtime's state outlive any one call.
        void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* why = dlerror();
            if (!tried.empty()) tried += "; ";
            tried += candidate + ": " + (why ? why : "unknown reason");
            continue;
        }
        out.path = candidate;
        if (!resolve_all(handle, out)) return out;
        logger().debug("opened cuBLAS from {}", candidate);
        return out;
    }
    out.failure = "kiln::matmul needs cuBLAS, which could not be opened (" + tried +
                  "): install the CUDA toolkit's cuBLAS (libcublas and libcublasLt), put its "
                  "lib64 folder on LD_LIBRARY_PATH, or name the library in KILN_CUBLAS_LIBRARY";
    return out;
}

const CublasFunctions& cublas() {
    const CublasLibrary& library = loaded();
    if (!library.failure.empty()) throw Error(library.failure);
    return library.functions;
}

bool cublas_available(std::string* reason) noexcept {
    try {
        const CublasLibrary& library = loaded();
        if (reason) *reason = library.failure;
        return library.failure.empty();
    } catch (const std::exception& e) { // a setting that does not parse, or no memory
        if (reason) *reason = e.what();
        return false;
    }
}

void throw_cublas_error(cublasStatus_t status, const char* call) {
    const CublasFunctions& f = cublas();
    const char* name = f.status_name(status);
    const char* text = f.status_string(status);
    throw Error(std::string(call) + " failed with " + (name ? name : "an unknown status") + " (" +
                (text ? text : "no description") + ")");
}

} // namespace kiln::detail
