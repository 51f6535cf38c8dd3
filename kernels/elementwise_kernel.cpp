#include "kiln/elementwise_kernel.hpp"

#include "elementwise_codegen.hpp"
#include "elementwise_plan.hpp"
#include "index_math.hpp"
#include "kernel_description.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"
#include "kiln/module.hpp"
#include "operand_devices.hpp"
#include "operands.hpp"
#include "param_writer.hpp"
#include "per_context_cache.hpp"
#include "specialization.hpp"
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
struct Prepared {
    Plan plan{};
    detail::Operands ops;
    Dims shape; // loop shape, collapsed
    std::int64_t n = 0;
    std::array<Dims, detail::kMaxParams> strides; // array operands' element strides over shape
    Dim3 grid, block;
    const CallOptions* call = nullptr; // for the description, when it compiles
};

} // namespace

struct ElementwiseKernel::Impl {
    explicit Impl(detail::ElementwiseDefinition definition)
        : def(std::move(definition)) {}

    detail::ElementwiseDefinition def;
    std::vector<std::string> nvrtc_options;
    bool no_return = false, reduce_dims = true;

    // The loaded specializations, per context and signature.
    mutable detail::PerContextCache<Function, Plan, detail::SignatureHash<Plan>> functions;

    const detail::KernelParams& params() const noexcept { return def.params; }
    // Binding, the loop shape, output allocation (when @p allocate) and layout choice.
    void prepare(const Arg* args, std::size_t count, const CallOptions& options, bool allocate,
                 Prepared& p) const;
    Dims loop_shape(const CallOptions& options, const detail::Operands& ops) const;
    void choose_layout(const CallOptions& options, Prepared& p) const;
    detail::GeneratedSource source(const Prepared& p) const {
        return generate_elementwise(def, p.plan, p.ops.bindings);
    }
    std::string describe(const Prepared& p) const;
    detail::CompiledSpecialization compile(const Prepared& p, const std::string& arch) const {
        return detail::compile_specialization(def.params, source(p), nvrtc_options, arch,
                                              describe(p));
    }
    const Function& function(const Prepared& p) const;
    void launch(const Prepared& p, const Function& f, StreamRef stream) const;
};

void ElementwiseKernel::Impl::prepare(const Arg* args, std::size_t count,
                                      const CallOptions& options, bool allocate,
                                      Prepared& p) const {
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
    std::optional<Dims> shape = detail::broadcast_inputs(ops);
    for (std::size_t k = ops.inputs; !shape && k < ops.given; ++k)
        if (ops.is(k, OperandKind::array)) shape = ops.arrays[k].shape();
    if (!shape)
        params().bad_call("cannot tell the loop size: no non-raw array is given; pass "
                          "CallOptions::size with raw arrays");
    detail::check_given_outputs(params(), ops, *shape, "the inputs broadcast to");
    return *shape;
}

void ElementwiseKernel::Impl::choose_layout(const CallOptions& options, Prepared& p) const {
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
        index64 = index64 || a.size() >= kIndex32Limit ||
                  max_offset(a.shape(), a.strides()) / static_cast<std::int64_t>(a.itemsize()) >=
                      kIndex32Limit;
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
    const auto blocks_for = [](std::int64_t threads, int block) {
        return static_cast<unsigned>(std::min<std::int64_t>(ceil_div(threads, block), 0x7fffffff));
    };
    if (flat) {
        plan.layout = Layout::flat;
        plan.vec = static_cast<std::uint8_t>(p.n >= 8 ? vector_width(false) : 1);
        const std::int64_t threads = ceil_div(p.n, plan.vec);
        p.block = Dim3(plan.block);
        p.grid = Dim3(std::max(1u, blocks_for(threads, plan.block)));
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
        p.block = Dim3(plan.block);
        p.grid = Dim3(blocks_for(inner_threads, plan.block),
                      static_cast<unsigned>(std::min<std::int64_t>(p.n / inner, 65535)));
        return;
    }
    plan.layout = Layout::strided;
    p.block = Dim3(plan.block);
    p.grid = Dim3(std::max(1u, blocks_for(p.n, plan.block)));
}

std::string ElementwiseKernel::Impl::describe(const Prepared& p) const {
    detail::Json spec = detail::describe_params(def.params);
    spec["operation"] = def.operation;
    detail::describe_text(spec, "preamble", def.preamble);
    detail::describe_text(spec, "loop_prep", def.loop_prep);
    detail::describe_text(spec, "after_loop", def.after_loop);
    detail::describe_options(spec, nvrtc_options);
    if (no_return) spec["no_return"] = true;
    if (!reduce_dims) spec["reduce_dims"] = false;
    detail::Json call = detail::Json::object();
    if (p.call->size) call["size"] = *p.call->size;
    if (p.call->block_size) call["block_size"] = *p.call->block_size;
    return detail::describe_call("elementwise", std::move(spec), p.ops, call);
}

const Function& ElementwiseKernel::Impl::function(const Prepared& p) const {
    return functions.get(detail::current_context(), p.plan, [&] {
        // First call with this signature here: generate, compile (memory and disk caches), load.
        return detail::load_specialization(def.params, compile(p, Device::current().arch()));
    });
}

void ElementwiseKernel::Impl::launch(const Prepared& p, const Function& f, StreamRef stream) const {
    detail::ParamWriter w;
    const Plan& plan = p.plan;
    const bool index64 = plan.index64;
    const bool flat = plan.layout == Layout::flat;
    for (int k = 0; k < plan.count; ++k) {
        const auto& op = plan.operands[k];
        switch (op.kind) {
        case OperandKind::array:
            w.pointer(p.ops.arrays[k].data());
            if (!flat)
                for (int d = 0; d < plan.ndim; ++d)
                    w.index(p.strides[k][d], index64);
            break;
        case OperandKind::raw: {
            const Array& a = p.ops.arrays[k];
            const auto item = static_cast<std::int64_t>(a.itemsize());
            w.pointer(a.data());
            const int rnd = std::max(1, a.ndim());
            for (int d = 0; d < rnd; ++d)
                w.index(a.ndim() ? a.shape()[d] : 1, index64);
            for (int d = 0; d < rnd; ++d)
                w.index(a.ndim() ? a.strides()[d] / item : 1, index64);
            w.index(a.size(), index64);
            w.pad_to(8);
            break;
        }
        case OperandKind::scalar:
            w.scalar(*p.ops.scalars[k], op.dtype);
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
        !raw_output && detail::outputs_are_write_only(def.operation, out_names);
    m_impl->nvrtc_options = std::move(options.options);
    m_impl->no_return = options.no_return;
    m_impl->reduce_dims = options.reduce_dims;
}

ElementwiseKernel::~ElementwiseKernel() = default;
ElementwiseKernel::ElementwiseKernel(ElementwiseKernel&&) noexcept = default;
ElementwiseKernel& ElementwiseKernel::operator=(ElementwiseKernel&&) noexcept = default;

Outputs ElementwiseKernel::call(const Arg* args, std::size_t count,
                                const CallOptions& options) const {
    const detail::DeviceScope on_device(options.device.value_or(-1));
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/true, p);
    if (p.n > 0) m_impl->launch(p, m_impl->function(p), options.stream);
    Outputs outputs;
    if (!m_impl->no_return)
        for (std::size_t k = p.ops.inputs; k < p.ops.count; ++k)
            outputs.push_back(p.ops.arrays[k]);
    return outputs;
}

std::string ElementwiseKernel::source_for(const Arg* args, std::size_t count,
                                          const CallOptions& options) const {
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/false, p);
    return m_impl->source(p).source;
}

std::shared_ptr<const Program> ElementwiseKernel::compile_for(const Arg* args, std::size_t count,
                                                              const CallOptions& options,
                                                              const std::string& arch) const {
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/false, p);
    return m_impl->compile(p, arch).program;
}

std::string ElementwiseKernel::describe_for(const Arg* args, std::size_t count,
                                            const CallOptions& options) const {
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/false, p);
    return m_impl->describe(p);
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
