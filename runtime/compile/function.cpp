#include "driver/activity_hook.hpp"
#include "driver/driver.hpp"
#include "kiln/module.hpp"

#include <mutex>
#include <sstream>

namespace kiln {

namespace {

[[noreturn]] void bad_launch(const std::string& kernel, const std::string& what) {
    throw ArgumentError("cannot launch kernel '" + kernel + "': " + what);
}

std::string dims(Dim3 d) {
    std::ostringstream out;
    out << '(' << d.x << ", " << d.y << ", " << d.z << ')';
    return out.str();
}

// @p whose: "this kernel" or "the device".
[[noreturn]] void too_many_threads(const std::string& kernel, Dim3 block,
                                   unsigned long long threads, const char* whose, int limit) {
    bad_launch(kernel, "block " + dims(block) + " has " + std::to_string(threads) + " threads; " +
                           whose + " allows at most " + std::to_string(limit));
}

CUresult enqueue(CUfunction function, const LaunchConfig& c, void** args) {
    const detail::Driver& d = detail::driver();
    return c.cooperative
               ? d.cuLaunchCooperativeKernel(
                     function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
                     static_cast<unsigned>(c.shared_memory), c.stream.get(), args)
               : d.cuLaunchKernel(function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y,
                                  c.block.z, static_cast<unsigned>(c.shared_memory), c.stream.get(),
                                  args, nullptr);
}

// Only while activity timing or NVTX launch ranges are on: kept out of line so the plain launch
// stays as it was.
[[gnu::noinline]] CUresult enqueue_observed(CUfunction function, const std::string& name,
                                            const LaunchConfig& c, void** args) {
    detail::ObservedActivity observed(Activity::kernel, name, 0, c.stream);
    const CUresult result = enqueue(function, c, args);
    if (result == CUDA_SUCCESS) observed.done();
    return result;
}

} // namespace

const std::string& Function::name() const {
    return m_state->name;
}
std::size_t Function::parameter_count() const {
    return m_state->parameter_sizes.size();
}
const std::vector<std::size_t>& Function::parameter_sizes() const {
    return m_state->parameter_sizes;
}
int Function::max_threads_per_block() const {
    int known = m_state->max_threads_per_block.load(std::memory_order_relaxed);
    if (known == 0) {
        KILN_CU(
            cuFuncGetAttribute(&known, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, m_state->function));
        m_state->max_threads_per_block.store(known, std::memory_order_relaxed);
    }
    return known;
}

int Function::max_active_blocks_per_multiprocessor(int block_threads,
                                                   std::size_t shared_memory) const {
    int blocks = 0;
    KILN_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, m_state->function, block_threads,
                                                        shared_memory));
    return blocks;
}

KernelAttributes Function::attributes() const {
    if (!m_state) throw ArgumentError("attributes of an empty kiln::Function");
    const CUfunction f = m_state->function;
    auto get = [f](CUfunction_attribute attribute) {
        int value = 0;
        KILN_CU(cuFuncGetAttribute(&value, attribute, f));
        return value;
    };
    // The cluster attributes are newer than the others: a driver or device without them reports
    // none rather than failing the whole read.
    auto get_optional = [f](CUfunction_attribute attribute) {
        int value = 0;
        if (detail::driver().cuFuncGetAttribute(&value, attribute, f) != CUDA_SUCCESS) return 0;
        return value;
    };
    auto bytes = [](int value) { return static_cast<std::size_t>(value < 0 ? 0 : value); };
    KernelAttributes a;
    a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    a.shared_size_bytes = bytes(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    a.const_size_bytes = bytes(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
    a.local_size_bytes = bytes(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
    a.num_regs = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
    a.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
    a.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    a.cache_mode_ca = get(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA) != 0;
    a.max_dynamic_shared_size_bytes = bytes(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
    a.preferred_shared_memory_carveout = get(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
    a.cluster_size_must_be_set = get_optional(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) != 0;
    a.required_cluster_width = get_optional(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH);
    a.required_cluster_height = get_optional(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT);
    a.required_cluster_depth = get_optional(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH);
    a.non_portable_cluster_size_allowed =
        get_optional(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) != 0;
    a.cluster_scheduling_policy_preference =
        get_optional(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
    return a;
}

void Function::set_max_dynamic_shared_size_bytes(int bytes) const {
    if (!m_state)
        throw ArgumentError("set_max_dynamic_shared_size_bytes on an empty kiln::Function");
    const State& s = *m_state;
    if (bytes < 0 || bytes > s.max_shared_optin)
        throw ArgumentError("kernel '" + s.name + "': max dynamic shared memory " +
                            std::to_string(bytes) + " bytes is outside 0.." +
                            std::to_string(s.max_shared_optin) + ", what the device allows");
    KILN_CU(cuFuncSetAttribute(s.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
    // The caller's limit replaces the one launches raise on their own, lower or higher.
    s.shared_limit.store(static_cast<std::size_t>(bytes));
}

void Function::set_preferred_shared_memory_carveout(int percent) const {
    if (!m_state)
        throw ArgumentError("set_preferred_shared_memory_carveout on an empty kiln::Function");
    if (percent < -1 || percent > 100)
        throw ArgumentError("kernel '" + m_state->name + "': a shared memory carveout of " +
                            std::to_string(percent) +
                            " is not a percentage: give 0 to 100, or -1 for no preference");
    KILN_CU(cuFuncSetAttribute(m_state->function,
                               CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent));
}

// Every check is an integer comparison against values read when the kernel was loaded (its own
// thread limit once known), so a correct launch pays a few nanoseconds for never being a silent
// wrong launch.
void Function::check_launch(const LaunchConfig& c, const std::size_t* sizes,
                            std::size_t count) const {
    const State& s = *m_state;
    if (count != s.parameter_sizes.size())
        bad_launch(s.name, "it takes " + std::to_string(s.parameter_sizes.size()) +
                               " argument(s), " + std::to_string(count) + " were given");
    for (std::size_t i = 0; i < count; ++i)
        if (sizes[i] != s.parameter_sizes[i])
            bad_launch(s.name, "argument " + std::to_string(i) + " is " + std::to_string(sizes[i]) +
                                   " bytes but parameter " + std::to_string(i) + " takes " +
                                   std::to_string(s.parameter_sizes[i]) +
                                   " bytes: pass a value of the parameter's exact type");
    if (c.device >= 0 && c.device != s.device)
        bad_launch(s.name, "it is loaded on GPU " + std::to_string(s.device) +
                               " but the launch asks for GPU " + std::to_string(c.device) +
                               ": load it on that device (RawKernel does, per device)");
    const Dim3 b = c.block, g = c.grid;
    if (b.x == 0 || b.y == 0 || b.z == 0)
        bad_launch(s.name, "block " + dims(b) + " has a zero dimension");
    if (g.x == 0 || g.y == 0 || g.z == 0)
        bad_launch(s.name, "grid " + dims(g) + " has a zero dimension");
    if (b.x > unsigned(s.max_block[0]) || b.y > unsigned(s.max_block[1]) ||
        b.z > unsigned(s.max_block[2]))
        bad_launch(s.name, "block " + dims(b) + " exceeds the device's limits (" +
                               std::to_string(s.max_block[0]) + ", " +
                               std::to_string(s.max_block[1]) + ", " +
                               std::to_string(s.max_block[2]) + ")");
    const unsigned long long threads = 1ull * b.x * b.y * b.z;
    if (threads > static_cast<unsigned long long>(s.max_block_threads))
        too_many_threads(s.name, b, threads, "the device", s.max_block_threads);
    // The kernel's own limit, once known (a cooperative launch asks for it: it sizes the grid
    // by it); otherwise a launch over it fails in the driver and explain_failed_launch() says why.
    const int kernel_limit = c.cooperative
                                 ? max_threads_per_block()
                                 : s.max_threads_per_block.load(std::memory_order_relaxed);
    if (kernel_limit != 0 && threads > static_cast<unsigned long long>(kernel_limit))
        too_many_threads(s.name, b, threads, "this kernel", kernel_limit);
    if (g.x > unsigned(s.max_grid[0]) || g.y > unsigned(s.max_grid[1]) ||
        g.z > unsigned(s.max_grid[2]))
        bad_launch(s.name, "grid " + dims(g) + " exceeds the device's limits (" +
                               std::to_string(s.max_grid[0]) + ", " +
                               std::to_string(s.max_grid[1]) + ", " +
                               std::to_string(s.max_grid[2]) + ")");
    if (c.shared_memory > s.shared_limit.load(std::memory_order_relaxed))
        raise_shared_limit(c.shared_memory);
    if (c.cooperative) {
        const int per_sm =
            max_active_blocks_per_multiprocessor(static_cast<int>(threads), c.shared_memory);
        const unsigned long long fit = 1ull * per_sm * s.multiprocessors;
        if (1ull * g.x * g.y * g.z > fit)
            bad_launch(s.name, "a cooperative grid " + dims(g) +
                                   " must fit on the device at once: "
                                   "at most " +
                                   std::to_string(fit) + " blocks of this size");
    }
}

void Function::raise_shared_limit(std::size_t bytes) const {
    const State& s = *m_state;
    if (bytes > static_cast<std::size_t>(s.max_shared_optin))
        bad_launch(s.name, std::to_string(bytes) +
                               " bytes of dynamic shared memory asked for; the "
                               "device allows at most " +
                               std::to_string(s.max_shared_optin));
    KILN_CU(cuFuncSetAttribute(s.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(bytes)));
    // Only ever raised: a concurrent smaller request must not lower what another launch needs.
    std::size_t current = s.shared_limit.load();
    while (current < bytes && !s.shared_limit.compare_exchange_weak(current, bytes)) {
    }
}

void Function::launch_packed(const LaunchConfig& c, void** args, const std::size_t* sizes,
                             std::size_t count) const {
    if (!m_state) throw ArgumentError("launch of an empty kiln::Function");
    check_launch(c, sizes, count);
    const CUresult result = detail::observing()
                                ? enqueue_observed(m_state->function, m_state->name, c, args)
                                : enqueue(m_state->function, c, args);
    if (result != CUDA_SUCCESS) {
        if (result == CUDA_ERROR_INVALID_VALUE || result == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
            explain_failed_launch(c);
        detail::throw_cuda_error(result,
                                 c.cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel",
                                 __FILE__, __LINE__);
    }
}

// A launch the driver refused: a block over the kernel's own limit is the caller's mistake,
// reported as the checks before a launch report theirs (and checked before every later launch).
void Function::explain_failed_launch(const LaunchConfig& c) const {
    const unsigned long long threads = 1ull * c.block.x * c.block.y * c.block.z;
    const int limit = max_threads_per_block();
    if (threads > static_cast<unsigned long long>(limit))
        too_many_threads(m_state->name, c.block, threads, "this kernel", limit);
}

} // namespace kiln
