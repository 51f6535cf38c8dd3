#pragma once
/// @file
/// Ready elementwise operations, built on ElementwiseKernel. Result dtypes follow NumPy: arrays
/// promote (int32 with float32 gives float64), C++ scalars are weak (they take the array's type);
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
    StreamRef stream;
    const Array* out = nullptr;
};

// Arithmetic (arrays or scalars; at least one argument must be an array).
Array add(const Arg& a, const Arg& b, const OpOptions& options = {});
Array subtract(const Arg& a, const Arg& b, const OpOptions& options = {});
Array multiply(const Arg& a, const Arg& b, const OpOptions& options = {});
/// True division: integers give float64 (NumPy's `/`).
Array divide(const Arg& a, const Arg& b, const OpOptions& options = {});
Array power(const Arg& a, const Arg& b, const OpOptions& options = {});
/// Elementwise maximum / minimum; a NaN in either gives NaN (NumPy's maximum, minimum).
Array maximum(const Arg& a, const Arg& b, const OpOptions& options = {});
Array minimum(const Arg& a, const Arg& b, const OpOptions& options = {});

// Comparisons: bool results.
Array equal(const Arg& a, const Arg& b, const OpOptions& options = {});
Array not_equal(const Arg& a, const Arg& b, const OpOptions& options = {});
Array less(const Arg& a, const Arg& b, const OpOptions& options = {});
Array less_equal(const Arg& a, const Arg& b, const OpOptions& options = {});
Array greater(const Arg& a, const Arg& b, const OpOptions& options = {});
Array greater_equal(const Arg& a, const Arg& b, const OpOptions& options = {});

// Math functions.
Array exp(const Array& a, const OpOptions& options = {});
Array log(const Array& a, const OpOptions& options = {});
Array sqrt(const Array& a, const OpOptions& options = {});
Array sin(const Array& a, const OpOptions& options = {});
Array cos(const Array& a, const OpOptions& options = {});
Array tanh(const Array& a, const OpOptions& options = {});
/// |a|; complex gives its real-typed magnitude.
Array abs(const Array& a, const OpOptions& options = {});

/// `condition ? x : y` elementwise (condition is truthy when non-zero).
Array where(const Array& condition, const Arg& x, const Arg& y, const OpOptions& options = {});
/// a limited to [lo, hi].
Array clip(const Array& a, const Arg& lo, const Arg& hi, const OpOptions& options = {});
/// A copy converted to @p dtype (complex to real keeps the real part, as NumPy does).
Array astype(const Array& a, DType dtype, const OpOptions& options = {});
/// A C-contiguous copy (of any strided view).
Array ascontiguousarray(const Array& a, const OpOptions& options = {});
/// Set every element of @p a (any view) to @p value, converted to its dtype.
void fill(const Array& a, const Scalar& value, StreamRef stream = {});

} // namespace kiln
