// Signed entries through the cache directory (docs/architecture.md, "What the cache trusts"):
// with KILN_TRUSTED_KEYS a reader uses from a shared directory, an archive or a write-back only
// what a trusted key signed, counts the rest `untrusted`, and `verify` names every signer.

#include "../cache_test_util.hpp"

#include "kiln/cache/local_store.hpp"
#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/signing.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/cache/tuning_store.hpp"

#include "seal.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <random>

using namespace kiln::test;
using kiln::cache::Config;
using kiln::cache::Entry;
using kiln::cache::LocalStore;
using kiln::cache::Provenance;
using kiln::cache::SigningKey;
using kiln::cache::Store;
using kiln::cache::TrustedKeys;

namespace {

std::shared_ptr<const SigningKey> new_key(const std::string& comment) {
    return std::make_shared<const SigningKey>(SigningKey::generate(comment));
}

std::shared_ptr<const TrustedKeys> trusting(const SigningKey& key) {
    return std::make_shared<const TrustedKeys>(
        TrustedKeys::parse(kiln::cache::format_public_key(key.public_key()), "test"));
}

Config shared_dir(const std::filesystem::path& dir) {
    Config config = config_for(dir);
    config.shared = true;
    return config;
}

Entry own_compile(const std::string& name) {
    Entry entry = make_entry(key_of(name));
    entry.provenance = Provenance::own_compile;
    return entry;
}

// A file put where the store keeps @p entry, as another writer of the directory would.
void plant(const std::filesystem::path& dir, const Entry& entry, const SigningKey* key) {
    if (!std::filesystem::exists(dir)) Store(config_for(dir)).store(own_compile("makes the dir"));
    const auto path = entry_file(dir, entry.key);
    std::filesystem::create_directories(path.parent_path());
    write_file(path, kiln::cache::encode_entry(entry, key));
}

} // namespace

TEST(SignedStore, APrivateDirectoryTrustsItsOwnCompilesAndNothingElseUnsigned) {
    TempDir dir;
    const auto team = new_key("team");
    Config reader = config_for(dir.path());
    reader.trusted_keys = trusting(*team);
    const Entry mine = own_compile("mine");
    Store(config_for(dir.path())).store(mine);
    Entry written_back = make_entry(key_of("written back")); // provenance: imported
    plant(dir.path(), written_back, nullptr);
    Entry signed_back = make_entry(key_of("signed write-back"));
    plant(dir.path(), signed_back, team.get());
    {
        Store store(reader);
        EXPECT_TRUE(store.load(mine.key));
        EXPECT_FALSE(store.load(written_back.key));
        EXPECT_TRUE(store.load(signed_back.key));
        store.local().write_statistics();
        const auto stats = store.local().stats();
        EXPECT_EQ(stats.untrusted, 1u);
        EXPECT_EQ(stats.misses, 1u);
        EXPECT_EQ(stats.hits, 2u);
    }
    // Not damage: the file stays (this user's own compile replaces it).
    EXPECT_TRUE(std::filesystem::exists(entry_file(dir.path(), written_back.key)));
    // Without trusted keys it is a hit, as before signing existed.
    EXPECT_TRUE(Store(config_for(dir.path())).load(written_back.key));
}

TEST(SignedStore, ASharedDirectoryNeedsASignatureEvenForTheCallersOwnEntries) {
    TempDir parent;
    const auto dir = parent / "team";
    const auto ci = new_key("ci");
    const auto member = new_key("member");
    Config writer = shared_dir(dir);
    writer.signing_key = ci;
    Config unsigned_writer = shared_dir(dir);
    Config stranger_writer = shared_dir(dir);
    stranger_writer.signing_key = member;
    ASSERT_TRUE(Store(writer).store(own_compile("signed by ci")));
    ASSERT_TRUE(Store(unsigned_writer).store(own_compile("unsigned")));
    ASSERT_TRUE(Store(stranger_writer).store(own_compile("signed by a member")));
    Config reader = shared_dir(dir);
    reader.trusted_keys = trusting(*ci);
    Store store(reader);
    EXPECT_TRUE(store.load(key_of("signed by ci")));
    EXPECT_FALSE(store.load(key_of("unsigned")));
    EXPECT_FALSE(store.load(key_of("signed by a member")));
    store.local().write_statistics();
    EXPECT_EQ(store.local().stats().untrusted, 2u);
}

TEST(SignedStore, MemosAndTuningRecordsOfASharedDirectoryAreUsedOnlySigned) {
    TempDir parent;
    const auto dir = parent / "team";
    const auto ci = new_key("ci");
    const kiln::cache::Memo memo{key_of("entry"), "kernel", std::string(300, 'c')};
    Config signer = shared_dir(dir);
    signer.signing_key = ci;
    ASSERT_TRUE(Store(shared_dir(dir)).store_memo(key_of("unsigned memo"), memo));
    ASSERT_TRUE(Store(signer).store_memo(key_of("signed memo"), memo));
    ASSERT_TRUE(kiln::cache::TuningStore(shared_dir(dir)).store(key_of("unsigned tune"), "64"));
    ASSERT_TRUE(kiln::cache::TuningStore(signer).store(key_of("signed tune"), "128"));
    Config reader = shared_dir(dir);
    reader.trusted_keys = trusting(*ci);
    Store store(reader);
    EXPECT_FALSE(store.load_memo(key_of("unsigned memo")));
    ASSERT_TRUE(store.load_memo(key_of("signed memo")));
    EXPECT_EQ(store.load_memo(key_of("signed memo"))->cubin, memo.cubin);
    kiln::cache::TuningMiss why{};
    EXPECT_FALSE(kiln::cache::TuningStore(reader).load(key_of("unsigned tune"), &why));
    EXPECT_EQ(why, kiln::cache::TuningMiss::untrusted);
    EXPECT_EQ(kiln::cache::TuningStore(reader).load(key_of("signed tune")), "128");
    // Without trusted keys both are used.
    Store open_store(shared_dir(dir));
    EXPECT_TRUE(open_store.load_memo(key_of("unsigned memo")));
}

TEST(SignedStore, AnArchiveBringsInOnlySignedEntriesAndMarksThemChecked) {
    TempDir source, target, files;
    const auto ci = new_key("ci");
    ASSERT_TRUE(Store(config_for(source.path())).store(own_compile("unsigned")));
    Config signer = config_for(source.path());
    signer.signing_key = ci;
    ASSERT_TRUE(Store(signer).store(own_compile("signed")));
    const auto archive = files / "cache.kar";
    LocalStore(config_for(source.path())).export_to(archive);
    Config reader = config_for(target.path());
    reader.trusted_keys = trusting(*ci);
    const auto result = LocalStore(reader).import_from(archive, {});
    EXPECT_EQ(result.entries, 1u);
    EXPECT_EQ(result.untrusted, 1u);
    EXPECT_FALSE(std::filesystem::exists(entry_file(target.path(), key_of("unsigned"))));
    const auto imported = kiln::cache::decode_entry(
        read_file(entry_file(target.path(), key_of("signed"))), key_of("signed"));
    ASSERT_TRUE(imported.entry);
    EXPECT_EQ(imported.entry->provenance, Provenance::verified);
    EXPECT_TRUE(Store(reader).load(key_of("signed")));
}

TEST(SignedStore, AnExportSignsTheExportersOwnCompilesOnly) {
    TempDir source, target, files;
    const auto ci = new_key("ci");
    ASSERT_TRUE(Store(config_for(source.path())).store(own_compile("mine")));
    plant(source.path(), make_entry(key_of("from elsewhere")), nullptr);
    Config exporter = config_for(source.path());
    exporter.signing_key = ci;
    const auto archive = files / "cache.kar";
    EXPECT_EQ(LocalStore(exporter).export_to(archive).signed_now, 1u);
    Config reader = config_for(target.path());
    reader.trusted_keys = trusting(*ci);
    const auto result = LocalStore(reader).import_from(archive, {});
    EXPECT_EQ(result.entries, 1u);
    EXPECT_EQ(result.untrusted, 2u - 1u);
    EXPECT_TRUE(std::filesystem::exists(entry_file(target.path(), key_of("mine"))));
}

TEST(SignedStore, VerifyNamesEverySignerAndFixRemovesUntrustedEntries) {
    TempDir dir;
    const auto ci = new_key("ci@farm");
    Config signer = config_for(dir.path());
    signer.signing_key = ci;
    ASSERT_TRUE(Store(signer).store(own_compile("signed")));
    ASSERT_TRUE(Store(config_for(dir.path())).store(own_compile("mine")));
    plant(dir.path(), make_entry(key_of("from elsewhere")), nullptr);
    Config reader = config_for(dir.path());
    reader.trusted_keys = trusting(*ci);
    const auto report = LocalStore(reader).verify(false);
    EXPECT_EQ(report.untrusted, 1u);
    EXPECT_EQ(report.damaged, 0u);
    EXPECT_EQ(report.vouched.count("signed by ci@farm (" +
                                   kiln::cache::fingerprint(ci->public_key().bytes) + ")"),
              1u);
    EXPECT_EQ(report.vouched.count("unsigned, compiled by you"), 1u);
    const auto fixed = LocalStore(reader).verify(true);
    EXPECT_EQ(fixed.removed, 1u);
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), key_of("from elsewhere"))));
    EXPECT_TRUE(std::filesystem::exists(entry_file(dir.path(), key_of("mine"))));
    EXPECT_EQ(LocalStore(reader).verify(false).untrusted, 0u);
}

// Forged or swapped values served from a shared directory to a reader with trusted keys: none is
// loaded, every genuine one is. (The 10^5-value soak runs through the remote tier, where no file
// system slows it: tests/cache/remote/test_remote_trust.cpp.)
TEST(SignedStore, NoForgedOrSwappedValueIsEverLoaded) {
    TempDir parent;
    const auto dir = parent / "team";
    const auto ci = new_key("ci");
    const auto forger = new_key("forger");
    Config reader = shared_dir(dir);
    reader.trusted_keys = trusting(*ci);
    constexpr int kKeys = 16;
    std::vector<std::string> genuine, forged;
    for (int i = 0; i < kKeys; ++i) {
        Entry entry = own_compile("soak " + std::to_string(i));
        genuine.push_back(kiln::cache::encode_entry(entry, ci.get()));
        entry.payload[0] = static_cast<char>(entry.payload[0] ^ 0x40); // other code, same key
        forged.push_back(kiln::cache::encode_entry(entry, forger.get()));
    }
    Store(shared_dir(dir)).store(make_entry(key_of("makes the directory")));
    std::mt19937_64 random(42);
    constexpr int kValues = 5000;
    int loaded_forged = 0, loaded_genuine = 0, served_genuine = 0;
    Store store(reader);
    for (int n = 0; n < kValues; ++n) {
        const int i = static_cast<int>(random() % kKeys);
        const Entry entry = own_compile("soak " + std::to_string(i));
        std::string value;
        switch (random() % 6) {
        case 0: // signed by a key nobody trusts
            value = forged[i];
            break;
        case 1: // unsigned
            value = kiln::cache::encode_entry(make_entry(entry.key), nullptr);
            break;
        case 2: { // the genuine seal on forged bytes
            value = forged[i];
            value.replace(value.size() - kiln::cache::detail::kSealSize,
                          kiln::cache::detail::kSealSize,
                          genuine[i].substr(genuine[i].size() - kiln::cache::detail::kSealSize));
            break;
        }
        case 3: // another key's genuine entry (swapped)
            value = genuine[(i + 1) % kKeys];
            break;
        case 4: // a byte of the genuine entry changed, its checksums intact elsewhere
            value = genuine[i];
            value[value.size() - kiln::cache::detail::kSealSize - 1] ^= 0x01;
            break;
        default: // genuine
            value = genuine[i];
            ++served_genuine;
            break;
        }
        const auto path = entry_file(dir, entry.key);
        std::filesystem::create_directories(path.parent_path());
        write_file(path, value);
        ::chmod(path.c_str(), 0660);
        auto hit = store.load(entry.key);
        if (!hit) continue;
        if (value == genuine[i] && hit->payload == entry.payload)
            ++loaded_genuine;
        else
            ++loaded_forged;
    }
    EXPECT_EQ(loaded_forged, 0);
    EXPECT_EQ(loaded_genuine, served_genuine);
}
