// The first call of a kernel in a fresh process, with the kernel already in the disk cache (issue
// 16, item 1: at most 0.2 ms; issue 39, item 3: within 1.15x of the driver's floor), for a
// RawKernel (`my_add`), an ElementwiseKernel (`squared_diff`), a ReductionKernel (`l2norm` over
// rows) and a fused function (`(x - y) * (x - y)` through kiln::fuse), and, with a GPU, the
// driver's floor for the raw kernel: its cubin read from a file, cuModuleLoadDataEx,
// cuModuleGetFunction, cuLaunchKernel and a synchronization, nothing else.
//
//   KILN_CACHE_DIR=DIR bench_first_call --populate [--arch sm_XX]
//   KILN_CACHE_DIR=DIR bench_first_call [--samples 20] [--kind
//   floor|raw|elementwise|reduction|fused]
//                                       [--arch sm_XX] [--no-gpu] [--trace] [--warm-up-both]
//                                       [--read-ahead-both]
//
// --trace: one more sample per kind with KILN_DRIVER_TRACE=1 (every driver call and the host time
// before it on standard error) and the timed call's minor page faults. KILN_BENCH_PREPARE=1 runs
// kiln::prepare() before the timed region without a GPU too (with one, loading the driver did).
//
// Each sample is a fresh process (this program again, posix_spawn'd) that makes the kernel and
// calls it once. Two figures per sample: from just before the first Kiln call (the kernel object
// made, the call made) to its end, and from the parent's clock just before the spawn (exec,
// loading the shared libraries, static initialization) to the same end. Medians over the samples.
//
// --warm-up-both: every kind's samples alternate between Kiln's context priming on (the default)
// and off (KILN_CONTEXT_WARM_UP=0), reported on two lines. Kiln warms up a context it makes (one
// empty kernel loaded from PTX and launched), which takes the driver's first-load and
// first-launch set-up out of the first call: the context's creation, reported beside each line
// ("context"), pays for it instead.
//
// --read-ahead-both: the same with Kiln's read-ahead on (the default) and off (KILN_READ_AHEAD=0).
// With it, kiln::prepare() reads the memos and entries this program's last processes used while
// the driver loads (the populate run files them), so the timed call finds its kernel's bytes in
// memory; without it, the call opens and reads its files. Both flags together: three lines.
// With both on (the defaults), the context's creation also loads the modules read ahead, and the
// timed call adopts its kernel's instead of loading it; either setting off turns that off too.
//
// With a GPU, the CUDA context is created before the timed region and the inputs allocated there;
// the timed region is the kernel object's construction and the front end's real call (compile
// answered from disk, module load, launch), up to the end of the device's synchronization after
// it, as for the floor (issue 39's protocol; before, the synchronization was not timed). Kiln loads
// the driver there, so its start-up work (kiln::prepare()) has run alongside cuInit, as in any
// program whose first CUDA work goes through Kiln; the no-GPU figures have nothing prepared.
// Without a GPU (or with --no-gpu), the call is the compile, answered from disk: the path up to the
// cubin bytes being in hand (compile_for for the generated kernels). Every sample checks, untimed,
// that its kernel came from disk and fails otherwise, so an empty or mismatched cache cannot pass a
// compile off as a hit.

#include "core/specialization_memo.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/kiln.hpp"
#include "run_sample.hpp"

#include "driver/driver.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

const char* const kMyAdd = R"(
extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
)";

constexpr std::int64_t kElements = 1 << 20;
constexpr std::int64_t kRows = 1024, kCols = 1024;

// The fused kind's function: a named closure type, the same in every process of this build.
constexpr auto kFusedSquaredDiff = [](auto a, auto b) { return (a - b) * (a - b); };

std::int64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

long minor_faults() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

// The minor page faults when the timed region began (KILN_BENCH_FAULTS=1 reports those in it).
long g_faults_at_start = 0;

std::int64_t start_clock() {
    g_faults_at_start = minor_faults();
    return now_ns();
}

bool from_disk(const kiln::Program& program) {
    return program.origin() == kiln::ProgramOrigin::disk_cache;
}

// Where a generated kernel's Arrays point when there is no GPU: never dereferenced.
constexpr CUdeviceptr kDescribed = CUdeviceptr{1} << 20;

// The driver's floor for my_add's first call: the cubin read from @p cubin_path, loaded, its
// function found and launched; the same inputs and launch as the raw kind.
bool floor_call(const std::string& cubin_path, std::int64_t& t0, std::int64_t& t1) {
    using namespace kiln;
    Array x = empty({kElements}, DType::float32), y = empty({kElements}, DType::float32),
          z = empty({kElements}, DType::float32);
    Device::current().synchronize();
    const auto& driver = detail::driver();
    t0 = start_clock();
    const int fd = ::open(cubin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::string cubin;
    char buffer[65536];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        cubin.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    if (driver.cuModuleLoadDataEx(&module, cubin.data(), 0, nullptr, nullptr) != CUDA_SUCCESS ||
        driver.cuModuleGetFunction(&function, module, "my_add") != CUDA_SUCCESS)
        return false;
    CUdeviceptr px = x.data(), py = y.data(), pz = z.data();
    int n = static_cast<int>(kElements);
    void* params[] = {&px, &py, &pz, &n};
    const CUresult launched =
        driver.cuLaunchKernel(function, static_cast<unsigned>(kElements / 256), 1, 1, 256, 1, 1, 0,
                              nullptr, params, nullptr);
    const bool done = driver.cuCtxSynchronize() == CUDA_SUCCESS;
    t1 = now_ns();
    return launched == CUDA_SUCCESS && done;
}

// Writes my_add's cubin (a disk hit) to a private temporary file for the floor's samples.
std::string write_floor_cubin(const std::string& arch) {
    const auto program = kiln::compile(kMyAdd, kiln::CompileOptions::for_arch(arch));
    return kiln::bench::write_temporary(program->cubin(), "kiln-floor");
}

// One kernel's first call. Returns whether it came from disk; @p t0 is set just before the first
// Kiln call (after the context and inputs, which are not timed).
bool first_call(const std::string& kind, const std::string& arch, bool gpu, std::int64_t& t0,
                std::int64_t& t1) {
    using namespace kiln;
    if (kind == "raw") {
        if (!gpu) {
            t0 = start_clock();
            auto program = compile(kMyAdd, CompileOptions::for_arch(arch));
            t1 = now_ns();
            return from_disk(*program);
        }
        Array x = empty({kElements}, DType::float32), y = empty({kElements}, DType::float32),
              z = empty({kElements}, DType::float32);
        Device::current().synchronize();
        t0 = start_clock();
        RawKernel my_add(kMyAdd, "my_add");
        my_add(Dim3{static_cast<unsigned>(kElements / 256)}, Dim3{256}, x.data(), y.data(),
               z.data(), static_cast<int>(kElements));
        Device::current().synchronize();
        t1 = now_ns();
        return from_disk(*my_add.compile());
    }
    if (kind == "elementwise") {
        if (!gpu) {
            const Array x = Array::wrap(kDescribed, {kElements}, DType::float32);
            const Arg args[] = {x, x};
            t0 = start_clock();
            ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
                                           "squared_diff");
            auto program = squared_diff.compile_for(args, 2, {}, arch);
            t1 = now_ns();
            return from_disk(*program);
        }
        Array x = empty({kElements}, DType::float32), y = empty({kElements}, DType::float32),
              z = empty({kElements}, DType::float32);
        Device::current().synchronize();
        t0 = start_clock();
        ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
        squared_diff(x, y, z);
        Device::current().synchronize();
        t1 = now_ns();
        const Arg args[] = {x, y, z};
        return from_disk(*squared_diff.compile_for(args, 3, {}, arch));
    }
    if (kind == "fused") {
        if (!gpu) {
            const Array x = Array::wrap(kDescribed, {kElements}, DType::float32);
            const Arg args[] = {x, x};
            t0 = start_clock();
            auto squared_diff = fuse("fused_squared_diff", kFusedSquaredDiff);
            auto program = squared_diff.compile_for(args, 2, arch);
            t1 = now_ns();
            return from_disk(*program);
        }
        Array x = empty({kElements}, DType::float32), y = empty({kElements}, DType::float32);
        Device::current().synchronize();
        t0 = start_clock();
        auto squared_diff = fuse("fused_squared_diff", kFusedSquaredDiff);
        const Array z = squared_diff(x, y);
        Device::current().synchronize();
        t1 = now_ns();
        const Arg args[] = {x, y};
        return from_disk(*squared_diff.compile_for(args, 2, arch));
    }
    // reduction: l2norm of each row
    if (!gpu) {
        const Array x = Array::wrap(kDescribed, {kRows, kCols}, DType::float32);
        const Arg args[] = {x};
        t0 = start_clock();
        ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
        auto program = l2norm.compile_for(args, 1, ReduceCall{1}, arch);
        t1 = now_ns();
        return from_disk(*program);
    }
    Array x = empty({kRows, kCols}, DType::float32);
    Device::current().synchronize();
    t0 = start_clock();
    ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    Array y = l2norm(ReduceCall{1}, x)[0];
    Device::current().synchronize();
    t1 = now_ns();
    const Arg args[] = {x};
    return from_disk(*l2norm.compile_for(args, 1, ReduceCall{1}, arch));
}

// The generated kernels need an output given for the populate call to match the measured one.
void populate(const std::string& arch, bool gpu) {
    using namespace kiln;
    compile(kMyAdd, CompileOptions::for_arch(arch));
    ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
    ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    const Array x = Array::wrap(kDescribed, {kElements}, DType::float32);
    const Arg given[] = {x, x, x}, allocated[] = {x, x};
    squared_diff.compile_for(given, 3, {}, arch);
    squared_diff.compile_for(allocated, 2, {}, arch);
    const Array m = Array::wrap(kDescribed, {kRows, kCols}, DType::float32);
    const Arg rows[] = {m};
    l2norm.compile_for(rows, 1, ReduceCall{1}, arch);
    fuse("fused_squared_diff", kFusedSquaredDiff).compile_for(allocated, 2, arch);
    if (gpu) { // real calls too, in case a device's layout differs from the described one
        std::int64_t t0 = 0, t1 = 0;
        for (const char* kind : {"raw", "elementwise", "reduction", "fused"})
            first_call(kind, arch, true, t0, t1);
    }
    std::printf("populated %s for %s\n", cache::Store::global().config().dir.c_str(), arch.c_str());
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct Sample {
    double call_ms = 0, process_ms = 0, context_ms = 0;
};

// Runs `self --sample KIND ...` once and reads its one line of figures.
bool spawn_sample(const char* self, const std::string& kind, const std::string& arch, bool no_gpu,
                  const std::string& cubin_path, Sample& out) {
    const std::string started = std::to_string(now_ns());
    std::vector<const char*> argv = {self,         "--sample",  kind.c_str(),   "--arch",
                                     arch.c_str(), "--started", started.c_str()};
    if (no_gpu) argv.push_back("--no-gpu");
    if (!cubin_path.empty()) {
        argv.push_back("--cubin");
        argv.push_back(cubin_path.c_str());
    }
    argv.push_back(nullptr);
    const auto text = kiln::bench::run_for_output(self, argv, environ);
    return text && std::sscanf(text->c_str(), "%lf %lf %lf", &out.call_ms, &out.process_ms,
                               &out.context_ms) == 3;
}

} // namespace

int main(int argc, char** argv) {
    std::string mode = "measure", kind = "all", arch, cubin_path;
    std::int64_t started = 0;
    int samples = 20;
    bool no_gpu = false, trace = false;
    // Settings a sample runs with besides the environment's: each turned off ("0") in turn.
    std::vector<std::pair<const char*, const char*>> toggles; // variable, label
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--populate")
            mode = "populate";
        else if (a == "--sample" && has_value)
            mode = "sample", kind = argv[++i];
        else if (a == "--kind" && has_value)
            kind = argv[++i];
        else if (a == "--arch" && has_value)
            arch = argv[++i];
        else if (a == "--samples" && has_value)
            samples = std::max(1, std::atoi(argv[++i]));
        else if (a == "--started" && has_value)
            started = std::atoll(argv[++i]);
        else if (a == "--no-gpu")
            no_gpu = true;
        else if (a == "--trace")
            trace = true;
        else if (a == "--warm-up-both")
            toggles.emplace_back("KILN_CONTEXT_WARM_UP", " (no warm-up)");
        else if (a == "--read-ahead-both")
            toggles.emplace_back("KILN_READ_AHEAD", " (no read-ahead)");
        else if (a == "--cubin" && has_value)
            cubin_path = argv[++i];
        else {
            std::fprintf(
                stderr,
                "usage: bench_first_call [--populate] [--samples N] [--kind "
                "floor|raw|elementwise|reduction|fused] [--arch sm_XX] [--no-gpu] [--trace] "
                "[--warm-up-both] [--read-ahead-both]\n");
            return 2;
        }
    }
    const bool gpu = !no_gpu && kiln::Device::available();
    if (mode == "sample") {
        // The context, outside the call's time, timed on its own (Kiln's warm-up included).
        const std::int64_t context_start = now_ns();
        if (gpu) kiln::Device::current();
        const double context_ms = static_cast<double>(now_ns() - context_start) / 1e6;
        if (std::getenv("KILN_BENCH_PREPARE")) kiln::prepare();
        // The path without memos, for a before/after in one build (nothing is computed here).
        if (std::getenv("KILN_BENCH_NO_MEMO")) kiln::detail::set_memo_identity_for_testing({});
        std::int64_t t0 = 0, t1 = 0;
        if (kind == "floor") {
            if (!gpu || !floor_call(cubin_path, t0, t1)) {
                std::fprintf(stderr, "the floor's call failed\n");
                return 1;
            }
        } else if (!first_call(kind, arch, gpu, t0, t1)) {
            std::fprintf(stderr,
                         "%s did not come from the disk cache: run --populate first, for "
                         "the same KILN_CACHE_DIR and architecture\n",
                         kind.c_str());
            return 1;
        }
        if (std::getenv("KILN_BENCH_FAULTS"))
            std::fprintf(stderr, "%s: %ld minor page faults in the timed call (%lld - %lld ns)\n",
                         kind.c_str(), minor_faults() - g_faults_at_start,
                         static_cast<long long>(t0), static_cast<long long>(t1));
        std::printf("%.4f %.4f %.4f\n", static_cast<double>(t1 - t0) / 1e6,
                    started ? static_cast<double>(t1 - started) / 1e6 : 0.0, context_ms);
        return 0;
    }
    if (arch.empty()) arch = gpu ? kiln::Device::current().arch() : "sm_90";
    if (mode == "populate") {
        populate(arch, gpu);
        return 0;
    }
    std::printf("first call from disk, %s, %s, %d fresh processes each (median, min - max):\n",
                gpu ? kiln::Device::current().name().c_str() : "no GPU (lookup to cubin bytes)",
                arch.c_str(), samples);
    int status = 0;
    // The floor needs a device; its cubin file is removed when the samples are done.
    const std::string floor_cubin =
        gpu && (kind == "all" || kind == "floor") ? write_floor_cubin(arch) : "";
    for (const char* k : {"floor", "raw", "elementwise", "reduction", "fused"}) {
        if (kind != "all" && kind != k) continue;
        if (std::string(k) == "floor" && floor_cubin.empty()) continue;
        // [0]: as the environment has it (warm-up and read-ahead on by default); [1 + i]: with
        // toggles[i] off. The settings alternate sample by sample, so a drift of the host's
        // speed falls on all alike.
        const std::size_t settings = 1 + toggles.size();
        std::vector<std::vector<double>> call(settings), process(settings), context(settings);
        for (int s = 0; s < samples && status == 0; ++s)
            for (std::size_t setting = 0; setting < settings; ++setting) {
                const char* variable = setting ? toggles[setting - 1].first : nullptr;
                if (variable) ::setenv(variable, "0", 1);
                Sample sample;
                const bool ok = spawn_sample(argv[0], k, arch, !gpu, floor_cubin, sample);
                if (variable) ::unsetenv(variable);
                if (!ok) {
                    std::fprintf(stderr, "a %s sample failed\n", k);
                    status = 1;
                    break;
                }
                call[setting].push_back(sample.call_ms);
                process[setting].push_back(sample.process_ms);
                context[setting].push_back(sample.context_ms);
            }
        for (std::size_t setting = 0; setting < settings; ++setting) {
            if (call[setting].empty()) continue;
            const std::string what = std::string(k) + (setting ? toggles[setting - 1].second : "");
            const auto& c = call[setting];
            std::printf("  %-28s first call %.3f ms (%.3f - %.3f); from spawn %.2f ms",
                        what.c_str(), median(c), *std::min_element(c.begin(), c.end()),
                        *std::max_element(c.begin(), c.end()), median(process[setting]));
            if (gpu) std::printf("; context %.3f ms", median(context[setting]));
            std::printf("\n");
        }
    }
    if (trace) {
        // One more sample of each kind with every driver call timed (and Kiln's time between
        // them), and the page faults of the timed call, on standard error.
        ::setenv("KILN_DRIVER_TRACE", "1", 1);
        ::setenv("KILN_BENCH_FAULTS", "1", 1);
        for (const char* k : {"floor", "raw", "elementwise", "reduction", "fused"}) {
            if (kind != "all" && kind != k) continue;
            if (std::string(k) == "floor" && floor_cubin.empty()) continue;
            std::fprintf(stderr, "--- traced %s sample\n", k);
            Sample sample;
            if (!spawn_sample(argv[0], k, arch, !gpu, floor_cubin, sample)) status = 1;
            std::fprintf(stderr, "--- %s: first call %.3f ms\n", k, sample.call_ms);
        }
    }
    if (!floor_cubin.empty()) ::unlink(floor_cubin.c_str());
    return status;
}
