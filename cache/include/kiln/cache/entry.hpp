#pragma once
/// @file
/// One cache entry: a header with metadata followed by the raw payload (a cubin). The byte format
/// is documented as a grammar at the top of entry.cpp, the code that reads it.

#include "kiln/cache/key.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache {

/// Version of the entry format; part of every key, so a new format never reads an old entry.
inline constexpr std::uint32_t kEntryFormatVersion = 1;

/// Size of an entry's fixed header; the metadata follows it, then the payload.
inline constexpr std::size_t kEntryHeaderSize = 64;
/// Limits that decode_entry() enforces and encode_entry() respects, so hostile sizes are rejected.
inline constexpr std::uint64_t kMaxPayloadSize = std::uint64_t{1} << 30;
inline constexpr std::uint64_t kMaxMetadataSize = std::uint64_t{64} << 20;

enum class PayloadKind : std::uint32_t { cubin = 1, ptx = 2 };

struct Entry {
    Key key;
    PayloadKind kind = PayloadKind::cubin;
    std::string payload;                                            ///< the cubin, byte for byte
    std::vector<std::pair<std::string, std::string>> lowered_names; ///< name expression -> lowered
    std::string nvrtc_version;                                      ///< e.g. "13.0.88"
    std::string arch;                                               ///< e.g. "sm_90"
    double compile_ms = 0;
    std::string log; ///< NVRTC's log (warnings)
};

/// Serialize an entry to its on-disk bytes.
/// @throws std::length_error when the payload or metadata exceed kMaxPayloadSize /
/// kMaxMetadataSize (or a string exceeds 4 GiB).
std::string encode_entry(const Entry& entry);

/// Why decode_entry() rejected some bytes.
enum class DecodeError { truncated, bad_magic, bad_version, bad_key, bad_checksum, malformed };
const char* to_string(DecodeError e);

/// Parse and verify on-disk bytes. @p expected is the key the file name promised: an entry that
/// holds another key is rejected. Never throws on bad input.
struct DecodeResult {
    std::optional<Entry> entry;
    DecodeError error = DecodeError::malformed;
    std::uint64_t payload_size = 0; ///< set on success, also by decode_entry_head()
};
DecodeResult decode_entry(std::string_view bytes, const Key& expected);

/// How many leading bytes of an entry hold its header and metadata, from its first
/// kEntryHeaderSize bytes; 0 when @p header does not start an entry of this format.
std::uint64_t entry_head_size(std::string_view header);

/// decode_entry() for listings: @p head is the first entry_head_size() bytes of a file of
/// @p file_size bytes. Verifies everything but the payload checksum; Entry::payload stays empty.
DecodeResult decode_entry_head(std::string_view head, std::uint64_t file_size, const Key& expected);

} // namespace kiln::cache
