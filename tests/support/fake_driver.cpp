// A stand-in for libcuda.so.1 that runs Kiln's host paths without a GPU: tests and benches point
// KILN_DRIVER_LIBRARY at it to exercise a call from the front end down to cuLaunchKernel on a
// machine with no device (allocation counts on the hot path, host-time profiles of Kiln's own
// work). Nothing runs on a device: memory is address space only (never dereference it), copies
// and launches do nothing, and launches are counted (kiln_fake_driver_launches()).
//
// Modules are real cubins (NVRTC compiles without a device): cuModuleGetFunction finds the
// kernel's `.nv.info.<name>` section and reads its parameters from the EIATTR_KPARAM_INFO
// records, so Kiln's launch checks see the sizes a real driver would report. The device looks
// like an H100 (sm_90, 132 multiprocessors).
//
// Every entry point Kiln resolves is answered: those below with a plausible result, the others
// with CUDA_ERROR_NOT_SUPPORTED. The hot entry points (launch, stream-ordered allocation) allocate
// nothing, so a test counting operator new sees only Kiln's allocations.

#include "kiln/detail/driver.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct FakeContext {
    int device = 0;
};
FakeContext g_context;
thread_local CUcontext t_current = nullptr;

std::atomic<std::uint64_t> g_next_address{std::uint64_t{1} << 40};
std::atomic<unsigned long long> g_launches{0};

constexpr int kMaxParams = 64;

struct FakeFunction {
    char name[256];
    int count = 0;
    std::size_t offsets[kMaxParams] = {};
    std::size_t sizes[kMaxParams] = {};
};

struct FakeModule {
    char* image = nullptr;
    std::size_t size = 0;
};

template <class T> T read(const char* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

// The parameters of kernel @p name in the 64-bit ELF cubin @p image: false when it has none
// such kernel. .nv.info.<name> holds 4-byte records (format, attribute, a 16-bit value); format
// 4 (EIFMT_SVAL) is followed by that many bytes of payload. EIATTR_KPARAM_INFO (0x17) gives a
// parameter's ordinal, offset and, in the top 14 bits of its last word, its size.
bool read_parameters(const FakeModule& module, const char* name, FakeFunction& f) {
    const char* d = module.image;
    const std::size_t n = module.size;
    if (n < 64 ||
        std::memcmp(d,
                    "\x7f"
                    "ELF",
                    4) != 0 ||
        d[4] != 2)
        return false;
    const auto shoff = read<std::uint64_t>(d + 0x28);
    const auto shentsize = read<std::uint16_t>(d + 0x3a);
    const auto shnum = read<std::uint16_t>(d + 0x3c);
    const auto shstrndx = read<std::uint16_t>(d + 0x3e);
    if (shoff + std::uint64_t{shnum} * shentsize > n || shstrndx >= shnum) return false;
    const auto section = [&](int i) { return d + shoff + std::size_t(i) * shentsize; };
    const auto strings = read<std::uint64_t>(section(shstrndx) + 24);
    char wanted[300];
    std::snprintf(wanted, sizeof wanted, ".nv.info.%s", name);
    for (int i = 0; i < shnum; ++i) {
        const char* header = section(i);
        const auto name_at = strings + read<std::uint32_t>(header);
        if (name_at >= n || std::strncmp(d + name_at, wanted, n - name_at) != 0) continue;
        const auto offset = read<std::uint64_t>(header + 24);
        const auto size = read<std::uint64_t>(header + 32);
        if (offset + size > n) return false;
        for (std::uint64_t p = offset; p + 4 <= offset + size;) {
            const auto format = static_cast<unsigned char>(d[p]);
            const auto attribute = static_cast<unsigned char>(d[p + 1]);
            const auto value = read<std::uint16_t>(d + p + 2);
            p += 4;
            if (format != 4) continue;
            if (attribute == 0x17 && value >= 12 && p + 12 <= offset + size) {
                const auto ordinal = read<std::uint16_t>(d + p + 4);
                const auto at = read<std::uint16_t>(d + p + 6);
                const auto flags = read<std::uint32_t>(d + p + 8);
                if (ordinal < kMaxParams) {
                    f.offsets[ordinal] = at;
                    f.sizes[ordinal] = (flags >> 18) & 0x3fff;
                    if (ordinal + 1 > f.count) f.count = ordinal + 1;
                }
            }
            p += value;
        }
        std::snprintf(f.name, sizeof f.name, "%s", name);
        return true;
    }
    return false;
}

// Entry points not answered below: CUDA_ERROR_NOT_SUPPORTED, with the declared signature.
template <class F> struct Unsupported;
template <class... Args> struct Unsupported<CUresult (*)(Args...)> {
    static CUresult CUDAAPI call(Args...) { return CUDA_ERROR_NOT_SUPPORTED; }
};

namespace fake {

CUresult CUDAAPI cuInit(unsigned) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int* version) {
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult, const char** name) {
    *name = "CUDA_ERROR_FAKE_DRIVER";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
    *text = "not supported by Kiln's fake driver";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
    *count = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice) {
    std::snprintf(name, static_cast<std::size_t>(length), "Kiln fake driver (no device)");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        *value = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        *value = 64;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        *value = 0x7fffffff;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        *value = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *value = 232448;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *value = 32;
        break;
    default:
        *value = 0;
        break;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(std::size_t* bytes, CUdevice) {
    *bytes = std::size_t{80} << 30;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
    *context = reinterpret_cast<CUcontext>(&g_context);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice, unsigned* flags, int* active) {
    *flags = 0;
    *active = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
    *context = t_current;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
    t_current = context;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
    *device = 0;
    return t_current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuCtxSynchronize() {
    return CUDA_SUCCESS;
}
// Streams, events and pools are distinct addresses that are never dereferenced.
template <class Handle> Handle new_handle() {
    return reinterpret_cast<Handle>(std::malloc(16));
}
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned) {
    *stream = new_handle<CUstream>();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
    std::free(stream);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamQuery(CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned) {
    *event = new_handle<CUevent>();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event) {
    std::free(event);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecordWithFlags(CUevent, CUstream, unsigned) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent, CUevent) {
    *ms = 0.001f;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuProfilerStart() {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuProfilerStop() {
    return CUDA_SUCCESS;
}
// Memory: fresh 256-byte-aligned addresses, never reused, never backed.
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream) {
    *pointer = g_next_address.fetch_add((bytes + 255) / 256 * 256 + 256);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, std::size_t bytes) {
    return cuMemAllocAsync(pointer, bytes, nullptr);
}
CUresult CUDAAPI cuMemFree(CUdeviceptr) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice) {
    static char fake_pool;
    *pool = reinterpret_cast<CUmemoryPool>(&fake_pool);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool, CUmemPool_attribute, void* value) {
    std::memset(value, 0, sizeof(cuuint64_t));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr, const void*, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* destination, CUdeviceptr, std::size_t bytes, CUstream) {
    std::memset(destination, 0, bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr, unsigned char, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr, unsigned short, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr, unsigned, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned, CUjit_option*,
                                    void**) {
    const auto* bytes = static_cast<const char*>(image);
    if (std::memcmp(bytes,
                    "\x7f"
                    "ELF",
                    4) != 0)
        return CUDA_ERROR_INVALID_IMAGE;
    // An ELF's size: its section headers end it (cubins keep them last).
    const auto shoff = read<std::uint64_t>(bytes + 0x28);
    const std::size_t size =
        shoff + std::size_t{read<std::uint16_t>(bytes + 0x3c)} * read<std::uint16_t>(bytes + 0x3a);
    auto* m = static_cast<FakeModule*>(std::calloc(1, sizeof(FakeModule)));
    m->image = static_cast<char*>(std::malloc(size));
    std::memcpy(m->image, bytes, size);
    m->size = size;
    *module = reinterpret_cast<CUmodule>(m);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
    auto* m = reinterpret_cast<FakeModule*>(module);
    std::free(m->image);
    std::free(m);
    return CUDA_SUCCESS;
}
// Functions live as long as the process (a real driver frees them with their module).
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
    auto* f = static_cast<FakeFunction*>(std::calloc(1, sizeof(FakeFunction)));
    if (!read_parameters(*reinterpret_cast<FakeModule*>(module), name, *f)) {
        std::free(f);
        return CUDA_ERROR_NOT_FOUND;
    }
    *function = reinterpret_cast<CUfunction>(f);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunctionCount(unsigned* count, CUmodule) {
    *count = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction function) {
    *name = reinterpret_cast<FakeFunction*>(function)->name;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction) {
    *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                    std::size_t* size) {
    const auto* f = reinterpret_cast<FakeFunction*>(function);
    if (index >= static_cast<std::size_t>(f->count)) return CUDA_ERROR_INVALID_VALUE;
    *offset = f->offsets[index];
    *size = f->sizes[index];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**) {
    g_launches.fetch_add(1, std::memory_order_relaxed);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                           unsigned, unsigned, unsigned, CUstream, void**) {
    g_launches.fetch_add(1, std::memory_order_relaxed);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int,
                                                             std::size_t) {
    *blocks = 4;
    return CUDA_SUCCESS;
}

} // namespace fake

} // namespace

extern "C" {

/// Launches queued through this driver since the process started.
__attribute__((visibility("default"))) unsigned long long kiln_fake_driver_launches() {
    return g_launches.load();
}

__attribute__((visibility("default"))) CUresult CUDAAPI cuGetProcAddress_v2(
    const char* symbol, void** function, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
    *function = nullptr;
    // Each name Kiln asks for: the answer above where there is one, else "not supported".
#define KILN_FAKE_RESOLVE(name)                                                                    \
    if (std::strcmp(symbol, #name) == 0)                                                           \
        *function = reinterpret_cast<void*>(&Unsupported<decltype(&::name)>::call);
    KILN_DRIVER_FUNCTIONS(KILN_FAKE_RESOLVE)
#undef KILN_FAKE_RESOLVE
    struct Answer {
        const char* name;
        void* function;
    };
#define KILN_FAKE_ANSWER(name)                                                                     \
    Answer {                                                                                       \
#name, reinterpret_cast < void*>(static_cast <decltype(&::name)>(&fake::name))             \
    }
    static const Answer answers[] = {
        KILN_FAKE_ANSWER(cuInit),
        KILN_FAKE_ANSWER(cuDriverGetVersion),
        KILN_FAKE_ANSWER(cuGetErrorName),
        KILN_FAKE_ANSWER(cuGetErrorString),
        KILN_FAKE_ANSWER(cuDeviceGetCount),
        KILN_FAKE_ANSWER(cuDeviceGet),
        KILN_FAKE_ANSWER(cuDeviceGetName),
        KILN_FAKE_ANSWER(cuDeviceGetAttribute),
        KILN_FAKE_ANSWER(cuDeviceTotalMem),
        KILN_FAKE_ANSWER(cuDevicePrimaryCtxRetain),
        KILN_FAKE_ANSWER(cuDevicePrimaryCtxRelease),
        KILN_FAKE_ANSWER(cuDevicePrimaryCtxGetState),
        KILN_FAKE_ANSWER(cuCtxGetCurrent),
        KILN_FAKE_ANSWER(cuCtxSetCurrent),
        KILN_FAKE_ANSWER(cuCtxGetDevice),
        KILN_FAKE_ANSWER(cuCtxSynchronize),
        KILN_FAKE_ANSWER(cuStreamCreate),
        KILN_FAKE_ANSWER(cuStreamDestroy),
        KILN_FAKE_ANSWER(cuStreamSynchronize),
        KILN_FAKE_ANSWER(cuStreamQuery),
        KILN_FAKE_ANSWER(cuStreamWaitEvent),
        KILN_FAKE_ANSWER(cuEventCreate),
        KILN_FAKE_ANSWER(cuEventDestroy),
        KILN_FAKE_ANSWER(cuEventRecord),
        KILN_FAKE_ANSWER(cuEventRecordWithFlags),
        KILN_FAKE_ANSWER(cuEventSynchronize),
        KILN_FAKE_ANSWER(cuEventQuery),
        KILN_FAKE_ANSWER(cuEventElapsedTime),
        KILN_FAKE_ANSWER(cuStreamIsCapturing),
        KILN_FAKE_ANSWER(cuProfilerStart),
        KILN_FAKE_ANSWER(cuProfilerStop),
        KILN_FAKE_ANSWER(cuMemAllocAsync),
        KILN_FAKE_ANSWER(cuMemFreeAsync),
        KILN_FAKE_ANSWER(cuMemAlloc),
        KILN_FAKE_ANSWER(cuMemFree),
        KILN_FAKE_ANSWER(cuDeviceGetDefaultMemPool),
        KILN_FAKE_ANSWER(cuMemPoolGetAttribute),
        KILN_FAKE_ANSWER(cuMemPoolSetAttribute),
        KILN_FAKE_ANSWER(cuMemcpyHtoDAsync),
        KILN_FAKE_ANSWER(cuMemcpyDtoHAsync),
        KILN_FAKE_ANSWER(cuMemcpyDtoDAsync),
        KILN_FAKE_ANSWER(cuMemsetD8Async),
        KILN_FAKE_ANSWER(cuMemsetD16Async),
        KILN_FAKE_ANSWER(cuMemsetD32Async),
        KILN_FAKE_ANSWER(cuModuleLoadDataEx),
        KILN_FAKE_ANSWER(cuModuleUnload),
        KILN_FAKE_ANSWER(cuModuleGetFunction),
        KILN_FAKE_ANSWER(cuModuleGetFunctionCount),
        KILN_FAKE_ANSWER(cuFuncGetName),
        KILN_FAKE_ANSWER(cuFuncGetAttribute),
        KILN_FAKE_ANSWER(cuFuncSetAttribute),
        KILN_FAKE_ANSWER(cuFuncGetParamInfo),
        KILN_FAKE_ANSWER(cuLaunchKernel),
        KILN_FAKE_ANSWER(cuLaunchCooperativeKernel),
        KILN_FAKE_ANSWER(cuOccupancyMaxActiveBlocksPerMultiprocessor),
    };
#undef KILN_FAKE_ANSWER
    for (const Answer& answer : answers)
        if (std::strcmp(symbol, answer.name) == 0) *function = answer.function;
    if (status)
        *status = *function ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *function ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

} // extern "C"
