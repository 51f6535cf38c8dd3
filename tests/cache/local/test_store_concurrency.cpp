// Many processes on one directory: concurrent writers, writers killed mid-publish, eviction under
// readers. Each process has its own Store, as separate programs would.

#include "kiln/cache/store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <signal.h> // NOLINT(modernize-deprecated-headers): POSIX kill(), not in <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

using kiln::cache::Key;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;

namespace {

constexpr int kProcesses = 16;
constexpr int kEntriesPerProcess = 50;
constexpr int kSharedEntries = 10; // stored by every process: same key, same content

Key process_key(int process, int i) {
    if (i < kSharedEntries) return key_of("shared " + std::to_string(i));
    return key_of("process " + std::to_string(process) + " entry " + std::to_string(i));
}

std::size_t size_for(const Key& key) {
    return 2000 + key.bytes[1] * 16;
}

std::vector<std::filesystem::path> temporaries_in(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> found;
    for (const auto& file : std::filesystem::recursive_directory_iterator(dir))
        if (file.path().filename().string().rfind(".tmp.", 0) == 0) found.push_back(file.path());
    return found;
}

} // namespace

TEST(StoreConcurrency, SixteenProcessesStoringIntoOneFreshDirectoryLeaveNothingDamaged) {
    TempDir dir;
    const auto root = dir / "fresh" / "cache"; // not there yet: every process races to create it
    std::vector<pid_t> children;
    children.reserve(kProcesses);
    for (int p = 0; p < kProcesses; ++p) {
        children.push_back(kiln::test::spawn([&, p] {
            int failures = 0;
            {
                Store store(config_for(root));
                for (int i = 0; i < kEntriesPerProcess; ++i) {
                    const Key key = process_key(p, i);
                    failures += !store.store(make_entry(key, size_for(key)));
                }
                for (int i = 0; i < kEntriesPerProcess; ++i) {
                    const Key key = process_key(p, i);
                    auto loaded = store.load(key);
                    failures +=
                        !loaded || loaded->payload != make_entry(key, size_for(key)).payload;
                }
            } // the Store's destructor writes counts it could not write at once
            return failures == 0 ? 0 : 10;
        }));
    }
    for (pid_t child : children)
        EXPECT_EQ(kiln::test::wait_for(child), 0);

    Store store(config_for(root));
    const auto report = store.local().verify(false);
    EXPECT_EQ(report.damaged, 0u);
    EXPECT_EQ(report.checked,
              std::uint64_t{kSharedEntries + kProcesses * (kEntriesPerProcess - kSharedEntries)});
    const auto stats = store.local().stats();
    EXPECT_EQ(stats.stores, std::uint64_t{kProcesses} * kEntriesPerProcess);
    EXPECT_EQ(stats.hits, std::uint64_t{kProcesses} * kEntriesPerProcess);
    EXPECT_EQ(stats.misses, 0u);
    EXPECT_EQ(stats.entries, report.checked);
    EXPECT_TRUE(temporaries_in(root).empty());
}

TEST(StoreConcurrency, ThreadsSharingOneStoreLoseNoCount) {
    TempDir dir;
    Store store(config_for(dir.path()));
    constexpr int kThreads = 4, kRounds = 50;
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRounds; ++i) {
                const Key key = key_of("thread " + std::to_string(t) + " " + std::to_string(i));
                failures += !store.store(make_entry(key, 1000));
                failures += !store.load(key);
                failures += static_cast<bool>(store.load(key_of("absent " + std::to_string(i))));
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    EXPECT_EQ(failures, 0);
    const auto stats = store.local().stats();
    EXPECT_EQ(stats.stores, std::uint64_t{kThreads} * kRounds);
    EXPECT_EQ(stats.hits, std::uint64_t{kThreads} * kRounds);
    EXPECT_EQ(stats.misses, std::uint64_t{kThreads} * kRounds);
    EXPECT_EQ(stats.entries, std::uint64_t{kThreads} * kRounds);
}

TEST(StoreConcurrency, AWriterKilledMidPublishLeavesNoDamagedVisibleEntry) {
    TempDir dir;
    std::mt19937 random(7);
    for (int round = 0; round < 8; ++round) {
        const pid_t writer = kiln::test::spawn([&, round] {
            Store store(config_for(dir.path()));
            for (int i = 0;; ++i) {
                const Key key = key_of("big " + std::to_string((round * 3 + i) % 12));
                store.store(make_entry(key, (1 + key.bytes[1] % 4) << 20));
            }
            return 0;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + random() % 60));
        ::kill(writer, SIGKILL);
        EXPECT_EQ(kiln::test::wait_for(writer), 128 + SIGKILL);
    }

    Store store(config_for(dir.path()));
    const auto report = store.local().verify(false);
    EXPECT_EQ(report.damaged, 0u);
    for (const auto& info : store.local().list()) {
        auto loaded = store.load(info.key);
        ASSERT_TRUE(loaded);
        EXPECT_EQ(loaded->payload, make_entry(info.key, loaded->payload.size()).payload);
    }
    EXPECT_EQ(store.local().stats().damaged, 0u);

    // What the killed writers left is never an entry, and goes once it is stale.
    const auto temporaries = temporaries_in(dir.path());
    RecordProperty("temporaries_left", static_cast<int>(temporaries.size()));
    for (const auto& temp : temporaries)
        kiln::test::set_mtime(temp, std::time(nullptr) - std::time_t{2} * 3600);
    EXPECT_EQ(store.local().prune(std::uint64_t{1} << 40).temporaries, temporaries.size());
    EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

TEST(StoreConcurrency, EvictionWhileOtherProcessesLoadNeverYieldsDamage) {
    TempDir dir;
    constexpr int kKeys = 64;
    constexpr std::size_t kPayload = 16 << 10;
    std::vector<Key> keys;
    keys.reserve(kKeys);
    for (int i = 0; i < kKeys; ++i)
        keys.push_back(key_of("evict " + std::to_string(i)));
    Store store(config_for(dir.path()));
    for (const Key& key : keys)
        ASSERT_TRUE(store.store(make_entry(key, kPayload)));

    std::vector<pid_t> readers;
    readers.reserve(3);
    for (int r = 0; r < 3; ++r) {
        readers.push_back(kiln::test::spawn([&] {
            Store reader(config_for(dir.path()));
            int hits = 0;
            for (int round = 0; round < 150; ++round) {
                for (const Key& key : keys) {
                    auto loaded = reader.load(key);
                    if (!loaded) continue; // evicted: a miss is fine
                    if (loaded->payload != make_entry(key, kPayload).payload) return 10;
                    ++hits;
                }
            }
            return reader.local().stats().damaged == 0 ? 0 : 11;
        }));
    }
    // Evict down to a quarter and put everything back, for as long as the readers read.
    int passes = 0;
    std::uint64_t evicted = 0;
    for (std::size_t done = 0; done < readers.size();) {
        evicted += store.local().prune(kKeys / 4 * kPayload).entries;
        for (const Key& key : keys)
            store.store(make_entry(key, kPayload));
        ++passes;
        done = 0;
        for (pid_t reader : readers) {
            siginfo_t info{};
            // WNOWAIT: only look; wait_for() below collects the exit code.
            ::waitid(P_PID, static_cast<id_t>(reader), &info, WEXITED | WNOHANG | WNOWAIT);
            done += info.si_pid != 0;
        }
    }
    for (pid_t reader : readers)
        EXPECT_EQ(kiln::test::wait_for(reader), 0);
    EXPECT_GT(evicted, 0u);
    EXPECT_EQ(store.local().stats().damaged, 0u);
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
    RecordProperty("eviction_passes", passes);
}
