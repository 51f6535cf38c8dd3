// KILN_COMPILE_TIME_TRACE=1: NVRTC's time trace lands beside the cache entry (or in the temporary
// directory without a usable cache), and such compiles bypass the disk cache both ways.

#include "compiler_fixture.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using kiln::test::CompilerTest;
using kiln::test::kAddSource;

namespace {

// Sets KILN_COMPILE_TIME_TRACE for one test.
class TimeTraceTest : public CompilerTest {
  protected:
    void SetUp() override { setenv("KILN_COMPILE_TIME_TRACE", "1", 1); }
    void TearDown() override { unsetenv("KILN_COMPILE_TIME_TRACE"); }

    static std::filesystem::path beside_entry(const kiln::cache::Store& store,
                                              const kiln::cache::Key& key) {
        return store.source_path(key).replace_extension(".json");
    }

    static nlohmann::json read_json(const std::filesystem::path& path) {
        std::ifstream in(path);
        return nlohmann::json::parse(in);
    }
};

constexpr const char* kOtherSource =
    R"(extern "C" __global__ void scale(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
)";

} // namespace

TEST_F(TimeTraceTest, WritesNvrtcsTraceBesideTheCacheEntry) {
    auto program = m_compiler->compile(kAddSource, for_arch());
    const auto trace = beside_entry(*m_store, program->key());
    ASSERT_TRUE(std::filesystem::exists(trace)) << trace;
    const auto json = read_json(trace);
    ASSERT_TRUE(json.contains("traceEvents"));
    EXPECT_GT(json["traceEvents"].size(), 0u);
    EXPECT_FALSE(std::filesystem::exists(m_store->source_path(program->key()).replace_extension()))
        << "only the .json is left";
}

TEST_F(TimeTraceTest, TracedCompilesNeitherStoreNorLoadEntries) {
    unsetenv("KILN_COMPILE_TIME_TRACE");
    auto cached = m_compiler->compile(kOtherSource, for_arch());
    EXPECT_EQ(m_store->stats().stores, 1u);
    restart();
    setenv("KILN_COMPILE_TIME_TRACE", "1", 1);
    auto traced = m_compiler->compile(kOtherSource, for_arch());
    EXPECT_EQ(traced->origin(), kiln::ProgramOrigin::compiled) << "the cached entry was not used";
    EXPECT_EQ(traced->cubin(), cached->cubin());
    EXPECT_TRUE(std::filesystem::exists(beside_entry(*m_store, traced->key())));

    auto fresh = m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(fresh->origin(), kiln::ProgramOrigin::compiled);
    EXPECT_EQ(m_store->stats().stores, 1u) << "traced compiles store nothing";
    EXPECT_EQ(m_store->stats().hits, 0u);
}

TEST_F(TimeTraceTest, TheTraceIsNotPartOfTheKey) {
    auto traced = m_compiler->key_for(kAddSource, for_arch());
    unsetenv("KILN_COMPILE_TIME_TRACE");
    EXPECT_EQ(traced, m_compiler->key_for(kAddSource, for_arch()));
}

TEST_F(TimeTraceTest, GoesToTheTemporaryDirectoryWithoutADiskCache) {
    kiln::Compiler memory_only(nullptr);
    auto program = memory_only.compile(kOtherSource, for_arch());
    const auto trace = std::filesystem::temp_directory_path() / "kiln-time-trace" /
                       (program->key().hex() + ".json");
    ASSERT_TRUE(std::filesystem::exists(trace)) << trace;
    EXPECT_TRUE(read_json(trace).contains("traceEvents"));
    std::filesystem::remove(trace);
}

TEST_F(TimeTraceTest, AnUnparsableValueIsAnErrorNamingTheVariable) {
    setenv("KILN_COMPILE_TIME_TRACE", "maybe", 1);
    try {
        m_compiler->compile(kAddSource, for_arch());
        FAIL() << "compiled with KILN_COMPILE_TIME_TRACE=maybe";
    } catch (const kiln::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("KILN_COMPILE_TIME_TRACE"), std::string::npos)
            << e.what();
    }
}
