#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

using kiln::cache::Config;

namespace {

const char* const kVariables[] = {
    "KILN_CACHE_DIR",      "KILN_CACHE_SAVE_SOURCE", "KILN_CACHE_MAX_SIZE", "KILN_CACHE_DISABLE",
    "KILN_CACHE_READONLY", "KILN_CACHE_SHARED",      "XDG_CACHE_HOME",      "HOME"};

// Clears the cache variables for one test and restores them afterwards.
class ConfigTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* name : kVariables) {
            if (const char* value = std::getenv(name)) m_saved[name] = value;
            ::unsetenv(name);
        }
    }
    void TearDown() override {
        for (const char* name : kVariables) {
            auto it = m_saved.find(name);
            if (it == m_saved.end())
                ::unsetenv(name);
            else
                ::setenv(name, it->second.c_str(), 1);
        }
    }
    std::map<std::string, std::string> m_saved;
};

} // namespace

TEST_F(ConfigTest, DefaultsFollowXdgThenHome) {
    ::setenv("HOME", "/home/someone", 1);
    Config config = Config::from_environment();
    EXPECT_EQ(config.dir, "/home/someone/.cache/kiln");
    EXPECT_EQ(config.max_size, std::uint64_t{2} << 30);
    EXPECT_FALSE(config.disabled);
    EXPECT_FALSE(config.readonly);
    EXPECT_FALSE(config.save_source);
    EXPECT_FALSE(config.shared);

    ::setenv("XDG_CACHE_HOME", "/xdg", 1);
    EXPECT_EQ(Config::from_environment().dir, "/xdg/kiln");
    ::setenv("XDG_CACHE_HOME", "relative", 1); // the XDG spec says to ignore it
    EXPECT_EQ(Config::from_environment().dir, "/home/someone/.cache/kiln");
}

TEST_F(ConfigTest, ReadsEveryVariable) {
    ::setenv("KILN_CACHE_DIR", "/somewhere/cache/", 1);
    ::setenv("KILN_CACHE_SAVE_SOURCE", "1", 1);
    ::setenv("KILN_CACHE_MAX_SIZE", "500M", 1);
    ::setenv("KILN_CACHE_DISABLE", "yes", 1);
    ::setenv("KILN_CACHE_READONLY", "on", 1);
    ::setenv("KILN_CACHE_SHARED", "true", 1);
    Config config = Config::from_environment();
    EXPECT_EQ(config.dir, "/somewhere/cache/");
    EXPECT_TRUE(config.save_source);
    EXPECT_EQ(config.max_size, std::uint64_t{500} << 20);
    EXPECT_TRUE(config.disabled);
    EXPECT_TRUE(config.readonly);
    EXPECT_TRUE(config.shared);
}

TEST_F(ConfigTest, ARelativeCacheDirBecomesAbsolute) {
    ::setenv("KILN_CACHE_DIR", "rel/cache", 1);
    const Config config = Config::from_environment();
    EXPECT_TRUE(config.dir.is_absolute());
    EXPECT_EQ(config.dir, (std::filesystem::current_path() / "rel/cache").lexically_normal());
}

TEST_F(ConfigTest, UnparsableValuesAreErrorsNamingTheVariable) {
    for (auto [name, value] :
         {std::pair{"KILN_CACHE_MAX_SIZE", "lots"}, std::pair{"KILN_CACHE_DISABLE", "maybe"},
          std::pair{"KILN_CACHE_READONLY", "2"}, std::pair{"KILN_CACHE_SHARED", "group"},
          std::pair{"KILN_CACHE_SAVE_SOURCE", "please"}}) {
        ::setenv(name, value, 1);
        try {
            Config::from_environment();
            ADD_FAILURE() << name << "=" << value << " was accepted";
        } catch (const kiln::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
        ::unsetenv(name);
    }
}
