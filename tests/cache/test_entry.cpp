#include "kiln/cache/entry.hpp"

#include "cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>
#include <random>

using kiln::cache::decode_entry;
using kiln::cache::decode_entry_in_place;
using kiln::cache::DecodeError;
using kiln::cache::encode_entry;
using kiln::cache::Entry;
using kiln::cache::Key;

namespace {

// The entry stored in golden/entry_v1.kiln, written by the Kiln of format version 1. Never
// regenerated: tools must read what that Kiln wrote.
Entry golden_entry_v1() {
    Entry entry;
    entry.format_version = 1;
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

// The entry stored in golden/entry_v2.kiln: every field of version 2 used. Regenerate (only
// together with a new format version, as entry_v3.kiln beside the others) with:
// KILN_WRITE_GOLDEN=1 test_entry --gtest_filter='Entry.GoldenV2*'
Entry golden_entry() {
    Entry entry = golden_entry_v1();
    entry.format_version = 2;
    entry.key = *Key::from_hex("0123456789abcdef0123456789abcdef");
    entry.kernel_names = {"_Z3addIfEvPT_", "scale"};
    kiln::cache::Recipe recipe;
    recipe.source = "template <class T> __global__ void add(T* x) { x[0] += 1; }\n";
    recipe.options = {"-DN=4", "--use_fast_math"};
    recipe.headers = {{"b.cuh", "#define B 2\n"}, {"a.cuh", "#define A 1\n"}};
    recipe.name_expressions = {"add<float>"};
    recipe.cuda_headers = true;
    recipe.lineinfo = true;
    recipe.program_name = "/cache/01/0123456789abcdef0123456789abcdef.cu";
    recipe.description = R"({"front_end":"ElementwiseKernel","dtypes":["float32"]})";
    entry.recipe = recipe;
    kiln::cache::LinkInput by_bytes;
    by_bytes.kind = kiln::cache::LinkInputKind::library;
    by_bytes.name = "libdevice_part.a";
    by_bytes.bytes = std::string("!<arch>\n\0\x01", 10);
    kiln::cache::LinkInput by_key;
    by_key.kind = kiln::cache::LinkInputKind::ltoir;
    by_key.name = "part_b.cu";
    by_key.key = *Key::from_hex("fedcba9876543210fedcba9876543210");
    entry.link_inputs = {by_bytes, by_key};
    return entry;
}

const std::filesystem::path kGoldenV1 = std::filesystem::path(KILN_GOLDEN_DIR) / "entry_v1.kiln";
const std::filesystem::path kGoldenV2 = std::filesystem::path(KILN_GOLDEN_DIR) / "entry_v2.kiln";
const std::filesystem::path kGoldenV3 = std::filesystem::path(KILN_GOLDEN_DIR) / "entry_v3.kiln";

void expect_same(const Entry& a, const Entry& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.payload, b.payload);
    EXPECT_EQ(a.lowered_names, b.lowered_names);
    EXPECT_EQ(a.nvrtc_version, b.nvrtc_version);
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.compile_ms, b.compile_ms);
    EXPECT_EQ(a.log, b.log);
    EXPECT_EQ(a.format_version, b.format_version);
    EXPECT_EQ(a.kernel_names, b.kernel_names);
    EXPECT_EQ(a.recipe, b.recipe);
    EXPECT_EQ(a.link_inputs, b.link_inputs);
}

void put_u64(std::string& bytes, std::size_t offset, std::uint64_t value) {
    for (int i = 0; i < 8; ++i)
        bytes[offset + i] = static_cast<char>(value >> (8 * i));
}

std::uint64_t get_u64(const std::string& bytes, std::size_t offset) {
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
        value |= std::uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
    return value;
}

// head_hash by the grammar in cache/entry.cpp: header bytes 0..55, then the metadata.
std::uint64_t head_hash(const std::string& bytes) {
    std::string hashed = bytes.substr(0, 56) + bytes.substr(64, get_u64(bytes, 32));
    return XXH3_64bits(hashed.data(), hashed.size());
}

} // namespace

TEST(Entry, RoundTripsEveryField) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("round trip"), 4096);
    auto decoded = decode_entry(encode_entry(entry), entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, entry);
    EXPECT_EQ(decoded.payload_size, 4096u);
}

TEST(Entry, DecodingInPlaceGivesTheSameEntryAndRejectsTheSameDamage) {
    const Entry entry = golden_entry();
    const std::string good = encode_entry(entry);
    auto decoded = decode_entry_in_place(std::string(good), entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, entry);
    EXPECT_EQ(decoded.payload_size, entry.payload.size());
    for (std::size_t byte = 0; byte < good.size(); byte += 7) {
        std::string bad = good;
        bad[byte] = static_cast<char>(bad[byte] ^ 0x10);
        const auto copied = decode_entry(bad, entry.key);
        const auto in_place = decode_entry_in_place(std::move(bad), entry.key);
        EXPECT_FALSE(in_place.entry) << "byte " << byte;
        EXPECT_EQ(in_place.error, copied.error) << "byte " << byte;
    }
    EXPECT_EQ(decode_entry_in_place(good.substr(0, good.size() - 1), entry.key).error,
              DecodeError::truncated);
}

// A load for running the payload leaves the recipe and link inputs out, and still refuses every
// damaged byte (the head hash covers what it does not read).
TEST(Entry, DecodingForLoadingLeavesTheRecipeOutAndRejectsTheSameDamage) {
    const Entry entry = golden_entry();
    const std::string good = encode_entry(entry);
    auto decoded =
        decode_entry_in_place(std::string(good), entry.key, kiln::cache::EntryParts::for_loading);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    Entry expected = entry;
    expected.recipe.reset();
    expected.link_inputs.clear();
    expect_same(*decoded.entry, expected);
    for (std::size_t byte = 0; byte < good.size(); byte += 5) {
        std::string bad = good;
        bad[byte] = static_cast<char>(bad[byte] ^ 0x04);
        EXPECT_FALSE(
            decode_entry_in_place(std::move(bad), entry.key, kiln::cache::EntryParts::for_loading)
                .entry)
            << "byte " << byte;
    }
}

TEST(Entry, RoundTripsEmptyFieldsAndPtx) {
    Entry entry;
    entry.key = kiln::test::key_of("empty");
    entry.kind = kiln::cache::PayloadKind::ptx;
    auto decoded = decode_entry(encode_entry(entry), entry.key);
    ASSERT_TRUE(decoded.entry);
    expect_same(*decoded.entry, entry);
}

TEST(Entry, OnlyTheSealFollowsThePayload) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("tail"), 1000);
    const std::string bytes = encode_entry(entry);
    const std::size_t seal = kiln::cache::kEntrySealSize;
    EXPECT_EQ(bytes.substr(bytes.size() - seal - entry.payload.size(), entry.payload.size()),
              entry.payload);
    EXPECT_EQ(bytes.substr(bytes.size() - seal, 8), "KILNSEAL");
}

TEST(Entry, GoldenV2FileDecodesToTheKnownFields) {
    if (std::getenv("KILN_WRITE_GOLDEN"))
        kiln::test::write_file(kGoldenV2, encode_entry(golden_entry()));
    const std::string golden = kiln::test::read_file(kGoldenV2);
    ASSERT_FALSE(golden.empty()) << "missing " << kGoldenV2;
    auto decoded = decode_entry(golden, golden_entry().key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, golden_entry());
}

TEST(Entry, GoldenV2EncodingReproducesTheFileByteForByte) {
    EXPECT_EQ(encode_entry(golden_entry()), kiln::test::read_file(kGoldenV2));
}

TEST(Entry, GoldenV1FileStillDecodesForTools) {
    const std::string golden = kiln::test::read_file(kGoldenV1);
    ASSERT_FALSE(golden.empty()) << "missing " << kGoldenV1;
    auto decoded = decode_entry(golden, golden_entry_v1().key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, golden_entry_v1());
    EXPECT_EQ(decoded.entry->format_version, 1u);
    EXPECT_FALSE(decoded.entry->recipe);
    EXPECT_TRUE(decoded.entry->kernel_names.empty());
    // Canonical in its own version too: what was read writes back alike.
    EXPECT_EQ(encode_entry(*decoded.entry), golden);
}

TEST(Entry, NewEntriesAreVersion3) {
    EXPECT_EQ(kiln::cache::kEntryFormatVersion, 3u);
    const std::string bytes = encode_entry(kiln::test::make_entry(kiln::test::key_of("v3"), 8));
    EXPECT_EQ(bytes[8], 3);
}

TEST(Entry, GoldenV3FileDecodesAndReencodesByteForByte) {
    Entry entry = golden_entry();
    entry.format_version = 3;
    entry.provenance = kiln::cache::Provenance::own_compile;
    if (std::getenv("KILN_WRITE_GOLDEN")) kiln::test::write_file(kGoldenV3, encode_entry(entry));
    const std::string golden = kiln::test::read_file(kGoldenV3);
    ASSERT_FALSE(golden.empty()) << "missing " << kGoldenV3;
    auto decoded = decode_entry(golden, entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, entry);
    EXPECT_EQ(decoded.entry->provenance, kiln::cache::Provenance::own_compile);
    EXPECT_FALSE(decoded.entry->signer);
    EXPECT_EQ(encode_entry(entry), golden);
}

TEST(Entry, Version1CannotHoldVersion2Fields) {
    Entry entry = golden_entry();
    entry.format_version = 1;
    EXPECT_THROW(encode_entry(entry), std::invalid_argument);
    entry.format_version = 4;
    EXPECT_THROW(encode_entry(entry), std::invalid_argument);
}

TEST(Entry, RecipeRoundTripsWithEveryFlagCombination) {
    for (int flags = 0; flags < 4; ++flags) {
        Entry entry = kiln::test::make_entry(kiln::test::key_of("recipe"), 100);
        kiln::cache::Recipe recipe;
        const char source[] = "extern \"C\" __global__ void k() {}\n\0tail"; // a NUL inside
        recipe.source = std::string(source, sizeof source - 1);
        recipe.options = {"-DA=1", "", "-std=c++20"};
        recipe.headers = {{"z.h", ""}, {"", "content without a name"}};
        recipe.name_expressions = {"k<1>", "k<1>"};
        recipe.cuda_headers = flags & 1;
        recipe.lineinfo = flags & 2;
        recipe.program_name = "kiln_x.cu";
        entry.recipe = recipe;
        entry.kernel_names = {"k"};
        auto decoded = decode_entry(encode_entry(entry), entry.key);
        ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
        expect_same(*decoded.entry, entry);
    }
    Entry empty = kiln::test::make_entry(kiln::test::key_of("empty recipe"), 1);
    empty.recipe = kiln::cache::Recipe{};
    auto decoded = decode_entry(encode_entry(empty), empty.key);
    ASSERT_TRUE(decoded.entry);
    ASSERT_TRUE(decoded.entry->recipe) << "an empty recipe is still a recipe";
    EXPECT_EQ(*decoded.entry->recipe, kiln::cache::Recipe{});
}

TEST(Entry, LinkInputsRoundTripInOrder) {
    Entry entry = kiln::test::make_entry(kiln::test::key_of("links"), 100);
    for (std::uint32_t kind = 1; kind <= 6; ++kind) {
        kiln::cache::LinkInput input;
        input.kind = static_cast<kiln::cache::LinkInputKind>(kind);
        input.name = "input " + std::to_string(kind);
        if (kind % 2)
            input.bytes = std::string(std::size_t{kind} * 100, static_cast<char>(kind));
        else
            input.key = kiln::test::key_of(input.name);
        entry.link_inputs.push_back(input);
    }
    entry.link_inputs.push_back({kiln::cache::LinkInputKind::object, "", "", std::nullopt});
    auto decoded = decode_entry(encode_entry(entry), entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    EXPECT_EQ(decoded.entry->link_inputs, entry.link_inputs);
    EXPECT_STREQ(to_string(kiln::cache::LinkInputKind::ltoir), "ltoir");
}

TEST(Entry, ALinkInputHoldsBytesOrAKeyNotBoth) {
    Entry entry = kiln::test::make_entry(kiln::test::key_of("both"), 10);
    entry.link_inputs.push_back(
        {kiln::cache::LinkInputKind::cubin, "x", "bytes", kiln::test::key_of("x")});
    EXPECT_THROW(encode_entry(entry), std::invalid_argument);
    entry.link_inputs.back().key.reset();
    entry.link_inputs.back().kind = static_cast<kiln::cache::LinkInputKind>(7);
    EXPECT_THROW(encode_entry(entry), std::invalid_argument);
}

TEST(Entry, MeaninglessTagsAndFlagsAreRejected) {
    // The golden entry's metadata, patched where a tag or flag lies, with the head hash redone:
    // only the value is wrong, so only the reader's own check can refuse it.
    const Entry entry = golden_entry();
    const std::string good = encode_entry(entry);
    auto patched = [&](std::size_t at, std::uint32_t value) {
        std::string bytes = good;
        for (int i = 0; i < 4; ++i)
            bytes[at + i] = static_cast<char>(value >> (8 * i));
        put_u64(bytes, 56, head_hash(bytes));
        return bytes;
    };
    // The flags lie before the source's length; the recipe tag before them.
    const std::size_t flags_at = good.find(entry.recipe->source) - 8;
    const std::size_t tag_at = flags_at - 4;
    ASSERT_TRUE(decode_entry(patched(flags_at, 3), entry.key).entry) << "the patch works";
    EXPECT_EQ(decode_entry(patched(flags_at, 4), entry.key).error, DecodeError::malformed);
    EXPECT_EQ(decode_entry(patched(tag_at, 2), entry.key).error, DecodeError::malformed);
    const std::size_t link_kind_at = good.find("libdevice_part.a") - 8;
    EXPECT_EQ(decode_entry(patched(link_kind_at, 0), entry.key).error, DecodeError::malformed);
    EXPECT_EQ(decode_entry(patched(link_kind_at, 7), entry.key).error, DecodeError::malformed);
    const std::size_t link_tag_at = good.find("libdevice_part.a") + 16;
    EXPECT_EQ(decode_entry(patched(link_tag_at, 3), entry.key).error, DecodeError::malformed);
}

TEST(Entry, EveryFlippedBitIsDetected) {
    const Entry entry = golden_entry(); // every field of the format in use
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
    const Entry entry = golden_entry();
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
    put_u64(version, 8, 4); // also clobbers `kind`: the version is read first
    payload[payload.size() - kiln::cache::kEntrySealSize - 1] ^= 1;
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
            for (int i = 0; i < changes; ++i) {
                const auto flip = static_cast<char>(1 + random() % 255); // drawn first, as before
                char& byte = bytes[random() % bytes.size()];
                byte = static_cast<char>(byte ^ flip);
            }
        }
        EXPECT_FALSE(decode_entry(bytes, entry.key).entry) << "round " << round;
    }
}

TEST(Entry, HeadDecodingReadsMetadataWithoutThePayload) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("head"), 3000);
    const std::string bytes = encode_entry(entry);
    const std::uint64_t head_size =
        kiln::cache::entry_head_size(bytes.substr(0, kiln::cache::kEntryHeaderSize));
    ASSERT_EQ(head_size, bytes.size() - 3000 - kiln::cache::kEntrySealSize);
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
