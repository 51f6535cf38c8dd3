#include "kiln/fuse.hpp"

#include "core/scalar_overflow.hpp"
#include "driver/per_context_cache.hpp"
#include "fuse_codegen.hpp"
#include "fuse_trace.hpp"
#include "kiln/elementwise_kernel.hpp"
#include "kiln/reduction_kernel.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

// kiln::fuse is a front end over the other two: a traced function becomes an ElementwiseKernel
// or a ReductionKernel definition (fuse_codegen.hpp), and a call is that kernel's call. What is
// fusion's own is the trace and a table from signature to kernel, read without a lock, so a hot
// call adds a signature lookup to the kernel's call: no tracing, no strings, no allocation.

namespace kiln::detail {

namespace {

// The kernel a signature traced to; values stay where they are made (PerContextCache).
struct Traced {
    std::unique_ptr<ElementwiseKernel> elementwise;
    std::unique_ptr<ReductionKernel> reduction;
    ReduceCall how; // the reduction's axes and keepdims
    ScalarTargets scalar_targets{};
};

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

    std::string who() const { return "kiln::fuse '" + name + "'"; }

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
        FusionTrace trace(name, sig);
        tracers[sig.count](function, trace);
        traces.fetch_add(1, std::memory_order_relaxed);
        const FusedDefinition def = fused_definition(trace, options);
        Traced traced;
        traced.scalar_targets = def.scalar_targets;
        if (!def.reduction) {
            ElementwiseOptions eo;
            eo.preamble = def.preamble;
            eo.options = options.options;
            traced.elementwise = std::make_unique<ElementwiseKernel>(
                def.in_params, def.out_params, def.operation, name, std::move(eo));
        } else {
            ReductionOptions ro;
            ro.preamble = def.preamble;
            ro.options = options.options;
            ro.reduce_type = def.reduce_type;
            ro.empty_is_error = def.empty_is_error;
            traced.reduction = std::make_unique<ReductionKernel>(
                def.in_params, def.out_params, def.map_expr, def.reduce_expr, def.post_map_expr,
                def.identity, name, std::move(ro));
            traced.how.axis = def.axis;
            traced.how.keepdims = def.keepdims;
        }
        return traced;
    }

    const Traced& traced(const Arg* args, std::size_t count, const void* function,
                         const TraceFn* tracers) const {
        const FuseSignature sig = signature_of(args, count);
        return table.get(nullptr, sig, [&] { return trace(sig, function, tracers); });
    }
};

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
        if (t.elementwise) return t.elementwise->call(args, count, options);
        ReduceCall how = t.how;
        how.stream = options.stream;
        how.device = options.device;
        return t.reduction->call(args, count, how);
    } catch (const CompileError& e) {
        throw name_expression(m_impl->who(), e);
    }
}

std::string FusedCore::source_for(const Arg* args, std::size_t count, const void* function,
                                  const TraceFn* tracers) const {
    const Traced& t = m_impl->traced(args, count, function, tracers);
    if (t.elementwise) return t.elementwise->source_for(args, count);
    return t.reduction->source_for(args, count, t.how);
}

std::shared_ptr<const Program> FusedCore::compile_for(const Arg* args, std::size_t count,
                                                      const std::string& arch, const void* function,
                                                      const TraceFn* tracers) const {
    const Traced& t = m_impl->traced(args, count, function, tracers);
    try {
        if (t.elementwise) return t.elementwise->compile_for(args, count, {}, arch);
        return t.reduction->compile_for(args, count, t.how, arch);
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
