#pragma once
// One open cache directory: the root and shard directories opened and checked (cache_dir.hpp),
// the counters each shard keeps and the ones held back in memory (stats_file.hpp), publishing a
// file into a shard, damage, and eviction down to the size limit. Everything the directory's
// users share: the lookups (local_tier.hpp), the maintenance (maintenance.cpp, archive.cpp) and
// the façade's remote counters file all work through one Directory, so one process counts,
// warns and cleans once per directory. It knows nothing of lookups, read-ahead or the remote
// tier.

#include "kiln/cache/config.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/local_store.hpp"

#include "cache_dir.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "stats_file.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// An open, checked shard directory of an open cache directory.
struct ShardRef {
    std::shared_ptr<const UniqueFd> root;
    UniqueFd fd;
    int shard = -1;
    int error = 0; ///< when !fd: why (ENOENT: it does not exist)

    explicit operator bool() const noexcept { return static_cast<bool>(fd); }
    int get() const noexcept { return fd.get(); }
};

class Directory {
  public:
    explicit Directory(Config config);
    /// Writes the counts still held in memory.
    ~Directory();
    Directory(const Directory&) = delete;
    Directory& operator=(const Directory&) = delete;

    const Config& config() const noexcept { return m_config; }
    const Modes& modes() const noexcept { return m_modes; }
    std::filesystem::path shard_dir(int shard) const {
        return detail::shard_dir(m_config.dir, shard);
    }
    /// Whether lookups and stores use the directory: the cache is neither disabled nor
    /// remote-only. Maintenance works on it either way.
    bool in_use() const noexcept;

    /// The cache directory, opened and checked, or nullptr when it cannot be used (missing, or
    /// refused with one warning). A missing one is created when @p create and not read-only.
    std::shared_ptr<const UniqueFd> root(bool create);
    /// A shard directory, opened and checked; created (and healed) when @p create and not
    /// read-only. Problems are warned about once per process.
    ShardRef open_shard(int shard, bool create);

    /// Add @p delta to the counters (events to the shard's file, entries and bytes to the cache's
    /// usage file); what cannot be written now (locked, missing, read-only) is kept and added with
    /// the next update (or, at the last chance, flush_pending()). Returns the usage totals when
    /// they were written.
    std::optional<Counters> count(ShardRef& ref, const Counters& delta,
                                  LockWait wait = LockWait::brief);
    std::optional<Counters> count(int shard, const Counters& delta,
                                  LockWait wait = LockWait::brief);
    /// Add @p delta (hits and misses) to the counters later: with the shard's next write, once
    /// kDeferredEvents have gathered, or when the directory is closed (at exit for the global
    /// store), so that a lookup, and a process's first kernel, writes no file. A killed process
    /// loses them.
    void count_later(ShardRef& ref, const Counters& delta);
    static constexpr std::uint64_t kDeferredEvents = 64;
    /// This process's counts not yet in the files.
    Counters pending_total();
    /// Try once more to write what count() kept (at exit, and for write_statistics()). It never
    /// waits long for a lock another process holds: what stays locked is left beside its file
    /// for the next holder of the lock (stats_file.hpp's spills).
    void flush_pending();

    /// Publish @p suffix's file of @p key in its shard: an entry, source, trace, memo or
    /// read-ahead list (a directory in its way is removed first). Counts its bytes, and a store
    /// (when @p is_entry); past the size limit, cleans the cache (never @p key). 0 or an errno.
    int put_file(const Key& key, std::string_view suffix, std::string_view bytes, bool is_entry);
    /// Publish an encoded entry, count it, and clean the cache when over its limit. 0 or errno.
    int put(const Key& key, std::string_view bytes);
    /// Publish a source beside its entry and count its bytes. 0 or an errno.
    int put_source(const Key& key, std::string_view source);

    /// A damaged entry (or one the driver rejected): remove it unless read-only, count it, warn
    /// once per process saying what was done.
    void damaged(ShardRef& ref, const Key& key, const std::string& reason, bool count_miss);

    /// Remove, over the whole cache, entries modified before @p older_than_ns and then the least
    /// recently used until it holds at most @p max_bytes (never @p keep), plus stale temporaries;
    /// recount the usage, and add the counts left beside the counter files by processes that
    /// died before marking them. One clean-up at a time: with a wait shorter than
    /// LockWait::patient a clean-up already running elsewhere makes this one return at once. @p
    /// count_evicted: add the removed entries to the `evicted` counters (not for `clear`).
    PruneResult evict(std::uint64_t max_bytes, std::optional<std::int64_t> older_than_ns,
                      const Key* keep, LockWait wait, std::int64_t stale_before_ns,
                      bool count_evicted);

    /// Warn, once per process, that the directory cannot be written (or read): kernels are then
    /// compiled and kept in memory only.
    void warn_write(const std::string& what, int error);
    void warn_read(const std::string& what, int error);

  private:
    /// What write_counts() did.
    struct Written {
        std::optional<Counters> totals; ///< the usage totals, when they were written
        bool locked = false;            ///< a file stayed locked by another process
    };
    /// count()'s work. With @p spill, what another process keeps locked is left beside its file
    /// rather than kept in memory.
    Written write_counts(ShardRef& ref, const Counters& delta, LockWait wait, bool spill);

    const Config m_config;
    const Modes m_modes;
    std::mutex m_root_mutex;
    std::shared_ptr<const UniqueFd> m_root;
    std::string m_root_refused;
    std::atomic<bool> m_warned_write{false};
    std::atomic<bool> m_warned_read{false};
    std::atomic<bool> m_warned_shard{false};
    std::mutex m_pending_mutex;
    std::array<Counters, kShardCount> m_pending{};
};

} // namespace kiln::cache::detail
