#include "kiln/cache/store.hpp"

#include "fs.hpp"
#include "layout.hpp"
#include "shard.hpp"
#include "store_impl.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

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

std::optional<Entry> Store::load(const Key& key) {
    if (m_impl->config.disabled) return std::nullopt;
    const int shard = detail::shard_of(key);
    try {
        const auto path = detail::entry_path(m_impl->config.dir, key);
        // O_NOFOLLOW: an entry is a regular file; a link planted in its place is damage.
        detail::UniqueFd fd = detail::open_file(path, detail::kReadFlags);
        if (!fd) {
            const int error = errno;
            if (error == ELOOP) {
                m_impl->damaged(key, "a symbolic link, not an entry", true);
                return std::nullopt;
            }
            if (error != ENOENT) m_impl->warn_read(path.string(), error);
            m_impl->count(shard, one(&detail::Counters::misses));
            return std::nullopt;
        }
        std::string bytes;
        if (int error = detail::read_all(fd.get(), detail::kMaxEntryFileSize, bytes)) {
            if (error == EFBIG || error == EINVAL) {
                m_impl->damaged(key, "not a regular file of a sane size", true);
            } else {
                m_impl->warn_read(path.string(), error);
                m_impl->count(shard, one(&detail::Counters::misses));
            }
            return std::nullopt;
        }
        DecodeResult decoded = decode_entry(bytes, key);
        if (!decoded.entry) {
            m_impl->damaged(key, to_string(decoded.error), true);
            return std::nullopt;
        }
        // The hit makes the entry the most recently used: eviction goes by modification time.
        if (!m_impl->config.readonly) ::futimens(fd.get(), nullptr);
        m_impl->count(shard, one(&detail::Counters::hits));
        return std::move(decoded.entry);
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache lookup failed: ") + e.what());
        return std::nullopt;
    }
}

bool Store::store(const Entry& entry) {
    if (m_impl->config.disabled || m_impl->config.readonly) return false;
    try {
        if (int error = m_impl->put(entry.key, encode_entry(entry))) {
            m_impl->warn_write(detail::entry_path(m_impl->config.dir, entry.key).string(), error);
            return false;
        }
        return true;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache store failed: ") + e.what());
        return false;
    }
}

void Store::invalidate(const Key& key) {
    if (m_impl->config.disabled) return;
    try {
        m_impl->damaged(key, "the CUDA driver rejected its payload", false);
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache invalidation failed: ") + e.what());
    }
}

std::filesystem::path Store::source_path(const Key& key) const {
    return detail::source_file(m_impl->config.dir, key);
}

std::optional<std::filesystem::path> Store::save_source(const Key& key, std::string_view source) {
    if (m_impl->config.disabled) return std::nullopt;
    try {
        auto path = source_path(key);
        struct stat st;
        // The key covers the source, so a source already there is the right one.
        if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return path;
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

std::filesystem::path Store::trace_path(const Key& key) const {
    return detail::trace_file(m_impl->config.dir, key);
}

std::optional<std::filesystem::path> Store::save_time_trace(const Key& key,
                                                            std::string_view json) {
    if (m_impl->config.disabled || m_impl->config.readonly) return std::nullopt;
    try {
        auto path = trace_path(key);
        struct stat before;
        const bool replaces = ::lstat(path.c_str(), &before) == 0 && S_ISREG(before.st_mode);
        if (int error = m_impl->publish(path, json)) {
            m_impl->warn_write(path.string(), error);
            return std::nullopt;
        }
        detail::Counters delta;
        delta.bytes = static_cast<std::int64_t>(json.size()) - (replaces ? before.st_size : 0);
        m_impl->count(detail::shard_of(key), delta);
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
        const auto dir = m_impl->shard_dir(shard);
        counters += detail::read_counters(dir);
        detail::ShardContents contents;
        if (detail::scan_shard(dir, 0, contents) != 0) continue;
        stats.entries += contents.entries();
        stats.bytes += contents.bytes();
    }
    stats.hits = counters.hits;
    stats.misses = counters.misses;
    stats.damaged = counters.damaged;
    stats.evicted = counters.evicted;
    stats.stores = counters.stores;
    return stats;
}

Store& Store::global() {
    static Store instance(Config::from_environment());
    return instance;
}

} // namespace kiln::cache
