#include "kiln/scalar.hpp"

#include <complex>

namespace kiln {

namespace {

template <class T> T load(const unsigned char* bytes) {
    T v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
}

} // namespace

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
