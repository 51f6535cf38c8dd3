#pragma once
// A private redis-server for tests: started on 127.0.0.1 on a free port, in a temporary
// directory, with no persistence (--save '' --appendonly no), and stopped on destruction.
// Tests that need one skip (GTEST_SKIP) where redis-server is not installed:
//
//   auto server = kiln::test::RedisServer::start_or_skip();  // in a TEST body
//   if (!server) return;                                      // skipped, with the reason
//
// It also pauses (SIGSTOP), resumes, kills and restarts the server, and sends commands through a
// small blocking client of its own (independent of the code under test), always on the plain TCP
// port: a server started with TLS listens on a second port too (tls_port(), tls_url()).

#include "temp_dir.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::test {

class RedisServer {
  public:
    /// One reply: type is the RESP type byte ('+', '-', ':', '$', '*'); nil bulk is '$' with
    /// nil set. Array elements are flattened into `elements` (one level).
    struct Reply {
        char type = 0;
        bool nil = false;
        std::string text;
        long long integer = 0;
        std::vector<std::string> elements;
    };

    /// The redis-server executable (PATH, then /usr/bin, /usr/sbin), or nullopt.
    static std::optional<std::string> executable();

    /// A started server, or nullptr after GTEST_SKIP() when redis-server is not installed (the
    /// caller returns). A server that cannot be started fails the test (ADD_FAILURE) and also
    /// gives nullptr.
    static std::unique_ptr<RedisServer> start_or_skip(const std::vector<std::string>& extra = {});

    /// What a server needs to listen with TLS too (see test_certs.hpp for making the files).
    struct Tls {
        std::filesystem::path cert; ///< the server's certificate (PEM)
        std::filesystem::path key;  ///< its private key
        std::filesystem::path ca;   ///< the CA that clients' certificates must chain to
        bool auth_clients = false;  ///< --tls-auth-clients yes: clients must show a certificate
    };

    /// A started server that also listens with @p tls on tls_port(), or nullptr after
    /// GTEST_SKIP() when redis-server is not installed or was built without TLS; as
    /// start_or_skip() otherwise.
    static std::unique_ptr<RedisServer>
    start_tls_or_skip(const Tls& tls, const std::vector<std::string>& extra = {});

    /// Start one (@p extra: more redis-server arguments; @p tls: a TLS port too). @throws
    /// std::runtime_error when it does not answer PING within a few seconds.
    explicit RedisServer(const std::vector<std::string>& extra = {},
                         std::optional<Tls> tls = std::nullopt);
    ~RedisServer();
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    std::uint16_t port() const { return m_port; }
    /// redis://127.0.0.1:PORT
    std::string url() const;
    /// The TLS port; 0 for a server started without TLS.
    std::uint16_t tls_port() const { return m_tls_port; }
    /// rediss://127.0.0.1:TLS_PORT
    std::string tls_url() const;
    pid_t pid() const { return m_pid; }

    void pause();   ///< SIGSTOP: the server stops answering, connections stay open
    void resume();  ///< SIGCONT
    void kill();    ///< SIGKILL, and wait for it
    void restart(); ///< start again on the same port (after kill()), empty

    /// Send one command and wait (a few seconds at most) for its reply. @p password is used for
    /// AUTH first when not empty. @throws std::runtime_error when there is no reply.
    Reply call(const std::vector<std::string>& args, const std::string& password = {}) const;
    /// CONFIG SET @p name @p value (e.g. maxmemory, requirepass); false when refused.
    bool config_set(const std::string& name, const std::string& value,
                    const std::string& password = {}) const {
        return call({"CONFIG", "SET", name, value}, password).type == '+';
    }

  private:
    void launch();
    void stop() noexcept;

    TempDir m_dir;
    std::vector<std::string> m_extra;
    std::optional<Tls> m_tls;
    std::string m_executable;
    std::uint16_t m_port = 0;
    std::uint16_t m_tls_port = 0;
    pid_t m_pid = -1;
    bool m_paused = false;
};

/// A free TCP port on 127.0.0.1 (bound and released; a race with other processes is possible,
/// so starters retry).
std::uint16_t free_port();

} // namespace kiln::test
