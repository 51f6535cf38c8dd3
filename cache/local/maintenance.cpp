#include "kiln/cache/local_store.hpp"

#include "kiln/cache/cubin_symbols.hpp"

#include "seal.hpp"
#include "trust.hpp"

#include "claim_file.hpp"
#include "directory.hpp"
#include "entry_head.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "read_ahead.hpp"
#include "settings_file.hpp"
#include "shard.hpp"
#include "stats_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace kiln::cache {

namespace {

// The header and metadata of the entry at @p path, verified; nullopt when unreadable or damaged.
std::optional<EntryInfo> read_info(const std::filesystem::path& path, const Key& key) {
    auto head = detail::read_entry_head(path, key);
    if (!head) return std::nullopt;
    DecodeResult& decoded = head->decoded;
    EntryInfo info;
    info.key = key;
    info.size = head->file_size;
    info.mtime = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(head->mtime_ns)));
    info.arch = decoded.entry->arch;
    info.nvrtc_version = decoded.entry->nvrtc_version;
    info.payload_size = decoded.payload_size;
    info.format_version = decoded.entry->format_version;
    info.has_recipe = decoded.entry->recipe.has_value();
    if (decoded.entry->format_version >= 2) {
        // Recorded at compile time: the payload need not be read.
        info.kernel_names = std::move(decoded.entry->kernel_names);
        info.kernel_count = info.kernel_names.size();
        return info;
    }
    // A version-1 entry: the kernels from the cubin's symbol table, `extern "C"` ones included;
    // the payload is not verified here (ls reads what it shows, it does not vouch for it), and the
    // parser reads nothing outside it. A payload that is no ELF file (PTX, damage) shows its
    // lowered names.
    std::string payload;
    std::optional<std::vector<std::string>> kernels;
    if (detail::read_at(head->fd.get(), head->head_size,
                        static_cast<std::size_t>(decoded.stored_payload_size), payload) == 0)
        kernels = cubin_kernel_names(payload);
    if (kernels) {
        info.kernel_names = std::move(*kernels);
    } else {
        for (const auto& [expression, lowered] : decoded.entry->lowered_names)
            info.kernel_names.push_back(lowered);
    }
    info.kernel_count = info.kernel_names.size();
    return info;
}

// Read the file @p name of the shard @p shard_fd whole (@p what: "an entry", "a memo") into
// @p bytes, as verify checks it: nullopt when read, else the verdict: "" when it went meanwhile
// (evicted: nothing to report), or why it cannot be read.
std::optional<std::string> read_for_check(int shard_fd, const std::string& name, const char* what,
                                          std::string& bytes, struct stat* st = nullptr) {
    detail::UniqueFd fd = detail::open_at(shard_fd, name, detail::kReadFlags);
    if (!fd) {
        if (errno == ENOENT) return std::string();
        return errno == ELOOP ? std::string("a symbolic link, not ") + what : std::strerror(errno);
    }
    if (int error = detail::read_all(fd.get(), detail::kMaxEntryFileSize, bytes, st))
        return error == EFBIG || error == EINVAL || error == EISDIR
                   ? "not a regular file of a sane size"
                   : std::strerror(error);
    return std::nullopt;
}

// Who vouches for the file @p bytes (of @p domain, well formed) and whether a reader with the
// trusted keys of @p config would use it: the signer, or where it came from.
struct Vouched {
    std::string who;
    bool untrusted = false;
};

Vouched vouched_for(std::string_view bytes, detail::SealDomain domain, const Config& config) {
    Vouched result;
    const auto seal = detail::read_seal(bytes, domain);
    if (!seal) return {"no seal (an older format)", false};
    const TrustedKeys* keys = config.trusted_keys.get();
    const bool own = !config.shared && seal->provenance == Provenance::own_compile;
    // Every signature is checked, once: also those a lookup takes on trust (`verified`).
    const PublicKey* signer =
        seal->is_signed && keys ? detail::verify_seal(bytes, *seal, *keys) : nullptr;
    if (signer)
        result.who = "signed by " +
                     (signer->comment.empty() ? std::string("a trusted key") : signer->comment) +
                     " (" + fingerprint(signer->bytes) + ")";
    else if (seal->is_signed && keys && keys->find(seal->signer))
        result.who = "a signature by " + fingerprint(seal->signer) + " that does not verify";
    else if (seal->is_signed)
        result.who = "signed by " + fingerprint(seal->signer) + (keys ? ", not a trusted key" : "");
    else
        result.who = own ? "unsigned, compiled by you" : "unsigned, from elsewhere";
    // What check_trust() decides, with the signature checked even where the seal says it was.
    result.untrusted = keys && !own && !signer;
    return result;
}

// Why the entry @p name in the shard @p shard_fd is not a good entry for @p key, or "" when it is;
// who vouches for a good one in @p vouched.
std::string check_entry(int shard_fd, const std::string& name, const Key& key, int shard,
                        const Config& config, Vouched& vouched) {
    if (detail::shard_of(key) != shard) return "in the wrong shard directory";
    std::string bytes;
    if (auto verdict = read_for_check(shard_fd, name, "an entry", bytes)) return *verdict;
    DecodeResult decoded = decode_entry(bytes, key);
    if (!decoded.entry) return to_string(decoded.error);
    if (decoded.entry->format_version >= 3)
        vouched = vouched_for(bytes, detail::SealDomain::entry, config);
    else
        vouched.who = "unsigned (entry format " + std::to_string(decoded.entry->format_version) +
                      ", never looked up)";
    return {};
}

// Why the memo @p name in the shard @p shard_fd is not one a lookup of @p signature would take,
// or "" when it is.
std::string check_memo(int shard_fd, const std::string& name, const Key& signature,
                       const detail::Modes& modes, const Config& config, Vouched& vouched) {
    std::string bytes;
    struct stat st {};
    if (auto verdict = read_for_check(shard_fd, name, "a memo", bytes, &st)) return *verdict;
    if (std::string why = detail::distrust(st, modes); !why.empty()) return "not trusted: " + why;
    if (!decode_memo(bytes, signature)) return "not a memo of its signature";
    vouched = vouched_for(bytes, detail::SealDomain::memo, config);
    return {};
}

// Why the read-ahead list @p name is not one Store::read_ahead() would take for the program
// @p program (its file name), or "" when it is.
std::string check_ahead_list(int shard_fd, const std::string& name, const Key& program,
                             const detail::Modes& modes, const Config& config, Vouched& vouched) {
    std::string bytes;
    struct stat st {};
    if (auto verdict = read_for_check(shard_fd, name, "a read-ahead list", bytes, &st))
        return *verdict;
    if (std::string why = detail::distrust(st, modes); !why.empty()) return "not trusted: " + why;
    if (!detail::decode_ahead_list(bytes, program)) return "not a read-ahead list of its program";
    vouched = vouched_for(bytes, detail::SealDomain::read_ahead, config);
    vouched.who.clear(); // lists are not reported by signer, only when untrusted
    return {};
}

// verify()'s verdict on the file @p name of a shard (an entry, a memo or a read-ahead list;
// @p problem empty when it verified), counted in @p result; a damaged one is removed when @p fix,
// and @p removed (what removing it takes from the usage) counted with the damage. An untrusted
// one (@p vouched) is counted as such, and removed when @p fix.
void record_verdict(detail::Directory& directory, detail::ShardRef& ref, const std::string& name,
                    std::string problem, bool fix, detail::Counters removed, VerifyResult& result,
                    const Vouched& vouched = {}) {
    ++result.checked;
    if (problem.empty() && !vouched.who.empty()) ++result.vouched[vouched.who];
    if (problem.empty() && vouched.untrusted) {
        ++result.untrusted;
        std::string what = "untrusted: " + vouched.who;
        if (fix && detail::remove_at(ref.get(), name) == 0) {
            ++result.removed;
            directory.count(ref, removed);
            what += " (removed)";
        }
        result.problems.emplace_back(directory.shard_dir(ref.shard) / name, std::move(what));
        return;
    }
    if (problem.empty()) {
        ++result.ok;
        return;
    }
    ++result.damaged;
    if (fix && detail::remove_at(ref.get(), name) == 0) {
        ++result.removed;
        removed.damaged = 1;
        directory.count(ref, removed);
    }
    result.problems.emplace_back(directory.shard_dir(ref.shard) / name, std::move(problem));
}

// verify()'s verdict on what is at the name of counts left for a locked counter file (@p path,
// in @p dir_fd): a spill, or one still being written, is fine; anything else (a link, a FIFO, a
// directory, a hard link, a file of another user or group, too large, or one a process that died
// never finished) is reported in @p result, and removed when @p fix.
void check_spill_file(int dir_fd, const std::filesystem::path& path, bool shared, bool fix,
                      VerifyResult& result) {
    const std::string name = path.filename().string();
    const detail::SpillCheck check = detail::check_spill(dir_fd, name, shared);
    std::string problem;
    if (check.kind == detail::SpillCheck::untrusted)
        problem = "not counts left for a locked counter file: " + check.text;
    else if (check.kind == detail::SpillCheck::stale)
        problem = "counts left for a locked counter file, never finished (its process died)";
    else
        return;
    ++result.damaged;
    if (fix && detail::remove_at(dir_fd, name) == 0) {
        ++result.removed;
        problem += " (removed)";
    }
    result.problems.emplace_back(path, std::move(problem));
}

// Whether @p name is one of the cache's bookkeeping files (usage, counters, settings).
bool is_bookkeeping(const std::string& name) {
    return name == detail::kUsageName || name == detail::kRemoteStatsName ||
           name == detail::kSettingsName || name == detail::kStatsName;
}

// Why what is at the bookkeeping name @p name in @p dir_fd is not a file Kiln made, or "": it
// must be a regular file with one link, writable by no stranger and, in a private cache, this
// user's own. Such a file would turn the size limit or the counters off for good.
std::string bookkeeping_problem(int dir_fd, const std::string& name, const detail::Modes& modes) {
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    if (S_ISLNK(st.st_mode)) return "a symbolic link at a bookkeeping name";
    if (!S_ISREG(st.st_mode)) return "not a regular file at a bookkeeping name";
    if (st.st_nlink != 1) return "a bookkeeping file with another name (a hard link)";
    if (st.st_mode & S_IWOTH) return "a bookkeeping file writable by every user";
    if (!modes.shared && st.st_uid != ::geteuid())
        return "a bookkeeping file owned by another user";
    return {};
}

} // namespace

std::vector<EntryInfo> LocalStore::list() {
    std::vector<EntryInfo> infos;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_directory->open_shard(shard, false);
        detail::ShardContents contents;
        if (!ref || detail::scan_shard(ref.get(), 0, contents) != 0) continue;
        const auto dir = m_directory->shard_dir(shard);
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

VerifyResult LocalStore::verify(bool fix) {
    VerifyResult result;
    // Shard directories first: a file or link in a shard's place, or one not to be trusted.
    for (const auto& problem : check_dir()) {
        if (problem.fatal) return result;
        ++result.damaged;
        if (fix && !m_directory->config().readonly) {
            auto root = m_directory->root(false);
            struct stat st;
            const std::string name = problem.path.filename().string();
            const bool in_root = problem.path.parent_path() == m_directory->config().dir;
            // Only what Kiln can heal: a file or link where a shard should be, and anything at a
            // bookkeeping name that is not Kiln's own file (the next update makes it anew).
            bool healed = false;
            if (root && is_bookkeeping(name)) {
                detail::UniqueFd parent =
                    in_root ? detail::UniqueFd()
                            : detail::open_at(root->get(),
                                              problem.path.parent_path().filename().string(),
                                              detail::kDirFlags);
                healed = (in_root || parent) &&
                         detail::remove_at(in_root ? root->get() : parent.get(), name) == 0;
            } else if (root && in_root &&
                       ::fstatat(root->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                       !S_ISDIR(st.st_mode)) {
                healed = ::unlinkat(root->get(), name.c_str(), 0) == 0;
            }
            if (healed) {
                ++result.removed;
                result.problems.emplace_back(problem.path, problem.what + " (removed)");
                continue;
            }
        }
        result.problems.emplace_back(problem.path, problem.what);
    }
    const Config& config = m_directory->config();
    const bool shared = m_directory->modes().shared;
    const bool fix_spills = fix && !m_directory->config().readonly;
    if (auto root = m_directory->root(false))
        for (const std::string_view counters : {detail::kUsageName, detail::kRemoteStatsName})
            for (const auto& name :
                 detail::list_spills(root->get(), counters, detail::kMaxSpillsKept * 16))
                check_spill_file(root->get(), m_directory->config().dir / name, shared, fix_spills,
                                 result);
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_directory->open_shard(shard, false);
        detail::ShardContents contents;
        if (!ref || detail::scan_shard(ref.get(), 0, contents) != 0) continue;
        for (const auto& name : contents.spills)
            check_spill_file(ref.get(), m_directory->shard_dir(shard) / name, shared, fix_spills,
                             result);
        // A claim whose holder died is harmless (the next compile of its key takes it over), so
        // only --fix speaks of it, removing it; a held one belongs to a compile running now.
        if (fix_spills)
            for (const auto& name : contents.claims)
                if (detail::remove_claim_if_stale(ref.get(), name)) {
                    ++result.damaged;
                    ++result.removed;
                    result.problems.emplace_back(m_directory->shard_dir(shard) / name,
                                                 "a claim left by a process that died (removed)");
                }
        for (const auto& item : contents.items) {
            const std::string hex = item.key.hex();
            if (item.has_memo) {
                const std::string name = hex + std::string(detail::kMemoSuffix);
                detail::Counters removed;
                removed.bytes = -static_cast<std::int64_t>(item.memo_size);
                Vouched vouched;
                std::string problem =
                    check_memo(ref.get(), name, item.key, m_directory->modes(), config, vouched);
                vouched.who.clear(); // memos are not reported by signer, only when untrusted
                record_verdict(*m_directory, ref, name, std::move(problem), fix, removed, result,
                               vouched);
            }
            if (item.has_ahead) {
                const std::string name = hex + std::string(detail::kAheadSuffix);
                detail::Counters removed;
                removed.bytes = -static_cast<std::int64_t>(item.ahead_size);
                Vouched vouched;
                std::string problem = check_ahead_list(ref.get(), name, item.key,
                                                       m_directory->modes(), config, vouched);
                record_verdict(*m_directory, ref, name, std::move(problem), fix, removed, result,
                               vouched);
            }
            if (item.has_entry) {
                const std::string name = hex + std::string(detail::kEntrySuffix);
                detail::Counters removed;
                if (!item.entry_is_dir) {
                    removed.files = -1;
                    removed.bytes = -static_cast<std::int64_t>(item.entry_size);
                }
                Vouched vouched;
                std::string problem =
                    check_entry(ref.get(), name, item.key, shard, config, vouched);
                record_verdict(*m_directory, ref, name, std::move(problem), fix, removed, result,
                               vouched);
            }
        }
    }
    return result;
}

PruneResult LocalStore::prune(std::uint64_t max_size, std::optional<std::chrono::seconds> max_age) {
    const std::int64_t now = detail::now_ns();
    std::optional<std::int64_t> older_than;
    if (max_age) older_than = now - std::chrono::nanoseconds(*max_age).count();
    return m_directory->evict(max_size, older_than, nullptr, detail::LockWait::patient,
                              now - detail::kStaleTempAgeNs, true);
}

PruneResult LocalStore::clear() {
    // Everything goes, temporaries of live writers too: their rename then fails (a miss).
    // Cleared entries are not evictions: the counters keep telling how the limit worked.
    const std::int64_t future = std::numeric_limits<std::int64_t>::max();
    return m_directory->evict(0, future, nullptr, detail::LockWait::patient, future, false);
}

ZeroResult LocalStore::zero_stats() {
    ZeroResult result;
    const detail::Modes& modes = m_directory->modes();
    // A brief wait each: a file another process keeps locked is reported, not waited for.
    const auto zero = [&](int dir_fd, const std::filesystem::path& path) {
        const int error = detail::zero_counter_file(dir_fd, path.filename().string(), modes.file,
                                                    modes.shared, detail::LockWait::brief);
        if (error != 0)
            result.not_zeroed.emplace_back(path, error == EWOULDBLOCK
                                                     ? std::string("locked by another process")
                                                     : std::string(std::strerror(error)));
    };
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_directory->open_shard(shard, false);
        if (ref) zero(ref.get(), m_directory->shard_dir(shard) / std::string(detail::kStatsName));
    }
    // The remote tier's counters are kept in the directory too: zeroed with the shards'.
    if (auto root = m_directory->root(false))
        zero(root->get(), m_directory->config().dir / std::string(detail::kRemoteStatsName));
    return result;
}

std::vector<DirProblem> LocalStore::check_dir() {
    std::vector<DirProblem> problems;
    const auto& dir = m_directory->config().dir;
    auto opened = detail::open_root(dir, m_directory->modes(), false);
    if (!opened.fd) {
        problems.push_back({dir,
                            opened.distrust.empty() ? std::string(std::strerror(opened.error))
                                                    : "not used: " + opened.distrust,
                            true});
        return problems;
    }
    if (::faccessat(opened.fd.get(), ".", R_OK | X_OK, 0) != 0) {
        problems.push_back({dir, std::strerror(errno), true});
        return problems;
    }
    const detail::Modes& modes = m_directory->modes();
    for (const std::string_view name :
         {detail::kUsageName, detail::kRemoteStatsName, detail::kSettingsName})
        if (std::string why = bookkeeping_problem(opened.fd.get(), std::string(name), modes);
            !why.empty())
            problems.push_back({dir / std::string(name), why});
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto shard_opened = detail::open_shard(opened.fd.get(), shard, m_directory->modes(), false);
        const auto path = m_directory->shard_dir(shard);
        if (shard_opened.fd)
            if (std::string why = bookkeeping_problem(shard_opened.fd.get(),
                                                      std::string(detail::kStatsName), modes);
                !why.empty())
                problems.push_back({path / std::string(detail::kStatsName), why});
        if (!shard_opened.problem.empty())
            problems.push_back({path, shard_opened.problem});
        else if (!shard_opened.fd && shard_opened.error != ENOENT)
            problems.push_back(
                {path, std::string("unreadable: ") + std::strerror(shard_opened.error)});
        else if (shard_opened.fd && ::faccessat(shard_opened.fd.get(), ".", R_OK | X_OK, 0) != 0)
            problems.push_back({path, std::string("unreadable: ") + std::strerror(errno)});
    }
    return problems;
}

std::optional<Entry> LocalStore::peek(const Key& key, std::string* why) {
    auto fail = [&](std::string reason) -> std::optional<Entry> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    auto ref = m_directory->open_shard(detail::shard_of(key), false);
    if (!ref) return fail(ref.error == ENOENT ? "no such entry" : std::strerror(ref.error));
    detail::UniqueFd fd = detail::open_at(ref.get(), key.hex() + std::string(detail::kEntrySuffix),
                                          detail::kReadFlags);
    if (!fd) return fail(errno == ENOENT ? "no such entry" : std::strerror(errno));
    std::string bytes;
    if (int error = detail::read_all(fd.get(), detail::kMaxEntryFileSize, bytes))
        return fail(std::strerror(error));
    DecodeResult decoded = decode_entry(bytes, key);
    if (!decoded.entry) return fail(std::string("damaged: ") + to_string(decoded.error));
    const Config& config = m_directory->config();
    if (config.trusted_keys &&
        detail::check_trust(bytes, detail::SealDomain::entry,
                            config.shared ? detail::Origin::shared_directory
                                          : detail::Origin::private_directory,
                            config.trusted_keys.get())
                .verdict != detail::Verdict::trusted)
        return fail("untrusted: " + vouched_for(bytes, detail::SealDomain::entry, config).who);
    return std::move(decoded.entry);
}

std::optional<std::string> LocalStore::read_source(const Key& key) {
    auto ref = m_directory->open_shard(detail::shard_of(key), false);
    if (!ref) return std::nullopt;
    detail::UniqueFd fd = detail::open_at(ref.get(), key.hex() + std::string(detail::kSourceSuffix),
                                          detail::kReadFlags);
    std::string text;
    if (!fd || detail::read_all(fd.get(), detail::kMaxEntryFileSize, text) != 0)
        return std::nullopt;
    return text;
}

} // namespace kiln::cache
