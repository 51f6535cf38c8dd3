// kiln::fuse without a GPU: tracing, NumPy's result dtypes, the generated source, the errors and
// the per-signature table, with kernels compiled by NVRTC for sm_90. Arrays are described with
// Array::wrap over made-up, aligned addresses: nothing is launched.

#include "kiln/fuse.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <tuple>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::FusionError;

namespace {

Array fake(const kiln::Dims& shape, DType dtype = DType::float32) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

template <class F> std::string source(const F& fused, std::initializer_list<Arg> args) {
    return fused.source_for(args.begin(), args.size());
}

template <class F> void compiles(const F& fused, std::initializer_list<Arg> args) {
    try {
        EXPECT_TRUE(fused.compile_for(args.begin(), args.size(), "sm_90"));
    } catch (const kiln::CompileError& e) {
        FAIL() << e.what();
    }
}

template <class E> std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

int count_of(const std::string& text, const std::string& part) {
    int n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++n;
    return n;
}

} // namespace

TEST(Fuse, SquaredDifferenceIsOneElementwiseKernelWithALinePerExpression) {
    auto squared_diff =
        kiln::fuse("squared_diff", [](auto x, auto y) { return (x - y) * (x - y); });
    Array x = fake({1 << 20}), y = fake({1 << 20});
    const std::string src = source(squared_diff, {x, y});
    EXPECT_EQ(count_of(src, "__global__"), 1) << src;
    EXPECT_TRUE(has(src, "squared_diff(const kiln_params _kiln_p)")) << src;
    EXPECT_TRUE(has(src, "const float t2 = (in0 - in1);  // traced: in0 - in1")) << src;
    // C++ leaves the order of the two differences open.
    EXPECT_TRUE(has(src, "const float t4 = (t2 * t3);  // traced: t2 * t3") ||
                has(src, "const float t4 = (t3 * t2);  // traced: t3 * t2"))
        << src;
    EXPECT_TRUE(has(src, "out0 = t4;")) << src;
    EXPECT_TRUE(has(src, "kiln::Vec<float, 4>")) << "the front end's vector loads: " << src;
    compiles(squared_diff, {x, y});
}

TEST(Fuse, SumOfProductsIsOneReductionWithTheProductAsItsMap) {
    auto sum_of_products =
        kiln::fuse("sum_of_products", [](auto x, auto y) { return kiln::sum(x * y, -1); });
    Array x = fake({512, 1024}), y = fake({512, 1024});
    const std::string src = source(sum_of_products, {x, y});
    EXPECT_EQ(count_of(src, "__global__"), 1) << src;
    EXPECT_TRUE(has(src, "const float t2 = (in0 * in1);  // traced: in0 * in1")) << src;
    EXPECT_TRUE(has(src, "// traced: sum(t2, axis=-1)")) << src;
    EXPECT_TRUE(
        has(src, "kiln_reduce(const _type_reduce& a, const _type_reduce& b) { return (a + b)"))
        << src;
    compiles(sum_of_products, {x, y});
}

TEST(Fuse, ATupleGivesSeveralOutputsOfOneKernel) {
    auto both = kiln::fuse("sum_and_product", [](auto x, auto y) {
        auto sum = x + y;
        auto product = x * y;
        auto less = (x < y).astype(DType::int32);
        return std::make_tuple(sum, product, less);
    });
    Array x = fake({64, 64}), y = fake({64});
    const std::string src = source(both, {x, y});
    EXPECT_EQ(count_of(src, "__global__"), 1);
    EXPECT_TRUE(has(src, "out0 = t2; out1 = t3; out2 = t5;")) << src;
    EXPECT_TRUE(has(src, "int* _raw_out2")) << src;
    compiles(both, {x, y});
}

TEST(Fuse, ScalarArgumentsAreParametersSoANewValueIsTheSameKernel) {
    auto axpy = kiln::fuse("axpy", [](auto a, auto x, auto y) { return a * x + y; });
    Array x = fake({1000}), y = fake({1000});
    const std::string first = source(axpy, {2.5, x, y});
    const std::string second = source(axpy, {-7.25, x, y});
    EXPECT_EQ(first, second);
    EXPECT_EQ(axpy.traces(), 1u);
    EXPECT_TRUE(has(first, "double in0;")) << "the scalar is a kernel parameter: " << first;
    EXPECT_FALSE(has(first, "2.5")) << first;
    // A weak scalar takes the array's dtype (NumPy 2): the product is float32.
    EXPECT_TRUE(has(first, "const float t3 = (kiln::cast<float>(in0) * in1);")) << first;
    compiles(axpy, {2.5, x, y});
}

TEST(Fuse, LiteralsAreConstantsOfTheArraysType) {
    auto scaled = kiln::fuse("scaled", [](auto x) { return x * 0.1 + 2; });
    Array x = fake({100});
    const std::string src = source(scaled, {x});
    EXPECT_TRUE(has(src, "(in0 * 0.1f)")) << src;
    EXPECT_TRUE(has(src, "(t2 + 2.0f)")) << src;
    Array i = fake({100}, DType::int32);
    const std::string isrc = source(scaled, {i});
    EXPECT_TRUE(has(isrc, "const double t2 = (kiln::cast<double>(in0) * 0.1);")) << isrc;
}

TEST(Fuse, ElementwiseWorkAfterTheReductionIsItsPostMap) {
    auto rms = kiln::fuse("rms", [](auto x, auto scale) {
        return kiln::sqrt(kiln::mean(x * x, 1, {/*keepdims=*/true})) * scale;
    });
    Array x = fake({256, 4096});
    const std::string src = source(rms, {x, 0.5f});
    EXPECT_TRUE(has(src, "// traced: mean(t2, axis=1, keepdims=true)")) << src;
    EXPECT_TRUE(has(src, "_in_ind.size() / _out_ind.size()")) << "mean divides by the count";
    EXPECT_TRUE(has(src, "// traced: sqrt(t3)")) << src;
    EXPECT_TRUE(has(src, "// traced: t4 * in1")) << src;
    compiles(rms, {x, 0.5f});
}

TEST(Fuse, ArgmaxGivesInt64IndicesFromTheSharedRecipe) {
    std::vector<DType> seen;
    auto best = kiln::fuse("best", [&](auto x) {
        auto v = kiln::argmax(kiln::abs(x), 0);
        seen.push_back(v.dtype());
        return v;
    });
    Array x = fake({1000, 64});
    const std::string src = source(best, {x});
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], DType::int64);
    EXPECT_TRUE(has(src, "long long* _raw_out0")) << src;
    EXPECT_TRUE(has(src, "kiln::argmax_merge(a, b)")) << src;
    compiles(best, {x});
    EXPECT_TRUE(
        has(error_of<kiln::AxisError>([&] {
                auto two = kiln::fuse("two_axes", [](auto v) { return kiln::argmax(v, {0, 1}); });
                source(two, {x});
            }),
            "one axis"));
}

TEST(Fuse, ResultDtypesAreNumPysAsTheReadyOperationsGiveThem) {
    std::vector<DType> d;
    auto f = kiln::fuse("dtypes", [&](auto i32, auto f32, auto f16, auto i16) {
        d = {(i32 + f32).dtype(),
             (f32 * 2.5).dtype(),
             (i32 * 2.5).dtype(),
             (i32 / 2).dtype(),
             (f32 < i32).dtype(),
             kiln::where(i32 > 0, i32, 0).dtype(),
             kiln::clip(f16, 0, 1).dtype(),
             kiln::maximum(i32, f32).dtype(),
             kiln::exp(i16).dtype(),
             kiln::sqrt(f16).dtype(),
             i32.astype(DType::uint8).dtype(),
             kiln::sum(i16).dtype()};
        return i32 + f32;
    });
    Array a = fake({8}, DType::int32), b = fake({8}), c = fake({8}, DType::float16),
          e = fake({8}, DType::int16);
    const std::string src = source(f, {a, b, c, e});
    const std::vector<DType> expected = {
        DType::float64, DType::float32, DType::float64, DType::float64, DType::bool_, DType::int32,
        DType::float16, DType::float64, DType::float32, DType::float16, DType::uint8, DType::int64};
    EXPECT_EQ(d, expected);
    // The values not returned leave no trace in the kernel.
    EXPECT_FALSE(has(src, "traced: sum(")) << src;
    EXPECT_FALSE(has(src, "exp(")) << src;
    EXPECT_TRUE(has(src, "// traced: in0 + in1")) << src;
}

TEST(Fuse, Float16ComputesInFloatAndWhereClipMaximumCompile) {
    auto f = kiln::fuse("mixed", [](auto h, auto i) {
        return kiln::where(h > 0, kiln::clip(h, -1, 1), kiln::maximum(h, i.astype(DType::float16)));
    });
    Array h = fake({4096}, DType::float16), i = fake({4096}, DType::int32);
    const std::string src = source(f, {h, i});
    EXPECT_TRUE(has(src, "kiln_clip(kiln::cast<float>(in0)")) << src;
    compiles(f, {h, i});
}

TEST(Fuse, AFunctionThatReturnsNoArrayIsAFusionError) {
    Array a = fake({16});
    auto nothing = kiln::fuse("nothing", [](auto x) { (void)(x + 1); });
    EXPECT_TRUE(has(error_of<FusionError>([&] { source(nothing, {a}); }), "returns nothing"));
    auto number = kiln::fuse("number", [](auto) { return 1.0; });
    EXPECT_TRUE(has(error_of<FusionError>([&] { source(number, {a}); }), "a C++ scalar"));
    auto scalars = kiln::fuse("scalars", [](auto, auto r) { return r * 2; });
    EXPECT_TRUE(has(error_of<FusionError>([&] {
                        source(scalars, {a, 3.0});
                    }),
                    "depends on no array argument"));
    auto arity = kiln::fuse("arity", [](auto x, auto y) { return x + y; });
    EXPECT_TRUE(has(error_of<FusionError>([&] { source(arity, {a}); }), "does not take 1"));
}

TEST(Fuse, VarAndStdFuseAsOnePassReductions) {
    Array a = fake({16, 16});
    auto variance = kiln::fuse("variance", [](auto x) { return kiln::var(x * 2, 1); });
    const std::string src = source(variance, {a});
    EXPECT_EQ(count_of(src, "__global__"), 1) << src;
    EXPECT_TRUE(has(src, "// traced: var(t2, axis=1)")) << src;
    EXPECT_TRUE(has(src, "kiln_moments_merge(a, b)")) << src;
    compiles(variance, {a});
}

TEST(Fuse, ACompileErrorNamesTheTracedExpression) {
    kiln::FuseOptions options;
    options.preamble = "#define tanh(v) kiln_no_such_function(v)";
    auto broken = kiln::fuse(
        "broken", [](auto x) { return kiln::tanh(x * 2) + 1; }, options);
    Array x = fake({1024});
    try {
        broken.compile_for(std::array<Arg, 1>{x}.data(), 1, "sm_90");
        FAIL() << "compiled";
    } catch (const kiln::CompileError& e) {
        const std::string what = e.what();
        EXPECT_TRUE(has(what, "kiln::fuse 'broken' does not compile: the traced expression "
                              "'tanh(t2)'"))
            << what;
        EXPECT_TRUE(has(what, "kiln_no_such_function")) << what;
    }
}

TEST(Fuse, EachSignatureIsTracedOnce) {
    int calls = 0;
    auto f = kiln::fuse("counted", [&](auto x, auto y) {
        ++calls;
        return x * y;
    });
    Array a = fake({32}), b = fake({32}), m = fake({4, 32}), d = fake({32}, DType::float64);
    source(f, {a, b});
    source(f, {b, a});
    f.compile_for(std::array<Arg, 2>{a, b}.data(), 2, "sm_90");
    EXPECT_EQ(calls, 1);
    source(f, {m, b});   // another number of dimensions
    source(f, {d, b});   // another dtype
    source(f, {a, 2.0}); // a scalar
    source(f, {a, 3.0});
    source(f, {a, 3.0f}); // another scalar type
    EXPECT_EQ(calls, 5);
    EXPECT_EQ(f.traces(), 5u);
}

TEST(Fuse, EveryFusableReductionCompilesWithItsNumPyDtype) {
    Array x = fake({300, 200});
    std::vector<DType> seen;
    auto record = [&](const auto& v) {
        seen.push_back(v.dtype());
        return v;
    };
    auto any = kiln::fuse("fused_any", [&](auto v) { return record(kiln::any(v > 0, 0)); });
    auto all = kiln::fuse("fused_all", [&](auto v) { return record(kiln::all(v != 0, -1)); });
    auto count = kiln::fuse("fused_count", [&](auto v) { return record(kiln::count_nonzero(v)); });
    auto prod = kiln::fuse("fused_prod", [&](auto v) {
        kiln::ReduceOptions options;
        options.dtype = DType::float64;
        return record(kiln::prod(v * 0.5, {0, 1}, options));
    });
    auto low = kiln::fuse("fused_min", [&](auto v) { return record(kiln::min(kiln::abs(v), 1)); });
    auto first = kiln::fuse("fused_argmin", [&](auto v) { return record(kiln::argmin(v)); });
    compiles(any, {x});
    EXPECT_TRUE(has(source(all, {x}), "a && b"));
    EXPECT_TRUE(has(source(count, {x}), "int64") || has(source(count, {x}), "long long"));
    compiles(prod, {x});
    EXPECT_TRUE(has(source(low, {x}), "kiln_min(a, b)"));
    compiles(first, {x});
    const std::vector<DType> expected = {DType::bool_,   DType::bool_,   DType::int64,
                                         DType::float64, DType::float32, DType::int64};
    EXPECT_EQ(seen, expected);
}

TEST(Fuse, ComplexExtremesFuseWithNumPysOrder) {
    auto peak = kiln::fuse("complex_peak", [](auto z) { return kiln::max(z * 2, 1); });
    auto first = kiln::fuse("complex_first_min", [](auto z) { return kiln::argmin(z, 0); });
    Array z = fake({64, 300}, DType::complex64);
    const std::string src = source(peak, {z});
    EXPECT_TRUE(has(src, "kiln::argmax_merge(a, b)")) << src;
    EXPECT_TRUE(has(src, "kiln::complex<float>* _raw_out0")) << src;
    compiles(peak, {z});
    compiles(first, {fake({64, 300}, DType::complex128)});
}
