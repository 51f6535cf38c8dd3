#include "store_impl.hpp"

#include "kiln/log.hpp"

#include "atomic_file.hpp"
#include "eviction.hpp"
#include "remote_stats_file.hpp"
#include "shard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
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

namespace {

// The usage estimate: entries and bytes only.
detail::Counters usage_part(const detail::Counters& counters) {
    detail::Counters usage;
    usage.files = counters.files;
    usage.bytes = counters.bytes;
    return usage;
}

detail::Counters event_part(detail::Counters counters) {
    counters.files = 0;
    counters.bytes = 0;
    return counters;
}

} // namespace

Store::Impl::Impl(Config c)
    : config(std::move(c))
    , modes(detail::modes_for(config.shared)) {
    if (config.remote && !config.disabled)
        remote = std::make_unique<detail::RemoteTier>(*config.remote);
}

Store::Impl::~Impl() {
    save_read_ahead();
    if (remote) {
        remote->shutdown(); // one bounded wait for queued publishes
        save_remote_stats();
    }
    flush_pending();
}

RemoteStats Store::Impl::remote_unsaved() {
    std::lock_guard<std::mutex> lock(m_remote_stats_mutex);
    RemoteStats unsaved = m_remote_unsaved;
    if (remote) unsaved += remote->unsaved();
    return unsaved;
}

void Store::Impl::save_remote_stats() {
    if (!remote) return;
    std::lock_guard<std::mutex> lock(m_remote_stats_mutex);
    m_remote_unsaved += remote->take_unsaved();
    if (!local() || config.readonly) return; // counted in this process only
    if (detail::is_zero(m_remote_unsaved)) return;
    auto root_fd = root(true);
    if (root_fd &&
        detail::add_remote_stats(root_fd->get(), m_remote_unsaved, modes.file, modes.shared))
        m_remote_unsaved = {};
}

std::shared_ptr<const detail::UniqueFd> Store::Impl::root(bool create) {
    std::lock_guard<std::mutex> lock(m_root_mutex);
    if (!m_root_refused.empty()) return nullptr;
    if (m_root) {
        // A cache directory removed while this process runs: open the one now at its path.
        struct stat st;
        if (::fstat(m_root->get(), &st) == 0 && st.st_nlink > 0) return m_root;
        m_root.reset();
    }
    auto opened = detail::open_root(config.dir, modes, create && !config.readonly);
    if (opened.fd) {
        m_root = std::make_shared<const detail::UniqueFd>(std::move(opened.fd));
        return m_root;
    }
    if (!opened.distrust.empty()) {
        m_root_refused = opened.distrust;
        // Neither read nor written: a cubin planted there is as dangerous as a clobbered file.
        detail::warn("the kernel cache directory " + config.dir.string() +
                     " is not used: " + opened.distrust +
                     ". Kernels are compiled and kept in memory only. Fix its owner or "
                     "permissions, or set KILN_CACHE_DIR to a directory of your own.");
    } else if (opened.error != ENOENT) {
        if (create && !config.readonly)
            warn_write(config.dir.string(), opened.error);
        else
            warn_read(config.dir.string(), opened.error);
    }
    return nullptr;
}

detail::ShardRef Store::Impl::open_shard(int shard, bool create) {
    detail::ShardRef ref;
    ref.shard = shard;
    ref.root = root(create);
    if (!ref.root) {
        ref.error = ENOENT;
        return ref;
    }
    create = create && !config.readonly;
    auto opened = detail::open_shard(ref.root->get(), shard, modes, create);
    ref.fd = std::move(opened.fd);
    ref.error = opened.error;
    if (!opened.problem.empty() && !m_warned_shard.exchange(true)) {
        const std::string action =
            opened.removed
                ? std::string("it was removed") + (ref.fd ? " and the shard made anew" : "")
            : config.readonly
                ? "it was left in place (the cache is read-only) and the shard is not used"
                : "the shard is not used";
        detail::warn("kernel cache " + shard_dir(shard).string() + ": " + opened.problem + "; " +
                     action +
                     ". Further problems with shard directories are not reported; "
                     "`kiln cache verify` lists them.");
    }
    return ref;
}

std::optional<detail::Counters>
Store::Impl::count(detail::ShardRef& ref, const detail::Counters& delta, detail::LockWait wait) {
    detail::Counters merged;
    {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        merged = m_pending[ref.shard];
        merged += delta;
        m_pending[ref.shard] = {};
    }
    // A read-only cache is never written, counters included; they stay in this process.
    detail::Counters left = merged;
    std::optional<detail::Counters> totals;
    if (!config.readonly && ref) {
        left = {};
        const detail::Counters events = event_part(merged);
        if (!events.empty() && !detail::add_counters(ref.get(), std::string(detail::kStatsName),
                                                     events, modes.file, modes.shared, wait))
            left += events;
        const detail::Counters usage = usage_part(merged);
        bool fresh = false;
        if (!usage.empty()) {
            auto file = detail::LockedStats::open(ref.root->get(), std::string(detail::kUsageName),
                                                  true, modes.file, modes.shared, wait);
            if (file) {
                fresh = file->fresh();
                detail::Counters sum = file->read();
                sum += usage;
                if (file->write(sum) == 0) totals = sum;
            }
            if (!totals) left += usage;
        }
        // A cache with no estimate yet (one made by an older Kiln, or whose usage file was
        // removed) is recounted now; the caller then cleans it if it is over the limit.
        if (fresh) {
            evict(UINT64_MAX, std::nullopt, nullptr, wait,
                  detail::now_ns() - detail::kStaleTempAgeNs, true);
            totals = detail::read_counters(ref.root->get(), std::string(detail::kUsageName));
        }
    }
    if (!left.empty()) {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        m_pending[ref.shard] += left;
    }
    return totals;
}

void Store::Impl::count_later(detail::ShardRef& ref, const detail::Counters& delta) {
    {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        detail::Counters& pending = m_pending[ref.shard];
        pending += delta;
        if (pending.hits + pending.misses < kDeferredEvents) return;
    }
    count(ref, {});
}

std::optional<detail::Counters> Store::Impl::count(int shard, const detail::Counters& delta,
                                                   detail::LockWait wait) {
    auto ref = open_shard(shard, true);
    return count(ref, delta, wait);
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
        // Last chance for these counts (often at exit): worth a longer wait than a hit's. Nothing
        // is created for them: counts for a cache directory removed meanwhile are dropped.
        if (empty) continue;
        auto ref = open_shard(shard, false);
        count(ref, {}, detail::LockWait::patient);
    }
}

bool detail::touched_lately(const struct stat& st) {
    const std::time_t now = std::time(nullptr);
    const std::time_t modified = st.st_mtim.tv_sec;
    return modified > now - 60 && modified < now + 60;
}

int Store::Impl::put_file(const Key& key, std::string_view suffix, std::string_view bytes,
                          bool is_entry) {
    detail::ignore_sigxfsz_once();
    auto ref = open_shard(detail::shard_of(key), true);
    if (!ref) return ref.error;
    const std::string name = key.hex() + std::string(suffix);
    struct stat before;
    bool replaces = ::fstatat(ref.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0;
    // rename() cannot replace a directory: one in the file's place is damage, removed first.
    if (replaces && S_ISDIR(before.st_mode)) {
        if (int error = detail::remove_at(ref.get(), name)) return error;
        replaces = false;
    }
    if (int error = detail::write_atomically(ref.get(), name, bytes, modes.file, modes.shared))
        return error;
    detail::Counters delta;
    delta.stores = is_entry ? 1 : 0;
    delta.files = is_entry && !replaces ? 1 : 0;
    delta.bytes = static_cast<std::int64_t>(bytes.size()) - (replaces ? before.st_size : 0);
    auto totals = count(ref, delta);
    // The cache as a whole keeps to its limit: past it, one clean-up brings it down to 90%,
    // which leaves room for the next stores before another is due (amortized).
    if (totals && config.max_size != 0 &&
        totals->bytes > static_cast<std::int64_t>(config.max_size))
        evict(config.max_size / 10 * 9, std::nullopt, &key, detail::LockWait::brief,
              detail::now_ns() - detail::kStaleTempAgeNs, true);
    return 0;
}

int Store::Impl::put(const Key& key, std::string_view bytes) {
    return put_file(key, detail::kEntrySuffix, bytes, true);
}

int Store::Impl::put_source(const Key& key, std::string_view source) {
    return put_file(key, detail::kSourceSuffix, source, false);
}

void Store::Impl::damaged(detail::ShardRef& ref, const Key& key, const std::string& reason,
                          bool count_miss) {
    static std::atomic<bool> warned{false};
    const std::string name = key.hex() + std::string(detail::kEntrySuffix);
    detail::Counters delta;
    delta.damaged = 1;
    delta.misses = count_miss ? 1 : 0;
    int error = ENOENT;
    if (!config.readonly && ref) {
        struct stat st;
        if (::fstatat(ref.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            error = detail::remove_at(ref.get(), name);
            if (error == 0 && !S_ISDIR(st.st_mode)) {
                delta.files = -1;
                delta.bytes = -static_cast<std::int64_t>(st.st_size);
            }
        }
    }
    if (!warned.exchange(true)) {
        std::string done;
        if (config.readonly)
            done = "it was left in place, since the cache is read-only (KILN_CACHE_READONLY=1), "
                   "and the kernel is compiled instead. Further damaged entries are not reported.";
        else if (error == 0)
            done = "it was removed and will be compiled again. Further damaged entries are not "
                   "reported; `kiln cache stats` counts them.";
        else
            done = std::string("it could not be removed (") + std::strerror(error) +
                   "), so the kernel is compiled instead. Further damaged entries are not "
                   "reported; `kiln cache verify` lists them.";
        detail::warn("cache entry " + (shard_dir(ref.shard) / name).string() + " is damaged (" +
                     reason + "): " + done);
    }
    count(ref, delta);
}

PruneResult Store::Impl::evict(std::uint64_t max_bytes, std::optional<std::int64_t> older_than_ns,
                               const Key* keep, detail::LockWait wait, std::int64_t stale_before_ns,
                               bool count_evicted) {
    PruneResult result;
    auto root_fd = root(false);
    if (!root_fd) return result;
    // The usage lock makes this the one clean-up running: writers meanwhile keep their counts
    // in memory and add them after, on top of the recount.
    auto usage = detail::LockedStats::open(root_fd->get(), std::string(detail::kUsageName),
                                           !config.readonly, modes.file, modes.shared, wait);
    if (!usage && errno == EWOULDBLOCK && wait == detail::LockWait::brief) return result;

    // Scanned one shard at a time and reopened only where something goes, so a clean-up holds at
    // most two descriptors whatever the application has open.
    std::vector<detail::ShardContents> contents(detail::kShardCount);
    std::vector<detail::Candidate> candidates;
    std::uint64_t entries = 0, bytes = 0;
    // Only the shards the root lists are opened: a new cache's first store recounts it, and need
    // not try 256 names that are not there. Anything under a shard's name is opened (and
    // checked) as before; when the root cannot be listed, every shard is tried.
    std::vector<bool> listed(detail::kShardCount, true);
    if (std::vector<detail::DirItem> items; detail::list_dir(root_fd->get(), items) == 0) {
        listed.assign(detail::kShardCount, false);
        auto digit = [](char c) { return c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - '0'; };
        for (const auto& item : items) {
            if (item.name.size() != 2) continue;
            const int shard = digit(item.name[0]) * 16 + digit(item.name[1]);
            if (shard >= 0 && shard < detail::kShardCount && item.name == detail::shard_name(shard))
                listed[static_cast<std::size_t>(shard)] = true;
        }
    }
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        if (!listed[shard]) continue;
        auto ref = open_shard(shard, false);
        if (!ref || detail::scan_shard(ref.get(), stale_before_ns, contents[shard]) != 0) continue;
        entries += contents[shard].entries();
        bytes += contents[shard].bytes();
        for (const auto& item : contents[shard].items)
            candidates.push_back({&item, shard});
    }
    const auto victims =
        detail::choose_victims(std::move(candidates), max_bytes, older_than_ns, keep);
    std::vector<std::vector<const detail::ShardItem*>> by_shard(detail::kShardCount);
    for (const auto& victim : victims)
        by_shard[victim.shard].push_back(victim.item);
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        if (by_shard[shard].empty() && contents[shard].stale_temps.empty()) continue;
        auto ref = open_shard(shard, false);
        if (!ref) continue;
        std::uint64_t removed = 0;
        for (const detail::ShardItem* item : by_shard[shard]) {
            const std::uint64_t freed = detail::remove_item(ref.get(), *item);
            result.bytes += freed;
            bytes -= std::min(bytes, freed);
            if (item->has_entry) {
                ++removed;
                --entries;
            }
            if (item->has_memo) ++result.memos;
        }
        result.entries += removed;
        result.temporaries += detail::remove_stale_temps(ref.get(), contents[shard]);
        if (count_evicted && removed != 0) {
            detail::Counters delta;
            delta.evicted = removed;
            count(ref, delta, wait);
        }
    }
    // Recount: the estimate heals from drift (killed writers, removals by hand) at each clean-up.
    if (usage) {
        detail::Counters recount = usage->read();
        recount.files = static_cast<std::int64_t>(entries);
        recount.bytes = static_cast<std::int64_t>(bytes);
        usage->write(recount);
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
