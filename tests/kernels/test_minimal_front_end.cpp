// Generated kernels compile with NVRTC's -minimal front end where nothing they use needs what it
// removes, and the cubin is the one the full front end gives, byte for byte (each source compiled
// here by NVRTC both ways, under one program name). Where a kernel does need something -minimal
// removes (a texture parameter, a toolkit header, a device-side launch), it keeps the full front
// end and still compiles.

#include "device_headers.hpp"
#include "kiln/kiln.hpp"
#include "minimal_front_end.hpp"

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
}

} // namespace
