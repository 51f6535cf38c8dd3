// CuPy-library-style kernels without a GPU: each construct of CuPy's kernel prelude, headers and
// raw-array API compiles unchanged with NVRTC (for sm_90, as on an H100), and the generated code
// has the shape that makes it behave as in CuPy. Arrays are described with Array::wrap over
// made-up addresses: nothing is launched. test_cupy_library_kernels_gpu.cpp runs the same
// kernels.

#include "cupy_library_kernels.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <functional>

using kiln::Array;
using kiln::DType;

namespace {

Array fake(const kiln::Dims& shape, DType dtype) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

template <class Kernel, class How>
void compiles(const Kernel& k, std::initializer_list<kiln::Arg> args, const How& how) {
    try {
        k.compile_for(args.begin(), args.size(), how, "sm_90");
    } catch (const kiln::CompileError& e) {
        FAIL() << e.what();
    }
}
void compiles(const kiln::ElementwiseKernel& k, std::initializer_list<kiln::Arg> args) {
    compiles(k, args, kiln::CallOptions{});
}
void compiles(const kiln::ReductionKernel& k, std::initializer_list<kiln::Arg> args,
              const kiln::ReduceCall& how = {}) {
    compiles<kiln::ReductionKernel>(k, args, how);
}

std::string source(const kiln::ElementwiseKernel& k, std::initializer_list<kiln::Arg> args) {
    return k.source_for(args.begin(), args.size());
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST(CupyLibraryKernels, SearchsortedReturnsThroughAMacroForOneElementOnly) {
    const auto k = cupy_library::searchsorted();
    Array x = fake({1000}, DType::float32), bins = fake({64}, DType::float32);
    const std::string src = source(k, {x, bins, std::int64_t{64}, true});
    EXPECT_TRUE(has(src, "kiln::Vec<")) << "the layout stays vectorized:\n" << src;
    EXPECT_TRUE(has(src, "[&]() {")) << "the operation runs in a lambda:\n" << src;
    compiles(k, {x, bins, std::int64_t{64}, true});
}

TEST(CupyLibraryKernels, AReturnInTheOperationEndsOnlyItsElement) {
    const auto k = cupy_library::clip_negative_early();
    Array x = fake({4096}, DType::float32);
    const std::string src = source(k, {x});
    EXPECT_TRUE(has(src, "kiln::Vec<float, 4>")) << src;
    EXPECT_TRUE(has(src, "[&]() {")) << src;
    compiles(k, {x});
}

TEST(CupyLibraryKernels, AnOutputAMacroMaySkipIsReadBeforeTheVectorStore) {
    const auto k = cupy_library::skip_negative();
    Array x = fake({4096}, DType::float32);
    const std::string src = source(k, {x});
    EXPECT_TRUE(has(src, "= *reinterpret_cast<const kiln::Vec<float, 4>*>(_kiln_p._raw_y")) << src;
    EXPECT_TRUE(has(src, "[&]() {")) << src;
    compiles(k, {x});
}

TEST(CupyLibraryKernels, AnOperationWithoutReturnIsNotWrapped) {
    kiln::ElementwiseKernel k("T x", "T y", "y = x; // returns nothing special", "plain");
    Array x = fake({4096}, DType::float32);
    EXPECT_FALSE(has(source(k, {x}), "[&]() {"));
}

TEST(CupyLibraryKernels, MatPtrsBroadcastsInputsToTheGivenOutputAndReadsTheIndex) {
    const auto k = cupy_library::mat_ptrs();
    Array base = fake({3, 1}, DType::uint64), stride = fake({3, 1}, DType::uint64);
    Array out = fake({3, 4}, DType::uint64);
    const std::string src = source(k, {base, stride, out});
    EXPECT_TRUE(has(src, "_ind.set(i);")) << src;
    compiles(k, {base, stride, out});
    // An output the inputs do not broadcast to is still refused.
    Array small = fake({3, 1}, DType::uint64), wide = fake({3, 4}, DType::uint64);
    EXPECT_THROW(source(k, {wide, wide, small}), kiln::ShapeError);
}

TEST(CupyLibraryKernels, TheIndexObjectGivesPerDimensionIndicesInEveryLayout) {
    const auto k = cupy_library::index_digits();
    for (const kiln::Dims& shape : {kiln::Dims{1000}, kiln::Dims{4, 5, 6}, kiln::Dims{3, 128}}) {
        Array x = fake(shape, DType::float32);
        EXPECT_TRUE(has(source(k, {x}), "_ind.set(i);"));
        compiles(k, {x});
    }
    Array wide = fake({64, 64}, DType::float32);
    compiles(k, {wide.transpose()}); // tiled
}

TEST(CupyLibraryKernels, MathConstantsNeedNoInclude) {
    const auto k = cupy_library::math_constants();
    Array x = fake({100}, DType::float64);
    const std::string src = source(k, {x});
    EXPECT_FALSE(has(src, "#include <math")) << src;
    compiles(k, {x});
}

TEST(CupyLibraryKernels, AtomicAddTakesSignedAndUnsigned64BitIntegers) {
    const auto k = cupy_library::histogram64();
    compiles(k, {fake({1000}, DType::int64), fake({1000}, DType::int32), fake({8}, DType::int64),
                 fake({8}, DType::uint64)});
}

TEST(CupyLibraryKernels, RawArraysHaveCupysMethodsWithStridesInBytes) {
    const auto k = cupy_library::raw_methods();
    Array x = fake({6, 5}, DType::float32).transpose(); // (5, 6), not contiguous
    const Array outs[] = {fake({30}, DType::float32), fake({30}, DType::float32),
                          fake({30}, DType::int64),   fake({30}, DType::int64),
                          fake({30}, DType::int64),   fake({30}, DType::int64)};
    compiles(k, {x, outs[0], outs[1], outs[2], outs[3], outs[4], outs[5]});
    const auto linear = cupy_library::raw_linear();
    Array cube = fake({4, 3, 2}, DType::float64).transpose({2, 0, 1});
    compiles(linear, {cube, fake({24}, DType::float64)});
}

TEST(CupyLibraryKernels, KilnRawArraysNoLongerHaveShapeAndStridesMembers) {
    // Ported code that used Kiln's old members must fail to compile, not read wrong strides.
    kiln::ElementwiseKernel k("raw T x", "T y", "y = x[i] * x.strides[0]", "old_members");
    Array x = fake({8, 8}, DType::float32);
    try {
        k.compile_for(std::initializer_list<kiln::Arg>{x, fake({64}, DType::float32)}.begin(), 2,
                      {}, "sm_90");
        FAIL() << "x.strides[0] compiled";
    } catch (const kiln::CompileError&) {
    }
}

TEST(CupyLibraryKernels, ComplexHasSettersAndCupysSpellings) {
    const auto k = cupy_library::complex_setters();
    compiles(k, {fake({100}, DType::complex64)});
}

TEST(CupyLibraryKernels, CupyTypeTraitsAreAvailable) {
    const auto k = cupy_library::type_traits();
    compiles(k, {fake({100}, DType::float32)});
    compiles(k, {fake({100}, DType::int32)});
}

TEST(CupyLibraryKernels, RawOnAScalarAndUnderscoreNamesAreAccepted) {
    const auto k = cupy_library::raw_scalar_and_underscore_name();
    compiles(k, {fake({100}, DType::float32), 2.0f, 3});
    // Names the generated code declares stay reserved.
    EXPECT_THROW(kiln::ElementwiseKernel("T _ind", "T y", "y = _ind", "bad"), kiln::SpecError);
    EXPECT_THROW(kiln::ElementwiseKernel("T _raw_x", "T y", "y = _raw_x", "bad"), kiln::SpecError);
}

TEST(CupyLibraryKernels, Float16NamesHalfPrecision) {
    compiles(cupy_library::half_round_trip(), {fake({100}, DType::float32)});
}

TEST(CupyLibraryKernels, ShortUnderscoreNamesDoNotMeetKilnsInternals) {
    // Every layout declares its own loop state; none of it may clash with these names.
    kiln::ElementwiseKernel k("T _p, T _n, T _r, int32 _c", "T _s", "_s = _p * _n + _r + _c",
                              "underscores");
    for (const kiln::Dims& shape : {kiln::Dims{4096}, kiln::Dims{64, 100}, kiln::Dims{5, 7, 3}}) {
        Array a = fake(shape, DType::float32);
        compiles(k, {a, a, a, 1});
    }
    Array wide = fake({256, 256}, DType::float32);
    compiles(k, {wide.transpose(), wide, wide, 1}); // the tiled layout
    kiln::ReductionKernel r("T _x, T _S", "T _acc", "_x * _S", "a + b", "_acc = a", "0",
                            "underscores_sum");
    Array m = fake({64, 1000}, DType::float32);
    compiles(r, {m, 2.0f});
    compiles(r, {m, 2.0f}, kiln::ReduceCall{0});
}

TEST(CupyLibraryKernels, CudaStdBitIsIncludedOnlyByKernelsThatUseIt) {
    const auto k = cupy_library::popcount();
    Array x = fake({100}, DType::uint32);
    EXPECT_TRUE(has(source(k, {x}), "#include <cuda/std/bit>"));
    compiles(k, {x});
    EXPECT_FALSE(
        has(source(cupy_library::type_traits(), {fake({100}, DType::float32)}), "cuda/std/bit"));
}

TEST(CupyLibraryKernels, AnIdentityMayReferToAScalarParameter) {
    const auto k = cupy_library::max_from();
    Array x = fake({64, 1000}, DType::float32);
    compiles(k, {x, 0.5f});
    compiles(k, {x, 0.5f}, kiln::ReduceCall{1});
    compiles(k, {x, 0.5f}, kiln::ReduceCall{0});
}

TEST(CupyLibraryKernels, ReductionsSeeUnderscoreJ) {
    const auto k = cupy_library::sum_of_j();
    Array x = fake({64, 100}, DType::int32);
    compiles(k, {x}, kiln::ReduceCall{1});
    compiles(k, {x}, kiln::ReduceCall{0});
}

TEST(CupyLibraryKernels, RawKernelsIncludeCupysHeaders) {
    for (const char* header : cupy_library::kCupyHeaders) {
        SCOPED_TRACE(header);
        kiln::CompileOptions options;
        options.arch = "sm_90";
        kiln::RawKernel k(cupy_library::raw_source_with(header), "cupy_header_kernel", options);
        try {
            EXPECT_NE(k.compile(), nullptr);
        } catch (const kiln::CompileError& e) {
            ADD_FAILURE() << e.what();
        }
    }
}

TEST(CupyLibraryKernels, LoopPrepAndAfterLoopGetCupysSemicolon) {
    // cupyx.scipy.signal's general_cosine: its loop_prep's last statement has no `;`.
    const auto k = cupy_library::general_cosine();
    const std::string src = source(k, {fake({4}, DType::float64), 4, fake({51}, DType::float64)});
    EXPECT_TRUE(has(src, "( _ind.size() - 1 ) };")) << src;
    compiles(k, {fake({4}, DType::float64), 4, fake({51}, DType::float64)});
    compiles(k, {fake({3}, DType::float32), 3, fake({1000}, DType::float32)});
    kiln::ElementwiseOptions options;
    options.loop_prep = "int seen = 0";
    options.after_loop = "if (seen < 0) seen = 0";
    kiln::ElementwiseKernel open_ends("T x", "T y", "y = x; ++seen", "open_ends", options);
    compiles(open_ends, {fake({100}, DType::float32), fake({100}, DType::float32)});
}

TEST(CupyLibraryKernels, Float16PromotesAsCupysInMixedExpressions) {
    // The variance core CuPy runs on a float16 array with a float32 mean: `x - mean` is a float.
    const auto k = cupy_library::var_core_float32();
    Array x = fake({64, 100}, DType::float16);
    compiles(k, {x, fake({64, 1}, DType::float32), 0.01f}, kiln::ReduceCall{1});
    compiles(k, {x, fake({64, 1}, DType::float16), 0.01f}, kiln::ReduceCall{1});
    compiles(k, {fake({64, 100}, DType::bfloat16), fake({64, 1}, DType::float32), 0.01f},
             kiln::ReduceCall{1});
    // The type of each mixed expression, checked by the compiler: the 16-bit value converts to
    // float, then C++'s usual conversions; two 16-bit values keep the toolkit's own operators.
    kiln::ElementwiseKernel types("float16 h, bfloat16 b, float32 f, float64 d, int32 n, uint8 u",
                                  "float32 y",
                                  R"(
        using kiln::traits::is_same;
        static_assert(is_same<decltype(h - f), float>::value, "half - float");
        static_assert(is_same<decltype(f * h), float>::value, "float * half");
        static_assert(is_same<decltype(h + d), double>::value, "half + double");
        static_assert(is_same<decltype(n / h), float>::value, "int / half");
        static_assert(is_same<decltype(h - u), float>::value, "half - uint8");
        static_assert(is_same<decltype(h * 2), float>::value, "half * literal");
        static_assert(is_same<decltype(h * M_PI), double>::value, "half * M_PI");
        static_assert(is_same<decltype(b - f), float>::value, "bfloat16 - float");
        static_assert(is_same<decltype(h + h), __half>::value, "half + half");
        static_assert(is_same<decltype(h < f), bool>::value, "half < float");
        float16 acc = h;
        acc += f;
        acc *= 2;
        y = acc - f + (h == 1) + (b >= d) + isnan(h) + isinf(b) + isfinite(h);
    )",
                                  "half_mixed");
    Array v = fake({100}, DType::float32);
    compiles(types, {fake({100}, DType::float16), fake({100}, DType::bfloat16), v,
                     fake({100}, DType::float64), fake({100}, DType::int32),
                     fake({100}, DType::uint8), v});
}

TEST(CupyLibraryKernels, IsnanIsinfAndIsfiniteTakeComplexValues) {
    // CuPy's NaN-aware complex variance and its count of values that are not NaN.
    Array x = fake({64, 100}, DType::complex64);
    compiles(cupy_library::nanvar_core_complex64(),
             {x, fake({64, 1}, DType::complex64), fake({64, 1}, DType::int64), std::int64_t{1}},
             kiln::ReduceCall{1});
    for (DType d : {DType::complex64, DType::complex128, DType::float32, DType::float16}) {
        SCOPED_TRACE(kiln::name(d));
        compiles(cupy_library::count_non_nan(), {fake({64, 100}, d)}, kiln::ReduceCall{1});
    }
    kiln::ElementwiseKernel classify(
        "T z", "bool nan, bool finite, bool inf",
        "nan = isnan(z); finite = kiln::isfinite(z); inf = thrust::isinf(z)", "classify");
    for (DType d : {DType::complex64, DType::complex128}) {
        Array out = fake({100}, DType::bool_);
        compiles(classify, {fake({100}, d), out, out, out});
    }
}

TEST(CupyLibraryKernels, CudaWorkaroundGivesStdNamesInPreamblesAndModules) {
    for (DType d : {DType::int8, DType::int64, DType::uint32}) {
        SCOPED_TRACE(kiln::name(d));
        compiles(cupy_library::bitwise_count(), {fake({100}, d), fake({100}, DType::uint8)});
    }
    kiln::CompileOptions options;
    options.arch = "sm_90";
    options.options = {"-std=c++17"};
    std::vector<std::string> names(std::begin(cupy_library::kChannelizerKernels),
                                   std::end(cupy_library::kChannelizerKernels));
    kiln::RawModule module(cupy_library::kChannelizerSource, options, names);
    try {
        EXPECT_NE(module.compile(), nullptr);
    } catch (const kiln::CompileError& e) {
        FAIL() << e.what();
    }
    // The header's std names, without defining the `_v` shorthands code written for CuPy defines.
    kiln::RawKernel limits(R"(
        #include <cupy/cuda_workaround.h>
        namespace std { template <class T> inline constexpr bool is_integral_v = is_integral<T>::value; }
        extern "C" __global__ void limits(unsigned int* out) {
            static_assert(std::is_integral_v<std::uint32_t>, "");
            const std::pair<int, unsigned int> p = std::make_pair(1, std::numeric_limits<uint32_t>::max());
            out[0] = p.second + std::get<0>(std::make_tuple(p.first));
        })",
                           "limits", options);
    try {
        EXPECT_NE(limits.compile(), nullptr);
    } catch (const kiln::CompileError& e) {
        FAIL() << e.what();
    }
}
