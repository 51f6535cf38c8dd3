// `kiln import --verify` in another working directory than the one the kernels were compiled in,
// as CI verifies: a raw kernel with a header of its own and CuPy's (over Kiln's), an elementwise
// kernel, a reduction and a fused kernel, compiled by an application and warmed by `kiln warm`,
// every entry verifies. No GPU: kernels are compiled for sm_90 over arrays described at made-up
// addresses.

#include "process_cache_dir.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include "kiln/fuse.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::test::run_command;
using nlohmann::json;

namespace {

// Compiler::global() and the `kiln` it runs share this process's fresh cache directory.
const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 36;

// A raw kernel whose code comes from its own header and from CuPy's complex.cuh, which includes
// Kiln's kiln/complex.cuh and kiln/prelude.cuh.
constexpr const char* kRawHeader = R"(#pragma once
__device__ inline complex<float> scale(complex<float> v) {
    return v * complex<float>(0.5f, 2.0f);
}
)";
constexpr const char* kRawKernel =
    R"(extern "C" __global__ void raw_scale(complex<float>* z, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = scale(z[i] * z[i]);
}
)";

class VerifyElsewhere : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;

    // `kiln @p args` run in m_dir/@p dir (made first) over the cache m_dir/@p cache, or over this
    // process's cache when @p cache is null.
    kiln::test::CommandResult kiln_in(const char* dir, const char* cache,
                                      const std::string& args) const {
        std::filesystem::create_directories(m_dir / dir);
        const std::string cache_dir =
            cache ? (m_dir / cache).string() : std::string(std::getenv("KILN_CACHE_DIR"));
        return run_command("cd '" + (m_dir / dir).string() + "' && KILN_CACHE_DIR='" + cache_dir +
                           "' " KILN_TOOL_PATH " " + args);
    }

    // Exports @p cache (as kiln_in) from the directory "ci" and imports the archive there with
    // --verify into a fresh cache: every entry, at least @p kernels, must verify.
    void expect_every_entry_verifies_from_ci(const char* cache, std::size_t kernels) {
        const std::string archive = (m_dir / "cache.kilnarc").string();
        auto exported = kiln_in("ci", cache, "export --json '" + archive + "'");
        ASSERT_EQ(exported.status, 0) << exported.err;
        const auto entries = json::parse(exported.out).at("entries").get<std::size_t>();
        EXPECT_GE(entries, kernels);
        auto imported = kiln_in("ci", "into", "import --verify --json '" + archive + "'");
        ASSERT_EQ(imported.status, 0) << imported.out << imported.err;
        const json summary = json::parse(imported.out);
        EXPECT_EQ(summary.at("entries").get<std::size_t>(), entries) << summary;
        EXPECT_TRUE(summary.at("verified").get<bool>());
    }
};

bool holds(const std::string& bytes, const std::string& part) {
    return bytes.find(part) != std::string::npos;
}

} // namespace

TEST_F(VerifyElsewhere, AnApplicationsKernelsVerifyFromAnotherWorkingDirectory) {
    std::vector<std::shared_ptr<const kiln::Program>> programs;
    const std::string app = (m_dir / "app").string();
    {
        kiln::test::WorkingDirectory in_app(m_dir / "app");

        kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
        options.headers = {{"my/scale.cuh", kRawHeader}};
        const std::string raw_source =
            std::string("#include <cupy/complex.cuh>\n#include \"my/scale.cuh\"\n") + kRawKernel;
        programs.push_back(kiln::RawModule(raw_source, options).compile());

        // Complex operands: the kernel includes kiln/elementwise.cuh and kiln/complex.cuh.
        const kiln::ElementwiseKernel scaled_product("T x, T y, float32 a", "T z", "z = a * x * y",
                                                     "elsewhere_scaled_product");
        const Array x = Array::wrap(kBase, {1 << 16}, DType::complex64);
        const Array y = Array::wrap(kBase + (1 << 20), {1 << 16}, DType::complex64);
        const Array z = Array::wrap(kBase + (2 << 20), {1 << 16}, DType::complex64);
        const Arg elementwise[] = {x, y, 2.0f, z};
        programs.push_back(scaled_product.compile_for(elementwise, 4, {}, "sm_90"));

        const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                           "elsewhere_l2norm");
        const Array m = Array::wrap(kBase, {512, 4096}, DType::float32);
        const Arg reduced[] = {m};
        programs.push_back(l2norm.compile_for(reduced, 1, kiln::ReduceCall{1}, "sm_90"));

        auto sum_of_products = kiln::fuse("elsewhere_sum_of_products",
                                          [](auto a, auto b) { return kiln::sum(a * b, -1); });
        const Array n = Array::wrap(kBase + (8 << 20), {512, 4096}, DType::float32);
        const Arg fused[] = {m, n};
        programs.push_back(sum_of_products.compile_for(fused, 2, "sm_90"));
    }
    // In-memory headers are in every line table (what the check is about), not under "app".
    EXPECT_TRUE(holds(programs[0]->cubin(), "scale.cuh"));
    EXPECT_TRUE(holds(programs[0]->cubin(), "complex.cuh"));
    EXPECT_TRUE(holds(programs[1]->cubin(), "complex.cuh"));
    EXPECT_TRUE(holds(programs[2]->cubin(), "block_reduce.cuh"));
    EXPECT_TRUE(holds(programs[3]->cubin(), "block_reduce.cuh"));
    for (const auto& program : programs)
        EXPECT_FALSE(holds(program->cubin(), app)) << program->key().hex() << " names " << app;

    expect_every_entry_verifies_from_ci(nullptr, programs.size());
}

TEST_F(VerifyElsewhere, KernelsWarmedInOneDirectoryVerifyFromAnother) {
    // A manifest's raw kernel has no headers of its own: its header is written into it.
    const json raw_kernel = {
        {"source", std::string("#include <cupy/complex.cuh>\n") + kRawHeader + kRawKernel}};
    const json elementwise = {{"elementwise",
                               {{"name", "warm_scaled_product"},
                                {"in_params", "T x, T y, float32 a"},
                                {"out_params", "T z"},
                                {"operation", "z = a * x * y"}}},
                              {"args",
                               {{{"dtype", "complex64"}, {"shape", {4096}}},
                                {{"dtype", "complex64"}, {"shape", {4096}}},
                                {{"dtype", "float32"}, {"scalar", true}},
                                {{"dtype", "complex64"}, {"shape", {4096}}}}}};
    const json reduction = {{"reduction",
                             {{"name", "warm_l2norm"},
                              {"in_params", "T x"},
                              {"out_params", "T y"},
                              {"map_expr", "x * x"},
                              {"reduce_expr", "a + b"},
                              {"post_map_expr", "y = sqrt(a)"},
                              {"identity", "0"}}},
                            {"args", {{{"dtype", "float32"}, {"shape", {512, 4096}}}}},
                            {"axis", {1}}};
    kiln::test::write_file(m_dir / "manifest.json",
                           json{{"kernels", {raw_kernel, elementwise, reduction}}}.dump(2));
    auto warmed = kiln_in("app", "warmed",
                          "warm '" + (m_dir / "manifest.json").string() + "' --arch sm_90 --json");
    ASSERT_EQ(warmed.status, 0) << warmed.out << warmed.err;
    EXPECT_EQ(json::parse(warmed.out).at("errors"), 0) << warmed.out;

    expect_every_entry_verifies_from_ci("warmed", 3);
}
