#include "gpu.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

TEST(Device, ReportsItsArchitectureAndLimits) {
    KILN_REQUIRE_GPU();
    const kiln::Device device = kiln::Device::current();
    EXPECT_GE(kiln::Device::count(), 1);
    EXPECT_FALSE(device.name().empty());
    EXPECT_EQ(device.arch(), "sm_" + std::to_string(device.compute_capability_major()) +
                                 std::to_string(device.compute_capability_minor()));
    EXPECT_GT(device.total_memory(), 0u);
    EXPECT_GT(device.multiprocessor_count(), 0);
}

TEST(Device, AnOrdinalOutOfRangeIsAnArgumentError) {
    KILN_REQUIRE_GPU();
    EXPECT_THROW(kiln::Device{kiln::Device::count()}, kiln::ArgumentError); // {}: not a declaration
    EXPECT_THROW(kiln::Device(-1), kiln::ArgumentError);
}

TEST(DeviceBuffer, RoundTripsHostData) {
    KILN_REQUIRE_GPU();
    kiln::Stream stream;
    std::vector<int> in(1000), out(1000, -1);
    std::iota(in.begin(), in.end(), 7);
    kiln::DeviceBuffer buffer(in.size() * sizeof(int), stream);
    buffer.copy_from_host(in.data(), buffer.size());
    buffer.copy_to_host(out.data(), buffer.size());
    EXPECT_EQ(in, out);
}

TEST(DeviceBuffer, FillsBytesAndRejectsOverruns) {
    KILN_REQUIRE_GPU();
    kiln::DeviceBuffer buffer(64);
    buffer.fill_bytes(0xab);
    std::vector<unsigned char> out(64);
    buffer.copy_to_host(out.data(), out.size());
    for (unsigned char c : out)
        EXPECT_EQ(c, 0xab);
    EXPECT_THROW(buffer.copy_to_host(out.data(), 65), kiln::ArgumentError);
}

TEST(DeviceBuffer, MovesLeaveTheSourceEmpty) {
    KILN_REQUIRE_GPU();
    kiln::DeviceBuffer a(256);
    const CUdeviceptr pointer = a.get();
    kiln::DeviceBuffer b(std::move(a));
    EXPECT_EQ(b.get(), pointer);
    EXPECT_EQ(a.get(), 0u); // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_EQ(a.size(), 0u);
}

namespace {
// Counts what passes through, forwarding to the stream-ordered allocator.
class CountingAllocator : public kiln::Allocator {
  public:
    std::atomic<int> allocations{0}, deallocations{0};
    CUdeviceptr allocate(std::size_t bytes, kiln::StreamRef stream) override {
        ++allocations;
        return m_inner.allocate(bytes, stream);
    }
    void deallocate(CUdeviceptr p, std::size_t bytes, kiln::StreamRef stream) noexcept override {
        ++deallocations;
        m_inner.deallocate(p, bytes, stream);
    }

  private:
    kiln::StreamOrderedAllocator m_inner;
};
} // namespace

TEST(Allocator, AnApplicationAllocatorIsUsedForNewBuffers) {
    KILN_REQUIRE_GPU();
    auto counting = std::make_shared<CountingAllocator>();
    kiln::set_default_allocator(counting);
    { kiln::DeviceBuffer buffer(4096); }
    kiln::set_default_allocator(nullptr);
    { kiln::DeviceBuffer buffer(4096); }
    EXPECT_EQ(counting->allocations, 1);
    EXPECT_EQ(counting->deallocations, 1);
}

TEST(Event, TimesWorkOnAStream) {
    KILN_REQUIRE_GPU();
    kiln::Stream stream;
    kiln::Event start(true), stop(true);
    kiln::DeviceBuffer buffer(64 << 20, stream);
    start.record(stream);
    buffer.fill_bytes(1);
    stop.record(stream);
    stop.synchronize();
    EXPECT_TRUE(stop.ref().ready());
    EXPECT_GT(kiln::elapsed_ms(start, stop), 0.0f);
}
