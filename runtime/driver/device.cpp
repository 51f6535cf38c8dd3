#include "kiln/device.hpp"

#include "driver.hpp"
#include "hooks.hpp"

#include <array>
#include <memory>
#include <mutex>

namespace kiln {

namespace {

constexpr int kMaxDevices = 64;

// Primary contexts retained once per device and kept for the process: releasing them at exit
// would race with other libraries' teardown.
struct Primaries {
    std::array<CUcontext, kMaxDevices> contexts{};
    std::mutex mutex;
};
Primaries& primaries() {
    static Primaries p;
    return p;
}

CUcontext retain_primary(CUdevice device, int ordinal) {
    Primaries& p = primaries();
    std::lock_guard<std::mutex> lock(p.mutex);
    CUcontext& context = p.contexts.at(static_cast<std::size_t>(ordinal));
    if (context) return context;
    // Inactive before the retain: Kiln makes the context, and nothing can be in it yet.
    unsigned flags = 0;
    int active = 1;
    const bool making =
        detail::driver().cuDevicePrimaryCtxGetState(device, &flags, &active) == CUDA_SUCCESS &&
        !active;
    KILN_CU(cuDevicePrimaryCtxRetain(&context, device));
    // Under the lock (0.16 ms, once per device): no other thread gets the context from Kiln
    // before the warm-up, whose wait on the default stream would otherwise include its work.
    if (making) detail::context_made(context); // compile/'s warm-up
    return context;
}

} // namespace

Device::Device(int ordinal)
    : m_ordinal(ordinal)
    , m_device(0) {
    const int n = count();
    if (ordinal < 0 || ordinal >= n || ordinal >= kMaxDevices)
        throw ArgumentError("device ordinal " + std::to_string(ordinal) +
                            " is out of range: " + std::to_string(n) + " device(s) visible");
    KILN_CU(cuDeviceGet(&m_device, ordinal));
}

Device Device::current() {
    CUcontext context = detail::current_context();
    (void)context;
    CUdevice device = 0;
    KILN_CU(cuCtxGetDevice(&device));
    // CUdevice is the ordinal for the driver's visible devices.
    return Device(static_cast<int>(device));
}

int Device::count() {
    int n = 0;
    KILN_CU(cuDeviceGetCount(&n));
    return n;
}

bool Device::available(std::string* reason) {
    return detail::driver_available(reason);
}

std::string Device::name() const {
    char buffer[256] = {};
    KILN_CU(cuDeviceGetName(buffer, sizeof buffer, m_device));
    return buffer;
}

int Device::attribute(CUdevice_attribute attribute) const {
    int value = 0;
    KILN_CU(cuDeviceGetAttribute(&value, attribute, m_device));
    return value;
}

int Device::compute_capability_major() const {
    return attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
}

int Device::compute_capability_minor() const {
    return attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
}

std::string Device::arch() const {
    return "sm_" + std::to_string(compute_capability_major()) +
           std::to_string(compute_capability_minor());
}

std::size_t Device::total_memory() const {
    std::size_t bytes = 0;
    KILN_CU(cuDeviceTotalMem(&bytes, m_device));
    return bytes;
}

int Device::multiprocessor_count() const {
    return attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
}

void Device::make_current() const {
    const CUcontext context = retain_primary(m_device, m_ordinal);
    KILN_CU(cuCtxSetCurrent(context));
    detail::note_current_context(context);
}

void Device::synchronize() const {
    CUcontext previous = nullptr;
    KILN_CU(cuCtxGetCurrent(&previous));
    make_current();
    const CUresult result = detail::driver().cuCtxSynchronize();
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "kiln::Device::synchronize: cuCtxSynchronize()", __FILE__,
                                 __LINE__);
    if (previous) {
        KILN_CU(cuCtxSetCurrent(previous));
        detail::note_current_context(previous);
    }
}

namespace detail {

namespace {

// The calling thread's call in progress: how many CallContextScopes are open, and the current
// context once asked (null: not asked yet, or forgotten). Outside a scope nothing is kept: an
// application may switch contexts between calls.
struct KnownContext {
    int depth = 0;
    CUcontext context = nullptr;
};
thread_local KnownContext t_known;

} // namespace

CallContextScope::CallContextScope() noexcept {
    ++t_known.depth;
}

// Kiln's own switches inside the scope (a DeviceGuard's restore included) kept the known context
// right, so a nested scope leaves it as it is; the outermost forgets it.
CallContextScope::~CallContextScope() {
    if (--t_known.depth == 0) t_known.context = nullptr;
}

void note_current_context(CUcontext context) noexcept {
    if (t_known.depth) t_known.context = context;
}

void forget_current_context() noexcept {
    t_known.context = nullptr;
}

CUcontext current_context_or_null() noexcept {
    if (t_known.context) return t_known.context;
    CUcontext context = nullptr;
    if (!driver_available() || driver().cuCtxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
    return context;
}

CUcontext current_context() {
    if (t_known.context) return t_known.context; // set only inside a scope
    CUcontext context = nullptr;
    KILN_CU(cuCtxGetCurrent(&context));
    if (!context) {
        Device(0).make_current();
        KILN_CU(cuCtxGetCurrent(&context));
        note_current_context(context);
        return context;
    }
    // The application's context. Where its device's primary context is active (the one the CUDA
    // runtime and most frameworks share, and most likely this one), Kiln holds a reference too:
    // otherwise the application releasing its own would destroy the context under Kiln's
    // modules, memory and streams. Checked once per thread and context.
    thread_local CUcontext checked = nullptr;
    if (context != checked) {
        CUdevice device = 0;
        KILN_CU(cuCtxGetDevice(&device));
        unsigned flags = 0;
        int active = 0;
        KILN_CU(cuDevicePrimaryCtxGetState(device, &flags, &active));
        if (active) retain_primary(device, static_cast<int>(device));
        checked = context;
    }
    note_current_context(context);
    return context;
}

int current_device_ordinal() {
    const CUcontext context = current_context();
    // CUdevice is the ordinal for the driver's visible devices. Cached per thread and context,
    // as current_context() is: a context's device never changes.
    thread_local CUcontext cached_context = nullptr;
    thread_local int cached_ordinal = -1;
    if (context != cached_context) {
        CUdevice device = 0;
        KILN_CU(cuCtxGetDevice(&device));
        cached_ordinal = static_cast<int>(device);
        cached_context = context;
    }
    return cached_ordinal;
}

CUcontext primary_context(int ordinal) {
    const Device device(ordinal);
    return retain_primary(device.handle(), ordinal);
}

void synchronize_devices() {
    const CUcontext current = current_context();
    KILN_CU(cuCtxSynchronize());
    std::array<CUcontext, kMaxDevices> contexts{};
    {
        Primaries& p = primaries();
        std::lock_guard<std::mutex> lock(p.mutex);
        contexts = p.contexts;
    }
    struct Restore {
        CUcontext context;
        ~Restore() {
            driver().cuCtxSetCurrent(context);
            note_current_context(context);
        }
    } restore{current};
    for (CUcontext context : contexts)
        if (context && context != current) {
            KILN_CU(cuCtxSetCurrent(context));
            note_current_context(context);
            KILN_CU(cuCtxSynchronize());
        }
}

int visible_device_count() noexcept {
    static const int count = [] {
        if (!driver_available()) return 0;
        int n = 0;
        return driver().cuDeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
    }();
    return count;
}

} // namespace detail

} // namespace kiln
