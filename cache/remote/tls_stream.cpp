#include "tls_stream.hpp"

#include "kiln/error.hpp"

#include "setting_file.hpp"

#include "crypto_library.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

namespace kiln::cache::detail {

namespace {

constexpr const char* kCaVariable = "KILN_REMOTE_CACHE_CA_FILE";
constexpr const char* kCertVariable = "KILN_REMOTE_CACHE_CERT_FILE";
constexpr const char* kKeyVariable = "KILN_REMOTE_CACHE_KEY_FILE";
/// A CA bundle (the system's is about 200 KiB), a certificate chain or a key, at most.
constexpr std::uint64_t kMaxPemFile = std::uint64_t{16} << 20;

struct BioFree {
    void operator()(BIO* bio) const noexcept { openssl().BIO_free(bio); }
};
struct X509Free {
    void operator()(X509* cert) const noexcept { openssl().X509_free(cert); }
};
struct KeyFree {
    void operator()(EVP_PKEY* key) const noexcept { openssl().EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, KeyFree>;

// OpenSSL's reason for its oldest queued error (or @p otherwise), and the queue emptied: it is
// per thread, and a stale entry would be blamed on the next caller.
std::string openssl_reason(const char* otherwise) {
    const unsigned long code = openssl().ERR_peek_error();
    std::string reason;
    if (code != 0) {
        if (const char* text = openssl().ERR_reason_error_string(code)) {
            reason = text;
        } else {
            char buffer[256];
            openssl().ERR_error_string_n(code, buffer, sizeof buffer);
            reason = buffer;
        }
    }
    openssl().ERR_clear_error();
    return reason.empty() ? otherwise : reason;
}

// A PEM password callback that has none: an encrypted key fails to load instead of OpenSSL
// asking for its pass phrase on the terminal.
int no_password(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*data*/) {
    return 0;
}

Bio memory_bio(const std::string& bytes) {
    return Bio(openssl().BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

// The BIO between OpenSSL and the socket: send(MSG_NOSIGNAL) and recv on the descriptor kept as
// its data; a socket that would block sets the retry flags, which SSL_get_error turns into
// WANT_READ / WANT_WRITE.
int socket_of(BIO* bio) {
    return static_cast<int>(reinterpret_cast<std::intptr_t>(openssl().BIO_get_data(bio)));
}

int bio_write(BIO* bio, const char* data, int size) {
    openssl().BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
    const ssize_t n = ::send(socket_of(bio), data, static_cast<std::size_t>(size), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        openssl().BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
    return -1;
}

int bio_read(BIO* bio, char* data, int size) {
    openssl().BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
    const ssize_t n = ::recv(socket_of(bio), data, static_cast<std::size_t>(size), 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        openssl().BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY);
    return -1;
}

long bio_ctrl(BIO* /*bio*/, int command, long /*number*/, void* /*pointer*/) {
    return command == BIO_CTRL_FLUSH ? 1 : 0; // nothing is buffered here
}

// One method for the process, made on first use and kept (OpenSSL keeps its own the same way).
const BIO_METHOD* socket_method() {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = openssl().BIO_meth_new(openssl().BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                               "kiln socket");
        if (m && (openssl().BIO_meth_set_write(m, bio_write) != 1 ||
                  openssl().BIO_meth_set_read(m, bio_read) != 1 ||
                  openssl().BIO_meth_set_ctrl(m, bio_ctrl) != 1)) {
            openssl().BIO_meth_free(m);
            m = nullptr;
        }
        return m;
    }();
    return method;
}

void load_ca_file(SSL_CTX* ctx, const std::string& path) {
    const std::string pem = read_setting_file(kCaVariable, path, "PEM certificates", kMaxPemFile);
    Bio bio = memory_bio(pem);
    X509_STORE* store = openssl().SSL_CTX_get_cert_store(ctx);
    int count = 0;
    while (bio) {
        Cert cert(openssl().PEM_read_bio_X509(bio.get(), nullptr, no_password, nullptr));
        if (!cert) break;
        if (openssl().X509_STORE_add_cert(store, cert.get()) != 1)
            throw ConfigError(std::string(kCaVariable) + "='" + path +
                              "': a certificate cannot be used (" + openssl_reason("?") + ")");
        ++count;
    }
    openssl().ERR_clear_error(); // the end of the file reads as an error
    if (count == 0)
        throw ConfigError(std::string(kCaVariable) + "='" + path +
                          "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
}

void load_client_certificate(SSL_CTX* ctx, const std::string& cert_path,
                             const std::string& key_path) {
    const std::string named_cert = std::string(kCertVariable) + "='" + cert_path + "'";
    const std::string named_key = std::string(kKeyVariable) + "='" + key_path + "'";
    const std::string pem =
        read_setting_file(kCertVariable, cert_path, "a PEM certificate", kMaxPemFile);
    Bio bio = memory_bio(pem);
    Cert leaf(bio ? openssl().PEM_read_bio_X509(bio.get(), nullptr, no_password, nullptr)
                  : nullptr);
    if (!leaf || openssl().SSL_CTX_use_certificate(ctx, leaf.get()) != 1)
        throw ConfigError(named_cert + " holds no usable PEM certificate (" +
                          openssl_reason("none found") + ")");
    // What follows the certificate is its chain, sent with it.
    while (Cert link{openssl().PEM_read_bio_X509(bio.get(), nullptr, no_password, nullptr)}) {
        if (openssl().SSL_CTX_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 1, link.get()) != 1)
            throw ConfigError(named_cert + ": a chain certificate cannot be used (" +
                              openssl_reason("?") + ")");
    }
    openssl().ERR_clear_error();

    std::string key_pem = read_setting_file(kKeyVariable, key_path, "a PEM private key",
                                            kMaxPemFile, /*secret=*/true);
    Bio key_bio = memory_bio(key_pem);
    PrivateKey key(
        key_bio ? openssl().PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_password, nullptr)
                : nullptr);
    openssl().OPENSSL_cleanse(key_pem.data(), key_pem.size());
    if (!key)
        throw ConfigError(named_key + " holds no usable unencrypted PEM private key (" +
                          openssl_reason("none found") + ")");
    // OpenSSL checks the pair as it takes the key.
    if (openssl().SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
        openssl().SSL_CTX_check_private_key(ctx) != 1)
        throw ConfigError(named_key + " is not the key of " + named_cert + " (" +
                          openssl_reason("they do not match") + ")");
}

// What a TLS step that returned @p result (with errno @p saved_errno) means.
IoStep step_of(SSL* ssl, int result, int saved_errno) {
    IoStep step;
    if (result > 0) {
        step.bytes = static_cast<std::size_t>(result);
        return step;
    }
    switch (openssl().SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
        step.status = IoStep::Status::wait;
        step.wait = IoWait::read;
        return step;
    case SSL_ERROR_WANT_WRITE:
        step.status = IoStep::Status::wait;
        step.wait = IoWait::write;
        return step;
    case SSL_ERROR_ZERO_RETURN:
        openssl().ERR_clear_error();
        step.status = IoStep::Status::closed;
        return step;
    case SSL_ERROR_SYSCALL:
        if (openssl().ERR_peek_error() == 0 && saved_errno == 0) {
            step.status = IoStep::Status::closed;
            return step;
        }
        step.status = IoStep::Status::failed;
        step.message = "TLS: " + (saved_errno != 0 ? std::string(std::strerror(saved_errno))
                                                   : openssl_reason("a system call failed"));
        openssl().ERR_clear_error();
        return step;
    default:
        break;
    }
    const long verify = openssl().SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
        openssl().ERR_clear_error();
        step.status = IoStep::Status::refused;
        step.message = std::string("TLS: the server's certificate failed verification (") +
                       openssl().X509_verify_cert_error_string(verify) + ")";
        return step;
    }
    const unsigned long code = openssl().ERR_peek_error();
    const int reason = ERR_GET_REASON(code);
    std::string why = openssl_reason("an unknown TLS error");
    // An alert from the server: it refused the connection, most often this client's certificate
    // (missing, unknown to it, expired).
    if (ERR_GET_LIB(code) == ERR_LIB_SSL && reason >= SSL_AD_REASON_OFFSET) {
        step.status = IoStep::Status::refused;
        step.message = "TLS: the server refused the connection (" + why + ")";
        if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
            reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE)
            step.message += "; a server that asks for a client certificate needs " +
                            std::string(kCertVariable) + " and " + kKeyVariable;
        return step;
    }
    step.status = IoStep::Status::failed;
    step.message = "TLS: " + why;
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG)
        step.message += " (does the server speak TLS on this port?)";
    return step;
}

} // namespace

void TlsContext::Free::operator()(ssl_ctx_st* ctx) const noexcept {
    openssl().SSL_CTX_free(ctx);
}

TlsContext::TlsContext(const RemoteConfig& config) {
    openssl().ERR_clear_error();
    m_ctx.reset(openssl().SSL_CTX_new(openssl().TLS_client_method()));
    if (!m_ctx) throw Error("TLS: cannot make a context (" + openssl_reason("?") + ")");
    SSL_CTX* ctx = m_ctx.get();
    openssl().SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
    openssl().SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    // A write that would block is called again with the same bytes, possibly from another
    // buffer; RESP's framing notices a reply cut short, so an EOF without close_notify is a close.
    openssl().SSL_CTX_ctrl(ctx, SSL_CTRL_MODE,
                           SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                           nullptr);
    openssl().SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (config.ca_file.empty()) {
        if (openssl().SSL_CTX_set_default_verify_paths(ctx) != 1)
            throw ConfigError("TLS: the system's certificate store cannot be read (" +
                              openssl_reason("?") + "): set " + kCaVariable);
    } else {
        load_ca_file(ctx, config.ca_file);
    }
    if (!config.cert_file.empty() || !config.key_file.empty()) {
        if (config.cert_file.empty() || config.key_file.empty())
            throw ConfigError(std::string("a client certificate needs both ") + kCertVariable +
                              " and " + kKeyVariable);
        load_client_certificate(ctx, config.cert_file, config.key_file);
    }
}

TlsContext::~TlsContext() = default;

void TlsStream::Free::operator()(ssl_st* ssl) const noexcept {
    openssl().SSL_free(ssl); // no close_notify: the socket closes next, and Redis needs none
}

TlsStream TlsStream::open(const TlsContext& context, int fd, const std::string& host,
                          std::string& error) {
    openssl().ERR_clear_error();
    TlsStream stream;
    stream.m_ssl.reset(openssl().SSL_new(context.m_ctx.get()));
    const BIO_METHOD* method = socket_method();
    BIO* bio = stream.m_ssl && method ? openssl().BIO_new(method) : nullptr;
    if (!bio) {
        error = "TLS: cannot start a session (" + openssl_reason("out of memory") + ")";
        return {};
    }
    // The descriptor rides in the data pointer, which is never dereferenced.
    openssl().BIO_set_data(bio,
                           reinterpret_cast<void*>( // NOLINT(performance-no-int-to-ptr): see above
                               static_cast<std::intptr_t>(fd)));
    openssl().BIO_set_init(bio, 1);
    SSL* ssl = stream.m_ssl.get();
    openssl().SSL_set_bio(ssl, bio, bio); // the session owns it now
    unsigned char address[16];
    const bool numeric = ::inet_pton(AF_INET, host.c_str(), address) == 1 ||
                         ::inet_pton(AF_INET6, host.c_str(), address) == 1;
    // A numeric address is checked against the certificate's IP names (SNI takes host names
    // only); a name against its DNS names, and sent as SNI for servers with several.
    const bool named =
        numeric ? openssl().X509_VERIFY_PARAM_set1_ip_asc(openssl().SSL_get0_param(ssl),
                                                          host.c_str()) == 1
                : openssl().SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                                     const_cast<char*>(host.c_str())) == 1 &&
                      openssl().SSL_set1_host(ssl, host.c_str()) == 1;
    if (!named) {
        error = "TLS: cannot check the server's name " + host + " (" + openssl_reason("?") + ")";
        return {};
    }
    openssl().SSL_set_connect_state(ssl);
    return stream;
}

IoStep TlsStream::handshake() {
    openssl().ERR_clear_error();
    errno = 0;
    const int result = openssl().SSL_do_handshake(m_ssl.get());
    const int saved_errno = errno;
    IoStep step = step_of(m_ssl.get(), result, saved_errno);
    step.bytes = 0;
    return step;
}

IoStep TlsStream::read(char* buffer, std::size_t size) {
    openssl().ERR_clear_error();
    errno = 0;
    const int result = openssl().SSL_read(m_ssl.get(), buffer,
                                          static_cast<int>(std::min<std::size_t>(size, INT_MAX)));
    return step_of(m_ssl.get(), result, errno);
}

IoStep TlsStream::write(const char* data, std::size_t size) {
    openssl().ERR_clear_error();
    errno = 0;
    const int result = openssl().SSL_write(m_ssl.get(), data,
                                           static_cast<int>(std::min<std::size_t>(size, INT_MAX)));
    IoStep step = step_of(m_ssl.get(), result, errno);
    if (step.status == IoStep::Status::failed || step.status == IoStep::Status::closed) {
        // With TLS 1.3 a server checks the client's certificate after the handshake: one that
        // refuses it sends an alert and closes, and the first request meets the closed socket.
        // The alert, still waiting to be read, says why.
        char scratch[512];
        openssl().ERR_clear_error();
        errno = 0;
        const int got = openssl().SSL_read(m_ssl.get(), scratch, sizeof scratch);
        IoStep why = step_of(m_ssl.get(), got, errno);
        if (why.status == IoStep::Status::refused) return why;
        openssl().ERR_clear_error();
    }
    return step;
}

} // namespace kiln::cache::detail
