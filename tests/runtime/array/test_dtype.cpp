// dtypes on the CPU: names, parsing, predicates, NumPy's promotion table, the 16-bit float
// conversions and cast_scalar.

#include "half.hpp"
#include "kiln/dtype.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using kiln::DType;

constexpr DType kAll[] = {
    DType::bool_,    DType::int8,    DType::int16,   DType::int32,     DType::int64,
    DType::uint8,    DType::uint16,  DType::uint32,  DType::uint64,    DType::float16,
    DType::bfloat16, DType::float32, DType::float64, DType::complex64, DType::complex128,
};

template <class T> T cast(double value, DType dtype) {
    T out{};
    kiln::cast_scalar(value, dtype, &out);
    return out;
}

template <class T, class V> T cast_from(V value, DType dtype) {
    T out{};
    kiln::cast_scalar(value, dtype, &out);
    return out;
}

std::uint16_t half_bits(double value) {
    return kiln::to_float16(value).bits;
}

std::uint16_t bfloat_bits(double value) {
    return kiln::to_bfloat16(value).bits;
}

float float_of(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

} // namespace

TEST(DType, NamesItemsizesAndCudaTypes) {
    struct Row {
        DType dtype;
        std::size_t itemsize;
        const char* name;
        const char* cuda;
    };
    const Row rows[] = {
        {DType::bool_, 1, "bool", "bool"},
        {DType::int8, 1, "int8", "signed char"},
        {DType::int16, 2, "int16", "short"},
        {DType::int32, 4, "int32", "int"},
        {DType::int64, 8, "int64", "long long"},
        {DType::uint8, 1, "uint8", "unsigned char"},
        {DType::uint16, 2, "uint16", "unsigned short"},
        {DType::uint32, 4, "uint32", "unsigned int"},
        {DType::uint64, 8, "uint64", "unsigned long long"},
        {DType::float16, 2, "float16", "__half"},
        {DType::bfloat16, 2, "bfloat16", "__nv_bfloat16"},
        {DType::float32, 4, "float32", "float"},
        {DType::float64, 8, "float64", "double"},
        {DType::complex64, 8, "complex64", "kiln::complex<float>"},
        {DType::complex128, 16, "complex128", "kiln::complex<double>"},
    };
    static_assert(sizeof rows / sizeof rows[0] == kiln::kDTypeCount);
    for (const Row& row : rows) {
        EXPECT_EQ(kiln::itemsize(row.dtype), row.itemsize) << row.name;
        EXPECT_STREQ(kiln::name(row.dtype), row.name);
        EXPECT_STREQ(kiln::cuda_type(row.dtype), row.cuda);
    }
}

TEST(DType, DtypeOfMatchesTheCppTypes) {
    static_assert(kiln::dtype_of<float>() == DType::float32);
    static_assert(kiln::dtype_of<long>() == DType::int64);
    static_assert(kiln::dtype_of<long long>() == DType::int64);
    static_assert(kiln::dtype_of<unsigned long long>() == DType::uint64);
    static_assert(kiln::dtype_of<std::complex<double>>() == DType::complex128);
    static_assert(kiln::dtype_of<kiln::bfloat16>() == DType::bfloat16);
    SUCCEED();
}

TEST(DType, ParsesEveryCanonicalName) {
    for (DType d : kAll)
        EXPECT_EQ(kiln::parse_dtype(kiln::name(d)), d) << kiln::name(d);
}

TEST(DType, ParsesNumPyAliasesWithNumPyMeanings) {
    EXPECT_EQ(kiln::parse_dtype("float"), DType::float64);
    EXPECT_EQ(kiln::parse_dtype("double"), DType::float64);
    EXPECT_EQ(kiln::parse_dtype("single"), DType::float32);
    EXPECT_EQ(kiln::parse_dtype("half"), DType::float16);
    EXPECT_EQ(kiln::parse_dtype("int"), DType::int64);
    EXPECT_EQ(kiln::parse_dtype("int_"), DType::int64);
    EXPECT_EQ(kiln::parse_dtype("intc"), DType::int32);
    EXPECT_EQ(kiln::parse_dtype("uint"), DType::uint64);
    EXPECT_EQ(kiln::parse_dtype("bool_"), DType::bool_);
    EXPECT_EQ(kiln::parse_dtype("byte"), DType::int8);
    EXPECT_EQ(kiln::parse_dtype("ubyte"), DType::uint8);
    EXPECT_EQ(kiln::parse_dtype("complex"), DType::complex128);
    EXPECT_EQ(kiln::parse_dtype("csingle"), DType::complex64);
    EXPECT_EQ(kiln::parse_dtype("f4"), DType::float32);
    EXPECT_EQ(kiln::parse_dtype("i8"), DType::int64);
    EXPECT_EQ(kiln::parse_dtype("u1"), DType::uint8);
    EXPECT_EQ(kiln::parse_dtype("c16"), DType::complex128);
    EXPECT_EQ(kiln::parse_dtype("e"), DType::float16);
    EXPECT_EQ(kiln::parse_dtype("?"), DType::bool_);
    EXPECT_EQ(kiln::parse_dtype("f"), DType::float32);
    EXPECT_EQ(kiln::parse_dtype("F"), DType::complex64);
}

TEST(DType, ParsesCNames) {
    EXPECT_EQ(kiln::parse_dtype("signed char"), DType::int8);
    EXPECT_EQ(kiln::parse_dtype("unsigned char"), DType::uint8);
    EXPECT_EQ(kiln::parse_dtype("short"), DType::int16);
    EXPECT_EQ(kiln::parse_dtype("unsigned short"), DType::uint16);
    EXPECT_EQ(kiln::parse_dtype("unsigned int"), DType::uint32);
    EXPECT_EQ(kiln::parse_dtype("long long"), DType::int64);
    EXPECT_EQ(kiln::parse_dtype("unsigned long long"), DType::uint64);
    EXPECT_EQ(kiln::parse_dtype("  unsigned   long long "), DType::uint64);
    EXPECT_EQ(kiln::parse_dtype("int32_t"), DType::int32);
    EXPECT_EQ(kiln::parse_dtype("uint16_t"), DType::uint16);
    EXPECT_EQ(kiln::parse_dtype("__half"), DType::float16);
    EXPECT_EQ(kiln::parse_dtype("__nv_bfloat16"), DType::bfloat16);
    EXPECT_EQ(kiln::parse_dtype("complex<float>"), DType::complex64);
    EXPECT_EQ(kiln::parse_dtype("kiln::complex<double>"), DType::complex128);
    // cuda_type() parses back, except C's float and int, where NumPy's meaning wins.
    for (DType d : kAll) {
        const std::string c = kiln::cuda_type(d);
        if (c != "float" && c != "int") {
            EXPECT_EQ(kiln::parse_dtype(c), d) << c;
        }
    }
}

TEST(DType, UnknownNamesListTheAcceptedOnes) {
    EXPECT_THROW(kiln::parse_dtype("float128"), kiln::ArgumentError);
    EXPECT_THROW(kiln::parse_dtype(""), kiln::ArgumentError);
    EXPECT_THROW(kiln::parse_dtype("Float32"), kiln::ArgumentError);
    try {
        kiln::parse_dtype("quaternion");
        FAIL() << "no error";
    } catch (const kiln::ArgumentError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("'quaternion'"), std::string::npos) << message;
        for (DType d : kAll)
            EXPECT_NE(message.find(kiln::name(d)), std::string::npos) << message;
        EXPECT_NE(message.find("half"), std::string::npos) << message;
    }
}

TEST(DType, Predicates) {
    for (DType d : kAll) {
        const std::string n = kiln::name(d);
        EXPECT_EQ(kiln::is_bool(d), n == "bool") << n;
        EXPECT_EQ(kiln::is_signed_integer(d), n.rfind("int", 0) == 0) << n;
        EXPECT_EQ(kiln::is_unsigned_integer(d), n.rfind("uint", 0) == 0) << n;
        EXPECT_EQ(kiln::is_integer(d), n.find("int") != std::string::npos) << n;
        EXPECT_EQ(kiln::is_floating(d), n.find("float") != std::string::npos) << n;
        EXPECT_EQ(kiln::is_complex(d), n.rfind("complex", 0) == 0) << n;
        const int kinds =
            kiln::is_bool(d) + kiln::is_integer(d) + kiln::is_floating(d) + kiln::is_complex(d);
        EXPECT_EQ(kinds, 1) << n;
    }
}

// NumPy's np.promote_types, written out from its documented rules (bool < integers < floats <
// complex; a signed and an unsigned integer meet in a signed type wide enough for both, or
// float64 for 64-bit unsigned; an integer and a float meet in a float that holds the integer:
// 8-bit integers fit float16, 16-bit ones float32, wider ones float64) and ml_dtypes' for
// bfloat16 (like float16 with integers; with float16 it needs float32).
TEST(DType, PromotionTableMatchesNumPy) {
    // Rows and columns in kAll's order: ? i1 i2 i4 i8 u1 u2 u4 u8 f2 bf f4 f8 c8 c16.
    const char* table[kiln::kDTypeCount][kiln::kDTypeCount] = {
        {"?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "bf", "f4", "f8", "c8", "c16"},
        {"i1", "i1", "i2", "i4", "i8", "i2", "i4", "i8", "f8", "f2", "bf", "f4", "f8", "c8", "c16"},
        {"i2", "i2", "i2", "i4", "i8", "i2", "i4", "i8", "f8", "f4", "f4", "f4", "f8", "c8", "c16"},
        {"i4", "i4", "i4", "i4", "i8", "i4", "i4", "i8", "f8", "f8", "f8", "f8", "f8", "c16",
         "c16"},
        {"i8", "i8", "i8", "i8", "i8", "i8", "i8", "i8", "f8", "f8", "f8", "f8", "f8", "c16",
         "c16"},
        {"u1", "i2", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "bf", "f4", "f8", "c8", "c16"},
        {"u2", "i4", "i4", "i4", "i8", "u2", "u2", "u4", "u8", "f4", "f4", "f4", "f8", "c8", "c16"},
        {"u4", "i8", "i8", "i8", "i8", "u4", "u4", "u4", "u8", "f8", "f8", "f8", "f8", "c16",
         "c16"},
        {"u8", "f8", "f8", "f8", "f8", "u8", "u8", "u8", "u8", "f8", "f8", "f8", "f8", "c16",
         "c16"},
        {"f2", "f2", "f4", "f8", "f8", "f2", "f4", "f8", "f8", "f2", "f4", "f4", "f8", "c8", "c16"},
        {"bf", "bf", "f4", "f8", "f8", "bf", "f4", "f8", "f8", "f4", "bf", "f4", "f8", "c8", "c16"},
        {"f4", "f4", "f4", "f8", "f8", "f4", "f4", "f8", "f8", "f4", "f4", "f4", "f8", "c8", "c16"},
        {"f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "c16",
         "c16"},
        {"c8", "c8", "c8", "c16", "c16", "c8", "c8", "c16", "c16", "c8", "c8", "c8", "c16", "c8",
         "c16"},
        {"c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16",
         "c16", "c16"},
    };
    const auto parse = [](const std::string& code) {
        return code == "bf" ? DType::bfloat16 : kiln::parse_dtype(code == "?" ? "bool" : code);
    };
    for (int i = 0; i < kiln::kDTypeCount; ++i)
        for (int j = 0; j < kiln::kDTypeCount; ++j)
            EXPECT_EQ(kiln::name(kiln::promote_types(kAll[i], kAll[j])),
                      std::string(kiln::name(parse(table[i][j]))))
                << kiln::name(kAll[i]) << " + " << kiln::name(kAll[j]);
}

TEST(DType, PromotionIsSymmetricAndIdempotent) {
    for (DType a : kAll) {
        EXPECT_EQ(kiln::promote_types(a, a), a);
        for (DType b : kAll)
            EXPECT_EQ(kiln::promote_types(a, b), kiln::promote_types(b, a));
    }
}

TEST(Float16, KnownValues) {
    EXPECT_EQ(half_bits(0.0), 0x0000);
    EXPECT_EQ(half_bits(-0.0), 0x8000);
    EXPECT_EQ(half_bits(1.0), 0x3C00);
    EXPECT_EQ(half_bits(-2.0), 0xC000);
    EXPECT_EQ(half_bits(0.1), 0x2E66);
    EXPECT_EQ(half_bits(65504.0), 0x7BFF);
    EXPECT_EQ(half_bits(65519.99), 0x7BFF);
    EXPECT_EQ(half_bits(65520.0), 0x7C00); // the tie goes to the even neighbour: infinity
    EXPECT_EQ(half_bits(1e300), 0x7C00);
    EXPECT_EQ(half_bits(-std::numeric_limits<double>::infinity()), 0xFC00);
    EXPECT_EQ(half_bits(std::ldexp(1.0, -14)), 0x0400);                        // smallest normal
    EXPECT_EQ(half_bits(std::ldexp(1.0, -14) - std::ldexp(1.0, -25)), 0x0400); // carry to normal
    EXPECT_EQ(half_bits(std::ldexp(1.0, -24)), 0x0001);                        // smallest subnormal
    EXPECT_EQ(half_bits(std::ldexp(1.0, -25)), 0x0000);                        // tie to even: zero
    EXPECT_EQ(half_bits(std::ldexp(1.0, -25) * 1.0000001), 0x0001);
    EXPECT_EQ(half_bits(3 * std::ldexp(1.0, -25)), 0x0002);
    EXPECT_EQ(half_bits(1e-300), 0x0000);
    EXPECT_EQ(half_bits(-1e-300), 0x8000);
    EXPECT_EQ(half_bits(1 + std::ldexp(1.0, -11)), 0x3C00);     // tie, down to even
    EXPECT_EQ(half_bits(1 + 3 * std::ldexp(1.0, -11)), 0x3C02); // tie, up to even
    // Rounded once from double: via float this would be a tie and go down to 0x3C00.
    EXPECT_EQ(half_bits(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3C01);
    EXPECT_TRUE(std::isnan(kiln::to_double(kiln::to_float16(std::nan("")))));
    EXPECT_EQ(half_bits(std::nan("")) & 0x7C00, 0x7C00);
    EXPECT_NE(half_bits(std::nan("")) & 0x03FF, 0);
}

TEST(BFloat16, KnownValues) {
    EXPECT_EQ(bfloat_bits(1.0), 0x3F80);
    EXPECT_EQ(bfloat_bits(-1.0), 0xBF80);
    EXPECT_EQ(bfloat_bits(1 + std::ldexp(1.0, -8)), 0x3F80);
    EXPECT_EQ(bfloat_bits(1 + 3 * std::ldexp(1.0, -8)), 0x3F82);
    EXPECT_EQ(bfloat_bits(std::numeric_limits<float>::max()), 0x7F80);
    EXPECT_EQ(bfloat_bits(3.3895313892515355e38), 0x7F7F); // largest finite bfloat16
    EXPECT_EQ(bfloat_bits(1e39), 0x7F80);
    EXPECT_EQ(bfloat_bits(std::ldexp(1.0, -133)), 0x0001);
    EXPECT_EQ(bfloat_bits(std::ldexp(1.0, -134)), 0x0000);
    EXPECT_EQ(bfloat_bits(std::ldexp(1.0, -126)), 0x0080);
    EXPECT_TRUE(std::isnan(kiln::to_double(kiln::to_bfloat16(-std::nan("")))));
}

TEST(Float16, EveryValueRoundTrips) {
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const double value = kiln::to_double(kiln::float16{static_cast<std::uint16_t>(bits)});
        const bool nan = (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF);
        EXPECT_EQ(std::isnan(value), nan) << bits;
        if (!nan) {
            EXPECT_EQ(half_bits(value), bits) << bits;
            EXPECT_EQ(value, static_cast<double>(
                                 kiln::detail::half_to_float(static_cast<std::uint16_t>(bits))))
                << bits;
        }
    }
}

TEST(BFloat16, EveryValueRoundTrips) {
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const double value = kiln::to_double(kiln::bfloat16{static_cast<std::uint16_t>(bits)});
        const bool nan = (bits & 0x7F80) == 0x7F80 && (bits & 0x007F);
        EXPECT_EQ(std::isnan(value), nan) << bits;
        if (!nan) {
            EXPECT_EQ(bfloat_bits(value), bits) << bits;
            EXPECT_EQ(value, static_cast<double>(float_of(bits << 16))) << bits;
        }
    }
}

// Floats whose low bits sit at, just below and just above every rounding tie, at every exponent,
// against two independent float-input conversions.
TEST(Float16, MatchesTheFloatConversionAtEveryTie) {
    for (std::uint32_t high = 0; high < (1u << 19); ++high)
        for (std::uint32_t low : {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x1FFFu}) {
            const std::uint32_t bits = (high << 13) | low;
            const float f = float_of(bits);
            if (std::isnan(f)) continue;
            ASSERT_EQ(half_bits(f), kiln::detail::float_to_half(f)) << std::hex << bits;
        }
}

TEST(BFloat16, MatchesTheFloatConversionAtEveryTie) {
    for (std::uint32_t high = 0; high < (1u << 16); ++high)
        for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
            const std::uint32_t bits = (high << 16) | low;
            const float f = float_of(bits);
            if (std::isnan(f)) continue;
            ASSERT_EQ(bfloat_bits(f), kiln::detail::float_to_bfloat16(f)) << std::hex << bits;
        }
}

TEST(Float16, RandomDoublesRoundToTheNearest) {
    std::mt19937_64 rng(12345);
    std::uniform_real_distribution<double> exponent(-30, 17);
    for (int i = 0; i < 200000; ++i) {
        const double value = std::exp2(exponent(rng)) * (rng() & 1 ? 1 : -1);
        const double rounded = kiln::to_double(kiln::to_float16(value));
        if (std::isinf(rounded)) {
            EXPECT_GE(std::fabs(value), 65520.0) << value;
            continue;
        }
        // No float16 lies strictly nearer than the result.
        const std::uint16_t bits = half_bits(value);
        for (int delta : {-1, 1}) {
            const std::uint16_t other = static_cast<std::uint16_t>(bits + delta);
            if ((other & 0x7FFF) >= 0x7C00 || ((bits & 0x7FFF) == 0 && delta < 0)) continue;
            const double neighbour = kiln::to_double(kiln::float16{other});
            ASSERT_LE(std::fabs(rounded - value), std::fabs(neighbour - value)) << value;
        }
    }
}

TEST(CastScalar, IntegersWrapToTheWidth) {
    EXPECT_EQ(cast_from<std::uint8_t>(-1, DType::uint8), 255);
    EXPECT_EQ(cast_from<std::int32_t>(std::int64_t{1} << 32, DType::int32), 0);
    EXPECT_EQ(cast_from<std::int32_t>((std::int64_t{1} << 32) + 5, DType::int32), 5);
    EXPECT_EQ(cast_from<std::uint64_t>(-1, DType::uint64), ~std::uint64_t{0});
    EXPECT_EQ(cast_from<std::int64_t>(std::numeric_limits<std::int64_t>::max(), DType::int64),
              std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(cast_from<std::int64_t>(std::numeric_limits<std::int64_t>::min(), DType::int64),
              std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(cast_from<std::int8_t>(300, DType::int8), 44);
    EXPECT_EQ(cast_from<std::int64_t>(~std::uint64_t{0}, DType::int64), -1);
    EXPECT_EQ(cast_from<bool>(256, DType::bool_), true);
    EXPECT_EQ(cast_from<bool>(0, DType::bool_), false);
    EXPECT_EQ(cast_from<std::int16_t>(true, DType::int16), 1);
}

TEST(CastScalar, FloatsTruncateAndSaturateIntoIntegers) {
    EXPECT_EQ(cast<std::int32_t>(2.9, DType::int32), 2);
    EXPECT_EQ(cast<std::int32_t>(-2.9, DType::int32), -2);
    EXPECT_EQ(cast<std::uint8_t>(300.0, DType::uint8), 255);
    EXPECT_EQ(cast<std::uint8_t>(-1.0, DType::uint8), 0);
    EXPECT_EQ(cast<std::int8_t>(-1000.0, DType::int8), -128);
    EXPECT_EQ(cast<std::int32_t>(std::nan(""), DType::int32), 0);
    EXPECT_EQ(cast<std::int64_t>(1e30, DType::int64), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(cast<std::int64_t>(-1e30, DType::int64), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(cast<std::uint64_t>(1.8e19, DType::uint64), 18000000000000000000ull);
    EXPECT_EQ(cast<std::uint64_t>(std::numeric_limits<double>::infinity(), DType::uint64),
              ~std::uint64_t{0});
    EXPECT_EQ(cast<bool>(std::nan(""), DType::bool_), true);
    EXPECT_EQ(cast<bool>(-0.0, DType::bool_), false);
}

TEST(CastScalar, IntegersRoundOnceIntoFloats) {
    EXPECT_EQ(cast_from<float>(std::numeric_limits<std::int64_t>::max(), DType::float32),
              9223372036854775808.0f);
    EXPECT_EQ(cast_from<double>((std::int64_t{1} << 53) + 1, DType::float64), 9007199254740992.0);
    EXPECT_EQ(cast_from<double>(~std::uint64_t{0}, DType::float64), 18446744073709551616.0);
    EXPECT_EQ(cast_from<std::uint16_t>(2049, DType::float16), half_bits(2048.0));
    EXPECT_EQ(cast_from<std::uint16_t>(65520, DType::float16), 0x7C00);
    EXPECT_EQ(cast_from<std::uint16_t>(-3, DType::bfloat16), bfloat_bits(-3.0));
    // 2^62 + 2^38 + 1 lies just above a float tie: rounded once it goes up; through double it
    // would lose the 1, land on the tie and go down to even.
    const std::int64_t above_tie = (std::int64_t{1} << 62) + (std::int64_t{1} << 38) + 1;
    EXPECT_EQ(cast_from<float>(above_tie, DType::float32),
              std::ldexp(1.0f, 62) + std::ldexp(1.0f, 39));
    const auto c = cast_from<std::complex<float>>(-7, DType::complex64);
    EXPECT_EQ(c, std::complex<float>(-7.0f, 0.0f));
}

TEST(CastScalar, FloatingAndComplexValues) {
    EXPECT_EQ(cast<float>(0.1, DType::float32), 0.1f);
    EXPECT_EQ(cast<std::uint16_t>(0.1, DType::float16), 0x2E66);
    EXPECT_EQ(cast<std::uint16_t>(1.0, DType::bfloat16), 0x3F80);
    EXPECT_EQ(cast<std::complex<double>>(2.5, DType::complex128), std::complex<double>(2.5, 0));
    const std::complex<double> z(1.5, -2.0);
    EXPECT_EQ(cast_from<std::complex<float>>(z, DType::complex64),
              std::complex<float>(1.5f, -2.0f));
    EXPECT_EQ(cast_from<double>(z, DType::float64), 1.5);
    EXPECT_EQ(cast_from<std::int32_t>(z, DType::int32), 1);
    EXPECT_EQ(cast_from<bool>(std::complex<double>(0, 1), DType::bool_), true);
    EXPECT_EQ(cast_from<bool>(std::complex<double>(0, 0), DType::bool_), false);
    EXPECT_EQ(cast_from<double>(kiln::float16{0x3C00}, DType::float64), 1.0);
    EXPECT_EQ(cast_from<std::uint16_t>(kiln::bfloat16{0x3F80}, DType::float16), 0x3C00);
    EXPECT_EQ(cast_from<std::uint8_t>(1.5f, DType::uint8), 1);
}
