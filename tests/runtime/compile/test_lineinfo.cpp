// Nsight Compute correlation, checked without a GPU: with KILN_CACHE_SAVE_SOURCE the cubin's line
// table names the saved .cu, which holds the source; the headers handed to NVRTC in memory are
// named the same from any working directory, so a recipe compiles to the same bytes anywhere.

#include "compiler_fixture.hpp"

#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

using kiln::test::CompilerTest;
using kiln::test::kAddSource;
using kiln::test::WorkingDirectory;

namespace {

// readelf's decoded line table of a cubin.
std::string line_table(const std::string& cubin, const std::filesystem::path& dir) {
    const auto path = dir / "k.cubin";
    kiln::test::write_file(path, cubin);
    const std::string command = "readelf --debug-dump=line '" + path.string() + "' 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::string out;
    char buffer[4096];
    while (pipe && fgets(buffer, sizeof buffer, pipe.get()))
        out += buffer;
    return out;
}

// A kernel whose code comes from two in-memory headers, one including the other, as Kiln's own
// (kiln/reduction.cuh includes kiln/block_reduce.cuh).
kiln::CompileOptions with_headers() {
    kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
    options.headers = {{"kiln/helpers.cuh",
                        "#pragma once\n#include \"kiln/twice.cuh\"\n"
                        "__device__ float thrice(float v) { return twice(v) + v; }\n"},
                       {"kiln/twice.cuh", "#pragma once\n"
                                          "__device__ float twice(float v) { return 2 * v; }\n"}};
    return options;
}

constexpr const char* kUsesHeaders = "#include <kiln/helpers.cuh>\n"
                                     "extern \"C\" __global__ void k(float* p) {\n"
                                     "    p[threadIdx.x] = thrice(p[threadIdx.x]);\n"
                                     "}\n";

} // namespace

TEST_F(CompilerTest, SavedSourceIsNamedByTheLineTable) {
    restart(/*save_source=*/true);
    auto program = m_compiler->compile(kAddSource, for_arch());
    ASSERT_TRUE(program->source_path());
    const auto& path = *program->source_path();
    EXPECT_EQ(kiln::test::read_file(path), kAddSource);
    EXPECT_EQ(path.filename(), program->key().hex() + ".cu");

    const std::string table = line_table(program->cubin(), m_dir.path());
    EXPECT_NE(table.find(path.filename().string()), std::string::npos) << table;
    EXPECT_NE(table.find(path.parent_path().string()), std::string::npos) << table;
}

TEST_F(CompilerTest, AHitRewritesAMissingSavedSource) {
    restart(/*save_source=*/true);
    auto program = m_compiler->compile(kAddSource, for_arch());
    const auto path = *program->source_path();
    std::filesystem::remove(path);
    restart(/*save_source=*/true);
    auto hit = m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(hit->origin(), kiln::ProgramOrigin::disk_cache);
    EXPECT_EQ(kiln::test::read_file(path), kAddSource);
}

TEST_F(CompilerTest, LineinfoCanBeTurnedOff) {
    auto with = m_compiler->compile(kAddSource, for_arch());
    auto options = for_arch();
    options.lineinfo = false;
    auto without = m_compiler->compile(kAddSource, options);
    EXPECT_NE(line_table(with->cubin(), m_dir.path()).find(".cu"), std::string::npos);
    EXPECT_EQ(line_table(without->cubin(), m_dir.path()).find(".cu"), std::string::npos);
}

// NVRTC names an in-memory header under the working directory (<cwd>/kiln/helpers.cuh): the same
// recipe compiled from another directory, as `kiln import --verify` in CI does, gave other bytes.
TEST_F(CompilerTest, ARecipeCompilesToTheSameBytesFromAnyWorkingDirectory) {
    std::shared_ptr<const kiln::Program> made;
    {
        WorkingDirectory here(m_dir / "made-here");
        made = m_compiler->compile(kUsesHeaders, with_headers());
    }
    const auto entry = m_store->local().peek(made->key());
    ASSERT_TRUE(entry && entry->recipe);
    std::shared_ptr<const kiln::Program> again;
    {
        WorkingDirectory elsewhere(m_dir / "checked-elsewhere");
        again = m_compiler->reproduce(*entry->recipe, "sm_90");
    }
    EXPECT_EQ(again->key(), made->key());
    EXPECT_TRUE(again->cubin() == made->cubin()) << "the cubin depends on the working directory";

    const std::string table = line_table(made->cubin(), m_dir.path());
    EXPECT_NE(table.find("helpers.cuh"), std::string::npos) << table;
    EXPECT_EQ(table.find("made-here"), std::string::npos) << table;
    // The program itself is still named by the path of its saved source (Nsight Compute).
    EXPECT_NE(table.find(m_store->local().source_path(made->key()).filename().string()),
              std::string::npos)
        << table;
}

// A compile error in an in-memory header still names the header and the line.
TEST_F(CompilerTest, AnErrorInAnInMemoryHeaderNamesTheHeaderAndLine) {
    auto options = with_headers();
    options.headers[1].source = "#pragma once\n__device__ float twice(float v) { return 2 v; }\n";
    try {
        m_compiler->compile(kUsesHeaders, options);
        FAIL() << "compiled a header with an error";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(e.log().find("kiln/twice.cuh(2): error"), std::string::npos) << e.log();
    }
}
