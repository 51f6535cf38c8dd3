#pragma once
/// @file
/// Bit-exact host conversions between float and the 16-bit float formats (round to nearest even),
/// for scalars and host data; device code uses cuda_fp16.h / cuda_bf16.h.

#include <cstdint>
#include <cstring>

namespace kiln::detail {

inline float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13); // inf or NaN
    } else if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else { // subnormal: normalize
            exponent = 127 - 15 + 1;
            while (!(mantissa & 0x400u)) {
                mantissa <<= 1;
                --exponent;
            }
            bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
        }
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline std::uint16_t float_to_half(float f) noexcept {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u) // inf or NaN (keep NaN quiet)
        return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u); // rounds to inf
    if (abs < 0x38800000u) {                                                   // subnormal or 0
        if (abs < 0x33000000u) return sign;                                    // below half the min
        const std::uint32_t exponent = abs >> 23;
        const std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
        // value / 2^-24 = mantissa * 2^(exponent - 126): shift right by 126 - exponent (>= 14).
        const std::uint32_t total_shift = 126 - exponent;
        std::uint32_t result = mantissa >> total_shift;
        const std::uint32_t remainder = mantissa & ((1u << total_shift) - 1);
        const std::uint32_t halfway = 1u << (total_shift - 1);
        if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
        return static_cast<std::uint16_t>(sign | result);
    }
    std::uint32_t result = ((abs >> 23) - 112) << 10 | ((abs >> 13) & 0x3ffu);
    const std::uint32_t remainder = abs & 0x1fffu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
    return static_cast<std::uint16_t>(sign | result);
}

inline float bfloat16_to_float(std::uint16_t b) noexcept {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline std::uint16_t float_to_bfloat16(float f) noexcept {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even
    return static_cast<std::uint16_t>(bits >> 16);
}

} // namespace kiln::detail
