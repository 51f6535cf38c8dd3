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

struct Config {
    std::filesystem::path dir;
    bool disabled = false;    ///< KILN_CACHE_DISABLE: memory only
    bool readonly = false;    ///< KILN_CACHE_READONLY: serve hits, never write
    bool save_source = false; ///< KILN_CACHE_SAVE_SOURCE: keep <key>.cu beside each entry
    bool shared = false;      ///< KILN_CACHE_SHARED: group-writable team cache (2770 / 0660)
    /// KILN_CACHE_MAX_SIZE: bytes of entries and sources together; 0 means no limit.
    std::uint64_t max_size = std::uint64_t{2} << 30;

    /// From the environment (the README's table), then the cache directory's settings file
    /// (kiln/cache/settings.hpp) for what no variable sets; a disabled cache reads no file.
    /// @throws kiln::ConfigError for unparsable values, naming the variable or the file.
    static Config from_environment();
};

/// Counters summed over every process that used the directory. A damaged entry counts as a
/// miss and as damaged; `entries` and `bytes` come from a fresh count of the directory.
struct Stats {
    std::uint64_t hits = 0, misses = 0, damaged = 0, evicted = 0, stores = 0;
    std::uint64_t entries = 0, bytes = 0;
};

/// One entry as `kiln cache ls` shows it.
struct EntryInfo {
    Key key;
    std::uint64_t size = 0;                      ///< bytes on disk: the entry plus its saved source
    std::chrono::system_clock::time_point mtime; ///< last store or hit
    std::string arch;
    std::string nvrtc_version;
    std::size_t kernel_count = 0; ///< kernel_names.size()
    /// Kernels in the cubin, `extern "C"` ones included, as the symbol table names them (C++
    /// ones mangled): recorded in the entry at compile time; for a version-1 entry read from the
    /// cubin, or its lowered names when the payload is not an ELF file.
    std::vector<std::string> kernel_names;
    std::uint64_t payload_size = 0;
    bool has_source = false;
    std::uint32_t format_version = kEntryFormatVersion; ///< the entry's format (1: an old entry)
    bool has_recipe = false; ///< the entry says what produced it (`kiln cache show`)
};

/// Something wrong with the cache directory itself or one of its shard directories.
struct DirProblem {
    std::filesystem::path path;
    std::string what;
    bool fatal = false; ///< the cache directory as a whole cannot be used (missing, unreadable)
};

/// What verify() found.
struct VerifyResult {
    std::uint64_t checked = 0, ok = 0, damaged = 0, removed = 0;
    /// Each damaged file and why.
    std::vector<std::pair<std::filesystem::path, std::string>> problems;
};

/// What prune() or clear() removed.
struct PruneResult {
    std::uint64_t entries = 0;     ///< entries (with their sources) removed
    std::uint64_t bytes = 0;       ///< bytes freed
    std::uint64_t temporaries = 0; ///< left-over temporaries of killed writers removed
};

/// What export_to() wrote or import_from() published.
struct TransferResult {
    /// Entries written (export) or newly published (import), sources likewise, and their bytes.
    std::uint64_t entries = 0, sources = 0, bytes = 0;
    std::uint64_t skipped = 0; ///< damaged entries left out of an export
    std::uint64_t present = 0; ///< import: entries the cache already held verified (left as is)
};

/// Checks one entry of an archive before import_from() publishes anything: returns "" to accept
/// it, else why it is refused (`kiln import --verify` compiles the entry's recipe again). May be
/// called from several threads at once; an exception it throws ends the import (nothing
/// published).
using EntryCheck = std::function<std::string(const Entry& entry)>;

class Store {
  public:
    explicit Store(Config config);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    const Config& config() const noexcept;

    /// A verified entry, or nullopt (miss, disabled, damaged: damaged entries are removed, counted
    /// and warned about once). A hit refreshes the entry's modification time.
    std::optional<Entry> load(const Key& key);

    /// Publish atomically. Returns false (with one warning per store) when it could not.
    bool store(const Entry& entry);

    /// The driver rejected this entry's payload: remove it and count it as damaged.
    void invalidate(const Key& key);

    /// Path where the entry's source lives when save_source is on (`<dir>/<ab>/<key>.cu`).
    std::filesystem::path source_path(const Key& key) const;
    /// Write the source if missing (atomic). Returns the path, or nullopt if it could not.
    std::optional<std::filesystem::path> save_source(const Key& key, std::string_view source);

    /// Cumulative statistics (shared across processes) plus a fresh count of entries and bytes.
    Stats stats();
    /// Set the cumulative counters of every shard to zero (`kiln cache stats --zero`); entries
    /// are kept. Returns false when some shard's counters could not be reset.
    bool zero_stats();

    /// Path of the compile time trace of @p key (`<dir>/<ab>/<key>.json`).
    std::filesystem::path trace_path(const Key& key) const;
    /// Publish NVRTC's time trace for @p key beside its entry (atomic, never through a planted
    /// link). Returns the path, or nullopt when the cache is disabled, read-only or unwritable.
    std::optional<std::filesystem::path> save_time_trace(const Key& key, std::string_view json);

    /// What is wrong with the cache directory and its shards: missing or unreadable (fatal),
    /// not owned as it should be, shard directories that are links, files or unreadable.
    /// Empty when all is well. Never throws.
    std::vector<DirProblem> check_dir();

    /// Process-wide default store from the environment, created on first use.
    /// @throws kiln::ConfigError (on first use) when a KILN_CACHE_* variable does not parse.
    static Store& global();

    /// @name Maintenance (the `kiln cache` commands)
    /// These work on Config::dir even when the store is disabled or read-only, since a user asks
    /// for them explicitly; they may take seconds on a large cache. They never throw for a
    /// damaged cache, only where noted.
    /// @{

    /// Every entry whose header verifies, in no particular order. Reads headers, not payloads.
    std::vector<EntryInfo> list();
    /// Read and verify every entry; with @p fix remove the damaged ones (counted as damaged).
    VerifyResult verify(bool fix);
    /// Remove entries last used before now - @p max_age (when given), then the least recently
    /// used until the cache holds at most @p max_size bytes; also stale temporaries.
    PruneResult prune(std::uint64_t max_size,
                      std::optional<std::chrono::seconds> max_age = std::nullopt);
    /// Remove every entry, source and temporary. Statistics counters are kept.
    PruneResult clear();
    /// The verified entry as stored, without counting a hit or touching its time; nullopt with
    /// the reason in @p why (when given) if it is missing or damaged.
    std::optional<Entry> peek(const Key& key, std::string* why = nullptr);
    /// The saved source of @p key, if there is one.
    std::optional<std::string> read_source(const Key& key);
    /// Write every verified entry and its source to one archive file (format in archive.cpp).
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
    TransferResult import_from(const std::filesystem::path& file, const EntryCheck& check = {},
                               unsigned check_jobs = 1);
    /// @}

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln::cache
