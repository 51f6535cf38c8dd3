// ReductionKernel and the ready reductions check every argument before any device work, as
// ElementwiseKernel does: a bad call is the same error with and without a GPU. This suite runs
// with Kiln pointed at a driver library that does not exist (CMakeLists.txt), so it has no device
// on any machine: each bad call must still give its own error, and a good call only then a
// NoDeviceError. Arrays are described with Array::wrap over made-up addresses.

#include "kiln/kiln.hpp"
#include "kiln/reduction_kernel.hpp"
#include "kiln/reductions.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

using kiln::Array;
using kiln::Axes;
using kiln::DType;
using kiln::ReduceCall;
using kiln::ReductionKernel;

namespace {

Array fake(const kiln::Dims& shape, DType dtype = DType::float32) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

// The message of the error @p f throws, if it is an E (and not a NoDeviceError).
template <class E> std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const kiln::NoDeviceError& e) {
        return std::string("reached the device first: ") + e.what();
    } catch (const E& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

const ReductionKernel& l2norm() {
    static const ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    return k;
}

} // namespace

TEST(ReductionCallChecks, ThereIsNoDeviceInThisSuite) {
    EXPECT_FALSE(kiln::Device::available());
}

TEST(ReductionCallChecks, AGoodCallReachesTheDeviceOnlyAfterItsChecks) {
    EXPECT_THROW(l2norm()(ReduceCall{1}, fake({4, 5})), kiln::NoDeviceError);
    EXPECT_THROW(l2norm()(ReduceCall{1}, fake({4, 5}), fake({4})), kiln::NoDeviceError);
    EXPECT_THROW(kiln::max(fake({4, 5}, DType::complex64), 1), kiln::NoDeviceError);
}

TEST(ReductionCallChecks, AxesOutOfRangeOrRepeatedAreAxisErrors) {
    const Array x = fake({4, 5, 6});
    const std::string out_of_range = error_of<kiln::AxisError>([&] { l2norm()(ReduceCall{3}, x); });
    EXPECT_TRUE(has(out_of_range, "axis 3 is out of bounds for an array of dimension 3"))
        << out_of_range;
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] { l2norm()(ReduceCall{-4}, x); }), "axis -4"));
    const std::string repeated = error_of<kiln::AxisError>([&] {
        l2norm()(ReduceCall{{0, -3}}, x);
    });
    EXPECT_TRUE(has(repeated, "repeated in axis=(0, -3)")) << repeated;
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] { kiln::sum(x, {1, 1}); }), "repeated"));
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] { kiln::mean(x, 3); }), "out of bounds"));
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] { kiln::argmax(x, {0, 1}); }), "one axis"));
}

TEST(ReductionCallChecks, ShapesThatDoNotBroadcastAreShapeErrors) {
    const ReductionKernel weighted("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "weighted");
    const std::string message = error_of<kiln::ShapeError>([&] {
        weighted(ReduceCall{1}, fake({3, 4}), fake({5}));
    });
    EXPECT_TRUE(has(message, "(3, 4)") && has(message, "(5,)")) << message;
}

TEST(ReductionCallChecks, AnEmptyReductionWithoutIdentityIsAnArgumentError) {
    const ReductionKernel largest("T x", "T y", "x", "max(a, b)", "y = a", "", "largest");
    const Array x = fake({0, 5});
    const std::string message = error_of<kiln::ArgumentError>([&] { largest(ReduceCall{0}, x); });
    EXPECT_TRUE(has(message, "no identity")) << message;
    EXPECT_TRUE(has(message, "(0, 5)")) << message;
    using Reduction = Array (*)(const Array&, const Axes&, const kiln::ReduceOptions&);
    for (Reduction reduce :
         std::initializer_list<Reduction>{&kiln::max, &kiln::min, &kiln::argmax, &kiln::argmin})
        EXPECT_TRUE(has(error_of<kiln::ArgumentError>([&] { reduce(x, 0, {}); }), "no identity"));
    EXPECT_TRUE(
        has(error_of<kiln::ArgumentError>([&] { kiln::max(fake({0}, DType::complex128), {}, {}); }),
            "no identity"));
}

TEST(ReductionCallChecks, DtypeMismatchesAreArgumentErrors) {
    const ReductionKernel weighted("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "weighted");
    const std::string placeholders = error_of<kiln::ArgumentError>([&] {
        weighted(ReduceCall{1}, fake({3, 4}), fake({4}, DType::float64));
    });
    EXPECT_TRUE(has(placeholders, "float64")) << placeholders;
    const ReductionKernel fixed("float32 x", "float32 y", "x", "a + b", "y = a", "0", "fixed");
    EXPECT_TRUE(
        has(error_of<kiln::ArgumentError>([&] { fixed(fake({8}, DType::int32)); }), "int32"));
    const std::string output = error_of<kiln::ArgumentError>([&] {
        l2norm()(ReduceCall{1}, fake({3, 4}), fake({3}, DType::float64));
    });
    EXPECT_TRUE(has(output, "float64")) << output;
    const Array wrong = fake({4}, DType::float64);
    kiln::ReduceOptions into;
    into.out = &wrong;
    EXPECT_TRUE(has(error_of<kiln::ArgumentError>([&] {
                        kiln::sum(fake({3, 4}), 0, into);
                    }),
                    "float64"));
}

TEST(ReductionCallChecks, AnOutputOfTheWrongShapeIsAShapeError) {
    const std::string message = error_of<kiln::ShapeError>([&] {
        l2norm()(ReduceCall{1}, fake({3, 4}), fake({4}));
    });
    EXPECT_TRUE(has(message, "(3,)")) << message;
    EXPECT_TRUE(has(error_of<kiln::ShapeError>([&] {
                        l2norm()(ReduceCall{1, true}, fake({3, 4}), fake({3}));
                    }),
                    "(3, 1)"));
    const Array wrong = fake({5}, DType::int64);
    kiln::ReduceOptions into;
    into.out = &wrong;
    EXPECT_THROW(kiln::argmax(fake({3, 4}), 1, into), kiln::ShapeError);
}

TEST(ReductionCallChecks, TheWrongNumberOfArgumentsIsAnArgumentError) {
    EXPECT_TRUE(has(error_of<kiln::ArgumentError>([&] { l2norm()(); }), "l2norm"));
    EXPECT_THROW(l2norm()(fake({4}), fake({1}), fake({1})), kiln::ArgumentError);
}

TEST(ReductionCallChecks, StridesAndOverlappingOutputsAreCheckedBeforeOutputsAreAllocated) {
    // Strides of 6 bytes over 4-byte elements: not whole elements.
    const Array odd = Array::wrap(CUdeviceptr{1} << 40, {10}, DType::float32, {6});
    EXPECT_TRUE(has(error_of<kiln::ArgumentError>([&] { l2norm()(odd); }), "itemsize"));
    const Array overlapping = fake({1}).broadcast_to({4});
    EXPECT_TRUE(has(error_of<kiln::ArgumentError>([&] {
                        l2norm()(ReduceCall{1}, fake({4, 8}), overlapping);
                    }),
                    "broadcast view"));
}
