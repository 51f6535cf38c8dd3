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
    exp,
    log,
    sqrt,
    sin,
    cos,
    tanh,
    abs,
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
bool is_binary(ElementwiseOp op);
bool is_unary(ElementwiseOp op);

/// add ... greater_equal on @p a and @p b. Two weak operands give a weak result of their
/// promoted type (the caller decides whether that is allowed).
/// @throws ArgumentError naming @p what for an order of complex numbers.
OpTypes binary_types(ElementwiseOp op, TypedOperand a, TypedOperand b, const char* what);
/// NumPy 2 answers a comparison of an integer array with a weak integer its type cannot hold
/// exactly (`uint8_array < -1` is all false) instead of raising: for such a @p scalar and a
/// comparison @p op, @p types with a compute type that holds both (int64, or float64 for a uint64
/// array and a negative value, below every uint64). Otherwise @p types unchanged.
OpTypes exact_comparison_types(ElementwiseOp op, OpTypes types, const Scalar& scalar);
/// exp ... abs on @p a: integers give floating results (float16 for 8-bit, float32 for 16-bit,
/// float64 otherwise); abs of complex gives the real type.
OpTypes unary_types(ElementwiseOp op, DType a);
/// where(condition, x, y): the result type of x and y.
OpTypes where_types(TypedOperand x, TypedOperand y);
/// clip(a, lo, hi): a's type. @throws ArgumentError for complex.
OpTypes clip_types(DType a);
/// astype / ascontiguousarray: @p target.
OpTypes convert_types(DType target);

/// What operand @p k of @p op is converted to before the expression: the compute type, or for
/// where bool (the condition) and the result type (the choices), for astype the result type.
enum class OperandRole : std::uint8_t { compute, result, condition };
OperandRole operand_role(ElementwiseOp op, int k);
/// operand_role() as a dtype.
DType operand_type(ElementwiseOp op, int k, const OpTypes& types);

/// The operation as a C++ expression of @p x, @p y, @p z (its operands, already of
/// operand_type()), e.g. "(x + y)", "kiln_maximum(x, y)", "exp(x)". The value has the compute
/// type (bool for comparisons); helpers come from ops_preamble().
std::string op_expression(ElementwiseOp op, const std::string& x, const std::string& y = {},
                          const std::string& z = {});

/// Device helpers the expressions use (file scope, no typedefs).
const char* ops_preamble();

} // namespace kiln::detail
