// Misses that explain themselves: `kiln compile --json` and `kiln warm --json` say why a key
// missed, `kiln cache explain` says it for a key or an entry file, and KILN_LOG_LEVEL=debug logs
// each disk-cache lookup of the compiler (kiln/cache/explain.hpp).

#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

using kiln::test::run_command;

namespace {

class ExplainCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string kiln(const std::string& args, const std::string& cache = "cache") const {
        return "KILN_CACHE_DIR='" + (m_dir / cache).string() + "' " KILN_TOOL_PATH " " + args;
    }
    std::string write(const std::string& name, const std::string& text) const {
        kiln::test::write_file(m_dir / name, text);
        return (m_dir / name).string();
    }
    // `kiln compile FILE ARGS --json`, parsed.
    nlohmann::json compile(const std::string& file, const std::string& args,
                           const std::string& cache = "cache") const {
        auto result = run_command(kiln("compile " + file + " --json " + args, cache));
        EXPECT_EQ(result.status, 0) << result.err;
        return nlohmann::json::parse(result.out);
    }
};

constexpr const char* kKernel = "extern \"C\" __global__ void k(float* p) { *p += N; }\n";

nlohmann::json why(const nlohmann::json& nearest, std::initializer_list<const char*> differs) {
    return {{"nearest", nearest}, {"differs", nlohmann::json(differs)}};
}

} // namespace

TEST_F(ExplainCli, CompileSaysWhyEachKeyFieldMissed) {
    const auto file = write("k.cu", kKernel);
    const auto first = compile(file, "--arch sm_90 -- -DN=1");
    EXPECT_EQ(first["why"], why(nullptr, {})) << "no entry of this kernel yet";
    const std::string key = first["key"];

    const auto options = compile(file, "--arch sm_90 -- -DN=2");
    EXPECT_EQ(options["why"], why(key, {"options"}));
    const auto arch = compile(file, "--arch sm_80 -- -DN=1");
    EXPECT_EQ(arch["why"], why(key, {"arch"}));
    const auto source =
        compile(write("k2.cu", std::string(kKernel) + "// edited\n"), "--arch sm_90 -- -DN=1");
    ASSERT_EQ(source["cache"], "miss");
    // The nearest is the one of the three entries of `k` with the fewest fields differing.
    EXPECT_EQ(source["why"]["differs"], nlohmann::json({"source"}));

    const auto hit = compile(file, "--arch sm_90 -- -DN=1");
    EXPECT_EQ(hit["cache"], "hit");
    EXPECT_FALSE(hit.contains("why")) << "a hit needs no reason";
}

TEST_F(ExplainCli, CacheExplainSaysTheSameForAKeyOrAnEntryFile) {
    const auto file = write("k.cu", kKernel);
    const std::string first = compile(file, "--arch sm_90 -- -DN=1")["key"];
    const auto second = compile(file, "--arch sm_90 -- -DN=2");
    const std::string key = second["key"];

    auto json = run_command(kiln("cache explain " + key.substr(0, 10) + " --json"));
    ASSERT_EQ(json.status, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["key"], key);
    EXPECT_EQ(j["why"], second["why"]);

    auto text = run_command(kiln("cache explain " + key));
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(text.out,
              key + ": the nearest entry of this kernel, " + first + ", differs in: options\n");

    // An entry file from another cache: explained against this one.
    const auto other = compile(file, "--arch sm_80 -- -DN=1", "other");
    const std::string other_key = other["key"];
    const auto entry_file = m_dir / "other" / other_key.substr(0, 2) / (other_key + ".kiln");
    ASSERT_TRUE(std::filesystem::exists(entry_file));
    auto from_file = run_command(kiln("cache explain " + entry_file.string() + " --json"));
    ASSERT_EQ(from_file.status, 0) << from_file.err;
    EXPECT_EQ(nlohmann::json::parse(from_file.out)["why"], why(first, {"arch"}));

    auto missing = run_command(kiln("cache explain " + std::string(32, 'f')));
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("give the entry's file"), std::string::npos) << missing.err;
}

TEST_F(ExplainCli, WarmJsonListsEachMissWithItsReason) {
    const auto file = write("k.cu", kKernel);
    const std::string key = compile(file, "--arch sm_90 -- -DN=1")["key"];
    kiln::test::write_file(
        m_dir / "m.json",
        nlohmann::json{{"kernels",
                        {{{"file", "k.cu"}, {"options", {"-DN=1"}}},
                         {{"source", "extern \"C\" __global__ void fresh(int* p) { *p = 1; }"}}}}}
            .dump());
    auto result = run_command(kiln("warm " + (m_dir / "m.json").string() +
                                   " --arch sm_80,sm_90 "
                                   "-j 2 --json"));
    ASSERT_EQ(result.status, 0) << result.err;
    const auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(j["hits"], 1);
    ASSERT_EQ(j["missed"].size(), 3u) << j.dump();
    // In job order: k for sm_80, fresh for sm_80 and sm_90 (k for sm_90 is the hit). Explained
    // against the cache before the run, not against what the run added.
    EXPECT_EQ(j["missed"][0]["arch"], "sm_80");
    EXPECT_EQ(j["missed"][0]["why"], why(key, {"arch"}));
    EXPECT_EQ(j["missed"][1]["why"], why(nullptr, {}));
    EXPECT_EQ(j["missed"][2]["why"], why(nullptr, {}));
    EXPECT_EQ(j["missed"][2]["key"].get<std::string>().size(), 32u);
}

TEST_F(ExplainCli, DebugLogNamesEachHitAndMissWithItsReason) {
    const auto file = write("k.cu", kKernel);
    const std::string env = "KILN_LOG_LEVEL=debug ";
    auto first = run_command(env + kiln("compile " + file + " --arch sm_90 -- -DN=1"));
    ASSERT_EQ(first.status, 0) << first.err;
    const std::string key = first.out.substr(5, 32);
    EXPECT_NE(first.err.find("cache miss " + key + " (sm_90): no entry of this kernel"),
              std::string::npos)
        << first.err;
    auto second = run_command(env + kiln("compile " + file + " --arch sm_80 -- -DN=1"));
    EXPECT_NE(second.err.find("the nearest entry of this kernel, " + key + ", differs in arch"),
              std::string::npos)
        << second.err;
    auto hit = run_command(env + kiln("compile " + file + " --arch sm_90 -- -DN=1"));
    EXPECT_NE(hit.err.find("cache hit " + key + " (sm_90)"), std::string::npos) << hit.err;
    // Below debug, nothing.
    auto quiet = run_command(kiln("compile " + file + " --arch sm_86 -- -DN=1"));
    EXPECT_EQ(quiet.err, "");
}
