// NumPy's operations by name against host references, as ready operations, as operators on arrays
// and inside kiln::fuse: integer floor division and remainder with Python's signs and 0 for a zero
// divisor, NumPy's floating divmod, bits and shifts, unsigned negation wrapping, the math
// functions over real and complex values, the classifications, the nan-reductions, var and std.
// Dtypes are sampled (the CPU test compiles every operation for every dtype).

#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using kiln::Array;
using kiln::DType;

namespace {

constexpr int kN = 4099;

std::mt19937_64& rng() {
    static std::mt19937_64 r(std::random_device{}());
    return r;
}

std::vector<double> uniform(std::size_t n, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(n);
    for (auto& x : v)
        x = dist(rng());
    return v;
}

// Random integers of T, with the values division and shifts trip on: 0, -1, the extremes.
template <class T> std::vector<T> integers(std::size_t n, long long lo, long long hi) {
    std::uniform_int_distribution<long long> dist(lo, hi);
    std::vector<T> v(n);
    for (auto& x : v)
        x = static_cast<T>(dist(rng()));
    const T specials[] = {T(0), T(1), static_cast<T>(-1), std::numeric_limits<T>::min(),
                          std::numeric_limits<T>::max()};
    for (std::size_t k = 0; k < 5 && k < n; ++k)
        v[k * 7] = specials[k];
    return v;
}

std::vector<std::uint8_t> bools(const Array& a) {
    std::vector<std::uint8_t> v(static_cast<std::size_t>(a.size()));
    a.copy_to_host_bytes(v.data());
    return v;
}

bool same(double got, double want, double rel) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::fabs(got - want) <= rel * (1 + std::fabs(want));
}

// Python's floor division and remainder, NumPy's 0 for a zero divisor and wrap for MIN // -1.
template <class T> T py_floor_divide(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == -1) return static_cast<T>(0ULL - static_cast<unsigned long long>(a));
        T q = static_cast<T>(a / b);
        if (static_cast<T>(a % b) != 0 && ((a < 0) != (b < 0))) --q;
        return q;
    } else {
        return static_cast<T>(a / b);
    }
}
template <class T> T py_remainder(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
    } else {
        return static_cast<T>(a % b);
    }
}
template <class T> T c_fmod(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
        if (b == -1) return 0;
    return static_cast<T>(a % b);
}

// NumPy's npy_divmod, in the operands' precision.
template <class T> T np_divmod(T a, T b, T* modulus) {
    T mod = std::fmod(a, b);
    if (b == 0) {
        *modulus = mod;
        return a / b;
    }
    T div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= T(1);
        }
    } else {
        mod = std::copysign(T(0), b);
    }
    T floordiv;
    if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > T(0.5)) floordiv += T(1);
    } else {
        floordiv = std::copysign(T(0), a / b);
    }
    *modulus = mod;
    return floordiv;
}

template <class T> void check_integer_division(long long lo, long long hi) {
    auto a = integers<T>(kN, lo, hi), b = integers<T>(kN, -9, 9);
    b[1] = 0;
    b[2] = static_cast<T>(-1);
    a[2] = std::numeric_limits<T>::min();
    Array x = kiln::from_host(a), y = kiln::from_host(b);
    const std::string type = kiln::name(x.dtype());
    auto q = kiln::floor_divide(x, y).template to_host<T>();
    auto r = kiln::remainder(x, y).template to_host<T>();
    auto m = kiln::fmod(x, y).template to_host<T>();
    auto [dq, dr] = kiln::divmod(x, y);
    auto dqh = dq.template to_host<T>(), drh = dr.template to_host<T>();
    auto op = (x % y).template to_host<T>();
    auto fused = kiln::fuse("int_division", [](auto u, auto v) {
        auto [fq, fr] = kiln::divmod(u, v);
        return std::make_tuple(kiln::floor_divide(u, v), u % v, kiln::fmod(u, v), fq, fr);
    });
    kiln::Outputs f = fused(x, y);
    ASSERT_EQ(f[0].dtype(), x.dtype()) << type;
    auto fq = f[0].template to_host<T>(), fr = f[1].template to_host<T>(),
         fm = f[2].template to_host<T>(), fdq = f[3].template to_host<T>(),
         fdr = f[4].template to_host<T>();
    for (int i = 0; i < kN; ++i) {
        const T wq = py_floor_divide(a[i], b[i]), wr = py_remainder(a[i], b[i]),
                wm = c_fmod(a[i], b[i]);
        ASSERT_EQ(q[i], wq) << type << ' ' << +a[i] << " // " << +b[i];
        ASSERT_EQ(r[i], wr) << type << ' ' << +a[i] << " % " << +b[i];
        ASSERT_EQ(m[i], wm) << type << " fmod " << +a[i] << ", " << +b[i];
        ASSERT_EQ(dqh[i], wq) << type;
        ASSERT_EQ(drh[i], wr) << type;
        ASSERT_EQ(op[i], wr) << type;
        ASSERT_EQ(fq[i], wq) << type << " fused " << +a[i] << " // " << +b[i];
        ASSERT_EQ(fr[i], wr) << type << " fused " << +a[i] << " % " << +b[i];
        ASSERT_EQ(fm[i], wm) << type << " fused fmod";
        ASSERT_EQ(fdq[i], wq) << type << " fused divmod";
        ASSERT_EQ(fdr[i], wr) << type << " fused divmod";
    }
}

// NumPy's shifts: past the width 0 (or -1 for a negative signed value shifted right).
template <class T> T np_left_shift(T a, T b) {
    const auto count = static_cast<unsigned long long>(b);
    return count < sizeof(T) * 8 ? static_cast<T>(static_cast<unsigned long long>(a) << count)
                                 : T(0);
}
template <class T> T np_right_shift(T a, T b) {
    const auto count = static_cast<unsigned long long>(b);
    if (count < sizeof(T) * 8) return static_cast<T>(a >> count);
    if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
    return T(0);
}

template <class T> void check_bits() {
    const long long width = sizeof(T) * 8;
    auto a = integers<T>(kN, std::numeric_limits<T>::min(), std::numeric_limits<T>::max() / 2);
    auto b = integers<T>(kN, 0, 100);
    std::vector<T> counts(kN);
    std::uniform_int_distribution<long long> dist(std::is_signed_v<T> ? -2 : 0, width + 2);
    for (auto& c : counts)
        c = static_cast<T>(dist(rng()));
    Array x = kiln::from_host(a), y = kiln::from_host(b), s = kiln::from_host(counts);
    const std::string type = kiln::name(x.dtype());
    auto band = (x & y).template to_host<T>(), bor = (x | y).template to_host<T>(),
         bxor = (x ^ y).template to_host<T>(), inv = (~x).template to_host<T>(),
         shl = (x << s).template to_host<T>(), shr = (x >> s).template to_host<T>(),
         shl3 = kiln::left_shift(x, 3).template to_host<T>();
    auto fused = kiln::fuse("bits", [](auto u, auto v, auto c) {
        return std::make_tuple(u & v, u | v, u ^ v, ~u, u << c, u >> c, kiln::bitwise_not(u));
    });
    kiln::Outputs f = fused(x, y, s);
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(band[i], static_cast<T>(a[i] & b[i])) << type;
        ASSERT_EQ(bor[i], static_cast<T>(a[i] | b[i])) << type;
        ASSERT_EQ(bxor[i], static_cast<T>(a[i] ^ b[i])) << type;
        ASSERT_EQ(inv[i], static_cast<T>(~a[i])) << type;
        ASSERT_EQ(shl[i], np_left_shift(a[i], counts[i]))
            << type << ' ' << +a[i] << " << " << +counts[i];
        ASSERT_EQ(shr[i], np_right_shift(a[i], counts[i]))
            << type << ' ' << +a[i] << " >> " << +counts[i];
        ASSERT_EQ(shl3[i], np_left_shift(a[i], T(3))) << type;
    }
    const std::vector<T> want[] = {band, bor, bxor, inv, shl, shr, inv};
    for (std::size_t k = 0; k < 7; ++k)
        ASSERT_EQ(f[k].template to_host<T>(), want[k]) << type << " fused output " << k;
}

} // namespace

TEST(OpTableGpu, IntegerFloorDivisionAndRemainderHavePythonsSignsAndNoTrap) {
    KILN_REQUIRE_GPU();
    check_integer_division<std::int8_t>(-128, 127);
    check_integer_division<std::int32_t>(-1000000, 1000000);
    check_integer_division<std::int64_t>(-(1LL << 40), 1LL << 40);
    check_integer_division<std::uint8_t>(0, 255);
    check_integer_division<std::uint32_t>(0, 4000000000LL);
}

TEST(OpTableGpu, FloatingFloorDivisionAndRemainderAreNumPysDivmod) {
    KILN_REQUIRE_GPU();
    auto a = uniform(kN, -50, 50), b = uniform(kN, -5, 5);
    for (int i = 0; i < 40; ++i)
        b[i * 11] = (i % 3 == 0) ? 0.0 : std::trunc(b[i * 11]); // zero and whole divisors
    a[3] = -0.0;
    a[5] = std::numeric_limits<double>::infinity();
    Array x = kiln::from_host(a), y = kiln::from_host(b);
    auto q = kiln::floor_divide(x, y).to_host<double>();
    auto r = (x % y).to_host<double>();
    auto m = kiln::fmod(x, y).to_host<double>();
    auto fused = kiln::fuse("float_division", [](auto u, auto v) {
        return std::make_tuple(kiln::floor_divide(u, v), u % v);
    });
    kiln::Outputs f = fused(kiln::astype(x, DType::float32), kiln::astype(y, DType::float32));
    auto fq = f[0].to_host<float>(), fr = f[1].to_host<float>();
    for (int i = 0; i < kN; ++i) {
        double wr = 0;
        const double wq = np_divmod(a[i], b[i], &wr);
        ASSERT_TRUE(same(q[i], b[i] == 0 ? a[i] / b[i] : wq, 0)) << a[i] << " // " << b[i];
        ASSERT_TRUE(same(r[i], b[i] == 0 ? std::fmod(a[i], b[i]) : wr, 0))
            << a[i] << " % " << b[i] << ": " << r[i];
        if (wr == 0 && b[i] != 0) {
            ASSERT_EQ(std::signbit(r[i]), std::signbit(b[i]));
        }
        ASSERT_TRUE(same(m[i], std::fmod(a[i], b[i]), 0));
        const float af = static_cast<float>(a[i]), bf = static_cast<float>(b[i]);
        float wrf = 0;
        const float wqf = np_divmod(af, bf, &wrf);
        ASSERT_TRUE(same(fq[i], bf == 0 ? af / bf : wqf, 1e-6)) << af << " // " << bf;
        ASSERT_TRUE(same(fr[i], bf == 0 ? std::fmod(af, bf) : wrf, 1e-6)) << af << " % " << bf;
    }
}

TEST(OpTableGpu, BitsAndShiftsAreNumPys) {
    KILN_REQUIRE_GPU();
    check_bits<std::int8_t>();
    check_bits<std::int32_t>();
    check_bits<std::int64_t>();
    check_bits<std::uint8_t>();
    check_bits<std::uint64_t>();
    // bool: logical, and ~ is not.
    const std::vector<std::uint8_t> p = {0, 0, 1, 1}, q = {0, 1, 0, 1};
    Array x = kiln::from_host_bytes(p.data(), {4}, DType::bool_),
          y = kiln::from_host_bytes(q.data(), {4}, DType::bool_);
    EXPECT_EQ(bools(x & y), (std::vector<std::uint8_t>{0, 0, 0, 1}));
    EXPECT_EQ(bools(x | y), (std::vector<std::uint8_t>{0, 1, 1, 1}));
    EXPECT_EQ(bools(x ^ y), (std::vector<std::uint8_t>{0, 1, 1, 0}));
    EXPECT_EQ(bools(~x), (std::vector<std::uint8_t>{1, 1, 0, 0}));
    EXPECT_EQ((x << y).dtype(), DType::int8);
}

TEST(OpTableGpu, NegatingUnsignedValuesWrapsAsNumPyDoes) {
    KILN_REQUIRE_GPU();
    const std::vector<std::uint8_t> v = {1, 2, 200, 0};
    const std::vector<std::uint8_t> want = {255, 254, 56, 0};
    Array x = kiln::from_host(v);
    EXPECT_EQ(kiln::negative(x).to_host<std::uint8_t>(), want);
    EXPECT_EQ((-x).to_host<std::uint8_t>(), want);
    auto negate = kiln::fuse("negate", [](auto u) { return -u; });
    Array fused = negate(x);
    EXPECT_EQ(fused.dtype(), DType::uint8);
    EXPECT_EQ(fused.to_host<std::uint8_t>(), want);
    const std::vector<std::uint64_t> big = {1, 0, 1ULL << 63};
    Array fused64 = negate(kiln::from_host(big));
    EXPECT_EQ(fused64.to_host<std::uint64_t>(), (std::vector<std::uint64_t>{~0ULL, 0, 1ULL << 63}));
    auto minus = kiln::fuse("minus_int", [](auto u) { return -u * 2; });
    const std::vector<std::int32_t> s = {3, -4, 0};
    EXPECT_EQ(Array(minus(kiln::from_host(s))).to_host<std::int32_t>(),
              (std::vector<std::int32_t>{-6, 8, 0}));
}

namespace {

struct RealCase {
    const char* name;
    Array (*ready)(const Array&, const kiln::OpOptions&);
    double (*host)(double);
    double lo, hi;
};

double host_sign(double v) {
    return v > 0 ? 1 : (v < 0 ? -1 : (v == 0 ? 0 : v));
}

const RealCase kRealCases[] = {
    {"cbrt", kiln::cbrt, [](double v) { return std::cbrt(v); }, -8, 8},
    {"exp2", kiln::exp2, [](double v) { return std::exp2(v); }, -10, 10},
    {"expm1", kiln::expm1, [](double v) { return std::expm1(v); }, -1e-3, 2},
    {"log2", kiln::log2, [](double v) { return std::log2(v); }, 1e-3, 100},
    {"log10", kiln::log10, [](double v) { return std::log10(v); }, 1e-3, 100},
    {"log1p", kiln::log1p, [](double v) { return std::log1p(v); }, -0.9, 5},
    {"tan", kiln::tan, [](double v) { return std::tan(v); }, -1.5, 1.5},
    {"arcsin", kiln::arcsin, [](double v) { return std::asin(v); }, -0.99, 0.99},
    {"arccos", kiln::arccos, [](double v) { return std::acos(v); }, -0.99, 0.99},
    {"arctan", kiln::arctan, [](double v) { return std::atan(v); }, -20, 20},
    {"sinh", kiln::sinh, [](double v) { return std::sinh(v); }, -5, 5},
    {"cosh", kiln::cosh, [](double v) { return std::cosh(v); }, -5, 5},
    {"arcsinh", kiln::arcsinh, [](double v) { return std::asinh(v); }, -20, 20},
    {"arccosh", kiln::arccosh, [](double v) { return std::acosh(v); }, 1, 20},
    {"arctanh", kiln::arctanh, [](double v) { return std::atanh(v); }, -0.99, 0.99},
    {"floor", kiln::floor, [](double v) { return std::floor(v); }, -10, 10},
    {"ceil", kiln::ceil, [](double v) { return std::ceil(v); }, -10, 10},
    {"trunc", kiln::trunc, [](double v) { return std::trunc(v); }, -10, 10},
    {"rint", kiln::rint, [](double v) { return std::nearbyint(v); }, -10, 10},
    {"sign", kiln::sign, host_sign, -2, 2},
    {"square", kiln::square, [](double v) { return v * v; }, -100, 100},
    {"reciprocal", kiln::reciprocal, [](double v) { return 1 / v; }, 0.01, 100},
    {"negative", kiln::negative, [](double v) { return -v; }, -100, 100},
};

} // namespace

// Each function in float64 and float32 against the host's, ready and fused (the fused kernel
// computes the same expression: equal to the ready operation's value).
TEST(OpTableGpu, RealFunctionsMatchTheHost) {
    KILN_REQUIRE_GPU();
    for (const RealCase& c : kRealCases) {
        const auto v = uniform(kN, c.lo, c.hi);
        Array x = kiln::from_host(v);
        Array x32 = kiln::astype(x, DType::float32);
        const auto v32 = kiln::astype(x32, DType::float64).to_host<double>();
        auto got = c.ready(x, {}).to_host<double>();
        auto got32 = c.ready(x32, {}).to_host<float>();
        auto fused = kiln::fuse(std::string("fused_") + c.name,
                                [&](auto u) { return kiln::detail::fuse_apply(c.name, {u}); });
        auto f64 = Array(fused(x)).to_host<double>();
        auto f32 = Array(fused(x32)).to_host<float>();
        for (int i = 0; i < kN; ++i) {
            ASSERT_TRUE(same(got[i], c.host(v[i]), 1e-14))
                << c.name << '(' << v[i] << ") = " << got[i];
            ASSERT_TRUE(same(got32[i], c.host(v32[i]), 2e-6))
                << c.name << '(' << v32[i] << ") = " << got32[i];
            ASSERT_TRUE(same(f64[i], c.host(v[i]), 1e-14)) << c.name << " fused";
            ASSERT_TRUE(same(f32[i], c.host(v32[i]), 2e-6)) << c.name << " fused";
        }
    }
    // Ties round to even; integers keep their dtype through floor, ceil and trunc.
    const std::vector<double> ties = {0.5, 1.5, 2.5, -0.5, -2.5};
    EXPECT_EQ(kiln::rint(kiln::from_host(ties)).to_host<double>(),
              (std::vector<double>{0, 2, 2, -0.0, -2}));
    Array ints = kiln::arange(-5, 5, 1, DType::int32);
    EXPECT_EQ(kiln::floor(ints).dtype(), DType::int32);
    EXPECT_EQ(kiln::floor(ints).to_host<std::int32_t>(), ints.to_host<std::int32_t>());
    EXPECT_EQ(kiln::rint(kiln::arange(0, 4, 1, DType::int8)).dtype(), DType::float16);
    EXPECT_EQ(kiln::sign(ints).to_host<std::int32_t>(),
              (std::vector<std::int32_t>{-1, -1, -1, -1, -1, 0, 1, 1, 1, 1}));
    EXPECT_EQ(kiln::reciprocal(ints).to_host<std::int32_t>(),
              (std::vector<std::int32_t>{0, 0, 0, 0, -1, 0, 1, 0, 0, 0}));
}

TEST(OpTableGpu, BinaryFloatingFunctionsMatchTheHost) {
    KILN_REQUIRE_GPU();
    auto a = uniform(kN, -10, 10), b = uniform(kN, -10, 10);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    a[1] = nan;
    b[2] = nan;
    a[4] = b[4] = nan;
    b[6] = -0.0;
    Array x = kiln::from_host(a), y = kiln::from_host(b);
    struct Case {
        const char* name;
        Array (*ready)(const kiln::Arg&, const kiln::Arg&, const kiln::OpOptions&);
        double (*host)(double, double);
    };
    const Case cases[] = {
        {"arctan2", kiln::arctan2, [](double u, double v) { return std::atan2(u, v); }},
        {"hypot", kiln::hypot, [](double u, double v) { return std::hypot(u, v); }},
        {"copysign", kiln::copysign, [](double u, double v) { return std::copysign(u, v); }},
        {"fmax", kiln::fmax, [](double u, double v) { return std::fmax(u, v); }},
        {"fmin", kiln::fmin, [](double u, double v) { return std::fmin(u, v); }},
    };
    for (const Case& c : cases) {
        auto got = c.ready(x, y, {}).to_host<double>();
        auto fused = kiln::fuse(std::string("fused_") + c.name, [&](auto u, auto v) {
            return kiln::detail::fuse_apply(c.name, {u, v});
        });
        auto f = Array(fused(x, y)).to_host<double>();
        for (int i = 0; i < kN; ++i) {
            ASSERT_TRUE(same(got[i], c.host(a[i], b[i]), 1e-15)) << c.name << i;
            ASSERT_TRUE(same(f[i], c.host(a[i], b[i]), 1e-15)) << c.name << " fused";
        }
    }
    EXPECT_EQ(kiln::arctan2(kiln::arange(0, 4, 1, DType::int16), 1).dtype(), DType::float32);
    auto mx = kiln::fmax(kiln::arange(0, 6, 1, DType::int32), 3).to_host<std::int32_t>();
    EXPECT_EQ(mx, (std::vector<std::int32_t>{3, 3, 3, 3, 4, 5}));
}

TEST(OpTableGpu, ClassificationsAndLogicalOperations) {
    KILN_REQUIRE_GPU();
    const float inf = std::numeric_limits<float>::infinity(),
                nan = std::numeric_limits<float>::quiet_NaN();
    // -NaN keeps its sign bit in float32; a conversion to float16 or float64 may make it a
    // canonical NaN, so the other dtypes see +NaN alone.
    const std::vector<float> v = {0.0f, -0.0f, 1.5f, -2.0f, inf, -inf, nan, -nan};
    Array x32 = kiln::from_host(v);
    Array positive_nan =
        kiln::from_host(std::vector<float>{0.0f, -0.0f, 1.5f, -2.0f, inf, -inf, nan});
    for (const Array& x : {positive_nan, kiln::astype(positive_nan, DType::float16),
                           kiln::astype(positive_nan, DType::float64)}) {
        const std::string type = kiln::name(x.dtype());
        EXPECT_EQ(bools(kiln::isnan(x)), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 1})) << type;
        EXPECT_EQ(bools(kiln::isinf(x)), (std::vector<std::uint8_t>{0, 0, 0, 0, 1, 1, 0})) << type;
        EXPECT_EQ(bools(kiln::isfinite(x)), (std::vector<std::uint8_t>{1, 1, 1, 1, 0, 0, 0}))
            << type;
        EXPECT_EQ(bools(kiln::signbit(x)), (std::vector<std::uint8_t>{0, 1, 0, 1, 0, 1, 0}))
            << type;
    }
    EXPECT_EQ(bools(kiln::signbit(x32)), (std::vector<std::uint8_t>{0, 1, 0, 1, 0, 1, 0, 1}));
    auto classes = kiln::fuse("classes", [](auto u) {
        return std::make_tuple(kiln::isnan(u), kiln::isinf(u), kiln::isfinite(u), kiln::signbit(u),
                               kiln::logical_not(u));
    });
    kiln::Outputs f = classes(x32);
    EXPECT_EQ(bools(f[0]), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 1, 1}));
    EXPECT_EQ(bools(f[1]), (std::vector<std::uint8_t>{0, 0, 0, 0, 1, 1, 0, 0}));
    EXPECT_EQ(bools(f[2]), (std::vector<std::uint8_t>{1, 1, 1, 1, 0, 0, 0, 0}));
    EXPECT_EQ(bools(f[3]), (std::vector<std::uint8_t>{0, 1, 0, 1, 0, 1, 0, 1}));
    EXPECT_EQ(bools(f[4]), (std::vector<std::uint8_t>{1, 1, 0, 0, 0, 0, 0, 0}));
    Array ints = kiln::arange(-2, 3, 1, DType::int32);
    EXPECT_EQ(bools(kiln::isnan(ints)), (std::vector<std::uint8_t>(5, 0)));
    EXPECT_EQ(bools(kiln::isfinite(ints)), (std::vector<std::uint8_t>(5, 1)));
    EXPECT_EQ(bools(kiln::signbit(ints)), (std::vector<std::uint8_t>{1, 1, 0, 0, 0}));
    const std::vector<std::complex<float>> z = {{1, 0}, {0, nan}, {inf, 0}, {nan, inf}};
    Array za = kiln::from_host(z);
    EXPECT_EQ(bools(kiln::isnan(za)), (std::vector<std::uint8_t>{0, 1, 0, 1}));
    EXPECT_EQ(bools(kiln::isinf(za)), (std::vector<std::uint8_t>{0, 0, 1, 1}));
    EXPECT_EQ(bools(kiln::isfinite(za)), (std::vector<std::uint8_t>{1, 0, 0, 0}));
    Array p = kiln::from_host(std::vector<std::int32_t>{0, 0, 3, -1});
    Array q = kiln::from_host(std::vector<float>{0, 2.5f, 0, nan});
    EXPECT_EQ(bools(kiln::logical_and(p, q)), (std::vector<std::uint8_t>{0, 0, 0, 1}));
    EXPECT_EQ(bools(kiln::logical_or(p, q)), (std::vector<std::uint8_t>{0, 1, 1, 1}));
    EXPECT_EQ(bools(kiln::logical_xor(p, q)), (std::vector<std::uint8_t>{0, 1, 1, 0}));
    EXPECT_EQ(bools(kiln::logical_not(p)), (std::vector<std::uint8_t>{1, 1, 0, 0}));
    auto logic = kiln::fuse("logic", [](auto s, auto t) {
        return std::make_tuple(kiln::logical_and(s, t), kiln::logical_or(s, t),
                               kiln::logical_xor(s, t), !s);
    });
    kiln::Outputs g = logic(p, q);
    EXPECT_EQ(bools(g[0]), (std::vector<std::uint8_t>{0, 0, 0, 1}));
    EXPECT_EQ(bools(g[1]), (std::vector<std::uint8_t>{0, 1, 1, 1}));
    EXPECT_EQ(bools(g[2]), (std::vector<std::uint8_t>{0, 1, 1, 0}));
    EXPECT_EQ(bools(g[3]), (std::vector<std::uint8_t>{1, 1, 0, 0}));
}

TEST(OpTableGpu, ComplexFunctionsMatchStdComplex) {
    KILN_REQUIRE_GPU();
    // Off every branch cut: real and imaginary parts in (0.1, 0.9).
    const auto re = uniform(kN, 0.1, 0.9), im = uniform(kN, 0.1, 0.9);
    std::vector<std::complex<double>> z(kN);
    for (int i = 0; i < kN; ++i)
        z[i] = {re[i], im[i]};
    Array x = kiln::from_host(z);
    using C = std::complex<double>;
    struct Case {
        const char* name;
        Array (*ready)(const Array&, const kiln::OpOptions&);
        C (*host)(C);
    };
    const Case cases[] = {
        {"sign", kiln::sign, [](C v) { return v / std::abs(v); }},
        {"square", kiln::square, [](C v) { return v * v; }},
        {"reciprocal", kiln::reciprocal, [](C v) { return 1.0 / v; }},
        {"conj", kiln::conj, [](C v) { return std::conj(v); }},
        {"exp2", kiln::exp2, [](C v) { return std::pow(2.0, v); }},
        {"expm1", kiln::expm1, [](C v) { return std::exp(v) - 1.0; }},
        {"log2", kiln::log2, [](C v) { return std::log(v) / std::log(2.0); }},
        {"log10", kiln::log10, [](C v) { return std::log10(v); }},
        {"log1p", kiln::log1p, [](C v) { return std::log(1.0 + v); }},
        {"tan", kiln::tan, [](C v) { return std::tan(v); }},
        {"arcsin", kiln::arcsin, [](C v) { return std::asin(v); }},
        {"arccos", kiln::arccos, [](C v) { return std::acos(v); }},
        {"arctan", kiln::arctan, [](C v) { return std::atan(v); }},
        {"sinh", kiln::sinh, [](C v) { return std::sinh(v); }},
        {"cosh", kiln::cosh, [](C v) { return std::cosh(v); }},
        {"arcsinh", kiln::arcsinh, [](C v) { return std::asinh(v); }},
        {"arccosh", kiln::arccosh, [](C v) { return std::acosh(v); }},
        {"arctanh", kiln::arctanh, [](C v) { return std::atanh(v); }},
        {"rint", kiln::rint,
         [](C v) { return C(std::nearbyint(v.real()), std::nearbyint(v.imag())); }},
        {"negative", kiln::negative, [](C v) { return -v; }},
    };
    for (const Case& c : cases) {
        Array out = c.ready(x, {});
        ASSERT_EQ(out.dtype(), DType::complex128) << c.name;
        auto got = out.to_host<C>();
        auto fused = kiln::fuse(std::string("complex_") + c.name,
                                [&](auto u) { return kiln::detail::fuse_apply(c.name, {u}); });
        auto f = Array(fused(x)).to_host<C>();
        for (int i = 0; i < kN; ++i) {
            const C want = c.host(z[i]);
            ASSERT_LE(std::abs(got[i] - want), 1e-12 * (1 + std::abs(want)))
                << c.name << z[i] << " = " << got[i] << ", not " << want;
            ASSERT_LE(std::abs(f[i] - want), 1e-12 * (1 + std::abs(want))) << c.name << " fused";
        }
    }
    auto real = kiln::real(x).to_host<double>(), imag = kiln::imag(x).to_host<double>();
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(real[i], re[i]);
        ASSERT_EQ(imag[i], im[i]);
    }
    auto parts = kiln::fuse("parts", [](auto u) {
        return std::make_tuple(kiln::real(u), kiln::imag(u), kiln::real(u) * kiln::imag(u));
    });
    kiln::Outputs p = parts(kiln::astype(x, DType::complex64));
    EXPECT_EQ(p[0].dtype(), DType::float32);
    auto pr = p[0].to_host<float>(), pi = p[1].to_host<float>();
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(pr[i], static_cast<float>(re[i]));
        ASSERT_EQ(pi[i], static_cast<float>(im[i]));
    }
    Array r = kiln::from_host(re);
    EXPECT_EQ(kiln::imag(r).to_host<double>(), std::vector<double>(kN, 0.0));
    EXPECT_EQ(kiln::real(r).to_host<double>(), re);
}

namespace {

// A rows x cols float32 matrix with NaNs scattered, and one row of NaN alone.
std::vector<float> with_nans(int rows, int cols) {
    auto v = uniform(static_cast<std::size_t>(rows) * cols, -2, 2);
    std::vector<float> f(v.begin(), v.end());
    for (std::size_t k = 0; k < f.size(); k += 13)
        f[k] = std::numeric_limits<float>::quiet_NaN();
    for (int c = 0; c < cols; ++c)
        f[static_cast<std::size_t>(3) * cols + c] = std::numeric_limits<float>::quiet_NaN();
    return f;
}

} // namespace

TEST(OpTableGpu, NanReductionsSkipNaNReadyAndFused) {
    KILN_REQUIRE_GPU();
    const int rows = 37, cols = 1031;
    const auto v = with_nans(rows, cols);
    Array x = kiln::from_host(v, {rows, cols});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> sum(rows, 0), prod(rows, 1), mx(rows, nan), mn(rows, nan), mean(rows, 0);
    for (int r = 0; r < rows; ++r) {
        int count = 0;
        for (int c = 0; c < cols; ++c) {
            const double e = v[static_cast<std::size_t>(r) * cols + c];
            if (std::isnan(e)) continue;
            sum[r] += e;
            prod[r] *= 1 + e / 64; // near 1, so the product neither vanishes nor overflows
            mx[r] = std::isnan(mx[r]) ? e : std::max(mx[r], e);
            mn[r] = std::isnan(mn[r]) ? e : std::min(mn[r], e);
            ++count;
        }
        mean[r] = count ? sum[r] / count : nan;
    }
    Array scaled = kiln::add(kiln::divide(x, 64.0f), 1.0f);
    auto check = [&](const char* what, const Array& got, const std::vector<double>& want,
                     double rel) {
        ASSERT_EQ(got.dtype(), DType::float32) << what;
        auto g = got.to_host<float>();
        for (int r = 0; r < rows; ++r)
            ASSERT_TRUE(same(g[r], want[r], rel))
                << what << " row " << r << ": " << g[r] << ", not " << want[r];
    };
    check("nansum", kiln::nansum(x, 1), sum, 1e-4);
    check("nanprod", kiln::nanprod(scaled, 1), prod, 1e-4);
    check("nanmax", kiln::nanmax(x, 1), mx, 0);
    check("nanmin", kiln::nanmin(x, 1), mn, 0);
    check("nanmean", kiln::nanmean(x, 1), mean, 1e-5);
    auto fused = [&](const char* name, auto&& f) { return Array(kiln::fuse(name, f)(x)); };
    check("fused nansum", fused("f_nansum", [](auto u) { return kiln::nansum(u, 1); }), sum, 1e-4);
    check("fused nanprod",
          fused("f_nanprod", [](auto u) { return kiln::nanprod(u / 64.0f + 1.0f, 1); }), prod,
          1e-4);
    check("fused nanmax", fused("f_nanmax", [](auto u) { return kiln::nanmax(u, 1); }), mx, 0);
    check("fused nanmin", fused("f_nanmin", [](auto u) { return kiln::nanmin(u, 1); }), mn, 0);
    check("fused nanmean", fused("f_nanmean", [](auto u) { return kiln::nanmean(u, 1); }), mean,
          1e-5);
    EXPECT_EQ(kiln::nansum(kiln::arange(0, 10, 1, DType::int32)).to_host<std::int64_t>()[0], 45);
}

TEST(OpTableGpu, FusedVarAndStdTakeOnePassAndMatchTheTwoPassReadyOnes) {
    KILN_REQUIRE_GPU();
    const int rows = 19, cols = 5003;
    auto v = uniform(static_cast<std::size_t>(rows) * cols, 1000, 1001); // a large mean
    std::vector<float> f(v.begin(), v.end());
    Array x = kiln::from_host(f, {rows, cols});
    for (int ddof : {0, 1}) {
        kiln::ReduceOptions options;
        options.ddof = ddof;
        std::vector<double> var(rows);
        for (int r = 0; r < rows; ++r) {
            double m = 0, s = 0;
            for (int c = 0; c < cols; ++c)
                m += f[static_cast<std::size_t>(r) * cols + c];
            m /= cols;
            for (int c = 0; c < cols; ++c) {
                const double d = f[static_cast<std::size_t>(r) * cols + c] - m;
                s += d * d;
            }
            var[r] = s / (cols - ddof);
        }
        auto fv = kiln::fuse("f_var", [&](auto u) { return kiln::var(u, 1, options); });
        auto fs = kiln::fuse("f_std", [&](auto u) { return kiln::std(u * 2, -1, options); });
        Array got_var = fv(x), got_std = fs(x);
        ASSERT_EQ(got_var.dtype(), DType::float32);
        auto gv = got_var.to_host<float>(), gs = got_std.to_host<float>();
        auto ready = kiln::var(x, 1, options).to_host<float>();
        for (int r = 0; r < rows; ++r) {
            ASSERT_NEAR(gv[r], var[r], 1e-4 * var[r]) << "ddof " << ddof << " row " << r;
            ASSERT_NEAR(gs[r], 2 * std::sqrt(var[r]), 1e-4 * std::sqrt(var[r]));
            ASSERT_NEAR(gv[r], ready[r], 2e-4 * var[r]);
        }
    }
    // Integers give float64; complex values the real dtype.
    auto fv = kiln::fuse("f_var_any", [](auto u) { return kiln::var(u); });
    Array ints = kiln::arange(0, 101, 1, DType::int32);
    Array iv = fv(ints);
    EXPECT_EQ(iv.dtype(), DType::float64);
    EXPECT_NEAR(iv.to_host<double>()[0], 850.0, 1e-9); // (101^2 - 1) / 12
    std::vector<std::complex<float>> z = {{1, 2}, {3, -1}, {-2, 0.5f}, {0, 0}};
    Array zv = fv(kiln::from_host(z));
    EXPECT_EQ(zv.dtype(), DType::float32);
    // mean (0.5, 0.375); E|z - mean|^2
    double want = 0;
    for (const auto& e : z)
        want += std::norm(std::complex<double>(e) - std::complex<double>(0.5, 0.375));
    EXPECT_NEAR(zv.to_host<float>()[0], want / 4, 1e-5);
}

TEST(OpTableGpu, ArithmeticOperatorsOnArrays) {
    KILN_REQUIRE_GPU();
    auto a = uniform(kN, -5, 5), b = uniform(kN, 0.5, 5);
    Array x = kiln::from_host(a), y = kiln::from_host(b);
    auto sum = (x + y).to_host<double>(), diff = (x - 1.5).to_host<double>(),
         prod = (2 * x).to_host<double>(), quot = (x / y).to_host<double>(),
         neg = (-x).to_host<double>();
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(sum[i], a[i] + b[i]);
        ASSERT_EQ(diff[i], a[i] - 1.5);
        ASSERT_EQ(prod[i], 2 * a[i]);
        ASSERT_EQ(quot[i], a[i] / b[i]);
        ASSERT_EQ(neg[i], -a[i]);
    }
    EXPECT_EQ((kiln::arange(0, 4, 1, DType::int32) / 2).dtype(), DType::float64);
}
