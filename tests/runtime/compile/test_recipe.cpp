// The recipe the compiler records in each entry it stores, and compiling a recipe again:
// options_from_recipe() for another architecture, Compiler::reproduce() for the same bytes.

#include "compiler_fixture.hpp"

#include "kiln/cache/entry.hpp"

#include <gtest/gtest.h>

using kiln::CompileOptions;
using kiln::test::CompilerTest;
using kiln::test::kAddSource;

namespace {

constexpr const char* kTemplateSource = R"(#include "scale.cuh"
template <int N> __global__ void fill(int* p) { p[threadIdx.x] = N * SCALE * M; }
extern "C" __global__ void plain(int* p) { *p = 1; }
)";

// A compile with every recipe field set (headers and names unsorted, one name twice).
CompileOptions rich_options(const char* arch) {
    CompileOptions options = CompileOptions::for_arch(arch);
    options.options = {"-DM=3", "--use_fast_math", "-std=c++20"}; // a -std replaces Kiln's
    options.headers = {{"scale.cuh", "#define SCALE 2\n"}, {"another.cuh", "// unused\n"}};
    options.name_expressions = {"fill<2>", "fill<1>", "fill<2>"};
    options.cuda_headers = false;
    options.lineinfo = true;
    options.description = R"({"front_end":"test","n":2})";
    return options;
}

} // namespace

TEST_F(CompilerTest, EachStoredEntryRecordsItsRecipeAndKernelNames) {
    const auto program = m_compiler->compile(kTemplateSource, rich_options("sm_90"));
    const auto entry = m_store->local().peek(program->key());
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->format_version, kiln::cache::kEntryFormatVersion);
    ASSERT_TRUE(entry->recipe);
    const kiln::cache::Recipe& recipe = *entry->recipe;
    EXPECT_EQ(recipe.source, kTemplateSource);
    // The caller's options in the order given: none of Kiln's defaults, no -arch.
    EXPECT_EQ(recipe.options, (std::vector<std::string>{"-DM=3", "--use_fast_math", "-std=c++20"}));
    // Headers and name expressions as the key sees them: sorted, each name once.
    EXPECT_EQ(recipe.headers,
              (std::vector<std::pair<std::string, std::string>>{
                  {"another.cuh", "// unused\n"}, {"scale.cuh", "#define SCALE 2\n"}}));
    EXPECT_EQ(recipe.name_expressions, (std::vector<std::string>{"fill<1>", "fill<2>"}));
    EXPECT_FALSE(recipe.cuda_headers);
    EXPECT_TRUE(recipe.lineinfo);
    EXPECT_EQ(recipe.description, R"({"front_end":"test","n":2})");
    EXPECT_EQ(recipe.program_name, m_store->local().source_path(program->key()).string());
    auto names = entry->kernel_names;
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"_Z4fillILi1EEvPi", "_Z4fillILi2EEvPi", "plain"}));
}

TEST_F(CompilerTest, TheRecipeRecordsLineinfoAsResolved) {
    CompileOptions options = CompileOptions::for_arch("sm_90");
    options.lineinfo = false;
    const auto program = m_compiler->compile(kAddSource, options);
    const auto entry = m_store->local().peek(program->key());
    ASSERT_TRUE(entry && entry->recipe);
    EXPECT_FALSE(entry->recipe->lineinfo);
}

TEST_F(CompilerTest, TheDescriptionIsNotPartOfTheKey) {
    CompileOptions a = rich_options("sm_90"), b = a;
    b.description = "something else";
    EXPECT_EQ(m_compiler->key_for(kTemplateSource, a), m_compiler->key_for(kTemplateSource, b));
}

TEST_F(CompilerTest, ARecipeCompiledForAnotherArchitectureAsksForTheApplicationsKey) {
    const auto sm90 = m_compiler->compile(kTemplateSource, rich_options("sm_90"));
    const auto recipe = *m_store->local().peek(sm90->key())->recipe;
    const CompileOptions again = kiln::options_from_recipe(recipe, "sm_80");
    EXPECT_EQ(m_compiler->key_for(recipe.source, again),
              m_compiler->key_for(kTemplateSource, rich_options("sm_80")));
    EXPECT_EQ(again.description, recipe.description);
    // And for its own architecture, its own key.
    EXPECT_EQ(m_compiler->key_for(recipe.source, kiln::options_from_recipe(recipe, "sm_90")),
              sm90->key());
}

TEST_F(CompilerTest, ReproduceMakesTheSameCubinUnderTheRecordedProgramName) {
    const auto program = m_compiler->compile(kTemplateSource, rich_options("sm_90"));
    const auto entry = m_store->local().peek(program->key());
    ASSERT_TRUE(entry && entry->recipe);
    const auto before = m_compiler->statistics();
    const auto again = m_compiler->reproduce(*entry->recipe, "sm_90");
    EXPECT_EQ(again->key(), program->key());
    EXPECT_EQ(again->cubin(), entry->payload);
    EXPECT_EQ(again->lowered_names().size(), 2u);
    EXPECT_EQ(m_compiler->statistics().compiles, before.compiles + 1) << "really compiled";
    EXPECT_EQ(m_compiler->statistics().disk_hits, before.disk_hits);

    // With -lineinfo the cubin embeds the program name: another name, other bytes. This is why
    // the recipe records it.
    kiln::cache::Recipe renamed = *entry->recipe;
    renamed.program_name = "/elsewhere/kernel.cu";
    EXPECT_NE(m_compiler->reproduce(renamed, "sm_90")->cubin(), entry->payload);
}

TEST_F(CompilerTest, ARecipeTooLargeForAnEntryIsLeftOutAndTheCubinStillCached) {
    // A header NVRTC is handed but never includes: cheap to compile, too large to keep.
    CompileOptions options = CompileOptions::for_arch("sm_90");
    options.headers = {{"huge.cuh", std::string(kiln::cache::kMaxMetadataSize, ' ')}};
    const auto program = m_compiler->compile(kAddSource, options);
    const auto entry = m_store->local().peek(program->key());
    ASSERT_TRUE(entry) << "the cubin is cached";
    EXPECT_FALSE(entry->recipe);
    EXPECT_EQ(entry->kernel_names, std::vector<std::string>{"add"});
    restart();
    EXPECT_EQ(m_compiler->compile(kAddSource, options)->origin(), kiln::ProgramOrigin::disk_cache);
}
