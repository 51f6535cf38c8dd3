#include "repeat_call.hpp"

#include "array/peer_copy.hpp"
#include "reduction_workspace.hpp"
#include "scalar_overflow.hpp"

#include <atomic>
#include <cstring>
#include <memory>

namespace kiln::detail {

namespace {

constexpr std::uint64_t kArrayTag = 1, kScalarTag = 2;

// The last calls of one thread. Eight: a loop over a handful of kernels keeps them all, and a
// lookup compares the first word (the kernel's id) of each.
struct RepeatTable {
    static constexpr std::size_t kSlots = 8;
    RepeatLaunch slots[kSlots];
    std::size_t next = 0;
};

// Made by the thread's first remembered call, so that a lookup in a thread that never
// remembers anything allocates nothing.
thread_local std::unique_ptr<RepeatTable> t_table;

} // namespace

std::uint64_t new_kernel_id() noexcept {
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

void CallFingerprint::start(std::uint64_t kernel, CUcontext context, std::size_t count) noexcept {
    m_count = 0;
    add(kernel);
    add(reinterpret_cast<std::uintptr_t>(context));
    add(count);
}

bool CallFingerprint::args(const Arg* args, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
        const Arg& arg = args[k];
        if (!arg.is_array()) {
            const Scalar& s = arg.scalar();
            if (!add(kScalarTag | static_cast<std::uint64_t>(s.dtype()) << 8 |
                     std::uint64_t{s.is_weak()} << 16 |
                     static_cast<std::uint64_t>(arg.handle()) << 24))
                return false;
            continue;
        }
        const Array& a = arg.array();
        const int ndim = a.ndim();
        // The device as the argument check sees it (+1: none is -1).
        const auto device = static_cast<std::uint32_t>(operand_device(a) + 1);
        if (!add(kArrayTag | static_cast<std::uint64_t>(a.dtype()) << 8 |
                 static_cast<std::uint64_t>(ndim) << 16 | (a.data() & 15u) << 24 |
                 std::uint64_t{device} << 32))
            return false;
        for (int d = 0; d < ndim; ++d)
            if (!add(static_cast<std::uint64_t>(a.shape()[d])) ||
                !add(static_cast<std::uint64_t>(a.strides()[d])))
                return false;
    }
    return true;
}

bool CallFingerprint::operator==(const CallFingerprint& other) const noexcept {
    return m_count == other.m_count &&
           std::memcmp(m_words, other.m_words, m_count * sizeof(std::uint64_t)) == 0;
}

void record_launch(RepeatLaunch& record, const Function& f, Dim3 grid, Dim3 block,
                   const Operands& ops, const std::uint16_t* offsets, ParamWriter& w,
                   std::size_t size) {
    record.function = nullptr;
    if (size > RepeatLaunch::kMaxParamBytes) return;
    for (std::size_t k = 0; k < ops.count; ++k) {
        record.dtypes[k] = ops.types[k].dtype;
        record.offsets[k] = offsets[k];
        if (k >= ops.given) {
            const Array& out = ops.arrays[k];
            // A repeat's outputs must be as aligned as these: the layout chose its vector width
            // for them (the driver's pool gives 256 bytes or more).
            if (out.data() & 15u) return;
            record.output_shape = out.shape();
        }
    }
    record.grid = grid;
    record.block = block;
    record.inputs = static_cast<std::uint8_t>(ops.inputs);
    record.given = static_cast<std::uint8_t>(ops.given);
    record.count = static_cast<std::uint8_t>(ops.count);
    record.param_size = static_cast<std::uint16_t>(size);
    std::memcpy(record.params, w.data(), size);
    record.function = &f;
}

bool repeat_launch(const RepeatLaunch& r, const KernelParams& params, const Arg* args,
                   CUcontext context, StreamRef stream, bool return_outputs, Outputs& outputs) {
    alignas(16) unsigned char packed[RepeatLaunch::kMaxParamBytes];
    std::memcpy(packed, r.params, r.param_size);
    for (std::size_t k = 0; k < r.given; ++k) {
        unsigned char* at = packed + r.offsets[k];
        if (args[k].is_array()) {
            const std::uint64_t address = args[k].array().data();
            std::memcpy(at, &address, sizeof address);
            continue;
        }
        const Scalar& value = args[k].scalar();
        check_fits(value, r.dtypes[k], params.who, "parameter", params[k].name);
        ParamWriter::write_scalar(value, r.dtypes[k], at);
    }
    // The outputs in order: those given, then those made here (the caller drops them all when
    // this returns false; without return values they go only after the launch is queued).
    if (return_outputs)
        for (std::size_t k = r.inputs; k < r.given; ++k)
            outputs.push_back(args[k].is_array() ? args[k].array() : Array());
    for (std::size_t k = r.given; k < r.count; ++k) {
        outputs.push_back(empty(r.output_shape, r.dtypes[k], stream));
        const std::uint64_t address = outputs[outputs.size() - 1].data();
        if (address & 15u) return false;
        std::memcpy(packed + r.offsets[k], &address, sizeof address);
    }
    WorkspaceLease lease;
    if (r.partial_bytes || r.counters) {
        lease = lease_workspace(context, stream, r.partial_bytes, r.counters);
        std::memcpy(packed + r.partials_offset, &lease.partials, sizeof lease.partials);
        std::memcpy(packed + r.counters_offset, &lease.counters, sizeof lease.counters);
    }
    void* pointers[] = {packed};
    const std::size_t size = r.param_size;
    r.function->launch_packed(LaunchConfig{r.grid, r.block, 0, stream}, pointers, &size, 1);
    if (!return_outputs) outputs = Outputs();
    return true;
}

bool has_repeats() noexcept {
    return t_table != nullptr;
}

const RepeatLaunch* find_repeat(const CallFingerprint& fingerprint) noexcept {
    const RepeatTable* table = t_table.get();
    if (!table) return nullptr;
    for (const RepeatLaunch& slot : table->slots)
        if (slot.function && slot.fingerprint == fingerprint) return &slot;
    return nullptr;
}

void remember_repeat(const RepeatLaunch& launch) {
    if (!t_table) t_table = std::make_unique<RepeatTable>();
    RepeatTable& table = *t_table;
    for (RepeatLaunch& slot : table.slots)
        if (slot.function && slot.fingerprint == launch.fingerprint) {
            slot = launch;
            return;
        }
    table.slots[table.next] = launch;
    table.next = (table.next + 1) % RepeatTable::kSlots;
}

} // namespace kiln::detail
