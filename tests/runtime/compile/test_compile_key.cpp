#include "compiler_fixture.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>
#include <set>

using kiln::CompileOptions;
using kiln::test::CompilerTest;
using kiln::test::kAddSource;

namespace {

CompileOptions base() {
    CompileOptions o;
    o.arch = "sm_90";
    o.options = {"-DA=1"};
    o.headers = {{"h.cuh", "#define H 1\n"}};
    o.name_expressions = {"add"};
    return o;
}

} // namespace

TEST_F(CompilerTest, ChangingAnyFieldChangesTheKey) {
    const auto reference = m_compiler->key_for(kAddSource, base());
    const std::vector<std::pair<const char*, std::function<void(std::string&, CompileOptions&)>>>
        changes = {
            {"source", [](std::string& s, CompileOptions&) { s += " "; }},
            {"arch", [](std::string&, CompileOptions& o) { o.arch = "sm_80"; }},
            {"arch-specific", [](std::string&, CompileOptions& o) { o.arch = "sm_90a"; }},
            {"option value", [](std::string&, CompileOptions& o) { o.options = {"-DA=2"}; }},
            {"extra option", [](std::string&, CompileOptions& o) { o.options.emplace_back("-G"); }},
            {"option order",
             [](std::string&, CompileOptions& o) {
                 o.options = {"-DB=1", "-DA=1"};
             }},
            {"lineinfo off", [](std::string&, CompileOptions& o) { o.lineinfo = false; }},
            {"header content", [](std::string&, CompileOptions& o) { o.headers[0].source += " "; }},
            {"header name", [](std::string&, CompileOptions& o) { o.headers[0].name = "g.cuh"; }},
            {"extra header",
             [](std::string&, CompileOptions& o) {
                 o.headers.push_back({"x", ""});
             }},
            {"name expression",
             [](std::string&, CompileOptions& o) { o.name_expressions = {"add2"}; }},
            {"no name expression",
             [](std::string&, CompileOptions& o) { o.name_expressions = {}; }},
        };
    std::set<std::string> keys{reference.hex()};
    for (const auto& [what, change] : changes) {
        std::string source = kAddSource;
        CompileOptions options = base();
        change(source, options);
        const auto key = m_compiler->key_for(source, options);
        EXPECT_NE(key, reference) << what;
        keys.insert(key.hex());
    }
    EXPECT_EQ(keys.size(), changes.size() + 1) << "every change gives a distinct key";
}

TEST_F(CompilerTest, FieldBoundariesAreKeptInTheKey) {
    CompileOptions two = base(), one = base();
    two.options = {"-DA=1", "-DB=1"};
    one.options = {"-DA=1-DB=1"};
    EXPECT_NE(m_compiler->key_for(kAddSource, two), m_compiler->key_for(kAddSource, one));
}

TEST_F(CompilerTest, TheOrderOfHeadersAndNameExpressionsDoesNotMatter) {
    CompileOptions a = base(), b = base();
    a.headers = {{"a.cuh", "1"}, {"b.cuh", "2"}};
    b.headers = {{"b.cuh", "2"}, {"a.cuh", "1"}};
    a.name_expressions = {"x", "y"};
    b.name_expressions = {"y", "x"};
    EXPECT_EQ(m_compiler->key_for(kAddSource, a), m_compiler->key_for(kAddSource, b));
}

TEST_F(CompilerTest, TheKeyIgnoresTheCacheDirectoryAndWorkingDirectory) {
    const auto here = m_compiler->key_for(kAddSource, base());
    kiln::test::TempDir other;
    kiln::cache::Store other_store(kiln::test::config_in(other.path()));
    kiln::Compiler other_compiler(&other_store);
    EXPECT_EQ(other_compiler.key_for(kAddSource, base()), here);

    char previous[4096];
    ASSERT_TRUE(getcwd(previous, sizeof previous));
    ASSERT_EQ(chdir(other.path().c_str()), 0);
    const auto moved = m_compiler->key_for(kAddSource, base());
    ASSERT_EQ(chdir(previous), 0);
    EXPECT_EQ(moved, here);
}

TEST_F(CompilerTest, TheKeyIgnoresTheProgramName) {
    // The program name is the path of the saved source, so it differs between cache directories;
    // the two compiles still share one key and one line table each naming its own directory.
    kiln::test::TempDir other;
    kiln::cache::Store other_store(kiln::test::config_in(other.path()));
    kiln::Compiler other_compiler(&other_store);
    auto a = m_compiler->compile(kAddSource, base());
    auto b = other_compiler.compile(kAddSource, base());
    EXPECT_EQ(a->key(), b->key());
    EXPECT_NE(a->cubin().find(m_dir.path().string()), std::string::npos)
        << "the line table names the cache directory's source path";
    EXPECT_NE(b->cubin().find(other.path().string()), std::string::npos);
}
