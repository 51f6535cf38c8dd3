// `kiln demo`: Kiln's main job end to end. Compiles the seed examples through the cache (saying
// where it is and whether each kernel was a hit), and where a GPU is present runs them, checks the
// results against the host and times them.

#include "arch_list.hpp"
#include "commands.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/kiln.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace kiln::tools {

namespace {

constexpr const char* kMyAddSource = R"(
extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
)";

// A lookup's or compile's wall time: milliseconds, or microseconds below a tenth of one (a hit
// from memory or the disk takes a few; "0.00 ms" would say it took nothing).
std::string duration_text(double ms) {
    char text[32];
    if (ms >= 0.1)
        std::snprintf(text, sizeof text, "%.2f ms", ms);
    else
        std::snprintf(text, sizeof text, "%.1f us", ms * 1000);
    return text;
}

const char* hit_or_miss(const Program& program) {
    return program.origin() == ProgramOrigin::disk_cache ? "hit" : "miss";
}

// Where compiled kernels go, so a newcomer can look at (or clear) what the demo cached.
void print_cache() {
    const cache::Config& config = cache::Store::global().config();
    if (config.disabled) {
        std::printf("cache: disabled (KILN_CACHE_DISABLE), kernels are compiled in memory only\n");
        return;
    }
    std::printf("cache: %s%s\n", config.dir.c_str(),
                config.readonly ? " (read-only: hits are served, nothing is written)" : "");
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

void run_my_add(const std::string& arch, bool gpu) {
    std::printf("== my_add (RawKernel) ==\n");
    RawKernel my_add(kMyAddSource, "my_add", CompileOptions::for_arch(arch));
    // The wall time of the call, as for the other kernels: a hit's lookup and read, a miss's
    // compile (Program::milliseconds() is NVRTC's time only, 0 for a hit).
    const auto begin = std::chrono::steady_clock::now();
    auto program = my_add.compile();
    const double compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    std::printf("  compile: %-4s %s  %s  (%zu-byte cubin for %s)\n", hit_or_miss(*program),
                program->key().hex().c_str(), duration_text(compile_ms).c_str(),
                program->cubin().size(), program->arch().c_str());
    if (!gpu) return;
    const int n = 1 << 24;
    std::vector<float> x(n), y(n), z(n, std::nanf(""));
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (int i = 0; i < n; ++i)
        x[i] = dist(rng), y[i] = dist(rng);
    Stream stream;
    DeviceBuffer dx(n * sizeof(float), stream), dy(n * sizeof(float), stream),
        dz(n * sizeof(float), stream);
    dx.copy_from_host(x.data(), dx.size());
    dy.copy_from_host(y.data(), dy.size());
    dz.fill_bytes(0xff); // poison: an unwritten element fails the check
    const LaunchConfig config{Dim3((n + 255) / 256), Dim3(256), 0, stream};
    my_add(config, dx, dy, dz, n);
    dz.copy_to_host(z.data(), dz.size());
    int wrong = 0;
    for (int i = 0; i < n; ++i)
        wrong += z[i] != x[i] + y[i];
    std::printf("  run: %d elements on %s, %s\n", n, Device::current().name().c_str(),
                wrong ? "WRONG RESULTS" : "results match the host");
    if (wrong) throw Error("my_add produced " + std::to_string(wrong) + " wrong elements");

    Event start(true), stop(true);
    std::vector<double> gpu_ms, host_us;
    for (int rep = 0; rep < 50; ++rep) {
        start.record(stream);
        const auto t0 = std::chrono::steady_clock::now();
        my_add(config, dx, dy, dz, n);
        const auto t1 = std::chrono::steady_clock::now();
        stop.record(stream);
        stop.synchronize();
        gpu_ms.push_back(elapsed_ms(start, stop));
        host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    const double ms = median(gpu_ms);
    std::printf("  time: %.3f ms on the GPU (%.0f GB/s), %.2f us host time per launch "
                "(medians of 50)\n",
                ms, 3.0 * n * sizeof(float) / (ms * 1e6), median(host_us));
}

// The seed's squared difference, as CuPy's docs write it: fixed float32, and generic over T.
void run_squared_diff(const std::string& arch, bool gpu) {
    std::printf("== squared_diff (ElementwiseKernel) ==\n");
    ElementwiseKernel fixed("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)",
                            "squared_diff");
    ElementwiseKernel generic("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff_generic");
    if (!gpu) {
        // Without a GPU, compile (through the cache) the kernel a float32 call would use.
        const Array x = Array::wrap(CUdeviceptr{1} << 20, {1 << 24}, DType::float32);
        for (const ElementwiseKernel* k : {&fixed, &generic}) {
            const Arg args[] = {x, x};
            const auto start = std::chrono::steady_clock::now();
            auto program = k->compile_for(args, 2, {}, arch);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            std::printf("  %-22s compile: %-4s %s  %s (float32)\n", k->name().c_str(),
                        hit_or_miss(*program), program->key().hex().c_str(),
                        duration_text(ms).c_str());
        }
        return;
    }
    const int n = 1 << 24;
    std::vector<float> xs(n), ys(n);
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (int i = 0; i < n; ++i)
        xs[i] = dist(rng), ys[i] = dist(rng);
    const Array x = from_host(xs), y = from_host(ys);
    Array z = empty({n}, DType::float32);
    for (const ElementwiseKernel* k : {&fixed, &generic}) {
        // The first call compiles (or finds the kernel in the cache): the counters tell which.
        const CompileStatistics before = Compiler::global().statistics();
        const auto first = std::chrono::steady_clock::now();
        (*k)(x, y, z);
        Device::current().synchronize();
        const double first_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first)
                .count();
        const bool hit = Compiler::global().statistics().disk_hits > before.disk_hits;
        const auto out = z.to_host<float>();
        int wrong = 0;
        for (int i = 0; i < n; ++i)
            wrong += out[i] != (xs[i] - ys[i]) * (xs[i] - ys[i]);
        if (wrong)
            throw Error(k->name() + " produced " + std::to_string(wrong) + " wrong elements");
        Event start(true), stop(true);
        std::vector<double> gpu_ms;
        for (int rep = 0; rep < 20; ++rep) {
            start.record();
            (*k)(x, y, z);
            stop.record();
            stop.synchronize();
            gpu_ms.push_back(elapsed_ms(start, stop));
        }
        const double ms = median(gpu_ms);
        std::printf("  %-22s %-4s first call %.1f ms (compile or cache, load, run); then %.3f ms "
                    "(%.0f GB/s), results match the host\n",
                    k->name().c_str(), hit ? "hit" : "miss", first_ms, ms,
                    3.0 * n * sizeof(float) / (ms * 1e6));
    }
}

// The seed's l2norm, as CuPy's docs write it: the 2-norm of each row, and of everything.
void run_l2norm(const std::string& arch, bool gpu) {
    std::printf("== l2norm (ReductionKernel) ==\n");
    ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    const int rows = 4096, cols = 4096;
    if (!gpu) {
        const Array x = Array::wrap(CUdeviceptr{1} << 20, {rows, cols}, DType::float32);
        const Arg args[] = {x};
        const auto start = std::chrono::steady_clock::now();
        auto program = l2norm.compile_for(args, 1, ReduceCall{1}, arch);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        std::printf("  compile: %-4s %s  %s (rows of a %dx%d float32 array)\n",
                    hit_or_miss(*program), program->key().hex().c_str(), duration_text(ms).c_str(),
                    rows, cols);
        return;
    }
    std::vector<float> xs(static_cast<std::size_t>(rows) * cols);
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (float& v : xs)
        v = dist(rng);
    const Array x = from_host(xs, {rows, cols});
    const auto first = std::chrono::steady_clock::now();
    Array norms = l2norm(ReduceCall{1}, x);
    const auto host = norms.to_host<float>();
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first).count();
    double worst = 0;
    for (int r = 0; r < rows; ++r) {
        double ref = 0;
        for (int c = 0; c < cols; ++c)
            ref += double(xs[std::size_t(r) * cols + c]) * xs[std::size_t(r) * cols + c];
        worst = std::max(worst, std::fabs(host[r] - std::sqrt(ref)) / std::sqrt(ref));
    }
    if (worst > 1e-5)
        throw Error("l2norm is off by a relative " + std::to_string(worst) + " from the host");
    Event start(true), stop(true);
    std::vector<double> gpu_ms;
    for (int rep = 0; rep < 20; ++rep) {
        start.record();
        l2norm(ReduceCall{1}, x, norms);
        stop.record();
        stop.synchronize();
        gpu_ms.push_back(elapsed_ms(start, stop));
    }
    const double ms = median(gpu_ms);
    const float total = static_cast<Array>(l2norm(x)).to_host<float>()[0];
    std::printf("  rows of %dx%d float32: first call %.1f ms (compile or cache, load, run); then "
                "%.3f ms (%.0f GB/s); within %.1e of the host; norm of everything %.3f\n",
                rows, cols, first_ms, ms, double(rows) * cols * sizeof(float) / (ms * 1e6), worst,
                total);
}

} // namespace

void add_demo_command(CLI::App& app) {
    auto arch = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("demo", "Compile, cache and (with a GPU) run and time the "
                                           "seed kernels");
    cmd->add_option(
        "--arch", *arch,
        "architecture to compile for: sm_90, 90 or 9.0 (default: the GPU's, else sm_90)");
    cmd->callback([arch] {
        std::string reason;
        const bool gpu = Device::available(&reason);
        std::string target = arch->empty() ? std::string() : parse_arch(*arch);
        if (target.empty()) target = gpu ? Device::current().arch() : "sm_90";
        std::printf("kiln demo: NVRTC %s, target %s\n", nvrtc_version().c_str(), target.c_str());
        print_cache();
        // Once, not per kernel: the reason is the same for all of them.
        if (!gpu) std::printf("no GPU, kernels are compiled but not run: %s\n", reason.c_str());
        run_my_add(target, gpu);
        run_squared_diff(target, gpu);
        run_l2norm(target, gpu);
        std::printf("\nnext: `kiln cache ls` lists what the demo cached, `kiln cache stats` counts "
                    "hits and misses,\n      `kiln help` lists every command\n");
    });
}

} // namespace kiln::tools
