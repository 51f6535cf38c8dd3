// Nsight Compute correlation, checked without a GPU: with KILN_CACHE_SAVE_SOURCE the cubin's line
// table names the saved .cu, which holds the source.

#include "compiler_fixture.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

using kiln::test::CompilerTest;
using kiln::test::kAddSource;

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
