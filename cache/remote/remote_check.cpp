// `kiln cache remote ping|stats`: check a remote-tier configuration by hand, through the same
// backend the tier uses (backend.hpp), with deadlines patient enough for a check by hand.

#include "kiln/cache/remote.hpp"

#include "backend.hpp"

#include <algorithm>
#include <exception>

namespace kiln::cache {

namespace {

double ms_of(remote::Clock::duration duration) {
    return std::chrono::duration<double, std::milli>(duration).count();
}

std::string describe(const remote::Failure& failure) {
    if (failure.kind == remote::Failure::Kind::timeout)
        return "timed out (" + failure.message + ")";
    return failure.message;
}

// The configuration with deadlines of at least @p at_least each.
RemoteConfig patient(const RemoteConfig& config, std::chrono::milliseconds at_least) {
    RemoteConfig copy = config;
    copy.connect_timeout = std::max(copy.connect_timeout, at_least);
    copy.op_timeout = std::max(copy.op_timeout, at_least);
    return copy;
}

remote::Deadline deadline_of(const RemoteConfig& config) {
    remote::Deadline deadline;
    deadline.connect = config.connect_timeout;
    deadline.reply = config.op_timeout;
    return deadline;
}

std::string cannot_connect(const RemoteConfig& config, const remote::Failure& failure) {
    return "cannot connect to " + config.display_url() + ": " + describe(failure);
}

} // namespace

RemotePing ping_remote(const RemoteConfig& config, std::chrono::milliseconds at_least) {
    RemotePing ping;
    try {
        const RemoteConfig c = patient(config, at_least);
        const auto backend = remote::make_backend(c);
        const remote::Deadline deadline = deadline_of(c);
        auto pong = backend->ping(deadline);
        if (!pong.ok()) {
            const remote::Failure& failure = pong.failure();
            ping.error = failure.connecting()
                             ? cannot_connect(config, failure)
                             : "PING to " + config.display_url() + " failed: " + describe(failure);
            return ping;
        }
        ping.connect_ms = ms_of(pong.value().connect);
        ping.latency_ms = ms_of(pong.value().round_trip);
        if (auto info = backend->info(deadline); info.ok())
            ping.server_version = info.value().version;
        ping.ok = true;
    } catch (const std::exception& e) {
        ping.error = e.what();
    }
    return ping;
}

RemoteServerInfo remote_server_info(const RemoteConfig& config,
                                    std::chrono::milliseconds at_least) {
    RemoteServerInfo info;
    try {
        const RemoteConfig c = patient(config, at_least);
        const auto backend = remote::make_backend(c);
        const remote::Deadline deadline = deadline_of(c);
        auto server = backend->info(deadline);
        if (!server.ok()) {
            const remote::Failure& failure = server.failure();
            info.error = failure.connecting() ? cannot_connect(config, failure)
                                              : failure.step + " failed: " + describe(failure);
            return info;
        }
        info.used_memory = server.value().used_memory;
        info.max_memory = server.value().max_memory;
        info.eviction_policy = server.value().eviction_policy;
        info.server_version = server.value().version;
        auto keys = backend->count_keys(kRemoteKeyPrefix, deadline);
        if (!keys.ok()) {
            const remote::Failure& failure = keys.failure();
            info.error = failure.connecting() ? cannot_connect(config, failure)
                                              : failure.step + " failed: " + describe(failure);
            return info;
        }
        info.kiln_keys = keys.value();
        info.ok = true;
    } catch (const std::exception& e) {
        info.error = e.what();
    }
    return info;
}

} // namespace kiln::cache
