#pragma once
// What the remote tier (tier.hpp) asks of a server, whatever the server is: one small interface
// that each backend implements in a file of its own (redis_backend.cpp first), so that a second
// kind of server is a new file and one line in make_backend(), never a change to the tier. The
// tier keeps the policy (keys, deadlines, the breaker, counting, what a failure means for the
// cache); a backend keeps the wire: its connections (pooled, reconnected, encrypted below it),
// its requests and how it reads their replies.
//
// Every operation has a deadline and reports a failure as a typed Failure, never by throwing; a
// backend may be called from several threads at once. Keys and values are bytes: what a value
// means is the tier's business.
//
//   get         a value, with its size known before its bytes are read (SizeGate): a caller can
//               refuse an oversized value unread, or give a large one a later deadline
//   put         write a value, optionally only where the key is absent and with a time to live
//   remove      delete a key
//   claim       hold a key for a short lease, the first caller only (one compile per key across
//               hosts: the others wait for the value instead of compiling it too)
//   renew       extend a lease, only while the caller still holds it
//   release     end a lease early, only while the caller still holds it
//   ping        a fresh connection and one round trip: is the server there now
//   info        the server's version, memory and eviction policy (`kiln cache remote stats`)
//   count_keys  how many keys start with a prefix, in steps that never block the server
//   reset       forget idle connections (the server failed: nothing from before is reused)

#include "kiln/cache/remote.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace kiln::cache::remote {

using Clock = std::chrono::steady_clock;

/// The step that fails while a connection is made (connecting, authenticating, selecting).
inline constexpr std::string_view kConnectStep = "connect";

/// Why an operation did not complete.
struct Failure {
    enum class Kind {
        timeout,     ///< the deadline passed first
        unreachable, ///< no connection: unresolvable, refused, reset, closed by the server
        refused,     ///< connected, but the server refused the credentials or the database
        too_large,   ///< a value its SizeGate refused (its bytes were not read)
        protocol,    ///< a reply that does not parse, or not one the request can have
        full,        ///< the server is out of memory for writes (reads still work)
        wrong_type,  ///< the key holds something that is not a plain value
        server,      ///< any other error the server reported
    };
    Kind kind = Kind::protocol;
    /// What failed: kConnectStep, or the backend's name for the request (e.g. "GET").
    std::string step;
    /// How, for a log line: the backend's words, or the server's for an error it reported.
    std::string message;

    /// Whether it failed while making the connection, before the request was sent.
    bool connecting() const { return step == kConnectStep; }
};

/// The kind's name, e.g. `"timeout"`.
const char* to_string(Failure::Kind kind);

/// A value, or the Failure that stopped the operation.
template <class T> class Result {
  public:
    // Implicit, so that an operation returns its value or its failure as it is.
    Result(T value) // NOLINT(google-explicit-constructor): see above
        : m_value(std::move(value)) {}
    Result(Failure failure) // NOLINT(google-explicit-constructor): see above
        : m_failure(std::move(failure)) {}

    bool ok() const noexcept { return m_value.has_value(); }
    /// Only when ok().
    T& value() { return *m_value; }
    const T& value() const { return *m_value; }
    /// Only when !ok().
    const Failure& failure() const noexcept { return m_failure; }

  private:
    std::optional<T> m_value;
    Failure m_failure;
};

/// How long one operation may take. A connection it has to make first has `connect` from the
/// start; the request and its reply have `reply` from when it is sent (a slow connection does not
/// eat into the reply's time); and nothing runs past `at_most` (a process's exit deadline).
struct Deadline {
    Clock::duration connect{};
    Clock::duration reply{};
    Clock::time_point at_most = Clock::time_point::max();

    /// When a connection made now must be ready.
    Clock::time_point connect_by() const { return std::min(Clock::now() + connect, at_most); }
    /// When a request sent now must have its reply.
    Clock::time_point reply_by() const { return std::min(Clock::now() + reply, at_most); }
};

/// Called once by get() when the value's size is known and before its bytes are read, with the
/// size and the deadline in force: returns the deadline to read the bytes by (the one given, to
/// keep it), or nullopt to refuse the value (get() then fails with Kind::too_large).
using SizeGate =
    std::function<std::optional<Clock::time_point>(std::uint64_t size, Clock::time_point by)>;

/// How put() writes.
struct PutOptions {
    bool only_if_absent = false;      ///< leave a value that is there already
    std::chrono::milliseconds ttl{0}; ///< expire after this long; zero: never
};

/// What ping() measured.
struct Pong {
    Clock::duration connect{};    ///< making the connection (with its authentication)
    Clock::duration round_trip{}; ///< the request and its reply, once connected
};

/// What info() read.
struct ServerInfo {
    std::string version;           ///< the server's version, empty when it did not say
    std::uint64_t used_memory = 0; ///< bytes
    std::uint64_t max_memory = 0;  ///< bytes; 0 means no limit
    std::string eviction_policy;   ///< what the server drops when full, in its own words
};

class Backend {
  public:
    virtual ~Backend() = default;

    /// The value under @p key; nullopt inside an ok result when there is none. @p gate (when
    /// set) sees the size first; without one, any size is read.
    virtual Result<std::optional<std::string>> get(std::string_view key, const Deadline& deadline,
                                                   const SizeGate& gate) = 0;
    /// Write @p value under @p key. True when written; false when PutOptions::only_if_absent
    /// found a value there (which is kept).
    virtual Result<bool> put(std::string_view key, std::string_view value,
                             const PutOptions& options, const Deadline& deadline) = 0;
    /// Remove @p key. True when there was one.
    virtual Result<bool> remove(std::string_view key, const Deadline& deadline) = 0;
    /// Hold @p key for @p lease (at least a millisecond), writing @p owner under it, when no one
    /// holds it: true for the caller that got it, false while another's lease runs. The lease
    /// ends by itself; remove() ends it early.
    virtual Result<bool> claim(std::string_view key, std::string_view owner,
                               std::chrono::milliseconds lease, const Deadline& deadline) = 0;
    /// Extend the lease on @p key to @p lease from now, only when @p owner still holds it: true
    /// when extended, false when the lease had ended (or another caller holds it now).
    virtual Result<bool> renew(std::string_view key, std::string_view owner,
                               std::chrono::milliseconds lease, const Deadline& deadline) = 0;
    /// End the lease on @p key now, only when @p owner holds it: true when it ended here, false
    /// when it had ended already (another caller's lease is left alone).
    virtual Result<bool> release(std::string_view key, std::string_view owner,
                                 const Deadline& deadline) = 0;
    /// Make a fresh connection and make one round trip on it.
    virtual Result<Pong> ping(const Deadline& deadline) = 0;
    /// The server's version, memory and eviction policy.
    virtual Result<ServerInfo> info(const Deadline& deadline) = 0;
    /// How many keys start with @p prefix, counted in steps that each have Deadline::reply.
    virtual Result<std::uint64_t> count_keys(std::string_view prefix, const Deadline& deadline) = 0;
    /// Forget idle connections: the next operation connects afresh.
    virtual void reset() noexcept = 0;
};

/// The backend for @p config's scheme (RemoteConfig::scheme): `redis` (redis_backend.hpp).
/// Makes no connection.
/// @throws kiln::ConfigError for a scheme no backend speaks, or TLS files it cannot use.
std::unique_ptr<Backend> make_backend(const RemoteConfig& config);

} // namespace kiln::cache::remote
