#include "kiln/cache/entry.hpp"

#include "bytes.hpp"

#include <xxhash.h>

#include <cstring>
#include <stdexcept>

// The on-disk format of one cache entry, version 1. All integers are little-endian; the file is
// exactly 64 + metadata_size + payload_size bytes long.
//
//   entry          ::= header metadata payload
//   header         ::= magic version kind key metadata_size payload_size payload_hash head_hash
//                                                  (64 bytes)
//   magic          ::= "KILNCCH" 0x00             (8 bytes, offset 0)
//   version        ::= u32                        format version, 1 (offset 8)
//   kind           ::= u32                        1 = cubin, 2 = ptx (offset 12)
//   key            ::= 16 bytes                   the entry's key; equals its file name (offset 16)
//   metadata_size  ::= u64                        at most 64 MiB (offset 32)
//   payload_size   ::= u64                        at most 1 GiB (offset 40)
//   payload_hash   ::= u64                        XXH3-64 of payload (offset 48)
//   head_hash      ::= u64                        XXH3-64 of header bytes 0..55 followed by
//                                                  metadata (offset 56)
//   metadata       ::= nvrtc_version arch compile_ms log name_count name_pair{name_count}
//                                                  exactly metadata_size bytes
//   nvrtc_version  ::= string                     e.g. "13.0.88"
//   arch           ::= string                     e.g. "sm_90"
//   compile_ms     ::= u64                        IEEE 754 binary64 bits
//   log            ::= string                     NVRTC's log
//   name_count     ::= u32                        at most 2^20
//   name_pair      ::= string string              name expression, lowered name
//   string         ::= u32 length, then length bytes
//   payload        ::= payload_size bytes         the raw cubin: `tail -c payload_size FILE`
//
// The two hashes together cover every byte, so a flipped bit anywhere is detected: in magic or
// version directly, elsewhere in the header or metadata by head_hash, in the payload by
// payload_hash. A reader checks magic and version first (their place never changes between
// versions), then sizes, head_hash, key, metadata and payload_hash.

namespace kiln::cache {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'C', 'H', '\0'};
constexpr std::size_t kHashedHeaderSize = 56; // header bytes before head_hash
constexpr std::uint32_t kMaxNames = 1u << 20;
constexpr std::uint64_t kMaxString = 0xffffffffu;

struct Header {
    std::uint32_t version = 0;
    std::uint32_t kind = 0;
    Key key;
    std::uint64_t metadata_size = 0;
    std::uint64_t payload_size = 0;
    std::uint64_t payload_hash = 0;
    std::uint64_t head_hash = 0;
};

std::uint64_t hash_head(std::string_view header, std::string_view metadata) {
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, header.data(), kHashedHeaderSize);
    XXH3_64bits_update(&state, metadata.data(), metadata.size());
    return XXH3_64bits_digest(&state);
}

std::uint64_t hash_payload(std::string_view payload) {
    return XXH3_64bits(payload.data(), payload.size());
}

std::string encode_metadata(const Entry& entry) {
    for (const std::string* text : {&entry.nvrtc_version, &entry.arch, &entry.log})
        if (text->size() > kMaxString) throw std::length_error("cache entry: string over 4 GiB");
    if (entry.lowered_names.size() > kMaxNames)
        throw std::length_error("cache entry: too many lowered names");
    std::string metadata;
    detail::ByteWriter out(metadata);
    out.string(entry.nvrtc_version);
    out.string(entry.arch);
    out.f64(entry.compile_ms);
    out.string(entry.log);
    out.u32(static_cast<std::uint32_t>(entry.lowered_names.size()));
    for (const auto& [expression, lowered] : entry.lowered_names) {
        if (expression.size() > kMaxString || lowered.size() > kMaxString)
            throw std::length_error("cache entry: string over 4 GiB");
        out.string(expression);
        out.string(lowered);
    }
    if (metadata.size() > kMaxMetadataSize)
        throw std::length_error("cache entry: metadata over the size limit");
    return metadata;
}

bool decode_metadata(std::string_view metadata, Entry& entry) {
    detail::ByteReader in(metadata);
    entry.nvrtc_version = in.string();
    entry.arch = in.string();
    entry.compile_ms = in.f64();
    entry.log = in.string();
    const std::uint32_t count = in.u32();
    if (!in.ok() || count > kMaxNames) return false;
    // Each pair takes at least 8 bytes: bound the reservation by what is really there.
    if (count > in.remaining() / 8) return false;
    entry.lowered_names.reserve(count);
    for (std::uint32_t i = 0; i < count && in.ok(); ++i) {
        std::string expression = in.string();
        std::string lowered = in.string();
        entry.lowered_names.emplace_back(std::move(expression), std::move(lowered));
    }
    return in.ok() && in.remaining() == 0;
}

// Magic, version and the fixed fields; nothing about the rest of the file yet.
std::optional<DecodeError> read_header(std::string_view bytes, Header& header) {
    if (bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return DecodeError::bad_magic;
    detail::ByteReader in(bytes);
    in.raw(sizeof kMagic);
    header.version = in.u32();
    if (in.ok() && header.version != kEntryFormatVersion) return DecodeError::bad_version;
    if (bytes.size() < kEntryHeaderSize) return DecodeError::truncated;
    header.kind = in.u32();
    std::string_view key = in.raw(header.key.bytes.size());
    std::memcpy(header.key.bytes.data(), key.data(), key.size());
    header.metadata_size = in.u64();
    header.payload_size = in.u64();
    header.payload_hash = in.u64();
    header.head_hash = in.u64();
    if (header.metadata_size > kMaxMetadataSize || header.payload_size > kMaxPayloadSize)
        return DecodeError::malformed;
    return std::nullopt;
}

DecodeResult decode(std::string_view bytes, std::uint64_t file_size, const Key& expected,
                    bool with_payload) {
    DecodeResult result;
    Header header;
    if (auto error = read_header(bytes, header)) {
        result.error = *error;
        return result;
    }
    const std::uint64_t head_size = kEntryHeaderSize + header.metadata_size;
    const std::uint64_t total = head_size + header.payload_size;
    if (file_size < total || bytes.size() < head_size) {
        result.error = DecodeError::truncated;
        return result;
    }
    if (file_size > total) {
        result.error = DecodeError::malformed;
        return result;
    }
    const std::string_view metadata =
        bytes.substr(kEntryHeaderSize, static_cast<std::size_t>(header.metadata_size));
    if (hash_head(bytes, metadata) != header.head_hash) {
        result.error = DecodeError::bad_checksum;
        return result;
    }
    if (header.key != expected) {
        result.error = DecodeError::bad_key;
        return result;
    }
    Entry entry;
    entry.key = header.key;
    if (header.kind != static_cast<std::uint32_t>(PayloadKind::cubin) &&
        header.kind != static_cast<std::uint32_t>(PayloadKind::ptx)) {
        result.error = DecodeError::malformed;
        return result;
    }
    entry.kind = static_cast<PayloadKind>(header.kind);
    if (!decode_metadata(metadata, entry)) {
        result.error = DecodeError::malformed;
        return result;
    }
    if (with_payload) {
        const std::string_view payload = bytes.substr(static_cast<std::size_t>(head_size));
        if (hash_payload(payload) != header.payload_hash) {
            result.error = DecodeError::bad_checksum;
            return result;
        }
        entry.payload = std::string(payload);
    }
    result.payload_size = header.payload_size;
    result.entry = std::move(entry);
    return result;
}

} // namespace

std::string encode_entry(const Entry& entry) {
    if (entry.payload.size() > kMaxPayloadSize)
        throw std::length_error("cache entry: payload over the size limit");
    const std::string metadata = encode_metadata(entry);
    std::string bytes;
    bytes.reserve(kEntryHeaderSize + metadata.size() + entry.payload.size());
    detail::ByteWriter out(bytes);
    out.raw(std::string_view(kMagic, sizeof kMagic));
    out.u32(kEntryFormatVersion);
    out.u32(static_cast<std::uint32_t>(entry.kind));
    out.raw(std::string_view(reinterpret_cast<const char*>(entry.key.bytes.data()),
                             entry.key.bytes.size()));
    out.u64(metadata.size());
    out.u64(entry.payload.size());
    out.u64(hash_payload(entry.payload));
    out.u64(hash_head(bytes, metadata));
    out.raw(metadata);
    out.raw(entry.payload);
    return bytes;
}

const char* to_string(DecodeError e) {
    switch (e) {
    case DecodeError::truncated:
        return "truncated";
    case DecodeError::bad_magic:
        return "not a Kiln cache entry (wrong magic)";
    case DecodeError::bad_version:
        return "another entry format version";
    case DecodeError::bad_key:
        return "holds another key than its file name";
    case DecodeError::bad_checksum:
        return "checksum mismatch";
    case DecodeError::malformed:
        return "malformed";
    }
    return "malformed";
}

DecodeResult decode_entry(std::string_view bytes, const Key& expected) {
    return decode(bytes, bytes.size(), expected, true);
}

std::uint64_t entry_head_size(std::string_view header) {
    Header parsed;
    if (read_header(header, parsed)) return 0;
    return kEntryHeaderSize + parsed.metadata_size;
}

DecodeResult decode_entry_head(std::string_view head, std::uint64_t file_size,
                               const Key& expected) {
    return decode(head, file_size, expected, false);
}

} // namespace kiln::cache
