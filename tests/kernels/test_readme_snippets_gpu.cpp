// Runs the README's GPU examples (extracted at configure time into readme_snippets.cpp).

#include "gpu.hpp"

#include <gtest/gtest.h>

void readme_raw_kernel();
void readme_raw_module();

TEST(Readme, RawKernelSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_raw_kernel();
}

TEST(Readme, RawModuleSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_raw_module();
}
