#include "kiln/reductions.hpp"

#include "kiln/error.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace kiln {

namespace {

enum class Op {
    sum,
    prod,
    max,
    min,
    argmax,
    argmin,
    mean,
    squared_deviation, // var and std, second pass
    norm,
    any,
    all,
    count_nonzero,
};

// Device helpers the ready reductions share; R is the accumulation type, O the result type.
constexpr const char* kPreamble = R"(
template <class T> __device__ T kiln_max(T a, T b) { return kiln::is_nan(a) ? a : (kiln::is_nan(b) ? b : (a > b ? a : b)); }
template <class T> __device__ T kiln_min(T a, T b) { return kiln::is_nan(a) ? a : (kiln::is_nan(b) ? b : (a < b ? a : b)); }
template <class T> __device__ T kiln_abs2(T v) { return v * v; }
template <class T> __device__ T kiln_abs2(kiln::complex<T> v) { return v.re * v.re + v.im * v.im; }
)";

struct Spec {
    const char* in;
    const char* map;
    const char* reduce;
    const char* post_map;
    const char* identity;
    std::string reduce_type; // empty: R
    bool empty_is_error = false;
};

Spec spec_of(Op op, bool complex_sqrt) {
    switch (op) {
    case Op::sum:
        return {"T x", "kiln::cast<R>(x)", "a + b", "y = kiln::cast<O>(a)", "0", {}};
    case Op::prod:
        return {"T x", "kiln::cast<R>(x)", "a * b", "y = kiln::cast<O>(a)", "1", {}};
    case Op::max:
        return {"T x",
                "kiln::cast<R>(x)",
                "kiln_max(a, b)",
                "y = kiln::cast<O>(a)",
                "kiln::lowest<R>()",
                {},
                true};
    case Op::min:
        return {"T x",
                "kiln::cast<R>(x)",
                "kiln_min(a, b)",
                "y = kiln::cast<O>(a)",
                "kiln::highest<R>()",
                {},
                true};
    case Op::argmax:
        return {"T x",
                "kiln::make_pair(kiln::cast<R>(x), _J)",
                "kiln::argmax_merge(a, b)",
                "y = a.second",
                "_type_reduce(kiln::lowest<R>(), -1)",
                "kiln::pair<R, kiln_index_t>",
                true};
    case Op::argmin:
        return {"T x",
                "kiln::make_pair(kiln::cast<R>(x), _J)",
                "kiln::argmin_merge(a, b)",
                "y = a.second",
                "_type_reduce(kiln::highest<R>(), -1)",
                "kiln::pair<R, kiln_index_t>",
                true};
    case Op::mean:
        return {"T x",   "kiln::cast<R>(x)",
                "a + b", "y = kiln::cast<O>(a / R(_in_ind.size() / _out_ind.size()))",
                "0",     {}};
    case Op::squared_deviation:
        return {"T x, M m, int64 ddof",
                "kiln_abs2(kiln::cast<C>(x) - kiln::cast<C>(m))",
                "a + b",
                complex_sqrt ? "y = kiln::cast<O>(sqrt(a / R(_in_ind.size() / _out_ind.size() - "
                               "ddof)))"
                             : "y = kiln::cast<O>(a / R(_in_ind.size() / _out_ind.size() - ddof))",
                "0",
                {}};
    case Op::norm:
        return {"T x", "kiln_abs2(kiln::cast<C>(x))", "a + b", "y = kiln::cast<O>(sqrt(a))", "0",
                {}};
    case Op::any:
        return {"T x", "kiln::cast<bool>(x)", "a || b", "y = a", "false", {}};
    case Op::all:
        return {"T x", "kiln::cast<bool>(x)", "a && b", "y = a", "true", {}};
    case Op::count_nonzero:
        return {"T x", "(R)kiln::cast<bool>(x)", "a + b", "y = a", "0", {}};
    }
    return {};
}

// Kernel names as profilers show them.
const char* kernel_name(Op op) {
    static const char* const kNames[] = {
        "kiln_sum",  "kiln_prod", "kiln_max",  "kiln_min", "kiln_argmax", "kiln_argmin",
        "kiln_mean", "kiln_var",  "kiln_norm", "kiln_any", "kiln_all",    "kiln_count_nonzero"};
    return kNames[static_cast<int>(op)];
}

// 16-bit floats accumulate in float: CUDA's arithmetic on them is slow and inexact.
DType widen(DType d) {
    return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d;
}

DType real_of(DType d) {
    return d == DType::complex64 ? DType::float32 : d == DType::complex128 ? DType::float64 : d;
}

// One ReductionKernel per (operation, computation type C, accumulation type R, result type O),
// built on first use and kept; each caches its own specializations per input dtype and layout.
const ReductionKernel& kernel_for(Op op, DType compute, DType accumulate, DType result,
                                  bool sqrt_after = false) {
    static std::mutex mutex;
    static std::map<std::tuple<Op, DType, DType, DType, bool>, std::unique_ptr<ReductionKernel>>
        kernels;
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = kernels[{op, compute, accumulate, result, sqrt_after}];
    if (!slot) {
        const Spec spec = spec_of(op, sqrt_after);
        ReductionOptions options;
        options.preamble = std::string("typedef ") + cuda_type(compute) + " C;\ntypedef " +
                           cuda_type(accumulate) + " R;\ntypedef " + cuda_type(result) + " O;\n" +
                           kPreamble;
        // A dtype name lets the kernel size its partial results exactly.
        options.reduce_type = spec.reduce_type.empty() ? name(accumulate) : spec.reduce_type;
        options.empty_is_error = spec.empty_is_error;
        slot = std::make_unique<ReductionKernel>(spec.in, std::string(name(result)) + " y",
                                                 spec.map, spec.reduce, spec.post_map,
                                                 spec.identity, kernel_name(op), options);
    }
    return *slot;
}

Array run(const ReductionKernel& kernel, std::initializer_list<Arg> inputs, const Axes& axis,
          const ReduceOptions& options, bool keepdims) {
    std::array<Arg, 4> args{Arg(0), Arg(0), Arg(0), Arg(0)};
    std::size_t n = 0;
    for (const Arg& arg : inputs)
        args[n++] = arg;
    if (options.out) args[n++] = Arg(*options.out);
    return kernel.call(args.data(), n, ReduceCall{axis, keepdims, options.stream})[0];
}

Array run(Op op, const Array& a, DType accumulate, DType result, const Axes& axis,
          const ReduceOptions& options) {
    return run(kernel_for(op, accumulate, accumulate, result), {a}, axis, options,
               options.keepdims);
}

[[noreturn]] void unordered(const char* what) {
    throw ArgumentError(std::string(what) + ": complex numbers have no order");
}

// NumPy's sum and prod dtype: integers widen to 64 bits, keeping their signedness.
DType sum_result(DType d) {
    if (is_bool(d) || is_signed_integer(d)) return DType::int64;
    if (is_unsigned_integer(d)) return DType::uint64;
    return d;
}

DType mean_result(DType d) {
    return is_bool(d) || is_integer(d) ? DType::float64 : d;
}

Array argreduce(Op op, const Array& a, const Axes& axis, const ReduceOptions& options,
                const char* what) {
    if (is_complex(a.dtype())) unordered(what);
    if (!axis.is_all() && axis.size() != 1)
        throw AxisError(std::string(what) +
                        ": takes one axis or all of them, not axis=" + axis.to_string());
    return run(op, a, widen(a.dtype()), DType::int64, axis, options);
}

// var and std: the mean (kept dims, accumulation precision), then squared deviations.
Array variance(const Array& a, const Axes& axis, const ReduceOptions& options, bool take_sqrt) {
    const DType result = real_of(mean_result(a.dtype()));
    const DType compute = widen(mean_result(a.dtype()));
    ReduceOptions mean_options;
    mean_options.stream = options.stream;
    const Array m =
        run(kernel_for(Op::mean, compute, compute, compute), {a}, axis, mean_options, true);
    const DType accumulate = real_of(compute);
    return run(kernel_for(Op::squared_deviation, compute, accumulate, result, take_sqrt),
               {a, m, static_cast<std::int64_t>(options.ddof)}, axis, options, options.keepdims);
}

} // namespace

Array sum(const Array& a, const Axes& axis, const ReduceOptions& options) {
    const DType result = options.dtype.value_or(sum_result(a.dtype()));
    return run(Op::sum, a, widen(result), result, axis, options);
}

Array prod(const Array& a, const Axes& axis, const ReduceOptions& options) {
    const DType result = options.dtype.value_or(sum_result(a.dtype()));
    return run(Op::prod, a, widen(result), result, axis, options);
}

Array max(const Array& a, const Axes& axis, const ReduceOptions& options) {
    if (is_complex(a.dtype())) unordered("max");
    return run(Op::max, a, widen(a.dtype()), a.dtype(), axis, options);
}

Array min(const Array& a, const Axes& axis, const ReduceOptions& options) {
    if (is_complex(a.dtype())) unordered("min");
    return run(Op::min, a, widen(a.dtype()), a.dtype(), axis, options);
}

Array argmax(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return argreduce(Op::argmax, a, axis, options, "argmax");
}

Array argmin(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return argreduce(Op::argmin, a, axis, options, "argmin");
}

Array mean(const Array& a, const Axes& axis, const ReduceOptions& options) {
    const DType result = options.dtype.value_or(mean_result(a.dtype()));
    return run(Op::mean, a, widen(result), result, axis, options);
}

Array var(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return variance(a, axis, options, false);
}

Array std(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return variance(a, axis, options, true);
}

Array norm(const Array& a, const Axes& axis, const ReduceOptions& options) {
    const DType result = real_of(mean_result(a.dtype()));
    const DType compute = widen(mean_result(a.dtype()));
    return run(kernel_for(Op::norm, compute, real_of(compute), result), {a}, axis, options,
               options.keepdims);
}

Array any(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(Op::any, a, DType::bool_, DType::bool_, axis, options);
}

Array all(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(Op::all, a, DType::bool_, DType::bool_, axis, options);
}

Array count_nonzero(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(Op::count_nonzero, a, DType::int64, DType::int64, axis, options);
}

} // namespace kiln
