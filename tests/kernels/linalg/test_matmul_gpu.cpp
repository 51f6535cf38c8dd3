// kiln::matmul, kiln::trace and kiln::diagonal on the GPU against host references in complex
// double (exact for integers), on fresh random data, outputs poisoned first: every dtype with its
// tolerance, 1-D operands on either side, batches with broadcasting, transposed and other strided
// views, given outputs (in place and through a temporary), integer wrap-around, refused dtypes,
// shape errors, graph capture (also a thread's first call made under capture) and threads.
//
// Tolerances, relative to sum_k |a_ik| |b_kj| of each element (the size of the terms summed):
// float16 1e-3 (its own rounding, 2^-11, after float32 accumulation), bfloat16 8e-3 (2^-8),
// float32 and complex64 3e-5 (float32 sums of up to a few hundred terms), float32 with TF32 3e-3
// (10-bit mantissa inputs), float64 and complex128 1e-12; integers and bool exactly.

#include "gpu.hpp"
#include "reduction_reference.hpp"

#include "kiln/graph.hpp"
#include "kiln/kiln.hpp"
#include "kiln/linalg.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

using kiln::Array;
using kiln::Dims;
using kiln::DType;
using kiln::MatmulOptions;
using kiln::test::Complex;
using kiln::test::Data;
using kiln::test::device_data;
using kiln::test::elements;
using kiln::test::poisoned;
using kiln::test::Shape;
using kiln::test::text;
using kiln::test::to_size;
using kiln::test::values_of;

namespace {

// Host values of a matmul in C order, and per element the sum of |a||b| of its terms.
struct Reference {
    std::vector<Complex> values;
    std::vector<double> scale;
    Shape shape;
};

// numpy.matmul over C-order host values.
Reference host_matmul(const std::vector<Complex>& a, Shape as, const std::vector<Complex>& b,
                      Shape bs) {
    const bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
    if (a_vector) as.insert(as.begin(), 1);
    if (b_vector) bs.push_back(1);
    const std::int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    const std::size_t nb = std::max(a_batch.size(), b_batch.size());
    a_batch.insert(a_batch.begin(), nb - a_batch.size(), 1);
    b_batch.insert(b_batch.begin(), nb - b_batch.size(), 1);
    Shape batch(nb);
    for (std::size_t i = 0; i < nb; ++i)
        batch[i] = std::max(a_batch[i], b_batch[i]);
    Reference r;
    r.shape = batch;
    if (!a_vector) r.shape.push_back(m);
    if (!b_vector) r.shape.push_back(n);
    const std::int64_t batches = elements(batch);
    r.values.assign(to_size(batches * m * n), 0.0);
    r.scale.assign(r.values.size(), 0.0);
    for (std::int64_t f = 0; f < batches; ++f) {
        // The batch index f in C order over `batch`, then each operand's own (broadcast) batch.
        std::int64_t rest = f, ai = 0, bi = 0, a_inner = 1, b_inner = 1;
        for (std::size_t d = nb; d-- > 0;) {
            const std::int64_t at = rest % batch[d];
            rest /= batch[d];
            ai += (a_batch[d] == 1 ? 0 : at) * a_inner;
            bi += (b_batch[d] == 1 ? 0 : at) * b_inner;
            a_inner *= a_batch[d];
            b_inner *= b_batch[d];
        }
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                Complex sum = 0.0;
                double scale = 0.0;
                for (std::int64_t p = 0; p < k; ++p) {
                    const Complex x = a[to_size(ai * m * k + i * k + p)];
                    const Complex y = b[to_size(bi * k * n + p * n + j)];
                    sum += x * y;
                    scale += std::abs(x) * std::abs(y);
                }
                r.values[to_size(f * m * n + i * n + j)] = sum;
                r.scale[to_size(f * m * n + i * n + j)] = scale;
            }
    }
    return r;
}

double tolerance(DType d, bool tf32 = false) {
    switch (d) {
    case DType::float16:
        return 1e-3;
    case DType::bfloat16:
        return 8e-3;
    case DType::float32:
    case DType::complex64:
        return tf32 ? 3e-3 : 3e-5;
    case DType::float64:
    case DType::complex128:
        return 1e-12;
    default:
        return 0.0;
    }
}

::testing::AssertionResult matches(const Array& got, const Reference& want, double tol) {
    if (got.shape() != Dims(want.shape))
        return ::testing::AssertionFailure()
               << "shape " << got.shape().to_string() << ", expected " << text(want.shape);
    const std::vector<Complex> values = values_of(got);
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double error = std::abs(values[i] - want.values[i]);
        // NaN (the poison of floating outputs) fails too.
        if (!(error <= tol * std::max(want.scale[i], 1e-30)) && !(tol == 0 && error == 0))
            return ::testing::AssertionFailure()
                   << "element " << i << " is " << values[i] << ", expected " << want.values[i]
                   << " within " << tol * want.scale[i];
    }
    return ::testing::AssertionSuccess();
}

std::vector<Complex> random_values(std::int64_t count, DType dtype, std::mt19937& rng) {
    std::vector<Complex> v(to_size(count));
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_int_distribution<int> small(-100, 100), bit(0, 1), unsigned_small(0, 200);
    for (Complex& x : v) {
        if (kiln::is_complex(dtype))
            x = Complex(normal(rng), normal(rng));
        else if (kiln::is_floating(dtype))
            x = normal(rng);
        else if (kiln::is_bool(dtype))
            x = bit(rng);
        else if (kiln::is_unsigned_integer(dtype))
            x = unsigned_small(rng);
        else
            x = small(rng);
    }
    return v;
}

Data random_data(const Shape& shape, DType dtype, std::mt19937& rng) {
    return device_data(random_values(elements(shape), dtype, rng), shape, dtype);
}

class Matmul : public ::testing::Test {
  protected:
    void SetUp() override {
        KILN_REQUIRE_GPU();
        std::string reason;
        if (!kiln::matmul_available(&reason)) GTEST_SKIP() << "no cuBLAS: " << reason;
    }
    std::mt19937 rng{20260411};
};

// a @ b against the host, for operands made fresh of the given shapes and dtypes.
void check(std::mt19937& rng, const Shape& as, DType ad, const Shape& bs, DType bd, double tol) {
    const Data a = random_data(as, ad, rng), b = random_data(bs, bd, rng);
    const Array c = kiln::matmul(a.array, b.array);
    EXPECT_EQ(c.dtype(), kiln::promote_types(ad, bd));
    EXPECT_TRUE(matches(c, host_matmul(a.values, as, b.values, bs), tol))
        << text(as) << " " << kiln::name(ad) << " @ " << text(bs) << " " << kiln::name(bd);
}

TEST_F(Matmul, EveryFloatingAndComplexDtypeMatchesTheHost) {
    for (DType d : {DType::float16, DType::bfloat16, DType::float32, DType::float64,
                    DType::complex64, DType::complex128}) {
        check(rng, {37, 53}, d, {53, 29}, d, tolerance(d));
        check(rng, {128, 256}, d, {256, 64}, d, tolerance(d));
    }
}

TEST_F(Matmul, MixedDtypesPromoteAsNumPy) {
    check(rng, {9, 11}, DType::float16, {11, 7}, DType::float32, tolerance(DType::float32));
    check(rng, {9, 11}, DType::float32, {11, 7}, DType::complex64, tolerance(DType::complex64));
    check(rng, {9, 11}, DType::int32, {11, 7}, DType::float32, tolerance(DType::float64));
    check(rng, {9, 11}, DType::int8, {11, 7}, DType::float16, tolerance(DType::float16));
}

TEST_F(Matmul, OneDimensionalOperandsOnEitherSide) {
    const DType f = DType::float64;
    check(rng, {17}, f, {17, 5}, f, tolerance(f));
    check(rng, {6, 17}, f, {17}, f, tolerance(f));
    check(rng, {17}, f, {17}, f, tolerance(f)); // a 0-d result
    check(rng, {3, 6, 17}, f, {17}, f, tolerance(f));
    check(rng, {17}, f, {4, 17, 5}, f, tolerance(f));
}

TEST_F(Matmul, BatchesBroadcast) {
    const DType f = DType::float32;
    check(rng, {8, 12, 16}, f, {8, 16, 10}, f, tolerance(f));
    check(rng, {8, 12, 16}, f, {16, 10}, f, tolerance(f));
    check(rng, {12, 16}, f, {8, 16, 10}, f, tolerance(f));
    check(rng, {2, 1, 12, 16}, f, {3, 16, 10}, f, tolerance(f)); // partly broadcast
    check(rng, {1, 3, 12, 16}, f, {2, 1, 16, 10}, f, tolerance(f));
    check(rng, {64, 32, 32}, DType::float16, {64, 32, 32}, DType::float16,
          tolerance(DType::float16));
}

TEST_F(Matmul, TransposedAndStridedViews) {
    const DType f = DType::float64;
    const Data a = random_data({40, 30}, f, rng), b = random_data({50, 40}, f, rng);
    // a^T (30, 40) @ b^T (40, 50): both column-major, read as transposes.
    Array at = a.array.transpose(), bt = b.array.transpose();
    EXPECT_TRUE(matches(kiln::matmul(at, bt),
                        host_matmul(values_of(at), {30, 40}, values_of(bt), {40, 50}),
                        tolerance(f)));
    // Every other column of a (40, 15), rows 0..14 of b^T... slices of larger arrays.
    const Array stepped = a.array.slice({kiln::Slice::all(), kiln::Slice::range(0, 30, 2)});
    const Array rows = b.array.slice({kiln::Slice::range(0, 15)}); // (15, 40), ld 40
    EXPECT_TRUE(matches(kiln::matmul(stepped, rows),
                        host_matmul(values_of(stepped), {40, 15}, values_of(rows), {15, 40}),
                        tolerance(f)));
    // Reversed rows, and a transposed stack.
    const Array reversed = a.array.slice({kiln::Slice::range(-1, -41, -1)}); // (40, 30)
    const Array bt30 = random_data({20, 30}, f, rng).array.transpose();      // (30, 20)
    EXPECT_TRUE(matches(kiln::matmul(reversed, bt30),
                        host_matmul(values_of(reversed), {40, 30}, values_of(bt30), {30, 20}),
                        tolerance(f)));
    const Data stack = random_data({4, 9, 7}, f, rng);
    const Array stack_t = stack.array.transpose({0, 2, 1}); // (4, 7, 9)
    const Data right = random_data({4, 9, 5}, f, rng);
    EXPECT_TRUE(matches(kiln::matmul(stack_t, right.array),
                        host_matmul(values_of(stack_t), {4, 7, 9}, right.values, {4, 9, 5}),
                        tolerance(f)));
    // A broadcast row as an operand (stride 0 along rows): copied first.
    const Array row = random_data({1, 9}, f, rng).array.broadcast_to({6, 9});
    EXPECT_TRUE(matches(kiln::matmul(row, right.array),
                        host_matmul(values_of(row), {6, 9}, right.values, {4, 9, 5}),
                        tolerance(f)));
}

TEST_F(Matmul, AGivenOutputIsWrittenInPlaceOrThroughATemporary) {
    const DType f = DType::float32;
    const Data a = random_data({6, 20, 30}, f, rng), b = random_data({30, 25}, f, rng);
    const Reference want = host_matmul(a.values, a.shape, b.values, b.shape);
    const Array out = poisoned({6, 20, 25}, f);
    MatmulOptions options;
    options.out = &out;
    const Array got = kiln::matmul(a.array, b.array, options);
    EXPECT_EQ(got.data(), out.data());
    EXPECT_TRUE(matches(out, want, tolerance(f)));
    // Column-major output: cuBLAS cannot write it; a temporary is copied in.
    const Array wide = poisoned({6, 25, 20}, f);
    const Array transposed = wide.transpose({0, 2, 1});
    options.out = &transposed;
    kiln::matmul(a.array, b.array, options);
    EXPECT_TRUE(matches(transposed, want, tolerance(f)));
    // Rows of a wider output: in place, with its leading dimension; the rest untouched.
    const Array wider = poisoned({6, 20, 32}, f);
    const Array left =
        wider.slice({kiln::Slice::all(), kiln::Slice::all(), kiln::Slice::range(0, 25)});
    options.out = &left;
    kiln::matmul(a.array, b.array, options);
    EXPECT_TRUE(matches(left, want, tolerance(f)));
    const std::vector<Complex> all = values_of(wider);
    EXPECT_TRUE(std::isnan(all[25].real())) << "a column past the output was written";
    // The wrong shape or dtype.
    const Array wrong = poisoned({6, 25, 20}, f);
    options.out = &wrong;
    EXPECT_THROW(kiln::matmul(a.array, b.array, options), kiln::ShapeError);
    const Array wrong_dtype = poisoned({6, 20, 25}, DType::float64);
    options.out = &wrong_dtype;
    EXPECT_THROW(kiln::matmul(a.array, b.array, options), kiln::ArgumentError);
}

// Integer results of exact float64 sums, wrapped into the result type as NumPy's are.
std::vector<Complex> wrapped(const std::vector<Complex>& exact, DType dtype) {
    std::vector<Complex> out;
    for (const Complex& v : exact) {
        const auto i = static_cast<std::int64_t>(v.real());
        switch (dtype) {
        case DType::int8:
            out.emplace_back(static_cast<double>(static_cast<std::int8_t>(i)));
            break;
        case DType::int16:
            out.emplace_back(static_cast<double>(static_cast<std::int16_t>(i)));
            break;
        case DType::uint8:
            out.emplace_back(static_cast<double>(static_cast<std::uint8_t>(i)));
            break;
        case DType::bool_:
            out.emplace_back(i != 0 ? 1.0 : 0.0);
            break;
        default:
            out.emplace_back(static_cast<double>(i));
        }
    }
    return out;
}

TEST_F(Matmul, NarrowIntegersAreExactAndWrapAsNumPy) {
    for (auto [ad, bd] : {std::pair{DType::int8, DType::int8},
                          {DType::uint8, DType::uint8},
                          {DType::int8, DType::uint8},
                          {DType::int16, DType::int16},
                          {DType::bool_, DType::bool_}}) {
        const Data a = random_data({5, 300}, ad, rng), b = random_data({300, 7}, bd, rng);
        const DType result = kiln::promote_types(ad, bd);
        const Array out = poisoned({5, 7}, result);
        MatmulOptions options;
        options.out = &out;
        kiln::matmul(a.array, b.array, options);
        Reference want = host_matmul(a.values, a.shape, b.values, b.shape);
        want.values = wrapped(want.values, result);
        EXPECT_TRUE(matches(out, want, 0.0)) << kiln::name(ad) << " @ " << kiln::name(bd);
    }
}

TEST_F(Matmul, WideIntegersAreRefused) {
    const Data a = random_data({4, 4}, DType::int32, rng);
    EXPECT_THROW(kiln::matmul(a.array, a.array), kiln::ArgumentError);
}

TEST_F(Matmul, ShapesThatDoNotMultiplyAreShapeErrors) {
    const Data a = random_data({4, 5}, DType::float32, rng);
    EXPECT_THROW(kiln::matmul(a.array, a.array), kiln::ShapeError);
}

TEST_F(Matmul, EmptyExtents) {
    const Array a = kiln::empty({3, 0}, DType::float32), b = kiln::empty({0, 4}, DType::float32);
    const Array c = kiln::matmul(a, b); // k = 0: zeros
    EXPECT_EQ(c.shape(), Dims({3, 4}));
    for (const Complex& v : values_of(c))
        EXPECT_EQ(v, Complex(0.0));
    const Array e = kiln::empty({0, 5}, DType::float32);
    const Data f = random_data({5, 4}, DType::float32, rng);
    EXPECT_EQ(kiln::matmul(e, f.array).shape(), Dims({0, 4}));
}

TEST_F(Matmul, TensorFloat32WhenAllowed) {
    const Data a = random_data({256, 512}, DType::float32, rng);
    const Data b = random_data({512, 128}, DType::float32, rng);
    MatmulOptions options;
    options.allow_tf32 = true;
    EXPECT_TRUE(matches(kiln::matmul(a.array, b.array, options),
                        host_matmul(a.values, a.shape, b.values, b.shape),
                        tolerance(DType::float32, true)));
}

TEST_F(Matmul, RunsOnTheCallersStreamAndUnderGraphCapture) {
    const DType f = DType::float32;
    kiln::Stream stream;
    const Data a = random_data({3, 64, 48}, f, rng), b = random_data({48, 40}, f, rng);
    const Reference want = host_matmul(a.values, a.shape, b.values, b.shape);
    const Array out = poisoned({3, 64, 40}, f, stream);
    // A thread of its own, so its first matmul (which makes its cuBLAS handle) is the captured
    // one.
    std::string failure;
    std::thread capture([&] {
        try {
            MatmulOptions options;
            options.stream = stream;
            options.out = &out;
            kiln::Graph graph =
                kiln::Graph::capture(stream, [&] { kiln::matmul(a.array, b.array, options); });
            kiln::GraphExec exec = graph.instantiate();
            exec.launch(stream);
            stream.synchronize();
        } catch (const std::exception& e) {
            failure = e.what();
        }
    });
    capture.join();
    ASSERT_EQ(failure, "");
    EXPECT_TRUE(matches(out, want, tolerance(f)));
}

TEST_F(Matmul, ThreadsEachKeepTheirOwnHandle) {
    const DType f = DType::float64;
    const Data a = random_data({50, 60}, f, rng), b = random_data({60, 70}, f, rng);
    const Reference want = host_matmul(a.values, a.shape, b.values, b.shape);
    std::vector<kiln::Stream> streams(4); // outlive the results, which are freed on them
    std::vector<Array> results(streams.size());
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
            MatmulOptions options;
            options.stream = streams[t];
            for (int repeat = 0; repeat < 20; ++repeat)
                results[t] = kiln::matmul(a.array, b.array, options);
            streams[t].synchronize();
        });
    for (std::thread& thread : threads)
        thread.join();
    for (const Array& r : results)
        EXPECT_TRUE(matches(r, want, tolerance(f)));
}

class Trace : public Matmul {};

TEST_F(Trace, SumsTheDiagonalIntoA0dArrayAsSumDoes) {
    const Data a = random_data({7, 9}, DType::float64, rng);
    for (std::int64_t offset : {0, 2, -3, 9, -7}) {
        Complex want = 0.0;
        for (std::int64_t i = 0; i < 7; ++i)
            if (i + offset >= 0 && i + offset < 9) want += a.values[to_size(i * 9 + i + offset)];
        const Array t = kiln::trace(a.array, offset);
        EXPECT_EQ(t.ndim(), 0);
        EXPECT_EQ(t.dtype(), DType::float64);
        EXPECT_NEAR(values_of(t)[0].real(), want.real(), 1e-12) << "offset " << offset;
    }
    // Integers sum in int64, as kiln::sum's do.
    const Data ints = random_data({5, 5}, DType::int32, rng);
    std::int64_t want = 0;
    for (std::int64_t i = 0; i < 5; ++i)
        want += static_cast<std::int64_t>(ints.values[to_size(i * 6)].real());
    const Array t = kiln::trace(ints.array);
    EXPECT_EQ(t.dtype(), DType::int64);
    EXPECT_EQ(values_of(t)[0].real(), static_cast<double>(want));
}

TEST_F(Trace, IsBatchedOverTheOtherDimensions) {
    const Data a = random_data({3, 4, 4}, DType::float32, rng);
    const Array t = kiln::trace(a.array, 0, -2, -1); // one per matrix
    ASSERT_EQ(t.shape(), Dims({3}));
    const std::vector<Complex> got = values_of(t);
    for (std::int64_t b = 0; b < 3; ++b) {
        double want = 0.0;
        for (std::int64_t i = 0; i < 4; ++i)
            want += a.values[to_size(b * 16 + i * 5)].real();
        EXPECT_NEAR(got[to_size(b)].real(), want, 1e-5);
    }
    // NumPy's default axes (0, 1): one sum per index of the last axis.
    const Array t01 = kiln::trace(a.array);
    ASSERT_EQ(t01.shape(), Dims({4}));
    const std::vector<Complex> got01 = values_of(t01);
    for (std::int64_t j = 0; j < 4; ++j) {
        double want = 0.0;
        for (std::int64_t i = 0; i < 3; ++i)
            want += a.values[to_size(i * 16 + i * 4 + j)].real();
        EXPECT_NEAR(got01[to_size(j)].real(), want, 1e-5);
    }
}

TEST_F(Trace, DiagonalViewsReadTheDiagonal) {
    const Data a = random_data({5, 6}, DType::float32, rng);
    const Array d = kiln::diagonal(a.array, 1);
    ASSERT_EQ(d.shape(), Dims({5}));
    const std::vector<Complex> got = values_of(d);
    for (std::int64_t i = 0; i < 5; ++i)
        EXPECT_EQ(got[to_size(i)], a.values[to_size(i * 6 + i + 1)]);
    // Writing through the view writes the matrix.
    kiln::fill(d, 42.0);
    const std::vector<Complex> after = values_of(a.array);
    EXPECT_EQ(after[1], Complex(42.0));
    EXPECT_EQ(after[0], a.values[0]);
}

} // namespace
