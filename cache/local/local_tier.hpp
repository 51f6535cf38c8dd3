#pragma once
// The cache directory as a tier of the cache: the lookups of entries and memos that the façade
// (kiln/cache/store.hpp) makes before it asks the remote tier, publishing what it stores, and
// the read-ahead of a program's kernels. It works through the Directory a LocalStore owns, so
// lookups and maintenance count and warn as one. Separate from the Directory because only the
// façade looks up: maintenance (maintenance.cpp, archive.cpp) needs the directory, never this.
//
// A lookup counts its hit or miss, deals with damage and notes what it used for the next
// process's read-ahead; a read ahead reads with the same checks but counts nothing and leaves
// whatever it does not take to the lookup.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/memo_store.hpp"

#include "directory.hpp"
#include "read_ahead.hpp"
#include "seal.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache::detail {

class LocalTier {
  public:
    /// Lookups in @p directory (borrowed: it must outlive this tier).
    explicit LocalTier(Directory& directory);
    /// Files what this process used for the program's next process (save_read_ahead()).
    ~LocalTier();
    LocalTier(const LocalTier&) = delete;
    LocalTier& operator=(const LocalTier&) = delete;

    Directory& directory() noexcept { return m_directory; }

    /// A lookup counts; a read ahead does not (the file comment says how they differ).
    enum class Lookup { counted, read_ahead };

    /// The verified entry of @p key from the directory, or nullopt. A counted lookup of an
    /// entry for loading takes what was read ahead first. With @p remote_next (a remote tier is
    /// asked after a miss) a missing shard is not made just to count the miss: the caller should
    /// not wait for directories, and the miss is counted with the write-back's store.
    std::optional<Entry> load(const Key& key, EntryParts parts, Lookup lookup, bool remote_next);
    /// Publish an encoded entry; warns once when it cannot. @p note_use: a store of this process
    /// (read ahead by the next one), not a write-back of a remote hit. False when not written.
    bool publish(const Key& key, std::string_view encoded, bool note_use);
    /// The driver rejected the entry of @p key: remove it and count it as damaged.
    void invalidate(const Key& key);

    /// The memo of @p signature: what was read ahead, else the file (memo_store.cpp).
    std::optional<Memo> load_memo(const Key& signature);
    bool store_memo(const Key& signature, const Memo& memo);

    /// Read ahead what @p program's processes used last time (read_ahead.cpp).
    void read_ahead(std::string_view program) noexcept;
    void visit_read_ahead_cubins(
        const std::function<void(std::string_view cubin,
                                 const std::vector<std::string_view>& kernels)>& visit)
        const noexcept;
    /// File what this process used for the program's next process; once (later calls do
    /// nothing), so the façade can file it before it waits for the remote tier.
    void save_read_ahead() noexcept;

    /// Whether @p file, a file of @p domain read from this directory, may be used: true without
    /// trusted keys, for this user's own compiles in a private directory and for what a trusted
    /// key signed; a file without a valid seal is left to its decoder, which calls it damage.
    bool trusted(std::string_view file, SealDomain domain) const;

  private:
    /// Warn once per process that an untrusted @p what (of @p key) was not used.
    void warn_untrusted(std::string_view what, const Key& key) const;
    /// The file part of load_memo(), for a lookup or a read ahead.
    std::optional<Memo> read_memo(const Key& signature, Lookup lookup);
    /// Count a lookup answered from what was read ahead as the hit it is, and note the use.
    void count_read_ahead_hit(const AheadItem& item);

    Directory& m_directory;
    /// What was read ahead for this program, and what this process used.
    ReadAhead m_ahead;
    std::atomic<bool> m_ahead_saved{false};
};

} // namespace kiln::cache::detail
