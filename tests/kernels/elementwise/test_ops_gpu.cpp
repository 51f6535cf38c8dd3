// The ready elementwise operations against host references, with NumPy's result dtypes.

#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using kiln::Array;
using kiln::DType;

namespace {

std::vector<float> random_floats(std::size_t n, float lo, float hi) {
    static std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

constexpr int kN = 10007;

} // namespace

TEST(OpsGpu, ArithmeticAndComparisonsOfFloats) {
    KILN_REQUIRE_GPU();
    auto x = random_floats(kN, -5, 5), y = random_floats(kN, 0.5f, 5);
    Array xa = kiln::from_host(x), ya = kiln::from_host(y);
    auto add = kiln::add(xa, ya).to_host<float>();
    auto sub = kiln::subtract(xa, ya).to_host<float>();
    auto mul = kiln::multiply(xa, 2.5f).to_host<float>();
    auto div = kiln::divide(xa, ya).to_host<float>();
    auto mx = kiln::maximum(xa, ya).to_host<float>();
    auto mn = kiln::minimum(xa, 0.0f).to_host<float>();
    std::vector<std::uint8_t> less(kN);
    kiln::less(xa, ya).copy_to_host_bytes(less.data());
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(add[i], x[i] + y[i]);
        ASSERT_EQ(sub[i], x[i] - y[i]);
        ASSERT_EQ(mul[i], x[i] * 2.5f);
        ASSERT_EQ(div[i], x[i] / y[i]);
        ASSERT_EQ(mx[i], std::max(x[i], y[i]));
        ASSERT_EQ(mn[i], std::min(x[i], 0.0f));
        ASSERT_EQ(less[i], x[i] < y[i]);
    }
}

TEST(OpsGpu, ResultDtypesFollowNumPy) {
    KILN_REQUIRE_GPU();
    Array i32 = kiln::arange(0, 100, 1, DType::int32);
    Array f32 = kiln::full({100}, 0.5, DType::float32);
    EXPECT_EQ(kiln::add(i32, f32).dtype(), DType::float64);
    EXPECT_EQ(kiln::add(i32, 1).dtype(), DType::int32) << "C++ scalars are weak";
    EXPECT_EQ(kiln::add(i32, 1.5).dtype(), DType::float64);
    EXPECT_EQ(kiln::divide(i32, 2).dtype(), DType::float64);
    EXPECT_EQ(kiln::equal(i32, 3).dtype(), DType::bool_);
    EXPECT_EQ(kiln::sqrt(i32).dtype(), DType::float64);
    EXPECT_EQ(kiln::sqrt(kiln::zeros({4}, DType::int8)).dtype(), DType::float16);
    auto halves = kiln::divide(i32, 2).to_host<double>();
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(halves[i], i / 2.0);
    auto sums = kiln::add(i32, f32).to_host<double>();
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(sums[i], i + 0.5);
}

TEST(OpsGpu, MathFunctionsMatchTheHostInDoublePrecision) {
    KILN_REQUIRE_GPU();
    std::vector<double> x(kN);
    auto f = random_floats(kN, 0.01f, 3);
    for (int i = 0; i < kN; ++i)
        x[i] = f[i];
    Array xa = kiln::from_host(x);
    struct Case {
        const char* name;
        Array (*op)(const Array&, const kiln::OpOptions&);
        double (*ref)(double);
    };
    const Case cases[] = {
        {"exp", kiln::exp, [](double v) { return std::exp(v); }},
        {"log", kiln::log, [](double v) { return std::log(v); }},
        {"sqrt", kiln::sqrt, [](double v) { return std::sqrt(v); }},
        {"sin", kiln::sin, [](double v) { return std::sin(v); }},
        {"cos", kiln::cos, [](double v) { return std::cos(v); }},
        {"tanh", kiln::tanh, [](double v) { return std::tanh(v); }},
    };
    for (const auto& c : cases) {
        auto out = c.op(xa, {}).to_host<double>();
        for (int i = 0; i < kN; ++i)
            ASSERT_NEAR(out[i], c.ref(x[i]), 1e-14 * (1 + std::fabs(c.ref(x[i])))) << c.name;
    }
    auto p = kiln::power(xa, 2.5).to_host<double>();
    for (int i = 0; i < kN; ++i)
        ASSERT_NEAR(p[i], std::pow(x[i], 2.5), 1e-13 * (1 + p[i]));
}

TEST(OpsGpu, AbsWhereClipAstypeFillAndContiguousCopies) {
    KILN_REQUIRE_GPU();
    auto x = random_floats(kN, -3, 3);
    Array xa = kiln::from_host(x);
    auto a = kiln::abs(xa).to_host<float>();
    auto w = kiln::where(kiln::greater(xa, 0.0f), xa, -1.0f).to_host<float>();
    auto c = kiln::clip(xa, -1.0f, 1.5f).to_host<float>();
    auto i = kiln::astype(xa, DType::int16).to_host<std::int16_t>();
    for (int k = 0; k < kN; ++k) {
        ASSERT_EQ(a[k], std::fabs(x[k]));
        ASSERT_EQ(w[k], x[k] > 0 ? x[k] : -1.0f);
        ASSERT_EQ(c[k], std::min(std::max(x[k], -1.0f), 1.5f));
        ASSERT_EQ(i[k], static_cast<std::int16_t>(x[k]));
    }
    auto ints = kiln::abs(kiln::arange(-50, 50, 1, DType::int64)).to_host<std::int64_t>();
    for (int k = 0; k < 100; ++k)
        ASSERT_EQ(ints[k], std::llabs(k - 50));

    Array m = kiln::from_host(x, {1, kN}).broadcast_to({3, kN});
    Array t = kiln::ascontiguousarray(
        kiln::from_host(random_floats(std::size_t{64} * 96, -1, 1), {64, 96}).transpose());
    EXPECT_TRUE(t.is_c_contiguous());
    auto dense = kiln::ascontiguousarray(m).to_host<float>();
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < kN; ++k)
            ASSERT_EQ(dense[r * kN + k], x[k]);

    Array target = kiln::zeros({8, 8}, DType::float64);
    kiln::fill(target.slice({kiln::Slice::range(0, 8, 2)}), 2.5);
    auto filled = target.to_host<double>();
    for (int r = 0; r < 8; ++r)
        for (int k = 0; k < 8; ++k)
            ASSERT_EQ(filled[r * 8 + k], r % 2 ? 0.0 : 2.5);
}

TEST(OpsGpu, ComplexValuesHaveNoOrder) {
    KILN_REQUIRE_GPU();
    Array z = kiln::zeros({4}, DType::complex64);
    EXPECT_THROW(kiln::less(z, z), kiln::ArgumentError);
    EXPECT_THROW(kiln::maximum(z, z), kiln::ArgumentError);
    EXPECT_EQ(kiln::abs(z).dtype(), DType::float32);
}
