// ReductionKernel on the GPU against host references (double, or exact for integers) on fresh
// random data, outputs poisoned first: every axis variant, keepdims, outputs given or allocated,
// streams, broadcasting and scalars, empty and size-1 extents, views, value-and-index pairs,
// kernels without identity, every dtype, the split and many-output layouts, determinism.

#include "gpu.hpp"
#include "reduction_reference.hpp"

#include "kiln/kiln.hpp"
#include "kiln/reduction_kernel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

using kiln::Array;
using kiln::Axes;
using kiln::DType;
using kiln::ReduceCall;
using kiln::ReductionKernel;
using kiln::Slice;
using kiln::test::Complex;
using kiln::test::Data;
using kiln::test::decode;
using kiln::test::device_data;
using kiln::test::doubles;
using kiln::test::elements;
using kiln::test::next;
using kiln::test::poisoned;
using kiln::test::reference;
using kiln::test::result_shape;
using kiln::test::Shape;
using kiln::test::text;
using kiln::test::to_size;
using kiln::test::values_of;

namespace {

// Sums in double, with the sums of magnitudes that rounding errors scale with.
struct Sums {
    std::vector<double> value, scale;
};
template <class V> Sums sums(const std::vector<V>& x, const Shape& shape, const Axes& axes) {
    using Two = std::pair<double, double>;
    Sums s;
    for (const Two& r : reference(x, shape, axes, Two{0, 0}, [](Two a, V v, std::int64_t) {
             return Two{a.first + static_cast<double>(v), a.second + std::abs(double(v))};
         })) {
        s.value.push_back(r.first);
        s.scale.push_back(r.second);
    }
    return s;
}

// Every got[i] within tolerance * scale[i] of want[i] (exactly equal where that is 0). NaN, the
// poison of floating outputs, never passes.
::testing::AssertionResult near(const std::vector<double>& got, const std::vector<double>& want,
                                const std::vector<double>& scale, double tolerance) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= tolerance * scale[i]))
            return ::testing::AssertionFailure()
                   << "output " << i << " is " << got[i] << ", expected " << want[i] << " within "
                   << tolerance * scale[i];
    return ::testing::AssertionSuccess();
}

template <class T> std::vector<T> uniform(std::size_t n, unsigned seed, T lo = -1, T hi = 1) {
    std::mt19937 engine(seed);
    std::uniform_real_distribution<T> dist(lo, hi);
    std::vector<T> v(n);
    for (T& x : v)
        x = dist(engine);
    return v;
}

// Leaves poisoned memory just freed in the pool, so that an output Kiln allocates next likely
// starts out poisoned too (best effort: the stream-ordered pool reuses recent blocks).
void dirty_pool(const Shape& shape, DType dtype) {
    (void)poisoned(shape, dtype);
}

// The C-order elements of a view of the C-order `values`: element c of the view is
// values[offset + sum(c[d] * strides[d])], strides in elements.
std::vector<double> gather(const std::vector<double>& values, const Shape& shape,
                           const Shape& strides, std::int64_t offset) {
    std::vector<double> out;
    std::vector<std::int64_t> at(shape.size(), 0);
    for (std::int64_t n = elements(shape); n > 0; --n) {
        std::int64_t k = offset;
        for (std::size_t d = 0; d < shape.size(); ++d)
            k += at[d] * strides[d];
        out.push_back(values[to_size(k)]);
        next(at, shape);
    }
    return out;
}

const ReductionKernel& sum_kernel() {
    static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "sum_like");
    return k;
}

// A sum weighted by each element's place in its reduction, and each output's own index: a wrong
// element, a wrong `_J`, a wrong `_i` or an output written to the wrong place all show.
const ReductionKernel& weighted_sum() {
    static const ReductionKernel k("T x", "T y, int64 at", "x * (1 + _J % 5)", "a + b",
                                   "y = a; at = _i", "0", "weighted_sum");
    return k;
}

// weighted_sum over `axes` of the float64 array x, whose elements in C order are `values`.
void check_weighted(const Array& x, const std::vector<double>& values, const Axes& axes,
                    bool keepdims, bool give_outputs) {
    const Shape shape(x.shape().begin(), x.shape().end());
    SCOPED_TRACE("shape " + text(shape) + ", axis=" + axes.to_string() +
                 (keepdims ? ", keepdims" : "") + (give_outputs ? ", outputs given" : ""));
    const Shape out_shape = result_shape(shape, axes, keepdims);
    const ReduceCall how{axes, keepdims};
    kiln::Outputs outs;
    if (give_outputs) {
        const Array y = poisoned(out_shape, DType::float64), at = poisoned(out_shape, DType::int64);
        outs = weighted_sum()(how, x, y, at);
        ASSERT_EQ(outs.size(), 2u);
        EXPECT_EQ(outs[0].data(), y.data());
        EXPECT_EQ(outs[1].data(), at.data());
    } else {
        dirty_pool(out_shape, DType::float64);
        outs = weighted_sum()(how, x);
        ASSERT_EQ(outs.size(), 2u);
    }
    EXPECT_EQ(outs[0].shape().to_string(), text(out_shape));
    EXPECT_EQ(outs[1].shape().to_string(), text(out_shape));
    EXPECT_EQ(outs[0].dtype(), DType::float64);
    EXPECT_EQ(outs[1].dtype(), DType::int64);
    const auto ref =
        reference(values, shape, axes, std::pair<double, double>{0, 0},
                  [](std::pair<double, double> a, double v, std::int64_t j) {
                      const double w = static_cast<double>(1 + j % 5);
                      return std::pair<double, double>{a.first + v * w, a.second + std::abs(v) * w};
                  });
    std::vector<double> want, scale;
    for (const auto& r : ref) {
        want.push_back(r.first);
        scale.push_back(r.second);
    }
    EXPECT_TRUE(near(outs[0].to_host<double>(), want, scale, 1e-11));
    const auto at = outs[1].to_host<std::int64_t>();
    ASSERT_EQ(at.size(), want.size());
    for (std::size_t o = 0; o < at.size(); ++o)
        ASSERT_EQ(at[o], static_cast<std::int64_t>(o)) << "the output index _i of output " << o;
}

// The float32 sum kernel over `axes` of x (C-order `values`) into a poisoned output, within
// 1e-5 of the sum of magnitudes.
void check_sum(const Array& x, const std::vector<float>& values, const Axes& axes,
               kiln::StreamRef stream = {}) {
    const Shape shape(x.shape().begin(), x.shape().end());
    SCOPED_TRACE("shape " + text(shape) + ", axis=" + axes.to_string());
    const Array y = poisoned(result_shape(shape, axes), DType::float32, stream);
    sum_kernel()(ReduceCall{axes, false, stream}, x, y);
    const Sums ref = sums(values, shape, axes);
    EXPECT_TRUE(near(doubles(y.to_host<float>(stream)), ref.value, ref.scale, 1e-5));
}

} // namespace

TEST(ReductionKernelGpu, EveryAxisVariantWithAndWithoutKeepdimsAndGivenOutputs) {
    KILN_REQUIRE_GPU();
    const std::vector<std::pair<Shape, std::vector<Axes>>> variants = {
        {{1000}, {Axes::all(), Axes(0), Axes(-1), Axes::none()}},
        {{33, 200},
         {Axes::all(), Axes(0), Axes(1), Axes(-1), Axes(-2), Axes{0, 1}, Axes{-1, 0},
          Axes::none()}},
        {{7, 12, 50},
         {Axes::all(), Axes(0), Axes(1), Axes(2), Axes(-1), Axes{0, 2}, Axes{0, 1}, Axes{1, 2},
          Axes{2, 0}}},
        {{3, 5, 6, 40},
         {Axes::all(), Axes(0), Axes(1), Axes(2), Axes(3), Axes{1, 3}, Axes{0, 2}, Axes{0, 1, 2},
          Axes{2, 3}, Axes{0, 3}, Axes{-3, -2}, Axes{0, 1, 3}}},
    };
    unsigned seed = 100;
    for (const auto& [shape, axes_list] : variants) {
        const auto x = uniform<double>(to_size(elements(shape)), ++seed);
        const Array xa = kiln::from_host(x, kiln::Dims(shape));
        for (const Axes& axes : axes_list)
            for (bool keepdims : {false, true})
                for (bool give : {true, false})
                    check_weighted(xa, x, axes, keepdims, give);
    }
}

TEST(ReductionKernelGpu, SizeOneDimensionsAnywhere) {
    KILN_REQUIRE_GPU();
    const std::vector<std::pair<Shape, std::vector<Axes>>> variants = {
        {{1, 37, 1, 64},
         {Axes::all(), Axes(0), Axes(1), Axes(2), Axes(3), Axes{0, 2}, Axes{1, 3}, Axes{0, 1}}},
        {{64, 1}, {Axes(0), Axes(1), Axes::all()}},
        {{1, 300}, {Axes(0), Axes(1)}},
        {{1}, {Axes::all(), Axes(0)}},
        {{1, 1, 1}, {Axes::all(), Axes(1), Axes{0, 2}}},
    };
    unsigned seed = 200;
    for (const auto& [shape, axes_list] : variants) {
        const auto x = uniform<double>(to_size(elements(shape)), ++seed);
        const Array xa = kiln::from_host(x, kiln::Dims(shape));
        for (const Axes& axes : axes_list)
            for (bool keepdims : {false, true})
                check_weighted(xa, x, axes, keepdims, true);
    }
}

TEST(ReductionKernelGpu, TransposedSlicedAndBroadcastViews) {
    KILN_REQUIRE_GPU();
    const std::int64_t m = 300, n = 200;
    const auto x = uniform<double>(to_size(m * n), 301);
    const Array xa = kiln::from_host(x, {m, n});
    const auto x3 = uniform<double>(std::size_t{6} * 20 * 50, 302);
    const Array x3a = kiln::from_host(x3, {6, 20, 50});
    const auto row = uniform<double>(to_size(n), 303);
    struct View {
        Array array;
        Shape shape, strides; // in elements of the base
        std::int64_t offset;
        const std::vector<double>* base;
        std::vector<Axes> axes;
    };
    const View views[] = {
        {xa.transpose(), {n, m}, {1, n}, 0, &x, {Axes(0), Axes(1), Axes::all()}},
        {x3a.transpose({2, 0, 1}),
         {50, 6, 20},
         {1, 1000, 50},
         0,
         &x3,
         {Axes(0), Axes(1), Axes(2), Axes{0, 2}, Axes::all()}},
        {xa.slice({Slice::range(1, m, 3), Slice::range(0, n, 2)}),
         {100, 100},
         {3 * n, 2},
         n,
         &x,
         {Axes(0), Axes(1), Axes::all()}},
        {xa.slice({Slice::all(), 5}), {m}, {n}, 5, &x, {Axes::all()}},
        {x3a.slice({Slice::all(), Slice::range(0, 20, 4)}),
         {6, 5, 50},
         {1000, 200, 1},
         0,
         &x3,
         {Axes(1), Axes{0, 2}, Axes(2)}},
        {kiln::from_host(row).broadcast_to({m, n}),
         {m, n},
         {0, 1},
         0,
         &row,
         {Axes(0), Axes(1), Axes::all()}},
    };
    for (const View& view : views) {
        ASSERT_EQ(view.array.shape().to_string(), text(view.shape));
        const auto values = gather(*view.base, view.shape, view.strides, view.offset);
        for (const Axes& axes : view.axes)
            for (bool give : {true, false})
                check_weighted(view.array, values, axes, false, give);
        check_weighted(view.array, values, view.axes[0], true, true);
    }
}

TEST(ReductionKernelGpu, L2NormOfTheSeedExampleByRowsAndOverEverything) {
    KILN_REQUIRE_GPU();
    const ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    const std::int64_t n = 1000;
    const auto x = uniform<float>(to_size(n * n), 401);
    const Array xa = kiln::from_host(x, {n, n});
    auto squares = [](double a, float v, std::int64_t) { return a + double(v) * double(v); };

    const Array rows = poisoned({n}, DType::float32);
    kiln::Outputs outs = l2norm(ReduceCall{1}, xa, rows);
    EXPECT_EQ(outs[0].data(), rows.data());
    std::vector<double> want;
    for (double s : reference(x, {n, n}, Axes(1), 0.0, squares))
        want.push_back(std::sqrt(s));
    EXPECT_TRUE(near(doubles(rows.to_host<float>()), want, want, 1e-5));

    dirty_pool({}, DType::float32);
    const Array total = l2norm(xa);
    EXPECT_EQ(total.ndim(), 0);
    EXPECT_EQ(total.dtype(), DType::float32);
    const double expected = std::sqrt(reference(x, {n, n}, Axes::all(), 0.0, squares)[0]);
    EXPECT_TRUE(near(doubles(total.to_host<float>()), {expected}, {expected}, 1e-5));
}

TEST(ReductionKernelGpu, PairsOfValueAndIndexFindTheFirstMaximum) {
    KILN_REQUIRE_GPU();
    kiln::ReductionOptions options;
    options.reduce_type = "kiln::pair<T, long long>";
    const ReductionKernel argmax("T x", "int64 y", "kiln::make_pair(x, _J)",
                                 "kiln::argmax_merge(a, b)", "y = a.second",
                                 "_type_reduce(kiln::lowest<T>(), -1)", "pair_argmax", options);
    struct Case {
        Shape shape;
        Axes axes;
    };
    const Case cases[] = {
        {{1 << 20}, Axes::all()},
        {{512, 700}, Axes(0)},
        {{512, 700}, Axes(1)},
        {{37, 41, 29}, Axes::all()},
        {{37, 41, 29}, Axes(1)},
        {{3, 1000, 5}, Axes{0, 2}},
        {{1 << 14, 40}, Axes(1)},
        {{2000, 3}, Axes(-1)},
        // Columns of few rows, each thread reading every row.
        {{4, 3000}, Axes(0)},
        {{16, 1000}, Axes(0)},
        {{9, 5, 64}, Axes(1)},
        // Short rows, several loads a lane.
        {{4099, 64}, Axes(1)},
        {{4099, 16}, Axes(1)},
        {{4099, 36}, Axes(1)},
    };
    unsigned seed = 500;
    for (const Case& c : cases) {
        SCOPED_TRACE("shape " + text(c.shape) + ", axis=" + c.axes.to_string());
        // Negative small integers: ties everywhere, and a zero-initialised pair would win.
        std::mt19937 engine(++seed);
        std::uniform_int_distribution<int> dist(-20, -11);
        std::vector<float> x(to_size(elements(c.shape)));
        for (float& v : x)
            v = static_cast<float>(dist(engine));
        if (c.shape.size() == 1) // the maximum first appears late, in some block but the first
            for (std::size_t at : {777777u, 800001u, 1000000u})
                x[at] = -5;
        const Array y = poisoned(result_shape(c.shape, c.axes), DType::int64);
        argmax(ReduceCall{c.axes}, kiln::from_host(x, kiln::Dims(c.shape)), y);
        using Best = std::pair<double, std::int64_t>;
        const auto ref =
            reference(x, c.shape, c.axes, Best{-std::numeric_limits<double>::infinity(), -1},
                      [](Best b, float v, std::int64_t j) {
                          return double(v) > b.first ? Best{v, j} : b;
                      });
        const auto got = y.to_host<std::int64_t>();
        ASSERT_EQ(got.size(), ref.size());
        for (std::size_t o = 0; o < got.size(); ++o)
            ASSERT_EQ(got[o], ref[o].second) << "output " << o;
    }
}

TEST(ReductionKernelGpu, PostMapSeesTheInputAndOutputSizes) {
    KILN_REQUIRE_GPU();
    const ReductionKernel mean("T x", "T y", "x", "a + b",
                               "y = a / (_in_ind.size() / _out_ind.size())", "0", "size_mean");
    struct Case {
        Shape shape;
        Axes axes;
    };
    for (const Case& c :
         {Case{{300, 500}, Axes(0)}, Case{{300, 500}, Axes(1)}, Case{{300, 500}, Axes::all()},
          Case{{4, 5, 6}, Axes{0, 2}}, Case{{1 << 20}, Axes::all()}}) {
        SCOPED_TRACE("shape " + text(c.shape) + ", axis=" + c.axes.to_string());
        const auto x = uniform<double>(to_size(elements(c.shape)), 601);
        const Array y = poisoned(result_shape(c.shape, c.axes), DType::float64);
        mean(ReduceCall{c.axes}, kiln::from_host(x, kiln::Dims(c.shape)), y);
        Sums ref = sums(x, c.shape, c.axes);
        const double n = double(elements(c.shape)) / double(ref.value.size());
        for (std::size_t o = 0; o < ref.value.size(); ++o)
            ref.value[o] /= n, ref.scale[o] /= n;
        EXPECT_TRUE(near(y.to_host<double>(), ref.value, ref.scale, 1e-12));
    }
    // `_in_ind.size()` counts the broadcast input: (m, 1) against (1, n) is m * n elements.
    const ReductionKernel weighted_mean("T x, T w", "T y", "x * w", "a + b",
                                        "y = a / (_in_ind.size() / _out_ind.size())", "0",
                                        "broadcast_mean");
    const std::int64_t m = 70, n = 90;
    const auto x = uniform<double>(to_size(m), 602), w = uniform<double>(to_size(n), 603);
    const Array y = poisoned({m}, DType::float64);
    weighted_mean(ReduceCall{1}, kiln::from_host(x, {m, 1}), kiln::from_host(w, {1, n}), y);
    double w_sum = 0, w_abs = 0;
    for (double v : w)
        w_sum += v, w_abs += std::abs(v);
    std::vector<double> want, scale;
    for (double v : x) {
        want.push_back(v * w_sum / double(n));
        scale.push_back(std::abs(v) * w_abs / double(n));
    }
    EXPECT_TRUE(near(y.to_host<double>(), want, scale, 1e-12));
}

TEST(ReductionKernelGpu, KernelsWithoutIdentityNeverSeeAZeroAccumulator) {
    KILN_REQUIRE_GPU();
    const ReductionKernel max("T x", "T y", "x", "a > b ? a : b", "y = a", "", "max_no_identity");
    struct Case {
        Shape shape;
        Axes axes;
    };
    const Case cases[] = {
        {{1 << 20}, Axes::all()},   {{1000, 777}, Axes(1)},   {{1000, 777}, Axes(0)},
        {{64, 3, 100}, Axes{0, 2}}, {{1 << 14, 64}, Axes(1)}, {{1 << 18, 64}, Axes(0)},
        {{2, 3}, Axes(0)},          {{5, 1}, Axes(1)},        {{7}, Axes::all()},
    };
    unsigned seed = 700;
    for (const Case& c : cases) {
        SCOPED_TRACE("shape " + text(c.shape) + ", axis=" + c.axes.to_string());
        const auto x = uniform<float>(to_size(elements(c.shape)), ++seed, -3.f, -1.f);
        const Array y = poisoned(result_shape(c.shape, c.axes), DType::float32);
        max(ReduceCall{c.axes}, kiln::from_host(x, kiln::Dims(c.shape)), y);
        const auto want = reference(x, c.shape, c.axes, -std::numeric_limits<float>::infinity(),
                                    [](float a, float v, std::int64_t) { return v > a ? v : a; });
        const auto got = y.to_host<float>();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t o = 0; o < got.size(); ++o)
            ASSERT_EQ(got[o], want[o]) << "output " << o;
    }
}

TEST(ReductionKernelGpu, SeveralInputsBroadcastAndScalarInputs) {
    KILN_REQUIRE_GPU();
    const ReductionKernel dot("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "weighted_rows");
    const std::int64_t m = 300, n = 500;
    const auto x = uniform<double>(to_size(m * n), 801), row = uniform<double>(to_size(n), 802),
               col = uniform<double>(to_size(m), 803);
    const Array xa = kiln::from_host(x, {m, n});
    struct Case {
        Array w;
        std::vector<double> broadcast; // w's values over (m, n)
    };
    const Case cases[] = {
        {kiln::from_host(row), gather(row, {m, n}, {0, 1}, 0)},
        {kiln::from_host(col, {m, 1}), gather(col, {m, n}, {1, 0}, 0)},
    };
    for (const Case& c : cases)
        for (const Axes& axes : {Axes(1), Axes(0), Axes::all()}) {
            SCOPED_TRACE("w of shape " + c.w.shape().to_string() + ", axis=" + axes.to_string());
            std::vector<double> products(x.size());
            for (std::size_t i = 0; i < x.size(); ++i)
                products[i] = x[i] * c.broadcast[i];
            const Array y = poisoned(result_shape({m, n}, axes), DType::float64);
            dot(ReduceCall{axes}, xa, c.w, y);
            const Sums ref = sums(products, {m, n}, axes);
            EXPECT_TRUE(near(y.to_host<double>(), ref.value, ref.scale, 1e-12));
            // Arguments the other way round broadcast alike.
            const Array z = dot(ReduceCall{axes}, c.w, xa);
            EXPECT_TRUE(near(z.to_host<double>(), ref.value, ref.scale, 1e-12));
        }

    // A scalar input, cast to the type its placeholder is bound to, seen by map and post-map.
    const ReductionKernel scaled("T x, T s", "T y", "x * s", "a + b", "y = a + s", "0", "scaled");
    const auto xf = uniform<float>(to_size(m * n), 804);
    const Array xfa = kiln::from_host(xf, {m, n});
    for (const Axes& axes : {Axes(1), Axes(0), Axes::all()}) {
        SCOPED_TRACE("scalar, axis=" + axes.to_string());
        const Array y = poisoned(result_shape({m, n}, axes), DType::float32);
        scaled(ReduceCall{axes}, xfa, 0.5, y);
        Sums ref = sums(xf, {m, n}, axes);
        for (std::size_t o = 0; o < ref.value.size(); ++o) {
            ref.value[o] = ref.value[o] * 0.5 + 0.5;
            ref.scale[o] = ref.scale[o] * 0.5 + 0.5;
        }
        EXPECT_TRUE(near(doubles(y.to_host<float>()), ref.value, ref.scale, 1e-5));
    }
}

TEST(ReductionKernelGpu, EmptyReductionsGivePostMapOfTheIdentityOrAnError) {
    KILN_REQUIRE_GPU();
    const ReductionKernel plus_one("T x", "T y", "x", "a + b", "y = a + 1", "0", "sum_plus_one");
    const ReductionKernel times_three("T x", "T y", "x", "a * b", "y = a * 3", "1",
                                      "prod_times_three");
    const ReductionKernel no_identity("T x", "T y", "x", "a > b ? a : b", "y = a", "",
                                      "max_no_identity");
    struct Case {
        Shape shape;
        Axes axes;
        bool keepdims;
    };
    const Case reduced_empty[] = {
        {{0}, Axes::all(), false},   {{4, 0}, Axes(1), false},      {{0, 5}, Axes(0), false},
        {{3, 0, 2}, Axes(1), false}, {{3, 0, 2}, Axes{0, 1}, true}, {{0, 5}, Axes::all(), false},
    };
    for (const Case& c : reduced_empty) {
        SCOPED_TRACE("shape " + text(c.shape) + ", axis=" + c.axes.to_string());
        const Array x = kiln::empty(kiln::Dims(c.shape), DType::float32);
        const Shape out_shape = result_shape(c.shape, c.axes, c.keepdims);
        const ReduceCall how{c.axes, c.keepdims};
        for (const auto& [kernel, expected] :
             {std::pair<const ReductionKernel*, float>{&plus_one, 1.f}, {&times_three, 3.f}}) {
            const Array given = poisoned(out_shape, DType::float32);
            (*kernel)(how, x, given);
            const Array allocated = (*kernel)(how, x);
            EXPECT_EQ(allocated.shape().to_string(), text(out_shape));
            for (const Array& y : {given, allocated})
                for (float v : y.to_host<float>())
                    ASSERT_EQ(v, expected) << kernel->name();
        }
        EXPECT_THROW(no_identity(how, x), kiln::ArgumentError);
    }
    // A zero-size kept axis: no outputs, nothing to reduce, no error even without an identity.
    for (const Case& c : {Case{{0, 5}, Axes(1), false}, Case{{0, 5}, Axes(1), true},
                          Case{{3, 0, 4}, Axes{0, 2}, false}, Case{{0, 0}, Axes(1), false}}) {
        SCOPED_TRACE("shape " + text(c.shape) + ", axis=" + c.axes.to_string());
        const Array x = kiln::empty(kiln::Dims(c.shape), DType::float32);
        const Shape out_shape = result_shape(c.shape, c.axes, c.keepdims);
        for (const ReductionKernel* kernel : {&plus_one, &no_identity}) {
            Array y;
            ASSERT_NO_THROW(y = (*kernel)(ReduceCall{c.axes, c.keepdims}, x)) << kernel->name();
            EXPECT_EQ(y.shape().to_string(), text(out_shape));
            EXPECT_EQ(y.size(), 0);
            const Array given = kiln::empty(kiln::Dims(out_shape), DType::float32);
            EXPECT_NO_THROW((*kernel)(ReduceCall{c.axes, c.keepdims}, x, given));
        }
    }
}

TEST(ReductionKernelGpu, SumLikeKernelOverEveryDtype) {
    KILN_REQUIRE_GPU();
    struct Case {
        Shape shape;
        Axes axes;
    };
    const Case cases[] = {
        {{37, 300}, Axes(1)},    {{37, 300}, Axes(0)},      {{37, 300}, Axes::all()},
        {{3, 1 << 16}, Axes(1)}, {{1 << 12, 64}, Axes(-1)},
    };
    for (int d = 0; d < kiln::kDTypeCount; ++d) {
        const auto dtype = static_cast<DType>(d);
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(kiln::name(dtype)) + ", shape " + text(c.shape) +
                         ", axis=" + c.axes.to_string());
            std::mt19937 engine(900 + static_cast<unsigned>(d));
            std::uniform_int_distribution<int> small_signed(-3, 3), small_unsigned(0, 6);
            std::uniform_real_distribution<double> real(-1, 1);
            std::vector<Complex> v(to_size(elements(c.shape)));
            for (Complex& e : v)
                e = kiln::is_bool(dtype)               ? Complex(engine() % 97 == 0)
                    : kiln::is_signed_integer(dtype)   ? Complex(small_signed(engine))
                    : kiln::is_unsigned_integer(dtype) ? Complex(small_unsigned(engine))
                    : kiln::is_complex(dtype)          ? Complex(real(engine), real(engine))
                                                       : Complex(real(engine));
            const Data x = device_data(v, c.shape, dtype);
            const Array y = poisoned(result_shape(c.shape, c.axes), dtype);
            sum_kernel()(ReduceCall{c.axes}, x.array, y);
            const auto got = values_of(y);
            if (kiln::is_bool(dtype) || kiln::is_integer(dtype)) {
                // Exact: bool `a + b` is `a || b`; integers wrap modulo 2^bits as they add.
                const auto ref = reference(x.values, c.shape, c.axes, std::int64_t{0},
                                           [&](std::int64_t a, Complex e, std::int64_t) {
                                               const auto k = static_cast<std::int64_t>(e.real());
                                               return kiln::is_bool(dtype) ? (a || k) : a + k;
                                           });
                ASSERT_EQ(got.size(), ref.size());
                for (std::size_t o = 0; o < ref.size(); ++o) {
                    unsigned char bytes[16];
                    kiln::cast_scalar(ref[o], dtype, bytes);
                    ASSERT_EQ(got[o], decode(bytes, dtype)) << "output " << o;
                }
                continue;
            }
            const double tolerance = kiln::itemsize(dtype) == 2                             ? 1e-2
                                     : dtype == DType::float32 || dtype == DType::complex64 ? 1e-5
                                                                                            : 1e-12;
            std::vector<double> re(x.values.size()), im(x.values.size()), got_re, got_im;
            for (std::size_t i = 0; i < re.size(); ++i)
                re[i] = x.values[i].real(), im[i] = x.values[i].imag();
            for (const Complex& g : got)
                got_re.push_back(g.real()), got_im.push_back(g.imag());
            const Sums ref_re = sums(re, c.shape, c.axes), ref_im = sums(im, c.shape, c.axes);
            EXPECT_TRUE(near(got_re, ref_re.value, ref_re.scale, tolerance)) << "real parts";
            if (kiln::is_complex(dtype)) {
                EXPECT_TRUE(near(got_im, ref_im.value, ref_im.scale, tolerance))
                    << "imaginary parts";
            }
        }
    }
}

TEST(ReductionKernelGpu, LongReductionsSplitAcrossBlocksAndManyShortOnes) {
    KILN_REQUIRE_GPU();
    struct Case {
        Shape shape;
        std::vector<Axes> axes;
    };
    const Case cases[] = {
        {{1 << 24}, {Axes::all()}},           // one output split across every block
        {{4, 1 << 22}, {Axes(1)}},            // few long rows, split
        {{1 << 20, 64}, {Axes(0)}},           // few long columns, split
        {{2, 1 << 20, 8}, {Axes(1)}},         // few long strided reductions, split
        {{16, 1 << 16}, {Axes(1), Axes(0)}},  // rows split; many short columns
        {{1 << 16, 64}, {Axes(1)}},           // a warp per row
        {{1 << 16, 256}, {Axes(1), Axes(0)}}, // a warp per row; few long columns
        {{4096, 4096}, {Axes(1), Axes(0)}},   // a block per row; columns split
        {{64, 1 << 16}, {Axes(0)}},           // many columns
        {{5001, 20}, {Axes(1)}},              // 8 lanes a row, the last warp's rows cut short
        {{5001, 3}, {Axes(1)}},               // 4 lanes a row, scalar loads
        {{3001, 1, 6}, {Axes(1)}},            // rows of one element: a lane each
        {{255, 1000}, {Axes(0)}},             // too few rows ever to split; a column tail
        {{3, 200, 70}, {Axes(1)}},            // the same, batched, two columns per thread
        // Each side of where the unrolled loop is first entered: a block per row (768 vectors
        // and 769), a warp per row (96 and 97), a column (24 rows and 25).
        {{600, 3072}, {Axes(1)}},
        {{600, 3076}, {Axes(1)}},
        {{5001, 384}, {Axes(1)}},
        {{5001, 388}, {Axes(1)}},
        {{24, 1000}, {Axes(0)}},
        {{25, 1000}, {Axes(0)}},
    };
    unsigned seed = 1000;
    for (const Case& c : cases) {
        const auto x = uniform<float>(to_size(elements(c.shape)), ++seed);
        const Array xa = kiln::from_host(x, kiln::Dims(c.shape));
        for (const Axes& axes : c.axes)
            check_sum(xa, x, axes);
    }
}

TEST(ReductionKernelGpu, ColumnsOfFewRowsReadEveryRowInOneThread) {
    KILN_REQUIRE_GPU();
    // Under 32 rows a thread per column (times its vector) reads every row, up to 8 at once:
    // row counts on each side of the unrolled loop's copies, widths with and without vector loads
    // and with a partial last block, batched columns, float32 sums and float64 weighted sums that
    // see _J and _i, then bitwise the same result on every run.
    const Shape shapes[] = {{2, 4096},  {3, 1000},  {4, 1 << 18},  {5, 1001},
                            {8, 2048},  {9, 300},   {16, 4100},    {17, 777},
                            {31, 1024}, {7, 4, 36}, {100, 16, 16}, {3, 2, 4100}};
    unsigned seed = 3000;
    for (const Shape& shape : shapes) {
        const Axes axes(static_cast<int>(shape.size()) - 2);
        const auto x = uniform<float>(to_size(elements(shape)), ++seed);
        check_sum(kiln::from_host(x, kiln::Dims(shape)), x, axes);
        const auto w = uniform<double>(to_size(elements(shape)), ++seed);
        const Array wa = kiln::from_host(w, kiln::Dims(shape));
        check_weighted(wa, w, axes, false, true);
        check_weighted(wa, w, axes, true, false);
    }
    const Shape shape{4, 1 << 18};
    const auto x = uniform<float>(to_size(elements(shape)), 3100);
    const Array xa = kiln::from_host(x, kiln::Dims(shape));
    std::vector<float> first;
    for (int run = 0; run < 4; ++run) {
        const Array y = poisoned({1 << 18}, DType::float32);
        sum_kernel()(ReduceCall{0}, xa, y);
        const auto got = y.to_host<float>();
        if (run == 0) first = got;
        ASSERT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
            << "run " << run << " differs from the first";
    }
}

TEST(ReductionKernelGpu, ShortRowsShareAWarpWithSeveralLoadsALane) {
    KILN_REQUIRE_GPU();
    // Rows of up to 64 vectors: 2 to 16 lanes a row, each with up to 4 loads at once, a partial
    // last warp of rows; float32 sums and float64 weighted sums (two a vector) that see _J and _i.
    const Shape shapes[] = {{5003, 16},  {4099, 32}, {4097, 64},    {3001, 68},
                            {2003, 256}, {2001, 12}, {1001, 5, 24}, {3001, 7}};
    unsigned seed = 3200;
    for (const Shape& shape : shapes) {
        const Axes axes(-1);
        const auto x = uniform<float>(to_size(elements(shape)), ++seed);
        check_sum(kiln::from_host(x, kiln::Dims(shape)), x, axes);
        const auto w = uniform<double>(to_size(elements(shape)), ++seed);
        check_weighted(kiln::from_host(w, kiln::Dims(shape)), w, axes, false, true);
    }
}

TEST(ReductionKernelGpu, RunsOnTheStreamGiven) {
    KILN_REQUIRE_GPU();
    kiln::Stream stream;
    const Shape shape{4, 1 << 20};
    const auto x = uniform<float>(to_size(elements(shape)), 1101);
    const Array xa = kiln::from_host(x, kiln::Dims(shape), stream);
    // Queued back to back, split reductions among them, read only at the end.
    const Array rows = poisoned({4}, DType::float32, stream);
    const Array columns = poisoned({1 << 20}, DType::float32, stream);
    const Array total = poisoned({}, DType::float32, stream);
    sum_kernel()(ReduceCall{1, false, stream}, xa, rows);
    sum_kernel()(ReduceCall{0, false, stream}, xa, columns);
    sum_kernel()(ReduceCall{Axes::all(), false, stream}, xa, total);
    const Array allocated = sum_kernel()(ReduceCall{-1, true, stream}, xa);
    for (const auto& [y, axes] : {std::pair<Array, Axes>{rows, Axes(1)},
                                  {columns, Axes(0)},
                                  {total, Axes::all()},
                                  {allocated, Axes(-1)}}) {
        SCOPED_TRACE("axis=" + axes.to_string());
        const Sums ref = sums(x, shape, axes);
        EXPECT_TRUE(near(doubles(y.to_host<float>(stream)), ref.value, ref.scale, 1e-5));
    }
    EXPECT_EQ(allocated.shape().to_string(), "(4, 1)");
}

TEST(ReductionKernelGpu, RepeatedCallsGiveBitwiseIdenticalResults) {
    KILN_REQUIRE_GPU();
    struct Case {
        Shape shape;
        Axes axes;
    };
    for (const Case& c : {Case{{1 << 24}, Axes::all()}, Case{{4096, 4096}, Axes(0)}}) {
        SCOPED_TRACE("shape " + text(c.shape) + ", axis=" + c.axes.to_string());
        const auto x = uniform<float>(to_size(elements(c.shape)), 1201);
        const Array xa = kiln::from_host(x, kiln::Dims(c.shape));
        const Sums ref = sums(x, c.shape, c.axes);
        std::vector<float> first;
        for (int run = 0; run < 5; ++run) {
            const Array y = poisoned(result_shape(c.shape, c.axes), DType::float32);
            sum_kernel()(ReduceCall{c.axes}, xa, y);
            const auto got = y.to_host<float>();
            if (run == 0) {
                EXPECT_TRUE(near(doubles(got), ref.value, ref.scale, 1e-5));
                first = got;
                continue;
            }
            ASSERT_EQ(got.size(), first.size());
            ASSERT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
                << "run " << run << " differs from the first";
        }
    }
}

TEST(ReductionKernelGpu, AReduceExpressionThatDoesNotCompileIsNamedInTheError) {
    KILN_REQUIRE_GPU();
    const ReductionKernel bad("T x", "T y", "x", "a +* b", "y = a", "0", "bad_reduce");
    const Array x = kiln::from_host(uniform<float>(1000, 1301));
    try {
        bad(x);
        FAIL() << "no CompileError";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("the reduce expression"), std::string::npos)
            << e.what();
    }
}

TEST(ReductionKernelGpu, UserKernelsOrderComplexValuesAsNumPyDoes) {
    KILN_REQUIRE_GPU();
    // kiln::maximum without an identity: on values without NaN any grouping gives NumPy's max.
    const ReductionKernel largest("T x", "T y", "x", "kiln::maximum(a, b)", "y = a", "",
                                  "complex_maximum");
    // kiln::greater against a scalar: false where either value has a NaN part.
    const ReductionKernel above("T x, T t", "int64 n", "kiln::greater(x, t) ? 1 : 0", "a + b",
                                "n = a", "0", "complex_above");
    // argmin_merge on (value, index) pairs: the first element with a NaN part, else the first
    // smallest.
    kiln::ReductionOptions pairs;
    pairs.reduce_type = "kiln::pair<T, long long>";
    const ReductionKernel first_min("T x", "int64 y", "kiln::make_pair(x, _J)",
                                    "kiln::argmin_merge(a, b)", "y = a.second",
                                    "_type_reduce(T(), -1)", "complex_argmin", pairs);
    const auto has_nan = [](Complex v) { return std::isnan(v.real()) || std::isnan(v.imag()); };
    const auto lex_less = [](Complex a, Complex b) {
        return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const Shape shape{300, 257};
    unsigned seed = 1400;
    for (DType dtype : {DType::complex64, DType::complex128}) {
        // Real parts tie everywhere; the imaginary parts decide.
        std::mt19937 engine(++seed);
        const double steps[] = {-1, -0.5, 0.5, 1};
        std::uniform_real_distribution<double> unit(-1, 1);
        std::vector<Complex> v(to_size(elements(shape)));
        for (Complex& e : v)
            e = Complex(steps[engine() % 4], unit(engine));
        const Data plain = device_data(v, shape, dtype);
        const std::int64_t cols = shape[1];
        for (std::int64_t at : {5 * cols + 100, 5 * cols + 7, 200 * cols + 256, 299 * cols})
            v[to_size(at)] = at % 2 ? Complex(nan, 0.25) : Complex(-0.75, nan);
        const Data with_nan = device_data(v, shape, dtype);
        const kiln::Scalar threshold = dtype == DType::complex64
                                           ? kiln::Scalar(std::complex<float>(0.5f, 0.0f))
                                           : kiln::Scalar(std::complex<double>(0.5, 0.0));
        for (const Axes& axes : {Axes::all(), Axes(0), Axes(1)}) {
            SCOPED_TRACE(std::string(kiln::name(dtype)) + ", axis=" + axes.to_string());
            const auto max_want = reference(
                plain.values, shape, axes, Complex(-inf, -inf),
                [&](Complex a, Complex e, std::int64_t) { return lex_less(a, e) ? e : a; });
            const auto max_got = values_of(largest(ReduceCall{axes}, plain.array)[0]);
            ASSERT_EQ(max_got.size(), max_want.size());
            for (std::size_t o = 0; o < max_got.size(); ++o)
                ASSERT_EQ(max_got[o], max_want[o]) << "maximum, output " << o;

            const auto count_want = reference(
                with_nan.values, shape, axes, 0.0, [&](double n, Complex e, std::int64_t) {
                    return n + (!has_nan(e) && lex_less(Complex(0.5, 0), e) ? 1 : 0);
                });
            const Array counts = poisoned(result_shape(shape, axes), DType::int64);
            above(ReduceCall{axes}, with_nan.array, threshold, counts);
            EXPECT_EQ(doubles(counts.to_host<std::int64_t>()), count_want) << "greater";

            using Best = std::pair<Complex, std::int64_t>;
            const auto min_want = reference(
                with_nan.values, shape, axes, Best{0, -1}, [&](Best b, Complex e, std::int64_t j) {
                    const bool better =
                        b.second < 0 || (!has_nan(b.first) && (has_nan(e) || lex_less(e, b.first)));
                    return better ? Best{e, j} : b;
                });
            const Array index = poisoned(result_shape(shape, axes), DType::int64);
            first_min(ReduceCall{axes}, with_nan.array, index);
            const auto got = index.to_host<std::int64_t>();
            ASSERT_EQ(got.size(), min_want.size());
            for (std::size_t o = 0; o < got.size(); ++o)
                ASSERT_EQ(got[o], min_want[o].second) << "argmin, output " << o;
        }
    }
}

// Repeats launched from the thread's memo with new inputs, weights and outputs, over rows and
// over everything (split over blocks, with the workspace), interleaved: each call reduces its
// own operands.
TEST(ReductionKernelGpu, RepeatedCallsReduceTheirOwnOperands) {
    KILN_REQUIRE_GPU();
    // Calls 0 and 2 look alike (outputs given), as do 1 and 3 (outputs allocated, keepdims).
    for (int rep = 0; rep < 4; ++rep) {
        const auto values =
            uniform<double>(std::size_t{96} * 5000, 70 + static_cast<unsigned>(rep));
        const Array x = kiln::from_host(values).reshape({96, 5000});
        for (const Axes& axes : {Axes{1}, Axes()})
            check_weighted(x, values, axes, rep % 2 == 1, rep % 2 == 0);
    }
}
