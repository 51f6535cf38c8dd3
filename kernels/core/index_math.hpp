#pragma once
// Index and grid arithmetic the generated-kernel front ends share (ElementwiseKernel,
// ReductionKernel).

#include "kiln/array.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace kiln::detail {

/// Below this many elements or element offsets, generated kernels index in 32 bits: it keeps
/// i + grid stride < 2^31.
inline constexpr std::int64_t kIndex32Limit = std::int64_t{1} << 30;

/// The largest element offset a view of @p shape with element @p strides reaches from its first
/// element. An empty array reaches no element, whatever its strides (Array::wrap bounds them only
/// where there are elements); neither does an axis of extent 1.
inline std::int64_t max_offset(const Dims& shape, const Dims& strides) {
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
    std::int64_t extent = 0;
    for (int d = 0; d < shape.size(); ++d)
        if (shape[d] > 1) extent += (shape[d] - 1) * std::llabs(strides[d]);
    return extent;
}

/// ceil(n / d) for n >= 0, d > 0, without the overflow of (n + d - 1) / d near INT64_MAX.
inline std::int64_t ceil_div(std::int64_t n, std::int64_t d) {
    return n / d + (n % d != 0);
}

} // namespace kiln::detail
