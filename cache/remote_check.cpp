// `kiln cache remote ping|stats`: check a remote-tier configuration by hand.

#include "kiln/cache/remote.hpp"

#include "redis_client.hpp"

#include <algorithm>

namespace kiln::cache {

namespace {

double ms_between(detail::Clock::time_point a, detail::Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string describe(const detail::RedisResult& result) {
    switch (result.status) {
    case detail::RedisStatus::timeout:
        return "timed out (" + result.message + ")";
    case detail::RedisStatus::refused:
    case detail::RedisStatus::failed:
    case detail::RedisStatus::too_large:
        return result.message;
    case detail::RedisStatus::ok:
        return result.reply.is_error() ? result.reply.text : "";
    }
    return result.message;
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

// The configuration with deadlines of at least @p at_least each.
RemoteConfig patient(const RemoteConfig& config, std::chrono::milliseconds at_least) {
    RemoteConfig copy = config;
    copy.connect_timeout = std::max(copy.connect_timeout, at_least);
    copy.op_timeout = std::max(copy.op_timeout, at_least);
    return copy;
}

} // namespace

RemotePing ping_remote(const RemoteConfig& config, std::chrono::milliseconds at_least) {
    RemotePing ping;
    const RemoteConfig c = patient(config, at_least);
    detail::RedisClient client;
    const auto start = detail::Clock::now();
    auto result = client.connect(c, start + c.connect_timeout);
    const auto connected = detail::Clock::now();
    if (!result.ok()) {
        ping.error = "cannot connect to " + config.display_url() + ": " + describe(result);
        return ping;
    }
    ping.connect_ms = ms_between(start, connected);
    const auto before = detail::Clock::now();
    result = client.command({"PING"}, before + c.op_timeout);
    const auto after = detail::Clock::now();
    if (!result.ok() || !result.reply.is_status("PONG")) {
        ping.error =
            "PING to " + config.display_url() + " failed: " +
            (result.ok() && !result.reply.is_error() ? "an unexpected reply" : describe(result));
        return ping;
    }
    ping.latency_ms = ms_between(before, after);
    result = client.command({"INFO", "server"}, detail::Clock::now() + c.op_timeout);
    if (result.ok() && result.reply.type == detail::RedisReply::Type::bulk)
        ping.server_version = info_field(result.reply.text, "redis_version");
    ping.ok = true;
    return ping;
}

RemoteServerInfo remote_server_info(const RemoteConfig& config,
                                    std::chrono::milliseconds at_least) {
    RemoteServerInfo info;
    const RemoteConfig c = patient(config, at_least);
    detail::RedisClient client;
    auto result = client.connect(c, detail::Clock::now() + c.connect_timeout);
    if (!result.ok()) {
        info.error = "cannot connect to " + config.display_url() + ": " + describe(result);
        return info;
    }
    result = client.command({"INFO", "memory"}, detail::Clock::now() + c.op_timeout);
    if (!result.ok() || result.reply.type != detail::RedisReply::Type::bulk) {
        info.error = "INFO memory failed: " + describe(result);
        return info;
    }
    info.used_memory = to_number(info_field(result.reply.text, "used_memory"));
    info.max_memory = to_number(info_field(result.reply.text, "maxmemory"));
    info.eviction_policy = info_field(result.reply.text, "maxmemory_policy");
    result = client.command({"INFO", "server"}, detail::Clock::now() + c.op_timeout);
    if (result.ok() && result.reply.type == detail::RedisReply::Type::bulk)
        info.server_version = info_field(result.reply.text, "redis_version");
    // SCAN in steps, each with its own deadline: a big database takes many, none blocks it.
    const std::string pattern = std::string(kRemoteKeyPrefix) + "*";
    std::string cursor = "0";
    do {
        result = client.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"},
                                detail::Clock::now() + c.op_timeout);
        if (!result.ok() || result.reply.type != detail::RedisReply::Type::array ||
            result.reply.elements.size() != 2 ||
            result.reply.elements[0].type != detail::RedisReply::Type::bulk ||
            result.reply.elements[1].type != detail::RedisReply::Type::array) {
            info.error = "SCAN failed: " + (result.ok() && !result.reply.is_error()
                                                ? std::string("an unexpected reply")
                                                : describe(result));
            return info;
        }
        cursor = result.reply.elements[0].text;
        info.kiln_keys += result.reply.elements[1].elements.size();
    } while (cursor != "0");
    info.ok = true;
    return info;
}

} // namespace kiln::cache
