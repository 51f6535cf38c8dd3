// A front-end kernel warmed offline is the one a call asks for: the description of a call
// (describe_for, what a cache entry's recipe records), written as a `kiln warm` manifest and
// warmed for sm_80 and sm_90 by the real `kiln` binary, gives exactly the keys compile_for asks
// for with the same call, so those compiles are disk hits (Compiler::statistics()). No GPU: the
// arrays are described at made-up addresses.

#include "process_cache_dir.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::ElementwiseKernel;
using kiln::ReduceCall;
using kiln::ReductionKernel;
using kiln::test::run_command;
using nlohmann::json;

namespace {

// Compiler::global() and the `kiln` it runs share this process's fresh cache directory.
const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 36;
const char* const kArches[] = {"sm_80", "sm_90"};

class WarmFrontEnds : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;

    // Warms @p descriptions (one manifest kernel each) for sm_80 and sm_90: the JSON summary.
    json warm(const std::vector<std::string>& descriptions) {
        json kernels = json::array();
        for (const auto& d : descriptions)
            kernels.push_back(json::parse(d));
        kiln::test::write_file(m_dir / "manifest.json", json{{"kernels", kernels}}.dump(2));
        auto result =
            run_command(std::string(KILN_TOOL_PATH) + " warm " +
                        (m_dir / "manifest.json").string() + " --arch sm_80,sm_90 -j 2 --json");
        EXPECT_EQ(result.status, 0) << result.err;
        return result.status == 0 ? json::parse(result.out) : json();
    }

    static std::set<std::string> cached_keys() {
        auto result = run_command(std::string(KILN_TOOL_PATH) + " cache ls --json");
        EXPECT_EQ(result.status, 0) << result.err;
        std::set<std::string> keys;
        for (const auto& entry : json::parse(result.out))
            keys.insert(entry["key"].get<std::string>());
        return keys;
    }

    // Warms what @p describe gives, then checks that @p compile for each architecture asks for
    // exactly the keys warmed and reads them from disk.
    template <class Describe, class Compile>
    void expect_warmed_keys_are_the_calls(Describe&& describe, Compile&& compile) {
        const json summary = warm({describe()});
        EXPECT_EQ(summary["errors"], 0) << summary;
        EXPECT_EQ(summary["misses"].get<int>() + summary["hits"].get<int>(), 2) << summary;
        const std::set<std::string> warmed = cached_keys();
        const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
        std::set<std::string> asked;
        for (const char* arch : kArches) {
            SCOPED_TRACE(arch);
            const auto program = compile(arch);
            EXPECT_EQ(program->origin(), kiln::ProgramOrigin::disk_cache);
            asked.insert(program->key().hex());
        }
        for (const auto& key : asked)
            EXPECT_EQ(warmed.count(key), 1u) << key << " was not warmed";
        const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
        EXPECT_EQ(after.compiles - before.compiles, 0u);
        EXPECT_EQ(after.disk_hits - before.disk_hits, 2u);
    }
};

template <std::size_t N>
std::shared_ptr<const kiln::Program>
compile_for(const ElementwiseKernel& k, const std::array<Arg, N>& args,
            const kiln::CallOptions& options, const char* arch) {
    return k.compile_for(args.data(), args.size(), options, arch);
}

} // namespace

TEST_F(WarmFrontEnds, AnElementwiseCallsDescriptionWarmsTheKernelTheCallCompiles) {
    const ElementwiseKernel scale("T x, T a", "T y", "y = x * a", "warm_scale");
    const Array x = Array::wrap(kBase, {1024}, DType::float32);
    const Array y = Array::wrap(kBase + (1 << 16), {1024}, DType::float32);
    const std::array<Arg, 3> args{x, 2.5f, y};
    expect_warmed_keys_are_the_calls(
        [&] { return scale.describe_for(args.data(), args.size()); },
        [&](const char* arch) { return compile_for(scale, args, {}, arch); });
}

TEST_F(WarmFrontEnds, AMisalignedStridedCallIsDescribedAndReplayedWithItsLayout) {
    const ElementwiseKernel axpy("T x, T y, float32 a", "T z", "z = a * x + y", "warm_axpy");
    // x: rows padded to 512 elements (strided, each row contiguous); y starts 8 bytes past a
    // 16-byte boundary, so rows are read two floats at a time rather than four. Block size given.
    const Array x = Array::wrap(kBase, {64, 256}, DType::float32, {2048, 4});
    const Array y = Array::wrap(kBase + (1 << 20) + 8, {64, 256}, DType::float32);
    const std::array<Arg, 3> args{x, y, 2.0f};
    kiln::CallOptions options;
    options.block_size = 128;
    // The alignment shapes the kernel: the same call with y aligned is another one.
    const Array y_aligned = Array::wrap(kBase + (1 << 20), {64, 256}, DType::float32);
    const std::array<Arg, 3> aligned{x, y_aligned, 2.0f};
    ASSERT_NE(axpy.source_for(args.data(), args.size(), options),
              axpy.source_for(aligned.data(), aligned.size(), options));
    expect_warmed_keys_are_the_calls(
        [&] { return axpy.describe_for(args.data(), args.size(), options); },
        [&](const char* arch) { return compile_for(axpy, args, options, arch); });
}

TEST_F(WarmFrontEnds, AReductionCallsDescriptionWarmsTheKernelTheCallCompiles) {
    const ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "warm_l2norm");
    const Array x = Array::wrap(kBase, {4096, 4096}, DType::float32);
    const Arg args[] = {x};
    expect_warmed_keys_are_the_calls(
        [&] { return l2norm.describe_for(args, 1, ReduceCall{1}); },
        [&](const char* arch) { return l2norm.compile_for(args, 1, ReduceCall{1}, arch); });
}

TEST_F(WarmFrontEnds, AReductionOverOuterAxesWithKeepdimsAndAReduceTypeReplays) {
    kiln::ReductionOptions options;
    options.reduce_type = "float64";
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "warm_colsum", options);
    const Array x = Array::wrap(kBase + 4, {8, 300, 64}, DType::float32);
    const ReduceCall how{{-2, 0}, /*keepdims=*/true};
    const Arg args[] = {x};
    expect_warmed_keys_are_the_calls(
        [&] { return sum.describe_for(args, 1, how); },
        [&](const char* arch) { return sum.compile_for(args, 1, how, arch); });
}
