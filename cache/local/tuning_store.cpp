#include "kiln/cache/tuning_store.hpp"

#include "bytes.hpp"
#include "seal.hpp"
#include "trust.hpp"

#include "atomic_file.hpp"
#include "cache_dir.hpp"
#include "fs.hpp"
#include "layout.hpp"

#include <xxhash.h>

#include <sys/stat.h>

#include <cerrno>

// A tuning record, as written and as read (every field is checked on read; anything else in the
// file is damage, and damage is a miss):
//
//   record  ::= magic version key payload hash seal
//   magic   ::= "KILNTUNE"                 8 bytes
//   version ::= u32                        kRecordVersion (2; version 1 had no seal)
//   key     ::= 16 bytes                   the record's own key: the file name is not trusted
//   payload ::= u32 length, length bytes   length <= TuningStore::kMaxPayload
//   hash    ::= u64                        XXH3-64 of every byte before it
//   seal    ::= 128 bytes                  provenance and signature (../seal.hpp)
//
// Integers are little-endian (bytes.hpp). The checksum catches damage, not malice: a planted file
// is refused by its owner and mode (the cache directory's rules), with trusted keys a record of a
// shared directory is used only when signed (../trust.hpp), and the tuner accepts only a choice
// it could have made itself, so even a well-formed forgery cannot change a result.

namespace kiln::cache {

namespace {

constexpr std::string_view kTuneMagic = "KILNTUNE";
constexpr std::uint32_t kRecordVersion = 2;
constexpr std::size_t kMaxRecordSize =
    8 + 4 + 16 + 4 + TuningStore::kMaxPayload + 8 + detail::kSealSize;

std::string record_name(const Key& key) {
    return key.hex() + std::string(detail::kTuneSuffix);
}

} // namespace

std::string encode_tuning_record(const Key& key, std::string_view payload,
                                 const SigningKey* signing_key) {
    std::string out;
    detail::ByteWriter w(out);
    w.raw(kTuneMagic);
    w.u32(kRecordVersion);
    w.raw(std::string_view(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()));
    w.string(payload);
    w.u64(XXH3_64bits(out.data(), out.size()));
    detail::append_seal(out, detail::SealDomain::tuning, Provenance::own_compile, signing_key);
    return out;
}

std::optional<std::string> decode_tuning_record(std::string_view bytes, const Key& key) {
    if (bytes.size() > kMaxRecordSize || bytes.size() < 8 + detail::kSealSize ||
        !detail::read_seal(bytes, detail::SealDomain::tuning))
        return std::nullopt;
    bytes.remove_suffix(detail::kSealSize);
    const std::string_view body = bytes.substr(0, bytes.size() - 8);
    detail::ByteReader r(bytes);
    if (r.raw(kTuneMagic.size()) != kTuneMagic || r.u32() != kRecordVersion) return std::nullopt;
    const std::string_view stored_key = r.raw(key.bytes.size());
    if (!r.ok() || stored_key != std::string_view(reinterpret_cast<const char*>(key.bytes.data()),
                                                  key.bytes.size()))
        return std::nullopt;
    const std::uint32_t length = r.u32();
    if (length > TuningStore::kMaxPayload) return std::nullopt;
    std::string payload(r.raw(length));
    const std::uint64_t hash = r.u64();
    if (!r.ok() || r.remaining() != 0 || hash != XXH3_64bits(body.data(), body.size()))
        return std::nullopt;
    return payload;
}

TuningStore::TuningStore(Config config)
    : m_config(std::move(config)) {}

std::filesystem::path TuningStore::path(const Key& key) const {
    return detail::shard_dir(m_config.dir, detail::shard_of(key)) / record_name(key);
}

std::optional<std::string> TuningStore::load(const Key& key, TuningMiss* why) const {
    auto miss = [why](TuningMiss reason) -> std::optional<std::string> {
        if (why) *why = reason;
        return std::nullopt;
    };
    if (m_config.disabled || m_config.dir.empty()) return miss(TuningMiss::absent);
    const detail::Modes modes = detail::modes_for(m_config.shared);
    // The directory and the shard are checked as the store checks them (owner, modes, no links).
    const detail::OpenedRoot root = detail::open_root(m_config.dir, modes, false);
    if (!root.fd) return miss(TuningMiss::absent);
    const detail::OpenedShard shard =
        detail::open_shard(root.fd.get(), detail::shard_of(key), modes, false);
    if (!shard.fd) return miss(TuningMiss::absent);
    detail::UniqueFd fd = detail::open_at(shard.fd.get(), record_name(key), detail::kReadFlags);
    if (!fd) return miss(errno == ENOENT ? TuningMiss::absent : TuningMiss::untrusted);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return miss(TuningMiss::absent);
    if (!S_ISREG(st.st_mode) || !detail::distrust(st, modes).empty())
        return miss(TuningMiss::untrusted);
    std::string bytes;
    if (detail::read_all(fd.get(), kMaxRecordSize, bytes) != 0) return miss(TuningMiss::damaged);
    std::optional<std::string> payload = decode_tuning_record(bytes, key);
    if (!payload) return miss(TuningMiss::damaged);
    if (m_config.trusted_keys) {
        const detail::Origin origin =
            m_config.shared ? detail::Origin::shared_directory : detail::Origin::private_directory;
        if (detail::check_trust(bytes, detail::SealDomain::tuning, origin,
                                m_config.trusted_keys.get())
                .verdict != detail::Verdict::trusted)
            return miss(TuningMiss::untrusted);
    }
    if (why) *why = TuningMiss::none;
    return payload;
}

bool TuningStore::store(const Key& key, std::string_view payload) const {
    if (m_config.disabled || m_config.readonly || m_config.dir.empty() ||
        payload.size() > kMaxPayload)
        return false;
    detail::ignore_sigxfsz_once();
    const detail::Modes modes = detail::modes_for(m_config.shared);
    const detail::OpenedRoot root = detail::open_root(m_config.dir, modes, true);
    if (!root.fd) return false;
    const detail::OpenedShard shard =
        detail::open_shard(root.fd.get(), detail::shard_of(key), modes, true);
    if (!shard.fd) return false;
    return detail::write_atomically(shard.fd.get(), record_name(key),
                                    encode_tuning_record(key, payload, m_config.signing_key.get()),
                                    modes.file, modes.shared) == 0;
}

} // namespace kiln::cache
