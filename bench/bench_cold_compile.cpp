// A raw kernel's first compile with an empty cache beside a plain NVRTC compile of the same source
// with the same options (issue 16, item 2: Kiln at most 1.1x plain NVRTC plus loading).
//
//   bench_cold_compile [--samples 10] [--arch sm_XX] [--no-gpu]
//
// Each sample is a fresh process (this program again, posix_spawn'd) with a fresh, empty cache
// directory. It compiles `my_add` four times, each with a different salt in a comment so that no
// cache can answer: Kiln then plain NVRTC then Kiln then NVRTC, or the other way round (samples
// alternate). NVRTC's first compile in a process is much slower than later ones, so the first
// compile is reported as "first in process" and the second compile of each side as "later".
//
// Kiln's side is kiln::compile (empty cache: NVRTC, the entry written); plain NVRTC is
// nvrtcCreateProgram, nvrtcCompileProgram, nvrtcGetCUBIN with Kiln's default options (-arch,
// -lineinfo, -std=c++17). With a GPU, Kiln's side is RawKernel(...).function() and the plain
// side adds cuModuleLoadData (Module::load of the cubin), the context created before any timing.

#include "kiln/kiln.hpp"

#include <nvrtc.h>

#include <spawn.h>
#include <sys/wait.h>
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

std::string my_add(const std::string& salt) {
    return "// " + salt + R"(
extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
)";
}

double now_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

void check(nvrtcResult result) {
    if (result != NVRTC_SUCCESS) throw std::runtime_error(nvrtcGetErrorString(result));
}

// Plain NVRTC, as an application without Kiln would write it.
double plain(const std::string& source, const std::string& arch, bool gpu) {
    const double t0 = now_ms();
    nvrtcProgram program = nullptr;
    check(nvrtcCreateProgram(&program, source.c_str(), "my_add.cu", 0, nullptr, nullptr));
    const std::string arch_option = "-arch=" + arch;
    const char* options[] = {arch_option.c_str(), "-lineinfo", "-std=c++17"};
    check(nvrtcCompileProgram(program, 3, options));
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(program, &size));
    std::string cubin(size, '\0');
    check(nvrtcGetCUBIN(program, cubin.data()));
    nvrtcDestroyProgram(&program);
    if (gpu) kiln::Module::load(cubin, "my_add")->function("my_add");
    return now_ms() - t0;
}

double with_kiln(const std::string& source, const std::string& arch, bool gpu) {
    const double t0 = now_ms();
    if (gpu) {
        kiln::RawKernel kernel(source, "my_add");
        kernel.function();
    } else {
        kiln::compile(source, kiln::CompileOptions::for_arch(arch));
    }
    return now_ms() - t0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// Runs one sample process and reads "kiln_first nvrtc_first kiln_later nvrtc_later" (one of the
// two firsts is 0: the side that went second).
bool spawn_sample(const char* self, bool kiln_first, const std::string& arch, bool no_gpu,
                  int index, double (&out)[4]) {
    char dir_template[] = "/tmp/kiln-cold-XXXXXX";
    const char* dir = ::mkdtemp(dir_template);
    if (!dir) return false;
    const std::string cache_env = std::string("KILN_CACHE_DIR=") + dir;
    std::vector<const char*> env;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "KILN_CACHE_DIR=", 15) != 0) env.push_back(*e);
    env.push_back(cache_env.c_str());
    env.push_back(nullptr);
    const std::string salt = std::to_string(::getpid()) + "-" + std::to_string(index);
    std::vector<const char*> argv = {self,        "--sample",   kiln_first ? "kiln" : "nvrtc",
                                     "--arch",    arch.c_str(), "--salt",
                                     salt.c_str()};
    if (no_gpu) argv.push_back("--no-gpu");
    argv.push_back(nullptr);

    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    pid_t pid = 0;
    const int error =
        posix_spawn(&pid, self, &actions, nullptr, const_cast<char* const*>(argv.data()),
                    const_cast<char* const*>(env.data()));
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    std::string text;
    char buffer[256];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    const bool ok = error == 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                    WEXITSTATUS(status) == 0;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return ok &&
           std::sscanf(text.c_str(), "%lf %lf %lf %lf", &out[0], &out[1], &out[2], &out[3]) == 4;
}

int run(int argc, char** argv) {
    std::string order, arch, salt = "0";
    int samples = 10;
    bool no_gpu = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--sample" && has_value)
            order = argv[++i];
        else if (a == "--arch" && has_value)
            arch = argv[++i];
        else if (a == "--salt" && has_value)
            salt = argv[++i];
        else if (a == "--samples" && has_value)
            samples = std::max(1, std::atoi(argv[++i]));
        else if (a == "--no-gpu")
            no_gpu = true;
        else {
            std::fprintf(stderr, "usage: bench_cold_compile [--samples N] [--arch sm_XX] "
                                 "[--no-gpu]\n");
            return 2;
        }
    }
    const bool gpu = !no_gpu && kiln::Device::available();
    if (gpu) kiln::Device::current(); // the context, untimed
    if (arch.empty()) arch = gpu ? kiln::Device::current().arch() : "sm_90";

    if (!order.empty()) {
        const bool kiln_first = order == "kiln";
        double first = 0, kiln_later = 0, nvrtc_later = 0;
        // K N K N or N K N K: the second compile of each side is a "later" one.
        if (kiln_first) {
            first = with_kiln(my_add(salt + "a"), arch, gpu);
            plain(my_add(salt + "b"), arch, gpu);
            kiln_later = with_kiln(my_add(salt + "c"), arch, gpu);
            nvrtc_later = plain(my_add(salt + "d"), arch, gpu);
        } else {
            first = plain(my_add(salt + "a"), arch, gpu);
            with_kiln(my_add(salt + "b"), arch, gpu);
            nvrtc_later = plain(my_add(salt + "c"), arch, gpu);
            kiln_later = with_kiln(my_add(salt + "d"), arch, gpu);
        }
        const auto stats = kiln::Compiler::global().statistics();
        if (stats.compiles != 2) {
            std::fprintf(stderr, "Kiln compiled %llu times, not 2: the cache answered\n",
                         static_cast<unsigned long long>(stats.compiles));
            return 1;
        }
        std::printf("%.3f %.3f %.3f %.3f\n", kiln_first ? first : 0.0, kiln_first ? 0.0 : first,
                    kiln_later, nvrtc_later);
        return 0;
    }

    std::vector<double> kiln_first, nvrtc_first, kiln_later, nvrtc_later;
    for (int s = 0; s < samples; ++s) {
        double out[4];
        if (!spawn_sample(argv[0], s % 2 == 0, arch, !gpu, s, out)) {
            std::fprintf(stderr, "sample %d failed\n", s);
            return 1;
        }
        (s % 2 == 0 ? kiln_first : nvrtc_first).push_back(s % 2 == 0 ? out[0] : out[1]);
        kiln_later.push_back(out[2]);
        nvrtc_later.push_back(out[3]);
    }
    std::printf("raw my_add, empty cache, %s, %s, %d fresh processes (medians; %s):\n",
                gpu ? kiln::Device::current().name().c_str() : "no GPU", arch.c_str(), samples,
                gpu ? "compile + module load" : "compile to cubin bytes");
    std::printf("  first compile in the process: Kiln %.2f ms, plain NVRTC %.2f ms (%.2fx)\n",
                median(kiln_first), median(nvrtc_first), median(kiln_first) / median(nvrtc_first));
    std::printf("  a later compile:              Kiln %.2f ms, plain NVRTC %.2f ms (%.2fx)\n",
                median(kiln_later), median(nvrtc_later), median(kiln_later) / median(nvrtc_later));
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
