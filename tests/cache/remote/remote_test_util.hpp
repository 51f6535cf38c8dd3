#pragma once
// Shared helpers for the remote-tier tests: a store configuration that points at a test server,
// and the Redis key of a cache key.

#include "../cache_test_util.hpp"
#include "redis_server.hpp"

#include "kiln/cache/remote.hpp"
#include "kiln/cache/store.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace kiln::test {

/// Deadlines generous enough for a loaded CI machine (sanitizers on two shared cores) and
/// small enough that a failure costs a test well under a second.
inline cache::RemoteConfig remote_for(const RedisServer& server,
                                      cache::RemoteMode mode = cache::RemoteMode::read_write) {
    cache::RemoteConfig remote = cache::RemoteConfig::parse_url(server.url(), "test");
    remote.mode = mode;
    remote.connect_timeout = std::chrono::milliseconds(1000);
    remote.op_timeout = std::chrono::milliseconds(1000);
    remote.retry_interval = std::chrono::milliseconds(100);
    return remote;
}

inline cache::Config remote_config(const std::filesystem::path& dir, const RedisServer& server,
                                   cache::RemoteMode mode = cache::RemoteMode::read_write) {
    cache::Config config = config_for(dir);
    config.remote = remote_for(server, mode);
    return config;
}

inline std::string redis_key(const cache::Key& key) {
    return std::string(cache::kRemoteKeyPrefix) + key.hex();
}

/// Wait (a few seconds at most) until @p done() holds; returns whether it did.
template <typename Predicate> bool eventually(Predicate done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return done();
}

} // namespace kiln::test
