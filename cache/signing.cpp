// Ed25519 keys (signing.hpp). Nothing cryptographic is written here: libsodium generates keys,
// signs and verifies (its verification is about twice as fast as OpenSSL 3's, which a reader pays
// per entry); OpenSSL's libcrypto hashes (SHA-256 with the CPU's SHA instructions) and reads and
// writes the private key as standard PEM (PKCS#8), which `openssl pkey` reads too. An Ed25519
// private key is its 32-byte seed in both libraries (RFC 8032).

#include "kiln/cache/signing.hpp"

#include "kiln/error.hpp"

#include "crypto_library.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

namespace kiln::cache {

namespace {

using detail::openssl;
using detail::sodium;

struct PkeyFree {
    void operator()(EVP_PKEY* key) const { openssl().EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct MdCtxFree {
    void operator()(EVP_MD_CTX* ctx) const { openssl().EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
struct BioFree {
    void operator()(BIO* bio) const { openssl().BIO_free(bio); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

constexpr std::string_view kKeyType = "kiln-ed25519";
constexpr std::size_t kMaxKeyFile = std::size_t{1} << 20;

// Fetched once: an implicit fetch per call (EVP_sha256()) costs a lookup in the provider tables.
const EVP_MD* sha256_md() {
    static EVP_MD* md = openssl().EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return md;
}

std::string hex(const std::uint8_t* bytes, std::size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[bytes[i] >> 4];
        out += digits[bytes[i] & 15];
    }
    return out;
}

std::string base64(const PublicKeyBytes& bytes) {
    unsigned char out[4 * ((sizeof bytes + 2) / 3) + 1];
    const int n = openssl().EVP_EncodeBlock(out, bytes.data(), static_cast<int>(bytes.size()));
    return std::string(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
}

bool unbase64(std::string_view text, PublicKeyBytes& bytes) {
    // 32 bytes are 44 characters with one '=' of padding.
    if (text.size() != 44 || text[43] != '=' || text[42] == '=') return false;
    unsigned char out[33];
    if (openssl().EVP_DecodeBlock(out, reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size())) != 33)
        return false;
    std::memcpy(bytes.data(), out, bytes.size());
    return true;
}

PublicKeyBytes raw_public(EVP_PKEY* key) {
    PublicKeyBytes bytes{};
    std::size_t size = bytes.size();
    if (openssl().EVP_PKEY_get_raw_public_key(key, bytes.data(), &size) != 1 ||
        size != bytes.size())
        throw Error("signing key: cannot read its public half");
    return bytes;
}

// A whole small file, opened without following a link at its own name; @p private_key also
// demands that no one but the owner may read it (as ssh does for its keys).
std::string read_key_file(const std::filesystem::path& path, bool private_key) {
    const int fd =
        ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (private_key ? O_NOFOLLOW : 0));
    if (fd < 0)
        throw ConfigError("cannot open key file " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    std::string text;
    const auto fail = [&](const std::string& why) {
        ::close(fd);
        throw ConfigError("key file " + path.string() + ": " + why);
    };
    if (::fstat(fd, &st) != 0) fail(std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail("not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > kMaxKeyFile) fail("over 1 MiB");
    if (private_key && st.st_uid != ::geteuid()) fail("not owned by you");
    if (private_key && (st.st_mode & 077)) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
        fail(std::string("others may read or write it (mode ") + mode + "); chmod 600 it");
    }
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(n < 0 ? std::strerror(errno) : "changed while read");
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return text;
}

// Create @p path with @p mode, never over an existing name or through a link.
void write_new_file(const std::filesystem::path& path, std::string_view text, mode_t mode) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) throw Error("cannot create " + path.string() + ": " + std::strerror(errno));
    bool ok = ::fchmod(fd, mode) == 0; // the umask must not widen or narrow what was asked
    for (std::size_t done = 0; ok && done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) done += static_cast<std::size_t>(n);
    }
    const int error = errno;
    ok = ::fsync(fd) == 0 && ok;
    ::close(fd);
    if (!ok) {
        ::unlink(path.c_str());
        throw Error("cannot write " + path.string() + ": " + std::strerror(error));
    }
}

// "kiln-ed25519 BASE64 comment" → key; false when the line is not one.
bool parse_key_line(std::string_view line, PublicKey& key) {
    const auto space = line.find_first_of(" \t");
    if (space == std::string_view::npos || line.substr(0, space) != kKeyType) return false;
    std::string_view rest = line.substr(space);
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    const auto end = rest.find_first_of(" \t");
    if (!unbase64(rest.substr(0, end), key.bytes)) return false;
    std::string_view comment = end == std::string_view::npos ? "" : rest.substr(end);
    comment.remove_prefix(std::min(comment.find_first_not_of(" \t"), comment.size()));
    while (!comment.empty() &&
           (comment.back() == ' ' || comment.back() == '\t' || comment.back() == '\r'))
        comment.remove_suffix(1);
    key.comment = std::string(comment);
    return true;
}

} // namespace

std::string format_public_key(const PublicKey& key) {
    std::string line = std::string(kKeyType) + " " + base64(key.bytes);
    if (!key.comment.empty()) line += " " + key.comment;
    return line;
}

std::string fingerprint(const PublicKeyBytes& key) {
    const Digest digest =
        sha256({std::string_view(reinterpret_cast<const char*>(key.data()), key.size())});
    return "ed25519:" + hex(digest.data(), 8);
}

Digest sha256(std::initializer_list<std::string_view> parts) {
    Digest digest{};
    MdCtx ctx(openssl().EVP_MD_CTX_new());
    unsigned size = 0;
    bool ok =
        ctx && sha256_md() && openssl().EVP_DigestInit_ex(ctx.get(), sha256_md(), nullptr) == 1;
    for (std::string_view part : parts)
        ok = ok && openssl().EVP_DigestUpdate(ctx.get(), part.data(), part.size()) == 1;
    ok = ok && openssl().EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) == 1 &&
         size == digest.size();
    if (!ok) throw Error("SHA-256 failed (OpenSSL)");
    return digest;
}

// ---- SigningKey ------------------------------------------------------------------------------

struct SigningKey::Impl {
    unsigned char secret[crypto_sign_SECRETKEYBYTES]; // libsodium's: seed and public key
    ~Impl() { sodium().sodium_memzero(secret, sizeof secret); }
    // The seed as an OpenSSL key, for writing it as PEM.
    Pkey as_pkey() const {
        unsigned char seed[crypto_sign_SEEDBYTES];
        sodium().crypto_sign_ed25519_sk_to_seed(seed, secret);
        Pkey key(
            openssl().EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed, sizeof seed));
        sodium().sodium_memzero(seed, sizeof seed);
        return key;
    }
};

namespace {

// A key from its 32-byte seed.
std::unique_ptr<SigningKey::Impl> from_seed(const unsigned char* seed, PublicKeyBytes& pub) {
    auto impl = std::make_unique<SigningKey::Impl>();
    if (sodium().crypto_sign_seed_keypair(pub.data(), impl->secret, seed) != 0)
        throw Error("cannot derive an Ed25519 key (libsodium)");
    return impl;
}

} // namespace

SigningKey::SigningKey(std::unique_ptr<Impl> impl, PublicKey key)
    : m_impl(std::move(impl))
    , m_public(std::move(key)) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

SigningKey SigningKey::generate(std::string comment) {
    unsigned char seed[crypto_sign_SEEDBYTES];
    sodium().randombytes_buf(seed, sizeof seed);
    PublicKey pub{{}, std::move(comment)};
    auto impl = from_seed(seed, pub.bytes);
    sodium().sodium_memzero(seed, sizeof seed);
    return SigningKey(std::move(impl), std::move(pub));
}

SigningKey SigningKey::load(const std::filesystem::path& path) {
    const std::string pem = read_key_file(path, true);
    Bio bio(openssl().BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Pkey key(bio ? openssl().PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                 : nullptr);
    unsigned char seed[crypto_sign_SEEDBYTES];
    std::size_t seed_size = sizeof seed;
    if (!key || openssl().EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_ED25519 ||
        openssl().EVP_PKEY_get_raw_private_key(key.get(), seed, &seed_size) != 1 ||
        seed_size != sizeof seed)
        throw ConfigError("key file " + path.string() +
                          ": not an Ed25519 private key (make one with `kiln key generate`)");
    PublicKey pub{{}, ""};
    auto impl = from_seed(seed, pub.bytes);
    sodium().sodium_memzero(seed, sizeof seed);
    if (pub.bytes != raw_public(key.get()))
        throw ConfigError("key file " + path.string() + ": its public half does not match");
    // The comment lives in NAME.pub; a missing or other .pub leaves it empty.
    try {
        PublicKey beside;
        const std::string line = read_key_file(path.string() + ".pub", false);
        if (parse_key_line(line.substr(0, line.find('\n')), beside) && beside.bytes == pub.bytes)
            pub.comment = beside.comment;
    } catch (const ConfigError&) {
    }
    return SigningKey(std::move(impl), std::move(pub));
}

void SigningKey::save(const std::filesystem::path& path) const {
    const std::filesystem::path pub_path = path.string() + ".pub";
    struct stat st {};
    for (const auto& name : {path, pub_path})
        if (::lstat(name.c_str(), &st) == 0) throw Error(name.string() + " already exists");
    Bio bio(openssl().BIO_new(openssl().BIO_s_mem()));
    const Pkey key = m_impl->as_pkey();
    if (!bio || !key ||
        openssl().PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                           nullptr) != 1)
        throw Error("cannot encode the private key (OpenSSL)");
    char* data = nullptr;
    const long size = openssl().BIO_ctrl(bio.get(), BIO_CTRL_INFO, 0, static_cast<void*>(&data));
    write_new_file(path, std::string_view(data, static_cast<std::size_t>(size)), 0600);
    try {
        write_new_file(pub_path, format_public_key(m_public) + "\n", 0644);
    } catch (...) {
        ::unlink(path.c_str());
        throw;
    }
}

SignatureBytes SigningKey::sign(std::string_view message) const {
    SignatureBytes signature{};
    if (sodium().crypto_sign_detached(signature.data(), nullptr,
                                      reinterpret_cast<const unsigned char*>(message.data()),
                                      message.size(), m_impl->secret) != 0)
        throw Error("Ed25519 signing failed (libsodium)");
    return signature;
}

// ---- TrustedKeys -----------------------------------------------------------------------------

struct TrustedKeys::Impl {
    std::vector<PublicKey> entries;
    std::map<PublicKeyBytes, std::size_t> by_bytes;
};

TrustedKeys::TrustedKeys()
    : m_impl(std::make_unique<Impl>()) {}
TrustedKeys::TrustedKeys(TrustedKeys&&) noexcept = default;
TrustedKeys& TrustedKeys::operator=(TrustedKeys&&) noexcept = default;
TrustedKeys::~TrustedKeys() = default;

TrustedKeys TrustedKeys::parse(std::string_view text, const std::string& origin) {
    TrustedKeys keys;
    std::size_t line_number = 0;
    while (!text.empty()) {
        ++line_number;
        const auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
            line.remove_suffix(1);
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos || line[first] == '#') continue;
        PublicKey key;
        if (!parse_key_line(line.substr(first), key))
            throw ConfigError(origin + ":" + std::to_string(line_number) +
                              ": not a public key line (`kiln-ed25519 <base64> [comment]`, as "
                              "`kiln key generate` writes in NAME.pub)");
        if (keys.m_impl->by_bytes.count(key.bytes)) continue;
        keys.m_impl->by_bytes.emplace(key.bytes, keys.m_impl->entries.size());
        keys.m_impl->entries.push_back(std::move(key));
    }
    return keys;
}

TrustedKeys TrustedKeys::load(const std::filesystem::path& path) {
    return parse(read_key_file(path, false), path.string());
}

const PublicKey* TrustedKeys::find(const PublicKeyBytes& bytes) const {
    const auto it = m_impl->by_bytes.find(bytes);
    return it == m_impl->by_bytes.end() ? nullptr : &m_impl->entries[it->second];
}

const PublicKey* TrustedKeys::verify(const PublicKeyBytes& signer, std::string_view message,
                                     const SignatureBytes& signature) const {
    const auto it = m_impl->by_bytes.find(signer);
    if (it == m_impl->by_bytes.end()) return nullptr;
    if (sodium().crypto_sign_verify_detached(signature.data(),
                                             reinterpret_cast<const unsigned char*>(message.data()),
                                             message.size(), signer.data()) != 0)
        return nullptr;
    return &m_impl->entries[it->second];
}

std::vector<PublicKey> TrustedKeys::keys() const {
    return m_impl->entries;
}

} // namespace kiln::cache
