#pragma once
/// @file
/// Memos of generated kernels: one file per call signature (`<dir>/<ab>/<sig>.memo` beside the
/// entries) that holds what a generated kernel's signature led to last time: the entry key, the
/// kernel's name and the cubin itself. A fresh process's first call then reads one small file,
/// without generating the source, computing the key or reading the entry. Store::load_memo()
/// and Store::store_memo() keep them; they count towards the cache's size and are evicted as
/// entries are. A memo that is absent, damaged, planted or a link is a miss.

#include "kiln/cache/key.hpp"
#include "kiln/cache/signing.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// What a memo records.
struct Memo {
    Key entry;         ///< the key of the cache entry the kernel was compiled under
    std::string name;  ///< the kernel's name in the cubin
    std::string cubin; ///< the cubin, byte for byte as the entry holds it
};

/// The longest kernel name a memo holds.
inline constexpr std::size_t kMaxMemoName = 1024;
/// The largest cubin a memo holds (a generated kernel's is a few KB; a larger one gets no memo).
inline constexpr std::uint64_t kMaxMemoCubin = std::uint64_t{64} << 20;

/// The bytes of a memo (the format is documented in memo_store.cpp); for the store and tests.
/// @param signature the memo's signature.
/// @param memo what it leads to; its name and cubin must not be empty or over the limits.
/// @param key the writer's signing key (KILN_SIGNING_KEY_FILE), or nullptr: unsigned.
/// @return the encoded memo.
std::string encode_memo(const Key& signature, const Memo& memo, const SigningKey* key = nullptr);

/// A memo decoded from @p bytes when they are one, for @p signature; nullopt for anything else.
/// Whether its signer is trusted is the reader's question (the seal, not this function).
/// @param bytes the file's bytes.
/// @param signature the signature it must hold.
/// @return the memo, or nullopt.
std::optional<Memo> decode_memo(std::string_view bytes, const Key& signature);

} // namespace kiln::cache
