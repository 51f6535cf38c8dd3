// Read-ahead (Store::read_ahead): a store files what its process used under the program, and the
// next store of the same program reads those memos and entries into memory with a lookup's
// checks, so that the first lookup of each reads no file. The list is a hint: anything damaged,
// planted or another program's is ignored, and damage on disk is still the lookup's to find.

#include "local/read_ahead.hpp"

#include "../cache_test_util.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using kiln::cache::Config;
using kiln::cache::EntryParts;
using kiln::cache::Key;
using kiln::cache::Memo;
using kiln::cache::Store;
using kiln::cache::detail::AheadItem;
using kiln::cache::detail::AheadKind;
using kiln::cache::detail::decode_ahead_list;
using kiln::cache::detail::encode_ahead_list;
using kiln::cache::detail::kMaxReadAhead;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::mode_of;
using kiln::test::payload_for;
using kiln::test::read_file;
using kiln::test::TempDir;
using kiln::test::write_file;

namespace fs = std::filesystem;

namespace {

Config reading_ahead(const fs::path& dir) {
    Config config = config_for(dir);
    config.read_ahead = true;
    return config;
}

Memo memo_for(const std::string& name) {
    const Key entry = key_of("entry of " + name);
    return {entry, name, payload_for(entry, 900)};
}

// The program's list files in the cache (one per program).
std::vector<fs::path> lists_in(const fs::path& dir) {
    std::vector<fs::path> found;
    for (const auto& file : fs::recursive_directory_iterator(dir))
        if (file.path().extension() == ".ahead") found.push_back(file.path());
    return found;
}

// A process of "program" that stored and used an entry and a memo.
void run_first_process(const fs::path& dir, const Key& entry_key, const Key& signature) {
    Store store(reading_ahead(dir));
    store.read_ahead("program");
    ASSERT_TRUE(store.store(make_entry(entry_key)));
    ASSERT_TRUE(store.store_memo(signature, memo_for("k")));
}

} // namespace

TEST(ReadAhead, TheNextProcessOfAProgramFindsWhatTheLastUsedInMemory) {
    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    ASSERT_EQ(lists_in(dir.path()).size(), 1u);
    EXPECT_EQ(mode_of(lists_in(dir.path())[0]), 0600u);

    Store next(reading_ahead(dir.path()));
    next.read_ahead("program");
    // The files are gone: what the lookups find was read ahead.
    fs::remove(entry_file(dir.path(), entry_key));
    fs::remove(next.local().memo_path(signature));
    const auto entry = next.load(entry_key, EntryParts::for_loading);
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->payload, make_entry(entry_key).payload);
    EXPECT_EQ(entry->lowered_names, make_entry(entry_key).lowered_names);
    const auto memo = next.load_memo(signature);
    ASSERT_TRUE(memo);
    EXPECT_EQ(memo->name, "k");
    EXPECT_EQ(memo->cubin, memo_for("k").cubin);
    EXPECT_EQ(memo->entry, memo_for("k").entry);
    EXPECT_EQ(next.local().stats().hits, 2u);
    // Taken once: a second lookup goes to the disk, which no longer has them.
    EXPECT_FALSE(next.load(entry_key, EntryParts::for_loading));
    EXPECT_FALSE(next.load_memo(signature));
}

TEST(ReadAhead, ALookupForTheWholeEntryReadsTheFile) {
    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    Store next(reading_ahead(dir.path()));
    next.read_ahead("program");
    fs::remove(entry_file(dir.path(), entry_key));
    // The recipe and link inputs were not read ahead: only the file has them.
    EXPECT_FALSE(next.load(entry_key, EntryParts::all));
}

TEST(ReadAhead, AnotherProgramOrAStoreNotReadingAheadFindsOnlyTheFiles) {
    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    {
        Store other(reading_ahead(dir.path()));
        other.read_ahead("another program");
        Store off(config_for(dir.path()));
        off.read_ahead("program");
        fs::remove(entry_file(dir.path(), entry_key));
        fs::remove(other.local().memo_path(signature));
        EXPECT_FALSE(other.load(entry_key, EntryParts::for_loading));
        EXPECT_FALSE(other.load_memo(signature));
        EXPECT_FALSE(off.load(entry_key, EntryParts::for_loading));
        EXPECT_FALSE(off.load_memo(signature));
    }
    // The other program used nothing, so filed nothing; the store not reading ahead files nothing.
    EXPECT_EQ(lists_in(dir.path()).size(), 1u);
}

TEST(ReadAhead, AStoreThatWasNeverToldItsProgramFilesNothing) {
    TempDir dir;
    {
        Store store(reading_ahead(dir.path()));
        ASSERT_TRUE(store.store(make_entry(key_of("e"))));
        ASSERT_TRUE(store.load(key_of("e")));
    }
    EXPECT_TRUE(lists_in(dir.path()).empty());
}

TEST(ReadAhead, DamageOnDiskIsNotReadAheadAndIsStillTheLookupsToFind) {
    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    std::string bytes = read_file(entry_file(dir.path(), entry_key));
    bytes[bytes.size() - 1] ^= 0x40;
    write_file(entry_file(dir.path(), entry_key), bytes);
    Store next(reading_ahead(dir.path()));
    next.read_ahead("program");
    EXPECT_EQ(next.local().stats().damaged, 0u); // a read ahead counts nothing and removes nothing
    EXPECT_TRUE(fs::exists(entry_file(dir.path(), entry_key)));
    EXPECT_FALSE(next.load(entry_key, EntryParts::for_loading));
    EXPECT_EQ(next.local().stats().damaged, 1u);
    EXPECT_FALSE(fs::exists(entry_file(dir.path(), entry_key)));
}

TEST(ReadAhead, AListThatIsDamagedPlantedOrWritableByOthersIsIgnored) {
    const Key program = key_of("program");
    const std::vector<AheadItem> items = {{AheadKind::entry, key_of("a")},
                                          {AheadKind::memo, key_of("b")}};
    const std::string good = encode_ahead_list(program, items);
    const auto decoded = decode_ahead_list(good, program);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(*decoded, items);
    EXPECT_FALSE(decode_ahead_list(good, key_of("another program")));
    for (std::size_t at = 0; at < good.size(); ++at) {
        std::string bad = good;
        bad[at] ^= 0x01;
        EXPECT_FALSE(decode_ahead_list(bad, program)) << "byte " << at;
    }
    EXPECT_FALSE(decode_ahead_list(good.substr(0, good.size() - 1), program));
    EXPECT_FALSE(decode_ahead_list(good + "x", program));

    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    const fs::path list = lists_in(dir.path()).at(0);
    const auto reads_ahead = [&] {
        Store next(reading_ahead(dir.path()));
        next.read_ahead("program");
        const fs::path hidden = dir / "hidden.kiln";
        fs::rename(entry_file(dir.path(), entry_key), hidden);
        const bool found = next.load(entry_key, EntryParts::for_loading).has_value();
        fs::rename(hidden, entry_file(dir.path(), entry_key));
        return found;
    };
    ASSERT_TRUE(reads_ahead());
    // Writable by others: not trusted, however well formed.
    ::chmod(list.c_str(), 0666);
    EXPECT_FALSE(reads_ahead());
    ::chmod(list.c_str(), 0600);
    ASSERT_TRUE(reads_ahead());
    // A link in the list's place is not followed.
    const fs::path real = dir / "real-list";
    fs::rename(list, real);
    fs::create_symlink(real, list);
    EXPECT_FALSE(reads_ahead());
}

TEST(ReadAhead, AListNamingTheSameKernelsIsNotWrittenAgain) {
    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    const fs::path list = lists_in(dir.path()).at(0);
    struct stat before {};
    ASSERT_EQ(::stat(list.c_str(), &before), 0);
    {
        // Uses one of the two, in another process's order: the same list.
        Store next(reading_ahead(dir.path()));
        next.read_ahead("program");
        ASSERT_TRUE(next.load_memo(signature));
    }
    struct stat after {};
    ASSERT_EQ(::stat(list.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);
    {
        // A new kernel: filed first, the old ones kept.
        Store next(reading_ahead(dir.path()));
        next.read_ahead("program");
        ASSERT_TRUE(next.store(make_entry(key_of("new"))));
    }
    Store reader(reading_ahead(dir.path()));
    reader.read_ahead("program");
    for (const Key& key : {key_of("new"), entry_key}) {
        fs::remove(entry_file(dir.path(), key));
        EXPECT_TRUE(reader.load(key, EntryParts::for_loading)) << key.hex();
    }
    fs::remove(reader.local().memo_path(signature));
    EXPECT_TRUE(reader.load_memo(signature));
}

TEST(ReadAhead, AMemoStandsForTheEntryItWasMadeFrom) {
    TempDir dir;
    const Memo memo = memo_for("generated");
    {
        Store store(reading_ahead(dir.path()));
        store.read_ahead("program");
        // A generated kernel's first compile: its entry is stored, then its memo.
        ASSERT_TRUE(store.store(make_entry(memo.entry)));
        ASSERT_TRUE(store.store_memo(key_of("signature"), memo));
    }
    Store next(reading_ahead(dir.path()));
    next.read_ahead("program");
    fs::remove(entry_file(dir.path(), memo.entry));
    fs::remove(next.local().memo_path(key_of("signature")));
    EXPECT_TRUE(next.load_memo(key_of("signature")));
    EXPECT_FALSE(next.load(memo.entry, EntryParts::for_loading)); // never read ahead
}

TEST(ReadAhead, AProgramsListKeepsTheFirstKernelsItUsedUpToTheLimit) {
    TempDir dir;
    std::vector<Key> keys;
    for (std::size_t i = 0; i < kMaxReadAhead + 6; ++i)
        keys.push_back(key_of("kernel " + std::to_string(i)));
    {
        Store store(reading_ahead(dir.path()));
        store.read_ahead("program");
        for (const Key& key : keys)
            ASSERT_TRUE(store.store(make_entry(key, 64)));
    }
    Store next(reading_ahead(dir.path()));
    next.read_ahead("program");
    std::vector<bool> found;
    for (const Key& key : keys) {
        fs::remove(entry_file(dir.path(), key));
        found.push_back(next.load(key, EntryParts::for_loading).has_value());
    }
    EXPECT_EQ(std::count(found.begin(), found.end(), true), static_cast<long>(kMaxReadAhead));
    EXPECT_TRUE(found.front());
    EXPECT_FALSE(found.back());
}

TEST(ReadAhead, ListsCountTowardsTheCacheAndAreClearedWithIt) {
    TempDir dir;
    run_first_process(dir.path(), key_of("raw kernel"), key_of("generated call"));
    const fs::path list = lists_in(dir.path()).at(0);
    Store store(config_for(dir.path()));
    const auto size = fs::file_size(list);
    EXPECT_EQ(store.local().stats().bytes,
              fs::file_size(entry_file(dir.path(), key_of("raw kernel"))) +
                  fs::file_size(store.local().memo_path(key_of("generated call"))) + size);
    store.local().clear();
    EXPECT_FALSE(fs::exists(list));
}

TEST(ReadAhead, ACacheDirectoryRemovedMeanwhileIsNotMadeAgain) {
    TempDir dir;
    const fs::path cache = dir / "cache";
    {
        Store store(reading_ahead(cache));
        store.read_ahead("program");
        ASSERT_TRUE(store.store(make_entry(key_of("e"))));
        fs::remove_all(cache); // a test's or a CI job's directory, removed before the process ends
    }
    EXPECT_FALSE(fs::exists(cache));
}

TEST(ReadAhead, VerifyReportsADamagedOrUntrustedListAndFixRemovesIt) {
    TempDir dir;
    run_first_process(dir.path(), key_of("raw kernel"), key_of("generated call"));
    const fs::path list = lists_in(dir.path()).at(0);
    Store store(config_for(dir.path()));
    auto result = store.local().verify(false);
    EXPECT_EQ(result.checked, 3u); // the entry, the memo and the list
    EXPECT_EQ(result.damaged, 0u);
    // Another program's list under this one's name.
    fs::copy_file(list, dir / "good-list");
    {
        Store other(reading_ahead(dir / "other"));
        other.read_ahead("another program");
        ASSERT_TRUE(other.store(make_entry(key_of("x"))));
    }
    fs::copy_file(lists_in(dir / "other").at(0), list, fs::copy_options::overwrite_existing);
    result = store.local().verify(false);
    ASSERT_EQ(result.problems.size(), 1u);
    EXPECT_EQ(result.problems[0].first, list);
    EXPECT_EQ(result.problems[0].second, "not a read-ahead list of its program");
    // Well formed but writable by others.
    fs::copy_file(dir / "good-list", list, fs::copy_options::overwrite_existing);
    ::chmod(list.c_str(), 0666);
    result = store.local().verify(true);
    ASSERT_EQ(result.problems.size(), 1u);
    EXPECT_NE(result.problems[0].second.find("not trusted"), std::string::npos);
    EXPECT_EQ(result.removed, 1u);
    EXPECT_FALSE(fs::exists(list));
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
}

TEST(ReadAhead, ItsCubinsAreVisitedWithTheirKernelsUntilALookupTakesThem) {
    TempDir dir;
    const Key entry_key = key_of("raw kernel"), signature = key_of("generated call");
    run_first_process(dir.path(), entry_key, signature);
    Store next(reading_ahead(dir.path()));
    next.read_ahead("program");
    const auto visited = [&] {
        std::vector<std::pair<std::string, std::vector<std::string>>> seen;
        next.visit_read_ahead_cubins(
            [&](std::string_view cubin, const std::vector<std::string_view>& kernels) {
                seen.emplace_back(std::string(cubin),
                                  std::vector<std::string>(kernels.begin(), kernels.end()));
            });
        return seen;
    };
    const auto both = visited();
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[0].first, memo_for("k").cubin);
    EXPECT_EQ(both[0].second, std::vector<std::string>{"k"});
    EXPECT_EQ(both[1].first, make_entry(entry_key).payload);
    EXPECT_EQ(both[1].second, make_entry(entry_key).kernel_names);
    // What a lookup took is its own now.
    ASSERT_TRUE(next.load_memo(signature));
    const auto rest = visited();
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].first, make_entry(entry_key).payload);
    // An exception from the visitor ends the visit, not the program.
    next.visit_read_ahead_cubins([](std::string_view, const std::vector<std::string_view>&) {
        throw std::runtime_error("x");
    });
    EXPECT_EQ(visited().size(), 1u);
}
