// A generated kernel's cache entry records the front end's description in its recipe, and that
// description, handed to `kiln warm` as a manifest entry in another cache directory, compiles the
// very same key: what `kiln warm` replays for a fused function is its traced kernel.

#include "run_command.hpp"
#include "temp_dir.hpp"

#include "kiln/array.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/elementwise_kernel.hpp"
#include "kiln/fuse.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::test::run_command;

namespace {

// A described array at a made-up, aligned address: compile_for needs no device.
Array described(kiln::Dims shape, DType dtype) {
    return Array::wrap(CUdeviceptr{1} << 20, shape, dtype);
}

class RecipeReplay : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;

    // The description the entry of @p program holds, read back from the disk cache.
    static std::string recorded_description(const kiln::Program& program) {
        kiln::cache::Store* store = kiln::Compiler::global().store();
        EXPECT_NE(store, nullptr);
        if (!store) return {};
        std::string why;
        auto entry = store->local().peek(program.key(), &why);
        EXPECT_TRUE(entry) << why;
        if (!entry || !entry->recipe) {
            ADD_FAILURE() << "the entry holds no recipe";
            return {};
        }
        return entry->recipe->description;
    }

    // `kiln warm` of @p description alone, for sm_90, into a fresh cache directory: the keys of
    // that directory afterwards.
    std::vector<std::string> warmed_keys(const std::string& description) {
        const nlohmann::json manifest{{"kernels", {nlohmann::json::parse(description)}}};
        kiln::test::write_file(m_dir / "m.json", manifest.dump());
        const std::string env = "KILN_CACHE_DIR='" + (m_dir / "other").string() + "' ";
        auto warm = run_command(env + KILN_TOOL_PATH " warm '" + (m_dir / "m.json").string() +
                                "' --arch sm_90 --json");
        EXPECT_EQ(warm.status, 0) << warm.err;
        auto ls = run_command(env + KILN_TOOL_PATH " cache ls --json");
        EXPECT_EQ(ls.status, 0) << ls.err;
        std::vector<std::string> keys;
        for (const auto& entry : nlohmann::json::parse(ls.out))
            keys.push_back(entry["key"].get<std::string>());
        return keys;
    }
};

} // namespace

TEST_F(RecipeReplay, AFusedFunctionsEntryReplaysToTheSameKey) {
    auto squared_diff =
        kiln::fuse("replay_squared_diff", [](auto x, auto y) { return (x - y) * (x - y); });
    const Array x = described({1000, 64}, DType::float32);
    const Arg args[] = {x, x};
    auto program = squared_diff.compile_for(args, 2, "sm_90");
    const std::string description = recorded_description(*program);
    ASSERT_FALSE(description.empty());
    EXPECT_EQ(nlohmann::json::parse(description).count("elementwise"), 1u) << description;
    EXPECT_EQ(warmed_keys(description), std::vector<std::string>{program->key().hex()});
}

TEST_F(RecipeReplay, AFusedReductionsEntryReplaysToTheSameKey) {
    auto sum_of_products =
        kiln::fuse("replay_sum_of_products", [](auto x, auto y) { return kiln::sum(x * y, -1); });
    const Array x = described({300, 512}, DType::float32);
    const Arg args[] = {x, x};
    auto program = sum_of_products.compile_for(args, 2, "sm_90");
    const std::string description = recorded_description(*program);
    ASSERT_FALSE(description.empty());
    EXPECT_EQ(nlohmann::json::parse(description).count("reduction"), 1u) << description;
    EXPECT_EQ(warmed_keys(description), std::vector<std::string>{program->key().hex()});
}

TEST_F(RecipeReplay, AnElementwiseKernelsEntryReplaysToTheSameKey) {
    const kiln::ElementwiseKernel axpy("T x, T y, T a", "T z", "z = a * x + y", "replay_axpy");
    const Array x = described({4096}, DType::float64);
    const Arg args[] = {x, x, 2.0};
    auto program = axpy.compile_for(args, 3, {}, "sm_90");
    const std::string description = recorded_description(*program);
    ASSERT_FALSE(description.empty());
    EXPECT_EQ(warmed_keys(description), std::vector<std::string>{program->key().hex()});
}

TEST_F(RecipeReplay, EachKernelOfASplitFusedFunctionReplaysToItsKey) {
    // Softmax over a transposed view: a max, a sum and an elementwise kernel (issue 38).
    auto softmax = kiln::fuse("replay_softmax", [](auto x) {
        auto e = kiln::exp(x - kiln::max(x, -1, {true}));
        return e / kiln::sum(e, -1, {true});
    });
    const Array x = described({512, 96}, DType::float32).transpose();
    const Arg args[] = {x};
    const auto programs = softmax.programs_for(args, 1, "sm_90");
    ASSERT_EQ(programs.size(), 3u);
    const char* kinds[] = {"reduction", "reduction", "elementwise"};
    for (std::size_t k = 0; k < programs.size(); ++k) {
        const std::string description = recorded_description(*programs[k]);
        ASSERT_FALSE(description.empty());
        EXPECT_EQ(nlohmann::json::parse(description).count(kinds[k]), 1u) << description;
        // Warmed into the same directory one after the other: one more key each time, its own.
        const std::vector<std::string> keys = warmed_keys(description);
        EXPECT_EQ(keys.size(), k + 1);
        EXPECT_NE(std::find(keys.begin(), keys.end(), programs[k]->key().hex()), keys.end());
    }
}
