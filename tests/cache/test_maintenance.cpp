// The maintenance API behind `kiln cache ...`: list, peek, export and import.

#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include "cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <xxhash.h>

#include <algorithm>
#include <ctime>

using kiln::cache::Config;
using kiln::cache::Key;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;

namespace {

Config with_sources(const std::filesystem::path& dir) {
    Config config = config_for(dir);
    config.save_source = true;
    return config;
}

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

} // namespace

TEST(Maintenance, ListShowsEachEntryWithItsMetadata) {
    TempDir dir;
    Store store(with_sources(dir.path()));
    auto entry = make_entry(key_of("listed"), 3000);
    entry.arch = "sm_80";
    ASSERT_TRUE(store.store(entry));
    ASSERT_TRUE(store.save_source(entry.key, "source"));
    ASSERT_TRUE(store.store(make_entry(key_of("other"))));
    const auto infos = store.list();
    ASSERT_EQ(infos.size(), 2u);
    const auto it =
        std::find_if(infos.begin(), infos.end(), [&](const auto& i) { return i.key == entry.key; });
    ASSERT_NE(it, infos.end());
    EXPECT_EQ(it->arch, "sm_80");
    EXPECT_EQ(it->nvrtc_version, "13.0.88");
    EXPECT_EQ(it->kernel_count, 2u);
    EXPECT_EQ(it->payload_size, 3000u);
    EXPECT_TRUE(it->has_source);
    EXPECT_EQ(it->size, std::filesystem::file_size(entry_file(dir.path(), entry.key)) + 6);
    const auto age = std::chrono::system_clock::now() - it->mtime;
    EXPECT_LT(age, std::chrono::hours(1));
}

TEST(Maintenance, ListSkipsDamagedEntries) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("damaged"));
    ASSERT_TRUE(store.store(entry));
    kiln::test::write_file(entry_file(dir.path(), entry.key), "garbage");
    EXPECT_TRUE(store.list().empty());
}

TEST(Maintenance, PeekNeitherCountsNorTouches) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("peek"));
    ASSERT_TRUE(store.store(entry));
    const std::time_t long_ago = std::time(nullptr) - 100000;
    kiln::test::set_mtime(entry_file(dir.path(), entry.key), long_ago);
    auto peeked = store.peek(entry.key);
    ASSERT_TRUE(peeked);
    EXPECT_EQ(peeked->payload, entry.payload);
    std::string why;
    EXPECT_FALSE(store.peek(key_of("absent"), &why));
    EXPECT_EQ(why, "no such entry");
    EXPECT_EQ(kiln::test::mtime_of(entry_file(dir.path(), entry.key)), long_ago);
    EXPECT_EQ(store.stats().hits, 0u);
    EXPECT_EQ(store.stats().misses, 0u);
}

TEST(Maintenance, ExportThenImportCarriesEntriesAndSources) {
    TempDir dir;
    Store source_store(with_sources(dir / "from"));
    std::vector<kiln::cache::Entry> entries;
    for (int i = 0; i < 12; ++i) {
        entries.push_back(make_entry(key_of("carried " + std::to_string(i)), 100 * i));
        ASSERT_TRUE(source_store.store(entries.back()));
        if (i % 2) {
            ASSERT_TRUE(
                source_store.save_source(entries.back().key, "source " + std::to_string(i)));
        }
    }
    const auto exported = source_store.export_to(dir / "cache.kilnarc");
    EXPECT_EQ(exported.entries, 12u);
    EXPECT_EQ(exported.sources, 6u);

    Store target(config_for(dir / "to"));
    const auto imported = target.import_from(dir / "cache.kilnarc");
    EXPECT_EQ(imported.entries, 12u);
    EXPECT_EQ(imported.sources, 6u);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        auto loaded = target.load(entries[i].key);
        ASSERT_TRUE(loaded);
        EXPECT_EQ(kiln::cache::encode_entry(*loaded), kiln::cache::encode_entry(entries[i]));
        EXPECT_EQ(target.read_source(entries[i].key).has_value(), i % 2 == 1);
    }
    EXPECT_EQ(target.verify(false).damaged, 0u);
}

TEST(Maintenance, ExportLeavesDamagedEntriesOut) {
    TempDir dir;
    Store store(config_for(dir / "cache"));
    const auto good = make_entry(key_of("good")), bad = make_entry(key_of("bad"));
    ASSERT_TRUE(store.store(good));
    ASSERT_TRUE(store.store(bad));
    kiln::test::write_file(entry_file(dir / "cache", bad.key), "garbage");
    const auto exported = store.export_to(dir / "out");
    EXPECT_EQ(exported.entries, 1u);
    EXPECT_EQ(exported.skipped, 1u);
}

TEST(Maintenance, ImportReadsTheDocumentedFormat) {
    TempDir dir;
    const auto entry = make_entry(key_of("by hand"));
    kiln::test::write_file(dir / "a",
                           archive({record(entry.key, kiln::cache::encode_entry(entry), "src")}));
    Store store(config_for(dir / "cache"));
    EXPECT_EQ(store.import_from(dir / "a").entries, 1u);
    EXPECT_TRUE(store.load(entry.key));
    EXPECT_EQ(store.read_source(entry.key), "src");
}

TEST(Maintenance, ImportRejectsAnEntryUnderAnotherKey) {
    TempDir dir;
    const auto entry = make_entry(key_of("real"));
    const Key claimed = key_of("claimed");
    kiln::test::write_file(dir / "a",
                           archive({record(claimed, kiln::cache::encode_entry(entry), "")}));
    Store store(config_for(dir / "cache"));
    EXPECT_THROW(store.import_from(dir / "a"), kiln::Error);
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir / "cache", claimed)));
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir / "cache", entry.key)));
}

TEST(Maintenance, ImportStopsAtDamageKeepingTheVerifiedEntriesBefore) {
    TempDir dir;
    Store from(config_for(dir / "from"));
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(from.store(make_entry(key_of(std::to_string(i)), 2000)));
    from.export_to(dir / "a");
    std::string bytes = kiln::test::read_file(dir / "a");
    bytes[bytes.size() / 2] ^= 0x04;
    kiln::test::write_file(dir / "damaged", bytes);
    kiln::test::write_file(dir / "truncated",
                           kiln::test::read_file(dir / "a").substr(0, bytes.size() / 2));

    for (const char* name : {"damaged", "truncated"}) {
        Store to(config_for(dir / (std::string("to-") + name)));
        EXPECT_THROW(to.import_from(dir / name), kiln::Error) << name;
        const auto report = to.verify(false);
        EXPECT_EQ(report.damaged, 0u) << name;
        EXPECT_LT(report.checked, 8u) << name;
    }
}

TEST(Maintenance, ImportRefusesWhatIsNotAnArchive) {
    TempDir dir;
    kiln::test::write_file(dir / "text", "hello, this is not an archive");
    Store store(config_for(dir / "cache"));
    EXPECT_THROW(store.import_from(dir / "text"), kiln::Error);
    EXPECT_THROW(store.import_from(dir / "missing"), kiln::Error);
    std::string huge = archive({});
    huge.resize(12);
    huge += "\x01" + std::string(16, 'k') + std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) +
            std::string(8, '\0');
    kiln::test::write_file(dir / "huge", huge);
    EXPECT_THROW(store.import_from(dir / "huge"), kiln::Error);
}

TEST(Maintenance, ExportToAnUnwritablePlaceThrows) {
    TempDir dir;
    Store store(config_for(dir / "cache"));
    kiln::test::write_file(dir / "file", "x");
    EXPECT_THROW(store.export_to(dir / "file" / "out"), kiln::Error);
}
