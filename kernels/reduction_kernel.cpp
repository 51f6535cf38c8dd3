#include "kiln/reduction_kernel.hpp"

#include "device_headers.hpp"
#include "index_math.hpp"
#include "kiln/compiler.hpp"
#include "kiln/detail/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "kiln/module.hpp"
#include "param_writer.hpp"
#include "reduction_codegen.hpp"
#include "reduction_plan.hpp"
#include "reduction_workspace.hpp"
#include "type_binding.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace kiln {

using detail::ceil_div;
using detail::is_identifier;
using detail::kIndex32Limit;
using detail::max_offset;
using detail::OperandKind;
using detail::ReduceLayout;
using detail::ReductionPlan;

namespace {

constexpr int kAssumedMultiprocessors = 132; // source_for without a device (an H100)
constexpr int kUnknownSlotBytes = 64; // partial-result slot for reduce types Kiln cannot size

bool blank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isspace(c); });
}

// One call's decisions before a kernel is chosen: no strings, no heap.
struct Prepared {
    ReductionPlan plan{};
    detail::Bindings bindings{};
    std::array<Array, detail::kMaxParams> arrays;
    std::array<const Scalar*, detail::kMaxParams> scalars{};
    std::array<Dims, detail::kMaxParams> strides; // elements: inputs kept+reduced, outputs kept
    Dims kshape, rshape;
    std::int64_t n_in = 0, n_out = 0, n_red = 0, split = 1;
    std::size_t partial_bytes = 0, counters = 0;
    Dim3 grid, block;
    int multiprocessors = kAssumedMultiprocessors;
};

// sizeof(kiln_acc) for reduce types Kiln knows, else a generous slot the kernel checks.
int slot_bytes(const std::string& reduce_type, bool has_identity) {
    DType dtype;
    try {
        dtype = parse_dtype(reduce_type);
    } catch (const ArgumentError&) {
        return kUnknownSlotBytes;
    }
    const std::size_t size = itemsize(dtype), align = detail::device_alignment(dtype);
    const std::size_t acc = has_identity ? size : (size + 1 + align - 1) / align * align;
    return static_cast<int>((acc + 3) / 4 * 4);
}

} // namespace

struct ReductionKernel::Impl {
    detail::ReductionDefinition def;
    std::vector<ParamSpec> inputs, outputs;
    std::vector<std::string> nvrtc_options;
    bool reduce_dims = true, empty_is_error = false;

    struct CacheKey {
        ReductionPlan plan;
        CUcontext context;
        bool operator==(const CacheKey& o) const { return context == o.context && plan == o.plan; }
    };
    struct CacheKeyHash {
        std::size_t operator()(const CacheKey& k) const noexcept {
            return detail::SignatureHash<ReductionPlan>{}(k.plan) ^
                   (std::hash<void*>{}(k.context) << 1);
        }
    };
    mutable std::mutex mutex;
    struct Loaded {
        Function function;
        int blocks_per_multiprocessor; // occupancy, which sizes the grid
    };
    mutable std::unordered_map<CacheKey, Loaded, CacheKeyHash> functions;

    [[noreturn]] void bad_call(const std::string& what) const {
        throw ArgumentError("ReductionKernel '" + def.name + "': " + what);
    }
    const ParamSpec& param(std::size_t k) const {
        return k < inputs.size() ? inputs[k] : outputs[k - inputs.size()];
    }
    void bind(const Arg* args, std::size_t count, Prepared& p) const;
    void shape_call(const Arg* args, std::size_t count, const ReduceCall& how, bool allocate,
                    Prepared& p) const;
    void choose_layout(Prepared& p, const std::array<bool, kMaxDims>& reduced,
                       const Dims& full_shape, bool keepdims) const;
    detail::GeneratedReduction source(const Prepared& p) const {
        return detail::generate_reduction(def, p.plan, p.bindings);
    }
    // What compile() made and with which options: Module::load recompiles with the same ones
    // when the driver rejects a cubin read from the disk cache.
    struct Compiled {
        std::shared_ptr<const Program> program;
        CompileOptions options;
    };
    Compiled compile(const Prepared& p, const std::string& arch) const;
    std::string compile_error_summary(const Prepared& p,
                                      const detail::GeneratedReduction& generated,
                                      const std::string& log) const;
    const Loaded& function(const Prepared& p, CUcontext context) const;
    void size_launch(Prepared& p, int blocks_per_multiprocessor) const;
    void launch(const Prepared& p, const Function& f, CUcontext context, StreamRef stream) const;
};

void ReductionKernel::Impl::bind(const Arg* args, std::size_t count, Prepared& p) const {
    const std::size_t nin = inputs.size(), nout = outputs.size();
    if (count != nin && count != nin + nout)
        bad_call("takes " + std::to_string(nin) + " input(s) optionally followed by " +
                 std::to_string(nout) + " output(s); " + std::to_string(count) +
                 " argument(s) were given");
    DType dtypes[detail::kMaxParams];
    detail::bind_types(inputs, outputs, args, count, "ReductionKernel '" + def.name + "'",
                       p.bindings, dtypes);
    ReductionPlan& plan = p.plan;
    plan.count = static_cast<std::uint8_t>(nin + nout);
    for (std::size_t k = 0; k < nin + nout; ++k) {
        const DType dtype = dtypes[k];
        auto& op = plan.operands[k];
        op.dtype = dtype;
        op.kind = k < count && !args[k].is_array() ? OperandKind::scalar : OperandKind::array;
        if (op.kind == OperandKind::scalar) p.scalars[k] = &args[k].scalar();
        if (k < count && args[k].is_array()) p.arrays[k] = args[k].array();
    }
}

void ReductionKernel::Impl::shape_call(const Arg* args, std::size_t count, const ReduceCall& how,
                                       bool allocate, Prepared& p) const {
    bind(args, count, p);
    const std::size_t nin = inputs.size(), nout = outputs.size();
    // The broadcast shape of the input arrays.
    Dims shape;
    bool any_array = false;
    for (std::size_t k = 0; k < nin; ++k) {
        if (p.plan.operands[k].kind != OperandKind::array) continue;
        shape = any_array ? broadcast_shapes({shape, p.arrays[k].shape()}) : p.arrays[k].shape();
        any_array = true;
    }
    if (!any_array) bad_call("at least one input must be an array");
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
                throw AxisError("ReductionKernel '" + def.name + "': axis " +
                                std::to_string(given) + " is out of bounds for an array of " +
                                "dimension " + std::to_string(ndim));
            if (reduced[axis])
                throw AxisError("ReductionKernel '" + def.name + "': axis " + std::to_string(axis) +
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
        bad_call("a reduction over zero elements has no identity (input shape " +
                 shape.to_string() + ", axis=" + how.axis.to_string() +
                 "): give the kernel an identity or reduce a non-empty array");

    for (std::size_t k = nin; k < nin + nout; ++k) {
        if (k < count) {
            if (p.arrays[k].shape() != out_shape)
                throw ShapeError("ReductionKernel '" + def.name + "': output '" + param(k).name +
                                 "' has shape " + p.arrays[k].shape().to_string() +
                                 " but the reduction gives " + out_shape.to_string());
            continue;
        }
        const DType dtype = p.plan.operands[k].dtype;
        p.arrays[k] = allocate ? empty(out_shape, dtype, how.stream)
                               // Described only (source_for): contiguous, suitably aligned.
                               : Array::wrap(CUdeviceptr{1} << 20, out_shape, dtype);
    }
    choose_layout(p, reduced, shape, how.keepdims);
}

void ReductionKernel::Impl::choose_layout(Prepared& p, const std::array<bool, kMaxDims>& reduced,
                                          const Dims& shape, bool keepdims) const {
    ReductionPlan& plan = p.plan;
    const int nin = static_cast<int>(inputs.size());
    const int ndim = shape.size();
    auto is_array_input = [&](int k) {
        return k < nin && plan.operands[k].kind == OperandKind::array;
    };
    // Element strides of every operand over the full shape (inputs; 0 where broadcast) or over
    // the kept axes (outputs).
    std::array<Dims, detail::kMaxParams> full;
    for (int k = 0; k < plan.count; ++k) {
        if (k < nin && !is_array_input(k)) continue;
        const Array& a = p.arrays[k];
        const auto item = static_cast<std::int64_t>(a.itemsize());
        for (std::int64_t s : a.strides())
            if (s % item != 0)
                bad_call("array '" + param(k).name +
                         "' has strides that are not a multiple of its itemsize");
        if (k < nin) {
            full[k].resize(ndim, 0);
            for (int d = 0; d < a.ndim(); ++d) {
                const int at = ndim - a.ndim() + d;
                full[k][at] = a.shape()[d] == 1 ? 0 : a.strides()[d] / item;
            }
        } else {
            int at = 0;
            for (int d = 0; d < ndim; ++d) {
                if (reduced[d]) {
                    if (keepdims) ++at;
                    continue;
                }
                full[k].push_back(a.strides()[at++] / item);
            }
        }
    }
    // Kept axes then reduced axes, extent-1 axes dropped, neighbours merged where every operand
    // walks them contiguously.
    Dims kshape, rshape;
    std::array<Dims, detail::kMaxParams> kst, rst;
    int kept_index = 0;
    for (int d = 0; d < ndim; ++d) {
        const bool is_reduced = reduced[d];
        const int out_d = is_reduced ? -1 : kept_index++;
        if (shape[d] == 1) continue;
        Dims& ext = is_reduced ? rshape : kshape;
        auto& st = is_reduced ? rst : kst;
        auto stride_of = [&](int k) { return k < nin ? full[k][d] : full[k][out_d]; };
        auto takes_part = [&](int k) { return is_array_input(k) || (!is_reduced && k >= nin); };
        bool merge = reduce_dims && ext.size() > 0;
        for (int k = 0; merge && k < plan.count; ++k) {
            if (!takes_part(k)) continue;
            // A product that overflows is no stride of this array: the axes do not merge.
            std::int64_t outer = 0;
            merge = !__builtin_mul_overflow(stride_of(k), shape[d], &outer) &&
                    st[k][ext.size() - 1] == outer;
        }
        if (merge) {
            ext[ext.size() - 1] *= shape[d];
            for (int k = 0; k < plan.count; ++k)
                if (takes_part(k)) st[k][ext.size() - 1] = stride_of(k);
        } else {
            ext.push_back(shape[d]);
            for (int k = 0; k < plan.count; ++k)
                if (takes_part(k)) st[k].push_back(stride_of(k));
        }
    }
    if (kshape.empty()) {
        kshape.push_back(1);
        for (int k = 0; k < plan.count; ++k)
            if (is_array_input(k) || k >= nin) kst[k].push_back(0);
    }
    if (rshape.empty()) {
        rshape.push_back(1);
        for (int k = 0; k < nin; ++k)
            if (is_array_input(k)) rst[k].push_back(0);
    }
    const int K = kshape.size(), R = rshape.size();
    plan.kept_ndim = static_cast<std::uint8_t>(K);
    plan.red_ndim = static_cast<std::uint8_t>(R);
    for (int k = 0; k < plan.count; ++k) {
        if (!is_array_input(k) && k < nin) continue;
        p.strides[k] = kst[k];
        if (k < nin)
            for (int d = 0; d < R; ++d)
                p.strides[k].push_back(rst[k][d]);
    }
    p.kshape = kshape;
    p.rshape = rshape;

    bool index64 = p.n_in >= kIndex32Limit;
    std::size_t widest = 1;
    int primary = -1;
    for (int k = 0; k < plan.count; ++k) {
        if (k < nin && !is_array_input(k)) continue;
        const Dims& op_shape = k < nin ? [&] {
            Dims all = kshape;
            for (int d = 0; d < R; ++d)
                all.push_back(rshape[d]);
            return all;
        }()
                                       : kshape;
        index64 = index64 || max_offset(op_shape, p.strides[k]) >= kIndex32Limit;
        if (k < nin) {
            widest = std::max(widest, itemsize(plan.operands[k].dtype));
            if (primary < 0) primary = k;
        }
    }
    plan.index64 = index64;
    // The reduce type's dtype where Kiln can tell it: given by name, a bound placeholder, or the
    // first output's.
    std::string reduce_dtype = def.reduce_type;
    if (reduce_dtype.empty()) reduce_dtype = kiln::name(plan.operands[nin].dtype);
    if (reduce_dtype.size() == 1 && p.bindings[static_cast<unsigned char>(reduce_dtype[0])])
        reduce_dtype = kiln::name(*p.bindings[static_cast<unsigned char>(reduce_dtype[0])]);
    plan.slot_bytes = static_cast<std::uint8_t>(slot_bytes(reduce_dtype, !def.identity.empty()));
    if (p.n_out == 0) return; // nothing to launch

    // Whether every array input can be read @p vec elements at a time along axis @p axis (an
    // index into the input's strides), every other stride keeping vectors aligned.
    auto vectorizable = [&](int vec, int axis, std::int64_t extent) {
        if (extent % vec != 0) return false;
        for (int k = 0; k < nin; ++k) {
            if (!is_array_input(k)) continue;
            if (p.strides[k][axis] != 1) return false;
            if (p.arrays[k].data() % (vec * itemsize(plan.operands[k].dtype)) != 0) return false;
            for (int d = 0; d < p.strides[k].size(); ++d)
                if (d != axis && p.strides[k][d] % vec != 0) return false;
        }
        return true;
    };
    const int max_vec = static_cast<int>(std::min<std::size_t>(8, 16 / widest));
    const int sms = p.multiprocessors;
    const std::int64_t inner_red_stride = primary >= 0 ? p.strides[primary][K + R - 1] : 1;
    const std::int64_t inner_kept_stride = primary >= 0 ? p.strides[primary][K - 1] : 0;
    const std::int64_t C = kshape[K - 1];

    if (std::llabs(inner_red_stride) != 1 && inner_kept_stride == 1 && C >= 16 && p.n_red > 1) {
        // Columns: a thread per output (times vec), rows split across the block and the grid.
        plan.layout = ReduceLayout::outer;
        plan.block_x = 32;
        plan.block_y = 8;
        const int threads = plan.block_x * plan.block_y;
        int vec = max_vec;
        while (vec > 1 &&
               (!vectorizable(vec, K - 1, C) || threads * vec * plan.slot_bytes > 32 * 1024))
            vec /= 2;
        plan.vec = static_cast<std::uint8_t>(vec);
        return;
    }

    // A warp, a block or several blocks per output, walking the reduction.
    plan.layout = ReduceLayout::group;
    int vec = max_vec;
    while (vec > 1 && !vectorizable(vec, K + R - 1, rshape[R - 1]))
        vec /= 2;
    plan.vec = static_cast<std::uint8_t>(vec);
    plan.warp_group = p.n_out >= std::int64_t{sms} * 16 && p.n_red / vec <= 32 * 16;
    plan.block_x = plan.warp_group ? 256 : p.n_out < sms * 4 ? 512 : 256;
}

void ReductionKernel::Impl::size_launch(Prepared& p, int blocks_per_multiprocessor) const {
    const ReductionPlan& plan = p.plan;
    // One full wave of blocks: splitting further would leave a tail of idle multiprocessors.
    const std::int64_t resident =
        std::int64_t{p.multiprocessors} * std::max(1, blocks_per_multiprocessor);
    p.block = Dim3(plan.block_x, plan.block_y);
    if (plan.layout == ReduceLayout::outer) {
        const std::int64_t C = p.kshape[plan.kept_ndim - 1];
        const std::int64_t columns = ceil_div(C, 32 * plan.vec);
        const std::int64_t batches = p.n_out / C;
        const std::int64_t z = std::min<std::int64_t>(batches, 65535);
        std::int64_t split = 1;
        if (columns * z < resident) // each thread still reads 16 rows or more
            split = std::min(resident / (columns * z),
                             std::max<std::int64_t>(1, p.n_red / (plan.block_y * 16)));
        p.split = std::clamp<std::int64_t>(split, 1, 65535);
        p.grid = Dim3(static_cast<unsigned>(columns), static_cast<unsigned>(p.split),
                      static_cast<unsigned>(z));
        if (p.split > 1) {
            p.partial_bytes = static_cast<std::size_t>(batches * p.split * C) * plan.slot_bytes;
            p.counters = static_cast<std::size_t>(batches * columns);
        }
        return;
    }
    if (plan.warp_group) {
        p.grid = Dim3(static_cast<unsigned>(
            std::min<std::int64_t>(ceil_div(p.n_out, plan.block_x / 32), 0x7fffffff)));
        return;
    }
    std::int64_t split = 1;
    if (p.n_out < resident) // few outputs: split each, each thread still reading 8 vectors
        split = std::min(resident / p.n_out,
                         std::max<std::int64_t>(1, p.n_red / plan.vec / (plan.block_x * 8)));
    p.split = split;
    p.grid = Dim3(static_cast<unsigned>(std::min<std::int64_t>(p.n_out * split, 0x7fffffff)));
    if (split > 1) {
        p.partial_bytes = static_cast<std::size_t>(p.n_out * split) * plan.slot_bytes;
        p.counters = static_cast<std::size_t>(p.n_out);
    }
}

ReductionKernel::Impl::Compiled ReductionKernel::Impl::compile(const Prepared& p,
                                                               const std::string& arch) const {
    CompileOptions options;
    options.arch = arch;
    options.options = nvrtc_options;
    options.headers = detail::device_headers();
    const detail::GeneratedReduction generated = source(p);
    options.cuda_headers = generated.source.find("#include <cuda_fp16.h>") != std::string::npos;
    try {
        auto program = Compiler::global().compile(generated.source, options);
        return {std::move(program), std::move(options)};
    } catch (const CompileError& e) {
        throw CompileError(compile_error_summary(p, generated, e.log()), e.log(), e.options(),
                           e.source());
    }
}

// Names the piece of the kernel at fault: NVRTC reports "<program>(LINE): error: ...".
std::string ReductionKernel::Impl::compile_error_summary(
    const Prepared& p, const detail::GeneratedReduction& generated, const std::string& log) const {
    std::string summary = "ReductionKernel '" + def.name + "' does not compile";
    const std::size_t at = log.find("): error");
    if (at == std::string::npos) return summary;
    const std::size_t open = log.rfind('(', at);
    const char* piece = open == std::string::npos
                            ? nullptr
                            : generated.lines.piece_at(std::atoi(log.c_str() + open + 1));
    if (piece) {
        const std::string what = piece;
        const std::string text = what == "the identity"              ? def.identity
                                 : what == "the reduce expression"   ? def.reduce_expr
                                 : what == "the map expression"      ? def.map_expr
                                 : what == "the post-map expression" ? def.post_map_expr
                                 : what == "the reduce type"         ? def.reduce_type
                                                                     : std::string();
        summary += ": " + what + (text.empty() ? "" : " '" + text + "'") + " is at fault";
        if (what == "the identity")
            summary += " (it must convert to the reduce type " +
                       detail::resolve_reduce_type(def, p.plan) + ")";
    }
    const std::size_t end = log.find('\n', at);
    return summary + ": " + log.substr(at + 3, end == std::string::npos ? end : end - at - 3);
}

const ReductionKernel::Impl::Loaded& ReductionKernel::Impl::function(const Prepared& p,
                                                                     CUcontext context) const {
    const CacheKey key{p.plan, context};
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto found = functions.find(key);
        if (found != functions.end()) return found->second;
    }
    // First call with this signature: generate, compile (memory and disk caches), load.
    const Compiled compiled = compile(p, Device::current().arch());
    auto module = Module::load(compiled.program, compiled.options);
    Function f = module->function(def.name);
    const int blocks = f.max_active_blocks_per_multiprocessor(p.plan.block_x * p.plan.block_y);
    std::lock_guard<std::mutex> lock(mutex);
    return functions.emplace(key, Loaded{std::move(f), blocks}).first->second;
}

void ReductionKernel::Impl::launch(const Prepared& p, const Function& f, CUcontext context,
                                   StreamRef stream) const {
    const ReductionPlan& plan = p.plan;
    const bool index64 = plan.index64;
    detail::ParamWriter w;
    for (int k = 0; k < plan.count; ++k) {
        const auto& op = plan.operands[k];
        if (op.kind == OperandKind::scalar) {
            w.scalar(*p.scalars[k], op.dtype);
            continue;
        }
        w.pointer(p.arrays[k].data());
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
    w.pointer(lease.partials);
    w.pointer(lease.counters);
    const std::size_t size = w.finish();
    void* args[] = {w.data()};
    f.launch_packed(LaunchConfig{p.grid, p.block, 0, stream}, args, &size, 1);
}

ReductionKernel::ReductionKernel(std::string in_params, std::string out_params,
                                 std::string map_expr, std::string reduce_expr,
                                 std::string post_map_expr, std::string identity, std::string name,
                                 ReductionOptions options)
    : m_impl(std::make_unique<Impl>()) {
    if (!is_identifier(name)) throw SpecError("kernel name '" + name + "' is not a C identifier");
    m_impl->inputs = parse_param_specs(in_params);
    m_impl->outputs = parse_param_specs(out_params);
    check_unique_names(m_impl->inputs, m_impl->outputs, in_params, out_params);
    const std::string where = "ReductionKernel '" + name + "': ";
    if (m_impl->inputs.empty()) throw SpecError(where + "needs at least one input parameter");
    if (m_impl->outputs.empty()) throw SpecError(where + "needs at least one output parameter");
    if (m_impl->inputs.size() + m_impl->outputs.size() > detail::kMaxParams)
        throw SpecError(where + "at most " + std::to_string(detail::kMaxParams) + " parameters");
    if (m_impl->outputs.size() > Outputs::kCapacity)
        throw SpecError(where + "at most " + std::to_string(Outputs::kCapacity) +
                        " output parameters");
    for (const auto* list : {&m_impl->inputs, &m_impl->outputs})
        for (const ParamSpec& spec : *list) {
            if (spec.raw)
                throw SpecError(where + "parameter '" + spec.name +
                                "' is raw; ReductionKernel takes no raw parameters");
            if (list == &m_impl->outputs && (spec.name == "a" || spec.name == "b"))
                throw SpecError(where + "output '" + spec.name +
                                "' clashes with the reduced value the post-map expression sees "
                                "as 'a' (and 'b' in the reduce expression): rename it");
        }
    if (blank(map_expr)) throw SpecError(where + "the map expression is empty");
    if (blank(reduce_expr)) throw SpecError(where + "the reduce expression is empty");
    if (blank(post_map_expr)) throw SpecError(where + "the post-map expression is empty");
    auto& def = m_impl->def;
    def.params = m_impl->inputs;
    def.params.insert(def.params.end(), m_impl->outputs.begin(), m_impl->outputs.end());
    def.input_count = m_impl->inputs.size();
    def.map_expr = std::move(map_expr);
    def.reduce_expr = std::move(reduce_expr);
    def.post_map_expr = std::move(post_map_expr);
    def.identity = blank(identity) ? std::string() : std::move(identity);
    def.name = std::move(name);
    def.preamble = std::move(options.preamble);
    def.reduce_type = std::move(options.reduce_type);
    m_impl->nvrtc_options = std::move(options.options);
    m_impl->reduce_dims = options.reduce_dims;
    m_impl->empty_is_error = options.empty_is_error;
}

ReductionKernel::~ReductionKernel() = default;
ReductionKernel::ReductionKernel(ReductionKernel&&) noexcept = default;
ReductionKernel& ReductionKernel::operator=(ReductionKernel&&) noexcept = default;

Outputs ReductionKernel::call(const Arg* args, std::size_t count, const ReduceCall& how) const {
    Prepared p;
    const CUcontext context = detail::current_context();
    // The multiprocessor count shapes the grid: remembered per thread for the last context.
    thread_local CUcontext last_context = nullptr;
    thread_local int last_multiprocessors = 0;
    if (context != last_context) {
        last_multiprocessors = Device::current().multiprocessor_count();
        last_context = context;
    }
    p.multiprocessors = last_multiprocessors;
    m_impl->shape_call(args, count, how, /*allocate=*/true, p);
    if (p.n_out > 0) {
        const Impl::Loaded& loaded = m_impl->function(p, context);
        m_impl->size_launch(p, loaded.blocks_per_multiprocessor);
        m_impl->launch(p, loaded.function, context, how.stream);
    }
    Outputs outputs;
    for (std::size_t k = m_impl->inputs.size(); k < m_impl->def.params.size(); ++k)
        outputs.push_back(p.arrays[k]);
    return outputs;
}

std::string ReductionKernel::source_for(const Arg* args, std::size_t count,
                                        const ReduceCall& how) const {
    Prepared p;
    m_impl->shape_call(args, count, how, /*allocate=*/false, p);
    return m_impl->source(p).source;
}

std::shared_ptr<const Program> ReductionKernel::compile_for(const Arg* args, std::size_t count,
                                                            const ReduceCall& how,
                                                            const std::string& arch) const {
    Prepared p;
    m_impl->shape_call(args, count, how, /*allocate=*/false, p);
    return m_impl->compile(p, arch).program;
}

const std::string& ReductionKernel::name() const noexcept {
    return m_impl->def.name;
}
const std::vector<ParamSpec>& ReductionKernel::in_params() const noexcept {
    return m_impl->inputs;
}
const std::vector<ParamSpec>& ReductionKernel::out_params() const noexcept {
    return m_impl->outputs;
}

} // namespace kiln
