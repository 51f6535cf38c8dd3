#include "kiln/cache/memo_store.hpp"

#include "bytes.hpp"
#include "warn.hpp"

#include "fs.hpp"
#include "layout.hpp"
#include "local_tier.hpp"
#include "read_scratch.hpp"
#include "seal.hpp"
#include "trust.hpp"

#include <xxhash.h>

#include <sys/stat.h>

#include <algorithm>

// A memo, as written and as read (every field is checked on read; anything else is damage, and
// damage is a miss):
//
//   memo      ::= magic version signature entry name cubin hash seal
//   magic     ::= "KILNMEMO"                8 bytes
//   version   ::= u32                       kMemoVersion (3; version 2 had no seal, version 1
//                                           no cubin)
//   signature ::= 16 bytes                  the memo's own signature: the file name is not trusted
//   entry     ::= 16 bytes                  the key the kernel was compiled under
//   name      ::= u32 length, length bytes  1 <= length <= kMaxMemoName
//   cubin     ::= u64 size, size bytes      1 <= size <= kMaxMemoCubin
//   hash      ::= u64                       XXH3-64 of every byte before it
//   seal      ::= 128 bytes                 provenance and signature (../seal.hpp)
//
// Integers are little-endian (bytes.hpp). The hashes cover every byte, so a flipped bit anywhere
// is a miss. The cubin is trusted as an entry's payload is (../trust.hpp: with trusted keys, a
// memo from a shared directory is used only when signed); the caller still checks that it holds
// the kernel it asks for.

namespace kiln::cache {

namespace {

constexpr std::string_view kMemoMagic = "KILNMEMO";
constexpr std::uint32_t kMemoVersion = 3;
constexpr std::size_t kKeySize = sizeof(Key::bytes);
constexpr std::uint64_t kMaxMemoSize =
    8 + 4 + 2 * kKeySize + 4 + kMaxMemoName + 8 + kMaxMemoCubin + 8 + detail::kSealSize;

std::string memo_name(const Key& signature) {
    return signature.hex() + std::string(detail::kMemoSuffix);
}

std::string_view key_bytes(const Key& key) {
    return {reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()};
}

bool storable(const Memo& memo) {
    return !memo.name.empty() && memo.name.size() <= kMaxMemoName && !memo.cubin.empty() &&
           memo.cubin.size() <= kMaxMemoCubin;
}

} // namespace

std::string encode_memo(const Key& signature, const Memo& memo, const SigningKey* key) {
    std::string out;
    out.reserve(8 + 4 + 2 * kKeySize + 4 + memo.name.size() + 8 + memo.cubin.size() + 8 +
                detail::kSealSize);
    detail::ByteWriter w(out);
    w.raw(kMemoMagic);
    w.u32(kMemoVersion);
    w.raw(key_bytes(signature));
    w.raw(key_bytes(memo.entry));
    w.string(memo.name);
    w.u64(memo.cubin.size());
    w.raw(memo.cubin);
    w.u64(XXH3_64bits(out.data(), out.size()));
    detail::append_seal(out, detail::SealDomain::memo, Provenance::own_compile, key);
    return out;
}

std::optional<Memo> decode_memo(std::string_view bytes, const Key& signature) {
    if (bytes.size() > kMaxMemoSize || bytes.size() < 8 + detail::kSealSize ||
        !detail::read_seal(bytes, detail::SealDomain::memo))
        return std::nullopt;
    bytes.remove_suffix(detail::kSealSize);
    const std::string_view body = bytes.substr(0, bytes.size() - 8);
    detail::ByteReader r(bytes);
    if (r.raw(kMemoMagic.size()) != kMemoMagic || r.u32() != kMemoVersion) return std::nullopt;
    if (r.raw(kKeySize) != key_bytes(signature) || !r.ok()) return std::nullopt;
    Memo memo;
    const std::string_view entry = r.raw(kKeySize);
    if (!r.ok()) return std::nullopt;
    std::copy(entry.begin(), entry.end(), reinterpret_cast<char*>(memo.entry.bytes.data()));
    const std::uint32_t length = r.u32();
    if (length == 0 || length > kMaxMemoName) return std::nullopt;
    const std::string_view name = r.raw(length);
    const std::uint64_t size = r.u64();
    if (!r.ok() || size == 0 || size > kMaxMemoCubin || size > r.remaining()) return std::nullopt;
    const std::string_view cubin = r.raw(static_cast<std::size_t>(size));
    const std::uint64_t hash = r.u64();
    if (!r.ok() || r.remaining() != 0 || hash != XXH3_64bits(body.data(), body.size()))
        return std::nullopt;
    memo.name = std::string(name);
    memo.cubin = std::string(cubin);
    return memo;
}

namespace detail {

std::optional<Memo> LocalTier::load_memo(const Key& signature) {
    if (!m_directory.in_use()) return std::nullopt;
    if (auto memo = m_ahead.take_memo(signature)) {
        count_read_ahead_hit({AheadKind::memo, signature});
        return memo;
    }
    return read_memo(signature, Lookup::counted);
}

std::optional<Memo> LocalTier::read_memo(const Key& signature, Lookup lookup) {
    try {
        // The directory and the shard are opened and checked as for an entry (owner, modes, no
        // links); a memo is never worth creating a directory or counting a miss for.
        auto ref = m_directory.open_shard(shard_of(signature), false);
        if (!ref) return std::nullopt;
        UniqueFd fd = open_at(ref.get(), memo_name(signature), kReadFlags);
        if (!fd) return std::nullopt;
        // Read as an entry is (read_scratch.hpp): only the cubin lands in fresh memory.
        struct stat st {};
        std::optional<Memo> memo;
        bool untrusted = false;
        const auto decode = [&](std::string_view bytes) {
            memo = decode_memo(bytes, signature);
            if (memo && !trusted(bytes, SealDomain::memo)) {
                memo.reset();
                untrusted = true;
            }
        };
        const int error = read_for_lookup(fd.get(), kMaxMemoSize, &st, decode, decode);
        // read_all refuses anything but a regular file; its owner and modes are checked here: a
        // memo others could have written is a miss, however well formed.
        if (error != 0 || !memo || !distrust(st, m_directory.modes()).empty()) {
            // A memo is a shortcut: an untrusted one is counted with the lookup of its entry,
            // which reads that entry under the same rule.
            if (untrusted && lookup == Lookup::counted) warn_untrusted("the memo", signature);
            return std::nullopt;
        }
        // A memo hit is the first call's disk hit (its entry is not read): the memo becomes the
        // most recently used, as an entry would (a read ahead counts as a use), and the hit is
        // counted.
        if (!m_directory.config().readonly && !touched_lately(st)) ::futimens(fd.get(), nullptr);
        if (lookup == Lookup::counted) {
            Counters hit;
            hit.hits = 1;
            m_directory.count_later(ref, hit);
            m_ahead.note_used({AheadKind::memo, signature});
        }
        return memo;
    } catch (const std::exception&) {
        return std::nullopt; // a memo is a shortcut: any failure takes the full path
    }
}

bool LocalTier::store_memo(const Key& signature, const Memo& memo) {
    if (!m_directory.in_use() || m_directory.config().readonly || !storable(memo)) return false;
    // The memo is what the next process reads, not its entry (read only when the memo is gone).
    m_ahead.note_used({AheadKind::memo, signature});
    m_ahead.forget_used({AheadKind::entry, memo.entry});
    try {
        if (int error = m_directory.put_file(
                signature, kMemoSuffix,
                encode_memo(signature, memo, m_directory.config().signing_key.get()), false)) {
            m_directory.warn_write(memo_file(m_directory.config().dir, signature).string(), error);
            return false;
        }
        return true;
    } catch (const std::exception& e) {
        warn(std::string("kernel cache could not write a memo: ") + e.what());
        return false;
    }
}

} // namespace detail

} // namespace kiln::cache
