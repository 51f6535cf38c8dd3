// The ready reductions (kiln/reductions.hpp) on the GPU against host references in double (exact
// for integers), on fresh random data, given outputs poisoned first: NumPy's result dtypes,
// values over axes, keepdims, `dtype=`, `out=`, ddof, NaN, ties, empty reductions and errors.

#include "gpu.hpp"
#include "reduction_reference.hpp"

#include "kiln/kiln.hpp"
#include "kiln/reductions.hpp"

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
using kiln::ReduceOptions;
using kiln::test::Complex;
using kiln::test::Data;
using kiln::test::device_data;
using kiln::test::doubles;
using kiln::test::elements;
using kiln::test::poisoned;
using kiln::test::reference;
using kiln::test::result_shape;
using kiln::test::Shape;
using kiln::test::text;
using kiln::test::to_size;
using kiln::test::values_of;
using kiln::test::visit;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Every got[i] within tolerance * scale[i] of want[i] (exactly equal where that is 0); NaN in
// want asks for NaN. NaN elsewhere, the poison of floating outputs, never passes.
::testing::AssertionResult near(const std::vector<double>& got, const std::vector<double>& want,
                                const std::vector<double>& scale, double tolerance) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                                            : std::abs(got[i] - want[i]) <= tolerance * scale[i];
        if (!ok)
            return ::testing::AssertionFailure()
                   << "output " << i << " is " << got[i] << ", expected " << want[i] << " within "
                   << tolerance * scale[i];
    }
    return ::testing::AssertionSuccess();
}
::testing::AssertionResult exactly(const std::vector<double>& got,
                                   const std::vector<double>& want) {
    return near(got, want, std::vector<double>(want.size(), 0.0), 0);
}

std::vector<double> magnitudes(const std::vector<double>& v) {
    std::vector<double> out;
    out.reserve(v.size());
    for (double e : v)
        out.push_back(std::abs(e));
    return out;
}

std::vector<double> reals(const Array& a) {
    std::vector<double> out;
    for (const Complex& v : values_of(a))
        out.push_back(v.real());
    return out;
}

// Random elements: bool half true, integers in [-50, 50] ([0, 100] unsigned), reals uniform in
// [-1, 1] (both parts for complex types).
Data random_array(const Shape& shape, DType dtype, unsigned seed) {
    std::mt19937 engine(seed);
    std::uniform_int_distribution<int> small_signed(-50, 50), small_unsigned(0, 100);
    std::uniform_real_distribution<double> real(-1, 1);
    std::vector<Complex> v(to_size(elements(shape)));
    for (Complex& e : v)
        e = kiln::is_bool(dtype)               ? Complex(static_cast<double>(engine() % 2))
            : kiln::is_signed_integer(dtype)   ? Complex(small_signed(engine))
            : kiln::is_unsigned_integer(dtype) ? Complex(small_unsigned(engine))
            : kiln::is_complex(dtype)          ? Complex(real(engine), real(engine))
                                               : Complex(real(engine));
    return device_data(v, shape, dtype);
}

// Host references over the elements of `x` (exact values as stored).
std::vector<double> sum_of(const Data& x, const Axes& axes, bool magnitude = false) {
    return reference(x.values, x.shape, axes, 0.0, [&](double a, Complex v, std::int64_t) {
        return a + (magnitude ? std::abs(v.real()) : v.real());
    });
}
std::vector<double> extreme_of(const Data& x, const Axes& axes, bool largest) {
    return reference(x.values, x.shape, axes, largest ? -kInf : kInf,
                     [&](double a, Complex v, std::int64_t) {
                         if (std::isnan(a) || std::isnan(v.real())) return kNaN;
                         return largest ? std::max(a, v.real()) : std::min(a, v.real());
                     });
}
// NumPy's argmax / argmin: the first extreme, or the first NaN.
std::vector<double> arg_extreme_of(const Data& x, const Axes& axes, bool largest) {
    using Best = std::pair<double, std::int64_t>;
    std::vector<double> out;
    for (const Best& b :
         reference(x.values, x.shape, axes, Best{0, -1}, [&](Best a, Complex v, std::int64_t j) {
             const double e = v.real();
             const bool better =
                 a.second < 0 ||
                 (!std::isnan(a.first) && (std::isnan(e) || (largest ? e > a.first : e < a.first)));
             return better ? Best{e, j} : a;
         }))
        out.push_back(static_cast<double>(b.second));
    return out;
}
// NumPy's var: the mean of |x - mean|^2, over N - ddof.
std::vector<double> variance_of(const Data& x, const Axes& axes, int ddof) {
    auto means = reference(x.values, x.shape, axes, Complex(0),
                           [](Complex a, Complex v, std::int64_t) { return a + v; });
    const double n = double(elements(x.shape)) / double(means.size());
    for (Complex& m : means)
        m /= n;
    std::vector<double> out(means.size(), 0.0);
    visit(x.shape, axes, [&](std::int64_t flat, std::int64_t o, std::int64_t) {
        out[to_size(o)] += std::norm(x.values[to_size(flat)] - means[to_size(o)]);
    });
    for (double& v : out)
        v /= n - ddof;
    return out;
}

// NumPy's sum / prod result dtype.
DType summed(DType dtype) {
    if (kiln::is_bool(dtype) || kiln::is_signed_integer(dtype)) return DType::int64;
    if (kiln::is_unsigned_integer(dtype)) return DType::uint64;
    return dtype;
}

// The relative tolerance of float results accumulated in float32 (or wider) and stored as dtype.
double tolerance_of(DType dtype) {
    switch (dtype) {
    case DType::float16:
    case DType::bfloat16:
        return 1e-2;
    case DType::float32:
    case DType::complex64:
        return 1e-5;
    default:
        return 1e-12;
    }
}

using Reduction = Array (*)(const Array&, const Axes&, const ReduceOptions&);

} // namespace

TEST(ReductionsGpu, ResultDtypesFollowNumPy) {
    KILN_REQUIRE_GPU();
    struct Case {
        const char* what;
        Reduction reduce;
        DType in, out;
    };
    const Case cases[] = {
        {"sum", &kiln::sum, DType::int32, DType::int64},
        {"sum", &kiln::sum, DType::int8, DType::int64},
        {"sum", &kiln::sum, DType::uint8, DType::uint64},
        {"sum", &kiln::sum, DType::uint32, DType::uint64},
        {"sum", &kiln::sum, DType::bool_, DType::int64},
        {"sum", &kiln::sum, DType::float16, DType::float16},
        {"sum", &kiln::sum, DType::bfloat16, DType::bfloat16},
        {"sum", &kiln::sum, DType::float32, DType::float32},
        {"sum", &kiln::sum, DType::complex64, DType::complex64},
        {"prod", &kiln::prod, DType::int16, DType::int64},
        {"prod", &kiln::prod, DType::uint16, DType::uint64},
        {"prod", &kiln::prod, DType::bool_, DType::int64},
        {"prod", &kiln::prod, DType::float64, DType::float64},
        {"max", &kiln::max, DType::int16, DType::int16},
        {"max", &kiln::max, DType::float16, DType::float16},
        {"min", &kiln::min, DType::uint64, DType::uint64},
        {"argmax", &kiln::argmax, DType::float32, DType::int64},
        {"argmax", &kiln::argmax, DType::uint8, DType::int64},
        {"argmin", &kiln::argmin, DType::float16, DType::int64},
        {"mean", &kiln::mean, DType::int32, DType::float64},
        {"mean", &kiln::mean, DType::bool_, DType::float64},
        {"mean", &kiln::mean, DType::float16, DType::float16},
        {"mean", &kiln::mean, DType::float32, DType::float32},
        {"mean", &kiln::mean, DType::complex64, DType::complex64},
        {"var", &kiln::var, DType::complex64, DType::float32},
        {"var", &kiln::var, DType::complex128, DType::float64},
        {"var", &kiln::var, DType::int32, DType::float64},
        {"var", &kiln::var, DType::float32, DType::float32},
        {"std", &kiln::std, DType::complex64, DType::float32},
        {"std", &kiln::std, DType::int8, DType::float64},
        {"norm", &kiln::norm, DType::complex64, DType::float32},
        {"norm", &kiln::norm, DType::int32, DType::float64},
        {"norm", &kiln::norm, DType::float32, DType::float32},
        {"any", &kiln::any, DType::float32, DType::bool_},
        {"all", &kiln::all, DType::int32, DType::bool_},
        {"any", &kiln::any, DType::bool_, DType::bool_},
        {"count_nonzero", &kiln::count_nonzero, DType::float32, DType::int64},
        {"count_nonzero", &kiln::count_nonzero, DType::complex64, DType::int64},
    };
    unsigned seed = 10;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.what) + " of " + kiln::name(c.in));
        const Data x = random_array({6, 7}, c.in, ++seed);
        const Array along = c.reduce(x.array, 1, {});
        EXPECT_EQ(along.dtype(), c.out);
        EXPECT_EQ(along.shape().to_string(), "(6,)");
        const Array total = c.reduce(x.array, Axes::all(), {});
        EXPECT_EQ(total.dtype(), c.out);
        EXPECT_EQ(total.ndim(), 0);
    }
}

TEST(ReductionsGpu, IntegerSumsAccumulateInTheWidenedType) {
    KILN_REQUIRE_GPU();
    EXPECT_EQ(kiln::sum(kiln::full({1000}, 255, DType::uint8)).to_host<std::uint64_t>()[0],
              255000u);
    EXPECT_EQ(kiln::sum(kiln::full({1000}, -100, DType::int8)).to_host<std::int64_t>()[0], -100000);
    EXPECT_EQ(kiln::sum(kiln::full({4}, 2000000000, DType::int32)).to_host<std::int64_t>()[0],
              8000000000);
    EXPECT_EQ(kiln::sum(kiln::full({3001}, true, DType::bool_)).to_host<std::int64_t>()[0], 3001);
    EXPECT_EQ(kiln::count_nonzero(kiln::full({70000}, 7, DType::int16)).to_host<std::int64_t>()[0],
              70000);
}

TEST(ReductionsGpu, SumMaxAndMinMatchTheHostOverAxes) {
    KILN_REQUIRE_GPU();
    const Shape shape{23, 40, 30};
    unsigned seed = 20;
    for (DType dtype : {DType::int32, DType::int64, DType::uint8, DType::int16, DType::float16,
                        DType::bfloat16, DType::float32, DType::float64}) {
        const Data x = random_array(shape, dtype, ++seed);
        for (const Axes& axes : {Axes::all(), Axes(0), Axes(1), Axes(-1), Axes{0, 2}}) {
            SCOPED_TRACE(std::string(kiln::name(dtype)) + ", axis=" + axes.to_string());
            const Array total = kiln::sum(x.array, axes);
            EXPECT_EQ(total.dtype(), summed(dtype));
            EXPECT_EQ(total.shape().to_string(), text(result_shape(shape, axes)));
            if (kiln::is_integer(dtype)) {
                EXPECT_TRUE(exactly(reals(total), sum_of(x, axes)));
            } else {
                EXPECT_TRUE(near(reals(total), sum_of(x, axes), sum_of(x, axes, true),
                                 tolerance_of(dtype)));
            }
            const Array largest = kiln::max(x.array, axes), smallest = kiln::min(x.array, axes);
            EXPECT_EQ(largest.dtype(), dtype);
            EXPECT_EQ(smallest.dtype(), dtype);
            EXPECT_TRUE(exactly(reals(largest), extreme_of(x, axes, true))) << "max";
            EXPECT_TRUE(exactly(reals(smallest), extreme_of(x, axes, false))) << "min";
        }
    }
}

TEST(ReductionsGpu, ProdMatchesTheHostOverAxes) {
    KILN_REQUIRE_GPU();
    const Shape shape{23, 40, 30};
    unsigned seed = 30;
    for (DType dtype : {DType::int32, DType::int64, DType::uint8, DType::float16, DType::float32,
                        DType::float64}) {
        // Products that stay well inside every type's range: factors in {-1, 1, 2} (2 one time
        // in eight; {1, 2} unsigned), or of magnitude in [0.9, 1.1].
        std::mt19937 engine(++seed);
        std::uniform_real_distribution<double> magnitude(0.9, 1.1);
        std::vector<Complex> v(to_size(elements(shape)));
        for (Complex& e : v) {
            const unsigned r = engine() % 8;
            const double sign = kiln::is_unsigned_integer(dtype) || r % 2 ? 1 : -1;
            e = kiln::is_integer(dtype) ? (r == 0 ? 2 : sign) : sign * magnitude(engine);
        }
        const Data x = device_data(v, shape, dtype);
        for (const Axes& axes : {Axes(1), Axes(-1), Axes(0)}) {
            SCOPED_TRACE(std::string(kiln::name(dtype)) + ", axis=" + axes.to_string());
            const Array p = kiln::prod(x.array, axes);
            EXPECT_EQ(p.dtype(), summed(dtype));
            const auto want =
                reference(x.values, shape, axes, 1.0,
                          [](double a, Complex e, std::int64_t) { return a * e.real(); });
            if (kiln::is_integer(dtype)) {
                EXPECT_TRUE(exactly(reals(p), want));
            } else {
                EXPECT_TRUE(near(reals(p), want, magnitudes(want), tolerance_of(dtype)));
            }
        }
    }
}

TEST(ReductionsGpu, KeepdimsAndGivenOutputs) {
    KILN_REQUIRE_GPU();
    const Data x = random_array({6, 40, 30}, DType::float32, 40);
    const ReduceOptions keep{true};

    const Array kept = kiln::sum(x.array, {0, 2}, keep);
    EXPECT_EQ(kept.shape().to_string(), "(1, 40, 1)");
    EXPECT_TRUE(near(reals(kept), sum_of(x, {0, 2}), sum_of(x, {0, 2}, true), 1e-5));
    EXPECT_EQ(kiln::mean(x.array, Axes::all(), keep).shape().to_string(), "(1, 1, 1)");
    const Array arg = kiln::argmax(x.array, 1, keep);
    EXPECT_EQ(arg.shape().to_string(), "(6, 1, 30)");
    EXPECT_TRUE(exactly(reals(arg), arg_extreme_of(x, 1, true)));

    const Array out = poisoned({40}, DType::float32);
    ReduceOptions into;
    into.out = &out;
    const Array written = kiln::sum(x.array, {0, 2}, into);
    EXPECT_EQ(written.data(), out.data());
    EXPECT_TRUE(near(reals(out), sum_of(x, {0, 2}), sum_of(x, {0, 2}, true), 1e-5));

    const Array kept_out = poisoned({6, 1, 30}, DType::int64);
    ReduceOptions kept_into{true};
    kept_into.out = &kept_out;
    kiln::argmin(x.array, 1, kept_into);
    EXPECT_TRUE(exactly(reals(kept_out), arg_extreme_of(x, 1, false)));

    const Array out_max = poisoned({6, 30}, DType::float32);
    into.out = &out_max;
    kiln::max(x.array, 1, into);
    EXPECT_TRUE(exactly(reals(out_max), extreme_of(x, 1, true)));

    const Array wrong_dtype = kiln::empty({40}, DType::float64);
    into.out = &wrong_dtype;
    EXPECT_THROW(kiln::sum(x.array, {0, 2}, into), kiln::ArgumentError);
    const Array wrong_shape = kiln::empty({41}, DType::float32);
    into.out = &wrong_shape;
    EXPECT_THROW(kiln::sum(x.array, {0, 2}, into), kiln::ShapeError);
}

TEST(ReductionsGpu, TheDtypeOptionSetsTheAccumulationAndResultType) {
    KILN_REQUIRE_GPU();
    ReduceOptions as;
    // int8 accumulation wraps, as numpy.sum(x, dtype=numpy.int8) does.
    as.dtype = DType::int8;
    const Array wrapped = kiln::sum(kiln::full({1000}, 100, DType::int8), {}, as);
    EXPECT_EQ(wrapped.dtype(), DType::int8);
    std::int8_t expected = 0;
    kiln::cast_scalar(std::int64_t{100000}, DType::int8, &expected);
    EXPECT_EQ(wrapped.to_host<std::int8_t>()[0], expected);

    const Data halves = random_array({1000}, DType::float16, 50);
    as.dtype = DType::float64;
    const Array precise = kiln::sum(halves.array, {}, as);
    EXPECT_EQ(precise.dtype(), DType::float64);
    EXPECT_TRUE(near(reals(precise), sum_of(halves, {}), sum_of(halves, {}, true), 1e-12));

    const Data ints = random_array({30, 40}, DType::int32, 51);
    as.dtype = DType::float32;
    const Array floats = kiln::sum(ints.array, 1, as);
    EXPECT_EQ(floats.dtype(), DType::float32);
    EXPECT_TRUE(exactly(reals(floats), sum_of(ints, 1))) << "small integer sums are exact";
    const Array mean32 = kiln::mean(ints.array, 0, as);
    EXPECT_EQ(mean32.dtype(), DType::float32);
    auto means = sum_of(ints, 0);
    for (double& m : means)
        m /= 30;
    EXPECT_TRUE(near(reals(mean32), means, sum_of(ints, 0, true), 1e-6));

    const Data factors = device_data({2, -3, 5, 7, -11, 13}, {6}, DType::int32);
    as.dtype = DType::float64;
    const Array p = kiln::prod(factors.array, {}, as);
    EXPECT_EQ(p.dtype(), DType::float64);
    EXPECT_EQ(p.to_host<double>()[0], 2.0 * -3 * 5 * 7 * -11 * 13);
}

TEST(ReductionsGpu, VarAndStdWithDdof) {
    KILN_REQUIRE_GPU();
    const Shape shape{50, 300};
    unsigned seed = 60;
    for (DType dtype :
         {DType::float32, DType::float64, DType::int32, DType::complex64, DType::float16}) {
        const Data x = random_array(shape, dtype, ++seed);
        const DType result = kiln::is_integer(dtype)     ? DType::float64
                             : dtype == DType::complex64 ? DType::float32
                                                         : dtype;
        const double tolerance = dtype == DType::float16                                ? 1e-2
                                 : dtype == DType::float32 || dtype == DType::complex64 ? 1e-4
                                                                                        : 1e-10;
        for (const Axes& axes : {Axes(1), Axes(0), Axes::all()})
            for (int ddof : {0, 1}) {
                SCOPED_TRACE(std::string(kiln::name(dtype)) + ", axis=" + axes.to_string() +
                             ", ddof=" + std::to_string(ddof));
                ReduceOptions options;
                options.ddof = ddof;
                const auto want = variance_of(x, axes, ddof);
                const Array v = kiln::var(x.array, axes, options);
                EXPECT_EQ(v.dtype(), result);
                EXPECT_TRUE(near(reals(v), want, want, tolerance)) << "var";
                std::vector<double> roots;
                roots.reserve(want.size());
                for (double w : want)
                    roots.push_back(std::sqrt(w));
                const Array s = kiln::std(x.array, axes, options);
                EXPECT_EQ(s.dtype(), result);
                EXPECT_TRUE(near(reals(s), roots, roots, tolerance)) << "std";
            }
    }
    // keepdims reaches the result, not the mean taken on the way.
    const Data x = random_array(shape, DType::float32, 69);
    EXPECT_EQ(kiln::var(x.array, 1, {true}).shape().to_string(), "(50, 1)");
    EXPECT_EQ(kiln::std(x.array, 0).shape().to_string(), "(300,)");
}

TEST(ReductionsGpu, MaxAndMinPropagateNaNAndArgmaxFindsTheFirstNaN) {
    KILN_REQUIRE_GPU();
    for (DType dtype : {DType::float32, DType::float64, DType::float16}) {
        SCOPED_TRACE(kiln::name(dtype));
        const Shape shape{8, 100};
        std::mt19937 engine(70);
        std::uniform_real_distribution<double> real(-1, 1);
        std::vector<Complex> v(800);
        for (Complex& e : v)
            e = real(engine);
        for (int at : {2 * 100 + 50, 5 * 100 + 0, 5 * 100 + 70, 7 * 100 + 99, 7 * 100 + 98})
            v[to_size(at)] = kNaN;
        const Data x = device_data(v, shape, dtype);
        for (const Axes& axes : {Axes(1), Axes(0), Axes::all()}) {
            SCOPED_TRACE("axis=" + axes.to_string());
            EXPECT_TRUE(exactly(reals(kiln::max(x.array, axes)), extreme_of(x, axes, true)));
            EXPECT_TRUE(exactly(reals(kiln::min(x.array, axes)), extreme_of(x, axes, false)));
            EXPECT_TRUE(exactly(reals(kiln::argmax(x.array, axes)), arg_extreme_of(x, axes, true)));
            EXPECT_TRUE(
                exactly(reals(kiln::argmin(x.array, axes)), arg_extreme_of(x, axes, false)));
        }
        EXPECT_TRUE(std::isnan(reals(kiln::max(x.array))[0]));
        EXPECT_EQ(kiln::argmax(x.array).to_host<std::int64_t>()[0], 250);
        EXPECT_EQ(kiln::argmin(x.array, 1).to_host<std::int64_t>()[7], 98);
    }
    // A long reduction split across blocks: the first NaN still wins.
    std::vector<float> big(1 << 20);
    std::mt19937 engine(71);
    std::uniform_real_distribution<float> real(-1, 1);
    for (float& e : big)
        e = real(engine);
    big[900000] = std::numeric_limits<float>::quiet_NaN();
    big[700001] = std::numeric_limits<float>::quiet_NaN();
    const Array xa = kiln::from_host(big);
    EXPECT_TRUE(std::isnan(kiln::max(xa).to_host<float>()[0]));
    EXPECT_TRUE(std::isnan(kiln::min(xa).to_host<float>()[0]));
    EXPECT_EQ(kiln::argmax(xa).to_host<std::int64_t>()[0], 700001);
    EXPECT_EQ(kiln::argmin(xa).to_host<std::int64_t>()[0], 700001);
}

TEST(ReductionsGpu, ArgmaxAndArgminBreakTiesWithTheFirstIndex) {
    KILN_REQUIRE_GPU();
    unsigned seed = 80;
    for (DType dtype : {DType::int32, DType::uint8, DType::float16, DType::float32}) {
        const Shape shape{64, 1000};
        std::mt19937 engine(++seed);
        std::vector<Complex> v(to_size(elements(shape)));
        for (Complex& e : v)
            e = static_cast<double>(engine() % 4); // ties everywhere
        const Data x = device_data(v, shape, dtype);
        for (const Axes& axes : {Axes(0), Axes(1), Axes(-1), Axes::all()}) {
            SCOPED_TRACE(std::string(kiln::name(dtype)) + ", axis=" + axes.to_string());
            const Array y = poisoned(result_shape(shape, axes), DType::int64);
            ReduceOptions into;
            into.out = &y;
            kiln::argmax(x.array, axes, into);
            EXPECT_TRUE(exactly(reals(y), arg_extreme_of(x, axes, true))) << "argmax";
            kiln::argmin(x.array, axes, into);
            EXPECT_TRUE(exactly(reals(y), arg_extreme_of(x, axes, false))) << "argmin";
        }
    }
    // Ties far apart in a reduction split across blocks.
    std::vector<float> big(1 << 22);
    std::mt19937 engine(89);
    std::uniform_real_distribution<float> unit(0, 1);
    for (float& e : big)
        e = unit(engine);
    big[3500000] = big[3000000] = 5;
    big[3999999] = big[2000001] = -1;
    const Array xa = kiln::from_host(big);
    EXPECT_EQ(kiln::argmax(xa).to_host<std::int64_t>()[0], 3000000);
    EXPECT_EQ(kiln::argmin(xa).to_host<std::int64_t>()[0], 2000001);
    const Array rows = kiln::from_host(big, {4, 1 << 20});
    const auto row_max = kiln::argmax(rows, 1).to_host<std::int64_t>();
    EXPECT_EQ(row_max[2], 3000000 - 2 * (1 << 20));
    EXPECT_EQ(row_max[3], 3500000 - 3 * (1 << 20));
}

TEST(ReductionsGpu, ArgmaxOverSeveralAxesAndBadAxesAreAxisErrors) {
    KILN_REQUIRE_GPU();
    const Data x = random_array({4, 5, 6}, DType::float32, 90);
    EXPECT_THROW(kiln::argmax(x.array, {0, 1}), kiln::AxisError);
    EXPECT_THROW(kiln::argmin(x.array, {1, 2}), kiln::AxisError);
    EXPECT_THROW(kiln::argmax(x.array, 3), kiln::AxisError);
    EXPECT_THROW(kiln::sum(x.array, {0, 0}), kiln::AxisError);
    EXPECT_THROW(kiln::max(x.array, -4), kiln::AxisError);
    EXPECT_THROW(kiln::mean(x.array, {0, -3}), kiln::AxisError);
}

TEST(ReductionsGpu, EmptyReductions) {
    KILN_REQUIRE_GPU();
    const Array none = kiln::empty({0}, DType::float32);
    for (Reduction r :
         std::initializer_list<Reduction>{&kiln::max, &kiln::min, &kiln::argmax, &kiln::argmin})
        EXPECT_THROW(r(none, {}, {}), kiln::ArgumentError);
    EXPECT_EQ(kiln::sum(none).to_host<float>()[0], 0.f);
    EXPECT_EQ(kiln::prod(none).to_host<float>()[0], 1.f);
    EXPECT_TRUE(std::isnan(kiln::mean(none).to_host<float>()[0]));
    EXPECT_EQ(reals(kiln::any(none))[0], 0.0);
    EXPECT_EQ(reals(kiln::all(none))[0], 1.0);
    EXPECT_EQ(kiln::count_nonzero(none).to_host<std::int64_t>()[0], 0);
    const Array no_ints = kiln::empty({0}, DType::int32);
    EXPECT_EQ(kiln::sum(no_ints).to_host<std::int64_t>()[0], 0);
    EXPECT_EQ(kiln::prod(no_ints).to_host<std::int64_t>()[0], 1);

    // (0, 3): reducing the empty axis gives 3 results (or an error without identity); reducing
    // the other gives no results and no error.
    const Array rows = kiln::empty({0, 3}, DType::float32);
    EXPECT_THROW(kiln::max(rows, 0), kiln::ArgumentError);
    EXPECT_THROW(kiln::argmax(rows, 0), kiln::ArgumentError);
    EXPECT_TRUE(exactly(reals(kiln::sum(rows, 0)), {0, 0, 0}));
    EXPECT_TRUE(exactly(reals(kiln::prod(rows, 0)), {1, 1, 1}));
    EXPECT_TRUE(exactly(reals(kiln::all(rows, 0)), {1, 1, 1}));
    for (Reduction r :
         std::initializer_list<Reduction>{&kiln::max, &kiln::argmax, &kiln::sum, &kiln::mean}) {
        Array y;
        ASSERT_NO_THROW(y = r(rows, 1, {}));
        EXPECT_EQ(y.shape().to_string(), "(0,)");
    }
}

TEST(ReductionsGpu, AnyAllAndCountNonzeroOnBoolAndFloatArrays) {
    KILN_REQUIRE_GPU();
    const Shape shape{40, 50};
    std::mt19937 engine(100);
    std::uniform_real_distribution<double> unit(0, 1);
    // Row r is nonzero with probability r / 39: the first row is all zero, the last all nonzero.
    std::vector<Complex> flags, floats;
    const double nonzero[] = {1.5, kNaN, -2, 0.25};
    for (std::int64_t r = 0; r < shape[0]; ++r)
        for (std::int64_t c = 0; c < shape[1]; ++c) {
            const bool on = unit(engine) < double(r) / double(shape[0] - 1);
            flags.emplace_back(on);
            floats.emplace_back(on ? nonzero[engine() % 4] : (engine() % 2 ? 0.0 : -0.0));
        }
    for (const Data& x :
         {device_data(flags, shape, DType::bool_), device_data(floats, shape, DType::float32),
          device_data(floats, shape, DType::int32)}) {
        for (const Axes& axes : {Axes(1), Axes(0), Axes::all(), Axes{0, 1}}) {
            SCOPED_TRACE(std::string(kiln::name(x.array.dtype())) + ", axis=" + axes.to_string());
            // count_nonzero (counting), all (every) or any.
            auto expected = [&](bool counting, bool every) {
                return reference(x.values, shape, axes, counting ? 0.0 : double(every),
                                 [&](double a, Complex v, std::int64_t) {
                                     const bool on = v != 0.0;
                                     return counting ? a + on
                                                     : double(every ? a != 0 && on : a != 0 || on);
                                 });
            };
            const Array any = kiln::any(x.array, axes), all = kiln::all(x.array, axes);
            EXPECT_EQ(any.dtype(), DType::bool_);
            EXPECT_TRUE(exactly(reals(any), expected(false, false))) << "any";
            EXPECT_TRUE(exactly(reals(all), expected(false, true))) << "all";
            const Array n = kiln::count_nonzero(x.array, axes);
            EXPECT_EQ(n.dtype(), DType::int64);
            EXPECT_TRUE(exactly(reals(n), expected(true, false))) << "count_nonzero";
        }
    }
    // Complex values count as nonzero when either part is.
    const Data z = device_data({{0, 0}, {0, 1}, {2, 0}, {0, 0}, {0, -0.0}}, {5}, DType::complex64);
    EXPECT_EQ(kiln::count_nonzero(z.array).to_host<std::int64_t>()[0], 2);
    EXPECT_EQ(reals(kiln::any(z.array))[0], 1.0);
    EXPECT_EQ(reals(kiln::all(z.array))[0], 0.0);
}

TEST(ReductionsGpu, NormIsTheSquareRootOfTheSumOfSquares) {
    KILN_REQUIRE_GPU();
    struct Case {
        DType dtype;
        Shape shape;
        Axes axes;
        bool keepdims;
    };
    const Case cases[] = {
        {DType::float32, {300, 400}, Axes::all(), false},
        {DType::float32, {300, 400}, Axes(1), false},
        {DType::complex64, {100, 300}, Axes(1), false},
        {DType::int32, {50, 60}, Axes::all(), false},
        {DType::float64, {50, 60}, Axes(0), true},
        {DType::float16, {50, 60}, Axes(1), false},
    };
    unsigned seed = 110;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(kiln::name(c.dtype)) + ", axis=" + c.axes.to_string());
        const Data x = random_array(c.shape, c.dtype, ++seed);
        std::vector<double> want;
        for (double s :
             reference(x.values, c.shape, c.axes, 0.0,
                       [](double a, Complex v, std::int64_t) { return a + std::norm(v); }))
            want.push_back(std::sqrt(s));
        const Array n = kiln::norm(x.array, c.axes, {c.keepdims});
        EXPECT_EQ(n.shape().to_string(), text(result_shape(c.shape, c.axes, c.keepdims)));
        EXPECT_EQ(n.dtype(), kiln::is_integer(c.dtype)     ? DType::float64
                             : c.dtype == DType::complex64 ? DType::float32
                                                           : c.dtype);
        EXPECT_TRUE(near(reals(n), want, want, tolerance_of(c.dtype)));
    }
}

TEST(ReductionsGpu, MeanOfALargeFloat32ArrayIsAccurateAndRepeatable) {
    KILN_REQUIRE_GPU();
    std::vector<float> x(1 << 24);
    std::mt19937 engine(120);
    std::uniform_real_distribution<float> unit(0, 1);
    for (float& e : x)
        e = unit(engine);
    kiln::Stream stream;
    const Array xa = kiln::from_host(x, stream);
    ReduceOptions on_stream;
    on_stream.stream = stream;
    double total = 0;
    for (float e : x)
        total += e;
    const float first = kiln::mean(xa, {}, on_stream).to_host<float>(stream)[0];
    EXPECT_NEAR(first, total / double(x.size()), 1e-5 * total / double(x.size()));
    for (int run = 0; run < 3; ++run) {
        const float again = kiln::mean(xa, {}, on_stream).to_host<float>(stream)[0];
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): bitwise identity is the point
        EXPECT_EQ(std::memcmp(&again, &first, sizeof first), 0) << "run " << run;
    }
    // Over rows and over columns of the same elements.
    for (const auto& [shape, axes] :
         {std::pair<Shape, Axes>{{16, 1 << 20}, Axes(1)}, {{1 << 20, 16}, Axes(0)}}) {
        SCOPED_TRACE("shape " + text(shape) + ", axis=" + axes.to_string());
        const Array view = xa.reshape(kiln::Dims(shape));
        std::vector<double> want(to_size(elements(result_shape(shape, axes))), 0.0);
        const double per_output = double(elements(shape)) / double(want.size());
        visit(shape, axes, [&](std::int64_t flat, std::int64_t o, std::int64_t) {
            want[to_size(o)] += x[to_size(flat)] / per_output;
        });
        const Array m = kiln::mean(view, axes, on_stream);
        EXPECT_TRUE(near(doubles(m.to_host<float>(stream)), want, want, 1e-5));
    }
}

TEST(ReductionsGpu, ExtremeIntegersMeetTheIdentities) {
    KILN_REQUIRE_GPU();
    const std::int64_t n = 1 << 20;
    EXPECT_EQ(kiln::max(kiln::full({n}, INT64_MIN, DType::int64)).to_host<std::int64_t>()[0],
              INT64_MIN);
    EXPECT_EQ(kiln::min(kiln::full({n}, INT64_MAX, DType::int64)).to_host<std::int64_t>()[0],
              INT64_MAX);
    EXPECT_EQ(kiln::min(kiln::full({n}, UINT64_MAX, DType::uint64)).to_host<std::uint64_t>()[0],
              UINT64_MAX);
    EXPECT_EQ(kiln::max(kiln::zeros({1000}, DType::uint8)).to_host<std::uint8_t>()[0], 0);
    EXPECT_EQ(kiln::argmax(kiln::full({1000}, -128, DType::int8)).to_host<std::int64_t>()[0], 0);
    EXPECT_EQ(kiln::argmin(kiln::full({1000}, 65535, DType::uint16)).to_host<std::int64_t>()[0], 0);
    EXPECT_EQ(kiln::argmax(kiln::full({n}, INT64_MIN, DType::int64)).to_host<std::int64_t>()[0], 0);
}

TEST(ReductionsGpu, ViewsReduceAsTheirElements) {
    KILN_REQUIRE_GPU();
    const Data x = random_array({300, 200}, DType::float64, 130);
    // x.T: element (c, r) is x[r][c]; reducing its axis 0 reduces x over axis 1.
    const Array t = x.array.transpose();
    EXPECT_TRUE(near(reals(kiln::sum(t, 0)), sum_of(x, 1), sum_of(x, 1, true), 1e-12));
    EXPECT_TRUE(exactly(reals(kiln::argmax(t, 1)), arg_extreme_of(x, 0, true)));
    // Every other column.
    const Array half = x.array.slice({kiln::Slice::all(), kiln::Slice::range(0, 200, 2)});
    std::vector<Complex> picked;
    for (std::size_t i = 0; i < x.values.size(); i += 2)
        picked.push_back(x.values[i]);
    const Data expected = device_data(picked, {300, 100}, DType::float64);
    EXPECT_TRUE(exactly(reals(kiln::max(half, 1)), extreme_of(expected, 1, true)));
    EXPECT_TRUE(near(reals(kiln::mean(half)), {sum_of(expected, {})[0] / 30000},
                     {sum_of(expected, {}, true)[0] / 30000}, 1e-12));
}

namespace {

bool has_nan(Complex v) {
    return std::isnan(v.real()) || std::isnan(v.imag());
}

// NumPy's order of complex values without NaN: real parts first, then imaginary parts.
bool lex_less(Complex a, Complex b) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}

// NumPy's max / min and argmax / argmin of complex values, as its loops run: the first element
// with a NaN in either part, else the first extreme in lexicographic order.
std::vector<std::pair<Complex, std::int64_t>> complex_extremes_of(const Data& x, const Axes& axes,
                                                                  bool largest) {
    using Best = std::pair<Complex, std::int64_t>;
    return reference(x.values, x.shape, axes, Best{0, -1}, [&](Best a, Complex v, std::int64_t j) {
        if (a.second < 0) return Best{v, j};
        if (has_nan(a.first)) return a;
        if (has_nan(v)) return Best{v, j};
        return (largest ? lex_less(a.first, v) : lex_less(v, a.first)) ? Best{v, j} : a;
    });
}
std::vector<Complex> complex_extreme_of(const Data& x, const Axes& axes, bool largest) {
    std::vector<Complex> out;
    for (const auto& best : complex_extremes_of(x, axes, largest))
        out.push_back(best.first);
    return out;
}
std::vector<double> complex_arg_extreme_of(const Data& x, const Axes& axes, bool largest) {
    std::vector<double> out;
    for (const auto& best : complex_extremes_of(x, axes, largest))
        out.push_back(static_cast<double>(best.second));
    return out;
}

// The same elements: each part NaN in both, or equal with the same sign (so that 0 and -0, which
// compare equal, still tell two elements apart).
bool same_part(double got, double want) {
    if (std::isnan(want)) return std::isnan(got);
    return got == want && std::signbit(got) == std::signbit(want);
}
::testing::AssertionResult same_elements(const std::vector<Complex>& got,
                                         const std::vector<Complex>& want) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!same_part(got[i].real(), want[i].real()) || !same_part(got[i].imag(), want[i].imag()))
            return ::testing::AssertionFailure()
                   << "output " << i << " is " << got[i] << ", expected " << want[i];
    return ::testing::AssertionSuccess();
}

// Complex elements whose real parts tie often: both parts from {-1, -0.5, -0, 0, 0.5, 1} when
// @p coarse (whole elements tie too), else real parts from that set and uniform imaginary parts.
// NaN goes in the real part, the imaginary part or both, at @p nans.
Data complex_array(const Shape& shape, DType dtype, unsigned seed, bool coarse,
                   const std::vector<std::int64_t>& nans) {
    std::mt19937 engine(seed);
    const double steps[] = {-1, -0.5, -0.0, 0.0, 0.5, 1};
    std::uniform_real_distribution<double> real(-1, 1);
    std::vector<Complex> v(to_size(elements(shape)));
    for (Complex& e : v) {
        const double re = steps[engine() % 6];
        e = Complex(re, coarse ? steps[engine() % 6] : real(engine));
    }
    for (std::size_t k = 0; k < nans.size(); ++k) {
        Complex& e = v[to_size(nans[k])];
        e = k % 3 == 0   ? Complex(kNaN, e.imag())
            : k % 3 == 1 ? Complex(e.real(), kNaN)
                         : Complex(kNaN, kNaN);
    }
    return device_data(v, shape, dtype);
}

} // namespace

TEST(ReductionsGpu, ComplexMaxMinArgmaxArgminFollowNumPysOrder) {
    KILN_REQUIRE_GPU();
    const Shape shape{23, 40, 30};
    unsigned seed = 140;
    for (DType dtype : {DType::complex64, DType::complex128})
        for (bool coarse : {false, true})
            for (bool with_nan : {false, true}) {
                // NaN parts in a few rows, columns and planes: some outputs see none, some one,
                // some several of different kinds.
                const std::vector<std::int64_t> nans =
                    with_nan
                        ? std::vector<std::int64_t>{5 * 1200 + 7 * 30 + 3,    5 * 1200 + 30 + 3,
                                                    9 * 1200 + 7 * 30 + 29,   9 * 1200 + 7,
                                                    22 * 1200 + 39 * 30 + 29, 3 * 1200 + 3}
                        : std::vector<std::int64_t>{};
                const Data x = complex_array(shape, dtype, ++seed, coarse, nans);
                for (const Axes& axes : {Axes::all(), Axes(0), Axes(1), Axes(-1), Axes{0, 2}}) {
                    SCOPED_TRACE(std::string(kiln::name(dtype)) + (coarse ? ", coarse" : "") +
                                 (with_nan ? ", NaN" : "") + ", axis=" + axes.to_string());
                    const Array largest = kiln::max(x.array, axes);
                    const Array smallest = kiln::min(x.array, axes);
                    EXPECT_EQ(largest.dtype(), dtype);
                    EXPECT_EQ(largest.shape().to_string(), text(result_shape(shape, axes)));
                    EXPECT_TRUE(
                        same_elements(values_of(largest), complex_extreme_of(x, axes, true)))
                        << "max";
                    EXPECT_TRUE(
                        same_elements(values_of(smallest), complex_extreme_of(x, axes, false)))
                        << "min";
                    if (axes.size() > 1) continue; // argmax takes one axis or all of them
                    const Array first_max = kiln::argmax(x.array, axes);
                    EXPECT_EQ(first_max.dtype(), DType::int64);
                    EXPECT_TRUE(exactly(reals(first_max), complex_arg_extreme_of(x, axes, true)))
                        << "argmax";
                    EXPECT_TRUE(exactly(reals(kiln::argmin(x.array, axes)),
                                        complex_arg_extreme_of(x, axes, false)))
                        << "argmin";
                }
            }
}

TEST(ReductionsGpu, ComplexExtremesKeepdimsGivenOutputsAndEmptyReductions) {
    KILN_REQUIRE_GPU();
    const Shape shape{6, 40, 30};
    const Data x = complex_array(shape, DType::complex64, 150, true, {2 * 1200 + 5 * 30 + 4});
    const Array out = poisoned({6, 1, 30}, DType::complex64);
    ReduceOptions into{true};
    into.out = &out;
    EXPECT_EQ(kiln::max(x.array, 1, into).data(), out.data());
    EXPECT_TRUE(same_elements(values_of(out), complex_extreme_of(x, 1, true)));
    const Array index = poisoned({6, 1, 30}, DType::int64);
    into.out = &index;
    kiln::argmin(x.array, 1, into);
    EXPECT_TRUE(exactly(reals(index), complex_arg_extreme_of(x, 1, false)));

    const Array none = kiln::empty({0, 4}, DType::complex128);
    for (Reduction r :
         std::initializer_list<Reduction>{&kiln::max, &kiln::min, &kiln::argmax, &kiln::argmin})
        EXPECT_THROW(r(none, 0, {}), kiln::ArgumentError);
}

TEST(ReductionsGpu, ComplexExtremesOfALongReductionSplitAcrossBlocks) {
    KILN_REQUIRE_GPU();
    std::vector<std::complex<float>> big(1 << 20);
    std::mt19937 engine(160);
    std::uniform_real_distribution<float> unit(-1, 1);
    for (auto& e : big)
        e = {unit(engine), unit(engine)};
    // Ties on the real part far apart: the larger imaginary part wins, then the first index.
    big[900000] = {5, 1};
    big[300001] = {5, 0.5f};
    big[600000] = {5, 1};
    big[100000] = {-5, -1};
    big[999999] = {-5, -1};
    big[400000] = {-5, -0.5f};
    Array xa = kiln::from_host(big);
    EXPECT_EQ(kiln::max(xa).to_host<std::complex<float>>()[0], std::complex<float>(5, 1));
    EXPECT_EQ(kiln::argmax(xa).to_host<std::int64_t>()[0], 600000);
    EXPECT_EQ(kiln::min(xa).to_host<std::complex<float>>()[0], std::complex<float>(-5, -1));
    EXPECT_EQ(kiln::argmin(xa).to_host<std::int64_t>()[0], 100000);
    // The first element with a NaN part wins, whichever part it is in.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    big[800000] = {nan, 0.25f};
    big[700001] = {0.75f, nan};
    xa = kiln::from_host(big);
    for (const Array& extreme : {kiln::max(xa), kiln::min(xa)}) {
        const std::complex<float> got = extreme.to_host<std::complex<float>>()[0];
        EXPECT_EQ(got.real(), 0.75f);
        EXPECT_TRUE(std::isnan(got.imag()));
    }
    EXPECT_EQ(kiln::argmax(xa).to_host<std::int64_t>()[0], 700001);
    EXPECT_EQ(kiln::argmin(xa).to_host<std::int64_t>()[0], 700001);
    const Array rows = kiln::from_host(big, {4, 1 << 18});
    const auto row_max = kiln::argmax(rows, 1).to_host<std::int64_t>();
    EXPECT_EQ(row_max[2], 700001 - 2 * (1 << 18));
    EXPECT_EQ(row_max[3], 800000 - 3 * (1 << 18));
}
