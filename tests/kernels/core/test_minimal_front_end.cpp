// Generated kernels and RawKernels compile with NVRTC's -minimal front end where nothing they use
// needs what it removes, and the cubin is the one the full front end gives, byte for byte (each
// source compiled here by NVRTC both ways, under one program name). Where a kernel does need
// something -minimal removes (a texture parameter, a toolkit header, a device-side launch, a
// driver type), or could tell the two apart (a test of a toolkit macro), it keeps the full front
// end and still compiles.

#include "core/device_headers.hpp"
#include "core/minimal_front_end.hpp"
#include "kiln/kiln.hpp"

#include <nvrtc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::detail::minimal_front_end_fits;

namespace {

Array fake(const kiln::Dims& shape, DType dtype) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

bool has_minimal(const kiln::Program& program) {
    const auto& options = program.nvrtc_options();
    return std::find(options.begin(), options.end(), kiln::detail::kMinimalOption) != options.end();
}

// @p program's source compiled by NVRTC with its options, less -minimal when @p minimal is false,
// with Kiln's device headers in memory; the cubin, or a failed test.
std::string cubin_of(const kiln::Program& program, bool minimal) {
    std::vector<const char*> names, sources, options;
    for (const kiln::Header& h : kiln::detail::device_headers()) {
        names.push_back(h.name.c_str());
        sources.push_back(h.source.c_str());
    }
    for (const std::string& option : program.nvrtc_options())
        if (minimal || option != kiln::detail::kMinimalOption) options.push_back(option.c_str());
    nvrtcProgram p = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&p, program.source().c_str(), "same_name.cu",
                                 static_cast<int>(names.size()), sources.data(), names.data()),
              NVRTC_SUCCESS);
    const nvrtcResult result =
        nvrtcCompileProgram(p, static_cast<int>(options.size()), options.data());
    std::string cubin;
    if (result == NVRTC_SUCCESS) {
        std::size_t size = 0;
        nvrtcGetCUBINSize(p, &size);
        cubin.resize(size);
        nvrtcGetCUBIN(p, cubin.data());
    }
    nvrtcDestroyProgram(&p);
    EXPECT_EQ(result, NVRTC_SUCCESS) << (minimal ? "with" : "without") << " -minimal";
    return cubin;
}

// Whether NVRTC alone compiles @p source (no headers), with or without -minimal.
bool nvrtc_compiles(const std::string& source, bool minimal) {
    std::vector<const char*> options = {"-arch=sm_90"};
    if (minimal) options.push_back("-minimal");
    nvrtcProgram p = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&p, source.c_str(), "probe.cu", 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    const nvrtcResult result =
        nvrtcCompileProgram(p, static_cast<int>(options.size()), options.data());
    nvrtcDestroyProgram(&p);
    return result == NVRTC_SUCCESS;
}

void expect_minimal_and_same_cubin(const kiln::Program& program) {
    EXPECT_TRUE(has_minimal(program)) << program.source();
    const std::string full = cubin_of(program, false);
    EXPECT_FALSE(full.empty());
    EXPECT_TRUE(full == cubin_of(program, true)) << "-minimal changed the cubin";
}

TEST(MinimalFrontEnd, ElementwiseKernelsUseItAndGetTheSameCubin) {
    struct Case {
        const char* in;
        const char* operation;
        DType dtype;
        kiln::Dims shape;
    };
    const Case cases[] = {
        {"T x, T y", "z = (x - y) * (x - y)", DType::float32, {1 << 12}},      // flat, vectorized
        {"T x, T y", "z = x * y + T(i)", DType::float64, {64, 33}},            // strided, an index
        {"T x, T y", "z = x + y", DType::float16, {64, 32}},                   // cuda_fp16.h
        {"T x, T y", "z = x * y", DType::bfloat16, {64, 32}},                  // cuda_bf16.h
        {"T x, T y", "z = x * y + T(2)", DType::complex64, {64, 32}},          // kiln::complex
        {"T x, T y", "z = max(x, y) > T(0) ? x : y", DType::int32, {7, 5, 3}}, // 3-D
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.operation);
        const kiln::ElementwiseKernel kernel(c.in, "T z", c.operation, "minimal_elementwise");
        const Array x = fake(c.shape, c.dtype), y = fake(c.shape, c.dtype),
                    z = fake(c.shape, c.dtype);
        const Arg args[] = {x, y, z};
        expect_minimal_and_same_cubin(*kernel.compile_for(args, 3, {}, "sm_90"));
    }
}

TEST(MinimalFrontEnd, ReductionKernelsUseItAndGetTheSameCubin) {
    const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                       "minimal_l2norm");
    kiln::ReductionOptions pairs;
    pairs.reduce_type = "kiln::pair<T, long long>";
    const kiln::ReductionKernel arg_max(
        "T x", "int64 y", "kiln::make_pair(x, (long long)_J)", "kiln::argmax_merge(a, b)",
        "y = a.second", "kiln::make_pair(kiln::lowest<T>(), -1ll)", "minimal_argmax", pairs);
    const std::pair<const kiln::ReductionKernel*, DType> cases[] = {
        {&l2norm, DType::float32}, {&l2norm, DType::float16}, {&arg_max, DType::float64}};
    for (const auto& [kernel, dtype] : cases)
        for (const int axis : {0, 1}) { // columns (outer layout) and rows (group layout)
            SCOPED_TRACE(std::string(kiln::name(dtype)) + " axis " + std::to_string(axis));
            const Array x = fake({512, 256}, dtype);
            const Arg args[] = {x};
            expect_minimal_and_same_cubin(
                *kernel->compile_for(args, 1, kiln::ReduceCall{axis}, "sm_90"));
        }
}

TEST(MinimalFrontEnd, KernelsThatNeedTheFullFrontEndKeepIt) {
    const char* preambles[] = {
        // A toolkit header beyond the 16-bit floats.
        "#include <cooperative_groups.h>\n"
        "__device__ float twice(float v) { return 2.f * v; }\n",
        // A texture fetch: its type and function are ones -minimal removes.
        "__device__ float fetch(cudaTextureObject_t t, int i) { return tex1Dfetch<float>(t, i); }\n"
        "__device__ float twice(float v) { return 2.f * v; }\n",
    };
    for (const char* preamble : preambles) {
        SCOPED_TRACE(preamble);
        kiln::ElementwiseOptions options;
        options.preamble = preamble;
        const kiln::ElementwiseKernel kernel("T x", "T y", "y = twice(x)", "full_front_end",
                                             options);
        const Array x = fake({256}, DType::float32), y = fake({256}, DType::float32);
        const Arg args[] = {x, y};
        const auto program = kernel.compile_for(args, 2, {}, "sm_90");
        EXPECT_FALSE(has_minimal(*program));
        EXPECT_FALSE(program->cubin().empty());
    }
}

TEST(MinimalFrontEnd, TheSourceDecides) {
    const std::string kernel = "extern \"C\" __global__ void k(float* x) { x[0] = 1.f; }\n";
    const std::string kiln_head = "#include \"kiln/elementwise.cuh\"\n#include <cuda_fp16.h>\n";
    EXPECT_TRUE(minimal_front_end_fits(kiln_head + kernel, {}));
    EXPECT_TRUE(minimal_front_end_fits(kiln_head + kernel, {"-use_fast_math"}));
    // Toolkit headers other than the 16-bit floats, and includes through a macro.
    EXPECT_FALSE(minimal_front_end_fits("#include <cooperative_groups.h>\n" + kernel, {}));
    EXPECT_FALSE(minimal_front_end_fits("  #  include <cuda/std/bit>\n" + kernel, {}));
    EXPECT_FALSE(minimal_front_end_fits("#define H <cuda_fp16.h>\n#include H\n" + kernel, {}));
    EXPECT_FALSE(minimal_front_end_fits("#include H // <cuda_fp16.h>\n" + kernel, {}));
    // Names of what -minimal removes, wherever they appear.
    EXPECT_FALSE(minimal_front_end_fits("__device__ cudaError_t e;\n" + kernel, {}));
    EXPECT_FALSE(minimal_front_end_fits("// tex2D\n" + kernel, {}));
    EXPECT_FALSE(minimal_front_end_fits("__device__ int f(unsigned long long s) "
                                        "{ return surf1Dread<int>(s, 0); }\n" +
                                            kernel,
                                        {}));
    EXPECT_TRUE(minimal_front_end_fits("__device__ int my_texture_count;\n" + kernel, {}))
        << "a name that only contains a prefix later on is fine";
    // A launch from device code, relocatable code, and -minimal already given.
    EXPECT_FALSE(minimal_front_end_fits(kernel + "__global__ void g() { k<<<1, 1>>>(0); }\n", {}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"-rdc=true"}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"-dc"}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"--minimal"}));
    // Include paths and pre-included headers (text the check does not read), undefined macros,
    // and a -D of a name -minimal removes.
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"-I/opt/include"}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"--include-path=/opt/include"}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"--pre-include=mine.h"}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"-UNDEBUG"}));
    EXPECT_FALSE(minimal_front_end_fits(kernel, {"-DMAJOR_VERSION=2"}));
    EXPECT_TRUE(minimal_front_end_fits(kernel, {"-DN=4", "--define-macro=M"}));
}

// Each of these compiles with the full front end and fails with -minimal (checked here against
// NVRTC itself), so the check must refuse it: driver and runtime names that begin with `CU` or
// `CUDA`, library_types.h's unprefixed names, and the macro -minimal defines.
TEST(MinimalFrontEnd, NamesOnlyTheFullFrontEndDeclaresAreRefused) {
    const char* bodies[] = {
        "x[0] = CUDA_IPC_HANDLE_SIZE;",
        "x[0] = sizeof(CUuuid);",
        "x[0] = CUDA_R_16F;",
        "x[0] = MAJOR_VERSION;",
        "libraryPropertyType t = PATCH_LEVEL; x[0] = t;",
        "x[0] = 1;\n#ifdef __CUDACC_RTC_MINIMAL__\n#error minimal\n#endif\n",
    };
    for (const char* body : bodies) {
        const std::string source =
            std::string("extern \"C\" __global__ void k(int* x) {\n") + body + "\n}\n";
        SCOPED_TRACE(source);
        EXPECT_FALSE(minimal_front_end_fits(source, {}));
        EXPECT_TRUE(nvrtc_compiles(source, false));
        EXPECT_FALSE(nvrtc_compiles(source, true));
    }
}

TEST(MinimalFrontEnd, ConditionalsMayTestOnlyTheCompilersAndTheSourcesOwnMacros) {
    const std::string kernel = "extern \"C\" __global__ void k(float* x) { x[0] = N; }\n";
    EXPECT_TRUE(minimal_front_end_fits("#if __CUDA_ARCH__ >= 800 && defined(__CUDACC_RTC__)\n"
                                       "#define N 2\n#else\n#define N 1\n#endif\n" +
                                           kernel,
                                       {}));
    EXPECT_TRUE(
        minimal_front_end_fits("#define WIDE 1\n#ifdef WIDE\n#define N 2\n#endif\n" + kernel, {}));
    EXPECT_TRUE(minimal_front_end_fits("#if N > 2\n#endif\n" + kernel, {"-DN=4"}));
    EXPECT_FALSE(minimal_front_end_fits("#if N > 2\n#endif\n" + kernel, {}))
        << "N may come from a header of the full front end";
    EXPECT_FALSE(
        minimal_front_end_fits("#ifdef __DRIVER_TYPES_H__\n#define N 2\n#endif\n" + kernel, {}));
    EXPECT_FALSE(
        minimal_front_end_fits("#if __has_include(<cuda_runtime.h>)\n#endif\n" + kernel, {}));
    EXPECT_FALSE(minimal_front_end_fits("#if defined(A) || \\\n defined(B)\n#endif\n" + kernel, {}))
        << "a directive continued on the next line";
    EXPECT_FALSE(minimal_front_end_fits("/* x */ #include <cooperative_groups.h>\n" + kernel, {}))
        << "a directive after a comment";
    EXPECT_FALSE(minimal_front_end_fits("/**/ #ifdef __DRIVER_TYPES_H__\n#endif\n" + kernel, {}));
}

// What RawKernels use most, in sources that include nothing or the 16-bit floats only.
TEST(MinimalFrontEnd, RawKernelsUseItAndGetTheSameCubin) {
    const char* sources[] = {
        R"(extern "C" __global__ void k(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("%d %f\n", i, x[i]);
    assert(n > 0);
})",
        R"(extern "C" __global__ void k(float* x, unsigned long long* t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float* p = (float*)malloc(16);
    if (p) { p[0] = 1.f; free(p); }
    __nanosleep(10); t[0] = clock64(); atomicAdd(x, 1.f);
    float v = __shfl_down_sync(0xffffffffu, x[i], 1) + __ldg(x + i); __syncwarp();
    dim3 d(1, 2, 3); float4 f = make_float4(1, 2, 3, 4); v += f.x + d.y + warpSize;
    v += sinf(v) + __expf(v) + rsqrtf(v) + fminf(v, 1.f) + max(i, 3) + isnan(v) + norm3df(v, v, v);
    unsigned r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); v += r + __popc(r) + __activemask();
    extern __shared__ float s[]; s[threadIdx.x] = v; __syncthreads(); x[i] = s[0];
})",
        R"(#include <cuda_fp16.h>
__device__ int counter;
__constant__ float table[4];
template <class T> __global__ void scale(const __grid_constant__ T p, T* out) { out[threadIdx.x] = p * T(2); }
extern "C" __global__ void halves(__half* x) { x[threadIdx.x] = __hadd(x[threadIdx.x], __float2half(1.f)); atomicAdd(&counter, 1); }
)",
    };
    for (const char* source : sources) {
        SCOPED_TRACE(source);
        kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
        if (std::string(source).find("scale") != std::string::npos)
            options.name_expressions = {"scale<double>"};
        const kiln::RawModule module(source, options);
        expect_minimal_and_same_cubin(*module.compile());
    }
}

TEST(MinimalFrontEnd, RawKernelsThatNeedTheFullFrontEndKeepIt) {
    const std::string kernel = "extern \"C\" __global__ void k(float* x) { x[0] = twice(1.f); }\n";
    const std::string twice = "__device__ float twice(float v) { return 2.f * v; }\n";
    const auto compiled = [](const std::string& source, kiln::CompileOptions options) {
        options.arch = "sm_90";
        return kiln::RawModule(source, std::move(options)).compile();
    };
    // A texture object, a toolkit header beyond the 16-bit floats.
    const std::string texture =
        "__device__ float fetch(cudaTextureObject_t t) { return tex1Dfetch<float>(t, 0); }\n";
    EXPECT_FALSE(has_minimal(*compiled(texture + twice + kernel, {})));
    EXPECT_FALSE(has_minimal(*compiled("#include <cooperative_groups.h>\n" + twice + kernel, {})));
    // An in-memory header is compiled too: its text decides with the source's.
    kiln::CompileOptions with_header;
    with_header.headers = {{"kiln/twice.cuh", "#pragma once\n" + texture + twice}};
    EXPECT_FALSE(has_minimal(*compiled("#include \"kiln/twice.cuh\"\n" + kernel, with_header)));
    with_header.headers = {{"kiln/twice.cuh", "#pragma once\n" + twice}};
    EXPECT_TRUE(has_minimal(*compiled("#include \"kiln/twice.cuh\"\n" + kernel, with_header)));
    // Options the user gives stay as given, -minimal added after them.
    const auto program = compiled(twice + kernel, {"-DN=4"});
    const std::vector<std::string> expected = {"-DN=4", std::string(kiln::detail::kMinimalOption)};
    const auto& given = program->nvrtc_options();
    EXPECT_TRUE(std::search(given.begin(), given.end(), expected.begin(), expected.end()) !=
                given.end());
}

// A compile that fails with -minimal is compiled again as given; a user's own error is reported
// from that compile, with the options the user gave.
TEST(MinimalFrontEnd, ACompileThatFailsWithItIsCompiledAgainWithoutIt) {
    kiln::CompileOptions given = kiln::CompileOptions::for_arch("sm_90");
    std::vector<std::vector<std::string>> tried;
    const auto program = kiln::detail::compile_front_end_fallback(
        given, true, [&](const kiln::CompileOptions& o) -> std::shared_ptr<const kiln::Program> {
            tried.push_back(o.options);
            if (!o.options.empty()) throw kiln::CompileError("as -minimal would fail", "", {}, "");
            return kiln::compile("extern \"C\" __global__ void k() {}\n", o);
        });
    ASSERT_EQ(tried.size(), 2u);
    EXPECT_EQ(tried[0], std::vector<std::string>{std::string(kiln::detail::kMinimalOption)});
    EXPECT_TRUE(tried[1].empty());
    EXPECT_FALSE(has_minimal(*program));

    const kiln::RawModule broken("extern \"C\" __global__ void k(float* x) { x[0] = oops; }\n",
                                 kiln::CompileOptions::for_arch("sm_90"));
    try {
        broken.compile();
        ADD_FAILURE() << "compiled";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(e.log().find("oops"), std::string::npos) << e.log();
        for (const auto& option : e.options())
            EXPECT_NE(option, kiln::detail::kMinimalOption);
    }
}

} // namespace
