// `kiln import --verify`: each entry's recipe compiled again; an archive is imported only when
// every cubin is the one its recipe makes, and otherwise nothing is.

#include "golden_v1.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kiln::test::run_command;

namespace {

class ImportVerifyCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string dir(const char* name) const { return (m_dir / name).string(); }
    kiln::cache::Config config(const char* name) const {
        kiln::cache::Config config;
        config.dir = dir(name);
        return config;
    }
    std::string kiln_in(const char* cache, const std::string& args) const {
        return "KILN_CACHE_DIR='" + dir(cache) + "' " KILN_TOOL_PATH " " + args;
    }
    // Two real kernels compiled into the cache "made", as an application would.
    std::vector<kiln::cache::Key> compile_two() const {
        kiln::cache::Store store(config("made"));
        kiln::Compiler compiler(&store);
        kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
        options.options = {"-DM=3"};
        options.name_expressions = {"fill<2>"};
        auto a = compiler.compile(
            "template <int N> __global__ void fill(int* p) { p[threadIdx.x] = N * M; }\n", options);
        options.name_expressions.clear();
        auto b =
            compiler.compile("extern \"C\" __global__ void other(int* p) { *p = M; }\n", options);
        return {a->key(), b->key()};
    }
    std::size_t entries_in(const char* name) const {
        return kiln::cache::Store(config(name)).local().list().size();
    }
};

} // namespace

TEST_F(ImportVerifyCli, AcceptsAnHonestArchive) {
    compile_two();
    ASSERT_EQ(run_command(kiln_in("made", "export '" + dir("a.kilnarc") + "'")).status, 0);
    auto imported = run_command(kiln_in("into", "import --verify '" + dir("a.kilnarc") + "'"));
    ASSERT_EQ(imported.status, 0) << imported.err;
    EXPECT_EQ(imported.out.rfind("imported 2 verified entries", 0), 0u) << imported.out;
    EXPECT_EQ(entries_in("into"), 2u);
}

TEST_F(ImportVerifyCli, RefusesAnArchiveWhoseCubinWasSwappedForAnotherValidOne) {
    const auto keys = compile_two();
    // The first kernel's entry, its cubin replaced by the second kernel's: a valid entry, with
    // every checksum right, under the first kernel's key.
    kiln::cache::Store made(config("made"));
    auto forged = *made.local().peek(keys[0]);
    forged.payload = made.local().peek(keys[1])->payload;
    kiln::cache::Store(config("forged")).store(forged);
    ASSERT_EQ(run_command(kiln_in("forged", "export '" + dir("f.kilnarc") + "'")).status, 0);

    // Without --verify, nothing can tell: the archive imports.
    EXPECT_EQ(run_command(kiln_in("trusting", "import '" + dir("f.kilnarc") + "'")).status, 0);
    EXPECT_EQ(entries_in("trusting"), 1u);

    auto refused = run_command(kiln_in("into", "import --verify '" + dir("f.kilnarc") + "'"));
    EXPECT_EQ(refused.status, 1);
    EXPECT_NE(refused.err.find("1 of 1 entries fail verification, so nothing was imported"),
              std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find(keys[0].hex() + ": its cubin differs"), std::string::npos)
        << refused.err;
    EXPECT_EQ(entries_in("into"), 0u);
}

TEST_F(ImportVerifyCli, RefusesARecipeThatMakesAnotherKey) {
    // A forger who also rewrites the recipe to match the swapped cubin cannot keep the key.
    const auto keys = compile_two();
    kiln::cache::Store made(config("made"));
    auto forged = *made.local().peek(keys[1]);
    forged.key = keys[0];
    kiln::cache::Store(config("forged")).store(forged);
    ASSERT_EQ(run_command(kiln_in("forged", "export '" + dir("f.kilnarc") + "'")).status, 0);
    auto refused = run_command(kiln_in("into", "import --verify '" + dir("f.kilnarc") + "'"));
    EXPECT_EQ(refused.status, 1);
    EXPECT_NE(refused.err.find(keys[0].hex() + ": its recipe compiles to another key here (" +
                               keys[1].hex()),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(entries_in("into"), 0u);
}

TEST_F(ImportVerifyCli, RefusesEntriesWithoutARecipeAndNamesThem) {
    compile_two();
    ASSERT_TRUE(kiln::test::store_golden_v1(dir("made")));
    ASSERT_EQ(run_command(kiln_in("made", "export '" + dir("a.kilnarc") + "'")).status, 0);
    auto refused =
        run_command(kiln_in("into", "import --verify --json '" + dir("a.kilnarc") + "'"));
    EXPECT_EQ(refused.status, 1);
    const auto j = nlohmann::json::parse(refused.out);
    const std::string error = j["error"];
    EXPECT_NE(error.find("1 of 3 entries fail verification"), std::string::npos) << error;
    EXPECT_NE(error.find(std::string(kiln::test::kGoldenV1Key) + ": it holds no recipe"),
              std::string::npos)
        << error;
    EXPECT_EQ(entries_in("into"), 0u);
    // Without --verify the same archive imports: old entries are fine to carry, just not checked.
    EXPECT_EQ(run_command(kiln_in("into", "import '" + dir("a.kilnarc") + "'")).status, 0);
    EXPECT_EQ(entries_in("into"), 3u);
}

TEST_F(ImportVerifyCli, NeverCompilesARecipeWhoseOptionsWouldWriteAFile) {
    const auto planted = m_dir / "planted.json";
    kiln::cache::Entry entry;
    entry.key = kiln::cache::KeyBuilder().add("test", "planted").finish();
    entry.arch = "sm_90";
    entry.payload = "not a cubin";
    entry.recipe = kiln::cache::Recipe{};
    entry.recipe->source = "extern \"C\" __global__ void k() {}\n";
    entry.recipe->options = {"-time=" + planted.string()};
    ASSERT_TRUE(kiln::cache::Store(config("forged")).store(entry));
    ASSERT_EQ(run_command(kiln_in("forged", "export '" + dir("f.kilnarc") + "'")).status, 0);
    auto refused = run_command(kiln_in("into", "import --verify '" + dir("f.kilnarc") + "'"));
    EXPECT_EQ(refused.status, 1);
    EXPECT_NE(refused.err.find("makes NVRTC write a file"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(planted));
    EXPECT_EQ(entries_in("into"), 0u);
}
