#include "kiln/reduction_kernel.hpp"

#include "core/front_end_steps.hpp"
#include "core/index_math.hpp"
#include "core/kernel_description.hpp"
#include "core/launch_tuner.hpp"
#include "core/operand_devices.hpp"
#include "core/operands.hpp"
#include "core/param_writer.hpp"
#include "core/reduction_workspace.hpp"
#include "core/repeat_call.hpp"
#include "core/specialization.hpp"
#include "core/specialization_memo.hpp"
#include "driver/driver_trace.hpp"
#include "driver/per_context_cache.hpp"
#include "driver/prepare_steps.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"
#include "kiln/module.hpp"
#include "reduction_codegen.hpp"
#include "reduction_kernel_access.hpp"
#include "reduction_plan.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <optional>

// ReductionKernel is a thin front end over the generated-kernel core (operands, the source
// writer, specialization): what is its own is its spec (map, reduce and post-map expressions, an
// identity, a reduce type), axes and keepdims, its layouts (group, outer), the loop it generates
// and the workspace that combines partial results across blocks.

namespace kiln {

using detail::ceil_div;
using detail::OperandKind;
using detail::OperandSet;
using detail::ReduceLayout;
using detail::ReductionPlan;

namespace {

// Tests plan source_for's calls as on a device of this many multiprocessors (0: none).
std::atomic<int> g_planning_multiprocessors{0};

// Layout choices that reach the source (a warp or a block per output, the block's width) count
// outputs against this fixed number of multiprocessors (an H100 SXM's), never the device's: the
// source may depend only on the call, which the cache key records, so a kernel compiled offline
// is the one a call on any GPU of the architecture asks for. The grid uses the real count.
constexpr std::int64_t kLayoutMultiprocessors = 132;
constexpr int kUnknownSlotBytes = 64; // partial-result slot for reduce types Kiln cannot size

bool blank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isspace(c); });
}

// One call's decisions before a kernel is chosen: no strings, no heap.
struct PlannedReduction {
    ReductionPlan plan{};
    detail::Operands ops;
    detail::OperandStrides strides; // elements: inputs kept+reduced, outputs kept
    Dims kshape, rshape;
    std::int64_t n_in = 0, n_out = 0, n_red = 0, split = 1;
    std::size_t partial_bytes = 0, counters = 0;
    Dim3 grid, block;
    int multiprocessors = 0;         // the device's, which sizes the grid (calls only)
    const ReduceCall* how = nullptr; // for the description, when it compiles
};

// What a tuned launch is looked up by: the plan with its default block, and the shape class (the
// size classes of the outputs and of the reduction).
struct ReductionTuneKey {
    ReductionPlan plan;
    std::uint32_t out_class = 0, red_class = 0;
    bool operator==(const ReductionTuneKey& o) const noexcept {
        return out_class == o.out_class && red_class == o.red_class && plan == o.plan;
    }
};
struct ReductionTuneKeyHash {
    std::size_t operator()(const ReductionTuneKey& key) const noexcept {
        return detail::SignatureHash<ReductionPlan>{}(key.plan) ^
               static_cast<std::size_t>((key.out_class * 67ull + key.red_class) *
                                        0x9e3779b97f4a7c15ull);
    }
};

// The current device's multiprocessor count, which sizes the grid.
int multiprocessors(CUcontext context) {
    static detail::PerContextCache<int> counts;
    return counts.get(context, {}, [] { return Device::current().multiprocessor_count(); });
}

// The dtype a reduce type names, or nullopt where it names none Kiln knows (a struct, a pair).
std::optional<DType> reduce_type_dtype(const std::string& reduce_type) {
    // Not a dtype name, without the exception: a process's first throw costs ~0.1 ms (the
    // unwinder's first use), which the first call of every default ReductionKernel paid.
    if (reduce_type.empty()) return std::nullopt;
    try {
        return parse_dtype(reduce_type);
    } catch (const ArgumentError&) {
        return std::nullopt;
    }
}

// sizeof(kiln_acc) for reduce types Kiln knows, else a generous slot the kernel checks.
int slot_bytes(std::optional<DType> dtype, bool has_identity) {
    if (!dtype) return kUnknownSlotBytes;
    const std::size_t size = itemsize(*dtype), align = detail::device_alignment(*dtype);
    const std::size_t acc = has_identity ? size : (size + 1 + align - 1) / align * align;
    return static_cast<int>((acc + 3) / 4 * 4);
}

} // namespace

struct ReductionKernel::Impl {
    explicit Impl(detail::ReductionDefinition definition)
        : def(std::move(definition)) {}

    detail::ReductionDefinition def;
    const std::uint64_t id = detail::new_kernel_id(); // this kernel in threads' repeat caches
    // The reduce type parsed once, not per call (nullopt: not a dtype name).
    std::optional<DType> named_reduce_dtype = reduce_type_dtype(def.reduce_type);
    std::vector<std::string> nvrtc_options;
    bool reduce_dims = true, empty_is_error = false, tune = false;

    struct Loaded {
        Function function;
        /// Resident blocks per multiprocessor, which sizes a split. Asked of the driver at load
        /// only for a plan that can split: an unsplit plan's grid does not depend on it, and the
        /// query cost a fresh process's first reduction call 10 us on an H200. Otherwise 0, and
        /// occupancy() asks when the tuner needs it.
        int blocks_per_multiprocessor;
        int occupancy(const ReductionPlan& plan) const {
            return blocks_per_multiprocessor > 0
                       ? blocks_per_multiprocessor
                       : function.max_active_blocks_per_multiprocessor(plan.block_x * plan.block_y);
        }
    };
    // The loaded specializations, per context and signature.
    mutable detail::PerContextCache<Loaded, ReductionPlan, detail::SignatureHash<ReductionPlan>>
        functions;
    // Tuned launches, per context, plan and shape class.
    mutable detail::TunedLaunches<ReductionTuneKey, ReductionTuneKeyHash> tunings;

    const detail::KernelParams& params() const noexcept { return def.params; }
    void shape_call(const Arg* args, std::size_t count, const ReduceCall& how, bool allocate,
                    PlannedReduction& p) const;
    void choose_layout(PlannedReduction& p, const std::array<bool, kMaxDims>& reduced,
                       const Dims& full_shape, bool keepdims) const;
    detail::GeneratedSource source(const PlannedReduction& p) const {
        return detail::generate_reduction(def, p.plan, p.ops.bindings);
    }
    std::string describe(const PlannedReduction& p) const;
    void plan_only(const Arg* args, std::size_t count, const ReduceCall& how,
                   PlannedReduction& p) const {
        p.multiprocessors = g_planning_multiprocessors.load(std::memory_order_relaxed);
        shape_call(args, count, how, /*allocate=*/false, p);
    }
    // Everything that decides source(p) for @p arch (specialization_memo.hpp).
    std::optional<cache::Key> signature(const PlannedReduction& p, const std::string& arch) const {
        return detail::MemoSignature("reduction", def.params, nvrtc_options, arch)
            .text("map", def.map_expr)
            .text("reduce", def.reduce_expr)
            .text("post-map", def.post_map_expr)
            .text("identity", def.identity)
            .text("preamble", def.preamble)
            .text("reduce-type", def.reduce_type)
            .bytes("plan", &p.plan, p.plan.used_bytes())
            .finish();
    }
    const Loaded& function(const PlannedReduction& p, CUcontext context) const;
    void size_launch(PlannedReduction& p, int blocks_per_multiprocessor) const;
    // Launches @p p; with @p record, also writes there what a repeat of the call needs.
    void launch(const PlannedReduction& p, const Function& f, CUcontext context, StreamRef stream,
                detail::RepeatLaunch* record = nullptr) const;
    // The fingerprint of a call that may be repeated from the repeat cache (false: never cached).
    bool fingerprint(const Arg* args, std::size_t count, const ReduceCall& how, CUcontext context,
                     detail::CallFingerprint& print) const;
    // The tuned block and grid for @p p's plan and shape class (tuned on first use); @p loaded is
    // the untuned specialization, sized.
    const Loaded& apply_tuning(PlannedReduction& p, const Loaded& loaded, CUcontext context,
                               StreamRef stream) const;
    detail::TunedLaunch tune_launch(const PlannedReduction& p, CUcontext context,
                                    StreamRef stream) const;
};

namespace {

// An unsplit kernel's threads start at vector 0 to @p step - 1 of each output's @p vectors and
// step by @p step; the unrolled loop takes `unroll` steps at once, so with no more than unroll - 1
// steps' worth of vectors no thread ever enters it. Such a plan keeps only the rolled loop: the
// same loads and reduce steps (less the merges of never-used accumulators), without a dead copy of
// the body that costs NVRTC a fifth of the kernel's compile.
void keep_unrolled_loop_only_if_entered(ReductionPlan& plan, std::int64_t vectors, int step) {
    if (vectors <= std::int64_t{plan.unroll - 1} * step) plan.unroll = 1;
}

// Columns of fewer rows than this get a thread per column (times vec) that reads every row.
constexpr std::int64_t kFewRows = 32;

// Columns of few rows (axis 0 of a (4, N) array): 8 rows of threads a block left most rows idle
// and each thread with one or two loads, the second only after the first had arrived (the loop
// rolled): 1.4 TB/s for 4 rows on an H200. Instead a block is one row of up to 256 threads over
// neighbouring columns, each thread reading every row of its columns with up to 8 loads in flight
// (the unrolled loop's copies, one per row), adding them in row order; no shared memory.
void few_rows(ReductionPlan& plan, std::int64_t rows, std::int64_t inner_extent) {
    const std::int64_t column_threads = ceil_div(inner_extent, std::int64_t{plan.vec});
    plan.block_x = static_cast<std::uint16_t>(
        std::clamp<std::int64_t>(ceil_div(column_threads, 32) * 32, 32, 256));
    plan.block_y = 1;
    plan.unsplit = true;
    plan.unroll = static_cast<std::uint8_t>(std::min<std::int64_t>(rows, 8));
}

// Rows of @p vectors vectors of @p vector_bytes, a warp or less each: the lanes per row and the
// loads each lane has in flight. A lane per vector (rows of 64 floats: 16 lanes, one float4 each)
// left each thread one load and four rounds of shuffles per row: argmax over rows of 64 floats
// reached 2.2 TB/s on an H200, l2norm over rows of 16 3.6. Instead up to 4 vectors a lane, all
// loaded by the unrolled loop's copies at once, and fewer rounds of shuffles; never fewer lanes
// than one 32-byte sector's worth of vectors where the row has them, so each load of a row's lanes
// still reads whole sectors.
void short_rows(ReductionPlan& plan, std::int64_t vectors, int vector_bytes) {
    constexpr std::int64_t kLoadsPerLane = 4;
    auto pow2_at_least = [](std::int64_t n) {
        std::int64_t p = 1;
        while (p < n && p < 32)
            p *= 2;
        return p;
    };
    const std::int64_t for_loads = pow2_at_least(ceil_div(vectors, kLoadsPerLane));
    const std::int64_t for_sectors =
        std::min<std::int64_t>(std::max(1, 32 / vector_bytes), pow2_at_least(vectors));
    plan.row_lanes = static_cast<std::uint8_t>(std::max(for_loads, for_sectors));
    if (plan.row_lanes < 32)
        plan.unroll =
            static_cast<std::uint8_t>(std::max<std::int64_t>(1, vectors / plan.row_lanes));
}

// Caps the grid-stride loop's grid (over outputs; over batches for the outer layout) at
// @p max_grid blocks in all.
void cap_grid(PlannedReduction& p, std::uint32_t max_grid) {
    if (!max_grid) return;
    if (p.plan.layout == ReduceLayout::outer) {
        const std::uint64_t per_batch = std::uint64_t{p.grid.x} * p.grid.y;
        const auto z = static_cast<unsigned>(std::max<std::uint64_t>(1, max_grid / per_batch));
        p.grid.z = std::min(p.grid.z, z);
    } else {
        p.grid.x = std::min(p.grid.x, max_grid);
    }
}

// In kiln::prepare(), as ElementwiseKernel's: a definition parsed and a call planned once.
const bool kReductionParserPrepared =
    (detail::add_prepare_step([] {
         const ReductionKernel kernel("T x", "T y", "x", "a + b", "y = a", "0", "kiln_prepare");
         const Array x = Array::wrap(CUdeviceptr{1} << 20, {32, 32}, DType::float32);
         const Arg args[] = {x};
         (void)kernel.source_for(args, 1, ReduceCall{1});
     }),
     true);

} // namespace

void ReductionKernel::Impl::shape_call(const Arg* args, std::size_t count, const ReduceCall& how,
                                       bool allocate, PlannedReduction& p) const {
    p.how = &how;
    detail::bind_operands(params(), args, count, p.ops);
    const std::optional<Dims> input_shape = detail::broadcast_inputs(p.ops);
    if (!input_shape) params().bad_call("at least one input must be an array");
    const Dims& shape = *input_shape;
    const int ndim = shape.size();

    // Axes: NumPy's rules (negative from the end, each once, in range).
    std::array<bool, kMaxDims> reduced{};
    if (how.axis.is_all()) {
        for (int d = 0; d < ndim; ++d)
            reduced[d] = true;
    } else {
        for (int k = 0; k < how.axis.size(); ++k) {
            const int given = how.axis[k];
            const int axis = given < 0 ? given + ndim : given;
            if (axis < 0 || axis >= ndim)
                throw AxisError(params().who + ": axis " + std::to_string(given) +
                                " is out of bounds for an array of dimension " +
                                std::to_string(ndim));
            if (reduced[axis])
                throw AxisError(params().who + ": axis " + std::to_string(axis) +
                                " is repeated in axis=" + how.axis.to_string());
            reduced[axis] = true;
        }
    }
    Dims out_shape;
    p.n_out = 1;
    p.n_red = 1;
    for (int d = 0; d < ndim; ++d) {
        if (reduced[d]) {
            p.n_red *= shape[d];
            if (how.keepdims) out_shape.push_back(1);
        } else {
            p.n_out *= shape[d];
            out_shape.push_back(shape[d]);
        }
    }
    p.n_in = p.n_out * p.n_red;
    if (p.n_red == 0 && p.n_out > 0 && (def.identity.empty() || empty_is_error))
        params().bad_call("a reduction over zero elements has no identity (input shape " +
                          shape.to_string() + ", axis=" + how.axis.to_string() +
                          "): give the kernel an identity or reduce a non-empty array");

    detail::check_given_outputs(params(), p.ops, out_shape, "the reduction gives");
    // Outputs are described (contiguous, as allocated ones are) until the layout has checked
    // every operand's strides: a bad call is the same error with or without a device.
    detail::make_outputs(p.ops, out_shape, /*allocate=*/false, how.stream);
    choose_layout(p, reduced, shape, how.keepdims);
    if (allocate) {
        detail::check_operand_devices(params(), p.ops); // the last check: it asks the driver
        detail::make_outputs(p.ops, out_shape, /*allocate=*/true, how.stream);
    }
}

void ReductionKernel::Impl::choose_layout(PlannedReduction& p,
                                          const std::array<bool, kMaxDims>& reduced,
                                          const Dims& shape, bool keepdims) const {
    ReductionPlan& plan = p.plan;
    const detail::Operands& ops = p.ops;
    const int nin = static_cast<int>(ops.inputs);
    const int ndim = shape.size();
    plan.count = static_cast<std::uint8_t>(ops.count);
    std::copy(ops.types.begin(), ops.types.begin() + ops.count, plan.operands.begin());
    const OperandSet inputs = ops.of_kind(OperandKind::array, 0, ops.inputs);
    const OperandSet outputs = ops.of_kind(OperandKind::array, ops.inputs, ops.count);

    // The kept and the reduced axes, each with the element strides of the operands that walk
    // them: the array inputs (0 where broadcast) both, the outputs the kept ones.
    Dims kshape, rshape;
    detail::OperandStrides kept, red;
    for (int d = 0; d < ndim; ++d)
        (reduced[d] ? rshape : kshape).push_back(shape[d]);
    for (int k = 0; k < plan.count; ++k) {
        if (inputs[k]) {
            const Dims full = detail::element_strides(params(), ops, k, ndim);
            for (int d = 0; d < ndim; ++d)
                (reduced[d] ? red : kept)[k].push_back(full[d]);
        } else if (outputs[k]) {
            const Dims own = detail::element_strides(params(), ops, k, ops.arrays[k].ndim());
            for (int d = 0, at = 0; d < ndim; ++d) {
                if (!reduced[d])
                    kept[k].push_back(own[at++]);
                else if (keepdims)
                    ++at;
            }
        }
    }
    detail::collapse_axes(kshape, kept, inputs | outputs, reduce_dims);
    detail::collapse_axes(rshape, red, inputs, reduce_dims);
    if (kshape.empty()) {
        kshape.push_back(1);
        for (int k = 0; k < plan.count; ++k)
            if (inputs[k] || outputs[k]) kept[k].push_back(0);
    }
    if (rshape.empty()) {
        rshape.push_back(1);
        for (int k = 0; k < nin; ++k)
            if (inputs[k]) red[k].push_back(0);
    }
    const int kept_rank = static_cast<int>(kshape.size()),
              red_rank = static_cast<int>(rshape.size());
    plan.kept_ndim = static_cast<std::uint8_t>(kept_rank);
    plan.red_ndim = static_cast<std::uint8_t>(red_rank);
    Dims all = kshape; // inputs walk the kept axes, then the reduced ones
    for (int d = 0; d < red_rank; ++d)
        all.push_back(rshape[d]);
    for (int k = 0; k < plan.count; ++k) {
        if (!inputs[k] && !outputs[k]) continue;
        p.strides[k] = kept[k];
        if (inputs[k])
            for (int d = 0; d < red_rank; ++d)
                p.strides[k].push_back(red[k][d]);
    }
    p.kshape = kshape;
    p.rshape = rshape;
    plan.index64 = detail::needs_index64(p.n_in, all, p.strides, inputs) ||
                   detail::needs_index64(0, kshape, p.strides, outputs);
    // The reduce type's dtype where Kiln can tell it: given by name, a bound placeholder, or the
    // first output's.
    std::optional<DType> reduce_dtype = named_reduce_dtype;
    const std::string& reduce_type = def.reduce_type;
    const auto& bindings = ops.bindings;
    if (reduce_type.empty())
        reduce_dtype = plan.operands[nin].dtype;
    else if (reduce_type.size() == 1 && bindings[static_cast<unsigned char>(reduce_type[0])])
        reduce_dtype = *bindings[static_cast<unsigned char>(reduce_type[0])];
    plan.slot_bytes = static_cast<std::uint8_t>(slot_bytes(reduce_dtype, !def.identity.empty()));
    if (p.n_out == 0) return; // nothing to launch

    // Whether every array input can be read @p vec elements at a time along axis @p axis (an
    // index into the input's strides) of @p extent elements.
    auto vectorizable = [&](int vec, int axis, std::int64_t extent) {
        if (extent % vec != 0) return false;
        for (int k = 0; k < nin; ++k)
            if (inputs[k] && (p.strides[k][axis] != 1 ||
                              !detail::vector_aligned(ops.arrays[k], p.strides[k], axis, vec)))
                return false;
        return true;
    };
    const std::size_t widest = ops.widest_itemsize(inputs);
    int primary = -1; // the first array input
    for (int k = nin - 1; k >= 0; --k)
        if (inputs[k]) primary = k;
    const std::int64_t inner_red_stride =
        primary >= 0 ? p.strides[primary][kept_rank + red_rank - 1] : 1;
    const std::int64_t inner_kept_stride = primary >= 0 ? p.strides[primary][kept_rank - 1] : 0;
    const std::int64_t inner_extent = kshape[kept_rank - 1];

    if (std::llabs(inner_red_stride) != 1 && inner_kept_stride == 1 && inner_extent >= 16 &&
        p.n_red > 1) {
        // Columns: a thread per output (times vec), rows split across the block and the grid.
        plan.layout = ReduceLayout::outer;
        plan.block_x = 32;
        plan.block_y = 8;
        const int threads = plan.block_x * plan.block_y;
        plan.vec = static_cast<std::uint8_t>(detail::vector_width(widest, [&](int vec) {
            return vectorizable(vec, kept_rank - 1, inner_extent) &&
                   threads * vec * plan.slot_bytes <= 32 * 1024;
        }));
        if (p.n_red < kFewRows) {
            few_rows(plan, p.n_red, inner_extent);
            return;
        }
        // size_launch splits the rows only where each thread still reads 16 of them at least
        // twice over: below that, whatever the device, every column is one block's.
        plan.unsplit = p.n_red < std::int64_t{2} * 16 * plan.block_y;
        if (plan.unsplit) keep_unrolled_loop_only_if_entered(plan, p.n_red, plan.block_y);
        return;
    }

    // A warp, a block or several blocks per output, walking the reduction.
    plan.layout = ReduceLayout::group;
    const int vec = detail::vector_width(widest, [&](int v) {
        return vectorizable(v, kept_rank + red_rank - 1, rshape[red_rank - 1]);
    });
    plan.vec = static_cast<std::uint8_t>(vec);
    plan.warp_group =
        p.n_out >= kLayoutMultiprocessors * 16 && p.n_red / vec <= std::int64_t{32} * 16;
    if (plan.warp_group) short_rows(plan, p.n_red / vec, static_cast<int>(widest) * vec);
    plan.block_x = plan.warp_group ? 256 : p.n_out < kLayoutMultiprocessors * 4 ? 512 : 256;
    // size_launch splits an output only where each block still reads 8 vectors per thread at
    // least twice over: below that, whatever the device, every output is one block's (and a warp
    // per output never splits).
    plan.unsplit = plan.warp_group || p.n_red / vec < std::int64_t{2} * 8 * plan.block_x;
    if (plan.unsplit)
        keep_unrolled_loop_only_if_entered(plan, p.n_red / vec,
                                           plan.warp_group ? plan.row_lanes : plan.block_x);
}

void ReductionKernel::Impl::size_launch(PlannedReduction& p, int blocks_per_multiprocessor) const {
    const ReductionPlan& plan = p.plan;
    // One full wave of blocks: splitting further would leave a tail of idle multiprocessors.
    const std::int64_t resident =
        std::int64_t{p.multiprocessors} * std::max(1, blocks_per_multiprocessor);
    p.block = Dim3(plan.block_x, plan.block_y);
    if (plan.layout == ReduceLayout::outer) {
        const std::int64_t inner_extent = p.kshape[plan.kept_ndim - 1];
        const std::int64_t columns = ceil_div(inner_extent, std::int64_t{plan.block_x} * plan.vec);
        const std::int64_t batches = p.n_out / inner_extent;
        const std::int64_t z = std::min<std::int64_t>(batches, 65535);
        std::int64_t split = 1;
        if (columns * z < resident && !plan.unsplit) // each thread still reads 16 rows or more
            split =
                std::min(resident / (columns * z),
                         std::max<std::int64_t>(1, p.n_red / (std::int64_t{plan.block_y} * 16)));
        p.split = std::clamp<std::int64_t>(split, 1, 65535);
        p.grid = Dim3(static_cast<unsigned>(columns), static_cast<unsigned>(p.split),
                      static_cast<unsigned>(z));
        if (p.split > 1) {
            p.partial_bytes =
                static_cast<std::size_t>(batches * p.split * inner_extent) * plan.slot_bytes;
            p.counters = static_cast<std::size_t>(batches * columns);
        }
        return;
    }
    if (plan.warp_group) {
        p.grid = Dim3(static_cast<unsigned>(
            std::min<std::int64_t>(ceil_div(p.n_out, plan.block_x / plan.row_lanes), 0x7fffffff)));
        return;
    }
    std::int64_t split = 1;
    // Few outputs: split each, each thread still reading 8 vectors.
    if (p.n_out < resident && !plan.unsplit)
        split = std::min(
            resident / p.n_out,
            std::max<std::int64_t>(1, p.n_red / plan.vec / (std::int64_t{plan.block_x} * 8)));
    p.split = split;
    p.grid = Dim3(static_cast<unsigned>(std::min<std::int64_t>(p.n_out * split, 0x7fffffff)));
    if (split > 1) {
        p.partial_bytes = static_cast<std::size_t>(p.n_out * split) * plan.slot_bytes;
        p.counters = static_cast<std::size_t>(p.n_out);
    }
}

std::string ReductionKernel::Impl::describe(const PlannedReduction& p) const {
    detail::KernelDescription d("reduction", def.params);
    d.spec("map_expr", def.map_expr);
    d.spec("reduce_expr", def.reduce_expr);
    d.spec("post_map_expr", def.post_map_expr);
    d.spec_text("identity", def.identity);
    d.spec_text("reduce_type", def.reduce_type);
    d.spec_text("preamble", def.preamble);
    d.spec_options(nvrtc_options);
    if (!reduce_dims) d.spec_flag("reduce_dims", false);
    if (empty_is_error) d.spec_flag("empty_is_error", true);
    const Axes& axis = p.how->axis;
    if (!axis.is_all()) { // as given: negative axes stay negative
        std::vector<int> given;
        given.reserve(static_cast<std::size_t>(axis.size()));
        for (int k = 0; k < axis.size(); ++k)
            given.push_back(axis[k]);
        d.call("axis", given);
    }
    if (p.how->keepdims) d.call_flag("keepdims", true);
    return d.text(p.ops);
}

const ReductionKernel::Impl::Loaded& ReductionKernel::Impl::function(const PlannedReduction& p,
                                                                     CUcontext context) const {
    return functions.get(context, p.plan, [&] {
        // First call with this signature here: generate, compile (memory and disk caches), load.
        const std::string arch = Device::current().arch();
        Loaded loaded{detail::load_planned(*this, p, arch), 0};
        if (!p.plan.unsplit) loaded.blocks_per_multiprocessor = loaded.occupancy(p.plan);
        return loaded;
    });
}

void ReductionKernel::Impl::launch(const PlannedReduction& p, const Function& f, CUcontext context,
                                   StreamRef stream, detail::RepeatLaunch* record) const {
    const ReductionPlan& plan = p.plan;
    const bool index64 = plan.index64;
    detail::ParamWriter w;
    std::uint16_t offsets[detail::kMaxParams] = {};
    for (int k = 0; k < plan.count; ++k) {
        const auto& op = plan.operands[k];
        if (op.kind == OperandKind::scalar) {
            offsets[k] = static_cast<std::uint16_t>(w.scalar(*p.ops.scalars[k], op.dtype));
            continue;
        }
        offsets[k] = static_cast<std::uint16_t>(w.pointer(p.ops.arrays[k].data()));
        for (std::int64_t s : p.strides[k])
            w.index(s, index64);
    }
    w.index(p.n_in, index64);
    w.index(p.n_out, index64);
    w.index(p.n_red, index64);
    for (std::int64_t e : p.kshape)
        w.index(e, index64);
    for (std::int64_t e : p.rshape)
        w.index(e, index64);
    w.index(p.split, index64);
    detail::WorkspaceLease lease;
    if (p.split > 1) lease = detail::lease_workspace(context, stream, p.partial_bytes, p.counters);
    const std::size_t partials_offset = w.pointer(lease.partials);
    const std::size_t counters_offset = w.pointer(lease.counters);
    const std::size_t size = w.finish();
    void* args[] = {w.data()};
    f.launch_packed(LaunchConfig{p.grid, p.block, 0, stream}, args, &size, 1);
    if (!record) return;
    detail::record_launch(*record, f, p.grid, p.block, p.ops, offsets, w, size);
    if (p.split > 1) {
        record->partial_bytes = p.partial_bytes;
        record->counters = p.counters;
        record->partials_offset = static_cast<std::uint16_t>(partials_offset);
        record->counters_offset = static_cast<std::uint16_t>(counters_offset);
    }
}

bool ReductionKernel::Impl::fingerprint(const Arg* args, std::size_t count, const ReduceCall& how,
                                        CUcontext context, detail::CallFingerprint& print) const {
    print.start(id, context, count);
    const Axes& axis = how.axis;
    if (!print.add(std::uint64_t{axis.is_all()} | std::uint64_t{how.keepdims} << 1 |
                   static_cast<std::uint64_t>(axis.size()) << 2))
        return false;
    for (int k = 0; k < axis.size(); ++k)
        if (!print.add(static_cast<std::uint64_t>(static_cast<std::int64_t>(axis[k]))))
            return false;
    return print.args(args, count);
}

const ReductionKernel::Impl::Loaded& ReductionKernel::Impl::apply_tuning(PlannedReduction& p,
                                                                         const Loaded& loaded,
                                                                         CUcontext context,
                                                                         StreamRef stream) const {
    const ReductionTuneKey key{p.plan, detail::size_class(p.n_out), detail::size_class(p.n_red)};
    const detail::TunedLaunch* found;
    try {
        found = &tunings.get(context, key, [&] { return tune_launch(p, context, stream); });
    } catch (const detail::TuningDeferred&) { // captured into a graph: untuned this time
        return loaded;
    }
    const detail::TunedLaunch& tuned = *found;
    const Loaded* chosen = &loaded;
    if (tuned.choice.block != p.plan.block_x) {
        p.plan.block_x = tuned.choice.block;
        chosen = &function(p, context);
        size_launch(p, chosen->blocks_per_multiprocessor);
    }
    cap_grid(p, tuned.max_grid);
    return *chosen;
}

// Only what keeps the combine order: with a warp (or row_lanes lanes of one) per output, each
// output is reduced by its lanes, then a warp reduction, whatever the block holds, so the block
// size is free; every layout's grid-stride loop gives each output (or batch) the same work
// whatever the grid. The split across blocks and the block of the other layouts stay as they are.
detail::TunedLaunch ReductionKernel::Impl::tune_launch(const PlannedReduction& p, CUcontext context,
                                                       StreamRef stream) const {
    const bool free_block = p.plan.layout == ReduceLayout::group && p.plan.warp_group;
    const std::vector<int> blocks = free_block ? detail::block_candidates(p.plan.block_x, 64, 1024)
                                               : std::vector<int>{p.plan.block_x};
    std::vector<detail::LaunchChoice> candidates;
    for (int block : blocks)
        for (int waves : {0, 1, 4})
            candidates.push_back(
                {static_cast<std::uint16_t>(block), static_cast<std::uint16_t>(waves)});

    const Device device = Device::current();
    const cache::Key key = detail::tuning_key(
        "reduction", source(p).source, nvrtc_options,
        "out" + std::to_string(detail::size_class(p.n_out)) + " red" +
            std::to_string(detail::size_class(p.n_red)),
        device.name(), device.compute_capability_major(), device.compute_capability_minor());

    // A candidate ready to launch: the plan with its block, its specialization (sized as every
    // call sizes it: the same split), and its grid cap.
    auto ready_for = [&](const detail::LaunchChoice& choice, PlannedReduction& q) {
        q.plan.block_x = choice.block;
        const Loaded& l = function(q, context);
        const int occupancy = l.occupancy(q.plan);
        size_launch(q, occupancy);
        const std::uint32_t cap = detail::grid_cap(choice.waves, q.multiprocessors, occupancy);
        cap_grid(q, cap);
        return std::make_pair(&l, cap);
    };
    return detail::tune_launch(p, candidates, key, stream, ready_for,
                               [&](const PlannedReduction& q, const Loaded& l) {
                                   launch(q, l.function, context, stream);
                               });
}

ReductionKernel::ReductionKernel(const std::string& in_params, const std::string& out_params,
                                 std::string map_expr, std::string reduce_expr,
                                 std::string post_map_expr, std::string identity, std::string name,
                                 ReductionOptions options)
    : m_impl(std::make_unique<Impl>(detail::ReductionDefinition{
          detail::KernelParams("ReductionKernel", std::move(name), in_params, out_params),
          std::move(map_expr), std::move(reduce_expr), std::move(post_map_expr),
          blank(identity) ? std::string() : std::move(identity), std::move(options.preamble),
          std::move(options.reduce_type)})) {
    const detail::ReductionDefinition& def = m_impl->def;
    const detail::KernelParams& params = def.params;
    if (params.inputs.empty()) params.bad_spec("needs at least one input parameter");
    if (params.outputs.empty()) params.bad_spec("needs at least one output parameter");
    for (std::size_t k = 0; k < params.count(); ++k) {
        const ParamSpec& spec = params[k];
        if (spec.raw)
            params.bad_spec("parameter '" + spec.name +
                            "' is raw; ReductionKernel takes no raw parameters");
        if (params.is_output(k) && (spec.name == "a" || spec.name == "b"))
            params.bad_spec("output '" + spec.name +
                            "' clashes with the reduced value the post-map expression sees as "
                            "'a' (and 'b' in the reduce expression): rename it");
    }
    if (blank(def.map_expr)) params.bad_spec("the map expression is empty");
    if (blank(def.reduce_expr)) params.bad_spec("the reduce expression is empty");
    if (blank(def.post_map_expr)) params.bad_spec("the post-map expression is empty");
    m_impl->nvrtc_options = std::move(options.options);
    m_impl->reduce_dims = options.reduce_dims;
    m_impl->empty_is_error = options.empty_is_error;
    m_impl->tune = options.tune;
    detail::trace_mark("ReductionKernel made");
}

ReductionKernel::~ReductionKernel() = default;
ReductionKernel::ReductionKernel(ReductionKernel&&) noexcept = default;
ReductionKernel& ReductionKernel::operator=(ReductionKernel&&) noexcept = default;

Outputs ReductionKernel::call(const Arg* args, std::size_t count, const ReduceCall& how) const {
    const detail::CallScope on_device(how.device.value_or(-1));
    // Tuning, when asked for, may change the block and grid, never the results.
    const bool tuned = detail::tuning_requested(m_impl->tune, how.tune);
    detail::RepeatCall repeat_call(!tuned, [&](detail::CallFingerprint& print) {
        return m_impl->fingerprint(args, count, how, detail::current_context(), print);
    });
    {
        Outputs outputs;
        if (repeat_call.repeat(m_impl->def.params, args, how.stream, true, outputs)) return outputs;
    }
    PlannedReduction p;
    m_impl->shape_call(args, count, how, /*allocate=*/true, p); // every check, then the outputs
    const CUcontext context = detail::current_context();
    p.multiprocessors = multiprocessors(context);
    detail::trace_mark("reduction call shaped (bound, checked, outputs)");
    if (p.n_out > 0) {
        const Impl::Loaded* loaded = &m_impl->function(p, context);
        m_impl->size_launch(p, loaded->blocks_per_multiprocessor);
        if (tuned) loaded = &m_impl->apply_tuning(p, *loaded, context, how.stream);
        repeat_call.launch([&](detail::RepeatLaunch* record) {
            m_impl->launch(p, loaded->function, context, how.stream, record);
        });
    }
    Outputs outputs;
    for (std::size_t k = p.ops.inputs; k < p.ops.count; ++k)
        outputs.push_back(std::move(p.ops.arrays[k]));
    return outputs;
}

std::string ReductionKernel::source_for(const Arg* args, std::size_t count,
                                        const ReduceCall& how) const {
    return detail::source_for<PlannedReduction>(*m_impl, args, count, how);
}

std::shared_ptr<const Program> ReductionKernel::compile_for(const Arg* args, std::size_t count,
                                                            const ReduceCall& how,
                                                            const std::string& arch) const {
    return detail::compile_for<PlannedReduction>(*m_impl, args, count, how, arch);
}

std::string ReductionKernel::describe_for(const Arg* args, std::size_t count,
                                          const ReduceCall& how) const {
    return detail::describe_for<PlannedReduction>(*m_impl, args, count, how);
}

void detail::set_planning_multiprocessors_for_testing(int multiprocessors) noexcept {
    g_planning_multiprocessors.store(multiprocessors, std::memory_order_relaxed);
}

const std::string& ReductionKernel::name() const noexcept {
    return m_impl->def.params.name;
}
const std::vector<ParamSpec>& ReductionKernel::in_params() const noexcept {
    return m_impl->def.params.inputs;
}
const std::vector<ParamSpec>& ReductionKernel::out_params() const noexcept {
    return m_impl->def.params.outputs;
}

} // namespace kiln
