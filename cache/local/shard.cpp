#include "shard.hpp"

#include "claim_file.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "stats_file.hpp"

#include <cerrno>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace kiln::cache::detail {

namespace {

// The files a shard holds besides entries, each a regular file counted by its item: a saved
// source and a time trace (named by their entry's key), a memo (named by its signature) and a
// program's read-ahead list (named by the program).
struct Companion {
    std::string_view suffix;
    bool ShardItem::*has;
    std::uint64_t ShardItem::*size;
};
constexpr Companion kCompanions[] = {
    {kSourceSuffix, &ShardItem::has_source, &ShardItem::source_size},
    {kTraceSuffix, &ShardItem::has_trace, &ShardItem::trace_size},
    {kMemoSuffix, &ShardItem::has_memo, &ShardItem::memo_size},
    {kAheadSuffix, &ShardItem::has_ahead, &ShardItem::ahead_size},
};

// What kind of companion file @p name is, with its key in @p key; nullptr for any other name.
const Companion* companion_of(std::string_view name, Key& key) {
    for (const Companion& companion : kCompanions)
        if (auto found = key_from_name(name, companion.suffix)) {
            key = *found;
            return &companion;
        }
    return nullptr;
}

} // namespace

std::uint64_t ShardContents::entries() const {
    std::uint64_t count = 0;
    for (const auto& item : items)
        count += item.has_entry;
    return count;
}

std::uint64_t ShardContents::memos() const {
    std::uint64_t count = 0;
    for (const auto& item : items)
        count += item.has_memo;
    return count;
}

std::uint64_t ShardContents::bytes() const {
    std::uint64_t total = 0;
    for (const auto& item : items)
        total += item.size();
    return total;
}

int scan_shard(int shard_fd, std::int64_t stale_before_ns, ShardContents& out) {
    std::vector<DirItem> files;
    if (int error = list_dir(shard_fd, files)) return error;
    std::unordered_map<Key, std::size_t, KeyHash> index;
    auto item_for = [&](const Key& key) -> ShardItem& {
        auto [it, inserted] = index.emplace(key, out.items.size());
        if (inserted) out.items.push_back(ShardItem{key});
        return out.items[it->second];
    };
    for (const DirItem& file : files) {
        // Not only regular files: a link or FIFO planted under an entry's name is damage that
        // verify must report and eviction must be able to remove.
        if (auto key = key_from_name(file.name, kEntrySuffix)) {
            ShardItem& item = item_for(*key);
            item.has_entry = true;
            item.entry_is_dir = file.is_dir;
            item.entry_size = file.size;
            item.mtime_ns = file.mtime_ns;
        } else if (is_spill_name(file.name, kStatsName)) {
            out.spills.push_back(file.name); // a directory there too: it is not to be trusted
        } else if (is_claim_name(file.name)) {
            out.claims.push_back(file.name); // whatever it is: maintenance checks it
        } else if (file.is_dir) {
            continue; // only an entry's name is checked for a directory in its place
        } else if (Key named; const Companion* companion = companion_of(file.name, named)) {
            ShardItem& item = item_for(named);
            item.*companion->has = true;
            item.*companion->size = file.size;
            if (!item.has_entry) item.mtime_ns = std::max(item.mtime_ns, file.mtime_ns);
        } else if (is_temp_name(file.name) && file.mtime_ns < stale_before_ns) {
            out.stale_temps.push_back(file.name);
        }
    }
    return 0;
}

RemovedItem remove_item(int shard_fd, const ShardItem& item) {
    RemovedItem removed;
    const std::string hex = item.key.hex();
    if (item.has_entry) {
        if (const int error = remove_at(shard_fd, hex + std::string(kEntrySuffix)); error == 0) {
            removed.freed += item.entry_size;
            removed.entry = true;
        } else if (error != ENOENT) {
            removed.error = error;
        }
    }
    for (const Companion& companion : kCompanions) {
        if (!(item.*companion.has)) continue;
        if (::unlinkat(shard_fd, (hex + std::string(companion.suffix)).c_str(), 0) == 0) {
            removed.freed += item.*companion.size;
            if (companion.has == &ShardItem::has_memo) removed.memo = true;
        } else if (errno != ENOENT && removed.error == 0) {
            removed.error = errno;
        }
    }
    return removed;
}

std::uint64_t remove_stale_temps(int shard_fd, const ShardContents& contents) {
    std::uint64_t removed = 0;
    for (const auto& name : contents.stale_temps)
        removed += ::unlinkat(shard_fd, name.c_str(), 0) == 0;
    for (const auto& name : contents.claims)
        removed += remove_claim_if_stale(shard_fd, name);
    return removed;
}

} // namespace kiln::cache::detail
