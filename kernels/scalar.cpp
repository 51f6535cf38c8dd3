#include "kiln/scalar.hpp"

#include "kiln/detail/half.hpp"

#include <cmath>
#include <limits>

namespace kiln {

namespace {

// A value in the widest type of its kind, so every conversion goes through one switch.
struct Wide {
    enum { sint, uint, real, cplx } kind;
    std::int64_t s = 0;
    std::uint64_t u = 0;
    double re = 0, im = 0;
};

template <class T> T load(const unsigned char* bytes) {
    T v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
}

Wide widen(DType d, const unsigned char* b) {
    switch (d) {
    case DType::bool_:
        return {Wide::uint, 0, static_cast<std::uint64_t>(load<bool>(b))};
    case DType::int8:
        return {Wide::sint, load<std::int8_t>(b)};
    case DType::int16:
        return {Wide::sint, load<std::int16_t>(b)};
    case DType::int32:
        return {Wide::sint, load<std::int32_t>(b)};
    case DType::int64:
        return {Wide::sint, load<std::int64_t>(b)};
    case DType::uint8:
        return {Wide::uint, 0, load<std::uint8_t>(b)};
    case DType::uint16:
        return {Wide::uint, 0, load<std::uint16_t>(b)};
    case DType::uint32:
        return {Wide::uint, 0, load<std::uint32_t>(b)};
    case DType::uint64:
        return {Wide::uint, 0, load<std::uint64_t>(b)};
    case DType::float16:
        return {Wide::real, 0, 0, detail::half_to_float(load<std::uint16_t>(b))};
    case DType::bfloat16:
        return {Wide::real, 0, 0, detail::bfloat16_to_float(load<std::uint16_t>(b))};
    case DType::float32:
        return {Wide::real, 0, 0, load<float>(b)};
    case DType::float64:
        return {Wide::real, 0, 0, load<double>(b)};
    case DType::complex64:
        return {Wide::cplx, 0, 0, load<float>(b), load<float>(b + 4)};
    case DType::complex128:
        return {Wide::cplx, 0, 0, load<double>(b), load<double>(b + 8)};
    }
    return {};
}

// Floating to integer: truncation toward zero, saturating out of range (C++ leaves it undefined).
template <class I> I saturate(double v) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<I>::lowest()))
        return std::numeric_limits<I>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<I>::max()))
        return std::numeric_limits<I>::max();
    return static_cast<I>(v);
}

template <class I> I to_integer(const Wide& w) {
    switch (w.kind) {
    case Wide::sint:
        return static_cast<I>(w.s); // modulo 2^n, as C++20 defines it
    case Wide::uint:
        return static_cast<I>(w.u);
    default:
        return saturate<I>(w.re);
    }
}

double to_double(const Wide& w) {
    switch (w.kind) {
    case Wide::sint:
        return static_cast<double>(w.s);
    case Wide::uint:
        return static_cast<double>(w.u);
    default:
        return w.re;
    }
}

template <class T> void store(void* out, T v) {
    std::memcpy(out, &v, sizeof v);
}

} // namespace

void Scalar::cast_to(DType target, void* out) const noexcept {
    const Wide w = widen(m_dtype, m_bytes);
    switch (target) {
    case DType::bool_:
        store(out, w.kind == Wide::cplx   ? (w.re != 0 || w.im != 0)
                   : w.kind == Wide::real ? w.re != 0
                   : w.kind == Wide::sint ? w.s != 0
                                          : w.u != 0);
        return;
    case DType::int8:
        store(out, to_integer<std::int8_t>(w));
        return;
    case DType::int16:
        store(out, to_integer<std::int16_t>(w));
        return;
    case DType::int32:
        store(out, to_integer<std::int32_t>(w));
        return;
    case DType::int64:
        store(out, to_integer<std::int64_t>(w));
        return;
    case DType::uint8:
        store(out, to_integer<std::uint8_t>(w));
        return;
    case DType::uint16:
        store(out, to_integer<std::uint16_t>(w));
        return;
    case DType::uint32:
        store(out, to_integer<std::uint32_t>(w));
        return;
    case DType::uint64:
        store(out, to_integer<std::uint64_t>(w));
        return;
    case DType::float16:
        store(out, detail::float_to_half(static_cast<float>(to_double(w))));
        return;
    case DType::bfloat16:
        store(out, detail::float_to_bfloat16(static_cast<float>(to_double(w))));
        return;
    case DType::float32:
        store(out, static_cast<float>(to_double(w)));
        return;
    case DType::float64:
        store(out, to_double(w));
        return;
    case DType::complex64:
        store(out, static_cast<float>(to_double(w)));
        store(static_cast<unsigned char*>(out) + 4, static_cast<float>(w.im));
        return;
    case DType::complex128:
        store(out, to_double(w));
        store(static_cast<unsigned char*>(out) + 8, w.im);
        return;
    }
}

} // namespace kiln
