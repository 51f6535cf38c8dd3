#pragma once
// What one shard directory holds, read with one directory listing: the entries and saved
// sources grouped by key, the memos, and the temporaries and claims that killed writers left
// behind.

#include "kiln/cache/key.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln::cache::detail {

/// An entry and/or its saved source and time trace, or a memo (named by its signature, not an
/// entry key), or a program's read-ahead list (named by the program): the unit that eviction
/// removes.
struct ShardItem {
    Key key;
    bool has_entry = false;
    bool has_source = false;
    bool has_trace = false;
    bool has_memo = false;
    bool has_ahead = false;
    bool entry_is_dir = false; ///< damage: a directory where the entry should be
    std::uint64_t entry_size = 0;
    std::uint64_t source_size = 0;
    std::uint64_t trace_size = 0;
    std::uint64_t memo_size = 0;
    std::uint64_t ahead_size = 0;
    /// The entry's modification time (refreshed on each hit), else the newest of the others.
    std::int64_t mtime_ns = 0;

    std::uint64_t size() const {
        return entry_size + source_size + trace_size + memo_size + ahead_size;
    }
};

struct ShardContents {
    std::vector<ShardItem> items;
    /// Names of temporaries last modified before the scan's stale-temporary limit.
    std::vector<std::string> stale_temps;
    /// Names at which counts left for the shard's locked stats file may be (stats_file.hpp),
    /// whatever is there.
    std::vector<std::string> spills;
    /// Names of claim files (claim_file.hpp), whatever is there: held by a compiling process, or
    /// left by one that died.
    std::vector<std::string> claims;
    std::uint64_t entries() const;
    std::uint64_t memos() const;
    std::uint64_t bytes() const;
};

/// A writer needs well under a second; a temporary this old belongs to a writer that died.
inline constexpr std::int64_t kStaleTempAgeNs = std::int64_t{3600} * 1000000000;

/// List the shard directory @p shard_fd. Temporaries modified before @p stale_before_ns count as
/// stale; spills are listed. Files with other names are left alone. 0 or an errno.
int scan_shard(int shard_fd, std::int64_t stale_before_ns, ShardContents& out);

/// Remove an item's entry, source, trace, memo and read-ahead list (a reader that has one open
/// keeps reading it); a directory in an entry's place goes too. Returns the bytes freed.
/// What remove_item() removed: only what is really gone is counted.
struct RemovedItem {
    std::uint64_t freed = 0; ///< bytes of the files removed
    bool entry = false;      ///< the entry was removed
    bool memo = false;       ///< the memo was removed
    int error = 0;           ///< the errno of a file that could not be removed, or 0
};
RemovedItem remove_item(int shard_fd, const ShardItem& item);

/// Unlink the stale temporaries found by the scan, and the claim files no process holds; returns
/// how many went.
std::uint64_t remove_stale_temps(int shard_fd, const ShardContents& contents);

} // namespace kiln::cache::detail
