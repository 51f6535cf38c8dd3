#pragma once
/// @file
/// kiln::Array: an n-dimensional view of device memory with a dtype, shape and strides (in bytes,
/// as NumPy and CuPy count them). Owning (stream-ordered memory) or wrapping memory the caller
/// owns. Views (reshape, transpose, slicing, broadcast_to) share the memory they view.

#include "kiln/dtype.hpp"
#include "kiln/error.hpp"
#include "kiln/memory.hpp"
#include "kiln/stream.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

/// At most this many dimensions (CuPy allows 64; kernels are specialized per ndim anyway).
inline constexpr int kMaxDims = 16;

/// A small fixed-capacity list of extents or strides: no allocation on the launch path.
class Dims {
  public:
    // Only the first size() values are ever read, initialized or copied: Arrays are built and
    // copied on every kernel call, so unused capacity must cost nothing.
    Dims() noexcept {} // NOLINT: values past size() are deliberately left uninitialized
    Dims(const Dims& other) noexcept
        : m_size(other.m_size) {
        copy_values(other);
    }
    Dims& operator=(const Dims& other) noexcept {
        m_size = other.m_size;
        copy_values(other);
        return *this;
    }
    Dims(std::initializer_list<std::int64_t> values); // NOLINT: implicit by design
    explicit Dims(const std::vector<std::int64_t>& values);
    int size() const noexcept { return m_size; }
    bool empty() const noexcept { return m_size == 0; }
    std::int64_t& operator[](int i) noexcept { return m_values[static_cast<std::size_t>(i)]; }
    std::int64_t operator[](int i) const noexcept { return m_values[static_cast<std::size_t>(i)]; }
    const std::int64_t* begin() const noexcept { return m_values.data(); }
    const std::int64_t* end() const noexcept { return m_values.data() + m_size; }
    void push_back(std::int64_t value); ///< @throws ArgumentError beyond kMaxDims
    void resize(int n, std::int64_t value = 0);
    std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }
    /// Product of the extents (1 for none).
    std::int64_t product() const noexcept;
    std::string to_string() const; ///< "(2, 3)"
    friend bool operator==(const Dims& a, const Dims& b) noexcept;
    friend bool operator!=(const Dims& a, const Dims& b) noexcept { return !(a == b); }

  private:
    void copy_values(const Dims& other) noexcept {
        std::memcpy(m_values.data(), other.m_values.data(),
                    static_cast<std::size_t>(other.m_size) * sizeof(std::int64_t));
    }
    std::array<std::int64_t, kMaxDims> m_values;
    int m_size = 0;
};

/// One index of Array::slice: a single position (drops the dimension), a range with a step
/// (NumPy's start:stop:step, negative values counting from the end), or everything.
struct Slice {
    std::optional<std::int64_t> start, stop;
    std::int64_t step = 1;
    static Slice all() { return {}; }
    static Slice range(std::int64_t start, std::int64_t stop, std::int64_t step = 1) {
        return {start, stop, step};
    }
};
struct Index {
    Index(std::int64_t at)
        : is_position(true)
        , position(at) {} // NOLINT
    Index(Slice range)
        : slice(range) {} // NOLINT
    bool is_position = false;
    std::int64_t position = 0;
    Slice slice;
};

class Array {
  public:
    /// An empty (null) array; size 0, ndim 0, no memory.
    Array() = default;

    /// Wrap memory the caller owns (not freed by Kiln). @p strides in bytes; C order if empty.
    /// @p owner, when given, is kept alive as long as any view of this array.
    /// @throws ArgumentError for a negative extent, strides that do not match the shape, or a
    /// size or stride span over 2^63 - 1 bytes.
    static Array wrap(CUdeviceptr data, Dims shape, DType dtype, Dims strides = {},
                      std::shared_ptr<void> owner = nullptr);

    DType dtype() const noexcept { return m_dtype; }
    std::size_t itemsize() const noexcept { return kiln::itemsize(m_dtype); }
    int ndim() const noexcept { return m_shape.size(); }
    const Dims& shape() const noexcept { return m_shape; }
    /// Strides in bytes.
    const Dims& strides() const noexcept { return m_strides; }
    std::int64_t size() const noexcept { return m_shape.product(); }
    std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * itemsize(); }
    /// Address of element (0, ..., 0).
    CUdeviceptr data() const noexcept { return m_data; }
    template <class T> T* data() const noexcept { return reinterpret_cast<T*>(m_data); }
    /// The memory's owner (nullptr for wrapped memory with no owner given).
    const std::shared_ptr<void>& owner() const noexcept { return m_owner; }
    bool is_c_contiguous() const noexcept;
    bool is_f_contiguous() const noexcept;

    // Views: share memory, never copy.
    /// Same elements in a new shape; one extent may be -1. C-contiguous arrays only (others: copy
    /// first with ascontiguousarray). @throws ShapeError.
    Array reshape(Dims shape) const;
    /// Reverse the axes (NumPy's `.T`).
    Array transpose() const;
    /// Permute the axes. @throws ArgumentError for a bad permutation.
    Array transpose(const std::vector<int>& axes) const;
    /// NumPy basic indexing: `a.slice({Slice::range(0, 10, 2), 3})` is `a[0:10:2, 3]`; missing
    /// trailing indices take everything. @throws ArgumentError (out of range, step 0).
    Array slice(const std::vector<Index>& indices) const;
    /// Broadcast to @p shape (stride 0 on broadcast axes). @throws ShapeError.
    Array broadcast_to(const Dims& shape) const;

    // Host copies (synchronous with respect to the host: they wait on @p stream).
    /// Copy the elements, in C order, to a host vector of the matching type.
    /// Non-contiguous arrays are gathered on the host. @throws ArgumentError on a dtype mismatch.
    template <class T> std::vector<T> to_host(StreamRef stream = {}) const {
        static_assert(!std::is_same_v<T, bool>,
                      "std::vector<bool> packs bits: copy bool arrays with copy_to_host_bytes "
                      "into a bool buffer");
        check_host_type(dtype_of<T>());
        std::vector<T> out(static_cast<std::size_t>(size()));
        copy_to_host_bytes(out.data(), stream);
        return out;
    }
    /// Copy all elements to @p destination (nbytes() bytes, C order).
    void copy_to_host_bytes(void* destination, StreamRef stream = {}) const;
    /// Overwrite the elements from @p source (nbytes() bytes, C order). The array must be
    /// C-contiguous.
    void copy_from_host_bytes(const void* source, StreamRef stream = {}) const;

  private:
    void check_host_type(DType requested) const;

    CUdeviceptr m_data = 0;
    DType m_dtype = DType::float32;
    Dims m_shape, m_strides;
    std::shared_ptr<void> m_owner;
};

/// C-order strides in bytes for @p shape.
Dims c_strides(const Dims& shape, std::size_t itemsize) noexcept;

/// The broadcast of several shapes (NumPy rules). @throws ShapeError naming the shapes.
Dims broadcast_shapes(std::initializer_list<Dims> shapes);
/// The broadcast of @p count shapes at @p shapes; allocates nothing unless it throws.
Dims broadcast_shapes(const Dims* shapes, std::size_t count);

// Creation. Owning arrays allocate from default_allocator() in stream order on @p stream.
Array empty(Dims shape, DType dtype, StreamRef stream = {});
Array zeros(Dims shape, DType dtype, StreamRef stream = {});
/// Every element @p value, converted to @p dtype as cast_scalar() does (integers wrap:
/// `full({3}, -1, DType::uint8)` is 255s). Integer values, float16 and bfloat16 take the template
/// overload below and stay exact (`full({3}, INT64_MAX, DType::int64)`); complex values the
/// std::complex one. Fills with cuMemsetD8/D16/D32Async where the bit pattern allows.
Array full(Dims shape, double value, DType dtype, StreamRef stream = {});
Array full(Dims shape, std::complex<double> value, DType dtype, StreamRef stream = {});

namespace detail {
/// An array of @p shape with every element the itemsize(dtype) bytes at @p element.
Array full_bytes(Dims shape, DType dtype, const void* element, StreamRef stream);
} // namespace detail

template <class T, std::enable_if_t<std::is_integral_v<T> || std::is_same_v<T, float16> ||
                                        std::is_same_v<T, bfloat16>,
                                    int> = 0>
Array full(Dims shape, T value, DType dtype, StreamRef stream = {}) {
    unsigned char element[16];
    cast_scalar(value, dtype, element);
    return detail::full_bytes(shape, dtype, element, stream);
}
/// start, start + step, ... below stop (NumPy's arange): ceil((stop - start) / step) elements,
/// element i computed as start + i * step in double precision and converted to @p dtype as
/// cast_scalar() does (integers saturate). @throws ArgumentError for step 0, non-finite
/// arguments or more elements than memory can hold.
Array arange(double start, double stop, double step, DType dtype, StreamRef stream = {});
/// A C-contiguous copy of host data.
Array from_host_bytes(const void* data, Dims shape, DType dtype, StreamRef stream = {});
template <class T> Array from_host(const std::vector<T>& data, Dims shape, StreamRef stream = {}) {
    if (static_cast<std::int64_t>(data.size()) != shape.product())
        throw ShapeError("from_host: " + std::to_string(data.size()) +
                         " host elements do not fill shape " + shape.to_string());
    return from_host_bytes(data.data(), shape, dtype_of<T>(), stream);
}
template <class T> Array from_host(const std::vector<T>& data, StreamRef stream = {}) {
    return from_host_bytes(data.data(), {static_cast<std::int64_t>(data.size())}, dtype_of<T>(),
                           stream);
}

} // namespace kiln
