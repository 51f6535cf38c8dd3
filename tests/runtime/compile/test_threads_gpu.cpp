// Kiln under an application's threads on the GPU: eight threads, each on a kiln::Stream of its own,
// launch the same and different ElementwiseKernel and RawKernel kernels over and over while two
// other threads compile and launch new kernels. Every result is checked against the host on fresh
// random data with poisoned outputs, and every distinct kernel is compiled once in the process.

#include "gpu.hpp"
#include "process_cache_dir.hpp"
#include "start_line.hpp"

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::test::StartLine;

using kiln::Array;
using kiln::DType;

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr int kLaunchers = 8;
constexpr int kIterations = 12;
constexpr int kNewKernels = 6; // compiled by the two compiling threads, in opposite orders
constexpr std::int64_t kCount = (1 << 16) + 5;

std::vector<float> random_floats(std::mt19937& engine, std::size_t n) {
    std::uniform_real_distribution<float> dist(-10.f, 10.f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(engine);
    return v;
}

// An output array whose every element is a NaN until a kernel writes it.
Array poisoned(kiln::StreamRef stream) {
    Array out = kiln::empty({kCount}, DType::float32, stream);
    KILN_CU(
        cuMemsetD32Async(out.data(), 0xffffffffu, static_cast<std::size_t>(kCount), stream.get()));
    return out;
}

constexpr const char* kSaxpy = R"(
extern "C" __global__ void saxpy_threads(float a, const float* x, const float* y, float* out,
                                         long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
)";

std::string add_source(const std::string& name, int value) {
    return "extern \"C\" __global__ void " + name +
           "(const float* x, float* out, long long n) {\n"
           "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
           "    if (i < n) out[i] = x[i] + " +
           std::to_string(value) + ".0f;\n}\n";
}

// The first difference between @p actual and @p expected, or "".
std::string first_mismatch(const std::vector<float>& actual, const std::vector<float>& expected,
                           const std::string& what) {
    if (actual.size() != expected.size()) return what + ": wrong size";
    for (std::size_t i = 0; i < actual.size(); ++i)
        if (actual[i] != expected[i] || std::isnan(actual[i]))
            return what + ": element " + std::to_string(i) + " is " + std::to_string(actual[i]) +
                   ", expected " + std::to_string(expected[i]);
    return "";
}

} // namespace

TEST(ThreadsGpu, LaunchersOnTheirOwnStreamsWhileOthersCompile) {
    KILN_REQUIRE_GPU();
    const std::string arch = kiln::Device::current().arch();
    // Kernels every launcher shares, and one of each kind per launcher.
    const kiln::ElementwiseKernel shared_elementwise("T x, T y", "T z", "z = (x - y) * (x - y)",
                                                     "squared_difference_threads");
    const kiln::RawKernel shared_raw(kSaxpy, "saxpy_threads");
    std::vector<kiln::ElementwiseKernel> own_elementwise;
    std::vector<kiln::RawKernel> own_raw;
    for (int t = 0; t < kLaunchers; ++t) {
        own_elementwise.emplace_back("T x", "T z", "z = x * (T)" + std::to_string(t + 2),
                                     "times_" + std::to_string(t));
        own_raw.emplace_back(add_source("add_" + std::to_string(t), t), "add_" + std::to_string(t));
    }
    kiln::Compiler& compiler = kiln::Compiler::global();
    const kiln::CompileStatistics before = compiler.statistics();

    std::vector<std::string> failures(kLaunchers + 2);
    std::vector<std::vector<std::shared_ptr<const kiln::Program>>> compiled(
        2, std::vector<std::shared_ptr<const kiln::Program>>(kNewKernels));
    StartLine start(kLaunchers + 2);
    std::vector<std::thread> threads;
    threads.reserve(kLaunchers);
    for (int t = 0; t < kLaunchers; ++t)
        threads.emplace_back([&, t] {
            std::string& failure = failures[static_cast<std::size_t>(t)];
            try {
                std::mt19937 engine(std::random_device{}());
                kiln::Stream stream;
                kiln::CallOptions call;
                call.stream = stream;
                const auto n = static_cast<std::size_t>(kCount);
                const kiln::LaunchConfig config{
                    {static_cast<unsigned>((kCount + 255) / 256)}, {256}, 0, stream};
                start.arrive_and_wait();
                for (int i = 0; i < kIterations && failure.empty(); ++i) {
                    const auto x = random_floats(engine, n), y = random_floats(engine, n);
                    const Array dx = kiln::from_host(x, stream), dy = kiln::from_host(y, stream);
                    const Array squared = poisoned(stream), saxpy = poisoned(stream),
                                times = poisoned(stream), added = poisoned(stream);
                    const float a = 0.5f * static_cast<float>(t + i);
                    shared_elementwise(call, dx, dy, squared);
                    shared_raw(config, a, dx.data(), dy.data(), saxpy.data(), kCount);
                    own_elementwise[static_cast<std::size_t>(t)](call, dx, times);
                    own_raw[static_cast<std::size_t>(t)](config, dx.data(), added.data(), kCount);

                    std::vector<float> e_squared(n), e_saxpy(n), e_times(n), e_added(n);
                    for (std::size_t k = 0; k < n; ++k) {
                        const float d = x[k] - y[k];
                        e_squared[k] = d * d;
                        e_saxpy[k] = std::fma(a, x[k], y[k]); // NVRTC contracts to an FMA
                        e_times[k] = x[k] * static_cast<float>(t + 2);
                        e_added[k] = x[k] + static_cast<float>(t);
                    }
                    const std::string where =
                        "thread " + std::to_string(t) + ", iteration " + std::to_string(i) + ", ";
                    for (const std::string& mismatch :
                         {first_mismatch(squared.to_host<float>(stream), e_squared,
                                         where + "shared elementwise"),
                          first_mismatch(saxpy.to_host<float>(stream), e_saxpy,
                                         where + "shared raw"),
                          first_mismatch(times.to_host<float>(stream), e_times,
                                         where + "own elementwise"),
                          first_mismatch(added.to_host<float>(stream), e_added, where + "own raw")})
                        if (failure.empty()) failure = mismatch;
                }
            } catch (const std::exception& e) {
                failure = "thread " + std::to_string(t) + ": " + e.what();
            }
        });
    for (int c = 0; c < 2; ++c)
        threads.emplace_back([&, c] {
            const int slot = kLaunchers + c;
            std::string& failure = failures[static_cast<std::size_t>(slot)];
            try {
                kiln::Stream stream;
                const auto n = static_cast<std::size_t>(kCount);
                const std::vector<float> x(n, 1.0f);
                const kiln::LaunchConfig config{
                    {static_cast<unsigned>((kCount + 255) / 256)}, {256}, 0, stream};
                start.arrive_and_wait();
                for (int k = 0; k < kNewKernels && failure.empty(); ++k) {
                    const int which = c == 0 ? k : kNewKernels - 1 - k;
                    const std::string name = "fresh_" + std::to_string(which);
                    // A new kernel object each time; both threads ask for the same sources.
                    const kiln::RawKernel kernel(add_source(name, 100 + which), name,
                                                 kiln::CompileOptions::for_arch(arch));
                    compiled[static_cast<std::size_t>(c)][static_cast<std::size_t>(which)] =
                        kernel.compile();
                    const Array dx = kiln::from_host(x, stream), out = poisoned(stream);
                    kernel(config, dx.data(), out.data(), kCount);
                    failure =
                        first_mismatch(out.to_host<float>(stream),
                                       std::vector<float>(n, 101.0f + static_cast<float>(which)),
                                       "compiling thread " + std::to_string(c));
                }
            } catch (const std::exception& e) {
                failure = "compiling thread " + std::to_string(c) + ": " + e.what();
            }
        });
    for (auto& thread : threads)
        thread.join();
    for (const auto& failure : failures)
        EXPECT_EQ(failure, "");

    const kiln::CompileStatistics after = compiler.statistics();
    // One program per kernel: the shared two, each launcher's two, and the new ones (float32 and
    // one array size throughout, so each ElementwiseKernel has one specialization).
    EXPECT_EQ(after.compiles - before.compiles,
              static_cast<std::uint64_t>(2 + 2 * kLaunchers + kNewKernels));
    EXPECT_EQ(after.disk_hits - before.disk_hits, 0u);
    for (int k = 0; k < kNewKernels; ++k) {
        ASSERT_NE(compiled[0][static_cast<std::size_t>(k)], nullptr);
        EXPECT_EQ(compiled[0][static_cast<std::size_t>(k)].get(),
                  compiled[1][static_cast<std::size_t>(k)].get())
            << "both compiling threads got the one program of new kernel " << k;
    }
}
