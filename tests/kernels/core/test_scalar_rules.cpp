// NumPy 2's scalar rules without a GPU: which C++ types are weak, which values fit which types,
// the result dtypes of the ready operations, and the OverflowError every front end raises before
// any device work. Arrays are described with Array::wrap over made-up addresses: nothing runs.

#include "elementwise/op_rules.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::OverflowError;
using kiln::Scalar;
using kiln::detail::ElementwiseOp;
using kiln::detail::TypedOperand;

namespace {

Array fake(const kiln::Dims& shape, DType dtype) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28;
    return Array::wrap(next, shape, dtype);
}

std::string overflow_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const OverflowError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("another error: ") + e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

DType add_type(TypedOperand a, TypedOperand b) {
    return kiln::detail::binary_types(ElementwiseOp::add, a, b, "add").result;
}

} // namespace

TEST(ScalarRules, PythonScalarStandInsAreWeakAndOtherTypesStrong) {
    static_assert(kiln::is_weak_scalar_v<bool>);
    static_assert(kiln::is_weak_scalar_v<int>);
    static_assert(kiln::is_weak_scalar_v<long>);
    static_assert(kiln::is_weak_scalar_v<long long>);
    static_assert(kiln::is_weak_scalar_v<double>);
    static_assert(kiln::is_weak_scalar_v<std::complex<double>>);
    // The fixed-width names of int and long are the same types on Linux.
    static_assert(kiln::is_weak_scalar_v<std::int32_t>);
    static_assert(kiln::is_weak_scalar_v<std::int64_t>);
    static_assert(!kiln::is_weak_scalar_v<std::int8_t>);
    static_assert(!kiln::is_weak_scalar_v<std::int16_t>);
    static_assert(!kiln::is_weak_scalar_v<std::uint8_t>);
    static_assert(!kiln::is_weak_scalar_v<std::uint16_t>);
    static_assert(!kiln::is_weak_scalar_v<std::uint32_t>);
    static_assert(!kiln::is_weak_scalar_v<std::uint64_t>);
    static_assert(!kiln::is_weak_scalar_v<float>);
    static_assert(!kiln::is_weak_scalar_v<std::complex<float>>);
    EXPECT_TRUE(Scalar(300).is_weak());
    EXPECT_TRUE(Scalar(1.5).is_weak());
    EXPECT_TRUE(Scalar(true).is_weak());
    EXPECT_FALSE(Scalar(std::int8_t{3}).is_weak());
    EXPECT_FALSE(Scalar(1.5f).is_weak());
    EXPECT_FALSE(Scalar(kiln::to_float16(1.0)).is_weak());
    const Scalar typed(5, DType::int8);
    EXPECT_FALSE(typed.is_weak()) << "a Scalar made with a dtype is strong";
    EXPECT_EQ(typed.dtype(), DType::int8);
    EXPECT_EQ(static_cast<std::int8_t>(typed.bytes()[0]), 5);
}

TEST(ScalarRules, IntegersMustFitTheIntegerTypeTheyBecome) {
    EXPECT_FALSE(Scalar(300).fits(DType::int8));
    EXPECT_TRUE(Scalar(127).fits(DType::int8));
    EXPECT_TRUE(Scalar(-128).fits(DType::int8));
    EXPECT_FALSE(Scalar(-129).fits(DType::int8));
    EXPECT_TRUE(Scalar(300).fits(DType::int16));
    EXPECT_FALSE(Scalar(32768).fits(DType::int16));
    EXPECT_FALSE(Scalar(-1).fits(DType::uint8));
    EXPECT_FALSE(Scalar(-1).fits(DType::uint64));
    EXPECT_TRUE(Scalar(255).fits(DType::uint8));
    EXPECT_FALSE(Scalar(256).fits(DType::uint8));
    EXPECT_FALSE(Scalar(std::uint64_t{1} << 63).fits(DType::int64));
    EXPECT_TRUE(Scalar(std::numeric_limits<std::uint64_t>::max()).fits(DType::uint64));
    EXPECT_TRUE(Scalar(std::numeric_limits<long long>::min()).fits(DType::int64));
    EXPECT_FALSE(Scalar(std::uint32_t{4294967295U}).fits(DType::int32));
    EXPECT_TRUE(Scalar(true).fits(DType::uint8));
    // Floating and complex targets and bool take any value (rounding, infinity, != 0).
    EXPECT_TRUE(Scalar(std::numeric_limits<std::int64_t>::max()).fits(DType::float16));
    EXPECT_TRUE(Scalar(1e300).fits(DType::float32));
    EXPECT_TRUE(Scalar(-5).fits(DType::bool_));
    EXPECT_TRUE(Scalar(-5).fits(DType::complex64));
}

TEST(ScalarRules, FloatingValuesMustBeFiniteAndTruncateIntoRange) {
    EXPECT_TRUE(Scalar(-2.7).fits(DType::int8));
    EXPECT_TRUE(Scalar(127.9).fits(DType::int8));
    EXPECT_FALSE(Scalar(128.0).fits(DType::int8));
    EXPECT_TRUE(Scalar(-0.5).fits(DType::uint8)) << "truncates to 0";
    EXPECT_FALSE(Scalar(-1.0).fits(DType::uint8));
    EXPECT_FALSE(Scalar(std::nan("")).fits(DType::int32));
    EXPECT_FALSE(Scalar(std::numeric_limits<double>::infinity()).fits(DType::int64));
    EXPECT_FALSE(Scalar(9223372036854775808.0).fits(DType::int64)) << "2^63";
    EXPECT_TRUE(Scalar(-9223372036854775808.0).fits(DType::int64)) << "-2^63";
    EXPECT_FALSE(Scalar(18446744073709551616.0).fits(DType::uint64)) << "2^64";
    EXPECT_TRUE(Scalar(18446744073709549568.0).fits(DType::uint64)) << "the largest below 2^64";
    EXPECT_TRUE(Scalar(std::complex<double>(3.0, 1e300)).fits(DType::int8)) << "the real part";
    EXPECT_FALSE(Scalar(std::complex<float>(300.0F, 0.0F)).fits(DType::int8));
}

TEST(ScalarRules, AScalarMadeWithADtypeMustFitIt) {
    const std::string message = overflow_of([] { Scalar(300, DType::int8); });
    EXPECT_TRUE(has(message, "300") && has(message, "int8")) << message;
    EXPECT_NO_THROW(Scalar(-1.5, DType::int8));
    EXPECT_NO_THROW(Scalar(1e300, DType::float32));
    EXPECT_TRUE((std::is_base_of_v<kiln::ArgumentError, OverflowError>));
}

TEST(ScalarRules, WeakScalarsTakeTheArrayTypeUnlessTheirKindIsHigher) {
    const TypedOperand i8{DType::int8, false}, u8{DType::uint8, false}, i32{DType::int32, false},
        f32{DType::float32, false}, u64{DType::uint64, false}, f16{DType::float16, false},
        b{DType::bool_, false};
    const TypedOperand weak_int{DType::int32, true}, weak_long{DType::int64, true},
        weak_double{DType::float64, true}, weak_complex{DType::complex128, true},
        weak_bool{DType::bool_, true};
    EXPECT_EQ(add_type(i8, weak_int), DType::int8);
    EXPECT_EQ(add_type(u8, weak_long), DType::uint8);
    EXPECT_EQ(add_type(i32, weak_double), DType::float64) << "int array + 1.5, as NumPy 2";
    EXPECT_EQ(add_type(f16, weak_double), DType::float16);
    EXPECT_EQ(add_type(f32, weak_complex), DType::complex64);
    EXPECT_EQ(add_type(b, weak_int), DType::int64);
    EXPECT_EQ(add_type(i8, weak_bool), DType::int8);
    EXPECT_EQ(add_type(u64, weak_long), DType::uint64) << "not float64, as a strong int64 gives";
    EXPECT_EQ(add_type(u64, TypedOperand{DType::int64, false}), DType::float64);
}

TEST(ScalarRules, StrongScalarsPromoteAsNumPyScalars) {
    const TypedOperand u64{DType::uint64, false}, i8{DType::int8, false},
        f16{DType::float16, false}, i32{DType::int32, false};
    const TypedOperand int8_scalar{DType::int8, false}, int16_scalar{DType::int16, false},
        float_scalar{DType::float32, false};
    EXPECT_EQ(add_type(u64, int8_scalar), DType::float64) << "uint64 array + int8 scalar";
    EXPECT_EQ(add_type(i8, int16_scalar), DType::int16);
    EXPECT_EQ(add_type(f16, float_scalar), DType::float32);
    EXPECT_EQ(add_type(i32, float_scalar), DType::float64);
}

TEST(ScalarRules, ReadyOperationsRefuseAWeakScalarTheArrayTypeCannotHold) {
    Array i8 = fake({16}, DType::int8), u8 = fake({16}, DType::uint8);
    const std::string wraps = overflow_of([&] { kiln::add(i8, 32767); });
    EXPECT_TRUE(has(wraps, "add") && has(wraps, "32767") && has(wraps, "int8") &&
                has(wraps, "weak"))
        << wraps;
    EXPECT_TRUE(has(overflow_of([&] { kiln::add(u8, -1); }), "-1"));
    EXPECT_TRUE(has(overflow_of([&] { kiln::multiply(300, i8); }), "300"));
    EXPECT_TRUE(has(overflow_of([&] { kiln::where(fake({16}, DType::bool_), i8, 200); }), "where"));
    EXPECT_TRUE(has(overflow_of([&] { kiln::clip(i8, -1000, 10); }), "clip"));
    EXPECT_TRUE(has(overflow_of([&] { kiln::fill(u8, 256); }), "fill"));
    EXPECT_TRUE(has(overflow_of([&] { kiln::fill(i8, std::nan("")); }), "nan"));
    // A value that fits, a strong scalar that promotes, a float scalar that lifts the kind: no
    // OverflowError (what follows needs a device, so any other error is fine here).
    EXPECT_FALSE(has(overflow_of([&] { kiln::add(i8, 100); }), "cannot hold"));
    EXPECT_FALSE(has(overflow_of([&] { kiln::add(i8, std::int16_t{300}); }), "cannot hold"));
    EXPECT_FALSE(has(overflow_of([&] { kiln::add(i8, 1e10); }), "cannot hold"));
}

TEST(ScalarRules, ComparisonsWithAnOutOfRangeWeakIntegerAreExact) {
    using kiln::detail::exact_comparison_types;
    const kiln::detail::OpTypes u8{DType::bool_, DType::uint8}, u64{DType::bool_, DType::uint64},
        i16{DType::bool_, DType::int16};
    EXPECT_EQ(exact_comparison_types(ElementwiseOp::less, u8, Scalar(-1)).compute, DType::int64);
    EXPECT_EQ(exact_comparison_types(ElementwiseOp::equal, u64, Scalar(-1)).compute,
              DType::float64);
    EXPECT_EQ(exact_comparison_types(ElementwiseOp::greater, i16, Scalar(40000L)).compute,
              DType::int64);
    EXPECT_EQ(exact_comparison_types(ElementwiseOp::less, u8, Scalar(200)).compute, DType::uint8)
        << "a value that fits keeps the array's type";
    EXPECT_EQ(exact_comparison_types(ElementwiseOp::add, u8, Scalar(-1)).compute, DType::uint8)
        << "arithmetic raises instead";
    EXPECT_EQ(exact_comparison_types(ElementwiseOp::less, u8, Scalar(std::int16_t{-1})).compute,
              DType::uint8)
        << "a strong scalar promotes by its own type, not its value";
    Array u8a = fake({16}, DType::uint8);
    EXPECT_FALSE(has(overflow_of([&] { kiln::less(u8a, -1); }), "cannot hold"));
    auto below = kiln::fuse("below", [](auto x) { return x < -1; });
    const std::array<Arg, 1> one{Arg(u8a)};
    EXPECT_TRUE(has(below.source_for(one.data(), 1), "kiln::cast<long long>(in0)"))
        << below.source_for(one.data(), 1);
}

TEST(ScalarRules, KernelParametersRefuseAScalarTheirTypeCannotHold) {
    kiln::ElementwiseKernel put("T x, T s", "T z", "z = x + s", "put_scalar");
    Array i8 = fake({16}, DType::int8);
    const std::array<Arg, 2> wide{Arg(i8), Arg(300)};
    const std::string message = overflow_of([&] { put.source_for(wide.data(), wide.size()); });
    EXPECT_TRUE(has(message, "put_scalar") && has(message, "parameter 's'") &&
                has(message, "int8") && has(message, "300"))
        << message;
    const std::array<Arg, 2> narrow{Arg(i8), Arg(-100)};
    EXPECT_NO_THROW(put.source_for(narrow.data(), narrow.size()));

    kiln::ElementwiseKernel fixed("float32 x, uint16 n", "float32 z", "z = x * n", "fixed_n");
    Array f = fake({16}, DType::float32);
    const std::array<Arg, 2> negative{Arg(f), Arg(std::int8_t{-3})};
    EXPECT_TRUE(has(overflow_of([&] { fixed.source_for(negative.data(), negative.size()); }),
                    "strong int8 scalar -3"));

    kiln::ReductionKernel scaled_sum("T x, T s", "T y", "x * s", "a + b", "y = a", "0",
                                     "scaled_sum");
    const std::array<Arg, 2> reduce_args{Arg(i8), Arg(1000)};
    EXPECT_TRUE(
        has(overflow_of([&] { scaled_sum.source_for(reduce_args.data(), 2); }), "parameter 's'"));
}

TEST(ScalarRules, FusedLiteralsAndScalarArgumentsMustFit) {
    Array i8 = fake({16}, DType::int8);
    auto plus_300 = kiln::fuse("plus_300", [](auto x) { return x + 300; });
    const std::array<Arg, 1> one{Arg(i8)};
    const std::string literal = overflow_of([&] { plus_300.source_for(one.data(), 1); });
    EXPECT_TRUE(has(literal, "plus_300") && has(literal, "literal") && has(literal, "300"))
        << literal;
    auto shift = kiln::fuse("shift", [](auto x, auto s) { return x + s; });
    const std::array<Arg, 2> too_big{Arg(i8), Arg(300)};
    const std::string argument = overflow_of([&] { shift(i8, 300); });
    EXPECT_TRUE(has(argument, "shift") && has(argument, "in1") && has(argument, "300")) << argument;
    EXPECT_NO_THROW(shift.source_for(too_big.data(), 2)) << "the value is checked at the call";
    // A strong scalar promotes the sum: int8 + int16 is int16.
    const std::array<Arg, 2> strong{Arg(i8), Arg(std::int16_t{300})};
    const std::string promoted = shift.source_for(strong.data(), 2);
    EXPECT_TRUE(has(promoted, "const short t2 = ")) << promoted;
}
