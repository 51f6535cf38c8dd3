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

enum class PayloadKind : std::uint32_t { cubin = 1, ptx = 2 };

struct Entry {
    Key key;
    PayloadKind kind = PayloadKind::cubin;
    std::string payload;                                         ///< the cubin, byte for byte
    std::vector<std::pair<std::string, std::string>> lowered_names; ///< name expression -> lowered
    std::string nvrtc_version;                                   ///< e.g. "13.0.88"
    std::string arch;                                            ///< e.g. "sm_90"
    double compile_ms = 0;
    std::string log;                                             ///< NVRTC's log (warnings)
};

/// Serialize an entry to its on-disk bytes.
std::string encode_entry(const Entry& entry);

/// Why decode_entry() rejected some bytes.
enum class DecodeError { truncated, bad_magic, bad_version, bad_key, bad_checksum, malformed };
const char* to_string(DecodeError e);

/// Parse and verify on-disk bytes. @p expected is the key the file name promised: an entry that
/// holds another key is rejected. Never throws on bad input.
struct DecodeResult {
    std::optional<Entry> entry;
    DecodeError error = DecodeError::malformed;
};
DecodeResult decode_entry(std::string_view bytes, const Key& expected);

} // namespace kiln::cache
