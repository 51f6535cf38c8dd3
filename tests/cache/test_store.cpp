#include "kiln/cache/store.hpp"

#include "cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

using kiln::cache::Config;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::mode_of;
using kiln::test::TempDir;

namespace {

// Sets the umask for one test and puts the old one back.
class ScopedUmask {
  public:
    explicit ScopedUmask(mode_t mask)
        : m_old(::umask(mask)) {}
    ~ScopedUmask() { ::umask(m_old); }

  private:
    mode_t m_old;
};

} // namespace

TEST(Store, LoadsWhatItStored) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("a"), 2000);
    ASSERT_TRUE(store.store(entry));
    auto loaded = store.load(entry.key);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->payload, entry.payload);
    EXPECT_EQ(loaded->lowered_names, entry.lowered_names);
    EXPECT_EQ(loaded->arch, "sm_90");
}

TEST(Store, AnAbsentKeyIsACountedMiss) {
    TempDir dir;
    Store store(config_for(dir.path()));
    EXPECT_FALSE(store.load(key_of("absent")));
    EXPECT_EQ(store.local().stats().misses, 1u);
    EXPECT_EQ(store.local().stats().hits, 0u);
}

TEST(Store, EntriesAreShardedByTheFirstTwoHexDigits) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("sharded"));
    ASSERT_TRUE(store.store(entry));
    const std::string hex = entry.key.hex();
    EXPECT_TRUE(std::filesystem::is_regular_file(dir / hex.substr(0, 2) / (hex + ".kiln")));
}

TEST(Store, CreatesMissingParentsOwnerOnly) {
    TempDir dir;
    ScopedUmask umask(022);
    const auto root = dir / "a" / "b" / "cache";
    Store store(config_for(root));
    const auto entry = make_entry(key_of("modes"));
    ASSERT_TRUE(store.store(entry));
    EXPECT_EQ(mode_of(dir / "a"), 0700u);
    EXPECT_EQ(mode_of(root), 0700u);
    EXPECT_EQ(mode_of(entry_file(root, entry.key).parent_path()), 0700u);
    EXPECT_EQ(mode_of(entry_file(root, entry.key)), 0600u);
}

TEST(Store, SharedModeKeepsGroupPermissionsWhateverTheUmask) {
    TempDir dir;
    ScopedUmask umask(077);
    Config config = config_for(dir / "team");
    config.shared = true;
    config.save_source = true;
    Store store(config);
    const auto entry = make_entry(key_of("shared"));
    ASSERT_TRUE(store.store(entry));
    ASSERT_TRUE(store.local().save_source(entry.key, "source"));
    EXPECT_EQ(mode_of(dir / "team"), 02770u);
    EXPECT_EQ(mode_of(entry_file(dir / "team", entry.key).parent_path()), 02770u);
    EXPECT_EQ(mode_of(entry_file(dir / "team", entry.key)), 0660u);
    EXPECT_EQ(mode_of(store.local().source_path(entry.key)), 0660u);
}

TEST(Store, AHitRefreshesTheModificationTime) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("touch"));
    ASSERT_TRUE(store.store(entry));
    const std::time_t long_ago = std::time(nullptr) - 100000;
    kiln::test::set_mtime(entry_file(dir.path(), entry.key), long_ago);
    ASSERT_TRUE(store.load(entry.key));
    EXPECT_GT(kiln::test::mtime_of(entry_file(dir.path(), entry.key)), long_ago);
}

TEST(Store, StoringAgainReplacesTheEntry) {
    TempDir dir;
    Store store(config_for(dir.path()));
    auto entry = make_entry(key_of("again"), 100);
    ASSERT_TRUE(store.store(entry));
    entry.log = "second";
    ASSERT_TRUE(store.store(entry));
    EXPECT_EQ(store.load(entry.key)->log, "second");
    EXPECT_EQ(store.local().stats().entries, 1u);
}

TEST(Store, DisabledNeitherReadsNorWrites) {
    TempDir dir;
    Store writer(config_for(dir.path()));
    const auto entry = make_entry(key_of("disabled"));
    ASSERT_TRUE(writer.store(entry));
    Config config = config_for(dir.path());
    config.disabled = true;
    Store store(config);
    EXPECT_FALSE(store.load(entry.key));
    EXPECT_FALSE(store.store(make_entry(key_of("other"))));
    EXPECT_FALSE(store.local().save_source(entry.key, "x"));
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), key_of("other"))));
}

TEST(Store, ReadonlyServesHitsAndWritesNothing) {
    TempDir dir;
    const auto entry = make_entry(key_of("ro"));
    {
        Store writer(config_for(dir.path()));
        ASSERT_TRUE(writer.store(entry));
    }
    const std::time_t long_ago = std::time(nullptr) - 100000;
    kiln::test::set_mtime(entry_file(dir.path(), entry.key), long_ago);
    const auto stats_before =
        kiln::test::read_file(entry_file(dir.path(), entry.key).parent_path() / "stats");

    Config config = config_for(dir.path());
    config.readonly = true;
    Store store(config);
    EXPECT_TRUE(store.load(entry.key));
    EXPECT_FALSE(store.store(make_entry(key_of("new"))));
    EXPECT_FALSE(store.local().save_source(entry.key, "x"));
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), key_of("new"))));
    EXPECT_EQ(kiln::test::mtime_of(entry_file(dir.path(), entry.key)), long_ago);
    EXPECT_EQ(kiln::test::read_file(entry_file(dir.path(), entry.key).parent_path() / "stats"),
              stats_before);
    EXPECT_EQ(store.local().stats().hits, 1u) << "counted in this process only";
}

TEST(Store, SavesTheSourceBesideTheEntryOnce) {
    TempDir dir;
    Config config = config_for(dir.path());
    config.save_source = true;
    Store store(config);
    const auto key = key_of("source");
    auto path = store.local().save_source(key, "__global__ void k() {}");
    ASSERT_TRUE(path);
    EXPECT_EQ(*path, entry_file(dir.path(), key).parent_path() / (key.hex() + ".cu"));
    EXPECT_EQ(kiln::test::read_file(*path), "__global__ void k() {}");
    EXPECT_EQ(store.local().save_source(key, "ignored: the key covers the source"), path);
    EXPECT_EQ(kiln::test::read_file(*path), "__global__ void k() {}");
    EXPECT_EQ(store.local().read_source(key), "__global__ void k() {}");
}

TEST(Store, InvalidateRemovesTheEntryAndCountsItDamaged) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("rejected"));
    ASSERT_TRUE(store.store(entry));
    store.invalidate(entry.key);
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), entry.key)));
    EXPECT_EQ(store.local().stats().damaged, 1u);
    EXPECT_FALSE(store.load(entry.key));
}

TEST(Store, APlantedSymlinkIsNeverFollowed) {
    TempDir dir;
    Store store(config_for(dir / "cache"));
    const auto entry = make_entry(key_of("planted"));
    const auto victim = dir / "victim";
    kiln::test::write_file(victim, "precious");
    const auto path = entry_file(dir / "cache", entry.key);
    std::filesystem::create_directories(path.parent_path());
    std::filesystem::create_symlink(victim, path);

    EXPECT_FALSE(store.load(entry.key));
    ASSERT_TRUE(store.store(entry));
    EXPECT_FALSE(std::filesystem::is_symlink(path));
    EXPECT_TRUE(store.load(entry.key));
    EXPECT_EQ(kiln::test::read_file(victim), "precious");
}

TEST(Store, TemporariesAreNeverReadAsEntries) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("temp"));
    const auto final_path = entry_file(dir.path(), entry.key);
    std::filesystem::create_directories(final_path.parent_path());
    // A complete entry under a temporary's name: what a writer killed before rename() leaves.
    const auto temp = final_path.parent_path() / (".tmp." + entry.key.hex() + ".kiln.1.0");
    kiln::test::write_file(temp, kiln::cache::encode_entry(entry));
    EXPECT_FALSE(store.load(entry.key));
    EXPECT_TRUE(store.local().list().empty());
    EXPECT_EQ(store.local().verify(false).checked, 0u);
    EXPECT_EQ(store.local().stats().entries, 0u);
}

TEST(Store, StaleTemporariesAreCleanedUpYoungOnesKept) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto shard = dir / "ab";
    std::filesystem::create_directories(shard);
    kiln::test::write_file(shard / ".tmp.stale", "x");
    kiln::test::write_file(shard / ".tmp.young", "x");
    kiln::test::set_mtime(shard / ".tmp.stale", std::time(nullptr) - std::time_t{2} * 3600);
    EXPECT_EQ(store.local().prune(1u << 30).temporaries, 1u);
    EXPECT_FALSE(std::filesystem::exists(shard / ".tmp.stale"));
    EXPECT_TRUE(std::filesystem::exists(shard / ".tmp.young"));
}

TEST(Store, OnlyCanonicalEntryNamesAreEntries) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("names"));
    ASSERT_TRUE(store.store(entry));
    const auto path = entry_file(dir.path(), entry.key);
    std::string upper = entry.key.hex();
    for (auto& c : upper)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::filesystem::copy_file(path, path.parent_path() / (upper + ".kiln"));
    std::filesystem::copy_file(path, path.parent_path() / "..kiln");
    EXPECT_EQ(store.local().list().size(), 1u);
    EXPECT_EQ(store.local().verify(false).checked, 1u);
}

TEST(Store, APlantedFifoNeitherBlocksNorCounts) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("fifo"));
    const auto path = entry_file(dir.path(), entry.key);
    std::filesystem::create_directories(path.parent_path());
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    ASSERT_EQ(::mkfifo((path.parent_path() / "stats").c_str(), 0600), 0);

    // The entry's FIFO, and the one at the shard's bookkeeping name.
    EXPECT_EQ(store.local().verify(false).damaged, 2u);
    EXPECT_FALSE(store.load(entry.key));
    EXPECT_FALSE(std::filesystem::exists(path)) << "removed as damage";
    EXPECT_NO_THROW(store.local().stats());
    EXPECT_TRUE(std::filesystem::is_regular_file(path.parent_path() / "stats")) << "replaced";
}

TEST(Store, EntriesAreStoredCompressedAndOlderUncompressedOnesStillHit) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = kiln::test::make_compressible_entry(key_of("compressed"));
    ASSERT_TRUE(store.store(entry));
    const std::string file = kiln::test::read_file(entry_file(dir.path(), entry.key));
    EXPECT_EQ(file[14], 1); // zstd
    EXPECT_LT(file.size() * 4, kiln::test::encode_uncompressed(entry).size());
    auto loaded = store.load(entry.key);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->payload, entry.payload);
    EXPECT_EQ(loaded->recipe, entry.recipe);
    // An entry an older Kiln wrote (uncompressed, same key) is a hit, listed and verified.
    const auto old = kiln::test::make_compressible_entry(key_of("uncompressed"));
    std::filesystem::create_directories(entry_file(dir.path(), old.key).parent_path());
    kiln::test::write_file(entry_file(dir.path(), old.key), kiln::test::encode_uncompressed(old));
    auto old_loaded = store.load(old.key);
    ASSERT_TRUE(old_loaded);
    EXPECT_EQ(old_loaded->payload, old.payload);
    const auto listed = store.local().list();
    ASSERT_EQ(listed.size(), 2u);
    for (const auto& info : listed) {
        EXPECT_EQ(info.payload_size, entry.payload.size()); // decompressed, from the head
        EXPECT_EQ(info.kernel_count, 0u);
    }
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
    EXPECT_EQ(store.local().verify(false).ok, 2u);
}
