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

/// A value of any dtype, held by value in 16 bytes. Its dtype is the C++ type's (dtype_of()); the
/// ready operations treat it as weak in type promotion, as NumPy does: `kiln::add(x, 1.0)` keeps a
/// float32 array's type.
class Scalar {
  public:
    /// A value of a C++ arithmetic type.
    /// @tparam T bool, an integer type, float or double.
    /// @param value the value.
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    Scalar(T value) noexcept // NOLINT(google-explicit-constructor): `Scalar s = 2.0;`
        : m_dtype(dtype_of<T>()) {
        std::memcpy(m_bytes, &value, sizeof value);
    }
    /// A complex value.
    /// @tparam T float or double.
    /// @param value the value.
    template <class T>
    Scalar(std::complex<T> value) noexcept // NOLINT(google-explicit-constructor): as Scalar(T)
        : m_dtype(dtype_of<std::complex<T>>()) {
        std::memcpy(m_bytes, &value, sizeof value);
    }
    /// A float16 value.
    /// @param value the value.
    Scalar(float16 value) noexcept // NOLINT(google-explicit-constructor): as Scalar(T)
        : m_dtype(DType::float16) {
        std::memcpy(m_bytes, &value, 2);
    }
    /// A bfloat16 value.
    /// @param value the value.
    Scalar(bfloat16 value) noexcept // NOLINT(google-explicit-constructor): as Scalar(T)
        : m_dtype(DType::bfloat16) {
        std::memcpy(m_bytes, &value, 2);
    }

    /// The value's dtype.
    /// @return the value's dtype.
    DType dtype() const noexcept { return m_dtype; }
    /// The value's bytes.
    /// @return the value's bytes (itemsize(dtype()) of them are meaningful), 16-byte aligned.
    const unsigned char* bytes() const noexcept { return m_bytes; }

    /// The value converted to @p target as C++ converts (integers wrap modulo 2^n; floating to
    /// integer truncates, saturating where C++ leaves it undefined; NaN to integer gives 0).
    /// Writes itemsize(target) bytes to @p out.
    /// @param target the dtype to convert to.
    /// @param out itemsize(target) bytes of host memory.
    void cast_to(DType target, void* out) const noexcept;

  private:
    DType m_dtype;
    alignas(16) unsigned char m_bytes[16] = {};
};

} // namespace kiln
