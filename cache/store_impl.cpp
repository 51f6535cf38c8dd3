#include "store_impl.hpp"

#include "kiln/log.hpp"

#include "atomic_file.hpp"
#include "eviction.hpp"
#include "fs.hpp"
#include "shard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

namespace kiln::cache {

namespace detail {

void warn(const std::string& message) noexcept {
    try {
        logger().warn("{}", message);
    } catch (...) {
        // A broken logger (e.g. a bad KILN_LOG_LEVEL) must not turn a cache problem into an error.
    }
}

void ignore_sigxfsz_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current;
        if (::sigaction(SIGXFSZ, nullptr, &current) != 0) return;
        if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) return;
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        ::sigaction(SIGXFSZ, &ignore, nullptr);
    });
}

} // namespace detail

Store::Impl::Impl(Config c)
    : config(std::move(c))
    , dir_mode(config.shared ? 02770 : 0700)
    , file_mode(config.shared ? 0660 : 0600) {}

Store::Impl::~Impl() {
    flush_pending();
}

std::optional<detail::Counters> Store::Impl::count(int shard, const detail::Counters& delta,
                                                   detail::LockWait wait) {
    detail::Counters merged;
    {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        merged = m_pending[shard];
        merged += delta;
        m_pending[shard] = {};
    }
    // A read-only cache is never written, counters included; they stay in this process.
    std::optional<detail::Counters> totals;
    if (!config.readonly) {
        totals = detail::add_counters(shard_dir(shard), merged, file_mode, config.shared, wait);
        // A miss in a shard nothing was stored in yet: make the shard, or the count is lost.
        if (!totals && errno == ENOENT &&
            detail::make_dirs(shard_dir(shard), dir_mode, config.shared) == 0)
            totals = detail::add_counters(shard_dir(shard), merged, file_mode, config.shared, wait);
    }
    if (!totals) {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        m_pending[shard] += merged;
    }
    return totals;
}

detail::Counters Store::Impl::pending_total() {
    std::lock_guard<std::mutex> lock(m_pending_mutex);
    detail::Counters total;
    for (const auto& counters : m_pending)
        total += counters;
    return total;
}

void Store::Impl::flush_pending() {
    if (config.readonly || config.disabled) return;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        bool empty;
        {
            std::lock_guard<std::mutex> lock(m_pending_mutex);
            empty = m_pending[shard].empty();
        }
        // Last chance for these counts (often at exit): worth a longer wait than a hit's.
        if (!empty) count(shard, {}, detail::LockWait::patient);
    }
}

int Store::Impl::publish(const std::filesystem::path& target, std::string_view bytes) {
    detail::ignore_sigxfsz_once();
    int error = detail::write_atomically(target, bytes, file_mode, config.shared);
    if (error == ENOENT) {
        // The first write into this shard (or into a fresh cache): create what is missing.
        error = detail::make_dirs(target.parent_path(), dir_mode, config.shared);
        if (error == 0) error = detail::write_atomically(target, bytes, file_mode, config.shared);
    }
    return error;
}

int Store::Impl::put(const Key& key, std::string_view bytes) {
    const auto path = detail::entry_path(config.dir, key);
    struct stat before;
    const bool replaces = ::lstat(path.c_str(), &before) == 0;
    if (int error = publish(path, bytes)) return error;
    detail::Counters delta;
    delta.stores = 1;
    delta.files = replaces ? 0 : 1;
    delta.bytes = static_cast<std::int64_t>(bytes.size()) - (replaces ? before.st_size : 0);
    const int shard = detail::shard_of(key);
    if (auto totals = count(shard, delta)) clean_if_over(shard, *totals, key);
    return 0;
}

int Store::Impl::put_source(const Key& key, std::string_view source) {
    const auto path = detail::source_file(config.dir, key);
    struct stat before;
    const bool replaces = ::lstat(path.c_str(), &before) == 0;
    if (int error = publish(path, source)) return error;
    detail::Counters delta;
    delta.bytes = static_cast<std::int64_t>(source.size()) - (replaces ? before.st_size : 0);
    count(detail::shard_of(key), delta);
    return 0;
}

void Store::Impl::damaged(const Key& key, const std::string& reason, bool count_miss) {
    static std::atomic<bool> warned{false};
    const auto path = detail::entry_path(config.dir, key);
    if (!warned.exchange(true))
        detail::warn("cache entry " + path.string() + " is damaged (" + reason +
                     "): it was removed and will be compiled again. Further damaged entries are "
                     "not reported; `kiln cache stats` counts them.");
    detail::Counters delta;
    delta.damaged = 1;
    delta.misses = count_miss ? 1 : 0;
    struct stat st;
    if (!config.readonly && ::lstat(path.c_str(), &st) == 0 && ::unlink(path.c_str()) == 0) {
        delta.files = -1;
        delta.bytes = -static_cast<std::int64_t>(st.st_size);
    }
    count(detail::shard_of(key), delta);
}

void Store::Impl::clean_if_over(int shard, const detail::Counters& totals, const Key& keep) {
    if (config.max_size == 0) return;
    // Each shard holds about 1/256 of the entries, so each keeps to 1/256 of the limit; going
    // down to 90% leaves room for the next stores before it cleans again.
    const std::uint64_t share = config.max_size / detail::kShardCount;
    if (totals.bytes <= static_cast<std::int64_t>(share)) return;
    evict({shard}, share / 10 * 9, std::nullopt, &keep, detail::LockWait::brief,
          detail::now_ns() - detail::kStaleTempAgeNs);
}

PruneResult Store::Impl::evict(const std::vector<int>& shards, std::uint64_t max_bytes,
                               std::optional<std::int64_t> older_than_ns, const Key* keep,
                               detail::LockWait wait, std::int64_t stale_before_ns) {
    std::vector<detail::ShardContents> contents(shards.size());
    std::vector<detail::Candidate> candidates;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        if (detail::scan_shard(shard_dir(shards[i]), stale_before_ns, contents[i]) != 0) continue;
        for (const auto& item : contents[i].items)
            candidates.push_back({&item, static_cast<int>(i)});
    }
    const auto victims =
        detail::choose_victims(std::move(candidates), max_bytes, older_than_ns, keep);
    std::vector<std::vector<const detail::ShardItem*>> by_shard(shards.size());
    for (const auto& victim : victims)
        by_shard[victim.shard].push_back(victim.item);

    PruneResult result;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        if (by_shard[i].empty() && contents[i].stale_temps.empty()) continue;
        const auto dir = shard_dir(shards[i]);
        auto stats = detail::LockedStats::open(dir, true, file_mode, config.shared, wait);
        if (!stats) continue; // another process is cleaning this shard
        result.temporaries += detail::remove_stale_temps(dir, contents[i]);
        std::uint64_t removed_entries = 0, freed = 0;
        for (const detail::ShardItem* item : by_shard[i]) {
            freed += detail::remove_item(dir, *item);
            removed_entries += item->has_entry;
        }
        // Recount from the scan: the estimate in the file heals from drift at each clean-up.
        detail::Counters counters = stats->read();
        counters.files = static_cast<std::int64_t>(contents[i].entries() - removed_entries);
        counters.bytes = static_cast<std::int64_t>(contents[i].bytes() - freed);
        counters.evicted += removed_entries;
        stats->write(counters);
        result.entries += removed_entries;
        result.bytes += freed;
    }
    return result;
}

void Store::Impl::warn_write(const std::string& what, int error) {
    if (m_warned_write.exchange(true)) return;
    detail::warn("cannot write to the kernel cache (" + what + ": " + std::strerror(error) +
                 "); kernels are compiled and kept in memory only. Check KILN_CACHE_DIR (" +
                 config.dir.string() +
                 "), or set KILN_CACHE_READONLY=1 or KILN_CACHE_DISABLE=1. "
                 "Further write failures are not reported.");
}

void Store::Impl::warn_read(const std::string& what, int error) {
    if (m_warned_read.exchange(true)) return;
    detail::warn("cannot read the kernel cache (" + what + ": " + std::strerror(error) +
                 "); kernels are compiled instead. Check KILN_CACHE_DIR (" + config.dir.string() +
                 "). Further read failures are not reported.");
}

} // namespace kiln::cache
