#pragma once
// Counter files, a few text lines ("hits 12"), updated under flock() by every process that uses
// the directory, so statistics add up across processes. Each shard keeps its event counters in
// `<dir>/<ab>/stats`; the cache directory keeps the estimate of the whole cache's entry count and
// bytes in `<dir>/usage`, which drives amortized eviction; each clean-up replaces the estimate
// with a recount.

#include "fs.hpp"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

struct Counters {
    std::uint64_t hits = 0, misses = 0, damaged = 0, evicted = 0, stores = 0;
    std::uint64_t untrusted = 0;       ///< misses for want of a trusted signature (trust.hpp)
    std::int64_t files = 0, bytes = 0; ///< signed: a delta may remove

    Counters& operator+=(const Counters& other);
    bool empty() const;
};

/// Calls @p fn(name, value) for each "name value" line of @p text whose value is a decimal
/// unsigned number; other lines are skipped (a counter file is an estimate, never a reason to
/// fail).
void for_each_counter_line(std::string_view text,
                           const std::function<void(std::string_view, std::uint64_t)>& fn);

std::string format_counters(const Counters& counters);
/// Unknown lines and garbage are ignored: the file is an estimate, never a reason to fail.
Counters parse_counters(std::string_view text);

/// How long to try for a lock held by another process before giving up.
enum class LockWait { brief, patient };

/// A shard's stats file, locked exclusively for as long as this object lives.
class LockedStats {
  public:
    /// Lock @p name in the directory @p dir_fd, creating it with @p mode (when @p create). It is
    /// opened O_NOFOLLOW and must be a regular file with one link, owned by this user unless the
    /// cache is shared (@p force_mode). nullopt when the file cannot be opened or is not such a
    /// file (errno tells), or stays locked (errno = EWOULDBLOCK).
    static std::optional<LockedStats> open(int dir_fd, const std::string& name, bool create,
                                           mode_t mode, bool force_mode, LockWait wait);

    Counters read() const;
    /// The file's text (at most 4 KiB), for files of other counters than Counters.
    std::string text() const;
    /// Replace the file's text. 0 or an errno.
    int write_text(std::string_view text) const;
    /// Whether the file was empty when locked: just created, so it holds no estimate yet.
    bool fresh() const;
    /// Replace the counters. 0 or an errno.
    int write(const Counters& counters) const;

  private:
    explicit LockedStats(UniqueFd fd)
        : m_fd(std::move(fd)) {}
    UniqueFd m_fd;
};

/// Add @p delta to a shard's counters and return the totals; nullopt when the file could not be
/// updated (the caller keeps the delta for later).
std::optional<Counters> add_counters(int dir_fd, const std::string& name, const Counters& delta,
                                     mode_t mode, bool force_mode, LockWait wait);

/// Counters for display; zero when there is no such file (or it is not a regular file).
Counters read_counters(int dir_fd, const std::string& name);

/// Set every counter line of the counter file @p name in @p dir_fd to zero, whatever counts it
/// (a shard's events, the remote tier's): `kiln cache stats --zero` resets files whose fields it
/// need not know. Lines that are no counter go. True when done, or when there is no such file.
bool zero_counter_file(int dir_fd, const std::string& name, mode_t mode, bool force_mode);

} // namespace kiln::cache::detail
