// ElementwiseKernel without a GPU: binding, layouts and generated source, compiled by NVRTC.
// Arrays are described with Array::wrap over made-up, aligned addresses: nothing is launched.

#include "elementwise/write_only_outputs.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <functional>

using kiln::Array;
using kiln::DType;
using kiln::ElementwiseKernel;

namespace {

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 32;

Array fake(const kiln::Dims& shape, DType dtype = DType::float32, CUdeviceptr offset = 0) {
    static CUdeviceptr next = kBase;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next + offset, shape, dtype);
}

std::string source(const ElementwiseKernel& k, std::initializer_list<kiln::Arg> args,
                   const kiln::CallOptions& options = {}) {
    return k.source_for(args.begin(), args.size(), options);
}

// Compiles the kernel of this call for sm_90, as a call on an H100 would.
class ElementwiseCodegen : public ::testing::Test {
  protected:
    void compiles(const ElementwiseKernel& k, std::initializer_list<kiln::Arg> args,
                  const kiln::CallOptions& options = {}) {
        try {
            k.compile_for(args.begin(), args.size(), options, "sm_90");
        } catch (const kiln::CompileError& e) {
            FAIL() << e.what();
        }
    }
};

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

template <class E> std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_F(ElementwiseCodegen, ContiguousOperandsGetAFlatVectorizedLoop) {
    ElementwiseKernel k("T x, T y, T b", "T z", "z = x * y + b", "fma3");
    Array x = fake({1 << 20}), y = fake({1 << 20});
    const std::string src = source(k, {x, y, 2.0f});
    EXPECT_NE(src.find("kiln::Vec<float, 4>"), std::string::npos) << src;
    EXPECT_NE(src.find("typedef float T;"), std::string::npos);
    EXPECT_EQ(src.find("_st_x"), std::string::npos) << "a flat loop needs no strides";
    // z is only assigned, so the vector store does not read it first.
    EXPECT_EQ(src.find("= *reinterpret_cast<const kiln::Vec<float, 4>*>(_kiln_p._raw_z"),
              std::string::npos)
        << src;
    compiles(k, {x, y, 2.0f});
}

TEST_F(ElementwiseCodegen, AnOutputThatIsReadIsLoaded) {
    ElementwiseKernel k("T x", "T z", "z += x", "accumulate");
    Array x = fake({4096}), z = fake({4096});
    const std::string src = source(k, {x, z});
    EXPECT_NE(src.find("*reinterpret_cast<const kiln::Vec<float, 4>*>(_kiln_p._raw_z"),
              std::string::npos)
        << src;
    compiles(k, {x, z});
}

TEST_F(ElementwiseCodegen, MisalignedOperandsFallBackToScalarAccess) {
    ElementwiseKernel k("T x", "T z", "z = x", "copy");
    Array x = fake({4096}, DType::float32, 4); // 4-byte aligned only
    const std::string src = source(k, {x});
    EXPECT_EQ(src.find("kiln::Vec<"), std::string::npos) << src;
    compiles(k, {x});
}

TEST_F(ElementwiseCodegen, ABroadcastRowUsesTheRowsLayout) {
    ElementwiseKernel k("T x, T b", "T z", "z = x + b", "add_row");
    Array x = fake({512, 1024}), b = fake({1024});
    const std::string src = source(k, {x, b});
    EXPECT_NE(src.find("_kiln_row"), std::string::npos) << src;
    EXPECT_NE(src.find("kiln::Vec<float, 4>"), std::string::npos) << src;
    compiles(k, {x, b});
}

TEST_F(ElementwiseCodegen, ABroadcastColumnIsReadOncePerRow) {
    ElementwiseKernel k("T x, T c", "T z", "z = x * c", "scale_rows");
    Array x = fake({512, 1024}), c = fake({512, 1});
    const std::string src = source(k, {x, c});
    EXPECT_NE(src.find("_s_c"), std::string::npos) << src;
    compiles(k, {x, c});
}

TEST_F(ElementwiseCodegen, ATransposedOperandIsStagedThroughSharedMemory) {
    ElementwiseKernel k("T x, T y", "T z", "z = x + y", "add_t");
    Array x = fake({1024, 1024}).transpose(), y = fake({1024, 1024});
    const std::string src = source(k, {x, y});
    EXPECT_NE(src.find("__shared__ float _t_x[32][33]"), std::string::npos) << src;
    EXPECT_EQ(src.find("_t_y"), std::string::npos) << "y is read directly";
    // Every load of a tile before its barrier: x's into shared memory, y's into registers, each
    // thread's four steps unrolled; the operation then reads y from its registers.
    const std::size_t prefetch = src.find("_d_y[_kiln_u] = _kiln_p._raw_y[");
    const std::size_t barrier = src.find("__syncthreads();");
    EXPECT_NE(prefetch, std::string::npos) << src;
    EXPECT_LT(prefetch, barrier) << src;
    EXPECT_NE(src.find("const float y = _d_y[_kiln_u];"), std::string::npos) << src;
    EXPECT_NE(src.find("#pragma unroll\n        for (int _kiln_u = 0; _kiln_u < 4; ++_kiln_u)"),
              std::string::npos)
        << src;
    compiles(k, {x, y});
    // A transposed output is staged on the way out; an output the operation reads, a scalar and
    // an operation that returns early compile too.
    ElementwiseKernel out_t("T x, T y, T s", "T z", "if (x < 0) return; z = z * s + x * y",
                            "scaled_accumulate");
    Array z = fake({1024, 1024}).transpose();
    const std::string out_src = source(out_t, {x, y, 2.0f, z});
    EXPECT_NE(out_src.find("__shared__ float _t_z[32][33]"), std::string::npos) << out_src;
    compiles(out_t, {x, y, 2.0f, z});
    compiles(out_t, {y, y, 2.0f, z});
}

TEST_F(ElementwiseCodegen, SlicedOperandsUseTheStridedLayout) {
    ElementwiseKernel k("T x", "T z", "z = x * 2", "twice");
    Array x = fake({4096}).slice({kiln::Slice::range(0, 4096, 3)});
    const std::string src = source(k, {x});
    EXPECT_NE(src.find("_st_x[1]"), std::string::npos) << src;
    compiles(k, {x});
}

TEST_F(ElementwiseCodegen, ContiguousDimensionsCollapse) {
    ElementwiseKernel k("T x", "T z", "z = x", "copy3d");
    const std::string collapsed = source(k, {fake({8, 16, 32})});
    EXPECT_EQ(collapsed.find("_st_x"), std::string::npos) << "3-D contiguous is one flat loop";
    ElementwiseKernel kept("T x", "T z", "z = x", "copy3d", [] {
        kiln::ElementwiseOptions o;
        o.reduce_dims = false;
        return o;
    }());
    EXPECT_NE(source(kept, {fake({8, 16, 32})}).find("_st_x[3]"), std::string::npos);
}

TEST_F(ElementwiseCodegen, EveryDtypeCompiles) {
    ElementwiseKernel k("T x, T y", "T z", "z = x * y + x", "muladd");
    for (int d = 0; d < kiln::kDTypeCount; ++d) {
        const auto dtype = static_cast<DType>(d);
        const std::string src = source(k, {fake({1000}, dtype), fake({1000}, dtype)});
        SCOPED_TRACE(kiln::name(dtype));
        compiles(k, {fake({1000}, dtype), fake({1000}, dtype)});
    }
}

TEST_F(ElementwiseCodegen, CodeThatUsesNoDeviceSupportIncludesOnlyTheVector) {
    // Each header costs NVRTC compile time in every kernel: plain arithmetic on plain dtypes
    // includes the vector alone, declares no index object, and its tail is one pass.
    ElementwiseKernel plain("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
    const std::string src = source(plain, {fake({1 << 20}), fake({1 << 20})});
    EXPECT_TRUE(has(src, "#include \"kiln/vec.cuh\"\n")) << src;
    EXPECT_FALSE(has(src, "kiln/elementwise.cuh")) << src;
    EXPECT_FALSE(has(src, "kiln/cast.cuh")) << src;
    EXPECT_FALSE(has(src, "Indexer")) << src;
    EXPECT_TRUE(has(src, "; i < _kiln_n; i = _kiln_n) {")) << src;
    compiles(plain, {fake({1 << 20}), fake({1 << 20})});
    // Code that names what the support headers give, dtypes that need them, raw operands.
    const auto supported = [&](const char* in_params, const char* operation, DType dtype,
                               const char* preamble = "") {
        kiln::ElementwiseOptions o;
        o.preamble = preamble;
        ElementwiseKernel k(in_params, "T z", operation, "supported", o);
        const Array x = fake({4096}, dtype), z = fake({4096}, dtype);
        std::string with = source(k, {x, z});
        SCOPED_TRACE(operation);
        EXPECT_TRUE(has(with, "#include \"kiln/elementwise.cuh\"\n")) << with;
        EXPECT_TRUE(has(with, "#include \"kiln/cast.cuh\"\n")) << with;
        compiles(k, {x, z});
        return with;
    };
    const std::string indexed = supported("T x", "z = x + _ind.size()", DType::float32);
    EXPECT_TRUE(has(indexed, "kiln::Indexer<kiln_index_t, 1> _ind(")) << indexed;
    supported("T x", "z = x * M_PI", DType::float64);
    supported("T x", "z = kiln::maximum(x, T(0))", DType::float32);
    supported("T x", "z = kiln::cast<T>(cupy::type_traits::is_signed<T>::value)", DType::int32);
    supported("T x", "z = x; atomicAdd(&z, 1ll)", DType::int64);
    supported("T x", "z = NEXT(x)", DType::int32, "#define NEXT(v) (v + _ind.size())");
    supported("T x", "z = x + x", DType::float16);
    supported("T x", "z = x * x", DType::complex64);
    supported("raw T x", "z = x[i]", DType::float32);
}

TEST_F(ElementwiseCodegen, RawParametersIndexTheirOwnShape) {
    ElementwiseKernel k("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse");
    Array x = fake({4096}), y = fake({4096});
    const std::string src = source(k, {x, y});
    EXPECT_NE(src.find("kiln::Raw<float, kiln_index_t, 1, true>"), std::string::npos) << src;
    compiles(k, {x, y});
}

TEST_F(ElementwiseCodegen, PreambleLoopPrepAndAfterLoopAreEmitted) {
    kiln::ElementwiseOptions o;
    o.preamble = "__device__ float square(float v) { return v * v; }";
    o.loop_prep = "const float k = 3;";
    o.after_loop = "(void)k;";
    ElementwiseKernel kern("float32 x", "float32 y", "y = square(x) * k", "sq", o);
    const std::string src = source(kern, {fake({100})});
    EXPECT_LT(src.find("square(float v)"), src.find("__global__"));
    EXPECT_NE(src.find("const float k = 3;"), std::string::npos);
    compiles(kern, {fake({100})});
}

TEST_F(ElementwiseCodegen, APreambleMayIncludeTheToolkitsHeadersWhateverTheDtypes) {
    // The toolkit's headers are always on the include path: only an #include costs compile time.
    kiln::ElementwiseOptions groups;
    groups.preamble = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;";
    ElementwiseKernel rank("float32 x", "float32 z", "z = x + cg::this_thread_block().size()",
                           "with_groups", groups);
    compiles(rank, {fake({1000})});
    kiln::ElementwiseOptions fp16;
    fp16.preamble = "#include <cuda_fp16.h>";
    ElementwiseKernel round("float32 x", "float32 z", "z = static_cast<float>(half(x))",
                            "round_to_half", fp16);
    compiles(round, {fake({1000})});
}

TEST_F(ElementwiseCodegen, CompileErrorsNameThePieceAtFaultAndShowTheNumberedSource) {
    const Array x = fake({100});
    auto error = [&](const char* operation, kiln::ElementwiseOptions options) {
        const ElementwiseKernel k("T x", "T z", operation, "broken", std::move(options));
        const std::initializer_list<kiln::Arg> args{x};
        try {
            k.compile_for(args.begin(), args.size(), {}, "sm_90");
        } catch (const kiln::CompileError& e) {
            EXPECT_TRUE(has(e.what(), "ElementwiseKernel 'broken' does not compile")) << e.what();
            EXPECT_TRUE(has(e.numbered_source(), "| ")) << "the numbered source is attached";
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_TRUE(has(error("z = undefined_function(x)", {}),
                    "the operation 'z = undefined_function(x)' is at fault"));
    kiln::ElementwiseOptions preamble;
    preamble.preamble = "__device__ int broken_helper() { return nosuch; }";
    EXPECT_TRUE(has(error("z = x", preamble), "the preamble is at fault"));
    kiln::ElementwiseOptions loop_prep;
    loop_prep.loop_prep = "const float k = nosuch;";
    EXPECT_TRUE(has(error("z = x", loop_prep), "the loop_prep code 'const float k = nosuch;'"));
    kiln::ElementwiseOptions after_loop;
    after_loop.after_loop = "nosuch();";
    EXPECT_TRUE(has(error("z = x", after_loop), "the after_loop code 'nosuch();'"));
}

TEST(ElementwiseBinding, PlaceholdersBoundToDifferentDtypesAreAnError) {
    ElementwiseKernel k("T x, T y", "T z", "z = x + y", "add");
    const std::string message = error_of<kiln::ArgumentError>([&] {
        source(k, {fake({10}), fake({10}, DType::float64)});
    });
    EXPECT_NE(message.find("placeholder T is bound to float32"), std::string::npos) << message;
}

TEST(ElementwiseBinding, AFixedTypeMustMatchTheArray) {
    ElementwiseKernel k("float32 x", "float32 z", "z = x", "copy");
    EXPECT_THROW(source(k, {fake({10}, DType::int32)}), kiln::ArgumentError);
}

TEST(ElementwiseBinding, OutputsBindPlaceholdersBeforeInputs) {
    ElementwiseKernel k("T x", "U z", "z = x", "convert");
    const std::string src = source(k, {fake({10}, DType::int16), fake({10}, DType::float64)});
    EXPECT_NE(src.find("typedef short T;"), std::string::npos) << src;
    EXPECT_NE(src.find("typedef double U;"), std::string::npos) << src;
    EXPECT_THROW(source(k, {fake({10}, DType::int16)}), kiln::ArgumentError)
        << "U is bound by nothing without the output";
}

TEST(ElementwiseBinding, ScalarsTakeTheTypeTheArraysBound) {
    ElementwiseKernel k("T x, T s", "T z", "z = x + s", "add_scalar");
    const std::string src = source(k, {fake({10}, DType::float64), 1});
    EXPECT_NE(src.find("typedef double T;"), std::string::npos) << src;
    EXPECT_NE(src.find("double s;"), std::string::npos) << src;
}

TEST(ElementwiseBinding, TheWrongNumberOfArgumentsIsAnError) {
    ElementwiseKernel k("T x, T y", "T z", "z = x + y", "add");
    const std::string message = error_of<kiln::ArgumentError>([&] { source(k, {fake({10})}); });
    EXPECT_NE(message.find("takes 2 input(s)"), std::string::npos) << message;
}

TEST(ElementwiseBinding, ShapesThatDoNotBroadcastAreAShapeError) {
    ElementwiseKernel k("T x, T y", "T z", "z = x + y", "add");
    EXPECT_THROW(source(k, {fake({3, 4}), fake({5})}), kiln::ShapeError);
}

TEST(ElementwiseBinding, AnOutputOfTheWrongShapeIsAShapeError) {
    ElementwiseKernel k("T x", "T z", "z = x", "copy");
    EXPECT_THROW(source(k, {fake({3, 4}), fake({4, 3})}), kiln::ShapeError);
}

TEST(ElementwiseBinding, SizeNeedsEveryArrayRaw) {
    ElementwiseKernel raw("raw T x", "raw T z", "z[i] = x[i]", "copy_raw");
    kiln::CallOptions options;
    options.size = 10;
    EXPECT_NO_THROW(source(raw, {fake({10}), fake({10})}, options));
    ElementwiseKernel mixed("T x", "raw T z", "z[i] = x", "copy_mixed");
    EXPECT_THROW(source(mixed, {fake({10}), fake({10})}, options), kiln::ArgumentError);
    EXPECT_THROW(source(raw, {fake({10}), fake({10})}), kiln::ArgumentError)
        << "no loop size without size= when every array is raw";
}

TEST(ElementwiseBinding, BlockSizeZeroIsAnError) {
    ElementwiseKernel k("T x", "T z", "z = x", "copy");
    kiln::CallOptions options;
    options.block_size = 0;
    EXPECT_THROW(source(k, {fake({10})}, options), kiln::ArgumentError);
    options.block_size = 1025;
    EXPECT_THROW(source(k, {fake({10})}, options), kiln::ArgumentError);
}

TEST(ElementwiseBinding, AnOutputThatIsABroadcastViewIsRefused) {
    ElementwiseKernel k("T x", "T z", "z = x", "copy");
    Array z = fake({4}).broadcast_to({3, 4});
    EXPECT_THROW(source(k, {fake({3, 4}), z}), kiln::ArgumentError);
}

TEST(ElementwiseSpec, ABadKernelNameOrSpecIsASpecError) {
    EXPECT_THROW(ElementwiseKernel("T x", "T z", "z = x", "not a name"), kiln::SpecError);
    EXPECT_THROW(ElementwiseKernel("T x,", "T z", "z = x", "k"), kiln::SpecError);
    EXPECT_THROW(ElementwiseKernel("T x", "T x", "x = x", "k"), kiln::SpecError);
}

TEST(WriteOnlyOutputs, RecognizesPlainAssignmentsOnly) {
    using kiln::detail::outputs_are_write_only;
    EXPECT_TRUE(outputs_are_write_only("z = x * y + b", {"z"}));
    EXPECT_TRUE(outputs_are_write_only("z = SQ(x)", {"z"}, "#define SQ(v) ((v) * (v))\n"));
    EXPECT_FALSE(
        outputs_are_write_only("DONE(x); z = x", {"z"}, "#define DONE(v) \\\n  if (v) return;\n"));
    EXPECT_TRUE(outputs_are_write_only("float t = x; z = t == 1 ? x : y; w = t;", {"z", "w"}));
    EXPECT_FALSE(outputs_are_write_only("z += x", {"z"}));
    EXPECT_FALSE(outputs_are_write_only("z = z * 2", {"z"}));
    EXPECT_FALSE(outputs_are_write_only("if (x > 0) z = x", {"z"}));
    EXPECT_FALSE(outputs_are_write_only("z == x", {"z"}));
    EXPECT_FALSE(outputs_are_write_only("y = x", {"z"})) << "z is never written";
    EXPECT_FALSE(outputs_are_write_only("f(z)", {"z"}));
}

TEST(ScalarCast, ConvertsAsCxxDoesAndSaturatesWhereItIsUndefined) {
    auto as = [](kiln::Scalar s, DType d) {
        unsigned char bytes[16] = {};
        s.cast_to(d, bytes);
        std::int64_t i = 0;
        std::memcpy(&i, bytes, kiln::itemsize(d) < 8 ? kiln::itemsize(d) : 8);
        return i;
    };
    EXPECT_EQ(as(-1, DType::uint32), 4294967295ll);
    EXPECT_EQ(as(std::int64_t{1} << 32, DType::int32), 0);
    EXPECT_EQ(as(INT64_MAX, DType::int64), INT64_MAX);
    EXPECT_EQ(as(INT64_MIN, DType::int64), INT64_MIN);
    EXPECT_EQ(as(1e30, DType::int32), INT32_MAX);
    std::int8_t small = 0;
    kiln::Scalar(-2.7).cast_to(DType::int8, &small);
    EXPECT_EQ(small, -2);
    unsigned char half[2];
    kiln::Scalar(1.5).cast_to(DType::float16, half);
    EXPECT_EQ(half[0] | half[1] << 8, 0x3e00);
    double d;
    kiln::Scalar(INT64_MIN).cast_to(DType::float64, &d);
    EXPECT_EQ(d, -9223372036854775808.0);
}
