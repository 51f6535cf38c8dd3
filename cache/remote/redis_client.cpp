#include "redis_client.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kiln::cache::detail {

namespace {

constexpr int kMaxDepth = 4;
constexpr std::int64_t kMaxElements = 1000000;

// Milliseconds left before @p deadline, rounded up so a sub-millisecond rest still polls; -1
// when it has passed.
int ms_left(Clock::time_point deadline) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return -1;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1;
    return static_cast<int>(std::min<std::int64_t>(ms, 1 << 30));
}

// A decimal line ("123" or "-1") of a RESP header; false when it is not one.
bool parse_int(std::string_view text, std::int64_t& value) {
    if (text.empty() || text.size() > 19) return false;
    bool negative = false;
    if (text.front() == '-') {
        negative = true;
        text.remove_prefix(1);
        if (text.empty()) return false;
    }
    std::int64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    value = negative ? -v : v;
    return true;
}

int parse_at(std::string_view buffer, std::size_t& pos, std::uint64_t max_bulk, RedisReply& reply,
             int depth) {
    if (pos >= buffer.size()) return 0;
    const std::size_t eol = buffer.find("\r\n", pos + 1);
    if (eol == std::string_view::npos) {
        // A header line is short; a long run without CRLF is not RESP.
        return buffer.size() - pos > 4096 ? -1 : 0;
    }
    const char type = buffer[pos];
    const std::string_view line = buffer.substr(pos + 1, eol - pos - 1);
    std::size_t next = eol + 2;
    reply = RedisReply();
    switch (type) {
    case '+':
    case '-':
        reply.type = type == '+' ? RedisReply::Type::status : RedisReply::Type::error;
        reply.text = std::string(line);
        break;
    case ':':
        reply.type = RedisReply::Type::integer;
        if (!parse_int(line, reply.integer)) return -1;
        break;
    case '$': {
        std::int64_t length = 0;
        if (!parse_int(line, length) || length < -1) return -1;
        if (length == -1) {
            reply.type = RedisReply::Type::nil;
            break;
        }
        if (static_cast<std::uint64_t>(length) > max_bulk) return -2;
        const auto size = static_cast<std::size_t>(length);
        if (buffer.size() - next < size + 2) return 0;
        if (buffer.compare(next + size, 2, "\r\n") != 0) return -1;
        reply.type = RedisReply::Type::bulk;
        reply.text = std::string(buffer.substr(next, size));
        next += size + 2;
        break;
    }
    case '*': {
        std::int64_t count = 0;
        if (!parse_int(line, count) || count < -1 || count > kMaxElements) return -1;
        if (count == -1) {
            reply.type = RedisReply::Type::nil;
            break;
        }
        if (depth >= kMaxDepth) return -1;
        reply.type = RedisReply::Type::array;
        reply.elements.resize(static_cast<std::size_t>(count));
        for (auto& element : reply.elements) {
            const int parsed = parse_at(buffer, next, max_bulk, element, depth + 1);
            if (parsed <= 0) return parsed;
        }
        break;
    }
    default:
        return -1;
    }
    pos = next;
    return 1;
}

std::string encode_command(const std::vector<std::string_view>& args) {
    std::size_t size = 16;
    for (auto arg : args)
        size += arg.size() + 24;
    std::string out;
    out.reserve(size);
    out += '*';
    out += std::to_string(args.size());
    out += "\r\n";
    for (auto arg : args) {
        out += '$';
        out += std::to_string(arg.size());
        out += "\r\n";
        out.append(arg.data(), arg.size());
        out += "\r\n";
    }
    return out;
}

// Whether @p buffer starts with a whole bulk header ("$12\r\n"): 1 with @p length and @p size
// (the header's bytes) set, 0 when more bytes are needed, -1 when it is no bulk header (the parser
// then says what it is).
int bulk_header(std::string_view buffer, std::int64_t& length, std::size_t& size) {
    if (buffer.empty()) return 0;
    if (buffer.front() != '$') return -1;
    const std::size_t eol = buffer.find("\r\n", 1);
    if (eol == std::string_view::npos) return buffer.size() > 4096 ? -1 : 0;
    size = eol + 2;
    return parse_int(buffer.substr(1, eol - 1), length) ? 1 : -1;
}

} // namespace

int parse_reply(std::string_view buffer, std::size_t& pos, std::uint64_t max_bulk,
                RedisReply& reply) {
    std::size_t at = pos;
    const int parsed = parse_at(buffer, at, max_bulk, reply, 0);
    if (parsed == 1) pos = at;
    return parsed;
}

void RedisClient::close() noexcept {
    m_tls = TlsStream(); // before the socket it runs over
    m_fd = UniqueFd();
    m_in.clear();
}

RedisResult RedisClient::fail(RedisStatus status, std::string message) {
    close();
    RedisResult result;
    result.status = status;
    result.message = std::move(message);
    return result;
}

RedisResult RedisClient::fail(const IoStep& step, const char* what) {
    switch (step.status) {
    case IoStep::Status::closed:
        return fail(RedisStatus::failed, "the server closed the connection");
    case IoStep::Status::refused:
        return fail(RedisStatus::refused, step.message);
    default:
        return fail(RedisStatus::failed, std::string(what) + ": " + step.message);
    }
}

RedisResult RedisClient::await(IoWait wait, Clock::time_point deadline, const char* what) {
    for (;;) {
        const int left = ms_left(deadline);
        if (left < 0) return fail(RedisStatus::timeout, what);
        pollfd p{m_fd.get(), static_cast<short>(wait == IoWait::read ? POLLIN : POLLOUT), 0};
        const int ready = ::poll(&p, 1, left);
        if (ready < 0 && errno != EINTR)
            return fail(RedisStatus::failed, std::string("poll: ") + std::strerror(errno));
        if (ready > 0) break; // ready, or an error the next step reports
    }
    RedisResult result;
    result.status = RedisStatus::ok;
    return result;
}

IoStep RedisClient::read_some(char* buffer, std::size_t size) {
    if (m_tls) return m_tls.read(buffer, size);
    IoStep step;
    const ssize_t n = ::recv(m_fd.get(), buffer, size, 0);
    if (n > 0) {
        step.bytes = static_cast<std::size_t>(n);
    } else if (n == 0) {
        step.status = IoStep::Status::closed;
    } else if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
        step.status = IoStep::Status::wait;
        step.wait = IoWait::read;
    } else {
        step.status = IoStep::Status::failed;
        step.message = std::strerror(errno);
    }
    return step;
}

IoStep RedisClient::write_some(std::string_view bytes) {
    if (m_tls) return m_tls.write(bytes.data(), bytes.size());
    IoStep step;
    const ssize_t n = ::send(m_fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) {
        step.bytes = static_cast<std::size_t>(n);
    } else if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
        step.status = IoStep::Status::wait;
        step.wait = IoWait::write;
    } else {
        step.status = IoStep::Status::failed;
        step.message = std::strerror(errno);
    }
    return step;
}

RedisResult RedisClient::connect(const RemoteConfig& config, Clock::time_point deadline,
                                 const TlsContext* tls) {
    close();
    if (config.tls && !tls) return fail(RedisStatus::failed, "TLS: no context (a bug in Kiln)");
    sockaddr_storage address{};
    socklen_t address_size = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (::inet_pton(AF_INET, config.host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(config.port);
        address_size = sizeof(sockaddr_in);
    } else if (::inet_pton(AF_INET6, config.host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(config.port);
        address_size = sizeof(sockaddr_in6);
    } else {
        // A host name: resolved by the system resolver, which the deadline cannot bound (a
        // numeric address avoids it; docs/remote-cache.md says so).
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const int error = ::getaddrinfo(config.host.c_str(), nullptr, &hints, &found);
        if (error != 0 || !found)
            return fail(RedisStatus::failed,
                        "cannot resolve " + config.host + ": " + ::gai_strerror(error));
        std::memcpy(&address, found->ai_addr, found->ai_addrlen);
        address_size = found->ai_addrlen;
        ::freeaddrinfo(found);
        if (address.ss_family == AF_INET)
            v4->sin_port = htons(config.port);
        else
            v6->sin6_port = htons(config.port);
    }
    UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fail(RedisStatus::failed, std::string("socket: ") + std::strerror(errno));
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), address_size) != 0) {
        if (errno != EINPROGRESS && errno != EINTR)
            return fail(RedisStatus::failed, std::string("connect: ") + std::strerror(errno));
        for (;;) {
            const int wait = ms_left(deadline);
            if (wait < 0) return fail(RedisStatus::timeout, "connect: timed out");
            pollfd p{fd.get(), POLLOUT, 0};
            const int ready = ::poll(&p, 1, wait);
            if (ready < 0 && errno == EINTR) continue;
            if (ready < 0)
                return fail(RedisStatus::failed, std::string("poll: ") + std::strerror(errno));
            if (ready == 0) continue; // the loop's deadline check decides
            int error = 0;
            socklen_t size = sizeof error;
            ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size);
            if (error != 0)
                return fail(RedisStatus::failed, std::string("connect: ") + std::strerror(error));
            break;
        }
    }
    m_fd = std::move(fd);
    if (config.tls) {
        std::string error;
        m_tls = TlsStream::open(*tls, m_fd.get(), config.host, error);
        if (!m_tls) return fail(RedisStatus::failed, error);
        for (;;) {
            const IoStep step = m_tls.handshake();
            if (step.status == IoStep::Status::done) break;
            if (step.status != IoStep::Status::wait) return fail(step, "TLS handshake");
            RedisResult ready =
                await(step.wait, deadline, "connect: timed out in the TLS handshake");
            if (!ready.ok()) return ready;
        }
    }
    if (!config.password.empty()) {
        RedisResult auth = config.user.empty()
                               ? command({"AUTH", config.password}, deadline)
                               : command({"AUTH", config.user, config.password}, deadline);
        if (!auth.ok()) return auth;
        if (auth.reply.is_error())
            return fail(RedisStatus::refused, "authentication refused: " + auth.reply.text);
    }
    if (config.db != 0) {
        const std::string db = std::to_string(config.db);
        RedisResult select = command({"SELECT", db}, deadline);
        if (!select.ok()) return select;
        if (select.reply.is_error())
            return fail(RedisStatus::refused, "SELECT " + db + " refused: " + select.reply.text);
    }
    RedisResult done;
    done.status = RedisStatus::ok;
    return done;
}

RedisResult RedisClient::send_all(std::string_view bytes, Clock::time_point deadline) {
    while (!bytes.empty()) {
        const IoStep step = write_some(bytes);
        if (step.status == IoStep::Status::done) {
            bytes.remove_prefix(step.bytes);
            continue;
        }
        if (step.status != IoStep::Status::wait) return fail(step, "send");
        RedisResult ready = await(step.wait, deadline, "send: timed out");
        if (!ready.ok()) return ready;
    }
    RedisResult result;
    result.status = RedisStatus::ok;
    return result;
}

RedisResult RedisClient::read_reply(Clock::time_point deadline, std::uint64_t max_bulk,
                                    const BulkGate* gate) {
    RedisResult result;
    bool gated = gate == nullptr;
    // A bulk reply the gate let through is read straight into the reply's string, sized once: a
    // large value lands in one buffer, never copied from another (a fresh 64 MiB buffer costs
    // its page faults as well as the copy).
    std::string* body = nullptr;
    std::size_t body_size = 0;
    for (;;) {
        std::int64_t length = 0;
        std::size_t header_size = 0;
        const int header = gated ? 0 : bulk_header(m_in, length, header_size);
        if (header != 0) {
            gated = true;
            if (header > 0 && length >= 0) {
                // The gate sees the length as soon as the header is in, before the bytes.
                const auto by = (*gate)(static_cast<std::uint64_t>(length), deadline);
                if (!by) return fail(RedisStatus::too_large, "a value over the size limit");
                deadline = *by;
                body_size = static_cast<std::size_t>(length);
                result.reply.type = RedisReply::Type::bulk;
                body = &result.reply.text;
                body->reserve(body_size + 2);
                body->assign(m_in, header_size, std::string::npos);
                m_in.clear();
            }
        }
        if (body && body->size() >= body_size + 2) {
            // One reply and nothing after it, ended by CRLF.
            if (body->size() != body_size + 2 || body->compare(body_size, 2, "\r\n") != 0)
                return fail(RedisStatus::protocol, "the server's reply is not RESP");
            body->resize(body_size);
            result.status = RedisStatus::ok;
            return result;
        }
        if (!body) {
            std::size_t pos = 0;
            const int parsed = parse_reply(m_in, pos, max_bulk, result.reply);
            if (parsed == -2) return fail(RedisStatus::too_large, "a value over the size limit");
            if (parsed < 0) return fail(RedisStatus::protocol, "the server's reply is not RESP");
            if (parsed > 0) {
                m_in.erase(0, pos);
                result.status = RedisStatus::ok;
                return result;
            }
        }
        // Read what has arrived, and wait only when nothing has: TLS may hold bytes it has
        // decrypted already, which poll() cannot see. A steady stream still meets the deadline.
        if (Clock::now() >= deadline)
            return fail(RedisStatus::timeout, "no reply before the deadline");
        char chunk[65536];
        const IoStep step = read_some(chunk, sizeof chunk);
        if (step.status == IoStep::Status::done) {
            (body ? *body : m_in).append(chunk, step.bytes);
            continue;
        }
        if (step.status != IoStep::Status::wait) return fail(step, "recv");
        RedisResult ready = await(step.wait, deadline, "no reply before the deadline");
        if (!ready.ok()) return ready;
    }
}

RedisResult RedisClient::command(std::initializer_list<std::string_view> args,
                                 Clock::time_point deadline, std::uint64_t max_bulk) {
    return command(std::vector<std::string_view>(args), deadline, max_bulk);
}

RedisResult RedisClient::command(const std::vector<std::string_view>& args,
                                 Clock::time_point deadline, std::uint64_t max_bulk) {
    if (!m_fd) return fail(RedisStatus::failed, "not connected");
    // Bytes left over from an earlier exchange mean the stream is out of step: start afresh.
    if (!m_in.empty()) return fail(RedisStatus::protocol, "unexpected bytes from the server");
    RedisResult sent = send_all(encode_command(args), deadline);
    if (!sent.ok()) return sent;
    return read_reply(deadline, max_bulk, nullptr);
}

RedisResult RedisClient::command(const std::vector<std::string_view>& args,
                                 Clock::time_point deadline, const BulkGate& gate) {
    if (!gate) return command(args, deadline, UINT64_MAX);
    if (!m_fd) return fail(RedisStatus::failed, "not connected");
    if (!m_in.empty()) return fail(RedisStatus::protocol, "unexpected bytes from the server");
    RedisResult sent = send_all(encode_command(args), deadline);
    if (!sent.ok()) return sent;
    // The gate decides the length: the parser then takes whatever it let through.
    return read_reply(deadline, UINT64_MAX, &gate);
}

} // namespace kiln::cache::detail
