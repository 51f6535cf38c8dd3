#include "test_certs.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>

#include <stdexcept>

namespace kiln::test {

namespace {

struct KeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct CertFree {
    void operator()(X509* cert) const noexcept { X509_free(cert); }
};
struct BioFree {
    void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;
using Bio = std::unique_ptr<BIO, BioFree>;

void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("test certificates: ") + what + " failed");
}

Key new_key() {
    Key key(EVP_EC_gen("P-256"));
    check(static_cast<bool>(key), "EVP_EC_gen");
    return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str());
    check(extension != nullptr, "X509V3_EXT_nconf_nid");
    const bool added = X509_add_ext(cert, extension, -1) == 1;
    X509_EXTENSION_free(extension);
    check(added, "X509_add_ext");
}

// An unsigned certificate for @p key named @p common_name, issued by @p issuer (itself when
// null).
Cert new_cert(EVP_PKEY* key, const std::string& common_name, X509* issuer, long serial) {
    Cert cert(X509_new());
    check(static_cast<bool>(cert), "X509_new");
    X509* x = cert.get();
    check(X509_set_version(x, 2) == 1, "X509_set_version");
    check(ASN1_INTEGER_set(X509_get_serialNumber(x), serial) == 1, "serial");
    check(X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nullptr, "notBefore");
    check(X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400) != nullptr, "notAfter");
    check(X509_set_pubkey(x, key) == 1, "X509_set_pubkey");
    X509_NAME* name = X509_get_subject_name(x);
    check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                     reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                     -1, -1, 0) == 1,
          "subject");
    check(X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x)) == 1, "issuer");
    return cert;
}

void sign(X509* cert, EVP_PKEY* key) {
    check(X509_sign(cert, key, EVP_sha256()) > 0, "X509_sign");
}

void write_pem(const std::filesystem::path& path, X509* cert, EVP_PKEY* key) {
    Bio bio(BIO_new_file(path.c_str(), "w"));
    check(static_cast<bool>(bio), "BIO_new_file");
    if (cert) check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
    if (key) {
        ::chmod(path.c_str(), 0600);
        check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
              "PEM_write_bio_PrivateKey");
    }
}

} // namespace

struct TestCa::State {
    Key key;
    Cert cert;
    mutable long serial = 2;
};

TestCa::TestCa(const std::filesystem::path& dir, const std::string& name, const std::string& stem)
    : m_dir(dir)
    , m_state(std::make_unique<State>()) {
    m_state->key = new_key();
    m_state->cert = new_cert(m_state->key.get(), name, nullptr, 1);
    X509* x = m_state->cert.get();
    add_extension(x, x, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_extension(x, x, NID_subject_key_identifier, "hash");
    sign(x, m_state->key.get());
    m_files.cert = dir / (stem + ".crt");
    m_files.key = dir / (stem + ".key");
    write_pem(m_files.cert, x, nullptr);
    write_pem(m_files.key, nullptr, m_state->key.get());
}

TestCa::~TestCa() = default;

CertFiles TestCa::issue(const std::string& stem, const std::string& alt_names) const {
    Key key = new_key();
    Cert cert = new_cert(key.get(), stem, m_state->cert.get(), m_state->serial++);
    X509* x = cert.get();
    X509* ca = m_state->cert.get();
    add_extension(x, ca, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(x, ca, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    add_extension(x, ca, NID_ext_key_usage, "serverAuth,clientAuth");
    add_extension(x, ca, NID_subject_alt_name, alt_names);
    add_extension(x, ca, NID_authority_key_identifier, "keyid");
    sign(x, m_state->key.get());
    CertFiles files{m_dir / (stem + ".crt"), m_dir / (stem + ".key")};
    write_pem(files.cert, x, nullptr);
    write_pem(files.key, nullptr, key.get());
    return files;
}

} // namespace kiln::test
