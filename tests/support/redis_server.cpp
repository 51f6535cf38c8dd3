#include "redis_server.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h> // NOLINT(modernize-deprecated-headers): POSIX kill(), not in <csignal>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kiln::test {

namespace {

int connect_to(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

class Reader {
  public:
    explicit Reader(int fd)
        : m_fd(fd) {}
    std::string line() {
        std::string out;
        for (;;) {
            char c = next();
            if (c == '\r') {
                next(); // '\n'
                return out;
            }
            out += c;
        }
    }
    std::string bytes(std::size_t n) {
        std::string out;
        out.reserve(n);
        while (out.size() < n)
            out += next();
        return out;
    }

  private:
    char next() {
        if (m_pos == m_buffer.size()) {
            m_buffer.resize(65536);
            const ssize_t n = ::recv(m_fd, m_buffer.data(), m_buffer.size(), 0);
            if (n <= 0) throw std::runtime_error("redis test client: no reply");
            m_buffer.resize(static_cast<std::size_t>(n));
            m_pos = 0;
        }
        return m_buffer[m_pos++];
    }
    int m_fd;
    std::string m_buffer;
    std::size_t m_pos = 0;
};

RedisServer::Reply read_reply(Reader& reader, bool nested) {
    RedisServer::Reply reply;
    const std::string line = reader.line();
    if (line.empty()) throw std::runtime_error("redis test client: empty line");
    reply.type = line[0];
    const std::string rest = line.substr(1);
    switch (reply.type) {
    case '+':
    case '-':
        reply.text = rest;
        break;
    case ':':
        reply.integer = std::stoll(rest);
        break;
    case '$': {
        const long long n = std::stoll(rest);
        if (n < 0) {
            reply.nil = true;
            break;
        }
        reply.text = reader.bytes(static_cast<std::size_t>(n));
        reader.bytes(2);
        break;
    }
    case '*': {
        const long long n = std::stoll(rest);
        for (long long i = 0; i < n; ++i) {
            auto element = read_reply(reader, true);
            if (!nested)
                reply.elements.push_back(element.type == ':' ? std::to_string(element.integer)
                                                             : element.text);
        }
        break;
    }
    default:
        throw std::runtime_error("redis test client: not RESP");
    }
    return reply;
}

void send_command(int fd, const std::vector<std::string>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& arg : args)
        out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
    std::size_t sent = 0;
    while (sent < out.size()) {
        const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) throw std::runtime_error("redis test client: send failed");
        sent += static_cast<std::size_t>(n);
    }
}

} // namespace

std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
        if (fd >= 0) ::close(fd);
        throw std::runtime_error("no free port on 127.0.0.1");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

std::optional<std::string> RedisServer::executable() {
    std::vector<std::string> dirs;
    if (const char* path = std::getenv("PATH")) {
        std::stringstream in(path);
        std::string dir;
        while (std::getline(in, dir, ':'))
            if (!dir.empty()) dirs.push_back(dir);
    }
    dirs.emplace_back("/usr/bin");
    dirs.emplace_back("/usr/sbin");
    for (const auto& dir : dirs) {
        const std::string candidate = dir + "/redis-server";
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return std::nullopt;
}

std::unique_ptr<RedisServer> RedisServer::start_or_skip(const std::vector<std::string>& extra) {
    if (!executable()) {
        // GTEST_SKIP() without its `return`, which only compiles in a void function.
        ::testing::internal::AssertHelper(::testing::TestPartResult::kSkip, __FILE__, __LINE__,
                                          "redis-server is not installed (scripts/setup.sh "
                                          "installs it); the remote cache tests need a real "
                                          "server") = ::testing::Message();
        return nullptr;
    }
    try {
        return std::make_unique<RedisServer>(extra);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "cannot start redis-server: " << e.what();
        return nullptr;
    }
}

std::unique_ptr<RedisServer> RedisServer::start_tls_or_skip(const Tls& tls,
                                                            const std::vector<std::string>& extra) {
    if (!executable()) return start_or_skip(extra); // skips
    try {
        return std::make_unique<RedisServer>(extra, tls);
    } catch (const std::exception& e) {
        // A redis-server built without TLS refuses the TLS options at start: skip, with its words.
        const std::string why = e.what();
        if (why.find("TLS") != std::string::npos &&
            (why.find("not supported") != std::string::npos ||
             why.find("BUILD_TLS") != std::string::npos ||
             why.find("Bad directive") != std::string::npos)) {
            const std::string message = "this redis-server cannot listen with TLS: " + why;
            ::testing::internal::AssertHelper(::testing::TestPartResult::kSkip, __FILE__, __LINE__,
                                              message.c_str()) = ::testing::Message();
            return nullptr;
        }
        ADD_FAILURE() << "cannot start redis-server with TLS: " << why;
        return nullptr;
    }
}

RedisServer::RedisServer(const std::vector<std::string>& extra, std::optional<Tls> tls)
    : m_extra(extra)
    , m_tls(std::move(tls)) {
    auto found = executable();
    if (!found) throw std::runtime_error("redis-server is not installed");
    m_executable = *found;
    std::string last_error;
    for (int attempt = 0; attempt < 5; ++attempt) {
        m_port = free_port();
        if (m_tls) m_tls_port = free_port();
        try {
            launch();
            return;
        } catch (const std::exception& e) {
            last_error = e.what();
        }
    }
    throw std::runtime_error(last_error);
}

RedisServer::~RedisServer() {
    stop();
}

std::string RedisServer::url() const {
    return "redis://127.0.0.1:" + std::to_string(m_port);
}

std::string RedisServer::tls_url() const {
    return "rediss://127.0.0.1:" + std::to_string(m_tls_port);
}

void RedisServer::launch() {
    std::vector<std::string> args = {m_executable,
                                     "--port",
                                     std::to_string(m_port),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--dir",
                                     m_dir.path().string(),
                                     "--logfile",
                                     (m_dir / "redis.log").string(),
                                     "--daemonize",
                                     "no"};
    if (m_tls) {
        const std::vector<std::string> tls = {
            "--tls-port",         std::to_string(m_tls_port),
            "--tls-cert-file",    m_tls->cert.string(),
            "--tls-key-file",     m_tls->key.string(),
            "--tls-ca-cert-file", m_tls->ca.string(),
            "--tls-auth-clients", m_tls->auth_clients ? "yes" : "no"};
        args.insert(args.end(), tls.begin(), tls.end());
    }
    args.insert(args.end(), m_extra.begin(), m_extra.end());
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& arg : args)
        argv.push_back(arg.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    m_pid = pid;
    m_paused = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            throw std::runtime_error("redis-server exited at start (port " +
                                     std::to_string(m_port) +
                                     " taken?); its log: " + read_file(m_dir / "redis.log"));
        }
        const int fd = connect_to(m_port);
        if (fd >= 0) {
            ::close(fd);
            try {
                Reply reply = call({"PING"});
                if (reply.type == '+' || reply.type == '-') return; // '-': it asks for a password
            } catch (const std::exception&) {
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop();
    throw std::runtime_error("redis-server did not answer PING within 10 s");
}

void RedisServer::stop() noexcept {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGCONT);
    ::kill(m_pid, SIGTERM);
    for (int i = 0; i < 400; ++i) {
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(m_pid, SIGKILL);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
}

void RedisServer::pause() {
    if (m_pid > 0 && ::kill(m_pid, SIGSTOP) == 0) {
        // Wait until it is really stopped, so a test's next request meets a frozen server.
        int status = 0;
        ::waitpid(m_pid, &status, WUNTRACED);
        m_paused = true;
    }
}

void RedisServer::resume() {
    if (m_pid > 0) ::kill(m_pid, SIGCONT);
    m_paused = false;
}

void RedisServer::kill() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
}

void RedisServer::restart() {
    stop();
    std::string last_error;
    for (int attempt = 0; attempt < 100; ++attempt) {
        try {
            launch();
            return;
        } catch (const std::exception& e) {
            last_error = e.what();
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    throw std::runtime_error("cannot restart redis-server: " + last_error);
}

RedisServer::Reply RedisServer::call(const std::vector<std::string>& args,
                                     const std::string& password) const {
    const int fd = connect_to(m_port);
    if (fd < 0)
        throw std::runtime_error("cannot connect to redis-server: " +
                                 std::string(std::strerror(errno)));
    try {
        Reader reader(fd);
        if (!password.empty()) {
            send_command(fd, {"AUTH", password});
            read_reply(reader, false);
        }
        send_command(fd, args);
        Reply reply = read_reply(reader, false);
        ::close(fd);
        return reply;
    } catch (...) {
        ::close(fd);
        throw;
    }
}

} // namespace kiln::test
