// One compile per key across the processes of a cache directory (Store::load_or_claim): a claim
// file locked in the key's shard, waiters that get the holder's entry, a holder that fails or
// dies, the bounded wait, and what maintenance does with claims left behind.

#include "../cache_test_util.hpp"

#include <gtest/gtest.h>

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <thread>

using namespace kiln::test;
using kiln::cache::ClaimedLoad;
using kiln::cache::Store;
using Clock = std::chrono::steady_clock;

namespace {

std::filesystem::path claim_file(const std::filesystem::path& dir, const kiln::cache::Key& key) {
    const std::string hex = key.hex();
    return dir / hex.substr(0, 2) / (hex + ".claim");
}

kiln::cache::Config waiting(const std::filesystem::path& dir, std::chrono::milliseconds wait) {
    auto config = config_for(dir);
    config.compile_wait = wait;
    return config;
}

double ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace

// Flock locks belong to open files, so two stores of one process contend as two processes do.
TEST(CompileClaims, AWaiterGetsTheHoldersEntryInsteadOfCompiling) {
    TempDir dir;
    Store holder(config_for(dir.path())), waiter(config_for(dir.path()));
    const auto entry = make_entry(key_of("claimed"));
    ClaimedLoad first = holder.load_or_claim(entry.key);
    ASSERT_FALSE(first.entry);
    ASSERT_TRUE(first.claim.held());
    EXPECT_TRUE(std::filesystem::is_regular_file(claim_file(dir.path(), entry.key)));

    auto second = std::async(std::launch::async, [&] { return waiter.load_or_claim(entry.key); });
    EXPECT_EQ(second.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
    ASSERT_TRUE(holder.store(entry));
    first.claim.release();
    ClaimedLoad got = second.get();
    ASSERT_TRUE(got.entry);
    EXPECT_EQ(got.entry->payload, entry.payload);
    EXPECT_FALSE(got.claim.held());
    EXPECT_GE(ms(got.waited), 90.0);
    // The holder let go: nothing is left at the claim's name.
    EXPECT_FALSE(std::filesystem::exists(claim_file(dir.path(), entry.key)));
}

TEST(CompileClaims, AHolderThatStoresNothingHandsTheClaimOn) {
    TempDir dir;
    Store holder(config_for(dir.path())), waiter(config_for(dir.path()));
    const auto key = key_of("failed compile");
    ClaimedLoad first = holder.load_or_claim(key);
    ASSERT_TRUE(first.claim.held());
    auto second = std::async(std::launch::async, [&] { return waiter.load_or_claim(key); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    first.claim.release(); // the compile failed: no entry
    ClaimedLoad got = second.get();
    EXPECT_FALSE(got.entry);
    EXPECT_TRUE(got.claim.held()); // the waiter compiles it now, under the claim
    Store late(waiting(dir.path(), std::chrono::milliseconds(100)));
    ClaimedLoad third = late.load_or_claim(key);
    EXPECT_FALSE(third.claim.held()); // still held by the waiter: the wait ran out
}

TEST(CompileClaims, TheWaitIsBoundedByCompileWait) {
    TempDir dir;
    Store holder(config_for(dir.path()));
    Store waiter(waiting(dir.path(), std::chrono::milliseconds(300)));
    const auto key = key_of("slow compile");
    ClaimedLoad first = holder.load_or_claim(key);
    ASSERT_TRUE(first.claim.held());
    const auto start = Clock::now();
    ClaimedLoad got = waiter.load_or_claim(key);
    const double took = ms(Clock::now() - start);
    EXPECT_FALSE(got.entry);
    EXPECT_FALSE(got.claim.held()); // compiles without a claim
    EXPECT_GE(took, 290.0);
    EXPECT_LT(took, 3000.0);
}

TEST(CompileClaims, ZeroWaitTakesNoClaim) {
    TempDir dir;
    Store store(waiting(dir.path(), std::chrono::milliseconds(0)));
    ClaimedLoad got = store.load_or_claim(key_of("no claims"));
    EXPECT_FALSE(got.entry);
    EXPECT_FALSE(got.claim.held());
    EXPECT_FALSE(std::filesystem::exists(claim_file(dir.path(), key_of("no claims"))));
}

TEST(CompileClaims, AKilledHoldersClaimIsTakenAtOnceAndRemovedByMaintenance) {
    TempDir dir;
    const auto key = key_of("killed holder");
    ASSERT_TRUE(kill_a_claim_holder(config_for(dir.path()), key));
    ASSERT_TRUE(std::filesystem::exists(claim_file(dir.path(), key))); // left behind

    Store store(config_for(dir.path()));
    const auto start = Clock::now();
    ClaimedLoad got = store.load_or_claim(key);
    EXPECT_TRUE(got.claim.held()); // the kernel dropped the dead holder's lock
    EXPECT_LT(ms(Clock::now() - start), 1000.0);
    got.claim.release();

    // A claim a process died holding: verify --fix removes it (clear: below).
    ASSERT_TRUE(kill_a_claim_holder(config_for(dir.path()), key));
    ASSERT_TRUE(std::filesystem::exists(claim_file(dir.path(), key)));
    const auto verified = store.local().verify(true);
    EXPECT_EQ(verified.removed, 1u);
    EXPECT_FALSE(std::filesystem::exists(claim_file(dir.path(), key)));
}

TEST(CompileClaims, PruneAndClearLeaveAHeldClaimAlone) {
    TempDir dir;
    Store holder(config_for(dir.path())), other(config_for(dir.path()));
    const auto key = key_of("held during prune");
    ClaimedLoad first = holder.load_or_claim(key);
    ASSERT_TRUE(first.claim.held());
    other.local().prune(0);
    other.local().clear();
    EXPECT_TRUE(std::filesystem::exists(claim_file(dir.path(), key)));
    first.claim.release();
    // A stale one goes with clear.
    { std::ofstream(claim_file(dir.path(), key)) << ""; }
    const auto cleared = other.local().clear();
    EXPECT_EQ(cleared.temporaries, 1u);
    EXPECT_FALSE(std::filesystem::exists(claim_file(dir.path(), key)));
}

// Whatever is planted at the claim's name is never followed or blocked on: a link to a file
// elsewhere, a FIFO, a directory and a hard link are replaced, and the claim is taken.
TEST(CompileClaims, WhatIsPlantedAtTheClaimsNameIsReplaced) {
    TempDir dir, elsewhere;
    Store store(config_for(dir.path()));
    const auto victim = elsewhere.path() / "victim";
    { std::ofstream(victim) << "precious"; }
    const auto plant = [&](const std::string& name,
                           const std::function<void(const std::string&)>& make) {
        const auto key = key_of(name);
        store.load(key); // makes the shard
        std::filesystem::create_directories(claim_file(dir.path(), key).parent_path());
        make(claim_file(dir.path(), key).string());
        ClaimedLoad got = store.load_or_claim(key);
        EXPECT_TRUE(got.claim.held()) << name;
        got.claim.release();
        EXPECT_FALSE(
            std::filesystem::exists(std::filesystem::symlink_status(claim_file(dir.path(), key))))
            << name;
    };
    plant("link", [&](const std::string& at) { std::filesystem::create_symlink(victim, at); });
    plant("fifo", [&](const std::string& at) { ASSERT_EQ(::mkfifo(at.c_str(), 0600), 0); });
    plant("dir", [&](const std::string& at) { std::filesystem::create_directory(at); });
    plant("hard link",
          [&](const std::string& at) { ASSERT_EQ(::link(victim.c_str(), at.c_str()), 0); });
    std::ifstream in(victim);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "precious");
    EXPECT_EQ(std::filesystem::hard_link_count(victim), 1u);
}

// A claim file someone keeps locked forever (a planted file, or a stuck process) costs a waiter
// the bounded wait, no more.
TEST(CompileClaims, AClaimLockedForeverCostsOnlyTheWait) {
    TempDir dir;
    Store store(waiting(dir.path(), std::chrono::milliseconds(200)));
    const auto key = key_of("locked forever");
    store.load(key);
    std::filesystem::create_directories(claim_file(dir.path(), key).parent_path());
    const int fd = ::open(claim_file(dir.path(), key).c_str(), O_RDONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX), 0);
    const auto start = Clock::now();
    ClaimedLoad got = store.load_or_claim(key);
    EXPECT_FALSE(got.claim.held());
    EXPECT_LT(ms(Clock::now() - start), 2000.0);
    ::close(fd);
}

// Processes started together on one empty directory compile each key once: the others get the
// entry. Counted by who held a claim with no entry to find (the compiles).
TEST(CompileClaims, EightProcessesCompileEachKeyOnce) {
    TempDir dir;
    constexpr int kProcesses = 8, kKeys = 5;
    std::vector<pid_t> children;
    int results[2];
    ASSERT_EQ(::pipe(results), 0);
    for (int p = 0; p < kProcesses; ++p)
        children.push_back(spawn([&] {
            Store store(config_for(dir.path()));
            for (int k = 0; k < kKeys; ++k) {
                const auto key = key_of("fleet " + std::to_string(k));
                ClaimedLoad got = store.load_or_claim(key);
                if (got.entry) continue;
                std::this_thread::sleep_for(std::chrono::milliseconds(30)); // "compiling"
                store.store(make_entry(key));
                const char compiled = static_cast<char>('0' + k);
                (void)!::write(results[1], &compiled, 1);
            }
            return 0;
        }));
    for (pid_t child : children)
        EXPECT_EQ(wait_for(child), 0);
    ::close(results[1]);
    std::string compiled;
    char byte;
    while (::read(results[0], &byte, 1) == 1)
        compiled += byte;
    ::close(results[0]);
    EXPECT_EQ(compiled.size(), static_cast<std::size_t>(kKeys)) << compiled;
}
