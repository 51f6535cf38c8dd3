// LocalStore: the directory's own store, for the tools and for the files the compiler writes
// beside an entry. Its lookups are the façade's (store.cpp, through local_tier.hpp); its
// maintenance is in maintenance.cpp and archive.cpp.

#include "kiln/cache/local_store.hpp"

#include "warn.hpp"

#include "directory.hpp"
#include "layout.hpp"
#include "local_tier.hpp"
#include "shard.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <exception>

namespace kiln::cache {

LocalStore::LocalStore(Config config)
    : m_directory(std::make_unique<detail::Directory>(std::move(config)))
    , m_tier(std::make_unique<detail::LocalTier>(*m_directory)) {}

LocalStore::~LocalStore() = default;

const Config& LocalStore::config() const noexcept {
    return m_directory->config();
}

std::filesystem::path LocalStore::memo_path(const Key& signature) const {
    return detail::memo_file(m_directory->config().dir, signature);
}

std::filesystem::path LocalStore::source_path(const Key& key) const {
    return detail::source_file(m_directory->config().dir, key);
}

std::filesystem::path LocalStore::trace_path(const Key& key) const {
    return detail::trace_file(m_directory->config().dir, key);
}

std::optional<std::filesystem::path> LocalStore::save_source(const Key& key,
                                                             std::string_view source) {
    if (!m_directory->in_use()) return std::nullopt;
    try {
        auto path = source_path(key);
        // The key covers the source, so a source already there is the right one.
        auto ref = m_directory->open_shard(detail::shard_of(key), !m_directory->config().readonly);
        struct stat st;
        if (ref && ::fstatat(ref.get(), path.filename().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            return path;
        if (m_directory->config().readonly) return std::nullopt;
        if (int error = m_directory->put_source(key, source)) {
            m_directory->warn_write(path.string(), error);
            return std::nullopt;
        }
        return path;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache could not save a source: ") + e.what());
        return std::nullopt;
    }
}

std::optional<std::filesystem::path> LocalStore::save_time_trace(const Key& key,
                                                                 std::string_view json) {
    if (!m_directory->in_use() || m_directory->config().readonly) return std::nullopt;
    try {
        auto path = trace_path(key);
        if (int error = m_directory->put_file(key, detail::kTraceSuffix, json, false)) {
            m_directory->warn_write(path.string(), error);
            return std::nullopt;
        }
        return path;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache could not save a time trace: ") + e.what());
        return std::nullopt;
    }
}

Stats LocalStore::stats() {
    detail::Counters counters = m_directory->pending_total();
    Stats stats;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_directory->open_shard(shard, false);
        if (!ref) continue;
        counters += detail::read_counters(ref.get(), std::string(detail::kStatsName),
                                          m_directory->modes().shared);
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
    stats.untrusted = counters.untrusted;
    return stats;
}

void LocalStore::write_statistics() noexcept {
    try {
        m_directory->flush_pending();
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache statistics were not written: ") + e.what());
    }
}

} // namespace kiln::cache
