// What TLS costs a remote hit: Store::load of entries from Redis over plain TCP and over TLS,
// side by side (issue 37). Two costs: the first hit of a fresh store (a new connection: TCP, for
// TLS its handshake and certificate check, then GET) and a warm hit (GET on a pooled connection:
// encryption only). Remote-only stores, so no directory answers first. Run by remote_tls.sh,
// which makes the certificates and starts the two servers; no GPU is needed.
//
//   bench_remote_tls PLAIN_URL TLS_URL CA_FILE [N entries] [R fresh stores] [payload bytes]
//
// Prints the medians and the TLS / plain ratios.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

kiln::cache::Config config_for(const std::string& url, const std::string& ca) {
    kiln::cache::Config config;
    config.dir = "/nonexistent/kiln-bench-remote-tls"; // remote-only: never touched
    config.remote = kiln::cache::RemoteConfig::parse_url(url, "bench");
    config.remote->mode = kiln::cache::RemoteMode::remote_only;
    config.remote->ca_file = config.remote->tls ? ca : "";
    // Patient deadlines: this measures the cost, not the breaker.
    config.remote->connect_timeout = std::chrono::seconds(5);
    config.remote->op_timeout = std::chrono::seconds(5);
    return config;
}

struct Figures {
    std::vector<double> first; ///< ms, one per fresh store
    std::vector<double> warm;  ///< ms, one per pooled lookup
    int misses = 0;
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: bench_remote_tls PLAIN_URL TLS_URL CA_FILE [N] [R] [BYTES]\n");
        return 2;
    }
    const std::string urls[2] = {argv[1], argv[2]};
    const std::string ca = argv[3];
    const int n = argc > 4 ? std::atoi(argv[4]) : 200;
    const int rounds = argc > 5 ? std::atoi(argv[5]) : 50;
    const std::size_t bytes = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 32768;

    // N entries with random (incompressible) payloads, as big as a typical cubin, on both servers.
    std::vector<kiln::cache::Entry> entries(static_cast<std::size_t>(n));
    std::mt19937_64 random(37);
    for (int i = 0; i < n; ++i) {
        auto& entry = entries[static_cast<std::size_t>(i)];
        entry.key = kiln::cache::KeyBuilder().add("bench-remote-tls", std::to_string(i)).finish();
        entry.payload.resize(bytes);
        for (auto& c : entry.payload)
            c = static_cast<char>(random());
        entry.arch = "sm_90";
        entry.nvrtc_version = "bench";
    }
    for (const auto& url : urls) {
        kiln::cache::Store store(config_for(url, ca));
        for (const auto& entry : entries)
            store.store(entry);
        if (!store.flush_remote(std::chrono::seconds(60)) || store.remote_stats().stores == 0u) {
            std::fprintf(stderr, "cannot publish to %s\n", url.c_str());
            return 1;
        }
    }

    Figures figures[2];
    // Alternating, so both see the same load on the machine.
    for (int r = 0; r < rounds; ++r) {
        for (int t = 0; t < 2; ++t) {
            kiln::cache::Store store(config_for(urls[t], ca)); // TLS context made here, untimed
            const auto& entry = entries[static_cast<std::size_t>(r % n)];
            const auto start = Clock::now();
            const bool hit = static_cast<bool>(store.load(entry.key));
            figures[t].first.push_back(ms_since(start));
            figures[t].misses += !hit;
        }
    }
    for (int t = 0; t < 2; ++t) {
        kiln::cache::Store store(config_for(urls[t], ca));
        (void)store.load(entries[0].key); // the connection, untimed
        for (int repeat = 0; repeat < 3; ++repeat)
            for (const auto& entry : entries) {
                const auto start = Clock::now();
                const bool hit = static_cast<bool>(store.load(entry.key));
                figures[t].warm.push_back(ms_since(start));
                figures[t].misses += !hit;
            }
    }
    const double first[2] = {median(figures[0].first), median(figures[1].first)};
    const double warm[2] = {median(figures[0].warm), median(figures[1].warm)};
    std::printf("%d entries of %zu payload bytes; %d fresh stores each; medians\n", n, bytes,
                rounds);
    std::printf("%-34s %10s %10s %8s\n", "", "plain TCP", "TLS", "TLS/TCP");
    std::printf("%-34s %7.3f ms %7.3f ms %7.2fx\n", "first hit of a fresh store", first[0],
                first[1], first[1] / first[0]);
    std::printf("%-34s %7.3f ms %7.3f ms %7.2fx\n", "warm hit (pooled connection)", warm[0],
                warm[1], warm[1] / warm[0]);
    if (figures[0].misses + figures[1].misses != 0) {
        std::fprintf(stderr, "%d lookups missed\n", figures[0].misses + figures[1].misses);
        return 1;
    }
    return 0;
}
