// KILN_COMPILE_TIME_TRACE=1: NVRTC's time trace lands beside the cache entry (or, without a usable
// cache, in a private directory with an unpredictable name), such compiles bypass the disk cache
// both ways, and no link planted where the trace goes is followed.

#include "compiler_fixture.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

using kiln::test::CompilerTest;
using kiln::test::kAddSource;
using kiln::test::TempDir;

namespace {

namespace fs = std::filesystem;

// Sets KILN_COMPILE_TIME_TRACE for one test, and TMPDIR to a directory of its own.
class TimeTraceTest : public CompilerTest {
  protected:
    void SetUp() override {
        if (const char* tmp = std::getenv("TMPDIR")) m_old_tmpdir = tmp;
        setenv("TMPDIR", m_tmp.path().c_str(), 1);
        setenv("KILN_COMPILE_TIME_TRACE", "1", 1);
    }
    void TearDown() override {
        unsetenv("KILN_COMPILE_TIME_TRACE");
        if (m_old_tmpdir)
            setenv("TMPDIR", m_old_tmpdir->c_str(), 1);
        else
            unsetenv("TMPDIR");
    }

    static fs::path beside_entry(const kiln::cache::Store& store, const kiln::cache::Key& key) {
        return store.local().source_path(key).replace_extension(".json");
    }

    static nlohmann::json read_json(const fs::path& path) {
        std::ifstream in(path);
        return nlohmann::json::parse(in);
    }

    // What the compiles left in the temporary directory.
    std::vector<fs::path> in_tmp() const {
        std::vector<fs::path> found;
        for (const auto& entry : fs::directory_iterator(m_tmp.path()))
            found.push_back(entry.path());
        return found;
    }

    // A directory mkdtemp made for one compile's trace.
    static bool is_private_directory(const fs::path& dir) {
        static const std::regex name("kiln-time-trace-[A-Za-z0-9]{6}");
        struct stat st {};
        return std::regex_match(dir.filename().string(), name) && ::lstat(dir.c_str(), &st) == 0 &&
               S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700;
    }

    TempDir m_tmp;
    std::optional<std::string> m_old_tmpdir;
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
    ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(trace))) << trace;
    const auto json = read_json(trace);
    ASSERT_TRUE(json.contains("traceEvents"));
    EXPECT_GT(json["traceEvents"].size(), 0u);
    EXPECT_FALSE(fs::exists(m_store->local().source_path(program->key()).replace_extension()))
        << "only the .json is left";
    EXPECT_TRUE(in_tmp().empty()) << "the private directory is removed: " << in_tmp().front();
}

TEST_F(TimeTraceTest, TracedCompilesNeitherStoreNorLoadEntries) {
    unsetenv("KILN_COMPILE_TIME_TRACE");
    auto cached = m_compiler->compile(kOtherSource, for_arch());
    EXPECT_EQ(m_store->local().stats().stores, 1u);
    restart();
    setenv("KILN_COMPILE_TIME_TRACE", "1", 1);
    auto traced = m_compiler->compile(kOtherSource, for_arch());
    EXPECT_EQ(traced->origin(), kiln::ProgramOrigin::compiled) << "the cached entry was not used";
    EXPECT_EQ(traced->cubin(), cached->cubin());
    EXPECT_TRUE(fs::exists(beside_entry(*m_store, traced->key())));

    auto fresh = m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(fresh->origin(), kiln::ProgramOrigin::compiled);
    EXPECT_EQ(m_store->local().stats().stores, 1u) << "traced compiles store nothing";
    EXPECT_EQ(m_store->local().stats().hits, 0u);
}

TEST_F(TimeTraceTest, TheTraceIsNotPartOfTheKey) {
    auto traced = m_compiler->key_for(kAddSource, for_arch());
    unsetenv("KILN_COMPILE_TIME_TRACE");
    EXPECT_EQ(traced, m_compiler->key_for(kAddSource, for_arch()));
}

TEST_F(TimeTraceTest, WithoutADiskCacheGoesToAPrivateDirectoryOfUnpredictableName) {
    std::vector<fs::path> dirs;
    for (int run = 0; run < 2; ++run) {
        kiln::Compiler memory_only(nullptr);
        auto program = memory_only.compile(kOtherSource, for_arch());
        const auto found = in_tmp();
        ASSERT_EQ(found.size(), dirs.size() + 1u) << "one private directory per compile";
        for (const auto& dir : found) {
            if (std::find(dirs.begin(), dirs.end(), dir) != dirs.end()) continue;
            EXPECT_TRUE(is_private_directory(dir)) << dir;
            const auto trace = dir / (program->key().hex() + ".json");
            ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(trace))) << trace;
            EXPECT_TRUE(read_json(trace).contains("traceEvents"));
            dirs.push_back(dir);
        }
    }
    EXPECT_NE(dirs[0], dirs[1]) << "the same compile twice gets two directories";
}

TEST_F(TimeTraceTest, AReadOnlyCacheKeepsTheTraceInAPrivateDirectory) {
    auto config = kiln::test::config_in(m_dir.path());
    config.readonly = true;
    kiln::cache::Store readonly(config);
    kiln::Compiler compiler(&readonly);
    auto program = compiler.compile(kAddSource, for_arch());
    EXPECT_FALSE(fs::exists(beside_entry(readonly, program->key())));
    const auto found = in_tmp();
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(is_private_directory(found[0])) << found[0];
    EXPECT_TRUE(fs::is_regular_file(found[0] / (program->key().hex() + ".json")));
}

TEST_F(TimeTraceTest, ALinkPlantedWhereTheTraceGoesIsReplacedNotFollowed) {
    TempDir victim_dir;
    const auto victim = victim_dir / "victim";
    kiln::test::write_file(victim, "precious");
    const auto key = m_compiler->key_for(kAddSource, for_arch());
    const auto planted = beside_entry(*m_store, key);
    fs::create_directories(planted.parent_path());
    fs::create_symlink(victim, planted);

    m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(kiln::test::read_file(victim), "precious");
    ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(planted))) << "the link was replaced";
    EXPECT_TRUE(read_json(planted).contains("traceEvents"));
}

TEST_F(TimeTraceTest, ALinkPlantedInTheTemporaryDirectoryIsNotFollowed) {
    TempDir victim_dir;
    kiln::Compiler memory_only(nullptr);
    const auto key = memory_only.key_for(kOtherSource, for_arch());
    const auto victim = victim_dir / (key.hex() + ".json");
    kiln::test::write_file(victim, "precious");
    fs::create_directory_symlink(victim_dir.path(), m_tmp / "kiln-time-trace");

    memory_only.compile(kOtherSource, for_arch());
    EXPECT_EQ(kiln::test::read_file(victim), "precious");
    EXPECT_EQ(fs::directory_iterator(victim_dir.path())->path(), victim) << "nothing added";
}

TEST_F(TimeTraceTest, AFailedCompileLeavesNoPrivateDirectory) {
    EXPECT_THROW(m_compiler->compile("this is not CUDA", for_arch()), kiln::CompileError);
    EXPECT_TRUE(in_tmp().empty()) << in_tmp().front();
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
