#pragma once
/// @file
/// The cache directory itself: what `kiln cache` shows and does (list, verify, prune, clear,
/// statistics, export and import), where an entry's source, time trace and memo live, and the
/// writes the compiler makes beside an entry. A LocalStore of its own (from a Config) serves the
/// maintenance tools; the one a kiln::cache::Store uses for its lookups is Store::local(). Its own
/// class so that the lookup façade stays small and the tools reach the directory without the
/// remote tier.
///
/// Layout: `<dir>/<ab>/<key>.kiln` (the entry; `ab` = the key's first two hex digits),
/// `<dir>/<ab>/<key>.cu` (its source, when saved) and `<dir>/<ab>/stats` (that shard's counters).
/// Directories are created 0700 and files 0600; with Config::shared (KILN_CACHE_SHARED=1) they
/// are 2770 and 0660, whatever the umask, so a team sharing a group can share one cache (the
/// setgid bit keeps new files in the directory's group). Nothing here throws for a damaged cache
/// except where noted.

#include "kiln/cache/config.hpp"
#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache {

class MissExplainer;
class Store;

namespace detail {
class Directory;
class LocalTier;
} // namespace detail

/// Counters summed over every process that used the directory. A damaged entry counts as a
/// miss and as damaged; `entries` and `bytes` come from a fresh count of the directory.
struct Stats {
    /// @{
    /// `hits`: loads that found a verified entry; `misses`: loads that did not; `damaged`: entries
    /// found damaged (and removed); `evicted`: entries evicted for the size limit; `stores`:
    /// entries published; `untrusted`: misses for want of a trusted signature (with
    /// KILN_TRUSTED_KEYS: entries and lists from elsewhere that no trusted key signed).
    std::uint64_t hits = 0, misses = 0, damaged = 0, evicted = 0, stores = 0, untrusted = 0;
    /// @}
    /// @{
    /// `entries`: entries in the directory now; `memos`: generated kernels' memos
    /// (memo_store.hpp); `bytes`: the bytes of both on disk (saved sources included).
    std::uint64_t entries = 0, memos = 0, bytes = 0;
    /// @}
};

/// One entry as `kiln cache ls` shows it.
struct EntryInfo {
    /// The entry's key (its file name).
    Key key;
    std::uint64_t size = 0;                      ///< bytes on disk: the entry plus its saved source
    std::chrono::system_clock::time_point mtime; ///< last store or hit
    /// The target architecture, e.g. `"sm_90"`.
    std::string arch;
    /// The NVRTC that compiled it, e.g. `"13.0.88"`.
    std::string nvrtc_version;
    std::size_t kernel_count = 0; ///< kernel_names.size()
    /// Kernels in the cubin, `extern "C"` ones included, as the symbol table names them (C++
    /// ones mangled): recorded in the entry at compile time; for a version-1 entry read from the
    /// cubin, or its lowered names when the payload is not an ELF file.
    std::vector<std::string> kernel_names;
    /// The cubin's size in bytes.
    std::uint64_t payload_size = 0;
    /// Whether its source (`<key>.cu`) is saved beside it.
    bool has_source = false;
    std::uint32_t format_version = kEntryFormatVersion; ///< the entry's format (1: an old entry)
    bool has_recipe = false; ///< the entry says what produced it (`kiln cache show`)
};

/// Something wrong with the cache directory itself or one of its shard directories.
struct DirProblem {
    /// The directory at fault.
    std::filesystem::path path;
    /// What is wrong with it, in words.
    std::string what;
    bool fatal = false; ///< the cache directory as a whole cannot be used (missing, unreadable)
};

/// What verify() found.
struct VerifyResult {
    /// @{
    /// `checked`: entries, memos and read-ahead lists read; `ok`: those that verified; `damaged`:
    /// the others (and shard problems); `removed`: damaged ones removed (with `fix`).
    std::uint64_t checked = 0, ok = 0, damaged = 0, removed = 0;
    /// @}
    /// Well-formed entries, memos and lists that a reader with KILN_TRUSTED_KEYS would not use
    /// (not signed by a trusted key, and not this user's own compile in a private directory);
    /// removed with `fix`. Not counted in `ok` or `damaged`.
    std::uint64_t untrusted = 0;
    /// How many good entries each signer or provenance vouches for ("signed by ci (ed25519:…)",
    /// "unsigned, compiled by you", "unsigned, from elsewhere"…).
    std::map<std::string, std::uint64_t> vouched;
    /// Each damaged or untrusted file and why.
    std::vector<std::pair<std::filesystem::path, std::string>> problems;
};

/// What prune() or clear() removed.
struct PruneResult {
    std::uint64_t entries = 0;     ///< entries (with their sources) removed
    std::uint64_t memos = 0;       ///< memos (a generated call's cubin, kept by signature) removed
    std::uint64_t bytes = 0;       ///< bytes freed
    std::uint64_t temporaries = 0; ///< left-over temporaries of killed writers removed
    std::uint64_t not_removed = 0; ///< entries or memos that could not be removed
    int error = 0;                 ///< why the first of those could not be (an errno), or 0
};

/// What zero_stats() could not reset.
struct ZeroResult {
    /// Each counter file left as it was, and why (another process holds its lock past a brief
    /// wait, or it is not a file Kiln made).
    std::vector<std::pair<std::filesystem::path, std::string>> not_zeroed;
    /// Whether every counter file was reset.
    /// @return not_zeroed.empty().
    explicit operator bool() const noexcept { return not_zeroed.empty(); }
};

/// What export_to() wrote or import_from() published.
struct TransferResult {
    /// @{
    /// `entries`: entries written (export) or newly published (import); `sources`: saved sources
    /// likewise; `bytes`: their bytes.
    std::uint64_t entries = 0, sources = 0, bytes = 0;
    /// @}
    std::uint64_t skipped = 0; ///< damaged entries left out of an export
    std::uint64_t present = 0; ///< import: entries the cache already held verified (left as is)
    /// import with KILN_TRUSTED_KEYS: entries no trusted key signed, left out (with their sources)
    std::uint64_t untrusted = 0;
    /// export with KILN_SIGNING_KEY_FILE: this user's own compiles signed on the way out
    std::uint64_t signed_now = 0;
};

/// Checks one entry of an archive before import_from() publishes anything: returns "" to accept
/// it, else why it is refused (`kiln import --verify` compiles the entry's recipe again). May be
/// called from several threads at once; an exception it throws ends the import (nothing
/// published).
using EntryCheck = std::function<std::string(const Entry& entry)>;

/// The cache directory of a Config: its maintenance, statistics and the files beside its entries.
/// Its methods may be called from any thread, and from several processes on one directory.
class LocalStore {
  public:
    /// The directory @p config describes. Touches no disk: the directory and its shards are
    /// created by the first operation that needs them.
    /// @param config where the cache is and how it behaves.
    explicit LocalStore(Config config);
    /// Files what this process read (Store::read_ahead) and writes the counts kept in memory.
    ~LocalStore();
    /// Not copyable: a store holds per-directory state.
    LocalStore(const LocalStore&) = delete;
    /// Not copyable.
    LocalStore& operator=(const LocalStore&) = delete;

    /// The configuration the store was opened with.
    /// @return the configuration the store was opened with.
    const Config& config() const noexcept;

    /// Path where the entry's source lives when save_source is on (`<dir>/<ab>/<key>.cu`).
    /// @param key the entry's key.
    /// @return the path, whether or not the file exists.
    std::filesystem::path source_path(const Key& key) const;
    /// Write the source if missing (atomic).
    /// @param key the entry's key.
    /// @param source the CUDA source compiled under @p key.
    /// @return the path, or nullopt if it could not (also for a disabled or remote-only cache).
    std::optional<std::filesystem::path> save_source(const Key& key, std::string_view source);

    /// Path of the compile time trace of @p key (`<dir>/<ab>/<key>.json`).
    /// @param key the entry's key.
    /// @return the path, whether or not the file exists.
    std::filesystem::path trace_path(const Key& key) const;
    /// Publish NVRTC's time trace for @p key beside its entry (atomic, never through a planted
    /// link).
    /// @param key the entry's key.
    /// @param json the trace NVRTC wrote (Chrome trace format).
    /// @return the path, or nullopt when the cache is disabled, read-only or unwritable.
    std::optional<std::filesystem::path> save_time_trace(const Key& key, std::string_view json);

    /// Where the memo of @p signature lives (`<dir>/<ab>/<signature>.memo`).
    /// @param signature the memo's signature.
    /// @return the path, whether or not the file exists.
    std::filesystem::path memo_path(const Key& signature) const;

    /// Cumulative statistics (shared across processes) plus a fresh count of entries and bytes.
    /// Includes this store's counts not yet written.
    /// @return the statistics; zeros for a directory that cannot be read.
    Stats stats();
    /// Write the counts this store keeps in memory to the directory now, for other processes
    /// (`kiln cache stats`) to see. A lookup writes no file: its hit or miss is written with the
    /// shard's next write, every 64 lookups, and when the store is destroyed (at exit for the
    /// global one). Never waits long for a counter file another process keeps locked: those
    /// counts are left beside it, for the next process that gets the lock to add (`stats()`
    /// counts them meanwhile). Never throws; what cannot be written stays in memory.
    void write_statistics() noexcept;
    /// Set the cumulative counters of every shard, and the remote tier's counters kept in the
    /// directory, to zero (`kiln cache stats --zero`), counts left beside them while they were
    /// locked included; entries are kept. A counter file another process keeps locked is waited
    /// for a few milliseconds, then left as it is and named in the result.
    /// @return the counter files that could not be reset; false (as a bool) when there are some.
    ZeroResult zero_stats();

    /// What is wrong with the cache directory and its shards: missing or unreadable (fatal),
    /// not owned as it should be, shard directories that are links, files or unreadable.
    /// Never throws.
    /// @return the problems; empty when all is well.
    std::vector<DirProblem> check_dir();

    /// @name Maintenance (the `kiln cache` commands)
    /// These work on Config::dir even when the store is disabled or read-only, since a user asks
    /// for them explicitly; they may take seconds on a large cache. They never throw for a
    /// damaged cache, only where noted.
    /// @{

    /// Every entry whose header verifies, in no particular order. Reads headers, not payloads.
    /// @return the entries.
    std::vector<EntryInfo> list();
    /// Read and verify every entry, memo and read-ahead list; with @p fix remove the damaged ones
    /// (counted as damaged). A memo or a list is damaged when a lookup or a read-ahead would not
    /// take it (malformed, another signature's or program's, a link, or a file other users could
    /// have written).
    /// @param fix whether to remove damaged entries.
    /// @return the counts, and each damaged file with its reason.
    VerifyResult verify(bool fix);
    /// Remove entries last used before now - @p max_age (when given), then the least recently
    /// used until the cache holds at most @p max_size bytes; also stale temporaries.
    /// @param max_size the bytes of entries and sources to keep at most.
    /// @param max_age when given, the age past which entries go whatever the size.
    /// @return what was removed.
    PruneResult prune(std::uint64_t max_size,
                      std::optional<std::chrono::seconds> max_age = std::nullopt);
    /// Remove every entry, source and temporary. Statistics counters are kept.
    /// @return what was removed.
    PruneResult clear();
    /// The verified entry as stored, without counting a hit or touching its time; nullopt with
    /// the reason in @p why (when given) if it is missing or damaged.
    /// @param key the entry's key.
    /// @param why where to put the reason for a nullopt; may be null.
    /// @return the entry, or nullopt.
    std::optional<Entry> peek(const Key& key, std::string* why = nullptr);
    /// The saved source of @p key, if there is one.
    /// @param key the entry's key.
    /// @return the source, or nullopt when none is saved or it cannot be read.
    std::optional<std::string> read_source(const Key& key);
    /// Write every verified entry and its source to one archive file (format in archive.cpp).
    /// @param file the archive to write: a new file, or a regular file replaced atomically.
    /// @return what was written, and the damaged entries left out.
    /// @throws kiln::Error when @p file cannot be written, or exists and is not a regular file.
    TransferResult export_to(const std::filesystem::path& file);
    /// export_to() into an open file descriptor, written in order (standard output, a pipe).
    /// @param fd where the archive goes; not closed.
    /// @return what was written, and the damaged entries left out.
    /// @throws kiln::Error when writing fails (a closed pipe, a full disk).
    TransferResult export_to(int fd);
    /// Publish the entries of an archive: all or nothing. The whole archive is read and every
    /// entry decoded and verified against its key before anything is published; when publishing
    /// then fails part-way, what this import published is removed again (entries that were there
    /// before are kept). An archive can place any cubin under any key: import only trusted ones,
    /// or give @p check: every entry must pass it (and a saved source must be the source of the
    /// entry's recipe) before anything is published, and what is published is the bytes that
    /// were checked, held in memory meanwhile. @p check_jobs entries are checked at once.
    /// @throws kiln::Error when @p file cannot be read, is not an archive, is damaged (nothing is
    /// published), holds entries @p check refuses (the message lists them, nothing is published)
    /// or cannot be published (the message says what was removed again).
    /// @param file the archive, as export_to() writes it.
    /// @param check what each entry must pass (none: every verified entry is accepted).
    /// @param check_jobs how many entries are checked at once.
    /// @param checking called once with the number of entries @p check will see, before the
    /// first (a progress line's total); not called without @p check.
    /// @return what was published, and what the cache already held.
    TransferResult import_from(const std::filesystem::path& file, const EntryCheck& check = {},
                               unsigned check_jobs = 1,
                               const std::function<void(std::size_t entries)>& checking = {});
    /// @}

  private:
    /// The archive's bytes, in order, through @p write_bytes (0 or an errno); @p file names the
    /// target in errors.
    TransferResult export_records(const std::filesystem::path& file,
                                  const std::function<int(std::string_view)>& write_bytes);

    // The façade's lookups go through the same directory and counters as the maintenance, and
    // the miss explanations (explain.hpp) scan it as list() does.
    friend class MissExplainer;
    friend class Store;
    std::unique_ptr<detail::Directory> m_directory;
    /// Lookups and read-ahead over m_directory; destroyed first, since it files the read-ahead
    /// list through the directory, which then writes the counts held in memory.
    std::unique_ptr<detail::LocalTier> m_tier;
};

} // namespace kiln::cache
