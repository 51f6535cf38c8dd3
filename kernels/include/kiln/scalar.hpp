#pragma once
/// @file
/// A host scalar with its dtype, as passed to generated kernels (cast to the parameter's type).

#include "kiln/dtype.hpp"

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln {

class Scalar {
  public:
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    Scalar(T value) noexcept // NOLINT: implicit by design
        : m_dtype(dtype_of<T>()) {
        std::memcpy(m_bytes, &value, sizeof value);
    }
    template <class T>
    Scalar(std::complex<T> value) noexcept // NOLINT: implicit by design
        : m_dtype(dtype_of<std::complex<T>>()) {
        std::memcpy(m_bytes, &value, sizeof value);
    }
    Scalar(float16 value) noexcept
        : m_dtype(DType::float16) {
        std::memcpy(m_bytes, &value, 2);
    }
    Scalar(bfloat16 value) noexcept
        : m_dtype(DType::bfloat16) {
        std::memcpy(m_bytes, &value, 2);
    }

    DType dtype() const noexcept { return m_dtype; }
    const unsigned char* bytes() const noexcept { return m_bytes; }

    /// The value converted to @p target as C++ converts (integers wrap modulo 2^n; floating to
    /// integer truncates, saturating where C++ leaves it undefined; NaN to integer gives 0).
    /// Writes itemsize(target) bytes to @p out.
    void cast_to(DType target, void* out) const noexcept;

  private:
    DType m_dtype;
    alignas(16) unsigned char m_bytes[16] = {};
};

} // namespace kiln
