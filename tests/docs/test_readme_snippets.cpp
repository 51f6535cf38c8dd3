// Runs the README's examples that need no GPU (extracted at configure time).

#include <gtest/gtest.h>

void readme_compile_offline();

TEST(Readme, CompileOfflineSnippetRuns) {
    readme_compile_offline();
}

void readme_fuse_offline();

TEST(Readme, FuseOfflineSnippetRuns) {
    readme_fuse_offline();
}

void readme_describe_for();

TEST(Readme, DescribeForSnippetRuns) {
    readme_describe_for();
}

void readme_porting_cupy();

TEST(Readme, PortingCupySnippetRuns) {
    readme_porting_cupy();
}

void readme_device_launch_offline();

TEST(Readme, DeviceLaunchOfflineSnippetRuns) {
    readme_device_launch_offline();
}
