// One compile per key across hosts (Store::load_or_claim through the remote tier): a lease on
// the server that waiters on other hosts (here: other cache directories) respect, renewed while
// the holder compiles, lost when the holder dies, never taken in read-only mode, and a frozen
// server that costs one deadline. Each test starts its own redis-server (skipped without one).

#include "remote_test_util.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

using namespace kiln::test;
using kiln::cache::ClaimedLoad;
using kiln::cache::RemoteMode;
using kiln::cache::Store;
using Clock = std::chrono::steady_clock;

namespace {

std::string claim_key(const kiln::cache::Key& key) {
    return "kiln-claim:" + key.hex();
}

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

} // namespace

TEST(RemoteClaims, AnotherHostWaitsForTheHoldersEntry) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir host_a, host_b;
    Store a(remote_config(host_a.path(), *server)), b(remote_config(host_b.path(), *server));
    const auto entry = make_entry(key_of("fleet kernel"), 4096);
    ClaimedLoad first = a.load_or_claim(entry.key);
    ASSERT_FALSE(first.entry);
    ASSERT_TRUE(first.claim.held());
    const auto lease = server->call({"GET", claim_key(entry.key)});
    ASSERT_EQ(lease.type, '$');
    EXPECT_FALSE(lease.nil); // who holds it: host, pid and random bytes

    auto second = std::async(std::launch::async, [&] { return b.load_or_claim(entry.key); });
    EXPECT_EQ(second.wait_for(std::chrono::milliseconds(150)), std::future_status::timeout);
    ASSERT_TRUE(a.store(entry));
    first.claim.release(); // ends the lease once the publish is on the server
    ClaimedLoad got = second.get();
    ASSERT_TRUE(got.entry);
    EXPECT_EQ(got.entry->payload, entry.payload);
    EXPECT_FALSE(got.claim.held());
    EXPECT_GT(got.waited.count(), 0);
    ASSERT_TRUE(a.flush_remote());
    EXPECT_TRUE(eventually([&] {
        return server->call({"EXISTS", claim_key(entry.key)}).integer == 0;
    }));
    // Kept in host B's directory too, as any remote hit.
    ASSERT_TRUE(b.flush_remote());
    EXPECT_TRUE(std::filesystem::exists(entry_file(host_b.path(), entry.key)));
}

// The holder renews its lease while it compiles, so a compile longer than the lease is not
// repeated elsewhere.
TEST(RemoteClaims, ALongCompileKeepsItsClaim) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir host_a, host_b;
    Store a(remote_config(host_a.path(), *server)), b(remote_config(host_b.path(), *server));
    const auto entry = make_entry(key_of("long compile"));
    ClaimedLoad first = a.load_or_claim(entry.key);
    ASSERT_TRUE(first.claim.held());
    auto second = std::async(std::launch::async, [&] { return b.load_or_claim(entry.key); });
    // Past the 2 s lease: only its renewals keep it.
    EXPECT_EQ(second.wait_for(std::chrono::milliseconds(3000)), std::future_status::timeout);
    a.store(entry);
    first.claim.release();
    ClaimedLoad got = second.get();
    ASSERT_TRUE(got.entry);
    EXPECT_GE(got.waited.count(),
              std::chrono::nanoseconds(std::chrono::milliseconds(2900)).count());
}

// A holder that dies stops renewing: within a lease another host takes the claim over.
TEST(RemoteClaims, AKilledHoldersClaimPassesOnWithinALease) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir host_a, host_b;
    const auto key = key_of("holder killed");
    ASSERT_TRUE(kill_a_claim_holder(remote_config(host_a.path(), *server), key));
    Store b(remote_config(host_b.path(), *server));
    const auto start = Clock::now();
    ClaimedLoad got = b.load_or_claim(key);
    EXPECT_FALSE(got.entry);
    EXPECT_TRUE(got.claim.held());
    EXPECT_LT(ms_since(start), 4000.0); // the 2 s lease, and polling
}

TEST(RemoteClaims, ReadOnlyModeTakesNoRemoteClaim) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    Store store(remote_config(dir.path(), *server, RemoteMode::read_only));
    const auto key = key_of("read only");
    ClaimedLoad got = store.load_or_claim(key);
    EXPECT_TRUE(got.claim.held()); // the directory's claim still applies
    EXPECT_EQ(server->call({"EXISTS", claim_key(key)}).integer, 0);
}

TEST(RemoteClaims, AFrozenServerCostsOneDeadline) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    Store store(remote_config(dir.path(), *server));
    ASSERT_FALSE(store.load(key_of("warm the connection")));
    server->pause();
    const auto start = Clock::now();
    ClaimedLoad got = store.load_or_claim(key_of("frozen"));
    const double took = ms_since(start);
    server->resume();
    EXPECT_FALSE(got.entry);
    EXPECT_TRUE(got.claim.held()); // the directory's claim
    EXPECT_LT(took, 1900.0);       // one 1 s deadline, then the breaker skips the server
}
