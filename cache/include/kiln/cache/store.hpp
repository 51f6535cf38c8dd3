#pragma once
/// @file
/// The on-disk cache: sharded directory of self-contained entries, atomic publish, verified
/// reads, LRU size bound, statistics shared across processes. It never throws for a cache
/// failure: a broken directory degrades to "no cache" with one warning.
///
/// Layout: `<dir>/<ab>/<key>.kiln` (the entry; `ab` = the key's first two hex digits),
/// `<dir>/<ab>/<key>.cu` (its source, when saved) and `<dir>/<ab>/stats` (that shard's counters).
/// Directories are created 0700 and files 0600; with Config::shared (KILN_CACHE_SHARED=1) they
/// are 2770 and 0660, whatever the umask, so a team sharing a group can share one cache (the
/// setgid bit keeps new files in the directory's group).

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/remote.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache {

/// Where the cache lives and how it behaves; from_environment() reads it the way Kiln does.
struct Config {
    /// KILN_CACHE_DIR, else `$XDG_CACHE_HOME/kiln`, else `~/.cache/kiln` (absolute).
    std::filesystem::path dir;
    bool disabled = false;    ///< KILN_CACHE_DISABLE: memory only
    bool readonly = false;    ///< KILN_CACHE_READONLY: serve hits, never write
    bool save_source = false; ///< KILN_CACHE_SAVE_SOURCE: keep `<key>.cu` beside each entry
    bool shared = false;      ///< KILN_CACHE_SHARED: group-writable team cache (2770 / 0660)
    /// KILN_READ_AHEAD (on by default from the environment): Store::read_ahead() reads what the
    /// program's last processes used, and the store files what this process used when it closes.
    bool read_ahead = false;
    /// KILN_CACHE_MAX_SIZE: bytes of entries and sources together; 0 means no limit.
    std::uint64_t max_size = std::uint64_t{2} << 30;
    /// KILN_REMOTE_CACHE and companions: the Redis tier after the directory
    /// (kiln/cache/remote.hpp). Not used when `disabled` (KILN_CACHE_DISABLE=1 means memory only).
    /// In remote-only mode the directory is neither read nor written by lookups and stores.
    std::optional<RemoteConfig> remote;

    /// From the environment (the README's table), then the cache directory's settings file
    /// (kiln/cache/settings.hpp) for what no variable sets; a disabled cache reads no file.
    /// Without a cache directory to use (no KILN_CACHE_DIR, XDG_CACHE_HOME or home directory) the
    /// cache is disabled.
    /// @return the configuration in force.
    /// @throws kiln::ConfigError for unparsable values, naming the variable or the file.
    static Config from_environment();
};

/// Counters summed over every process that used the directory. A damaged entry counts as a
/// miss and as damaged; `entries` and `bytes` come from a fresh count of the directory.
struct Stats {
    /// @{
    /// `hits`: loads that found a verified entry; `misses`: loads that did not; `damaged`: entries
    /// found damaged (and removed); `evicted`: entries evicted for the size limit; `stores`:
    /// entries published.
    std::uint64_t hits = 0, misses = 0, damaged = 0, evicted = 0, stores = 0;
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
    /// Each damaged file and why.
    std::vector<std::pair<std::filesystem::path, std::string>> problems;
};

/// What prune() or clear() removed.
struct PruneResult {
    std::uint64_t entries = 0;     ///< entries (with their sources) removed
    std::uint64_t memos = 0;       ///< memos (a generated call's cubin, kept by signature) removed
    std::uint64_t bytes = 0;       ///< bytes freed
    std::uint64_t temporaries = 0; ///< left-over temporaries of killed writers removed
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
};

/// Checks one entry of an archive before import_from() publishes anything: returns "" to accept
/// it, else why it is refused (`kiln import --verify` compiles the entry's recipe again). May be
/// called from several threads at once; an exception it throws ends the import (nothing
/// published).
using EntryCheck = std::function<std::string(const Entry& entry)>;

/// The disk tier of the cache: one directory, shared by every process and thread that opens it.
/// Its methods may be called from any thread. Most programs use global(); the compiler consults it
/// on every compile that misses in memory.
class Store {
  public:
    /// Open the cache @p config describes. Touches no disk: the directory and its shards are
    /// created by the first operation that needs them.
    /// @param config where the cache is and how it behaves.
    explicit Store(Config config);
    /// Closes the store; entries stay on disk.
    ~Store();
    /// Not copyable: a store holds per-directory state.
    Store(const Store&) = delete;
    /// Not copyable.
    Store& operator=(const Store&) = delete;

    /// The configuration the store was opened with.
    /// @return the configuration the store was opened with.
    const Config& config() const noexcept;

    /// A verified entry, or nullopt (miss, disabled, damaged: damaged entries are removed, counted
    /// and warned about once). A hit refreshes the entry's modification time. With a remote tier,
    /// a local miss asks Redis (at most one deadline); a remote hit is verified the same way and
    /// written to the directory (unless read-only or remote-only) by a background thread, so it
    /// is there once flush_remote() returns.
    /// @param key the entry's key.
    /// @param parts EntryParts::for_loading leaves the recipe and link inputs out (a local hit
    /// then copies only what running the payload needs).
    /// @return the entry, or nullopt.
    std::optional<Entry> load(const Key& key, EntryParts parts = EntryParts::all);

    /// Publish atomically, replacing any entry of the same key, then evict least recently used
    /// entries when the size limit is passed. With a remote tier (read-write or remote-only) the
    /// entry is also queued for Redis (SET NX), which a background thread sends: this call never
    /// waits on the server.
    /// @param entry the entry, filed under Entry::key.
    /// @return false (with one warning per store) when it could not: disabled, read-only or
    /// unwritable caches, or an entry over the format's limits.
    bool store(const Entry& entry);

    /// The memo of @p signature (memo_store.hpp), verified (a regular file this user trusts,
    /// opened without following links, every byte under its hash); nullopt otherwise, and for a
    /// disabled or remote-only cache. A hit refreshes the memo's modification time and counts as
    /// a hit; a miss counts nothing (the entry lookup that follows does).
    /// @param signature the hash of everything that decides a generated kernel's source.
    /// @return the memo, or nullopt.
    std::optional<Memo> load_memo(const Key& signature);
    /// Publish @p memo under @p signature (atomic, never through a planted link). Its bytes count
    /// towards the size limit and eviction removes it as it removes entries.
    /// @param signature the memo's signature.
    /// @param memo what the signature leads to.
    /// @return false when it could not: disabled, read-only, remote-only or unwritable caches, a
    /// name or cubin empty or over the limits (memo_store.hpp), a write error.
    bool store_memo(const Key& signature, const Memo& memo);
    /// Where the memo of @p signature lives (`<dir>/<ab>/<signature>.memo`).
    /// @param signature the memo's signature.
    /// @return the path, whether or not the file exists.
    std::filesystem::path memo_path(const Key& signature) const;

    /// The driver rejected this entry's payload: remove it and count it as damaged (the remote
    /// copy is replaced when the kernel is next stored).
    /// @param key the entry's key.
    void invalidate(const Key& key);

    /// Wait, at most @p timeout, for this store's queued remote publishes and write-backs of
    /// remote hits, then add the remote counters to the directory's. `kiln compile` and
    /// `kiln warm` call it before they exit; a store's destruction waits once by itself, for at
    /// most one deadline. Never throws (a failure is warned about and gives false).
    /// @param timeout how long to wait at most.
    /// @return true when nothing is left to send (also without a remote tier).
    bool flush_remote(std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

    /// The remote tier's counters: those every process added to the cache directory plus this
    /// process's not yet added. Never throws: counters that cannot be read are left out.
    /// @return the counters; all zero when no process ever used a remote tier with this cache.
    RemoteStats remote_stats();

    /// Path where the entry's source lives when save_source is on (`<dir>/<ab>/<key>.cu`).
    /// @param key the entry's key.
    /// @return the path, whether or not the file exists.
    std::filesystem::path source_path(const Key& key) const;
    /// Write the source if missing (atomic).
    /// @param key the entry's key.
    /// @param source the CUDA source compiled under @p key.
    /// @return the path, or nullopt if it could not.
    std::optional<std::filesystem::path> save_source(const Key& key, std::string_view source);

    /// Cumulative statistics (shared across processes) plus a fresh count of entries and bytes.
    /// Includes this store's counts not yet written.
    /// @return the statistics; zeros for a directory that cannot be read.
    Stats stats();

    /// Write the counts this store keeps in memory to the directory now, for other processes
    /// (`kiln cache stats`) to see. A lookup writes no file: its hit or miss is written with the
    /// shard's next write, every 64 lookups, and when the store is destroyed (at exit for the
    /// global one). Never throws; what cannot be written stays in memory.
    void write_statistics() noexcept;
    /// Set the cumulative counters of every shard to zero (`kiln cache stats --zero`); entries
    /// are kept.
    /// @return false when some shard's counters could not be reset.
    bool zero_stats();

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

    /// What is wrong with the cache directory and its shards: missing or unreadable (fatal),
    /// not owned as it should be, shard directories that are links, files or unreadable.
    /// Never throws.
    /// @return the problems; empty when all is well.
    std::vector<DirProblem> check_dir();

    /// Runs the read path once over nothing real: an entry encoded and decoded in memory, and a
    /// lookup of a key no entry has (counted nowhere); and touches every page of the buffer
    /// lookups read entry files into. kiln::prepare() calls it beside the driver's loading, so
    /// that a process's first real lookup finds the code and that buffer paged in and its library
    /// calls bound. Never throws.
    void warm_up() noexcept;

    /// Reads the memos and entries this program's processes used last time into memory, with
    /// every check a lookup makes, so that the first lookup of each is answered without a file
    /// read; what this process uses is then filed under @p program for the next one when the
    /// store is destroyed (at exit for the global one). Only with Config::read_ahead and a local
    /// cache. kiln::prepare() calls it beside the driver's loading, with the main executable's
    /// build-id. A second call does nothing. Never throws: a list or file that is missing,
    /// damaged or untrusted is left to the lookups.
    /// @param program what identifies the program (any bytes; hashed into the list's name).
    void read_ahead(std::string_view program) noexcept;
    /// Calls @p visit with each cubin read ahead and not yet taken by a lookup, and the names of
    /// its kernels (a memo's one, an entry's recorded ones). kiln::Device loads them into a
    /// context it makes, so that each kernel's first call finds its module loaded. Never throws
    /// (an exception from @p visit ends the visit).
    /// @param visit called with a cubin's bytes and its kernels' names, both valid during the call
    /// only; it must not call into the store.
    void visit_read_ahead_cubins(
        const std::function<void(std::string_view cubin,
                                 const std::vector<std::string_view>& kernels)>& visit)
        const noexcept;

    /// Process-wide default store from the environment, created on first use.
    /// @return the store, alive until the end of the program.
    /// @throws kiln::ConfigError (on first use) when a KILN_CACHE_* variable does not parse.
    static Store& global();

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
    /// @param file the archive to write; replaced atomically.
    /// @return what was written, and the damaged entries left out.
    /// @throws kiln::Error when @p file cannot be written.
    TransferResult export_to(const std::filesystem::path& file);
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
    /// @return what was published, and what the cache already held.
    TransferResult import_from(const std::filesystem::path& file, const EntryCheck& check = {},
                               unsigned check_jobs = 1);
    /// @}

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln::cache
