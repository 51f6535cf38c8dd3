// `kiln export` / `kiln import` underneath: Store::export_to and Store::import_from, against the
// format documented in archive.cpp. Import is all or nothing.

#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <xxhash.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

using kiln::cache::Config;
using kiln::cache::Key;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_in_shard;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;
using kiln::test::with_sources;

namespace {

// An archive record written by hand from the documented format (archive.cpp), so import is
// tested against the format and not only against export.
std::string record(const Key& key, const std::string& entry, const std::string& source) {
    std::string fields(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size());
    for (std::uint64_t size : {std::uint64_t(entry.size()), std::uint64_t(source.size())})
        for (int i = 0; i < 8; ++i)
            fields.push_back(static_cast<char>(size >> (8 * i)));
    const std::string body = fields + entry + source;
    const std::uint64_t hash = XXH3_64bits(body.data(), body.size());
    std::string bytes = "\x01" + body;
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>(hash >> (8 * i)));
    return bytes;
}

std::string archive(const std::vector<std::string>& records) {
    std::string bytes("KILNARC\0\x01\0\0\0", 12);
    for (const auto& r : records)
        bytes += r;
    bytes.push_back('\0');
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>(records.size() >> (8 * i)));
    return bytes;
}

std::string archive_of(const std::vector<kiln::cache::Entry>& entries) {
    std::vector<std::string> records;
    records.reserve(entries.size());
    for (const auto& entry : entries)
        records.push_back(record(entry.key, kiln::cache::encode_entry(entry), ""));
    return archive(records);
}

std::string error_of(Store& store, const std::filesystem::path& file) {
    try {
        store.local().import_from(file);
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(Archive, ExportThenImportCarriesEntriesAndSources) {
    TempDir dir;
    Store source_store(with_sources(dir / "from"));
    std::vector<kiln::cache::Entry> entries;
    for (int i = 0; i < 12; ++i) {
        entries.push_back(make_entry(key_of("carried " + std::to_string(i)), std::size_t{100} * i));
        ASSERT_TRUE(source_store.store(entries.back()));
        if (i % 2) {
            ASSERT_TRUE(source_store.local().save_source(entries.back().key,
                                                         "source " + std::to_string(i)));
        }
    }
    const auto exported = source_store.local().export_to(dir / "cache.kilnarc");
    EXPECT_EQ(exported.entries, 12u);
    EXPECT_EQ(exported.sources, 6u);

    Store target(config_for(dir / "to"));
    const auto imported = target.local().import_from(dir / "cache.kilnarc");
    EXPECT_EQ(imported.entries, 12u);
    EXPECT_EQ(imported.sources, 6u);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        auto loaded = target.load(entries[i].key);
        ASSERT_TRUE(loaded);
        EXPECT_EQ(kiln::cache::encode_entry(*loaded), kiln::cache::encode_entry(entries[i]));
        EXPECT_EQ(target.local().read_source(entries[i].key).has_value(), i % 2 == 1);
    }
    EXPECT_EQ(target.local().verify(false).damaged, 0u);
}

TEST(Archive, ExportLeavesDamagedEntriesOut) {
    TempDir dir;
    Store store(config_for(dir / "cache"));
    const auto good = make_entry(key_of("good")), bad = make_entry(key_of("bad"));
    ASSERT_TRUE(store.store(good));
    ASSERT_TRUE(store.store(bad));
    kiln::test::write_file(entry_file(dir / "cache", bad.key), "garbage");
    const auto exported = store.local().export_to(dir / "out");
    EXPECT_EQ(exported.entries, 1u);
    EXPECT_EQ(exported.skipped, 1u);
}

TEST(Archive, ImportReadsTheDocumentedFormat) {
    TempDir dir;
    const auto entry = make_entry(key_of("by hand"));
    kiln::test::write_file(dir / "a",
                           archive({record(entry.key, kiln::cache::encode_entry(entry), "src")}));
    Store store(config_for(dir / "cache"));
    EXPECT_EQ(store.local().import_from(dir / "a").entries, 1u);
    EXPECT_TRUE(store.load(entry.key));
    EXPECT_EQ(store.local().read_source(entry.key), "src");
}

TEST(Archive, ImportRejectsAnEntryUnderAnotherKey) {
    TempDir dir;
    const auto entry = make_entry(key_of("real"));
    const Key claimed = key_of("claimed");
    kiln::test::write_file(dir / "a",
                           archive({record(claimed, kiln::cache::encode_entry(entry), "")}));
    Store store(config_for(dir / "cache"));
    EXPECT_THROW(store.local().import_from(dir / "a"), kiln::Error);
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir / "cache", claimed)));
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir / "cache", entry.key)));
}

TEST(Archive, ImportRefusesWhatIsNotAnArchive) {
    TempDir dir;
    kiln::test::write_file(dir / "text", "hello, this is not an archive");
    Store store(config_for(dir / "cache"));
    EXPECT_THROW(store.local().import_from(dir / "text"), kiln::Error);
    EXPECT_THROW(store.local().import_from(dir / "missing"), kiln::Error);
    std::string huge = archive({});
    huge.resize(12);
    huge += "\x01" + std::string(16, 'k') + std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) +
            std::string(8, '\0');
    kiln::test::write_file(dir / "huge", huge);
    EXPECT_THROW(store.local().import_from(dir / "huge"), kiln::Error);
}

TEST(Archive, ExportToAnUnwritablePlaceThrows) {
    TempDir dir;
    Store store(config_for(dir / "cache"));
    kiln::test::write_file(dir / "file", "x");
    EXPECT_THROW(store.local().export_to(dir / "file" / "out"), kiln::Error);
}

TEST(Archive, ImportCountsNewAndAlreadyPresentEntries) {
    TempDir dir;
    std::vector<kiln::cache::Entry> entries;
    entries.reserve(5);
    for (int i = 0; i < 5; ++i)
        entries.push_back(make_entry(key_of("counted " + std::to_string(i))));
    kiln::test::write_file(dir / "a", archive_of(entries));
    Store store(config_for(dir / "cache"));
    for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(store.store(entries[i]));
    const auto first = store.local().import_from(dir / "a");
    EXPECT_EQ(first.entries, 2u);
    EXPECT_EQ(first.present, 3u);
    const auto again = store.local().import_from(dir / "a");
    EXPECT_EQ(again.entries, 0u);
    EXPECT_EQ(again.present, 5u);
    EXPECT_EQ(store.local().stats().entries, 5u);
}

TEST(Archive, ATruncatedArchivePublishesNothing) {
    TempDir dir;
    Store from(config_for(dir / "from"));
    for (int i = 0; i < 200; ++i)
        ASSERT_TRUE(from.store(make_entry(key_of(std::to_string(i)), 600)));
    ASSERT_EQ(from.local().export_to(dir / "a").entries, 200u);
    const std::string bytes = kiln::test::read_file(dir / "a");
    // Cut inside a record, between two records, and just before the end record's count.
    for (std::size_t cut : {bytes.size() / 2, bytes.size() - 9, bytes.size() - 1}) {
        kiln::test::write_file(dir / "cut", bytes.substr(0, cut));
        Store to(config_for(dir / ("to-" + std::to_string(cut))));
        const std::string error = error_of(to, dir / "cut");
        EXPECT_NE(error.find("nothing was imported"), std::string::npos) << cut << ": " << error;
        EXPECT_EQ(to.local().stats().entries, 0u) << cut;
        EXPECT_TRUE(to.local().list().empty()) << cut;
    }
}

TEST(Archive, ARecordWithABadHashInTheMiddlePublishesNothing) {
    TempDir dir;
    std::vector<std::string> records;
    for (int i = 0; i < 9; ++i) {
        const auto entry = make_entry(key_of("hashed " + std::to_string(i)));
        records.push_back(record(entry.key, kiln::cache::encode_entry(entry), "src"));
    }
    records[4].back() ^= 0x01; // the last byte of the record hash
    kiln::test::write_file(dir / "a", archive(records));
    Store store(config_for(dir / "cache"));
    const std::string error = error_of(store, dir / "a");
    EXPECT_NE(error.find("record 4 fails its checksum"), std::string::npos) << error;
    EXPECT_TRUE(store.local().list().empty());
    EXPECT_EQ(store.local().stats().entries, 0u);
}

TEST(Archive, ACountOrTailThatDoesNotMatchOrARepeatedKeyPublishesNothing) {
    TempDir dir;
    const auto a = make_entry(key_of("a")), b = make_entry(key_of("b"));
    const std::string ra = record(a.key, kiln::cache::encode_entry(a), "");
    const std::string rb = record(b.key, kiln::cache::encode_entry(b), "");
    std::string miscounted = archive({ra, rb});
    miscounted[miscounted.size() - 8] = 3;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {miscounted, "the record count does not match"},
        {archive({ra, rb}) + "x", "data follows the end record"},
        {archive({ra, rb, ra}), "have the same key"}};
    for (const auto& [bytes, why] : cases) {
        kiln::test::write_file(dir / "a", bytes);
        Store store(config_for(dir / ("cache-" + why)));
        const std::string error = error_of(store, dir / "a");
        EXPECT_NE(error.find(why), std::string::npos) << error;
        EXPECT_TRUE(store.local().list().empty()) << why;
    }
}

// A publish that fails part-way: past a file-size limit (as a full disk would, also for root),
// the third entry cannot be written. Run in a child, since the limit is per process.
TEST(Archive, APublishFailurePartWayRemovesWhatThisImportPublished) {
    TempDir dir;
    const auto present = make_entry(key_of("present"), 500);
    std::vector<kiln::cache::Entry> entries = {
        make_entry(key_of("first"), 500), present, make_entry(key_of("second"), 500),
        make_entry(key_of("too big"), 300000), make_entry(key_of("after"), 500)};
    kiln::test::write_file(dir / "a", archive_of(entries));
    Store store(config_for(dir / "cache"));
    ASSERT_TRUE(store.store(present));
    const auto error_file = dir / "error";
    const pid_t child = kiln::test::spawn([&] {
        const rlimit limit{100000, 100000};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
        Store importer(config_for(dir / "cache"));
        const std::string error = error_of(importer, dir / "a");
        kiln::test::write_file(error_file, error);
        return error.empty() ? 1 : 0;
    });
    ASSERT_EQ(kiln::test::wait_for(child), 0) << "the import did not fail";
    const std::string error = kiln::test::read_file(error_file);
    EXPECT_NE(error.find("cannot publish " + entries[3].key.hex()), std::string::npos) << error;
    EXPECT_NE(error.find("the 2 entries this import had published were removed again"),
              std::string::npos)
        << error;
    for (const auto& entry : entries)
        EXPECT_EQ(std::filesystem::exists(entry_file(dir / "cache", entry.key)),
                  entry.key == present.key)
            << entry.key.hex();
    EXPECT_EQ(store.local().stats().entries, 1u);
    EXPECT_EQ(store.local().stats().bytes,
              std::filesystem::file_size(entry_file(dir / "cache", present.key)));
}

// The same with a shard that cannot be written: read-only for a user, another user's for root
// (which a private cache refuses to use).
TEST(Archive, AnUnwritableShardPartWayRemovesWhatThisImportPublished) {
    TempDir dir;
    const std::vector<kiln::cache::Entry> entries = {make_entry(key_in_shard(0x10, "a")),
                                                     make_entry(key_in_shard(0x11, "b")),
                                                     make_entry(key_in_shard(0x12, "c"))};
    kiln::test::write_file(dir / "a", archive_of(entries));
    Store store(config_for(dir / "cache"));
    ASSERT_TRUE(store.store(make_entry(key_in_shard(0x12, "made the shard"))));
    const auto shard = dir / "cache" / "12";
    if (::geteuid() == 0)
        ASSERT_EQ(::chown(shard.c_str(), 12345, 12345), 0);
    else
        ASSERT_EQ(::chmod(shard.c_str(), 0500), 0);
    Store importer(config_for(dir / "cache"));
    const std::string error = error_of(importer, dir / "a");
    ::chown(shard.c_str(), ::geteuid(), ::getegid());
    ::chmod(shard.c_str(), 0700);
    EXPECT_NE(error.find("cannot publish " + entries[2].key.hex()), std::string::npos) << error;
    EXPECT_NE(error.find("the 2 entries this import had published were removed again"),
              std::string::npos)
        << error;
    for (const auto& entry : entries)
        EXPECT_FALSE(std::filesystem::exists(entry_file(dir / "cache", entry.key)));
}

TEST(Archive, ACheckedImportPublishesNothingUnlessEveryEntryPasses) {
    TempDir dir;
    auto good = make_entry(key_of("passes"));
    auto bad = make_entry(key_of("refused"));
    kiln::test::write_file(dir / "a", archive_of({good, bad}));
    // A check that refuses one entry by its payload, and counts what it saw (from several
    // threads: four checks at once).
    std::atomic<std::size_t> seen{0};
    const kiln::cache::EntryCheck check = [&](const kiln::cache::Entry& entry) -> std::string {
        ++seen;
        return entry.payload == bad.payload ? "a test refusal" : "";
    };
    Store store(config_for(dir / "cache"));
    try {
        store.local().import_from(dir / "a", check, 4);
        FAIL() << "imported an archive the check refused";
    } catch (const kiln::Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("1 of 2 entries fail verification, so nothing was imported"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find(bad.key.hex() + ": a test refusal"), std::string::npos) << message;
        EXPECT_EQ(message.find(good.key.hex()), std::string::npos) << message;
    }
    EXPECT_EQ(seen.load(), 2u) << "every entry is checked, so the message names every refusal";
    EXPECT_TRUE(store.local().list().empty());

    kiln::test::write_file(dir / "b", archive_of({good}));
    EXPECT_EQ(store.local().import_from(dir / "b", check).entries, 1u);
    EXPECT_EQ(store.local().peek(good.key)->payload, good.payload);
}

TEST(Archive, ACheckedImportRefusesASavedSourceThatIsNotTheRecipes) {
    TempDir dir;
    auto entry = make_entry(key_of("with recipe"));
    entry.recipe = kiln::cache::Recipe{};
    entry.recipe->source = "extern \"C\" __global__ void k() {}\n";
    const auto accept = [](const kiln::cache::Entry&) { return std::string(); };
    kiln::test::write_file(dir / "a", archive({record(entry.key, kiln::cache::encode_entry(entry),
                                                      "// another source\n")}));
    Store store(with_sources(dir / "cache"));
    EXPECT_THROW(store.local().import_from(dir / "a", accept), kiln::Error);
    EXPECT_TRUE(store.local().list().empty());
    kiln::test::write_file(dir / "b", archive({record(entry.key, kiln::cache::encode_entry(entry),
                                                      entry.recipe->source)}));
    EXPECT_EQ(store.local().import_from(dir / "b", accept).sources, 1u);
}

TEST(Archive, CarriesEntriesCompressedAndLoadsThemBack) {
    TempDir dir;
    Store source_store(config_for(dir / "from"));
    std::vector<kiln::cache::Entry> entries;
    std::size_t uncompressed = 0;
    for (int i = 0; i < 20; ++i) {
        entries.push_back(
            kiln::test::make_compressible_entry(key_of("small " + std::to_string(i))));
        uncompressed += kiln::test::encode_uncompressed(entries.back()).size();
        ASSERT_TRUE(source_store.store(entries.back()));
    }
    // One an older Kiln wrote travels as it is.
    const auto old = kiln::test::make_compressible_entry(key_of("old"));
    std::filesystem::create_directories(entry_file(dir / "from", old.key).parent_path());
    kiln::test::write_file(entry_file(dir / "from", old.key), kiln::test::encode_uncompressed(old));
    ASSERT_EQ(source_store.local().export_to(dir / "cache.kilnarc").entries, 21u);
    const auto archive_size = std::filesystem::file_size(dir / "cache.kilnarc");
    EXPECT_LT(archive_size * 4, uncompressed);

    Store target(config_for(dir / "to"));
    EXPECT_EQ(target.local().import_from(dir / "cache.kilnarc").entries, 21u);
    for (const auto& entry : entries) {
        EXPECT_EQ(kiln::test::read_file(entry_file(dir / "to", entry.key))[14], 1);
        auto loaded = target.load(entry.key);
        ASSERT_TRUE(loaded);
        EXPECT_EQ(loaded->payload, entry.payload);
        EXPECT_EQ(loaded->recipe, entry.recipe);
    }
    auto loaded = target.load(old.key);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->payload, old.payload);
    EXPECT_EQ(target.local().verify(false).damaged, 0u);
}
