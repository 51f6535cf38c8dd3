#pragma once
/// @file
/// Ready reductions, built on ReductionKernel, with NumPy's result dtypes: `sum` and `prod` of
/// bool and signed integers give int64 (unsigned: uint64); `mean`, `var`, `std` and `norm` of
/// integers give float64, of complex values `var`, `std` and `norm` give the real type;
/// `argmin` / `argmax` / `count_nonzero` give int64; `any` / `all` give bool. 16-bit floats are
/// accumulated in float32. Deterministic: the same input gives bitwise the same result.
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

struct ReduceOptions {
    bool keepdims = false;
    /// The result (and accumulation) dtype of sum, prod and mean; NumPy's `dtype=`.
    std::optional<DType> dtype;
    /// Write here instead of allocating (its shape must be the result's, its dtype the result's).
    const Array* out = nullptr;
    StreamRef stream;
    /// var and std: divide by N - ddof.
    int ddof = 0;
};

Array sum(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array prod(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// NaN propagates (NumPy's max / min). @throws ArgumentError for an empty reduction, or complex.
Array max(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array min(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The index of the first maximum (minimum) along one axis, or in the flattened array for
/// Axes::all(); the first NaN wins. @throws AxisError for several axes, ArgumentError for an
/// empty reduction or complex input.
Array argmax(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array argmin(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// Empty reductions give NaN.
Array mean(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// Two passes (the mean, then squared deviations) for accuracy. Divides by N - ddof.
Array var(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array std(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
/// The 2-norm of the flattened axes: sqrt(sum(|x|^2)) (numpy.linalg.norm with ord=None).
Array norm(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array any(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array all(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});
Array count_nonzero(const Array& a, const Axes& axis = {}, const ReduceOptions& options = {});

} // namespace kiln
