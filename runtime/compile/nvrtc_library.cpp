#include "nvrtc_library.hpp"

#include "shared_library.hpp"

#include <nvJitLink.h>
#include <nvrtc.h>

namespace kiln::detail {

namespace {

constexpr const char* kToolkitHint =
    "install the CUDA toolkit's NVRTC, or put its lib64 folder on LD_LIBRARY_PATH";

const SharedLibrary& nvrtc_dl() {
    static const SharedLibrary library(KILN_NVRTC_SONAME, KILN_NVRTC_PATH, kToolkitHint);
    return library;
}

const SharedLibrary& nvjitlink_dl() {
    static const SharedLibrary library(KILN_NVJITLINK_SONAME, KILN_NVJITLINK_PATH, kToolkitHint);
    return library;
}

} // namespace

const void* nvrtc_address() {
    return nvrtc_dl().symbol("nvrtcVersion");
}

const void* nvjitlink_address() {
    return nvjitlink_dl().symbol("nvJitLinkVersion");
}

} // namespace kiln::detail

// The forwarding functions: each resolves its target once (a function-local static, so thread-safe)
// and calls it. Their signatures are checked against the declarations in nvrtc.h and nvJitLink.h.
#define KILN_FORWARD_NAME(name) #name
// `params` and `args` are parenthesised lists already: more parentheses would break them.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define KILN_FORWARD(library, result, name, params, args)                                          \
    extern "C" result name params {                                                                \
        using Function = result(*) params;                                                         \
        static const auto function =                                                               \
            reinterpret_cast<Function>(kiln::detail::library().symbol(KILN_FORWARD_NAME(name)));   \
        return function args;                                                                      \
    }
// NOLINTEND(bugprone-macro-parentheses)

KILN_FORWARD(nvrtc_dl, const char*, nvrtcGetErrorString, (nvrtcResult r), (r))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcVersion, (int* major, int* minor), (major, minor))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetNumSupportedArchs, (int* count), (count))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetSupportedArchs, (int* archs), (archs))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcCreateProgram,
             (nvrtcProgram * p, const char* src, const char* name, int n,
              const char* const* headers, const char* const* names),
             (p, src, name, n, headers, names))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * p), (p))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcCompileProgram,
             (nvrtcProgram p, int n, const char* const* options), (p, n, options))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram p, size_t* size), (p, size))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetPTX, (nvrtcProgram p, char* ptx), (p, ptx))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram p, size_t* size), (p, size))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram p, char* cubin), (p, cubin))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetLTOIRSize, (nvrtcProgram p, size_t* size), (p, size))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetLTOIR, (nvrtcProgram p, char* ir), (p, ir))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram p, size_t* size),
             (p, size))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram p, char* log), (p, log))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcAddNameExpression,
             (nvrtcProgram p, const char* const expression), (p, expression))
KILN_FORWARD(nvrtc_dl, nvrtcResult, nvrtcGetLoweredName,
             (nvrtcProgram p, const char* const expression, const char** lowered),
             (p, expression, lowered))

// nvJitLink.h's inline functions call versioned entry points (__nvJitLinkCreate_13_0 for 13.0):
// the suffix is the header's, found by CMake (KILN_NVJITLINK_ABI).
#define KILN_JITLINK_PASTE(name, abi) __nvJitLink##name##_##abi
#define KILN_JITLINK(name, abi) KILN_JITLINK_PASTE(name, abi)
#define KILN_JITLINK_FORWARD(name, params, args)                                                   \
    KILN_FORWARD(nvjitlink_dl, nvJitLinkResult, KILN_JITLINK(name, KILN_NVJITLINK_ABI), params,    \
                 args)

KILN_JITLINK_FORWARD(Create, (nvJitLinkHandle * h, uint32_t n, const char* const* options),
                     (h, n, options))
KILN_JITLINK_FORWARD(Destroy, (nvJitLinkHandle * h), (h))
KILN_JITLINK_FORWARD(AddData,
                     (nvJitLinkHandle h, nvJitLinkInputType type, const void* data, size_t size,
                      const char* name),
                     (h, type, data, size, name))
KILN_JITLINK_FORWARD(AddFile, (nvJitLinkHandle h, nvJitLinkInputType type, const char* file),
                     (h, type, file))
KILN_JITLINK_FORWARD(Complete, (nvJitLinkHandle h), (h))
KILN_JITLINK_FORWARD(GetLinkedCubinSize, (nvJitLinkHandle h, size_t* size), (h, size))
KILN_JITLINK_FORWARD(GetLinkedCubin, (nvJitLinkHandle h, void* cubin), (h, cubin))
KILN_JITLINK_FORWARD(GetLinkedPtxSize, (nvJitLinkHandle h, size_t* size), (h, size))
KILN_JITLINK_FORWARD(GetLinkedPtx, (nvJitLinkHandle h, char* ptx), (h, ptx))
KILN_JITLINK_FORWARD(GetErrorLogSize, (nvJitLinkHandle h, size_t* size), (h, size))
KILN_JITLINK_FORWARD(GetErrorLog, (nvJitLinkHandle h, char* log), (h, log))
KILN_JITLINK_FORWARD(GetInfoLogSize, (nvJitLinkHandle h, size_t* size), (h, size))
KILN_JITLINK_FORWARD(GetInfoLog, (nvJitLinkHandle h, char* log), (h, log))
KILN_FORWARD(nvjitlink_dl, nvJitLinkResult, nvJitLinkVersion,
             (unsigned int* major, unsigned int* minor), (major, minor))
