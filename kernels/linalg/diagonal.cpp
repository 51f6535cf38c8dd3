#include "kiln/linalg.hpp"
#include "kiln/reductions.hpp"

#include <algorithm>
#include <string>

namespace kiln {

namespace {

int normalize_axis(int axis, int ndim, const char* which) {
    if (axis < -ndim || axis >= ndim)
        throw AxisError(std::string("diagonal: ") + which + " " + std::to_string(axis) +
                        " is out of range for an array of " + std::to_string(ndim) + " dimensions");
    return axis < 0 ? axis + ndim : axis;
}

} // namespace

Array diagonal(const Array& a, std::int64_t offset, int axis1, int axis2) {
    const int nd = a.ndim();
    if (nd < 2)
        throw ShapeError("diagonal: the array has shape " + a.shape().to_string() +
                         "; a diagonal needs at least 2 dimensions");
    const int first = normalize_axis(axis1, nd, "axis1");
    const int second = normalize_axis(axis2, nd, "axis2");
    if (first == second)
        throw AxisError("diagonal: axis1 and axis2 are both axis " + std::to_string(first) +
                        "; they must differ");
    // The diagonal starts at (0, offset) above the main one and at (-offset, 0) below it.
    const std::int64_t rows = a.shape()[first], cols = a.shape()[second];
    std::int64_t start_row = 0, start_col = 0, length = 0;
    if (offset >= 0) {
        start_col = offset;
        length = std::max<std::int64_t>(0, std::min(rows, cols - offset));
    } else {
        start_row = -offset;
        length = std::max<std::int64_t>(0, std::min(rows + offset, cols));
    }
    Dims shape, strides;
    for (int i = 0; i < nd; ++i) {
        if (i == first || i == second) continue;
        shape.push_back(a.shape()[i]);
        strides.push_back(a.strides()[i]);
    }
    shape.push_back(length);
    strides.push_back(a.strides()[first] + a.strides()[second]);
    CUdeviceptr data = a.data();
    if (length > 0 && a.size() > 0)
        data += static_cast<CUdeviceptr>(start_row * a.strides()[first] +
                                         start_col * a.strides()[second]);
    return Array::wrap(data, shape, a.dtype(), strides, a.owner(), a.recorded_device());
}

Array trace(const Array& a, std::int64_t offset, int axis1, int axis2,
            const TraceOptions& options) {
    const Array diag = diagonal(a, offset, axis1, axis2);
    ReduceOptions reduce;
    reduce.dtype = options.dtype;
    reduce.out = options.out;
    reduce.stream = options.stream;
    return sum(diag, diag.ndim() - 1, reduce);
}

} // namespace kiln
