#include "kiln/scalar.hpp"

#include "kiln/error.hpp"
#include "scalar_overflow.hpp"

#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <string>

namespace kiln {

namespace {

template <class T> T load(const unsigned char* bytes) {
    T v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
}

// The range of an integer dtype, as int64 (low) and uint64 (high) bounds.
struct IntegerRange {
    std::int64_t low;
    std::uint64_t high;
};

IntegerRange range_of(DType d) noexcept {
    switch (d) {
    case DType::int8:
        return {INT8_MIN, INT8_MAX};
    case DType::int16:
        return {INT16_MIN, INT16_MAX};
    case DType::int32:
        return {INT32_MIN, INT32_MAX};
    case DType::int64:
        return {INT64_MIN, INT64_MAX};
    case DType::uint8:
        return {0, UINT8_MAX};
    case DType::uint16:
        return {0, UINT16_MAX};
    case DType::uint32:
        return {0, UINT32_MAX};
    default:
        return {0, UINT64_MAX};
    }
}

bool double_fits(double v, IntegerRange r) noexcept {
    if (!std::isfinite(v)) return false;
    const double t = std::trunc(v);
    // 2^64 and -2^63 are exact doubles; the upper bound is exclusive past 2^53, where the largest
    // value of a 64-bit type rounds up to a power of two that does not fit.
    const double high = r.high == UINT64_MAX  ? 18446744073709551616.0
                        : r.high == INT64_MAX ? 9223372036854775808.0
                                              : static_cast<double>(r.high) + 1;
    return t >= static_cast<double>(r.low) && t < high;
}

double real_value(DType d, const unsigned char* b) noexcept {
    switch (d) {
    case DType::float16:
        return to_double(load<float16>(b));
    case DType::bfloat16:
        return to_double(load<bfloat16>(b));
    case DType::float32:
        return load<float>(b);
    case DType::complex64:
        return load<std::complex<float>>(b).real();
    case DType::complex128:
        return load<std::complex<double>>(b).real();
    default:
        return load<double>(b);
    }
}

std::int64_t signed_value(DType d, const unsigned char* b) noexcept {
    switch (d) {
    case DType::int8:
        return load<std::int8_t>(b);
    case DType::int16:
        return load<std::int16_t>(b);
    case DType::int32:
        return load<std::int32_t>(b);
    default:
        return load<std::int64_t>(b);
    }
}

std::uint64_t unsigned_value(DType d, const unsigned char* b) noexcept {
    switch (d) {
    case DType::uint8:
        return load<std::uint8_t>(b);
    case DType::uint16:
        return load<std::uint16_t>(b);
    case DType::uint32:
        return load<std::uint32_t>(b);
    default:
        return load<std::uint64_t>(b);
    }
}

std::string value_text(const Scalar& s) {
    char text[96];
    const unsigned char* b = s.bytes();
    if (is_bool(s.dtype())) return load<bool>(b) ? "true" : "false";
    if (is_signed_integer(s.dtype())) return std::to_string(signed_value(s.dtype(), b));
    if (is_unsigned_integer(s.dtype())) return std::to_string(unsigned_value(s.dtype(), b));
    if (is_complex(s.dtype())) {
        std::complex<double> c;
        s.cast_to(DType::complex128, &c);
        std::snprintf(text, sizeof text, "(%.17g%+.17gj)", c.real(), c.imag());
        return text;
    }
    std::snprintf(text, sizeof text, "%.17g", real_value(s.dtype(), b));
    return text;
}

} // namespace

Scalar::Scalar(Scalar value, DType dtype)
    : m_dtype(dtype) {
    if (!value.fits(dtype))
        detail::throw_overflow(value, dtype, "kiln::Scalar", "the scalar made with a dtype");
    value.cast_to(dtype, m_bytes);
}

bool Scalar::fits(DType target) const noexcept {
    if (!is_integer(target)) return true;
    const IntegerRange r = range_of(target);
    if (is_bool(m_dtype)) return true;
    if (is_signed_integer(m_dtype)) {
        const std::int64_t v = signed_value(m_dtype, m_bytes);
        return v >= r.low && (v < 0 || static_cast<std::uint64_t>(v) <= r.high);
    }
    if (is_unsigned_integer(m_dtype)) return unsigned_value(m_dtype, m_bytes) <= r.high;
    return double_fits(real_value(m_dtype, m_bytes), r);
}

namespace detail {

void throw_overflow(const Scalar& value, DType target, std::string_view who, std::string_view what,
                    std::string_view name) {
    const IntegerRange r = range_of(target);
    std::string message(who);
    message += ": ";
    message += what;
    if (!name.empty()) {
        message += " '";
        message += name;
        message += '\'';
    }
    message += std::string(" of type ") + kiln::name(target) + " cannot hold the " +
               (value.is_weak() ? "weak " : "strong ") + kiln::name(value.dtype()) + " scalar " +
               value_text(value) + " (its range is [" + std::to_string(r.low) + ", " +
               std::to_string(r.high) +
               "]; NumPy 2 raises OverflowError too): pass a value that fits, or convert the "
               "array to a wider type";
    throw OverflowError(message);
}

} // namespace detail

// The conversions themselves are the runtime's (kiln::cast_scalar), shared with full() and
// arange(): read the value in its own type, then convert once.
void Scalar::cast_to(DType target, void* out) const noexcept {
    const unsigned char* b = m_bytes;
    switch (m_dtype) {
    case DType::bool_:
        return cast_scalar(load<bool>(b), target, out);
    case DType::int8:
        return cast_scalar(load<std::int8_t>(b), target, out);
    case DType::int16:
        return cast_scalar(load<std::int16_t>(b), target, out);
    case DType::int32:
        return cast_scalar(load<std::int32_t>(b), target, out);
    case DType::int64:
        return cast_scalar(load<std::int64_t>(b), target, out);
    case DType::uint8:
        return cast_scalar(load<std::uint8_t>(b), target, out);
    case DType::uint16:
        return cast_scalar(load<std::uint16_t>(b), target, out);
    case DType::uint32:
        return cast_scalar(load<std::uint32_t>(b), target, out);
    case DType::uint64:
        return cast_scalar(load<std::uint64_t>(b), target, out);
    case DType::float16:
        return cast_scalar(load<float16>(b), target, out);
    case DType::bfloat16:
        return cast_scalar(load<bfloat16>(b), target, out);
    case DType::float32:
        return cast_scalar(load<float>(b), target, out);
    case DType::float64:
        return cast_scalar(load<double>(b), target, out);
    case DType::complex64:
        return detail::cast_scalar_complex(std::complex<double>(load<std::complex<float>>(b)),
                                           target, out);
    case DType::complex128:
        return detail::cast_scalar_complex(load<std::complex<double>>(b), target, out);
    }
}

} // namespace kiln
