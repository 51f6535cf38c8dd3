// A cache directory that cannot be used degrades to compiling without it: no exception, no crash,
// no damaged entry left behind.

#include "kiln/cache/store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

using kiln::cache::Config;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;

namespace {
kiln::cache::Key key_in_shard_other_than(const kiln::cache::Key& key) {
    return kiln::test::key_in_shard((key.bytes[0] + 1) % 256, "elsewhere");
}
} // namespace

TEST(StoreFailure, ReadOnlyDirectoryServesHitsAndFailsStoresQuietly) {
    if (::geteuid() == 0) GTEST_SKIP() << "running as root, which ignores directory permissions";
    TempDir dir;
    const auto entry = make_entry(key_of("kept"));
    {
        Store writer(config_for(dir.path()));
        ASSERT_TRUE(writer.store(entry));
    }
    const auto shard = entry_file(dir.path(), entry.key).parent_path();
    ASSERT_EQ(::chmod(shard.c_str(), 0500), 0);
    ASSERT_EQ(::chmod(dir.path().c_str(), 0500), 0);

    Store store(config_for(dir.path()));
    EXPECT_TRUE(store.load(entry.key));
    EXPECT_FALSE(store.store(make_entry(key_of("new"))));
    EXPECT_FALSE(store.store(make_entry(key_of("newer"))));
    EXPECT_FALSE(store.local().save_source(key_of("new"), "x"));
    EXPECT_FALSE(store.load(key_of("new")));
    EXPECT_EQ(store.local().stats().hits, 1u);
}

TEST(StoreFailure, AFileWhereTheDirectoryShouldBeDegrades) {
    TempDir dir;
    kiln::test::write_file(dir / "file", "not a directory");
    for (const auto& root : {dir / "file", dir / "file" / "cache"}) {
        Store store(config_for(root));
        const auto entry = make_entry(key_of("x"));
        EXPECT_FALSE(store.store(entry));
        EXPECT_FALSE(store.load(entry.key));
        EXPECT_FALSE(store.local().save_source(entry.key, "x"));
        store.invalidate(entry.key);
        EXPECT_EQ(store.local().stats().entries, 0u);
        EXPECT_TRUE(store.local().list().empty());
        EXPECT_EQ(store.local().verify(true).checked, 0u);
    }
    EXPECT_EQ(kiln::test::read_file(dir / "file"), "not a directory");
}

TEST(StoreFailure, AFileWhereAShardShouldBeInAReadOnlyCacheIsAMissOfThatShardOnly) {
    TempDir dir;
    const auto entry = make_entry(key_of("x"));
    const auto other = make_entry(key_in_shard_other_than(entry.key));
    ASSERT_TRUE(Store(config_for(dir.path())).store(other));
    kiln::test::write_file(entry_file(dir.path(), entry.key).parent_path(), "in the way");
    Config config = config_for(dir.path());
    config.readonly = true;
    Store store(config);
    EXPECT_FALSE(store.load(entry.key));
    EXPECT_TRUE(store.load(other.key));
    EXPECT_EQ(kiln::test::read_file(entry_file(dir.path(), entry.key).parent_path()), "in the way");
}

TEST(StoreFailure, AFullFilesystemFailsTheStoreWithoutDamage) {
    TempDir dir;
    const auto small = make_entry(key_of("small"), 1000);
    const auto big = make_entry(key_of("big"), 1 << 20);
    // RLIMIT_FSIZE stands in for a full disk: writes past it fail with EFBIG (once SIGXFSZ, which
    // would kill the process, is ignored by the store).
    const pid_t child = kiln::test::spawn([&] {
        rlimit limit{64 << 10, 64 << 10};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
        Store store(config_for(dir.path()));
        if (!store.store(small)) return 11;
        if (store.store(big)) return 12;
        if (store.store(big)) return 13;
        if (store.load(big.key)) return 14;
        if (!store.load(small.key)) return 15;
        return 0;
    });
    EXPECT_EQ(kiln::test::wait_for(child), 0) << "128 + 25 would mean SIGXFSZ killed the writer";

    Store store(config_for(dir.path()));
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), big.key)));
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
    for (const auto& file :
         std::filesystem::directory_iterator(entry_file(dir.path(), big.key).parent_path()))
        EXPECT_NE(file.path().filename().string().rfind(".tmp.", 0), 0u)
            << "temporary left: " << file.path();
}

TEST(StoreFailure, AUserSignalHandlerForSigxfszIsLeftAlone) {
    TempDir dir;
    const pid_t child = kiln::test::spawn([&] {
        struct sigaction mine {};
        mine.sa_handler = [](int) {};
        sigemptyset(&mine.sa_mask);
        ::sigaction(SIGXFSZ, &mine, nullptr);
        Store store(config_for(dir.path()));
        if (!store.store(make_entry(key_of("x")))) return 10;
        struct sigaction now {};
        ::sigaction(SIGXFSZ, nullptr, &now);
        return now.sa_handler == mine.sa_handler ? 0 : 11;
    });
    EXPECT_EQ(kiln::test::wait_for(child), 0);
}
