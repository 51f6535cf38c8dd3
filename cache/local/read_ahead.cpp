#include "read_ahead.hpp"

#include "bytes.hpp"
#include "seal.hpp"

#include "layout.hpp"
#include "local_tier.hpp"

#include <xxhash.h>

#include <sys/stat.h>

#include <algorithm>
#include <utility>

namespace kiln::cache {

namespace detail {

namespace {

constexpr std::string_view kAheadMagic = "KILNHEAD";
constexpr std::uint32_t kAheadVersion = 2; // 2: sealed (../seal.hpp)
constexpr std::size_t kKeySize = sizeof(Key::bytes);
constexpr std::uint64_t kMaxListSize =
    8 + 4 + kKeySize + 4 + kMaxReadAhead * (1 + kKeySize) + 8 + kSealSize;

std::string_view key_bytes(const Key& key) {
    return {reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()};
}

bool contains(const std::vector<AheadItem>& items, const AheadItem& item) {
    return std::find(items.begin(), items.end(), item) != items.end();
}

template <class T> std::optional<T> take(std::vector<std::pair<Key, T>>& kept, const Key& key) {
    for (auto it = kept.begin(); it != kept.end(); ++it)
        if (it->first == key) {
            T found = std::move(it->second);
            kept.erase(it);
            return found;
        }
    return std::nullopt;
}

} // namespace

std::string encode_ahead_list(const Key& program, const std::vector<AheadItem>& items,
                              const SigningKey* key) {
    std::string out;
    ByteWriter w(out);
    w.raw(kAheadMagic);
    w.u32(kAheadVersion);
    w.raw(key_bytes(program));
    const std::size_t count = std::min(items.size(), kMaxReadAhead);
    w.u32(static_cast<std::uint32_t>(count));
    for (std::size_t i = 0; i < count; ++i) {
        out.push_back(static_cast<char>(items[i].kind));
        w.raw(key_bytes(items[i].key));
    }
    w.u64(XXH3_64bits(out.data(), out.size()));
    append_seal(out, SealDomain::read_ahead, Provenance::own_compile, key);
    return out;
}

std::optional<std::vector<AheadItem>> decode_ahead_list(std::string_view bytes,
                                                        const Key& program) {
    if (bytes.size() > kMaxListSize || bytes.size() < 8 + kSealSize ||
        !read_seal(bytes, SealDomain::read_ahead))
        return std::nullopt;
    bytes.remove_suffix(kSealSize);
    const std::string_view body = bytes.substr(0, bytes.size() - 8);
    ByteReader r(bytes);
    if (r.raw(kAheadMagic.size()) != kAheadMagic || r.u32() != kAheadVersion) return std::nullopt;
    if (r.raw(kKeySize) != key_bytes(program)) return std::nullopt;
    const std::uint32_t count = r.u32();
    if (!r.ok() || count > kMaxReadAhead) return std::nullopt;
    std::vector<AheadItem> items(count);
    for (AheadItem& item : items) {
        const std::string_view kind = r.raw(1);
        const std::string_view key = r.raw(kKeySize);
        if (!r.ok() || (kind[0] != static_cast<char>(AheadKind::entry) &&
                        kind[0] != static_cast<char>(AheadKind::memo)))
            return std::nullopt;
        item.kind = static_cast<AheadKind>(kind[0]);
        std::copy(key.begin(), key.end(), reinterpret_cast<char*>(item.key.bytes.data()));
    }
    const std::uint64_t hash = r.u64();
    if (!r.ok() || r.remaining() != 0 || hash != XXH3_64bits(body.data(), body.size()))
        return std::nullopt;
    return items;
}

std::optional<Key> ReadAhead::program() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_program;
}

bool ReadAhead::start(const Key& program, std::vector<AheadItem> listed) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_program) return false;
    m_program = program;
    m_listed = std::move(listed);
    return true;
}

void ReadAhead::keep_memo(const Key& signature, Memo memo) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_memos.emplace_back(signature, std::move(memo));
}

void ReadAhead::keep_entry(const Key& key, Entry entry) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_entries.emplace_back(key, std::move(entry));
}

std::optional<Memo> ReadAhead::take_memo(const Key& signature) {
    std::lock_guard<std::mutex> lock(m_mutex);
    return take(m_memos, signature);
}

std::optional<Entry> ReadAhead::take_entry(const Key& key) {
    std::lock_guard<std::mutex> lock(m_mutex);
    return take(m_entries, key);
}

void ReadAhead::visit_cubins(
    const std::function<void(std::string_view, const std::vector<std::string_view>&)>& visit)
    const {
    std::lock_guard<std::mutex> lock(m_mutex);
    std::vector<std::string_view> kernels;
    for (const auto& [signature, memo] : m_memos) {
        kernels.assign(1, memo.name);
        visit(memo.cubin, kernels);
    }
    for (const auto& [key, entry] : m_entries) {
        if (entry.kind != PayloadKind::cubin) continue;
        kernels.assign(entry.kernel_names.begin(), entry.kernel_names.end());
        visit(entry.payload, kernels);
    }
}

void ReadAhead::note_used(const AheadItem& item) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_used.size() < kMaxReadAhead && !contains(m_used, item)) m_used.push_back(item);
}

void ReadAhead::forget_used(const AheadItem& item) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_used.erase(std::remove(m_used.begin(), m_used.end(), item), m_used.end());
    if (!contains(m_covered, item)) m_covered.push_back(item);
}

std::optional<std::vector<AheadItem>> ReadAhead::list_to_save() {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_program) return std::nullopt;
    std::vector<AheadItem> list = m_used;
    for (const AheadItem& item : m_listed)
        if (list.size() < kMaxReadAhead && !contains(list, item) && !contains(m_covered, item))
            list.push_back(item);
    // The same items in another order are the same list: a process that used part of it in its
    // own order writes nothing.
    const bool same = list.size() == m_listed.size() &&
                      std::all_of(list.begin(), list.end(),
                                  [&](const AheadItem& item) { return contains(m_listed, item); });
    if (same) return std::nullopt;
    return list;
}

} // namespace detail

namespace {

Key program_key(std::string_view program) {
    return KeyBuilder()
        .add("kiln read-ahead list", std::string_view("1"))
        .add("program", program)
        .finish();
}

} // namespace

namespace detail {

void LocalTier::read_ahead(std::string_view program) noexcept {
    if (!m_directory.config().read_ahead || !m_directory.in_use()) return;
    try {
        const Key key = program_key(program);
        std::vector<AheadItem> listed;
        // The list is opened and checked as a memo is (shard owner and modes, no links, a file
        // this user trusts, every byte under its hash); anything else is no list.
        if (auto ref = m_directory.open_shard(shard_of(key), false)) {
            const std::string name = key.hex() + std::string(kAheadSuffix);
            if (UniqueFd fd = open_at(ref.get(), name, kReadFlags)) {
                struct stat st {};
                std::string bytes;
                if (read_all(fd.get(), kMaxListSize, bytes, &st) == 0 &&
                    distrust(st, m_directory.modes()).empty() &&
                    trusted(bytes, SealDomain::read_ahead))
                    if (auto items = decode_ahead_list(bytes, key)) {
                        listed = std::move(*items);
                        // In use: eviction, which goes by modification time, keeps it.
                        if (!m_directory.config().readonly && !touched_lately(st))
                            ::futimens(fd.get(), nullptr);
                    }
            }
        }
        if (!m_ahead.start(key, listed)) return;
        std::uint64_t bytes = 0;
        for (const AheadItem& item : listed) {
            if (bytes >= kMaxReadAheadBytes) break;
            if (item.kind == AheadKind::memo) {
                if (auto memo = read_memo(item.key, Lookup::read_ahead)) {
                    bytes += memo->cubin.size();
                    m_ahead.keep_memo(item.key, std::move(*memo));
                }
            } else if (auto entry =
                           load(item.key, EntryParts::for_loading, Lookup::read_ahead, false)) {
                bytes += entry->payload.size();
                m_ahead.keep_entry(item.key, std::move(*entry));
            }
        }
    } catch (...) {
        // a read ahead is a shortcut: the lookups take the full path
    }
}

void LocalTier::visit_read_ahead_cubins(
    const std::function<void(std::string_view, const std::vector<std::string_view>&)>& visit)
    const noexcept {
    try {
        m_ahead.visit_cubins(visit);
    } catch (...) {
        // what is not visited is loaded by its first call
    }
}

void LocalTier::count_read_ahead_hit(const AheadItem& item) {
    ShardRef ref; // counted with the shard's next write, as a lookup's hit is
    ref.shard = shard_of(item.key);
    Counters hit;
    hit.hits = 1;
    m_directory.count_later(ref, hit);
    m_ahead.note_used(item);
}

void LocalTier::save_read_ahead() noexcept {
    const Config& config = m_directory.config();
    if (!config.read_ahead || !m_directory.in_use() || config.readonly) return;
    if (m_ahead_saved.exchange(true)) return;
    try {
        const auto program = m_ahead.program();
        if (!program) return;
        const auto list = m_ahead.list_to_save();
        // A cache directory removed meanwhile (a test's, a CI job's) is not made again for a hint.
        if (!list || !m_directory.root(false)) return;
        if (int error = m_directory.put_file(
                *program, kAheadSuffix,
                encode_ahead_list(*program, *list, config.signing_key.get()), false))
            m_directory.warn_write(shard_dir(config.dir, shard_of(*program)).string(), error);
    } catch (...) {
        // the next process reads ahead what the old list named, or nothing
    }
}

} // namespace detail

} // namespace kiln::cache
