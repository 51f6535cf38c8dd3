#include "kiln/ops.hpp"

#include "core/ready_call.hpp"
#include "core/scalar_overflow.hpp"
#include "driver/per_context_cache.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "op_rules.hpp"
#include "ready_ops.hpp"

#include <cstddef>
#include <string>

namespace kiln {

namespace {

using Op = detail::ElementwiseOp;

// The operation as an ElementwiseKernel statement: operands converted to the type the shared
// rules say (P, the compute type, or V, the result type), the value to V.
std::string operation_of(Op op) {
    auto operand = [&](int k, const char* name) {
        switch (detail::operand_role(op, k)) {
        case detail::OperandRole::condition:
            return std::string("kiln::cast<bool>(") + name + ')';
        case detail::OperandRole::result:
            return std::string("kiln::cast<V>(") + name + ')';
        default:
            return std::string("kiln::cast<P>(") + name + ')';
        }
    };
    switch (op) {
    case Op::where:
        return "z = kiln::cast<V>(" +
               detail::op_expression(op, operand(0, "c"), operand(1, "x"), operand(2, "y")) + ')';
    case Op::clip:
        return "z = kiln::cast<V>(" +
               detail::op_expression(op, operand(0, "x"), operand(1, "lo"), operand(2, "hi")) + ')';
    default:
        return "z = kiln::cast<V>(" +
               detail::op_expression(op, operand(0, "x"),
                                     detail::is_binary(op) ? operand(1, "y") : "") +
               ')';
    }
}

// Which ready ElementwiseKernel: the operation and its compute type.
struct OpKernelKey {
    Op op;
    DType compute;
    bool operator==(const OpKernelKey& o) const noexcept {
        return op == o.op && compute == o.compute;
    }
};
struct OpKernelKeyHash {
    std::size_t operator()(const OpKernelKey& k) const noexcept {
        return static_cast<std::size_t>(k.op) << 8 | static_cast<std::size_t>(k.compute);
    }
};

struct DTypeHash {
    std::size_t operator()(DType d) const noexcept { return static_cast<std::size_t>(d); }
};

ElementwiseKernel make_kernel(Op op, DType compute) {
    ElementwiseOptions options;
    options.preamble = std::string("typedef ") + cuda_type(compute) + " P;\n";
    if (detail::op_uses_helpers(op)) options.preamble += detail::ops_preamble();
    const std::string operation = operation_of(op);
    if (op == Op::where)
        return ElementwiseKernel("C c, T x, U y", "V z", operation, "kiln_where", options);
    if (op == Op::clip)
        return ElementwiseKernel("T x, U lo, W hi", "V z", operation, "kiln_clip", options);
    if (detail::is_binary(op))
        return ElementwiseKernel("T x, U y", "V z", operation, "kiln_binary", options);
    return ElementwiseKernel("T x", "V z", operation, "kiln_unary", options);
}

// One ElementwiseKernel per (operation, compute type), built on first use and kept; each caches
// its own specializations per dtypes and layout. A hot call finds its kernel without a lock: the
// table is the lock-free per-context cache, used with no context.
const ElementwiseKernel& cached_kernel(Op op, DType compute) {
    static detail::PerContextCache<ElementwiseKernel, OpKernelKey, OpKernelKeyHash> kernels;
    return kernels.get(nullptr, OpKernelKey{op, compute}, [&] { return make_kernel(op, compute); });
}

// floor_divide and remainder in one kernel, per compute type.
const ElementwiseKernel& cached_divmod_kernel(DType compute) {
    static detail::PerContextCache<ElementwiseKernel, DType, DTypeHash> kernels;
    return kernels.get(nullptr, compute, [&] {
        ElementwiseOptions options;
        options.preamble =
            std::string("typedef ") + cuda_type(compute) + " P;\n" + detail::ops_preamble();
        const std::string x = "kiln::cast<P>(x)", y = "kiln::cast<P>(y)";
        return ElementwiseKernel(
            "T x, U y", "V q, V r",
            "q = kiln::cast<V>(" + detail::op_expression(Op::floor_divide, x, y) +
                "); r = kiln::cast<V>(" + detail::op_expression(Op::remainder, x, y) + ')',
            "kiln_divmod", options);
    });
}

detail::TypedOperand typed(const Arg& a) {
    return a.is_array() ? detail::TypedOperand{a.array().dtype(), false}
                        : detail::TypedOperand{a.scalar().dtype(), a.scalar().is_weak()};
}

// A scalar operand must fit the type the operation converts it to (NumPy 2's OverflowError).
void check_scalar(const Arg& a, DType target, const char* what) {
    if (!a.is_array()) detail::check_fits(a.scalar(), target, what, "the operand");
}

void need_an_array(const Arg& a, const Arg& b, const char* what) {
    if (!a.is_array() && !b.is_array())
        throw ArgumentError(std::string(what) + ": at least one argument must be an array");
}

Array run(const ElementwiseKernel& kernel, std::initializer_list<Arg> inputs, DType result,
          const OpOptions& options) {
    // The output's allocation and the call ask the driver for the current context once.
    const detail::CallContextScope call_scope;
    CallOptions call;
    call.stream = options.stream;
    // The output is allocated here so that its placeholder V is bound to the result dtype.
    Array out;
    if (options.out) {
        out = *options.out;
    } else {
        Dims shape;
        bool first = true;
        for (const Arg& arg : inputs)
            if (arg.is_array()) {
                shape =
                    first ? arg.array().shape() : broadcast_shapes({shape, arg.array().shape()});
                first = false;
            }
        out = empty(shape, result, options.stream);
    }
    const detail::ReadyCallArgs args = detail::ready_call_args(inputs, &out);
    kernel.call(args.args.data(), args.count, call);
    return out;
}

Array binary(Op op, const Arg& a, const Arg& b, const OpOptions& options, const char* what) {
    need_an_array(a, b, what);
    detail::OpTypes types = detail::binary_types(op, typed(a), typed(b), what);
    if (!a.is_array()) types = detail::exact_comparison_types(op, types, a.scalar());
    if (!b.is_array()) types = detail::exact_comparison_types(op, types, b.scalar());
    check_scalar(a, types.compute, what);
    check_scalar(b, types.compute, what);
    return run(detail::ready_op_kernel(op, types.compute), {a, b}, types.result, options);
}

Array unary(Op op, const Array& a, const OpOptions& options) {
    const detail::OpTypes types = detail::unary_types(op, a.dtype(), detail::op_name(op));
    return run(detail::ready_op_kernel(op, types.compute), {a}, types.result, options);
}

} // namespace

namespace detail {

const ElementwiseKernel& ready_op_kernel(ElementwiseOp op, DType compute) {
    return cached_kernel(op, compute);
}

const ElementwiseKernel& ready_divmod_kernel(DType compute) {
    return cached_divmod_kernel(compute);
}

} // namespace detail

Array add(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::add, a, b, o, "add");
}
Array subtract(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::subtract, a, b, o, "subtract");
}
Array multiply(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::multiply, a, b, o, "multiply");
}
Array divide(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::divide, a, b, o, "divide");
}
Array power(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::power, a, b, o, "power");
}
Array maximum(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::maximum, a, b, o, "maximum");
}
Array minimum(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::minimum, a, b, o, "minimum");
}
Array equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::equal, a, b, o, "equal");
}
Array not_equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::not_equal, a, b, o, "not_equal");
}
Array less(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::less, a, b, o, "less");
}
Array less_equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::less_equal, a, b, o, "less_equal");
}
Array greater(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::greater, a, b, o, "greater");
}
Array greater_equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::greater_equal, a, b, o, "greater_equal");
}

Array exp(const Array& a, const OpOptions& o) {
    return unary(Op::exp, a, o);
}
Array log(const Array& a, const OpOptions& o) {
    return unary(Op::log, a, o);
}
Array sqrt(const Array& a, const OpOptions& o) {
    return unary(Op::sqrt, a, o);
}
Array sin(const Array& a, const OpOptions& o) {
    return unary(Op::sin, a, o);
}
Array cos(const Array& a, const OpOptions& o) {
    return unary(Op::cos, a, o);
}
Array tanh(const Array& a, const OpOptions& o) {
    return unary(Op::tanh, a, o);
}
Array abs(const Array& a, const OpOptions& o) {
    return unary(Op::abs, a, o);
}

Array floor_divide(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::floor_divide, a, b, o, "floor_divide");
}
Array remainder(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::remainder, a, b, o, "remainder");
}
Array fmod(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::fmod, a, b, o, "fmod");
}
Array bitwise_and(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::bitwise_and, a, b, o, "bitwise_and");
}
Array bitwise_or(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::bitwise_or, a, b, o, "bitwise_or");
}
Array bitwise_xor(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::bitwise_xor, a, b, o, "bitwise_xor");
}
Array left_shift(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::left_shift, a, b, o, "left_shift");
}
Array right_shift(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::right_shift, a, b, o, "right_shift");
}
Array logical_and(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::logical_and, a, b, o, "logical_and");
}
Array logical_or(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::logical_or, a, b, o, "logical_or");
}
Array logical_xor(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::logical_xor, a, b, o, "logical_xor");
}
Array fmax(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::fmax, a, b, o, "fmax");
}
Array fmin(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::fmin, a, b, o, "fmin");
}
Array arctan2(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::arctan2, a, b, o, "arctan2");
}
Array hypot(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::hypot, a, b, o, "hypot");
}
Array copysign(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::copysign, a, b, o, "copysign");
}
Array negative(const Array& a, const OpOptions& o) {
    return unary(Op::negative, a, o);
}
Array invert(const Array& a, const OpOptions& o) {
    return unary(Op::invert, a, o);
}
Array bitwise_not(const Array& a, const OpOptions& o) {
    return unary(Op::invert, a, o);
}
Array logical_not(const Array& a, const OpOptions& o) {
    return unary(Op::logical_not, a, o);
}
Array sign(const Array& a, const OpOptions& o) {
    return unary(Op::sign, a, o);
}
Array square(const Array& a, const OpOptions& o) {
    return unary(Op::square, a, o);
}
Array reciprocal(const Array& a, const OpOptions& o) {
    return unary(Op::reciprocal, a, o);
}
Array cbrt(const Array& a, const OpOptions& o) {
    return unary(Op::cbrt, a, o);
}
Array exp2(const Array& a, const OpOptions& o) {
    return unary(Op::exp2, a, o);
}
Array expm1(const Array& a, const OpOptions& o) {
    return unary(Op::expm1, a, o);
}
Array log2(const Array& a, const OpOptions& o) {
    return unary(Op::log2, a, o);
}
Array log10(const Array& a, const OpOptions& o) {
    return unary(Op::log10, a, o);
}
Array log1p(const Array& a, const OpOptions& o) {
    return unary(Op::log1p, a, o);
}
Array tan(const Array& a, const OpOptions& o) {
    return unary(Op::tan, a, o);
}
Array arcsin(const Array& a, const OpOptions& o) {
    return unary(Op::arcsin, a, o);
}
Array arccos(const Array& a, const OpOptions& o) {
    return unary(Op::arccos, a, o);
}
Array arctan(const Array& a, const OpOptions& o) {
    return unary(Op::arctan, a, o);
}
Array sinh(const Array& a, const OpOptions& o) {
    return unary(Op::sinh, a, o);
}
Array cosh(const Array& a, const OpOptions& o) {
    return unary(Op::cosh, a, o);
}
Array arcsinh(const Array& a, const OpOptions& o) {
    return unary(Op::arcsinh, a, o);
}
Array arccosh(const Array& a, const OpOptions& o) {
    return unary(Op::arccosh, a, o);
}
Array arctanh(const Array& a, const OpOptions& o) {
    return unary(Op::arctanh, a, o);
}
Array floor(const Array& a, const OpOptions& o) {
    return unary(Op::floor, a, o);
}
Array ceil(const Array& a, const OpOptions& o) {
    return unary(Op::ceil, a, o);
}
Array trunc(const Array& a, const OpOptions& o) {
    return unary(Op::trunc, a, o);
}
Array rint(const Array& a, const OpOptions& o) {
    return unary(Op::rint, a, o);
}
Array isnan(const Array& a, const OpOptions& o) {
    return unary(Op::isnan, a, o);
}
Array isinf(const Array& a, const OpOptions& o) {
    return unary(Op::isinf, a, o);
}
Array isfinite(const Array& a, const OpOptions& o) {
    return unary(Op::isfinite, a, o);
}
Array signbit(const Array& a, const OpOptions& o) {
    return unary(Op::signbit, a, o);
}
Array real(const Array& a, const OpOptions& o) {
    return unary(Op::real, a, o);
}
Array imag(const Array& a, const OpOptions& o) {
    return unary(Op::imag, a, o);
}
Array conj(const Array& a, const OpOptions& o) {
    return unary(Op::conj, a, o);
}

std::pair<Array, Array> divmod(const Arg& a, const Arg& b, StreamRef stream) {
    need_an_array(a, b, "divmod");
    const detail::OpTypes types =
        detail::binary_types(Op::floor_divide, typed(a), typed(b), "divmod");
    check_scalar(a, types.compute, "divmod");
    check_scalar(b, types.compute, "divmod");
    const detail::CallContextScope call_scope;
    const Dims shape = broadcast_shapes(
        {a.is_array() ? a.array().shape() : Dims{}, b.is_array() ? b.array().shape() : Dims{}});
    std::pair<Array, Array> out{empty(shape, types.result, stream),
                                empty(shape, types.result, stream)};
    CallOptions call;
    call.stream = stream;
    std::array<Arg, 4> args{a, b, Arg(out.first), Arg(out.second)};
    detail::ready_divmod_kernel(types.compute).call(args.data(), args.size(), call);
    return out;
}

Array where(const Array& condition, const Arg& x, const Arg& y, const OpOptions& o) {
    need_an_array(x, y, "where");
    const detail::OpTypes types = detail::where_types(typed(x), typed(y));
    const DType result = types.result;
    check_scalar(x, result, "where");
    check_scalar(y, result, "where");
    const detail::CallContextScope call_scope;
    CallOptions call;
    call.stream = o.stream;
    Array out =
        o.out
            ? *o.out
            : empty(broadcast_shapes({condition.shape(), x.is_array() ? x.array().shape() : Dims{},
                                      y.is_array() ? y.array().shape() : Dims{}}),
                    result, o.stream);
    std::array<Arg, 4> args{Arg(condition), x, y, Arg(out)};
    detail::ready_op_kernel(Op::where, types.compute).call(args.data(), args.size(), call);
    return out;
}

Array clip(const Array& a, const Arg& lo, const Arg& hi, const OpOptions& o) {
    const detail::OpTypes types = detail::clip_types(a.dtype());
    check_scalar(lo, types.compute, "clip");
    check_scalar(hi, types.compute, "clip");
    const detail::CallContextScope call_scope;
    CallOptions call;
    call.stream = o.stream;
    const DType result = types.result;
    Array out = o.out ? *o.out : empty(a.shape(), result, o.stream);
    std::array<Arg, 4> args{Arg(a), lo, hi, Arg(out)};
    detail::ready_op_kernel(Op::clip, types.compute).call(args.data(), args.size(), call);
    return out;
}

Array astype(const Array& a, DType dtype, const OpOptions& o) {
    return run(detail::ready_op_kernel(Op::convert, dtype), {a}, dtype, o);
}

Array ascontiguousarray(const Array& a, const OpOptions& o) {
    return run(detail::ready_op_kernel(Op::convert, a.dtype()), {a}, a.dtype(), o);
}

void fill(const Array& a, const Scalar& value, StreamRef stream) {
    detail::check_fits(value, a.dtype(), "fill", "the array");
    OpOptions o;
    o.stream = stream;
    o.out = &a;
    run(detail::ready_op_kernel(Op::convert, a.dtype()), {Arg(value)}, a.dtype(), o);
}

} // namespace kiln
