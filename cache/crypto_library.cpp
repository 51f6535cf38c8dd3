#include "crypto_library.hpp"

#include "shared_library.hpp"

#include "kiln/error.hpp"

namespace kiln::cache::detail {

namespace {

using kiln::detail::SharedLibrary;

constexpr const char* kOpenSslHint =
    "install OpenSSL 3 (Debian and Ubuntu: libssl3), or put its folder on LD_LIBRARY_PATH";

template <typename Function>
void resolve(const SharedLibrary& library, const char* name, Function& function) {
    function = reinterpret_cast<Function>(library.symbol(name));
}

} // namespace

const OpenSsl& openssl() {
    static const OpenSsl table = [] {
        // libssl needs libcrypto: opening it first names the one that is missing.
        static const SharedLibrary crypto(KILN_LIBCRYPTO_SONAME, KILN_LIBCRYPTO_PATH, kOpenSslHint);
        static const SharedLibrary ssl(KILN_LIBSSL_SONAME, KILN_LIBSSL_PATH, kOpenSslHint);
        OpenSsl functions;
#define KILN_RESOLVE_CRYPTO(name) resolve(crypto, #name, functions.name);
#define KILN_RESOLVE_SSL(name) resolve(ssl, #name, functions.name);
        KILN_LIBCRYPTO_FUNCTIONS(KILN_RESOLVE_CRYPTO)
        KILN_LIBSSL_FUNCTIONS(KILN_RESOLVE_SSL)
#undef KILN_RESOLVE_CRYPTO
#undef KILN_RESOLVE_SSL
        return functions;
    }();
    return table;
}

const Sodium& sodium() {
    static const Sodium table = [] {
        static const SharedLibrary library(
            KILN_SODIUM_SONAME, KILN_SODIUM_PATH,
            "install libsodium (Debian and Ubuntu: libsodium23), or put its folder on "
            "LD_LIBRARY_PATH");
        Sodium functions;
#define KILN_RESOLVE_SODIUM(name) resolve(library, #name, functions.name);
        KILN_SODIUM_FUNCTIONS(KILN_RESOLVE_SODIUM)
#undef KILN_RESOLVE_SODIUM
        // Idempotent and thread-safe; it picks the fastest implementations once.
        if (functions.sodium_init() < 0) throw Error("libsodium could not be initialised");
        return functions;
    }();
    return table;
}

} // namespace kiln::cache::detail
