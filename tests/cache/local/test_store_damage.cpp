// Every kind of damage is a miss, counted, removed, and rewritten by the next store.

#include "kiln/cache/store.hpp"
#include "kiln/log.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <functional>
#include <ostream>
#include <sstream>

using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;

namespace {

struct Damage {
    const char* name;
    std::function<std::string(const std::string& good)> apply;
};

// Without it GoogleTest prints a Damage as its bytes, which differ in every build and end up in the
// CTest names that gtest_discover_tests makes ("# GetParam() = 40-byte object <5F-D3 ...>").
void PrintTo(const Damage& damage, std::ostream* out) {
    *out << damage.name;
}

std::string flip(std::string bytes, std::size_t offset) {
    bytes.at(offset) ^= 0x10;
    return bytes;
}

std::string from_end(std::string bytes, std::size_t back) {
    bytes.at(bytes.size() - back) ^= 0x01;
    return bytes;
}

const Damage kDamages[] = {
    {"Truncated", [](const std::string& b) { return b.substr(0, b.size() / 2); }},
    {"TruncatedInHeader", [](const std::string& b) { return b.substr(0, 20); }},
    {"Empty", [](const std::string&) { return std::string(); }},
    {"FlippedBitInMagic", [](const std::string& b) { return flip(b, 3); }},
    {"FlippedBitInVersion", [](const std::string& b) { return flip(b, 8); }},
    {"FlippedBitInKind", [](const std::string& b) { return flip(b, 12); }},
    {"FlippedBitInStoredKey", [](const std::string& b) { return flip(b, 20); }},
    {"FlippedBitInMetadataSize", [](const std::string& b) { return flip(b, 32); }},
    {"FlippedBitInPayloadSize", [](const std::string& b) { return flip(b, 40); }},
    {"FlippedBitInPayloadHash", [](const std::string& b) { return flip(b, 50); }},
    {"FlippedBitInHeadHash", [](const std::string& b) { return flip(b, 60); }},
    {"FlippedBitInMetadata", [](const std::string& b) { return flip(b, 70); }},
    {"FlippedBitInPayload", [](const std::string& b) { return from_end(b, 100); }},
    {"FlippedBitInLastByte", [](const std::string& b) { return from_end(b, 1); }},
    {"WrongMagic", [](const std::string& b) { return "NOTKILN!" + b.substr(8); }},
    {"WrongVersion",
     [](const std::string& b) {
         return b.substr(0, 8) + std::string("\x04\0\0\0", 4) + b.substr(12); // a future one
     }},
    {"AnotherKeysEntry",
     [](const std::string&) {
         return kiln::cache::encode_entry(make_entry(key_of("another"), 1000));
     }},
    {"Garbage", [](const std::string& b) { return std::string(b.size(), '\x5a'); }},
    {"TrailingBytes", [](const std::string& b) { return b + "tail"; }},
};

class StoreDamage : public ::testing::TestWithParam<Damage> {};

} // namespace

TEST_P(StoreDamage, IsACountedMissThatIsRemovedAndRewritten) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("victim"), 1000);
    ASSERT_TRUE(store.store(entry));
    const auto path = entry_file(dir.path(), entry.key);
    kiln::test::write_file(path, GetParam().apply(kiln::test::read_file(path)));

    EXPECT_FALSE(store.load(entry.key));
    EXPECT_FALSE(std::filesystem::exists(path)) << "a damaged entry is removed";
    const auto stats = store.local().stats();
    EXPECT_EQ(stats.damaged, 1u);
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_EQ(stats.hits, 0u);

    ASSERT_TRUE(store.store(entry));
    auto reloaded = store.load(entry.key);
    ASSERT_TRUE(reloaded);
    EXPECT_EQ(reloaded->payload, entry.payload);
}

TEST_P(StoreDamage, IsFoundByVerifyAndRemovedByFix) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("victim"), 1000);
    ASSERT_TRUE(store.store(entry));
    ASSERT_TRUE(store.store(make_entry(key_of("bystander"), 1000)));
    const auto path = entry_file(dir.path(), entry.key);
    kiln::test::write_file(path, GetParam().apply(kiln::test::read_file(path)));

    auto report = store.local().verify(false);
    EXPECT_EQ(report.checked, 2u);
    EXPECT_EQ(report.damaged, 1u);
    ASSERT_EQ(report.problems.size(), 1u);
    EXPECT_EQ(report.problems[0].first, path);
    EXPECT_TRUE(std::filesystem::exists(path)) << "verify without --fix changes nothing";

    report = store.local().verify(true);
    EXPECT_EQ(report.removed, 1u);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
    EXPECT_EQ(store.local().stats().damaged, 1u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreDamage, ::testing::ValuesIn(kDamages),
                         [](const auto& test_info) { return std::string(test_info.param.name); });

namespace {

// Damages three entries in turn and loads them; 0 when exactly one warning was logged. Runs in the
// death test's child, which ends with std::exit: the directory is made and removed in here, since a
// TempDir of the test body would never be destroyed there.
int damage_three_and_count_warnings() {
    TempDir temp;
    const std::filesystem::path& dir = temp.path();
    std::ostringstream log;
    kiln::logger().sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_st>(log));
    Store store(config_for(dir));
    for (const char* name : {"one", "two", "three"}) {
        const auto entry = make_entry(key_of(name));
        if (!store.store(entry)) return 10;
        kiln::test::write_file(entry_file(dir, entry.key), "garbage");
        if (store.load(entry.key)) return 11;
    }
    const std::string text = log.str();
    std::size_t messages = 0;
    for (auto at = text.find(" is damaged ("); at != std::string::npos;
         at = text.find(" is damaged (", at + 1))
        ++messages;
    if (messages != 1) return 12;
    return store.local().stats().damaged == 3 ? 0 : 13;
}

} // namespace

TEST(StoreDamageWarning, IsLoggedOncePerProcess) {
    // The flag is per process and other tests in this one may have used it: "threadsafe" death
    // tests run the statement in a freshly executed copy of this test binary.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(std::exit(damage_three_and_count_warnings()), ::testing::ExitedWithCode(0), "");
}
