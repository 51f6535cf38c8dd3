#pragma once
/// @file
/// The remote tier of the kernel cache: Redis, consulted after memory and the local directory,
/// over plain TCP (`redis://`) or TLS (`rediss://`, the server's certificate verified).
/// It holds the same one-file entries as the directory and verifies them the same way. Every
/// operation has a deadline; a server that is down, slow, full or refuses authentication costs a
/// caller at most one deadline and is then skipped (circuit breaker) until a background probe
/// finds it well again. Nothing here ever throws for a remote failure.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// KILN_REMOTE_CACHE_MODE.
enum class RemoteMode {
    read_write,  ///< read hits, publish new entries (default)
    read_only,   ///< read hits, never write (untrusted jobs)
    remote_only, ///< no local directory at all: memory, then Redis
};
/// The mode as KILN_REMOTE_CACHE_MODE spells it.
/// @param mode the mode.
/// @return `"read-write"`, `"read-only"` or `"remote-only"` (a static string).
const char* to_string(RemoteMode mode);

/// Where and how to reach the Redis server.
struct RemoteConfig {
    /// The backend that speaks to the server. `redis` is the only one today (for `redis://` and
    /// `rediss://` URLs alike).
    std::string scheme = "redis";
    /// `rediss://`: TLS, the server's certificate verified against #ca_file (or the system's
    /// store) and its name, or for a numeric address an IP subject alternative name.
    bool tls = false;
    /// KILN_REMOTE_CACHE_CA_FILE: PEM certificates the server's must chain to; empty: the
    /// system's store. TLS only.
    std::string ca_file;
    /// KILN_REMOTE_CACHE_CERT_FILE: a PEM client certificate (then its chain), for a server that
    /// asks for one; set with #key_file or not at all. TLS only.
    std::string cert_file;
    /// KILN_REMOTE_CACHE_KEY_FILE: the unencrypted PEM private key of #cert_file, which others
    /// may not read. TLS only.
    std::string key_file;
    /// The server's host name or address (an IPv6 address without brackets).
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;                ///< the server's TCP port
    int db = 0;                               ///< the database SELECT picks
    std::string user;                         ///< empty: AUTH with the password only (or no AUTH)
    std::string password;                     ///< empty: no AUTH
    RemoteMode mode = RemoteMode::read_write; ///< KILN_REMOTE_CACHE_MODE
    /// KILN_REMOTE_CACHE_TTL: expiry of published entries; zero means none.
    std::chrono::seconds ttl{0};
    /// KILN_REMOTE_CACHE_CONNECT_TIMEOUT: connecting and authenticating.
    std::chrono::milliseconds connect_timeout{100};
    /// KILN_REMOTE_CACHE_TIMEOUT: each operation (a lookup, a publish, a probe).
    std::chrono::milliseconds op_timeout{50};
    /// KILN_REMOTE_CACHE_RETRY: how long a failed server is skipped before a background probe.
    std::chrono::milliseconds retry_interval{30000};

    /// Parse `redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS (user and
    /// password percent-decoded; an IPv6 address in brackets; the port is 6379 either way). Only
    /// the address part and #tls are set; the rest keeps its defaults.
    /// The error message never shows the credentials.
    /// @param url the URL.
    /// @param what where the URL came from, for the error message (e.g. `"KILN_REMOTE_CACHE"`).
    /// @return the configuration with host, port, db, user and password from @p url.
    /// @throws kiln::ConfigError naming @p what when it does not parse.
    static RemoteConfig parse_url(std::string_view url, const std::string& what);

    /// From KILN_REMOTE_CACHE and its companions (docs/environment.md). The companions are
    /// checked even when KILN_REMOTE_CACHE is unset, so a typo shows at once. The TLS files are
    /// read when a backend is made (Store's constructor), not here.
    /// @return the configuration, or nullopt when KILN_REMOTE_CACHE is unset.
    /// @throws kiln::ConfigError naming the variable whose value does not parse, a password
    /// file that cannot be read, a client certificate without its key (or a key without its
    /// certificate), or TLS files given for a `redis://` URL.
    static std::optional<RemoteConfig> from_environment();

    /// The address for messages and `kiln cache` output.
    /// @return `redis://user@host:port/db` (`rediss://` with TLS; no user part without a user),
    /// never the password.
    std::string display_url() const;
};

/// The remote tier's counters. A damaged value counts as a miss and as damaged; a lookup skipped
/// because the breaker is open counts as skipped (not as a miss).
struct RemoteStats {
    /// @{
    /// `hits`: lookups that found a verified entry; `misses`: lookups that did not; `damaged`:
    /// values found that did not verify.
    std::uint64_t hits = 0, misses = 0, damaged = 0;
    /// @}
    /// Misses for want of a trusted signature (KILN_TRUSTED_KEYS): values no trusted key signed.
    std::uint64_t untrusted = 0;
    std::uint64_t errors = 0;   ///< failed operations: refused, closed, protocol, server errors
    std::uint64_t timeouts = 0; ///< operations past their deadline
    std::uint64_t skipped = 0;  ///< lookups and publishes not tried while the breaker was open
    std::uint64_t stores = 0;   ///< entries published (SET done; an existing key counts too)
    /// @{
    /// `bytes_read`: entry bytes fetched; `bytes_written`: entry bytes published.
    std::uint64_t bytes_read = 0, bytes_written = 0;
    /// @}

    /// Adds every counter of @p other to this one's.
    /// @param other the counters to add.
    /// @return this.
    RemoteStats& operator+=(const RemoteStats& other);
};

/// What `kiln cache remote ping` reports.
struct RemotePing {
    bool ok = false;            ///< connected, authenticated and answered PING
    std::string error;          ///< why not, when !ok
    double latency_ms = 0;      ///< the PING round trip, after connecting
    double connect_ms = 0;      ///< connecting, AUTH and SELECT
    std::string server_version; ///< redis_version from INFO, when it could be read
};

/// Connect (AUTH, SELECT) and PING, with deadlines of at least @p at_least each (a check by hand
/// may be slower than the tier's own deadlines allow). Never throws.
/// @param config the server to check; its deadlines are raised to @p at_least where shorter.
/// @param at_least the shortest deadline for connecting and for each command.
/// @return the outcome: `ok` with the timings, or the reason in `error`.
RemotePing ping_remote(const RemoteConfig& config,
                       std::chrono::milliseconds at_least = std::chrono::milliseconds(2000));

/// Server-side figures for `kiln cache remote stats`.
struct RemoteServerInfo {
    bool ok = false;               ///< every figure was read
    std::string error;             ///< why not, when !ok (the figures read before stay set)
    std::uint64_t kiln_keys = 0;   ///< keys under Kiln's prefix in the selected database
    std::uint64_t used_memory = 0; ///< bytes, from INFO memory
    std::uint64_t max_memory = 0;  ///< 0: no limit
    std::string eviction_policy;   ///< maxmemory_policy
    std::string server_version;    ///< redis_version from INFO, when it could be read
};

/// Count Kiln's keys (SCAN, in steps that each have their own deadline, so a large database
/// never blocks the server) and read INFO. Never throws.
/// @param config the server to ask; its deadlines are raised to @p at_least where shorter.
/// @param at_least the shortest deadline for connecting and for each command.
/// @return the figures: `ok`, or the reason in `error`.
RemoteServerInfo
remote_server_info(const RemoteConfig& config,
                   std::chrono::milliseconds at_least = std::chrono::milliseconds(2000));

/// The Redis key of a cache key: this prefix and the key's 32 hex digits.
inline constexpr std::string_view kRemoteKeyPrefix = "kiln:";

} // namespace kiln::cache
