// The blocks the stream-ordered allocator keeps for reuse (runtime/block_cache.hpp), over the
// fake driver (tests/support/fake_driver.cpp), which counts cuMemAllocAsync and cuMemFreeAsync and
// never reuses an address: a block given twice can only have come from the cache.

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::DType;

unsigned long long calls(const char* name) {
    using CallsFunction = unsigned long long (*)(const char*);
    static const auto function = [] {
        const char* library = std::getenv("KILN_DRIVER_LIBRARY");
        void* handle = library ? dlopen(library, RTLD_NOW | RTLD_NOLOAD) : nullptr;
        return handle ? reinterpret_cast<CallsFunction>(dlsym(handle, "kiln_fake_driver_calls"))
                      : nullptr;
    }();
    return function ? function(name) : 0;
}

struct Counts {
    unsigned long long allocs = calls("cuMemAllocAsync"), frees = calls("cuMemFreeAsync");
};

bool turned_off() {
    const char* setting = std::getenv("KILN_BLOCK_CACHE");
    return setting && std::string(setting) == "0";
}

class BlockCache : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(std::getenv("KILN_DRIVER_LIBRARY")) << "runs over the fake driver";
        if (turned_off()) GTEST_SKIP() << "KILN_BLOCK_CACHE=0: see BlockCacheOff";
        kiln::Device::current();
    }
};

// Run by the test block_cache_off, with KILN_BLOCK_CACHE=0: every block goes back to the driver.
TEST(BlockCacheOff, EveryFreedBlockGoesToTheDriver) {
    if (!turned_off()) GTEST_SKIP() << "runs with KILN_BLOCK_CACHE=0 (the test block_cache_off)";
    const kiln::Stream stream;
    const Counts before;
    CUdeviceptr first = 0;
    { first = kiln::empty({1000}, DType::float32, stream).data(); }
    EXPECT_NE(kiln::empty({1000}, DType::float32, stream).data(), first);
    EXPECT_EQ(Counts().allocs, before.allocs + 2);
    EXPECT_EQ(Counts().frees, before.frees + 2);
}

TEST_F(BlockCache, ADroppedBlockIsTheNextOneOfItsSizeOnItsStream) {
    const kiln::Stream stream;
    CUdeviceptr first = 0;
    { first = kiln::empty({1000}, DType::float32, stream).data(); }
    const Counts before;
    const kiln::Array again = kiln::empty({1000}, DType::float32, stream);
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(Counts().allocs, before.allocs) << "the driver was asked for the kept block's size";
    // Another size, another stream, or the block still in use: the driver's.
    const kiln::Array other_size = kiln::empty({1001}, DType::float32, stream);
    EXPECT_NE(other_size.data(), first);
    const kiln::Stream other;
    const kiln::Array other_stream = kiln::empty({1000}, DType::float32, other);
    EXPECT_NE(other_stream.data(), first);
    EXPECT_EQ(Counts().allocs, before.allocs + 2);
}

TEST_F(BlockCache, AStreamsBlocksGoBackBeforeItEnds) {
    const Counts before;
    {
        const kiln::Stream stream;
        for (int i = 0; i < 3; ++i)
            kiln::empty({256}, DType::float32, stream);
        EXPECT_EQ(Counts().frees, before.frees) << "kept, not freed";
    }
    EXPECT_EQ(Counts().frees, before.frees + 1) << "the kept block was not freed with its stream";
    const kiln::Stream next; // the fake driver may give the same handle: it must start empty
    const Counts after;
    kiln::empty({256}, DType::float32, next);
    EXPECT_EQ(Counts().allocs, after.allocs + 1);
}

TEST_F(BlockCache, ForeignStreamsAndLargeBlocksAreNotKept) {
    CUstream foreign = nullptr;
    ASSERT_EQ(kiln::detail::driver().cuStreamCreate(&foreign, 0), CUDA_SUCCESS);
    const Counts before;
    kiln::empty({256}, DType::float32, foreign);
    EXPECT_EQ(Counts().frees, before.frees + 1) << "a stream Kiln did not make cannot be tracked";
    kiln::detail::driver().cuStreamDestroy(foreign);
    const kiln::Stream stream;
    const Counts large;
    kiln::empty({(std::int64_t{8} << 20) / 4 + 1}, DType::float32, stream);
    EXPECT_EQ(Counts().frees, large.frees + 1) << "over the size limit";
}

TEST_F(BlockCache, AThreadKeepsAtMostFourBlocksAndFreesThemWhenItEnds) {
    const kiln::Stream stream;
    const Counts before;
    std::thread([&] {
        kiln::Device::current();
        std::vector<kiln::Array> arrays;
        arrays.reserve(6);
        for (int i = 0; i < 6; ++i)
            arrays.push_back(kiln::empty({64 + i}, DType::float32, stream));
        arrays.clear();
        EXPECT_EQ(Counts().frees, before.frees + 2) << "six dropped: four kept, two freed";
    }).join();
    EXPECT_EQ(Counts().frees, before.frees + 6) << "the thread's kept blocks outlived it";
}

TEST_F(BlockCache, ANewSizeTakesTheSlotOfTheBlockKeptLongestAgo) {
    // Four sizes used once fill the slots; a loop over a fifth size must still be served from the
    // cache from its second call on, and the first size, kept longest ago, is given back.
    const kiln::Stream stream;
    std::vector<CUdeviceptr> old(4);
    for (int i = 0; i < 4; ++i)
        old[i] = kiln::empty({100 + i}, DType::float32, stream).data();
    const Counts before;
    CUdeviceptr first = 0;
    { first = kiln::empty({2000}, DType::float32, stream).data(); }
    EXPECT_EQ(Counts().frees, before.frees + 1) << "the oldest block went back to the driver";
    for (int call = 0; call < 3; ++call)
        EXPECT_EQ(kiln::empty({2000}, DType::float32, stream).data(), first) << call;
    EXPECT_EQ(Counts().allocs, before.allocs + 1) << "the loop's size was asked of the driver once";
    EXPECT_NE(kiln::empty({100}, DType::float32, stream).data(), old[0]) << "given back";
    EXPECT_EQ(kiln::empty({103}, DType::float32, stream).data(), old[3]) << "still kept";
}

TEST_F(BlockCache, NothingIsKeptOrReusedWhileAGraphIsCaptured) {
    const kiln::Stream stream;
    CUdeviceptr kept = 0;
    { kept = kiln::empty({512}, DType::float32, stream).data(); }
    const Counts before;
    kiln::Graph::capture(stream, [&] {
        const kiln::Array inside = kiln::empty({512}, DType::float32, stream);
        EXPECT_NE(inside.data(), kept) << "a captured allocation must be the graph's";
    });
    EXPECT_EQ(Counts().allocs, before.allocs + 1);
    EXPECT_EQ(Counts().frees, before.frees + 1) << "a block dropped in the capture was kept";
    EXPECT_EQ(kiln::empty({512}, DType::float32, stream).data(), kept)
        << "the block kept before the capture is still there";
    // Memory made in a capture is the graph's even when it is dropped after the capture.
    kiln::Array graphs;
    kiln::Graph::capture(stream, [&] { graphs = kiln::empty({512}, DType::float32, stream); });
    const Counts after;
    graphs = kiln::Array();
    EXPECT_EQ(Counts().frees, after.frees + 1) << "a graph's block was kept for reuse";
}

} // namespace
