#pragma once
/// @file
/// Where the kernel cache lives and how it behaves. Its own header because every part of the
/// cache takes it: the lookup façade (kiln/cache/store.hpp), the directory's maintenance
/// (kiln/cache/local_store.hpp), the settings file (kiln/cache/settings.hpp) and the tuner's
/// records (kiln/cache/tuning_store.hpp); none of them needs the others to be configured.

#include "kiln/cache/remote.hpp"
#include "kiln/cache/signing.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

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
    /// KILN_COMPILE_WAIT: how long Store::load_or_claim() waits for another process's compile of
    /// the same key (its claim, in the directory or on the remote server) before this process
    /// compiles the key itself; zero: no claims, no waiting.
    std::chrono::milliseconds compile_wait{10000};
    /// KILN_REMOTE_CACHE and companions: the Redis tier after the directory
    /// (kiln/cache/remote.hpp). Not used when `disabled` (KILN_CACHE_DISABLE=1 means memory only).
    /// In remote-only mode the directory is neither read nor written by lookups and stores.
    std::optional<RemoteConfig> remote;
    /// KILN_SIGNING_KEY_FILE, loaded: what this process signs its entries, memos and lists with;
    /// null when unset. Only the environment sets it, never the directory's settings file.
    std::shared_ptr<const SigningKey> signing_key;
    /// KILN_TRUSTED_KEYS, loaded: with it, whatever did not come from this user's own compile
    /// into this user's private directory is used only when one of these keys signed it
    /// (docs/architecture.md, "What the cache trusts"); null when unset. Only the environment
    /// sets it, never the directory's settings file.
    std::shared_ptr<const TrustedKeys> trusted_keys;

    /// From the environment (docs/environment.md), then the cache directory's settings file
    /// (kiln/cache/settings.hpp) for what no variable sets; a disabled cache reads no file.
    /// Without a cache directory to use (no KILN_CACHE_DIR, XDG_CACHE_HOME or home directory) the
    /// cache is disabled.
    /// @return the configuration in force.
    /// @throws kiln::ConfigError for unparsable values, naming the variable or the file (a key
    /// file that cannot be read or parsed included).
    static Config from_environment();
};

} // namespace kiln::cache
