#pragma once
/// @file
/// Memos of generated kernels on disk: one small file per call signature (`<dir>/<ab>/<sig>.memo`
/// beside the entries) that says which entry key and kernel name a generated kernel's signature
/// led to last time, so that a fresh process finds its kernel without generating the source.
/// A memo only says which key to look up: the entry read by that key is verified as any entry,
/// and a memo that is absent, damaged, planted or a link is a miss.

#include "kiln/cache/key.hpp"
#include "kiln/cache/store.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// What a memo records: the entry key a signature led to, and the kernel's name in it.
struct Memo {
    Key entry;        ///< the key of the cache entry that holds the cubin
    std::string name; ///< the kernel's name in that cubin
};

/// Stores memos in the cache directory of a Config. Never throws for a cache failure: a directory
/// that cannot be used, or a file that does not verify, is a miss. Thread-safe (it holds no state
/// but its configuration).
class MemoStore {
  public:
    /// The longest kernel name a memo holds.
    static constexpr std::size_t kMaxName = 1024;

    /// Memos in the cache directory of @p config (disabled: none; read-only: read, never write).
    /// @param config the cache configuration, as Store uses it.
    explicit MemoStore(Config config);

    /// The memo of @p signature, verified (a regular file this user trusts, opened without
    /// following links, with the right magic, version, signature and checksum); nullopt
    /// otherwise.
    /// @param signature the hash of everything that decides the generated source.
    /// @return the memo, or nullopt.
    std::optional<Memo> load(const Key& signature) const;
    /// Publish @p memo under @p signature (a fresh O_EXCL|O_NOFOLLOW temporary with the cache's
    /// file mode, renamed over the memo's name).
    /// @param signature the memo's signature.
    /// @param memo what it leads to.
    /// @return false when it could not (disabled or read-only cache, unusable directory, a name
    /// too long, a write error).
    bool store(const Key& signature, const Memo& memo) const;
    /// Where the memo of @p signature lives, whether or not it exists.
    /// @param signature the memo's signature.
    /// @return `<dir>/<ab>/<signature>.memo`.
    std::filesystem::path path(const Key& signature) const;

  private:
    Config m_config;
};

/// The bytes of a memo (the format is documented in memo_store.cpp); for tests and tools.
/// @param signature the memo's signature.
/// @param memo what it leads to.
/// @return the encoded memo.
std::string encode_memo(const Key& signature, const Memo& memo);

/// A memo decoded from @p bytes when they are one, for @p signature; nullopt for anything else.
/// @param bytes the file's bytes.
/// @param signature the signature it must hold.
/// @return the memo, or nullopt.
std::optional<Memo> decode_memo(std::string_view bytes, const Key& signature);

} // namespace kiln::cache
