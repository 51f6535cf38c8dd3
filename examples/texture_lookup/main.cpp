// A horizontal blur of an image through a texture: each output pixel is a weighted sum of five
// samples taken half a pixel apart, so the texture unit's linear filtering interpolates between
// pixels and its clamp addressing handles the edges. The weights live in a `__constant__` table,
// which every thread of a warp reads at the same address (one broadcast per read); the host writes
// them with RawModule::get_global, so new weights need no recompile. The result is
// checked against the same computation on the host. Without a GPU, the kernel is only compiled
// (for sm_90), which needs no device.
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr int kTaps = 5;
constexpr float kWeights[kTaps] = {0.1f, 0.2f, 0.4f, 0.2f, 0.1f};

constexpr const char* kSource = R"(
__constant__ float kWeights[5];

extern "C" __global__ void blur(cudaTextureObject_t image, float* out, int width, int height) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float sum = 0.0f;
    for (int k = 0; k < 5; ++k)
        sum += kWeights[k] * tex2D<float>(image, x + 0.5f + 0.5f * (k - 2), y + 0.5f);
    out[y * width + x] = sum;
}
)";

// The texture unit's fetch at column c (unnormalized, linear, clamped) of one row, on the host.
// Offsets of half a pixel give weights of exactly 1/2, which its 9-bit weights hold.
float fetch(const std::vector<float>& row, float c) {
    const float shifted = c - 0.5f;
    const int base = static_cast<int>(std::floor(shifted));
    const float frac = shifted - static_cast<float>(base);
    auto at = [&](int i) {
        const int last = static_cast<int>(row.size()) - 1;
        return row[static_cast<std::size_t>(i < 0 ? 0 : i > last ? last : i)];
    };
    return (1 - frac) * at(base) + frac * at(base + 1);
}

} // namespace

int main() {
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            kiln::RawModule offline(kSource, kiln::CompileOptions::for_arch("sm_90"));
            std::printf("no GPU (%s): compiled the blur for sm_90 only (%zu cubin bytes)\n",
                        reason.c_str(), offline.compile()->cubin().size());
            return 0;
        }
        const int width = 640, height = 480;
        std::vector<float> pixels(static_cast<std::size_t>(width) * height);
        for (std::size_t i = 0; i < pixels.size(); ++i)
            pixels[i] = static_cast<float>((i * 2654435761U) % 1000U) / 1000.0f;

        kiln::TextureOptions options;
        options.filter = kiln::FilterMode::linear;
        options.address_all(kiln::AddressMode::clamp);
        kiln::Texture image(kiln::CudaArray::from(kiln::from_host(pixels, {height, width})),
                            options);
        kiln::Array out = kiln::empty({height, width}, kiln::DType::float32);

        kiln::RawModule module(kSource);
        module.get_global("kWeights").copy_from_host(kWeights); // ordered before the launch
        module.get_function("blur")({(width + 31) / 32, (height + 7) / 8}, {32, 8}, image,
                                    out.data<float>(), width, height);
        const std::vector<float> got = out.to_host<float>();

        double worst = 0;
        const auto w = static_cast<std::size_t>(width);
        for (std::size_t y = 0; y < static_cast<std::size_t>(height); ++y) {
            const std::vector<float> source(pixels.begin() + static_cast<std::ptrdiff_t>(y * w),
                                            pixels.begin() +
                                                static_cast<std::ptrdiff_t>((y + 1) * w));
            for (std::size_t x = 0; x < w; ++x) {
                float want = 0;
                for (int k = 0; k < kTaps; ++k)
                    want += kWeights[k] * fetch(source, static_cast<float>(x) + 0.5f +
                                                            0.5f * static_cast<float>(k - 2));
                worst = std::fmax(worst, std::fabs(want - got[y * w + x]));
            }
        }
        std::printf("blurred a %dx%d image through a texture; largest difference from the host: "
                    "%.2g\n",
                    width, height, worst);
        return worst < 1e-5 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "texture_lookup: %s\n", e.what());
        return 1;
    }
}
