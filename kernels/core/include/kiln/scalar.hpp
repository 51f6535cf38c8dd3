#pragma once
/// @file
/// A host scalar with its dtype, as passed to generated kernels (cast to the parameter's type).
/// Calls of ElementwiseKernel, ReductionKernel and the ready operations take scalars through Arg,
/// which makes a Scalar from any C++ number.

#include "kiln/dtype.hpp"

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln {

/// Whether a C++ type stands for one of Python's scalars and so is *weak* in type promotion, as
/// NumPy 2 (NEP 50) treats Python's `int`, `float`, `bool` and `complex`: `bool`, `int`, `long`,
/// `long long`, `double` and `std::complex<double>`. On Linux `std::int32_t` is `int` and
/// `std::int64_t` is `long`, so they are weak too. Every other type (`std::int8_t`, `short`,
/// the unsigned types, `char`, `float`, `std::complex<float>`, float16, bfloat16) is *strong*, as
/// a NumPy scalar is.
/// @tparam T the C++ type.
template <class T>
inline constexpr bool is_weak_scalar_v =
    std::is_same_v<T, bool> || std::is_same_v<T, int> || std::is_same_v<T, long> ||
    std::is_same_v<T, long long> || std::is_same_v<T, double> ||
    std::is_same_v<T, std::complex<double>>;

/// A value of any dtype, held by value in 16 bytes, weak or strong in type promotion. Made from a
/// C++ number, its dtype is the C++ type's (dtype_of()) and its weakness is is_weak_scalar_v: the
/// ready operations let a weak scalar take the array's type, as NumPy 2 does with Python scalars
/// (`kiln::add(x, 1.0)` keeps a float32 array's type), and promote a strong one as NumPy promotes
/// a NumPy scalar (a uint64 array plus an `std::int8_t` gives float64). Made with an explicit
/// dtype, it is strong. Wherever a scalar is converted to an integer type (a kernel parameter, an
/// operation's type), the value must fit: else the call throws OverflowError.
class Scalar {
  public:
    /// A value of a C++ arithmetic type.
    /// @tparam T bool, an integer type, float or double.
    /// @param value the value.
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    Scalar(T value) noexcept // NOLINT(google-explicit-constructor): `Scalar s = 2.0;`
        : m_dtype(dtype_of<T>())
        , m_weak(is_weak_scalar_v<T>) {
        std::memcpy(m_bytes, &value, sizeof value);
    }
    /// A complex value.
    /// @tparam T float or double.
    /// @param value the value.
    template <class T>
    Scalar(std::complex<T> value) noexcept // NOLINT(google-explicit-constructor): as Scalar(T)
        : m_dtype(dtype_of<std::complex<T>>())
        , m_weak(is_weak_scalar_v<std::complex<T>>) {
        std::memcpy(m_bytes, &value, sizeof value);
    }
    /// A float16 value (strong).
    /// @param value the value.
    Scalar(float16 value) noexcept // NOLINT(google-explicit-constructor): as Scalar(T)
        : m_dtype(DType::float16) {
        std::memcpy(m_bytes, &value, 2);
    }
    /// A bfloat16 value (strong).
    /// @param value the value.
    Scalar(bfloat16 value) noexcept // NOLINT(google-explicit-constructor): as Scalar(T)
        : m_dtype(DType::bfloat16) {
        std::memcpy(m_bytes, &value, 2);
    }
    /// A strong scalar of @p dtype, as NumPy's `numpy.int8(5)`: `kiln::Scalar(5, DType::int8)`.
    /// @param value the value, converted to @p dtype.
    /// @param dtype the scalar's dtype.
    /// @throws OverflowError when @p dtype is an integer type that cannot hold @p value.
    Scalar(Scalar value, DType dtype);

    /// The value's dtype.
    /// @return the value's dtype.
    DType dtype() const noexcept { return m_dtype; }
    /// Whether the scalar is weak (takes an array's type in the ready operations).
    /// @return true for a scalar made from a type of is_weak_scalar_v.
    bool is_weak() const noexcept { return m_weak; }
    /// The value's bytes.
    /// @return the value's bytes (itemsize(dtype()) of them are meaningful), 16-byte aligned.
    const unsigned char* bytes() const noexcept { return m_bytes; }

    /// The value converted to @p target as C++ converts (integers wrap modulo 2^n; floating to
    /// integer truncates, saturating where C++ leaves it undefined; NaN to integer gives 0).
    /// Writes itemsize(target) bytes to @p out.
    /// @param target the dtype to convert to.
    /// @param out itemsize(target) bytes of host memory.
    void cast_to(DType target, void* out) const noexcept;

    /// Whether converting to @p target keeps the value, NumPy 2's test before it raises
    /// OverflowError: for an integer @p target, an integer value must lie in its range and a
    /// floating one (a complex one's real part) must be finite with its truncation in range. Any
    /// value fits bool and the floating and complex types (rounding, or infinity, as NumPy
    /// gives). Allocates nothing.
    /// @param target the dtype to convert to.
    /// @return whether the value fits.
    bool fits(DType target) const noexcept;

  private:
    DType m_dtype;
    bool m_weak = false;
    alignas(16) unsigned char m_bytes[16] = {};
};

} // namespace kiln
