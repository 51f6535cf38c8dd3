// A stand-in for libcuda.so.1 that runs Kiln's host paths without a GPU: tests and benches point
// KILN_DRIVER_LIBRARY at it to exercise a call from the front end down to cuLaunchKernel on a
// machine with no device (allocation counts on the hot path, host-time profiles of Kiln's own
// work). Nothing runs on a device: memory is address space only (never dereference it), copies
// and launches do nothing, and launches are counted (kiln_fake_driver_launches()), as are the
// calls of the entry points a hot call may reach (kiln_fake_driver_calls("cuCtxGetCurrent")), so a
// test can hold the number of driver calls per call to what it is.
//
// Modules are real cubins (NVRTC compiles without a device): cuModuleGetFunction finds the
// kernel's `.nv.info.<name>` section and reads its parameters from the EIATTR_KPARAM_INFO
// records, so Kiln's launch checks see the sizes a real driver would report. A PTX module is
// taken as text: its `.entry` kernels take no parameters. Live modules are counted
// (kiln_fake_driver_modules()). The device looks like an H100 (sm_90, 132 multiprocessors, its
// texture alignments and limits), and its primary context is inactive until retained, as a real
// one is in a fresh process. Texture objects are handles only; the last one's descriptors are
// kept (kiln_fake_driver_last_texture()). A stream has an id (cuStreamGetId), and a new stream
// takes the handle destroyed last, as a real driver may; the latest event records, waits and
// stream-ordered frees are kept in order (kiln_fake_driver_ops(), fake_driver_ops.hpp), so a test
// can follow a block to the stream it is freed on.
//
// Stream capture is modelled as far as Kiln's refusals need (one capture at a time): while a stream
// is captured, synchronizing it, the context or the legacy stream fails as a real driver's global
// mode does (CUDA_ERROR_STREAM_CAPTURE_*), and so does a cuMemFreeAsync on it of memory the capture
// did not allocate; each of those invalidates the capture, whose end then fails. Graphs are tokens;
// the last instantiation's flags are kept (kiln_fake_driver_last_instantiate_flags()).
//
// Every entry point Kiln resolves is answered: those below with a plausible result, the others
// with CUDA_ERROR_NOT_SUPPORTED. The hot entry points (launch, stream-ordered allocation) allocate
// nothing, so a test counting operator new sees only Kiln's allocations.

#include "fake_driver_ops.hpp"

#include "driver/driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

struct FakeContext {
    int device = 0;
};
FakeContext g_context;
thread_local CUcontext t_current = nullptr;

std::atomic<std::uint64_t> g_next_address{std::uint64_t{1} << 40};
std::atomic<unsigned long long> g_launches{0};
std::atomic<long long> g_modules{0};
std::atomic<bool> g_primary_active{false};

// The stream a capture runs on (one at a time), whether it runs and whether a refused call has
// invalidated it, and the addresses it allocated (a free of any other address is refused).
std::atomic<CUstream> g_capturing{nullptr};
std::atomic<bool> g_capture_active{false};
std::atomic<bool> g_capture_invalid{false};
constexpr int kMaxCapturedBlocks = 256;
std::atomic<CUdeviceptr> g_captured_blocks[kMaxCapturedBlocks];
std::atomic<int> g_captured_count{0};
std::atomic<unsigned long long> g_instantiate_flags{~0ull};

bool capturing(CUstream stream) {
    return g_capture_active.load() && g_capturing.load() == stream;
}
bool legacy(CUstream stream) {
    return stream == nullptr || stream == CU_STREAM_LEGACY;
}
// A call the capture refuses: the capture is invalid from now on.
CUresult refuse(CUresult code) {
    g_capture_invalid.store(true);
    return code;
}

constexpr int kMaxParams = 64;

// The entry points whose calls are counted: those a call from a front end may make.
const char* const kCounted[] = {"cuCtxGetCurrent",
                                "cuCtxSetCurrent",
                                "cuCtxGetDevice",
                                "cuDevicePrimaryCtxGetState",
                                "cuLaunchKernel",
                                "cuMemAllocAsync",
                                "cuMemFreeAsync",
                                "cuStreamIsCapturing",
                                "cuDeviceGetAttribute",
                                "cuFuncGetAttribute",
                                "cuEventRecord",
                                "cuMemsetD8Async",
                                "cuMemcpyDtoDAsync",
                                "cuDeviceGetDefaultMemPool",
                                "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                "cuStreamGetId",
                                "cuStreamWaitEvent",
                                "cuEventCreate",
                                "cuEventDestroy",
                                "cuStreamCreate"};
constexpr int kCountedEntries = sizeof kCounted / sizeof kCounted[0];
enum class Counted {
    ctx_get_current,
    ctx_set_current,
    ctx_get_device,
    primary_ctx_get_state,
    launch_kernel,
    mem_alloc_async,
    mem_free_async,
    stream_is_capturing,
    device_get_attribute,
    func_get_attribute,
    event_record,
    memset_d8_async,
    memcpy_dto_d_async,
    device_get_default_mem_pool,
    occupancy,
    stream_get_id,
    stream_wait_event,
    event_create,
    event_destroy,
    stream_create,
};
std::atomic<unsigned long long> g_calls[kCountedEntries] = {};
void count(Counted entry) {
    g_calls[static_cast<int>(entry)].fetch_add(1, std::memory_order_relaxed);
}

struct FakeFunction {
    FakeFunction* next = nullptr; // the module's other functions, freed with it
    char name[256];
    int count = 0;
    std::size_t offsets[kMaxParams] = {};
    std::size_t sizes[kMaxParams] = {};
};

// The calling thread's last launch: its function, grid and block, and its parameters' bytes.
struct LastLaunch {
    CUfunction function = nullptr;
    unsigned dims[6] = {};
    unsigned char bytes[4096];
    std::size_t size = 0;
};
thread_local LastLaunch t_last_launch;

struct FakeModule {
    char* image = nullptr;
    std::size_t size = 0;
    bool ptx = false;
    FakeFunction* functions = nullptr;
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
    if (module.ptx) {
        char wanted[300];
        std::snprintf(wanted, sizeof wanted, ".entry %s(", name);
        if (!std::strstr(module.image, wanted)) return false;
        std::snprintf(f.name, sizeof f.name, "%s", name);
        return true;
    }
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

CUresult CUDAAPI init(unsigned) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI driver_get_version(int* version) {
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI get_error_name(CUresult, const char** name) {
    *name = "CUDA_ERROR_FAKE_DRIVER";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI get_error_string(CUresult, const char** text) {
    *text = "not supported by Kiln's fake driver";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get_count(int* count) {
    *count = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get(CUdevice* device, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get_name(char* name, int length, CUdevice) {
    std::snprintf(name, static_cast<std::size_t>(length), "Kiln fake driver (no device)");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get_attribute(int* value, CUdevice_attribute attribute, CUdevice) {
    count(Counted::device_get_attribute);
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
    // Textures over linear and pitched memory, as an H100 reports them.
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        *value = 512;
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
        *value = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH:
        *value = 1 << 28;
        break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH:
        *value = 131072;
        break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT:
        *value = 65000;
        break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH:
        *value = 2097120;
        break;
    default:
        *value = 0;
        break;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_total_mem(std::size_t* bytes, CUdevice) {
    *bytes = std::size_t{80} << 30;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_primary_ctx_retain(CUcontext* context, CUdevice) {
    g_primary_active = true;
    *context = reinterpret_cast<CUcontext>(&g_context);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_primary_ctx_release(CUdevice) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_primary_ctx_get_state(CUdevice, unsigned* flags, int* active) {
    count(Counted::primary_ctx_get_state);
    *flags = 0;
    *active = g_primary_active ? 1 : 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI ctx_get_current(CUcontext* context) {
    count(Counted::ctx_get_current);
    *context = t_current;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI ctx_set_current(CUcontext context) {
    count(Counted::ctx_set_current);
    t_current = context;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI ctx_get_device(CUdevice* device) {
    count(Counted::ctx_get_device);
    *device = 0;
    return t_current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI ctx_synchronize() {
    if (g_capture_active.load()) return refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    return CUDA_SUCCESS;
}
// Events and pools are distinct addresses that are never dereferenced.
template <class Handle> Handle new_handle() {
    return reinterpret_cast<Handle>(std::malloc(16));
}
// A stream is its id (cuStreamGetId), unique for the life of the process as a real driver's. Its
// handle is the one destroyed last when there is one, as a driver may give it again: a test sees
// a new stream behind an old handle.
struct FakeStream {
    unsigned long long id;
};
std::atomic<unsigned long long> g_next_stream_id{100};
std::mutex g_streams_mutex;
FakeStream* g_destroyed_streams[64]; // under g_streams_mutex
int g_destroyed_count = 0;
CUresult CUDAAPI stream_create(CUstream* stream, unsigned) {
    count(Counted::stream_create);
    FakeStream* s = nullptr;
    {
        const std::lock_guard<std::mutex> lock(g_streams_mutex);
        if (g_destroyed_count > 0) s = g_destroyed_streams[--g_destroyed_count];
    }
    if (!s) s = static_cast<FakeStream*>(std::malloc(sizeof(FakeStream)));
    s->id = g_next_stream_id.fetch_add(1);
    *stream = reinterpret_cast<CUstream>(s);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_destroy(CUstream stream) {
    auto* s = reinterpret_cast<FakeStream*>(stream);
    const std::lock_guard<std::mutex> lock(g_streams_mutex);
    if (g_destroyed_count < 64)
        g_destroyed_streams[g_destroyed_count++] = s;
    else
        std::free(s);
    return CUDA_SUCCESS;
}
// The default streams' ids: the legacy stream's (0 means it) and the per-thread stream's.
CUresult CUDAAPI stream_get_id(CUstream stream, unsigned long long* id) {
    count(Counted::stream_get_id);
    if (!stream || stream == CU_STREAM_LEGACY)
        *id = 1;
    else if (stream == CU_STREAM_PER_THREAD)
        *id = 2;
    else
        *id = reinterpret_cast<const FakeStream*>(stream)->id;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_synchronize(CUstream stream) {
    if (capturing(stream)) return refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (g_capture_active.load() && legacy(stream))
        return refuse(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_query(CUstream) {
    return CUDA_SUCCESS;
}
// The latest event records, waits and stream-ordered frees, a ring of kFakeOpsKept.
std::mutex g_ops_mutex;
kiln::test::FakeOp g_ops[kiln::test::kFakeOpsKept]; // under g_ops_mutex
unsigned long long g_ops_count = 0;
void note(kiln::test::FakeOp op) {
    const std::lock_guard<std::mutex> lock(g_ops_mutex);
    g_ops[g_ops_count++ % kiln::test::kFakeOpsKept] = op;
}
CUresult CUDAAPI stream_wait_event(CUstream stream, CUevent event, unsigned) {
    count(Counted::stream_wait_event);
    note({kiln::test::FakeOp::wait_event, stream, event, 0});
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_create(CUevent* event, unsigned) {
    count(Counted::event_create);
    *event = new_handle<CUevent>();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_destroy(CUevent event) {
    count(Counted::event_destroy);
    std::free(event);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_record(CUevent event, CUstream stream) {
    count(Counted::event_record);
    note({kiln::test::FakeOp::record_event, stream, event, 0});
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_record_with_flags(CUevent, CUstream, unsigned) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_synchronize(CUevent) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_query(CUevent) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI event_elapsed_time(float* ms, CUevent, CUevent) {
    *ms = 0.001f;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
    count(Counted::stream_is_capturing);
    // The legacy stream would join a capture of a stream that synchronizes with it.
    if (g_capture_active.load() && legacy(stream)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *status = !capturing(stream)         ? CU_STREAM_CAPTURE_STATUS_NONE
              : g_capture_invalid.load() ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                         : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}
// Captures record nothing: a graph is a token the fake driver hands out and takes back.
CUresult CUDAAPI stream_begin_capture(CUstream stream, CUstreamCaptureMode) {
    if (legacy(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    g_capturing.store(stream);
    g_capture_invalid.store(false);
    g_captured_count.store(0);
    g_capture_active.store(true);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_end_capture(CUstream, CUgraph* graph) {
    g_capture_active.store(false);
    if (g_capture_invalid.exchange(false)) {
        *graph = nullptr;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    static int token;
    *graph = reinterpret_cast<CUgraph>(&token);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI graph_destroy(CUgraph) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI graph_instantiate_with_flags(CUgraphExec* exec, CUgraph,
                                              unsigned long long flags) {
    g_instantiate_flags.store(flags);
    static int token;
    *exec = reinterpret_cast<CUgraphExec>(&token);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI graph_launch(CUgraphExec, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI graph_exec_destroy(CUgraphExec) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI profiler_start() {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI profiler_stop() {
    return CUDA_SUCCESS;
}
// Memory: fresh 256-byte-aligned addresses, never reused, never backed.
CUresult CUDAAPI mem_alloc_async(CUdeviceptr* pointer, std::size_t bytes, CUstream stream) {
    count(Counted::mem_alloc_async);
    *pointer = g_next_address.fetch_add((bytes + 255) / 256 * 256 + 256);
    if (capturing(stream)) { // a graph allocation: the capture may free it
        const int k = g_captured_count.fetch_add(1);
        if (k < kMaxCapturedBlocks) g_captured_blocks[k].store(*pointer);
    }
    return CUDA_SUCCESS;
}
// The last texture object made: its resource and texture descriptors (a test reads them back).
CUDA_RESOURCE_DESC g_texture_resource{};
CUDA_TEXTURE_DESC g_texture_description{};
std::atomic<unsigned long long> g_next_texture{1};
CUresult CUDAAPI tex_object_create(CUtexObject* texture, const CUDA_RESOURCE_DESC* resource,
                                   const CUDA_TEXTURE_DESC* description,
                                   const CUDA_RESOURCE_VIEW_DESC*) {
    g_texture_resource = *resource;
    g_texture_description = *description;
    *texture = g_next_texture.fetch_add(1);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI tex_object_destroy(CUtexObject) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI mem_free_async(CUdeviceptr pointer, CUstream stream) {
    count(Counted::mem_free_async);
    note({kiln::test::FakeOp::free_memory, stream, nullptr, pointer});
    if (!capturing(stream)) return CUDA_SUCCESS;
    // A free node may free only the graph's own allocations.
    const int made = g_captured_count.load();
    for (int k = 0; k < made && k < kMaxCapturedBlocks; ++k)
        if (g_captured_blocks[k].load() == pointer) return CUDA_SUCCESS;
    return refuse(CUDA_ERROR_INVALID_VALUE);
}
CUresult CUDAAPI mem_alloc(CUdeviceptr* pointer, std::size_t bytes) {
    return mem_alloc_async(pointer, bytes, nullptr);
}
CUresult CUDAAPI mem_free(CUdeviceptr) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get_default_mem_pool(CUmemoryPool* pool, CUdevice) {
    count(Counted::device_get_default_mem_pool);
    static char fake_pool;
    *pool = reinterpret_cast<CUmemoryPool>(&fake_pool);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI mem_pool_get_attribute(CUmemoryPool, CUmemPool_attribute, void* value) {
    std::memset(value, 0, sizeof(cuuint64_t));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI mem_pool_set_attribute(CUmemoryPool, CUmemPool_attribute, void*) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI memcpy_hto_d_async(CUdeviceptr, const void*, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI memcpy_dto_h_async(void* destination, CUdeviceptr, std::size_t bytes, CUstream) {
    std::memset(destination, 0, bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI memcpy_dto_d_async(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) {
    count(Counted::memcpy_dto_d_async);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI memset_d8_async(CUdeviceptr, unsigned char, std::size_t, CUstream) {
    count(Counted::memset_d8_async);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI memset_d16_async(CUdeviceptr, unsigned short, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI memset_d32_async(CUdeviceptr, unsigned, std::size_t, CUstream) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI module_load_data_ex(CUmodule* module, const void* image, unsigned, CUjit_option*,
                                     void**) {
    const auto* bytes = static_cast<const char*>(image);
    if (bytes[0] == '.' || bytes[0] == '/') { // PTX text
        auto* m = static_cast<FakeModule*>(std::calloc(1, sizeof(FakeModule)));
        m->size = std::strlen(bytes) + 1;
        m->image = static_cast<char*>(std::malloc(m->size));
        std::memcpy(m->image, bytes, m->size);
        m->ptx = true;
        *module = reinterpret_cast<CUmodule>(m);
        g_modules.fetch_add(1);
        return CUDA_SUCCESS;
    }
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
    g_modules.fetch_add(1);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI module_unload(CUmodule module) {
    auto* m = reinterpret_cast<FakeModule*>(module);
    while (FakeFunction* f = m->functions) {
        m->functions = f->next;
        std::free(f);
    }
    std::free(m->image);
    std::free(m);
    g_modules.fetch_sub(1);
    return CUDA_SUCCESS;
}
// A function lives as long as its module, as with a real driver.
CUresult CUDAAPI module_get_function(CUfunction* function, CUmodule module, const char* name) {
    auto* m = reinterpret_cast<FakeModule*>(module);
    auto* f = static_cast<FakeFunction*>(std::calloc(1, sizeof(FakeFunction)));
    if (!read_parameters(*m, name, *f)) {
        std::free(f);
        return CUDA_ERROR_NOT_FOUND;
    }
    f->next = m->functions;
    m->functions = f;
    *function = reinterpret_cast<CUfunction>(f);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI module_get_function_count(unsigned* count, CUmodule) {
    *count = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI func_get_name(const char** name, CUfunction function) {
    *name = reinterpret_cast<FakeFunction*>(function)->name;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI func_get_attribute(int* value, CUfunction_attribute attribute, CUfunction) {
    count(Counted::func_get_attribute);
    *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI func_set_attribute(CUfunction, CUfunction_attribute, int) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI func_get_param_info(CUfunction function, std::size_t index, std::size_t* offset,
                                     std::size_t* size) {
    const auto* f = reinterpret_cast<FakeFunction*>(function);
    if (index >= static_cast<std::size_t>(f->count)) return CUDA_ERROR_INVALID_VALUE;
    *offset = f->offsets[index];
    *size = f->sizes[index];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI launch_kernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned, CUstream,
                               void** params, void**) {
    count(Counted::launch_kernel);
    g_launches.fetch_add(1, std::memory_order_relaxed);
    // The launch as the kernel would see it, for tests that compare two launches' parameters.
    LastLaunch& last = t_last_launch;
    last.function = function;
    const unsigned dims[6] = {gx, gy, gz, bx, by, bz};
    std::memcpy(last.dims, dims, sizeof dims);
    last.size = 0;
    const auto* f = reinterpret_cast<const FakeFunction*>(function);
    for (int k = 0; f && params && k < f->count; ++k) {
        if (last.size + f->sizes[k] > sizeof last.bytes) break;
        std::memcpy(last.bytes + last.size, params[k], f->sizes[k]);
        last.size += f->sizes[k];
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI launch_cooperative_kernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                           unsigned, unsigned, unsigned, CUstream, void**) {
    g_launches.fetch_add(1, std::memory_order_relaxed);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI occupancy_max_active_blocks_per_multiprocessor(int* blocks, CUfunction, int,
                                                                std::size_t) {
    count(Counted::occupancy);
    *blocks = 4;
    return CUDA_SUCCESS;
}

} // namespace fake

struct Answer {
    const char* name;
    void* function;
};
template <class Function> Answer make_answer(const char* name, Function function) {
    return {name, reinterpret_cast<void*>(function)};
}

} // namespace

extern "C" {

/// Makes device 0's primary context active, as the CUDA runtime or another library would have
/// before Kiln's first call.
__attribute__((visibility("default"))) void kiln_fake_driver_activate_primary() {
    g_primary_active = true;
}

/// Modules loaded and not unloaded.
__attribute__((visibility("default"))) long long kiln_fake_driver_modules() {
    return g_modules.load();
}

/// Launches queued through this driver since the process started.
__attribute__((visibility("default"))) unsigned long long kiln_fake_driver_launches() {
    return g_launches.load();
}

/// The calling thread's last cuLaunchKernel: writes its grid then block extents to @p dims (6
/// values) and up to @p capacity bytes of its parameters, in order, to @p bytes; returns their
/// size (0 before any launch) and the function through @p function.
__attribute__((visibility("default"))) std::size_t
kiln_fake_driver_last_launch(unsigned char* bytes, std::size_t capacity, unsigned* dims,
                             void** function) {
    const LastLaunch& last = t_last_launch;
    std::memcpy(dims, last.dims, sizeof last.dims);
    *function = last.function;
    const std::size_t size = last.size < capacity ? last.size : capacity;
    std::memcpy(bytes, last.bytes, size);
    return last.size;
}

/// The descriptors of the last texture object made (zeros before any): its resource to
/// @p resource and its sampling to @p description.
__attribute__((visibility("default"))) void
kiln_fake_driver_last_texture(CUDA_RESOURCE_DESC* resource, CUDA_TEXTURE_DESC* description) {
    *resource = fake::g_texture_resource;
    *description = fake::g_texture_description;
}

/// The flags of the last cuGraphInstantiateWithFlags (all bits set before any).
__attribute__((visibility("default"))) unsigned long long
kiln_fake_driver_last_instantiate_flags() {
    return g_instantiate_flags.load();
}

/// The latest event records, waits and stream-ordered frees, oldest first: up to @p capacity
/// of them into @p ops; returns how many.
__attribute__((visibility("default"))) int kiln_fake_driver_ops(kiln::test::FakeOp* ops,
                                                                int capacity) {
    const std::lock_guard<std::mutex> lock(fake::g_ops_mutex);
    const unsigned long long kept =
        std::min<unsigned long long>(fake::g_ops_count, kiln::test::kFakeOpsKept);
    const int n = static_cast<int>(std::min<unsigned long long>(kept, capacity));
    for (int k = 0; k < n; ++k)
        ops[k] = fake::g_ops[(fake::g_ops_count - kept + k) % kiln::test::kFakeOpsKept];
    return n;
}

/// Calls of entry point @p name (one of kCounted) since the process started; 0 for another name.
__attribute__((visibility("default"))) unsigned long long kiln_fake_driver_calls(const char* name) {
    for (int k = 0; k < kCountedEntries; ++k)
        if (std::strcmp(name, kCounted[k]) == 0) return g_calls[k].load();
    return 0;
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
// {"cuName", the answer as cuName's own type}: a signature that drifts fails to compile.
#define KILN_FAKE_ANSWER(name, answer) make_answer<decltype(&::name)>(#name, &fake::answer)
    static const Answer answers[] = {
        KILN_FAKE_ANSWER(cuInit, init),
        KILN_FAKE_ANSWER(cuDriverGetVersion, driver_get_version),
        KILN_FAKE_ANSWER(cuGetErrorName, get_error_name),
        KILN_FAKE_ANSWER(cuGetErrorString, get_error_string),
        KILN_FAKE_ANSWER(cuDeviceGetCount, device_get_count),
        KILN_FAKE_ANSWER(cuDeviceGet, device_get),
        KILN_FAKE_ANSWER(cuDeviceGetName, device_get_name),
        KILN_FAKE_ANSWER(cuDeviceGetAttribute, device_get_attribute),
        KILN_FAKE_ANSWER(cuDeviceTotalMem, device_total_mem),
        KILN_FAKE_ANSWER(cuDevicePrimaryCtxRetain, device_primary_ctx_retain),
        KILN_FAKE_ANSWER(cuDevicePrimaryCtxRelease, device_primary_ctx_release),
        KILN_FAKE_ANSWER(cuDevicePrimaryCtxGetState, device_primary_ctx_get_state),
        KILN_FAKE_ANSWER(cuCtxGetCurrent, ctx_get_current),
        KILN_FAKE_ANSWER(cuCtxSetCurrent, ctx_set_current),
        KILN_FAKE_ANSWER(cuCtxGetDevice, ctx_get_device),
        KILN_FAKE_ANSWER(cuCtxSynchronize, ctx_synchronize),
        KILN_FAKE_ANSWER(cuStreamCreate, stream_create),
        KILN_FAKE_ANSWER(cuStreamDestroy, stream_destroy),
        KILN_FAKE_ANSWER(cuStreamSynchronize, stream_synchronize),
        KILN_FAKE_ANSWER(cuStreamQuery, stream_query),
        KILN_FAKE_ANSWER(cuStreamWaitEvent, stream_wait_event),
        KILN_FAKE_ANSWER(cuStreamGetId, stream_get_id),
        KILN_FAKE_ANSWER(cuEventCreate, event_create),
        KILN_FAKE_ANSWER(cuEventDestroy, event_destroy),
        KILN_FAKE_ANSWER(cuEventRecord, event_record),
        KILN_FAKE_ANSWER(cuEventRecordWithFlags, event_record_with_flags),
        KILN_FAKE_ANSWER(cuEventSynchronize, event_synchronize),
        KILN_FAKE_ANSWER(cuEventQuery, event_query),
        KILN_FAKE_ANSWER(cuEventElapsedTime, event_elapsed_time),
        KILN_FAKE_ANSWER(cuStreamIsCapturing, stream_is_capturing),
        KILN_FAKE_ANSWER(cuStreamBeginCapture, stream_begin_capture),
        KILN_FAKE_ANSWER(cuStreamEndCapture, stream_end_capture),
        KILN_FAKE_ANSWER(cuGraphDestroy, graph_destroy),
        KILN_FAKE_ANSWER(cuGraphInstantiateWithFlags, graph_instantiate_with_flags),
        KILN_FAKE_ANSWER(cuGraphLaunch, graph_launch),
        KILN_FAKE_ANSWER(cuGraphExecDestroy, graph_exec_destroy),
        KILN_FAKE_ANSWER(cuProfilerStart, profiler_start),
        KILN_FAKE_ANSWER(cuProfilerStop, profiler_stop),
        KILN_FAKE_ANSWER(cuMemAllocAsync, mem_alloc_async),
        KILN_FAKE_ANSWER(cuMemFreeAsync, mem_free_async),
        KILN_FAKE_ANSWER(cuMemAlloc, mem_alloc),
        KILN_FAKE_ANSWER(cuMemFree, mem_free),
        KILN_FAKE_ANSWER(cuDeviceGetDefaultMemPool, device_get_default_mem_pool),
        KILN_FAKE_ANSWER(cuMemPoolGetAttribute, mem_pool_get_attribute),
        KILN_FAKE_ANSWER(cuMemPoolSetAttribute, mem_pool_set_attribute),
        KILN_FAKE_ANSWER(cuMemcpyHtoDAsync, memcpy_hto_d_async),
        KILN_FAKE_ANSWER(cuMemcpyDtoHAsync, memcpy_dto_h_async),
        KILN_FAKE_ANSWER(cuMemcpyDtoDAsync, memcpy_dto_d_async),
        KILN_FAKE_ANSWER(cuMemsetD8Async, memset_d8_async),
        KILN_FAKE_ANSWER(cuMemsetD16Async, memset_d16_async),
        KILN_FAKE_ANSWER(cuMemsetD32Async, memset_d32_async),
        KILN_FAKE_ANSWER(cuModuleLoadDataEx, module_load_data_ex),
        KILN_FAKE_ANSWER(cuModuleUnload, module_unload),
        KILN_FAKE_ANSWER(cuModuleGetFunction, module_get_function),
        KILN_FAKE_ANSWER(cuModuleGetFunctionCount, module_get_function_count),
        KILN_FAKE_ANSWER(cuFuncGetName, func_get_name),
        KILN_FAKE_ANSWER(cuFuncGetAttribute, func_get_attribute),
        KILN_FAKE_ANSWER(cuFuncSetAttribute, func_set_attribute),
        KILN_FAKE_ANSWER(cuFuncGetParamInfo, func_get_param_info),
        KILN_FAKE_ANSWER(cuTexObjectCreate, tex_object_create),
        KILN_FAKE_ANSWER(cuTexObjectDestroy, tex_object_destroy),
        KILN_FAKE_ANSWER(cuLaunchKernel, launch_kernel),
        KILN_FAKE_ANSWER(cuLaunchCooperativeKernel, launch_cooperative_kernel),
        KILN_FAKE_ANSWER(cuOccupancyMaxActiveBlocksPerMultiprocessor,
                         occupancy_max_active_blocks_per_multiprocessor),
    };
#undef KILN_FAKE_ANSWER
    for (const Answer& answer : answers)
        if (std::strcmp(symbol, answer.name) == 0) *function = answer.function;
    if (status)
        *status = *function ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *function ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

} // extern "C"
