// The remote tier under load and under faults: 16 processes sharing one server and one local
// directory, and a soak of 10,000 operations through a proxy that delays, drops, truncates,
// corrupts and closes, while the server is also frozen now and then. Nothing crashes, nothing is
// damaged, and a hit is always the exact entry.

#include "remote_test_util.hpp"

#include "kiln/cache/entry.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace kiln::test;
using kiln::cache::RemoteMode;
using kiln::cache::Store;

namespace {

// Each key's one true entry: its size depends on the key, so a reader can check every byte.
kiln::cache::Entry entry_of(int n) {
    return make_entry(key_of("soak " + std::to_string(n)),
                      100 + static_cast<std::size_t>(n) * 97 % 20000);
}

/// A TCP proxy between the client and the server that injects faults into what it relays.
class FaultProxy {
  public:
    explicit FaultProxy(std::uint16_t target)
        : m_target(target) {
        m_listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t size = sizeof address;
        if (::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(m_listener, 64) != 0 ||
            ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &size) != 0)
            throw std::runtime_error("proxy: cannot listen");
        m_port = ntohs(address.sin_port);
        m_acceptor = std::thread([this] { accept_loop(); });
    }
    ~FaultProxy() {
        m_stop = true;
        ::shutdown(m_listener, SHUT_RDWR);
        m_acceptor.join();
        ::close(m_listener);
        std::lock_guard<std::mutex> lock(m_mutex);
        for (auto& relay : m_relays)
            relay.join();
    }
    std::uint16_t port() const { return m_port; }
    std::atomic<std::uint64_t> faults{0};

  private:
    void accept_loop() {
        for (;;) {
            pollfd p{m_listener, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) {
                if (m_stop) return;
                continue;
            }
            const int client = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) {
                if (m_stop) return;
                continue;
            }
            std::lock_guard<std::mutex> lock(m_mutex);
            const unsigned seed = static_cast<unsigned>(m_relays.size() * 7919 + 17);
            m_relays.emplace_back([this, client, seed] { relay(client, seed); });
        }
    }

    void relay(int client, unsigned seed) {
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(m_target);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(server, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            ::close(server);
            ::close(client);
            return;
        }
        std::mt19937 random(seed);
        std::uniform_int_distribution<int> percent(0, 999);
        std::vector<char> buffer(1 << 16);
        pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
        bool open = true;
        while (open && !m_stop) {
            if (::poll(fds, 2, 20) <= 0) continue;
            for (int side = 0; side < 2 && open; ++side) {
                if (!(fds[side].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                const ssize_t n = ::recv(fds[side].fd, buffer.data(), buffer.size(), 0);
                if (n <= 0) {
                    open = false;
                    break;
                }
                std::size_t length = static_cast<std::size_t>(n);
                const int dice = percent(random);
                if (dice < 4) { // delay, past a deadline now and then
                    ++faults;
                    std::this_thread::sleep_for(std::chrono::milliseconds(percent(random) % 40));
                } else if (dice < 5) { // drop the connection
                    ++faults;
                    open = false;
                    break;
                } else if (dice < 6) { // truncate, then close
                    ++faults;
                    length /= 2;
                    open = false;
                } else if (dice < 10) { // corrupt one byte
                    ++faults;
                    const int flip = 1 + percent(random) % 255; // drawn first, as before
                    const auto at = static_cast<std::size_t>(percent(random)) % length;
                    buffer[at] = static_cast<char>(buffer[at] ^ flip);
                }
                const int to = fds[1 - side].fd;
                std::size_t sent = 0;
                while (sent < length) {
                    const ssize_t m = ::send(to, buffer.data() + sent, length - sent, MSG_NOSIGNAL);
                    if (m <= 0) {
                        open = false;
                        break;
                    }
                    sent += static_cast<std::size_t>(m);
                }
            }
        }
        ::close(server);
        ::close(client);
    }

    std::uint16_t m_target;
    std::uint16_t m_port = 0;
    int m_listener = -1;
    std::atomic<bool> m_stop{false};
    std::thread m_acceptor;
    std::mutex m_mutex;
    std::vector<std::thread> m_relays;
};

} // namespace

TEST(RemoteSoak, SixteenProcessesShareOneServerAndOneDirectory) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    constexpr int kProcesses = 16, kKernels = 100, kDistinct = 150;
    const auto config = remote_config(dir.path(), *server);
    std::vector<pid_t> children;
    children.reserve(kProcesses);
    for (int p = 0; p < kProcesses; ++p) {
        children.push_back(spawn([&, p] {
            Store store(config);
            int wrong = 0;
            for (int i = 0; i < kKernels; ++i) {
                const auto expected = entry_of((i * 7 + p * 37) % kDistinct);
                if (auto hit = store.load(expected.key)) {
                    if (kiln::cache::encode_entry(*hit) != kiln::cache::encode_entry(expected))
                        ++wrong;
                } else {
                    store.store(expected);
                }
            }
            if (!store.flush_remote()) return 2;
            return wrong == 0 ? 0 : 1;
        }));
    }
    for (pid_t child : children)
        EXPECT_EQ(wait_for(child), 0);

    Store store(config_for(dir.path()));
    const auto verified = store.local().verify(false);
    EXPECT_EQ(verified.damaged, 0u);
    EXPECT_GT(verified.ok, 0u);
    int present = 0;
    for (int n = 0; n < kDistinct; ++n) {
        const auto expected = entry_of(n);
        const auto value = server->call({"GET", redis_key(expected.key)});
        if (value.nil) continue;
        ++present;
        EXPECT_EQ(value.text, kiln::cache::encode_entry(expected)) << n;
    }
    // Every kernel some process asked for was published by one of them.
    std::vector<bool> asked(kDistinct);
    for (int p = 0; p < kProcesses; ++p)
        for (int i = 0; i < kKernels; ++i)
            asked[static_cast<std::size_t>((i * 7 + p * 37) % kDistinct)] = true;
    EXPECT_EQ(present, std::count(asked.begin(), asked.end(), true));
}

TEST(RemoteSoak, TenThousandOperationsWithRandomFaultsGiveOnlyRightAnswers) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    FaultProxy proxy(server->port());
    TempDir dir;
    auto config = config_for(dir.path() / "unused");
    config.remote = kiln::cache::RemoteConfig::parse_url(
        "redis://127.0.0.1:" + std::to_string(proxy.port()), "soak");
    config.remote->mode = RemoteMode::remote_only; // every lookup goes to the server
    config.remote->connect_timeout = std::chrono::milliseconds(20);
    config.remote->op_timeout = std::chrono::milliseconds(20);
    config.remote->retry_interval = std::chrono::milliseconds(5);
    constexpr int kThreads = 4, kOperations = 10000, kKeys = 200;
    std::vector<kiln::cache::Entry> entries;
    std::vector<std::string> encoded;
    for (int n = 0; n < kKeys; ++n) {
        entries.push_back(entry_of(n));
        encoded.push_back(kiln::cache::encode_entry(entries.back()));
    }
    std::atomic<std::uint64_t> hits{0}, wrong{0};
    std::atomic<bool> stop_freezer{false};
    kiln::cache::RemoteStats stats;
    {
        Store store(config);
        // Freeze the server now and then, as an overloaded or swapped-out one would be.
        std::thread freezer([&] {
            while (!stop_freezer) {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                if (stop_freezer) break;
                server->pause();
                std::this_thread::sleep_for(std::chrono::milliseconds(30));
                server->resume();
            }
        });
        // Operations the tier really tried (lookups answered or failed, publishes sent or
        // failed), not those the open breaker skipped.
        auto tried = [&store] {
            const auto s = store.remote_stats();
            return s.hits + s.misses + s.errors + s.timeouts + s.stores;
        };
        std::atomic<bool> enough{false};
        std::vector<std::thread> workers;
        workers.reserve(kThreads);
        for (int t = 0; t < kThreads; ++t) {
            workers.emplace_back([&, t] {
                std::mt19937 random(static_cast<unsigned>(t + 1));
                for (int i = 0; !enough; ++i) {
                    const int n = static_cast<int>(random() % kKeys);
                    if (random() % 2 == 0) {
                        if (auto hit = store.load(entries[n].key)) {
                            ++hits;
                            if (kiln::cache::encode_entry(*hit) != encoded[n]) ++wrong;
                        }
                    } else {
                        store.store(entries[n]);
                    }
                    if (i % 64 == 0) {
                        if (tried() >= kOperations) enough = true;
                        // While the breaker is open, spinning only counts skips.
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                    }
                }
            });
        }
        for (auto& worker : workers)
            worker.join();
        stop_freezer = true;
        freezer.join();
        server->resume();
        store.flush_remote(std::chrono::milliseconds(2000));
        stats = store.remote_stats();
    }
    std::printf("soak: %llu hits, %llu misses, %llu damaged, %llu errors, %llu timeouts, "
                "%llu skipped, %llu stores; %llu faults injected\n",
                static_cast<unsigned long long>(stats.hits),
                static_cast<unsigned long long>(stats.misses),
                static_cast<unsigned long long>(stats.damaged),
                static_cast<unsigned long long>(stats.errors),
                static_cast<unsigned long long>(stats.timeouts),
                static_cast<unsigned long long>(stats.skipped),
                static_cast<unsigned long long>(stats.stores),
                static_cast<unsigned long long>(proxy.faults.load()));
    EXPECT_GE(stats.hits + stats.misses + stats.errors + stats.timeouts + stats.stores,
              std::uint64_t{kOperations});
    EXPECT_GT(stats.errors + stats.timeouts, 0u); // the faults did reach the client
    EXPECT_GT(stats.damaged, 0u);                 // corrupted values were caught
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_GT(hits.load(), 0u);
    EXPECT_GT(proxy.faults.load(), 0u);
    // What the server holds under each key is that key's entry or a value a reader rejects:
    // never another well-formed entry of that key.
    for (int n = 0; n < kKeys; ++n) {
        const auto value = server->call({"GET", redis_key(entries[n].key)});
        if (value.nil) continue;
        auto decoded = kiln::cache::decode_entry(value.text, entries[n].key);
        if (decoded.entry) {
            EXPECT_EQ(kiln::cache::encode_entry(*decoded.entry), encoded[n]) << n;
        }
    }
}
