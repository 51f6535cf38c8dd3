// Disk cache figures with 10,000 entries present: a hit, a miss, a store, `stats` (a fresh count),
// `ls` (headers only) and an eviction pass. CPU only; these measure the file system and Kiln's
// code around it. KILN_BENCH_CACHE_DIR=DIR keeps the filled cache in DIR (for timing the CLI on
// it); otherwise a temporary directory is filled and removed.

#include "kiln/cache/store.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int kEntries = 10000;
constexpr std::size_t kPayload = 8 << 10; // a small kernel's cubin

kiln::cache::Key key_of(const char* kind, int i) {
    return kiln::cache::KeyBuilder().add(kind, std::uint64_t(i)).finish();
}

kiln::cache::Entry make_entry(const kiln::cache::Key& key) {
    kiln::cache::Entry entry;
    entry.key = key;
    entry.payload.assign(kPayload, static_cast<char>(key.bytes[1]));
    entry.lowered_names = {{"add<float>", "_Z3addIfEvPT_"}};
    entry.nvrtc_version = "13.0.88";
    entry.arch = "sm_90";
    entry.compile_ms = 40;
    return entry;
}

struct Cache {
    std::filesystem::path dir;
    bool keep = false;
    std::unique_ptr<kiln::cache::Store> store;
    std::vector<kiln::cache::Key> keys;

    Cache() {
        if (const char* chosen = std::getenv("KILN_BENCH_CACHE_DIR")) {
            dir = chosen;
            keep = true;
        } else {
            auto pattern = (std::filesystem::temp_directory_path() / "kiln-bench-XXXXXX").string();
            dir = ::mkdtemp(pattern.data());
        }
        kiln::cache::Config config;
        config.dir = dir / "cache";
        config.max_size = std::uint64_t{1} << 40; // no eviction except where a bench asks
        store = std::make_unique<kiln::cache::Store>(config);
        for (int i = 0; i < kEntries; ++i) {
            keys.push_back(key_of("entry", i));
            if (!store->local().peek(keys.back())) store->store(make_entry(keys.back()));
        }
    }
    ~Cache() {
        store.reset();
        std::error_code ec;
        if (!keep) std::filesystem::remove_all(dir, ec);
    }
    /// Put back whatever an eviction removed.
    void refill() {
        for (const auto& key : keys)
            if (!std::filesystem::exists(entry_path(key))) store->store(make_entry(key));
    }
    std::filesystem::path entry_path(const kiln::cache::Key& key) const {
        const std::string hex = key.hex();
        return dir / "cache" / hex.substr(0, 2) / (hex + ".kiln");
    }
};

Cache& cache() {
    static Cache instance;
    return instance;
}

void BM_Cache_LoadHit(benchmark::State& state) {
    auto& c = cache();
    std::size_t i = 0;
    for (auto _ : state) {
        auto entry = c.store->load(c.keys[i]);
        if (!entry) state.SkipWithError("unexpected miss");
        benchmark::DoNotOptimize(entry);
        i = (i + 7919) % c.keys.size(); // hop around the shards
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kPayload));
}
BENCHMARK(BM_Cache_LoadHit)->Unit(benchmark::kMicrosecond);

void BM_Cache_LoadMiss(benchmark::State& state) {
    auto& c = cache();
    int i = 0;
    for (auto _ : state)
        benchmark::DoNotOptimize(c.store->load(key_of("absent", i++)));
}
BENCHMARK(BM_Cache_LoadMiss)->Unit(benchmark::kMicrosecond);

void BM_Cache_Store(benchmark::State& state) {
    auto& c = cache();
    std::vector<kiln::cache::Key> stored;
    int i = 0;
    for (auto _ : state) {
        state.PauseTiming();
        const auto entry = make_entry(key_of("stored", i++));
        state.ResumeTiming();
        if (!c.store->store(entry)) state.SkipWithError("store failed");
        stored.push_back(entry.key);
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kPayload));
    for (const auto& key : stored)
        std::filesystem::remove(c.entry_path(key));
}
BENCHMARK(BM_Cache_Store)->Unit(benchmark::kMicrosecond);

void BM_Cache_Stats(benchmark::State& state) {
    auto& c = cache();
    for (auto _ : state) {
        const auto stats = c.store->local().stats();
        if (stats.entries != kEntries) state.SkipWithError("wrong entry count");
    }
    state.counters["entries"] = kEntries;
}
BENCHMARK(BM_Cache_Stats)->Unit(benchmark::kMillisecond);

void BM_Cache_List(benchmark::State& state) {
    auto& c = cache();
    for (auto _ : state)
        benchmark::DoNotOptimize(c.store->local().list());
    state.counters["entries"] = kEntries;
}
BENCHMARK(BM_Cache_List)->Unit(benchmark::kMillisecond);

// One pass of `kiln cache prune` over 10,000 entries, evicting the oldest 10%.
void BM_Cache_EvictionPass(benchmark::State& state) {
    auto& c = cache();
    std::uint64_t evicted = 0;
    for (auto _ : state) {
        state.PauseTiming();
        c.refill();
        const std::uint64_t target = c.store->local().stats().bytes / 10 * 9;
        state.ResumeTiming();
        evicted += c.store->local().prune(target).entries;
    }
    state.counters["entries"] = kEntries;
    state.counters["evicted_per_pass"] =
        static_cast<double>(evicted) / static_cast<double>(state.iterations());
    c.refill();
}
BENCHMARK(BM_Cache_EvictionPass)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
