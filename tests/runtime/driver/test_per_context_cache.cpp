// PerContextCache, the one per-context cache of Kiln (runtime/per_context_cache.hpp), without a
// GPU: contexts are made-up handles, which the cache only compares and hashes.

#include "driver/per_context_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using kiln::detail::PerContextCache;

namespace {

CUcontext context(std::uintptr_t n) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): made-up context handles, never dereferenced
    return reinterpret_cast<CUcontext>(0x10000 + 0x100 * n);
}

struct IntHash {
    std::size_t operator()(int k) const noexcept { return static_cast<std::size_t>(k); }
};

} // namespace

TEST(PerContextCache, HoldsOneValuePerContextAndKey) {
    PerContextCache<std::string, int, IntHash> cache;
    int made = 0;
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 5; ++k)
            cache.get(context(c), k, [&] {
                ++made;
                return std::to_string(c) + "/" + std::to_string(k);
            });
    EXPECT_EQ(made, 15);
    EXPECT_EQ(cache.size(), 15u);
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 5; ++k) {
            const std::string expected = std::to_string(c) + "/" + std::to_string(k);
            EXPECT_EQ(cache.get(context(c), k, [] { return std::string("made again"); }), expected);
            ASSERT_NE(cache.find(context(c), k), nullptr);
            EXPECT_EQ(*cache.find(context(c), k), expected);
        }
    EXPECT_EQ(cache.find(context(3), 0), nullptr);
    EXPECT_EQ(cache.find(context(0), 5), nullptr);
}

TEST(PerContextCache, OneObjectUsedInSeveralContextsStaysOnTheLockFreePath) {
    // A kernel used on two devices alternately: after its first use in each, no lookup takes
    // the lock (a cache that remembers only the last context would take it on every switch).
    PerContextCache<int> cache;
    for (int call = 0; call < 1000; ++call) {
        const int device = call % 2;
        EXPECT_EQ(cache.get(context(device), {}, [&] { return device; }), device);
    }
    EXPECT_EQ(cache.misses(), 2u);
}

TEST(PerContextCache, ValuesStayWhereTheyAreAsTheTableGrows) {
    PerContextCache<std::string, int, IntHash> cache;
    const std::string* first = &cache.get(context(0), 0, [] { return std::string("first"); });
    for (int k = 1; k < 1000; ++k)
        cache.get(context(k % 7), k, [&] { return std::to_string(k); });
    EXPECT_EQ(&cache.get(context(0), 0, [] { return std::string("again"); }), first);
    EXPECT_EQ(*first, "first");
    for (int k = 1; k < 1000; ++k)
        ASSERT_NE(cache.find(context(k % 7), k), nullptr) << k;
}

TEST(PerContextCache, AMakeThatThrowsInsertsNothing) {
    PerContextCache<int> cache;
    EXPECT_THROW(cache.get(context(0), {}, []() -> int { throw std::runtime_error("no device"); }),
                 std::runtime_error);
    EXPECT_EQ(cache.find(context(0), {}), nullptr);
    EXPECT_EQ(cache.get(context(0), {}, [] { return 7; }), 7);
}

TEST(PerContextCache, ValuesThatCannotMoveAreMadeInPlace) {
    struct Guarded {
        std::mutex mutex;
        int value = 3;
    };
    PerContextCache<Guarded> cache;
    EXPECT_EQ(cache.get(context(0), {}, [] { return Guarded{}; }).value, 3);
}

TEST(PerContextCache, ThreadsAskingAtOnceAllGetTheValueThatWasKept) {
    PerContextCache<int, int, IntHash> cache;
    constexpr int kThreads = 8, kContexts = 4, kKeys = 64;
    std::atomic<int> made{0};
    std::vector<std::vector<const int*>> seen(kThreads);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int round = 0; round < 3; ++round)
                for (int c = 0; c < kContexts; ++c)
                    for (int k = 0; k < kKeys; ++k) {
                        const int* value = &cache.get(context(c), k, [&] {
                            ++made;
                            return c * kKeys + k;
                        });
                        if (round == 0) seen[t].push_back(value);
                        EXPECT_EQ(*value, c * kKeys + k);
                    }
        });
    for (auto& thread : threads)
        thread.join();
    EXPECT_EQ(cache.size(), static_cast<std::size_t>(kContexts) * kKeys);
    EXPECT_GE(made.load(), kContexts * kKeys);
    for (int t = 1; t < kThreads; ++t)
        EXPECT_EQ(seen[t], seen[0]) << "thread " << t << " got another value";
}
