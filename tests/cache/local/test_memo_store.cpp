// The memos of generated kernels (Store::load_memo / store_memo): verified files that hold a
// kernel's cubin and obey the cache directory's rules; anything that does not verify is a miss.
// They count towards the cache's size, are evicted and verified like entries.

#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

using kiln::cache::decode_memo;
using kiln::cache::encode_memo;
using kiln::cache::Memo;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::key_of;
using kiln::test::mode_of;
using kiln::test::payload_for;
using kiln::test::read_file;
using kiln::test::TempDir;
using kiln::test::write_file;

namespace {

Memo memo_for(const std::string& name, std::size_t cubin_size = 700) {
    const auto entry = key_of("entry of " + name);
    return {entry, name, payload_for(entry, cubin_size)};
}

} // namespace

TEST(MemoStore, RoundTripsAMemoWithItsCubinInItsShardWithThePrivateMode) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto signature = key_of("signature");
    ASSERT_TRUE(store.store_memo(signature, memo_for("my_kernel")));
    EXPECT_EQ(store.local().memo_path(signature),
              dir.path() / signature.hex().substr(0, 2) / (signature.hex() + ".memo"));
    EXPECT_EQ(mode_of(store.local().memo_path(signature)), 0600u);
    const auto loaded = store.load_memo(signature);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->entry, memo_for("my_kernel").entry);
    EXPECT_EQ(loaded->name, "my_kernel");
    EXPECT_EQ(loaded->cubin, memo_for("my_kernel").cubin);
    EXPECT_FALSE(store.load_memo(key_of("another signature")));
    // A cubin larger than the lookup's read buffer is read the other way.
    const auto big = key_of("big");
    ASSERT_TRUE(store.store_memo(big, memo_for("big_kernel", 300 << 10)));
    const auto loaded_big = store.load_memo(big);
    ASSERT_TRUE(loaded_big);
    EXPECT_EQ(loaded_big->cubin, memo_for("big_kernel", 300 << 10).cubin);
}

TEST(MemoStore, ASharedCacheWritesGroupReadableMemos) {
    TempDir dir;
    kiln::cache::Config config = config_for(dir / "team");
    config.shared = true;
    Store store(config);
    const auto signature = key_of("shared");
    ASSERT_TRUE(store.store_memo(signature, memo_for("k")));
    EXPECT_EQ(mode_of(store.local().memo_path(signature)), 0660u);
    EXPECT_TRUE(store.load_memo(signature));
}

TEST(MemoStore, EveryDamagedFileIsAMiss) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto signature = key_of("damage");
    ASSERT_TRUE(store.store_memo(signature, memo_for("k", 64)));
    const std::string good = read_file(store.local().memo_path(signature));
    ASSERT_TRUE(decode_memo(good, signature));
    EXPECT_FALSE(decode_memo(good, key_of("not its signature")));

    std::vector<std::string> damaged;
    for (std::size_t at = 0; at < good.size(); ++at) {
        std::string bad = good;
        bad[at] ^= 0x01;
        damaged.push_back(bad);
    }
    damaged.push_back(good.substr(0, good.size() - 1));
    damaged.emplace_back();
    damaged.push_back(good + "x");
    damaged.emplace_back(4096, 'M');
    for (const std::string& bad : damaged) {
        write_file(store.local().memo_path(signature), bad);
        ::chmod(store.local().memo_path(signature).c_str(), 0600);
        EXPECT_FALSE(store.load_memo(signature));
    }
    // Version 1 memos (no cubin) are not read.
    std::string version1 = good;
    version1[8] = 1;
    EXPECT_FALSE(decode_memo(version1, signature));
}

TEST(MemoStore, ALinkOrAFileOthersCouldWriteIsAMiss) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto signature = key_of("planted");
    ASSERT_TRUE(store.store_memo(signature, memo_for("k"))); // makes its shard
    std::filesystem::remove(store.local().memo_path(signature));
    // A valid memo for the signature, reached through a link: not followed.
    const auto target = dir / "valid.memo";
    write_file(target, encode_memo(signature, memo_for("k")));
    ::chmod(target.c_str(), 0600);
    std::filesystem::create_symlink(target, store.local().memo_path(signature));
    EXPECT_FALSE(store.load_memo(signature));
    std::filesystem::remove(store.local().memo_path(signature));
    // The same bytes in a file any user may write: planted, whoever wrote it.
    write_file(store.local().memo_path(signature), encode_memo(signature, memo_for("k")));
    ::chmod(store.local().memo_path(signature).c_str(), 0666);
    EXPECT_FALSE(store.load_memo(signature));
    ::chmod(store.local().memo_path(signature).c_str(), 0600);
    EXPECT_TRUE(store.load_memo(signature));
}

TEST(MemoStore, ReadOnlyDisabledAndEmptyMemosWriteNothing) {
    TempDir dir;
    kiln::cache::Config readonly = config_for(dir / "ro"), disabled = config_for(dir / "off");
    readonly.readonly = true;
    disabled.disabled = true;
    EXPECT_FALSE(Store(readonly).store_memo(key_of("s"), memo_for("k")));
    EXPECT_FALSE(Store(disabled).store_memo(key_of("s"), memo_for("k")));
    EXPECT_FALSE(std::filesystem::exists(dir / "ro"));
    EXPECT_FALSE(std::filesystem::exists(dir / "off"));
    Store store(config_for(dir.path()));
    EXPECT_FALSE(store.store_memo(key_of("s"), memo_for("")));
    EXPECT_FALSE(store.store_memo(key_of("s"), {key_of("e"), "k", ""}));
    EXPECT_FALSE(store.store_memo(key_of("s"), memo_for(std::string(1025, 'k'))));
    EXPECT_FALSE(std::filesystem::exists(store.local().memo_path(key_of("s"))));
}

// A memo holds a cubin: the cache's size counts it, and eviction and clear remove it.
TEST(MemoStore, MemosCountTowardsTheSizeAndAreEvictedLeastRecentlyUsedFirst) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto old_signature = key_of("old"), new_signature = key_of("new");
    ASSERT_TRUE(store.store_memo(old_signature, memo_for("old", 4000)));
    ASSERT_TRUE(store.store_memo(new_signature, memo_for("new", 4000)));
    const auto memo_size = std::filesystem::file_size(store.local().memo_path(old_signature));
    EXPECT_EQ(store.local().stats().bytes, 2 * memo_size);
    EXPECT_EQ(store.local().stats().entries, 0u); // memos are not entries
    EXPECT_EQ(store.local().stats().memos, 2u);
    const std::time_t now = std::time(nullptr);
    kiln::test::set_mtime(store.local().memo_path(new_signature),
                          now - 500); // older, but about to be used
    kiln::test::set_mtime(store.local().memo_path(old_signature), now - 300);
    ASSERT_TRUE(store.load_memo(new_signature)); // a hit makes it the most recently used
    EXPECT_GE(kiln::test::mtime_of(store.local().memo_path(new_signature)), now);
    const auto pruned = store.local().prune(memo_size);
    EXPECT_EQ(pruned.bytes, memo_size);
    EXPECT_EQ(pruned.memos, 1u);
    EXPECT_EQ(pruned.entries, 0u);
    EXPECT_FALSE(std::filesystem::exists(store.local().memo_path(old_signature)));
    EXPECT_TRUE(store.load_memo(new_signature));
    EXPECT_EQ(store.local().clear().memos, 1u);
    EXPECT_FALSE(std::filesystem::exists(store.local().memo_path(new_signature)));
    EXPECT_EQ(store.local().stats().bytes, 0u);
    EXPECT_EQ(store.local().stats().memos, 0u);
}

// Storing memos keeps the cache within its limit as storing entries does.
TEST(MemoStore, StoringMemosPastTheLimitEvictsTheLeastRecentlyUsed) {
    TempDir dir;
    kiln::cache::Config config = config_for(dir.path());
    config.max_size = 4 * encode_memo(key_of("m0"), memo_for("m0", 3000)).size();
    Store store(config);
    const std::time_t now = std::time(nullptr);
    std::uint64_t largest_seen = 0;
    for (int i = 0; i < 12; ++i) {
        const auto signature = key_of("m" + std::to_string(i));
        ASSERT_TRUE(store.store_memo(signature, memo_for("m" + std::to_string(i), 3000)));
        kiln::test::set_mtime(store.local().memo_path(signature),
                              now - 1000 + i); // a clear age order
        largest_seen = std::max<std::uint64_t>(largest_seen, store.local().stats().bytes);
    }
    EXPECT_LE(largest_seen,
              config.max_size + std::filesystem::file_size(store.local().memo_path(key_of("m11"))));
    EXPECT_TRUE(store.load_memo(key_of("m11"))); // the newest stays
    EXPECT_FALSE(store.load_memo(key_of("m0"))); // the oldest went
}

TEST(MemoStore, AMemoHitCountsAsACacheHit) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto signature = key_of("counted");
    ASSERT_TRUE(store.store_memo(signature, memo_for("k")));
    const auto before = store.local().stats();
    ASSERT_TRUE(store.load_memo(signature));
    EXPECT_FALSE(store.load_memo(key_of("no such memo")));
    const auto after = store.local().stats();
    EXPECT_EQ(after.hits, before.hits + 1);
    EXPECT_EQ(after.misses, before.misses); // the entry lookup that follows a miss counts it
}

TEST(MemoStore, VerifyReportsAndFixesDamagedMemos) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto good = key_of("good"), bad = key_of("bad"), loose = key_of("loose");
    ASSERT_TRUE(store.store_memo(good, memo_for("good")));
    ASSERT_TRUE(store.store_memo(bad, memo_for("bad")));
    ASSERT_TRUE(store.store_memo(loose, memo_for("loose")));
    std::string bytes = read_file(store.local().memo_path(bad));
    bytes[bytes.size() / 2] ^= 0x10;
    write_file(store.local().memo_path(bad), bytes);
    ::chmod(store.local().memo_path(bad).c_str(), 0600);
    ::chmod(store.local().memo_path(loose).c_str(), 0666);

    const auto checked = store.local().verify(false);
    EXPECT_EQ(checked.checked, 3u);
    EXPECT_EQ(checked.ok, 1u);
    EXPECT_EQ(checked.damaged, 2u);
    EXPECT_EQ(checked.removed, 0u);
    ASSERT_EQ(checked.problems.size(), 2u);
    EXPECT_TRUE(std::filesystem::exists(store.local().memo_path(bad)));

    const auto fixed = store.local().verify(true);
    EXPECT_EQ(fixed.removed, 2u);
    EXPECT_FALSE(std::filesystem::exists(store.local().memo_path(bad)));
    EXPECT_FALSE(std::filesystem::exists(store.local().memo_path(loose)));
    EXPECT_TRUE(store.load_memo(good));
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
}
