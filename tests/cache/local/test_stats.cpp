#include "kiln/cache/store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::HeldLock;
using kiln::test::key_in_shard;
using kiln::test::key_of;
using kiln::test::kWatchdogSeconds;
using kiln::test::make_entry;
using kiln::test::read_file;
using kiln::test::spill_files;
using kiln::test::TempDir;

TEST(Stats, CountersAddUpAcrossStoreInstances) {
    TempDir dir;
    {
        Store first(config_for(dir.path()));
        for (const char* name : {"a", "b", "c"})
            ASSERT_TRUE(first.store(make_entry(key_of(name))));
        ASSERT_TRUE(first.load(key_of("a")));
        ASSERT_TRUE(first.load(key_of("b")));
        ASSERT_FALSE(first.load(key_of("absent")));
    }
    Store second(config_for(dir.path()));
    ASSERT_TRUE(second.load(key_of("c")));
    const auto stats = second.local().stats();
    EXPECT_EQ(stats.stores, 3u);
    EXPECT_EQ(stats.hits, 3u);
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_EQ(stats.damaged, 0u);
    EXPECT_EQ(stats.entries, 3u);
    EXPECT_EQ(stats.bytes, 3 * kiln::cache::encode_entry(make_entry(key_of("a"))).size());
}

TEST(Stats, CountersAddUpAcrossProcesses) {
    TempDir dir;
    Store parent(config_for(dir.path()));
    ASSERT_TRUE(parent.store(make_entry(key_of("a"))));
    const pid_t child = kiln::test::spawn([&] {
        Store store(config_for(dir.path()));
        for (int i = 0; i < 5; ++i)
            if (!store.load(key_of("a"))) return 10;
        store.load(key_of("absent"));
        return 0;
    });
    ASSERT_EQ(kiln::test::wait_for(child), 0);
    ASSERT_TRUE(parent.load(key_of("a")));
    const auto stats = parent.local().stats();
    EXPECT_EQ(stats.hits, 6u);
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_EQ(stats.stores, 1u);
}

TEST(Stats, EntriesAndBytesAreAFreshCount) {
    TempDir dir;
    Store store(config_for(dir.path()));
    ASSERT_TRUE(store.store(make_entry(key_of("a"))));
    ASSERT_TRUE(store.store(make_entry(key_of("b"))));
    std::filesystem::remove(entry_file(dir.path(), key_of("a"))); // behind the store's back
    const auto stats = store.local().stats();
    EXPECT_EQ(stats.entries, 1u);
    EXPECT_EQ(stats.bytes, std::filesystem::file_size(entry_file(dir.path(), key_of("b"))));
}

TEST(Stats, AGarbledStatsFileIsIgnoredAndRewritten) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("a"));
    ASSERT_TRUE(store.store(entry));
    const auto stats_file = entry_file(dir.path(), entry.key).parent_path() / "stats";
    kiln::test::write_file(stats_file,
                           "hits banana\n\x01\x02\x03 garbage\nmisses 99999999999999999999999\n");
    EXPECT_NO_THROW(store.local().stats());
    ASSERT_TRUE(store.load(entry.key));
    EXPECT_EQ(store.local().stats().hits, 1u);
    ASSERT_TRUE(store.store(make_entry(key_of("a")))); // a write adds the deferred hit
    EXPECT_NE(kiln::test::read_file(stats_file).find("hits 1\n"), std::string::npos);
}

TEST(Stats, AreKeptPerShardAndTheUsageForTheWholeCacheInPlainText) {
    TempDir dir;
    const auto entry = make_entry(key_of("a"));
    {
        Store store(config_for(dir.path()));
        ASSERT_TRUE(store.store(entry));
        ASSERT_TRUE(store.load(entry.key));
    } // the hit is written when the store closes
    const std::string text =
        kiln::test::read_file(entry_file(dir.path(), entry.key).parent_path() / "stats");
    EXPECT_NE(text.find("hits 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("stores 1\n"), std::string::npos) << text;
    const std::string usage = kiln::test::read_file(dir / "usage");
    EXPECT_NE(usage.find("files 1\n"), std::string::npos) << usage;
    EXPECT_NE(usage.find("bytes " + std::to_string(kiln::cache::encode_entry(entry).size()) + "\n"),
              std::string::npos)
        << usage;
}

TEST(Stats, AHitWritesNoFileAndItsCountIsWrittenWhenTheStoreCloses) {
    TempDir dir;
    const auto entry = make_entry(key_of("a"));
    const auto stats_file = entry_file(dir.path(), entry.key).parent_path() / "stats";
    {
        Store store(config_for(dir.path()));
        ASSERT_TRUE(store.store(entry));
        const std::string before = kiln::test::read_file(stats_file);
        ASSERT_TRUE(store.load(entry.key));
        EXPECT_EQ(kiln::test::read_file(stats_file), before) << "a lookup wrote the stats file";
        EXPECT_EQ(store.local().stats().hits, 1u) << "counted in this process meanwhile";
    }
    EXPECT_NE(kiln::test::read_file(stats_file).find("hits 1\n"), std::string::npos);
    EXPECT_EQ(Store(config_for(dir.path())).local().stats().hits, 1u);
}

TEST(Stats, ManyHitsAreWrittenWithoutWaitingForTheStoreToClose) {
    TempDir dir;
    const auto entry = make_entry(key_of("a"));
    Store store(config_for(dir.path()));
    ASSERT_TRUE(store.store(entry));
    for (int i = 0; i < 64; ++i)
        ASSERT_TRUE(store.load(entry.key));
    EXPECT_EQ(Store(config_for(dir.path())).local().stats().hits, 64u)
        << "a long-running process that only reads still reports its hits";
}

TEST(Stats, WriteStatisticsShowsTheCountsToOtherStoresAtOnce) {
    TempDir dir;
    const auto entry = make_entry(key_of("a"));
    Store store(config_for(dir.path()));
    ASSERT_TRUE(store.store(entry));
    ASSERT_TRUE(store.load(entry.key));
    ASSERT_FALSE(store.load(key_of("absent")));
    EXPECT_EQ(Store(config_for(dir.path())).local().stats().hits, 0u) << "not written yet";
    store.local().write_statistics();
    const auto stats = Store(config_for(dir.path())).local().stats();
    EXPECT_EQ(stats.hits, 1u);
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_EQ(store.local().stats().hits, 1u) << "written once, not counted twice";
}

TEST(Stats, CountsKeptForARemovedCacheDirectoryDoNotMakeItAgain) {
    TempDir dir;
    const auto root = dir / "cache";
    const auto entry = make_entry(key_of("a"));
    {
        Store store(config_for(root));
        ASSERT_TRUE(store.store(entry));
        ASSERT_TRUE(store.load(entry.key));
        std::filesystem::remove_all(root); // e.g. a test's temporary cache, removed before exit
    }
    EXPECT_FALSE(std::filesystem::exists(root));
}

// Another process holds the locks of a shard's stats and of the usage file for as long as it
// likes (any member of a shared cache can): a process that ends meanwhile does not wait for it.
// What it counted is left beside the files, shown by `stats`, and added, once, by the next
// process that gets the locks.
TEST(Stats, AProcessEndingWhileAnotherHoldsTheLocksLeavesItsCountsForTheNextHolder) {
    TempDir dir;
    const auto shard = dir / "42";
    const auto first = make_entry(key_in_shard(0x42, "first"));
    const auto second = make_entry(key_in_shard(0x42, "second"));
    ASSERT_TRUE(Store(config_for(dir.path())).store(first));
    {
        HeldLock stats(shard / "stats"), usage(dir / "usage");
        ASSERT_TRUE(stats.held() && usage.held());
        const pid_t child = kiln::test::spawn([&] {
            ::alarm(kWatchdogSeconds);
            Store store(config_for(dir.path()));
            for (int i = 0; i < 3; ++i)
                if (!store.load(first.key)) return 10;
            if (store.load(key_in_shard(0x42, "absent"))) return 11;
            return store.store(second) ? 0 : 12;
        });
        ASSERT_EQ(kiln::test::wait_for(child), 0) << "128 + 14: the watchdog ended it";
        const auto left = spill_files(shard, "stats");
        ASSERT_EQ(left.size(), 1u);
        EXPECT_EQ(kiln::test::mode_of(shard / left[0]), 0600u);
        EXPECT_EQ(spill_files(dir.path(), "usage").size(), 1u);
        const auto shown = Store(config_for(dir.path())).local().stats();
        EXPECT_EQ(shown.hits, 3u);
        EXPECT_EQ(shown.misses, 1u);
        EXPECT_EQ(shown.stores, 2u);
    }
    Store store(config_for(dir.path()));
    ASSERT_TRUE(store.store(make_entry(key_in_shard(0x42, "third")))); // takes both locks
    EXPECT_TRUE(spill_files(shard, "stats").empty());
    EXPECT_TRUE(spill_files(dir.path(), "usage").empty());
    const std::string stats = read_file(shard / "stats");
    EXPECT_NE(stats.find("hits 3\n"), std::string::npos) << stats;
    EXPECT_NE(stats.find("misses 1\n"), std::string::npos) << stats;
    EXPECT_NE(stats.find("stores 3\n"), std::string::npos) << stats;
    const std::string usage = read_file(dir / "usage");
    EXPECT_NE(usage.find("files 3\n"), std::string::npos) << usage;
    EXPECT_NE(
        usage.find("bytes " + std::to_string(3 * kiln::cache::encode_entry(first).size()) + "\n"),
        std::string::npos)
        << usage;
    EXPECT_EQ(store.local().stats().hits, 3u) << "added once";
}

// `kiln cache stats --zero` while another process holds a shard's lock: it waits briefly, says
// it could not reset everything, and resets the rest, with the counts left beside them.
TEST(Stats, ZeroingFinishesWhenAShardIsLockedAndResetsTheRestWithTheCountsLeftBesideThem) {
    TempDir dir;
    {
        Store store(config_for(dir.path()));
        ASSERT_TRUE(store.store(make_entry(key_in_shard(0x42, "locked"))));
        ASSERT_TRUE(store.store(make_entry(key_in_shard(0x43, "free"))));
    }
    // As a process that found the free shard's stats locked leaves its counts.
    kiln::test::write_file(dir / "43" / ".stats-pending.0123456789abcdef", "hits 7\nend\n");
    HeldLock lock(dir / "42" / "stats");
    ASSERT_TRUE(lock.held());
    const pid_t child = kiln::test::spawn([&] {
        ::alarm(kWatchdogSeconds);
        return Store(config_for(dir.path())).local().zero_stats() ? 1 : 0;
    });
    EXPECT_EQ(kiln::test::wait_for(child), 0)
        << "1: it claimed to have reset a locked file; 128 + 14: the watchdog ended it";
    EXPECT_TRUE(spill_files(dir / "43", "stats").empty());
    EXPECT_NE(read_file(dir / "43" / "stats").find("stores 0\n"), std::string::npos);
    EXPECT_NE(read_file(dir / "42" / "stats").find("stores 1\n"), std::string::npos)
        << "left as it was";
    const auto shown = Store(config_for(dir.path())).local().stats();
    EXPECT_EQ(shown.hits, 0u);
    EXPECT_EQ(shown.stores, 1u);
}
