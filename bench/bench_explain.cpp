// What explaining a miss costs (kiln/cache/explain.hpp) on a cache of 10,000 entries: the scan
// of every entry's metadata that a MissExplainer makes (what `kiln compile --json` pays after a
// miss, `kiln cache explain`, and each miss logged at KILN_LOG_LEVEL=debug), and one explanation
// against the scan (what `kiln warm --json` pays per miss after one scan). CPU only: the entries
// are fabricated and stored through the Store, no NVRTC runs. 1,000 kernels in 10 variants each
// (architectures and options), each with a recipe: a 2 KiB source, a 4 KiB header, 8 KiB cubin.

#include "kiln/cache/explain.hpp"
#include "kiln/cache/store.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace {

constexpr int kKernels = 1000;
constexpr int kVariants = 10;
constexpr std::size_t kPayload = 8 << 10;

kiln::cache::Entry make_entry(int kernel, int variant) {
    kiln::cache::Entry entry;
    entry.key = kiln::cache::KeyBuilder()
                    .add("kernel", std::uint64_t(kernel))
                    .add("variant", std::uint64_t(variant))
                    .finish();
    const std::string name = "kernel_" + std::to_string(kernel);
    entry.payload.assign(kPayload, static_cast<char>(entry.key.bytes[1]));
    entry.nvrtc_version = "13.0 (build 65be0db3)";
    entry.arch = variant % 2 ? "sm_90" : "sm_80";
    entry.compile_ms = 40;
    entry.kernel_names = {name};
    kiln::cache::Recipe recipe;
    recipe.source = "extern \"C\" __global__ void " + name + "(float* x) {\n";
    while (recipe.source.size() < 2048)
        recipe.source += "    x[threadIdx.x] = x[threadIdx.x] * 2.0f + " +
                         std::to_string(recipe.source.size() + kernel) + ".0f;\n";
    recipe.source += "}\n";
    recipe.options = {"-DVARIANT=" + std::to_string(variant / 2), "--use_fast_math"};
    std::string header = "#pragma once\n";
    while (header.size() < 4096)
        header += "template <class T> __device__ T twice_" + std::to_string(header.size()) +
                  "(T v) { return v + v; }\n";
    recipe.headers = {{"helpers.cuh", header}};
    recipe.program_name = "/cache/" + entry.key.hex() + ".cu";
    entry.recipe = std::move(recipe);
    return entry;
}

struct Cache {
    std::filesystem::path dir;
    std::unique_ptr<kiln::cache::Store> store;

    Cache() {
        auto pattern = (std::filesystem::temp_directory_path() / "kiln-bench-XXXXXX").string();
        dir = ::mkdtemp(pattern.data());
        kiln::cache::Config config;
        config.dir = dir / "cache";
        config.max_size = std::uint64_t{1} << 40; // no eviction
        store = std::make_unique<kiln::cache::Store>(config);
        for (int kernel = 0; kernel < kKernels; ++kernel)
            for (int variant = 0; variant < kVariants; ++variant)
                store->store(make_entry(kernel, variant));
    }
    ~Cache() {
        store.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

Cache& cache() {
    static Cache instance;
    return instance;
}

// A compile that missed: kernel 500 with options no entry has.
kiln::cache::Entry wanted() {
    kiln::cache::Entry entry = make_entry(kKernels / 2, 0);
    entry.key = kiln::cache::KeyBuilder().add("wanted", std::uint64_t{1}).finish();
    entry.recipe->options = {"-DVARIANT=99", "--use_fast_math"};
    return entry;
}

// The scan a MissExplainer makes of 10,000 entries, then one explanation: one `kiln compile
// --json` miss, or one miss logged at debug level.
void BM_Explain_ScanAndExplain(benchmark::State& state) {
    auto& c = cache();
    const auto want = wanted();
    for (auto _ : state) {
        kiln::cache::MissExplainer explainer(c.store->local());
        const auto why = explainer.explain(want);
        if (explainer.entries() != kKernels * kVariants || !why.nearest)
            state.SkipWithError("wrong scan");
    }
    state.counters["entries"] = kKernels * kVariants;
}
BENCHMARK(BM_Explain_ScanAndExplain)->Unit(benchmark::kMillisecond);

// One explanation against a scan made once: each further miss of a `kiln warm --json` run.
void BM_Explain_Explain(benchmark::State& state) {
    auto& c = cache();
    const kiln::cache::MissExplainer explainer(c.store->local());
    const auto want = wanted();
    for (auto _ : state)
        benchmark::DoNotOptimize(explainer.explain(want));
}
BENCHMARK(BM_Explain_Explain)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
