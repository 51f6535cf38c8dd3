// Runs the README's GPU examples (extracted at configure time into readme_snippets.cpp).

#include "gpu.hpp"

#include <gtest/gtest.h>

void readme_raw_kernel();
void readme_raw_module();
void readme_elementwise();
void readme_texture();
void readme_scalar_rules();

TEST(Readme, TextureSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_texture();
}

TEST(Readme, ScalarRulesSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_scalar_rules();
}

TEST(Readme, RawKernelSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_raw_kernel();
}

TEST(Readme, RawModuleSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_raw_module();
}

void readme_module_globals();
void readme_kernel_attributes();

TEST(Readme, ModuleGlobalsSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_module_globals();
}

TEST(Readme, KernelAttributesSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_kernel_attributes();
}

void readme_profile_benchmark();
void readme_profile_scoped_timer();
void readme_profile_nvtx();

TEST(Readme, ProfileBenchmarkSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_profile_benchmark();
}

TEST(Readme, ProfileScopedTimerSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_profile_scoped_timer();
}

TEST(Readme, ProfileNvtxSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_profile_nvtx();
}

TEST(Readme, ElementwiseSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_elementwise();
}

void readme_reduction();

TEST(Readme, ReductionSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_reduction();
}

void readme_fuse();

TEST(Readme, FuseSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_fuse();
}

void readme_tuning();

TEST(Readme, TuningSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_tuning();
}

void readme_multi_gpu();

TEST(Readme, MultiGpuSnippetRuns) {
    KILN_REQUIRE_GPU();
    readme_multi_gpu();
}
