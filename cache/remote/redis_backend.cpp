// remote::Backend for Redis. The connection handling lives here and in redis_client.cpp, below
// the interface: a pool of idle connections shared by the callers' lookups and the tier's
// thread, one fresh connection when an idle one turns out closed, and the TLS handshake (one
// context per backend, tls_stream.hpp), AUTH and SELECT on every new one. What each request is on
// the wire, and which replies are failures of which kind, is this file's too; the tier above sees
// only Backend's operations and Failure's kinds.
//
//   get         GET key                           a value over the SizeGate is refused unread
//   put         SET key value [NX] [EX s | PX ms]
//   remove      DEL key
//   claim       SET key owner NX PX lease
//   renew       EVAL: PEXPIRE key lease, when GET key is owner
//   release     EVAL: DEL key, when GET key is owner
//   ping        PING on a fresh connection
//   info        INFO memory, then INFO server (its version, when it tells)
//   count_keys  SCAN cursor MATCH prefix* COUNT 1000, until the cursor is 0

#include "redis_backend.hpp"

#include "redis_client.hpp"
#include "tls_stream.hpp"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln::cache::remote {

namespace {

using detail::RedisClient;
using detail::RedisReply;
using detail::RedisResult;
using detail::RedisStatus;

/// Idle connections kept for the next operations, at most.
constexpr std::size_t kMaxIdleConnections = 8;

Failure failure(Failure::Kind kind, std::string_view step, std::string message) {
    Failure f;
    f.kind = kind;
    f.step = std::string(step);
    f.message = std::move(message);
    return f;
}

// The failure of an exchange that did not end with a reply.
Failure failure(const RedisResult& result, std::string_view step) {
    Failure::Kind kind = Failure::Kind::unreachable;
    switch (result.status) {
    case RedisStatus::timeout:
        kind = Failure::Kind::timeout;
        break;
    case RedisStatus::refused:
        kind = Failure::Kind::refused;
        break;
    case RedisStatus::too_large:
        kind = Failure::Kind::too_large;
        break;
    case RedisStatus::protocol:
        kind = Failure::Kind::protocol;
        break;
    case RedisStatus::failed:
    case RedisStatus::ok:
        break;
    }
    return failure(kind, step, result.message);
}

// The failure a reply stands for when it is not the one the request has: the server's error, in
// its words, or a reply of an unexpected type (@p unexpected says it).
Failure failure(const RedisReply& reply, std::string_view step, std::string unexpected) {
    if (reply.is_error()) {
        if (reply.text.compare(0, 3, "OOM") == 0)
            return failure(Failure::Kind::full, step, reply.text);
        return failure(Failure::Kind::server, step, reply.text);
    }
    return failure(Failure::Kind::protocol, step, std::move(unexpected));
}

// "name:value" from an INFO section; empty when absent.
std::string info_field(const std::string& info, const std::string& name) {
    const std::string prefix = name + ":";
    std::size_t at = 0;
    while (at < info.size()) {
        std::size_t end = info.find("\r\n", at);
        if (end == std::string::npos) end = info.size();
        if (info.compare(at, prefix.size(), prefix) == 0)
            return info.substr(at + prefix.size(), end - at - prefix.size());
        at = end + 2;
    }
    return {};
}

std::uint64_t to_number(const std::string& text) {
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') break;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

// A SCAN pattern that matches @p prefix literally, then anything.
std::string prefix_pattern(std::string_view prefix) {
    std::string pattern;
    for (char c : prefix) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
        pattern += c;
    }
    return pattern + "*";
}

class RedisBackend final : public Backend {
  public:
    /// @throws kiln::ConfigError for TLS files that cannot be used.
    explicit RedisBackend(RemoteConfig config)
        : m_config(std::move(config))
        , m_tls(m_config.tls ? std::make_unique<detail::TlsContext>(m_config) : nullptr) {}

    Result<std::optional<std::string>> get(std::string_view key, const Deadline& deadline,
                                           const SizeGate& gate) override;
    Result<bool> put(std::string_view key, std::string_view value, const PutOptions& options,
                     const Deadline& deadline) override;
    Result<bool> remove(std::string_view key, const Deadline& deadline) override;
    Result<bool> claim(std::string_view key, std::string_view owner,
                       std::chrono::milliseconds lease, const Deadline& deadline) override;
    Result<bool> renew(std::string_view key, std::string_view owner,
                       std::chrono::milliseconds lease, const Deadline& deadline) override;
    Result<bool> release(std::string_view key, std::string_view owner,
                         const Deadline& deadline) override;
    Result<Pong> ping(const Deadline& deadline) override;
    Result<ServerInfo> info(const Deadline& deadline) override;
    Result<std::uint64_t> count_keys(std::string_view prefix, const Deadline& deadline) override;
    void reset() noexcept override;

  private:
    /// One request and its reply, on an idle connection or a new one. @p step names the request
    /// in failures; @p gate (when given) sees a bulk reply's length first.
    Result<RedisReply> exchange(std::string_view step, const std::vector<std::string_view>& args,
                                const Deadline& deadline, const SizeGate* gate = nullptr);
    RedisResult send(RedisClient& client, const std::vector<std::string_view>& args,
                     const Deadline& deadline, const SizeGate* gate);
    void give_back(RedisClient client);

    const RemoteConfig m_config;
    /// rediss://: what every connection's TLS shares; declared before the pool, so it outlives it.
    const std::unique_ptr<detail::TlsContext> m_tls;
    std::mutex m_pool_mutex;
    std::vector<RedisClient> m_pool;
};

RedisResult RedisBackend::send(RedisClient& client, const std::vector<std::string_view>& args,
                               const Deadline& deadline, const SizeGate* gate) {
    if (gate) return client.command(args, deadline.reply_by(), *gate);
    return client.command(args, deadline.reply_by());
}

Result<RedisReply> RedisBackend::exchange(std::string_view step,
                                          const std::vector<std::string_view>& args,
                                          const Deadline& deadline, const SizeGate* gate) {
    RedisClient client;
    bool reused = false;
    {
        std::lock_guard<std::mutex> lock(m_pool_mutex);
        if (!m_pool.empty()) {
            client = std::move(m_pool.back());
            m_pool.pop_back();
            reused = true;
        }
    }
    if (!reused) {
        RedisResult connected = client.connect(m_config, deadline.connect_by(), m_tls.get());
        if (!connected.ok()) return failure(connected, kConnectStep);
    }
    RedisResult result = send(client, args, deadline, gate);
    // An idle connection the server closed meanwhile (a restart, its `timeout` setting) fails at
    // once: one fresh connection before calling it the server's failure. Every request here may
    // be sent twice (SET and DEL are idempotent; a claim that did land is the caller's then).
    if (reused &&
        (result.status == RedisStatus::failed || result.status == RedisStatus::protocol)) {
        RedisResult connected = client.connect(m_config, deadline.connect_by(), m_tls.get());
        if (!connected.ok()) return failure(connected, kConnectStep);
        result = send(client, args, deadline, gate);
    }
    if (!result.ok()) return failure(result, step);
    give_back(std::move(client));
    return std::move(result.reply);
}

void RedisBackend::give_back(RedisClient client) {
    if (!client.connected()) return;
    std::lock_guard<std::mutex> lock(m_pool_mutex);
    if (m_pool.size() < kMaxIdleConnections) m_pool.push_back(std::move(client));
}

void RedisBackend::reset() noexcept {
    std::vector<RedisClient> idle;
    {
        std::lock_guard<std::mutex> lock(m_pool_mutex);
        idle.swap(m_pool);
    }
}

Result<std::optional<std::string>> RedisBackend::get(std::string_view key, const Deadline& deadline,
                                                     const SizeGate& gate) {
    auto reply = exchange("GET", {"GET", key}, deadline, &gate);
    if (!reply.ok()) return reply.failure();
    RedisReply& r = reply.value();
    if (r.is_error() && r.text.compare(0, 9, "WRONGTYPE") == 0)
        return failure(Failure::Kind::wrong_type, "GET", "not a string");
    if (r.type == RedisReply::Type::nil) return std::optional<std::string>();
    if (r.type != RedisReply::Type::bulk) return failure(r, "GET", "an unexpected reply type");
    return std::optional<std::string>(std::move(r.text));
}

Result<bool> RedisBackend::put(std::string_view key, std::string_view value,
                               const PutOptions& options, const Deadline& deadline) {
    std::vector<std::string_view> args{"SET", key, value};
    if (options.only_if_absent) args.emplace_back("NX");
    // Whole seconds as EX, as Redis expires them; anything finer as PX.
    const bool seconds = options.ttl.count() % 1000 == 0;
    const std::string ttl =
        std::to_string(seconds ? options.ttl.count() / 1000 : options.ttl.count());
    if (options.ttl.count() > 0) {
        args.emplace_back(seconds ? "EX" : "PX");
        args.emplace_back(ttl);
    }
    auto reply = exchange("SET", args, deadline);
    if (!reply.ok()) return reply.failure();
    const RedisReply& r = reply.value();
    if (r.is_error()) return failure(r, "SET", "");
    // NX that found a value answers nil; any other answer means the value was written.
    return r.type != RedisReply::Type::nil;
}

Result<bool> RedisBackend::remove(std::string_view key, const Deadline& deadline) {
    auto reply = exchange("DEL", {"DEL", key}, deadline);
    if (!reply.ok()) return reply.failure();
    const RedisReply& r = reply.value();
    if (r.type != RedisReply::Type::integer) return failure(r, "DEL", "an unexpected reply");
    return r.integer > 0;
}

Result<bool> RedisBackend::claim(std::string_view key, std::string_view owner,
                                 std::chrono::milliseconds lease, const Deadline& deadline) {
    const std::string ms = std::to_string(std::max<std::int64_t>(lease.count(), 1));
    auto reply = exchange("SET", {"SET", key, owner, "NX", "PX", ms}, deadline);
    if (!reply.ok()) return reply.failure();
    const RedisReply& r = reply.value();
    if (r.type == RedisReply::Type::nil) return false; // another holds it
    if (!r.is_status("OK")) return failure(r, "SET", "an unexpected reply");
    return true;
}

// Compare and act in one step on the server: a lease that ended and was taken by another caller
// must not be extended or deleted by its former holder.
constexpr std::string_view kRenewScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
constexpr std::string_view kReleaseScript = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                                            "return redis.call('DEL', KEYS[1]) else return 0 end";

Result<bool> RedisBackend::renew(std::string_view key, std::string_view owner,
                                 std::chrono::milliseconds lease, const Deadline& deadline) {
    const std::string ms = std::to_string(std::max<std::int64_t>(lease.count(), 1));
    auto reply = exchange("EVAL", {"EVAL", kRenewScript, "1", key, owner, ms}, deadline);
    if (!reply.ok()) return reply.failure();
    const RedisReply& r = reply.value();
    if (r.type != RedisReply::Type::integer) return failure(r, "EVAL", "an unexpected reply");
    return r.integer > 0;
}

Result<bool> RedisBackend::release(std::string_view key, std::string_view owner,
                                   const Deadline& deadline) {
    auto reply = exchange("EVAL", {"EVAL", kReleaseScript, "1", key, owner}, deadline);
    if (!reply.ok()) return reply.failure();
    const RedisReply& r = reply.value();
    if (r.type != RedisReply::Type::integer) return failure(r, "EVAL", "an unexpected reply");
    return r.integer > 0;
}

Result<Pong> RedisBackend::ping(const Deadline& deadline) {
    // Always a fresh connection: an idle one says nothing about whether the server is there now.
    RedisClient client;
    const auto start = Clock::now();
    RedisResult result = client.connect(m_config, deadline.connect_by(), m_tls.get());
    if (!result.ok()) return failure(result, kConnectStep);
    Pong pong;
    const auto before = Clock::now();
    pong.connect = before - start;
    result = client.command({"PING"}, deadline.reply_by());
    pong.round_trip = Clock::now() - before;
    if (!result.ok()) return failure(result, "PING");
    if (!result.reply.is_status("PONG"))
        return failure(result.reply, "PING", "an unexpected reply");
    give_back(std::move(client));
    return pong;
}

Result<ServerInfo> RedisBackend::info(const Deadline& deadline) {
    auto memory = exchange("INFO memory", {"INFO", "memory"}, deadline);
    if (!memory.ok()) return memory.failure();
    if (memory.value().type != RedisReply::Type::bulk)
        return failure(memory.value(), "INFO memory", "");
    ServerInfo info;
    const std::string& text = memory.value().text;
    info.used_memory = to_number(info_field(text, "used_memory"));
    info.max_memory = to_number(info_field(text, "maxmemory"));
    info.eviction_policy = info_field(text, "maxmemory_policy");
    // The version is a courtesy: a server that will not say still has the figures above.
    auto server = exchange("INFO server", {"INFO", "server"}, deadline);
    if (server.ok() && server.value().type == RedisReply::Type::bulk)
        info.version = info_field(server.value().text, "redis_version");
    return info;
}

Result<std::uint64_t> RedisBackend::count_keys(std::string_view prefix, const Deadline& deadline) {
    // SCAN in steps, each with its own deadline: a big database takes many, none blocks it.
    const std::string pattern = prefix_pattern(prefix);
    std::string cursor = "0";
    std::uint64_t count = 0;
    do {
        auto reply =
            exchange("SCAN", {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, deadline);
        if (!reply.ok()) return reply.failure();
        const RedisReply& r = reply.value();
        if (r.type != RedisReply::Type::array || r.elements.size() != 2 ||
            r.elements[0].type != RedisReply::Type::bulk ||
            r.elements[1].type != RedisReply::Type::array)
            return failure(r, "SCAN", "an unexpected reply");
        cursor = r.elements[0].text;
        count += r.elements[1].elements.size();
    } while (cursor != "0");
    return count;
}

} // namespace

std::unique_ptr<Backend> make_redis_backend(const RemoteConfig& config) {
    return std::make_unique<RedisBackend>(config);
}

} // namespace kiln::cache::remote
