#pragma once
/// @file
/// Ready reductions, built on ReductionKernel (docs/reductions.md), with NumPy's result dtypes:
/// `sum` and `prod` (and `nansum`, `nanprod`) of bool and signed integers give int64 (unsigned:
/// uint64); `mean`, `var`, `std` and `norm` of integers give float64, of complex values `var`,
/// `std` and `norm` give the real type; `argmin` / `argmax` / `count_nonzero` give int64; `any` /
/// `all` give bool. 16-bit floats are accumulated in float32. Deterministic: the same input gives
/// bitwise the same result.
///
/// @code
/// kiln::Array total = kiln::sum(x);                               // every axis: a 0-d array
/// kiln::Array rows = kiln::max(x, 1);                             // over axis 1
/// kiln::Array m = kiln::mean(x, {0, 2}, {/*keepdims=*/true});
/// kiln::Array best = kiln::argmax(x, 0);
/// @endcode

#include "kiln/array.hpp"
#include "kiln/reduction_kernel.hpp"

#include <optional>

namespace kiln {

/// Per-call settings of the ready reductions.
struct ReduceOptions {
    /// Keep reduced axes as extent-1 dimensions (NumPy's `keepdims=`).
    bool keepdims = false;
    /// The result (and accumulation) dtype of sum, prod and mean; NumPy's `dtype=`.
    std::optional<DType> dtype;
    /// Write here instead of allocating (its shape must be the result's, its dtype the result's).
    const Array* out = nullptr;
    /// The stream the result's allocation and the kernels are ordered on.
    StreamRef stream;
    /// var and std: divide by N - ddof.
    int ddof = 0;
};

/// The sum of the elements; an empty reduction gives 0.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array sum(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The product of the elements; an empty reduction gives 1.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array prod(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The maximum; NaN propagates (NumPy's max / min). Complex values are ordered as NumPy orders
/// them: real parts first, then imaginary parts; the first element with a NaN in either part is
/// the result.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws ArgumentError for an empty reduction; AxisError; CudaError.
Array max(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The minimum; NaN propagates; complex values as max() orders them. An empty reduction is an
/// ArgumentError.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array min(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The index of the first maximum along one axis, or in the flattened array for Axes::all();
/// the first NaN wins (for complex values, a NaN in either part; otherwise NumPy's order, real
/// parts first).
/// @param a the array.
/// @param axis one axis, or every axis (the default).
/// @param options keepdims, output array and stream.
/// @return the indices, as int64: @p a's shape without the reduced axis.
/// @throws AxisError for several axes, ArgumentError for an empty reduction.
Array argmax(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The index of the first minimum, as argmax(); the first NaN wins.
/// @param a the array.
/// @param axis one axis, or every axis (the default).
/// @param options keepdims, output array and stream.
/// @return the indices, as int64: @p a's shape without the reduced axis.
/// @throws AxisError for several axes, ArgumentError for an empty reduction.
Array argmin(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The arithmetic mean. Empty reductions give NaN.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
Array mean(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The variance: two passes (the mean, then squared deviations) for accuracy. Divides by
/// N - ddof.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
Array var(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The standard deviation: the square root of var(), with the same ddof.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array std(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The 2-norm of the flattened axes: sqrt(sum(|x|^2)) (numpy.linalg.norm with ord=None).
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
Array norm(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// Whether any element is non-zero; an empty reduction gives false.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array any(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// Whether every element is non-zero; an empty reduction gives true.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array all(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The sum with NaN counted as zero (for complex values, a NaN in either part); dtypes as sum().
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array and stream.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array nansum(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The product with NaN counted as one; dtypes as prod().
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array and stream.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array nanprod(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The maximum ignoring NaN; a slice of NaN alone gives NaN (NumPy warns there).
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, output array and stream.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws ArgumentError for an empty reduction; DTypeError for complex values (Kiln does not
/// order them here); AxisError; CudaError.
Array nanmax(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The minimum ignoring NaN; a slice of NaN alone gives NaN.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, output array and stream.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws ArgumentError for an empty reduction; DTypeError for complex values; AxisError;
/// CudaError.
Array nanmin(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The mean of the elements that are not NaN; a slice without one gives NaN. Dtypes as mean().
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array and stream.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array nanmean(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// How many elements are non-zero, as int64.
/// @param a the array.
/// @param axis the axes to reduce; every axis by default.
/// @param options keepdims, dtype, output array, stream and ddof.
/// @return the result: @p a's shape without the reduced axes (with them as 1 for keepdims).
/// @throws AxisError for a bad or repeated axis; CudaError.
Array count_nonzero(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});

} // namespace kiln
