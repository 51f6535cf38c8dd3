#pragma once
// Where things live in a cache directory:
//
//   <dir>/<ab>/<key>.kiln    an entry (ab = the key's first two hex digits, 256 shards)
//   <dir>/<ab>/<key>.cu      its source, when sources are saved
//   <dir>/<ab>/<key>.json    NVRTC's compile time trace (KILN_COMPILE_TIME_TRACE=1)
//   <dir>/<ab>/<key>.tune    a launch tuner's choice (tuning_store.hpp; its own key, no entry)
//   <dir>/<ab>/<sig>.memo    a generated kernel's memo (memo_store.hpp; named by its signature)
//   <dir>/<ab>/<prog>.ahead  what a program's processes used, read ahead by the next one
//                            (read_ahead.hpp)
//   <dir>/<ab>/stats         the shard's counters (stats_file.hpp)
//   <dir>/usage              the estimate of the whole cache's entries and bytes (stats_file.hpp)
//   <dir>/remote-stats       the remote tier's counters (remote/remote_stats_file.hpp)
//   <dir>/kiln.conf          the cache's settings (settings_file.hpp)
//   <dir>/<ab>/.tmp.*        a file being written; never read as an entry, removed when stale
//   <dir>/<ab>/.stats-pending.*, <dir>/.usage-pending.*, <dir>/.remote-stats-pending.*
//                            counts left while another process held the counter file's lock,
//                            and their marks `.<name>-pending` (stats_file.hpp)

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

inline constexpr int kShardCount = 256;
inline constexpr std::string_view kEntrySuffix = ".kiln";
inline constexpr std::string_view kSourceSuffix = ".cu";
inline constexpr std::string_view kTraceSuffix = ".json";
inline constexpr std::string_view kTuneSuffix = ".tune";
inline constexpr std::string_view kMemoSuffix = ".memo";
inline constexpr std::string_view kAheadSuffix = ".ahead";
inline constexpr std::string_view kTempPrefix = ".tmp.";
inline constexpr std::string_view kStatsName = "stats";
inline constexpr std::string_view kUsageName = "usage";
/// The remote tier's counters: its format is the remote tier's, the file the directory's (it is
/// zeroed with the shards' counters).
inline constexpr std::string_view kRemoteStatsName = "remote-stats";
/// No entry file can be larger; a bigger file is damage, not something to read into memory.
inline constexpr std::uint64_t kMaxEntryFileSize =
    kEntryHeaderSize + kMaxMetadataSize + kMaxPayloadSize;

/// The shard a key belongs to: its first byte.
inline int shard_of(const Key& key) {
    return key.bytes[0];
}

/// "00" … "ff".
std::string shard_name(int shard);

inline std::filesystem::path shard_dir(const std::filesystem::path& root, int shard) {
    return root / shard_name(shard);
}
inline std::filesystem::path entry_path(const std::filesystem::path& root, const Key& key) {
    return shard_dir(root, shard_of(key)) / (key.hex() + std::string(kEntrySuffix));
}
inline std::filesystem::path source_file(const std::filesystem::path& root, const Key& key) {
    return shard_dir(root, shard_of(key)) / (key.hex() + std::string(kSourceSuffix));
}

inline std::filesystem::path trace_file(const std::filesystem::path& root, const Key& key) {
    return shard_dir(root, shard_of(key)) / (key.hex() + std::string(kTraceSuffix));
}
inline std::filesystem::path memo_file(const std::filesystem::path& root, const Key& signature) {
    return shard_dir(root, shard_of(signature)) / (signature.hex() + std::string(kMemoSuffix));
}

/// The key named by `<32 lower-case hex digits><suffix>`; nullopt for any other name.
std::optional<Key> key_from_name(std::string_view name, std::string_view suffix);

inline bool is_temp_name(std::string_view name) {
    return name.substr(0, kTempPrefix.size()) == kTempPrefix;
}

} // namespace kiln::cache::detail
