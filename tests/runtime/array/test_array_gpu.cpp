// kiln::Array on the GPU: host round trips for every dtype on fresh random data, zeros / full /
// arange against host references (outputs poisoned first), host copies of sliced, transposed,
// reversed and broadcast views, and DLPack round trips that share device memory.

#include "gpu.hpp"

#include "kiln/array.hpp"
#include "kiln/device.hpp"
#include "kiln/dlpack.hpp"
#include "kiln/error.hpp"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using kiln::Array;
using kiln::Dims;
using kiln::DType;
using kiln::Slice;
using Bytes = std::vector<unsigned char>;

std::mt19937_64& rng() {
    static std::mt19937_64 engine(std::random_device{}());
    return engine;
}

// @p count random elements of @p dtype as bytes: random bits (NaNs included, copies are
// bit-exact), except bool, whose bytes must be 0 or 1.
Bytes random_elements(DType dtype, std::int64_t count) {
    Bytes bytes(static_cast<std::size_t>(count) * kiln::itemsize(dtype));
    for (auto& b : bytes)
        b = static_cast<unsigned char>(rng()() & (dtype == DType::bool_ ? 1 : 0xff));
    return bytes;
}

Bytes bytes_of(const Array& array, kiln::StreamRef stream = {}) {
    Bytes out(array.nbytes());
    array.copy_to_host_bytes(out.data(), stream);
    return out;
}

// Leave a freed block of @p bytes filled with 0xAB in the stream-ordered pool, so the next
// allocation of that size most likely starts out poisoned and an unwritten element shows.
void poison_pool(std::size_t bytes) {
    if (bytes) kiln::full({static_cast<std::int64_t>(bytes)}, 0xAB, DType::uint8);
}

// The element at @p i of @p bytes (elements of @p item bytes).
Bytes element(const Bytes& bytes, std::size_t i, std::size_t item) {
    return Bytes(bytes.begin() + static_cast<std::ptrdiff_t>(i * item),
                 bytes.begin() + static_cast<std::ptrdiff_t>((i + 1) * item));
}

// Compare every element of @p actual with @p expected (one element's bytes), reporting the first
// few mismatches only.
void expect_all_equal(const Bytes& actual, const Bytes& expected, const std::string& what) {
    const std::size_t item = expected.size();
    ASSERT_EQ(actual.size() % item, 0u) << what;
    int reported = 0;
    for (std::size_t i = 0; i < actual.size() / item && reported < 5; ++i)
        if (std::memcmp(actual.data() + i * item, expected.data(), item) != 0) {
            ADD_FAILURE() << what << ": element " << i << " differs";
            ++reported;
        }
}

template <class V> Bytes cast_bytes(V value, DType dtype) {
    Bytes out(kiln::itemsize(dtype));
    kiln::cast_scalar(value, dtype, out.data());
    return out;
}

// start + i * step as the device computes it: one product, one sum, no fused multiply-add.
double arange_value(double start, double step, std::int64_t i) {
    volatile double product = static_cast<double>(i) * step;
    return start + product;
}

void check_arange(double start, double stop, double step, DType dtype) {
    const std::string what = std::string("arange(") + std::to_string(start) + ", " +
                             std::to_string(stop) + ", " + std::to_string(step) + ", " +
                             kiln::name(dtype) + ")";
    const double length = std::ceil((stop - start) / step);
    const std::int64_t n = length > 0 ? static_cast<std::int64_t>(length) : 0;
    poison_pool(static_cast<std::size_t>(n) * kiln::itemsize(dtype));
    Array a = kiln::arange(start, stop, step, dtype);
    ASSERT_EQ(a.shape(), Dims({n})) << what;
    ASSERT_EQ(a.dtype(), dtype) << what;
    const Bytes actual = bytes_of(a);
    const std::size_t item = kiln::itemsize(dtype);
    int reported = 0;
    for (std::int64_t i = 0; i < n && reported < 5; ++i) {
        const double v = arange_value(start, step, i);
        const Bytes expected = cast_bytes(v, dtype);
        if (element(actual, static_cast<std::size_t>(i), item) != expected) {
            ADD_FAILURE() << what << ": element " << i << " (value " << v << ") differs";
            ++reported;
        }
    }
}

template <class T> class ArrayGpu : public ::testing::Test {};
using AllTypes =
    ::testing::Types<bool, std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                     std::uint16_t, std::uint32_t, std::uint64_t, kiln::float16, kiln::bfloat16,
                     float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(ArrayGpu, AllTypes);

} // namespace

TYPED_TEST(ArrayGpu, RoundTripsFreshRandomData) {
    KILN_REQUIRE_GPU();
    const DType dtype = kiln::dtype_of<TypeParam>();
    for (const Dims& shape : {Dims{100003}, Dims{7, 11, 13}, Dims{}, Dims{1}, Dims{0, 5}}) {
        const Bytes host = random_elements(dtype, shape.product());
        Array a = kiln::from_host_bytes(host.data(), shape, dtype);
        EXPECT_EQ(a.shape(), shape);
        EXPECT_EQ(a.strides(), kiln::c_strides(shape, kiln::itemsize(dtype)));
        EXPECT_EQ(a.dtype(), dtype);
        EXPECT_TRUE(a.is_c_contiguous());
        EXPECT_NE(a.owner(), nullptr);
        if (a.size()) {
            EXPECT_NE(a.data(), 0u);
        }
        EXPECT_EQ(bytes_of(a), host) << shape.to_string();
    }
}

TYPED_TEST(ArrayGpu, TypedHostVectorsRoundTrip) {
    KILN_REQUIRE_GPU();
    if constexpr (!std::is_same_v<TypeParam, bool>) {
        const DType dtype = kiln::dtype_of<TypeParam>();
        const Bytes bytes = random_elements(dtype, 4097);
        std::vector<TypeParam> values(4097);
        std::memcpy(values.data(), bytes.data(), bytes.size());
        Array flat = kiln::from_host(values);
        EXPECT_EQ(flat.shape(), Dims({4097}));
        const std::vector<TypeParam> back = flat.to_host<TypeParam>();
        ASSERT_EQ(back.size(), values.size());
        EXPECT_EQ(std::memcmp(back.data(), values.data(), bytes.size()), 0);
        Array shaped = kiln::from_host(values, {17, 241});
        EXPECT_EQ(shaped.shape(), Dims({17, 241}));
        const std::vector<TypeParam> again = shaped.to_host<TypeParam>();
        EXPECT_EQ(std::memcmp(again.data(), values.data(), bytes.size()), 0);
        EXPECT_THROW(kiln::from_host(values, {4098}), kiln::ShapeError);
    }
}

TYPED_TEST(ArrayGpu, ZerosAreZero) {
    KILN_REQUIRE_GPU();
    const DType dtype = kiln::dtype_of<TypeParam>();
    for (std::int64_t n : {1, 3, 100003}) {
        poison_pool(static_cast<std::size_t>(n) * kiln::itemsize(dtype));
        Array z = kiln::zeros({n}, dtype);
        expect_all_equal(bytes_of(z), Bytes(kiln::itemsize(dtype), 0),
                         std::string("zeros of ") + kiln::name(dtype));
    }
    Array grid = kiln::zeros({3, 5, 7}, dtype);
    EXPECT_EQ(grid.shape(), Dims({3, 5, 7}));
    expect_all_equal(bytes_of(grid), Bytes(kiln::itemsize(dtype), 0), "zeros (3, 5, 7)");
}

TYPED_TEST(ArrayGpu, FullMatchesTheHostCast) {
    KILN_REQUIRE_GPU();
    const DType dtype = kiln::dtype_of<TypeParam>();
    const std::int64_t n = 100003;
    const std::size_t bytes = static_cast<std::size_t>(n) * kiln::itemsize(dtype);
    const auto check = [&](const Array& a, const Bytes& expected, const std::string& what) {
        ASSERT_EQ(a.shape(), Dims({n})) << what;
        ASSERT_EQ(a.dtype(), dtype) << what;
        expect_all_equal(bytes_of(a), expected, what + " as " + kiln::name(dtype));
    };
    const std::int64_t integers[] = {-1,
                                     0,
                                     1,
                                     std::int64_t{1} << 32,
                                     std::numeric_limits<std::int64_t>::max(),
                                     std::numeric_limits<std::int64_t>::min(),
                                     0x0000000100000001,
                                     0x1234,
                                     -129};
    for (std::int64_t v : integers) {
        poison_pool(bytes);
        check(kiln::full({n}, v, dtype), cast_bytes(v, dtype), "full " + std::to_string(v));
    }
    const std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
    poison_pool(bytes);
    check(kiln::full({n}, most, dtype), cast_bytes(most, dtype), "full 2^64 - 1");
    const double reals[] = {2.5,
                            -2.5,
                            300.0,
                            1e10,
                            -1e-3,
                            0.1,
                            65520.0,
                            -0.0,
                            std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::infinity()};
    for (double v : reals) {
        poison_pool(bytes);
        check(kiln::full({n}, v, dtype), cast_bytes(v, dtype), "full " + std::to_string(v));
    }
    const std::complex<double> z(1.5, -2.0);
    poison_pool(bytes);
    check(kiln::full({n}, z, dtype), cast_bytes(z, dtype), "full (1.5-2j)");
    poison_pool(bytes);
    check(kiln::full({n}, true, dtype), cast_bytes(true, dtype), "full true");
}

TYPED_TEST(ArrayGpu, ArangeMatchesTheHostReference) {
    KILN_REQUIRE_GPU();
    const DType dtype = kiln::dtype_of<TypeParam>();
    check_arange(0, 1000, 1, dtype);
    check_arange(-50.5, 50, 0.75, dtype);
    check_arange(100, -100, -3, dtype);
    check_arange(0, 1, 0.001, dtype);
    check_arange(-3, 3, 0.5, dtype);
    check_arange(250, 300, 1, dtype);
    check_arange(-140, -100, 1.5, dtype);
    check_arange(0, 300000, 1, dtype);
    check_arange(1, 2, 5, dtype);
}

TEST(ArrayGpuArange, SixteenBitFloatsRoundAtTiesSubnormalsAndOverflow) {
    KILN_REQUIRE_GPU();
    check_arange(0, 70000, 0.25, DType::float16);
    check_arange(-70000, 0, 0.375, DType::float16);
    check_arange(-1e-4, 1e-4, 1e-9, DType::float16);
    check_arange(-3.4e38, 3.4e38, 1e34, DType::bfloat16);
    check_arange(0, 1, 1e-6, DType::bfloat16);
    check_arange(-1e-38, 1e-38, 1e-44, DType::bfloat16);
}

TEST(ArrayGpuArange, IntegersSaturate) {
    KILN_REQUIRE_GPU();
    check_arange(250, 260, 1, DType::uint8);
    check_arange(-135, -120, 1, DType::int8);
    check_arange(-5, 5, 1, DType::uint32);
    check_arange(9.2e18, 9.3e18, 1e15, DType::int64);
    check_arange(1.8e19, 1.9e19, 1e16, DType::uint64);
    check_arange(-3.5, 3.5, 0.25, DType::int32);
    const std::vector<std::uint8_t> bytes =
        kiln::arange(250, 260, 1, DType::uint8).to_host<std::uint8_t>();
    EXPECT_EQ(bytes, (std::vector<std::uint8_t>{250, 251, 252, 253, 254, 255, 255, 255, 255, 255}));
}

TEST(ArrayGpuFull, LargeArraysUseTheGridStrideKernel) {
    KILN_REQUIRE_GPU();
    // Over 2^16 blocks of 256 8-byte words: every thread loops.
    const std::int64_t n = 20'000'003;
    const std::int64_t big = std::int64_t{1} << 32;
    poison_pool(static_cast<std::size_t>(n) * 8);
    expect_all_equal(bytes_of(kiln::full({n}, big, DType::int64)), cast_bytes(big, DType::int64),
                     "full 2^32 as int64");
    const std::int64_t m = 9'000'001;
    const std::complex<double> z(1.5, -2.0);
    poison_pool(static_cast<std::size_t>(m) * 16);
    expect_all_equal(bytes_of(kiln::full({m}, z, DType::complex128)),
                     cast_bytes(z, DType::complex128), "full (1.5-2j) as complex128");
    std::vector<std::int64_t> values =
        kiln::arange(0, 20'000'003, 1, DType::int64).to_host<std::int64_t>();
    ASSERT_EQ(values.size(), 20'000'003u);
    for (std::size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(values[i], static_cast<std::int64_t>(i));
}

TEST(ArrayGpuFull, WorksOnAStream) {
    KILN_REQUIRE_GPU();
    kiln::Stream stream;
    const std::int64_t big = std::int64_t{1} << 32;
    Array a = kiln::full({4, 1000}, big, DType::int64, stream);
    Array z = kiln::zeros({4, 1000}, DType::float32, stream);
    Array r = kiln::arange(0, 4000, 1, DType::float32, stream);
    expect_all_equal(bytes_of(a, stream), cast_bytes(big, DType::int64), "full on a stream");
    expect_all_equal(bytes_of(z, stream), Bytes(4, 0), "zeros on a stream");
    const std::vector<float> values = r.to_host<float>(stream);
    for (std::size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(values[i], static_cast<float>(i));
    const std::vector<float> host(4000, 7.0f);
    Array h = kiln::from_host(host, {40, 100}, stream);
    EXPECT_EQ(h.to_host<float>(stream), host);
}

namespace {

// An int32 array (6, 7, 8) holding 0, 1, 2, ... on the device, and its host copy.
struct Iota {
    std::vector<std::int32_t> host;
    Array device;
    Iota()
        : host(std::size_t{6} * 7 * 8) {
        for (std::size_t i = 0; i < host.size(); ++i)
            host[i] = static_cast<std::int32_t>(i);
        device = kiln::from_host(host, {6, 7, 8});
    }
    std::int32_t at(int i, int j, int k) const {
        return host[(static_cast<std::size_t>(i) * 7 + j) * 8 + k];
    }
};

} // namespace

TEST(ArrayGpuViews, ReversedSteppedSlicesCopyBack) {
    KILN_REQUIRE_GPU();
    Iota a;
    Array view = a.device.slice({Slice{std::nullopt, std::nullopt, -1}, Slice::range(1, 6, 2),
                                 Slice{std::nullopt, std::nullopt, -3}});
    EXPECT_EQ(view.shape(), Dims({6, 3, 3}));
    std::vector<std::int32_t> expected;
    for (int i = 5; i >= 0; --i)
        for (int j : {1, 3, 5})
            for (int k : {7, 4, 1})
                expected.push_back(a.at(i, j, k));
    EXPECT_EQ(view.to_host<std::int32_t>(), expected);
}

TEST(ArrayGpuViews, TransposesCopyBack) {
    KILN_REQUIRE_GPU();
    Iota a;
    std::vector<std::int32_t> expected;
    for (int k = 0; k < 8; ++k)
        for (int j = 0; j < 7; ++j)
            for (int i = 0; i < 6; ++i)
                expected.push_back(a.at(i, j, k));
    EXPECT_EQ(a.device.transpose().to_host<std::int32_t>(), expected);
    expected.clear();
    Array p = a.device.transpose({1, 2, 0}).slice(
        {Slice::range(-2, 7), Slice{std::nullopt, std::nullopt, -1}, 4});
    EXPECT_EQ(p.shape(), Dims({2, 8}));
    for (int j : {5, 6})
        for (int k = 7; k >= 0; --k)
            expected.push_back(a.at(4, j, k));
    EXPECT_EQ(p.to_host<std::int32_t>(), expected);
}

TEST(ArrayGpuViews, PositionsBroadcastsAndEmptyViewsCopyBack) {
    KILN_REQUIRE_GPU();
    Iota a;
    std::vector<std::int32_t> expected;
    for (int j = 0; j < 7; ++j)
        for (int k = 0; k < 8; ++k)
            expected.push_back(a.at(2, j, k));
    Array plane = a.device.slice({2});
    EXPECT_TRUE(plane.is_c_contiguous());
    EXPECT_EQ(plane.to_host<std::int32_t>(), expected);
    expected.clear();
    for (int i = 0; i < 6; ++i)
        expected.push_back(a.at(i, 3, 5));
    EXPECT_EQ(a.device.slice({Slice::all(), 3, 5}).to_host<std::int32_t>(), expected);
    EXPECT_EQ(a.device.slice({5, 6, 7}).to_host<std::int32_t>(),
              std::vector<std::int32_t>{a.at(5, 6, 7)});
    expected.clear();
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 8; ++k)
            expected.push_back(a.at(0, 0, k));
    Array row = a.device.slice({0, 0}).broadcast_to({3, 8});
    EXPECT_EQ(row.strides(), Dims({0, 4}));
    EXPECT_EQ(row.to_host<std::int32_t>(), expected);
    EXPECT_TRUE(a.device.slice({Slice::range(3, 3)}).to_host<std::int32_t>().empty());
    Array flat = a.device.reshape({-1, 8});
    EXPECT_EQ(flat.to_host<std::int32_t>(), a.host);
}

TEST(ArrayGpuViews, EveryItemsizeGathers) {
    KILN_REQUIRE_GPU();
    for (DType dtype : {DType::bool_, DType::int8, DType::float16, DType::float32, DType::float64,
                        DType::complex128}) {
        const std::size_t item = kiln::itemsize(dtype);
        const Bytes host = random_elements(dtype, std::int64_t{5} * 9);
        Array a = kiln::from_host_bytes(host.data(), {5, 9}, dtype);
        Array view =
            a.transpose().slice({Slice{std::nullopt, std::nullopt, -2}, Slice::range(1, 5)});
        Bytes expected;
        for (int j = 8; j >= 0; j -= 2)
            for (int i = 1; i < 5; ++i) {
                const Bytes e = element(host, static_cast<std::size_t>(i) * 9 + j, item);
                expected.insert(expected.end(), e.begin(), e.end());
            }
        EXPECT_EQ(bytes_of(view), expected) << kiln::name(dtype);
    }
}

TEST(ArrayGpuViews, CopyFromHostWritesOnlyTheView) {
    KILN_REQUIRE_GPU();
    Iota a;
    const std::vector<std::int32_t> minus(std::size_t{7} * 8, -1);
    a.device.slice({4}).copy_from_host_bytes(minus.data());
    std::vector<std::int32_t> expected = a.host;
    std::fill(expected.begin() + std::ptrdiff_t{4} * 56, expected.begin() + std::ptrdiff_t{5} * 56,
              -1);
    EXPECT_EQ(a.device.to_host<std::int32_t>(), expected);
    EXPECT_THROW(a.device.transpose().copy_from_host_bytes(a.host.data()), kiln::ArgumentError);
}

namespace {

// Device memory handed over as a DLPack tensor by a "foreign library": its deleter frees it.
struct Foreign {
    kiln::DeviceBuffer buffer;
    std::int64_t shape[2] = {64, 3};
    DLManagedTensor managed{};
    int* deleted;
    Foreign(std::size_t bytes, int* counter)
        : buffer(bytes)
        , deleted(counter) {
        managed.dl_tensor.data = buffer.data();
        managed.dl_tensor.device = {kDLCUDA, kiln::Device::current().ordinal()};
        managed.dl_tensor.ndim = 2;
        managed.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
        managed.dl_tensor.shape = shape;
        managed.dl_tensor.strides = nullptr;
        managed.dl_tensor.byte_offset = 0;
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            auto* owner = static_cast<Foreign*>(self->manager_ctx);
            ++*owner->deleted;
            delete owner;
        };
    }
};

} // namespace

TEST(DlpackGpu, RoundTripSharesDeviceMemory) {
    KILN_REQUIRE_GPU();
    const Bytes host = random_elements(DType::float32, std::int64_t{1000} * 3);
    Array a = kiln::from_host_bytes(host.data(), {1000, 3}, DType::float32);
    const CUdeviceptr pointer = a.data();
    DLManagedTensor* tensor = kiln::to_dlpack(a);
    EXPECT_EQ(reinterpret_cast<CUdeviceptr>(tensor->dl_tensor.data), pointer);
    EXPECT_EQ(tensor->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(tensor->dl_tensor.device.device_id, kiln::Device::current().ordinal());
    Array b = kiln::from_dlpack(tensor);
    EXPECT_EQ(b.data(), pointer);
    a = Array(); // the import alone keeps the memory now
    EXPECT_EQ(bytes_of(b), host);
    Array view =
        b.transpose().slice({Slice{std::nullopt, std::nullopt, -1}, Slice::range(1, 999, 7)});
    Array again = kiln::from_dlpack(kiln::to_dlpack(view));
    EXPECT_EQ(again.data(), view.data());
    EXPECT_EQ(again.strides(), view.strides());
    b = Array();
    view = Array();
    EXPECT_EQ(bytes_of(again), bytes_of(again.transpose().transpose()));
    std::vector<float> floats(host.size() / 4);
    std::memcpy(floats.data(), host.data(), host.size());
    std::vector<float> expected;
    for (int j = 2; j >= 0; --j)
        for (int i = 1; i < 999; i += 7)
            expected.push_back(floats[static_cast<std::size_t>(i) * 3 + j]);
    const std::vector<float> actual = again.to_host<float>();
    ASSERT_EQ(actual.size(), expected.size());
    EXPECT_EQ(std::memcmp(actual.data(), expected.data(), actual.size() * 4), 0);
}

TEST(DlpackGpu, ImportsForeignMemoryAndReturnsItThroughTheDeleter) {
    KILN_REQUIRE_GPU();
    int deleted = 0;
    auto* foreign = new Foreign(sizeof(float) * 64 * 3, &deleted);
    std::vector<float> host(std::size_t{64} * 3);
    for (std::size_t i = 0; i < host.size(); ++i)
        host[i] = static_cast<float>(i) * 0.5f;
    foreign->buffer.copy_from_host(host.data(), host.size() * sizeof(float));
    const CUdeviceptr pointer = foreign->buffer.get();
    Array a = kiln::from_dlpack(&foreign->managed);
    EXPECT_EQ(a.data(), pointer);
    EXPECT_EQ(a.shape(), Dims({64, 3}));
    EXPECT_EQ(a.to_host<float>(), host);
    Array column = a.slice({Slice::all(), 1});
    a = Array();
    EXPECT_EQ(deleted, 0);
    const std::vector<float> values = column.to_host<float>();
    for (std::size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(values[i], host[i * 3 + 1]);
    column = Array();
    EXPECT_EQ(deleted, 1);
}
