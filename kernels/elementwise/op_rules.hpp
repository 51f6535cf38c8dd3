#pragma once
// The ready elementwise operations' rules, shared by kiln/ops.hpp (one kernel per operation) and
// fusion (kiln/fuse.hpp, one kernel per traced function): NumPy's result dtypes, the type each
// operation computes in, and the C++ expression of each operation over operands already
// converted to that type. One table, so an operation means the same fused and unfused.

#include "kiln/dtype.hpp"
#include "kiln/scalar.hpp"

#include <cstdint>
#include <string>

namespace kiln::detail {

// Every operation of the table (op_rules.cpp), in its order; `convert` stays last.
enum class ElementwiseOp : std::uint8_t {
    add,
    subtract,
    multiply,
    divide,
    power,
    maximum,
    minimum,
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
    floor_divide,
    remainder,
    fmod,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    left_shift,
    right_shift,
    logical_and,
    logical_or,
    logical_xor,
    fmax,
    fmin,
    arctan2,
    hypot,
    copysign,
    exp,
    log,
    sqrt,
    sin,
    cos,
    tanh,
    abs,
    negative,
    invert,
    logical_not,
    sign,
    square,
    reciprocal,
    cbrt,
    exp2,
    expm1,
    log2,
    log10,
    log1p,
    tan,
    arcsin,
    arccos,
    arctan,
    sinh,
    cosh,
    arcsinh,
    arccosh,
    arctanh,
    floor,
    ceil,
    trunc,
    rint,
    isnan,
    isinf,
    isfinite,
    signbit,
    real,
    imag,
    conj,
    where,
    clip,
    convert,
};

/// An operand as the dtype rules see it: a C++ scalar is weak (NumPy 2): it takes the other
/// operand's type unless its kind is higher.
struct TypedOperand {
    DType dtype;
    bool weak = false;
};

/// What an operation gives (`result`) and the type it computes in (`compute`): operands are
/// converted to the compute type (where's choices and astype's operand to the result type), the
/// value is converted to the result type.
struct OpTypes {
    DType result;
    DType compute;
};

/// The operation's name as NumPy spells it ("add", "maximum", "astype").
const char* op_name(ElementwiseOp op);
/// The operation NumPy names @p name (the table's names; "bitwise_not" is invert's alias).
/// @return false when there is none.
bool op_named(const char* name, ElementwiseOp* op);
/// Its C++ operator ("+", "&", "%", "<<"), for messages and traced text; nullptr for none.
const char* op_sign(ElementwiseOp op);
/// Operations of two operands (where and clip excluded), of one (astype excluded).
bool is_binary(ElementwiseOp op);
bool is_unary(ElementwiseOp op);

/// A binary operation on @p a and @p b, by NumPy 2's rules. Two weak operands give a weak result
/// of their promoted type (the caller decides whether that is allowed).
/// @throws DTypeError naming @p what where NumPy raises its TypeError: an order of complex
/// numbers, bitwise operations and shifts of floating values, floor division, remainder, fmod,
/// arctan2, hypot and copysign of complex values, a boolean subtract.
OpTypes binary_types(ElementwiseOp op, TypedOperand a, TypedOperand b, const char* what);
/// NumPy 2 answers a comparison of an integer array with a weak integer its type cannot hold
/// exactly (`uint8_array < -1` is all false) instead of raising: for such a @p scalar and a
/// comparison @p op, @p types with a compute type that holds both (int64, or float64 for a uint64
/// array and a negative value, below every uint64). Otherwise @p types unchanged.
OpTypes exact_comparison_types(ElementwiseOp op, OpTypes types, const Scalar& scalar);
/// A unary operation on @p a, by NumPy 2's rules: math functions of integers give floating
/// results (float16 for 8-bit, float32 for 16-bit, float64 otherwise); abs, real and imag of
/// complex give the real type; floor, ceil and trunc keep integer dtypes (NumPy 2.1); isnan,
/// isinf, isfinite, signbit and logical_not give bool; sign, square and reciprocal of bool give
/// int8.
/// @throws DTypeError naming @p what (or the operation) where NumPy raises its TypeError: invert
/// of floating values, negative of bool, cbrt, floor, ceil, trunc and signbit of complex values.
OpTypes unary_types(ElementwiseOp op, DType a, const char* what = nullptr);
/// where(condition, x, y): the result type of x and y.
OpTypes where_types(TypedOperand x, TypedOperand y);
/// clip(a, lo, hi): a's type. @throws ArgumentError for complex.
OpTypes clip_types(DType a);
/// astype / ascontiguousarray: @p target.
OpTypes convert_types(DType target);

/// What operand @p k of @p op is converted to before the expression: the compute type, or for
/// where bool (the condition) and the result type (the choices), for astype the result type, for
/// the logical operations bool.
enum class OperandRole : std::uint8_t { compute, result, condition };
OperandRole operand_role(ElementwiseOp op, int k);
/// operand_role() as a dtype.
DType operand_type(ElementwiseOp op, int k, const OpTypes& types);

/// The operation as a C++ expression of @p x, @p y, @p z (its operands, already of
/// operand_type()), e.g. "(x + y)", "kiln_maximum(x, y)", "exp(x)". The value has the compute
/// type (bool for comparisons, isnan...); helpers come from ops_preamble(). An expression that
/// calls a helper starts with "kiln_".
std::string op_expression(ElementwiseOp op, const std::string& x, const std::string& y = {},
                          const std::string& z = {});

/// Device helpers the expressions use (file scope; names start with kiln_): NumPy's integer and
/// floating floor division and remainder, shifts, and the math functions over real and complex
/// types.
const char* ops_preamble();

/// Whether op_expression() of @p op calls a helper of ops_preamble(): a kernel includes the
/// preamble only then, since NVRTC parses all of it (10-20 ms of every compile).
bool op_uses_helpers(ElementwiseOp op);

/// NumPy's real dtype of @p d: float32 for complex64, float64 for complex128, else @p d.
DType real_dtype(DType d);

} // namespace kiln::detail
