#include "kiln/fuse.hpp"

#include "core/device_headers.hpp"
#include "core/scalar_overflow.hpp"
#include "driver/per_context_cache.hpp"
#include "driver/prepare_steps.hpp"
#include "fuse_codegen.hpp"
#include "fuse_plan.hpp"
#include "fuse_rows.hpp"
#include "fuse_trace.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/elementwise_kernel.hpp"
#include "kiln/ops.hpp"
#include "kiln/raw_kernel.hpp"
#include "kiln/reduction_kernel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <utility>

// kiln::fuse is a front end over the others: a traced function becomes a plan of
// ElementwiseKernel and ReductionKernel definitions (fuse_plan.hpp), and, where its reductions
// are all over rows, a kernel of a block per row (fuse_rows.hpp); a call is those kernels' calls
// in order. What is fusion's own is the trace and a table from signature to kernels, read without
// a lock, so a hot call adds a signature lookup to the kernels' calls: no tracing, no strings.

namespace kiln::detail {

namespace {

// One kernel of the split plan, made.
struct StepKernel {
    std::unique_ptr<ElementwiseKernel> elementwise;
    std::unique_ptr<ReductionKernel> reduction;
    ReduceCall how; // the reduction's axes and keepdims
};

// The kernels a signature traced to; values stay where they are made (PerContextCache).
struct Traced {
    std::unique_ptr<FusionTrace> trace;
    FusionPlan plan;
    std::vector<StepKernel> kernels;
    std::optional<RowPlan> rows;
    std::unique_ptr<RawKernel> row_kernel;
    std::vector<int> returns_argument; // per output: the updated argument it is, or -1
    ScalarTargets scalar_targets{};
    std::vector<std::string> nvrtc_options; // the row kernel's
    bool direct = false; // one kernel, called with the call's arguments as they are
    // One elementwise kernel that reads the call's arguments in order and updates some of them
    // in place (update_args, in the order it writes them): called with the arguments followed by
    // the updated ones, without Run, unless an input overlaps an updated argument other than as
    // that very view (Run reads it from a copy).
    bool direct_update = false;
    std::vector<int> update_args;
};

// The most operands of a direct_update call: every argument, then each updated one again.
constexpr std::size_t kMaxDirectOperands = FusedCore::kMaxArgs + Outputs::kCapacity;

// @p arg, copied into each of an array's slots (Arg has no empty state); filled in after.
template <std::size_t... I>
std::array<Arg, sizeof...(I)> copies_of(const Arg& arg, std::index_sequence<I...>) {
    return {{((void)I, arg)...}};
}

// How errors name the fused function called @p name.
std::string who_is(const std::string& name) {
    return "kiln::fuse '" + name + "'";
}

// A compile error on a traced line names the traced expression (the line's comment); NVRTC
// reports errors as "<program>(LINE): error: ...".
CompileError name_expression(const std::string& who, const CompileError& e) {
    const std::string first = e.first_error();
    const std::size_t close = first.find("): ");
    const std::size_t open = close == std::string::npos ? close : first.rfind('(', close);
    if (open == std::string::npos) return e;
    const int line = std::atoi(first.c_str() + open + 1);
    const std::string& source = e.source();
    std::size_t begin = 0;
    for (int k = 1; k < line && begin != std::string::npos; ++k) {
        begin = source.find('\n', begin);
        if (begin != std::string::npos) ++begin;
    }
    if (begin == std::string::npos) return e;
    const std::string text = source.substr(begin, source.find('\n', begin) - begin);
    const std::size_t marker = text.find(kTracedMarker);
    if (marker == std::string::npos) return e;
    return CompileError(who + " does not compile: the traced expression '" +
                            text.substr(marker + std::strlen(kTracedMarker)) +
                            "' is at fault: " + first,
                        e.log(), e.options(), e.source());
}

// In kiln::prepare(), as the other front ends': a function traced, planned and its source made
// once (over a description, no device), so that the tracer, the planner and the code generator
// are paged in before a real first call of a fused function.
const bool kFusionPrepared =
    (add_prepare_step([] {
         const auto traced = fuse("kiln_prepare", [](auto x, auto y) { return x * y + x; });
         const Array x = Array::wrap(CUdeviceptr{1} << 20, {1024}, DType::float32);
         const Arg args[] = {x, x};
         (void)traced.sources_for(args, 2);
     }),
     true);

} // namespace

struct FusedCore::Impl {
    // A scalar argument must fit each integer type the traced code converts it to (NumPy 2).
    void check_scalars(const ScalarTargets& targets, const Arg* args, std::size_t count) const {
        for (std::size_t k = 0; k < count; ++k)
            for (int d = 0; targets[k] >> d; ++d)
                if ((targets[k] >> d & 1U) && !args[k].scalar().fits(static_cast<DType>(d)))
                    throw_overflow(args[k].scalar(), static_cast<DType>(d), who(), "argument",
                                   "in" + std::to_string(k));
    }

    std::string name;
    FuseOptions options;
    mutable std::atomic<std::size_t> traces{0};
    mutable PerContextCache<Traced, FuseSignature, SignatureHash<FuseSignature>> table;

    std::string who() const { return who_is(name); }

    FuseSignature signature_of(const Arg* args, std::size_t count) const {
        if (count > kMaxArgs)
            throw FusionError(who() + ": takes at most " + std::to_string(kMaxArgs) +
                              " arguments, given " + std::to_string(count));
        FuseSignature sig;
        sig.count = static_cast<std::uint8_t>(count);
        for (std::size_t k = 0; k < count; ++k) {
            const Arg& a = args[k];
            sig.operands[k] =
                a.is_array()
                    ? FuseSignature::Operand{a.array().dtype(), 0,
                                             static_cast<std::uint8_t>(a.array().ndim())}
                    : FuseSignature::Operand{a.scalar().dtype(),
                                             std::uint8_t(a.scalar().is_weak() ? 1 : 2), 0};
        }
        return sig;
    }

    Traced trace(const FuseSignature& sig, const void* function, const TraceFn* tracers) const {
        Traced traced;
        traced.trace = std::make_unique<FusionTrace>(name, sig);
        FusionTrace& trace = *traced.trace;
        tracers[sig.count](function, trace);
        traces.fetch_add(1, std::memory_order_relaxed);
        traced.plan = plan_fusion(trace, options);
        traced.scalar_targets = traced.plan.scalar_targets;
        for (const FusionStep& step : traced.plan.steps) {
            StepKernel k;
            if (!step.reduction) {
                ElementwiseOptions eo;
                eo.preamble = step.def.preamble;
                eo.options = options.options;
                k.elementwise = std::make_unique<ElementwiseKernel>(
                    step.def.in_params, step.def.out_params, step.def.operation, step.name,
                    std::move(eo));
            } else {
                ReductionOptions ro;
                ro.preamble = step.def.preamble;
                ro.options = options.options;
                ro.reduce_type = step.def.reduce_type;
                ro.empty_is_error = step.def.empty_is_error;
                k.reduction = std::make_unique<ReductionKernel>(
                    step.def.in_params, step.def.out_params, step.def.map_expr,
                    step.def.reduce_expr, step.def.post_map_expr, step.def.identity, step.name,
                    std::move(ro));
                k.how.axis = step.def.axis;
                k.how.keepdims = step.def.keepdims;
            }
            traced.kernels.push_back(std::move(k));
        }
        for (int id : trace.outputs()) {
            int arg = -1;
            for (const auto& u : trace.updates())
                if (u.second == id) arg = u.first;
            traced.returns_argument.push_back(arg);
        }
        if (traced.plan.steps.size() == 1) { // one kernel already
            traced.direct =
                std::none_of(traced.returns_argument.begin(), traced.returns_argument.end(),
                             [](int arg) { return arg >= 0; }) &&
                trace.updates().empty();
            traced.direct_update = !traced.direct && updates_in_order(traced, sig.count);
            return traced;
        }
        traced.rows = plan_rows(trace, options, traced.scalar_targets);
        if (traced.rows) {
            traced.nvrtc_options = options.options;
            CompileOptions co;
            co.options = options.options;
            co.headers = device_headers();
            traced.row_kernel =
                std::make_unique<RawKernel>(traced.rows->source, traced.rows->name, std::move(co));
        }
        return traced;
    }

    // Whether @p t's one kernel is elementwise, reads the call's @p count arguments in order,
    // writes only arguments and returns only arguments: its operands are then the call's
    // arguments followed by each updated one (as the output it writes), kept in t.update_args.
    static bool updates_in_order(Traced& t, std::size_t count) {
        const FusionStep& step = t.plan.steps.front();
        if (!t.kernels.front().elementwise || step.params.size() != count ||
            count + step.targets.size() > kMaxDirectOperands)
            return false;
        for (std::size_t k = 0; k < count; ++k)
            if (step.params[k] != static_cast<int>(k)) return false;
        if (std::any_of(t.returns_argument.begin(), t.returns_argument.end(),
                        [](int arg) { return arg < 0; }))
            return false;
        for (const StepTarget& target : step.targets) {
            if (target.kind != StepTarget::Kind::update) return false;
            t.update_args.push_back(target.index);
        }
        return true;
    }

    // Whether an input of a direct_update call overlaps an updated argument other than as that
    // very view: Run then reads it from a copy.
    static bool inputs_overlap_updates(const Traced& t, const Arg* args, std::size_t count) {
        for (const int u : t.update_args)
            for (std::size_t k = 0; k < count; ++k) {
                bool identical = false; // the updated argument itself is identical: not asked
                if (k != static_cast<std::size_t>(u) && args[k].is_array() &&
                    overlaps(args[u].array(), args[k].array(), &identical) && !identical)
                    return true;
            }
        return false;
    }

    const Traced& traced(const Arg* args, std::size_t count, const void* function,
                         const TraceFn* tracers) const {
        const FuseSignature sig = signature_of(args, count);
        return table.get(nullptr, sig, [&] { return trace(sig, function, tracers); });
    }
};

namespace {

// One call of a traced function's kernels, or (describing, with no device) the sources or
// programs they would be: the arrays that earlier kernels would give are then descriptions of
// their shapes over made-up addresses.
class Run {
  public:
    // @p name: the function's (FusedCore's, which outlives the Run), named in errors only.
    Run(const std::string& name, const Traced& t, const Arg* args, std::size_t count)
        : m_name(name)
        , m_t(t)
        , m_args(args)
        , m_count(count) {}

    Outputs call(const CallOptions& options) {
        m_options = options;
        if (m_t.row_kernel && row_call_fits(*m_t.rows, m_args, m_count)) return call_rows();
        for (std::size_t k = 0; k < m_t.kernels.size(); ++k)
            step(k, nullptr, nullptr, {});
        return outputs();
    }

    std::vector<std::string> sources() {
        std::vector<std::string> all;
        if (m_t.row_kernel && row_call_fits(*m_t.rows, m_args, m_count)) return {m_t.rows->source};
        for (std::size_t k = 0; k < m_t.kernels.size(); ++k)
            step(k, &all, nullptr, {});
        return all;
    }

    std::vector<std::shared_ptr<const Program>> programs(const std::string& arch) {
        std::vector<std::shared_ptr<const Program>> all;
        if (m_t.row_kernel && row_call_fits(*m_t.rows, m_args, m_count)) {
            CompileOptions co;
            co.options = m_t.nvrtc_options;
            co.headers = device_headers();
            co.arch = arch;
            return {RawKernel(m_t.rows->source, m_t.rows->name, std::move(co)).compile()};
        }
        for (std::size_t k = 0; k < m_t.kernels.size(); ++k)
            step(k, nullptr, &all, arch);
        return all;
    }

  private:
    bool describing() const { return m_sources || m_programs; }
    std::string who() const { return who_is(m_name); }

    // A made-up, aligned address for a described array.
    Array described(const Dims& shape, DType dtype) {
        m_next += CUdeviceptr{1} << 32;
        return Array::wrap(m_next, shape, dtype);
    }

    const Array& keep(Array a) {
        m_kept.push_back(std::move(a));
        return m_kept.back();
    }

    const Array& intermediate(int node) const {
        for (const auto& entry : m_intermediates)
            if (entry.first == node) return *entry.second;
        throw FusionError(who() + ": internal error: a kernel reads a result not made yet");
    }

    Dims reduced_shape(const Dims& in, const Axes& axis, bool keepdims) const {
        const int ndim = in.size();
        std::vector<bool> reduced(static_cast<std::size_t>(ndim), axis.is_all());
        for (int k = 0; !axis.is_all() && k < axis.size(); ++k) {
            const int a = axis[k] < 0 ? axis[k] + ndim : axis[k];
            if (a < 0 || a >= ndim)
                throw AxisError(who() + ": axis " + std::to_string(axis[k]) +
                                " is out of bounds for an array of " + std::to_string(ndim) +
                                " dimensions");
            reduced[static_cast<std::size_t>(a)] = true;
        }
        Dims out;
        for (int d = 0; d < ndim; ++d)
            if (!reduced[static_cast<std::size_t>(d)])
                out.push_back(in[d]);
            else if (keepdims)
                out.push_back(1);
        return out;
    }

    void step(std::size_t k, std::vector<std::string>* sources,
              std::vector<std::shared_ptr<const Program>>* programs, const std::string& arch) {
        m_sources = sources;
        m_programs = programs;
        const FusionStep& step = m_t.plan.steps[k];
        const StepKernel& kernel = m_t.kernels[k];
        const int arguments = m_t.trace->signature().count;
        std::vector<Arg> args;
        std::vector<Dims> shapes;
        for (int p : step.params) {
            if (p < arguments) {
                args.push_back(m_args[p]);
                if (m_args[p].is_array()) shapes.push_back(m_args[p].array().shape());
            } else {
                args.emplace_back(intermediate(p));
                shapes.push_back(intermediate(p).shape());
            }
        }
        const bool updates =
            std::any_of(step.targets.begin(), step.targets.end(),
                        [](const auto& t) { return t.kind == StepTarget::Kind::update; });
        std::vector<const Array*> results(step.targets.size());
        if (updates) {
            // Every output given: the updated arguments and, beside them, new arrays of the
            // shape they all broadcast to.
            for (const StepTarget& t : step.targets)
                if (t.kind == StepTarget::Kind::update)
                    shapes.push_back(m_args[t.index].array().shape());
            const Dims shape = broadcast_shapes(shapes.data(), shapes.size());
            // An input that shares memory with an updated argument, other than as that very
            // view, is read from a copy: its elements would be written before they are read.
            for (Arg& arg : args) {
                if (!arg.is_array()) continue;
                for (const StepTarget& t : step.targets) {
                    if (t.kind != StepTarget::Kind::update) continue;
                    bool identical = false;
                    const Array& target = m_args[t.index].array();
                    if (!overlaps(target, arg.array(), &identical) || identical) continue;
                    const Array& source = arg.array();
                    if (describing()) {
                        arg = Arg(keep(described(source.shape(), source.dtype())));
                    } else {
                        OpOptions on_stream;
                        on_stream.stream = m_options.stream;
                        arg = Arg(keep(ascontiguousarray(source, on_stream)));
                    }
                    break;
                }
            }
            for (std::size_t j = 0; j < step.targets.size(); ++j) {
                const StepTarget& t = step.targets[j];
                const DType dtype = m_t.trace->node(t.node).dtype;
                results[j] = t.kind == StepTarget::Kind::update
                                 ? &m_args[t.index].array()
                                 : &keep(describing() ? described(shape, dtype)
                                                      : empty(shape, dtype, m_options.stream));
                args.emplace_back(*results[j]);
            }
        }
        if (describing()) {
            if (sources) {
                sources->push_back(
                    kernel.elementwise
                        ? kernel.elementwise->source_for(args.data(), args.size())
                        : kernel.reduction->source_for(args.data(), args.size(), kernel.how));
            } else {
                programs->push_back(
                    kernel.elementwise
                        ? kernel.elementwise->compile_for(args.data(), args.size(), {}, arch)
                        : kernel.reduction->compile_for(args.data(), args.size(), kernel.how,
                                                        arch));
            }
            if (!updates) {
                // What the kernel would allocate: its outputs' shape.
                Dims shape = broadcast_shapes(shapes.data(), shapes.size());
                if (kernel.reduction)
                    shape = reduced_shape(shape, kernel.how.axis, kernel.how.keepdims);
                for (std::size_t j = 0; j < step.targets.size(); ++j)
                    results[j] =
                        &keep(described(shape, m_t.trace->node(step.targets[j].node).dtype));
            }
        } else if (kernel.elementwise) {
            Outputs out = kernel.elementwise->call(args.data(), args.size(), m_options);
            if (!updates)
                for (std::size_t j = 0; j < step.targets.size(); ++j)
                    results[j] = &keep(out[j]);
        } else {
            ReduceCall how = kernel.how;
            how.stream = m_options.stream;
            how.device = m_options.device;
            Outputs out = kernel.reduction->call(args.data(), args.size(), how);
            for (std::size_t j = 0; j < step.targets.size(); ++j)
                results[j] = &keep(out[j]);
        }
        for (std::size_t j = 0; j < step.targets.size(); ++j) {
            const StepTarget& t = step.targets[j];
            if (t.kind == StepTarget::Kind::output) m_outputs[t.index] = results[j];
            if (m_t.trace->node(t.node).kind == FuseNode::Kind::reduction)
                m_intermediates.emplace_back(t.node, results[j]);
        }
    }

    Outputs outputs() {
        Outputs out;
        for (std::size_t j = 0; j < m_t.returns_argument.size(); ++j) {
            const int arg = m_t.returns_argument[j];
            out.push_back(arg >= 0 ? m_args[arg].array() : *m_outputs[j]);
        }
        return out;
    }

    Outputs call_rows() {
        const RowPlan& plan = *m_t.rows;
        const Array* first = nullptr;
        for (std::size_t k = 0; k < m_count && !first; ++k)
            if (m_args[k].is_array()) first = &m_args[k].array();
        const Dims& shape = first->shape();
        const std::int64_t cols = shape[plan.ndim - 1], rows = first->size() / cols;
        Dims per_row;
        for (int d = 0; d + 1 < plan.ndim; ++d)
            per_row.push_back(shape[d]);
        if (plan.keepdims) per_row.push_back(1);
        const DeviceScope on_device(m_options.device.value_or(-1));
        // Vectors of four elements where every row of every array starts at a vector's
        // alignment.
        int vectors = cols % 4 == 0 ? 1 : 0;
        auto aligned = [&](const Array& a) {
            if (a.data() % (4 * a.itemsize()) != 0) vectors = 0;
        };
        std::vector<CUdeviceptr> pointers;
        pointers.reserve(m_count + plan.targets.size());
        std::vector<void*> params;
        std::vector<std::size_t> sizes;
        for (std::size_t k = 0; k < m_count; ++k) {
            if (m_args[k].is_array()) {
                aligned(m_args[k].array());
                pointers.push_back(m_args[k].array().data());
                params.push_back(&pointers.back());
                sizes.push_back(sizeof(CUdeviceptr));
            } else {
                params.push_back(const_cast<unsigned char*>(m_args[k].scalar().bytes()));
                sizes.push_back(itemsize(m_args[k].scalar().dtype()));
            }
        }
        for (const RowPlan::Target& t : plan.targets) {
            const Array* a = nullptr;
            if (t.target.kind == StepTarget::Kind::update)
                a = &m_args[t.target.index].array();
            else
                a = &keep(empty(t.per_row ? per_row : shape, t.dtype, m_options.stream));
            if (t.target.kind == StepTarget::Kind::output) m_outputs[t.target.index] = a;
            if (!t.per_row) aligned(*a);
            pointers.push_back(a->data());
            params.push_back(&pointers.back());
            sizes.push_back(sizeof(CUdeviceptr));
        }
        long long row_count = rows, columns = cols;
        params.push_back(&row_count);
        sizes.push_back(sizeof row_count);
        params.push_back(&columns);
        sizes.push_back(sizeof columns);
        params.push_back(&vectors);
        sizes.push_back(sizeof vectors);
        // Short rows: a warp per row, eight rows in a block. Longer ones: a block per row, a
        // thread per four elements in whole warps, at most 1024.
        LaunchConfig config;
        if (cols <= 128) {
            config.grid = Dim3{static_cast<unsigned>((rows + 7) / 8)};
            config.block = Dim3{32, 8};
        } else {
            const std::int64_t threads =
                std::min<std::int64_t>(1024, std::max<std::int64_t>(64, (cols / 4 + 31) / 32 * 32));
            config.grid = Dim3{static_cast<unsigned>(rows)};
            config.block = Dim3{static_cast<unsigned>(threads)};
        }
        config.stream = m_options.stream;
        m_t.row_kernel->function().launch_packed(config, params.data(), sizes.data(),
                                                 params.size());
        return outputs();
    }

    const std::string& m_name;
    const Traced& m_t;
    const Arg* m_args;
    std::size_t m_count;
    CallOptions m_options;
    std::deque<Array> m_kept; // stable: Args point at them
    std::vector<std::pair<int, const Array*>> m_intermediates;
    std::array<const Array*, Outputs::kCapacity> m_outputs{};
    std::vector<std::string>* m_sources = nullptr;
    std::vector<std::shared_ptr<const Program>>* m_programs = nullptr;
    CUdeviceptr m_next = CUdeviceptr{1} << 40;
};

} // namespace

FusedCore::FusedCore(std::string name, FuseOptions options)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->name = std::move(name);
    m_impl->options = std::move(options);
}
FusedCore::~FusedCore() = default;
FusedCore::FusedCore(FusedCore&&) noexcept = default;
FusedCore& FusedCore::operator=(FusedCore&&) noexcept = default;

Outputs FusedCore::call(const Arg* args, std::size_t count, const CallOptions& options,
                        const void* function, const TraceFn* tracers) const {
    const Traced& t = m_impl->traced(args, count, function, tracers);
    m_impl->check_scalars(t.scalar_targets, args, count);
    try {
        // One kernel that allocates its outputs (no update, no output that is an argument): its
        // call, with nothing more made on the way.
        if (t.direct) {
            const StepKernel& k = t.kernels.front();
            if (k.elementwise) return k.elementwise->call(args, count, options);
            ReduceCall how = k.how;
            how.stream = options.stream;
            how.device = options.device;
            return k.reduction->call(args, count, how);
        }
        if (t.direct_update && !Impl::inputs_overlap_updates(t, args, count)) {
            auto operands = copies_of(args[0], std::make_index_sequence<kMaxDirectOperands>{});
            std::copy(args, args + count, operands.begin());
            for (std::size_t j = 0; j < t.update_args.size(); ++j)
                operands[count + j] = args[t.update_args[j]];
            t.kernels.front().elementwise->call(operands.data(), count + t.update_args.size(),
                                                options);
            Outputs out;
            for (const int arg : t.returns_argument)
                out.push_back(args[arg].array());
            return out;
        }
        return Run(m_impl->name, t, args, count).call(options);
    } catch (const CompileError& e) {
        throw name_expression(m_impl->who(), e);
    }
}

std::vector<std::string> FusedCore::sources_for(const Arg* args, std::size_t count,
                                                const void* function,
                                                const TraceFn* tracers) const {
    const Traced& t = m_impl->traced(args, count, function, tracers);
    return Run(m_impl->name, t, args, count).sources();
}

std::vector<std::shared_ptr<const Program>>
FusedCore::compile_for(const Arg* args, std::size_t count, const std::string& arch,
                       const void* function, const TraceFn* tracers) const {
    const Traced& t = m_impl->traced(args, count, function, tracers);
    try {
        return Run(m_impl->name, t, args, count).programs(arch);
    } catch (const CompileError& e) {
        throw name_expression(m_impl->who(), e);
    }
}

const std::string& FusedCore::name() const noexcept {
    return m_impl->name;
}

std::size_t FusedCore::traces() const noexcept {
    return m_impl->traces.load(std::memory_order_relaxed);
}

} // namespace kiln::detail
