#pragma once
// Reading an entry's header and metadata without its payload: what the listings (`kiln cache ls`)
// and the miss explanations (explain.cpp) read of each entry.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include "fs.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace kiln::cache::detail {

/// An entry file's verified header and metadata (decode_entry_head()).
struct EntryHead {
    UniqueFd fd;                 ///< open on the file, for a caller that reads the payload too
    std::uint64_t file_size = 0; ///< the file's size
    std::uint64_t head_size = 0; ///< bytes of header and metadata; the payload follows
    std::int64_t mtime_ns = 0;   ///< the file's modification time (its last store or hit)
    DecodeResult decoded;        ///< decoded.entry holds the entry, its payload empty
};

/// The header and metadata of the entry file at @p path, verified against @p key; nullopt when it
/// cannot be read, is not a regular file or does not verify.
std::optional<EntryHead> read_entry_head(const std::filesystem::path& path, const Key& key);

} // namespace kiln::cache::detail
