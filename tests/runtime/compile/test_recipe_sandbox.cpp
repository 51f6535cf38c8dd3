// A recipe Kiln did not write is compiled again (kiln import --verify) only when it can read
// nothing but its own headers and the toolkit's: every other #include, however spelled, and every
// option that adds an include folder is refused before NVRTC runs, with a refusal that names only
// what the recipe says (never what a local file holds).

#include "compile/recipe_sandbox.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

using kiln::detail::recipe_sandbox_refusal;

namespace {

kiln::cache::Recipe recipe_with(std::string source) {
    kiln::cache::Recipe recipe;
    recipe.source = std::move(source);
    recipe.headers = {{"kiln/helpers.cuh", "#pragma once\n#include <cuda_fp16.h>\n"}};
    recipe.program_name = "/nonexistent/kiln/ab/abcd.cu";
    return recipe;
}

constexpr const char* kKernel = "extern \"C\" __global__ void k(float* p) { *p += 1; }\n";

} // namespace

TEST(RecipeSandbox, ItsOwnHeadersAndTheToolkitsAreAllowed) {
    EXPECT_EQ(recipe_sandbox_refusal(recipe_with(std::string("#include \"kiln/helpers.cuh\"\n") +
                                                 "#include <cuda_fp16.h>\n"
                                                 "#include \"cuda_bf16.h\"\n"
                                                 "  #  include <cuda/std/cstdint>\n" +
                                                 kKernel)),
              "");
}

TEST(RecipeSandbox, EveryOtherIncludeIsRefused) {
    kiln::test::TempDir dir;
    kiln::test::write_file(dir / "secret", "the secret\n");
    kiln::test::write_file(dir / "cuda_fp16.h", "shadowing the toolkit's\n");
    for (const std::string& directive :
         {"#include \"" + (dir / "secret").string() + "\"", std::string("#include \"../secret\""),
          std::string("#include <../../etc/passwd>"), std::string("#include \"secret\""),
          std::string("#include_next <secret>"), std::string("#define F \"x\"\n#include F"),
          std::string("/* hidden */ #include \"secret\""), std::string("#\\\ninclude \"secret\""),
          std::string("%:include \"secret\"")}) {
        SCOPED_TRACE(directive);
        const std::string why = recipe_sandbox_refusal(recipe_with(directive + "\n" + kKernel));
        EXPECT_NE(why, "");
        EXPECT_EQ(why.find("the secret"), std::string::npos) << "nothing read from a file";
    }
    // A quoted toolkit name with a file of that name beside the program name: that file would
    // be read instead.
    auto beside = recipe_with(std::string("#include \"cuda_fp16.h\"\n") + kKernel);
    beside.program_name = (dir / "abcd.cu").string();
    EXPECT_NE(recipe_sandbox_refusal(beside).find("beside its program name"), std::string::npos);
    // The recipe's own headers are held to the same rule.
    auto header = recipe_with(kKernel);
    header.headers.push_back({"evil.cuh", "#include \"/etc/passwd\"\n"});
    EXPECT_NE(recipe_sandbox_refusal(header).find("evil.cuh"), std::string::npos);
    // Toolkit headers only where the recipe had them.
    auto no_toolkit = recipe_with(std::string("#include <cuda_fp16.h>\n") + kKernel);
    no_toolkit.cuda_headers = false;
    no_toolkit.headers.clear();
    EXPECT_NE(recipe_sandbox_refusal(no_toolkit), "");
}

TEST(RecipeSandbox, OptionsThatAddIncludeFoldersOrFilesAreRefused) {
    for (const char* option : {"-I/home/victim", "--include-path=/etc", "-include/etc/passwd",
                               "--pre-include=secret", "-isystem/x"}) {
        SCOPED_TRACE(option);
        auto recipe = recipe_with(kKernel);
        recipe.options = {option};
        EXPECT_NE(recipe_sandbox_refusal(recipe).find(option), std::string::npos);
    }
}

TEST(RecipeSandbox, ReproduceRefusesBeforeCompiling) {
    kiln::test::TempDir dir;
    kiln::test::write_file(dir / "secret", "int the_secret_identifier = ;\n");
    auto recipe = recipe_with("#include \"" + (dir / "secret").string() + "\"\n" + kKernel);
    const auto before = kiln::Compiler::global().statistics().compiles;
    try {
        kiln::Compiler::global().reproduce(recipe, "sm_90");
        ADD_FAILURE() << "compiled a recipe that reads a local file";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_EQ(std::string(e.what()).find("the_secret_identifier"), std::string::npos);
    }
    EXPECT_EQ(kiln::Compiler::global().statistics().compiles, before) << "NVRTC never ran";
    // The same kernel without it compiles.
    EXPECT_TRUE(kiln::Compiler::global().reproduce(recipe_with(kKernel), "sm_90"));
}

// NVRTC places an in-memory header at <working directory>/<name> and looks for its quoted
// includes in that folder first: a file there would be read instead of the toolkit's.
TEST(RecipeSandbox, AQuotedToolkitNameInAHeaderIsCheckedBesideWhereNvrtcPlacesIt) {
    kiln::test::TempDir dir;
    kiln::test::WorkingDirectory here(dir / "work");
    auto recipe = recipe_with(std::string("#include \"kiln/helpers.cuh\"\n") + kKernel);
    recipe.headers = {{"kiln/helpers.cuh", "#pragma once\n#include \"cuda_fp16.h\"\n"}};
    EXPECT_EQ(recipe_sandbox_refusal(recipe), "");
    std::filesystem::create_directories(dir / "work" / "kiln");
    kiln::test::write_file(dir / "work" / "kiln" / "cuda_fp16.h", "the secret\n");
    const std::string why = recipe_sandbox_refusal(recipe);
    EXPECT_NE(why.find("kiln/helpers.cuh's #include \"cuda_fp16.h\" would read a file beside "
                       "kiln/helpers.cuh in the working directory"),
              std::string::npos)
        << why;
    EXPECT_EQ(why.find("the secret"), std::string::npos);
}

// A relative program name (or none: Compiler::reproduce() then names it kiln_<key>.cu) puts the
// program in the working directory, where its quoted includes are looked for first.
TEST(RecipeSandbox, ARelativeProgramNameIsCheckedInTheWorkingDirectory) {
    kiln::test::TempDir dir;
    kiln::test::WorkingDirectory here(dir.path());
    kiln::test::write_file(dir / "cuda_fp16.h", "shadowing the toolkit's\n");
    for (const char* name : {"abcd.cu", ""}) {
        SCOPED_TRACE(name);
        auto recipe = recipe_with(std::string("#include \"cuda_fp16.h\"\n") + kKernel);
        recipe.program_name = name;
        EXPECT_NE(recipe_sandbox_refusal(recipe).find("would read a file beside its program name"),
                  std::string::npos);
    }
}
