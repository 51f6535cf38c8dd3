#pragma once
/// @file
/// The on-disk cache: sharded directory of self-contained entries, atomic publish, verified
/// reads, LRU size bound, statistics shared across processes. It never throws for a cache
/// failure: a broken directory degrades to "no cache" with one warning.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

struct Config {
    std::filesystem::path dir;
    bool disabled = false;      ///< KILN_CACHE_DISABLE: memory only
    bool readonly = false;      ///< KILN_CACHE_READONLY: serve hits, never write
    bool save_source = false;   ///< KILN_CACHE_SAVE_SOURCE: keep <key>.cu beside each entry
    bool shared = false;        ///< KILN_CACHE_SHARED: group-writable team cache (0770 / 0660)
    std::uint64_t max_size = std::uint64_t{2} << 30; ///< KILN_CACHE_MAX_SIZE

    /// From the environment (DESIGN.md's table). @throws kiln::ConfigError for unparsable values.
    static Config from_environment();
};

struct Stats {
    std::uint64_t hits = 0, misses = 0, damaged = 0, evicted = 0, stores = 0;
    std::uint64_t entries = 0, bytes = 0;
};

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

    /// Process-wide default store from the environment, created on first use.
    static Store& global();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln::cache
