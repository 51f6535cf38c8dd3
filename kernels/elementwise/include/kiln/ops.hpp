#pragma once
/// @file
/// Ready elementwise operations, built on ElementwiseKernel. Each compiles once per dtype and
/// layout, like any generated kernel. Result dtypes follow NumPy: arrays
/// promote (int32 with float32 gives float64); a weak C++ scalar (`int`, `long`, `long long`,
/// `double`, `bool`, `std::complex<double>`: kiln::is_weak_scalar_v) takes the array's type unless
/// its kind is higher, as a Python scalar does in NumPy 2, and a strong one (`std::int8_t`,
/// `float`, a Scalar made with a dtype, ...) promotes as a NumPy scalar does. A scalar converted to
/// an integer type it does not fit (`kiln::add(int8_array, 300)`) is an OverflowError;
/// math functions of integers give floating results (float16 for 8-bit, float32 for 16-bit,
/// float64 otherwise).
///
/// @code
/// kiln::Array z = kiln::add(kiln::multiply(x, y), b);   // z = x * y + b
/// kiln::Array c = kiln::clip(kiln::sqrt(x), 0.0, 1.0);
/// @endcode

#include "kiln/array.hpp"
#include "kiln/elementwise_kernel.hpp"

#include <type_traits>
#include <utility>

namespace kiln {

/// Where results go: a stream, and optionally an output array to write (its shape must be the
/// broadcast shape; its dtype is converted to).
struct OpOptions {
    /// The stream the result's allocation and the kernel are ordered on.
    StreamRef stream;
    /// An array to write the result to instead of allocating one; it must outlive the call.
    const Array* out = nullptr;
};

// Arithmetic (arrays or scalars; at least one argument must be an array).
/// a + b elementwise.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array add(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a - b elementwise.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array subtract(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a * b elementwise.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array multiply(const Arg& a, const Arg& b, const OpOptions& options = {});
/// True division: integers give float64 (NumPy's `/`).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array divide(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a to the power b elementwise (integers stay integers, as in NumPy's `**`).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array power(const Arg& a, const Arg& b, const OpOptions& options = {});
/// Elementwise maximum; a NaN in either gives NaN (NumPy's maximum, minimum).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array or for complex operands; ShapeError.
Array maximum(const Arg& a, const Arg& b, const OpOptions& options = {});
/// Elementwise minimum; a NaN in either gives NaN.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array or for complex operands; ShapeError.
Array minimum(const Arg& a, const Arg& b, const OpOptions& options = {});

// Comparisons: bool results.
/// a == b elementwise, as bool.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array equal(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a != b elementwise, as bool.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array not_equal(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a < b elementwise, as bool; complex operands are an ArgumentError.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array less(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a <= b elementwise, as bool; complex operands are an ArgumentError.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array less_equal(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a > b elementwise, as bool; complex operands are an ArgumentError.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array greater(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a >= b elementwise, as bool; complex operands are an ArgumentError.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; OverflowError; ShapeError; CudaError.
Array greater_equal(const Arg& a, const Arg& b, const OpOptions& options = {});

// Math functions.
/// e to the power of each element.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError; ShapeError for a mismatched output.
Array exp(const Array& a, const OpOptions& options = {});
/// The natural logarithm of each element.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError; ShapeError for a mismatched output.
Array log(const Array& a, const OpOptions& options = {});
/// The square root of each element.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError; ShapeError for a mismatched output.
Array sqrt(const Array& a, const OpOptions& options = {});
/// The sine of each element (radians).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError; ShapeError for a mismatched output.
Array sin(const Array& a, const OpOptions& options = {});
/// The cosine of each element (radians).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError; ShapeError for a mismatched output.
Array cos(const Array& a, const OpOptions& options = {});
/// The hyperbolic tangent of each element.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError; ShapeError for a mismatched output.
Array tanh(const Array& a, const OpOptions& options = {});
/// |a|; complex gives its real-typed magnitude.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
Array abs(const Array& a, const OpOptions& options = {});

// NumPy's other operations, by NumPy's names (the same table kiln::fuse reads).
/// Floor division with Python's signs (NumPy's floor_divide, `//`): integers give the floor of the
/// quotient, and 0 for a zero divisor (no trap); floats follow NumPy's divmod. bool gives int8.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array floor_divide(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The remainder with the divisor's sign (NumPy's remainder and Python's `%`): 0 for an integer
/// zero divisor; NaN for a floating one. bool gives int8.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array remainder(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The C remainder, with the dividend's sign (NumPy's fmod): 0 for an integer zero divisor. bool
/// gives int8.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array fmod(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a & b elementwise, of bool or integer operands (logical for bool).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for floating or complex
/// operands; OverflowError for a scalar the operation's integer type cannot hold.
Array bitwise_and(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a | b elementwise, of bool or integer operands (logical for bool).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for floating or complex
/// operands; OverflowError for a scalar the operation's integer type cannot hold.
Array bitwise_or(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a ^ b elementwise, of bool or integer operands (logical for bool).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for floating or complex
/// operands; OverflowError for a scalar the operation's integer type cannot hold.
Array bitwise_xor(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a << b elementwise, of integers (bool gives int8); a shift by the width or more, or by a
/// negative count, gives 0 (NumPy's left_shift).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for floating or complex
/// operands; OverflowError for a scalar the operation's integer type cannot hold.
Array left_shift(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a >> b elementwise, of integers (bool gives int8), arithmetic for signed types; a shift by the
/// width or more gives 0, or -1 for a negative signed value.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for floating or complex
/// operands; OverflowError for a scalar the operation's integer type cannot hold.
Array right_shift(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The truth of a and b, elementwise, as bool (any dtype: non-zero is true).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; ShapeError; CudaError; OverflowError for
/// a scalar the operation's integer type cannot hold.
Array logical_and(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The truth of a or b, elementwise, as bool.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; ShapeError; CudaError; OverflowError for
/// a scalar the operation's integer type cannot hold.
Array logical_or(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The truth of exactly one of a and b, elementwise, as bool.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; ShapeError; CudaError; OverflowError for
/// a scalar the operation's integer type cannot hold.
Array logical_xor(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The elementwise maximum ignoring NaN: a NaN loses to a number (NumPy's fmax).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array fmax(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The elementwise minimum ignoring NaN: a NaN loses to a number (NumPy's fmin).
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array fmin(const Arg& a, const Arg& b, const OpOptions& options = {});
/// The angle of the point (b, a), elementwise, in radians in [-pi, pi]: arctan(a / b) in the right
/// quadrant. Integers give a floating dtype.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array arctan2(const Arg& a, const Arg& b, const OpOptions& options = {});
/// sqrt(a^2 + b^2) elementwise, without overflow in between. Integers give a floating dtype.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array hypot(const Arg& a, const Arg& b, const OpOptions& options = {});
/// a's magnitude with b's sign, elementwise. Integers give a floating dtype.
/// @param a the first operand, an array or a scalar.
/// @param b the second operand, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape (@p options.out when given).
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError for a scalar the operation's integer type cannot hold.
Array copysign(const Arg& a, const Arg& b, const OpOptions& options = {});
/// Floor division and remainder together, from one kernel (NumPy's divmod): the values of
/// floor_divide() and remainder().
/// @param a the dividend, an array or a scalar.
/// @param b the divisor, an array or a scalar.
/// @param stream the stream the results' allocations and the kernel are ordered on.
/// @return the quotients and the remainders, with the broadcast shape.
/// @throws ArgumentError when neither operand is an array; DTypeError for complex operands;
/// OverflowError; ShapeError; CudaError.
std::pair<Array, Array> divmod(const Arg& a, const Arg& b, StreamRef stream = {});
/// -a elementwise; unsigned integers wrap (uint8 200 gives 56), as NumPy's negative.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for bool (NumPy's boolean negative is an error: use logical_not).
Array negative(const Array& a, const OpOptions& options = {});
/// ~a elementwise: the bits inverted for integers, logical not for bool (NumPy's invert, alias
/// bitwise_not).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for floating or complex values.
Array invert(const Array& a, const OpOptions& options = {});
/// NumPy's other name for invert().
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for floating or complex values.
Array bitwise_not(const Array& a, const OpOptions& options = {});
/// Not a, elementwise, as bool (any dtype: zero is false).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array logical_not(const Array& a, const OpOptions& options = {});
/// -1, 0 or 1 by the sign of each element (NaN stays NaN; complex values give z / |z|, NumPy 2's
/// sign); bool gives int8.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array sign(const Array& a, const OpOptions& options = {});
/// a * a elementwise, in a's dtype (bool gives int8).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array square(const Array& a, const OpOptions& options = {});
/// 1 / a elementwise, in a's dtype: integers give the truncated quotient (0 for a zero element;
/// NumPy's value there is undefined), bool gives int8.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array reciprocal(const Array& a, const OpOptions& options = {});
/// The real cube root of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for complex values.
Array cbrt(const Array& a, const OpOptions& options = {});
/// 2 to the power of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array exp2(const Array& a, const OpOptions& options = {});
/// exp(a) - 1 elementwise, exact for small a. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array expm1(const Array& a, const OpOptions& options = {});
/// The base-2 logarithm of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array log2(const Array& a, const OpOptions& options = {});
/// The base-10 logarithm of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array log10(const Array& a, const OpOptions& options = {});
/// log(1 + a) elementwise, exact for small a. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array log1p(const Array& a, const OpOptions& options = {});
/// The tangent of each element (radians). Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array tan(const Array& a, const OpOptions& options = {});
/// The inverse sine of each element, in radians. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array arcsin(const Array& a, const OpOptions& options = {});
/// The inverse cosine of each element, in radians. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array arccos(const Array& a, const OpOptions& options = {});
/// The inverse tangent of each element, in radians. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array arctan(const Array& a, const OpOptions& options = {});
/// The hyperbolic sine of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array sinh(const Array& a, const OpOptions& options = {});
/// The hyperbolic cosine of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array cosh(const Array& a, const OpOptions& options = {});
/// The inverse hyperbolic sine of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array arcsinh(const Array& a, const OpOptions& options = {});
/// The inverse hyperbolic cosine of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array arccosh(const Array& a, const OpOptions& options = {});
/// The inverse hyperbolic tangent of each element. Integers give a floating dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array arctanh(const Array& a, const OpOptions& options = {});
/// The largest integer not above each element; integer and bool dtypes are kept (NumPy 2.1's
/// floor).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for complex values.
Array floor(const Array& a, const OpOptions& options = {});
/// The smallest integer not below each element; integer and bool dtypes are kept.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for complex values.
Array ceil(const Array& a, const OpOptions& options = {});
/// Each element rounded toward zero; integer and bool dtypes are kept.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for complex values.
Array trunc(const Array& a, const OpOptions& options = {});
/// Each element rounded to the nearest integer, ties to even; integers give a floating dtype
/// (NumPy's rint).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array rint(const Array& a, const OpOptions& options = {});
/// Whether each element is NaN (for complex values, either part), as bool.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array isnan(const Array& a, const OpOptions& options = {});
/// Whether each element is infinite (for complex values, either part), as bool.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array isinf(const Array& a, const OpOptions& options = {});
/// Whether each element is finite (for complex values, both parts), as bool.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array isfinite(const Array& a, const OpOptions& options = {});
/// Whether each element's sign bit is set (-0.0 included), as bool.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws DTypeError for complex values.
Array signbit(const Array& a, const OpOptions& options = {});
/// The real part of each element: complex gives its real dtype, other dtypes a copy.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array real(const Array& a, const OpOptions& options = {});
/// The imaginary part of each element: complex gives its real dtype, other dtypes zeros of their
/// own dtype.
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array imag(const Array& a, const OpOptions& options = {});
/// The complex conjugate of each element (other dtypes: a copy).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the result, with @p a's shape (@p options.out when given).
/// @throws CudaError.
Array conj(const Array& a, const OpOptions& options = {});

/// Whether @p T may be an operand of an operator on arrays: an Array, a Scalar or a C++ number
/// (`char` excluded: it is text).
/// @tparam T the type to test.
template <class T>
inline constexpr bool is_array_operand_v = std::is_same_v<std::decay_t<T>, Array> ||
                                           std::is_same_v<std::decay_t<T>, Scalar> ||
                                           (std::is_arithmetic_v<std::decay_t<T>> &&
                                            !std::is_same_v<std::decay_t<T>, char>);
/// Enables an operator on array operands, at least one an Array.
template <class A, class B>
using IfArrayOperands = std::enable_if_t<is_array_operand_v<A> && is_array_operand_v<B> &&
                                             (std::is_same_v<std::decay_t<A>, Array> ||
                                              std::is_same_v<std::decay_t<B>, Array>),
                                         Array>;
/// a + b elementwise: kiln::add(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::add.
template <class A, class B> IfArrayOperands<A, B> operator+(const A& a, const B& b) {
    return add(a, b);
}
/// a - b elementwise: kiln::subtract(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::subtract.
template <class A, class B> IfArrayOperands<A, B> operator-(const A& a, const B& b) {
    return subtract(a, b);
}
/// a * b elementwise: kiln::multiply(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::multiply.
template <class A, class B> IfArrayOperands<A, B> operator*(const A& a, const B& b) {
    return multiply(a, b);
}
/// a / b (true division) elementwise: kiln::divide(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::divide.
template <class A, class B> IfArrayOperands<A, B> operator/(const A& a, const B& b) {
    return divide(a, b);
}
/// a % b, with Python's signs (remainder()) elementwise: kiln::remainder(), as an operator on
/// arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::remainder.
template <class A, class B> IfArrayOperands<A, B> operator%(const A& a, const B& b) {
    return remainder(a, b);
}
/// a & b elementwise: kiln::bitwise_and(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::bitwise_and.
template <class A, class B> IfArrayOperands<A, B> operator&(const A& a, const B& b) {
    return bitwise_and(a, b);
}
/// a | b elementwise: kiln::bitwise_or(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::bitwise_or.
template <class A, class B> IfArrayOperands<A, B> operator|(const A& a, const B& b) {
    return bitwise_or(a, b);
}
/// a ^ b elementwise: kiln::bitwise_xor(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::bitwise_xor.
template <class A, class B> IfArrayOperands<A, B> operator^(const A& a, const B& b) {
    return bitwise_xor(a, b);
}
/// a << b elementwise: kiln::left_shift(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::left_shift.
template <class A, class B> IfArrayOperands<A, B> operator<<(const A& a, const B& b) {
    return left_shift(a, b);
}
/// a >> b elementwise: kiln::right_shift(), as an operator on arrays.
/// @param a, b Arrays or scalars, at least one an Array.
/// @return the result, a new array with NumPy's dtype.
/// @throws as kiln::right_shift.
template <class A, class B> IfArrayOperands<A, B> operator>>(const A& a, const B& b) {
    return right_shift(a, b);
}
/// -a elementwise: kiln::negative(), as an operator.
/// @param a the array.
/// @return the result.
/// @throws as kiln::negative.
inline Array operator-(const Array& a) {
    return negative(a);
}
/// ~a elementwise: kiln::invert(), as an operator.
/// @param a the array.
/// @return the result.
/// @throws as kiln::invert.
inline Array operator~(const Array& a) {
    return invert(a);
}

/// `condition ? x : y` elementwise (condition is truthy when non-zero).
/// @param condition the array choosing between @p x and @p y.
/// @param x the values where @p condition holds, an array or a scalar.
/// @param y the values elsewhere, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape of all three and the promoted type of @p x and
/// @p y.
/// @throws ShapeError; CudaError.
Array where(const Array& condition, const Arg& x, const Arg& y, const OpOptions& options = {});
/// a limited to [lo, hi].
/// @param a the array.
/// @param lo the lower bound, an array or a scalar.
/// @param hi the upper bound, an array or a scalar.
/// @param options the stream, and optionally an output array.
/// @return the result, with the broadcast shape.
/// @throws ArgumentError for complex input; ShapeError; CudaError.
Array clip(const Array& a, const Arg& lo, const Arg& hi, const OpOptions& options = {});
/// A copy converted to @p dtype (complex to real keeps the real part, as NumPy does).
/// @param a the array, of any layout.
/// @param dtype the result's dtype.
/// @param options the stream, and optionally an output array.
/// @return a C-contiguous array (@p options.out when given).
Array astype(const Array& a, DType dtype, const OpOptions& options = {});
/// A C-contiguous copy (of any strided view).
/// @param a the array.
/// @param options the stream, and optionally an output array.
/// @return the copy, with @p a's dtype (@p options.out when given).
Array ascontiguousarray(const Array& a, const OpOptions& options = {});
/// Set every element of @p a (any view) to @p value, converted to its dtype.
/// @param a the array to fill.
/// @param value the value, converted as cast_scalar() does.
/// @param stream the stream the fill is queued on.
/// @throws OverflowError when @p a has an integer dtype that cannot hold @p value.
void fill(const Array& a, const Scalar& value, StreamRef stream = {});

} // namespace kiln
