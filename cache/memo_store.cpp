#include "kiln/cache/memo_store.hpp"

#include "atomic_file.hpp"
#include "bytes.hpp"
#include "cache_dir.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "store_impl.hpp"

#include <xxhash.h>

#include <sys/stat.h>

#include <algorithm>

// A memo, as written and as read (every field is checked on read; anything else is damage, and
// damage is a miss):
//
//   memo      ::= magic version signature entry name hash
//   magic     ::= "KILNMEMO"                8 bytes
//   version   ::= u32                       kMemoVersion
//   signature ::= 16 bytes                  the memo's own signature: the file name is not trusted
//   entry     ::= 16 bytes                  the key of the entry to look up
//   name      ::= u32 length, length bytes  length <= MemoStore::kMaxName
//   hash      ::= u64                       XXH3-64 of every byte before it
//
// Integers are little-endian (bytes.hpp). A memo is trusted only as far as "which key to look
// up": the entry is verified by its own checksums and key, and the caller checks the kernel name.

namespace kiln::cache {

namespace {

constexpr std::string_view kMagic = "KILNMEMO";
constexpr std::uint32_t kMemoVersion = 1;
constexpr std::size_t kKeySize = sizeof(Key::bytes);
constexpr std::size_t kMaxMemoSize = 8 + 4 + 2 * kKeySize + 4 + MemoStore::kMaxName + 8;

std::string memo_name(const Key& signature) {
    return signature.hex() + std::string(detail::kMemoSuffix);
}

std::string_view key_bytes(const Key& key) {
    return {reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()};
}

} // namespace

std::string encode_memo(const Key& signature, const Memo& memo) {
    std::string out;
    detail::ByteWriter w(out);
    w.raw(kMagic);
    w.u32(kMemoVersion);
    w.raw(key_bytes(signature));
    w.raw(key_bytes(memo.entry));
    w.string(memo.name);
    w.u64(XXH3_64bits(out.data(), out.size()));
    return out;
}

std::optional<Memo> decode_memo(std::string_view bytes, const Key& signature) {
    if (bytes.size() > kMaxMemoSize || bytes.size() < 8) return std::nullopt;
    const std::string_view body = bytes.substr(0, bytes.size() - 8);
    detail::ByteReader r(bytes);
    if (r.raw(kMagic.size()) != kMagic || r.u32() != kMemoVersion) return std::nullopt;
    if (r.raw(kKeySize) != key_bytes(signature) || !r.ok()) return std::nullopt;
    Memo memo;
    const std::string_view entry = r.raw(kKeySize);
    if (!r.ok()) return std::nullopt;
    std::copy(entry.begin(), entry.end(), reinterpret_cast<char*>(memo.entry.bytes.data()));
    const std::uint32_t length = r.u32();
    if (length == 0 || length > MemoStore::kMaxName) return std::nullopt;
    memo.name = std::string(r.raw(length));
    const std::uint64_t hash = r.u64();
    if (!r.ok() || r.remaining() != 0 || hash != XXH3_64bits(body.data(), body.size()))
        return std::nullopt;
    return memo;
}

MemoStore::MemoStore(Config config)
    : m_config(std::move(config)) {}

std::filesystem::path MemoStore::path(const Key& signature) const {
    return detail::shard_dir(m_config.dir, detail::shard_of(signature)) / memo_name(signature);
}

std::optional<Memo> MemoStore::load(const Key& signature) const {
    if (m_config.disabled || m_config.dir.empty()) return std::nullopt;
    const detail::Modes modes = detail::modes_for(m_config.shared);
    // The directory and the shard are checked as the store checks them (owner, modes, no links).
    const detail::OpenedRoot root = detail::open_root(m_config.dir, modes, false);
    if (!root.fd) return std::nullopt;
    const detail::OpenedShard shard =
        detail::open_shard(root.fd.get(), detail::shard_of(signature), modes, false);
    if (!shard.fd) return std::nullopt;
    detail::UniqueFd fd = detail::open_at(shard.fd.get(), memo_name(signature), detail::kReadFlags);
    if (!fd) return std::nullopt;
    std::string bytes;
    struct stat st {};
    // read_all refuses anything but a regular file; its owner and modes are checked here.
    if (detail::read_all(fd.get(), kMaxMemoSize, bytes, &st) != 0 ||
        !detail::distrust(st, modes).empty())
        return std::nullopt;
    return decode_memo(bytes, signature);
}

bool MemoStore::store(const Key& signature, const Memo& memo) const {
    if (m_config.disabled || m_config.readonly || m_config.dir.empty() || memo.name.empty() ||
        memo.name.size() > kMaxName)
        return false;
    detail::ignore_sigxfsz_once();
    const detail::Modes modes = detail::modes_for(m_config.shared);
    const detail::OpenedRoot root = detail::open_root(m_config.dir, modes, true);
    if (!root.fd) return false;
    const detail::OpenedShard shard =
        detail::open_shard(root.fd.get(), detail::shard_of(signature), modes, true);
    if (!shard.fd) return false;
    return detail::write_atomically(shard.fd.get(), memo_name(signature),
                                    encode_memo(signature, memo), modes.file, modes.shared) == 0;
}

} // namespace kiln::cache
