#pragma once
// TLS for the Redis client (redis_client.cpp), through OpenSSL. A TlsContext per backend holds
// what its connections share (the certificates that verify servers, a client certificate), read
// and checked once; a TlsStream per connection runs over the connection's non-blocking socket.
// No step blocks: each moves bytes or says which way the socket must be ready before it runs
// again (OpenSSL's WANT_READ / WANT_WRITE, which a read or a write may each ask for), so the
// client's poll() loop keeps its one deadline per operation, the handshake included.
//
// The socket is driven through a BIO of Kiln's own that sends with MSG_NOSIGNAL: OpenSSL's socket
// BIO write()s, which raises SIGPIPE on a connection the server has closed.

#include "kiln/cache/remote.hpp"

#include <cstddef>
#include <memory>
#include <string>

struct ssl_ctx_st;
struct ssl_st;

namespace kiln::cache::detail {

/// Which way the socket must be ready before a step that asked to wait runs again.
enum class IoWait { read, write };

/// How one non-blocking step on a connection (plain or TLS) ended.
struct IoStep {
    enum class Status {
        done,    ///< `bytes` moved (a handshake: it is complete)
        wait,    ///< nothing moved: wait until the socket is ready for `wait`, then step again
        closed,  ///< the server closed the connection
        refused, ///< TLS: the server's certificate did not verify, or the server refused ours
        failed,  ///< any other error
    };
    Status status = Status::done;
    std::size_t bytes = 0;
    IoWait wait = IoWait::read;
    std::string message; ///< refused and failed: what happened, for a log line
};

/// What the TLS connections of one backend share, configured once.
class TlsContext {
  public:
    /// A context that verifies servers against @p config's CA file (else the system's store)
    /// and, when @p config names one, presents its client certificate.
    /// @throws kiln::ConfigError naming the variable of a file that cannot be read or holds no
    /// usable PEM (a key that is encrypted, or does not match its certificate).
    explicit TlsContext(const RemoteConfig& config);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

  private:
    friend class TlsStream;
    struct Free {
        void operator()(ssl_ctx_st* ctx) const noexcept;
    };
    std::unique_ptr<ssl_ctx_st, Free> m_ctx;
};

/// One TLS connection over a connected, non-blocking socket that it does not own.
class TlsStream {
  public:
    TlsStream() = default;
    TlsStream(TlsStream&&) noexcept = default;
    TlsStream& operator=(TlsStream&&) noexcept = default;
    ~TlsStream() = default;

    /// A stream over @p fd (which must outlive it) to @p host: the certificate must name
    /// @p host, or for a numeric address hold it as an IP subject alternative name; a host name
    /// is also sent as SNI. Empty, with @p error set, when OpenSSL cannot make one.
    static TlsStream open(const TlsContext& context, int fd, const std::string& host,
                          std::string& error);
    explicit operator bool() const noexcept { return static_cast<bool>(m_ssl); }

    /// One step of the handshake: done once it is complete and the server verified.
    IoStep handshake();
    /// Decrypted bytes into @p buffer (up to @p size). Call again until it asks to wait before
    /// polling: bytes already decrypted do not show on the socket.
    IoStep read(char* buffer, std::size_t size);
    /// Bytes from @p data (up to @p size) sent encrypted; after a wait, call again with the same
    /// bytes.
    IoStep write(const char* data, std::size_t size);

  private:
    struct Free {
        void operator()(ssl_st* ssl) const noexcept;
    };
    std::unique_ptr<ssl_st, Free> m_ssl;
};

} // namespace kiln::cache::detail
