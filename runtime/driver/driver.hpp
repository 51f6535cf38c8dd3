#pragma once
/// @file
/// The CUDA driver, opened at run time. libcuda.so.1 is dlopen'ed on first use and every entry
/// point comes from cuGetProcAddress, so Kiln links and compiles on machines with no driver.

#include "kiln/error.hpp"

#include <cuda.h>
#include <cudaProfiler.h>

// The driver entry points Kiln uses: X(name). Types come from cuda.h's own declarations.
#define KILN_DRIVER_FUNCTIONS(X)                                                                   \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuGetErrorName)                                                                              \
    X(cuGetErrorString)                                                                            \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetName)                                                                             \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDeviceTotalMem)                                                                            \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuDevicePrimaryCtxGetState)                                                                  \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetDevice)                                                                              \
    X(cuCtxSynchronize)                                                                            \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamQuery)                                                                               \
    X(cuStreamWaitEvent)                                                                           \
    X(cuStreamGetId)                                                                               \
    X(cuEventCreate)                                                                               \
    X(cuEventDestroy)                                                                              \
    X(cuEventRecord)                                                                               \
    X(cuEventSynchronize)                                                                          \
    X(cuEventQuery)                                                                                \
    X(cuEventElapsedTime)                                                                          \
    X(cuEventRecordWithFlags)                                                                      \
    X(cuStreamIsCapturing)                                                                         \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamEndCapture)                                                                          \
    X(cuThreadExchangeStreamCaptureMode)                                                           \
    X(cuGraphInstantiateWithFlags)                                                                 \
    X(cuGraphLaunch)                                                                               \
    X(cuGraphDestroy)                                                                              \
    X(cuGraphExecDestroy)                                                                          \
    X(cuProfilerStart)                                                                             \
    X(cuProfilerStop)                                                                              \
    X(cuMemAllocAsync)                                                                             \
    X(cuMemFreeAsync)                                                                              \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuDeviceGetDefaultMemPool)                                                                   \
    X(cuMemPoolGetAttribute)                                                                       \
    X(cuMemPoolSetAttribute)                                                                       \
    X(cuMemcpyHtoDAsync)                                                                           \
    X(cuMemcpyDtoHAsync)                                                                           \
    X(cuMemcpyDtoDAsync)                                                                           \
    X(cuMemsetD8Async)                                                                             \
    X(cuMemsetD16Async)                                                                            \
    X(cuMemsetD32Async)                                                                            \
    X(cuPointerGetAttribute)                                                                       \
    X(cuPointerGetAttributes)                                                                      \
    X(cuDeviceCanAccessPeer)                                                                       \
    X(cuCtxEnablePeerAccess)                                                                       \
    X(cuMemcpyPeerAsync)                                                                           \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuModuleLoadDataEx)                                                                          \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuModuleGetGlobal)                                                                           \
    X(cuModuleGetFunctionCount)                                                                    \
    X(cuModuleEnumerateFunctions)                                                                  \
    X(cuFuncGetName)                                                                               \
    X(cuFuncGetAttribute)                                                                          \
    X(cuFuncSetAttribute)                                                                          \
    X(cuFuncGetParamInfo)                                                                          \
    X(cuLaunchKernel)                                                                              \
    X(cuLaunchCooperativeKernel)                                                                   \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                 \
    X(cuArray3DCreate)                                                                             \
    X(cuArrayDestroy)                                                                              \
    X(cuMemcpy2DAsync)                                                                             \
    X(cuMemcpy3DAsync)                                                                             \
    X(cuTexObjectCreate)                                                                           \
    X(cuTexObjectDestroy)                                                                          \
    X(cuSurfObjectCreate)                                                                          \
    X(cuSurfObjectDestroy)

namespace kiln::detail {

/// The driver's entry points, resolved once per process.
struct Driver {
// NOLINTNEXTLINE(bugprone-macro-parentheses): the argument is a declared name
#define KILN_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
    KILN_DRIVER_FUNCTIONS(KILN_DRIVER_MEMBER)
#undef KILN_DRIVER_MEMBER
    int version = 0; ///< cuDriverGetVersion, e.g. 13000
};

/// The loaded and initialized driver. The first call opens libcuda.so.1 (or KILN_DRIVER_LIBRARY)
/// and calls cuInit. @throws NoDeviceError naming what is missing (library, entry point, device).
const Driver& driver();

/// Whether driver() would succeed; never throws. @p reason receives why not.
bool driver_available(std::string* reason = nullptr);

/// Build and throw a CudaError for @p result of @p call. Out of line: only the failure path pays.
[[noreturn]] void throw_cuda_error(CUresult result, const char* call, const char* file, int line);

} // namespace kiln::detail

/// Call a driver function through the loaded table and throw CudaError on failure:
/// `KILN_CU(cuStreamSynchronize(stream))`.
#define KILN_CU(call)                                                                              \
    do {                                                                                           \
        const CUresult kiln_cu_result_ = ::kiln::detail::driver().call;                            \
        if (kiln_cu_result_ != CUDA_SUCCESS)                                                       \
            ::kiln::detail::throw_cuda_error(kiln_cu_result_, #call, __FILE__, __LINE__);          \
    } while (0)
