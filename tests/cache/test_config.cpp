#include "kiln/cache/settings.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"
#include "kiln/log.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

using kiln::cache::Config;

namespace {

const char* const kVariables[] = {
    "KILN_CACHE_DIR",      "KILN_CACHE_SAVE_SOURCE", "KILN_CACHE_MAX_SIZE", "KILN_CACHE_DISABLE",
    "KILN_CACHE_READONLY", "KILN_CACHE_SHARED",      "XDG_CACHE_HOME",      "HOME",
    "KILN_LOG_LEVEL"};

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

TEST_F(ConfigTest, TheSettingsFileGivesTheSizeLimitUnlessTheVariableDoes) {
    kiln::test::TempDir dir;
    ::setenv("KILN_CACHE_DIR", dir.path().c_str(), 1);
    Config config = Config::from_environment();
    EXPECT_EQ(config.max_size, std::uint64_t{2} << 30) << "the default without a file";
    kiln::cache::write_setting(config, "max-size", "5G");
    EXPECT_EQ(kiln::test::read_file(dir / "kiln.conf"), "max-size = 5G\n");
    struct stat st;
    ASSERT_EQ(::stat((dir / "kiln.conf").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{5} << 30);
    ::setenv("KILN_CACHE_MAX_SIZE", "100M", 1);
    EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{100} << 20);
    ::unsetenv("KILN_CACHE_MAX_SIZE");

    kiln::cache::write_setting(config, "max-size", "0");
    EXPECT_EQ(Config::from_environment().max_size, 0u) << "0: no limit";
    const auto settings = kiln::cache::read_settings(config);
    ASSERT_EQ(settings.size(), 1u);
    EXPECT_EQ(settings[0].name, "max-size");
    EXPECT_EQ(settings[0].variable, "KILN_CACHE_MAX_SIZE");
    EXPECT_EQ(settings[0].value, "0");
}

TEST_F(ConfigTest, ASharedCachesSettingsFileIsGroupWritable) {
    kiln::test::TempDir dir;
    Config config;
    config.dir = dir / "team";
    config.shared = true;
    kiln::cache::write_setting(config, "max-size", "1G");
    struct stat st;
    ASSERT_EQ(::stat((dir / "team" / "kiln.conf").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TEST_F(ConfigTest, ABadSettingsFileIsAnErrorNamingTheFile) {
    kiln::test::TempDir dir;
    ::setenv("KILN_CACHE_DIR", dir.path().c_str(), 1);
    const std::string file = (dir / "kiln.conf").string();
    for (const char* text : {"max-size = lots\n", "max-size 5G\n"}) {
        kiln::test::write_file(dir / "kiln.conf", text);
        ::chmod(file.c_str(), 0600);
        try {
            Config::from_environment();
            ADD_FAILURE() << text << " was accepted";
        } catch (const kiln::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
        }
        // The file is still fixed through the API (as by `kiln cache config max-size 1G`).
        kiln::cache::write_setting(kiln::cache::config_without_settings(), "max-size", "1G");
        EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{1} << 30) << text;
    }
    // An unknown key (a typo, or a newer Kiln's setting) is an error too, not quietly ignored;
    // setting a value drops it.
    kiln::test::write_file(dir / "kiln.conf", "# ours\ncolour = blue\nmax-size = 3G\n");
    try {
        Config::from_environment();
        ADD_FAILURE() << "an unknown key was accepted";
    } catch (const kiln::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(file + ": unknown setting 'colour'"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(kiln::cache::read_settings(kiln::cache::config_without_settings()),
                 kiln::ConfigError);
    kiln::cache::write_setting(kiln::cache::config_without_settings(), "max-size", "4G");
    EXPECT_EQ(kiln::test::read_file(dir / "kiln.conf"), "# ours\nmax-size = 4G\n");
    EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{4} << 30);
    ::setenv("KILN_CACHE_DISABLE", "1", 1);
    kiln::test::write_file(dir / "kiln.conf", "max-size = lots\n");
    EXPECT_NO_THROW(Config::from_environment()) << "a disabled cache reads no file";
}

TEST_F(ConfigTest, WritingAnUnknownOrBadSettingOrIntoAReadOnlyCacheIsRefused) {
    kiln::test::TempDir dir;
    Config config;
    config.dir = dir.path();
    EXPECT_THROW(kiln::cache::write_setting(config, "colour", "blue"), kiln::ConfigError);
    EXPECT_THROW(kiln::cache::write_setting(config, "max-size", "lots"), kiln::ConfigError);
    config.readonly = true;
    EXPECT_THROW(kiln::cache::write_setting(config, "max-size", "1G"), kiln::Error);
    EXPECT_FALSE(std::filesystem::exists(dir / "kiln.conf"));
}

TEST_F(ConfigTest, AnUntrustedSettingsFileIsIgnored) {
    kiln::test::TempDir dir;
    ::setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);
    std::filesystem::create_directory(dir / "cache");
    kiln::test::write_file(dir / "elsewhere", "max-size = 1K\n");
    std::filesystem::create_symlink(dir / "elsewhere", dir / "cache" / "kiln.conf");
    EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{2} << 30) << "through a link";
    EXPECT_THROW(kiln::cache::read_settings(Config::from_environment()), kiln::ConfigError);

    std::filesystem::remove(dir / "cache" / "kiln.conf");
    kiln::test::write_file(dir / "cache" / "kiln.conf", "max-size = 1K\n");
    ::chmod((dir / "cache" / "kiln.conf").c_str(), 0666);
    EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{2} << 30) << "writable by all";
    ::chmod((dir / "cache" / "kiln.conf").c_str(), 0644);
    EXPECT_EQ(Config::from_environment().max_size, 1024u);
    if (::geteuid() != 0) return; // the ownership checks need another user
    ASSERT_EQ(::chown((dir / "cache" / "kiln.conf").c_str(), 12345, 12345), 0);
    EXPECT_EQ(Config::from_environment().max_size, std::uint64_t{2} << 30) << "another's file";
    ::setenv("KILN_CACHE_SHARED", "1", 1);
    ::chmod((dir / "cache").c_str(), 02770); // a directory only the team could have made
    EXPECT_EQ(Config::from_environment().max_size, 1024u) << "a team member's file";
}

TEST_F(ConfigTest, ABadLogLevelFailsEveryCallNotOnlyTheFirst) {
    if (spdlog::get("kiln")) GTEST_SKIP() << "the logger was made by an earlier test";
    ::setenv("KILN_LOG_LEVEL", "xyz", 1);
    EXPECT_THROW(kiln::logger(), kiln::ConfigError);
    EXPECT_THROW(kiln::logger(), kiln::ConfigError);
}
