#include "kiln/dtype.hpp"

#include "kiln/error.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace kiln {

namespace {

struct Info {
    std::size_t itemsize;
    const char* name;
    const char* cuda_type;
};

constexpr Info kInfo[kDTypeCount] = {
    {1, "bool", "bool"},
    {1, "int8", "signed char"},
    {2, "int16", "short"},
    {4, "int32", "int"},
    {8, "int64", "long long"},
    {1, "uint8", "unsigned char"},
    {2, "uint16", "unsigned short"},
    {4, "uint32", "unsigned int"},
    {8, "uint64", "unsigned long long"},
    {2, "float16", "__half"},
    {2, "bfloat16", "__nv_bfloat16"},
    {4, "float32", "float"},
    {8, "float64", "double"},
    {8, "complex64", "kiln::complex<float>"},
    {16, "complex128", "kiln::complex<double>"},
};

const Info& info(DType d) noexcept {
    return kInfo[static_cast<int>(d)];
}

struct Alias {
    const char* text;
    DType dtype;
};

// NumPy's names and aliases (on LP64 Linux, where "int", "long" and "intp" are 64-bit and "float"
// is float64), its one-character codes and sized codes, and the C/C++ names generated code uses.
// C's "float" and "int" mean float32 and int32 there: NumPy's meaning wins, as in np.dtype().
constexpr Alias kAliases[] = {
    // NumPy's named aliases.
    {"bool_", DType::bool_},
    {"byte", DType::int8},
    {"short", DType::int16},
    {"intc", DType::int32},
    {"int", DType::int64},
    {"int_", DType::int64},
    {"intp", DType::int64},
    {"long", DType::int64},
    {"longlong", DType::int64},
    {"ubyte", DType::uint8},
    {"ushort", DType::uint16},
    {"uintc", DType::uint32},
    {"uint", DType::uint64},
    {"uintp", DType::uint64},
    {"ulong", DType::uint64},
    {"ulonglong", DType::uint64},
    {"half", DType::float16},
    {"single", DType::float32},
    {"float", DType::float64},
    {"double", DType::float64},
    {"csingle", DType::complex64},
    {"complex", DType::complex128},
    {"cdouble", DType::complex128},
    // One-character and sized codes.
    {"?", DType::bool_},
    {"b1", DType::bool_},
    {"b", DType::int8},
    {"i1", DType::int8},
    {"h", DType::int16},
    {"i2", DType::int16},
    {"i", DType::int32},
    {"i4", DType::int32},
    {"l", DType::int64},
    {"q", DType::int64},
    {"i8", DType::int64},
    {"B", DType::uint8},
    {"u1", DType::uint8},
    {"H", DType::uint16},
    {"u2", DType::uint16},
    {"I", DType::uint32},
    {"u4", DType::uint32},
    {"L", DType::uint64},
    {"Q", DType::uint64},
    {"u8", DType::uint64},
    {"e", DType::float16},
    {"f2", DType::float16},
    {"f", DType::float32},
    {"f4", DType::float32},
    {"d", DType::float64},
    {"f8", DType::float64},
    {"F", DType::complex64},
    {"c8", DType::complex64},
    {"D", DType::complex128},
    {"c16", DType::complex128},
    // C and CUDA names.
    {"signed char", DType::int8},
    {"int8_t", DType::int8},
    {"int16_t", DType::int16},
    {"short int", DType::int16},
    {"int32_t", DType::int32},
    {"long long", DType::int64},
    {"long long int", DType::int64},
    {"int64_t", DType::int64},
    {"unsigned char", DType::uint8},
    {"uint8_t", DType::uint8},
    {"unsigned short", DType::uint16},
    {"uint16_t", DType::uint16},
    {"unsigned int", DType::uint32},
    {"unsigned", DType::uint32},
    {"uint32_t", DType::uint32},
    {"unsigned long", DType::uint64},
    {"unsigned long long", DType::uint64},
    {"uint64_t", DType::uint64},
    {"__half", DType::float16},
    {"__nv_bfloat16", DType::bfloat16},
    {"complex<float>", DType::complex64},
    {"complex<double>", DType::complex128},
    {"kiln::complex<float>", DType::complex64},
    {"kiln::complex<double>", DType::complex128},
};

// Collapse runs of blanks to one space and trim, so "unsigned  int " reads as "unsigned int".
std::string normalize_blanks(std::string_view text) {
    std::string out;
    bool blank = false;
    for (char c : text) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            blank = !out.empty();
            continue;
        }
        if (blank) out += ' ';
        blank = false;
        out += c;
    }
    return out;
}

int integer_bits(DType d) noexcept {
    return static_cast<int>(itemsize(d) * 8);
}

DType signed_of_bits(int bits) noexcept {
    switch (bits) {
    case 8:
        return DType::int8;
    case 16:
        return DType::int16;
    case 32:
        return DType::int32;
    default:
        return DType::int64;
    }
}

// Both floating: equal kinds stay, float16 with bfloat16 needs float32, otherwise the wider.
DType promote_floats(DType a, DType b) noexcept {
    if (a == b) return a;
    if (itemsize(a) == 2 && itemsize(b) == 2) return DType::float32;
    return itemsize(a) >= itemsize(b) ? a : b;
}

// Integer with floating: 8-bit integers fit any 16-bit float, 16-bit ones need float32, wider
// ones float64 (NumPy's rule for float16, ml_dtypes' for bfloat16).
DType promote_integer_float(DType integer, DType floating) noexcept {
    const int bits = integer_bits(integer);
    if (bits == 8) return floating;
    const DType needed = bits == 16 ? DType::float32 : DType::float64;
    return itemsize(floating) >= itemsize(needed) ? floating : needed;
}

// The complex type holding @p d exactly enough: complex64 for float16/bfloat16/float32 and
// integers up to 16 bits, complex128 otherwise.
DType complex_for(DType d) noexcept {
    if (is_complex(d)) return d;
    if (is_floating(d)) return d == DType::float64 ? DType::complex128 : DType::complex64;
    return integer_bits(d) <= 16 ? DType::complex64 : DType::complex128;
}

// ---- 16-bit floats: round to nearest even from an exact value sign * m * 2^e ----

struct Format16 {
    int mantissa_bits; // 10 for float16, 7 for bfloat16
    int exponent_bias; // 15 or 127
};
constexpr Format16 kHalf{10, 15};
constexpr Format16 kBfloat{7, 127};

int highest_bit(std::uint64_t m) noexcept {
    return 63 - __builtin_clzll(m);
}

// Round sign * m * 2^e (m > 0) to the 16-bit format, to nearest with ties to even; overflow gives
// infinity, underflow a subnormal or zero.
std::uint16_t round_to_16(bool negative, std::uint64_t m, int e, Format16 f) noexcept {
    const std::uint16_t sign = negative ? 0x8000 : 0;
    const int p = f.mantissa_bits;
    const int emax = f.exponent_bias;
    const int emin = 1 - f.exponent_bias;
    const std::uint32_t infinity = static_cast<std::uint32_t>(2 * f.exponent_bias + 1) << p;
    const int exponent = highest_bit(m) + e; // value in [2^exponent, 2^(exponent + 1))
    if (exponent > emax + 1) return static_cast<std::uint16_t>(sign | infinity);
    const bool normal = exponent >= emin;
    const int quantum = (normal ? exponent : emin) - p; // exponent of the last kept bit
    // n = m * 2^(e - quantum), rounded to an integer.
    std::uint64_t n = 0;
    const int shift = quantum - e;
    if (shift <= 0) {
        n = m << -shift; // exact; exponent <= emax + 1 keeps it within p + 2 bits
    } else if (shift <= 64) {
        const std::uint64_t kept = shift == 64 ? 0 : m >> shift;
        const std::uint64_t rest = shift == 64 ? m : m & ((std::uint64_t{1} << shift) - 1);
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        n = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
    }
    // A subnormal's bits are n itself (n == 2^p is the smallest normal); a normal's carry from
    // rounding flows into the exponent field.
    const std::uint32_t bits =
        normal ? (static_cast<std::uint32_t>(exponent + f.exponent_bias - 1) << p) +
                     static_cast<std::uint32_t>(n)
               : static_cast<std::uint32_t>(n);
    if (bits >= infinity) return static_cast<std::uint16_t>(sign | infinity);
    return static_cast<std::uint16_t>(sign | bits);
}

std::uint16_t double_to_16(double value, Format16 f) noexcept {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    const bool negative = bits >> 63;
    const std::uint16_t sign = negative ? 0x8000 : 0;
    const int exponent_field = static_cast<int>((bits >> 52) & 0x7ff);
    const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
    const int p = f.mantissa_bits;
    const std::uint32_t exponent_ones = static_cast<std::uint32_t>(2 * f.exponent_bias + 1) << p;
    if (exponent_field == 0x7ff) {
        if (fraction == 0) return static_cast<std::uint16_t>(sign | exponent_ones);
        // NaN: keep the top payload bits and set the quiet bit.
        const auto payload = static_cast<std::uint32_t>(fraction >> (52 - p));
        return static_cast<std::uint16_t>(sign | exponent_ones | payload |
                                          (std::uint32_t{1} << (p - 1)));
    }
    if (exponent_field == 0 && fraction == 0) return sign;
    const std::uint64_t m = exponent_field ? fraction | (std::uint64_t{1} << 52) : fraction;
    const int e = (exponent_field ? exponent_field : 1) - 1075;
    return round_to_16(negative, m, e, f);
}

double from_16(std::uint16_t bits, Format16 f) noexcept {
    const int p = f.mantissa_bits;
    const bool negative = bits & 0x8000;
    const int exponent_field = (bits & 0x7fff) >> p;
    const int fraction = bits & ((1 << p) - 1);
    const int max_field = 2 * f.exponent_bias + 1;
    double magnitude = 0;
    if (exponent_field == max_field)
        magnitude = fraction ? std::numeric_limits<double>::quiet_NaN()
                             : std::numeric_limits<double>::infinity();
    else if (exponent_field == 0)
        magnitude = std::ldexp(static_cast<double>(fraction), 1 - f.exponent_bias - p);
    else
        magnitude = std::ldexp(static_cast<double>(fraction | (1 << p)),
                               exponent_field - f.exponent_bias - p);
    return negative ? -magnitude : magnitude;
}

std::uint16_t integer_to_16(bool negative, std::uint64_t magnitude, Format16 f) noexcept {
    if (magnitude == 0) return 0;
    return round_to_16(negative, magnitude, 0, f);
}

// ---- scalar casts ----

template <class T> void store(void* out, T value) noexcept {
    std::memcpy(out, &value, sizeof value);
}

// Integer destinations take the low bits of the two's-complement value (C++'s conversion).
void store_integer_bits(std::uint64_t bits, DType dtype, void* out) noexcept {
    switch (itemsize(dtype)) {
    case 1:
        store(out, static_cast<std::uint8_t>(bits));
        break;
    case 2:
        store(out, static_cast<std::uint16_t>(bits));
        break;
    case 4:
        store(out, static_cast<std::uint32_t>(bits));
        break;
    default:
        store(out, bits);
        break;
    }
}

void cast_integer(bool negative, std::uint64_t magnitude, DType dtype, void* out) noexcept {
    const std::uint64_t bits = negative ? std::uint64_t{0} - magnitude : magnitude;
    switch (dtype) {
    case DType::bool_:
        store(out, magnitude != 0);
        return;
    case DType::float16:
        store(out, float16{integer_to_16(negative, magnitude, kHalf)});
        return;
    case DType::bfloat16:
        store(out, bfloat16{integer_to_16(negative, magnitude, kBfloat)});
        return;
    case DType::float32:
    case DType::complex64: {
        // Through long double, which holds every 64-bit integer exactly: one rounding only.
        const long double exact =
            negative ? -static_cast<long double>(magnitude) : static_cast<long double>(magnitude);
        store(out, static_cast<float>(exact));
        if (dtype == DType::complex64) store(static_cast<char*>(out) + 4, 0.0f);
        return;
    }
    case DType::float64:
    case DType::complex128: {
        const long double exact =
            negative ? -static_cast<long double>(magnitude) : static_cast<long double>(magnitude);
        store(out, static_cast<double>(exact));
        if (dtype == DType::complex128) store(static_cast<char*>(out) + 8, 0.0);
        return;
    }
    default:
        store_integer_bits(bits, dtype, out);
        return;
    }
}

template <class I> I saturate(double value) noexcept {
    if (std::isnan(value)) return 0;
    if (value <= static_cast<double>(std::numeric_limits<I>::lowest()))
        return std::numeric_limits<I>::lowest();
    if (value >= static_cast<double>(std::numeric_limits<I>::max()))
        return std::numeric_limits<I>::max();
    return static_cast<I>(value);
}

void cast_real(double value, DType dtype, void* out) noexcept {
    switch (dtype) {
    case DType::bool_:
        store(out, value != 0);
        return;
    case DType::float16:
        store(out, to_float16(value));
        return;
    case DType::bfloat16:
        store(out, to_bfloat16(value));
        return;
    case DType::float32:
        store(out, static_cast<float>(value));
        return;
    case DType::float64:
        store(out, value);
        return;
    case DType::complex64:
        store(out, static_cast<float>(value));
        store(static_cast<char*>(out) + 4, 0.0f);
        return;
    case DType::complex128:
        store(out, value);
        store(static_cast<char*>(out) + 8, 0.0);
        return;
    default:
        break;
    }
    // Integers: truncate toward zero, saturating at the type's limits (C++ leaves out-of-range
    // conversions undefined; the GPU's cvt saturates); NaN gives 0.
    switch (dtype) {
    case DType::int8:
        store(out, saturate<std::int8_t>(value));
        return;
    case DType::int16:
        store(out, saturate<std::int16_t>(value));
        return;
    case DType::int32:
        store(out, saturate<std::int32_t>(value));
        return;
    case DType::int64:
        store(out, saturate<std::int64_t>(value));
        return;
    case DType::uint8:
        store(out, saturate<std::uint8_t>(value));
        return;
    case DType::uint16:
        store(out, saturate<std::uint16_t>(value));
        return;
    case DType::uint32:
        store(out, saturate<std::uint32_t>(value));
        return;
    default:
        store(out, saturate<std::uint64_t>(value));
        return;
    }
}

} // namespace

std::size_t itemsize(DType dtype) noexcept {
    return info(dtype).itemsize;
}

const char* name(DType dtype) noexcept {
    return info(dtype).name;
}

const char* cuda_type(DType dtype) noexcept {
    return info(dtype).cuda_type;
}

DType parse_dtype(std::string_view text) {
    const std::string key = normalize_blanks(text);
    for (int i = 0; i < kDTypeCount; ++i)
        if (key == kInfo[i].name) return static_cast<DType>(i);
    for (const Alias& alias : kAliases)
        if (key == alias.text) return alias.dtype;
    std::string names;
    for (int i = 0; i < kDTypeCount; ++i)
        names += std::string(i ? ", " : "") + kInfo[i].name;
    throw ArgumentError(
        "unknown dtype '" + std::string(text) + "': use one of " + names +
        ", or an alias: NumPy's (bool_, byte, short, intc, int, int_, intp, long, longlong, ubyte, "
        "ushort, uintc, uint, uintp, ulong, ulonglong, half, single, float, double, csingle, "
        "complex, cdouble; note that 'float' is float64 and 'int' int64, as in NumPy), its codes "
        "(i4, u8, f2, f4, c8, ?, b, h, i, l, q, B, H, I, L, Q, e, f, d, F, D, ...), or C names "
        "(signed char, unsigned int, long long, int32_t, uint64_t, __half, __nv_bfloat16, "
        "complex<float>, ...)");
}

bool is_bool(DType d) noexcept {
    return d == DType::bool_;
}

bool is_signed_integer(DType d) noexcept {
    return d == DType::int8 || d == DType::int16 || d == DType::int32 || d == DType::int64;
}

bool is_unsigned_integer(DType d) noexcept {
    return d == DType::uint8 || d == DType::uint16 || d == DType::uint32 || d == DType::uint64;
}

bool is_integer(DType d) noexcept {
    return is_signed_integer(d) || is_unsigned_integer(d);
}

bool is_floating(DType d) noexcept {
    return d == DType::float16 || d == DType::bfloat16 || d == DType::float32 ||
           d == DType::float64;
}

bool is_complex(DType d) noexcept {
    return d == DType::complex64 || d == DType::complex128;
}

DType promote_types(DType a, DType b) noexcept {
    if (a == b) return a;
    if (is_bool(a)) return b;
    if (is_bool(b)) return a;
    if (is_complex(a) || is_complex(b)) {
        const DType ca = complex_for(a), cb = complex_for(b);
        return ca == DType::complex128 || cb == DType::complex128 ? DType::complex128
                                                                  : DType::complex64;
    }
    if (is_floating(a) && is_floating(b)) return promote_floats(a, b);
    if (is_floating(a)) return promote_integer_float(b, a);
    if (is_floating(b)) return promote_integer_float(a, b);
    // Two integers.
    if (is_signed_integer(a) == is_signed_integer(b)) return itemsize(a) >= itemsize(b) ? a : b;
    const DType s = is_signed_integer(a) ? a : b;
    const DType u = is_signed_integer(a) ? b : a;
    if (itemsize(s) > itemsize(u)) return s;
    if (itemsize(u) < 8) return signed_of_bits(integer_bits(u) * 2);
    return DType::float64;
}

float16 to_float16(double value) noexcept {
    return float16{double_to_16(value, kHalf)};
}

bfloat16 to_bfloat16(double value) noexcept {
    return bfloat16{double_to_16(value, kBfloat)};
}

double to_double(float16 value) noexcept {
    return from_16(value.bits, kHalf);
}

double to_double(bfloat16 value) noexcept {
    return from_16(value.bits, kBfloat);
}

namespace detail {

void cast_scalar_double(double value, DType dtype, void* out) noexcept {
    cast_real(value, dtype, out);
}

void cast_scalar_int64(std::int64_t value, DType dtype, void* out) noexcept {
    const bool negative = value < 0;
    const std::uint64_t magnitude = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(value)
                                             : static_cast<std::uint64_t>(value);
    cast_integer(negative, magnitude, dtype, out);
}

void cast_scalar_uint64(std::uint64_t value, DType dtype, void* out) noexcept {
    cast_integer(false, value, dtype, out);
}

void cast_scalar_complex(std::complex<double> value, DType dtype, void* out) noexcept {
    if (dtype == DType::complex64) {
        store(out, std::complex<float>(value));
        return;
    }
    if (dtype == DType::complex128) {
        store(out, value);
        return;
    }
    // Complex to bool tests both parts; to other real types NumPy drops the imaginary part.
    if (dtype == DType::bool_) {
        store(out, value.real() != 0 || value.imag() != 0);
        return;
    }
    cast_real(value.real(), dtype, out);
}

} // namespace detail

} // namespace kiln
