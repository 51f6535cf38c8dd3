// A raw kernel's first compile with an empty cache beside a plain NVRTC compile of the same source
// with the same options (issue 16, item 2: Kiln at most 1.1x plain NVRTC plus loading; Kiln's side
// is a RawKernel, which adds NVRTC's -minimal where it fits, and --plain-same gives the plain side
// that option too, so it is NVRTC beside NVRTC); with
// --kind elementwise or reduction, a generated kernel's first call with an empty cache beside a
// plain NVRTC compile (and load) of the trivial kernel (targets: 1.3x and 1.8x); with --plain-same
// too, beside a plain NVRTC compile (and load) of the same generated source, with Kiln's device
// headers and options: what NVRTC itself takes for that kernel, whatever Kiln does around it.
//
// With --three-way (generated kinds), each sample process compiles all three, Kiln's kernel, the
// trivial kernel and the same generated source, twice each in an order that rotates from sample to
// sample, so that the ratios to both plain sides come from the same processes (two sample sets a
// few minutes apart can differ by more than the targets' margins on a GPU host).
//
//   bench_cold_compile [--samples 10] [--arch sm_XX] [--no-gpu] [--nvrtc-cache] [--phases]
//                      [--comment-salt] [--kind raw|elementwise|reduction] [--plain-same]
//                      [--three-way]
//
// Each sample is a fresh process (this program again, posix_spawn'd) with a fresh, empty Kiln
// cache directory and a fresh, empty CUDA_CACHE_PATH (where NVRTC 12.9+ keeps its own cache). It
// compiles `my_add` four times, each with a different salt in the code (a constant the kernel
// compares with, so that it reaches the PTX and no cache can answer, NVRTC's included): Kiln then
// plain NVRTC then Kiln then NVRTC, or the other way round (samples alternate). NVRTC's first
// compile in a process is much slower than later ones, so the first compile is reported as "first
// in process" and the second compile of each side as "later".
//
// Kiln's side is RawKernel(...).function() with a GPU (compile, entry written, module loaded, the
// function's attributes read), RawModule(...).compile() without one. The plain side is
// nvrtcCreateProgram, nvrtcCompileProgram, nvrtcGetCUBIN with the options Kiln gives NVRTC for the
// user's (asked of Kiln by the parent process, before any sample: Program::nvrtc_options(), include
// directories and --no-cache included; -minimal only with --plain-same) and, with a GPU,
// cuModuleLoadData and cuModuleGetFunction, the context created before any timing.
//
// NVRTC's own cache: Kiln turns it off (--no-cache) unless KILN_NVRTC_CACHE=1. --nvrtc-cache runs
// both sides with it on (KILN_NVRTC_CACHE=1 in the samples, so Kiln's options lack --no-cache).
// --phases times Kiln's side in parts instead (Compiler::compile, Module::load, Module::function),
// with the compile split by Program::phases(): key and options, cache lookup, NVRTC, store.
// --comment-salt salts the sources in a comment only, as this benchmark did before: with
// --nvrtc-cache on a GPU host that shows what NVRTC's cache did to the plain side's figures.

#include "core/device_headers.hpp"
#include "core/specialization.hpp"
#include "driver/driver.hpp"
#include "kiln/kiln.hpp"
#include "run_sample.hpp"

#include <nvrtc.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace {

// --comment-salt: salts in a comment only, as this benchmark had them before.
bool g_comment_salt = false;

// The salt is also in the code: NVRTC's cache may key what is left after preprocessing (or the
// PTX), where a comment is gone.
std::string my_add(long salt) {
    const std::string code_salt =
        g_comment_salt ? "" : "    if (n == -" + std::to_string(salt) + ") z[0] = 0.f;\n";
    return "// salt " + std::to_string(salt) + R"(
extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
)" + code_salt +
           "}\n";
}

// The salt my_add(salt) wrote in its first line.
long salt_of(const std::string& source) {
    return std::atol(source.c_str() + std::strlen("// salt "));
}

// The options the plain side gives NVRTC: Kiln's, as it gave them (set by the parent); with
// --three-way, g_options are the trivial kernel's and g_same_options the generated source's.
std::vector<std::string> g_options, g_same_options;

struct Phases {
    double other = 0, lookup = 0, nvrtc = 0, store = 0, load = 0, function = 0;
};

double now_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

void check(nvrtcResult result) {
    if (result != NVRTC_SUCCESS) throw std::runtime_error(nvrtcGetErrorString(result));
}

void check(CUresult result) {
    if (result != CUDA_SUCCESS) throw std::runtime_error("a CUDA driver call failed");
}

// Plain NVRTC and the driver, as an application without Kiln would write them: @p source (with
// @p headers in memory) compiled, loaded and its kernel @p function found.
double plain(const std::string& source, bool gpu, Phases& phases,
             const std::vector<kiln::Header>& headers = {}, const char* function_name = "my_add",
             const std::vector<std::string>& nvrtc_options = g_options) {
    std::vector<const char*> header_names, header_sources;
    for (const kiln::Header& h : headers) {
        header_names.push_back(h.name.c_str());
        header_sources.push_back(h.source.c_str());
    }
    const double t0 = now_ms();
    nvrtcProgram program = nullptr;
    check(nvrtcCreateProgram(&program, source.c_str(), "plain.cu", static_cast<int>(headers.size()),
                             header_sources.data(), header_names.data()));
    std::vector<const char*> options;
    options.reserve(nvrtc_options.size());
    for (const auto& option : nvrtc_options)
        options.push_back(option.c_str());
    check(nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data()));
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(program, &size));
    std::string cubin(size, '\0');
    check(nvrtcGetCUBIN(program, cubin.data()));
    nvrtcDestroyProgram(&program);
    const double t1 = now_ms();
    phases.nvrtc = t1 - t0;
    if (gpu) {
        const auto& driver = kiln::detail::driver();
        CUmodule module = nullptr;
        CUfunction function = nullptr;
        check(driver.cuModuleLoadDataEx(&module, cubin.data(), 0, nullptr, nullptr));
        check(driver.cuModuleGetFunction(&function, module, function_name));
        phases.load = now_ms() - t1;
        const double total = now_ms() - t0;
        driver.cuModuleUnload(module); // untimed: Kiln's modules stay loaded too
        return total;
    }
    return now_ms() - t0;
}

bool g_phases = false;

// --kind: what Kiln's side compiles. The plain side compiles my_add, or with --plain-same the
// generated kernel's source.
std::string g_kind = "raw";
bool g_plain_same = false, g_three_way = false;

constexpr std::int64_t kElements = 1 << 20;

// The generated kernels, salted with a constant in their map (so that it reaches the PTX).
std::string salt_constant(long salt) {
    return " + T(" + std::to_string(salt % 100000) + ".0f * 1e-30f)";
}
kiln::ReductionKernel l2norm_kernel(long salt) {
    return kiln::ReductionKernel("T x", "T y", "x * x" + salt_constant(salt), "a + b",
                                 "y = sqrt(a)", "0", "l2norm");
}
kiln::ElementwiseKernel squared_diff_kernel(long salt) {
    return kiln::ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)" + salt_constant(salt),
                                   "squared_diff");
}

// The source Kiln generates for the call generated_first_call() makes (no device needed).
std::string generated_source(long salt) {
    using namespace kiln;
    const bool reduction = g_kind == "reduction";
    const Array x = Array::wrap(CUdeviceptr{1} << 20, {1024, reduction ? 1024 : kElements / 1024},
                                DType::float32);
    if (reduction) {
        const Arg args[] = {x};
        return l2norm_kernel(salt).source_for(args, 1, ReduceCall{1});
    }
    const Arg args[] = {x, x, x};
    return squared_diff_kernel(salt).source_for(args, 3);
}

// The plain side of --plain-same: NVRTC and the driver over the generated source, generated first
// (untimed), with Kiln's device headers and the options Kiln gave NVRTC for it.
double plain_generated(long salt, bool gpu, Phases& phases) {
    const std::string source = generated_source(salt);
    return plain(source, gpu, phases, kiln::detail::device_headers(),
                 g_kind == "reduction" ? "l2norm" : "squared_diff",
                 g_three_way ? g_same_options : g_options);
}

// A generated kernel's first call: the ElementwiseKernel squared_diff or the ReductionKernel
// l2norm over rows, each salted with a constant in its map (so it reaches the PTX). With a GPU the
// real call (compile, entry written, module loaded, launched; the operands made before, untimed),
// without one compile_for (to the cubin bytes).
double generated_first_call(long salt, const std::string& arch, bool gpu) {
    using namespace kiln;
    const bool reduction = g_kind == "reduction";
    const Array x =
        gpu ? empty({reduction ? 1024 : kElements, reduction ? 1024 : 1}, DType::float32)
            : Array::wrap(CUdeviceptr{1} << 20, {1024, reduction ? 1024 : kElements / 1024},
                          DType::float32);
    const Array z = gpu && !reduction ? empty(x.shape(), DType::float32) : x;
    if (gpu) Device::current().synchronize();
    const double t0 = now_ms();
    if (reduction) {
        const ReductionKernel l2norm = l2norm_kernel(salt);
        if (gpu) {
            l2norm(ReduceCall{1}, x);
        } else {
            const Arg args[] = {x};
            l2norm.compile_for(args, 1, ReduceCall{1}, arch);
        }
    } else {
        const ElementwiseKernel squared_diff = squared_diff_kernel(salt);
        if (gpu) {
            squared_diff(x, x, z);
        } else {
            const Arg args[] = {x, x, z};
            squared_diff.compile_for(args, 3, {}, arch);
        }
    }
    const double total = now_ms() - t0;
    if (gpu) Device::current().synchronize();
    return total;
}

double with_kiln(const std::string& source, const std::string& arch, bool gpu, Phases& phases) {
    if (g_kind != "raw") return generated_first_call(salt_of(source), arch, gpu);
    const double t0 = now_ms();
    // A RawKernel's module: its front end's choices (-minimal where it fits) included.
    const kiln::RawModule module(source, kiln::CompileOptions::for_arch(arch));
    if (g_phases) {
        auto program = module.compile();
        const double t1 = now_ms();
        const kiln::CompilePhases& p = program->phases();
        phases.lookup = p.lookup_ms;
        phases.nvrtc = p.nvrtc_ms;
        phases.store = p.store_ms;
        phases.other = (t1 - t0) - p.lookup_ms - p.nvrtc_ms - p.store_ms;
        if (gpu) {
            auto loaded = module.module(); // the program above, from memory, loaded
            const double t2 = now_ms();
            loaded->function("my_add");
            phases.load = t2 - t1;
            phases.function = now_ms() - t2;
        }
    } else if (gpu) {
        module.get_function("my_add").function();
    } else {
        module.compile();
    }
    return now_ms() - t0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// One timed compile of a sample: which side, its total and its phases.
struct Timing {
    char side = '?'; // 'K' Kiln, 'N' plain NVRTC, 'S' plain NVRTC on the same source (--three-way)
    double total = 0;
    Phases phases;
};

// Runs one sample process and reads its timings (four, or six with --three-way), in the order
// they ran. @p order: which side goes first ("kiln" or "nvrtc"; with --three-way "0" to "2", the
// rotation of K N S).
bool spawn_sample(const char* self, const std::string& order, const std::string& arch, bool no_gpu,
                  bool nvrtc_cache, long salt, std::vector<Timing>& out, std::size_t& cache_files) {
    char dir_template[] = "/tmp/kiln-cold-XXXXXX";
    const char* dir = ::mkdtemp(dir_template);
    if (!dir) return false;
    const std::string cache_env = std::string("KILN_CACHE_DIR=") + dir + "/kiln";
    const std::string cuda_cache_env = std::string("CUDA_CACHE_PATH=") + dir + "/nv";
    const std::string nvrtc_cache_env = nvrtc_cache ? "KILN_NVRTC_CACHE=1" : "KILN_NVRTC_CACHE=0";
    std::vector<const char*> env;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "KILN_CACHE_DIR=", 15) != 0 &&
            std::strncmp(*e, "CUDA_CACHE_PATH=", 16) != 0 &&
            std::strncmp(*e, "KILN_NVRTC_CACHE=", 17) != 0 &&
            std::strncmp(*e, "KILN_CONTEXT_WARM_UP=", 21) != 0)
            env.push_back(*e);
    env.push_back(cache_env.c_str());
    env.push_back(cuda_cache_env.c_str());
    env.push_back(nvrtc_cache_env.c_str());
    // The context priming's PTX is compiled by the driver, which keeps the result in the same
    // compute cache where this benchmark looks for what NVRTC's cache wrote; the context is made
    // before any timing here, so the warm-up could only shave microseconds off both sides' loads.
    env.push_back("KILN_CONTEXT_WARM_UP=0");
    env.push_back(nullptr);
    const std::string salt_text = std::to_string(salt);
    std::vector<const char*> argv = {self,         "--sample", order.c_str(),    "--arch",
                                     arch.c_str(), "--salt",   salt_text.c_str()};
    if (no_gpu) argv.push_back("--no-gpu");
    if (g_phases) argv.push_back("--phases");
    if (g_plain_same) argv.push_back("--plain-same");
    if (g_three_way) argv.push_back("--three-way");
    if (g_comment_salt) argv.push_back("--comment-salt");
    argv.push_back("--kind");
    argv.push_back(g_kind.c_str());
    for (const auto& option : g_options) {
        argv.push_back("--option");
        argv.push_back(option.c_str());
    }
    for (const auto& option : g_same_options) {
        argv.push_back("--same-option");
        argv.push_back(option.c_str());
    }
    argv.push_back(nullptr);

    const auto text = kiln::bench::run_for_output(self, argv, const_cast<char* const*>(env.data()));
    const bool ok = text.has_value();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!ok) return false;
    out.clear();
    const char* at = text->c_str();
    for (int i = 0; i < (g_three_way ? 6 : 4); ++i) {
        Timing t;
        int used = 0;
        if (std::sscanf(at, " %c %lf %lf %lf %lf %lf %lf %lf%n", &t.side, &t.total, &t.phases.other,
                        &t.phases.lookup, &t.phases.nvrtc, &t.phases.store, &t.phases.load,
                        &t.phases.function, &used) != 8)
            return false;
        at += used;
        out.push_back(t);
    }
    return std::sscanf(at, " C %zu", &cache_files) == 1;
}

void print_timing(const Timing& t) {
    std::printf("%c %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", t.side, t.total, t.phases.other,
                t.phases.lookup, t.phases.nvrtc, t.phases.store, t.phases.load, t.phases.function);
}

// The medians of a list of timings, field by field.
Timing medians(const std::vector<Timing>& timings) {
    auto field = [&](auto get) {
        std::vector<double> v;
        v.reserve(timings.size());
        for (const auto& t : timings)
            v.push_back(get(t));
        return median(v);
    };
    Timing m;
    m.total = field([](const Timing& t) { return t.total; });
    m.phases.other = field([](const Timing& t) { return t.phases.other; });
    m.phases.lookup = field([](const Timing& t) { return t.phases.lookup; });
    m.phases.nvrtc = field([](const Timing& t) { return t.phases.nvrtc; });
    m.phases.store = field([](const Timing& t) { return t.phases.store; });
    m.phases.load = field([](const Timing& t) { return t.phases.load; });
    m.phases.function = field([](const Timing& t) { return t.phases.function; });
    return m;
}

// --three-way: each sample process compiles K (Kiln's kernel), N (the trivial kernel) and S (the
// same generated source), twice each, the order rotating; prints each side's medians as the first
// compile in a process and as a later one, and the ratios within the same processes.
int three_way(const char* self, int samples, const std::string& arch, bool gpu, bool nvrtc_cache) {
    const std::string sides = "KNS";
    std::vector<Timing> first[3], later[3];
    std::size_t cache_files = 0;
    const long base_salt = static_cast<long>(::getpid()) * 1000;
    for (int s = 0; s < samples; ++s) {
        std::vector<Timing> out;
        std::size_t files = 0;
        if (!spawn_sample(self, std::to_string(s % 3), arch, !gpu, nvrtc_cache, base_salt + s, out,
                          files)) {
            std::fprintf(stderr, "sample %d failed\n", s);
            return 1;
        }
        cache_files = std::max(cache_files, files);
        first[sides.find(out[0].side)].push_back(out[0]);
        for (std::size_t i = 3; i < out.size(); ++i)
            later[sides.find(out[i].side)].push_back(out[i]);
    }
    const std::string subject = g_kind == "elementwise" ? "ElementwiseKernel squared_diff"
                                                        : "ReductionKernel l2norm over rows";
    std::printf("%s (Kiln) beside the trivial my_add and the same generated source (plain "
                "NVRTC), in the same processes, empty cache, %s, %s, %d fresh processes, each side "
                "first in a third of them (medians, wall ms; %s):\n",
                subject.c_str(), gpu ? kiln::Device::current().name().c_str() : "no GPU",
                arch.c_str(), samples,
                gpu ? "Kiln: the call (compile, load, launch); plain: compile + module load + "
                      "function"
                    : "compile to cubin bytes");
    const auto row = [](const char* what, const std::vector<Timing>* set) {
        const double k = medians(set[0]).total, n = medians(set[1]).total,
                     same = medians(set[2]).total;
        std::printf("  %s Kiln %.2f, trivial %.2f, same source %.2f: Kiln %.2fx the trivial "
                    "kernel, %.2fx the same source; the source %.2fx the trivial kernel\n",
                    what, k, n, same, k / n, k / same, same / n);
    };
    row("first compile in the process:", first);
    row("a later compile:             ", later);
    std::printf("  files NVRTC's cache wrote in a sample's fresh CUDA_CACHE_PATH: at most %zu\n",
                cache_files);
    return 0;
}

std::string env_or(const char* name, const char* fallback) {
    const char* value = std::getenv(name);
    return value ? value : fallback;
}

int run(int argc, char** argv) {
    std::string order, arch;
    long salt = 0;
    int samples = 10;
    bool no_gpu = false, nvrtc_cache = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--sample" && has_value)
            order = argv[++i];
        else if (a == "--arch" && has_value)
            arch = argv[++i];
        else if (a == "--salt" && has_value)
            salt = std::atol(argv[++i]);
        else if (a == "--option" && has_value)
            g_options.emplace_back(argv[++i]);
        else if (a == "--same-option" && has_value)
            g_same_options.emplace_back(argv[++i]);
        else if (a == "--three-way")
            g_three_way = true;
        else if (a == "--samples" && has_value)
            samples = std::max(1, std::atoi(argv[++i]));
        else if (a == "--no-gpu")
            no_gpu = true;
        else if (a == "--nvrtc-cache")
            nvrtc_cache = true;
        else if (a == "--phases")
            g_phases = true;
        else if (a == "--comment-salt")
            g_comment_salt = true;
        else if (a == "--kind" && has_value)
            g_kind = argv[++i];
        else if (a == "--plain-same")
            g_plain_same = true;
        else {
            std::fprintf(stderr,
                         "usage: bench_cold_compile [--samples N] [--arch sm_XX] [--no-gpu] "
                         "[--nvrtc-cache] [--phases] [--comment-salt] "
                         "[--kind raw|elementwise|reduction] [--plain-same] [--three-way]\n");
            return 2;
        }
    }
    if (g_kind != "raw" && g_kind != "elementwise" && g_kind != "reduction") {
        std::fprintf(stderr, "bench_cold_compile: --kind is raw, elementwise or reduction\n");
        return 2;
    }
    if (g_kind != "raw") g_phases = false; // phases are the raw kernel's
    if (g_three_way && g_kind == "raw") {
        std::fprintf(stderr, "bench_cold_compile: --three-way is for generated kernels\n");
        return 2;
    }
    if (g_three_way) g_plain_same = false; // both plain sides run
    // The raw kernel's plain side is the same source; --plain-same gives it a RawKernel's options.
    const bool raw_plain_minimal = g_kind == "raw" && g_plain_same;
    if (g_kind == "raw") g_plain_same = false;
    const bool gpu = !no_gpu && kiln::Device::available();
    if (gpu) kiln::Device::current(); // the context, untimed
    if (arch.empty()) arch = gpu ? kiln::Device::current().arch() : "sm_90";

    if (!order.empty()) {
        // K N K N or N K N K (--three-way: K N S K N S rotated): the second compile of each side
        // is a "later" one.
        std::string sides = order == "kiln" ? "KNKN" : "NKNK";
        if (g_three_way) {
            const std::size_t r = static_cast<std::size_t>(std::atoi(order.c_str())) % 3;
            sides = std::string("KNS").substr(r) + std::string("KNS").substr(0, r);
            sides += sides;
        }
        std::vector<Timing> timings;
        for (std::size_t i = 0; i < sides.size(); ++i) {
            Timing t;
            t.side = sides[i];
            const long code_salt = salt * 8 + static_cast<long>(i);
            const std::string source = my_add(code_salt);
            t.total = t.side == 'K'                   ? with_kiln(source, arch, gpu, t.phases)
                      : t.side == 'S' || g_plain_same ? plain_generated(code_salt, gpu, t.phases)
                                                      : plain(source, gpu, t.phases);
            timings.push_back(t);
        }
        const auto stats = kiln::Compiler::global().statistics();
        if (stats.compiles != 2) {
            std::fprintf(stderr, "Kiln compiled %llu times, not 2: the cache answered\n",
                         static_cast<unsigned long long>(stats.compiles));
            return 1;
        }
        for (const auto& t : timings)
            print_timing(t);
        // What NVRTC's cache wrote: evidence of whether it was on.
        std::size_t files = 0;
        std::error_code ec;
        if (const char* nv = std::getenv("CUDA_CACHE_PATH"))
            for (auto it = std::filesystem::recursive_directory_iterator(nv, ec);
                 !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
                files += it->is_regular_file(ec) ? 1 : 0;
        std::printf("C %zu\n", files);
        return 0;
    }

    // Kiln's options as it gives them to NVRTC, in the samples' state (KILN_NVRTC_CACHE), asked
    // here so that no sample is warmed by the asking. The salt keeps it from the samples' sources.
    ::setenv("KILN_NVRTC_CACHE", nvrtc_cache ? "1" : "0", 1);
    // A generated kernel's options are the front ends' (specialization.hpp); a raw kernel's are
    // the user's as NVRTC gets them, or with --plain-same a RawKernel's (-minimal added where it
    // fits).
    const auto options_for = [&](bool same) {
        const std::string source = same ? generated_source(0) : my_add(0);
        auto options = same ? kiln::detail::specialization_options(source, {}, arch)
                            : kiln::CompileOptions::for_arch(arch);
        options.use_disk_cache = false;
        return raw_plain_minimal ? kiln::RawModule(source, options).compile()->nvrtc_options()
                                 : kiln::compile(source, options)->nvrtc_options();
    };
    g_options = options_for(g_plain_same);
    if (g_three_way) g_same_options = options_for(true);
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    const bool has_cache = major > 12 || (major == 12 && minor >= 9);
    std::printf("NVRTC %d.%d; its own cache (12.9+, in the driver's compute cache, needs a "
                "driver): %s\n",
                major, minor,
                !has_cache    ? "absent"
                : nvrtc_cache ? "ON for both sides (KILN_NVRTC_CACHE=1), a fresh empty "
                                "CUDA_CACHE_PATH per sample"
                              : "OFF for both sides (--no-cache)");
    std::printf("CUDA_CACHE_DISABLE=%s; %s\n", env_or("CUDA_CACHE_DISABLE", "(unset)").c_str(),
                g_comment_salt ? "sources salted in a comment only (NVRTC's cache may answer the "
                                 "plain side; Kiln's program name, the entry's path, differs "
                                 "per source)"
                               : "code-salted sources (no cache can answer)");
    std::printf("options, plain side (Kiln's side adds -minimal where it fits):");
    for (const auto& option : g_options)
        std::printf(" %s", option.c_str());
    std::printf("\n");
    if (g_three_way) {
        std::printf("options, the same source's plain side:");
        for (const auto& option : g_same_options)
            std::printf(" %s", option.c_str());
        std::printf("\n");
        return three_way(argv[0], samples, arch, gpu, nvrtc_cache);
    }

    std::vector<Timing> kiln_first, nvrtc_first, kiln_later, nvrtc_later;
    std::size_t cache_files = 0; // the most any sample's CUDA_CACHE_PATH held
    const long base_salt = static_cast<long>(::getpid()) * 1000;
    for (int s = 0; s < samples; ++s) {
        std::vector<Timing> out;
        std::size_t files = 0;
        if (!spawn_sample(argv[0], s % 2 == 0 ? "kiln" : "nvrtc", arch, !gpu, nvrtc_cache,
                          base_salt + s, out, files)) {
            std::fprintf(stderr, "sample %d failed\n", s);
            return 1;
        }
        cache_files = std::max(cache_files, files);
        (out[0].side == 'K' ? kiln_first : nvrtc_first).push_back(out[0]);
        kiln_later.push_back(out[0].side == 'K' ? out[2] : out[3]);
        nvrtc_later.push_back(out[0].side == 'K' ? out[3] : out[2]);
    }
    const Timing kf = medians(kiln_first), nf = medians(nvrtc_first), kl = medians(kiln_later),
                 nl = medians(nvrtc_later);
    const std::string against = g_plain_same ? " against the same generated source (plain NVRTC)"
                                             : " against the trivial my_add (plain NVRTC)";
    const std::string subject = g_kind == "raw" ? "raw my_add"
                                : g_kind == "elementwise"
                                    ? "ElementwiseKernel squared_diff (Kiln)" + against
                                    : "ReductionKernel l2norm over rows (Kiln)" + against;
    std::printf("%s, empty cache, %s, %s, %d fresh processes (medians, wall ms; %s):\n",
                subject.c_str(), gpu ? kiln::Device::current().name().c_str() : "no GPU",
                arch.c_str(), samples,
                gpu ? (g_kind == "raw" ? "compile + module load + function"
                                       : "Kiln: the call (compile, load, launch); plain: compile + "
                                         "module load + function")
                    : "compile to cubin bytes");
    std::printf("  first compile in the process: Kiln %.2f ms, plain NVRTC %.2f ms (%.2fx)\n",
                kf.total, nf.total, kf.total / nf.total);
    std::printf("  a later compile:              Kiln %.2f ms, plain NVRTC %.2f ms (%.2fx)\n",
                kl.total, nl.total, kl.total / nl.total);
    std::printf("  files NVRTC's cache wrote in a sample's fresh CUDA_CACHE_PATH: at most %zu\n",
                cache_files);
    if (g_phases) {
        std::printf("phases (medians, ms): Kiln = key and options + cache lookup + NVRTC + store "
                    "+ module load + function(); plain = NVRTC + load and get function\n");
        auto row = [](const char* what, const Timing& k, const Timing& n) {
            std::printf("  %-8s Kiln: other %.2f, lookup %.2f, NVRTC %.2f, store %.2f, load %.2f, "
                        "function %.2f | plain: NVRTC %.2f, load %.2f\n",
                        what, k.phases.other, k.phases.lookup, k.phases.nvrtc, k.phases.store,
                        k.phases.load, k.phases.function, n.phases.nvrtc, n.phases.load);
        };
        row("first", kf, nf);
        row("later", kl, nl);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_cold_compile: %s\n", e.what());
        return 1;
    }
}
