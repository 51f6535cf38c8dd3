// The blocks the stream-ordered allocator keeps for reuse (runtime/memory/block_cache.hpp), over
// the fake driver (tests/support/fake_driver.cpp), which counts cuMemAllocAsync and cuMemFreeAsync
// and never reuses an address: a block given twice can only have come from the cache. It does
// reuse a destroyed stream's handle for the next stream made, as a real driver may.

#include "driver/driver.hpp"
#include "fake_driver_ops.hpp"
#include "kiln/kiln.hpp"
#include "memory/block_cache.hpp"
#include "memory/release_stream.hpp"

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

TEST_F(BlockCache, LargeBlocksAreNotKept) {
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

namespace {

using kiln::test::FakeOp;

// A stream the program makes itself, as CuPy or PyTorch would: Kiln never sees its end.
struct ForeignStream {
    CUstream handle = nullptr;
    ForeignStream() { EXPECT_EQ(kiln::detail::driver().cuStreamCreate(&handle, 0), CUDA_SUCCESS); }
    ~ForeignStream() { destroy(); }
    void destroy() {
        if (handle) kiln::detail::driver().cuStreamDestroy(std::exchange(handle, nullptr));
    }
};

// The latest operation of @p kind in the fake driver's record that @p match accepts, or none.
template <class Match>
const FakeOp* latest(const std::vector<FakeOp>& ops, FakeOp::Kind kind, Match match) {
    for (auto op = ops.rbegin(); op != ops.rend(); ++op)
        if (op->kind == kind && match(*op)) return &*op;
    return nullptr;
}
// A pointer into a temporary record would dangle: name the record first.
template <class Match>
const FakeOp* latest(const std::vector<FakeOp>&& ops, FakeOp::Kind kind, Match match) = delete;

TEST_F(BlockCache, AProgramsStreamGetsItsDroppedBlockBack) {
    kiln::detail::release_cached_blocks(); // what earlier tests kept would be pushed out
    ForeignStream stream;
    CUdeviceptr first = 0;
    const auto counts = kiln::detail::block_cache_counts();
    const unsigned long long records = calls("cuEventRecord");
    { first = kiln::empty({1000}, DType::float32, stream.handle).data(); }
    EXPECT_EQ(calls("cuEventRecord"), records + 1) << "a foreign stream's block keeps an event";
    const Counts before;
    for (int call = 0; call < 3; ++call)
        EXPECT_EQ(kiln::empty({1000}, DType::float32, stream.handle).data(), first) << call;
    EXPECT_EQ(Counts().allocs, before.allocs) << "the driver was asked for the kept block's size";
    EXPECT_EQ(Counts().frees, before.frees);
    const auto after = kiln::detail::block_cache_counts();
    EXPECT_EQ(after.taken, counts.taken + 3);
    EXPECT_EQ(after.kept_foreign, counts.kept_foreign + 4);
    EXPECT_EQ(after.freed_after_event, counts.freed_after_event);
}

TEST_F(BlockCache, ANewStreamAtADestroyedStreamsHandleNeverGetsItsBlocks) {
    kiln::detail::release_cached_blocks();
    ForeignStream old;
    const CUstream handle = old.handle;
    CUdeviceptr kept = 0;
    { kept = kiln::empty({700}, DType::float32, old.handle).data(); }
    const std::vector<FakeOp> recorded = kiln::test::fake_driver_ops();
    const FakeOp* record = latest(recorded, FakeOp::record_event,
                                  [&](const FakeOp& op) { return op.stream == handle; });
    ASSERT_NE(record, nullptr) << "no event was recorded on the block's stream when it was kept";
    const CUevent event = record->event;
    old.destroy();
    ForeignStream next;
    ASSERT_EQ(next.handle, handle) << "the fake driver gives the destroyed handle again";
    const Counts before;
    const kiln::Array fresh = kiln::empty({700}, DType::float32, next.handle);
    EXPECT_NE(fresh.data(), kept) << "the new stream got a block the old one may still be using";
    EXPECT_EQ(Counts().allocs, before.allocs + 1);

    // Four newer blocks on a Kiln stream push the old one out: it goes back to the driver on a
    // stream Kiln owns, after its event, never on the handle, which is now another stream's.
    const auto counts = kiln::detail::block_cache_counts();
    const kiln::Stream kiln_stream;
    for (int i = 0; i < 4; ++i)
        kiln::empty({3000 + i}, DType::float32, kiln_stream);
    EXPECT_EQ(kiln::detail::block_cache_counts().freed_after_event, counts.freed_after_event + 1);
    const std::vector<FakeOp> ops = kiln::test::fake_driver_ops();
    const FakeOp* free =
        latest(ops, FakeOp::free_memory, [&](const FakeOp& op) { return op.memory == kept; });
    ASSERT_NE(free, nullptr) << "the old stream's block was not freed";
    EXPECT_NE(free->stream, handle) << "freed on a handle that is now another stream's";
    EXPECT_EQ(free->stream, kiln::detail::release_stream(kiln::detail::current_context()));
    const FakeOp* wait = latest(ops, FakeOp::wait_event, [&](const FakeOp& op) {
        return op.stream == free->stream && op.event == event && &op < free;
    });
    EXPECT_NE(wait, nullptr) << "the free did not wait for the event recorded when it was kept";
}

TEST_F(BlockCache, AProgramsStreamsBlockGoesBackThroughItsEventWhenTheThreadEnds) {
    CUdeviceptr kept = 0;
    CUevent event = nullptr;
    const auto counts = kiln::detail::block_cache_counts();
    std::thread([&] {
        kiln::Device::current();
        ForeignStream stream;
        kept = kiln::empty({900}, DType::float32, stream.handle).data();
        const std::vector<FakeOp> recorded = kiln::test::fake_driver_ops();
        const FakeOp* record = latest(recorded, FakeOp::record_event,
                                      [&](const FakeOp& op) { return op.stream == stream.handle; });
        ASSERT_NE(record, nullptr);
        event = record->event;
        // The stream is destroyed before the thread ends, with the block still kept.
    }).join();
    EXPECT_EQ(kiln::detail::block_cache_counts().freed_after_event, counts.freed_after_event + 1);
    const std::vector<FakeOp> ops = kiln::test::fake_driver_ops();
    const FakeOp* free =
        latest(ops, FakeOp::free_memory, [&](const FakeOp& op) { return op.memory == kept; });
    ASSERT_NE(free, nullptr) << "the ended thread's block was never freed";
    EXPECT_EQ(free->stream, kiln::detail::release_stream(kiln::detail::current_context()));
    EXPECT_NE(latest(ops, FakeOp::wait_event,
                     [&](const FakeOp& op) {
                         return op.stream == free->stream && op.event == event && &op < free;
                     }),
              nullptr)
        << "the free did not wait for the event recorded when the block was kept";
}

TEST_F(BlockCache, AKilnStreamsEndLeavesAForeignStreamsBlocksAtItsHandleAlone) {
    // A program's stream dies with a block kept; a kiln::Stream is then made at its handle and
    // ends: only the kiln::Stream's own blocks go back with it, on it.
    kiln::detail::release_cached_blocks();
    ForeignStream foreign;
    const CUstream handle = foreign.handle;
    CUdeviceptr foreign_block = 0;
    { foreign_block = kiln::empty({1100}, DType::float32, foreign.handle).data(); }
    foreign.destroy();
    const Counts before;
    {
        const kiln::Stream stream;
        ASSERT_EQ(stream.get(), handle) << "the fake driver gives the destroyed handle again";
        EXPECT_NE(kiln::empty({1100}, DType::float32, stream).data(), foreign_block);
    }
    EXPECT_EQ(Counts().frees, before.frees + 1) << "only the kiln::Stream's block goes with it";
    const std::vector<FakeOp> recorded = kiln::test::fake_driver_ops();
    const FakeOp* free = latest(recorded, FakeOp::free_memory,
                                [&](const FakeOp& op) { return op.memory == foreign_block; });
    EXPECT_EQ(free, nullptr) << "the dead stream's block was freed on the new stream's handle";
}

} // namespace
