#include "kiln/elementwise_kernel.hpp"

#include "core/front_end_steps.hpp"
#include "core/index_math.hpp"
#include "core/kernel_description.hpp"
#include "core/launch_tuner.hpp"
#include "core/operand_devices.hpp"
#include "core/operands.hpp"
#include "core/param_writer.hpp"
#include "core/repeat_call.hpp"
#include "core/specialization.hpp"
#include "core/specialization_memo.hpp"
#include "driver/driver_trace.hpp"
#include "driver/per_context_cache.hpp"
#include "driver/prepare_steps.hpp"
#include "elementwise_codegen.hpp"
#include "elementwise_plan.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"
#include "kiln/module.hpp"
#include "write_only_outputs.hpp"

#include <algorithm>
#include <cstdlib>

// ElementwiseKernel is a thin front end over the generated-kernel core (operands, the source
// writer, specialization): what is its own is its spec (an operation per element, raw
// parameters, size=), its layouts (flat, strided, rows, tiled) and the loop it generates.

namespace kiln {

using detail::ceil_div;
using detail::kIndex32Limit;
using detail::Layout;
using detail::max_offset;
using detail::OperandKind;
using detail::OperandSet;
using detail::Plan;

namespace {

constexpr int kDefaultBlock = 256;

// Everything one call decides before a kernel is chosen: no strings, no heap.
struct PlannedCall {
    Plan plan{};
    detail::Operands ops;
    Dims shape; // loop shape, collapsed
    std::int64_t n = 0;
    detail::OperandStrides strides; // array operands' element strides over shape
    Dim3 grid, block;
    const CallOptions* call = nullptr; // for the description, when it compiles
};

unsigned blocks_for(std::int64_t threads, int block) {
    return static_cast<unsigned>(std::min<std::int64_t>(ceil_div(threads, block), 0x7fffffff));
}

// The block and grid of the flat, strided and rows layouts for p.plan.block threads per block.
void size_grid(PlannedCall& p) {
    const Plan& plan = p.plan;
    p.block = Dim3(plan.block);
    if (plan.layout == Layout::rows) {
        const std::int64_t inner = p.shape[plan.ndim - 1];
        p.grid = Dim3(blocks_for(inner / plan.vec, plan.block),
                      static_cast<unsigned>(std::min<std::int64_t>(p.n / inner, 65535)));
        return;
    }
    // The flat layout's vectors, and at least as many threads as its tail has elements (the
    // kernel computes the tail in one pass: elementwise_codegen.cpp).
    const std::int64_t threads =
        plan.layout == Layout::flat ? std::max(ceil_div(p.n, plan.vec), p.n % plan.vec) : p.n;
    p.grid = Dim3(std::max(1u, blocks_for(threads, plan.block)));
}

// What a tuned launch is looked up by: the plan with its default block, and the shape class (the
// element count's size class; the exact row length for the rows layout, whose default block
// follows it).
struct TuneKey {
    Plan plan;
    std::int64_t n_class = 0, inner = 0;
    bool operator==(const TuneKey& o) const noexcept {
        return n_class == o.n_class && inner == o.inner && plan == o.plan;
    }
};
struct TuneKeyHash {
    std::size_t operator()(const TuneKey& key) const noexcept {
        return detail::SignatureHash<Plan>{}(key.plan) ^
               static_cast<std::size_t>((key.n_class * 131 + key.inner) * 0x9e3779b97f4a7c15ull);
    }
};

// In kiln::prepare(): a definition parsed and a call planned once (binding, loop shape, layout;
// over a description, no device), so that code is paged in and its library calls bound before a
// real first call.
const bool kParserPrepared =
    (detail::add_prepare_step([] {
         const ElementwiseKernel kernel("T x", "T y", "y = x", "kiln_prepare");
         const Array x = Array::wrap(CUdeviceptr{1} << 20, {1024}, DType::float32);
         const Arg args[] = {x};
         (void)kernel.source_for(args, 1);
     }),
     true);

} // namespace

struct ElementwiseKernel::Impl {
    explicit Impl(detail::ElementwiseDefinition definition)
        : def(std::move(definition)) {}

    detail::ElementwiseDefinition def;
    const std::uint64_t id = detail::new_kernel_id(); // this kernel in threads' repeat caches
    std::vector<std::string> nvrtc_options;
    bool no_return = false, reduce_dims = true, tune = false;

    // The loaded specializations, per context and signature.
    mutable detail::PerContextCache<Function, Plan, detail::SignatureHash<Plan>> functions;
    // Tuned launches, per context, plan and shape class.
    mutable detail::TunedLaunches<TuneKey, TuneKeyHash> tunings;

    const detail::KernelParams& params() const noexcept { return def.params; }
    // Binding, the loop shape, output allocation (when @p allocate) and layout choice.
    void plan_call(const Arg* args, std::size_t count, const CallOptions& options, bool allocate,
                   PlannedCall& p) const;
    Dims loop_shape(const CallOptions& options, const detail::Operands& ops) const;
    void choose_layout(const CallOptions& options, PlannedCall& p) const;
    detail::GeneratedSource source(const PlannedCall& p) const {
        return generate_elementwise(def, p.plan, p.ops.bindings);
    }
    std::string describe(const PlannedCall& p) const;
    void plan_only(const Arg* args, std::size_t count, const CallOptions& options,
                   PlannedCall& p) const {
        plan_call(args, count, options, /*allocate=*/false, p);
    }
    // Everything that decides source(p) for @p arch (specialization_memo.hpp).
    std::optional<cache::Key> signature(const PlannedCall& p, const std::string& arch) const {
        return detail::MemoSignature("elementwise", def.params, nvrtc_options, arch)
            .text("operation", def.operation)
            .text("preamble", def.preamble)
            .text("loop-prep", def.loop_prep)
            .text("after-loop", def.after_loop)
            .number("write-only", def.outputs_write_only)
            .bytes("plan", &p.plan, p.plan.used_bytes())
            .finish();
    }
    const Function& function(const PlannedCall& p) const;
    // Launches @p p; with @p record, also writes there what a repeat of the call needs.
    void launch(const PlannedCall& p, const Function& f, StreamRef stream,
                detail::RepeatLaunch* record = nullptr) const;
    // The fingerprint of a call that may be repeated from the repeat cache (false: never cached).
    bool fingerprint(const Arg* args, std::size_t count, const CallOptions& options,
                     detail::CallFingerprint& print) const;

    // The tuned block and grid for @p p's plan and shape class (tuned on first use).
    void apply_tuning(PlannedCall& p, StreamRef stream) const;
    detail::TunedLaunch tune_launch(const PlannedCall& p, StreamRef stream) const;
};

void ElementwiseKernel::Impl::plan_call(const Arg* args, std::size_t count,
                                        const CallOptions& options, bool allocate,
                                        PlannedCall& p) const {
    if (options.block_size && (*options.block_size <= 0 || *options.block_size > 1024))
        params().bad_call("block size " + std::to_string(*options.block_size) +
                          " is out of range: use 1 to 1024 threads");
    p.call = &options;
    detail::bind_operands(params(), args, count, p.ops);
    p.shape = loop_shape(options, p.ops);
    // After the argument checks, which need no driver; before any allocation.
    if (allocate) detail::check_operand_devices(params(), p.ops);
    detail::make_outputs(p.ops, p.shape, allocate, options.stream);
    p.n = p.shape.product();
    choose_layout(options, p);
}

// The broadcast of the non-raw arrays (the outputs given have it already), or `size` when every
// array is raw.
Dims ElementwiseKernel::Impl::loop_shape(const CallOptions& options,
                                         const detail::Operands& ops) const {
    if (options.size) {
        for (std::size_t k = 0; k < ops.given; ++k)
            if (ops.is(k, OperandKind::array))
                params().bad_call("size= needs every array parameter to be raw, but '" +
                                  params()[k].name + "' is not");
        if (*options.size < 0) params().bad_call("size= must not be negative");
        return Dims{*options.size};
    }
    const std::optional<Dims> shape =
        detail::broadcast_to_given_output(ops, detail::broadcast_inputs(ops));
    if (!shape)
        params().bad_call("cannot tell the loop size: no non-raw array is given; pass "
                          "CallOptions::size with raw arrays");
    detail::check_given_outputs(params(), ops, *shape, "the inputs broadcast to");
    return *shape;
}

void ElementwiseKernel::Impl::choose_layout(const CallOptions& options, PlannedCall& p) const {
    Plan& plan = p.plan;
    const detail::Operands& ops = p.ops;
    plan.count = static_cast<std::uint8_t>(ops.count);
    const OperandSet walkers = ops.of_kind(OperandKind::array, 0, ops.count);
    for (int k = 0; k < plan.count; ++k) {
        auto& op = plan.operands[k];
        op.dtype = ops.types[k].dtype;
        op.kind = ops.types[k].kind;
        if (walkers[k]) p.strides[k] = detail::element_strides(params(), ops, k, p.shape.size());
        if (op.kind != OperandKind::raw) continue;
        // Raw arrays index their own shape: only their strides are checked.
        const Array& a = ops.arrays[k];
        detail::element_strides(params(), ops, k, a.ndim());
        op.raw_ndim = static_cast<std::uint8_t>(a.ndim());
        op.raw_contiguous = a.is_c_contiguous();
    }

    if (reduce_dims) detail::collapse_axes(p.shape, p.strides, walkers, /*merge=*/true);
    if (p.shape.empty()) { // a single element (or a 0-d loop)
        p.shape.push_back(p.n);
        for (int k = 0; k < plan.count; ++k)
            if (walkers[k]) p.strides[k] = Dims{1};
    }
    const Dims& shape = p.shape;
    const auto& strides = p.strides;
    const int nd = shape.size();
    plan.ndim = static_cast<std::uint8_t>(nd);

    // 32-bit indexing whenever every offset fits, raw arrays' own included.
    bool index64 = detail::needs_index64(p.n, shape, strides, walkers);
    for (int k = 0; k < plan.count; ++k) {
        if (plan.operands[k].kind != OperandKind::raw) continue;
        const Array& a = ops.arrays[k];
        // Its strides are in bytes on the device.
        index64 = index64 || a.size() >= kIndex32Limit ||
                  max_offset(a.shape(), a.strides()) >= kIndex32Limit;
    }
    plan.index64 = index64;
    plan.load_outputs = !def.outputs_write_only;

    bool flat = nd == 1;
    for (int k = 0; k < plan.count; ++k)
        if (walkers[k]) flat = flat && strides[k][0] == 1;
    const std::size_t widest = ops.widest_itemsize(walkers);
    // Vectors along the (last) axis, every operand aligned to them; rows: every row a whole
    // number of vectors, operands broadcast along the row read once per row.
    auto vector_width = [&](bool rows) {
        return detail::vector_width(widest, [&](int vec) {
            if (rows && shape[nd - 1] % vec != 0) return false;
            for (int k = 0; k < plan.count; ++k) {
                if (!walkers[k] || (rows && strides[k][nd - 1] == 0)) continue;
                if (!detail::vector_aligned(ops.arrays[k], strides[k], nd - 1, vec)) return false;
            }
            return true;
        });
    };

    const int user_block = options.block_size.value_or(0);
    plan.block = static_cast<std::uint16_t>(user_block ? user_block : kDefaultBlock);
    if (flat) {
        plan.layout = Layout::flat;
        plan.vec = static_cast<std::uint8_t>(p.n >= 8 ? vector_width(false) : 1);
        size_grid(p);
        return;
    }

    // Tiled: 2-D with an operand walking axis 0 contiguously (a transpose) and both axes long.
    auto transposed = [&](int k) {
        return walkers[k] && strides[k][0] == 1 && std::llabs(strides[k][1]) > 1;
    };
    bool any_transposed = false;
    std::size_t staged_bytes = 0;
    if (nd == 2 && !user_block && shape[0] >= 16 && shape[1] >= 16) {
        for (int k = 0; k < plan.count; ++k)
            if (transposed(k)) {
                any_transposed = true;
                staged_bytes += std::size_t{32} * 33 * itemsize(plan.operands[k].dtype);
            }
    }
    if (any_transposed && staged_bytes <= std::size_t{40} * 1024) {
        plan.layout = Layout::tiled;
        for (int k = 0; k < plan.count; ++k)
            plan.operands[k].transposed = transposed(k);
        p.block = Dim3(32, 8);
        p.grid = Dim3(blocks_for(shape[1], 32),
                      static_cast<unsigned>(std::min<std::int64_t>(ceil_div(shape[0], 32), 65535)));
        return;
    }

    const std::int64_t inner = shape[nd - 1];
    if (nd >= 2 && inner >= 64) {
        plan.layout = Layout::rows;
        bool unit_inner = true;
        for (int k = 0; k < plan.count; ++k)
            if (walkers[k]) {
                plan.operands[k].inner_broadcast = strides[k][nd - 1] == 0;
                unit_inner = unit_inner && (strides[k][nd - 1] == 0 || strides[k][nd - 1] == 1);
            }
        plan.vec = static_cast<std::uint8_t>(unit_inner ? vector_width(true) : 1);
        const std::int64_t inner_threads = inner / plan.vec;
        if (!user_block) // no idle threads on short rows
            plan.block = static_cast<std::uint16_t>(
                ceil_div(std::min<std::int64_t>(inner_threads, kDefaultBlock), 32) * 32);
        size_grid(p);
        return;
    }
    plan.layout = Layout::strided;
    size_grid(p);
}

std::string ElementwiseKernel::Impl::describe(const PlannedCall& p) const {
    detail::KernelDescription d("elementwise", def.params);
    d.spec("operation", def.operation);
    d.spec_text("preamble", def.preamble);
    d.spec_text("loop_prep", def.loop_prep);
    d.spec_text("after_loop", def.after_loop);
    d.spec_options(nvrtc_options);
    if (no_return) d.spec_flag("no_return", true);
    if (!reduce_dims) d.spec_flag("reduce_dims", false);
    if (p.call->size) d.call("size", *p.call->size);
    if (p.call->block_size) d.call("block_size", *p.call->block_size);
    return d.text(p.ops);
}

const Function& ElementwiseKernel::Impl::function(const PlannedCall& p) const {
    return functions.get(detail::current_context(), p.plan, [&] {
        // First call with this signature here: generate, compile (memory and disk caches), load.
        const std::string arch = Device::current().arch();
        return detail::load_planned(*this, p, arch);
    });
}

void ElementwiseKernel::Impl::launch(const PlannedCall& p, const Function& f, StreamRef stream,
                                     detail::RepeatLaunch* record) const {
    detail::ParamWriter w;
    const Plan& plan = p.plan;
    const bool index64 = plan.index64;
    const bool flat = plan.layout == Layout::flat;
    std::uint16_t offsets[detail::kMaxParams] = {};
    for (int k = 0; k < plan.count; ++k) {
        const auto& op = plan.operands[k];
        switch (op.kind) {
        case OperandKind::array:
            offsets[k] = static_cast<std::uint16_t>(w.pointer(p.ops.arrays[k].data()));
            if (!flat)
                for (int d = 0; d < plan.ndim; ++d)
                    w.index(p.strides[k][d], index64);
            break;
        case OperandKind::raw: {
            const Array& a = p.ops.arrays[k];
            const auto item = static_cast<std::int64_t>(a.itemsize());
            offsets[k] = static_cast<std::uint16_t>(w.pointer(a.data()));
            const int rnd = std::max(1, a.ndim());
            for (int d = 0; d < rnd; ++d)
                w.index(a.ndim() ? a.shape()[d] : 1, index64);
            for (int d = 0; d < rnd; ++d)
                w.index(a.ndim() ? a.strides()[d] : item, index64);
            w.index(a.size(), index64);
            w.pad_to(8);
            break;
        }
        case OperandKind::scalar:
            offsets[k] = static_cast<std::uint16_t>(w.scalar(*p.ops.scalars[k], op.dtype));
            break;
        }
    }
    w.index(p.n, index64);
    if (!flat)
        for (int d = 0; d < plan.ndim; ++d)
            w.index(p.shape[d], index64);
    const std::size_t size = w.finish();
    void* args[] = {w.data()};
    f.launch_packed(LaunchConfig{p.grid, p.block, 0, stream}, args, &size, 1);
    if (record) detail::record_launch(*record, f, p.grid, p.block, p.ops, offsets, w, size);
}

bool ElementwiseKernel::Impl::fingerprint(const Arg* args, std::size_t count,
                                          const CallOptions& options,
                                          detail::CallFingerprint& print) const {
    // The options whole: a value the preparation refuses must never match one it took.
    print.start(id, detail::current_context(), count);
    print.add(static_cast<std::uint32_t>(options.block_size.value_or(0)) |
              std::uint64_t{options.block_size.has_value()} << 32 |
              std::uint64_t{options.size.has_value()} << 33);
    print.add(static_cast<std::uint64_t>(options.size.value_or(0)));
    return print.args(args, count);
}

ElementwiseKernel::ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                                     std::string operation, std::string name,
                                     ElementwiseOptions options)
    : m_impl(std::make_unique<Impl>(detail::ElementwiseDefinition{
          detail::KernelParams("ElementwiseKernel", std::move(name), in_params, out_params),
          std::move(operation), std::move(options.preamble), std::move(options.loop_prep),
          std::move(options.after_loop)})) {
    auto& def = m_impl->def;
    std::vector<std::string> out_names;
    for (const auto& out : def.params.outputs)
        if (!out.raw) out_names.push_back(out.name);
    const bool raw_output = std::any_of(def.params.outputs.begin(), def.params.outputs.end(),
                                        [](const ParamSpec& s) { return s.raw; });
    def.outputs_write_only =
        !raw_output && detail::outputs_are_write_only(def.operation, out_names, def.preamble);
    m_impl->nvrtc_options = std::move(options.options);
    m_impl->no_return = options.no_return;
    m_impl->reduce_dims = options.reduce_dims;
    m_impl->tune = options.tune;
    detail::trace_mark("ElementwiseKernel made");
}

ElementwiseKernel::~ElementwiseKernel() = default;
ElementwiseKernel::ElementwiseKernel(ElementwiseKernel&&) noexcept = default;
ElementwiseKernel& ElementwiseKernel::operator=(ElementwiseKernel&&) noexcept = default;

void ElementwiseKernel::Impl::apply_tuning(PlannedCall& p, StreamRef stream) const {
    const TuneKey key{p.plan, detail::size_class(p.n),
                      p.plan.layout == Layout::rows ? p.shape[p.plan.ndim - 1] : 0};
    const detail::TunedLaunch* found;
    try {
        found =
            &tunings.get(detail::current_context(), key, [&] { return tune_launch(p, stream); });
    } catch (const detail::TuningDeferred&) { // captured into a graph: untuned this time
        return;
    }
    const detail::TunedLaunch& tuned = *found;
    if (tuned.choice.block != p.plan.block) {
        p.plan.block = tuned.choice.block;
        size_grid(p);
    }
    if (tuned.max_grid && p.grid.x > tuned.max_grid) p.grid.x = tuned.max_grid;
}

// Every element is computed the same way whatever the block and grid (the loops are grid-stride
// loops), so each candidate gives the untuned results.
detail::TunedLaunch ElementwiseKernel::Impl::tune_launch(const PlannedCall& p,
                                                         StreamRef stream) const {
    const detail::LaunchChoice fallback{p.plan.block, 0};
    // The tiled layout's 32 x 8 tiles are its code; code run per thread around the loop (loop_prep,
    // after_loop) may keep per-thread state whose results follow the grid.
    if (p.plan.layout == Layout::tiled || !def.loop_prep.empty() || !def.after_loop.empty()) {
        detail::count_tuning_skipped();
        return {fallback, 0};
    }
    const int max_block = p.plan.layout == Layout::rows
                              ? static_cast<int>(ceil_div(p.shape[p.plan.ndim - 1], 32) * 32)
                              : 1024;
    std::vector<detail::LaunchChoice> candidates;
    for (int block : detail::block_candidates(p.plan.block, 128, max_block))
        for (int waves : {0, 1, 4})
            if (waves == 0 || p.plan.layout != Layout::rows)
                candidates.push_back(
                    {static_cast<std::uint16_t>(block), static_cast<std::uint16_t>(waves)});

    const Device device = Device::current();
    const int multiprocessors = device.multiprocessor_count();
    const cache::Key key = detail::tuning_key(
        "elementwise", source(p).source, nvrtc_options,
        "n" + std::to_string(detail::size_class(p.n)) + " inner" +
            std::to_string(p.plan.layout == Layout::rows ? p.shape[p.plan.ndim - 1] : 0),
        device.name(), device.compute_capability_major(), device.compute_capability_minor());

    // A candidate ready to launch: the plan with its block, its function, and its grid cap.
    auto ready_for = [&](const detail::LaunchChoice& choice, PlannedCall& q) {
        q.plan.block = choice.block;
        size_grid(q);
        const Function& f = function(q);
        const std::uint32_t cap = detail::grid_cap(
            choice.waves, multiprocessors, f.max_active_blocks_per_multiprocessor(choice.block));
        if (cap && q.grid.x > cap) q.grid.x = cap;
        return std::make_pair(&f, cap);
    };
    return detail::tune_launch(
        p, candidates, key, stream, ready_for,
        [&](const PlannedCall& q, const Function& f) { launch(q, f, stream); });
}

Outputs ElementwiseKernel::call(const Arg* args, std::size_t count,
                                const CallOptions& options) const {
    const detail::CallScope on_device(options.device.value_or(-1));
    // Tuning, when asked for, may change the block and grid, never the results.
    const bool tuned = !options.block_size && detail::tuning_requested(m_impl->tune, options.tune);
    detail::RepeatCall repeat_call(!tuned, [&](detail::CallFingerprint& print) {
        return m_impl->fingerprint(args, count, options, print);
    });
    {
        Outputs outputs;
        if (repeat_call.repeat(m_impl->def.params, args, options.stream, !m_impl->no_return,
                               outputs))
            return outputs;
    }
    PlannedCall p;
    m_impl->plan_call(args, count, options, /*allocate=*/true, p);
    detail::trace_mark("elementwise call planned (bound, outputs, layout)");
    if (p.n > 0) {
        if (tuned) m_impl->apply_tuning(p, options.stream);
        repeat_call.launch([&](detail::RepeatLaunch* record) {
            m_impl->launch(p, m_impl->function(p), options.stream, record);
        });
    }
    Outputs outputs;
    if (!m_impl->no_return)
        for (std::size_t k = p.ops.inputs; k < p.ops.count; ++k)
            outputs.push_back(std::move(p.ops.arrays[k]));
    return outputs;
}

std::string ElementwiseKernel::source_for(const Arg* args, std::size_t count,
                                          const CallOptions& options) const {
    return detail::source_for<PlannedCall>(*m_impl, args, count, options);
}

std::shared_ptr<const Program> ElementwiseKernel::compile_for(const Arg* args, std::size_t count,
                                                              const CallOptions& options,
                                                              const std::string& arch) const {
    return detail::compile_for<PlannedCall>(*m_impl, args, count, options, arch);
}

std::string ElementwiseKernel::describe_for(const Arg* args, std::size_t count,
                                            const CallOptions& options) const {
    return detail::describe_for<PlannedCall>(*m_impl, args, count, options);
}

const std::string& ElementwiseKernel::name() const noexcept {
    return m_impl->def.params.name;
}
const std::vector<ParamSpec>& ElementwiseKernel::in_params() const noexcept {
    return m_impl->def.params.inputs;
}
const std::vector<ParamSpec>& ElementwiseKernel::out_params() const noexcept {
    return m_impl->def.params.outputs;
}

} // namespace kiln
