// Several GPUs without a driver: what Kiln can say about devices before any device work. The
// suite points Kiln at a driver library that does not exist, so it runs the same on every machine.

#include "array/peer_copy.hpp"

#include "kiln/array.hpp"
#include "kiln/benchmark.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using kiln::Array;
using kiln::DType;

// A made-up device address: never dereferenced, only described.
constexpr CUdeviceptr kAddress = 0x7f0000000000ull;

TEST(DeviceGuard, WithoutADriverIsNoDeviceError) {
    EXPECT_THROW(kiln::DeviceGuard guard(0), kiln::NoDeviceError);
    EXPECT_THROW(kiln::DeviceGuard guard(1), kiln::NoDeviceError);
}

TEST(DeviceGuard, DeviceScopeWithoutADeviceDoesNothing) {
    // A call with no device asked for must not touch the driver for it.
    EXPECT_NO_THROW(kiln::detail::DeviceScope scope(-1));
    EXPECT_THROW(kiln::detail::DeviceScope scope(0), kiln::NoDeviceError);
}

TEST(ArrayDevice, WrapRecordsTheDeviceItIsGiven) {
    const Array a = Array::wrap(kAddress, {4, 6}, DType::float32, {}, nullptr, 1);
    EXPECT_EQ(a.recorded_device(), 1);
    EXPECT_EQ(a.device(), 1); // recorded: no driver query
    EXPECT_EQ(kiln::detail::operand_device(a), 1);
}

TEST(ArrayDevice, ViewsKeepTheDevice) {
    const Array a = Array::wrap(kAddress, {4, 6}, DType::float32, {}, nullptr, 3);
    EXPECT_EQ(a.reshape({6, 4}).recorded_device(), 3);
    EXPECT_EQ(a.transpose().recorded_device(), 3);
    EXPECT_EQ(a.slice({kiln::Slice::range(1, 3), 2}).recorded_device(), 3);
    EXPECT_EQ(a.broadcast_to({2, 4, 6}).recorded_device(), 3);
    const Array copy = a; // NOLINT(performance-unnecessary-copy-initialization): the copy is tested
    EXPECT_EQ(copy.recorded_device(), 3);
}

TEST(ArrayDevice, WrapWithoutADeviceRecordsNone) {
    const Array a = Array::wrap(kAddress, {8}, DType::int32);
    EXPECT_EQ(a.recorded_device(), -1);
    // Asking where it lives needs the driver.
    EXPECT_THROW((void)a.device(), kiln::NoDeviceError);
    // A call's check does not ask: without several devices there is nothing to mix up.
    EXPECT_EQ(kiln::detail::visible_device_count(), 0);
    EXPECT_EQ(kiln::detail::operand_device(a), -1);
}

TEST(ArrayDevice, AddressZeroIsOnNoDevice) {
    EXPECT_EQ(Array().device(), -1);
    EXPECT_EQ(kiln::detail::pointer_device(0), -1);
}

TEST(Copy, ShapesAndDtypesMustMatchBeforeAnyDeviceWork) {
    const Array a = Array::wrap(kAddress, {4}, DType::float32, {}, nullptr, 0);
    const Array b = Array::wrap(kAddress, {5}, DType::float32, {}, nullptr, 1);
    const Array c = Array::wrap(kAddress, {4}, DType::int32, {}, nullptr, 1);
    EXPECT_THROW(kiln::copy(b, a), kiln::ArgumentError);
    EXPECT_THROW(kiln::copy(c, a), kiln::ArgumentError);
    try {
        kiln::copy(b, a);
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("shape (4,)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("shape (5,)"), std::string::npos) << e.what();
    }
}

TEST(Copy, NonContiguousArraysAreRefused) {
    const Array a = Array::wrap(kAddress, {4, 6}, DType::float32, {}, nullptr, 0);
    const Array b = Array::wrap(kAddress, {6, 4}, DType::float32, {}, nullptr, 1);
    EXPECT_THROW(kiln::copy(b.transpose(), a), kiln::ArgumentError);
    EXPECT_THROW(kiln::copy(a, b.transpose()), kiln::ArgumentError);
}

TEST(Copy, RoutesFollowTheDevices) {
    using kiln::detail::CopyRoute;
    // One device, or devices not known: a plain device-to-device copy, without the driver.
    EXPECT_EQ(kiln::detail::copy_route(0, 0), CopyRoute::same_device);
    EXPECT_EQ(kiln::detail::copy_route(-1, 1), CopyRoute::same_device);
    EXPECT_TRUE(kiln::detail::peer_access(2, 2));
    // Two devices: asking about peer access needs the driver.
    EXPECT_THROW(kiln::detail::copy_route(0, 1), kiln::NoDeviceError);
}

TEST(BenchmarkResult, OneGpuPartPerDevice) {
    const kiln::BenchmarkResult result = kiln::BenchmarkResult::with_devices(
        "split", {2e-6, 4e-6}, {{0, {10e-6, 12e-6}}, {1, {20e-6, 22e-6}}});
    EXPECT_EQ(result.device(), 0);
    ASSERT_EQ(result.device_times().size(), 2u);
    EXPECT_EQ(result.device_times()[1].device, 1);
    EXPECT_DOUBLE_EQ(result.gpu_times()[1], 12e-6);
    const std::string line = result.to_string();
    const auto gpu0 = line.find("GPU-0:"), gpu1 = line.find("GPU-1:");
    ASSERT_NE(gpu0, std::string::npos) << line;
    ASSERT_NE(gpu1, std::string::npos) << line;
    EXPECT_LT(gpu0, gpu1);
    EXPECT_NE(line.find("21.000 us"), std::string::npos) << line; // GPU-1's mean
    const std::string json = result.to_json();
    EXPECT_NE(json.find("\"devices\""), std::string::npos) << json;
    // A single device keeps the one-device JSON.
    EXPECT_EQ(kiln::BenchmarkResult("one", {1e-6}, {2e-6}, 4).to_json().find("\"devices\""),
              std::string::npos);
}

TEST(BenchmarkResult, EveryDeviceNeedsOneTimePerRepeat) {
    EXPECT_THROW(
        kiln::BenchmarkResult::with_devices("bad", {1e-6, 2e-6}, {{0, {1e-6, 2e-6}}, {1, {1e-6}}}),
        kiln::ArgumentError);
    EXPECT_THROW(kiln::BenchmarkResult::with_devices("bad", {1e-6}, {}), kiln::ArgumentError);
}

} // namespace
