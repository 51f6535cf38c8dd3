#include "kiln/reductions.hpp"

#include "core/ready_call.hpp"
#include "driver/per_context_cache.hpp"
#include "kiln/error.hpp"
#include "reduction_recipes.hpp"

#include <cstddef>

namespace kiln {

namespace detail {

namespace {

// Device helpers the ready reductions share; R is the accumulation type, O the result type.
constexpr const char* kReducePreamble = R"(
template <class T> __device__ T kiln_max(T a, T b) { return kiln::is_nan(a) ? a : (kiln::is_nan(b) ? b : (a > b ? a : b)); }
template <class T> __device__ T kiln_min(T a, T b) { return kiln::is_nan(a) ? a : (kiln::is_nan(b) ? b : (a < b ? a : b)); }
template <class T> __device__ T kiln_abs2(T v) { return v * v; }
template <class T> __device__ T kiln_abs2(kiln::complex<T> v) { return v.re * v.re + v.im * v.im; }
)";

// The nan-reductions' helpers: a NaN (in either part of a complex value) is skipped.
constexpr const char* kNanPreamble = R"(
template <class T> __device__ T kiln_nan_to(T v, T to) { return kiln::is_nan(v) ? to : v; }
template <class T> __device__ T kiln_nanmax(T a, T b) { return kiln::is_nan(b) ? a : (kiln::is_nan(a) || b > a ? b : a); }
template <class T> __device__ T kiln_nanmin(T a, T b) { return kiln::is_nan(b) ? a : (kiln::is_nan(a) || b < a ? b : a); }
// The identities: NaN for floats (every NaN is skipped, so an all-NaN slice stays NaN).
template <class T> __device__ T kiln_nanmax_identity() { return kiln::lowest<T>(); }
template <class T> __device__ T kiln_nanmin_identity() { return kiln::highest<T>(); }
template <> __device__ float kiln_nanmax_identity<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ double kiln_nanmax_identity<double>() { return __longlong_as_double(0x7fffffffffffffffll); }
template <> __device__ float kiln_nanmin_identity<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ double kiln_nanmin_identity<double>() { return __longlong_as_double(0x7fffffffffffffffll); }
template <class T> __device__ kiln::pair<T, long long> kiln_nan_count(T v) {
    return kiln::is_nan(v) ? kiln::make_pair(T(0), 0ll) : kiln::make_pair(v, 1ll);
}
)";

// var and std in one pass: each element is the moments (1, x, 0); two sets of moments merge as
// Chan, Golub and LeVeque merge them, so partial results meet in any (fixed) order.
constexpr const char* kMomentsPreamble = R"(
template <class M, class S> struct kiln_moments {
    S n;
    M mean;
    S m2;
    kiln_moments() = default;
    __device__ kiln_moments(S n_, M mean_, S m2_) : n(n_), mean(mean_), m2(m2_) {}
};
template <class M, class S>
__device__ kiln_moments<M, S> kiln_moments_merge(const kiln_moments<M, S>& a, const kiln_moments<M, S>& b) {
    if (b.n == S(0)) return a;
    if (a.n == S(0)) return b;
    const S n = a.n + b.n;
    const S wb = b.n / n;
    const M d = b.mean - a.mean;
    return kiln_moments<M, S>(n, a.mean + d * M(wb), a.m2 + b.m2 + kiln_abs2(d) * (a.n * wb));
}
template <class S> __device__ S kiln_dof(S n, S ddof) { return n > ddof ? n - ddof : S(0); }
)";

struct Spec {
    const char* in;
    const char* map;
    const char* reduce;
    std::string value; // of the reduced value `a`
    const char* identity;
    std::string reduce_type; // empty: R
    bool empty_is_error = false;
};

// max, min, argmax and argmin of complex values in NumPy's order (kiln/complex_order.cuh): each
// element paired with its index, so that a NaN or a tie gives the element NumPy gives (the
// first), whatever order partial results meet in. The index -1 marks "no element".
Spec complex_order_spec(ReduceOp op) {
    const bool largest = op == ReduceOp::max || op == ReduceOp::argmax;
    const bool value = op == ReduceOp::max || op == ReduceOp::min;
    return {"T x",
            "kiln::make_pair(kiln::cast<R>(x), _J)",
            largest ? "kiln::argmax_merge(a, b)" : "kiln::argmin_merge(a, b)",
            value ? "kiln::cast<O>(a.first)" : "a.second",
            "_type_reduce(R(), -1)",
            "kiln::pair<R, kiln_index_t>",
            true};
}

Spec spec_of(ReduceOp op, bool complex_sqrt, bool complex_order, int ddof) {
    if (complex_order) return complex_order_spec(op);
    switch (op) {
    case ReduceOp::sum:
        return {"T x", "kiln::cast<R>(x)", "a + b", "kiln::cast<O>(a)", "0", {}};
    case ReduceOp::prod:
        return {"T x", "kiln::cast<R>(x)", "a * b", "kiln::cast<O>(a)", "1", {}};
    case ReduceOp::max:
        return {"T x",
                "kiln::cast<R>(x)",
                "kiln_max(a, b)",
                "kiln::cast<O>(a)",
                "kiln::lowest<R>()",
                {},
                true};
    case ReduceOp::min:
        return {"T x",
                "kiln::cast<R>(x)",
                "kiln_min(a, b)",
                "kiln::cast<O>(a)",
                "kiln::highest<R>()",
                {},
                true};
    case ReduceOp::argmax:
        return {"T x",      "kiln::make_pair(kiln::cast<R>(x), _J)", "kiln::argmax_merge(a, b)",
                "a.second", "_type_reduce(kiln::lowest<R>(), -1)",   "kiln::pair<R, kiln_index_t>",
                true};
    case ReduceOp::argmin:
        return {"T x",      "kiln::make_pair(kiln::cast<R>(x), _J)", "kiln::argmin_merge(a, b)",
                "a.second", "_type_reduce(kiln::highest<R>(), -1)",  "kiln::pair<R, kiln_index_t>",
                true};
    case ReduceOp::mean:
        return {"T x",   "kiln::cast<R>(x)",
                "a + b", "kiln::cast<O>(a / R(_in_ind.size() / _out_ind.size()))",
                "0",     {}};
    case ReduceOp::squared_deviation:
        return {"T x, M m, int64 ddof",
                "kiln_abs2(kiln::cast<C>(x) - kiln::cast<C>(m))",
                "a + b",
                complex_sqrt ? "kiln::cast<O>(sqrt(a / R(_in_ind.size() / _out_ind.size() - ddof)))"
                             : "kiln::cast<O>(a / R(_in_ind.size() / _out_ind.size() - ddof))",
                "0",
                {}};
    case ReduceOp::norm:
        return {"T x", "kiln_abs2(kiln::cast<C>(x))", "a + b", "kiln::cast<O>(sqrt(a))", "0", {}};
    case ReduceOp::any:
        return {"T x", "kiln::cast<bool>(x)", "a || b", "a", "false", {}};
    case ReduceOp::all:
        return {"T x", "kiln::cast<bool>(x)", "a && b", "a", "true", {}};
    case ReduceOp::nansum:
        return {"T x", "kiln_nan_to(kiln::cast<R>(x), R(0))", "a + b", "kiln::cast<O>(a)", "0", {}};
    case ReduceOp::nanprod:
        return {"T x", "kiln_nan_to(kiln::cast<R>(x), R(1))", "a * b", "kiln::cast<O>(a)", "1", {}};
    case ReduceOp::nanmax:
        return {"T x",
                "kiln::cast<R>(x)",
                "kiln_nanmax(a, b)",
                "kiln::cast<O>(a)",
                "kiln_nanmax_identity<R>()",
                {},
                true};
    case ReduceOp::nanmin:
        return {"T x",
                "kiln::cast<R>(x)",
                "kiln_nanmin(a, b)",
                "kiln::cast<O>(a)",
                "kiln_nanmin_identity<R>()",
                {},
                true};
    case ReduceOp::nanmean:
        return {"T x",
                "kiln_nan_count(kiln::cast<R>(x))",
                "kiln::make_pair(a.first + b.first, a.second + b.second)",
                "kiln::cast<O>(a.first / R(a.second))",
                "R(0), 0ll",
                "kiln::pair<R, long long>"};
    case ReduceOp::var:
    case ReduceOp::std: {
        const std::string variance = "a.m2 / kiln_dof(a.n, S(" + std::to_string(ddof) + "))";
        return {"T x",
                "kiln_moments<C, S>(S(1), kiln::cast<C>(x), S(0))",
                "kiln_moments_merge(a, b)",
                "kiln::cast<O>(" + (op == ReduceOp::std ? "sqrt(" + variance + ')' : variance) +
                    ')',
                "S(0), C(0), S(0)",
                "kiln_moments<C, S>"};
    }
    case ReduceOp::count_nonzero:
        return {"T x", "(R)kiln::cast<bool>(x)", "a + b", "a", "0", {}};
    }
    return {};
}

// 16-bit floats accumulate in float: CUDA's arithmetic on them is slow and inexact.
DType widen(DType d) {
    return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d;
}

DType real_of(DType d) {
    return d == DType::complex64 ? DType::float32 : d == DType::complex128 ? DType::float64 : d;
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

// The recipe of @p op computing in C, accumulating in R, giving O.
ReductionRecipe recipe_of(ReduceOp op, DType compute, DType accumulate, DType result,
                          bool sqrt_after = false, int ddof = 0) {
    const bool ordered = op == ReduceOp::max || op == ReduceOp::min || op == ReduceOp::argmax ||
                         op == ReduceOp::argmin;
    const Spec spec = spec_of(op, sqrt_after, ordered && is_complex(compute), ddof);
    ReductionRecipe recipe{compute,  accumulate,          result,     spec.in,
                           spec.map, spec.reduce,         spec.value, spec.identity,
                           {},       spec.empty_is_error, {}};
    // A dtype name lets the kernel size its partial results exactly.
    recipe.reduce_type = spec.reduce_type.empty() ? name(accumulate) : spec.reduce_type;
    recipe.preamble = std::string("typedef ") + cuda_type(compute) + " C;\ntypedef " +
                      cuda_type(accumulate) + " R;\ntypedef " + cuda_type(result) + " O;\n" +
                      kReducePreamble;
    if (op >= ReduceOp::nansum && op <= ReduceOp::nanmean) recipe.preamble += kNanPreamble;
    if (op == ReduceOp::var || op == ReduceOp::std)
        // S: the moments' real type (the count and the squared deviations).
        recipe.preamble +=
            std::string("typedef ") + cuda_type(real_of(compute)) + " S;\n" + kMomentsPreamble;
    return recipe;
}

} // namespace

const char* reduce_op_name(ReduceOp op) {
    static const char* const names[] = {"sum",     "prod",   "max",          "min",
                                        "argmax",  "argmin", "mean",         "squared_deviation",
                                        "norm",    "any",    "all",          "nansum",
                                        "nanprod", "nanmax", "nanmin",       "nanmean",
                                        "var",     "std",    "count_nonzero"};
    static_assert(sizeof(names) / sizeof(names[0]) ==
                      static_cast<std::size_t>(ReduceOp::count_nonzero) + 1,
                  "a name per reduction");
    return names[static_cast<int>(op)];
}

namespace {

// A reduction's types: computed in, accumulated in, given.
struct ReductionTypes {
    DType compute, accumulate, result;
};

// NumPy's rules for the single-pass reductions; no strings, so a hot call can ask.
ReductionTypes reduction_types(ReduceOp op, DType input, std::optional<DType> dtype,
                               const Axes& axis) {
    const char* what = reduce_op_name(op);
    switch (op) {
    case ReduceOp::sum:
    case ReduceOp::prod: {
        const DType result = dtype.value_or(sum_result(input));
        return {widen(result), widen(result), result};
    }
    case ReduceOp::max:
    case ReduceOp::min:
        return {widen(input), widen(input), input};
    case ReduceOp::nansum:
    case ReduceOp::nanprod: {
        const DType result = dtype.value_or(sum_result(input));
        return {widen(result), widen(result), result};
    }
    case ReduceOp::nanmax:
    case ReduceOp::nanmin:
        if (is_complex(input))
            throw DTypeError(std::string(what) +
                             ": Kiln does not order complex values here (NumPy's order of real "
                             "parts, then imaginary parts, is max's and min's)");
        return {widen(input), widen(input), input};
    case ReduceOp::nanmean: {
        const DType result = dtype.value_or(mean_result(input));
        return {widen(result), widen(result), result};
    }
    case ReduceOp::var:
    case ReduceOp::std: {
        // One pass loses what two passes keep when the mean is large beside the spread (the
        // error grows with mean / deviation): the moments are kept in double precision.
        const DType computed = dtype.value_or(mean_result(input));
        const DType wide = is_complex(computed) ? DType::complex128 : DType::float64;
        return {wide, DType::float64, real_of(computed)};
    }
    case ReduceOp::argmax:
    case ReduceOp::argmin:
        if (!axis.is_all() && axis.size() != 1)
            throw AxisError(std::string(what) +
                            ": takes one axis or all of them, not axis=" + axis.to_string());
        return {widen(input), widen(input), DType::int64};
    case ReduceOp::mean: {
        const DType result = dtype.value_or(mean_result(input));
        return {widen(result), widen(result), result};
    }
    case ReduceOp::any:
    case ReduceOp::all:
        return {DType::bool_, DType::bool_, DType::bool_};
    case ReduceOp::count_nonzero:
        return {DType::int64, DType::int64, DType::int64};
    default:
        throw ArgumentError(std::string(what) + " has no single-pass recipe");
    }
}

} // namespace

ReductionRecipe reduction_recipe(ReduceOp op, DType input, std::optional<DType> dtype,
                                 const Axes& axis, int ddof) {
    const ReductionTypes types = reduction_types(op, input, dtype, axis);
    return recipe_of(op, types.compute, types.accumulate, types.result, false, ddof);
}

ReductionKernel recipe_kernel(const ReductionRecipe& recipe, const char* name) {
    ReductionOptions options;
    options.preamble = recipe.preamble;
    options.reduce_type = recipe.reduce_type;
    options.empty_is_error = recipe.empty_is_error;
    return ReductionKernel(recipe.in, std::string(kiln::name(recipe.result)) + " y", recipe.map,
                           recipe.reduce, std::string("y = ") + recipe.value, recipe.identity, name,
                           options);
}

} // namespace detail

namespace {

using detail::ReduceOp;
using detail::ReductionRecipe;

// Kernel names as profilers show them.
const char* kernel_name(ReduceOp op) {
    static const char* const names[] = {
        "kiln_sum",     "kiln_prod",        "kiln_max",         "kiln_min",          "kiln_argmax",
        "kiln_argmin",  "kiln_mean",        "kiln_var",         "kiln_norm",         "kiln_any",
        "kiln_all",     "kiln_nansum",      "kiln_nanprod",     "kiln_nanmax",       "kiln_nanmin",
        "kiln_nanmean", "kiln_var_moments", "kiln_std_moments", "kiln_count_nonzero"};
    return names[static_cast<int>(op)];
}

// Which ready ReductionKernel: the operation and its types C, R and O.
struct KernelKey {
    ReduceOp op;
    DType compute, accumulate, result;
    bool sqrt_after;
    bool operator==(const KernelKey& o) const noexcept {
        return op == o.op && compute == o.compute && accumulate == o.accumulate &&
               result == o.result && sqrt_after == o.sqrt_after;
    }
};
struct KernelKeyHash {
    std::size_t operator()(const KernelKey& k) const noexcept {
        return static_cast<std::size_t>(k.op) << 32 | static_cast<std::size_t>(k.compute) << 24 |
               static_cast<std::size_t>(k.accumulate) << 16 |
               static_cast<std::size_t>(k.result) << 8 | static_cast<std::size_t>(k.sqrt_after);
    }
};

// One ReductionKernel per (operation, computation type C, accumulation type R, result type O),
// built on first use and kept; each caches its own specializations per input dtype and layout.
// A hot call finds its kernel without a lock or a string: the table is the lock-free
// per-context cache, used with no context; the recipe's strings are built only for a new kernel.
const ReductionKernel& kernel_for(ReduceOp op, DType compute, DType accumulate, DType result,
                                  bool sqrt_after = false) {
    static detail::PerContextCache<ReductionKernel, KernelKey, KernelKeyHash> kernels;
    return kernels.get(nullptr, KernelKey{op, compute, accumulate, result, sqrt_after}, [&] {
        return detail::recipe_kernel(detail::recipe_of(op, compute, accumulate, result, sqrt_after),
                                     kernel_name(op));
    });
}

Array run(const ReductionKernel& kernel, std::initializer_list<Arg> inputs, const Axes& axis,
          const ReduceOptions& options, bool keepdims) {
    const detail::ReadyCallArgs args =
        detail::ready_call_args(inputs, options.out ? &*options.out : nullptr);
    return kernel.call(args.args.data(), args.count, ReduceCall{axis, keepdims, options.stream})[0];
}

// A single-pass reduction, by its shared recipe.
Array run(ReduceOp op, const Array& a, const Axes& axis, const ReduceOptions& options) {
    const auto types = detail::reduction_types(op, a.dtype(), options.dtype, axis);
    return run(kernel_for(op, types.compute, types.accumulate, types.result), {a}, axis, options,
               options.keepdims);
}

// var and std: the mean (kept dims, accumulation precision), then squared deviations.
Array variance(const Array& a, const Axes& axis, const ReduceOptions& options, bool take_sqrt) {
    const DType result = detail::real_of(detail::mean_result(a.dtype()));
    const DType compute = detail::widen(detail::mean_result(a.dtype()));
    ReduceOptions mean_options;
    mean_options.stream = options.stream;
    const Array m =
        run(kernel_for(ReduceOp::mean, compute, compute, compute), {a}, axis, mean_options, true);
    const DType accumulate = detail::real_of(compute);
    return run(kernel_for(ReduceOp::squared_deviation, compute, accumulate, result, take_sqrt),
               {a, m, static_cast<std::int64_t>(options.ddof)}, axis, options, options.keepdims);
}

} // namespace

Array sum(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::sum, a, axis, options);
}

Array prod(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::prod, a, axis, options);
}

Array max(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::max, a, axis, options);
}

Array min(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::min, a, axis, options);
}

Array argmax(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::argmax, a, axis, options);
}

Array argmin(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::argmin, a, axis, options);
}

Array mean(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::mean, a, axis, options);
}

Array var(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return variance(a, axis, options, false);
}

Array std(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return variance(a, axis, options, true);
}

Array norm(const Array& a, const Axes& axis, const ReduceOptions& options) {
    const DType result = detail::real_of(detail::mean_result(a.dtype()));
    const DType compute = detail::widen(detail::mean_result(a.dtype()));
    return run(kernel_for(ReduceOp::norm, compute, detail::real_of(compute), result), {a}, axis,
               options, options.keepdims);
}

Array any(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::any, a, axis, options);
}

Array all(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::all, a, axis, options);
}

Array nansum(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::nansum, a, axis, options);
}

Array nanprod(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::nanprod, a, axis, options);
}

Array nanmax(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::nanmax, a, axis, options);
}

Array nanmin(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::nanmin, a, axis, options);
}

Array nanmean(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::nanmean, a, axis, options);
}

Array count_nonzero(const Array& a, const Axes& axis, const ReduceOptions& options) {
    return run(ReduceOp::count_nonzero, a, axis, options);
}

} // namespace kiln
