// Runs the documentation's examples that need no GPU (the README's and docs/*.md's, extracted at
// configure time into doc_snippets.cpp).

#include <gtest/gtest.h>

void snippet_compile_offline();

TEST(DocSnippets, CompileOfflineSnippetRuns) {
    snippet_compile_offline();
}

void snippet_fuse_offline();

TEST(DocSnippets, FuseOfflineSnippetRuns) {
    snippet_fuse_offline();
}

void snippet_fuse_graph_offline();

TEST(DocSnippets, FuseGraphOfflineSnippetRuns) {
    snippet_fuse_graph_offline();
}

void snippet_describe_for();

TEST(DocSnippets, DescribeForSnippetRuns) {
    snippet_describe_for();
}

void snippet_porting_cupy();

TEST(DocSnippets, PortingCupySnippetRuns) {
    snippet_porting_cupy();
}

void snippet_device_launch_offline();

TEST(DocSnippets, DeviceLaunchOfflineSnippetRuns) {
    snippet_device_launch_offline();
}
