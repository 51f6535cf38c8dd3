// Signed entries (kiln/cache/signing.hpp, seal.hpp, trust.hpp): key files, what a signature
// covers, and which files a reader with trusted keys uses, by where they came from.

#include "cache_test_util.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/cache/signing.hpp"
#include "kiln/error.hpp"

#include "seal.hpp"
#include "trust.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <sys/stat.h>

#include <filesystem>

using namespace kiln::test;
using kiln::cache::DecodeError;
using kiln::cache::Provenance;
using kiln::cache::SigningKey;
using kiln::cache::TrustedKeys;
using kiln::cache::detail::check_trust;
using kiln::cache::detail::kSealSize;
using kiln::cache::detail::Origin;
using kiln::cache::detail::SealDomain;
using kiln::cache::detail::Verdict;

namespace {

TrustedKeys trusting(const SigningKey& key) {
    return TrustedKeys::parse(kiln::cache::format_public_key(key.public_key()) + "\n", "test");
}

std::string encoded(const kiln::cache::Entry& entry, const SigningKey* key) {
    return kiln::cache::encode_entry(entry, key);
}

kiln::cache::Entry entry_from(const std::string& name, Provenance provenance) {
    auto entry = make_entry(key_of(name));
    entry.provenance = provenance;
    return entry;
}

// The seal's hash made right again after a test edited the seal's bytes.
void rehash_seal(std::string& file) {
    const std::size_t at = file.size() - kSealSize;
    const std::uint64_t hash = XXH3_64bits(file.data() + at, kSealSize - 8);
    for (int i = 0; i < 8; ++i)
        file[file.size() - 8 + i] = static_cast<char>(hash >> (8 * i));
}

Verdict verdict(const std::string& file, Origin origin, const TrustedKeys* keys) {
    return check_trust(file, SealDomain::entry, origin, keys).verdict;
}

} // namespace

TEST(SigningKeys, AGeneratedPairIsSavedAndLoadedBack) {
    TempDir dir;
    const auto key = SigningKey::generate("ci@farm");
    key.save(dir / "ci");
    EXPECT_EQ(mode_of(dir / "ci") & 0777, 0600u);
    const std::string line = read_file(dir / "ci.pub");
    EXPECT_EQ(line, kiln::cache::format_public_key(key.public_key()) + "\n");
    EXPECT_EQ(line.rfind("kiln-ed25519 ", 0), 0u);
    const auto loaded = SigningKey::load(dir / "ci");
    EXPECT_EQ(loaded.public_key().bytes, key.public_key().bytes);
    EXPECT_EQ(loaded.public_key().comment, "ci@farm");
    // The loaded key signs what the saved public key verifies.
    const auto keys = TrustedKeys::load(dir / "ci.pub");
    const auto signature = loaded.sign("message");
    EXPECT_NE(keys.verify(key.public_key().bytes, "message", signature), nullptr);
    EXPECT_EQ(keys.verify(key.public_key().bytes, "massage", signature), nullptr);
}

TEST(SigningKeys, SavingNeverReplacesAFileOrFollowsALink) {
    TempDir dir;
    const auto key = SigningKey::generate("a");
    write_file(dir / "taken", "precious");
    EXPECT_THROW(key.save(dir / "taken"), kiln::Error);
    EXPECT_EQ(read_file(dir / "taken"), "precious");
    std::filesystem::create_symlink(dir / "target", dir / "link");
    EXPECT_THROW(key.save(dir / "link"), kiln::Error);
    EXPECT_FALSE(std::filesystem::exists(dir / "target"));
    // A .pub already there: the private key is not left behind either.
    write_file(dir / "half.pub", "other");
    EXPECT_THROW(key.save(dir / "half"), kiln::Error);
    EXPECT_FALSE(std::filesystem::exists(dir / "half"));
}

TEST(SigningKeys, APrivateKeyOthersCouldReadOrALinkIsRefused) {
    TempDir dir;
    SigningKey::generate("a").save(dir / "key");
    ::chmod((dir / "key").c_str(), 0640);
    try {
        SigningKey::load(dir / "key");
        FAIL() << "a key readable by its group was loaded";
    } catch (const kiln::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    }
    ::chmod((dir / "key").c_str(), 0600);
    std::filesystem::create_symlink(dir / "key", dir / "link");
    EXPECT_THROW(SigningKey::load(dir / "link"), kiln::ConfigError);
    write_file(dir / "junk", "not a key");
    ::chmod((dir / "junk").c_str(), 0600);
    EXPECT_THROW(SigningKey::load(dir / "junk"), kiln::ConfigError);
}

TEST(TrustedKeysFile, TakesKeyLinesAndSkipsCommentsAndBlankLines) {
    const auto a = SigningKey::generate("alice");
    const auto b = SigningKey::generate("");
    const std::string text = "# the team's writers\n\n" +
                             kiln::cache::format_public_key(a.public_key()) + "\n   " +
                             kiln::cache::format_public_key(b.public_key()) + "\r\n";
    const auto keys = TrustedKeys::parse(text, "keys");
    ASSERT_EQ(keys.keys().size(), 2u);
    EXPECT_EQ(keys.keys()[0].comment, "alice");
    ASSERT_NE(keys.find(b.public_key().bytes), nullptr);
    EXPECT_EQ(keys.find(SigningKey::generate("c").public_key().bytes), nullptr);
}

TEST(TrustedKeysFile, ALineThatIsNoKeyIsAnErrorNamingIt) {
    const auto a = SigningKey::generate("alice");
    for (const std::string bad :
         {"ssh-rsa AAAA", "kiln-ed25519 notbase64", "kiln-ed25519", "kiln-ed25519 QUJD"}) {
        const std::string text = kiln::cache::format_public_key(a.public_key()) + "\n\n" + bad;
        try {
            TrustedKeys::parse(text, "keys");
            FAIL() << "accepted: " << bad;
        } catch (const kiln::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("keys:3:"), std::string::npos) << e.what();
        }
    }
}

TEST(EntrySeal, VersionThreeRecordsProvenanceAndSigner) {
    const auto key = SigningKey::generate("ci");
    const auto entry = entry_from("sealed", Provenance::own_compile);
    const auto decoded = kiln::cache::decode_entry(encoded(entry, &key), entry.key);
    ASSERT_TRUE(decoded.entry);
    EXPECT_EQ(decoded.entry->format_version, 3u);
    EXPECT_EQ(decoded.entry->provenance, Provenance::own_compile);
    ASSERT_TRUE(decoded.entry->signer);
    EXPECT_EQ(*decoded.entry->signer, key.public_key().bytes);
    EXPECT_EQ(decoded.entry->payload, entry.payload);
    const auto unsigned_entry = kiln::cache::decode_entry(encoded(entry, nullptr), entry.key);
    ASSERT_TRUE(unsigned_entry.entry);
    EXPECT_FALSE(unsigned_entry.entry->signer);
    // In place too: the seal is cut off the payload.
    auto in_place = kiln::cache::decode_entry_in_place(encoded(entry, &key), entry.key);
    ASSERT_TRUE(in_place.entry);
    EXPECT_EQ(in_place.entry->payload, entry.payload);
}

TEST(EntrySeal, AnotherCompressionIsANewerKilnsEntryNotDamage) {
    const auto entry = make_entry(key_of("compressed"));
    std::string bytes = encoded(entry, nullptr);
    bytes[14] = 2; // a compression for a Kiln that reads it (1 is zstd, read here)
    // The head hash covers the field: recompute it as a writer would.
    const std::uint64_t metadata_size = [&] {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v |= std::uint64_t{static_cast<unsigned char>(bytes[32 + i])} << (8 * i);
        return v;
    }();
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, bytes.data(), 56);
    XXH3_64bits_update(&state, bytes.data() + 64, metadata_size);
    const std::uint64_t head_hash = XXH3_64bits_digest(&state);
    for (int i = 0; i < 8; ++i)
        bytes[56 + i] = static_cast<char>(head_hash >> (8 * i));
    EXPECT_EQ(kiln::cache::decode_entry(bytes, entry.key).error, DecodeError::unsupported);
}

TEST(EntrySeal, ASignedCompressedEntryVerifiesAndItsSignatureCoversTheStoredBytes) {
    const auto key = SigningKey::generate("ci");
    const auto keys = trusting(key);
    auto entry = entry_from("signed compressed", Provenance::imported);
    entry.payload.append(4000, '\0'); // compressible
    ASSERT_EQ(entry.compression, kiln::cache::Compression::zstd_v1);
    const std::string good = encoded(entry, &key);
    ASSERT_EQ(good[14], 1);
    ASSERT_LT(good.size(), entry.payload.size());
    EXPECT_EQ(verdict(good, Origin::shared_directory, &keys), Verdict::trusted);
    const auto decoded = kiln::cache::decode_entry(good, entry.key);
    ASSERT_TRUE(decoded.entry);
    EXPECT_EQ(decoded.entry->payload, entry.payload);
    ASSERT_TRUE(decoded.entry->signer);
    EXPECT_EQ(*decoded.entry->signer, key.public_key().bytes);
    // Every stored (compressed) byte is signed: a flipped one is refused before decompressing.
    for (std::size_t i = 0; i < good.size() - kSealSize; ++i) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ 0x01);
        EXPECT_EQ(verdict(bad, Origin::shared_directory, &keys), Verdict::untrusted)
            << "byte " << i;
    }
    // The same entry unsigned is untrusted.
    EXPECT_EQ(verdict(encoded(entry, nullptr), Origin::shared_directory, &keys),
              Verdict::untrusted);
}

TEST(EntrySeal, TheSignatureCoversEveryByteBeforeTheSeal) {
    const auto key = SigningKey::generate("ci");
    const auto keys = trusting(key);
    const std::string good = encoded(entry_from("covered", Provenance::imported), &key);
    ASSERT_EQ(verdict(good, Origin::shared_directory, &keys), Verdict::trusted);
    for (std::size_t i = 0; i < good.size() - kSealSize; ++i) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ 0x01);
        EXPECT_EQ(verdict(bad, Origin::shared_directory, &keys), Verdict::untrusted)
            << "byte " << i;
    }
    // A flipped bit in the seal itself is damage (its own hash).
    for (std::size_t i = good.size() - kSealSize; i < good.size(); ++i) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ 0x01);
        EXPECT_EQ(verdict(bad, Origin::shared_directory, &keys), Verdict::damaged) << "byte " << i;
    }
}

TEST(EntrySeal, RewritingTheProvenanceKeepsTheSignature) {
    const auto key = SigningKey::generate("ci");
    const auto keys = trusting(key);
    std::string file = encoded(entry_from("written back", Provenance::own_compile), &key);
    ASSERT_TRUE(kiln::cache::detail::set_provenance(file, Provenance::imported));
    EXPECT_EQ(kiln::cache::decode_entry(file, key_of("written back")).entry->provenance,
              Provenance::imported);
    EXPECT_EQ(verdict(file, Origin::private_directory, &keys), Verdict::trusted);
}

TEST(Trust, WhatAReaderWithTrustedKeysUses) {
    const auto team = SigningKey::generate("team");
    const auto stranger = SigningKey::generate("stranger");
    const auto keys = trusting(team);
    struct Case {
        const char* name;
        Provenance provenance;
        const SigningKey* signer;
        Origin origin;
        Verdict expected;
    };
    const Case cases[] = {
        {"own compile, private", Provenance::own_compile, nullptr, Origin::private_directory,
         Verdict::trusted},
        {"written back, private", Provenance::imported, nullptr, Origin::private_directory,
         Verdict::untrusted},
        {"written back signed, private", Provenance::imported, &team, Origin::private_directory,
         Verdict::trusted},
        {"own compile, shared", Provenance::own_compile, nullptr, Origin::shared_directory,
         Verdict::untrusted},
        {"signed, shared", Provenance::own_compile, &team, Origin::shared_directory,
         Verdict::trusted},
        {"stranger, shared", Provenance::own_compile, &stranger, Origin::shared_directory,
         Verdict::untrusted},
        {"own compile, remote", Provenance::own_compile, nullptr, Origin::remote,
         Verdict::untrusted},
        {"signed, remote", Provenance::own_compile, &team, Origin::remote, Verdict::trusted},
        {"stranger, remote", Provenance::own_compile, &stranger, Origin::remote,
         Verdict::untrusted},
        {"own compile, archive", Provenance::own_compile, nullptr, Origin::archive,
         Verdict::untrusted},
        {"signed, archive", Provenance::imported, &team, Origin::archive, Verdict::trusted},
    };
    for (const Case& c : cases) {
        const std::string file = encoded(entry_from(c.name, c.provenance), c.signer);
        EXPECT_EQ(verdict(file, c.origin, &keys), c.expected) << c.name;
        // Without trusted keys everything well formed is used, as before signing existed.
        EXPECT_EQ(verdict(file, c.origin, nullptr), Verdict::trusted) << c.name;
    }
}

TEST(Trust, ASignatureDoesNotTransferToAnotherEntryOrKey) {
    const auto team = SigningKey::generate("team");
    const auto stranger = SigningKey::generate("stranger");
    const auto keys = trusting(team);
    const std::string signed_a = encoded(entry_from("a", Provenance::imported), &team);
    // Entry b with a's seal (a valid signature, of other bytes).
    std::string b = encoded(entry_from("b", Provenance::imported), nullptr);
    b.replace(b.size() - kSealSize, kSealSize, signed_a.substr(signed_a.size() - kSealSize));
    EXPECT_EQ(verdict(b, Origin::remote, &keys), Verdict::untrusted);
    // A stranger's signature relabelled as the team's key.
    std::string relabelled = encoded(entry_from("c", Provenance::imported), &stranger);
    const auto team_key = team.public_key().bytes;
    std::copy(team_key.begin(), team_key.end(),
              relabelled.begin() + static_cast<std::ptrdiff_t>(relabelled.size() - kSealSize + 24));
    rehash_seal(relabelled);
    EXPECT_EQ(verdict(relabelled, Origin::remote, &keys), Verdict::untrusted);
    // "Unsigned" with a signature's bytes left in is no canonical seal: damage.
    std::string odd = signed_a;
    odd[odd.size() - kSealSize + 16] = 0; // signer tag: unsigned
    rehash_seal(odd);
    EXPECT_EQ(verdict(odd, Origin::remote, &keys), Verdict::damaged);
    // A signed entry served under another key is valid as signed, and refused by its key check.
    EXPECT_EQ(kiln::cache::decode_entry(signed_a, key_of("b")).error, DecodeError::bad_key);
}

TEST(Trust, AMemoSignatureIsNoEntrySignature) {
    const auto team = SigningKey::generate("team");
    const auto keys = trusting(team);
    std::string body = "not an entry";
    kiln::cache::detail::append_seal(body, SealDomain::memo, Provenance::imported, &team);
    EXPECT_EQ(check_trust(body, SealDomain::memo, Origin::remote, &keys).verdict, Verdict::trusted);
    EXPECT_EQ(check_trust(body, SealDomain::entry, Origin::remote, &keys).verdict,
              Verdict::damaged);
}

TEST(Trust, AVerifiedWriteBackIsUsedWithoutCheckingAgainWhileItsSignerIsTrusted) {
    const auto team = SigningKey::generate("team");
    const auto keys = trusting(team);
    std::string file = encoded(entry_from("checked once", Provenance::imported), &team);
    ASSERT_TRUE(kiln::cache::detail::set_provenance(file, Provenance::verified));
    const auto check = check_trust(file, SealDomain::entry, Origin::private_directory, &keys);
    EXPECT_EQ(check.verdict, Verdict::trusted);
    ASSERT_NE(check.signer, nullptr);
    // Its signer no longer trusted: untrusted, whatever the mark says.
    const auto other = TrustedKeys::parse(
        kiln::cache::format_public_key(SigningKey::generate("new").public_key()), "test");
    EXPECT_EQ(verdict(file, Origin::private_directory, &other), Verdict::untrusted);
    // The mark counts only in the private directory: elsewhere the signature is checked.
    std::string forged = file;
    forged[100] = static_cast<char>(forged[100] ^ 1);
    EXPECT_EQ(verdict(forged, Origin::shared_directory, &keys), Verdict::untrusted);
    EXPECT_EQ(verdict(forged, Origin::remote, &keys), Verdict::untrusted);
    // An unsigned seal cannot carry the mark.
    std::string unsigned_file = encoded(entry_from("unsigned", Provenance::imported), nullptr);
    EXPECT_FALSE(kiln::cache::detail::set_provenance(unsigned_file, Provenance::verified));
}
