// Commands that neither compile, sign, verify nor speak TLS load none of NVRTC, nvJitLink, OpenSSL
// or libsodium (they are opened on first use): the loader's own record of what it opened says so.

#include "run_command.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using kiln::test::run_command;

namespace {

// What the dynamic loader opened for `kiln ARGS` (LD_DEBUG=libs writes it to standard error).
std::string libraries_opened(const std::string& args) {
    const auto result = run_command("LD_DEBUG=libs " + std::string(KILN_TOOL_PATH) + " " + args);
    EXPECT_EQ(result.status, 0) << result.err;
    return result.err;
}

} // namespace

TEST(LazyLibrariesCli, HelpAndCacheDirOpenNoCompilerAndNoCryptography) {
    // (`kiln --version` opens NVRTC: it prints NVRTC's version.)
    for (const char* args : {"help", "cache dir", "help compile"}) {
        const std::string opened = libraries_opened(args);
        ASSERT_NE(opened.find("libc.so"), std::string::npos)
            << "LD_DEBUG=libs printed nothing for `kiln " << args << "`:\n"
            << opened;
        for (const char* library : {"libnvrtc", "libnvJitLink", "libssl", "libcrypto", "libsodium"})
            EXPECT_EQ(opened.find(library), std::string::npos)
                << "`kiln " << args << "` opened " << library;
    }
}

TEST(LazyLibrariesCli, KeyGenerationOpensOpensslAndSodiumWhenItNeedsThem) {
    const std::string dir = ::testing::TempDir();
    const std::string key = dir + "/lazy-key";
    std::remove(key.c_str());
    std::remove((key + ".pub").c_str());
    const std::string opened = libraries_opened("key generate " + key);
    EXPECT_NE(opened.find("libcrypto"), std::string::npos) << opened;
    EXPECT_NE(opened.find("libsodium"), std::string::npos) << opened;
    std::remove(key.c_str());
    std::remove((key + ".pub").c_str());
}
