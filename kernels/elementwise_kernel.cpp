#include "kiln/elementwise_kernel.hpp"

#include "device_headers.hpp"
#include "elementwise_codegen.hpp"
#include "elementwise_plan.hpp"
#include "index_math.hpp"
#include "kiln/compiler.hpp"
#include "kiln/detail/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "kiln/module.hpp"
#include "param_writer.hpp"
#include "type_binding.hpp"
#include "write_only_outputs.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace kiln {

using detail::ceil_div;
using detail::is_identifier;
using detail::kIndex32Limit;
using detail::Layout;
using detail::max_offset;
using detail::OperandKind;
using detail::Plan;

namespace {

constexpr int kDefaultBlock = 256;
// Per array operand, the loop's view of it: element strides over the (collapsed) loop shape.
struct OperandLayout {
    Dims strides; // in elements
};

// Everything one call decides before a kernel is chosen: no strings, no heap.
struct Prepared {
    Plan plan{};
    detail::Bindings bindings{};
    Dims shape; // loop shape after collapsing
    std::int64_t n = 0;
    std::array<OperandLayout, detail::kMaxParams> layouts;
    std::array<Array, detail::kMaxParams> arrays; // operand arrays (outputs allocated if needed)
    std::array<const Scalar*, detail::kMaxParams> scalars{};
    Dim3 grid, block;
};

[[noreturn]] void bad_call(const std::string& kernel, const std::string& what) {
    throw ArgumentError("ElementwiseKernel '" + kernel + "': " + what);
}

bool aligned(CUdeviceptr p, std::size_t bytes) {
    return p % bytes == 0;
}

} // namespace

struct ElementwiseKernel::Impl {
    detail::ElementwiseDefinition def;
    std::vector<ParamSpec> inputs, outputs;
    std::vector<std::string> nvrtc_options;
    bool no_return = false, reduce_dims = true;

    struct CacheKey {
        Plan plan;
        CUcontext context;
        bool operator==(const CacheKey& o) const { return context == o.context && plan == o.plan; }
    };
    struct CacheKeyHash {
        std::size_t operator()(const CacheKey& k) const noexcept {
            return detail::SignatureHash<Plan>{}(k.plan) ^ (std::hash<void*>{}(k.context) << 1);
        }
    };
    mutable std::mutex mutex;
    mutable std::unordered_map<CacheKey, Function, CacheKeyHash> functions;

    // Binding, broadcasting, output allocation (when @p allocate) and layout choice.
    void prepare(const Arg* args, std::size_t count, const CallOptions& options, bool allocate,
                 Prepared& p) const;
    void choose_layout(const CallOptions& options, Prepared& p) const;
    std::string source(const Prepared& p) const {
        return generate_elementwise(def, p.plan, p.bindings);
    }
    // What compile() made and with which options: Module::load recompiles with the same ones
    // when the driver rejects a cubin read from the disk cache.
    struct Compiled {
        std::shared_ptr<const Program> program;
        CompileOptions options;
    };
    Compiled compile(const Prepared& p, const std::string& arch) const;
    const Function& function(const Prepared& p) const;
    void launch(const Prepared& p, const Function& f, StreamRef stream) const;
};

void ElementwiseKernel::Impl::prepare(const Arg* args, std::size_t count,
                                      const CallOptions& options, bool allocate,
                                      Prepared& p) const {
    const std::size_t nin = inputs.size(), nout = outputs.size();
    const std::string& name = def.name;
    if (count != nin && count != nin + nout)
        bad_call(name, "takes " + std::to_string(nin) + " input(s)" +
                           (nout ? " optionally followed by " + std::to_string(nout) + " output(s)"
                                 : std::string()) +
                           "; " + std::to_string(count) + " argument(s) were given");
    if (options.block_size && (*options.block_size <= 0 || *options.block_size > 1024))
        bad_call(name, "block size " + std::to_string(*options.block_size) +
                           " is out of range: use 1 to 1024 threads");

    Plan& plan = p.plan;
    plan.count = static_cast<std::uint8_t>(nin + nout);
    auto param_of = [&](std::size_t k) -> const ParamSpec& {
        return k < nin ? inputs[k] : outputs[k - nin];
    };
    DType dtypes[detail::kMaxParams];
    detail::bind_types(inputs, outputs, args, count, "ElementwiseKernel '" + name + "'", p.bindings,
                       dtypes);
    for (std::size_t k = 0; k < nin + nout; ++k) {
        const ParamSpec& param = param_of(k);
        const DType dtype = dtypes[k];
        auto& op = plan.operands[k];
        op.dtype = dtype;
        op.kind = param.raw                            ? OperandKind::raw
                  : (k < count && !args[k].is_array()) ? OperandKind::scalar
                                                       : OperandKind::array;
        if (op.kind == OperandKind::scalar) p.scalars[k] = &args[k].scalar();
        if (k < count && args[k].is_array()) p.arrays[k] = args[k].array();
    }

    // The loop shape: the broadcast of the non-raw arrays, or `size` when every array is raw.
    bool any_array = false;
    Dims shape;
    for (std::size_t k = 0; k < count; ++k) {
        if (plan.operands[k].kind != OperandKind::array) continue;
        if (options.size)
            bad_call(name, "size= needs every array parameter to be raw, but '" + param_of(k).name +
                               "' is not");
        const Dims& s = p.arrays[k].shape();
        if (!any_array) {
            shape = s;
            any_array = true;
            continue;
        }
        if (k >= nin) { // an output must already have the broadcast shape
            if (s != shape)
                throw ShapeError("ElementwiseKernel '" + name + "': output '" + param_of(k).name +
                                 "' has shape " + s.to_string() + " but the inputs broadcast to " +
                                 shape.to_string());
            continue;
        }
        shape = broadcast_shapes({shape, s});
    }
    if (options.size) {
        if (*options.size < 0) bad_call(name, "size= must not be negative");
        shape = Dims{*options.size};
    } else if (!any_array) {
        bad_call(name, "cannot tell the loop size: no non-raw array is given; pass "
                       "CallOptions::size with raw arrays");
    }

    for (std::size_t k = count; k < nin + nout; ++k)
        p.arrays[k] = allocate ? empty(shape, plan.operands[k].dtype, options.stream)
                               // Described only (source_for): contiguous, suitably aligned.
                               : Array::wrap(CUdeviceptr{1} << 20, shape, plan.operands[k].dtype);
    p.shape = shape;
    p.n = shape.product();
    choose_layout(options, p);
}

void ElementwiseKernel::Impl::choose_layout(const CallOptions& options, Prepared& p) const {
    Plan& plan = p.plan;
    const int nd_full = p.shape.size();
    // Element strides of each non-raw array over the full loop shape (0 where broadcast).
    for (int k = 0; k < plan.count; ++k) {
        auto& op = plan.operands[k];
        if (op.kind == OperandKind::raw) {
            const Array& a = p.arrays[k];
            op.raw_ndim = static_cast<std::uint8_t>(a.ndim());
            op.raw_contiguous = a.is_c_contiguous();
            for (std::int64_t s : a.strides())
                if (s % static_cast<std::int64_t>(a.itemsize()) != 0)
                    bad_call(def.name, "array '" + def.params[k].name +
                                           "' has strides that are not a multiple of its itemsize");
            continue;
        }
        if (op.kind != OperandKind::array) continue;
        const Array& a = p.arrays[k];
        const auto item = static_cast<std::int64_t>(a.itemsize());
        Dims strides;
        strides.resize(nd_full, 0);
        for (int d = 0; d < a.ndim(); ++d) {
            const int loop_d = nd_full - a.ndim() + d;
            if (a.strides()[d] % item != 0)
                bad_call(def.name, "array '" + def.params[k].name +
                                       "' has strides that are not a multiple of its itemsize");
            strides[loop_d] = a.shape()[d] == 1 ? 0 : a.strides()[d] / item;
            if (static_cast<std::size_t>(k) >= inputs.size() && strides[loop_d] == 0 &&
                p.shape[loop_d] > 1)
                bad_call(def.name, "output '" + def.params[k].name +
                                       "' is a broadcast view: its elements overlap");
        }
        p.layouts[k].strides = strides;
    }

    // Collapse: drop extent-1 axes, merge neighbours that every operand walks contiguously.
    Dims shape;
    std::array<Dims, detail::kMaxParams> strides;
    for (int d = 0; d < nd_full; ++d) {
        if (reduce_dims && p.shape[d] == 1) continue;
        bool merge = reduce_dims && shape.size() > 0;
        for (int k = 0; merge && k < plan.count; ++k) {
            if (plan.operands[k].kind != OperandKind::array) continue;
            // A product that overflows is no stride of this array: the axes do not merge.
            std::int64_t outer = 0;
            merge = !__builtin_mul_overflow(p.layouts[k].strides[d], p.shape[d], &outer) &&
                    strides[k][shape.size() - 1] == outer;
        }
        if (merge) {
            shape[shape.size() - 1] *= p.shape[d];
            for (int k = 0; k < plan.count; ++k)
                if (plan.operands[k].kind == OperandKind::array)
                    strides[k][shape.size() - 1] = p.layouts[k].strides[d];
        } else {
            shape.push_back(p.shape[d]);
            for (int k = 0; k < plan.count; ++k)
                if (plan.operands[k].kind == OperandKind::array)
                    strides[k].push_back(p.layouts[k].strides[d]);
        }
    }
    if (shape.empty()) { // a single element (or a 0-d loop)
        shape.push_back(p.n);
        for (int k = 0; k < plan.count; ++k)
            strides[k] = Dims{1};
    }
    const int nd = shape.size();
    for (int k = 0; k < plan.count; ++k)
        p.layouts[k].strides = strides[k];
    p.shape = shape;
    plan.ndim = static_cast<std::uint8_t>(nd);

    // 32-bit indexing whenever every offset fits.
    bool index64 = p.n >= kIndex32Limit;
    for (int k = 0; k < plan.count; ++k) {
        if (plan.operands[k].kind == OperandKind::array)
            index64 = index64 || max_offset(shape, strides[k]) >= kIndex32Limit;
        if (plan.operands[k].kind == OperandKind::raw)
            index64 = index64 || p.arrays[k].size() >= kIndex32Limit ||
                      max_offset(p.arrays[k].shape(), p.arrays[k].strides()) /
                              static_cast<std::int64_t>(p.arrays[k].itemsize()) >=
                          kIndex32Limit;
    }
    plan.index64 = index64;
    plan.load_outputs = !def.outputs_write_only;

    bool flat = nd == 1;
    std::size_t widest = 1;
    for (int k = 0; k < plan.count; ++k)
        if (plan.operands[k].kind == OperandKind::array) {
            flat = flat && strides[k][0] == 1;
            widest = std::max(widest, itemsize(plan.operands[k].dtype));
        }
    // Largest vector (at most 16 bytes, 8 elements) every operand's alignment allows.
    auto vector_width = [&](bool rows) {
        int vec = static_cast<int>(std::min<std::size_t>(8, 16 / widest));
        for (; vec > 1; vec /= 2) {
            bool ok = rows ? shape[nd - 1] % vec == 0 : true;
            for (int k = 0; ok && k < plan.count; ++k) {
                if (plan.operands[k].kind != OperandKind::array) continue;
                if (rows && strides[k][nd - 1] == 0) continue; // broadcast along the row
                ok = aligned(p.arrays[k].data(), vec * itemsize(plan.operands[k].dtype));
                for (int d = 0; rows && ok && d < nd - 1; ++d)
                    ok = strides[k][d] % vec == 0;
            }
            if (ok) return vec;
        }
        return 1;
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
    bool transposed = false;
    std::size_t staged_bytes = 0;
    if (nd == 2 && !user_block && shape[0] >= 16 && shape[1] >= 16) {
        for (int k = 0; k < plan.count; ++k)
            if (plan.operands[k].kind == OperandKind::array && strides[k][0] == 1 &&
                std::llabs(strides[k][1]) > 1) {
                transposed = true;
                staged_bytes += 32 * 33 * itemsize(plan.operands[k].dtype);
            }
    }
    if (transposed && staged_bytes <= 40 * 1024) {
        plan.layout = Layout::tiled;
        for (int k = 0; k < plan.count; ++k)
            plan.operands[k].transposed = plan.operands[k].kind == OperandKind::array &&
                                          strides[k][0] == 1 && std::llabs(strides[k][1]) > 1;
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
            if (plan.operands[k].kind == OperandKind::array) {
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

ElementwiseKernel::Impl::Compiled ElementwiseKernel::Impl::compile(const Prepared& p,
                                                                   const std::string& arch) const {
    CompileOptions options;
    options.arch = arch;
    options.options = nvrtc_options;
    options.headers = detail::device_headers();
    options.cuda_headers = detail::needs_cuda_headers(p.plan);
    auto program = Compiler::global().compile(source(p), options);
    return {std::move(program), std::move(options)};
}

const Function& ElementwiseKernel::Impl::function(const Prepared& p) const {
    const CacheKey key{p.plan, detail::current_context()};
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto found = functions.find(key);
        if (found != functions.end()) return found->second;
    }
    // First call with this signature: generate, compile (memory and disk caches), load.
    const Compiled compiled = compile(p, Device::current().arch());
    auto module = Module::load(compiled.program, compiled.options);
    Function f = module->function(def.name);
    std::lock_guard<std::mutex> lock(mutex);
    return functions.emplace(key, std::move(f)).first->second;
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
            w.pointer(p.arrays[k].data());
            if (!flat)
                for (int d = 0; d < plan.ndim; ++d)
                    w.index(p.layouts[k].strides[d], index64);
            break;
        case OperandKind::raw: {
            const Array& a = p.arrays[k];
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
            w.scalar(*p.scalars[k], op.dtype);
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

ElementwiseKernel::ElementwiseKernel(std::string in_params, std::string out_params,
                                     std::string operation, std::string name,
                                     ElementwiseOptions options)
    : m_impl(std::make_unique<Impl>()) {
    if (!is_identifier(name)) throw SpecError("kernel name '" + name + "' is not a C identifier");
    m_impl->inputs = parse_param_specs(in_params);
    m_impl->outputs = parse_param_specs(out_params);
    check_unique_names(m_impl->inputs, m_impl->outputs, in_params, out_params);
    if (m_impl->inputs.size() + m_impl->outputs.size() > detail::kMaxParams)
        throw SpecError("at most " + std::to_string(detail::kMaxParams) + " parameters");
    if (m_impl->outputs.size() > 8) throw SpecError("at most 8 output parameters");
    auto& def = m_impl->def;
    def.params = m_impl->inputs;
    def.params.insert(def.params.end(), m_impl->outputs.begin(), m_impl->outputs.end());
    def.input_count = m_impl->inputs.size();
    def.operation = std::move(operation);
    def.name = std::move(name);
    def.preamble = std::move(options.preamble);
    def.loop_prep = std::move(options.loop_prep);
    def.after_loop = std::move(options.after_loop);
    std::vector<std::string> out_names;
    for (const auto& out : m_impl->outputs)
        if (!out.raw) out_names.push_back(out.name);
    const bool raw_output = std::any_of(m_impl->outputs.begin(), m_impl->outputs.end(),
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
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/true, p);
    if (p.n > 0) m_impl->launch(p, m_impl->function(p), options.stream);
    Outputs outputs;
    if (!m_impl->no_return)
        for (std::size_t k = m_impl->inputs.size(); k < m_impl->def.params.size(); ++k)
            outputs.push_back(p.arrays[k]);
    return outputs;
}

std::string ElementwiseKernel::source_for(const Arg* args, std::size_t count,
                                          const CallOptions& options) const {
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/false, p);
    return m_impl->source(p);
}

std::shared_ptr<const Program> ElementwiseKernel::compile_for(const Arg* args, std::size_t count,
                                                              const CallOptions& options,
                                                              const std::string& arch) const {
    Prepared p;
    m_impl->prepare(args, count, options, /*allocate=*/false, p);
    return m_impl->compile(p, arch).program;
}

const std::string& ElementwiseKernel::name() const noexcept {
    return m_impl->def.name;
}
const std::vector<ParamSpec>& ElementwiseKernel::in_params() const noexcept {
    return m_impl->inputs;
}
const std::vector<ParamSpec>& ElementwiseKernel::out_params() const noexcept {
    return m_impl->outputs;
}

} // namespace kiln
