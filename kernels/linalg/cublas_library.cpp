#include "cublas_library.hpp"

#include "kiln/error.hpp"
#include "kiln/settings.hpp"
#include "log_line.hpp"

#include "shared_library.hpp"

#include <type_traits>

namespace kiln::detail {

namespace {

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
    // Kept open for the life of the process, as the driver is: cuBLAS's handles and its
    // runtime's state outlive any one call.
    const SharedLibrary library(
        candidates, "install the CUDA toolkit's cuBLAS (libcublas and libcublasLt), put its lib64 "
                    "folder on LD_LIBRARY_PATH, or name the library in KILN_CUBLAS_LIBRARY");
    CublasLibrary out;
    out.path = library.name();
    try {
        CublasFunctions& f = out.functions;
        const auto resolve = [&](const char* name, auto& target) {
            target =
                reinterpret_cast<std::remove_reference_t<decltype(target)>>(library.symbol(name));
        };
        resolve("cublasCreate_v2", f.create);
        resolve("cublasDestroy_v2", f.destroy);
        resolve("cublasGetVersion_v2", f.get_version);
        resolve("cublasSetStream_v2", f.set_stream);
        resolve("cublasSetMathMode", f.set_math_mode);
        resolve("cublasGetStatusName", f.status_name);
        resolve("cublasGetStatusString", f.status_string);
        resolve("cublasGemmEx", f.gemm);
        resolve("cublasGemmStridedBatchedEx", f.gemm_strided_batched);
        kiln::detail::log_debug("opened cuBLAS from {}", out.path);
    } catch (const Error& e) {
        out.functions = {};
        out.failure = std::string("kiln::matmul needs cuBLAS: ") + e.what();
    }
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
