#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kiln::test::run_command;

namespace {

class WarmCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string kiln(const std::string& args) const {
        return "KILN_CACHE_DIR='" + (m_dir / "cache").string() + "' " KILN_TOOL_PATH " " + args;
    }
    std::string manifest(const std::string& name, const nlohmann::json& kernels) const {
        kiln::test::write_file(m_dir / name, nlohmann::json{{"kernels", kernels}}.dump());
        return (m_dir / name).string();
    }
    nlohmann::json good_kernels() const {
        kiln::test::write_file(
            m_dir / "scale.cu",
            "template <class T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n");
        nlohmann::json kernels = nlohmann::json::array();
        for (int i = 0; i < 4; ++i)
            kernels.push_back({{"source", "extern \"C\" __global__ void k(int* p) { *p = " +
                                              std::to_string(i) + "; }\n"}});
        kernels.push_back({{"file", "scale.cu"},
                           {"options", {"-DUNUSED=1"}},
                           {"name_expressions", {"scale<float>", "scale<double>"}}});
        return kernels;
    }
};

} // namespace

TEST_F(WarmCli, CompilesEveryKernelForEveryArchitectureThenHits) {
    const auto path = manifest("m.json", good_kernels());
    auto first = run_command(kiln("warm " + path + " --arch sm_80,sm_90 -j 2 --json"));
    ASSERT_EQ(first.status, 0) << first.err;
    auto j = nlohmann::json::parse(first.out);
    EXPECT_EQ(j["kernels"], 5);
    EXPECT_EQ(j["misses"], 10);
    EXPECT_EQ(j["hits"], 0);
    auto second = run_command(kiln("warm " + path + " --arch sm_80,sm_90 -j 2 --json"));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(nlohmann::json::parse(second.out)["hits"], 10);
    auto stats = run_command(kiln("cache stats --json"));
    EXPECT_EQ(nlohmann::json::parse(stats.out)["entries"], 10) << stats.out;
}

TEST_F(WarmCli, AWarmedKernelIsAHitForKilnCompile) {
    const auto path = manifest("m.json", good_kernels());
    ASSERT_EQ(run_command(kiln("warm " + path + " --arch sm_90")).status, 0);
    auto compile = run_command(kiln("compile " + (m_dir / "scale.cu").string() +
                                    " --arch sm_90 --name-expr 'scale<float>' --name-expr "
                                    "'scale<double>' -- -DUNUSED=1"));
    ASSERT_EQ(compile.status, 0) << compile.err;
    EXPECT_EQ(compile.out.rfind("hit ", 0), 0u) << compile.out;
}

TEST_F(WarmCli, ABrokenKernelFailsTheCommandButTheOthersAreCached) {
    auto kernels = good_kernels();
    kernels.push_back({{"source", "extern \"C\" __global__ void broken() { nope(); }\n"}});
    const auto path = manifest("m.json", kernels);
    auto result = run_command(kiln("warm " + path + " --arch sm_90 -j 2"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("kernel 5"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("nope"), std::string::npos) << result.err;
    EXPECT_NE(result.out.find("5 misses, 1 errors"), std::string::npos) << result.out;
}

TEST_F(WarmCli, BadManifestsAreOneLineErrors) {
    kiln::test::write_file(m_dir / "bad.json", "{\"kernels\": [");
    auto parse = run_command(kiln("warm " + (m_dir / "bad.json").string() + " --arch sm_90"));
    EXPECT_EQ(parse.status, 1);
    EXPECT_NE(parse.err.find("is not JSON"), std::string::npos) << parse.err;
    auto missing = run_command(kiln("warm /nonexistent.json --arch sm_90"));
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("cannot read manifest"), std::string::npos) << missing.err;
    const auto no_file = manifest("nf.json", nlohmann::json::array({{{"file", "absent.cu"}}}));
    auto absent = run_command(kiln("warm " + no_file + " --arch sm_90"));
    EXPECT_EQ(absent.status, 1);
    EXPECT_NE(absent.err.find("absent.cu"), std::string::npos) << absent.err;
    const auto neither = manifest("n.json", nlohmann::json::array({{{"options", {"-G"}}}}));
    auto empty_entry = run_command(kiln("warm " + neither + " --arch sm_90"));
    EXPECT_EQ(empty_entry.status, 1);
    EXPECT_NE(empty_entry.err.find("exactly one of"), std::string::npos) << empty_entry.err;
    auto bad_arch = run_command(kiln("warm " + neither + " --arch banana"));
    EXPECT_EQ(bad_arch.status, 1);
}
