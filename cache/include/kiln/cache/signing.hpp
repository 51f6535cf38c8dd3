#pragma once
/// @file
/// Ed25519 keys for signed cache entries (libsodium signs and verifies; OpenSSL 3 hashes and
/// reads and writes the PEM key files). A writer with a
/// SigningKey (`KILN_SIGNING_KEY_FILE`) signs what it publishes; a reader with TrustedKeys
/// (`KILN_TRUSTED_KEYS`, one public key per line, as ssh's `authorized_keys`) uses an entry from
/// anywhere but its own compiles only when one of those keys signed it. `kiln key generate NAME`
/// makes a pair: `NAME` (the private key, PEM, mode 0600) and `NAME.pub` (one line).

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache {

/// An Ed25519 public key's 32 bytes.
using PublicKeyBytes = std::array<std::uint8_t, 32>;
/// An Ed25519 signature's 64 bytes.
using SignatureBytes = std::array<std::uint8_t, 64>;
/// A SHA-256 digest.
using Digest = std::array<std::uint8_t, 32>;

/// A public key and the comment its line carries (who holds the private key).
struct PublicKey {
    PublicKeyBytes bytes{}; ///< the raw Ed25519 key
    std::string comment;    ///< e.g. "ci@build-farm"; may be empty
};

/// The line a public key file holds: `kiln-ed25519 <base64 of the 32 bytes> <comment>`.
/// @param key the key.
/// @return the line, without a newline.
std::string format_public_key(const PublicKey& key);
/// A short, stable name for a key in messages: `ed25519:` and the first 8 bytes of its SHA-256,
/// in hex.
/// @param key the key's bytes.
/// @return the fingerprint.
std::string fingerprint(const PublicKeyBytes& key);

/// SHA-256 of the concatenation of @p parts.
/// @param parts the byte ranges, in order.
/// @return the digest.
Digest sha256(std::initializer_list<std::string_view> parts);

/// A private Ed25519 key that signs.
class SigningKey {
  public:
    /// A new random key.
    /// @param comment the comment its public key line carries.
    /// @return the key.
    static SigningKey generate(std::string comment);
    /// Read a private key file: a regular file (links are not followed) that its owner alone may
    /// read, holding a PEM Ed25519 private key.
    /// @param path the file.
    /// @return the key; its comment is read from `path.pub` when that names the same key.
    /// @throws kiln::ConfigError naming the file and what is wrong with it.
    static SigningKey load(const std::filesystem::path& path);

    /// Write `path` (the private key, mode 0600) and `path.pub` (its public line); neither may
    /// exist yet, and neither is written through a link.
    /// @param path where the private key goes.
    /// @throws kiln::Error when a file exists or cannot be written (nothing is left behind).
    void save(const std::filesystem::path& path) const;

    /// The public half.
    /// @return the public key and its comment.
    const PublicKey& public_key() const noexcept { return m_public; }
    /// Sign @p message.
    /// @param message the bytes to sign.
    /// @return the signature.
    SignatureBytes sign(std::string_view message) const;

    /// Moves the key material; @p other is left empty.
    /// @param other the key to move from.
    SigningKey(SigningKey&& other) noexcept;
    /// Moves the key material; @p other is left empty.
    /// @param other the key to move from.
    /// @return this.
    SigningKey& operator=(SigningKey&& other) noexcept;
    /// Wipes the private key from memory.
    ~SigningKey();

    struct Impl; ///< the key material (signing.cpp)

  private:
    SigningKey(std::unique_ptr<Impl> impl, PublicKey key);
    std::unique_ptr<Impl> m_impl;
    PublicKey m_public;
};

/// The public keys a reader trusts.
class TrustedKeys {
  public:
    /// No key: nothing from elsewhere is trusted.
    TrustedKeys();
    /// Parse a keys file's text: one `kiln-ed25519 <base64> [comment]` per line; blank lines and
    /// lines starting with `#` are skipped.
    /// @param text the file's text.
    /// @param origin the file's name, for messages.
    /// @return the keys.
    /// @throws kiln::ConfigError naming @p origin and the line that does not parse.
    static TrustedKeys parse(std::string_view text, const std::string& origin);
    /// parse() of a file (a regular file of at most 1 MiB; links are followed, as for any
    /// configuration file the user names).
    /// @param path the file.
    /// @return the keys.
    /// @throws kiln::ConfigError when it cannot be read or does not parse.
    static TrustedKeys load(const std::filesystem::path& path);

    /// Whether @p signature over @p message was made by one of these keys, and by which.
    /// @param signer the key the signature names.
    /// @param message the signed bytes.
    /// @param signature the signature.
    /// @return the trusted key that signed, or nullptr.
    const PublicKey* verify(const PublicKeyBytes& signer, std::string_view message,
                            const SignatureBytes& signature) const;
    /// The trusted key with these bytes.
    /// @param bytes a public key.
    /// @return the key with its comment, or nullptr when it is not trusted.
    const PublicKey* find(const PublicKeyBytes& bytes) const;
    /// The keys.
    /// @return every key, in file order (a key given twice once).
    std::vector<PublicKey> keys() const;

    /// Moves the keys; @p other is left without any.
    /// @param other the keys to move from.
    TrustedKeys(TrustedKeys&& other) noexcept;
    /// Moves the keys; @p other is left without any.
    /// @param other the keys to move from.
    /// @return this.
    TrustedKeys& operator=(TrustedKeys&& other) noexcept;
    /// Frees the keys.
    ~TrustedKeys();

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln::cache
