// What the driver's first module load, function lookup and launch cost in a fresh context, and
// which earlier work takes that first-use set-up out of them: the evidence behind Kiln's context
// priming (runtime/context_priming.hpp). Needs a GPU.
//
//   bench_context_priming [--samples 15]
//
// Each sample is a fresh process (this program again, posix_spawn'd) that makes device 0's primary
// context with plain driver calls (Kiln's priming is not involved), allocates 4 MiB, does the
// priming of its mode, then times one kernel's cubin loaded (cuModuleLoadDataEx), its function
// found and the kernel launched over 2^20 floats: the first call's driver work. Modes, one sample
// of each in turn:
//   none          nothing before (the first use pays the set-up)
//   kiln          Kiln's priming: an empty kernel from PTX, launched on the legacy default
//                 stream (where the timed launch goes), waited for and unloaded, on this thread
//   own-stream    the same on a stream of its own (created, then destroyed)
//   cubin         Kiln's with an unrelated cubin (compiled by NVRTC, as a real kernel is)
//   other-thread  Kiln's priming on a second thread (joined before the timed work)
//   memset        a cuMemsetD32Async and a synchronize instead (no module, no kernel)
// Medians in µs: load, get, launch, their sum, and the priming's own time.

#include "compile/context_priming.hpp"
#include "driver/driver.hpp"
#include "kiln/kiln.hpp"
#include "run_sample.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

const char* const kModes[] = {"none", "kiln", "own-stream", "cubin", "other-thread", "memset"};

const char* const kTimedSource = R"(
extern "C" __global__ void timed(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}
)";
const char* const kUnrelatedSource = R"(
extern "C" __global__ void unrelated(float* x, int n) {
    if (threadIdx.x == 1023) x[0] = n;
}
)";

double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

bool ok(CUresult r) {
    return r == CUDA_SUCCESS;
}

// An empty kernel from @p image (PTX or cubin) named @p name, launched on the legacy default
// stream or on one of its own (@p own_stream), waited for, then the module unloaded.
bool warm_up(const void* image, const char* name, bool own_stream = false) {
    const auto& d = kiln::detail::driver();
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    CUstream stream = nullptr;
    int n = 0;
    CUdeviceptr none = 0;
    void* params[] = {&none, &n};
    const bool done = ok(d.cuModuleLoadDataEx(&module, image, 0, nullptr, nullptr)) &&
                      ok(d.cuModuleGetFunction(&function, module, name)) &&
                      (!own_stream || ok(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))) &&
                      ok(d.cuLaunchKernel(
                          function, 1, 1, 1, 32, 1, 1, 0, stream,
                          image == kiln::detail::kContextPrimingPtx ? nullptr : params, nullptr)) &&
                      ok(d.cuStreamSynchronize(stream));
    if (stream) d.cuStreamDestroy(stream);
    if (module) d.cuModuleUnload(module);
    return done;
}

int sample(const std::string& mode, const std::string& timed_cubin,
           const std::string& unrelated_cubin) {
    const auto& d = kiln::detail::driver();
    CUdevice device = 0;
    CUcontext context = nullptr;
    CUdeviceptr x = 0;
    if (!ok(d.cuDeviceGet(&device, 0)) || !ok(d.cuDevicePrimaryCtxRetain(&context, device)) ||
        !ok(d.cuCtxSetCurrent(context)) || !ok(d.cuMemAlloc(&x, std::size_t{4} << 20)) ||
        !ok(d.cuCtxSynchronize()))
        return 1;
    const double w0 = now_us();
    bool warmed = true;
    if (mode == "kiln")
        warmed = warm_up(kiln::detail::kContextPrimingPtx, kiln::detail::kContextPrimingKernel);
    if (mode == "own-stream")
        warmed =
            warm_up(kiln::detail::kContextPrimingPtx, kiln::detail::kContextPrimingKernel, true);
    if (mode == "cubin") warmed = warm_up(unrelated_cubin.data(), "unrelated");
    if (mode == "other-thread")
        std::thread([&] {
            warmed = ok(d.cuCtxSetCurrent(context)) &&
                     warm_up(kiln::detail::kContextPrimingPtx, kiln::detail::kContextPrimingKernel);
        }).join();
    if (mode == "memset")
        warmed = ok(d.cuMemsetD32Async(x, 0, 1024, nullptr)) && ok(d.cuCtxSynchronize());
    const double w1 = now_us();
    if (!warmed) return 2;

    CUmodule module = nullptr;
    CUfunction function = nullptr;
    int n = 1 << 20;
    void* params[] = {&x, &n};
    const double t0 = now_us();
    if (!ok(d.cuModuleLoadDataEx(&module, timed_cubin.data(), 0, nullptr, nullptr))) return 3;
    const double t1 = now_us();
    if (!ok(d.cuModuleGetFunction(&function, module, "timed"))) return 3;
    const double t2 = now_us();
    if (!ok(d.cuLaunchKernel(function, static_cast<unsigned>(n / 256), 1, 1, 256, 1, 1, 0, nullptr,
                             params, nullptr)))
        return 3;
    const double t3 = now_us();
    if (!ok(d.cuCtxSynchronize())) return 3;
    std::printf("%.2f %.2f %.2f %.2f %.2f\n", t1 - t0, t2 - t1, t3 - t2, t3 - t0, w1 - w0);
    return 0;
}

std::string read_file(const char* path) {
    std::string text;
    if (std::FILE* f = std::fopen(path, "rb")) {
        char buffer[65536];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;)
            text.append(buffer, n);
        std::fclose(f);
    }
    return text;
}

// Runs `self --sample MODE TIMED UNRELATED` and reads its five figures.
bool spawn_sample(const char* self, const char* mode, const std::string& timed,
                  const std::string& unrelated, std::vector<double>& out) {
    const std::vector<const char*> argv = {self,          "--sample",        mode,
                                           timed.c_str(), unrelated.c_str(), nullptr};
    const auto text = kiln::bench::run_for_output(self, argv, environ);
    out.assign(5, 0.0);
    return text && std::sscanf(text->c_str(), "%lf %lf %lf %lf %lf", &out[0], &out[1], &out[2],
                               &out[3], &out[4]) == 5;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 5 && std::string(argv[1]) == "--sample")
        return sample(argv[2], read_file(argv[3]), read_file(argv[4]));
    int samples = 15;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--samples" && i + 1 < argc) {
            samples = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: bench_context_priming [--samples N]\n");
            return 2;
        }
    }
    std::string reason;
    if (!kiln::Device::available(&reason)) {
        std::printf("bench_context_priming: skipped, no GPU (%s)\n", reason.c_str());
        return 0;
    }
    const kiln::Device device(0);
    const std::string arch = device.arch();
    kiln::CompileOptions options = kiln::CompileOptions::for_arch(arch);
    options.use_disk_cache = false;
    const std::string timed =
        kiln::bench::write_temporary(kiln::compile(kTimedSource, options)->cubin(), "kiln-priming");
    const std::string unrelated = kiln::bench::write_temporary(
        kiln::compile(kUnrelatedSource, options)->cubin(), "kiln-priming");
    if (timed.empty() || unrelated.empty()) return 1;
    std::vector<std::vector<double>> rows[std::size(kModes)];
    int status = 0;
    for (int s = 0; s < samples && status == 0; ++s)
        for (std::size_t m = 0; m < std::size(kModes); ++m) {
            std::vector<double> figures;
            if (!spawn_sample(argv[0], kModes[m], timed, unrelated, figures)) {
                std::fprintf(stderr, "a %s sample failed\n", kModes[m]);
                status = 1;
                break;
            }
            rows[m].push_back(figures);
        }
    ::unlink(timed.c_str());
    ::unlink(unrelated.c_str());
    std::printf("a fresh context's first module load, function and launch, %s, %s, %d fresh "
                "processes per mode (medians, us)\n",
                device.name().c_str(), arch.c_str(), samples);
    std::printf("  %-13s %7s %7s %7s %7s %9s\n", "before it", "load", "get", "launch", "sum",
                "priming");
    for (std::size_t m = 0; m < std::size(kModes); ++m) {
        double med[5];
        for (int c = 0; c < 5; ++c) {
            std::vector<double> column;
            for (const auto& row : rows[m])
                column.push_back(row[static_cast<std::size_t>(c)]);
            med[c] = median(column);
        }
        std::printf("  %-13s %7.1f %7.1f %7.1f %7.1f %9.1f\n", kModes[m], med[0], med[1], med[2],
                    med[3], med[4]);
    }
    return status;
}
