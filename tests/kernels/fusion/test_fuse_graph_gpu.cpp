// kiln::fuse's split and row plans, in-place updates and complex literals on a GPU, against
// references computed on the host in double precision, on fresh random data.

#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
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

void near(double got, double want, double tolerance, std::size_t i) {
    ASSERT_TRUE(std::abs(got - want) <= tolerance * (1 + std::abs(want)))
        << "element " << i << ": " << got << " != " << want;
}

// Softmax of each row of a rows x cols matrix (row-major), in double.
std::vector<double> softmax_rows(const std::vector<float>& x, int rows, int cols) {
    std::vector<double> y(x.size());
    for (int i = 0; i < rows; ++i) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < cols; ++j)
            m = std::max(m, double(x[i * cols + j]));
        for (int j = 0; j < cols; ++j)
            s += std::exp(x[i * cols + j] - m);
        for (int j = 0; j < cols; ++j)
            y[i * cols + j] = std::exp(x[i * cols + j] - m) / s;
    }
    return y;
}

auto softmax_function = [](auto x) {
    auto e = kiln::exp(x - kiln::max(x, -1, {true}));
    return e / kiln::sum(e, -1, {true});
};

} // namespace

TEST(FuseGraphGpu, SoftmaxRowsByTheRowKernelAndBySplitKernels) {
    KILN_REQUIRE_GPU();
    auto softmax = kiln::fuse("softmax_gpu", softmax_function);
    // A block per row (long rows: several warps, shared memory between them), a warp per row
    // (short ones: eight rows in a block, the last block partly used).
    for (const auto& [rows, cols] : {std::pair{300, 1000}, std::pair{7, 5000}, std::pair{33, 1},
                                     std::pair{1001, 100}, std::pair{50, 200}}) {
        auto x = random_floats(static_cast<std::size_t>(rows) * cols, -20, 20);
        const Array xa = kiln::from_host(x, {rows, cols});
        const auto want = softmax_rows(x, rows, cols);
        const auto got = Array(softmax(xa)).to_host<float>();
        for (std::size_t i = 0; i < want.size(); ++i)
            near(got[i], want[i], 1e-5, i);
        // The same through a transposed copy: a strided view takes the split plan.
        const Array xt = kiln::ascontiguousarray(xa.transpose()).transpose();
        const Array yt = softmax(xt);
        ASSERT_EQ(yt.shape(), xa.shape());
        const auto split = kiln::ascontiguousarray(yt).to_host<float>();
        for (std::size_t i = 0; i < want.size(); ++i)
            near(split[i], want[i], 1e-5, i);
    }
    EXPECT_EQ(softmax.traces(), 1u);
}

TEST(FuseGraphGpu, CenteredStatisticsAndTwoReductions) {
    KILN_REQUIRE_GPU();
    const int rows = 129, cols = 257;
    auto x = random_floats(static_cast<std::size_t>(rows) * cols);
    const Array xa = kiln::from_host(x, {rows, cols});
    // Over columns (axis 0): a reduction, then the difference.
    auto centered = kiln::fuse("centered_gpu", [](auto v) { return v - kiln::mean(v, 0, {true}); });
    const auto c = Array(centered(xa)).to_host<float>();
    for (int j = 0; j < cols; ++j) {
        double m = 0;
        for (int i = 0; i < rows; ++i)
            m += x[i * cols + j];
        m /= rows;
        for (int i = 0; i < rows; ++i)
            near(c[i * cols + j], x[i * cols + j] - m, 1e-5, i * cols + j);
    }
    // Layer norm over rows, a scalar parameter, two outputs of two shapes: the row kernel.
    auto layer_norm = kiln::fuse("layer_norm_gpu", [](auto v, auto eps) {
        auto d = v - kiln::mean(v, -1, {true});
        auto variance = kiln::mean(d * d, -1, {true});
        return std::make_tuple(d / kiln::sqrt(variance + eps), variance);
    });
    kiln::Outputs ln = layer_norm(xa, 1e-3);
    ASSERT_EQ(ln[1].shape(), (kiln::Dims{rows, 1}));
    const auto normed = ln[0].to_host<float>(), var = ln[1].to_host<float>();
    for (int i = 0; i < rows; ++i) {
        double m = 0, s = 0;
        for (int j = 0; j < cols; ++j)
            m += x[i * cols + j];
        m /= cols;
        for (int j = 0; j < cols; ++j)
            s += (x[i * cols + j] - m) * (x[i * cols + j] - m);
        s /= cols;
        near(var[i], s, 1e-5, i);
        for (int j = 0; j < cols; ++j)
            near(normed[i * cols + j], (x[i * cols + j] - m) / std::sqrt(s + 1e-3), 1e-4,
                 i * cols + j);
    }
    // sum(a) + max(b): two reductions of two arrays, then their sum.
    auto two =
        kiln::fuse("sum_plus_max_gpu", [](auto a, auto b) { return kiln::sum(a) + kiln::max(b); });
    auto y = random_floats(1000);
    const Array s = two(xa, kiln::from_host(y));
    double total = 0, most = -INFINITY;
    for (float v : x)
        total += v;
    for (float v : y)
        most = std::max(most, double(v));
    near(s.to_host<float>()[0], total + most, 1e-4, 0);
    // argmax of each row after a shift by its minimum: the column index.
    auto best = kiln::fuse("best_gpu",
                           [](auto v) { return kiln::argmax(v - kiln::min(v, -1, {true}), -1); });
    const auto idx = Array(best(xa)).to_host<std::int64_t>();
    for (int i = 0; i < rows; ++i) {
        int at = 0;
        for (int j = 1; j < cols; ++j)
            if (x[i * cols + j] > x[i * cols + at]) at = j;
        ASSERT_EQ(idx[i], at) << "row " << i;
    }
}

TEST(FuseGraphGpu, InPlaceUpdatesWithAliasing) {
    KILN_REQUIRE_GPU();
    const int n = 96;
    auto x = random_floats(static_cast<std::size_t>(n) * n), y = random_floats(n);
    // y broadcast into x, in place; the function returns nothing.
    auto axpy = kiln::fuse("axpy_in_place_gpu", [](auto a, auto scale, auto b) { a += scale * b; });
    Array xa = kiln::from_host(x, {n, n});
    const CUdeviceptr address = xa.data();
    kiln::Outputs none = axpy(xa, 0.5, kiln::from_host(y));
    EXPECT_EQ(none.size(), 0u);
    EXPECT_EQ(xa.data(), address);
    auto got = xa.to_host<float>();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            near(got[i * n + j], x[i * n + j] + 0.5 * y[j], 1e-6, i * n + j);
    // x += x.T: the transposed view of the updated array is read from a copy, as NumPy reads it.
    auto add = kiln::fuse("add_in_place_gpu", [](auto a, auto b) {
        a += b;
        return a;
    });
    Array xb = kiln::from_host(x, {n, n});
    Array returned = add(xb, xb.transpose());
    EXPECT_EQ(returned.data(), xb.data()) << "the updated argument is returned";
    got = xb.to_host<float>();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            near(got[i * n + j], double(x[i * n + j]) + x[j * n + i], 1e-6, i * n + j);
    // The same array twice (identical views): no copy needed, and none wrong.
    Array xc = kiln::from_host(x, {n, n});
    add(xc, xc);
    got = xc.to_host<float>();
    for (int i = 0; i < n * n; ++i)
        near(got[i], 2.0 * x[i], 1e-6, i);
    // Softmax written over its input by copyto: the row kernel, in place.
    auto softmax_in_place = kiln::fuse("softmax_in_place_gpu", [](auto v) {
        auto e = kiln::exp(v - kiln::max(v, -1, {true}));
        kiln::copyto(v, e / kiln::sum(e, -1, {true}));
    });
    Array xd = kiln::from_host(x, {n, n});
    softmax_in_place(xd);
    const auto want = softmax_rows(x, n, n);
    got = xd.to_host<float>();
    for (std::size_t i = 0; i < want.size(); ++i)
        near(got[i], want[i], 1e-5, i);
    // A reduction feeding an update over another axis (the split plan): each column scaled to
    // sum to one.
    auto normalize =
        kiln::fuse("normalize_columns_gpu", [](auto m) { m /= kiln::sum(m, 0, {true}); });
    std::vector<float> positive = random_floats(static_cast<std::size_t>(n) * n, 1, 2);
    Array xe = kiln::from_host(positive, {n, n});
    normalize(xe);
    got = xe.to_host<float>();
    for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int i = 0; i < n; ++i)
            s += positive[i * n + j];
        for (int i = 0; i < n; ++i)
            near(got[i * n + j], positive[i * n + j] / s, 1e-5, i * n + j);
    }
    EXPECT_EQ(normalize.traces(), 1u);
}

TEST(FuseGraphGpu, ComplexLiterals) {
    KILN_REQUIRE_GPU();
    auto rotate =
        kiln::fuse("rotate_gpu", [](auto x) { return x * std::complex<double>(0, 1) + 1; });
    auto x = random_floats(1000);
    const Array z = rotate(kiln::from_host(x));
    ASSERT_EQ(z.dtype(), DType::complex64);
    const auto got = z.to_host<std::complex<float>>();
    for (std::size_t i = 0; i < x.size(); ++i) {
        near(got[i].real(), 1, 1e-6, i);
        near(got[i].imag(), x[i], 1e-6, i);
    }
}
