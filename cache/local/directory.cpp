// The Directory (directory.hpp): what was Store's private state for the files, now on its own so
// that the lookups, the maintenance and the archive share one open directory without sharing the
// remote tier or the read-ahead. Counting and eviction are here together because each needs the
// other: a fresh usage file is recounted by an eviction pass, and an eviction counts what it
// removed.

#include "directory.hpp"

#include "warn.hpp"

#include "atomic_file.hpp"
#include "eviction.hpp"
#include "shard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

namespace kiln::cache::detail {

namespace {

// The usage estimate: entries and bytes only.
Counters usage_part(const Counters& counters) {
    Counters usage;
    usage.files = counters.files;
    usage.bytes = counters.bytes;
    return usage;
}

Counters event_part(Counters counters) {
    counters.files = 0;
    counters.bytes = 0;
    return counters;
}

} // namespace

Directory::Directory(Config config)
    : m_config(std::move(config))
    , m_modes(modes_for(m_config.shared)) {}

Directory::~Directory() {
    try {
        flush_pending();
    } catch (...) {
        // counts that cannot be written are lost with the process, as a killed one's are
    }
}

bool Directory::in_use() const noexcept {
    return !m_config.disabled &&
           !(m_config.remote && m_config.remote->mode == RemoteMode::remote_only);
}

std::shared_ptr<const UniqueFd> Directory::root(bool create) {
    std::lock_guard<std::mutex> lock(m_root_mutex);
    if (!m_root_refused.empty()) return nullptr;
    if (m_root) {
        // A cache directory removed while this process runs: open the one now at its path.
        struct stat st;
        if (::fstat(m_root->get(), &st) == 0 && st.st_nlink > 0) return m_root;
        m_root.reset();
    }
    auto opened = open_root(m_config.dir, m_modes, create && !m_config.readonly);
    if (opened.fd) {
        m_root = std::make_shared<const UniqueFd>(std::move(opened.fd));
        return m_root;
    }
    if (!opened.distrust.empty()) {
        m_root_refused = opened.distrust;
        // Neither read nor written: a cubin planted there is as dangerous as a clobbered file.
        warn("the kernel cache directory " + m_config.dir.string() +
             " is not used: " + opened.distrust +
             ". Kernels are compiled and kept in memory only. Fix its owner or "
             "permissions, or set KILN_CACHE_DIR to a directory of your own.");
    } else if (opened.error != ENOENT) {
        if (create && !m_config.readonly)
            warn_write(m_config.dir.string(), opened.error);
        else
            warn_read(m_config.dir.string(), opened.error);
    }
    return nullptr;
}

ShardRef Directory::open_shard(int shard, bool create) {
    ShardRef ref;
    ref.shard = shard;
    ref.root = root(create);
    if (!ref.root) {
        ref.error = ENOENT;
        return ref;
    }
    create = create && !m_config.readonly;
    auto opened = detail::open_shard(ref.root->get(), shard, m_modes, create);
    ref.fd = std::move(opened.fd);
    ref.error = opened.error;
    if (!opened.problem.empty() && !m_warned_shard.exchange(true)) {
        const std::string action =
            opened.removed
                ? std::string("it was removed") + (ref.fd ? " and the shard made anew" : "")
            : m_config.readonly
                ? "it was left in place (the cache is read-only) and the shard is not used"
                : "the shard is not used";
        warn("kernel cache " + shard_dir(shard).string() + ": " + opened.problem + "; " + action +
             ". Further problems with shard directories are not reported; "
             "`kiln cache verify` lists them.");
    }
    return ref;
}

std::optional<Counters> Directory::count(ShardRef& ref, const Counters& delta, LockWait wait) {
    return write_counts(ref, delta, wait, false).totals;
}

Directory::Written Directory::write_counts(ShardRef& ref, const Counters& delta, LockWait wait,
                                           bool spill) {
    Counters merged;
    {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        merged = m_pending[ref.shard];
        merged += delta;
        m_pending[ref.shard] = {};
    }
    // A read-only cache is never written, counters included; they stay in this process.
    Counters left = merged;
    Written written;
    if (!m_config.readonly && ref) {
        left = {};
        // What another process keeps locked is kept for the next update or, with @p spill (the
        // last chance), left beside the file for the next holder of its lock.
        const auto spilled = [&](int dir_fd, std::string_view name, const Counters& part,
                                 const std::filesystem::path& path) {
            written.locked = true;
            if (!spill) return false;
            const int error = write_spill(dir_fd, std::string(name), format_counter_delta(part),
                                          m_modes.file, m_modes.shared);
            if (error != 0) warn_counts_lost(path.string(), error);
            return error == 0;
        };
        const Counters events = event_part(merged);
        if (!events.empty() && !add_counters(ref.get(), std::string(kStatsName), events,
                                             m_modes.file, m_modes.shared, wait))
            if (errno != EWOULDBLOCK ||
                !spilled(ref.get(), kStatsName, events, shard_dir(ref.shard) / kStatsName))
                left += events;
        const Counters usage = usage_part(merged);
        bool fresh = false;
        if (!usage.empty()) {
            bool locked = false;
            {
                auto file = LockedStats::open(ref.root->get(), std::string(kUsageName), true,
                                              m_modes.file, m_modes.shared, wait);
                locked = !file && errno == EWOULDBLOCK;
                if (file) {
                    fresh = file->fresh();
                    Counters sum = file->read();
                    sum += usage;
                    if (file->write(sum) == 0) written.totals = sum;
                }
            }
            if (!written.totals &&
                !(locked && spilled(ref.root->get(), kUsageName, usage, m_config.dir / kUsageName)))
                left += usage;
        }
        // A cache with no estimate yet (one made by an older Kiln, or whose usage file was
        // removed) is recounted now; the caller then cleans it if it is over the limit.
        if (fresh) {
            evict(UINT64_MAX, std::nullopt, nullptr, wait, now_ns() - kStaleTempAgeNs, true);
            written.totals =
                read_counters(ref.root->get(), std::string(kUsageName), m_modes.shared);
        }
    }
    if (!left.empty()) {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        m_pending[ref.shard] += left;
    }
    return written;
}

void Directory::count_later(ShardRef& ref, const Counters& delta) {
    {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        Counters& pending = m_pending[ref.shard];
        pending += delta;
        if (pending.hits + pending.misses < kDeferredEvents) return;
    }
    count(ref, {});
}

std::optional<Counters> Directory::count(int shard, const Counters& delta, LockWait wait) {
    auto ref = open_shard(shard, true);
    return count(ref, delta, wait);
}

Counters Directory::pending_total() {
    std::lock_guard<std::mutex> lock(m_pending_mutex);
    Counters total;
    for (const auto& counters : m_pending)
        total += counters;
    return total;
}

void Directory::flush_pending() {
    if (m_config.readonly || m_config.disabled) return;
    LockWait wait = LockWait::brief;
    for (int shard = 0; shard < kShardCount; ++shard) {
        bool empty;
        {
            std::lock_guard<std::mutex> lock(m_pending_mutex);
            empty = m_pending[shard].empty();
        }
        // Last chance for these counts (often at exit). Nothing is created for them: counts for a
        // cache directory removed meanwhile are dropped.
        if (empty) continue;
        auto ref = open_shard(shard, false);
        // An exit must not wait on a lock another process holds for long (a member of a shared
        // cache can hold it for good): a few milliseconds for the first locked file, no wait
        // after it, and what stays locked is left beside its file for the next holder.
        if (write_counts(ref, {}, wait, true).locked) wait = LockWait::none;
    }
}

int Directory::put_file(const Key& key, std::string_view suffix, std::string_view bytes,
                        bool is_entry) {
    ignore_sigxfsz_once();
    auto ref = open_shard(shard_of(key), true);
    if (!ref) return ref.error;
    const std::string name = key.hex() + std::string(suffix);
    struct stat before;
    bool replaces = ::fstatat(ref.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0;
    // rename() cannot replace a directory: one in the file's place is damage, removed first.
    if (replaces && S_ISDIR(before.st_mode)) {
        if (int error = remove_at(ref.get(), name)) return error;
        replaces = false;
    }
    if (int error = write_atomically(ref.get(), name, bytes, m_modes.file, m_modes.shared))
        return error;
    Counters delta;
    delta.stores = is_entry ? 1 : 0;
    delta.files = is_entry && !replaces ? 1 : 0;
    delta.bytes = static_cast<std::int64_t>(bytes.size()) - (replaces ? before.st_size : 0);
    auto totals = count(ref, delta);
    // The cache as a whole keeps to its limit: past it, one clean-up brings it down to 90%,
    // which leaves room for the next stores before another is due (amortized).
    if (totals && m_config.max_size != 0 &&
        totals->bytes > static_cast<std::int64_t>(m_config.max_size))
        evict(m_config.max_size / 10 * 9, std::nullopt, &key, LockWait::brief,
              now_ns() - kStaleTempAgeNs, true);
    return 0;
}

int Directory::put(const Key& key, std::string_view bytes) {
    return put_file(key, kEntrySuffix, bytes, true);
}

int Directory::put_source(const Key& key, std::string_view source) {
    return put_file(key, kSourceSuffix, source, false);
}

void Directory::damaged(ShardRef& ref, const Key& key, const std::string& reason, bool count_miss) {
    static std::atomic<bool> warned{false};
    const std::string name = key.hex() + std::string(kEntrySuffix);
    Counters delta;
    delta.damaged = 1;
    delta.misses = count_miss ? 1 : 0;
    int error = ENOENT;
    if (!m_config.readonly && ref) {
        struct stat st;
        if (::fstatat(ref.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            error = remove_at(ref.get(), name);
            if (error == 0 && !S_ISDIR(st.st_mode)) {
                delta.files = -1;
                delta.bytes = -static_cast<std::int64_t>(st.st_size);
            }
        }
    }
    if (!warned.exchange(true)) {
        std::string done;
        if (m_config.readonly)
            done = "it was left in place, since the cache is read-only (KILN_CACHE_READONLY=1), "
                   "and the kernel is compiled instead. Further damaged entries are not reported.";
        else if (error == 0)
            done = "it was removed and will be compiled again. Further damaged entries are not "
                   "reported; `kiln cache stats` counts them.";
        else
            done = std::string("it could not be removed (") + std::strerror(error) +
                   "), so the kernel is compiled instead. Further damaged entries are not "
                   "reported; `kiln cache verify` lists them.";
        warn("cache entry " + (shard_dir(ref.shard) / name).string() + " is damaged (" + reason +
             "): " + done);
    }
    count(ref, delta);
}

PruneResult Directory::evict(std::uint64_t max_bytes, std::optional<std::int64_t> older_than_ns,
                             const Key* keep, LockWait wait, std::int64_t stale_before_ns,
                             bool count_evicted) {
    PruneResult result;
    auto root_fd = root(false);
    if (!root_fd) return result;
    // The usage lock makes this the one clean-up running: writers meanwhile keep their counts
    // in memory and add them after, on top of the recount.
    auto usage = LockedStats::open(root_fd->get(), std::string(kUsageName), !m_config.readonly,
                                   m_modes.file, m_modes.shared, wait);
    if (!usage && errno == EWOULDBLOCK && wait != LockWait::patient) return result;
    // Counts left beside the usage file before now are of files the recount below finds (or
    // no longer finds): read, so that the write removes them, and replaced by the recount.
    if (usage) usage->gather_spills();

    // Scanned one shard at a time and reopened only where something goes, so a clean-up holds at
    // most two descriptors whatever the application has open.
    std::vector<ShardContents> contents(kShardCount);
    std::vector<Candidate> candidates;
    std::uint64_t entries = 0, bytes = 0;
    // Only the shards the root lists are opened: a new cache's first store recounts it, and need
    // not try 256 names that are not there. Anything under a shard's name is opened (and
    // checked) as before; when the root cannot be listed, every shard is tried.
    std::vector<bool> listed(kShardCount, true);
    bool remote_spills = false;
    if (std::vector<DirItem> items; list_dir(root_fd->get(), items) == 0) {
        listed.assign(kShardCount, false);
        auto digit = [](char c) { return c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - '0'; };
        for (const auto& item : items) {
            remote_spills = remote_spills || is_spill_name(item.name, kRemoteStatsName);
            if (item.name.size() != 2) continue;
            const int shard = digit(item.name[0]) * 16 + digit(item.name[1]);
            if (shard >= 0 && shard < kShardCount && item.name == shard_name(shard))
                listed[static_cast<std::size_t>(shard)] = true;
        }
    }
    for (int shard = 0; shard < kShardCount; ++shard) {
        if (!listed[shard]) continue;
        auto ref = open_shard(shard, false);
        if (!ref || scan_shard(ref.get(), stale_before_ns, contents[shard]) != 0) continue;
        entries += contents[shard].entries();
        bytes += contents[shard].bytes();
        for (const auto& item : contents[shard].items)
            candidates.push_back({&item, shard});
    }
    const auto victims = choose_victims(std::move(candidates), max_bytes, older_than_ns, keep);
    std::vector<std::vector<const ShardItem*>> by_shard(kShardCount);
    for (const auto& victim : victims)
        by_shard[victim.shard].push_back(victim.item);
    // Counts left beside a counter file and not marked (their process died between the two) are
    // added now, if its lock is free.
    const auto add_spills = [&](int dir_fd, std::string_view name) {
        if (m_config.readonly) return;
        if (auto file = LockedStats::open(dir_fd, std::string(name), true, m_modes.file,
                                          m_modes.shared, LockWait::none)) {
            file->gather_spills();
            file->write_text(file->text());
        }
    };
    if (remote_spills) add_spills(root_fd->get(), kRemoteStatsName);
    for (int shard = 0; shard < kShardCount; ++shard) {
        if (by_shard[shard].empty() && contents[shard].stale_temps.empty() &&
            contents[shard].spills.empty() && contents[shard].claims.empty())
            continue;
        auto ref = open_shard(shard, false);
        if (!ref) continue;
        if (!contents[shard].spills.empty()) add_spills(ref.get(), kStatsName);
        std::uint64_t removed = 0;
        for (const ShardItem* item : by_shard[shard]) {
            // Only what is really gone is counted (a read-only file system removes nothing).
            const RemovedItem gone = remove_item(ref.get(), *item);
            result.bytes += gone.freed;
            bytes -= std::min(bytes, gone.freed);
            if (gone.entry) {
                ++removed;
                --entries;
            }
            if (gone.memo) ++result.memos;
            if (gone.error != 0) {
                ++result.not_removed;
                if (result.error == 0) result.error = gone.error;
            }
        }
        result.entries += removed;
        result.temporaries += remove_stale_temps(ref.get(), contents[shard]);
        if (count_evicted && removed != 0) {
            Counters delta;
            delta.evicted = removed;
            // Kept in memory while another process holds the shard's lock: a clean-up does not
            // wait a second per shard for it.
            count(ref, delta, wait == LockWait::patient ? LockWait::brief : wait);
        }
    }
    // Recount: the estimate heals from drift (killed writers, removals by hand) at each clean-up.
    if (usage) {
        Counters recount = usage->read();
        recount.files = static_cast<std::int64_t>(entries);
        recount.bytes = static_cast<std::int64_t>(bytes);
        usage->write(recount);
    }
    return result;
}

void Directory::warn_write(const std::string& what, int error) {
    if (m_warned_write.exchange(true)) return;
    warn("cannot write to the kernel cache (" + what + ": " + std::strerror(error) +
         "); kernels are compiled and kept in memory only. Check KILN_CACHE_DIR (" +
         m_config.dir.string() +
         "), or set KILN_CACHE_READONLY=1 or KILN_CACHE_DISABLE=1. "
         "Further write failures are not reported.");
}

void Directory::warn_read(const std::string& what, int error) {
    if (m_warned_read.exchange(true)) return;
    warn("cannot read the kernel cache (" + what + ": " + std::strerror(error) +
         "); kernels are compiled instead. Check KILN_CACHE_DIR (" + m_config.dir.string() +
         "). Further read failures are not reported.");
}

} // namespace kiln::cache::detail
