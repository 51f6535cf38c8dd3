#pragma once
// cuBLAS, opened at run time as the driver and NVRTC are (runtime/driver/driver.cpp,
// runtime/compile/nvrtc_library.cpp): never linked, so Kiln builds and compiles kernels on a
// machine without it, and only kiln::matmul says, when called, why it cannot run.
//
// The library opened: KILN_CUBLAS_LIBRARY when set (that one only); else libcublas.so.<major> of
// the toolkit Kiln was built with, at the path the build found it; else that name on the loader's
// search path. Kept open for the life of the process.

#include <cublas_api.h>

#include <string>
#include <vector>

namespace kiln::detail {

/// The cuBLAS entry points kiln::matmul calls. Their types are spelled out: cublas_api.h
/// declares C++ overloads of some names, so `decltype(&::cublasGemmEx)` would be ambiguous.
struct CublasFunctions {
    cublasStatus_t (*create)(cublasHandle_t*) = nullptr;                  ///< cublasCreate_v2
    cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;                  ///< cublasDestroy_v2
    cublasStatus_t (*get_version)(cublasHandle_t, int*) = nullptr;        ///< cublasGetVersion_v2
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr; ///< cublasSetStream_v2
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr; ///< cublasSetMathMode
    const char* (*status_name)(cublasStatus_t) = nullptr;   ///< cublasGetStatusName
    const char* (*status_string)(cublasStatus_t) = nullptr; ///< cublasGetStatusString
    /// cublasGemmEx
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                           cublasGemmAlgo_t) = nullptr;
    /// cublasGemmStridedBatchedEx
    cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void*, cudaDataType,
                                           int, long long, const void*, cudaDataType, int,
                                           long long, const void*, void*, cudaDataType, int,
                                           long long, int, cublasComputeType_t,
                                           cublasGemmAlgo_t) = nullptr;
};

/// The outcome of opening one library: its functions, or why not.
struct CublasLibrary {
    CublasFunctions functions; ///< all set when failure is empty
    std::string path;          ///< what was opened, as dlopen was given it
    std::string failure;       ///< empty when opened
};

/// Open cuBLAS from @p candidates (tried in order, each as dlopen takes it) and resolve every
/// entry point. Never throws: a library that is missing or lacks an entry point is a failure
/// that names each candidate tried and what to do. Separate from cublas() so tests can tell the
/// loader to fail without touching the process's copy.
CublasLibrary open_cublas(const std::vector<std::string>& candidates);

/// The candidates cublas() tries, in order: KILN_CUBLAS_LIBRARY alone when it is set, else the
/// toolkit's library by path and then by name.
std::vector<std::string> cublas_candidates();

/// The process's cuBLAS, opened on first use. @throws Error saying why cuBLAS is unavailable
/// (the library tried, the setting that overrides it).
const CublasFunctions& cublas();

/// Whether cublas() would succeed; never throws. @p reason receives why not.
bool cublas_available(std::string* reason = nullptr) noexcept;

/// Throw an Error for @p status returned by @p call (its name and text from the library).
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call);

} // namespace kiln::detail
