// Runs the documentation's GPU examples (the README's and docs/*.md's, extracted at configure
// time into doc_snippets.cpp).

#include "gpu.hpp"

#include "kiln/linalg.hpp"

#include <gtest/gtest.h>

void snippet_raw_kernel();
void snippet_graph_capture();
void snippet_raw_module();
void snippet_elementwise();
void snippet_texture();
void snippet_texture_pitched();
void snippet_scalar_rules();
void snippet_numpy_ops();

TEST(DocSnippets, GraphCaptureSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_graph_capture();
}

TEST(DocSnippets, TextureSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_texture();
}

TEST(DocSnippets, PitchedTextureSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_texture_pitched();
}

TEST(DocSnippets, ScalarRulesSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_scalar_rules();
}

TEST(DocSnippets, NumpyOpsSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_numpy_ops();
}

TEST(DocSnippets, RawKernelSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_raw_kernel();
}

TEST(DocSnippets, RawModuleSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_raw_module();
}

void snippet_module_globals();
void snippet_kernel_attributes();

TEST(DocSnippets, ModuleGlobalsSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_module_globals();
}

TEST(DocSnippets, KernelAttributesSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_kernel_attributes();
}

void snippet_profile_benchmark();
void snippet_profile_scoped_timer();
void snippet_profile_nvtx();

TEST(DocSnippets, ProfileBenchmarkSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_profile_benchmark();
}

TEST(DocSnippets, ProfileScopedTimerSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_profile_scoped_timer();
}

TEST(DocSnippets, ProfileNvtxSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_profile_nvtx();
}

TEST(DocSnippets, ElementwiseSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_elementwise();
}

void snippet_reduction();

TEST(DocSnippets, ReductionSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_reduction();
}

void snippet_linalg();

TEST(DocSnippets, LinalgSnippetRuns) {
    KILN_REQUIRE_GPU();
    std::string reason;
    if (!kiln::matmul_available(&reason)) GTEST_SKIP() << "no cuBLAS: " << reason;
    snippet_linalg();
}

void snippet_fuse();

TEST(DocSnippets, FuseSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_fuse();
}

void snippet_fuse_in_place();

TEST(DocSnippets, FuseInPlaceSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_fuse_in_place();
}

void snippet_tuning();

TEST(DocSnippets, TuningSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_tuning();
}

void snippet_multi_gpu();

TEST(DocSnippets, MultiGpuSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_multi_gpu();
}

// The README's short examples, one per front end.
void snippet_front_raw_kernel();
void snippet_front_elementwise();
void snippet_front_reduction();
void snippet_front_fuse();
void snippet_front_benchmark();

TEST(DocSnippets, FrontRawKernelSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_front_raw_kernel();
}

TEST(DocSnippets, FrontElementwiseSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_front_elementwise();
}

TEST(DocSnippets, FrontReductionSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_front_reduction();
}

TEST(DocSnippets, FrontFuseSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_front_fuse();
}

TEST(DocSnippets, FrontBenchmarkSnippetRuns) {
    KILN_REQUIRE_GPU();
    snippet_front_benchmark();
}
