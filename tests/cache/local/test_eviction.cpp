#include "kiln/cache/store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <ctime>
#include <vector>

using kiln::cache::Config;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::set_mtime;
using kiln::test::TempDir;

TEST(Eviction, PruneRemovesTheLeastRecentlyUsedAndAHitCountsAsUse) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const std::time_t now = std::time(nullptr);
    const auto a = make_entry(key_of("a"), 1000), b = make_entry(key_of("b"), 1000),
               c = make_entry(key_of("c"), 1000);
    for (const auto* entry : {&a, &b, &c})
        ASSERT_TRUE(store.store(*entry));
    set_mtime(entry_file(dir.path(), a.key), now - 300); // oldest, but about to be used
    set_mtime(entry_file(dir.path(), b.key), now - 200);
    set_mtime(entry_file(dir.path(), c.key), now - 100);
    ASSERT_TRUE(store.load(a.key));

    const std::uint64_t entry_size = std::filesystem::file_size(entry_file(dir.path(), a.key));
    const auto result = store.local().prune(2 * entry_size);
    EXPECT_EQ(result.entries, 1u);
    EXPECT_EQ(result.bytes, entry_size);
    EXPECT_TRUE(std::filesystem::exists(entry_file(dir.path(), a.key)));
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), b.key)));
    EXPECT_TRUE(std::filesystem::exists(entry_file(dir.path(), c.key)));
    EXPECT_EQ(store.local().stats().evicted, 1u);
}

// A hit touches its entry at most once a minute: recency to the minute is all eviction needs, and
// a hot entry is not rewritten (an inode update, a journal write) by every process's first call.
TEST(Eviction, AHitTouchesAnEntryAtMostOnceAMinute) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("hot"));
    ASSERT_TRUE(store.store(entry));
    const auto file = entry_file(dir.path(), entry.key);
    const std::time_t now = std::time(nullptr);
    set_mtime(file, now - 20);
    ASSERT_TRUE(store.load(entry.key));
    EXPECT_EQ(kiln::test::mtime_of(file), now - 20) << "touched again within a minute";
    set_mtime(file, now - 90);
    ASSERT_TRUE(store.load(entry.key));
    EXPECT_GE(kiln::test::mtime_of(file), now) << "not touched after more than a minute";
}

TEST(Eviction, PruneByAgeKeepsRecentEntries) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto old_entry = make_entry(key_of("old")), new_entry = make_entry(key_of("new"));
    ASSERT_TRUE(store.store(old_entry));
    ASSERT_TRUE(store.store(new_entry));
    set_mtime(entry_file(dir.path(), old_entry.key), std::time(nullptr) - std::time_t{8} * 86400);
    const auto result = store.local().prune(std::uint64_t{1} << 40, std::chrono::hours(24 * 7));
    EXPECT_EQ(result.entries, 1u);
    EXPECT_FALSE(store.load(old_entry.key));
    EXPECT_TRUE(store.load(new_entry.key));
}

TEST(Eviction, PruneRemovesASavedSourceWithItsEntry) {
    TempDir dir;
    Config config = config_for(dir.path());
    config.save_source = true;
    Store store(config);
    const auto entry = make_entry(key_of("with source"));
    ASSERT_TRUE(store.store(entry));
    ASSERT_TRUE(store.local().save_source(entry.key, "source text"));
    const auto result = store.local().prune(0);
    EXPECT_EQ(result.entries, 1u);
    EXPECT_EQ(result.bytes,
              kiln::cache::encode_entry(entry).size() + std::string("source text").size());
    EXPECT_FALSE(std::filesystem::exists(store.local().source_path(entry.key)));
}

namespace {
// Bytes of every entry, source and trace in the cache, counted from the files.
std::uint64_t bytes_on_disk(const std::filesystem::path& dir) {
    std::uint64_t total = 0;
    for (const auto& file : std::filesystem::recursive_directory_iterator(dir)) {
        if (file.is_regular_file() &&
            (file.path().extension() == ".kiln" || file.path().extension() == ".cu"))
            total += file.file_size();
    }
    return total;
}
} // namespace

TEST(Eviction, AStoreOverTheLimitCleansTheWholeCacheOldestFirst) {
    TempDir dir;
    Config config = config_for(dir.path());
    const std::size_t entry_size =
        kiln::cache::encode_entry(make_entry(key_of("size"), 4000)).size();
    config.max_size = 10 * entry_size;
    Store store(config);

    const std::time_t base = std::time(nullptr) - 1000;
    std::vector<kiln::cache::Key> keys;
    for (int i = 0; i < 30; ++i) {
        const auto entry = make_entry(key_of(std::to_string(i)), 4000); // all over the shards
        ASSERT_TRUE(store.store(entry));
        set_mtime(entry_file(dir.path(), entry.key), base + i); // a clear age order
        keys.push_back(entry.key);
        EXPECT_LE(bytes_on_disk(dir.path()), config.max_size + entry_size) << "after store " << i;
    }
    std::vector<bool> present;
    present.reserve(keys.size());
    for (const auto& key : keys)
        present.push_back(std::filesystem::exists(entry_file(dir.path(), key)));
    EXPECT_TRUE(present.back()) << "the newest entry stays";
    EXPECT_FALSE(present.front()) << "the oldest went";
    for (std::size_t i = 1; i < present.size(); ++i)
        EXPECT_TRUE(!present[i - 1] || present[i]) << "evicted out of age order at " << i;
    EXPECT_GE(store.local().stats().evicted, 19u);
}

TEST(Eviction, ASmallLimitHoldsAfterEveryStoreWhateverTheShardCount) {
    // 300K with 200 small kernels kept 2.4x the limit when each shard kept 1/256 of it.
    TempDir dir;
    Config config = config_for(dir.path());
    config.max_size = 300 << 10;
    config.save_source = true;
    Store store(config);
    std::uint64_t largest = 0;
    for (int i = 0; i < 200; ++i) {
        const auto entry = make_entry(key_of("k" + std::to_string(i)), 2000 + 37 * (i % 50));
        const std::string source(500 + i, 's');
        ASSERT_TRUE(store.local().save_source(entry.key, source));
        ASSERT_TRUE(store.store(entry));
        largest = std::max<std::uint64_t>(largest,
                                          kiln::cache::encode_entry(entry).size() + source.size());
        ASSERT_LE(bytes_on_disk(dir.path()), config.max_size + largest) << "after store " << i;
    }
    EXPECT_GT(store.local().stats().entries, 50u) << "cleans down to 90%, not to nothing";
}

TEST(Eviction, SeveralWritersComeBackUnderTheLimitWithinOneCleanUp) {
    TempDir dir;
    Config config = config_for(dir.path());
    config.max_size = 200 << 10;
    std::vector<pid_t> children;
    children.reserve(4);
    for (int writer = 0; writer < 4; ++writer) {
        children.push_back(kiln::test::spawn([&, writer] {
            Store store(config);
            for (int i = 0; i < 60; ++i)
                if (!store.store(
                        make_entry(key_of(std::to_string(writer) + "/" + std::to_string(i)), 3000)))
                    return 10;
            return 0;
        }));
    }
    for (pid_t child : children)
        EXPECT_EQ(kiln::test::wait_for(child), 0);
    const std::size_t entry_size = kiln::cache::encode_entry(make_entry(key_of("x"), 3000)).size();
    // Racing writers may each be one entry over; one more store cleans up for all of them.
    Store store(config);
    ASSERT_TRUE(store.store(make_entry(key_of("last"), 3000)));
    EXPECT_LE(bytes_on_disk(dir.path()), config.max_size + entry_size);
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
}

TEST(Eviction, TheEntryJustStoredIsNeverEvictedEvenIfLargerThanTheLimit) {
    TempDir dir;
    Config config = config_for(dir.path());
    config.max_size = 100; // smaller than any entry
    Store store(config);
    const auto entry = make_entry(key_of("big"), 5000);
    ASSERT_TRUE(store.store(entry));
    EXPECT_TRUE(store.load(entry.key));
    ASSERT_TRUE(store.store(make_entry(key_of("bigger"), 6000)));
    EXPECT_FALSE(store.load(entry.key)) << "the older one made room";
}

TEST(Eviction, ZeroMaxSizeMeansNoLimit) {
    TempDir dir;
    Config config = config_for(dir.path());
    config.max_size = 0;
    Store store(config);
    for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(store.store(make_entry(kiln::test::key_in_shard(0, std::to_string(i)), 4000)));
    EXPECT_EQ(store.local().stats().entries, 10u);
    EXPECT_EQ(store.local().stats().evicted, 0u);
}

TEST(Eviction, ClearRemovesEverythingAndKeepsTheCountersWithoutCountingEvictions) {
    TempDir dir;
    Config config = config_for(dir.path());
    config.save_source = true;
    Store store(config);
    for (int i = 0; i < 20; ++i) {
        const auto entry = make_entry(key_of(std::to_string(i)));
        ASSERT_TRUE(store.store(entry));
        ASSERT_TRUE(store.local().save_source(entry.key, "x"));
    }
    ASSERT_TRUE(store.load(key_of("3")));
    const auto result = store.local().clear();
    EXPECT_EQ(result.entries, 20u);
    const auto stats = store.local().stats();
    EXPECT_EQ(stats.entries, 0u);
    EXPECT_EQ(stats.bytes, 0u);
    EXPECT_EQ(stats.stores, 20u);
    EXPECT_EQ(stats.hits, 1u);
    EXPECT_EQ(stats.evicted, 0u) << "cleared entries are not evictions";
    EXPECT_FALSE(store.load(key_of("3")));
}

TEST(Eviction, ACacheWithoutAUsageEstimateIsRecountedOnItsFirstStore) {
    // A cache filled by an older Kiln has no usage file: its first store recounts and cleans.
    TempDir dir;
    const std::size_t entry_size =
        kiln::cache::encode_entry(make_entry(key_of("size"), 4000)).size();
    {
        Config unlimited = config_for(dir.path());
        unlimited.max_size = 0;
        Store store(unlimited);
        for (int i = 0; i < 20; ++i)
            ASSERT_TRUE(store.store(make_entry(key_of(std::to_string(i)), 4000)));
    }
    std::filesystem::remove(dir / "usage");
    Config config = config_for(dir.path());
    config.max_size = 5 * entry_size;
    Store store(config);
    ASSERT_TRUE(store.store(make_entry(key_of("new"), 4000)));
    EXPECT_LE(bytes_on_disk(dir.path()), config.max_size + entry_size);
    EXPECT_TRUE(store.load(key_of("new")));
}

TEST(Eviction, ACleanUpNeedsFewFileDescriptors) {
    // An application may have most of its descriptors in use: a clean-up over 256 shards must not
    // hold one per shard.
    TempDir dir;
    const std::size_t entry_size =
        kiln::cache::encode_entry(make_entry(key_of("size"), 4000)).size();
    Config config = config_for(dir.path());
    config.max_size = 0;
    {
        Store store(config);
        for (int shard = 0; shard < 256; ++shard)
            ASSERT_TRUE(store.store(make_entry(kiln::test::key_in_shard(shard, "k"), 4000)));
    }
    const pid_t child = kiln::test::spawn([&] {
        rlimit limit{32, 32};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return 10;
        Config small = config_for(dir.path());
        small.max_size = 20 * entry_size;
        Store store(small);
        if (store.local().prune(small.max_size).entries < 200) return 11;
        return 0;
    });
    EXPECT_EQ(kiln::test::wait_for(child), 0);
    EXPECT_LE(bytes_on_disk(dir.path()), 20 * entry_size);
}
