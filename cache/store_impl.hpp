#pragma once
// Store's private state, shared by the files that implement its parts (store.cpp: the hot path,
// store_impl.cpp: counters, publishing and eviction, maintenance.cpp, archive.cpp).

#include "kiln/cache/store.hpp"

#include "layout.hpp"
#include "stats_file.hpp"

#include <sys/types.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::cache {

struct Store::Impl {
    explicit Impl(Config config);
    ~Impl();

    Config config;
    mode_t dir_mode;
    mode_t file_mode;

    std::filesystem::path shard_dir(int shard) const {
        return detail::shard_dir(config.dir, shard);
    }

    /// Add @p delta to a shard's counters; when the file cannot be updated now (locked, missing,
    /// read-only), keep it and add it with the next update. Returns the totals when written.
    std::optional<detail::Counters> count(int shard, const detail::Counters& delta,
                                          detail::LockWait wait = detail::LockWait::brief);
    /// This process's counts not yet in the files.
    detail::Counters pending_total();
    /// Try once more to write what count() kept.
    void flush_pending();

    /// Publish a file named by its key (creating directories on demand). 0 or an errno.
    int publish(const std::filesystem::path& target, std::string_view bytes);

    /// Publish an encoded entry, count it, and clean its shard when over its share. 0 or an errno.
    int put(const Key& key, std::string_view bytes);
    /// Publish a source beside its entry and count its bytes. 0 or an errno.
    int put_source(const Key& key, std::string_view source);

    /// A damaged entry (or one the driver rejected): remove it, count it, warn once per process.
    void damaged(const Key& key, const std::string& reason, bool count_miss);

    /// After a store brought a shard to @p totals: clean it if it is over its share of max_size.
    void clean_if_over(int shard, const detail::Counters& totals, const Key& keep);

    /// Remove, over @p shards together, entries modified before @p older_than_ns and then the
    /// least recently used until they hold at most @p max_bytes (never @p keep), plus stale
    /// temporaries; recount the shards' counters. Shards that stay locked are skipped.
    PruneResult evict(const std::vector<int>& shards, std::uint64_t max_bytes,
                      std::optional<std::int64_t> older_than_ns, const Key* keep,
                      detail::LockWait wait, std::int64_t stale_before_ns);

    void warn_write(const std::string& what, int error);
    void warn_read(const std::string& what, int error);

  private:
    std::atomic<bool> m_warned_write{false};
    std::atomic<bool> m_warned_read{false};
    std::mutex m_pending_mutex;
    std::array<detail::Counters, detail::kShardCount> m_pending{};
};

namespace detail {
/// Log a warning through kiln::logger(); never throws (a logging failure is dropped).
void warn(const std::string& message) noexcept;
/// Ignore SIGXFSZ if it still has its default action (which kills the process), so a file-size
/// limit turns into EFBIG and a cache miss. Done once per process, before the first write.
void ignore_sigxfsz_once();
} // namespace detail

} // namespace kiln::cache
