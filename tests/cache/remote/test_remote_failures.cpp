// The remote tier when the server misbehaves: down, killed, frozen, paused, full, refusing the
// password, or holding values no entry can be. The caller always gets its answer (a miss) after
// at most about one deadline, the breaker then skips the server, and a background probe brings
// it back. Time bounds here are generous on purpose; bench/ measures the real figures.

#include "remote_test_util.hpp"

#include "kiln/cache/entry.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

using namespace kiln::test;
using kiln::cache::RemoteMode;
using kiln::cache::Store;
using Clock = std::chrono::steady_clock;

namespace {

// Short deadlines, so a failure costs this test little.
kiln::cache::Config quick_config(const std::filesystem::path& dir, const RedisServer& server) {
    auto config = remote_config(dir, server);
    config.remote->connect_timeout = std::chrono::milliseconds(100);
    config.remote->op_timeout = std::chrono::milliseconds(100);
    config.remote->retry_interval = std::chrono::milliseconds(100);
    return config;
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::uint64_t used_memory(const RedisServer& server) {
    const std::string info = server.call({"INFO", "memory"}).text;
    const auto at = info.find("used_memory:");
    return at == std::string::npos ? 0 : std::stoull(info.substr(at + 12));
}

} // namespace

TEST(RemoteFailures, NothingListeningIsAMissAndTheBreakerOpens) {
    const auto port = free_port(); // released: nothing listens there
    TempDir dir;
    auto config = config_for(dir.path());
    config.remote =
        kiln::cache::RemoteConfig::parse_url("redis://127.0.0.1:" + std::to_string(port), "test");
    config.remote->retry_interval = std::chrono::seconds(60);
    Store store(config);
    EXPECT_FALSE(store.load(key_of("a")));
    EXPECT_FALSE(store.load(key_of("b")));
    const auto entry = make_entry(key_of("c"));
    EXPECT_TRUE(store.store(entry)); // locally
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.errors, 1u);
    EXPECT_EQ(stats.skipped, 2u);       // the second lookup and the publish
    EXPECT_TRUE(store.load(entry.key)); // the local tier still serves
}

// The remote tier's counters are saved when a store ends. Another process holding the lock on
// remote-stats for good (any member of a shared cache can) does not make that wait: they are
// left beside the file, shown, and added by the next process that gets the lock.
TEST(RemoteFailures, CountersSavedWhileTheirFileIsLockedAreLeftBesideItAndAddedLater) {
    const auto port = free_port(); // released: nothing listens there
    TempDir dir;
    auto config = config_for(dir.path());
    config.remote =
        kiln::cache::RemoteConfig::parse_url("redis://127.0.0.1:" + std::to_string(port), "test");
    config.remote->retry_interval = std::chrono::seconds(60);
    // One error, then one lookup skipped while the breaker is open.
    const auto two_lookups = [&](const std::string& name) {
        Store store(config);
        store.load(key_of(name));
        store.load(key_of(name + " again"));
    };
    two_lookups("a");
    {
        HeldLock lock(dir / "remote-stats");
        ASSERT_TRUE(lock.held());
        const pid_t child = spawn([&] {
            ::alarm(kWatchdogSeconds);
            two_lookups("b");
            return 0;
        });
        ASSERT_EQ(wait_for(child), 0) << "128 + 14: the watchdog ended it";
        EXPECT_EQ(spill_files(dir.path(), "remote-stats").size(), 1u);
        const auto shown = Store(config).remote_stats();
        EXPECT_EQ(shown.errors, 2u);
        EXPECT_EQ(shown.skipped, 2u);
    }
    two_lookups("c");
    EXPECT_TRUE(spill_files(dir.path(), "remote-stats").empty());
    const auto stats = Store(config).remote_stats();
    EXPECT_EQ(stats.errors, 3u);
    EXPECT_EQ(stats.skipped, 3u);
}

TEST(RemoteFailures, AWrongPasswordIsOneErrorThenSkipped) {
    auto server = RedisServer::start_or_skip({"--requirepass", "right"});
    if (!server) return;
    TempDir dir;
    auto config = remote_config(dir.path(), *server);
    config.remote->password = "wrong";
    config.remote->retry_interval = std::chrono::seconds(60);
    {
        Store store(config);
        EXPECT_FALSE(store.load(key_of("a")));
        EXPECT_FALSE(store.load(key_of("b")));
        const auto stats = store.remote_stats();
        EXPECT_EQ(stats.errors, 1u);
        EXPECT_EQ(stats.skipped, 1u);
    }
    // No password at all: the server's NOAUTH reply is a failure too.
    config.remote->password.clear();
    {
        TempDir fresh; // the counters of a directory add up over stores
        config.dir = fresh.path();
        Store store(config);
        EXPECT_FALSE(store.load(key_of("a")));
        EXPECT_EQ(store.remote_stats().errors, 1u);
    }
    config.remote->password = "right";
    TempDir other;
    config.dir = other.path();
    const auto entry = make_entry(key_of("authenticated"));
    Store store(config);
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"GET", redis_key(entry.key)}, "right").text,
              kiln::cache::encode_entry(entry));
}

TEST(RemoteFailures, AUserAndPasswordAuthenticate) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    server->call({"ACL", "SETUSER", "ci", "on", ">ci-secret", "~kiln:*", "+@all"});
    TempDir dir;
    auto config = remote_config(dir.path(), *server);
    config.remote->user = "ci";
    config.remote->password = "ci-secret";
    const auto entry = make_entry(key_of("acl"));
    Store store(config);
    EXPECT_FALSE(store.load(entry.key));
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(store.remote_stats().errors, 0u);
    EXPECT_EQ(store.remote_stats().stores, 1u);
}

TEST(RemoteFailures, AReadOnlyUserIsEnoughForReadOnlyMode) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    // docs/remote-cache.md's advice for untrusted jobs: a user that can only GET Kiln's keys (and
    // PING).
    server->call({"ACL", "SETUSER", "ci-ro", "on", ">ro-secret", "~kiln:*", "+get", "+ping"});
    const auto entry = make_entry(key_of("read by an untrusted job"));
    server->call({"SET", redis_key(entry.key), kiln::cache::encode_entry(entry)});
    TempDir dir;
    auto config = remote_config(dir.path(), *server, RemoteMode::read_only);
    config.remote->user = "ci-ro";
    config.remote->password = "ro-secret";
    Store store(config);
    EXPECT_TRUE(store.load(entry.key));
    EXPECT_FALSE(store.load(key_of("absent")));
    store.store(make_entry(key_of("never published")));
    EXPECT_TRUE(store.flush_remote());
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.hits, 1u);
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_EQ(stats.errors + stats.stores + stats.skipped, 0u);
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 1);
}

TEST(RemoteFailures, AServerKilledMidRunCostsOneErrorAndComesBack) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    Store store(quick_config(dir.path(), *server));
    const auto before = make_entry(key_of("before"));
    store.store(before);
    ASSERT_TRUE(store.flush_remote());

    server->kill();
    EXPECT_FALSE(store.load(key_of("while down")));
    const auto stored_while_down = make_entry(key_of("stored while down"));
    EXPECT_TRUE(store.store(stored_while_down)); // locally; remote skipped
    store.flush_remote(std::chrono::milliseconds(2000));
    EXPECT_GE(store.remote_stats().errors + store.remote_stats().timeouts, 1u);

    server->restart(); // empty: no persistence
    // The probe closes the breaker; then publishing works again.
    const auto after = make_entry(key_of("after"));
    ASSERT_TRUE(eventually([&] {
        store.store(after);
        store.flush_remote(std::chrono::milliseconds(2000));
        return !server->call({"GET", redis_key(after.key)}).nil;
    }));
    EXPECT_EQ(server->call({"GET", redis_key(after.key)}).text, kiln::cache::encode_entry(after));
}

TEST(RemoteFailures, AConnectionClosedWhileIdleIsNoFailure) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto config = remote_config(dir.path(), *server);
    config.remote->retry_interval = std::chrono::seconds(60);
    Store store(config);
    EXPECT_FALSE(store.load(key_of("opens a connection")));
    store.store(make_entry(key_of("opens the publisher's")));
    ASSERT_TRUE(store.flush_remote());
    // A restart closes both idle connections; the next operations reconnect.
    server->kill();
    server->restart();
    const auto entry = make_entry(key_of("after the restart"));
    server->call({"SET", redis_key(entry.key), kiln::cache::encode_entry(entry)});
    EXPECT_TRUE(store.load(entry.key));
    const auto mine = make_entry(key_of("published after the restart"));
    store.store(mine);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_FALSE(server->call({"GET", redis_key(mine.key)}).nil);
    EXPECT_EQ(store.remote_stats().errors, 0u);
}

TEST(RemoteFailures, AFrozenServerCostsAboutOneDeadlineThenIsSkipped) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto config = quick_config(dir.path(), *server);
    config.remote->retry_interval = std::chrono::milliseconds(200);
    Store store(config);
    EXPECT_FALSE(store.load(key_of("warm the connection")));
    server->pause();
    auto start = Clock::now();
    EXPECT_FALSE(store.load(key_of("frozen")));
    // One deadline is 0.1 s; the bound leaves room for a loaded machine.
    EXPECT_LT(seconds_since(start), 5.0);
    EXPECT_EQ(store.remote_stats().timeouts, 1u);

    // The breaker is open: the next lookups do not ask the server at all.
    EXPECT_FALSE(store.load(key_of("skipped")));
    EXPECT_EQ(store.remote_stats().skipped, 1u);
    EXPECT_EQ(store.remote_stats().timeouts, 1u);
    // Nor does a store wait on it.
    start = Clock::now();
    EXPECT_TRUE(store.store(make_entry(key_of("kept locally"))));
    EXPECT_LT(seconds_since(start), 5.0);

    server->resume();
    const auto entry = make_entry(key_of("thawed"));
    server->call({"SET", redis_key(entry.key), kiln::cache::encode_entry(entry)});
    EXPECT_TRUE(eventually([&] { return store.load(entry.key).has_value(); }));
}

TEST(RemoteFailures, AFrozenServerDelaysTheEndOfAProcessByOneDeadlineAtMost) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto config = quick_config(dir.path(), *server);
    auto store = std::make_unique<Store>(config);
    EXPECT_FALSE(store->load(key_of("connect first")));
    server->pause();
    for (int i = 0; i < 50; ++i)
        store->store(make_entry(key_of("pending " + std::to_string(i))));
    const auto start = Clock::now();
    store.reset();
    EXPECT_LT(seconds_since(start), 5.0);
    server->resume();
}

TEST(RemoteFailures, ClientPauseIsATimeoutThenTheServerIsUsedAgain) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    Store store(quick_config(dir.path(), *server));
    const auto entry = make_entry(key_of("paused"));
    server->call({"SET", redis_key(entry.key), kiln::cache::encode_entry(entry)});
    ASSERT_EQ(server->call({"CLIENT", "PAUSE", "1000"}).type, '+');
    EXPECT_FALSE(store.load(entry.key));
    EXPECT_EQ(store.remote_stats().timeouts, 1u);
    EXPECT_TRUE(eventually([&] { return store.load(entry.key).has_value(); }));
}

TEST(RemoteFailures, AFullServerStopsPublishingButStillServesHits) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto early = make_entry(key_of("early"));
    server->call({"SET", redis_key(early.key), kiln::cache::encode_entry(early)});
    const auto limit = used_memory(*server) + (std::uint64_t{1} << 20);
    ASSERT_TRUE(server->config_set("maxmemory", std::to_string(limit)));
    ASSERT_TRUE(server->config_set("maxmemory-policy", "noeviction"));
    auto config = remote_config(dir.path(), *server);
    config.remote->retry_interval = std::chrono::seconds(60);
    Store store(config);
    for (int i = 0; i < 16; ++i)
        store.store(make_entry(key_of("big " + std::to_string(i)), 256 << 10));
    store.flush_remote();
    const auto stats = store.remote_stats();
    EXPECT_GE(stats.errors, 1u); // the OOM reply
    EXPECT_LT(stats.stores, 16u);
    EXPECT_GE(stats.skipped, 1u); // publishes after it were not tried
    EXPECT_LE(server->call({"DBSIZE"}).integer, 8);
    // Reads go on: a full server still has what it holds.
    TempDir other;
    Store reader(remote_config(other.path(), *server));
    EXPECT_TRUE(reader.load(early.key));
    EXPECT_TRUE(store.load(early.key));
}

TEST(RemoteFailures, AHugeValueIsDamageNotAServerFailure) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto key = key_of("huge");
    // 65 MiB of zero bytes, made by the server (SETRANGE pads), not sent by the test.
    server->call({"SETRANGE", redis_key(key), std::to_string((65 << 20) - 1), "x"});
    Store store(remote_config(dir.path(), *server));
    EXPECT_FALSE(store.load(key));
    EXPECT_EQ(store.remote_stats().damaged, 1u);
    EXPECT_EQ(store.remote_stats().errors, 0u);
    // Replaced by the next compile; other keys are still served.
    const auto entry = make_entry(key);
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"STRLEN", redis_key(key)}).integer,
              static_cast<long long>(kiln::cache::encode_entry(entry).size()));
}

TEST(RemoteFailures, ABigEntryRoundTrips) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir first, second;
    const auto entry = make_entry(key_of("big cubin"), 8 << 20);
    {
        Store store(remote_config(first.path(), *server));
        store.store(entry);
        ASSERT_TRUE(store.flush_remote());
    }
    Store store(remote_config(second.path(), *server));
    auto hit = store.load(entry.key);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->payload, entry.payload);
}

// Issue 37: a read's deadline grows with the size the reply announces, as a publish's does, so
// an entry this process could publish within the default deadlines is also read back within them.
TEST(RemoteFailures, AFortyMegabyteEntryIsFetchedWithTheDefaultDeadlines) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir first, second;
    // Random bytes stored uncompressed: 40 MB on the wire either way, without the test spending
    // most of its time compressing what does not compress.
    auto entry = make_entry(key_of("forty megabytes"), 40000000);
    entry.compression = kiln::cache::Compression::none;
    const auto with_defaults = [&](const std::filesystem::path& dir) {
        auto config = remote_config(dir, *server);
        const kiln::cache::RemoteConfig defaults;
        config.remote->connect_timeout = defaults.connect_timeout; // 100 ms
        config.remote->op_timeout = defaults.op_timeout;           // 50 ms
        config.remote->retry_interval = std::chrono::seconds(60);
        return config;
    };
    {
        Store store(with_defaults(first.path()));
        store.store(entry);
        ASSERT_TRUE(store.flush_remote());
        EXPECT_EQ(store.remote_stats().stores, 1u);
    }
    ASSERT_GT(server->call({"STRLEN", redis_key(entry.key)}).integer, 40000000);
    Store store(with_defaults(second.path()));
    auto hit = store.load(entry.key);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->payload, entry.payload);
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.hits, 1u);
    EXPECT_EQ(stats.errors + stats.timeouts + stats.skipped, 0u);
}

// A 60 MiB value that is no entry (under the 64 MiB limit, so it is read, then fails to decode)
// is replaced by this process's publish, once: poisoned again, it is a counted miss, not another
// write.
TEST(RemoteFailures, APoisonedValueIsReplacedOncePerProcess) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto entry = make_entry(key_of("poisoned"));
    const std::string name = redis_key(entry.key);
    const auto poison = [&] {
        server->call({"DEL", name});
        // 60 MiB made by the server (SETRANGE pads with zero bytes), then a garbage head.
        server->call({"SETRANGE", name, std::to_string((60 << 20) - 1), "x"});
        server->call({"SETRANGE", name, "0", "garbage, not a Kiln entry"});
    };
    poison();
    // Remote-only: no directory answers before the server, so each load asks it. The test's
    // patient deadlines: 60 MiB in 50 ms + 240 ms holds on an idle machine, not on a loaded CI
    // one, and this test is about the writes.
    Store store(remote_config(dir.path(), *server, RemoteMode::remote_only));
    EXPECT_FALSE(store.load(entry.key));
    EXPECT_EQ(store.remote_stats().damaged, 1u);
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_TRUE(server->call({"GET", name}).text == kiln::cache::encode_entry(entry));
    ASSERT_TRUE(store.load(entry.key));

    poison();
    EXPECT_FALSE(store.load(entry.key));
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"STRLEN", name}).integer, 60 << 20); // left alone this time
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.damaged, 2u);
    EXPECT_EQ(stats.errors + stats.timeouts, 0u);
}

TEST(RemoteFailures, ReadOnlyModeNeverReplacesADamagedValue) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto entry = make_entry(key_of("damaged, read-only"));
    server->call({"SET", redis_key(entry.key), "garbage"});
    Store store(remote_config(dir.path(), *server, RemoteMode::read_only));
    EXPECT_FALSE(store.load(entry.key));
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"GET", redis_key(entry.key)}).text, "garbage");
    EXPECT_EQ(store.remote_stats().damaged, 1u);
}

// A value over the limit is refused unread; when this process's own entry is over the limit too,
// nothing can replace it, so it is deleted instead and lookups elsewhere stop paying for it.
TEST(RemoteFailures, AHugeValueNothingCanReplaceIsDeleted) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto key = key_of("huge, and so is ours");
    server->call({"SETRANGE", redis_key(key), std::to_string((65 << 20) - 1), "x"});
    Store store(remote_config(dir.path(), *server, RemoteMode::remote_only));
    EXPECT_FALSE(store.load(key));
    EXPECT_EQ(store.remote_stats().damaged, 1u);
    auto ours = make_entry(key, std::size_t{65} << 20);
    ours.compression = kiln::cache::Compression::none; // too large encoded too, and made quickly
    store.store(ours);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"EXISTS", redis_key(key)}).integer, 0);
    EXPECT_EQ(store.remote_stats().errors, 0u);
}
