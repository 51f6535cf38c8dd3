#include "kiln/cache/entry.hpp"

#include "cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

using kiln::cache::decode_entry;
using kiln::cache::DecodeError;
using kiln::cache::encode_entry;
using kiln::cache::Entry;
using kiln::cache::Key;

namespace {

// The entry stored in golden/entry_v1.kiln. Regenerate (only together with a new format version)
// with: KILN_WRITE_GOLDEN=1 test_entry --gtest_filter='Entry.Golden*'
Entry golden_entry() {
    Entry entry;
    entry.key = *Key::from_hex("00112233445566778899aabbccddeeff");
    entry.kind = kiln::cache::PayloadKind::cubin;
    entry.payload = std::string("\x7f"
                                "ELF",
                                4);
    for (int i = 0; i < 60; ++i)
        entry.payload.push_back(static_cast<char>(i * 7));
    entry.lowered_names = {{"add<float>", "_Z3addIfEvPT_"}, {"scale", "_Z5scalePf"}};
    entry.nvrtc_version = "13.0.88";
    entry.arch = "sm_90";
    entry.compile_ms = 12.5;
    entry.log = "warning: golden";
    return entry;
}

const std::filesystem::path kGoldenV1 = std::filesystem::path(KILN_GOLDEN_DIR) / "entry_v1.kiln";

void expect_same(const Entry& a, const Entry& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.payload, b.payload);
    EXPECT_EQ(a.lowered_names, b.lowered_names);
    EXPECT_EQ(a.nvrtc_version, b.nvrtc_version);
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.compile_ms, b.compile_ms);
    EXPECT_EQ(a.log, b.log);
}

void put_u64(std::string& bytes, std::size_t offset, std::uint64_t value) {
    for (int i = 0; i < 8; ++i)
        bytes[offset + i] = static_cast<char>(value >> (8 * i));
}

} // namespace

TEST(Entry, RoundTripsEveryField) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("round trip"), 4096);
    auto decoded = decode_entry(encode_entry(entry), entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, entry);
    EXPECT_EQ(decoded.payload_size, 4096u);
}

TEST(Entry, RoundTripsEmptyFieldsAndPtx) {
    Entry entry;
    entry.key = kiln::test::key_of("empty");
    entry.kind = kiln::cache::PayloadKind::ptx;
    auto decoded = decode_entry(encode_entry(entry), entry.key);
    ASSERT_TRUE(decoded.entry);
    expect_same(*decoded.entry, entry);
}

TEST(Entry, PayloadIsTheLastBytesOfTheFile) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("tail"), 1000);
    const std::string bytes = encode_entry(entry);
    EXPECT_EQ(bytes.substr(bytes.size() - entry.payload.size()), entry.payload);
}

TEST(Entry, GoldenFileDecodesToTheKnownFields) {
    if (std::getenv("KILN_WRITE_GOLDEN"))
        kiln::test::write_file(kGoldenV1, encode_entry(golden_entry()));
    const std::string golden = kiln::test::read_file(kGoldenV1);
    ASSERT_FALSE(golden.empty()) << "missing " << kGoldenV1;
    auto decoded = decode_entry(golden, golden_entry().key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, golden_entry());
}

TEST(Entry, EncodingReproducesTheGoldenFileByteForByte) {
    EXPECT_EQ(encode_entry(golden_entry()), kiln::test::read_file(kGoldenV1));
}

TEST(Entry, EveryFlippedBitIsDetected) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("bits"), 64);
    const std::string good = encode_entry(entry);
    for (std::size_t byte = 0; byte < good.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string bad = good;
            bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
            EXPECT_FALSE(decode_entry(bad, entry.key).entry) << "byte " << byte << " bit " << bit;
        }
    }
}

TEST(Entry, EveryTruncationIsDetected) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("cut"), 64);
    const std::string good = encode_entry(entry);
    for (std::size_t size = 0; size < good.size(); ++size) {
        auto decoded = decode_entry(std::string_view(good).substr(0, size), entry.key);
        EXPECT_FALSE(decoded.entry) << size;
        EXPECT_EQ(decoded.error, DecodeError::truncated) << size;
    }
    EXPECT_EQ(decode_entry(good + "x", entry.key).error, DecodeError::malformed);
}

TEST(Entry, SaysWhyItRejects) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("why"), 64);
    const std::string good = encode_entry(entry);
    std::string magic = good, version = good, payload = good;
    magic[0] = 'X';
    put_u64(version, 8, 2); // also clobbers `kind`: the version is read first
    payload.back() ^= 1;
    EXPECT_EQ(decode_entry("", entry.key).error, DecodeError::truncated);
    EXPECT_EQ(decode_entry(magic, entry.key).error, DecodeError::bad_magic);
    EXPECT_EQ(decode_entry(version, entry.key).error, DecodeError::bad_version);
    EXPECT_EQ(decode_entry(payload, entry.key).error, DecodeError::bad_checksum);
    EXPECT_EQ(decode_entry(good, kiln::test::key_of("another")).error, DecodeError::bad_key);
}

TEST(Entry, HugeClaimedSizesAreRejectedWithoutReadingOn) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("huge"), 64);
    std::string metadata = encode_entry(entry), payload = metadata;
    put_u64(metadata, 32, ~std::uint64_t{0});
    put_u64(payload, 40, std::uint64_t{1} << 62);
    EXPECT_EQ(decode_entry(metadata, entry.key).error, DecodeError::malformed);
    EXPECT_EQ(decode_entry(payload, entry.key).error, DecodeError::malformed);
}

TEST(Entry, GarbageNeverDecodes) {
    // Random bytes, and valid entries with random bytes overwritten; run under the address
    // sanitizer (KILN_SANITIZE=address) this also proves no read past the buffer.
    std::mt19937_64 random(42);
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("garbage"), 128);
    const std::string good = encode_entry(entry);
    for (int round = 0; round < 20000; ++round) {
        std::string bytes;
        if (round % 2) {
            bytes.resize(random() % 512);
            for (auto& c : bytes)
                c = static_cast<char>(random());
            if (round % 4 == 1 && bytes.size() >= 8)
                std::memcpy(bytes.data(), good.data(), 12 < bytes.size() ? 12 : 8);
        } else {
            bytes = good;
            const int changes = 1 + static_cast<int>(random() % 4);
            for (int i = 0; i < changes; ++i)
                bytes[random() % bytes.size()] ^= static_cast<char>(1 + random() % 255);
        }
        EXPECT_FALSE(decode_entry(bytes, entry.key).entry) << "round " << round;
    }
}

TEST(Entry, HeadDecodingReadsMetadataWithoutThePayload) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("head"), 3000);
    const std::string bytes = encode_entry(entry);
    const std::uint64_t head_size =
        kiln::cache::entry_head_size(bytes.substr(0, kiln::cache::kEntryHeaderSize));
    ASSERT_EQ(head_size, bytes.size() - 3000);
    auto decoded =
        kiln::cache::decode_entry_head(bytes.substr(0, head_size), bytes.size(), entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    EXPECT_EQ(decoded.entry->arch, "sm_90");
    EXPECT_EQ(decoded.entry->lowered_names.size(), 2u);
    EXPECT_TRUE(decoded.entry->payload.empty());
    EXPECT_EQ(decoded.payload_size, 3000u);
    EXPECT_EQ(
        kiln::cache::entry_head_size("not an entry header at all, no, not at all, certainly not"),
        0u);
}
