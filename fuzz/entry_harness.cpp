#include "entry_harness.hpp"

#include "harness_failure.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln::fuzz {

namespace {

using cache::DecodeResult;
using cache::kEntryHeaderSize;
using cache::Key;

// Header fields, by the grammar at the top of cache/entry.cpp.
constexpr std::size_t kVersionAt = 8;
constexpr std::size_t kKeyAt = 16;
constexpr std::size_t kMetadataSizeAt = 32;
constexpr std::size_t kPayloadSizeAt = 40;
constexpr std::size_t kPayloadHashAt = 48;
constexpr std::size_t kHeadHashAt = 56;

std::uint64_t get_u64(std::string_view bytes, std::size_t at) {
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
        value |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    return value;
}

void put_u64(std::string& bytes, std::size_t at, std::uint64_t value) {
    for (int i = 0; i < 8; ++i)
        bytes[at + i] = static_cast<char>(value >> (8 * i));
}

// The key the header names (what the file name would say), or the zero key.
Key named_key(std::string_view bytes) {
    Key key;
    if (bytes.size() >= kKeyAt + key.bytes.size())
        std::memcpy(key.bytes.data(), bytes.data() + kKeyAt, key.bytes.size());
    return key;
}

// The same bytes with the magic, the version, both sizes and both checksums made consistent, so
// that the reader gets past them to the metadata; the kind, the key and the metadata stay as
// they came.
std::string repaired(std::string_view bytes) {
    std::string out(bytes);
    if (out.size() < kEntryHeaderSize) return out;
    std::memcpy(out.data(), "KILNCCH", 8);
    // Version 1 stays 1 (tools still read it); anything else becomes the current version.
    if (out[kVersionAt] != 1) out[kVersionAt] = static_cast<char>(cache::kEntryFormatVersion);
    std::fill(out.begin() + kVersionAt + 1, out.begin() + kVersionAt + 4, '\0');
    const std::uint64_t room = out.size() - kEntryHeaderSize;
    const std::uint64_t metadata_size =
        std::min({get_u64(out, kMetadataSizeAt), room, cache::kMaxMetadataSize});
    put_u64(out, kMetadataSizeAt, metadata_size);
    put_u64(out, kPayloadSizeAt, room - metadata_size);
    const std::string_view metadata(out.data() + kEntryHeaderSize, metadata_size);
    const std::string_view payload(out.data() + kEntryHeaderSize + metadata_size,
                                   room - metadata_size);
    put_u64(out, kPayloadHashAt, XXH3_64bits(payload.data(), payload.size()));
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, out.data(), kHeadHashAt);
    XXH3_64bits_update(&state, metadata.data(), metadata.size());
    put_u64(out, kHeadHashAt, XXH3_64bits_digest(&state));
    return out;
}

// Every reader on @p bytes, expecting @p key, and what they must agree on.
void read(std::string_view bytes, const Key& key) {
    const DecodeResult full = cache::decode_entry(bytes, key);
    check(cache::to_string(full.error) != nullptr, "every DecodeError has a text");
    if (full.entry) {
        check(full.entry->key == key, "an accepted entry holds the expected key");
        check(full.payload_size == full.entry->payload.size(), "payload_size is the payload's");
        // The format is canonical: what was accepted re-encodes to the very same bytes (compressed
        // bytes are not: another frame may decompress alike, so those re-encode to the same
        // entry).
        if (full.entry->compression == cache::Compression::none) {
            check(cache::encode_entry(*full.entry) == bytes, "an accepted entry re-encodes alike");
        } else {
            const DecodeResult again = cache::decode_entry(cache::encode_entry(*full.entry), key);
            check(again.entry && again.entry->payload == full.entry->payload &&
                      again.entry->recipe == full.entry->recipe,
                  "an accepted compressed entry re-encodes to the same entry");
        }
    }

    // As listings read: the head first, then the rest of the file is only counted.
    const std::uint64_t head_size =
        cache::entry_head_size(bytes.substr(0, std::min(bytes.size(), kEntryHeaderSize)));
    if (full.entry)
        check(head_size == bytes.size() - full.stored_payload_size -
                               (full.entry->format_version >= 3 ? cache::kEntrySealSize : 0),
              "entry_head_size()");
    if (head_size == 0) return;
    const std::string_view head = bytes.substr(0, std::min<std::uint64_t>(head_size, bytes.size()));
    const DecodeResult listed = cache::decode_entry_head(head, bytes.size(), key);
    if (full.entry || full.error != cache::DecodeError::bad_checksum) {
        // Only the payload's checksum is left out: otherwise both readers answer alike.
        check(listed.entry.has_value() == full.entry.has_value(),
              "decode_entry_head() and decode_entry() agree");
        if (!listed.entry) check(listed.error == full.error, "and give the same reason");
    }
    if (full.entry && listed.entry) {
        check(listed.entry->payload.empty(), "decode_entry_head() leaves the payload out");
        check(listed.payload_size == full.payload_size &&
                  listed.stored_payload_size == full.stored_payload_size &&
                  listed.entry->lowered_names == full.entry->lowered_names &&
                  listed.entry->log == full.entry->log && listed.entry->arch == full.entry->arch &&
                  listed.entry->nvrtc_version == full.entry->nvrtc_version &&
                  listed.entry->format_version == full.entry->format_version &&
                  listed.entry->kernel_names == full.entry->kernel_names &&
                  listed.entry->recipe == full.entry->recipe &&
                  listed.entry->link_inputs == full.entry->link_inputs,
              "decode_entry_head() reads the metadata decode_entry() reads");
    }
}

} // namespace

void run_entry_input(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);

    if (const auto key = Key::from_hex(bytes))
        check(Key::from_hex(key->hex()) == key && key->hex().size() == 32,
              "a parsed key prints as 32 hex digits and parses back");

    read(bytes, named_key(bytes));
    read(bytes, Key{}); // mostly another key than the header's: rejected as such
    const std::string fixed = repaired(bytes);
    read(fixed, named_key(fixed));
}

} // namespace kiln::fuzz
