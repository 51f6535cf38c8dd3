// CuPy-library-style kernels on the GPU: each construct of CuPy's kernel prelude, headers and
// raw-array API gives CuPy's values, computed here on the host. Outputs are poisoned first, so an
// element a kernel leaves unwritten fails.

#include "cupy_library_kernels.hpp"
#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

using kiln::Array;
using kiln::DType;

namespace {

std::mt19937& rng() {
    static std::mt19937 engine(std::random_device{}());
    return engine;
}

constexpr double kPi = 3.141592653589793238462643383279502884;

} // namespace

TEST(CupyLibraryKernelsGpu, SearchsortedFindsEveryElementWhateverOthersReturn) {
    KILN_REQUIRE_GPU();
    std::vector<float> bins(50);
    for (std::size_t b = 0; b < bins.size(); ++b)
        bins[b] = static_cast<float>(b) * 0.5f;
    const int n = 4099; // a vectorized body and a tail
    std::vector<float> x(n);
    std::uniform_int_distribution<int> pick(-4, 60);
    for (int k = 0; k < n; ++k)
        x[k] = k % 7 == 3 ? std::numeric_limits<float>::quiet_NaN()
                          : static_cast<float>(pick(rng())) * 0.25f;
    Array dx = kiln::from_host(x, {n}), dbins = kiln::from_host(bins, {50});
    for (bool right : {false, true}) {
        SCOPED_TRACE(right ? "right" : "left");
        Array y = kiln::full({n}, -7, DType::int64);
        cupy_library::searchsorted()(dx, dbins, std::int64_t{50}, right, y);
        const auto got = y.to_host<std::int64_t>();
        for (int k = 0; k < n; ++k) {
            std::int64_t want = 50;
            if (!std::isnan(x[k]))
                want = (right ? std::upper_bound(bins.begin(), bins.end(), x[k])
                              : std::lower_bound(bins.begin(), bins.end(), x[k])) -
                       bins.begin();
            ASSERT_EQ(got[k], want) << "element " << k << " x=" << x[k];
        }
    }
}

TEST(CupyLibraryKernelsGpu, AnEarlyReturnLeavesTheThreadsOtherElementsWritten) {
    KILN_REQUIRE_GPU();
    const int n = 1 << 16;
    std::vector<float> x(n);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (auto& v : x)
        v = dist(rng());
    Array y = kiln::full({n}, -99.0, DType::float32);
    cupy_library::clip_negative_early()(kiln::from_host(x, {n}), y);
    const auto got = y.to_host<float>();
    for (int k = 0; k < n; ++k)
        ASSERT_EQ(got[k], x[k] < 0 ? 0.f : x[k] * 2) << k;
}

TEST(CupyLibraryKernelsGpu, AnElementAMacroSkipsKeepsItsOutputValue) {
    KILN_REQUIRE_GPU();
    const int n = 4096 + 3;
    std::vector<float> x(n);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (auto& v : x)
        v = dist(rng());
    Array y = kiln::full({n}, -99.0, DType::float32);
    cupy_library::skip_negative()(kiln::from_host(x, {n}), y);
    const auto got = y.to_host<float>();
    for (int k = 0; k < n; ++k)
        ASSERT_EQ(got[k], x[k] < 0 ? -99.f : x[k] * 2) << k;
}

TEST(CupyLibraryKernelsGpu, MatPtrsFillsTheGivenOutputFromBroadcastInputs) {
    KILN_REQUIRE_GPU();
    const std::vector<std::uint64_t> base = {1000, 2000000, 3000000000000ull};
    const std::vector<std::uint64_t> stride = {8, 64, 4096};
    Array out = kiln::full({3, 4}, std::uint64_t{1}, DType::uint64);
    cupy_library::mat_ptrs()(kiln::from_host(base, {3, 1}), kiln::from_host(stride, {3, 1}), out);
    const auto got = out.to_host<std::uint64_t>();
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c)
            EXPECT_EQ(got[r * 4 + c], base[r] + c * stride[r]) << r << ", " << c;
}

TEST(CupyLibraryKernelsGpu, TheIndexObjectGivesEachElementsIndexPerDimension) {
    KILN_REQUIRE_GPU();
    const auto k = cupy_library::index_digits();
    for (const kiln::Dims& shape :
         {kiln::Dims{1000}, kiln::Dims{4, 5, 6}, kiln::Dims{3, 128}, kiln::Dims{40, 40}}) {
        SCOPED_TRACE(shape.to_string());
        const bool transposed = shape == kiln::Dims{40, 40}; // the tiled layout
        Array x = kiln::zeros(shape, DType::float32);
        Array y = kiln::full(shape, -1, DType::int64);
        k(transposed ? x.transpose() : x, y);
        const auto got = y.to_host<std::int64_t>();
        const int nd = shape.size();
        for (std::int64_t i = 0; i < shape.product(); ++i) {
            std::int64_t rest = i, digits = 0, scale = 1;
            for (int d = nd - 1; d >= 0; --d) {
                digits += (rest % shape[d]) * scale;
                rest /= shape[d];
                scale *= 1000;
            }
            ASSERT_EQ(got[static_cast<std::size_t>(i)], digits * 10 + nd) << i;
        }
    }
}

TEST(CupyLibraryKernelsGpu, MathConstantsHaveTheirValues) {
    KILN_REQUIRE_GPU();
    const std::vector<double> x = {0.0, 1.0, -2.5, 1e10};
    Array y = kiln::full({4}, -1.0, DType::float64), c = kiln::full({4}, -1.0, DType::float64);
    cupy_library::math_constants()(kiln::from_host(x, {4}), y, c);
    const auto gy = y.to_host<double>(), gc = c.to_host<double>();
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(gy[k], x[k] * kPi);
        EXPECT_EQ(gc[k], 0.318309886183790671537767526745028724); // 1/pi, correctly rounded
    }
}

TEST(CupyLibraryKernelsGpu, AtomicAddSums64BitValuesOfEitherSign) {
    KILN_REQUIRE_GPU();
    const int n = 10000, bins = 8;
    std::vector<std::int64_t> x(n);
    std::vector<std::int32_t> bin(n);
    std::vector<std::int64_t> want(bins, 0);
    std::uniform_int_distribution<std::int64_t> value(-(std::int64_t{1} << 40),
                                                      std::int64_t{1} << 40);
    std::uniform_int_distribution<int> which(0, bins - 1);
    for (int k = 0; k < n; ++k) {
        x[k] = value(rng());
        bin[k] = which(rng());
        want[bin[k]] += x[k];
    }
    Array hist = kiln::zeros({bins}, DType::int64), uhist = kiln::zeros({bins}, DType::uint64);
    Array y = kiln::full({n}, -1, DType::int64);
    cupy_library::histogram64()(kiln::from_host(x, {n}), kiln::from_host(bin, {n}), hist, uhist, y);
    const auto h = hist.to_host<std::int64_t>();
    const auto u = uhist.to_host<std::uint64_t>();
    for (int b = 0; b < bins; ++b) {
        EXPECT_EQ(h[b], want[b]) << b;
        EXPECT_EQ(u[b], static_cast<std::uint64_t>(want[b])) << b;
    }
    EXPECT_EQ(y.to_host<std::int64_t>(), x);
}

TEST(CupyLibraryKernelsGpu, RawArrayMethodsFollowCupy) {
    KILN_REQUIRE_GPU();
    std::vector<float> host(30);
    for (int k = 0; k < 30; ++k)
        host[k] = static_cast<float>(k);
    Array stored = kiln::from_host(host, {6, 5});
    Array x = stored.transpose(); // (5, 6) with strides (4, 20) bytes
    Array a = kiln::full({30}, -1.0, DType::float32), b = kiln::full({30}, -1.0, DType::float32);
    const Array ints[] = {kiln::full({30}, -1, DType::int64), kiln::full({30}, -1, DType::int64),
                          kiln::full({30}, -1, DType::int64), kiln::full({30}, -1, DType::int64)};
    cupy_library::raw_methods()(x, a, b, ints[0], ints[1], ints[2], ints[3]);
    const auto ga = a.to_host<float>(), gb = b.to_host<float>();
    for (int i = 0; i < 30; ++i) {
        const int r = i / 6, c = i % 6; // x[r][c] = stored[c][r]
        EXPECT_EQ(ga[i], host[c * 5 + r]) << i;
        EXPECT_EQ(gb[i], host[c * 5 + r]) << i;
    }
    EXPECT_EQ(ints[0].to_host<std::int64_t>(), std::vector<std::int64_t>(30, 4));
    EXPECT_EQ(ints[1].to_host<std::int64_t>(), std::vector<std::int64_t>(30, 20));
    EXPECT_EQ(ints[2].to_host<std::int64_t>(), std::vector<std::int64_t>(30, 30));
    EXPECT_EQ(ints[3].to_host<std::int64_t>(), std::vector<std::int64_t>(30, 6));
}

TEST(CupyLibraryKernelsGpu, RawLinearIndexIsCOrderOnThreeDimensions) {
    KILN_REQUIRE_GPU();
    std::vector<double> host(24);
    for (int k = 0; k < 24; ++k)
        host[k] = k * 1.5;
    Array cube = kiln::from_host(host, {4, 3, 2}).transpose({2, 0, 1}); // (2, 4, 3)
    Array y = kiln::full({24}, -1.0, DType::float64);
    cupy_library::raw_linear()(cube, y);
    const auto got = y.to_host<double>();
    for (int i = 0; i < 24; ++i) {
        const int d0 = i / 12, d1 = (i / 3) % 4, d2 = i % 3; // view index
        EXPECT_EQ(got[i], host[d1 * 6 + d2 * 2 + d0]) << i;  // stored index (d1, d2, d0)
    }
}

TEST(CupyLibraryKernelsGpu, ComplexSettersAndThrustSpelling) {
    KILN_REQUIRE_GPU();
    const std::vector<std::complex<float>> z = {{1, 2}, {-3, 4}, {0, -5}, {6, 0}};
    Array w = kiln::full({4}, std::complex<double>(-9, -9), DType::complex64);
    Array m = kiln::full({4}, -1.0, DType::float32);
    cupy_library::complex_setters()(kiln::from_host(z, {4}), w, m);
    const auto gw = w.to_host<std::complex<float>>();
    const auto gm = m.to_host<float>();
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(gw[k], std::complex<float>(z[k].imag(), -z[k].real())) << k;
        EXPECT_NEAR(gm[k], std::abs(z[k]), 1e-6f * std::abs(z[k])) << k;
    }
}

TEST(CupyLibraryKernelsGpu, TypeTraitsPickTheBranchPerType) {
    KILN_REQUIRE_GPU();
    const auto k = cupy_library::type_traits();
    Array yf = kiln::full({3}, -1.0, DType::float32);
    k(kiln::from_host(std::vector<float>{1.5f, 2, 3}, {3}), yf);
    EXPECT_EQ(yf.to_host<float>(), (std::vector<float>{3, 4, 6}));
    Array yi = kiln::full({3}, -1, DType::int32);
    k(kiln::from_host(std::vector<std::int32_t>{1, 2, 3}, {3}), yi);
    EXPECT_EQ(yi.to_host<std::int32_t>(), (std::vector<std::int32_t>{2, 3, 4}));
}

TEST(CupyLibraryKernelsGpu, RawScalarAndUnderscoreName) {
    KILN_REQUIRE_GPU();
    Array y = kiln::full({3}, -1.0, DType::float32);
    cupy_library::raw_scalar_and_underscore_name()(
        kiln::from_host(std::vector<float>{1, 2, 3}, {3}), 2.0f, 10, y);
    EXPECT_EQ(y.to_host<float>(), (std::vector<float>{12, 14, 16}));
}

TEST(CupyLibraryKernelsGpu, Float16RoundsToHalfPrecision) {
    KILN_REQUIRE_GPU();
    const std::vector<float> x = {1.0f, 0.1f, 65504.0f, 1.0f + 1.0f / 4096, -3.5f};
    const std::vector<float> want = {1.0f, 0.0999755859375f, 65504.0f, 1.0f, -3.5f};
    Array y = kiln::full({5}, -1.0, DType::float32);
    cupy_library::half_round_trip()(kiln::from_host(x, {5}), y);
    EXPECT_EQ(y.to_host<float>(), want);
}

TEST(CupyLibraryKernelsGpu, PopcountThroughCudaStdBit) {
    KILN_REQUIRE_GPU();
    const std::vector<std::uint32_t> x = {0u, 1u, 0xffu, 0x80000001u, 0xffffffffu};
    Array y = kiln::full({5}, -1, DType::int32);
    cupy_library::popcount()(kiln::from_host(x, {5}), y);
    const auto got = y.to_host<std::int32_t>();
    for (int k = 0; k < 5; ++k)
        EXPECT_EQ(got[k], __builtin_popcount(x[k])) << k;
}

TEST(CupyLibraryKernelsGpu, AnIdentityFromAParameterSeedsTheReduction) {
    KILN_REQUIRE_GPU();
    const int rows = 37, cols = 5000;
    std::vector<float> x(static_cast<std::size_t>(rows) * cols);
    std::uniform_real_distribution<float> dist(-10.f, 10.f);
    for (auto& v : x)
        v = dist(rng());
    Array dx = kiln::from_host(x, {rows, cols});
    for (float init : {-100.f, 0.f, 9.5f, 100.f}) {
        SCOPED_TRACE(init);
        for (int axis : {0, 1}) {
            const int outs = axis == 1 ? rows : cols;
            Array y = kiln::full({outs}, -1e30, DType::float32);
            cupy_library::max_from()(kiln::ReduceCall{axis}, dx, init, y);
            const auto got = y.to_host<float>();
            for (int o = 0; o < outs; ++o) {
                float want = init;
                const int len = axis == 1 ? cols : rows;
                for (int j = 0; j < len; ++j)
                    want = std::max(want, axis == 1 ? x[o * cols + j] : x[j * cols + o]);
                ASSERT_EQ(got[o], want) << "axis " << axis << " output " << o;
            }
        }
        Array all = kiln::full({}, -1e30, DType::float32);
        cupy_library::max_from()(dx, init, all);
        EXPECT_EQ(all.to_host<float>()[0], std::max(init, *std::max_element(x.begin(), x.end())));
    }
}

TEST(CupyLibraryKernelsGpu, UnderscoreJIsTheLinearIndexOverReducedThenKeptAxes) {
    KILN_REQUIRE_GPU();
    const std::int64_t rows = 12, cols = 300;
    Array x = kiln::zeros({rows, cols}, DType::int32);
    Array y = kiln::full({rows}, -1, DType::int64);
    cupy_library::sum_of_j()(kiln::ReduceCall{1}, x, y);
    const auto got = y.to_host<std::int64_t>();
    for (std::int64_t i = 0; i < rows; ++i) // sum over J of J * rows + i
        EXPECT_EQ(got[i], rows * cols * (cols - 1) / 2 + cols * i) << i;
}

TEST(CupyLibraryKernelsGpu, RawKernelsIncludingCupysHeadersRun) {
    KILN_REQUIRE_GPU();
    const int n = 300;
    std::vector<float> x(n);
    for (int k = 0; k < n; ++k)
        x[k] = static_cast<float>(k % 50) - 20.f;
    Array dx = kiln::from_host(x, {n});
    for (const char* header : cupy_library::kCupyHeaders) {
        SCOPED_TRACE(header);
        kiln::RawKernel k(cupy_library::raw_source_with(header), "cupy_header_kernel");
        Array out = kiln::full({n}, -12345.0, DType::float32);
        k({(n + 127) / 128}, {128}, dx.data<float>(), out.data<float>(), n);
        const auto got = out.to_host<float>();
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(got[i], cupy_library::raw_expected(header, x[i])) << i;
    }
}

TEST(CupyLibraryKernelsGpu, GeneralCosineWindowMatchesItsFormula) {
    KILN_REQUIRE_GPU();
    // cupyx.scipy.signal.windows.general_cosine(M, a): the loop_prep's delta is 2 pi / (M - 1).
    for (const std::vector<double>& a :
         {std::vector<double>{0.5, 0.5}, std::vector<double>{0.42, 0.5, 0.08},
          std::vector<double>{1.0, 1.942604, 1.340318, 0.440811, 0.043097}}) {
        for (int m : {2, 51, 4097}) {
            SCOPED_TRACE(std::to_string(a.size()) + " terms, M = " + std::to_string(m));
            Array w = kiln::full({m}, std::nan(""), DType::float64);
            cupy_library::general_cosine()(kiln::from_host(a), static_cast<std::int32_t>(a.size()),
                                           w);
            const auto got = w.to_host<double>();
            const double delta = (kPi - -kPi) / (m - 1);
            for (int i = 0; i < m; ++i) {
                const double fac = -kPi + delta * i;
                double want = 0;
                for (std::size_t k = 0; k < a.size(); ++k)
                    want += a[k] * std::cos(static_cast<double>(k) * fac);
                ASSERT_NEAR(got[i], want, 1e-12) << i;
            }
        }
    }
}

TEST(CupyLibraryKernelsGpu, VarianceCoreOfFloat16ValuesWithAFloat32Mean) {
    KILN_REQUIRE_GPU();
    // CuPy's _var_core_float32 over axis 1 of a float16 array, its mean in float32 (keepdims).
    const int rows = 48, cols = 1000;
    std::vector<kiln::float16> x(static_cast<std::size_t>(rows) * cols);
    std::vector<float> mean(rows);
    std::normal_distribution<double> dist(3.0, 2.0);
    for (int r = 0; r < rows; ++r) {
        double sum = 0;
        for (int c = 0; c < cols; ++c) {
            const kiln::float16 h = kiln::to_float16(dist(rng()));
            x[static_cast<std::size_t>(r) * cols + c] = h;
            sum += kiln::to_double(h);
        }
        mean[r] = static_cast<float>(sum / cols);
    }
    const float alpha = 1.0f / cols;
    Array out = kiln::full({rows}, std::nan(""), DType::float32);
    cupy_library::var_core_float32()(kiln::ReduceCall{1}, kiln::from_host(x, {rows, cols}),
                                     kiln::from_host(mean, {rows, 1}), alpha, out);
    const auto got = out.to_host<float>();
    for (int r = 0; r < rows; ++r) {
        double want = 0;
        for (int c = 0; c < cols; ++c) {
            // `x - mean` in float, as CuPy's float16 computes it, then squared in float.
            const double d = kiln::to_double(x[static_cast<std::size_t>(r) * cols + c]) - mean[r];
            want += d * d;
        }
        want *= alpha;
        EXPECT_NEAR(got[r], want, 1e-5 * want) << "row " << r;
    }
}

TEST(CupyLibraryKernelsGpu, NanAwareComplexVarianceAndCountSkipNans) {
    KILN_REQUIRE_GPU();
    // CuPy's nanvar over axis 1 of a complex64 array with NaNs in either part: the count of
    // values that are not NaN, their sum, then _nanvar_core_complex64 with ddof 1.
    const int rows = 16, cols = 300;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::complex<float>> x(static_cast<std::size_t>(rows) * cols);
    std::uniform_real_distribution<float> dist(-2.f, 2.f);
    std::uniform_int_distribution<int> which(0, 9);
    for (auto& z : x) {
        const int w = which(rng());
        z = {w == 0 ? nan : dist(rng()), w == 1 ? nan : dist(rng())};
    }
    Array dx = kiln::from_host(x, {rows, cols});
    Array count = kiln::full({rows, 1}, -1, DType::int64);
    cupy_library::count_non_nan()(kiln::ReduceCall{1, true}, dx, count);
    const auto counts = count.to_host<std::int64_t>();
    std::vector<std::complex<float>> sums(rows);
    for (int r = 0; r < rows; ++r) {
        std::int64_t n = 0;
        std::complex<double> s = 0;
        for (int c = 0; c < cols; ++c) {
            const std::complex<float> z = x[static_cast<std::size_t>(r) * cols + c];
            if (std::isnan(z.real()) || std::isnan(z.imag())) continue;
            ++n;
            s += std::complex<double>(z);
        }
        ASSERT_EQ(counts[r], n) << "row " << r;
        sums[r] = std::complex<float>(s);
    }
    Array out = kiln::full({rows}, std::nan(""), DType::float32);
    cupy_library::nanvar_core_complex64()(kiln::ReduceCall{1}, dx, kiln::from_host(sums, {rows, 1}),
                                          count, std::int64_t{1}, out);
    const auto got = out.to_host<float>();
    for (int r = 0; r < rows; ++r) {
        const std::complex<double> mean = std::complex<double>(sums[r]) / double(counts[r]);
        double want = 0;
        for (int c = 0; c < cols; ++c) {
            const std::complex<float> z = x[static_cast<std::size_t>(r) * cols + c];
            if (std::isnan(z.real()) || std::isnan(z.imag())) continue;
            want += std::norm(std::complex<double>(z) - mean) / double(counts[r] - 1);
        }
        EXPECT_NEAR(got[r], want, 1e-4 * want) << "row " << r;
    }
    // isnan, isinf and isfinite of complex values, elementwise.
    kiln::ElementwiseKernel classify("T z", "bool nan, bool inf, bool finite",
                                     "nan = isnan(z); inf = isinf(z); finite = isfinite(z)",
                                     "classify");
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<std::complex<float>> special{{1, 2},    {nan, 0},   {0, nan},  {inf, 0},
                                                   {0, -inf}, {inf, nan}, {nan, nan}};
    const int m = static_cast<int>(special.size());
    Array n = kiln::zeros({m}, DType::bool_), i = kiln::zeros({m}, DType::bool_),
          f = kiln::zeros({m}, DType::bool_);
    classify(kiln::astype(kiln::from_host(special), DType::complex128), n, i, f);
    // bool arrays come back through bool buffers.
    const auto gn = std::make_unique<bool[]>(m), gi = std::make_unique<bool[]>(m),
               gf = std::make_unique<bool[]>(m);
    n.copy_to_host_bytes(gn.get());
    i.copy_to_host_bytes(gi.get());
    f.copy_to_host_bytes(gf.get());
    for (int k = 0; k < m; ++k) {
        const std::complex<float> z = special[k];
        const bool is_nan = std::isnan(z.real()) || std::isnan(z.imag());
        const bool is_inf = std::isinf(z.real()) || std::isinf(z.imag());
        EXPECT_EQ(gn[k], is_nan) << k;
        EXPECT_EQ(gi[k], is_inf) << k; // NumPy: (inf, nan) is both
        EXPECT_EQ(gf[k], !is_nan && !is_inf) << k;
    }
}

TEST(CupyLibraryKernelsGpu, CudaWorkaroundServesAPreambleAndARawModule) {
    KILN_REQUIRE_GPU();
    // bitwise_count: std::is_signed from <cupy/cuda_workaround.h> in a preamble.
    const std::vector<std::int64_t> values{
        0, 1, -1, 255, -256, 0x7fffffffffffffffLL, std::numeric_limits<std::int64_t>::min()};
    for (DType d : {DType::int64, DType::int8}) {
        SCOPED_TRACE(kiln::name(d));
        Array x = kiln::astype(kiln::from_host(values), d);
        Array out = kiln::full({7}, 99, DType::uint8);
        cupy_library::bitwise_count()(x, out);
        const auto got = out.to_host<std::uint8_t>();
        for (int k = 0; k < 7; ++k) {
            std::int64_t v = values[k];
            if (d == DType::int8) v = static_cast<std::int8_t>(v);
            const std::uint64_t magnitude =
                v < 0 ? ~static_cast<std::uint64_t>(v) + 1 : static_cast<std::uint64_t>(v);
            int bits = 0;
            for (std::uint64_t u = magnitude; u; u &= u - 1)
                ++bits;
            EXPECT_EQ(got[k], bits) << values[k];
        }
    }
    // The channelizer-style module: each tile of 8 threads sums its conjugated inputs.
    kiln::CompileOptions options;
    options.options = {"-std=c++17"};
    std::vector<std::string> names(std::begin(cupy_library::kChannelizerKernels),
                                   std::end(cupy_library::kChannelizerKernels));
    kiln::RawModule module(cupy_library::kChannelizerSource, options, names);
    const int n = 256;
    std::vector<std::complex<float>> z(n);
    std::vector<float> real(n);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (int k = 0; k < n; ++k) {
        z[k] = {dist(rng()), dist(rng())};
        real[k] = dist(rng());
    }
    Array dz = kiln::from_host(z), dr = kiln::from_host(real);
    Array yz = kiln::full({n / 8}, std::complex<double>(7, 7), DType::complex64);
    Array yr = kiln::full({n / 8}, std::complex<double>(7, 7), DType::complex64);
    module.get_function(names[1])({n / 64}, {64}, n, dz.data<void>(), yz.data<void>());
    module.get_function(names[0])({n / 64}, {64}, n, dr.data<void>(), yr.data<void>());
    const auto gz = yz.to_host<std::complex<float>>(), gr = yr.to_host<std::complex<float>>();
    for (int t = 0; t < n / 8; ++t) {
        std::complex<double> want_z = 0;
        double want_r = 0;
        for (int k = t * 8; k < t * 8 + 8; ++k) {
            want_z += std::conj(std::complex<double>(z[k]));
            want_r += real[k];
        }
        EXPECT_NEAR(gz[t].real(), want_z.real(), 1e-5) << t;
        EXPECT_NEAR(gz[t].imag(), want_z.imag(), 1e-5) << t;
        EXPECT_NEAR(gr[t].real(), want_r, 1e-5) << t;
        EXPECT_EQ(gr[t].imag(), 0.f) << t;
    }
}
