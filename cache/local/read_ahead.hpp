#pragma once
// Read-ahead of a program's kernels. A process records the memos and entries its lookups used;
// when the store closes, it files them under the program (`<dir>/<ab>/<program>.ahead`, named by
// the program's identity). The next process of the same program reads them in kiln::prepare(),
// beside the driver's loading (tens of milliseconds of cuInit), with the same checks a lookup
// makes, so that its first call of each finds the bytes in memory instead of opening and reading
// files (bench/RESULTS.md: 30-45 us of a first call from disk on an H200).
//
// The list is a hint: whatever it names is read and verified as a lookup would, and a list that is
// absent, damaged or planted is ignored. The bytes read ahead are taken by the first lookup of
// their key and never served twice.
//
//   list     ::= magic version program count item* hash
//   magic    ::= "KILNHEAD"                  8 bytes
//   version  ::= u32                         1
//   program  ::= 16 bytes                    the program's identity: the file name is not trusted
//   count    ::= u32                         0 <= count <= kMaxReadAhead
//   item     ::= kind u8, 16 bytes key       kind 0: an entry, 1: a memo
//   hash     ::= u64                         XXH3-64 of every byte before it

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/signing.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache::detail {

/// The most memos and entries a program's list names; the most bytes read ahead for it.
inline constexpr std::size_t kMaxReadAhead = 64;
inline constexpr std::uint64_t kMaxReadAheadBytes = std::uint64_t{8} << 20;

enum class AheadKind : std::uint8_t { entry = 0, memo = 1 };

struct AheadItem {
    AheadKind kind = AheadKind::entry;
    Key key;
    friend bool operator==(const AheadItem& a, const AheadItem& b) {
        return a.kind == b.kind && a.key == b.key;
    }
};

std::string encode_ahead_list(const Key& program, const std::vector<AheadItem>& items,
                              const SigningKey* key = nullptr);
/// The items of a list for @p program; nullopt for anything that is not one.
std::optional<std::vector<AheadItem>> decode_ahead_list(std::string_view bytes, const Key& program);

/// What one store read ahead and what its process used (Store::Impl holds one). Thread-safe.
class ReadAhead {
  public:
    /// Where the list is filed: the key of the program's identity, once read_ahead() gave one.
    std::optional<Key> program() const;
    /// Sets the program and the list as read; false when a program was set already.
    bool start(const Key& program, std::vector<AheadItem> listed);
    void keep_memo(const Key& signature, Memo memo);
    void keep_entry(const Key& key, Entry entry);

    /// The memo read ahead for @p signature, taken (a second call finds nothing).
    std::optional<Memo> take_memo(const Key& signature);
    /// The entry read ahead for @p key, taken.
    std::optional<Entry> take_entry(const Key& key);

    /// Calls @p visit with each cubin kept and not yet taken, and its kernels' names.
    void visit_cubins(
        const std::function<void(std::string_view cubin,
                                 const std::vector<std::string_view>& kernels)>& visit) const;

    /// A lookup or a store used @p item (kept in first-use order, up to kMaxReadAhead).
    void note_used(const AheadItem& item);
    /// @p item need not be read ahead: a memo covers it (its entry is read only when the memo is
    /// missing).
    void forget_used(const AheadItem& item);

    /// The list to file when the store closes (what this process used first, then the rest of the
    /// list as read, up to kMaxReadAhead), or nullopt when it names the same items as the list
    /// read (nothing to write).
    std::optional<std::vector<AheadItem>> list_to_save();

  private:
    mutable std::mutex m_mutex;
    std::optional<Key> m_program;
    std::vector<AheadItem> m_listed;
    std::vector<AheadItem> m_used;
    std::vector<AheadItem> m_covered;
    std::vector<std::pair<Key, Memo>> m_memos;
    std::vector<std::pair<Key, Entry>> m_entries;
};

} // namespace kiln::cache::detail
