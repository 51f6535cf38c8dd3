// kiln::fuse on a GPU: each construct against a reference computed on the host in double
// precision, on fresh random data. Fused calls allocate their outputs, so the memory pool is
// poisoned first (a block filled with NaN bytes and freed just before the call, which the
// stream-ordered allocator hands back): an element the kernel does not write fails.

#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

using kiln::Array;
using kiln::DType;

namespace {

std::mt19937& rng() {
    static std::mt19937 generator(std::random_device{}());
    return generator;
}

std::vector<float> random_floats(std::size_t n, float lo = -4, float hi = 4) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng());
    return v;
}

// Fills then frees @p bytes of pool memory with 0xff bytes (NaN as floats, -1 as integers).
void poison(std::size_t bytes) {
    Array block = kiln::empty({static_cast<std::int64_t>(bytes)}, DType::uint8);
    kiln::fill(block, std::uint8_t{0xff});
}

void near(double got, double want, double tolerance, std::size_t i) {
    ASSERT_TRUE(std::abs(got - want) <= tolerance * (1 + std::abs(want)))
        << "element " << i << ": " << got << " != " << want;
}

double cdf(double x) { // the tanh approximation of the normal CDF the fused functions use
    return 0.5 * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

} // namespace

TEST(FuseGpu, SquaredDifferenceWithABroadcastOperand) {
    KILN_REQUIRE_GPU();
    auto squared_diff =
        kiln::fuse("squared_diff_gpu", [](auto x, auto y) { return (x - y) * (x - y); });
    const int rows = 257, cols = 301;
    auto x = random_floats(static_cast<std::size_t>(rows) * cols), y = random_floats(cols);
    Array xa = kiln::from_host(x, {rows, cols}), ya = kiln::from_host(y);
    poison(std::size_t{4} * rows * cols);
    Array z = squared_diff(xa, ya);
    ASSERT_EQ(z.shape(), (kiln::Dims{rows, cols}));
    ASSERT_EQ(z.dtype(), DType::float32);
    auto r = z.to_host<float>();
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
            const double d = double(x[i * cols + j]) - y[j];
            near(r[i * cols + j], d * d, 1e-6, i * cols + j);
        }
}

TEST(FuseGpu, SumOfProductsOverTheLastAxis) {
    KILN_REQUIRE_GPU();
    auto sum_of_products =
        kiln::fuse("sum_of_products_gpu", [](auto x, auto y) { return kiln::sum(x * y, -1); });
    const int rows = 123, cols = 4099;
    auto x = random_floats(static_cast<std::size_t>(rows) * cols),
         y = random_floats(static_cast<std::size_t>(rows) * cols);
    Array xa = kiln::from_host(x, {rows, cols}), ya = kiln::from_host(y, {rows, cols});
    poison(std::size_t{4} * rows);
    Array s = sum_of_products(xa, ya);
    ASSERT_EQ(s.shape(), (kiln::Dims{rows}));
    auto r = s.to_host<float>();
    for (int i = 0; i < rows; ++i) {
        double want = 0, scale = 0;
        for (int j = 0; j < cols; ++j) {
            want += double(x[i * cols + j]) * y[i * cols + j];
            scale += std::abs(double(x[i * cols + j]) * y[i * cols + j]);
        }
        ASSERT_LE(std::abs(r[i] - want), 1e-5 * scale) << "row " << i;
    }
}

TEST(FuseGpu, SeveralOutputsWithATransposedOperand) {
    KILN_REQUIRE_GPU();
    auto both = kiln::fuse("sum_and_product_gpu", [](auto x, auto y) {
        auto sum = x + y;
        auto product = x * y;
        return std::make_tuple(sum, product);
    });
    const int n = 200, m = 300;
    auto x = random_floats(static_cast<std::size_t>(n) * m),
         y = random_floats(static_cast<std::size_t>(m) * n);
    Array xa = kiln::from_host(x, {n, m}).transpose(); // (m, n), strided
    Array ya = kiln::from_host(y, {m, n});
    poison(std::size_t{2} * n * m * 4);
    kiln::Outputs out = both(xa, ya);
    ASSERT_EQ(out.size(), 2u);
    auto s = out[0].to_host<float>(), p = out[1].to_host<float>();
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            const double a = x[j * m + i], b = y[i * n + j];
            near(s[i * n + j], a + b, 1e-6, i * n + j);
            near(p[i * n + j], a * b, 1e-6, i * n + j);
        }
}

TEST(FuseGpu, ScalarsArePassedNotCompiledAndTheSecondCallCompilesNothing) {
    KILN_REQUIRE_GPU();
    auto axpy = kiln::fuse("axpy_gpu", [](auto a, auto x, auto y) { return a * x + y; });
    const int n = 100003;
    auto x = random_floats(n), y = random_floats(n);
    Array xa = kiln::from_host(x), ya = kiln::from_host(y);
    Array first = axpy(2.5, xa, ya);
    poison(std::size_t{4} * n); // before the snapshot: poisoning may load a fill kernel of its own
    const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
    Array second = axpy(-0.75, xa, ya);
    const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
    EXPECT_EQ(after.compiles, before.compiles);
    EXPECT_EQ(after.disk_hits, before.disk_hits);
    EXPECT_EQ(after.memory_hits, before.memory_hits) << "the fused kernel's own table answers";
    EXPECT_EQ(axpy.traces(), 1u);
    auto r1 = first.to_host<float>(), r2 = second.to_host<float>();
    for (int i = 0; i < n; ++i) {
        near(r1[i], float(2.5f * x[i]) + y[i], 1e-6, i);
        near(r2[i], float(-0.75f * x[i]) + y[i], 1e-6, i);
    }
}

TEST(FuseGpu, ElementwiseWorkAfterAReductionWithKeepdims) {
    KILN_REQUIRE_GPU();
    auto rms = kiln::fuse("rms_gpu", [](auto x, auto scale) {
        return kiln::sqrt(kiln::mean(x * x, 1, {/*keepdims=*/true})) * scale;
    });
    const int rows = 64, cols = 1000;
    auto x = random_floats(static_cast<std::size_t>(rows) * cols);
    poison(std::size_t{4} * rows);
    Array out = rms(kiln::from_host(x, {rows, cols}), 3.0f);
    ASSERT_EQ(out.shape(), (kiln::Dims{rows, 1}));
    auto r = out.to_host<float>();
    for (int i = 0; i < rows; ++i) {
        double s = 0;
        for (int j = 0; j < cols; ++j)
            s += double(x[i * cols + j]) * x[i * cols + j];
        near(r[i], std::sqrt(s / cols) * 3, 1e-5, i);
    }
}

TEST(FuseGpu, ArgmaxOfAnExpression) {
    KILN_REQUIRE_GPU();
    auto best = kiln::fuse("argmax_abs_gpu", [](auto x) { return kiln::argmax(kiln::abs(x), 0); });
    const int rows = 777, cols = 65;
    auto x = random_floats(static_cast<std::size_t>(rows) * cols);
    poison(std::size_t{8} * cols);
    Array idx = best(kiln::from_host(x, {rows, cols}));
    ASSERT_EQ(idx.dtype(), DType::int64);
    auto r = idx.to_host<std::int64_t>();
    for (int j = 0; j < cols; ++j) {
        int want = 0;
        for (int i = 1; i < rows; ++i)
            if (std::abs(x[i * cols + j]) > std::abs(x[want * cols + j])) want = i;
        ASSERT_EQ(r[j], want) << "column " << j;
    }
}

TEST(FuseGpu, WhereClipMaximumAndComparisonsOfInt32AndFloat32) {
    KILN_REQUIRE_GPU();
    auto f = kiln::fuse("where_clip_gpu", [](auto i, auto x) {
        auto picked = kiln::where(i > 0, kiln::clip(x, -1, 1), kiln::maximum(i, x));
        auto flags = (x >= i).astype(DType::int32);
        return std::make_tuple(picked, flags);
    });
    const int n = 50000;
    std::vector<std::int32_t> iv(n);
    std::uniform_int_distribution<int> dist(-3, 3);
    for (auto& v : iv)
        v = dist(rng());
    auto x = random_floats(n);
    poison(std::size_t{12} * n);
    kiln::Outputs out = f(kiln::from_host(iv), kiln::from_host(x));
    ASSERT_EQ(out[0].dtype(), DType::float64);
    ASSERT_EQ(out[1].dtype(), DType::int32);
    auto picked = out[0].to_host<double>();
    auto flags = out[1].to_host<std::int32_t>();
    for (int k = 0; k < n; ++k) {
        const double want = iv[k] > 0 ? std::min(1.0f, std::max(-1.0f, x[k]))
                                      : std::max(double(iv[k]), double(x[k]));
        ASSERT_EQ(picked[k], want) << k;
        ASSERT_EQ(flags[k], double(x[k]) >= iv[k] ? 1 : 0) << k;
    }
}

TEST(FuseGpu, Float16AndFloat64) {
    KILN_REQUIRE_GPU();
    auto f = kiln::fuse("affine_gpu", [](auto x) { return x * 2 + 1; });
    const int n = 4099;
    std::vector<kiln::float16> h(n);
    std::vector<double> hv(n);
    std::uniform_int_distribution<int> dist(-64, 64);
    for (int k = 0; k < n; ++k) {
        hv[k] = dist(rng()) / 8.0; // exact in float16, and so is 2x + 1
        h[k] = kiln::to_float16(hv[k]);
    }
    poison(std::size_t{2} * n);
    Array hz = f(kiln::from_host(h));
    ASSERT_EQ(hz.dtype(), DType::float16);
    auto hr = hz.to_host<kiln::float16>();
    for (int k = 0; k < n; ++k)
        ASSERT_EQ(kiln::to_double(hr[k]), 2 * hv[k] + 1) << k;

    auto g = kiln::fuse("math64_gpu", [](auto x) {
        return kiln::tanh(kiln::log(x)) * kiln::sqrt(x) + kiln::exp(-x);
    });
    std::vector<double> d(n);
    std::uniform_real_distribution<double> positive(0.01, 4);
    for (auto& v : d)
        v = positive(rng());
    poison(std::size_t{8} * n);
    auto r = Array(g(kiln::from_host(d))).to_host<double>();
    for (int k = 0; k < n; ++k)
        near(r[k], std::tanh(std::log(d[k])) * std::sqrt(d[k]) + std::exp(-d[k]), 1e-12, k);
}

TEST(FuseGpu, BlackScholesCallAndPutInOneKernel) {
    KILN_REQUIRE_GPU();
    auto normal_cdf = [](auto x) {
        return 0.5 * (1 + kiln::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    };
    auto black_scholes = kiln::fuse(
        "black_scholes_gpu", [normal_cdf](auto spot, auto strike, auto years, auto r, auto sigma) {
            auto sqrt_years = kiln::sqrt(years);
            auto d1 = (kiln::log(spot / strike) + (r + 0.5 * sigma * sigma) * years) /
                      (sigma * sqrt_years);
            auto d2 = d1 - sigma * sqrt_years;
            auto discount = strike * kiln::exp(-r * years);
            auto call = spot * normal_cdf(d1) - discount * normal_cdf(d2);
            auto put = discount * normal_cdf(-d2) - spot * normal_cdf(-d1);
            return std::make_tuple(call, put);
        });
    const int n = 1 << 16;
    auto spot = random_floats(n, 5, 30), strike = random_floats(n, 1, 100),
         years = random_floats(n, 0.25, 10);
    const double r = 0.02, sigma = 0.3;
    poison(std::size_t{2} * n * 4);
    kiln::Outputs out = black_scholes(kiln::from_host(spot), kiln::from_host(strike),
                                      kiln::from_host(years), r, sigma);
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].dtype(), DType::float32) << "weak scalars keep float32";
    auto call = out[0].to_host<float>(), put = out[1].to_host<float>();
    for (int k = 0; k < n; ++k) {
        const double s = spot[k], kk = strike[k], t = years[k];
        const double d1 =
            (std::log(s / kk) + (r + 0.5 * sigma * sigma) * t) / (sigma * std::sqrt(t));
        const double d2 = d1 - sigma * std::sqrt(t);
        const double discount = kk * std::exp(-r * t);
        const double scale = s + kk;
        ASSERT_LE(std::abs(call[k] - (s * cdf(d1) - discount * cdf(d2))), 1e-5 * scale) << k;
        ASSERT_LE(std::abs(put[k] - (discount * cdf(-d2) - s * cdf(-d1))), 1e-5 * scale) << k;
    }
}

TEST(FuseGpu, ComplexMaxAndArgminInNumPysOrder) {
    KILN_REQUIRE_GPU();
    auto peak = kiln::fuse("complex_peak_gpu", [](auto z) { return kiln::max(z * 2, 1); });
    auto first = kiln::fuse("complex_first_min_gpu", [](auto z) { return kiln::argmin(z, 0); });
    const int rows = 129, cols = 67;
    // Real parts from a few values: ties everywhere, which the imaginary parts break.
    std::uniform_int_distribution<int> step(-2, 2);
    std::uniform_real_distribution<float> unit(-1, 1);
    std::vector<std::complex<float>> z(static_cast<std::size_t>(rows) * cols);
    for (auto& e : z)
        e = {0.5f * static_cast<float>(step(rng())), unit(rng())};
    z[5 * cols + 3] = {std::numeric_limits<float>::quiet_NaN(), 1};
    z[9 * cols + 3] = {1, std::numeric_limits<float>::quiet_NaN()};
    const Array za = kiln::from_host(z, {rows, cols});
    auto lex_less = [](std::complex<float> a, std::complex<float> b) {
        return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
    };
    auto nan_in = [](std::complex<float> a) {
        return std::isnan(a.real()) || std::isnan(a.imag());
    };
    poison(std::size_t{8} * rows);
    const Array peak_array = peak(za);
    const auto peaks = peak_array.to_host<std::complex<float>>();
    ASSERT_EQ(peaks.size(), static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) {
        std::complex<float> want = z[static_cast<std::size_t>(i) * cols] * 2.0f;
        for (int j = 1; j < cols && !nan_in(want); ++j) {
            const std::complex<float> e = z[static_cast<std::size_t>(i) * cols + j] * 2.0f;
            if (nan_in(e) || lex_less(want, e)) want = e;
        }
        const std::complex<float> got = peaks[static_cast<std::size_t>(i)];
        ASSERT_TRUE(nan_in(want) ? nan_in(got) : got == want) << "row " << i << ": " << got;
    }
    poison(std::size_t{8} * cols);
    const Array first_array = first(za);
    const auto firsts = first_array.to_host<std::int64_t>();
    for (int j = 0; j < cols; ++j) {
        int want = 0;
        for (int i = 1; i < rows && !nan_in(z[static_cast<std::size_t>(want) * cols + j]); ++i) {
            const std::complex<float> e = z[static_cast<std::size_t>(i) * cols + j];
            if (nan_in(e) || lex_less(e, z[static_cast<std::size_t>(want) * cols + j])) want = i;
        }
        ASSERT_EQ(firsts[static_cast<std::size_t>(j)], want) << "column " << j;
    }
    EXPECT_EQ(firsts[3], 5) << "the first NaN in column 3";
}
