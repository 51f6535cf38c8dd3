// A hit from the disk cache in a fresh process: per kernel, the time from RawKernel construction
// to a loaded, launchable function, with the CUDA context already created (not timed).
//
//   KILN_CACHE_DIR=DIR bench_disk_hit --populate 100   # compile 100 distinct kernels into DIR
//   KILN_CACHE_DIR=DIR bench_disk_hit --measure 100    # a fresh process: time each hit
//
// Without a GPU, --measure times only the cache lookup (kiln::compile for --arch, default sm_90).
// --measure checks afterwards (untimed) that every kernel came from disk and exits 1 otherwise, so
// an empty or mismatched cache cannot pass a compile time off as a hit.

#include "kiln/kiln.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace {

std::string source(int i) {
    return "extern \"C\" __global__ void k(float* x, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) x[i] = x[i] * " +
           std::to_string(i + 2) + ".0f + sinf(x[i]);\n}\n";
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_disk_hit --populate|--measure N [--arch sm_XX]\n");
        return 2;
    }
    const bool populate = std::strcmp(argv[1], "--populate") == 0;
    const int n = std::atoi(argv[2]);
    std::string arch = argc > 4 && std::strcmp(argv[3], "--arch") == 0 ? argv[4] : "";
    const bool gpu = kiln::Device::available();
    if (arch.empty()) arch = gpu ? kiln::Device::current().arch() : "sm_90";
    if (gpu) kiln::Device::current(); // the context: created here, not timed

    std::vector<double> ms;
    std::vector<std::shared_ptr<const kiln::Program>> programs;
    std::vector<kiln::RawKernel> kernels;
    for (int i = 0; i < n; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (gpu && !populate) {
            kiln::RawKernel kernel(source(i), "k");
            kernel.function();
            kernels.push_back(std::move(kernel));
        } else {
            programs.push_back(kiln::compile(source(i), kiln::CompileOptions::for_arch(arch)));
        }
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    for (const auto& kernel : kernels) // untimed: the programs are in memory by now
        programs.push_back(kernel.compile());
    const auto from_disk = std::count_if(programs.begin(), programs.end(), [](const auto& p) {
        return p->origin() == kiln::ProgramOrigin::disk_cache;
    });
    if (!populate && from_disk != n) {
        std::fprintf(stderr,
                     "only %ld of %d kernels came from the disk cache: populate KILN_CACHE_DIR "
                     "first, for the same architecture\n",
                     static_cast<long>(from_disk), n);
        return 1;
    }
    if (populate) { // the same compiles again in this process: hits in memory
        std::vector<double> memory;
        for (int i = 0; i < n; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            kiln::compile(source(i), kiln::CompileOptions::for_arch(arch));
            memory.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count());
        }
        std::sort(memory.begin(), memory.end());
        std::printf("memory hit %d kernels (%s): median %.2f us per kernel\n", n, arch.c_str(),
                    memory[memory.size() / 2]);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%s %d kernels (%s): median %.3f ms, mean %.3f ms per kernel\n",
                populate ? "populate" : (gpu ? "disk hit + load" : "disk hit (lookup only)"), n,
                arch.c_str(), ms[ms.size() / 2],
                std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size()));
    return 0;
}
