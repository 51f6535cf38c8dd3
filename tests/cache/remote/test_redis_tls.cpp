// rediss://: the remote tier over TLS against a real redis-server listening with TLS on 127.0.0.1,
// with certificates this test makes (test_certs.hpp). The server's certificate is verified, its
// IP address must be in it, a client certificate goes where the server asks for one, and every
// failure is a miss that opens the breaker with a warning, within the usual deadlines. Skipped
// without redis-server, or with one built without TLS.

#include "remote_test_util.hpp"
#include "test_certs.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/error.hpp"
#include "kiln/log.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>

using namespace kiln::test;
using kiln::cache::RemoteConfig;
using kiln::cache::Store;
using Clock = std::chrono::steady_clock;

namespace {

// A CA and a server certificate for 127.0.0.1, in a directory of their own.
struct Pki {
    TempDir dir;
    TestCa ca{dir.path()};
    CertFiles server = ca.issue("server", "IP:127.0.0.1");

    RedisServer::Tls tls(bool auth_clients = false) const {
        return {server.cert, server.key, ca.cert(), auth_clients};
    }
};

// The store's configuration for @p server's TLS port, verified against @p ca. A failure keeps the
// breaker open for the rest of the test.
kiln::cache::Config tls_config(const std::filesystem::path& dir, const RedisServer& server,
                               const std::filesystem::path& ca) {
    kiln::cache::Config config = remote_config(dir, server);
    RemoteConfig remote = RemoteConfig::parse_url(server.tls_url(), "test");
    remote.ca_file = ca.string();
    remote.connect_timeout = config.remote->connect_timeout;
    remote.op_timeout = config.remote->op_timeout;
    remote.retry_interval = std::chrono::seconds(60);
    config.remote = remote;
    return config;
}

// The log's lines while it lives.
class LogCapture {
  public:
    LogCapture()
        : m_sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(m_log)) {
        kiln::logger().sinks().push_back(m_sink);
    }
    ~LogCapture() {
        auto& sinks = kiln::logger().sinks();
        sinks.erase(std::remove(sinks.begin(), sinks.end(), m_sink), sinks.end());
    }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;
    std::string text() const { return m_log.str(); }

  private:
    std::ostringstream m_log;
    std::shared_ptr<spdlog::sinks::ostream_sink_mt> m_sink;
};

// A lookup that fails: a miss, one error, and the breaker open (the next lookup is skipped).
void expect_refused(Store& store, const kiln::cache::Key& key) {
    EXPECT_FALSE(store.load(key));
    EXPECT_FALSE(store.load(key));
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.errors, 1u);
    EXPECT_EQ(stats.skipped, 1u);
    EXPECT_EQ(stats.hits, 0u);
}

} // namespace

TEST(RedisTls, AnEntryPublishedThroughRedissIsAHitInAFreshStore) {
    Pki pki;
    auto server = RedisServer::start_tls_or_skip(pki.tls());
    if (!server) return;
    TempDir first, second;
    const auto entry = make_entry(key_of("over TLS"), 300000);
    {
        Store store(tls_config(first.path(), *server, pki.ca.cert()));
        store.store(entry);
        ASSERT_TRUE(store.flush_remote());
        EXPECT_EQ(store.remote_stats().stores, 1u);
    }
    // The plain port shows what went through the TLS one.
    EXPECT_EQ(server->call({"GET", redis_key(entry.key)}).text, kiln::cache::encode_entry(entry));
    Store store(tls_config(second.path(), *server, pki.ca.cert()));
    auto hit = store.load(entry.key);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->payload, entry.payload);
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.hits, 1u);
    EXPECT_EQ(stats.errors + stats.timeouts, 0u);
}

TEST(RedisTls, AServerCertificateFromAnotherCaIsRefusedAndOpensTheBreaker) {
    Pki pki;
    auto server = RedisServer::start_tls_or_skip(pki.tls());
    if (!server) return;
    TempDir other_dir, dir;
    TestCa other(other_dir.path(), "Another CA");
    LogCapture log;
    {
        Store store(tls_config(dir.path(), *server, other.cert()));
        expect_refused(store, key_of("a"));
    }
    const std::string text = log.text();
    EXPECT_NE(text.find("rediss://127.0.0.1:"), std::string::npos) << text;
    EXPECT_NE(text.find("certificate failed verification"), std::string::npos) << text;
}

TEST(RedisTls, ACertificateForAnotherAddressIsRefused) {
    Pki pki;
    const CertFiles elsewhere = pki.ca.issue("elsewhere", "IP:127.0.0.2,DNS:cache.example.com");
    RedisServer::Tls tls = pki.tls();
    tls.cert = elsewhere.cert;
    tls.key = elsewhere.key;
    auto server = RedisServer::start_tls_or_skip(tls);
    if (!server) return;
    TempDir dir;
    LogCapture log;
    {
        Store store(tls_config(dir.path(), *server, pki.ca.cert()));
        expect_refused(store, key_of("b"));
    }
    EXPECT_NE(log.text().find("IP address mismatch"), std::string::npos) << log.text();
}

TEST(RedisTls, AServerThatAsksForAClientCertificateGetsOneWhenConfigured) {
    Pki pki;
    auto server = RedisServer::start_tls_or_skip(pki.tls(/*auth_clients=*/true));
    if (!server) return;
    const CertFiles client = pki.ca.issue("client", "DNS:kiln-test-client");
    TempDir first, second;
    const auto entry = make_entry(key_of("client certificate"));
    {
        auto config = tls_config(first.path(), *server, pki.ca.cert());
        config.remote->cert_file = client.cert.string();
        config.remote->key_file = client.key.string();
        Store store(config);
        store.store(entry);
        ASSERT_TRUE(store.flush_remote());
        EXPECT_EQ(store.remote_stats().stores, 1u);
        EXPECT_TRUE(store.load(entry.key)); // locally
    }
    // Without one, the server refuses the connection: a miss, the breaker open, and a warning
    // that names the variables.
    LogCapture log;
    {
        Store store(tls_config(second.path(), *server, pki.ca.cert()));
        expect_refused(store, entry.key);
    }
    EXPECT_NE(log.text().find("KILN_REMOTE_CACHE_CERT_FILE"), std::string::npos) << log.text();
}

TEST(RedisTls, RedissAgainstAPlainPortFailsWithinTheDeadline) {
    Pki pki;
    auto server = RedisServer::start_tls_or_skip(pki.tls());
    if (!server) return;
    TempDir dir;
    auto config = tls_config(dir.path(), *server, pki.ca.cert());
    config.remote->port = server->port(); // the plain one
    config.remote->connect_timeout = std::chrono::milliseconds(200);
    config.remote->op_timeout = std::chrono::milliseconds(200);
    Store store(config);
    const auto start = Clock::now();
    EXPECT_FALSE(store.load(key_of("c")));
    // Generous: what matters is that it ends, about one deadline later.
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
    const auto stats = store.remote_stats();
    EXPECT_EQ(stats.errors + stats.timeouts, 1u);
    EXPECT_EQ(stats.hits, 0u);
}

TEST(RedisTls, TlsFilesThatCannotBeUsedAreConfigurationErrors) {
    Pki pki;
    TempDir dir;
    auto config = config_for(dir.path());
    config.remote = RemoteConfig::parse_url("rediss://127.0.0.1:1", "test");
    const auto error_of = [&](const kiln::cache::Config& c) -> std::string {
        try {
            Store store(c);
        } catch (const kiln::ConfigError& e) {
            return e.what();
        }
        return "";
    };
    // No certificate in the CA file.
    write_file(pki.dir / "empty.pem", "not a certificate\n");
    config.remote->ca_file = (pki.dir / "empty.pem").string();
    EXPECT_NE(error_of(config).find("KILN_REMOTE_CACHE_CA_FILE"), std::string::npos);
    // A FIFO is refused at once, not waited on.
    ASSERT_EQ(::mkfifo((pki.dir / "fifo").c_str(), 0600), 0);
    config.remote->ca_file = (pki.dir / "fifo").string();
    EXPECT_NE(error_of(config).find("is not a regular file"), std::string::npos);
    // A private key others may read.
    config.remote->ca_file = pki.ca.cert().string();
    config.remote->cert_file = pki.server.cert.string();
    config.remote->key_file = pki.server.key.string();
    ::chmod(pki.server.key.c_str(), 0644);
    EXPECT_NE(error_of(config).find("chmod 600"), std::string::npos);
    // A key that is not the certificate's.
    ::chmod(pki.server.key.c_str(), 0600);
    config.remote->key_file = pki.ca.issue("other", "IP:127.0.0.1").key.string();
    EXPECT_NE(error_of(config).find("is not the key of"), std::string::npos);
    // And the right pair makes a store (no connection is made until a lookup).
    config.remote->key_file = pki.server.key.string();
    EXPECT_EQ(error_of(config), "");
}
