// The maintenance API behind `kiln cache ...`: list and peek (export and import: test_archive).

#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include "../cache_test_util.hpp"
#include "elf_files.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

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
using kiln::test::with_sources;

namespace {} // namespace

TEST(Maintenance, ListShowsEachEntryWithItsMetadata) {
    TempDir dir;
    Store store(with_sources(dir.path()));
    auto entry = make_entry(key_of("listed"), 3000);
    entry.arch = "sm_80";
    entry.kernel_names = {"_Z3addIfEvPT_", "_Z5scalePf"};
    ASSERT_TRUE(store.store(entry));
    ASSERT_TRUE(store.local().save_source(entry.key, "source"));
    ASSERT_TRUE(store.store(make_entry(key_of("other"))));
    const auto infos = store.local().list();
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
    EXPECT_TRUE(store.local().list().empty());
}

TEST(Maintenance, PeekNeitherCountsNorTouches) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("peek"));
    ASSERT_TRUE(store.store(entry));
    const std::time_t long_ago = std::time(nullptr) - 100000;
    kiln::test::set_mtime(entry_file(dir.path(), entry.key), long_ago);
    auto peeked = store.local().peek(entry.key);
    ASSERT_TRUE(peeked);
    EXPECT_EQ(peeked->payload, entry.payload);
    std::string why;
    EXPECT_FALSE(store.local().peek(key_of("absent"), &why));
    EXPECT_EQ(why, "no such entry");
    EXPECT_EQ(kiln::test::mtime_of(entry_file(dir.path(), entry.key)), long_ago);
    EXPECT_EQ(store.local().stats().hits, 0u);
    EXPECT_EQ(store.local().stats().misses, 0u);
}

TEST(Maintenance, Version1EntriesAreListedVerifiedAndPruned) {
    // A cache left by a Kiln of format version 1: programs never ask for its keys any more, but
    // the tools still see, check and clean it up.
    TempDir dir;
    Store store(config_for(dir.path()));
    auto old = make_entry(key_of("version 1"));
    old.format_version = 1;
    ASSERT_TRUE(store.store(old));
    ASSERT_TRUE(store.store(make_entry(key_of("version 2"))));
    const auto infos = store.local().list();
    ASSERT_EQ(infos.size(), 2u);
    for (const auto& info : infos)
        EXPECT_EQ(info.format_version, info.key == old.key ? 1u : kiln::cache::kEntryFormatVersion);
    const auto checked = store.local().verify(false);
    EXPECT_EQ(checked.ok, 2u);
    EXPECT_EQ(checked.damaged, 0u);
    const auto peeked = store.local().peek(old.key);
    ASSERT_TRUE(peeked);
    EXPECT_EQ(peeked->format_version, 1u);
    EXPECT_EQ(store.local().prune(0).entries, 2u);
    EXPECT_TRUE(store.local().list().empty());
}

TEST(Maintenance, ListNamesTheKernelsOfEachVersion1Entry) {
    // Version-1 entries record no kernel names: the listing reads them from the cubin.
    TempDir dir;
    Store store(config_for(dir.path()));
    auto entry = make_entry(key_of("cubin"));
    entry.format_version = 1;
    entry.payload = kiln::test::sample_cubin();
    entry.lowered_names = {{"fill<3>", "_Z4fillILi3EEvPi"}}; // k has no name expression
    ASSERT_TRUE(store.store(entry));
    auto other = make_entry(key_of("not an ELF file"));
    other.format_version = 1;
    ASSERT_TRUE(store.store(other));
    for (const auto& info : store.local().list()) {
        if (info.key == entry.key) {
            EXPECT_EQ(info.kernel_count, 2u);
            EXPECT_EQ(info.kernel_names, (std::vector<std::string>{"_Z4fillILi3EEvPi", "k"}));
        } else {
            // No symbol table to read: the lowered names stand in.
            EXPECT_EQ(info.kernel_names, (std::vector<std::string>{"_Z3addIfEvPT_", "_Z5scalePf"}));
        }
    }
}

TEST(Maintenance, ListShowsTheNamesANewEntryRecorded) {
    // Recorded at compile time, so the listing need not parse the payload (here no ELF file).
    TempDir dir;
    Store store(config_for(dir.path()));
    auto entry = make_entry(key_of("recorded"));
    entry.kernel_names = {"_Z4fillILi3EEvPi", "k"};
    ASSERT_TRUE(store.store(entry));
    const auto infos = store.local().list();
    ASSERT_EQ(infos.size(), 1u);
    EXPECT_EQ(infos[0].kernel_names, entry.kernel_names);
    EXPECT_EQ(infos[0].kernel_count, 2u);
    EXPECT_EQ(infos[0].format_version, kiln::cache::kEntryFormatVersion);
    EXPECT_FALSE(infos[0].has_recipe);
}
