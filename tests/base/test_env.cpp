#include "kiln/env.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

struct ScopedEnv {
    const char* name;
    ScopedEnv(const char* n, const char* value)
        : name(n) {
        setenv(n, value, 1);
    }
    ~ScopedEnv() { unsetenv(name); }
};

} // namespace

TEST(EnvSize, ParsesBytesAndBinarySuffixes) {
    EXPECT_EQ(kiln::env::parse_size("1048576", "X"), 1048576u);
    EXPECT_EQ(kiln::env::parse_size("64k", "X"), 64u << 10);
    EXPECT_EQ(kiln::env::parse_size("500M", "X"), 500ull << 20);
    EXPECT_EQ(kiln::env::parse_size("2G", "X"), 2ull << 30);
    EXPECT_EQ(kiln::env::parse_size("2GiB", "X"), 2ull << 30);
    EXPECT_EQ(kiln::env::parse_size("1T", "X"), 1ull << 40);
}

TEST(EnvSize, RejectsWhatIsNotASizeNamingTheVariable) {
    for (const char* bad : {"", "G", "-1", "2X", "1.5G", "99999999999999999999", "17179869184T"}) {
        try {
            kiln::env::parse_size(bad, "KILN_CACHE_MAX_SIZE");
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const kiln::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("KILN_CACHE_MAX_SIZE"), std::string::npos);
        }
    }
}

TEST(EnvFlag, ReadsOnOffWordsAndFallsBackWhenUnset) {
    unsetenv("KILN_TEST_FLAG");
    EXPECT_TRUE(kiln::env::get_flag("KILN_TEST_FLAG", true));
    EXPECT_FALSE(kiln::env::get_flag("KILN_TEST_FLAG", false));
    {
        ScopedEnv on("KILN_TEST_FLAG", "YES");
        EXPECT_TRUE(kiln::env::get_flag("KILN_TEST_FLAG", false));
    }
    {
        ScopedEnv off("KILN_TEST_FLAG", "0");
        EXPECT_FALSE(kiln::env::get_flag("KILN_TEST_FLAG", true));
    }
}

TEST(EnvFlag, AnUnparsableValueIsAnErrorNamingTheVariable) {
    ScopedEnv bad("KILN_TEST_FLAG", "maybe");
    try {
        kiln::env::get_flag("KILN_TEST_FLAG", false);
        FAIL() << "accepted 'maybe'";
    } catch (const kiln::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("KILN_TEST_FLAG='maybe'"), std::string::npos);
    }
}

TEST(EnvFlag, ParseFlagReadsTheSameWordsAndNamesWhatItParsed) {
    EXPECT_TRUE(kiln::env::parse_flag("On", "X"));
    EXPECT_FALSE(kiln::env::parse_flag("FALSE", "X"));
    try {
        kiln::env::parse_flag("2", "KILN_TEST_FLAG");
        FAIL() << "accepted '2'";
    } catch (const kiln::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("KILN_TEST_FLAG='2'"), std::string::npos);
    }
}
