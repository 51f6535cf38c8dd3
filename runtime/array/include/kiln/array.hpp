#pragma once
/// @file
/// kiln::Array: an n-dimensional view of device memory with a dtype, shape and strides (in bytes,
/// as NumPy and CuPy count them). Owning (stream-ordered memory) or wrapping memory the caller
/// owns. Views (reshape, transpose, slicing, broadcast_to) share the memory they view. Also the
/// free functions that make arrays (empty, zeros, full, arange, from_host) and the shape helpers
/// the front ends use (c_strides, broadcast_shapes). docs/arrays.md and docs/elementwise.md show
/// them in use.

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
    /// No values (size 0).
    // NOLINTNEXTLINE(modernize-use-equals-default): user-provided, so `Dims{}` zeroes nothing
    Dims() noexcept {}
    /// Copies the values in use, not the spare capacity.
    /// @param other the list to copy.
    Dims(const Dims& other) noexcept
        : m_size(other.m_size) {
        copy_values(other);
    }
    /// Copies the values in use, not the spare capacity.
    /// @param other the list to copy.
    /// @return this list.
    Dims& operator=(const Dims& other) noexcept {
        m_size = other.m_size;
        copy_values(other);
        return *this;
    }
    /// The values in order, as in `Dims{2, 3}` or `empty({2, 3}, ...)`.
    /// @param values at most kMaxDims values.
    /// @throws ArgumentError for more than kMaxDims values.
    // NOLINTNEXTLINE(google-explicit-constructor): `{2, 3}`
    Dims(std::initializer_list<std::int64_t> values);
    /// The values of a vector, in order.
    /// @param values at most kMaxDims values.
    /// @throws ArgumentError for more than kMaxDims values.
    explicit Dims(const std::vector<std::int64_t>& values);
    /// The number of values in use.
    /// @return the number of values in use.
    int size() const noexcept { return m_size; }
    /// Whether there are no values.
    /// @return whether there are no values (a 0-d shape).
    bool empty() const noexcept { return m_size == 0; }
    /// Value @p i, unchecked.
    /// @param i an index below size().
    /// @return the value, writable.
    std::int64_t& operator[](int i) noexcept { return m_values[static_cast<std::size_t>(i)]; }
    /// Value @p i, unchecked.
    /// @param i an index below size().
    /// @return the value.
    std::int64_t operator[](int i) const noexcept { return m_values[static_cast<std::size_t>(i)]; }
    /// A pointer to the first value.
    /// @return a pointer to the first value, for range-for loops.
    const std::int64_t* begin() const noexcept { return m_values.data(); }
    /// A pointer past the last value in use.
    /// @return a pointer past the last value in use.
    const std::int64_t* end() const noexcept { return m_values.data() + m_size; }
    /// Append a value.
    /// @param value the value.
    void push_back(std::int64_t value) { ///< @throws ArgumentError beyond kMaxDims
        // Inline: the front ends build their loop shapes and strides with it on every call.
        if (m_size == kMaxDims) bad_size(kMaxDims + 1);
        m_values[static_cast<std::size_t>(m_size++)] = value;
    }
    /// Keep the first @p n values, or append copies of @p value up to @p n.
    /// @param n the new size, from 0 to kMaxDims.
    /// @param value the value of appended entries.
    /// @throws ArgumentError for a negative @p n or one over kMaxDims.
    void resize(int n, std::int64_t value = 0) {
        if (n < 0 || n > kMaxDims) bad_size(n);
        for (auto i = static_cast<std::size_t>(m_size); i < static_cast<std::size_t>(n); ++i)
            m_values[i] = value;
        m_size = n;
    }
    /// The values in use.
    /// @return the values in use, as a vector.
    std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }
    /// Product of the extents (1 for none).
    /// @return the product.
    std::int64_t product() const noexcept;
    /// The values as a NumPy shape, for messages.
    /// @return the values as NumPy prints a shape, for messages.
    std::string to_string() const; ///< "(2, 3)"
    /// Lists compare by their values in use.
    /// @param a a list.
    /// @param b another list.
    /// @return whether they have the same size and values.
    friend bool operator==(const Dims& a, const Dims& b) noexcept;
    /// Lists compare by their values in use.
    /// @param a a list.
    /// @param b another list.
    /// @return whether they differ in size or in a value.
    friend bool operator!=(const Dims& a, const Dims& b) noexcept { return !(a == b); }

  private:
    [[noreturn]] static void bad_size(int n);
#if defined(__GNUC__) && !defined(__clang__)
// Only the values in use are copied, and only those are ever read; GCC cannot see that m_size
// bounds them and warns about the unset rest of a Dims built by push_back.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
    void copy_values(const Dims& other) noexcept {
        // Most shapes have a few dimensions: copied inline, without a call to memcpy.
        switch (other.m_size) {
        case 4:
            m_values[3] = other.m_values[3];
            [[fallthrough]];
        case 3:
            m_values[2] = other.m_values[2];
            [[fallthrough]];
        case 2:
            m_values[1] = other.m_values[1];
            [[fallthrough]];
        case 1:
            m_values[0] = other.m_values[0];
            [[fallthrough]];
        case 0:
            return;
        default:
            std::memcpy(m_values.data(), other.m_values.data(),
                        static_cast<std::size_t>(other.m_size) * sizeof(std::int64_t));
        }
    }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    std::array<std::int64_t, kMaxDims> m_values;
    int m_size = 0;
};

/// One index of Array::slice: a single position (drops the dimension), a range with a step
/// (NumPy's start:stop:step, negative values counting from the end), or everything.
struct Slice {
    /// @{
    /// `start`: the first index; `stop`: the index to stop before. Negative values count from the
    /// end; nullopt is the start or end of the axis (for a negative step, its end or start), as an
    /// empty place in `start:stop` is in NumPy.
    std::optional<std::int64_t> start, stop;
    /// @}
    /// Step between indices; negative walks backwards; never 0.
    std::int64_t step = 1;
    /// A slice that takes the whole axis.
    /// @return a slice that takes the whole axis (NumPy's `:`).
    static Slice all() { return {}; }
    /// NumPy's `start:stop:step`.
    /// @param start the first index; negative counts from the end.
    /// @param stop the index to stop before; negative counts from the end.
    /// @param step the step; negative walks backwards.
    /// @return the slice.
    static Slice range(std::int64_t start, std::int64_t stop, std::int64_t step = 1) {
        return {start, stop, step};
    }
};
/// One entry of the index list Array::slice takes: a position (an integer, which drops the
/// dimension) or a Slice. Converts implicitly from either, so `a.slice({1, Slice::all()})` reads
/// as `a[1, :]`.
struct Index {
    /// A single position.
    /// @param at the position; negative counts from the end.
    Index(std::int64_t at) // NOLINT(google-explicit-constructor): `a.slice({1, Slice::all()})`
        : is_position(true)
        , position(at) {}
    /// A range of positions.
    /// @param range the range.
    Index(Slice range) // NOLINT(google-explicit-constructor): as Index(std::int64_t)
        : slice(range) {}
    /// Whether this is a single position (else a slice).
    bool is_position = false;
    /// The position, when is_position.
    std::int64_t position = 0;
    /// The range, when not is_position.
    Slice slice;
};

/// An n-dimensional array in device memory: a pointer, a dtype, a shape and strides in bytes, and
/// a shared owner that keeps the memory alive. Copying an Array copies the view, never the
/// elements, and shares the owner, so the memory lives until its last view is gone. An owning
/// array's memory comes from default_allocator() in stream order on the stream it was made on;
/// using it on another stream needs the usual synchronization. The front ends take arrays as
/// arguments, and the dtype and layout choose the compiled kernel.
class Array {
  public:
    /// An empty (null) array; size 0, ndim 0, no memory.
    Array() = default;

    /// Wrap memory the caller owns (not freed by Kiln). @p strides in bytes; C order if empty.
    /// @p owner, when given, is kept alive as long as any view of this array.
    /// @param data the address of element (0, ..., 0).
    /// @param shape the extents.
    /// @param dtype the element type.
    /// @param strides the strides in bytes, one per extent; empty for C order.
    /// @param owner anything that keeps the memory alive, or nullptr.
    /// @param device the ordinal of the device the memory is on, or -1 when not known: then
    /// device() asks the driver when it is needed (only ever with several devices visible).
    /// @return a view of the memory.
    /// @throws ArgumentError for a negative extent, strides that do not match the shape, or a
    /// size or stride span over 2^63 - 1 bytes.
    static Array wrap(CUdeviceptr data, Dims shape, DType dtype, Dims strides = {},
                      std::shared_ptr<void> owner = nullptr, int device = -1);

    /// The element type.
    /// @return the element type.
    DType dtype() const noexcept { return m_dtype; }
    /// The size of one element in bytes.
    /// @return the size of one element in bytes.
    std::size_t itemsize() const noexcept { return kiln::itemsize(m_dtype); }
    /// The number of dimensions.
    /// @return the number of dimensions.
    int ndim() const noexcept { return m_shape.size(); }
    /// The extents.
    /// @return the extents.
    const Dims& shape() const noexcept { return m_shape; }
    /// Strides in bytes.
    /// @return one stride per dimension; 0 on broadcast axes, negative on reversed ones.
    const Dims& strides() const noexcept { return m_strides; }
    /// The number of elements.
    /// @return the number of elements (1 for a 0-d array, 0 for an empty one).
    std::int64_t size() const noexcept { return m_shape.product(); }
    /// The bytes of the elements.
    /// @return size() times itemsize(): the bytes of the elements, not of the memory spanned.
    std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * itemsize(); }
    /// Address of element (0, ..., 0).
    /// @return the device address.
    CUdeviceptr data() const noexcept { return m_data; }
    /// Address of element (0, ..., 0) as a typed device pointer, for kernel arguments. Not
    /// checked against dtype().
    /// @tparam T the element type.
    /// @return the device address.
    template <class T> T* data() const noexcept {
        return reinterpret_cast<T*>(m_data); // NOLINT(performance-no-int-to-ptr): device address
    }
    /// The memory's owner (nullptr for wrapped memory with no owner given).
    /// @return the owner, shared by every view of the memory.
    const std::shared_ptr<void>& owner() const noexcept { return m_owner; }
    /// The device the memory was recorded on: where it was allocated, or as given to wrap().
    /// @return the ordinal, or -1 when wrap() was not told or there is no memory (see device()).
    int recorded_device() const noexcept { return m_device; }
    /// The device the memory is on: the recorded one, else the driver's answer for data()
    /// (cuPointerGetAttribute, not remembered: give wrap() the device to spare the query).
    /// @return the ordinal; -1 for managed memory (usable from every device), for memory the
    /// driver does not know, and for an array without memory (an empty one, address 0).
    /// @throws NoDeviceError without a driver when no device is recorded.
    int device() const;
    /// A copy of the elements on device @p device: across devices through peer access where the
    /// two allow it, else staged through pinned host memory (the same result either way). See
    /// kiln::copy() for the ordering rules.
    /// @param device the destination device.
    /// @param stream a stream of @p device the copy is queued on (its legacy default stream when
    /// omitted).
    /// @return a C-contiguous array on @p device.
    /// @throws ArgumentError, NoDeviceError, CudaError.
    Array copy_to(int device, StreamRef stream = {}) const;
    /// Whether the array is C-contiguous.
    /// @return whether the elements lie in C (row-major) order without gaps.
    bool is_c_contiguous() const noexcept;
    /// Whether the array is Fortran-contiguous.
    /// @return whether the elements lie in Fortran (column-major) order without gaps.
    bool is_f_contiguous() const noexcept;

    // Views: share memory, never copy.
    /// Same elements in a new shape; one extent may be -1. C-contiguous arrays only (others: copy
    /// first with ascontiguousarray).
    /// @param shape the new extents, with the same product (one may be -1, inferred).
    /// @return a view in the new shape.
    /// @throws ShapeError.
    Array reshape(Dims shape) const;
    /// Reverse the axes (NumPy's `.T`).
    /// @return a view with the axes reversed.
    Array transpose() const;
    /// Permute the axes.
    /// @param axes a permutation of 0 .. ndim() - 1; axis i of the result is axis `axes[i]`.
    /// @return a view with the axes permuted.
    /// @throws ArgumentError for a bad permutation.
    Array transpose(const std::vector<int>& axes) const;
    /// NumPy basic indexing: `a.slice({Slice::range(0, 10, 2), 3})` is `a[0:10:2, 3]`; missing
    /// trailing indices take everything.
    /// @param indices one Index per leading axis, at most ndim().
    /// @return a view of the selected elements; a position drops its axis.
    /// @throws ArgumentError (out of range, step 0).
    Array slice(const std::vector<Index>& indices) const;
    /// Broadcast to @p shape (stride 0 on broadcast axes).
    /// @param shape a shape this array's shape broadcasts to (NumPy rules).
    /// @return a view; along broadcast axes its elements share memory, so write to it with care.
    /// @throws ShapeError.
    Array broadcast_to(const Dims& shape) const;

    // Host copies (synchronous with respect to the host: they wait on @p stream).
    /// Copy the elements, in C order, to a host vector of the matching type.
    /// Non-contiguous arrays are gathered on the host.
    /// @tparam T the C++ type of dtype() (not bool: use copy_to_host_bytes()).
    /// @param stream the stream the copy is queued on, after the work already there.
    /// @return the elements.
    /// @throws ArgumentError on a dtype mismatch.
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
    /// @param destination host memory of at least nbytes() bytes.
    /// @param stream the stream the copy is queued on; returns when the copy is done.
    void copy_to_host_bytes(void* destination, StreamRef stream = {}) const;
    /// Overwrite the elements from @p source (nbytes() bytes, C order). The array must be
    /// C-contiguous.
    /// @param source host memory of at least nbytes() bytes, free to reuse on return.
    /// @param stream the stream the copy is queued on; returns when the copy is done.
    /// @throws ArgumentError when the array is not C-contiguous.
    void copy_from_host_bytes(const void* source, StreamRef stream = {}) const;

  private:
    friend Array empty(Dims shape, DType dtype, StreamRef stream);
    void check_host_type(DType requested) const;

    CUdeviceptr m_data = 0;
    DType m_dtype = DType::float32;
    Dims m_shape, m_strides;
    std::shared_ptr<void> m_owner;
    int m_device = -1; // the device ordinal, -1 when not recorded
};

/// Copy @p src's elements into @p dst, which may be on another device: same shape and dtype, both
/// C-contiguous. Between devices, the copy goes directly over peer access where the two devices
/// allow it (enabled once per pair and remembered), otherwise through pinned host memory; on one
/// device it is a device-to-device copy, and there the arrays may also have padded rows
/// (kiln::empty_pitched's layout: each index of the first dimension a C-contiguous row, the rows
/// in order at least a row apart), copied row by row in one 2-D copy.
///
/// Ordering: the copy is queued on @p stream, a stream of @p dst's device, after the work already
/// there. Work on @p src's device that writes @p src must be complete, or ordered before the
/// call by the caller (for example by synchronizing that device). The staged copy returns when it
/// is done; the others may return before.
/// @param dst the destination.
/// @param src the source.
/// @param stream a stream of @p dst's device; its legacy default stream when omitted.
/// @throws ArgumentError for different shapes or dtypes, or layouts other than these;
/// NoDeviceError, CudaError.
void copy(const Array& dst, const Array& src, StreamRef stream = {});

/// C-order strides in bytes for @p shape.
/// @param shape the extents.
/// @param itemsize the element size in bytes.
/// @return the strides (zero extents count as one, as in NumPy).
// NOLINTNEXTLINE(bugprone-exception-escape): resizing to another Dims' size cannot throw
Dims c_strides(const Dims& shape, std::size_t itemsize) noexcept;

/// The broadcast of several shapes (NumPy rules).
/// @param shapes the shapes.
/// @return the shape they all broadcast to.
/// @throws ShapeError naming the shapes.
Dims broadcast_shapes(std::initializer_list<Dims> shapes);
/// The broadcast of @p count shapes at @p shapes; allocates nothing unless it throws.
/// @param shapes the first of @p count shapes.
/// @param count how many shapes.
/// @return the shape they all broadcast to.
/// @throws ShapeError naming the shapes.
Dims broadcast_shapes(const Dims* shapes, std::size_t count);

// Creation. Owning arrays allocate from default_allocator() in stream order on @p stream.
/// An array of uninitialized elements, C-contiguous, allocated in stream order on @p stream.
/// @param shape the extents.
/// @param dtype the element type.
/// @param stream the stream the allocation is ordered on; the memory is freed in order on it too,
/// when the last view is gone.
/// @return the array.
/// @throws ArgumentError for a negative extent or a size over 2^63 - 1 bytes; CudaError when the
/// allocation fails.
Array empty(Dims shape, DType dtype, StreamRef stream = {});
/// An array of zeros (all bits clear), as empty() and then a memset queued on @p stream.
/// @param shape the extents.
/// @param dtype the element type.
/// @param stream the stream the allocation and the fill are ordered on.
/// @return the array.
/// @throws as empty().
Array zeros(Dims shape, DType dtype, StreamRef stream = {});
/// Every element @p value, converted to @p dtype as cast_scalar() does (integers wrap:
/// `full({3}, -1, DType::uint8)` is 255s). Integer values, float16 and bfloat16 take the template
/// overload below and stay exact (`full({3}, INT64_MAX, DType::int64)`); complex values the
/// std::complex one. Fills with cuMemsetD8/D16/D32Async where the bit pattern allows.
/// @param shape the extents.
/// @param value the value of every element.
/// @param dtype the element type.
/// @param stream the stream the allocation and the fill are ordered on.
/// @return the array.
/// @throws as empty().
Array full(Dims shape, double value, DType dtype, StreamRef stream = {});
/// full() with a complex value; a real @p dtype takes its real part, as cast_scalar() does.
/// @param shape the extents.
/// @param value the value of every element.
/// @param dtype the element type.
/// @param stream the stream the allocation and the fill are ordered on.
/// @return the array.
/// @throws as empty().
Array full(Dims shape, std::complex<double> value, DType dtype, StreamRef stream = {});

namespace detail {
/// An array of @p shape with every element the itemsize(dtype) bytes at @p element.
Array full_bytes(Dims shape, DType dtype, const void* element, StreamRef stream);
} // namespace detail

/// full() with an integer, float16 or bfloat16 value, converted exactly where @p dtype can hold it.
/// @tparam T an integer type, float16 or bfloat16.
/// @param shape the extents.
/// @param value the value of every element.
/// @param dtype the element type.
/// @param stream the stream the allocation and the fill are ordered on.
/// @return the array.
/// @throws as empty().
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
/// @param start the first value.
/// @param stop the bound, not included.
/// @param step the difference between neighbours; may be negative.
/// @param dtype the element type.
/// @param stream the stream the allocation and the fill are ordered on.
/// @return a 1-d array.
Array arange(double start, double stop, double step, DType dtype, StreamRef stream = {});
/// A C-contiguous copy of host data.
/// @param data shape.product() elements of @p dtype, in C order; free to reuse on return.
/// @param shape the extents.
/// @param dtype the element type.
/// @param stream the stream the allocation and copy are ordered on; returns when the copy is
/// done.
/// @return the array.
/// @throws ArgumentError for null @p data with a non-empty shape; as empty().
Array from_host_bytes(const void* data, Dims shape, DType dtype, StreamRef stream = {});
/// A C-contiguous copy of a host vector, in the given shape.
/// @tparam T the C++ type of an element; the dtype is dtype_of<T>().
/// @param data the elements in C order.
/// @param shape the extents; their product must be `data.size()`.
/// @param stream the stream the allocation and copy are ordered on; returns when the copy is
/// done.
/// @return the array.
/// @throws ShapeError when the sizes differ.
template <class T> Array from_host(const std::vector<T>& data, Dims shape, StreamRef stream = {}) {
    if (static_cast<std::int64_t>(data.size()) != shape.product())
        throw ShapeError("from_host: " + std::to_string(data.size()) +
                         " host elements do not fill shape " + shape.to_string());
    return from_host_bytes(data.data(), shape, dtype_of<T>(), stream);
}
/// A 1-d copy of a host vector.
/// @tparam T the C++ type of an element; the dtype is dtype_of<T>().
/// @param data the elements.
/// @param stream the stream the allocation and copy are ordered on; returns when the copy is
/// done.
/// @return the array.
template <class T> Array from_host(const std::vector<T>& data, StreamRef stream = {}) {
    return from_host_bytes(data.data(), {static_cast<std::int64_t>(data.size())}, dtype_of<T>(),
                           stream);
}

} // namespace kiln
