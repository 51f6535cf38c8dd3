// kiln::matmul's rules decided on the host (kernels/linalg/matmul_plan.hpp): NumPy's shapes for
// 1-D, 2-D and batched operands, the result and compute dtypes (integers through float64 where
// exact, refused where not), which layouts cuBLAS reads as they are and which are copied, the
// GEMM's transposes, leading dimensions and batch strides, outputs written in place or through a
// temporary; kiln::diagonal's views; and the cuBLAS loader's failures. Arrays here wrap addresses
// that are never read, so no GPU is needed.

#include "linalg/cublas_library.hpp"
#include "linalg/matmul_plan.hpp"

#include "kiln/array.hpp"
#include "kiln/error.hpp"
#include "kiln/linalg.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using kiln::Array;
using kiln::Dims;
using kiln::DType;
using kiln::detail::MatmulPlan;
using kiln::detail::plan_matmul;

namespace {

constexpr CUdeviceptr kAddress = 0x7f0000000000;

// A C-contiguous array at an address never read.
Array fake(Dims shape, DType dtype = DType::float32) {
    return Array::wrap(kAddress, shape, dtype, {}, nullptr, 0);
}

// Strides in elements, turned into bytes.
Array fake_strided(Dims shape, Dims element_strides, DType dtype = DType::float32) {
    Dims bytes;
    for (std::int64_t s : element_strides)
        bytes.push_back(s * static_cast<std::int64_t>(kiln::itemsize(dtype)));
    return Array::wrap(kAddress, shape, dtype, bytes, nullptr, 0);
}

MatmulPlan plan(const Array& a, const Array& b, const Array* out = nullptr, bool tf32 = false) {
    return plan_matmul(a, b, out, tf32);
}

TEST(MatmulPlan, TwoDimensionalRowMajorOperandsGoToCublasUncopied) {
    const MatmulPlan p = plan(fake({3, 4}), fake({4, 5}));
    EXPECT_EQ(p.out_shape, Dims({3, 5}));
    EXPECT_EQ(p.m, 3);
    EXPECT_EQ(p.k, 4);
    EXPECT_EQ(p.n, 5);
    EXPECT_EQ(p.batch, 1);
    EXPECT_FALSE(p.a.copy);
    EXPECT_FALSE(p.b.copy);
    EXPECT_FALSE(p.a.transposed);
    EXPECT_FALSE(p.b.transposed);
    EXPECT_EQ(p.a.ld, 4);
    EXPECT_EQ(p.b.ld, 5);
    EXPECT_EQ(p.ldc, 5);
    EXPECT_EQ(p.result, DType::float32);
    EXPECT_EQ(p.compute, DType::float32);
    EXPECT_FALSE(p.tf32);
}

TEST(MatmulPlan, TransposedViewsAreTransposesNotCopies) {
    const Array a = fake({4, 3}).transpose(); // (3, 4), column-major
    const Array b = fake({5, 4}).transpose(); // (4, 5), column-major
    const MatmulPlan p = plan(a, b);
    EXPECT_EQ(p.out_shape, Dims({3, 5}));
    EXPECT_FALSE(p.a.copy);
    EXPECT_FALSE(p.b.copy);
    EXPECT_TRUE(p.a.transposed);
    EXPECT_TRUE(p.b.transposed);
    EXPECT_EQ(p.a.ld, 3);
    EXPECT_EQ(p.b.ld, 4);
}

TEST(MatmulPlan, RowsOfALargerMatrixKeepTheirLeadingDimension) {
    // a[:, 0:4] of a (3, 10) array: rows 10 apart.
    const Array a = fake({3, 10}).slice({kiln::Slice::all(), kiln::Slice::range(0, 4)});
    const MatmulPlan p = plan(a, fake({4, 2}));
    EXPECT_FALSE(p.a.copy);
    EXPECT_EQ(p.a.ld, 10);
}

TEST(MatmulPlan, LayoutsCublasCannotReadAreCopied) {
    // Every other column: no unit stride in either direction.
    const Array stepped = fake({4, 10}).slice({kiln::Slice::all(), kiln::Slice::range(0, 10, 2)});
    const MatmulPlan p = plan(stepped, fake({5, 3}));
    EXPECT_TRUE(p.a.copy);
    EXPECT_FALSE(p.a.transposed);
    EXPECT_EQ(p.a.ld, 5);
    EXPECT_FALSE(p.b.copy);
    // Reversed rows (a negative stride) too.
    const Array reversed = fake({4, 5}).slice({kiln::Slice::range(-1, -5, -1)});
    EXPECT_TRUE(plan(reversed, fake({5, 3})).a.copy);
    // A matrix broadcast along its rows (stride 0 with extent 4).
    const Array broadcast = fake({1, 5}).broadcast_to({4, 5});
    EXPECT_TRUE(plan(broadcast, fake({5, 3})).a.copy);
}

TEST(MatmulPlan, OneDimensionalOperandsArePromotedAndTheirDimensionRemoved) {
    MatmulPlan p = plan(fake({4}), fake({4, 5})); // row vector
    EXPECT_EQ(p.out_shape, Dims({5}));
    EXPECT_EQ(p.full_shape, Dims({1, 5}));
    EXPECT_EQ(p.m, 1);
    p = plan(fake({3, 4}), fake({4})); // column vector
    EXPECT_EQ(p.out_shape, Dims({3}));
    EXPECT_EQ(p.n, 1);
    EXPECT_FALSE(p.b.copy);
    p = plan(fake({4}), fake({4})); // inner product: 0-d
    EXPECT_EQ(p.out_shape, Dims{});
    EXPECT_EQ(p.full_shape, Dims({1, 1}));
    p = plan(fake({2, 3, 4}), fake({4})); // a stack times a vector
    EXPECT_EQ(p.out_shape, Dims({2, 3}));
    EXPECT_EQ(p.batch, 2);
    EXPECT_EQ(p.b.batch_stride, 0);
    // A strided vector is read with its stride when it is a row.
    const Array every_other = fake({8}).slice({kiln::Slice::range(0, 8, 2)});
    p = plan(every_other, fake({4, 2}));
    EXPECT_FALSE(p.a.copy);
}

TEST(MatmulPlan, BatchesBroadcastAndAreWalkedWithOneStride) {
    MatmulPlan p = plan(fake({6, 3, 4}), fake({4, 5}));
    EXPECT_EQ(p.out_shape, Dims({6, 3, 5}));
    EXPECT_EQ(p.batch, 6);
    EXPECT_EQ(p.a.batch_stride, 12);
    EXPECT_EQ(p.b.batch_stride, 0); // one matrix for every batch
    EXPECT_EQ(p.c_batch_stride, 15);
    p = plan(fake({2, 1, 3, 4}), fake({1, 7, 4, 5}));
    EXPECT_EQ(p.out_shape, Dims({2, 7, 3, 5}));
    EXPECT_EQ(p.batch, 14);
    // Partly broadcast: no single stride walks a's (2, 1) over (2, 7): copied, every batch.
    EXPECT_TRUE(p.a.copy);
    EXPECT_TRUE(p.a.expand_batch);
    EXPECT_EQ(p.a.batch_stride, 12);
    EXPECT_TRUE(p.b.copy);
    EXPECT_TRUE(p.b.expand_batch);
    // Leading extent-1 batch dimensions walk nothing.
    p = plan(fake({1, 1, 3, 4}), fake({5, 4, 2}));
    EXPECT_EQ(p.out_shape, Dims({1, 5, 3, 2}));
    EXPECT_FALSE(p.a.copy);
    EXPECT_EQ(p.a.batch_stride, 0);
    EXPECT_EQ(p.b.batch_stride, 8);
    // A transposed stack: each matrix column-major, batches 12 apart.
    p = plan(fake({6, 4, 3}).transpose({0, 2, 1}), fake({6, 4, 5}));
    EXPECT_FALSE(p.a.copy);
    EXPECT_TRUE(p.a.transposed);
    EXPECT_EQ(p.a.batch_stride, 12);
    EXPECT_EQ(p.a.ld, 3);
    // Batches in a non-C order (the batch axes swapped): no single stride.
    p = plan(fake({3, 2, 4, 4}).transpose({1, 0, 2, 3}), fake({4, 4}));
    EXPECT_TRUE(p.a.copy);
    EXPECT_FALSE(p.a.expand_batch);
}

TEST(MatmulPlan, ShapesThatDoNotMultiplyAreShapeErrorsNamingBoth) {
    try {
        plan(fake({3, 4}), fake({5, 6}));
        FAIL() << "no error";
    } catch (const kiln::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("(3, 4)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("(5, 6)"), std::string::npos) << e.what();
    }
    EXPECT_THROW(plan(fake({3}), fake({4})), kiln::ShapeError);
    EXPECT_THROW(plan(fake({2, 3, 4}), fake({3, 4, 5})), kiln::ShapeError); // batches 2 and 3
    EXPECT_THROW(plan(fake({}), fake({4, 5})), kiln::ShapeError);           // 0-d
}

TEST(MatmulPlan, ResultDtypesPromoteAsNumPyAndFloatsRunInTheirOwnType) {
    struct Case {
        DType a, b, result, compute;
    };
    const std::vector<Case> cases = {
        {DType::float16, DType::float16, DType::float16, DType::float16},
        {DType::bfloat16, DType::bfloat16, DType::bfloat16, DType::bfloat16},
        {DType::float64, DType::float64, DType::float64, DType::float64},
        {DType::complex64, DType::complex64, DType::complex64, DType::complex64},
        {DType::complex128, DType::complex128, DType::complex128, DType::complex128},
        {DType::float16, DType::float32, DType::float32, DType::float32},
        {DType::float32, DType::complex64, DType::complex64, DType::complex64},
        {DType::float64, DType::complex64, DType::complex128, DType::complex128},
        {DType::int32, DType::float32, DType::float64, DType::float64}, // NumPy's promotion
        {DType::int8, DType::float16, DType::float16, DType::float16},
        {DType::int64, DType::float64, DType::float64, DType::float64},
        {DType::int8, DType::int8, DType::int8, DType::float64},
        {DType::int8, DType::uint8, DType::int16, DType::float64},
        {DType::uint16, DType::int16, DType::int32, DType::float64},
        {DType::bool_, DType::bool_, DType::bool_, DType::float64},
        {DType::uint64, DType::int8, DType::float64,
         DType::float64}, // NumPy: no integer holds both
    };
    for (const Case& c : cases) {
        const MatmulPlan p = plan(fake({2, 3}, c.a), fake({3, 2}, c.b));
        EXPECT_EQ(p.result, c.result) << kiln::name(c.a) << " @ " << kiln::name(c.b);
        EXPECT_EQ(p.compute, c.compute) << kiln::name(c.a) << " @ " << kiln::name(c.b);
        // An operand of another dtype is converted: copied, contiguous.
        EXPECT_EQ(p.a.copy, c.a != c.compute);
        EXPECT_EQ(p.b.copy, c.b != c.compute);
    }
}

TEST(MatmulPlan, WideIntegersAreRefusedAndNarrowOnesOnlyWhileExact) {
    for (DType wide : {DType::int32, DType::uint32, DType::int64, DType::uint64}) {
        try {
            plan(fake({2, 3}, wide), fake({3, 2}, wide));
            FAIL() << kiln::name(wide) << " accepted";
        } catch (const kiln::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find(kiln::name(wide)), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("astype"), std::string::npos) << e.what();
        }
    }
    // int16 products reach 2^30: exact up to k = 2^23; uint16's (65535^2) up to about 2^21.
    EXPECT_EQ(kiln::detail::matmul_compute_dtype(DType::int16, DType::int16, 1 << 23),
              DType::float64);
    EXPECT_THROW(kiln::detail::matmul_compute_dtype(DType::int16, DType::int16, (1 << 23) + 1),
                 kiln::ArgumentError);
    EXPECT_THROW(kiln::detail::matmul_compute_dtype(DType::uint16, DType::uint16, 1 << 22),
                 kiln::ArgumentError);
    EXPECT_EQ(kiln::detail::matmul_compute_dtype(DType::uint8, DType::int8, 1LL << 30),
              DType::float64);
}

TEST(MatmulPlan, TensorFloat32OnlyWhenAllowedAndOnlyForFloat32Products) {
    EXPECT_FALSE(plan(fake({2, 3}), fake({3, 2})).tf32);
    EXPECT_TRUE(plan(fake({2, 3}), fake({3, 2}), nullptr, true).tf32);
    EXPECT_TRUE(
        plan(fake({2, 3}, DType::complex64), fake({3, 2}, DType::complex64), nullptr, true).tf32);
    EXPECT_FALSE(
        plan(fake({2, 3}, DType::float64), fake({3, 2}, DType::float64), nullptr, true).tf32);
    EXPECT_FALSE(
        plan(fake({2, 3}, DType::float16), fake({3, 2}, DType::float16), nullptr, true).tf32);
}

TEST(MatmulPlan, AGivenRowMajorOutputIsWrittenInPlace) {
    const Array out = fake({6, 3, 5});
    MatmulPlan p = plan(fake({6, 3, 4}), fake({4, 5}), &out);
    EXPECT_TRUE(p.out_direct);
    EXPECT_EQ(p.ldc, 5);
    EXPECT_EQ(p.c_batch_stride, 15);
    // Rows of a wider array: in place, with its leading dimension.
    const Array wide = fake({3, 8}).slice({kiln::Slice::all(), kiln::Slice::range(0, 5)});
    p = plan(fake({3, 4}), fake({4, 5}), &wide);
    EXPECT_TRUE(p.out_direct);
    EXPECT_EQ(p.ldc, 8);
    // A column-major output, or one of another dtype than the compute dtype: a temporary.
    const Array transposed = fake({5, 3}).transpose();
    EXPECT_FALSE(plan(fake({3, 4}), fake({4, 5}), &transposed).out_direct);
    const Array narrow = fake({3, 5}, DType::int8);
    EXPECT_FALSE(plan(fake({3, 4}, DType::int8), fake({4, 5}, DType::int8), &narrow).out_direct);
    // A vector result given as a 1-D output.
    const Array vector = fake({3});
    EXPECT_TRUE(plan(fake({3, 4}), fake({4}), &vector).out_direct);
}

TEST(MatmulPlan, AnOutputOfTheWrongShapeOrDtypeIsRefused) {
    const Array wrong_shape = fake({5, 3});
    EXPECT_THROW(plan(fake({3, 4}), fake({4, 5}), &wrong_shape), kiln::ShapeError);
    const Array wrong_dtype = fake({3, 5}, DType::float64);
    EXPECT_THROW(plan(fake({3, 4}), fake({4, 5}), &wrong_dtype), kiln::ArgumentError);
}

TEST(Diagonal, IsAViewWithTheSumOfTheTwoStrides) {
    const Array a = fake({4, 5});
    Array d = kiln::diagonal(a);
    EXPECT_EQ(d.shape(), Dims({4}));
    EXPECT_EQ(d.strides(), Dims({24}));
    EXPECT_EQ(d.data(), kAddress);
    d = kiln::diagonal(a, 2); // above: starts at (0, 2), 3 long
    EXPECT_EQ(d.shape(), Dims({3}));
    EXPECT_EQ(d.data(), kAddress + 8);
    d = kiln::diagonal(a, -1); // below: starts at (1, 0)
    EXPECT_EQ(d.shape(), Dims({3}));
    EXPECT_EQ(d.data(), kAddress + 20);
    EXPECT_EQ(kiln::diagonal(a, 5).shape(), Dims({0}));
    EXPECT_EQ(kiln::diagonal(a, -4).shape(), Dims({0}));
}

TEST(Diagonal, PutsTheDiagonalLastAndKeepsTheOtherAxesInOrder) {
    const Array a = fake({2, 3, 4}); // strides 48, 16, 4
    Array d = kiln::diagonal(a, 0, -2, -1);
    EXPECT_EQ(d.shape(), Dims({2, 3}));
    EXPECT_EQ(d.strides(), Dims({48, 20}));
    d = kiln::diagonal(a); // NumPy's default: axes 0 and 1
    EXPECT_EQ(d.shape(), Dims({4, 2}));
    EXPECT_EQ(d.strides(), Dims({4, 64}));
    d = kiln::diagonal(a, 0, 2, 0); // axis1 after axis2: rows walk axis 2
    EXPECT_EQ(d.shape(), Dims({3, 2}));
}

TEST(Diagonal, RefusesTooFewDimensionsAndBadAxes) {
    EXPECT_THROW(kiln::diagonal(fake({4})), kiln::ShapeError);
    EXPECT_THROW(kiln::diagonal(fake({4, 4}), 0, 0, 2), kiln::AxisError);
    EXPECT_THROW(kiln::diagonal(fake({4, 4}), 0, 1, -1), kiln::AxisError); // the same axis
    EXPECT_THROW(kiln::trace(fake({4})), kiln::ShapeError);
}

TEST(CublasLoader, AMissingLibraryIsAFailureNamingEveryCandidateAndTheSetting) {
    const auto library =
        kiln::detail::open_cublas({"/nonexistent/libcublas.so.13", "libkiln_no_such_cublas.so"});
    EXPECT_FALSE(library.failure.empty());
    EXPECT_NE(library.failure.find("/nonexistent/libcublas.so.13"), std::string::npos);
    EXPECT_NE(library.failure.find("libkiln_no_such_cublas.so"), std::string::npos);
    EXPECT_NE(library.failure.find("KILN_CUBLAS_LIBRARY"), std::string::npos);
    EXPECT_EQ(library.functions.gemm, nullptr);
}

TEST(CublasLoader, ALibraryWithoutCublasEntryPointsIsAFailureNamingTheMissingOne) {
    const auto library = kiln::detail::open_cublas({"libc.so.6"});
    EXPECT_EQ(library.path, "libc.so.6");
    EXPECT_NE(library.failure.find("lacks cublasCreate_v2"), std::string::npos) << library.failure;
}

TEST(CublasLoader, TheToolkitsLibraryOpensWhereItIsInstalled) {
    const std::vector<std::string> candidates = kiln::detail::cublas_candidates();
    ASSERT_FALSE(candidates.empty());
    const auto library = kiln::detail::open_cublas(candidates);
    if (!library.failure.empty()) GTEST_SKIP() << "no cuBLAS here: " << library.failure;
    EXPECT_NE(library.functions.gemm, nullptr);
    EXPECT_NE(library.functions.gemm_strided_batched, nullptr);
    EXPECT_STREQ(library.functions.status_name(CUBLAS_STATUS_NOT_INITIALIZED),
                 "CUBLAS_STATUS_NOT_INITIALIZED");
}

} // namespace

namespace {

TEST(MatmulRepeatCache, ARepeatedCallReusesItsPlan) {
    kiln::detail::MatmulRepeatCache repeat;
    const Array a = fake({6, 3, 4}), b = fake({4, 5}), out = fake({6, 3, 5});
    const MatmulPlan first = repeat.plan(a, b, &out, false);
    EXPECT_FALSE(repeat.last_was_repeat());
    const MatmulPlan& again = repeat.plan(a, b, &out, false);
    EXPECT_TRUE(repeat.last_was_repeat());
    EXPECT_EQ(again.out_shape, first.out_shape);
    EXPECT_EQ(again.a.batch_stride, first.a.batch_stride);
    EXPECT_TRUE(again.out_direct);
}

TEST(MatmulRepeatCache, AnyDifferenceIsANewPlan) {
    kiln::detail::MatmulRepeatCache repeat;
    const Array a = fake({3, 4}), b = fake({4, 5}), out = fake({3, 5});
    repeat.plan(a, b, &out, false);
    // Another address (an element further: float32 still aligned).
    const Array moved = Array::wrap(kAddress + 4, {3, 4}, DType::float32, {}, nullptr, 0);
    repeat.plan(moved, b, &out, false);
    EXPECT_FALSE(repeat.last_was_repeat());
    // Another layout of the same memory: b's transposed view of a (5, 4) array.
    repeat.plan(a, b, &out, false);
    const MatmulPlan& transposed = repeat.plan(a, fake({5, 4}).transpose(), &out, false);
    EXPECT_FALSE(repeat.last_was_repeat());
    EXPECT_TRUE(transposed.b.transposed);
    // Another dtype, TF32, no output, another output.
    repeat.plan(a, b, &out, false);
    EXPECT_EQ(
        repeat.plan(fake({3, 4}, DType::float64), fake({4, 5}, DType::float64), nullptr, false)
            .compute,
        DType::float64);
    EXPECT_FALSE(repeat.last_was_repeat());
    repeat.plan(a, b, &out, false);
    EXPECT_TRUE(repeat.plan(a, b, &out, true).tf32);
    EXPECT_FALSE(repeat.last_was_repeat());
    repeat.plan(a, b, nullptr, true);
    EXPECT_FALSE(repeat.last_was_repeat());
    const Array wide = fake({3, 8}).slice({kiln::Slice::all(), kiln::Slice::range(0, 5)});
    EXPECT_EQ(repeat.plan(a, b, &wide, true).ldc, 8);
    EXPECT_FALSE(repeat.last_was_repeat());
}

TEST(MatmulRepeatCache, APlanThatFailsLeavesNoneBehind) {
    kiln::detail::MatmulRepeatCache repeat;
    const Array a = fake({3, 4}), b = fake({4, 5});
    repeat.plan(a, b, nullptr, false);
    const Array wrong = fake({5, 3});
    EXPECT_THROW(repeat.plan(a, b, &wrong, false), kiln::ShapeError);
    repeat.plan(a, b, nullptr, false);
    EXPECT_FALSE(repeat.last_was_repeat());
    EXPECT_THROW(repeat.plan(a, a, nullptr, false), kiln::ShapeError);
    EXPECT_THROW(repeat.plan(a, a, nullptr, false), kiln::ShapeError); // refused again, not reused
}

} // namespace
