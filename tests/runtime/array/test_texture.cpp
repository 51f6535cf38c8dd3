// Textures and surfaces without a GPU: what a CudaArray, a Texture and a Surface refuse before
// any device work, how they pass to a launch (as 64-bit handles), and ElementwiseKernels that take
// a texture, whose generated code NVRTC compiles for sm_90 (texture functions stay declared).

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

using kiln::Arg;
using kiln::Array;
using kiln::CudaArray;
using kiln::CudaArrayFormat;
using kiln::DType;
using kiln::Surface;
using kiln::Texture;

namespace {

Array fake(const kiln::Dims& shape, DType dtype) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28;
    return Array::wrap(next, shape, dtype);
}

template <class F> std::string argument_error_of(F&& f) {
    try {
        f();
    } catch (const kiln::ArgumentError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("another error: ") + e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST(Texture, CudaArraysRefuseWhatTheHardwareCannotHold) {
    EXPECT_TRUE(has(argument_error_of([] {
                        CudaArray a(CudaArrayFormat{8, 0, 0, DType::float64, 1, false});
                    }),
                    "float64"));
    EXPECT_TRUE(has(argument_error_of([] {
                        CudaArray a(CudaArrayFormat{8, 0, 0, DType::float32, 3, false});
                    }),
                    "1, 2 or 4 channels"));
    EXPECT_TRUE(has(argument_error_of([] {
                        CudaArray::from(fake({2, 3, 4, 5}, DType::float32));
                    }),
                    "(2, 3, 4, 5)"));
    EXPECT_TRUE(has(argument_error_of([] {
                        CudaArray::from(fake({480, 640, 3}, DType::uint8), 4);
                    }),
                    "4 channels"));
    EXPECT_TRUE(has(argument_error_of([] { Texture t{CudaArray{}}; }), "empty"));
    EXPECT_TRUE(has(argument_error_of([] { Surface s{CudaArray{}}; }), "empty"));
}

TEST(Texture, AFormatGivesTheArrayShapeWithChannelsLast) {
    CudaArrayFormat f{640, 480, 0, DType::uint8, 4, false};
    EXPECT_EQ(f.ndim(), 2);
    EXPECT_EQ((CudaArrayFormat{8, 0, 0, DType::float32, 1, false}.ndim()), 1);
    EXPECT_EQ((CudaArrayFormat{8, 4, 2, DType::float32, 1, false}.ndim()), 3);
    const CudaArray empty;
    EXPECT_EQ(empty.get(), nullptr);
}

TEST(Texture, LaunchesTakeTexturesAndSurfacesAsTheirHandles) {
    const Texture texture;
    const Surface surface;
    kiln::detail::PackedArguments<Texture, int, Surface> packed(texture, 7, surface);
    EXPECT_EQ(packed.count(), 3U);
    EXPECT_EQ(packed.sizes()[0], sizeof(CUtexObject));
    EXPECT_EQ(packed.sizes()[0], 8U);
    EXPECT_EQ(packed.sizes()[2], 8U);
    std::uint64_t handle = 1;
    std::memcpy(&handle, packed.pointers()[0], 8);
    EXPECT_EQ(handle, texture.get());
}

TEST(Texture, ElementwiseKernelsCompileWithATextureParameter) {
    const Texture texture; // handle 0: enough to describe a call
    Array x = fake({1000}, DType::float32);
    kiln::ElementwiseKernel handle("cudaTextureObject_t tex, float32 x", "float32 y",
                                   "y = tex1D<float>(tex, x)", "sample_handle");
    kiln::ElementwiseKernel placeholder("T tex, U x", "U y", "y = tex2D<float>(tex, x, 0.5f)",
                                        "sample_placeholder");
    const std::array<Arg, 2> args{Arg(texture), Arg(x)};
    EXPECT_TRUE(handle.compile_for(args.data(), args.size(), {}, "sm_90"));
    EXPECT_TRUE(placeholder.compile_for(args.data(), args.size(), {}, "sm_90"));
    const std::string src = placeholder.source_for(args.data(), args.size());
    EXPECT_TRUE(has(src, "typedef unsigned long long T;")) << src;

    kiln::ElementwiseKernel surfaces("cudaSurfaceObject_t s, float32 x", "float32 y",
                                     "surf1Dwrite(x, s, int(i) * 4); y = x", "write_surface");
    const std::array<Arg, 2> surface_args{Arg(Surface{}), Arg(x)};
    EXPECT_TRUE(surfaces.compile_for(surface_args.data(), surface_args.size(), {}, "sm_90"));
}

TEST(Texture, ElementwiseKernelsRefuseATextureWhereANumberGoesAndTheOtherWayRound) {
    const Texture texture;
    Array x = fake({16}, DType::float32);
    kiln::ElementwiseKernel handle("cudaTextureObject_t tex, float32 x", "float32 y",
                                   "y = tex1D<float>(tex, x)", "sample_handle");
    const std::array<Arg, 2> number{Arg(1.0), Arg(x)};
    EXPECT_TRUE(has(argument_error_of([&] { handle.source_for(number.data(), 2); }),
                    "give it a kiln::Texture"));
    kiln::ElementwiseKernel wrong("float32 tex, float32 x", "float32 y", "y = tex + x", "wrong");
    const std::array<Arg, 2> texture_args{Arg(texture), Arg(x)};
    EXPECT_TRUE(has(argument_error_of([&] { wrong.source_for(texture_args.data(), 2); }),
                    "a texture is given"));
    kiln::ElementwiseKernel same("T tex, T x", "T y", "y = x", "same_placeholder");
    EXPECT_TRUE(has(argument_error_of([&] { same.source_for(texture_args.data(), 2); }),
                    "is float32, but a texture is given"))
        << "an array binds T to float32 first";
    kiln::ElementwiseKernel plain("uint64 tex, float32 x", "float32 y", "y = x", "plain_uint64");
    EXPECT_TRUE(has(argument_error_of([&] { plain.source_for(texture_args.data(), 2); }),
                    "declare it cudaTextureObject_t"));
}

TEST(Texture, RawModulesUsingTexturesAndSurfacesCompileForAnyArchitecture) {
    kiln::RawModule module(R"(
extern "C" __global__ void copy_through(cudaTextureObject_t t, cudaSurfaceObject_t s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) surf1Dwrite(tex1Dfetch<float>(t, i) + tex3D<float>(t, 0.5f, 0.5f, 0.5f), s, i * 4);
})",
                           kiln::CompileOptions::for_arch("sm_90"));
    EXPECT_TRUE(module.compile());
}
