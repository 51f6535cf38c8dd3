// NumPy 2's scalar rules end to end on the GPU: weak scalars keep the array's type and must fit
// it, strong ones promote, comparisons with out-of-range integers are exact, and the same rules
// hold for ElementwiseKernel parameters, fused functions and fill. Values are checked on the host.

#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using kiln::Array;
using kiln::DType;
using kiln::OverflowError;

namespace {

std::vector<std::int8_t> ramp_i8() {
    std::vector<std::int8_t> v;
    for (int i = -100; i < 28; ++i)
        v.push_back(static_cast<std::int8_t>(i));
    return v;
}

std::vector<bool> as_bools(const Array& a) {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(a.size()));
    a.copy_to_host_bytes(bytes.data());
    return {bytes.begin(), bytes.end()};
}

} // namespace

TEST(ScalarRulesGpu, WeakScalarsKeepTheArrayTypeAndMustFitIt) {
    KILN_REQUIRE_GPU();
    const std::vector<std::int8_t> host = ramp_i8();
    Array x = kiln::from_host(host);
    Array sum = kiln::add(x, 100);
    ASSERT_EQ(sum.dtype(), DType::int8);
    const auto got = sum.to_host<std::int8_t>();
    for (std::size_t i = 0; i < host.size(); ++i)
        ASSERT_EQ(got[i], static_cast<std::int8_t>(host[i] + 100)) << "int8 arithmetic wraps";
    EXPECT_THROW(kiln::add(x, 32767), OverflowError);
    EXPECT_THROW(kiln::add(x, 300), OverflowError);
    EXPECT_THROW(kiln::subtract(kiln::zeros({4}, DType::uint8), -1), OverflowError);
    Array halves = kiln::add(kiln::arange(0, 8, 1, DType::int32), 1.5);
    EXPECT_EQ(halves.dtype(), DType::float64);
    EXPECT_EQ(halves.to_host<double>()[3], 4.5);
}

TEST(ScalarRulesGpu, StrongScalarsPromoteAsNumPyScalars) {
    KILN_REQUIRE_GPU();
    const std::vector<std::uint64_t> big{0, 1, std::uint64_t{1} << 40};
    Array u = kiln::from_host(big);
    Array mixed = kiln::add(u, std::int8_t{-3});
    ASSERT_EQ(mixed.dtype(), DType::float64);
    EXPECT_EQ(mixed.to_host<double>(), (std::vector<double>{-3.0, -2.0, 1099511627773.0}));
    Array x = kiln::from_host(ramp_i8());
    Array wide = kiln::add(x, std::int16_t{300});
    ASSERT_EQ(wide.dtype(), DType::int16);
    EXPECT_EQ(wide.to_host<std::int16_t>()[0], 200);
    Array typed = kiln::add(x, kiln::Scalar(5, DType::int8));
    EXPECT_EQ(typed.dtype(), DType::int8);
    EXPECT_EQ(kiln::add(kiln::zeros({4}, DType::float16), 1.0f).dtype(), DType::float32);
    EXPECT_EQ(kiln::add(kiln::zeros({4}, DType::float16), 1.0).dtype(), DType::float16);
}

TEST(ScalarRulesGpu, ComparisonsWithOutOfRangeIntegersAreExact) {
    KILN_REQUIRE_GPU();
    Array u8 = kiln::arange(0, 256, 1, DType::uint8);
    for (bool b : as_bools(kiln::less(u8, -1)))
        ASSERT_FALSE(b);
    for (bool b : as_bools(kiln::greater(u8, -1)))
        ASSERT_TRUE(b);
    for (bool b : as_bools(kiln::not_equal(u8, 256)))
        ASSERT_TRUE(b);
    Array u64 = kiln::from_host(std::vector<std::uint64_t>{0, ~std::uint64_t{0}});
    for (bool b : as_bools(kiln::equal(u64, -1)))
        ASSERT_FALSE(b) << "uint64 max is not -1";
    const std::vector<bool> fused =
        as_bools(kiln::fuse("below_minus_one", [](auto x) { return x < -1; })(u8));
    for (bool b : fused)
        ASSERT_FALSE(b);
}

TEST(ScalarRulesGpu, KernelParametersFusionAndFillCheckTheValue) {
    KILN_REQUIRE_GPU();
    kiln::ElementwiseKernel put("T x, T s", "T z", "z = x + s", "put_scalar_rules");
    Array zeros = kiln::zeros({4}, DType::int8);
    EXPECT_EQ(Array(put(zeros, -100)).to_host<std::int8_t>()[2], -100);
    EXPECT_THROW(put(zeros, 300), OverflowError);

    auto shift = kiln::fuse("shift_rules", [](auto x, auto s) { return x + s; });
    EXPECT_EQ(Array(shift(zeros, 7)).to_host<std::int8_t>()[1], 7);
    EXPECT_THROW(shift(zeros, 300), OverflowError);

    Array bytes = kiln::zeros({4}, DType::uint8);
    kiln::fill(bytes, 255);
    EXPECT_EQ(bytes.to_host<std::uint8_t>()[3], 255);
    EXPECT_THROW(kiln::fill(bytes, 256), OverflowError);
    EXPECT_EQ(bytes.to_host<std::uint8_t>()[3], 255) << "nothing was written";
}
