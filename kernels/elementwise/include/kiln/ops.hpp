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
