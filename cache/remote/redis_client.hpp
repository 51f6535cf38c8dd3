#pragma once
// A small Redis client for the Redis backend (redis_backend.cpp): one non-blocking TCP
// connection, TLS over it for rediss:// (tls_stream.hpp), commands sent with send(MSG_NOSIGNAL)
// (never SIGPIPE), replies read as they arrive and poll() only when nothing has, against one
// deadline per operation (not per system call), and its own RESP2 reply parser with size limits.
// Nothing throws; every failure closes the connection, since its state is then unknown.

#include "kiln/cache/remote.hpp"

#include "local/fs.hpp"

#include "tls_stream.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache::detail {

using Clock = std::chrono::steady_clock;

/// One RESP2 reply.
struct RedisReply {
    enum class Type { nil, status, error, integer, bulk, array };
    Type type = Type::nil;
    std::string text; ///< status, error and bulk replies
    std::int64_t integer = 0;
    std::vector<RedisReply> elements;

    bool is_error() const { return type == Type::error; }
    bool is_status(std::string_view status) const { return type == Type::status && text == status; }
};

/// How an exchange with the server ended.
enum class RedisStatus {
    ok,        ///< a reply arrived (it may be a Redis error reply)
    timeout,   ///< the deadline passed first
    failed,    ///< no connection, refused, closed or reset
    refused,   ///< connected, but TLS, AUTH or SELECT refused it (RedisResult::message says how)
    too_large, ///< a bulk reply over the limit (not read; the connection is closed)
    protocol,  ///< the server sent bytes that are not a RESP reply, or more than one
};

/// Decides, once a bulk reply's length is known and before its bytes are read, by when to read
/// them (given the length and the deadline in force), or nullopt to refuse it (too_large).
using BulkGate =
    std::function<std::optional<Clock::time_point>(std::uint64_t size, Clock::time_point by)>;

struct RedisResult {
    RedisStatus status = RedisStatus::failed;
    RedisReply reply;    ///< when ok
    std::string message; ///< when not ok: what went wrong, for a log line
    bool ok() const { return status == RedisStatus::ok; }
};

/// Parse one RESP2 reply from @p buffer at @p pos. Returns 1 with @p pos past it, 0 when more
/// bytes are needed, -1 when the bytes are not RESP or break a limit (arrays deeper than a few
/// levels or longer than a million elements), -2 for a bulk string over @p max_bulk bytes.
int parse_reply(std::string_view buffer, std::size_t& pos, std::uint64_t max_bulk,
                RedisReply& reply);

class RedisClient {
  public:
    RedisClient() = default;
    RedisClient(RedisClient&&) noexcept = default;
    RedisClient& operator=(RedisClient&&) noexcept = default;

    /// Connect to the configured server, then the TLS handshake (RemoteConfig::tls, with
    /// @p tls, which must outlive the connection), AUTH and SELECT as it asks, all before
    /// @p deadline.
    RedisResult connect(const RemoteConfig& config, Clock::time_point deadline,
                        const TlsContext* tls = nullptr);
    bool connected() const noexcept { return static_cast<bool>(m_fd); }
    void close() noexcept;

    /// Send one command and read its reply before @p deadline. A bulk reply over @p max_bulk
    /// bytes fails (and closes the connection) without being read whole.
    RedisResult command(std::initializer_list<std::string_view> args, Clock::time_point deadline,
                        std::uint64_t max_bulk = kDefaultMaxBulk);
    RedisResult command(const std::vector<std::string_view>& args, Clock::time_point deadline,
                        std::uint64_t max_bulk = kDefaultMaxBulk);
    /// Send one command and read its reply; a bulk reply's length goes through @p gate before its
    /// bytes are read (an empty gate takes any length).
    RedisResult command(const std::vector<std::string_view>& args, Clock::time_point deadline,
                        const BulkGate& gate);

    static constexpr std::uint64_t kDefaultMaxBulk = std::uint64_t{1} << 20;

  private:
    RedisResult fail(RedisStatus status, std::string message);
    /// The failure @p step (neither done nor wait) stands for; @p what names the step.
    RedisResult fail(const IoStep& step, const char* what);
    /// poll() until the socket is ready for @p wait; a timeout (@p what: what timed out) when
    /// @p deadline passes first.
    RedisResult await(IoWait wait, Clock::time_point deadline, const char* what);
    /// One non-blocking read or write on the connection, plain or TLS.
    IoStep read_some(char* buffer, std::size_t size);
    IoStep write_some(std::string_view bytes);
    RedisResult send_all(std::string_view bytes, Clock::time_point deadline);
    RedisResult read_reply(Clock::time_point deadline, std::uint64_t max_bulk,
                           const BulkGate* gate);

    UniqueFd m_fd;
    TlsStream m_tls;  ///< over m_fd for rediss://; declared after it, so it ends first
    std::string m_in; ///< bytes received and not yet parsed
};

} // namespace kiln::cache::detail
