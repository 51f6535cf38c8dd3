#include "kiln/cache/store.hpp"

#include "fs.hpp"
#include "layout.hpp"
#include "read_scratch.hpp"
#include "remote_stats_file.hpp"
#include "shard.hpp"
#include "store_impl.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <ctime>

namespace kiln::cache {

namespace {

detail::Counters one(std::uint64_t detail::Counters::*member) {
    detail::Counters delta;
    delta.*member = 1;
    return delta;
}

} // namespace

Store::Store(Config config)
    : m_impl(std::make_unique<Impl>(std::move(config))) {}

Store::~Store() = default;

const Config& Store::config() const noexcept {
    return m_impl->config;
}

std::optional<Entry> Store::load(const Key& key, EntryParts parts) {
    if (m_impl->config.disabled) return std::nullopt;
    if (m_impl->local())
        if (auto entry = m_impl->load_local(key, parts, Impl::Lookup::counted)) return entry;
    if (!m_impl->remote) return std::nullopt;
    try {
        std::string bytes;
        auto entry = m_impl->remote->load(key, &bytes);
        // A remote hit is kept locally, so the next process on this machine finds it on disk;
        // written by the tier's thread, so the caller does not wait for the disk.
        if (entry && m_impl->local() && !m_impl->config.readonly) {
            Impl* impl = m_impl.get();
            m_impl->remote->defer([impl, key, bytes = std::move(bytes)] {
                if (int error = impl->put(key, bytes))
                    impl->warn_write(detail::entry_path(impl->config.dir, key).string(), error);
            });
        }
        return entry;
    } catch (const std::exception& e) {
        detail::warn(std::string("remote kernel cache lookup failed: ") + e.what());
        return std::nullopt;
    }
}

std::optional<Entry> Store::Impl::load_local(const Key& key, EntryParts parts, Lookup lookup) {
    const bool counted = lookup == Lookup::counted;
    if (counted && parts == EntryParts::for_loading)
        if (auto entry = ahead.take_entry(key)) {
            count_read_ahead_hit({detail::AheadKind::entry, key});
            return entry;
        }
    try {
        // Creating the shard lets the miss be counted: whatever comes first makes the directory.
        // With a remote tier the caller next asks Redis and should not wait for directories
        // made first: the miss is kept in memory and counted with the write-back's store.
        auto ref = open_shard(detail::shard_of(key), counted && !remote);
        if (!ref) {
            if (counted) count_later(ref, one(&detail::Counters::misses));
            return std::nullopt;
        }
        const std::string name = key.hex() + std::string(detail::kEntrySuffix);
        // O_NOFOLLOW: an entry is a regular file; a link planted in its place is damage.
        detail::UniqueFd fd = detail::open_at(ref.get(), name, detail::kReadFlags);
        if (!fd) {
            const int error = errno;
            if (!counted) return std::nullopt; // a read ahead leaves what it finds to the lookup
            if (error == ELOOP) {
                damaged(ref, key, "a symbolic link, not an entry", true);
                return std::nullopt;
            }
            if (error != ENOENT) warn_read((shard_dir(ref.shard) / name).string(), error);
            count_later(ref, one(&detail::Counters::misses));
            return std::nullopt;
        }
        // Into the process's read buffer when it is free and the file fits (read_scratch.hpp:
        // only the payload then lands in fresh memory), else into a buffer of the file's own.
        struct stat st {};
        DecodeResult decoded;
        const int error = detail::read_for_lookup(
            fd.get(), detail::kMaxEntryFileSize, &st,
            [&](std::string_view bytes) { decoded = decode_entry(bytes, key, parts); },
            [&](std::string&& bytes) {
                decoded = decode_entry_in_place(std::move(bytes), key, parts);
            });
        if (!counted && (error != 0 || !decoded.entry)) return std::nullopt;
        if (error != 0) {
            if (error == EFBIG || error == EINVAL || error == EISDIR) {
                damaged(ref, key, "not a regular file of a sane size", true);
            } else {
                warn_read((shard_dir(ref.shard) / name).string(), error);
                count_later(ref, one(&detail::Counters::misses));
            }
            return std::nullopt;
        }
        if (!decoded.entry) {
            damaged(ref, key, to_string(decoded.error), true);
            return std::nullopt;
        }
        // The hit makes the entry the most recently used: eviction goes by modification time.
        // Once a minute is enough for that, and spares a hot entry an inode write (a journal
        // transaction) on every process's first call. A read ahead counts as a use.
        if (!config.readonly && !detail::touched_lately(st)) ::futimens(fd.get(), nullptr);
        if (counted) {
            count_later(ref, one(&detail::Counters::hits));
            ahead.note_used({detail::AheadKind::entry, key});
        }
        return std::move(decoded.entry);
    } catch (const std::exception& e) {
        if (counted) detail::warn(std::string("kernel cache lookup failed: ") + e.what());
        return std::nullopt;
    }
}

bool Store::store(const Entry& entry) {
    if (m_impl->config.disabled) return false;
    const bool local = m_impl->local() && !m_impl->config.readonly;
    const bool remote = m_impl->remote && m_impl->remote->config().mode != RemoteMode::read_only;
    if (!local && !remote) return false;
    try {
        std::string bytes = encode_entry(entry);
        bool stored = true;
        if (local) {
            m_impl->ahead.note_used({detail::AheadKind::entry, entry.key});
            if (int error = m_impl->put(entry.key, bytes)) {
                m_impl->warn_write(detail::entry_path(m_impl->config.dir, entry.key).string(),
                                   error);
                stored = false;
            }
        }
        if (remote) m_impl->remote->publish(entry.key, std::move(bytes));
        return stored;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache store failed: ") + e.what());
        return false;
    }
}

bool Store::flush_remote(std::chrono::milliseconds timeout) {
    if (!m_impl->remote) return true;
    try {
        const bool done = m_impl->remote->flush(detail::Clock::now() + timeout);
        m_impl->save_remote_stats();
        return done;
    } catch (const std::exception& e) {
        detail::warn(std::string("remote kernel cache flush failed: ") + e.what());
        return false;
    }
}

RemoteStats Store::remote_stats() {
    RemoteStats stats = m_impl->remote_unsaved();
    try {
        if (auto root = m_impl->root(false)) stats += detail::read_remote_stats(root->get());
    } catch (const std::exception&) {
        // Counters are for display: what could not be read is left out.
    }
    return stats;
}

void Store::invalidate(const Key& key) {
    if (m_impl->config.disabled) return;
    if (m_impl->remote) m_impl->remote->mark_damaged(key);
    if (!m_impl->local()) return;
    try {
        auto ref = m_impl->open_shard(detail::shard_of(key), false);
        m_impl->damaged(ref, key, "the CUDA driver rejected its payload", false);
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache invalidation failed: ") + e.what());
    }
}

std::filesystem::path Store::source_path(const Key& key) const {
    return detail::source_file(m_impl->config.dir, key);
}

std::filesystem::path Store::trace_path(const Key& key) const {
    return detail::trace_file(m_impl->config.dir, key);
}

std::optional<std::filesystem::path> Store::save_source(const Key& key, std::string_view source) {
    if (!m_impl->local()) return std::nullopt;
    try {
        auto path = source_path(key);
        // The key covers the source, so a source already there is the right one.
        auto ref = m_impl->open_shard(detail::shard_of(key), !m_impl->config.readonly);
        struct stat st;
        if (ref && ::fstatat(ref.get(), path.filename().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            return path;
        if (m_impl->config.readonly) return std::nullopt;
        if (int error = m_impl->put_source(key, source)) {
            m_impl->warn_write(path.string(), error);
            return std::nullopt;
        }
        return path;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache could not save a source: ") + e.what());
        return std::nullopt;
    }
}

std::optional<std::filesystem::path> Store::save_time_trace(const Key& key, std::string_view json) {
    if (!m_impl->local() || m_impl->config.readonly) return std::nullopt;
    try {
        auto path = trace_path(key);
        if (int error = m_impl->put_file(key, detail::kTraceSuffix, json, false)) {
            m_impl->warn_write(path.string(), error);
            return std::nullopt;
        }
        return path;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache could not save a time trace: ") + e.what());
        return std::nullopt;
    }
}

Stats Store::stats() {
    detail::Counters counters = m_impl->pending_total();
    Stats stats;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_impl->open_shard(shard, false);
        if (!ref) continue;
        counters += detail::read_counters(ref.get(), std::string(detail::kStatsName));
        detail::ShardContents contents;
        if (detail::scan_shard(ref.get(), 0, contents) != 0) continue;
        stats.entries += contents.entries();
        stats.memos += contents.memos();
        stats.bytes += contents.bytes();
    }
    stats.hits = counters.hits;
    stats.misses = counters.misses;
    stats.damaged = counters.damaged;
    stats.evicted = counters.evicted;
    stats.stores = counters.stores;
    return stats;
}

void Store::write_statistics() noexcept {
    try {
        m_impl->flush_pending();
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache statistics were not written: ") + e.what());
    }
}

Store& Store::global() {
    static Store instance(Config::from_environment());
    return instance;
}

} // namespace kiln::cache
