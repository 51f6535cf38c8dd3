#pragma once
// Store's private state, shared by the files that implement its parts (store.cpp: the hot path,
// store_impl.cpp: directories, counters, publishing and eviction, maintenance.cpp, archive.cpp).

#include "kiln/cache/store.hpp"

#include "cache_dir.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "read_ahead.hpp"
#include "remote_tier.hpp"
#include "shard.hpp"
#include "stats_file.hpp"

#include <sys/types.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::cache {

namespace detail {

/// An open, checked shard directory of an open cache directory.
struct ShardRef {
    std::shared_ptr<const UniqueFd> root;
    UniqueFd fd;
    int shard = -1;
    int error = 0; ///< when !fd: why (ENOENT: it does not exist)

    explicit operator bool() const noexcept { return static_cast<bool>(fd); }
    int get() const noexcept { return fd.get(); }
};

} // namespace detail

struct Store::Impl {
    explicit Impl(Config config);
    ~Impl();

    Config config;
    detail::Modes modes;
    /// The Redis tier, when configured and the cache is not disabled.
    std::unique_ptr<detail::RemoteTier> remote;

    /// Whether lookups and stores use the directory (not remote-only).
    bool local() const {
        return !config.disabled && !(remote && remote->config().mode == RemoteMode::remote_only);
    }
    /// A lookup counts its hit or miss, deals with damage and notes what it used; a read ahead
    /// (read_ahead.cpp) does none of that and leaves whatever it does not take to the lookup.
    enum class Lookup { counted, read_ahead };
    /// The directory's part of Store::load.
    std::optional<Entry> load_local(const Key& key, EntryParts parts, Lookup lookup);
    /// The directory's part of Store::load_memo.
    std::optional<Memo> load_memo(const Key& signature, Lookup lookup);
    /// What was read ahead for this program, and what this process used (read_ahead.hpp).
    detail::ReadAhead ahead;
    /// File what this process used for the program's next process (when the store closes).
    void save_read_ahead() noexcept;
    /// Count a lookup answered from what was read ahead as the hit it is, and note the use.
    void count_read_ahead_hit(const detail::AheadItem& item);
    /// Add the remote tier's unsaved counters to `<dir>/remote-stats` (kept in memory when the
    /// directory is not used, read-only or unwritable).
    void save_remote_stats();
    /// This process's remote counters not yet in the file.
    RemoteStats remote_unsaved();

    std::filesystem::path shard_dir(int shard) const {
        return detail::shard_dir(config.dir, shard);
    }

    /// The cache directory, opened and checked, or nullptr when it cannot be used (missing, or
    /// refused with one warning). A missing one is created when @p create and not read-only.
    std::shared_ptr<const detail::UniqueFd> root(bool create);
    /// A shard directory, opened and checked; created (and healed) when @p create and not
    /// read-only. Problems are warned about once per process.
    detail::ShardRef open_shard(int shard, bool create);

    /// Add @p delta to the counters (events to the shard's file, entries and bytes to the cache's
    /// usage file); what cannot be written now (locked, missing, read-only) is kept and added with
    /// the next update. Returns the usage totals when they were written.
    std::optional<detail::Counters> count(detail::ShardRef& ref, const detail::Counters& delta,
                                          detail::LockWait wait = detail::LockWait::brief);
    std::optional<detail::Counters> count(int shard, const detail::Counters& delta,
                                          detail::LockWait wait = detail::LockWait::brief);
    /// Add @p delta (hits and misses) to the counters later: with the shard's next write, once
    /// kDeferredEvents have gathered, or when the Store is destroyed (at exit for the global one),
    /// so that a lookup, and a process's first kernel, writes no file. A killed process loses them.
    void count_later(detail::ShardRef& ref, const detail::Counters& delta);
    static constexpr std::uint64_t kDeferredEvents = 64;
    /// This process's counts not yet in the files.
    detail::Counters pending_total();
    /// Try once more to write what count() kept.
    void flush_pending();

    /// Publish @p name in the shard: an entry, source, trace or memo of @p key (a directory in its
    /// way is removed first). Counts its bytes, and a store (when @p is_entry); past the size
    /// limit, cleans the cache (never @p key). 0 or an errno.
    int put_file(const Key& key, std::string_view suffix, std::string_view bytes, bool is_entry);
    /// Publish an encoded entry, count it, and clean the cache when over its limit. 0 or errno.
    int put(const Key& key, std::string_view bytes);
    /// Publish a source beside its entry and count its bytes. 0 or an errno.
    int put_source(const Key& key, std::string_view source);

    /// A damaged entry (or one the driver rejected): remove it unless read-only, count it, warn
    /// once per process saying what was done.
    void damaged(detail::ShardRef& ref, const Key& key, const std::string& reason, bool count_miss);

    /// Remove, over the whole cache, entries modified before @p older_than_ns and then the least
    /// recently used until it holds at most @p max_bytes (never @p keep), plus stale temporaries;
    /// recount the usage. One clean-up at a time: with LockWait::brief a clean-up already running
    /// elsewhere makes this one return at once. @p count_evicted: add the removed entries to the
    /// `evicted` counters (not for `clear`).
    PruneResult evict(std::uint64_t max_bytes, std::optional<std::int64_t> older_than_ns,
                      const Key* keep, detail::LockWait wait, std::int64_t stale_before_ns,
                      bool count_evicted);

    /// Store::verify's verdict on the file @p name of a shard (an entry or a memo; @p problem
    /// empty when it verified), counted in @p result; a damaged one is removed when @p fix, and
    /// @p removed (what removing it takes from the usage) counted with the damage.
    void record_verdict(detail::ShardRef& ref, const std::string& name, std::string problem,
                        bool fix, detail::Counters removed, VerifyResult& result);

    void warn_write(const std::string& what, int error);
    void warn_read(const std::string& what, int error);

  private:
    std::mutex m_remote_stats_mutex;
    RemoteStats m_remote_unsaved; ///< taken from the tier, not yet in the file
    std::mutex m_root_mutex;
    std::shared_ptr<const detail::UniqueFd> m_root;
    std::string m_root_refused;
    std::atomic<bool> m_warned_write{false};
    std::atomic<bool> m_warned_read{false};
    std::atomic<bool> m_warned_shard{false};
    std::mutex m_pending_mutex;
    std::array<detail::Counters, detail::kShardCount> m_pending{};
};

namespace detail {
/// Log a warning through kiln::logger(); never throws (a logging failure is dropped).
void warn(const std::string& message) noexcept;
/// Whether a file's modification time is within a minute of now (either way): a hit refreshes
/// it only when not, since eviction needs no finer order and an inode write costs a journal
/// transaction.
bool touched_lately(const struct stat& st);
/// Ignore SIGXFSZ if it still has its default action (which kills the process), so a file-size
/// limit turns into EFBIG and a cache miss. Done once per process, before the first write.
void ignore_sigxfsz_once();
} // namespace detail

} // namespace kiln::cache
