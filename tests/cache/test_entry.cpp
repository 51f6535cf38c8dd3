#include "kiln/cache/entry.hpp"

#include "cache_test_util.hpp"
#include "compression.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

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
const std::filesystem::path kGoldenV3Zstd =
    std::filesystem::path(KILN_GOLDEN_DIR) / "entry_v3_zstd.kiln";

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

// Every prefix of @p entry's encoding is truncated, and a byte past its end is malformed.
void expect_every_truncation_detected(const Entry& entry) {
    const std::string good = encode_entry(entry);
    for (std::size_t size = 0; size < good.size(); ++size) {
        auto decoded = decode_entry(std::string_view(good).substr(0, size), entry.key);
        EXPECT_FALSE(decoded.entry) << size;
        EXPECT_EQ(decoded.error, DecodeError::truncated) << size;
    }
    EXPECT_EQ(decode_entry(good + "x", entry.key).error, DecodeError::malformed);
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
    Entry entry = kiln::test::make_entry(kiln::test::key_of("tail"), 1000);
    entry.compression = kiln::cache::Compression::none;
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
    entry.compression = kiln::cache::Compression::none; // as the Kiln before compression wrote
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
    expect_every_truncation_detected(golden_entry());
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
    Entry entry = kiln::test::make_entry(kiln::test::key_of("head"), 3000);
    entry.compression = kiln::cache::Compression::none;
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

// Compressed entries (compression 1: zstd with the frozen dictionary 1).

namespace {

using kiln::cache::Compression;

// A version-3 entry with every field in use, whose recipe carries text of Kiln's device headers
// as of dictionary 1 (an excerpt of kiln/prelude.cuh), so that its compressed bytes lean on the
// dictionary.
Entry golden_entry_v3_zstd() {
    Entry entry = golden_entry();
    entry.format_version = 3;
    entry.provenance = kiln::cache::Provenance::own_compile;
    entry.compression = Compression::zstd_v1;
    entry.recipe->headers.emplace_back(
        "kiln/prelude.cuh",
        "namespace numbers {\n"
        "template <class T> constexpr T e_v = T(2.718281828459045235360287471352662498);\n"
        "template <class T> constexpr T log2e_v = T(1.442695040888963407359924681001892137);\n"
        "template <class T> constexpr T log10e_v = T(0.434294481903251827651128918916605082);\n"
        "template <class T> constexpr T ln2_v = T(0.693147180559945309417232121458176568);\n"
        "template <class T> constexpr T ln10_v = T(2.302585092994045684017991454684364208);\n"
        "template <class T> constexpr T pi_v = T(3.141592653589793238462643383279502884);\n");
    entry.payload = std::string(600, '\0') + entry.payload + std::string(300, 'x');
    return entry;
}

// An unsigned version-3 entry of @p key assembled from the stored blocks given, compression 1,
// with every hash right: only the reader's own checks of the blocks can refuse it.
std::string assembled(const Key& key, const std::string& stored_metadata,
                      const std::string& stored_payload) {
    Entry model = kiln::test::make_entry(key, 8);
    const std::string good = encode_entry(model);
    std::string bytes = good.substr(0, 64) + stored_metadata + stored_payload +
                        good.substr(good.size() - kiln::cache::kEntrySealSize);
    put_u64(bytes, 32, stored_metadata.size());
    put_u64(bytes, 40, stored_payload.size());
    put_u64(bytes, 48, XXH3_64bits(stored_payload.data(), stored_payload.size()));
    put_u64(bytes, 56, head_hash(bytes));
    return bytes;
}

std::string u64_bytes(std::uint64_t value) {
    std::string bytes(8, '\0');
    put_u64(bytes, 0, value);
    return bytes;
}

// The size of the second of the two frames in @p frames.
std::size_t frame_after_first(const std::string& frames) {
    return frames.size() - ZSTD_findFrameCompressedSize(frames.data(), frames.size());
}

// A zstd frame that claims @p claimed bytes of content and holds one RLE block of @p held.
std::string frame_claiming(std::uint64_t claimed, std::uint32_t held) {
    std::string frame = "\x28\xb5\x2f\xfd";
    frame += static_cast<char>(0xe0); // 8-byte content size, single segment, no dictionary ID
    frame += u64_bytes(claimed);
    const std::uint32_t block = 1u | (1u << 1) | (held << 3); // last, RLE, its size
    frame += static_cast<char>(block & 0xff);
    frame += static_cast<char>((block >> 8) & 0xff);
    frame += static_cast<char>((block >> 16) & 0xff);
    frame += 'A';
    return frame;
}

} // namespace

TEST(CompressedEntry, WritersCompressByDefaultAndRecordIt) {
    const Entry entry = kiln::test::make_entry(kiln::test::key_of("default"), 64);
    EXPECT_EQ(entry.compression, Compression::zstd_v1);
    const std::string bytes = encode_entry(entry);
    EXPECT_EQ(bytes[14], 1); // compression, in the high half of the kind field
    EXPECT_EQ(bytes[15], 0);
    const auto decoded = decode_entry(bytes, entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    EXPECT_EQ(decoded.entry->compression, Compression::zstd_v1);
}

TEST(CompressedEntry, RoundTripsCompressedAndNot) {
    for (const Compression compression : {Compression::none, Compression::zstd_v1}) {
        Entry entry = golden_entry_v3_zstd();
        entry.compression = compression;
        const std::string bytes = encode_entry(entry);
        EXPECT_EQ(bytes[14], static_cast<char>(compression));
        auto decoded = decode_entry(bytes, entry.key);
        ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
        expect_same(*decoded.entry, entry);
        EXPECT_EQ(decoded.entry->compression, compression);
        EXPECT_EQ(decoded.payload_size, entry.payload.size());
        // Canonical in what it holds: read and written again, the same bytes.
        EXPECT_EQ(encode_entry(*decoded.entry), bytes);
        auto in_place = decode_entry_in_place(std::string(bytes), entry.key);
        ASSERT_TRUE(in_place.entry) << to_string(in_place.error);
        expect_same(*in_place.entry, entry);
        auto loading = decode_entry_in_place(std::string(bytes), entry.key,
                                             kiln::cache::EntryParts::for_loading);
        ASSERT_TRUE(loading.entry) << to_string(loading.error);
        EXPECT_EQ(loading.entry->payload, entry.payload);
        EXPECT_FALSE(loading.entry->recipe);
    }
    Entry empty;
    empty.key = kiln::test::key_of("empty compressed");
    empty.kind = kiln::cache::PayloadKind::ptx;
    auto decoded = decode_entry(encode_entry(empty), empty.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, empty);
}

TEST(CompressedEntry, VersionsOneAndTwoAreWrittenUncompressed) {
    Entry entry = golden_entry(); // version 2
    ASSERT_EQ(entry.compression, Compression::zstd_v1);
    EXPECT_EQ(encode_entry(entry), kiln::test::read_file(kGoldenV2));
}

TEST(CompressedEntry, KilnsOwnDeviceHeadersCostAlmostNothing) {
    // A recipe carrying the whole dictionary (Kiln's device headers as of version 1).
    Entry entry = kiln::test::make_entry(kiln::test::key_of("headers"), 16);
    kiln::cache::Recipe recipe;
    recipe.source = "#include <kiln/prelude.cuh>\n";
    recipe.headers = {{"kiln/all.cuh", std::string(kiln::cache::detail::zstd_dictionary_v1())}};
    entry.recipe = recipe;
    const std::size_t uncompressed = [&] {
        Entry plain = entry;
        plain.compression = Compression::none;
        return encode_entry(plain).size();
    }();
    const std::size_t compressed = encode_entry(entry).size();
    EXPECT_GT(uncompressed, 31000u);
    EXPECT_LT(compressed, 600u) << "uncompressed: " << uncompressed;
}

// The dictionary is a format-level constant: entries written with it must decode for as long as
// Kiln reads them. A change to it is a new dictionary version, never an edit.
TEST(CompressedEntry, DictionaryOneIsFrozen) {
    const std::string_view dict = kiln::cache::detail::zstd_dictionary_v1();
    EXPECT_EQ(dict.size(), 31257u);
    EXPECT_EQ(XXH3_64bits(dict.data(), dict.size()), 0xb2df7859e334d4d4ull)
        << std::hex << XXH3_64bits(dict.data(), dict.size());
}

// Regenerate (only with a new dictionary version, as a new file beside this one) with:
// KILN_WRITE_GOLDEN=1 test_entry --gtest_filter='CompressedEntry.Golden*'
TEST(CompressedEntry, GoldenFileDecodesToTheKnownFields) {
    const Entry entry = golden_entry_v3_zstd();
    if (std::getenv("KILN_WRITE_GOLDEN"))
        kiln::test::write_file(kGoldenV3Zstd, encode_entry(entry));
    const std::string golden = kiln::test::read_file(kGoldenV3Zstd);
    ASSERT_FALSE(golden.empty()) << "missing " << kGoldenV3Zstd;
    EXPECT_EQ(golden[14], 1);
    auto decoded = decode_entry(golden, entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    expect_same(*decoded.entry, entry);
    EXPECT_EQ(decoded.entry->compression, Compression::zstd_v1);
    EXPECT_EQ(decoded.entry->provenance, kiln::cache::Provenance::own_compile);
    // Written uncompressed, what it holds is byte for byte what it always held.
    Entry plain = *decoded.entry;
    plain.compression = Compression::none;
    Entry expected = entry;
    expected.compression = Compression::none;
    EXPECT_EQ(encode_entry(plain), encode_entry(expected));
}

TEST(CompressedEntry, EveryFlippedBitIsDetected) {
    const Entry entry = golden_entry_v3_zstd();
    const std::string good = encode_entry(entry);
    for (std::size_t byte = 0; byte < good.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string bad = good;
            bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
            EXPECT_FALSE(decode_entry(bad, entry.key).entry) << "byte " << byte << " bit " << bit;
            if (byte % 13 == 0 && bit == 0) {
                EXPECT_FALSE(decode_entry_in_place(std::move(bad), entry.key).entry) << byte;
            }
        }
    }
}

TEST(CompressedEntry, EveryTruncationIsDetected) {
    expect_every_truncation_detected(golden_entry_v3_zstd());
}

TEST(CompressedEntry, BlocksThatAreNoGoodFrameAreMalformedEvenWithRightHashes) {
    const Key key = kiln::test::key_of("blocks");
    const Entry model = kiln::test::make_entry(key, 100);
    const std::string good = encode_entry(model);
    const std::uint64_t metadata_size = get_u64(good, 32);
    const std::string stored_metadata = good.substr(64, metadata_size);
    const std::string stored_payload = good.substr(64 + metadata_size, get_u64(good, 40));
    ASSERT_TRUE(decode_entry(assembled(key, stored_metadata, stored_payload), key).entry)
        << "the assembly works";
    const std::string payload_frame = stored_payload;
    const std::string metadata_frame = stored_metadata.substr(8);
    auto error = [&](const std::string& m, const std::string& p) {
        return decode_entry(assembled(key, m, p), key).error;
    };
    // The payload's size in the head must be the frame's.
    EXPECT_EQ(error(u64_bytes(99) + metadata_frame, payload_frame), DecodeError::malformed);
    EXPECT_EQ(error(u64_bytes(std::uint64_t{1} << 40) + metadata_frame, payload_frame),
              DecodeError::malformed);
    // Not a frame, trailing bytes, two frames, an uncompressed block where a frame belongs.
    EXPECT_EQ(error(stored_metadata, "payload"), DecodeError::malformed);
    EXPECT_EQ(error(stored_metadata, payload_frame + "x"), DecodeError::malformed);
    EXPECT_EQ(error(stored_metadata + metadata_frame, payload_frame), DecodeError::malformed);
    EXPECT_EQ(error(stored_metadata, payload_frame + payload_frame), DecodeError::malformed);
    EXPECT_EQ(error(u64_bytes(100) + std::string(40, 'm'), payload_frame), DecodeError::malformed);
    EXPECT_EQ(error(stored_metadata.substr(0, 7), payload_frame), DecodeError::malformed);
    // A skippable frame holds nothing.
    EXPECT_EQ(error(stored_metadata, std::string("\x50\x2a\x4d\x18\x00\x00\x00\x00", 8)),
              DecodeError::malformed);
}

TEST(CompressedEntry, ABombIsRefusedBeforeAnythingIsAllocated) {
    const Key key = kiln::test::key_of("bomb");
    const Entry model = kiln::test::make_entry(key, 100);
    const std::string good = encode_entry(model);
    const std::uint64_t metadata_size = get_u64(good, 32);
    const std::string stored_metadata = good.substr(64, metadata_size);
    const std::string payload_frame = good.substr(64 + metadata_size, get_u64(good, 40));
    auto error = [&](const std::string& m, const std::string& p) {
        return decode_entry(assembled(key, m, p), key).error;
    };
    // Frames claiming more than the limits (a terabyte, a gigabyte and a byte, 64 MiB and a byte).
    const std::uint64_t terabyte = std::uint64_t{1} << 40;
    EXPECT_EQ(error(u64_bytes(terabyte) + frame_claiming(100, 100), frame_claiming(terabyte, 8)),
              DecodeError::malformed);
    const std::uint64_t over_payload = kiln::cache::kMaxPayloadSize + 1;
    EXPECT_EQ(error(u64_bytes(over_payload) + stored_metadata.substr(8),
                    frame_claiming(over_payload, 1000)),
              DecodeError::malformed);
    // The metadata's frames: the first over 64 MiB, or the second over what the first leaves.
    const std::string frames = stored_metadata.substr(8);
    const std::size_t first = frames.size() - frame_after_first(frames);
    EXPECT_EQ(error(u64_bytes(100) + frame_claiming(kiln::cache::kMaxMetadataSize + 1, 1000) +
                        frames.substr(first),
                    payload_frame),
              DecodeError::malformed);
    EXPECT_EQ(error(u64_bytes(100) + frames.substr(0, first) +
                        frame_claiming(kiln::cache::kMaxMetadataSize, 1000),
                    payload_frame),
              DecodeError::malformed);
    // A frame whose claim is within the limits but not what it holds.
    EXPECT_EQ(error(u64_bytes(100) + stored_metadata.substr(8), frame_claiming(100, 50)),
              DecodeError::malformed);
    // The same frame, honest, is read: the refusals above are the sizes'.
    const auto honest = decode_entry(
        assembled(key, u64_bytes(100) + stored_metadata.substr(8), frame_claiming(100, 100)), key);
    ASSERT_TRUE(honest.entry) << to_string(honest.error);
    EXPECT_EQ(honest.entry->payload, std::string(100, 'A'));
}

TEST(CompressedEntry, HeadDecodingReadsTheMetadataAndThePayloadsSize) {
    Entry entry = kiln::test::make_entry(kiln::test::key_of("head"), 3000);
    entry.payload.replace(0, 2000, std::string(2000, '\0')); // compressible
    const std::string bytes = encode_entry(entry);
    const std::uint64_t head_size =
        kiln::cache::entry_head_size(bytes.substr(0, kiln::cache::kEntryHeaderSize));
    const std::uint64_t stored_payload = get_u64(bytes, 40);
    EXPECT_LT(stored_payload, 1500u);
    ASSERT_EQ(head_size, bytes.size() - stored_payload - kiln::cache::kEntrySealSize);
    auto decoded =
        kiln::cache::decode_entry_head(bytes.substr(0, head_size), bytes.size(), entry.key);
    ASSERT_TRUE(decoded.entry) << to_string(decoded.error);
    EXPECT_EQ(decoded.entry->arch, "sm_90");
    EXPECT_EQ(decoded.entry->lowered_names, entry.lowered_names);
    EXPECT_TRUE(decoded.entry->payload.empty());
    EXPECT_EQ(decoded.payload_size, 3000u);
    EXPECT_EQ(decoded.stored_payload_size, stored_payload);
}
