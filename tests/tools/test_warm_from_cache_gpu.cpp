// `kiln warm --from-cache` on a GPU machine: kernels an application compiled for another
// architecture, warmed for this GPU's from their recipes, are what the application then loads
// (disk hits, nothing compiled) and they compute the right results.

#include "gpu.hpp"
#include "process_cache_dir.hpp"
#include "run_command.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr const char* kScaleSource = R"(
template <class T, int K> __global__ void scale(T* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= K * M;
})";

} // namespace

TEST(WarmFromCacheGpu, KernelsWarmedForThisGpuLoadAsHitsAndComputeRightly) {
    KILN_REQUIRE_GPU();
    using namespace kiln;
    const std::string here = Device::current().arch();
    const std::string elsewhere = here == "sm_80" ? "sm_90" : "sm_80";
    const ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
                                         "squared_diff_warmed");
    CompileOptions options;
    options.options = {"-DM=3"};
    const RawModule module(kScaleSource, options, {"scale<int, 2>"});

    // The application ran on another machine: its cache holds only the other architecture's.
    const int n = (1 << 16) + 3;
    std::mt19937 engine(std::random_device{}());
    std::uniform_real_distribution<float> dist(-10.f, 10.f);
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i)
        x[i] = dist(engine), y[i] = dist(engine);
    const Array dx = from_host(x), dy = from_host(y);
    const Arg args[] = {dx, dy};
    squared_diff.compile_for(args, 2, {}, elsewhere);
    CompileOptions there = options;
    there.arch = elsewhere;
    RawModule(kScaleSource, there, {"scale<int, 2>"}).compile();

    const std::string dir = std::getenv("KILN_CACHE_DIR");
    auto warm =
        test::run_command("KILN_CACHE_DIR='" + dir + "' " KILN_TOOL_PATH " warm --from-cache '" +
                          dir + "' --arch " + here);
    ASSERT_EQ(warm.status, 0) << warm.err << warm.out;

    const auto before = Compiler::global().statistics();
    Array z = squared_diff(dx, dy);
    std::vector<int> ints(n, 7);
    DeviceBuffer data(n * sizeof(int));
    data.copy_from_host(ints.data(), data.size());
    module.get_function("scale<int, 2>")({(n + 127) / 128}, {128}, data, n);
    const auto after = Compiler::global().statistics();
    EXPECT_EQ(after.compiles, before.compiles) << "the warmed keys are the ones the calls ask for";
    EXPECT_GE(after.disk_hits, before.disk_hits + 2);

    const auto out = z.to_host<float>();
    data.copy_to_host(ints.data(), data.size());
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
        const double d = double(x[i]) - double(y[i]);
        wrong += std::abs(out[i] - d * d) > 1e-5 * (1 + d * d);
        wrong += ints[i] != 42;
    }
    EXPECT_EQ(wrong, 0);
}
