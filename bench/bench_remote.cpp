// The remote tier's cost in a fresh process, per kernel: the time of kiln::compile (key, lookup
// through memory, the local directory and Redis, write-back) for N distinct kernels, the first
// call on its own, then the same N again (the hot path: memory hits). Run by remote_tier.sh
// under each configuration (local disk hit, remote hit into an empty directory, cold compiles
// with and without a frozen server); no GPU is needed.
//
//   bench_remote N SALT [--arch sm_90] [--expect hit|compile]
//
// SALT makes the kernels distinct from other runs' (so a "cold" run really compiles). With
// --expect, exits 1 unless every kernel came from the cache (hit) or was compiled (compile).

#include "kiln/cache/store.hpp"
#include "kiln/kiln.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string source(int i, const std::string& salt) {
    return "// " + salt +
           "\nextern \"C\" __global__ void k(float* x, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) x[i] = x[i] * " +
           std::to_string(i + 2) + ".0f + cosf(x[i]);\n}\n";
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_remote N SALT [--arch sm_XX] [--expect hit|compile]\n");
        return 2;
    }
    const int n = std::atoi(argv[1]);
    const std::string salt = argv[2];
    std::string arch = "sm_90", expect;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--arch") == 0) arch = argv[i + 1];
        if (std::strcmp(argv[i], "--expect") == 0) expect = argv[i + 1];
    }
    const auto options = kiln::CompileOptions::for_arch(arch);
    // Untimed: the process's one-time set-up (NVRTC loaded, the store and its configuration),
    // so the first timed call is the first lookup of a kernel, not the first use of Kiln.
    kiln::Compiler::global().key_for(source(0, salt + "-setup"), options);

    std::vector<double> ms;
    int from_cache = 0;
    for (int i = 0; i < n; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto program = kiln::compile(source(i, salt), options);
        ms.push_back(ms_since(t0));
        from_cache += program->origin() == kiln::ProgramOrigin::disk_cache;
    }
    std::vector<double> hot;
    for (int i = 0; i < n; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        kiln::compile(source(i, salt), options);
        hot.push_back(ms_since(t0) * 1000.0);
    }
    const std::vector<double> rest(ms.begin() + 1, ms.end());
    std::printf("%d kernels, %d from the cache: first %.3f ms, then median %.3f ms, max %.3f ms; "
                "memory hits median %.2f us\n",
                n, from_cache, ms.front(), median(rest),
                rest.empty() ? 0.0 : *std::max_element(rest.begin(), rest.end()), median(hot));
    if (auto* store = kiln::Compiler::global().store()) {
        store->flush_remote();
        const auto r = store->remote_stats();
        if (store->config().remote)
            std::printf("  remote: %llu hits, %llu misses, %llu timeouts, %llu errors, %llu "
                        "skipped, %llu stores\n",
                        static_cast<unsigned long long>(r.hits),
                        static_cast<unsigned long long>(r.misses),
                        static_cast<unsigned long long>(r.timeouts),
                        static_cast<unsigned long long>(r.errors),
                        static_cast<unsigned long long>(r.skipped),
                        static_cast<unsigned long long>(r.stores));
    }
    // For remote_tier.sh, which sums up many fresh processes.
    std::printf("RESULT first_ms %.4f median_ms %.4f memory_us %.3f\n", ms.front(), median(rest),
                median(hot));
    if ((expect == "hit" && from_cache != n) || (expect == "compile" && from_cache != 0)) {
        std::fprintf(stderr, "expected every kernel to %s, but %d of %d came from the cache\n",
                     expect == "hit" ? "be a hit" : "compile", from_cache, n);
        return 1;
    }
    return 0;
}
