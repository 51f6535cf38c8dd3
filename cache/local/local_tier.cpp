// The directory's lookups (local_tier.hpp): an entry's lookup with its damage handling and
// counting, publishing an encoded entry, and invalidation. Memos are in memo_store.cpp and the
// read-ahead in read_ahead.cpp, beside their formats.

#include "local_tier.hpp"

#include "warn.hpp"

#include "read_scratch.hpp"
#include "trust.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <exception>

namespace kiln::cache::detail {

namespace {

Counters one(std::uint64_t Counters::*member) {
    Counters delta;
    delta.*member = 1;
    return delta;
}

} // namespace

LocalTier::LocalTier(Directory& directory)
    : m_directory(directory) {}

bool LocalTier::trusted(std::string_view file, SealDomain domain) const {
    const Config& config = m_directory.config();
    if (!config.trusted_keys) return true;
    const Origin origin = config.shared ? Origin::shared_directory : Origin::private_directory;
    return check_trust(file, domain, origin, config.trusted_keys.get()).verdict !=
           Verdict::untrusted;
}

void LocalTier::warn_untrusted(std::string_view what, const Key& key) const {
    const Config& config = m_directory.config();
    detail::warn_untrusted(std::string(to_string(config.shared ? Origin::shared_directory
                                                               : Origin::private_directory)) +
                               " " + shard_dir(config.dir, shard_of(key)).string(),
                           std::string(what) + " " + key.hex());
}

LocalTier::~LocalTier() {
    save_read_ahead();
}

std::optional<Entry> LocalTier::load(const Key& key, EntryParts parts, Lookup lookup,
                                     bool remote_next) {
    const bool counted = lookup == Lookup::counted;
    if (counted && parts == EntryParts::for_loading)
        if (auto entry = m_ahead.take_entry(key)) {
            count_read_ahead_hit({AheadKind::entry, key});
            return entry;
        }
    try {
        // Creating the shard lets the miss be counted: whatever comes first makes the directory.
        // With a remote tier the caller next asks the server and should not wait for directories
        // made first: the miss is kept in memory and counted with the write-back's store.
        auto ref = m_directory.open_shard(shard_of(key), counted && !remote_next);
        if (!ref) {
            if (counted) m_directory.count_later(ref, one(&Counters::misses));
            return std::nullopt;
        }
        const std::string name = key.hex() + std::string(kEntrySuffix);
        // O_NOFOLLOW: an entry is a regular file; a link planted in its place is damage.
        UniqueFd fd = open_at(ref.get(), name, kReadFlags);
        if (!fd) {
            const int error = errno;
            if (!counted) return std::nullopt; // a read ahead leaves what it finds to the lookup
            if (error == ELOOP) {
                m_directory.damaged(ref, key, "a symbolic link, not an entry", true);
                return std::nullopt;
            }
            if (error != ENOENT)
                m_directory.warn_read((m_directory.shard_dir(ref.shard) / name).string(), error);
            m_directory.count_later(ref, one(&Counters::misses));
            return std::nullopt;
        }
        // Into the process's read buffer when it is free and the file fits (read_scratch.hpp:
        // only the payload then lands in fresh memory), else into a buffer of the file's own.
        struct stat st {};
        DecodeResult decoded;
        bool untrusted = false;
        const int error = read_for_lookup(
            fd.get(), kMaxEntryFileSize, &st,
            [&](std::string_view bytes) {
                if (!(untrusted = !trusted(bytes, SealDomain::entry)))
                    decoded = decode_entry(bytes, key, parts);
            },
            [&](std::string&& bytes) {
                if (!(untrusted = !trusted(bytes, SealDomain::entry)))
                    decoded = decode_entry_in_place(std::move(bytes), key, parts);
            });
        if (!counted && (error != 0 || !decoded.entry)) return std::nullopt;
        if (error == 0 && untrusted) {
            // Not damage: it may be good for others (a shared directory), and this user's own
            // compile replaces it in a private one.
            warn_untrusted("the entry", key);
            Counters delta;
            delta.misses = delta.untrusted = 1;
            m_directory.count_later(ref, delta);
            return std::nullopt;
        }
        if (error == 0 && decoded.error == DecodeError::unsupported && !decoded.entry) {
            m_directory.count_later(ref, one(&Counters::misses)); // a newer Kiln's: kept
            return std::nullopt;
        }
        if (error != 0) {
            if (error == EFBIG || error == EINVAL || error == EISDIR) {
                m_directory.damaged(ref, key, "not a regular file of a sane size", true);
            } else {
                m_directory.warn_read((m_directory.shard_dir(ref.shard) / name).string(), error);
                m_directory.count_later(ref, one(&Counters::misses));
            }
            return std::nullopt;
        }
        if (!decoded.entry) {
            m_directory.damaged(ref, key, to_string(decoded.error), true);
            return std::nullopt;
        }
        // The hit makes the entry the most recently used: eviction goes by modification time.
        // Once a minute is enough for that, and spares a hot entry an inode write (a journal
        // transaction) on every process's first call. A read ahead counts as a use.
        if (!m_directory.config().readonly && !touched_lately(st)) ::futimens(fd.get(), nullptr);
        if (counted) {
            m_directory.count_later(ref, one(&Counters::hits));
            m_ahead.note_used({AheadKind::entry, key});
        }
        return std::move(decoded.entry);
    } catch (const std::exception& e) {
        if (counted) warn(std::string("kernel cache lookup failed: ") + e.what());
        return std::nullopt;
    }
}

bool LocalTier::publish(const Key& key, std::string_view encoded, bool note_use) {
    if (note_use) m_ahead.note_used({AheadKind::entry, key});
    if (int error = m_directory.put(key, encoded)) {
        m_directory.warn_write(entry_path(m_directory.config().dir, key).string(), error);
        return false;
    }
    return true;
}

void LocalTier::invalidate(const Key& key) {
    try {
        auto ref = m_directory.open_shard(shard_of(key), false);
        m_directory.damaged(ref, key, "the CUDA driver rejected its payload", false);
    } catch (const std::exception& e) {
        warn(std::string("kernel cache invalidation failed: ") + e.what());
    }
}

} // namespace kiln::cache::detail
