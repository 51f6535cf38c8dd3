#pragma once
// The remote tier's counters, summed over every process that used the cache directory, in
// `<dir>/remote-stats` (lines such as "hits 12", updated under flock() like the shards' stats).
// Each process adds what it counted when its store is destroyed (usually at exit) and when it
// flushes its publishes (`kiln compile`, `kiln warm`), or leaves it beside the file when another
// process holds the file's lock. The file is the directory's (its name is in
// local/layout.hpp, and LocalStore::zero_stats() zeroes it with the shards' counters); what its
// lines count is the remote tier's.

#include "kiln/cache/remote.hpp"

#include <sys/types.h>

#include <string>
#include <string_view>

namespace kiln::cache::detail {

bool is_zero(const RemoteStats& stats);
/// @p a minus @p b, field by field (b never exceeds a: both count up).
RemoteStats difference(const RemoteStats& a, const RemoteStats& b);

std::string format_remote_stats(const RemoteStats& stats);
/// Unknown lines and garbage are ignored.
RemoteStats parse_remote_stats(std::string_view text);

/// Add @p delta to the file in the directory @p root_fd, or, when another process holds its lock
/// past a brief wait, leave it beside the file for the next holder (local/stats_file.hpp's
/// spills). False when it could be neither.
bool add_remote_stats(int root_fd, const RemoteStats& delta, mode_t mode, bool force_mode);
/// The file's counters with those left beside it (checked as a cache that is @p shared or not
/// checks them); zero when there are none.
RemoteStats read_remote_stats(int root_fd, bool shared);

} // namespace kiln::cache::detail
