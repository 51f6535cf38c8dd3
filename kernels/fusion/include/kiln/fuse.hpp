#pragma once
/// @file
/// Kernel fusion (CuPy's `cupy.fuse`): a function of array operations, written once as a generic
/// C++ lambda, runs as one generated kernel, or as few as its data dependencies allow, instead of
/// one kernel per operation.
///
/// @code
/// auto squared_diff =
///     kiln::fuse("squared_diff", [](auto x, auto y) { return (x - y) * (x - y); });
/// kiln::Array z = squared_diff(x, y); // one elementwise kernel
/// auto sum_of_products =
///     kiln::fuse("sum_of_products", [](auto x, auto y) { return kiln::sum(x * y, -1); });
/// kiln::Array s = sum_of_products(x, y); // one reduction kernel
/// auto softmax = kiln::fuse("softmax", [](auto x) {
///     auto e = kiln::exp(x - kiln::max(x, -1, {true}));
///     return e / kiln::sum(e, -1, {true});
/// });
/// kiln::Array p = softmax(x); // one kernel of a block per row (C-contiguous rows)
/// @endcode
///
/// On the first call with a signature (each argument's dtype, whether it is an array or a scalar,
/// and its number of dimensions) the function is called once with symbolic arrays
/// (kiln::fusion::Var) that record what it does. The record is planned into kernels, each with one
/// line of source per traced expression:
/// - without a reduction, one ElementwiseKernel;
/// - with reductions, a ReductionKernel per reduction (its map the elementwise work before it,
///   its post-map the outputs that need its result and scalars alone), and one ElementwiseKernel
///   after them for whatever else the function returns or updates (an array used after a
///   reduction: `x - mean(x)`); a reduction may read earlier reductions' results (softmax's sum
///   reads the max). A function with one reduction whose outputs all come after it is one kernel;
/// - where every reduction reduces the last axis of arrays of one rank (softmax, layer norms), a
///   call whose arrays are C-contiguous and of one shape, with rows of at most 32768 elements, runs
///   one generated kernel instead: a block per row, a pass over the row per reduction (the later
///   ones from L2) and one that writes the outputs.
/// Later calls with that signature run the kernels without calling the function again: the
/// function must compute the same thing each time it is traced (no side effects it relies on).
/// Everything else is the kernels': broadcasting, output allocation, layouts, vector width, the
/// caches in memory and on disk (`kiln warm --from-cache` replays a fused kernel from its
/// recipe), `-lineinfo`. sources_for() gives the source of every kernel a call would launch, in
/// launch order, each with a `// kiln::fuse` line that names it ("kernel 2 of 3, softmax_2: the
/// reduction sum(t5, axis=-1, keepdims=true)"); kernels of a split are named `<name>_1`,
/// `<name>_2`... as profilers show them.
///
/// What a traced function may do, with NumPy's result dtypes (the rules of kiln/ops.hpp):
/// - operators `+ - * / % & | ^ << >>`, unary `- ~ !`, `== != < <= > >=` and every operation of
///   kiln/ops.hpp by NumPy's name, on Vars and C++ scalars (numbers, `std::complex<double>` as
///   Python's complex, `std::complex<float>` as complex64): add, subtract, multiply, divide,
///   floor_divide, remainder, fmod, divmod (a pair of Vars), power, maximum, minimum, fmax, fmin,
///   equal, not_equal, less, less_equal, greater, greater_equal, bitwise_and, bitwise_or,
///   bitwise_xor, invert (bitwise_not), left_shift, right_shift, logical_and, logical_or,
///   logical_xor, logical_not, negative, sign, square, reciprocal, abs, exp, exp2, expm1, log,
///   log2, log10, log1p, sqrt, cbrt, sin, cos, tan, arcsin, arccos, arctan, arctan2, hypot, sinh,
///   cosh, tanh, arcsinh, arccosh, arctanh, floor, ceil, trunc, rint, copysign, isnan, isinf,
///   isfinite, signbit, real, imag, conj, where, clip, astype (an operation NumPy refuses for the
///   operands' dtypes is a DTypeError when traced);
/// - reductions (sum, prod, min, max, mean, var, std, argmax, argmin, any, all, count_nonzero,
///   nansum, nanprod, nanmax, nanmin, nanmean, with axes, keepdims, dtype and ddof as
///   kiln/reductions.hpp takes them), any number, of any Var that depends on an array, and
///   elementwise work on their results with arrays and scalars (each reduction takes a Var, then
///   optionally the axes and ReduceOptions; ReduceOptions::out is refused);
/// - update an array argument in place: `x += y` (`-=`, `*=`, `/=`) or `kiln::copyto(x, y)`, cast
///   to the argument's dtype by NumPy's same_kind rule, with the value broadcast to its shape; the
///   argument's array is written when all the function's reads of it are done (an argument that
///   shares memory with it in another layout is read from a copy, as NumPy reads it);
/// - return one Var, a std::tuple / std::pair of Vars for several outputs, or nothing when it
///   updates an argument. An output that is an updated argument is that argument's array.
///
/// These functions live in kiln::fusion beside the operators (found by argument-dependent lookup)
/// and are also brought into kiln, so `kiln::sum(x * y, -1)` reads the same inside a fused
/// function as outside one.
///
/// Scalars: a C++ scalar passed to the fused call is a kernel parameter (a new value never
/// recompiles; its C++ type is part of the signature). A literal inside the function (`x * 2`)
/// is a constant in the generated source. Both follow the ready operations' rules: a scalar of a
/// weak type (kiln::is_weak_scalar_v: `int`, `double`, `std::complex<double>` ...) is weak, as
/// NumPy 2's Python scalars: it takes the array's dtype unless its kind is higher (`float32 *
/// 2.5` is float32, `int32 * 2.5` is float64, `float32 * 1i` is complex64), and an expression of
/// weak scalars alone stays weak; a strong one (`float`, `std::int8_t`, `std::complex<float>`
/// ...) promotes as a NumPy scalar. A literal converted to an integer type it does not fit is an
/// OverflowError when traced, a scalar argument one at the call (a value computed from scalars
/// alone is not checked).
///
/// Errors are FusionError (an ArgumentError): a function that returns no array and updates none,
/// an update that NumPy's same_kind rule refuses (`int32 += 1.5`), a kernel that would write more
/// than Outputs::kCapacity arrays; an operation NumPy refuses for its operands' dtypes is a
/// DTypeError. An Array operation given a Var (a captured kiln::Array, an
/// operation Kiln has only for arrays) does not compile.
///
/// Threads: a fused function may be called from several threads at once. Two threads that meet
/// a new signature together may both trace it (one result is kept), so the function must not
/// rely on being called once.

#include "kiln/array.hpp"
#include "kiln/axes.hpp"
#include "kiln/call_arguments.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"
#include "kiln/reductions.hpp"
#include "kiln/scalar.hpp"

#include <array>
#include <complex>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

/// A function kiln::fuse cannot turn into one kernel; the message says why and names the
/// operation at fault.
class FusionError : public ArgumentError {
  public:
    using ArgumentError::ArgumentError;
};

/// Construction-time options of a fused function.
struct FuseOptions {
    std::string preamble;             ///< at file scope, before the kernel
    std::vector<std::string> options; ///< extra NVRTC options (e.g. "-use_fast_math")
};

namespace detail {
class FusionTrace;
struct FuseOperand;
} // namespace detail

namespace fusion {

/// A symbolic array (or scalar argument) inside a function being traced by kiln::fuse. Copyable;
/// valid only while the trace that made it runs.
class Var {
  public:
    /// The dtype this value will have.
    /// @return the dtype, by the result rules of kiln/ops.hpp.
    DType dtype() const;
    /// Its number of dimensions.
    /// @return the argument's number of dimensions (0 for a scalar argument), the largest of the
    /// operands' for an operation, the reduction's result's for a reduction.
    int ndim() const;
    /// This value converted to @p dtype (NumPy's astype). The result's dtype is a strong one:
    /// it is not weakened as a scalar's would be.
    /// @param dtype the dtype to convert to.
    /// @return the converted value.
    Var astype(DType dtype) const;

  private:
    friend class detail::FusionTrace;
    friend struct detail::FuseOperand;
    Var(detail::FusionTrace* trace, int id) noexcept
        : m_trace(trace)
        , m_id(id) {}
    detail::FusionTrace* m_trace;
    int m_id;
};

/// Whether @p T is a Var (after removing references and cv-qualifiers).
/// @tparam T the type to test.
template <class T> inline constexpr bool is_var_v = std::is_same_v<std::decay_t<T>, Var>;
/// Whether a value of type @p T may be an operand of a traced operation: a Var or a C++ number
/// (`char` excluded: it is text, not a number).
/// @tparam T the type to test.
template <class T>
inline constexpr bool is_operand_v = is_var_v<T> ||
                                     (std::is_arithmetic_v<std::decay_t<T>> &&
                                      !std::is_same_v<std::decay_t<T>, char>) ||
                                     std::is_same_v<std::decay_t<T>, std::complex<float>> ||
                                     std::is_same_v<std::decay_t<T>, std::complex<double>>;
/// Enables an operation on operands that are Vars or C++ scalars, at least one a Var.
template <class... T>
using IfFusable = std::enable_if_t<(is_operand_v<T> && ...) && (is_var_v<T> || ...), Var>;

} // namespace fusion

namespace detail {

/// An operand of a traced operation: a Var or a C++ scalar (a literal).
struct FuseOperand {
    FuseOperand(const fusion::Var& v) noexcept // NOLINT(google-explicit-constructor): `x * 2 + y`
        : trace(v.m_trace)
        , id(v.m_id)
        , literal(0) {}
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    FuseOperand(T value) noexcept // NOLINT(google-explicit-constructor): `x * 2 + y`
        : literal(value) {}
    template <class T>
    FuseOperand(std::complex<T> value) noexcept // NOLINT(google-explicit-constructor): `x * 1i`
        : literal(value) {}
    FusionTrace* trace = nullptr;
    int id = -1;
    Scalar literal;
};

/// Records the operation NumPy names @p op ("add", "where", "astype"...) on @p operands.
fusion::Var fuse_apply(const char* op, std::initializer_list<FuseOperand> operands,
                       DType target = DType::bool_);
/// Records the reduction @p op ("sum", "argmax"...) of @p v.
fusion::Var fuse_reduce(const char* op, const fusion::Var& v, const Axes& axis,
                        const ReduceOptions& options);
/// Records the in-place update of @p target (NumPy's `x += y`, `copyto(x, y)`) with @p value, cast
/// to @p target's dtype by NumPy's same_kind rule; @p target then stands for the updated value.
/// When @p target is an array argument (or an earlier update of one), the argument's array is
/// written when the fused function runs.
/// @p fresh: @p value is a Var made for this update alone (`x += y`), which may stand for the
/// argument from now on; otherwise (copyto) a copy of it does.
void fuse_update(fusion::Var& target, const FuseOperand& value, const char* op, bool fresh);
/// @throws FusionError: @p op cannot be fused, because @p why.
[[noreturn]] void fuse_refuse(const fusion::Var& v, const char* op, const char* why);

// The trace's side of a traced call.
fusion::Var fusion_input(FusionTrace& trace, std::size_t k);
void fusion_output(FusionTrace& trace, const fusion::Var& v);
[[noreturn]] void fusion_not_an_array(FusionTrace& trace, const char* returned);
void fusion_returns_nothing(FusionTrace& trace);
[[noreturn]] void fusion_wrong_arity(FusionTrace& trace);

/// What kiln::fuse's result holds beyond the user's function: the per-signature table of traced
/// kernels. Not a template, so the work lives in one place.
class FusedCore {
  public:
    /// Traces the function at @p function with the trace's inputs.
    using TraceFn = void (*)(const void* function, FusionTrace& trace);
    /// The most arguments a fused function takes.
    static constexpr std::size_t kMaxArgs = 16;

    FusedCore(std::string name, FuseOptions options);
    ~FusedCore();
    FusedCore(FusedCore&&) noexcept;
    FusedCore& operator=(FusedCore&&) noexcept;

    /// @p tracers[n] traces with n arguments.
    Outputs call(const Arg* args, std::size_t count, const CallOptions& options,
                 const void* function, const TraceFn* tracers) const;
    std::vector<std::string> sources_for(const Arg* args, std::size_t count, const void* function,
                                         const TraceFn* tracers) const;
    std::vector<std::shared_ptr<const Program>> compile_for(const Arg* args, std::size_t count,
                                                            const std::string& arch,
                                                            const void* function,
                                                            const TraceFn* tracers) const;
    const std::string& name() const noexcept;
    std::size_t traces() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

template <class R> void collect_outputs(FusionTrace& trace, const R& result) {
    if constexpr (fusion::is_var_v<R>) {
        fusion_output(trace, result);
    } else if constexpr (std::is_arithmetic_v<R>) {
        fusion_not_an_array(trace, "a C++ scalar");
    } else {
        fusion_not_an_array(trace, "something that is neither a Var nor a tuple of Vars");
    }
}
template <class... T> void collect_outputs(FusionTrace& trace, const std::tuple<T...>& result) {
    std::apply([&](const auto&... v) { (collect_outputs(trace, v), ...); }, result);
}
template <class A, class B> void collect_outputs(FusionTrace& trace, const std::pair<A, B>& p) {
    collect_outputs(trace, p.first);
    collect_outputs(trace, p.second);
}

template <class F, std::size_t... I>
void trace_with(const void* function, FusionTrace& trace, std::index_sequence<I...>) {
    const F& f = *static_cast<const F*>(function);
    if constexpr (std::is_invocable_v<const F&, std::conditional_t<I == I, fusion::Var, void>...>) {
        using R = std::invoke_result_t<const F&, std::conditional_t<I == I, fusion::Var, void>...>;
        if constexpr (std::is_void_v<R>) {
            f(fusion_input(trace, I)...);
            fusion_returns_nothing(trace);
        } else {
            collect_outputs(trace, f(fusion_input(trace, I)...));
        }
    } else {
        fusion_wrong_arity(trace);
    }
}

template <class F, std::size_t... N>
constexpr std::array<FusedCore::TraceFn, sizeof...(N)> tracers_for(std::index_sequence<N...>) {
    return {[](const void* function, FusionTrace& trace) {
        trace_with<F>(function, trace, std::make_index_sequence<N>{});
    }...};
}

} // namespace detail

/// A fused function: what kiln::fuse returns. Call it like the function, with arrays and C++
/// scalars; the result is every output (converting to Array when there is one).
///
/// Movable, not copyable. A Fused holds the user's function and a table of the kernels traced
/// from it, one per signature (shared by the threads that call it; see the file's notes on
/// threads).
/// @tparam F the function's type (a lambda's closure type, decayed).
template <class F> class Fused {
  public:
    /// A fused function that has not been traced yet; kiln::fuse makes one. Nothing is traced or
    /// compiled before the first call.
    /// @param name the kernel's name: a C identifier, as profilers show it.
    /// @param function the function to trace, taken by value.
    /// @param options the preamble and NVRTC options of every kernel traced from it.
    Fused(std::string name, F function, FuseOptions options = {})
        : m_core(std::move(name), std::move(options))
        , m_function(std::move(function)) {}

    /// Runs the fused kernel on @p args, tracing the function on the first call with their
    /// signature. Outputs are allocated (a fused function takes no output arguments); the call
    /// options are the defaults.
    /// @tparam Args Array, Scalar or C++ number types.
    /// @param args the function's arguments, in order: at most 16.
    /// @return the values the function returns, in order.
    /// @throws FusionError (what the function does cannot be fused, or more than 16 arguments),
    /// ArgumentError, ShapeError, AxisError, CompileError (naming the traced expression at
    /// fault), CudaError.
    template <class... Args> Outputs operator()(const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), CallOptions{});
    }
    /// The same with per-call options (stream; block size for an elementwise kernel).
    /// @tparam Args Array, Scalar or C++ number types.
    /// @param options the stream, and the block size for an elementwise kernel.
    /// @param args the function's arguments, in order: at most 16.
    /// @return the values the function returns, in order.
    /// @throws as the call operator.
    template <class... Args>
    Outputs operator()(const CallOptions& options, const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), options);
    }
    /// The call operator's work, with arguments already made into Args (for wrappers and
    /// arguments known only at run time).
    /// @param args @p count arguments.
    /// @param count how many (at most 16).
    /// @param options the stream, and the block size for an elementwise kernel.
    /// @return the values the function returns, in order.
    /// @throws as the call operator.
    Outputs call(const Arg* args, std::size_t count, const CallOptions& options) const {
        return m_core.call(args, count, options, &m_function, kTracers.data());
    }

    /// The CUDA source a call with @p args would compile (no device needed; nothing launched or
    /// allocated). Traces the function if the signature is new. A function that became several
    /// kernels gives all their sources, in launch order, one after the other (each starts with a
    /// `// kiln::fuse` comment line that names the kernel and what it computes).
    /// @param args @p count arguments, as for call().
    /// @param count how many.
    /// @return the complete sources handed to NVRTC, in launch order.
    /// @throws FusionError, ArgumentError, ShapeError, AxisError as a call would.
    std::string source_for(const Arg* args, std::size_t count) const {
        std::string all;
        for (const std::string& source : sources_for(args, count))
            all += source;
        return all;
    }
    /// The source of each kernel a call with @p args would launch, in launch order: one for a
    /// function that fuses into one kernel, more where a reduction's result is used with arrays
    /// or several reductions are traced (see docs/fusion.md). Traces the function if the
    /// signature is new; no device needed.
    /// @param args @p count arguments, as for call().
    /// @param count how many.
    /// @return one complete source per kernel.
    /// @throws FusionError, ArgumentError, ShapeError, AxisError as a call would.
    std::vector<std::string> sources_for(const Arg* args, std::size_t count) const {
        return m_core.sources_for(args, count, &m_function, kTracers.data());
    }
    /// Compiles every kernel of a call for @p arch (e.g. "sm_90") without a device, warming the
    /// caches. Traces the function if the signature is new.
    /// @param args @p count arguments, as for call(); only their dtypes, shapes and layouts count.
    /// @param count how many.
    /// @param arch the target architecture.
    /// @return the program of the last kernel launched (the one that writes the outputs);
    /// programs_for() gives them all.
    /// @throws FusionError as a call would; CompileError naming the traced expression at fault.
    std::shared_ptr<const Program> compile_for(const Arg* args, std::size_t count,
                                               const std::string& arch) const {
        return m_core.compile_for(args, count, arch, &m_function, kTracers.data()).back();
    }
    /// compile_for(), giving the program of every kernel, in launch order.
    /// @param args @p count arguments, as for call().
    /// @param count how many.
    /// @param arch the target architecture.
    /// @return one program per kernel.
    /// @throws as compile_for().
    std::vector<std::shared_ptr<const Program>> programs_for(const Arg* args, std::size_t count,
                                                             const std::string& arch) const {
        return m_core.compile_for(args, count, arch, &m_function, kTracers.data());
    }

    /// The kernel's name.
    /// @return the name given to kiln::fuse.
    const std::string& name() const noexcept { return m_core.name(); }
    /// How many times the function has been traced (once per signature).
    /// @return the number of traces so far, those of threads that met a new signature together
    /// included.
    std::size_t traces() const noexcept { return m_core.traces(); }

  private:
    static constexpr std::array<detail::FusedCore::TraceFn, detail::FusedCore::kMaxArgs + 1>
        kTracers =
            detail::tracers_for<F>(std::make_index_sequence<detail::FusedCore::kMaxArgs + 1>{});
    detail::FusedCore m_core;
    F m_function;
};

/// Fuses @p function (a generic lambda of Vars, e.g. `[](auto x, auto y) { return x * y; }`)
/// into one kernel named @p name (a C identifier, as profilers show it). Nothing is traced or
/// compiled until the result is first called.
/// @tparam F the function's type.
/// @param name the kernel's name.
/// @param function the function, copied or moved into the result.
/// @param options the preamble and extra NVRTC options of the kernels.
/// @return the fused function.
template <class F>
Fused<std::decay_t<F>> fuse(std::string name, F&& function, FuseOptions options = {}) {
    return Fused<std::decay_t<F>>(std::move(name), std::forward<F>(function), std::move(options));
}

namespace fusion {

// Operators, found by argument-dependent lookup on Var.
/// Elementwise sum (NumPy's add).
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a + b`, a new Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator+(const A& a, const B& b) {
    return detail::fuse_apply("add", {a, b});
}
/// Elementwise difference (NumPy's subtract).
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a - b`, a new Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator-(const A& a, const B& b) {
    return detail::fuse_apply("subtract", {a, b});
}
/// Elementwise product (NumPy's multiply).
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a * b`, a new Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator*(const A& a, const B& b) {
    return detail::fuse_apply("multiply", {a, b});
}
/// True division (NumPy's divide): integers give float64.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a / b`, a new Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator/(const A& a, const B& b) {
    return detail::fuse_apply("divide", {a, b});
}
/// Negation (NumPy's negative): unsigned values wrap, as NumPy's do (uint8 200 gives 56).
/// @param a the value.
/// @return `-a`, a new Var.
/// @throws DTypeError for a bool value (NumPy's boolean negative is an error).
inline Var operator-(const Var& a) {
    return detail::fuse_apply("negative", {a});
}
/// Bitwise not (NumPy's invert): logical not for bool.
/// @param a the value.
/// @return `~a`, a new Var.
/// @throws DTypeError for a floating or complex value.
inline Var operator~(const Var& a) {
    return detail::fuse_apply("invert", {a});
}
/// Logical not (NumPy's logical_not): a bool Var, not a C++ bool.
/// @param a the value.
/// @return `!a`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var operator!(const Var& a) {
    return detail::fuse_apply("logical_not", {a});
}
/// The remainder with Python's signs (NumPy's remainder, `%`): 0 for an integer zero divisor.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a % b`, a new Var.
/// @throws DTypeError for complex operands.
template <class A, class B> IfFusable<A, B> operator%(const A& a, const B& b) {
    return detail::fuse_apply("remainder", {a, b});
}
/// Bitwise and (NumPy's bitwise_and), of bool or integer operands.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a & b`, a new Var.
/// @throws DTypeError for floating or complex operands.
template <class A, class B> IfFusable<A, B> operator&(const A& a, const B& b) {
    return detail::fuse_apply("bitwise_and", {a, b});
}
/// Bitwise or (NumPy's bitwise_or), of bool or integer operands.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a | b`, a new Var.
/// @throws DTypeError for floating or complex operands.
template <class A, class B> IfFusable<A, B> operator|(const A& a, const B& b) {
    return detail::fuse_apply("bitwise_or", {a, b});
}
/// Bitwise exclusive or (NumPy's bitwise_xor), of bool or integer operands.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a ^ b`, a new Var.
/// @throws DTypeError for floating or complex operands.
template <class A, class B> IfFusable<A, B> operator^(const A& a, const B& b) {
    return detail::fuse_apply("bitwise_xor", {a, b});
}
/// Left shift (NumPy's left_shift): a shift by the width or more gives 0.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a << b`, a new Var.
/// @throws DTypeError for floating or complex operands.
template <class A, class B> IfFusable<A, B> operator<<(const A& a, const B& b) {
    return detail::fuse_apply("left_shift", {a, b});
}
/// Right shift (NumPy's right_shift), arithmetic for signed types.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a >> b`, a new Var.
/// @throws DTypeError for floating or complex operands.
template <class A, class B> IfFusable<A, B> operator>>(const A& a, const B& b) {
    return detail::fuse_apply("right_shift", {a, b});
}
/// Elementwise comparison (NumPy's equal): a bool Var, not a C++ bool.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a == b`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator==(const A& a, const B& b) {
    return detail::fuse_apply("equal", {a, b});
}
/// Elementwise comparison (NumPy's not_equal): a bool Var, not a C++ bool.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a != b`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator!=(const A& a, const B& b) {
    return detail::fuse_apply("not_equal", {a, b});
}
/// Elementwise comparison (NumPy's less): a bool Var, not a C++ bool.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a < b`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator<(const A& a, const B& b) {
    return detail::fuse_apply("less", {a, b});
}
/// Elementwise comparison (NumPy's less_equal): a bool Var, not a C++ bool.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a <= b`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator<=(const A& a, const B& b) {
    return detail::fuse_apply("less_equal", {a, b});
}
/// Elementwise comparison (NumPy's greater): a bool Var, not a C++ bool.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a > b`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator>(const A& a, const B& b) {
    return detail::fuse_apply("greater", {a, b});
}
/// Elementwise comparison (NumPy's greater_equal): a bool Var, not a C++ bool.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return `a >= b`, a new bool Var.
/// @throws FusionError when the operation cannot be fused here.
template <class A, class B> IfFusable<A, B> operator>=(const A& a, const B& b) {
    return detail::fuse_apply("greater_equal", {a, b});
}

/// In-place sum (NumPy's `x += y`): @p a becomes `a + b` cast back to @p a's dtype (NumPy's
/// same_kind rule: `int32 += float` is a FusionError). When @p a is an array argument, the
/// argument's array is updated when the fused function runs; a Var copied from @p a before keeps
/// the value it had.
/// @param a the Var to update.
/// @param b a Var or C++ scalar.
/// @return @p a.
/// @throws FusionError when the operation cannot be fused or the result cannot be cast back.
template <class B, class = std::enable_if_t<is_operand_v<B>>> Var& operator+=(Var& a, const B& b) {
    detail::fuse_update(a, detail::fuse_apply("add", {a, b}), "+=", true);
    return a;
}
/// In-place difference (NumPy's `x -= y`), as operator+=.
/// @param a the Var to update.
/// @param b a Var or C++ scalar.
/// @return @p a.
/// @throws FusionError as operator+=.
template <class B, class = std::enable_if_t<is_operand_v<B>>> Var& operator-=(Var& a, const B& b) {
    detail::fuse_update(a, detail::fuse_apply("subtract", {a, b}), "-=", true);
    return a;
}
/// In-place product (NumPy's `x *= y`), as operator+=.
/// @param a the Var to update.
/// @param b a Var or C++ scalar.
/// @return @p a.
/// @throws FusionError as operator+=.
template <class B, class = std::enable_if_t<is_operand_v<B>>> Var& operator*=(Var& a, const B& b) {
    detail::fuse_update(a, detail::fuse_apply("multiply", {a, b}), "*=", true);
    return a;
}
/// In-place true division (NumPy's `x /= y`): an integer @p a is a FusionError (the quotient is
/// floating), as in NumPy.
/// @param a the Var to update.
/// @param b a Var or C++ scalar.
/// @return @p a.
/// @throws FusionError as operator+=.
template <class B, class = std::enable_if_t<is_operand_v<B>>> Var& operator/=(Var& a, const B& b) {
    detail::fuse_update(a, detail::fuse_apply("divide", {a, b}), "/=", true);
    return a;
}
/// Writes @p value into @p dst (NumPy's `copyto(dst, value)`, casting by the same_kind rule):
/// when @p dst is an array argument, its array is updated when the fused function runs, with
/// @p value broadcast to its shape. A function may do all its work this way and return nothing.
/// @param dst the Var written (an argument, or an earlier update of one).
/// @param value a Var or C++ scalar.
/// @throws FusionError when @p value cannot be cast to @p dst's dtype by the same_kind rule.
template <class B, class = std::enable_if_t<is_operand_v<B>>>
void copyto(Var& dst, const B& value) {
    detail::fuse_update(dst, value, "copyto", false);
}

/// @cond
// The ready operations of kiln/ops.hpp, by name (listed in the file's overview: Doxygen does not
// expand these macros).
#define KILN_FUSION_BINARY(name)                                                                   \
    template <class A, class B> IfFusable<A, B> name(const A& a, const B& b) {                     \
        return detail::fuse_apply(#name, {a, b});                                                  \
    }
KILN_FUSION_BINARY(add)
KILN_FUSION_BINARY(subtract)
KILN_FUSION_BINARY(multiply)
KILN_FUSION_BINARY(divide)
KILN_FUSION_BINARY(power)
KILN_FUSION_BINARY(maximum)
KILN_FUSION_BINARY(minimum)
KILN_FUSION_BINARY(equal)
KILN_FUSION_BINARY(not_equal)
KILN_FUSION_BINARY(less)
KILN_FUSION_BINARY(less_equal)
KILN_FUSION_BINARY(greater)
KILN_FUSION_BINARY(greater_equal)
KILN_FUSION_BINARY(floor_divide)
KILN_FUSION_BINARY(remainder)
KILN_FUSION_BINARY(fmod)
KILN_FUSION_BINARY(bitwise_and)
KILN_FUSION_BINARY(bitwise_or)
KILN_FUSION_BINARY(bitwise_xor)
KILN_FUSION_BINARY(left_shift)
KILN_FUSION_BINARY(right_shift)
KILN_FUSION_BINARY(logical_and)
KILN_FUSION_BINARY(logical_or)
KILN_FUSION_BINARY(logical_xor)
KILN_FUSION_BINARY(fmax)
KILN_FUSION_BINARY(fmin)
KILN_FUSION_BINARY(arctan2)
KILN_FUSION_BINARY(hypot)
KILN_FUSION_BINARY(copysign)
#undef KILN_FUSION_BINARY
#define KILN_FUSION_UNARY(name, op)                                                                \
    inline Var name(const Var& a) {                                                                \
        return detail::fuse_apply(#op, {a});                                                       \
    }
KILN_FUSION_UNARY(negative, negative)
KILN_FUSION_UNARY(invert, invert)
KILN_FUSION_UNARY(bitwise_not, invert)
KILN_FUSION_UNARY(logical_not, logical_not)
KILN_FUSION_UNARY(sign, sign)
KILN_FUSION_UNARY(square, square)
KILN_FUSION_UNARY(reciprocal, reciprocal)
KILN_FUSION_UNARY(cbrt, cbrt)
KILN_FUSION_UNARY(exp2, exp2)
KILN_FUSION_UNARY(expm1, expm1)
KILN_FUSION_UNARY(log2, log2)
KILN_FUSION_UNARY(log10, log10)
KILN_FUSION_UNARY(log1p, log1p)
KILN_FUSION_UNARY(tan, tan)
KILN_FUSION_UNARY(arcsin, arcsin)
KILN_FUSION_UNARY(arccos, arccos)
KILN_FUSION_UNARY(arctan, arctan)
KILN_FUSION_UNARY(sinh, sinh)
KILN_FUSION_UNARY(cosh, cosh)
KILN_FUSION_UNARY(arcsinh, arcsinh)
KILN_FUSION_UNARY(arccosh, arccosh)
KILN_FUSION_UNARY(arctanh, arctanh)
KILN_FUSION_UNARY(floor, floor)
KILN_FUSION_UNARY(ceil, ceil)
KILN_FUSION_UNARY(trunc, trunc)
KILN_FUSION_UNARY(rint, rint)
KILN_FUSION_UNARY(isnan, isnan)
KILN_FUSION_UNARY(isinf, isinf)
KILN_FUSION_UNARY(isfinite, isfinite)
KILN_FUSION_UNARY(signbit, signbit)
KILN_FUSION_UNARY(real, real)
KILN_FUSION_UNARY(imag, imag)
KILN_FUSION_UNARY(conj, conj)
#undef KILN_FUSION_UNARY
/// @endcond

/// Floor division and remainder together (NumPy's divmod): two Vars, the values of floor_divide
/// and remainder.
/// @param a, b Vars or C++ scalars, at least one a Var.
/// @return the quotient and the remainder.
/// @throws DTypeError for complex operands.
template <class A, class B>
std::enable_if_t<std::is_same_v<IfFusable<A, B>, Var>, std::pair<Var, Var>> divmod(const A& a,
                                                                                   const B& b) {
    return {detail::fuse_apply("floor_divide", {a, b}), detail::fuse_apply("remainder", {a, b})};
}

/// e to the power @p a, elementwise (NumPy's exp: integers give a floating dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var exp(const Var& a) {
    return detail::fuse_apply("exp", {a});
}
/// The natural logarithm of @p a, elementwise (NumPy's log: integers give a floating dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var log(const Var& a) {
    return detail::fuse_apply("log", {a});
}
/// The square root of @p a, elementwise (NumPy's sqrt: integers give a floating dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var sqrt(const Var& a) {
    return detail::fuse_apply("sqrt", {a});
}
/// The sine of @p a (radians), elementwise (NumPy's sin: integers give a floating dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var sin(const Var& a) {
    return detail::fuse_apply("sin", {a});
}
/// The cosine of @p a (radians), elementwise (NumPy's cos: integers give a floating dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var cos(const Var& a) {
    return detail::fuse_apply("cos", {a});
}
/// The hyperbolic tangent of @p a, elementwise (NumPy's tanh: integers give a floating dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var tanh(const Var& a) {
    return detail::fuse_apply("tanh", {a});
}
/// The absolute value of @p a, elementwise (NumPy's abs), in @p a's dtype (a complex one gives
/// its real dtype).
/// @param a the value.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
inline Var abs(const Var& a) {
    return detail::fuse_apply("abs", {a});
}
/// `condition ? x : y` elementwise (NumPy's where): the result's dtype is that of @p x and @p y
/// together.
/// @param condition the choice, converted to bool.
/// @param x the value where @p condition is true.
/// @param y the value where it is false.
/// @return a new Var.
/// @throws FusionError when the operation cannot be fused here.
template <class C, class X, class Y>
IfFusable<C, X, Y> where(const C& condition, const X& x, const Y& y) {
    return detail::fuse_apply("where", {condition, x, y});
}
/// @p a limited to [@p lo, @p hi], in @p a's dtype (NumPy's clip).
/// @param a the value.
/// @param lo the lower bound.
/// @param hi the upper bound.
/// @return a new Var.
/// @throws FusionError for a complex @p a (complex numbers have no order).
template <class Y, class Z> IfFusable<Var, Y, Z> clip(const Var& a, const Y& lo, const Z& hi) {
    return detail::fuse_apply("clip", {a, lo, hi});
}
/// @p a converted to @p dtype: the free-function spelling of Var::astype.
/// @param a the value.
/// @param dtype the dtype to convert to.
/// @return the converted value.
inline Var astype(const Var& a, DType dtype) {
    return a.astype(dtype);
}

/// @cond
// Reductions, with the axes and options of kiln/reductions.hpp (options.out is refused: a fused
// function's outputs are its return values).
#define KILN_FUSION_REDUCTION(name)                                                                \
    inline Var name(const Var& a, const Axes& axis = {}, const ReduceOptions& options = {}) {      \
        return detail::fuse_reduce(#name, a, axis, options);                                       \
    }
KILN_FUSION_REDUCTION(sum)
KILN_FUSION_REDUCTION(prod)
KILN_FUSION_REDUCTION(max)
KILN_FUSION_REDUCTION(min)
KILN_FUSION_REDUCTION(argmax)
KILN_FUSION_REDUCTION(argmin)
KILN_FUSION_REDUCTION(mean)
KILN_FUSION_REDUCTION(any)
KILN_FUSION_REDUCTION(all)
KILN_FUSION_REDUCTION(count_nonzero)
KILN_FUSION_REDUCTION(nansum)
KILN_FUSION_REDUCTION(nanprod)
KILN_FUSION_REDUCTION(nanmax)
KILN_FUSION_REDUCTION(nanmin)
KILN_FUSION_REDUCTION(nanmean)
#undef KILN_FUSION_REDUCTION
/// @endcond

/// The variance, in one pass (Welford's moments of each part, merged as Chan, Golub and LeVeque
/// merge them, in double precision so that a mean large beside the spread loses nothing), dividing
/// by N - ReduceOptions::ddof; dtypes as kiln::var.
/// @param a the value.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype and ddof (out is refused).
/// @return a new Var: the reduction.
/// @throws FusionError as any reduction.
inline Var var(const Var& a, const Axes& axis = {}, const ReduceOptions& options = {}) {
    return detail::fuse_reduce("var", a, axis, options);
}
/// The standard deviation: the square root of var, in the same one pass.
/// @param a the value.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype and ddof (out is refused).
/// @return a new Var: the reduction.
/// @throws FusionError as any reduction.
inline Var std(const Var& a, const Axes& axis = {}, const ReduceOptions& options = {}) {
    return detail::fuse_reduce("std", a, axis, options);
}

} // namespace fusion

// The operations on Vars beside their Array namesakes, so that `kiln::sum(x * y, -1)` reads the
// same in a fused function as outside one.
using fusion::abs;
using fusion::add;
using fusion::all;
using fusion::any;
using fusion::arccos;
using fusion::arccosh;
using fusion::arcsin;
using fusion::arcsinh;
using fusion::arctan;
using fusion::arctan2;
using fusion::arctanh;
using fusion::argmax;
using fusion::argmin;
using fusion::astype;
using fusion::bitwise_and;
using fusion::bitwise_not;
using fusion::bitwise_or;
using fusion::bitwise_xor;
using fusion::cbrt;
using fusion::ceil;
using fusion::clip;
using fusion::conj;
using fusion::copysign;
using fusion::copyto;
using fusion::cos;
using fusion::cosh;
using fusion::count_nonzero;
using fusion::divide;
using fusion::divmod;
using fusion::equal;
using fusion::exp;
using fusion::exp2;
using fusion::expm1;
using fusion::floor;
using fusion::floor_divide;
using fusion::fmax;
using fusion::fmin;
using fusion::fmod;
using fusion::greater;
using fusion::greater_equal;
using fusion::hypot;
using fusion::imag;
using fusion::invert;
using fusion::isfinite;
using fusion::isinf;
using fusion::isnan;
using fusion::left_shift;
using fusion::less;
using fusion::less_equal;
using fusion::log;
using fusion::log10;
using fusion::log1p;
using fusion::log2;
using fusion::logical_and;
using fusion::logical_not;
using fusion::logical_or;
using fusion::logical_xor;
using fusion::max;
using fusion::maximum;
using fusion::mean;
using fusion::min;
using fusion::minimum;
using fusion::multiply;
using fusion::nanmax;
using fusion::nanmean;
using fusion::nanmin;
using fusion::nanprod;
using fusion::nansum;
using fusion::negative;
using fusion::not_equal;
using fusion::power;
using fusion::prod;
using fusion::real;
using fusion::reciprocal;
using fusion::remainder;
using fusion::right_shift;
using fusion::rint;
using fusion::sign;
using fusion::signbit;
using fusion::sin;
using fusion::sinh;
using fusion::sqrt;
using fusion::square;
using fusion::std;
using fusion::subtract;
using fusion::sum;
using fusion::tan;
using fusion::tanh;
using fusion::trunc;
using fusion::var;
using fusion::where;

} // namespace kiln
