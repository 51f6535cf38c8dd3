#pragma once
/// @file
/// What a call of a generated kernel (ElementwiseKernel, ReductionKernel) takes and gives: its
/// arguments (Arg), its results (Outputs) and ElementwiseKernel's per-call settings (CallOptions).

#include "kiln/array.hpp"
#include "kiln/scalar.hpp"
#include "kiln/stream.hpp"
#include "kiln/surface.hpp"
#include "kiln/texture.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace kiln {

/// Per-call settings.
struct CallOptions {
    /// The stream the call's allocations and launch are ordered on.
    StreamRef stream;
    /// Number of elements when every array is `raw` (CuPy's `size=`).
    std::optional<std::int64_t> size;
    /// Threads per block; unset chooses. 0 or over 1024 is an ArgumentError.
    std::optional<int> block_size;
    /// Tune the launch configuration of this call (kiln/tuning.hpp); a call that gives
    /// block_size is never tuned.
    bool tune = false;
    /// The device the call runs on (its primary context is current for the call, as with a
    /// DeviceGuard); unset: the current context's. Every array given must be on it.
    std::optional<int> device;
};

/// One argument of a call: an array, a scalar, or a texture or surface (passed as its 64-bit
/// handle). An Arg refers to its array, it does not copy it: the array must outlive the call (an
/// Arg made from a temporary Array dangles once the full expression ends).
class Arg {
  public:
    /// What a scalar argument holds: a number, or a texture's or surface's handle.
    enum class Handle : std::uint8_t { none, texture, surface };
    /// An array argument.
    /// @param array the array, held by reference.
    Arg(const Array& array) noexcept // NOLINT(google-explicit-constructor): `kernel(x, 2)`
        : m_array(&array)
        , m_scalar(0) {}
    /// A scalar argument.
    /// @param scalar the value with its dtype.
    Arg(Scalar scalar) noexcept // NOLINT(google-explicit-constructor): `kernel(x, 2)`
        : m_array(nullptr)
        , m_scalar(scalar) {}
    /// A scalar argument from a C++ number; its dtype is dtype_of<T>().
    /// @tparam T an arithmetic type.
    /// @param value the value.
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    Arg(T value) noexcept // NOLINT(google-explicit-constructor): `kernel(x, 2)`
        : m_array(nullptr)
        , m_scalar(value) {}
    /// A texture argument, for a `cudaTextureObject_t` parameter or a placeholder that only
    /// textures bind (to uint64, the handle's type). The texture must outlive the work.
    /// @param texture the texture.
    Arg(const Texture& texture) noexcept // NOLINT(google-explicit-constructor): `kernel(tex, x)`
        : m_array(nullptr)
        , m_handle(Handle::texture)
        , m_scalar(std::uint64_t{texture.get()}) {}
    /// A surface argument, for a `cudaSurfaceObject_t` parameter (or a placeholder, as a texture).
    /// @param surface the surface.
    Arg(const Surface& surface) noexcept // NOLINT(google-explicit-constructor): as a texture
        : m_array(nullptr)
        , m_handle(Handle::surface)
        , m_scalar(std::uint64_t{surface.get()}) {}
    /// Whether this is an array.
    /// @return whether this is an array (else a scalar).
    bool is_array() const noexcept { return m_array != nullptr; }
    /// The array.
    /// @return the array; only when is_array().
    const Array& array() const noexcept { return *m_array; }
    /// The scalar.
    /// @return the scalar; only when not is_array().
    const Scalar& scalar() const noexcept { return m_scalar; }
    /// Whether this scalar is a texture's or surface's handle.
    /// @return the kind of handle, or Handle::none.
    Handle handle() const noexcept { return m_handle; }

  private:
    const Array* m_array;
    Handle m_handle = Handle::none;
    Scalar m_scalar;
};

/// The outputs of a call, in the order of the output parameters. Converts to Array when there is
/// exactly one.
class Outputs {
  public:
    /// The most outputs a kernel may declare (a kernel with more is refused when it is made).
    static constexpr std::size_t kCapacity = 8;

    /// The number of outputs.
    /// @return the number of outputs.
    std::size_t size() const noexcept { return m_count; }
    /// Output @p i.
    /// @param i the index, below kCapacity (an index past size() gives an empty Array).
    /// @return the output.
    /// @throws std::out_of_range for @p i of kCapacity or more.
    const Array& operator[](std::size_t i) const { return m_arrays.at(i); }
    /// Output @p i, writable.
    /// @param i the index, below kCapacity.
    /// @return the output.
    /// @throws std::out_of_range for @p i of kCapacity or more.
    Array& operator[](std::size_t i) { return m_arrays.at(i); }
    /// The single output. @throws ArgumentError when there is not exactly one.
    operator Array() const; // NOLINT(google-explicit-constructor): `Array z = kernel(x, y);`
    /// Append an output (the front ends do, in the order of the output parameters).
    /// @param array the output.
    /// @throws ArgumentError beyond kCapacity outputs.
    void push_back(Array array);

  private:
    std::array<Array, kCapacity> m_arrays;
    std::size_t m_count = 0;
};

} // namespace kiln
