#pragma once
// Counter files, a few text lines ("hits 12"), updated under flock() by every process that uses
// the directory, so statistics add up across processes. Each shard keeps its event counters in
// `<dir>/<ab>/stats`; the cache directory keeps the estimate of the whole cache's entry count and
// bytes in `<dir>/usage`, which drives amortized eviction; each clean-up replaces the estimate
// with a recount.
//
// An update never waits long for a lock another process holds (a member of a shared cache can
// hold one for as long as it likes). Counts that must not wait (at exit, when the remote tier's
// counters are saved) and find the lock taken are left beside the file instead, in a spill: a file
// of their own, `.<name>-pending.<16 random hex digits>`, made O_CREAT|O_EXCL|O_NOFOLLOW and
// ending with the line `end`, and the marker `.<name>-pending` says some are there. The next
// process that holds the lock adds up to kMaxSpillsMerged of them and removes them; displays add
// them too. Only regular files with one link, not writable by every user and at most 4 KiB, the
// caller's own (private cache) or of the directory's group (shared), are read as spills; anything
// else at such a name is removed (one warning per process), an unfinished one once it is stale.

#include "fs.hpp"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// Counter lines for a delta: as format_counters(), but only the counters that are not zero, and
/// negative ones (entries and bytes removed) as negative numbers.
std::string format_counter_delta(const Counters& delta);

/// The counter lines of @p text with those of @p delta added, name by name (modulo 2^64, so a
/// negative delta subtracts); names only in @p delta follow. Lines that are no counter go.
std::string add_counter_lines(std::string_view text, std::string_view delta);

/// How long to try for a lock held by another process before giving up: one try, a few
/// milliseconds, or about a second (maintenance the user asked for).
enum class LockWait { none, brief, patient };

/// At most this many spills are read by one holder of a counter file's lock: a member who plants
/// thousands slows no process much (the rest wait for the next holders).
inline constexpr std::size_t kMaxSpillsMerged = 32;
/// A process does not leave a spill beside a file that has this many already (its lock held for
/// long): its counts stay in memory, lost if it ends so, and a warning says so.
inline constexpr std::size_t kMaxSpillsKept = 256;

/// Whether @p file is a name at which a spill of the counter file @p name may be.
bool is_spill_name(std::string_view file, std::string_view name);

/// Leave @p delta (counter lines) for the next holder of the lock on the counter file @p name in
/// @p dir_fd, in a new spill created with @p mode (fchmod-ed to it when @p force_mode), then mark
/// it. 0, or an errno (EDQUOT: kMaxSpillsKept spills are there already).
int write_spill(int dir_fd, const std::string& name, std::string_view delta, mode_t mode,
                bool force_mode);

/// Warn, once per process, that counts for @p file are not written: locked, and write_spill()
/// failed with @p error.
void warn_counts_lost(const std::string& file, int error);

/// What is at a spill's name.
struct SpillCheck {
    enum Kind {
        counts,     ///< a spill: its counter lines are in text
        unfinished, ///< no `end` line yet, and not stale: being written, left alone
        stale,      ///< never finished (its writer died) and older than kStaleSpillAgeNs
        untrusted,  ///< not a spill of this cache: why is in text
        gone,       ///< removed meanwhile
    } kind = gone;
    std::string text;
};
/// A spill that has not been finished for this long belongs to a process that died.
inline constexpr std::int64_t kStaleSpillAgeNs = std::int64_t{3600} * 1000000000;
/// Open and check the spill @p file in @p dir_fd (never following a link, never blocking on a
/// FIFO), in a shared cache (@p shared) or not.
SpillCheck check_spill(int dir_fd, const std::string& file, bool shared);

/// Every name in @p dir_fd at which a spill of the counter file @p name may be, up to @p limit.
std::vector<std::string> list_spills(int dir_fd, std::string_view name, std::size_t limit);

/// A counter file (a shard's stats, usage, remote-stats), locked exclusively for as long as this
/// object lives, with the spills left beside it while others held the lock.
class LockedStats {
  public:
    /// Lock @p name in the directory @p dir_fd (borrowed: it must outlive this object), creating
    /// it with @p mode (when @p create). It is opened O_NOFOLLOW and must be a regular file with
    /// one link, owned by this user unless the cache is shared (@p force_mode). nullopt when the
    /// file cannot be opened or is not such a file (errno tells), or stays locked (errno =
    /// EWOULDBLOCK). When the marker says spills are there, up to kMaxSpillsMerged are read: text()
    /// includes them, and a write removes them.
    static std::optional<LockedStats> open(int dir_fd, const std::string& name, bool create,
                                           mode_t mode, bool force_mode, LockWait wait);
    /// Puts the marker back when spills were read but not added by a write: the next holder
    /// reads them.
    ~LockedStats();
    LockedStats(LockedStats&& other) noexcept = default;
    LockedStats& operator=(LockedStats&&) = delete;

    /// Read the spills beside the file whether or not the marker says so (leftovers of a process
    /// that died between its spill and its marker); clean-ups do.
    void gather_spills();
    /// Remove every spill beside the file, read or not (zeroing).
    void discard_spills();

    Counters read() const;
    /// The file's text (at most 4 KiB) with the spills read added, for files of other counters
    /// than Counters.
    std::string text() const;
    /// Replace the file's text, then remove the spills read. 0 or an errno.
    int write_text(std::string_view text);
    /// Whether the file was empty when locked: just created, so it holds no estimate yet.
    bool fresh() const;
    /// Replace the counters. 0 or an errno.
    int write(const Counters& counters);

  private:
    LockedStats(UniqueFd fd, int dir_fd, const std::string& name, mode_t mode, bool shared)
        : m_fd(std::move(fd))
        , m_dir(dir_fd)
        , m_name(name)
        , m_mode(mode)
        , m_shared(shared) {}
    void read_spills(bool marked_only);

    UniqueFd m_fd;
    int m_dir = -1;
    std::string m_name;
    mode_t m_mode = 0;
    bool m_shared = false;
    std::string m_spilled;             ///< the counter lines of the spills read, added up
    std::vector<std::string> m_spills; ///< their names, removed by the next write
};

/// Add @p delta to a shard's counters and return the totals; nullopt when the file could not be
/// updated (the caller keeps the delta for later, or spills it when errno is EWOULDBLOCK).
std::optional<Counters> add_counters(int dir_fd, const std::string& name, const Counters& delta,
                                     mode_t mode, bool force_mode, LockWait wait);

/// The text of the counter file @p name for display, with the counter lines of the spills beside
/// it added (up to kMaxSpillsKept, checked as a cache that is @p shared or not checks them);
/// empty when there is no such file (or it is not a regular file) and no spill.
std::string read_counter_text(int dir_fd, const std::string& name, bool shared);
/// read_counter_text() parsed.
Counters read_counters(int dir_fd, const std::string& name, bool shared);

/// Set every counter line of the counter file @p name in @p dir_fd to zero, whatever counts it
/// (a shard's events, the remote tier's): `kiln cache stats --zero` resets files whose fields it
/// need not know. Lines that are no counter go, and so do the spills beside it. 0 when done, or
/// when there is no such file; else an errno (EWOULDBLOCK: locked past @p wait).
int zero_counter_file(int dir_fd, const std::string& name, mode_t mode, bool force_mode,
                      LockWait wait);

} // namespace kiln::cache::detail
