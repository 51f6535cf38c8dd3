// The Redis backend (cache/remote/backend.hpp) against a real redis-server: every operation the
// tier and the open issues rely on (a read that learns the size first, a write that keeps what is
// there, a time to live, removal, a short claim of a key, ping, server figures, counting keys),
// and each kind of failure typed as the tier expects it. Skipped without redis-server.

#include "remote/backend.hpp"

#include "redis_server.hpp"

#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

using kiln::cache::RemoteConfig;
using kiln::test::RedisServer;
namespace remote = kiln::cache::remote;
using Kind = remote::Failure::Kind;

namespace {

RemoteConfig config_for(const RedisServer& server) {
    return RemoteConfig::parse_url(server.url(), "test");
}

// Generous: a loaded CI machine (sanitizers on two shared cores) must not time out.
remote::Deadline patient() {
    remote::Deadline deadline;
    deadline.connect = std::chrono::milliseconds(2000);
    deadline.reply = std::chrono::milliseconds(2000);
    return deadline;
}

remote::Deadline quick() {
    remote::Deadline deadline;
    deadline.connect = std::chrono::milliseconds(200);
    deadline.reply = std::chrono::milliseconds(200);
    return deadline;
}

// A gate that takes every size and keeps the deadline.
const remote::SizeGate kAnySize = [](std::uint64_t, remote::Clock::time_point by) {
    return std::optional<remote::Clock::time_point>(by);
};

} // namespace

TEST(RedisBackend, AValueRoundTripsAndIsRemoved) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto backend = remote::make_backend(config_for(*server));
    auto missing = backend->get("kiln:test", patient(), kAnySize);
    ASSERT_TRUE(missing.ok()) << missing.failure().message;
    EXPECT_FALSE(missing.value());

    const std::string value("bytes\0with a zero", 17);
    auto put = backend->put("kiln:test", value, {}, patient());
    ASSERT_TRUE(put.ok()) << put.failure().message;
    EXPECT_TRUE(put.value());
    auto got = backend->get("kiln:test", patient(), kAnySize);
    ASSERT_TRUE(got.ok()) << got.failure().message;
    ASSERT_TRUE(got.value());
    EXPECT_EQ(*got.value(), value);

    auto removed = backend->remove("kiln:test", patient());
    ASSERT_TRUE(removed.ok());
    EXPECT_TRUE(removed.value());
    removed = backend->remove("kiln:test", patient());
    ASSERT_TRUE(removed.ok());
    EXPECT_FALSE(removed.value()) << "nothing left to remove";
    EXPECT_TRUE(server->call({"EXISTS", "kiln:test"}).integer == 0);
}

TEST(RedisBackend, OnlyIfAbsentKeepsWhatIsThereAndATimeToLiveExpires) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto backend = remote::make_backend(config_for(*server));
    remote::PutOptions absent;
    absent.only_if_absent = true;
    ASSERT_TRUE(backend->put("kiln:first", "one", absent, patient()).value());
    auto second = backend->put("kiln:first", "two", absent, patient());
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(second.value()) << "a value was there";
    EXPECT_EQ(server->call({"GET", "kiln:first"}).text, "one");
    // Without only_if_absent the value is replaced (a damaged one is, by the tier).
    ASSERT_TRUE(backend->put("kiln:first", "two", {}, patient()).value());
    EXPECT_EQ(server->call({"GET", "kiln:first"}).text, "two");

    remote::PutOptions seconds;
    seconds.ttl = std::chrono::seconds(100);
    ASSERT_TRUE(backend->put("kiln:ttl", "v", seconds, patient()).value());
    const long long ttl = server->call({"TTL", "kiln:ttl"}).integer;
    EXPECT_GT(ttl, 90);
    EXPECT_LE(ttl, 100);
    remote::PutOptions brief;
    brief.ttl = std::chrono::milliseconds(50);
    ASSERT_TRUE(backend->put("kiln:brief", "v", brief, patient()).value());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto expired = backend->get("kiln:brief", patient(), kAnySize);
    ASSERT_TRUE(expired.ok());
    EXPECT_FALSE(expired.value());
}

TEST(RedisBackend, TheSizeGateSeesTheSizeBeforeTheBytes) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto backend = remote::make_backend(config_for(*server));
    const std::string value(100000, 'v');
    ASSERT_TRUE(backend->put("kiln:big", value, {}, patient()).value());

    std::uint64_t seen = 0;
    auto refused =
        backend->get("kiln:big", patient(),
                     [&](std::uint64_t size,
                         remote::Clock::time_point) -> std::optional<remote::Clock::time_point> {
                         seen = size;
                         return std::nullopt;
                     });
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.failure().kind, Kind::too_large);
    EXPECT_EQ(seen, value.size());

    // A later deadline for a large value: the gate's deadline is the one the bytes get.
    seen = 0;
    auto taken =
        backend->get("kiln:big", quick(),
                     [&](std::uint64_t size,
                         remote::Clock::time_point by) -> std::optional<remote::Clock::time_point> {
                         seen = size;
                         return by + std::chrono::seconds(5);
                     });
    ASSERT_TRUE(taken.ok()) << taken.failure().message;
    ASSERT_TRUE(taken.value());
    EXPECT_EQ(taken.value()->size(), value.size());
    EXPECT_EQ(seen, value.size());

    // No value, no size to see.
    bool called = false;
    auto none =
        backend->get("kiln:absent", patient(),
                     [&](std::uint64_t,
                         remote::Clock::time_point by) -> std::optional<remote::Clock::time_point> {
                         called = true;
                         return by;
                     });
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none.value());
    EXPECT_FALSE(called);
}

TEST(RedisBackend, AClaimIsHeldByOneCallerUntilItsLeaseEnds) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto first = remote::make_backend(config_for(*server));
    auto second = remote::make_backend(config_for(*server)); // another host, as it were
    const auto lease = std::chrono::milliseconds(300);
    auto got = first->claim("kiln:claim:k", "host-a:1", lease, patient());
    ASSERT_TRUE(got.ok()) << got.failure().message;
    EXPECT_TRUE(got.value());
    EXPECT_EQ(server->call({"GET", "kiln:claim:k"}).text, "host-a:1");
    const long long pttl = server->call({"PTTL", "kiln:claim:k"}).integer;
    EXPECT_GT(pttl, 0);
    EXPECT_LE(pttl, 300);

    auto taken = second->claim("kiln:claim:k", "host-b:2", lease, patient());
    ASSERT_TRUE(taken.ok());
    EXPECT_FALSE(taken.value()) << "the first caller holds it";
    EXPECT_FALSE(first->claim("kiln:claim:k", "host-a:1", lease, patient()).value())
        << "a claim is not re-entrant";

    // The lease ends by itself: then the next caller gets it.
    std::this_thread::sleep_for(lease + std::chrono::milliseconds(200));
    auto after = second->claim("kiln:claim:k", "host-b:2", lease, patient());
    ASSERT_TRUE(after.ok());
    EXPECT_TRUE(after.value());
    // remove() ends it early.
    ASSERT_TRUE(second->remove("kiln:claim:k", patient()).value());
    EXPECT_TRUE(first->claim("kiln:claim:k", "host-a:1", lease, patient()).value());
}

TEST(RedisBackend, PingInfoAndCountKeysDescribeTheServer) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto backend = remote::make_backend(config_for(*server));
    auto pong = backend->ping(patient());
    ASSERT_TRUE(pong.ok()) << pong.failure().message;
    EXPECT_GT(pong.value().round_trip.count(), 0);

    auto info = backend->info(patient());
    ASSERT_TRUE(info.ok()) << info.failure().message;
    EXPECT_FALSE(info.value().version.empty());
    EXPECT_GT(info.value().used_memory, 0u);
    EXPECT_FALSE(info.value().eviction_policy.empty());

    for (int i = 0; i < 25; ++i)
        server->call({"SET", "kiln:" + std::to_string(i), "v"});
    server->call({"SET", "other:1", "v"});
    server->call({"SET", "kilnx", "v"});
    auto count = backend->count_keys("kiln:", patient());
    ASSERT_TRUE(count.ok()) << count.failure().message;
    EXPECT_EQ(count.value(), 25u);
    // A prefix is matched literally, glob characters included.
    server->call({"SET", "a*b:1", "v"});
    server->call({"SET", "axb:1", "v"});
    EXPECT_EQ(backend->count_keys("a*b:", patient()).value(), 1u);
}

TEST(RedisBackend, NothingListeningIsUnreachableWhileConnecting) {
    RemoteConfig config = RemoteConfig::parse_url(
        "redis://127.0.0.1:" + std::to_string(kiln::test::free_port()), "t");
    auto backend = remote::make_backend(config);
    auto got = backend->get("kiln:x", quick(), kAnySize);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.failure().kind, Kind::unreachable);
    EXPECT_TRUE(got.failure().connecting());
    EXPECT_FALSE(got.failure().message.empty());
    auto pong = backend->ping(quick());
    ASSERT_FALSE(pong.ok());
    EXPECT_TRUE(pong.failure().connecting());
}

TEST(RedisBackend, AWrongPasswordIsRefused) {
    auto server = RedisServer::start_or_skip({"--requirepass", "right"});
    if (!server) return;
    RemoteConfig config = config_for(*server);
    config.password = "wrong";
    auto got = remote::make_backend(config)->get("kiln:x", patient(), kAnySize);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.failure().kind, Kind::refused);
    EXPECT_TRUE(got.failure().connecting());
    config.password = "right";
    EXPECT_TRUE(remote::make_backend(config)->get("kiln:x", patient(), kAnySize).ok());
}

TEST(RedisBackend, ServerRepliesAreTypedFailures) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto backend = remote::make_backend(config_for(*server));
    server->call({"LPUSH", "kiln:list", "x"});
    auto wrong = backend->get("kiln:list", patient(), kAnySize);
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.failure().kind, Kind::wrong_type);
    EXPECT_EQ(wrong.failure().step, "GET");

    // A full server refuses writes and still serves reads.
    ASSERT_TRUE(backend->put("kiln:kept", "v", {}, patient()).value());
    ASSERT_TRUE(server->config_set("maxmemory", "1"));
    ASSERT_TRUE(server->config_set("maxmemory-policy", "noeviction"));
    auto full = backend->put("kiln:more", std::string(4096, 'x'), {}, patient());
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.failure().kind, Kind::full);
    EXPECT_EQ(full.failure().message.compare(0, 3, "OOM"), 0) << full.failure().message;
    EXPECT_TRUE(backend->get("kiln:kept", patient(), kAnySize).ok());
}

TEST(RedisBackend, AFrozenServerIsATimeoutAndARestartIsNoFailure) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto backend = remote::make_backend(config_for(*server));
    ASSERT_TRUE(backend->put("kiln:x", "v", {}, patient()).ok()); // leaves an idle connection
    server->pause();
    auto late = backend->get("kiln:x", quick(), kAnySize);
    server->resume();
    ASSERT_FALSE(late.ok());
    EXPECT_EQ(late.failure().kind, Kind::timeout);
    EXPECT_EQ(late.failure().step, "GET");

    ASSERT_TRUE(backend->get("kiln:x", patient(), kAnySize).ok()); // an idle connection again
    server->kill();
    server->restart();
    // The idle connection is closed by the restart: one fresh connection, no failure.
    auto fresh = backend->get("kiln:x", patient(), kAnySize);
    ASSERT_TRUE(fresh.ok()) << fresh.failure().message;
    EXPECT_FALSE(fresh.value()) << "a restarted server is empty";
}

TEST(RedisBackend, OnlyKnownSchemesHaveABackend) {
    RemoteConfig config;
    EXPECT_NO_THROW(remote::make_backend(config));
    config.scheme = "memcached";
    EXPECT_THROW(remote::make_backend(config), kiln::ConfigError);
    EXPECT_STREQ(remote::to_string(Kind::too_large), "too_large");
}
