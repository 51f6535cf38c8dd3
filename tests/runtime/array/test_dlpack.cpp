// DLPack import and export on the CPU, with fake device addresses: fields, dtypes, strides,
// offsets, and who calls which deleter when.

#include "kiln/dlpack.hpp"
#include "kiln/error.hpp"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace {

using kiln::Array;
using kiln::Dims;
using kiln::DType;

constexpr std::uintptr_t kBase = 0x10000;

// A DLManagedTensor made by hand, as a producer library would, counting its deleter's calls.
struct Producer {
    DLManagedTensor managed{};
    std::vector<std::int64_t> shape, strides;
    int deleted = 0;

    Producer(std::vector<std::int64_t> shape_values, std::vector<std::int64_t> stride_values,
             DLDataType dtype, DLDeviceType device = kDLCUDA, std::uint64_t byte_offset = 0)
        : shape(std::move(shape_values))
        , strides(std::move(stride_values)) {
        DLTensor& t = managed.dl_tensor;
        // NOLINTNEXTLINE(performance-no-int-to-ptr): a made-up device address, never dereferenced
        t.data = reinterpret_cast<void*>(kBase);
        t.device = {device, 0};
        t.ndim = static_cast<int>(shape.size());
        t.dtype = dtype;
        t.shape = shape.empty() ? nullptr : shape.data();
        t.strides = strides.empty() ? nullptr : strides.data();
        t.byte_offset = byte_offset;
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            ++static_cast<Producer*>(self->manager_ctx)->deleted;
        };
    }
};

DLDataType type(std::uint8_t code, std::uint8_t bits, std::uint16_t lanes = 1) {
    return DLDataType{code, bits, lanes};
}

// Deletes an exported tensor through its deleter unless the test did.
struct Exported {
    DLManagedTensor* tensor;
    explicit Exported(DLManagedTensor* t)
        : tensor(t) {}
    ~Exported() {
        if (tensor) tensor->deleter(tensor);
    }
    Exported(const Exported&) = delete;
    Exported& operator=(const Exported&) = delete;
    DLTensor& operator*() const { return tensor->dl_tensor; }
    void release() {
        tensor->deleter(tensor);
        tensor = nullptr;
    }
};

} // namespace

TEST(FromDlpack, ReadsShapeStridesDtypeAndOffset) {
    Producer p({2, 3}, {1, 2}, type(kDLFloat, 32), kDLCUDA, 64);
    Array a = kiln::from_dlpack(&p.managed);
    EXPECT_EQ(a.shape(), Dims({2, 3}));
    EXPECT_EQ(a.strides(), Dims({4, 8})); // elements -> bytes
    EXPECT_EQ(a.dtype(), DType::float32);
    EXPECT_EQ(a.data(), kBase + 64);
    EXPECT_TRUE(a.is_f_contiguous());
    EXPECT_NE(a.owner(), nullptr);
}

TEST(FromDlpack, NullStridesMeanCOrder) {
    Producer p({2, 3, 4}, {}, type(kDLInt, 16));
    Array a = kiln::from_dlpack(&p.managed);
    EXPECT_EQ(a.strides(), Dims({24, 8, 2}));
    EXPECT_EQ(a.dtype(), DType::int16);
    EXPECT_TRUE(a.is_c_contiguous());
}

TEST(FromDlpack, ZeroDimensionalAndNegativeStrides) {
    Producer scalar({}, {}, type(kDLComplex, 128));
    Array s = kiln::from_dlpack(&scalar.managed);
    EXPECT_EQ(s.ndim(), 0);
    EXPECT_EQ(s.size(), 1);
    EXPECT_EQ(s.dtype(), DType::complex128);
    Producer reversed({5}, {-1}, type(kDLFloat, 64), kDLCUDA, 32);
    Array r = kiln::from_dlpack(&reversed.managed);
    EXPECT_EQ(r.strides(), Dims({-8}));
    EXPECT_EQ(r.data(), kBase + 32);
}

TEST(FromDlpack, DeleterRunsOnceWhenTheLastViewDies) {
    Producer p({4, 4}, {}, type(kDLFloat, 32));
    Array a = kiln::from_dlpack(&p.managed);
    Array t = a.transpose();
    Array s = a.slice({1});
    Array copy = a;
    a = Array();
    EXPECT_EQ(p.deleted, 0);
    t = Array();
    copy = Array();
    EXPECT_EQ(p.deleted, 0);
    s = Array();
    EXPECT_EQ(p.deleted, 1);
}

TEST(FromDlpack, AcceptsManagedMemory) {
    Producer p({3}, {}, type(kDLUInt, 8), kDLCUDAManaged);
    EXPECT_EQ(kiln::from_dlpack(&p.managed).dtype(), DType::uint8);
    EXPECT_EQ(p.deleted, 1);
}

TEST(FromDlpack, RejectsOtherDevicesAndLeavesTheTensorToTheCaller) {
    for (DLDeviceType device : {kDLCPU, kDLCUDAHost, kDLROCM, kDLOpenCL}) {
        Producer p({3}, {}, type(kDLFloat, 32), device);
        EXPECT_THROW(kiln::from_dlpack(&p.managed), kiln::ArgumentError) << device;
        EXPECT_EQ(p.deleted, 0);
    }
    EXPECT_THROW(kiln::from_dlpack(nullptr), kiln::ArgumentError);
}

TEST(FromDlpack, RejectsWhatKilnCannotHold) {
    const DLDataType bad[] = {
        type(kDLFloat, 32, 4),         type(kDLInt, 24),     type(kDLFloat, 8),
        type(kDLBfloat, 32),           type(kDLComplex, 32), type(kDLOpaqueHandle, 64),
        type(kiln::kDLPackBoolCode, 1)};
    for (const DLDataType& t : bad) {
        Producer p({3}, {}, t);
        EXPECT_THROW(kiln::from_dlpack(&p.managed), kiln::ArgumentError)
            << int(t.code) << "/" << int(t.bits) << "x" << t.lanes;
        EXPECT_EQ(p.deleted, 0);
    }
    Producer negative({2, -1}, {}, type(kDLFloat, 32));
    EXPECT_THROW(kiln::from_dlpack(&negative.managed), kiln::ArgumentError);
    Producer deep(std::vector<std::int64_t>(17, 1), {}, type(kDLFloat, 32));
    EXPECT_THROW(kiln::from_dlpack(&deep.managed), kiln::ArgumentError);
    EXPECT_EQ(deep.deleted, 0);
}

TEST(FromDlpack, MapsEveryDtype) {
    struct Row {
        DLDataType dl;
        DType dtype;
    };
    const Row rows[] = {
        {type(kiln::kDLPackBoolCode, 8), DType::bool_},
        {type(kDLInt, 8), DType::int8},
        {type(kDLInt, 16), DType::int16},
        {type(kDLInt, 32), DType::int32},
        {type(kDLInt, 64), DType::int64},
        {type(kDLUInt, 8), DType::uint8},
        {type(kDLUInt, 16), DType::uint16},
        {type(kDLUInt, 32), DType::uint32},
        {type(kDLUInt, 64), DType::uint64},
        {type(kDLFloat, 16), DType::float16},
        {type(kDLBfloat, 16), DType::bfloat16},
        {type(kDLFloat, 32), DType::float32},
        {type(kDLFloat, 64), DType::float64},
        {type(kDLComplex, 64), DType::complex64},
        {type(kDLComplex, 128), DType::complex128},
    };
    for (const Row& row : rows) {
        Producer p({2}, {}, row.dl);
        Array a = kiln::from_dlpack(&p.managed);
        EXPECT_EQ(a.dtype(), row.dtype) << kiln::name(row.dtype);
        EXPECT_EQ(a.strides(), Dims({static_cast<std::int64_t>(kiln::itemsize(row.dtype))}));
        // And back.
        Exported back(kiln::to_dlpack(a));
        EXPECT_EQ((*back).dtype.code, row.dl.code) << kiln::name(row.dtype);
        EXPECT_EQ((*back).dtype.bits, row.dl.bits) << kiln::name(row.dtype);
        EXPECT_EQ((*back).dtype.lanes, 1);
    }
}

TEST(ToDlpack, FillsTheTensorFromTheArray) {
    auto owner = std::make_shared<int>(1);
    Array base = Array::wrap(kBase, {4, 6}, DType::int32, {}, owner);
    Array view =
        base.slice({kiln::Slice{std::nullopt, std::nullopt, -1}, kiln::Slice::range(1, 6, 2)});
    Exported tensor(kiln::to_dlpack(view));
    const DLTensor& t = *tensor;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data), view.data());
    EXPECT_EQ(t.byte_offset, 0u);
    EXPECT_EQ(t.device.device_type, kDLCUDA);
    EXPECT_EQ(t.ndim, 2);
    ASSERT_NE(t.shape, nullptr);
    ASSERT_NE(t.strides, nullptr);
    EXPECT_EQ(t.shape[0], 4);
    EXPECT_EQ(t.shape[1], 3);
    EXPECT_EQ(t.strides[0], -6); // in elements
    EXPECT_EQ(t.strides[1], 2);
    EXPECT_EQ(t.dtype.code, kDLInt);
    EXPECT_EQ(t.dtype.bits, 32);
    EXPECT_EQ(t.dtype.lanes, 1);
}

TEST(ToDlpack, KeepsTheOwnerAliveUntilTheDeleter) {
    auto owner = std::make_shared<int>(1);
    std::weak_ptr<int> watch = owner;
    Array a = Array::wrap(kBase, {8}, DType::float32, {}, std::move(owner));
    Exported tensor(kiln::to_dlpack(a));
    a = Array();
    EXPECT_FALSE(watch.expired());
    tensor.release();
    EXPECT_TRUE(watch.expired());
}

TEST(ToDlpack, ZeroDimensionalAndUnownedArrays) {
    Exported tensor(kiln::to_dlpack(Array::wrap(kBase, {}, DType::float64)));
    EXPECT_EQ((*tensor).ndim, 0);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*tensor).data), kBase);
    Exported empty(kiln::to_dlpack(Array()));
    EXPECT_EQ((*empty).data, nullptr);
}

TEST(ToDlpack, RejectsStridesThatAreNotWholeElements) {
    Array odd = Array::wrap(kBase, {3}, DType::float32, {6});
    EXPECT_THROW(kiln::to_dlpack(odd), kiln::ArgumentError);
}

TEST(Dlpack, RoundTripSharesMemoryAndChainsOwners) {
    auto owner = std::make_shared<int>(1);
    std::weak_ptr<int> watch = owner;
    Array a = Array::wrap(kBase, {3, 5}, DType::bfloat16, {}, std::move(owner)).transpose();
    Array b = kiln::from_dlpack(kiln::to_dlpack(a));
    EXPECT_EQ(b.data(), a.data());
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(b.strides(), a.strides());
    EXPECT_EQ(b.dtype(), DType::bfloat16);
    a = Array();
    EXPECT_FALSE(watch.expired());
    Array view = b.slice({1});
    b = Array();
    EXPECT_FALSE(watch.expired());
    view = Array();
    EXPECT_TRUE(watch.expired());
}
