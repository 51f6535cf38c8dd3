// ElementwiseKernel on the GPU against host references: every layout, every dtype, scalars,
// raw indexing, broadcasting, views, outputs given or allocated, options.

#include "gpu.hpp"
#include "temp_dir.hpp"

#include "half.hpp"
#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <complex>
#include <filesystem>
#include <random>

using kiln::Array;
using kiln::DType;
using kiln::ElementwiseKernel;
using kiln::Slice;

namespace {

std::mt19937& rng() {
    static std::mt19937 engine(std::random_device{}());
    return engine;
}

std::vector<float> random_floats(std::size_t n) {
    std::uniform_real_distribution<float> dist(-4.f, 4.f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng());
    return v;
}

// Host value of element (r, c) of a C-order matrix stored in v.
float at(const std::vector<float>& v, std::int64_t cols, std::int64_t r, std::int64_t c) {
    return v[static_cast<std::size_t>(r * cols + c)];
}

const ElementwiseKernel& fma3() {
    static ElementwiseKernel k("T x, T y, T b", "T z", "z = x * y + b", "fma3");
    return k;
}

} // namespace

TEST(ElementwiseGpu, SquaredDifferenceOfContiguousFloats) {
    KILN_REQUIRE_GPU();
    ElementwiseKernel squared_diff("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)",
                                   "squared_diff");
    for (std::int64_t n : {1, 7, 1000, 1 << 20, (1 << 20) + 3}) {
        auto x = random_floats(n), y = random_floats(n);
        Array z = squared_diff(kiln::from_host(x), kiln::from_host(y));
        auto out = z.to_host<float>();
        ASSERT_EQ(out.size(), x.size());
        for (std::size_t i = 0; i < x.size(); ++i)
            ASSERT_EQ(out[i], (x[i] - y[i]) * (x[i] - y[i])) << "n=" << n << " i=" << i;
    }
}

TEST(ElementwiseGpu, GenericSquaredDifferenceOverEveryRealDtype) {
    KILN_REQUIRE_GPU();
    ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
    const int n = 3001;
    std::vector<double> xd(n), yd(n);
    std::uniform_int_distribution<int> small(0, 10);
    for (int i = 0; i < n; ++i)
        xd[i] = small(rng()), yd[i] = small(rng());
    for (DType d : {DType::int8, DType::int16, DType::int32, DType::int64, DType::uint8,
                    DType::uint16, DType::uint32, DType::uint64, DType::float16, DType::bfloat16,
                    DType::float32, DType::float64}) {
        SCOPED_TRACE(kiln::name(d));
        Array x = kiln::empty({n}, d), y = kiln::empty({n}, d);
        // Build inputs on the device from float64 through an astype kernel of our own.
        ElementwiseKernel cast("float64 a", "T b", "b = (T)(float)a", "cast_from_double");
        cast(kiln::from_host(xd), x);
        cast(kiln::from_host(yd), y);
        Array z = squared_diff(x, y);
        ASSERT_EQ(z.dtype(), d);
        ElementwiseKernel back("T a", "float64 b", "b = (double)(float)a", "cast_to_double");
        auto out = Array(back(z)).to_host<double>();
        for (int i = 0; i < n; ++i) {
            double diff = xd[i] - yd[i];
            if (kiln::is_unsigned_integer(d)) {
                // Unsigned subtraction wraps, then the square wraps modulo 2^bits.
                const int bits = static_cast<int>(kiln::itemsize(d)) * 8;
                const unsigned long long mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                unsigned long long u = (static_cast<unsigned long long>(xd[i]) -
                                        static_cast<unsigned long long>(yd[i])) &
                                       mask;
                ASSERT_EQ(out[i], static_cast<double>((u * u) & mask)) << i;
            } else if (kiln::itemsize(d) == 1) {
                ASSERT_EQ(out[i], static_cast<double>(static_cast<std::int8_t>(diff * diff))) << i;
            } else {
                ASSERT_EQ(out[i], diff * diff) << i;
            }
        }
    }
}

TEST(ElementwiseGpu, ComplexAndBoolArithmetic) {
    KILN_REQUIRE_GPU();
    const int n = 1000;
    std::vector<std::complex<float>> a(n), b(n);
    auto re = random_floats(std::size_t{2} * n), im = random_floats(std::size_t{2} * n);
    for (int i = 0; i < n; ++i)
        a[i] = {re[i], im[i]}, b[i] = {re[n + i], im[n + i]};
    ElementwiseKernel mul("T x, T y", "T z", "z = x * y + conj(x)", "cmul");
    auto out = Array(mul(kiln::from_host(a), kiln::from_host(b))).to_host<std::complex<float>>();
    for (int i = 0; i < n; ++i) {
        const auto expected = a[i] * b[i] + std::conj(a[i]);
        ASSERT_NEAR(out[i].real(), expected.real(), 1e-4f * (1 + std::abs(expected)));
        ASSERT_NEAR(out[i].imag(), expected.imag(), 1e-4f * (1 + std::abs(expected)));
    }
    std::vector<std::uint8_t> p(n), q(n);
    for (int i = 0; i < n; ++i)
        p[i] = rng()() & 1, q[i] = rng()() & 1;
    Array pa = kiln::from_host_bytes(p.data(), {n}, DType::bool_);
    Array qa = kiln::from_host_bytes(q.data(), {n}, DType::bool_);
    ElementwiseKernel land("bool x, bool y", "bool z", "z = x && !y", "and_not");
    std::vector<std::uint8_t> r(n);
    Array(land(pa, qa)).copy_to_host_bytes(r.data());
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(r[i], p[i] && !q[i]) << i;
}

TEST(ElementwiseGpu, ScalarsOfEveryWidthIncludingTheExtremes) {
    KILN_REQUIRE_GPU();
    ElementwiseKernel put("T x, T s", "T z", "z = s + x * 0", "put_scalar");
    Array zeros64 = kiln::zeros({4}, DType::int64);
    EXPECT_EQ(Array(put(zeros64, std::int64_t{-1})).to_host<std::int64_t>()[0], -1);
    EXPECT_EQ(Array(put(zeros64, std::int64_t{1} << 32)).to_host<std::int64_t>()[0], 1ll << 32);
    EXPECT_EQ(Array(put(zeros64, INT64_MAX)).to_host<std::int64_t>()[3], INT64_MAX);
    EXPECT_EQ(Array(put(zeros64, INT64_MIN)).to_host<std::int64_t>()[2], INT64_MIN);
    Array zeros_u32 = kiln::zeros({4}, DType::uint32);
    EXPECT_EQ(Array(put(zeros_u32, 7)).to_host<std::uint32_t>()[0], 7u)
        << "a scalar is cast to the type its placeholder is bound to";
    EXPECT_THROW(put(zeros_u32, -1), kiln::OverflowError) << "NumPy 2: -1 does not fit uint32";
    Array zeros_i8 = kiln::zeros({4}, DType::int8);
    EXPECT_EQ(Array(put(zeros_i8, -1)).to_host<std::int8_t>()[1], -1);
    Array zeros_f64 = kiln::zeros({4}, DType::float64);
    EXPECT_EQ(Array(put(zeros_f64, 0.1)).to_host<double>()[0], 0.1);
    Array zeros_f32 = kiln::zeros({4}, DType::float32);
    EXPECT_EQ(Array(put(zeros_f32, 0.1)).to_host<float>()[0], 0.1f);
    ElementwiseKernel fixed("int16 x, uint64 s", "uint64 z", "z = s + x", "fixed_scalar");
    Array zeros_i16 = kiln::zeros({4}, DType::int16);
    EXPECT_EQ(Array(fixed(zeros_i16, (std::uint64_t{1} << 63) + 5)).to_host<std::uint64_t>()[0],
              (std::uint64_t{1} << 63) + 5);
}

TEST(ElementwiseGpu, RawParametersAreIndexedManually) {
    KILN_REQUIRE_GPU();
    ElementwiseKernel reverse("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse");
    const int n = 100001;
    auto x = random_floats(n);
    Array y = kiln::empty({n}, DType::float32);
    reverse(kiln::from_host(x), y);
    auto out = y.to_host<float>();
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(out[i], x[n - 1 - i]);

    ElementwiseKernel gather("raw T x, int32 k", "raw T y", "y[i] = x[(i * k) % x.size()]",
                             "gather");
    Array dst = kiln::empty({1000}, DType::float32);
    kiln::CallOptions options;
    options.size = 1000;
    gather(options, kiln::from_host(x), 7, dst);
    auto g = dst.to_host<float>();
    for (int i = 0; i < 1000; ++i)
        ASSERT_EQ(g[i], x[(i * 7) % n]);
}

TEST(ElementwiseGpu, BroadcastsRowsColumnsAndScalars) {
    KILN_REQUIRE_GPU();
    const int rows = 300, cols = 1024;
    auto x = random_floats(std::size_t{rows} * cols), y = random_floats(std::size_t{rows} * cols),
         row = random_floats(cols), col = random_floats(rows);
    Array xa = kiln::from_host(x, {rows, cols}), ya = kiln::from_host(y, {rows, cols});
    auto with_row = Array(fma3()(xa, ya, kiln::from_host(row))).to_host<float>();
    auto with_col =
        Array(fma3()(xa, kiln::from_host(col, {rows, 1}), kiln::from_host(row))).to_host<float>();
    auto with_scalar = Array(fma3()(xa, ya, 0.5f)).to_host<float>();
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const std::size_t i = static_cast<std::size_t>(r) * cols + c;
            ASSERT_EQ(with_row[i], std::fma(x[i], y[i], row[c])); // contracted to an FMA
            ASSERT_EQ(with_col[i], std::fma(x[i], col[r], row[c]));
            ASSERT_EQ(with_scalar[i], std::fma(x[i], y[i], 0.5f));
        }
}

TEST(ElementwiseGpu, TransposedSlicedAndReversedInputs) {
    KILN_REQUIRE_GPU();
    const int n = 777, m = 515; // not multiples of the tile
    auto x = random_floats(std::size_t{n} * m), y = random_floats(std::size_t{n} * m);
    Array xa = kiln::from_host(x, {n, m}), ya = kiln::from_host(y, {m, n});
    // z[r][c] = x.T[r][c] * y[r][c] + 1 with x.T of shape (m, n)
    auto t = Array(fma3()(xa.transpose(), ya, 1.0f)).to_host<float>();
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c)
            ASSERT_EQ(t[r * n + c], std::fma(at(x, m, c, r), at(y, n, r, c), 1.0f))
                << r << "," << c;

    // Every other row, reversed columns: a strided, negative-stride view.
    Array view = xa.slice({Slice::range(0, n, 2), Slice{std::nullopt, std::nullopt, -1}});
    auto v = Array(fma3()(view, 2.0f, 0.0f)).to_host<float>();
    const int vr = (n + 1) / 2;
    for (int r = 0; r < vr; ++r)
        for (int c = 0; c < m; ++c)
            ASSERT_EQ(v[r * m + c], at(x, m, std::int64_t{2} * r, m - 1 - c) * 2.0f);

    // A single column: a 1-D strided view.
    Array column = xa.slice({Slice::all(), 3});
    auto col = Array(fma3()(column, column, 0.0f)).to_host<float>();
    for (int r = 0; r < n; ++r)
        ASSERT_EQ(col[r], at(x, m, r, 3) * at(x, m, r, 3));
}

TEST(ElementwiseGpu, TiledTransposesStageInputsAndOutputsAndPrefetchTheOthers) {
    KILN_REQUIRE_GPU();
    // The tiled layout (each tile's loads before its barrier): a transposed input with contiguous
    // ones, into a contiguous output poisoned first; then a transposed output the operation reads
    // and may leave alone (an early return), beside a transposed and a contiguous input. Shapes
    // with partial tiles on either axis and more tile rows than one block row.
    ElementwiseKernel accumulate("T x, T y, T s", "T z", "if (x < -3) return; z = z * s + x * y",
                                 "tiled_accumulate");
    for (const auto& [rows, cols] : {std::pair<int, int>{777, 515}, {64, 33}, {4101, 40}}) {
        SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
        const std::size_t n = std::size_t(rows) * cols;
        auto x = random_floats(n), y = random_floats(n), b = random_floats(n);
        Array xt = kiln::from_host(x, {cols, rows}).transpose(); // (rows, cols), x[c][r]
        Array ya = kiln::from_host(y, {rows, cols}), ba = kiln::from_host(b, {rows, cols});
        Array z = kiln::full({rows, cols}, std::nan(""), DType::float32);
        fma3()(xt, ya, ba, z);
        auto got = z.to_host<float>();
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                ASSERT_EQ(got[std::size_t(r) * cols + c],
                          std::fma(at(x, rows, c, r), at(y, cols, r, c), at(b, cols, r, c)))
                    << r << "," << c;

        auto z0 = random_floats(n);
        Array zt = kiln::from_host(z0, {cols, rows}).transpose(); // z[r][c] at z0[c][r]
        accumulate(xt, ya, 0.5f, zt);
        auto out = kiln::Array(zt.transpose()).to_host<float>(); // back in z0's order
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
                const double xv = at(x, rows, c, r), old = at(z0, rows, c, r);
                const double want = xv < -3 ? old : old * 0.5 + xv * at(y, cols, r, c);
                ASSERT_NEAR(out[std::size_t(c) * rows + r], want, 1e-5 * (1 + std::abs(want)))
                    << r << "," << c;
            }
    }
}

TEST(ElementwiseGpu, WritesIntoAGivenOutputViewAndLeavesTheRestAlone) {
    KILN_REQUIRE_GPU();
    const int n = 64, m = 256;
    auto x = random_floats(std::size_t{n} * m);
    Array out = kiln::full({n, m}, -7.0, DType::float32);
    Array xa = kiln::from_host(x, {n, m});
    ElementwiseKernel copy("T x", "T z", "z = x", "copy");
    copy(xa.slice({Slice::range(0, n, 2)}), out.slice({Slice::range(1, n, 2)}));
    auto o = out.to_host<float>();
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < m; ++c)
            ASSERT_EQ(o[r * m + c], r % 2 ? at(x, m, r - 1, c) : -7.0f) << r << "," << c;
}

TEST(ElementwiseGpu, ExplicitBlockSizesGiveTheSameResult) {
    KILN_REQUIRE_GPU();
    const int n = 100003;
    auto x = random_floats(n), y = random_floats(n);
    Array xa = kiln::from_host(x), ya = kiln::from_host(y);
    for (int block : {1, 32, 96, 128, 1024}) {
        kiln::CallOptions options;
        options.block_size = block;
        auto z = Array(fma3()(options, xa, ya, 3.0f)).to_host<float>();
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(z[i], std::fma(x[i], y[i], 3.0f)) << "block " << block;
    }
}

TEST(ElementwiseGpu, EveryElementOfAVectorTailIsComputedWhateverTheBlock) {
    // The tail after the last whole vector (up to 7 of int16's 8-element vectors) is one pass of
    // as many threads: the grid must have them even when the vectors need fewer (15 elements in
    // blocks of one thread: one vector, seven tail elements).
    KILN_REQUIRE_GPU();
    ElementwiseKernel affine("T x", "T z", "z = x * 3 + 1", "affine");
    for (int n = 8; n <= 40; ++n)
        for (int block : {0, 1, 2, 32}) {
            std::vector<std::int16_t> x(n);
            std::vector<float> f(n);
            for (int i = 0; i < n; ++i) {
                x[i] = static_cast<std::int16_t>(i * 7 - 100);
                f[i] = static_cast<float>(i) * 0.5f - 3.0f;
            }
            kiln::CallOptions options;
            if (block) options.block_size = block;
            const auto z = Array(affine(options, kiln::from_host(x, {n}))).to_host<std::int16_t>();
            const auto g = Array(affine(options, kiln::from_host(f, {n}))).to_host<float>();
            for (int i = 0; i < n; ++i) {
                ASSERT_EQ(z[i], x[i] * 3 + 1) << "n " << n << " block " << block << " i " << i;
                ASSERT_EQ(g[i], f[i] * 3 + 1) << "n " << n << " block " << block << " i " << i;
            }
        }
}

TEST(ElementwiseGpu, SeveralOutputsNoReturnAndCodeAroundTheLoop) {
    KILN_REQUIRE_GPU();
    const int n = 5000;
    auto x = random_floats(n);
    ElementwiseKernel split("T x", "T lo, T hi", "lo = fminf(x, 0.f); hi = fmaxf(x, 0.f)", "split");
    kiln::Outputs outs = split(kiln::from_host(x));
    ASSERT_EQ(outs.size(), 2u);
    auto lo = outs[0].to_host<float>(), hi = outs[1].to_host<float>();
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(lo[i], std::fmin(x[i], 0.f));
        ASSERT_EQ(hi[i], std::fmax(x[i], 0.f));
    }
    kiln::ElementwiseOptions o;
    o.no_return = true;
    o.preamble = "__device__ float twice(float v) { return 2 * v; }";
    o.loop_prep = "const float three = 3;";
    ElementwiseKernel in_place("raw float32 x", "", "x[i] = twice(x[i]) + three", "in_place", o);
    Array xa = kiln::from_host(x);
    kiln::CallOptions size;
    size.size = n;
    EXPECT_EQ(in_place(size, xa).size(), 0u);
    auto r = xa.to_host<float>();
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(r[i], 2 * x[i] + 3);
}

TEST(ElementwiseGpu, HalfPrecisionArithmetic) {
    KILN_REQUIRE_GPU();
    const int n = 4096;
    std::vector<kiln::float16> h(n);
    std::vector<float> ref(n);
    for (int i = 0; i < n; ++i) {
        const float v = static_cast<float>(static_cast<int>(rng()() % 64) - 32) / 4;
        h[i].bits = kiln::detail::float_to_half(v);
        ref[i] = v;
    }
    ElementwiseKernel twice("T x", "T z", "z = x + x", "twice_half");
    auto out = Array(twice(kiln::from_host(h))).to_host<kiln::float16>();
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(kiln::detail::half_to_float(out[i].bits), 2 * ref[i]);
}

TEST(ElementwiseGpu, TheSecondCallWithTheSameSignatureReusesTheKernel) {
    KILN_REQUIRE_GPU();
    ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add_reuse");
    auto x = random_floats(1 << 16);
    Array xa = kiln::from_host(x);
    kiln::Stream stream;
    kiln::CallOptions options;
    options.stream = stream;
    Array z = kiln::empty({1 << 16}, DType::float32, stream);
    add(options, xa, xa, z);
    // After the first call the kernel's own cache answers: the compiler is not even asked (no
    // compile, no disk hit, no memory hit).
    const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
    for (int rep = 0; rep < 100; ++rep)
        add(options, xa, xa, z);
    const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
    EXPECT_EQ(after.compiles, before.compiles);
    EXPECT_EQ(after.disk_hits, before.disk_hits);
    EXPECT_EQ(after.memory_hits, before.memory_hits);
    auto out = z.to_host<float>(stream);
    for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(out[i], x[i] + x[i]);
}

// Repeats launched from the thread's memo (the same layout each time) with new arrays, scalars,
// streams and outputs: every call computes its own operands, and an output allocated by one call
// is not written by the next.
// Each call's output is allocated and the one before it dropped: from the third call on, the
// output's block is the one dropped two calls earlier, taken from the thread's block cache while
// the kernel that read it may still be running. Stream order must make that safe.
TEST(ElementwiseGpu, DroppedOutputsAreReusedInStreamOrder) {
    KILN_REQUIRE_GPU();
    const ElementwiseKernel twice("T x", "T y", "y = x * 2 + 1", "twice_reuse");
    constexpr std::int64_t kCount = (1 << 20) + 3;
    const kiln::Stream stream;
    kiln::CallOptions options;
    options.stream = stream;
    const std::vector<float> start = random_floats(kCount);
    Array value = kiln::from_host(start, stream);
    std::vector<CUdeviceptr> blocks;
    for (int i = 0; i < 12; ++i) {
        value = twice(options, value);
        blocks.push_back(value.data());
    }
    EXPECT_EQ(blocks[2], blocks[0]) << "the dropped block was not reused";
    const auto out = value.to_host<float>(stream);
    for (std::size_t i = 0; i < out.size(); ++i) {
        float want = start[i];
        for (int k = 0; k < 12; ++k)
            want = want * 2 + 1;
        ASSERT_EQ(out[i], want) << "element " << i;
    }
}

TEST(ElementwiseGpu, RepeatedCallsComputeTheirOwnOperands) {
    KILN_REQUIRE_GPU();
    const ElementwiseKernel affine("T x, T y, int32 k", "T z", "z = x * k + y", "affine_repeat");
    constexpr std::int64_t kCount = (1 << 18) + 5;
    kiln::Stream streams[2];
    std::vector<Array> kept;
    std::vector<std::vector<float>> expected;
    for (int rep = 0; rep < 6; ++rep) {
        const auto x = random_floats(kCount), y = random_floats(kCount);
        kiln::CallOptions options;
        options.stream = streams[rep % 2];
        const Array xa = kiln::from_host(x, options.stream),
                    ya = kiln::from_host(y, options.stream);
        const int k = rep - 2;
        Array z;
        if (rep % 3 == 0) { // given, poisoned first
            z = kiln::full({kCount}, std::nan(""), DType::float32, options.stream);
            affine(options, xa, ya, k, z);
        } else {
            z = affine(options, xa, ya, k);
        }
        std::vector<float> want(x.size());
        for (std::size_t i = 0; i < x.size(); ++i)
            want[i] = std::fma(x[i], static_cast<float>(k), y[i]);
        kept.push_back(z);
        expected.push_back(std::move(want));
    }
    for (std::size_t rep = 0; rep < kept.size(); ++rep) {
        const auto out = kept[rep].to_host<float>(streams[rep % 2]);
        for (std::size_t i = 0; i < out.size(); ++i)
            ASSERT_EQ(out[i], expected[rep][i]) << "call " << rep << " element " << i;
    }
}

// A memo whose cubin the driver rejects (the same kernel built for another architecture) costs
// the call only time: it takes the full path, gets its kernel, and the memo then holds the cubin
// that loaded.
TEST(ElementwiseGpu, AMemoWhoseCubinTheDriverRejectsIsReplacedByOneThatLoads) {
    KILN_REQUIRE_GPU();
    kiln::cache::Store* store = kiln::Compiler::global().store();
    if (!store || store->config().disabled || store->config().readonly ||
        store->config().save_source)
        GTEST_SKIP() << "memos need a writable disk cache that does not save sources";
    const std::string name = "memo_rejected_" + std::to_string(rng()());
    const auto triple = [&] { return ElementwiseKernel("T x", "T y", "y = x * 3", name); };
    const auto host = random_floats(1000);
    const Array x = kiln::from_host(host);
    triple()(x); // writes the memo

    // The memo just written: the one whose verified content names this kernel.
    std::filesystem::path file;
    kiln::cache::Key signature;
    std::optional<kiln::cache::Memo> good;
    for (const auto& item : std::filesystem::recursive_directory_iterator(store->config().dir)) {
        const auto key = kiln::cache::Key::from_hex(item.path().stem().string());
        if (item.path().extension() != ".memo" || !key) continue;
        auto memo = kiln::cache::decode_memo(kiln::test::read_file(item.path()), *key);
        if (memo && memo->name == name) {
            file = item.path();
            signature = *key;
            good = std::move(memo);
        }
    }
    ASSERT_TRUE(good) << "no memo names " << name;
    const std::string arch = kiln::Device::current().arch();
    const kiln::Arg args[] = {x};
    const auto foreign = triple().compile_for(args, 1, {}, arch == "sm_75" ? "sm_80" : "sm_75");
    ASSERT_TRUE(store->store_memo(signature, {good->entry, name, foreign->cubin()}));
    kiln::Compiler::global().clear_memory(); // as in a fresh process

    const Array y = triple()(x);
    const auto out = y.to_host<float>();
    ASSERT_EQ(out.size(), host.size());
    for (std::size_t i = 0; i < host.size(); ++i)
        ASSERT_EQ(out[i], host[i] * 3) << i;
    const auto after = kiln::cache::decode_memo(kiln::test::read_file(file), signature);
    ASSERT_TRUE(after);
    EXPECT_EQ(after->cubin, good->cubin);
}
