#include "op_rules.hpp"

#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

// Device helpers of the expressions; each takes operands already of the compute type.
constexpr const char* kPreamble = R"(
template <class T> __device__ T kiln_ipow(T a, T b) {
    if (b < T(0)) return a == T(1) ? T(1) : T(0);
    T r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
__device__ inline float kiln_pow(float a, float b) { return powf(a, b); }
__device__ inline double kiln_pow(double a, double b) { return ::pow(a, b); }
template <class T> __device__ kiln::complex<T> kiln_pow(kiln::complex<T> a, kiln::complex<T> b) { return kiln::pow(a, b); }
template <class T> __device__ T kiln_pow(T a, T b) { return kiln_ipow(a, b); }
template <class T> __device__ T kiln_abs(T a) { return a < T(0) ? T(-a) : a; }
__device__ inline float kiln_abs(float a) { return fabsf(a); }
__device__ inline double kiln_abs(double a) { return fabs(a); }
template <class T> __device__ T kiln_abs(kiln::complex<T> a) { return kiln::abs(a); }
template <class T> __device__ T kiln_maximum(T a, T b) { return (a != a || a > b) ? a : b; }
template <class T> __device__ T kiln_minimum(T a, T b) { return (a != a || a < b) ? a : b; }
template <class T> __device__ T kiln_clip(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }
)";

int kind(DType d) { // NumPy's kinds, ordered: bool < integer < floating < complex
    if (is_bool(d)) return 0;
    if (is_integer(d)) return 1;
    if (is_floating(d)) return 2;
    return 3;
}

// A weak scalar takes the array's type unless its kind is higher (NumPy 2).
DType with_weak_scalar(DType array, DType scalar) {
    if (kind(scalar) <= kind(array)) return array;
    switch (kind(scalar)) {
    case 1:
        return DType::int64;
    case 2:
        return DType::float64;
    default:
        return array == DType::float64 ? DType::complex128
               : kind(array) == 2      ? DType::complex64
                                       : DType::complex128;
    }
}

DType result_type(TypedOperand a, TypedOperand b) {
    if (a.weak == b.weak) return promote_types(a.dtype, b.dtype);
    return a.weak ? with_weak_scalar(b.dtype, a.dtype) : with_weak_scalar(a.dtype, b.dtype);
}

// NumPy's floating result for math functions of integers.
DType floating_result(DType d) {
    if (kind(d) >= 2) return d;
    const std::size_t size = itemsize(d);
    return size == 1 ? DType::float16 : size == 2 ? DType::float32 : DType::float64;
}

// 16-bit floats compute in float: CUDA's math functions have no __half overloads.
DType compute_type(DType d) {
    return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d;
}

[[noreturn]] void unordered(const char* what) {
    throw ArgumentError(std::string(what) + ": complex numbers have no order");
}

} // namespace

const char* op_name(ElementwiseOp op) {
    static const char* const names[] = {
        "add",           "subtract", "multiply",  "divide", "power",      "maximum",
        "minimum",       "equal",    "not_equal", "less",   "less_equal", "greater",
        "greater_equal", "exp",      "log",       "sqrt",   "sin",        "cos",
        "tanh",          "abs",      "where",     "clip",   "astype"};
    return names[static_cast<int>(op)];
}

bool is_binary(ElementwiseOp op) {
    return op <= ElementwiseOp::greater_equal;
}

bool is_unary(ElementwiseOp op) {
    return op >= ElementwiseOp::exp && op <= ElementwiseOp::abs;
}

OpTypes binary_types(ElementwiseOp op, TypedOperand a, TypedOperand b, const char* what) {
    DType result = result_type(a, b);
    DType compute = result;
    const bool comparison = op >= ElementwiseOp::equal && op <= ElementwiseOp::greater_equal;
    if (op == ElementwiseOp::divide && kind(result) < 2)
        compute = result = DType::float64; // NumPy's `/`
    if (comparison) {
        if (is_complex(compute) && op != ElementwiseOp::equal && op != ElementwiseOp::not_equal)
            unordered(what);
        result = DType::bool_;
    }
    if ((op == ElementwiseOp::maximum || op == ElementwiseOp::minimum) && is_complex(compute))
        unordered(what);
    return {result, compute_type(compute)};
}

OpTypes exact_comparison_types(ElementwiseOp op, OpTypes types, const Scalar& scalar) {
    const bool comparison = op >= ElementwiseOp::equal && op <= ElementwiseOp::greater_equal;
    if (!comparison || !scalar.is_weak() || !is_integer(scalar.dtype()) ||
        !is_integer(types.compute) || scalar.fits(types.compute))
        return types;
    // A weak integer is an int64 at most; an unsigned one past int64's range would be strong.
    return {types.result, types.compute == DType::uint64 ? DType::float64 : DType::int64};
}

OpTypes unary_types(ElementwiseOp op, DType a) {
    if (op == ElementwiseOp::abs) {
        const DType result = a == DType::complex64    ? DType::float32
                             : a == DType::complex128 ? DType::float64
                                                      : a;
        const DType compute = compute_type(a);
        return {result, is_bool(compute) ? DType::uint8 : compute};
    }
    const DType result = floating_result(a);
    return {result, compute_type(result)};
}

OpTypes where_types(TypedOperand x, TypedOperand y) {
    const DType result = result_type(x, y);
    return {result, compute_type(result)};
}

OpTypes clip_types(DType a) {
    if (is_complex(a)) unordered("clip");
    return {a, compute_type(a)};
}

OpTypes convert_types(DType target) {
    return {target, target};
}

OperandRole operand_role(ElementwiseOp op, int k) {
    if (op == ElementwiseOp::where) return k == 0 ? OperandRole::condition : OperandRole::result;
    if (op == ElementwiseOp::convert) return OperandRole::result;
    return OperandRole::compute;
}

DType operand_type(ElementwiseOp op, int k, const OpTypes& types) {
    switch (operand_role(op, k)) {
    case OperandRole::condition:
        return DType::bool_;
    case OperandRole::result:
        return types.result;
    default:
        return types.compute;
    }
}

std::string op_expression(ElementwiseOp op, const std::string& x, const std::string& y,
                          const std::string& z) {
    auto infix = [&](const char* sign) { return '(' + x + ' ' + sign + ' ' + y + ')'; };
    auto call = [&](const char* function) { return std::string(function) + '(' + x + ')'; };
    switch (op) {
    case ElementwiseOp::add:
        return infix("+");
    case ElementwiseOp::subtract:
        return infix("-");
    case ElementwiseOp::multiply:
        return infix("*");
    case ElementwiseOp::divide:
        return infix("/");
    case ElementwiseOp::power:
        return "kiln_pow(" + x + ", " + y + ')';
    case ElementwiseOp::maximum:
        return "kiln_maximum(" + x + ", " + y + ')';
    case ElementwiseOp::minimum:
        return "kiln_minimum(" + x + ", " + y + ')';
    case ElementwiseOp::equal:
        return infix("==");
    case ElementwiseOp::not_equal:
        return infix("!=");
    case ElementwiseOp::less:
        return infix("<");
    case ElementwiseOp::less_equal:
        return infix("<=");
    case ElementwiseOp::greater:
        return infix(">");
    case ElementwiseOp::greater_equal:
        return infix(">=");
    case ElementwiseOp::exp:
        return call("exp");
    case ElementwiseOp::log:
        return call("log");
    case ElementwiseOp::sqrt:
        return call("sqrt");
    case ElementwiseOp::sin:
        return call("sin");
    case ElementwiseOp::cos:
        return call("cos");
    case ElementwiseOp::tanh:
        return call("tanh");
    case ElementwiseOp::abs:
        return call("kiln_abs");
    case ElementwiseOp::where:
        return '(' + x + " ? " + y + " : " + z + ')';
    case ElementwiseOp::clip:
        return "kiln_clip(" + x + ", " + y + ", " + z + ')';
    case ElementwiseOp::convert:
        return x;
    }
    return x;
}

const char* ops_preamble() {
    return kPreamble;
}

} // namespace kiln::detail
