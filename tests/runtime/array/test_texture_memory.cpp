// Textures over an Array's own memory and kiln::empty_pitched, over the fake driver (no GPU): the
// device looks like an H100 (texture alignment 512 bytes, pitch alignment 32), and the test reads
// back the resource each texture gave cuTexObjectCreate. What a layout the device cannot read
// gets, before any texture is made. test_texture_gpu.cpp samples such textures on a GPU.

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>

using kiln::AddressMode;
using kiln::Array;
using kiln::DType;
using kiln::FilterMode;
using kiln::ReadMode;
using kiln::Slice;
using kiln::Texture;
using kiln::TextureOptions;
using kiln::TextureResource;

namespace {

struct LastTexture {
    CUDA_RESOURCE_DESC resource{};
    CUDA_TEXTURE_DESC description{};
};

LastTexture last_texture() {
    kiln::Device::count(); // loads the driver
    void* driver = dlopen(std::getenv("KILN_DRIVER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    using Get = void (*)(CUDA_RESOURCE_DESC*, CUDA_TEXTURE_DESC*);
    const auto get = reinterpret_cast<Get>(dlsym(driver, "kiln_fake_driver_last_texture"));
    LastTexture last;
    if (!get) {
        ADD_FAILURE() << "not run over the fake driver";
        return last;
    }
    get(&last.resource, &last.description);
    return last;
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

constexpr CUdeviceptr kAlignment = 512;      // the fake H100's texture alignment
constexpr std::int64_t kPitchAlignment = 32; // and its texture pitch alignment

} // namespace

TEST(TextureMemory, EmptyPitchedPadsEachRowAndAlignsTheFirstElement) {
    struct Case {
        kiln::Dims shape;
        DType dtype;
        std::int64_t pitch;
    };
    const Case cases[] = {{{100, 33}, DType::float32, 160}, // 132 bytes a row, padded
                          {{3, 64}, DType::float32, 256},   // already a multiple
                          {{7, 5, 4}, DType::uint8, 32},    // 4 channels: 20 bytes a row
                          {{9, 3}, DType::float16, 32},
                          {{1000}, DType::float32, 4}}; // 1-D: aligned, no rows to pad
    for (const Case& c : cases) {
        SCOPED_TRACE(c.shape.to_string());
        for (int repeat = 0; repeat < 3; ++repeat) { // allocations land at different offsets
            const Array a = kiln::empty_pitched(c.shape, c.dtype);
            EXPECT_EQ(a.shape(), c.shape);
            EXPECT_EQ(a.dtype(), c.dtype);
            EXPECT_EQ(a.strides()[0], c.pitch);
            EXPECT_EQ(a.data() % kAlignment, 0u);
            EXPECT_EQ(a.strides()[0] % (c.shape.size() > 1 ? kPitchAlignment : 1), 0);
            if (c.shape.size() > 1)
                EXPECT_EQ(a.strides()[c.shape.size() - 1], static_cast<std::int64_t>(a.itemsize()));
            EXPECT_NE(a.owner(), nullptr);
        }
    }
    EXPECT_EQ(kiln::empty_pitched({0, 5}, DType::float32).size(), 0);
    EXPECT_TRUE(has(argument_error_of([] { kiln::empty_pitched({}, DType::float32); }), "0-d"));
    EXPECT_TRUE(has(argument_error_of([] {
                        kiln::empty_pitched({-2, 5}, DType::float32);
                    }),
                    "(-2, 5)"));
}

TEST(TextureMemory, ATwoDimensionalArrayIsAPitchedResourceAtItsRowStride) {
    const Array rows = kiln::empty_pitched({100, 33}, DType::float32);
    TextureOptions options;
    options.filter = FilterMode::linear;
    options.normalized_coordinates = true;
    options.address_all(AddressMode::wrap);
    const Texture t(rows, options);
    EXPECT_EQ(t.resource(), TextureResource::pitch2d);
    EXPECT_NE(t.get(), 0u);
    EXPECT_EQ(t.viewed_memory().data(), rows.data());
    const LastTexture last = last_texture();
    ASSERT_EQ(last.resource.resType, CU_RESOURCE_TYPE_PITCH2D);
    EXPECT_EQ(last.resource.res.pitch2D.devPtr, rows.data());
    EXPECT_EQ(last.resource.res.pitch2D.format, CU_AD_FORMAT_FLOAT);
    EXPECT_EQ(last.resource.res.pitch2D.numChannels, 1u);
    EXPECT_EQ(last.resource.res.pitch2D.width, 33u);
    EXPECT_EQ(last.resource.res.pitch2D.height, 100u);
    EXPECT_EQ(last.resource.res.pitch2D.pitchInBytes, 160u);
    EXPECT_EQ(last.description.filterMode, CU_TR_FILTER_MODE_LINEAR);
    EXPECT_EQ(last.description.addressMode[0], CU_TR_ADDRESS_MODE_WRAP);
    EXPECT_EQ(last.description.addressMode[1], CU_TR_ADDRESS_MODE_WRAP);
    EXPECT_EQ(last.description.addressMode[2], CU_TR_ADDRESS_MODE_CLAMP); // no third dimension
    EXPECT_TRUE(last.description.flags & CU_TRSF_NORMALIZED_COORDINATES);

    // A view of the first columns keeps the parent's pitch; four uchar channels per element.
    const Array wide = kiln::empty_pitched({16, 64}, DType::float32);
    const Texture left(wide.slice({Slice::all(), Slice::range(0, 8)}));
    EXPECT_EQ(last_texture().resource.res.pitch2D.pitchInBytes, 256u);
    EXPECT_EQ(last_texture().resource.res.pitch2D.width, 8u);
    const Array rgba = kiln::empty_pitched({7, 5, 4}, DType::uint8);
    TextureOptions normalized;
    normalized.read = ReadMode::normalized_float;
    const Texture colour(rgba, normalized, 4);
    const LastTexture c = last_texture();
    EXPECT_EQ(c.resource.res.pitch2D.numChannels, 4u);
    EXPECT_EQ(c.resource.res.pitch2D.width, 5u);
    EXPECT_EQ(c.resource.res.pitch2D.format, CU_AD_FORMAT_UNSIGNED_INT8);
    EXPECT_FALSE(c.description.flags & CU_TRSF_READ_AS_INTEGER);

    // One row: its stride is never read, so any row length will do.
    const Texture one_row(Array::wrap(rows.data(), {1, 5}, DType::float32, {20, 4}));
    EXPECT_EQ(last_texture().resource.res.pitch2D.pitchInBytes, 32u);
}

TEST(TextureMemory, AOneDimensionalArrayIsALinearResource) {
    const Array x = kiln::empty_pitched({1000}, DType::int16);
    Texture t(x);
    EXPECT_EQ(t.resource(), TextureResource::linear);
    LastTexture last = last_texture();
    ASSERT_EQ(last.resource.resType, CU_RESOURCE_TYPE_LINEAR);
    EXPECT_EQ(last.resource.res.linear.devPtr, x.data());
    EXPECT_EQ(last.resource.res.linear.format, CU_AD_FORMAT_SIGNED_INT16);
    EXPECT_EQ(last.resource.res.linear.sizeInBytes, 2000u);
    EXPECT_TRUE(last.description.flags & CU_TRSF_READ_AS_INTEGER);

    const Array pairs = kiln::empty_pitched({600}, DType::float32).reshape({300, 2});
    const Texture p(pairs, {}, 2); // (n, 2): float2 elements
    last = last_texture();
    ASSERT_EQ(last.resource.resType, CU_RESOURCE_TYPE_LINEAR);
    EXPECT_EQ(last.resource.res.linear.numChannels, 2u);
    EXPECT_EQ(last.resource.res.linear.sizeInBytes, 2400u);

    // (300, 2) from empty_pitched is 300 rows of one float2 each, 32 bytes apart: not linear.
    const Array rows_of_pairs = kiln::empty_pitched({300, 2}, DType::float32);
    EXPECT_TRUE(has(argument_error_of([&] { Texture bad(rows_of_pairs, {}, 2); }), "side by side"));

    // Moving keeps the view and the kind.
    Texture moved(std::move(t));
    EXPECT_EQ(moved.resource(), TextureResource::linear);
    EXPECT_EQ(moved.viewed_memory().data(), x.data());
}

TEST(TextureMemory, LayoutsTheDeviceCannotReadAreRefusedWithTheWayOut) {
    const Array base = kiln::empty_pitched({64, 64}, DType::float32); // aligned, pitch 256
    const CUdeviceptr at = base.data();
    // Rows 20 bytes apart: not a multiple of the pitch alignment.
    std::string e = argument_error_of([&] { Texture t(Array::wrap(at, {10, 5}, DType::float32)); });
    EXPECT_TRUE(has(e, "multiple of 32")) << e;
    EXPECT_TRUE(has(e, "20 bytes apart")) << e;
    EXPECT_TRUE(has(e, "kiln::empty_pitched")) << e;
    // A view that starts inside a row: the first element is not aligned.
    e = argument_error_of([&] { Texture t(base.slice({Slice::all(), Slice::range(1, 9)})); });
    EXPECT_TRUE(has(e, "multiple of 512")) << e;
    EXPECT_TRUE(has(e, "4 bytes past")) << e;
    e = argument_error_of([&] { Texture t(Array::wrap(at + 256, {100}, DType::float32)); });
    EXPECT_TRUE(has(e, "256 bytes past")) << e;
    // Rows whose elements are not side by side, rows backwards or repeated.
    e = argument_error_of([&] { Texture t(base.transpose()); });
    EXPECT_TRUE(has(e, "side by side")) << e;
    e = argument_error_of([&] {
        Texture t(Array::wrap(at + 63 * 256, {64, 8}, DType::float32, {-256, 4}));
    });
    EXPECT_TRUE(has(e, "at least their length")) << e;
    e = argument_error_of([&] {
        Texture t(base.slice({0}).reshape({1, 64}).broadcast_to({8, 64}));
    });
    EXPECT_TRUE(has(e, "at least their length")) << e;
    // Shapes, types and channels a texture does not hold.
    e = argument_error_of([&] { Texture t(Array::wrap(at, {2, 4, 8}, DType::float32)); });
    EXPECT_TRUE(has(e, "CudaArray")) << e;
    e = argument_error_of([&] { Texture t(Array::wrap(at, {8, 8}, DType::float64)); });
    EXPECT_TRUE(has(e, "float64")) << e;
    e = argument_error_of([&] { Texture t(Array::wrap(at, {8, 3}, DType::float32), {}, 4); });
    EXPECT_TRUE(has(e, "4 channels")) << e;
    e = argument_error_of([&] { Texture t(Array::wrap(at, {8, 3}, DType::float32), {}, 3); });
    EXPECT_TRUE(has(e, "1, 2 or 4 channels")) << e;
    e = argument_error_of([&] { Texture t(Array{}); });
    EXPECT_TRUE(has(e, "empty")) << e;
    // Sampling a linear resource cannot do, and options no texture takes.
    TextureOptions linear;
    linear.filter = FilterMode::linear;
    e = argument_error_of([&] { Texture t(Array::wrap(at, {100}, DType::float32), linear); });
    EXPECT_TRUE(has(e, "tex1Dfetch")) << e;
    TextureOptions wrapped;
    wrapped.normalized_coordinates = true;
    wrapped.address_all(AddressMode::wrap);
    e = argument_error_of([&] { Texture t(Array::wrap(at, {100}, DType::float32), wrapped); });
    EXPECT_TRUE(has(e, "tex1Dfetch")) << e;
    e = argument_error_of([&] { Texture t(Array::wrap(at, {8, 8}, DType::int32), linear); });
    EXPECT_TRUE(has(e, "linear filtering gives floats")) << e;
    // kiln::copy fills pitched arrays on one device, but not from a layout without rows in order.
    e = argument_error_of([&] {
        kiln::copy(kiln::empty_pitched({64, 64}, DType::float32), base.transpose());
    });
    EXPECT_TRUE(has(e, "C-contiguous rows")) << e;
    // Extents over the device's limits (an H100's: 131072 wide, 65000 high).
    e = argument_error_of([&] {
        Texture t(Array::wrap(at, {2, 140000}, DType::uint8, {140032, 1}));
    });
    EXPECT_TRUE(has(e, "width of 131072")) << e;
}
