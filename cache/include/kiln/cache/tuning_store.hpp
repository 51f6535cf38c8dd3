#pragma once
/// @file
/// The launch tuner's choices on disk: one small file per key (a kernel, a shape class and a
/// device, which the tuner hashes into the key), `<dir>/<ab>/<key>.tune` beside the entries. Bytes
/// in, bytes out: what a choice means is the tuner's business; this layer publishes atomically
/// and trusts nothing it reads.

#include "kiln/cache/config.hpp"
#include "kiln/cache/key.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// Why TuningStore::load() found nothing usable.
enum class TuningMiss {
    none,   ///< a record was found and verified
    absent, ///< no file (or no usable cache directory, or the cache is disabled)
    /// a link, a non-regular file, a file another user could have planted, or (with trusted
    /// keys) a shared directory's record that no trusted key signed
    untrusted,
    damaged, ///< wrong size, magic, version, key or checksum
};

/// Stores tuning records in the cache directory of a Config. Never throws for a cache failure: a
/// directory that cannot be used, or a file that does not verify, is a miss. Thread-safe (it
/// holds no state but its configuration).
class TuningStore {
  public:
    /// The largest payload a record may carry.
    static constexpr std::size_t kMaxPayload = 1024;

    /// Records in the cache directory of @p config (disabled: none; read-only: read, never write).
    /// @param config the cache configuration, as Store uses it.
    explicit TuningStore(Config config);

    /// The payload stored under @p key, verified; nullopt otherwise, with why in @p why (when
    /// given). The file is opened without following links and must be a regular file this user
    /// trusts (the cache directory's rules), at most a record's size, with the right magic,
    /// version, key and checksum.
    /// @param key the record's key.
    /// @param why where to say why nothing came back; may be null.
    /// @return the payload, or nullopt.
    std::optional<std::string> load(const Key& key, TuningMiss* why = nullptr) const;

    /// Publish @p payload under @p key: a fresh temporary (O_CREAT|O_EXCL|O_NOFOLLOW, an
    /// unpredictable name, the cache's file mode) renamed over the record's name.
    /// @param key the record's key.
    /// @param payload at most kMaxPayload bytes.
    /// @return false when it could not (disabled or read-only cache, unusable directory, payload
    /// too large, a write error).
    bool store(const Key& key, std::string_view payload) const;

    /// Where the record of @p key lives, whether or not it exists.
    /// @param key the record's key.
    /// @return `<dir>/<ab>/<key>.tune`.
    std::filesystem::path path(const Key& key) const;

    /// The configuration in use.
    /// @return the configuration in use.
    const Config& config() const noexcept { return m_config; }

  private:
    Config m_config;
};

/// The bytes of a record (the format is documented in tuning_store.cpp); for tests and tools.
/// @param key the record's key.
/// @param payload the payload, at most TuningStore::kMaxPayload bytes.
/// @param signing_key the writer's signing key, or nullptr: unsigned.
/// @return the encoded record.
std::string encode_tuning_record(const Key& key, std::string_view payload,
                                 const SigningKey* signing_key = nullptr);

/// The payload of a record, when @p bytes is one for @p key that verifies.
/// @param bytes the encoded record.
/// @param key the key the record must carry.
/// @return the payload, or nullopt.
std::optional<std::string> decode_tuning_record(std::string_view bytes, const Key& key);

} // namespace kiln::cache
