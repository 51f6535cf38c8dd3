// The remote tier's configuration: the Redis URL and the KILN_REMOTE_CACHE_* variables.

#include "kiln/cache/remote.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

using kiln::ConfigError;
using kiln::cache::RemoteConfig;
using kiln::cache::RemoteMode;

namespace {

const char* const kVariables[] = {"KILN_REMOTE_CACHE",
                                  "KILN_REMOTE_CACHE_MODE",
                                  "KILN_REMOTE_CACHE_PASSWORD_FILE",
                                  "KILN_REMOTE_CACHE_CA_FILE",
                                  "KILN_REMOTE_CACHE_CERT_FILE",
                                  "KILN_REMOTE_CACHE_KEY_FILE",
                                  "KILN_REMOTE_CACHE_TTL",
                                  "KILN_REMOTE_CACHE_CONNECT_TIMEOUT",
                                  "KILN_REMOTE_CACHE_TIMEOUT",
                                  "KILN_REMOTE_CACHE_RETRY",
                                  "KILN_CACHE_DISABLE",
                                  "HOME",
                                  "XDG_CACHE_HOME",
                                  "KILN_CACHE_DIR"};

class RemoteConfigTest : public ::testing::Test {
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

// The ConfigError's message, or "" when none was thrown.
std::string config_error() {
    try {
        RemoteConfig::from_environment();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(RemoteUrl, ParsesEveryPart) {
    auto c = RemoteConfig::parse_url("redis://alice:s%40cret@cache.example.org:6380/3", "X");
    EXPECT_EQ(c.host, "cache.example.org");
    EXPECT_EQ(c.port, 6380);
    EXPECT_EQ(c.db, 3);
    EXPECT_EQ(c.user, "alice");
    EXPECT_EQ(c.password, "s@cret");
    EXPECT_EQ(c.display_url(), "redis://alice@cache.example.org:6380/3");

    c = RemoteConfig::parse_url("redis://:pw@10.0.0.1", "X");
    EXPECT_EQ(c.host, "10.0.0.1");
    EXPECT_EQ(c.port, 6379);
    EXPECT_EQ(c.db, 0);
    EXPECT_EQ(c.user, "");
    EXPECT_EQ(c.password, "pw");

    c = RemoteConfig::parse_url("redis://[::1]:7000/1", "X");
    EXPECT_EQ(c.host, "::1");
    EXPECT_EQ(c.port, 7000);
    EXPECT_EQ(c.display_url(), "redis://[::1]:7000/1");
}

TEST(RemoteUrl, RedissMeansTlsOnTheSamePort) {
    auto c = RemoteConfig::parse_url("rediss://:pw@cache.example.org/2", "X");
    EXPECT_TRUE(c.tls);
    EXPECT_EQ(c.scheme, "redis"); // the same backend
    EXPECT_EQ(c.host, "cache.example.org");
    EXPECT_EQ(c.port, 6379);
    EXPECT_EQ(c.password, "pw");
    EXPECT_EQ(c.display_url(), "rediss://cache.example.org:6379/2");
    EXPECT_FALSE(RemoteConfig::parse_url("redis://h", "X").tls);
    try {
        RemoteConfig::parse_url("redisss://bob:hunter2@host", "KILN_REMOTE_CACHE");
        FAIL() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("rediss://"), std::string::npos) << e.what();
    }
}

TEST(RemoteUrl, RejectsWhatDoesNotParseNamingTheVariable) {
    for (const char* url :
         {"http://host", "redis://", "redis://host:", "redis://host:0", "redis://host:70000",
          "redis://host:12ab", "redis://host/x", "redis://user@host", "redis://:p%zz@host",
          "redis://[::1", "redis://ho st", "redis://host/1/2"}) {
        try {
            RemoteConfig::parse_url(url, "KILN_REMOTE_CACHE");
            ADD_FAILURE() << url << " was accepted";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("KILN_REMOTE_CACHE="), std::string::npos) << url;
        }
    }
}

TEST(RemoteUrl, NeverShowsThePasswordInAnError) {
    try {
        RemoteConfig::parse_url("redis://bob:hunter2@host:notaport", "KILN_REMOTE_CACHE");
        FAIL() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    }
}

TEST_F(RemoteConfigTest, UnsetMeansNoRemoteTier) {
    EXPECT_FALSE(RemoteConfig::from_environment());
    ::setenv("HOME", "/home/someone", 1);
    EXPECT_FALSE(kiln::cache::Config::from_environment().remote);
}

TEST_F(RemoteConfigTest, ReadsModeTtlAndTimeouts) {
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1:6390/2", 1);
    ::setenv("KILN_REMOTE_CACHE_MODE", "read-only", 1);
    ::setenv("KILN_REMOTE_CACHE_TTL", "7d", 1);
    ::setenv("KILN_REMOTE_CACHE_CONNECT_TIMEOUT", "250", 1);
    ::setenv("KILN_REMOTE_CACHE_TIMEOUT", "2s", 1);
    ::setenv("KILN_REMOTE_CACHE_RETRY", "5", 1);
    auto c = RemoteConfig::from_environment();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->port, 6390);
    EXPECT_EQ(c->db, 2);
    EXPECT_EQ(c->mode, RemoteMode::read_only);
    EXPECT_EQ(c->ttl, std::chrono::seconds(7 * 86400));
    EXPECT_EQ(c->connect_timeout, std::chrono::milliseconds(250));
    EXPECT_EQ(c->op_timeout, std::chrono::milliseconds(2000));
    EXPECT_EQ(c->retry_interval, std::chrono::milliseconds(5000));

    ::setenv("KILN_REMOTE_CACHE_MODE", "remote-only", 1);
    EXPECT_EQ(RemoteConfig::from_environment()->mode, RemoteMode::remote_only);
    ::unsetenv("KILN_REMOTE_CACHE_MODE");
    EXPECT_EQ(RemoteConfig::from_environment()->mode, RemoteMode::read_write);
}

TEST_F(RemoteConfigTest, BadValuesAreErrorsNamingTheVariable) {
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1", 1);
    const std::pair<const char*, const char*> bad[] = {
        {"KILN_REMOTE_CACHE_MODE", "readwrite"}, {"KILN_REMOTE_CACHE_TTL", "soon"},
        {"KILN_REMOTE_CACHE_TTL", "1500ms"},     {"KILN_REMOTE_CACHE_TIMEOUT", "0"},
        {"KILN_REMOTE_CACHE_TIMEOUT", "-5"},     {"KILN_REMOTE_CACHE_CONNECT_TIMEOUT", "fast"},
        {"KILN_REMOTE_CACHE_RETRY", "10x"},      {"KILN_REMOTE_CACHE", "redis:/127.0.0.1"},
    };
    for (const auto& [name, value] : bad) {
        const char* before = std::getenv(name);
        const std::string saved = before ? before : "";
        ::setenv(name, value, 1);
        EXPECT_NE(config_error().find(name), std::string::npos) << name << "=" << value;
        if (saved.empty())
            ::unsetenv(name);
        else
            ::setenv(name, saved.c_str(), 1);
    }
    // Companions are checked even without a URL.
    ::unsetenv("KILN_REMOTE_CACHE");
    ::setenv("KILN_REMOTE_CACHE_MODE", "sometimes", 1);
    EXPECT_NE(config_error().find("KILN_REMOTE_CACHE_MODE"), std::string::npos);
}

TEST_F(RemoteConfigTest, PasswordComesFromItsFile) {
    kiln::test::TempDir dir;
    kiln::test::write_file(dir / "password", "from-the-file\n");
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1", 1);
    ::setenv("KILN_REMOTE_CACHE_PASSWORD_FILE", (dir / "password").c_str(), 1);
    auto c = RemoteConfig::from_environment();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->password, "from-the-file");

    ::setenv("KILN_REMOTE_CACHE", "redis://:inline@127.0.0.1", 1);
    EXPECT_NE(config_error().find("keep only the file"), std::string::npos);

    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1", 1);
    ::setenv("KILN_REMOTE_CACHE_PASSWORD_FILE", (dir / "missing").c_str(), 1);
    EXPECT_NE(config_error().find("KILN_REMOTE_CACHE_PASSWORD_FILE"), std::string::npos);
}

TEST_F(RemoteConfigTest, TlsFilesGoWithRedissAndACertificateWithItsKey) {
    ::setenv("KILN_REMOTE_CACHE", "rediss://127.0.0.1", 1);
    ::setenv("KILN_REMOTE_CACHE_CA_FILE", "/etc/kiln/ca.pem", 1);
    ::setenv("KILN_REMOTE_CACHE_CERT_FILE", "/etc/kiln/client.pem", 1);
    ::setenv("KILN_REMOTE_CACHE_KEY_FILE", "/etc/kiln/client.key", 1);
    auto c = RemoteConfig::from_environment();
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->tls);
    EXPECT_EQ(c->ca_file, "/etc/kiln/ca.pem");
    EXPECT_EQ(c->cert_file, "/etc/kiln/client.pem");
    EXPECT_EQ(c->key_file, "/etc/kiln/client.key");

    // One without the other, even without a URL.
    ::unsetenv("KILN_REMOTE_CACHE_KEY_FILE");
    const std::string error = config_error();
    EXPECT_NE(error.find("KILN_REMOTE_CACHE_CERT_FILE"), std::string::npos) << error;
    EXPECT_NE(error.find("KILN_REMOTE_CACHE_KEY_FILE"), std::string::npos) << error;
    ::unsetenv("KILN_REMOTE_CACHE");
    EXPECT_NE(config_error().find("KILN_REMOTE_CACHE_KEY_FILE"), std::string::npos);

    // Certificates for a plain redis:// URL: the user expects TLS it would not give.
    ::unsetenv("KILN_REMOTE_CACHE_CERT_FILE");
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1", 1);
    EXPECT_NE(config_error().find("rediss://"), std::string::npos);
}

// A FIFO, a directory or a device at the password file's path is refused at once: opening a FIFO
// for reading would otherwise wait for a writer, and every command would hang at start-up.
TEST_F(RemoteConfigTest, APasswordFileThatIsNoRegularFileIsRefusedWithoutWaiting) {
    kiln::test::TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1", 1);
    for (const std::string path :
         {(dir / "fifo").string(), dir.path().string(), std::string("/dev/null")}) {
        SCOPED_TRACE(path);
        ::setenv("KILN_REMOTE_CACHE_PASSWORD_FILE", path.c_str(), 1);
        const auto start = std::chrono::steady_clock::now();
        const std::string error = config_error();
        EXPECT_NE(error.find("is not a regular file"), std::string::npos) << error;
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    }
}

TEST_F(RemoteConfigTest, DisabledCacheMeansNoRemoteEither) {
    kiln::test::TempDir dir;
    ::setenv("KILN_CACHE_DIR", dir.path().c_str(), 1);
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1:1", 1);
    ::setenv("KILN_CACHE_DISABLE", "1", 1);
    kiln::cache::Store store(kiln::cache::Config::from_environment());
    kiln::cache::Entry entry;
    entry.key = kiln::cache::KeyBuilder().add("k", "v").finish();
    entry.payload = "cubin";
    EXPECT_FALSE(store.store(entry));
    EXPECT_FALSE(store.load(entry.key));
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.misses + stats.errors + stats.skipped, 0u);
}

TEST_F(RemoteConfigTest, RemoteOnlyNeedsNoHomeDirectory) {
    ::setenv("KILN_REMOTE_CACHE", "redis://127.0.0.1:1", 1);
    ::setenv("KILN_REMOTE_CACHE_MODE", "remote-only", 1);
    ::setenv("HOME", "", 1);
    auto config = kiln::cache::Config::from_environment();
    ASSERT_TRUE(config.remote);
    EXPECT_FALSE(config.disabled);
}
