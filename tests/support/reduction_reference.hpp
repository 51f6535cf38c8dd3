#pragma once
// Host references for the reduction GPU tests (test_reduction_gpu.cpp, test_reductions_gpu.cpp):
// shapes and axes as NumPy reduces them, reductions over C-order host data in double or
// complex<double> precision (exact for integers), device data of any dtype with the values it
// holds, poisoned outputs and reading any dtype back.

#include "kiln/array.hpp"
#include "kiln/dtype.hpp"
#include "kiln/reduction_kernel.hpp"

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln::test {

using Shape = std::vector<std::int64_t>;
using Complex = std::complex<double>;

inline std::int64_t elements(const Shape& shape) {
    std::int64_t n = 1;
    for (std::int64_t e : shape)
        n *= e;
    return n;
}

inline std::size_t to_size(std::int64_t n) {
    return static_cast<std::size_t>(n);
}

inline std::string text(const Shape& shape) {
    return kiln::Dims(shape).to_string();
}

// Advances the C-order multi-index `at` over `shape` by one element.
inline void next(std::vector<std::int64_t>& at, const Shape& shape) {
    for (std::size_t d = shape.size(); d-- > 0;) {
        if (++at[d] < shape[d]) return;
        at[d] = 0;
    }
}

// Per dimension of an ndim-dimensional array, whether `axes` reduces it (negative axes count
// from the end).
inline std::vector<bool> reduced_axes(const Axes& axes, int ndim) {
    std::vector<bool> reduced(to_size(ndim), axes.is_all());
    for (int k = 0; k < axes.size(); ++k)
        reduced[to_size((axes[k] + ndim) % ndim)] = true;
    return reduced;
}

// The shape a reduction over `axes` gives: reduced dimensions dropped, or kept as 1.
inline Shape result_shape(const Shape& shape, const Axes& axes, bool keepdims = false) {
    const auto reduced = reduced_axes(axes, static_cast<int>(shape.size()));
    Shape out;
    for (std::size_t d = 0; d < shape.size(); ++d)
        if (!reduced[d])
            out.push_back(shape[d]);
        else if (keepdims)
            out.push_back(1);
    return out;
}

// Calls f(flat, out, j) for every element of a C-order array: its flat index, the C-order index
// of its output (over the kept axes) and its index within its reduction (C order over the reduced
// axes: what kernels see as `_J`; the flat index for Axes::all(), as NumPy's argmax counts).
template <class F> void visit(const Shape& shape, const Axes& axes, F&& f) {
    const auto reduced = reduced_axes(axes, static_cast<int>(shape.size()));
    std::vector<std::int64_t> at(shape.size(), 0);
    const std::int64_t n = elements(shape);
    for (std::int64_t flat = 0; flat < n; ++flat) {
        std::int64_t out = 0, j = 0;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            std::int64_t& index = reduced[d] ? j : out;
            index = index * shape[d] + at[d];
        }
        f(flat, out, j);
        next(at, shape);
    }
}

// Per output: op(...op(op(init, x0, j0), x1, j1)..., xn, jn) over its elements in C order.
template <class Acc, class V, class Op>
std::vector<Acc> reference(const std::vector<V>& x, const Shape& shape, const Axes& axes, Acc init,
                           Op op) {
    std::vector<Acc> out(to_size(elements(result_shape(shape, axes))), init);
    visit(shape, axes, [&](std::int64_t flat, std::int64_t o, std::int64_t j) {
        out[to_size(o)] = op(out[to_size(o)], x[to_size(flat)], j);
    });
    return out;
}

template <class T> std::vector<double> doubles(const std::vector<T>& v) {
    return {v.begin(), v.end()};
}

// One stored element of any dtype as a complex double; bool as its raw byte, so that poison
// (0x7f) reads as neither false nor true.
template <class T> Complex load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::is_same_v<T, kiln::float16> || std::is_same_v<T, kiln::bfloat16>)
        return kiln::to_double(v);
    else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, Complex>)
        return Complex(v);
    else
        return static_cast<double>(v);
}
inline Complex decode(const unsigned char* p, DType dtype) {
    switch (dtype) {
    case DType::bool_:
        return static_cast<double>(*p);
    case DType::int8:
        return load<std::int8_t>(p);
    case DType::int16:
        return load<std::int16_t>(p);
    case DType::int32:
        return load<std::int32_t>(p);
    case DType::int64:
        return load<std::int64_t>(p);
    case DType::uint8:
        return load<std::uint8_t>(p);
    case DType::uint16:
        return load<std::uint16_t>(p);
    case DType::uint32:
        return load<std::uint32_t>(p);
    case DType::uint64:
        return load<std::uint64_t>(p);
    case DType::float16:
        return load<kiln::float16>(p);
    case DType::bfloat16:
        return load<kiln::bfloat16>(p);
    case DType::float32:
        return load<float>(p);
    case DType::float64:
        return load<double>(p);
    case DType::complex64:
        return load<std::complex<float>>(p);
    case DType::complex128:
        return load<Complex>(p);
    }
    return {};
}

// The elements of `a` in C order, whatever its dtype.
inline std::vector<Complex> values_of(const Array& a) {
    std::vector<unsigned char> bytes(a.nbytes());
    if (!bytes.empty()) a.copy_to_host_bytes(bytes.data());
    std::vector<Complex> out;
    for (std::size_t at = 0; at < bytes.size(); at += a.itemsize())
        out.push_back(decode(bytes.data() + at, a.dtype()));
    return out;
}

// An array of `dtype` from `values` converted as kiln::cast_scalar converts, with the values it
// holds exactly (16-bit floats rounded, say) for host references.
struct Data {
    Array array;
    std::vector<Complex> values;
    Shape shape;
};
inline Data device_data(const std::vector<Complex>& values, const Shape& shape, DType dtype) {
    const std::size_t item = kiln::itemsize(dtype);
    std::vector<unsigned char> bytes(values.size() * item);
    Data data;
    for (std::size_t i = 0; i < values.size(); ++i) {
        kiln::cast_scalar(values[i], dtype, bytes.data() + i * item);
        data.values.push_back(decode(bytes.data() + i * item, dtype));
    }
    data.array = kiln::from_host_bytes(bytes.data(), kiln::Dims(shape), dtype);
    data.shape = shape;
    return data;
}

// An output whose every byte is 0xff (NaN in every floating type) or 0x7f (integers and bool), so
// an element the kernel leaves unwritten fails its comparison.
inline Array poisoned(const Shape& shape, DType dtype, kiln::StreamRef stream = {}) {
    const bool floating = kiln::is_floating(dtype) || kiln::is_complex(dtype);
    const std::vector<unsigned char> bytes(to_size(elements(shape)) * kiln::itemsize(dtype),
                                           floating ? 0xff : 0x7f);
    if (bytes.empty()) return kiln::empty(kiln::Dims(shape), dtype, stream);
    return kiln::from_host_bytes(bytes.data(), kiln::Dims(shape), dtype, stream);
}

} // namespace kiln::test
