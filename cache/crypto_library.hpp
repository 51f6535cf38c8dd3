#pragma once
// OpenSSL 3 (libcrypto, libssl) and libsodium, opened at run time on first use, as NVRTC is
// (runtime/compile/nvrtc_library.cpp). Only signing, verifying with trusted keys, key files and
// rediss:// need them; linked at build time, the loader would resolve their symbols (both are
// built with BIND_NOW) before main() in every process: about half of what a `kiln help` costs
// (bench/cli_startup.sh).
//
// The tables hold the libraries' own functions, typed by their headers' declarations. OpenSSL's
// function-like macros (SSL_CTX_set_mode, BIO_set_retry_read, ...) name functions the library
// does not link; callers use the function they expand to through the table. Each library is
// looked up by its SONAME (LD_LIBRARY_PATH and the loader's cache), then at the path the build
// found it, and kept open for the life of the process.

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#define KILN_LIBCRYPTO_FUNCTIONS(X)                                                                \
    X(BIO_clear_flags)                                                                             \
    X(BIO_ctrl)                                                                                    \
    X(BIO_free)                                                                                    \
    X(BIO_get_data)                                                                                \
    X(BIO_get_new_index)                                                                           \
    X(BIO_meth_free)                                                                               \
    X(BIO_meth_new)                                                                                \
    X(BIO_meth_set_ctrl)                                                                           \
    X(BIO_meth_set_read)                                                                           \
    X(BIO_meth_set_write)                                                                          \
    X(BIO_new)                                                                                     \
    X(BIO_new_mem_buf)                                                                             \
    X(BIO_s_mem)                                                                                   \
    X(BIO_set_data)                                                                                \
    X(BIO_set_flags)                                                                               \
    X(BIO_set_init)                                                                                \
    X(ERR_clear_error)                                                                             \
    X(ERR_error_string_n)                                                                          \
    X(ERR_peek_error)                                                                              \
    X(ERR_reason_error_string)                                                                     \
    X(EVP_DecodeBlock)                                                                             \
    X(EVP_DigestFinal_ex)                                                                          \
    X(EVP_DigestInit_ex)                                                                           \
    X(EVP_DigestUpdate)                                                                            \
    X(EVP_EncodeBlock)                                                                             \
    X(EVP_MD_CTX_free)                                                                             \
    X(EVP_MD_CTX_new)                                                                              \
    X(EVP_MD_fetch)                                                                                \
    X(EVP_PKEY_free)                                                                               \
    X(EVP_PKEY_get_base_id)                                                                        \
    X(EVP_PKEY_get_raw_private_key)                                                                \
    X(EVP_PKEY_get_raw_public_key)                                                                 \
    X(EVP_PKEY_new_raw_private_key)                                                                \
    X(OPENSSL_cleanse)                                                                             \
    X(PEM_read_bio_PrivateKey)                                                                     \
    X(PEM_read_bio_X509)                                                                           \
    X(PEM_write_bio_PrivateKey)                                                                    \
    X(X509_STORE_add_cert)                                                                         \
    X(X509_VERIFY_PARAM_set1_ip_asc)                                                               \
    X(X509_free)                                                                                   \
    X(X509_verify_cert_error_string)

#define KILN_LIBSSL_FUNCTIONS(X)                                                                   \
    X(SSL_CTX_check_private_key)                                                                   \
    X(SSL_CTX_ctrl)                                                                                \
    X(SSL_CTX_free)                                                                                \
    X(SSL_CTX_get_cert_store)                                                                      \
    X(SSL_CTX_new)                                                                                 \
    X(SSL_CTX_set_default_verify_paths)                                                            \
    X(SSL_CTX_set_options)                                                                         \
    X(SSL_CTX_set_verify)                                                                          \
    X(SSL_CTX_use_PrivateKey)                                                                      \
    X(SSL_CTX_use_certificate)                                                                     \
    X(SSL_ctrl)                                                                                    \
    X(SSL_do_handshake)                                                                            \
    X(SSL_free)                                                                                    \
    X(SSL_get0_param)                                                                              \
    X(SSL_get_error)                                                                               \
    X(SSL_get_verify_result)                                                                       \
    X(SSL_new)                                                                                     \
    X(SSL_read)                                                                                    \
    X(SSL_set1_host)                                                                               \
    X(SSL_set_bio)                                                                                 \
    X(SSL_set_connect_state)                                                                       \
    X(SSL_write)                                                                                   \
    X(TLS_client_method)

#define KILN_SODIUM_FUNCTIONS(X)                                                                   \
    X(crypto_sign_detached)                                                                        \
    X(crypto_sign_ed25519_sk_to_seed)                                                              \
    X(crypto_sign_seed_keypair)                                                                    \
    X(crypto_sign_verify_detached)                                                                 \
    X(randombytes_buf)                                                                             \
    X(sodium_init)                                                                                 \
    X(sodium_memzero)

namespace kiln::cache::detail {

// A member declares a name: it cannot be parenthesised.
#define KILN_CRYPTO_MEMBER(name)                                                                   \
    decltype(&::name) name = nullptr; // NOLINT(bugprone-macro-parentheses)

/// OpenSSL's libcrypto and libssl functions Kiln calls.
struct OpenSsl {
    KILN_LIBCRYPTO_FUNCTIONS(KILN_CRYPTO_MEMBER)
    KILN_LIBSSL_FUNCTIONS(KILN_CRYPTO_MEMBER)
};

/// libsodium's functions Kiln calls; sodium_init() has run.
struct Sodium {
    KILN_SODIUM_FUNCTIONS(KILN_CRYPTO_MEMBER)
};

#undef KILN_CRYPTO_MEMBER

/// OpenSSL, opened and resolved on the first call (thread-safe).
/// @throws Error naming the library and why it could not be opened or lacks a function.
const OpenSsl& openssl();

/// libsodium, opened, resolved and initialised on the first call (thread-safe). @throws Error.
const Sodium& sodium();

} // namespace kiln::cache::detail
