#include "kiln/array.hpp"

#include "driver/driver.hpp"
#include "driver/stream_capture.hpp"
#include "internal_kernels.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace kiln {

namespace {

[[noreturn]] void too_many_dimensions(long long n) {
    throw ArgumentError("arrays have at most " + std::to_string(kMaxDims) + " dimensions, " +
                        std::to_string(n) + " were asked for");
}

void check_extents(const Dims& shape) {
    for (std::int64_t extent : shape)
        if (extent < 0)
            throw ArgumentError("negative dimensions are not allowed: shape " + shape.to_string());
}

// Whether @p unit times the product of the non-zero extents fits in int64. As NumPy, zero
// extents are left out, so that every partial product of an accepted shape (Dims::product(), C
// strides) fits too, also for an empty array such as (0, 2^40, 2^40).
bool product_fits(const Dims& shape, std::int64_t unit) {
    std::int64_t total = unit;
    for (std::int64_t extent : shape)
        if (extent != 0 && __builtin_mul_overflow(total, extent, &total)) return false;
    return true;
}

// Elements times itemsize, refusing sizes that do not fit in a signed 64-bit byte count.
std::size_t checked_nbytes(const Dims& shape, std::size_t itemsize) {
    if (!product_fits(shape, static_cast<std::int64_t>(itemsize)))
        throw ArgumentError("an array of shape " + shape.to_string() + " and " +
                            std::to_string(itemsize) + "-byte elements is too large");
    return static_cast<std::size_t>(shape.product()) * itemsize;
}

// Strides that put two elements of @p shape more than INT64_MAX bytes apart: no memory is that
// large, and offset arithmetic over such a view (extent_bounds, kernels' index checks) would
// overflow.
void check_span(const Dims& shape, const Dims& strides) {
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return; // nothing to address
    std::int64_t span = 0;
    for (int i = 0; i < shape.size(); ++i) {
        if (shape[i] == 1) continue;
        std::int64_t step = 0;
        if (strides[i] == std::numeric_limits<std::int64_t>::min() ||
            __builtin_mul_overflow(shape[i] - 1, std::llabs(strides[i]), &step) ||
            __builtin_add_overflow(span, step, &span))
            throw ArgumentError("strides " + strides.to_string() + " over shape " +
                                shape.to_string() + " reach beyond any memory (over 2^63 bytes)");
    }
}

CUdeviceptr offset_pointer(CUdeviceptr pointer, std::int64_t offset) noexcept {
    // Unsigned arithmetic wraps, so negative offsets work as two's complement.
    return pointer + static_cast<CUdeviceptr>(offset);
}

std::string join_shapes(const Dims* shapes, std::size_t count) {
    std::string text;
    for (std::size_t i = 0; i < count; ++i) {
        if (i) text += i + 1 == count ? " and " : ", ";
        text += shapes[i].to_string();
    }
    return text;
}

// The byte offsets, relative to data(), of the lowest and highest element (size() > 0).
std::pair<std::int64_t, std::int64_t> extent_bounds(const Dims& shape, const Dims& strides) {
    std::int64_t low = 0, high = 0;
    for (int i = 0; i < shape.size(); ++i) {
        const std::int64_t span = (shape[i] - 1) * strides[i];
        (span < 0 ? low : high) += span;
    }
    return {low, high};
}

// Python's slice.indices(): clamp start and stop into the axis and count the elements.
struct SliceRange {
    std::int64_t start = 0;
    std::int64_t length = 0;
};

SliceRange resolve_slice(const Slice& slice, std::int64_t extent) {
    const std::int64_t step = slice.step;
    const std::int64_t lower = step < 0 ? -1 : 0;
    const std::int64_t upper = step < 0 ? extent - 1 : extent;
    auto clamp = [&](std::optional<std::int64_t> value, std::int64_t fallback) {
        if (!value) return fallback;
        std::int64_t v = *value;
        if (v < 0) {
            v += extent;
            return v < lower ? lower : v;
        }
        return v > upper ? upper : v;
    };
    SliceRange range;
    range.start = clamp(slice.start, step < 0 ? upper : lower);
    const std::int64_t stop = clamp(slice.stop, step < 0 ? lower : upper);
    // Magnitude of the step in unsigned arithmetic: -INT64_MIN does not fit in int64.
    const std::uint64_t magnitude =
        step < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(step) : std::uint64_t(step);
    if (step > 0 && range.start < stop)
        range.length = static_cast<std::int64_t>(
            static_cast<std::uint64_t>(stop - range.start - 1) / magnitude + 1);
    else if (step < 0 && stop < range.start)
        range.length = static_cast<std::int64_t>(
            static_cast<std::uint64_t>(range.start - stop - 1) / magnitude + 1);
    return range;
}

std::string slice_text(const Slice& s) {
    auto part = [](const std::optional<std::int64_t>& v) {
        return v ? std::to_string(*v) : std::string();
    };
    return part(s.start) + ":" + part(s.stop) + ":" + std::to_string(s.step);
}

} // namespace

// ---- Dims ----

Dims::Dims(std::initializer_list<std::int64_t> values) {
    if (values.size() > static_cast<std::size_t>(kMaxDims))
        too_many_dimensions(static_cast<long long>(values.size()));
    for (std::int64_t v : values)
        m_values[static_cast<std::size_t>(m_size++)] = v;
}

Dims::Dims(const std::vector<std::int64_t>& values) {
    if (values.size() > static_cast<std::size_t>(kMaxDims))
        too_many_dimensions(static_cast<long long>(values.size()));
    for (std::int64_t v : values)
        m_values[static_cast<std::size_t>(m_size++)] = v;
}

void Dims::bad_size(int n) {
    if (n < 0) throw ArgumentError("cannot resize dimensions to " + std::to_string(n));
    too_many_dimensions(n);
}

std::int64_t Dims::product() const noexcept {
    std::int64_t p = 1;
    for (std::int64_t v : *this)
        p *= v;
    return p;
}

std::string Dims::to_string() const {
    std::string text = "(";
    for (int i = 0; i < m_size; ++i) {
        if (i) text += ", ";
        text += std::to_string((*this)[i]);
    }
    if (m_size == 1) text += ",";
    return text + ")";
}

bool operator==(const Dims& a, const Dims& b) noexcept {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// ---- Array ----

Array Array::wrap(CUdeviceptr data, Dims shape, DType dtype, Dims strides,
                  std::shared_ptr<void> owner, int device) {
    check_extents(shape);
    if (!strides.empty() && strides.size() != shape.size())
        throw ArgumentError("strides " + strides.to_string() + " do not match shape " +
                            shape.to_string() + ": give one stride per dimension, or none");
    // Sizes and offsets of a description must fit in 64 bits, as those of memory Kiln allocates.
    checked_nbytes(shape, kiln::itemsize(dtype));
    if (!strides.empty()) check_span(shape, strides);
    Array array;
    array.m_data = data;
    array.m_dtype = dtype;
    array.m_strides = strides.empty() ? c_strides(shape, kiln::itemsize(dtype)) : strides;
    array.m_shape = shape;
    array.m_owner = std::move(owner);
    array.m_device = device;
    return array;
}

bool Array::is_c_contiguous() const noexcept {
    if (size() == 0) return true;
    auto expected = static_cast<std::int64_t>(itemsize());
    for (int i = ndim() - 1; i >= 0; --i) {
        if (m_shape[i] == 1) continue;
        if (m_strides[i] != expected) return false;
        expected *= m_shape[i];
    }
    return true;
}

bool Array::is_f_contiguous() const noexcept {
    if (size() == 0) return true;
    auto expected = static_cast<std::int64_t>(itemsize());
    for (int i = 0; i < ndim(); ++i) {
        if (m_shape[i] == 1) continue;
        if (m_strides[i] != expected) return false;
        expected *= m_shape[i];
    }
    return true;
}

Array Array::reshape(Dims shape) const {
    const Dims requested = shape;
    int unknown = -1;
    std::int64_t known = 1;
    for (int i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (unknown >= 0)
                throw ShapeError("cannot reshape into shape " + requested.to_string() +
                                 ": only one dimension can be -1");
            unknown = i;
        } else if (shape[i] < 0) {
            throw ShapeError("cannot reshape into shape " + requested.to_string() +
                             ": negative dimensions other than -1 are not allowed");
        } else if (__builtin_mul_overflow(known, shape[i], &known)) {
            throw ShapeError("cannot reshape into shape " + requested.to_string() +
                             ": too many elements");
        }
    }
    const std::int64_t count = size();
    const auto mismatch = [&] {
        return ShapeError("cannot reshape an array of size " + std::to_string(count) +
                          " into shape " + requested.to_string());
    };
    if (unknown >= 0) {
        if (known == 0 || count % known != 0) throw mismatch();
        shape[unknown] = count / known;
    } else if (known != count) {
        throw mismatch();
    }
    if (shape == m_shape) return *this;
    if (!is_c_contiguous())
        throw ShapeError("cannot reshape an array of shape " + m_shape.to_string() +
                         " and strides " + m_strides.to_string() + " into shape " +
                         requested.to_string() +
                         " without copying: reshape views C-contiguous arrays only; make a "
                         "C-contiguous copy first (ascontiguousarray)");
    Array out = *this;
    out.m_shape = shape;
    out.m_strides = c_strides(shape, itemsize());
    return out;
}

Array Array::transpose() const {
    Array out = *this;
    for (int i = 0; i < ndim(); ++i) {
        out.m_shape[i] = m_shape[ndim() - 1 - i];
        out.m_strides[i] = m_strides[ndim() - 1 - i];
    }
    return out;
}

Array Array::transpose(const std::vector<int>& axes) const {
    std::string text = "(";
    for (std::size_t i = 0; i < axes.size(); ++i)
        text += (i ? ", " : "") + std::to_string(axes[i]);
    text += ")";
    if (axes.size() != static_cast<std::size_t>(ndim()))
        throw ArgumentError("axes " + text + " do not match an array of " + std::to_string(ndim()) +
                            " dimension(s)");
    bool seen[kMaxDims] = {};
    Array out = *this;
    for (int i = 0; i < ndim(); ++i) {
        int axis = axes[static_cast<std::size_t>(i)];
        if (axis < -ndim() || axis >= ndim())
            throw ArgumentError("axis " + std::to_string(axis) + " in " + text +
                                " is out of range for an array of " + std::to_string(ndim()) +
                                " dimension(s)");
        if (axis < 0) axis += ndim();
        if (seen[axis]) throw ArgumentError("axes " + text + " repeat an axis");
        seen[axis] = true;
        out.m_shape[i] = m_shape[axis];
        out.m_strides[i] = m_strides[axis];
    }
    return out;
}

Array Array::slice(const std::vector<Index>& indices) const {
    if (indices.size() > static_cast<std::size_t>(ndim()))
        throw ArgumentError("too many indices: the array has " + std::to_string(ndim()) +
                            " dimension(s), " + std::to_string(indices.size()) + " were given");
    Array out = *this;
    out.m_shape.resize(0);
    out.m_strides.resize(0);
    std::int64_t offset = 0;
    for (int axis = 0; axis < ndim(); ++axis) {
        const std::int64_t extent = m_shape[axis];
        const std::int64_t stride = m_strides[axis];
        if (static_cast<std::size_t>(axis) >= indices.size()) {
            out.m_shape.push_back(extent);
            out.m_strides.push_back(stride);
            continue;
        }
        const Index& index = indices[static_cast<std::size_t>(axis)];
        if (index.is_position) {
            const std::int64_t p = index.position < 0 ? index.position + extent : index.position;
            if (p < 0 || p >= extent)
                throw ArgumentError("index " + std::to_string(index.position) +
                                    " is out of bounds for axis " + std::to_string(axis) +
                                    " with size " + std::to_string(extent));
            offset += p * stride;
            continue;
        }
        if (index.slice.step == 0)
            throw ArgumentError("slice " + slice_text(index.slice) + " on axis " +
                                std::to_string(axis) + ": the step cannot be zero");
        const SliceRange range = resolve_slice(index.slice, extent);
        std::int64_t new_stride = 0;
        if (__builtin_mul_overflow(stride, index.slice.step, &new_stride)) {
            if (range.length > 1)
                throw ArgumentError("slice " + slice_text(index.slice) + " on axis " +
                                    std::to_string(axis) + ": the step is too large");
            new_stride = stride;
        }
        if (range.length > 0) offset += range.start * stride;
        out.m_shape.push_back(range.length);
        out.m_strides.push_back(new_stride);
    }
    out.m_data = offset_pointer(m_data, offset);
    return out;
}

Array Array::broadcast_to(const Dims& shape) const {
    for (std::int64_t extent : shape)
        if (extent < 0)
            throw ShapeError("cannot broadcast to shape " + shape.to_string() +
                             ": negative dimensions are not allowed");
    const auto fail = [&] {
        return ShapeError("cannot broadcast an array of shape " + m_shape.to_string() +
                          " to shape " + shape.to_string());
    };
    if (shape.size() < ndim()) throw fail();
    Array out = *this;
    out.m_shape = shape;
    out.m_strides.resize(shape.size());
    const int lead = shape.size() - ndim();
    for (int i = 0; i < shape.size(); ++i) {
        const int source = i - lead;
        if (source < 0) { // NOLINT(bugprone-branch-clone): == 1 must follow the match test
            out.m_strides[i] = 0;
        } else if (m_shape[source] == shape[i]) {
            out.m_strides[i] = m_strides[source];
        } else if (m_shape[source] == 1) {
            out.m_strides[i] = 0;
        } else {
            throw fail();
        }
    }
    return out;
}

void Array::copy_to_host_bytes(void* destination, StreamRef stream) const {
    if (size() == 0) return;
    const detail::OnDevice on_device(m_device); // the default stream is the array's device's
    // It waits for the copy: refused at once while the stream is captured.
    detail::refuse_while_capturing(stream, "kiln::Array::to_host (copy_to_host_bytes)");
    if (is_c_contiguous()) {
        KILN_CU(cuMemcpyDtoHAsync(destination, m_data, nbytes(), stream.get()));
        stream.synchronize();
        return;
    }
    // Copy the bytes the view covers (strides may be negative or zero), then gather on the host.
    const auto [low, high] = extent_bounds(m_shape, m_strides);
    const std::size_t item = itemsize();
    std::vector<unsigned char> staging(static_cast<std::size_t>(high - low) + item);
    KILN_CU(cuMemcpyDtoHAsync(staging.data(), offset_pointer(m_data, low), staging.size(),
                              stream.get()));
    stream.synchronize();
    auto* out = static_cast<unsigned char*>(destination);
    const int last = ndim() - 1;
    std::int64_t index[kMaxDims] = {};
    std::int64_t offset = -low; // of the current element within staging
    const std::int64_t count = size();
    const std::int64_t inner = m_shape[last];
    const std::int64_t inner_stride = m_strides[last];
    for (std::int64_t done = 0; done < count; done += inner) {
        std::int64_t o = offset;
        for (std::int64_t k = 0; k < inner; ++k, o += inner_stride, out += item)
            std::memcpy(out, staging.data() + o, item);
        // Advance the outer indices like an odometer.
        for (int axis = last - 1; axis >= 0; --axis) {
            offset += m_strides[axis];
            if (++index[axis] < m_shape[axis]) break;
            offset -= m_strides[axis] * m_shape[axis];
            index[axis] = 0;
        }
    }
}

void Array::copy_from_host_bytes(const void* source, StreamRef stream) const {
    if (!is_c_contiguous())
        throw ArgumentError("cannot copy host data into an array of shape " + m_shape.to_string() +
                            " and strides " + m_strides.to_string() +
                            ": the destination must be C-contiguous");
    if (size() == 0) return;
    const detail::OnDevice on_device(m_device);
    detail::refuse_while_capturing(stream, "kiln::Array::copy_from_host_bytes (from_host)");
    KILN_CU(cuMemcpyHtoDAsync(m_data, source, nbytes(), stream.get()));
    // Pinned sources are read asynchronously: wait so the caller may reuse the memory at once.
    stream.synchronize();
}

void Array::check_host_type(DType requested) const {
    if (requested != m_dtype)
        throw ArgumentError(std::string("cannot copy an array of dtype ") + name(m_dtype) +
                            " to host elements of dtype " + name(requested) +
                            ": use the matching C++ type");
}

// ---- free functions ----

// NOLINTNEXTLINE(bugprone-exception-escape): as declared, resizing within capacity cannot throw
Dims c_strides(const Dims& shape, std::size_t itemsize) noexcept {
    Dims strides;
    strides.resize(shape.size());
    auto stride = static_cast<std::int64_t>(itemsize);
    // As NumPy: zero extents count as one, so strides stay meaningful for empty arrays.
    for (int i = shape.size() - 1; i >= 0; --i) {
        strides[i] = stride;
        if (shape[i] > 0) stride *= shape[i];
    }
    return strides;
}

Dims broadcast_shapes(const Dims* shapes, std::size_t count) {
    int ndim = 0;
    for (std::size_t i = 0; i < count; ++i)
        ndim = std::max(ndim, shapes[i].size());
    Dims result;
    result.resize(ndim, 1);
    for (std::size_t s = 0; s < count; ++s) {
        const Dims& shape = shapes[s];
        const int lead = ndim - shape.size();
        for (int j = 0; j < shape.size(); ++j) {
            const std::int64_t extent = shape[j];
            std::int64_t& target = result[lead + j];
            if (extent == target || extent == 1) continue;
            if (target != 1 || extent < 0)
                throw ShapeError("shapes " + join_shapes(shapes, count) + " do not broadcast");
            target = extent;
        }
    }
    // Each shape's element count fits in 64 bits; their broadcast's, e.g. (2^40, 1) with
    // (1, 2^40), need not.
    if (!product_fits(result, 1))
        throw ShapeError("shapes " + join_shapes(shapes, count) + " broadcast to " +
                         result.to_string() + ", more elements than 64 bits can count");
    return result;
}

Dims broadcast_shapes(std::initializer_list<Dims> shapes) {
    return broadcast_shapes(shapes.begin(), shapes.size());
}

Array empty(Dims shape, DType dtype, StreamRef stream) {
    check_extents(shape);
    const std::size_t item = itemsize(dtype);
    const std::size_t bytes = checked_nbytes(shape, item);
    // One heap allocation: the buffer and its control block together. Built in place rather
    // than through wrap(), whose checks the two lines above have made.
    auto buffer = std::make_shared<DeviceBuffer>(bytes, stream);
    // The device the memory came from: the current context's. An empty array has no memory (and
    // needs no driver); an application allocator may run without one.
    const int device = bytes && detail::driver_available() ? detail::current_device_ordinal() : -1;
    Array array;
    array.m_data = buffer->get();
    array.m_dtype = dtype;
    array.m_strides = c_strides(shape, item);
    array.m_shape = shape;
    array.m_owner = std::move(buffer);
    array.m_device = device;
    return array;
}

Array zeros(Dims shape, DType dtype, StreamRef stream) {
    Array out = empty(shape, dtype, stream);
    if (out.nbytes()) {
        detail::current_context();
        KILN_CU(cuMemsetD8Async(out.data(), 0, out.nbytes(), stream.get()));
    }
    return out;
}

namespace detail {

Array full_bytes(Dims shape, DType dtype, const void* element, StreamRef stream) {
    Array out = empty(shape, dtype, stream);
    fill_contiguous(out.data(), static_cast<std::size_t>(out.size()), out.itemsize(), element,
                    stream);
    return out;
}

} // namespace detail

Array full(Dims shape, double value, DType dtype, StreamRef stream) {
    unsigned char element[16];
    cast_scalar(value, dtype, element);
    return detail::full_bytes(shape, dtype, element, stream);
}

Array full(Dims shape, std::complex<double> value, DType dtype, StreamRef stream) {
    unsigned char element[16];
    cast_scalar(value, dtype, element);
    return detail::full_bytes(shape, dtype, element, stream);
}

Array arange(double start, double stop, double step, DType dtype, StreamRef stream) {
    if (step == 0) throw ArgumentError("arange: the step cannot be zero");
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
        throw ArgumentError("arange: start, stop and step must be finite");
    const double length = std::ceil((stop - start) / step);
    if (length >= 9.2e18)
        throw ArgumentError("arange: " + std::to_string(length) + " elements are too many");
    const std::int64_t n = length > 0 ? static_cast<std::int64_t>(length) : 0;
    Array out = empty({n}, dtype, stream);
    detail::arange_contiguous(out.data(), static_cast<std::size_t>(n), dtype, start, step, stream);
    return out;
}

Array from_host_bytes(const void* data, Dims shape, DType dtype, StreamRef stream) {
    Array out = empty(shape, dtype, stream);
    if (out.nbytes()) {
        if (!data)
            throw ArgumentError("from_host_bytes: no host data for " +
                                std::to_string(out.nbytes()) + " bytes");
        out.copy_from_host_bytes(data, stream);
    }
    return out;
}

} // namespace kiln
