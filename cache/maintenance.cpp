#include "kiln/cache/store.hpp"

#include "fs.hpp"
#include "layout.hpp"
#include "shard.hpp"
#include "stats_file.hpp"
#include "store_impl.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>

namespace kiln::cache {

namespace {

std::vector<int> all_shards() {
    std::vector<int> shards(detail::kShardCount);
    std::iota(shards.begin(), shards.end(), 0);
    return shards;
}

// The header and metadata of the entry at @p path, verified; nullopt when unreadable or damaged.
std::optional<EntryInfo> read_info(const std::filesystem::path& path, const Key& key) {
    detail::UniqueFd fd = detail::open_file(path, detail::kReadFlags);
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    const auto file_size = static_cast<std::uint64_t>(st.st_size);
    std::string head;
    if (file_size < kEntryHeaderSize || detail::read_at(fd.get(), 0, kEntryHeaderSize, head) != 0)
        return std::nullopt;
    const std::uint64_t head_size = entry_head_size(head);
    if (head_size == 0 || head_size > file_size ||
        detail::read_at(fd.get(), 0, static_cast<std::size_t>(head_size), head) != 0)
        return std::nullopt;
    DecodeResult decoded = decode_entry_head(head, file_size, key);
    if (!decoded.entry) return std::nullopt;
    EntryInfo info;
    info.key = key;
    info.size = file_size;
    info.mtime = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    info.arch = decoded.entry->arch;
    info.nvrtc_version = decoded.entry->nvrtc_version;
    info.kernel_count = decoded.entry->lowered_names.size();
    info.payload_size = decoded.payload_size;
    return info;
}

// Why the entry file at @p path is not a good entry for @p key, or "" when it is.
std::string check_entry(const std::filesystem::path& path, const Key& key, int shard) {
    if (detail::shard_of(key) != shard) return "in the wrong shard directory";
    detail::UniqueFd fd = detail::open_file(path, detail::kReadFlags);
    if (!fd) {
        if (errno == ENOENT) return {}; // evicted meanwhile
        return errno == ELOOP ? "a symbolic link, not an entry" : std::strerror(errno);
    }
    std::string bytes;
    if (int error = detail::read_all(fd.get(), detail::kMaxEntryFileSize, bytes))
        return error == EFBIG || error == EINVAL ? "not a regular file of a sane size"
                                                 : std::strerror(error);
    DecodeResult decoded = decode_entry(bytes, key);
    return decoded.entry ? std::string() : to_string(decoded.error);
}

} // namespace

std::vector<EntryInfo> Store::list() {
    std::vector<EntryInfo> infos;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        const auto dir = m_impl->shard_dir(shard);
        detail::ShardContents contents;
        if (detail::scan_shard(dir, 0, contents) != 0) continue;
        for (const auto& item : contents.items) {
            if (!item.has_entry) continue;
            auto info =
                read_info(dir / (item.key.hex() + std::string(detail::kEntrySuffix)), item.key);
            if (!info) continue;
            info->size = item.size();
            info->has_source = item.has_source;
            infos.push_back(std::move(*info));
        }
    }
    return infos;
}

VerifyResult Store::verify(bool fix) {
    VerifyResult result;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        const auto dir = m_impl->shard_dir(shard);
        detail::ShardContents contents;
        if (detail::scan_shard(dir, 0, contents) != 0) continue;
        for (const auto& item : contents.items) {
            if (!item.has_entry) continue;
            ++result.checked;
            const auto path = dir / (item.key.hex() + std::string(detail::kEntrySuffix));
            std::string problem = check_entry(path, item.key, shard);
            if (problem.empty()) {
                ++result.ok;
                continue;
            }
            ++result.damaged;
            if (fix && ::unlink(path.c_str()) == 0) {
                ++result.removed;
                detail::Counters delta;
                delta.damaged = 1;
                delta.files = -1;
                delta.bytes = -static_cast<std::int64_t>(item.entry_size);
                m_impl->count(shard, delta);
            }
            result.problems.emplace_back(path, std::move(problem));
        }
    }
    return result;
}

PruneResult Store::prune(std::uint64_t max_size, std::optional<std::chrono::seconds> max_age) {
    const std::int64_t now = detail::now_ns();
    std::optional<std::int64_t> older_than;
    if (max_age) older_than = now - std::chrono::nanoseconds(*max_age).count();
    return m_impl->evict(all_shards(), max_size, older_than, nullptr, detail::LockWait::patient,
                         now - detail::kStaleTempAgeNs);
}

PruneResult Store::clear() {
    // Everything goes, temporaries of live writers too: their rename then fails (a miss).
    const std::int64_t future = std::numeric_limits<std::int64_t>::max();
    return m_impl->evict(all_shards(), 0, future, nullptr, detail::LockWait::patient, future);
}

bool Store::zero_stats() {
    bool all = true;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto stats = detail::LockedStats::open(m_impl->shard_dir(shard), false, m_impl->file_mode,
                                               m_impl->config.shared, detail::LockWait::patient);
        if (!stats) {
            all = all && errno == ENOENT; // a shard without counters has nothing to reset
            continue;
        }
        // Only the cumulative counters: the entry and byte estimate drives eviction.
        const detail::Counters old = stats->read();
        detail::Counters zeroed;
        zeroed.files = old.files;
        zeroed.bytes = old.bytes;
        all = stats->write(zeroed) == 0 && all;
    }
    return all;
}

std::vector<DirProblem> Store::check_dir() {
    std::vector<DirProblem> problems;
    const auto& root = m_impl->config.dir;
    struct stat st;
    if (::stat(root.c_str(), &st) != 0) {
        problems.push_back({root, std::strerror(errno), true});
        return problems;
    }
    if (!S_ISDIR(st.st_mode)) {
        problems.push_back({root, "not a directory", true});
        return problems;
    }
    if (::access(root.c_str(), R_OK | X_OK) != 0) {
        problems.push_back({root, std::strerror(errno), true});
        return problems;
    }
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        const auto dir = m_impl->shard_dir(shard);
        if (::lstat(dir.c_str(), &st) != 0) continue;
        if (S_ISLNK(st.st_mode))
            problems.push_back({dir, "a symbolic link, not a shard directory"});
        else if (!S_ISDIR(st.st_mode))
            problems.push_back({dir, "not a directory"});
        else if (::access(dir.c_str(), R_OK | X_OK) != 0)
            problems.push_back({dir, std::string("unreadable: ") + std::strerror(errno)});
    }
    return problems;
}

std::optional<Entry> Store::peek(const Key& key, std::string* why) {
    const auto path = detail::entry_path(m_impl->config.dir, key);
    auto fail = [&](std::string reason) -> std::optional<Entry> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    detail::UniqueFd fd = detail::open_file(path, detail::kReadFlags);
    if (!fd) return fail(errno == ENOENT ? "no such entry" : std::strerror(errno));
    std::string bytes;
    if (int error = detail::read_all(fd.get(), detail::kMaxEntryFileSize, bytes))
        return fail(std::strerror(error));
    DecodeResult decoded = decode_entry(bytes, key);
    if (!decoded.entry) return fail(std::string("damaged: ") + to_string(decoded.error));
    return std::move(decoded.entry);
}

std::optional<std::string> Store::read_source(const Key& key) {
    detail::UniqueFd fd = detail::open_file(source_path(key), detail::kReadFlags);
    std::string text;
    if (!fd || detail::read_all(fd.get(), detail::kMaxEntryFileSize, text) != 0)
        return std::nullopt;
    return text;
}

} // namespace kiln::cache
