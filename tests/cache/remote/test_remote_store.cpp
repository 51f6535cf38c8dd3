// The remote tier behind Store: lookups after the local directory, publishing, modes, and values
// that must not be trusted. Each test starts its own redis-server (skipped without one).

#include "remote_test_util.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/cache/signing.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

using namespace kiln::test;
using kiln::cache::RemoteMode;
using kiln::cache::Store;

namespace {

void expect_same_entry(const kiln::cache::Entry& a, const kiln::cache::Entry& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.payload, b.payload);
    EXPECT_EQ(a.lowered_names, b.lowered_names);
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.log, b.log);
}

} // namespace

TEST(RemoteStore, PublishesAStoredEntryUnderItsKey) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto entry = make_entry(key_of("published"));
    {
        Store store(remote_config(dir.path(), *server));
        EXPECT_TRUE(store.store(entry));
        EXPECT_TRUE(store.flush_remote());
        EXPECT_EQ(store.remote_stats().stores, 1u);
    }
    const auto value = server->call({"GET", redis_key(entry.key)});
    ASSERT_EQ(value.type, '$');
    ASSERT_FALSE(value.nil);
    EXPECT_EQ(value.text, kiln::cache::encode_entry(entry));
    // Locally too, as without a remote tier.
    EXPECT_TRUE(std::filesystem::exists(entry_file(dir.path(), entry.key)));
}

TEST(RemoteStore, AnEmptyDirectoryGetsRemoteHitsAndKeepsThem) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir first, second;
    const auto entry = make_entry(key_of("shared"), 4096);
    {
        Store store(remote_config(first.path(), *server));
        store.store(entry);
        ASSERT_TRUE(store.flush_remote());
    }
    Store store(remote_config(second.path(), *server));
    auto hit = store.load(entry.key);
    ASSERT_TRUE(hit);
    expect_same_entry(*hit, entry);
    auto stats = store.remote_stats();
    EXPECT_EQ(stats.hits, 1u);
    EXPECT_EQ(stats.bytes_read, kiln::cache::encode_entry(entry).size());
    // Written back: the next lookup is a local hit, even with the server gone.
    EXPECT_TRUE(store.flush_remote());
    EXPECT_EQ(read_file(entry_file(second.path(), entry.key)), kiln::cache::encode_entry(entry));
    server->kill();
    ASSERT_TRUE(store.load(entry.key));
    EXPECT_EQ(store.remote_stats().hits, 1u);
}

TEST(RemoteStore, AMissEverywhereIsAMissAndCounted) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    Store store(remote_config(dir.path(), *server));
    EXPECT_FALSE(store.load(key_of("nowhere")));
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_EQ(stats.hits + stats.errors + stats.timeouts + stats.skipped, 0u);
    EXPECT_EQ(store.local().stats().misses, 1u); // the local tier's miss
}

TEST(RemoteStore, KeepsAValueAlreadyThere) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto first = make_entry(key_of("nx"));
    auto second = first;
    second.log = "another compile of the same key";
    server->call({"SET", redis_key(first.key), kiln::cache::encode_entry(first)});
    Store store(remote_config(dir.path(), *server));
    store.store(second);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"GET", redis_key(first.key)}).text, kiln::cache::encode_entry(first));
}

TEST(RemoteStore, ReadOnlyServesHitsAndNeverWrites) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir, other;
    const auto there = make_entry(key_of("there"));
    server->call({"SET", redis_key(there.key), kiln::cache::encode_entry(there)});
    Store store(remote_config(dir.path(), *server, RemoteMode::read_only));
    ASSERT_TRUE(store.load(there.key));
    const auto mine = make_entry(key_of("mine"));
    EXPECT_TRUE(store.store(mine)); // locally
    EXPECT_TRUE(store.flush_remote());
    EXPECT_TRUE(server->call({"GET", redis_key(mine.key)}).nil);
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 1);
    EXPECT_TRUE(std::filesystem::exists(entry_file(dir.path(), mine.key)));
}

TEST(RemoteStore, RemoteOnlyNeverTouchesTheDirectory) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir tmp;
    // A path that cannot be a directory: a file stands where it would be made.
    write_file(tmp / "not-a-dir", "x");
    const auto dir = tmp / "not-a-dir" / "cache";
    const auto entry = make_entry(key_of("remote only"));
    {
        Store store(remote_config(dir, *server, RemoteMode::remote_only));
        EXPECT_FALSE(store.load(entry.key));
        EXPECT_TRUE(store.store(entry));
        EXPECT_TRUE(store.flush_remote());
    }
    TempDir other;
    const auto missing = other / "missing";
    Store store(remote_config(missing, *server, RemoteMode::remote_only));
    auto hit = store.load(entry.key);
    ASSERT_TRUE(hit);
    expect_same_entry(*hit, entry);
    EXPECT_FALSE(std::filesystem::exists(missing));
    EXPECT_FALSE(store.local().save_source(entry.key, "source"));
    EXPECT_EQ(store.remote_stats().hits, 1u);
}

TEST(RemoteStore, ADamagedValueIsAMissAndReplaced) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto entry = make_entry(key_of("damaged"));
    std::string bytes = kiln::cache::encode_entry(entry);
    bytes[bytes.size() - 10] ^= 0x40; // one bit of the payload
    server->call({"SET", redis_key(entry.key), bytes});
    Store store(remote_config(dir.path(), *server));
    EXPECT_FALSE(store.load(entry.key));
    auto stats = store.remote_stats();
    EXPECT_EQ(stats.damaged, 1u);
    EXPECT_EQ(stats.misses, 1u);
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), entry.key)));
    // The compile that follows replaces it, although a value is there (plain SET, not NX).
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"GET", redis_key(entry.key)}).text, kiln::cache::encode_entry(entry));
}

TEST(RemoteStore, TheValueOfAnotherKeyIsAMiss) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    const auto wanted = key_of("wanted");
    const auto other = make_entry(key_of("other"));
    server->call({"SET", redis_key(wanted), kiln::cache::encode_entry(other)});
    Store store(remote_config(dir.path(), *server));
    EXPECT_FALSE(store.load(wanted));
    EXPECT_EQ(store.remote_stats().damaged, 1u);
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir.path(), wanted)));
}

TEST(RemoteStore, ValuesThatAreNotEntriesAreMisses) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    Store store(remote_config(dir.path(), *server));
    const auto entry = make_entry(key_of("cut"));
    const std::string bytes = kiln::cache::encode_entry(entry);
    const std::string values[] = {"", "x", bytes.substr(0, bytes.size() / 2),
                                  bytes.substr(0, kiln::cache::kEntryHeaderSize), bytes + "tail"};
    int n = 0;
    for (const auto& value : values) {
        const auto key = key_of("cut " + std::to_string(n++));
        server->call({"SET", redis_key(key), value});
        EXPECT_FALSE(store.load(key));
    }
    // A value of another Redis type under a Kiln key is the server's error reply, not damage to
    // crash on.
    const auto listed = key_of("a list");
    server->call({"RPUSH", redis_key(listed), "a"});
    EXPECT_FALSE(store.load(listed));
    EXPECT_EQ(store.remote_stats().damaged, 6u);
    EXPECT_EQ(store.remote_stats().errors, 0u);
    // None of it is the server's fault: the tier is still in use.
    server->call({"SET", redis_key(entry.key), bytes});
    EXPECT_TRUE(store.load(entry.key));
}

TEST(RemoteStore, WaitsForPendingPublishesWhenDestroyed) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    {
        Store store(remote_config(dir.path(), *server));
        for (int i = 0; i < 20; ++i)
            store.store(make_entry(key_of("at exit " + std::to_string(i))));
    }
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 20);
}

TEST(RemoteStore, PublishesWithTheTtl) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto config = remote_config(dir.path(), *server);
    config.remote->ttl = std::chrono::seconds(3600);
    const auto entry = make_entry(key_of("expires"));
    Store store(config);
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    const auto ttl = server->call({"TTL", redis_key(entry.key)}).integer;
    EXPECT_GT(ttl, 3000);
    EXPECT_LE(ttl, 3600);
}

TEST(RemoteStore, SelectsTheDatabaseOfTheUrl) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto config = remote_config(dir.path(), *server);
    config.remote->db = 5;
    const auto entry = make_entry(key_of("db five"));
    Store store(config);
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 0);
    EXPECT_EQ(
        server->call({"EVAL", "redis.call('SELECT', 5) return redis.call('DBSIZE')", "0"}).integer,
        1);
}

TEST(RemoteStore, CountersAddUpAcrossStoresInTheDirectory) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    for (int i = 0; i < 2; ++i) {
        Store store(remote_config(dir.path(), *server));
        EXPECT_FALSE(store.load(key_of("counted " + std::to_string(i))));
    }
    Store store(remote_config(dir.path(), *server));
    EXPECT_EQ(store.remote_stats().misses, 2u);
    EXPECT_TRUE(store.local().zero_stats());
    EXPECT_EQ(store.remote_stats().misses, 0u);
}

TEST(RemoteStore, AnEntryTheDriverRejectedIsReplacedRemotely) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    auto entry = make_entry(key_of("rejected"));
    server->call({"SET", redis_key(entry.key), kiln::cache::encode_entry(entry)});
    Store store(remote_config(dir.path(), *server));
    ASSERT_TRUE(store.load(entry.key));
    store.invalidate(entry.key);
    entry.log = "recompiled";
    store.store(entry);
    ASSERT_TRUE(store.flush_remote());
    EXPECT_EQ(server->call({"GET", redis_key(entry.key)}).text, kiln::cache::encode_entry(entry));
}

// With KILN_TRUSTED_KEYS a value is used only when a trusted key signed it: a forged or unsigned
// value (anyone who can write to the server) is a miss, counted `untrusted`.
TEST(RemoteStore, WithTrustedKeysOnlySignedValuesAreUsed) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir writer_dir, forger_dir, reader_dir;
    auto ci =
        std::make_shared<const kiln::cache::SigningKey>(kiln::cache::SigningKey::generate("ci"));
    auto forger = std::make_shared<const kiln::cache::SigningKey>(
        kiln::cache::SigningKey::generate("forger"));
    {
        auto config = remote_config(writer_dir.path(), *server);
        config.signing_key = ci;
        Store store(config);
        store.store(make_entry(key_of("signed")));
        ASSERT_TRUE(store.flush_remote());
    }
    {
        auto config = remote_config(forger_dir.path(), *server);
        config.signing_key = forger;
        Store store(config);
        store.store(make_entry(key_of("forged")));
        ASSERT_TRUE(store.flush_remote());
    }
    Store(remote_config(forger_dir.path(), *server)).store(make_entry(key_of("unsigned")));
    auto config = remote_config(reader_dir.path(), *server, RemoteMode::read_only);
    config.trusted_keys = std::make_shared<const kiln::cache::TrustedKeys>(
        kiln::cache::TrustedKeys::parse(kiln::cache::format_public_key(ci->public_key()), "t"));
    {
        Store store(config);
        EXPECT_TRUE(store.load(key_of("signed")));
        EXPECT_FALSE(store.load(key_of("forged")));
        EXPECT_FALSE(store.load(key_of("unsigned")));
        const auto stats = store.remote_stats();
        EXPECT_EQ(stats.hits, 1u);
        EXPECT_EQ(stats.untrusted, 2u);
        EXPECT_EQ(stats.damaged, 0u);
        EXPECT_TRUE(store.flush_remote());
    }
    // The signed value was checked and written back marked so: the next process uses it from
    // disk while its signer is trusted, and not when it is not.
    const auto written_back = kiln::cache::decode_entry(
        read_file(entry_file(reader_dir.path(), key_of("signed"))), key_of("signed"));
    ASSERT_TRUE(written_back.entry);
    EXPECT_EQ(written_back.entry->provenance, kiln::cache::Provenance::verified);
    server->kill();
    auto local = config_for(reader_dir.path());
    local.trusted_keys = config.trusted_keys;
    EXPECT_TRUE(Store(local).load(key_of("signed")));
    local.trusted_keys = std::make_shared<const kiln::cache::TrustedKeys>();
    EXPECT_FALSE(Store(local).load(key_of("signed")));
}

// A value written back into the private directory is marked as come from elsewhere, so once
// trusted keys are set it is not used unsigned, even with the server flushed.
TEST(RemoteStore, AWriteBackIsNeverTakenForTheUsersOwnCompile) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir writer_dir, reader_dir;
    const auto entry = make_entry(key_of("planted"));
    {
        Store store(remote_config(writer_dir.path(), *server));
        store.store(entry);
        ASSERT_TRUE(store.flush_remote());
    }
    {
        Store store(remote_config(reader_dir.path(), *server));
        ASSERT_TRUE(store.load(entry.key));
        ASSERT_TRUE(store.flush_remote());
    }
    const auto written_back =
        kiln::cache::decode_entry(read_file(entry_file(reader_dir.path(), entry.key)), entry.key);
    ASSERT_TRUE(written_back.entry);
    EXPECT_EQ(written_back.entry->provenance, kiln::cache::Provenance::imported);
    server->call({"FLUSHALL"});
    auto config = config_for(reader_dir.path());
    config.trusted_keys = std::make_shared<const kiln::cache::TrustedKeys>();
    EXPECT_FALSE(Store(config).load(entry.key));
    EXPECT_TRUE(Store(config_for(reader_dir.path())).load(entry.key));
}

TEST(RemoteStore, ValuesAreCompressedEntriesAndOlderUncompressedOnesStillHit) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir first, second;
    const auto entry = make_compressible_entry(key_of("compressed remotely"));
    {
        Store store(remote_config(first.path(), *server));
        ASSERT_TRUE(store.store(entry));
        ASSERT_TRUE(store.flush_remote());
    }
    const auto value = server->call({"GET", redis_key(entry.key)});
    ASSERT_FALSE(value.nil);
    EXPECT_EQ(value.text[14], 1); // zstd
    EXPECT_LT(value.text.size() * 4, encode_uncompressed(entry).size());
    // An older Kiln's value, uncompressed.
    const auto old = make_compressible_entry(key_of("uncompressed remotely"));
    server->call({"SET", redis_key(old.key), encode_uncompressed(old)});
    Store store(remote_config(second.path(), *server));
    auto hit = store.load(entry.key);
    ASSERT_TRUE(hit);
    expect_same_entry(*hit, entry);
    EXPECT_EQ(hit->recipe, entry.recipe);
    auto old_hit = store.load(old.key);
    ASSERT_TRUE(old_hit);
    expect_same_entry(*old_hit, old);
    EXPECT_EQ(store.remote_stats().hits, 2u);
    EXPECT_EQ(store.remote_stats().damaged, 0u);
}
