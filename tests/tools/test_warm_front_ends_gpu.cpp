// On a GPU: the kernel a real call compiles (real addresses, this device's multiprocessor count)
// is the kernel its description warms. Each call below compiles once; its description, read as a
// `kiln warm` manifest and compiled for this device's architecture, must then be a memory hit
// (the same key) and compile nothing.

#include "gpu.hpp"
#include "manifest.hpp"
#include "process_cache_dir.hpp"
#include "temp_dir.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::ReduceCall;
using kiln::Slice;

namespace {

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

class WarmFrontEndsGpu : public ::testing::Test {
  protected:
    void SetUp() override { KILN_REQUIRE_GPU(); }

    kiln::test::TempDir m_dir;

    // Compiles @p description as `kiln warm` does, for this device: it must compile nothing.
    void expect_replay_is_a_memory_hit(const std::string& description) {
        SCOPED_TRACE(description);
        const nlohmann::json manifest{{"kernels", {nlohmann::json::parse(description)}}};
        kiln::test::write_file(m_dir / "manifest.json", manifest.dump());
        const auto kernels = kiln::tools::read_manifest((m_dir / "manifest.json").string());
        ASSERT_EQ(kernels.size(), 1u);
        const kiln::CompileStatistics before = kiln::Compiler::global().statistics();
        kernels[0].compile(kiln::Device::current().arch());
        const kiln::CompileStatistics after = kiln::Compiler::global().statistics();
        EXPECT_EQ(after.compiles - before.compiles, 0u) << "the replay compiled another kernel";
        EXPECT_EQ(after.memory_hits - before.memory_hits, 1u);
    }
};

// How many programs the compiler handed out since @p before: compiled, read from disk or memory.
std::uint64_t asked_since(const kiln::CompileStatistics& before) {
    const kiln::CompileStatistics now = kiln::Compiler::global().statistics();
    return (now.compiles - before.compiles) + (now.disk_hits - before.disk_hits) +
           (now.memory_hits - before.memory_hits);
}

} // namespace

TEST_F(WarmFrontEndsGpu, AReductionCallIsTheKernelItsDescriptionWarmsOnThisDevice) {
    // Shapes whose layout a multiprocessor-count threshold would decide, and a full reduction.
    for (const kiln::Dims& shape :
         {kiln::Dims{2000, 64}, kiln::Dims{500, 4096}, kiln::Dims{1 << 20}}) {
        SCOPED_TRACE(shape.to_string());
        // A kernel object per shape: two shapes can collapse to one signature, which an object
        // that saw the first would serve from its own table without asking the compiler.
        const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                           "gpu_warm_l2norm");
        const Array x = kiln::zeros(shape, DType::float32);
        const ReduceCall how{shape.size() == 2 ? kiln::Axes(1) : kiln::Axes::all()};
        const auto before = kiln::Compiler::global().statistics();
        l2norm(how, x);
        kiln::Device::current().synchronize();
        // The call asked the compiler for its kernel (two shapes may plan the same source, so
        // a later one can be a memory hit rather than a compile).
        ASSERT_GE(asked_since(before), 1u);
        const Arg args[] = {x};
        expect_replay_is_a_memory_hit(l2norm.describe_for(args, 1, how));
    }
}

TEST_F(WarmFrontEndsGpu, AMisalignedStridedElementwiseCallIsTheKernelItsDescriptionWarms) {
    const kiln::ElementwiseKernel axpy("T x, T y, float32 a", "T z", "z = a * x + y",
                                       "gpu_warm_axpy");
    const Array base = kiln::zeros({64, 514}, DType::float32);
    // Rows of 512 starting one float in (4 bytes past alignment), and every other row.
    const Array x = base.slice({Slice::range(0, 64, 2), Slice::range(1, 513)});
    const Array y = base.slice({Slice::range(1, 64, 2), Slice::range(2, 514)});
    const auto before = kiln::Compiler::global().statistics();
    axpy(x, y, 2.0f);
    kiln::Device::current().synchronize();
    ASSERT_GE(asked_since(before), 1u);
    const std::array<Arg, 3> args{x, y, 2.0f};
    const std::string description = axpy.describe_for(args.data(), args.size());
    EXPECT_NE(description.find("\"offset\":4"), std::string::npos) << description;
    EXPECT_NE(description.find("\"strides\""), std::string::npos) << description;
    expect_replay_is_a_memory_hit(description);
}
