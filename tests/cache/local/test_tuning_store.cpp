// The launch tuner's records: a round trip, and every damaged, planted or misplaced file a miss.

#include "kiln/cache/tuning_store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using kiln::cache::decode_tuning_record;
using kiln::cache::encode_tuning_record;
using kiln::cache::TuningMiss;
using kiln::cache::TuningStore;
using kiln::test::config_for;
using kiln::test::key_of;
using kiln::test::mode_of;
using kiln::test::read_file;
using kiln::test::TempDir;
using kiln::test::write_file;

namespace {

const std::string kPayload = "block=512\nwaves=1\ndefault_ms=0.010000\nchosen_ms=0.008000\n";

} // namespace

TEST(TuningStore, RoundTripsAPayloadInItsShard) {
    TempDir dir;
    const TuningStore store(config_for(dir.path()));
    const auto key = key_of("round trip");
    ASSERT_TRUE(store.store(key, kPayload));
    EXPECT_EQ(store.path(key), dir.path() / key.hex().substr(0, 2) / (key.hex() + ".tune"));
    EXPECT_EQ(mode_of(store.path(key)), 0600u);
    TuningMiss why = TuningMiss::absent;
    EXPECT_EQ(store.load(key, &why), kPayload);
    EXPECT_EQ(why, TuningMiss::none);
    // A second store replaces the first.
    ASSERT_TRUE(store.store(key, "block=256\nwaves=0\n"));
    EXPECT_EQ(store.load(key), "block=256\nwaves=0\n");
}

TEST(TuningStore, MissingRecordOrDirectoryIsAnAbsentMiss) {
    TempDir dir;
    const TuningStore store(config_for(dir / "not-yet"));
    TuningMiss why = TuningMiss::none;
    EXPECT_FALSE(store.load(key_of("nothing"), &why));
    EXPECT_EQ(why, TuningMiss::absent);
    EXPECT_FALSE(std::filesystem::exists(dir / "not-yet")); // a load creates nothing
}

TEST(TuningStore, EveryDamagedFileIsAMiss) {
    TempDir dir;
    const TuningStore store(config_for(dir.path()));
    const auto key = key_of("damage");
    ASSERT_TRUE(store.store(key, kPayload));
    const std::string good = read_file(store.path(key));
    ASSERT_EQ(decode_tuning_record(good, key), kPayload);

    std::vector<std::string> damaged;
    for (std::size_t at = 0; at < good.size(); ++at) { // every byte: magic, key, length, payload
        std::string bad = good;
        bad[at] ^= 0x01;
        damaged.push_back(bad);
    }
    damaged.push_back(good.substr(0, good.size() - 1)); // truncated
    damaged.emplace_back();                             // empty
    damaged.push_back(good + "x");                      // trailing bytes
    damaged.emplace_back(4096, 'K');                    // over a record's size
    for (const std::string& bad : damaged) {
        write_file(store.path(key), bad);
        ::chmod(store.path(key).c_str(), 0600);
        TuningMiss why = TuningMiss::none;
        EXPECT_FALSE(store.load(key, &why));
        EXPECT_EQ(why, TuningMiss::damaged);
    }
}

TEST(TuningStore, RecordOfAnotherKeyUnderThisNameIsAMiss) {
    TempDir dir;
    const TuningStore store(config_for(dir.path()));
    const auto mine = key_of("mine"), other = key_of("other");
    ASSERT_TRUE(store.store(mine, kPayload));
    std::filesystem::create_directories(store.path(other).parent_path());
    write_file(store.path(other), encode_tuning_record(mine, kPayload)); // a valid record, moved
    ::chmod(store.path(other).c_str(), 0600);
    TuningMiss why = TuningMiss::none;
    EXPECT_FALSE(store.load(other, &why));
    EXPECT_EQ(why, TuningMiss::damaged);
}

TEST(TuningStore, PlantedSymlinkIsNotFollowedNorWrittenThrough) {
    TempDir dir;
    const TuningStore store(config_for(dir / "cache"));
    const auto key = key_of("planted");
    ASSERT_TRUE(store.store(key_of("make the shard"), kPayload));
    std::filesystem::create_directories(store.path(key).parent_path());
    // A valid record elsewhere, and a link to it where the record belongs.
    const auto target = dir / "elsewhere.tune";
    write_file(target, encode_tuning_record(key, kPayload));
    ::chmod(target.c_str(), 0600);
    std::filesystem::create_symlink(target, store.path(key));
    TuningMiss why = TuningMiss::none;
    EXPECT_FALSE(store.load(key, &why));
    EXPECT_EQ(why, TuningMiss::untrusted);
    // A store replaces the link by a file; what it pointed to is untouched.
    ASSERT_TRUE(store.store(key, "block=128\nwaves=0\n"));
    EXPECT_FALSE(std::filesystem::is_symlink(store.path(key)));
    EXPECT_EQ(read_file(target), encode_tuning_record(key, kPayload));
    EXPECT_EQ(store.load(key), "block=128\nwaves=0\n");
}

TEST(TuningStore, FileOthersCanWriteIsUntrusted) {
    TempDir dir;
    const TuningStore store(config_for(dir.path()));
    const auto key = key_of("world writable");
    ASSERT_TRUE(store.store(key, kPayload));
    ASSERT_EQ(::chmod(store.path(key).c_str(), 0666), 0);
    TuningMiss why = TuningMiss::none;
    EXPECT_FALSE(store.load(key, &why));
    EXPECT_EQ(why, TuningMiss::untrusted);
}

TEST(TuningStore, DirectoryInThePlaceOfARecordIsAMiss) {
    TempDir dir;
    const TuningStore store(config_for(dir.path()));
    const auto key = key_of("directory");
    std::filesystem::create_directories(store.path(key));
    EXPECT_FALSE(store.load(key));
}

TEST(TuningStore, DisabledReadOnlyAndOversizedStoresWriteNothing) {
    TempDir dir;
    auto config = config_for(dir.path());
    const auto key = key_of("modes");
    config.disabled = true;
    EXPECT_FALSE(TuningStore(config).store(key, kPayload));
    config.disabled = false;
    config.readonly = true;
    EXPECT_FALSE(TuningStore(config).store(key, kPayload));
    config.readonly = false;
    const TuningStore store(config);
    EXPECT_FALSE(store.store(key, std::string(TuningStore::kMaxPayload + 1, 'x')));
    EXPECT_FALSE(std::filesystem::exists(store.path(key)));
    ASSERT_TRUE(store.store(key, kPayload));
    config.disabled = true; // a disabled cache reads nothing either
    EXPECT_FALSE(TuningStore(config).load(key));
    config.disabled = false;
    config.readonly = true; // a read-only one does
    EXPECT_EQ(TuningStore(config).load(key), kPayload);
}

TEST(TuningStore, SharedModeWritesGroupReadableRecords) {
    TempDir dir;
    auto config = config_for(dir / "team"); // made by Kiln: 2770, as a team cache must be
    config.shared = true;
    const TuningStore store(config);
    const auto key = key_of("shared");
    ASSERT_TRUE(store.store(key, kPayload));
    EXPECT_EQ(mode_of(store.path(key)), 0660u);
    EXPECT_EQ(store.load(key), kPayload);
}
