#pragma once
// A throwaway certificate authority for TLS tests, made with OpenSSL's library (no `openssl`
// command needed): a CA and the certificates it signs, as PEM files in a directory, keys mode
// 0600. Keys are P-256, quick to make; certificates are valid from an hour ago for a month.
//
//   kiln::test::TestCa ca(dir.path());
//   auto server = ca.issue("server", "IP:127.0.0.1");  // server.crt, server.key
//   // redis-server --tls-cert-file server.cert --tls-key-file server.key
//   //              --tls-ca-cert-file ca.cert()

#include <filesystem>
#include <memory>
#include <string>

namespace kiln::test {

/// A certificate and its private key, as PEM files.
struct CertFiles {
    std::filesystem::path cert;
    std::filesystem::path key;
};

class TestCa {
  public:
    /// A new CA named @p name, written to @p dir (`<stem>.crt`, `<stem>.key`).
    /// @throws std::runtime_error when OpenSSL fails.
    explicit TestCa(const std::filesystem::path& dir, const std::string& name = "Kiln test CA",
                    const std::string& stem = "ca");
    ~TestCa();
    TestCa(const TestCa&) = delete;
    TestCa& operator=(const TestCa&) = delete;

    /// The CA's own certificate: what clients and servers verify the others against.
    const std::filesystem::path& cert() const { return m_files.cert; }

    /// A certificate signed by this CA for server and client use, with @p alt_names as its
    /// subjectAltName (`"IP:127.0.0.1"`, `"DNS:localhost,IP:::1"`), written beside the CA's as
    /// `<stem>.crt` and `<stem>.key`.
    /// @throws std::runtime_error when OpenSSL fails.
    CertFiles issue(const std::string& stem, const std::string& alt_names) const;

  private:
    struct State;
    std::filesystem::path m_dir;
    CertFiles m_files;
    std::unique_ptr<State> m_state;
};

} // namespace kiln::test
