// MemoStore: the memos of generated kernels are small verified files that obey the cache
// directory's rules; anything that does not verify is a miss.

#include "kiln/cache/memo_store.hpp"

#include "cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

using kiln::cache::decode_memo;
using kiln::cache::encode_memo;
using kiln::cache::Memo;
using kiln::cache::MemoStore;
using kiln::test::config_for;
using kiln::test::key_of;
using kiln::test::mode_of;
using kiln::test::read_file;
using kiln::test::TempDir;
using kiln::test::write_file;

namespace {

Memo memo_for(const std::string& name) {
    return {key_of("entry of " + name), name};
}

} // namespace

TEST(MemoStore, RoundTripsAMemoInItsShardWithThePrivateMode) {
    TempDir dir;
    const MemoStore store(config_for(dir.path()));
    const auto signature = key_of("signature");
    ASSERT_TRUE(store.store(signature, memo_for("my_kernel")));
    EXPECT_EQ(store.path(signature),
              dir.path() / signature.hex().substr(0, 2) / (signature.hex() + ".memo"));
    EXPECT_EQ(mode_of(store.path(signature)), 0600u);
    const auto loaded = store.load(signature);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->entry, memo_for("my_kernel").entry);
    EXPECT_EQ(loaded->name, "my_kernel");
    EXPECT_FALSE(store.load(key_of("another signature")));
}

TEST(MemoStore, ASharedCacheWritesGroupReadableMemos) {
    TempDir dir;
    kiln::cache::Config config = config_for(dir / "team");
    config.shared = true;
    const MemoStore store(config);
    const auto signature = key_of("shared");
    ASSERT_TRUE(store.store(signature, memo_for("k")));
    EXPECT_EQ(mode_of(store.path(signature)), 0660u);
    EXPECT_TRUE(store.load(signature));
}

TEST(MemoStore, EveryDamagedFileIsAMiss) {
    TempDir dir;
    const MemoStore store(config_for(dir.path()));
    const auto signature = key_of("damage");
    ASSERT_TRUE(store.store(signature, memo_for("k")));
    const std::string good = read_file(store.path(signature));
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
        write_file(store.path(signature), bad);
        ::chmod(store.path(signature).c_str(), 0600);
        EXPECT_FALSE(store.load(signature));
    }
}

TEST(MemoStore, ALinkOrAFileOthersCouldWriteIsAMiss) {
    TempDir dir;
    const MemoStore store(config_for(dir.path()));
    const auto signature = key_of("planted");
    ASSERT_TRUE(store.store(signature, memo_for("k"))); // makes its shard
    std::filesystem::remove(store.path(signature));
    // A valid memo for the signature, reached through a link: not followed.
    const auto target = dir / "valid.memo";
    write_file(target, encode_memo(signature, memo_for("k")));
    ::chmod(target.c_str(), 0600);
    std::filesystem::create_symlink(target, store.path(signature));
    EXPECT_FALSE(store.load(signature));
    std::filesystem::remove(store.path(signature));
    // The same bytes in a file any user may write: planted, whoever wrote it.
    write_file(store.path(signature), encode_memo(signature, memo_for("k")));
    ::chmod(store.path(signature).c_str(), 0666);
    EXPECT_FALSE(store.load(signature));
    ::chmod(store.path(signature).c_str(), 0600);
    EXPECT_TRUE(store.load(signature));
}

TEST(MemoStore, ReadOnlyAndDisabledCachesWriteNothing) {
    TempDir dir;
    kiln::cache::Config readonly = config_for(dir / "ro"), disabled = config_for(dir / "off");
    readonly.readonly = true;
    disabled.disabled = true;
    EXPECT_FALSE(MemoStore(readonly).store(key_of("s"), memo_for("k")));
    EXPECT_FALSE(MemoStore(disabled).store(key_of("s"), memo_for("k")));
    EXPECT_FALSE(std::filesystem::exists(dir / "ro"));
    EXPECT_FALSE(std::filesystem::exists(dir / "off"));
    EXPECT_FALSE(MemoStore(config_for(dir.path())).store(key_of("s"), memo_for("")));
}
