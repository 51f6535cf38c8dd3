// Textures and surfaces on the GPU: every filter and address mode on 1-, 2- and 3-D CUDA arrays,
// with and without normalized coordinates, against a host model of the texture unit; integer
// textures read as elements and as normalized floats; 2- and 4-channel elements; surfaces
// written and read back; a texture passed to RawKernel and to ElementwiseKernel. Outputs are
// poisoned first. Sample points are chosen so that linear filtering's weights are multiples of
// 1/4, which the texture unit's 9-bit fixed-point weights (steps of 1/256) hold exactly: the
// host model then needs only float rounding's tolerance.

#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using kiln::AddressMode;
using kiln::Array;
using kiln::CudaArray;
using kiln::CudaArrayFormat;
using kiln::DType;
using kiln::FilterMode;
using kiln::ReadMode;
using kiln::Surface;
using kiln::Texture;
using kiln::TextureOptions;

namespace {

std::mt19937& rng() {
    static std::mt19937 engine(std::random_device{}());
    return engine;
}

std::vector<float> random_floats(std::size_t n) {
    std::uniform_real_distribution<float> dist(0.f, 1.f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng());
    return v;
}

constexpr const char* kFetch = R"(
extern "C" __global__ void fetch1(cudaTextureObject_t t, const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, x[i]);
}
extern "C" __global__ void fetch2(cudaTextureObject_t t, const float* x, const float* y,
                                  float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, x[i], y[i]);
}
extern "C" __global__ void fetch3(cudaTextureObject_t t, const float* x, const float* y,
                                  const float* z, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float>(t, x[i], y[i], z[i]);
}
)";

// The host model of one texture fetch of a one-channel float texture.
struct Model {
    std::array<int, 3> size{1, 1, 1}; // width, height, depth
    int ndim = 1;
    const std::vector<float>* data = nullptr; // C order: (d, h, w)
    TextureOptions options;

    // Element i along dimension k after addressing; -1 for the border.
    int address(int i, int k) const {
        const int n = size[static_cast<std::size_t>(k)];
        switch (options.address[static_cast<std::size_t>(k)]) {
        case AddressMode::clamp:
            return std::min(std::max(i, 0), n - 1);
        case AddressMode::border:
            return i < 0 || i >= n ? -1 : i;
        case AddressMode::wrap:
            return ((i % n) + n) % n;
        case AddressMode::mirror: {
            const int m = ((i % (2 * n)) + 2 * n) % (2 * n);
            return m < n ? m : 2 * n - 1 - m;
        }
        }
        return i;
    }

    float element(const std::array<int, 3>& at) const {
        std::array<int, 3> idx{};
        for (int k = 0; k < 3; ++k) {
            idx[static_cast<std::size_t>(k)] =
                k < ndim ? address(at[static_cast<std::size_t>(k)], k) : 0;
            if (idx[static_cast<std::size_t>(k)] < 0) return options.border_color[0];
        }
        const std::size_t at_x = static_cast<std::size_t>(idx[0]),
                          at_y = static_cast<std::size_t>(idx[1]),
                          at_z = static_cast<std::size_t>(idx[2]);
        const std::size_t width = static_cast<std::size_t>(size[0]),
                          height = static_cast<std::size_t>(size[1]);
        return (*data)[(at_z * height + at_y) * width + at_x];
    }

    // The fetch at coordinates @p c (normalized or not, as the options say).
    double fetch(std::array<float, 3> c) const {
        for (int k = 0; k < ndim; ++k)
            if (options.normalized_coordinates)
                c[static_cast<std::size_t>(k)] *=
                    static_cast<float>(size[static_cast<std::size_t>(k)]);
        if (options.filter == FilterMode::point) {
            std::array<int, 3> at{};
            for (int k = 0; k < ndim; ++k)
                at[static_cast<std::size_t>(k)] =
                    static_cast<int>(std::floor(c[static_cast<std::size_t>(k)]));
            return element(at);
        }
        std::array<int, 3> base{};
        std::array<double, 3> frac{};
        for (int k = 0; k < ndim; ++k) {
            const double shifted = static_cast<double>(c[static_cast<std::size_t>(k)]) - 0.5;
            base[static_cast<std::size_t>(k)] = static_cast<int>(std::floor(shifted));
            frac[static_cast<std::size_t>(k)] = shifted - std::floor(shifted);
        }
        double sum = 0;
        for (int corner = 0; corner < (1 << ndim); ++corner) {
            std::array<int, 3> at{};
            double weight = 1;
            for (int k = 0; k < ndim; ++k) {
                const bool high = (corner >> k) & 1;
                at[static_cast<std::size_t>(k)] =
                    base[static_cast<std::size_t>(k)] + (high ? 1 : 0);
                weight *= high ? frac[static_cast<std::size_t>(k)]
                               : 1 - frac[static_cast<std::size_t>(k)];
            }
            sum += weight * element(at);
        }
        return sum;
    }
};

// Coordinates along a dimension of @p n elements: quarters from -n to 2n (beyond both edges),
// divided by n when normalized (exact: n is a power of two).
float coordinate(int n, bool normalized) {
    std::uniform_int_distribution<int> quarters(-4 * n, 8 * n);
    const float c = static_cast<float>(quarters(rng())) / 4.f;
    return normalized ? c / static_cast<float>(n) : c;
}

std::string describe(const TextureOptions& o, int ndim) {
    static const char* const modes[] = {"wrap", "clamp", "mirror", "border"};
    return std::to_string(ndim) + "-D, " + (o.filter == FilterMode::point ? "point" : "linear") +
           ", " + modes[static_cast<int>(o.address[0])] +
           (o.normalized_coordinates ? ", normalized coordinates" : "");
}

// A 2-D texture over an Array's own memory: the first columns of a wider kiln::empty_pitched
// allocation, so that the rows lie further apart than their length.
Texture pitched_texture(const std::vector<float>& data, const kiln::Dims& shape,
                        const TextureOptions& options) {
    Array wide = kiln::empty_pitched({shape[0], shape[1] + 24}, DType::float32);
    Array rows = wide.slice({kiln::Slice::all(), kiln::Slice::range(0, shape[1])});
    kiln::copy(rows, kiln::from_host(data, shape));
    Texture texture(rows, options);
    EXPECT_EQ(texture.resource(), kiln::TextureResource::pitch2d);
    EXPECT_GT(rows.strides()[0], static_cast<std::int64_t>(shape[1] * sizeof(float)));
    return texture;
}

// Fetch @p count random points of a float texture of @p size through the fetch kernels and
// compare with the model. @p over_memory: a 2-D texture over pitched memory instead of a
// CudaArray.
void check_fetches(const kiln::RawModule& module, const std::array<int, 3>& size, int ndim,
                   const TextureOptions& options, bool over_memory = false) {
    std::vector<float> data = random_floats(static_cast<std::size_t>(size[0]) * size[1] * size[2]);
    kiln::Dims shape;
    if (ndim == 3) shape.push_back(size[2]);
    if (ndim >= 2) shape.push_back(size[1]);
    shape.push_back(size[0]);
    Texture texture = over_memory ? pitched_texture(data, shape, options)
                                  : Texture(CudaArray::from(kiln::from_host(data, shape)), options);
    Model model{size, ndim, &data, options};

    const int n = 600;
    std::array<std::vector<float>, 3> coords;
    for (int k = 0; k < 3; ++k)
        for (int i = 0; i < n; ++i)
            coords[static_cast<std::size_t>(k)].push_back(
                coordinate(size[static_cast<std::size_t>(k)], options.normalized_coordinates));
    Array x = kiln::from_host(coords[0]), y = kiln::from_host(coords[1]),
          z = kiln::from_host(coords[2]);
    Array out = kiln::full({n}, std::nan(""), DType::float32);

    const kiln::Dim3 grid{(n + 127) / 128}, block{128};
    if (ndim == 1)
        module.get_function("fetch1")(grid, block, texture, x.data<float>(), out.data<float>(), n);
    else if (ndim == 2)
        module.get_function("fetch2")(grid, block, texture, x.data<float>(), y.data<float>(),
                                      out.data<float>(), n);
    else
        module.get_function("fetch3")(grid, block, texture, x.data<float>(), y.data<float>(),
                                      z.data<float>(), out.data<float>(), n);
    const std::vector<float> got = out.to_host<float>();
    // Every mismatch is counted and the first few shown with the data, so one run tells a wrong
    // model from a wrong texture.
    int mismatches = 0;
    std::string shown;
    for (int i = 0; i < n; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double want = model.fetch({coords[0][u], coords[1][u], coords[2][u]});
        if (std::fabs(got[u] - want) <= 2e-6) continue;
        if (++mismatches <= 6)
            shown += "  at (" + std::to_string(coords[0][u]) + ", " + std::to_string(coords[1][u]) +
                     ", " + std::to_string(coords[2][u]) + "): got " + std::to_string(got[u]) +
                     ", want " + std::to_string(want) + "\n";
    }
    if (mismatches) {
        std::string row;
        for (std::size_t k = 0; k < std::min<std::size_t>(data.size(), 8); ++k)
            row += std::to_string(data[k]) + " ";
        ADD_FAILURE() << (over_memory ? "pitched memory, " : "") << describe(options, ndim) << ": "
                      << mismatches << " of " << n << " fetches differ from the model; data starts "
                      << row << "\n"
                      << shown;
    }
}

} // namespace

TEST(TextureGpu, EveryFilterAndAddressModeOnEachDimensionality) {
    KILN_REQUIRE_GPU();
    const std::array<std::array<int, 3>, 3> sizes{{{8, 1, 1}, {8, 4, 1}, {4, 4, 2}}};
    const kiln::RawModule module(kFetch);
    for (int ndim = 1; ndim <= 3; ++ndim)
        for (FilterMode filter : {FilterMode::point, FilterMode::linear})
            for (AddressMode mode :
                 {AddressMode::clamp, AddressMode::border, AddressMode::wrap, AddressMode::mirror})
                for (bool normalized : {false, true}) {
                    // Wrap and mirror are defined on normalized coordinates only.
                    if (!normalized && (mode == AddressMode::wrap || mode == AddressMode::mirror))
                        continue;
                    TextureOptions options;
                    options.address_all(mode);
                    options.filter = filter;
                    options.normalized_coordinates = normalized;
                    options.border_color = {0.25f, 0.f, 0.f, 0.f};
                    check_fetches(module, sizes[static_cast<std::size_t>(ndim - 1)], ndim, options);
                    if (HasFatalFailure()) return;
                }
}

TEST(TextureGpu, IntegerTexturesReadAsElementsOrNormalizedFloats) {
    KILN_REQUIRE_GPU();
    const std::vector<std::uint8_t> bytes{0, 51, 102, 255};
    Array source = kiln::from_host(bytes, {4});
    kiln::RawKernel read_u8(R"(
extern "C" __global__ void read_u8(cudaTextureObject_t t, unsigned* out) {
    out[threadIdx.x] = tex1D<unsigned char>(t, threadIdx.x + 0.5f);
})",
                            "read_u8");
    Texture elements(CudaArray::from(source));
    Array got = kiln::full({4}, 0xdeadU, DType::uint32);
    read_u8({1}, {4}, elements, got.data<unsigned>());
    EXPECT_EQ(got.to_host<std::uint32_t>(), (std::vector<std::uint32_t>{0, 51, 102, 255}));

    kiln::RawKernel read_unorm(R"(
extern "C" __global__ void read_unorm(cudaTextureObject_t t, const float* x, float* out) {
    out[threadIdx.x] = tex1D<float>(t, x[threadIdx.x]);
})",
                               "read_unorm");
    TextureOptions linear;
    linear.filter = FilterMode::linear;
    linear.read = ReadMode::normalized_float;
    Texture unorm(CudaArray::from(source), linear);
    // Element centres, then halfway between elements 1 and 2, and a quarter past element 0.
    Array x = kiln::from_host(std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 2.0f, 0.75f});
    Array out = kiln::full({6}, std::nan(""), DType::float32);
    read_unorm({1}, {6}, unorm, x.data<float>(), out.data<float>());
    const std::vector<float> v = out.to_host<float>();
    const std::vector<double> want{0, 0.2, 0.4, 1.0, 0.3, 0.75 * 0 + 0.25 * 0.2};
    // Element centres read exactly; filtered values come from the texture unit's reduced-precision
    // blend (the H100 gives 0.30000764 for 0.3: within 2^-16).
    for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(v[i], want[i], i < 4 ? 1e-6 : 2e-5) << i;

    // Linear filtering of integers read as integers, normalized floats from 32-bit integers.
    TextureOptions linear_elements;
    linear_elements.filter = FilterMode::linear;
    EXPECT_THROW(Texture(CudaArray::from(source), linear_elements), kiln::ArgumentError);
    TextureOptions unorm32;
    unorm32.read = ReadMode::normalized_float;
    Array words = kiln::from_host(std::vector<std::int32_t>{1, 2}, {2});
    EXPECT_THROW(Texture(CudaArray::from(words), unorm32), kiln::ArgumentError);
}

TEST(TextureGpu, TwoAndFourChannelElements) {
    KILN_REQUIRE_GPU();
    // A (4, 3, 2) float32 array is a 4 x 3 texture of float2; a (2, 4) uint8 one 2 texels of
    // uchar4.
    constexpr std::size_t kPairs = std::size_t{4} * 3 * 2;
    std::vector<float> pairs = random_floats(kPairs);
    Texture float2s(CudaArray::from(kiln::from_host(pairs, {4, 3, 2}), 2));
    EXPECT_EQ(float2s.owned_array().format().width, 3U);
    EXPECT_EQ(float2s.owned_array().format().height, 4U);
    kiln::RawKernel read2(R"(
extern "C" __global__ void read2(cudaTextureObject_t t, float* out) {
    const int x = threadIdx.x, y = threadIdx.y;
    const float2 v = tex2D<float2>(t, x + 0.5f, y + 0.5f);
    out[(y * 3 + x) * 2] = v.x;
    out[(y * 3 + x) * 2 + 1] = v.y;
})",
                          "read2");
    Array out = kiln::full({std::int64_t{kPairs}}, std::nan(""), DType::float32);
    read2({1}, {3, 4}, float2s, out.data<float>());
    EXPECT_EQ(out.to_host<float>(), pairs);

    const std::vector<std::uint8_t> rgba{1, 2, 3, 4, 250, 251, 252, 253};
    Texture uchar4s(CudaArray::from(kiln::from_host(rgba, {2, 4}), 4));
    kiln::RawKernel read4(R"(
extern "C" __global__ void read4(cudaTextureObject_t t, unsigned* out) {
    const uchar4 v = tex1D<uchar4>(t, threadIdx.x + 0.5f);
    out[threadIdx.x] = v.x | v.y << 8 | v.z << 16 | unsigned(v.w) << 24;
})",
                          "read4");
    Array packed = kiln::full({2}, 0U, DType::uint32);
    read4({1}, {2}, uchar4s, packed.data<unsigned>());
    EXPECT_EQ(packed.to_host<std::uint32_t>(),
              (std::vector<std::uint32_t>{0x04030201U, 0xfdfcfbfaU}));

    EXPECT_THROW(CudaArray::from(kiln::from_host(rgba, {2, 4}), 2), kiln::ArgumentError)
        << "the last dimension must be the channels";
    EXPECT_THROW(CudaArray::from(kiln::from_host(rgba, {8}), 3), kiln::ArgumentError);
    EXPECT_THROW(CudaArray::from(kiln::zeros({4}, DType::float64)), kiln::ArgumentError);
}

TEST(SurfaceGpu, KernelsWriteEachDimensionalityAndTheHostReadsItBack) {
    KILN_REQUIRE_GPU();
    kiln::RawModule module(R"(
extern "C" __global__ void write1(cudaSurfaceObject_t s) {
    const int x = threadIdx.x;
    surf1Dwrite(x * 10.0f, s, x * sizeof(float));
}
extern "C" __global__ void write2(cudaSurfaceObject_t s) {
    const int x = threadIdx.x, y = threadIdx.y;
    surf2Dwrite(float(y * 100 + x), s, x * sizeof(float), y);
}
extern "C" __global__ void write3(cudaSurfaceObject_t s) {
    const int x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
    surf3Dwrite(float(z * 1000 + y * 100 + x), s, x * sizeof(float), y, z);
}
extern "C" __global__ void twice2(cudaSurfaceObject_t s) {
    const int x = threadIdx.x, y = threadIdx.y;
    const int v = surf2Dread<int>(s, x * sizeof(int), y);
    surf2Dwrite(2 * v, s, x * sizeof(int), y);
}
)");
    auto expected = [](int w, int h, int d) {
        std::vector<float> v;
        for (int z = 0; z < d; ++z)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x)
                    v.push_back(static_cast<float>(z * 1000 + y * 100 + x) *
                                (h == 1 && d == 1 ? 10.f : 1.f));
        return v;
    };
    {
        Surface s(CudaArray(CudaArrayFormat{16, 0, 0, DType::float32, 1, true}));
        module.get_function("write1")({1}, {16}, s);
        EXPECT_EQ(s.owned_array().to_array().to_host<float>(), expected(16, 1, 1));
    }
    {
        CudaArray target(CudaArrayFormat{8, 4, 0, DType::float32, 1, true});
        Surface s(target);
        module.get_function("write2")({1}, {8, 4}, s);
        Array back = target.to_array();
        EXPECT_EQ(back.shape(), (kiln::Dims{4, 8}));
        EXPECT_EQ(back.to_host<float>(), expected(8, 4, 1));
    }
    {
        CudaArray target(CudaArrayFormat{4, 3, 2, DType::float32, 1, true});
        Surface s(target);
        module.get_function("write3")({1}, {4, 3, 2}, s);
        Array back = kiln::full({2, 3, 4}, std::nan(""), DType::float32);
        target.copy_to(back);
        EXPECT_EQ(back.to_host<float>(), expected(4, 3, 2));
    }
    {
        std::vector<std::int32_t> values(std::size_t{6} * 5);
        for (std::size_t i = 0; i < values.size(); ++i)
            values[i] = static_cast<std::int32_t>(i) - 7;
        Surface s(CudaArray::from(kiln::from_host(values, {5, 6}), 1, true));
        module.get_function("twice2")({1}, {6, 5}, s);
        std::vector<std::int32_t> doubled = values;
        for (auto& v : doubled)
            v *= 2;
        EXPECT_EQ(s.owned_array().to_array().to_host<std::int32_t>(), doubled);
    }
    EXPECT_THROW(Surface(CudaArray::from(kiln::zeros({4}, DType::float32))), kiln::ArgumentError)
        << "an array made without surface_load_store";
}

TEST(TextureGpu, ElementwiseKernelsReadTexturesThroughAHandleOrAPlaceholder) {
    KILN_REQUIRE_GPU();
    std::vector<float> table = random_floats(64);
    TextureOptions linear;
    linear.filter = FilterMode::linear;
    Texture texture(CudaArray::from(kiln::from_host(table, {64})), linear);
    Model model{{64, 1, 1}, 1, &table, linear};
    std::vector<float> x;
    x.reserve(1000);
    for (int i = 0; i < 1000; ++i)
        x.push_back(static_cast<float>(i % 280) / 4.f - 2.f);
    Array xa = kiln::from_host(x);

    kiln::ElementwiseKernel handle("cudaTextureObject_t tex, float32 x", "float32 y",
                                   "y = tex1D<float>(tex, x)", "sample_handle");
    kiln::ElementwiseKernel placeholder("T tex, U x", "U y", "y = tex1D<float>(tex, x) * 2",
                                        "sample_placeholder");
    Array out = kiln::full({1000}, std::nan(""), DType::float32);
    handle(texture, xa, out);
    Array twice = placeholder(texture, xa);
    const std::vector<float> got = out.to_host<float>(), got2 = twice.to_host<float>();
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double want = model.fetch({x[i], 0.f, 0.f});
        ASSERT_NEAR(got[i], want, 2e-6) << "x = " << x[i];
        ASSERT_NEAR(got2[i], 2 * want, 4e-6) << "x = " << x[i];
    }
    EXPECT_THROW(handle(1.0, xa, out), kiln::ArgumentError) << "a number for a texture parameter";
    kiln::ElementwiseKernel wrong("float32 tex, float32 x", "float32 y", "y = tex + x", "wrong");
    EXPECT_THROW(wrong(texture, xa, out), kiln::ArgumentError) << "a texture for a float";
}

TEST(TextureGpu, PitchedMemorySamplesAsACudaArrayDoesInEveryMode) {
    KILN_REQUIRE_GPU();
    const kiln::Device device = kiln::Device::current();
    std::printf("[ texture limits ] alignment %d, pitch alignment %d, 1-D linear width %d, 2-D "
                "linear %d x %d, pitch %d bytes\n",
                device.attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT),
                device.attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT),
                device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH),
                device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH),
                device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT),
                device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH));
    const kiln::RawModule module(kFetch);
    const std::array<std::array<int, 3>, 2> sizes{{{8, 4, 1}, {16, 8, 1}}};
    for (const std::array<int, 3>& size : sizes)
        for (FilterMode filter : {FilterMode::point, FilterMode::linear})
            for (AddressMode mode :
                 {AddressMode::clamp, AddressMode::border, AddressMode::wrap, AddressMode::mirror})
                for (bool normalized : {false, true}) {
                    if (!normalized && (mode == AddressMode::wrap || mode == AddressMode::mirror))
                        continue;
                    TextureOptions options;
                    options.address_all(mode);
                    options.filter = filter;
                    options.normalized_coordinates = normalized;
                    options.border_color = {0.25f, 0.f, 0.f, 0.f};
                    check_fetches(module, size, 2, options, true);
                    if (HasFatalFailure()) return;
                }
}

TEST(TextureGpu, PitchedRowsOfAnyWidthReadEveryElementInPlace) {
    KILN_REQUIRE_GPU();
    // 33 floats a row (132 bytes): empty_pitched pads each row; every texel reads its element,
    // and writes through the Array show in the texture without a copy.
    const int h = 37, w = 33;
    std::vector<float> data = random_floats(static_cast<std::size_t>(h) * w);
    Array rows = kiln::empty_pitched({h, w}, DType::float32);
    kiln::copy(rows, kiln::from_host(data, {h, w}));
    Texture texture(rows);
    kiln::ElementwiseKernel read("cudaTextureObject_t t, int32 width", "float32 y",
                                 "y = tex2D<float>(t, i % width + 0.5f, i / width + 0.5f)",
                                 "read_pitched");
    Array out = kiln::full({h * w}, std::nan(""), DType::float32);
    read(texture, w, out);
    EXPECT_EQ(out.to_host<float>(), data);
    kiln::fill(rows, 2.5);
    read(texture, w, out);
    EXPECT_EQ(out.to_host<float>(), std::vector<float>(data.size(), 2.5f));
    // The host reads the pitched array back through its strides; kiln::copy packs its rows.
    EXPECT_EQ(rows.to_host<float>(), std::vector<float>(data.size(), 2.5f));
    kiln::copy(rows, kiln::from_host(data, {h, w}));
    Array packed = kiln::full({h, w}, -1.0, DType::float32);
    kiln::copy(packed, rows);
    EXPECT_EQ(packed.to_host<float>(), data);
    Array other = kiln::empty_pitched({h, w + 8}, DType::float32)
                      .slice({kiln::Slice::all(), kiln::Slice::range(0, w)});
    kiln::copy(other, rows); // pitched to pitched, different pitches
    EXPECT_EQ(other.to_host<float>(), data);

    // Two 16-bit channels per texel, read as normalized floats.
    std::vector<std::uint16_t> pairs(static_cast<std::size_t>(5) * 3 * 2);
    for (std::size_t k = 0; k < pairs.size(); ++k)
        pairs[k] = static_cast<std::uint16_t>(k * 2000);
    Array two = kiln::empty_pitched({5, 3, 2}, DType::uint16);
    kiln::copy(two, kiln::from_host(pairs, {5, 3, 2}));
    TextureOptions unorm;
    unorm.read = ReadMode::normalized_float;
    Texture channels(two, unorm, 2);
    kiln::RawKernel read2(R"(
extern "C" __global__ void read2(cudaTextureObject_t t, float* out) {
    const int x = threadIdx.x, y = threadIdx.y;
    const float2 v = tex2D<float2>(t, x + 0.5f, y + 0.5f);
    out[(y * 3 + x) * 2] = v.x;
    out[(y * 3 + x) * 2 + 1] = v.y;
})",
                          "read2");
    Array got = kiln::full({30}, std::nan(""), DType::float32);
    read2({1}, {3, 5}, channels, got.data<float>());
    const std::vector<float> v = got.to_host<float>();
    for (std::size_t k = 0; k < pairs.size(); ++k)
        EXPECT_NEAR(v[k], pairs[k] / 65535.0, 1e-6) << k;
}

TEST(TextureGpu, LinearMemoryIsFetchedByIndexWithZeroOutside) {
    KILN_REQUIRE_GPU();
    kiln::RawModule module(R"(
extern "C" __global__ void fetch_f(cudaTextureObject_t t, const int* at, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, at[i]);
}
extern "C" __global__ void fetch_i(cudaTextureObject_t t, const int* at, int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<short>(t, at[i]);
}
extern "C" __global__ void fetch_f4(cudaTextureObject_t t, const int* at, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float4 v = tex1Dfetch<float4>(t, at[i]);
        out[i] = v.x + 10 * v.y + 100 * v.z + 1000 * v.w;
    }
})");
    const int n = 100000;
    std::vector<int> at;
    std::uniform_int_distribution<int> pick(-50, n + 50);
    for (int k = 0; k < 5000; ++k)
        at.push_back(pick(rng()));
    at.insert(at.end(), {0, n - 1, -1, n, n + 1});
    const int m = static_cast<int>(at.size());
    Array where = kiln::from_host(at);
    const kiln::Dim3 grid{(m + 255) / 256}, block{256};

    // float32 in kiln::empty_pitched memory (its first element at the texture alignment).
    std::vector<float> values = random_floats(n);
    Array memory = kiln::empty_pitched({n}, DType::float32);
    kiln::copy(memory, kiln::from_host(values));
    Texture floats(memory);
    EXPECT_EQ(floats.resource(), kiln::TextureResource::linear);
    Array out = kiln::full({m}, std::nan(""), DType::float32);
    module.get_function("fetch_f")(grid, block, floats, where.data<int>(), out.data<float>(), m);
    std::vector<float> got = out.to_host<float>();
    for (int k = 0; k < m; ++k)
        ASSERT_EQ(got[k], at[k] >= 0 && at[k] < n ? values[at[k]] : 0.f) << "index " << at[k];

    // int16 read as elements.
    std::vector<std::int16_t> shorts(n);
    for (int k = 0; k < n; ++k)
        shorts[k] = static_cast<std::int16_t>(k * 7 - 30000);
    Array short_memory = kiln::empty_pitched({n}, DType::int16);
    kiln::copy(short_memory, kiln::from_host(shorts));
    Texture ints(short_memory);
    Array iout = kiln::full({m}, -1, DType::int32);
    module.get_function("fetch_i")(grid, block, ints, where.data<int>(), iout.data<int>(), m);
    const std::vector<std::int32_t> igot = iout.to_host<std::int32_t>();
    for (int k = 0; k < m; ++k)
        ASSERT_EQ(igot[k], at[k] >= 0 && at[k] < n ? shorts[at[k]] : 0) << "index " << at[k];

    // Four float channels per element: (n, 4), allocated 1-D (empty_pitched would pad (n, 4)'s
    // rows of one element each) and reshaped.
    const int n4 = 1000;
    std::vector<float> quads(static_cast<std::size_t>(n4) * 4);
    for (std::size_t k = 0; k < quads.size(); ++k)
        quads[k] = static_cast<float>(k % 4 + 1);
    Array quad_memory = kiln::empty_pitched({n4 * 4}, DType::float32).reshape({n4, 4});
    kiln::copy(quad_memory, kiln::from_host(quads, {n4, 4}));
    Texture float4s(quad_memory, {}, 4);
    EXPECT_EQ(float4s.resource(), kiln::TextureResource::linear);
    std::vector<int> first{0, 1, n4 - 1, n4, -3};
    Array w4 = kiln::from_host(first);
    Array out4 = kiln::full({5}, std::nan(""), DType::float32);
    module.get_function("fetch_f4")({1}, {5}, float4s, w4.data<int>(), out4.data<float>(), 5);
    EXPECT_EQ(out4.to_host<float>(), (std::vector<float>{4321, 4321, 4321, 0, 0}));
}

TEST(TextureGpu, MemoryTheDeviceCannotSampleIsRefusedBeforeTheDriverSeesIt) {
    KILN_REQUIRE_GPU();
    const kiln::Device device = kiln::Device::current();
    const int pitch_alignment = device.attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
    // Rows of 5 floats (20 bytes) are never a multiple of the pitch alignment (a power of two of
    // at least 32 bytes on the GPUs Kiln runs on).
    Array tight = kiln::empty_pitched({8, 5}, DType::float32);
    Array packed = Array::wrap(tight.data(), {8, 5}, DType::float32, {}, tight.owner());
    try {
        Texture t(packed);
        FAIL() << "rows 20 bytes apart made a texture";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("multiple of " + std::to_string(pitch_alignment)),
                  std::string::npos)
            << e.what();
    }
    Array pitched = kiln::empty_pitched({8, 64}, DType::float32);
    EXPECT_THROW(Texture(pitched.slice({kiln::Slice::all(), kiln::Slice::range(1, 9)})),
                 kiln::ArgumentError);
    EXPECT_THROW(Texture(pitched.transpose()), kiln::ArgumentError);
    EXPECT_THROW(Texture(kiln::empty_pitched({2, 4, 8}, DType::float32)), kiln::ArgumentError);
    EXPECT_THROW(Texture(kiln::empty_pitched({64}, DType::float64)), kiln::ArgumentError);
}
